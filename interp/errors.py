"""The project's error root, and the interpreter's errors.

:class:`BfclSafeError` is the root of every exception bfcl-safe raises on purpose (the
interpreter's, the backends' and the checker's: see ``checker/error_types.py`` for the
whole family); anything else escaping is a bug. It lives here because the interpreter
imports nothing of the other packages.
"""

from __future__ import annotations

from typing import Any


class BfclSafeError(Exception):
    """Root of every exception bfcl-safe raises deliberately."""


class BudgetExceeded(BfclSafeError):
    """A deterministic per-entry (or per-episode) budget ran out: ``budget`` names it
    (a key of :data:`bfcl_safe.interp.limits.ENTRY_BUDGETS`), ``limit`` is its size and
    ``spent`` what would have been spent. Never turned into a tool's error result: it
    propagates to the entry's fault boundary, which fails the entry with the
    non-official resource-limit error type."""

    def __init__(self, budget: str, limit: int, spent: int):
        self.budget = budget
        self.limit = limit
        self.spent = spent
        super().__init__(f"resource budget {budget!r} exceeded: {spent:,} > {limit:,}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.budget, self.limit, self.spent))


class RejectedInput(BfclSafeError, ValueError):
    """Call text or an FC call that the interpreter will not run.

    ``reason`` says what was refused, ``source`` is the input, ``position`` is the
    0-based offset of the offending construct in ``source`` when known. The message
    is one line, with the position as ``line:column`` (1-based), like a compiler's.
    """

    def __init__(self, reason: str, source: str = "", position: int | None = None):
        self.reason = reason
        self.source = source
        self.position = position
        super().__init__(self._render())

    def _render(self) -> str:
        if self.position is None:
            return self.reason
        line = self.source.count("\n", 0, self.position) + 1
        column = self.position - (self.source.rfind("\n", 0, self.position) + 1) + 1
        return f"{self.reason} at {line}:{column}"

    def caret(self) -> str:
        """The offending source line with a caret under the construct (for terminals)."""
        if self.position is None:
            return str(self)
        start = self.source.rfind("\n", 0, self.position) + 1
        end = self.source.find("\n", self.position)
        end = len(self.source) if end == -1 else end
        line = self.source[start:end]
        if len(line) > 200:
            shift = max(0, self.position - start - 100)
            line, start = line[shift : shift + 200], start + shift
        return f"{self}\n{line}\n{' ' * (self.position - start)}^"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.reason, self.source, self.position))
