"""Remembered step texts (``checker.decoders.base.Memo``): a text is decoded once, and
what its decoding charged to the entry's budget is charged again on every use, so the
verdict of an entry never depends on which entry decoded a text first."""

from __future__ import annotations

import pytest

from bfcl_safe.checker.decoders import DECODERS, DecodeError
from bfcl_safe.checker.decoders.base import Memo
from bfcl_safe.interp.budget import Budget
from bfcl_safe.interp.errors import BudgetExceeded
from bfcl_safe.interp.limits import ENTRY_BUDGETS

#: (decoder, step text whose decoding computes values).
COMPUTING = [
    pytest.param("prompting", "[ls(a='x' * 1000 + 'y')]", id="prompting-arithmetic"),
    pytest.param("minicpm", "<|tool_call_start|>ls(a='x' * 1000 + 'y')<|tool_call_end|>", id="minicpm-arithmetic"),
    pytest.param("llama_python_tag", '{"name": "ls", "parameters": {"a": "x" * 1000}}', id="llama-eval"),
    pytest.param("functiongemma", "<start_function_call>call:ls{a:[1,2,[3]]}<end_function_call>", id="functiongemma"),
]


@pytest.mark.parametrize(("decoder", "step"), COMPUTING)
def test_every_use_charges_what_the_first_did(decoder, step):
    spent = []
    for function in (DECODERS[decoder][0], DECODERS[decoder][1], DECODERS[decoder][0]):
        entry = Budget()
        with entry.active():
            function(step)
        spent.append(entry.spent)
    assert spent[0] and spent[0] == spent[1] == spent[2]


def test_a_remembered_text_still_exceeds_a_small_budget():
    step = "[ls(a='x' * 1000 + 'y')]"
    DECODERS["prompting"][1](step)
    with Budget({**ENTRY_BUDGETS, "computed_size": 500}).active():
        with pytest.raises(BudgetExceeded):
            DECODERS["prompting"][1](step)


def test_a_failure_is_remembered_as_its_message():
    memo = Memo(size=2)
    calls = []

    def failing():
        calls.append(1)
        raise DecodeError("no")

    for _ in range(3):
        with pytest.raises(DecodeError, match="^no$"):
            memo.get("text", failing)
    assert len(calls) == 1


def test_the_oldest_text_goes_first():
    memo = Memo(size=2)
    for key in ("a", "b", "c"):
        memo.get(key, lambda key=key: key.upper())
    assert memo.get("b", lambda: "computed again") == "B"
    assert memo.get("a", lambda: "computed again") == "computed again"


def test_a_decoding_over_the_budget_is_not_remembered():
    memo = Memo()

    def expensive():
        from bfcl_safe.interp import budget

        budget.charge("computed_size", 10)
        return "value"

    with Budget({"computed_size": 5}).active():
        with pytest.raises(BudgetExceeded):
            memo.get("text", expensive)
    assert memo.get("text", lambda: "computed again") == "computed again"
