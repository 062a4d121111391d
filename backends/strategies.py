"""Hypothesis strategies for valid tool calls on the simulated APIs.

For fuzzing agents, checkers and tools against the eight backends: every strategy
draws the names, ids and values a call needs from the instance's *current* state
(existing files of the current directory, user ids, tweet and ticket ids, stock
symbols, card and booking ids, ...), so that most generated calls are meaningful
operations rather than "not found" errors. Needs Hypothesis (``pip install
'bfcl-safe[fuzz]'``)::

    from hypothesis import given
    from bfcl_safe.backends.gorilla_file_system import GorillaFileSystem
    from bfcl_safe.backends.strategies import call_sequences, run_calls

    def fresh():
        return [GorillaFileSystem.from_config({"root": {"home": {"type": "directory", "contents": {}}}})]

    @given(call_sequences(fresh, max_size=20))
    def test_my_checker(calls):
        results = run_calls(fresh(), calls)  # one result string per call
        ...

Calls are :class:`interp.CallSpec` values (``name`` and keyword arguments, all
plain literals); ``spec.render()`` is the Python call text, :func:`as_fc_step` and
:func:`as_prompting_step` give the two result-file formats. Backends are
deterministic (seeded), so replaying a drawn sequence on a fresh instance gives the
same results as when it was drawn.
"""

from __future__ import annotations

import inspect
import json
from datetime import date
from functools import lru_cache
from typing import Any, Callable, Iterable, Mapping, Sequence

try:
    from hypothesis import strategies as st
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "backends.strategies needs Hypothesis: pip install 'bfcl-safe[fuzz]'"
    ) from exc

from bfcl_safe.backends.gorilla_file_system import Directory, File, GorillaFileSystem
from bfcl_safe.backends.math_api import IMPERIAL_FACTORS, METRES_PER_UNIT, MathAPI
from bfcl_safe.backends.message_api import MessageAPI
from bfcl_safe.backends.posting_api import TwitterAPI
from bfcl_safe.backends.ticket_api import EDITABLE_FIELDS, HIGHEST_PRIORITY, LOWEST_PRIORITY, TicketAPI
from bfcl_safe.backends.trading_bot import TradingBot
from bfcl_safe.backends.travel_booking import AIRPORTS, BASE_FARES, CITY_AIRPORTS, CLASS_FACTORS, USD_RATES, TravelAPI
from bfcl_safe.backends.vehicle_control import (
    DOOR_NAMES,
    HEADLIGHT_MODES,
    PARKING_BRAKE_MODES,
    ZIPCODES,
    VehicleControlAPI,
)
from bfcl_safe.interp import CallSpec, MethodTable, run_call, tool_names

__all__ = [
    "ARGUMENTS", "as_fc_step", "as_prompting_step", "call_sequences", "run_calls", "tool_calls",
]

Kwargs = st.SearchStrategy[dict]

# --------------------------------------------------------------------------- building blocks

_WORDS = ("report", "budget", "alpha", "notes", "draft", "final", "data", "summary", "todo", "log")
words = st.sampled_from(_WORDS)
#: Short human text: words joined by spaces, sometimes with a little punctuation.
texts = st.lists(words, min_size=1, max_size=6).map(" ".join) | st.text(
    st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=30
)
#: A name that is valid for a new file or directory (no forbidden characters, not "." or "..").
new_names = st.from_regex(r"[a-z][a-z0-9_]{0,8}(\.txt|\.md|\.csv)?", fullmatch=True)
person_names = st.sampled_from(("Alice", "Bob", "Catherine", "Daniel", "Eve", "Frank", "Grace"))
dates = st.dates(date(2000, 1, 1), date(2030, 12, 31)).map(date.isoformat)
small_floats = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)
numbers = st.integers(-10**6, 10**6) | small_floats
positive = st.floats(min_value=0.01, max_value=1e5, allow_nan=False, allow_infinity=False)


def kwargs(**fields: st.SearchStrategy[Any] | _Optional) -> Kwargs:
    """A strategy for a keyword-argument dict (optional fields: pass ``optional(...)``)."""
    required = {k: v for k, v in fields.items() if not isinstance(v, _Optional)}
    optional = {k: v.strategy for k, v in fields.items() if isinstance(v, _Optional)}
    return st.fixed_dictionaries(required, optional=optional)


class _Optional:
    __slots__ = ("strategy",)

    def __init__(self, strategy: st.SearchStrategy):
        self.strategy = strategy


def optional(strategy: st.SearchStrategy) -> _Optional:
    """Mark a keyword argument of :func:`kwargs` as optional (sometimes left out)."""
    return _Optional(strategy)


def _existing_or(values: Iterable[Any], fallback: st.SearchStrategy) -> st.SearchStrategy:
    """One of ``values`` (mostly), or a ``fallback`` value (a miss, now and then)."""
    values = list(values)
    if not values:
        return fallback
    existing = st.sampled_from(values)
    return st.one_of(existing, existing, existing, fallback)


# --------------------------------------------------------------------------- per backend
#
# Each function maps an instance to {tool name: strategy of its keyword arguments},
# read from the instance's current state. Tests check that every tool has one.


def _file_system(fs: GorillaFileSystem) -> dict[str, Kwargs]:
    here = fs._current_dir.contents  # the current directory is navigation state, not public state
    files = [name for name, item in here.items() if isinstance(item, File) and name not in (".", "..")]
    dirs = [name for name, item in here.items() if isinstance(item, Directory) and name not in (".", "..")]
    items = files + dirs
    file_names = _existing_or(files, new_names)
    fresh = new_names.filter(lambda n: n not in here)
    return {
        "pwd": kwargs(),
        "ls": kwargs(a=optional(st.booleans())),
        "cd": kwargs(folder=_existing_or(dirs, st.sampled_from(("..", "/")))),
        "mkdir": kwargs(dir_name=fresh),
        "touch": kwargs(file_name=fresh),
        "echo": kwargs(content=texts, file_name=optional(st.none() | file_names)),
        "cat": kwargs(file_name=file_names),
        "find": kwargs(path=optional(st.just(".")), name=optional(st.none() | words | st.sampled_from(items or ["a"]))),
        "wc": kwargs(file_name=file_names, mode=optional(st.sampled_from(("l", "w", "c")))),
        "sort": kwargs(file_name=file_names),
        "grep": kwargs(file_name=file_names, pattern=words),
        "du": kwargs(human_readable=optional(st.booleans())),
        "tail": kwargs(file_name=file_names, lines=optional(st.integers(1, 20))),
        "diff": kwargs(file_name1=file_names, file_name2=file_names),
        # Moving or copying a directory into itself builds a cycle (as in the reference):
        # the destination is a new name or another directory.
        "mv": _move(items, dirs, fresh),
        "cp": _move(items, dirs, fresh),
        "rm": kwargs(file_name=_existing_or(items, new_names)),
        "rmdir": kwargs(dir_name=_existing_or(dirs, new_names)),
    }


def _move(items: list[str], dirs: list[str], fresh: st.SearchStrategy) -> Kwargs:
    if not items:
        return kwargs(source=new_names, destination=fresh)

    @st.composite
    def draw(data: Callable) -> dict:
        source = data(st.sampled_from(items))
        others = [d for d in dirs if d != source]
        destination = data(st.sampled_from(others) | fresh) if others else data(fresh)
        return {"source": source, "destination": destination}

    return draw()


def _math(_: MathAPI) -> dict[str, Kwargs]:
    number_lists = st.lists(numbers, min_size=1, max_size=10)
    units = sorted(METRES_PER_UNIT)
    imperial = sorted(IMPERIAL_FACTORS)
    pairs = st.sampled_from([key.split("_to_") for key in imperial])
    return {
        "absolute_value": kwargs(number=numbers),
        "add": kwargs(a=numbers, b=numbers),
        "subtract": kwargs(a=numbers, b=numbers),
        "multiply": kwargs(a=numbers, b=numbers),
        "divide": kwargs(a=numbers, b=numbers.filter(lambda b: b != 0)),
        "percentage": kwargs(part=numbers, whole=numbers.filter(lambda w: w != 0)),
        # No zero or tiny base: 0 ** -1 and 1e-300 ** -8 fail (as in the reference).
        "power": kwargs(base=st.integers(-50, -1) | st.integers(1, 50) | st.floats(0.5, 50),
                        exponent=st.integers(-8, 8)),
        "round_number": kwargs(number=numbers, decimal_places=optional(st.integers(0, 6))),
        "square_root": kwargs(number=positive, precision=st.integers(1, 30)),
        "logarithm": kwargs(value=positive, base=st.sampled_from((2, 10, 3.5, 0.5)), precision=st.integers(1, 30)),
        "max_value": kwargs(numbers=number_lists),
        "min_value": kwargs(numbers=number_lists),
        "mean": kwargs(numbers=number_lists),
        "sum_values": kwargs(numbers=number_lists),
        "standard_deviation": kwargs(numbers=number_lists),
        "si_unit_conversion": kwargs(value=numbers, unit_in=st.sampled_from(units), unit_out=st.sampled_from(units)),
        "imperial_si_conversion": pairs.flatmap(
            lambda pair: kwargs(value=numbers, unit_in=st.just(pair[0]), unit_out=st.just(pair[1]))
        ),
    }


def _message(api: MessageAPI) -> dict[str, Kwargs]:
    names = list(api.user_map)
    ids = list(api.user_map.values())
    user_ids = _existing_or(ids, st.from_regex(r"USR[0-9]{3}", fullmatch=True))
    return {
        "list_users": kwargs(),
        "get_user_id": kwargs(user=_existing_or(names, person_names)),
        "message_login": kwargs(user_id=user_ids),
        "message_get_login_status": kwargs(),
        "send_message": kwargs(receiver_id=user_ids, message=texts),
        "delete_message": kwargs(receiver_id=user_ids),
        "view_messages_sent": kwargs(),
        "add_contact": kwargs(user_name=person_names.filter(lambda n: n not in api.user_map)),
        "search_messages": kwargs(keyword=words),
        "get_message_stats": kwargs(),
    }


def _twitter(api: TwitterAPI) -> dict[str, Kwargs]:
    tweet_ids = _existing_or(list(api.tweets), st.integers(0, 20))
    users = st.sampled_from(("alice", "bob", "charlie", "dana", api.username))
    tags = st.lists(words.map(lambda w: f"#{w}"), max_size=3)
    return {
        "authenticate_twitter": kwargs(username=st.just(api.username), password=st.just(api.password)),
        "posting_get_login_status": kwargs(),
        # tags and mentions always given: the defaults are shared lists (a reference quirk).
        "post_tweet": kwargs(content=texts, tags=tags, mentions=st.lists(users.map(lambda u: f"@{u}"), max_size=3)),
        "comment": kwargs(tweet_id=tweet_ids, comment_content=texts),
        "retweet": kwargs(tweet_id=tweet_ids),
        "mention": kwargs(tweet_id=tweet_ids, mentioned_usernames=st.lists(users, min_size=1, max_size=3)),
        "follow_user": kwargs(username_to_follow=users),
        "unfollow_user": kwargs(username_to_unfollow=_existing_or(api.following_list, users)),
        "list_all_following": kwargs(),
        "get_tweet": kwargs(tweet_id=tweet_ids),
        "get_user_tweets": kwargs(username=users),
        "search_tweets": kwargs(keyword=words),
        "get_tweet_comments": kwargs(tweet_id=tweet_ids),
        "get_user_stats": kwargs(username=users),
    }


def _ticket(api: TicketAPI) -> dict[str, Kwargs]:
    ids = _existing_or([t["id"] for t in api.ticket_queue if isinstance(t, dict) and "id" in t], st.integers(1, 10))
    statuses = st.sampled_from(("Open", "Closed", "Resolved", "In Progress"))
    priorities = st.integers(LOWEST_PRIORITY, HIGHEST_PRIORITY)
    field_values = {"title": texts, "description": texts, "status": statuses, "priority": priorities}
    # At least one field: an empty dict does not survive the prompting format (a reference quirk).
    updates = st.fixed_dictionaries({}, optional={f: field_values[f] for f in sorted(EDITABLE_FIELDS)}).filter(bool)
    return {
        "ticket_login": kwargs(username=st.sampled_from(("alice", "bob", "support")), password=words),
        "logout": kwargs(),
        "ticket_get_login_status": kwargs(),
        "create_ticket": kwargs(title=texts, description=optional(texts), priority=optional(priorities)),
        "get_ticket": kwargs(ticket_id=ids),
        "close_ticket": kwargs(ticket_id=ids),
        "resolve_ticket": kwargs(ticket_id=ids, resolution=texts),
        "edit_ticket": kwargs(ticket_id=ids, updates=updates),
        "get_user_tickets": kwargs(status=optional(st.none() | statuses)),
    }


def _trading(bot: TradingBot) -> dict[str, Kwargs]:
    from bfcl_safe.backends.trading_bot import _SECTORS, _SYMBOLS_BY_NAME

    known = list(bot.stocks)
    symbols = _existing_or(known, st.sampled_from(sorted(_SYMBOLS_BY_NAME.values())))
    symbol_lists = st.lists(symbols, min_size=1, max_size=4, unique=True)
    order_ids = _existing_or([k for k in bot.orders if isinstance(k, int)], st.integers(12000, 13000))
    prices = st.floats(min_value=1, max_value=3000, allow_nan=False).map(lambda p: round(p, 2))
    return {
        "get_current_time": kwargs(),
        "get_symbol_by_name": kwargs(name=st.sampled_from(sorted(_SYMBOLS_BY_NAME)) | words),
        "get_stock_info": kwargs(symbol=symbols),
        "get_available_stocks": kwargs(sector=st.sampled_from(sorted(_SECTORS))),
        "filter_stocks_by_price": kwargs(stocks=symbol_lists, min_price=st.floats(0, 500),
                                         max_price=st.floats(500, 3000)),
        "add_to_watchlist": kwargs(stock=symbols),
        "remove_stock_from_watchlist": kwargs(symbol=_existing_or(bot.watch_list, symbols)),
        "get_watchlist": kwargs(),
        "place_order": kwargs(order_type=st.sampled_from(("Buy", "Sell")), symbol=symbols, price=prices,
                              amount=st.integers(1, 100)),
        "get_order_details": kwargs(order_id=order_ids),
        "cancel_order": kwargs(order_id=order_ids),
        "get_order_history": kwargs(),
        "get_account_info": kwargs(),
        "fund_account": kwargs(amount=positive),
        "withdraw_funds": kwargs(amount=positive),
        "get_transaction_history": kwargs(start_date=optional(dates), end_date=optional(dates)),
        "notify_price_change": kwargs(stocks=symbol_lists, threshold=st.floats(0, 5)),
        "trading_login": kwargs(username=words, password=words),
        "trading_logout": kwargs(),
        "trading_get_login_status": kwargs(),
    }


def _travel(api: TravelAPI) -> dict[str, Kwargs]:
    token = st.just(api.access_token) if api.access_token else st.from_regex(r"[0-9]{6}", fullmatch=True)
    cards = _existing_or(list(api.credit_card_list), st.from_regex(r"[0-9]{12}", fullmatch=True))
    bookings = _existing_or(list(api.booking_record), st.from_regex(r"[0-9]{7}", fullmatch=True))
    airports = st.sampled_from(AIRPORTS)
    # Routes with a fare (any other pair fails, as in the reference), and one time in ten
    # any pair (7 in 10 of those have no fare).
    routes = st.integers(0, 9).flatmap(
        lambda pick: st.tuples(airports, airports) if pick == 0 else st.sampled_from(sorted(BASE_FARES))
    )
    classes = st.sampled_from(sorted(CLASS_FACTORS))
    currencies = [code for code, _ in USD_RATES]
    exchange = st.sampled_from(currencies).flatmap(
        lambda other: st.sampled_from((("USD", other), (other, "USD")))
    )
    first = st.just(api.user_first_name) if api.user_first_name else person_names
    last = st.just(api.user_last_name) if api.user_last_name else st.sampled_from(("Smith", "Lee"))
    return {
        "authenticate_travel": kwargs(client_id=words, client_secret=words, refresh_token=words,
                                      grant_type=st.sampled_from(("read_write", "read", "write")),
                                      user_first_name=first, user_last_name=last),
        "travel_get_login_status": kwargs(),
        "get_budget_fiscal_year": kwargs(),
        "register_credit_card": kwargs(access_token=token,
                                       card_number=st.from_regex(r"[0-9]{16}", fullmatch=True),
                                       expiration_date=st.from_regex(r"(0[1-9]|1[0-2])/20[3-4][0-9]", fullmatch=True),
                                       cardholder_name=person_names, card_verification_number=st.integers(100, 999)),
        "get_flight_cost": routes.flatmap(lambda route: kwargs(
            travel_from=st.just(route[0]), travel_to=st.just(route[1]), travel_date=dates, travel_class=classes)),
        "get_credit_card_balance": kwargs(access_token=token, card_id=cards),
        "book_flight": routes.flatmap(lambda route: kwargs(
            access_token=token, card_id=cards, travel_date=dates, travel_from=st.just(route[0]),
            travel_to=st.just(route[1]), travel_class=classes)),
        "retrieve_invoice": kwargs(access_token=token, booking_id=optional(bookings)),
        "list_all_airports": kwargs(),
        "cancel_booking": kwargs(access_token=token, booking_id=bookings),
        "compute_exchange_rate": exchange.flatmap(
            lambda pair: kwargs(base_currency=st.just(pair[0]), target_currency=st.just(pair[1]), value=positive)
        ),
        "verify_traveler_information": kwargs(first_name=first, last_name=last, date_of_birth=dates,
                                              passport_number=st.from_regex(r"US[0-9]{7}", fullmatch=True)),
        "set_budget_limit": kwargs(access_token=token, budget_limit=st.floats(100, 5000).map(lambda x: round(x, 2))),
        "get_nearest_airport_by_city": kwargs(location=st.sampled_from(sorted(CITY_AIRPORTS))),
        "purchase_insurance": kwargs(access_token=token, insurance_type=st.sampled_from(("comprehensive", "basic")),
                                     booking_id=bookings, insurance_cost=positive, card_id=cards),
        "contact_customer_support": kwargs(booking_id=bookings, message=texts),
        "get_all_credit_cards": kwargs(),
        "get_booking_history": kwargs(access_token=token),
    }


def _vehicle(_: VehicleControlAPI) -> dict[str, Kwargs]:
    zipcodes = st.sampled_from(sorted(ZIPCODES.values()))
    return {
        "startEngine": kwargs(ignitionMode=st.sampled_from(("START", "STOP"))),
        "fillFuelTank": kwargs(fuelAmount=st.floats(0, 50)),
        "lockDoors": kwargs(unlock=st.booleans(), door=st.lists(st.sampled_from(DOOR_NAMES), min_size=1, max_size=4,
                                                               unique=True)),
        "adjustClimateControl": kwargs(temperature=st.floats(-10, 40),
                                       unit=optional(st.sampled_from(("celsius", "fahrenheit"))),
                                       fanSpeed=optional(st.integers(0, 100)),
                                       mode=optional(st.sampled_from(("auto", "cool", "heat", "defrost")))),
        "get_outside_temperature_from_google": kwargs(),
        "get_outside_temperature_from_weather_com": kwargs(),
        "setHeadlights": kwargs(mode=st.sampled_from(HEADLIGHT_MODES)),
        "displayCarStatus": kwargs(option=st.sampled_from(("fuel", "battery", "doors", "climate", "headlights",
                                                            "parkingBrake", "brakePedal", "engine"))),
        "activateParkingBrake": kwargs(mode=st.sampled_from(PARKING_BRAKE_MODES)),
        "pressBrakePedal": kwargs(pedalPosition=st.floats(0, 1)),
        "releaseBrakePedal": kwargs(),
        "setCruiseControl": kwargs(speed=st.integers(0, 24).map(lambda n: float(5 * n)), activate=st.booleans(),
                                   distanceToNextVehicle=st.floats(10, 200)),
        "get_current_speed": kwargs(),
        "display_log": kwargs(messages=st.lists(texts, max_size=3)),
        "estimate_drive_feasibility_by_mileage": kwargs(distance=st.floats(0, 2000)),
        "liter_to_gallon": kwargs(liter=st.floats(0, 500)),
        "gallon_to_liter": kwargs(gallon=st.floats(0, 500)),
        "set_navigation": kwargs(destination=st.sampled_from(("2107 Channing Way, Berkeley, CA",
                                                               "123 Main St, Rivermist, CA"))),
        "check_tire_pressure": kwargs(),
        "find_nearest_tire_shop": kwargs(),
        "get_zipcode_based_on_city": kwargs(city=st.sampled_from(sorted(ZIPCODES))),
        "estimate_distance": kwargs(cityA=zipcodes, cityB=zipcodes),
    }


#: Backend class -> its argument strategies: ``ARGUMENTS[cls](instance)`` is
#: ``{tool name: strategy of keyword-argument dicts}`` for the instance's current state.
ARGUMENTS: Mapping[type, Callable[[Any], dict[str, Kwargs]]] = {
    GorillaFileSystem: _file_system,
    MathAPI: _math,
    MessageAPI: _message,
    TwitterAPI: _twitter,
    TicketAPI: _ticket,
    TradingBot: _trading,
    TravelAPI: _travel,
    VehicleControlAPI: _vehicle,
}


def _preferred(instance: Any) -> list[str]:
    """Tools that unlock most others in the instance's current state (logging in,
    creating the first ticket, ...); :func:`tool_calls` draws them more often."""
    if isinstance(instance, GorillaFileSystem):
        here = instance._current_dir.contents
        return [] if any(isinstance(i, File) for i in here.values()) else ["touch", "cd"]
    if isinstance(instance, MessageAPI):
        return ["message_login"] if instance.current_user is None else []
    if isinstance(instance, TwitterAPI):
        return [] if instance.authenticated else ["authenticate_twitter"]
    if isinstance(instance, TicketAPI):
        if instance.current_user is None:
            return ["ticket_login"]
        return [] if instance.ticket_queue else ["create_ticket"]
    if isinstance(instance, TradingBot):
        return [] if instance.authenticated else ["trading_login"]
    if isinstance(instance, TravelAPI):
        if instance.booking_record:
            return []
        balances = [c.get("balance", 0) for c in instance.credit_card_list.values() if isinstance(c, dict)]
        limit = instance.budget_limit
        # A booking needs a card balance at or above the budget limit (a reference rule).
        if limit is not None and balances and all(b < limit for b in balances):
            return ["set_budget_limit"]
        return ["book_flight"]
    return []


# --------------------------------------------------------------------------- public API


def tool_calls(instance: Any, tools: Iterable[str] | None = None) -> st.SearchStrategy[CallSpec]:
    """One valid call of one of ``instance``'s tools, arguments drawn from its current state.

    ``tools`` restricts the tool names (default: all of the backend's tools). The
    state is read when this is called: draw a new strategy after running calls.
    """
    try:
        table = ARGUMENTS[type(instance)](instance)
    except KeyError:
        raise TypeError(f"no call strategies for {type(instance).__name__}; expected one of "
                        f"{', '.join(c.__name__ for c in ARGUMENTS)}") from None
    wanted = None if tools is None else list(tools)
    names = sorted(table) if wanted is None else [t for t in wanted if t in table]
    unknown = set(wanted or ()) - set(table)
    if unknown:
        raise ValueError(f"{type(instance).__name__} has no tools {sorted(unknown)}")
    if not names:
        raise ValueError("no tools to draw from")
    preferred = [name for name in _preferred(instance) if name in names]
    choice = st.sampled_from(names)
    if preferred:
        choice = st.sampled_from(preferred) | choice
    cls = type(instance)
    return choice.flatmap(
        lambda name: table[name].map(lambda args: CallSpec(name=name, kwargs=_in_signature_order(cls, name, args)))
    )


@lru_cache(maxsize=None)
def _parameter_order(cls: type, name: str) -> dict[str, int]:
    parameters = list(inspect.signature(getattr(cls, name)).parameters)
    return {p: i for i, p in enumerate(parameters)}


def _in_signature_order(cls: type, name: str, args: dict) -> tuple[tuple[str, Any], ...]:
    order = _parameter_order(cls, name)
    return tuple(sorted(args.items(), key=lambda item: order.get(item[0], len(order))))


def call_sequences(
    factory: Callable[[], Any | Sequence[Any]],
    *,
    min_size: int = 1,
    max_size: int = 10,
    tools: Iterable[str] | None = None,
) -> st.SearchStrategy[list[CallSpec]]:
    """A sequence of valid calls, each drawn from the state the previous ones left.

    ``factory()`` returns a fresh backend instance, or a list of them (an episode);
    the strategy runs each drawn call on its own fresh copy to know the next state.
    Replay the result with :func:`run_calls` on another ``factory()``.
    """
    tool_list = None if tools is None else list(tools)

    @st.composite
    def sequences(draw: Callable) -> list[CallSpec]:
        made = factory()
        instances = list(made) if isinstance(made, (list, tuple)) else [made]
        table = MethodTable(instances)
        size = draw(st.integers(min_size, max_size))
        calls: list[CallSpec] = []
        for _ in range(size):
            instance = draw(st.sampled_from(instances)) if len(instances) > 1 else instances[0]
            wanted = None if tool_list is None else [t for t in tool_list if t in tool_names(type(instance))]
            if wanted == []:
                continue
            call = draw(tool_calls(instance, wanted))
            run_call(call, table)
            calls.append(call)
        return calls

    return sequences()


def run_calls(instances: Any | Sequence[Any], calls: Iterable[CallSpec | str]) -> list[str]:
    """Run calls (specs or call texts) in order on ``instances``, as the scorer does;
    one result string per call (``"Error during execution: ..."`` for a failed call)."""
    instances = list(instances) if isinstance(instances, (list, tuple)) else [instances]
    table = MethodTable(instances)
    return [run_call(call, table) for call in calls]


def as_fc_step(calls: Iterable[CallSpec]) -> list[dict[str, str]]:
    """The calls as one step of an FC result file: ``[{name: json-arguments}, ...]``."""
    return [{call.name: json.dumps(dict(call.kwargs))} for call in calls]


def as_prompting_step(calls: Iterable[CallSpec]) -> str:
    """The calls as one step of a prompting result file: ``"[name(k=v, ...), ...]"``."""
    return "[" + ", ".join(call.render() for call in calls) + "]"
