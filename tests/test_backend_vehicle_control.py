"""Differential tests: our VehicleControlAPI against the reference's."""

from __future__ import annotations

import copy
import math

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from bfcl_safe.backends.vehicle_control import DISTANCES_KM, ZIPCODES, VehicleControlAPI
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

CLASS = "VehicleControlAPI"


def _configs() -> list[dict]:
    """Every distinct VehicleControlAPI initial_config in the dataset, plus the defaults."""
    seen, out = set(), [{}]
    for entry, _ in dataset():
        config = entry["initial_config"].get(CLASS)
        if config is None:
            continue
        key = repr(config)
        if key not in seen:
            seen.add(key)
            out.append(config)
    return out


CONFIGS = _configs()


def make_pair(config: dict, long_context: bool):
    return make_ours(CLASS, config, long_context), make_reference(CLASS, config, long_context)


# -- tool set, signatures, ground truth -------------------------------------------------


def test_same_tool_set():
    assert_same_tool_set(CLASS)


def test_same_signatures():
    assert_same_signatures(CLASS)


def test_ground_truth_replay():
    n = replay_ground_truth({CLASS})
    n_long = replay_ground_truth({CLASS}, long_context_only=True)
    print(f"{CLASS}: {n} ground-truth calls compared ({n_long} with long_context=True)")
    assert n > 0 and n_long > 0


def test_from_config_does_not_mutate_config():
    config = copy.deepcopy(CONFIGS[1])
    before = copy.deepcopy(config)
    ours = make_ours(CLASS, config)
    call(ours, "lockDoors", (), {"unlock": False, "door": ["driver", "passenger", "rear_left", "rear_right"]})
    call(ours, "lockDoors", (), {"unlock": True, "door": ["driver"]})
    assert config == before


def test_long_context_needs_data():
    with pytest.raises(ValueError, match="long_context_data"):
        VehicleControlAPI.from_config({}, long_context=True)


def test_long_context_data_is_not_mutated():
    data = long_context_data()
    weather = copy.deepcopy(data["LONG_WEATHER_EXTENSION"])
    ours = make_ours(CLASS, {}, long_context=True)
    call(ours, "get_outside_temperature_from_google")
    assert data["LONG_WEATHER_EXTENSION"] == weather


# -- quirks, table-driven ---------------------------------------------------------------

ALL_DOORS = ["driver", "passenger", "rear_left", "rear_right"]
READY = [  # a car that can start: doors locked, brake fully pressed
    ("lockDoors", (), {"unlock": False, "door": ALL_DOORS}),
    ("pressBrakePedal", (), {"pedalPosition": 1.0}),
]
RUNNING = READY + [("startEngine", (), {"ignitionMode": "START"})]

# (id, config, long_context, calls, substring expected in the last result)
QUIRKS = [
    ("stop-stops-even-with-unlocked-doors", {"engineState": "running"}, False,
     [("startEngine", ("STOP",), {}), ("displayCarStatus", ("engine",), {})], '"stopped"'),
    ("stop-when-ready-is-invalid-mode", {}, False,
     READY + [("startEngine", ("STOP",), {})], "Invalid ignition mode."),
    ("start-needs-full-brake", {}, False,
     [("lockDoors", (False, ALL_DOORS), {}), ("pressBrakePedal", (0.5,), {}),
      ("startEngine", ("START",), {})], "Must press the brake fully"),
    ("start-brake-int-1-is-full", {}, False,
     [("lockDoors", (False, ALL_DOORS), {}), ("pressBrakePedal", (1,), {}),
      ("startEngine", ("START",), {})], '"running"'),
    ("configured-remaining-doors-ignored",
     {"remainingUnlockedDoors": 0, "doorStatus": {"driver": "locked", "passenger": "unlocked",
                                                  "rear_left": "locked", "rear_right": "locked"}},
     False, [("startEngine", ("START",), {})], "unlocked doors: passenger"),
    ("lock-door-string-iterates-chars", {}, False,
     [("lockDoors", (False, "driver"), {})], "Error during execution: 'd'"),
    ("lock-unknown-door-after-partial-change", {}, False,
     [("lockDoors", (False, ["driver", "trunk"]), {})], "Error during execution: 'trunk'"),
    ("lock-door-none", {}, False,
     [("lockDoors", (True, None), {})], "'NoneType' object is not iterable"),
    ("fahrenheit-result-echoes-input", {}, False,
     [("adjustClimateControl", (68,), {"unit": "fahrenheit"})], '"currentACTemperature": 68'),
    ("fahrenheit-bad-type-stores-raw", {}, False,
     [("adjustClimateControl", ("hot",), {"unit": "fahrenheit"})], "unsupported operand type(s) for -"),
    ("fan-speed-str", {}, False,
     [("adjustClimateControl", (20,), {"fanSpeed": "high"})], "'<=' not supported"),
    ("fan-speed-out-of-range", {}, False,
     [("adjustClimateControl", (20,), {"fanSpeed": 101})], "Fan speed must be between 0 and 100."),
    ("fuel-negative", {}, False, [("fillFuelTank", (-1,), {})], "cannot be negative"),
    ("fuel-over-capacity", {"fuelLevel": 40.0}, False, [("fillFuelTank", (10.5,), {})], "tank capacity"),
    ("fuel-str", {}, False, [("fillFuelTank", ("5",), {})], "'<' not supported between instances of 'str' and 'int'"),
    ("fuel-int-stays-float", {"fuelLevel": 10.0}, False, [("fillFuelTank", (5,), {})], '"fuelLevel": 15.0'),
    ("headlights-auto-is-off", {"headLightStatus": "on"}, False,
     [("setHeadlights", ("auto",), {})], '"off"'),
    ("headlights-unhashable", {}, False, [("setHeadlights", (["on"],), {})], "Invalid headlight mode."),
    ("release-parking-brake-sets-slope", {}, False,
     [("activateParkingBrake", ("release",), {}), ("displayCarStatus", ("parkingBrake",), {})],
     '"slopeAngle": 10.0'),
    ("parking-brake-long-context-instruction-first", {}, True,
     [("activateParkingBrake", ("engage",), {})], '{"parkingBrakeInstruction": "The parking brake'),
    ("pedal-none", {}, False, [("pressBrakePedal", (None,), {})], "'<=' not supported"),
    ("pedal-true", {}, False, [("pressBrakePedal", (True,), {})], '"brakePedalForce": 1000.0'),
    ("cruise-engine-stopped", {}, False,
     [("setCruiseControl", (60, True, 100), {})], "Start the engine"),
    ("cruise-converts-distance-first", {}, False,
     [("setCruiseControl", ("fast", True, None), {})], "not 'NoneType'"),
    ("cruise-invalid-speed-still-stores-distance", {}, False,
     RUNNING + [("setCruiseControl", (63, True, 42), {}), ("displayCarStatus", ("engine",), {})],
     '"running"'),
    ("cruise-speed-str-number", {}, False,
     RUNNING + [("setCruiseControl", ("65", True, "30.5"), {})], '"currentSpeed": 65.0'),
    ("cruise-nan-speed", {}, False,
     RUNNING + [("setCruiseControl", (math.nan, False, 10), {})], '"currentSpeed": NaN'),
    ("navigation-int-stored-then-fails", {}, False,
     [("set_navigation", (42,), {})], 'can only concatenate str (not "int") to str'),
    ("distance-unknown-pair", {}, False, [("estimate_distance", ("83214", "83214"), {})], "not found"),
    ("distance-reversed", {}, False, [("estimate_distance", ("74532", "83214"), {})], "750.0"),
    ("distance-int-zip", {}, False, [("estimate_distance", (83214, 74532), {})], "not found"),
    ("distance-list", {}, True, [("estimate_distance", (["83214"], "74532"), {})], "intermediaryCities"),
    ("zipcode-unknown", {}, False, [("get_zipcode_based_on_city", ("Atlantis",), {})], "00000"),
    ("zipcode-unhashable", {}, False, [("get_zipcode_based_on_city", ({"a": 1},), {})], "00000"),
    ("weather-long-context-temperature-last", {}, True,
     [("get_outside_temperature_from_google", (), {}), ("get_outside_temperature_from_google", (), {})],
     '"outsideTemperature": '),
    ("weather-com-404", {}, False, [("get_outside_temperature_from_weather_com", (), {})], '{"error": 404}'),
    ("speed-is-seeded", {"random_seed": 7}, False,
     [("get_current_speed", (), {}), ("get_current_speed", (), {})], "currentSpeed"),
    ("tires-long-context-car-info", {}, True, [("check_tire_pressure", (), {})], '"car_info": "Manufacturer'),
    ("tires-healthy", {}, False, [("check_tire_pressure", (), {})], '"healthy_tire_pressure": true'),
    ("feasibility-str", {}, False,
     [("estimate_drive_feasibility_by_mileage", ("far",), {})], "'<' not supported between instances of 'float' and 'str'"),
    ("liter-str", {}, False, [("liter_to_gallon", ("3",), {})], "can't multiply sequence by non-int of type 'float'"),
    ("gallon-list", {}, False, [("gallon_to_liter", ([1],), {})], "can't multiply sequence"),
    ("display-log-set-falls-back-to-str", {}, False, [("display_log", ({1, 2},), {})], "{'log': {1, 2}}"),
    ("status-doors-long-context", {}, True, [("displayCarStatus", ("doors",), {})], '"doorStatus"'),
    ("status-invalid-option", {}, False, [("displayCarStatus", (None,), {})], "Invalid option"),
    ("unexpected-keyword", {}, False,
     [("startEngine", (), {"mode": "START"})],
     "VehicleControlAPI.startEngine() got an unexpected keyword argument 'mode'"),
    ("missing-argument", {}, False,
     [("setCruiseControl", (60,), {})],
     "VehicleControlAPI.setCruiseControl() missing 2 required positional arguments"),
    ("too-many-positional", {}, False,
     [("releaseBrakePedal", (1,), {})],
     "VehicleControlAPI.releaseBrakePedal() takes 1 positional argument but 2 were given"),
]


@pytest.mark.parametrize("config,long_context,calls,expected", [q[1:] for q in QUIRKS], ids=[q[0] for q in QUIRKS])
def test_quirk(config, long_context, calls, expected):
    ours, ref = make_pair(config, long_context)
    got = None
    for name, args, kwargs in calls:
        got = call(ours, name, args, kwargs)
        want = call(ref, name, args, kwargs)
        assert got == want, name
        assert_same_state(ours, ref, name)
    assert expected in got


# -- stateful fuzzing against the reference -----------------------------------------------

JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-200, 200),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
    st.lists(st.one_of(st.text(max_size=4), st.integers(-3, 3)), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(0, 3), max_size=2),
)
NUMBER = st.one_of(
    st.integers(-20, 150),
    st.floats(-20, 150),
    st.sampled_from([0, 0.0, 1, 1.0, 0.5, 50, 120, 125, -0.0, math.nan, math.inf]),
)
ZIPS = sorted({z for pair in DISTANCES_KM for z in pair} | set(ZIPCODES.values()) | {"00000"})


def _or_junk(strategy, junk_weight: int = 1):
    """Mostly the plausible values, sometimes anything."""
    return st.one_of(*([strategy] * 4), *([JUNK] * junk_weight))


@st.composite
def door_lists(draw, doors):
    """Mostly some of the car's doors (often all of them); sometimes unknown names or junk."""
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return draw(_or_junk(st.lists(st.sampled_from(list(doors) + ["trunk", ""]), max_size=5)))
    order = draw(st.permutations(list(doors)))
    if kind <= 2:
        return order
    return order[: draw(st.integers(0, len(order)))]


def argument_strategies(doors) -> dict[str, list[tuple[str, st.SearchStrategy]]]:
    """Tool name -> [(parameter name, strategy)], in signature order."""
    return {
        "startEngine": [("ignitionMode", _or_junk(st.sampled_from(["START", "STOP", "start", ""])))],
        "fillFuelTank": [("fuelAmount", _or_junk(NUMBER))],
        "lockDoors": [("unlock", _or_junk(st.booleans())), ("door", door_lists(doors))],
        "adjustClimateControl": [
            ("temperature", _or_junk(NUMBER)),
            ("unit", _or_junk(st.sampled_from(["celsius", "fahrenheit", "kelvin"]))),
            ("fanSpeed", _or_junk(st.one_of(st.integers(-5, 110), st.sampled_from([0, 100, 50.5])))),
            ("mode", _or_junk(st.sampled_from(["auto", "cool", "heat", "defrost", "turbo"]))),
        ],
        "get_outside_temperature_from_google": [],
        "get_outside_temperature_from_weather_com": [],
        "setHeadlights": [("mode", _or_junk(st.sampled_from(["on", "off", "auto", "ON"])))],
        "displayCarStatus": [("option", _or_junk(st.sampled_from(
            ["fuel", "battery", "doors", "climate", "headlights", "parkingBrake", "brakePedal", "engine", "tires"]
        )))],
        "activateParkingBrake": [("mode", _or_junk(st.sampled_from(["engage", "release", "on"])))],
        "pressBrakePedal": [("pedalPosition", _or_junk(st.one_of(
            st.sampled_from([0, 0.0, 1, 1.0, True, False]), st.floats(-0.5, 1.5))))],
        "releaseBrakePedal": [],
        "setCruiseControl": [
            ("speed", _or_junk(st.one_of(st.integers(-2, 26).map(lambda k: 5 * k), NUMBER,
                                         st.sampled_from(["65", "abc", "nan"])))),
            ("activate", _or_junk(st.booleans())),
            ("distanceToNextVehicle", _or_junk(st.one_of(NUMBER, st.sampled_from(["30", "x"])))),
        ],
        "get_current_speed": [],
        "display_log": [("messages", _or_junk(st.lists(st.text(max_size=5), max_size=3)))],
        "estimate_drive_feasibility_by_mileage": [("distance", _or_junk(NUMBER))],
        "liter_to_gallon": [("liter", _or_junk(NUMBER))],
        "gallon_to_liter": [("gallon", _or_junk(NUMBER))],
        "estimate_distance": [("cityA", _or_junk(st.sampled_from(ZIPS))), ("cityB", _or_junk(st.sampled_from(ZIPS)))],
        "get_zipcode_based_on_city": [("city", _or_junk(st.sampled_from(sorted(ZIPCODES) + ["Atlantis"])))],
        "set_navigation": [("destination", _or_junk(st.text(max_size=12)))],
        "check_tire_pressure": [],
        "find_nearest_tire_shop": [],
    }


@st.composite
def tool_calls(draw, doors):
    """(name, args, kwargs): arguments positional or by keyword, sometimes a bad call shape."""
    table = argument_strategies(doors)
    name = draw(st.sampled_from(sorted(table)))
    params = [(pname, draw(strategy)) for pname, strategy in table[name]]
    split = draw(st.integers(0, len(params)))
    args = tuple(value for _, value in params[:split])
    kwargs = {pname: value for pname, value in params[split:]}
    shape = draw(st.integers(0, 14))
    if shape == 0 and params:  # drop one argument
        if kwargs:
            del kwargs[draw(st.sampled_from(sorted(kwargs)))]
        else:
            args = args[:-1]
    elif shape == 1:  # an unexpected keyword
        kwargs[draw(st.sampled_from(["x", "mode", "unit"]))] = draw(JUNK)
    elif shape == 2:  # one positional too many
        args = args + (draw(JUNK),)
    return name, args, kwargs


class VehicleMachine(RuleBasedStateMachine):
    @initialize(config=st.sampled_from(CONFIGS), long_context=st.booleans())
    def build(self, config, long_context):
        self.ours, self.ref = make_pair(config, long_context)
        self.log = [f"config={config!r} long_context={long_context}"]

    @rule(data=st.data())
    def any_call(self, data):
        doors = list(self.ref.doorStatus)
        name, args, kwargs = data.draw(tool_calls(doors))
        self.compare(name, args, kwargs)

    @precondition(lambda self: getattr(self, "ref", None) is not None and self.ref.engine_state != "running")
    @rule()
    def get_ready_to_drive(self):
        """Steer towards a running engine, so cruise control gets past its first check."""
        for name, args, kwargs in RUNNING:
            self.compare(name, args, kwargs)

    @rule(data=st.data())
    def cruise_control(self, data):
        """Cruise control only gets past its engine check on a running car: give it more tries."""
        _, strategies = zip(*argument_strategies([])["setCruiseControl"])
        self.compare("setCruiseControl", tuple(data.draw(s) for s in strategies), {})

    def compare(self, name, args, kwargs):
        self.log.append(f"{name}{args}{kwargs}")
        got = call(self.ours, name, args, kwargs)
        want = call(self.ref, name, args, kwargs)
        assert got == want, f"{self.log}\n ours: {got[:500]}\n  ref: {want[:500]}"
        return want

    @invariant()
    def same_state(self):
        if hasattr(self, "ours"):
            assert_same_state(self.ours, self.ref, " / ".join(self.log[-3:]))


VehicleMachine.TestCase.settings = settings(
    VehicleMachine.TestCase.settings, stateful_step_count=30
)
TestVehicleMachine = VehicleMachine.TestCase
