"""The long-context extension data, read as data from the wheel's ``long_context.py``.

The file is a list of module-level assignments of literals (one list ends with a
literal ``...``). We parse it and convert the literal nodes ourselves: nothing in
it is imported or executed. The dataset wheel is trusted once its sha256 matches,
so the fast ``ast`` parser is used here rather than libcst (about 30x faster on
this 190 kB file); model text never goes through this module.
"""

from __future__ import annotations

from bfcl_safe.interp.errors import BfclSafeError

import ast
import json
import re
from pathlib import Path
from typing import Any, Mapping

#: Where the file sits inside an unpacked ``bfcl_eval`` package.
RELATIVE_PATH = "eval_checker/multi_turn_eval/func_source_code/long_context.py"


class LongContextDataError(BfclSafeError, ValueError):
    """The long-context file is not the plain list of literal assignments we expect."""


def _literal(node: ast.AST, where: str) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.List):
        return [_literal(item, where) for item in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_literal(item, where) for item in node.elts)
    if isinstance(node, ast.Set):
        return {_literal(item, where) for item in node.elts}
    if isinstance(node, ast.Dict):
        if any(key is None for key in node.keys):
            raise LongContextDataError(f"{where}: '**' in a dict literal is not data")
        return {_literal(k, where): _literal(v, where) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _literal(node.operand, where)
        if isinstance(value, (int, float, complex)) and not isinstance(value, bool):
            return -value if isinstance(node.op, ast.USub) else +value
    raise LongContextDataError(
        f"{where}: line {getattr(node, 'lineno', '?')}: {type(node).__name__} is not a literal"
    )


# ---------------------------------------------------------------------------- fast path
#
# The pinned file is plain data: strings without escapes (some triple-quoted), numbers,
# True/False/None, lists and dicts, one trailing ``...``. Text of exactly that shape is
# rewritten as JSON by one regex pass and decoded by the C JSON decoder (~10x faster
# than ``ast``); anything else - and any text that does not then decode to one value per
# assignment - goes through ``ast``. Both give the same values (tests compare them).

_STRING = (
    r'"""(?:[^"\\]|"(?!""))*"""'
    r"|'''(?:[^'\\]|'(?!''))*'''"
    r"|'[^'\\\n\r]*'"
    r'|"[^"\\\n\r]*"'
)
#: The whole text, token by token (no capturing groups: CPython 3.11's ``re`` mishandles
#: them inside atomic groups; atomic so that a mismatch costs linear time).
#: (The patterns are compiled when the data is first parsed, through ``re``'s cache: runs
#: without a long-context category never need them.)
_SHAPE = (
    r"(?>[ \t\r\n]+|^[A-Za-z_][A-Za-z0-9_]*[ \t]*=(?!=)|" + _STRING
    + r"|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?(?![\w.])"
    + r"|(?:True|False|None)(?!\w)|\.\.\.|[\[\]{},:])*+"
)
_REWRITE = _STRING + r"|(?:True|False|None)(?!\w)|\.\.\.|,(?=[ \t\r\n]*[\]}])"
_ASSIGNMENT = r"^([A-Za-z_][A-Za-z0-9_]*)[ \t]*=(?!=)"
_KEYWORDS = {"True": "true", "False": "false", "None": "null"}
_ELLIPSIS = f"bfcl-safe ellipsis {id(object())}"
_ELLIPSIS_JSON = json.dumps(_ELLIPSIS)


def _as_json(match: re.Match) -> str:
    token = match.group()
    first = token[0]
    if first == "'" or token.startswith('"""'):
        body = token[3:-3] if len(token) >= 6 and token[:3] in ("'''", '"""') else token[1:-1]
        if '"' not in body and body.isprintable():
            return f'"{body}"'  # what json.dumps gives for such text
        return json.dumps(body, ensure_ascii=False)
    if first == '"':
        return token  # the same text in JSON (no escapes inside)
    if first == ",":
        return ""  # a trailing comma
    if first == ".":
        return _ELLIPSIS_JSON
    return _KEYWORDS[token]


def _parse_fast(source: str) -> dict[str, Any] | None:
    if re.compile(_SHAPE, re.MULTILINE).fullmatch(source) is None:
        return None
    text = re.compile(_REWRITE).sub(_as_json, source)
    parts = re.compile(_ASSIGNMENT, re.MULTILINE).split(text)
    if parts[0].strip():
        return None
    decode = json.JSONDecoder().raw_decode
    data: dict[str, Any] = {}
    for name, value_text in zip(parts[1::2], parts[2::2]):
        value_text = value_text.lstrip(" \t")  # the value starts on the line of its name
        try:
            value, end = decode(value_text)
        except ValueError:
            return None
        if value_text[end:].strip():
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
    fast = _parse_fast(source)
    if fast is not None:
        return fast
    return _parse_with_ast(source, filename)


def _parse_with_ast(source: str, filename: str) -> dict[str, Any]:
    try:
        module = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise LongContextDataError(f"{filename}: not valid Python: {exc.msg} (line {exc.lineno})") from None
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
        data[name] = _literal(statement.value, f"{filename}: {name}")
    return data


def load_long_context(package_dir: str | Path) -> Mapping[str, Any]:
    """Load the constants from an unpacked ``bfcl_eval`` package folder."""
    path = Path(package_dir) / RELATIVE_PATH
    return parse_long_context(path.read_text(encoding="utf-8"), filename=str(path))
