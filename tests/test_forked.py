"""``checker.forked.share_out``: every task's result comes back once, whoever ran it; a
child that dies or raises loses only its own results (the caller redoes them); an
interrupted caller leaves no child behind. And the runner's text encoding of scored
chunks, which crosses the process boundary instead of pickles."""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from unittest.mock import patch

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bfcl_safe.checker import forked
from bfcl_safe.checker.forked import MAX_TASKS, share_out
from bfcl_safe.checker import runner
from bfcl_safe.checker.runner import Outcome, _decode_scored, _encode_scored

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="platform: needs os.fork")


def _square(index: int) -> dict:
    return {"index": index, "square": index * index, "pid": os.getpid()}


def _no_children_left() -> bool:
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


@pytest.mark.parametrize("jobs", [1, 2, 3, 5])
@pytest.mark.parametrize("count", [0, 1, 2, 7, 64])
def test_every_task_runs_once_and_comes_back(jobs: int, count: int) -> None:
    seen = Counter()
    results = share_out(count, jobs, _square, json.dumps, json.loads, lambda index: seen.update([index]))
    assert sorted(results) == list(range(count))
    assert all(results[i]["square"] == i * i for i in range(count))
    assert seen == Counter(range(count))  # progress: once per task, children's included
    assert _no_children_left()


def _wait_for(condition, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.002)


def test_children_do_share_the_work(tmp_path) -> None:
    parent = os.getpid()

    def slow(index: int) -> dict:
        if os.getpid() != parent:
            (tmp_path / str(os.getpid())).touch()
        else:  # (not timing-dependent: this process waits until both children have taken one)
            _wait_for(lambda: len(list(tmp_path.iterdir())) == 2)
        time.sleep(0.002)
        return _square(index)

    results = share_out(40, 3, slow, json.dumps, json.loads)
    pids = {result["pid"] for result in results.values()}
    assert parent in pids and len(pids) == 3


@pytest.mark.parametrize("how", ["exit", "raise", "kill"])
def test_a_failing_child_loses_only_its_own_results(how: str, tmp_path) -> None:
    parent = os.getpid()
    failing = tmp_path / "failing"

    def fragile(index: int) -> dict:
        if os.getpid() != parent and index >= 5:
            failing.touch()
            if how == "exit":
                os._exit(3)
            if how == "kill":
                os.kill(os.getpid(), 9)
            raise RuntimeError("a bug in one task")
        if os.getpid() == parent and index >= 5:
            _wait_for(failing.exists)  # (not timing-dependent: the child has taken one of those)
        time.sleep(0.001)
        return _square(index)

    results = share_out(30, 2, fragile, json.dumps, json.loads)
    assert failing.exists()
    assert _no_children_left()
    # Whatever came back is right, and the parent's own tasks all came back.
    assert all(results[i]["square"] == i * i for i in results)
    assert all(value["pid"] == parent for value in results.values())
    assert len(results) < 30


def test_an_interrupted_caller_leaves_no_child() -> None:
    parent = os.getpid()

    def work(index: int) -> int:
        if os.getpid() == parent and index > 2:
            raise KeyboardInterrupt
        time.sleep(0.5 if os.getpid() != parent else 0.01)
        return index

    with pytest.raises(KeyboardInterrupt):
        share_out(20, 3, work, str, int)
    assert _no_children_left()


def test_too_many_tasks_are_refused() -> None:
    with pytest.raises(ValueError, match="at most"):
        share_out(MAX_TASKS + 1, 2, _square, json.dumps, json.loads)


_text = st.text(st.characters(blacklist_categories=()), max_size=30)  # lone surrogates included


@st.composite
def _scored_chunks(draw) -> tuple[list, list, list]:
    """What a child scored for one task (results, where each line's log is, the lines):
    lines whose failure record copies the log, or not, or have no record, or were
    rejected."""
    scored, logs, inputs = [], [], []
    for _ in range(draw(st.integers(0, 6))):
        prefix, log, suffix = draw(_text), draw(_text), draw(_text)
        inputs.append(prefix + log + suffix)
        logs.append(draw(st.sampled_from([None, (len(prefix), len(prefix) + len(log))])))
        kind = draw(st.sampled_from(["rejected", "valid", "record-with-log", "record"]))
        if kind == "rejected":
            scored.append(None)
            continue
        line = None
        if kind == "record-with-log":
            line = draw(_text) + log + draw(_text)
        elif kind == "record":
            line = draw(_text)
        outcome = Outcome(draw(_text), draw(st.none() | _text), draw(st.none() | _text | st.lists(_text, max_size=3)),
                          line, draw(st.booleans()))
        scored.append((draw(st.none() | _text), outcome))
    return scored, logs, inputs


@given(_scored_chunks(), st.integers(0, 5), st.sampled_from([0, 3, 256]))
def test_scored_chunks_survive_their_text_form(chunk: tuple, task: int, left_out: int) -> None:
    scored, logs, inputs = chunk
    with patch.object(runner, "_LEFT_OUT", left_out):
        text = _encode_scored(task, scored, logs, inputs)
    # As it crosses the pipe: UTF-8 with lone surrogates passed through.
    crossed = text.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass")
    assert _decode_scored(crossed, {task: inputs}.__getitem__) == (task, scored, None)


def test_logs_copied_into_failure_records_do_not_cross_the_pipe() -> None:
    log = "[" + "x" * 1000 + "]"
    original = f'{{"id": "a", "result": [], "inference_log": {log}}}\n'
    start = original.index(log)
    outcome = Outcome("a", "t", ["m"], f'{{"id": "a", "inference_log": {log}, "turns_passed": 0}}', False)
    text = _encode_scored(0, [(None, outcome)], [(start, start + len(log))], [original])
    assert log not in text and len(text) < 300
    assert _decode_scored(text, {0: [original]}.__getitem__) == (0, [(None, outcome)], None)
