"""Score files, byte for byte in BFCL's format.

Score file (``SCORE/{model}/multi_turn/BFCL_v4_{category}_score.json``), as the
reference's ``save_eval_results`` + ``write_list_of_dicts_to_file`` write it:

- one JSON document per line, each followed by ``\\n``, UTF-8;
- line 1: ``{"accuracy": correct/total, "correct_count": ..., "total_count": ...}``;
- then one line per failed entry, in the order given;
- each line is ``json.dumps(value, ensure_ascii=False)`` (default separators) of the
  entry after the reference's ``make_json_serializable`` pass: dicts and lists are
  walked, any other value that ``json.dumps`` rejects becomes ``str(value)``
  (so our backends' objects must ``str()`` like the reference's).

The leaderboard CSVs built from score files: ``checker/leaderboard.py``.

Writing never follows a symlink out of the score dir: the folders below it are opened
one component at a time with ``O_NOFOLLOW`` (a symlink there is refused with
:class:`UnsafePath`), files are written to a temporary file in the target folder and
renamed over the target (which replaces a symlink there instead of following it).
Score files read back for the CSV are validated: one that is not a regular file, not
readable or whose summary is not BFCL's is reported and skipped.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from bfcl_safe.checker.codec import NotJSON, TooDeep, dumps_line, loads_bounded
from bfcl_safe.checker.contract import VERSION_PREFIX
from bfcl_safe.checker.inputs import SCORE_FILE, Lines, UnreadableFile, shown_path
from bfcl_safe.checker.outputs import ScoreFileWriter
from bfcl_safe.interp.errors import BfclSafeError
from bfcl_safe.interp.limits import MAX_SCORE_LINE_CHARS, MAX_SCORE_LINE_DEPTH, MAX_SCORE_SUMMARY_CHARS

#: The reference's ``extract_test_category`` pattern, searched in the whole path text.
_CATEGORY_PATTERN = rf".*{VERSION_PREFIX}_(\w+?)(?:_score|_result)?\.json"

class ScoreFileError(BfclSafeError, ValueError):
    """A score file cannot be read; the message names the file and the problem."""



# --------------------------------------------------------------------------- score files


def write_score_file(
    score_dir: str | os.PathLike,
    model_name: str,
    category: str,
    failed_entries: Sequence[Mapping[str, Any]],
    correct_count: int,
    total_count: int,
) -> Path:
    """Write one category's score file; return its path.

    ``failed_entries`` are the reference's failure dicts (``id``, ``model_name``,
    ``test_category``, ``valid``, ``error``, ``prompt``, ..., ``inference_log``), in
    result-file order (the reference sorts results by id index).
    """
    if total_count <= 0:
        raise ValueError(f"total_count must be positive, got {total_count!r}")
    if correct_count + len(failed_entries) != total_count:
        raise ValueError(
            f"correct_count ({correct_count}) + failed entries ({len(failed_entries)}) "
            f"!= total_count ({total_count})"
        )
    writer = ScoreFileWriter(score_dir, model_name, category)
    try:
        for entry in failed_entries:
            writer.add(dumps_line(entry))
    except BaseException:
        writer.abort()
        raise
    return writer.finish(correct_count, total_count)


def _score_lines(path: Path, errors: str = "replace") -> Lines:
    try:
        return Lines(path, SCORE_FILE, MAX_SCORE_LINE_CHARS, errors=errors)
    except UnreadableFile as exc:
        raise ScoreFileError(str(exc)) from None


def _score_line(path: Path, number: int, line: str | None) -> Any:
    """One line of a score file, decoded with a depth bound (:class:`ScoreFileError` if not JSON)."""
    if line is None:
        raise ScoreFileError(f"{shown_path(path)}: line {number} is longer than {MAX_SCORE_LINE_CHARS:,} characters")
    try:
        return loads_bounded(line, MAX_SCORE_LINE_DEPTH)
    except NotJSON as exc:
        raise ScoreFileError(f"{shown_path(path)}: line {number} is {exc}") from None
    except TooDeep as exc:
        raise ScoreFileError(f"{shown_path(path)}: line {number} is not JSON ({exc})") from None


def read_score_file(path: str | os.PathLike) -> tuple[dict, dict[str, dict]]:
    """Return ``(summary, {id: failed entry})`` of a score file (read through
    :mod:`~bfcl_safe.checker.inputs`: a regular file of at most
    :data:`~bfcl_safe.interp.limits.MAX_SCORE_FILE_BYTES`)."""
    path = Path(path)
    summary: dict | None = None
    failed: dict[str, dict] = {}
    with _score_lines(path, errors="strict") as lines:
        number = 0
        while True:
            try:
                line = next(lines)
            except StopIteration:
                break
            except (UnreadableFile, UnicodeDecodeError) as exc:
                raise ScoreFileError(f"{shown_path(path)}: cannot read it ({type(exc).__name__})") from None
            number += 1
            if line is not None and line.isspace():
                continue
            value = _score_line(path, number, line)
            if not isinstance(value, dict):
                raise ScoreFileError(f"{shown_path(path)}: line {number} is not a JSON object")
            if summary is None:
                summary = value
            elif "id" in value:
                failed[value["id"]] = value
            else:
                raise ScoreFileError(f"{shown_path(path)}: line {number} has no 'id'")
    if summary is None:
        raise ScoreFileError(f"{shown_path(path)}: the file is empty")
    return summary, failed


def read_score_summary(path: str | os.PathLike) -> dict:
    """The first line of a score file (the only line the leaderboard uses), validated:
    a regular file whose first line is a JSON object with a finite ``accuracy`` in [0, 1]
    (and integer counts, where present). Raises :class:`ScoreFileError`."""
    path = Path(path)
    try:
        with Lines(path, SCORE_FILE, MAX_SCORE_SUMMARY_CHARS, errors="strict") as lines:
            first = next(lines, "")
    except UnreadableFile as exc:
        raise ScoreFileError(f"{shown_path(path)}: {exc.reason}") from None
    except UnicodeDecodeError as exc:
        raise ScoreFileError(f"{shown_path(path)}: cannot read it ({type(exc).__name__})") from None
    if first is None:
        raise ScoreFileError(f"{shown_path(path)}: the first line is longer than {MAX_SCORE_SUMMARY_CHARS:,} "
                             f"characters")
    try:
        summary = loads_bounded(first, MAX_SCORE_LINE_DEPTH)
    except (NotJSON, TooDeep):
        raise ScoreFileError(f"{shown_path(path)}: the first line is not JSON") from None
    accuracy = summary.get("accuracy") if isinstance(summary, dict) else None
    if not (type(accuracy) is int or type(accuracy) is float) or not math.isfinite(accuracy) or not 0 <= accuracy <= 1:
        raise ScoreFileError(f"{shown_path(path)}: the first line has no 'accuracy' between 0 and 1")
    for key in ("correct_count", "total_count"):
        if key in summary and type(summary[key]) is not int:
            raise ScoreFileError(f"{shown_path(path)}: {key!r} in the first line is not an integer")
    return summary


def score_files(score_dir: str | os.PathLike,
                report: Callable[[str], None] | None = None) -> Iterable[tuple[str, str, Path]]:
    """``(model folder, category, path)`` of the score files under ``score_dir``, in the
    reference's walk order (``iterdir()``, then every ``BFCL_v4_*_score.json`` below each
    folder). The walk is iterative and bounded and does not follow symlinked folders; a
    name the reference could not take a category from is skipped (it would raise)."""
    from bfcl_safe.interp.limits import MAX_WALK_DEPTH, MAX_WALK_ENTRIES

    root = Path(score_dir)
    if not root.is_dir():
        return
    budget = MAX_WALK_ENTRIES
    for subdir in [entry for entry in root.iterdir() if entry.is_dir() and not entry.is_symlink()]:
        stack = [(subdir, 0)]
        found = []
        while stack:
            folder, depth = stack.pop()
            try:
                with os.scandir(folder) as listing:
                    entries = sorted(listing, key=lambda e: e.name)
            except OSError:
                continue
            budget -= len(entries)
            if budget < 0:
                if report:
                    report(f"{shown_path(root)}: more than {MAX_WALK_ENTRIES:,} entries; score files beyond them "
                           f"are not read")
                return
            for entry in reversed(entries):
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    is_dir = False
                if is_dir and depth < MAX_WALK_DEPTH:
                    stack.append((Path(entry.path), depth + 1))
            found += [Path(e.path) for e in entries if fnmatch_score(e.name)]
        for path in found:
            category = category_of_score_file(path)
            if category is not None:
                yield subdir.name, category, path


def fnmatch_score(name: str) -> bool:
    """Whether a file name is a score file's (``BFCL_v4_*_score.json``)."""
    return name.startswith(f"{VERSION_PREFIX}_") and name.endswith("_score.json")


# --------------------------------------------------------------------------- leaderboard


def category_of_score_file(path: str | os.PathLike) -> str | None:
    """The reference's ``extract_test_category`` on a path (None where it would raise)."""
    match = re.search(_CATEGORY_PATTERN, str(path))
    return match.group(1) if match else None
