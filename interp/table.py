"""The per-episode method table: tool name -> bound method, built once, frozen."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

from bfcl_safe.interp.fastparse import decode_simple_literal
from bfcl_safe.interp.lexical import REWRITE_PATTERN
from bfcl_safe.interp.tools import tool_names


@lru_cache(maxsize=None)
def _class_tools(cls: type) -> dict[str, Callable[..., Any]]:
    """``{tool name: descriptor}`` of a backend class (as found along its MRO, so
    that binding with ``__get__`` behaves like attribute access), computed once."""
    tools = {}
    for name in tool_names(cls):
        for klass in cls.__mro__:
            if name in vars(klass):
                tools[name] = vars(klass)[name]
                break
    return tools


@lru_cache(maxsize=None)
def _layout(classes: tuple[type, ...]) -> Mapping[str, tuple[int, Callable[..., Any]]]:
    """``{tool name: (index of the class, descriptor)}`` for instances of ``classes`` in
    this order; a name several classes define goes to the last. Computed once per tuple
    of classes (entries involve a handful of combinations)."""
    methods: dict[str, tuple[int, Callable[..., Any]]] = {}
    for index, cls in enumerate(classes):
        methods.update({name: (index, function) for name, function in _class_tools(cls).items()})
    return MappingProxyType(methods)


_LAST_NAME = re.compile(r"\b([a-zA-Z_]\w*)\s*$")
#: Constants that can be written in callee position: eval evaluates the arguments,
#: then fails with "'bool' object is not callable".
_CONSTANTS = {"True": True, "False": False, "None": None}


def _not_callable(value: Any) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"'{type(value).__name__}' object is not callable")

    return call


class MethodTable:
    """Tools of one episode's backend instances.

    ``instances`` come in the entry's ``involved_classes`` order; a tool name that
    several classes define resolves to the *last* of them, as in the reference.
    ``instance_names`` are the names the reference gives those instances in its
    globals (``{model}_{entry id}_{Class}_instance``); they matter because the
    reference rewrites every ``name(`` inside call text — string literals included —
    to ``instance_name.name(``, which changes string arguments. Without them each
    instance is named ``{Class}_instance``.

    Building is cheap (the name layout is computed once per tuple of classes); a method
    is bound to its instance only when it is looked up.
    """

    __slots__ = ("_methods", "_instances", "_names")

    def __init__(self, instances: Sequence[Any], instance_names: Sequence[str] | None = None):
        if instance_names is None:
            instance_names = [f"{type(i).__name__}_instance" for i in instances]
        if len(instance_names) != len(instances):
            raise ValueError("instances and instance_names differ in length")
        self._instances = tuple(instances)
        self._names = tuple(instance_names)
        self._methods = _layout(tuple(map(type, self._instances)))

    def __contains__(self, name: object) -> bool:
        return name in self._methods

    def names(self) -> tuple[str, ...]:
        return tuple(self._methods)

    def lookup(self, name: str) -> Callable[..., Any]:
        """The bound method for ``name``; ``NameError`` with Python's text if none."""
        try:
            index, function = self._methods[name]
        except KeyError:
            if not name.isascii():
                # Never a tool (the reference's prefix regex skips non-ASCII names): eval
                # looks up CPython's NFKC form of the name, which is not defined.
                name = unicodedata.normalize("NFKC", name)
            if name in _CONSTANTS:
                return _not_callable(_CONSTANTS[name])
            raise NameError(f"name '{name}' is not defined") from None
        instance = self._instances[index]
        return function.__get__(instance, type(instance))  # type: ignore[no-any-return]

    def _owner(self, name: str) -> str | None:
        """The instance name the reference prefixes ``name(`` with, if ``name`` is a tool."""
        found = self._methods.get(name)
        return None if found is None else self._names[found[0]]

    def rewrite(self, source: str) -> str:
        """The reference's instance-name prefixing of ``name(`` occurrences in ``source``."""

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            owner = self._owner(name)
            return f"{owner}.{name}" if owner is not None else name

        return REWRITE_PATTERN.sub(replace, source)

    def denylist_head(self, text: str) -> str:
        """What the reference tests against its denylist for call ``text``: the part
        before the first ``(``, after the rewrite, and after the first ``.`` if any."""
        head = text.split("(", 1)[0]
        if "(" in text:
            match = _LAST_NAME.search(head)
            if match:
                # The rewrite replaces "name  (" with "name(" or "owner.name(": the
                # whitespace goes either way (so "kill ()" is refused like "kill()").
                name = match.group(1)
                owner = self._owner(name)
                head = head[: match.start()] + (f"{owner}.{name}" if owner is not None else name)
        if "." in head:
            head = head.split(".")[1]
        return head

    def decode_source_string(self, parts: Sequence[str]) -> Any:
        """Rewrite each literal piece like the reference would, then decode it."""
        values = [_decode_literal(self.rewrite(part)) for part in parts]
        return values[0][:0].join(values)


def _decode_literal(source: str) -> Any:
    """The value of one string literal's source: plain quoted text directly, anything
    with a prefix or escapes through libcst (``evaluated_value``, never ``eval``)."""
    simple = decode_simple_literal(source)
    if simple is not None:
        return simple
    import libcst as cst

    return cst.SimpleString(source).evaluated_value
