"""Decoders: one model step as stored in a result file -> the calls to run.

Each decoder mirrors one reference decoding path exactly, including which inputs
decode to nothing and which fail (a failed step is skipped by the scorer):

- ``fc``: ``convert_to_function_call`` (API function-calling handlers);
- ``prompting``: ``default_decode_execute_prompting`` (prompting handlers: Python
  call text, keyword arguments only, bare names as strings, dict-of-dict arguments
  rendered as nested calls, ...);
- ``json``: the Salesforce/xLAM-style ``decode_execute`` (JSON ``{"name", "arguments"}``
  objects, a list or ``;``-separated).

None of them evaluates text. Where the reference ``eval``s a piece of model text
while decoding (arithmetic in a prompting argument), we compute literal arithmetic
within limits and fail the step otherwise; this is the only place decoding can
differ from the reference, and only for inputs whose decoding would run model code.
"""

from __future__ import annotations

import ast
import json
import operator
from typing import Any, Callable

import libcst as cst

from interp import limits
from interp.errors import RejectedInput
from interp.execute import Call
from interp.fc import fc_call, reference_text
from interp.text import bracket_depth


class DecodeError(ValueError):
    """The step does not decode; the scorer skips it, like the reference."""


# --------------------------------------------------------------------------- fc


def _fc_items(step: Any) -> list[tuple[Any, dict]]:
    if type(step) is dict:
        step = [step]
    if isinstance(step, (str, bytes)) or not isinstance(step, list):
        # The reference iterates it and calls .items() on each element: fails for
        # anything but a list of dicts (an empty string or list decodes to nothing).
        if isinstance(step, str) and step == "":
            return []
        raise DecodeError(f"an FC step must be a list of {{name: arguments}} objects, not {type(step).__name__}")
    out = []
    for function_call in step:
        if not isinstance(function_call, dict):
            raise DecodeError(f"an FC call must be an object, not {type(function_call).__name__}")
        for name, value in function_call.items():
            if type(value) is str:
                try:
                    value = json.loads(value)
                except (ValueError, RecursionError) as exc:
                    raise DecodeError(f"arguments of {name!r} are not valid JSON: {exc}") from None
            if not isinstance(value, dict):
                raise DecodeError(f"arguments of {name!r} must be an object, not {type(value).__name__}")
            out.append((name, value))
    return out


def decode_fc(step: Any) -> list[Call]:
    return [fc_call(name, arguments) for name, arguments in _fc_items(step)]


def display_fc(step: Any) -> list[str]:
    return [reference_text(name, arguments) for name, arguments in _fc_items(step)]


# ------------------------------------------------------------------------- json


def _json_items(step: Any) -> list[tuple[Any, Any]]:
    if not isinstance(step, (str, bytes, bytearray)):
        raise DecodeError(f"a JSON step must be text, not {type(step).__name__}")
    try:
        try:
            calls = json.loads(step)
            if not isinstance(calls, list):
                calls = [calls]
        except json.JSONDecodeError:
            text = step if isinstance(step, str) else step.decode()
            calls = [json.loads(part.strip()) for part in text.split(";")]
        out = []
        for call in calls:
            name, arguments = call["name"], call["arguments"]
            if not isinstance(arguments, dict):
                raise DecodeError("arguments must be an object")
            out.append((name, arguments))
        return out
    except DecodeError:
        raise
    except (ValueError, KeyError, TypeError, IndexError, RecursionError, UnicodeDecodeError) as exc:
        raise DecodeError(f"not a JSON tool call: {exc}") from None


def decode_json(step: Any) -> list[Call]:
    return [fc_call(name, arguments) for name, arguments in _json_items(step)]


def display_json(step: Any) -> list[str]:
    return [reference_text(name, arguments) for name, arguments in _json_items(step)]


# -------------------------------------------------------------------- prompting

_CONSTANT_NODES = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString)
_NAMED_CONSTANTS = {"True": True, "False": False, "None": None}
_EMPTY = cst.Module(body=[])


def _code(node: cst.CSTNode) -> str:
    return _EMPTY.code_for_node(node)


def _is_constant(node: cst.CSTNode) -> bool:
    return isinstance(node, (*_CONSTANT_NODES, cst.Ellipsis)) or (
        isinstance(node, cst.Name) and node.value in _NAMED_CONSTANTS
    )


def _constant(node: cst.CSTNode) -> Any:
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
_MAX_ARITHMETIC_SIZE = 100_000


def _arith_operand(node: cst.CSTNode) -> Any:
    if _is_constant(node):
        return _constant(node)
    if isinstance(node, cst.BinaryOperation):
        return _arith(node)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus, cst.BitInvert, cst.Not)):
        value = _arith_operand(node.expression)
        op = {cst.Minus: operator.neg, cst.Plus: operator.pos, cst.BitInvert: operator.invert, cst.Not: operator.not_}
        return _safe(op[type(node.operator)], value)
    if isinstance(node, (cst.List, cst.Tuple)) and all(isinstance(e, cst.Element) for e in node.elements):
        items = [_arith_operand(e.value) for e in node.elements]
        return items if isinstance(node, cst.List) else tuple(items)
    raise DecodeError(f"arithmetic on {type(node).__name__} is not evaluated (the reference would run it)")


def _safe(fn: Callable, *values: Any) -> Any:
    try:
        return fn(*values)
    except Exception as exc:  # noqa: BLE001 - the reference's eval fails: the step fails
        raise DecodeError(f"arithmetic failed: {exc}") from None


def _size(value: Any) -> int:
    if isinstance(value, int):
        return value.bit_length() // 3
    if isinstance(value, (str, bytes, list, tuple)):
        return len(value)
    return 1


def _arith(node: cst.BinaryOperation) -> Any:
    op = _BINARY.get(type(node.operator))
    if op is None:
        raise DecodeError("operator not evaluated")
    left, right = _arith_operand(node.left), _arith_operand(node.right)
    if op is operator.pow and isinstance(right, (int, float)) and not isinstance(left, complex):
        if abs(right) * max(1, _size(left)) > _MAX_ARITHMETIC_SIZE:
            raise DecodeError("power too large to compute")
    if op is operator.lshift and isinstance(right, int) and right > _MAX_ARITHMETIC_SIZE * 3:
        raise DecodeError("shift too large to compute")
    if op is operator.mul:
        for a, b in ((left, right), (right, left)):
            if isinstance(a, (str, bytes, list, tuple)) and isinstance(b, int) and b * max(1, len(a)) > _MAX_ARITHMETIC_SIZE:
                raise DecodeError("repetition too large to compute")
    value = _safe(op, left, right)
    if _size(value) > _MAX_ARITHMETIC_SIZE:
        raise DecodeError("arithmetic result too large")
    return value


def _resolve_value(node: cst.CSTNode) -> Any:
    if _is_constant(node):
        value = _constant(node)
        return "..." if value is ... else value
    if isinstance(node, cst.UnaryOperation):
        # The reference computes ``-operand.value`` whatever the operator.
        if not _is_constant(node.expression):
            raise DecodeError("unary operator on a non-constant")
        return _safe(operator.neg, _constant(node.expression))
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
        return _arith(node)
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Call):
        if not any(arg.keyword is not None or arg.star == "**" for arg in node.args):
            return _unparse(_code(node), ast.unparse)
        return _resolve_call(node)
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


def _resolve_call(node: cst.Call) -> dict:
    arguments: dict[Any, Any] = {}
    seen_keyword = False
    for arg in node.args:
        if arg.keyword is not None:
            seen_keyword = True
            if arg.keyword.value in arguments:
                raise DecodeError(f"keyword argument repeated: {arg.keyword.value}")
            arguments[arg.keyword.value] = _resolve_value(arg.value)
        elif arg.star == "**":
            seen_keyword = True
            arguments[None] = _resolve_value(arg.value)
        elif seen_keyword and arg.star == "":
            raise DecodeError("positional argument follows keyword argument")
        # positional arguments are dropped, as in the reference
    return {_call_name(node): arguments}


def _render_nested(value: Any) -> str:
    if isinstance(value, dict):
        if all(isinstance(v, dict) for v in value.values()):
            if not value:
                raise DecodeError("an empty dict argument does not render (reference IndexError)")
            name = next(iter(value))
            inner = value[name]
            return f"{name}({', '.join(f'{k}={_render_nested(v)}' for k, v in inner.items())})"
        return "{" + ", ".join(f"'{k}': {_render_nested(v)}" for k, v in value.items()) + "}"
    try:
        return repr(value)
    except ValueError as exc:  # e.g. an integer too long to render
        raise DecodeError(str(exc)) from None


def _prompting_calls(step: Any) -> list[dict]:
    if not isinstance(step, str):
        raise DecodeError(f"a prompting step must be text, not {type(step).__name__}")
    text = step.strip("`\n ")
    if not text.startswith("["):
        text = "[" + text
    if not text.endswith("]"):
        text = text + "]"
    text = text.strip().strip("'")
    if len(text) > limits.MAX_SOURCE_LENGTH:
        raise DecodeError("step text too long")
    if bracket_depth(text) > limits.MAX_NESTING_DEPTH:
        raise DecodeError("step text nested too deeply")
    try:
        body = cst.parse_expression(text)
    except (cst.ParserSyntaxError, RecursionError) as exc:
        raise DecodeError(f"not Python call syntax: {str(exc).splitlines()[0]}") from None
    if isinstance(body, cst.Call):
        return [_resolve_call(body)]
    if not isinstance(body, (cst.List, cst.Tuple, cst.Set)):
        raise DecodeError(f"expected a list of calls, got {type(body).__name__}")
    out = []
    for element in body.elements:
        if not isinstance(element, cst.Element) or not isinstance(element.value, cst.Call):
            raise DecodeError("every element must be a call")
        out.append(_resolve_call(element.value))
    return out


def display_prompting(step: Any) -> list[str]:
    texts = []
    for function_call in _prompting_calls(step):
        for name, arguments in function_call.items():
            texts.append(f"{name}({', '.join(f'{k}={_render_nested(v)}' for k, v in arguments.items())})")
    return texts


def decode_prompting(step: Any) -> list[Call]:
    # The call texts are the reference's; the executor parses them (never evaluates).
    return list(display_prompting(step))


# --------------------------------------------------------------------- registry


def _looks_like_json_call(step: str) -> bool:
    stripped = step.lstrip()
    return stripped.startswith("{") or (stripped.startswith("[") and stripped[1:].lstrip().startswith("{"))


def decode_auto(step: Any) -> list[Call]:
    if isinstance(step, (list, dict)):
        return decode_fc(step)
    if isinstance(step, str) and _looks_like_json_call(step):
        try:
            return decode_json(step)
        except DecodeError:
            pass
    return decode_prompting(step)


def display_auto(step: Any) -> list[str]:
    if isinstance(step, (list, dict)):
        return display_fc(step)
    if isinstance(step, str) and _looks_like_json_call(step):
        try:
            return display_json(step)
        except DecodeError:
            pass
    return display_prompting(step)


DECODERS: dict[str, tuple[Callable[[Any], list[Call]], Callable[[Any], list[str]]]] = {
    "auto": (decode_auto, display_auto),
    "fc": (decode_fc, display_fc),
    "prompting": (decode_prompting, display_prompting),
    "json": (decode_json, display_json),
}


def decode_step(step: Any, decoder: str = "auto") -> list[Call]:
    """Decode one step; :class:`DecodeError` when the reference's decoding would fail."""
    decode = DECODERS[decoder][0]
    try:
        return decode(step)
    except DecodeError:
        raise
    except RejectedInput as exc:
        raise DecodeError(str(exc)) from None
    except (ValueError, TypeError, AttributeError, KeyError, IndexError, RecursionError) as exc:
        raise DecodeError(f"{type(exc).__name__}: {exc}") from None
