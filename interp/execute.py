"""Running decoded calls on an episode's method table.

Two kinds of failure stay apart. Whatever the *model's call* does wrong — an
unknown name, bad arguments, a refused construct, an exception inside a tool —
becomes the result string ``Error during execution: {message}``, exactly as the
reference's ``eval`` loop reports it. A failure of the interpreter itself is a bug
and propagates.
"""

from __future__ import annotations

import re
import sys
from typing import Any, Iterable, Sequence

from bfcl_safe.interp import budget, limits
from bfcl_safe.interp.budget import RESULT_CHARS
from bfcl_safe.interp.builtins import (
    NotComputable,
    binary_op,
    call_builtin,
    compare_op,
    is_builtin_name,
    make_slice,
    subscript,
    truth,
    unary_op,
)
from bfcl_safe.interp.callspec import NOT_CALL, CallSpec, Container, Failure, NameRef, Operation, SourceString
from bfcl_safe.interp.errors import BudgetExceeded, RejectedInput
from bfcl_safe.interp.result_text import format_error, format_result
from bfcl_safe.interp.table import MethodTable
from bfcl_safe.interp.text import parse_call, python_syntax_error

#: Names the reference refuses to call (checked on the outermost call only).
DENYLIST = frozenset({"kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run"})

Call = str | CallSpec | RejectedInput


class _Raised(Exception):
    """Carries an exception that the reference's ``eval`` would have raised."""

    def __init__(self, error: BaseException):
        super().__init__(error)
        self.error = error


def _fresh(value: Any) -> Any:
    """A private copy of a literal (tools may mutate or keep their arguments)."""
    kind = type(value)
    if kind is list:
        return [_fresh(v) for v in value]
    if kind is dict:
        return {k: _fresh(v) for k, v in value.items()}
    if kind is set:
        return set(value)
    if kind is tuple:
        return tuple(_fresh(v) for v in value)
    return value


def _evaluate(value: Any, table: MethodTable) -> Any:
    kind = type(value)
    if kind is CallSpec:
        return _invoke(value, table)
    if kind is SourceString:
        return table.decode_source_string(value.parts)
    if kind is NameRef:
        raise _Raised(NameError(f"name '{value.id}' is not defined"))
    if kind is Container:
        if value.kind is dict:
            pairs = [(_evaluate(k, table), _evaluate(v, table)) for k, v in value.items]
            try:
                return dict(pairs)
            except TypeError as exc:
                raise _Raised(exc) from None
        items = [_evaluate(v, table) for v in value.items]
        try:
            return value.kind(items)
        except TypeError as exc:
            raise _Raised(exc) from None
    if kind is Failure:
        raise _Raised(value.kind(value.message))
    if kind is Operation:
        try:
            return _operate(value, table)
        except (BudgetExceeded, _Raised):
            raise
        except Exception as exc:  # noqa: BLE001 - what CPython raises (or our refusal) is the result
            raise _Raised(exc) from None
    return _fresh(value)


def _operate(operation: Operation, table: MethodTable) -> Any:
    """An operator, in Python's order of evaluation (``and``/``or``/``if`` and chained
    comparisons evaluate their later operands only when Python would)."""
    op, operands = operation.op, operation.operands
    if op == "and" or op == "or":
        left = _evaluate(operands[0], table)
        if truth(left) == (op == "or"):
            return left
        return _evaluate(operands[1], table)
    if op == "if":
        test = _evaluate(operands[0], table)
        return _evaluate(operands[1] if truth(test) else operands[2], table)
    if op == "compare":
        left = _evaluate(operands[0], table)
        result: Any = True
        for index in range(1, len(operands), 2):
            right = _evaluate(operands[index + 1], table)
            result = compare_op(operands[index], left, right)
            if not truth(result):
                return result
            left = right
        return result
    values = [_evaluate(v, table) for v in operands]
    if op == "subscript":
        return subscript(values[0], values[1])
    if op == "slice":
        return make_slice(*values)
    if op == "tuple":
        return tuple(values)
    if len(values) == 1:
        return unary_op(op, values[0])
    return binary_op(op, values[0], values[1])


def _invoke(spec: CallSpec, table: MethodTable) -> Any:
    # eval's order: the callee first, then positional and keyword values, left to right.
    try:
        method = table.lookup(spec.name)
    except NameError as exc:
        if is_builtin_name(spec.name):
            return _invoke_builtin(spec, table, exc)
        raise _Raised(exc) from None
    args = [_evaluate(a, table) for a in spec.args] if spec.args else ()
    kwargs = {}
    for key, value in spec.kwargs:
        kind = type(value)
        # Immutable leaves are their own value (what _evaluate would return).
        kwargs[key] = value if kind is str or kind is int or kind is bool or value is None else _evaluate(value, table)
    try:
        return method(*args, **kwargs)
    except BudgetExceeded:
        raise  # never a result string: the entry fails with the resource-limit error type
    except Exception as exc:  # noqa: BLE001 - a tool's exception is data for the model
        raise _Raised(exc) from None


def _invoke_builtin(spec: CallSpec, table: MethodTable, undefined: NameError) -> Any:
    """A call of a builtin (no tool has its name): the arguments are evaluated as eval
    would (nested tool calls run), then a pure builtin is computed, a refused one gets
    CPython's argument-parsing error if it would fail before running, and otherwise
    stays ``undefined`` (the NameError every other unknown name gets)."""
    args = [_evaluate(a, table) for a in spec.args]
    kwargs = {key: _evaluate(value, table) for key, value in spec.kwargs}
    try:
        return call_builtin(spec.name, args, kwargs)
    except BudgetExceeded:
        raise
    except NotComputable:
        raise _Raised(undefined) from None
    except Exception as exc:  # noqa: BLE001 - CPython's own error for this call is the result
        raise _Raised(exc) from None


#: Any denylisted word. The head the reference tests is a piece of the text before its
#: first "(" (or an instance name, which ends in "_instance"): without one of these words
#: there, it cannot be denylisted, and working it out can be skipped.
_DENIED_WORD = re.compile("|".join(sorted(DENYLIST)))


def _denylist_head(text: str, table: MethodTable) -> str:
    paren = text.find("(")
    if _DENIED_WORD.search(text, 0, paren if paren >= 0 else len(text)) is None:
        return ""
    return table.denylist_head(text)


def run_call(call: Call, table: MethodTable) -> str:
    """Run one call (text, a decoded spec, or a rejection) and return its result string."""
    if isinstance(call, CallSpec):
        # A spec's name is a plain identifier: the reference's head is the name itself.
        if call.name in DENYLIST:
            return format_error(Exception(f"Function call {call.name} is not allowed."))
        return _result(call, table)
    if isinstance(call, RejectedInput):
        head = _denylist_head(call.source, table) if call.source else ""
    else:
        head = _denylist_head(call, table) if isinstance(call, str) else ""
    if head in DENYLIST:
        return format_error(Exception(f"Function call {head} is not allowed."))
    try:
        if isinstance(call, RejectedInput):
            raise call
        spec = parse_call(call)
    except RejectedInput as exc:
        if isinstance(call, str) and len(call) <= limits.MAX_SOURCE_LENGTH:
            # Where eval itself would fail to parse, report its exact message. (Longer texts
            # have no such message to find, and rewriting them first would cost seconds.)
            syntax = python_syntax_error(table.rewrite(call), exc)
            if syntax is not None:
                return format_error(SyntaxError(syntax))
        return format_error(exc)
    except RecursionError as exc:
        return format_error(exc)
    return _result(spec, table)


def _result(spec: CallSpec, table: MethodTable) -> str:
    """The result string of running ``spec``: its value rendered, or the error it raised."""
    try:
        # (a top-level not(...) parses to a spec of this name: the operator, not a call)
        value = _evaluate(spec.args[0], table) if spec.name == NOT_CALL else _invoke(spec, table)
    except _Raised as raised:
        return format_error(raised.error)
    except (RejectedInput, RecursionError) as exc:
        # (Deep nesting that passed the limits still must not crash the scorer.)
        return format_error(exc)
    try:
        return format_result(value)
    except Exception as exc:  # noqa: BLE001 - e.g. str() of an int past 4300 digits: the
        return format_error(exc)  # reference renders inside its try, so this is a result too


#: ``room`` when no budget is active: more characters than any process can hold.
_UNCOUNTED = sys.maxsize
#: The active budget, if any (``budget.current``, looked up once).
_current_budget = budget.current


def run_step(calls: Sequence[Call] | Iterable[Call], table: MethodTable) -> list[str]:
    """Run the calls of one model step in order; one result string per call.

    Every result string is kept (the checks compare them, failure records write them):
    its characters are counted as it is made and charged to the active budget's
    ``result_chars``, so an entry that would keep more fails with the resource-limit
    type instead."""
    active = _current_budget()
    # The step's kept characters are counted here and charged once at its end; a call
    # whose result would take them past what the budget has left charges them at once
    # (the charge raises, with the total it would have reached). The active budget's
    # ``spent`` is updated directly (Budget.charge inline, on a hot path): no tool runs
    # under the decoders' recorder, the one Budget subclass that counts differently.
    if active is None:
        room = _UNCOUNTED
    else:
        spent = active.spent
        limit = active.limits[RESULT_CHARS]
        room = limit - spent.get(RESULT_CHARS, 0)
    results = []
    kept = 0
    for index, call in enumerate(calls):
        if index >= limits.MAX_CALLS_PER_STEP:
            result = format_error(RejectedInput(
                f"more than {limits.MAX_CALLS_PER_STEP} calls in one step; call {index} not run"
            ))
        else:
            result = run_call(call, table)
        kept += len(result)
        if kept > room:
            active.charge(RESULT_CHARS, kept)  # type: ignore[union-attr] # (room is finite only with a budget)
        results.append(result)
    if kept and active is not None:
        # (read again: a tool may have charged the text it built meanwhile, e.g. find's paths)
        total = spent.get(RESULT_CHARS, 0) + kept
        if total > limit:
            raise BudgetExceeded(RESULT_CHARS, limit, total)
        spent[RESULT_CHARS] = total
    return results
