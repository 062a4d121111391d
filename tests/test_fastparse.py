"""The fast path answers exactly what the libcst path answers, or nothing."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given, strategies as st

from bfcl_safe.checker.decoders.prompting_cst import prompting_calls as libcst_prompting_calls
from bfcl_safe.checker.decoders import DecodeError
from bfcl_safe.checker.decoders.prompting import OutsideFastSubset as _OutsideFastSubset, fast_calls as _fast_calls
from bfcl_safe.interp.cst_front import parse_with_libcst
from bfcl_safe.interp.errors import RejectedInput
from bfcl_safe.interp.fastparse import _flat_tree, _token_tree, parse_tree
from bfcl_safe.interp.text import _from_tree
from tests.refenv import reference_package_dir


def _ground_truth_texts() -> list[str]:
    texts = set()
    for category in ("base", "miss_func", "miss_param", "long_context"):
        path = reference_package_dir() / "data" / "possible_answer" / f"BFCL_v4_multi_turn_{category}.json"
        for line in path.read_text().splitlines():
            for turn in json.loads(line)["ground_truth"]:
                texts.update(turn)
    return sorted(texts)


def _libcst(text: str):
    try:
        return repr(parse_with_libcst(text))
    except RejectedInput as exc:
        return f"rejected: {exc}"


def test_fast_path_equals_libcst_on_all_ground_truth():
    texts = _ground_truth_texts()
    fast = 0
    for text in texts:
        tree = parse_tree(text)
        if tree is None:
            continue
        fast += 1
        assert repr(_from_tree(tree)) == _libcst(text), text
    assert fast >= 0.9 * len(texts)  # the fast path covers nearly all real texts


names = st.sampled_from(["ls", "cd", "f", "echo", "x1", "_p", "True", "None", "nan", "__x", "class", "lambda", "a_b"])
strings = st.lists(
    st.sampled_from(list("ab (),'\"\\\n=xyz:ls") + ["\\n", "\\'", '\\"', "\\\\", "\\x41", "\\u00e9", "\\ud800",
                                                   "\\x4", "\\u12", "\\U0001F600", "\\N{DASH}", "\\0", "\\t", "é"]),
    max_size=8,
).map("".join)
numbers = st.sampled_from(["0", "1", "-1", "+2", "1.5", ".5", "1.", "1e5", "1E-3", "00", "007", "1_0", "0x1", "1j",
                           "12345678901234567890", "-0", "-0.0", "- 3", "+ -1"])


@st.composite
def values(draw, depth=0):
    kinds = ["string", "number", "name"] + (["list", "tuple", "dict", "set", "call", "paren"] if depth < 3 else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "string":
        quote = draw(st.sampled_from(["'", '"', "'''", "r'", "b'", "f'"]))
        close = quote[-1] * (3 if quote == "'''" else 1)
        return f"{quote}{draw(strings)}{close}"
    if kind == "number":
        return draw(numbers)
    if kind == "name":
        return draw(names)
    items = draw(st.lists(values(depth + 1), max_size=3))
    sep = draw(st.sampled_from([", ", ",", " , ", ",\n"]))
    trailing = draw(st.sampled_from(["", ","]))
    if kind == "list":
        return f"[{sep.join(items)}{trailing}]"
    if kind == "tuple":
        return f"({sep.join(items)}{trailing})"
    if kind == "paren":
        return f"({draw(values(depth + 1))})"
    if kind == "set":
        return "{" + sep.join(items) + trailing + "}"
    if kind == "dict":
        keys = draw(st.lists(values(depth + 1), min_size=len(items), max_size=len(items)))
        return "{" + sep.join(f"{k}: {v}" for k, v in zip(keys, items)) + trailing + "}"
    return draw(calls(depth + 1))


@st.composite
def calls(draw, depth=0):
    name = draw(names)
    args = []
    for _ in range(draw(st.integers(0, 3))):
        keyword = draw(st.one_of(st.none(), names))
        value = draw(values(depth + 1))
        args.append(value if keyword is None else f"{keyword}{draw(st.sampled_from(['=', ' = ', '==']))}{value}")
    return f"{draw(st.sampled_from(['', ' ', chr(9)]))}{name}({draw(st.sampled_from([', ', ',']).map(lambda s: s)).join(args)})"


@given(st.one_of(calls(), st.deferred(lambda: flat_calls())))
@example("f('\x00')")  # CPython's parser refuses a NUL anywhere: so does the fast path
def test_fast_path_equals_libcst_on_generated_calls(text):
    tree = parse_tree(text)
    if tree is not None and tree[0] == "call":
        assert repr(_from_tree(tree)) == _libcst(text)


@given(st.lists(calls(), max_size=3).map(lambda cs: "[" + ", ".join(cs) + "]"))
def test_fast_prompting_decoder_equals_libcst_half(text):
    tree = parse_tree(text)
    if tree is None:
        return
    try:
        fast = _fast_calls(tree)
    except _OutsideFastSubset:
        return
    except DecodeError:
        fast = "fail"
    try:
        slow = libcst_prompting_calls(text)
    except DecodeError:
        slow = "fail"
    assert repr(fast) == repr(slow)


@pytest.mark.parametrize(
    "text",
    ["f(x='a\\x4')", "f(x='a' 'b')", "f(x=1j)", "a.b()", "f(x=1_000)", "f(x=r'a')", "f(x=...)", "f(**k)",
     "f(x=1, x=2)", "f(x=1, 2)", "__import__('os')", "f(class=1)", "\nf()", "f(x=0x10)", "f(x=007)",
     "f(x={'a': 1 'b': 2})"],
    ids=["escape", "concatenation", "imaginary", "attribute", "underscore-number", "prefix", "ellipsis",
         "double-star", "repeated-keyword", "positional-after-keyword", "dunder", "keyword-name",
         "leading-newline", "hex", "leading-zeros", "dict-missing-comma"],
)
def test_fast_path_leaves_these_to_libcst(text):
    assert parse_tree(text) is None


flat_values = st.one_of(
    st.sampled_from(["0", "1", "-1", "-0", "12", "1.5", "-0.25", "007", "1.", ".5", "1e3", "1j", "1_0", "True",
                     "False", "None", "nan", "x", "-x", "- 1", "+1", "'a' 'b'", "''", '""', "'\\''"]),
    st.builds(lambda quote, body: f"{quote}{body}{quote}", st.sampled_from(["'", '"']),
              st.text(st.sampled_from(list("ab ,=()'\"\t\\é#[]{}") + ["\n", "\r", "\x00", "\u2028"]), max_size=6)),
)


clean_flat_values = st.one_of(
    st.sampled_from(["0", "1", "-1", "-0", "12", "1.5", "-0.25", "True", "False", "None", "''", '""']),
    st.builds(lambda quote, body: f"{quote}{body}{quote}", st.sampled_from(["'", '"']),
              st.text(st.sampled_from(list("ab ,=#:\t-é") + ["\u2028", "\x0c", "'"]), max_size=6))
    .filter(lambda literal: literal[0] not in literal[1:-1]),
)


@st.composite
def flat_calls(draw):
    """Texts near the flat shape ``name(value, ..., key=value, ...)``, half of them in it."""
    clean = draw(st.booleans())
    names = ["f", "cd", "ls", "_p", "x1"] + ([] if clean else ["True", "None", "class", "__x", "a b"])
    name = draw(st.sampled_from(names))
    args = []
    keys = ["a", "b", "_k", "__k", "k2"] + ([] if clean else ["a", "class", "True", "1a"])
    used: list[str] = []
    for _ in range(draw(st.integers(0, 4))):
        key = draw(st.one_of(st.none(), st.sampled_from(keys)))
        if clean and (key in used or (key is None and used)):
            key = next((k for k in keys if k not in used), None)
            if key is None:
                break
        if key is not None:
            used.append(key)
        spaces = draw(st.sampled_from(["", " ", "\t", "  "]))
        value = draw(clean_flat_values if clean else flat_values)
        args.append(value if key is None else f"{key}{spaces}={spaces}{value}")
    separator = draw(st.sampled_from([", ", ",", " ,", "\t,"] + ([] if clean else [",,", " "])))
    tail = draw(st.sampled_from(["", ",", ", ", " "] if args else ["", " "]))
    end = draw(st.sampled_from(["", " ", chr(10)] + ([] if clean else [chr(13)])))
    return f"{draw(st.sampled_from(['', ' ']))}{name}({separator.join(args)}{tail}){end}"


@given(st.one_of(flat_calls(), calls()))
def test_the_flat_path_gives_the_token_path_tree_or_nothing(text):
    stripped = text.lstrip(" \t")
    flat = _flat_tree(stripped)
    if flat is not None:
        assert flat == _token_tree(stripped)


def test_the_flat_path_takes_most_ground_truth_and_agrees_with_libcst():
    texts = _ground_truth_texts()
    flat = [text for text in texts if _flat_tree(text.lstrip(" \t")) is not None]
    assert len(flat) >= 0.85 * len(texts)
    for text in flat:
        assert repr(_from_tree(_flat_tree(text))) == _libcst(text), text
