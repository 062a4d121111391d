"""The verifiers environment (bfcl_safe.integrations.verifiers), played offline through
verifiers' own rollout code (``Environment.run_rollout``: MultiTurnEnv's loop, its OpenAI
chat-completions client adapter, its rubric) with a fake OpenAI client replaying scripts:
the reward equals ``bfcl-safe evaluate``'s verdict on the steps the fake model sent, for
the ground truth of all 800 entries and for mutated scripts; the tools offered at each
call are the OpenAI tools BFCL sends at that turn."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from functools import lru_cache
from typing import Any

import pytest

from openai.types.chat import ChatCompletion  # noqa: E402  (the verifiers extra is in the test extra: no skip)
from verifiers.clients import OpenAIChatCompletionsClient  # noqa: E402

from bfcl_safe.checker.openai_format import tools_for_turn  # noqa: E402
from bfcl_safe.integrations.verifiers import load_environment  # noqa: E402
from tests.checker_support import CATEGORIES, dataset, every  # noqa: E402
from tests.integration_policies import (  # noqa: E402
    MODEL, Player, evaluate_verdict, reference_error_type, result_of, scripts,
)


class ScriptedClient(OpenAIChatCompletionsClient):
    """verifiers' own Chat Completions client over a fake model: every call returns the
    next reply of the rollout's script (``info["script"]``) as an OpenAI ChatCompletion,
    and records the tools it was offered."""

    def __init__(self, player: Player):
        super().__init__(object())
        self.player = player
        self.offered: dict[Any, list[list[dict]]] = {key: [] for key in player.table}
        self.turns: dict[Any, list[int]] = {key: [] for key in player.table}

    async def get_native_response(self, prompt, model, sampling_args, tools=None, **kwargs):
        state = kwargs["state"]
        key = state["info"]["script"]
        self.offered[key].append(json.loads(json.dumps(tools or [])))
        self.turns[key].append(state["bfcl"].turn)
        kind, value = self.player.next(key)
        number = len(self.player.sent[key])
        message: dict[str, Any] = {"role": "assistant", "content": value if kind == "text" else None}
        if kind == "calls":
            message["tool_calls"] = [
                {"id": f"call_{number}_{i}", "type": "function",
                 "function": {"name": name, "arguments": json.dumps(args)}}
                for i, (name, args) in enumerate(value)]
        return ChatCompletion.model_validate({
            "id": f"fake-{number}", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if kind == "calls" else "stop"}]})


def _play(table: dict[Any, tuple[str, list]], env) -> tuple[dict, ScriptedClient]:
    """Run one rollout per script through ``env.run_rollout``; {key: RolloutOutput}."""
    player = Player({key: replies for key, (_, replies) in table.items()})
    client = ScriptedClient(player)
    inputs = {row["info"] if isinstance(row["info"], str) else json.dumps(row["info"]): row
              for row in env.get_eval_dataset().to_list()}

    async def run_all():
        outputs = {}
        for key, (entry_id, _) in table.items():
            row = dict(inputs[json.dumps({"id": entry_id})])
            row["info"] = json.dumps({"id": entry_id, "script": key})
            outputs[key] = await env.run_rollout(row, client, "fake-model", {})
        return outputs

    return asyncio.run(run_all()), client


@lru_cache(maxsize=None)
def _tools_text(entry_id: str, turn: int) -> str:
    return json.dumps(tools_for_turn(dataset().prompt_entry(entry_id), turn))


def _openai_tools_without_response(entry_id: str, turn: int) -> list[dict]:
    tools = json.loads(_tools_text(entry_id, turn))
    return [{"type": "function", "function": {k: v for k, v in t["function"].items() if k != "response"}}
            for t in tools]


@pytest.mark.parametrize("category", CATEGORIES)
def test_ground_truth_rollouts_get_reward_one_and_equal_evaluate(category):
    env = load_environment(categories=[category], dataset=dataset(), owner=MODEL)
    table = {i: (entry_id, replies) for i, (entry_id, _, replies)
             in enumerate(scripts([category], mutants=False)) if i % every(5) == 0}  # FULL: all 200
    outputs, client = _play(table, env)
    assert len(outputs) == len(table) == 200 // every(5)
    disagreements = []
    for key, (entry_id, _) in table.items():
        output = outputs[key]
        verdict = evaluate_verdict(entry_id, result_of(client.player.sent[key]))
        if output["error"] is not None or output["reward"] != 1.0 or not verdict["valid"]:
            disagreements.append((entry_id, output["error"], output["reward"], verdict))
        # The tools offered at each model call are BFCL's OpenAI tools for that turn.
        for offered, turn in zip(client.offered[key], client.turns[key]):
            assert offered == _openai_tools_without_response(entry_id, turn), (entry_id, turn)
    assert disagreements == []


@pytest.mark.parametrize("category", CATEGORIES)
def test_mutated_rollouts_reward_equals_evaluate_and_the_reference(category):
    env = load_environment(categories=[category], dataset=dataset(), owner=MODEL)
    env_partial = load_environment(categories=[category], dataset=dataset(), owner=MODEL, partial_credit=True)
    table = {i: (entry_id, replies) for i, (entry_id, kind, replies)
             in enumerate(scripts([category], ground_truth=False)) if i % (6 * every(5)) == 0}
    outputs, client = _play(table, env)
    partial, partial_client = _play({key: table[key] for key in table if key % (12 * every(5)) == 0}, env_partial)
    outcomes: Counter = Counter()
    disagreements = []
    for key, (entry_id, _) in table.items():
        result = result_of(client.player.sent[key])
        verdict = evaluate_verdict(entry_id, result)
        turns = len(dataset().ground_truth_for(entry_id))
        expected_partial = 1.0 if verdict["valid"] else verdict["turns_passed"] / turns
        outcomes[verdict["error_type"]] += 1
        got = (outputs[key]["reward"], outputs[key]["metrics"]["turns_passed"])
        want = (1.0 if verdict["valid"] else 0.0, float(verdict["turns_passed"]))
        if key in partial:
            got += (partial[key]["reward"], result_of(partial_client.player.sent[key]))
            want += (expected_partial, result)
        if got != want or outputs[key]["error"] is not None:
            disagreements.append((entry_id, key, got, want, outputs[key]["error"]))
        if key % 4 == 0 and verdict["error_type"] != reference_error_type(entry_id, result):
            disagreements.append((entry_id, key, "reference", verdict["error_type"]))
    print(f"{category}: {len(table)} mutated rollouts; evaluate verdicts {dict(outcomes)}")
    assert len(table) >= 200 // every(5) and len(partial) >= 100 // every(5)
    assert outcomes["multi_turn:force_terminated"] > 0 and None in outcomes and len(outcomes) >= 4
    assert disagreements == []


def test_force_termination_ends_the_rollout_at_bfcls_step_limit():
    env = load_environment(ids=["multi_turn_base_0"], categories="multi_turn_base", dataset=dataset(), owner=MODEL)
    script = next(replies for entry_id, kind, replies in scripts(["multi_turn_base"])
                  if entry_id == "multi_turn_base_0" and kind == "endless")
    outputs, client = _play({0: ("multi_turn_base_0", script)}, env)
    assert len(client.player.sent[0]) == 21  # the 21st step ran, then BFCL force-quits
    assert outputs[0]["reward"] == 0.0 and outputs[0]["metrics"]["force_terminated"] == 1.0
    assert outputs[0]["stop_condition"] == "has_final_env_response"
    assert evaluate_verdict("multi_turn_base_0", result_of(client.player.sent[0]))["error_type"] == \
        "multi_turn:force_terminated"


def test_miss_func_tools_grow_when_the_held_out_turn_starts():
    entry_id = "multi_turn_miss_func_0"
    env = load_environment(ids=[entry_id], categories="multi_turn_miss_func", dataset=dataset(), owner=MODEL)
    script = next(replies for e, kind, replies in scripts(["multi_turn_miss_func"], mutants=False) if e == entry_id)
    _, client = _play({0: (entry_id, script)}, env)
    counts = [len(tools) for tools in client.offered[0]]
    assert counts == sorted(counts) and counts[0] < counts[-1]


@pytest.mark.parametrize(("arguments", "message"), [
    ({"categories": ["simple"]}, "unknown categories"),
    ({"categories": "multi_turn_base", "ids": ["nope"]}, "no entries selected"),
], ids=["unknown-category", "no-entries"])
def test_bad_arguments_say_what(arguments, message):
    with pytest.raises(ValueError, match=message):
        load_environment(dataset=dataset(), **arguments)
