"""How a tool's return value or exception becomes the result string the model sees."""

from __future__ import annotations

import json
import json.encoder
import os
from typing import Any, Callable

ERROR_PREFIX = "Error during execution: "

# ``json.dumps(value)`` with its defaults, without the per-call set-up: the C encoder
# json.dumps builds on every call, built once. No circular-reference bookkeeping: a
# circular value then fails by recursion instead of ValueError, and every failure is
# rendered with ``str`` alike.
# (json.encoder takes the same C encoder from _json, and is without it when _json is.)
_encode: Callable[[object, int], Any] | None
try:
    from _json import make_encoder
except ImportError:  # (a Python without json's C accelerator: json.dumps itself)
    _encode = None
else:
    _encode = make_encoder(
        None, json.JSONEncoder().default, json.encoder.encode_basestring_ascii, None, ": ", ", ", False, False, True
    )


class FrozenJSON(tuple[Any, ...]):
    """An immutable sequence of plain values with its JSON text computed once.

    Backends put large constant data (long-context extensions) into results as these:
    a dict result holding one is rendered by splicing the stored text, not by encoding
    thousands of floats again. Everywhere else it behaves as the list it stands for
    would in a result (same JSON, same ``str`` inside the fallback rendering).
    """

    #: The JSON text of the list, None when the values are not JSON.
    text: str | None

    def __new__(cls, values: Any) -> "FrozenJSON":
        global _ANY_FROZEN
        frozen = super().__new__(cls, values)
        try:
            frozen.text = json.dumps(list(frozen))
        except Exception:  # noqa: BLE001 - not JSON: rendered like the list would be, each time
            frozen.text = None
        _ANY_FROZEN = True
        return frozen


#: Whether any FrozenJSON exists yet (until then, dict results are not searched for one).
_ANY_FROZEN = False


#: ``id(list) -> (list, its FrozenJSON)`` for the last few lists (each dataset loaded has
#: two: TradingBot's long-context moving averages). An entry keeps its list alive, so an
#: ``id`` in the cache is that list's own; the oldest entry goes first.
_FROZEN: dict[int, tuple[Any, FrozenJSON]] = {}
_FROZEN_KEPT = 16


def frozen_json(values: list[Any]) -> FrozenJSON:
    """The :class:`FrozenJSON` of a constant list, made once per list object while it is
    among the last :data:`_FROZEN_KEPT` asked for. The list must never change."""
    known = _FROZEN.pop(id(values), None)
    if known is None:
        known = (values, FrozenJSON(values))
        if len(_FROZEN) >= _FROZEN_KEPT:
            del _FROZEN[next(iter(_FROZEN))]
    _FROZEN[id(values)] = known  # (re-inserted: the most recent comes last)
    return known[1]


_MARK = f"bfcl-safe stored JSON {os.urandom(8).hex()} "


def encode_with_stored(value: dict[Any, Any], stored: type[Any], encode: Callable[[Any], str]) -> str:
    """``encode(value)``, except that each top-level value of type ``stored`` is written
    as its JSON text (its ``text``) instead of being encoded: it is encoded as a marker
    string, random per process so that no other text can hold it, then replaced."""
    texts: list[str] = []
    plain: dict[Any, Any] = {}
    for key, item in value.items():
        if type(item) is stored:
            plain[key] = f"{_MARK}{len(texts)}"
            texts.append(item.text)
        else:
            plain[key] = item
    text = encode(plain)
    if not texts:
        return text
    # One pass over the text (replacing the markers one by one would copy it each time).
    pieces = text.split(f'"{_MARK}')
    out = [pieces[0]]
    for piece in pieces[1:]:
        index, rest = piece.split('"', 1)
        out.append(texts[int(index)])
        out.append(rest)
    return "".join(out)


def _dumps(value: dict[Any, Any]) -> str:
    return "".join(_encode(value, 0)) if _encode is not None else json.dumps(value)


def _format_with_frozen(value: dict[Any, Any]) -> str:
    as_lists = {key: list(item) if type(item) is FrozenJSON else item for key, item in value.items()}
    if any(type(item) is FrozenJSON and item.text is None for item in value.values()):
        return format_result(as_lists)
    try:
        return encode_with_stored(value, FrozenJSON, _dumps)
    except Exception:  # noqa: BLE001 - as in format_result, with the lists as lists
        return str(as_lists)


def format_result(value: Any) -> str:
    """The reference's rendering: a ``str`` as is, a ``dict`` as JSON (``str`` if that fails), else ``str``.

    Exact type checks, not ``isinstance``: a ``dict`` subclass is rendered with ``str``.
    """
    kind = type(value)
    if kind is str:
        text: str = value  # (an annotated name, not cast(): once per tool call)
        return text
    if kind is dict:
        if _ANY_FROZEN and FrozenJSON in map(type, value.values()):
            return _format_with_frozen(value)
        try:
            return _dumps(value)
        except Exception:  # noqa: BLE001 - the reference falls back on any failure
            return str(value)
    return str(value)


def format_error(exc: BaseException) -> str:
    return f"{ERROR_PREFIX}{exc}"
