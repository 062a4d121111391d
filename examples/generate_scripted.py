"""``bfcl-safe generate`` end to end, offline: a scripted OpenAI-compatible server plays
the model, generate writes BFCL result files, ``--evaluate`` scores them.

    python examples/generate_scripted.py [--data WHEEL] [--mode fc|prompting] [--policy truth|mixed] [ID ...]

The scripted server is ``bfcl_safe.checker.scripted_server`` (a real HTTP server on
127.0.0.1 answering chat completions from a script; ``python -m
bfcl_safe.checker.scripted_server --policy truth`` runs it on its own). The ``truth``
policy answers each turn with its ground-truth calls, then a text reply: every entry
scores 100%. The ``mixed`` policy also sends mutated calls, malformed calls, text with
no call and endless calls (force-terminated after BFCL's 20 steps), per turn.

A real model is one flag away: ``--base-url http://localhost:8000/v1`` (vLLM, SGLang,
llama.cpp's server, OpenAI, ...) instead of the scripted server's address.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Callable, Sequence

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DEFAULT_IDS = ["multi_turn_base_0", "multi_turn_base_1", "multi_turn_miss_func_0", "multi_turn_long_context_2"]


def main(argv: Sequence[str] | None = None, log: Callable[[str], None] = print) -> int:
    from click.testing import CliRunner

    from bfcl_safe.cli import main as bfcl_safe
    from bfcl_safe.checker.contract import MULTI_TURN_CATEGORIES, category_of
    from bfcl_safe.checker.dataset import Dataset
    from bfcl_safe.checker.scripted_server import EntryScript, ScriptedServer, mixed_policy, truth_policy

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help="bfcl-eval wheel or folder (default: the cache)")
    parser.add_argument("--mode", choices=["fc", "prompting"], default="fc")
    parser.add_argument("--policy", choices=["truth", "mixed"], default="truth")
    parser.add_argument("--out", default=None, help="folder for result/ and score/ (default: a temporary one)")
    parser.add_argument("ids", nargs="*", default=DEFAULT_IDS)
    args = parser.parse_args(argv)

    dataset = Dataset.open(args.data)
    ids = args.ids or DEFAULT_IDS
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="bfcl-safe-generate-"))
    policy = truth_policy if args.policy == "truth" else mixed_policy
    model = "scripted-model"
    status = 0
    for category in MULTI_TURN_CATEGORIES:
        chosen = [i for i in ids if category_of(i) == category]
        if not chosen:
            continue
        # One server per category: entries of different categories can open with the same question.
        with ScriptedServer(EntryScript(dataset, dataset.ids(category), args.mode, policy)) as server:
            done = CliRunner().invoke(bfcl_safe, [
                "generate", "--model", model, f"--{args.mode}", "--base-url", server.base_url,
                "--ids", ",".join(chosen), "--result-dir", str(out / "result"), "--allow-overwrite",
                *(["--data", args.data] if args.data else []),
            ])
            log(f"{category}: {len(server.requests)} requests answered; generate exit {done.exit_code}")
            status = status or done.exit_code
    done = CliRunner().invoke(bfcl_safe, [
        "evaluate", "--result-dir", str(out / "result"), "--score-dir", str(out / "score"), "--partial-eval",
        "--decoder", args.mode, *(["--data", args.data] if args.data else []),
    ])
    status = status or done.exit_code
    passed = total = 0
    for score in sorted((out / "score" / model / "multi_turn").glob("*_score.json")):
        summary = json.loads(score.read_text().splitlines()[0])
        passed += summary["correct_count"]
        total += summary["total_count"]
    log(f"results: {out / 'result' / model}")
    log(f"{passed}/{total} entries passed")
    return status


if __name__ == "__main__":
    sys.exit(main())
