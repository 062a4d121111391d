"""BFCL multi-turn in the OpenAI chat format, exactly as BFCL's own inference does it.

What BFCL's OpenAI-compatible FC handler (``OpenAICompletionsHandler``, model style
``openai-completions``; also ``openai-responses``) sends to a model and reads back, for
the multi-turn categories, as data functions — no client, no network:

- the tool docs an entry has at a turn (:func:`inference_docs`, :func:`docs_at_turn`):
  the involved classes' docs with BFCL's Python-syntax hint appended to each
  description, minus the held-out docs of ``multi_turn_miss_func``, which are appended
  (without the hint: BFCL removes them before it adds hints) when their turn starts;
- those docs as the OpenAI ``tools`` list (:func:`openai_tools`, :func:`tools_for_turn`):
  BFCL's ``convert_to_tool`` with its ``GORILLA_TO_OPENAPI`` type map — type names
  mapped, a missing or unknown type becomes ``"string"``, ``float`` gets
  ``"format": "float"`` and a sentence in its description, ``parameters.type`` becomes
  ``"object"``, the ``response`` key is kept, ``.`` in names becomes ``_``;
- the user messages of a turn (:func:`turn_messages`; a held-out turn gets BFCL's
  "updated some more functions" message);
- a model reply as a result-file step (:func:`reply_step`: the tool calls as
  ``[{name: arguments}]``, or the reply's text when it has no ``tool_calls``) and its
  tool-call ids;
- a Responses API answer's ``output`` items as a result-file step (:func:`responses_step`:
  its ``function_call`` items as ``[{name: arguments}]`` and their ``call_id``s, else its
  output text — BFCL's ``OpenAIResponsesHandler``);
- what goes back to the model after the calls ran (:func:`tool_messages`: one
  ``{"role": "tool", "content", "tool_call_id"}`` per result, or for the Responses API one
  ``{"type": "function_call_output", "call_id", "output"}``, paired with the ids as
  ``zip`` pairs them; :func:`prompting_results_message` for prompting models).

Public API (used by the ``generate`` command and the framework integrations)::

    from bfcl_safe.checker.openai_format import (
        inference_docs, docs_at_turn, openai_tools, tools_for_turn, turn_messages,
        reply_step, tool_messages, prompting_results_message, ToolFormatError)

    docs, missed = inference_docs(dataset.prompt_entry(entry_id))
    tools = openai_tools(docs_at_turn(docs, missed, turn))   # == tools_for_turn(prompt, turn)
    step, ids = reply_step(response.choices[0].message)      # dict or object
    messages += tool_messages(results, ids)

Every function returns new containers (callers may mutate them) and reads its inputs
only. Tested against the wheel's own ``convert_to_tool`` for every entry and turn of
the four multi-turn categories (tests/test_play_openai_format.py).
"""

from __future__ import annotations

import copy
from typing import Any, Iterable, Mapping, Sequence

from bfcl_safe.interp.errors import BfclSafeError

#: BFCL appends this to every tool description of a Python category before inference
#: (``add_language_specific_hint_to_function_doc``); fidelity needs the exact text.
PYTHON_SYNTAX_HINT = " Note that the provided function is in Python 3 syntax."

#: The user message of a held-out turn in FC inference
#: (BFCL's ``DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC``). Prompting inference
#: puts the ``str()`` of the list of new docs, then a newline, before it.
ADDITIONAL_FUNCTION_PROMPT = "I have updated some more functions you can choose from. What about now?"

#: BFCL's doc type names -> OpenAPI (JSON Schema) type names, as BFCL maps them for
#: OpenAI-style models. A property type not in the map becomes ``"string"``.
OPENAPI_TYPES: Mapping[str, str] = {
    "integer": "integer", "number": "number", "float": "number", "string": "string",
    "boolean": "boolean", "bool": "boolean", "array": "array", "list": "array",
    "dict": "object", "object": "object", "tuple": "array", "any": "string",
    "byte": "integer", "short": "integer", "long": "integer", "double": "number",
    "char": "string", "ArrayList": "array", "Array": "array", "HashMap": "object",
    "Hashtable": "object", "Queue": "array", "Stack": "array", "Any": "string",
    "String": "string", "Bigint": "integer",
}

#: Appended to the description of a ``float`` property (BFCL does it for OpenAPI styles).
FLOAT_NOTE = " This is a float type value."

#: The tool-list layouts supported: Chat Completions (``{"type": "function",
#: "function": doc}``) and the Responses API (the doc itself with ``"type": "function"``).
STYLES = ("openai-completions", "openai-responses")

MESSAGE_MODES = ("fc", "prompting")


class ToolFormatError(BfclSafeError, ValueError):
    """A tool doc the conversion cannot represent (where BFCL's converter would fail:
    a doc that is not an object, parameters without ``properties``, an array's
    ``items`` without a known ``type``). ``path`` names the place in the docs."""

    def __init__(self, reason: str, path: str):
        self.reason = reason
        self.path = path
        super().__init__(f"{path}: {reason}")

    def __reduce__(self):
        return (type(self), (self.reason, self.path))


# --------------------------------------------------------------------------- docs per turn


def missed_docs(prompt: Mapping[str, Any]) -> dict[int, list[dict]]:
    """``{turn: docs held out until then}`` of a prompt entry (``Dataset.prompt_entry``)."""
    return {int(turn): list(docs) for turn, docs in (prompt.get("missed_function") or {}).items()}


def inference_docs(prompt: Mapping[str, Any]) -> tuple[list[dict], dict[int, list[dict]]]:
    """The tool docs of a prompt entry (``Dataset.prompt_entry``) as BFCL inference holds
    them: ``(docs, {turn: held-out docs})``; each of ``docs`` has
    :data:`PYTHON_SYNTAX_HINT` appended to its description, the held-out docs do not.
    Copies: the prompt entry is not changed."""
    docs = [copy.deepcopy(_hinted(doc)) for doc in prompt.get("function") or ()]
    return docs, {turn: copy.deepcopy(held) for turn, held in missed_docs(prompt).items()}


def _hinted(doc: Any) -> Any:
    """``doc`` with the hint appended to its description (a shallow copy), or ``doc``."""
    if isinstance(doc, dict) and isinstance(doc.get("description"), str):
        return {**doc, "description": doc["description"] + PYTHON_SYNTAX_HINT}
    return doc


def docs_at_turn(docs: Sequence[dict], missed: Mapping[int, Sequence[dict]], turn: int) -> list[dict]:
    """The docs a model has at ``turn``: ``docs``, then the held-out docs of each turn up
    to ``turn`` in turn order (BFCL extends its list when such a turn starts). A copy."""
    out = list(docs)
    for held_turn in sorted(missed):
        if held_turn <= turn:
            out.extend(missed[held_turn])
    return copy.deepcopy(out)


def turn_messages(prompt: Mapping[str, Any], turn: int, mode: str = "fc") -> list[dict]:
    """The user messages BFCL inference sends at ``turn`` of a prompt entry: the entry's
    question for that turn, except at a held-out turn of ``multi_turn_miss_func`` (whose
    question is empty), where it sends :data:`ADDITIONAL_FUNCTION_PROMPT` — in
    ``prompting`` mode preceded by the ``str()`` of the new docs' list and a newline.
    (Prompting inference also puts a system prompt before the first turn's messages;
    that is not included.)"""
    return messages_at_turn(prompt["question"], missed_docs(prompt), turn, mode)


def messages_at_turn(question: Sequence[Sequence[dict]], missed: Mapping[int, Sequence[dict]], turn: int,
                     mode: str = "fc") -> list[dict]:
    """:func:`turn_messages` from an entry's ``question`` turns and its held-out docs
    (:func:`missed_docs`). A copy."""
    if mode not in MESSAGE_MODES:
        raise ValueError(f"mode must be one of {', '.join(MESSAGE_MODES)}, not {mode!r}")
    if turn in missed:
        text = ADDITIONAL_FUNCTION_PROMPT if mode == "fc" else f"{list(missed[turn])}\n{ADDITIONAL_FUNCTION_PROMPT}"
        return [{"role": "user", "content": text}]
    return copy.deepcopy(list(question[turn]))


# --------------------------------------------------------------------------- tool schemas


def _cast_properties(properties: Any, path: str) -> dict:
    """BFCL's property-type conversion (``_cast_to_openai_type``) on a copy: types
    mapped, nested ``properties`` and ``items`` converted to the depth BFCL converts."""
    if not isinstance(properties, dict):
        raise ToolFormatError(f"properties must be an object, not {type(properties).__name__}", path)
    for key, value in properties.items():
        where = f"{path}.{key}"
        if not isinstance(value, dict):
            raise ToolFormatError(f"a property must be an object, not {type(value).__name__}", where)
        if "type" not in value:
            value["type"] = "string"
        else:
            kind = value["type"]
            if kind == "float":
                value["format"] = "float"
                if not isinstance(value.get("description"), str):
                    raise ToolFormatError("a float property needs a text description", where)
                value["description"] += FLOAT_NOTE
            value["type"] = OPENAPI_TYPES.get(kind, "string") if isinstance(kind, str) else "string"
        if value["type"] in ("array", "object"):
            if "properties" in value:
                value["properties"] = _cast_properties(value["properties"], f"{where}.properties")
            elif "items" in value:
                items = value["items"]
                items["type"] = _mapped_item_type(items, f"{where}.items")
                if items["type"] == "array" and "items" in items:
                    items["items"]["type"] = _mapped_item_type(items["items"], f"{where}.items.items")
                elif items["type"] == "object" and "properties" in items:
                    items["properties"] = _cast_properties(items["properties"], f"{where}.items.properties")
    return properties


def _mapped_item_type(items: Any, path: str) -> str:
    # BFCL looks item types up without a fallback: an unknown one fails its conversion.
    kind = items.get("type") if isinstance(items, dict) else None
    if not isinstance(kind, str) or kind not in OPENAPI_TYPES:
        raise ToolFormatError(f"an items type must be one of BFCL's type names, not {kind!r}", path)
    return OPENAPI_TYPES[kind]


def openai_tools(docs: Iterable[Mapping[str, Any]], *, style: str = "openai-completions") -> list[dict]:
    """``docs`` (BFCL tool docs) as the OpenAI ``tools`` list BFCL sends, in ``style``
    (one of :data:`STYLES`). New dicts; the docs are not changed."""
    if style not in STYLES:
        raise ValueError(f"style must be one of {', '.join(STYLES)}, not {style!r}")
    tools = []
    for index, doc in enumerate(docs):
        where = f"tool {index}"
        if not isinstance(doc, Mapping):
            raise ToolFormatError(f"a tool doc must be an object, not {type(doc).__name__}", where)
        item = copy.deepcopy(dict(doc))
        name = item.get("name")
        if isinstance(name, str):
            # OpenAI tool names allow no "."; BFCL replaces it.
            item["name"] = name.replace(".", "_")
            where = f"tool {name!r}"
        parameters = item.get("parameters")
        if not isinstance(parameters, dict) or "properties" not in parameters:
            raise ToolFormatError("parameters must be an object with properties", f"{where}.parameters")
        parameters["type"] = "object"
        parameters["properties"] = _cast_properties(parameters["properties"], f"{where}.parameters.properties")
        if style == "openai-responses":
            item["type"] = "function"
            tools.append(item)
        else:
            tools.append({"type": "function", "function": item})
    return tools


def tools_for_turn(prompt: Mapping[str, Any], turn: int, *, style: str = "openai-completions") -> list[dict]:
    """The OpenAI ``tools`` list BFCL's FC inference sends at ``turn`` of a prompt entry
    (``Dataset.prompt_entry``): :func:`openai_tools` of :func:`docs_at_turn`."""
    docs = [_hinted(doc) for doc in prompt.get("function") or ()]
    for held_turn, held in sorted(missed_docs(prompt).items()):
        if held_turn <= turn:
            docs.extend(held)
    return openai_tools(docs, style=style)  # copies every doc once


# --------------------------------------------------------------------------- replies and results


def _field(value: Any, name: str) -> Any:
    """``value.name`` for an SDK object, ``value[name]`` for a dict; AttributeError else."""
    if isinstance(value, Mapping):
        try:
            return value[name]
        except KeyError:
            raise AttributeError(name) from None
    return getattr(value, name)


def reply_step(message: Any) -> tuple[Any, list[Any]]:
    """A chat reply (an assistant message as a dict, or an SDK object with
    ``.tool_calls``/``.content``) as BFCL's FC handler stores it in the result file,
    and the tool-call ids: ``([{name: arguments}, ...], [id, ...])`` when its
    ``tool_calls`` can be read (an empty list stays an empty step), else
    ``(content, [])`` — BFCL falls back to the reply's text whenever reading the tool
    calls fails (no ``tool_calls``, ``None``, a malformed call). ``(None, [])`` when the
    text cannot be read either (where BFCL's handler would stop with an exception)."""
    try:
        calls = _field(message, "tool_calls")
        step = [{_field(_field(call, "function"), "name"): _field(_field(call, "function"), "arguments")}
                for call in calls]
        ids = [_field(call, "id") for call in calls]
        return step, ids
    except Exception:  # noqa: BLE001 - BFCL's handler falls back to the text on any failure here
        try:
            return _field(message, "content"), []
        except Exception:  # noqa: BLE001 - no readable text either: nothing (it does not decode)
            return None, []


#: The ``type`` of the Responses API's output items that matter to BFCL: its handler keeps the
#: ``function_call`` items as the step (and falls back to the ``output_text`` of the
#: ``message`` items when there are none); every other item (``reasoning``, built-in tool
#: calls, ...) is left out of the step, as BFCL leaves it out.
RESPONSES_CALL_TYPE = "function_call"
RESPONSES_MESSAGE_TYPE = "message"


def output_text(output: Iterable[Any]) -> str:
    """The Responses SDK's ``Response.output_text`` of an output list: the ``text`` of every
    ``output_text`` content part of its ``message`` items, joined (``""`` when none)."""
    texts = []
    for item in output:
        if _field(item, "type") == RESPONSES_MESSAGE_TYPE:
            for part in _field(item, "content") or ():
                if _field(part, "type") == "output_text":
                    text = _field(part, "text")
                    if text is not None:
                        texts.append(text)
    return "".join(texts)


def responses_step(output: Iterable[Any]) -> tuple[Any, list[Any]]:
    """A Responses API answer's ``output`` items (dicts or SDK objects) as BFCL's
    Responses handler (``OpenAIResponsesHandler``) stores it in the result file, and the
    call ids: ``([{name: arguments}, ...], [call_id, ...])`` for its ``function_call``
    items, else ``(output_text, [])`` (:func:`output_text`); ``(None, [])`` when the
    items cannot be read (where BFCL's handler would stop with an exception), as
    :func:`reply_step` does."""
    try:
        items = list(output)
        calls = [item for item in items if _field(item, "type") == RESPONSES_CALL_TYPE]
        if calls:
            return ([{_field(call, "name"): _field(call, "arguments")} for call in calls],
                    [_field(call, "call_id") for call in calls])
        return output_text(items), []
    except Exception:  # noqa: BLE001 - as reply_step: an unreadable answer is an undecodable step
        return None, []


def tool_messages(results: Sequence[str], tool_call_ids: Sequence[Any], *,
                  style: str = "openai-completions") -> list[dict]:
    """The messages BFCL's FC handler appends after a step ran: per result (paired with
    the ids as ``zip`` pairs them: extra results or ids are dropped)
    ``{"role": "tool", "content": result, "tool_call_id": id}``, or for the Responses
    API ``{"type": "function_call_output", "call_id": id, "output": result}``."""
    if style not in STYLES:
        raise ValueError(f"style must be one of {', '.join(STYLES)}, not {style!r}")
    if style == "openai-responses":
        return [{"type": "function_call_output", "call_id": call_id, "output": result}
                for result, call_id in zip(results, tool_call_ids)]
    return [{"role": "tool", "content": result, "tool_call_id": call_id}
            for result, call_id in zip(results, tool_call_ids)]


def prompting_results_message(results: Sequence[str], calls: Sequence[str]) -> dict:
    """The user message BFCL's prompting handlers append after a step ran: the
    ``repr()`` of ``[{"role": "tool", "name": call, "content": result}, ...]``, ``call``
    being each decoded call's text (paired as ``zip`` pairs them)."""
    return {"role": "user", "content": repr([{"role": "tool", "name": call, "content": result}
                                             for result, call in zip(results, calls)])}


__all__ = [
    "ADDITIONAL_FUNCTION_PROMPT", "FLOAT_NOTE", "MESSAGE_MODES", "OPENAPI_TYPES", "PYTHON_SYNTAX_HINT",
    "STYLES", "ToolFormatError", "docs_at_turn", "inference_docs", "messages_at_turn", "missed_docs", "openai_tools",
    "output_text", "prompting_results_message", "reply_step", "responses_step", "tool_messages", "tools_for_turn",
    "turn_messages",
]
