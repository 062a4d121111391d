"""Through the real command line: the leaderboard CSVs and ``bfcl-safe scores``, the exit
rules a CI script relies on, the one cell rule on hostile names, and the small defects of
issue 27 (``data --help``, the demo's note, ``data info`` on a folder, ``explain`` on a
force-terminated entry, ``generate`` without its extra)."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import sys
from pathlib import Path

import pytest

from bfcl_safe.cli import main
from bfcl_safe.checker.leaderboard import CSV_FILES, COLUMNS_MULTI_TURN, COLUMNS_OVERALL
from bfcl_safe.checker.terminal import csv_cell
from tests.checker_support import REAL_MODEL, real_results_subset
from tests.refenv import reference_package_dir, wheel

BASE = "multi_turn_base"


def _stderr(out) -> str:
    return out.stderr if hasattr(out, "stderr") else out.output


def _evaluate(runner, result_dir: Path, score_dir: Path, *extra: str):
    return runner.invoke(main, ["evaluate", "--result-dir", str(result_dir), "--score-dir", str(score_dir),
                                "--data", str(wheel()), *extra])


def _rows(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))


def _line(entry_id: str, steps: int = 1) -> str:
    return json.dumps({"id": entry_id, "result": [[[{"ls": "{}"}]] * steps], "latency": [[1.5, 2.5]]})


def _result_file(result: Path, model: str, lines: list[str], category: str = BASE) -> Path:
    path = result / model / "multi_turn" / f"BFCL_v4_{category}_result.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# --------------------------------------------------------------------------- the six CSVs and exit rules


def test_evaluate_writes_the_six_csvs_and_exits_0(runner, tmp_path):
    result = real_results_subset(tmp_path, 5)
    out = _evaluate(runner, result, tmp_path / "score", "--partial-eval")
    assert out.exit_code == 0, _stderr(out)
    assert {p.name for p in (tmp_path / "score").glob("data_*.csv")} == set(CSV_FILES)
    overall = _rows(tmp_path / "score" / "data_overall.csv")
    assert overall[0] == list(COLUMNS_OVERALL) and len(overall) == 2
    row = dict(zip(overall[0], overall[1]))
    # Not in the pinned registry: folder name, no link/organisation/licence/cost; latencies from the results.
    assert (row["Model"], row["Model Link"], row["Organization"], row["License"], row["Total Cost ($)"]) == \
        (REAL_MODEL, "N/A", "N/A", "N/A", "N/A")
    assert float(row["Latency Mean (s)"]) > 0
    assert "six leaderboard CSVs" in out.output


def test_missing_entries_exit_3_and_no_csv(runner, tmp_path):
    """Rule: a result file lacking entries without --partial-eval is not scored, no CSV is
    written (bfcl evaluate raises and writes none), exit status 3."""
    result = real_results_subset(tmp_path, 5)
    score = tmp_path / "score"
    (score).mkdir()
    (score / "data_overall.csv").write_text("stale", encoding="utf-8")
    out = _evaluate(runner, result, score)
    assert out.exit_code == 3
    stderr = _stderr(out)
    assert "leaderboard CSVs not written: 3 result file(s) not scored (entries missing)" in stderr
    assert "the leaderboard CSVs were NOT written" in out.output
    assert (score / "data_overall.csv").read_text() == "stale"  # left as it was, as bfcl evaluate leaves it
    assert not (score / "data_multi_turn.csv").exists()


def test_duplicate_id_exits_3_with_the_first_occurrence_scored(runner, tmp_path):
    """Rule: a duplicate id (bfcl evaluate fails the run) is reported, the first occurrence
    is scored, the CSVs are written, exit status 3."""
    result = tmp_path / "result"
    _result_file(result, "m", [_line(f"{BASE}_0"), _line(f"{BASE}_1"), _line(f"{BASE}_0", 3)])
    out = _evaluate(runner, result, tmp_path / "score", "--partial-eval")
    assert out.exit_code == 3
    stderr = _stderr(out)
    assert re.search(r"\.json:3: duplicate id 'multi_turn_base_0'; the first occurrence is scored", stderr)
    assert "Duplicate ids: 1 (bfcl evaluate refuses such a file" in stderr
    assert (tmp_path / "score" / "data_overall.csv").is_file()
    summary = json.loads((tmp_path / "score" / "m" / "multi_turn" / f"BFCL_v4_{BASE}_score.json")
                         .read_text().splitlines()[0])
    assert summary["total_count"] == 2


def test_the_epilog_states_the_exit_rules(runner):
    out = runner.invoke(main, ["evaluate", "--help"])
    text = " ".join(out.output.split())
    assert "lacks entries without --partial-eval (that file is not scored and no CSV is written" in text
    assert "a result file holds a duplicate id (the first occurrence is scored, the CSVs are written)" in text


@pytest.mark.parametrize("name", CSV_FILES)
def test_a_model_folder_named_like_a_csv_is_not_scored(runner, tmp_path, name):
    """Any of the six names (the writer's reserved folder names): that folder is skipped
    with a one-line notice, the others are scored and the CSV is written as a file."""
    result = tmp_path / "result"
    _result_file(result, name, [_line(f"{BASE}_0")])
    _result_file(result, "fine", [_line(f"{BASE}_0")])
    out = _evaluate(runner, result, tmp_path / "score", "--partial-eval")
    assert out.exit_code == 0, _stderr(out)
    assert f"a model folder of this name would take the place of {name} in the score dir; not scored" in _stderr(out)
    assert (tmp_path / "score" / name).is_file() and (tmp_path / "score" / "fine").is_dir()


# --------------------------------------------------------------------------- the one cell rule


HOSTILE_FOLDERS = ["=HYPERLINK(\"x\",\"y\")", "+SUM(1)", "-1", "@cmd", "esc\x1b]0;title\x07x",
                   "rtl\u202egpj.exe", "comma,quote\"d"]


def test_hostile_names_are_neutralised_in_every_csv_and_the_terminal(runner, tmp_path):
    result = tmp_path / "result"
    for name in [*HOSTILE_FOLDERS, "mapped", "plain"]:
        _result_file(result, name, [_line(f"{BASE}_0")])
    model_map = tmp_path / "map.json"
    model_map.write_text(json.dumps({"mapped": {"display_name": "=cmd|' /C calc'!A0\x1b[2J"}}), encoding="utf-8")
    out = _evaluate(runner, result, tmp_path / "score", "--partial-eval", "--model-map", str(model_map))
    assert out.exit_code == 0, _stderr(out)
    assert "\x1b" not in out.output + _stderr(out) and "\u202e" not in out.output + _stderr(out)
    expected = {csv_cell(name) for name in HOSTILE_FOLDERS} | {csv_cell("=cmd|' /C calc'!A0\x1b[2J"), "plain"}
    for name in CSV_FILES:
        text = (tmp_path / "score" / name).read_text(encoding="utf-8")
        assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text
        rows = _rows(tmp_path / "score" / name)
        assert {len(row) for row in rows} == {len(rows[0])}, name
        model_column = rows[0].index("Model")
        cells = [row[model_column] for row in rows[1:]]
        assert {text.split(",")[model_column] for text in text.splitlines()[1:] if '"' not in text} <= expected
        assert set(cells) == {c.strip('"').replace('""', '"') for c in expected}, name
        for cell in cells:
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), cell
        assert [row[0] for row in rows[1:]] == [str(n) for n in range(1, len(rows))]  # numbers untouched
    turn = _rows(tmp_path / "score" / "data_multi_turn.csv")
    assert {row[2] for row in turn[1:]} == {"0.00%"} and turn[0] == list(COLUMNS_MULTI_TURN)


def test_model_name_option_goes_through_the_cell_rule(runner, tmp_path):
    result = tmp_path / "result"
    _result_file(result, "only", [_line(f"{BASE}_0")])
    out = _evaluate(runner, result, tmp_path / "score", "--partial-eval", "--model-name", "-2+3\u2066x")
    assert out.exit_code == 0, _stderr(out)
    rows = _rows(tmp_path / "score" / "data_overall.csv")
    assert rows[1][2] == "'-2+3\\u2066x"
    scores = runner.invoke(main, ["scores", "--score-dir", str(tmp_path / "score")])
    assert scores.exit_code == 0 and "'-2+3\\u2066x" in scores.output and "\u2066" not in scores.output


# --------------------------------------------------------------------------- bfcl-safe scores


def test_scores_prints_the_leaderboard(runner, tmp_path):
    result = real_results_subset(tmp_path, 5)
    assert _evaluate(runner, result, tmp_path / "score", "--partial-eval").exit_code == 0
    out = runner.invoke(main, ["scores", "--score-dir", str(tmp_path / "score")])
    assert out.exit_code == 0, _stderr(out)
    lines = out.output.splitlines()
    assert lines[0].split(" | ")[:4] == ["Rank", "Model               ", "Overall Acc", "Non-Live AST Acc"] or \
        [c.strip() for c in lines[0].split("|")][:4] == ["Rank", "Model", "Overall Acc", "Non-Live AST Acc"]
    assert REAL_MODEL in lines[2] and lines[2].startswith("1 ")
    multi = runner.invoke(main, ["scores", "--score-dir", str(tmp_path / "score"), "--table", "multi_turn"])
    assert multi.exit_code == 0
    assert [c.strip() for c in multi.output.splitlines()[0].split("|")] == list(COLUMNS_MULTI_TURN)


def test_scores_uses_bfcl_project_root(runner, tmp_path, monkeypatch):
    monkeypatch.setenv("BFCL_PROJECT_ROOT", str(tmp_path))
    out = runner.invoke(main, ["scores"])
    assert out.exit_code == 1
    assert f"{tmp_path / 'score' / 'data_overall.csv'} not found" in _stderr(out)


@pytest.mark.parametrize("make, message", [
    ("fifo", "not a regular file (a FIFO); not read"),
    ("folder", "not a regular file (a folder); not read"),
    ("ragged", "row 2 has 2 cells, the header 36"),
    ("not-csv", "not a leaderboard CSV (its first cell is not 'Rank')"),
    ("binary", "not UTF-8 text"),
    ("huge", "16,777,217 bytes, more than the 16,777,216 a file may have"),
])
def test_scores_refuses_a_bad_csv_in_one_line(runner, tmp_path, make, message):
    path = tmp_path / "data_overall.csv"
    if make == "fifo":
        os.mkfifo(path)
    elif make == "folder":
        path.mkdir()
    elif make == "ragged":
        path.write_text(",".join(COLUMNS_OVERALL) + "\n1,x\n", encoding="utf-8")
    elif make == "not-csv":
        path.write_text("hello\n", encoding="utf-8")
    elif make == "binary":
        path.write_bytes(b"Rank,\xff\xfe\n")
    else:
        with open(path, "wb") as handle:
            handle.truncate((16 << 20) + 1)
    out = runner.invoke(main, ["scores", "--score-dir", str(tmp_path)])
    assert out.exit_code == 1
    stderr = _stderr(out).strip()
    assert stderr.startswith("Error: ") and message in stderr and "\n" not in stderr, stderr


def test_scores_shows_hostile_cells_escaped(runner, tmp_path):
    row = ["1", "\x1b[2Jevil\u202e" + "x" * 200, *(["N/A"] * (len(COLUMNS_OVERALL) - 2))]
    (tmp_path / "data_overall.csv").write_text(",".join(COLUMNS_OVERALL) + "\n" + ",".join(row), encoding="utf-8")
    out = runner.invoke(main, ["scores", "--score-dir", str(tmp_path)])
    assert out.exit_code == 0
    assert "\x1b" not in out.output and "\\x1b[2Jevil\\u202e" in out.output
    lines = out.stdout.splitlines()
    assert max(len(cell.strip()) for line in lines[:1] + lines[2:] for cell in line.split("|")) <= 60


# --------------------------------------------------------------------------- small defects


def test_data_help_lists_no_generate_and_data_generate_does_not_run(runner):
    out = runner.invoke(main, ["data", "--help"])
    assert out.exit_code == 0 and "generate" not in out.output and "fetch" in out.output
    out = runner.invoke(main, ["data", "generate", "--help"])
    assert out.exit_code == 2 and "No such command 'generate'" in _stderr(out)
    top = runner.invoke(main, ["--help"])
    assert "generate" in top.output and "scores" in top.output


def test_demo_prints_no_partial_eval_note(runner, tmp_path):
    out = runner.invoke(main, ["demo", "--demo-dir", str(tmp_path), "--data", str(wheel()), "--entries", "1"])
    assert out.exit_code == 0, _stderr(out)
    assert "--partial-eval" not in out.output + _stderr(out)
    assert (tmp_path / "score" / "data_overall.csv").is_file()


def test_data_info_on_a_folder_does_not_claim_pinned(runner):
    out = runner.invoke(main, ["data", "info", "--data", str(reference_package_dir())])
    assert out.exit_code == 0, _stderr(out)
    assert "pinned:   unverified (a folder cannot be hashed; its version is the pinned one" in out.output
    assert "pinned:   yes" not in out.output
    wheel_info = runner.invoke(main, ["data", "info", "--data", str(wheel())])
    assert "pinned:   yes" in wheel_info.output


def test_explain_labels_a_force_terminated_turn_0_with_the_verdict(runner, tmp_path):
    result = tmp_path / "result"
    steps = [[{"ls": "{}"}]] * 21
    _result_file(result, "m", [json.dumps({"id": f"{BASE}_0", "result": [[[{"ls": "{}"}]], steps]})])
    out = runner.invoke(main, ["explain", "--result-dir", str(result), "--id", f"{BASE}_0", "--data", str(wheel())])
    assert out.exit_code == 0, _stderr(out)
    assert "verdict: FAIL  multi_turn:force_terminated  at turn 0" in out.output
    assert "== turn 0: FAILED (multi_turn:force_terminated)" in out.output
    assert "this turn's own checks fail too: multi_turn:instance_state_mismatch" in out.output
    data = json.loads(runner.invoke(main, ["explain", "--result-dir", str(result), "--id", f"{BASE}_0",
                                           "--data", str(wheel()), "--json"]).stdout)
    assert data["turns"][0]["error_type"] == "multi_turn:force_terminated"
    assert data["turns"][0]["turn_check"] == "multi_turn:instance_state_mismatch"


def test_generate_without_its_extra_says_so_first(runner, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "openai", None)  # import openai -> ImportError
    out = runner.invoke(main, ["generate", "--model", "x", "--fc", "--base-url", "http://127.0.0.1:9/v1",
                               "--result-dir", str(tmp_path), "--data", str(wheel())])
    assert out.exit_code == 1
    stderr = _stderr(out)
    assert "needs the openai package" in stderr and "entries to play" not in stderr


# --------------------------------------------------------------------------- the scripted server's command


def test_the_scripted_server_command_serves_generate(runner, tmp_path):
    import subprocess

    from tests.refenv import ROOT
    from tests.test_serve_env import serve_python  # Inspect's openai provider needs openai>=3.4 (README, "Two environments")

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    server = subprocess.Popen([sys.executable, "-m", "bfcl_safe.checker.scripted_server", "--policy", "truth",
                               "--mode", "fc", "--port", "0", "--data", str(wheel())],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        first = server.stdout.readline()
        match = re.match(r"serving (http://127\.0\.0\.1:\d+/v1) \(truth policy, fc mode, multi_turn_base\)", first)
        assert match, (first, server.stderr.read() if server.poll() is not None else "")
        out = runner.invoke(main, ["generate", "--model", "scripted-model", "--fc", "--base-url", match.group(1),
                                   "--ids", f"{BASE}_0,{BASE}_1", "--result-dir", str(tmp_path / "result"),
                                   "--data", str(wheel()), "--evaluate", "--score-dir", str(tmp_path / "score")])
        assert out.exit_code == 0, _stderr(out)
        summary = json.loads((tmp_path / "score" / "scripted-model" / "multi_turn" / f"BFCL_v4_{BASE}_score.json")
                             .read_text().splitlines()[0])
        assert summary == {"accuracy": 1.0, "correct_count": 2, "total_count": 2}
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_the_scripted_server_command_refuses_a_busy_port_in_one_line(tmp_path):
    import socket
    import subprocess

    from tests.refenv import ROOT
    from tests.test_serve_env import serve_python  # Inspect's openai provider needs openai>=3.4 (README, "Two environments")

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "bfcl_safe.checker.scripted_server", "--port", str(port),
                               "--data", str(wheel())], capture_output=True, text=True, timeout=120,
                              env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 1
    assert done.stderr.startswith(f"Error: cannot listen on 127.0.0.1:{port}") and "Traceback" not in done.stderr


def test_the_inspect_example_runs_offline_against_the_scripted_server(tmp_path):
    """examples/inspect_bfcl.py as its docstring says, with every proxy pointing nowhere and
    an empty tiktoken cache: nothing is downloaded, both samples pass."""
    import subprocess

    from tests.refenv import ROOT
    from tests.test_serve_env import serve_python  # Inspect's openai provider needs openai>=3.4 (README, "Two environments")

    offline = {"HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9",
               "https_proxy": "http://127.0.0.1:9", "http_proxy": "http://127.0.0.1:9",
               "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
               "TIKTOKEN_CACHE_DIR": str(tmp_path / "no-tiktoken"), "OPENAI_API_KEY": "offline",
               "PYTHONPATH": str(ROOT)}
    env = {**os.environ, **offline}
    server = subprocess.Popen([sys.executable, "-m", "bfcl_safe.checker.scripted_server", "--port", "0",
                               "--data", str(wheel())], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env)
    try:
        url = re.match(r"serving (\S+) ", server.stdout.readline()).group(1)
        done = subprocess.run(
            [str(serve_python()), "-m", "inspect_ai", "eval", "examples/inspect_bfcl.py", "--model", "openai/scripted-model",
             "-M", "responses_api=false", "--model-base-url", url, "-T", "categories=multi_turn_base",
             "-T", f"data={wheel()}", "--limit", "2", "--log-dir", str(tmp_path / "logs"), "--display", "plain"],
            capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert re.search(r"mean\s+1\.000", done.stdout), done.stdout[-3000:]
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_too_many_usage_numbers_are_reported_and_shown_as_na(runner, tmp_path, monkeypatch):
    from bfcl_safe.checker import leaderboard
    from bfcl_safe.checker import runner as scoring_runner

    monkeypatch.setattr(leaderboard, "MAX_USAGE_NUMBERS", 3)
    monkeypatch.setattr(scoring_runner, "MAX_USAGE_NUMBERS", 3)
    result = tmp_path / "result"
    _result_file(result, "m", [_line(f"{BASE}_0"), _line(f"{BASE}_1")])
    out = _evaluate(runner, result, tmp_path / "score", "--partial-eval")
    assert out.exit_code == 0, _stderr(out)
    assert "model 'm': more than 3 latencies and token counts; its cost and latency cells are N/A" in _stderr(out)
    row = dict(zip(*_rows(tmp_path / "score" / "data_overall.csv")[:2]))
    assert row["Latency Mean (s)"] == "N/A"
