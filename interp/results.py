"""How a tool's return value or exception becomes the result string the model sees."""

from __future__ import annotations

import json
import json.encoder
from typing import Any

ERROR_PREFIX = "Error during execution: "

# ``json.dumps(value)`` with its defaults, without the per-call set-up: the C encoder
# json.dumps builds on every call, built once. No circular-reference bookkeeping: a
# circular value then fails by recursion instead of ValueError, and every failure is
# rendered with ``str`` alike.
_encode = json.encoder.c_make_encoder(
    None, json.JSONEncoder().default, json.encoder.encode_basestring_ascii, None, ": ", ", ", False, False, True
) if json.encoder.c_make_encoder is not None else None


def format_result(value: Any) -> str:
    """The reference's rendering: a ``str`` as is, a ``dict`` as JSON (``str`` if that fails), else ``str``.

    Exact type checks, not ``isinstance``: a ``dict`` subclass is rendered with ``str``.
    """
    kind = type(value)
    if kind is str:
        return value
    if kind is dict:
        try:
            return "".join(_encode(value, 0)) if _encode is not None else json.dumps(value)
        except Exception:  # noqa: BLE001 - the reference falls back on any failure
            return str(value)
    return str(value)


def format_error(exc: BaseException) -> str:
    return f"{ERROR_PREFIX}{exc}"
