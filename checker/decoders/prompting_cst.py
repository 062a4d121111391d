"""The prompting decoder's libcst half: used when a step is outside the fast subset.

Mirrors the reference's ``ast_parse`` + ``resolve_ast_call``/``resolve_ast_by_type``
on libcst nodes (see :mod:`~bfcl_safe.checker.decoders.prompting`), and holds the
literal arithmetic shared with :mod:`~bfcl_safe.checker.decoders.python_text`:
:func:`arithmetic`, :func:`is_constant`/:func:`constant`, :func:`resolve_call`,
:func:`guarded`.
"""

from __future__ import annotations

import ast
import operator
from typing import Any, Callable

import libcst as cst

from bfcl_safe.checker.decoders.base import DecodeError
from bfcl_safe.interp import limits

_CONSTANT_NODES = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString)
_NAMED_CONSTANTS = {"True": True, "False": False, "None": None}
_EMPTY = cst.Module(body=[])


def _code(node: cst.CSTNode) -> str:
    return _EMPTY.code_for_node(node)


def is_constant(node: cst.CSTNode) -> bool:
    return isinstance(node, (*_CONSTANT_NODES, cst.Ellipsis)) or (
        isinstance(node, cst.Name) and node.value in _NAMED_CONSTANTS
    )


def constant(node: cst.CSTNode) -> Any:
    if isinstance(node, cst.Ellipsis):
        return ...
    if isinstance(node, cst.Name):
        return _NAMED_CONSTANTS[node.value]
    if isinstance(node, cst.Integer) and len(node.value) > limits.MAX_INT_DIGITS:
        raise DecodeError("integer literal too long")
    if isinstance(node, cst.FormattedString):
        raise DecodeError("f-string")
    value = node.evaluated_value
    if value is None and isinstance(node, cst.ConcatenatedString):
        raise DecodeError("f-string in a concatenation")
    return value


def _unparse(code: str, pick: Callable[[ast.AST], str]) -> str:
    # ``ast`` is used only to reproduce the reference's ``ast.unparse`` text for a
    # piece it renders as a string; parsing builds a tree, nothing runs.
    try:
        return pick(ast.parse(code.strip(), mode="eval").body)
    except (SyntaxError, ValueError, RecursionError) as exc:
        raise DecodeError(f"cannot render {code!r}: {exc}") from None


_BINARY = {
    cst.Add: operator.add, cst.Subtract: operator.sub, cst.Multiply: operator.mul,
    cst.Divide: operator.truediv, cst.FloorDivide: operator.floordiv, cst.Modulo: operator.mod,
    cst.Power: operator.pow, cst.LeftShift: operator.lshift, cst.RightShift: operator.rshift,
    cst.BitAnd: operator.and_, cst.BitOr: operator.or_, cst.BitXor: operator.xor,
}
MAX_ARITHMETIC_SIZE = 100_000


def _arithmetic_operand(node: cst.CSTNode) -> Any:
    if is_constant(node):
        return constant(node)
    if isinstance(node, cst.BinaryOperation):
        return arithmetic(node)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus, cst.BitInvert, cst.Not)):
        value = _arithmetic_operand(node.expression)
        op = {cst.Minus: operator.neg, cst.Plus: operator.pos, cst.BitInvert: operator.invert, cst.Not: operator.not_}
        return guarded(op[type(node.operator)], value)
    if isinstance(node, (cst.List, cst.Tuple)) and all(isinstance(e, cst.Element) for e in node.elements):
        items = [_arithmetic_operand(e.value) for e in node.elements]
        return items if isinstance(node, cst.List) else tuple(items)
    raise DecodeError(f"arithmetic on {type(node).__name__} is not evaluated (the reference would run it)")


def guarded(fn: Callable, *values: Any) -> Any:
    try:
        return fn(*values)
    except Exception as exc:  # noqa: BLE001 - the reference's eval fails: the step fails
        raise DecodeError(f"arithmetic failed: {exc}") from None


def _size(value: Any) -> int:
    """Digits of an int; characters of a string; for a list or tuple, its elements and
    their sizes (a shared element once per appearance: that is what gets rendered).
    Operands passed this check before, so measuring them is bounded too."""
    if isinstance(value, int):
        return value.bit_length() // 3
    if isinstance(value, (str, bytes)):
        return len(value)
    if isinstance(value, (list, tuple)):
        return len(value) + sum(_size(item) for item in value)
    return 1


def arithmetic(node: cst.BinaryOperation) -> Any:
    op = _BINARY.get(type(node.operator))
    if op is None:
        raise DecodeError("operator not evaluated")
    left, right = _arithmetic_operand(node.left), _arithmetic_operand(node.right)
    if op is operator.pow and isinstance(right, (int, float)) and not isinstance(left, complex):
        if abs(right) * max(1, _size(left)) > MAX_ARITHMETIC_SIZE:
            raise DecodeError("power too large to compute")
    if op is operator.lshift and isinstance(right, int) and right > MAX_ARITHMETIC_SIZE * 3:
        raise DecodeError("shift too large to compute")
    if op is operator.mul:
        for a, b in ((left, right), (right, left)):
            if isinstance(a, (str, bytes, list, tuple)) and isinstance(b, int) and b * max(1, _size(a)) > MAX_ARITHMETIC_SIZE:
                raise DecodeError("repetition too large to compute")
    value = guarded(op, left, right)
    if _size(value) > MAX_ARITHMETIC_SIZE:
        raise DecodeError("arithmetic result too large")
    return value


def _resolve_value(node: cst.CSTNode) -> Any:
    if is_constant(node):
        value = constant(node)
        return "..." if value is ... else value
    if isinstance(node, cst.UnaryOperation):
        # The reference computes ``-operand.value`` whatever the operator.
        if not is_constant(node.expression):
            raise DecodeError("unary operator on a non-constant")
        return guarded(operator.neg, constant(node.expression))
    if isinstance(node, cst.List):
        return [_resolve_element(e) for e in node.elements]
    if isinstance(node, cst.Tuple):
        return tuple(_resolve_element(e) for e in node.elements)
    if isinstance(node, cst.Dict):
        out = {}
        for element in node.elements:
            if not isinstance(element, cst.DictElement):
                raise DecodeError("'**' in a dict")
            key = _resolve_value(element.key)
            try:
                out[key] = _resolve_value(element.value)
            except TypeError as exc:
                raise DecodeError(str(exc)) from None
        return out
    if isinstance(node, cst.BinaryOperation):
        return arithmetic(node)
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Call):
        if not any(arg.keyword is not None or arg.star == "**" for arg in node.args):
            return _unparse(_code(node), ast.unparse)
        return resolve_call(node)
    if isinstance(node, cst.Subscript):
        return _unparse(_code(node), lambda n: ast.unparse(n.value) + "[" + ast.unparse(n.slice) + "]")
    raise DecodeError(f"Unsupported AST type: {type(node).__name__}")


def _resolve_element(element: cst.BaseElement) -> Any:
    if not isinstance(element, cst.Element):
        raise DecodeError("starred element")
    return _resolve_value(element.value)


def _call_name(node: cst.Call) -> str:
    parts = []
    func = node.func
    while isinstance(func, cst.Attribute):
        parts.append(func.attr.value)
        func = func.value
    if isinstance(func, cst.Name):
        parts.append(func.value)
    return ".".join(reversed(parts))


def resolve_call(node: cst.Call) -> dict:
    arguments: dict[Any, Any] = {}
    seen_keyword = False
    for arg in node.args:
        if arg.keyword is not None:
            seen_keyword = True
            # ast.parse accepts a repeated keyword (compile would not): the last value wins.
            arguments[arg.keyword.value] = _resolve_value(arg.value)
        elif arg.star == "**":
            seen_keyword = True
            arguments[None] = _resolve_value(arg.value)
        elif seen_keyword and arg.star == "":
            raise DecodeError("positional argument follows keyword argument")
        # positional arguments are dropped, as in the reference
    return {_call_name(node): arguments}


def prompting_calls(text: str) -> list[dict]:
    """Decode normalised step text with libcst (the fallback of the fast path)."""
    try:
        body = cst.parse_expression(text)
    except (cst.ParserSyntaxError, RecursionError) as exc:
        raise DecodeError(f"not Python call syntax: {str(exc).splitlines()[0]}") from None
    if isinstance(body, cst.Call):
        return [resolve_call(body)]
    if not isinstance(body, (cst.List, cst.Tuple, cst.Set)):
        raise DecodeError(f"expected a list of calls, got {type(body).__name__}")
    out = []
    for element in body.elements:
        if not isinstance(element, cst.Element) or not isinstance(element.value, cst.Call):
            raise DecodeError("every element must be a call")
        out.append(resolve_call(element.value))
    return out


