"""backends.seeded.LazyRandom draws what random.Random(seed) draws, and fails where it fails."""

from __future__ import annotations

import copy
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bfcl_safe.backends.seeded import LazyRandom


@given(st.one_of(st.integers(), st.text(max_size=5), st.floats(allow_nan=False), st.booleans()))  # (None: from entropy)
def test_same_draws_as_random(seed):
    ours, theirs = LazyRandom(seed), random.Random(seed)
    assert [ours.randint(0, 10**9) for _ in range(3)] == [theirs.randint(0, 10**9) for _ in range(3)]
    assert ours.uniform(-10.0, 40.0) == theirs.uniform(-10.0, 40.0)


def test_copies_draw_independently_from_the_same_point():
    ours = LazyRandom(7)
    ours.randint(0, 9)
    twin = copy.deepcopy(ours)
    assert [twin.random() for _ in range(3)] == [ours.random() for _ in range(3)]


@pytest.mark.parametrize("seed", [[1], {"a": 1}, {1}])
def test_a_bad_seed_fails_when_made_like_random(seed):
    with pytest.raises(TypeError) as theirs:
        random.Random(seed)
    with pytest.raises(TypeError) as ours:
        LazyRandom(seed)
    assert str(ours.value) == str(theirs.value)
