"""Differential tests: our interpreter against the reference's own ``eval`` path.

The oracle is the pinned bfcl-eval wheel's code, run as the reference runs it:
``_process_method_calls`` (the instance-name prefix regex, which also rewrites
``name(`` inside string literals) and then ``eval`` of the processed text, with the
denylist check and the result formatting of ``execute_multi_turn_func_call``. That
function itself imports the backend classes by name, so :func:`reference_run`
restates its ~20-line loop body (multi_turn_utils.py, the ``for func_call in
func_call_list`` loop) and calls the reference's ``_process_method_calls``.

Ours: ``run_step`` / ``run_call`` on a :class:`MethodTable` over fresh instances.
Both sides must give identical result strings and identical recorded side effects,
call by call.

Generated texts stay inside our accepted language (see test_interp_syntax.py). What
the reference's ``eval`` accepts beyond it (operators, attributes, builtins, the
names of the reference's own globals and locals) is refused by design and tested in
test_breakout.py. Bare names are drawn from a pool that is checked, below, to be
undefined in the reference's namespace.
"""

from __future__ import annotations

import builtins
from functools import lru_cache
import inspect
import json
import keyword
import warnings
from typing import Any

import pytest
from hypothesis import example, given, note as hypothesis_note, strategies as st
from hypothesis.errors import InvalidArgument

from bfcl_safe.interp import MethodTable, fc_call, run_call, run_step, tool
from tests.refenv import import_reference

MTU = import_reference("eval_checker.multi_turn_eval.multi_turn_utils")
convert_to_function_call = import_reference("model_handler.utils").convert_to_function_call

# multi_turn_utils.py, execute_multi_turn_func_call: the list the loop tests `func_call_copy` against.
REFERENCE_DENYLIST = ["kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run"]

pytestmark = [
    # invalid escapes such as '\d' are kept as written, with a warning, on both sides
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::SyntaxWarning"),
]


# ----------------------------------------------------------------------------- the test backend

class Token:
    """A value json.dumps cannot encode, with a deterministic repr."""

    def __init__(self, n: int):
        self.n = n

    def __repr__(self) -> str:
        return f"Token({self.n})"


class Probe:
    """Tools of varied signatures and return types; every call is recorded."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.kept: list[Any] = []

    def _note(self, *entry: Any) -> None:
        self.log.append(repr(entry))

    @tool
    def ls(self, a=False):
        self._note("ls", a)
        return {"current_directory_content": ["x.txt", a]}  # JSON, or str() when `a` is not encodable

    @tool
    def cd(self, folder):
        self._note("cd", folder)
        return {"current_working_directory": folder}

    @tool
    def echo(self, content, file_name=None):
        self._note("echo", content, file_name)
        return None if file_name is not None else content  # any type back

    @tool
    def touch(self, file_name: str):
        self._note("touch", file_name)
        if not isinstance(file_name, str):
            raise TypeError(f"file_name must be str, not {type(file_name).__name__}")

    @tool
    def add(self, a, b=0, *, scale=1):
        self._note("add", a, b, scale)
        return (a, b, scale)

    @tool
    def collect(self, *args, **kwargs):
        self._note("collect", args, kwargs)
        return {"args": list(args), "kwargs": kwargs}

    @tool
    def kwonly(self, *, key, value=None):
        self._note("kwonly", key, value)
        return [key, value]

    @tool
    def fail(self, message="boom"):
        self._note("fail", message)
        raise ValueError(message)

    @tool
    def fail_key(self, key=None):
        self._note("fail_key", key)
        raise KeyError(key)

    @tool
    def opaque(self):
        self._note("opaque")
        return {"token": Token(len(self.log))}

    @tool
    def count(self):
        return len(self.log)

    @tool
    def mutate(self, target=None):
        self._note("mutate", target)
        if isinstance(target, list):
            target.append(len(self.log))  # a literal reused across calls would show this
            self.kept.append(target)
        return target

    @tool
    def describe(self, value=None):
        self._note("describe", value)
        return f"{type(value).__name__}:{value!r}"

    @tool
    def power(self, base, exponent):
        self._note("power", base, exponent)
        if abs(exponent) > 6000:
            raise ValueError("exponent too large")
        return {"result": base**exponent}

    @tool
    def remove(self, path=None):  # a tool whose name is on the reference's denylist
        self._note("remove", path)
        return "removed"

    @tool
    def t(self, x=None):  # one-letter names: the rewrite also hits escapes like '\t('
        self._note("t", x)
        return x

    @tool
    def n(self, *args):
        self._note("n", args)
        return len(args)

    def _secret(self):
        self._note("SECRET")
        return "secret"


class Other:
    """A second involved class; its ``ls`` shadows or is shadowed by Probe's, by order."""

    def __init__(self) -> None:
        self.log: list[str] = []

    @tool
    def ls(self, a=False):
        self.log.append(repr(("ls", a)))
        return f"other ls {a!r}"

    @tool
    def pwd(self):
        self.log.append("pwd")
        return {"current_working_directory": "/"}


PROBE_TOOLS = ["ls", "cd", "echo", "touch", "add", "collect", "kwonly", "fail", "fail_key", "opaque", "count",
               "mutate", "describe", "power", "remove", "t", "n"]
OTHER_TOOLS = ["ls", "pwd"]
UNKNOWN_CALLEES = ["foo", "mkdir2", "Ls", "lsx", "_secret", "kill", "unlink", "popen", "Popen", "run",
                   "ｌｓ", "lｓ", "ｒｅｍｏｖｅ", "ｋｉｌｌ", "ｆｏｏ"]  # non-ASCII: never tools, see NFKC_CASES
CONSTANT_CALLEES = ["True", "False", "None", "Ｔｒｕｅ"]  # eval: "'bool' object is not callable", after the arguments
ONLY_OUTERMOST = ["exit", "quit"]  # builtins: the reference's denylist is all that keeps them from running
BARE_NAMES = ["nan", "inf", "foo", "undefined", "ls", "cd", "Probe", "x", "null", "true", "NaN", "Infinity",
              "ｎａｎ", "Ｔｒｕｅ", "Ｎｏｎｅ", "ｌｓ"]
KEYWORDS = ["a", "b", "folder", "content", "file_name", "key", "value", "scale", "message", "target", "path",
            "base", "exponent", "x", "zz", "é", "ｆｏｌｄｅｒ", "ｖａｌｕｅ"]
INSTANCE_NAMES = [
    "openai_gpt_oss_120b_eval_multi_turn_base_0_GorillaFileSystem_instance",
    "gpt_4o_2024_11_20_FC_multi_turn_miss_param_17_Probe_instance",
    "claude_3_5_sonnet_20241022_multi_turn_long_context_199_MessageAPI_instance",
    "Probe_instance",
    "Other_instance",
    "m_1_Probe_instance",
]

# Names the reference's eval would resolve (builtins, multi_turn_utils' globals, the
# locals of execute_multi_turn_func_call, instance names) must not be generated as
# unknown names: there the reference reaches things we refuse by design.
REFERENCE_RESOLVES = (set(dir(builtins)) | set(vars(MTU)) | set(MTU.execute_multi_turn_func_call.__code__.co_varnames)
                      | set(INSTANCE_NAMES) | set(keyword.kwlist))


def test_name_pools_are_undefined_in_the_reference_namespace() -> None:
    import unicodedata

    generated = {unicodedata.normalize("NFKC", n) for n in UNKNOWN_CALLEES + BARE_NAMES}
    assert not REFERENCE_RESOLVES & generated - {"True", "None"}
    assert set(ONLY_OUTERMOST) <= set(dir(builtins)) and set(ONLY_OUTERMOST) <= set(REFERENCE_DENYLIST)
    assert [n for n in dir(Probe) if not n.startswith("_")] == sorted(PROBE_TOOLS)  # every public method is a tool


def note(message: str) -> None:
    """Hypothesis' note when running under @given, nothing otherwise."""
    try:
        hypothesis_note(message)
    except InvalidArgument:
        pass


# ----------------------------------------------------------------------------- the oracle

def reference_mapping(instances: list[Any], names: list[str]) -> dict[str, str]:
    """execute_multi_turn_func_call: every public method of each involved instance maps
    to that instance's name, later classes overriding earlier ones."""
    mapping: dict[str, str] = {}
    for instance, instance_name in zip(instances, names):
        for method_name, _ in inspect.getmembers(instance, predicate=inspect.ismethod):
            if method_name.startswith("_"):
                continue
            mapping[method_name] = instance_name
    return mapping


def reference_run(text: str, mapping: dict[str, str], namespace: dict[str, Any]) -> str:
    """The loop body of execute_multi_turn_func_call (multi_turn_utils.py), for one call."""
    func_call = MTU._process_method_calls(text, mapping)
    try:
        func_call_copy = func_call
        if "(" in func_call_copy:
            func_call_copy = func_call_copy.split("(")[0]
        if "." in func_call_copy:
            func_call_copy = func_call_copy.split(".")[1]
        if func_call_copy in REFERENCE_DENYLIST:
            raise Exception(f"Function call {func_call_copy} is not allowed.")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            func_call_result = eval(func_call, namespace)  # noqa: S307 - the oracle, on generated text
        if type(func_call_result) == str:  # noqa: E721 - the reference's exact check
            pass
        elif type(func_call_result) == dict:  # noqa: E721
            try:
                func_call_result = json.dumps(func_call_result)
            except:  # noqa: E722 - the reference's bare except
                func_call_result = str(func_call_result)
        else:
            func_call_result = str(func_call_result)
        return func_call_result
    except Exception as e:  # noqa: BLE001
        return f"Error during execution: {str(e)}"


class Episode:
    """One side's instances, in involved-class order."""

    def __init__(self, probe_first: bool, probe_name: str, other_name: str):
        self.probe, self.other = Probe(), Other()
        pairs = [(self.probe, probe_name), (self.other, other_name)]
        if not probe_first:
            pairs.reverse()
        self.instances = [p[0] for p in pairs]
        self.names = [p[1] for p in pairs]

    def state(self) -> tuple:
        return (list(self.probe.log), list(self.other.log), repr(self.probe.kept))


def reference_side(episode: Episode) -> tuple[dict[str, str], dict[str, Any]]:
    mapping = reference_mapping(episode.instances, episode.names)
    namespace = {"__builtins__": builtins, **dict(zip(episode.names, episode.instances))}
    return mapping, namespace


def compare_steps(texts: list[str], probe_first: bool, probe_name: str, other_name: str) -> None:
    """Run ``texts`` as one step on both sides; compare results and state after each call."""
    ref, ours = Episode(probe_first, probe_name, other_name), Episode(probe_first, probe_name, other_name)
    mapping, namespace = reference_side(ref)
    table = MethodTable(ours.instances, ours.names)
    expected_all = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for index, text in enumerate(texts):
            note(f"call {index}: {text!r}")
            expected = reference_run(text, mapping, namespace)
            expected_all.append(expected)
            assert run_call(text, table) == expected, f"call {index}: {text!r}"
            assert ours.state() == ref.state(), f"side effects differ after call {index}: {text!r}"
        # the same step through run_step, on fresh instances
        again = Episode(probe_first, probe_name, other_name)
        assert run_step(texts, MethodTable(again.instances, again.names)) == expected_all
        assert again.state() == ref.state()


# ----------------------------------------------------------------------------- generated call text

PLAIN_PIECES = ["a", "Z", "0", "9", " ", ".", ",", "=", ")", "[", "]", "{", "}", ":", "-", "#", "_", "\t",
                "é", "日本", "✓", "😀", "\u00a0"]
CALL_PIECES = ["ls(", "cd (", "echo(", "t(", "n(", "kill(", "remove(", "foo(", "x.ls(", "_secret(", "ls\t(",
               "pwd(", "Ls(", "(", "ls", "count()", "fail('x')"]
ESCAPES = ["\\n", "\\t", "\\\\", "\\'", '\\"', "\\x41", "\\u00e9", "\\U0001F600", "\\N{BULLET}", "\\0", "\\d",
           "\\\n", "\\(", "\\nls(", "\\tx("]
QUOTES = ["'", '"', "'''", '"""']
STR_PREFIXES = ["", "", "", "u", "r", "R", "U"]
BYTES_PREFIXES = ["b", "B", "rb", "Rb", "br"]


@st.composite
def string_literal(draw, as_bytes: bool) -> str:
    prefix = draw(st.sampled_from(BYTES_PREFIXES if as_bytes else STR_PREFIXES))
    quote = draw(st.sampled_from(QUOTES))
    other_quote = '"' if quote[0] == "'" else "'"
    pieces = PLAIN_PIECES + CALL_PIECES + ESCAPES + [other_quote] * (len(quote) == 3) + ["\n"] * (len(quote) == 3)
    if as_bytes:
        pieces = [p for p in pieces if p.isascii()]
    body = "".join(draw(st.lists(st.sampled_from(pieces), max_size=6)))
    return f"{prefix}{quote}{body}{quote}"


@st.composite
def string_source(draw) -> str:
    as_bytes = draw(st.integers(0, 5)) == 0
    parts = draw(st.lists(string_literal(as_bytes), min_size=1, max_size=3))
    return draw(st.sampled_from([" ", "", "  "])).join(parts)


@st.composite
def number_source(draw) -> str:
    kind = draw(st.sampled_from(["int", "int", "float", "float", "hex", "oct", "bin", "underscore", "complex",
                                 "signed-constant", "plus"]))
    if kind == "int":
        return str(draw(st.integers(-(10**30), 10**30)))
    if kind == "float":
        return repr(draw(st.floats()))  # nan, inf, -inf render as names: NameError on both sides
    if kind in ("hex", "oct", "bin"):
        return {"hex": hex, "oct": oct, "bin": bin}[kind](draw(st.integers(-(10**9), 10**9)))
    if kind == "underscore":
        return "_".join(str(draw(st.integers(1, 999))) for _ in range(draw(st.integers(2, 3))))
    if kind == "complex":
        return repr(draw(st.floats(min_value=0, max_value=1e300))) + "j"
    if kind == "plus":
        return "+" + str(draw(st.integers(0, 10**6)))
    return draw(st.sampled_from(["-True", "+True", "-False", "-None", "+None", "00", "0_0", "-0", "-0.0"]))


def spaced(draw, *parts: str) -> str:
    return draw(st.sampled_from(["", " ", "\n    "])).join(parts)


@st.composite
def value_source(draw, depth: int = 0) -> str:
    leaves = ["number", "number", "string", "string", "constant", "name"]
    branches = ["list", "tuple", "set", "dict", "parenthesised", "call", "call"]
    kind = draw(st.sampled_from(leaves + (branches if depth < 3 else [])))
    if kind == "number":
        return draw(number_source())
    if kind == "string":
        return draw(string_source())
    if kind == "constant":
        return draw(st.sampled_from(["True", "False", "None"]))
    if kind == "name":
        return draw(st.sampled_from(BARE_NAMES))
    if kind == "call":
        return draw(call_source(depth + 1, outermost=False))
    items = draw(st.lists(value_source(depth + 1), max_size=3))
    sep = draw(st.sampled_from([", ", ",", ",\n  "]))
    if kind == "list":
        return "[" + sep.join(items) + draw(st.sampled_from(["", ","])) * bool(items) + "]"
    if kind == "tuple":
        if len(items) == 1:
            return "(" + items[0] + ",)"
        return "(" + sep.join(items) + ")"
    if kind == "set":
        # At most two elements: three or more constants are a known gap (see
        # test_constant_set_displays_of_three_elements_known_gap).
        return "{" + sep.join((items or ["1"])[:2]) + "}"
    if kind == "parenthesised":
        return "(" + draw(value_source(depth + 1)) + ")"
    keys = draw(st.lists(value_source(depth + 1), max_size=len(items)))
    return "{" + sep.join(f"{k}{draw(st.sampled_from([': ', ':']))}{v}" for k, v in zip(keys, items)) + "}"


@st.composite
def call_source(draw, depth: int = 0, outermost: bool = True) -> str:
    pool = PROBE_TOOLS + OTHER_TOOLS + UNKNOWN_CALLEES + CONSTANT_CALLEES
    name = draw(st.sampled_from(pool + (ONLY_OUTERMOST if outermost else [])))
    positional = draw(st.lists(value_source(depth), max_size=2 if depth < 2 else 1))
    keywords = draw(st.lists(st.sampled_from(KEYWORDS), max_size=3 if depth < 2 else 1, unique=True))
    args = positional + [spaced(draw, k, "=", draw(value_source(depth))) for k in keywords]
    gap = draw(st.sampled_from(["", "", " "]))
    inner = draw(st.sampled_from([", ", ",", " , ", ",\n    "])).join(args)
    trailing = draw(st.sampled_from(["", ","])) if args else ""
    return f"{name}{gap}({inner}{trailing})"


@st.composite
def call_text(draw) -> str:
    call = draw(call_source())
    name = call.split("(")[0].strip()  # before any lead is added
    leads = ["", "", "", " ", "  ", "\t", " \t", "\n",
             # a leading comment is part of what the reference tests against its denylist
             "# note\n", "# remove(\n", "#kill (\n", "# ls(\n  "]
    lead = "" if name in ONLY_OUTERMOST else draw(st.sampled_from(leads))
    tail = draw(st.sampled_from(["", "", " ", "\n", "  # trailing ls( comment", "  # kill()"]))
    return lead + call + tail


@st.composite
def episode_setup(draw) -> tuple[bool, str, str]:
    probe_name, other_name = draw(st.lists(st.sampled_from(INSTANCE_NAMES), min_size=2, max_size=2, unique=True))
    return draw(st.booleans()), probe_name, other_name


# ----------------------------------------------------------------------------- properties: text

@given(st.lists(call_text(), min_size=1, max_size=4), episode_setup())
@example(["echo(content='run ls(now) then cd (x)')"], (True, INSTANCE_NAMES[0], INSTANCE_NAMES[1]))
@example(["\nls(a=0,\n    \uff56\uff41\uff4c\uff55\uff45=0,\n    value=True)"],  # line of a repeat after blank lines
         (False, INSTANCE_NAMES[0], INSTANCE_NAMES[1]))
@example(["echo(content='tab\\t(x) and nl\\n(y)')"], (True, INSTANCE_NAMES[0], INSTANCE_NAMES[1]))
@example(["echo(content='''ls\n(x)''')"], (False, INSTANCE_NAMES[0], INSTANCE_NAMES[1]))
@example(["echo(content=b'ls(' b'x')"], (True, INSTANCE_NAMES[2], INSTANCE_NAMES[3]))
@example(["kill()", " kill()", "remove(path='a')", " remove(path='a')", "\nremove(path='a')",
          "ls(a=remove(path='b'))", "exit()", "quit(0)"], (True, INSTANCE_NAMES[0], INSTANCE_NAMES[1]))
@example(["mutate(target=[1])", "mutate(target=[1])", "mutate(target=([1], 2))"],
         (True, INSTANCE_NAMES[0], INSTANCE_NAMES[1]))
@example(["echo(content=ls(a={1: 2}), file_name=cd(folder='x'))", "foo(ls())", "ls(a={[]: ls()})",
          "ls(a={1, {}})", "ls(a={'k': cd(folder=nan)})"], (False, INSTANCE_NAMES[1], INSTANCE_NAMES[0]))
@example(["power(base=10, exponent=5000)", "power(base=2.5, exponent=5000)", "power(base=0, exponent=-1)"],
         (True, INSTANCE_NAMES[0], INSTANCE_NAMES[1]))
@example(["# remove(\nls()", "# kill(\nls()", "# x\nkill()", "#ls (\n remove(path='p')"],
         (True, INSTANCE_NAMES[0], INSTANCE_NAMES[1]))
@example(["True()", "None(ls(a=1))", "False(1, a=cd(folder='x'))", "ls(a=True())", "kill ()", "kill\t()",
          " kill ()", "remove (path='x')", "foo (a=1)"], (True, INSTANCE_NAMES[0], INSTANCE_NAMES[1]))
@example(["describe(value=-True)", "describe(value=-None)", "describe(value=-0.0)", "describe(value=0x1F)",
          "describe(value=1_000)", "describe(value=-inf)", "describe(value=(1))", "describe(value=())"],
         (True, INSTANCE_NAMES[0], INSTANCE_NAMES[1]))
@example(["add(1, 2, 3)", "add(b=1)", "add(1, scale=2, zz=3)", "kwonly(1)", "kwonly(value=1)", "collect()",
          "collect(1, [2], k={3: (4,)})", "touch(file_name=1)", "fail()", "fail_key(key='k')", "fail_key()",
          "opaque()", "count()", "n(1, 2)", "_secret()", "pwd()", "ls()", "ls(é=1)"],
         (False, INSTANCE_NAMES[0], INSTANCE_NAMES[1]))
@example(["ls(ls(ｆｏｌｄｅｒ=0, folder=0), value=0, a=0, ｖａｌｕｅ=0)", "ls(a=1, b=2, b=3, a=4)",
          "ls(a=1,\nb=cd(c=1, c=2), b=2)", "ls(a='\x00')", "not()", "not(ls())", "not(1, 2)", "not(ls)",
          "not ls()", "not(cd(folder='x'))"], (True, INSTANCE_NAMES[0], INSTANCE_NAMES[1]))
def test_text_calls_agree_with_reference_eval(texts: list[str], setup: tuple[bool, str, str]) -> None:
    compare_steps(texts, *setup)


# ----------------------------------------------------------------------------- properties: FC

FC_NAMES = PROBE_TOOLS + OTHER_TOOLS + ["foo", "_secret", "kill", "remove", "run", "exit", "quit", " ls", " kill",
                                        "ls ", "class", "a b", "1ls", "None", "True"]
FC_KEYS = KEYWORDS + ["class", "lambda", "None", "True", "a b", "1a", "a-b", "", "ｆｏｌｄｅｒ", "ｃｏｎｔｅｎｔ",
                      "a.b", "a=1"]
FC_STRING_PIECES = PLAIN_PIECES + CALL_PIECES + ["'", '"', "\\", "\n", "\x00", "\\n"]

fc_strings = st.lists(st.sampled_from(FC_STRING_PIECES), max_size=6).map("".join)
fc_leaves = (st.none() | st.booleans() | st.integers(-(10**20), 10**20) | st.floats() | fc_strings)
fc_values = st.recursive(
    fc_leaves,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(fc_strings, children, max_size=3),
    max_leaves=8,
)


@pytest.mark.xfail(strict=True, reason=(
    "known gap: CPython folds a set display of three or more constants into a frozenset "
    "constant at compile time, which can iterate in another order than the set built "
    "element by element; bfcl-safe builds it element by element"))
def test_constant_set_displays_of_three_elements_known_gap() -> None:
    compare_steps(["ls({True, 89, 0})"], False, INSTANCE_NAMES[0], INSTANCE_NAMES[1])


@st.composite
def fc_step(draw) -> list[dict[str, dict[str, Any]]]:
    calls = []
    for _ in range(draw(st.integers(1, 3))):
        name = draw(st.sampled_from(FC_NAMES))
        arguments = draw(st.dictionaries(st.sampled_from(FC_KEYS), fc_values, max_size=3))
        calls.append({name: arguments})
    return calls


@given(fc_step(), episode_setup())
@example([{"ls": {"a": float("nan")}}, {"ls": {"a": float("inf")}}, {"ls": {"a": [1, float("-inf")]}}],
         (True, INSTANCE_NAMES[0], INSTANCE_NAMES[1]))
@example([{"echo": {"content": "now ls( and cd (x)"}}, {"echo": {"content": {"k": "t(1)"}}}],
         (True, INSTANCE_NAMES[0], INSTANCE_NAMES[1]))
@example([{"cd": {"ｆｏｌｄｅｒ": "x"}}, {"cd": {"ｆｏｌｄｅｒ": "x", "folder": "y"}}, {"ls": {"class": 1}},
          {"ls": {"a b": 1}}, {"ls": {"": 1}}, {"ls": {"a.b": 1}}, {"ls": {"None": 1}}],
         (False, INSTANCE_NAMES[1], INSTANCE_NAMES[0]))
@example([{"kill": {}}, {" kill": {}}, {"remove": {"path": "x"}}, {"exit": {"a": 1}}, {"_secret": {}}],
         (True, INSTANCE_NAMES[0], INSTANCE_NAMES[1]))
@example([{"describe": {"value": -0.0}}, {"describe": {"value": 1e16}}, {"describe": {"value": True}}],
         (True, INSTANCE_NAMES[0], INSTANCE_NAMES[1]))
def test_fc_calls_agree_with_reference_eval(step: list[dict[str, dict[str, Any]]],
                                            setup: tuple[bool, str, str]) -> None:
    probe_first, probe_name, other_name = setup
    ref, ours = Episode(probe_first, probe_name, other_name), Episode(probe_first, probe_name, other_name)
    mapping = reference_mapping(ref.instances, ref.names)
    namespace = {"__builtins__": builtins, **dict(zip(ref.names, ref.instances))}
    table = MethodTable(ours.instances, ours.names)
    for index, call in enumerate(step):
        text = convert_to_function_call([call])[0]
        note(f"call {index}: {call!r} -> {text!r}")
        expected = reference_run(text, mapping, namespace)
        (name, arguments), = call.items()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = run_call(fc_call(name, arguments), table)
        assert got == expected, f"call {index}: {text!r}"
        assert ours.state() == ref.state(), f"side effects differ after call {index}: {text!r}"


# ----------------------------------------------------------------------------- NFKC identifiers

# CPython NFKC-normalises identifiers, but the reference's prefix regex only matches
# ASCII names: a non-ASCII callee is never a tool, and eval looks up its NFKC form.
# (Found by this file; fixed in cst_front._call / _name and MethodTable.lookup.)
NFKC_CASES = [
    ("fullwidth-callee", "ｌｓ()"),
    ("mixed-width-callee", "lｓ(a=1)"),
    ("fullwidth-nested-callee", "echo(content=ｃｄ(folder='x'))"),
    ("fullwidth-constant-callee", "Ｔｒｕｅ(ls())"),
    ("fullwidth-true", "describe(value=Ｔｒｕｅ)"),
    ("fullwidth-minus-true", "describe(value=-Ｔｒｕｅ)"),
    ("fullwidth-none", "describe(value=Ｎｏｎｅ)"),
    ("fullwidth-name", "describe(value=ｎａｎ)"),
    ("fullwidth-keyword", "describe(ｖａｌｕｅ=1)"),
    ("fullwidth-denylisted", "ｋｉｌｌ()"),
    ("fullwidth-denylisted-tool", "ｒｅｍｏｖｅ(path='x')"),
]


@pytest.mark.parametrize("text", [pytest.param(t, id=i) for i, t in NFKC_CASES])
def test_nfkc_identifiers_agree_with_reference(text: str) -> None:
    compare_steps([text], True, INSTANCE_NAMES[0], INSTANCE_NAMES[1])


# Every compatibility form: each ASCII letter, digit or underscore of a name may be
# written as any character NFKC maps to it (fullwidth, mathematical alphanumerics,
# superscripts and subscripts, circled/parenthesised letters, ligatures like 'ﬁ' for two
# letters, ...). Also pieces NFKC maps to non-identifier text ('½', '①', '㍱'), and names
# that normalise to keywords ('ｃｌａｓｓ', 'ｎｏｔ') or constants.
@lru_cache(maxsize=None)
def compatibility_forms() -> dict[str, tuple[str, ...]]:
    """``{ascii text: characters whose NFKC form it is}`` for letters, digits, '_' and
    two-letter ligatures; computed once over every code point."""
    import unicodedata

    forms: dict[str, list[str]] = {}
    for code in range(0x80, 0x110000):
        char = chr(code)
        folded = unicodedata.normalize("NFKC", char)
        if folded != char and folded.isascii() and 0 < len(folded) <= 2 and (folded.isalnum() or folded == "_"):
            forms.setdefault(folded, []).append(char)
    return {key: tuple(chars) for key, chars in forms.items()}


NON_IDENTIFIER_FOLDS = ["½", "①", "㍱", "ⅷ", "℃", "™", "…", "ﹰ", "゛"]


@st.composite
def compatibility_name(draw, name: str) -> str:
    forms = compatibility_forms()
    out, index = [], 0
    while index < len(name):
        pair = name[index:index + 2]
        if len(pair) == 2 and pair in forms and draw(st.integers(0, 4)) == 0:
            out.append(draw(st.sampled_from(forms[pair])))
            index += 2
            continue
        char = name[index]
        if char in forms and draw(st.booleans()):
            out.append(draw(st.sampled_from(forms[char])))
        else:
            out.append(char)
        index += 1
    if draw(st.integers(0, 9)) == 0:
        out.insert(draw(st.integers(0, len(out))), draw(st.sampled_from(NON_IDENTIFIER_FOLDS)))
    return "".join(out)


NFKC_TARGETS = PROBE_TOOLS + OTHER_TOOLS + ["len", "str", "exec", "class", "not", "if", "None", "True"]


@st.composite
def compatibility_call(draw) -> str:
    callee = draw(compatibility_name(draw(st.sampled_from(NFKC_TARGETS))))
    keywords = draw(st.lists(st.sampled_from(KEYWORDS[:14] + ["class", "lambda", "None"]), max_size=2, unique=True))
    args = []
    for key in keywords:
        value = draw(st.one_of(st.sampled_from(["1", "'x'", "None", "[1]"]),
                               st.sampled_from(["nan", "ls", "foo", "True", "None", "not", "x"])
                               .flatmap(compatibility_name)))
        args.append(f"{draw(compatibility_name(key))}={value}")
    return f"{callee}({', '.join(args)})"


@given(st.lists(compatibility_call(), min_size=1, max_size=3), episode_setup())
@example(["ｔｏｕｃｈ(ﬁle_name='x')", "touch(ﬁle_name='x')", "ls(ᵃ=1)", "𝐥𝐬(a=1)", "ls(𝐚=𝐓𝐫𝐮𝐞)", "ls(ｃｌａｓｓ=1)",
          "ls(a=ｎｏｔ)", "𝐥𝐞𝐧('ab')", "ｅｘｅｃ()", "ls(a½=1)"], (True, INSTANCE_NAMES[0], INSTANCE_NAMES[1]))
def test_identifiers_in_every_compatibility_form_agree_with_reference(texts: list[str],
                                                                      setup: tuple[bool, str, str]) -> None:
    compare_steps(texts, *setup)


# Pure builtins and operators over tool results and literals, in the reference's own
# loop (the builtins themselves are fuzzed against eval in tests/test_builtins.py).
BUILTIN_STEPS = [
    ("len-of-tool-result", ["len(ls())", "len(cd(folder='abc'))", "ls(a=len('abc'))"]),
    ("str-and-repr-of-tool-results", ["str(cd(folder='x'))", "repr(echo(content=[1, 'a']))", "str(count())"]),
    ("sorted-max-min", ["sorted(echo(content=[3, 1, 2]))",
                        "max(n(1, 2), 5)", "min(echo(content='bca'))"]),
    ("builtin-errors-after-tools-ran", ["len(count())", "ls(a=len(5))", "max()", "sorted(ls(), key=1)"]),
    ("operators-on-tool-results", ["echo(content=count() + 1)", "echo(content=ls() | {'b': 2})",
                                   "echo(content=echo(content='ab') * 3)", "echo(content='%s!' % cd(folder='y'))",
                                   "echo(content=ls() + 1)", "echo(content=-count())", "echo(content=not ls())"]),
    ("refused-builtins", ["exec()", "exec(source=ls())", "eval(count())", "open()", "getattr(count(), 5)",
                          "ｅｘｅｃ(cmd=['bash'])"]),
    ("dict-union-of-calls", ["echo(content={'ls': {'a': 1}} | {'cd': {'folder': 'x'}})"]),
    ("subscripts-of-tool-results", ["cd(folder=ls()['current_directory_content'][0])", "echo(content=ls()['x'])",
                                    "echo(content=echo(content='abcdef')[1:5:2])", "echo(content=[1, 2][5])",
                                    "echo(content=cd(folder='a')[0])", "echo(content={}[1:2])",
                                    "echo(content=(1, 2)[0:1, 2])", "echo(content='abc'[::-1])"]),
    ("comparisons", ["echo(content=1 < count() < 3)", "echo(content='x.txt' in ls()['current_directory_content'])",
                     "echo(content=ls() == ls())", "echo(content=None is None)", "echo(content=count() is not None)",
                     "echo(content=1 < 'a')", "echo(content=[1] < [1, 2] <= [2])"]),
    ("short-circuits-run-only-what-python-runs", ["echo(content=count() and ls())", "echo(content=0 and ls())",
                                                  "echo(content=ls() or cd(folder='x'))", "echo(content=0 or fail())",
                                                  "echo(content=ls() if count() else cd(folder='y'))",
                                                  "echo(content=1 > 2 > fail())", "echo(content=not count())"]),
]


@pytest.mark.parametrize("texts", [pytest.param(t, id=i) for i, t in BUILTIN_STEPS])
def test_builtins_over_tool_results_agree_with_reference(texts: list[str]) -> None:
    compare_steps(texts, True, INSTANCE_NAMES[0], INSTANCE_NAMES[1])
