"""The play API as RL and eval frameworks use it (issue 17.1, 14.7): OpenAI tool calls
and assistant messages as steps, typed step results with BFCL's tool messages, per-turn
rewards, pickling, snapshot/restore, and hostile steps raising only documented errors."""

from __future__ import annotations

import copy
import json
import pickle
from functools import lru_cache
from types import SimpleNamespace

import pytest
from hypothesis import given, strategies as st

from bfcl_safe.checker.play import (
    CallResult, Episode, EpisodeLimitError, EpisodeOverError, Snapshot, StepRefused, StepResult, TurnEnd,
    TurnOverError,
)
from bfcl_safe.checker.replay import ground_truth_as_fc, ground_truth_calls
from bfcl_safe.checker.verdict import ErrorType, Verdict, evaluate_entry
from bfcl_safe.interp.budget import Budget
from bfcl_safe.interp.errors import BfclSafeError
from bfcl_safe.interp.limits import MAX_RESULT_LINE_DEPTH
from tests.checker_support import dataset

ENTRIES = ("multi_turn_base_0", "multi_turn_miss_func_0", "multi_turn_miss_param_3", "multi_turn_long_context_1",
           "multi_turn_base_150")


@lru_cache(maxsize=None)
def _fresh_bytes(entry_id: str) -> bytes:
    return pickle.dumps(Episode.from_entry(entry_id, dataset()))


def _fresh(entry_id: str) -> Episode:
    """A new episode of ``entry_id`` (unpickled: also checks that pickles start cleanly)."""
    return pickle.loads(_fresh_bytes(entry_id))


def _tool_calls(calls: list[tuple[str, dict]], prefix: str = "call") -> list[dict]:
    return [{"id": f"{prefix}_{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for n, (name, args) in enumerate(calls)]


def _score(entry_id: str, result: list) -> dict:
    ds = dataset()
    return evaluate_entry(ds.entry(entry_id), result, ds.ground_truth_for(entry_id), model_name="m",
                          test_category=entry_id.rsplit("_", 1)[0], decoder="fc",
                          long_context_data=ds.long_context_data)


# --------------------------------------------------------------------------- OpenAI input


@pytest.mark.parametrize("form", ["tool_calls-list", "message-dict", "sdk-object"])
def test_openai_steps_run_and_return_bfcls_tool_messages(form):
    episode = _fresh("multi_turn_base_0")
    calls = _tool_calls([("cd", {"folder": "document"}), ("ls", {})])
    given_step = {
        "tool_calls-list": calls,
        "message-dict": {"role": "assistant", "content": None, "tool_calls": calls},
        "sdk-object": SimpleNamespace(role="assistant", content=None, tool_calls=[
            SimpleNamespace(id=c["id"], type="function", function=SimpleNamespace(**c["function"])) for c in calls]),
    }[form]
    result = episode.step(given_step)
    assert isinstance(result, StepResult) and result.ended is None and not result.turn_over
    assert [c.call for c in result.calls] == ["cd(folder='document')", "ls()"]
    assert [c.tool_call_id for c in result.calls] == ["call_0", "call_1"]
    assert result.results[0] == '{"current_working_directory": "document"}'
    assert list(result.messages) == [{"role": "tool", "content": r, "tool_call_id": f"call_{n}"}
                                     for n, r in enumerate(result.results)]
    # Stored as BFCL's FC handler stores the reply in the result file.
    assert episode.result() == [[[{"cd": '{"folder": "document"}'}, {"ls": "{}"}]]]


def test_a_reply_without_tool_calls_ends_the_turn_with_its_text_stored():
    episode = _fresh("multi_turn_base_0")
    result = episode.step({"role": "assistant", "content": "All done.", "tool_calls": None})
    assert result.turn_over and result.ended is TurnEnd.UNDECODABLE and result.decode_error
    assert episode.result() == [["All done."]]
    # An empty reply text decodes to no call.
    episode = _fresh("multi_turn_base_0")
    assert episode.step({"role": "assistant", "content": ""}).ended is TurnEnd.NO_CALLS


def test_prompting_steps_return_bfcls_user_message():
    episode = _fresh("multi_turn_base_0")
    result = episode.step("[cd(folder='document'), ls()]")
    expected = repr([{"role": "tool", "name": c.call, "content": c.result} for c in result.calls])
    assert result.messages == ({"role": "user", "content": expected},)


def test_tools_openai_is_the_converters_list_for_the_turn():
    from bfcl_safe.checker.openai_format import tools_for_turn

    episode = _fresh("multi_turn_miss_func_0")
    prompt = dataset().prompt_entry("multi_turn_miss_func_0")
    for turn in range(episode.turn_count):
        assert episode.tools(turn, format="openai") == tools_for_turn(prompt, turn)
        assert episode.tools(turn, format="openai-responses") == tools_for_turn(prompt, turn, style="openai-responses")
    assert episode.tools(format="openai")[0]["type"] == "function"


# --------------------------------------------------------------------------- rewards


def test_turn_outcome_is_this_turns_check_in_isolation_and_the_official_verdict():
    entry_id = "multi_turn_base_0"
    truth = dataset().ground_truth_for(entry_id)
    involved = dataset().entry(entry_id)["involved_classes"]
    turns = ground_truth_calls(truth, involved)
    episode = _fresh(entry_id)
    # Turn 0: no call at all (the ground truth has some): fails, officially too.
    episode.step([])
    first = episode.end_turn()
    assert (first.turn, first.passed, first.reward) == (0, False, 0.0)
    assert first.failure.error_type is ErrorType.EMPTY_TURN and first.verdict.error_type is ErrorType.EMPTY_TURN
    # Turn 1 played right, after turn 0's calls made up: passes in isolation, while the
    # official verdict stays the first failure (turn 0).
    episode.step(_tool_calls(turns[0] + turns[1]))
    episode.step([])
    second = episode.end_turn()
    assert (second.turn, second.passed, second.reward, second.failure) == (1, True, 1.0, None)
    assert second.verdict.failing_turn == 0 and second.verdict.turns_passed == 0
    assert second.verdict.error_type == ErrorType.EMPTY_TURN


def test_verdicts_are_frozen_and_typed():
    episode = _fresh("multi_turn_base_0")
    verdict = episode.check_turn()
    assert isinstance(verdict, Verdict) and verdict.error_type is ErrorType.EMPTY_TURN
    assert verdict.error_type == "multi_turn:empty_turn_model_response" and verdict.error_type.official
    with pytest.raises(AttributeError):
        verdict.valid = True  # type: ignore[misc]


def test_a_state_mismatch_names_its_backend_class():
    episode = _fresh("multi_turn_base_0")
    episode.step([{"mkdir": {"dir_name": "intruder"}}])
    verdict = episode.check_turn()
    assert verdict.error_type is ErrorType.STATE_MISMATCH and verdict.backend_class == "GorillaFileSystem"


# --------------------------------------------------------------------------- copies


def _actions(entry_id: str) -> list:
    """Steps a rollout may take: the ground truth's calls one by one, wrong calls, text."""
    truth = dataset().ground_truth_for(entry_id)
    involved = dataset().entry(entry_id)["involved_classes"]
    calls = [call for turn in ground_truth_calls(truth, involved) for call in turn]
    steps = [_tool_calls([call], "gt") for call in calls]
    steps += [[{"mkdir": {"dir_name": "x"}}], [{"ls": "{}"}], [{"cd": {"folder": "nowhere"}}], "[pwd()]", "",
              [{"touch": {"file_name": "a.txt"}}, {"echo": {"content": "hi", "file_name": "a.txt"}}], "next_turn"]
    return steps


def _rollout(episode: Episode, actions: list) -> list:
    """Play ``actions`` ("next_turn" moves on); everything observable, as plain data."""
    seen = []
    for action in actions:
        if episode.done:
            break
        if action == "next_turn" or episode.turn_over:
            seen.append(("outcome", episode.end_turn().passed))
            continue
        step = episode.step(action)
        seen.append(("step", step.results, step.messages, step.ended))
    seen.append(("verdict", episode.check_turn().summary(), episode.state(), episode.result()))
    return seen


@st.composite
def _plays(draw):
    entry_id = draw(st.sampled_from(ENTRIES))
    actions = _actions(entry_id)
    pick = st.lists(st.sampled_from(actions), max_size=12)
    return entry_id, draw(pick), draw(pick)


@given(_plays())
def test_snapshot_restore_and_pickle_continue_identically(play):
    entry_id, prefix, rest = play
    episode = _fresh(entry_id)
    _rollout(episode, prefix)
    snapshot = episode.snapshot()
    pickled = pickle.dumps(episode)
    first = _rollout(episode, rest)
    episode.restore(snapshot)
    assert _rollout(episode, rest) == first
    episode.restore(snapshot)  # a snapshot restores any number of times
    assert _rollout(episode, rest) == first
    assert _rollout(pickle.loads(pickled), rest) == first


@pytest.mark.parametrize("entry", ["multi_turn_base_9999", "simple_0", 42, {"id": "multi_turn_base_0"}, None],
                         ids=["unknown-id", "other-category", "int", "partial-entry", "none"])
def test_from_entry_refuses_what_is_not_an_entry(entry):
    with pytest.raises(BfclSafeError) as info:
        Episode.from_entry(entry, dataset())
    assert info.value.name == "entry"


def test_restore_refuses_a_foreign_snapshot():
    episode = _fresh("multi_turn_base_0")
    with pytest.raises(BfclSafeError, match="not a snapshot"):
        episode.restore(_fresh("multi_turn_base_150").snapshot())
    with pytest.raises(BfclSafeError):
        episode.restore("x")  # type: ignore[arg-type]
    assert isinstance(episode.snapshot(), Snapshot)


def test_a_played_episode_scores_like_its_result_after_pickling():
    entry_id = "multi_turn_miss_param_3"
    truth = dataset().ground_truth_for(entry_id)
    turns = ground_truth_as_fc(truth, dataset().entry(entry_id)["involved_classes"])
    episode = _fresh(entry_id)
    for steps in turns:
        episode = pickle.loads(pickle.dumps(episode))  # e.g. across a Ray actor boundary per turn
        for step in steps:
            if not episode.turn_over:
                episode.step(step)
        episode.next_turn()
    assert episode.done and episode.check_turn().valid and _score(entry_id, episode.result()) == {"valid": True}


# --------------------------------------------------------------------------- budgets and hostile input


def test_a_budget_overrun_ends_the_episode_with_the_resource_limit_type():
    episode = _fresh("multi_turn_base_0")
    episode.budget = Budget({**episode.budget.limits, "state_items": 3})
    results = [episode.step([{"mkdir": {"dir_name": f"d{n}"}}]) for n in range(2)]
    while not results[-1].done:
        results.append(episode.step([{"mkdir": {"dir_name": f"e{len(results)}"}}]))
    assert results[-1].ended is TurnEnd.RESOURCE_LIMIT and episode.done
    verdict = episode.check_turn()
    assert verdict.error_type is ErrorType.RESOURCE_LIMIT and verdict.details["budget"] == "state_items"
    with pytest.raises(EpisodeOverError):
        episode.step([])


def _nested(depth: int):
    value: object = {"ls": "{}"}
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("depth", [MAX_RESULT_LINE_DEPTH, 5_000, 100_000])
def test_deep_steps_are_refused_before_anything_copies_them(depth):
    episode = _fresh("multi_turn_base_0")
    with pytest.raises(StepRefused) as info:
        episode.step(_nested(depth))
    assert info.value.limit == MAX_RESULT_LINE_DEPTH
    assert episode.result() == [[]] and not episode.turn_over


def test_a_state_nested_by_the_model_is_a_clean_error_or_a_verdict():
    """``echo(content=cat(...))`` nests file content one level per call: ``state()`` and
    the checks give an EpisodeError (with data) or a verdict, never RecursionError."""
    episode = _fresh("multi_turn_base_0")
    episode.step([{"touch": {"file_name": "f"}}])
    step = "[echo(content=cat(file_name='f'), file_name='f')]"
    for _ in range(400):
        if episode.turn_over:
            episode.next_turn()
        if episode.done:
            break
        episode.step(step)
    try:
        episode.state()
    except EpisodeLimitError as exc:
        assert exc.operation == "state"
    assert isinstance(episode.check_turn(), Verdict)


class _Hostile:
    """An object whose public attributes raise (an SDK object gone wrong)."""

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        raise RuntimeError(name)

    def __repr__(self):
        return "_Hostile()"


_leaves = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=40),
    st.sampled_from(["ls()", "[cd(folder='..')]", "{}", '{"folder": 1}', "[" * 50, "__import__('os')",
                     "echo(content='x' * 10 ** 9)", "\x1b]0;x\x07"]),
    st.builds(object), st.just(_Hostile()), st.binary(max_size=8), st.just(float("nan")),
)
_json_like = st.recursive(
    _leaves,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.tuples(children, children),
        st.dictionaries(st.one_of(st.text(max_size=10), st.sampled_from(["ls", "cd", "function", "tool_calls",
                                                                          "role", "content", "id", "name",
                                                                          "arguments"])), children, max_size=4),
        st.dictionaries(st.integers(), children, max_size=2), st.sets(st.integers(), max_size=3),
    ),
    max_leaves=20,
)


@st.composite
def _hostile_steps(draw):
    kind = draw(st.sampled_from(["json", "openai", "message", "deep", "sdk"]))
    if kind == "json":
        return draw(_json_like)
    if kind == "openai":
        return [{"id": draw(_json_like), "type": "function",
                 "function": {"name": draw(st.one_of(st.sampled_from(["ls", "cd", "mkdir", "echo"]), _json_like)),
                              "arguments": draw(st.one_of(st.sampled_from(["{}", '{"folder": "x"}']), _json_like))}}]
    if kind == "message":
        return {"role": "assistant", "content": draw(_json_like), "tool_calls": draw(_json_like)}
    if kind == "sdk":
        return SimpleNamespace(content=draw(_json_like), tool_calls=draw(st.one_of(_json_like, st.just(_Hostile()))))
    return _nested(draw(st.integers(MAX_RESULT_LINE_DEPTH - 2, MAX_RESULT_LINE_DEPTH + 50)))


@given(st.sampled_from(ENTRIES[:3]), st.lists(st.one_of(_hostile_steps(), st.just("next_turn")), max_size=8))
def test_hostile_steps_raise_only_documented_errors(entry_id, steps):
    episode = _fresh(entry_id)
    for step in steps:
        try:
            if step == "next_turn":
                episode.end_turn()
            else:
                result = episode.step(step)
                assert isinstance(result, StepResult) and all(isinstance(c, CallResult) for c in result.calls)
                json.dumps(list(result.messages))
        except (TurnOverError, EpisodeOverError):
            episode.next_turn()
        except BfclSafeError:
            pass
        for view in (episode.check_turn, episode.turn_outcome, episode.state, episode.snapshot,
                     lambda: episode.tools(format="openai"), episode.messages, episode.result):
            try:
                view()
            except BfclSafeError:
                pass
    pickle.loads(pickle.dumps(episode)).check_turn()
    copy.deepcopy(episode.result())
