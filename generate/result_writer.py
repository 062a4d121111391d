"""Result files in BFCL's layout, written entry by entry.

``{result_dir}/{model folder}/multi_turn/BFCL_v4_{category}_result.json``: one JSON object
per line (``json.dumps`` as BFCL writes it), sorted by id once a run ends.

- Each finished entry is appended at once (flushed and synced): a run that is killed
  loses at most the entries in flight. A line cut short by a kill is dropped when the
  file is next opened.
- Resume: the ids already in a file are skipped (:func:`existing_ids`), unless the run
  overwrites; a run of chosen ids with overwrite replaces their lines in place (BFCL's
  update mode), every other line is kept.
- Reading goes through the one result-file reader
  (:func:`bfcl_safe.checker.result_files.read_lines`: a regular file, size and line length
  bounded, a FIFO never blocks) with its line rules, and a symlink as the result file is
  refused; each line's JSON is decoded with the result lines' depth bound.
- Writing goes through the one writer (:mod:`bfcl_safe.checker.outputs`): the model and
  ``multi_turn`` folders are opened without following a symlink, lines are appended to a
  regular file only (``O_NOFOLLOW``), and files are rewritten through a fresh temporary
  file renamed over them: never half-written, never through a planted name.
"""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path
from typing import Iterable

from bfcl_safe.checker.codec import NotJSON, TooDeep, loads_bounded
from bfcl_safe.checker.contract import MULTI_TURN_CATEGORIES, MULTI_TURN_GROUP, category_of, result_file_name
from bfcl_safe.checker.inputs import RESULT_FILE, UnreadableFile, read_bytes, shown_path
from bfcl_safe.checker.outputs import UnsafePath, append_line, open_folder, replace_file
from bfcl_safe.checker.result_files import read_lines, too_long
from bfcl_safe.interp.errors import BfclSafeError
from bfcl_safe.interp.limits import MAX_RESULT_LINE_CHARS, MAX_RESULT_LINE_DEPTH

#: What a user can do about a result file that cannot be resumed from.
_WAY_OUT = "move the file away or pass --allow-overwrite"


class ResultFileError(BfclSafeError, ValueError):
    """An existing result file cannot be read for resuming; ``path`` and ``line`` say where."""

    def __init__(self, path: Path, line: int, reason: str):
        self.path = path
        self.line = line
        self.reason = reason
        super().__init__(f"{shown_path(path)}:{line}: {reason}")

    def __reduce__(self):
        return (type(self), (self.path, self.line, self.reason))


def result_path(result_dir: Path, model_folder: str, category: str) -> Path:
    return Path(result_dir) / model_folder / MULTI_TURN_GROUP / result_file_name(category)


def entry_index(entry_id: str) -> tuple[str, int]:
    """BFCL's ``sort_key`` within the multi-turn group: category, then the number."""
    category, _, number = entry_id.rpartition("_")
    try:
        return category, int(number)
    except ValueError:
        return category, -1


def _read_lines(path: Path) -> tuple[list[tuple[str, dict]], bool]:
    """``(line text, object)`` of every complete line, and whether the file ends with a
    newline; a last line without its newline (a write cut short) is left out. No file:
    no lines."""
    if not os.path.lexists(path):
        return [], True
    out = []
    complete = True
    try:
        for number, text in read_lines(path, newline="\n", follow=False):
            if text is None:
                raise ResultFileError(path, number, f"{too_long().split(';')[0]}; {_WAY_OUT}")
            if not text.endswith("\n"):  # (only the last line can lack it)
                complete = False
                break
            line = text[:-1]
            try:
                value = loads_bounded(line, MAX_RESULT_LINE_DEPTH)
            except (NotJSON, TooDeep) as exc:
                reason = str(exc) if isinstance(exc, TooDeep) else "not a JSON object"
                raise ResultFileError(path, number, f"{reason}; {_WAY_OUT}") from None
            if not isinstance(value, dict) or not isinstance(value.get("id"), str):
                raise ResultFileError(path, number, "a result line needs a string id")
            out.append((line, value))
    except UnreadableFile as exc:
        raise ResultFileError(path, 0, f"{exc.reason}; {_WAY_OUT}") from None
    return out, complete


def existing_ids(path: Path) -> set[str]:
    """The ids of the complete lines of a result file (none if it does not exist)."""
    return {value["id"] for _, value in _read_lines(path)[0]}


def _replace(path: Path, dir_fd: int, lines: Iterable[str]) -> None:
    def write(handle) -> None:
        for line in lines:
            handle.write(line + "\n")

    replace_file(path.name, dir_fd, write, sync=True)


def sort_file(path: Path, dir_fd: int | None = None) -> int:
    """Sort a result file by id, keeping the last line of an id seen twice; drop a
    cut-short last line. Returns the number of lines. ``dir_fd``: the file's folder
    (opened by the caller without following symlinks; else ``path.parent``)."""
    lines, _ = _read_lines(path)
    if not lines and not os.path.lexists(path):
        return 0
    latest: dict[str, str] = {}
    for line, value in lines:
        latest[value["id"]] = line
    ordered = [latest[key] for key in sorted(latest, key=entry_index)]
    try:
        raw = read_bytes(path, RESULT_FILE, follow=False)
    except UnreadableFile as exc:
        raise ResultFileError(path, 0, exc.reason) from None
    if raw != ("".join(line + "\n" for line in ordered)).encode("utf-8"):
        fd = open_folder(path.parent) if dir_fd is None else dir_fd
        try:
            _replace(path, fd, ordered)
        finally:
            if dir_fd is None:
                os.close(fd)
    return len(ordered)


def check_result_folder(result_dir: Path, model_folder: str) -> None:
    """Refuse at once (:class:`~bfcl_safe.checker.outputs.UnsafePath`), before anything is
    played, a result folder ``generate`` would not write into: the model folder or its
    ``multi_turn`` folder a symlink or not a folder, a result file there a symlink, FIFO,
    device or folder. Nothing is created or opened."""
    path = Path(result_dir)
    for part in (model_folder, MULTI_TURN_GROUP):
        path = path / part
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return
        if not stat.S_ISDIR(mode):
            raise UnsafePath(path, "a symlink" if stat.S_ISLNK(mode) else "not a folder")
    for category in MULTI_TURN_CATEGORIES:
        file = path / result_file_name(category)
        try:
            mode = os.lstat(file).st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(mode):
            raise UnsafePath(file, "a symlink" if stat.S_ISLNK(mode) else "not a regular file")


def inference_error_line(entry_id: str, exc: BaseException) -> dict:
    """The result line of an entry whose inference failed with ``exc``, as BFCL writes it:
    the result is ``Error during inference: {exc}``, with the exception's name in
    ``traceback``."""
    return {"id": entry_id, "result": f"Error during inference: {exc}",
            "traceback": f"{type(exc).__module__}.{type(exc).__qualname__}: {exc}"}


class LineTooLong(BfclSafeError):
    """An entry's result line longer than a result file's line may be
    (:data:`~bfcl_safe.interp.limits.MAX_RESULT_LINE_CHARS`)."""

    def __init__(self, chars: int):
        super().__init__(f"the result line would be {chars:,} characters long, more than the "
                         f"{MAX_RESULT_LINE_CHARS:,} a result file's line may have")


class ResultWriter:
    """Writes result lines of one model, from any thread. Made before any entry is
    played: the model's ``multi_turn`` folder is opened (made where missing) without
    following a symlink, and a result file there that is not a regular file (a symlink,
    a FIFO, a folder) is refused at once with :class:`~bfcl_safe.checker.outputs.UnsafePath`."""

    def __init__(self, result_dir: Path, model_folder: str, *, update: bool = False):
        self.result_dir = Path(result_dir)
        self.model_folder = model_folder
        self.update = update
        self._lock = threading.Lock()
        self._prepared: set[Path] = set()
        #: Paths written by this writer.
        self.paths: set[Path] = set()
        fd = self._folder()
        try:
            for category in MULTI_TURN_CATEGORIES:
                self._check(result_path(self.result_dir, self.model_folder, category), fd)
        finally:
            os.close(fd)

    def _folder(self) -> int:
        return open_folder(self.result_dir, (self.model_folder, MULTI_TURN_GROUP))

    @staticmethod
    def _check(path: Path, dir_fd: int) -> None:
        try:
            mode = os.stat(path.name, dir_fd=dir_fd, follow_symlinks=False).st_mode
        except FileNotFoundError:
            return
        if not stat.S_ISREG(mode):
            raise UnsafePath(path, "a symlink" if stat.S_ISLNK(mode) else "not a regular file")

    def path_for(self, entry_id: str) -> Path:
        return result_path(self.result_dir, self.model_folder, category_of(entry_id))

    def _prepare(self, path: Path, dir_fd: int) -> None:
        """Before the first append: drop a cut-short last line."""
        if path in self._prepared:
            return
        lines, complete = _read_lines(path)
        if not complete:
            _replace(path, dir_fd, [line for line, _ in lines])
        self._prepared.add(path)

    def write(self, line: dict) -> dict:
        """Append ``line`` to its category's file; return what was written: ``line``, or,
        when its text would be longer than a result file's line may be
        (:data:`~bfcl_safe.interp.limits.MAX_RESULT_LINE_CHARS`: ``evaluate`` would skip
        it, and without ``--partial-eval`` not score the file), BFCL's inference-error
        line for the entry saying so."""
        text = json.dumps(line)
        if len(text) > MAX_RESULT_LINE_CHARS:
            line = inference_error_line(line["id"], LineTooLong(len(text)))
            text = json.dumps(line)
        path = self.path_for(line["id"])
        with self._lock:
            fd = self._folder()
            try:
                self._prepare(path, fd)
                self.paths.add(path)
                if self.update:
                    kept = [(old, value["id"]) for old, value in _read_lines(path)[0] if value["id"] != line["id"]]
                    ordered = sorted([*kept, (text, line["id"])], key=lambda pair: entry_index(pair[1]))
                    _replace(path, fd, [old for old, _ in ordered])
                    return line
                append_line(path.name, fd, text, where=path)
                return line
            finally:
                os.close(fd)

    def finish(self) -> None:
        """Sort every file written by this writer."""
        with self._lock:
            if not self.paths:
                return
            fd = self._folder()
            try:
                for path in sorted(self.paths):
                    sort_file(path, fd)
            finally:
                os.close(fd)
