"""Decoded calls: what a front-end produces and the executor runs.

Values inside a :class:`CallSpec` are plain Python literals (str, int, float,
complex, bool, None, bytes, list, tuple, dict, set), nested :class:`CallSpec`
objects (run first, in Python's evaluation order), or one of the deferred nodes
below, which need the episode to resolve.
"""

from __future__ import annotations

from typing import Any

import attrs


@attrs.frozen(hash=False)
class CallSpec:
    """One call: ``name(*args, **dict(kwargs))``. ``kwargs`` keeps the written order."""

    name: str
    args: tuple[Any, ...] = ()
    kwargs: tuple[tuple[str, Any], ...] = ()

    def render(self) -> str:
        """Python call text for this spec (for display; never evaluated)."""
        parts = [render_value(a) for a in self.args]
        parts += [f"{k}={render_value(v)}" for k, v in self.kwargs]
        return f"{self.name}({', '.join(parts)})"


#: The name of the spec a top-level ``not(...)`` parses to: eval reads a call of a tool
#: named ``not`` as the operator (a keyword, so no tool or builtin has this name).
NOT_CALL = "not"


def make_spec(name: str, kwargs: tuple[tuple[str, Any], ...] = (), args: tuple[Any, ...] = ()) -> CallSpec:
    """``CallSpec(name, args, kwargs)`` without the generated ``__init__`` (a hot path:
    one per decoded call); the fields are set exactly as ``__init__`` sets them."""
    spec = _new_spec(CallSpec)
    _set(spec, "name", name)
    _set(spec, "args", args)
    _set(spec, "kwargs", kwargs)
    return spec


_new_spec = object.__new__
_set = object.__setattr__


@attrs.frozen
class NameRef:
    """A bare name used as a value; under ``eval`` it raises ``NameError``."""

    id: str


@attrs.frozen
class SourceString:
    """A string literal that the reference's name-prefix rewrite may change.

    ``parts`` are the literal's source pieces (several for implicit
    concatenation); the executor rewrites and decodes them with the episode's
    method table.
    """

    parts: tuple[str, ...]


@attrs.frozen
class Container:
    """A list/tuple/set/dict display holding calls or deferred nodes; built at run time.

    For ``dict`` the items are ``(key, value)`` pairs.
    """

    kind: type
    items: tuple[Any, ...]


@attrs.frozen
class Failure:
    """A value whose evaluation raises (e.g. an unhashable dict key): ``kind(message)``."""

    kind: type
    message: str


@attrs.frozen
class Operation:
    """An operator applied at run time: ``op`` is its source text (``"+"``, ``"%"``,
    ``"not"``, ...), ``operands`` one (unary) or two (binary) values, evaluated left to
    right and then combined by :func:`bfcl_safe.interp.builtins.binary_op` /
    :func:`~bfcl_safe.interp.builtins.unary_op` (sizes checked before computing)."""

    op: str
    operands: tuple[Any, ...]


#: The nodes a value holds when it must be resolved per episode, at run time (exact
#: types: nothing subclasses them).
DEFERRED = frozenset({CallSpec, NameRef, SourceString, Container, Failure, Operation})


def sequence_value(kind: type, items: list[Any]) -> Any:
    """What a list, tuple or set display of converted items is: a :class:`Container`
    when an item is deferred, else the value itself (for a set of unhashable items, the
    :class:`Failure` that evaluating it raises)."""
    for item in items:
        if type(item) in DEFERRED:
            return Container(kind, tuple(items))
    if kind is set:
        try:
            return set(items)
        except TypeError as exc:
            return Failure(TypeError, str(exc))
    return kind(items)


def dict_value(pairs: list[tuple[Any, Any]]) -> Any:
    """:func:`sequence_value` for a dict display's ``(key, value)`` pairs."""
    for key, item in pairs:
        if type(key) in DEFERRED or type(item) in DEFERRED:
            return Container(dict, tuple(pairs))
    try:
        return dict(pairs)
    except TypeError as exc:
        return Failure(TypeError, str(exc))


def render_value(value: Any) -> str:
    if isinstance(value, CallSpec):
        return value.render()
    if isinstance(value, NameRef):
        return value.id
    if isinstance(value, SourceString):
        return " ".join(value.parts)
    if isinstance(value, Container):
        if value.kind is dict:
            return "{" + ", ".join(f"{render_value(k)}: {render_value(v)}" for k, v in value.items) + "}"
        inner = ", ".join(render_value(v) for v in value.items)
        if value.kind is list:
            return f"[{inner}]"
        if value.kind is set:
            return "{" + inner + "}"
        return f"({inner}{',' if len(value.items) == 1 else ''})"
    if isinstance(value, Failure):
        return f"<{value.kind.__name__}: {value.message}>"
    if isinstance(value, Operation):
        if len(value.operands) == 1:
            return f"({value.op}{' ' * value.op.isalpha()}{render_value(value.operands[0])})"
        return f"({render_value(value.operands[0])} {value.op} {render_value(value.operands[1])})"
    return repr(value)
