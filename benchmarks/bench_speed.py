"""Speed: bfcl-safe vs the reference on the same result files, whole processes, several rounds.

    python benchmarks/bench_speed.py [--result-dir DIR] [--rounds 5] [--jobs 1]
    python benchmarks/bench_speed.py --jobs-scaling [--result-dir DIR] [--rounds 5] [--copies N]

Without --result-dir it benchmarks two corpora: the real FC results in
../shared/real-results and the ground truth of all 800 entries replayed as a
prompting model. Each round runs `bfcl-safe evaluate` and the reference
(benchmarks/reference_score.py) as fresh processes, timing the whole process
(start-up and data loading included). Both write score files: the reference runs
its scoring loop and its own score-file writer, as `bfcl evaluate` does. Prints
entries/s and the ratio (medians of wall-clock time), the same ratio for CPU time
(user + system), which a busy machine disturbs less, the median of per-round ratios
(``speedup_paired``: both run back to back in each round), and the ratio against the
reference's scoring loop alone (`reference_score.py --core`: no score files), a
lower bound of the reference's time.

`--jobs-scaling` times bfcl-safe alone with --jobs 1 and --jobs 2, alternating, on the
same corpora (or N copies of them), after measuring what a second process gains on
this machine for pure Python work: the ceiling of any --jobs 2 speed-up here.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.corpora import prompting_corpus, replicate  # noqa: E402
from tests.refenv import REAL_RESULTS, reference_dir, wheel  # noqa: E402


def count_entries(result_dir: Path) -> int:
    return sum(1 for p in result_dir.rglob("BFCL_v4_multi_turn_*_result.json") for line in open(p) if line.strip())


def time_process(command: list[str], env: dict | None = None) -> tuple[float, float]:
    """Wall-clock seconds and CPU seconds (user + system) of one whole process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def bench(result_dir: Path, rounds: int, jobs: int, label: str) -> dict:
    entries = count_entries(result_dir)
    bfcl_safe = [sys.executable, "-m", "bfcl_safe", "evaluate", "--result-dir", str(result_dir),
                 "--data", str(wheel()), "--jobs", str(jobs)]
    # Both sides use cached bytecode (pip compiled the reference's at install time).
    base_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env = dict(base_env, PYTHONPATH=str(reference_dir()))
    reference = [sys.executable, str(ROOT / "benchmarks" / "reference_score.py"), str(result_dir)]
    with tempfile.TemporaryDirectory() as score_dir:  # warm-up: bytecode caches, disk caches
        time_process([*bfcl_safe, "--score-dir", score_dir], base_env)
        time_process([*reference, score_dir + "/reference"], env)
    ours, theirs, core = [], [], []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as score_dir:
            ours.append(time_process([*bfcl_safe, "--score-dir", score_dir], base_env))
        with tempfile.TemporaryDirectory() as score_dir:
            theirs.append(time_process([*reference, score_dir], env))
        core.append(time_process([*reference, "--core"], env))
    ours_s = statistics.median(w for w, _ in ours)
    theirs_s = statistics.median(w for w, _ in theirs)
    core_s = statistics.median(w for w, _ in core)
    ours_cpu = statistics.median(c for _, c in ours)
    theirs_cpu = statistics.median(c for _, c in theirs)
    row = {
        "corpus": label, "entries": entries, "rounds": rounds, "jobs": jobs,
        "bfcl_safe_s": round(ours_s, 3), "reference_s": round(theirs_s, 3),
        "bfcl_safe_entries_per_s": round(entries / ours_s, 1),
        "reference_entries_per_s": round(entries / theirs_s, 1),
        "speedup": round(theirs_s / ours_s, 2),
        "bfcl_safe_cpu_s": round(ours_cpu, 3), "reference_cpu_s": round(theirs_cpu, 3),
        "cpu_speedup": round(theirs_cpu / ours_cpu, 2),
        "reference_core_s": round(core_s, 3), "speedup_vs_core": round(core_s / ours_s, 2),
        # Each round runs both back to back: the median of the per-round ratios is the
        # figure least moved by a machine whose speed drifts during the benchmark.
        "speedup_paired": round(statistics.median(t[0] / o[0] for t, o in zip(theirs, ours)), 2),
    }
    print(json.dumps(row))
    return row


def bench_jobs(result_dir: Path, rounds: int, label: str) -> dict:
    """bfcl-safe alone with --jobs 1 and --jobs 2, alternating (wall clock: the point is
    using both cores); one warm-up run of each first."""
    entries = count_entries(result_dir)
    base_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    samples: dict[int, list[float]] = {1: [], 2: []}
    for round_ in range(rounds + 1):
        for jobs in (1, 2):
            command = [sys.executable, "-m", "bfcl_safe", "evaluate", "--result-dir", str(result_dir),
                       "--data", str(wheel()), "--jobs", str(jobs)]
            with tempfile.TemporaryDirectory() as score_dir:
                wall = time_process([*command, "--score-dir", score_dir], base_env)[0]
            if round_:
                samples[jobs].append(wall)
    times = {jobs: statistics.median(values) for jobs, values in samples.items()}
    row = {"corpus": label, "entries": entries, "jobs1_s": round(times[1], 3), "jobs2_s": round(times[2], 3),
           "jobs_speedup": round(times[1] / times[2], 2),
           "jobs_speedup_paired": round(statistics.median(a / b for a, b in zip(samples[1], samples[2])), 2)}
    print(json.dumps(row))
    return row


def _burn(iterations: int) -> None:
    total = 0
    for i in range(iterations):
        total += i


def machine_parallel_speedup(rounds: int, seconds: float = 0.3) -> dict:
    """What two processes gain over one on this machine for pure Python work, no I/O,
    nothing shared: the same loop run once, then twice at the same time (this process
    and a forked child), alternating. The ceiling of any --jobs 2 speed-up here."""
    started = time.perf_counter()
    _burn(1_000_000)
    iterations = int(1_000_000 * seconds / max(time.perf_counter() - started, 1e-6))
    ratios = []
    for _ in range(rounds):
        started = time.perf_counter()
        _burn(iterations)
        one = time.perf_counter() - started
        started = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            try:
                _burn(iterations)
            finally:
                os._exit(0)
        _burn(iterations)
        os.waitpid(pid, 0)
        ratios.append(2 * one / (time.perf_counter() - started))
    row = {"machine": f"{os.cpu_count()} CPUs", "work_per_process_s": seconds,
           "parallel_speedup_median": round(statistics.median(ratios), 2),
           "parallel_speedup_range": [round(min(ratios), 2), round(max(ratios), 2)]}
    print(json.dumps(row))
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--result-dir", type=Path)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--jobs-scaling", action="store_true",
                        help="compare --jobs 1 and --jobs 2 of bfcl-safe (and what this machine gains from a "
                             "second process on pure Python work)")
    parser.add_argument("--copies", type=int, default=1,
                        help="with --jobs-scaling: score this many copies of each corpus (under model folders "
                             "of their own)")
    args = parser.parse_args()
    if args.jobs_scaling:
        machine_parallel_speedup(args.rounds)
        with tempfile.TemporaryDirectory() as tmp:
            corpora = [(args.result_dir, str(args.result_dir))] if args.result_dir else [
                (REAL_RESULTS / "gpt-oss-120b-vllm-0.10.2" / "result", "real FC results"),
                (prompting_corpus(Path(tmp) / "prompting"), "ground truth as prompting model")]
            for number, (corpus, label) in enumerate(corpora):
                if args.copies > 1:  # (next to the corpus, not inside it)
                    corpus = replicate(corpus, Path(tmp) / f"copies-{number}", args.copies)
                    label = f"{label} x{args.copies}"
                bench_jobs(corpus, args.rounds, label)
        return
    if args.result_dir:
        bench(args.result_dir, args.rounds, args.jobs, str(args.result_dir))
        return
    bench(REAL_RESULTS / "gpt-oss-120b-vllm-0.10.2" / "result", args.rounds, args.jobs, "real FC results")
    with tempfile.TemporaryDirectory() as tmp:
        bench(prompting_corpus(Path(tmp)), args.rounds, args.jobs, "ground truth as prompting model")


if __name__ == "__main__":
    main()
