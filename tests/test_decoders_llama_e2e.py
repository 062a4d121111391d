"""Llama 3.1 FC steps joined by `` | `` (issue 16, item 1), scored end to end.

A real Llama-3.1-8B-Instruct output wrote a turn's calls as JSON objects separated by
``|`` in one step. The reference's handler ``eval``s a step without ``;``: a dict union,
so the step decodes to the *last* call. Built here from the ground truth of every base
entry (each turn's calls ``|``-joined, in the Llama ``{"name", "parameters"}`` shape, plus
a variant with the ``<|python_tag|>`` prefix and one per call list), our verdict must be
the reference's: its own handler's ``decode_execute`` and ``multi_turn_checker``.
"""

from __future__ import annotations

import copy
import json

import pytest

from bfcl_safe.checker.replay import ground_truth_calls
from bfcl_safe.checker.verdict import evaluate_entry
from tests.checker_support import dataset
from tests.refenv import import_reference
from tests.test_handler_decoders import reference_handler

MODEL = "meta-llama_Llama-3.1-8B-Instruct-FC"


def _llama_object(name: str, arguments: dict) -> str:
    return json.dumps({"name": name, "parameters": arguments})


def llama_result(turns: list, shape: str) -> list:
    out = []
    for calls in turns:
        objects = [_llama_object(name, arguments) for name, arguments in calls]
        if shape == "union":
            steps = [" | ".join(objects)] if objects else []
        elif shape == "tagged-union":
            steps = ["<|python_tag|>" + " | ".join(objects)] if objects else []
        else:  # one list per turn: every call decodes
            steps = ["[" + ", ".join(objects) + "]"] if objects else []
        out.append(steps)
    return out


def reference_verdict(entry: dict, model_result: list, ground_truth: list) -> str | None:
    """The reference's error type: its Llama handler decodes, its checker judges."""
    checker = import_reference("eval_checker.multi_turn_eval.multi_turn_checker")
    mt_utils = import_reference("eval_checker.multi_turn_eval.multi_turn_utils")
    handler = reference_handler("LlamaHandler_3_1", True)
    decoded = []
    for turn in model_result:
        steps = []
        for step in turn:
            try:
                calls = handler.decode_execute(step, has_tool_call_tag=False)  # eval of literals only
            except Exception:  # noqa: BLE001 - as the reference: skip undecodable steps
                continue
            if mt_utils.is_empty_execute_response(calls):
                continue
            steps.append(calls)
        decoded.append(steps)
    try:
        result = checker.multi_turn_checker(decoded, ground_truth, copy.deepcopy(entry),
                                            entry["id"].rsplit("_", 1)[0], MODEL)
    finally:
        namespace = vars(mt_utils)
        for key in [k for k in namespace if k.endswith("_instance")]:
            del namespace[key]
    return None if result["valid"] else result["error_type"]


@pytest.mark.parametrize("shape", ["union", "tagged-union", "list"])
def test_llama_steps_score_like_the_reference(shape):
    data = dataset()
    outcomes: dict[str, int] = {}
    disagreements = []
    for entry in data.entries("multi_turn_base"):
        truth = data.ground_truth_for(entry["id"])
        result = llama_result(ground_truth_calls(truth, entry["involved_classes"]), shape)
        ours = evaluate_entry(entry, result, truth, model_name=MODEL, test_category="multi_turn_base",
                              decoder="llama_python_tag", long_context_data=data.long_context_data,
                              prompt_entry=lambda: {})
        ours_type = None if ours["valid"] else ours["error"]["error_type"]
        theirs = reference_verdict(entry, json.loads(json.dumps(result)), truth)
        outcomes[str(ours_type)] = outcomes.get(str(ours_type), 0) + 1
        if ours_type != theirs:
            disagreements.append((entry["id"], theirs, ours_type))
    print(f"llama {shape}: {sum(outcomes.values())} entries; verdicts {outcomes}")
    assert sum(outcomes.values()) == 200
    assert disagreements == []
    if shape == "list":
        # Every call decodes unless its JSON holds true/false/null (names eval cannot find).
        assert outcomes.get("None", 0) > 100
    else:
        # A union keeps only each turn's last call: turns with several calls fail.
        assert outcomes.get("None", 0) < 200 and len(outcomes) >= 2
