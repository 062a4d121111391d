"""backends.long_context: the JSON fast path gives exactly what the ``ast`` path gives.

The fast path rewrites plain literal data as JSON; anything outside that shape must be
left to ``ast`` (same values, same errors). Values are compared with their types (1,
1.0 and True are equal in Python, not here).
"""

from __future__ import annotations

from keyword import iskeyword

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bfcl_safe.backends import long_context as lc
from tests.refenv import reference_package_dir

# ast warns about the invalid escapes some sources here have on purpose.
pytestmark = pytest.mark.filterwarnings("ignore:invalid escape sequence")


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
    except (ValueError, MemoryError, RecursionError) as exc:  # what ast.parse raises on some text
        return ("raised", type(exc).__name__)


def assert_alike(source):
    assert outcome(lc.parse_long_context, source) == outcome(lc._parse_with_ast, source, "long_context.py")


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


# ------------------------------------------------------- sources written out by hand, not by repr
#
# Strings are written raw in one of the four quotings (repr would escape the interesting
# characters, and escapes always go to ast), with whitespace, line ends and trailing
# commas anywhere Python allows them.

_TRICKY = ["'", '"', "'''", '"""', "#", "[", "]", "{", "}", ",", ":", "...", "True", "None", " ",
           "\t", "\n", "\r", "\r\n", "\x00", "\x0b", "\x0c", "\x1f", "\x7f", "\x85", "\xa0", "\u2028",
           "é", "€", "\U0001F600"]  # no backslash: no quoting holds one (edits add some)


def _quotings(body):
    """The quotings that hold ``body`` as it is (no escapes: a backslash needs one)."""
    if "\\" in body:
        return []
    single = [quote for quote in ("'", '"') if quote not in body and "\n" not in body and "\r" not in body]
    return single + [quote for quote in ("'''", '"""') if quote not in body and not body.endswith(quote[0])]


#: Text that one of the quotings holds, NUL and "\r" included (the fast path leaves them to ast).
_quotable_text = st.lists(st.one_of(st.sampled_from(_TRICKY), st.characters(blacklist_categories=("Cs",))),
                          max_size=6).map("".join).filter(_quotings)
#: What the fast path takes: no NUL (ast refuses it), no "\r" (Python reads it as "\n").
_plain_text = _quotable_text.filter(lambda body: "\x00" not in body and "\r" not in body)
_space = st.sampled_from(["", " ", "  ", "\t", "\n", "\r\n", "\n    ", " \n\t"])
_name = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True)


def _values(text):
    return st.recursive(
        st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20),
                  st.floats(allow_nan=False, allow_infinity=False), text),
        lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(text, inner, max_size=4)),
        max_leaves=12,
    )


def _write(draw, value, ellipsis=False):
    if isinstance(value, str):
        quote = draw(st.sampled_from(_quotings(value)))
        return quote + value + quote
    if isinstance(value, (list, dict)):
        if isinstance(value, list):
            items = [_write(draw, item) for item in value] + (["..."] if ellipsis else [])
        else:
            items = [_write(draw, k) + draw(st.sampled_from(["", " ", "\t"])) + ":" + draw(_space)
                     + _write(draw, v) for k, v in value.items()]
        text = "".join(draw(_space) + item + ("," if index < len(items) - 1 else "")
                       for index, item in enumerate(items))
        if items and draw(st.booleans()):
            text += ","  # a trailing comma
        brackets = "[]" if isinstance(value, list) else "{}"
        return brackets[0] + text + draw(_space) + brackets[1]
    return repr(value)


@st.composite
def _sources(draw, plain):
    if plain:
        names = _name.filter(lambda name: not iskeyword(name))
    else:
        names = st.one_of(_name, st.sampled_from(["None", "True", "class", "if", "match", "xTrue", "e"]))
    values = _values(_plain_text if plain else _quotable_text)
    assignments = draw(st.lists(st.tuples(names, values), max_size=4))
    text = draw(st.sampled_from(["", "\n", "\n\n", "  \n"]))
    for index, (name, value) in enumerate(assignments):
        if index:
            text += draw(st.sampled_from(["\n", "\r\n", "\n\n", "\n   \n", "\n\t\n", "  \n"]))
        ellipsis = index == 0 and isinstance(value, list) and draw(st.booleans())
        text += name + draw(st.sampled_from([" = ", "=", " =\t", "\t= "])) + _write(draw, value, ellipsis)
    return text + draw(st.sampled_from(["", "\n", "\r\n", "\n\n", "  "]))


@settings(max_examples=200)
@given(_sources(plain=True))
def test_generated_plain_data_takes_the_fast_path(source):
    assert lc._parse_fast(source) is not None
    assert_alike(source)


_EDITS = ["", "#", "# it's ", "'", '"', "'''", '"""', "\\", "\r", "\r\n", "\n", "\x00", "\x0c", "\xa0",
          "\ud800", " ", "\t", ",", "[", "]", "{", "}", ":", "...", "-", "+", ".", "e", "0", "1", "NaN",
          "true", "null", "Infinity", "True", "None", "x", "=", "A = ", "\nA = ", "\nclass = ", "(", "u"]


@settings(max_examples=200)
@given(_sources(plain=False), st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(_EDITS)), max_size=3))
def test_edited_sources_parse_alike(source, edits):
    for position, insert in edits:
        position %= len(source) + 1
        source = source[:position] + insert + source[position + (not insert):]  # "" deletes a character
    assert_alike(source)


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
    # names: a keyword is not one; True/False/None inside a name are not constants
    "None = 1\n", "True = [1]\n", "class = 1\n", "if = 2\n",
    "xTrue = 1\n", "A_None = [None, True]\n", "Nonex = 1\n", "match = 1\ntype = 2\n_ = 3\n",
    "null = 1\nNaN = 2\n", "e = 1\nE5 = 2\n",
    # JSON words that Python does not know
    "A = [1, NaN]\n", "A = Infinity\n", "A = -Infinity\n", "A = true\n", "A = [null]\n", 'A = {"a": false}\n',
    # commas
    "A = [,]\n", "A = {,}\n", "A = [1,,]\n", "A = [1 ,]\n", "A = {'a': ,}\n", "A = [\n  'x',\n]\r\n",
    "A = [True,]\nB = [...,]\nC = [[],]\nD = [{},]\nE = [1.5,]\nF = ['''x''',]\n",
    # strings: escapes, quotes, line ends, NUL, lone surrogates, prefixes, concatenation
    'A = "\\/"\n', "A = '\\u0041'\n", "A = 'a\\\nb'\n", 'A = "it\'s"\n', "A = '''it's'''\n",
    "A = '''a\r\nb'''\n", "A = '''a\rb'''\n", 'A = """a\r\nb"""\n', "A = 'a\rb'\n",
    "A = '\x00'\n", "A = '''\x00'''\n", "A = '\ud800'\n", 'A = """x\ud800"""\n',
    "A = b'x'\n", "A = f'x'\n", "A = r'x'\n", "A = u'x'\n", "A = 'a''b'\n",
    "A = ''''''\nB = \"\"\"\"\"\"\nC = ''\nD = \"\"\n", "A = ''''\n", "A = '''a''''\n",
    "A = '''a'' '''\nB = \"\"\"\"a\"\"\"\n", "A = '''\nB = 1\n'''\n",
    "A = ['\x01', '\x1f\x7f\x85', '\u2028\u2029', '\U0001F600']\n",
    "A = ['\"', \"'\", '\"\"\"', \"'''\", '#', '[', '{']\n",
    # comments and other text between values
    "A = 1  # it's\nB = 'x'\n", "# 'x'\nA = 1\n", "A = ['#']\n", "A = 1 \\\n\n", "A = 1;\n",
    "\ufeffA = 1\n", "A = 1\xa0\n", "A = 1\n\x0cB = 2\n", "A = 1\rB = 2\n", "  A = 1\n",
    "A = 1\n  B = 2\n", "A =\r[1]\n", "A : int = 1\n", "A += 1\n", "A = B\n",
    # ellipsis
    "A = [1, ..., 2]\n", "A = [[1, ...]]\n", "A = [..., ...]\n", "A = ...\n", "A = [...]\n", "A = [1....]\n",
    "A = [1, ...]\nB = [2, ...]\n", "A = ['\\x00']\n",  # (NUL is what the fast path's ... decodes to)
    # numbers
    "A = 01\n", "A = 1_000\n", "A = 0x10\n", "A = .5\n", "A = 5.\n", "A = 1j\n", "A = 1e\n", "A = 1e+\n",
    "A = [1 -1]\n", "A = [1-1]\n", "A = - 1\n", "A = --1\n", "A = -True\n", "A = 1.5.3\n",
    "A = [0, -0, 0.0, -0.0, 1e400, -1e400, 1E-400, 12345678901234567890123, 2.5e-3, 1e+16]\n",
    "A = " + "9" * 5000 + "\n",
])
def test_edge_cases_parse_alike(source):
    assert_alike(source)


@pytest.mark.parametrize("source", [
    "A = ['tab\there', 'say \"hi\"', \"it's\", '''x\ny''', \"\"\"q\"\"\", '\u2028', '#', '\x1f\x7f\x85']\n",
    "A = [1, 2,]\nB = {'k': 'v',\n}\n",
    "A = [True, False, None, ...]\r\nB = {'a': [1, -2.5e3, {}], \"b\": []}\r\n",
    "\n\nA = 1\n   \n\t\nB = 2   \nC = -0.0",
    "xTrue = [True]\nA_None = None\nmatch = 1\n__debug__ = 2\n",
])
def test_plain_data_takes_the_fast_path(source):
    assert lc._parse_fast(source) is not None
    assert_alike(source)


def _nested(depth):
    """``A = [{'k': [{'k': ... 1 ... }]}]`` with ``depth`` brackets around the 1."""
    odd = depth % 2
    return "A = " + "[{'k': " * (depth // 2) + "[" * odd + "1" + "]" * odd + "}]" * (depth // 2) + "\n"


def test_nesting_beyond_the_limit_goes_to_ast():
    # Python's parser gives up at about 200 brackets, the JSON decoder much later.
    assert lc._parse_fast(_nested(lc._MAX_DEPTH)) is not None
    for depth in (lc._MAX_DEPTH, lc._MAX_DEPTH + 1, 150, 199, 200, 201, 1500):
        source = _nested(depth)
        if depth > lc._MAX_DEPTH:
            assert lc._parse_fast(source) is None
        assert_alike(source)
    # brackets in strings count neither way
    source = "A = ['" + "[" * 300 + "', \"it's [\", '''[\n[''', " + "[" * 90 + "]" * 90 + "]\n"
    assert lc._parse_fast(source) is not None
    assert_alike(source)
    source = "A = " + "[']', \"]\", \"]'\", ''']''', " * 250 + "1" + "]" * 250 + "\n"
    assert lc._parse_fast(source) is None
    assert_alike(source)


# Every text here is 200 kB or more: an algorithm quadratic in its length would take
# minutes on it (billions of steps), so a run that never ends is this test failing.
_HOSTILE_UNITS = ["'", '"', "'''", '"""', "'a", '"a', "'''a", '"""a', "'\\", '"""\\', "''''", "[", "{",
                  "[{'a': ", "[1, ", "['", "A = ", ",", ", ", "-", "-1", "1e", "...", "True", "'a', ",
                  '"b", ', "'\t', ", "'''x\n''', ", "#", "\n", "\r", " ", "\\", "a"]


@pytest.mark.parametrize("unit", _HOSTILE_UNITS)
def test_hostile_text_is_handled_in_linear_time(unit):
    body = unit * (200_000 // len(unit) + 1)
    for source in (body, "A = " + body, "A = [" + body + "]\n", "A = '" + body, "A = '''" + body):
        fast = lc._parse_fast(source)  # None: parse_long_context gives what ast gives
        expected = outcome(lc._parse_with_ast, source, "long_context.py")
        assert fast is None or ("ok", typed(fast)) == expected
