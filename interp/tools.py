"""The tool marker: backends say explicitly which methods a model may call.

A marked method keeps its own function object (no wrapper), so that a bad call
raises exactly the ``TypeError`` text Python gives for the method itself, e.g.
``GorillaFileSystem.ls() got an unexpected keyword argument 'x'``.
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

TOOL_ATTRIBUTE = "__bfcl_safe_tool__"


def tool(func: F) -> F:
    """Mark a backend method as callable by a model."""
    setattr(func, TOOL_ATTRIBUTE, True)
    return func


def tool_names(cls: type) -> tuple[str, ...]:
    """Names of the methods of ``cls`` (and its bases) marked with :func:`tool`, sorted."""
    names = set()
    for klass in cls.__mro__:
        for name, value in vars(klass).items():
            if getattr(value, TOOL_ATTRIBUTE, False):
                names.add(name)
    return tuple(sorted(names))
