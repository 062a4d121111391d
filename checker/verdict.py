"""Scoring one multi-turn entry with the reference's exact semantics.

Mirrors ``_evaluate_single_multi_turn_entry`` and ``multi_turn_checker`` of
bfcl-eval 2026.3.23: the checks, their order, the error types and the layout of
the failure record written to score files.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from bfcl_safe.checker.decoders import DECODERS, DecodeError, decode_step
from bfcl_safe.checker.contract import category_of, is_long_context
from bfcl_safe.checker.episode import Episode

INFERENCE_ERROR = "multi_turn:inference_error"
FORCE_TERMINATED = "multi_turn:force_terminated"
EMPTY_TURN = "multi_turn:empty_turn_model_response"
STATE_MISMATCH = "multi_turn:instance_state_mismatch"
RESPONSE_MISMATCH = "multi_turn:execution_response_mismatch"
IRRELEVANCE = "multi_turn:irrelevance_error:decoder_success"
ORDER_MISMATCH = "multi_turn:method_invoke_order_mismatch"
#: Every error type a verdict can carry (the official ones first).
ERROR_TYPES = frozenset({
    INFERENCE_ERROR, FORCE_TERMINATED, EMPTY_TURN, STATE_MISMATCH, RESPONSE_MISMATCH,
    IRRELEVANCE, ORDER_MISMATCH,
})


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


def _state_check(model: Episode, truth: Episode) -> dict | None:
    for class_name, truth_instance in truth.instances.items():
        model_state = model.instances[class_name].public_state()
        truth_state = truth_instance.public_state()
        differences = {}
        for attr, expected in truth_state.items():
            actual = model_state[attr]
            if actual != expected:
                differences[attr] = {"model": actual, "ground_truth": expected}
        if differences:
            return {
                "valid": False,
                "error_message": f"Model instance for {class_name} does not match the state with ground truth instance.",
                "error_type": STATE_MISMATCH,
                "details": {
                    "differences": differences,
                    "model_instance_state": model_state,
                    "ground_truth_instance_state": truth_state,
                },
            }
    return None


def new_sides(
    entry: Mapping[str, Any],
    model_name: str | None,
    long_context_data: Callable[[], Mapping[str, Any]] | None = None,
) -> tuple[Episode, Episode]:
    """The model's and the ground truth's episodes of ``entry``, named as when scoring
    ``model_name`` (None: neutral instance names)."""
    long_context = is_long_context(category_of(entry["id"]))
    model_owner = None if model_name is None else f"{model_name}_eval"
    truth_owner = None if model_name is None else f"{model_name}_ground_truth_eval"
    model = Episode.create(entry, owner=model_owner, long_context=long_context,
                           long_context_data=long_context_data)
    truth = Episode.create(entry, owner=truth_owner, long_context=long_context,
                           long_context_data=long_context_data)
    return model, truth


def turn_failure(
    turn_index: int,
    model_turn: Sequence[Sequence[Any]],
    truth_turn: Sequence[str],
    model: Episode,
    truth: Episode,
    truth_results: Sequence[str],
    all_model_results: Sequence[str],
    execution_results: list[dict],
) -> dict | None:
    """The official checks of one turn, after both sides ran it, in the reference's order.

    ``model_turn``: the model's decoded steps of this turn; ``all_model_results``: the
    model's results of every turn so far; ``execution_results``: per turn so far,
    ``{"model": results per step, "ground_truth": results}``. None when the turn passes.
    """
    if truth_turn and (not model_turn or (len(model_turn) == 1 and len(model_turn[0]) == 0)):
        return {
            "valid": False,
            "error_message": f"Model response list is empty for turn {turn_index}",
            "error_type": EMPTY_TURN,
            "details": {"execution_result": execution_results},
        }
    if not truth_turn:
        return None

    state = _state_check(model, truth)
    if state is not None:
        state["execution_result"] = execution_results
        return state

    missing = unordered_missing(truth_results, all_model_results)
    if missing:
        return {
            "valid": False,
            "error_message": f"Model response execution results so far does not contain all the ground truth response execution results for turn {turn_index}.",
            "error_type": RESPONSE_MISMATCH,
            "details": {
                "missing_items": missing,
                "model_response (including all previous turns)": list(all_model_results),
                "ground_truth_response (only the current turn)": list(truth_results),
            },
        }
    return None


def check_turns(
    decoded: Sequence[Sequence[Sequence[Any]]],
    ground_truth: Sequence[Sequence[str]],
    entry: Mapping[str, Any],
    model_name: str,
    long_context_data: Callable[[], Mapping[str, Any]] | None = None,
    *,
    check_order: bool = False,
) -> dict:
    """``multi_turn_checker``: run model and ground truth turn by turn and compare."""
    return check_turns_at(decoded, ground_truth, entry, model_name, long_context_data, check_order=check_order)[0]


def check_turns_at(
    decoded: Sequence[Sequence[Sequence[Any]]],
    ground_truth: Sequence[Sequence[str]],
    entry: Mapping[str, Any],
    model_name: str,
    long_context_data: Callable[[], Mapping[str, Any]] | None = None,
    *,
    check_order: bool = False,
    trace: list[dict] | None = None,
) -> tuple[dict, int]:
    """:func:`check_turns`, and the index of the failing turn (``len(ground_truth)`` when
    all pass). ``trace``, if given, receives per turn ``{"model": results per step,
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
            return failure, turn_index
        if not truth_turn:
            continue
        if check_order:
            for class_name in truth.instances:
                ordered, missing_calls = _ordered_missing(truth_calls[class_name], model_calls[class_name])
                if not ordered:
                    return {
                        "valid": False,
                        "error_message": f"Model instance for {class_name} does not match the method invoke order with ground truth instance. Missing items: {missing_calls}",
                        "error_type": ORDER_MISMATCH,
                    }, turn_index
    return {"valid": True}, len(ground_truth)


def _record(episode: Episode, step: Sequence[Any], calls: dict[str, list[str]]) -> None:
    """Method names called, per class (non-official order check; names resolved like execution)."""
    from bfcl_safe.interp import CallSpec, parse_call, RejectedInput

    owners = {}
    for class_name, instance in episode.instances.items():
        for name in type(instance).__dict__:
            owners[name] = class_name
    for call in step:
        try:
            spec = call if isinstance(call, CallSpec) else parse_call(call) if isinstance(call, str) else None
        except RejectedInput:
            spec = None
        if spec is not None and spec.name in episode.table and spec.name in owners:
            calls[owners[spec.name]].append(spec.name)


def irrelevance_check(decoded: Sequence[Sequence[Any]], ground_truth: Sequence[Sequence[str]]) -> dict:
    """``multi_turn_irrelevance_checker`` (not used by the official scorer)."""
    return _irrelevance_check_at(decoded, ground_truth)[0]


def _irrelevance_check_at(decoded: Sequence[Sequence[Any]], ground_truth: Sequence[Sequence[str]]) -> tuple[dict, int]:
    for turn_index, truth_turn in enumerate(ground_truth):
        model_turn = decoded[turn_index]
        if not truth_turn and not (len(model_turn) == 0 or (len(model_turn) == 1 and len(model_turn[0]) == 0)):
            return {
                "valid": False,
                "error_message": f"Model outputs valid function calls when it should not for turn {turn_index}.",
                "error_type": IRRELEVANCE,
                "details": {"model response decoded": decoded},
            }, turn_index
    return {"valid": True}, len(ground_truth)


def is_empty_step(calls: Sequence[Any]) -> bool:
    """The reference's ``is_empty_execute_response`` on decoded calls: no call, or one empty text."""
    return len(calls) == 0 or (len(calls) == 1 and isinstance(calls[0], str) and calls[0] == "")


def decode_turn(turn: Any, decoder: str) -> list[tuple[Any, list[Any]]] | None:
    """The steps of one result turn that the scorer runs, as ``(raw step, calls)`` pairs:
    undecodable and empty steps are skipped. None for a turn that is not a list of steps."""
    steps = []
    if isinstance(turn, (list, str, tuple)):
        for step in turn:
            try:
                calls = decode_step(step, decoder)
            except DecodeError:
                continue
            if is_empty_step(calls):
                continue
            steps.append((step, calls))
    elif isinstance(turn, dict):
        # Iterating a dict yields its keys, as in the reference.
        for step in turn:
            try:
                calls = decode_step(step, decoder)
            except DecodeError:
                continue
            if calls:
                steps.append((step, calls))
    else:
        return None
    return steps


def force_terminated_error(model_turns: int, truth_turns: int) -> dict:
    return {"error_message": [
        f"Model was force-terminated during inference phase. The length of the model result turns ({model_turns}) does not match the length of the ground truth turns ({truth_turns})."],
        "error_type": FORCE_TERMINATED}


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
    strict_irrelevance: bool = False,
    check_order: bool = False,
    trace: list[dict] | None = None,
    model_result_json: Any = None,
    possible_answer_json: Callable[[], Any] | None = None,
) -> dict:
    """Score one entry; ``{"valid": True}`` or the failure record the reference writes.

    ``model_result_json`` (the result as the JSON text it was read from) and
    ``possible_answer_json`` (a function giving the ground truth's text, or None) are
    what the record holds for those values when given: score files then copy them.

    A failure record also gets, after the reference's keys, ``first_failing_turn`` (the
    index of the turn where checking failed) and ``turns_passed`` (the turns before it,
    all of which passed). An entry that fails as a whole (not a list of turns, a
    malformed turn) fails at turn 0. A force-terminated entry (fewer turns than the
    ground truth) fails at its last, cut-short turn unless one of the turns it
    completed fails first. ``trace`` (see :func:`check_turns_at`) receives the
    per-turn results of the turns that were run.
    """
    entry_id = entry["id"]

    def failure(error: dict, turn: int, **extra: Any) -> dict:
        if model_result_json is not None:
            for key in ("model_result", "model_result_raw"):
                if key in extra:
                    extra[key] = model_result_json
        if possible_answer_json is not None and "possible_answer" in extra:
            answer = possible_answer_json()
            if answer is not None:
                extra["possible_answer"] = answer
        record = {
            "id": entry_id,
            "model_name": model_name,
            "test_category": test_category,
            "valid": False,
            "error": error,
            # The dataset entry as the reference holds it while scoring, minus "function".
            "prompt": _without_function(prompt_entry() if prompt_entry else dict(entry)),
        }
        record.update(extra)
        record["inference_log"] = inference_log
        # Not in the reference's records: per-turn diagnostics, after its keys.
        record["first_failing_turn"] = turn
        record["turns_passed"] = turn
        return record

    if type(model_result) is not list:
        return failure(
            {"error_message": ["Error during inference phase. Model did not output a list of model responses."],
             "error_type": INFERENCE_ERROR}, 0,
            model_result=model_result, possible_answer=ground_truth,
        )
    if len(model_result) != len(ground_truth):
        # The turns the model completed before it was cut short are checked for the
        # diagnostics only; the verdict is the reference's.
        completed = len(model_result) - 1 if len(model_result) < len(ground_truth) else len(ground_truth)
        turn = 0
        if completed > 0:
            decoded = _decode_turns(model_result[:completed], decoder)
            if decoded is not None:
                _, turn = check_turns_at(decoded, ground_truth[:completed], entry, model_name, long_context_data,
                                         check_order=check_order, trace=trace)
        return failure(
            force_terminated_error(len(model_result), len(ground_truth)), turn,
            model_result=model_result, possible_answer=ground_truth,
        )

    decoded = _decode_turns(model_result, decoder)
    if decoded is None:
        bad = next(turn for turn in model_result if decode_turn(turn, decoder) is None)
        return failure(
            {"error_message": [f"Malformed result: a turn is {type(bad).__name__}, not a list of steps."],
             "error_type": INFERENCE_ERROR}, 0,
            model_result=model_result, possible_answer=ground_truth,
        )

    result, turn = check_turns_at(decoded, ground_truth, entry, model_name, long_context_data,
                                  check_order=check_order, trace=trace)
    if result["valid"] and strict_irrelevance:
        result, turn = _irrelevance_check_at(decoded, ground_truth)
    if result["valid"]:
        return result
    result = dict(result)
    result.pop("valid")
    return failure(
        result, turn,
        model_result_raw=model_result,
        model_result_decoded=_display_decoded(model_result, decoder),
        possible_answer=ground_truth,
    )


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
            except Exception:  # noqa: BLE001 - undecodable steps are skipped
                continue
            if len(texts) == 0 or (len(texts) == 1 and texts[0] == ""):
                continue
            steps.append(texts)
        out.append(steps)
    return out
