"""Mutated ground truth, in FC and prompting form, all four categories: our verdict and error
type equal the reference's (its own decoders and multi_turn_checker from the pinned wheel)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from bfcl_safe.checker.replay import ground_truth_calls
from bfcl_safe.checker.verdict import evaluate_entry
from tests.checker_support import CATEGORIES, dataset, reference_verdict

MODEL = "mutant-model"
Calls = list[list[tuple[str, dict]]]


def _copy(turns: Calls) -> Calls:
    return [[(name, json.loads(json.dumps(args))) for name, args in turn] for turn in turns]


def _perturbed(value: Any, rng: random.Random) -> Any:
    choices: list[Any] = [None, 0, -1, "", "x", [], {"k": 1}, True, 3.5]
    if isinstance(value, str) and value:
        choices += [value + "x", value.upper(), value[:-1], len(value)]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        choices += [value + 1, str(value), -value]
    return rng.choice(choices)


def mutations(turns: Calls, tool_names: list[str], rng: random.Random) -> list[tuple[str, Calls]]:
    out: list[tuple[str, Calls]] = []
    positions = [(t, i) for t, turn in enumerate(turns) for i in range(len(turn))]
    if positions:
        t, i = rng.choice(positions)
        m = _copy(turns); del m[t][i]; out.append(("drop", m))
        m = _copy(turns); m[t].insert(i, m[t][i]); out.append(("duplicate", m))
        m = _copy(turns); call = m[t].pop(i); m[min(t + 1, len(m) - 1) if t + 1 < len(m) else max(t - 1, 0)].append(call)
        out.append(("move", m))
        t, i = rng.choice(positions)
        name, args = turns[t][i]
        if args:
            m = _copy(turns)
            key = rng.choice(sorted(args))
            m[t][i][1][key] = _perturbed(args[key], rng)
            out.append(("perturb-value", m))
        m = _copy(turns)
        m[t][i] = (rng.choice(["unknown_tool", "delete_everything", *tool_names]), m[t][i][1])
        out.append(("wrong-function", m))
    multi = [t for t, turn in enumerate(turns) if len(turn) > 1]
    if multi:
        m = _copy(turns); rng.shuffle(m[rng.choice(multi)]); out.append(("reorder", m))
    empty = [t for t, turn in enumerate(turns) if not turn]
    if empty and positions:
        m = _copy(turns)
        t, i = rng.choice(positions)
        m[rng.choice(empty)].append(m[t][i])
        out.append(("call-in-empty-turn", m))
    if len(turns) > 1:
        m = _copy(turns); del m[rng.randrange(len(m))]; out.append(("missing-turn", m))
    return out


def as_fc(turns: Calls) -> list:
    return [[[{n: json.dumps(a)} for n, a in turn], []] if turn else [[]] for turn in turns]


def _prompt_value(value: Any, style: str) -> str:
    if style == "bare-names" and isinstance(value, str) and value.isidentifier():
        return value  # the reference decoder turns a bare name into the string
    return repr(value)


def as_prompting(turns: Calls, style: str) -> list:
    rendered = []
    for turn in turns:
        if not turn:
            rendered.append(["No tool fits this request."])
            continue
        calls = []
        for name, args in turn:
            if style == "positional":
                calls.append(f"{name}({', '.join(repr(v) for v in args.values())})")
            else:
                calls.append(f"{name}({', '.join(f'{k}={_prompt_value(v, style)}' for k, v in args.items())})")
        text = f"[{', '.join(calls)}]"
        rendered.append([f"```python\n{text}\n```" if style == "code-fence" else text])
    return rendered


@pytest.mark.parametrize("form", ["fc", "prompting"])
@pytest.mark.parametrize("category", CATEGORIES)
def test_mutated_ground_truth_agrees_with_the_reference(category, form):
    rng = random.Random(f"{category}-{form}-20261130")
    data = dataset()
    compared = 0
    outcomes: dict[str, int] = {}
    disagreements = []
    for entry in data.entries(category):
        truth = data.ground_truth_for(entry["id"])
        involved = entry["involved_classes"]
        tool_names = sorted({d["name"] for c in involved for d in data.func_docs(c)})
        for kind, mutant in mutations(ground_truth_calls(truth, involved), tool_names, rng):
            if form == "fc":
                result = as_fc(mutant)
            else:
                style = rng.choice(["keywords", "bare-names", "positional", "code-fence"])
                result = as_prompting(mutant, style)
                kind = f"{kind}/{style}"
            ours = evaluate_entry(
                entry, result, truth, model_name=MODEL, test_category=category, decoder=form,
                long_context_data=data.long_context_data, prompt_entry=lambda: {},
            )
            ours_type = None if ours["valid"] else ours["error"]["error_type"]
            theirs = reference_verdict(entry, json.loads(json.dumps(result)), truth, MODEL, form)
            compared += 1
            outcomes[str(ours_type)] = outcomes.get(str(ours_type), 0) + 1
            if ours_type != theirs:
                disagreements.append((entry["id"], kind, theirs, ours_type))
    print(f"{category} {form}: {compared} mutated entries compared; verdicts {outcomes}")
    assert compared >= 500
    assert len(outcomes) >= 4
    assert disagreements == []
