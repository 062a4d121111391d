"""The play API for agents and RL (``checker.play.Episode``): per-turn messages and tool
docs as BFCL inference gives them, step results equal to the reference's, BFCL's step
limit, ``check_turn`` equal to the scorer, and concurrent episodes of one entry.
(OpenAI input, typed step results, rewards, pickling and hostile input:
tests/test_play_api.py.)"""

from __future__ import annotations

import copy
import json
import random
import threading

import pytest

from bfcl_safe.checker.error_types import ErrorType
from bfcl_safe.checker.episode import MAXIMUM_STEP_LIMIT, plain
from bfcl_safe.checker.openai_format import ADDITIONAL_FUNCTION_PROMPT
from bfcl_safe.checker.play import (
    ArgumentError, Episode, EpisodeError, EpisodeOverError, StepInputError, TurnEnd, TurnOverError,
)
from bfcl_safe.checker.replay import ground_truth_as_fc, ground_truth_as_prompting
from bfcl_safe.checker.verdict import evaluate_entry
from tests.checker_support import CATEGORIES, dataset
from tests.refenv import import_reference

OWNER = "episode-model_v1"


def _play(episode: Episode, turns: list, *, check_every_turn: bool = False) -> list[dict]:
    """Drive ``episode`` with ``turns`` (a result file's ``result``); the verdicts after each turn."""
    verdicts = []
    for index, steps in enumerate(turns):
        assert episode.turn == index
        for step in steps:
            if episode.turn_over:
                break
            episode.step(step)
        if check_every_turn:
            verdicts.append(episode.check_turn().summary())
        if not episode.next_turn():
            break
    return verdicts


def _score(entry_id: str, result: list, decoder: str = "fc") -> dict:
    ds = dataset()
    return evaluate_entry(ds.entry(entry_id), result, ds.ground_truth_for(entry_id), model_name=OWNER,
                          test_category=entry_id.rsplit("_", 1)[0], decoder=decoder,
                          long_context_data=ds.long_context_data)


def _sample(per_category: int, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    return [entry["id"] for category in CATEGORIES for entry in rng.sample(dataset().entries(category), per_category)]


# --------------------------------------------------------------------------- messages and docs


def test_constants_are_the_references():
    prompts = import_reference("constants.default_prompts")
    assert MAXIMUM_STEP_LIMIT == prompts.MAXIMUM_STEP_LIMIT
    assert ADDITIONAL_FUNCTION_PROMPT == prompts.DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC


def _reference_turn_views(entry: dict) -> list[tuple[list[str], list[dict], list[dict]]]:
    """Per turn, as the reference's inference loops build them: the tool names of the FC
    tool list, the FC user messages and the prompting user messages."""
    utils = import_reference("utils")
    prompts = import_reference("constants.default_prompts")
    prepared = utils.populate_test_cases_with_predefined_functions([copy.deepcopy(entry)])[0]
    holdout = prepared.get("missed_function", {})
    views = []
    for turn, messages in enumerate(prepared["question"]):
        fc_messages = prompting_messages = messages
        if str(turn) in holdout:
            prepared["function"].extend(holdout[str(turn)])
            fc_messages = [{"role": "user", "content": prompts.DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC}]
            prompting_messages = [{"role": "user", "content": prompts.DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_PROMPTING.format(
                functions=holdout[str(turn)])}]
        views.append(([doc["name"] for doc in prepared["function"]], fc_messages, prompting_messages))
    return views


@pytest.mark.parametrize("category", ["multi_turn_miss_func", "multi_turn_base"])
def test_tools_and_messages_per_turn_equal_bfcl_inference(category):
    held_out_seen = 0
    for entry in dataset().entries(category):
        episode = Episode.from_entry(entry, dataset())
        for turn, (names, fc_messages, prompting_messages) in enumerate(_reference_turn_views(entry)):
            assert [doc["name"] for doc in episode.tools(turn)] == names, (entry["id"], turn)
            assert episode.messages(turn) == fc_messages, (entry["id"], turn)
            assert episode.messages(turn, mode="prompting") == prompting_messages, (entry["id"], turn)
        for turn_key, held in entry.get("missed_function", {}).items():
            for name in held:
                held_out_seen += 1
                for turn in range(episode.turn_count):
                    visible = name in {doc["name"] for doc in episode.tools(turn)}
                    assert visible == (turn >= int(turn_key)), (entry["id"], name, turn)
    assert held_out_seen >= (200 if category == "multi_turn_miss_func" else 0)


def test_tools_are_copies_and_default_to_the_current_turn():
    episode = Episode.from_entry("multi_turn_miss_func_0", dataset())
    tools = episode.tools()
    tools[0]["name"] = "changed"
    assert episode.tools()[0]["name"] != "changed"
    assert episode.tools() == episode.tools(0)
    assert episode.messages() == dataset().entry("multi_turn_miss_func_0")["question"][0]
    with pytest.raises(ArgumentError, match="turn must be 0") as info:
        episode.tools(99)
    assert info.value.name == "turn"
    with pytest.raises(ValueError, match="mode must be one of"):
        episode.messages(0, mode="xml")


# --------------------------------------------------------------------------- step results


def test_step_results_equal_the_references_for_ground_truth_calls():
    utils = import_reference("eval_checker.multi_turn_eval.multi_turn_utils")
    compared = 0
    try:
        for entry_id in _sample(5) + ["multi_turn_base_0", "multi_turn_miss_func_0"]:
            entry = dataset().entry(entry_id)
            truth = dataset().ground_truth_for(entry_id)
            episode = Episode.from_entry(entry, dataset(), owner=OWNER)
            for turn, (steps, truth_turn) in enumerate(zip(ground_truth_as_fc(truth, entry["involved_classes"]), truth)):
                ours = episode.step(steps[0]).results if truth_turn else []
                theirs, _ = utils.execute_multi_turn_func_call(
                    truth_turn, copy.deepcopy(entry.get("initial_config", {})), entry["involved_classes"], OWNER,
                    entry_id, long_context="long_context" in entry_id, is_evaL_run=True)
                assert ours == theirs, (entry_id, turn)
                compared += len(theirs)
                episode.next_turn()
    finally:
        namespace = vars(utils)
        for key in [k for k in namespace if k.endswith("_instance")]:
            del namespace[key]
    assert compared > 120


@pytest.mark.parametrize("form", ["dict", "json-text", "list-of-call-text", "call-text"])
def test_step_accepts_fc_dicts_and_call_text(form):
    episode = Episode.from_entry("multi_turn_base_0", dataset())
    call = {
        "dict": [{"cd": {"folder": "document"}}],
        "json-text": [{"cd": '{"folder": "document"}'}],
        "list-of-call-text": ["cd(folder='document')"],
        "call-text": "[cd(folder='document')]",
    }[form]
    assert episode.step(call).results == ['{"current_working_directory": "document"}']
    assert episode.step({"ls": "{}"}).results[0].startswith('{"current_directory_content"')


def test_step_rejects_other_input_types():
    episode = Episode.from_entry("multi_turn_base_0", dataset())
    with pytest.raises(StepInputError, match="mixing calls"):
        episode.step([{"ls": "{}"}, "ls()"])
    with pytest.raises(StepInputError) as info:
        episode.step(42)
    assert info.value.kind == "int" and isinstance(info.value, TypeError)
    assert episode.result() == [[]]  # refused steps are not recorded


@pytest.mark.parametrize("ending, why", [
    pytest.param([], TurnEnd.NO_CALLS, id="empty-list"),
    pytest.param("I am done.", TurnEnd.UNDECODABLE, id="text-reply-does-not-decode-as-in-bfcl"),
    pytest.param("", TurnEnd.NO_CALLS, id="empty-text"),
    pytest.param("[ls(", TurnEnd.UNDECODABLE, id="broken-call-text"),
    pytest.param([{"ls": "not json"}], TurnEnd.UNDECODABLE, id="fc-arguments-not-json"),
])
def test_a_step_with_no_calls_or_undecodable_ends_the_turn(ending, why):
    episode = Episode.from_entry("multi_turn_base_0", dataset())
    episode.step([{"ls": "{}"}])
    result = episode.step(ending)
    assert result.calls == () and result.messages == () and result.turn_over and result.ended is why
    assert (result.decode_error is not None) == (why is TurnEnd.UNDECODABLE)
    assert episode.turn_over and not episode.done
    with pytest.raises(TurnOverError, match="turn 0 is over") as info:
        episode.step([{"ls": "{}"}])
    assert info.value.turn == 0 and isinstance(info.value, EpisodeError)
    assert episode.next_turn() and episode.turn == 1 and not episode.turn_over


# --------------------------------------------------------------------------- step limit


def _entry_with_turns(minimum: int) -> str:
    return next(e["id"] for e in dataset().entries("multi_turn_base") if len(e["question"]) >= minimum)


def test_step_limit_force_terminates_like_bfcl():
    entry_id = _entry_with_turns(3)
    episode = Episode.from_entry(entry_id, dataset())
    for _ in range(MAXIMUM_STEP_LIMIT):
        assert episode.step([{"pwd": "{}"}]).ended is None
    assert not episode.force_terminated and not episode.turn_over
    # The 21st step still runs; then the model is force-quit: turn and episode end.
    last = episode.step([{"pwd": "{}"}])
    assert last.results != [] and last.ended is TurnEnd.STEP_LIMIT and last.done
    assert episode.force_terminated and episode.turn_over and episode.done
    assert episode.next_turn() is False
    with pytest.raises(EpisodeOverError, match="episode is over"):
        episode.step([{"pwd": "{}"}])
    verdict = episode.check_turn().summary()
    assert verdict["error_type"] == ErrorType.FORCE_TERMINATED and verdict["first_failing_turn"] == 0
    # Scoring what the episode recorded gives the same verdict.
    record = _score(entry_id, episode.result())
    assert record["error"]["error_type"] == ErrorType.FORCE_TERMINATED
    assert record["error"]["error_message"] == verdict["error_message"]
    assert len(episode.result()) == 1 and len(episode.result()[0]) == MAXIMUM_STEP_LIMIT + 1


def test_step_limit_in_the_last_turn_is_scored_as_usual():
    entry_id = "multi_turn_base_0"
    truth = dataset().ground_truth_for(entry_id)
    episode = Episode.from_entry(entry_id, dataset())
    turns = ground_truth_as_fc(truth, dataset().entry(entry_id)["involved_classes"])
    _play(episode, [steps[:-1] for steps in turns[:-1]])  # every turn but the last, without the reply step
    assert episode.turn == len(truth) - 1
    episode.step(turns[-1][0])
    for _ in range(MAXIMUM_STEP_LIMIT):
        episode.step([{"pwd": "{}"}])
    assert episode.force_terminated and episode.done
    assert episode.check_turn().summary() == {"valid": True, "turns_passed": len(truth), "first_failing_turn": None}
    assert _score(entry_id, episode.result()) == {"valid": True}


# --------------------------------------------------------------------------- check_turn


@pytest.mark.parametrize("form", ["fc", "prompting"])
def test_ground_truth_as_policy_passes_every_turn(form):
    render = ground_truth_as_fc if form == "fc" else ground_truth_as_prompting
    for entry_id in _sample(4, seed=5):
        entry = dataset().entry(entry_id)
        truth = dataset().ground_truth_for(entry_id)
        episode = Episode.from_entry(entry, dataset(), owner=OWNER)
        verdicts = _play(episode, render(truth, entry["involved_classes"]), check_every_turn=True)
        assert [v["valid"] for v in verdicts] == [True] * len(truth), entry_id
        assert [v["turns_passed"] for v in verdicts] == list(range(1, len(truth) + 1))
        assert episode.done
        assert _score(entry_id, episode.result(), form) == {"valid": True}


def test_check_turn_mid_turn_is_the_verdict_so_far():
    entry_id = "multi_turn_base_0"
    truth = dataset().ground_truth_for(entry_id)
    episode = Episode.from_entry(entry_id, dataset())
    before = episode.check_turn().summary()
    assert before["valid"] is False and before["error_type"] == ErrorType.EMPTY_TURN and before["first_failing_turn"] == 0
    steps = ground_truth_as_fc(truth, dataset().entry(entry_id)["involved_classes"])[0]
    episode.step(steps[0])
    assert episode.check_turn().summary() == {"valid": True, "turns_passed": 1, "first_failing_turn": None}
    json.dumps(before)  # plain data


def _mutations(truth: list[list[str]], rng: random.Random) -> list[list[list[str]]]:
    out = []
    calls = [(t, i) for t, turn in enumerate(truth) for i in range(len(turn))]
    if calls:
        t, i = rng.choice(calls)
        dropped = [list(turn) for turn in truth]
        del dropped[t][i]
        out.append(dropped)
        moved = [list(turn) for turn in truth]
        moved[min(t + 1, len(truth) - 1)].append(moved[t].pop(i))
        out.append(moved)
        t, i = rng.choice(calls)
        changed = [list(turn) for turn in truth]
        if "'" in changed[t][i]:
            first = changed[t][i].index("'")
            changed[t][i] = changed[t][i][: first + 1] + "x" + changed[t][i][first + 1:]
            out.append(changed)
    return out


def test_check_turn_equals_the_scorer_on_mistaken_policies():
    """Wrong policies played through episodes get the scorer's verdict, error and turn."""
    rng = random.Random(8)
    compared = failed = 0
    for entry_id in _sample(8, seed=9):
        entry = dataset().entry(entry_id)
        truth = dataset().ground_truth_for(entry_id)
        for mutated in _mutations(truth, rng):
            episode = Episode.from_entry(entry, dataset(), owner=OWNER)
            _play(episode, ground_truth_as_fc(mutated, entry["involved_classes"]))
            ours = episode.check_turn().summary()
            record = _score(entry_id, episode.result())
            compared += 1
            if record["valid"]:
                assert ours["valid"], entry_id
                continue
            failed += 1
            assert not ours["valid"], entry_id
            assert ours["error_type"] == record["error"]["error_type"], entry_id
            assert ours["error_message"] == record["error"]["error_message"], entry_id
            assert ours["first_failing_turn"] == record["first_failing_turn"], entry_id
            assert ours["turns_passed"] == record["turns_passed"], entry_id
    assert compared >= 60 and failed >= 20


# --------------------------------------------------------------------------- state


def test_state_is_plain_json_data():
    episode = Episode.from_entry("multi_turn_base_0", dataset())
    state = episode.state()
    assert json.loads(json.dumps(state)) == state
    assert state["GorillaFileSystem"]["root"]["name"] == "workspace"
    assert set(state) == set(dataset().entry("multi_turn_base_0")["involved_classes"])
    episode.step([{"mkdir": {"dir_name": "new"}}])
    assert "new" in episode.state()["GorillaFileSystem"]["root"]["contents"]


def test_plain_converts_containers_and_objects():
    class Odd:
        def __str__(self):
            return "odd"

    assert plain({1: (1, 2), "s": {3}, "o": Odd(), "b": True}) == {"1": [1, 2], "s": [3], "o": "odd", "b": True}


# --------------------------------------------------------------------------- concurrency


def _run_policy(entry_id: str, wrong: bool, barrier: threading.Barrier, out: dict, key: int) -> None:
    try:
        entry = dataset().entry(entry_id)
        truth = dataset().ground_truth_for(entry_id)
        episode = Episode.from_entry(entry, dataset(), owner=OWNER)
        turns = ground_truth_as_fc(truth, entry["involved_classes"])
        if wrong:
            turns = [[[{"mkdir": {"dir_name": "intruder"}}, {"cd": {"folder": "intruder"}}]] for _ in turns]
        barrier.wait()
        verdicts = []
        for steps in turns:
            for step in steps:
                if episode.turn_over:
                    break
                episode.step(step)
                threading.Event().wait(0.0005)  # let the other threads interleave
            verdicts.append(episode.check_turn().summary())
            episode.next_turn()
        out[key] = (verdicts, episode.state(), episode.result())
    except BaseException as exc:  # noqa: BLE001 - reported by the test
        out[key] = exc


@pytest.mark.parametrize("entry_id", [
    "multi_turn_base_0", "multi_turn_base_32", "multi_turn_long_context_5", "multi_turn_miss_param_14",
    "multi_turn_miss_param_100", "multi_turn_miss_param_150", "multi_turn_miss_func_50",
])
def test_concurrent_episodes_of_one_entry_do_not_interfere(entry_id):
    threads_count = 8
    dataset().entry(entry_id)  # the Dataset's lazy index is built once, before the threads
    barrier = threading.Barrier(threads_count)
    out: dict = {}
    threads = [threading.Thread(target=_run_policy, args=(entry_id, key == 3, barrier, out, key))
               for key in range(threads_count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not [value for value in out.values() if isinstance(value, BaseException)], out
    assert len(out) == threads_count
    # The same policy played alone, for comparison.
    alone: dict = {}
    _run_policy(entry_id, False, threading.Barrier(1), alone, 0)
    for key, (verdicts, state, result) in out.items():
        if key == 3:
            record = _score(entry_id, result)
            assert verdicts[-1]["valid"] is False and record["valid"] is False
            assert verdicts[-1]["error_type"] == record["error"]["error_type"]
        else:
            assert all(v["valid"] for v in verdicts), (key, verdicts)
            assert (verdicts, state, result) == alone[0]


def test_tools_are_built_once_per_tool_set_and_kept_out_of_the_state():
    import pickle

    from bfcl_safe.checker.openai_format import tools_for_turn

    episode = Episode.from_entry("multi_turn_miss_func_0", dataset())
    held = min(int(turn) for turn in episode.prompt["missed_function"])
    first = episode.tools(format="openai", shared=True)
    assert episode.tools(format="openai", shared=True) is first  # the same list while the tools stay the same
    copy_ = episode.tools(format="openai")
    assert copy_ == first and copy_ is not first
    copy_[0]["function"]["name"] = "changed"
    assert episode.tools(format="openai", shared=True)[0]["function"]["name"] != "changed"
    for turn in range(episode.turn_count):
        for fmt, style in (("openai", "openai-completions"), ("openai-responses", "openai-responses")):
            assert episode.tools(turn, format=fmt) == tools_for_turn(episode.prompt, turn, style=style)
    assert episode.tools(held, format="openai", shared=True) is not first  # held-out tools appeared
    assert len(episode.tools(held, format="openai")) > len(first)
    # Not part of the episode's state: pickles and snapshots are as without it.
    fresh = Episode.from_entry("multi_turn_miss_func_0", dataset())
    assert len(pickle.dumps(episode)) == len(pickle.dumps(fresh))
    assert set(episode.snapshot().state) == set(fresh.snapshot().state)


CHILD_MPMATH = """
import sys
from bfcl_safe import Dataset
from bfcl_safe.checker.play import Episode
ds = Dataset.open(sys.argv[1])
entries = [e for e in ds.entries("multi_turn_base")]
plain = next(e["id"] for e in entries if "MathAPI" not in e["involved_classes"])
math = next(e["id"] for e in entries if "MathAPI" in e["involved_classes"])
Episode.from_entry(plain, ds)
before = "mpmath" in sys.modules
Episode.from_entry(math, ds)
print(before, "mpmath" in sys.modules)
"""


def test_mpmath_is_imported_when_an_episode_with_mathapi_is_created():
    import subprocess
    import sys

    from tests.refenv import ROOT, wheel

    out = subprocess.run([sys.executable, "-c", CHILD_MPMATH, str(wheel())], capture_output=True, text=True,
                         timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["False", "True"]
