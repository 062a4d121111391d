"""Every exception bfcl-safe raises on purpose has one root,
:class:`~bfcl_safe.interp.errors.BfclSafeError`, and carries data (attributes), so that
callers never match message strings. The command line catches the root once, at its
boundary (:class:`bfcl_safe.checker.cli.BoundaryGroup`), and prints ``Error: <one line>``
(exit status 1); anything else that escapes is a bug and is printed as ``Internal error:
<exception type> ...`` (exit status 70), never as a traceback.

The family (each subclasses the root and the nearest builtin):

- interpreter: :class:`~bfcl_safe.interp.errors.RejectedInput` (call text or an FC call it
  refuses; ``NotComputable`` for a value it will not compute) and
  :class:`~bfcl_safe.interp.errors.BudgetExceeded` (a per-entry budget ran out; never a
  tool's error result: the entry fails with :data:`RESOURCE_LIMIT`);
- backends: :class:`~bfcl_safe.backends.long_context.LongContextDataError`;
- data: :class:`~bfcl_safe.checker.dataset.DatasetError` (no usable dataset);
- result trees: :class:`~bfcl_safe.checker.results_io.LayoutError` (a tree not laid out as
  BFCL lays it out), ``UnreadableFile`` (not a regular file, too large), ``LineProblem``;
- scoring: :class:`~bfcl_safe.checker.runner.ScoreDirError` (score dir overlapping the result
  dir), :class:`~bfcl_safe.checker.scores.ScoreFileError` (a score file not in BFCL's format),
  ``UnsafePath`` (a write that would follow a symlink);
- decoding: :class:`~bfcl_safe.checker.decoders.base.DecodeError`;
- episodes: :class:`~bfcl_safe.checker.episode.EpisodeError` and the play API's subclasses;
- ``explain``: :class:`~bfcl_safe.checker.explain.ExplainError`;
- ``generate``: its client, result-file, run and prompt-template errors;
- tool docs for OpenAI clients: ``ToolFormatError``.

Error types bfcl-safe writes into score files besides BFCL's own (non-official; SECURITY.md,
"Every deliberate difference from the official scorer"):
"""

from __future__ import annotations

from bfcl_safe.interp.errors import BfclSafeError, BudgetExceeded, RejectedInput

#: An entry whose scoring used up a deterministic resource budget (interp/limits.py).
RESOURCE_LIMIT = "bfcl_safe:resource_limit"
#: An entry whose scoring failed inside bfcl-safe (a bug, or input beyond what it can
#: represent); the message names the exception. The run goes on.
INTERNAL_ERROR = "bfcl_safe:internal_error"

__all__ = ["BfclSafeError", "BudgetExceeded", "RejectedInput", "RESOURCE_LIMIT", "INTERNAL_ERROR"]
