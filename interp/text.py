"""Text front-end: Python call text -> :class:`CallSpec`.

Two parsers, one language. :mod:`interp.fastparse` handles the simple common texts
quickly; everything else goes to the libcst front-end (:mod:`interp.cst_front`),
which is default deny: one handler per accepted libcst node type, every other node
rejected. Tests check that the fast path, when it answers, answers exactly what the
libcst path gives.

Accepted: one call of a plain name, whose arguments are literals (numbers, strings,
bytes, ``True``/``False``/``None``, lists, tuples, dicts, sets), unary ``-``/``+``
on a number, bare names (which fail at run time with ``NameError`` as under
``eval``) and nested calls of the same form. That is every string the reference's
ground truth and decoders produce.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from interp import limits
from interp.callspec import CallSpec, Container, Failure, NameRef, SourceString
from interp.errors import RejectedInput
from interp.fastparse import parse_tree

#: An identifier followed by ``(``: what the reference's instance-name rewrite touches.
REWRITE_PATTERN = re.compile(r"\b([a-zA-Z_]\w*)\s*(?=\()")
#: Texts up to this length are cached (ground truth repeats across every model scored).
CACHED_TEXT_LENGTH = 8192


def _is_deferred(value: Any) -> bool:
    return isinstance(value, (CallSpec, NameRef, SourceString, Container, Failure))


def bracket_depth(text: str) -> int:
    """Deepest bracket nesting outside string literals (a cheap pre-parse guard:
    libcst itself would recurse on every level)."""
    depth = deepest = 0
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "([{":
            depth += 1
            if depth > deepest:
                deepest = depth
        elif ch in ")]}":
            depth -= 1
        elif ch in "'\"":
            quote = text[i : i + 3] if text[i : i + 3] in ("'''", '"""') else ch
            i += len(quote)
            while i < n and not text.startswith(quote, i):
                i += 2 if text[i] == "\\" else 1
            i += len(quote)
            continue
        elif ch == "#":
            end = text.find("\n", i)
            i = n if end == -1 else end
            continue
        i += 1
    return deepest


def _parse(text: str) -> CallSpec:
    if len(text) > limits.MAX_SOURCE_LENGTH:
        raise RejectedInput(f"call text longer than {limits.MAX_SOURCE_LENGTH} characters")
    tree = parse_tree(text)
    if tree is not None and tree[0] == "call":
        return _from_tree(tree)
    if python_syntax_error(text) is not None:
        # Not Python at all (CPython's parser says so, cheaply): no need for libcst.
        raise RejectedInput("invalid syntax", text, None)
    from interp.cst_front import parse_with_libcst

    return parse_with_libcst(text)


def _from_tree(node: tuple) -> Any:
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
        pairs = [(_from_tree(k), _from_tree(v)) for k, v in node[1]]
        if any(_is_deferred(k) or _is_deferred(v) for k, v in pairs):
            return Container(dict, tuple(pairs))
        try:
            return dict(pairs)
        except TypeError as exc:
            return Failure(TypeError, str(exc))
    items = [_from_tree(item) for item in node[1]]
    container = {"list": list, "tuple": tuple, "set": set}[kind]
    if any(_is_deferred(v) for v in items):
        return Container(container, tuple(items))
    if container is set:
        try:
            return set(items)
        except TypeError as exc:
            return Failure(TypeError, str(exc))
    return container(items)


@lru_cache(maxsize=65536)
def _parse_cached(text: str) -> CallSpec | tuple:
    try:
        return _parse(text)
    except RejectedInput as exc:
        # Cache the rejection as data: a cached exception object would keep its
        # traceback, and through it every frame (and their locals) it ever crossed.
        return (exc.reason, exc.source, exc.position)


def parse_call(text: str) -> CallSpec:
    """Parse one call text; raise :class:`RejectedInput` for anything outside the language."""
    if not isinstance(text, str):
        raise RejectedInput(f"call text must be a string, not {type(text).__name__}")
    if len(text) <= CACHED_TEXT_LENGTH:
        result = _parse_cached(text)
        if type(result) is tuple:
            raise RejectedInput(*result)
        return result
    return _parse(text)


def python_syntax_error(text: str, rejection: RejectedInput | None = None) -> str | None:
    """The ``str()`` of the ``SyntaxError`` that ``eval(text)`` would raise, if any.

    Used only on the error path, to report a malformed call with the exact text the
    reference's ``eval`` gives (its result strings are compared). ``ast.parse``
    builds a tree and runs nothing; the length and nesting guards come first.
    """
    import ast

    if len(text) > limits.MAX_SOURCE_LENGTH or bracket_depth(text) > limits.MAX_NESTING_DEPTH:
        return None
    try:
        ast.parse(text.lstrip(" \t"), filename="<string>", mode="eval")
    except SyntaxError as exc:
        return str(exc)
    except (ValueError, RecursionError, MemoryError):
        return None
    if rejection is not None and rejection.reason.startswith("keyword argument repeated:"):
        # Found by CPython's compiler, not its parser: same message, same form.
        line = 1 if rejection.position is None else rejection.source.count("\n", 0, rejection.position) + 1
        return f"{rejection.reason} (<string>, line {line})"
    return None
