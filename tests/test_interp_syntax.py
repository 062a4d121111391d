"""The text front-end's language, as tables: what ``parse_call`` accepts (and into
which :class:`CallSpec`), and what it rejects (with a message naming the construct).

Hostile input (escapes, resource exhaustion) lives in ``test_breakout.py``;
agreement with the reference's ``eval`` lives in ``test_interp_vs_eval.py``.
"""

from __future__ import annotations

import ast
import json
import re
from functools import lru_cache
from typing import Any

import pytest

from bfcl_safe.interp import (
    CallSpec, Container, Failure, MethodTable, NameRef, RejectedInput, SourceString, parse_call, run_call,
)
from bfcl_safe.interp.callspec import Operation
from tests.callparse import parse_trusted_call
from tests.refenv import reference_package_dir

CATEGORIES = ("base", "miss_func", "miss_param", "long_context")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # libcst's import, invalid escapes


def C(name: str, *args: Any, **kwargs: Any) -> CallSpec:
    return CallSpec(name=name, args=tuple(args), kwargs=tuple(kwargs.items()))


# ----------------------------------------------------------------------------- accepted

ACCEPTED = [
    # ground-truth style
    ("positional-string", "sort('final_report.pdf')", C("sort", "final_report.pdf")),
    ("keyword-int-and-dict", "edit_ticket(ticket_id=654321, updates={'priority':2})",
     C("edit_ticket", ticket_id=654321, updates={"priority": 2})),
    ("keyword-list", "post_tweet(content='Hello …', tags=['#a'])",
     C("post_tweet", content="Hello …", tags=["#a"])),
    ("no-args", "ls()", C("ls")),
    ("trailing-comma", "ls(a=True,)", C("ls", a=True)),
    ("spaces-everywhere", "ls ( a = 1 , b = 2 )", C("ls", a=1, b=2)),
    ("leading-spaces", "   ls(a=1)", C("ls", a=1)),
    ("leading-tab", "\tls(a=1)", C("ls", a=1)),
    ("trailing-newline", "ls(a=1)\n", C("ls", a=1)),
    ("multiline-args", "ls(\n  a=1,\n  b=2,\n)", C("ls", a=1, b=2)),
    ("comment", "ls(a=1)  # trailing comment", C("ls", a=1)),
    ("positional-then-keyword", "mv('a.txt', destination='b')", C("mv", "a.txt", destination="b")),
    # numbers
    ("negative-int", "f(x=-5)", C("f", x=-5)),
    ("negative-float", "f(x=-2.5)", C("f", x=-2.5)),
    ("unary-plus", "f(x=+3)", C("f", x=3)),
    ("float-exponent", "f(x=1e-05, y=1E5)", C("f", x=1e-05, y=100000.0)),
    ("float-forms", "f(x=.5, y=5.)", C("f", x=0.5, y=5.0)),
    ("big-int", "f(x=123456789012345678901234567890)", C("f", x=123456789012345678901234567890)),
    ("hex-octal-binary", "f(x=0x1F, y=0o17, z=0b101)", C("f", x=31, y=15, z=5)),
    ("underscored-int", "f(x=1_000_000)", C("f", x=1000000)),
    ("zero-int", "f(x=00)", C("f", x=0)),
    ("complex", "f(x=2j, y=-1.5j)", C("f", x=2j, y=-1.5j)),
    ("minus-true", "f(x=-True)", C("f", x=-1)),
    # constants
    ("true-false-none", "f(a=True, b=False, c=None)", C("f", a=True, b=False, c=None)),
    # containers
    ("empty-containers", "f(a=[], b={}, c=())", C("f", a=[], b={}, c=())),
    ("nested-list-dict", "f(x=[1, [2, {'k': [3, -4]}], {'a': {'b': None}}])",
     C("f", x=[1, [2, {"k": [3, -4]}], {"a": {"b": None}}])),
    ("tuple", "f(x=(1, 'a'))", C("f", x=(1, "a"))),
    ("one-tuple", "f(x=(1,))", C("f", x=(1,))),
    ("parenthesised-value", "f(x=(1))", C("f", x=1)),
    ("tuple-positional", "f((1, 2), ('a',))", C("f", (1, 2), ("a",))),
    ("set", "f(x={1, 2, 'a'})", C("f", x={1, 2, "a"})),
    ("dict-int-and-tuple-keys", "f(x={1: 'a', (2, 3): None})", C("f", x={1: "a", (2, 3): None})),
    ("dict-duplicate-key-last-wins", "f(x={'a': 1, 'a': 2})", C("f", x={"a": 2})),
    # strings
    ("double-quotes", 'f(x="it\'s")', C("f", x="it's")),
    ("escaped-quote", "f(x='it\\'s')", C("f", x="it's")),
    ("escapes", r"f(x='a\nb\tc\\d\x41\u00e9\N{GREEK SMALL LETTER ALPHA}')", C("f", x="a\nb\tc\\dAéα")),
    ("unicode-literal", "f(x='héllo wörld ✓ 日本')", C("f", x="héllo wörld ✓ 日本")),
    ("raw-string", r"f(x=r'\d+\n')", C("f", x="\\d+\\n")),
    ("u-prefix", "f(x=u'abc')", C("f", x="abc")),
    ("triple-quoted", "f(x='''a\nb''')", C("f", x="a\nb")),
    ("bytes", r"f(x=b'\x00ab')", C("f", x=b"\x00ab")),
    ("raw-bytes", r"f(x=rb'\d')", C("f", x=b"\\d")),
    ("implicit-concatenation", "f(x='ab' \"cd\" 'ef')", C("f", x="abcdef")),
    ("implicit-concatenation-bytes", "f(x=b'ab' b'cd')", C("f", x=b"abcd")),
    ("empty-string", "f(x='')", C("f", x="")),
    ("string-with-code-looking-text", "f(x='a + b; c.d[0]')", C("f", x="a + b; c.d[0]")),
    # strings the instance-name rewrite may change are kept as source
    ("string-with-call-pattern", "echo(content='run ls(now)')", C("echo", content=SourceString(("'run ls(now)'",)))),
    ("concatenation-with-call-pattern", "echo(content='ls(' 'x)')", C("echo", content=SourceString(("'ls('", "'x)'")))),
    # the rewrite sees source text: a name and a parenthesis in different literals never match
    ("concatenation-split-pattern", "echo(content='ls' '(x)')", C("echo", content="ls(x)")),
    # bare names fail at run time, as under eval
    ("bare-name", "f(x=nan)", C("f", x=NameRef("nan"))),
    ("bare-name-signed", "f(x=-inf)", C("f", x=NameRef("inf"))),
    ("bare-name-in-list", "f(x=[1, foo])", C("f", x=Container(list, (1, NameRef("foo"))))),
    # nested calls run first, as under eval
    ("nested-call", "cd(folder=rm(file_name='x'))", C("cd", folder=C("rm", file_name="x"))),
    ("nested-call-positional", "f(g(1), h(k=2))", C("f", C("g", 1), C("h", k=2))),
    ("nested-call-in-list", "f(x=[g()])", C("f", x=Container(list, (C("g"),)))),
    ("nested-call-dict-value", "f(x={'k': g()})", C("f", x=Container(dict, (("k", C("g")),)))),
    # values whose evaluation fails as it would under eval
    ("unhashable-dict-key", "f(x={[1]: 2})", C("f", x=Failure(TypeError, "unhashable type: 'list'"))),
    ("unhashable-set-item", "f(x={1, {}})", C("f", x=Failure(TypeError, "unhashable type: 'dict'"))),
    ("minus-none", "f(x=-None)", C("f", x=Failure(TypeError, "bad operand type for unary -: 'NoneType'"))),
    # identifiers are NFKC-normalised like CPython does (keyword names, bare names, constants) ...
    ("nfkc-keyword", "f(ａ=1)", C("f", a=1)),
    ("nfkc-bare-name", "f(x=ｎａｎ)", C("f", x=NameRef("nan"))),
    ("non-ascii-name", "f(café=1)", C("f", café=1)),
    ("nfkc-constant", "f(x=Ｔｒｕｅ, y=-Ｔｒｕｅ)", C("f", x=True, y=-1)),
    # ... except a callee, kept as written: never a tool, looked up (and not found) by its NFKC form
    ("non-ascii-callee-kept-as-written", "ｌｓ(a=1)", C("ｌｓ", a=1)),
    # operators are computed at run time, sizes checked first (interp/builtins.py)
    ("binary-plus", "ls(a=1+2)", C("ls", a=Operation("+", (1, 2)))),
    ("binary-minus", "ls(a=3-1)", C("ls", a=Operation("-", (3, 1)))),
    ("power-right-associative", "ls(a=2**3**2)", C("ls", a=Operation("**", (2, Operation("**", (3, 2)))))),
    ("precedence", "ls(a=1+2*3)", C("ls", a=Operation("+", (1, Operation("*", (2, 3)))))),
    ("string-concat-operator", "ls(a='a' + 'b')", C("ls", a=Operation("+", ("a", "b")))),
    ("percent-format", "ls(a='%d' % 5)", C("ls", a=Operation("%", ("%d", 5)))),
    ("dict-union", "ls(a={'a': 1} | {'b': 2})", C("ls", a=Operation("|", ({"a": 1}, {"b": 2})))),
    ("operator-on-call", "ls(a=len('x') + 1)", C("ls", a=Operation("+", (C("len", "x"), 1)))),
    ("not", "ls(a=not 1)", C("ls", a=Operation("not", (1,)))),
    ("invert", "ls(a=~1)", C("ls", a=Operation("~", (1,)))),
    ("double-minus", "ls(a=--1)", C("ls", a=Operation("-", (-1,)))),
    ("minus-string", "ls(a=-'x')", C("ls", a=Operation("-", ("x",)))),
    # ... and so are comparisons, boolean operators, conditionals and subscripts (lazily, in Python's order)
    ("comparison", "ls(a=1 < 2)", C("ls", a=Operation("compare", (1, "<", 2)))),
    ("comparison-chain", "ls(a=1 < x <= 3)", C("ls", a=Operation("compare", (1, "<", NameRef("x"), "<=", 3)))),
    ("comparison-in", "ls(a='a' not in 'abc')", C("ls", a=Operation("compare", ("a", "not in", "abc")))),
    ("boolean-and", "ls(a=1 and 2)", C("ls", a=Operation("and", (1, 2)))),
    ("boolean-or", "ls(a=x or y)", C("ls", a=Operation("or", (NameRef("x"), NameRef("y"))))),
    ("conditional", "ls(a=1 if x else 2)", C("ls", a=Operation("if", (NameRef("x"), 1, 2)))),
    ("subscript-index", "ls(a=[1][0])", C("ls", a=Operation("subscript", ([1], 0)))),
    ("subscript-of-call", "cd(folder=ls()['k'][0])",
     C("cd", folder=Operation("subscript", (Operation("subscript", (C("ls"), "k")), 0)))),
    ("subscript-slice", "ls(a='abc'[::-1])", C("ls", a=Operation("subscript", ("abc", Operation("slice", (None, None, -1)))))),
    ("subscript-tuple-key", "ls(a={}[1, 2])", C("ls", a=Operation("subscript", ({}, Operation("tuple", (1, 2)))))),
]


@pytest.mark.parametrize("text, expected", [pytest.param(t, e, id=i) for i, t, e in ACCEPTED])
def test_accepted(text: str, expected: CallSpec) -> None:
    assert parse_call(text) == expected


def test_accepted_values_keep_their_types() -> None:
    # CallSpec equality would accept 1 == 1.0 == True; the literal types matter (str() of results).
    spec = parse_call("f(a=1, b=1.0, c=True, d=(1,), e=[1], f={1}, g=b'1', h='1')")
    assert [type(v) for _, v in spec.kwargs] == [int, float, bool, tuple, list, set, bytes, str]


def test_parse_is_cached_and_deterministic() -> None:
    text = "edit_ticket(ticket_id=654321, updates={'priority':2})"
    assert parse_call(text) == parse_call(text) == parse_call(str(text))


# ----------------------------------------------------------------------------- rejected

REJECTED = [
    # (id, text, regex on str(exc))
    ("attribute-callee", "os.system('ls')", r"attribute access"),
    ("attribute-value", "ls(a=x.y)", r"attribute access"),
    ("attribute-on-literal", "ls(a=().__class__)", r"attribute access|dunder"),
    ("method-on-string", "ls(a='x'.join([]))", r"attribute access"),
    ("subscript-callee", "f[0](1)", r"subscript"),
    ("lambda-value", "ls(a=lambda: 1)", r"lambda"),
    ("lambda-callee", "(lambda: 1)()", r"lambda"),
    ("list-comprehension", "ls(a=[x for x in y])", r"list comprehension"),
    ("set-comprehension", "ls(a={x for x in y})", r"set comprehension"),
    ("dict-comprehension", "ls(a={x: 1 for x in y})", r"dict comprehension"),
    ("generator-argument", "ls(x for x in y)", r"generator expression"),
    ("f-string", "ls(a=f'{x}')", r"f-string"),
    ("f-string-constant", "ls(a=f'abc')", r"f-string"),
    ("star-args", "ls(*a)", r"'\*' argument unpacking"),
    ("star-in-list", "ls(a=[*b])", r"starred element"),
    ("double-star-kwargs", "ls(**kw)", r"'\*\*' argument unpacking"),
    ("double-star-dict-literal", "ls(**{'a': 1})", r"'\*\*' argument unpacking"),
    ("double-star-in-dict", "ls(a={**b})", r"'\*\*' in a dict"),
    ("walrus", "ls(a=(b := 1))", r"assignment expression"),
    ("ellipsis", "ls(a=...)", r"ellipsis"),
    ("await", "ls(a=await x)", r"await"),
    ("yield", "ls(a=(yield))", r"yield"),
    ("dunder-callee", "__import__('os')", r"dunder name '__import__'"),
    ("dunder-init", "__init__()", r"dunder name '__init__'"),
    ("dunder-value", "ls(a=__builtins__)", r"dunder name '__builtins__'"),
    ("dunder-nested-call", "ls(a=__import__('os'))", r"dunder name '__import__'"),
    ("dunder-fullwidth", "＿＿import__('os')", r"dunder name '__import__'|invalid syntax"),
    ("not-a-call-name", "ls", r"expected a function call"),
    ("not-a-call-number", "42", r"expected a function call"),
    ("not-a-call-list", "[ls(), cd(folder='x')]", r"expected a function call"),
    ("not-a-call-tuple", "ls(), cd(folder='x')", r"expected a function call"),
    ("not-a-call-attribute", "().__class__.__bases__", r"expected a function call"),
    ("call-of-call", "f()()", r"only plain names can be called"),
    ("duplicate-keyword", "ls(a=1, a=2)", r"keyword argument repeated: a"),
    ("duplicate-keyword-nfkc", "ls(ａ=1, a=2)", r"keyword argument repeated: a"),
    # libcst's own parser refuses this one as a syntax error (run_call then reports
    # CPython's message, see SYNTAX_ERRORS below)
    ("positional-after-keyword", "ls(a=1, 2)", r"positional argument follows keyword argument|invalid syntax"),
    ("two-statements", "ls(); cd()", r"invalid syntax"),
    ("two-lines", "ls()\ncd()", r"invalid syntax"),
    ("unbalanced", "ls(a=[1, 2)", r"invalid syntax"),
    ("empty", "", r"invalid syntax|expected a function call"),
    ("keyword-as-argument-name", "ls(class=1)", r"invalid syntax"),
    ("leading-zero-int", "ls(a=09)", r"invalid syntax"),
    ("not-a-string", None, r"must be a string"),
]


@pytest.mark.parametrize("text, pattern", [pytest.param(t, p, id=i) for i, t, p in REJECTED])
def test_rejected(text: str, pattern: str) -> None:
    with pytest.raises(RejectedInput, match=pattern):
        parse_call(text)


def test_rejection_is_a_value_error_and_pickles() -> None:
    import pickle

    with pytest.raises(ValueError) as info:
        parse_call("ls(a=x.y)")
    exc = info.value
    again = pickle.loads(pickle.dumps(exc))
    assert type(again) is RejectedInput
    assert (str(again), again.position, again.source) == (str(exc), exc.position, exc.source)


POSITIONS = [
    # (id, text, regex, "line:column" 1-based, as in the message)
    ("attribute", "ls(a=x.y)", r"attribute access", "1:6"),
    ("lambda-second-arg", "ls(a=1, b=lambda: 0)", r"lambda", "1:11"),
    ("generator", "ls(a=1, b=2, c=(x for x in y))", r"generator", "1:17"),
    ("star-kwargs", "ls(a=1, **kw)", r"'\*\*' argument unpacking", "1:9"),
    ("dunder-after-leading-spaces", "  __import__('os')", r"dunder name", "1:3"),
    ("second-line", "ls(a=1,\n   b=x.y)", r"attribute access", "2:6"),
    ("lambda-in-dict", "ls(a={'k': lambda: 0})", r"lambda", "1:12"),
]


@pytest.mark.parametrize("text, pattern, where", [pytest.param(t, p, w, id=i) for i, t, p, w in POSITIONS])
def test_rejection_position(text: str, pattern: str, where: str) -> None:
    with pytest.raises(RejectedInput, match=pattern) as info:
        parse_call(text)
    assert str(info.value).endswith(f" at {where}")
    line, column = map(int, where.split(":"))
    offset = sum(len(s) + 1 for s in text.split("\n")[: line - 1]) + column - 1
    assert info.value.position == offset
    caret = info.value.caret().splitlines()
    assert caret[-1] == " " * (column - 1) + "^"


def test_rejection_position_when_snippet_also_occurs_earlier() -> None:
    # The same snippet inside the string literal must not be taken for the offending node.
    with pytest.raises(RejectedInput, match=r"attribute access is not allowed at 1:15$"):
        parse_call("ls(a='x.y', b=x.y)")


# Where eval itself could not compile the text, run_call reports CPython's own
# SyntaxError text, as the reference's result string does.
SYNTAX_ERRORS = [
    ("positional-after-keyword", "ls(a=1, 2)", ()),
    ("duplicate-keyword", "ls(a=1, a=2)", ()),
    ("keyword-as-argument-name", "ls(class=1)", ()),
    ("space-in-argument-name", "ls(a b=1)", ()),
    ("dotted-argument-name", "ls(a.b=1)", ()),
    ("missing-argument-name", "ls(=1)", ()),
    ("unbalanced", "ls(a=[1, 2)", ()),
    ("two-lines", "ls()\ncd()", ()),
    ("leading-zero-int", "ls(a=09)", ()),
    # literals that tokenize but do not decode
    ("bad-named-escape", r"ls(a='\N{bogus}')", ()),
    ("truncated-hex-escape", r"ls(a='\x4')", ()),
    ("non-ascii-bytes", "ls(a=b'é')", ()),
    ("bytes-plus-str-concatenation", "ls(a=b'x' 'y')", ()),
    ("huge-int-literal", "ls(a=" + "9" * 5000 + ")", ()),
]


@pytest.mark.parametrize("text", [pytest.param(t, id=i, marks=m) for i, t, m in SYNTAX_ERRORS])
def test_syntax_error_text_is_cpythons(text: str) -> None:
    with pytest.raises(SyntaxError) as info:
        compile(text, "<string>", "eval")  # test oracle: compiles, runs nothing
    assert run_call(text, MethodTable([])) == f"Error during execution: {info.value}"
    assert run_call(text, MethodTable([])) == f"Error during execution: {info.value}"  # (remembered)


@pytest.mark.parametrize("text", ["ls(a=1, " + "b=2, " * 1000 + "2)", "ls(a=" + "[1, " * 90 + "2" + "]" * 91])
def test_syntax_error_text_of_a_long_call_is_cpythons(text: str) -> None:
    # Past the length of remembered texts (4,096) the message is found all the same.
    assert len(text) > 4096 or "[" in text
    with pytest.raises(SyntaxError) as info:
        compile(text, "<string>", "eval")  # test oracle
    assert run_call(text, MethodTable([])) == f"Error during execution: {info.value}"


# ----------------------------------------------------------------------------- limits at the edge

def _nested_list(depth: int) -> str:
    return "f(x=" + "[" * depth + "]" * depth + ")"


def test_moderate_nesting_is_accepted() -> None:
    spec = parse_call(_nested_list(50))
    value = spec.kwargs[0][1]
    for _ in range(49):
        assert type(value) is list and len(value) == 1
        value = value[0]
    assert value == []


def test_deep_nesting_is_rejected_by_the_limit() -> None:
    with pytest.raises(RejectedInput, match=r"nesting deeper than \d+"):
        parse_call(_nested_list(150))


def test_huge_int_literal_is_rejected_by_the_limit() -> None:
    with pytest.raises(RejectedInput, match=r"integer literal longer than \d+ digits|invalid syntax"):
        parse_call("f(x=" + "9" * 5000 + ")")


# ----------------------------------------------------------------------------- the dataset

@lru_cache(maxsize=None)
def ground_truth_texts() -> tuple[str, ...]:
    texts: set[str] = set()
    for category in CATEGORIES:
        path = reference_package_dir() / "data" / "possible_answer" / f"BFCL_v4_multi_turn_{category}.json"
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                for turn in json.loads(line)["ground_truth"]:
                    texts.update(turn)
    return tuple(sorted(texts))


_PLAIN = MethodTable([])  # no tools: string literals decode without any rewrite


def _resolved(value: Any) -> Any:
    """A parsed value as a plain literal (ground truth holds no names, calls or failures)."""
    if isinstance(value, SourceString):
        return _PLAIN.decode_source_string(value.parts)
    assert not isinstance(value, (CallSpec, NameRef, Failure)), value
    if isinstance(value, Container):
        if value.kind is dict:
            return {_resolved(k): _resolved(v) for k, v in value.items}
        return value.kind(_resolved(v) for v in value.items)
    return value


def _typed(value: Any) -> Any:
    """A comparison key that tells 1, 1.0 and True apart, recursively."""
    if isinstance(value, dict):
        return ("dict", [(_typed(k), _typed(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [_typed(v) for v in value])
    if isinstance(value, (set, frozenset)):
        return (type(value).__name__, sorted(map(repr, value)))
    return (type(value).__name__, value)


def test_dataset_has_ground_truth() -> None:
    assert len(ground_truth_texts()) > 500


def test_every_ground_truth_call_parses_to_its_literal_values() -> None:
    mismatches = []
    for text in ground_truth_texts():
        spec = parse_call(text)
        name, args, kwargs = parse_trusted_call(text)  # test-only: ast.literal_eval
        got = (spec.name, [_typed(_resolved(a)) for a in spec.args],
               [(k, _typed(_resolved(v))) for k, v in spec.kwargs])
        want = (name, [_typed(a) for a in args], [(k, _typed(v)) for k, v in kwargs.items()])
        if got != want:
            mismatches.append(text)
    assert not mismatches, mismatches[:5]


def test_ground_truth_uses_keywords_positionals_and_containers() -> None:
    # The table above is only meaningful if the dataset really exercises these forms.
    specs = [parse_call(t) for t in ground_truth_texts()]
    assert any(s.args for s in specs)
    assert any(s.kwargs for s in specs)
    assert any(isinstance(v, (list, dict)) for s in specs for _, v in s.kwargs)
    assert any(re.search(r"\\'", t) for t in ground_truth_texts())  # escaped quotes
    assert all(isinstance(ast.parse(t, mode="eval").body, ast.Call) for t in ground_truth_texts())
