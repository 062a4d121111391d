"""TravelAPI: a simulated travel agency (log in, credit cards, flights, bookings, insurance).

Behaviour follows the reference backend of bfcl-eval 2026.3.23 call for call,
including its quirks (each one is marked ``quirk:`` below). Fidelity to the
reference's results, error texts and state beats tidiness here: the BFCL checker
compares both with the reference's own ``==`` and rendering.
"""

from __future__ import annotations

import copy
import random
from datetime import datetime
from typing import Any, Mapping, Optional

import attrs

from bfcl_safe.backends import growth
from bfcl_safe.backends.base import Backend
from bfcl_safe.backends.dates import DATE_FORMAT, strptime
from bfcl_safe.backends.seeded import LazyRandom
from bfcl_safe.interp.tools import tool

#: Seed of the id generator when the scenario gives none.
DEFAULT_RANDOM_SEED = 141053

#: Public attributes, in the order the reference creates them (``vars()`` order).
PUBLIC_FIELDS = (
    "credit_card_list",
    "booking_record",
    "access_token",
    "token_type",
    "token_expires_in",
    "token_scope",
    "user_first_name",
    "user_last_name",
    "budget_limit",
    "long_context",
)

#: Scenario keys read as plain values, with their defaults.
_SCALAR_KEYS = (
    "access_token",
    "token_type",
    "token_expires_in",
    "token_scope",
    "user_first_name",
    "user_last_name",
    "budget_limit",
)

# Base fares in USD, one group per departure airport, in the reference's order
# (the order is visible: long-context mode lists every fare in this order).
# OKD appears twice on purpose: its route to LAX comes last in the reference.
_FARE_GROUPS: tuple[tuple[str, tuple[tuple[str, int], ...]], ...] = (
    ("SFO", (("LAX", 200), ("JFK", 500), ("ORD", 400), ("BOS", 450), ("RMS", 300), ("SBK", 350),
             ("MPC", 370), ("SVP", 320), ("SHD", 330), ("SSV", 340), ("OKD", 360), ("WLB", 310),
             ("CRH", 380), ("ATV", 390), ("PHV", 420), ("GFD", 430), ("CIA", 700))),
    ("LAX", (("SFO", 100), ("JFK", 600), ("ORD", 500), ("BOS", 550), ("RMS", 310), ("SBK", 320),
             ("MPC", 330), ("SVP", 340), ("SHD", 350), ("SSV", 360), ("OKD", 370), ("WLB", 380),
             ("CRH", 390), ("ATV", 400), ("PHV", 410), ("GFD", 420), ("HND", 430))),
    ("JFK", (("ORD", 300), ("BOS", 250), ("RMS", 450), ("SBK", 460), ("MPC", 470), ("SVP", 480),
             ("SHD", 490), ("SSV", 500), ("OKD", 510), ("WLB", 520), ("CRH", 530), ("ATV", 540),
             ("PHV", 550), ("GFD", 560), ("LAX", 570), ("HND", 800), ("PVG", 950), ("PEK", 1000))),
    ("ORD", (("LAX", 180), ("BOS", 200), ("RMS", 350), ("SBK", 360), ("MPC", 370), ("SVP", 380),
             ("SHD", 390), ("SSV", 400), ("OKD", 410), ("WLB", 420), ("CRH", 430), ("ATV", 440),
             ("PHV", 450), ("GFD", 460))),
    ("BOS", (("RMS", 400), ("SBK", 410), ("MPC", 420), ("SVP", 430), ("SHD", 440), ("SSV", 450),
             ("OKD", 460), ("WLB", 470), ("CRH", 480), ("ATV", 490), ("PHV", 500), ("GFD", 510))),
    ("RMS", (("BOS", 200), ("JFK", 210), ("SBK", 220), ("MPC", 230), ("SVP", 240), ("SHD", 250),
             ("SSV", 260), ("OKD", 270), ("WLB", 280), ("CRH", 290), ("ATV", 300), ("PHV", 310),
             ("GFD", 320), ("LAX", 330))),
    ("SBK", (("MPC", 200), ("SVP", 210), ("SHD", 220), ("SSV", 230), ("OKD", 240), ("WLB", 250),
             ("CRH", 260), ("ATV", 270), ("PHV", 280), ("GFD", 290))),
    ("MPC", (("SVP", 210), ("SHD", 220), ("SSV", 230), ("OKD", 240), ("WLB", 250), ("CRH", 260),
             ("ATV", 270), ("PHV", 280), ("GFD", 290))),
    ("SVP", (("SHD", 230), ("SSV", 240), ("OKD", 250), ("WLB", 260), ("CRH", 270), ("ATV", 280),
             ("PHV", 290), ("GFD", 300))),
    ("SHD", (("SSV", 220), ("OKD", 230), ("WLB", 240), ("CRH", 250), ("ATV", 260), ("PHV", 270),
             ("GFD", 280))),
    ("SSV", (("OKD", 240), ("WLB", 250), ("CRH", 260), ("ATV", 270), ("PHV", 280), ("GFD", 290))),
    ("OKD", (("WLB", 230), ("CRH", 240), ("ATV", 250), ("PHV", 260), ("GFD", 270))),
    ("WLB", (("CRH", 250), ("ATV", 260), ("PHV", 270), ("GFD", 280))),
    ("CRH", (("ATV", 240), ("PHV", 250), ("GFD", 260), ("SFO", 270), ("RMS", 280), ("HKG", 290),
             ("JFK", 300))),
    ("ATV", (("PHV", 230), ("GFD", 240))),
    ("PHV", (("GFD", 220),)),
    ("LHR", (("CDG", 100),)),
    ("OKD", (("LAX", 220),)),
)

#: ``(from, to) -> base fare``; insertion order is the reference's.
BASE_FARES: dict[tuple[str, str], int] = {
    (origin, destination): fare
    for origin, routes in _FARE_GROUPS
    for destination, fare in routes
}

#: Fare multiplier per travel class.
CLASS_FACTORS = {"economy": 1, "business": 2, "first": 5}

#: Classes book_flight accepts, and how its error message lists them.
VALID_CLASSES = frozenset(CLASS_FACTORS)
VALID_CLASSES_TEXT = "{'economy', 'business', 'first'}"

#: Airports known to ``list_all_airports``, in the reference's order. (quirk: PVG
#: has a fare from JFK but is not listed, so it cannot be booked.)
AIRPORTS = (
    "RMS", "SBK", "MPC", "SVP", "SHD", "CDG", "LHR", "SSV", "OKD", "WLB", "PEK", "HND",
    "HKG", "CIA", "CRH", "ATV", "PHV", "GFD", "SFO", "LAX", "JFK", "ORD", "BOS",
)

#: City name -> nearest airport code.
CITY_AIRPORTS = {
    "Rivermist": "RMS",
    "Stonebrook": "SBK",
    "Maplecrest": "MPC",
    "Silverpine": "SVP",
    "Shadowridge": "SHD",
    "London": "LHR",
    "Paris": "CDG",
    "Sunset Valley": "SSV",
    "Oakendale": "OKD",
    "Willowbend": "WLB",
    "Crescent Hollow": "CRH",
    "Autumnville": "ATV",
    "Pinehaven": "PHV",
    "Greenfield": "GFD",
    "San Francisco": "SFO",
    "Los Angeles": "LAX",
    "New York": "JFK",
    "Chicago": "ORD",
    "Boston": "BOS",
    "Beijing": "PEK",
    "Hong Kong": "HKG",
    "Rome": "CIA",
    "Tokyo": "HND",
}

#: One USD buys this much of each currency. Exact types matter (int vs float):
#: ``float(value * rate)`` repeats a string ``value`` for an int rate.
USD_RATES: tuple[tuple[str, int | float], ...] = (
    ("RMB", 7),
    ("EUR", 0.8),
    ("JPY", 110),
    ("GBP", 0.7),
    ("CAD", 1.3),
    ("AUD", 1.4),
    ("INR", 70),
    ("RUB", 60),
    ("BRL", 3.8),
    ("MXN", 20),
)

SUPPORT_REPLY = (
    "Thank you for contacting customer support. Your message has been received "
    "and we will get back to you shortly."
)

_SCALAR_TYPES = frozenset((str, int, float, bool, type(None)))


def _own_records(records: Any) -> Any:
    """A private copy of a ``{id: {field: scalar}}`` mapping from the scenario.

    Two dict levels are copied when the leaves are plain scalars (the dataset's
    case); anything else falls back to a deep copy, as the reference copies the
    whole scenario.
    """
    # Plain loops rather than ``all(<genexpr>)`` and a comprehension: the same checks and
    # copies in the same order, without creating a generator and a function per call.
    if type(records) is not dict:
        return copy.deepcopy(records)
    for record in records.values():
        if type(record) is not dict or not _SCALAR_TYPES.issuperset(map(type, record.values())):
            return copy.deepcopy(records)
    owned = {}
    for key, record in records.items():
        owned[key] = dict(record)
    return owned


def _own_value(value: Any) -> Any:
    return value if type(value) in _SCALAR_TYPES else copy.deepcopy(value)


def _own_scalars(config: Any) -> list:
    """``_own_value(config.get(key))`` for each of ``_SCALAR_KEYS``, in that order."""
    if type(config) is dict:
        # Fast path (every dataset config): the lookups run in C, and ``_own_value`` is
        # skipped when every value is a scalar, which it would return as it is. Lookups
        # in a dict have no side effects (for keys of built-in types), so looking all
        # of them up before any copy is the same as interleaving them as below.
        values = list(map(config.get, _SCALAR_KEYS))
        if _SCALAR_TYPES.issuperset(map(type, values)):
            return values
    return [_own_value(config.get(key)) for key in _SCALAR_KEYS]


def _date_multiplier(travel_date: Any) -> int:
    """2 when the digits of the date add up to an even number, else 1."""
    # Same generator as the reference, so a non-string date fails with the same text
    # ("'int' object is not iterable", "... has no attribute 'isdigit'").
    digit_sum = sum(int(char) for char in travel_date if char.isdigit())
    return 2 if digit_sum % 2 == 0 else 1


@attrs.define(eq=False)
class TravelAPI(Backend):
    """Travel booking backend. Public attributes are the state the checker compares."""

    credit_card_list: Any = attrs.field(factory=dict)
    booking_record: Any = attrs.field(factory=dict)
    access_token: Any = None
    token_type: Any = None
    token_expires_in: Any = None
    token_scope: Any = None
    user_first_name: Any = None
    user_last_name: Any = None
    budget_limit: Any = None
    long_context: bool = False
    _random: random.Random | LazyRandom = attrs.field(factory=lambda: random.Random(DEFAULT_RANDOM_SEED))

    @classmethod
    def from_scenario(cls, config: Mapping[str, Any], long_context_data: Mapping[str, Any] | None) -> TravelAPI:
        """The backend of a scenario's ``initial_config["TravelAPI"]``.

        In long-context mode the cards and bookings of ``long_context_data`` are added
        unless the scenario has the same ids. quirk: like the reference, which inserts
        its module-level dicts, the very same card and booking dicts are inserted, not
        copies: a balance change on an extension card is seen by every instance built
        from the same ``long_context_data``."""
        cards = _own_records(config["credit_card_list"]) if "credit_card_list" in config else {}
        bookings = _own_records(config["booking_record"]) if "booking_record" in config else {}
        instance = cls(
            credit_card_list=cards,
            booking_record=bookings,
            **dict(zip(_SCALAR_KEYS, _own_scalars(config))),
            long_context=long_context_data is not None,
            random=LazyRandom(config.get("random_seed", DEFAULT_RANDOM_SEED)),
        )
        if long_context_data is not None:
            cards = instance.credit_card_list
            for card_id, card in long_context_data["CREDIT_CARD_EXTENSION"].items():
                if card_id not in cards:
                    cards[card_id] = card
            bookings = instance.booking_record
            for booking_id, booking in long_context_data["BOOKING_RECORD_EXTENSION"].items():
                if booking_id not in bookings:
                    bookings[booking_id] = booking
        return instance

    def public_state(self) -> dict[str, Any]:
        """The compared attributes, in the reference's order (live objects, not copies)."""
        return {name: getattr(self, name) for name in PUBLIC_FIELDS}

    # -- helpers -----------------------------------------------------------------

    def _fare(self, travel_from: Any, travel_to: Any, travel_date: Any, travel_class: Any) -> float:
        """Price of one route, checking route, then class, then date like the reference."""
        base = self._base_fare(travel_from, travel_to)
        factor = self._class_factor(travel_class)
        return float(base * factor * _date_multiplier(travel_date))

    @staticmethod
    def _base_fare(travel_from: Any, travel_to: Any) -> int:
        route = (travel_from, travel_to)
        if route not in BASE_FARES:  # an unhashable airport raises TypeError here, as in the reference
            raise ValueError("No available route for the given airports.")
        return BASE_FARES[route]

    @staticmethod
    def _class_factor(travel_class: Any) -> int:
        # Compared with ==, not looked up: an unhashable class is just invalid.
        for name, factor in CLASS_FACTORS.items():
            if travel_class == name:
                return factor
        raise ValueError("Invalid travel class. Options are: economy, business, first.")

    def _token_error(self, access_token: Any) -> Optional[str]:
        """The error of a call that needs a valid token, or None.

        quirk: an uninitialised token (None) is not reported here; only
        register_credit_card checks for it.
        """
        if self.token_expires_in == 0:
            return "Token expired"
        if access_token != self.access_token:
            return "Invalid access token"
        return None

    # -- tools -------------------------------------------------------------------

    @tool
    def authenticate_travel(
        self,
        client_id: str,
        client_secret: str,
        refresh_token: str,
        grant_type: str,
        user_first_name: str,
        user_last_name: str,
    ) -> dict[str, Any]:
        """Log the user in and issue a fresh 6-digit access token.

        Args:
            client_id: the client application's id (not checked).
            client_secret: the client application's secret (not checked).
            refresh_token: a refresh token (not checked).
            grant_type: scope of the token: read_write, read or write.
            user_first_name: first name of the user.
            user_last_name: last name of the user.

        Returns:
            expires_in, access_token, token_type and scope of the new token.
        """
        growth.store(grant_type, user_first_name, user_last_name, records=0)
        self.token_expires_in = 2
        self.access_token = str(self._random.randint(100000, 999999))
        self.token_type = "Bearer"
        self.token_scope = grant_type
        self.user_first_name = user_first_name
        self.user_last_name = user_last_name
        return {
            "expires_in": 2,
            "access_token": self.access_token,
            "token_type": "Bearer",
            "scope": grant_type,
        }

    @tool
    def travel_get_login_status(self) -> dict[str, bool]:
        """Tell whether a usable token exists.

        Returns:
            status: True when logged in.
        """
        logged_out = self.token_expires_in is None or self.token_expires_in == 0
        return {"status": not logged_out}

    @tool
    def get_budget_fiscal_year(self, lastModifiedAfter=None, includeRemoved=None) -> dict[str, str]:
        """The budget fiscal year (always 2018; both filters are ignored).

        Args:
            lastModifiedAfter: [Optional] only years changed after this UTC time.
            includeRemoved: [Optional] also list removed years.

        Returns:
            budget_fiscal_year: the year.
        """
        return {"budget_fiscal_year": "2018"}

    @tool
    def register_credit_card(
        self,
        access_token: str,
        card_number: str,
        expiration_date: str,
        cardholder_name: str,
        card_verification_number: int,
    ) -> dict[str, Any]:
        """Add a card under a new 12-digit id, with a random 5-digit balance.

        Args:
            access_token: the token from authenticate_travel.
            card_number: the card number.
            expiration_date: expiry as MM/YYYY.
            cardholder_name: the name on the card.
            card_verification_number: the CVV.

        Returns:
            card_id: id of the new card.
        """
        if self.token_expires_in is None:
            return {"error": "Token not initialized"}
        error = self._token_error(access_token)
        if error is not None:
            return {"error": error}
        # quirk: the card *number* is looked up among card *ids*.
        if card_number in self.credit_card_list:
            return {"error": "Card already registered"}
        growth.store(card_number, expiration_date, cardholder_name, card_verification_number, records=6,
                     inside=(self.credit_card_list,))
        card_id = str(self._random.randint(100000000000, 999999999999))
        self.credit_card_list[card_id] = {
            "card_number": card_number,
            "expiration_date": expiration_date,
            "cardholder_name": cardholder_name,
            "card_verification_number": card_verification_number,
            "balance": self._random.randint(10000, 99999),
        }
        return {"card_id": card_id}

    @tool
    def get_flight_cost(self, travel_from: str, travel_to: str, travel_date: str, travel_class: str) -> dict[str, list]:
        """Fares in USD for a route, date and class.

        The class multiplies the base fare by 1, 2 or 5; a date whose digits sum to an
        even number doubles it. In long-context mode every known route is priced.

        Args:
            travel_from: 3-letter code of the departure airport.
            travel_to: 3-letter code of the arrival airport.
            travel_date: date as YYYY-MM-DD.
            travel_class: economy, business or first.

        Returns:
            travel_cost_list: list of fares.
        """
        cost = self._fare(travel_from, travel_to, travel_date, travel_class)
        if not self.long_context:
            return {"travel_cost_list": [cost]}
        # quirk: long context lists the fare of every route, not only the one asked for.
        factor = CLASS_FACTORS[travel_class]
        multiplier = _date_multiplier(travel_date)
        return {"travel_cost_list": [float(base * factor * multiplier) for base in BASE_FARES.values()]}

    @tool
    def get_credit_card_balance(self, access_token: str, card_id: str) -> dict[str, Any]:
        """Balance of a registered card.

        Args:
            access_token: the token from authenticate_travel.
            card_id: id of the card.

        Returns:
            card_balance: the balance.
        """
        error = self._token_error(access_token)
        if error is not None:
            return {"error": error}
        if card_id not in self.credit_card_list:
            return {
                "error": "Card not registered. Here are a list of card_id's: "
                + str(list(self.credit_card_list.keys()))
            }
        return {"card_balance": self.credit_card_list[card_id]["balance"]}

    @tool
    def book_flight(
        self,
        access_token: str,
        card_id: str,
        travel_date: str,
        travel_from: str,
        travel_to: str,
        travel_class: str,
    ) -> dict[str, Any]:
        """Book and pay a flight between two IATA airports; new 7-digit booking id, 8-digit transaction id.

        Args:
            access_token: the token from authenticate_travel.
            card_id: id of the card to charge.
            travel_date: date as YYYY-MM-DD.
            travel_from: departure airport code.
            travel_to: arrival airport code.
            travel_class: economy, business or first.

        Returns:
            booking_id, transaction_id, booking_status and booking_history (all bookings
            in long-context mode, else empty); or booking_status False and error.
        """
        error = self._token_error(access_token)
        if error is None and card_id not in self.credit_card_list:
            error = "Card not registered"
        if error is None and "balance" not in self.credit_card_list[card_id]:
            error = "Balance not found"
        if error is None and travel_from not in AIRPORTS:
            error = f"Invalid departure airport code: {travel_from}"
        if error is None and travel_to not in AIRPORTS:
            error = f"Invalid destination airport code: {travel_to}"
        if error is not None:
            return {"booking_status": False, "error": error}
        try:
            # A non-string date raises TypeError, which the reference lets through.
            strptime(travel_date, DATE_FORMAT)
        except ValueError:
            return {"booking_status": False, "error": "Invalid date format. Use YYYY-MM-DD."}
        # The reference checks membership in a set (an unhashable class raises TypeError;
        # a set is looked up as a frozenset) and puts the set's repr in the message.
        # quirk, not reproducible: that repr's order depends on the string hash seed of
        # the process and on the order frozen in the reference's .pyc, so it varies from
        # run to run; we print one fixed order instead (see VALID_CLASSES_TEXT).
        if travel_class not in VALID_CLASSES:
            return {"booking_status": False, "error": f"Invalid travel class. Must be one of {VALID_CLASSES_TEXT}"}
        try:
            travel_cost = self._fare(travel_from, travel_to, travel_date, travel_class)
        except ValueError as exc:
            return {"booking_status": False, "error": str(exc)}

        card = self.credit_card_list[card_id]
        if card["balance"] < travel_cost:
            return {"booking_status": False, "error": "Insufficient funds"}
        # quirk: the budget limit is compared with the card balance, not with the fare.
        if self.budget_limit is not None and card["balance"] < self.budget_limit:
            return {"booking_status": False, "error": "Balance is less than budget limit"}

        growth.store(card_id, travel_date, travel_class, records=8, inside=(self.booking_record,))
        card["balance"] -= travel_cost
        booking_id = str(self._random.randint(1000000, 9999999))
        transaction_id = str(self._random.randint(10000000, 99999999))
        self.booking_record[booking_id] = {
            "card_id": card_id,
            "travel_date": travel_date,
            "travel_from": travel_from,
            "travel_to": travel_to,
            "travel_class": travel_class,
            "travel_cost": travel_cost,
            "transaction_id": transaction_id,
        }
        return {
            "booking_id": booking_id,
            "transaction_id": transaction_id,
            "booking_status": True,
            # The live record, like the reference; it is rendered right away.
            "booking_history": self.booking_record if self.long_context else {},
        }

    @tool
    def retrieve_invoice(self, access_token: str, booking_id=None, insurance_id=None) -> dict[str, Any]:
        """Invoice of a booking.

        Args:
            access_token: the token from authenticate_travel.
            booking_id: [Optional] id of the booking.
            insurance_id: [Optional] id of an insurance (ignored).

        Returns:
            invoice: booking_id, travel_date, travel_from, travel_to, travel_class,
            travel_cost and transaction_id.
        """
        error = self._token_error(access_token)
        if error is not None:
            return {"error": error}
        if booking_id not in self.booking_record:
            return {"error": "Booking not found"}
        booking = self.booking_record[booking_id]
        # Field by field, in this order: a missing field raises KeyError naming it.
        invoice = {"booking_id": booking_id}
        for field in ("travel_date", "travel_from", "travel_to", "travel_class", "travel_cost", "transaction_id"):
            invoice[field] = booking[field]
        return {"invoice": invoice}

    @tool
    def get_booking_history(self, access_token: str) -> dict[str, Any]:
        """All bookings of the user.

        Args:
            access_token: the token from authenticate_travel.

        Returns:
            booking_history: a copy of the bookings, keyed by booking id.
        """
        error = self._token_error(access_token)
        if error is not None:
            return {"error": error}
        growth.scan(self.booking_record)
        return {"booking_history": copy.deepcopy(self.booking_record)}

    @tool
    def list_all_airports(self) -> list[str]:
        """Codes of all known airports.

        Returns:
            airports: list of codes.
        """
        return list(AIRPORTS)

    @tool
    def cancel_booking(self, access_token: str, booking_id: str) -> dict[str, Any]:
        """Cancel a booking and refund its cost to the card it was paid with.

        Args:
            access_token: the token from authenticate_travel.
            booking_id: id of the booking.

        Returns:
            cancel_status: True on success (else False and error).
        """
        error = self._token_error(access_token)
        if error is None and booking_id not in self.booking_record:
            error = "Booking not found"
        if error is not None:
            return {"cancel_status": False, "error": error}
        booking = self.booking_record[booking_id]
        card_id = booking["card_id"]
        travel_cost = booking["travel_cost"]
        # A refund to an unknown card raises KeyError before the booking is removed.
        self.credit_card_list[card_id]["balance"] += travel_cost
        del self.booking_record[booking_id]
        return {"cancel_status": True}

    @tool
    def compute_exchange_rate(self, base_currency: str, target_currency: str, value: float) -> dict[str, float]:
        """Convert an amount between USD and another currency.

        Args:
            base_currency: currency of value: USD, RMB, EUR, JPY, GBP, CAD, AUD, INR, RUB, BRL or MXN.
            target_currency: currency to convert to (same choices).
            value: the amount.

        Returns:
            exchanged_value: the converted amount.
        """
        # Same expressions as the reference so that odd values behave the same
        # (quirk: value "2" with rate 7 gives float("2222222")); from USD the result
        # is not rounded, to USD it is rounded to 2 places.
        for currency, rate in USD_RATES:
            if base_currency == "USD" and target_currency == currency:
                if isinstance(value, (str, bytes, list, tuple)) and type(rate) is int:
                    # A sequence is repeated ``rate`` times before float() refuses it.
                    growth.compute(len(value) * rate)
                return {"exchanged_value": float(value * rate)}
            if base_currency == currency and target_currency == "USD":
                return {"exchanged_value": round(value / rate, 2)}
        raise ValueError("No available exchange rate for the given currencies.")

    @tool
    def verify_traveler_information(
        self, first_name: str, last_name: str, date_of_birth: str, passport_number: str
    ) -> dict[str, Any]:
        """Check a traveler against the logged-in user: same name, adult, US passport.

        Args:
            first_name: traveler's first name.
            last_name: traveler's last name.
            date_of_birth: date as YYYY-MM-DD.
            passport_number: passport number; US passports start with "US".

        Returns:
            verification_status, and verification_failure when it fails.
        """
        if self.user_first_name != first_name or self.user_last_name != last_name:
            return {
                "verification_status": False,
                # quirk: no space after the first sentence.
                "verification_failure": "Cannot book flight information for another user."
                f"Expected {self.user_first_name} {self.user_last_name}, got {first_name} {last_name}",
            }
        try:
            born = strptime(date_of_birth, DATE_FORMAT)
            # The wall clock decides the age, as in the reference.
            today = datetime.today()
            age = today.year - born.year - ((today.month, today.day) < (born.month, born.day))
        except ValueError:
            return {
                "verification_status": False,
                "verification_failure": "Invalid date of birth format. Please use YYYY-MM-DD.",
            }
        if age < 18:
            return {"verification_status": False, "verification_failure": "Traveler must be at least 18 years old."}
        if not passport_number.startswith("US"):
            return {"verification_status": False,
                    "verification_failure": "Passport must be issued by the United States."}
        return {"verification_status": True}

    @tool
    def set_budget_limit(self, access_token: str, budget_limit: float) -> dict[str, Any]:
        """Set the user's budget limit in USD.

        Args:
            access_token: the token from authenticate_travel or the scenario.
            budget_limit: the limit, converted with float().

        Returns:
            budget_limit: the limit set.
        """
        error = self._token_error(access_token)
        if error is not None:
            return {"error": error}
        budget_limit = float(budget_limit)
        self.budget_limit = budget_limit
        return {"budget_limit": budget_limit}

    @tool
    def get_nearest_airport_by_city(self, location: str) -> dict[str, str]:
        """Airport code nearest to a city ("Unknown" for other places).

        Args:
            location: city name, e.g. Rivermist, London, New York, Tokyo.

        Returns:
            nearest_airport: the airport code.
        """
        return {"nearest_airport": CITY_AIRPORTS.get(location, "Unknown")}

    @tool
    def purchase_insurance(
        self,
        access_token: str,
        insurance_type: str,
        booking_id: str,
        insurance_cost: float,
        card_id: str,
    ) -> dict[str, Any]:
        """Buy travel insurance for a booking, charged to a card; new 9-digit insurance id.

        Args:
            access_token: the token from authenticate_travel.
            insurance_type: kind of insurance (not checked).
            booking_id: id of the booking.
            insurance_cost: price of the insurance.
            card_id: id of the card to charge.

        Returns:
            insurance_id and insurance_status (else insurance_status False and error).
        """
        error = self._token_error(access_token)
        # quirk: the budget limit is checked before the booking and card exist; the
        # insurance is not recorded anywhere, only charged.
        if error is None and self.budget_limit is not None and self.budget_limit < insurance_cost:
            error = "Exceeded budget limit"
        if error is None and booking_id not in self.booking_record:
            error = "Booking not found"
        if error is None and card_id not in self.credit_card_list:
            error = "Credit card not registered"
        if error is not None:
            return {"insurance_status": False, "error": error}
        self.credit_card_list[card_id]["balance"] -= insurance_cost
        return {
            "insurance_id": str(self._random.randint(100000000, 999999999)),
            "insurance_status": True,
        }

    @tool
    def contact_customer_support(self, booking_id: str, message: str) -> dict[str, str]:
        """Send a message to customer support about a booking.

        Args:
            booking_id: id of the booking.
            message: the message.

        Returns:
            customer_support_message: the canned reply.
        """
        if booking_id not in self.booking_record:
            return {"error": "Booking not found"}
        return {"customer_support_message": SUPPORT_REPLY}

    @tool
    def get_all_credit_cards(self) -> dict[str, Any]:
        """All registered cards.

        Returns:
            credit_card_list: cards keyed by card id (number, expiry, holder, CVV, balance).
        """
        return {"credit_card_list": self.credit_card_list}
