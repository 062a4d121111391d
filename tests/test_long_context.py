"""backends.long_context: the JSON fast path gives exactly what the ``ast`` path gives.

The fast path rewrites plain literal data as JSON; anything outside that shape must be
left to ``ast`` (same values, same errors). Values are compared with their types (1,
1.0 and True are equal in Python, not here).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bfcl_safe.backends import long_context as lc
from tests.refenv import reference_package_dir


def typed(value):
    if isinstance(value, dict):
        return ("dict", [(typed(k), typed(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple, set)):
        items = sorted(value, key=repr) if isinstance(value, set) else value
        return (type(value).__name__, [typed(v) for v in items])
    if isinstance(value, float) and value != value:
        return ("float", "nan")
    return (type(value).__name__, value)


def outcome(function, *args):
    try:
        return ("ok", typed(function(*args)))
    except lc.LongContextDataError as exc:
        return ("error", str(exc))


def test_the_pinned_file_takes_the_fast_path_and_matches_ast():
    source = (reference_package_dir() / lc.RELATIVE_PATH).read_text(encoding="utf-8")
    fast = lc._parse_fast(source)
    assert fast is not None
    assert typed(fast) == typed(lc._parse_with_ast(source, "long_context.py"))
    assert fast["WATCH_LIST_EXTENSION"][-1] is ...


_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
_data = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), st.floats(allow_nan=False), _text),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(_text, inner, max_size=4),
        st.tuples(inner),
        st.dictionaries(st.integers(0, 9), inner, max_size=2),
    ),
    max_leaves=12,
)


@settings(max_examples=300)
@given(st.lists(st.tuples(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True), _data), max_size=4),
       st.sampled_from([" = ", "=", " =\t"]), st.booleans())
def test_generated_files_parse_alike(assignments, equals, trailing_ellipsis):
    lines = []
    for index, (name, value) in enumerate(assignments):
        text = repr(value)
        if trailing_ellipsis and index == 0 and isinstance(value, list):
            text = text[:-1] + (", ...]" if value else "...]")
        lines.append(f"{name}{equals}{text}")
    source = "\n".join(lines) + "\n"
    assert outcome(lc.parse_long_context, source) == outcome(lc._parse_with_ast, source, "long_context.py")


@pytest.mark.parametrize("source", [
    "A = [1, 2,]\nB = {'k': 'v',\n}\n",                      # trailing commas
    'A = """say "hi" """\nB = \'\'\'it\'s\'\'\'\n',        # triple quotes with quotes inside
    "A = 'tab\there'\nB = \"x\"\n",                          # control character in a string
    "A = ['é', '€', '\u2028']\n",
    "A = [1, ...]\n",
    "A = [..., 1]\n",                                         # ellipsis elsewhere: ast decides
    "A = {'k': ...}\n",
    "A = [1, 2]  # comment\n",
    "A = (1, 2)\n",
    "A = {1, 2}\n",
    "A = {1: 'x'}\n",
    "A = 'a\\nb'\n",
    "A =\n[1]\n",
    "A = 1\nB = 2 + 3\n",
    "A = -5\nB = -0.0\nC = 1e5\nD = 1E-2\nE = 00\n",
    "A = +5\n",
    "A = [1, 2]\n[3]\n",
    "A = 'a' 'b'\n",
    "import os\n",
    "A = B = 1\n",
    "A == 1\n",
    "",
    "\n\n",
    "A = True\nB = None\nC = False\nD = [True, None]\n",
    "A = 'True'\nB = \"None\"\n",
    "A = 1\nA = 2\n",
    "A = [1, 2\n",
])
def test_edge_cases_parse_alike(source):
    assert outcome(lc.parse_long_context, source) == outcome(lc._parse_with_ast, source, "long_context.py")
