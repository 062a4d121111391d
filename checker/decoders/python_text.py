"""Decoders of handlers that read model text as Python: ``llama_python_tag`` (``eval``)
and ``minicpm`` (``ast.parse``), with their libcst halves.

- :func:`literal_value` stands in for the ``eval(text)`` of the Llama 3.1 handler:
  :func:`~bfcl_safe.checker.decoders.evaluate.evaluate` computes literals, displays,
  operators (``{...} | {...}`` is a dict union: Llama's `` | ``-joined calls decode to
  the last one, as in the reference) and pure builtins; anything that would make
  ``eval`` look up a name or run code fails the step. This is where we knowingly
  differ from the reference: for such text it runs the model's code, we refuse.
- :func:`statement_calls` stands in for the MiniCPM handler's ``ast.parse`` (module
  mode) + ``resolve_ast_call`` on every statement; like the reference, any failure
  means "no calls" (its ``except:`` catches everything).
"""

from __future__ import annotations

import ast
from typing import Any

import libcst as cst

from bfcl_safe.checker.decoders.base import (
    DecodeError,
    Decoder,
    Items,
    load_json,
    name_arguments_strict,
    pair,
    render,
    require_text,
)
from bfcl_safe.checker.decoders.evaluate import evaluate
from bfcl_safe.checker.decoders.prompting_cst import check_libcst_input, resolve_call

def _guard(text: str, mode: str) -> None:
    """Limits first (libcst is slow on long texts and recurses per level), then the
    reference's own syntax check: ``ast.parse`` only builds a tree, nothing runs."""
    check_libcst_input(text)
    try:
        ast.parse(text, mode=mode)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise DecodeError(f"not Python syntax: {exc}") from None


def literal_value(text: str) -> Any:
    """The value ``eval(text)`` has when ``text`` is a literal (see the module docstring)."""
    source = text.lstrip(" \t")  # eval strips leading spaces and tabs
    _guard(source, "eval")
    try:
        node = cst.parse_expression(source)
    except (cst.ParserSyntaxError, RecursionError) as exc:
        raise DecodeError(f"not a Python expression: {str(exc).splitlines()[0]}") from None
    return evaluate(node)


#: Statements whose ``value`` the reference reads (every other statement has none).
_VALUE_STATEMENTS = (cst.Expr, cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Return)


def statement_calls(text: str) -> list[tuple[str, dict]]:
    """``[(name, arguments)]`` for module text whose every statement's value is a call
    (keyword arguments resolved like the prompting decoder); ``[]`` on any failure."""
    try:
        _guard(text, "exec")
        module = cst.parse_module(text)
        calls = []
        for statement in module.body:
            if not isinstance(statement, cst.SimpleStatementLine):
                return []
            for small in statement.body:
                value = small.value if isinstance(small, _VALUE_STATEMENTS) else None
                if not isinstance(value, cst.Call):
                    return []
                calls.extend(resolve_call(value).items())
        return calls
    except (DecodeError, cst.ParserSyntaxError, RecursionError, ValueError, TypeError):
        return []


# ---------------------------------------------------------------------- handlers


def items_llama_python_tag(step: Any) -> Items:
    """Llama 3.1 FC: ``<|python_tag|>`` removed; with a ``;`` the parts are JSON objects,
    otherwise the text is a Python literal (the reference ``eval``s it: see
    :func:`literal_value`); objects carry ``name`` and ``parameters``."""
    text = require_text(step, "Llama").replace("<|python_tag|>", "")
    if ";" in text:
        calls: Any = [load_json(part) for part in text.split(";")]
    else:
        calls = literal_value(text)
        if type(calls) is dict:
            calls = [calls]
        if not isinstance(calls, (list, tuple, str, set, frozenset, bytes)):
            raise DecodeError(f"{type(calls).__name__} is not a list of calls")
    return name_arguments_strict(list(calls), "parameters")


_MINICPM_THOUGHT = ("<|thought_start|>", "<|thought_end|>")
_MINICPM_TOOL = ("<|tool_call_start|>", "<|tool_call_end|>")


def items_minicpm(step: Any) -> Items:
    """MiniCPM3 FC: Python statements between ``<|tool_call_start|>`` and the last
    ``<|tool_call_end|>`` (after the thought), optionally fenced; each statement's value
    must be a call. Any parse or resolve failure decodes to nothing (the reference
    catches everything there); a misplaced start token fails the step."""
    text = require_text(step, "MiniCPM")
    start, end = _MINICPM_THOUGHT
    if end in text and start in text:
        thought, text = text.rsplit(end, 1)
        if start not in thought:
            raise DecodeError("<|thought_start|> after the last <|thought_end|>")
    start, end = _MINICPM_TOOL
    if not (start in text and end in text):
        return []
    calls_text = text.rsplit(end, 1)[0]
    if start not in calls_text:
        raise DecodeError("<|tool_call_start|> after the last <|tool_call_end|>")
    calls_text = calls_text.split(start, 1)[1].strip()
    if calls_text.startswith("```"):
        calls_text = calls_text.lstrip("`").strip()
        if calls_text.startswith("python"):
            calls_text = calls_text.lstrip("python").strip()
    if calls_text.endswith("```"):
        calls_text = calls_text.rstrip("`").strip()
    return [render(name, arguments, ", ") for name, arguments in statement_calls(calls_text)]


DECODERS: dict[str, Decoder] = {
    "llama_python_tag": pair(items_llama_python_tag),
    "minicpm": pair(items_minicpm),
}
