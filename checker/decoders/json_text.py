"""Decoders of JSON call objects written as text.

- ``json``: the Salesforce/xLAM-style ``decode_execute`` (``{"name", "arguments"}``
  objects, a list or ``;``-separated);
- ``bitagent``, ``falcon``, ``qwen_tool_call``, ``hammer``, ``glm``, ``granite``,
  ``think_agent``: handlers that cut JSON out of their own text formats.

Text is read with ``json.loads`` only.
"""

from __future__ import annotations

import json
import re
from typing import Any

from bfcl_safe.checker.decoders.base import (
    DecodeError,
    Decoder,
    Items,
    as_list,
    fc_pairs,
    load_json,
    name_arguments,
    name_arguments_strict,
    pair,
    render,
    require_text,
    tag_blocks,
)
from bfcl_safe.interp.execute import Call
from bfcl_safe.interp.fc_front import fc_call, reference_text

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


#: Blanks (what ``str.strip`` removes), then ``{`` or ``[`` and blanks and ``{``.
_JSON_START = re.compile(r"\s*(?:\{|\[\s*\{)")


def looks_like_json_call(step: str) -> bool:
    """Text starting like a JSON object or a list of objects (the ``auto`` choice)."""
    return _JSON_START.match(step) is not None


# ------------------------------------------------------- handlers' own formats


def items_bitagent(step: Any) -> Items:
    """BitAgent: one JSON value, a list of (or a single) ``{"name", "arguments"}``."""
    return name_arguments_strict(as_list(load_json(require_text(step, "BitAgent"))))


def items_falcon(step: Any) -> Items:
    """Falcon 3 FC: JSON after the first ``<tool_call>`` (up to ``</tool_call>``),
    optionally in a ```json fence."""
    text = require_text(step, "Falcon")
    if "<tool_call>" not in text:
        raise DecodeError("no <tool_call> in the step")
    body = text.split("<tool_call>")[1].split("</tool_call>")[0].strip()
    if body.startswith("```") and body.endswith("```"):
        body = body.strip("`").strip()
        if body.startswith("json"):
            body = body[4:].strip()
    return name_arguments_strict(as_list(load_json(body)))


def items_qwen_tool_call(step: Any) -> Items:
    """Qwen FC, Granite 4, Nanbeige FC, Pelican-VL FC: every ``<tool_call>\\n{json}\\n</tool_call>``
    block; blocks that are not JSON are dropped; every kept block must be an object with
    ``name`` and ``arguments`` (arguments may be JSON text)."""
    text = require_text(step, "<tool_call>")
    blocks = []
    for block in tag_blocks(text, "<tool_call>\n", "\n</tool_call>"):
        try:
            blocks.append(json.loads(block))
        except (ValueError, RecursionError):
            continue
    if any(type(block) is not dict for block in blocks):
        raise DecodeError("a <tool_call> block is not a JSON object")
    pairs = []
    for block in blocks:
        try:
            name, arguments = block["name"], block["arguments"]
            pairs.append({name: arguments})
        except (KeyError, TypeError) as exc:  # a missing key; an unhashable name
            raise DecodeError(f"not a tool call: {exc!r}") from None
    return fc_pairs(pairs)


def items_hammer(step: Any) -> Items:
    """Hammer: fences removed, then a JSON list of xLAM objects or ``{"tool_calls": ...}``;
    text that is not JSON, and non-objects, decode to nothing."""
    text = require_text(step, "Hammer").replace("```", "")
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return []
    if isinstance(value, list):
        calls = value
    elif isinstance(value, dict):
        calls = value.get("tool_calls", [])
    else:
        return []
    return name_arguments(as_list(calls))


def items_glm(step: Any) -> Items:
    """GLM-4 (local): the first line is the name, the second the JSON arguments; a single
    line is iterated as an FC list (so it fails unless empty)."""
    lines = require_text(step, "GLM").split("\n")
    if len(lines) == 1:
        if lines[0] == "":
            return []
        raise DecodeError("a GLM step needs a name line and an arguments line")
    return fc_pairs([{lines[0]: lines[1]}])


def items_granite(step: Any) -> Items:
    """Granite 20B function calling: parts split on ``<function_call>``; a JSON part is a
    call (``no_function`` becomes the text "No function is called"); any other part is
    kept as it is, as call text."""
    out: Items = []
    for part in require_text(step, "Granite").split("<function_call>"):
        part = part.strip()
        if not part:
            continue
        try:
            value = json.loads(part)
        except (ValueError, RecursionError):
            out.append(part)
            continue
        if not isinstance(value, dict):
            raise DecodeError(f"a <function_call> must be a JSON object, not {type(value).__name__}")
        name = value.get("name", "")
        if not isinstance(name, str):
            raise DecodeError("the function name must be text")
        name = name.strip()
        arguments = value.get("arguments", {})
        if name == "no_function":
            out.append("No function is called")
            continue
        out.append(render(name, arguments, ","))
    return out


def items_think_agent(step: Any) -> Items:
    """ThinkAgent: the JSON after ``</think>`` (quotes swapped to ``"``) is iterated, but
    each element is formatted to text and then used as a mapping, so any element fails
    the step; only an empty value (or no ``</think>``) decodes, to nothing."""
    text = require_text(step, "ThinkAgent").strip().replace("'", '"')
    parts = text.split("</think>", 1)
    value = load_json(parts[1].strip() if len(parts) > 1 else "[]")
    if isinstance(value, (list, dict, str)) and len(value) == 0:
        return []
    raise DecodeError("the reference's ThinkAgent decoding fails on any call")


DECODERS: dict[str, Decoder] = {
    "json": (decode_json, display_json),
    "bitagent": pair(items_bitagent),
    "falcon": pair(items_falcon),
    "qwen_tool_call": pair(items_qwen_tool_call),
    "hammer": pair(items_hammer),
    "glm": pair(items_glm),
    "granite": pair(items_granite),
    "think_agent": pair(items_think_agent),
}
