"""``bfcl-safe generate`` against the reference's own inference, over real HTTP.

For each mode (FC, prompting) and each multi-turn category, one scripted server (a real
HTTP server on 127.0.0.1, :mod:`tests.scripted_server`) answers with
:func:`~tests.scripted_server.mixed_policy` — per turn, by a hash of its question: the
ground truth, mutated ground truth, the ground truth one call per step, a text reply
with no call, malformed calls, an empty reply, an unknown tool, or calls until the step
limit force-terminates the entry. The reference's ``bfcl generate`` pipeline (its
``OpenAICompletionsHandler``, in its own environment, as a child process) and our
generate play the same entries against it; then:

- the result files are equal line by line, ``json.dumps`` text included, except the
  ``latency`` (and, for failed entries, ``traceback``) fields;
- the request bodies the server received are the same multiset (message history,
  tools, system prompt, held-out turns, tool messages: everything that was sent);
- ``bfcl-safe evaluate`` gives every entry the reference checker's verdict;
- every behaviour of the script happened somewhere (force-termination, decoding
  failures, empty steps, held-out turns).

``BFCL_SAFE_GENERATE_ENTRIES`` entries per category and mode (default 5, spread over the
category; ``all`` for the 800 entries of each mode, about an hour on two cores).
"""

from __future__ import annotations

import json
import os
from collections import Counter

import pytest

from bfcl_safe.checker.contract import MULTI_TURN_CATEGORIES
from tests.checker_support import dataset as load_dataset
from tests.checker_support import reference_verdict
from tests.generate_support import (
    canonical_requests, first_difference, registry_name, result_lines, run_ours, run_reference, stratified,
    without_volatile,
)
from tests.scripted_server import EntryScript, ScriptedServer, mixed_policy

MODES = ("fc", "prompting")
_COUNT = os.environ.get("BFCL_SAFE_GENERATE_ENTRIES", "5")
COUNT = 0 if _COUNT == "all" else int(_COUNT)
THREADS = int(os.environ.get("BFCL_SAFE_GENERATE_THREADS", "4"))
#: A file the tests append their figures to (one JSON object per check), for closing notes.
FIGURES = os.environ.get("BFCL_SAFE_GENERATE_FIGURES")


def _figures(**fields) -> None:
    if FIGURES:
        with open(FIGURES, "a", encoding="utf-8") as out:
            out.write(json.dumps(fields) + "\n")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Per (mode, category): the ids played, both result folders, both request lists."""
    dataset = load_dataset()
    out = {}
    for mode in MODES:
        for category in MULTI_TURN_CATEGORIES:
            ids = stratified(dataset.ids(category), COUNT)
            work = tmp_path_factory.mktemp(f"{mode}-{category}")
            script = EntryScript(dataset, dataset.ids(category), mode, mixed_policy)
            with ScriptedServer(script) as server:
                reference = run_reference(server.base_url, mode, [category], ids, work / "reference", THREADS)
                reference_requests = list(server.requests)
                server.requests.clear()
                ours, summary = run_ours(dataset, server.base_url, mode, [category], ids, work / "ours", THREADS)
                our_requests = list(server.requests)
                failures = list(server.failures)
            out[mode, category] = {
                "ids": ids, "reference": reference, "ours": ours, "summary": summary, "failures": failures,
                "reference_requests": reference_requests, "our_requests": our_requests,
            }
    return out


CASES = [pytest.param(mode, category, id=f"{mode}-{category.removeprefix('multi_turn_')}")
         for mode in MODES for category in MULTI_TURN_CATEGORIES]


@pytest.mark.parametrize("mode, category", CASES)
def test_result_files_equal_the_references(runs, mode, category):
    run = runs[mode, category]
    assert run["failures"] == []
    theirs = result_lines(run["reference"], mode, category)
    ours = result_lines(run["ours"], mode, category)
    assert [line["id"] for line in ours] == [line["id"] for line in theirs] == sorted(
        run["ids"], key=lambda i: int(i.rsplit("_", 1)[1]))
    for mine, reference in zip(ours, theirs):
        a, b = without_volatile(mine), without_volatile(reference)
        assert a == b, f"{mine['id']}: {first_difference(a, b)}"
        assert json.dumps(a) == json.dumps(b), f"{mine['id']}: same values, different text"
        assert list(mine) == list(reference), f"{mine['id']}: fields {list(mine)} != {list(reference)}"
    _figures(check="result lines identical", mode=mode, category=category, lines=len(ours))


@pytest.mark.parametrize("mode, category", CASES)
def test_the_model_was_sent_the_same_requests(runs, mode, category):
    run = runs[mode, category]
    ours, theirs = canonical_requests(run["our_requests"]), canonical_requests(run["reference_requests"])
    assert len(ours) == len(theirs)
    assert ours == theirs
    _figures(check="request bodies identical", mode=mode, category=category, requests=len(ours))


@pytest.mark.parametrize("mode, category", CASES)
def test_verdicts_equal_the_reference_checkers(runs, mode, category, runner):
    from bfcl_safe.checker.outputs import score_file_path
    from bfcl_safe.cli import main

    run = runs[mode, category]
    dataset = load_dataset()
    score_dir = run["ours"].parent / "score"
    done = runner.invoke(main, ["evaluate", "--result-dir", str(run["ours"]), "--score-dir", str(score_dir),
                                "--test-category", category, "--partial-eval", "--decoder", mode,
                                "--data", str(dataset.location)])
    assert done.exit_code == 0, done.output
    lines = score_file_path(score_dir, registry_name(mode), category).read_text().splitlines()
    ours = {json.loads(line)["id"]: json.loads(line)["error"]["error_type"] for line in lines[1:]}
    theirs = {}
    for line in result_lines(run["reference"], mode, category):
        entry_id = line["id"]
        verdict = reference_verdict(dataset.prompt_entry(entry_id), line["result"], dataset.ground_truth_for(entry_id),
                                    registry_name(mode), mode)
        if verdict is not None:
            theirs[entry_id] = verdict
    assert ours == theirs
    assert json.loads(lines[0])["total_count"] == len(run["ids"])
    _figures(check="verdicts identical", mode=mode, category=category, failed=len(lines) - 1,
             failures=dict(Counter(ours.values())), header=json.loads(lines[0]))


def test_every_scripted_behaviour_happened(runs):
    """The script is not vacuous: across the runs it made the entries pass and fail,
    force-terminated some, gave undecodable and empty steps, and played held-out turns."""
    seen = Counter()
    for (mode, category), run in runs.items():
        for line in result_lines(run["ours"], mode, category):
            seen["lines"] += 1
            text = json.dumps(line["inference_log"])
            seen["force_quit"] += "forced to quit" in text
            seen["undecodable"] += "Error decoding the model response" in text
            seen["empty"] += "Empty response from the model" in text
            seen["held_out_turn"] += "I have updated some more functions" in text
            seen["tool_error"] += "Error during execution" in text or "is not defined" in text
    assert seen["lines"] == sum(len(run["ids"]) for run in runs.values())
    for behaviour in ("force_quit", "undecodable", "empty", "held_out_turn", "tool_error"):
        assert seen[behaviour] > 0, f"no entry shows {behaviour}: {dict(seen)}"
