"""How a tool's return value or exception becomes the result string the model sees."""

from __future__ import annotations

import json
from typing import Any

ERROR_PREFIX = "Error during execution: "


def format_result(value: Any) -> str:
    """The reference's rendering: a ``str`` as is, a ``dict`` as JSON (``str`` if that fails), else ``str``.

    Exact type checks, not ``isinstance``: a ``dict`` subclass is rendered with ``str``.
    """
    kind = type(value)
    if kind is str:
        return value
    if kind is dict:
        try:
            return json.dumps(value)
        except Exception:  # noqa: BLE001 - the reference falls back on any failure
            return str(value)
    return str(value)


def format_error(exc: BaseException) -> str:
    return f"{ERROR_PREFIX}{exc}"
