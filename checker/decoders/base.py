"""What every decoder family shares: the error type, the decoded-call record, and the
small helpers that turn a family's ``items`` function into a (decode, display) pair.

A decoder is a pair of functions on one model step as stored in a result file:
``decode(step) -> list[Call]`` (what the executor runs) and ``display(step) ->
list[str]`` (the reference's call texts, for score files and ``explain``). Both
raise :class:`DecodeError` where the reference's decoding fails (the scorer then
skips the step, like the reference). Families that first build :class:`Parsed`
records get both functions from :func:`pair`.
"""

from __future__ import annotations

import json
import unicodedata
from collections import OrderedDict
from typing import Any, Callable, Hashable, NamedTuple

from bfcl_safe.interp import budget, limits
from bfcl_safe.interp.errors import BfclSafeError
from bfcl_safe.interp.execute import Call
from bfcl_safe.interp.fc_front import fc_call

#: Step texts and FC argument texts up to this length are decoded once and remembered,
#: CACHED_TEXTS of each at most (a few tens of MB at worst, whatever the input).
CACHED_STEP_LENGTH = 2048
CACHED_TEXTS = 2048


class DecodeError(BfclSafeError, ValueError):
    """The step does not decode; the scorer skips it, like the reference."""


def identifier(name: str) -> str:
    """A Python identifier as CPython's parser keeps it: NFKC-normalised unless it is
    pure ASCII (``ｌｓ`` is ``ls``, ``ﬁnd`` is ``find``). Only identifiers: string
    literals keep their text."""
    return name if name.isascii() else unicodedata.normalize("NFKC", name)


#: ``(decode, display)``: see the module docstring.
Decoder = tuple[Callable[[Any], list[Call]], Callable[[Any], list[str]]]


class Parsed(NamedTuple):
    """One decoded call: its name and arguments, and the exact text the reference builds."""

    name: Any
    arguments: dict
    text: str


#: A decoded step: calls, or bare text the reference keeps as a "call" (granite).
Items = list["Parsed | str"]


def render(name: Any, arguments: Any, separator: str) -> Parsed:
    """``name(k=repr(v)<separator>...)``, formatted like the handlers' f-strings."""
    if not isinstance(arguments, dict):
        raise DecodeError(f"arguments of {name!r} must be an object, not {type(arguments).__name__}")
    try:
        text = f"{name}({separator.join(f'{k}={v!r}' for k, v in arguments.items())})"
    except (ValueError, RecursionError) as exc:  # e.g. repr of an over-long integer
        raise DecodeError(f"cannot render the arguments of {name!r}: {exc}") from None
    return Parsed(name, arguments, text)


_JSON_SCALARS = (str, int, float, bool, type(None))


def _jsonish(value: Any) -> bool:
    """JSON-shaped (tuples allowed): the FC front-end reproduces its ``repr`` round trip.
    Deeper than the nesting limit counts as JSON-shaped; ``fc_call`` then rejects it."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > limits.MAX_NESTING_DEPTH:
            return True
        if type(item) in _JSON_SCALARS:
            continue
        if type(item) in (list, tuple):
            stack.extend((v, depth + 1) for v in item)
        elif type(item) is dict:
            stack.extend((k, depth + 1) for k in item)
            stack.extend((v, depth + 1) for v in item.values())
        else:
            return False
    return True


def as_call(item: "Parsed | str") -> Call:
    """What the executor runs for one item: an FC-style call for a plain
    ``name(keyword=json value, ...)`` (no text round trip), otherwise the reference's
    text (parsed by the executor's default-deny front-end, never evaluated)."""
    if isinstance(item, str):
        return item
    if _jsonish(item.arguments):
        call = fc_call(item.name, item.arguments)
        if not isinstance(call, str):
            return call
    # Not a plain call (odd name or keyword), or Python values: the exact reference text.
    return item.text


def texts(items: Items) -> list[str]:
    return [item if isinstance(item, str) else item.text for item in items]


class _Recorder(budget.Budget):
    """Counts what a computation charges, passing every charge on to the budget that was
    active (if any), so that a remembered result can charge the same again."""

    __slots__ = ("outer", "record")

    def __init__(self, outer: budget.Budget | None) -> None:
        # (the outer budget's limits, not a copy: a recorder never changes them)
        self.limits = limits.ENTRY_BUDGETS if outer is None else outer.limits
        self.spent = {}
        self.outer = outer
        self.record: dict[str, int] = {}

    def charge(self, kind: str, amount: int = 1) -> None:
        if self.outer is not None:
            self.outer.charge(kind, amount)
        self.record[kind] = self.record.get(kind, 0) + amount


class Memo:
    """Decoded step texts remembered, at most ``size`` (the oldest go first): a model's
    steps repeat across entries, and a failed entry's steps are decoded again to be
    shown. A failure is kept as its message (an exception object would keep every frame
    of its traceback alive). What the decoding charged to the entry's budget (values it
    computed) is charged again on every use, so a verdict never depends on which entry
    decoded a text first; a decoding that exceeded the budget is not remembered."""

    def __init__(self, size: int | None = CACHED_TEXTS, replay: bool = True) -> None:
        #: None: no bound (a memo that lives only as long as one entry).
        self.size = size
        #: False: a remembered result charges nothing again (one entry's own memo).
        self.replay = replay
        self._entries: OrderedDict[Hashable, tuple[Any, str | None, dict[str, int]]] = OrderedDict()

    def get(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        entry = self._entries.get(key)
        if entry is None:
            recorder = _Recorder(budget.current())
            value, failure = None, None
            with recorder.active():
                try:
                    value = compute()
                except DecodeError as exc:
                    failure = str(exc)
            entry = (value, failure, recorder.record)
            self._entries[key] = entry
            if self.size is not None and len(self._entries) > self.size:
                self._entries.popitem(last=False)
        elif self.replay:
            for kind, amount in entry[2].items():
                budget.charge(kind, amount)
        if entry[1] is not None:
            raise DecodeError(entry[1])
        return entry[0]


def once_per_entry(family: Memo, key: Hashable, compute: Callable[[], Any]) -> Any:
    """``compute()`` once per entry, as ``family.get`` (same failures), remembered by the
    entry's active budget (``Budget.memo``, a :class:`Memo` per family there) for as long
    as the entry is scored: a long step text is decoded (and its work charged) once, for
    the check, and the failure record's display reuses it. Without an active budget it is
    computed each time."""
    active = budget.current()
    while isinstance(active, _Recorder):  # (inside a memo's computation: the entry's own budget)
        active = active.outer
    if active is None:
        return compute()
    memo = active.memo.get(family)
    if memo is None:
        memo = active.memo[family] = Memo(size=None, replay=False)
    return memo.get(key, compute)


def pair(items: Callable[[Any], Items]) -> Decoder:
    """The (decode, display) pair of a family's ``items`` function; step texts up to
    CACHED_STEP_LENGTH are decoded once (:class:`Memo`)."""
    memo = Memo()

    def parsed(step: Any) -> Items:
        if type(step) is str:
            if len(step) <= CACHED_STEP_LENGTH:
                return memo.get(step, lambda: items(step))
            return once_per_entry(memo, step, lambda: items(step))
        return items(step)

    def decode(step: Any) -> list[Call]:
        return [as_call(item) for item in parsed(step)]

    def display(step: Any) -> list[str]:
        return texts(parsed(step))

    decode.__doc__ = display.__doc__ = items.__doc__
    return decode, display


def tag_blocks(text: str, opener: str, closer: str, first_only: bool = False) -> list[str]:
    """The texts between each ``opener`` and the next ``closer``, left to right, as
    ``re.findall(opener + "(.*?)" + closer, text, re.DOTALL)`` gives them (the first one
    only with ``first_only``, as ``re.search``), in linear time: the regex retries every
    later opener up to the end of the text when no closer follows (quadratic on a line
    of repeated openers). Once an opener has no closer after it, no later one has."""
    blocks: list[str] = []
    position = 0
    while True:
        start = text.find(opener, position)
        if start < 0:
            return blocks
        start += len(opener)
        end = text.find(closer, start)
        if end < 0:
            return blocks
        blocks.append(text[start:end])
        if first_only:
            return blocks
        position = end + len(closer)


def require_text(step: Any, what: str) -> str:
    if not isinstance(step, str):
        # Every text handler calls a str method (or re) on the step first: it raises.
        raise DecodeError(f"a {what} step must be text, not {type(step).__name__}")
    return step


def load_json(text: str) -> Any:
    """``json.loads``; a failure is a :class:`DecodeError`."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise DecodeError(f"not JSON: {exc}") from None


def fc_pairs(calls: list, separator: str = ",", decode_strings: bool = True) -> Items:
    """``[{name: arguments}, ...]``; string arguments are JSON text when ``decode_strings``."""
    out: Items = []
    for call in calls:
        if not isinstance(call, dict):
            raise DecodeError(f"an FC call must be an object, not {type(call).__name__}")
        for name, arguments in call.items():
            if decode_strings and type(arguments) is str:
                arguments = load_json(arguments)
            out.append(render(name, arguments, separator))
    return out


def name_arguments(calls: list) -> Items:
    """xLAM-style ``{"name": ..., "arguments": {...}}`` objects, leniently: other
    elements are skipped, a missing name is ``""`` and missing arguments ``{}``."""
    out: Items = []
    for call in calls:
        if isinstance(call, dict):
            out.append(render(call.get("name", ""), call.get("arguments", {}), ", "))
    return out


def name_arguments_strict(calls: list, arguments_key: str = "arguments") -> Items:
    """``{"name": ..., "<arguments_key>": {...}}`` objects; anything else fails the step."""
    out: Items = []
    for call in calls:
        try:
            name, arguments = call["name"], call[arguments_key]
        except (KeyError, TypeError, IndexError) as exc:
            raise DecodeError(f"not a {{'name', '{arguments_key}'}} object: {exc!r}") from None
        out.append(render(name, arguments, ","))
    return out


def as_list(value: Any) -> list:
    return value if isinstance(value, list) else [value]
