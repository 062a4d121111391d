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
- cells joined by ``,`` without quoting, lines by ``\\n``, no newline after the last.
"""

from __future__ import annotations

from bfcl_safe.interp.errors import BfclSafeError

import json
import json.decoder
import json.scanner
import os
import shutil
import re
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from bfcl_safe.interp.results import encode_with_stored

from bfcl_safe.checker.contract import MULTI_TURN_CATEGORIES, MULTI_TURN_GROUP, VERSION_PREFIX
CSV_NAME = "data_multi_turn.csv"

#: The CSV header (the reference's ``COLUMNS_MULTI_TURN``).
CSV_COLUMNS = ("Rank", "Model", "Multi Turn Overall Acc", "Base", "Miss Func", "Miss Param", "Long Context")
#: Categories behind the four per-category columns, in column order.
CSV_CATEGORIES = MULTI_TURN_CATEGORIES
NOT_AVAILABLE = "N/A"
#: The non-official column ``evaluate --partial-credit`` appends (see :func:`turn_accuracy`).
TURN_ACCURACY_COLUMN = "Per-Turn Acc"

SCORE_GLOB = f"{VERSION_PREFIX}_*_score.json"
#: The reference's ``extract_test_category`` pattern, searched in the whole path text.
_CATEGORY_PATTERN = rf".*{VERSION_PREFIX}_(\w+?)(?:_score|_result)?\.json"

_PLAIN = (str, int, float, bool, type(None))


class ScoreFileError(BfclSafeError, ValueError):
    """A score file cannot be read; the message names the file and the problem."""


# --------------------------------------------------------------------------- JSON lines


def json_safe(value: Any) -> Any:
    """The reference's ``make_json_serializable``: walk dicts and lists, ``str()`` what JSON rejects.

    Only called for entries that ``json.dumps`` rejects as a whole (failure details that
    hold backend objects): their dicts and lists are walked, leaves of plain types kept
    as they are, and any other leaf kept if ``json.dumps`` accepts it, else its ``str()``.
    """
    kind = type(value)
    if kind in _PLAIN:  # these always serialise as they are
        return value
    if isinstance(value, dict):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, list):
        return [json_safe(item) for item in value]
    try:
        json.dumps(value, ensure_ascii=False)
        return value
    except (TypeError, ValueError):
        return str(value)


class RawJSON:
    """A JSON value kept as the (already validated) text it was read from.

    A result line's ``inference_log`` is most of its bytes and is only ever copied into
    the score file: it is checked to be valid JSON when the line is read, but neither
    built as objects nor encoded again. The model's result, the prompt and the possible
    answer are copied the same way from the lines they were read from. The score file
    holds the same values as the reference's (which decodes and re-encodes them); the
    text is the one read.
    """

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text

    def value(self) -> Any:
        return json.loads(self.text)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RawJSON) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"RawJSON({self.text[:40]!r}{'...' if len(self.text) > 40 else ''})"


_WHITESPACE = re.compile(r"[ \t\n\r]*")
_scan_value = json.scanner.make_scanner(json.JSONDecoder())
#: Scans a value for validity only: objects are not built (keys and leaves still are;
#: ``len`` is just the cheapest thing to hand each object's pairs to).
_check_value = json.scanner.make_scanner(json.JSONDecoder(object_pairs_hook=len))
#: Keys of a result line whose value is kept as :class:`RawJSON`.
RAW_KEYS = frozenset({"inference_log"})


class ResultLine(dict):
    """A result line's object, with the JSON text of each top-level value (``texts``,
    by key) for values that score files copy as they are (``result``)."""

    __slots__ = ("texts",)


def loads_result_line(line: str, spans: dict[str, tuple[int, int]] | None = None) -> Any:
    """``json.loads(line)``, except that an object's ``inference_log`` comes back as
    :class:`RawJSON` and the object as a :class:`ResultLine` (with the text of its
    ``result``). Raises exactly what ``json.loads`` raises on the same text. ``spans``,
    if given, receives where each top-level value's text is in ``line``."""
    try:
        parsed = _loads_object(line, spans=spans)
    except (ValueError, RecursionError, StopIteration, IndexError):
        parsed = None
    return json.loads(line) if parsed is None else parsed


def raw_value(item: Any, key: str) -> RawJSON | None:
    """The JSON text of ``item[key]`` as read, if ``item`` came from :func:`loads_result_line`."""
    texts = getattr(item, "texts", None)
    return None if texts is None else texts.get(key)


def raw_top_level_value(line: str, key: str) -> RawJSON | None:
    """The JSON text of ``key``'s value in the JSON object ``line`` (None if absent, or
    if the line is not an object this reader takes)."""
    span = top_level_span(line, key)
    return None if span is None else RawJSON(line[span[0] : span[1]])


def top_level_span(line: str, key: str) -> tuple[int, int] | None:
    """Where the text of ``key``'s value is in the JSON object ``line`` (the last one, as
    ``json.loads`` keeps the last); None if absent or if the line is not such an object."""
    spans: dict[str, tuple[int, int]] = {}
    return None if _loads_object(line, frozenset(), spans) is None else spans.get(key)


def _loads_object(line: str, text_keys: frozenset = frozenset({"result"}),
                  spans: dict[str, tuple[int, int]] | None = None) -> dict | None:
    """A top-level JSON object, key by key with the C scanner; None when the text is not
    one (the caller then lets ``json.loads`` decide and word the error). ``spans``, if
    given, receives where each value's text is."""
    ws = _WHITESPACE.match
    index = ws(line, 0).end()
    if line[index] != "{":
        return None
    out = ResultLine()
    out.texts = {}
    index = ws(line, index + 1).end()
    if line[index] == "}":
        index += 1
    else:
        while True:
            if line[index] != '"':
                return None
            key, index = json.decoder.scanstring(line, index + 1)
            index = ws(line, index).end()
            if line[index] != ":":
                return None
            start = ws(line, index + 1).end()
            if key in RAW_KEYS:
                _, index = _check_value(line, start)
                out[key] = RawJSON(line[start:index])
            else:
                out[key], index = _scan_value(line, start)
                if key in text_keys:
                    out.texts[key] = RawJSON(line[start:index])
            if spans is not None:
                spans[key] = (start, index)
            index = ws(line, index).end()
            if line[index] == ",":
                index = ws(line, index + 1).end()
                continue
            if line[index] != "}":
                return None
            index += 1
            break
    return out if ws(line, index).end() == len(line) else None


def dumps_line(entry: Any) -> str:
    """One score-file line, without the newline.

    Plain data is encoded in one pass; only an entry holding something JSON rejects
    (backend objects in failure details) goes through :func:`json_safe` first. Top-level
    :class:`RawJSON` values are written as their text.
    """
    if type(entry) is dict and any(type(value) is RawJSON for value in entry.values()):
        return encode_with_stored(entry, RawJSON, _dumps_record)
    return _dumps_record(entry)


def _dumps_record(entry: Any) -> str:
    try:
        return json.dumps(entry, ensure_ascii=False)
    except (TypeError, ValueError):
        return json.dumps(json_safe(entry), ensure_ascii=False)


def _write_text(path: Path, text: str) -> None:
    """Write UTF-8 text with ``\\n`` line ends, atomically (temp file + rename).

    Lone surrogates (possible in model text decoded from JSON escapes) cannot be
    encoded in UTF-8; the reference crashes on them. We write them as ``\\udXXX``,
    which inside a JSON string is the same escape JSON decodes back to the same text.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(temporary, "w", encoding="utf-8", errors="backslashreplace", newline="\n") as handle:
            handle.write(text)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


# --------------------------------------------------------------------------- score files


def score_file_path(score_dir: str | os.PathLike, model_name: str, category: str) -> Path:
    """``SCORE/{model}/multi_turn/BFCL_v4_{category}_score.json``."""
    if MULTI_TURN_GROUP not in category:
        raise ValueError(f"{category!r} is not a multi-turn category")
    return Path(score_dir) / model_name / MULTI_TURN_GROUP / f"{VERSION_PREFIX}_{category}_score.json"


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


class ScoreFileWriter:
    """Collects one category's failed-entry lines, then writes the score file (summary
    line first) atomically. Lines are kept in memory up to :attr:`BUFFER_CHARS`, beyond
    which they go to a side file on disk: memory stays flat however many entries fail,
    and the usual file is written in one go, without copying it from disk again."""

    #: Characters of failure lines kept in memory before spilling to disk.
    BUFFER_CHARS = 16 * 1024 * 1024

    def __init__(self, score_dir: str | os.PathLike, model_name: str, category: str):
        self.path = score_file_path(score_dir, model_name, category)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._body_path = self.path.with_name(f".{self.path.name}.body-{os.getpid()}")
        self._lines: list[str] = []
        self._buffered = 0
        self._body = None

    def add(self, line: str) -> None:
        if self._body is not None:
            _write_lines(self._body, [line])
            return
        self._lines.append(line)
        self._buffered += len(line) + 1
        if self._buffered > self.BUFFER_CHARS:
            self._body = open(self._body_path, "w", encoding="utf-8", errors="backslashreplace", newline="\n")
            _write_lines(self._body, self._lines)
            self._lines = []

    def finish(self, correct_count: int, total_count: int) -> Path:
        header = {"accuracy": correct_count / total_count, "correct_count": correct_count, "total_count": total_count}
        temporary = self.path.with_name(f".{self.path.name}.tmp-{os.getpid()}")
        try:
            if self._body is None:
                with open(temporary, "w", encoding="utf-8", errors="backslashreplace", newline="\n") as out:
                    _write_lines(out, [dumps_line(header), *self._lines])
            else:
                self._body.close()
                with open(temporary, "w", encoding="utf-8", newline="\n") as out, \
                        open(self._body_path, encoding="utf-8") as body:
                    out.write(dumps_line(header) + "\n")
                    shutil.copyfileobj(body, out, 1 << 20)
            os.replace(temporary, self.path)
        finally:
            temporary.unlink(missing_ok=True)
            self._body_path.unlink(missing_ok=True)
            self._lines = []
        return self.path

    def abort(self) -> None:
        if self._body is not None:
            self._body.close()
        self._body_path.unlink(missing_ok=True)
        self._lines = []


def _write_lines(handle: Any, lines: Iterable[str]) -> None:
    # One by one: joining them first would widen every line to the widest one's
    # character kind (and copy them all once more).
    for line in lines:
        handle.write(line)
        handle.write("\n")


def read_score_file(path: str | os.PathLike) -> tuple[dict, dict[str, dict]]:
    """Return ``(summary, {id: failed entry})`` of a score file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScoreFileError(f"{path}: cannot read it ({type(exc).__name__}: {exc})") from None
    summary: dict | None = None
    failed: dict[str, dict] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ScoreFileError(f"{path}: line {number} is not JSON ({exc.msg})") from None
        if not isinstance(value, dict):
            raise ScoreFileError(f"{path}: line {number} is not a JSON object")
        if summary is None:
            summary = value
        elif "id" in value:
            failed[value["id"]] = value
        else:
            raise ScoreFileError(f"{path}: line {number} has no 'id'")
    if summary is None:
        raise ScoreFileError(f"{path}: the file is empty")
    return summary, failed


def read_score_summary(path: str | os.PathLike) -> dict:
    """The first line of a score file (the only line the leaderboard uses)."""
    path = Path(path)
    try:
        with open(path, encoding="utf-8") as handle:
            first = handle.readline()
        summary = json.loads(first)
    except (OSError, UnicodeDecodeError) as exc:
        raise ScoreFileError(f"{path}: cannot read it ({type(exc).__name__}: {exc})") from None
    except json.JSONDecodeError as exc:
        raise ScoreFileError(f"{path}: the first line is not JSON ({exc.msg})") from None
    if not isinstance(summary, dict) or not isinstance(summary.get("accuracy"), (int, float)):
        raise ScoreFileError(f"{path}: the first line has no numeric 'accuracy'")
    return summary


# --------------------------------------------------------------------------- leaderboard


def category_of_score_file(path: str | os.PathLike) -> str | None:
    """The reference's ``extract_test_category`` on a path (None where it would raise)."""
    match = re.search(_CATEGORY_PATTERN, str(path))
    return match.group(1) if match else None


def collect_scores(
    score_dir: str | os.PathLike, first_models: Iterable[str] = ()
) -> dict[str, dict[str, dict]]:
    """``{model folder: {category: summary}}`` from every score file under ``score_dir``.

    Order is the reference's leaderboard-table order: ``first_models`` (the models
    scored in this run, in result-folder listing order) first, then the other model
    folders in directory listing order. Within a model a later file of the same
    category wins, as in the reference's ``rglob`` walk.
    """
    root = Path(score_dir)
    table: dict[str, dict[str, dict]] = {name: {} for name in first_models}
    if not root.is_dir():
        return {name: cats for name, cats in table.items() if cats}
    # Same walk as the reference: iterdir(), then rglob() inside each folder.
    for subdir in [entry for entry in root.iterdir() if entry.is_dir()]:
        for score_file in subdir.rglob(SCORE_GLOB):
            category = category_of_score_file(score_file)
            if category is None:  # the reference raises here; we skip the stray file
                continue
            summary = read_score_summary(score_file)
            table.setdefault(subdir.name, {})[category] = summary
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
    with open(path, encoding="utf-8") as handle:
        handle.readline()
        for line in handle:
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ScoreFileError(f"{path}: a line is not JSON ({exc.msg})") from None
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
    root = Path(score_dir)
    per_model: dict[str, dict[str, float | None]] = {}
    if not root.is_dir():
        return {}
    for subdir in [entry for entry in root.iterdir() if entry.is_dir()]:
        for score_file in subdir.rglob(SCORE_GLOB):
            category = category_of_score_file(score_file)
            if category is None:
                continue
            per_model.setdefault(subdir.name, {})[category] = turn_accuracy(score_file, turn_count)
    cells: dict[str, str | float] = {}
    for model, categories in per_model.items():
        values = [categories.get(category, 0.0) for category in CSV_CATEGORIES]
        cells[model] = NOT_AVAILABLE if None in values else sum(values) / len(CSV_CATEGORIES)
    return cells


def write_leaderboard_csv(
    score_dir: str | os.PathLike,
    dataset: Any = None,
    *,
    display_names: Mapping[str, str] | None = None,
    first_models: Iterable[str] = (),
    partial_credit: bool = False,
) -> Path:
    """Write ``SCORE/data_multi_turn.csv`` from the score files present under ``score_dir``.

    The Model column is ``display_names[folder]`` if given, else the display name in the
    dataset's model registry (``Dataset.display_name``: folder ``_`` -> ``/``), else the
    folder name (the reference would fail on a model it does not know).

    ``partial_credit`` appends the non-official :data:`TURN_ACCURACY_COLUMN` (turn counts
    from ``dataset``); the official columns, values and row order stay as they are.
    """
    overrides = dict(display_names or {})

    def display_name(model: str) -> str:
        if model in overrides:
            return overrides[model]
        if dataset is not None:
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
    rows = leaderboard_rows(collect_scores(score_dir, first_models), display_name, extra)
    text = "\n".join(",".join(row) for row in [columns, *rows])
    path = Path(score_dir) / CSV_NAME
    _write_text(path, text)
    return path
