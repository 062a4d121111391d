"""``checker.parallel``: the pools the runner scores lines with. Every line's text result
comes back once, in its place, whoever ran it; a child that dies, raises or hangs loses
only the line it was on (a ``Lost`` there; the rest of its batch is run by a replacement);
an interrupted caller leaves no child behind. And the text form of a line's result,
which crosses the process boundary instead of pickles."""

from __future__ import annotations

import json
import os
import time
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bfcl_safe.checker.parallel import ForkPool, InProcessPool, Lost
from bfcl_safe.checker.scoring import LineResult

needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="platform: needs os.fork")


def _square(context: str, line: str) -> str:
    return json.dumps({"context": context, "square": int(line) ** 2, "pid": os.getpid()})


def _tasks(shape: list[int]) -> list[tuple[str, list[str]]]:
    numbers = iter(range(10_000))
    return [(f"task-{task}", [str(next(numbers)) for _ in range(count)]) for task, count in enumerate(shape)]


def _no_children_left() -> bool:
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def _wait_for(condition, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.002)


SHAPES = {"none": [], "one": [1], "empty-task": [0, 3], "several": [5, 1, 7, 2], "many": [25] * 40}


@pytest.mark.parametrize("jobs", [1, 2, 3, 5])
@pytest.mark.parametrize("shape", list(SHAPES), ids=list(SHAPES))
def test_every_line_runs_once_and_comes_back_in_its_place(jobs: int, shape: str) -> None:
    tasks = _tasks(SHAPES[shape])
    seen: list[int] = []
    pool = ForkPool(_square, jobs) if hasattr(os, "fork") else InProcessPool(_square)
    results = pool.map(tasks, seen.append)
    serial = InProcessPool(_square).map(tasks)
    strip = [[{k: v for k, v in json.loads(r).items() if k != "pid"} for r in batch] for batch in results]
    assert strip == [[{k: v for k, v in json.loads(r).items() if k != "pid"} for r in batch] for batch in serial]
    assert sum(seen) == sum(SHAPES[shape])  # progress: once per line, children's included
    assert _no_children_left()


@needs_fork
def test_children_share_the_work_and_the_parent_only_supervises(tmp_path) -> None:
    parent = os.getpid()

    def marked(context: str, line: str) -> str:
        (tmp_path / str(os.getpid())).touch()
        _wait_for(lambda: len(list(tmp_path.iterdir())) >= 3)  # (not timing-dependent: all three took one)
        return _square(context, line)

    results = ForkPool(marked, 3).map(_tasks([2] * 12))
    pids = {json.loads(r)["pid"] for batch in results for r in batch}
    assert len(pids) == 3 and parent not in pids


@needs_fork
@pytest.mark.parametrize("how", ["exit", "raise", "kill"])
def test_a_failing_child_loses_only_the_line_it_was_on(how: str, tmp_path) -> None:
    def fragile(context: str, line: str) -> str:
        if line == "13":
            if how == "exit":
                os._exit(3)
            if how == "kill":
                os.kill(os.getpid(), 9)
            raise RuntimeError("a bug escaping the fault boundary")
        return _square(context, line)

    tasks = _tasks([10, 10, 10])
    results = ForkPool(fragile, 2).map(tasks)
    flat = [r for batch in results for r in batch]
    lost = [number for number, r in enumerate(flat) if isinstance(r, Lost)]
    assert lost == [13]
    assert not flat[13].guard and "died" in flat[13].reason
    assert ("signal 9" if how == "kill" else "exit status") in flat[13].reason
    assert all(json.loads(r)["square"] == n * n for n, r in enumerate(flat) if n != 13)  # the rest of its batch too
    assert _no_children_left()


@needs_fork
def test_a_hung_child_is_given_up_by_the_guard_and_only_its_line_is_lost() -> None:
    def hanging(context: str, line: str) -> str:
        if line in ("4", "17"):
            while True:
                time.sleep(1)
        return _square(context, line)

    results = ForkPool(hanging, 2, guard_seconds=1.0).map(_tasks([10, 10]))
    flat = [r for batch in results for r in batch]
    assert [n for n, r in enumerate(flat) if isinstance(r, Lost)] == [4, 17]
    assert all(flat[n].guard and "wall-clock guard" in flat[n].reason for n in (4, 17))
    assert all(json.loads(r)["square"] == n * n for n, r in enumerate(flat) if n not in (4, 17))
    assert _no_children_left()


@needs_fork
def test_an_interrupted_caller_leaves_no_child() -> None:
    def slow(context: str, line: str) -> str:
        time.sleep(0.01)
        return _square(context, line)

    def interrupt(count: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ForkPool(slow, 3).map(_tasks([5] * 6), interrupt)
    assert _no_children_left()


@needs_fork
def test_where_no_process_can_be_forked_the_caller_runs_the_lines(monkeypatch) -> None:
    from bfcl_safe.checker import parallel

    def no_fork():
        raise OSError("no more processes")

    monkeypatch.setattr(parallel.os, "fork", no_fork)
    results = ForkPool(_square, 3).map(_tasks([3, 4]))
    assert [json.loads(r)["pid"] for batch in results for r in batch] == [os.getpid()] * 7


_text = st.text(st.characters(blacklist_categories=()), max_size=30)  # lone surrogates included


@st.composite
def _line_results(draw) -> LineResult:
    kind = draw(st.sampled_from(["skipped", "unknown", "scored"]))
    return LineResult(kind, draw(st.none() | _text), draw(st.none() | _text), draw(st.none() | _text),
                      draw(st.none() | _text), draw(st.none() | _text | st.lists(_text, max_size=3)),
                      draw(st.none() | _text), draw(st.none() | _text))


@given(_line_results())
def test_a_line_result_survives_its_text_form_across_the_pipe(result: LineResult) -> None:
    crossed = result.to_text().encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass")
    assert LineResult.from_text(crossed) == result


def test_a_line_result_whose_message_json_rejects_still_crosses() -> None:
    result = LineResult("scored", "multi_turn_base_0", error_type="t", error_message=[{(1, 2): "tuple key"}],
                        line='{"id": "multi_turn_base_0"}')
    back = LineResult.from_text(result.to_text())
    assert back.line == result.line and back.error_type == "t" and back.error_message == ["(see the score file)"]


def test_in_process_pool_counts_each_line() -> None:
    seen = Counter()
    InProcessPool(_square).map(_tasks([2, 3]), lambda n: seen.update([n]))
    assert seen == Counter({1: 5})
