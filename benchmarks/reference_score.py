"""Score a result tree with the REFERENCE (bfcl-eval 2026.3.23), the way `bfcl evaluate` does
for multi-turn categories: load_file(sort_by_id) + load_dataset_entry + load_ground_truth_entry,
then per entry the decode loop of `_evaluate_single_multi_turn_entry` and `multi_turn_checker`.

Run with the reference folder first on sys.path (benchmarks/bench_speed.py does this). Prints
one JSON line: entries scored, correct count, seconds spent in scoring.
"""

import json
import sys
import time
from pathlib import Path

from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import is_empty_execute_response
from bfcl_eval.model_handler.utils import convert_to_function_call, default_decode_execute_prompting
from bfcl_eval.utils import load_dataset_entry, load_file, load_ground_truth_entry


def main(result_dir: str, repeat: int = 1) -> None:
    started = time.perf_counter()
    entries = correct = 0
    for _ in range(repeat):
        for subdir in sorted(p for p in Path(result_dir).iterdir() if p.is_dir()):
            model = subdir.name
            for path in sorted(subdir.rglob("BFCL_v4_multi_turn_*_result.json")):
                category = path.name[len("BFCL_v4_"):-len("_result.json")]
                results = load_file(path, sort_by_id=True)
                prompts = {e["id"]: e for e in load_dataset_entry(category, include_prereq=False,
                                                                   include_language_specific_hint=False)}
                answers = {e["id"]: e for e in load_ground_truth_entry(category)}
                for item in results:
                    entries += 1
                    truth = answers[item["id"]]["ground_truth"]
                    turns = item["result"]
                    if type(turns) != list or len(turns) != len(truth):
                        continue
                    decoded = []
                    for turn in turns:
                        steps = []
                        for step in turn:
                            try:
                                calls = (convert_to_function_call(step) if not isinstance(step, str)
                                         else default_decode_execute_prompting(step))
                                if is_empty_execute_response(calls):
                                    continue
                                steps.append(calls)
                            except Exception:
                                continue
                        decoded.append(steps)
                    prompt = dict(prompts[item["id"]])
                    prompt.pop("function", None)
                    verdict = multi_turn_checker(decoded, truth, prompt, category, model)
                    correct += bool(verdict["valid"])
    print(json.dumps({"entries": entries, "correct": correct, "seconds": time.perf_counter() - started}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1)
