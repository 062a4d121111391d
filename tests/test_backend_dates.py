"""``backends.dates.strptime`` against ``datetime.strptime``: the same datetime, or the
same exception (type and text), on texts near and far from the ISO shapes it reads
itself."""

from __future__ import annotations

from datetime import datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from bfcl_safe.backends.dates import DATE_FORMAT, TIMESTAMP_FORMAT, strptime


def outcome(function, text, fmt):
    try:
        value = function(text, fmt)
    except Exception as exc:  # noqa: BLE001 - the exception is the outcome
        return ("raises", type(exc), str(exc))
    return (type(value), value, value.tzinfo)


digits = st.sampled_from("0123456789")
field = st.one_of(st.text(digits, min_size=1, max_size=5), st.sampled_from(["00", "01", "12", "13", "29", "30",
                                                                           "31", "32", "59", "60", "61", "99",
                                                                           "\u0661\u0662", " 1", "1 ", "+1"]))
separator = st.sampled_from(["-", "-", "-", ":", " ", "/", "T", ""])


@st.composite
def near_iso(draw):
    parts = [draw(field) for _ in range(6)]
    seps = [draw(separator) for _ in range(5)]
    cut = draw(st.integers(3, 6))
    text = parts[0]
    for sep, part in zip(seps[: cut - 1], parts[1:cut]):
        text += sep + part
    return text


affixes = st.sampled_from(["", "", " ", "\n", "\t", "x", "0", "\u00a0", "Z"])
valid_iso = st.builds(lambda y, m, d, h, mi, s: f"{y:04d}-{m:02d}-{d:02d} {h:02d}:{mi:02d}:{s:02d}",
                      st.integers(1000, 9999), st.integers(1, 12), st.integers(1, 28), st.integers(0, 23),
                      st.integers(0, 59), st.integers(0, 59))
wrapped = st.builds(lambda before, text, cut, after: before + text[:cut] + after, affixes, valid_iso,
                    st.sampled_from([10, 19]), affixes)


@settings(max_examples=3000, deadline=None)
@given(st.one_of(near_iso(), wrapped, st.text(max_size=20), st.builds(lambda y, m, d: f"{y:04d}-{m:02d}-{d:02d}",
                                                             st.integers(0, 9999), st.integers(0, 13),
                                                             st.integers(0, 32))),
       st.sampled_from([DATE_FORMAT, TIMESTAMP_FORMAT, "%d/%m/%Y"]))
def test_same_as_strptime(text, fmt):
    assert outcome(strptime, text, fmt) == outcome(datetime.strptime, text, fmt)


@settings(max_examples=1000, deadline=None)
@given(st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31)))
def test_valid_timestamps(moment):
    moment = moment.replace(microsecond=0)
    for fmt in (DATE_FORMAT, TIMESTAMP_FORMAT):
        text = moment.strftime(fmt) if moment.year >= 1000 else None
        if text is not None:
            assert outcome(strptime, text, fmt) == outcome(datetime.strptime, text, fmt)


def test_values_that_are_not_text():
    for value in (None, 20240105, b"2024-01-05", ["2024-01-05"]):
        assert outcome(strptime, value, DATE_FORMAT) == outcome(datetime.strptime, value, DATE_FORMAT)
