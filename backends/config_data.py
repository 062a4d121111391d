"""Private copies of scenario data for a backend instance."""

from __future__ import annotations

import copy
from typing import Any

_SCALARS = (str, int, float, bool, type(None))
_SCALAR_TYPES = frozenset(_SCALARS)


def copy_data(value: Any) -> Any:
    """A deep copy of JSON-like data that skips immutable leaves; other objects go
    through ``copy.deepcopy``. (Unlike ``deepcopy`` it does not keep aliasing between
    parts of the config, which JSON-loaded data never has.)

    Every list and dict is a fresh one of the same type, with the same keys (shared, as
    keys are immutable) in the same order; scalars are shared.
    """
    # Speed (this runs for every scenario load): containers are copied in C and only
    # their non-scalar items are copied again, by plain loops, not by a comprehension
    # and a call per item. Each nesting level costs one frame (a comprehension adds a
    # second one before Python 3.12), so deep data reaches the recursion limit no
    # sooner than with the comprehensions.
    kind = type(value)
    if kind in _SCALAR_TYPES:
        return value
    if kind is list:
        if _SCALAR_TYPES.issuperset(map(type, value)):
            return value.copy()  # a flat list (the common case): one C-level copy
        copied = []
        for item in value:
            copied.append(item if type(item) in _SCALAR_TYPES else copy_data(item))
        return copied
    if kind is dict:
        copied_dict = value.copy()  # same keys in the same order; scalars stay shared
        for key, item in value.items():
            if type(item) not in _SCALAR_TYPES:
                copied_dict[key] = copy_data(item)
        return copied_dict
    if kind is set:
        return set(value)  # a set holds only hashable, so (for data) immutable, items
    return copy.deepcopy(value)
