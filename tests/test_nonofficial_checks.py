"""The reference's unused checks, off by default: --strict-irrelevance and --check-order."""

from __future__ import annotations

import json

from bfcl_safe.checker.replay import ground_truth_as_fc
from bfcl_safe.checker.verdict import (
    CheckOptions, EntryInput, ErrorType, check_entry, evaluate_entry,
)
from tests.checker_support import dataset
from tests.refenv import import_reference


def _evaluate(entry, result, **flags):
    data = dataset()
    return evaluate_entry(entry, result, data.ground_truth_for(entry["id"]), model_name="m",
                          test_category=entry["id"].rsplit("_", 1)[0], decoder="fc",
                          long_context_data=data.long_context_data, prompt_entry=lambda: {}, options=CheckOptions(**flags))


def test_strict_irrelevance_flags_calls_in_turns_that_should_be_empty_like_the_reference():
    reference = import_reference("eval_checker.multi_turn_eval.multi_turn_checker")
    utils = import_reference("model_handler.utils")
    checked = 0
    for entry in dataset().entries("multi_turn_miss_func")[:40]:
        truth = dataset().ground_truth_for(entry["id"])
        empty = [t for t, turn in enumerate(truth) if not turn]
        if not empty or "GorillaFileSystem" not in entry["involved_classes"]:
            continue
        result = ground_truth_as_fc(truth, entry["involved_classes"])
        result[empty[0]] = [[{"pwd": "{}"}], []]  # a harmless read in the held-out turn
        official = _evaluate(entry, result)
        strict = _evaluate(entry, result, strict_irrelevance=True)
        decoded = [[utils.convert_to_function_call(s) for s in turn if s] for turn in json.loads(json.dumps(result))]
        expected = reference.multi_turn_irrelevance_checker(decoded, truth)
        assert official["valid"]  # not part of the official score
        assert expected["error_type"] == ErrorType.IRRELEVANCE
        assert strict["error"]["error_type"] == ErrorType.IRRELEVANCE
        assert strict["error"]["error_message"] == expected["error_message"]
        checked += 1
    assert checked >= 3


def test_check_order_flags_a_reordered_turn_that_the_official_check_accepts():
    found = 0
    for entry in dataset().entries("multi_turn_base"):
        truth = dataset().ground_truth_for(entry["id"])
        for t, turn in enumerate(truth):
            if len(turn) < 2 or len({call.split("(")[0] for call in turn}) < 2:
                continue
            swapped = [list(x) for x in truth]
            swapped[t] = list(reversed(turn))
            result = ground_truth_as_fc(swapped, entry["involved_classes"])
            if not _evaluate(entry, result)["valid"]:
                continue  # order mattered for state or responses
            ordered = _evaluate(entry, result, check_order=True)
            if ordered["valid"]:
                continue  # the two calls belong to different classes
            assert ordered["error"]["error_type"] == ErrorType.ORDER_MISMATCH
            assert "does not match the method invoke order" in ordered["error"]["error_message"]
            typed = check_entry(EntryInput(entry, result, truth, "m", "multi_turn_base", "fc"),
                                CheckOptions(check_order=True))
            assert typed.error_type is ErrorType.ORDER_MISMATCH and typed.failing_turn == t
            assert typed.backend_class in entry["involved_classes"]
            assert typed.backend_class in typed.error_message
            found += 1
            break
        if found >= 3:
            break
    assert found >= 3
    # The ground truth itself is in order.
    entry = dataset().entries("multi_turn_base")[0]
    truth = dataset().ground_truth_for(entry["id"])
    assert _evaluate(entry, ground_truth_as_fc(truth, entry["involved_classes"]), check_order=True)["valid"]
