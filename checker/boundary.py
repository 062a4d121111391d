"""The one fault boundary of an entry (or of an episode's step): whatever escapes the
work done for one entry becomes that entry's documented failure :class:`Verdict`,
never a crash of the run, the command or the caller.

Used by scoring (``checker/scoring.py``), ``explain`` (``checker/explain.py``), the play
API (``checker/play.py``, per step and per turn check) and ``generate``::

    boundary = EntryBoundary("score this entry")
    with boundary:                       # a fresh Budget is active inside
        verdict = check_entry(...)
    if boundary.failure is not None:     # something escaped: the entry's failure
        verdict = boundary.failure

What escapes, and what it becomes:

- :class:`~bfcl_safe.interp.errors.BudgetExceeded` (a deterministic per-entry budget of
  ``interp/limits.py`` ran out) -> :meth:`Verdict.resource_limit`, error type
  ``bfcl_safe:resource_limit``, its message naming the budget;
- anything else derived from :class:`Exception` (``RecursionError``, ``MemoryError``,
  ``ValueError``, a bug) -> :meth:`Verdict.internal_error`, ``bfcl_safe:internal_error``,
  its message naming the exception's type and text (one line, escaped);
- exceptions of the types in ``passthrough`` (the play API lets its documented argument
  errors reach the caller) and :class:`BaseException` outside :class:`Exception`
  (``KeyboardInterrupt``, ``SystemExit``) propagate.

The budget active inside is ``budget`` if given (an episode keeps one across steps),
else a fresh :class:`~bfcl_safe.interp.budget.Budget`.
"""

from __future__ import annotations

from types import TracebackType

from bfcl_safe.checker.verdict import Verdict
from bfcl_safe.interp.budget import Budget
from bfcl_safe.interp.errors import BudgetExceeded

__all__ = ["EntryBoundary"]


class EntryBoundary:
    """A context manager: the fault boundary of one entry (see the module docstring).
    After the block, :attr:`failure` is None when nothing escaped, else the failure
    verdict (at ``turn``); :attr:`exception` is what escaped."""

    __slots__ = ("what", "turn", "budget", "passthrough", "failure", "exception", "_activation")

    def __init__(self, what: str = "score this entry", *, turn: int = 0, budget: Budget | None = None,
                 passthrough: tuple[type[BaseException], ...] = ()) -> None:
        self.what = what
        self.turn = turn
        self.budget = Budget() if budget is None else budget
        self.passthrough = passthrough
        self.failure: Verdict | None = None
        self.exception: BaseException | None = None
        self._activation = self.budget.active()

    def __enter__(self) -> "EntryBoundary":
        self.failure = None
        self.exception = None
        self._activation.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> bool:
        self._activation.__exit__(kind, exc, traceback)
        if exc is None:
            return False
        if isinstance(exc, BudgetExceeded):
            self.failure = Verdict.resource_limit(exc, self.turn)
        elif isinstance(exc, self.passthrough) or not isinstance(exc, Exception):
            return False
        else:
            self.failure = Verdict.internal_error(exc, self.what, self.turn)
        self.exception = exc
        return True
