"""The JSON line codec: result lines and score-file lines read and written, in one place.

Reading (hot path: every result line goes through it once):

- :func:`loads_json`: ``json.loads`` for a str, straight to the C scanner.
- :func:`loads_result_line`: a result line's object, its ``inference_log`` kept as
  :class:`RawJSON` (validated, never built nor encoded again), the text of its ``result``
  kept (:func:`raw_value`), and optionally its :data:`Piece` s (where each value's text is).
- :func:`top_level_span` / :func:`raw_top_level_value`: where a key's value is in a line.
- Depth: :func:`nesting_depth`, :func:`deeper_than`, :func:`deeper_in_pieces` count the
  JSON nesting of a text without recursion (brackets outside strings, bytes operations
  only: linear and in C). :func:`loads_bounded` decodes any JSON text with a depth bound
  (100,000 nested brackets are one :class:`TooDeep`, never a ``RecursionError``).

Writing: :func:`dumps_line` (one score-file line, top-level :class:`RawJSON` written as
its text), :func:`json_safe` (the reference's ``make_json_serializable``).
"""

from __future__ import annotations

import json
import json.decoder
import json.scanner
import re
from itertools import accumulate
from typing import Any, Callable, cast

from bfcl_safe.interp.errors import BfclSafeError
from bfcl_safe.interp.result_text import encode_with_stored

_PLAIN = (str, int, float, bool, type(None))


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
#: ``_WHITESPACE.match``: never None (the pattern matches the empty string), which its type cannot say.
_match_blanks = cast("Callable[[str, int], re.Match[str]]", _WHITESPACE.match)
_BLANK = frozenset(" \t\n\r")
#: json.decoder's string scanner (the C one), which json.decoder's stub does not declare.
_scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
# (typeshed types make_scanner's context as a make_scanner; it is a decoder, as json.decoder passes it.)
_scan_value = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]
#: Scans a value for validity only: objects and floats are not built (keys, strings and
#: ints still are; ``len`` is just the cheapest thing to hand each object's pairs and each
#: float's text to: whether a number is valid is decided before it is converted).
_check_value = json.scanner.make_scanner(json.JSONDecoder(object_pairs_hook=len, parse_float=len))  # type: ignore[arg-type]


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
    texts: dict[str, RawJSON]


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
    ws = _match_blanks
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


def _loads_object(line: str, text_keys: frozenset[str] = frozenset({"result"}),
                  spans: dict[str, tuple[int, int]] | None = None, pieces: list[Piece] | None = None,
                  decode: bool = True) -> ResultLine | None:
    """A top-level JSON object, key by key with the C scanner; None when the text is not
    one (the caller then lets ``json.loads`` decide and word the error). ``spans`` and
    ``pieces``, if given, receive where each value's text is (see :func:`loads_result_line`).
    ``decode=False``: every value is only checked, as an ``inference_log`` is, and the
    object returned is empty (for callers that want the spans only)."""
    ws = _match_blanks
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
            key, index = _scanstring(line, index + 1)
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


# --------------------------------------------------------------------------- one line

#: Every byte but quotes and brackets (deleted by ``bytes.translate``).
_NOT_STRUCTURE = bytes(byte for byte in range(256) if byte not in b'"[]{}')
#: Every byte but quotes, brackets, backslashes and the characters a backslash escapes in JSON.
_NOT_JSON_ESCAPE = bytes(byte for byte in range(256) if byte not in b'"[]{}\\/bfnrtu')
#: Texts shorter than this get the quick count of openers first (see :func:`deeper_than`).
_QUICK_COUNT_CHARS = 4096
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}
#: Brackets per chunk of the depth count (one exact count per chunk that could pass the limit).
_CHUNK = 256


def _brackets(data: bytes, known_json: bool = False) -> bytes:
    """The brackets of the (UTF-8) text ``data`` outside strings, in order, by bytes
    operations only (each linear and in C, a few per line). Escapes first: backslash
    pairs, then escaped quotes (a backslash run pairs from its start, as a parser reads
    it); then only quotes and brackets are kept; adjacent quotes are dropped in pairs (an
    empty string, or the end of one string and the start of the next: no bracket is between
    them, and every other quote keeps its parity); what is left between a quote and the
    next is inside a string.

    ``known_json``: ``data`` is known to be JSON (a parser accepted it). Every backslash in it
    then starts an escape whose second character is one of ``"\\/bfnrtu``, so the escapes
    are found in the text reduced to those characters, quotes and brackets (a third of
    an inference log): a backslash stays next to the character it escapes, and a run of
    backslashes that the reduction joins is made of whole ``\\\\`` escapes but for its
    last one, so it pairs as before. Exact on JSON only."""
    if b"\\" in data:
        if known_json:
            data = data.translate(None, _NOT_JSON_ESCAPE)
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    data = data.translate(None, _NOT_STRUCTURE)
    if b'"' in data:
        data = data.replace(b'""', b"")
        if b'"' in data:  # strings holding brackets (or one left open to the end)
            data = b"".join(data.split(b'"')[::2])
    return data


def _deepest(brackets: bytes, limit: int) -> int:
    """The greatest depth the ``brackets`` reach, counted exactly only in the chunks where
    the depth plus the chunk's openers could pass ``limit``: the result is exact when it
    exceeds ``limit``, and at most ``limit`` otherwise."""
    depth = deepest = 0
    for start in range(0, len(brackets), _CHUNK):
        chunk = brackets[start : start + _CHUNK]
        openers = chunk.count(b"[") + chunk.count(b"{")
        if depth + openers > limit:
            deepest = max(deepest, *accumulate(map(_STEP.__getitem__, chunk), initial=depth))
        depth += 2 * openers - len(chunk)
    return deepest


def openers(text: str, start: int = 0, end: int | None = None) -> int:
    """How many ``[`` and ``{`` ``text[start:end]`` holds, those inside strings included:
    a bound of its nesting depth. ``str.count`` copies nothing; it executes about twice the
    instructions of counting with ``bytes.replace`` (which finds each byte with ``memchr``
    but copies the text three times), yet takes less time (benchmarks/README.md)."""
    end = len(text) if end is None else end
    return text.count("[", start, end) + text.count("{", start, end)


def nesting_depth(text: str, *, known_json: bool = False) -> int:
    """How deeply JSON arrays and objects nest in ``text``: brackets inside strings do not
    count, and a backslash followed by a backslash or a quote is an escape wherever it is
    (other backslashes are ordinary characters). Exact on JSON; on invalid text still an
    upper bound of what a parser reaches before it fails (up to the first error the text is
    JSON). Linear time, no recursion, no Python-level step per character. ``known_json=True``
    when ``text`` is known to be JSON: the same result, found with less work (exact on
    JSON only)."""
    return _deepest(_brackets(text.encode("utf-8", "surrogatepass"), known_json), -1)


def deeper_than(text: str, limit: int, *, known_json: bool = False) -> bool:
    """Whether :func:`nesting_depth` of ``text`` exceeds ``limit``: not when a short text
    has no more openers than the limit at all (:func:`openers`; a longer one, with an
    inference log, nearly always has more: the count would be spent), nor when there are
    no more outside strings; else counted exactly only in the chunks where it could. (A
    line the parser accepted is bounded piece by piece first: :func:`deeper_in_pieces`.)
    ``known_json`` as for :func:`nesting_depth`."""
    if len(text) <= limit or (len(text) < _QUICK_COUNT_CHARS and openers(text) <= limit):
        return False
    return _deeper_exactly(text, limit, known_json=known_json)


def _deeper_exactly(text: str, limit: int, *, known_json: bool) -> bool:
    """:func:`deeper_than` past its bound by openers (counted by the caller)."""
    brackets = _brackets(text.encode("utf-8", "surrogatepass"), known_json)
    return brackets.count(b"[") + brackets.count(b"{") > limit and _deepest(brackets, limit) > limit



def deeper_in_pieces(text: str, pieces: list[Piece], limit: int) -> bool:
    """:func:`deeper_than` for a JSON text whose :data:`Piece` s are known (from
    :func:`loads_result_line`): a piece whose openers (counted with those inside strings: a
    bound of its depth) leave it within the limit needs nothing more, and only the others
    are counted exactly. An inference log's messages hold a few dozen openers each (at most
    211 in the real results) and the whole log more than the limit: bounded message by
    message, it is counted without copying or reducing its text."""
    for start, end, above in pieces:
        room = limit - above
        if end - start <= 2 * room:
            continue  # (a value d levels deep has d openers and d closers)
        if openers(text, start, end) > room and _deeper_exactly(text[start:end], room, known_json=True):
            return True
    return False


class TooDeep(BfclSafeError, ValueError):
    """A JSON text nested deeper than its bound: ``depth`` (exact) and ``limit``."""

    def __init__(self, depth: int, limit: int):
        self.depth = depth
        self.limit = limit
        super().__init__(f"nested {depth:,} levels deep, more than the {limit:,} allowed")


class NotJSON(BfclSafeError, ValueError):
    """A text that is not JSON: ``reason`` in a few words (the parser's message)."""


def loads_bounded(text: str, limit: int) -> Any:
    """``json.loads(text)`` for any JSON text, nested at most ``limit`` levels: the depth is
    counted without recursion before the parser runs (after it, for a text the parser
    refuses: the count then decides which reason is given), so 100,000 nested brackets
    are one :class:`TooDeep`, never a ``RecursionError``. Anything else that is not JSON
    is :class:`NotJSON`."""
    if deeper_than(text, limit):
        raise TooDeep(nesting_depth(text), limit)
    try:
        return json.loads(text)
    except RecursionError:  # (the C parser's own bound is below ``limit``)
        raise TooDeep(nesting_depth(text), limit) from None
    except json.JSONDecodeError as exc:
        raise NotJSON(f"not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except ValueError as exc:  # (an integer past CPython's digit limit)
        raise NotJSON(f"not JSON ({str(exc)[:80]})") from None
