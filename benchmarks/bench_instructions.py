"""Instructions: what `bfcl-safe evaluate` executes on each corpus, counted by valgrind.

    python benchmarks/bench_instructions.py [--result-dir DIR] [--pythonpath P --module M]

Wall-clock time on a shared machine moves by 10-30% from one minute to the next; the
number of instructions a whole process executes (valgrind's cachegrind, user space) does
not: repeated runs agree within 0.2%. It is the figure to steer speed work by; confirm
with `bench_speed.py` at the end. Without --result-dir it counts the two corpora of
`bench_speed.py` (the real FC results and the ground truth replayed as a prompting model).

`--pythonpath P --module M` counts another version of the code instead, e.g. a worktree of
an older commit: `--pythonpath /tmp/wt-old --module checker` for the layout before the
`bfcl_safe` namespace (`python -m M evaluate ...` is run with PYTHONPATH=P).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.corpora import prompting_corpus  # noqa: E402
from tests.refenv import REAL_RESULTS, wheel  # noqa: E402

_TOTAL = re.compile(r"I\s+refs:\s+([\d,]+)")


def count(result_dir: Path, module: str, pythonpath: str | None) -> int:
    """Instructions of one whole ``python -m MODULE evaluate`` process on ``result_dir``
    (a first run, not counted, writes the bytecode caches)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONHASHSEED"] = "0"
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    cwd = pythonpath or tempfile.gettempdir()
    with tempfile.TemporaryDirectory() as score_dir:
        command = [sys.executable, "-m", module, "evaluate", "--result-dir", str(result_dir), "--data", str(wheel()),
                   "--score-dir", score_dir]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    with tempfile.TemporaryDirectory() as score_dir:
        command[-1] = score_dir
        done = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                               *command], capture_output=True, text=True, env=env, cwd=cwd)
    found = _TOTAL.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"valgrind run failed (exit {done.returncode}): {done.stderr[-500:]}")
    return int(found.group(1).replace(",", ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--result-dir", type=Path)
    parser.add_argument("--module", default="bfcl_safe")
    parser.add_argument("--pythonpath")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed")
    with tempfile.TemporaryDirectory() as tmp:
        corpora = ([(args.result_dir, str(args.result_dir))] if args.result_dir else
                   [(REAL_RESULTS / "gpt-oss-120b-vllm-0.10.2" / "result", "real FC results"),
                    (prompting_corpus(Path(tmp) / "prompting"), "ground truth as prompting model")])
        for result_dir, label in corpora:
            total = count(result_dir, args.module, args.pythonpath)
            print(f"{label}: {total / 1e6:,.1f} M instructions", flush=True)


if __name__ == "__main__":
    main()
