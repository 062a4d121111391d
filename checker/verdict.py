"""Scoring one multi-turn entry with the reference's exact semantics, as a typed verdict.

Mirrors ``_evaluate_single_multi_turn_entry`` and ``multi_turn_checker`` of
bfcl-eval 2026.3.23: the checks, their order, the error types and the layout of
the failure record written to score files.

The API (for the scorer, ``explain`` and the play API)::

    item = EntryInput(entry, model_result, ground_truth, model_name=..., test_category=...,
                      decoder=..., long_context_data=...)
    verdict = check_entry(item, CheckOptions(check_order=False, strict_irrelevance=False))
    verdict.valid, verdict.error_type (an ErrorType), verdict.error_message, verdict.details,
    verdict.failing_turn, verdict.turns_passed, verdict.backend_class, verdict.turn_failure
    record = verdict.to_record(item, RecordParts(prompt=..., inference_log=..., ...))

One outcome model: every failure is a :class:`Verdict` — BFCL's own types, the
non-official checks, and bfcl-safe's own (``Verdict.resource_limit``, ``Verdict.lost``,
``Verdict.internal_error``, made by the one fault boundary, :mod:`checker.boundary`);
the error types are one enum (:class:`~bfcl_safe.checker.error_types.ErrorType`).
:meth:`Verdict.to_record` is the one place a verdict becomes BFCL's failure-record dict
(``{"valid": True}`` for a pass); do it where the score file is written.
:func:`evaluate_entry` is a thin path for tests: ``check_entry(...).to_record(...)``.

Readers take fields, never messages: ``backend_class`` names the backend whose state
(or call order) differs; ``turn_failure`` holds, when the official verdict is
``force_terminated``, the failure of the first completed turn that failed its own
checks (the diagnostics behind ``failing_turn``).
"""

from __future__ import annotations

from collections.abc import Sized
from typing import Any, Callable, Mapping, NamedTuple, Sequence

import attrs

from bfcl_safe.checker.contract import category_of, is_long_context
from bfcl_safe.checker.decoders import DECODERS, DecodeError
from bfcl_safe.checker.episode import Side
from bfcl_safe.checker.error_types import ErrorType
from bfcl_safe.checker.inputs import shown_path
from bfcl_safe.interp.callspec import CallSpec
from bfcl_safe.interp.errors import BudgetExceeded


@attrs.frozen
class Verdict:
    """The outcome of checking one entry (or, in the play API, the turns so far).

    ``error_message`` is as the reference writes it: a ``str`` for a turn's check, a
    list of one ``str`` for an inference error, a force-termination and bfcl-safe's own
    types. ``details`` (None: the record has no ``details`` key) and
    ``execution_result`` (a state mismatch's per-turn results; None: no such key) are
    the reference's, read-only. ``failing_turn`` is the index of the first failing turn
    (None when valid) and ``turns_passed`` the number of turns before it (all turns when
    valid). ``backend_class`` names the backend of a state or call-order mismatch.
    ``turn_failure``: see the module docstring."""

    valid: bool
    turns_passed: int
    error_type: ErrorType | None = None
    error_message: Any = None
    details: Any = None
    execution_result: Any = None
    failing_turn: int | None = None
    backend_class: str | None = None
    turn_failure: "Verdict | None" = None

    @classmethod
    def passed(cls, turns: int) -> "Verdict":
        return cls(True, turns)

    @classmethod
    def failed(cls, error_type: ErrorType, message: Any, turn: int, *, details: Any = None,
               execution_result: Any = None, backend_class: str | None = None,
               turn_failure: "Verdict | None" = None) -> "Verdict":
        return cls(False, turn, ErrorType(error_type), message, details, execution_result, turn,
                   backend_class, turn_failure)

    @classmethod
    def resource_limit(cls, exc: "BudgetExceeded", turn: int = 0) -> "Verdict":
        """bfcl-safe's failure for an entry (or episode) whose budget ran out (``exc``)."""
        return cls.failed(
            ErrorType.RESOURCE_LIMIT,
            [f"resource limit: budget {exc.budget!r} exceeded ({exc.spent:,} > {exc.limit:,}); the entry fails"],
            turn, details={"budget": exc.budget, "limit": exc.limit, "spent": exc.spent})

    @classmethod
    def lost(cls, reason: str) -> "Verdict":
        """bfcl-safe's failure for an entry whose worker process was lost while scoring it
        (died, or given up by the ``--jobs`` wall-clock guard): ``reason`` says which."""
        return cls.failed(ErrorType.RESOURCE_LIMIT, [f"resource limit: {reason}; the entry fails"], 0,
                          details={"budget": "process"})

    @classmethod
    def internal_error(cls, exc: BaseException, what: str = "score this entry", turn: int = 0) -> "Verdict":
        """bfcl-safe's failure for an entry (or episode) it could not ``what``: the message
        names the exception's type and the first 200 characters of its text, on one line."""
        return cls.failed(ErrorType.INTERNAL_ERROR,
                          [f"bfcl-safe could not {what}: {type(exc).__name__}: {_one_line(exc)}"], turn,
                          details={"exception": type(exc).__name__})

    def error(self) -> dict:
        """The record's ``error`` dict, keys in the reference's order (a failed verdict's)."""
        assert self.error_type is not None, "a passed verdict has no error"
        error: dict[str, Any] = {"error_message": self.error_message, "error_type": self.error_type.value}
        if self.details is not None:
            error["details"] = self.details
        if self.execution_result is not None:
            error["execution_result"] = self.execution_result
        return error

    def summary(self) -> dict:
        """``{"valid", "turns_passed", "first_failing_turn"}``, with the ``error`` dict's
        keys when failed (the play API's ``check_turn()`` layout)."""
        if self.valid:
            return {"valid": True, "turns_passed": self.turns_passed, "first_failing_turn": None}
        return {"valid": False, **self.error(), "first_failing_turn": self.failing_turn,
                "turns_passed": self.turns_passed}

    def own_record(self, entry_id: str, model_name: str, test_category: str) -> dict:
        """The short record of bfcl-safe's own failure types (resource limit, internal
        error): id, model, category, the ``error`` dict and the per-turn fields; what
        :meth:`to_record` gives for them (usable before the entry's input is known)."""
        return {"id": entry_id, "model_name": model_name, "test_category": test_category, "valid": False,
                "error": self.error(), "first_failing_turn": self.failing_turn, "turns_passed": self.turns_passed}

    def to_record(self, item: "EntryInput", parts: "RecordParts | None" = None) -> dict:
        """BFCL's score-file record of this verdict for ``item``: ``{"valid": True}``, or the
        failure record — the reference's keys in its order, then ``first_failing_turn``
        and ``turns_passed``. bfcl-safe's own error types get the short layout (id,
        model, category, error, per-turn fields)."""
        if self.valid:
            return {"valid": True}
        entry_id = item.entry["id"]
        assert self.error_type is not None  # (failed() always sets it)
        if self.error_type.own:
            return self.own_record(entry_id, item.model_name, item.test_category)
        parts = RecordParts() if parts is None else parts
        if self.error_type in (ErrorType.INFERENCE_ERROR, ErrorType.FORCE_TERMINATED):
            extra = {"model_result": _or(parts.model_result_json, item.model_result)}
        else:
            extra = {"model_result_raw": _or(parts.model_result_json, item.model_result),
                     "model_result_decoded": _display_decoded(item.model_result, item.decoder)}
        answer = parts.possible_answer_json() if parts.possible_answer_json is not None else None
        extra["possible_answer"] = _or(answer, item.ground_truth)
        record = {
            "id": entry_id,
            "model_name": item.model_name,
            "test_category": item.test_category,
            "valid": False,
            "error": self.error(),
            # The dataset entry as the reference holds it while scoring, minus "function".
            "prompt": _without_function(parts.prompt() if parts.prompt is not None else dict(item.entry)),
        }
        record.update(extra)
        record["inference_log"] = parts.inference_log
        # Not in the reference's records: per-turn diagnostics, after its keys.
        record["first_failing_turn"] = self.failing_turn
        record["turns_passed"] = self.turns_passed
        return record


def _one_line(exc: BaseException) -> str:
    """An exception's text for a message: its first 200 characters, control characters
    escaped visibly; ``(no message)`` when it has none or none can be made."""
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - a message that cannot be made
        text = ""
    text = shown_path(text[:200])
    return text if text else "(no message)"


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value


class EntryInput(NamedTuple):
    """What is checked: a dataset entry, the model's result (as the result file holds it)
    and the ground truth, scored as ``model_name`` (the result folder; it names the
    backends' instances) with ``decoder`` (a key of ``DECODERS``)."""

    entry: Mapping[str, Any]
    model_result: Any
    ground_truth: Sequence[Sequence[str]]
    model_name: str
    test_category: str
    decoder: str = "auto"
    #: The long-context extension data, or a function giving it (called only when needed).
    long_context_data: Callable[[], Mapping[str, Any]] | Mapping[str, Any] | None = None


class CheckOptions(NamedTuple):
    """The non-official switches of a check (both off: the official verdict); the one
    object that carries them from the command line (``runner.Options.checks``) through a
    result file's ``scoring.Context`` down to :func:`check_entry`."""

    strict_irrelevance: bool = False
    check_order: bool = False


class RecordParts(NamedTuple):
    """What a failure record holds besides the verdict and the input: ``prompt`` (a
    function giving the entry as the reference holds it while scoring, or its JSON text;
    default: the entry), ``inference_log``, ``model_result_json`` (the result as the JSON
    text it was read from) and ``possible_answer_json`` (a function giving the ground
    truth's text, or None) — score files then copy those texts."""

    prompt: Callable[[], Any] | None = None
    inference_log: Any = ""
    model_result_json: Any = None
    possible_answer_json: Callable[[], Any] | None = None


def unordered_missing(needed: Sequence[str], available: Sequence[str]) -> list[str]:
    """Items of ``needed`` not covered by ``available`` as a multiset (order ignored)."""
    pool: dict[str, int] = {}
    for item in available:
        pool[item] = pool.get(item, 0) + 1
    missing = []
    for item in needed:
        if pool.get(item, 0) > 0:
            pool[item] -= 1
        else:
            missing.append(item)
    return missing


def _ordered_missing(needed: Sequence[str], available: Sequence[str]) -> tuple[bool, list[str]]:
    iterator = iter(available)
    ordered = all(item in iterator for item in needed)
    return ordered, [item for item in needed if item not in available]


def _state_check(model: Side, truth: Side, turn: int, execution_results: list[dict]) -> Verdict | None:
    for class_name, truth_instance in truth.instances.items():
        model_state = model.instances[class_name].public_state()
        truth_state = truth_instance.public_state()
        differences = {}
        for attr, expected in truth_state.items():
            actual = model_state[attr]
            if actual != expected:
                differences[attr] = {"model": actual, "ground_truth": expected}
        if differences:
            return Verdict.failed(
                ErrorType.STATE_MISMATCH,
                f"Model instance for {class_name} does not match the state with ground truth instance.",
                turn,
                details={
                    "differences": differences,
                    "model_instance_state": model_state,
                    "ground_truth_instance_state": truth_state,
                },
                execution_result=execution_results,
                backend_class=class_name,
            )
    return None


def new_sides(
    entry: Mapping[str, Any],
    model_name: str | None,
    long_context_data: Callable[[], Mapping[str, Any]] | Mapping[str, Any] | None = None,
) -> tuple[Side, Side]:
    """The model's and the ground truth's sides of ``entry``, named as when scoring
    ``model_name`` (None: neutral instance names)."""
    long_context = is_long_context(category_of(entry["id"]))
    model_owner = None if model_name is None else f"{model_name}_eval"
    truth_owner = None if model_name is None else f"{model_name}_ground_truth_eval"
    model = Side.create(entry, owner=model_owner, long_context=long_context,
                        long_context_data=long_context_data)
    truth = Side.create(entry, owner=truth_owner, long_context=long_context,
                        long_context_data=long_context_data)
    return model, truth


def turn_failure(
    turn_index: int,
    model_turn: Sequence[Sequence[Any]],
    truth_turn: Sequence[str],
    model: Side,
    truth: Side,
    truth_results: Sequence[str],
    all_model_results: Sequence[str],
    execution_results: list[dict],
) -> Verdict | None:
    """The official checks of one turn, after both sides ran it, in the reference's order.

    ``model_turn``: the model's decoded steps of this turn; ``all_model_results``: the
    model's results of every turn so far; ``execution_results``: per turn so far,
    ``{"model": results per step, "ground_truth": results}``. None when the turn passes.
    """
    if truth_turn and is_empty_response(model_turn):
        return Verdict.failed(ErrorType.EMPTY_TURN, f"Model response list is empty for turn {turn_index}",
                              turn_index, details={"execution_result": execution_results})
    if not truth_turn:
        return None

    state = _state_check(model, truth, turn_index, execution_results)
    if state is not None:
        return state

    missing = unordered_missing(truth_results, all_model_results)
    if missing:
        return Verdict.failed(
            ErrorType.RESPONSE_MISMATCH,
            f"Model response execution results so far does not contain all the ground truth response execution results for turn {turn_index}.",
            turn_index,
            details={
                "missing_items": missing,
                "model_response (including all previous turns)": list(all_model_results),
                "ground_truth_response (only the current turn)": list(truth_results),
            },
        )
    return None


def check_turns(
    decoded: Sequence[Sequence[Sequence[Any]]],
    ground_truth: Sequence[Sequence[str]],
    entry: Mapping[str, Any],
    model_name: str,
    long_context_data: Callable[[], Mapping[str, Any]] | Mapping[str, Any] | None = None,
    *,
    check_order: bool = False,
    trace: list[dict] | None = None,
) -> Verdict:
    """``multi_turn_checker``: run model and ground truth turn by turn and compare.
    ``trace``, if given, receives per turn ``{"model": results per step,
    "ground_truth": results}`` up to the failing turn."""
    model, truth = new_sides(entry, model_name, long_context_data)
    model_calls: dict[str, list[str]] = {c: [] for c in model.instances} if check_order else {}
    truth_calls: dict[str, list[str]] = {c: [] for c in truth.instances} if check_order else {}
    execution_results: list[dict] = [] if trace is None else trace
    all_model_results: list[str] = []
    for turn_index, truth_turn in enumerate(ground_truth):
        model_turn = decoded[turn_index]
        per_step = []
        for step in model_turn:
            results = model.run(step)
            per_step.append(results)
            all_model_results.extend(results)
            if check_order:
                _record(model, step, model_calls)
        truth_results = truth.run(truth_turn)
        if check_order:
            _record(truth, truth_turn, truth_calls)
        execution_results.append({"model": per_step, "ground_truth": truth_results})

        failure = turn_failure(turn_index, model_turn, truth_turn, model, truth, truth_results,
                               all_model_results, execution_results)
        if failure is not None:
            return failure
        if not truth_turn:
            continue
        if check_order:
            for class_name in truth.instances:
                ordered, missing_calls = _ordered_missing(truth_calls[class_name], model_calls[class_name])
                if not ordered:
                    return Verdict.failed(
                        ErrorType.ORDER_MISMATCH,
                        f"Model instance for {class_name} does not match the method invoke order with ground truth instance. Missing items: {missing_calls}",
                        turn_index, backend_class=class_name)
    return Verdict.passed(len(ground_truth))


def _record(side: Side, step: Sequence[Any], calls: dict[str, list[str]]) -> None:
    """Method names called, per class (non-official order check; names resolved like execution)."""
    from bfcl_safe.interp import CallSpec, RejectedInput, parse_call

    owners = {}
    for class_name, instance in side.instances.items():
        for name in type(instance).__dict__:
            owners[name] = class_name
    for call in step:
        try:
            spec = call if isinstance(call, CallSpec) else parse_call(call) if isinstance(call, str) else None
        except RejectedInput:
            spec = None
        if spec is not None and spec.name in side.table and spec.name in owners:
            calls[owners[spec.name]].append(spec.name)


def irrelevance_failure(decoded: Sequence[Sequence[Any]], ground_truth: Sequence[Sequence[str]]) -> Verdict | None:
    """``multi_turn_irrelevance_checker`` (``--strict-irrelevance``; not used by the
    official scorer): calls in a turn whose ground truth has none."""
    for turn_index, truth_turn in enumerate(ground_truth):
        model_turn = decoded[turn_index]
        if not truth_turn and not is_empty_response(model_turn):
            return Verdict.failed(
                ErrorType.IRRELEVANCE,
                f"Model outputs valid function calls when it should not for turn {turn_index}.",
                turn_index, details={"model response decoded": decoded})
    return None


def is_empty_response(items: Sequence[Any]) -> bool:
    """The reference's ``is_empty_execute_response``: nothing, or one thing of length 0.
    On a step's decoded calls or their texts: ``[]`` or ``[""]`` (a decoded call is text
    or a call record, and only empty text has a length of 0); on a turn's decoded steps:
    ``[]`` or ``[[]]``. The one test of "a step (or turn) that ran no call"."""
    if len(items) != 1:
        return not items
    first = items[0]
    kind = type(first)
    if kind is CallSpec:  # (a decoded call, the commonest by far: not sized)
        return False
    if kind is str or kind is list or kind is tuple or kind is dict:  # (Sized, without the ABC's check)
        return not first
    return isinstance(first, Sized) and len(first) == 0


def decode_turn(turn: Any, decoder: str) -> list[tuple[Any, list[Any]]] | None:
    """The steps of one result turn that the scorer runs, as ``(raw step, calls)`` pairs:
    undecodable and empty steps are skipped. None for a turn that is not a list of steps."""
    steps = []
    decode = DECODERS[decoder][0]  # (decode_step's lookup, once a turn)
    if isinstance(turn, (list, str, tuple)):
        for step in turn:
            try:
                calls = decode(step)
            except DecodeError:
                continue
            if is_empty_response(calls):
                continue
            steps.append((step, calls))
    elif isinstance(turn, dict):
        # Iterating a dict yields its keys, as in the reference.
        for step in turn:
            try:
                calls = decode(step)
            except DecodeError:
                continue
            if not is_empty_response(calls):
                steps.append((step, calls))
    else:
        return None
    return steps


def force_terminated_verdict(model_turns: int, truth_turns: int, turn: int,
                             turn_failure: Verdict | None = None) -> Verdict:
    """BFCL's verdict on a result with fewer (or more) turns than the ground truth."""
    return Verdict.failed(
        ErrorType.FORCE_TERMINATED,
        [f"Model was force-terminated during inference phase. The length of the model result turns ({model_turns}) does not match the length of the ground truth turns ({truth_turns})."],
        turn, turn_failure=turn_failure)


def check_entry(item: EntryInput, options: CheckOptions = CheckOptions(), *,
                trace: list[dict] | None = None) -> Verdict:
    """The verdict on one entry (``_evaluate_single_multi_turn_entry``).

    An entry that fails as a whole (not a list of turns, a malformed turn) fails at
    turn 0. A force-terminated entry (fewer turns than the ground truth) fails at its
    last, cut-short turn unless one of the turns it completed fails first (that failure
    is then ``turn_failure``). ``trace`` (see :func:`check_turns`) receives the per-turn
    results of the turns that were run.
    """
    model_result, ground_truth, decoder = item.model_result, item.ground_truth, item.decoder
    if type(model_result) is not list:
        return Verdict.failed(
            ErrorType.INFERENCE_ERROR,
            ["Error during inference phase. Model did not output a list of model responses."], 0)
    if len(model_result) != len(ground_truth):
        # The turns the model completed before it was cut short are checked for the
        # diagnostics only; the verdict is the reference's.
        completed = len(model_result) - 1 if len(model_result) < len(ground_truth) else len(ground_truth)
        turn, failure = 0, None
        if completed > 0:
            decoded = _decode_turns(model_result[:completed], decoder)
            if decoded is not None:
                checked = check_turns(decoded, ground_truth[:completed], item.entry, item.model_name,
                                      item.long_context_data, check_order=options.check_order, trace=trace)
                turn = checked.turns_passed
                failure = None if checked.valid else checked
        return force_terminated_verdict(len(model_result), len(ground_truth), turn, failure)

    decoded = _decode_turns(model_result, decoder)
    if decoded is None:
        bad = next(turn for turn in model_result if decode_turn(turn, decoder) is None)
        return Verdict.failed(
            ErrorType.INFERENCE_ERROR,
            [f"Malformed result: a turn is {type(bad).__name__}, not a list of steps."], 0)

    verdict = check_turns(decoded, ground_truth, item.entry, item.model_name, item.long_context_data,
                          check_order=options.check_order, trace=trace)
    if verdict.valid and options.strict_irrelevance:
        return irrelevance_failure(decoded, ground_truth) or verdict
    return verdict


def evaluate_entry(
    entry: Mapping[str, Any],
    model_result: Any,
    ground_truth: Sequence[Sequence[str]],
    *,
    model_name: str,
    test_category: str,
    decoder: str = "auto",
    long_context_data: Callable[[], Mapping[str, Any]] | None = None,
    prompt_entry: Callable[[], Any] | None = None,
    inference_log: Any = "",
    options: CheckOptions = CheckOptions(),
    trace: list[dict] | None = None,
    model_result_json: Any = None,
    possible_answer_json: Callable[[], Any] | None = None,
) -> dict:
    """Compatibility path (until every caller renders a :class:`Verdict` itself):
    ``check_entry(...).to_record(...)`` — ``{"valid": True}`` or the failure record."""
    item = EntryInput(entry, model_result, ground_truth, model_name, test_category, decoder, long_context_data)
    verdict = check_entry(item, options, trace=trace)
    return verdict.to_record(item, RecordParts(prompt_entry, inference_log, model_result_json, possible_answer_json))


def _decode_turns(model_result: Sequence[Any], decoder: str) -> list[list[list[Any]]] | None:
    decoded = []
    for turn in model_result:
        steps = decode_turn(turn, decoder)
        if steps is None:
            return None
        decoded.append([calls for _, calls in steps])
    return decoded


def _without_function(prompt: Any) -> Any:
    if isinstance(prompt, dict):
        prompt.pop("function", None)
    return prompt  # else the entry's JSON text without it (Dataset.prompt_json)


def _display_decoded(model_result: list, decoder: str) -> list:
    """The decoded calls as the reference's text (for the score file)."""
    _, display = DECODERS[decoder]
    out = []
    for turn in model_result:
        steps = []
        for step in turn if isinstance(turn, (list, str, tuple, dict)) else ():
            try:
                texts = display(step)
            except BudgetExceeded:
                raise  # the entry's budget is spent: the entry ends as a resource limit
            except Exception:  # noqa: BLE001 - undecodable steps are skipped
                continue
            if is_empty_response(texts):
                continue
            steps.append(texts)
        out.append(steps)
    return out
