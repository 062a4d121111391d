"""Ground truth replayed as a model passes, in FC and prompting form, on all 800 entries.
(Mutated ground truth against the reference: tests/test_mutations.py.)"""

from __future__ import annotations

import pytest

from bfcl_safe.checker.replay import ground_truth_as_fc, ground_truth_as_prompting
from bfcl_safe.checker.verdict import evaluate_entry
from tests.checker_support import CATEGORIES, dataset

MODEL = "replay-model_v1.0"


def _evaluate(entry: dict, result: list, decoder: str) -> dict:
    ds = dataset()
    return evaluate_entry(
        entry, result, ds.ground_truth_for(entry["id"]), model_name=MODEL,
        test_category=entry["id"].rsplit("_", 1)[0], decoder=decoder,
        long_context_data=ds.long_context_data, prompt_entry=lambda: ds.prompt_entry(entry["id"]),
    )


@pytest.mark.parametrize("form", ["fc", "prompting"])
@pytest.mark.parametrize("category", CATEGORIES)
def test_ground_truth_replayed_as_model_passes(category, form):
    render = ground_truth_as_fc if form == "fc" else ground_truth_as_prompting
    failed = []
    entries = dataset().entries(category)
    for entry in entries:
        truth = dataset().ground_truth_for(entry["id"])
        verdict = _evaluate(entry, render(truth, entry["involved_classes"]), form)
        if not verdict["valid"]:
            failed.append((entry["id"], verdict["error"]["error_type"]))
    assert len(entries) == 200
    assert failed == []
