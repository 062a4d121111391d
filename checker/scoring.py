"""Scoring one result line, inside one fault boundary. The same function runs in the
main process (``--jobs 1``) and in any worker of a pool (``checker/parallel.py``).

:func:`score_text` takes a line's text and a :class:`Context` (model folder, category,
options; as JSON text, ``Context.to_text``) and returns the line's result as text
(:class:`LineResult`, JSON). Everything done for the line happens inside its boundary:
parse (depth-checked, ``result_files.parse_line``), check the id, decode and execute both
sides, compare, build the failure record **and render its score-file line**. The
boundary is :class:`~bfcl_safe.checker.boundary.EntryBoundary` (a fresh budget active
inside): a budget overrun or anything else escaping makes the entry's failure
:class:`~bfcl_safe.checker.verdict.Verdict` (``bfcl_safe:resource_limit`` or
``bfcl_safe:internal_error``), rendered like every other verdict.

Both come back with a one-line ``note`` the runner reports on stderr. A failure record
that cannot be rendered as it is (state nested too deeply, an integer beyond ``str()``'s
digit limit, a tuple as a dict key) is rendered with those parts degraded
(:func:`render_record`), and says so in its ``bfcl_safe_note`` key: an entry is never lost.
"""

from __future__ import annotations

import functools
import json
from typing import Any, NamedTuple, Sequence

from bfcl_safe.checker.boundary import EntryBoundary
from bfcl_safe.checker.codec import RawJSON, dumps_line, raw_value
from bfcl_safe.checker.dataset import Dataset
from bfcl_safe.checker.error_types import ErrorType
from bfcl_safe.checker.leaderboard import line_usage
from bfcl_safe.checker.result_files import LineProblem, malformed, parse_line
from bfcl_safe.checker.verdict import CheckOptions, EntryInput, RecordParts, Verdict, check_entry


class Options(NamedTuple):
    """How a run scores (``evaluate``'s options, from the command line down)."""

    #: A key of ``checker.decoders.DECODERS``; None: chosen per model folder.
    decoder: str | None = None
    jobs: int = 1
    #: The non-official checks (``--strict-irrelevance``, ``--check-order``), carried as
    #: they are to every entry's check.
    checks: CheckOptions = CheckOptions()
    #: ``--partial-eval``: score the entries present; without it a file lacking entries
    #: is not scored (as ``bfcl evaluate``).
    partial: bool = False
    #: Add the non-official per-turn accuracy column to the CSV.
    partial_credit: bool = False
    #: ``--model-map``: (model folder, decoder) pairs, over ``decoder`` for those models.
    model_decoders: tuple[tuple[str, str], ...] = ()
    #: ``--model-name``/``--model-map``: (model folder, CSV display name) pairs.
    display_names: tuple[tuple[str, str], ...] = ()


class Context(NamedTuple):
    """What scoring a line needs besides the line and the dataset."""

    model: str
    category: str
    decoder: str
    checks: CheckOptions = CheckOptions()

    def to_text(self) -> str:
        return json.dumps([self.model, self.category, self.decoder, list(self.checks)], ensure_ascii=False)

    @classmethod
    def from_text(cls, text: str) -> "Context":
        model, category, decoder, checks = json.loads(text)
        return cls(model, category, decoder, CheckOptions(*checks))


# --------------------------------------------------------------------------- line results

#: Kinds of :class:`LineResult`.
SKIPPED = "skipped"  # not an entry of this file: ``message`` says why
UNKNOWN = "unknown"  # an entry whose id is not in the dataset
SCORED = "scored"


class LineResult(NamedTuple):
    """What scoring one line gave. ``line`` is the failure record's score-file line
    (None when the entry passed); ``note`` a one-line message for stderr (resource
    limit, internal error); ``shape`` what is wrong with the result's shape, if anything;
    ``usage`` the line's numbers for the leaderboard's cost and latency
    (:func:`bfcl_safe.checker.leaderboard.line_usage`), taken where the line is parsed."""

    kind: str
    id: str | None = None
    message: str | None = None
    shape: str | None = None
    error_type: str | None = None
    error_message: Any = None
    note: str | None = None
    usage: Any = None
    line: str | None = None

    @property
    def valid(self) -> bool:
        return self.kind == SCORED and self.error_type is None

    def to_text(self) -> str:
        """A JSON array of the fields but ``line``, a newline, then ``line`` as it is (a
        score-file line holds no raw newline; not escaping it again saves copying it)."""
        try:
            head = json.dumps([self.kind, self.id, self.message, self.shape, self.error_type, self.error_message,
                               self.note, self.usage, self.line is not None], ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            # (error_message is only shown in the summary table; the score-file line keeps it all)
            return self._replace(error_message=["(see the score file)"]).to_text()
        return head if self.line is None else f"{head}\n{self.line}"

    @classmethod
    def from_text(cls, text: str) -> "LineResult":
        newline = text.find("\n")
        kind, entry_id, message, shape, error_type, error_message, note, usage, has_line = json.loads(
            text if newline < 0 else text[:newline])
        return cls(kind, entry_id, message, shape, error_type, error_message, note, usage,
                   text[newline + 1 :] if has_line else None)


def score_text(dataset: Dataset, context: str | Context, text: str) -> str:
    """One result line scored: its :class:`LineResult` as text (see the module docstring)."""
    return score_line(dataset, _context(context), text).to_text()


def score_in_process(dataset: Dataset, context: str | Context, text: str) -> LineResult:
    """:func:`score_text` without the text form of its result (what a pool in this
    process runs: nothing crosses a process boundary)."""
    return score_line(dataset, _context(context), text)


@functools.lru_cache(maxsize=64)
def _parsed_context(text: str) -> Context:
    return Context.from_text(text)


def _context(context: str | Context) -> Context:
    return _parsed_context(context) if isinstance(context, str) else context


def score_line(dataset: Dataset, context: Context, text: str) -> LineResult:
    try:
        item = parse_line(text, context.category)
    except LineProblem as exc:
        return LineResult(SKIPPED, message=str(exc))
    except Exception as exc:  # noqa: BLE001 - e.g. MemoryError on a line near the size limit
        return LineResult(SKIPPED, message=f"cannot be read ({type(exc).__name__}); line skipped")
    entry_id = item["id"]
    usage = line_usage(item)
    try:
        dataset.entry(entry_id)
    except KeyError:
        return LineResult(UNKNOWN, entry_id, usage=usage)
    return score_item(dataset, context, item, usage)


def score_item(dataset: Dataset, context: Context, item: dict, usage: Any = None) -> LineResult:
    """The fault boundary of one entry (``item``: a parsed line of its category;
    ``usage``: its numbers for the leaderboard, carried in the result)."""
    entry_id = item["id"]
    shape = None
    boundary = EntryBoundary("score this entry")
    with boundary:
        shape = malformed(item["result"])
        record = score_entry(dataset, item, context)
        if record.get("valid"):
            return LineResult(SCORED, entry_id, shape=shape, usage=usage)
        error = record["error"]
        return LineResult(SCORED, entry_id, shape=shape, error_type=error["error_type"],
                          error_message=error["error_message"], usage=usage, line=render_record(record))
    assert boundary.failure is not None
    return _own_failure(boundary.failure, entry_id, context, shape, usage)


def _own_failure(verdict: Verdict, entry_id: str, context: Context, shape: str | None,
                 usage: Any = None) -> LineResult:
    """The result of an entry that failed with one of bfcl-safe's own types; its one-line
    message is also the note reported on stderr."""
    assert verdict.error_type is not None  # (a failed verdict)
    return LineResult(SCORED, entry_id, shape=shape, error_type=verdict.error_type.value,
                      error_message=verdict.error_message, note=verdict.error_message[0], usage=usage,
                      line=render_record(verdict.own_record(entry_id, context.model, context.category)))


def lost_result(text: str, context: Context, reason: str) -> LineResult:
    """The result of a line whose worker was lost while scoring it (died, or given up by
    the wall-clock guard): the entry fails with the resource-limit type. The line is
    parsed here (depth-checked; cheap) only to find its id."""
    try:
        item = parse_line(text, context.category)
    except LineProblem as exc:
        return LineResult(SKIPPED, message=str(exc))
    except Exception as exc:  # noqa: BLE001
        return LineResult(SKIPPED, message=f"cannot be read ({type(exc).__name__}); line skipped")
    return _own_failure(Verdict.lost(reason), item["id"], context, malformed(item["result"]), line_usage(item))


def score_entry(dataset: Dataset, item: dict, context: Context) -> dict:
    """Score one result-file entry; ``{"valid": True}`` or the reference's failure record.
    The typed verdict (:func:`~bfcl_safe.checker.verdict.check_entry`) becomes BFCL's
    record here, once (:meth:`~bfcl_safe.checker.verdict.Verdict.to_record`)."""
    entry_id = item["id"]
    entry = EntryInput(dataset.entry(entry_id), item["result"], dataset.ground_truth_for(entry_id),
                       model_name=context.model, test_category=context.category, decoder=context.decoder,
                       long_context_data=dataset.long_context_data)
    return check_entry(entry, context.checks).to_record(entry, RecordParts(
        prompt=lambda: dataset.prompt_json(entry_id) or dataset.prompt_entry(entry_id),
        inference_log=item.get("inference_log", ""),
        model_result_json=raw_value(item, "result"),
        possible_answer_json=lambda: dataset.ground_truth_json(entry_id),
    ))


# --------------------------------------------------------------------------- rendering

#: Deepest nesting kept when a record must be degraded to be written.
RENDER_DEPTH = 64
#: Most values (containers and leaves) kept when a record must be degraded.
RENDER_VALUES = 200_000
#: Longest ``str()`` of an object kept when a record must be degraded.
RENDER_TEXT = 1 << 20
#: Most bits of an integer written as a number (about 4,300 digits: ``str()``'s limit).
_INT_BITS = 14_000


def render_record(record: dict) -> str:
    """A failure record's score-file line: :func:`~bfcl_safe.checker.score_files.dumps_line`
    (bytes as the reference writes them), or, when that fails, the record with what
    cannot be written replaced by a short description, and a ``bfcl_safe_note`` saying so."""
    try:
        return dumps_line(record)
    except (TypeError, ValueError, RecursionError, MemoryError, OverflowError):
        pass
    notes: list[str] = []
    budget = [RENDER_VALUES]
    try:
        degraded = {key if isinstance(key, str) else _key(key, notes): value if type(value) is RawJSON
                    else _degrade(value, 1, notes, budget) for key, value in record.items()}
        degraded["bfcl_safe_note"] = ("parts of this record could not be written as they are and were replaced: "
                                      + "; ".join(dict.fromkeys(notes)))
        return dumps_line(degraded)
    except Exception as exc:  # noqa: BLE001 - last resort: the verdict without its details
        found = record.get("error")
        error = found if isinstance(found, dict) else {}
        kept = {"id": record.get("id"), "model_name": record.get("model_name"),
                "test_category": record.get("test_category"), "valid": False,
                "error": {"error_type": str(error.get("error_type", ErrorType.INTERNAL_ERROR.value))},
                "bfcl_safe_note": f"the record could not be written ({type(exc).__name__}); only its verdict is"}
        return json.dumps(_degrade(kept, 1, [], [1000]), ensure_ascii=False)


def _degrade(value: Any, depth: int, notes: list[str], budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        notes.append(f"values beyond the first {RENDER_VALUES:,}")
        return "<omitted: too many values>"
    kind = type(value)
    if value is None or kind in (bool, str):
        return value
    if kind is float:  # (nan and inf are written as NaN and Infinity, as the reference's json.dumps does)
        return value
    if kind is int or isinstance(value, int):
        if abs(int(value)).bit_length() > _INT_BITS:
            notes.append("integers of more than 4,300 digits")
            return f"<int of about {int(abs(int(value)).bit_length() * 0.30103):,} digits>"
        return int(value) if kind is not bool else value
    if isinstance(value, RawJSON):
        return value.value() if len(value.text) < RENDER_TEXT else "<omitted: long raw text>"
    if isinstance(value, (dict, list, tuple, set, frozenset)):
        if depth > RENDER_DEPTH:
            notes.append(f"values nested more than {RENDER_DEPTH} levels deep")
            return f"<omitted: nested more than {RENDER_DEPTH} levels>"
        if isinstance(value, dict):
            return {key if type(key) is str else _key(key, notes): _degrade(item, depth + 1, notes, budget)
                    for key, item in value.items()}
        return [_degrade(item, depth + 1, notes, budget) for item in value]
    try:
        json.dumps(value)
        return value
    except Exception:  # noqa: BLE001
        pass
    try:
        text = str(value)
    except Exception as exc:  # noqa: BLE001 - e.g. RecursionError on a deep object
        notes.append(f"objects whose text cannot be made ({type(exc).__name__})")
        return f"<unrenderable {type(value).__name__}: {type(exc).__name__}>"
    if len(text) > RENDER_TEXT:
        notes.append(f"texts longer than {RENDER_TEXT:,} characters")
        return text[:RENDER_TEXT] + "...<cut>"
    return text


def _key(key: Any, notes: list[str]) -> str:
    """A dict key JSON cannot take as it is (a tuple, a huge int), as text."""
    if type(key) in (int, float, bool) or key is None:
        if type(key) is not int or key.bit_length() <= _INT_BITS:
            return json.dumps(key)
    notes.append(f"dict keys of type {type(key).__name__}")
    try:
        text = repr(key)
    except Exception as exc:  # noqa: BLE001
        return f"<unrenderable key {type(key).__name__}: {type(exc).__name__}>"
    return text if len(text) <= 1000 else text[:1000] + "...<cut>"


def score_batch(dataset: Dataset, context: str, lines: Sequence[str]) -> list[str]:
    """:func:`score_text` on each line (what a remote worker runs for a batch)."""
    parsed = Context.from_text(context)
    return [score_line(dataset, parsed, text).to_text() for text in lines]
