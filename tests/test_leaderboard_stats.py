"""The leaderboard's latency statistics and number collection against their oracles.

``exact_mean`` and ``exact_stdev`` compute with integers what the reference computes with
``statistics.mean`` / ``statistics.stdev`` (exact fractions): the same value, of the same
type, or the same exception, on every input. ``_numbers`` keeps the reference's
``record_cost_latency`` rule with C-level checks: same numbers, same order, as the plain
rule written out here."""

from __future__ import annotations

import math
import statistics

from hypothesis import given, settings
from hypothesis import strategies as st

from bfcl_safe.checker.leaderboard import _numbers, _sqrt_of_fraction, exact_mean, exact_stdev

finite = st.floats(allow_nan=False, allow_infinity=False)
latency_like = st.floats(min_value=0.0, max_value=1e4, allow_nan=False)
numbers = st.one_of(finite, st.integers(min_value=-10**30, max_value=10**30), latency_like,
                    st.floats(min_value=-1e-300, max_value=1e-300), st.sampled_from([5e-324, 1.5, 2, 0.1]))
hostile = st.one_of(numbers, st.booleans(), st.floats(), st.just(math.inf), st.just(math.nan))


def outcome(function, values):
    try:
        value = function(values)
    except Exception as exc:  # noqa: BLE001 - the exception's type is the outcome
        return ("raises", type(exc))
    if isinstance(value, float) and math.isnan(value):
        return (float, "nan")
    return (type(value), repr(value))


@settings(max_examples=1500, deadline=None)
@given(st.lists(numbers, max_size=40))
def test_mean_and_stdev_match_statistics(values):
    assert outcome(exact_mean, values) == outcome(statistics.mean, values)
    assert outcome(exact_stdev, values) == outcome(statistics.stdev, values)


@settings(max_examples=800, deadline=None)
@given(st.lists(hostile, max_size=12))
def test_other_values_go_to_statistics(values):
    assert outcome(exact_mean, values) == outcome(statistics.mean, values)
    assert outcome(exact_stdev, values) == outcome(statistics.stdev, values)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.integers(min_value=-10**6, max_value=10**6), min_size=1, max_size=30))
def test_whole_means_stay_ints(values):
    assert outcome(exact_mean, values) == outcome(statistics.mean, values)


def test_large_values_overflow_alike():
    values = [1.7e308, -1.7e308, 1.7e308]
    assert outcome(exact_stdev, values) == outcome(statistics.stdev, values)
    values = [10**400, 10**400 + 1]
    assert outcome(exact_mean, values) == outcome(statistics.mean, values)


@settings(max_examples=1500, deadline=None)
@given(st.integers(min_value=0, max_value=10**60), st.integers(min_value=1, max_value=10**60))
def test_sqrt_of_fraction_is_correctly_rounded(numerator, denominator):
    root = _sqrt_of_fraction(numerator, denominator)
    # correctly rounded: the exact root lies within half an ulp, checked with integers
    from fractions import Fraction
    exact_square = Fraction(numerator, denominator)
    below, above = math.nextafter(root, 0.0), math.nextafter(root, math.inf)
    low = (Fraction(below) + Fraction(root)) / 2
    high = (Fraction(root) + Fraction(above)) / 2
    assert low * low <= exact_square <= high * high


def plain_rule(value, out):
    if isinstance(value, list) and all(isinstance(item, list) for item in value):
        out.extend([item for inner in value for item in inner if isinstance(item, (int, float)) and item != 0])
    elif isinstance(value, (int, float)) and value != 0:
        out.append(value)


class Floaty(float):
    pass


class Listy(list):
    pass


leaf = st.one_of(numbers, st.booleans(), st.none(), st.text(max_size=2), st.just(0), st.just(0.0), st.just(-0.0),
                 st.builds(Floaty, finite), st.just(math.nan))
values = st.recursive(leaf, lambda inner: st.one_of(st.lists(inner, max_size=5),
                                                     st.builds(Listy, st.lists(inner, max_size=3)),
                                                     st.dictionaries(st.text(max_size=2), inner, max_size=2)),
                      max_leaves=20)


@settings(max_examples=1500, deadline=None)
@given(values)
def test_numbers_keep_the_plain_rule(value):
    ours, theirs = [], []
    _numbers(value, ours)
    plain_rule(value, theirs)
    assert [(type(x), repr(x)) for x in ours] == [(type(x), repr(x)) for x in theirs]


json_leaf = st.one_of(numbers, st.booleans(), st.none(), st.text(max_size=2), st.just(0), st.just(0.0),
                      st.just(10 ** 400), st.just(1e308), st.just(-1e308), st.just(math.inf), st.just(-math.inf),
                      st.just(math.nan))
json_values = st.recursive(json_leaf, lambda inner: st.one_of(st.lists(inner, max_size=5),
                                                               st.dictionaries(st.text(max_size=2), inner,
                                                                               max_size=2)),
                           max_leaves=20)


@settings(max_examples=2000, deadline=None)
@given(json_values)
def test_json_numbers_keep_the_plain_rule(value):
    from bfcl_safe.checker.leaderboard import _json_numbers

    theirs: list = []
    plain_rule(value, theirs)
    ours = _json_numbers(value)
    assert [(type(x), repr(x)) for x in ours] == [(type(x), repr(x)) for x in theirs]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.lists(json_leaf, max_size=6), max_size=5))
def test_json_numbers_on_lists_of_lists(value):
    from bfcl_safe.checker.leaderboard import _json_numbers

    theirs: list = []
    plain_rule(value, theirs)
    assert [(type(x), repr(x)) for x in _json_numbers(value)] == [(type(x), repr(x)) for x in theirs]
