"""FC front-end: a function-calling model's ``{name: arguments}`` -> call, no text round trip.

The reference turns ``{name: args}`` into the text ``name(k=repr(v),...)`` and
``eval``s it. We build the :class:`CallSpec` directly when that text would be a
plain call (identifier name and keyword names); values keep the quirks the text
round trip gives them:

- a float ``nan``/``inf`` renders as the bare name ``nan``/``inf`` -> ``NameError``;
- a string containing ``name(`` is subject to the reference's instance-name rewrite
  (it is kept as its ``repr`` source, resolved per episode).

Anything else (a name or keyword that is not an identifier, a Python keyword, a
dunder) yields the text the reference would have built, which the executor then
handles like any other call text: parsed by the default-deny text front-end,
never evaluated.
"""

from __future__ import annotations

import keyword
import math
from collections.abc import Mapping
from typing import Any

from bfcl_safe.interp import limits
from bfcl_safe.interp.builtins import check_depth
from bfcl_safe.interp.callspec import CallSpec, NameRef, SourceString, dict_value, make_spec, sequence_value
from bfcl_safe.interp.errors import RejectedInput
from bfcl_safe.interp.lexical import REWRITE_PATTERN


def _is_plain_identifier(name: str) -> bool:
    return name.isidentifier() and name.isascii() and not keyword.iskeyword(name) and not name.startswith("__")


#: Names seen to be plain identifiers (tool and argument names repeat endlessly);
#: bounded, since hostile input can bring any number of names.
_PLAIN_NAMES: set[str] = set()
_PLAIN_NAMES_MAX = 4096


def _plain_identifier(name: Any) -> bool:
    if type(name) is not str:
        return False
    if name in _PLAIN_NAMES:
        return True
    if not _is_plain_identifier(name):
        return False
    if len(_PLAIN_NAMES) < _PLAIN_NAMES_MAX and len(name) <= 64:
        _PLAIN_NAMES.add(name)
    return True


def _plain_call(name: Any, arguments: Mapping[str, Any]) -> bool:
    """The function name and every keyword are plain identifiers."""
    if type(name) is str and type(arguments) is dict and name in _PLAIN_NAMES:
        if _PLAIN_NAMES.issuperset(arguments):
            return True
    return _plain_identifier(name) and all(map(_plain_identifier, arguments))


class _Budget:
    __slots__ = ("elements",)

    def __init__(self) -> None:
        self.elements = 0


def _value(value: Any, budget: _Budget, depth: int) -> Any:
    if depth > limits.MAX_NESTING_DEPTH:
        raise RejectedInput(f"nesting deeper than {limits.MAX_NESTING_DEPTH}")
    kind = type(value)
    if kind is str:
        if len(value) > limits.MAX_STRING_LENGTH:
            raise RejectedInput(f"string longer than {limits.MAX_STRING_LENGTH} characters")
        if "(" in value:
            source = repr(value)
            if REWRITE_PATTERN.search(source):
                return SourceString((source,))
        return value
    if kind is float:
        if math.isnan(value):
            return NameRef("nan")
        if math.isinf(value):
            return NameRef("inf")
        return value
    if kind is list or kind is tuple:
        budget.elements += len(value)
        if budget.elements > limits.MAX_LITERAL_ELEMENTS:
            raise RejectedInput(f"arguments have more than {limits.MAX_LITERAL_ELEMENTS} elements")
        return sequence_value(kind, [_value(v, budget, depth + 1) for v in value])
    if kind is dict:
        budget.elements += len(value)
        if budget.elements > limits.MAX_LITERAL_ELEMENTS:
            raise RejectedInput(f"arguments have more than {limits.MAX_LITERAL_ELEMENTS} elements")
        return dict_value([(_value(k, budget, depth + 1), _value(v, budget, depth + 1)) for k, v in value.items()])
    if kind is int and abs(value).bit_length() > limits.MAX_INT_DIGITS * 3.33:
        raise RejectedInput(f"integer longer than {limits.MAX_INT_DIGITS} digits")
    return value


def reference_text(name: str, arguments: Mapping[str, Any]) -> str:
    """The call text the reference's ``convert_to_function_call`` builds."""
    return f"{name}({','.join(f'{k}={v!r}' for k, v in arguments.items())})"


def fc_call(name: str, arguments: Mapping[str, Any]) -> CallSpec | str | RejectedInput:
    """One FC call. Returns a spec, or the reference's text when that text is not a
    plain call (the executor parses it safely), or a rejection past a limit."""
    if type(arguments) is not dict and not isinstance(arguments, Mapping):
        return RejectedInput(f"arguments must be an object, not {type(arguments).__name__}")
    if not _plain_call(name, arguments):
        try:
            check_depth(arguments)  # before repr: deep values are refused, not recursed into
            return reference_text(name, arguments)
        except RejectedInput as exc:
            return exc
        except Exception as exc:  # noqa: BLE001 - e.g. repr of a too-long integer
            return RejectedInput(f"cannot render arguments: {exc}")
    budget = None
    kwargs = []
    longest = limits.MAX_STRING_LENGTH
    try:
        for key, value in arguments.items():
            kind = type(value)
            # Fast path for the usual leaves (what _value returns them as, unchanged).
            if (kind is str and "(" not in value and len(value) <= longest) or kind is bool or value is None:
                kwargs.append((key, value))
            else:
                if budget is None:
                    budget = _Budget()
                kwargs.append((key, _value(value, budget, 1)))
    except RejectedInput as exc:
        return exc
    return make_spec(name, tuple(kwargs))
