"""The pool behind ``--jobs``: ``checker.parallel.ForkPool`` (forked children, one text frame
per scored line) against the standard library's ``concurrent.futures.ProcessPoolExecutor``
(fork context, batches and results pickled) running the same per-batch function
(``checker.scoring.score_batch``) on the same batches, and against one process.

    python benchmarks/bench_pool.py [--copies 20] [--jobs 2] [--rounds 3]

The corpus is ``--copies`` copies of the real FC results (20 copies: 12,000 entries). Only
the pool is timed: lines are read once, before; results are decoded (``LineResult``) after
each run, as the runner does. Rounds alternate the three. Prints the medians, wall clock.

Measured 2026-12-01, 2 CPUs shared with other work (load 14, so rough): 12,000 entries,
--jobs 2, 3 rounds: ForkPool 50.3 s, ProcessPoolExecutor 59.9 s, one process 62.6 s
(ForkPool 19% faster than the executor).
"""

from __future__ import annotations

import argparse
import functools
import json
import multiprocessing
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.corpora import replicate  # noqa: E402
from bfcl_safe.checker.dataset import Dataset  # noqa: E402
from bfcl_safe.checker.parallel import ForkPool, InProcessPool  # noqa: E402
from bfcl_safe.checker.result_files import discover, read_lines  # noqa: E402
from bfcl_safe.checker.scoring import Context, LineResult, score_batch, score_text  # noqa: E402
from tests.refenv import REAL_RESULTS, wheel  # noqa: E402

_DATASET: Dataset | None = None


def _batch(task: tuple[str, list[str]]) -> list[str]:
    """What a ProcessPoolExecutor worker runs (the dataset inherited by fork)."""
    return score_batch(_DATASET, *task)


def tasks_of(result_dir: Path, dataset: Dataset, size: int = 25) -> list[tuple[str, list[str]]]:
    tasks = []
    for result_file in discover(result_dir).files:
        header = Context(result_file.model, result_file.category, "auto").to_text()
        lines = [line.text for line in read_lines(result_file.path) if line.text is not None]
        tasks += [(header, lines[start : start + size]) for start in range(0, len(lines), size)]
    return tasks


def main() -> None:
    global _DATASET
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    dataset = _DATASET = Dataset.open(wheel())
    for category in ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param"):
        dataset.entries(category)
        dataset.ground_truth(category)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = replicate(REAL_RESULTS / "gpt-oss-120b-vllm-0.10.2" / "result", Path(tmp), args.copies)
        tasks = tasks_of(corpus, dataset)
    entries = sum(len(lines) for _, lines in tasks)
    work = functools.partial(score_text, dataset)

    def fork_pool() -> list:
        return ForkPool(work, args.jobs).map(tasks)

    def executor() -> list:
        with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("fork")) as pool:
            return list(pool.map(_batch, tasks, chunksize=1))

    def one_process() -> list:
        return InProcessPool(work).map(tasks)

    runs = {"ForkPool": fork_pool, "ProcessPoolExecutor": executor, "one process": one_process}
    times: dict[str, list[float]] = {name: [] for name in runs}
    reference = None
    for _ in range(args.rounds):
        for name, run in runs.items():
            started = time.perf_counter()
            results = [[LineResult.from_text(text) for text in batch] for batch in run()]
            times[name].append(time.perf_counter() - started)
            if reference is None:
                reference = results
            assert results == reference, f"{name} gives other results"
    medians = {name: statistics.median(values) for name, values in times.items()}
    row = {"entries": entries, "jobs": args.jobs, "rounds": args.rounds,
           **{f"{name}_s": round(value, 3) for name, value in medians.items()},
           "forkpool_gain_over_executor": f"{100 * (medians['ProcessPoolExecutor'] / medians['ForkPool'] - 1):.1f}%"}
    print(json.dumps(row))


if __name__ == "__main__":
    main()
