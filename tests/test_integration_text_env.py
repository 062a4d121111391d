"""Text-action environments (bfcl_safe.integrations.text_env): the gymnasium-style
``TextEnv`` and the SkyRL ``BaseTextEnv`` (made through ``skyrl_gym.make`` and driven by its
``init``/``step``/``get_metrics`` interface, as SkyRL's generator drives it), fed the model's
raw text: the ground truth gets reward 1 and the official verdict, mutated scripts the
reward and verdict ``bfcl-safe evaluate`` gives the same steps read by the same decoder."""

from __future__ import annotations

import json
from typing import Any

import pytest
import skyrl_gym  # the skyrl extra is in the test extra: no skip

from bfcl_safe.checker.contract import category_of
from bfcl_safe.checker.scoring import Context, score_item
from bfcl_safe.integrations.text_env import BfclSkyRLEnv, TextEnv, TextEnvError, register_skyrl
from tests.checker_support import CATEGORIES, dataset, every
from tests.integration_policies import DONE, MODEL, scripts


def prompting_text(calls: list) -> str:
    return "[" + ", ".join(f"{name}({', '.join(f'{k}={v!r}' for k, v in args.items())})" for name, args in calls) + "]"


def qwen_text(calls: list) -> str:
    return "\n".join(f"<tool_call>\n{json.dumps({'name': name, 'arguments': args})}\n</tool_call>" for name, args in calls)


RENDER = {"prompting": prompting_text, "qwen_tool_call": qwen_text}


def evaluate(entry_id: str, steps: list, decoder: str) -> tuple[bool, str | None, int]:
    """What ``bfcl-safe evaluate`` gives ``steps`` read by ``decoder``: (valid, error type, turns passed)."""
    line = score_item(dataset(), Context(MODEL, category_of(entry_id), decoder), {"id": entry_id, "result": steps})
    if line.error_type is None:
        return True, None, len(dataset().ground_truth_for(entry_id))
    return False, line.error_type, json.loads(line.line)["turns_passed"]


def texts(replies: list, decoder: str) -> list[str]:
    return [RENDER[decoder](value) if kind == "calls" else value for kind, value in replies]


def play_gym(env: TextEnv, entry_id: str, replies: list[str]) -> tuple[float, dict, list]:
    observation, info = env.reset(options={"entry_id": entry_id})
    assert info["entry_id"] == entry_id and observation
    sent: list[str] = []
    while True:
        text = replies[len(sent)] if len(sent) < len(replies) else DONE
        sent.append(text)
        observation, reward, terminated, truncated, info = env.step(text)
        assert truncated is False
        if terminated:
            return reward, info, sent


@pytest.mark.parametrize("category", CATEGORIES)
def test_gym_ground_truth_as_prompting_text_gets_reward_one(category):
    env = TextEnv(dataset(), decoder="prompting", mode="prompting", owner=MODEL)
    disagreements = []
    count = 0
    for entry_id, _, replies in scripts([category], mutants=False):
        reward, info, _ = play_gym(env, entry_id, texts(replies, "prompting"))
        valid, error_type, _ = evaluate(entry_id, env.result(), "prompting")
        count += 1
        if (reward, info["verdict"]["valid"], valid) != (1.0, True, True):
            disagreements.append((entry_id, reward, info["verdict"], error_type))
    assert count == 200 and disagreements == []


@pytest.mark.parametrize("category", CATEGORIES)
def test_gym_mutated_prompting_text_gets_the_verdict_evaluate_gives(category):
    env = TextEnv(dataset(), decoder="prompting", mode="prompting", owner=MODEL)
    partial_env = TextEnv(dataset(), decoder="prompting", mode="fc", results="tool", partial_credit=True, owner=MODEL)
    table = [(e, k, r) for i, (e, k, r) in enumerate(scripts([category], ground_truth=False)) if i % (2 * every(3)) == 0]
    outcomes: dict = {}
    disagreements = []
    for number, (entry_id, kind, replies) in enumerate(table):
        target = partial_env if number % 3 == 0 else env
        reward, info, _ = play_gym(target, entry_id, texts(replies, "prompting"))
        valid, error_type, turns_passed = evaluate(entry_id, target.result(), "prompting")
        turns = len(dataset().ground_truth_for(entry_id))
        expected = 1.0 if valid else (turns_passed / turns if target is partial_env else 0.0)
        outcomes[error_type] = outcomes.get(error_type, 0) + 1
        if (reward, info["verdict"]["error_type"], info["verdict"]["turns_passed"]) != (expected, error_type, turns_passed):
            disagreements.append((entry_id, kind, reward, info["verdict"], error_type))
    print(f"{category}: {len(table)} mutated text episodes; evaluate verdicts {outcomes}")
    assert len(table) >= 60 and len(outcomes) >= 4 and "multi_turn:force_terminated" in outcomes
    assert disagreements == []


@pytest.fixture(scope="module")
def skyrl_id() -> str:
    return register_skyrl("bfcl_multi_turn_test", dataset=dataset())


def play_skyrl(skyrl_id: str, entry_id: str, replies: list[str], config: dict) -> tuple[Any, list[dict], dict]:
    """SkyRL's loop: make, init with the row's prompt, step the model's text until done."""
    env = skyrl_gym.make(skyrl_id, env_config={"owner": MODEL, **config}, extras={"extra_info": {"id": entry_id}})
    assert isinstance(env, BfclSkyRLEnv)
    chat, metadata = env.init([{"role": "user", "content": "ignored: BFCL decides the prompt"}])
    assert metadata["entry_id"] == entry_id and metadata["tools"]
    sent = 0
    while True:
        text = replies[sent] if sent < len(replies) else DONE
        sent += 1
        chat.append({"role": "assistant", "content": text})
        output = env.step(text)
        chat += output["observations"]
        assert sent <= env.max_turns
        if output["done"]:
            env.close()
            return output, chat, env.get_metrics() | {"result": env.player.result()}


@pytest.mark.parametrize("decoder", ["prompting", "qwen_tool_call"])
@pytest.mark.parametrize("category", CATEGORIES)
def test_skyrl_env_ground_truth_and_mutants_match_evaluate(skyrl_id, category, decoder):
    table = [(e, k, r) for i, (e, k, r) in enumerate(scripts([category])) if i % (5 * every(2)) == 0]
    config = {"decoder": decoder, "mode": "prompting" if decoder == "prompting" else "fc",
              "results": None if decoder == "prompting" else "tool"}
    disagreements = []
    metrics = []
    for entry_id, kind, replies in table:
        output, chat, report = play_skyrl(skyrl_id, entry_id, texts(replies, decoder), config)
        valid, error_type, turns_passed = evaluate(entry_id, report.pop("result"), decoder)
        metrics.append(report)
        got = (output["reward"], output["metadata"]["verdict"]["error_type"], report["turns_passed"])
        if got != (1.0 if valid else 0.0, error_type, float(turns_passed)) or (kind == "ground-truth" and not valid):
            disagreements.append((entry_id, kind, got, error_type))
        if decoder == "prompting":
            assert chat[0]["role"] == "system" and "func_name1" in chat[0]["content"]
        elif any(message["role"] == "tool" for message in chat):
            assert all(set(m) == {"role", "name", "content"} for m in chat if m["role"] == "tool")
    assert len(table) >= 40 and disagreements == []
    aggregate = BfclSkyRLEnv.aggregate_metrics(metrics)
    assert 0.0 < aggregate["valid"] < 1.0 and aggregate["turns"] > 1


def test_text_observation_and_per_turn_rewards():
    env = TextEnv(dataset(), observation="text", mode="fc", categories=["multi_turn_base"])
    first, info = env.reset(seed=3)
    again, _ = TextEnv(dataset(), observation="text", mode="fc", categories=["multi_turn_base"]).reset(seed=3)
    assert isinstance(first, str) and first == again and info["tools"]
    observation, reward, terminated, _, info = env.step("I will not call anything.")
    assert isinstance(observation, str) and reward == 0.0 and info["turn_ended"] in ("no_calls", "undecodable")
    assert info["turn_reward"] in (0.0, 1.0) and not terminated


@pytest.mark.parametrize(("call", "message"), [
    (lambda: TextEnv(dataset(), decoder="eval"), "unknown decoder"),
    (lambda: TextEnv(dataset(), mode="chat"), "mode must be one of"),
    (lambda: TextEnv(dataset(), results=["tool"]), "results must be one of"),
    (lambda: TextEnv(dataset(), categories=["simple"]), "categories must be one of"),
    (lambda: TextEnv(dataset()).step("[ls()]"), "call reset"),
    (lambda: TextEnv(dataset()).reset(options={"eval": 1}), "unknown options"),
    (lambda: TextEnv(dataset()).reset(options={"entry_id": 5}), "entry_id must be"),
    (lambda: TextEnv(dataset()).reset(options={"category": "multi_turn_base", "index": 10**9}), "index must be"),
    (lambda: TextEnv(dataset()).reset(seed=-1), "seed must be"),
    (lambda: BfclSkyRLEnv({"decoder": "prompting"}, {"extra_info": {}}, dataset=dataset()), "extras must name"),
], ids=["decoder", "mode", "results", "categories", "before-reset", "options", "entry-type", "index", "seed",
        "skyrl-extras"])
def test_bad_arguments_are_one_documented_error(call, message):
    with pytest.raises(TextEnvError, match=message):
        call()


def test_hostile_text_is_a_turn_that_ends_not_a_crash():
    env = TextEnv(dataset(), decoder="prompting")
    env.reset(options={"entry_id": "multi_turn_base_0"})
    with pytest.raises(TextEnvError, match="reply text"):
        env.step(["[ls()]"])  # type: ignore[arg-type]
    for text in ["[" * 100_000, "[ls(a=" + "[" * 5_000 + "]" * 5_000 + ")]", "x" * 1_000_000,
                 "[__import__('os').system('id')]"]:
        observation, reward, terminated, _, info = env.step(text)
        assert not terminated or info["verdict"]["valid"] is False
        if terminated:
            break
        if info["turn_ended"] is not None:
            assert observation  # the next turn's user message
