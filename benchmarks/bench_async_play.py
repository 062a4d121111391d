"""Event-loop lag while many episodes are played from asyncio (issue 28, "Async").

    python benchmarks/bench_async_play.py [--rollouts 256] [--mode both|inline|astep] [--data WHEEL]

``--rollouts`` coroutines each play the ground truth of one entry (the entries of the four
categories in turn) as OpenAI tool calls, one ``await asyncio.sleep(0)`` (the model call)
between steps. ``inline`` steps with ``Episode.step`` inside the coroutine (what frameworks
do without an async API); ``astep`` awaits ``Episode.astep``. A ticker coroutine asks to
wake every millisecond; its lag (wake time minus the time asked for) is the loop's
responsiveness. Prints p50/p99/max lag, the wall clock and the verdicts (all must pass).

Measured 2026-12-03, 2 CPUs shared with other work (load 8-17, so rough), 256 rollouts,
all valid: inline lag p50 82-134 ms, max 208-464 ms; astep (one worker thread) p50
1.2-1.9 ms, max 48-123 ms (two worker threads: p50 15-18 ms, max 220-230 ms). The wall
clock grows from 0.7-1.0 s to 1.5-2.3 s: the loop thread now takes its share of the GIL.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bfcl_safe.checker.contract import MULTI_TURN_CATEGORIES  # noqa: E402
from bfcl_safe.checker.dataset import Dataset  # noqa: E402
from bfcl_safe.checker.play import Episode  # noqa: E402
from bfcl_safe.checker.replay import ground_truth_calls  # noqa: E402


def _policies(dataset: Dataset, count: int) -> list[tuple[str, list[list[list[dict]]]]]:
    """``count`` (entry id, per turn the steps of OpenAI tool calls) ground-truth policies."""
    ids = [entry["id"] for category in MULTI_TURN_CATEGORIES for entry in dataset.entries(category)]
    out = []
    for n in range(count):
        entry_id = ids[(n * 7) % len(ids)]
        involved = dataset.entry(entry_id)["involved_classes"]
        turns = []
        for turn in ground_truth_calls(dataset.ground_truth_for(entry_id), involved):
            calls = [{"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                     for i, (name, args) in enumerate(turn)]
            turns.append([calls] if calls else [])
        out.append((entry_id, turns))
    return out


async def _rollout(episode: Episode, turns: list, mode: str) -> bool:
    for steps in turns:
        for calls in steps:
            await asyncio.sleep(0)  # the model call
            if mode == "inline":
                episode.step({"role": "assistant", "content": None, "tool_calls": calls})
            else:
                await episode.astep({"role": "assistant", "content": None, "tool_calls": calls})
        await asyncio.sleep(0)
        if mode == "inline":
            episode.step({"role": "assistant", "content": "Done."})
            episode.end_turn()
        else:
            await episode.astep({"role": "assistant", "content": "Done."})
            await episode.aend_turn()
    return episode.check_turn().valid


async def _measure(dataset: Dataset, policies: list, mode: str) -> dict[str, Any]:
    episodes = [Episode.from_entry(entry_id, dataset) for entry_id, _ in policies]
    lags: list[float] = []
    stop = asyncio.Event()

    async def ticker() -> None:
        while not stop.is_set():
            asked = time.perf_counter()
            await asyncio.sleep(0.001)
            lags.append(time.perf_counter() - asked - 0.001)

    tick = asyncio.create_task(ticker())
    start = time.perf_counter()
    valid = await asyncio.gather(*(_rollout(ep, turns, mode) for ep, (_, turns) in zip(episodes, policies)))
    wall = time.perf_counter() - start
    stop.set()
    await tick
    lags.sort()
    return {"mode": mode, "rollouts": len(policies), "valid": sum(valid), "wall_s": round(wall, 2),
            "lag_p50_ms": round(statistics.median(lags) * 1000, 2),
            "lag_p99_ms": round(lags[int(len(lags) * 0.99)] * 1000, 2),
            "lag_max_ms": round(lags[-1] * 1000, 2), "ticks": len(lags)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=256)
    parser.add_argument("--mode", choices=("both", "inline", "astep"), default="both")
    parser.add_argument("--data", default=None)
    args = parser.parse_args()
    dataset = Dataset.open(args.data)
    policies = _policies(dataset, args.rollouts)
    modes = ("inline", "astep") if args.mode == "both" else (args.mode,)
    for mode in modes:
        print(json.dumps(asyncio.run(_measure(dataset, policies, mode))), flush=True)


if __name__ == "__main__":
    main()
