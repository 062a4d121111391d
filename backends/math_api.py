"""The Math API: stateless arithmetic, statistics and unit conversions.

Every tool returns ``{"result": value}`` or ``{"error": message}``; only the
exceptions the reference catches become error dicts, every other exception
escapes to the caller (and becomes ``Error during execution: ...``).

Fidelity notes (the reference's behaviour, kept on purpose):

* Results keep the exact Python type the plain operators give (``int``,
  ``float``, ``complex``, ``str`` for ``add("a", "b")``, ``mpmath.mpf`` /
  ``mpc`` from :meth:`MathAPI.logarithm`, ``decimal.Decimal`` from
  :meth:`MathAPI.square_root`), because the result string is rendered with
  ``json.dumps`` and, when that fails, with ``str``.
* :meth:`MathAPI.logarithm` sets the precision of mpmath's *global* context
  ``mpmath.mp`` and leaves it set (a precision that cannot be set is an error
  result and keeps the previous one). An ``mpf`` is rendered with the context's
  precision *at rendering time*, so the setting is visible when a result is
  rendered later: e.g. a result dict stored in another backend's state by a
  nested call, printed or compared when states are checked. We use the same
  global context, so this carries over exactly as in the reference (within one
  process, in the same call order); results must be rendered right after the call.
* :meth:`MathAPI.square_root` changes the thread's decimal context in the
  reference; that change is never observable through the tools (the precision
  is always set again before use), so we use a fresh context per call with the
  same defaults instead of touching global state.
"""

from __future__ import annotations

import decimal
import math
from typing import Any, Mapping

import attrs

from bfcl_safe.backends import growth
from bfcl_safe.backends.base import Backend
from bfcl_safe.interp import limits
from bfcl_safe.interp.tools import tool

#: Length units accepted by :meth:`MathAPI.si_unit_conversion`, in metres.
METRES_PER_UNIT: Mapping[str, float] = {
    "km": 1000,
    "m": 1,
    "cm": 0.01,
    "mm": 0.001,
    "um": 1e-6,
    "nm": 1e-9,
}
#: The inverse factors, computed as ``1 / factor`` like the reference (so the
#: floats, and hence the rounding of ``value * a * b``, are identical).
UNITS_PER_METRE: Mapping[str, float] = {unit: 1 / factor for unit, factor in METRES_PER_UNIT.items()}

#: Multipliers of :meth:`MathAPI.imperial_si_conversion`, keyed ``"{in}_to_{out}"``.
IMPERIAL_FACTORS: Mapping[str, float] = {
    "cm_to_in": 0.393701,
    "in_to_cm": 2.54,
    "m_to_ft": 3.28084,
    "ft_to_m": 0.3048,
    "m_to_yd": 1.09361,
    "yd_to_m": 0.9144,
    "km_to_miles": 0.621371,
    "miles_to_km": 1.60934,
    "kg_to_lb": 2.20462,
    "lb_to_kg": 0.453592,
    "celsius_to_fahrenheit": 1.8,
    "fahrenheit_to_celsius": 5 / 9,
}

FAHRENHEIT_OFFSET = 32

NOT_NUMBERS = "Both inputs must be numbers"
NOT_ALL_NUMBERS = "All elements in the list must be numbers"
NOT_A_NUMBER = "Value must be a number"
TOO_LARGE = "Conversion resulted in a value too large to represent"


def _result(value: Any) -> dict[str, Any]:
    return {"result": value}


def _error(message: str) -> dict[str, Any]:
    return {"error": message}


def _unsupported(unit_in: Any, unit_out: Any) -> dict[str, Any]:
    return _error(f"Conversion from '{unit_in}' to '{unit_out}' is not supported")


def _is_plain_number(value: Any) -> bool:
    # bool passes too, as in the reference (it is an int subclass).
    return isinstance(value, (int, float))


# Guards for computations the reference would never finish (it hangs on them), so
# there is no official verdict they could change; the limits are in interp.limits.


def _costly(x: Any) -> bool:
    """A number whose logarithm or root mpmath/decimal would really compute (special
    values such as 0, 1, inf and nan come back at once, at any precision)."""
    return type(x) in (int, float, complex) and x == x and x not in (0, 1) and abs(x) != math.inf


def warm_up() -> None:
    """Import mpmath now: the import takes 0.3-0.5 s, once per process, and would
    otherwise fall on the first ``logarithm`` call (an episode with MathAPI calls this
    when it is created; scoring leaves it to the first call)."""
    import mpmath  # noqa: F401 - the import is the point (logarithm imports it again, then free)


def _check_precision(precision: Any, *operands: Any, ceiling: float = math.inf) -> None:
    """Refuse a costly computation above the precision limit (up to ``ceiling``, above
    which the library itself refuses at once)."""
    finite = type(precision) is int or (type(precision) is float and math.isfinite(precision))
    if finite and limits.MAX_PRECISION_DIGITS < precision <= ceiling and any(map(_costly, operands)):
        raise OverflowError(f"precision above {limits.MAX_PRECISION_DIGITS} digits is refused")


def _check_power(base: Any, exponent: Any) -> None:
    if type(base) in (int, bool) and type(exponent) in (int, bool) and exponent > 0 and abs(base) > 1:
        if exponent * math.log10(abs(base)) > limits.MAX_COMPUTED_DIGITS:
            raise OverflowError(f"a result above {limits.MAX_COMPUTED_DIGITS} digits is refused")


@attrs.define
class MathAPI(Backend):
    """Stateless: the reference never loads a scenario into it and compares no state."""

    @classmethod
    def from_scenario(cls, config: Mapping[str, Any], long_context_data: Mapping[str, Any] | None) -> MathAPI:
        """The API; ``config`` is ignored (the reference never loads one)."""
        return cls()

    def public_state(self) -> dict[str, Any]:
        """The compared attributes: none."""
        return {}

    # -- single numbers -------------------------------------------------------

    @tool
    def logarithm(self, value: float, base: float, precision: int) -> dict[str, Any]:
        """Logarithm of ``value`` in ``base``, computed by mpmath at ``precision`` digits.

        Args:
            value: The number.
            base: The base.
            precision: Decimal digits of working precision.

        Returns:
            result: The logarithm (an mpmath number), or error: the exception text.
        """
        if _costly(value) or _costly(base):
            # Outside the handler below: a spent budget is no result for the model.
            growth.precision(precision)
        try:
            _check_precision(precision, value, base)
            import mpmath  # here, not at the top: a slow import that only this tool needs

            # Global on purpose: see the module docstring.
            mpmath.mp.dps = precision
            return _result(mpmath.log(value) / mpmath.log(base))
        except Exception as exc:  # noqa: BLE001 - the reference reports any failure as data
            return _error(str(exc))

    @tool
    def si_unit_conversion(self, value: float, unit_in: str, unit_out: str) -> dict[str, Any]:
        """Convert a length between metric units (km, m, cm, mm, um, nm).

        Args:
            value: The amount.
            unit_in: Its unit.
            unit_out: The wanted unit.

        Returns:
            result: The converted amount.
        """
        if not _is_plain_number(value):
            return _error(NOT_A_NUMBER)
        # Membership tests run outside any handler: an unhashable unit raises.
        if unit_in not in METRES_PER_UNIT or unit_out not in UNITS_PER_METRE:
            return _unsupported(unit_in, unit_out)
        try:
            in_metres = value * METRES_PER_UNIT[unit_in]
            return _result(in_metres * UNITS_PER_METRE[unit_out])
        except OverflowError:
            return _error(TOO_LARGE)

    @tool
    def imperial_si_conversion(self, value: float, unit_in: str, unit_out: str) -> dict[str, Any]:
        """Convert between imperial and SI units, or Celsius and Fahrenheit.

        Args:
            value: The amount.
            unit_in: Its unit.
            unit_out: The wanted unit.

        Returns:
            result: The converted amount.
        """
        if not _is_plain_number(value):
            return _error(NOT_A_NUMBER)
        # Quirk: equal units return the value as is, even for unknown units.
        if unit_in == unit_out:
            return _result(value)
        factor_key = f"{unit_in}_to_{unit_out}"
        if factor_key not in IMPERIAL_FACTORS:
            return _unsupported(unit_in, unit_out)
        factor = IMPERIAL_FACTORS[factor_key]
        try:
            if unit_in == "celsius" and unit_out == "fahrenheit":
                converted = value * factor + FAHRENHEIT_OFFSET
            elif unit_in == "fahrenheit" and unit_out == "celsius":
                converted = (value - FAHRENHEIT_OFFSET) * factor
            else:
                converted = value * factor
        except OverflowError:
            return _error(TOO_LARGE)
        return _result(converted)

    @tool
    def add(self, a: float, b: float) -> dict[str, Any]:
        """Sum of two numbers.

        Args:
            a: First addend.
            b: Second addend.

        Returns:
            result: a + b.
        """
        # Quirk: no type check, so strings and lists concatenate.
        try:
            total = a + b
        except TypeError:
            return _error(NOT_NUMBERS)
        return _result(total)

    @tool
    def subtract(self, a: float, b: float) -> dict[str, Any]:
        """Difference of two numbers.

        Args:
            a: The minuend.
            b: The subtrahend.

        Returns:
            result: a - b.
        """
        try:
            difference = a - b
        except TypeError:
            return _error(NOT_NUMBERS)
        return _result(difference)

    @tool
    def multiply(self, a: float, b: float) -> dict[str, Any]:
        """Product of two numbers.

        Args:
            a: First factor.
            b: Second factor.

        Returns:
            result: a * b.
        """
        if not (_is_plain_number(a) and _is_plain_number(b)):
            return _error(NOT_NUMBERS)
        try:
            product = a * b
        except TypeError:
            return _error(NOT_NUMBERS)
        return _result(product)

    @tool
    def divide(self, a: float, b: float) -> dict[str, Any]:
        """Quotient of two numbers.

        Args:
            a: The numerator.
            b: The denominator.

        Returns:
            result: a / b.
        """
        try:
            if b == 0:
                return _error("Cannot divide by zero")
            quotient = a / b
        except TypeError:
            return _error(NOT_NUMBERS)
        return _result(quotient)

    @tool
    def power(self, base: float, exponent: float) -> dict[str, Any]:
        """``base`` raised to ``exponent``.

        Args:
            base: The base.
            exponent: The exponent.

        Returns:
            result: base ** exponent (complex for a negative base and fractional exponent).
        """
        _check_power(base, exponent)
        try:
            raised = base**exponent
        except TypeError:
            return _error(NOT_NUMBERS)
        return _result(raised)

    @tool
    def square_root(self, number: float, precision: int) -> dict[str, Any]:
        """Square root with the decimal module at ``precision`` significant digits.

        Args:
            number: A non-negative number.
            precision: Significant digits of the result.

        Returns:
            result: The root as a ``Decimal``.
        """
        try:
            if number < 0:
                return _error("Cannot calculate square root of a negative number")
            # A fresh context with the default settings; the reference sets the
            # thread's context (see the module docstring). An out-of-range
            # precision raises ValueError (not handled, as in the reference).
            context = decimal.Context()
            _check_precision(precision, number, ceiling=decimal.MAX_PREC)
            context.prec = precision
            if _costly(number):
                growth.precision(precision)
            return _result(decimal.Decimal(number).sqrt(context))
        except (TypeError, decimal.InvalidOperation):
            return _error("Input must be a number or computation resulted in an invalid operation")

    @tool
    def absolute_value(self, number: float) -> dict[str, Any]:
        """Absolute value of a number.

        Args:
            number: The number.

        Returns:
            result: abs(number).
        """
        try:
            magnitude = abs(number)
        except TypeError:
            return _error("Input must be a number")
        return _result(magnitude)

    @tool
    def round_number(self, number: float, decimal_places: int = 0) -> dict[str, Any]:
        """Round a number with Python's ``round``.

        Args:
            number: The number.
            decimal_places: [Optional] Digits after the point; 0 by default.

        Returns:
            result: The rounded number.
        """
        if type(decimal_places) is int and decimal_places < -limits.MAX_COMPUTED_DIGITS:
            # round(int, -n) computes 10**n: the reference never returns.
            raise OverflowError(f"decimal_places below -{limits.MAX_COMPUTED_DIGITS} is refused")
        try:
            rounded = round(number, decimal_places)
        except TypeError:
            return _error("First input must be a number, second input must be an integer")
        return _result(rounded)

    @tool
    def percentage(self, part: float, whole: float) -> dict[str, Any]:
        """What percent ``part`` is of ``whole``.

        Args:
            part: The part.
            whole: The whole (non-zero).

        Returns:
            result: part / whole * 100.
        """
        try:
            if whole == 0:
                return _error("Whole value cannot be zero")
            share = (part / whole) * 100
        except TypeError:
            return _error(NOT_NUMBERS)
        return _result(share)

    # -- lists of numbers -------------------------------------------------------
    # An empty (falsy) argument is reported first; only TypeError is handled.

    @tool
    def mean(self, numbers: list[float]) -> dict[str, Any]:
        """Arithmetic mean of a list.

        Args:
            numbers: The numbers.

        Returns:
            result: Their mean.
        """
        if not numbers:
            return _error("Cannot calculate mean of an empty list")
        try:
            average = sum(numbers) / len(numbers)
        except TypeError:
            return _error(NOT_ALL_NUMBERS)
        return _result(average)

    @tool
    def standard_deviation(self, numbers: list[float]) -> dict[str, Any]:
        """Population standard deviation of a list.

        Args:
            numbers: The numbers.

        Returns:
            result: Their standard deviation.
        """
        if not numbers:
            return _error("Cannot calculate standard deviation of an empty list")
        try:
            # Same evaluation order as the reference: sum before len.
            centre = sum(numbers) / len(numbers)
            spread = sum((x - centre) ** 2 for x in numbers) / len(numbers)
            deviation = math.sqrt(spread)
        except TypeError:
            return _error(NOT_ALL_NUMBERS)
        return _result(deviation)

    @tool
    def min_value(self, numbers: list[float]) -> dict[str, Any]:
        """Smallest item of a list.

        Args:
            numbers: The numbers.

        Returns:
            result: Their minimum.
        """
        if not numbers:
            return _error("Cannot find minimum of an empty list")
        try:
            smallest = min(numbers)
        except TypeError:
            return _error(NOT_ALL_NUMBERS)
        return _result(smallest)

    @tool
    def max_value(self, numbers: list[float]) -> dict[str, Any]:
        """Largest item of a list.

        Args:
            numbers: The numbers.

        Returns:
            result: Their maximum.
        """
        if not numbers:
            return _error("Cannot find maximum of an empty list")
        try:
            largest = max(numbers)
        except TypeError:
            return _error(NOT_ALL_NUMBERS)
        return _result(largest)

    @tool
    def sum_values(self, numbers: list[float]) -> dict[str, Any]:
        """Sum of a list.

        Args:
            numbers: The numbers.

        Returns:
            result: Their sum.
        """
        if not numbers:
            return _error("Cannot calculate sum of an empty list")
        try:
            total = sum(numbers)
        except TypeError:
            return _error(NOT_ALL_NUMBERS)
        return _result(total)
