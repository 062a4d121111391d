"""Responses API steps (issue 28): ``Episode.step`` takes ``function_call`` items, whole
``response.output`` lists (``message`` and ``reasoning`` items beside the calls; dicts or
the openai SDK's own objects) and ``Response`` objects, stores them as BFCL's Responses
handler stores them, and gives results back as ``function_call_output`` items. The same
calls give the same results, result file and verdict as through Chat Completions — and
``bfcl-safe evaluate``'s verdict on that result."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from openai.types.responses import (
    Response, ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText, ResponseReasoningItem,
)
from openai.types.responses.response_reasoning_item import Summary

from bfcl_safe.checker.play import Episode, StepInputError, TurnEnd
from bfcl_safe.integrations.session import Conversation
from tests.checker_support import CATEGORIES, dataset, every
from tests.integration_policies import MODEL, Player, evaluate_verdict, result_of, scripts


def _chat(reply: tuple[str, Any], number: int) -> dict:
    kind, value = reply
    if kind == "text":
        return {"role": "assistant", "content": value}
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"call_{number}_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        for i, (name, args) in enumerate(value)]}


def _responses(reply: tuple[str, Any], number: int) -> list[dict]:
    """The ``response.output`` a Responses model sends: reasoning first, a message beside
    the calls (BFCL ignores its text when there are calls), or only a message."""
    kind, value = reply
    reasoning = {"type": "reasoning", "id": f"rs_{number}", "summary": [{"type": "summary_text", "text": "think"}]}
    if kind == "text":
        return [reasoning, {"type": "message", "id": f"msg_{number}", "role": "assistant", "status": "completed",
                            "content": [{"type": "output_text", "text": value, "annotations": []}]}]
    return [reasoning, {"type": "message", "id": f"msg_{number}", "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": "Calling tools.", "annotations": []}]},
            *({"type": "function_call", "id": f"fc_{number}_{i}", "call_id": f"call_{number}_{i}", "name": name,
               "arguments": json.dumps(args), "status": "completed"} for i, (name, args) in enumerate(value))]


def _sdk(reply: tuple[str, Any], number: int) -> list[Any]:
    """The same output as the openai SDK's own objects."""
    kind, value = reply
    reasoning = ResponseReasoningItem(id=f"rs_{number}", type="reasoning",
                                      summary=[Summary(type="summary_text", text="think")])
    text = value if kind == "text" else "Calling tools."
    message = ResponseOutputMessage(id=f"msg_{number}", type="message", role="assistant", status="completed",
                                    content=[ResponseOutputText(type="output_text", text=text, annotations=[])])
    if kind == "text":
        return [reasoning, message]
    return [reasoning, message, *(ResponseFunctionToolCall(type="function_call", call_id=f"call_{number}_{i}",
                                                           name=name, arguments=json.dumps(args))
                                  for i, (name, args) in enumerate(value))]


FORMS = {"chat": _chat, "responses": _responses, "responses-sdk": _sdk}


def _play(entry_id: str, replies: list, form: str) -> tuple[Episode, list, list]:
    """Play ``replies`` in ``form``; the episode, the replies sent, and per step its
    results and messages."""
    player = Player({0: replies})
    episode = Episode.from_entry(entry_id, dataset(), owner=MODEL)
    steps = []
    while not episode.done:
        reply = player.next(0)
        step = episode.step(FORMS[form](reply, len(player.sent[0])))
        steps.append((step.results, list(step.messages), [c.tool_call_id for c in step.calls], step.ended))
        if step.turn_over:
            episode.end_turn()
    return episode, player.sent[0], steps


def _as_chat_messages(messages: list[dict]) -> list[dict]:
    return [{"role": "tool", "content": m["output"], "tool_call_id": m["call_id"]} for m in messages]


@pytest.mark.parametrize("category", CATEGORIES)
def test_responses_steps_play_like_chat_steps_and_score_like_evaluate(category):
    outcomes: Counter = Counter()
    disagreements = []
    for number, (entry_id, kind, replies) in enumerate(scripts([category])):
        if kind != "ground-truth" and number % (3 * every(4)):
            continue
        chat, sent, chat_steps = _play(entry_id, replies, "chat")
        forms = ["responses"] + (["responses-sdk"] if number % 4 == 0 else [])
        verdict = evaluate_verdict(entry_id, result_of(sent))
        outcomes[verdict["error_type"]] += 1
        want = chat.check_turn()
        if (want.valid, want.error_type and want.error_type.value) != (verdict["valid"], verdict["error_type"]):
            disagreements.append((entry_id, kind, "chat-vs-evaluate"))
        for form in forms:
            episode, sent_again, steps = _play(entry_id, replies, form)
            got = episode.check_turn()
            same = (got == want and episode.result() == chat.result() == result_of(sent) and sent_again == sent
                    and [s[0] for s in steps] == [s[0] for s in chat_steps]
                    and [s[2:] for s in steps] == [s[2:] for s in chat_steps]
                    and [_as_chat_messages(s[1]) for s in steps] == [s[1] for s in chat_steps]
                    and all(m["type"] == "function_call_output" for s in steps for m in s[1]))
            if not same:
                disagreements.append((entry_id, kind, form))
    print(f"{category}: verdicts {dict(outcomes)}")
    assert sum(outcomes.values()) >= 200 and len(outcomes) >= 3
    assert disagreements == []


def test_one_function_call_item_a_response_dict_and_a_response_object_are_steps():
    item = {"type": "function_call", "call_id": "c1", "name": "cd", "arguments": '{"folder": "document"}'}
    sdk_output = _sdk(("calls", [("cd", {"folder": "document"})]), 1)
    response = Response.model_construct(id="resp_1", object="response", output=sdk_output)
    for given in (item, {"object": "response", "id": "resp_1", "output": [item]}, response, sdk_output[-1]):
        episode = Episode.from_entry("multi_turn_base_0", dataset())
        step = episode.step(given)
        wanted_id = "c1" if isinstance(given, dict) else "call_1_0"
        assert step.results == ['{"current_working_directory": "document"}']
        assert list(step.messages) == [{"type": "function_call_output", "call_id": wanted_id,
                                        "output": step.results[0]}]
        assert episode.result() == [[[{"cd": '{"folder": "document"}'}]]]


def test_an_output_without_function_calls_stores_its_text_and_ends_the_turn():
    episode = Episode.from_entry("multi_turn_base_0", dataset())
    step = episode.step(_responses(("text", "All done."), 0))
    assert step.turn_over and step.ended is TurnEnd.UNDECODABLE and step.messages == ()
    assert episode.result() == [["All done."]]
    # Only reasoning: BFCL's output_text is "" — stored as such.
    episode = Episode.from_entry("multi_turn_base_0", dataset())
    step = episode.step([{"type": "reasoning", "id": "rs", "summary": []}])
    assert step.turn_over and episode.result() == [[""]]


@pytest.mark.parametrize(("output", "why"), [
    ([{"type": "function_call", "call_id": "c", "arguments": "{}"}], "no name"),
    ([{"type": "function_call", "call_id": "c", "name": "cd", "arguments": "{\"folder\": "}], "bad JSON"),
    ([{"type": "message", "role": "assistant", "content": "text, not parts"}], "content not parts"),
], ids=["no-name", "bad-json", "content-not-parts"])
def test_malformed_output_is_an_undecodable_step(output, why):
    episode = Episode.from_entry("multi_turn_base_0", dataset())
    step = episode.step(output)
    assert step.turn_over and step.ended in (TurnEnd.UNDECODABLE, TurnEnd.NO_CALLS), why
    assert step.calls == ()


def test_non_json_values_in_an_output_are_refused_before_anything_runs():
    import datetime

    episode = Episode.from_entry("multi_turn_base_0", dataset())
    item = {"type": "function_call", "call_id": "c", "name": "cd", "arguments": {"folder": datetime.date(2024, 1, 1)}}
    with pytest.raises(StepInputError, match="date"):
        episode.step([item])
    assert episode.result() == [[]] and not episode.turn_over


def test_fc_dicts_and_chat_tool_calls_are_not_taken_for_responses_items():
    # {"type": arguments} alone is an FC call of a tool named "type"; chat tool calls have
    # "type": "function" and stay chat tool calls.
    episode = Episode.from_entry("multi_turn_base_0", dataset())
    step = episode.step([{"type": "{}"}])
    assert episode.result() == [[[{"type": "{}"}]]] and step.messages == ()
    episode = Episode.from_entry("multi_turn_base_0", dataset())
    step = episode.step([{"id": "c", "type": "function", "function": {"name": "ls", "arguments": "{}"}}])
    assert step.messages[0]["role"] == "tool"


def test_a_conversation_takes_responses_output_and_gives_function_call_outputs():
    conversation = Conversation.from_entry("multi_turn_base_0", dataset())
    out = conversation.reply(_responses(("calls", [("ls", {})]), 0))
    assert [m["type"] for m in out] == ["function_call_output"] and out[0]["call_id"] == "call_0_0"
    out = conversation.reply(_responses(("text", "Done."), 1))
    assert out == conversation.episode.messages()  # the next turn's user messages
    assert conversation.tools(format="openai-responses") == conversation.episode.tools(format="openai-responses")


def test_chat_tool_calls_as_sdk_objects_are_chat_steps_not_responses_items():
    from openai.types.chat import ChatCompletionMessageToolCall
    from openai.types.chat.chat_completion_message_tool_call import Function

    calls = [ChatCompletionMessageToolCall(id="call_0", type="function",
                                           function=Function(name="cd", arguments='{"folder": "document"}'))]
    episode = Episode.from_entry("multi_turn_base_0", dataset())
    step = episode.step(calls)
    assert step.messages == ({"role": "tool", "content": step.results[0], "tool_call_id": "call_0"},)
    assert episode.result() == [[[{"cd": '{"folder": "document"}'}]]]
