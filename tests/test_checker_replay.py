"""Ground truth replayed as a model passes, in FC and prompting form, on all 800 entries;
mutated ground truth gets the reference's verdict and error type."""

from __future__ import annotations

import json
import random

import pytest

from checker.replay import ground_truth_as_fc, ground_truth_as_prompting
from checker.verdict import evaluate_entry
from tests.checker_support import CATEGORIES, dataset, reference_verdict

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


def _mutations(truth: list[list[str]], rng: random.Random) -> list[tuple[str, list[list[str]]]]:
    """Plausible model mistakes made from the ground truth."""
    out = []
    calls = [(t, i) for t, turn in enumerate(truth) for i in range(len(turn))]
    if calls:
        t, i = rng.choice(calls)
        dropped = [list(turn) for turn in truth]
        del dropped[t][i]
        out.append(("drop", dropped))
        duplicated = [list(turn) for turn in truth]
        duplicated[t].insert(i, truth[t][i])
        out.append(("duplicate", duplicated))
        moved = [list(turn) for turn in truth]
        call = moved[t].pop(i)
        target = t + 1 if t + 1 < len(truth) else max(0, t - 1)
        moved[target].append(call)
        out.append(("move", moved))
    multi = [t for t, turn in enumerate(truth) if len(turn) > 1]
    if multi:
        t = rng.choice(multi)
        reordered = [list(turn) for turn in truth]
        rng.shuffle(reordered[t])
        out.append(("reorder", reordered))
    if calls:
        t, i = rng.choice(calls)
        swapped = [list(turn) for turn in truth]
        text = swapped[t][i]
        if "'" in text:
            first = text.index("'")
            swapped[t][i] = text[: first + 1] + "x" + text[first + 1 :]
            out.append(("argument", swapped))
    return out


def _sample_entries(per_category: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    chosen = []
    for category in CATEGORIES:
        entries = dataset().entries(category)
        chosen += rng.sample(entries, per_category)
    return chosen


@pytest.mark.parametrize("form", ["fc", "prompting"])
def test_mutated_ground_truth_gets_reference_verdict(form):
    rng = random.Random(20261130)
    render = ground_truth_as_fc if form == "fc" else ground_truth_as_prompting
    compared = 0
    disagreements = []
    kinds = {}
    for entry in _sample_entries(25, 7 if form == "fc" else 11):
        truth = dataset().ground_truth_for(entry["id"])
        for name, mutated in _mutations(truth, rng):
            result = render(mutated, entry["involved_classes"])
            ours = _evaluate(entry, result, form)
            ours_type = None if ours["valid"] else ours["error"]["error_type"]
            theirs = reference_verdict(entry, json.loads(json.dumps(result)), truth, MODEL, form)
            compared += 1
            kinds[ours_type] = kinds.get(ours_type, 0) + 1
            if ours_type != theirs:
                disagreements.append((entry["id"], name, theirs, ours_type))
    print(f"mutated ground truth ({form}): {compared} compared, verdicts {kinds}")
    assert compared >= 300
    assert len(kinds) >= 3  # the mutations exercise several outcomes
    assert disagreements == []
