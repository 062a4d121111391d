"""backends.strategies: generated tool calls are valid for every backend, on dataset states."""

from __future__ import annotations

import copy
import re
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from bfcl_safe.backends.strategies import ARGUMENTS, as_fc_step, as_prompting_step, call_sequences, run_calls, tool_calls
from bfcl_safe.checker.decoders import decode_step
from bfcl_safe.checker.episode import Side, backend_class
from bfcl_safe.interp import ERROR_PREFIX, CallSpec, MethodTable, run_step, tool_names
from tests.checker_support import dataset

CLASS_NAMES = sorted(cls.__name__ for cls in ARGUMENTS)
#: What a call the interpreter could not even make looks like (wrong name or signature).
INTERPRETER_ERROR = re.compile(
    r"is not defined|unexpected keyword argument|required positional argument|takes \d+ positional"
)
EXAMPLES = settings(max_examples=25, database=None, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def _config(class_name: str) -> dict:
    """The first dataset scenario (multi_turn_base) that involves the class."""
    for entry in dataset().entries("multi_turn_base"):
        if class_name in entry["involved_classes"]:
            return entry["initial_config"].get(class_name, {})
    raise LookupError(class_name)


def _factory(class_name: str) -> Callable[[], Any]:
    cls, config = backend_class(class_name), _config(class_name)
    return lambda: cls.from_config(copy.deepcopy(config), long_context=False, long_context_data=None)


@pytest.mark.parametrize("class_name", CLASS_NAMES)
def test_every_tool_has_a_strategy(class_name: str) -> None:
    instance = _factory(class_name)()
    assert set(ARGUMENTS[type(instance)](instance)) == set(tool_names(type(instance)))


@pytest.mark.parametrize("class_name", CLASS_NAMES)
def test_generated_calls_run_and_mostly_succeed(class_name: str) -> None:
    fresh = _factory(class_name)
    results: list[str] = []

    # Derandomized: the same 25 sequences every run, so the share of failing calls is a
    # fixed figure checked against the 5% bound (drawn afresh, it went past 5% about once
    # in 50 runs for TravelAPI, whose strategy now and then draws a pair of airports with
    # no route on purpose). The other tests here keep drawing new examples.
    @settings(EXAMPLES, derandomize=True)
    @given(call_sequences(fresh, max_size=12))
    def check(calls: list[CallSpec]) -> None:
        assert all(isinstance(call, CallSpec) for call in calls)
        first = run_calls(fresh(), calls)
        assert all(type(r) is str for r in first)
        bad = [(c.render(), r) for c, r in zip(calls, first) if INTERPRETER_ERROR.search(r)]
        assert not bad, bad
        assert run_calls(fresh(), calls) == first  # deterministic: a drawn sequence replays
        results.extend(first)

    check()
    failed = [r for r in results if r.startswith(ERROR_PREFIX)]
    assert len(results) > 50
    assert len(failed) <= 0.05 * len(results), failed[:5]


@pytest.mark.parametrize("class_name", CLASS_NAMES)
def test_calls_are_drawn_from_the_current_state(class_name: str) -> None:
    fresh = _factory(class_name)

    @EXAMPLES
    @given(st.data())
    def check(data: st.DataObject) -> None:
        instance = fresh()  # a new one per example: the state decides what is drawn
        table = MethodTable([instance])
        for _ in range(5):
            call = data.draw(tool_calls(instance))
            assert call.name in tool_names(type(instance))
            assert not INTERPRETER_ERROR.search(run_step([call], table)[0])

    check()


def test_a_sequence_over_an_episode_of_several_backends() -> None:
    entry = next(e for e in dataset().entries("multi_turn_base") if len(e["involved_classes"]) >= 2)

    def fresh() -> list:
        return list(Side.create(entry).instances.values())

    used: set[str] = set()

    @EXAMPLES
    @given(call_sequences(fresh, min_size=5, max_size=15))
    def check(calls: list[CallSpec]) -> None:
        results = run_calls(fresh(), calls)
        assert not [r for r in results if INTERPRETER_ERROR.search(r)]
        used.update(type(i).__name__ for i in fresh() for c in calls if c.name in tool_names(type(i)))

    check()
    assert used == set(entry["involved_classes"])


def test_tools_can_be_restricted() -> None:
    fresh = _factory("GorillaFileSystem")

    @EXAMPLES
    @given(call_sequences(fresh, tools=["touch", "ls", "cat"], max_size=8))
    def check(calls: list[CallSpec]) -> None:
        assert {c.name for c in calls} <= {"touch", "ls", "cat"}

    check()
    with pytest.raises(ValueError, match="has no tools"):
        tool_calls(fresh(), ["rm", "nope"])
    with pytest.raises(TypeError, match="no call strategies for"):
        tool_calls(object())


def _has_call_pattern(calls: list[CallSpec]) -> bool:
    # A string containing "name(" is rewritten by the reference's (and our) text path
    # but not when a spec is run directly; such strings are not round-trip material.
    return any("(" in repr(value) for call in calls for _, value in call.kwargs)


@pytest.mark.parametrize("class_name", CLASS_NAMES)
def test_result_file_formats_decode_to_the_same_calls(class_name: str) -> None:
    fresh = _factory(class_name)

    @settings(EXAMPLES, max_examples=10)
    @given(call_sequences(fresh, max_size=6))
    def check(calls: list[CallSpec]) -> None:
        assume(not _has_call_pattern(calls))
        expected = run_calls(fresh(), calls)
        for step, decoder in ((as_fc_step(calls), "fc"), (as_prompting_step(calls), "prompting")):
            decoded = decode_step(step, decoder)
            assert len(decoded) == len(calls)
            assert run_step(decoded, MethodTable([fresh()])) == expected, (decoder, step)

    check()


def test_the_readme_example_runs() -> None:
    from tests.refenv import ROOT

    section = (ROOT / "README.md").read_text(encoding="utf-8").split("## Fuzzing with the simulated APIs", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, Any] = {}
    exec(compile(code, "<README.md: fuzzing example>", "exec"), namespace)  # test code running the documented example
    settings(EXAMPLES, max_examples=10)(namespace["test_my_checker"])()
