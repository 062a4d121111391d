"""Episodes as Ray tasks: many rollouts in parallel on a Ray cluster (or this machine), the
episodes built here and shipped to the workers as they are (they pickle); each worker
plays a policy (here: the ground truth, as OpenAI assistant messages) and returns the
finished episode, whose verdict is read back here (needs ``pip install 'bfcl-safe[ray]'``).

    RAY_USAGE_STATS_ENABLED=0 python examples/ray_rollouts.py [--address auto] [--data WHEEL] [ID ...]

Every ground-truth rollout passes; the script exits non-zero otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence

import ray

from bfcl_safe.checker.dataset import Dataset
from bfcl_safe.checker.play import Episode
from bfcl_safe.checker.replay import ground_truth_calls
from bfcl_safe.integrations.ray import connect
from bfcl_safe.integrations.session import assistant_message

DEFAULT_IDS = ("multi_turn_base_0", "multi_turn_miss_func_0", "multi_turn_miss_param_3", "multi_turn_long_context_1")


def ground_truth_policy(dataset: Dataset, entry_id: str) -> list[list[dict]]:
    """Per turn, the assistant messages a perfect model sends: its calls, then a text reply."""
    entry = dataset.entry(entry_id)
    turns = []
    for number, calls in enumerate(ground_truth_calls(dataset.ground_truth_for(entry_id), entry["involved_classes"])):
        messages = []
        if calls:
            messages.append(assistant_message(None, [{"id": f"call_{number}_{i}", "name": name,
                                                      "arguments": json.dumps(args)}
                                                     for i, (name, args) in enumerate(calls)]))
        messages.append(assistant_message("Done.", None))
        turns.append(messages)
    return turns


@ray.remote
def rollout(episode: Episode, policy: list[list[dict]]) -> Episode:
    """Runs on a Ray worker: plays the episode to its end; returns it (pickled back)."""
    while not episode.done:
        for message in policy[episode.turn]:
            if episode.step(message).turn_over:
                break
        episode.end_turn()
    return episode


def main(argv: Sequence[str] | None = None, log=print) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", default=None, help="Ray address (default: a local instance)")
    parser.add_argument("--data", default=None, help="bfcl-eval wheel or bfcl_eval folder (default: the cache)")
    parser.add_argument("ids", nargs="*", default=list(DEFAULT_IDS))
    args = parser.parse_args(argv)
    connect(args.address)
    dataset = Dataset.open(args.data)
    futures = [rollout.remote(Episode.from_entry(entry_id, dataset), ground_truth_policy(dataset, entry_id))
               for entry_id in args.ids]
    failed = 0
    for entry_id, episode in zip(args.ids, ray.get(futures)):
        verdict = episode.check_turn()
        failed += not verdict.valid
        log(f"{entry_id}: {'PASS' if verdict.valid else 'FAIL ' + verdict.error_type.value} "
            f"({verdict.turns_passed}/{episode.turn_count} turns)")
    log(f"{len(args.ids) - failed}/{len(args.ids)} rollouts passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
