"""Scripted policies for the integration tests (verifiers, Inspect AI, Ray), and the
verdicts ``bfcl-safe evaluate`` and the reference give the steps a policy played.

A script is a list of replies, in order; each reply is ``("calls", [(name, arguments)])``
(one assistant message with those tool calls) or ``("text", str)`` (a reply without tool
calls, which ends the turn). A framework's fake model plays the replies one by one,
whatever it is asked, and a plain text reply once the script is exhausted. What it sent is
recorded; :func:`result_of` turns the replies sent into the BFCL result file the steps
make (FC: ``[{name: arguments JSON}]`` per step; a text reply as its text), which
:func:`evaluate_verdict` scores with the scoring code ``bfcl-safe evaluate`` runs.
"""

from __future__ import annotations

import json
import random
from typing import Any, Iterable, Iterator

from bfcl_safe.checker.contract import category_of
from bfcl_safe.checker.replay import ground_truth_calls
from bfcl_safe.checker.scoring import Context, score_item
from tests.checker_support import CATEGORIES, dataset, reference_verdict
from tests.test_mutations import mutations

MODEL = "integration-model"
DONE = "Done."
Reply = tuple[str, Any]


def _turn_replies(turns: list[list[tuple[str, dict]]], *, one_per_step: bool = False) -> list[Reply]:
    replies: list[Reply] = []
    for calls in turns:
        if calls:
            if one_per_step:
                replies.extend(("calls", [call]) for call in calls)
            else:
                replies.append(("calls", list(calls)))
        replies.append(("text", DONE))
    return replies


def ground_truth_script(entry_id: str) -> list[Reply]:
    data = dataset()
    entry = data.entry(entry_id)
    return _turn_replies(ground_truth_calls(data.ground_truth_for(entry_id), entry["involved_classes"]))


def scripts(categories: Iterable[str] = CATEGORIES, *, ground_truth: bool = True, mutants: bool = True,
            seed: str = "integration-20261201") -> Iterator[tuple[str, str, list[Reply]]]:
    """``(entry id, kind, replies)``: the ground truth of every entry, and per entry its
    mutants (tests/test_mutations.py's) plus behaviours BFCL handles on its own: one call
    per step, a reply that writes a call as text (not run), and a turn that never stops
    calling (force-terminated at the 21st step)."""
    data = dataset()
    for category in categories:
        rng = random.Random(f"{seed}-{category}")
        for entry in data.entries(category):
            entry_id = entry["id"]
            involved = entry["involved_classes"]
            turns = ground_truth_calls(data.ground_truth_for(entry_id), involved)
            if ground_truth:
                yield entry_id, "ground-truth", _turn_replies(turns)
            if not mutants:
                continue
            tool_names = sorted({d["name"] for c in involved for d in data.func_docs(c)})
            for kind, mutant in mutations(turns, tool_names, rng):
                yield entry_id, kind, _turn_replies(mutant)
            yield entry_id, "one-call-per-step", _turn_replies(turns, one_per_step=True)
            first = next((call for turn in turns for call in turn), None)
            if first is not None:
                name, args = first
                text = f"[{name}({', '.join(f'{k}={v!r}' for k, v in args.items())})]"
                yield entry_id, "call-as-text", [("text", text)] + _turn_replies(turns)[1:]
                yield entry_id, "endless", [("calls", [first])] * 25


def result_of(sent: list[Reply]) -> list[list[Any]]:
    """The BFCL result file's ``result`` for the replies sent, turn by turn."""
    turns: list[list[Any]] = [[]]
    for kind, value in sent:
        if kind == "calls":
            turns[-1].append([{name: json.dumps(args)} for name, args in value])
        else:
            turns[-1].append(value)
            turns.append([])
    if not turns[-1]:
        turns.pop()
    return turns


def evaluate_verdict(entry_id: str, result: list[list[Any]], model: str = MODEL) -> dict:
    """What ``bfcl-safe evaluate`` gives ``result``: ``{"valid", "error_type",
    "turns_passed", "first_failing_turn"}`` (the scoring path of the command: one line
    scored inside its fault boundary)."""
    line = score_item(dataset(), Context(model, category_of(entry_id), "fc"), {"id": entry_id, "result": result})
    if line.error_type is None:
        return {"valid": True, "error_type": None, "turns_passed": len(dataset().ground_truth_for(entry_id)),
                "first_failing_turn": None}
    record = json.loads(line.line)
    return {"valid": False, "error_type": line.error_type, "turns_passed": record["turns_passed"],
            "first_failing_turn": record["first_failing_turn"]}


def reference_error_type(entry_id: str, result: list[list[Any]], model: str = MODEL) -> str | None:
    """The reference checker's error type for ``result`` (None: it passes)."""
    data = dataset()
    return reference_verdict(data.entry(entry_id), json.loads(json.dumps(result)), data.ground_truth_for(entry_id),
                             model, "fc")


class Player:
    """Plays scripts: ``next(key)`` is the next reply of script ``key`` (a text reply
    once it is exhausted), recorded in ``sent[key]``."""

    def __init__(self, table: dict[Any, list[Reply]]):
        self.table = table
        self.sent: dict[Any, list[Reply]] = {key: [] for key in table}

    def next(self, key: Any) -> Reply:
        replies = self.table[key]
        position = len(self.sent[key])
        reply = replies[position] if position < len(replies) else ("text", DONE)
        self.sent[key].append(reply)
        return reply


__all__ = ["DONE", "MODEL", "Player", "evaluate_verdict", "ground_truth_script", "reference_error_type",
           "result_of", "scripts"]
