"""Typed verdicts (``checker.verdict``): the error-type enumeration, the fields readers use
instead of messages, and ``Verdict.to_record`` as the one place a verdict becomes BFCL's
failure record (the score-file bytes themselves: tests/test_checker_real_results.py)."""

from __future__ import annotations

import json
import re

import pytest

from bfcl_safe.checker.replay import ground_truth_as_fc
from bfcl_safe.checker.verdict import (
    EntryInput, ErrorType, RecordParts, Verdict, check_entry, evaluate_entry, is_empty_response,
)
from bfcl_safe.interp.callspec import make_spec
from bfcl_safe.interp.errors import BudgetExceeded, RejectedInput
from tests.checker_support import REAL_MODEL, REAL_RUN, dataset
from tests.refenv import reference_package_dir

_REAL_CATEGORIES = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param")


def test_error_types_are_the_references_strings_and_ours():
    source = "".join(path.read_text(encoding="utf-8")
                     for path in (reference_package_dir() / "eval_checker").rglob("*.py"))
    reference = set(re.findall(r'"(multi_turn:[a-z_:]+)"', source))
    assert {t.value for t in ErrorType if t.value.startswith("multi_turn:")} == reference
    assert {t.value for t in ErrorType if t.official} == reference - {
        "multi_turn:irrelevance_error:decoder_success", "multi_turn:method_invoke_order_mismatch"}
    assert {t.value for t in ErrorType if t.own} == {"bfcl_safe:resource_limit", "bfcl_safe:internal_error"}
    assert not any(t.official for t in ErrorType if t.own)
    assert str(ErrorType.EMPTY_TURN) == "multi_turn:empty_turn_model_response"


def _input(entry_id: str, result, decoder: str = "fc") -> EntryInput:
    ds = dataset()
    return EntryInput(ds.entry(entry_id), result, ds.ground_truth_for(entry_id), "m",
                      entry_id.rsplit("_", 1)[0], decoder, ds.long_context_data)


def _truth_fc(entry_id: str) -> list:
    ds = dataset()
    return ground_truth_as_fc(ds.ground_truth_for(entry_id), ds.entry(entry_id)["involved_classes"])


_BASE = "multi_turn_base_0"


@pytest.mark.parametrize(
    "name, result, error_type, keys, turn",
    [
        pytest.param("inference-error", "Error during inference: timeout", ErrorType.INFERENCE_ERROR,
                     ["error_message", "error_type"], 0, id="inference_error"),
        pytest.param("force-terminated", lambda t: t[:2], ErrorType.FORCE_TERMINATED,
                     ["error_message", "error_type"], 1, id="force_terminated"),
        pytest.param("empty-turn", lambda t: [[[]]] + t[1:], ErrorType.EMPTY_TURN,
                     ["error_message", "error_type", "details"], 0, id="empty_turn"),
        pytest.param("state", lambda t: [[[{"mkdir": '{"dir_name": "x"}'}]]] + t[1:], ErrorType.STATE_MISMATCH,
                     ["error_message", "error_type", "details", "execution_result"], 0, id="state_mismatch"),
    ],
)
def test_records_have_the_references_layout_per_error_type(name, result, error_type, keys, turn):
    truth = _truth_fc(_BASE)
    item = _input(_BASE, result(truth) if callable(result) else result)
    verdict = check_entry(item)
    assert verdict.error_type is error_type and verdict.failing_turn == turn == verdict.turns_passed
    record = verdict.to_record(item, RecordParts(inference_log=[]))
    assert list(record["error"]) == keys
    whole = error_type in (ErrorType.INFERENCE_ERROR, ErrorType.FORCE_TERMINATED)
    assert list(record) == ["id", "model_name", "test_category", "valid", "error", "prompt",
                            *(["model_result"] if whole else ["model_result_raw", "model_result_decoded"]),
                            "possible_answer", "inference_log", "first_failing_turn", "turns_passed"]
    assert "function" not in record["prompt"]
    # The compatibility path gives the same record.
    assert evaluate_entry(item.entry, item.model_result, item.ground_truth, model_name="m",
                          test_category=item.test_category, decoder="fc",
                          long_context_data=item.long_context_data, inference_log=[]) == record


def test_a_force_termination_carries_the_completed_turns_failure():
    truth = _truth_fc(_BASE)
    cut = [[[{"mkdir": '{"dir_name": "x"}'}]]] + truth[1:2]  # two turns of four; turn 0 wrong
    verdict = check_entry(_input(_BASE, cut))
    assert verdict.error_type is ErrorType.FORCE_TERMINATED and verdict.failing_turn == 0
    assert verdict.turn_failure.error_type is ErrorType.STATE_MISMATCH
    assert verdict.turn_failure.backend_class == "GorillaFileSystem"
    clean = check_entry(_input(_BASE, truth[:2]))
    assert clean.turn_failure is None and clean.failing_turn == 1


def test_a_pass_renders_as_the_reference_and_counts_every_turn():
    item = _input(_BASE, _truth_fc(_BASE))
    verdict = check_entry(item)
    assert verdict == Verdict.passed(len(item.ground_truth)) and verdict.to_record(item) == {"valid": True}
    assert verdict.summary() == {"valid": True, "turns_passed": 4, "first_failing_turn": None}


def test_bfcl_safes_own_failures_have_the_short_layout():
    item = _input(_BASE, [])
    limit = Verdict.resource_limit(BudgetExceeded("state_items", 10, 11))
    record = limit.to_record(item)
    assert list(record) == ["id", "model_name", "test_category", "valid", "error", "first_failing_turn",
                            "turns_passed"]
    assert record["error"] == {"error_message": ["resource limit: budget 'state_items' exceeded (11 > 10); "
                                                 "the entry fails"],
                               "error_type": ErrorType.RESOURCE_LIMIT, "details": {"budget": "state_items", "limit": 10,
                                                                         "spent": 11}}
    internal = Verdict.internal_error(RecursionError("deep"))
    assert internal.error_type is ErrorType.INTERNAL_ERROR and internal.details == {"exception": "RecursionError"}
    json.dumps(record)


@pytest.mark.parametrize("category", _REAL_CATEGORIES)
def test_backend_class_is_the_class_every_real_state_mismatch_names(category):
    """``explain`` reads ``backend_class``; on real failures it is the class the message names."""
    ds = dataset()
    path = REAL_RUN / "result" / REAL_MODEL / "multi_turn" / f"BFCL_v4_{category}_result.json"
    named = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        verdict = check_entry(_input(item["id"], item["result"]))
        for failure in (verdict, verdict.turn_failure):
            if failure is None or failure.error_type is not ErrorType.STATE_MISMATCH:
                continue
            match = re.match(r"Model instance for (\w+) does not match the state", failure.error_message)
            assert match and match.group(1) == failure.backend_class, item["id"]
            named += 1
        if verdict.error_type in (ErrorType.EMPTY_TURN, ErrorType.RESPONSE_MISMATCH):
            assert verdict.backend_class is None
    assert named >= 5


def test_verdicts_are_frozen_values():
    verdict = Verdict.passed(3)
    with pytest.raises(AttributeError):
        verdict.turns_passed = 4  # type: ignore[misc]
    assert verdict == Verdict.passed(3) and hash(verdict) == hash(Verdict.passed(3))


# --------------------------------------------------------------------------- the empty step


@pytest.mark.parametrize("items, empty", [
    ([], True),  # a step that decoded to no call, or a turn with no step
    ([""], True),  # one empty text (the reference's decoders give text)
    ([[]], True),  # a turn whose one step has no call
    ((), True),
    (["", ""], False),
    (["ls()"], False),
    ([" "], False),
    ([["ls()"]], False),
    ([[], []], False),
    ([make_spec("ls")], False),  # a decoded call record has no length: never empty
    ([RejectedInput("x", "y")], False),
])
def test_is_empty_response_is_the_references_empty_execute_response(items, empty):
    assert is_empty_response(items) is empty


def test_a_nan_both_sides_share_is_a_state_mismatch_as_in_the_reference():
    """The reference compares each attribute with ``!=``: a NaN is unequal to itself even when
    both instances hold the same object (a scalar of the initial configuration is shared, as
    ``copy.deepcopy`` shares floats). Comparing the two state dicts with ``==`` would take it
    as equal (a dict compares one object to itself as equal): the check must not."""
    from bfcl_safe.checker.episode import Side
    from bfcl_safe.checker.error_types import ErrorType
    from bfcl_safe.checker.verdict import _state_check

    nan = float("nan")
    entry = {"id": "multi_turn_base_0", "involved_classes": ["VehicleControlAPI"],
             "initial_config": {"VehicleControlAPI": {"fuelLevel": nan}}}
    model, truth = Side.create(entry), Side.create(entry)
    assert model.instances["VehicleControlAPI"].fuelLevel is truth.instances["VehicleControlAPI"].fuelLevel
    verdict = _state_check(model, truth, 0, [])
    assert verdict is not None and verdict.error_type is ErrorType.STATE_MISMATCH
    assert list(verdict.details["differences"]) == ["fuelLevel"]
