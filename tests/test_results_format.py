"""interp.result_text.format_result: the reference's rendering (json.dumps for a dict, str for
anything else or when JSON fails), also for dicts holding FrozenJSON constants."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from bfcl_safe.interp.result_text import FrozenJSON, format_result, frozen_json

_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=5),
                  st.sampled_from([object, {1, 2}, b"x", 1j]))
_value = st.recursive(_leaf, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                     st.dictionaries(st.text(max_size=3), inner, max_size=3)),
                      max_leaves=8)


def reference(value):
    if type(value) is str:
        return value
    if type(value) is dict:
        try:
            return json.dumps(value)
        except Exception:  # noqa: BLE001 - the reference's fallback
            return str(value)
    return str(value)


@given(st.dictionaries(st.one_of(st.text(max_size=4), st.integers()), _value, max_size=4))
def test_dicts_render_like_the_reference(value):
    assert format_result(value) == reference(value)


@given(st.dictionaries(st.text(max_size=4), _value, max_size=3),
       st.lists(st.lists(st.one_of(st.floats(), st.integers(), st.text(max_size=3), st.just(object)), max_size=6),
                min_size=1, max_size=3),
       st.data())
def test_frozen_constants_render_as_the_lists_they_stand_for(value, constants, data):
    frozen = {f"c{i}": FrozenJSON(items) for i, items in enumerate(constants)}
    keys = data.draw(st.permutations(list(value) + list(frozen)))
    mixed = {key: frozen[key] if key in frozen else value[key] for key in keys}
    as_lists = {key: list(item) if type(item) is FrozenJSON else item for key, item in mixed.items()}
    assert format_result(mixed) == reference(as_lists)


def test_frozen_json_is_made_once_per_list():
    constant = [1.5, 2.25, float("nan")]
    assert frozen_json(constant) is frozen_json(constant)
    assert frozen_json(constant).text == json.dumps(constant)
    assert frozen_json(list(constant)) is not frozen_json(constant)
