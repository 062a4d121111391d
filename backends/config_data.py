"""Private copies of scenario data for a backend instance."""

from __future__ import annotations

import copy
from typing import Any

_SCALARS = (str, int, float, bool, type(None))


def copy_data(value: Any) -> Any:
    """A deep copy of JSON-like data that skips immutable leaves; other objects go
    through ``copy.deepcopy``. (Unlike ``deepcopy`` it does not keep aliasing between
    parts of the config, which JSON-loaded data never has.)"""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict:
        return {key: copy_data(item) for key, item in value.items()}
    if kind is list:
        return [copy_data(item) for item in value]
    if kind is set:
        return set(value)  # a set holds only hashable, so (for data) immutable, items
    return copy.deepcopy(value)
