"""The chat layer the framework adapters share (bfcl_safe.integrations.session.Conversation):
played with OpenAI assistant messages, its verdict and reward equal ``bfcl-safe evaluate``'s
on the steps sent, and it records exactly those steps. Needs no extra."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from bfcl_safe.integrations import MissingExtra
from bfcl_safe.integrations.session import Conversation, assistant_message
from tests.checker_support import CATEGORIES, dataset
from tests.integration_policies import MODEL, Player, evaluate_verdict, result_of, scripts


def _message(reply, number: int) -> dict:
    kind, value = reply
    if kind == "text":
        return assistant_message(value, None)
    return assistant_message(None, [{"id": f"call_{number}_{i}", "name": name, "arguments": json.dumps(args)}
                                    for i, (name, args) in enumerate(value)])


def play(entry_id: str, replies, partial_credit: bool = False) -> tuple[Conversation, list, list[list[dict]]]:
    player = Player({0: replies})
    conversation = Conversation.from_entry(entry_id, dataset(), owner=MODEL)
    chat = list(conversation.opening())
    tools_seen = [conversation.tools()]
    while not conversation.done:
        message = _message(player.next(0), len(player.sent[0]))
        chat.append(message)
        chat.extend(conversation.reply(message))
        if not conversation.done:
            tools_seen.append(conversation.tools())
    return conversation, player.sent[0], tools_seen


@pytest.mark.parametrize("category", CATEGORIES)
def test_conversations_agree_with_evaluate(category):
    outcomes: Counter = Counter()
    disagreements = []
    for number, (entry_id, kind, replies) in enumerate(scripts([category])):
        if kind != "ground-truth" and number % 5:
            continue  # every 5th mutated script (the verifiers and Inspect tests take others)
        conversation, sent, _ = play(entry_id, replies)
        result = result_of(sent)
        verdict = evaluate_verdict(entry_id, result)
        outcomes[(kind == "ground-truth", verdict["error_type"])] += 1
        summary = conversation.summary()
        turns = conversation.turn_count
        got = (summary["valid"], summary["error_type"], summary["turns_passed"], summary["first_failing_turn"],
               conversation.reward(), conversation.reward(partial_credit=True), conversation.result())
        want = (verdict["valid"], verdict["error_type"], verdict["turns_passed"], verdict["first_failing_turn"],
                1.0 if verdict["valid"] else 0.0, 1.0 if verdict["valid"] else verdict["turns_passed"] / turns, result)
        if got != want or (kind == "ground-truth" and not verdict["valid"]):
            disagreements.append((entry_id, kind, got[:6], want[:6]))
    print(f"{category}: {sum(outcomes.values())} conversations; {dict(outcomes)}")
    assert sum(n for (truth, _), n in outcomes.items() if truth) == 200
    assert sum(outcomes.values()) >= 450
    assert disagreements == []


def test_a_reply_without_tool_calls_ends_the_turn_and_the_next_user_messages_follow():
    entry_id = "multi_turn_base_0"
    conversation = Conversation.from_entry(entry_id, dataset())
    out = conversation.reply(assistant_message("[ls()]", None))  # a call written as text is not run
    assert out == dataset().entry(entry_id)["question"][1]
    assert conversation.turn == 1 and conversation.outcomes[0].passed is False


def test_the_step_limit_force_terminates_with_tool_messages_for_the_last_step():
    conversation = Conversation.from_entry("multi_turn_base_0", dataset())
    call = [{"id": "c", "name": "ls", "arguments": "{}"}]
    for _ in range(20):
        out = conversation.reply(assistant_message(None, call))
        assert [m["role"] for m in out] == ["tool"] and not conversation.done
    out = conversation.reply(assistant_message(None, call))
    assert [m["role"] for m in out] == ["tool"] and conversation.done
    assert conversation.summary()["error_type"] == "multi_turn:force_terminated"
    assert conversation.summary()["force_terminated"] is True


def test_missing_extra_names_the_extra():
    error = MissingExtra("ray", "ray")
    assert isinstance(error, ImportError) and error.extra == "ray"
    assert "pip install 'bfcl-safe[ray]'" in str(error)


def test_areply_plays_like_reply_under_a_running_loop():
    import asyncio

    entries = [entry_id for entry_id, kind, _ in scripts(["multi_turn_miss_func"], mutants=False)][::20]
    table = {entry_id: next(r for e, _, r in scripts(["multi_turn_miss_func"], mutants=False) if e == entry_id)
             for entry_id in entries}

    async def play_async(entry_id: str) -> tuple[list, dict]:
        player = Player({0: table[entry_id]})
        conversation = Conversation.from_entry(entry_id, dataset(), owner=MODEL)
        chat = list(conversation.opening())
        while not conversation.done:
            message = _message(player.next(0), len(player.sent[0]))
            chat.append(message)
            chat.extend(await conversation.areply(message))
        return chat, conversation.summary()

    async def all_of_them() -> list:
        return await asyncio.gather(*(play_async(entry_id) for entry_id in entries))

    for (chat, summary), entry_id in zip(asyncio.run(all_of_them()), entries):
        player = Player({0: table[entry_id]})
        conversation = Conversation.from_entry(entry_id, dataset(), owner=MODEL)
        want = list(conversation.opening())
        while not conversation.done:
            message = _message(player.next(0), len(player.sent[0]))
            want.append(message)
            want.extend(conversation.reply(message))
        assert chat == want and summary == conversation.summary() and summary["valid"], entry_id
