"""Text front-end: Python call text -> :class:`CallSpec`.

Two parsers, one language. :mod:`interp.fastparse` handles the simple common texts
quickly; everything else goes to the libcst front-end (:mod:`interp.cst_front`),
which is default deny: one handler per accepted libcst node type, every other node
rejected. Tests check that the fast path, when it answers, answers exactly what the
libcst path gives.

Accepted: one call of a plain name, whose arguments are literals (numbers, strings,
bytes, ``True``/``False``/``None``, lists, tuples, dicts, sets), bare names (which fail
at run time with ``NameError`` as under ``eval``), nested calls of the same form, and
operators, comparisons, ``and``/``or``/``if``-``else`` and subscripts over them
(computed at run time on plain values by :mod:`interp.builtins`, sizes checked first).
Ground truth and the decoders' texts use only the literal part.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from bfcl_safe.interp import budget, limits
from bfcl_safe.interp.budget import LIBCST_CHARS
from bfcl_safe.interp.callspec import CallSpec, NameRef, SourceString, dict_value, sequence_value
from bfcl_safe.interp.errors import RejectedInput
from bfcl_safe.interp.fastparse import parse_tree
from bfcl_safe.interp.lexical import REWRITE_PATTERN, bracket_depth

#: Texts up to this length are cached (ground truth repeats across every model scored).
CACHED_TEXT_LENGTH = 4096


def _parse(text: str, handed: list[int] | None = None) -> CallSpec:
    """Parse ``text``; what it hands libcst is charged to ``libcst_chars`` first, or, with
    ``handed``, appended to it for the caller to charge (a cached parse charges at every use)."""
    if len(text) > limits.MAX_SOURCE_LENGTH:
        raise RejectedInput(f"call text longer than {limits.MAX_SOURCE_LENGTH} characters")
    tree = parse_tree(text)
    if tree is not None and tree[0] == "call":
        spec: CallSpec = _from_tree(tree)
        return spec
    if python_syntax_error(text) is not None:
        # Not Python at all (CPython's parser says so, cheaply): no need for libcst.
        raise RejectedInput("invalid syntax", text, None)
    from bfcl_safe.interp.cst_front import parse_with_libcst

    return parse_with_libcst(text, handed)


def _from_tree(node: tuple[Any, ...]) -> Any:
    """A fast-path tree (see :mod:`interp.fastparse`) to values, with the same
    semantics as the libcst handlers above."""
    kind = node[0]
    if kind == "const":
        value, source = node[1], node[2]
        if type(value) is str and REWRITE_PATTERN.search(source):
            return SourceString((source,))
        return value
    if kind == "call":
        args = []
        kwargs = []
        for key, value in node[2]:
            if key is None:
                args.append(_from_tree(value))
            else:
                kwargs.append((key, _from_tree(value)))
        return CallSpec(name=node[1], args=tuple(args), kwargs=tuple(kwargs))
    if kind == "name":
        return NameRef(node[1])
    if kind == "signed":
        value = node[2][1]
        return -value if node[1] == "-" else +value
    if kind == "dict":
        return dict_value([(_from_tree(k), _from_tree(v)) for k, v in node[1]])
    return sequence_value({"list": list, "tuple": tuple, "set": set}[kind], [_from_tree(item) for item in node[1]])


@lru_cache(maxsize=8192)
def _parse_cached(text: str) -> tuple[CallSpec | tuple[Any, ...], int]:
    """The parse of ``text`` (or its rejection) and the characters it handed libcst."""
    handed: list[int] = []
    try:
        return _parse(text, handed), sum(handed)
    except RejectedInput as exc:
        # Cache the rejection as data: a cached exception object would keep its
        # traceback, and through it every frame (and their locals) it ever crossed.
        return (exc.reason, exc.source, exc.position), sum(handed)


def parse_call(text: str) -> CallSpec:
    """Parse one call text; raise :class:`RejectedInput` for anything outside the language.
    What a parse hands libcst is charged to the active budget's ``libcst_chars`` (a cached
    parse, at every use: a verdict never depends on which entry parsed a text first)."""
    if not isinstance(text, str):
        raise RejectedInput(f"call text must be a string, not {type(text).__name__}")
    if len(text) <= CACHED_TEXT_LENGTH:
        result, handed = _parse_cached(text)
        if handed:
            budget.charge(LIBCST_CHARS, handed)
        if type(result) is tuple:
            raise RejectedInput(*result)
        return result  # type: ignore[return-value]  # (not a tuple: a CallSpec)
    return _parse(text)


def _parse_error(text: str) -> str | None:
    """``str()`` of the SyntaxError ``ast.parse`` raises on ``text`` in eval mode, or None
    (other errors propagate, so that they are never remembered)."""
    import ast

    try:
        ast.parse(text.lstrip(" \t"), filename="<string>", mode="eval")
    except SyntaxError as exc:
        return str(exc)
    return None


#: The same malformed call text recurs (one mistake in several steps and entries: 58 calls,
#: 32 texts on the real FC results); a parse costs about 170,000 instructions.
_parse_error_cached = lru_cache(maxsize=1024)(_parse_error)


def python_syntax_error(text: str, rejection: RejectedInput | None = None) -> str | None:
    """The ``str()`` of the ``SyntaxError`` that ``eval(text)`` would raise, if any.

    Used only on the error path, to report a malformed call with the exact text the
    reference's ``eval`` gives (its result strings are compared). ``ast.parse``
    builds a tree and runs nothing; the length and nesting guards come first.
    """
    if len(text) > limits.MAX_SOURCE_LENGTH or bracket_depth(text) > limits.MAX_NESTING_DEPTH:
        return None
    try:
        message = _parse_error_cached(text) if len(text) <= CACHED_TEXT_LENGTH else _parse_error(text)
    except (ValueError, RecursionError, MemoryError):
        return None
    if message is not None:
        return message
    if rejection is not None and rejection.reason.startswith("keyword argument repeated:"):
        # Found by CPython's compiler, not its parser: same message, same form.
        line = 1 if rejection.position is None else rejection.source.count("\n", 0, rejection.position) + 1
        return f"{rejection.reason} (<string>, line {line})"
    return None
