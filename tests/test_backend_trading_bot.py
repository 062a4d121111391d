"""Differential tests: our TradingBot against the reference's, call by call."""

from __future__ import annotations

import copy
import json
import os
import re
import time
from datetime import datetime

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from bfcl_safe.backends.trading_bot import TradingBot
from tests.backend_harness import (
    assert_same_signatures,
    assert_same_state,
    assert_same_tool_set,
    call,
    dataset,
    long_context_data,
    make_ours,
    make_reference,
    replay_ground_truth,
)

CLASS = "TradingBot"


def _configs() -> list[dict]:
    seen, out = set(), [{}]  # {} = the reference's default state
    for entry, _ in dataset():
        if CLASS in entry["involved_classes"]:
            config = entry["initial_config"].get(CLASS, {})
            key = json.dumps(config, sort_keys=True)
            if key not in seen:
                seen.add(key)
                out.append(config)
    return out


CONFIGS = _configs()


def make_pair(config: dict, long_context: bool = False):
    return make_ours(CLASS, config, long_context), make_reference(CLASS, config, long_context)


def both(ours, ref, name: str, args: tuple = (), kwargs: dict | None = None) -> str:
    expected = call(ref, name, args, kwargs)
    got = call(ours, name, args, kwargs)
    assert got == expected, f"{name}{args}{kwargs}: result differs:\n ours: {got[:1500]}\n  ref: {expected[:1500]}"
    assert_same_state(ours, ref, f"{name}{args}{kwargs}")
    return got


# --------------------------------------------------------------------------- contract


def test_same_tool_set():
    assert_same_tool_set(CLASS)


def test_same_signatures():
    assert_same_signatures(CLASS)


def test_ground_truth_replay():
    n = replay_ground_truth({CLASS})
    n_long = replay_ground_truth({CLASS}, long_context_only=True)
    print(f"TradingBot ground-truth calls compared: {n} (of which long_context: {n_long})")
    assert n > 0 and n_long > 0


def test_from_config_does_not_mutate_config():
    for config in CONFIGS:
        before = copy.deepcopy(config)
        ours = TradingBot.from_config(config, long_context=True, long_context_data=long_context_data())
        for name, args in [
            ("trading_login", ("u", "p")), ("fund_account", (10.0,)), ("withdraw_funds", (5.0,)),
            ("place_order", ("Buy", "AAPL", 1.0, 1)), ("cancel_order", (12446,)),
            ("add_to_watchlist", ("AAPL",)), ("remove_stock_from_watchlist", ("NVDA",)),
        ]:
            call(ours, name, args)
        assert config == before


def test_long_context_requires_data():
    with pytest.raises(ValueError, match="long_context_data"):
        TradingBot.from_config({}, long_context=True)
    with pytest.raises(ValueError, match="lacks WATCH_LIST_EXTENSION"):
        data = {k: v for k, v in long_context_data().items() if k != "WATCH_LIST_EXTENSION"}
        TradingBot.from_config({}, long_context=True, long_context_data=data)


# --------------------------------------------------------------------------- quirks

DATASET_CONFIG = next(c for c in CONFIGS if "order_type" in c.get("orders", {}))
LOGGED_IN = {**DATASET_CONFIG, "authenticated": True, "market_status": "Open"}
LOGGED_OUT = {**DATASET_CONFIG, "authenticated": False}

# (id, config, long_context, calls, pattern the last result must match)
QUIRKS = [
    ("order-details-stray-order_type-entry", DATASET_CONFIG, False,
     [("get_order_details", ("order_type",), {})], r"^Buy$"),
    ("order-details-stray-entry-long-context", DATASET_CONFIG, True,
     [("get_order_details", ("order_type",), {})], r"'str' object has no attribute 'copy'"),
    ("cancel-stray-entry", DATASET_CONFIG, False,
     [("cancel_order", ("order_type",), {})], r"string indices must be integers"),
    ("order-details-not-found-no-space", DATASET_CONFIG, False,
     [("get_order_details", (1,), {})], r"not found\.Here is the list of orders_id: \[12345, 'order_type'\]"),
    ("order-details-float-id-found", {}, False,
     [("get_order_details", (12345.0,), {})], r'"id": 12345'),
    ("order-details-long-context-metadata", {}, True,
     [("get_order_details", (12345,), {})], r'"metadata": \{"company_overview": "\\n    AAPL is'),
    ("default-counter-overwrites-order-12446", {"authenticated": True}, False,
     [("place_order", ("Sell", "AAPL", 1, 1), {}), ("get_order_details", (12446,), {})], r'"symbol": "AAPL"'),
    ("sell-skips-balance-check", LOGGED_IN, False,
     [("place_order", ("Sell", "GOOG", 1e9, 1000), {})], r'"status": "Pending"'),
    ("buy-truncates-amount-in-cost", LOGGED_IN, False,
     [("place_order", ("buy", "AAPL", 10000.0, 1.9), {})], r'"amount": 1.9'),
    ("buy-insufficient-funds-format", LOGGED_IN, False,
     [("place_order", ("BUY", "AAPL", 10000.005, 2), {})], r"required \$20000.01 but only \$10000.00"),
    ("place-order-str-price", LOGGED_IN, False,
     [("place_order", ("Buy", "AAPL", "10", 1), {})], r"'<=' not supported between instances of 'str' and 'int'"),
    ("place-order-int-order-type", LOGGED_IN, False,
     [("place_order", (1, "AAPL", 10, 1), {})], r"'int' object has no attribute 'lower'"),
    ("place-order-nan-amount", LOGGED_IN, False,
     [("place_order", ("Buy", "AAPL", 10, float("nan")), {})], r"cannot convert float NaN to integer"),
    ("place-order-unhashable-symbol", LOGGED_IN, False,
     [("place_order", ("Buy", ["AAPL"], 10, 1), {})], r"unhashable type: 'list'"),
    ("watchlist-logged-out-is-a-list", LOGGED_OUT, False,
     [("get_watchlist", (), {})], r"^\['Error: User not authenticated"),
    ("watchlist-long-context-ends-with-ellipsis", LOGGED_IN, True,
     [("get_watchlist", (), {})], r"'ZRFRE', Ellipsis\]$"),
    ("order-history-logged-out-is-a-list", LOGGED_OUT, False,
     [("get_order_history", (), {})], r"^\[\{'error'"),
    ("add-to-watchlist-without-login", LOGGED_OUT, False,
     [("add_to_watchlist", ("TSLA",), {})], r'"TSLA"\]\}$'),
    ("add-to-watchlist-unknown-symbol-ignored", LOGGED_IN, False,
     [("add_to_watchlist", ("XXXX",), {})], r'^\{"watchlist": \["NVDA"\]\}$'),
    ("withdraw-needs-open-market", {**DATASET_CONFIG, "authenticated": True, "market_status": "Closed"}, False,
     [("withdraw_funds", (1,), {})], r"Market is closed"),
    ("fund-then-history-seeded-timestamps", LOGGED_IN, False,
     [("fund_account", (5,), {}), ("withdraw_funds", (3,), {}), ("get_transaction_history", (), {})],
     r'"timestamp": "2024-09-0[12] \d\d:\d\d:\d\d"'),
    ("history-falsy-bounds-unbounded", LOGGED_IN, False,
     [("fund_account", (5,), {}), ("get_transaction_history", ("", 0), {})], r'"type": "deposit"'),
    ("history-end-date-is-midnight", LOGGED_IN, False,
     [("fund_account", (5,), {}), ("get_transaction_history", (None, "2024-09-01"), {})],
     r'^\{"transaction_history": \[\]\}$'),
    ("history-bad-date-format", LOGGED_IN, False,
     [("get_transaction_history", ("2024/09/01",), {})], r"does not match format '%Y-%m-%d'"),
    ("history-int-date", LOGGED_IN, False,
     [("get_transaction_history", (20240901,), {})], r"strptime\(\) argument 1 must be str, not int"),
    ("history-long-context-appends-extension", LOGGED_IN, True,
     [("get_transaction_history", (), {})], r"2024-05-01 22:14:05.858817"),
    ("available-stocks-long-context-duplicates", {}, True,
     [("get_available_stocks", ("Technology",), {})], r'^\{"stock_list": \["AAPL", "GOOG", "MSFT", "NVDA", "AAPL"'),
    ("filter-stocks-str-iterates-chars", {}, False,
     [("filter_stocks_by_price", ("AAPL", 0, 10), {})], r'\["A", "A", "P", "L"\]'),
    ("filter-stocks-str-bound", {}, False,
     [("filter_stocks_by_price", (["AAPL"], "0", 10), {})], r"'>=' not supported between instances of 'float' and 'str'"),
    ("notify-none-stocks", {}, False,
     [("notify_price_change", (None, 0.1), {})], r"'NoneType' object is not iterable"),
    ("stock-info-long-context-ma-lists", {}, True,
     [("get_stock_info", ("AAPL",), {})], r'"MA\(5\)": \[234.34, 212.46'),
    ("symbol-by-name-unhashable", {}, False,
     [("get_symbol_by_name", ({"a": 1},), {})], r"unhashable type: 'dict'"),
    ("login-ignores-credentials", LOGGED_OUT, False,
     [("trading_login", (None, 3), {})], r"Logged in successfully"),
    ("bad-call-unexpected-kwarg", {}, False,
     [("get_stock_info", (), {"sym": "AAPL"})], r"TradingBot.get_stock_info\(\) got an unexpected keyword argument 'sym'"),
    ("bad-call-missing-arg", {}, False,
     [("place_order", ("Buy", "AAPL"), {})], r"TradingBot.place_order\(\) missing 2 required positional arguments"),
    ("bad-call-too-many", {}, False,
     [("get_current_time", (1,), {})], r"TradingBot.get_current_time\(\) takes 1 positional argument but 2"),
]


@pytest.mark.parametrize(
    "config, long_context, calls, pattern", [q[1:] for q in QUIRKS], ids=[q[0] for q in QUIRKS]
)
def test_quirk(config, long_context, calls, pattern):
    ours, ref = make_pair(config, long_context)
    result = ""
    for name, args, kwargs in calls:
        result = both(ours, ref, name, args, kwargs)
    assert re.search(pattern, result), result[:500]


@pytest.mark.parametrize("seed", [0, 42, -7, 2**80, 1.5, "seed"], ids=repr)  # None would seed from os.urandom
def test_random_seed_drives_timestamps(seed):
    ours, ref = make_pair({**LOGGED_IN, "random_seed": seed})
    for amount in (1, 2, 3):
        both(ours, ref, "fund_account", (amount,))
        both(ours, ref, "withdraw_funds", (amount,))


def test_bad_random_seed_fails_at_load_like_the_reference():
    with pytest.raises(TypeError) as theirs:
        make_reference(CLASS, {"random_seed": [1]})
    with pytest.raises(TypeError) as mine:
        make_ours(CLASS, {"random_seed": [1]})
    assert str(mine.value) == str(theirs.value)


@pytest.mark.parametrize("zone", ["UTC", "America/New_York", "Australia/Lord_Howe", "Asia/Kathmandu"])
def test_transaction_timestamps_follow_local_time_zone(zone):
    """The reference turns CURRENT_TIME into epoch seconds and back in local time; so do we."""
    if not hasattr(time, "tzset"):
        pytest.skip("platform: no time.tzset")
    old = os.environ.get("TZ")
    os.environ["TZ"] = zone
    time.tzset()
    try:
        ours, ref = make_pair(LOGGED_IN)
        for amount in (1, 2, 3, 4):
            both(ours, ref, "fund_account", (amount,))
        stamps = [t["timestamp"] for t in ours.transaction_history[-4:]]
        assert all(datetime(2024, 9, 1, 10, 30) <= datetime.fromisoformat(s) for s in stamps), stamps
    finally:
        if old is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = old
        time.tzset()


# --------------------------------------------------------------------------- stateful fuzzing

JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
    st.lists(st.text(max_size=3), max_size=3),
    st.dictionaries(st.text(max_size=2), st.integers(-2, 2), max_size=2),
)
NAMES = ["Apple", "Google", "Tesla", "Microsoft", "Nvidia", "Zeta Corp", "Alpha Tech", "Omega Industries",
         "Quasar Ltd.", "Neptune Systems", "Synex Solutions", "Amazon", "Gorilla", "apple", "Meta"]
DATES = ["2024-09-01", "2024-09-02", "2024-08-31", "2024-10-27", "2026-10-28", "2024-9-1", "2024/09/01",
         "2024-13-01", "2024-09-01 10:00:00", "", "0"]


@st.composite
def mostly(draw, good, bad=JUNK):
    """``good`` about five times in six, else ``bad`` (nested ``one_of`` would flatten to 1/8 good)."""
    return draw(bad) if draw(st.integers(0, 5)) == 5 else draw(good)


@st.composite
def symbols(draw, ref):
    known = list(ref.stocks) * 3 + list(ref.watch_list) + ["XTC", "F", "aapl", "AMZN"]
    return draw(mostly(st.sampled_from(known)))


@st.composite
def symbol_lists(draw, ref):
    return draw(mostly(st.one_of(st.lists(symbols(ref), max_size=5), st.sampled_from(list(ref.stocks)))))


@st.composite
def order_ids(draw, ref):
    known = list(ref.orders) + [ref.order_counter, ref.order_counter - 1, str(next(iter(ref.orders), 1))]
    floats = [float(k) for k in ref.orders if isinstance(k, int)]
    return draw(mostly(st.sampled_from(known + floats)))


@st.composite
def numbers(draw, low=-10.0, high=20000.0):
    return draw(mostly(st.one_of(
        st.floats(low, high), st.integers(int(low), int(high)), st.sampled_from([0, 0.0, -1, 1, 1e300, 0.5]),
    )))


@st.composite
def dates(draw):
    return draw(mostly(st.one_of(st.sampled_from(DATES), st.none())))


@st.composite
def arguments(draw, names, values):
    """Split ``values`` for ``names`` into positional and keyword arguments; sometimes break the call."""
    values = list(values)
    cut = draw(st.integers(0, len(values)))
    args = tuple(values[:cut])
    kwargs = dict(zip(names[cut:], values[cut:]))
    mutation = draw(st.sampled_from(["none"] * 27 + ["drop", "extra_kw", "extra_pos"]))
    if mutation == "drop" and (args or kwargs):
        if kwargs:
            kwargs.pop(draw(st.sampled_from(sorted(kwargs))))
        else:
            args = args[:-1]
    elif mutation == "extra_kw":
        kwargs[draw(st.sampled_from(["x", "symbol", "amount", "stock"]))] = draw(JUNK)
    elif mutation == "extra_pos":
        args = args + (draw(JUNK),)
    return args, kwargs


class TradingBotMachine(RuleBasedStateMachine):
    @initialize(config=st.sampled_from(CONFIGS), long_context=st.booleans())
    def build(self, config, long_context):
        self.ours, self.ref = make_pair(config, long_context)

    def check(self, data, name, names=(), values=()):
        args, kwargs = data.draw(arguments(list(names), values))
        both(self.ours, self.ref, name, args, kwargs)

    @rule(data=st.data())
    def login_or_out(self, data):
        name = data.draw(st.sampled_from(["trading_login", "trading_logout", "trading_get_login_status"]))
        if name == "trading_login":
            self.check(data, name, ("username", "password"), (data.draw(JUNK), data.draw(JUNK)))
        else:
            self.check(data, name)

    @rule(data=st.data())
    def no_argument_tool(self, data):
        name = data.draw(st.sampled_from(
            ["get_current_time", "get_account_info", "get_watchlist", "get_order_history"]
        ))
        self.check(data, name)

    @rule(data=st.data())
    def get_symbol_by_name(self, data):
        self.check(data, "get_symbol_by_name", ("name",), (data.draw(mostly(st.sampled_from(NAMES))),))

    @rule(data=st.data())
    def single_symbol_tool(self, data):
        name, param = data.draw(st.sampled_from([
            ("get_stock_info", "symbol"), ("remove_stock_from_watchlist", "symbol"), ("add_to_watchlist", "stock"),
        ]))
        self.check(data, name, (param,), (data.draw(symbols(self.ref)),))

    @rule(data=st.data())
    def order_id_tool(self, data):
        name = data.draw(st.sampled_from(["get_order_details", "cancel_order"]))
        self.check(data, name, ("order_id",), (data.draw(order_ids(self.ref)),))

    @rule(data=st.data())
    def place_order(self, data):
        order_type = data.draw(mostly(st.sampled_from(["Buy", "Sell", "buy", "SELL", "Hold"])))
        values = (order_type, data.draw(symbols(self.ref)), data.draw(numbers(-10, 3000)), data.draw(numbers(-2, 50)))
        self.check(data, "place_order", ("order_type", "symbol", "price", "amount"), values)

    @rule(data=st.data())
    def move_funds(self, data):
        name = data.draw(st.sampled_from(["fund_account", "withdraw_funds"]))
        self.check(data, name, ("amount",), (data.draw(numbers()),))

    @rule(data=st.data())
    def get_transaction_history(self, data):
        self.check(data, "get_transaction_history", ("start_date", "end_date"), (data.draw(dates()), data.draw(dates())))

    @rule(data=st.data())
    def get_available_stocks(self, data):
        sector = data.draw(mostly(st.sampled_from(["Technology", "Automobile", "technology", "Energy"])))
        self.check(data, "get_available_stocks", ("sector",), (sector,))

    @rule(data=st.data())
    def filter_stocks_by_price(self, data):
        values = (data.draw(symbol_lists(self.ref)), data.draw(numbers(-10, 3000)), data.draw(numbers(-10, 3000)))
        self.check(data, "filter_stocks_by_price", ("stocks", "min_price", "max_price"), values)

    @rule(data=st.data())
    def notify_price_change(self, data):
        threshold = data.draw(mostly(st.floats(-1, 1), numbers()))
        self.check(data, "notify_price_change", ("stocks", "threshold"), (data.draw(symbol_lists(self.ref)), threshold))


TradingBotMachine.TestCase.settings = settings(settings(), stateful_step_count=30)
TestTradingBotMachine = TradingBotMachine.TestCase
