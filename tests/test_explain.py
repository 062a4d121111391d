"""``bfcl-safe explain`` on real results, through click's CliRunner: turns, calls, results,
the state diff and missing responses at the failing turn, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bfcl_safe.cli import main
from bfcl_safe.checker.explain import state_diff
from tests.refenv import REAL_RESULTS, wheel

RUN = REAL_RESULTS / "gpt-oss-120b-vllm-0.10.2"
RESULT = RUN / "result"
MODEL = "openai_gpt-oss-120b"



def _explain(runner, *args: str, result_dir: Path = RESULT):
    return runner.invoke(main, ["explain", "--result-dir", str(result_dir), "--data", str(wheel()), *args])


def _stderr(out) -> str:
    return out.stderr if hasattr(out, "stderr") else out.output


def _official(entry_id: str) -> dict:
    category = entry_id.rsplit("_", 1)[0]
    path = RUN / "score" / MODEL / "multi_turn" / f"BFCL_v4_{category}_score.json"
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        record = json.loads(line)
        if record["id"] == entry_id:
            return record
    raise KeyError(entry_id)


def test_state_mismatch_names_the_differing_attribute_and_paths(runner):
    out = _explain(runner, "--id", "multi_turn_base_2")
    assert out.exit_code == 0, _stderr(out)
    text = out.stdout if hasattr(out, "stdout") else out.output
    assert "verdict: FAIL  multi_turn:instance_state_mismatch  at turn 3" in text
    assert "== turn 0: PASSED" in text and "== turn 3: FAILED" in text and "== turn 4: NOT CHECKED" in text
    assert "state diff (GorillaFileSystem):" in text and "attribute root:" in text
    # The copy landed beside the Archived folder instead of inside it.
    assert "root.contents.documents.contents.Archived.contents['IdeasArchive.txt']" in text
    assert "root.contents.documents.contents['IdeasArchive.txt']" in text
    assert "(absent)" in text
    # Calls with their results, for the model and for the ground truth.
    assert "cp(source='TeamNotes.txt',destination='Archived')" in text
    assert "-> {\"result\": \"'TeamNotes.txt' copied to 'Archived/TeamNotes.txt'\"}" in text


def test_json_output_for_tools(runner):
    out = _explain(runner, "--id", "multi_turn_base_2", "--json")
    assert out.exit_code == 0
    data = json.loads(out.stdout if hasattr(out, "stdout") else out.output)
    official = _official("multi_turn_base_2")
    assert data["error_type"] == official["error"]["error_type"]
    assert data["first_failing_turn"] == data["turns_passed"] == 3
    assert [t["status"] for t in data["turns"]] == ["passed"] * 3 + ["failed", "not checked"]
    failing = data["turns"][3]
    assert failing["state_diff"]["class"] == "GorillaFileSystem"
    (attribute,) = failing["state_diff"]["attributes"]
    assert attribute["attribute"] == "root" and list(official["error"]["details"]["differences"]) == ["root"]
    paths = {p["path"]: p for p in attribute["paths"]}
    inside = paths["root.contents.documents.contents.Archived.contents['IdeasArchive.txt']"]
    assert inside["model"] == {"absent": True} and inside["ground_truth"]["value"]["name"] == "IdeasArchive.txt"
    # Results shown are the ones the scorer computed (the official execution_result).
    executed = official["error"]["execution_result"]
    for turn, expected in zip(data["turns"], executed):
        assert [step["results"] for step in turn["model"]] == expected["model"]
        assert [call["result"] for call in turn["ground_truth"]] == expected["ground_truth"]
    assert data["turns"][4]["run"] is False and data["turns"][4]["model"][0]["results"] is None


def test_response_mismatch_lists_the_missing_responses(runner):
    entry_id = "multi_turn_base_13"
    out = _explain(runner, "--id", entry_id, "--json")
    assert out.exit_code == 0
    data = json.loads(out.stdout if hasattr(out, "stdout") else out.output)
    official = _official(entry_id)
    failing = data["turns"][data["first_failing_turn"]]
    assert failing["error_type"] == "multi_turn:execution_response_mismatch"
    assert failing["missing_responses"] == official["error"]["details"]["missing_items"]
    text = _explain(runner, "--id", entry_id).output
    assert "missing responses" in text


@pytest.mark.parametrize("entry_id, error_type", [
    ("multi_turn_base_30", "multi_turn:empty_turn_model_response"),
    ("multi_turn_miss_func_10", "multi_turn:force_terminated"),
    ("multi_turn_miss_func_101", "multi_turn:inference_error"),
])
def test_other_error_types_are_explained(runner, entry_id, error_type):
    out = _explain(runner, "--id", entry_id, "--json")
    assert out.exit_code == 0, _stderr(out)
    data = json.loads(out.stdout if hasattr(out, "stdout") else out.output)
    assert data["error_type"] == error_type == _official(entry_id)["error"]["error_type"]
    assert "failed" in [t["status"] for t in data["turns"]]
    assert _explain(runner, "--id", entry_id).exit_code == 0


def test_a_passing_entry(runner):
    passed = next(f"multi_turn_base_{n}" for n in range(200) if not _has_failure(f"multi_turn_base_{n}"))
    out = _explain(runner, "--id", passed)
    assert out.exit_code == 0
    assert "verdict: PASS" in out.output and "FAILED" not in out.output


def _has_failure(entry_id: str) -> bool:
    try:
        _official(entry_id)
        return True
    except KeyError:
        return False


@pytest.mark.parametrize("args, message", [
    (["--id", "multi_turn_base_999"], "unknown id 'multi_turn_base_999'"),
    (["--id", "nonsense"], "unknown id 'nonsense'"),
    (["--id", "multi_turn_base_2", "--model", "nope"], "unknown model 'nope'"),
    (["--id", "multi_turn_long_context_2"], "no multi_turn_long_context result file"),
])
def test_one_line_errors(runner, args, message):
    out = _explain(runner, *args)
    assert out.exit_code == 1
    error = _stderr(out).strip()
    assert error.startswith("Error:") and message in error and len(error.splitlines()) == 1


def test_several_models_need_model_and_missing_entries_are_errors(runner, tmp_path):
    source = RESULT / MODEL / "multi_turn" / "BFCL_v4_multi_turn_base_result.json"
    for model in ("model-a", "model-b"):
        target = tmp_path / model / "multi_turn" / source.name
        target.parent.mkdir(parents=True)
        target.write_text("".join(source.read_text(encoding="utf-8").splitlines(keepends=True)[:3]), encoding="utf-8")
    out = _explain(runner, "--id", "multi_turn_base_2", result_dir=tmp_path)
    assert out.exit_code == 1 and "choose one with --model" in _stderr(out)
    out = _explain(runner, "--id", "multi_turn_base_2", "--model", "model-b", result_dir=tmp_path)
    assert out.exit_code == 0 and "model model-b" in out.output
    out = _explain(runner, "--id", "multi_turn_base_7", "--model", "model-a", result_dir=tmp_path)
    assert out.exit_code == 1 and "multi_turn_base_7 is not in" in _stderr(out)
    out = _explain(runner, "--id", "multi_turn_base_2", result_dir=tmp_path / "missing")
    assert out.exit_code == 2 and "does not exist" in _stderr(out)


@pytest.mark.parametrize("model, truth, paths", [
    ({"a": 1, "b": 2}, {"a": 1, "b": 3}, ["x.b"]),
    ({"a": 1}, {"a": 1, "new key": 2}, ["x['new key']"]),
    ([1, 2, 3], [1, 2], ["x[2]"]),
    ({"l": [{"k": 1}]}, {"l": [{"k": 2}]}, ["x.l[0].k"]),
    ({1: "int key"}, {1: "other"}, ["x['1']"]),
    ((1, 2), [1, 2], ["x"]),  # equal as plain data, not to ==: reported at the attribute
], ids=["dict-value", "dict-key-only-one-side", "list-extra", "nested", "non-str-key", "tuple-vs-list"])
def test_state_diff_paths(model, truth, paths):
    diff = state_diff("x", model, truth)
    assert [p["path"] for p in diff["paths"]] == paths
