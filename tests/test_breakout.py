"""Hostile input: nothing a model writes runs, hangs, crashes the scorer, or exhausts memory.

Every payload goes through the public entry points (``run_call``, ``run_step``,
``fc_call``) on a small backend whose private, unmarked and denylisted methods would
leave a file in a canary folder if they ever ran; the payloads themselves try to
create files there too. Each case must give an error result string (or, for a
harmless string that merely *looks* like code, the correct result), leave the canary
folder empty, and finish within a generous wall-clock bound (a thread with a
timeout, not a micro-benchmark).

Payloads that nest deeply run in a child process: a native parser that overflows
its stack kills the process (SIGSEGV), which no thread or ``except`` can catch.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from bfcl_safe.interp import ERROR_PREFIX, MethodTable, RejectedInput, fc_call, limits, parse_call, run_call, run_step, tool
from bfcl_safe.interp.errors import BudgetExceeded

ROOT = Path(__file__).resolve().parent.parent
WALL_CLOCK_LIMIT = 10.0  # seconds; generous on purpose — a hang or a blow-up takes far longer
INSTANCE = "openai_gpt_oss_120b_eval_multi_turn_base_0_Vault_instance"


class Vault:
    """A test backend: two tools, and methods a model must never reach."""

    def __init__(self, canary: Path | None = None):
        self._canary = canary
        self.calls: list[tuple[str, Any]] = []

    def _touch(self, name: str) -> None:
        if self._canary is not None:
            (self._canary / name).write_text("ran")

    @tool
    def ls(self, a: Any = None) -> dict:
        self.calls.append(("ls", a))
        return {"a": repr(a)}

    @tool
    def echo(self, content: Any = "") -> Any:
        self.calls.append(("echo", content))
        return content

    @tool
    def kill(self) -> None:  # marked, but on the reference's denylist: never runs
        self._touch("kill")

    def unmarked(self) -> None:  # public but not a tool
        self._touch("unmarked")

    def _private(self) -> None:
        self._touch("private")

    def _load_scenario(self, config: Any, long_context: bool = False) -> None:
        self._touch("load_scenario")


def guarded(fn: Callable[[], Any], timeout: float = WALL_CLOCK_LIMIT) -> Any:
    """Run ``fn`` in a thread; fail if it takes longer than ``timeout`` seconds."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test thread
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), f"did not finish within {timeout} s"
    if "error" in box:
        raise box["error"]
    return box["value"]


@pytest.fixture
def canary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "canary"
    folder.mkdir()
    monkeypatch.chdir(folder)  # relative paths in payloads land here too
    return folder


@pytest.fixture
def vault(canary: Path) -> Vault:
    return Vault(canary)


@pytest.fixture
def table(vault: Vault) -> MethodTable:
    return MethodTable([vault], [INSTANCE])


def assert_error(result: Any, pattern: str = "") -> None:
    import re

    assert isinstance(result, str), result
    assert result.startswith(ERROR_PREFIX), result[:300]
    if pattern:
        assert re.search(pattern, result), result[:300]


def assert_nothing_ran(canary: Path, vault: Vault) -> None:
    assert sorted(p.name for p in canary.iterdir()) == []
    assert vault.calls == []


# ----------------------------------------------------------------------------- text payloads

T = "{canary}"  # payloads try to create files in the canary folder
TEXT_PAYLOADS = [
    # (id, text, pattern the error result must match)
    ("import-system", f"__import__('os').system('touch {T}/import')", r"dunder|attribute"),
    ("import-system-in-argument", f"ls(a=__import__('os').system('touch {T}/import'))", r"dunder|attribute"),
    ("class-bases", "().__class__.__bases__", r"function call|dunder|attribute"),
    ("subclasses", "().__class__.__base__.__subclasses__()", r"plain names|dunder|attribute"),
    ("subclasses-in-argument", "ls(a=[].__class__.__mro__[1].__subclasses__())", r"dunder|attribute|subscript"),
    ("load-scenario", "_load_scenario({})", r"name '_load_scenario' is not defined"),
    ("load-scenario-kw", "_load_scenario(config={'x': 1}, long_context=True)", r"name '_load_scenario' is not defined"),
    ("private", "_private()", r"name '_private' is not defined"),
    ("unmarked-public", "unmarked()", r"name 'unmarked' is not defined"),
    ("init", "__init__()", r"dunder"),
    ("init-with-args", "__init__(canary='/')", r"dunder"),
    ("globals", "globals()", r"name 'globals' is not defined"),
    ("locals", "locals()", r"name 'locals' is not defined"),
    ("vars", "vars()", r"name 'vars' is not defined"),
    # (``ls`` as a value is undefined, as under eval, before getattr could run)
    ("getattr", "getattr(ls, '__globals__')", r"name 'ls' is not defined"),
    ("getattr-on-literal", "getattr(1, '__class__')", r"name 'getattr' is not defined"),
    ("open", f"open('{T}/open', 'w')", r"name 'open' is not defined"),
    ("open-relative", "open('open', 'w')", r"name 'open' is not defined"),
    ("exec", f"exec(\"open('{T}/exec', 'w')\")", r"name 'exec' is not defined"),
    ("eval", f"eval(\"open('{T}/eval', 'w')\")", r"name 'eval' is not defined"),
    ("compile", "compile('1', 'x', 'eval')", r"name 'compile' is not defined"),
    ("breakpoint", "breakpoint()", r"name 'breakpoint' is not defined"),
    ("input", "input()", r"name 'input' is not defined"),
    ("print", "print('x')", r"name 'print' is not defined"),
    ("exec-nested", f"ls(a=exec(\"open('{T}/exec', 'w')\"))", r"name 'exec' is not defined"),
    ("fullwidth-exec", f"ｅｘｅｃ(\"open('{T}/exec', 'w')\")", r"name 'exec' is not defined"),
    ("fullwidth-dunder", f"＿＿import__('os').system('touch {T}/import')", r""),
    ("power-tower", "9**9**9**9", r"function call|binary operator"),
    ("lambda-call", f"(lambda: __import__('os').system('touch {T}/lambda'))()", r"lambda|plain names"),
    ("lambda-argument", "ls(a=lambda: 1)", r"lambda"),
    ("lambda-applied", "ls(a=(lambda f: f)(1))", r"lambda|plain names"),
    ("lambda-default", f"ls(a=(lambda x=__import__('os'): x)())", r"lambda|plain names|dunder"),
    ("generator-frame", "ls(a=(x for x in ()).gi_frame.f_globals)", r"attribute|generator"),
    ("generator-argument", "ls(x for x in ())", r"generator"),
    ("comprehension-escape", "ls(a=[c for c in ().__class__.__base__.__subclasses__()])", r"comprehension"),
    ("method-globals", "ls(a=ls.__globals__)", r"attribute|dunder"),
    ("tool-as-value", "ls(a=ls)", r"name 'ls' is not defined"),
    ("self-as-value", "ls(a=self)", r"name 'self' is not defined"),
    ("class-as-value", "ls(a=Vault)", r"name 'Vault' is not defined"),
    ("instance-as-value", f"ls(a={INSTANCE})", rf"name '{INSTANCE}' is not defined"),
    ("instance-attribute", f"{INSTANCE}._private()", r"attribute"),
    ("instance-load-scenario", f"{INSTANCE}._load_scenario({{}})", r"attribute"),
    ("builtins", "ls(a=__builtins__)", r"dunder"),
    ("double-star-import", "ls(**{'a': __import__('os')})", r"'\*\*'|dunder"),
    ("double-star-name", "ls(**globals())", r"'\*\*'"),
    ("double-star-in-dict", "ls(a={**globals()})", r"'\*\*'"),
    ("star-args", "ls(*[__import__('os')])", r"'\*'|dunder"),
    ("walrus", "ls(a=(x := __import__('os')))", r"assignment expression|dunder"),
    ("f-string", f"ls(a=f'{{__import__(\"os\").system(\"touch {T}/fstring\")}}')", r"f-string"),
    ("format-method", "ls(a='{0.__class__}'.format(1))", r"attribute"),
    ("conditional", f"ls(a=__import__('os') if 1 else 0)", r"conditional|dunder"),
    ("boolean-or", f"ls() or __import__('os').system('touch {T}/or')", r"boolean operator|function call"),
    ("statement-separator", f"ls(); __import__('os').system('touch {T}/semicolon')", r"syntax"),
    ("newline-statement", f"ls()\n__import__('os').system('touch {T}/newline')", r"syntax"),
    ("import-statement", "import os", r"syntax"),
    ("class-statement", "class X: pass", r"syntax"),
    ("denylist-kill", "kill()", r"Function call kill is not allowed\."),
    ("denylist-exit", "exit()", r"Function call exit is not allowed\."),
    ("denylist-quit", "quit(1)", r"Function call quit is not allowed\."),
    ("denylist-remove", "remove(path='x')", r"Function call remove is not allowed\."),
    ("denylist-popen", "popen('touch x')", r"Function call popen is not allowed\."),
    ("exit-nested", "ls(a=exit())", r"name 'exit' is not defined"),
    ("huge-name", "a" * 2_000_000 + "()", r"longer than"),
    ("huge-int", "ls(a=" + "9" * 100_000 + ")", r"digits|integer|invalid syntax"),
]


@pytest.mark.parametrize("text, pattern", [pytest.param(t, p, id=i) for i, t, p in TEXT_PAYLOADS])
def test_text_payload_is_refused(text: str, pattern: str, canary: Path, vault: Vault, table: MethodTable) -> None:
    text = text.replace(T, str(canary))
    result = guarded(lambda: run_call(text, table))
    assert_error(result, pattern)
    assert_nothing_ran(canary, vault)


# Computations whose result would exhaust memory or time are refused before computing:
# BudgetExceeded propagates (the entry fails with the resource-limit error type); it is
# never a result string, and no tool runs.
BUDGET_PAYLOADS = [
    ("pow", "pow(9, 10**9)", "computed_int_digits"),
    ("pow-plain", "pow(9, 1000000000)", "computed_int_digits"),
    ("power-in-argument", "ls(a=9**9**9)", "computed_int_digits"),
    ("shift", "ls(a=1 << 10**10)", "computed_int_digits"),
    ("round-negative-digits", "ls(a=round(5, -10**9))", "computed_int_digits"),
    ("string-repeat", "ls(a='x' * 10**10)", "computed_size"),
    ("list-repeat", "ls(a=[0] * 10**10)", "computed_size"),
    ("nested-repeat", "ls(a=[[0] * 10**4] * 10**4)", "computed_size"),
    ("percent-width", "ls(a='%1900000000d' % 1)", "computed_size"),
    ("percent-star-width", "ls(a='%*d' % (1900000000, 1))", "computed_size"),
    ("percent-precision", "ls(a='%.2000000000d' % 1)", "computed_size"),
    ("percent-bytes", "ls(a=b'%1900000000d' % 1)", "computed_size"),
    ("format-width", "ls(a=format(1, '1900000000d'))", "computed_size"),
    ("format-precision", "ls(a=format(1.5, '.1900000000f'))", "computed_size"),
    ("str-of-repeat", "ls(a=str([[0] * 4000] * 4000))", "computed_size"),
    ("sum-of-lists", "ls(a=sum([[0] * 1000] * 10000, []))", "computed_size"),
    ("repeat-then-concatenate", "ls(a='x' * 6000000 + 'y' * 6000000)", "computed_size"),
    ("repeat-after-tool", "echo(content=echo(content='xy') * 10**9)", "computed_size"),
]


@pytest.mark.parametrize("text, kind", [pytest.param(t, k, id=i) for i, t, k in BUDGET_PAYLOADS])
def test_oversized_computation_is_refused_before_computing(text: str, kind: str, canary: Path, vault: Vault,
                                                           table: MethodTable) -> None:
    with pytest.raises(BudgetExceeded) as info:
        guarded(lambda: run_call(text, table))
    assert info.value.budget == kind
    assert [c for c in vault.calls if c[0] != "echo"] == []  # the outer tool never ran
    assert sorted(canary.iterdir()) == []


def test_budget_exceeded_from_a_tool_propagates(canary: Path, table: MethodTable) -> None:
    class Greedy:
        @tool
        def grow(self):
            raise BudgetExceeded("computed_size", 1, 2)

    with pytest.raises(BudgetExceeded):
        run_call("grow()", MethodTable([Greedy()]))
    with pytest.raises(BudgetExceeded):
        run_step([fc_call("grow", {})], MethodTable([Greedy()]))


# Strings that merely look like code are data: the tool gets them verbatim.
HARMLESS = [
    ("code-in-string", f"echo(content=\"__import__('os').system('touch {T}/x')\")",
     f"__import__('os').system('touch {T}/x')"),
    ("quote-breaking-attempt", "echo(content=\"'); __import__('os'); ('\")", "'); __import__('os'); ('"),
    ("escaped-dunder", r"echo(content='\x5f\x5fimport\x5f\x5f')", "__import__"),
    ("comment-after-call", f"echo(content='x')  # ; __import__('os').system('touch {T}/x')", "x"),
    ("nul-and-controls", r"echo(content='\x00\x1b[31m\r\n')", "\x00\x1b[31m\r\n"),
    ("denylist-word-in-string", "echo(content='kill exit quit')", "kill exit quit"),
]


@pytest.mark.parametrize("text, expected", [pytest.param(t, e, id=i) for i, t, e in HARMLESS])
def test_harmless_text_gives_the_correct_result(text: str, expected: str, canary: Path, vault: Vault,
                                                table: MethodTable) -> None:
    text, expected = text.replace(T, str(canary)), expected.replace(T, str(canary))
    result = guarded(lambda: run_call(text, table))
    assert result == expected
    assert vault.calls == [("echo", expected)]
    assert sorted(canary.iterdir()) == []


def test_code_in_a_string_is_rewritten_like_the_reference_but_never_run(canary: Path, vault: Vault,
                                                                         table: MethodTable) -> None:
    # The reference prefixes every tool name followed by "(" -- inside strings too.
    result = guarded(lambda: run_call("echo(content='ls(a=1); kill()')", table))
    assert result == f"{INSTANCE}.ls(a=1); {INSTANCE}.kill()"
    assert vault.calls == [("echo", result)]
    assert sorted(canary.iterdir()) == []


# ----------------------------------------------------------------------------- FC payloads

FC_PAYLOADS = [
    # (id, name, arguments, pattern)
    ("code-as-name", f"__import__('os').system('touch {T}/fc') or ls", {}, r""),
    ("call-chain-as-name", f"ls(a=1) or __import__('os').system('touch {T}/fc') or ls", {}, r""),
    ("code-in-key", "ls", {f"a=__import__('os').system('touch {T}/fc'),b": 1}, r""),
    ("closing-key", "ls", {f"a=1)or __import__('os').system('touch {T}/fc')or ls(b": 2}, r""),
    ("double-star-key", "ls", {"**{'a': __import__('os')}": 1}, r""),
    ("dunder-name", "__init__", {}, r"dunder"),
    ("dunder-key", "ls", {"__class__": 1}, r"dunder|unexpected keyword"),
    ("load-scenario", "_load_scenario", {"config": {}}, r"name '_load_scenario' is not defined"),
    ("private", "_private", {}, r"name '_private' is not defined"),
    ("unmarked", "unmarked", {}, r"name 'unmarked' is not defined"),
    # exec's argument parsing fails before it runs anything: CPython's text, as in the reference
    ("exec", "exec", {"source": f"open('{T}/fc', 'w')"}, r"exec\(\) takes at least 1 positional argument \(0 given\)"),
    ("exec-positional-text", "exec", {"closure": None}, r"exec\(\) takes at least 1 positional argument"),
    ("open", "open", {"file": f"{T}/fc", "mode": "w"}, r"name 'open' is not defined"),
    ("denylist", "kill", {}, r"Function call kill is not allowed\."),
    ("huge-int", "ls", {"a": 10**5000}, r"digits|integer"),
    ("huge-int-bad-key", "ls", {"a b": 10**5000}, r""),
    ("arguments-list", "ls", [1, 2], r"must be an object"),
    ("arguments-string", "ls", '{"a": 1}', r"must be an object"),
    ("arguments-none", "ls", None, r"must be an object"),
    ("arguments-list-of-names", "ls", ["a"], r"must be an object"),
]
# Known failures, kept visible as strict xfails (a fix makes them fail until the marker
# goes). arguments-none / arguments-list-of-names raised TypeError / AttributeError out of
# fc_call until it checked for a mapping first.
FC_KNOWN_FAILURES: dict[str, Any] = {}


@pytest.mark.parametrize("name, arguments, pattern", [
    pytest.param(n, a, p, id=i, marks=FC_KNOWN_FAILURES.get(i, ())) for i, n, a, p in FC_PAYLOADS
])
def test_fc_payload_is_refused(name: str, arguments: Any, pattern: str, canary: Path, vault: Vault,
                               table: MethodTable) -> None:
    name = name.replace(T, str(canary))
    if isinstance(arguments, dict):
        arguments = {k.replace(T, str(canary)): v.replace(T, str(canary)) if isinstance(v, str) else v
                     for k, v in arguments.items()}

    def go() -> str:
        try:
            call = fc_call(name, arguments)
        except RejectedInput as exc:  # a clean refusal at decoding is fine too
            call = exc
        return run_call(call, table)

    result = guarded(go)
    assert_error(result, pattern)
    assert_nothing_ran(canary, vault)


def test_fc_key_with_a_comment_runs_like_the_reference(canary: Path, vault: Vault, table: MethodTable) -> None:
    # The reference builds "ls(a=1)#=2)" and eval runs ls(a=1): a comment, not code.
    result = guarded(lambda: run_call(fc_call("ls", {"a=1)#": 2}), table))
    assert result == '{"a": "1"}'
    assert vault.calls == [("ls", 1)]
    assert sorted(canary.iterdir()) == []


def test_fc_code_in_string_value_is_data(canary: Path, vault: Vault, table: MethodTable) -> None:
    payload = f"__import__('os').system('touch {canary}/fc')"
    result = guarded(lambda: run_call(fc_call("echo", {"content": payload}), table))
    assert result == payload
    assert vault.calls == [("echo", payload)]
    assert sorted(canary.iterdir()) == []


def test_fc_many_elements(canary: Path, vault: Vault, table: MethodTable) -> None:
    result = guarded(lambda: run_call(fc_call("ls", {"a": [0] * (limits.MAX_LITERAL_ELEMENTS + 1)}), table))
    assert_error(result, r"elements")
    assert_nothing_ran(canary, vault)


# ----------------------------------------------------------------------------- many calls in one step

def test_fifty_thousand_calls_in_one_step(canary: Path, vault: Vault, table: MethodTable) -> None:
    results = guarded(lambda: run_step(["ls()"] * 50_000, table))
    assert len(results) == 50_000
    ran = limits.MAX_CALLS_PER_STEP
    assert results[:ran] == ['{"a": "None"}'] * ran
    for result in results[ran:]:
        assert_error(result, r"calls in one step")
    assert len(vault.calls) == ran
    assert sorted(canary.iterdir()) == []


def test_fifty_thousand_hostile_calls_in_one_step(canary: Path, vault: Vault, table: MethodTable) -> None:
    payload = f"__import__('os').system('touch {canary}/step')"
    results = guarded(lambda: run_step(iter([payload] * 50_000), table))
    assert len(results) == 50_000
    for result in results:
        assert_error(result)
    assert_nothing_ran(canary, vault)


def test_fifty_thousand_fc_calls_in_one_step(canary: Path, vault: Vault, table: MethodTable) -> None:
    results = guarded(lambda: run_step([fc_call("_private", {}) for _ in range(50_000)], table))
    assert len(results) == 50_000
    assert all(r.startswith(ERROR_PREFIX) for r in results)
    assert_nothing_ran(canary, vault)


def test_a_step_mixing_hostile_and_harmless_calls(canary: Path, vault: Vault, table: MethodTable) -> None:
    step = ["echo(content='a')", "__import__('os')", fc_call("echo", {"content": "b"}),
            parse_call("echo(content='c')"), "_private()", "echo(content='d')"]
    results = guarded(lambda: run_step(step, table))
    assert [r if not r.startswith(ERROR_PREFIX) else "error" for r in results] == \
        ["a", "error", "b", "c", "error", "d"]
    assert vault.calls == [("echo", "a"), ("echo", "b"), ("echo", "c"), ("echo", "d")]
    assert sorted(canary.iterdir()) == []


# ----------------------------------------------------------------------------- resource exhaustion, isolated
#
# Each payload below runs in a child process of its own (all children in parallel,
# one per core): a native stack overflow kills only the child, and a child that
# hangs is killed at CHILD_TIMEOUT. The child times run_call itself; the bound is
# WALL_CLOCK_LIMIT.

N = 200_000
CHILD_TIMEOUT = WALL_CLOCK_LIMIT + 5.0  # the bound, plus interpreter start-up and building the payload
PARALLEL_CHILDREN = max(1, min(4, os.cpu_count() or 1))  # no more than the cores: timings stay honest


def _deep(kind: str, depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value] if kind == "list" else {"k": value}
    return value


def _fit(piece: str, extra: int = 16) -> int:
    """How many ``piece`` fit in a text just under the source length limit."""
    return (limits.MAX_SOURCE_LENGTH - extra) // len(piece)


ISOLATED: dict[str, Callable[[], Any]] = {
    # 200,000-deep nesting of every shape the grammar nests ...
    "brackets": lambda: "ls(a=" + "[" * N + "]" * N + ")",
    "brackets-unclosed": lambda: "ls(a=" + "[" * N,
    "parentheses": lambda: "ls(a=" + "(" * N + "1" + ")" * N + ")",
    "braces": lambda: "ls(a=" + "{1:" * N + "1" + "}" * N + ")",
    "sets": lambda: "ls(a=" + "{" * N + "1" + "}" * N + ")",
    "calls": lambda: "ls(a=" * (N // 2) + ")" * (N // 2),
    "calls-over-length-limit": lambda: "ls(a=" * N + ")" * N,
    "unary-minus": lambda: "ls(a=" + "-" * N + "1)",
    "not": lambda: "ls(a=" + "not " * N + "1)",
    "invert": lambda: "ls(a=" + "~" * N + "1)",
    "binary-plus": lambda: "ls(a=" + "1+" * N + "1)",
    "power": lambda: "ls(a=" + "9**" * N + "9)",
    "attributes": lambda: "ls(a=x" + ".y" * N + ")",
    "subscripts": lambda: "ls(a=x" + "[0]" * N + ")",
    "call-chain": lambda: "ls" + "()" * N,
    "string-concatenation": lambda: "ls(a=" + "'a'" * N + ")",
    "lambdas": lambda: "ls(a=" + "lambda:" * N + "1)",
    "conditionals": lambda: "ls(a=" + "1 if 1 else " * N + "1)",
    "boolean-or": lambda: "ls(a=" + "1 or " * N + "1)",
    # ... the same shapes as deep as fits under the source length limit ...
    "brackets-at-length-limit": lambda: "ls(a=" + "[" * _fit("[]") + "]" * _fit("[]") + ")",
    "unary-minus-at-length-limit": lambda: "ls(a=" + "-" * _fit("-") + "1)",
    "not-at-length-limit": lambda: "ls(a=" + "not " * _fit("not ") + "1)",
    "binary-plus-at-length-limit": lambda: "ls(a=" + "1+" * _fit("1+") + "1)",
    "attributes-at-length-limit": lambda: "ls(a=x" + ".y" * _fit(".y") + ")",
    "subscripts-at-length-limit": lambda: "ls(a=x" + "[0]" * _fit("[0]") + ")",
    "call-chain-at-length-limit": lambda: "ls" + "()" * _fit("()"),
    "string-concatenation-at-length-limit": lambda: "ls(a=" + "'a'" * _fit("'a'") + ")",
    "lambdas-at-length-limit": lambda: "ls(a=" + "lambda:" * _fit("lambda:") + "1)",
    "conditionals-at-length-limit": lambda: "ls(a=" + "1 if 1 else " * _fit("1 if 1 else ") + "1)",
    # ... and a few thousand levels, far below any length limit
    "unary-minus-5000": lambda: "ls(a=" + "-" * 5000 + "1)",
    "binary-plus-5000": lambda: "ls(a=" + "1+" * 5000 + "1)",
    "subscripts-3000": lambda: "ls(a=x" + "[0]" * 3000 + ")",
    # FC arguments nested 200,000 deep (plain keys: built directly; bad keys: rendered as text)
    "fc-list": lambda: fc_call("ls", {"a": _deep("list", N)}),
    "fc-dict": lambda: fc_call("ls", {"a": _deep("dict", N)}),
    "fc-list-bad-key": lambda: fc_call("ls", {"a b": _deep("list", N)}),
    "fc-dict-bad-key": lambda: fc_call("ls", {"a b": _deep("dict", N)}),
    # 20 MB strings
    "string-20mb": lambda: "echo(content='" + "x" * 20_000_000 + "')",
    "string-20mb-of-call-patterns": lambda: "echo(content='" + "ls(" * 7_000_000 + "')",
    "fc-string-20mb": lambda: fc_call("echo", {"content": "x" * 20_000_000}),
    "fc-string-20mb-bad-key": lambda: fc_call("echo", {"content b": "x" * 20_000_000}),
    "fc-string-20mb-of-call-patterns": lambda: fc_call("echo", {"content": "ls(" * 7_000_000}),
    # wide literals: past the element limit, or as wide as fits under the length limit
    "many-elements": lambda: "ls(a=[" + "0," * (limits.MAX_LITERAL_ELEMENTS + 1) + "])",
    "many-elements-at-length-limit": lambda: "ls(a=[" + "0," * _fit("0,") + "])",
    "many-complex-elements-at-length-limit": lambda: "ls(a=[" + "1j," * _fit("1j,") + "])",
    "many-arguments": lambda: "ls(" + "0," * 300_000 + ")",
    "many-arguments-at-length-limit": lambda: "ls(" + "0," * _fit("0,") + ")",
    "many-elements-nested-lists": lambda: "ls(a=[" + "[]," * (limits.MAX_LITERAL_ELEMENTS + 1) + "])",
    "many-dict-entries-at-length-limit": lambda: "ls(a={" + "1:1j," * _fit("1:1j,") + "})",
    "many-calls-in-a-list-at-length-limit": lambda: "ls(a=[" + "ls()," * _fit("ls(),") + "])",
}
# Known failures, kept visible as strict xfails (a fix makes them fail until the marker
# goes). Operator/trailer chains (the -5000/-3000 cases: tens of seconds, or a native
# stack overflow) were one, until commit ad3bdd4 bounded them before libcst.
KNOWN_FAILURES: dict[str, Any] = {}


def _isolated_main() -> None:
    """Child-process entry: build one payload, run it, print the outcome as JSON."""
    name = sys.argv[1]
    vault = Vault(Path(sys.argv[2]))
    table = MethodTable([vault], [INSTANCE])
    call = ISOLATED[name]()
    start = time.monotonic()
    result = run_call(call, table)
    elapsed = time.monotonic() - start
    print(json.dumps({"result": result[:500], "elapsed": elapsed, "calls": len(vault.calls)}))


def _run_child(name: str, canary: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    code = "from tests.test_breakout import _isolated_main; _isolated_main()"
    try:
        done = subprocess.run([sys.executable, "-W", "ignore", "-c", code, name, str(canary)], cwd=canary,
                              env=env, capture_output=True, text=True, timeout=CHILD_TIMEOUT)
    except subprocess.TimeoutExpired:
        return {"failure": f"no result within {CHILD_TIMEOUT} s (child killed)"}
    if done.returncode != 0:
        return {"failure": f"child died with exit code {done.returncode}: {done.stderr[-300:]}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def isolated_outcomes(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], tuple[dict, Path]]:
    """Run every ISOLATED payload once, in parallel children; look outcomes up by name."""
    from concurrent.futures import ThreadPoolExecutor

    canaries = {name: tmp_path_factory.mktemp(f"canary-{name}") for name in ISOLATED}
    with ThreadPoolExecutor(PARALLEL_CHILDREN) as pool:
        futures = {name: pool.submit(_run_child, name, canaries[name]) for name in ISOLATED}
        outcomes = {name: future.result() for name, future in futures.items()}
    return lambda name: (outcomes[name], canaries[name])


@pytest.mark.parametrize("name", [pytest.param(n, id=n, marks=KNOWN_FAILURES.get(n, ())) for n in ISOLATED])
def test_resource_exhaustion_is_refused(name: str, isolated_outcomes: Callable[[str], tuple[dict, Path]]) -> None:
    outcome, canary = isolated_outcomes(name)
    assert "failure" not in outcome, outcome["failure"] if "failure" in outcome else ""
    assert outcome["result"].startswith(ERROR_PREFIX), outcome
    assert outcome["elapsed"] < WALL_CLOCK_LIMIT, outcome
    assert outcome["calls"] == 0
    assert sorted(canary.iterdir()) == []
