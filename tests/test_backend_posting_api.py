"""Differential tests of backends.posting_api.TwitterAPI against the reference."""

from __future__ import annotations

import copy
import inspect

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from bfcl_safe.backends.posting_api import TwitterAPI
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
from tests.refenv import reference_backend_class

CLASS = "TwitterAPI"
REF_CLASS = reference_backend_class(CLASS)


# --------------------------------------------------------------------------- helpers
#
# post_tweet's default lists are shared by every call in the process (a reference quirk
# we keep), and ``mention`` can change them. Tests start from pristine defaults on both
# sides and check that both sides' defaults stay equal.


def reset_post_tweet_defaults() -> None:
    """Give ours and the reference fresh ``([], [])`` defaults, as after import."""
    TwitterAPI.post_tweet.__defaults__ = ([], [])
    REF_CLASS.post_tweet.__defaults__ = ([], [])


def assert_same_defaults(context: str = "") -> None:
    ours, ref = TwitterAPI.post_tweet.__defaults__, REF_CLASS.post_tweet.__defaults__
    assert repr(ours) == repr(ref), f"{context}: post_tweet defaults differ: {ours!r} != {ref!r}"


@pytest.fixture(autouse=True)
def pristine_defaults():
    reset_post_tweet_defaults()
    yield
    reset_post_tweet_defaults()


def run_both(config: dict, calls: list[tuple], long_context: bool = False, pair=None):
    """Make every call on ours and on the reference; assert equal results, state and
    post_tweet defaults after each; return (ours, reference, results)."""
    if pair is None:
        pair = (make_ours(CLASS, config, long_context=long_context),
                make_reference(CLASS, config, long_context=long_context))
    ours, ref = pair
    assert_same_state(ours, ref, "after load")
    results = []
    for name, args, kwargs in calls:
        got, expected = call(ours, name, args, kwargs), call(ref, name, args, kwargs)
        context = f"{name}{args}{kwargs}"
        assert got == expected, f"{context}: ours {got!r} != ref {expected!r}"
        assert_same_state(ours, ref, context)
        assert_same_defaults(context)
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

AUTH = {"authenticated": True}
TWEETS = {
    "0": {"id": 0, "username": "john", "content": "Hello World", "tags": ["#Hi"], "mentions": []},
    "1": {"id": 1, "username": "amy", "content": "second", "tags": ["#Tech", "#hello"], "mentions": ["@x"]},
}
WITH_TWEETS = {**AUTH, "tweets": TWEETS, "tweet_counter": 2}

QUIRK_CASES = {
    "default-state": ({}, [c("posting_get_login_status"), c("list_all_following"), c("get_user_stats", "john")]),
    "not-authenticated-everywhere": (
        {"tweets": TWEETS},
        [c("post_tweet", "x"), c("retweet", 0), c("comment", 0, "x"), c("follow_user", "a"),
         c("list_all_following"), c("unfollow_user", "alice")],
    ),
    "authenticate-wrong-then-right": (
        {}, [c("authenticate_twitter", "john", "bad"), c("authenticate_twitter", username="john", password="john123"),
             c("posting_get_login_status")],
    ),
    "tweet-keys-become-int-comment-keys-do-not": (
        {**WITH_TWEETS, "comments": {"0": [{"username": "amy", "content": "old"}]}},
        [c("get_tweet_comments", 0), c("comment", 0, "new"), c("get_tweet_comments", 0), c("get_tweet", "0")],
    ),
    "mention-and-get-need-no-login": ({"tweets": TWEETS}, [c("mention", 1, ["@y"]), c("get_tweet", 1)]),
    "mention-with-a-string-extends-chars": (WITH_TWEETS, [c("mention", 0, "@bob"), c("get_tweet", 0)]),
    "mention-non-iterable": (WITH_TWEETS, [c("mention", 0, 5), c("mention", 0, None)]),
    "tweet-counter-overwrites-existing": ({**WITH_TWEETS, "tweet_counter": 1}, [c("post_tweet", "over")]),
    "post-any-types": (AUTH, [c("post_tweet", 5, None, "x"), c("post_tweet", {1, 2})]),
    "search-content-or-exact-tag": (
        WITH_TWEETS, [c("search_tweets", "WORLD"), c("search_tweets", "#tech"), c("search_tweets", "#te")],
    ),
    "search-bad-tags-raise-only-when-content-misses": (
        AUTH,
        [c("post_tweet", "abc", None), c("search_tweets", "ab"), c("search_tweets", "zz"),
         c("post_tweet", "q", [1]), c("search_tweets", "q"), c("search_tweets", "nope")],
    ),
    "search-builds-whole-tag-list": (
        AUTH, [c("post_tweet", "r", ["#x", 1]), c("search_tweets", "r"), c("search_tweets", "#x")],
    ),
    "search-non-str": (WITH_TWEETS, [c("search_tweets", 1), c("search_tweets", None)]),
    "retweet-true-is-one": (WITH_TWEETS, [c("retweet", 1), c("retweet", True), c("retweet", 1.0), c("retweet", "1")]),
    "retweet-unhashable": (WITH_TWEETS, [c("retweet", [1]), c("get_tweet", {"a": 1})]),
    "follow-unfollow": (
        AUTH, [c("follow_user", "alice"), c("follow_user", "zoe"), c("unfollow_user", "bob"),
               c("unfollow_user", "bob"), c("list_all_following")],
    ),
    "user-stats": (
        {**WITH_TWEETS, "retweets": {"amy": [0]}},
        [c("get_user_stats", "john"), c("get_user_stats", "amy"), c("get_user_stats", ["amy"])],
    ),
    "list-results-use-str": (WITH_TWEETS, [c("get_user_tweets", "john"), c("get_tweet_comments", 1)]),
    "tweet-without-mentions-key": (
        {"tweets": {"3": {"id": 3, "username": "a", "content": "c", "tags": []}}}, [c("mention", 3, ["@m"])]
    ),
    "wrong-arity": (
        AUTH,
        [c("post_tweet"), c("post_tweet", "a", [], [], 1), c("post_tweet", "a", tag=["#x"]),
         c("comment", 0), c("get_tweet", 0, tweet_id=0), c("posting_get_login_status", 1)],
    ),
}


@pytest.mark.parametrize("config,calls", list(QUIRK_CASES.values()), ids=list(QUIRK_CASES))
def test_quirk_matches_reference(config, calls):
    run_both(config, calls)
    run_both(config, calls, long_context=True)


def test_mention_on_default_list_leaks_into_later_posts_of_other_instances():
    # Quirk: post_tweet's default ``mentions`` list is one object for the whole process.
    first = run_both(AUTH, [c("post_tweet", "one"), c("mention", 0, ["@leak"])])
    _, _, results = run_both(AUTH, [c("post_tweet", "two")])
    assert '"mentions": ["@leak"]' in results[0]
    assert TwitterAPI.post_tweet.__defaults__ == ([], ["@leak"])
    # ...and the first instance's tweet holds that very list object.
    ours_first = first[0]
    assert ours_first.tweets[0]["mentions"] is TwitterAPI.post_tweet.__defaults__[1]


def test_comment_keys_quirk():
    ours, _, _ = run_both(
        {**WITH_TWEETS, "comments": {"0": [{"username": "amy", "content": "old"}]}}, [c("comment", 0, "new")]
    )
    assert list(ours.comments) == ["0", 0]


def test_config_not_mutated():
    config = {**WITH_TWEETS, "comments": {"0": []}, "retweets": {"john": [0]}, "following_list": ["a"]}
    before = copy.deepcopy(config)
    ours = TwitterAPI.from_config(config)
    ours.mention(0, ["@z"])
    ours.comment(0, "x")
    ours.retweet(1)
    ours.follow_user("b")
    ours.post_tweet("new", ["#t"])
    assert config == before


def test_long_context_needs_data():
    with pytest.raises(ValueError, match="long_context_data"):
        TwitterAPI.from_config({}, long_context=True)
    TwitterAPI.from_config({}, long_context=True, long_context_data=long_context_data())


# --------------------------------------------------------------------------- stateful differential fuzzing

TOOLS = tuple(sorted(reference_public_methods(make_reference(CLASS, {}))))
SIGNATURES = {name: inspect.signature(getattr(TwitterAPI, name)) for name in TOOLS}
PARAMS = {name: [p for p in SIGNATURES[name].parameters if p != "self"] for name in TOOLS}
OPTIONAL = {
    name: {p.name for p in SIGNATURES[name].parameters.values() if p.default is not inspect.Parameter.empty}
    for name in TOOLS
}


@st.composite
def junk(draw):
    """Values of the wrong type or odd values of the right type."""
    return draw(
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(-3, 12),
            st.floats(allow_infinity=True, allow_nan=True),
            st.sampled_from(["", " ", "0", "john", "#", "@"]),
            st.text(max_size=6),
            st.lists(st.one_of(st.sampled_from(["#a", "@b", "", "x"]), st.none(), st.integers(0, 2)), max_size=3),
            st.dictionaries(st.sampled_from(["a", "id"]), st.integers(0, 3), max_size=2),
        )
    )


@st.composite
def configs(draw):
    entries = [e for e, _ in dataset() if CLASS in e["involved_classes"]]
    entry = draw(st.sampled_from(entries))
    return copy.deepcopy(entry["initial_config"].get(CLASS, {}))


@st.composite
def string_lists(draw, prefix: str, pool: list):
    """Lists of tags or mentions: known ones, or new ones with the right prefix."""
    item = st.one_of(st.sampled_from(pool or [prefix + "x"]), st.text(max_size=5).map(lambda t: prefix + t))
    return draw(st.lists(item, max_size=3))


@st.composite
def argument(draw, param: str, state: dict):
    """A value for ``param``, drawn mostly from the reference's current state."""
    tweets = list(state["tweets"].values())
    users = [state["username"]] + [t.get("username") for t in tweets] + list(state["following_list"])
    contents = [t.get("content") for t in tweets]
    tags = [tag for t in tweets if isinstance(t.get("tags"), list) for tag in t["tags"]]
    if param in ("tags", "mentions", "mentioned_usernames"):
        prefix = "#" if param == "tags" else "@"
        pool = tags if param == "tags" else [m for t in tweets if isinstance(t.get("mentions"), list)
                                             for m in t["mentions"]]
        return draw(st.one_of(string_lists(prefix, pool), string_lists(prefix, pool), junk()))
    known = {
        "username": users,
        "password": [state["password"]],
        "content": contents,
        "comment_content": contents,
        "tweet_id": list(state["tweets"]) + [state["tweet_counter"]] + list(state["comments"])
        + [str(k) for k in state["tweets"]],
        "username_to_follow": list(state["following_list"]) + users,
        "username_to_unfollow": list(state["following_list"]) + users,
        "keyword": [
            x[i:j] for x in contents + tags if isinstance(x, str) for i, j in [(0, 3), (2, 7), (0, 0), (0, 99)]
        ] + [x.upper() for x in tags if isinstance(x, str)],
    }[param]
    known = [k for k in known if k is not None] or [""]
    return draw(st.one_of([st.sampled_from(known)] * 3 + [junk(), st.text(max_size=10)]))


@st.composite
def tool_calls(draw, state: dict):
    """(name, args, kwargs): mostly well-formed calls, sometimes of the wrong shape."""
    name = draw(st.sampled_from(TOOLS))
    params = [p for p in PARAMS[name] if p not in OPTIONAL[name] or draw(st.booleans())]
    values = [draw(argument(p, state)) for p in params]
    shape = draw(st.sampled_from(["kw"] * 6 + ["pos"] * 2 + ["extra_kw", "missing", "extra_pos", "both"]))
    if shape == "pos" and params == PARAMS[name][: len(params)]:
        return name, tuple(values), {}
    kwargs = dict(zip(params, values))
    if shape == "extra_kw":
        kwargs[draw(st.sampled_from(["x", "tweet_id", "tag", "self"]))] = draw(junk())
    elif shape == "missing" and params:
        del kwargs[draw(st.sampled_from(params))]
    elif shape == "extra_pos":
        return name, tuple(draw(argument(p, state)) for p in PARAMS[name]) + (draw(junk()),), {}
    elif shape == "both" and params:
        return name, (values[0],), kwargs
    return name, (), kwargs


class TwitterMachine(RuleBasedStateMachine):
    """Ours and the reference, built from the same dataset config, driven by the same calls."""

    @initialize(config=configs(), long_context=st.booleans())
    def load(self, config, long_context):
        reset_post_tweet_defaults()
        self.ours = make_ours(CLASS, config, long_context=long_context)
        self.ref = make_reference(CLASS, config, long_context=long_context)
        self.log = [f"load({config!r}, long_context={long_context})"]

    def _both(self, name, args=(), kwargs=None):
        self.log.append(f"{name}{args}{kwargs or {}}")
        got = call(self.ours, name, args, kwargs)
        expected = call(self.ref, name, args, kwargs)
        assert got == expected, f"{self.log}: ours {got!r} != ref {expected!r}"

    @rule(data=st.data())
    def call_tool(self, data):
        self._both(*data.draw(tool_calls(reference_state(self.ref))))

    @rule()
    def authenticate(self):
        # Most tools need a login; make it common rather than rare.
        state = reference_state(self.ref)
        self._both("authenticate_twitter", (state["username"], state["password"]))

    @rule(content=st.sampled_from(["hi", "Hello World"]))
    def post_with_default_lists(self, content):
        # Exercises the shared-default quirk together with ``mention``.
        self._both("post_tweet", (content,))

    @rule(names=st.lists(st.sampled_from(["@a", "@b"]), max_size=2))
    def mention_latest_tweet(self, names):
        # The tweet most likely to hold the shared default ``mentions`` list.
        self._both("mention", (reference_state(self.ref)["tweet_counter"] - 1, names))

    @invariant()
    def same_state(self):
        if hasattr(self, "ref"):
            context = " ; ".join(self.log[-5:])
            assert_same_state(self.ours, self.ref, context)
            assert_same_defaults(context)


TestTwitterMachine = TwitterMachine.TestCase
TestTwitterMachine.settings = settings(settings.default, stateful_step_count=30)
