"""Malformed result files: every problem is reported (per line, entry or file, in the score
output and on stderr) and everything else is still scored.

Complements tests/test_cli.py (which covers a broken line, a duplicate, an unknown id and
a non-object line on real results) with generated trees: ground truth replayed as a
model, so the good entries have a known verdict (they pass).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from bfcl_safe.cli import main
from bfcl_safe.checker.replay import ground_truth_as_fc, ground_truth_as_prompting
from tests.checker_support import dataset
from tests.refenv import wheel

MODEL = "malformed-results-model"  # not in the registry: steps decoded with 'auto'
BASE = "multi_turn_base"
PARAM = "multi_turn_miss_param"
INFERENCE_ERROR = "multi_turn:inference_error"


def _stderr(out: Any) -> str:
    return out.stderr if hasattr(out, "stderr") else out.output


def _replay(entry_id: str, prompting: bool = False) -> list:
    entry = dataset().entry(entry_id)
    render = ground_truth_as_prompting if prompting else ground_truth_as_fc
    return render(dataset().ground_truth_for(entry_id), entry["involved_classes"])


def _line(entry_id: Any, result: Any, **extra: Any) -> str:
    return json.dumps({"id": entry_id, "result": result, **extra})


def _write(tmp_path: Path, lines: list[str | bytes], category: str = BASE) -> Path:
    result_dir = tmp_path / "result"
    path = result_dir / MODEL / "multi_turn" / f"BFCL_v4_{category}_result.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\n".join(line if isinstance(line, bytes) else line.encode("utf-8") for line in lines) + b"\n")
    return result_dir


def _evaluate(runner: CliRunner, result_dir: Path, *extra: str, status: int = 0) -> Any:
    score_dir = result_dir.parent / "score"
    out = runner.invoke(main, ["evaluate", "--result-dir", str(result_dir), "--score-dir", str(score_dir),
                               "--data", str(wheel()), *extra])
    assert out.exit_code == status, (out.output, _stderr(out), out.exception)
    return out


def _scores(result_dir: Path, category: str = BASE) -> tuple[dict, dict[str, dict]]:
    path = result_dir.parent / "score" / MODEL / "multi_turn" / f"BFCL_v4_{category}_score.json"
    lines = path.read_text(encoding="utf-8").splitlines()
    return json.loads(lines[0]), {json.loads(line)["id"]: json.loads(line) for line in lines[1:]}


# ----------------------------------------------------------------------------- lines


BAD_LINES = [
    # (id, line, what stderr says about it)
    ("truncated-object", '{"id": "multi_turn_base_5", "result": [[', "not valid JSON"),
    ("invalid-utf8", b'\xff\xfe{"id": "multi_turn_base_5", "result": []}', "not valid JSON"),
    ("nan-id", '{"id": NaN, "result": []}', "does not belong to multi_turn_base"),
    ("bare-string", '"just text"', "expected an object with 'id' and 'result'"),
    ("bare-number", "42", "expected an object with 'id' and 'result'"),
    ("null", "null", "expected an object with 'id' and 'result'"),
    ("array", '[{"id": "multi_turn_base_5", "result": []}]', "expected an object with 'id' and 'result'"),
    ("no-result", '{"id": "multi_turn_base_5"}', "expected an object with 'id' and 'result'"),
    ("no-id", '{"result": []}', "expected an object with 'id' and 'result'"),
    ("int-id", '{"id": 5, "result": []}', "id 5 does not belong to multi_turn_base"),
    ("null-id", '{"id": null, "result": []}', "id None does not belong to multi_turn_base"),
    ("list-id", '{"id": ["multi_turn_base_5"], "result": []}', "does not belong to multi_turn_base"),
    ("other-category", _line("multi_turn_miss_func_5", []), "'multi_turn_miss_func_5' does not belong to multi_turn_base"),
    ("leading-zero", _line("multi_turn_base_05", []), "'multi_turn_base_05' is not in the dataset"),
    ("too-many-digits", _line("multi_turn_base_" + "9" * 5000, []), "(5018 characters) is not in the dataset"),
    ("unknown-id", _line("multi_turn_base_4242", []), "'multi_turn_base_4242' is not in the dataset"),
    ("huge-id", _line("x" * 1_000_000, []), "does not belong to multi_turn_base"),
    ("too-deep", '{"id": "multi_turn_base_5", "result": ' + "[" * 100_000 + "]" * 100_000 + "}",
     "nested 100,001 levels deep, more than the 200 a result line may be; line skipped"),
]


def test_every_bad_line_is_reported_with_its_line_number_and_the_rest_is_scored(runner, tmp_path) -> None:
    good = [_line("multi_turn_base_0", _replay("multi_turn_base_0")),
            _line("multi_turn_base_1", _replay("multi_turn_base_1", prompting=True))]
    lines = [good[0], *(line for _, line, _ in BAD_LINES), good[1],
             _line("multi_turn_base_0", [])]  # a duplicate: the first occurrence counts
    result_dir = _write(tmp_path, lines)
    out = _evaluate(runner, result_dir, "--partial", status=3)  # (the duplicate id)
    stderr = _stderr(out)
    warnings = [line for line in stderr.splitlines() if line.startswith("warning:") and ".json:" in line]
    for number, (case, _, message) in enumerate(BAD_LINES, start=2):
        if "is not in the dataset" in message:  # found after reading: reported per file, by id
            matching = [w for w in warnings if message in w]
        else:
            matching = [w for w in warnings if f".json:{number}: " in w]
        assert len(matching) == 1 and message in matching[0], (case, matching)
    assert any(f".json:{len(lines)}: duplicate id 'multi_turn_base_0'" in w for w in warnings)
    assert max(len(line) for line in stderr.splitlines()) < 400  # hostile ids are cut short
    summary, failed = _scores(result_dir)
    assert summary["total_count"] == 2 and summary["correct_count"] == 2 and failed == {}


def test_a_byte_order_mark_costs_only_the_first_line(runner, tmp_path) -> None:
    lines = ["\ufeff" + _line("multi_turn_base_0", _replay("multi_turn_base_0")),
             _line("multi_turn_base_1", _replay("multi_turn_base_1"))]
    result_dir = _write(tmp_path, lines)
    out = _evaluate(runner, result_dir, "--partial")
    assert ".json:1: not valid JSON" in _stderr(out)
    summary, _ = _scores(result_dir)
    assert summary["total_count"] == 1 and summary["correct_count"] == 1


def test_a_file_of_only_bad_lines_is_reported_and_other_files_are_scored(runner, tmp_path) -> None:
    _write(tmp_path, ["{not json", "[]", "7"], category="multi_turn_miss_func")
    result_dir = _write(tmp_path, [_line("multi_turn_base_0", _replay("multi_turn_base_0"))])
    out = _evaluate(runner, result_dir, "--partial")
    stderr = _stderr(out)
    assert "BFCL_v4_multi_turn_miss_func_result.json:1: not valid JSON" in stderr
    assert "BFCL_v4_multi_turn_miss_func_result.json:3: expected an object" in stderr
    summary, _ = _scores(result_dir)
    assert summary["correct_count"] == 1


def test_a_folder_named_like_a_result_file_is_not_read(runner, tmp_path) -> None:
    result_dir = _write(tmp_path, [_line("multi_turn_base_0", _replay("multi_turn_base_0"))])
    (result_dir / MODEL / "multi_turn" / "BFCL_v4_multi_turn_miss_func_result.json").mkdir()
    _evaluate(runner, result_dir, "--partial")
    assert _scores(result_dir)[0]["correct_count"] == 1


# ----------------------------------------------------------------------------- entries


def _junk_steps() -> list:
    """Steps of every wrong type; the reference skips a step it cannot decode, and so do we."""
    return [5, None, True, 2.5, [[["deep"]]], [1, 2], {"ls": [1, 2]}, [{"ls": 5}], [{"ls": None}], [{"ls": "[1]"}],
            [{"ls": "null"}], [{"ls": "{not json"}], [{"cd": [["x"]]}], [None], [[{"ls": "{}"}]], "",
            "not a call", "[1, 2, 3]", {"a": {"b": 1}}]


WRONG_RESULTS = [
    # (case, result, expected error type, what the message says)
    # (case, result, expected error type, what its message says, what stderr says or None)
    # BFCL records a failed inference as a string: an inference error, not a malformed file.
    ("result-string", "Error during inference: timeout", INFERENCE_ERROR, "did not output a list", None),
    ("result-null", None, INFERENCE_ERROR, "did not output a list", "malformed result: NoneType, not a list"),
    ("result-number", 3, INFERENCE_ERROR, "did not output a list", "malformed result: int, not a list of turns"),
    ("result-object", {"turn": []}, INFERENCE_ERROR, "did not output a list", "malformed result: dict, not a list"),
    ("turn-int", "turn-int", INFERENCE_ERROR, "a turn is int, not a list of steps", "a turn is int, not a list"),
    ("turn-null", "turn-null", INFERENCE_ERROR, "a turn is NoneType, not a list of steps", "a turn is NoneType"),
    ("turn-float", "turn-float", INFERENCE_ERROR, "a turn is float, not a list of steps", "a turn is float"),
    ("wrong-length", "wrong-length", "multi_turn:force_terminated", "force-terminated", None),
]


def _wrong_result(case: str, value: Any, entry_id: str) -> Any:
    replay = _replay(entry_id)
    if case == "turn-int":
        return [replay[0], 7, *replay[2:]]
    if case == "turn-null":
        return [replay[0], None, *replay[2:]]
    if case == "turn-float":
        return [*replay[:-1], 1.5]
    if case == "wrong-length":
        return replay + [[]]
    return value


def test_wrong_types_are_per_entry_errors_in_the_score_file_and_on_stderr(runner, tmp_path) -> None:
    ids = [f"multi_turn_base_{i}" for i in range(len(WRONG_RESULTS) + 4)]
    lines = []
    expected: dict[str, tuple[str, str, str | None]] = {}
    for entry_id, (case, value, error_type, message, warning) in zip(ids, WRONG_RESULTS):
        lines.append(_line(entry_id, _wrong_result(case, value, entry_id)))
        expected[entry_id] = (error_type, message, warning)
    good = ids[len(WRONG_RESULTS):]
    # Replayed ground truth with junk steps in every turn (FC and prompting form), and a
    # turn given as an object (iterating it yields its keys, as in the reference): all pass.
    fc = _replay(good[0])
    lines.append(_line(good[0], [[*_junk_steps(), *turn] for turn in fc]))
    prompting = _replay(good[1], prompting=True)
    lines.append(_line(good[1], [[*_junk_steps(), *turn] for turn in prompting]))
    lines.append(_line(good[2], [{step: 0 for step in turn} for turn in _replay(good[2], prompting=True)]))
    lines.append(_line(good[3], _replay(good[3]), inference_log=[{"x": float("inf")}], latency="n/a"))
    result_dir = _write(tmp_path, lines)
    out = _evaluate(runner, result_dir, "--partial")
    summary, failed = _scores(result_dir)
    assert summary["total_count"] == len(ids)
    assert summary["correct_count"] == len(good), {k: v["error"] for k, v in failed.items() if k in good}
    stderr = _stderr(out)
    for entry_id, (error_type, message, warning) in expected.items():
        assert failed[entry_id]["error"]["error_type"] == error_type, entry_id
        assert message in json.dumps(failed[entry_id]["error"]["error_message"]), entry_id
        reported = [line for line in stderr.splitlines() if f": {entry_id}: " in line]
        if warning is None:
            assert reported == [], entry_id
        else:
            assert len(reported) == 1 and warning in reported[0], (entry_id, reported)
    assert "could not score" not in stderr


def test_a_file_lacking_entries_is_not_scored_unless_partial(runner, tmp_path) -> None:
    """As ``bfcl evaluate``: a result file without every entry of its category is refused
    (one line: how many are missing, and --partial-eval), the run ends non-zero; with
    --partial-eval the entries present are scored."""
    present = ["multi_turn_base_3", "multi_turn_base_0", "multi_turn_base_150"]  # out of order, too
    result_dir = _write(tmp_path, [_line(entry_id, _replay(entry_id)) for entry_id in present])
    other = _write(tmp_path, [_line(entry_id, _replay(entry_id)) for entry_id in dataset().ids(PARAM)],
                   category=PARAM)
    out = runner.invoke(main, ["evaluate", "--result-dir", str(result_dir), "--score-dir",
                               str(result_dir.parent / "score"), "--data", str(wheel())])
    total = len(dataset().ids(BASE))
    assert out.exit_code != 0
    assert f"{total - 3} of {total} entries missing (e.g. multi_turn_base_1); file not scored: pass " \
           f"--partial-eval to score only the entries present" in _stderr(out)
    score = result_dir.parent / "score" / MODEL / "multi_turn"
    assert not (score / f"BFCL_v4_{BASE}_score.json").exists()
    assert other == result_dir and json.loads((score / f"BFCL_v4_{PARAM}_score.json").read_text().splitlines()[0])[
        "total_count"] == len(dataset().ids(PARAM))  # the complete file is scored

    _evaluate(runner, result_dir, "--partial")
    summary, failed = _scores(result_dir)
    assert summary["total_count"] == 3 and failed == {}
