"""The long-context extension data, read as data from the wheel's ``long_context.py``.

The file is a list of module-level assignments of literals (one list ends with a
literal ``...``). We parse it and convert the literal nodes ourselves
(:mod:`bfcl_safe.interp.wheel_literals`, the wheel's one literal reader): nothing in it is
imported or executed. The dataset wheel is trusted once its sha256 matches,
so the fast ``ast`` parser is used here rather than libcst (about 30x faster on
this 190 kB file); model text never goes through this module.
"""

from __future__ import annotations

import ast
import json
import re
from itertools import accumulate
from keyword import iskeyword
from pathlib import Path
from typing import Any, Mapping

from bfcl_safe.interp import limits
from bfcl_safe.interp.errors import BfclSafeError
from bfcl_safe.interp.wheel_literals import LiteralError, LiteralReader

#: Where the file sits inside an unpacked ``bfcl_eval`` package.
RELATIVE_PATH = "eval_checker/multi_turn_eval/func_source_code/long_context.py"


class LongContextDataError(BfclSafeError, ValueError):
    """The long-context file is not the plain list of literal assignments we expect."""


# ---------------------------------------------------------------------------- fast path
#
# The pinned file is plain data: strings without escapes (some triple-quoted), numbers,
# True/False/None, lists and dicts, one trailing ``...``. Text of exactly that shape is
# rewritten as JSON and decoded by the C JSON decoder (~6x faster than ``ast`` on the
# pinned file: ~48 M instructions against ~280 M); anything else - and any text that does
# not then decode to one value per assignment - goes through ``ast``. Both give the same
# values (tests compare them).
#
# One ``re.split`` tiles the whole text, in C, with two kinds of tile:
#
# - runs (group 1), JSON already once every ``'`` in them becomes ``"``: assignment heads,
#   whitespace, brackets, ``:``, commas that are not trailing, numbers (the JSON decoder
#   checks their grammar; a JSON number is a Python literal of the same value), strings
#   whose body has no quote of either kind, no backslash and no control character;
# - tokens (group 2), converted one by one: the other strings, True/False/None, ``...``,
#   trailing commas (a few dozen tokens in the pinned file).
#
# Text that no tile covers is left between the matches, and any of it sends the text to
# ``ast``. So do letters anywhere but in a head (JSON's NaN, Infinity, true... are not
# Python literals), a NUL or a lone surrogate (``ast`` refuses them), a ``\r`` in a
# triple-quoted string (Python reads it as ``\n``), a keyword as a name, and nesting
# deeper than _MAX_DEPTH (Python's parser gives up at about 200 brackets, JSON's later).
#
# Every quantifier is possessive and every lookaround reads one or two characters or a
# run of whitespace, so hostile text costs linear time. (No atomic groups: CPython 3.11's
# ``re`` mishandles capturing groups inside them.) The patterns are compiled when the data
# is first parsed, through ``re``'s cache: runs without a long-context category never
# need them.

_PLAIN_BODY = r"""[^'"\\\x00-\x1f]*+"""  # a string body that is the same in JSON
_RUN = (
    r"(?:'(?!'')" + _PLAIN_BODY + "'"  # (''' starts a token)
    r"|,[ \t\r\n]*+(?![\]}])"
    r"|[ \t\r\n\[\]{}:]++"
    r"|-?+[0-9][0-9.eE+-]*+"
    r'|"(?!"")' + _PLAIN_BODY + '"'
    r"|^[A-Za-z_][A-Za-z0-9_]*+[ \t]*+=(?!=)"
    r")++"
)
_TOKEN = (
    r'"""(?:[^"\\\r\x00]|"(?!""))*+"""'
    r"|'''(?:[^'\\\r\x00]|'(?!''))*+'''"
    r"|'[^'\\\n\r\x00]*+'"
    r'|"[^"\\\n\r\x00]*+"'
    r"|True(?!\w)|False(?!\w)|None(?!\w)|\.\.\."
    r"""|(?<=[0-9e'"\]}.]),(?=[ \t\r\n]*+[\]}])"""  # a trailing comma after a value
)
_TILES = f"({_RUN})|({_TOKEN})"
#: A head in the JSON text (with a "\n" put before its first line).
_HEAD = r"\n([A-Za-z_][A-Za-z0-9_]*)[ \t]*=(?!=)"
#: ``"\u0000"`` decodes to NUL, which no string of an accepted text holds.
_ELLIPSIS = "\x00"
_ELLIPSIS_JSON = '"\\u0000"'
_CONSTANTS = {"True": "true", "False": "false", "None": "null", "...": _ELLIPSIS_JSON, ",": ""}
_MAX_DEPTH = limits.MAX_WHEEL_LITERAL_DEPTH  # the ast path refuses deeper literals too
_NOT_STRUCTURE = bytes(sorted(set(range(256)) - set(b'"[]{}')))
_DEPTH_STEP = tuple(1 if byte in b"[{" else -1 if byte in b"]}" else 0 for byte in range(256))


def _as_json(token: str) -> str:
    """A token as JSON, with no ``'`` and no ``\\"`` in it (see _parse_fast and _depth)."""
    constant = _CONSTANTS.get(token)
    if constant is not None:
        return constant
    body = token[3:-3] if token[:3] in ("'''", '"""') else token[1:-1]
    # No backslash in a body: json.dumps escapes only '"' and control characters.
    return json.dumps(body, ensure_ascii=False).replace('\\"', "\\u0022").replace("'", "\\u0027")


def _depth(text: str) -> int | None:
    """The deepest bracket nesting in JSON ``text`` whose every ``"`` delimits a string;
    None if the text has a lone surrogate."""
    try:
        skeleton = text.encode().translate(None, _NOT_STRUCTURE)
    except UnicodeEncodeError:
        return None
    # Two adjacent quotes end one string and start the next (or hold an empty one):
    # dropping them moves no bracket into or out of a string.
    skeleton = skeleton.replace(b'""', b"")
    if b'"' in skeleton:
        skeleton = re.sub(rb'"[^"]*+"', b"", skeleton)
    return max(accumulate(map(_DEPTH_STEP.__getitem__, skeleton)), default=0)


def _parse_fast(source: str) -> dict[str, Any] | None:
    parts = re.compile(_TILES, re.MULTILINE).split(source)
    if any(parts[0::3]):  # text that no tile covers
        return None
    text = "".join([
        run if run is not None else _as_json(token) for run, token in zip(parts[1::3], parts[2::3])
    ]).replace("'", '"')  # the only "'" left are the quotes of the runs' strings
    depth = _depth(text)
    if depth is None or depth > _MAX_DEPTH:
        return None
    parts = re.compile(_HEAD).split("\n" + text)
    if parts[0].strip(" \t\r\n"):
        return None
    decode = json.JSONDecoder().raw_decode
    data: dict[str, Any] = {}
    for name, value_text in zip(parts[1::2], parts[2::2]):
        if iskeyword(name):
            return None
        value_text = value_text.lstrip(" \t")  # the value starts on the line of its name
        try:
            value, end = decode(value_text)
        except (ValueError, RecursionError):
            return None
        if value_text[end:].strip(" \t\r\n"):
            return None
        ellipses = value_text.count(_ELLIPSIS_JSON)
        if ellipses:
            # Only where the pinned file has one: the last element of a list.
            if ellipses > 1 or type(value) is not list or not value or value[-1] != _ELLIPSIS:
                return None
            value[-1] = ...
        data[name] = value
    return data


def parse_long_context(source: str, filename: str = "long_context.py") -> dict[str, Any]:
    """Return ``{NAME: value}`` for every top-level ``NAME = <literal>`` in ``source``."""
    if len(source) > limits.MAX_WHEEL_SOURCE_CHARS:
        return _parse_with_ast(source, filename)  # (which refuses it)
    fast = _parse_fast(source)
    if fast is not None:
        return fast
    return _parse_with_ast(source, filename)


def _parse_with_ast(source: str, filename: str) -> dict[str, Any]:
    reader = LiteralReader(filename)
    try:
        module = reader.parse(source)
        data: dict[str, Any] = {}
        for statement in module.body:
            if not (
                isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
            ):
                raise LongContextDataError(
                    f"{filename}: line {statement.lineno}: only 'NAME = literal' assignments are expected"
                )
            name = statement.targets[0].id
            data[name] = reader.value(statement.value, name)
    except LiteralError as exc:
        raise LongContextDataError(str(exc)) from None
    return data


def load_long_context(package_dir: str | Path) -> Mapping[str, Any]:
    """Load the constants from an unpacked ``bfcl_eval`` package folder."""
    path = Path(package_dir) / RELATIVE_PATH
    return parse_long_context(path.read_text(encoding="utf-8"), filename=str(path))
