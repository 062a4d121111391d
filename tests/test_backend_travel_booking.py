"""Differential tests of backends.travel_booking.TravelAPI against the reference."""

from __future__ import annotations

import copy
import datetime as dt
import re
from functools import lru_cache

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from bfcl_safe.backends.long_context import load_long_context
from bfcl_safe.backends.travel_booking import AIRPORTS, BASE_FARES, CITY_AIRPORTS, TravelAPI
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
from tests.refenv import import_reference, reference_package_dir

CLASS = "TravelAPI"
EXTENSIONS = ("CREDIT_CARD_EXTENSION", "BOOKING_RECORD_EXTENSION")


# -- process-global extension data ---------------------------------------------
#
# The reference inserts its module-level extension dicts (not copies) into every
# long-context instance, and so do we with the dicts of ``long_context_data``: a
# balance change on an extension card is seen process-wide on each side. Both sides
# stay in step as long as every call goes to both; we still reset both to the
# pristine data around each test so that other test files cannot leak into ours.


@lru_cache(maxsize=None)
def _pristine():
    return load_long_context(reference_package_dir())


def _reference_extensions():
    module = import_reference("eval_checker.multi_turn_eval.func_source_code.long_context")
    return {name: getattr(module, name) for name in EXTENSIONS}


def reset_extensions() -> None:
    pristine = _pristine()
    for side in (long_context_data(), _reference_extensions()):
        for name in EXTENSIONS:
            for key, record in side[name].items():
                record.clear()
                record.update(copy.deepcopy(pristine[name][key]))


@pytest.fixture(autouse=True)
def _clean_extensions():
    reset_extensions()
    yield
    reset_extensions()


@lru_cache(maxsize=None)
def travel_configs() -> tuple[tuple[str, dict], ...]:
    return tuple(
        (entry["id"], entry["initial_config"].get(CLASS, {}))
        for entry, _ in dataset()
        if CLASS in entry["involved_classes"]
    )


def make_pair(config: dict, long_context: bool):
    return make_ours(CLASS, config, long_context), make_reference(CLASS, config, long_context)


# The reference prints a set of the travel classes whose order depends on the
# process's string hash seed (and on its .pyc); ours prints one fixed order. Results
# are compared with the listed classes sorted. See test_travel_class_set_message.
_CLASS_SET = re.compile(r"Must be one of \{([^{}]*)\}")


def normalized(result: str) -> str:
    return _CLASS_SET.sub(lambda m: "Must be one of {" + ", ".join(sorted(m.group(1).split(", "))) + "}", result)


def compare(ours, ref, name, args=(), kwargs=None, context=""):
    got = call(ours, name, args, kwargs)
    expected = call(ref, name, args, kwargs)
    assert normalized(got) == normalized(expected), f"{context} {name}{args}{kwargs}:\n ours: {got}\n  ref: {expected}"
    return got


def run_both(ours, ref, name, args=(), kwargs=None):
    got = compare(ours, ref, name, args, kwargs)
    assert_same_state(ours, ref, f"{name}{args}{kwargs}")
    return got


# -- contract --------------------------------------------------------------------


def test_same_tool_set():
    assert_same_tool_set(CLASS)


def test_same_signatures():
    assert_same_signatures(CLASS)


def test_ground_truth_replay():
    n = replay_ground_truth({CLASS})
    print(f"{CLASS}: {n} ground-truth calls compared")
    assert n > 0


def test_ground_truth_replay_long_context():
    n = replay_ground_truth({CLASS}, long_context_only=True)
    print(f"{CLASS}: {n} long-context ground-truth calls compared")
    assert n > 0


def test_from_config_does_not_mutate_config():
    for entry_id, config in travel_configs():
        before = copy.deepcopy(config)
        for long_context in (False, True):
            ours = make_ours(CLASS, config, long_context)
            run_both(ours, make_reference(CLASS, config, long_context), "get_all_credit_cards")
            ours.credit_card_list.clear()
            ours.booking_record.clear()
        assert config == before, entry_id


def test_long_context_needs_data():
    with pytest.raises(ValueError, match="long_context_data"):
        TravelAPI.from_config({}, long_context=True)


def test_public_state_order():
    ours, ref = make_pair(travel_configs()[0][1], False)
    assert_same_state(ours, ref, "fresh")


# -- targeted quirks ------------------------------------------------------------

TOKEN = "abc123token"
BASE_CONFIG = {
    "credit_card_list": {
        "card_1": {"card_number": "1111", "balance": 5000.0},
        "card_nobal": {"card_number": "2222"},
    },
    "booking_record": {
        "bk_1": {
            "card_id": "card_1", "travel_date": "2024-01-01", "travel_from": "SFO", "travel_to": "LAX",
            "travel_class": "economy", "travel_cost": 200.0, "transaction_id": "t1",
        },
        "bk_ghost_card": {
            "card_id": "nope", "travel_date": "2024-01-01", "travel_from": "SFO", "travel_to": "LAX",
            "travel_class": "economy", "travel_cost": 200.0, "transaction_id": "t2",
        },
        "bk_partial": {"travel_cost": 10.0, "travel_date": "2024-01-01"},
    },
    "access_token": TOKEN,
    "token_type": "Bearer",
    "token_expires_in": 3600,
    "token_scope": "read_write",
    "user_first_name": "Ada",
    "user_last_name": "Lovelace",
    "budget_limit": 1000.0,
}

AUTH = {
    "client_id": "c", "client_secret": "s", "refresh_token": "r", "grant_type": "read_write",
    "user_first_name": "Ada", "user_last_name": "Lovelace",
}


def _book(**overrides):
    kwargs = {
        "access_token": TOKEN, "card_id": "card_1", "travel_date": "2024-01-01",
        "travel_from": "SFO", "travel_to": "LAX", "travel_class": "economy",
    }
    kwargs.update(overrides)
    return ("book_flight", (), kwargs)


def _years_ago(years: int, days: int = 0) -> str:
    today = dt.date.today()
    try:
        then = today.replace(year=today.year - years)
    except ValueError:  # 29 February
        then = today.replace(year=today.year - years, day=28)
    return (then + dt.timedelta(days=days)).isoformat()


QUIRK_CASES = [
    # (id, config overrides, long_context, calls, fragment expected in the last result)
    ("exchange-string-value-repeats", {}, False,
     [("compute_exchange_rate", (), {"base_currency": "USD", "target_currency": "RMB", "value": "2"})],
     "2222222.0"),
    ("exchange-string-value-float-rate", {}, False,
     [("compute_exchange_rate", (), {"base_currency": "USD", "target_currency": "EUR", "value": "2"})],
     "can't multiply sequence"),
    ("exchange-to-usd-rounded", {}, False,
     [("compute_exchange_rate", (), {"base_currency": "JPY", "target_currency": "USD", "value": 1000})],
     "9.09"),
    ("exchange-no-rate", {}, False,
     [("compute_exchange_rate", (), {"base_currency": "EUR", "target_currency": "JPY", "value": 1.0})],
     "No available exchange rate"),
    ("register-checks-number-against-ids", {}, False,
     [("register_credit_card", (), {"access_token": TOKEN, "card_number": "card_1", "expiration_date": "1/30",
                                    "cardholder_name": "A", "card_verification_number": 1})],
     "Card already registered"),
    ("register-token-not-initialized", {"token_expires_in": None}, False,
     [("register_credit_card", (TOKEN, "9", "1/30", "A", 1), {})],
     "Token not initialized"),
    ("register-unhashable-number", {}, False,
     [("register_credit_card", (TOKEN, ["9"], "1/30", "A", 1), {})],
     "unhashable type: 'list'"),
    ("budget-compared-with-balance", {"budget_limit": 6000.0}, False,
     [_book()], "Balance is less than budget limit"),
    ("book-balance-not-found", {}, False,
     [_book(card_id="card_nobal")], "Balance not found"),
    ("book-pvg-has-fare-but-no-airport", {}, False,
     [_book(travel_from="JFK", travel_to="PVG")], "Invalid destination airport code: PVG"),
    ("book-no-route", {}, False,
     [_book(travel_from="LAX", travel_to="CDG")], "No available route for the given airports."),
    ("book-date-not-a-string", {}, False,
     [_book(travel_date=20240101)], "strptime() argument 1 must be str, not int"),
    ("book-bad-date", {}, False,
     [_book(travel_date="2024/01/01")], "Invalid date format"),
    ("book-class-set-message", {}, False,
     [_book(travel_class="premium")], "Invalid travel class. Must be one of {"),
    ("book-class-unhashable", {}, False,
     [_book(travel_class=["economy"])], "unhashable type: 'list'"),
    ("book-long-context-returns-history", {}, True,
     [_book()], '"booking_901"'),
    ("book-then-invoice-and-cancel", {}, False,
     [_book(), ("get_booking_history", (TOKEN,), {}), ("cancel_booking", (TOKEN, "bk_1"), {})],
     '"cancel_status": true'),
    ("cancel-refund-to-unknown-card", {}, False,
     [("cancel_booking", (TOKEN, "bk_ghost_card"), {})], "Error during execution: 'nope'"),
    ("cancel-booking-without-card-field", {}, False,
     [("cancel_booking", (TOKEN, "bk_partial"), {})], "Error during execution: 'card_id'"),
    ("invoice-missing-field", {}, False,
     [("retrieve_invoice", (TOKEN, "bk_partial"), {})], "Error during execution: 'travel_from'"),
    ("invoice-default-booking-none", {}, False,
     [("retrieve_invoice", (TOKEN,), {})], "Booking not found"),
    ("expired-token-before-invalid", {"token_expires_in": 0}, False,
     [("get_credit_card_balance", ("wrong", "card_1"), {})], "Token expired"),
    ("balance-lists-card-ids", {}, False,
     [("get_credit_card_balance", (TOKEN, "zzz"), {})], "Here are a list of card_id's: ['card_1', 'card_nobal']"),
    ("insurance-budget-before-booking", {}, False,
     [("purchase_insurance", (TOKEN, "travel", "missing", 5000.0, "card_1"), {})], "Exceeded budget limit"),
    ("insurance-cost-string-vs-budget", {}, False,
     [("purchase_insurance", (TOKEN, "travel", "bk_1", "50", "card_1"), {})], "'<' not supported"),
    ("insurance-cost-string-no-budget", {"budget_limit": None}, False,
     [("purchase_insurance", (TOKEN, "travel", "bk_1", "50", "card_1"), {})], "unsupported operand type(s) for -="),
    ("insurance-card-without-balance", {}, False,
     [("purchase_insurance", (TOKEN, "travel", "bk_1", 5.0, "card_nobal"), {})], "Error during execution: 'balance'"),
    ("verify-message-has-no-space", {}, False,
     [("verify_traveler_information", ("Bob", "Lovelace", "1990-01-01", "US1"), {})],
     "another user.Expected Ada Lovelace, got Bob Lovelace"),
    ("verify-minor-by-wall-clock", {}, False,
     [("verify_traveler_information", ("Ada", "Lovelace", _years_ago(18, days=1), "US1"), {})],
     "at least 18"),
    ("verify-adult-today", {}, False,
     [("verify_traveler_information", ("Ada", "Lovelace", _years_ago(18), "US1"), {})],
     '"verification_status": true'),
    ("verify-passport-not-a-string", {}, False,
     [("verify_traveler_information", ("Ada", "Lovelace", "1990-01-01", 12), {})],
     "'int' object has no attribute 'startswith'"),
    ("budget-limit-float-conversion", {}, False,
     [("set_budget_limit", (TOKEN, "12.5"), {})], '{"budget_limit": 12.5}'),
    ("budget-limit-none", {}, False,
     [("set_budget_limit", (TOKEN, None), {})], "float() argument must be"),
    ("flight-cost-long-context-lists-all-routes", {}, True,
     [("get_flight_cost", ("SFO", "LAX", "2024-01-01", "first"), {})], "travel_cost_list"),
    ("flight-cost-date-not-iterable", {}, False,
     [("get_flight_cost", ("SFO", "LAX", 5, "first"), {})], "'int' object is not iterable"),
    ("flight-cost-bad-class-before-date", {}, False,
     [("get_flight_cost", ("SFO", "LAX", 5, "coach"), {})], "Invalid travel class. Options are"),
    ("flight-cost-unhashable-airport", {}, False,
     [("get_flight_cost", (["SFO"], "LAX", "2024-01-01", "first"), {})], "unhashable type: 'list'"),
    ("nearest-airport-unknown", {}, False,
     [("get_nearest_airport_by_city", ("Atlantis",), {})], "Unknown"),
    ("support-needs-booking", {}, False,
     [("contact_customer_support", ("bk_1", "help"), {})], "Thank you for contacting"),
    ("login-then-status", {"token_expires_in": None}, False,
     [("travel_get_login_status", (), {}), ("authenticate_travel", (), AUTH), ("travel_get_login_status", (), {})],
     '"status": true'),
    ("unexpected-keyword", {}, False,
     [("list_all_airports", (), {"x": 1})], "TravelAPI.list_all_airports() got an unexpected keyword argument 'x'"),
    ("missing-argument", {}, False,
     [("cancel_booking", (TOKEN,), {})], "missing 1 required positional argument: 'booking_id'"),
]


@pytest.mark.parametrize(
    "overrides, long_context, calls, fragment",
    [case[1:] for case in QUIRK_CASES],
    ids=[case[0] for case in QUIRK_CASES],
)
def test_quirk(overrides, long_context, calls, fragment):
    config = {**BASE_CONFIG, **overrides}
    ours, ref = make_pair(config, long_context)
    result = None
    for name, args, kwargs in calls:
        result = run_both(ours, ref, name, args, kwargs)
    assert fragment in result


def test_travel_class_set_message():
    """The reference's message lists a hash-ordered set; ours is fixed, same members."""
    ours, ref = make_pair(BASE_CONFIG, False)
    kwargs = _book(travel_class="premium")[2]
    got = call(ours, "book_flight", (), kwargs)
    expected = call(ref, "book_flight", (), kwargs)
    assert "Must be one of {'economy', 'business', 'first'}" in got
    assert normalized(got) == normalized(expected)


def test_extension_cards_are_shared_between_instances():
    """quirk: long-context instances share the extension card dicts (ours and the reference)."""
    card = "1234567812345678"
    pairs = [make_pair(BASE_CONFIG, True) for _ in range(2)]
    for ours, ref in pairs:
        run_both(ours, ref, "get_credit_card_balance", (TOKEN, card))
    run_both(*pairs[0], *_book(card_id=card))
    after = [run_both(ours, ref, "get_credit_card_balance", (TOKEN, card)) for ours, ref in pairs]
    assert after[0] == after[1] == '{"card_balance": 4600.0}'
    assert pairs[0][0].credit_card_list[card] is pairs[1][0].credit_card_list[card]


# -- Hypothesis state machine ---------------------------------------------------

JUNK = st.one_of(
    st.none(),
    st.integers(min_value=-10**6, max_value=10**6),
    st.floats(allow_nan=False, width=32),
    st.just(""),
    st.text(max_size=6),
    st.lists(st.integers(0, 9), max_size=2),
    st.booleans(),
    st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 3), max_size=1),
)
CURRENCIES = ["USD", "RMB", "EUR", "JPY", "GBP", "CAD", "AUD", "INR", "RUB", "BRL", "MXN"]
CLASSES = ["economy", "business", "first", "Economy", "coach"]


@st.composite
def dates(draw):
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return draw(st.dates(min_value=dt.date(1900, 1, 1), max_value=dt.date(2030, 12, 31))).isoformat()
    if kind == 1:
        return _years_ago(18, days=draw(st.integers(-2, 2)))
    if kind == 2:
        return draw(st.sampled_from(["2024-1-5", "2024/01/05", "05-01-2024", "2024-02-30", "2024-01-01x", ""]))
    return draw(JUNK)


# Strategies that do not depend on the state are built once (building them per
# draw dominated the run time). They draw well-formed values; junk is mixed in per
# call by tool_call.
STATIC = {
    "text": st.text(max_size=8),
    "airport": st.sampled_from(list(AIRPORTS) + ["PVG", "sfo", "XXX"]),
    "class": st.sampled_from(CLASSES),
    "amount": st.one_of(
        st.floats(min_value=-1e4, max_value=1e6, allow_nan=False),
        st.integers(-100, 10**5),
        st.sampled_from(["100", "1.5", "abc", float("inf")]),
    ),
    "currency": st.sampled_from(CURRENCIES + ["usd", "XYZ"]),
    "date": dates(),
    "grant": st.sampled_from(["read_write", "read", "write"]),
    "cvv": st.integers(0, 999),
    "passport": st.sampled_from(["US123456", "UK123", "us1", ""]),
    "city": st.sampled_from(list(CITY_AIRPORTS) + ["Atlantis"]),
}
AMOUNT = st.one_of(STATIC["amount"], JUNK)
ROUTE = st.sampled_from(list(BASE_FARES))


def _state_strategy(kind: str, ref):
    """Values read from the reference's current state (plus near misses)."""
    if kind == "token":
        return st.sampled_from([ref.access_token, ref.access_token, ref.access_token, "123456", 123456])
    if kind == "card":
        return st.sampled_from(list(ref.credit_card_list) + ["000000000000"])
    if kind == "card_number":
        return st.sampled_from(list(ref.credit_card_list) + ["4111111111111111"])
    if kind == "booking":
        return st.sampled_from(list(ref.booking_record) + ["1234567"])
    if kind == "name":
        names = [n for n in (ref.user_first_name, ref.user_last_name) if n is not None]
        return st.sampled_from(names + ["Bob"])
    return STATIC[kind]


#: tool -> its parameters, each with the kind of value to draw.
TOOL_PARAMS = {
    "authenticate_travel": [("client_id", "text"), ("client_secret", "text"), ("refresh_token", "text"),
                            ("grant_type", "grant"), ("user_first_name", "name"), ("user_last_name", "name")],
    "travel_get_login_status": [],
    "get_budget_fiscal_year": [("lastModifiedAfter", "text"), ("includeRemoved", "text")],
    "register_credit_card": [("access_token", "token"), ("card_number", "card_number"),
                             ("expiration_date", "text"), ("cardholder_name", "text"),
                             ("card_verification_number", "cvv")],
    "get_flight_cost": [("travel_from", "airport"), ("travel_to", "airport"), ("travel_date", "date"),
                        ("travel_class", "class")],
    "get_credit_card_balance": [("access_token", "token"), ("card_id", "card")],
    "book_flight": [("access_token", "token"), ("card_id", "card"), ("travel_date", "date"),
                    ("travel_from", "airport"), ("travel_to", "airport"), ("travel_class", "class")],
    "retrieve_invoice": [("access_token", "token"), ("booking_id", "booking"), ("insurance_id", "text")],
    "get_booking_history": [("access_token", "token")],
    "list_all_airports": [],
    "cancel_booking": [("access_token", "token"), ("booking_id", "booking")],
    "compute_exchange_rate": [("base_currency", "currency"), ("target_currency", "currency"), ("value", "amount")],
    "verify_traveler_information": [("first_name", "name"), ("last_name", "name"), ("date_of_birth", "date"),
                                    ("passport_number", "passport")],
    "set_budget_limit": [("access_token", "token"), ("budget_limit", "amount")],
    "get_nearest_airport_by_city": [("location", "city")],
    "purchase_insurance": [("access_token", "token"), ("insurance_type", "text"), ("booking_id", "booking"),
                           ("insurance_cost", "amount"), ("card_id", "card")],
    "contact_customer_support": [("booking_id", "booking"), ("message", "text")],
    "get_all_credit_cards": [],
}
TOOL_NAME = st.sampled_from(sorted(TOOL_PARAMS))
SHAPE = st.sampled_from(["kwargs"] * 6 + ["positional", "drop", "extra", "twice"])
EXTRA_KEYWORD = st.sampled_from(["x", "card", "token"])


@st.composite
def tool_call(draw, ref) -> tuple[str, tuple, dict]:
    """A call of a random tool with arguments drawn from the reference's state and junk."""
    tool = draw(TOOL_NAME)
    # Most calls are well-formed; in the others each argument may be junk.
    dirty = draw(st.integers(0, 9)) >= 6
    values = []
    for param, kind in TOOL_PARAMS[tool]:
        if dirty and draw(st.booleans()):
            values.append((param, draw(JUNK)))
        else:
            values.append((param, draw(_state_strategy(kind, ref))))
    if tool in ("get_flight_cost", "book_flight") and draw(st.booleans()):
        # A known route half of the time (random pairs rarely are).
        route = dict(zip(("travel_from", "travel_to"), draw(ROUTE)))
        values = [(p, route.get(p, v)) for p, v in values]
    # Optional parameters are sometimes left out, as models often do.
    if tool in ("get_budget_fiscal_year", "retrieve_invoice"):
        values = [(p, v) for p, v in values if p == "access_token" or draw(st.booleans())]
    shape = draw(SHAPE)
    if shape == "positional":
        return tool, tuple(v for _, v in values), {}
    if shape == "drop" and values:
        del values[draw(st.integers(0, len(values) - 1))]
    kwargs = dict(values)
    if shape == "extra":
        kwargs[draw(EXTRA_KEYWORD)] = 1
    if shape == "twice" and values:
        return tool, (values[0][1],), kwargs
    return tool, (), kwargs


class TravelMachine(RuleBasedStateMachine):
    @initialize(
        index=st.integers(min_value=0),
        long_context=st.booleans(),
        log_in=st.booleans(),
    )
    def build(self, index, long_context, log_in):
        reset_extensions()
        configs = travel_configs()
        self.entry_id, config = configs[index % len(configs)]
        self.ours, self.ref = make_pair(config, long_context)
        self.context = f"{self.entry_id} long_context={long_context}"
        if log_in:
            run_both(self.ours, self.ref, "authenticate_travel", (), dict(AUTH))

    def _random_call(self, data):
        name, args, kwargs = data.draw(tool_call(self.ref), label="call")
        compare(self.ours, self.ref, name, args, kwargs, self.context)

    # Two rules for random calls, so that they get two thirds of the steps.
    @rule(data=st.data())
    def call_tool(self, data):
        self._random_call(data)

    @rule(data=st.data())
    def call_another_tool(self, data):
        self._random_call(data)

    @rule(
        route=st.sampled_from(list(BASE_FARES)),
        date=st.dates(min_value=dt.date(2024, 1, 1), max_value=dt.date(2026, 12, 31)),
        travel_class=st.sampled_from(["economy", "business", "first"]),
        data=st.data(),
    )
    def book_plausible(self, route, date, travel_class, data):
        """A well-formed booking (random calls rarely are), then a follow-up on it."""
        cards = list(self.ref.credit_card_list)
        if not cards:
            return
        card_id = data.draw(st.sampled_from(cards), label="card")
        kwargs = {"access_token": self.ref.access_token, "card_id": card_id, "travel_date": date.isoformat(),
                  "travel_from": route[0], "travel_to": route[1], "travel_class": travel_class}
        compare(self.ours, self.ref, "book_flight", (), kwargs, self.context)
        bookings = list(self.ref.booking_record)
        if not bookings:
            return
        booking_id = data.draw(st.sampled_from(bookings), label="booking")
        follow_up = data.draw(st.sampled_from(["retrieve_invoice", "cancel_booking", "purchase_insurance"]))
        if follow_up == "purchase_insurance":
            args = (self.ref.access_token, "comprehensive", booking_id, data.draw(AMOUNT), card_id)
        else:
            args = (self.ref.access_token, booking_id)
        compare(self.ours, self.ref, follow_up, args, {}, self.context)

    @invariant()
    def same_state(self):
        if hasattr(self, "ours"):
            assert_same_state(self.ours, self.ref, self.context)


TestTravelMachine = TravelMachine.TestCase
TestTravelMachine.settings = settings(
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
