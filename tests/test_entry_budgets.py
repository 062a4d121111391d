"""Kept output and parse work counted per entry (``result_chars``, ``libcst_chars``), and
the one fault boundary (``checker/boundary.py``).

The attacks run through the real command in a child process under a 2 GB address-space
cap and a time limit: one result line that keeps gigabytes of result strings (a 200 KB
file, then 5,000 ``cat`` of it; or ``echo`` of text the instance-name rewrite multiplies
twentyfold), a ``find`` in a tree that ``cp`` made contain itself
(with long names: each level's paths longer than the last), and prompting lines of
~50 KB steps outside the fast parser's subset (1 MB and 30 MB lines). The budgets'
boundaries are checked through the command in this process (click's runner) with the
limit set to what an entry spends, and one less.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from bfcl_safe.checker import boundary as boundary_module
from bfcl_safe.checker import scoring
from bfcl_safe.checker.boundary import EntryBoundary
from bfcl_safe.cli import main
from bfcl_safe.checker.error_types import ErrorType
from bfcl_safe.checker.replay import ground_truth_as_fc
from bfcl_safe.checker.verdict import Verdict
from bfcl_safe.interp import budget
from bfcl_safe.interp.budget import Budget
from bfcl_safe.interp.errors import BudgetExceeded, RejectedInput
from bfcl_safe.interp.limits import ENTRY_BUDGETS
from tests.checker_support import dataset
from tests.refenv import wheel

ROOT = Path(__file__).resolve().parent.parent
BASE = "multi_turn_base"
FILES_ENTRY = f"{BASE}_0"  # TwitterAPI and GorillaFileSystem, 4 turns
TIME_LIMIT = 120.0
MEMORY_LIMIT = 2 << 30


def _heavy_step(number: int) -> str:
    """A ~50 KB prompting step outside the fast parser's subset (operators), inside every
    size and depth limit (libcst takes seconds on it), a different text for each ``number``."""
    return f"[ls(a=[{number}, " + ", ".join(["1+1+1+1+1"] * 4_500) + "])]"


def _fc(name: str, **arguments: object) -> dict:
    return {name: json.dumps(arguments)}


def _turns(entry_id: str, first: list) -> list:
    """``first`` as the entry's first turn, every other turn empty (as many as the ground truth)."""
    return [first] + [[] for _ in range(len(dataset().ground_truth_for(entry_id)) - 1)]


def _write(result_dir: Path, model: str, lines: list[dict]) -> None:
    folder = result_dir / model / "multi_turn"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"BFCL_v4_{BASE}_result.json", "w", encoding="utf-8") as handle:
        for line in lines:
            handle.write(json.dumps(line) + "\n")


def _cat_flood(entry_id: str, size: int = 200_000, cats: int = 5_000) -> dict:
    """A file of ``size`` characters, then ``cats`` ``cat`` of it in one step."""
    step = [_fc("touch", file_name="big.txt"), _fc("echo", content="A" * size, file_name="big.txt")]
    step += [_fc("cat", file_name="big.txt")] * cats
    return {"id": entry_id, "result": _turns(entry_id, [step])}


def _self_containing_find(entry_id: str, name_length: int = 50_000) -> dict:
    """A folder with a long name copied into itself (the copy shares its children, so the
    tree contains itself), then ``find``."""
    name = "n" * name_length
    step = [_fc("mkdir", dir_name=name), _fc("cp", source=name, destination=name), _fc("find")]
    return {"id": entry_id, "result": _turns(entry_id, [step])}


def _rewritten_echoes(entry_id: str, echoes: int = 40) -> dict:
    """``echo`` of a 198 KB string of ``cd(``: the reference's instance-name rewrite makes
    each ``cd(`` ``{model}_{id}_GorillaFileSystem_instance.cd(`` (about 20 times longer),
    and every result is kept."""
    return {"id": entry_id, "result": _turns(entry_id, [[_fc("echo", content="cd(" * 66_000)] * echoes])}


def _heavy_steps(entry_id: str, steps: int) -> dict:
    return {"id": entry_id, "result": _turns(entry_id, [_heavy_step(number) for number in range(steps)])}


def _limit_resources() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _evaluate_child(result_dir: Path, score_dir: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    command = [sys.executable, "-m", "bfcl_safe", "evaluate", "--result-dir", str(result_dir),
               "--score-dir", str(score_dir), "--data", str(wheel()), "--partial-eval"]
    started = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, timeout=TIME_LIMIT, preexec_fn=_limit_resources,
                              cwd=result_dir.parent, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"no result within {TIME_LIMIT} s (killed)")
    return {"returncode": done.returncode, "stderr": done.stderr.decode("utf-8", "replace"),
            "elapsed": time.monotonic() - started}


def _records(score_dir: Path, model: str) -> dict[str, dict]:
    path = score_dir / model / "multi_turn" / f"BFCL_v4_{BASE}_score.json"
    lines = path.read_text(encoding="utf-8").splitlines()
    return {record["id"]: record for record in map(json.loads, lines[1:])}


@pytest.fixture(scope="module")
def attacks(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("entry-budgets")
    result, score = root / "result", root / "score"
    _write(result, "fc-attacker", [
        _cat_flood(f"{BASE}_0"),
        _self_containing_find(f"{BASE}_1"),
        {"id": f"{BASE}_2", "result": ground_truth_as_fc(dataset().ground_truth_for(f"{BASE}_2"),
                                                         dataset().entry(f"{BASE}_2")["involved_classes"])},
        _rewritten_echoes(f"{BASE}_5"),
    ])
    _write(result, "prompting-attacker", [
        _heavy_steps(f"{BASE}_3", 20),  # a 1 MB line
        _heavy_steps(f"{BASE}_4", 600),  # a 30 MB line (the line limit is 32 MB)
    ])
    run = _evaluate_child(result, score)
    return {"run": run, "fc": _records(score, "fc-attacker"), "prompting": _records(score, "prompting-attacker"),
            "score": score}


def test_the_attacks_end_in_time_under_the_memory_cap(attacks: dict) -> None:
    run = attacks["run"]
    assert run["returncode"] == 0, run["stderr"][-2000:]
    assert run["elapsed"] < TIME_LIMIT, run["elapsed"]
    print(f"evaluate took {run['elapsed']:.1f} s")
    assert "Traceback" not in run["stderr"] and "could not score" not in run["stderr"]


@pytest.mark.parametrize("entry_id", [f"{BASE}_0", f"{BASE}_5"], ids=["cat-flood", "rewritten-echoes"])
def test_kept_results_fail_the_entry_on_their_budget_not_the_process(attacks: dict, entry_id: str) -> None:
    record = attacks["fc"][entry_id]
    assert record["error"]["error_type"] == ErrorType.RESOURCE_LIMIT
    assert record["error"]["details"]["budget"] == "result_chars"
    assert record["error"]["details"]["limit"] == ENTRY_BUDGETS["result_chars"]
    # Before: a 1 GB score file. Now the failure record is the short one.
    path = attacks["score"] / "fc-attacker" / "multi_turn" / f"BFCL_v4_{BASE}_score.json"
    assert path.stat().st_size < 8 << 20  # (all four entries: the 50 KB folder name is written a few times)
    assert f"{entry_id}: resource limit: budget 'result_chars' exceeded" in attacks["run"]["stderr"]


def test_find_in_a_tree_that_contains_itself_is_the_reference_recursion_error_quickly(attacks: dict) -> None:
    record = attacks["fc"][f"{BASE}_1"]  # an official verdict: the turns ran, find's result was the error
    assert record["error"]["error_type"] in {t.value for t in ErrorType if t.official}
    results = record["error"].get("execution_result") or record["error"]["details"]["execution_result"]
    find_result = results[0]["model"][0][2]
    assert find_result.startswith("Error during execution: maximum recursion depth exceeded"), find_result[:200]
    assert f"{BASE}_2" not in attacks["fc"]  # the entry beside them passes


@pytest.mark.parametrize("entry_id", [f"{BASE}_3", f"{BASE}_4"], ids=["1MB-line", "30MB-line"])
def test_parse_work_fails_the_entry_on_its_budget(attacks: dict, entry_id: str) -> None:
    error = attacks["prompting"][entry_id]["error"]
    assert error["error_type"] == ErrorType.RESOURCE_LIMIT
    assert error["details"]["budget"] == "libcst_chars"
    assert error["details"]["limit"] == ENTRY_BUDGETS["libcst_chars"]


# ----------------------------------------------------------------------------- boundaries


def _spent(line: dict, model: str) -> dict[str, int]:
    """What scoring ``line`` spends, per budget (every budget unlimited but as configured)."""
    made: list[Budget] = []

    class Watched(Budget):
        __slots__ = ()

        def __init__(self) -> None:
            super().__init__()
            made.append(self)

    original = boundary_module.Budget
    boundary_module.Budget = Watched
    try:
        scoring.score_line(dataset(), scoring.Context(model, BASE, "auto"), json.dumps(line))
    finally:
        boundary_module.Budget = original
    (used,) = made
    return dict(used.spent)


def _evaluate_in_process(tmp_path: Path, model: str, line: dict) -> dict | None:
    result, score = tmp_path / "result", tmp_path / "score"
    _write(result, model, [line])
    out = CliRunner().invoke(main, ["evaluate", "--result-dir", str(result), "--score-dir", str(score),
                                    "--data", str(wheel()), "--partial-eval"])
    assert out.exit_code == 0, out.output
    return _records(score, model).get(line["id"])


def _boundary_case(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, line: dict, model: str,
                   over: bool) -> dict | None:
    spent = _spent(line, model)[kind]
    assert 0 < spent <= ENTRY_BUDGETS[kind]
    monkeypatch.setitem(ENTRY_BUDGETS, kind, spent - 1 if over else spent)
    return _evaluate_in_process(tmp_path, model, line)


@pytest.mark.parametrize("over", [False, True], ids=["at-the-limit", "one-over"])
def test_result_chars_boundary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, over: bool) -> None:
    line = _cat_flood(FILES_ENTRY, size=1_000, cats=3)
    record = _boundary_case(tmp_path, monkeypatch, "result_chars", line, "fc-model", over)
    assert record is not None  # (the entry fails either way: its later turns are empty)
    if over:
        assert record["error"]["error_type"] == ErrorType.RESOURCE_LIMIT
        assert record["error"]["details"]["budget"] == "result_chars"
    else:  # (the file it made differs from the ground truth's state: an official verdict)
        assert record["error"]["error_type"] == ErrorType.STATE_MISMATCH


@pytest.mark.parametrize("over", [False, True], ids=["at-the-limit", "one-over"])
def test_libcst_chars_boundary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, over: bool) -> None:
    step = "[ls(a=[" + ", ".join(["1+1"] * 700) + "])]"  # past the decode cache's 2,048 characters
    line = {"id": FILES_ENTRY, "result": _turns(FILES_ENTRY, [step])}
    record = _boundary_case(tmp_path, monkeypatch, "libcst_chars", line, "prompting-model", over)
    assert record is not None
    if over:
        assert record["error"]["error_type"] == ErrorType.RESOURCE_LIMIT
        assert record["error"]["details"]["budget"] == "libcst_chars"
    else:
        assert record["error"]["error_type"] != ErrorType.RESOURCE_LIMIT
        assert record["model_result_decoded"][0][0][0].startswith("ls(a=[2, 2, ")


def test_a_long_step_repeated_in_an_entry_is_parsed_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import libcst

    parsed: list[int] = []
    parse_expression = libcst.parse_expression
    monkeypatch.setattr(libcst, "parse_expression", lambda text, *a, **k: parsed.append(len(text))
                        or parse_expression(text, *a, **k))
    step = "[ls(a=[" + ", ".join(["2*3"] * 700) + "])]"
    record = _evaluate_in_process(tmp_path, "prompting-model", {"id": FILES_ENTRY,
                                                                "result": _turns(FILES_ENTRY, [step] * 5)})
    assert record is not None and len(record["model_result_decoded"][0]) == 5
    assert parsed == [len(step)]


def test_a_long_step_is_parsed_once_for_its_check_and_its_record(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    import libcst

    step = "[ls(a=[" + ", ".join(["2*3"] * 700) + "])]"
    parsed: list[int] = []
    parse_expression = libcst.parse_expression

    def counting(text: str, *args: object, **kwargs: object) -> object:
        parsed.append(len(text))
        return parse_expression(text, *args, **kwargs)

    monkeypatch.setattr(libcst, "parse_expression", counting)
    record = _evaluate_in_process(tmp_path, "prompting-model", {"id": FILES_ENTRY,
                                                                "result": _turns(FILES_ENTRY, [step])})
    assert record is not None and record["model_result_decoded"][0][0][0].startswith("ls(a=[6, 6, ")
    assert parsed == [len(step)]  # decoded for the check; the record's display reused it


def test_the_find_paths_are_charged_before_they_are_built() -> None:
    from bfcl_safe.backends.gorilla_file_system import GorillaFileSystem

    system = GorillaFileSystem.from_config({"root": {"r": {"type": "directory", "contents": {}}}},
                                           long_context=False)
    for index in range(10):
        system.touch(file_name=f"f{index}")
    tight = Budget({**ENTRY_BUDGETS, "result_chars": 10 * len("./f0") - 1})
    with tight.active(), pytest.raises(BudgetExceeded, match="result_chars"):
        system.find()
    exact = Budget({**ENTRY_BUDGETS, "result_chars": 10 * len("./f0")})
    with exact.active():
        assert len(system.find()["matches"]) == 10


# ----------------------------------------------------------------------------- the fault boundary


@pytest.mark.parametrize("raised, error_type, says", [
    (BudgetExceeded("state_items", 10, 11), ErrorType.RESOURCE_LIMIT,
     "resource limit: budget 'state_items' exceeded (11 > 10); the entry fails"),
    (RecursionError("deep"), ErrorType.INTERNAL_ERROR, "bfcl-safe could not run this: RecursionError: deep"),
    (MemoryError(), ErrorType.INTERNAL_ERROR, "bfcl-safe could not run this: MemoryError: (no message)"),
    (KeyError("\x1b[2J"), ErrorType.INTERNAL_ERROR, "bfcl-safe could not run this: KeyError: '\\x1b[2J'"),
], ids=["budget", "recursion", "memory", "bug"])
def test_the_boundary_turns_what_escapes_into_the_entry_failure(raised: BaseException, error_type: ErrorType,
                                                                says: str) -> None:
    guard = EntryBoundary("run this", turn=2)
    with guard:
        assert budget.current() is guard.budget
        raise raised
    assert budget.current() is None
    assert guard.exception is raised and isinstance(guard.failure, Verdict)
    assert guard.failure.error_type is error_type and guard.failure.failing_turn == 2
    assert guard.failure.error_message == [says]
    record = guard.failure.own_record("x_0", "m", BASE)
    assert list(record) == ["id", "model_name", "test_category", "valid", "error", "first_failing_turn",
                            "turns_passed"]


def test_the_boundary_lets_passthrough_and_base_exceptions_through() -> None:
    guard = EntryBoundary(passthrough=(RejectedInput,))
    with pytest.raises(RejectedInput), guard:
        raise RejectedInput("documented")
    with pytest.raises(KeyboardInterrupt), guard:
        raise KeyboardInterrupt
    with guard:
        pass
    assert guard.failure is None and guard.exception is None and budget.current() is None
