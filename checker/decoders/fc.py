"""Decoders of steps stored as data (lists of call objects): API function-calling handlers.

- ``fc``: the reference's ``convert_to_function_call`` (OpenAI, Claude, Mistral, ... in FC mode);
- ``fc_list``, ``gemini_fc``, ``cohere``, ``mining``: handlers with their own variant;
- ``undecodable``: handlers whose ``decode_execute`` fails on every step.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from bfcl_safe.checker.codec import loads_json
from bfcl_safe.checker.decoders.base import (
    CACHED_STEP_LENGTH,
    CACHED_TEXTS,
    DecodeError,
    Decoder,
    Items,
    fc_pairs,
    name_arguments,
    pair,
    render,
)
from bfcl_safe.interp.execute import Call
from bfcl_safe.interp.fc_front import fc_call, reference_text

# --------------------------------------------------------------------------- fc

def _json_arguments(name: Any, text: str) -> Any:
    """``json.loads(text)``, remembered for short texts: an entry's steps are decoded
    twice when it fails (to run, then to show), and argument texts repeat. The value is
    shared: every consumer only reads it (``fc_call`` copies into its own containers)."""
    try:
        return _loads_cached(text) if len(text) <= CACHED_STEP_LENGTH else loads_json(text)
    except (ValueError, RecursionError) as exc:
        raise DecodeError(f"arguments of {name!r} are not valid JSON: {exc}") from None


#: A failure is raised, so never remembered.
_loads_cached = lru_cache(maxsize=CACHED_TEXTS)(loads_json)


def _fc_items(step: Any) -> list[tuple[Any, dict]]:
    if type(step) is dict:
        step = [step]
    elif type(step) is not list and (isinstance(step, (str, bytes)) or not isinstance(step, list)):
        # The reference iterates it and calls .items() on each element: fails for
        # anything but a list of dicts (an empty string or list decodes to nothing).
        if isinstance(step, str) and step == "":
            return []
        raise DecodeError(f"an FC step must be a list of {{name: arguments}} objects, not {type(step).__name__}")
    out = []
    for function_call in step:
        if type(function_call) is not dict and not isinstance(function_call, dict):
            raise DecodeError(f"an FC call must be an object, not {type(function_call).__name__}")
        for name, value in function_call.items():
            if type(value) is str:
                value = _json_arguments(name, value)
            if type(value) is not dict and not isinstance(value, dict):
                raise DecodeError(f"arguments of {name!r} must be an object, not {type(value).__name__}")
            out.append((name, value))
    return out


def decode_fc(step: Any) -> list[Call]:
    return [fc_call(name, arguments) for name, arguments in _fc_items(step)]


def display_fc(step: Any) -> list[str]:
    return [reference_text(name, arguments) for name, arguments in _fc_items(step)]


# ------------------------------------------------------- handlers' own variants


def items_fc_list(step: Any) -> Items:
    """Nova, Arch, Granite 3 FC, Phi FC, Mistral FC: ``convert_to_function_call`` on a
    list only (a lone object or text fails, unlike ``fc``)."""
    if type(step) is not list:
        raise DecodeError(f"the model did not return a list of function calls: {type(step).__name__}")
    return fc_pairs(step)


def items_gemini_fc(step: Any) -> Items:
    """Gemini FC: ``[{name: {arguments}}]``; arguments are never JSON text, a lone
    object is iterated by key (so it fails unless empty), and so is text."""
    if isinstance(step, (str, dict)):
        if len(step) == 0:
            return []
        raise DecodeError(f"a Gemini FC step must be a list, not {type(step).__name__}")
    if not isinstance(step, list):
        raise DecodeError(f"a Gemini FC step must be a list, not {type(step).__name__}")
    return fc_pairs(step, decode_strings=False)


def items_cohere(step: Any) -> Items:
    """Cohere: ``[{"tool_name": ..., "parameters": {...}}]``; anything but a list is no call."""
    if not isinstance(step, list):
        return []
    out: Items = []
    for call in step:
        try:
            parameters = call["parameters"]
            if not isinstance(parameters, dict):
                raise DecodeError("parameters must be an object")
            name = call["tool_name"]
        except (KeyError, TypeError, IndexError) as exc:
            raise DecodeError(f"not a Cohere tool call: {exc!r}") from None
        out.append(render(name, parameters, ","))
    return out


def items_mining(step: Any) -> Items:
    """Mining / DM-Cito: a list of xLAM objects as data; non-objects are skipped."""
    if isinstance(step, (dict, str)):
        return []  # iterated by key or by character: no element is an object
    if not isinstance(step, (list, str, tuple)):
        raise DecodeError(f"a step must be a list, not {type(step).__name__}")
    return name_arguments(list(step))


def items_undecodable(step: Any) -> Items:
    """Gorilla, Nexus (and the base handler): the reference passes its tag flag as the
    return format, so ``ast_parse`` rejects every step ("Unsupported language: False")."""
    raise DecodeError("the reference handler decodes no step (Unsupported language: False)")


DECODERS: dict[str, Decoder] = {
    "fc": (decode_fc, display_fc),
    "fc_list": pair(items_fc_list),
    "gemini_fc": pair(items_gemini_fc),
    "cohere": pair(items_cohere),
    "mining": pair(items_mining),
    "undecodable": pair(items_undecodable),
}
