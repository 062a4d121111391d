"""The guard in front of libcst, without libcst: a text outside the fast subset is
measured here (length, bracket depth with f-string fields looked into) before any
decoder hands it to libcst, which is slow on long texts and recurses once per level.
Kept apart from the libcst halves so that importing the decoders does not import libcst
(about 0.3 s of every process's start); those halves are imported on first use.
"""

from __future__ import annotations

import re

from bfcl_safe.checker.decoders.base import DecodeError
from bfcl_safe.interp import budget, limits
from bfcl_safe.interp.budget import LIBCST_CHARS
from bfcl_safe.interp.lexical import bracket_depth

#: String literals (with their prefix) and comments, found the way ``bracket_depth``
#: finds them (an unterminated string runs to the end, a lone trailing backslash
#: included); linear: no nested repeats, and a string that starts always matches (one
#: that could fail after scanning would be rescanned from every later quote).
_STRING_OR_COMMENT = (  # (compiled when first needed, through re's cache: most runs never need it)
    r"""(?:(?<![\w])(?P<prefix>[rRbBuUfF]{1,2}))?(?P<string>
        '\'\'[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*(?:'\'\'|\\?\Z)
      |\"\"\"[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*(?:\"\"\"|\\?\Z)
      |'[^'\\\n]*(?:\\.[^'\\\n]*)*(?:'|\\?\Z|(?=\n))
      |"[^"\\\n]*(?:\\.[^"\\\n]*)*(?:"|\\?\Z|(?=\n)))
    |\#[^\n]*"""
)
#: f-strings inside f-string fields, deeper than this, count as too deep (CPython 3.11
#: allows four: each level needs a quote kind of its own).
_MAX_FSTRING_LEVELS = 8


def _replacement_fields(body: str) -> str:
    """The ``{...}`` fields of an f-string body, comma-separated (a separator ends an
    operator chain, as between arguments); ``{{``/``}}`` are literal braces."""
    fields = []
    depth = start = position = 0
    braces = re.compile(r"[{}]")
    while True:
        brace = braces.search(body, position)
        if brace is None:
            break
        at, char = brace.start(), brace.group()
        position = at + 1
        if depth == 0:
            if body.startswith(char * 2, at):
                position = at + 2  # a doubled brace: literal text
            elif char == "{":
                depth, start = 1, at
            continue
        depth += 1 if char == "{" else -1
        if depth == 0:
            fields.append(body[start:position])
    if depth:
        fields.append(body[start:])
    return ", ".join(fields)


def libcst_depth(text: str, level: int = 0) -> int:
    """:func:`~bfcl_safe.interp.lexical.bracket_depth` with f-strings looked into: libcst
    parses the expressions of an f-string's fields (``f'{x[0][0]...}'``: a subscript chain
    that costs libcst seconds), which ``bracket_depth`` skips as string text. Each
    f-string adds its fields' own depth (an upper bound: as if it sat at the text's
    deepest level). Linear: every character is scanned once per f-string level."""
    depth = bracket_depth(text)
    if "{" not in text:
        return depth
    deepest_fstring = 0
    for token in re.compile(_STRING_OR_COMMENT, re.VERBOSE | re.DOTALL).finditer(text):
        prefix = token.group("prefix")
        if not prefix or "f" not in prefix.lower():
            continue
        if level >= _MAX_FSTRING_LEVELS:
            return limits.MAX_NESTING_DEPTH + 1
        literal = token.group("string")
        quote = literal[:3] if literal[:3] in ("'''", '"""') else literal[:1]
        body = literal[len(quote):]
        if body.endswith(quote):
            body = body[: -len(quote)]
        inner = 1 + libcst_depth(_replacement_fields(body), level + 1)
        deepest_fstring = max(deepest_fstring, inner)
    return depth + deepest_fstring


def check_libcst_input(text: str) -> None:
    """Refuse, before libcst sees it, a text that would cost libcst long or recurse
    deeply: longer than ``MAX_LIBCST_SOURCE_LENGTH`` or deeper (:func:`libcst_depth`)
    than ``MAX_NESTING_DEPTH``; then charge its characters to the entry's ``libcst_chars``
    budget (BudgetExceeded past it: the entry fails with the resource-limit type)."""
    if len(text) > limits.MAX_LIBCST_SOURCE_LENGTH:
        raise DecodeError("step text outside the simple subset and too long for libcst")
    if libcst_depth(text) > limits.MAX_NESTING_DEPTH:
        raise DecodeError("step text nested too deeply")
    budget.charge(LIBCST_CHARS, len(text))
