"""Every decoder on hostile text: returns calls or raises :class:`DecodeError` (or the
entry's :class:`BudgetExceeded`), in linear time, on lines up to 1 MB of every shape
that made a regex or libcst quadratic (unclosed tags, repeated openers, nested brackets,
long f-strings, deep nesting, ...).

The decoders run in a child process (under a 2 GB address-space limit): a hang or a
crash there fails the test instead of the run. The time limit is a generous guard of the
harness (the batch, or one example, must finish within it on a loaded machine); the
decoders themselves count, they never time.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import resource
import select
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from bfcl_safe.checker.decoders import DECODERS
from bfcl_safe.checker.decoders.base import tag_blocks
from bfcl_safe.checker.decoders.guard import libcst_depth

ROOT = Path(__file__).resolve().parent.parent
MB = 1 << 20
#: Generous guards of the harness (a loaded CI machine), not budgets of the code.
BATCH_GUARD_SECONDS = 240
EXAMPLE_GUARD_SECONDS = 60


def _repeat(fragment: str, size: int = MB) -> str:
    return (fragment * (size // len(fragment) + 1))[:size]


def _fstring_chain(links: int) -> str:
    return "f(a=f'{x" + "[0]" * links + "}')"


#: Shape id -> 1 MB of hostile text.
SHAPES: dict[str, str] = {
    "unclosed-tool-call": _repeat("<tool_call>\n"),
    "unclosed-function-gemma": _repeat("<start_function_call>"),
    "unclosed-nemotron": _repeat("<TOOLCALL>"),
    "unclosed-minicpm": _repeat("<|tool_call_start|>"),
    "thought-tokens": _repeat("<|thought_start|><|thought_end|>"),
    "python-tags": _repeat("<|python_tag|>"),
    "granite-function-calls": _repeat("<function_call>"),
    "open-brackets": _repeat("["),
    "nested-brackets": "[" * (MB // 2) + "]" * (MB // 2),
    "open-braces": _repeat("{"),
    "open-parens": _repeat("("),
    "single-quotes": _repeat("'"),
    "double-quotes": _repeat('"'),
    "triple-quotes": _repeat("'''"),
    "fstring-subscript-chain": _fstring_chain(12_000),
    "fstring-chain-1mb": _fstring_chain(MB // 3),
    "fstring-nested": "f(a=" + "f'{" * 5_000 + "}'" * 5_000 + ")",
    "fstring-quotes-nested": "f(a=" + "f'{f\"{f'''{f\"\"\"{" * 2_000 + ")",
    "subscript-chain": "f(a=x" + "[0]" * 12_000 + ")",
    "call-chain": "f(a=x" + "()" * 12_000 + ")",
    "unary-chain": "f(a=" + "-" * 12_000 + "1)",
    "operator-chain": "f(a=1" + "+1" * 100_000 + ")",
    "gemma-escape-openers": "<start_function_call>call:f{" + _repeat("<escape>") + "<end_function_call>",
    "gemma-nested-dicts": "<start_function_call>call:f{" + _repeat("{a:") + "<end_function_call>",
    "gemma-nested-lists": "<start_function_call>call:f{a:" + _repeat("[") + "<end_function_call>",
    "gemma-wide": "<start_function_call>call:f{" + _repeat("a:[],") + "}<end_function_call>",
    "json-deep": "[" * 100_000 + "]" * 100_000,
    "llama-union": " | ".join(['{"name": "f", "parameters": {}}'] * 30_000),
    "llama-union-deep": "[" * 5_000 + "{}" + " | {}" * 100_000 + "]" * 5_000,
    "many-calls": "[" + ",".join(["f(a=1)"] * 100_000) + "]",
    "words": _repeat("abc "),
    "keywords": _repeat("not "),
    "backslashes": _repeat("\\"),
    "commas": _repeat(","),
    "newlines": _repeat("\n"),
    "comments": _repeat("#[\n"),
    "colons": _repeat("a:"),
    "fullwidth": _repeat("ｌｓ(ａ=１)"),
}

#: Run in the child: decode every text it is sent with every decoder (decode, then
#: display), under an entry budget as the scorer does, and report each outcome.
CHILD = r"""
import json, sys
from bfcl_safe.checker.decoders import DECODERS, DecodeError
from bfcl_safe.interp.budget import Budget
from bfcl_safe.interp.errors import BudgetExceeded

def outcome(function, text):
    try:
        with Budget().active():
            result = function(text)
    except (DecodeError, BudgetExceeded) as exc:
        return type(exc).__name__
    except BaseException as exc:
        return "ESCAPED " + type(exc).__name__ + ": " + str(exc)[:200]
    return "list" if type(result) is list else "NOT A LIST " + type(result).__name__

from bfcl_safe.checker.decoders.guard import check_libcst_input
from bfcl_safe.checker.result_files import LineProblem, parse_line
from bfcl_safe.interp.errors import RejectedInput
from bfcl_safe.interp.lexical import bracket_depth

def scanned(function, text):
    try:
        function(text)
    except (DecodeError, LineProblem, RejectedInput):
        pass
    except BaseException as exc:
        return "ESCAPED " + type(exc).__name__ + ": " + str(exc)[:200]
    return "list"

# The scanners in front of the decoders and of the result-file reader, on any length.
SCANNERS = {
    "bracket_depth": bracket_depth,
    "libcst_guard": check_libcst_input,
    "result_line": lambda text: parse_line(text, "multi_turn_base"),
    "deep_result_line": lambda text: parse_line("[" * 300 + text, "multi_turn_base"),
}

for line in sys.stdin:
    text = json.loads(line)
    report = {}
    for name, (decode, display) in sorted(DECODERS.items()):
        report[name] = [outcome(decode, text), outcome(display, text)]
    for name, function in SCANNERS.items():
        report[name] = [scanned(function, text)]
    print(json.dumps(report), flush=True)
"""


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


class Child:
    """A child process decoding the texts sent to it, one JSON line each way."""

    def __init__(self) -> None:
        self.start()

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", CHILD], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, encoding="utf-8", preexec_fn=_limit_memory,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )

    def decode(self, text: str, guard_seconds: float) -> dict[str, list[str]]:
        self.send(text)
        return self.receive(text, guard_seconds)

    def send(self, text: str) -> None:
        self.process.stdin.write(json.dumps(text) + "\n")
        self.process.stdin.flush()

    def receive(self, text: str, guard_seconds: float) -> dict[str, list[str]]:
        """The report on ``text`` (sent last), if it comes within the guard."""
        ready, _, _ = select.select([self.process.stdout], [], [], guard_seconds)
        if not ready:
            self.close()
            self.start()  # the next example gets a fresh child, not this one's closed pipes
            kept = Path(tempfile.mkdtemp(prefix="bfcl-safe-slow-text-")) / "text.json"
            kept.write_text(json.dumps(text), encoding="utf-8")
            raise AssertionError(f"the decoders did not finish within {guard_seconds} s on {_runs(text)}; "
                                 f"the text is in {kept}")
        line = self.process.stdout.readline()
        if not line:
            stderr = self.process.stderr.read()
            raise AssertionError(f"the child died on {text[:80]!r}...: {stderr[-2000:]}")
        return json.loads(line)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            stream.close()


def _runs(text: str, shown: int = 12) -> str:
    """A long text as its runs of one repeated character: ``'\\n' x 42764, 'a' x 1, ...``."""
    runs = [(char, len(list(group))) for char, group in itertools.groupby(text)]
    parts = [f"{char!r} x {count}" for char, count in runs[:shown]]
    return ", ".join(parts) + (f", ... ({len(runs):,} runs, {len(text):,} characters)" if len(runs) > shown else "")


def _bad(report: dict[str, list[str]]) -> dict[str, list[str]]:
    allowed = {"list", "DecodeError", "BudgetExceeded"}  # (the scanners report "list" when they return or refuse)
    return {name: outcomes for name, outcomes in report.items() if not set(outcomes) <= allowed}


@pytest.fixture(scope="module")
def child():
    process = Child()
    yield process
    process.close()


def test_every_decoder_on_every_hostile_shape_in_one_batch():
    """All shapes, all decoders, one child, one guard for the whole batch."""
    process = subprocess.run(
        [sys.executable, "-c", CHILD], cwd=ROOT, input="".join(json.dumps(t) + "\n" for t in SHAPES.values()),
        capture_output=True, text=True, encoding="utf-8", timeout=BATCH_GUARD_SECONDS, preexec_fn=_limit_memory,
    )
    assert process.returncode == 0, process.stderr[-2000:]
    reports = [json.loads(line) for line in process.stdout.splitlines()]
    assert len(reports) == len(SHAPES)
    bad = {shape: _bad(report) for shape, report in zip(SHAPES, reports) if _bad(report)}
    assert not bad
    assert set(DECODERS) <= set(reports[0])


# ------------------------------------------------- every two-character pattern

#: Characters some scanner treats specially, one no token accepts (\x00) and a non-ASCII
#: one. Two quadratic scans were found with these shapes: a run of one character before
#: one that no token takes ("\\n" x 40,000 then "\x00": the call tokenizer, a search,
#: retried the blanks from every later start), and two characters alternating up to a
#: lone trailing backslash ("'\\" x 20,000: a string pattern that failed at the end was
#: retried from every later quote). Either took minutes on 40,000 characters.
PAIR_ALPHABET = "'\"\\\n #{[(fa\x00é"
PAIR_SIZE = 40_000
#: A linear scan of one shape takes about 0.15 s here; a quadratic one, minutes.
PAIR_GUARD_SECONDS = 30


def _pair_shapes() -> dict[str, str]:
    shapes = {}
    for first in PAIR_ALPHABET:
        for second in PAIR_ALPHABET:
            if first != second:
                shapes[f"run {first!r} then {second!r}"] = first * PAIR_SIZE + second
                shapes[f"f( then run {first!r} then {second!r}"] = "f(" + first * PAIR_SIZE + second
                shapes[f"alternating {first + second!r}"] = (first + second) * (PAIR_SIZE // 2)
    return shapes


def test_every_two_character_pattern():
    """Runs (bare, and inside a call's parentheses) and alternations of every pair of
    those characters through every decoder and scanner, each within the guard; two
    children take turns (the machine's two cores); all shapes are tried, the slow ones
    named together."""
    shapes = list(_pair_shapes().items())
    assert len(shapes) == 3 * len(PAIR_ALPHABET) * (len(PAIR_ALPHABET) - 1)
    children = [Child(), Child()]
    failures = {}
    try:
        for start in range(0, len(shapes), len(children)):
            batch = list(zip(children, shapes[start : start + len(children)]))
            for worker, (_, text) in batch:
                worker.send(text)
            for worker, (shape, text) in batch:
                try:
                    report = worker.receive(text, PAIR_GUARD_SECONDS)
                except AssertionError as exc:
                    failures[shape] = str(exc)[:300]
                    continue
                if _bad(report):
                    failures[shape] = _bad(report)
    finally:
        for worker in children:
            worker.close()
    assert not failures


# ----------------------------------------------------------------- property

FRAGMENTS = (
    "<tool_call>\n", "\n</tool_call>", "<start_function_call>", "<end_function_call>", "call:f", "<escape>",
    "<TOOLCALL>", "</TOOLCALL>", "<|tool_call_start|>", "<|tool_call_end|>", "<|thought_start|>",
    "<|thought_end|>", "<|python_tag|>", "<function_call>", "</think>", "```", "```python\n", "```tool_code\n",
    "[", "]", "{", "}", "(", ")", "'", '"', "'''", '"""', "f'", 'f"', "rf'", "\\", "#", "\n", ",", ";", ":", "=",
    " | ", "+", "-", "*", "**", "not ", "lambda:", "f(a=", "x[0]", "{x[0]}", '{"name": "f", "parameters": {}}',
    "ls", "ｌｓ", "ﬁ", "𝐱", "True", "None", "1e308", "9" * 50, "\x00", "\u2028", "\ud800",
)


@st.composite
def hostile_texts(draw) -> str:
    """Runs of fragments, each repeated up to the 1 MB total: shapes nobody listed."""
    parts = []
    room = MB
    for fragment in draw(st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=8), min_size=1, max_size=6)):
        if not fragment or room <= 0:
            continue
        times = draw(st.integers(1, max(1, room // len(fragment))))
        parts.append(fragment * times)
        room -= len(fragment) * times
    return "".join(parts)[:MB]


@given(hostile_texts())
def test_any_text_up_to_a_megabyte_returns_or_raises_our_error(child, text):
    report = child.decode(text, EXAMPLE_GUARD_SECONDS)
    assert not _bad(report)


# ------------------------------------------------------- the linear-time pieces


@given(st.text(alphabet="<ab>\n/", max_size=40), st.sampled_from([("<a>", "</a>"), ("<a>\n", "\n</a>"), ("a", "a")]))
def test_tag_blocks_is_the_lazy_regex(text, tags):
    opener, closer = tags
    pattern = re.compile(re.escape(opener) + "(.*?)" + re.escape(closer), re.DOTALL)
    assert tag_blocks(text, opener, closer) == pattern.findall(text)
    first = pattern.search(text)
    assert tag_blocks(text, opener, closer, first_only=True) == ([] if first is None else [first.group(1)])


@pytest.mark.parametrize(
    ("text", "deeper_than_100"),
    [
        pytest.param("f(a=f'{x" + "[0]" * 200 + "}')", True, id="subscript-chain-in-fstring"),
        pytest.param("f(a='{x" + "[0]" * 200 + "}')", False, id="same-text-in-a-plain-string"),
        pytest.param("f(a=f'{{x" + "[0]" * 200 + "}}')", False, id="doubled-braces-are-text"),
        pytest.param("f(a=f'" + "-" * 200 + "{x}')", False, id="operators-in-fstring-text"),
        pytest.param("f(a=f'{\"\"\"x\"\"\"}' f'{x" + "[0]" * 200 + "}')", True, id="second-fstring"),
        pytest.param("f(a=f\"{f'{x" + "[0]" * 200 + "}'}\")", True, id="fstring-in-fstring"),
        pytest.param("f(a=F'{x" + "+1" * 200 + "}')", True, id="operator-chain-uppercase-prefix"),
        pytest.param("# f'{x" + "[0]" * 200 + "}'\nf()", False, id="comment"),
    ],
)
def test_fstring_fields_count_in_the_libcst_guard(text, deeper_than_100):
    assert (libcst_depth(text) > 100) is deeper_than_100
