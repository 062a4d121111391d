"""``evaluate --jobs 2`` writes byte for byte what ``--jobs 1`` writes, on files where the
main process's quick look at a line (the id at its start) and a worker's full parse of it
disagree: duplicate "id" keys (the last one wins in JSON), an id that is not the first
key or is written with escapes, invalid JSON after a valid start, a line nested deeper
than a worker checks, no 'result', along with duplicates, unknown ids, ids of another
category, malformed results, blank lines, CRLF line ends and missing entries.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bfcl_safe.checker.replay import ground_truth_as_fc
from bfcl_safe.checker.runner import Options, _score_lines
from tests.checker_support import dataset
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
        # Lines the main process parses itself; no disagreement.
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
        # Invalid JSON after a valid start, no 'result', nested deeper than a worker checks.
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
    done = subprocess.run([sys.executable, "-m", "bfcl_safe.checker", "evaluate", "--result-dir", str(result_dir),
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
    assert one["returncode"] == 0, one["stderr"].decode()[-2000:]
    assert sorted(one["files"]) == sorted(two["files"])
    assert len(one["files"]) == 6  # five score files and the CSV
    for name, content in one["files"].items():
        assert two["files"][name] == content, name
    assert two["stderr"] == one["stderr"]
    assert two["stdout"] == one["stdout"]
    assert two["returncode"] == one["returncode"]
    stderr = one["stderr"].decode()
    # Not vacuous: the tree holds every kind of line the main process must get right.
    for expected in ("not valid JSON", "duplicate id", "is not in the dataset", "does not belong to",
                     "malformed result", "expected an object with 'id' and 'result'",
                     "maximum recursion depth exceeded"):
        assert expected in stderr, expected


def _outcomes(lines: list[tuple[str, str | None]]) -> list:
    return _score_lines(dataset(), lines, "clean-model", BASE, Options(decoder="fc"))


def test_a_worker_rejects_a_line_that_is_not_what_its_start_says() -> None:
    good = _line(f"{BASE}_0")
    results = _outcomes([
        (good, f"{BASE}_0"),
        (good, None),
        (good, f"{BASE}_1"),  # another id
        (f'{{"id": "{BASE}_0", "result": [], "id": "{BASE}_1"}}', f"{BASE}_0"),
        (f'{{"id": "{BASE}_0", "result": [[', f"{BASE}_0"),
        (f'{{"id": "{BASE}_0"}}', f"{BASE}_0"),
        (f'{{"id": "{BASE}_0", "result": {"[" * 960 + "]" * 960}}}', f"{BASE}_0"),
        ('[1, 2]', None),
    ])
    assert [result is None for result in results] == [False, False, True, True, True, True, True, True]
    assert results[0] == results[1]
    assert results[0][0] is None and results[0][1].valid
    shape, outcome = _outcomes([(_line(f"{BASE}_0", {"a": 1}), f"{BASE}_0")])[0]
    assert shape == "dict, not a list of turns" and not outcome.valid


@pytest.mark.skipif(not hasattr(os, "fork"), reason="platform: needs os.fork")
@pytest.mark.parametrize("when", ["scoring", "after-reporting-progress"])
def test_entries_of_a_process_that_dies_are_scored_by_the_main_process(tmp_path: Path, monkeypatch, when) -> None:
    from bfcl_safe.checker import runner

    result_dir = _write_tree(tmp_path)
    parent = os.getpid()
    score_lines, encode_scored = runner._score_lines, runner._encode_scored
    died = tmp_path / "died"
    encoded = []

    def dying(*args):
        if os.getpid() != parent and when == "scoring":
            died.touch()
            os._exit(1)
        if os.getpid() == parent and not died.exists():  # let the child take chunks first
            deadline = time.monotonic() + 20
            while not died.exists() and time.monotonic() < deadline:
                time.sleep(0.005)
        return score_lines(*args)

    def dying_later(*args):  # the first chunk is counted, then all is lost
        if encoded:
            died.touch()
            os._exit(1)
        encoded.append(1)
        return encode_scored(*args)

    def tree(score_dir: Path, jobs: int) -> tuple[dict, list[str], int]:
        messages: list[str] = []
        progress: list[int] = []
        runner.score_tree(result_dir, score_dir, dataset(), Options(jobs=jobs), report=messages.append,
                          progress=progress.append)
        return {path.relative_to(score_dir).as_posix(): path.read_bytes()
                for path in sorted(score_dir.rglob("*")) if path.is_file()}, messages, sum(progress)

    serial = tree(tmp_path / "score-1", 1)
    healthy = tree(tmp_path / "score-2", 2)
    monkeypatch.setattr(runner, "_score_lines", dying)
    monkeypatch.setattr(runner, "_encode_scored", dying_later)
    failed = tree(tmp_path / "score-3", 2)
    assert failed[:2] == healthy[:2] == serial[:2]  # the same files and messages
    assert failed[2] == healthy[2]  # progress: the lost chunks are not counted twice
    assert died.exists()  # not vacuous: a child did take a chunk, and died with it
    assert len(serial[0]) == 6 and serial[1]


@pytest.mark.parametrize("threads", [False, True], ids=["no-fork", "other-threads"])
def test_where_forking_is_unsafe_jobs_fall_back_to_one_process_with_a_notice(tmp_path: Path, monkeypatch,
                                                                             threads: bool) -> None:
    import threading

    from bfcl_safe.checker import forked, runner

    result_dir = tmp_path / "result"
    folder = result_dir / "clean-model" / "multi_turn"
    folder.mkdir(parents=True)
    (folder / f"BFCL_v4_{BASE}_result.json").write_text("\n".join(_clean(BASE, 3)) + "\n", encoding="utf-8")
    if not threads:
        monkeypatch.delattr(forked.os, "fork", raising=False)
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    if threads:
        other.start()
    monkeypatch.setattr(runner, "share_out", None)  # would fail if called
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
    """With --jobs, memory is bounded by reading, scoring and writing a group of files at
    a time; groups of one file each write what one group of all files writes."""
    from bfcl_safe.checker import runner

    result_dir = _write_tree(tmp_path)

    def tree(score_dir: Path) -> tuple[dict, list[str]]:
        messages: list[str] = []
        runner.score_tree(result_dir, score_dir, dataset(), Options(jobs=2), report=messages.append)
        return {path.relative_to(score_dir).as_posix(): path.read_bytes()
                for path in sorted(score_dir.rglob("*")) if path.is_file()}, messages

    whole = tree(tmp_path / "score-1")
    groups = []
    score_batches = runner._score_batches
    monkeypatch.setattr(runner, "GROUP_CHARS", 1)
    monkeypatch.setattr(runner, "_score_batches", lambda dataset, group, *rest: (
        groups.append(len(group)), score_batches(dataset, group, *rest))[1])
    assert tree(tmp_path / "score-2") == whole
    assert groups == [1] * 5  # five files, one group each


@pytest.mark.skipif(not hasattr(os, "fork"), reason="platform: needs os.fork")
@pytest.mark.parametrize("failure", ["internal-errors", "a-file-raises"])
@pytest.mark.parametrize("group_chars", [1, 1 << 30], ids=["a-group-per-file", "one-group"])
def test_messages_files_and_errors_come_as_in_a_serial_run(tmp_path: Path, monkeypatch, failure: str,
                                                            group_chars: int) -> None:
    """An entry the scorer itself cannot score (its message comes with its file's), and a
    file whose model lookup raises (the files before it are written, then it raises),
    with all files in one group and with a group per file."""
    from bfcl_safe.checker import runner

    monkeypatch.setattr(runner, "GROUP_CHARS", group_chars)
    result_dir = _write_tree(tmp_path)
    if failure == "internal-errors":
        score_entry = runner.score_entry

        def crashing(dataset, item, *rest):
            if item["id"] in (f"{BASE}_2", f"{PARAM}_1"):
                raise ZeroDivisionError("a scorer bug")
            return score_entry(dataset, item, *rest)

        monkeypatch.setattr(runner, "score_entry", crashing)
    else:
        decoder_for_model = runner.decoder_for_model

        def lookup(model, dataset, report):
            if model == "duplicate-id-keys":
                report(f"looking {model} up")
                raise RuntimeError(f"registry broken for {model}")
            return decoder_for_model(model, dataset, report)

        monkeypatch.setattr(runner, "decoder_for_model", lookup)

    def tree(score_dir: Path, jobs: int) -> tuple:
        messages: list[str] = []
        try:
            runner.score_tree(result_dir, score_dir, dataset(), Options(jobs=jobs), report=messages.append)
            raised = None
        except RuntimeError as exc:
            raised = str(exc)
        files = {path.relative_to(score_dir).as_posix(): path.read_bytes()
                 for path in sorted(score_dir.rglob("*")) if path.is_file()} if score_dir.exists() else {}
        return files, messages, raised

    serial = tree(tmp_path / "score-1", 1)
    assert tree(tmp_path / "score-2", 2) == serial
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # no child left behind
    if failure == "internal-errors":
        assert sum("bfcl-safe could not score this entry: ZeroDivisionError" in m for m in serial[1]) >= 2
    else:
        assert serial[2] == "registry broken for duplicate-id-keys" and "looking duplicate-id-keys up" in serial[1]
        assert len(serial[0]) == 3  # the files before it
