"""Memory: score 1x and then 5x the same corpus in ONE process; print both peaks.

    python benchmarks/bench_memory.py [--result-dir DIR] [--factor 5]

The 5x corpus repeats every result file's lines five times under five model folders
(so entries are really scored five times over, not deduplicated). Peaks are measured
with tracemalloc (Python allocations), reset between the two runs, with the garbage
collector set as the `bfcl-safe` command sets it. Memory is flat when the 5x peak stays
close to the 1x peak: nothing is kept per scored entry.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.corpora import replicate  # noqa: E402
from bfcl_safe.launcher import GC_THRESHOLDS  # noqa: E402
from bfcl_safe.checker.dataset import Dataset  # noqa: E402
from bfcl_safe.checker.runner import score_tree
from bfcl_safe.checker.scoring import Options  # noqa: E402
from tests.refenv import REAL_RESULTS, wheel  # noqa: E402


def peak(result_dir: Path, dataset: Dataset) -> tuple[int, int]:
    with tempfile.TemporaryDirectory() as score_dir:
        tracemalloc.reset_peak()
        scores = score_tree(result_dir, Path(score_dir), dataset, Options(decoder="auto"))
        _, top = tracemalloc.get_traced_memory()
    return sum(s.total for s in scores), top


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--result-dir", type=Path, default=REAL_RESULTS / "gpt-oss-120b-vllm-0.10.2" / "result")
    parser.add_argument("--factor", type=int, default=5)
    args = parser.parse_args()
    gc.set_threshold(*GC_THRESHOLDS)
    dataset = Dataset.open(wheel())
    tracemalloc.start()
    with tempfile.TemporaryDirectory() as tmp:
        one = replicate(args.result_dir, Path(tmp) / "x1", 1)
        many = replicate(args.result_dir, Path(tmp) / f"x{args.factor}", args.factor)
        # Warm-up: the first run loads the dataset and fills caches that every run shares.
        peak(one, dataset)
        entries_one, peak_one = peak(one, dataset)
        entries_many, peak_many = peak(many, dataset)
    print(json.dumps({
        "entries_1x": entries_one, "peak_1x_mb": round(peak_one / 2**20, 1),
        f"entries_{args.factor}x": entries_many, f"peak_{args.factor}x_mb": round(peak_many / 2**20, 1),
        "ratio": round(peak_many / peak_one, 2),
    }))


if __name__ == "__main__":
    main()
