"""FunctionGemma: ``<start_function_call>call:name{args}<end_function_call>`` blocks with
the model's own argument notation, read by the same tolerant state machine as the reference.
"""

from __future__ import annotations

import re
from typing import Any

from bfcl_safe.checker.decoders.base import DecodeError, Decoder, Items, pair, render, require_text, tag_blocks
from bfcl_safe.interp import budget
from bfcl_safe.interp.builtins import COMPUTED_SIZE

_GEMMA_ESCAPE = "<escape>"
_GEMMA_TOKEN = re.compile(r"<escape>|[{}\[\]:,]")
#: The reference renders the arguments with ``repr``, which raises ``RecursionError``
#: (the step fails) past the interpreter's default recursion limit: deeper nesting is
#: refused while reading, before the containers are built.
REPR_DEPTH = 1000
_GEMMA_PREFIX = "call:"


def _gemma_scalar(text: str) -> Any:
    """An unquoted FunctionGemma value: null/true/false, a number as ``int()`` then
    ``float()`` read it, else the text itself."""
    named = {"null": None, "true": True, "false": False}
    if text in named:
        return named[text]
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


class _GemmaArguments:
    """FunctionGemma's argument notation (``{key:<escape>text<escape>,n:[1,2]}``), read by
    the same tolerant state machine as the reference: never fails, drops what does not fit.

    State: ``open`` is the stack of containers being filled (a list at the bottom that
    collects top-level values); ``keys`` holds one pending key per opened ``{`` (lists
    get none, and a ``]`` closes whatever is on top, so the two can drift apart, as in
    the reference); ``loose`` is the last value put in a dict with no key waiting,
    which a following ``:`` turns into the key; ``chars`` is the unquoted text so far.
    """

    def __init__(self) -> None:
        self.top: list = []
        self.open: list = [self.top]
        self.keys: list = []
        self.loose: Any = None
        self.chars: list[str] = []

    def read(self, text: str) -> dict:
        """The arguments: the first top-level value if it is a dict, else ``{}``. Reading
        stops once that value is closed (nothing after it can reach it); a dict nested
        deeper than :data:`REPR_DEPTH` fails the step, as the reference's ``repr`` does."""
        position = 0
        while True:
            token = _GEMMA_TOKEN.search(text, position)
            if token is None:
                self.chars.append(text[position:])
                break
            if token.start() > position:
                self.chars.append(text[position : token.start()])
            if token.group() == _GEMMA_ESCAPE:
                position = self._escaped(text, token.start())
            else:
                self._flush()
                self._punctuation(token.group())
                position = token.end()
            if len(self.open) == 1 and self.top:
                break
        self._flush()
        first = self.top[0] if self.top else None
        return first if isinstance(first, dict) else {}

    def _escaped(self, text: str, position: int) -> int:
        begin = position + len(_GEMMA_ESCAPE)
        close = text.find(_GEMMA_ESCAPE, begin)
        if close < 0:  # unterminated: the rest, token included, is the value
            value, after = text[position:], len(text)
        else:
            value, after = text[begin:close], close + len(_GEMMA_ESCAPE)
        self._flush()
        self._put(value)
        return after

    def _flush(self) -> None:
        if self.chars:
            word = "".join(self.chars).strip()
            self.chars = []
            if word:
                self._put(_gemma_scalar(word))

    def _put(self, value: Any) -> None:
        budget.charge(COMPUTED_SIZE, 1)  # one value made from model text (~100x its bytes for "[")
        target = self.open[-1]
        if isinstance(target, list):
            target.append(value)
            return
        key = self.keys[-1] if self.keys else None
        if key is None:
            self.loose = value
        else:
            target[key] = value
            self.keys[-1] = None

    def _punctuation(self, char: str) -> None:
        if char in "{[":
            container: Any = {} if char == "{" else []
            if len(self.open) > REPR_DEPTH:
                raise DecodeError(
                    f"FunctionGemma arguments nested deeper than {REPR_DEPTH} (the reference's repr fails)")
            self._put(container)
            self.open.append(container)
            if char == "{":
                self.keys.append(None)
        elif char in "}]":
            if len(self.open) > 1:
                self.open.pop()
                if char == "}" and self.keys:
                    self.keys.pop()
        elif char == ":":
            if self.loose is not None:
                key = str(self.loose)
                self.loose = None
                if isinstance(self.open[-1], dict) and self.keys:
                    self.keys[-1] = key
            return
        self.loose = None


def items_functiongemma(step: Any) -> Items:
    """FunctionGemma: ``<start_function_call>call:name{args}<end_function_call>`` blocks;
    a block without the ``call:`` prefix is skipped, one without ``{`` has no arguments."""
    out: Items = []
    for block in tag_blocks(require_text(step, "FunctionGemma"), "<start_function_call>", "<end_function_call>"):
        block = block.strip()
        if not block.startswith(_GEMMA_PREFIX):
            continue
        brace = block.find("{")
        if brace < 0:
            out.append(render(block[len(_GEMMA_PREFIX):].strip(), {}, ", "))
            continue
        name = block[len(_GEMMA_PREFIX):brace].strip()
        out.append(render(name, _GemmaArguments().read(block[brace:]), ", "))
    return out


DECODERS: dict[str, Decoder] = {"functiongemma": pair(items_functiongemma)}
