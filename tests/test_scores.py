"""checker.score_files: score files and data_multi_turn.csv, byte for byte against BFCL.

Three sources of truth: the official score files and CSV of the real gpt-oss-120b run,
the reference's own ``make_json_serializable`` / ``write_list_of_dicts_to_file``, and
the reference's ``update_leaderboard_table_with_local_score_file`` +
``generate_leaderboard_csv`` run on the same score folder (with pandas, numpy and the
model registry stubbed: they are not needed for the multi-turn table).
"""

from __future__ import annotations

import importlib
import json
import shutil
import sys
import types
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bfcl_safe.checker.dataset import Dataset
from bfcl_safe.checker.leaderboard import CSV_COLUMNS, collect_scores, write_leaderboard_csv
from bfcl_safe.checker.codec import dumps_line
from bfcl_safe.checker.outputs import ScoreFileWriter, score_file_path
from bfcl_safe.checker.score_files import (
    ScoreFileError,
    category_of_score_file,
    read_score_file,
    write_score_file,
)
from tests.refenv import REAL_RESULTS, import_reference, wheel_path

REAL = REAL_RESULTS / "gpt-oss-120b-vllm-0.10.2" / "score"
MODEL = "openai_gpt-oss-120b"
#: The real run used a BFCL with a locally added registry entry for this model.
REAL_DISPLAY = {MODEL: "openai/gpt-oss-120b (FC) (vLLM)"}
REAL_CATEGORIES = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param")



@pytest.fixture(scope="module")
def data() -> Dataset:
    return Dataset.open(wheel_path())


@pytest.fixture(scope="module")
def ref_utils():
    return import_reference("utils")


def _summary(correct: int, total: int = 200) -> str:
    return json.dumps({"accuracy": correct / total, "correct_count": correct, "total_count": total}) + "\n"


def _put(score_dir: Path, model: str, category: str, correct: int, total: int = 200, group: str = "multi_turn"):
    path = score_dir / model / group / f"BFCL_v4_{category}_score.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_summary(correct, total))


# --------------------------------------------------------------------------- score files


@pytest.mark.parametrize("category", REAL_CATEGORIES)
def test_rewrite_official_score_file_byte_for_byte(tmp_path, category):
    official = REAL / MODEL / "multi_turn" / f"BFCL_v4_{category}_score.json"
    summary, failed = read_score_file(official)
    assert set(summary) == {"accuracy", "correct_count", "total_count"}
    assert len(failed) == summary["total_count"] - summary["correct_count"]
    path = write_score_file(tmp_path, MODEL, category, list(failed.values()), summary["correct_count"], summary["total_count"])
    assert path == tmp_path / MODEL / "multi_turn" / official.name
    ours, theirs = path.read_bytes().split(b"\n"), official.read_bytes().split(b"\n")
    assert len(ours) == len(theirs)
    for number, (a, b) in enumerate(zip(ours, theirs), 1):
        assert a == b, f"line {number} differs"


def test_score_file_header_and_layout(tmp_path):
    failed = [{"id": "multi_turn_base_3", "valid": False, "error": {"error_type": "multi_turn:force_terminated"}}]
    path = write_score_file(tmp_path, "m", "multi_turn_base", failed, 2, 3)
    assert path.read_bytes() == (
        b'{"accuracy": 0.6666666666666666, "correct_count": 2, "total_count": 3}\n'
        b'{"id": "multi_turn_base_3", "valid": false, "error": {"error_type": "multi_turn:force_terminated"}}\n'
    )
    summary, by_id = read_score_file(path)
    assert summary["correct_count"] == 2 and list(by_id) == ["multi_turn_base_3"]


def test_score_file_matches_reference_writer(tmp_path, ref_utils):
    """Same bytes as the reference's ``write_list_of_dicts_to_file`` on awkward values."""

    class Directory:
        def __str__(self):
            return "<Directory: docs, Parent: alex, Contents: {}>"

    failed = [
        {
            "id": "multi_turn_base_1",
            "text": "naïve — 東京 \u2028 \x00 \"q\" \\",
            "state": {"dir": Directory(), "tags": {"b"}, "pair": (1, "x"), "mixed": (1, {2}), 5: "int key"},
            "floats": [0.1, 1e300, float("nan"), float("inf"), -0.0, 10**30],
            "nested": [[{"deep": [Directory()]}]],
        }
    ]
    ours = write_score_file(tmp_path / "ours", "m", "multi_turn_base", failed, 199, 200)
    reference_dir = tmp_path / "ref"
    ref_utils.write_list_of_dicts_to_file(
        ours.name, [{"accuracy": 199 / 200, "correct_count": 199, "total_count": 200}, *failed], reference_dir
    )
    assert ours.read_bytes() == (reference_dir / ours.name).read_bytes()


_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8),
    st.sampled_from([object, type, Ellipsis, b"by", 1j]),
    st.frozensets(st.integers(), max_size=3),
)
_values = st.recursive(
    _leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.tuples(inner, inner),
        st.dictionaries(st.one_of(st.text(max_size=4), st.integers(), st.booleans(), st.none()), inner, max_size=3),
    ),
    max_leaves=12,
)


@given(_values)
def test_dumps_line_equals_reference_serialisation(ref_utils, value):
    assert dumps_line(value) == json.dumps(ref_utils.make_json_serializable(value), ensure_ascii=False)


def test_lone_surrogate_round_trips(tmp_path):
    failed = [{"id": "multi_turn_base_0", "model_result_raw": "bad \ud800 text"}]
    path = write_score_file(tmp_path, "m", "multi_turn_base", failed, 0, 1)
    path.read_bytes().decode("utf-8")  # valid UTF-8
    assert read_score_file(path)[1]["multi_turn_base_0"]["model_result_raw"] == "bad \ud800 text"


@pytest.mark.parametrize(
    "failed, correct, total, message",
    [
        ([], 0, 0, "total_count must be positive"),
        ([], 1, 2, r"correct_count \(1\) \+ failed entries \(0\) != total_count \(2\)"),
        ([{"id": "a"}], 1, 1, r"\+ failed entries \(1\) != total_count"),
    ],
)
def test_inconsistent_counts_are_rejected(tmp_path, failed, correct, total, message):
    with pytest.raises(ValueError, match=message):
        write_score_file(tmp_path, "m", "multi_turn_base", failed, correct, total)


def test_only_multi_turn_categories(tmp_path):
    with pytest.raises(ValueError, match="'simple_python' is not a multi-turn category"):
        score_file_path(tmp_path, "m", "simple_python")


@pytest.mark.parametrize(
    "content, message",
    [
        ("", "the file is empty"),
        ("\n\n", "the file is empty"),
        ('{"accuracy": 1\n', r"line 1 is not JSON"),
        (_summary(1, 2) + "[1]\n", r"line 2 is not a JSON object"),
        (_summary(1, 2) + '{"valid": false}\n', r"line 2 has no 'id'"),
    ],
)
def test_read_score_file_errors(tmp_path, content, message):
    path = tmp_path / "BFCL_v4_multi_turn_base_score.json"
    path.write_text(content)
    with pytest.raises(ScoreFileError, match=message) as info:
        read_score_file(path)
    assert str(info.value).startswith(str(path)) and "\n" not in str(info.value)


def test_read_missing_score_file(tmp_path):
    with pytest.raises(ScoreFileError, match="cannot read it"):
        read_score_file(tmp_path / "nope.json")


@pytest.mark.parametrize(
    "path, category",
    [
        ("s/m/multi_turn/BFCL_v4_multi_turn_base_score.json", "multi_turn_base"),
        ("s/m/non_live/BFCL_v4_simple_python_score.json", "simple_python"),
        ("s/BFCL_v4_x/m/BFCL_v4_multi_turn_long_context_score.json", "multi_turn_long_context"),
        ("s/m/BFCL_v4_multi-turn_score.json", None),
    ],
)
def test_category_of_score_file(path, category, ref_utils):
    assert category_of_score_file(path) == category
    assert ref_utils.extract_test_category(path, raise_error=False) == category


# --------------------------------------------------------------------------- CSV


def test_real_csv_reproduced_exactly(tmp_path, data):
    score_dir = tmp_path / "score"
    shutil.copytree(REAL / MODEL, score_dir / MODEL)
    # The official CSV's Long Context came from a score file left by an earlier run (41.00%).
    _put(score_dir, MODEL, "multi_turn_long_context", 82)
    path = write_leaderboard_csv(score_dir, data, display_names=REAL_DISPLAY)
    assert path == score_dir / "data_multi_turn.csv"
    assert path.read_bytes() == (REAL / "data_multi_turn.csv").read_bytes()
    # Without the local registry entry the pinned wheel does not know the model: folder name.
    text = write_leaderboard_csv(score_dir, data).read_text()
    assert text.splitlines()[1] == "1,openai_gpt-oss-120b,40.25%,41.50%,42.00%,36.50%,41.00%"


def test_real_csv_without_long_context(tmp_path, data):
    score_dir = tmp_path / "score"
    shutil.copytree(REAL / MODEL, score_dir / MODEL)
    text = write_leaderboard_csv(score_dir, data, display_names=REAL_DISPLAY).read_text()
    # Missing category: N/A, counted as 0 in the overall ((41.5 + 42 + 36.5 + 0) / 4).
    assert text == ",".join(CSV_COLUMNS) + "\n1,openai/gpt-oss-120b (FC) (vLLM),30.00%,41.50%,42.00%,36.50%,N/A"


def test_empty_score_dir_gives_header_only(tmp_path):
    assert write_leaderboard_csv(tmp_path).read_text() == ",".join(CSV_COLUMNS)
    assert write_leaderboard_csv(tmp_path / "new").read_text() == ",".join(CSV_COLUMNS)


def test_first_models_come_first_on_ties(tmp_path):
    for model in ("zeta", "alpha", "mid"):
        for category in ("multi_turn_base", "multi_turn_miss_func"):
            _put(tmp_path, model, category, 100)
    _put(tmp_path, "best", "multi_turn_base", 200)
    scores = collect_scores(tmp_path, first_models=["mid", "zeta"])
    assert list(scores)[:2] == ["mid", "zeta"]
    rows = write_leaderboard_csv(tmp_path, first_models=["mid", "zeta"]).read_text().splitlines()[1:]
    assert [row.split(",")[1] for row in rows][:2] == ["mid", "zeta"]
    assert rows[0].startswith("1,mid,25.00%,50.00%,50.00%,N/A,N/A")


# The reference's own CSV writer on the same score folders.


@pytest.fixture
def reference_csv(monkeypatch):
    """A function writing the reference's data_multi_turn.csv for a score folder."""
    import_reference("utils")
    monkeypatch.setitem(sys.modules, "pandas", types.ModuleType("pandas"))
    monkeypatch.setitem(sys.modules, "numpy", types.ModuleType("numpy"))
    registry = types.ModuleType("bfcl_eval.constants.model_config")
    registry.MODEL_CONFIG_MAPPING = {}
    monkeypatch.setitem(sys.modules, registry.__name__, registry)
    helper_name = "bfcl_eval.eval_checker.eval_runner_helper"
    monkeypatch.delitem(sys.modules, helper_name, raising=False)
    helper = importlib.import_module(helper_name)
    # Only the entry count of a missing category is read from the dataset; not used by this table.
    monkeypatch.setattr(helper, "load_dataset_entry", lambda category, **kwargs: [{}] * 200)

    def run(score_dir: Path, display: dict[str, str]) -> bytes:
        for folder, name in display.items():
            registry.MODEL_CONFIG_MAPPING[folder.replace("_", "/")] = types.SimpleNamespace(
                display_name=name, url="", org="", license="", input_price=None, output_price=None
            )
        table: dict = {}
        helper.update_leaderboard_table_with_local_score_file(table, score_dir)
        helper.generate_leaderboard_csv(table, score_dir)
        return (score_dir / "data_multi_turn.csv").read_bytes()

    yield run
    sys.modules.pop(helper_name, None)


CSV_CASES = {
    "one_model_all_categories": {"m1": {"multi_turn_base": 83, "multi_turn_miss_func": 84, "multi_turn_miss_param": 73, "multi_turn_long_context": 82}},
    "missing_categories_and_other_groups": {
        "m1": {"multi_turn_base": 1, ("non_live", "simple_python"): 200},
        "m2": {("live", "live_simple"): 5},
        "m_3": {"multi_turn_long_context": 199, "multi_turn_miss_param": 7},
    },
    "ties_and_perfect_and_zero": {
        "a": {c: 200 for c in ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context")},
        "b": {"multi_turn_base": 0, "multi_turn_miss_func": 0},
        "c": {"multi_turn_base": 100, "multi_turn_miss_func": 100},
        "d": {"multi_turn_miss_param": 100, "multi_turn_long_context": 100},
        "e": {"multi_turn_base": 1, "multi_turn_miss_func": 2, "multi_turn_miss_param": 3, "multi_turn_long_context": 199},
    },
    "odd_totals": {"x": {("multi_turn", "multi_turn_base"): (1, 3), "multi_turn_miss_func": (2, 7)}},
}


@pytest.mark.parametrize("case", sorted(CSV_CASES))
def test_csv_equals_reference_writer(tmp_path, reference_csv, case):
    score_dir = tmp_path / "score"
    display = {}
    for model, categories in CSV_CASES[case].items():
        display[model] = f"Model {model.upper()} (FC)"
        for key, count in categories.items():
            group, category = key if isinstance(key, tuple) else ("multi_turn", key)
            correct, total = count if isinstance(count, tuple) else (count, 200)
            _put(score_dir, model, category, correct, total, group=group)
    ours = write_leaderboard_csv(score_dir, display_names=display).read_bytes()
    assert ours == reference_csv(score_dir, display)


def test_csv_display_name_from_dataset(tmp_path, data):
    _put(tmp_path, "google_gemma-3-1b-it", "multi_turn_base", 50)
    _put(tmp_path, "unknown_model", "multi_turn_base", 10)
    lines = write_leaderboard_csv(tmp_path, data).read_text().splitlines()
    assert lines[1:] == ["1,Gemma-3-1b-it (Prompt),6.25%,25.00%,N/A,N/A,N/A", "2,unknown_model,1.25%,5.00%,N/A,N/A,N/A"]


def test_csv_rejects_unreadable_summary(tmp_path):
    _put(tmp_path, "m", "multi_turn_base", 1)
    (tmp_path / "m" / "multi_turn" / "BFCL_v4_multi_turn_miss_func_score.json").write_text("oops\n")
    with pytest.raises(ScoreFileError, match=r"BFCL_v4_multi_turn_miss_func_score\.json: the first line is not JSON"):
        write_leaderboard_csv(tmp_path)



@pytest.mark.parametrize("buffer_chars", [0, 50, ScoreFileWriter.BUFFER_CHARS])
def test_score_file_writer_spills_to_disk_with_the_same_bytes(tmp_path, monkeypatch, buffer_chars):
    """Failure lines beyond the in-memory budget go to a side file; the score file is the same."""
    monkeypatch.setattr(ScoreFileWriter, "BUFFER_CHARS", buffer_chars)
    lines = [dumps_line({"id": f"multi_turn_base_{i}", "text": "naïve \ud800 " * i}) for i in range(6)]
    writer = ScoreFileWriter(tmp_path / "ours", "m", "multi_turn_base")
    for line in lines:
        writer.add(line)
    path = writer.finish(194, 200)
    # The format itself: the summary line, then the lines, each ended by "\n", in UTF-8
    # with lone surrogates written as their escapes.
    header = dumps_line({"accuracy": 194 / 200, "correct_count": 194, "total_count": 200})
    expected = "".join(f"{line}\n" for line in [header, *lines]).encode("utf-8", "backslashreplace")
    assert path.read_bytes() == expected
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no side or temporary file left
