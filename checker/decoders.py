"""Decoders: one model step as stored in a result file -> the calls to run.

Each decoder mirrors one reference decoding path exactly, including which inputs
decode to nothing and which fail (a failed step is skipped by the scorer):

- ``fc``: ``convert_to_function_call`` (API function-calling handlers);
- ``prompting``: ``default_decode_execute_prompting`` (prompting handlers: Python
  call text, keyword arguments only, bare names as strings, dict-of-dict arguments
  rendered as nested calls, ...);
- ``json``: the Salesforce/xLAM-style ``decode_execute`` (JSON ``{"name", "arguments"}``
  objects, a list or ``;``-separated).

None of them evaluates text. Where the reference ``eval``s a piece of model text
while decoding (arithmetic in a prompting argument), we compute literal arithmetic
within limits and fail the step otherwise; this is the only place decoding can
differ from the reference, and only for inputs whose decoding would run model code.
"""

from __future__ import annotations

from bfcl_safe.interp.errors import BfclSafeError

import json
import json.scanner
from functools import lru_cache
from typing import Any, Callable

from bfcl_safe.interp import limits
from bfcl_safe.interp.errors import RejectedInput
from bfcl_safe.interp.execute import Call
from bfcl_safe.interp.fc import fc_call, reference_text
from bfcl_safe.interp.fastparse import parse_tree
from bfcl_safe.interp.text import bracket_depth, python_syntax_error


#: Prompting step texts and FC argument texts up to this length are decoded once and
#: remembered, CACHED_TEXTS of each at most (a few tens of MB at worst, whatever the input).
CACHED_STEP_LENGTH = 2048
CACHED_TEXTS = 2048


class DecodeError(BfclSafeError, ValueError):
    """The step does not decode; the scorer skips it, like the reference."""


# --------------------------------------------------------------------------- fc


_scan_json = json.scanner.make_scanner(json.JSONDecoder())


def _json_arguments(name: Any, text: str) -> Any:
    """``json.loads(text)``, remembered for short texts: an entry's steps are decoded
    twice when it fails (to run, then to show), and argument texts repeat. The value is
    shared: every consumer only reads it (``fc_call`` copies into its own containers)."""
    try:
        return _loads_cached(text) if len(text) <= CACHED_STEP_LENGTH else _loads(text)
    except (ValueError, RecursionError) as exc:
        raise DecodeError(f"arguments of {name!r} are not valid JSON: {exc}") from None


def _loads(text: str) -> Any:
    """``json.loads(text)``; the usual ``{...}`` text without surrounding whitespace goes
    straight to the C scanner (json.loads does the same after its checks)."""
    if text[:1] == "{":
        try:
            value, end = _scan_json(text, 0)
        except (StopIteration, ValueError, RecursionError):
            end = -1
        if end == len(text):
            return value
    return json.loads(text)


#: A failure is raised, so never remembered.
_loads_cached = lru_cache(maxsize=CACHED_TEXTS)(_loads)


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


# ------------------------------------------------------------------------- json


def _json_items(step: Any) -> list[tuple[Any, Any]]:
    if not isinstance(step, (str, bytes, bytearray)):
        raise DecodeError(f"a JSON step must be text, not {type(step).__name__}")
    try:
        try:
            calls = json.loads(step)
            if not isinstance(calls, list):
                calls = [calls]
        except json.JSONDecodeError:
            text = step if isinstance(step, str) else step.decode()
            calls = [json.loads(part.strip()) for part in text.split(";")]
        out = []
        for call in calls:
            name, arguments = call["name"], call["arguments"]
            if not isinstance(arguments, dict):
                raise DecodeError("arguments must be an object")
            out.append((name, arguments))
        return out
    except DecodeError:
        raise
    except (ValueError, KeyError, TypeError, IndexError, RecursionError, UnicodeDecodeError) as exc:
        raise DecodeError(f"not a JSON tool call: {exc}") from None


def decode_json(step: Any) -> list[Call]:
    return [fc_call(name, arguments) for name, arguments in _json_items(step)]


def display_json(step: Any) -> list[str]:
    return [reference_text(name, arguments) for name, arguments in _json_items(step)]


# -------------------------------------------------------------------- prompting

def _render_nested(value: Any) -> str:
    if isinstance(value, dict):
        if all(isinstance(v, dict) for v in value.values()):
            if not value:
                raise DecodeError("an empty dict argument does not render (reference IndexError)")
            name = next(iter(value))
            inner = value[name]
            return f"{name}({', '.join(f'{k}={_render_nested(v)}' for k, v in inner.items())})"
        return "{" + ", ".join(f"'{k}': {_render_nested(v)}" for k, v in value.items()) + "}"
    try:
        return repr(value)
    except ValueError as exc:  # e.g. an integer too long to render
        raise DecodeError(str(exc)) from None


def _prompting_calls(step: Any) -> list[dict]:
    if not isinstance(step, str):
        raise DecodeError(f"a prompting step must be text, not {type(step).__name__}")
    text = step.strip("`\n ")
    if not text.startswith("["):
        text = "[" + text
    if not text.endswith("]"):
        text = text + "]"
    text = text.strip().strip("'")
    if len(text) > limits.MAX_SOURCE_LENGTH:
        raise DecodeError("step text too long")
    try:
        tree = parse_tree(text)
    except RejectedInput as exc:
        raise DecodeError(str(exc)) from None
    if tree is not None:
        try:
            return _fast_calls(tree)
        except _OutsideFastSubset:
            pass
    if python_syntax_error(text) is not None:
        # The reference's ast.parse fails on it too (chat text, mostly): nothing to decode.
        raise DecodeError("not Python call syntax")
    if len(text) > limits.MAX_LIBCST_SOURCE_LENGTH:
        raise DecodeError("step text outside the simple subset and too long for libcst")
    if bracket_depth(text) > limits.MAX_NESTING_DEPTH:  # guards libcst's recursion
        raise DecodeError("step text nested too deeply")
    from bfcl_safe.checker.decode_cst import prompting_calls

    return prompting_calls(text)


class _OutsideFastSubset(Exception):
    pass


def _fast_calls(tree: tuple) -> list[dict]:
    """The reference's decoding on a fast-path tree (same results as the libcst half)."""
    if tree[0] == "call":
        return [_fast_call(tree)]
    if tree[0] not in ("list", "tuple", "set"):
        raise DecodeError(f"expected a list of calls, got {tree[0]}")
    calls = []
    for item in tree[1]:
        if item[0] != "call":
            raise DecodeError("every element must be a call")
        calls.append(_fast_call(item))
    return calls


def _fast_call(node: tuple) -> dict:
    # Positional arguments are dropped, as in the reference.
    return {node[1]: {key: _fast_value(value) for key, value in node[2] if key is not None}}


def _fast_value(node: tuple) -> Any:
    kind = node[0]
    if kind == "const":
        return node[1]
    if kind == "name":
        return node[1]  # bare names become strings
    if kind == "signed":
        return -node[2][1]  # the reference negates whatever the unary operator
    if kind == "list":
        return [_fast_value(item) for item in node[1]]
    if kind == "tuple":
        return tuple(_fast_value(item) for item in node[1])
    if kind == "dict":
        out = {}
        for key, value in node[1]:
            try:
                out[_fast_value(key)] = _fast_value(value)
            except TypeError as exc:
                raise DecodeError(str(exc)) from None
        return out
    if kind == "call" and any(key is not None for key, _ in node[2]):
        return _fast_call(node)
    # A call without keywords renders through ast.unparse; sets are unsupported: libcst half.
    raise _OutsideFastSubset


def _prompting_texts(step: Any) -> list[str]:
    texts = []
    for function_call in _prompting_calls(step):
        for name, arguments in function_call.items():
            texts.append(f"{name}({', '.join(f'{k}={_render_nested(v)}' for k, v in arguments.items())})")
    return texts


@lru_cache(maxsize=CACHED_TEXTS)
def _prompting_texts_cached(step: str) -> tuple[str, ...] | list[str]:
    """The call texts of a step text, as a tuple; a failure as ``[message]`` (a list, so
    it can never be mistaken for texts; kept as data, not as an exception object, whose
    traceback would keep every frame it crossed alive)."""
    try:
        return tuple(_prompting_texts(step))
    except DecodeError as exc:
        return [str(exc)]


def display_prompting(step: Any) -> list[str]:
    # A model's steps repeat (the same answer across categories and entries that share
    # a question; ground truth replayed): short step texts are decoded once.
    if type(step) is str and len(step) <= CACHED_STEP_LENGTH:
        texts = _prompting_texts_cached(step)
        if type(texts) is list:
            raise DecodeError(texts[0])
        return list(texts)
    return _prompting_texts(step)


def decode_prompting(step: Any) -> list[Call]:
    # The call texts are the reference's; the executor parses them (never evaluates).
    return list(display_prompting(step))


# --------------------------------------------------------------------- registry


def _looks_like_json_call(step: str) -> bool:
    stripped = step.lstrip()
    return stripped.startswith("{") or (stripped.startswith("[") and stripped[1:].lstrip().startswith("{"))


def _auto(step: Any, fc: Callable, json_: Callable, prompting: Callable) -> list:
    """The ``auto`` choice, per step: FC lists as FC, JSON tool-call text as JSON (if it
    decodes), anything else as Python call text."""
    kind = type(step)
    if kind is list or kind is dict or isinstance(step, (list, dict)):
        return fc(step)
    if isinstance(step, str) and _looks_like_json_call(step):
        try:
            return json_(step)
        except DecodeError:
            pass
    return prompting(step)


def decode_auto(step: Any) -> list[Call]:
    return _auto(step, decode_fc, decode_json, decode_prompting)


def display_auto(step: Any) -> list[str]:
    return _auto(step, display_fc, display_json, display_prompting)


DECODERS: dict[str, tuple[Callable[[Any], list[Call]], Callable[[Any], list[str]]]] = {
    "auto": (decode_auto, display_auto),
    "fc": (decode_fc, display_fc),
    "prompting": (decode_prompting, display_prompting),
    "json": (decode_json, display_json),
}


def decode_step(step: Any, decoder: str = "auto") -> list[Call]:
    """Decode one step; :class:`DecodeError` when the reference's decoding would fail."""
    decode = DECODERS[decoder][0]
    try:
        return decode(step)
    except DecodeError:
        raise
    except RejectedInput as exc:
        raise DecodeError(str(exc)) from None
    except (ValueError, TypeError, AttributeError, KeyError, IndexError, RecursionError) as exc:
        raise DecodeError(f"{type(exc).__name__}: {exc}") from None


# The decoders of the reference's model handlers with their own formats register
# themselves in DECODERS (imported last: that module imports this one).
import bfcl_safe.checker.handler_decoders  # noqa: E402,F401
