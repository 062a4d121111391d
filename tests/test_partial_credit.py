"""Per-turn diagnostics in score files (``first_failing_turn``, ``turns_passed``) and the
non-official per-turn accuracy column of ``evaluate --partial-credit``."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from bfcl_safe.cli import main
from bfcl_safe.checker.leaderboard import CSV_COLUMNS, TURN_ACCURACY_COLUMN, write_leaderboard_csv
from tests.checker_support import REAL_MODEL, REAL_RUN, dataset, real_results_subset
from tests.refenv import wheel

RUN, MODEL = REAL_RUN, REAL_MODEL
CATEGORIES = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param")




def _evaluate(result_dir: Path, score_dir: Path, *extra: str) -> None:
    out = CliRunner().invoke(main, ["evaluate", "--result-dir", str(result_dir), "--score-dir", str(score_dir),
                                    "--data", str(wheel()), "--partial", *extra])
    assert out.exit_code == 0, out.output


def _lines(score_dir: Path, category: str) -> list[dict]:
    path = score_dir / MODEL / "multi_turn" / f"BFCL_v4_{category}_score.json"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("partial")
    result_dir = real_results_subset(tmp, 40)
    _evaluate(result_dir, tmp / "plain")
    _evaluate(result_dir, tmp / "credit", "--partial-credit")
    return tmp


def test_every_failure_has_its_first_failing_turn(scored):
    seen = 0
    for category in CATEGORIES:
        for record in _lines(scored / "plain", category)[1:]:
            seen += 1
            assert list(record)[-2:] == ["first_failing_turn", "turns_passed"]
            turn = record["first_failing_turn"]
            assert record["turns_passed"] == turn
            error = record["error"]
            message = error["error_message"]
            match = re.search(r"for turn (\d+)", message if isinstance(message, str) else "")
            if match:  # a turn-level error names its turn
                assert turn == int(match.group(1)), record["id"]
            elif error["error_type"] == "multi_turn:inference_error":
                assert turn == 0
            elif error["error_type"] == "multi_turn:force_terminated":
                assert 0 <= turn < len(record["model_result"])
            else:  # the state check's message does not name the turn: the execution trace does
                assert turn == len(error["execution_result"]) - 1, record["id"]
    assert seen > 50


def test_partial_credit_adds_a_column_and_changes_nothing_official(scored):
    plain = (scored / "plain" / "data_multi_turn.csv").read_text().splitlines()
    credit = (scored / "credit" / "data_multi_turn.csv").read_text().splitlines()
    assert plain[0] == ",".join(CSV_COLUMNS)
    assert credit[0] == ",".join(CSV_COLUMNS) + "," + TURN_ACCURACY_COLUMN
    assert [line.rsplit(",", 1)[0] for line in credit[1:]] == plain[1:]
    for category in CATEGORIES:
        assert _lines(scored / "credit", category) == _lines(scored / "plain", category)
    # The definition: passed entries count 1, a failed one turns_passed / its turns; mean
    # per category, then the plain mean of the four categories (a missing one counts 0).
    per_category = []
    for category in CATEGORIES:
        summary, *failed = _lines(scored / "plain", category)
        credit_sum = summary["correct_count"] + sum(
            r["turns_passed"] / len(dataset().ground_truth_for(r["id"])) for r in failed)
        per_category.append(credit_sum / summary["total_count"])
        assert per_category[-1] >= summary["accuracy"]
    expected = "{:.2f}%".format(sum(per_category) / 4 * 100)
    assert credit[1].rsplit(",", 1)[1] == expected
    assert float(expected[:-1]) > float(credit[1].split(",")[2][:-1])  # above the official overall


def test_score_files_without_turn_data_show_not_available(tmp_path):
    score_dir = tmp_path / "score"
    shutil.copytree(RUN / "score" / MODEL, score_dir / MODEL)
    text = write_leaderboard_csv(score_dir, dataset(), partial_credit=True).read_text()
    assert text.splitlines()[1].endswith(",N/A")
