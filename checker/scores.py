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

from bfcl_safe.interp.errors import BfclSafeError

import io
import json
import json.decoder
import json.scanner
import math
import os
import re
import shutil
import stat
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from bfcl_safe.interp.results import encode_with_stored

from bfcl_safe.checker.contract import MULTI_TURN_CATEGORIES, MULTI_TURN_GROUP, VERSION_PREFIX
from bfcl_safe.interp.limits import MAX_SCORE_SUMMARY_CHARS
from bfcl_safe.checker.terminal import shown

SCORE_GLOB = f"{VERSION_PREFIX}_*_score.json"
#: The reference's ``extract_test_category`` pattern, searched in the whole path text.
_CATEGORY_PATTERN = rf".*{VERSION_PREFIX}_(\w+?)(?:_score|_result)?\.json"

_PLAIN = (str, int, float, bool, type(None))


class ScoreFileError(BfclSafeError, ValueError):
    """A score file cannot be read; the message names the file and the problem."""


class UnsafePath(BfclSafeError, OSError):
    """A path under the score dir that is not written through: ``path``, and ``reason``
    (a symlink, or not a folder)."""

    def __init__(self, path: Path, reason: str):
        self.path = path
        self.reason = reason
        super().__init__(f"{_shown_path(path)}: {reason}; not written through")


def _shown_path(path: Any) -> str:
    return shown(path)  # the one cell rule (checker/terminal.py)


_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


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
            try:
                inner = os.open(part, _DIR_FLAGS | _NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                try:
                    mode = os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode
                except OSError:
                    raise exc from None
                raise UnsafePath(path, "a symlink" if stat.S_ISLNK(mode) else "not a folder") from None
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def _create(name: str, dir_fd: int, errors: str = "backslashreplace") -> io.TextIOWrapper:
    """A new file ``name`` in the folder ``dir_fd`` (never an existing one, never through a symlink)."""
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o666,
                 dir_fd=dir_fd)
    return open(fd, "w", encoding="utf-8", errors=errors, newline="\n")


def _unlink(name: str, dir_fd: int) -> None:
    try:
        os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        pass


def _replace_file(name: str, dir_fd: int, write: Callable[[Any], None]) -> None:
    """Write a file atomically in the folder ``dir_fd``: a temporary file, then renamed
    over ``name`` (a symlink at ``name`` is replaced, not followed; a folder there fails)."""
    temporary = f".{name}.tmp-{os.getpid()}"
    _unlink(temporary, dir_fd)
    try:
        with _create(temporary, dir_fd) as handle:
            write(handle)
        os.replace(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    finally:
        _unlink(temporary, dir_fd)


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
_BLANK = frozenset(" \t\n\r")
_scan_value = json.scanner.make_scanner(json.JSONDecoder())
#: Scans a value for validity only: objects and floats are not built (keys, strings and
#: ints still are; ``len`` is just the cheapest thing to hand each object's pairs and each
#: float's text to: whether a number is valid is decided before it is converted).
_check_value = json.scanner.make_scanner(json.JSONDecoder(object_pairs_hook=len, parse_float=len))


def loads_json(text: str) -> Any:
    """``json.loads(text)`` for a str: a text that starts with its value goes straight to
    the C scanner (json.loads first matches a whitespace regex on each side, about 1,500
    instructions each); any other text, and any error, is json.loads's own."""
    try:
        value, end = _scan_value(text, 0)
    except (StopIteration, ValueError, RecursionError):
        return json.loads(text)
    if end == len(text) or not text[end:].strip(" \t\n\r"):
        return value
    return json.loads(text)
#: Keys of a result line whose value is kept as :class:`RawJSON`.
RAW_KEYS = frozenset({"inference_log"})


class ResultLine(dict):
    """A result line's object, with the JSON text of each top-level value (``texts``,
    by key) for values that score files copy as they are (``result``)."""

    __slots__ = ("texts",)


#: A piece of a result line: ``(start, end, above)``, the text ``line[start:end]`` of one
#: JSON value and how many arrays and objects enclose it.
Piece = tuple[int, int, int]


def loads_result_line(line: str, spans: dict[str, tuple[int, int]] | None = None,
                      pieces: list[Piece] | None = None) -> Any:
    """``json.loads(line)``, except that an object's ``inference_log`` comes back as
    :class:`RawJSON` and the object as a :class:`ResultLine` (with the text of its
    ``result``). Raises exactly what ``json.loads`` raises on the same text. ``spans``,
    if given, receives where each top-level value's text is in ``line``.

    ``pieces``, if given, receives :data:`Piece` s that together hold every value of the
    object: each top-level value (one level down), except that an array kept as
    :class:`RawJSON` is given by its elements (two levels down; the array itself when it
    is empty). The object's nesting depth is then the greatest ``above`` + depth of a
    piece. Nothing is added when the line is not an object this reader takes, nor when
    it would take more than :data:`MAX_PIECES` pieces."""
    try:
        parsed = _loads_object(line, spans=spans, pieces=pieces)
    except (ValueError, RecursionError, StopIteration, IndexError):
        parsed = None
    if parsed is None:
        if pieces:
            del pieces[:]
        return json.loads(line)
    return parsed


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
    return None if _loads_object(line, frozenset(), spans, decode=False) is None else spans.get(key)


#: Most elements of one array recorded as pieces (real inference logs: 5 to 13); past it
#: the array is one piece, scanned again whole (at most twice the work, never a piece per
#: element of a hostile ``[0,0,0,...]``).
MAX_ELEMENT_PIECES = 1024
#: Most pieces of one line; past it none are kept (the caller counts the line whole).
MAX_PIECES = 4096


def _check_elements(line: str, start: int, pieces: list[Piece]) -> int:
    """Scans the array at ``start`` for validity as ``_check_value`` does, one element
    at a time so that each element's span is known; returns where the array ends. Any
    departure from JSON raises (the caller then lets ``json.loads`` decide). Past
    :data:`MAX_ELEMENT_PIECES` elements the array is scanned whole and is one piece."""
    ws = _WHITESPACE.match
    index = ws(line, start + 1).end()
    if line[index] == "]":
        pieces.append((start, index + 1, 1))
        return index + 1
    append = pieces.append
    first = len(pieces)
    for _ in range(MAX_ELEMENT_PIECES):
        _, end = _check_value(line, index)
        append((index, end, 2))
        char = line[end]
        if char in _BLANK:
            end = ws(line, end).end()
            char = line[end]
        if char == ",":
            index = end + 1
            if line[index] == " ":  # (", ", as json.dumps writes it, without a regex call)
                index += 1
            if line[index] in _BLANK:
                index = ws(line, index).end()
        elif char == "]":
            return end + 1
        else:
            raise ValueError("not an array")
    del pieces[first:]
    _, end = _check_value(line, start)
    append((start, end, 1))
    return end


def _loads_object(line: str, text_keys: frozenset = frozenset({"result"}),
                  spans: dict[str, tuple[int, int]] | None = None, pieces: list[Piece] | None = None,
                  decode: bool = True) -> dict | None:
    """A top-level JSON object, key by key with the C scanner; None when the text is not
    one (the caller then lets ``json.loads`` decide and word the error). ``spans`` and
    ``pieces``, if given, receive where each value's text is (see :func:`loads_result_line`).
    ``decode=False``: every value is only checked, as an ``inference_log`` is, and the
    object returned is empty (for callers that want the spans only)."""
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
            # (Blanks are looked for before a regex is called: json.dumps writes ": " and ", ".)
            if line[index] != ":":
                index = ws(line, index).end()
                if line[index] != ":":
                    return None
            start = index + 1
            if line[start] == " ":
                start += 1
            if line[start] in _BLANK:
                start = ws(line, start).end()
            if not decode:
                _, index = _check_value(line, start)
            elif key in RAW_KEYS:
                if pieces is not None and line[start] == "[":
                    index = _check_elements(line, start, pieces)
                else:
                    _, index = _check_value(line, start)
                    if pieces is not None:
                        pieces.append((start, index, 1))
                out[key] = RawJSON(line[start:index])
            else:
                out[key], index = _scan_value(line, start)
                if key in text_keys:
                    out.texts[key] = RawJSON(line[start:index])
                if pieces is not None:
                    pieces.append((start, index, 1))
            if spans is not None:
                spans[key] = (start, index)
            if pieces is not None and len(pieces) > MAX_PIECES:
                del pieces[:]  # (the caller counts the line whole)
                pieces = None
            if line[index] in _BLANK:
                index = ws(line, index).end()
            if line[index] == ",":
                index += 1
                if line[index] == " ":
                    index += 1
                if line[index] in _BLANK:
                    index = ws(line, index).end()
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
    """Write UTF-8 text with ``\\n`` line ends, atomically (temp file + rename), never
    through a symlink at ``path``.

    Lone surrogates (possible in model text decoded from JSON escapes) cannot be
    encoded in UTF-8; the reference crashes on them. We write them as ``\\udXXX``,
    which inside a JSON string is the same escape JSON decodes back to the same text.
    """
    fd = open_folder(path.parent)
    try:
        _replace_file(path.name, fd, lambda handle: handle.write(text))
    finally:
        os.close(fd)


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
        self._dir = open_folder(score_dir, (model_name, MULTI_TURN_GROUP))
        self._body_name = f".{self.path.name}.body-{os.getpid()}"
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
            _unlink(self._body_name, self._dir)
            self._body = _create(self._body_name, self._dir)
            _write_lines(self._body, self._lines)
            self._lines = []

    def finish(self, correct_count: int, total_count: int) -> Path:
        header = {"accuracy": correct_count / total_count, "correct_count": correct_count, "total_count": total_count}

        def write(out: Any) -> None:
            if self._body is None:
                _write_lines(out, [dumps_line(header), *self._lines])
            else:
                self._body.close()
                body_fd = os.open(self._body_name, os.O_RDONLY | _NOFOLLOW, dir_fd=self._dir)
                with open(body_fd, encoding="utf-8") as body:
                    out.write(dumps_line(header) + "\n")
                    shutil.copyfileobj(body, out, 1 << 20)

        try:
            _replace_file(self.path.name, self._dir, write)
        finally:
            self.abort()
        return self.path

    def abort(self) -> None:
        if self._body is not None:
            self._body.close()
            self._body = None
        if self._dir >= 0:
            _unlink(self._body_name, self._dir)
            os.close(self._dir)
            self._dir = -1
        self._lines = []

    def __del__(self) -> None:
        if getattr(self, "_dir", -1) >= 0:
            os.close(self._dir)


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
        except (ValueError, RecursionError) as exc:
            raise ScoreFileError(f"{path}: line {number} is not JSON ({type(exc).__name__})") from None
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
    """The first line of a score file (the only line the leaderboard uses), validated:
    a regular file whose first line is a JSON object with a finite ``accuracy`` in [0, 1]
    (and integer counts, where present). Raises :class:`ScoreFileError`."""
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):
            raise ScoreFileError(f"{_shown_path(path)}: not a regular file")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with open(fd, encoding="utf-8") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ScoreFileError(f"{_shown_path(path)}: not a regular file")
            first = handle.readline(MAX_SCORE_SUMMARY_CHARS + 1)
        if len(first) > MAX_SCORE_SUMMARY_CHARS:
            raise ScoreFileError(f"{_shown_path(path)}: the first line is longer than {MAX_SCORE_SUMMARY_CHARS:,} "
                                 f"characters")
        summary = json.loads(first)
    except (OSError, UnicodeDecodeError) as exc:
        raise ScoreFileError(f"{_shown_path(path)}: cannot read it ({type(exc).__name__})") from None
    except (json.JSONDecodeError, RecursionError):
        raise ScoreFileError(f"{_shown_path(path)}: the first line is not JSON") from None
    accuracy = summary.get("accuracy") if isinstance(summary, dict) else None
    if type(accuracy) not in (int, float) or not math.isfinite(accuracy) or not 0 <= accuracy <= 1:
        raise ScoreFileError(f"{_shown_path(path)}: the first line has no 'accuracy' between 0 and 1")
    for key in ("correct_count", "total_count"):
        if key in summary and type(summary[key]) is not int:
            raise ScoreFileError(f"{_shown_path(path)}: {key!r} in the first line is not an integer")
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
                    report(f"{_shown_path(root)}: more than {MAX_WALK_ENTRIES:,} entries; score files beyond them "
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
    """Whether a file name matches :data:`SCORE_GLOB`."""
    return name.startswith(f"{VERSION_PREFIX}_") and name.endswith("_score.json")


# --------------------------------------------------------------------------- leaderboard


def category_of_score_file(path: str | os.PathLike) -> str | None:
    """The reference's ``extract_test_category`` on a path (None where it would raise)."""
    match = re.search(_CATEGORY_PATTERN, str(path))
    return match.group(1) if match else None
