"""A fast path for the common, simple call texts, in front of the libcst front-end.

libcst builds a full concrete syntax tree (~100 µs a call, plus a heavy import);
nearly every real call text is a plain call with quoted strings, decimal numbers
and containers. This module tokenizes and parses exactly that subset by recursive
descent into a small tree of tuples. Anything outside it — escapes, string
prefixes, comments, operators, attributes, non-ASCII names, dunders, repeated
keywords, limits — makes it answer ``None``, and the caller falls back to libcst,
which gives the authoritative result or rejection. Tests check that whenever this
path answers, it answers exactly what the libcst path gives.

Tree nodes: ``("const", value, source)``, ``("name", id)``, ``("signed", op, node)``,
``("list"|"tuple"|"set", items)``, ``("dict", pairs)``, ``("call", name, args)``
with ``args`` a list of ``(keyword or None, node)``.
"""

from __future__ import annotations

import keyword
import re
from typing import Any

from bfcl_safe.interp import limits
from bfcl_safe.interp.errors import RejectedInput

_TOKEN = re.compile(
    r"""
    [ \t\n]*
    (?:
    (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<number>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
  | (?P<string>'(?:[^'\\\n\r]|\\[\\'"ntr]|\\x[0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4})*'
              |"(?:[^"\\\n\r]|\\[\\'"ntr]|\\x[0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4})*")
  | (?P<punct>[()\[\]{},:=+-])
  | (?P<other>.)
    )
    """,
    re.VERBOSE | re.DOTALL,
)
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|.)")
_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "t": "\t", "r": "\r"}
_SIMPLE_LITERAL = re.compile(
    r"'(?:[^'\\\n\r]|\\[\\'\"ntr]|\\x[0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4})*'"
    r'|"(?:[^"\\\n\r]|\\[\\\'"ntr]|\\x[0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4})*"')
_AFTER_NUMBER = re.compile(r"[A-Za-z0-9_.'\"]")
_CONSTANTS = {"True": True, "False": False, "None": None}


class _Bail(Exception):
    """Outside the fast subset: use libcst."""


def _limit(reason: str) -> RejectedInput:
    # Past a limit the answer is a rejection whatever the syntax: libcst is not asked.
    return RejectedInput(reason)


_MAX_TOKENS = 4 * limits.MAX_LITERAL_ELEMENTS


def _tokenize(text: str) -> list[tuple[str, str]]:
    """Tokens of ``text``; bails early on deep nesting or too many tokens, so
    hostile input costs little before libcst (or a rejection) takes over."""
    tokens: list[tuple[str, str]] = []
    append = tokens.append
    depth = 0
    position = 0
    text = text.rstrip(" \t\n")
    # Every position matches (``other`` takes any character no token starts with), so
    # the matches are contiguous and none is retried from a later start: a search that
    # could fail after the leading blanks would rescan them from each (quadratic).
    for found in _TOKEN.finditer(text):
        kind: str = found.lastgroup  # type: ignore[assignment]  # (every position matches a group)
        if kind == "other":
            raise _Bail  # a character no token matches
        position = found.end()
        value = found.group(kind)
        if kind == "punct":
            if value in "([{":
                depth += 1
                if depth > limits.MAX_NESTING_DEPTH:
                    raise _limit(f"nesting deeper than {limits.MAX_NESTING_DEPTH}")
            elif value in ")]}":
                depth -= 1
        elif kind == "number":
            if _AFTER_NUMBER.match(text, position):
                raise _Bail  # 1j, 1_000, 0x1, 1.2.3, 1e5e ...
            if len(value) > 1 and value[0] == "0" and value.isdigit():
                raise _Bail  # leading zeros: a syntax error under eval
        append((kind, value))
        if len(tokens) > _MAX_TOKENS:
            raise _limit(f"call text has more than {_MAX_TOKENS} tokens")
    append(("end", ""))
    return tokens


class _Parser:
    __slots__ = ("tokens", "index", "elements")

    def __init__(self, tokens: list[tuple[str, str]]):
        self.tokens = tokens
        self.index = 0
        self.elements = 0

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.index]

    def take(self) -> tuple[str, str]:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def expect(self, value: str) -> None:
        if self.take()[1] != value:
            raise _Bail

    def count(self, n: int) -> None:
        self.elements += n
        if self.elements > limits.MAX_LITERAL_ELEMENTS:
            raise _limit(f"literal has more than {limits.MAX_LITERAL_ELEMENTS} elements")

    def call(self, name: str, depth: int) -> tuple[Any, ...]:
        if name.startswith("__"):
            raise _Bail
        self.expect("(")
        args: list[tuple[str | None, Any]] = []
        seen: set[str] = set()
        while self.peek()[1] != ")":
            kind, value = self.peek()
            if kind == "name" and self.tokens[self.index + 1][1] == "=":
                if value in seen or keyword.iskeyword(value):
                    raise _Bail
                seen.add(value)
                self.index += 2
                args.append((value, self.value(depth + 1)))
            else:
                if seen:
                    raise _Bail  # positional after keyword
                args.append((None, self.value(depth + 1)))
            if self.peek()[1] == ",":
                self.index += 1
            elif self.peek()[1] != ")":
                raise _Bail
        self.index += 1
        self.count(len(args))
        return ("call", name, args)

    def items(self, close: str, depth: int) -> tuple[list[Any], bool]:
        """Comma-separated values up to ``close``; also whether a comma was seen."""
        items = []
        comma = False
        while self.peek()[1] != close:
            items.append(self.value(depth + 1))
            if self.peek()[1] == ",":
                self.index += 1
                comma = True
            elif self.peek()[1] != close:
                raise _Bail
        self.index += 1
        self.count(len(items))
        return items, comma

    def value(self, depth: int) -> Any:
        if depth > limits.MAX_NESTING_DEPTH:
            raise _Bail
        kind, value = self.take()
        if kind == "string":
            if self.peek()[0] == "string" or len(value) > limits.MAX_STRING_LENGTH:
                raise _Bail  # implicit concatenation, triple quotes: libcst
            return ("const", _unescape(value), value)
        if kind == "number":
            if len(value) > limits.MAX_INT_DIGITS:
                raise _Bail
            number = float(value) if ("." in value or "e" in value or "E" in value) else int(value)
            return ("const", number, value)
        if kind == "name":
            if keyword.iskeyword(value) and value not in _CONSTANTS:
                raise _Bail
            if self.peek()[1] == "(":
                return self.call(value, depth)
            if value in _CONSTANTS:
                return ("const", _CONSTANTS[value], value)
            if value.startswith("__"):
                raise _Bail
            return ("name", value)
        if value in ("-", "+"):
            operand = self.value(depth + 1)
            if operand[0] != "const" or type(operand[1]) not in (int, float):
                raise _Bail
            return ("signed", value, operand)
        if value == "[":
            return ("list", self.items("]", depth)[0])
        if value == "(":
            items, comma = self.items(")", depth)
            if len(items) == 1 and not comma:
                return items[0]  # parenthesised value
            return ("tuple", items)
        if value == "{":
            return self.braces(depth)
        raise _Bail

    def braces(self, depth: int) -> tuple[Any, ...]:
        if self.peek()[1] == "}":
            self.index += 1
            return ("dict", [])
        first = self.value(depth + 1)
        if self.peek()[1] != ":":
            items = [first]
            while self.peek()[1] == ",":
                self.index += 1
                if self.peek()[1] == "}":
                    break
                items.append(self.value(depth + 1))
            self.expect("}")
            self.count(len(items))
            return ("set", items)
        pairs = []
        key = first
        while True:
            self.expect(":")
            pairs.append((key, self.value(depth + 1)))
            if self.peek()[1] != ",":
                self.expect("}")  # two entries need a comma between them
                break
            self.index += 1
            if self.peek()[1] == "}":
                self.index += 1
                break
            key = self.value(depth + 1)
        self.count(len(pairs))
        return ("dict", pairs)


def _unescape(source: str) -> str:
    body = source[1:-1]
    return _ESCAPE.sub(_escaped, body) if "\\" in body else body


def _escaped(match: re.Match[str]) -> str:
    code = match.group(1)
    if len(code) > 1:  # \xhh or \uhhhh
        return chr(int(code[1:], 16))
    return _ESCAPES[code]


def decode_simple_literal(source: str) -> str | None:
    """The value of a plain quoted string literal with at most the escapes
    ``\\ \' \" \n \t \r``; ``None`` for any other literal."""
    if _SIMPLE_LITERAL.fullmatch(source):
        return _unescape(source)
    return None


def parse_tree(text: str) -> tuple[Any, ...] | None:
    """The tree of one expression (a call, or a list/tuple of calls), or ``None``
    when ``text`` is outside the fast subset. Raises :class:`RejectedInput` past a
    limit (length, nesting, element or token count)."""
    if len(text) > limits.MAX_SOURCE_LENGTH:
        raise _limit(f"call text longer than {limits.MAX_SOURCE_LENGTH} characters")
    stripped = text.lstrip(" \t")
    if stripped.startswith("\n") or "\x00" in stripped:
        return None  # (CPython's parser refuses a NUL anywhere, even in a string literal)
    flat = _flat_tree(stripped)
    return flat if flat is not None else _token_tree(stripped)


def _token_tree(stripped: str) -> tuple[Any, ...] | None:
    try:
        parser = _Parser(_tokenize(stripped))
        tree: tuple[Any, ...] = parser.value(0)
        if parser.peek()[0] != "end":
            return None
        return tree
    except RejectedInput:
        raise
    except (_Bail, IndexError, ValueError, OverflowError):
        return None


#: The commonest call text of all, ``name(value, ..., key=value, ...)`` with values that
#: are plain quoted strings (no backslash), decimal numbers, True, False or None, on one
#: line.
_FLAT_CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\(([^()\[\]{}\\\n\r]*)\)[ \t\n]*")
_FLAT_ARGUMENT = re.compile(
    r"""[ \t]*(?:([A-Za-z_][A-Za-z0-9_]*)[ \t]*=[ \t]*)?"""
    r"""('[^'\n\r]*'|"[^"\n\r]*"|(-?)((?:0|[1-9][0-9]*)(\.[0-9]+)?)(?![0-9A-Za-z_.'"])|True|False|None)"""
    r"""[ \t]*(?:,|$)"""
)
_FLAT_LENGTH = 2000


def _flat_tree(stripped: str) -> tuple[Any, ...] | None:
    """The tree :func:`_token_tree` gives for a flat call, in a few regular-expression
    matches instead of a token list; ``None`` for any other text (which is then
    tokenized). Short texts only: no limit can be reached here."""
    if len(stripped) > _FLAT_LENGTH:
        return None
    call = _FLAT_CALL.fullmatch(stripped)
    if call is None:
        return None
    name, body = call.groups()
    if name.startswith("__") or keyword.iskeyword(name):
        return None
    args: list[tuple[str | None, Any]] = []
    seen: set[str] = set()
    position = 0
    end = len(body.rstrip(" \t"))
    while position < end:
        argument = _FLAT_ARGUMENT.match(body, position, end)
        if argument is None:
            return None
        key, source, sign, number, fraction = argument.groups()
        if key is None:
            if seen:
                return None  # positional after keyword
        elif key in seen or keyword.iskeyword(key):
            return None
        else:
            seen.add(key)
        if number is None:
            value = ("const", _CONSTANTS[source], source) if source in _CONSTANTS else ("const", source[1:-1], source)
        else:
            value = ("const", float(number) if fraction else int(number), number)
            if sign:
                value = ("signed", "-", value)
        args.append((key, value))
        position = argument.end()
    return ("call", name, args)
