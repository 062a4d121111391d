"""The one door for files bfcl-safe writes: score files, the CSV, ``generate``'s result files.

Every file ``evaluate`` and ``generate`` create is created here (``tests/test_io_doors_policy.py``
fails if shipped code writes a file anywhere else), under its output folder and never
through a symlink:

- :func:`open_folder` opens the folders below the output folder one component at a time
  with ``O_NOFOLLOW`` (a symlink or a non-folder there is :class:`UnsafePath`); files are
  then named relative to that folder's descriptor.
- New files are created with ``O_CREAT | O_EXCL | O_NOFOLLOW`` under a fresh random name
  (:func:`replace_file`: never a name that was there before, such as a planted ``.tmp``
  twin), written, and renamed over the target (a symlink at the target is replaced, not
  followed; a folder there fails).
- :func:`append_line` appends to an existing regular file only (``O_NOFOLLOW``, and a FIFO
  never blocks the open).
- :func:`model_folder` is the one mapping from a model name to a folder name (``/`` ->
  ``_`` as BFCL does), refusing up front what is no safe folder name.
"""

from __future__ import annotations

import io
import os
import shutil
import stat
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from bfcl_safe.checker.codec import dumps_line
from bfcl_safe.checker.contract import MULTI_TURN_GROUP, score_file_name
from bfcl_safe.checker.inputs import shown_path
from bfcl_safe.interp.errors import BfclSafeError
from bfcl_safe.interp.limits import MAX_FOLDER_NAME_BYTES

#: The multi-turn leaderboard CSV, a file directly in the score dir.
CSV_NAME = "data_multi_turn.csv"
#: The six leaderboard CSVs ``evaluate`` writes there (``checker/leaderboard.py``).
LEADERBOARD_CSV_NAMES = ("data_non_live.csv", "data_live.csv", CSV_NAME, "data_agentic.csv",
                         "data_format_sensitivity.csv", "data_overall.csv")
#: Names a model folder may not have: a folder of that name in the score dir would take
#: a CSV's place.
RESERVED_FOLDER_NAMES = frozenset(LEADERBOARD_CSV_NAMES)

_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class UnsafePath(BfclSafeError, OSError):
    """A path under an output folder that is not written through: ``path``, and
    ``reason`` (a symlink, not a folder, not a regular file)."""

    def __init__(self, path: Path, reason: str):
        self.path = path
        self.reason = reason
        super().__init__(f"{shown_path(path)}: {reason}; not written through")


class BadModelName(BfclSafeError, ValueError):
    """A model name that cannot be a folder name: ``name`` and ``reason``."""

    def __init__(self, name: str, reason: str):
        self.name = name
        self.reason = reason
        super().__init__(f"model name {shown_path(repr(name))}: {reason}")


def model_folder(name: str, *, existing: bool = False) -> str:
    """The folder of a model name: a registry name (``openai/gpt-oss-120b``) as BFCL
    writes its folder (``/`` -> ``_``), a folder name as it is. :class:`BadModelName`
    for an empty name, ``.``, ``..``, a name holding NUL, one of
    :data:`RESERVED_FOLDER_NAMES`, or a folder name longer than
    :data:`~bfcl_safe.interp.limits.MAX_FOLDER_NAME_BYTES` bytes; and, for a folder to be
    made (``generate``), a name holding a control character or a backslash.
    ``existing=True``: the name selects a folder already in a result tree (``evaluate
    --model``, ``explain --model``, ``--model-map`` keys), which may hold control
    characters (shown escaped) as any folder ``evaluate`` scores may."""
    if not isinstance(name, str):
        raise BadModelName(str(name), "not a string")
    folder = name.replace("/", "_")
    if not folder.strip():
        raise BadModelName(name, "empty")
    if folder in (".", ".."):
        raise BadModelName(name, "not a folder name")
    if "\0" in folder:
        raise BadModelName(name, "holds a NUL character")
    if not existing and any(ord(char) < 32 or 127 <= ord(char) < 160 or char in "\\\u2028\u2029" for char in folder):
        raise BadModelName(name, "holds a control character or a backslash")
    if folder in RESERVED_FOLDER_NAMES:
        raise BadModelName(name, f"the name of the CSV in the score dir ({CSV_NAME})")
    size = len(folder.encode("utf-8", "surrogateescape"))
    if size > MAX_FOLDER_NAME_BYTES:
        raise BadModelName(name, f"its folder name is {size:,} bytes, more than the {MAX_FOLDER_NAME_BYTES} a "
                                 f"folder name may have")
    return folder


def _open_no_follow(name: str, flags: int, dir_fd: int, where: Path, otherwise: str) -> int:
    """``os.open(name, flags, dir_fd=dir_fd)`` with ``O_NOFOLLOW`` in ``flags``; when it fails
    because of what is there, :class:`UnsafePath` saying so ("a symlink", else ``otherwise``);
    any other failure (nothing there to stat) is the open's own error."""
    try:
        return os.open(name, flags, 0o666, dir_fd=dir_fd)
    except OSError as exc:
        try:
            mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
        except OSError:
            raise exc from None
        raise UnsafePath(where, "a symlink" if stat.S_ISLNK(mode) else otherwise) from None


def open_folder(root: str | os.PathLike, parts: Sequence[str] = ()) -> int:
    """A descriptor of ``root/parts...``, made where missing; every component below
    ``root`` is opened with ``O_NOFOLLOW``: a symlink (or a non-folder) there raises
    :class:`UnsafePath`. ``root`` itself is the user's choice and may be a symlink."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root, _DIR_FLAGS)
    path = root
    try:
        for part in parts:
            path = path / part
            if part in ("", ".", "..") or "/" in part or "\0" in part:
                raise UnsafePath(path, "not a folder name")
            try:
                os.mkdir(part, 0o777, dir_fd=fd)
            except FileExistsError:
                pass
            inner = _open_no_follow(part, _DIR_FLAGS | _NOFOLLOW, fd, path, "not a folder")
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def create_new(name: str, dir_fd: int, errors: str = "backslashreplace") -> io.TextIOWrapper:
    """A new file ``name`` in the folder ``dir_fd`` (never an existing one, never through a symlink)."""
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o666, dir_fd=dir_fd)
    return open(fd, "w", encoding="utf-8", errors=errors, newline="\n")


def create_fresh(stem: str, dir_fd: int) -> tuple[str, io.TextIOWrapper]:
    """A new file under a fresh random name ``.{stem}.{random}`` in ``dir_fd`` (a name
    nobody could have planted: ``O_EXCL`` refuses one that exists, and another is drawn)."""
    for _ in range(16):
        name = f".{stem}.{os.urandom(8).hex()}"
        try:
            return name, create_new(name, dir_fd)
        except FileExistsError:
            continue
    raise FileExistsError(f"no fresh temporary name for {stem}")


def unlink_at(name: str, dir_fd: int) -> None:
    try:
        os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        pass


def replace_file(name: str, dir_fd: int, write: Callable[[Any], None], *, sync: bool = False) -> None:
    """Write a file atomically in the folder ``dir_fd``: a fresh temporary file, then
    renamed over ``name`` (a symlink at ``name`` is replaced, not followed; a folder there
    fails). ``sync``: flushed to disk before the rename."""
    temporary, handle = create_fresh(f"{name}.tmp", dir_fd)
    try:
        with handle:
            write(handle)
            if sync:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    finally:
        unlink_at(temporary, dir_fd)


def write_text(path: Path, text: str) -> None:
    """Write UTF-8 text with ``\\n`` line ends, atomically (temp file + rename), never
    through a symlink at ``path``; ``path.parent`` is the user's folder.

    Lone surrogates (possible in model text decoded from JSON escapes) cannot be
    encoded in UTF-8; the reference crashes on them. We write them as ``\\udXXX``,
    which inside a JSON string is the same escape JSON decodes back to the same text.
    """
    fd = open_folder(path.parent)
    try:
        if path.name in RESERVED_FOLDER_NAMES and _is_folder(path.name, fd):
            raise UnsafePath(path, "a folder")
        replace_file(path.name, fd, lambda handle: handle.write(text))
    finally:
        os.close(fd)


def write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (a fresh temporary name, synced, renamed over
    ``path``: never through a symlink there); ``path.parent`` is the user's folder."""
    fd = open_folder(path.parent)
    try:
        for _ in range(16):
            temporary = f".{path.name}.{os.urandom(8).hex()}"
            try:
                out = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o666,
                              dir_fd=fd)
                break
            except FileExistsError:
                continue
        else:
            raise FileExistsError(f"no fresh temporary name for {path.name}")
        try:
            try:
                _write_all(out, data)
                os.fsync(out)
            finally:
                os.close(out)
            os.replace(temporary, path.name, src_dir_fd=fd, dst_dir_fd=fd)
        finally:
            unlink_at(temporary, fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _is_folder(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISDIR(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def append_line(name: str, dir_fd: int, text: str, *, where: Path) -> None:
    """Append ``text`` and a newline to the regular file ``name`` in ``dir_fd`` (created if
    absent), flushed to disk. A symlink, FIFO, device or folder there is :class:`UnsafePath`."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | _NOFOLLOW | _CLOEXEC
    fd = _open_no_follow(name, flags, dir_fd, where, "not a regular file")
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafePath(where, "not a regular file")
        os.set_blocking(fd, True)
        _write_all(fd, (text + "\n").encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- score files


def score_file_path(score_dir: str | os.PathLike, model_name: str, category: str) -> Path:
    """``SCORE/{model}/multi_turn/BFCL_v4_{category}_score.json``."""
    if MULTI_TURN_GROUP not in category:
        raise ValueError(f"{category!r} is not a multi-turn category")
    return Path(score_dir) / model_name / MULTI_TURN_GROUP / score_file_name(category)


def write_lines(handle: Any, lines: Iterable[str]) -> None:
    # One by one: joining them first would widen every line to the widest one's
    # character kind (and copy them all once more).
    for line in lines:
        handle.write(line)
        handle.write("\n")


class ScoreFileWriter:
    """Collects one category's failed-entry lines, then writes the score file (summary
    line first) atomically. Lines are kept in memory up to :attr:`BUFFER_CHARS`, beyond
    which they go to a side file on disk (a fresh name): memory stays flat however many
    entries fail, and the usual file is written in one go, without copying it from disk again."""

    #: Characters of failure lines kept in memory before spilling to disk.
    BUFFER_CHARS = 16 * 1024 * 1024

    def __init__(self, score_dir: str | os.PathLike, model_name: str, category: str):
        self.path = score_file_path(score_dir, model_name, category)
        if model_name in RESERVED_FOLDER_NAMES:
            raise UnsafePath(Path(score_dir) / model_name, f"the name of the CSV ({CSV_NAME}), not a model folder")
        self._dir = open_folder(score_dir, (model_name, MULTI_TURN_GROUP))
        self._body_name: str | None = None
        self._lines: list[str] = []
        self._buffered = 0
        self._body: io.TextIOWrapper | None = None

    def add(self, line: str) -> None:
        if self._body is not None:
            write_lines(self._body, [line])
            return
        self._lines.append(line)
        self._buffered += len(line) + 1
        if self._buffered > self.BUFFER_CHARS:
            self._body_name, self._body = create_fresh(f"{self.path.name}.body", self._dir)
            write_lines(self._body, self._lines)
            self._lines = []

    def finish(self, correct_count: int, total_count: int) -> Path:
        header = {"accuracy": correct_count / total_count, "correct_count": correct_count, "total_count": total_count}

        def write(out: Any) -> None:
            if self._body is None or self._body_name is None:
                write_lines(out, [dumps_line(header), *self._lines])
            else:
                self._body.close()
                body_fd = os.open(self._body_name, os.O_RDONLY | _NOFOLLOW | _CLOEXEC, dir_fd=self._dir)
                with open(body_fd, encoding="utf-8") as body:
                    out.write(dumps_line(header) + "\n")
                    shutil.copyfileobj(body, out, 1 << 20)

        try:
            replace_file(self.path.name, self._dir, write)
        finally:
            self.abort()
        return self.path

    def abort(self) -> None:
        if self._body is not None:
            self._body.close()
            self._body = None
        if self._dir >= 0:
            if self._body_name is not None:
                unlink_at(self._body_name, self._dir)
            os.close(self._dir)
            self._dir = -1
        self._lines = []

    def __del__(self) -> None:
        if getattr(self, "_dir", -1) >= 0:
            os.close(self._dir)
