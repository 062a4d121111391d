"""Hostile model output, end to end through ``bfcl-safe evaluate``.

A generated result tree mixes ordinary entries (ground truth replayed as an FC and as
a prompting model, some deliberately wrong) with hostile FC and prompting steps:
code in function names and argument keys, Python builtins as tool names, private and
dunder methods, ``9**9**9**9``, 200,000-deep nesting, 20 MB strings, 50,000 calls in
one step, invalid JSON arguments, tool calls whose honest computation never finishes
(``power(base=9, exponent=999999999)``), and result lines nested as deep as JSON allows.
Every payload tries to create a file in a canary folder.

The command runs in a child process with an address-space limit (2 GB) and a
timeout (120 s), once with one process and once with --jobs 2. It must exit 0,
leave the canary folder empty, and give every ordinary entry its known verdict:
replayed ground truth passes (also with hostile steps in front of the right calls),
an emptied last turn is an empty-turn failure, a lost turn is force-terminated.
Entries made only of hostile steps fail with an official error type, never with an
internal error.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from bfcl_safe.checker.error_types import ErrorType
from bfcl_safe.checker.replay import ground_truth_as_fc, ground_truth_as_prompting
from tests.checker_support import dataset
from tests.refenv import wheel

ROOT = Path(__file__).resolve().parent.parent
TIME_LIMIT = 120.0  # seconds, per run
MEMORY_LIMIT = 2 << 30  # bytes of address space, per process
MB20 = 20 * 1024 * 1024
DEEP = 200_000
C = "{canary}"  # replaced by the canary folder

#: Known to the model registry as an FC model and as a prompting model (decoders
#: "fc" and "prompting"); the third is unknown, so its steps are decoded with "auto".
FC_MODEL = "gpt-4.1-2025-04-14-FC"
PROMPT_MODEL = "gpt-4.1-2025-04-14"
MIXED_MODEL = "hostile-unregistered-model"
OFFICIAL_ERRORS = {
    "multi_turn:inference_error", "multi_turn:force_terminated", "multi_turn:empty_turn_model_response",
    "multi_turn:instance_state_mismatch", "multi_turn:execution_response_mismatch",
}
CATEGORIES = ("multi_turn_base", "multi_turn_miss_param")
ENTRIES = 14  # per category: the first ones of the dataset


def _touch(name: str) -> str:
    return f"__import__('os').system('touch {C}/{name}')"


def _args(arguments: dict) -> str:
    return json.dumps(arguments)


# ----------------------------------------------------------------------------- FC payloads
# Each is one step: a list of {name: arguments} calls. "small" ones go everywhere,
# "big" ones (megabytes, deep) once per model.

FC_SMALL: list[Any] = [
    [{f"{_touch('fc-name')} or ls": "{}"}],
    [{f"ls(a=1) or {_touch('fc-chain')} or ls": "{}"}],
    [{"cd": _args({f"folder={_touch('fc-key')} or 'x',y": 1})}],
    [{"ls": _args({f"a=1)or {_touch('fc-close')}or ls(b": 2})}],
    [{"ls": _args({f"**{{'a': {_touch('fc-star')}}}": 1})}],
    [{"ls": _args({"a": _touch("fc-value")})}],  # data: a string, never code
    [{"open": _args({"file": f"{C}/fc-open", "mode": "w"})}],
    [{"exec": _args({"source": f"open('{C}/fc-exec', 'w')"})}],
    [{"eval": _args({"source": f"open('{C}/fc-eval', 'w')"})}],
    [{"globals": "{}"}, {"breakpoint": "{}"}, {"input": _args({"prompt": "x"})}],
    [{"pow": _args({"base": 9, "exp": 9 ** 9})}],
    [{"_load_scenario": _args({"scenario": {"root": {}}, "long_context": True})}],
    [{"_navigate_to_directory": _args({"path": "/"})}, {"_private": "{}"}],
    [{"__init__": "{}"}, {"__class__": "{}"}, {"__reduce__": "{}"}, {"__getattribute__": _args({"name": "x"})}],
    [{"ls": _args({"__class__": 1})}],
    [{"9**9**9**9": "{}"}, {"ls": _args({"a=9**9**9**9,b": 1})}],
    [{"kill": "{}"}, {"exit": "{}"}, {"popen": _args({"cmd": f"touch {C}/fc-popen"})}],
    [{"ls": "{not json"}, {"ls": "[1, 2]"}, {"ls": "null"}, {"ls": 5}, {"ls": "NaN"}, {"ls": "1e999"}],
    [{"ls": _args({"a": float("nan")})}],  # NaN -> the bare name 'nan' -> NameError, as in the reference
    [{"ls": "9" * 5000}],  # an integer past CPython's digit limit
    [{"ｅｘｅｃ": _args({"source": f"open('{C}/fc-fullwidth', 'w')"})}],
]
FC_BIG: list[Any] = [
    [{"ls": "[" * DEEP + "]" * DEEP}],
    [{"ls": '{"a": ' + "[" * DEEP + "]" * DEEP + "}"}],
    [{"ls" + "(" * DEEP: "{}"}],
    [{"echo": _args({"content": "x" * MB20})}],
    [{"echo": _args({"content": "ls(" * (MB20 // 3)})}],
    [{"a" * MB20: "{}"}],
    [{"ls": _args({"k" * MB20: 1})}],
    [{"ls": "{}"}] * 50_000,
    [{f"{_touch('fc-many')} or ls": "{}"}] * 50_000,
]

# ----------------------------------------------------------------------- prompting payloads

PROMPT_SMALL: list[str] = [
    f"[{_touch('p-import')}]",
    f"[cd(folder={_touch('p-arg')} or 'x')]",
    # The reference's prompting decoder eval()s a binary operation: these would run there.
    f"[cd(folder={_touch('p-binop')} + 'x')]",
    f"[cd(folder=open('{C}/p-open', 'w').name + '')]",
    f"[cd(folder=lambda: {_touch('p-lambda')})]",
    f"[open(file='{C}/p-open2', mode='w')]",
    f"[exec(source=\"open('{C}/p-exec', 'w')\")]",
    f"[eval(source=\"open('{C}/p-eval', 'w')\")]",
    "[globals(), breakpoint(), input(prompt='x'), pow(base=9, exp=999999999)]",
    "[_load_scenario(scenario={}), _private(), __init__(), __class__()]",
    "[().__class__.__bases__[0].__subclasses__()]",
    f"[ls(a=[c for c in ().__class__.__base__.__subclasses__()])]",
    f"[ls(a=f'{{{_touch('p-fstring')}}}')]",
    "[ls(a=9**9**9**9)]",
    "[ls(a='x' * 10**10)]",
    "[ls(a=[[0]*9999]*9999)]",
    "[ls(a=2**99999*2**99999*2**99999)]",
    f"[ls(a=(x := {_touch('p-walrus')}))]",
    f"[ls(**{{'a': {_touch('p-star')}}})]",
    f"ls(a=1); {_touch('p-semicolon')}",
    f"[kill(), exit(), popen(cmd='touch {C}/p-popen')]",
    '[{"name": "exec", "arguments": {"source": "open(\'' + C + '/p-json\', \'w\')"}}]',
]
PROMPT_BIG: list[str] = [
    "[cd(folder=" + "[" * DEEP + "]" * DEEP + ")]",
    "[cd(folder=" + "-" * DEEP + "1)]",
    "[cd(folder=" + "-" * 40_000 + "1)]",  # under the length limits: reaches the nesting guard
    "[cd(folder=" + "1+" * 20_000 + "1)]",
    "[cd(folder=x" + "[0]" * 15_000 + ")]",
    "[ls" + "()" * 20_000 + "]",
    "[cd(folder=" + "'a'" * 15_000 + ")]",
    "[echo(content='" + "x" * MB20 + "')]",
    "[" + ",".join(["ls()"] * 15_000) + "]",  # decoded: 10,000 run, the rest get an error result
    "[" + ", ".join(["ls()"] * 50_000) + "]",  # past the length limit: the step does not decode
    "[" + ", ".join([f"cd(folder={_touch('p-many')})"] * 50_000) + "]",
]


#: Tool calls whose honest computation never finishes (MathAPI): in front of every
#: hostile-augmented entry (an error result where MathAPI is involved, NameError elsewhere).
FC_COSTLY = [{"power": _args({"base": 9, "exponent": 999_999_999})},
             {"logarithm": _args({"value": 2, "base": 10, "precision": 10**8})},
             {"square_root": _args({"number": 2, "precision": 10**8})},
             {"round_number": _args({"number": 1.5, "decimal_places": -10**8})}]
PROMPT_COSTLY = ("[power(base=9, exponent=999999999), logarithm(value=2, base=10, precision=100000000), "
                 "square_root(number=2, precision=100000000), round_number(number=1.5, decimal_places=-100000000)]")

#: Leads every turn of the hostile-only entries: calls that decode, run, and are refused.
FC_PROBE = [{"open": _args({"file": f"{C}/probe-fc", "mode": "w"})}, {"_load_scenario": _args({"scenario": {}})}]
PROMPT_PROBE = f"[open(file='{C}/probe-p', mode='w'), _load_scenario(scenario={{'root': 1}})]"
PROBE_RESULTS = ("Error during execution: name 'open' is not defined",
                 "Error during execution: name '_load_scenario' is not defined")

# ----------------------------------------------------------------------------- the tree


def _usable(entry: dict, truth: list) -> bool:
    """Entries whose first and last ground-truth turns have calls (for clear expectations)."""
    return len(truth) >= 2 and bool(truth[0]) and bool(truth[-1])


def _write_tree(root: Path) -> dict[tuple[str, str], str | None]:
    """Write the result tree; return the expected verdict of every ordinary entry:
    ``(model, id) -> None`` (passes) or an error type. Hostile-only entries map to "fail"."""
    data = dataset()
    expected: dict[tuple[str, str], str | None] = {}
    models = {
        FC_MODEL: ("fc", FC_SMALL, FC_BIG, [FC_PROBE], [FC_COSTLY]),
        PROMPT_MODEL: ("prompting", PROMPT_SMALL, PROMPT_BIG, [PROMPT_PROBE], [PROMPT_COSTLY]),
        MIXED_MODEL: ("mixed", FC_SMALL + PROMPT_SMALL, FC_BIG[-2:] + PROMPT_BIG[-3:], [FC_PROBE, PROMPT_PROBE],
                      [FC_COSTLY, PROMPT_COSTLY]),
    }
    for model, (form, small, big, probes, costly) in models.items():
        folder = root / model / "multi_turn"
        folder.mkdir(parents=True)
        for category in CATEGORIES:
            payloads = list(small) + (list(big) if category == CATEGORIES[0] else [])
            entries = [e for e in data.entries(category) if _usable(e, data.ground_truth_for(e["id"]))][:ENTRIES]
            hostile_slots = list(range(3, len(entries) - 2))
            lines = []
            for index, entry in enumerate(entries):
                truth = data.ground_truth_for(entry["id"])
                as_fc = form == "fc" or (form == "mixed" and index % 2 == 0)
                result = (ground_truth_as_fc if as_fc else ground_truth_as_prompting)(truth, entry["involved_classes"])
                key = (model, entry["id"])
                if index == 0:
                    expected[key] = None
                elif index == 1:  # the last turn has no call: an empty turn
                    result[-1] = [[]] if as_fc else ["Done."]
                    expected[key] = ErrorType.EMPTY_TURN
                elif index == 2:  # a turn lost
                    result = result[:-1]
                    expected[key] = ErrorType.FORCE_TERMINATED
                elif index < len(entries) - 2:  # hostile steps in front of the right calls
                    mine = payloads[hostile_slots.index(index)::len(hostile_slots)]
                    result[0] = [*costly, *mine, *result[0]]
                    expected[key] = None
                else:  # only hostile steps, in every turn
                    result = [[*probes, *small[(index + turn) % len(small) :][:3]] for turn in range(len(truth))]
                    expected[key] = "fail"
                lines.append(json.dumps({"id": entry["id"], "result": result}))
            # A line nested nearly as deep as a result line may be (MAX_RESULT_LINE_DEPTH, 200),
            # and one far deeper (skipped and reported, before it is parsed).
            lines.append(f'{{"id": "{category}_199", "result": {"[" * 198 + "]" * 198}}}')
            lines.append(f'{{"id": "{category}_198", "result": {"[" * DEEP + "]" * DEEP}}}')
            assert len(data.ground_truth_for(f"{category}_199")) > 1
            expected[(model, f"{category}_199")] = ErrorType.FORCE_TERMINATED
            text = "\n".join(lines).replace(C, str(root.parent / "CANARY"))
            (folder / f"BFCL_v4_{category}_result.json").write_text(text + "\n", encoding="utf-8")
    return expected


def _limit_resources() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _evaluate(result_dir: Path, score_dir: Path, canary: Path, jobs: int) -> dict:
    """Run ``python -m bfcl_safe evaluate`` under the limits, with the canary as cwd."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    command = [sys.executable, "-m", "bfcl_safe", "evaluate", "--result-dir", str(result_dir),
               "--score-dir", str(score_dir), "--data", str(wheel()), "--partial", "--jobs", str(jobs)]
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=canary, env=env, capture_output=True, text=True, timeout=TIME_LIMIT,
                              preexec_fn=_limit_resources)
    except subprocess.TimeoutExpired:
        return {"failure": f"no result within {TIME_LIMIT} s (killed)"}
    return {"returncode": done.returncode, "stdout": done.stdout, "stderr": done.stderr,
            "elapsed": time.monotonic() - started}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Build the tree once; score it with 1 and 2 jobs (two children, in parallel)."""
    base = tmp_path_factory.mktemp("hostile")
    result_dir = base / "tree" / "result"
    result_dir.mkdir(parents=True)
    # Payloads name <tree>/CANARY; each run gets its own canary (its cwd) and checks both.
    shared_canary = result_dir.parent / "CANARY"
    shared_canary.mkdir()
    expected = _write_tree(result_dir)
    outcomes = {}
    with ThreadPoolExecutor(2) as pool:
        futures = {}
        for jobs in (1, 2):
            canary = base / f"cwd-{jobs}"
            canary.mkdir()
            futures[jobs] = (pool.submit(_evaluate, result_dir, base / f"score-{jobs}", canary, jobs), canary)
        for jobs, (future, canary) in futures.items():
            outcomes[jobs] = {**future.result(), "canary": canary, "score_dir": base / f"score-{jobs}"}
    return {"expected": expected, "outcomes": outcomes, "shared_canary": shared_canary}


def _verdicts(score_dir: Path, model: str, category: str) -> tuple[dict, dict[str, dict]]:
    lines = (score_dir / model / "multi_turn" / f"BFCL_v4_{category}_score.json").read_text(encoding="utf-8").splitlines()
    return json.loads(lines[0]), {json.loads(line)["id"]: json.loads(line) for line in lines[1:]}


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_command_completes_within_the_limits(runs: dict, jobs: int) -> None:
    outcome = runs["outcomes"][jobs]
    assert "failure" not in outcome, outcome.get("failure")
    assert outcome["returncode"] == 0, outcome["stderr"][-3000:]
    assert outcome["elapsed"] < TIME_LIMIT
    assert "Traceback" not in outcome["stderr"], outcome["stderr"][-3000:]


@pytest.mark.parametrize("jobs", [1, 2])
def test_no_payload_ran(runs: dict, jobs: int) -> None:
    outcome = runs["outcomes"][jobs]
    assert sorted(p.name for p in runs["shared_canary"].iterdir()) == []
    assert sorted(p.name for p in outcome["canary"].iterdir()) == []


@pytest.mark.parametrize("jobs", [1, 2])
def test_ordinary_entries_keep_their_verdicts(runs: dict, jobs: int) -> None:
    outcome = runs["outcomes"][jobs]
    assert outcome.get("returncode") == 0
    seen = passed = budget_ended = 0
    for model in (FC_MODEL, PROMPT_MODEL, MIXED_MODEL):
        for category in CATEGORIES:
            summary, failed = _verdicts(outcome["score_dir"], model, category)
            for (expected_model, entry_id), verdict in runs["expected"].items():
                if expected_model != model or not entry_id.startswith(category + "_"):
                    continue
                seen += 1
                got = failed.get(entry_id)
                if verdict is None and got is not None and got["error"]["error_type"] == ErrorType.RESOURCE_LIMIT:
                    budget_ended += 1  # its hostile steps used up a budget: the entry ends there (by design)
                elif verdict is None:
                    assert got is None, (model, entry_id, got and got["error"])
                    passed += 1
                elif verdict == "fail":
                    assert got is not None, (model, entry_id)
                    assert got["error"]["error_type"] in OFFICIAL_ERRORS | {ErrorType.RESOURCE_LIMIT}
                    assert "could not score" not in json.dumps(got["error"]["error_message"])
                else:
                    assert got is not None and got["error"]["error_type"] == verdict, (model, entry_id, got)
            assert summary["total_count"] == ENTRIES + 1  # the too-deep line is skipped and reported
    assert seen == 3 * len(CATEGORIES) * (ENTRIES + 1)
    assert passed > budget_ended, (passed, budget_ended)  # most hostile steps are refused call by call


@pytest.mark.parametrize("jobs", [1, 2])
def test_hostile_calls_ran_and_were_refused(runs: dict, jobs: int) -> None:
    # Not vacuous: the hostile-only entries' calls reached the executor and got eval's NameError text.
    outcome = runs["outcomes"][jobs]
    probed = hostile = 0
    for model in (FC_MODEL, PROMPT_MODEL, MIXED_MODEL):
        for category in CATEGORIES:
            _, failed = _verdicts(outcome["score_dir"], model, category)
            hostile_only = [entry_id for (m, entry_id), verdict in runs["expected"].items()
                            if m == model and verdict == "fail" and entry_id.startswith(category + "_")]
            assert hostile_only
            for entry_id in hostile_only:
                hostile += 1
                text = json.dumps(failed[entry_id]["error"])
                if failed[entry_id]["error"]["error_type"] == ErrorType.RESOURCE_LIMIT:
                    continue  # a payload of the entry used up a budget: the entry ended there
                assert all(probe in text for probe in PROBE_RESULTS), (model, entry_id)
                probed += 1
    # Not vacuous: a third of the hostile-only entries are refused call by call to the end (in
    # the others a payload uses up a per-entry budget first, and the entry ends there).
    assert probed * 3 >= hostile, (probed, hostile)


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_too_deep_line_is_reported(runs: dict, jobs: int) -> None:
    stderr = runs["outcomes"][jobs]["stderr"]
    assert stderr.count(f"nested {DEEP + 1:,} levels deep, more than the 200 a result line may be") == 3 * len(CATEGORIES)
    assert "could not score" not in stderr


def test_security_md_lists_every_limit_with_its_value() -> None:
    from bfcl_safe.interp import limits

    text = (ROOT / "SECURITY.md").read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip(): line for line in text.splitlines() if line.startswith("| ")}
    values = {name: getattr(limits, name) for name in dir(limits) if name.isupper()}
    # The budgets table: one row per budget, named as its key in the dict.
    values.update({f'ENTRY_BUDGETS["{key}"]': size for key, size in values.pop("ENTRY_BUDGETS").items()})
    for name, value in values.items():
        row = next((line for key, line in rows.items() if f"`{name}`" in key or f"`{name}`" in line), None)
        assert row is not None, f"SECURITY.md has no row for {name}"
        assert f"{value:,}" in row, f"SECURITY.md gives {name} a value other than {value:,}"
