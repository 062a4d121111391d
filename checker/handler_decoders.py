"""Decoders for the result formats of BFCL's model handlers with their own ``decode_execute``.

The reference scores a multi-turn step with ``handler.decode_execute(step,
has_tool_call_tag=False)``; a step that raises or decodes to nothing is skipped.
bfcl-eval 2026.3.23 has 34 such methods; grouped by what they do, they are the
decoders below (the handler -> decoder table is :mod:`checker.model_decoders`;
``fc``, ``prompting`` and ``json`` live in :mod:`checker.decoders`).

Every decoder here returns, per call, the reference's call text for display and,
for execution, an FC-style :class:`~interp.callspec.CallSpec` when the call is a
plain ``name(keyword=json value, ...)`` (no text round trip), otherwise that same
text (parsed by the executor's default-deny front-end, never evaluated). Where a
handler keeps a piece of model text that is not a call at all (granite's
non-JSON parts), that text is the call, as in the reference.

Nothing here evaluates text: JSON is read with ``json.loads``; the two handlers
that parse Python (``llama_python_tag``'s ``eval``, ``minicpm``'s ``ast.parse``)
go through libcst in :mod:`checker.decoders_python`, which computes literals and
refuses (fails the step) where the reference would run model code.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, NamedTuple

from bfcl_safe.checker.decoders import (
    DECODERS,
    DecodeError,
    decode_prompting,
    display_prompting,
)
from bfcl_safe.interp import limits
from bfcl_safe.interp.execute import Call
from bfcl_safe.interp.fc import fc_call

# ------------------------------------------------------------------ shared pieces


class Parsed(NamedTuple):
    """One decoded call: its name and arguments, and the exact text the reference builds."""

    name: Any
    arguments: dict
    text: str


#: A decoded step: calls, or bare text the reference keeps as a "call" (granite).
Items = list["Parsed | str"]


def _render(name: Any, arguments: Any, separator: str) -> Parsed:
    """``name(k=repr(v)<separator>...)``, formatted like the handler's f-string."""
    if not isinstance(arguments, dict):
        raise DecodeError(f"arguments of {name!r} must be an object, not {type(arguments).__name__}")
    try:
        text = f"{name}({separator.join(f'{k}={v!r}' for k, v in arguments.items())})"
    except (ValueError, RecursionError) as exc:  # e.g. repr of an over-long integer
        raise DecodeError(f"cannot render the arguments of {name!r}: {exc}") from None
    return Parsed(name, arguments, text)


_JSON_SCALARS = (str, int, float, bool, type(None))


def _jsonish(value: Any) -> bool:
    """JSON-shaped (tuples allowed): the FC front-end reproduces its ``repr`` round trip.
    Deeper than the nesting limit counts as JSON-shaped; ``fc_call`` then rejects it."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > limits.MAX_NESTING_DEPTH:
            return True
        if type(item) in _JSON_SCALARS:
            continue
        if type(item) in (list, tuple):
            stack.extend((v, depth + 1) for v in item)
        elif type(item) is dict:
            stack.extend((k, depth + 1) for k in item)
            stack.extend((v, depth + 1) for v in item.values())
        else:
            return False
    return True


def _call(item: "Parsed | str") -> Call:
    if isinstance(item, str):
        return item
    if _jsonish(item.arguments):
        call = fc_call(item.name, item.arguments)
        if not isinstance(call, str):
            return call
    # Not a plain call (odd name or keyword), or Python values: the exact reference text.
    return item.text


def _texts(items: Items) -> list[str]:
    return [item if isinstance(item, str) else item.text for item in items]


def _require_text(step: Any, what: str) -> str:
    if not isinstance(step, str):
        # Every text handler calls a str method (or re) on the step first: it raises.
        raise DecodeError(f"a {what} step must be text, not {type(step).__name__}")
    return step


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise DecodeError(f"not JSON: {exc}") from None


def _fc_pairs(calls: list, separator: str = ",", decode_strings: bool = True) -> Items:
    """``[{name: arguments}, ...]``; string arguments are JSON text when ``decode_strings``."""
    out: Items = []
    for call in calls:
        if not isinstance(call, dict):
            raise DecodeError(f"an FC call must be an object, not {type(call).__name__}")
        for name, arguments in call.items():
            if decode_strings and type(arguments) is str:
                arguments = _json(arguments)
            out.append(_render(name, arguments, separator))
    return out


def _name_arguments(calls: list) -> Items:
    """xLAM-style ``{"name": ..., "arguments": {...}}`` objects, leniently: other
    elements are skipped, a missing name is ``""`` and missing arguments ``{}``."""
    out: Items = []
    for call in calls:
        if isinstance(call, dict):
            out.append(_render(call.get("name", ""), call.get("arguments", {}), ", "))
    return out


def _name_arguments_strict(calls: list, arguments_key: str = "arguments") -> Items:
    """``{"name": ..., "<arguments_key>": {...}}`` objects; anything else fails the step."""
    out: Items = []
    for call in calls:
        try:
            name, arguments = call["name"], call[arguments_key]
        except (KeyError, TypeError, IndexError) as exc:
            raise DecodeError(f"not a {{'name', '{arguments_key}'}} object: {exc!r}") from None
        out.append(_render(name, arguments, ","))
    return out


def _as_list(value: Any) -> list:
    return value if isinstance(value, list) else [value]


# ---------------------------------------------------------------- FC (list) steps


def items_fc_list(step: Any) -> Items:
    """Nova, Arch, Granite 3 FC, Phi FC, Mistral FC: ``convert_to_function_call`` on a
    list only (a lone object or text fails, unlike ``fc``)."""
    if type(step) is not list:
        raise DecodeError(f"the model did not return a list of function calls: {type(step).__name__}")
    return _fc_pairs(step)


def items_gemini_fc(step: Any) -> Items:
    """Gemini FC: ``[{name: {arguments}}]``; arguments are never JSON text, a lone
    object is iterated by key (so it fails unless empty), and so is text."""
    if isinstance(step, (str, dict)):
        if len(step) == 0:
            return []
        raise DecodeError(f"a Gemini FC step must be a list, not {type(step).__name__}")
    if not isinstance(step, list):
        raise DecodeError(f"a Gemini FC step must be a list, not {type(step).__name__}")
    return _fc_pairs(step, decode_strings=False)


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
        out.append(_render(name, parameters, ","))
    return out


def items_mining(step: Any) -> Items:
    """Mining / DM-Cito: a list of xLAM objects as data; non-objects are skipped."""
    if isinstance(step, dict):
        return []  # iterated by key: no element is an object
    if not isinstance(step, (list, str, tuple)):
        raise DecodeError(f"a step must be a list, not {type(step).__name__}")
    return _name_arguments(list(step))


def items_undecodable(step: Any) -> Items:
    """Gorilla, Nexus (and the base handler): the reference passes its tag flag as the
    return format, so ``ast_parse`` rejects every step ("Unsupported language: False")."""
    raise DecodeError("the reference handler decodes no step (Unsupported language: False)")


# ------------------------------------------------------------- JSON text steps


def items_bitagent(step: Any) -> Items:
    """BitAgent: one JSON value, a list of (or a single) ``{"name", "arguments"}``."""
    return _name_arguments_strict(_as_list(_json(_require_text(step, "BitAgent"))))


def items_falcon(step: Any) -> Items:
    """Falcon 3 FC: JSON after the first ``<tool_call>`` (up to ``</tool_call>``),
    optionally in a ```json fence."""
    text = _require_text(step, "Falcon")
    if "<tool_call>" not in text:
        raise DecodeError("no <tool_call> in the step")
    body = text.split("<tool_call>")[1].split("</tool_call>")[0].strip()
    if body.startswith("```") and body.endswith("```"):
        body = body.strip("`").strip()
        if body.startswith("json"):
            body = body[4:].strip()
    return _name_arguments_strict(_as_list(_json(body)))


_QWEN_BLOCK = re.compile(r"<tool_call>\n(.*?)\n</tool_call>", re.DOTALL)


def items_qwen_tool_call(step: Any) -> Items:
    """Qwen FC, Granite 4, Nanbeige FC, Pelican-VL FC: every ``<tool_call>\\n{json}\\n</tool_call>``
    block; blocks that are not JSON are dropped; every kept block must be an object with
    ``name`` and ``arguments`` (arguments may be JSON text)."""
    text = _require_text(step, "<tool_call>")
    blocks = []
    for block in _QWEN_BLOCK.findall(text):
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
    return _fc_pairs(pairs)


def items_hammer(step: Any) -> Items:
    """Hammer: fences removed, then a JSON list of xLAM objects or ``{"tool_calls": ...}``;
    text that is not JSON, and non-objects, decode to nothing."""
    text = _require_text(step, "Hammer").replace("```", "")
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
    return _name_arguments(_as_list(calls))


def items_glm(step: Any) -> Items:
    """GLM-4 (local): the first line is the name, the second the JSON arguments; a single
    line is iterated as an FC list (so it fails unless empty)."""
    lines = _require_text(step, "GLM").split("\n")
    if len(lines) == 1:
        if lines[0] == "":
            return []
        raise DecodeError("a GLM step needs a name line and an arguments line")
    return _fc_pairs([{lines[0]: lines[1]}])


def items_granite(step: Any) -> Items:
    """Granite 20B function calling: parts split on ``<function_call>``; a JSON part is a
    call (``no_function`` becomes the text "No function is called"); any other part is
    kept as it is, as call text."""
    out: Items = []
    for part in _require_text(step, "Granite").split("<function_call>"):
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
        out.append(_render(name, arguments, ","))
    return out


def items_think_agent(step: Any) -> Items:
    """ThinkAgent: the JSON after ``</think>`` (quotes swapped to ``"``) is iterated, but
    each element is formatted to text and then used as a mapping, so any element fails
    the step; only an empty value (or no ``</think>``) decodes, to nothing."""
    text = _require_text(step, "ThinkAgent").strip().replace("'", '"')
    parts = text.split("</think>", 1)
    value = _json(parts[1].strip() if len(parts) > 1 else "[]")
    if isinstance(value, (list, dict, str)) and len(value) == 0:
        return []
    raise DecodeError("the reference's ThinkAgent decoding fails on any call")


def items_llama_python_tag(step: Any) -> Items:
    """Llama 3.1 FC: ``<|python_tag|>`` removed; with a ``;`` the parts are JSON objects,
    otherwise the text is a Python literal (the reference ``eval``s it: see
    :func:`checker.decoders_python.literal_value`); objects carry ``name`` and ``parameters``."""
    text = _require_text(step, "Llama").replace("<|python_tag|>", "")
    if ";" in text:
        calls: Any = [_json(part) for part in text.split(";")]
    else:
        from bfcl_safe.checker.decoders_python import literal_value

        calls = literal_value(text)
        if type(calls) is dict:
            calls = [calls]
        if not isinstance(calls, (list, tuple, str, set, frozenset, bytes)):
            raise DecodeError(f"{type(calls).__name__} is not a list of calls")
    return _name_arguments_strict(list(calls), "parameters")


_MINICPM_THOUGHT = ("<|thought_start|>", "<|thought_end|>")
_MINICPM_TOOL = ("<|tool_call_start|>", "<|tool_call_end|>")


def items_minicpm(step: Any) -> Items:
    """MiniCPM3 FC: Python statements between ``<|tool_call_start|>`` and the last
    ``<|tool_call_end|>`` (after the thought), optionally fenced; each statement's value
    must be a call. Any parse or resolve failure decodes to nothing (the reference
    catches everything there); a misplaced start token fails the step."""
    text = _require_text(step, "MiniCPM")
    start, end = _MINICPM_THOUGHT
    if end in text and start in text:
        thought, text = text.rsplit(end, 1)
        if start not in thought:
            raise DecodeError("<|thought_start|> after the last <|thought_end|>")
    start, end = _MINICPM_TOOL
    if not (start in text and end in text):
        return []
    calls_text = text.rsplit(end, 1)[0]
    if start not in calls_text:
        raise DecodeError("<|tool_call_start|> after the last <|tool_call_end|>")
    calls_text = calls_text.split(start, 1)[1].strip()
    if calls_text.startswith("```"):
        calls_text = calls_text.lstrip("`").strip()
        if calls_text.startswith("python"):
            calls_text = calls_text.lstrip("python").strip()
    if calls_text.endswith("```"):
        calls_text = calls_text.rstrip("`").strip()
    from bfcl_safe.checker.decoders_python import statement_calls

    return [_render(name, arguments, ", ") for name, arguments in statement_calls(calls_text)]


# -------------------------------------------------------------- FunctionGemma


_GEMMA_CALL = re.compile(r"<start_function_call>(.*?)<end_function_call>", re.DOTALL)
_GEMMA_ESCAPE = "<escape>"
_GEMMA_PREFIX = "call:"


def _gemma_scalar(text: str) -> Any:
    """An unquoted FunctionGemma value: null/true/false, a number as ``int()`` then
    ``float()`` read it, else the text itself."""
    named = {"null": None, "true": True, "false": False}
    if text in named:
        return named[text]
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


class _GemmaArguments:
    """FunctionGemma's argument notation (``{key:<escape>text<escape>,n:[1,2]}``), read by
    the same tolerant state machine as the reference: never fails, drops what does not fit.

    State: ``open`` is the stack of containers being filled (a list at the bottom that
    collects top-level values); ``keys`` holds one pending key per opened ``{`` (lists
    get none, and a ``]`` closes whatever is on top, so the two can drift apart, as in
    the reference); ``loose`` is the last value put in a dict with no key waiting,
    which a following ``:`` turns into the key; ``chars`` is the unquoted text so far.
    """

    def __init__(self) -> None:
        self.top: list = []
        self.open: list = [self.top]
        self.keys: list = []
        self.loose: Any = None
        self.chars: list[str] = []

    def read(self, text: str) -> dict:
        position = 0
        while position < len(text):
            if text.startswith(_GEMMA_ESCAPE, position):
                position = self._escaped(text, position)
                continue
            char = text[position]
            if char in "{}[]:,":
                self._flush()
                self._punctuation(char)
            else:
                self.chars.append(char)
            position += 1
        self._flush()
        first = self.top[0] if self.top else None
        return first if isinstance(first, dict) else {}

    def _escaped(self, text: str, position: int) -> int:
        begin = position + len(_GEMMA_ESCAPE)
        close = text.find(_GEMMA_ESCAPE, begin)
        if close < 0:  # unterminated: the rest, token included, is the value
            value, after = text[position:], len(text)
        else:
            value, after = text[begin:close], close + len(_GEMMA_ESCAPE)
        self._flush()
        self._put(value)
        return after

    def _flush(self) -> None:
        if self.chars:
            word = "".join(self.chars).strip()
            self.chars = []
            if word:
                self._put(_gemma_scalar(word))

    def _put(self, value: Any) -> None:
        target = self.open[-1]
        if isinstance(target, list):
            target.append(value)
            return
        key = self.keys[-1] if self.keys else None
        if key is None:
            self.loose = value
        else:
            target[key] = value
            self.keys[-1] = None

    def _punctuation(self, char: str) -> None:
        if char in "{[":
            container: Any = {} if char == "{" else []
            self._put(container)
            self.open.append(container)
            if char == "{":
                self.keys.append(None)
        elif char in "}]":
            if len(self.open) > 1:
                self.open.pop()
                if char == "}" and self.keys:
                    self.keys.pop()
        elif char == ":":
            if self.loose is not None:
                key = str(self.loose)
                self.loose = None
                if isinstance(self.open[-1], dict) and self.keys:
                    self.keys[-1] = key
            return
        self.loose = None


def items_functiongemma(step: Any) -> Items:
    """FunctionGemma: ``<start_function_call>call:name{args}<end_function_call>`` blocks;
    a block without the ``call:`` prefix is skipped, one without ``{`` has no arguments."""
    out: Items = []
    for block in _GEMMA_CALL.findall(_require_text(step, "FunctionGemma")):
        block = block.strip()
        if not block.startswith(_GEMMA_PREFIX):
            continue
        brace = block.find("{")
        if brace < 0:
            out.append(_render(block[len(_GEMMA_PREFIX):].strip(), {}, ", "))
            continue
        name = block[len(_GEMMA_PREFIX):brace].strip()
        out.append(_render(name, _GemmaArguments().read(block[brace:]), ", "))
    return out


# ------------------------------------------------- prompting-text variants


def _gemini_tool_code(step: Any) -> Any:
    """Gemini (prompting): ```tool_code fences removed, then the prompting decoder."""
    return _require_text(step, "Gemini").replace("```tool_code\n", "").replace("\n```", "")


def _phi(step: Any) -> Any:
    """Phi (prompting): a leading ```json and then a leading ```python removed."""
    text = _require_text(step, "Phi")
    if text.startswith("```json"):
        text = text[len("```json"):]
    if text.startswith("```python"):
        text = text[len("```python"):]
    return text


_NEMOTRON = re.compile(r"<TOOLCALL>(.*?)</TOOLCALL>", re.DOTALL)


def _nemotron(step: Any) -> Any:
    """Nemotron: the first ``<TOOLCALL>...</TOOLCALL>`` as prompting text (none: no call)."""
    found = _NEMOTRON.search(_require_text(step, "Nemotron"))
    return None if found is None else found.group(1)


def _prompting_variant(transform: Callable[[Any], Any]) -> tuple[Callable, Callable]:
    def decode(step: Any) -> list[Call]:
        text = transform(step)
        return [] if text is None else decode_prompting(text)

    def display(step: Any) -> list[str]:
        text = transform(step)
        return [] if text is None else display_prompting(text)

    return decode, display


# --------------------------------------------------------------------- registry


def _pair(items: Callable[[Any], Items]) -> tuple[Callable, Callable]:
    def decode(step: Any) -> list[Call]:
        return [_call(item) for item in items(step)]

    def display(step: Any) -> list[str]:
        return _texts(items(step))

    decode.__doc__ = display.__doc__ = items.__doc__
    return decode, display


HANDLER_DECODERS: dict[str, tuple[Callable[[Any], list[Call]], Callable[[Any], list[str]]]] = {
    "fc_list": _pair(items_fc_list),
    "gemini_fc": _pair(items_gemini_fc),
    "gemini_tool_code": _prompting_variant(_gemini_tool_code),
    "cohere": _pair(items_cohere),
    "mining": _pair(items_mining),
    "undecodable": _pair(items_undecodable),
    "nemotron": _prompting_variant(_nemotron),
    "phi": _prompting_variant(_phi),
    "bitagent": _pair(items_bitagent),
    "falcon": _pair(items_falcon),
    "qwen_tool_call": _pair(items_qwen_tool_call),
    "hammer": _pair(items_hammer),
    "glm": _pair(items_glm),
    "granite": _pair(items_granite),
    "think_agent": _pair(items_think_agent),
    "llama_python_tag": _pair(items_llama_python_tag),
    "minicpm": _pair(items_minicpm),
    "functiongemma": _pair(items_functiongemma),
}

DECODERS.update(HANDLER_DECODERS)
