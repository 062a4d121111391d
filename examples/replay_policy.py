"""The ground truth as a policy, driven through an Episode turn by turn.

The shape of an agent or RL rollout against bfcl-safe's simulated backends: each turn
the policy sees the user messages and the tools visible then (as OpenAI schemas), and
acts one step at a time (a step of FC calls; a step with no call ends the turn); each
step returns a typed result (calls, results, the tool messages to send back, whether
and why the turn ended), and each turn a reward (this turn's checks) with the official
verdict so far.

    python examples/replay_policy.py [--data WHEEL] [ID ...]

Every turn of the ground truth passes; the script exits non-zero otherwise.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Sequence

from bfcl_safe import Dataset, Episode
from bfcl_safe.checker.play import StepResult, TurnOutcome
from bfcl_safe.checker.replay import ground_truth_as_fc

DEFAULT_IDS = ("multi_turn_base_0", "multi_turn_miss_func_0", "multi_turn_miss_param_3", "multi_turn_long_context_1")


class GroundTruthPolicy:
    """Plays the ground truth: in each turn, one step with all its calls, then a step with
    none (the model's text reply, which ends the turn)."""

    def __init__(self, dataset: Dataset, entry_id: str):
        entry = dataset.entry(entry_id)
        self.turns = ground_truth_as_fc(dataset.ground_truth_for(entry_id), entry["involved_classes"])

    def act(self, turn: int, step: int, messages: list[dict], tools: list[dict], last: StepResult | None) -> Any:
        steps = self.turns[turn]
        return steps[step] if step < len(steps) else []


def play(dataset: Dataset, entry_id: str, log=print) -> list[TurnOutcome]:
    """One episode of ``entry_id``; the outcome of each turn."""
    episode = Episode.from_entry(entry_id, dataset)
    policy = GroundTruthPolicy(dataset, entry_id)
    outcomes = []
    while True:
        messages, tools = episode.messages(), episode.tools(format="openai")
        last, step = None, 0
        while not episode.turn_over:
            last = episode.step(policy.act(episode.turn, step, messages, tools, last))
            step += 1
        outcome = episode.end_turn()
        outcomes.append(outcome)
        log(f"  turn {outcome.turn}: {len(tools)} tools, {step - 1} step(s) with calls -> reward {outcome.reward}, "
            f"{'pass' if outcome.verdict.valid else outcome.verdict.error_type}")
        if episode.done:
            return outcomes


def main(argv: Sequence[str] | None = None, log=print) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help="bfcl-eval wheel or bfcl_eval folder (default: the cache)")
    parser.add_argument("ids", nargs="*", default=list(DEFAULT_IDS))
    args = parser.parse_args(argv)
    dataset = Dataset.open(args.data)
    failed = 0
    for entry_id in args.ids:
        log(entry_id)
        outcomes = play(dataset, entry_id, log)
        verdict = outcomes[-1].verdict
        passed = verdict.valid and all(o.passed for o in outcomes)
        failed += not passed
        log(f"{entry_id}: {'PASS' if passed else 'FAIL'} ({verdict.turns_passed}/{len(outcomes)} turns)")
    log(f"{len(args.ids) - failed}/{len(args.ids)} entries passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
