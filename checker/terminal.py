"""The one cell rule: what the command line prints and what a CSV cell holds, made safe.

Every string a model, a file, a folder or an option controls (model and folder names,
display names, ids, result text, messages that quote them, paths) goes through
:func:`shown` before it reaches a terminal, and through :func:`csv_cell` (which starts
with :func:`shown`) before it becomes a cell of a leaderboard CSV, so that no escape
sequence can move the cursor, clear the screen, set the window title or colours, hide
text (bidi overrides) or forge lines:

- C0 controls (U+0000-U+001F, newline and tab included), DEL (U+007F) and C1 controls
  (U+0080-U+009F, among them the one-byte CSI U+009B) become visible escapes:
  ``\\n``, ``\\t``, ``\\r``, ``\\x1b``, ``\\x9b`` ... An ANSI or OSC sequence therefore
  shows as text (``\\x1b[2J``), whatever follows its ESC;
- bidirectional overrides, embeddings, isolates and marks (U+061C, U+200E, U+200F,
  U+202A-U+202E, U+2066-U+2069) and the line and paragraph separators U+2028/U+2029
  become ``\\u202e`` and the like;
- lone surrogates cannot be encoded for the terminal and would crash the output: those
  that stand for the bytes of a name that is not UTF-8 (``surrogateescape``) become the
  byte, ``\\xff``; any other becomes ``\\udxxx``;
- everything else, ordinary Unicode included (accents, CJK, emoji), is kept as it is.

A backslash is kept too: the escapes are for the eye, not a reversible encoding.
Paths (``str``, ``bytes`` or path objects) are decoded as the file system does first.

:func:`csv_cell` adds the spreadsheet rules (OWASP, "CSV Injection"): a text cell that
would start a formula (``=``, ``+``, ``-``, ``@``, or a tab or carriage return, which
:func:`shown` has already made visible) gets a leading ``'``, and a cell holding a
comma or a quote is quoted as the ``csv`` module quotes it, so no name adds a row or a
column. Numbers never go through it (they are formatted by the leaderboard itself):
``-1`` stays ``-1``. On every text the reference writes into its CSVs (the pinned
registry's names, links, organisations and licences; ``N/A``) it changes nothing, so
those cells keep the reference's bytes.

:func:`shown_lines` is the last guard on whole blocks of our own text (a table, an
explanation): it escapes the same characters except the newlines that separate the
lines. :func:`json_shown` does the same for JSON text, with JSON's own ``\\uXXXX``
escapes, so the output still parses to the same value.

:class:`ProgressLine` is the progress display of ``evaluate``: one line on stderr,
redrawn in place, with messages printed cleanly above it.
"""

from __future__ import annotations

import os
import re
from typing import IO

_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}

#: Characters :func:`shown` escapes: a character class, one pass over the text. (The
#: patterns are compiled when first needed, through ``re``'s own cache: plain ASCII
#: text, the usual case, needs none of them.)
UNSAFE = "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
#: The same without the newline (:func:`shown_lines`).
_UNSAFE_BUT_NEWLINE = ("[\x00-\x09\x0b-\x1f\x7f-\x9f"
                       "\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
#: What JSON text can still hold after ``json.dumps(..., ensure_ascii=False)``
#: (which escapes C0 itself).
_UNSAFE_IN_JSON = "[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"


def _escape(match: re.Match) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte of a non-UTF-8 name, kept by surrogateescape
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def _json_escape(match: re.Match) -> str:
    return f"\\u{ord(match.group()):04x}"


def shown(value: object) -> str:
    """``str(value)`` with every control, bidi and unencodable character escaped
    visibly (see the module docstring). One line: newlines are escaped too. Bytes and
    path objects are decoded as file names (``os.fsdecode``: undecodable bytes show as
    ``\\xNN``)."""
    if isinstance(value, (bytes, os.PathLike)):
        value = os.fsdecode(value)
    text = value if isinstance(value, str) else str(value)
    if text.isascii() and text.isprintable():  # (no control character: nothing to escape)
        return text
    return _escaped(text, UNSAFE)


#: First characters that make a spreadsheet read a cell as a formula (OWASP).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_CSV_QUOTED = re.compile(r'[,"\r\n]')


def csv_cell(value: object) -> str:
    """A text cell of a leaderboard CSV: :func:`shown`, then a leading ``'`` if it would
    start a formula, then quoted (``"..."``, inner quotes doubled) if it holds a comma or
    a quote. Only for text (names, links); numbers are formatted, never passed here."""
    text = shown(value)
    if text.startswith(FORMULA_STARTS):
        text = "'" + text
    if _CSV_QUOTED.search(text):
        text = '"' + text.replace('"', '""') + '"'
    return text


def shown_lines(text: str) -> str:
    """Like :func:`shown`, keeping the newlines that separate lines of our own output."""
    if text.isascii() and text.replace("\n", "").isprintable():
        return text
    return _escaped(text, _UNSAFE_BUT_NEWLINE)


def _escaped(text: str, pattern: str) -> str:
    unsafe = re.compile(pattern)
    return unsafe.sub(_escape, text) if unsafe.search(text) else text


def json_shown(text: str) -> str:
    """JSON text (from ``json.dumps(..., ensure_ascii=False)``) safe for a terminal:
    the characters :func:`shown` escapes become ``\\uXXXX`` escapes, which JSON reads
    back as the same characters. (Outside strings JSON text is ASCII.)"""
    if text.isascii() and "\x7f" not in text:
        return text
    return re.compile(_UNSAFE_IN_JSON).sub(_json_escape, text)


class ProgressLine:
    """A one-line progress display ``label [#####.....] done/total`` on a terminal
    stream, redrawn in place (carriage return) only when what it shows changes, with
    :meth:`message` printing a line above it: the bar is cleared, the message written,
    the bar drawn again. Counts, not time, decide when it is redrawn."""

    WIDTH = 30

    def __init__(self, stream: IO[str], total: int, label: str = "Scoring"):
        self.stream = stream
        self.total = max(0, total)
        self.label = label
        self.done = 0
        self._drawn = ""

    def _line(self) -> str:
        total = max(self.total, self.done)
        filled = self.WIDTH if total == 0 else self.WIDTH * self.done // total
        return f"{self.label} [{'#' * filled}{'.' * (self.WIDTH - filled)}] {self.done}/{total}"

    def _draw(self, force: bool = False) -> None:
        line = self._line()
        if force or line != self._drawn:
            self.stream.write(f"\r{line}")
            self.stream.flush()
            self._drawn = line

    def _clear(self) -> None:
        if self._drawn:
            self.stream.write("\r" + " " * len(self._drawn) + "\r")
            self._drawn = ""

    #: Redrawn at most this many times over a run (and at its end), whatever its size.
    STEPS = 200

    def update(self, count: int) -> None:
        before = self.done
        self.done += count
        total = max(self.total, 1)
        if before * self.STEPS // total != self.done * self.STEPS // total or self.done >= self.total:
            self._draw()

    def message(self, text: str) -> None:
        """Print ``text`` (escaped with :func:`shown`) on a line of its own above the bar."""
        self._clear()
        self.stream.write(shown(text) + "\n")
        self._draw(force=True)

    def close(self) -> None:
        """Leave the bar: erase it, so that what follows starts on a clean line."""
        self._clear()
        self.stream.flush()

    def __enter__(self) -> "ProgressLine":
        self._draw(force=True)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
