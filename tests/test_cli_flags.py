"""The command line a BFCL user types (issue 19): BFCL's flags and defaults, one error
boundary, what was written on Ctrl-C, score files the CSV included, data info/fetch,
explain on inference errors. Through click's CliRunner, messages asserted as patterns.
The result trees are the ground truth replayed (no real-result files needed)."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from bfcl_safe.checker import commands as cli_module
from bfcl_safe.checker import runner as runner_module
from bfcl_safe.checker.commands import select_categories
from bfcl_safe.cli import main
from bfcl_safe.checker.contract import MULTI_TURN_CATEGORIES, WHEEL_SHA256
from bfcl_safe.checker.replay import ground_truth_as_fc
from bfcl_safe.checker.score_files import ScoreFileError
from tests.checker_support import dataset
from tests.refenv import wheel

MODEL_A = "org_model-a"  # registry-style folder name: org/model-a
MODEL_B = "other-model"
ENTRIES = 3


def _tree(root: Path, models=(MODEL_A, MODEL_B), categories=MULTI_TURN_CATEGORIES, entries=ENTRIES) -> Path:
    data = dataset()
    result_dir = root / "result"
    for model in models:
        folder = result_dir / model / "multi_turn"
        folder.mkdir(parents=True, exist_ok=True)
        for category in categories:
            lines = []
            for entry in data.entries(category)[:entries]:
                result = ground_truth_as_fc(data.ground_truth_for(entry["id"]), entry["involved_classes"])
                lines.append(json.dumps({"id": entry["id"], "result": result}))
            (folder / f"BFCL_v4_{category}_result.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return result_dir


def _err(out) -> str:
    return out.stderr if hasattr(out, "stderr") else out.output


def _evaluate(runner, root: Path, *args: str, data: bool = True):
    extra = ["--data", str(wheel())] if data else []
    return runner.invoke(main, ["evaluate", "--result-dir", str(root / "result"), "--score-dir", str(root / "score"),
                                *extra, *args])


def _score_files(score_dir: Path) -> list[str]:
    return sorted(p.relative_to(score_dir).as_posix() for p in score_dir.rglob("*_score.json"))


def _csv(score_dir: Path) -> list[list[str]]:
    with open(score_dir / "data_multi_turn.csv", newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


# --------------------------------------------------------------------------- --model, --test-category


@pytest.mark.parametrize("given", ["org/model-a", MODEL_A], ids=["registry-name", "folder-name"])
def test_model_by_registry_or_folder_name(runner, tmp_path, given):
    _tree(tmp_path)
    out = _evaluate(runner, tmp_path, "--model", given, "--partial-eval")
    assert out.exit_code == 0, (out.output, _err(out))
    assert {path.split("/")[0] for path in _score_files(tmp_path / "score")} == {MODEL_A}


@pytest.mark.parametrize("args", [["--model", f"org/model-a,{MODEL_B}"], ["--model", "org/model-a", "--model", MODEL_B]],
                         ids=["comma-separated", "repeated"])
def test_several_models(runner, tmp_path, args):
    _tree(tmp_path)
    out = _evaluate(runner, tmp_path, *args, "--partial-eval")
    assert out.exit_code == 0, _err(out)
    assert {path.split("/")[0] for path in _score_files(tmp_path / "score")} == {MODEL_A, MODEL_B}


def test_a_model_with_no_results_is_a_one_line_error(runner, tmp_path):
    _tree(tmp_path)
    out = _evaluate(runner, tmp_path, "--model", "nobody/here", "--partial-eval")
    assert out.exit_code == 1
    message = _err(out).strip().splitlines()[-1]
    assert re.fullmatch(r"Error: no multi-turn result files for model\(s\) nobody_here under .*result "
                        rf"\(models with result files: {MODEL_A}, {MODEL_B}; --model takes a registry name .*\)",
                        message), message
    assert not (tmp_path / "score").exists() or not _score_files(tmp_path / "score")


CATEGORY_CASES = [
    ("default-all", [], list(MULTI_TURN_CATEGORIES), []),
    ("all", ["all"], list(MULTI_TURN_CATEGORIES), []),
    ("multi_turn", ["multi_turn"], list(MULTI_TURN_CATEGORIES), []),
    ("one", ["multi_turn_miss_param"], ["multi_turn_miss_param"], []),
    ("comma-and-repeat", ["multi_turn_long_context,multi_turn_base", "multi_turn_base"],
     ["multi_turn_base", "multi_turn_long_context"], []),
    ("other-bfcl-category", ["simple_python", "multi_turn_base"], ["multi_turn_base"],
     ["--test-category simple_python: not a multi-turn category, skipped"]),
    ("other-bfcl-collection", ["live", "multi_turn_base"], ["multi_turn_base"],
     ["--test-category live: not a multi-turn category, skipped"]),
]


@pytest.mark.parametrize("values, chosen, notices", [c[1:] for c in CATEGORY_CASES], ids=[c[0] for c in CATEGORY_CASES])
def test_test_category_values(values, chosen, notices):
    assert select_categories(values) == (chosen, notices)


def test_test_category_filters_the_files_scored(runner, tmp_path):
    _tree(tmp_path, models=(MODEL_A,))
    out = _evaluate(runner, tmp_path, "--test-category", "multi_turn_base", "--test-category", "simple_python",
                    "--partial-eval")
    assert out.exit_code == 0, _err(out)
    assert "note: --test-category simple_python: not a multi-turn category, skipped" in _err(out)
    assert _score_files(tmp_path / "score") == [f"{MODEL_A}/multi_turn/BFCL_v4_multi_turn_base_score.json"]


@pytest.mark.parametrize("values, code, pattern", [
    (["simple_python"], 1, r"Error: no multi-turn category selected: --test-category simple_python: not a multi-turn"),
    (["bogus"], 2, r"unknown test category 'bogus': expected multi_turn, all, one of multi_turn_base"),
], ids=["only-other-categories", "unknown-name"])
def test_test_category_errors(runner, tmp_path, values, code, pattern):
    _tree(tmp_path, models=(MODEL_A,))
    args = [arg for value in values for arg in ("--test-category", value)]
    out = _evaluate(runner, tmp_path, *args)
    assert out.exit_code == code
    assert re.search(pattern, _err(out)), _err(out)
    assert "Traceback" not in _err(out)


# --------------------------------------------------------------------------- defaults like bfcl


def test_result_and_score_default_under_the_project_root(runner, tmp_path, monkeypatch):
    _tree(tmp_path, models=(MODEL_A,), categories=("multi_turn_base",))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.setenv("BFCL_PROJECT_ROOT", str(tmp_path))
    out = runner.invoke(main, ["evaluate", "--model", "org/model-a", "--partial-eval", "--data", str(wheel())])
    assert out.exit_code == 0, _err(out)
    assert _score_files(tmp_path / "score") == [f"{MODEL_A}/multi_turn/BFCL_v4_multi_turn_base_score.json"]
    assert (tmp_path / "score" / "data_multi_turn.csv").is_file()
    # Relative --result-dir/--score-dir are taken from the project root too, as bfcl takes them.
    out = runner.invoke(main, ["evaluate", "--result-dir", "result", "--score-dir", "score-2", "--partial-eval",
                               "--data", str(wheel())])
    assert out.exit_code == 0, _err(out)
    assert (tmp_path / "score-2" / "data_multi_turn.csv").is_file()
    assert not list(elsewhere.iterdir())


def test_result_and_score_default_under_the_current_directory(runner, tmp_path, monkeypatch):
    _tree(tmp_path, models=(MODEL_A,), categories=("multi_turn_base",))
    monkeypatch.delenv("BFCL_PROJECT_ROOT", raising=False)
    monkeypatch.chdir(tmp_path)
    out = runner.invoke(main, ["evaluate", "--partial-eval", "--data", str(wheel())])
    assert out.exit_code == 0, _err(out)
    assert (tmp_path / "score" / MODEL_A / "multi_turn" / "BFCL_v4_multi_turn_base_score.json").is_file()


def test_no_result_folder_says_where_it_looked(runner, tmp_path, monkeypatch):
    monkeypatch.setenv("BFCL_PROJECT_ROOT", str(tmp_path))
    out = runner.invoke(main, ["evaluate", "--data", str(wheel())])
    assert out.exit_code == 2
    assert re.search(r"Invalid value for '--result-dir': .*result does not exist", _err(out)), _err(out)


@pytest.mark.parametrize("flag", ["--partial-eval", "--partial"])
def test_partial_eval_and_its_alias(runner, tmp_path, flag):
    _tree(tmp_path, models=(MODEL_A,), categories=("multi_turn_base",))
    out = _evaluate(runner, tmp_path, flag)
    assert out.exit_code == 0, _err(out)
    summary = json.loads((tmp_path / "score" / MODEL_A / "multi_turn" / "BFCL_v4_multi_turn_base_score.json")
                         .read_text().splitlines()[0])
    assert summary == {"accuracy": 1.0, "correct_count": ENTRIES, "total_count": ENTRIES}
    assert "note: --partial-eval: accuracies are over the entries present in each file" in _err(out)


def test_without_partial_eval_a_file_lacking_entries_is_reported(runner, tmp_path):
    _tree(tmp_path, models=(MODEL_A,), categories=("multi_turn_base",))
    out = _evaluate(runner, tmp_path)
    assert re.search(r"\b197 \w+ missing|missing.*197|197.*missing", _err(out)), _err(out)
    assert "--partial" in _err(out)
    # The official behaviour: the file is not scored, the run ends non-zero.
    assert out.exit_code == cli_module.EXIT_NOT_ALL_SCORED, _err(out)
    assert not (tmp_path / "score" / MODEL_A / "multi_turn" / "BFCL_v4_multi_turn_base_score.json").exists()


# --------------------------------------------------------------------------- display names, decoders


def test_model_name_sets_the_csv_display_name(runner, tmp_path):
    _tree(tmp_path, models=(MODEL_B,), categories=("multi_turn_base",))
    out = _evaluate(runner, tmp_path, "--partial-eval", "--model-name", "My Model, v2")
    assert out.exit_code == 0, _err(out)
    rows = _csv(tmp_path / "score")
    assert rows[1][1] == "My Model, v2" and len(rows[1]) == len(rows[0])


def test_model_name_needs_one_model(runner, tmp_path):
    _tree(tmp_path, categories=("multi_turn_base",))
    out = _evaluate(runner, tmp_path, "--partial-eval", "--model-name", "X")
    assert out.exit_code == 1
    assert re.match(r"Error: --model-name names one model, but 2 are scored", _err(out).strip())


def test_model_map_gives_display_names_and_decoders(runner, tmp_path):
    _tree(tmp_path, categories=("multi_turn_base",))
    mapping = tmp_path / "models.json"
    mapping.write_text(json.dumps({"org/model-a": {"display_name": "Model A"},
                                   MODEL_B: {"display_name": "Model B", "decoder": "prompting"}}))
    out = _evaluate(runner, tmp_path, "--partial-eval", "--model-map", str(mapping))
    assert out.exit_code == 0, _err(out)
    rows = {row[1]: row for row in _csv(tmp_path / "score")[1:]}
    assert set(rows) == {"Model A", "Model B"}
    # FC steps read as Python call text do not decode: model B fails what model A passes.
    assert rows["Model A"][3] == "100.00%" and rows["Model B"][3] == "0.00%"


@pytest.mark.parametrize("content, pattern", [
    ("[1, 2]", r"expected an object of model name -> settings"),
    ("{not json", r"models\.json: not JSON \(Expecting property name"),
    ('{"m": {"decoder": "nope"}}', r"'m': unknown decoder 'nope'"),
    ('{"m": {"colour": "red"}}', r"'m': expected an object with 'display_name' and/or 'decoder'"),
    ('{"m": {"display_name": ""}}', r"'m': display_name must be a non-empty string"),
], ids=["not-an-object", "not-json", "unknown-decoder", "unknown-key", "empty-name"])
def test_bad_model_maps_are_one_line_errors(runner, tmp_path, content, pattern):
    _tree(tmp_path, models=(MODEL_A,), categories=("multi_turn_base",))
    mapping = tmp_path / "models.json"
    mapping.write_text(content)
    out = _evaluate(runner, tmp_path, "--partial-eval", "--model-map", str(mapping))
    assert out.exit_code == 1
    message = _err(out).strip()
    assert message.startswith("Error: --model-map ") and len(message.splitlines()) == 1
    assert re.search(pattern, message), message


def test_partial_credit_adds_the_per_turn_column_to_the_table(runner, tmp_path):
    data = dataset()
    _tree(tmp_path, models=(MODEL_A,), categories=("multi_turn_base",))
    path = tmp_path / "result" / MODEL_A / "multi_turn" / "BFCL_v4_multi_turn_base_result.json"
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    turns = len(data.ground_truth_for(first["id"]))
    first["result"][-1] = [[]]  # the last turn fails: (turns - 1) / turns of credit
    lines[0] = json.dumps(first)
    path.write_text("\n".join(lines) + "\n")
    plain = _evaluate(runner, tmp_path, "--partial-eval")
    assert "per-turn" not in plain.stdout
    out = _evaluate(runner, tmp_path, "--partial-eval", "--partial-credit")
    assert out.exit_code == 0, _err(out)
    header, _, row = out.stdout.splitlines()[:3]
    assert "per-turn" in header
    expected = (ENTRIES - 1 + (turns - 1) / turns) / ENTRIES
    assert f"{expected:.2%}" in row and "66.67%" in row


# --------------------------------------------------------------------------- score files of other runs


def test_score_files_this_run_did_not_write_are_listed(runner, tmp_path):
    _tree(tmp_path, models=(MODEL_A,), categories=("multi_turn_base",))
    old = tmp_path / "score" / "earlier-model" / "multi_turn" / "BFCL_v4_multi_turn_miss_func_score.json"
    old.parent.mkdir(parents=True)
    old.write_text(json.dumps({"accuracy": 0.5, "correct_count": 1, "total_count": 2}) + "\n")
    out = _evaluate(runner, tmp_path, "--partial-eval")
    assert out.exit_code == 0, _err(out)
    assert re.search(r"The leaderboard CSVs also include 1 score file\(s\) this run did not write", _err(out))
    assert str(old) in _err(out)
    assert "earlier-model" in {row[1] for row in _csv(tmp_path / "score")[1:]}


# --------------------------------------------------------------------------- the error boundary


def _failing_score_tree(error: BaseException, write_first: bool = False):
    real = runner_module.score_tree

    def score_tree(result_dir, score_dir, dataset, options, *, progress=None, report=print, files=None, **more):
        if write_first:
            real(result_dir, score_dir, dataset, options, progress=progress, report=report, files=list(files)[:1],
                 **more)
        raise error

    return score_tree


BOUNDARY_CASES = [
    ("project-error", ScoreFileError("score/x.json: a line is not JSON (Expecting value)"), 1,
     r"Error: score/x\.json: a line is not JSON \(Expecting value\)"),
    ("bug", ZeroDivisionError("division by zero"), 70,
     r"Internal error: ZeroDivisionError: division by zero \(a bug in bfcl-safe; please report it"),
    ("recursion", RecursionError("maximum recursion depth exceeded"), 70, r"Internal error: RecursionError: "),
    ("hostile-message", ValueError("bad \x1b[2J\nsecond line"), 70, r"Internal error: ValueError: bad \\x1b\[2J\\nsecond line"),
]


@pytest.mark.parametrize("error, code, pattern", [c[1:] for c in BOUNDARY_CASES], ids=[c[0] for c in BOUNDARY_CASES])
def test_one_boundary_one_line_no_traceback(runner, tmp_path, monkeypatch, error, code, pattern):
    _tree(tmp_path, models=(MODEL_A,), categories=("multi_turn_base",))
    monkeypatch.setattr(runner_module, "score_tree", _failing_score_tree(error))
    out = _evaluate(runner, tmp_path, "--partial-eval")
    assert out.exit_code == code
    message = _err(out).strip().splitlines()
    assert len(message) == 1 and re.match(pattern, message[0]), message
    assert "Traceback" not in out.output + _err(out)


def test_ctrl_c_says_what_was_written(runner, tmp_path, monkeypatch):
    _tree(tmp_path, models=(MODEL_A,), categories=("multi_turn_base", "multi_turn_miss_func"))
    monkeypatch.setattr(runner_module, "score_tree", _failing_score_tree(KeyboardInterrupt(), write_first=True))
    # A score file of an earlier run is there for the category this run does not reach.
    earlier = tmp_path / "score" / MODEL_A / "multi_turn" / "BFCL_v4_multi_turn_miss_func_score.json"
    earlier.parent.mkdir(parents=True)
    earlier.write_text(json.dumps({"accuracy": 1.0, "correct_count": 3, "total_count": 3}) + "\n")
    out = _evaluate(runner, tmp_path, "--partial-eval")
    assert out.exit_code == 130
    message = _err(out).strip().splitlines()[-1]
    assert re.match(rf"Interrupted: 1 score file\(s\) written under .*score \({MODEL_A}/multi_turn_base\); "
                    rf"not written: {MODEL_A}/multi_turn_miss_func; leaderboard CSVs not updated", message), message


def test_the_project_error_from_a_dataset_is_one_line(runner, tmp_path):
    _tree(tmp_path, models=(MODEL_A,), categories=("multi_turn_base",))
    bogus = tmp_path / "bogus.whl"
    bogus.write_bytes(b"not a zip")
    out = runner.invoke(main, ["evaluate", "--result-dir", str(tmp_path / "result"), "--data", str(bogus)])
    assert out.exit_code == 1
    assert re.fullmatch(r"Error: .*bogus\.whl.*", _err(out).strip())


# --------------------------------------------------------------------------- data, explain, demo


def test_data_info_says_version_sha_source_and_pinned(runner):
    out = runner.invoke(main, ["data", "info", "--data", str(wheel())])
    assert out.exit_code == 0, _err(out)
    text = out.stdout
    assert re.search(r"^dataset:  .*\.whl \(wheel file\)$", text, re.M)
    assert re.search(r"^source:   --data$", text, re.M)
    assert re.search(r"^version:  2026\.3\.23$", text, re.M)
    assert re.search(rf"^sha256:   {WHEEL_SHA256}$", text, re.M)
    assert re.search(r"^pinned:   yes \(bfcl-eval==2026\.3\.23", text, re.M)
    assert "multi_turn_long_context: 200 entries" in text
    assert "Dataset(" not in text


def test_data_fetch_checks_the_given_wheel_even_when_the_cache_is_full(runner, tmp_path, monkeypatch):
    monkeypatch.setenv("BFCL_SAFE_CACHE", str(tmp_path / "cache"))
    assert runner.invoke(main, ["data", "fetch", "--wheel", str(wheel())]).exit_code == 0
    cached = tmp_path / "cache" / wheel().name
    before = cached.stat().st_mtime_ns
    impostor = tmp_path / wheel().name
    impostor.write_bytes(b"PK not the wheel")
    out = runner.invoke(main, ["data", "fetch", "--wheel", str(impostor)])
    assert out.exit_code == 1
    assert re.fullmatch(rf"Error: .*{re.escape(impostor.name)} has sha256 [0-9a-f]{{64}}, expected {WHEEL_SHA256}: "
                        r"it is not the pinned bfcl-eval==2026\.3\.23 wheel; the cache is unchanged", _err(out).strip())
    assert cached.stat().st_mtime_ns == before
    out = runner.invoke(main, ["data", "fetch", "--wheel", str(wheel())])
    assert out.exit_code == 0 and f"sha256 {WHEEL_SHA256} (the pinned wheel)" in out.stdout
    out = runner.invoke(main, ["data", "info"])
    assert "source:   the cache" in out.stdout and "pinned:   yes" in out.stdout


def test_explain_shows_the_inference_error_the_result_holds(runner, tmp_path):
    _tree(tmp_path, models=(MODEL_A,), categories=("multi_turn_base",))
    path = tmp_path / "result" / MODEL_A / "multi_turn" / "BFCL_v4_multi_turn_base_result.json"
    lines = path.read_text().splitlines()
    lines[1] = json.dumps({"id": "multi_turn_base_1", "result": "Error during inference: rate limit \x1b[31m(429)",
                           "traceback": "Traceback ...\nopenai.RateLimitError: 429\n"})
    path.write_text("\n".join(lines) + "\n")
    out = runner.invoke(main, ["explain", "--result-dir", str(tmp_path / "result"), "--model", "org/model-a",
                               "--id", "multi_turn_base_1", "--data", str(wheel())])
    assert out.exit_code == 0, _err(out)
    assert "verdict: FAIL  multi_turn:inference_error" in out.stdout
    assert ("the result holds no turns, only the inference error: Error during inference: rate limit "
            "\\x1b[31m(429)") in out.stdout
    assert "traceback (last line): openai.RateLimitError: 429" in out.stdout
    assert "(no turns: the inference failed, see above)" in out.stdout
    assert "no such turn" not in out.stdout


def test_demo_writes_into_the_cache_folder_by_default(runner, tmp_path, monkeypatch):
    monkeypatch.setenv("BFCL_SAFE_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    out = runner.invoke(main, ["demo", "--data", str(wheel()), "--entries", "4"])
    assert out.exit_code == 0, _err(out)
    assert (tmp_path / "cache" / "demo" / "score" / "data_multi_turn.csv").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache"]
    assert "entries _3 fail: their last turn holds no calls" in out.stdout
    assert "entries none (fewer entries) begin with a hostile step" in out.stdout


def test_explain_checks_under_the_scorers_budget(runner, tmp_path, monkeypatch):
    """explain scores the entry under a fresh budget, as the scorer does: with budgets too
    small for it, a one-line error naming the budget instead of unbounded work."""
    import bfcl_safe.interp.budget as budget_module

    _tree(tmp_path, models=(MODEL_A,), categories=("multi_turn_base",))
    monkeypatch.setattr(budget_module, "ENTRY_BUDGETS", {kind: 0 for kind in budget_module.ENTRY_BUDGETS})
    out = runner.invoke(main, ["explain", "--result-dir", str(tmp_path / "result"), "--id", "multi_turn_base_0",
                               "--data", str(wheel())])
    assert out.exit_code == 1
    assert re.fullmatch(r"Error: multi_turn_base_0: checking it used up the resource budget '\w+' \(\d[\d,]* > 0\); "
                        r"the scorer fails it with bfcl_safe:resource_limit", _err(out).strip().splitlines()[-1])


def test_explain_a_force_terminated_entry_shows_the_completed_turn_that_failed_first(runner, tmp_path):
    data = dataset()
    _tree(tmp_path, models=(MODEL_A,), categories=("multi_turn_base",))
    path = tmp_path / "result" / MODEL_A / "multi_turn" / "BFCL_v4_multi_turn_base_result.json"
    lines = path.read_text().splitlines()
    entry = json.loads(lines[0])
    assert len(data.ground_truth_for(entry["id"])) > 2
    entry["result"] = entry["result"][:-1]  # cut short: force_terminated
    entry["result"][0] = [[]]  # and its first turn has no calls: it fails first
    lines[0] = json.dumps(entry)
    path.write_text("\n".join(lines) + "\n")
    out = runner.invoke(main, ["explain", "--result-dir", str(tmp_path / "result"), "--id", entry["id"],
                               "--data", str(wheel()), "--json"])
    assert out.exit_code == 0, _err(out)
    explanation = json.loads(out.stdout)
    assert explanation["error_type"] == "multi_turn:force_terminated"
    assert explanation["first_failing_turn"] == 0
    assert explanation["turns"][0]["status"] == "failed"
    # Labelled with the entry's verdict (issue 27); the turn's own failing check beside it.
    assert explanation["turns"][0]["error_type"] == "multi_turn:force_terminated"
    assert explanation["turns"][0]["turn_check"] == "multi_turn:empty_turn_model_response"


def test_a_model_map_entry_for_no_model_scored_is_noted(runner, tmp_path):
    _tree(tmp_path, models=(MODEL_A,), categories=("multi_turn_base",))
    mapping = tmp_path / "models.json"
    mapping.write_text(json.dumps({"typo/model": {"display_name": "Typo"}}))
    out = _evaluate(runner, tmp_path, "--partial-eval", "--model-map", str(mapping))
    assert out.exit_code == 0, _err(out)
    assert "note: --model-map/--model-name: 'typo_model' is not among the models scored here" in _err(out)


def test_evaluate_help_lists_the_exit_statuses(runner):
    out = runner.invoke(main, ["evaluate", "--help"])
    assert out.exit_code == 0
    text = " ".join(out.stdout.split())
    assert "Exit status: 0 every result file scored and the six leaderboard CSVs written" in text
    assert "3 the run is not what bfcl evaluate would accept" in text
    for flag in ("--model", "--test-category", "--result-dir", "--score-dir", "--partial-eval", "--partial",
                 "--model-name", "--model-map", "--partial-credit"):
        assert flag in text


LAYOUT_CASES = [
    ("one-level-too-high", lambda root: (root, root / "score"), r"one level too high; pass --result-dir .*result$"),
    ("a-model-folder", lambda root: (root / "result" / MODEL_A, root / "score"),
     r"a model folder; pass the folder of model folders: --result-dir .*result$"),
    ("score-dir-is-result-dir", lambda root: (root / "result", root / "result"), r"is the result dir"),
    ("score-dir-inside-result-dir", lambda root: (root / "result", root / "result" / "score"),
     r"is inside the result dir"),
]


@pytest.mark.parametrize("dirs, pattern", [c[1:] for c in LAYOUT_CASES], ids=[c[0] for c in LAYOUT_CASES])
def test_a_tree_bfcl_would_misread_is_one_line_saying_what_to_pass(runner, tmp_path, dirs, pattern):
    _tree(tmp_path, categories=("multi_turn_base",))
    result_dir, score_dir = dirs(tmp_path)
    out = runner.invoke(main, ["evaluate", "--result-dir", str(result_dir), "--score-dir", str(score_dir),
                               "--partial-eval", "--data", str(wheel())])
    assert out.exit_code == 1
    message = _err(out).strip().splitlines()
    assert len(message) == 1 and message[0].startswith("Error: ") and re.search(pattern, message[0]), message
    assert not list(tmp_path.rglob("*_score.json"))
