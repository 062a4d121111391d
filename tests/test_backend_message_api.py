"""Differential tests of backends.message_api.MessageAPI against the reference."""

from __future__ import annotations

import copy
import inspect
import json

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from bfcl_safe.backends.message_api import MessageAPI
from tests.backend_harness import (
    assert_same_signatures,
    assert_same_state,
    assert_same_tool_set,
    call,
    dataset,
    long_context_data,
    make_ours,
    make_reference,
    reference_public_methods,
    reference_state,
    replay_ground_truth,
)

CLASS = "MessageAPI"


# --------------------------------------------------------------------------- helpers


def run_both(config: dict, calls: list[tuple], long_context: bool = False):
    """Make every call on ours and on the reference; assert equal results and state
    after each; return (ours, reference, results)."""
    ours = make_ours(CLASS, config, long_context=long_context)
    ref = make_reference(CLASS, config, long_context=long_context)
    assert_same_state(ours, ref, "after load")
    results = []
    for name, args, kwargs in calls:
        got, expected = call(ours, name, args, kwargs), call(ref, name, args, kwargs)
        assert got == expected, f"{name}{args}{kwargs}: ours {got!r} != ref {expected!r}"
        assert_same_state(ours, ref, f"{name}{args}{kwargs}")
        results.append(got)
    return ours, ref, results


def c(name: str, *args, **kwargs) -> tuple:
    return (name, args, kwargs)


# --------------------------------------------------------------------------- tool set and ground truth


def test_same_tool_set():
    assert_same_tool_set(CLASS)


def test_signatures_identical():
    assert_same_signatures(CLASS)


def test_replay_ground_truth():
    n = replay_ground_truth({CLASS})
    print(f"{CLASS}: {n} ground-truth calls compared (all categories)")
    assert n > 0


def test_replay_ground_truth_long_context():
    n = replay_ground_truth({CLASS}, long_context_only=True)
    print(f"{CLASS}: {n} ground-truth calls compared (long_context category)")
    assert n > 0


# --------------------------------------------------------------------------- targeted quirks

INBOX_DUP = [{"USR002": "hi"}, {"USR003": "x"}, {"USR002": "hi"}]
LOGGED_IN = {"current_user": "USR001"}

QUIRK_CASES = {
    "default-state": ({}, [c("list_users"), c("message_get_login_status"), c("view_messages_sent")]),
    "not-logged-in-everywhere": (
        {},
        [c("send_message", "USR002", "x"), c("delete_message", "USR002"), c("view_messages_sent"),
         c("search_messages", "x"), c("get_message_stats")],
    ),
    "message-id-is-a-dict": (LOGGED_IN, [c("send_message", receiver_id="USR002", message="hello")]),
    "random-seed-from-config": (
        {**LOGGED_IN, "random_seed": 7},
        [c("send_message", "USR002", "a"), c("send_message", "USR003", "b")],
    ),
    "delete-removes-first-equal-duplicate": (
        {**LOGGED_IN, "inbox": INBOX_DUP},
        [c("delete_message", "USR002"), c("view_messages_sent")],
    ),
    "delete-unknown-receiver": ({**LOGGED_IN, "inbox": INBOX_DUP}, [c("delete_message", "USR999")]),
    "view-lists-every-message": ({**LOGGED_IN, "inbox": INBOX_DUP}, [c("view_messages_sent")]),
    "stats-count-all-messages": ({**LOGGED_IN, "inbox": INBOX_DUP}, [c("get_message_stats")]),
    "add-contact-bumps-count-on-taken-id": (
        {"user_map": {"Alice": "USR001", "Eve": "USR005"}, "user_count": 4},
        [c("add_contact", "Zed"), c("add_contact", "Zed"), c("add_contact", "Alice"), c("list_users")],
    ),
    "search-list-content-raises": (
        {**LOGGED_IN, "inbox": [{"USR002": ["Meeting at 3 PM"]}]},
        [c("search_messages", "meeting")],
    ),
    "search-is-case-insensitive": ({**LOGGED_IN}, [c("search_messages", "UPLOAD")]),
    "search-non-str-keyword": ({**LOGGED_IN}, [c("search_messages", 5), c("search_messages", None)]),
    "unhashable-user": ({}, [c("get_user_id", ["Alice"]), c("add_contact", {"a": 1})]),
    "login-wrong-types": ({}, [c("message_login", None), c("message_login", 1), c("message_login", ["USR001"])]),
    "login-then-status": ({}, [c("message_login", "USR002"), c("message_get_login_status")]),
    "empty-current-user-is-logged-out": ({"current_user": ""}, [c("send_message", "USR002", "x")]),
    "send-to-unknown-and-list": (
        LOGGED_IN, [c("send_message", "USR009", "x"), c("send_message", ["USR002"], "x")]
    ),
    "send-any-message-type": (LOGGED_IN, [c("send_message", "USR002", None), c("search_messages", "x")]),
    "wrong-arity": (
        {},
        [c("list_users", 1), c("get_user_id"), c("get_user_id", user="Alice", x=1),
         c("send_message", "USR002"), c("send_message", "a", "b", "c"), c("get_user_id", "Bob", user="Bob")],
    ),
    "generated-ids-as-set-collision": (
        {**LOGGED_IN, "generated_ids": {MessageAPI.from_config({})._random.randint(10000, 99999)}},
        [c("send_message", "USR002", "x")],
    ),
    "generated-ids-as-list-breaks-send": (
        {**LOGGED_IN, "generated_ids": []},
        [c("send_message", "USR002", "x"), c("view_messages_sent")],
    ),
    "empty-inbox-entry-raises": ({**LOGGED_IN, "inbox": [{}]}, [c("view_messages_sent"), c("delete_message", "x")]),
}


@pytest.mark.parametrize("config,calls", list(QUIRK_CASES.values()), ids=list(QUIRK_CASES))
def test_quirk_matches_reference(config, calls):
    run_both(config, calls)
    run_both(config, calls, long_context=True)


def test_message_id_shape_and_first_duplicate_removal():
    _, _, results = run_both(LOGGED_IN, [c("send_message", "USR002", "hello")])
    assert set(json.loads(results[0])["message_id"]) == {"new_id"}
    ours, _, _ = run_both({**LOGGED_IN, "inbox": INBOX_DUP}, [c("delete_message", "USR002")])
    assert ours.inbox == [{"USR003": "x"}, {"USR002": "hi"}]


def test_add_contact_count_goes_up_on_failure():
    ours, _, results = run_both({"user_map": {"Eve": "USR005"}, "user_count": 4}, [c("add_contact", "Zed")])
    assert results == ['{"error": "User ID \'USR005\' already exists."}']
    assert ours.user_count == 5


def test_wrong_arity_message():
    _, _, results = run_both({}, [c("get_user_id", user="Alice", x=1)])
    assert results == ["Error during execution: MessageAPI.get_user_id() got an unexpected keyword argument 'x'"]


def test_config_not_mutated():
    config = {"inbox": [{"USR002": "hi"}], "user_map": {"A": "USR001"}, "current_user": "USR001",
              "generated_ids": {1}}
    before = copy.deepcopy(config)
    ours = MessageAPI.from_config(config)
    ours.send_message("USR001", "x")
    ours.add_contact("B")
    assert config == before


def test_long_context_needs_data():
    with pytest.raises(ValueError, match="long_context_data"):
        MessageAPI.from_config({}, long_context=True)
    MessageAPI.from_config({}, long_context=True, long_context_data=long_context_data())


# --------------------------------------------------------------------------- stateful differential fuzzing

TOOLS = tuple(sorted(reference_public_methods(make_reference(CLASS, {}))))
PARAMS = {
    name: [p for p in inspect.signature(getattr(MessageAPI, name)).parameters if p != "self"] for name in TOOLS
}


@st.composite
def junk(draw):
    """Values of the wrong type or odd values of the right type."""
    return draw(
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(-3, 100001),
            st.floats(allow_infinity=True, allow_nan=True),
            st.sampled_from(["", " ", "USR", "usr001", "0"]),
            st.text(max_size=6),
            st.lists(st.sampled_from(["USR001", "Alice", "", "x"]), max_size=3),
            st.dictionaries(st.sampled_from(["USR002", "a"]), st.integers(0, 3), max_size=2),
        )
    )


@st.composite
def configs(draw):
    entries = [e for e, _ in dataset() if CLASS in e["involved_classes"]]
    entry = draw(st.sampled_from(entries))
    config = copy.deepcopy(entry["initial_config"].get(CLASS, {}))
    if draw(st.integers(0, 4)) == 0:
        config["random_seed"] = draw(st.integers(0, 10**6))
    return config


def _inbox_parts(state: dict) -> tuple[list, list]:
    receivers, contents = [], []
    for message in state["inbox"]:
        for receiver, content in message.items():
            receivers.append(receiver)
            contents.append(content)
    return receivers, contents


@st.composite
def argument(draw, param: str, state: dict):
    """A value for ``param``, drawn mostly from the reference's current state."""
    names = list(state["user_map"])
    ids = list(state["user_map"].values())
    receivers, contents = _inbox_parts(state)
    known = {
        "user": names,
        "user_name": names,
        "user_id": ids + receivers,
        "receiver_id": ids + receivers,
        "message": contents,
        "keyword": [
            text[i:j] for text in contents if isinstance(text, str) for i, j in [(0, 4), (3, 9), (0, 0)]
        ],
    }[param]
    choices = [junk(), st.text(max_size=12)]
    if known:
        choices = [st.sampled_from(known)] * 3 + choices
    if param in ("user_id", "receiver_id"):
        choices.append(st.integers(1, 12).map(lambda n: f"USR{n:03d}"))
    return draw(st.one_of(choices))


@st.composite
def tool_calls(draw, state: dict):
    """(name, args, kwargs): mostly well-formed calls, sometimes of the wrong shape."""
    name = draw(st.sampled_from(TOOLS))
    params = PARAMS[name]
    values = [draw(argument(p, state)) for p in params]
    shape = draw(st.sampled_from(["kw"] * 6 + ["pos"] * 2 + ["extra_kw", "missing", "extra_pos", "both"]))
    if shape == "pos":
        return name, tuple(values), {}
    kwargs = dict(zip(params, values))
    if shape == "extra_kw":
        kwargs[draw(st.sampled_from(["x", "user_id", "keyword", "self"]))] = draw(junk())
    elif shape == "missing" and params:
        del kwargs[draw(st.sampled_from(params))]
    elif shape == "extra_pos":
        return name, tuple(values) + (draw(junk()),), {}
    elif shape == "both" and params:
        return name, (values[0],), kwargs
    return name, (), kwargs


class MessageMachine(RuleBasedStateMachine):
    """Ours and the reference, built from the same dataset config, driven by the same calls."""

    @initialize(config=configs(), long_context=st.booleans())
    def load(self, config, long_context):
        self.ours = make_ours(CLASS, config, long_context=long_context)
        self.ref = make_reference(CLASS, config, long_context=long_context)
        self.log = [f"load({config!r}, long_context={long_context})"]

    @rule(data=st.data())
    def call_tool(self, data):
        name, args, kwargs = data.draw(tool_calls(reference_state(self.ref)))
        self.log.append(f"{name}{args}{kwargs}")
        got = call(self.ours, name, args, kwargs)
        expected = call(self.ref, name, args, kwargs)
        assert got == expected, f"{self.log}: ours {got!r} != ref {expected!r}"

    @rule()
    def log_in_as_known_user(self):
        # Most tools need a login; make it common rather than rare.
        ids = list(reference_state(self.ref)["user_map"].values())
        if ids:
            assert call(self.ours, "message_login", (ids[0],)) == call(self.ref, "message_login", (ids[0],))

    @rule(data=st.data())
    def resend_existing_message(self, data):
        # Duplicates in the inbox exercise delete_message's first-equal removal.
        receivers, contents = _inbox_parts(reference_state(self.ref))
        if receivers:
            index = data.draw(st.integers(0, len(receivers) - 1))
            args = (receivers[index], contents[index])
            self.log.append(f"send_message{args}")
            assert call(self.ours, "send_message", args) == call(self.ref, "send_message", args)

    @invariant()
    def same_state(self):
        if hasattr(self, "ref"):
            assert_same_state(self.ours, self.ref, " ; ".join(self.log[-5:]))


TestMessageMachine = MessageMachine.TestCase
TestMessageMachine.settings = settings(settings.default, stateful_step_count=30)
