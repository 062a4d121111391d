"""Deterministic resource budgets: counted work per scored entry or played episode.

A :class:`Budget` holds counters against :data:`~bfcl_safe.interp.limits.ENTRY_BUDGETS`.
Whoever runs model input for one entry activates one (``with budget.active(): ...``);
code anywhere below — the interpreter's arithmetic, the backends' state growth — calls
:func:`charge` with the amount of work it is about to do, *before* doing it. Over a
limit, :class:`~bfcl_safe.interp.errors.BudgetExceeded` propagates to the entry's fault
boundary. Counts, not clocks: a verdict never depends on the machine.

With no active budget (a backend used on its own, e.g. in unit tests) nothing is
counted; every entry point that runs model input activates one.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any, Callable, Mapping

from bfcl_safe.interp.errors import BudgetExceeded
from bfcl_safe.interp.limits import ENTRY_BUDGETS

#: Budget kinds charged by the interpreter itself (keys of ``limits.ENTRY_BUDGETS``):
#: result characters kept (``execute.run_step``) and characters handed to libcst
#: (``cst_front.parse_with_libcst``, and the decoders' ``guard.check_libcst_input``).
RESULT_CHARS = "result_chars"
LIBCST_CHARS = "libcst_chars"

_CURRENT: ContextVar["Budget | None"] = ContextVar("bfcl_safe_budget", default=None)


class Budget:
    """Counters of one entry's (or episode's) work; ``limits`` defaults to ENTRY_BUDGETS."""

    __slots__ = ("limits", "spent", "memo")

    def __init__(self, limits: Mapping[str, int] | None = None):
        self.limits: dict[str, int] = dict(ENTRY_BUDGETS if limits is None else limits)
        self.spent: dict[str, int] = {}
        #: Work done once per entry and reused within it (the decoders' long step texts:
        #: a step is parsed once, for its check and for its failure record's display).
        #: A cache, never part of a copy or a pickle.
        self.memo: dict[Any, Any] = {}

    def charge(self, kind: str, amount: int = 1) -> None:
        """Count ``amount`` of ``kind``; raise BudgetExceeded (counting nothing) past its limit."""
        spent = self.spent.get(kind, 0) + amount
        limit = self.limits[kind]
        if spent > limit:
            raise BudgetExceeded(kind, limit, spent)
        self.spent[kind] = spent

    def charge_both(self, kind: str, amount: int, other: str, other_amount: int) -> None:
        """Exactly ``self.charge(kind, amount)`` then ``self.charge(other, other_amount)``
        (the backends charge characters and items of every stored value together): past
        the first limit nothing is counted, past the second the first stays counted."""
        if type(self) is not Budget:  # a subclass may override charge (the decoders' recorder)
            self.charge(kind, amount)
            self.charge(other, other_amount)
            return
        # Budget.charge twice, inline: one method call instead of two on a hot path.
        spent, limits = self.spent, self.limits
        total = spent.get(kind, 0) + amount
        limit = limits[kind]
        if total > limit:
            raise BudgetExceeded(kind, limit, total)
        spent[kind] = total
        total = spent.get(other, 0) + other_amount
        limit = limits[other]
        if total > limit:
            raise BudgetExceeded(other, limit, total)
        spent[other] = total

    def active(self) -> "_Activation":
        """``with budget.active(): ...`` makes this the budget :func:`charge` counts
        against, in this thread/context, until the block ends."""
        return _Activation(self)

    def __getstate__(self) -> tuple[Any, Any]:
        return (self.limits, self.spent)

    def __setstate__(self, state: tuple[Any, Any]) -> None:
        self.limits, self.spent = state
        self.memo = {}

    def __repr__(self) -> str:
        return f"Budget(spent={self.spent!r})"


class _Activation:
    """The context manager of :meth:`Budget.active` (a class: entered once per entry and
    per decoded text, it costs less than a generator-based one)."""

    __slots__ = ("budget", "token")

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.token: Any = None  # (the context variable's Token once entered)

    def __enter__(self) -> Budget:
        self.token = _CURRENT.set(self.budget)
        return self.budget

    def __exit__(self, *exc_info: object) -> None:
        _CURRENT.reset(self.token)


#: ``current()``: the active budget, if any. The context variable's own ``get`` (no
#: default given, so None when no budget is active), not a Python function around it:
#: every charge of the backends' state growth looks it up.
current: Callable[[], "Budget | None"] = _CURRENT.get


def charge(kind: str, amount: int = 1) -> None:
    """Count work against the active budget (no-op when none is active)."""
    budget = _CURRENT.get()
    if budget is not None:
        budget.charge(kind, amount)
