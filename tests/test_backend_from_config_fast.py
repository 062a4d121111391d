"""The fast paths of the backends' ``from_config`` build exactly what the plain code built.

Each reference below is the code as it was before the fast paths (kept here verbatim,
apart from names). New and reference results are compared by ``assert_same``: equal
values of the very same types, the same sharing with the config (an object is taken
from the config by both or by neither, and then it is the same object), the same
sharing inside the result, and the same error (type and text) when the config is bad.
"""

from __future__ import annotations

import copy
import math
import sys
from collections import OrderedDict
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any, Callable, Iterator

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bfcl_safe.backends import config_data, message_api, posting_api, trading_bot, travel_booking, vehicle_control
from bfcl_safe.backends.seeded import LazyRandom
from bfcl_safe.backends.message_api import MessageAPI
from bfcl_safe.backends.posting_api import TwitterAPI
from bfcl_safe.backends.trading_bot import TradingBot
from bfcl_safe.backends.travel_booking import TravelAPI
from bfcl_safe.backends.vehicle_control import VehicleControlAPI
from tests.checker_support import dataset

EXAMPLES = settings(max_examples=300, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# --------------------------------------------------------------------------- references

_SCALARS = (str, int, float, bool, type(None))


def reference_copy_data(value: Any) -> Any:
    """config_data.copy_data before its fast paths."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict:
        return {key: reference_copy_data(item) for key, item in value.items()}
    if kind is list:
        return [reference_copy_data(item) for item in value]
    if kind is set:
        return set(value)
    return copy.deepcopy(value)


_ATOMIC = frozenset(_SCALARS)


def _reference_vehicle_own(value: Any) -> Any:
    kind = type(value)
    if kind in _ATOMIC:
        return value
    if kind is dict and _ATOMIC.issuperset(map(type, value.values())):
        return dict(value)
    return copy.deepcopy(value)


def reference_vehicle_from_config(config: Any, *, long_context: bool = False,
                                  long_context_data: Any = None) -> VehicleControlAPI:
    """VehicleControlAPI.from_config before its fast path."""
    vc = vehicle_control
    extras = vc.LongContextExtras.from_data(long_context_data) if long_context else None
    values = {key: _reference_vehicle_own(config.get(key, default)) for key, default in vc.DEFAULTS.items()}
    if "doorStatus" in config:
        door_status = _reference_vehicle_own(config["doorStatus"])
    else:
        door_status = {door: "unlocked" for door in vc.DOOR_NAMES}
    remaining = 4 - len([1 for door in door_status.keys() if door_status[door] == "locked"])
    return VehicleControlAPI(
        rng=LazyRandom(config.get("random_seed", vc.DEFAULT_RANDOM_SEED)),
        fuelLevel=values["fuelLevel"],
        batteryVoltage=values["batteryVoltage"],
        engine_state=values["engineState"],
        remainingUnlockedDoors=remaining,
        doorStatus=door_status,
        acTemperature=values["acTemperature"],
        fanSpeed=values["fanSpeed"],
        acMode=values["acMode"],
        humidityLevel=values["humidityLevel"],
        headLightStatus=values["headLightStatus"],
        parkingBrakeStatus=values["parkingBrakeStatus"],
        parkingBrakeForce=values["parkingBrakeForce"],
        slopeAngle=values["slopeAngle"],
        brakePedalStatus=values["brakePedalStatus"],
        brakePedalForce=values["brakePedalForce"],
        distanceToNextVehicle=values["distanceToNextVehicle"],
        cruiseStatus=values["cruiseStatus"],
        destination=values["destination"],
        frontLeftTirePressure=values["frontLeftTirePressure"],
        frontRightTirePressure=values["frontRightTirePressure"],
        rearLeftTirePressure=values["rearLeftTirePressure"],
        rearRightTirePressure=values["rearRightTirePressure"],
        long_context=long_context,
        extras=extras,
    )


def reference_own_records(records: Any) -> Any:
    """travel_booking._own_records before its fast path."""
    if type(records) is dict and all(
        type(record) is dict and _ATOMIC.issuperset(map(type, record.values()))
        for record in records.values()
    ):
        return {key: dict(record) for key, record in records.items()}
    return copy.deepcopy(records)


def _reference_own_value(value: Any) -> Any:
    return value if type(value) in _ATOMIC else copy.deepcopy(value)


def reference_own_scalars(config: Any) -> list:
    """What the old dict comprehension over ``_SCALAR_KEYS`` gave, as a list."""
    return [_reference_own_value(config.get(key)) for key in travel_booking._SCALAR_KEYS]


def reference_travel_from_config(config: Any, *, long_context: bool = False,
                                 long_context_data: Any = None) -> TravelAPI:
    """TravelAPI.from_config before its fast paths."""
    tb = travel_booking
    if long_context and long_context_data is None:
        raise ValueError("TravelAPI.from_config: long_context=True needs long_context_data")
    instance = TravelAPI(
        credit_card_list=reference_own_records(config["credit_card_list"])
        if "credit_card_list" in config else {},
        booking_record=reference_own_records(config["booking_record"])
        if "booking_record" in config else {},
        **{key: _reference_own_value(config.get(key)) for key in tb._SCALAR_KEYS},
        long_context=long_context,
        random=LazyRandom(config.get("random_seed", tb.DEFAULT_RANDOM_SEED)),
    )
    if long_context:
        cards = instance.credit_card_list
        for card_id, card in long_context_data["CREDIT_CARD_EXTENSION"].items():
            if card_id not in cards:
                cards[card_id] = card
        bookings = instance.booking_record
        for booking_id, booking in long_context_data["BOOKING_RECORD_EXTENSION"].items():
            if booking_id not in bookings:
                bookings[booking_id] = booking
    return instance


def reference_copy_orders(orders: Any) -> dict:
    """trading_bot._copy_orders before its loop."""
    return {
        int(key) if isinstance(key, str) and key.isdigit() else key:
            value.copy() if type(value) is dict else copy.deepcopy(value)
        for key, value in orders.items()
    }


@contextmanager
def patched(module: Any, name: str, value: Any) -> Iterator[None]:
    """``module.name`` is ``value`` inside the block (to build a reference instance)."""
    saved = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, saved)


# --------------------------------------------------------------------------- comparison


class Box:
    """A plain object in the config: ``copy.deepcopy`` copies it."""

    def __init__(self, content: Any):
        self.content = content

    def __repr__(self) -> str:
        return f"Box({self.content!r})"


class SubDict(dict):
    pass


class SubList(list):
    pass


_MUTABLE = (dict, list, set, Box)


def _all_ids(value: Any, ids: set[int] | None = None) -> set[int]:
    """Ids of ``value`` and of everything reachable in it (keys included)."""
    ids = set() if ids is None else ids
    ids.add(id(value))
    if isinstance(value, dict):
        for key, item in value.items():
            _all_ids(key, ids)
            _all_ids(item, ids)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            _all_ids(item, ids)
    elif isinstance(value, Box):
        _all_ids(value.content, ids)
    elif isinstance(value, MappingProxyType):
        for key, item in value.items():
            _all_ids(key, ids)
            _all_ids(item, ids)
    return ids


def _same(new: Any, ref: Any, source_ids: set[int], path: str, seen: tuple[list, list]) -> None:
    assert type(new) is type(ref), f"{path}: {type(new).__name__} != {type(ref).__name__}"
    from_source = id(ref) in source_ids
    assert (id(new) in source_ids) == from_source, f"{path}: shared with the config by one side only"
    if from_source:
        assert new is ref, f"{path}: not the same object of the config"
    if isinstance(new, _MUTABLE):
        seen[0].append(id(new))
        seen[1].append(id(ref))
    if isinstance(new, float):
        assert new == ref or (math.isnan(new) and math.isnan(ref)), f"{path}: {new!r} != {ref!r}"
    elif isinstance(new, dict):
        assert len(new) == len(ref), f"{path}: keys {list(new)!r} != {list(ref)!r}"
        for index, ((new_key, new_item), (ref_key, ref_item)) in enumerate(zip(new.items(), ref.items())):
            _same(new_key, ref_key, source_ids, f"{path}.key[{index}]", seen)
            _same(new_item, ref_item, source_ids, f"{path}[{ref_key!r}]", seen)
    elif isinstance(new, (list, tuple)):
        assert len(new) == len(ref), f"{path}: {new!r} != {ref!r}"
        for index, (new_item, ref_item) in enumerate(zip(new, ref)):
            _same(new_item, ref_item, source_ids, f"{path}[{index}]", seen)
    elif isinstance(new, (set, frozenset)):
        assert new == ref, f"{path}: {new!r} != {ref!r}"  # hashable (scalar) items only
    elif isinstance(new, Box):
        _same(new.content, ref.content, source_ids, f"{path}.content", seen)
    elif isinstance(new, LazyRandom):
        _same(new._seed, ref._seed, source_ids, f"{path}._seed", seen)
        if new._generator is None or ref._generator is None:
            assert new._generator is ref._generator is None, f"{path}: one generator made, not the other"
        elif new._seed is not None:  # (a None seed draws its state from the OS)
            assert new._generator.getstate() == ref._generator.getstate(), f"{path}: generator state"
    elif attrs.has(type(new)):
        for field in attrs.fields(type(new)):
            _same(getattr(new, field.name), getattr(ref, field.name), source_ids, f"{path}.{field.name}", seen)
    else:
        assert new == ref, f"{path}: {new!r} != {ref!r}"


def _first_seen(ids: list[int]) -> list[int]:
    first: dict[int, int] = {}
    return [first.setdefault(one, index) for index, one in enumerate(ids)]


def assert_same(new: Any, ref: Any, source: Any) -> None:
    """``new`` equals ``ref`` value for value and type, shares with ``source`` exactly
    what ``ref`` shares, and its mutable parts alias each other exactly as ``ref``'s do."""
    seen: tuple[list, list] = ([], [])
    _same(new, ref, _all_ids(source), "result", seen)
    assert _first_seen(seen[0]) == _first_seen(seen[1]), "the result's parts alias differently"


def assert_no_container_from(result: Any, source: Any) -> None:
    """No list, dict or set of ``result`` (at any depth) is one of ``source``."""
    source_ids = {one for one in _all_ids(source)}
    stack = [result]
    while stack:
        value = stack.pop()
        if isinstance(value, (list, dict, set)):
            assert id(value) not in source_ids, f"{value!r} is shared with the config"
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, (list, tuple, set, frozenset)):
            stack.extend(value)
        elif isinstance(value, Box):
            stack.append(value.content)
        elif attrs.has(type(value)):
            stack.extend(getattr(value, field.name) for field in attrs.fields(type(value)))


def outcome(build: Callable[[], Any]) -> tuple[str, Any]:
    """("ok", result) or ("error", (type, text)) of ``build()``."""
    try:
        return "ok", build()
    except Exception as exc:  # noqa: BLE001 - any error must be the reference's
        return "error", (type(exc), str(exc))


def assert_same_outcome(new_build: Callable[[], Any], ref_build: Callable[[], Any], source: Any) -> Any:
    new_kind, new = outcome(new_build)
    ref_kind, ref = outcome(ref_build)
    assert new_kind == ref_kind, (new, ref)
    if new_kind == "error":
        assert new == ref
        return None
    assert_same(new, ref, source)
    return new


def assert_same_fresh_copy(new_build: Callable[[], Any], ref_build: Callable[[], Any], source: Any) -> None:
    """:func:`assert_same_outcome`, and a result that holds no container of ``source``."""
    new = assert_same_outcome(new_build, ref_build, source)
    if new is not None:
        assert_no_container_from(new, source)


# --------------------------------------------------------------------------- strategies

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=6),
)
keys = st.one_of(st.text(max_size=6), st.integers(-3, 3), st.sampled_from(["1", "12", "²", "0x1", " 7"]),
                 st.booleans(), st.none(), st.tuples(st.integers(0, 2), st.text(max_size=2)))
others = st.one_of(
    st.tuples(scalars, scalars), st.frozensets(st.integers(0, 5), max_size=3), st.sets(scalars, max_size=3),
    st.builds(Box, scalars), st.complex_numbers(allow_nan=False), st.binary(max_size=3),
)


def _extend(children: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(keys, children, max_size=4),
        children.map(lambda child: [child, child]),  # one object twice: copied twice, not aliased
        st.dictionaries(st.text(max_size=3), children, max_size=3).map(lambda d: {"a": d, "b": d}),
        st.lists(children, max_size=3).map(SubList),
        st.dictionaries(keys, children, max_size=3).map(SubDict),
        st.dictionaries(st.text(max_size=3), children, max_size=3).map(OrderedDict),
        children.map(Box),
        st.tuples(children, children),
    )


data = st.recursive(st.one_of(scalars, others), _extend, max_leaves=16)
#: JSON-like data: what a dataset config holds.
json_data = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=6)),
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(st.text(max_size=6), children, max_size=4)),
    max_leaves=16,
)
anything = st.one_of(scalars, json_data, data)
flat_dicts = st.dictionaries(st.text(max_size=6), scalars, max_size=5)
#: Configs that are not plain dicts.
odd_configs = st.one_of(
    st.none(), st.integers(), st.text(max_size=3), st.lists(scalars, max_size=2),
    st.dictionaries(st.text(max_size=4), scalars, max_size=3).map(MappingProxyType),
    st.dictionaries(st.text(max_size=4), scalars, max_size=3).map(SubDict),
    st.dictionaries(st.text(max_size=4), scalars, max_size=3).map(OrderedDict),
)
seeds = st.one_of(st.integers(), st.text(max_size=4), st.none(), st.floats(allow_nan=False), st.lists(st.integers(), max_size=2))


def configs(fields: dict[str, st.SearchStrategy]) -> st.SearchStrategy:
    """Dict configs with any subset of ``fields``, some extra keys, or not a dict at all."""
    optional = {name: strategy for name, strategy in fields.items()}
    optional["random_seed"] = seeds
    plain = st.fixed_dictionaries({}, optional=optional)
    with_extras = st.tuples(plain, st.dictionaries(st.text(max_size=6), anything, max_size=3)).map(
        lambda pair: {**pair[1], **pair[0]}
    )
    return st.one_of(plain, with_extras, odd_configs)


# --------------------------------------------------------------------------- copy_data


@EXAMPLES
@given(anything)
def test_copy_data_is_the_plain_recursive_copy(value: Any) -> None:
    assert_same_fresh_copy(lambda: config_data.copy_data(value), lambda: reference_copy_data(value), value)


def _nested_lists(depth: int) -> list:
    value: list = ["leaf"]
    for _ in range(depth):
        value = [value, 1]
    return value


def _nested_dicts(depth: int) -> dict:
    value: dict = {"leaf": 1}
    for _ in range(depth):
        value = {"x": value, "y": [1]}
    return value


@pytest.mark.parametrize("make", [_nested_lists, _nested_dicts])
def test_copy_data_reaches_the_recursion_limit_no_sooner(make: Callable[[int], Any]) -> None:
    """Wherever the plain copy works, the fast one gives the same; far too deep data
    ends in RecursionError (an exception, not a crash), as before."""
    worked = 0
    for depth in (10, 100, 200, 300, 400, 450):
        value = make(depth)
        kind, _ = outcome(lambda: reference_copy_data(value))
        if kind == "ok":
            worked += 1
            assert_same(config_data.copy_data(value), reference_copy_data(value), value)
    assert worked >= 3
    with pytest.raises(RecursionError):
        config_data.copy_data(make(sys.getrecursionlimit() * 2))


# --------------------------------------------------------------------------- VehicleControlAPI

_VEHICLE_FIELDS = {key: st.one_of(scalars, anything) for key in vehicle_control.DEFAULTS}
_VEHICLE_FIELDS["doorStatus"] = st.one_of(flat_dicts, st.fixed_dictionaries(
    {door: st.sampled_from(["locked", "unlocked", 1, None]) for door in vehicle_control.DOOR_NAMES}), anything)
_VEHICLE_FIELDS["remainingUnlockedDoors"] = scalars
_PLAIN_VEHICLE = st.fixed_dictionaries({}, optional={
    **{key: scalars for key in vehicle_control.DEFAULTS},
    "doorStatus": flat_dicts,
    "random_seed": st.integers(),
})
_LONG_CONTEXT_DATA = {
    "CAR_STATUS_METADATA_EXTENSION": "metadata",
    "INTERMEDIARY_CITIES": ["A", "B"],
    "LONG_WEATHER_EXTENSION": {"day": "sunny"},
    "PARKING_BRAKE_INSTRUCTION": "pull",
}


@EXAMPLES
@given(st.one_of(_PLAIN_VEHICLE, configs(_VEHICLE_FIELDS)), st.booleans())
def test_vehicle_from_config_is_the_plain_build(config: Any, long_context: bool) -> None:
    data = _LONG_CONTEXT_DATA if long_context else None
    assert_same_fresh_copy(
        lambda: VehicleControlAPI.from_config(config, long_context=long_context, long_context_data=data),
        lambda: reference_vehicle_from_config(config, long_context=long_context, long_context_data=data),
        config,
    )


def test_vehicle_settings_getter_follows_defaults() -> None:
    assert vehicle_control._SETTINGS(vehicle_control.DEFAULTS) == tuple(vehicle_control.DEFAULTS.values())


# --------------------------------------------------------------------------- TravelAPI

_RECORDS = st.one_of(
    st.dictionaries(st.text(max_size=6), flat_dicts, max_size=3),
    st.dictionaries(keys, st.one_of(flat_dicts, anything), max_size=3),
    anything,
)
_TRAVEL_FIELDS = {key: st.one_of(scalars, anything) for key in travel_booking._SCALAR_KEYS}
_TRAVEL_FIELDS["credit_card_list"] = _RECORDS
_TRAVEL_FIELDS["booking_record"] = _RECORDS
_PLAIN_TRAVEL = st.fixed_dictionaries({}, optional={
    **{key: scalars for key in travel_booking._SCALAR_KEYS},
    "credit_card_list": st.dictionaries(st.text(max_size=6), flat_dicts, max_size=3),
    "booking_record": st.dictionaries(st.text(max_size=6), flat_dicts, max_size=3),
})


@EXAMPLES
@given(_RECORDS)
def test_own_records_is_the_plain_copy(records: Any) -> None:
    assert_same_fresh_copy(lambda: travel_booking._own_records(records),
                              lambda: reference_own_records(records), records)


@EXAMPLES
@given(st.one_of(_PLAIN_TRAVEL, configs(_TRAVEL_FIELDS)))
def test_own_scalars_is_the_plain_copy(config: Any) -> None:
    assert_same_fresh_copy(lambda: travel_booking._own_scalars(config),
                              lambda: reference_own_scalars(config), config)


@EXAMPLES
@given(st.one_of(_PLAIN_TRAVEL, configs(_TRAVEL_FIELDS)), st.booleans())
def test_travel_from_config_is_the_plain_build(config: Any, long_context: bool) -> None:
    data = {"CREDIT_CARD_EXTENSION": {"ext": {"balance": 1.0}},
            "BOOKING_RECORD_EXTENSION": {"b": {"price": 2}}} if long_context else None
    assert_same_fresh_copy(
        lambda: TravelAPI.from_config(config, long_context=long_context, long_context_data=data),
        lambda: reference_travel_from_config(config, long_context=long_context, long_context_data=data),
        config,
    )


def test_travel_scalar_keys_are_unpacked_in_order() -> None:
    """from_config passes _own_scalars' list as these settings, in this order."""
    assert travel_booking._SCALAR_KEYS == ("access_token", "token_type", "token_expires_in", "token_scope",
                                           "user_first_name", "user_last_name", "budget_limit")


# --------------------------------------------------------------------------- TradingBot

_ORDERS = st.one_of(
    st.dictionaries(st.one_of(st.integers(0, 99).map(str), keys), st.one_of(flat_dicts, scalars, anything), max_size=4),
    anything,
)
_TRADING_FIELDS = {
    "orders": _ORDERS, "account_info": anything, "authenticated": anything, "market_status": anything,
    "order_counter": anything, "stocks": anything, "watch_list": anything, "transaction_history": anything,
}


@EXAMPLES
@given(_ORDERS)
def test_copy_orders_is_the_plain_copy(orders: Any) -> None:
    assert_same_outcome(lambda: trading_bot._copy_orders(orders), lambda: reference_copy_orders(orders), orders)


@EXAMPLES
@given(configs(_TRADING_FIELDS))
def test_trading_from_config_is_the_plain_build(config: Any) -> None:
    def reference() -> TradingBot:
        with patched(trading_bot, "_copy_orders", reference_copy_orders):
            return TradingBot.from_config(config)

    assert_same_outcome(lambda: TradingBot.from_config(config), reference, config)


# --------------------------------------------------------------------------- MessageAPI, TwitterAPI

_MESSAGE_FIELDS = {name: anything for name in
                   ("generated_ids", "user_count", "user_map", "inbox", "message_count", "current_user")}
_TWITTER_FIELDS = {name: anything for name in
                   ("username", "password", "authenticated", "comments", "retweets", "following_list",
                    "tweet_counter")}
_TWITTER_FIELDS["tweets"] = st.one_of(
    st.dictionaries(st.integers(0, 50).map(str), anything, max_size=4), anything)


@EXAMPLES
@given(configs(_MESSAGE_FIELDS))
def test_message_from_config_is_the_plain_build(config: Any) -> None:
    def reference() -> MessageAPI:
        with patched(message_api, "copy_data", reference_copy_data):
            return MessageAPI.from_config(config)

    assert_same_fresh_copy(lambda: MessageAPI.from_config(config), reference, config)


@EXAMPLES
@given(configs(_TWITTER_FIELDS))
def test_twitter_from_config_is_the_plain_build(config: Any) -> None:
    def reference() -> TwitterAPI:
        with patched(posting_api, "copy_data", reference_copy_data):
            return TwitterAPI.from_config(config)

    assert_same_fresh_copy(lambda: TwitterAPI.from_config(config), reference, config)


# --------------------------------------------------------------------------- the dataset's configs


def _dataset_builds() -> list[tuple[str, Callable[..., Any], Callable[..., Any]]]:
    def with_copy_data(cls: type, module: Any) -> Callable[..., Any]:
        def build(config: Any, **options: Any) -> Any:
            with patched(module, "copy_data", reference_copy_data):
                return cls.from_config(config, **options)
        return build

    def trading(config: Any, **options: Any) -> Any:
        with patched(trading_bot, "_copy_orders", reference_copy_orders):
            return TradingBot.from_config(config, **options)

    return [
        ("VehicleControlAPI", VehicleControlAPI.from_config, reference_vehicle_from_config),
        ("TravelAPI", TravelAPI.from_config, reference_travel_from_config),
        ("TradingBot", TradingBot.from_config, trading),
        ("MessageAPI", MessageAPI.from_config, with_copy_data(MessageAPI, message_api)),
        ("TwitterAPI", TwitterAPI.from_config, with_copy_data(TwitterAPI, posting_api)),
    ]


@pytest.mark.parametrize("class_name, new_build, reference_build", _dataset_builds(),
                         ids=[name for name, _, _ in _dataset_builds()])
def test_every_dataset_config_builds_the_same(class_name: str, new_build: Callable[..., Any],
                                              reference_build: Callable[..., Any]) -> None:
    ds = dataset()
    checked = 0
    for category in ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context"):
        long_context = category == "multi_turn_long_context"
        data = ds.long_context_data() if long_context else None
        for entry in ds.entries(category):
            if class_name not in entry["involved_classes"]:
                continue
            config = (entry.get("initial_config") or {}).get(class_name, {})
            options = {"long_context": long_context, "long_context_data": data}
            assert_same_outcome(lambda: new_build(config, **options), lambda: reference_build(config, **options),
                                config)
            checked += 1
    assert checked > 100
