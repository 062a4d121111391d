"""Every exception bfcl-safe raises on purpose has one root,
:class:`~bfcl_safe.interp.errors.BfclSafeError`; the command line catches it once, at
its boundary, and prints its one-line message. Anything else that escapes is a bug.

The family (each subclasses the root and the nearest builtin):

- :class:`~bfcl_safe.interp.errors.RejectedInput` — call text or an FC call the interpreter refuses;
- :class:`~bfcl_safe.interp.errors.BudgetExceeded` — a per-entry resource budget ran out;
- :class:`~bfcl_safe.backends.long_context.LongContextDataError` — unreadable long-context data;
- :class:`~bfcl_safe.checker.dataset.DatasetError` — no usable dataset;
- :class:`~bfcl_safe.checker.scores.ScoreFileError` — a score file that is not BFCL's format;
- :class:`~bfcl_safe.checker.decoders.DecodeError` — a model step that does not decode;
- :class:`~bfcl_safe.checker.episode.EpisodeError` — misuse of an episode;
- :class:`~bfcl_safe.checker.explain.ExplainError` — an entry ``explain`` cannot show.

Error types bfcl-safe writes into score files besides BFCL's own (non-official; see SECURITY.md):
"""

from __future__ import annotations

from bfcl_safe.interp.errors import BfclSafeError, BudgetExceeded, RejectedInput

#: An entry whose scoring used up a deterministic resource budget (interp/limits.py).
RESOURCE_LIMIT = "bfcl_safe:resource_limit"
#: An entry whose scoring failed inside bfcl-safe (a bug, or input beyond what it can
#: represent); the message names the exception. The run goes on.
INTERNAL_ERROR = "bfcl_safe:internal_error"

__all__ = ["BfclSafeError", "BudgetExceeded", "RejectedInput", "RESOURCE_LIMIT", "INTERNAL_ERROR"]
