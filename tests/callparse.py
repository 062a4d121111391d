"""Test-only parsing of trusted ground-truth call strings with ``ast`` (never model text)."""

from __future__ import annotations

import ast


def parse_trusted_call(text: str) -> tuple[str, tuple, dict]:
    node = ast.parse(text, mode="eval").body
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name), text
    args = tuple(ast.literal_eval(a) for a in node.args)
    kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
    return node.func.id, args, kwargs
