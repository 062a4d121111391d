"""The libcst halves of :mod:`~bfcl_safe.checker.decoders.python_text` (imported on
first use, so that importing the decoders does not import libcst): Llama 3.1's ``eval``
emulated by :func:`literal_value`, MiniCPM's ``ast.parse`` by :func:`statement_calls`."""

from __future__ import annotations

import ast
from typing import Any

import libcst as cst

from bfcl_safe.checker.decoders.base import DecodeError
from bfcl_safe.checker.decoders.evaluate import evaluate
from bfcl_safe.checker.decoders.guard import check_libcst_input
from bfcl_safe.checker.decoders.prompting_cst import resolve_call


def _guard(text: str, mode: str) -> None:
    """Limits first (libcst is slow on long texts and recurses per level), then the
    reference's own syntax check: ``ast.parse`` only builds a tree, nothing runs."""
    check_libcst_input(text)
    try:
        ast.parse(text, mode=mode)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise DecodeError(f"not Python syntax: {exc}") from None


def literal_value(text: str) -> Any:
    """The value ``eval(text)`` has when ``text`` is a literal (see the module docstring)."""
    source = text.lstrip(" \t")  # eval strips leading spaces and tabs
    _guard(source, "eval")
    try:
        node = cst.parse_expression(source)
    except (cst.ParserSyntaxError, RecursionError) as exc:
        raise DecodeError(f"not a Python expression: {str(exc).splitlines()[0]}") from None
    return evaluate(node)


#: Statements whose ``value`` the reference reads (every other statement has none).
_VALUE_STATEMENTS = (cst.Expr, cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Return)


def statement_calls(text: str) -> list[tuple[str, dict]]:
    """``[(name, arguments)]`` for module text whose every statement's value is a call
    (keyword arguments resolved like the prompting decoder); ``[]`` on any failure."""
    try:
        _guard(text, "exec")
        module = cst.parse_module(text)
        calls: list[Any] = []
        for statement in module.body:
            if not isinstance(statement, cst.SimpleStatementLine):
                return []
            for small in statement.body:
                value = small.value if isinstance(small, _VALUE_STATEMENTS) else None
                if not isinstance(value, cst.Call):
                    return []
                calls.extend(resolve_call(value).items())
        return calls
    except (DecodeError, cst.ParserSyntaxError, RecursionError, ValueError, TypeError):
        return []
