"""Property tests of generate's decoding: for any reply, the call texts and the
decoding-error text that generate logs are the reference's (FC: ``convert_to_function_call``
on JSON arguments; prompting: ``default_decode_execute_prompting`` on call text built from
names, literals, lists, dicts and nested calls, then cut short or garbled with punctuation).

Garbling inserts no letters, so the only names in a text are the generator's: the
reference's ``eval`` of an arithmetic argument (it evaluates ``1+2``) never meets a name
of ours that does anything. ``ci`` profile: 100 examples each; ``fuzz``: 5,000.
"""

from __future__ import annotations

import copy
import json

from hypothesis import given
from hypothesis import strategies as st

from tests.generate_support import logged_decoding
from tests.refenv import import_reference

NAMES = st.sampled_from(["ls", "cd", "mv", "echo", "get_stock_info", "a.b", "x_1", "True", "None"])
KEYS = st.sampled_from(["a", "folder", "content", "x", "_y", "b2"])
SCALARS = st.one_of(
    st.integers(-10**6, 10**6), st.floats(allow_nan=True, allow_infinity=True, width=32), st.booleans(),
    st.none(), st.text(max_size=12),
)


def _values(depth: int = 2):
    if depth == 0:
        return SCALARS
    inner = _values(depth - 1)
    return st.one_of(SCALARS, st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3))


@st.composite
def call_text(draw, depth: int = 1) -> str:
    name = draw(NAMES)
    parts = []
    for key in draw(st.lists(KEYS, max_size=3)):
        kind = draw(st.sampled_from(["value", "value", "bare", "call"] if depth else ["value", "bare"]))
        if kind == "value":
            parts.append(f"{key}={draw(_values())!r}")
        elif kind == "bare":
            parts.append(f"{key}={draw(NAMES)}")
        else:
            parts.append(f"{key}={draw(call_text(depth - 1))}")
    if draw(st.booleans()):
        parts.insert(0, repr(draw(SCALARS)))  # a positional argument
    return f"{name}({', '.join(parts)})"


@st.composite
def prompting_reply(draw) -> str:
    calls = draw(st.lists(call_text(), min_size=0, max_size=3))
    text = draw(st.sampled_from(["[{}]", "{}", "```\n[{}]\n```", "'[{}]'"])).format(", ".join(calls))
    for _ in range(draw(st.integers(0, 2))):
        where = draw(st.integers(0, len(text)))
        if draw(st.booleans()):
            text = text[:where]
        else:
            text = text[:where] + draw(st.sampled_from(list("[](),=' \"+-.:{}0123456789\n`"))) + text[where:]
    return text


@st.composite
def fc_reply(draw):
    calls = []
    for _ in range(draw(st.integers(0, 3))):
        arguments = draw(st.dictionaries(KEYS, _values(), max_size=3))
        text = json.dumps(arguments)
        if draw(st.integers(0, 4)) == 0:
            text = text[: draw(st.integers(0, len(text)))]
        calls.append({draw(NAMES): text})
    return draw(st.sampled_from([calls, calls, calls[:1] and calls[0], json.dumps(calls), ""]))


def _reference(function, step):
    try:
        return ("ok", function(copy.deepcopy(step)))
    except Exception as exc:  # noqa: BLE001 - its error text is what generate must log
        return ("error", str(exc))


def _ours(step, mode):
    return logged_decoding(step, mode)


@given(prompting_reply())
def test_prompting_replies_decode_as_the_reference_decodes_them(step):
    utils = import_reference("model_handler.utils")
    assert _ours(step, "prompting") == _reference(utils.default_decode_execute_prompting, step)


@given(fc_reply())
def test_fc_replies_decode_as_the_reference_decodes_them(step):
    utils = import_reference("model_handler.utils")
    assert _ours(step, "fc") == _reference(utils.convert_to_function_call, step)
