"""The Inspect AI task (bfcl_safe.integrations.inspect), run offline by Inspect's own
``eval`` with its ``mockllm`` model replaying scripts: the ground truth of every entry
passes, and for mutated scripts the scorer's verdict (value, error type, turns_passed,
first_failing_turn) equals ``bfcl-safe evaluate``'s on the steps the mock model sent."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from inspect_ai import Task, eval as inspect_eval  # (the inspect extra is in the test extra: no skip)
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageSystem, ModelOutput, ModelUsage, get_model
from inspect_ai.tool import ToolCall

from bfcl_safe.integrations.inspect import bfcl_multi_turn, bfcl_scorer, bfcl_solver, samples
from tests.checker_support import CATEGORIES, dataset, every
from tests.integration_policies import MODEL, Player, evaluate_verdict, reference_error_type, result_of, scripts


def _mock_model(player: Player, offered: dict):
    """mockllm answering each sample with the next reply of its script (the sample's
    system message names the script)."""

    def reply(messages, tools, tool_choice, config) -> ModelOutput:
        key = int(str(messages[0].content).removeprefix("script "))
        offered.setdefault(key, []).append([tool.name for tool in tools])
        kind, value = player.next(key)
        number = len(player.sent[key])
        if kind == "text":
            output = ModelOutput.from_content(model="mockllm/model", content=value)
        else:
            output = ModelOutput.for_tool_call(model="mockllm/model", tool_name=value[0][0],
                                               tool_arguments=value[0][1])
            output.choices[0].message.tool_calls = [
                ToolCall(id=f"call_{number}_{i}", function=name, arguments=args) for i, (name, args) in enumerate(value)]
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return output

    return get_model("mockllm/model", custom_outputs=reply)


def _run(table: dict[int, tuple[str, list]], tmp_path, partial_credit: bool = False) -> tuple[dict, Player, dict]:
    player = Player({key: replies for key, (_, replies) in table.items()})
    offered: dict = {}
    base = {s.id: s for s in samples(dataset(), CATEGORIES, {entry_id for entry_id, _ in table.values()})}
    task_samples = [Sample(input=[ChatMessageSystem(content=f"script {key}"), *base[entry_id].input], id=key,
                           metadata=dict(base[entry_id].metadata)) for key, (entry_id, _) in table.items()]
    task = Task(dataset=MemoryDataset(task_samples), solver=bfcl_solver(dataset(), MODEL),
                scorer=bfcl_scorer(partial_credit))
    logs = inspect_eval(task, model=_mock_model(player, offered), log_dir=str(tmp_path), display="none",
                        max_samples=32, log_format="json", score_display=False)
    assert len(logs) == 1 and logs[0].status == "success", logs[0].error
    scores = {sample.id: next(iter(sample.scores.values())) for sample in logs[0].samples}
    return scores, player, offered


def test_ground_truth_passes(tmp_path):
    # Every 4th entry of each category (200): Inspect's eval costs far more per sample than
    # the episode; the verifiers and session tests replay all 800.
    step = 4 * every(5)  # BFCL_SAFE_FULL=1: every 4th
    table = {i: (entry_id, replies) for i, (entry_id, _, replies) in enumerate(scripts(CATEGORIES, mutants=False))
             if i % step == 0}
    scores, player, offered = _run(table, tmp_path)
    assert len(scores) == len(table) == 800 // step
    failed = []
    for key, (entry_id, _) in table.items():
        score = scores[key]
        verdict = evaluate_verdict(entry_id, result_of(player.sent[key]))
        if score.value != 1.0 or score.answer != "valid" or not verdict["valid"] \
                or score.metadata["result"] != result_of(player.sent[key]):
            failed.append((entry_id, score.value, score.answer, verdict))
    assert failed == []


def test_mutants_verdicts_equal_evaluate_and_the_reference(tmp_path):
    table = {i: (entry_id, replies) for i, (entry_id, kind, replies)
             in enumerate(scripts(CATEGORIES, ground_truth=False, seed="inspect-20261201")) if i % (24 * every(5)) == 1}
    scores, player, _ = _run(table, tmp_path, partial_credit=True)
    outcomes: Counter = Counter()
    disagreements = []
    for key, (entry_id, _) in table.items():
        result = result_of(player.sent[key])
        verdict = evaluate_verdict(entry_id, result)
        turns = len(dataset().ground_truth_for(entry_id))
        outcomes[verdict["error_type"]] += 1
        meta = scores[key].metadata
        got = (scores[key].value, meta["valid"], meta["error_type"], meta["turns_passed"], meta["first_failing_turn"])
        want = (1.0 if verdict["valid"] else verdict["turns_passed"] / turns, verdict["valid"], verdict["error_type"],
                verdict["turns_passed"], verdict["first_failing_turn"])
        if got != want or meta["result"] != result:
            disagreements.append((entry_id, key, got, want))
        if key % (4 * every(5)) == 1 and verdict["error_type"] != reference_error_type(entry_id, result):
            disagreements.append((entry_id, key, "reference", verdict["error_type"]))
    print(f"{len(table)} mutated samples; evaluate verdicts {dict(outcomes)}")
    assert len(table) >= 200 // every(5)
    assert outcomes["multi_turn:force_terminated"] > 0 and None in outcomes and len(outcomes) >= 4
    assert disagreements == []


def test_the_task_builds_one_sample_per_entry_with_first_turn_messages():
    task = bfcl_multi_turn(categories=["multi_turn_miss_func"], dataset=dataset())
    assert len(task.dataset) == 200
    sample = task.dataset[0]
    assert sample.id == "multi_turn_miss_func_0" and sample.metadata["entry_id"] == sample.id
    first = dataset().entry("multi_turn_miss_func_0")["question"][0]
    assert [m.content for m in sample.input] == [m["content"] for m in first]


def test_tools_offered_grow_when_the_held_out_turn_starts(tmp_path):
    entry_id = "multi_turn_miss_func_0"
    script = next(replies for e, _, replies in scripts(["multi_turn_miss_func"], mutants=False) if e == entry_id)
    _, _, offered = _run({0: (entry_id, script)}, tmp_path)
    counts = [len(names) for names in offered[0]]
    assert counts == sorted(counts) and counts[0] < counts[-1]


@pytest.mark.parametrize(("arguments", "message"), [
    ({"categories": ["simple"]}, "unknown categories"),
    ({"categories": "multi_turn_base", "ids": ["nope"]}, "no entries selected"),
], ids=["unknown-category", "no-entries"])
def test_bad_task_arguments_say_what(arguments: dict[str, Any], message: str):
    with pytest.raises(ValueError, match=message):
        bfcl_multi_turn(dataset=dataset(), **arguments)


@pytest.mark.parametrize("bare", ["2024-01-01", "!!set {a, b}"], ids=["date", "set"])
def test_arguments_inspect_parses_into_a_date_or_a_set_end_the_turn_and_the_eval_goes_on(bare, tmp_path):
    """Inspect's own parser (its YAML fallback for arguments that are not a JSON object)
    makes ``{first parameter: date}`` or ``{...: set}``: the step does not decode (BFCL
    sees text that is not JSON), the turn ends, the sample is scored as ``evaluate``
    scores the steps it sent, and the other samples of the evaluation are unaffected."""
    from datetime import date

    from inspect_ai.model._call_tools import parse_tool_call

    entry_id = "multi_turn_base_0"
    truth = next(replies for e, _, replies in scripts(["multi_turn_base"], mutants=False) if e == entry_id)
    parsed: list = []

    def reply(messages, tools, tool_choice, config) -> ModelOutput:
        key = int(str(messages[0].content).removeprefix("script "))
        number = sum(1 for m in messages if m.role == "assistant")
        if key == 0 and number == 0:
            call = parse_tool_call("call_bare", "cd", bare, tools)  # Inspect's own parsing of the text
            parsed.append(call.arguments)
            output = ModelOutput.for_tool_call(model="mockllm/model", tool_name="cd", tool_arguments={})
            output.choices[0].message.tool_calls = [call]
        else:
            replies = truth if key == 1 else truth[1:]  # sample 0: its first turn was the bare call
            kind, value = replies[number - (0 if key == 1 else 1)] if number - (0 if key == 1 else 1) < len(
                replies) else ("text", "Done.")
            if kind == "text":
                output = ModelOutput.from_content(model="mockllm/model", content=value)
            else:
                output = ModelOutput.for_tool_call(model="mockllm/model", tool_name=value[0][0],
                                                   tool_arguments=value[0][1])
                output.choices[0].message.tool_calls = [
                    ToolCall(id=f"call_{number}_{i}", function=name, arguments=args)
                    for i, (name, args) in enumerate(value)]
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)  # (no tokenizer download)
        return output

    base = {s.id: s for s in samples(dataset(), ["multi_turn_base"], {entry_id})}[entry_id]
    task_samples = [Sample(input=[ChatMessageSystem(content=f"script {key}"), *base.input], id=key,
                           metadata=dict(base.metadata)) for key in (0, 1)]
    task = Task(dataset=MemoryDataset(task_samples), solver=bfcl_solver(dataset(), MODEL), scorer=bfcl_scorer())
    logs = inspect_eval(task, model=get_model("mockllm/model", custom_outputs=reply), log_dir=str(tmp_path),
                        display="none", log_format="json", score_display=False)
    assert len(logs) == 1 and logs[0].status == "success", logs[0].error
    assert parsed and isinstance(next(iter(parsed[0].values())), date if bare[0] == "2" else set)
    scores = {sample.id: next(iter(sample.scores.values())) for sample in logs[0].samples}
    assert all(sample.error is None for sample in logs[0].samples)
    result = scores[0].metadata["result"]
    assert result[0][0] == [{"cd": ""}]  # stored as undecodable arguments, the turn ended there
    assert scores[0].answer == evaluate_verdict(entry_id, result)["error_type"]
    assert scores[1].value == 1.0 and scores[1].answer == "valid"
