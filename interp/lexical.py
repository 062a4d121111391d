"""What the parsers learn of a call text before parsing it: how deep libcst would nest it
(:func:`bracket_depth`, the guard in front of libcst) and where the reference's
instance-name rewrite would touch it (:data:`REWRITE_PATTERN`).

Below both front-ends (:mod:`interp.text` and :mod:`interp.cst_front`), which use it,
so that neither imports the other's module for it.
"""

from __future__ import annotations

import functools
import re

#: An identifier followed by ``(``: what the reference's instance-name rewrite touches.
REWRITE_PATTERN = re.compile(r"\b([a-zA-Z_]\w*)\s*(?=\()")


#: Tokens for :func:`bracket_depth`: just enough of Python's to tell brackets,
#: operators and separators from the text of string literals and comments. Compiled on
#: first use (only a text bound for libcst is measured: none of the real corpora's).
_DEPTH_TOKEN_SOURCE = (
    r"""
    (?P<string>'\'\'[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*(?:'\'\'|\\?\Z)
              |\"\"\"[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*(?:\"\"\"|\\?\Z)
              |'[^'\\]*(?:\\.[^'\\]*)*(?:'|\\?\Z)|"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z))
  | (?P<comment>\#[^\n]*)
  | (?P<word>[^\W\d]\w*)
  | (?P<number>\d[\w.]*)
  | (?P<open>[(\[{])
  | (?P<close>[)\]}])
  | (?P<op>\*\*|//|<<|>>|<=|>=|==|!=|->|:=|[-+*/%@&|^~<>!.])
  | (?P<separator>[,:;=])
  | (?P<space>\s+|\\)
  | (?P<other>.)
    """
)


@functools.cache
def _depth_token() -> re.Pattern[str]:
    return re.compile(_DEPTH_TOKEN_SOURCE, re.VERBOSE | re.DOTALL)

#: Words that chain operands like operators do (libcst nests one node per use).
_OPERATOR_WORDS = frozenset({"not", "and", "or", "if", "else", "lambda", "in", "is", "await", "for", "yield"})
_STRING_PREFIXES = frozenset({"r", "u", "b", "f", "br", "rb", "fr", "rf"})


def bracket_depth(text: str) -> int:
    """How deep libcst would nest ``text``, cheaply, before it is asked to parse it:
    the deepest bracket nesting outside string literals and comments, or the longest
    chain of operators, trailers (``f()()``, ``x[0][0]``) and implicitly concatenated
    strings along one path of brackets, whichever is larger. libcst recurses on every
    level of either (quadratic time, then a native stack overflow that kills the
    process), so this is the guard in front of it."""
    depth = deepest = 0
    stack: list[int] = []  # the chain of each enclosing bracket level when it opened
    base = chain = longest = 0  # chains summed over enclosing levels; this level's chain
    after_string = after_close = False
    lambdas = 0  # lambdas whose ":" is still to come (it does not end the chain)
    for token in _depth_token().finditer(text):
        kind = token.lastgroup
        if kind == "space" or kind == "comment":
            continue
        if kind == "string":
            if after_string:
                chain += 1  # implicit concatenation
            after_string = True
            after_close = False
        elif kind == "word":
            end = token.end()
            if text[end : end + 1] in ("'", '"') and token.group().lower() in _STRING_PREFIXES:
                continue  # a string prefix: the string token follows
            if token.group() in _OPERATOR_WORDS:
                chain += 1
                lambdas += token.group() == "lambda"
            after_string = after_close = False
        elif kind == "open":
            if after_close or after_string:
                chain += 1  # a trailer on a call, subscript or string: f()(), x[0][0]
            stack.append(chain)
            base += chain
            chain = 0
            depth += 1
            if depth > deepest:
                deepest = depth
            after_string = after_close = False
        elif kind == "close":
            if stack:
                chain = stack.pop()
                base -= chain
            depth -= 1
            after_close = True
            after_string = False
        elif kind == "separator":
            if token.group() == ":" and lambdas:
                lambdas -= 1
            else:
                chain = 0
            after_string = after_close = False
        elif kind == "op":
            chain += 1
            after_string = after_close = False
        else:
            after_string = after_close = False
        if base + chain > longest:
            longest = base + chain
    return max(deepest, longest)
