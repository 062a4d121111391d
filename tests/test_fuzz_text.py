"""Fuzzing the text front-end and the prompting decoder with arbitrary text and near-misses.

Properties: ``interp.parse_call`` only returns a ``CallSpec`` or raises
``RejectedInput``; ``checker.decoders.decode_step`` only returns a list or raises
``DecodeError``; ``interp.run_call`` only returns a string; none of them hangs
(each example has a deadline). Near-misses are valid call texts with one to three
mutations (characters dropped, inserted or duplicated; brackets, quotes, operators,
keywords, escapes, unicode and NUL bytes spliced in), which reach far deeper into
both parsers than random text does.

The ``ci`` profile (default) keeps this quick; ``BFCL_SAFE_HYPOTHESIS_PROFILE=fuzz`` runs long.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bfcl_safe.checker.decoders import DECODERS, DecodeError, decode_step
from bfcl_safe.interp.errors import BudgetExceeded
from bfcl_safe.interp import CallSpec, MethodTable, RejectedInput, fc_call, parse_call, run_call, tool

#: Per-example deadline: parsing one short text must never take this long.
DEADLINE = settings(deadline=2000, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


class Desk:
    """A small table for run_call: tools with the argument shapes the texts use."""

    @tool
    def ls(self, a: Any = None) -> dict:
        return {"a": repr(a)[:50]}

    @tool
    def cd(self, folder: Any = None) -> Any:
        return folder

    @tool
    def echo(self, content: Any = "", file_name: Any = None) -> Any:
        return content

    @tool
    def add(self, a: Any = 0, b: Any = 0) -> Any:
        return a + b  # may raise: a tool's exception is a result string too


# ----------------------------------------------------------------------------- grammar

NAMES = ("ls", "cd", "echo", "add", "mv", "open", "exec", "_load_scenario", "__init__", "x", "ｅｃｈｏ", "kill")
KEYS = ("a", "b", "folder", "content", "file_name", "lambda", "__class__", "x")

identifiers = st.sampled_from(NAMES)
strings = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
string_literals = st.one_of(
    strings.map(repr),
    strings.map(lambda s: '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'),
    st.sampled_from(("'ls(a=1)'", "'''x\ny'''", "r'\\d'", "b'\\xff'", "'\\N{BULLET}'", "'a' 'b'", "u'x'",
                     "'\\x41\\u0042'", "f'{1}'", "'kill()'")),
)
numbers = st.one_of(
    st.integers(-10**6, 10**6).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(("1e9", "0x1F", "1_000", "1j", "-1.5e-3", "00", "9" * 50, ".5", "1.", "True", "None")),
)


@st.composite
def values(draw: Any, depth: int = 0) -> str:
    """A Python expression text for an argument value: mostly literals and containers."""
    leaves = st.one_of(string_literals, numbers, identifiers)
    if depth >= 3:
        return draw(leaves)
    inner = values(depth + 1)
    choice = draw(st.integers(0, 7))
    if choice <= 2:
        return draw(leaves)
    if choice == 3:
        return "[" + ", ".join(draw(st.lists(inner, max_size=3))) + "]"
    if choice == 4:
        items = draw(st.lists(inner, max_size=3))
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if choice == 5:
        pairs = draw(st.lists(st.tuples(inner, inner), max_size=3))
        return "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"
    if choice == 6:
        return draw(calls(depth + 1))
    return "-" + draw(numbers)


@st.composite
def calls(draw: Any, depth: int = 0) -> str:
    """A call text: ``name(positional..., key=value...)``."""
    name = draw(identifiers)
    positional = draw(st.lists(values(depth + 1), max_size=2))
    keys = draw(st.lists(st.sampled_from(KEYS), max_size=3, unique=True))
    keywords = [f"{key}={draw(values(depth + 1))}" for key in keys]
    return f"{name}({', '.join(positional + keywords)})"


@st.composite
def steps(draw: Any) -> str:
    """A prompting step: one call or a bracketed list of calls, sometimes fenced."""
    items = draw(st.lists(calls(), min_size=1, max_size=3))
    text = draw(st.sampled_from(("[{}]", "{}", "```\n[{}]\n```", "'[{}]'"))).format(", ".join(items))
    return text


SPLICES = (
    "(", ")", "[", "]", "{", "}", ",", ":", "=", "'", '"', "'''", "\\", "\\N{", "\\x", "\\u12", "#", "\n",
    "+", "-", "*", "**", "/", "//", "%", "@", "<<", ">>", "|", "&", "^", "~", "<", "==", "!=", ":=", ".", "...",
    " lambda: ", " if ", " else ", " for x in ", " not ", " and ", " or ", " await ", " yield ", " import ",
    "__import__('os')", ".__class__", "__builtins__", "*", "**", " * ", "f'", "rb'", "9**9**9**9",
    "\x00", "\u200b", "\u202e", "ｅ", "é", "\ufeff", "\t", "\r", "ß", "𝔩𝔰", "١",
)


@st.composite
def near_misses(draw: Any, base: st.SearchStrategy[str]) -> str:
    """A valid text with one to three mutations."""
    text = draw(base)
    for _ in range(draw(st.integers(1, 3))):
        position = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(("drop", "insert", "duplicate", "splice", "truncate")))
        if kind == "drop" and text:
            end = min(len(text), position + draw(st.integers(1, 3)))
            text = text[:position] + text[end:]
        elif kind == "insert":
            text = text[:position] + draw(st.characters()) + text[position:]
        elif kind == "duplicate" and text:
            start = min(position, len(text) - 1)
            end = min(len(text), start + draw(st.integers(1, 8)))
            text = text[:end] + text[start:end] + text[end:]
        elif kind == "splice":
            text = text[:position] + draw(st.sampled_from(SPLICES)) + text[position:]
        else:
            text = text[:position]
    return text


texts = st.one_of(st.text(), st.text(st.sampled_from("()[]{},:='\"\\#-+*. abls0123_\n")), near_misses(calls()))
step_texts = st.one_of(st.text(), near_misses(steps()), near_misses(calls()))


# ----------------------------------------------------------------------------- properties


def _parse_only_rejects(text: str) -> None:
    try:
        result = parse_call(text)
    except RejectedInput as exc:
        assert str(exc)  # a message, never empty
        return
    assert isinstance(result, CallSpec)


def _decode_only_fails_cleanly(step: Any) -> None:
    try:
        result = decode_step(step, "prompting")
    except (DecodeError, BudgetExceeded):  # the entry fails with the resource-limit type
        return
    assert isinstance(result, list)
    assert all(isinstance(call, str) for call in result)


@DEADLINE
@given(calls())
def test_valid_call_texts_parse(text: str) -> None:
    _parse_only_rejects(text)


@DEADLINE
@given(texts)
@example("ls(a='\\N{nope}')")
@example("ls(a='a' b'b')")
@example("ls(a=" + "-" * 5000 + "1)")
@example("ls(a=" + "[" * 5000 + "]" * 5000 + ")")
@example("\x00")
def test_parse_call_returns_a_spec_or_rejects(text: str) -> None:
    _parse_only_rejects(text)


@DEADLINE
@given(step_texts)
@example("[ls(a='\\N{nope}')]")
@example("[ls(a={'\\N{x}': 1})]")
@example("[ls(a='a' b'b')]")
@example("[ls(a=[[0]*9999]*9999)]")
@example("[ls(a=(('x',)*999)*999)]")
@example("[ls(a=" + "-" * 5000 + "1)]")
@example("[ls(a=" + "1+" * 3000 + "1)]")
@example("[ls(a=9**9**9**9)]")
def test_prompting_decoder_returns_calls_or_fails_cleanly(step: str) -> None:
    _decode_only_fails_cleanly(step)


@DEADLINE
@given(st.one_of(st.none(), st.integers(), st.floats(), st.booleans(), st.binary(),
                 st.lists(st.integers() | st.text(), max_size=3), st.dictionaries(st.text(), st.integers(), max_size=3)))
def test_prompting_decoder_on_non_text_steps(step: Any) -> None:
    _decode_only_fails_cleanly(step)


@DEADLINE
@given(texts)
def test_auto_decoder_returns_calls_or_fails_cleanly(step: str) -> None:
    try:
        result = decode_step(step, "auto")
    except (DecodeError, BudgetExceeded):  # the entry fails with the resource-limit type
        return
    assert isinstance(result, list)


@DEADLINE
@given(st.one_of(texts, near_misses(steps())))
@example("add(a='x', b=1)")
@example("add(a=[1], b=(1,))")
@example("echo(content='ls(a=1)')")
@example("kill()")
def test_run_call_returns_a_string(text: str) -> None:
    table = MethodTable([Desk()], ["model_multi_turn_base_0_Desk_instance"])
    result = run_call(text, table)
    assert type(result) is str


@DEADLINE
@given(near_misses(steps()))
def test_decoded_prompting_calls_run_to_strings(step: str) -> None:
    try:
        decoded = decode_step(step, "prompting")
    except (DecodeError, BudgetExceeded):  # the entry fails with the resource-limit type
        return
    table = MethodTable([Desk()])
    for call in decoded:
        assert type(run_call(call, table)) is str


# ----------------------------------------------------------------------------- JSON-shaped steps

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
fc_names = st.sampled_from(NAMES + ("x y", "ls(a=1) or ls", "a=1)#", "")) | st.text(max_size=12)
fc_arguments = st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=10), json_values, max_size=3)
fc_steps = st.lists(
    st.dictionaries(fc_names, st.one_of(fc_arguments, fc_arguments.map(json.dumps), st.text(max_size=20), json_values),
                    max_size=3),
    max_size=3,
)


@DEADLINE
@given(st.sampled_from(sorted(DECODERS)), st.one_of(json_values, fc_steps, step_texts))
def test_every_decoder_returns_calls_or_fails_cleanly(decoder: str, step: Any) -> None:
    try:
        result = decode_step(step, decoder)
    except (DecodeError, BudgetExceeded):  # the entry fails with the resource-limit type
        return
    assert isinstance(result, list)


@DEADLINE
@given(fc_names, fc_arguments)
def test_fc_calls_run_to_strings(name: str, arguments: dict) -> None:
    table = MethodTable([Desk()], ["model_multi_turn_base_0_Desk_instance"])
    call = fc_call(name, arguments)
    assert isinstance(call, (CallSpec, str, RejectedInput))
    assert type(run_call(call, table)) is str
