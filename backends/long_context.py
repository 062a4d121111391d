"""The long-context extension data, read as data from the wheel's ``long_context.py``.

The file is a list of module-level assignments of literals (one list ends with a
literal ``...``). We parse it and convert the literal nodes ourselves: nothing in
it is imported or executed. The dataset wheel is trusted once its sha256 matches,
so the fast ``ast`` parser is used here rather than libcst (about 30x faster on
this 190 kB file); model text never goes through this module.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, Mapping

#: Where the file sits inside an unpacked ``bfcl_eval`` package.
RELATIVE_PATH = "eval_checker/multi_turn_eval/func_source_code/long_context.py"


class LongContextDataError(ValueError):
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


def parse_long_context(source: str, filename: str = "long_context.py") -> dict[str, Any]:
    """Return ``{NAME: value}`` for every top-level ``NAME = <literal>`` in ``source``."""
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
