"""Hostile call sequences on every backend: each ends, and either gives the reference's
results (and state) or is refused with BudgetExceeded.

A sequence is a list of call texts, as a model would write them (nested calls hand a
tool a live part of the state, as the reference's ``eval`` does). Ours runs through the
interpreter (``run_step`` on a method table, as an Episode does) under an active
``Budget``, in a forked child with a time guard, so that a hang is a failure rather
than a stuck suite. Sizes go from ordinary to far past the budgets: small ones are
compared with the reference classes (run with ``eval``, as the reference runs them);
large ones must end in ``BudgetExceeded`` naming the budget.
"""

from __future__ import annotations

import multiprocessing
import sys
import traceback
from typing import Any, Callable

import pytest

from bfcl_safe.interp import MethodTable, run_step
from bfcl_safe.interp.budget import Budget
from bfcl_safe.interp.errors import BudgetExceeded
from bfcl_safe.interp.limits import ENTRY_BUDGETS
from bfcl_safe.interp.result_text import format_error, format_result
from tests.backend_harness import assert_same_state, make_ours, make_reference, recursion_wording

#: Seconds a child may take for one sequence (budgets are counted, not timed: this only
#: turns a hang into a failure; every case here takes well under a second or two).
TIME_GUARD = 60

TREE = {"root": {"w": {"type": "directory", "contents": {
    "a": {"type": "directory", "contents": {"f.txt": {"type": "file", "content": "hello\nworld"}}},
}}}}
TICKETS = {"ticket_queue": [{"id": 1, "title": "t", "description": "d", "status": "Open", "priority": 1,
                             "created_by": "u"}], "ticket_counter": 2, "current_user": "u"}
BIG = "x" * 100_000


def _twitter_doubling(n: int) -> list[str]:
    # Tweet 1's mentions *are* the comment list of tweet 0; each mention extends that
    # list with itself (the reference aliases it the same way: it doubles every call).
    return [
        "authenticate_twitter(username='john', password='john123')",
        "post_tweet(content='first')",
        "comment(tweet_id=0, comment_content='c')",
        "post_tweet(content='second', mentions=get_tweet_comments(tweet_id=0))",
        *["mention(tweet_id=1, mentioned_usernames=get_tweet_comments(tweet_id=0))"] * n,
    ]


def _echo_nesting(n: int) -> list[str]:
    # cat(...) returns {"file_content": content}: written back, it nests one level per call.
    return ["cd(folder='a')", *["echo(content=cat(file_name='f.txt'), file_name='f.txt')"] * n]


def _deep_chain(n: int) -> list[str]:
    return [call for i in range(n) for call in (f"mkdir(dir_name='d{i}')", f"cd(folder='d{i}')")]


def _copies_of_a_large_file(n: int) -> list[str]:
    return ["cd(folder='a')", "touch(file_name='big')", f"echo(content='{BIG}', file_name='big')",
            *[f"cp(source='big', destination='c{i}')" for i in range(n)]]


def _self_copy(_: int) -> list[str]:
    # cp of a directory into itself: the copy contains itself (as in the reference);
    # find and du then end in the reference's RecursionError message, ls and pwd work.
    return ["cp(source='a', destination='a')", "find(path='.')", "find(path='.', name='f')", "du()",
            "cd(folder='a')", "cd(folder='a')", "cd(folder='a')", "ls()", "pwd()", "du(human_readable=True)"]


def _default_mentions(n: int) -> list[str]:
    # Tweet 0 is posted without mentions: its list is post_tweet's default, one list for
    # the whole process (as in the reference), which mention extends in place.
    names = "[" + ", ".join(["'n'"] * 10_000) + "]"
    return ["authenticate_twitter(username='john', password='john123')", "post_tweet(content='x')",
            *[f"mention(tweet_id=0, mentioned_usernames={names})"] * n]


def _follows(n: int) -> list[str]:
    # Each follow_user scans the whole following list: quadratic in the calls.
    return ["authenticate_twitter(username='john', password='john123')",
            *[f"follow_user(username_to_follow='user{i}')" for i in range(n)]]


def _ticket_self_reference(_: int) -> list[str]:
    return ["edit_ticket(ticket_id=1, updates={'description': get_ticket(ticket_id=1)})"]


def _ticket_wrapping(n: int) -> list[str]:
    # Each edit stores the list of the user's tickets (holding this ticket) in it: a cycle.
    return ["create_ticket(title='x')",
            *["edit_ticket(ticket_id=2, updates={'title': get_user_tickets()})"] * n]


def _messages(n: int) -> list[str]:
    return ["message_login(user_id='USR001')",
            *[f"send_message(receiver_id='USR002', message='m{i}')" for i in range(n)]]


def _orders(n: int) -> list[str]:
    return ["trading_login(username='u', password='p')",
            *[f"place_order(order_type='Sell', symbol='AAPL', price=1.5, amount={i + 1})" for i in range(n)]]


def _exchange(n: int) -> list[str]:
    # A string value is repeated `rate` times (110 for JPY) before float() refuses it.
    return [f"compute_exchange_rate(base_currency='USD', target_currency='JPY', value='{'1' * n}')"]


def _logarithms(n: int) -> list[str]:
    precision = 1000 if n > 10 else 30  # the reference sets mpmath's global precision
    return [f"logarithm(value={i + 2}, base=3, precision={precision})" for i in range(n)]


def _navigation(n: int) -> list[str]:
    return ["startEngine(ignitionMode='START')"] + [f"set_navigation(destination='{'s' * 1000}')"] * n


def _tuple_keys(_: int) -> list[str]:
    # A dict with tuple keys kept in state: compared and printed like the reference's.
    return ["cd(folder='a')", "echo(content={(1, 2): 'x', 'k': [1, {(3,): None}]}, file_name='f.txt')",
            "cat(file_name='f.txt')", "wc(file_name='f.txt', mode='c')"]


#: id -> (class, config, sequence builder, size, budget limits (None: the defaults),
#:        None when the reference's results are expected, else the budget that must run out)
CASES: dict[str, tuple[str, dict, Callable[[int], list[str]], int, dict | None, str | None]] = {
    "twitter-self-extend-5": ("TwitterAPI", {}, _twitter_doubling, 5, None, None),
    "twitter-self-extend-60": ("TwitterAPI", {}, _twitter_doubling, 60, None, "state_items"),
    # Only the large size: run here, the small one would grow the test process's own default.
    "twitter-default-mentions-past-process-bound": ("TwitterAPI", {}, _default_mentions, 11, None,
                                                    "shared_default_items"),
    "twitter-follows-20": ("TwitterAPI", {}, _follows, 20, None, None),
    "twitter-follows-past-scan-budget": ("TwitterAPI", {}, _follows, 20_000, None, "state_scan"),
    "gfs-echo-cat-nesting-20": ("GorillaFileSystem", TREE, _echo_nesting, 20, None, None),
    "gfs-echo-cat-nesting-1000": ("GorillaFileSystem", TREE, _echo_nesting, 1000, None, "state_depth"),
    "gfs-mkdir-cd-chain-60": ("GorillaFileSystem", TREE, _deep_chain, 60, None, None),
    "gfs-mkdir-cd-chain-1200": ("GorillaFileSystem", TREE, _deep_chain, 1200, None, "tree_depth"),
    "gfs-copies-of-large-file-20": ("GorillaFileSystem", TREE, _copies_of_a_large_file, 20, None, None),
    "gfs-copies-of-large-file-2000": ("GorillaFileSystem", TREE, _copies_of_a_large_file, 2000, None, "state_chars"),
    "gfs-copy-into-itself": ("GorillaFileSystem", TREE, _self_copy, 1, None, None),
    "gfs-tuple-keys": ("GorillaFileSystem", TREE, _tuple_keys, 1, None, None),
    "ticket-contains-itself": ("TicketAPI", TICKETS, _ticket_self_reference, 1, None, None),
    "ticket-wrapping-3": ("TicketAPI", TICKETS, _ticket_wrapping, 3, None, None),
    "ticket-wrapping-past-items-budget": ("TicketAPI", TICKETS, _ticket_wrapping, 3_000, {"state_items": 20_000},
                                          "state_items"),
    "message-sends-50": ("MessageAPI", {}, _messages, 50, None, None),
    "message-sends-past-items-budget": ("MessageAPI", {}, _messages, 1000, {"state_items": 1_000}, "state_items"),
    "trading-orders-30": ("TradingBot", {}, _orders, 30, None, None),
    "trading-orders-past-items-budget": ("TradingBot", {}, _orders, 500, {"state_items": 2_000}, "state_items"),
    "travel-exchange-short-string": ("TravelAPI", {}, _exchange, 10, None, None),
    "travel-exchange-string-times-110": ("TravelAPI", {}, _exchange, 150_000, None, "computed_size"),
    "math-logarithms-5": ("MathAPI", {}, _logarithms, 5, None, None),
    "math-logarithms-past-precision-budget": ("MathAPI", {}, _logarithms, 400, {"precision_work": 50_000_000},
                                              "precision_work"),
    "vehicle-navigation-3": ("VehicleControlAPI", {}, _navigation, 3, None, None),
    "vehicle-navigation-past-chars-budget": ("VehicleControlAPI", {}, _navigation, 300, {"state_chars": 100_000},
                                             "state_chars"),
}


def _run_ours(class_name: str, config: dict, calls: list[str], limits: dict | None) -> dict:
    instance = make_ours(class_name, config)
    table = MethodTable([instance])
    budget = Budget({**ENTRY_BUDGETS, **(limits or {})})
    results: list[str] = []
    try:
        with budget.active():
            for text in calls:
                results.extend(run_step([text], table))
    except BudgetExceeded as exc:
        return {"budget": exc.budget, "limit": exc.limit, "spent": exc.spent, "results": results}
    # The state must compare and print (what the checker and a failure record do with
    # it), at the default recursion limit: anything raised here is reported as a crash.
    state, fresh = instance.public_state(), make_ours(class_name, config).public_state()
    return {"results": results, "state": {key: repr(value) for key, value in state.items()},
            "unchanged": [key for key in state if state[key] == fresh[key]]}


def _child(conn: Any, args: tuple) -> None:
    try:
        sys.setrecursionlimit(1000)  # the default: deep state must not need more
        conn.send(_run_ours(*args))
    except BaseException:  # noqa: BLE001 - report anything to the parent
        conn.send({"crash": traceback.format_exc()[-3000:]})
    finally:
        conn.close()


def _guarded(*args: Any) -> dict:
    """Run ours in a forked child; fail if it takes longer than TIME_GUARD."""
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(send, args))
    child.start()
    send.close()
    if not receive.poll(TIME_GUARD):
        child.kill()
        child.join()
        pytest.fail(f"no outcome within {TIME_GUARD} s: the sequence did not end")
    outcome = receive.recv()
    child.join()
    assert "crash" not in outcome, outcome["crash"]
    return outcome


def _worded(results: list[str]) -> list[str]:
    """Results with CPython's RecursionError wording cut after "exceeded"
    (:func:`tests.backend_harness.recursion_wording`)."""
    return [recursion_wording(text) for text in results]


def _run_reference(class_name: str, config: dict, calls: list[str]) -> tuple[list[str], Any]:
    """The reference's way: ``eval`` of each call text against the instance's methods."""
    instance = make_reference(class_name, config)
    namespace = {name: getattr(instance, name) for name in dir(instance) if not name.startswith("_")}
    results = []
    for text in calls:
        try:
            results.append(format_result(eval(text, {"__builtins__": {}}, namespace)))  # test oracle only
        except Exception as exc:  # noqa: BLE001 - tool errors are data
            results.append(format_error(exc))
    return results, instance


@pytest.mark.skipif(sys.platform == "win32", reason="needs fork")
@pytest.mark.parametrize("case", list(CASES))
def test_hostile_sequence_ends_with_reference_results_or_a_budget(case: str) -> None:
    class_name, config, build, size, limits, budget = CASES[case]
    calls = build(size)
    outcome = _guarded(class_name, config, calls, limits)
    if budget is not None:
        assert outcome.get("budget") == budget, outcome.get("budget", outcome.get("results", [])[-3:])
        assert outcome["spent"] > outcome["limit"]
        return
    assert "budget" not in outcome, outcome
    expected, reference = _run_reference(class_name, config, calls)
    assert _worded(outcome["results"]) == _worded(expected)
    ours = make_ours(class_name, config)
    with Budget().active():
        run_step(calls, MethodTable([ours]))
    assert_same_state(ours, reference, case)


def test_message_ids_all_taken_is_refused_not_a_hang() -> None:
    """All 90,000 ids taken: the reference draws forever; ours refuses at once."""
    taken = set(range(10000, 100000))
    outcome = _guarded("MessageAPI", {"generated_ids": taken, "current_user": "USR001"},
                       ["send_message(receiver_id='USR002', message='hi')"], None)
    assert outcome["budget"] == "message_ids"


def test_message_ids_one_left_is_found_like_the_reference() -> None:
    taken = set(range(10000, 100000)) - {54321}
    config = {"generated_ids": taken, "current_user": "USR001"}
    calls = ["send_message(receiver_id='USR002', message='hi')", "get_message_stats()"]
    outcome = _guarded("MessageAPI", config, calls, None)
    expected, _ = _run_reference("MessageAPI", config, calls)
    assert outcome["results"] == expected
    assert "54321" in expected[0]


def test_integer_past_the_str_limit_is_not_stored() -> None:
    """A > 4,300-digit int stored in a file could not be printed later (CPython's
    int -> str limit): refused before it is stored, with or without a budget."""
    fs = make_ours("GorillaFileSystem", TREE)
    fs.cd("a")
    with pytest.raises(BudgetExceeded) as raised:
        fs.echo(content=[1, 10 ** 5000], file_name="f.txt")
    assert raised.value.budget == "state_int_digits"
    assert fs.cat("f.txt") == {"file_content": "hello\nworld"}
    fs.echo(content=10 ** 4000, file_name="f.txt")  # within the limit: stored, printable
    assert len(repr(fs.root)) > 4000


def test_deep_tree_compares_and_prints_without_recursion() -> None:
    """A tree 200 directories deep (the most mkdir allows) compares, prints and walks at the default
    recursion limit, even from a deep stack."""
    left, right = make_ours("GorillaFileSystem", TREE), make_ours("GorillaFileSystem", TREE)
    for fs in (left, right):
        for i in range(200):
            fs.mkdir(f"d{i}")
            fs.cd(f"d{i}")
    with pytest.raises(BudgetExceeded):
        left.mkdir("one-too-many")

    def nested(levels: int) -> Any:
        if levels:
            return nested(levels - 1)
        return left.root == right.root, len(repr(left.root)), left.cd("/"), len(left.find()["matches"]), left.du()

    equal, length, _, found, size = nested(sys.getrecursionlimit() - 100)
    assert equal and length > 200 * 20 and found == 202 and size == {"disk_usage": "11 bytes"}


def test_a_tree_containing_itself_becomes_plain_data() -> None:
    """Episode.state()'s conversion of a file system: iterative, and a directory copied
    into itself is written "{...}" where it meets itself (as repr writes it)."""
    from bfcl_safe.backends.gorilla_file_system import tree_as_plain
    from bfcl_safe.checker.episode import plain

    fs = make_ours("GorillaFileSystem", TREE)
    fs.touch("t")
    fs.echo(content=[1, (2, 3)], file_name="t")
    before = plain(fs.root)
    assert before == {"name": "w", "contents": {
        "a": {"name": "a", "contents": {"f.txt": {"name": "f.txt", "content": "hello\nworld"}}},
        "t": {"name": "t", "content": [1, [2, 3]]}}}
    fs.cp("a", "a")
    inner = plain(fs.root)["contents"]["a"]["contents"]["a"]
    assert inner["contents"]["a"] == {"name": "a", "contents": "{...}"}
    for i in range(200):
        fs.mkdir(f"d{i}")
        fs.cd(f"d{i}")
    deep = tree_as_plain(fs.root, plain)
    for i in range(200):
        deep = deep["contents"][f"d{i}"]
    assert deep == {"name": "d199", "contents": {}}


# ----------------------------------------------------------------------------- property

#: Calls that hand back a live part of a backend's state; nested into another call's
#: argument, the reference's eval passes that very object (aliasing state into state).
LIVE_CALLS = {
    "GorillaFileSystem": ("cat(file_name='f.txt')", "ls(a=True)", "find()", "pwd()"),
    "TwitterAPI": ("get_tweet_comments(tweet_id=0)", "get_tweet(tweet_id=0)", "list_all_following()",
                   "get_user_tweets(username='john')"),
    "TicketAPI": ("get_ticket(ticket_id=1)", "get_user_tickets()"),
    "MessageAPI": ("view_messages_sent()", "list_users()"),
    "TradingBot": ("get_watchlist()", "get_account_info()"),
    "TravelAPI": ("get_all_credit_cards()", "get_budget_fiscal_year()"),
    "VehicleControlAPI": ("displayCarStatus(option='doors')", "get_zipcode_based_on_city(city='Rivermist')"),
}


def _nested_sequences(class_name: str):
    from hypothesis import strategies as st

    from bfcl_safe.backends.strategies import call_sequences
    from tests.test_strategies import _factory

    @st.composite
    def texts(draw) -> list[str]:
        calls = draw(call_sequences(_factory(class_name), max_size=8))
        out = []
        for call in calls:
            parts = [f"{key}={value!r}" for key, value in call.kwargs]
            if parts and draw(st.booleans()):
                index = draw(st.integers(0, len(parts) - 1))
                parts[index] = f"{call.kwargs[index][0]}={draw(st.sampled_from(LIVE_CALLS[class_name]))}"
            out.append(f"{call.name}({', '.join(parts)})")
        return out

    return texts()


@pytest.mark.parametrize("class_name", sorted(LIVE_CALLS))
def test_live_state_nested_into_calls_agrees_with_the_reference(class_name: str) -> None:
    """Random valid sequences where arguments are now and then a nested call returning a
    live part of the state: ours (under a budget) gives the reference's results and
    state, or runs out of a budget."""
    from hypothesis import given, settings

    from tests.test_strategies import _config

    config = _config(class_name)

    # A quarter of the profile's examples per class: 25 under `ci`, 1,250 under `fuzz`
    # (8,750 over the seven classes).
    @settings(deadline=None, database=None, max_examples=max(25, settings.default.max_examples // 4))
    @given(_nested_sequences(class_name))
    def check(calls: list[str]) -> None:
        ours = make_ours(class_name, config)
        try:
            with Budget().active():
                got = run_step(calls, MethodTable([ours]))
        except BudgetExceeded:
            return
        expected, reference = _run_reference(class_name, config, calls)
        assert _worded(got) == _worded(expected), calls
        assert_same_state(ours, reference, repr(calls))

    check()
