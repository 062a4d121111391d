"""The fast paths of backends/growth.py (store, measure) and Budget.charge_both give
exactly what the plain implementations gave: the same results, the same exception (type,
budget, limit, spent, message) and the same counts left in the budget, on generated
values — nested lists/dicts/tuples/sets of str/int/float/bool/None, shared and cyclic
parts, subclasses, huge ints — with and without an active budget, with small limits so
that the budgets run out. The oracle below is the code as it was before the fast paths."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bfcl_safe.backends import growth
from bfcl_safe.checker.decoders.base import _Recorder
from bfcl_safe.interp import budget as _budget
from bfcl_safe.interp import limits
from bfcl_safe.interp.budget import Budget
from bfcl_safe.interp.errors import BudgetExceeded

STATE_CHARS, STATE_ITEMS, STATE_DEPTH, STATE_INT_DIGITS = (
    growth.STATE_CHARS, growth.STATE_ITEMS, growth.STATE_DEPTH, growth.STATE_INT_DIGITS)
_MAX_INT_BITS, _LOG10_2, _CONTAINERS = growth._MAX_INT_BITS, growth._LOG10_2, growth._CONTAINERS


# ------------------------------------------------------------------ the oracle (as it was)
def ref_charge(budget: Budget, kind: str, amount: int = 1) -> None:
    spent = budget.spent.get(kind, 0) + amount
    limit = budget.limits[kind]
    if spent > limit:
        raise BudgetExceeded(kind, limit, spent)
    budget.spent[kind] = spent


def ref_limit_of(kind: str) -> int:
    active = _budget.current()
    if active is not None and kind in active.limits:
        return active.limits[kind]
    return limits.ENTRY_BUDGETS[kind]


def ref_allowance(active, kind):
    if active is None:
        return limits.ENTRY_BUDGETS[kind], 0
    return active.limits[kind], active.spent.get(kind, 0)


def ref_int_digits(value: int) -> int:
    bits = abs(value).bit_length()
    if bits > _MAX_INT_BITS:
        raise BudgetExceeded(STATE_INT_DIGITS, ref_limit_of(STATE_INT_DIGITS), int(bits * _LOG10_2) + 1)
    return max(1, int(bits * _LOG10_2) + 1)


def ref_measure(value: Any, inside: tuple = (), spread: bool = False) -> tuple[int, int]:
    forbidden = {id(container) for container in inside} if inside else ()
    on_path: set[int] = set()
    active = _budget.current()
    char_limit, char_spent = ref_allowance(active, STATE_CHARS)
    item_limit, item_spent = ref_allowance(active, STATE_ITEMS)
    char_cap, item_cap = char_limit - char_spent, item_limit - item_spent
    depth_limit = ref_limit_of(STATE_DEPTH)
    chars = items = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if depth < 0:
            on_path.discard(id(node))
            continue
        kind = type(node)
        if kind is str or kind is bytes or kind is bytearray:
            chars += len(node)
        elif isinstance(node, bool) or node is None or kind is float:
            chars += 1
        elif isinstance(node, int):
            chars += ref_int_digits(node)
        elif isinstance(node, _CONTAINERS):
            if id(node) in on_path or (id(node) in forbidden and (depth or not spread)):
                items += 1
                continue
            if depth >= depth_limit:
                raise BudgetExceeded(STATE_DEPTH, depth_limit, depth + 1)
            items += len(node)
            if items > item_cap:
                raise BudgetExceeded(STATE_ITEMS, item_limit, item_spent + items)
            on_path.add(id(node))
            stack.append((node, -1))
            if isinstance(node, dict):
                for key, item in node.items():
                    stack.append((key, depth + 1))
                    stack.append((item, depth + 1))
            else:
                stack.extend((item, depth + 1) for item in node)
        else:
            chars += 1
        if chars > char_cap:
            raise BudgetExceeded(STATE_CHARS, char_limit, char_spent + chars)
    return chars, items


def ref_store(*values: Any, records: int = 1, inside: tuple = (), spread: bool = False) -> None:
    active = _budget.current()
    limit, spent = ref_allowance(active, STATE_CHARS)
    chars = items = 0
    for value in values:
        kind = type(value)
        if kind is str:
            size = len(value)
        elif kind is int:
            size = ref_int_digits(value)
        elif kind is float or kind is bool or value is None:
            size = 1
        else:
            more_chars, more_items = ref_measure(value, inside, spread)
            chars += more_chars
            items += more_items
            continue
        if size > limit - spent:
            raise BudgetExceeded(STATE_CHARS, limit, spent + size)
        chars += size
    if active is not None:
        active.charge(STATE_CHARS, chars)
        active.charge(STATE_ITEMS, items + records)


# ------------------------------------------------------------------------------ values
class Text(str):
    pass


class Items(list):
    pass


class Table(dict):
    pass


class Shrunk(list):
    """A list subclass whose len() lies."""

    def __len__(self) -> int:
        return 0


class Sized:
    """Not a container, with an odd __len__ (never called by the measure)."""

    def __len__(self) -> int:
        raise RuntimeError("len called")


scalars = st.one_of(
    st.text(max_size=12),
    st.text(max_size=3).map(Text),
    st.integers(min_value=-10**30, max_value=10**30),
    st.integers(min_value=14_000, max_value=15_000).map(lambda bits: 1 << bits),  # around MAX_INT_DIGITS
    st.floats(allow_nan=True),
    st.booleans(),
    st.none(),
    st.binary(max_size=5),
    st.just(Sized()),
)

hashables = st.one_of(st.text(max_size=6), st.integers(-99, 99), st.booleans(), st.none(),
                      st.text(max_size=3).map(Text), st.frozensets(st.text(max_size=3), max_size=3))


def _containers(children):
    return st.one_of(
        st.lists(children, max_size=5),
        st.lists(children, max_size=4).map(tuple),
        st.dictionaries(hashables, children, max_size=4),
        st.sets(hashables, max_size=4),
        st.frozensets(hashables, max_size=4),
        st.lists(children, max_size=3).map(Items),
        st.lists(children, max_size=3).map(Shrunk),
        st.dictionaries(st.text(max_size=3), children, max_size=3).map(Table),
    )


trees = st.recursive(scalars, _containers, max_leaves=25)
#: The common flat values (the fast path's), drawn often on their own.
flat = st.one_of(
    st.lists(st.text(max_size=8), max_size=6),
    st.lists(st.text(max_size=8), max_size=6).map(tuple),
    st.dictionaries(st.text(max_size=6), st.text(max_size=8), max_size=5),
    st.sets(st.text(max_size=6), max_size=5),
    st.frozensets(st.text(max_size=6), max_size=5),
    st.lists(st.one_of(st.text(max_size=4), st.text(max_size=4).map(Text), st.integers(0, 9)), max_size=4),
)


def _mutable_parts(value: Any, found: list, seen: set) -> list:
    """Lists and dicts inside ``value`` (itself included), each once."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, (list, dict, tuple, set, frozenset)) and id(node) not in seen:
            seen.add(id(node))
            if isinstance(node, (list, dict)):
                found.append(node)
            stack.extend(node.values() if isinstance(node, dict) else node)
    return found


@st.composite
def values(draw) -> Any:
    """A tree or a flat value; then some of its lists and dicts get references to parts
    of it (sharing, cycles) or deep chains of lists."""
    value = draw(st.one_of(flat, trees))
    parts = _mutable_parts(value, [], set())
    for _ in range(draw(st.integers(0, 3)) if parts else 0):
        target = draw(st.sampled_from(parts))
        what = draw(st.sampled_from(["cycle", "share", "deep"]))
        if what == "deep":
            chain: list = [draw(st.text(max_size=3))]
            for _ in range(draw(st.integers(1, 160))):
                chain = [chain]
            extra = chain
        else:
            extra = target if what == "cycle" else draw(st.sampled_from(parts))
        if isinstance(target, list):
            target.append(extra)
        else:
            target[draw(st.text(max_size=4))] = extra
    return value


@st.composite
def budgets(draw) -> Budget | None:
    """None (no active budget), or a budget with small or default limits, some spent."""
    if draw(st.booleans()):
        return None
    chosen = {}
    for kind, small in ((STATE_CHARS, st.integers(-2, 60)), (STATE_ITEMS, st.integers(-2, 30)),
                        (STATE_DEPTH, st.integers(-1, 8))):
        choice = draw(st.sampled_from(["default", "small", "small", "missing"]))
        if choice == "default":
            chosen[kind] = limits.ENTRY_BUDGETS[kind]
        elif choice == "small":
            chosen[kind] = draw(small)
    for kind in (STATE_INT_DIGITS, "computed_size"):
        if draw(st.booleans()):
            chosen[kind] = limits.ENTRY_BUDGETS[kind]
    budget = Budget(chosen)
    for kind in draw(st.lists(st.sampled_from([STATE_CHARS, STATE_ITEMS, "computed_size"]), max_size=3)):
        budget.spent[kind] = draw(st.integers(0, 40))
    return budget


def _copy(budget: Budget | None) -> Budget | None:
    if budget is None:
        return None
    twin = Budget(budget.limits)
    twin.spent.update(budget.spent)
    return twin


def _outcome(call) -> tuple:
    try:
        return ("returned", call())
    except BudgetExceeded as exc:
        return ("raised", type(exc), exc.args, exc.budget, exc.limit, exc.spent, str(exc))
    except Exception as exc:  # KeyError of a missing limit, ...
        return ("raised", type(exc), exc.args, str(exc))


def _run(function, budget: Budget | None, *args, **kwargs) -> tuple:
    """Outcome of ``function(*args, **kwargs)`` under ``budget``, and what it left spent
    (in order: a new key is visible in the budget's repr)."""
    if budget is None:
        return _outcome(lambda: function(*args, **kwargs)), None
    with budget.active():
        result = _outcome(lambda: function(*args, **kwargs))
    return result, list(budget.spent.items())


def _inside(draw, value: Any) -> tuple:
    parts = _mutable_parts(value, [], set())
    choice = draw(st.sampled_from(["none", "fresh", "part", "value"]))
    if choice == "fresh" or (choice == "part" and not parts):
        return ([],)
    if choice == "part":
        return tuple(draw(st.lists(st.sampled_from(parts), min_size=1, max_size=2)))
    if choice == "value":
        return (value,)
    return ()


SETTINGS = settings(max_examples=600, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@SETTINGS
@given(st.data())
def test_measure_matches_the_plain_walk(data) -> None:
    value = data.draw(values())
    inside = _inside(data.draw, value)
    spread = data.draw(st.booleans())
    budget = data.draw(budgets())
    twin = _copy(budget)  # (before the oracle spends from budget)
    expected = _run(ref_measure, budget, value, inside, spread)
    assert _run(growth.measure, twin, value, inside, spread) == expected


@SETTINGS
@given(st.data())
def test_store_matches_the_plain_store(data) -> None:
    stored = data.draw(st.lists(st.one_of(scalars, values()), max_size=4))
    context = stored[0] if stored and data.draw(st.booleans()) else []
    inside = _inside(data.draw, context)
    spread = data.draw(st.booleans())
    records = data.draw(st.integers(0, 8))
    budget = data.draw(budgets())
    twin = _copy(budget)  # (before the oracle spends from budget)
    expected = _run(ref_store, budget, *stored, records=records, inside=inside, spread=spread)
    assert _run(growth.store, twin, *stored, records=records, inside=inside,
                spread=spread) == expected


@SETTINGS
@given(st.lists(st.text(max_size=30), max_size=4), st.data())
def test_store_of_strs_matches_near_the_limits(strs, data) -> None:
    """The common call, with limits around what it needs: every boundary of both charges."""
    need = sum(map(len, strs))
    budget = Budget({STATE_CHARS: data.draw(st.integers(max(0, need - 5), need + 5)),
                     STATE_ITEMS: data.draw(st.integers(0, 6)), STATE_DEPTH: 5})
    budget.spent[STATE_CHARS] = data.draw(st.integers(0, 3))
    records = data.draw(st.integers(0, 5))
    twin = _copy(budget)  # (before the oracle spends from budget)
    expected = _run(ref_store, budget, *strs, records=records)
    assert _run(growth.store, twin, *strs, records=records) == expected


@SETTINGS
@given(st.one_of(st.lists(st.text(max_size=9), max_size=6), st.dictionaries(st.text(max_size=5), st.text(max_size=9),
                                                                             max_size=5)),
       st.data())
def test_flat_measure_matches_near_the_limits(value, data) -> None:
    need = sum(map(len, value)) + (sum(map(len, value.values())) if isinstance(value, dict) else 0)
    budget = Budget({STATE_CHARS: data.draw(st.integers(need - 3, need + 3)),
                     STATE_ITEMS: data.draw(st.integers(len(value) - 2, len(value) + 2)),
                     STATE_DEPTH: data.draw(st.integers(-1, 2))})
    inside = data.draw(st.sampled_from([(), (value,), ([],)]))
    spread = data.draw(st.booleans())
    twin = _copy(budget)  # (before the oracle spends from budget)
    expected = _run(ref_measure, budget, value, inside, spread)
    assert _run(growth.measure, twin, value, inside, spread) == expected


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from([STATE_CHARS, STATE_ITEMS, "computed_size", "absent"]),
                          st.integers(-5, 40)), min_size=2, max_size=2),
       st.dictionaries(st.sampled_from([STATE_CHARS, STATE_ITEMS, "computed_size"]), st.integers(0, 30)),
       st.dictionaries(st.sampled_from([STATE_CHARS, STATE_ITEMS, "computed_size"]), st.integers(0, 30)))
def test_charge_both_is_two_charges(charges, spent, limits_) -> None:
    (kind, amount), (other, other_amount) = charges
    first, second = Budget(limits_), Budget(limits_)
    first.spent.update(spent)
    second.spent.update(spent)

    def twice():
        ref_charge(first, kind, amount)
        ref_charge(first, other, other_amount)

    assert _outcome(lambda: second.charge_both(kind, amount, other, other_amount)) == _outcome(twice)
    assert list(second.spent.items()) == list(first.spent.items())


def test_charge_both_goes_through_an_overridden_charge() -> None:
    """The decoders' recorder overrides charge: charge_both must pass both charges on."""
    outer = Budget()
    recorder = _Recorder(outer)
    recorder.charge_both(STATE_CHARS, 3, STATE_ITEMS, 2)
    assert recorder.record == {STATE_CHARS: 3, STATE_ITEMS: 2}
    assert outer.spent == {STATE_CHARS: 3, STATE_ITEMS: 2}
    with recorder.active():
        growth.store("abcd", ["x", "yz"], records=1)
    assert recorder.record == {STATE_CHARS: 10, STATE_ITEMS: 5}
    assert outer.spent == {STATE_CHARS: 10, STATE_ITEMS: 5}


def test_current_is_the_active_budget() -> None:
    assert _budget.current() is None
    budget = Budget()
    with budget.active():
        assert _budget.current() is budget
        inner = Budget()
        with inner.active():
            assert _budget.current() is inner
        assert _budget.current() is budget
    assert _budget.current() is None


@pytest.mark.parametrize("spread", [False, True])
def test_a_flat_list_stored_into_itself(spread) -> None:
    """The cycle test of the fast path: a list extended with itself, or stored in itself."""
    tweets = ["a", "bc"]
    for function in (ref_measure, growth.measure):
        with Budget().active():
            results = [function(tweets, (tweets,), spread), function(tweets, ([], tweets), spread)]
        assert results == ([(3, 2)] * 2 if spread else [(0, 1)] * 2)
