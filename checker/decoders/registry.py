"""The registry of decoders, by name: each family module's ``DECODERS`` merged, plus ``auto``.

A result folder's decoder is named by :mod:`~bfcl_safe.checker.decoders.models`
(``DECODER_OF_HANDLER``) or forced with ``--decoder``; :func:`decode_step` runs it.
"""

from __future__ import annotations

from typing import Any, Callable

from bfcl_safe.checker.decoders import fc, functiongemma, json_text, prompting, python_text
from bfcl_safe.checker.decoders.base import DecodeError, Decoder
from bfcl_safe.interp.errors import RejectedInput
from bfcl_safe.interp.execute import Call


def _auto(step: Any, fc_: Callable, json_: Callable, prompting_: Callable) -> list:
    """The ``auto`` choice, per step: FC lists as FC, JSON tool-call text as JSON (if it
    decodes), anything else as Python call text."""
    kind = type(step)
    if kind is list or kind is dict or isinstance(step, (list, dict)):
        return fc_(step)
    if isinstance(step, str) and json_text.looks_like_json_call(step):
        try:
            return json_(step)
        except DecodeError:
            pass
    return prompting_(step)


def decode_auto(step: Any) -> list[Call]:
    kind = type(step)
    if kind is list or kind is dict:  # (an FC step: straight to its decoder, one call less)
        return fc.decode_fc(step)
    return _auto(step, fc.decode_fc, json_text.decode_json, prompting.decode_prompting)


def display_auto(step: Any) -> list[str]:
    kind = type(step)
    if kind is list or kind is dict:
        return fc.display_fc(step)
    return _auto(step, fc.display_fc, json_text.display_json, prompting.display_prompting)


#: What a decoder may raise besides DecodeError on hostile input (an odd value deep in
#: a library: a lone surrogate reaching an encoder, a recursion limit, ...): the step
#: does not decode. The entry's BudgetExceeded passes through (it is no DecodeError).
_STRAYS = (ValueError, TypeError, AttributeError, KeyError, IndexError, RecursionError, RejectedInput)


def _only_decode_errors(function: Callable[[Any], list]) -> Callable[[Any], list]:
    def run(step: Any) -> list:
        try:
            return function(step)
        except DecodeError:
            raise
        except RejectedInput as exc:
            raise DecodeError(str(exc)) from None
        except _STRAYS as exc:
            raise DecodeError(f"{type(exc).__name__}: {exc}") from None

    run.__doc__ = function.__doc__
    return run


def _merged(*families: dict[str, Decoder]) -> dict[str, Decoder]:
    out: dict[str, Decoder] = {}
    for family in families:
        for name, (decode, display) in family.items():
            if name in out:
                raise AssertionError(f"decoder {name!r} is registered twice")
            out[name] = (_only_decode_errors(decode), _only_decode_errors(display))
    return out


#: Decoder name -> (decode, display); see :mod:`~bfcl_safe.checker.decoders.base`.
#: Both functions return a list or raise :class:`DecodeError` (or the entry's
#: ``BudgetExceeded``), whatever the step.
DECODERS: dict[str, Decoder] = _merged(
    {"auto": (decode_auto, display_auto)},
    fc.DECODERS,
    json_text.DECODERS,
    prompting.DECODERS,
    python_text.DECODERS,
    functiongemma.DECODERS,
)


def decode_step(step: Any, decoder: str = "auto") -> list[Call]:
    """Decode one step; :class:`DecodeError` when the reference's decoding would fail."""
    return DECODERS[decoder][0](step)
