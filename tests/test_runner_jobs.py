"""``evaluate --jobs 2`` writes byte for byte what ``--jobs 1`` writes (both run the same
per-line function, ``checker.scoring.score_text``, in a different pool), on files with
duplicate "id" keys (the last one wins in JSON), ids that are not the first key or are
written with escapes, invalid JSON, lines nested deeper than a result line may be, no
'result', duplicates, unknown ids, ids of another category, malformed results, blank
lines, CRLF line ends and missing entries. A forked process that dies or hangs on an
entry loses only that entry (resource limit), and the run completes.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bfcl_safe.checker.error_types import ErrorType
from bfcl_safe.checker.replay import ground_truth_as_fc
from bfcl_safe.checker import parallel, runner, scoring
from bfcl_safe.checker.scoring import Options
from bfcl_safe.checker.scoring import Context, score_line
from tests.checker_support import dataset, no_other_threads
from tests.refenv import wheel

ROOT = Path(__file__).resolve().parent.parent
BASE = "multi_turn_base"
PARAM = "multi_turn_miss_param"


def _result(entry_id: str) -> list:
    entry = dataset().entry(entry_id)
    return ground_truth_as_fc(dataset().ground_truth_for(entry_id), entry["involved_classes"])


def _line(entry_id: str, result: object = None, **extra: object) -> str:
    return json.dumps({"id": entry_id, "result": _result(entry_id) if result is None else result, **extra})


def _clean(category: str, count: int) -> list[str]:
    ids = dataset().ids(category)[:count]
    lines = [_line(entry_id, inference_log=[{"role": "user", "content": f"log of {entry_id}"}]) for entry_id in ids]
    lines[1] = _line(ids[1], [[[{"cd": "{\"folder\": \"nowhere\"}"}]]])  # fails
    return lines[::-1]  # not in id order


def _tricky() -> dict[str, list[str]]:
    """Model folder -> lines of its multi_turn_base file."""
    b = [f"{BASE}_{n}" for n in range(12)]
    ordinary = [_line(entry_id) for entry_id in b[:4]]
    deep = 960
    return {
        "clean-model": _clean(BASE, 8),
        # The id at the start is not the id JSON gives: the last "id" key wins.
        "duplicate-id-keys": [
            *ordinary,
            f'{{"id": "{b[4]}", "result": [], "id": "{b[5]}"}}',
            _line(b[5]),
            f'{{"id": "{b[6]}", "result": [], "id": "{b[6]}"}}',
            f'{{"id": "{b[7]}", "result": [], "id": 7}}',
        ],
        # Other shapes of valid lines, and lines of other kinds.
        "parsed-in-main": [
            *ordinary,
            json.dumps({"result": _result(b[4]), "id": b[4]}),
            ' ' + _line(b[5]),
            '{"id": "multi_turn_base_\\u0036", "result": []}',
            json.dumps({"id": b[7], "result": _result(b[7])}, separators=(",", ":")),
            _line(b[0]),  # duplicates of a line taken at its start
            _line(b[1])[:-5],
            _line(f"{BASE}_99999", []),
            _line(f"{PARAM}_3", []),
            _line(b[8], {"turns": 1}),
            _line(b[9], [[{"cd": "{}"}], 5]),
            "",
            "   ",
            '{"id": "multi_turn_base_10", "result": "Error during inference: timeout"}',
        ],
        # Invalid JSON after a valid start, no 'result', nested deeper than a result line may be.
        "broken-after-start": [
            *ordinary,
            f'{{"id": "{b[4]}", "result": [[',
            f'{{"id": "{b[5]}", "inference_log": []}}',
            f'{{"id": "{b[6]}", "result": {"[" * deep + "]" * deep}}}',
            f'{{"id": "{b[7]}", "result": {"[" * 5000 + "]" * 5000}}}',
            f'{{"id": "{b[8]}", "result": []}} trailing',
            _line(b[4]),
        ],
    }


def _write_tree(root: Path) -> Path:
    result_dir = root / "result"
    for model, lines in _tricky().items():
        folder = result_dir / model / "multi_turn"
        folder.mkdir(parents=True)
        newline = "\r\n" if model == "parsed-in-main" else "\n"
        (folder / f"BFCL_v4_{BASE}_result.json").write_text(newline.join(lines) + newline, encoding="utf-8")
    (result_dir / "clean-model" / "multi_turn" / f"BFCL_v4_{PARAM}_result.json").write_text(
        "\n".join(_clean(PARAM, 6)) + "\n", encoding="utf-8")
    return result_dir


def _evaluate(result_dir: Path, score_dir: Path, jobs: int, *extra: str) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-m", "bfcl_safe", "evaluate", "--result-dir", str(result_dir),
                           "--score-dir", str(score_dir), "--data", str(wheel()), "--jobs", str(jobs), *extra],
                          capture_output=True, env=env, timeout=300)
    files = {path.relative_to(score_dir).as_posix(): path.read_bytes()
             for path in sorted(score_dir.rglob("*")) if path.is_file()}
    stdout = [line for line in done.stdout.splitlines() if not line.startswith(b"Scored ")]
    return {"returncode": done.returncode, "stderr": done.stderr, "stdout": stdout, "files": files}


@pytest.mark.parametrize("extra", [(), ("--partial",)], ids=["all", "partial"])
def test_jobs_2_writes_what_jobs_1_writes(tmp_path: Path, extra: tuple) -> None:
    result_dir = _write_tree(tmp_path)
    one = _evaluate(result_dir, tmp_path / "score-1", 1, *extra)
    two = _evaluate(result_dir, tmp_path / "score-2", 2, *extra)
    assert b"Traceback" not in one["stderr"], one["stderr"].decode()[-2000:]
    assert sorted(one["files"]) == sorted(two["files"])
    # Without --partial, files lacking entries are not scored and no CSV is written (as
    # bfcl evaluate): none here is complete, so nothing; with it, five score files and the six CSVs.
    assert len(one["files"]) == (11 if extra else 0), sorted(one["files"])
    for name, content in one["files"].items():
        assert two["files"][name] == content, name
    assert two["stderr"] == one["stderr"]
    assert two["stdout"] == one["stdout"]
    assert two["returncode"] == one["returncode"]
    assert one["returncode"] == 3  # entries missing, or (--partial) a duplicate id
    stderr = one["stderr"].decode()
    # Not vacuous: the tree holds every kind of line a run must get right.
    for expected in ("not valid JSON", "duplicate id", "is not in the dataset", "does not belong to",
                     "malformed result", "expected an object with 'id' and 'result'",
                     "961 levels deep, more than the 200 a result line may be"):
        assert expected in stderr, expected
    if not extra:
        assert "entries missing" in stderr and "--partial-eval" in stderr


LINES = {
    # name: (line, kind, id or None, what the message or shape says)
    "good": (lambda: _line(f"{BASE}_0"), "scored", f"{BASE}_0", None),
    "last-id-key-wins": (lambda: f'{{"id": "{BASE}_0", "result": [], "id": "{BASE}_1"}}', "scored", f"{BASE}_1", None),
    "escaped-id": (lambda: '{"id": "multi_turn_base_\\u0030", "result": []}', "scored", f"{BASE}_0", None),
    "unknown-id": (lambda: _line(f"{BASE}_99999", []), "unknown", f"{BASE}_99999", None),
    "other-category": (lambda: _line(f"{PARAM}_3", []), "skipped", None, "does not belong to multi_turn_base"),
    "truncated": (lambda: f'{{"id": "{BASE}_0", "result": [[', "skipped", None, "not valid JSON"),
    "no-result": (lambda: f'{{"id": "{BASE}_0"}}', "skipped", None, "expected an object with 'id' and 'result'"),
    "array": (lambda: "[1, 2]", "skipped", None, "expected an object"),
    "deep": (lambda: f'{{"id": "{BASE}_0", "result": {"[" * 960 + "]" * 960}}}', "skipped", None,
             "nested 961 levels deep"),
    "just-deep-enough": (lambda: f'{{"id": "{BASE}_0", "result": {"[" * 199 + "]" * 199}}}', "scored", f"{BASE}_0",
                         None),
    "dict-result": (lambda: _line(f"{BASE}_0", {"a": 1}), "scored", f"{BASE}_0", "dict, not a list of turns"),
}


@pytest.mark.parametrize("case", list(LINES), ids=list(LINES))
def test_a_line_is_parsed_checked_and_scored_in_one_place(case: str) -> None:
    make, kind, entry_id, says = LINES[case]
    result = score_line(dataset(), Context("clean-model", BASE, "fc"), make())
    assert (result.kind, result.id if kind != "skipped" else None) == (kind, entry_id)
    if says is not None:
        assert says in (result.message if kind == "skipped" else result.shape)
    if case == "good":
        assert result.valid and result.line is None and result.note is None


def _tree(result_dir: Path, score_dir: Path, jobs: int, pool=None, partial: bool = False) -> tuple:
    messages: list[str] = []
    progress: list[int] = []
    if jobs > 1 and pool is None:
        no_other_threads()
    run = runner.score_tree(result_dir, score_dir, dataset(), Options(jobs=jobs, partial=partial),
                            report=messages.append, progress=progress.append, pool=pool)
    files = {path.relative_to(score_dir).as_posix(): path.read_bytes()
             for path in sorted(score_dir.rglob("*")) if path.is_file()}
    return files, messages, sum(progress), run


def _records(files: dict, name: str) -> dict[str, dict]:
    return {record["id"]: record for record in map(json.loads, files[name].decode().splitlines()[1:])}


def _without(files: dict, name: str, entry_id: str) -> tuple:
    """The files with one entry's record (and the summary and CSV it moves) left out."""
    lines = files[name].decode().splitlines()
    kept = {key: value for key, value in files.items() if not key.startswith("data_")}  # (the six CSVs)
    return {**kept, name: [line for line in lines[1:] if json.loads(line)["id"] != entry_id]}


@pytest.mark.skipif(not hasattr(os, "fork"), reason="platform: needs os.fork")
@pytest.mark.parametrize("how", ["dies", "hangs"])
def test_a_process_that_dies_or_hangs_loses_only_its_entry(tmp_path: Path, monkeypatch, how: str) -> None:
    result_dir = _write_tree(tmp_path)
    victim = f"{BASE}_2"
    name = f"clean-model/multi_turn/BFCL_v4_{BASE}_score.json"
    serial = _tree(result_dir, tmp_path / "score-1", 1, partial=True)
    parent = os.getpid()
    score_entry = scoring.score_entry

    def deadly(dataset, item, context):
        if item["id"] == victim and context.model == "clean-model" and os.getpid() != parent:
            if how == "dies":
                os._exit(1)
            while True:
                time.sleep(1)
        return score_entry(dataset, item, context)

    monkeypatch.setattr(scoring, "score_entry", deadly)
    no_other_threads()
    pool = parallel.ForkPool(functools.partial(scoring.score_text, dataset()), 2, guard_seconds=2.0)
    lost = _tree(result_dir, tmp_path / "score-2", 2, pool=pool, partial=True)
    record = _records(lost[0], name)[victim]
    assert record["error"]["error_type"] == ErrorType.RESOURCE_LIMIT
    reason = "the wall-clock guard fired after 2 s" if how == "hangs" else "the process scoring it died"
    assert reason in record["error"]["error_message"][0]
    assert [m for m in lost[1] if victim in m and "resource limit" in m and reason in m]
    # Everything else is what a serial run writes and says.
    assert _without(lost[0], name, victim) == _without(serial[0], name, victim)
    assert lost[2] == serial[2]  # progress: each line once
    assert lost[3].failed_entries == [(result_dir / "clean-model" / "multi_turn" / f"BFCL_v4_{BASE}_result.json",
                                       victim, ErrorType.RESOURCE_LIMIT)]
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # no child left behind


@pytest.mark.parametrize("threads", [False, True], ids=["no-fork", "other-threads"])
def test_where_forking_is_unsafe_jobs_fall_back_to_one_process_with_a_notice(tmp_path: Path, monkeypatch,
                                                                             threads: bool) -> None:
    import threading

    result_dir = tmp_path / "result"
    folder = result_dir / "clean-model" / "multi_turn"
    folder.mkdir(parents=True)
    (folder / f"BFCL_v4_{BASE}_result.json").write_text("\n".join(_clean(BASE, 3)) + "\n", encoding="utf-8")
    if not threads:
        monkeypatch.delattr(parallel.os, "fork", raising=False)
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    if threads:
        other.start()
    monkeypatch.setattr(parallel, "ForkPool", None)  # would fail if made
    messages: list[str] = []
    try:
        scores = runner.score_tree(result_dir, tmp_path / "score", dataset(), Options(jobs=2, partial=True),
                                   report=messages.append)
    finally:
        release.set()
        if threads:
            other.join()
    reason = "other threads are running in this process" if threads else "this platform cannot fork processes"
    assert messages[0] == f"--jobs 2: {reason}; scoring in one process"
    assert (scores[0].correct, scores[0].total) == (2, 3)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="platform: needs os.fork")
def test_files_read_and_scored_a_group_at_a_time_give_the_same_files(tmp_path: Path, monkeypatch) -> None:
    """Memory is bounded by reading, scoring and writing a group of files at a time;
    groups of one file each write what one group of all files writes."""
    result_dir = _write_tree(tmp_path)
    whole = _tree(result_dir, tmp_path / "score-1", 2, partial=True)
    groups = []

    class Counting(parallel.ForkPool):
        def map(self, tasks, progress=None):
            groups.append(len({context for context, _ in tasks}))
            return super().map(tasks, progress)

    monkeypatch.setattr(runner, "GROUP_CHARS", 1)
    pool = Counting(functools.partial(scoring.score_text, dataset()), 2)
    assert _tree(result_dir, tmp_path / "score-2", 2, pool=pool, partial=True)[:3] == whole[:3]
    assert groups == [1] * 5  # five files, one group each


@pytest.mark.skipif(not hasattr(os, "fork"), reason="platform: needs os.fork")
@pytest.mark.parametrize("failure", ["internal-errors", "a-model-lookup-raises"])
@pytest.mark.parametrize("group_chars", [1, 1 << 30], ids=["a-group-per-file", "one-group"])
def test_messages_files_and_errors_come_as_in_a_serial_run(tmp_path: Path, monkeypatch, failure: str,
                                                            group_chars: int) -> None:
    """An entry the scorer itself cannot score (it fails with the internal-error type, its
    message comes with its file's), and a file whose model lookup raises (that file is
    skipped with a message, the others are written), with all files in one group and
    with a group per file."""
    monkeypatch.setattr(runner, "GROUP_CHARS", group_chars)
    result_dir = _write_tree(tmp_path)
    if failure == "internal-errors":
        score_entry = scoring.score_entry

        def crashing(dataset, item, *rest):
            if item["id"] in (f"{BASE}_2", f"{PARAM}_1"):
                raise ZeroDivisionError("a scorer bug")
            return score_entry(dataset, item, *rest)

        monkeypatch.setattr(scoring, "score_entry", crashing)
    else:
        decoder_for_model = runner.decoder_for_model

        def lookup(model, dataset, report):
            if model == "duplicate-id-keys":
                report(f"looking {model} up")
                raise RuntimeError(f"registry broken for {model}")
            return decoder_for_model(model, dataset, report)

        monkeypatch.setattr(runner, "decoder_for_model", lookup)

    serial = _tree(result_dir, tmp_path / "score-1", 1, partial=True)
    assert _tree(result_dir, tmp_path / "score-2", 2, partial=True)[:3] == serial[:3]
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # no child left behind
    if failure == "internal-errors":
        noted = [m for m in serial[1] if "bfcl-safe could not score this entry: ZeroDivisionError: a scorer bug" in m]
        assert len(noted) == len(serial[3].failed_entries) >= 2
        assert {entry for _, entry, kind in serial[3].failed_entries if kind == ErrorType.INTERNAL_ERROR} == {
            f"{BASE}_2", f"{PARAM}_1"}
        record = _records(serial[0], f"clean-model/multi_turn/BFCL_v4_{BASE}_score.json")[f"{BASE}_2"]
        assert record["error"]["error_type"] == ErrorType.INTERNAL_ERROR
    else:
        assert "looking duplicate-id-keys up" in serial[1]
        assert any("no decoder could be chosen for model 'duplicate-id-keys' (RuntimeError: registry broken"
                   in m for m in serial[1])
        assert len(serial[0]) == 10  # the other four score files and the six CSVs


def test_entries_are_scored_in_id_order_as_the_reference_does(tmp_path: Path, monkeypatch) -> None:
    """The reference sorts a file's entries by id before scoring them, and a few backends
    carry state from entry to entry in one process: the order is part of fidelity."""
    result_dir = tmp_path / "result"
    folder = result_dir / "clean-model" / "multi_turn"
    folder.mkdir(parents=True)
    lines = _clean(BASE, 8)  # (reversed: not in id order)
    lines.insert(3, "not json")
    lines.insert(5, _line(f"{BASE}_0"))  # a duplicate: the first occurrence in the file counts
    (folder / f"BFCL_v4_{BASE}_result.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
    order: list[str] = []
    score_entry = scoring.score_entry

    def recording(dataset, item, context):
        order.append(item["id"])
        return score_entry(dataset, item, context)

    monkeypatch.setattr(scoring, "score_entry", recording)
    files, messages, _, run = _tree(result_dir, tmp_path / "score", 1, partial=True)
    assert order == sorted(order, key=lambda entry_id: int(entry_id.rsplit("_", 1)[1]))
    assert [m.split(": ", 1)[1] for m in messages if ".json:" in m] == [
        "not valid JSON (Expecting value: line 1 column 1 (char 0)); line skipped",
        f"duplicate id '{BASE}_0'; the first occurrence is scored (bfcl evaluate refuses the file; exit status 3)"]
    assert any(".json:4: not valid JSON" in m for m in messages) and any(".json:10: duplicate" in m for m in messages)
    assert run[0].total == 8
