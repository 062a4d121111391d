"""The async play API (issue 28, "Async"): ``astep``/``aend_turn``/... under a running
event loop. Many concurrent episodes give the verdicts and results of synchronous play,
the loop keeps running while steps do (its lag measured against stepping inline, as
frameworks did without an async API), one episode plays one step at a time, errors are
the synchronous ones, and a forked child can still await steps."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import statistics
import time
from typing import Any

import pytest

from bfcl_safe.checker.contract import MULTI_TURN_CATEGORIES
from bfcl_safe.checker.play import Episode, EpisodeBusyError, StepInputError, TurnOverError
from bfcl_safe.checker.replay import ground_truth_calls
from tests.checker_support import dataset

ROLLOUTS = 256


def _policies(count: int) -> list[tuple[str, list[list[dict]]]]:
    """``count`` ground-truth policies of entries spread over the four categories: per
    turn, the assistant messages (one with all the turn's tool calls, then a text reply)."""
    ds = dataset()
    ids = [entry["id"] for category in MULTI_TURN_CATEGORIES for entry in ds.entries(category)]
    out = []
    for n in range(count):
        entry_id = ids[(n * 7) % len(ids)]
        turns = []
        for turn in ground_truth_calls(ds.ground_truth_for(entry_id), ds.entry(entry_id)["involved_classes"]):
            calls = [{"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                     for i, (name, args) in enumerate(turn)]
            messages = [{"role": "assistant", "content": None, "tool_calls": calls}] if calls else []
            turns.append(messages + [{"role": "assistant", "content": "Done."}])
        out.append((entry_id, turns))
    return out


async def _rollout(episode: Episode, turns: list, inline: bool) -> list:
    results = []
    for messages in turns:
        for message in messages:
            await asyncio.sleep(0)  # the model call
            step = episode.step(message) if inline else await episode.astep(message)
            results.append(step.results)
        outcome = episode.end_turn() if inline else await episode.aend_turn()
        results.append(outcome.passed)
    return results


async def _measure(policies: list, inline: bool) -> tuple[list, list[Episode], list[float]]:
    episodes = [Episode.from_entry(entry_id, dataset()) for entry_id, _ in policies]
    lags: list[float] = []
    stop = asyncio.Event()

    async def ticker() -> None:
        while not stop.is_set():
            asked = time.perf_counter()
            await asyncio.sleep(0.001)
            lags.append(time.perf_counter() - asked - 0.001)

    tick = asyncio.create_task(ticker())
    played = await asyncio.gather(*(_rollout(ep, turns, inline) for ep, (_, turns) in zip(episodes, policies)))
    stop.set()
    await tick
    return played, episodes, lags


def test_256_concurrent_rollouts_play_as_inline_with_the_loop_responsive():
    policies = _policies(ROLLOUTS)
    inline, inline_episodes, inline_lags = asyncio.run(_measure(policies, inline=True))
    awaited, episodes, lags = asyncio.run(_measure(policies, inline=False))
    assert awaited == inline
    assert [ep.check_turn() for ep in episodes] == [ep.check_turn() for ep in inline_episodes]
    assert [ep.result() for ep in episodes] == [ep.result() for ep in inline_episodes]
    assert all(ep.check_turn().valid for ep in episodes)
    figures = {name: (round(statistics.median(values) * 1000, 1), round(max(values) * 1000, 1), len(values))
               for name, values in (("inline", inline_lags), ("astep", lags))}
    print(f"{ROLLOUTS} rollouts, loop lag (p50 ms, max ms, ticks): {figures}")
    # Inline, the loop runs between steps only; awaited, it runs while they do.
    assert len(lags) > 3 * len(inline_lags)
    assert statistics.median(lags) < statistics.median(inline_lags)


def test_the_loop_runs_while_one_long_step_does():
    entry_id = next(e["id"] for e in dataset().entries("multi_turn_base") if "MathAPI" in e["involved_classes"])
    step = [{"logarithm": json.dumps({"value": 2.5, "base": 3.5, "precision": 8000})}] * 3

    async def run() -> tuple[int, float]:
        episode = Episode.from_entry(entry_id, dataset())
        ticks = 0
        task = asyncio.create_task(episode.astep(step))
        start = time.perf_counter()
        while not task.done():
            await asyncio.sleep(0.001)
            ticks += 1
        result = await task
        assert len(result.results) == 3 and result.results[0].startswith("{'result': mpf(")
        return ticks, time.perf_counter() - start

    ticks, seconds = asyncio.run(run())
    print(f"a {seconds:.2f} s step: the loop ticked {ticks} times meanwhile")
    assert seconds < 0.05 or ticks >= 5


def test_one_step_at_a_time_and_the_synchronous_errors():
    async def run() -> None:
        episode = Episode.from_entry("multi_turn_base_0", dataset())
        first = asyncio.create_task(episode.astep([{"ls": "{}"}]))
        await asyncio.sleep(0)
        with pytest.raises(EpisodeBusyError, match="still running"):
            await episode.astep([{"ls": "{}"}])
        assert (await first).results
        with pytest.raises(StepInputError):
            await episode.astep({1, 2})
        assert (await episode.astep("I am done.")).turn_over
        with pytest.raises(TurnOverError):
            await episode.astep([{"ls": "{}"}])
        assert await episode.anext_turn() is True
        outcome = await episode.aturn_outcome()
        assert outcome.turn == 1 and (await episode.acheck_turn()) == episode.check_turn()

    asyncio.run(run())


def _child(queue: Any) -> None:
    async def run() -> bool:
        episode = Episode.from_entry("multi_turn_base_0", dataset())
        return bool((await episode.astep([{"ls": "{}"}])).results)

    queue.put(asyncio.run(run()))


def test_a_forked_child_awaits_steps_on_its_own_workers():
    async def warm() -> None:  # the parent's worker thread exists before the fork
        await Episode.from_entry("multi_turn_base_0", dataset()).astep([{"ls": "{}"}])

    asyncio.run(warm())
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child, args=(queue,))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    assert queue.get(timeout=5) is True


def test_a_caller_that_stops_waiting_does_not_start_a_second_step_beside_the_first():
    entry_id = next(e["id"] for e in dataset().entries("multi_turn_base") if "MathAPI" in e["involved_classes"])
    slow = [{"logarithm": json.dumps({"value": 2.5, "base": 3.5, "precision": 8000})}] * 3

    async def run() -> None:
        episode = Episode.from_entry(entry_id, dataset())
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(episode.astep(slow), 0.01)
        with pytest.raises(EpisodeBusyError):  # the first step is still running in the worker
            await episode.astep([{"mean": json.dumps({"numbers": [1, 2]})}])
        for _ in range(6000):
            await asyncio.sleep(0.01)
            try:
                step = await episode.astep([{"mean": json.dumps({"numbers": [1, 2]})}])
                break
            except EpisodeBusyError:
                continue
        assert step.results == ['{"result": 1.5}'] and step.step_in_turn == 2  # after the slow one

    asyncio.run(run())
