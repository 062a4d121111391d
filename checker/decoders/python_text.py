"""Decoders of handlers that read model text as Python: ``llama_python_tag`` (``eval``)
and ``minicpm`` (``ast.parse``), with their libcst halves.

- :func:`~.python_text_cst.literal_value` stands in for the ``eval(text)`` of the Llama 3.1 handler:
  :func:`~bfcl_safe.checker.decoders.evaluate.evaluate` computes literals, displays,
  operators (``{...} | {...}`` is a dict union: Llama's `` | ``-joined calls decode to
  the last one, as in the reference) and pure builtins; anything that would make
  ``eval`` look up a name or run code fails the step. This is where we knowingly
  differ from the reference: for such text it runs the model's code, we refuse.
- :func:`~.python_text_cst.statement_calls` stands in for the MiniCPM handler's ``ast.parse`` (module
  mode) + ``resolve_ast_call`` on every statement; like the reference, any failure
  means "no calls" (its ``except:`` catches everything).
"""

from __future__ import annotations

from typing import Any

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

# ---------------------------------------------------------------------- handlers


def items_llama_python_tag(step: Any) -> Items:
    """Llama 3.1 FC: ``<|python_tag|>`` removed; with a ``;`` the parts are JSON objects,
    otherwise the text is a Python literal (the reference ``eval``s it: see
    :func:`literal_value`); objects carry ``name`` and ``parameters``."""
    text = require_text(step, "Llama").replace("<|python_tag|>", "")
    if ";" in text:
        calls: Any = [load_json(part) for part in text.split(";")]
    else:
        from bfcl_safe.checker.decoders.python_text_cst import literal_value  # libcst: on first use

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
    from bfcl_safe.checker.decoders.python_text_cst import statement_calls  # libcst: on first use

    return [render(name, arguments, ", ") for name, arguments in statement_calls(calls_text)]


DECODERS: dict[str, Decoder] = {
    "llama_python_tag": pair(items_llama_python_tag),
    "minicpm": pair(items_minicpm),
}
