"""Budgets for the backends' state growth, charged before the state grows.

Model input decides what the backends store (file contents, tweets, messages, tickets,
orders ...) and, through nested calls, may hand a tool a *live* part of the state
(``mention(mentioned_usernames=get_tweet_comments(...))`` extends a list with itself,
``echo(content=cat(...))`` nests a file's content one level deeper per call). The
reference does the same — its observable results are kept — but the scorer must then
compare and render that state, so every tool that stores a value calls :func:`store`
first:

* the value is measured by an iterative walk (never recursion): characters of its
  strings (and digits of its integers) go to the ``state_chars`` budget, its items
  (list/tuple/set items, dict entries, plus one for the record being stored) to
  ``state_items``; shared parts count each time they appear, because that is how
  often they are compared and printed;
* a value nested deeper than ``STATE_DEPTH`` levels, or holding an integer beyond
  CPython's ``str()`` limit (``MAX_INT_DIGITS``), is refused whatever the budget: the
  checker could not compare, copy or render it. A value that contains itself (a cycle,
  which the reference makes too) is kept: it is counted once around and prints as
  ``{...}``; the failure record writes it degraded.

Over any of them :class:`~bfcl_safe.interp.errors.BudgetExceeded` propagates (it is
never a tool's error result). The cumulative budgets count only when a budget is
active (:mod:`bfcl_safe.interp.budget`); the structural refusals (depth, digits, a
full id space, a tree too deep) hold always, since they protect the process itself.
The walk stops as soon as the remaining budget is spent, so measuring costs at most
what it charges.
"""

from __future__ import annotations

import math
from typing import Any

from bfcl_safe.interp import budget as _budget
from bfcl_safe.interp import limits
from bfcl_safe.interp.errors import BudgetExceeded

#: Budget kinds (keys of ``limits.ENTRY_BUDGETS``).
STATE_CHARS = "state_chars"
STATE_ITEMS = "state_items"
STATE_DEPTH = "state_depth"
STATE_INT_DIGITS = "state_int_digits"
TREE_DEPTH = "tree_depth"
TREE_WALK = "tree_walk"
PRECISION_WORK = "precision_work"
MESSAGE_IDS = "message_ids"
SHARED_DEFAULT_ITEMS = "shared_default_items"
STATE_SCAN = "state_scan"
#: Characters of result strings kept per entry (``interp/execute.run_step``), and of the
#: texts a tool builds for its result before it is one (``find``'s paths).
RESULT_CHARS = _budget.RESULT_CHARS
#: The interpreter's budget of values computed from model input (shared with it).
COMPUTED_SIZE = "computed_size"

#: Bits of the largest integer whose ``str()`` CPython allows (MAX_INT_DIGITS digits).
_MAX_INT_BITS = math.ceil(limits.MAX_INT_DIGITS * math.log2(10))
_LOG10_2 = math.log10(2)
_CONTAINERS = (list, tuple, dict, set, frozenset)


def limit_of(kind: str) -> int:
    """The limit of ``kind`` in the active budget (tests may lower it), else the default."""
    active = _budget.current()
    if active is not None and kind in active.limits:
        return active.limits[kind]
    return limits.ENTRY_BUDGETS[kind]


def refuse_above(kind: str, amount: int) -> None:
    """A structural limit: raise BudgetExceeded when ``amount`` exceeds the limit of
    ``kind`` (not cumulative; holds with or without an active budget)."""
    limit = limit_of(kind)
    if amount > limit:
        raise BudgetExceeded(kind, limit, amount)


def _allowance(active: _budget.Budget | None, kind: str) -> tuple[int, int]:
    """``(limit, spent)`` of a cumulative kind in the ``active`` budget (with none: the
    default limit, nothing spent, so that one walk is bounded all the same)."""
    if active is None:
        return limits.ENTRY_BUDGETS[kind], 0
    return active.limits[kind], active.spent.get(kind, 0)


def _int_digits(value: int) -> int:
    bits = abs(value).bit_length()
    if bits > _MAX_INT_BITS:
        raise BudgetExceeded(STATE_INT_DIGITS, limit_of(STATE_INT_DIGITS), int(bits * _LOG10_2) + 1)
    return max(1, int(bits * _LOG10_2) + 1)


def measure(value: Any, inside: tuple = (), spread: bool = False) -> tuple[int, int]:
    """``(characters, items)`` of ``value``, walked iteratively with shared parts counted
    each time. Raises BudgetExceeded when it is nested deeper than the depth limit (or
    cyclic), holds an integer beyond ``MAX_INT_DIGITS``, or — stopping the walk there —
    needs more characters or items than the budget has left.

    A container met again inside itself (a cycle) counts as one item and is not
    followed: the reference keeps such state (``resolve_ticket(1, get_ticket(1))``
    stores a ticket in itself) and prints it as ``{...}``. ``inside``: the containers
    ``value`` is about to be stored in (the target and the containers holding it), which
    are treated the same way, as storing makes them a cycle; with ``spread`` the value's
    *items* are stored (``list.extend``), so the value itself may be the target and is
    counted."""
    forbidden = set(map(id, inside)) if inside else ()
    active = _budget.current()
    char_limit, char_spent = _allowance(active, STATE_CHARS)
    item_limit, item_spent = _allowance(active, STATE_ITEMS)
    depth_limit = limit_of(STATE_DEPTH)
    char_cap, item_cap = char_limit - char_spent, item_limit - item_spent
    kind = type(value)
    if ((kind is list or kind is tuple or kind is dict or kind is set or kind is frozenset)
            and (spread or id(value) not in forbidden)  # the walk's cycle test at depth 0
            and not 0 >= depth_limit):  # and its depth test (same operands, same order)
        # Fast path for the common value, a flat list/tuple/set/dict (exact types) of
        # exact strs (tags, mentions, user names), without the walk's stack. Exact: the
        # walk would follow ``value`` (neither test above stops it), count len(value)
        # items, then add each str's len() to the characters, raising only once a total
        # passes its cap. So when all items are plain strs and neither total passes its
        # cap, these are its results; otherwise (the loop stops at the first item that
        # is not a plain str or takes the total past the cap, as the walk would) the
        # walk below runs from the start and raises with its own numbers.
        # (A Python loop: in CPython 3.11 it costs fewer instructions than set(map(type,
        # ...)) and sum(map(len, ...)), for small and large containers alike.)
        items = len(value)
        if items <= item_cap:
            chars = 0
            if kind is dict:
                for key, item in value.items():
                    if type(key) is not str or type(item) is not str:
                        break
                    chars += len(key) + len(item)
                    if chars > char_cap:
                        break
                else:
                    if chars <= char_cap:  # (for an empty dict and a negative cap)
                        return chars, items
            else:
                for item in value:
                    if type(item) is not str:
                        break
                    chars += len(item)
                    if chars > char_cap:
                        break
                else:
                    if chars <= char_cap:
                        return chars, items
    on_path: set[int] = set()
    chars = items = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if depth < 0:  # leaving a container: it is no longer on the path
            on_path.discard(id(node))
            continue
        kind = type(node)
        if kind is str or kind is bytes or kind is bytearray:
            chars += len(node)
        elif isinstance(node, bool) or node is None or kind is float:
            chars += 1
        elif isinstance(node, int):
            chars += _int_digits(node)
        elif isinstance(node, _CONTAINERS):
            if id(node) in on_path or (id(node) in forbidden and (depth or not spread)):
                items += 1  # a cycle: printed as [...] or {...}, not followed
                continue
            if depth >= depth_limit:
                raise BudgetExceeded(STATE_DEPTH, depth_limit, depth + 1)
            items += len(node)
            if items > item_cap:
                raise BudgetExceeded(STATE_ITEMS, item_limit, item_spent + items)
            on_path.add(id(node))
            stack.append((node, -1))
            if isinstance(node, dict):
                for key, item in node.items():
                    stack.append((key, depth + 1))
                    stack.append((item, depth + 1))
            else:
                stack.extend((item, depth + 1) for item in node)
        else:
            chars += 1  # numbers of other types, mpmath values, constants of the backends
        if chars > char_cap:
            raise BudgetExceeded(STATE_CHARS, char_limit, char_spent + chars)
    return chars, items


def store(*values: Any, records: int = 1, inside: tuple = (), spread: bool = False) -> None:
    """Charge the state growth of storing ``values`` (plus ``records`` new entries:
    a list item, a dict entry, a file ...) before storing them; ``inside`` and ``spread``
    as for :func:`measure`."""
    active = _budget.current()
    limit, spent = _allowance(active, STATE_CHARS)  # (nothing is charged before the loop ends)
    chars = items = 0
    for value in values:
        kind = type(value)
        # A plain scalar (most of what tools store) is measured here, as measure() would
        # measure it alone: its size, refused when it is more than the budget has left.
        if kind is str:
            size = len(value)
        elif kind is int:
            size = _int_digits(value)
        elif kind is float or kind is bool or value is None:
            size = 1
        else:
            more_chars, more_items = measure(value, inside, spread)
            chars += more_chars
            items += more_items
            continue
        if size > limit - spent:
            raise BudgetExceeded(STATE_CHARS, limit, spent + size)
        chars += size
    if active is not None:
        # = active.charge(STATE_CHARS, chars); active.charge(STATE_ITEMS, items + records)
        active.charge_both(STATE_CHARS, chars, STATE_ITEMS, items + records)


def compute(size: int) -> None:
    """Charge a value of ``size`` characters/items a tool is about to compute from model
    input (``"ab" * 110``) to the interpreter's ``computed_size`` budget; one value past
    the limit is refused with or without an active budget, like the interpreter's."""
    refuse_above(COMPUTED_SIZE, size)
    _budget.charge(COMPUTED_SIZE, size)


def precision(digits: Any) -> None:
    """Charge one arbitrary-precision computation at ``digits`` digits of working
    precision: ``digits ** 2``, as its time grows with the square of the precision
    (measured: an mpmath logarithm takes 0.03 s at 1,000 digits, 1 s at 10,000, 3.6 s
    at 20,000). Only computations the library really carries out are charged; a
    precision past MAX_PRECISION_DIGITS is refused by the tool itself."""
    if type(digits) in (int, float) and 0 < digits <= limits.MAX_PRECISION_DIGITS:
        _budget.charge(PRECISION_WORK, int(digits) ** 2)


def walk(nodes: int) -> None:
    """Charge ``nodes`` directory-tree nodes visited by a walk over a file system."""
    _budget.charge(TREE_WALK, nodes)


def result_text(chars: int) -> None:
    """Charge ``chars`` characters of text a tool is about to build for its result (each
    path ``find`` lists: a tree that contains itself, or deep long names, would make
    gigabytes of paths before any result string exists) to ``result_chars``."""
    _budget.charge(RESULT_CHARS, chars)


def charge_state(chars: int, items: int) -> None:
    """Charge state growth already measured (e.g. a copied subtree, counted expanded)."""
    _budget.charge(STATE_CHARS, chars)
    _budget.charge(STATE_ITEMS, items)


def scan(*collections: Any) -> None:
    """Charge a tool's pass over parts of the state (membership tests, filters, copies):
    their lengths together. State is bounded by the budgets above, but a call that scans
    it, repeated as often as a result line allows, would take hours."""
    active = _budget.current()
    if active is None:
        return
    total = 0
    for collection in collections:
        try:
            total += len(collection)
        except TypeError:  # not sized: the tool itself fails on it, as the reference's does
            continue
    active.charge(STATE_SCAN, total)
