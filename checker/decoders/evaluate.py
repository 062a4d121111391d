"""What ``eval`` gives on a piece of model text, computed without running it.

Two reference decoders ``eval`` model text: the Llama 3.1 handler the whole step (no
``;``), and ``resolve_ast_by_type`` every binary operation in an argument (prompting
handlers, MiniCPM). :func:`evaluate` computes the same value on the libcst tree for
the pure subset:

- literals, and the names ``True``/``False``/``None``/``__debug__`` (identifiers are
  NFKC-normalised as CPython's parser does: ``Ｔｒｕｅ`` is ``True`` there);
- list, tuple, set and dict displays, with ``*``/``**`` unpacking;
- unary and binary operators, and calls of the pure builtins with those values as
  arguments (``len``, ``str``, ``round``, ``sorted``, ...: the table and its sizes,
  checked before computing, are :mod:`bfcl_safe.interp.builtins`'), so ``{...} | {...}``
  is a dict union (the right side wins per key), ``"round(" + str(6000.0) + ")"`` is
  ``'round(6000.0)'``.

Where ``eval`` raises, so does :func:`evaluate` (:class:`DecodeError`: the step fails,
as in the reference, whatever the message). Anything else (other names, attributes,
subscripts, comprehensions, lambdas, f-strings, refused builtins that would run) is
refused with :class:`DecodeError`: only there can we differ from the reference, for
text whose decoding would run model code. A value over the entry's budget raises
``BudgetExceeded`` (the entry fails with the resource-limit type).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import libcst as cst

from bfcl_safe.checker.decoders.base import DecodeError, identifier
from bfcl_safe.interp import budget, limits
from bfcl_safe.interp.builtins import COMPUTED_SIZE, PURE_BUILTINS, NotComputable, binary_op, call_builtin, unary_op
from bfcl_safe.interp.errors import BudgetExceeded

#: Names ``eval`` resolves to constants (compiled as such, whatever the globals).
EVAL_CONSTANTS = {"True": True, "False": False, "None": None, "__debug__": True}

_BINARY_OPERATORS = {
    cst.Add: "+", cst.Subtract: "-", cst.Multiply: "*", cst.Divide: "/", cst.FloorDivide: "//",
    cst.Modulo: "%", cst.Power: "**", cst.LeftShift: "<<", cst.RightShift: ">>", cst.BitAnd: "&",
    cst.BitOr: "|", cst.BitXor: "^", cst.MatrixMultiply: "@",
}
_UNARY_OPERATORS = {cst.Minus: "-", cst.Plus: "+", cst.BitInvert: "~", cst.Not: "not"}
#: The nodes whose value libcst evaluates (``evaluated_value``).
_LITERALS = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString)
if TYPE_CHECKING:
    _Literal = cst.Integer | cst.Float | cst.Imaginary | cst.SimpleString | cst.ConcatenatedString


def _computed(function: Any, *arguments: Any) -> Any:
    """A computation of :mod:`bfcl_safe.interp.builtins`: CPython's own exception is the
    reference's failed ``eval`` (the step fails); a refusal fails the step too."""
    try:
        return function(*arguments)
    except BudgetExceeded:
        raise
    except NotComputable as exc:
        raise DecodeError(f"not evaluated: {exc.reason}") from None
    except Exception as exc:  # noqa: BLE001 - the reference's eval raises this: the step fails
        raise DecodeError(f"{type(exc).__name__}: {exc}") from None


def _literal(node: _Literal) -> Any:
    if isinstance(node, cst.Integer) and len(node.value) > limits.MAX_INT_DIGITS:
        # CPython's own limit on int literals: ``eval`` raises ValueError too.
        raise DecodeError("integer literal too long")
    value = node.evaluated_value
    if value is None and isinstance(node, cst.ConcatenatedString):
        raise DecodeError("f-string: not evaluated")
    return value


def _elements(elements: Any) -> list:
    values: list = []
    for element in elements:
        if isinstance(element, cst.StarredElement):
            values.extend(_computed(list, evaluate(element.value)))  # not iterable: TypeError
        else:
            values.append(evaluate(element.value))
    return values


def _dict(node: cst.Dict) -> dict:
    out: dict = {}
    for element in node.elements:
        if isinstance(element, cst.DictElement):
            key = evaluate(element.key)
            value = evaluate(element.value)
            _computed(out.__setitem__, key, value)  # an unhashable key: TypeError, as eval
        else:  # (a StarredDictElement: ``**mapping``)
            value = evaluate(element.value)
            if type(value) is not dict:
                raise DecodeError(f"'{type(value).__name__}' object is not a mapping")
            out.update(value)
    return out


def _call(node: cst.Call) -> Any:
    if not isinstance(node.func, cst.Name):
        raise DecodeError("a call of anything but a builtin's name: not evaluated")
    name = identifier(node.func.value)
    if name not in PURE_BUILTINS:
        raise DecodeError(f"call of {name!r}: not evaluated (the reference would look it up and run it)")
    args: list = []
    kwargs: dict = {}
    for arg in node.args:
        if arg.star == "*":
            args.extend(_computed(list, evaluate(arg.value)))
        elif arg.star == "**" or arg.keyword is not None:
            if arg.keyword is None:  # (so arg.star == "**")
                given = evaluate(arg.value)
                if type(given) is not dict or any(type(key) is not str for key in given):
                    raise DecodeError("'**' of anything but a dict with string keys: TypeError in eval")
            else:
                given = {identifier(arg.keyword.value): evaluate(arg.value)}
            for key, value in given.items():
                if key in kwargs:  # a repeated keyword: SyntaxError or TypeError in eval
                    raise DecodeError(f"keyword argument repeated: {key}")
                kwargs[key] = value
        else:
            args.append(evaluate(arg.value))
    return _computed(call_builtin, name, args, kwargs)


def evaluate(node: cst.CSTNode) -> Any:
    """The value of ``eval`` on the text of ``node`` (see the module docstring)."""
    if isinstance(node, _LITERALS):
        return _literal(node)
    if isinstance(node, cst.Name):
        name = identifier(node.value)
        if name in EVAL_CONSTANTS:
            return EVAL_CONSTANTS[name]
        raise DecodeError(f"bare name {name!r}: the reference would look it up; refused")
    if isinstance(node, cst.Ellipsis):
        return ...
    if isinstance(node, cst.List):
        return _elements(node.elements)
    if isinstance(node, cst.Tuple):
        return tuple(_elements(node.elements))
    if isinstance(node, cst.Set):
        # Built element by element; CPython folds a display of three or more constants
        # into a frozenset constant first, which may iterate in another order (README,
        # Known limits: the str() of such a set can differ).
        return _computed(set, _elements(node.elements))  # an unhashable element: TypeError
    if isinstance(node, cst.Dict):
        return _dict(node)
    if isinstance(node, cst.UnaryOperation):
        operand = evaluate(node.expression)
        if isinstance(node.operator, cst.Not):
            return not operand  # truth of a literal value: constant time, any value
        return _computed(unary_op, _UNARY_OPERATORS[type(node.operator)], operand)
    if isinstance(node, cst.BinaryOperation):
        left = evaluate(node.left)
        right = evaluate(node.right)
        op = _BINARY_OPERATORS[type(node.operator)]
        if op == "|" and type(left) is dict and type(right) is dict:
            # A union of dicts whatever their values (``...`` included, which the table of
            # plain values leaves out): the right side wins per key, as in CPython.
            budget.charge(COMPUTED_SIZE, len(left) + len(right) + 1)
            return {**left, **right}
        return _computed(binary_op, op, left, right)
    if isinstance(node, cst.Call):
        return _call(node)
    raise DecodeError(f"{type(node).__name__} is not evaluated: the reference would run it; refused")
