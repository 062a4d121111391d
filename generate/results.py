"""Result files in BFCL's layout, written entry by entry.

``{result_dir}/{model folder}/multi_turn/BFCL_v4_{category}_result.json``: one JSON object
per line (``json.dumps`` as BFCL writes it), sorted by id once a run ends.

- Each finished entry is appended at once (flushed and synced): a run that is killed
  loses at most the entries in flight. A line cut short by a kill is dropped when the
  file is next opened.
- Resume: the ids already in a file are skipped (:func:`existing_ids`), unless the run
  overwrites; a run of chosen ids with overwrite replaces their lines in place (BFCL's
  update mode), every other line is kept.
- Files are rewritten through a temporary file and ``os.replace``: never half-written.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Iterable

from bfcl_safe.checker.contract import VERSION_PREFIX, category_of
from bfcl_safe.interp.errors import BfclSafeError


class ResultFileError(BfclSafeError, ValueError):
    """An existing result file cannot be read for resuming; ``path`` and ``line`` say where."""

    def __init__(self, path: Path, line: int, reason: str):
        self.path = path
        self.line = line
        self.reason = reason
        super().__init__(f"{path}:{line}: {reason}")

    def __reduce__(self):
        return (type(self), (self.path, self.line, self.reason))


def result_path(result_dir: Path, model_folder: str, category: str) -> Path:
    return Path(result_dir) / model_folder / "multi_turn" / f"{VERSION_PREFIX}_{category}_result.json"


def entry_index(entry_id: str) -> tuple[str, int]:
    """BFCL's ``sort_key`` within the multi-turn group: category, then the number."""
    category, _, number = entry_id.rpartition("_")
    try:
        return category, int(number)
    except ValueError:
        return category, -1


def _read_lines(path: Path) -> list[tuple[str, dict]]:
    """``(line text, object)`` of every complete line; a last line without its newline
    (a write cut short) is left out."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise ResultFileError(path, 0, f"cannot be read ({exc.strerror})") from None
    text = data.decode("utf-8", errors="replace")
    lines = text.split("\n")
    complete = lines[:-1]  # the part after the last newline is empty, or a cut-short line
    out = []
    for number, line in enumerate(complete, 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):
            raise ResultFileError(path, number, "not a JSON object; move the file away or pass --allow-overwrite") from None
        if not isinstance(value, dict) or not isinstance(value.get("id"), str):
            raise ResultFileError(path, number, "a result line needs a string id")
        out.append((line, value))
    return out


def existing_ids(path: Path) -> set[str]:
    """The ids of the complete lines of a result file (none if it does not exist)."""
    return {value["id"] for _, value in _read_lines(path)}


def _replace(path: Path, lines: Iterable[str]) -> None:
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        for line in lines:
            handle.write(line + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def sort_file(path: Path) -> int:
    """Sort a result file by id, keeping the last line of an id seen twice; drop a
    cut-short last line. Returns the number of lines."""
    lines = _read_lines(path)
    if not lines and not path.exists():
        return 0
    latest: dict[str, str] = {}
    for line, value in lines:
        latest[value["id"]] = line
    ordered = [latest[key] for key in sorted(latest, key=entry_index)]
    raw = path.read_bytes()
    if raw != ("".join(line + "\n" for line in ordered)).encode("utf-8"):
        _replace(path, ordered)
    return len(ordered)


class ResultWriter:
    """Writes result lines of one model, from any thread."""

    def __init__(self, result_dir: Path, model_folder: str, *, update: bool = False):
        self.result_dir = Path(result_dir)
        self.model_folder = model_folder
        self.update = update
        self._lock = threading.Lock()
        self._prepared: set[Path] = set()
        #: Paths written by this writer.
        self.paths: set[Path] = set()

    def path_for(self, entry_id: str) -> Path:
        return result_path(self.result_dir, self.model_folder, category_of(entry_id))

    def _prepare(self, path: Path) -> None:
        """Before the first append: create the folder; drop a cut-short last line."""
        if path in self._prepared:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            raw = path.read_bytes()
            if raw and not raw.endswith(b"\n"):
                _replace(path, [line for line, _ in _read_lines(path)])
        self._prepared.add(path)

    def write(self, line: dict) -> None:
        text = json.dumps(line)
        path = self.path_for(line["id"])
        with self._lock:
            self._prepare(path)
            self.paths.add(path)
            if self.update:
                kept = [old for old, value in _read_lines(path) if value["id"] != line["id"]]
                _replace(path, sorted([*kept, text], key=lambda item: entry_index(json.loads(item)["id"])))
                return
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(text + "\n")
                handle.flush()
                os.fsync(handle.fileno())

    def finish(self) -> None:
        """Sort every file written by this writer."""
        with self._lock:
            for path in sorted(self.paths):
                sort_file(path)
