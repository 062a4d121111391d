"""FunctionGemma: ``<start_function_call>call:name{args}<end_function_call>`` blocks with
the model's own argument notation, read by the same tolerant state machine as the reference.
"""

from __future__ import annotations

import re
from typing import Any

from bfcl_safe.checker.decoders.base import Decoder, Items, pair, render, require_text

_GEMMA_CALL = re.compile(r"<start_function_call>(.*?)<end_function_call>", re.DOTALL)
_GEMMA_ESCAPE = "<escape>"
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
        position = 0
        while position < len(text):
            if text.startswith(_GEMMA_ESCAPE, position):
                position = self._escaped(text, position)
                continue
            char = text[position]
            if char in "{}[]:,":
                self._flush()
                self._punctuation(char)
            else:
                self.chars.append(char)
            position += 1
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
    for block in _GEMMA_CALL.findall(require_text(step, "FunctionGemma")):
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
