"""Score a result tree with the REFERENCE (bfcl-eval 2026.3.23) the way `bfcl evaluate` does for
the multi-turn categories, score files included.

Per result file: `load_file(sort_by_id=True)`, `load_dataset_entry`, `load_ground_truth_entry`,
then per entry the decode loop of `_evaluate_single_multi_turn_entry` and `multi_turn_checker`;
failed entries get the failure record `_evaluate_single_multi_turn_entry` and `multi_turn_runner`
build (prompt, raw and decoded model result, possible answer, inference log), and the score file
is written with the reference's own `write_list_of_dicts_to_file` (every record through
`make_json_serializable` and `json.dumps`), as `save_eval_results` does. That is the work
`bfcl-safe evaluate` does. The reference's `eval_runner` module itself cannot be imported here: it
imports the model registry and with it every provider SDK. So the few lines of glue between those
functions are restated below, and a stand-in handler decodes each step the way bfcl-safe's `auto`
decoder does (`convert_to_function_call` for a list of call dicts, `default_decode_execute_prompting`
for text). Left out: the leaderboard CSVs, which need the model in the reference's registry.

    PYTHONPATH=.ref python benchmarks/reference_score.py RESULT_DIR SCORE_DIR
    PYTHONPATH=.ref python benchmarks/reference_score.py RESULT_DIR --core

`--core` runs only decoding and `multi_turn_checker` (no failure records, no score files): the
reference's scoring loop alone, a lower bound of its time. Run with the reference folder first on
sys.path (benchmarks/bench_speed.py does this). Prints one JSON line: entries scored, correct
count, seconds spent scoring.
"""

import argparse
import json
import time
from pathlib import Path

from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import is_empty_execute_response
from bfcl_eval.model_handler.utils import convert_to_function_call, default_decode_execute_prompting
from bfcl_eval.constants.category_mapping import VERSION_PREFIX
from bfcl_eval.utils import (
    get_directory_structure_by_category,
    load_dataset_entry,
    load_file,
    load_ground_truth_entry,
    write_list_of_dicts_to_file,
)


class AutoHandler:
    """What `get_handler` returns, as far as `multi_turn_runner` uses it: `decode_execute`."""

    @staticmethod
    def decode_execute(step, has_tool_call_tag=False):
        if isinstance(step, str):
            return default_decode_execute_prompting(step, has_tool_call_tag)
        return convert_to_function_call(step)


def decode_turns(turns):
    """The decode loop of `_evaluate_single_multi_turn_entry`."""
    decoded = []
    for turn in turns:
        steps = []
        for step in turn:
            try:
                calls = AutoHandler.decode_execute(step, has_tool_call_tag=False)
                if is_empty_execute_response(calls):
                    continue
                steps.append(calls)
            except Exception:
                continue
        decoded.append(steps)
    return decoded


def failure(entry_id, model, category, error, prompt, turns, truth, decoded=None):
    record = {"id": entry_id, "model_name": model, "test_category": category, "valid": False, "error": error,
              "prompt": prompt}
    if decoded is None:
        record.update({"model_result": turns, "possible_answer": truth})
    else:
        record.update({"model_result_raw": turns, "model_result_decoded": decoded, "possible_answer": truth})
    return record


def score_file(model_result, prompt, possible_answer, model, category, score_dir) -> int:
    """One result file; returns the number of correct entries. Without `score_dir`: `--core`."""
    correct = 0
    failures = []
    for item, entry, answer in zip(model_result, prompt, possible_answer):
        truth = answer["ground_truth"]
        turns = item["result"]
        entry.pop("function", None)
        if type(turns) != list:
            record = failure(item["id"], model, category, {
                "error_message": ["Error during inference phase. Model did not output a list of model responses."],
                "error_type": "multi_turn:inference_error"}, entry, turns, truth)
        elif len(turns) != len(truth):
            record = failure(item["id"], model, category, {
                "error_message": [f"Model was force-terminated during inference phase. The length of the model "
                                  f"result turns ({len(turns)}) does not match the length of the ground truth "
                                  f"turns ({len(truth)})."],
                "error_type": "multi_turn:force_terminated"}, entry, turns, truth)
        else:
            decoded = decode_turns(turns)
            verdict = multi_turn_checker(decoded, truth, entry, category, model)
            if verdict["valid"]:
                correct += 1
                continue
            if score_dir is None:
                continue
            record = failure(item["id"], model, category, verdict, entry, turns, truth, decoded)
            record["valid"] = verdict.pop("valid")
        if score_dir is None:
            continue
        record["inference_log"] = item.get("inference_log", "")
        failures.append(record)
    if score_dir is not None:
        header = {"accuracy": correct / len(model_result), "correct_count": correct,
                  "total_count": len(model_result)}
        write_list_of_dicts_to_file(f"{VERSION_PREFIX}_{category}_score.json", [header, *failures],
                                    score_dir / model / get_directory_structure_by_category(category))
    return correct


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("result_dir", type=Path)
    parser.add_argument("score_dir", type=Path, nargs="?")
    parser.add_argument("--core", action="store_true", help="decoding and multi_turn_checker only")
    args = parser.parse_args()
    if args.core == (args.score_dir is not None):
        parser.error("give either SCORE_DIR or --core")
    started = time.perf_counter()
    entries = correct = 0
    for subdir in sorted(p for p in args.result_dir.iterdir() if p.is_dir()):
        model = subdir.name
        for path in sorted(subdir.rglob("BFCL_v4_multi_turn_*_result.json")):
            category = path.name[len("BFCL_v4_"):-len("_result.json")]
            model_result = load_file(path, sort_by_id=True)
            present = {item["id"] for item in model_result}
            prompt = load_dataset_entry(category, include_prereq=False, include_language_specific_hint=False)
            answers = load_ground_truth_entry(category)
            # `_subset_entries_by_model_ids`: prompt and ground truth are aligned by position.
            kept = [(entry, answer) for entry, answer in zip(prompt, answers) if entry["id"] in present]
            entries += len(model_result)
            correct += score_file(model_result, [e for e, _ in kept], [a for _, a in kept], model, category,
                                  args.score_dir)
    print(json.dumps({"entries": entries, "correct": correct, "seconds": time.perf_counter() - started}))


if __name__ == "__main__":
    main()
