"""Decoders of Python call text: the reference's ``default_decode_execute_prompting``
(``prompting``: keyword arguments only, bare names as strings, dict-of-dict arguments
rendered as nested calls, ...) and the handlers that cut that text out of their own
format first (``gemini_tool_code``, ``phi``, ``nemotron``).

A step is parsed once, by the fast path :func:`bfcl_safe.interp.fastparse.parse_tree`
when it is in its simple subset, otherwise by the libcst half
(:mod:`~bfcl_safe.checker.decoders.prompting_cst`) behind the length and nesting
guards. The fast-path tree is consumed as documented in :mod:`bfcl_safe.interp.fastparse`
(tuples: ``("const", value, source)``, ``("name", id)``, ``("signed", op, node)``,
``("list"|"tuple"|"set", items)``, ``("dict", pairs)``, ``("call", name, args)`` with
``args`` a list of ``(keyword or None, node)``); :func:`fast_calls` is the only
reader of it here. Nothing evaluates text: where the reference ``eval``s a piece
(arithmetic in an argument) literal arithmetic is computed within limits, and the
step fails otherwise.
"""

from __future__ import annotations

from typing import Any, Callable

from bfcl_safe.checker.decoders.base import (
    CACHED_STEP_LENGTH,
    DecodeError,
    Decoder,
    Memo,
    once_per_entry,
    require_text,
    tag_blocks,
)
from bfcl_safe.checker.decoders.guard import check_libcst_input
from bfcl_safe.interp import limits
from bfcl_safe.interp.errors import RejectedInput
from bfcl_safe.interp.execute import Call
from bfcl_safe.interp.fastparse import parse_tree
from bfcl_safe.interp.text import python_syntax_error


def render_nested(value: Any) -> str:
    """An argument value as the reference writes it: a dict of dicts as a nested call."""
    if isinstance(value, dict):
        if all(isinstance(v, dict) for v in value.values()):
            if not value:
                raise DecodeError("an empty dict argument does not render (reference IndexError)")
            name = next(iter(value))
            inner = value[name]
            return f"{name}({', '.join(f'{k}={render_nested(v)}' for k, v in inner.items())})"
        return "{" + ", ".join(f"'{k}': {render_nested(v)}" for k, v in value.items()) + "}"
    try:
        return repr(value)
    except ValueError as exc:  # e.g. an integer too long to render
        raise DecodeError(str(exc)) from None


def bracketed(step: str) -> str:
    """The text the reference's prompting decoder parses: backticks, newlines and spaces
    stripped, wrapped in brackets, then spaces and quotes stripped (shared with
    ``generate``, which reproduces that decoder's error texts)."""
    text = step.strip("`\n ")
    if not text.startswith("["):
        text = "[" + text
    if not text.endswith("]"):
        text = text + "]"
    return text.strip().strip("'")


def _prompting_calls(step: Any) -> list[dict]:
    if not isinstance(step, str):
        raise DecodeError(f"a prompting step must be text, not {type(step).__name__}")
    text = bracketed(step)
    if len(text) > limits.MAX_SOURCE_LENGTH:
        raise DecodeError("step text too long")
    try:
        tree = parse_tree(text)
    except RejectedInput as exc:
        raise DecodeError(str(exc)) from None
    if tree is not None:
        try:
            return fast_calls(tree)
        except OutsideFastSubset:
            pass
    if python_syntax_error(text) is not None:
        # The reference's ast.parse fails on it too (chat text, mostly): nothing to decode.
        raise DecodeError("not Python call syntax")
    check_libcst_input(text)
    from bfcl_safe.checker.decoders.prompting_cst import prompting_calls  # libcst: on first use

    return prompting_calls(text)


class OutsideFastSubset(Exception):
    """The fast-path tree holds something only the libcst half decodes like the reference."""


def fast_calls(tree: tuple) -> list[dict]:
    """The reference's decoding on a fast-path tree (same results as the libcst half)."""
    if tree[0] == "call":
        return [_fast_call(tree)]
    if tree[0] not in ("list", "tuple", "set"):
        raise DecodeError(f"expected a list of calls, got {tree[0]}")
    calls = []
    for item in tree[1]:
        if item[0] != "call":
            raise DecodeError("every element must be a call")
        calls.append(_fast_call(item))
    return calls


#: Keywords the fast path reads as names: called, they are constants in ``ast``, and the
#: reference's call name has no part for them (``True()`` is the call ``''``).
_KEYWORD_CONSTANTS = frozenset({"True", "False", "None"})


def _fast_call(node: tuple) -> dict:
    # Positional arguments are dropped, as in the reference.
    name = "" if node[1] in _KEYWORD_CONSTANTS else node[1]
    return {name: {key: _fast_value(value) for key, value in node[2] if key is not None}}


def _fast_value(node: tuple) -> Any:
    kind = node[0]
    if kind == "const":
        return node[1]
    if kind == "name":
        return node[1]  # bare names become strings
    if kind == "signed":
        return -node[2][1]  # the reference negates whatever the unary operator
    if kind == "list":
        return [_fast_value(item) for item in node[1]]
    if kind == "tuple":
        return tuple(_fast_value(item) for item in node[1])
    if kind == "dict":
        out = {}
        for key, value in node[1]:
            try:
                out[_fast_value(key)] = _fast_value(value)
            except TypeError as exc:
                raise DecodeError(str(exc)) from None
        return out
    if kind == "call" and any(key is not None for key, _ in node[2]):
        return _fast_call(node)
    # A call without keywords renders through ast.unparse; sets are unsupported: libcst half.
    raise OutsideFastSubset


def _prompting_texts(step: Any) -> list[str]:
    texts = []
    for function_call in _prompting_calls(step):
        for name, arguments in function_call.items():
            texts.append(f"{name}({', '.join(f'{k}={render_nested(v)}' for k, v in arguments.items())})")
    return texts


#: The call texts of short step texts, as tuples (see :class:`~.base.Memo`).
_MEMO = Memo()


def display_prompting(step: Any) -> list[str]:
    # A model's steps repeat (the same answer across categories and entries that share
    # a question; ground truth replayed): short step texts are decoded once.
    if type(step) is str:
        if len(step) <= CACHED_STEP_LENGTH:
            return list(_MEMO.get(step, lambda: tuple(_prompting_texts(step))))
        # Longer ones once per entry (decoded for the check, shown in the failure record).
        return list(once_per_entry(_MEMO, step, lambda: tuple(_prompting_texts(step))))
    return _prompting_texts(step)


def decode_prompting(step: Any) -> list[Call]:
    # The call texts are the reference's; the executor parses them (never evaluates).
    return list(display_prompting(step))


# ------------------------------------------------- handlers' own text formats


def _gemini_tool_code(step: Any) -> Any:
    """Gemini (prompting): ```tool_code fences removed, then the prompting decoder."""
    return require_text(step, "Gemini").replace("```tool_code\n", "").replace("\n```", "")


def _phi(step: Any) -> Any:
    """Phi (prompting): a leading ```json and then a leading ```python removed."""
    text = require_text(step, "Phi")
    if text.startswith("```json"):
        text = text[len("```json"):]
    if text.startswith("```python"):
        text = text[len("```python"):]
    return text


def _nemotron(step: Any) -> Any:
    """Nemotron: the first ``<TOOLCALL>...</TOOLCALL>`` as prompting text (none: no call)."""
    found = tag_blocks(require_text(step, "Nemotron"), "<TOOLCALL>", "</TOOLCALL>", first_only=True)
    return found[0] if found else None


def _variant(transform: Callable[[Any], Any]) -> Decoder:
    def decode(step: Any) -> list[Call]:
        text = transform(step)
        return [] if text is None else decode_prompting(text)

    def display(step: Any) -> list[str]:
        text = transform(step)
        return [] if text is None else display_prompting(text)

    return decode, display


DECODERS: dict[str, Decoder] = {
    "prompting": (decode_prompting, display_prompting),
    "gemini_tool_code": _variant(_gemini_tool_code),
    "phi": _variant(_phi),
    "nemotron": _variant(_nemotron),
}
