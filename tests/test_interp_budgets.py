"""Budgets and depth in the interpreter: sizes checked before computing, BudgetExceeded
never turned into a result string, deep nesting refused cleanly on every front-end.

(What the reference would compute quickly must agree with it: tests/test_builtins.py.
Hostile payloads that try to escape: tests/test_breakout.py.)
"""

from __future__ import annotations

from typing import Any

import pytest

from bfcl_safe.interp import MethodTable, RejectedInput, check_depth, fc_call, parse_call, run_call, run_step, tool
from bfcl_safe.interp.budget import Budget
from bfcl_safe.interp.errors import BudgetExceeded
from bfcl_safe.interp.limits import ENTRY_BUDGETS, MAX_COMPUTED_INT_DIGITS, MAX_NESTING_DEPTH


class Box:
    def __init__(self) -> None:
        self.calls: list[Any] = []

    @tool
    def keep(self, value: Any = None) -> Any:
        self.calls.append(value)
        return value

    @tool
    def grow(self) -> None:
        # A backend charging its own budget (as the backends' state-growth budgets do).
        from bfcl_safe.interp.budget import charge

        charge("computed_size", ENTRY_BUDGETS["computed_size"] + 1)


@pytest.fixture
def box() -> Box:
    return Box()


@pytest.fixture
def table(box: Box) -> MethodTable:
    return MethodTable([box])


# ----------------------------------------------------------------------------- checked before computing

REFUSED_BEFORE_COMPUTING = [
    # (id, text, budget) — each would take gigabytes or minutes; refused at once
    ("percent-width", "keep(value='%1900000000d' % 1)", "computed_size"),
    ("percent-width-bytes", "keep(value=b'%1900000000x' % 255)", "computed_size"),
    ("percent-star", "keep(value='%*s' % (1900000000, 'x'))", "computed_size"),
    ("percent-precision-int", "keep(value='%.1900000000d' % 7)", "computed_size"),
    ("percent-precision-float", "keep(value='%.1900000000f' % 7.5)", "computed_size"),
    ("percent-mapping", "keep(value='%(a)1900000000s' % {'a': 1})", "computed_size"),
    ("percent-error-after-the-big-field", "keep(value='%1900000000d %d' % (1, 'x'))", "computed_size"),
    ("percent-extra-argument-after-the-big-field", "keep(value='x%*s' % (1771451321, '', ''))", "computed_size"),
    ("percent-nested-key", "keep(value='%(((a)))1900000000s' % {'((a))': 1})", "computed_size"),
    ("percent-star-precision", "keep(value='%.*f' % (2000000000, 1.5))", "computed_size"),
    ("percent-precision-near-int-max", "keep(value='%.2147483646f' % 1.0)", "computed_size"),
    ("format-width", "keep(value=format('x', '>1900000000'))", "computed_size"),
    ("repeat-string", "keep(value='ab' * 10**9)", "computed_size"),
    ("repeat-bytes", "keep(value=b'ab' * 10**9)", "computed_size"),
    ("repeat-tuple-reversed", "keep(value=10**9 * (1, 2))", "computed_size"),
    ("repeat-nested", "keep(value=[[[0] * 1000] * 1000] * 1000)", "computed_size"),
    ("power", "keep(value=7 ** 10**8)", "computed_int_digits"),
    ("pow-builtin", "keep(value=pow(7, 10**8))", "computed_int_digits"),
    ("shift", "keep(value=1 << 10**8)", "computed_int_digits"),
    ("round-negative", "keep(value=round(10, -10**8))", "computed_int_digits"),
    ("multiply-huge-ints", "keep(value=(10**600000) * (10**600000))", "computed_int_digits"),
    ("divide-huge-ints", "keep(value=(10**900000) // (10**450000 + 1))", "int_work"),
    ("divmod-huge-ints", "keep(value=divmod(10**900000, 10**450000 + 1))", "int_work"),
    ("str-of-shared-lists", "keep(value=str([[1] * 5000] * 5000))", "computed_size"),
    ("sum-of-lists", "keep(value=sum([[1] * 3000] * 3000, []))", "computed_size"),
]


@pytest.mark.parametrize("text, kind", [pytest.param(t, k, id=i) for i, t, k in REFUSED_BEFORE_COMPUTING])
def test_oversized_results_are_refused_before_computing(text: str, kind: str, box: Box, table: MethodTable) -> None:
    with pytest.raises(BudgetExceeded) as info:
        run_call(text, table)
    assert info.value.budget == kind and info.value.spent > info.value.limit
    assert box.calls == []


ALLOWED_NEAR_THE_LIMITS = [
    # (id, text, check on the result) — large but quick: computed, as the reference would
    ("percent-width-a-million", "keep(value=len('%1000000d' % 1))", "1000000"),
    ("repeat-five-million", "keep(value=len('ab' * 2500000))", "5000000"),
    ("power-ninety-thousand-digits", "keep(value=len(str(10 ** 4000)))", "4001"),
    ("power-past-the-backends-limit", "keep(value=2 ** 332193 % 7)", "1"),
    ("int-limit-of-cpython", "keep(value=str(10 ** 5000))",
     "Error during execution: Exceeds the limit (4300 digits) for integer string conversion; "
     "use sys.set_int_max_str_digits() to increase the limit"),
    ("percent-string-precision-truncates", "keep(value='%.1900000000s' % 'abc')", "abc"),
    ("percent-wrong-type-fails-first", "keep(value='%1900000000d' % 'x')",
     "Error during execution: %d format: a real number is required, not str"),
    ("percent-width-too-big", "keep(value='%99999999999999999999d' % 1)", "Error during execution: width too big"),
    ("percent-error-before-the-big-field", "keep(value='%d %1900000000d' % ('x', 1))",
     "Error during execution: %d format: a real number is required, not str"),
    ("percent-incomplete-after-width", "keep(value='%1900000000' % 1)", "Error during execution: incomplete format"),
]


@pytest.mark.parametrize("text, expected", [pytest.param(t, e, id=i) for i, t, e in ALLOWED_NEAR_THE_LIMITS])
def test_large_but_quick_results_are_computed(text: str, expected: str, table: MethodTable) -> None:
    with Budget().active():
        assert run_call(text, table) == expected


def test_one_int_past_the_digit_limit_is_refused_alone() -> None:
    with pytest.raises(BudgetExceeded) as info:
        run_call(f"keep(value=10 ** {MAX_COMPUTED_INT_DIGITS + 10})", MethodTable([Box()]))
    assert info.value.limit == MAX_COMPUTED_INT_DIGITS


def test_the_entry_budget_sums_every_call_of_the_entry(table: MethodTable) -> None:
    budget = Budget({**ENTRY_BUDGETS, "computed_size": 3_000_000})
    with budget.active():
        assert run_call("keep(value=len('x' * 1000000))", table) == "1000000"
        assert run_call("keep(value=len('x' * 1000000))", table) == "1000000"
        with pytest.raises(BudgetExceeded):
            run_step(["keep(value=len('x' * 1000000))"], table)
    assert budget.spent["computed_size"] <= 3_000_000


# ----------------------------------------------------------------------------- never a result string

def test_budget_exceeded_in_a_tool_propagates_through_every_entry_point(table: MethodTable) -> None:
    with Budget().active():
        for call in ["grow()", "keep(value=grow())", "len(grow())", "keep(value=[grow()])", "keep(value=-grow())"]:
            with pytest.raises(BudgetExceeded):
                run_call(call, table)
            with pytest.raises(BudgetExceeded):
                run_step([call], table)
        with pytest.raises(BudgetExceeded):
            run_call(fc_call("grow", {}), table)


def test_a_step_stops_at_the_budget(box: Box, table: MethodTable) -> None:
    with pytest.raises(BudgetExceeded):
        run_step(["keep(value=1)", "keep(value='x' * 10**10)", "keep(value=2)"], table)
    assert box.calls == [1]  # the call after it never ran


# ----------------------------------------------------------------------------- deep nesting

def _nested(depth: int, kind: str = "list") -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"k": value} if kind == "dict" else [value]
    return value


@pytest.mark.parametrize("kind", ["list", "dict"])
@pytest.mark.parametrize("depth", [MAX_NESTING_DEPTH + 1, 5_000, 200_000])
def test_deep_fc_arguments_are_refused_without_recursion(kind: str, depth: int, table: MethodTable) -> None:
    value = _nested(depth, kind)
    with pytest.raises(RejectedInput, match=r"nesting deeper than"):
        check_depth(value)
    for arguments in ({"value": value}, {"value b": value}):  # built directly / rendered as text
        call = fc_call("keep", arguments)
        assert isinstance(call, RejectedInput) and "nesting deeper than" in str(call)
        assert run_call(call, table) == f"Error during execution: {call}"


def test_check_depth_accepts_what_the_interpreter_accepts() -> None:
    check_depth(_nested(MAX_NESTING_DEPTH - 1))
    check_depth({"a": [1, {"b": (2, {3})}]})
    shared: list = [1]
    check_depth([shared] * 10_000)  # wide and shared, not deep


@pytest.mark.parametrize("text", [
    pytest.param("keep(value=" + "[" * 5000 + "]" * 5000 + ")", id="brackets"),
    pytest.param("keep(value=" + "-" * 5000 + "1)", id="unary-chain"),
    pytest.param("keep(value=" + "1+" * 5000 + "1)", id="binary-chain"),
    pytest.param("keep(value=" + "len(" * 3000 + "'x'" + ")" * 3000 + ")", id="builtin-chain"),
    pytest.param("keep(value=" + "(" * 5000 + "1" + ")" * 5000 + ")", id="parentheses"),
])
def test_deep_text_is_refused_cleanly(text: str, box: Box, table: MethodTable) -> None:
    with pytest.raises(RejectedInput, match=r"nesting deeper than"):
        parse_call(text)
    assert run_call(text, table).startswith("Error during execution: ")
    assert box.calls == []


# ----------------------------------------------------------------------------- unreachable formatting

@pytest.mark.parametrize("text, construct", [
    pytest.param("keep(value='{:1900000000}'.format(1))", "attribute access", id="str-format-method"),
    pytest.param("keep(value=f'{1:1900000000}')", "f-string", id="f-string-spec"),
])
def test_other_formatting_is_not_reachable(text: str, construct: str) -> None:
    with pytest.raises(RejectedInput, match=construct):
        parse_call(text)
