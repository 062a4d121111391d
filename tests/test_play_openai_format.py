"""checker.openai_format against the reference's own inference code (pinned wheel).

The tool lists must be identical — same keys, same order, same text — to what
``convert_to_tool(..., GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS)`` (and the
Responses style) gives for the docs BFCL inference holds at each turn of every entry of
the four multi-turn categories, held-out docs included.
"""

from __future__ import annotations

import copy
import json
from types import SimpleNamespace

import pytest

from bfcl_safe.checker.openai_format import (
    ADDITIONAL_FUNCTION_PROMPT, PYTHON_SYNTAX_HINT, ToolFormatError, openai_tools, prompting_results_message,
    reply_step, responses_step, tool_messages, tools_for_turn, turn_messages,
)
from tests.checker_support import CATEGORIES, dataset
from tests.refenv import import_reference


def _reference_turns(category: str):
    """Per entry of ``category``: BFCL inference's entry and, per turn, its tool docs list
    as the FC loop holds it when it compiles the tools for that turn."""
    utils = import_reference("utils")
    for entry in utils.load_dataset_entry(category):
        entry = copy.deepcopy(entry)
        holdout = entry.get("missed_function", {})
        per_turn = []
        for turn in range(len(entry["question"])):
            if str(turn) in holdout:
                entry["function"].extend(holdout[str(turn)])
            per_turn.append(copy.deepcopy(entry["function"]))
        yield entry["id"], per_turn


@pytest.mark.parametrize("category", CATEGORIES)
def test_tools_for_every_entry_and_turn_equal_the_reference_converter(category):
    handler_utils = import_reference("model_handler.utils")
    enums = import_reference("constants.enums")
    mappings = import_reference("constants.type_mappings")
    styles = {"openai-completions": enums.ModelStyle.OPENAI_COMPLETIONS,
              "openai-responses": enums.ModelStyle.OPENAI_RESPONSES}
    ds = dataset()
    turns_checked = entries = with_missed = 0
    for entry_id, per_turn in _reference_turns(category):
        prompt = ds.prompt_entry(entry_id)
        entries += 1
        with_missed += bool(prompt.get("missed_function"))
        for turn, functions in enumerate(per_turn):
            for style, model_style in styles.items():
                expected = handler_utils.convert_to_tool(functions, mappings.GORILLA_TO_OPENAPI, model_style)
                ours = tools_for_turn(prompt, turn, style=style)
                assert json.dumps(ours) == json.dumps(expected), f"{entry_id} turn {turn} {style}"
            turns_checked += 1
    assert entries == 200 and turns_checked >= 600
    assert (with_missed > 0) == (category == "multi_turn_miss_func")


def test_the_hint_and_the_missed_turn_messages_are_bfcls():
    prompts = import_reference("constants.default_prompts")
    utils = import_reference("utils")
    assert prompts.DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC == ADDITIONAL_FUNCTION_PROMPT
    assert utils._get_language_specific_hint("multi_turn_base") == PYTHON_SYNTAX_HINT
    ds = dataset()
    prompt = ds.prompt_entry("multi_turn_miss_func_0")
    (turn, held), = ((int(t), docs) for t, docs in prompt["missed_function"].items())
    assert turn_messages(prompt, turn) == [{"role": "user", "content": ADDITIONAL_FUNCTION_PROMPT}]
    assert turn_messages(prompt, turn, "prompting") == [{
        "role": "user",
        "content": prompts.DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_PROMPTING.format(functions=held)}]
    assert turn_messages(prompt, 0) == prompt["question"][0]
    with pytest.raises(ValueError, match="mode must be one of"):
        turn_messages(prompt, 0, "chat")


def _tool_call(name, arguments, call_id):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


@pytest.mark.parametrize(
    "message, step, ids",
    [
        pytest.param({"role": "assistant", "content": None, "tool_calls": [_tool_call("ls", "{}", "c1")]},
                     [{"ls": "{}"}], ["c1"], id="dict-message"),
        pytest.param(SimpleNamespace(content="", tool_calls=[SimpleNamespace(
            id="c2", function=SimpleNamespace(name="cd", arguments='{"folder": "x"}'))]),
                     [{"cd": '{"folder": "x"}'}], ["c2"], id="sdk-object"),
        pytest.param({"role": "assistant", "content": "Done.", "tool_calls": None}, "Done.", [], id="no-tool-calls"),
        pytest.param({"role": "assistant", "content": "Done."}, "Done.", [], id="tool-calls-missing"),
        pytest.param({"role": "assistant", "content": "x", "tool_calls": []}, [], [], id="empty-tool-calls"),
        pytest.param({"role": "assistant", "content": "x", "tool_calls": [{"id": "c"}]}, "x", [], id="malformed-call"),
        pytest.param({"tool_calls": 5}, None, [], id="nothing-readable"),
    ],
)
def test_reply_step_is_what_bfcls_handler_stores(message, step, ids):
    assert reply_step(message) == (step, ids)


def test_tool_messages_pair_results_and_ids_like_zip():
    assert tool_messages(["a", "b"], ["1", "2", "3"]) == [
        {"role": "tool", "content": "a", "tool_call_id": "1"}, {"role": "tool", "content": "b", "tool_call_id": "2"}]
    assert tool_messages(["a"], ["1"], style="openai-responses") == [
        {"type": "function_call_output", "call_id": "1", "output": "a"}]


def test_prompting_results_message_is_bfcls():
    handler_utils = import_reference("model_handler.utils")
    results, calls = ["{'a': 1}", "Error during execution: x"], ["ls(a=True)", "cd(folder='x')"]
    expected = handler_utils.format_execution_results_prompting({}, results, {"model_responses_decoded": calls})
    assert prompting_results_message(results, calls) == {"role": "user", "content": expected}


@pytest.mark.parametrize(
    "docs, path",
    [
        pytest.param(["ls"], "tool 0", id="not-an-object"),
        pytest.param([{"name": "f", "parameters": {}}], "tool 'f'.parameters", id="no-properties"),
        pytest.param([{"name": "f", "parameters": {"properties": {"x": {"type": "array", "items": {"type": "set"}}}}}],
                     "tool 'f'.parameters.properties.x.items", id="unknown-items-type"),
        pytest.param([{"name": "f", "parameters": {"properties": {"x": {"type": "float"}}}}],
                     "tool 'f'.parameters.properties.x", id="float-without-description"),
    ],
)
def test_docs_the_reference_cannot_convert_are_refused_with_where(docs, path):
    with pytest.raises(ToolFormatError) as info:
        openai_tools(docs)
    assert info.value.path == path


def test_conversion_does_not_change_its_input():
    ds = dataset()
    prompt = ds.prompt_entry("multi_turn_base_0")
    before = json.dumps(prompt["function"])
    tools_for_turn(prompt, 0)
    assert json.dumps(prompt["function"]) == before


def _text(text):
    return {"type": "output_text", "text": text, "annotations": []}


@pytest.mark.parametrize(("output", "step", "ids"), [
    # BFCL's OpenAIResponsesHandler: the function_call items in order, other items left out ...
    ([{"type": "reasoning", "summary": []}, {"type": "message", "content": [_text("hi")]},
      {"type": "function_call", "call_id": "a", "name": "ls", "arguments": "{}"},
      {"type": "function_call", "call_id": "b", "name": "cd", "arguments": '{"folder": "x"}'}],
     [{"ls": "{}"}, {"cd": '{"folder": "x"}'}], ["a", "b"]),
    # ... else the SDK's output_text: every output_text part of every message, joined
    ([{"type": "message", "content": [_text("a"), {"type": "refusal", "refusal": "no"}, _text("b")]},
      {"type": "message", "content": [_text(None), _text("c")]}], "abc", []),
    ([{"type": "reasoning", "summary": []}], "", []),
    ([], "", []),
    # unreadable (BFCL's handler would raise): no step
    ([{"type": "function_call", "call_id": "a", "arguments": "{}"}], None, []),
    ([{"summary": []}], None, []),
], ids=["calls", "text-joined", "reasoning-only", "empty", "call-without-name", "item-without-type"])
def test_responses_step_is_what_bfcls_responses_handler_stores(output, step, ids):
    assert responses_step(output) == (step, ids)


def test_tool_messages_in_the_responses_style():
    assert tool_messages(["r1", "r2"], ["a", "b"], style="openai-responses") == [
        {"type": "function_call_output", "call_id": "a", "output": "r1"},
        {"type": "function_call_output", "call_id": "b", "output": "r2"}]
