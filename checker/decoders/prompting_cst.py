"""The prompting decoder's libcst half: used when a step is outside the fast subset.

Mirrors the reference's ``ast_parse`` + ``resolve_ast_call``/``resolve_ast_by_type``
on libcst nodes (see :mod:`~bfcl_safe.checker.decoders.prompting`); the binary
operations the reference ``eval``s go to :mod:`~bfcl_safe.checker.decoders.evaluate`.
Identifiers are NFKC-normalised as CPython's parser does (``ｌｓ(a=ｗｏｒｋｓｐａｃｅ)``
is ``ls(a='workspace')`` there). Shared with MiniCPM's decoder: :func:`resolve_call`,
and :func:`~bfcl_safe.checker.decoders.guard.check_libcst_input`, the guard in front of libcst.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any, Callable, TypeGuard

import libcst as cst

from bfcl_safe.checker.decoders.base import DecodeError, identifier
from bfcl_safe.checker.decoders.evaluate import evaluate
from bfcl_safe.interp import limits

_CONSTANT_NODES = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString)
_NAMED_CONSTANTS = {"True": True, "False": False, "None": None}
_EMPTY = cst.Module(body=[])
if TYPE_CHECKING:
    _Constant = (cst.Integer | cst.Float | cst.Imaginary | cst.SimpleString | cst.ConcatenatedString | cst.Ellipsis
                 | cst.Name)


# ------------------------------------------------------------------ the nodes


def _code(node: cst.CSTNode) -> str:
    return _EMPTY.code_for_node(node)


def _is_constant(node: cst.CSTNode) -> TypeGuard[_Constant]:
    return isinstance(node, (*_CONSTANT_NODES, cst.Ellipsis)) or (
        isinstance(node, cst.Name) and node.value in _NAMED_CONSTANTS
    )


def _constant(node: _Constant) -> Any:
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


def _unparse(code: str, pick: Callable[[ast.expr], str]) -> str:
    # ``ast`` is used only to reproduce the reference's ``ast.unparse`` text for a
    # piece it renders as a string; parsing builds a tree, nothing runs.
    try:
        return pick(ast.parse(code.strip(), mode="eval").body)
    except (SyntaxError, ValueError, RecursionError) as exc:
        raise DecodeError(f"cannot render {code!r}: {exc}") from None


def _negated(value: Any) -> Any:
    try:
        return -value
    except TypeError as exc:  # -'text': the reference's resolve fails the step too
        raise DecodeError(f"TypeError: {exc}") from None


def _resolve_value(node: cst.CSTNode) -> Any:
    if _is_constant(node):
        value = _constant(node)
        return "..." if value is ... else value
    if isinstance(node, cst.UnaryOperation):
        # The reference computes ``-operand.value`` whatever the operator.
        if not _is_constant(node.expression):
            raise DecodeError("unary operator on a non-constant")
        return _negated(_constant(node.expression))
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
        return evaluate(node)  # the reference ``eval``s it
    if isinstance(node, cst.Name):
        return identifier(node.value)  # bare names become strings
    if isinstance(node, cst.Call):
        if not any(arg.keyword is not None or arg.star == "**" for arg in node.args):
            return _unparse(_code(node), ast.unparse)
        return resolve_call(node)
    if isinstance(node, cst.Subscript):
        return _unparse(_code(node), _subscript_text)
    raise DecodeError(f"Unsupported AST type: {type(node).__name__}")


def _subscript_text(node: ast.expr) -> str:
    """The reference's rendering of a subscript (``node``: the code of a cst.Subscript, parsed)."""
    assert isinstance(node, ast.Subscript)
    return ast.unparse(node.value) + "[" + ast.unparse(node.slice) + "]"


def _resolve_element(element: cst.BaseElement) -> Any:
    if not isinstance(element, cst.Element):
        raise DecodeError("starred element")
    return _resolve_value(element.value)


def _call_name(node: cst.Call) -> str:
    parts = []
    func = node.func
    while isinstance(func, cst.Attribute):
        parts.append(identifier(func.attr.value))
        func = func.value
    if isinstance(func, cst.Name) and func.value not in _NAMED_CONSTANTS:
        parts.append(identifier(func.value))  # ``True(...)``: a constant in ast, no name part
    return ".".join(reversed(parts))


def resolve_call(node: cst.Call) -> dict:
    arguments: dict[Any, Any] = {}
    seen_keyword = False
    for arg in node.args:
        if arg.keyword is not None:
            seen_keyword = True
            # ast.parse accepts a repeated keyword (compile would not): the last value wins.
            arguments[identifier(arg.keyword.value)] = _resolve_value(arg.value)
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


