"""The texts of BFCL's decoding failures as its inference log records them (the system
prompt a prompting model gets is :mod:`bfcl_safe.checker.system_prompt`'s).
"""

from __future__ import annotations

import ast
import json
from typing import Any

# --------------------------------------------------------------------------- decoding failures


def prompting_decode_error(step: Any) -> str | None:
    """The ``str()`` of the exception BFCL's prompting decoder raises on ``step`` (the
    inference log's ``error``), for the failures decided by the text's syntax tree; None
    when none is found (the caller then gives its own reason).

    BFCL strips backticks, newlines and spaces, wraps the text in brackets, strips
    quotes, and ``ast.parse``\\ s it as an expression; then it expects a call or a list of
    calls and reads their keyword arguments. Only the parse runs here (``ast.parse``
    builds a tree; nothing is evaluated).
    """
    if not isinstance(step, str):
        return f"'{type(step).__name__}' object has no attribute 'strip'"
    from bfcl_safe.checker.decoders.prompting import bracketed
    from bfcl_safe.interp import limits
    from bfcl_safe.interp.lexical import bracket_depth

    text = bracketed(step)

    if len(text) > limits.MAX_SOURCE_LENGTH or bracket_depth(text) > limits.MAX_NESTING_DEPTH:
        return None
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        return str(exc)
    except (ValueError, RecursionError, MemoryError):
        return None
    body = tree.body
    calls: list[ast.expr] | None
    if isinstance(body, ast.Call):
        calls = [body]
    else:
        calls = getattr(body, "elts", None)
        if calls is None:
            return f"'{type(body).__name__}' object has no attribute 'elts'"
    try:
        decoded = []
        for call in calls:
            if not isinstance(call, ast.Call):
                raise _ReferenceError("")  # BFCL asserts each element is a call: no message
            decoded.append(_resolve_call(call))
        for function_call in decoded:
            for arguments in function_call.values():
                for value in arguments.values():
                    _render(value)
    except _ReferenceError as exc:
        return exc.text
    except _Unknown:
        return None
    return None


class _ReferenceError(Exception):
    """The text of the exception BFCL's decoder raises here."""

    def __init__(self, text: str):
        self.text = text


#: Stands for the value BFCL computes from literal arithmetic (it renders).
_EVALUATED = 0


class _Unknown(Exception):
    """BFCL would evaluate the node (``eval`` of arithmetic or a lambda): not emulated."""


def _resolve_call(node: ast.Call) -> dict:
    """BFCL's ``resolve_ast_call`` on a tree (keyword arguments only)."""
    parts = []
    func = node.func
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    arguments = {}
    for keyword in node.keywords:
        arguments[keyword.arg] = _resolve(keyword.value)
    return {".".join(reversed(parts)): arguments}


def _resolve(node: Any) -> Any:
    """BFCL's ``resolve_ast_by_type``, failing where it fails, with its message; the
    evaluated kinds (arithmetic, lambdas) raise :class:`_Unknown`. Only literals are
    built (no evaluation of model text)."""
    if isinstance(node, ast.Constant):
        return "..." if node.value is Ellipsis else node.value
    if isinstance(node, ast.UnaryOp):
        operand = node.operand
        if not isinstance(operand, ast.Constant):
            raise _ReferenceError(f"'{type(operand).__name__}' object has no attribute 'value'")
        value = operand.value
        if isinstance(value, (int, float, complex)):  # bool included
            return -value
        raise _ReferenceError(f"bad operand type for unary -: '{type(value).__name__}'")
    if isinstance(node, ast.List):
        return [_resolve(item) for item in node.elts]
    if isinstance(node, ast.Dict):
        out = {}
        for key, value_node in zip(node.keys, node.values):
            key_value = _resolve(key)
            item = _resolve(value_node)
            try:
                out[key_value] = item
            except TypeError as exc:
                raise _ReferenceError(str(exc)) from None
        return out
    if isinstance(node, ast.BinOp):
        # BFCL evaluates it. A name in it fails first (none of BFCL's module names is a
        # model's word); literals alone: the value only matters if it fails, not emulated.
        for leaf in _in_evaluation_order(node):
            if isinstance(leaf, ast.Name):
                raise _ReferenceError(f"name '{leaf.id}' is not defined")
            if not isinstance(leaf, (ast.BinOp, ast.UnaryOp, ast.Constant, ast.operator, ast.unaryop)):
                raise _Unknown
        return _EVALUATED
    if isinstance(node, ast.Lambda):
        raise _Unknown
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        if not node.keywords:
            return ast.unparse(node)
        return _resolve_call(node)
    if isinstance(node, ast.Tuple):
        return tuple(_resolve(item) for item in node.elts)
    if isinstance(node, ast.Subscript):
        return ast.unparse(node.value) + "[" + ast.unparse(node.slice) + "]"
    raise _ReferenceError(f"Unsupported AST type: {type(node)}")


def _in_evaluation_order(node: ast.AST):
    """The nodes of an expression depth first, left before right (Python's order)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(list(ast.iter_child_nodes(current))))


def _render(value: Any) -> None:
    """BFCL's ``parse_nested_value``, for its failures only."""
    if isinstance(value, dict):
        if all(isinstance(item, dict) for item in value.values()):
            if not value:
                raise _ReferenceError("list index out of range")
            for item in next(iter(value.values())).values():
                _render(item)
        else:
            for item in value.values():
                _render(item)
        return
    if isinstance(value, (list, tuple)):
        return  # repr() of a list renders
    try:
        repr(value)
    except ValueError as exc:  # an int too long to render
        raise _ReferenceError(str(exc)) from None


def fc_decode_error(step: Any) -> str | None:
    """The ``str()`` of the exception BFCL's FC decoder (``convert_to_function_call``)
    raises on ``step``, for failures decided by the step's shape and its arguments'
    JSON; None when none is found."""
    if type(step) is dict:
        step = [step]
    try:
        iterator = iter(step)
    except TypeError:
        return f"'{type(step).__name__}' object is not iterable"
    for call in iterator:
        if not isinstance(call, dict):
            return f"'{type(call).__name__}' object has no attribute 'items'"
        for _name, value in call.items():
            if type(value) is str:
                try:
                    value = json.loads(value)
                except json.JSONDecodeError as exc:
                    return str(exc)
                except (ValueError, RecursionError) as exc:
                    return str(exc)
            if not isinstance(value, dict):
                return f"'{type(value).__name__}' object has no attribute 'items'"
    return None
