"""The simulated car: engine, doors, climate, lights, brakes, cruise control, navigation.

A re-implementation of the reference's ``VehicleControlAPI``. Every tool repeats
the reference's operations in the same order (same comparisons against the same
constant types, same partial updates before an error), so that results, state and
``TypeError`` texts match. Places where the reference behaves oddly and we follow
it on purpose are marked ``Quirk``.
"""

from __future__ import annotations

import copy
import operator
import random
from typing import Any, Mapping

import attrs

from bfcl_safe.backends import growth
from bfcl_safe.backends.base import Backend
from bfcl_safe.backends.seeded import LazyRandom
from bfcl_safe.interp.tools import tool

# The constant types matter: they show up in TypeError texts and in result types.
MAX_FUEL_LEVEL = 50  # gallons (an int, as in the reference)
MIN_FUEL_LEVEL = 0.0
MILE_PER_GALLON = 20.0
MAX_BRAKE_FORCE = 1000  # Newtons, an int: pedal position times this is the force
DEFAULT_RANDOM_SEED = 141053

#: Config key -> default value, for the plain scalar settings, in the reference's
#: attribute order. ``doorStatus`` is handled apart (its default is a fresh dict).
DEFAULTS: dict[str, Any] = {
    "fuelLevel": 0.0,
    "batteryVoltage": 12.6,
    "engineState": "stopped",
    "acTemperature": 25.0,
    "fanSpeed": 50,
    "acMode": "auto",
    "humidityLevel": 50.0,
    "headLightStatus": "off",
    "parkingBrakeStatus": "released",
    "parkingBrakeForce": 0.0,
    "slopeAngle": 0.0,
    "brakePedalStatus": "released",
    "brakePedalForce": 0.0,
    "distanceToNextVehicle": 50.0,
    "cruiseStatus": "inactive",
    "destination": "None",
    "frontLeftTirePressure": 32.0,
    "frontRightTirePressure": 32.0,
    "rearLeftTirePressure": 30.0,
    "rearRightTirePressure": 30.0,
}
DOOR_NAMES = ("driver", "passenger", "rear_left", "rear_right")
#: The settings' values of a mapping that has every key of ``DEFAULTS``, as a tuple.
_SETTINGS = operator.itemgetter(*DEFAULTS)

#: The public attributes the checker compares, in the reference's ``vars()`` order.
PUBLIC_FIELDS = (
    "fuelLevel",
    "batteryVoltage",
    "engine_state",
    "remainingUnlockedDoors",
    "doorStatus",
    "acTemperature",
    "fanSpeed",
    "acMode",
    "humidityLevel",
    "headLightStatus",
    "parkingBrakeStatus",
    "brakePedalStatus",
    "distanceToNextVehicle",
    "cruiseStatus",
    "destination",
    "frontLeftTirePressure",
    "frontRightTirePressure",
    "rearLeftTirePressure",
    "rearRightTirePressure",
    "long_context",
)

HEADLIGHT_MODES = ("on", "off", "auto")
PARKING_BRAKE_MODES = ("engage", "release")

#: Unordered zipcode pairs with a known distance in km.
_DISTANCES_KM = {
    ("83214", "74532"): 750.0,
    ("56108", "62947"): 320.0,
    ("71354", "83462"): 450.0,
    ("47329", "52013"): 290.0,
    ("69238", "51479"): 630.0,
    ("94016", "83214"): 980.0,
    ("94016", "94704"): 600.0,
    ("94704", "08540"): 2550.0,
    ("94016", "08540"): 1950.0,
    ("62947", "47329"): 1053.0,
    ("94016", "62947"): 780.0,
    ("74532", "94016"): 880.0,
}
DISTANCES_KM = {**_DISTANCES_KM, **{(b, a): km for (a, b), km in _DISTANCES_KM.items()}}

ZIPCODES = {
    "Rivermist": "83214",
    "Stonebrook": "74532",
    "Maplecrest": "56108",
    "Silverpine": "62947",
    "Shadowridge": "71354",
    "Sunset Valley": "83462",
    "Oakendale": "47329",
    "Willowbend": "52013",
    "Crescent Hollow": "69238",
    "Autumnville": "51479",
    "San Francisco": "94016",
}
UNKNOWN_ZIPCODE = "00000"
NEAREST_TIRE_SHOP = "456 Oakwood Avenue, Rivermist, 83214"

_ATOMIC = frozenset((str, int, float, bool, type(None)))


def _own(value: Any) -> Any:
    """A private copy of a config value: scalars as they are, a flat dict by ``dict()``,
    anything else by ``deepcopy`` (the reference works on a deep copy of the config)."""
    kind = type(value)
    if kind in _ATOMIC:
        return value
    if kind is dict and _ATOMIC.issuperset(map(type, value.values())):
        return dict(value)
    return copy.deepcopy(value)


@attrs.frozen
class LongContextExtras:
    """The long-context texts the reference adds to some results."""

    car_metadata: str
    intermediary_cities: list
    weather_history: Mapping[str, Any]
    parking_brake_instruction: str

    @classmethod
    def from_data(cls, data: Mapping[str, Any] | None) -> LongContextExtras:
        if data is None:
            raise ValueError(
                "VehicleControlAPI.from_config: long_context=True needs long_context_data "
                "(the mapping returned by backends.long_context.load_long_context)"
            )
        try:
            return cls(
                car_metadata=data["CAR_STATUS_METADATA_EXTENSION"],
                intermediary_cities=data["INTERMEDIARY_CITIES"],
                weather_history=data["LONG_WEATHER_EXTENSION"],
                parking_brake_instruction=data["PARKING_BRAKE_INSTRUCTION"],
            )
        except KeyError as exc:
            raise ValueError(f"VehicleControlAPI.from_config: long_context_data lacks {exc}") from None


@attrs.define(eq=False, kw_only=True)
class VehicleControlAPI(Backend):
    """The car's state; the public attributes are exactly those the reference compares."""

    fuelLevel: Any
    batteryVoltage: Any
    engine_state: Any
    remainingUnlockedDoors: Any
    doorStatus: Any
    acTemperature: Any
    fanSpeed: Any
    acMode: Any
    humidityLevel: Any
    headLightStatus: Any
    parkingBrakeStatus: Any
    brakePedalStatus: Any
    distanceToNextVehicle: Any
    cruiseStatus: Any
    destination: Any
    frontLeftTirePressure: Any
    frontRightTirePressure: Any
    rearLeftTirePressure: Any
    rearRightTirePressure: Any
    long_context: Any = False
    # Private in the reference too: not compared by the checker.
    _parkingBrakeForce: Any = attrs.field(alias="parkingBrakeForce")
    _slopeAngle: Any = attrs.field(alias="slopeAngle")
    _brakePedalForce: Any = attrs.field(alias="brakePedalForce")
    _random: random.Random | LazyRandom = attrs.field(alias="rng", repr=False)
    _extras: LongContextExtras | None = attrs.field(alias="extras", default=None, repr=False)

    @classmethod
    def from_scenario(cls, config: Mapping[str, Any], long_context_data: Mapping[str, Any] | None) -> VehicleControlAPI:
        """The car of a scenario's ``initial_config`` entry."""
        extras = LongContextExtras.from_data(long_context_data) if long_context_data is not None else None
        # Fast path (every dataset config): one merge in C gives each setting's value
        # (``config.get(key, default)`` for a dict config), and ``_own`` is skipped when
        # all of them are scalars, which it would return as they are. Otherwise (a
        # container value, a config that is not a dict) each value is owned as before.
        values = DEFAULTS | config if type(config) is dict else None
        if values is None or not _ATOMIC.issuperset(map(type, _SETTINGS(values))):
            values = {key: _own(config.get(key, default)) for key, default in DEFAULTS.items()}
        if "doorStatus" in config:
            door_status = _own(config["doorStatus"])
        else:
            door_status = {door: "unlocked" for door in DOOR_NAMES}
        # Quirk: a configured remainingUnlockedDoors is ignored; the count is derived
        # from the doors (the same expression as the reference, so odd data fails alike).
        remaining = 4 - len([1 for door in door_status.keys() if door_status[door] == "locked"])
        return cls(
            rng=LazyRandom(config.get("random_seed", DEFAULT_RANDOM_SEED)),
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
            long_context=long_context_data is not None,
            extras=extras,
        )

    def public_state(self) -> dict[str, Any]:
        """The compared attributes, in the reference's order (live values, not copies)."""
        return {name: getattr(self, name) for name in PUBLIC_FIELDS}

    # -- engine and fuel -------------------------------------------------------------

    @tool
    def startEngine(self, ignitionMode: str) -> dict:
        """Start (or stop) the engine; doors must be locked and the brake fully pressed.

        Args:
            ignitionMode (str): "START" or "STOP".
        Returns:
            engineState, fuelLevel, batteryVoltage; or an error.
        """
        # Quirk: "STOP" stops the engine at once, and then still runs the checks below,
        # ending in "Invalid ignition mode." when they all pass.
        if ignitionMode == "STOP":
            self.engine_state = "stopped"
        if self.remainingUnlockedDoors > 0:
            unlocked = [door for door, status in self.doorStatus.items() if status == "unlocked"]
            return {
                "error": "All doors must be locked before starting the engine. "
                "Here are the unlocked doors: " + ", ".join(unlocked)
            }
        if self.brakePedalStatus != "pressed":
            return {"error": "Brake pedal needs to be pressed when starting the engine."}
        if self._brakePedalForce != 1000.0:
            return {"error": "Must press the brake fully before starting the engine."}
        if self.fuelLevel < MIN_FUEL_LEVEL:
            return {"error": "Fuel tank is empty."}
        if ignitionMode == "START":
            self.engine_state = "running"
        else:
            return {"error": "Invalid ignition mode."}
        return {
            "engineState": self.engine_state,
            "fuelLevel": self.fuelLevel,
            "batteryVoltage": self.batteryVoltage,
        }

    @tool
    def fillFuelTank(self, fuelAmount: float) -> dict:
        """Add fuel; the tank holds at most 50 gallons.

        Args:
            fuelAmount (float): gallons to add.
        Returns:
            fuelLevel (float), or an error.
        """
        if fuelAmount < 0:
            return {"error": "Fuel amount cannot be negative."}
        if self.fuelLevel + fuelAmount > MAX_FUEL_LEVEL:
            return {"error": "Cannot fill gas above the tank capacity."}
        if self.fuelLevel + fuelAmount < MIN_FUEL_LEVEL:
            return {"error": "Fuel tank is empty. Min fuel level is 0 gallons."}
        self.fuelLevel += fuelAmount
        return {"fuelLevel": self.fuelLevel}

    # -- doors, climate, lights --------------------------------------------------------

    @tool
    def lockDoors(self, unlock: bool, door: list[str]) -> dict:
        """Lock or unlock some doors.

        Args:
            unlock (bool): True to unlock, False to lock.
            door (list[str]): door names: driver, passenger, rear_left, rear_right.
        Returns:
            lockStatus (str) and remainingUnlockedDoors (int).
        """
        # Quirk: doors are changed one by one, so an unknown name (KeyError) leaves the
        # doors before it already changed.
        target = "unlocked" if unlock else "locked"
        step = 1 if unlock else -1
        for name in door:
            if self.doorStatus[name] == target:
                continue
            self.doorStatus[name] = target
            self.remainingUnlockedDoors += step
        return {"lockStatus": target, "remainingUnlockedDoors": self.remainingUnlockedDoors}

    @tool
    def adjustClimateControl(
        self,
        temperature: float,
        unit: str = "celsius",
        fanSpeed: int = 50,
        mode: str = "auto",
    ) -> dict:
        """Set the air conditioning.

        Args:
            temperature (float): the temperature, in ``unit``.
            unit (str): [Optional] "celsius" or "fahrenheit".
            fanSpeed (int): [Optional] 0 to 100.
            mode (str): [Optional] auto, cool, heat or defrost.
        Returns:
            currentACTemperature, climateMode, humidityLevel; or an error.
        """
        if not (0 <= fanSpeed <= 100):
            return {"error": "Fan speed must be between 0 and 100."}
        # Quirk: the temperature is stored before the Fahrenheit conversion, which can
        # fail on a bad type and leave it stored unconverted.
        growth.store(temperature, mode, records=0)
        self.acTemperature = temperature
        if unit == "fahrenheit":
            self.acTemperature = (temperature - 32) * 5 / 9
        self.fanSpeed = fanSpeed
        self.acMode = mode
        # Quirk: the result echoes the temperature as given, not the stored Celsius value.
        return {
            "currentACTemperature": temperature,
            "climateMode": mode,
            "humidityLevel": self.humidityLevel,
        }

    @tool
    def get_outside_temperature_from_google(self) -> dict:
        """Outside temperature in Celsius (random, from the seeded generator).

        Returns:
            outsideTemperature (float); in long-context mode, with weather history.
        """
        temperature = self._random.uniform(-10.0, 40.0)
        if self.long_context:
            # The reference writes the value into its module-level weather dict and returns
            # that dict; a copy gives the same keys in the same order without shared state.
            report = dict(self._extras.weather_history)  # type: ignore[union-attr]
            report["outsideTemperature"] = temperature
            return report
        return {"outsideTemperature": temperature}

    @tool
    def get_outside_temperature_from_weather_com(self) -> dict:
        """Outside temperature from another source, which always fails.

        Returns:
            an error (404).
        """
        return {"error": 404}

    @tool
    def setHeadlights(self, mode: str) -> dict:
        """Switch the headlights.

        Args:
            mode (str): on, off or auto ("auto" counts as off).
        Returns:
            headlightStatus (str), or an error.
        """
        if mode not in HEADLIGHT_MODES:
            return {"error": "Invalid headlight mode."}
        status = "on" if mode == "on" else "off"
        self.headLightStatus = status
        return {"headlightStatus": status}

    @tool
    def displayCarStatus(self, option: str) -> dict:
        """Report one part of the car's status.

        Args:
            option (str): fuel, battery, doors, climate, headlights, parkingBrake,
                brakePedal or engine.
        Returns:
            the fields for that option (long-context mode adds metadata first), or an error.
        """
        status: dict[str, Any] = {}
        if self.long_context:
            status["metadata"] = self._extras.car_metadata  # type: ignore[union-attr]
        if option == "fuel":
            status["fuelLevel"] = self.fuelLevel
        elif option == "battery":
            status["batteryVoltage"] = self.batteryVoltage
        elif option == "doors":
            status["doorStatus"] = self.doorStatus
        elif option == "climate":
            status["currentACTemperature"] = self.acTemperature
            status["fanSpeed"] = self.fanSpeed
            status["climateMode"] = self.acMode
            status["humidityLevel"] = self.humidityLevel
        elif option == "headlights":
            status["headlightStatus"] = self.headLightStatus
        elif option == "parkingBrake":
            status["parkingBrakeStatus"] = self.parkingBrakeStatus
            status["parkingBrakeForce"] = self._parkingBrakeForce
            status["slopeAngle"] = self._slopeAngle
        elif option == "brakePedal":
            status["brakePedalStatus"] = self.brakePedalStatus
            status["brakePedalForce"] = self._brakePedalForce
        elif option == "engine":
            status["engineState"] = self.engine_state
        else:
            status["error"] = "Invalid option"
        return status

    # -- brakes and cruise control -------------------------------------------------------

    @tool
    def activateParkingBrake(self, mode: str) -> dict:
        """Engage or release the parking brake.

        Args:
            mode (str): "engage" or "release".
        Returns:
            parkingBrakeStatus, _parkingBrakeForce, _slopeAngle; or an error.
        """
        if mode not in PARKING_BRAKE_MODES:
            return {"error": "Invalid mode"}
        engage = mode == "engage"
        status = "engaged" if engage else "released"
        force = 500.0 if engage else 0.0
        self.parkingBrakeStatus = status
        self._parkingBrakeForce = force
        self._slopeAngle = 10.0  # Quirk: releasing also sets the slope to 10 degrees.
        result: dict[str, Any] = {}
        if self.long_context:
            result["parkingBrakeInstruction"] = self._extras.parking_brake_instruction  # type: ignore[union-attr]
        result["parkingBrakeStatus"] = status
        result["_parkingBrakeForce"] = force
        result["_slopeAngle"] = 10.0
        return result

    @tool
    def pressBrakePedal(self, pedalPosition: float) -> dict:
        """Press the brake pedal; it stays pressed until released.

        Args:
            pedalPosition (float): 0 (released) to 1 (fully pressed).
        Returns:
            brakePedalStatus and brakePedalForce (float), or an error.
        """
        if not (0 <= pedalPosition <= 1):
            return {"error": "Pedal position must be between 0 and 1."}
        if pedalPosition == 0:
            self.brakePedalStatus = "released"
            self._brakePedalForce = 0.0
            return {"brakePedalStatus": "released", "brakePedalForce": 0.0}
        force = pedalPosition * MAX_BRAKE_FORCE
        self.brakePedalStatus = "pressed"
        self._brakePedalForce = force  # kept unconverted (e.g. int 1000); only the result is float
        return {"brakePedalStatus": "pressed", "brakePedalForce": float(force)}

    @tool
    def releaseBrakePedal(self) -> dict:
        """Release the brake pedal.

        Returns:
            brakePedalStatus and brakePedalForce.
        """
        self.brakePedalStatus = "released"
        self._brakePedalForce = 0.0
        return {"brakePedalStatus": "released", "brakePedalForce": 0.0}

    @tool
    def setCruiseControl(self, speed: float, activate: bool, distanceToNextVehicle: float) -> dict:
        """Turn cruise control on or off; the engine must be running.

        Args:
            speed (float): 0 to 120, a multiple of 5.
            activate (bool): True to turn on, False to turn off.
            distanceToNextVehicle (float): distance to keep, in meters.
        Returns:
            cruiseStatus, currentSpeed, distanceToNextVehicle; or an error.
        """
        # Conversion order matters for which TypeError/ValueError is raised first.
        distanceToNextVehicle = float(distanceToNextVehicle)
        speed = float(speed)
        if self.engine_state == "stopped":
            return {"error": "Start the engine before activating the cruise control."}
        if activate:
            # Quirk: the distance is stored even when the speed turns out to be invalid.
            self.distanceToNextVehicle = distanceToNextVehicle
            if speed < 0 or speed > 120 or speed % 5 != 0:
                return {"error": "Invalid speed"}
            self.cruiseStatus = "active"
        else:
            self.cruiseStatus = "inactive"
            self.distanceToNextVehicle = distanceToNextVehicle
        return {
            "cruiseStatus": self.cruiseStatus,
            "currentSpeed": speed,
            "distanceToNextVehicle": distanceToNextVehicle,
        }

    @tool
    def get_current_speed(self) -> dict:
        """Current speed in km/h (random, from the seeded generator).

        Returns:
            currentSpeed (float).
        """
        return {"currentSpeed": self._random.uniform(0.0, 120.0)}

    # -- helpers without state ------------------------------------------------------------

    @tool
    def display_log(self, messages: list[str]) -> dict:
        """Show log messages.

        Args:
            messages (list[str]): the messages.
        Returns:
            log: the messages as given.
        """
        return {"log": messages}

    @tool
    def estimate_drive_feasibility_by_mileage(self, distance: float) -> dict:
        """Whether the fuel in the tank covers a distance (20 miles per gallon).

        Args:
            distance (float): miles.
        Returns:
            canDrive (bool).
        """
        return {"canDrive": not (self.fuelLevel * MILE_PER_GALLON < distance)}

    @tool
    def liter_to_gallon(self, liter: float) -> dict:
        """Convert liters to gallons.

        Args:
            liter (float): liters.
        Returns:
            gallon (float).
        """
        return {"gallon": liter * 0.264172}

    @tool
    def gallon_to_liter(self, gallon: float) -> dict:
        """Convert gallons to liters.

        Args:
            gallon (float): gallons.
        Returns:
            liter (float).
        """
        return {"liter": gallon * 3.78541}

    @tool
    def estimate_distance(self, cityA: str, cityB: str) -> dict:
        """Distance between two cities given by zipcode, from a small fixed table.

        Args:
            cityA (str): zipcode of one city.
            cityB (str): zipcode of the other.
        Returns:
            distance (float, km), or an error; long-context mode adds intermediaryCities.
        """
        # The reference compares with ``==`` against string literals: only strings can match.
        km = None
        if isinstance(cityA, str) and isinstance(cityB, str):
            km = DISTANCES_KM.get((cityA, cityB))
        result: dict[str, Any] = (
            {"distance": km} if km is not None else {"error": "distance not found in database."}
        )
        if self.long_context:
            result["intermediaryCities"] = self._extras.intermediary_cities  # type: ignore[union-attr]
        return result

    @tool
    def get_zipcode_based_on_city(self, city: str) -> dict:
        """Zipcode of a known city ("00000" for any other).

        Args:
            city (str): the city name.
        Returns:
            zipcode (str).
        """
        zipcode = ZIPCODES.get(city, UNKNOWN_ZIPCODE) if isinstance(city, str) else UNKNOWN_ZIPCODE
        return {"zipcode": zipcode}

    @tool
    def set_navigation(self, destination: str) -> dict:
        """Navigate to a destination.

        Args:
            destination (str): "street, city, state".
        Returns:
            status (str).
        """
        # Quirk: stored before the message is built, so a non-string is stored and then
        # the concatenation raises TypeError.
        growth.store(destination, records=0)
        self.destination = destination
        return {"status": "Navigating to " + destination}

    @tool
    def check_tire_pressure(self) -> dict:
        """Pressure of the four tires, and whether their average is within 30-35 psi.

        Returns:
            the four pressures, healthy_tire_pressure (bool), car_info.
        """
        average = (
            self.frontLeftTirePressure
            + self.frontRightTirePressure
            + self.rearLeftTirePressure
            + self.rearRightTirePressure
        ) / 4
        return {
            "frontLeftTirePressure": self.frontLeftTirePressure,
            "frontRightTirePressure": self.frontRightTirePressure,
            "rearLeftTirePressure": self.rearLeftTirePressure,
            "rearRightTirePressure": self.rearRightTirePressure,
            "healthy_tire_pressure": 30 <= average <= 35,
            "car_info": self._extras.car_metadata if self.long_context else {},  # type: ignore[union-attr]
        }

    @tool
    def find_nearest_tire_shop(self) -> dict:
        """Address of the nearest tire shop (always the same).

        Returns:
            shopLocation (str).
        """
        return {"shopLocation": NEAREST_TIRE_SHOP}
