"""Every public method of the play API and the chat layer validates its arguments (issue 25
item 7): arbitrary nested Python values — dates, sets, bytes, objects, 3,000-deep
nesting, huge strings, entries with fields of the wrong types, foreign or reshaped
snapshots — make them raise only bfcl-safe's documented errors (the EpisodeError family),
never AttributeError/TypeError/KeyError/RecursionError, and the episode stays usable:
its views, a snapshot and a pickle still work or refuse with those errors."""

from __future__ import annotations

import asyncio
import copy
import datetime
import decimal
import pickle
from functools import lru_cache
from types import SimpleNamespace
from typing import Any, Callable

import pytest
from hypothesis import given, strategies as st

from bfcl_safe.checker.episode import EpisodeError
from bfcl_safe.checker.play import ArgumentError, Episode, Snapshot
from bfcl_safe.integrations.session import Conversation, chosen_categories
from tests.checker_support import dataset

ENTRY_ID = "multi_turn_base_0"


def _nested(depth: int, kind: str = "list") -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value] if kind == "list" else {"a": value}
    return value


_leaves = st.one_of(
    st.none(), st.booleans(), st.integers(), 
    st.floats(), st.text(max_size=20), st.binary(max_size=8), st.dates(), st.datetimes(), st.times(),
    st.decimals(allow_nan=True), st.complex_numbers(), st.builds(object),
    st.sampled_from(["x" * 1_000_000, "multi_turn_base_0", "openai", "bfcl", "fc", "prompting", "\x1b]0;x\x07"]),
)
_values = st.recursive(
    _leaves,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.tuples(children, children),
        st.dictionaries(st.one_of(st.text(max_size=8), st.sampled_from(
            ["id", "question", "role", "content", "tool_calls", "function", "name", "arguments", "type", "output",
             "call_id", "object"])), children, max_size=3),
        st.dictionaries(st.one_of(st.integers(), st.dates(), st.tuples(st.integers())), children, max_size=2),
        st.sets(st.one_of(st.integers(), st.text(max_size=4)), max_size=3), st.frozensets(st.integers(), max_size=2),
        st.builds(SimpleNamespace, tool_calls=children, content=children),
    ),
    max_leaves=12,
)
#: Arbitrary values, and the ones named in the issue: a 3,000-deep nesting, a set, a date.
VALUES = st.one_of(_values, st.sampled_from([_nested(3000), _nested(3000, "dict"), {"a", "b"},
                                             datetime.date(2024, 1, 1), b"\xff" * 10]))


@lru_cache(maxsize=None)
def _fresh_bytes() -> bytes:
    return pickle.dumps(Episode.from_entry(ENTRY_ID, dataset()))


def _fresh() -> Episode:
    return pickle.loads(_fresh_bytes())


def _documented(work: Callable[[], Any]) -> Any:
    """Run ``work``; an exception other than the EpisodeError family fails the test."""
    try:
        return work()
    except EpisodeError:
        return None


def _still_usable(episode: Episode) -> None:
    for view in (episode.state, episode.result, episode.check_turn, episode.turn_outcome, episode.snapshot,
                 episode.messages, lambda: episode.tools(format="openai"), lambda: pickle.dumps(episode),
                 lambda: repr(episode)):
        _documented(view)


def _entry_with(field: str, value: Any) -> dict:
    entry = copy.deepcopy(dataset().entry(ENTRY_ID))
    if field == "-":
        return value
    if value is KeyError:
        entry.pop(field, None)
    else:
        entry[field] = value
    return entry


ENTRY_FIELDS = ["id", "question", "involved_classes", "initial_config", "-"]


@given(st.sampled_from(ENTRY_FIELDS), st.one_of(VALUES, st.just(KeyError)), VALUES)
def test_from_entry_and_the_constructor(field, value, other):
    ds = dataset()
    entry = _entry_with(field, value)
    for make in (lambda: Episode.from_entry(entry, ds), lambda: Episode.from_entry(value, ds),
                 lambda: Episode.from_entry(ENTRY_ID, other), lambda: Episode.from_entry(ENTRY_ID, ds, owner=other)):
        episode = _documented(make)
        if episode is not None:
            _still_usable(episode)
    good = _fresh()
    parts = {"entry": good.entry, "prompt": good.prompt, "ground_truth": good.ground_truth, "model": good.model,
             "truth": good.truth}
    for name in parts:
        episode = _documented(lambda: Episode(**{**parts, name: other}))
        if episode is not None:
            _still_usable(episode)


def test_a_question_nested_3000_levels_is_refused_up_front():
    for field in ("question", "initial_config"):
        entry = _entry_with(field, [[{"role": "user", "content": _nested(3000)}]] if field == "question"
                            else {"GorillaFileSystem": _nested(3000, "dict")})
        with pytest.raises(ArgumentError, match="nested deeper"):
            Episode.from_entry(entry, dataset())


@pytest.mark.parametrize(("field", "value", "message"), [
    ("id", 5, "id is not a str"),
    ("question", "hello", "question is not a list of turns"),
    ("question", [[{"role": "user", "content": 5}]], "question message"),
    ("question", [[]], "question has 1 turns"),
    ("involved_classes", ["os"], "'os' is not a backend class"),
    ("involved_classes", "GorillaFileSystem", "involved_classes is not a list"),
    ("initial_config", {"GorillaFileSystem": 5}, "initial_config is not"),
    ("initial_config", {"GorillaFileSystem": {"root": 5}}, "initial_config does not load"),
    ("question", [[{"role": "user", "content": datetime.date(2024, 1, 1)}]], "date is not JSON data"),
], ids=["id-int", "question-str", "content-int", "turn-count", "unknown-class", "classes-str", "config-int",
        "config-unloadable", "content-date"])
def test_entries_of_the_wrong_shape_say_what(field, value, message):
    with pytest.raises(ArgumentError, match=message) as info:
        Episode.from_entry(_entry_with(field, value), dataset())
    assert info.value.name == "entry"


def _play_with(value: Any, other: Any) -> None:
    episode = _fresh()
    for call in (lambda: episode.messages(value), lambda: episode.messages(mode=value),
                 lambda: episode.tools(value), lambda: episode.tools(format=value),
                 lambda: episode.tools(format="openai", shared=value), lambda: episode.step(value),
                 lambda: episode.step(value, decoder=other),
                 lambda: episode.step({"role": "assistant", "content": other, "tool_calls": [
                     {"id": value, "type": "function", "function": {"name": "ls", "arguments": other}}]}),
                 lambda: episode.step([{"type": "function_call", "call_id": value, "name": "cd", "arguments": other}]),
                 lambda: episode.step({"object": "response", "output": value}),
                 lambda: asyncio.run(episode.astep(value)), lambda: episode.restore(value)):
        _documented(call)
        if episode.turn_over and not episode.done:
            episode.next_turn()
    _still_usable(episode)


@given(VALUES, VALUES)
def test_views_and_steps(value, other):
    _play_with(value, other)


# (Not drawn by Hypothesis: it cannot show an int past str()'s digit limit.)
@pytest.mark.parametrize("value", [10 ** 5000, -(10 ** 5000), [10 ** 5000], {"folder": 10 ** 5000}],
                         ids=["int", "negative", "in-list", "in-dict"])
def test_ints_too_long_to_show(value):
    _play_with(value, value)
    _play_with("openai", value)
    with pytest.raises(ArgumentError):
        Episode.from_entry(_entry_with("question", [[{"role": "user", "content": value}]]), dataset())


@given(st.sampled_from(["_turn", "_raw", "_decoded", "_results", "_all_results", "_truth_results", "_closed",
                        "_failure", "_abort", "model", "entry", "ground_truth", "budget", "_done", "-", "+"]), VALUES)
def test_restore_refuses_what_is_not_a_snapshot_of_this_entry(key, value):
    episode = _fresh()
    episode.step([{"ls": "{}"}])
    state = dict(episode.snapshot().state)
    if key == "-":
        state.pop("_raw")
    elif key == "+":
        state["extra"] = value
    else:
        state[key] = value
    for make in (lambda: Snapshot(ENTRY_ID, state), lambda: Snapshot(value, state), lambda: Snapshot(ENTRY_ID, value),
                 lambda: value):
        snapshot = _documented(make)
        _documented(lambda: episode.restore(snapshot))
        _still_usable(episode)
        _documented(lambda: episode.step([{"ls": "{}"}]))
        if episode.turn_over:
            _documented(episode.end_turn)


@pytest.mark.parametrize("other", ["multi_turn_base_1", "multi_turn_long_context_1"])
def test_a_snapshot_of_another_entry_or_shape_is_an_argument_error(other):
    episode = _fresh()
    foreign = Episode.from_entry(other, dataset()).snapshot()
    with pytest.raises(ArgumentError, match="not a snapshot of multi_turn_base_0"):
        episode.restore(foreign)
    with pytest.raises(ArgumentError, match="not a snapshot of multi_turn_base_0: it is of another entry"):
        episode.restore(Snapshot(ENTRY_ID, {**foreign.state}))
    with pytest.raises(ArgumentError, match="its fields are not an episode's"):
        episode.restore(Snapshot(ENTRY_ID, {}))
    with pytest.raises(ArgumentError, match="state must be a dict"):
        Snapshot(ENTRY_ID, [])


@given(VALUES)
def test_the_conversation_layer(value):
    conversation = Conversation(_fresh())
    for call in (lambda: Conversation(value), lambda: Conversation.from_entry(value, dataset()),
                 lambda: conversation.reply(value), lambda: conversation.tools(value),
                 lambda: conversation.reward(value), lambda: chosen_categories(value)):
        _documented(call)
    _documented(conversation.summary)
    _still_usable(conversation.episode)


@pytest.mark.parametrize("value", [datetime.date(2024, 1, 1), {"a", "b"}, b"bytes", decimal.Decimal(1),
                                   _nested(3000)], ids=["date", "set", "bytes", "decimal", "deep"])
def test_non_json_values_in_a_step_are_refused_and_nothing_runs(value):
    episode = _fresh()
    with pytest.raises(EpisodeError):
        episode.step({"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "cd", "arguments": {"folder": value}}}]})
    assert episode.result() == [[]] and not episode.turn_over
    assert episode.step([{"ls": "{}"}]).results


CHILD = """
import datetime, json, pickle, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
from bfcl_safe import Dataset
from bfcl_safe.checker.episode import EpisodeError
from bfcl_safe.checker.play import Episode, Snapshot

ds = Dataset.open(sys.argv[1])
deep = "x"
for _ in range(3000):
    deep = [deep]
entry = dict(ds.entry("multi_turn_base_0"))
seen = []
def attempt(name, work):
    try:
        work()
        seen.append([name, "ok"])
    except EpisodeError as exc:
        seen.append([name, type(exc).__name__])
attempt("deep-question", lambda: Episode.from_entry({**entry, "question": [[{"role": "user", "content": deep}]]}, ds))
deep_config = {"GorillaFileSystem": {"root": deep}}
attempt("deep-config", lambda: Episode.from_entry({**entry, "initial_config": deep_config}, ds))
attempt("fields", lambda: Episode.from_entry({**entry, "involved_classes": {"a": 1}}, ds))
ep = Episode.from_entry("multi_turn_base_0", ds)
other = Episode.from_entry("multi_turn_base_1", ds).snapshot()
attempt("restore-foreign", lambda: ep.restore(Snapshot("multi_turn_base_0", other.state)))
attempt("step-date", lambda: ep.step([{"cd": {"folder": datetime.date(2024, 1, 1)}}]))
attempt("step-deep", lambda: ep.step([{"cd": {"folder": deep}}]))
attempt("messages", ep.messages)
attempt("pickle", lambda: pickle.loads(pickle.dumps(ep)).check_turn())
print(json.dumps(seen))
"""


def test_hostile_arguments_in_a_child_under_limits():
    import json
    import subprocess
    import sys

    from tests.refenv import ROOT, wheel

    out = subprocess.run([sys.executable, "-c", CHILD, str(wheel())], capture_output=True, text=True, timeout=120,
                         cwd=ROOT)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert json.loads(out.stdout) == [
        ["deep-question", "ArgumentError"], ["deep-config", "ArgumentError"], ["fields", "ArgumentError"],
        ["restore-foreign", "ArgumentError"], ["step-date", "StepInputError"], ["step-deep", "StepRefused"],
        ["messages", "ok"], ["pickle", "ok"]]
