"""The six leaderboard CSVs against the reference's own ``bfcl evaluate``.

Each scenario is a result tree scored as a user mixing tools would: the reference
scores the single-turn categories first (its official score files), then the
multi-turn categories are scored once by the reference (``eval_runner.main``, in a
child process in its own environment, tests/reference_leaderboard.py) and once by
``bfcl-safe evaluate`` (through the CLI), each into its own copy of the score folder,
which also holds score files of other models that neither run wrote (format
sensitivity, web search, memory, and two models that tie). The six CSVs must be equal
byte for byte; the number of cells compared is printed (``-s``).
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from bfcl_safe.cli import main
from bfcl_safe.checker.leaderboard import (
    CSV_FILES,
    FORMAT_SENSITIVITY_CONFIGS,
    LIVE_ENTRY_COUNTS,
    Usage,
    _numpy_round,
    cost_and_latency,
    percentile_95,
)
from tests.generate_support import reference_sdk_dir
from tests.refenv import REAL_RESULTS, ROOT, reference_dir, reference_package_dir, wheel

REAL = REAL_RESULTS / "gpt-oss-120b-vllm-0.10.2" / "result" / "openai_gpt-oss-120b" / "multi_turn"
#: OpenAICompletionsHandler, FC, no prices: its cost comes from its latencies.
LOCAL_MODEL = "openbmb_MiniCPM-SALA-FC"
#: OpenAIResponsesHandler, FC, with prices: its cost comes from its tokens.
API_MODEL = "gpt-4o-mini-2024-07-18-FC"
#: Scored with the same files as API_MODEL: a tie in every table between two models of the
#: run, whose order is the result folder's listing order (ext4 lists by hash, not by name).
TIE_MODEL = "gpt-4.1-2025-04-14-FC"
SINGLE_TURN = {LOCAL_MODEL: {"simple_python": 5, "live_simple": 4, "irrelevance": 3},
               API_MODEL: {"simple_python": 5, "live_multiple": 3},
               TIE_MODEL: {"simple_python": 5, "live_multiple": 3}}
GROUP = {"simple_python": "non_live", "irrelevance": "non_live", "live_simple": "live", "live_multiple": "live"}


def _real_lines(category: str) -> list[str]:
    return (REAL / f"BFCL_v4_{category}_result.json").read_text(encoding="utf-8").splitlines()


def _single_turn_line(answer: dict, number: int) -> str:
    """A FC result line made from the ground truth (every third one wrong), with usage."""
    calls = []
    for call in answer["ground_truth"]:
        ((name, params),) = call.items()
        args = {key: values[0] for key, values in params.items() if values and values[0] != ""}
        if number % 3 == 2:
            args = {key: "wrong" for key in args}
        calls.append({name: json.dumps(args)})
    return json.dumps({"id": answer["id"], "result": calls, "input_token_count": 1000 + 37 * number,
                       "output_token_count": 11 * number, "latency": 0.5 + number / 7})


def _irrelevance_line(entry_id: str, number: int) -> str:
    return json.dumps({"id": entry_id, "result": "None of the functions fits.", "input_token_count": 900,
                       "output_token_count": 5 + number, "latency": 1.25 + number})


def _write_result_tree(root: Path, multi_turn: dict[str, dict[str, slice]]) -> Path:
    result = root / "result"
    answers = reference_package_dir() / "data" / "possible_answer"
    for model, categories in SINGLE_TURN.items():
        for category, count in categories.items():
            folder = result / model / GROUP[category]
            folder.mkdir(parents=True, exist_ok=True)
            if category == "irrelevance":
                lines = [_irrelevance_line(f"irrelevance_{n}", n) for n in range(count)]
            else:
                source = (answers / f"BFCL_v4_{category}.json").read_text(encoding="utf-8").splitlines()
                lines = [_single_turn_line(json.loads(line), n) for n, line in enumerate(source[:count])]
            (folder / f"BFCL_v4_{category}_result.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for model, categories in multi_turn.items():
        folder = result / model / "multi_turn"
        folder.mkdir(parents=True, exist_ok=True)
        for category, part in categories.items():
            lines = _real_lines(category)[part]
            (folder / f"BFCL_v4_{category}_result.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return result


def _summary(accuracy_of: int, total: int, **extra: object) -> str:
    return json.dumps({"accuracy": accuracy_of / total, "correct_count": accuracy_of, "total_count": total,
                       **extra}) + "\n"


#: Score files of models neither run scores (as other tools or earlier runs left them).
FOREIGN = {
    "google_gemma-3-1b-it": {
        ("format_sensitivity", "format_sensitivity"): _summary(
            300, 1000, accuracy_max_delta=12.5, accuracy_variance=20.1, accuracy_std=4.48,
            **{config: {"accuracy": (n % 5) / 4, "correct_count": n % 5, "total_count": 4}
               for n, config in enumerate(FORMAT_SENSITIVITY_CONFIGS[:7])}),
        ("agentic", "web_search_base"): _summary(33, 100),
        ("agentic", "memory_kv"): _summary(10, 155),
        ("multi_turn", "multi_turn_base"): _summary(21, 200),
        ("live", "live_relevance"): _summary(13, 16),
        ("non_live", "simple_java"): _summary(60, 100),
    },
    # Two models that tie everywhere: their order is the score folder's listing order.
    "Qwen_Qwen3-8B-FC": {("multi_turn", "multi_turn_miss_param"): _summary(50, 200),
                         ("live", "live_parallel"): _summary(8, 16)},
    "Qwen_Qwen3-8B": {("multi_turn", "multi_turn_miss_param"): _summary(50, 200),
                      ("live", "live_parallel"): _summary(8, 16)},
}


def _run_reference(root: Path, result: Path, score: Path, categories: list[str], partial: bool) -> None:
    config = {"ref_dir": str(reference_dir()), "sdk_dir": str(reference_sdk_dir()), "project_root": str(root),
              "result_dir": str(result), "score_dir": str(score), "models": None, "categories": categories,
              "partial": partial}
    env = dict(os.environ, PYTHONPATH="")
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "reference_leaderboard.py"), json.dumps(config)],
                          capture_output=True, text=True, env=env, timeout=900, cwd=root)
    assert done.returncode == 0, done.stderr[-3000:]


def _cells(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))


SCENARIOS = {
    # Parts of files, --partial-eval on both sides; two models scored in the run.
    "partial": ({LOCAL_MODEL: {"multi_turn_base": slice(0, 8), "multi_turn_miss_param": slice(0, 5)},
                 API_MODEL: {"multi_turn_base": slice(3, 12), "multi_turn_miss_func": slice(0, 6)},
                 TIE_MODEL: {"multi_turn_base": slice(3, 12), "multi_turn_miss_func": slice(0, 6)}}, True),
    # Whole files (the 600 real entries), no --partial-eval.
    "full": ({LOCAL_MODEL: {c: slice(None) for c in ("multi_turn_base", "multi_turn_miss_func",
                                                      "multi_turn_miss_param")}}, False),
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_six_csvs_equal_the_reference(tmp_path: Path, scenario: str) -> None:
    multi_turn, partial = SCENARIOS[scenario]
    result = _write_result_tree(tmp_path, multi_turn)
    first = tmp_path / "score-single-turn"
    _run_reference(tmp_path, result, first, sorted({c for cats in SINGLE_TURN.values() for c in cats}), True)
    reference_scores, our_scores = tmp_path / "score-reference", tmp_path / "score-ours"
    for score in (reference_scores, our_scores):  # the same creation order: the same listing order
        shutil.copytree(first, score)
        for model, files in FOREIGN.items():
            for (group, category), text in files.items():
                path = score / model / group / f"BFCL_v4_{category}_score.json"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
    _run_reference(tmp_path, result, reference_scores, ["multi_turn"], partial)
    args = ["evaluate", "--result-dir", str(result), "--score-dir", str(our_scores), "--test-category",
            "multi_turn", "--data", str(wheel())] + (["--partial-eval"] if partial else [])
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 0, (out.output, out.exception)
    compared = 0
    for name in CSV_FILES:
        ours, theirs = our_scores / name, reference_scores / name
        assert ours.read_bytes() == theirs.read_bytes(), name
        compared += sum(len(row) for row in _cells(theirs))
    rows = {name: len(_cells(reference_scores / name)) - 1 for name in CSV_FILES}
    assert set(rows.values()) == {6}, rows  # every model in every file
    overall = _cells(reference_scores / "data_overall.csv")
    costs = {row[2]: row[4] for row in overall[1:]}
    # Cost and latency come from the result files scored in this run only (as in the reference).
    scored = {LOCAL_MODEL: "MiniCPM-SALA (FC)", API_MODEL: "GPT-4o-mini-2024-07-18 (FC)",
              TIE_MODEL: "GPT-4.1-2025-04-14 (FC)"}
    assert {name: costs[name] != "N/A" for name in scored.values()} == \
        {name: folder in multi_turn for folder, name in scored.items()}
    if scenario == "partial":  # the tie is there, and not in name order
        names = [row[1] for row in _cells(reference_scores / "data_multi_turn.csv")[1:]]
        tied = [n for n in names if n.startswith("GPT-4")]
        listed = [name for name in os.listdir(result) if name in (API_MODEL, TIE_MODEL)]
        assert tied == [scored[name] for name in listed]
    print(f"\n{scenario}: 6 files, {compared} cells compared, 0 differences")


# --------------------------------------------------------------------------- pieces


def test_live_entry_counts_are_the_wheels() -> None:
    data = reference_package_dir() / "data"
    for category, count in LIVE_ENTRY_COUNTS.items():
        lines = (data / f"BFCL_v4_{category}.json").read_text(encoding="utf-8").splitlines()
        assert len([line for line in lines if line.strip()]) == count, category


def test_format_sensitivity_configs_are_the_references() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); import json;"
         "from bfcl_eval.utils import get_all_format_sensitivity_configs as f; print(json.dumps(f()))",
         str(reference_dir())],
        capture_output=True, text=True, env=dict(os.environ, BFCL_PROJECT_ROOT=str(ROOT / ".ref")), timeout=300,
    )
    if done.returncode != 0:  # utils imports the SDK folder's packages too
        done = subprocess.run(
            [sys.executable, "-c", "import sys; sys.path[:0] = sys.argv[1:3]; import json;"
             "from bfcl_eval.utils import get_all_format_sensitivity_configs as f; print(json.dumps(f()))",
             str(reference_sdk_dir()), str(reference_dir())],
            capture_output=True, text=True, env=dict(os.environ, BFCL_PROJECT_ROOT=str(ROOT / ".ref")), timeout=300,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    assert tuple(json.loads(done.stdout)) == FORMAT_SENSITIVITY_CONFIGS


import numpy  # noqa: E402 (the test extra installs it; the reference needs it too)


@pytest.mark.parametrize("values", [
    [1.0], [0.5, 2.25], [3, 1, 2], [0.1] * 20, [float(n) / 7 for n in range(1, 40)],
    [1e-9, 5e6, 3.3, 2.675, 1.005, 1e300], [2.675, 2.665], list(range(1, 101)),
])
def test_percentile_and_rounding_equal_numpys(values: list) -> None:
    expected = numpy.percentile(values, 95)
    assert percentile_95(values) == expected
    assert _numpy_round(percentile_95(values)) == round(expected, 2)
    assert str(_numpy_round(percentile_95(values))) == str(round(expected, 2))


def test_one_latency_has_no_standard_deviation() -> None:
    usage = Usage()
    usage.add({"latency": [[1.5, 0, "x"]], "input_token_count": 10, "output_token_count": [[2, 3]]})
    assert usage.latencies == [1.5] and usage.input_tokens == [10] and usage.output_tokens == [2, 3]
    assert cost_and_latency(None, usage) == ("N/A", 1.5, "N/A", 1.5)


def test_too_many_usage_numbers_give_na_not_minutes(monkeypatch) -> None:
    from bfcl_safe.checker import leaderboard

    monkeypatch.setattr(leaderboard, "MAX_USAGE_NUMBERS", 10)
    usage = Usage()
    usage.add_usage(([1.0] * 6, [5] * 3, [2]))
    assert not usage.overflow and cost_and_latency(None, usage)[1] == 1.0
    usage.add_usage(([1.0], [1], []))
    assert usage.overflow and usage.latencies == []
    assert cost_and_latency(None, usage) == ("N/A", "N/A", "N/A", "N/A")
