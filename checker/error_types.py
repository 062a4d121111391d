"""Every exception bfcl-safe raises on purpose has one root,
:class:`~bfcl_safe.interp.errors.BfclSafeError`, and carries data (attributes), so that
callers never match message strings. The command line catches the root once, at its
boundary (:class:`bfcl_safe.checker.commands.BoundaryGroup`), and prints ``Error: <one line>``
(exit status 1); anything else that escapes is a bug and is printed as ``Internal error:
<exception type> ...`` (exit status 70), never as a traceback.

The family (each subclasses the root and the nearest builtin):

- interpreter: :class:`~bfcl_safe.interp.errors.RejectedInput` (call text or an FC call it
  refuses; ``NotComputable`` for a value it will not compute) and
  :class:`~bfcl_safe.interp.errors.BudgetExceeded` (a per-entry budget ran out; never a
  tool's error result: the entry fails with ``ErrorType.RESOURCE_LIMIT``);
- backends: :class:`~bfcl_safe.backends.long_context.LongContextDataError`;
- data: :class:`~bfcl_safe.checker.dataset.DatasetError` (no usable dataset);
- result trees: :class:`~bfcl_safe.checker.result_files.LayoutError` (a tree not laid out as
  BFCL lays it out), ``UnreadableFile`` (not a regular file, too large), ``LineProblem``;
- scoring: :class:`~bfcl_safe.checker.runner.ScoreDirError` (score dir overlapping the result
  dir), :class:`~bfcl_safe.checker.score_files.ScoreFileError` (a score file not in BFCL's format),
  ``UnsafePath`` (a write that would follow a symlink);
- decoding: :class:`~bfcl_safe.checker.decoders.base.DecodeError`;
- episodes: :class:`~bfcl_safe.checker.episode.EpisodeError` and the play API's subclasses;
- ``explain``: :class:`~bfcl_safe.checker.explain.ExplainError`;
- ``generate``: its client, result-file, run and prompt-template errors;
- tool docs for OpenAI clients: ``ToolFormatError``.

Every error type a score file or a verdict can carry is one member of :class:`ErrorType`
(BFCL's five, the two non-official checks, bfcl-safe's own two; SECURITY.md, "Every
deliberate difference from the official scorer").
"""

from __future__ import annotations

import enum

from bfcl_safe.interp.errors import BfclSafeError, BudgetExceeded, RejectedInput


class ErrorType(str, enum.Enum):
    """Every error type a verdict can carry: BFCL's five, the two non-official checks
    (``--strict-irrelevance``, ``--check-order``) and bfcl-safe's two own. The value is
    the exact string written to score files (a ``str``: members compare and hash equal
    to it)."""

    INFERENCE_ERROR = "multi_turn:inference_error"
    FORCE_TERMINATED = "multi_turn:force_terminated"
    EMPTY_TURN = "multi_turn:empty_turn_model_response"
    STATE_MISMATCH = "multi_turn:instance_state_mismatch"
    RESPONSE_MISMATCH = "multi_turn:execution_response_mismatch"
    #: ``--strict-irrelevance`` (non-official).
    IRRELEVANCE = "multi_turn:irrelevance_error:decoder_success"
    #: ``--check-order`` (non-official).
    ORDER_MISMATCH = "multi_turn:method_invoke_order_mismatch"
    #: An entry whose scoring used up a deterministic resource budget (interp/limits.py),
    #: or whose worker was lost (non-official).
    RESOURCE_LIMIT = "bfcl_safe:resource_limit"
    #: An entry whose scoring failed inside bfcl-safe (a bug, or input beyond what it can
    #: represent); the message names the exception. The run goes on (non-official).
    INTERNAL_ERROR = "bfcl_safe:internal_error"

    def __str__(self) -> str:
        return self.value

    @property
    def official(self) -> bool:
        """One of BFCL's own five types."""
        return self in _OFFICIAL

    @property
    def own(self) -> bool:
        """One of bfcl-safe's own two (the entry failed outside BFCL's checks)."""
        return self is ErrorType.RESOURCE_LIMIT or self is ErrorType.INTERNAL_ERROR


_OFFICIAL = frozenset({ErrorType.INFERENCE_ERROR, ErrorType.FORCE_TERMINATED, ErrorType.EMPTY_TURN,
                       ErrorType.STATE_MISMATCH, ErrorType.RESPONSE_MISMATCH})

__all__ = ["BfclSafeError", "BudgetExceeded", "RejectedInput", "ErrorType"]
