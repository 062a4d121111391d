"""Real model output: our verdicts equal the official score files, entry by entry."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from bfcl_safe.checker.leaderboard import write_leaderboard_csv
from bfcl_safe.checker.runner import score_tree
from bfcl_safe.checker.scoring import Options
from tests.checker_support import dataset, no_other_threads
from tests.refenv import REAL_RESULTS, wheel

RUN = REAL_RESULTS / "gpt-oss-120b-vllm-0.10.2"
PROMPT_DIGESTS = json.loads((RUN / "score" / "prompt_sha256.json").read_text(encoding="utf-8"))


def prompt_digest(prompt: dict) -> str:
    """As the fixture's pack.py: sha256 of the prompt without ``missed_function``."""
    kept = {k: v for k, v in prompt.items() if k != "missed_function"}
    return hashlib.sha256(json.dumps(kept, sort_keys=True, ensure_ascii=False).encode()).hexdigest()



def official_verdicts(model: str, category: str) -> tuple[dict, dict[str, str]]:
    path = RUN / "score" / model / "multi_turn" / f"BFCL_v4_{category}_score.json"
    lines = path.read_text(encoding="utf-8").splitlines()
    summary = json.loads(lines[0])
    failed = {}
    for line in lines[1:]:
        record = json.loads(line)
        failed[record["id"]] = record["error"]["error_type"]
    return summary, failed


_TURN_KEYS = ("first_failing_turn", "turns_passed")


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    out = tmp_path_factory.mktemp("score")
    problems = []
    no_other_threads()
    scores = score_tree(RUN / "result", out, dataset(), Options(jobs=2), report=problems.append)
    return scores, out, problems


def test_real_results_same_verdict_and_error_type_on_every_entry(scored):
    scores, _, problems = scored
    assert len(scores) == 3
    compared = agreed = 0
    mismatches = []
    for score in scores:
        summary, official = official_verdicts(score.model, score.category)
        ours = {record["id"]: record["error"]["error_type"] for record in score.failures}
        assert score.total == summary["total_count"] == 200
        assert score.correct == summary["correct_count"]
        for entry_id in dataset().ids(score.category):
            compared += 1
            if ours.get(entry_id) == official.get(entry_id):
                agreed += 1
            else:
                mismatches.append((entry_id, official.get(entry_id), ours.get(entry_id)))
    print(f"real results: {agreed}/{compared} entries agree")
    assert compared == 600
    assert mismatches == []
    # gpt-oss-120b is not in the pinned wheel's model registry: one notice, decoded with 'auto'.
    assert problems == ["model 'openai_gpt-oss-120b' is not in the bfcl-eval model registry; decoding its steps with 'auto'"]


def test_real_results_score_files_match_official_messages(scored):
    scores, out, _ = scored
    for score in scores:
        official = {}
        path = RUN / "score" / score.model / "multi_turn" / f"BFCL_v4_{score.category}_score.json"
        for line in path.read_text(encoding="utf-8").splitlines()[1:]:
            record = json.loads(line)
            official[record["id"]] = record
        ours_path = out / score.model / "multi_turn" / f"BFCL_v4_{score.category}_score.json"
        lines = ours_path.read_text(encoding="utf-8").splitlines()
        assert json.loads(lines[0]) == json.loads(path.read_text(encoding="utf-8").splitlines()[0])
        for line in lines[1:]:
            record = json.loads(line)
            expected = official[record["id"]]
            # Our two per-turn keys come after the reference's; the rest is its layout.
            assert [k for k in record if k not in _TURN_KEYS] == list(expected), record["id"]
            assert list(record)[-2:] == list(_TURN_KEYS), record["id"]
            assert record["error"]["error_message"] == expected["error"]["error_message"], record["id"]
            # The official run used a dataset revision whose miss_func entries hold out some
            # functions at another turn (its inference even failed on them: "Holdout turn
            # should not have user message"); the rest of the prompt is the pinned entry.
            # (The fixture keeps a digest of each official prompt, see its pack.py.)
            assert prompt_digest(record["prompt"]) == PROMPT_DIGESTS[record["id"]], record["id"]
            assert record.get("model_result_decoded") == expected.get("model_result_decoded"), record["id"]
            if "details" in expected["error"]:
                assert record["error"]["details"] == expected["error"]["details"], record["id"]
            if "execution_result" in expected["error"]:
                # Byte for byte, builtins' errors included (exec() -> CPython's own TypeError text).
                assert record["error"]["execution_result"] == expected["error"]["execution_result"], record["id"]


def test_real_results_csv_matches_official(scored):
    _, out, _ = scored
    # The display name of this vLLM run is not in the pinned wheel's model registry.
    write_leaderboard_csv(out, dataset(), display_names={"openai_gpt-oss-120b": "openai/gpt-oss-120b (FC) (vLLM)"})
    official = (RUN / "score" / "data_multi_turn.csv").read_text(encoding="utf-8").splitlines()
    ours = (out / "data_multi_turn.csv").read_text(encoding="utf-8").splitlines()
    assert ours[0] == official[0]
    # The official run had a long-context score file from an earlier run; ours has three
    # categories, so only the per-category cells that both have are compared.
    assert ours[1].split(",")[1:3 + 1][0] == official[1].split(",")[1]
    assert ours[1].split(",")[3:6] == official[1].split(",")[3:6]
