"""Ground truth replayed as a model passes, in FC and prompting form, on all 800 entries.
(Mutated ground truth against the reference: tests/test_mutations.py.)"""

from __future__ import annotations

import pytest

from bfcl_safe.checker.replay import ground_truth_as_fc, ground_truth_as_prompting
from bfcl_safe.checker.verdict import EntryInput, Verdict, check_entry
from tests.checker_support import CATEGORIES, dataset

MODEL = "replay-model_v1.0"


def _check(entry: dict, result: list, decoder: str) -> Verdict:
    ds = dataset()
    return check_entry(EntryInput(entry, result, ds.ground_truth_for(entry["id"]), MODEL,
                                  entry["id"].rsplit("_", 1)[0], decoder, ds.long_context_data))


@pytest.mark.parametrize("form", ["fc", "prompting"])
@pytest.mark.parametrize("category", CATEGORIES)
def test_ground_truth_replayed_as_model_passes(category, form):
    render = ground_truth_as_fc if form == "fc" else ground_truth_as_prompting
    failed = []
    entries = dataset().entries(category)
    for entry in entries:
        truth = dataset().ground_truth_for(entry["id"])
        verdict = _check(entry, render(truth, entry["involved_classes"]), form)
        if not verdict.valid:
            failed.append((entry["id"], verdict.error_type.value))
        else:
            assert verdict.turns_passed == len(truth) and verdict.failing_turn is None
    assert len(entries) == 200
    assert failed == []
