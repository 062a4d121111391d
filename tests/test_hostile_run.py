"""Hostile result trees and runs: the path from a result tree to score files (issue 14
items 1, 5 and 8; issue 19 items 1-3 and 7).

- One fault boundary per entry (``checker.scoring``): whatever escapes scoring an entry,
  and a failure record that cannot be written as it is, still give that entry a valid
  score-file line with a documented error type; a fresh budget is active per entry.
- Discovery (``checker.result_files.discover``): BFCL's layout, v3 names, stray copies,
  duplicates, a result dir pointed at the wrong level, odd trees.
- Reading only regular files, lines and files within their limits.
- Writing only under the score dir: symlinks in the way, a score dir overlapping the
  result dir, a folder named like the CSV, planted score files, CSV injection.
- End to end through ``python -m bfcl_safe evaluate`` in a child process under a
  2 GB address-space limit and 120 s, with ``--jobs 1`` and ``--jobs 2``: a tree built
  here holding FIFOs, device links, non-UTF-8 and CSV-breaking folder names, a 1,200-level
  folder chain, lines far beyond the size and depth limits and an entry whose state is
  nested hundreds of levels deep, beside ordinary entries.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bfcl_safe.checker import result_files, runner, scoring
from bfcl_safe.checker.error_types import ErrorType
from bfcl_safe.checker.replay import ground_truth_as_fc
from bfcl_safe.checker.inputs import Kind, UnreadableFile
from bfcl_safe.checker.result_files import LayoutError, discover, read_lines
from bfcl_safe.checker.runner import ScoreDirError, score_tree
from bfcl_safe.checker.scoring import Options
from bfcl_safe.checker import codec
from bfcl_safe.checker.codec import dumps_line
from bfcl_safe.checker.terminal import shown as csv_shown
from bfcl_safe.checker.scoring import Context, render_record, score_item
from bfcl_safe.interp import budget
from bfcl_safe.interp.errors import BudgetExceeded
from tests.checker_support import dataset
from tests.refenv import wheel

ROOT = Path(__file__).resolve().parent.parent
BASE, FUNC, PARAM = "multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param"
MODEL = "hostile-run-model"  # not in the registry: steps decoded with 'auto'
TIME_LIMIT = 120.0
MEMORY_LIMIT = 2 << 30
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _line(entry_id: str, result: object = None) -> str:
    if result is None:
        entry = dataset().entry(entry_id)
        result = ground_truth_as_fc(dataset().ground_truth_for(entry_id), entry["involved_classes"])
    return json.dumps({"id": entry_id, "result": result})


def _result_file(result_dir: Path, model: str, category: str, lines: list[str], name: str | None = None) -> Path:
    folder = result_dir / model / "multi_turn"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (name or f"BFCL_v4_{category}_result.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _make_chain(folder: Path, levels: int, name: str = "c") -> None:
    """A folder chain ``levels`` deep in ``folder``, made relative to each parent (the path
    is too long for one system call)."""
    fd = os.open(folder, os.O_RDONLY)
    for _ in range(levels):
        os.mkdir(name, dir_fd=fd)
        inner = os.open(name, os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(fd)


def _remove_chain(folder: Path, name: str = "c") -> None:
    """Remove what :func:`_make_chain` made, bottom up without recursion (pytest's own
    clean-up of old temporary folders recurses, and would fail on it)."""
    fds = [os.open(folder, os.O_RDONLY)]
    try:
        while True:
            try:
                fds.append(os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=fds[-1]))
            except FileNotFoundError:
                break
        for parent in reversed(fds[:-1]):
            os.rmdir(name, dir_fd=parent)
    finally:
        for fd in fds:
            os.close(fd)


# ----------------------------------------------------------------------------- the fault boundary


def _deep(levels: int) -> list:
    value: list = []
    for _ in range(levels):
        value = [value]
    return value


class _Unprintable:
    def __str__(self) -> str:
        raise RecursionError("maximum recursion depth exceeded")


def _record(details: object) -> dict:
    return {"id": f"{BASE}_0", "model_name": MODEL, "test_category": BASE, "valid": False,
            "error": {"error_message": ["state differs"], "error_type": "multi_turn:instance_state_mismatch",
                      "details": details}}


UNRENDERABLE = {
    # (json writes 5,000 levels on Python 3.13, whose C recursion limit is higher: deeper)
    "nested-200000-levels": (_deep(200_000), "nested more than 64 levels"),
    "int-of-5000-digits": ({"content": 10 ** 5000}, "integers of more than 4,300 digits"),
    "tuple-dict-key": ({("a", 1): "kept in state"}, "dict keys of type tuple"),
    "str-raises": ([_Unprintable()], "objects whose text cannot be made (RecursionError)"),
    "all-at-once": ({"deep": _deep(3000), ("k",): 10 ** 4400, "obj": _Unprintable()}, "nested more than 64 levels"),
}


@pytest.mark.parametrize("case", list(UNRENDERABLE), ids=list(UNRENDERABLE))
def test_a_record_that_cannot_be_written_as_it_is_still_gives_a_valid_line(case: str) -> None:
    details, note = UNRENDERABLE[case]
    line = render_record(_record(details))
    written = json.loads(line)
    assert written["id"] == f"{BASE}_0" and written["valid"] is False
    assert written["error"]["error_type"] == "multi_turn:instance_state_mismatch"
    assert note in written["bfcl_safe_note"]
    assert "\n" not in line and len(line) < 1_000_000


def test_a_record_that_can_be_written_is_written_as_the_reference_writes_it() -> None:
    record = _record({"a": [1, 2.5, None, "x"]})
    assert render_record(record) == dumps_line(record)
    assert "bfcl_safe_note" not in render_record(record)


ESCAPING = {
    # name: (what score_entry raises, error type, what the message says)
    "budget": (BudgetExceeded("computed_size", 10_000_000, 10_000_001), ErrorType.RESOURCE_LIMIT,
               "resource limit: budget 'computed_size' exceeded (10,000,001 > 10,000,000)"),
    "recursion": (RecursionError("maximum recursion depth exceeded"), ErrorType.INTERNAL_ERROR,
                  "bfcl-safe could not score this entry: RecursionError: maximum recursion depth exceeded"),
    "memory": (MemoryError(), ErrorType.INTERNAL_ERROR, "bfcl-safe could not score this entry: MemoryError: (no message)"),
    "value": (ValueError("Exceeds the limit (4300 digits)\x1b[2J"), ErrorType.INTERNAL_ERROR,
              "ValueError: Exceeds the limit (4300 digits)\\x1b[2J"),
    "type": (TypeError("unhashable type: 'list'"), ErrorType.INTERNAL_ERROR, "TypeError: unhashable type: 'list'"),
    "bug": (KeyError("x"), ErrorType.INTERNAL_ERROR, "KeyError: 'x'"),
}


@pytest.mark.parametrize("case", list(ESCAPING), ids=list(ESCAPING))
def test_whatever_escapes_scoring_fails_only_that_entry(case: str, monkeypatch) -> None:
    raised, error_type, says = ESCAPING[case]

    def failing(dataset, item, context):
        raise raised

    monkeypatch.setattr(scoring, "score_entry", failing)
    result = score_item(dataset(), Context(MODEL, BASE, "fc"), json.loads(_line(f"{BASE}_0")))
    record = json.loads(result.line)
    assert (result.kind, result.id, result.error_type) == ("scored", f"{BASE}_0", error_type)
    assert record["error"]["error_type"] == error_type and record["valid"] is False
    assert says in record["error"]["error_message"][0] and says in result.note
    assert "\n" not in result.note and not CONTROL.search(result.note)
    if case == "budget":
        assert record["error"]["details"] == {"budget": "computed_size", "limit": 10_000_000, "spent": 10_000_001}


def test_a_fresh_budget_is_active_while_each_entry_is_scored(monkeypatch) -> None:
    seen = []
    score_entry = scoring.score_entry

    def watching(dataset, item, context):
        active = budget.current()
        seen.append((active is not None, id(active), dict(active.spent) if active else None))
        return score_entry(dataset, item, context)

    monkeypatch.setattr(scoring, "score_entry", watching)
    for entry_id in (f"{BASE}_0", f"{BASE}_1"):
        score_item(dataset(), Context(MODEL, BASE, "fc"), json.loads(_line(entry_id)))
    assert [active for active, _, _ in seen] == [True, True]
    assert [spent for _, _, spent in seen] == [{}, {}]
    assert budget.current() is None  # none left active after an entry


def test_a_record_with_unrenderable_state_from_the_scorer_is_degraded_not_lost(monkeypatch) -> None:
    monkeypatch.setattr(scoring, "score_entry", lambda dataset, item, context: _record({(1, 2): _deep(2000)}))
    result = score_item(dataset(), Context(MODEL, BASE, "fc"), json.loads(_line(f"{BASE}_0")))
    assert result.error_type == "multi_turn:instance_state_mismatch" and result.note is None
    assert "bfcl_safe_note" in json.loads(result.line)


# ----------------------------------------------------------------------------- discovery


def _v4(root: Path, model: str, category: str = BASE, where: str = "multi_turn", version: str = "v4") -> Path:
    folder = root / model / where if where else root / model
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"BFCL_{version}_{category}_result.json"
    path.write_text("", encoding="utf-8")
    return path


def test_bfcl_layout_is_found_model_folders_in_name_order(tmp_path: Path) -> None:
    _v4(tmp_path, "b-model", PARAM)
    _v4(tmp_path, "b-model", BASE)
    _v4(tmp_path, "a-model", FUNC)
    (tmp_path / "a-model" / "non_live").mkdir()
    (tmp_path / "a-model" / "non_live" / "BFCL_v4_simple_python_result.json").write_text("")
    found = discover(tmp_path)
    assert [(f.model, f.category, f.version) for f in found.files] == [
        ("a-model", FUNC, "v4"), ("b-model", BASE, "v4"), ("b-model", PARAM, "v4")]
    assert found.notices == []


def test_v3_names_and_files_directly_under_the_model_folder_are_scored_with_a_notice(tmp_path: Path) -> None:
    _v4(tmp_path, "m", BASE, version="v3")
    _v4(tmp_path, "m", FUNC, where="", version="v3")
    _v4(tmp_path, "m", PARAM, where="")
    found = discover(tmp_path)
    assert [(f.category, f.version) for f in found.files] == [(BASE, "v3"), (FUNC, "v3"), (PARAM, "v4")]
    assert sum("a BFCL v3 file name; scored, score file written the v4 way" in n for n in found.notices) == 2
    assert sum("directly under the model folder (BFCL v3 layout)" in n for n in found.notices) == 2


def test_two_files_for_one_score_file_are_refused_naming_both(tmp_path: Path) -> None:
    first = _v4(tmp_path, "m", BASE)
    second = _v4(tmp_path, "m", BASE, version="v3")
    with pytest.raises(LayoutError) as raised:
        discover(tmp_path)
    assert set(raised.value.paths) == {first, second}
    assert str(first) in str(raised.value) and str(second) in str(raised.value)


def test_stray_copies_below_multi_turn_are_reported_not_scored(tmp_path: Path) -> None:
    real = _v4(tmp_path, "m", BASE)
    stray = _v4(tmp_path, "m", BASE, where="multi_turn/old")
    other = _v4(tmp_path, "m", FUNC, where="backup/2024")
    found = discover(tmp_path)
    assert [f.path for f in found.files] == [real]
    assert sorted(n for n in found.notices if "a stray copy, not scored" in n) == sorted(
        f"{p}: not in m/multi_turn/; a stray copy, not scored" for p in (stray, other))


@pytest.mark.parametrize("level", ["project-root", "model-folder", "multi_turn-folder"])
def test_a_result_dir_at_the_wrong_level_is_diagnosed(tmp_path: Path, level: str) -> None:
    result = tmp_path / "result"
    _v4(result, "openai_gpt-4.1", BASE)
    _v4(result, "other-model", BASE)
    (tmp_path / "score").mkdir()
    given = {"project-root": tmp_path, "model-folder": result / "openai_gpt-4.1",
             "multi_turn-folder": result / "openai_gpt-4.1" / "multi_turn"}[level]
    with pytest.raises(LayoutError) as raised:
        discover(given)
    assert raised.value.suggestion == result and raised.value.path == given
    assert f"--result-dir {result}" in str(raised.value) and "\n" not in str(raised.value)


def test_filters_and_what_they_did_not_find(tmp_path: Path) -> None:
    for model in ("a", "b"):
        for category in (BASE, FUNC):
            _v4(tmp_path, model, category)
    found = discover(tmp_path, models=["b", "zz"], categories=[FUNC, "simple_python"])
    assert [(f.model, f.category) for f in found.files] == [("b", FUNC)]
    assert "'simple_python': not a multi-turn category, skipped" in found.notices
    assert f"zz: no such model folder in {tmp_path}" in found.notices


def test_odd_trees_are_walked_without_recursion_or_following_links(tmp_path: Path, request) -> None:
    _v4(tmp_path, "m", BASE)
    # A folder chain 1,200 levels deep, a symlinked model folder and a symlink loop.
    _make_chain(tmp_path / "m", 1200)
    request.addfinalizer(lambda: _remove_chain(tmp_path / "m"))
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    _v4(outside, "x", BASE)
    (tmp_path / "linked").symlink_to(outside / "x")
    (tmp_path / "m" / "loop").symlink_to(tmp_path / "m")
    undecodable = os.fsencode(tmp_path) + b"/model-\xff"
    os.makedirs(undecodable + b"/multi_turn")
    open(undecodable + b"/multi_turn/BFCL_v4_multi_turn_base_result.json", "w").close()
    found = discover(tmp_path)
    assert sorted(f.model for f in found.files) == ["m", os.fsdecode(b"model-\xff")]
    assert any("a symlinked folder, not followed" in n for n in found.notices)
    assert any("the search for stray copies stopped there" in n for n in found.notices)
    assert all(not CONTROL.search(n) for n in found.notices)


# ----------------------------------------------------------------------------- reading


def _special(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / f"BFCL_v4_{BASE}_result.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        short = Path(tempfile.mkdtemp()) / "s"  # (a socket's path must be short; it is moved after)
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(short))
        sock.close()
        os.rename(short, path)
        short.parent.rmdir()
    elif kind == "link-to-device":
        path.symlink_to("/dev/zero")
    elif kind == "link-to-fifo":
        os.mkfifo(tmp_path / "fifo")
        path.symlink_to(tmp_path / "fifo")
    elif kind == "folder":
        path.mkdir()
    elif kind == "dangling-link":
        path.symlink_to(tmp_path / "nowhere")
    return path


SPECIAL = {"fifo": "not a regular file (a FIFO); not read", "socket": "not a regular file (a socket); not read",
           "link-to-device": "not a regular file (a character device); not read",
           "link-to-fifo": "not a regular file (a FIFO); not read",
           "folder": "not a regular file (a folder); not read", "dangling-link": "cannot read it (No such file"}


@pytest.mark.parametrize("kind", list(SPECIAL), ids=list(SPECIAL))
def test_only_regular_files_are_read(tmp_path: Path, kind: str) -> None:
    path = _special(tmp_path, kind)
    with pytest.raises(UnreadableFile) as raised:
        list(read_lines(path))  # (a FIFO is never opened: this would block)
    assert raised.value.path == path and SPECIAL[kind] in str(raised.value)


def test_lines_and_files_beyond_their_limits_are_refused(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "f.json"
    path.write_text("short\n" + "x" * 5000 + "\n\nlast\r\nbare\rend", encoding="utf-8")
    monkeypatch.setattr(result_files, "MAX_RESULT_LINE_CHARS", 1000)
    assert [(line.number, line.text) for line in read_lines(path)] == [
        (1, "short\n"), (2, None), (4, "last\n"), (5, "bare\n"), (6, "end")]
    monkeypatch.setattr(result_files, "RESULT_FILE", Kind("result file", 100))
    with pytest.raises(UnreadableFile, match=r"5,0\d\d bytes, more than the 100 a file may have; not read"):
        list(read_lines(path))


def test_the_depth_rule_is_counted_not_left_to_json(tmp_path: Path) -> None:
    context = Context(MODEL, BASE, "fc")
    for depth, kind in ((199, "scored"), (200, "scored"), (201, "skipped"), (100_000, "skipped")):
        line = f'{{"id": "{BASE}_0", "result": {"[" * (depth - 1) + "]" * (depth - 1)}}}'
        assert scoring.score_line(dataset(), context, line).kind == kind, depth
    in_strings = json.dumps({"id": f"{BASE}_0", "result": ["[" * 10_000, "{" * 10_000]})
    assert scoring.score_line(dataset(), context, in_strings).kind == "scored"


# ----------------------------------------------------------------------------- writing


@pytest.mark.parametrize("relation", ["is", "inside", "contains"])
def test_a_score_dir_overlapping_the_result_dir_is_refused(tmp_path: Path, relation: str) -> None:
    result = tmp_path / "tree" / "result"
    _result_file(result, MODEL, BASE, [_line(f"{BASE}_0")])
    score = {"is": result, "inside": result / "score", "contains": tmp_path / "tree"}[relation]
    with pytest.raises(ScoreDirError) as raised:
        score_tree(result, score, dataset(), Options(partial=True))
    assert raised.value.relation == relation and "\n" not in str(raised.value)
    assert not (result / "score").exists()


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("trap", ["multi_turn-folder", "model-folder", "score-file"])
def test_writing_never_follows_a_symlink_out_of_the_score_dir(tmp_path: Path, trap: str) -> None:
    result, score, outside = tmp_path / "result", tmp_path / "score", tmp_path / "outside"
    _result_file(result, MODEL, BASE, [_line(f"{BASE}_0"), _line(f"{BASE}_1", [])])
    _result_file(result, "other-model", BASE, [_line(f"{BASE}_0")])
    outside.mkdir()
    (outside / "victim.json").write_text("precious", encoding="utf-8")
    folder = score / MODEL / "multi_turn"
    if trap == "multi_turn-folder":
        (score / MODEL).mkdir(parents=True)
        folder.symlink_to(outside)
    elif trap == "model-folder":
        score.mkdir()
        (score / MODEL).symlink_to(outside)
    else:
        folder.mkdir(parents=True)
        (folder / f"BFCL_v4_{BASE}_score.json").symlink_to(outside / "victim.json")
    messages: list[str] = []
    run = score_tree(result, score, dataset(), Options(partial=True), report=messages.append)
    assert _files(outside) == ["victim.json"] and (outside / "victim.json").read_text() == "precious"
    other = score / "other-model" / "multi_turn" / f"BFCL_v4_{BASE}_score.json"
    assert other.is_file() and run.csv_path is not None  # the others are written
    if trap == "score-file":  # the link itself is replaced by the score file
        written = folder / f"BFCL_v4_{BASE}_score.json"
        assert not written.is_symlink() and json.loads(written.read_text().splitlines()[0])["total_count"] == 2
        assert run.unwritten == []
    else:
        assert len(run.unwritten) == 1 and "a symlink; not written through" in run.unwritten[0]
        assert run.unwritten[0] in messages and not run.ok


def test_a_folder_named_like_the_csv_or_a_score_file_is_a_message(tmp_path: Path) -> None:
    result, score = tmp_path / "result", tmp_path / "score"
    _result_file(result, MODEL, BASE, [_line(f"{BASE}_0")])
    _result_file(result, MODEL, FUNC, [_line(f"{FUNC}_0")])
    (score / MODEL / "multi_turn" / f"BFCL_v4_{FUNC}_score.json").mkdir(parents=True)
    (score / "data_multi_turn.csv").mkdir()
    messages: list[str] = []
    run = score_tree(result, score, dataset(), Options(partial=True), report=messages.append)
    assert run.csv_path is None and any("leaderboard CSVs not written" in m for m in messages)
    assert len(run.unwritten) == 1 and f"BFCL_v4_{FUNC}_result.json: score file not written" in run.unwritten[0]
    assert (score / MODEL / "multi_turn" / f"BFCL_v4_{BASE}_score.json").is_file()


def test_planted_score_files_are_validated_and_listed(tmp_path: Path) -> None:
    result, score = tmp_path / "result", tmp_path / "score"
    _result_file(result, MODEL, BASE, [_line(f"{BASE}_0")])
    planted = {
        "fake-perfect": '{"accuracy": 1.0, "correct_count": 200, "total_count": 200}\n',
        "not-json": "garbage\n",
        "accuracy-out-of-range": '{"accuracy": 50, "correct_count": 1, "total_count": 1}\n',
        "nan-accuracy": '{"accuracy": NaN}\n',
        "deep": "[" * 100_000 + "\n",
    }
    for model, text in planted.items():
        path = score / model / "multi_turn" / f"BFCL_v4_{BASE}_score.json"
        path.parent.mkdir(parents=True)
        path.write_text(text, encoding="utf-8")
    os.mkfifo(score / "not-json" / "multi_turn" / f"BFCL_v4_{FUNC}_score.json")
    messages: list[str] = []
    run = score_tree(result, score, dataset(), Options(partial=True), report=messages.append)
    assert run.foreign_score_files == [score / "fake-perfect" / "multi_turn" / f"BFCL_v4_{BASE}_score.json"]
    assert any("fake-perfect" in m and "not written by this run" in m for m in messages)
    skipped = [m for m in messages if m.endswith("not included in the leaderboard CSVs")]
    assert len(skipped) == 5, messages  # four bad summaries and the FIFO
    rows = list(csv.reader(io.StringIO(run.csv_path.read_bytes().decode("utf-8"), newline="")))
    assert sorted(row[1] for row in rows[1:]) == ["fake-perfect", MODEL]


def test_no_model_name_adds_a_row_or_a_column_to_the_csv(tmp_path: Path) -> None:
    result, score = tmp_path / "result", tmp_path / "score"
    names = ["evil\nforged,100.00%,1", 'quote"d,model', "cr\rmodel", "plain"]
    for name in names:
        _result_file(result, name, BASE, [_line(f"{BASE}_0")])
    run = score_tree(result, score, dataset(), Options(partial=True))
    rows = list(csv.reader(io.StringIO(run.csv_path.read_bytes().decode("utf-8"), newline="")))
    assert len(rows) == 1 + len(names) and {len(row) for row in rows} == {len(rows[0])}
    assert sorted(row[1] for row in rows[1:]) == sorted(csv_shown(name) for name in names)  # the one cell rule


# ----------------------------------------------------------------------------- end to end


def _limit_resources() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _evaluate(result_dir: Path, score_dir: Path, jobs: int, cwd: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    command = [sys.executable, "-m", "bfcl_safe", "evaluate", "--result-dir", str(result_dir),
               "--score-dir", str(score_dir), "--data", str(wheel()), "--partial-eval", "--jobs", str(jobs)]
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, timeout=TIME_LIMIT,
                              preexec_fn=_limit_resources)
    except subprocess.TimeoutExpired:
        return {"failure": f"no result within {TIME_LIMIT} s (killed)"}
    return {"returncode": done.returncode, "stdout": done.stdout.decode("utf-8", "replace"),
            "stderr": done.stderr.decode("utf-8", "replace"), "elapsed": time.monotonic() - started}


UNDECODABLE = os.fsdecode(b"model-\xff\xfe")
CSV_BREAKER = 'breaker\n9,forged,1,2,3,4,5\r"x",'
ORDINARY = [f"{BASE}_{n}" for n in range(6)]


def _deep_state_entry(entry_id: str, levels: int) -> str:
    """An entry whose file-system state becomes a folder chain ``levels`` deep (mkdir + cd)."""
    step = []
    for number in range(levels):
        step += [{"mkdir": json.dumps({"dir_name": f"d{number}"})}, {"cd": json.dumps({"folder": f"d{number}"})}]
    turns = len(dataset().ground_truth_for(entry_id))
    return json.dumps({"id": entry_id, "result": [[step]] + [[[]] for _ in range(turns - 1)]})


def _hostile_tree(root: Path) -> Path:
    result = root / "result"
    ordinary = [_line(entry_id) for entry_id in ORDINARY]
    wrong = _line(f"{BASE}_6", [[[{"cd": json.dumps({"folder": "nowhere"})}]]])
    hostile = [
        *ordinary, wrong,
        _deep_state_entry(f"{BASE}_7", 400),
        _deep_state_entry(f"{BASE}_8", 5_000),
        f'{{"id": "{BASE}_9", "result": {"[" * 1_000_000 + "]" * 1_000_000}}}',  # 5,000 x the depth limit
        f'{{"id": "{BASE}_10", "result": {"[" * 201 + "]" * 201}}}',  # just past it
        json.dumps({"id": f"{BASE}_11", "result": [["x" * (40 << 20)]]}),  # past the line limit
        json.dumps({"id": f"{BASE}_12", "result": [["y" * (8 << 20)]]}),  # big, within it
        # 15 million log elements within the line limit: the reader keeps no piece per element
        f'{{"id": "{BASE}_13", "result": [[]], "inference_log": [{"0," * 14_999_999}0]}}',
        "\x1b]0;owned\x07\x1b[2J not json",
    ]
    _result_file(result, MODEL, BASE, hostile)
    _result_file(result, UNDECODABLE, BASE, ordinary)
    _result_file(result, CSV_BREAKER, BASE, ordinary)
    _result_file(result, "\x1b[31mred", BASE, ordinary)
    # Files that are not regular files, and a deep folder chain beside a model's files.
    for model, kind in (("fifo-model", "fifo"), ("device-model", "link-to-device"), ("socket-model", "socket")):
        (result / model / "multi_turn").mkdir(parents=True)
        _special(result / model / "multi_turn", kind)
    _result_file(result, "chain-model", BASE, ordinary)
    # A stray copy that would replace the real file's score, and a symlinked model folder.
    _result_file(result, MODEL, BASE, [_line(f"{BASE}_0", [])], name=f"old/BFCL_v4_{BASE}_result.json")
    outside = root / "outside-model"
    _result_file(outside, "x", BASE, ordinary)
    (result / "linked-model").symlink_to(outside / "x")
    _make_chain(result / "chain-model", 1200)  # (last: removed by the fixture)
    return result


@pytest.fixture(scope="module")
def hostile_runs(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("hostile-run")
    result = _hostile_tree(root)
    runs = {}
    try:
        yield from _run_both(root, result, runs)
    finally:
        _remove_chain(result / "chain-model")


def _run_both(root: Path, result: Path, runs: dict):
    for jobs in (1, 2):
        score, cwd = root / f"score-{jobs}", root / f"cwd-{jobs}"
        cwd.mkdir()
        # Planted: a non-JSON score file and a fake perfect one from "earlier runs".
        for model, text in (("planted-garbage", "not json\n"), ("planted-perfect", '{"accuracy": 1.0}\n')):
            path = score / model / "multi_turn" / f"BFCL_v4_{BASE}_score.json"
            path.parent.mkdir(parents=True)
            path.write_text(text, encoding="utf-8")
        runs[jobs] = {**_evaluate(result, score, jobs, cwd), "score": score, "cwd": cwd}
    yield {"root": root, "result": result, "runs": runs}


def _score_records(score: Path, model: str) -> tuple[dict, dict[str, dict]]:
    lines = (score / model / "multi_turn" / f"BFCL_v4_{BASE}_score.json").read_text(encoding="utf-8").splitlines()
    return json.loads(lines[0]), {json.loads(line)["id"]: json.loads(line) for line in lines[1:]}


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_hostile_run_completes_cleanly(hostile_runs: dict, jobs: int) -> None:
    run = hostile_runs["runs"][jobs]
    assert "failure" not in run, run.get("failure")
    assert run["returncode"] == 0, run["stderr"][-3000:]
    assert "Traceback" not in run["stderr"] + run["stdout"]
    assert not CONTROL.search(run["stdout"]) and not CONTROL.search(run["stderr"])
    assert _files(run["cwd"]) == []  # nothing written where it runs


@pytest.mark.parametrize("jobs", [1, 2])
def test_ordinary_entries_keep_their_verdicts_beside_hostile_ones(hostile_runs: dict, jobs: int) -> None:
    score = hostile_runs["runs"][jobs]["score"]
    for model in (MODEL, UNDECODABLE, CSV_BREAKER, "\x1b[31mred", "chain-model"):
        summary, failed = _score_records(score, model)
        assert not set(ORDINARY) & set(failed), model
    summary, failed = _score_records(score, MODEL)
    assert failed[f"{BASE}_6"]["error"]["error_type"].startswith("multi_turn:")
    # The deep-state entries fail with a record (official type, resource limit or a
    # degraded record): never lost.
    for entry_id in (f"{BASE}_7", f"{BASE}_8"):
        assert failed[entry_id]["valid"] is False
    assert f"{BASE}_12" in failed  # big but within the limits: scored
    assert failed[f"{BASE}_13"]["error"]["error_type"] == "multi_turn:force_terminated"  # scored, log and all
    # Skipped: past the depth limit (both), past the line limit, not JSON; the stray copy not read.
    assert summary["total_count"] == len(ORDINARY) + 5


@pytest.mark.parametrize("jobs", [1, 2])
def test_every_odd_file_and_line_is_named_in_one_line(hostile_runs: dict, jobs: int) -> None:
    stderr = hostile_runs["runs"][jobs]["stderr"]
    for expected in ("not a regular file (a FIFO); not read", "not a regular file (a character device); not read",
                     "not a regular file (a socket); not read", "nested 1,000,001 levels deep",
                     "nested 202 levels deep", "longer than 33,554,432 characters; line skipped",
                     "a stray copy, not scored", "a symlinked folder, not followed",
                     "the search for stray copies stopped there", "not valid JSON",
                     "planted-garbage", "planted-perfect"):
        assert expected in stderr, expected


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_csv_parses_into_the_header_width(hostile_runs: dict, jobs: int) -> None:
    score = hostile_runs["runs"][jobs]["score"]
    text = (score / "data_multi_turn.csv").read_bytes().decode("utf-8", "surrogateescape")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert {len(row) for row in rows} == {len(rows[0])}
    names = [row[1] for row in rows[1:]]
    assert csv_shown(CSV_BREAKER) in names and "planted-perfect" in names and "planted-garbage" not in names


def test_jobs_2_writes_what_jobs_1_writes_on_the_hostile_tree(hostile_runs: dict) -> None:
    one, two = (hostile_runs["runs"][jobs]["score"] for jobs in (1, 2))
    files = _files(one)
    assert files == _files(two)
    for name in files:
        if (one / name).is_file():
            assert (one / name).read_bytes() == (two / name).read_bytes(), name


@pytest.mark.parametrize("name", ["..", ".", "", "a/b", "nul\0byte"])
def test_a_model_name_that_is_not_one_folder_name_is_never_written_through(tmp_path: Path, name: str) -> None:
    from bfcl_safe.checker.outputs import ScoreFileWriter, UnsafePath

    with pytest.raises(UnsafePath, match="not a folder name; not written through"):
        ScoreFileWriter(tmp_path / "score", name, BASE)
    assert _files(tmp_path) == ["score"]


def test_a_planted_score_file_too_deep_to_parse_leaves_the_per_turn_column_na(tmp_path: Path) -> None:
    result, score = tmp_path / "result", tmp_path / "score"
    _result_file(result, MODEL, BASE, [_line(f"{BASE}_0")])
    path = score / "planted" / "multi_turn" / f"BFCL_v4_{BASE}_score.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"accuracy": 0.5, "correct_count": 1, "total_count": 2}\n' + "[" * 100_000 + "\n")
    run = score_tree(result, score, dataset(), Options(partial=True, partial_credit=True))
    rows = list(csv.reader(io.StringIO(run.csv_path.read_bytes().decode("utf-8"), newline="")))
    assert {row[1]: row[-1] for row in rows[1:]}["planted"] == "N/A"


def _depth_by_hand(text: str) -> int:
    """The specification of ``codec.nesting_depth``, one character at a time."""
    depth = deepest = index = 0
    inside = False
    while index < len(text):
        char = text[index]
        if char == "\\" and text[index + 1 : index + 2] in ("\\", '"') and index + 1 < len(text):
            index += 2  # an escaped backslash or quote, wherever it is
            continue
        if char == '"':
            inside = not inside
        elif not inside and char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif not inside and char in "]}":
            depth -= 1
        index += 1
    return deepest


@given(st.text(st.sampled_from('[]{}"\\a, é'), max_size=3000), st.sampled_from([0, 1, 3, 40, 200]))
def test_the_depth_count_and_its_quick_bound_follow_the_specification(text: str, limit: int) -> None:
    assert codec.nesting_depth(text) == _depth_by_hand(text)
    assert codec.deeper_than(text, limit) == (_depth_by_hand(text) > limit)


@given(st.recursive(st.none() | st.text('[]{}"\\ab\n'), lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text('[]{}"\\k', max_size=3), inner, max_size=3), max_leaves=40),
       st.booleans())
def test_the_depth_count_is_the_nesting_of_any_json_value(value, ascii_only: bool) -> None:
    def nesting(item) -> int:
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        return (1 + max(map(nesting, children), default=0)) if isinstance(item, (dict, list)) else 0

    text = json.dumps(value, ensure_ascii=ascii_only)
    assert codec.nesting_depth(text) == nesting(value)
    assert codec.nesting_depth(text, known_json=True) == nesting(value)


#: Characters that meet every escape JSON has (json.dumps writes \n, \t, \u0001, \\, \", and
#: \u00e9 with ensure_ascii), the letters escapes use, and brackets.
_ESCAPE_ALPHABET = '[]{}"\\/bfnrtu\n\t\x01\x1fé x,'


@given(st.recursive(st.none() | st.text(_ESCAPE_ALPHABET, max_size=12),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(_ESCAPE_ALPHABET, max_size=4), inner, max_size=3), max_leaves=60),
       st.booleans(), st.sampled_from([0, 1, 2, 3, 5, 40]), st.booleans())
def test_the_count_for_known_json_equals_the_count_for_any_text_on_json(value, ascii_only: bool, limit: int,
                                                                         wrapped: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    if wrapped:  # deeper than the quick count lets through, so the brackets are counted
        text = "[" * 250 + text + "]" * 250
    json.loads(text)  # the premise: a parser accepts it
    expected = _depth_by_hand(text)
    assert codec.nesting_depth(text, known_json=True) == expected == codec.nesting_depth(text)
    for bound in (limit, limit + 250):
        assert codec.deeper_than(text, bound, known_json=True) == (expected > bound)


@pytest.mark.parametrize(("text", "reason"), [
    ('{"id": "%s_0", "result": %s}' % (BASE, "[" * 201 + "]" * 201), "nested 202 levels deep"),
    ('{"id": "%s_0", "result": %s' % (BASE, "[" * 201 + "]" * 201), "nested 202 levels deep"),  # and invalid
    ("[" * 100_000, "nested 100,000 levels deep"),  # past the C parser's own depth, on every Python
    ('{"id": "%s_0", "result": %s}' % (BASE, "[" * 5_000 + "]" * 5_000), "nested 5,001 levels deep"),
    ('{"id": "%s_0", "result": %s' % (BASE, "[" * 199 + "]" * 199), "not valid JSON"),
    ('{"id": "%s_0", "result": %s}' % (BASE, "[" * 199 + "]" * 199), None),
])
def test_a_line_too_deep_is_skipped_for_its_depth_whatever_else_is_wrong(text: str, reason: str | None) -> None:
    if reason is None:
        assert result_files.parse_line(text, BASE)["id"] == f"{BASE}_0"
        return
    with pytest.raises(result_files.LineProblem, match=reason):
        result_files.parse_line(text, BASE)


@pytest.mark.parametrize("inside", ["]" * 300, "}" * 300, "]}" * 150 + "\\\\", '\\"' + "]" * 300])
def test_closing_brackets_inside_strings_do_not_hide_a_deep_line(inside: str) -> None:
    # (A count of brackets that ignored strings let 300 closers in a string hide 250 levels.)
    text = json.dumps([inside]) + "[" * 250 + "]" * 250
    assert codec.nesting_depth(text) == 250
    assert codec.deeper_than(text, 200)
    with pytest.raises(result_files.LineProblem, match="nested 252 levels deep"):
        result_files.parse_line(json.dumps({"id": f"{BASE}_0", "result": [[inside], [[[[]]]]], "x": [[inside]]})[:-1]
                              + ', "deep": ' + "[" * 251 + "]" * 251 + "}", BASE)
