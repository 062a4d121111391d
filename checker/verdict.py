"""Scoring one multi-turn entry with the reference's exact semantics.

Mirrors ``_evaluate_single_multi_turn_entry`` and ``multi_turn_checker`` of
bfcl-eval 2026.3.23: the checks, their order, the error types and the layout of
the failure record written to score files.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from checker.decoders import DECODERS, DecodeError, decode_step
from checker.episode import Episode

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


def category_of(entry_id: str) -> str:
    return entry_id.rsplit("_", 1)[0]


def is_long_context(category: str) -> bool:
    return "long_context" in category or "composite" in category


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
    category = category_of(entry["id"])
    long_context = is_long_context(category)
    model = Episode.create(entry, owner=f"{model_name}_eval", long_context=long_context,
                           long_context_data=long_context_data)
    truth = Episode.create(entry, owner=f"{model_name}_ground_truth_eval", long_context=long_context,
                           long_context_data=long_context_data)
    model_calls: dict[str, list[str]] = {c: [] for c in model.instances} if check_order else {}
    truth_calls: dict[str, list[str]] = {c: [] for c in truth.instances} if check_order else {}
    execution_results: list[dict] = []
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

        if truth_turn and (not model_turn or (len(model_turn) == 1 and len(model_turn[0]) == 0)):
            return {
                "valid": False,
                "error_message": f"Model response list is empty for turn {turn_index}",
                "error_type": EMPTY_TURN,
                "details": {"execution_result": execution_results},
            }
        if not truth_turn:
            continue

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
                    "ground_truth_response (only the current turn)": truth_results,
                },
            }
        if check_order:
            for class_name in truth.instances:
                ordered, missing_calls = _ordered_missing(truth_calls[class_name], model_calls[class_name])
                if not ordered:
                    return {
                        "valid": False,
                        "error_message": f"Model instance for {class_name} does not match the method invoke order with ground truth instance. Missing items: {missing_calls}",
                        "error_type": ORDER_MISMATCH,
                    }
    return {"valid": True}


def _record(episode: Episode, step: Sequence[Any], calls: dict[str, list[str]]) -> None:
    """Method names called, per class (non-official order check; names resolved like execution)."""
    from interp import CallSpec, parse_call, RejectedInput

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
    for turn_index, truth_turn in enumerate(ground_truth):
        model_turn = decoded[turn_index]
        if not truth_turn and not (len(model_turn) == 0 or (len(model_turn) == 1 and len(model_turn[0]) == 0)):
            return {
                "valid": False,
                "error_message": f"Model outputs valid function calls when it should not for turn {turn_index}.",
                "error_type": IRRELEVANCE,
                "details": {"model response decoded": decoded},
            }
    return {"valid": True}


def evaluate_entry(
    entry: Mapping[str, Any],
    model_result: Any,
    ground_truth: Sequence[Sequence[str]],
    *,
    model_name: str,
    test_category: str,
    decoder: str = "auto",
    long_context_data: Callable[[], Mapping[str, Any]] | None = None,
    prompt_entry: Callable[[], dict] | None = None,
    inference_log: Any = "",
    strict_irrelevance: bool = False,
    check_order: bool = False,
) -> dict:
    """Score one entry; ``{"valid": True}`` or the failure record the reference writes."""
    entry_id = entry["id"]

    def failure(error: dict, **extra: Any) -> dict:
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
        return record

    if type(model_result) is not list:
        return failure(
            {"error_message": ["Error during inference phase. Model did not output a list of model responses."],
             "error_type": INFERENCE_ERROR},
            model_result=model_result, possible_answer=ground_truth,
        )
    if len(model_result) != len(ground_truth):
        return failure(
            {"error_message": [
                f"Model was force-terminated during inference phase. The length of the model result turns ({len(model_result)}) does not match the length of the ground truth turns ({len(ground_truth)})."],
             "error_type": FORCE_TERMINATED},
            model_result=model_result, possible_answer=ground_truth,
        )

    decoded: list[list[list[Any]]] = []
    for turn in model_result:
        turn_steps = []
        if isinstance(turn, (list, str, tuple)):
            for step in turn:
                try:
                    calls = decode_step(step, decoder)
                except DecodeError:
                    continue
                if len(calls) == 0 or (len(calls) == 1 and isinstance(calls[0], str) and calls[0] == ""):
                    continue
                turn_steps.append(calls)
        elif isinstance(turn, dict):
            # Iterating a dict yields its keys, as in the reference.
            for step in turn:
                try:
                    calls = decode_step(step, decoder)
                except DecodeError:
                    continue
                if calls:
                    turn_steps.append(calls)
        else:
            return failure(
                {"error_message": [f"Malformed result: a turn is {type(turn).__name__}, not a list of steps."],
                 "error_type": INFERENCE_ERROR},
                model_result=model_result, possible_answer=ground_truth,
            )
        decoded.append(turn_steps)

    result = check_turns(decoded, ground_truth, entry, model_name, long_context_data, check_order=check_order)
    if result["valid"] and strict_irrelevance:
        result = irrelevance_check(decoded, ground_truth)
    if result["valid"]:
        return result
    result = dict(result)
    result.pop("valid")
    return failure(
        result,
        model_result_raw=model_result,
        model_result_decoded=_display_decoded(model_result, decoder),
        possible_answer=ground_truth,
    )


def _without_function(prompt: dict) -> dict:
    prompt.pop("function", None)
    return prompt


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
