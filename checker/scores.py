"""Score files and the multi-turn leaderboard CSV, byte for byte in BFCL's format.

Score file (``SCORE/{model}/multi_turn/BFCL_v4_{category}_score.json``), as the
reference's ``save_eval_results`` + ``write_list_of_dicts_to_file`` write it:

- one JSON document per line, each followed by ``\\n``, UTF-8;
- line 1: ``{"accuracy": correct/total, "correct_count": ..., "total_count": ...}``;
- then one line per failed entry, in the order given;
- each line is ``json.dumps(value, ensure_ascii=False)`` (default separators) of the
  entry after the reference's ``make_json_serializable`` pass: dicts and lists are
  walked, any other value that ``json.dumps`` rejects becomes ``str(value)``
  (so our backends' objects must ``str()`` like the reference's).

CSV (``SCORE/data_multi_turn.csv``), as ``update_leaderboard_table_with_local_score_file``
+ ``generate_leaderboard_csv`` + ``write_score_csv_file`` build it:

- one row per model folder under SCORE holding any ``BFCL_v4_*_score.json`` (any
  category), the first line of each file being its summary;
- columns ``Rank,Model,Multi Turn Overall Acc,Base,Miss Func,Miss Param,Long Context``;
- a missing category shows ``N/A`` and counts as 0 in the overall, which is the plain
  mean of the four accuracies (summed in column order, divided by 4);
- numbers are ``"{:.2f}%".format(x * 100)``; rows sorted by the overall, descending,
  stably (ties keep table order); rank is 1-based;
- cells joined by ``,``, lines by ``\\n``, no newline after the last; a cell holding a
  comma, quote or line break (a hostile model folder name) is quoted as the ``csv``
  module quotes it, so no value adds rows or columns (the reference joins without
  quoting; on every other value the bytes are the same).

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
from bfcl_safe.checker.contract import MULTI_TURN_CATEGORIES, VERSION_PREFIX
from bfcl_safe.checker.inputs import SCORE_FILE, Lines, UnreadableFile, shown_path
from bfcl_safe.checker.outputs import CSV_NAME, ScoreFileWriter, write_text
from bfcl_safe.interp.errors import BfclSafeError
from bfcl_safe.interp.limits import MAX_SCORE_LINE_CHARS, MAX_SCORE_LINE_DEPTH, MAX_SCORE_SUMMARY_CHARS

#: The CSV header (the reference's ``COLUMNS_MULTI_TURN``).
CSV_COLUMNS = ("Rank", "Model", "Multi Turn Overall Acc", "Base", "Miss Func", "Miss Param", "Long Context")
#: Categories behind the four per-category columns, in column order.
CSV_CATEGORIES = MULTI_TURN_CATEGORIES
NOT_AVAILABLE = "N/A"
#: The non-official column ``evaluate --partial-credit`` appends (see :func:`turn_accuracy`).
TURN_ACCURACY_COLUMN = "Per-Turn Acc"

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
    if type(accuracy) not in (int, float) or not math.isfinite(accuracy) or not 0 <= accuracy <= 1:
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


def collect_scores(
    score_dir: str | os.PathLike, first_models: Iterable[str] = (),
    report: Callable[[str], None] | None = None, included: list[Path] | None = None,
) -> dict[str, dict[str, dict]]:
    """``{model folder: {category: summary}}`` from every score file under ``score_dir``.

    Order is the reference's leaderboard-table order: ``first_models`` (the models
    scored in this run, in result-folder listing order) first, then the other model
    folders in directory listing order. Within a model a later file of the same
    category wins, as in the reference's ``rglob`` walk. A file whose summary is not
    valid is reported (``report``) and skipped (the reference crashes); ``included``
    receives the paths used.
    """
    table: dict[str, dict[str, dict]] = {name: {} for name in first_models}
    used: dict[tuple[str, str], Path] = {}
    for model, category, path in score_files(score_dir, report):
        try:
            summary = read_score_summary(path)
        except ScoreFileError as exc:
            if report is None:
                raise
            report(f"{exc}; not included in data_multi_turn.csv")
            continue
        table.setdefault(model, {})[category] = summary
        used[(model, category)] = path
    if included is not None:
        included.extend(used.values())
    return {name: cats for name, cats in table.items() if cats}


def _percent(value: Any) -> str:
    return value if isinstance(value, str) else "{:.2f}%".format(value * 100)


def leaderboard_rows(
    scores: Mapping[str, Mapping[str, Mapping[str, Any]]],
    display_name: Callable[[str], str] = str,
    extra: Mapping[str, Any] | None = None,
) -> list[list[str]]:
    """The CSV rows (without header) for a table from :func:`collect_scores`.

    ``extra``, if given, holds one more cell per model (a fraction or a string), appended
    after the official cells; it does not change the order of the rows.
    """
    rows = []
    for model, categories in scores.items():
        cells: list[Any] = []
        total = 0
        for category in CSV_CATEGORIES:
            summary = categories.get(category)
            if summary is None:
                cells.append(NOT_AVAILABLE)  # counts as 0 in the overall
            else:
                total += summary["accuracy"]
                cells.append(summary["accuracy"])
        overall = total / len(CSV_CATEGORIES)
        if extra is not None:
            cells.append(extra.get(model, NOT_AVAILABLE))
        rows.append([display_name(model), overall, *cells])
    rows.sort(key=lambda row: row[1], reverse=True)  # stable: ties keep table order
    return [[str(rank), name, *(_percent(cell) for cell in cells)] for rank, (name, *cells) in enumerate(rows, 1)]


# --------------------------------------------------------------------------- partial credit


def turn_accuracy(path: str | os.PathLike, turn_count: Callable[[str], int | None]) -> float | None:
    """Per-turn accuracy of one score file (non-official).

    An entry that passed counts 1; a failed entry counts ``turns_passed / its number of
    ground-truth turns`` (the turns before its first failing turn); the sum is divided by
    ``total_count``. None when a failed entry has no ``turns_passed`` (e.g. a score file
    of the reference) or ``turn_count`` does not know it.
    """
    path = Path(path)
    summary = read_score_summary(path)
    credit = float(summary.get("correct_count", 0))
    with _score_lines(path) as lines:
        for number, line in enumerate(lines, 1):
            if number == 1 or (line is not None and line.isspace()):
                continue
            record = _score_line(path, number, line)
            passed = record.get("turns_passed") if isinstance(record, dict) else None
            turns = turn_count(record.get("id")) if isinstance(record, dict) else None
            if type(passed) is not int or not turns:
                return None
            credit += passed / turns
    total = summary.get("total_count")
    return credit / total if total else None


def collect_turn_accuracy(
    score_dir: str | os.PathLike, turn_count: Callable[[str], int | None]
) -> dict[str, str | float]:
    """``{model folder: per-turn accuracy cell}``: the plain mean over the four categories,
    a missing category counting 0 (like the official overall); ``N/A`` when a score file
    has no per-turn data. Same walk as :func:`collect_scores`."""
    per_model: dict[str, dict[str, float | None]] = {}
    for model, category, score_file in score_files(score_dir):
        try:
            per_model.setdefault(model, {})[category] = turn_accuracy(score_file, turn_count)
        except ScoreFileError:
            continue  # (reported, and left out, by collect_scores)
    cells: dict[str, str | float] = {}
    for model, categories in per_model.items():
        values = [categories.get(category, 0.0) for category in CSV_CATEGORIES]
        cells[model] = NOT_AVAILABLE if None in values else sum(values) / len(CSV_CATEGORIES)
    return cells


def csv_text(rows: Iterable[Sequence[str]]) -> str:
    """Rows as CSV text: ``,`` between cells, ``\\n`` between rows, none after the last;
    a cell is quoted only if it holds a comma, a quote or a line break (so the plain
    cells of real data give the reference's bytes, and no value adds a row or column)."""
    return "\n".join(",".join(map(_csv_cell, row)) for row in rows)


_CSV_SPECIAL = re.compile(r'[,"\r\n]')


def _csv_cell(cell: str) -> str:
    # As csv.writer's QUOTE_MINIMAL, except that a lone "\r" is quoted too (csv quotes
    # only the characters of its line terminator).
    return f'"{cell.replace(chr(34), chr(34) * 2)}"' if _CSV_SPECIAL.search(cell) else cell


def write_leaderboard_csv(
    score_dir: str | os.PathLike,
    dataset: Any = None,
    *,
    display_names: Mapping[str, str] | None = None,
    first_models: Iterable[str] = (),
    partial_credit: bool = False,
    report: Callable[[str], None] | None = None,
    included: list[Path] | None = None,
) -> Path:
    """Write ``SCORE/data_multi_turn.csv`` from the score files present under ``score_dir``.

    The Model column is ``display_names[folder]`` if given, else the display name in the
    dataset's model registry (``Dataset.display_name``: folder ``_`` -> ``/``), else the
    folder name (the reference would fail on a model it does not know).

    ``partial_credit`` appends the non-official :data:`TURN_ACCURACY_COLUMN` (turn counts
    from ``dataset``); the official columns, values and row order stay as they are.

    With ``report``, score files that are not valid are reported and left out (else
    :class:`ScoreFileError`); ``included`` receives the score files the CSV was made from.
    """
    overrides = dict(display_names or {})

    def display_name(model: str) -> str:
        if model in overrides:
            return overrides[model]
        if dataset is not None:
            try:
                model.encode("utf-8")
            except UnicodeEncodeError:  # a non-UTF-8 folder name is no registry name
                return model
            return dataset.display_name(model)
        return model

    columns = list(CSV_COLUMNS)
    extra = None
    if partial_credit:
        columns.append(TURN_ACCURACY_COLUMN)

        def turn_count(entry_id: Any) -> int | None:
            if dataset is None or not isinstance(entry_id, str):
                return None
            try:
                return len(dataset.ground_truth_for(entry_id))
            except KeyError:
                return None

        extra = collect_turn_accuracy(score_dir, turn_count)
    rows = leaderboard_rows(collect_scores(score_dir, first_models, report, included), display_name, extra)
    text = csv_text([columns, *rows])
    path = Path(score_dir) / CSV_NAME
    write_text(path, text)
    return path
