"""The command line, through click's CliRunner: exit codes, messages, files written."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bfcl_safe.cli import main
from tests.checker_support import REAL_MODEL, REAL_RUN, real_results_subset
from tests.refenv import wheel

RUN, MODEL = REAL_RUN, REAL_MODEL



def _stderr(out) -> str:
    return out.stderr if hasattr(out, "stderr") else out.output


def _evaluate(runner, result_dir: Path, score_dir: Path, *extra: str):
    return runner.invoke(main, ["evaluate", "--result-dir", str(result_dir), "--score-dir", str(score_dir),
                                "--data", str(wheel()), *extra])


def _official(category: str) -> dict[str, str]:
    path = RUN / "score" / MODEL / "multi_turn" / f"BFCL_v4_{category}_score.json"
    return {json.loads(l)["id"]: json.loads(l)["error"]["error_type"] for l in path.read_text().splitlines()[1:]}


def _ours(score_dir: Path, category: str) -> tuple[dict, dict[str, str]]:
    path = score_dir / MODEL / "multi_turn" / f"BFCL_v4_{category}_score.json"
    lines = path.read_text().splitlines()
    return json.loads(lines[0]), {json.loads(l)["id"]: json.loads(l)["error"]["error_type"] for l in lines[1:]}




@pytest.mark.parametrize("jobs", [1, 2])
def test_evaluate_writes_score_files_with_official_verdicts(runner, tmp_path, jobs):
    result_dir = real_results_subset(tmp_path, 12)
    score_dir = tmp_path / "score"
    out = _evaluate(runner, result_dir, score_dir, "--jobs", str(jobs), "--partial")
    assert out.exit_code == 0, out.output
    assert "multi_turn_base" in out.output and "accuracy" in out.output
    for category in ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param"):
        summary, ours = _ours(score_dir, category)
        assert summary["total_count"] == 12
        official = {k: v for k, v in _official(category).items() if int(k.rsplit("_", 1)[1]) < 12}
        assert ours == official
    assert (score_dir / "data_multi_turn.csv").is_file()


def test_files_lacking_entries_are_not_scored_without_partial_eval(runner, tmp_path):
    """The official behaviour: a file lacking entries is not scored, the others are, and
    the run ends with exit status 3 saying which files were refused and what to pass."""
    result_dir = real_results_subset(tmp_path, 5)
    complete = result_dir / MODEL / "multi_turn" / "BFCL_v4_multi_turn_miss_param_result.json"
    complete.write_text((RUN / "result" / MODEL / "multi_turn" / complete.name).read_text(encoding="utf-8"),
                        encoding="utf-8")
    score_dir = tmp_path / "score"
    out = _evaluate(runner, result_dir, score_dir)
    assert out.exit_code == 3
    stderr = _stderr(out)
    assert re.search(r"BFCL_v4_multi_turn_base_result\.json: 195 of 200 entries missing .*--partial-eval", stderr)
    assert re.search(r"Not scored: 2 result file\(s\) refused \(entries missing; --partial-eval scores the entries "
                     rf"present\): {MODEL}/multi_turn_base, {MODEL}/multi_turn_miss_func", stderr), stderr
    assert not (score_dir / MODEL / "multi_turn" / "BFCL_v4_multi_turn_base_score.json").exists()
    summary, ours = _ours(score_dir, "multi_turn_miss_param")
    assert summary["total_count"] == 200
    assert ours == _official("multi_turn_miss_param")
    assert "not scored: 195 entries missing" in out.stdout


def test_malformed_lines_are_reported_and_the_rest_is_scored(runner, tmp_path):
    result_dir = real_results_subset(tmp_path, 6)
    path = result_dir / MODEL / "multi_turn" / "BFCL_v4_multi_turn_base_result.json"
    lines = path.read_text().splitlines()
    lines.insert(2, "{not json")
    lines.insert(3, json.dumps({"id": "multi_turn_base_0", "result": []}))  # duplicate id
    lines.insert(4, json.dumps({"id": "multi_turn_base_999", "result": []}))  # unknown id
    lines.insert(5, json.dumps(["no", "object"]))
    lines.insert(6, json.dumps({"id": "multi_turn_base_77", "result": [[["not a step"]], 5]}))
    path.write_text("\n".join(lines) + "\n")
    score_dir = tmp_path / "score"
    out = _evaluate(runner, result_dir, score_dir, "--partial")
    assert out.exit_code == 3, out.output  # a duplicate id: bfcl evaluate would refuse the file
    stderr = _stderr(out)
    assert ":3: not valid JSON" in stderr
    assert "duplicate id 'multi_turn_base_0'" in stderr
    assert re.search(r"Duplicate ids: 1 \(bfcl evaluate refuses such a file; the first occurrence was scored; "
                     r"exit status 3\) in: .*BFCL_v4_multi_turn_base_result\.json", stderr)
    assert (score_dir / "data_overall.csv").is_file()
    assert "'multi_turn_base_999' is not in the dataset" in stderr
    assert "expected an object with 'id' and 'result'" in stderr
    summary, ours = _ours(score_dir, "multi_turn_base")
    assert summary["total_count"] == 7  # six good entries and entry 77
    official = {k: v for k, v in _official("multi_turn_base").items() if int(k.rsplit("_", 1)[1]) < 6}
    assert {k: v for k, v in ours.items() if k != "multi_turn_base_77"} == official
    assert ours["multi_turn_base_77"] == "multi_turn:force_terminated"


def test_missing_result_dir_is_a_one_line_error(runner, tmp_path):
    out = runner.invoke(main, ["evaluate", "--result-dir", str(tmp_path / "nope"), "--score-dir", str(tmp_path)])
    assert out.exit_code == 2
    assert "does not exist" in _stderr(out)


def test_empty_result_dir_is_a_one_line_error(runner, tmp_path):
    (tmp_path / "result").mkdir()
    out = _evaluate(runner, tmp_path / "result", tmp_path / "score")
    assert out.exit_code == 1
    message = _stderr(out).strip()
    assert message.startswith("Error: no multi-turn result files under")
    assert len(message.splitlines()) == 1


def test_bad_data_path_is_a_one_line_error(runner, tmp_path):
    (tmp_path / "result").mkdir()
    bogus = tmp_path / "bogus.whl"
    bogus.write_bytes(b"not a zip")
    out = runner.invoke(main, ["evaluate", "--result-dir", str(tmp_path / "result"), "--score-dir",
                               str(tmp_path / "score"), "--data", str(bogus)])
    assert out.exit_code == 1
    message = _stderr(out).strip()
    assert message.startswith("Error:") and len(message.splitlines()) == 1


def test_missing_cache_names_the_fix(runner, tmp_path, monkeypatch):
    monkeypatch.setenv("BFCL_SAFE_CACHE", str(tmp_path / "empty-cache"))
    (tmp_path / "result").mkdir()
    out = runner.invoke(main, ["evaluate", "--result-dir", str(tmp_path / "result"), "--score-dir", str(tmp_path / "s")])
    assert out.exit_code == 1
    assert "bfcl-safe data fetch" in _stderr(out)


def test_demo_scores_the_built_in_result_set(runner, tmp_path):
    out = runner.invoke(main, ["demo", "--demo-dir", str(tmp_path / "demo"), "--data", str(wheel()), "--entries", "10"])
    assert out.exit_code == 0, out.output
    assert "demo-replay-FC" in out.output and "demo-replay-prompting" in out.output
    assert "entries _3 fail: their last turn holds no calls" in out.output
    assert "entries _6 begin with a hostile step" in out.output
    assert "Expected: 8 of 10 correct" in out.output
    assert "pwned" not in out.output.replace("no 'pwned' is printed", "")
    # entries 3, 6 and 8 of each category are wrong, hostile-but-right, and truncated
    summary, _ = json.loads((tmp_path / "demo/score/demo-replay-FC/multi_turn/BFCL_v4_multi_turn_base_score.json")
                            .read_text().splitlines()[0]), None
    assert summary["total_count"] == 10 and summary["correct_count"] == 8


def test_data_fetch_from_a_local_wheel(runner, tmp_path, monkeypatch):
    monkeypatch.setenv("BFCL_SAFE_CACHE", str(tmp_path / "cache"))
    out = runner.invoke(main, ["data", "fetch", "--wheel", str(wheel())])
    assert out.exit_code == 0, out.output
    assert (tmp_path / "cache" / wheel().name).is_file()
    out = runner.invoke(main, ["data", "info"])
    assert out.exit_code == 0 and "multi_turn_base: 200 entries" in out.output


def test_an_unreadable_result_file_is_reported_and_the_others_are_scored(runner, tmp_path):
    result_dir = real_results_subset(tmp_path, 4)
    broken = result_dir / MODEL / "multi_turn" / "BFCL_v4_multi_turn_long_context_result.json"
    broken.symlink_to(tmp_path / "does-not-exist.json")  # found by the walk, cannot be opened
    score_dir = tmp_path / "score"
    out = _evaluate(runner, result_dir, score_dir, "--partial")
    assert out.exit_code == 0, out.output
    stderr = _stderr(out)
    assert re.search(r"BFCL_v4_multi_turn_long_context_result\.json: cannot (be )?read", stderr), stderr
    assert "Not scored: 1 result file(s) with nothing scored: openai_gpt-oss-120b/multi_turn_long_context" in stderr
    summary, _ = _ours(score_dir, "multi_turn_base")
    assert summary["total_count"] == 4
    assert not (score_dir / MODEL / "multi_turn" / "BFCL_v4_multi_turn_long_context_score.json").exists()


def test_the_command_process_exit_codes_and_messages(tmp_path):
    """``python -m bfcl_safe`` (what the ``bfcl-safe`` script runs): output flushed before
    the immediate exit, click's exit codes kept."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])))

    def command(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "bfcl_safe", *args], capture_output=True, text=True, env=env,
                              cwd=tmp_path, timeout=120)

    version = command("--version")
    assert version.returncode == 0 and version.stdout.startswith("python -m bfcl_safe, version ")
    usage = command("evaluate")  # the default result/ under the current directory is not there
    assert usage.returncode == 2 and "result does not exist" in usage.stderr
    failure = command("evaluate", "--result-dir", str(tmp_path), "--score-dir", str(tmp_path / "s"),
                      "--data", str(wheel()))
    assert failure.returncode == 1 and failure.stderr.startswith("Error: no multi-turn result files under ")
