"""``bfcl-safe explain``: one entry of a result file, turn by turn.

For each turn: the user message, the model's decoded calls with their results, the
ground truth's calls with their results; at the failing turn a field-level state diff
(attribute, model vs ground truth, and inside dict/list values the differing paths)
and the missing responses. The verdict is the scorer's (:func:`checker.verdict.check_entry`);
the per-turn results are those it computed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Sequence

from bfcl_safe.checker.boundary import EntryBoundary
from bfcl_safe.checker.contract import ENTRY_ID, MULTI_TURN_CATEGORIES
from bfcl_safe.checker.dataset import Dataset
from bfcl_safe.checker.decoders import DECODERS
from bfcl_safe.checker.decoders.models import decoder_for_model
from bfcl_safe.checker.episode import plain, turn_messages
from bfcl_safe.checker.error_types import ErrorType
from bfcl_safe.checker.openai_format import missed_docs
from bfcl_safe.checker.result_files import find_result_files, read_result_lines
from bfcl_safe.checker.terminal import shown
from bfcl_safe.checker.verdict import EntryInput, Verdict, check_entry, decode_turn
from bfcl_safe.interp.errors import BfclSafeError, BudgetExceeded

#: Differing paths listed per attribute (the rest are counted).
MAX_DIFF_PATHS = 40
#: Characters of a value or result shown on a terminal (``--json`` shows everything).
MAX_SHOWN = 240

_ABSENT = object()


class ExplainError(BfclSafeError, ValueError):
    """The entry cannot be explained (unknown id or model, no result file); one line."""


# --------------------------------------------------------------------------- state diff


def _path_text(path: Sequence[Any]) -> str:
    text = str(path[0])
    for key in path[1:]:
        if isinstance(key, int):
            text += f"[{key}]"
        elif isinstance(key, str) and key.isidentifier():
            text += f".{key}"
        else:
            text += f"[{key!r}]"
    return text


def _walk(model: Any, truth: Any, path: list, out: list[tuple[list, Any, Any]]) -> None:
    if isinstance(model, dict) and isinstance(truth, dict):
        for key, value in model.items():
            if key in truth:
                _walk(value, truth[key], path + [key], out)
            else:
                out.append((path + [key], value, _ABSENT))
        for key, value in truth.items():
            if key not in model:
                out.append((path + [key], _ABSENT, value))
    elif isinstance(model, list) and isinstance(truth, list):
        for index in range(min(len(model), len(truth))):
            _walk(model[index], truth[index], path + [index], out)
        for index in range(len(truth), len(model)):
            out.append((path + [index], model[index], _ABSENT))
        for index in range(len(model), len(truth)):
            out.append((path + [index], _ABSENT, truth[index]))
    elif model != truth:
        out.append((path, model, truth))


def _side(value: Any) -> dict:
    return {"absent": True} if value is _ABSENT else {"value": value}


def state_diff(attribute: str, model_value: Any, truth_value: Any) -> dict:
    """One differing attribute: both values as plain data, and the paths inside them
    that differ (dict keys, list indices; a key or index only one side has is marked
    ``absent`` on the other)."""
    model_plain, truth_plain = plain(model_value), plain(truth_value)
    found: list[tuple[list, Any, Any]] = []
    _walk(model_plain, truth_plain, [attribute], found)
    if not found:
        # Equal as plain data but not to Python's ==, e.g. a tuple against a list.
        found = [([attribute], f"{type(model_value).__name__}: {model_value!r}",
                  f"{type(truth_value).__name__}: {truth_value!r}")]
    paths = [{"path": _path_text(path), "model": _side(m), "ground_truth": _side(t)}
             for path, m, t in found[:MAX_DIFF_PATHS]]
    return {"attribute": attribute, "model": model_plain, "ground_truth": truth_plain,
            "paths": paths, "more_paths": max(0, len(found) - MAX_DIFF_PATHS)}


def _turn_detail(verdict: Verdict) -> dict:
    """What the failing turn's verdict shows: the state diff (with the backend class the
    verdict names) or the missing responses."""
    detail: dict[str, Any] = {}
    details = verdict.details if isinstance(verdict.details, dict) else {}
    if verdict.error_type is ErrorType.STATE_MISMATCH:
        detail["state_diff"] = {
            "class": verdict.backend_class,
            "attributes": [state_diff(attribute, values["model"], values["ground_truth"])
                           for attribute, values in details.get("differences", {}).items()],
        }
    if verdict.error_type is ErrorType.RESPONSE_MISMATCH:
        detail["missing_responses"] = list(details.get("missing_items", []))
    return detail


# --------------------------------------------------------------------------- explanation


def _find_result(result_dir: Path, category: str, model: str | None) -> tuple[str, Path]:
    files = find_result_files(result_dir)
    models = sorted({f.model for f in files})
    matching = [f for f in files if f.category == category]
    if model is not None:
        if model not in models:
            raise ExplainError(f"unknown model {model!r} under {result_dir}"
                               f" (models with result files: {', '.join(models) or 'none'})")
        matching = [f for f in matching if f.model == model]
        if not matching:
            raise ExplainError(f"no {category} result file for model {model!r} under {result_dir}")
    if not matching:
        raise ExplainError(f"no {category} result file under {result_dir} "
                           f"(expected {{model}}/multi_turn/BFCL_v4_{category}_result.json)")
    if len(matching) > 1:
        raise ExplainError(f"several models have {category} results ({', '.join(f.model for f in matching)}); "
                           "choose one with --model")
    return matching[0].model, matching[0].path


def _shown_calls(raw: Any, calls: list, decoder: str) -> list[str]:
    """The step's calls as the scorer's ``model_result_decoded`` shows them."""
    try:
        texts = DECODERS[decoder][1](raw)
        if len(texts) == len(calls):
            return [str(text) for text in texts]
    except BudgetExceeded:
        raise
    except Exception:  # noqa: BLE001 - display only; fall back to the decoded calls
        pass
    return [call if isinstance(call, str) else call.render() if hasattr(call, "render") else str(call)
            for call in calls]


def explain_entry(
    result_dir: Path,
    entry_id: str,
    dataset: Dataset,
    *,
    model: str | None = None,
    report: Callable[[str], None] = lambda message: None,
) -> dict:
    """The explanation of one entry, as plain data (see :func:`render_text`)."""
    match = ENTRY_ID.match(entry_id) if isinstance(entry_id, str) else None
    if match is None or match.group(1) not in MULTI_TURN_CATEGORIES:
        raise ExplainError(f"unknown id {entry_id!r}: not a multi-turn entry id (e.g. multi_turn_base_2)")
    category = match.group(1)
    try:
        entry = dataset.entry(entry_id)
    except KeyError:
        raise ExplainError(f"unknown id {entry_id!r}: not in the {category} dataset") from None
    model, path = _find_result(Path(result_dir), category, model)
    items, _ = read_result_lines(path, category)
    item = next((i for i in items if i["id"] == entry_id), None)
    if item is None:
        raise ExplainError(f"{entry_id} is not in {path}")
    decoder = decoder_for_model(model, dataset, report)
    ground_truth = dataset.ground_truth_for(entry_id)
    missed = missed_docs(dataset.prompt_entry(entry_id))
    result = item["result"]

    trace: list[dict] = []
    # Scored as the scorer scores it: under a fresh budget (a hostile entry cannot make
    # explain hang or grow without bound either).
    boundary = EntryBoundary("score this entry")
    with boundary:
        verdict = check_entry(EntryInput(entry, result, ground_truth, model_name=model, test_category=category,
                                         decoder=decoder, long_context_data=dataset.long_context_data),
                              trace=trace)
        decoded_turns: list[list[tuple[Any, list]] | None] = []
        if type(result) is list:
            decoded_turns = [decode_turn(turn, decoder) for turn in result]
        # (shown here, in the boundary: a long step's display reuses its decode)
        shown_turns = [[_shown_calls(raw, calls, decoder) for raw, calls in steps or []] for steps in decoded_turns]
    failure = boundary.failure
    if failure is not None:  # the entry's failure as the scorer writes it, told in one line
        if failure.error_type is ErrorType.RESOURCE_LIMIT:
            limit = failure.details
            raise ExplainError(f"{entry_id}: checking it used up the resource budget {limit['budget']!r} "
                               f"({limit['spent']:,} > {limit['limit']:,}); the scorer fails it with "
                               f"{failure.error_type}")
        raise ExplainError(f"{entry_id}: {failure.error_message[0]}; the scorer fails it with {failure.error_type}")
    valid = verdict.valid
    failing = verdict.failing_turn
    # A force-terminated entry whose completed turn failed its own checks first: that turn's verdict.
    turn_verdict = verdict.turn_failure if verdict.turn_failure is not None else verdict

    turns = []
    for index, truth_turn in enumerate(ground_truth):
        executed = trace[index] if index < len(trace) else None
        steps = decoded_turns[index] if index < len(decoded_turns) else None
        model_steps = []
        for number in range(len(steps or [])):
            results = executed["model"][number] if executed is not None else None
            model_steps.append({"calls": shown_turns[index][number], "results": results})
        truth_results = executed["ground_truth"] if executed is not None else None
        if valid or (failing is not None and index < failing):
            status = "passed"
        elif index == failing:
            status = "failed"
        else:
            status = "not checked"
        turn: dict[str, Any] = {
            "turn": index,
            "status": status,
            "user": turn_messages(entry, missed, index),
            "new_tools": [doc["name"] for doc in missed.get(index, [])],
            "model": model_steps,
            "model_turn_recorded": steps is not None,
            "ground_truth": [{"call": call, "result": truth_results[n] if truth_results is not None else None}
                             for n, call in enumerate(truth_turn)],
            "run": executed is not None,
        }
        if status == "failed" and turn_verdict.error_type is not None:
            # The turn is labelled with the entry's official error type; when that is
            # force_terminated and the turn also failed its own checks, those are shown
            # beside it (``turn_check``), with their diagnostics (state diff, responses).
            turn["error_type"] = str(verdict.error_type)
            if verdict.turn_failure is not None:
                turn["turn_check"] = str(turn_verdict.error_type)
            message = turn_verdict.error_message
            turn["error_message"] = message[0] if isinstance(message, list) and len(message) == 1 else message
            if turn_verdict.error_type is ErrorType.EMPTY_TURN:
                turn["error_message"] += " (the model ran no call in this turn; the ground truth runs " \
                                         f"{len(truth_turn)})"
            turn.update(_turn_detail(turn_verdict))
        turns.append(turn)

    message = verdict.error_message
    if type(result) is not list:
        # BFCL records a failed inference as the error text in place of the turns.
        inference = {"result": result if isinstance(result, str) else None,
                     "result_type": type(result).__name__}
        if isinstance(item.get("traceback"), str):
            inference["traceback_last_line"] = (item["traceback"].strip().splitlines() or [""])[-1]
    else:
        inference = None
    return plain({
        "id": entry_id,
        "model": model,
        "category": category,
        "decoder": decoder,
        "result_file": str(path),
        "valid": valid,
        "error_type": None if verdict.error_type is None else str(verdict.error_type),
        "error_message": message[0] if isinstance(message, list) and len(message) == 1 else message,
        "first_failing_turn": failing,
        "turns_passed": len(ground_truth) if valid else verdict.turns_passed,
        "turn_count": len(ground_truth),
        "model_turn_count": len(result) if type(result) is list else None,
        "inference_error": inference,
        "turns": turns,
    })


# --------------------------------------------------------------------------- rendering


def render_json(explanation: dict) -> str:
    return json.dumps(explanation, ensure_ascii=False, indent=2)


def _short(value: Any, limit: int = MAX_SHOWN) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = shown(text)
    if len(text) > limit:
        return f"{text[:limit]}... ({len(text)} chars)"
    return text


def _shown_side(side: dict) -> str:
    return "(absent)" if side.get("absent") else _short(side.get("value"))


def render_text(explanation: dict) -> str:
    """The explanation for a terminal."""
    e = explanation
    lines = [f"{shown(e['id'])}  model {shown(e['model'])}  (decoder {e['decoder']})"]
    if e["valid"]:
        lines.append(f"verdict: PASS  ({e['turn_count']} of {e['turn_count']} turns)")
    else:
        lines.append(f"verdict: FAIL  {e['error_type']}  at turn {e['first_failing_turn']}  "
                     f"({e['turns_passed']} of {e['turn_count']} turns passed before it)")
        lines.append(f"  {_short(e['error_message'], 400)}")
    inference = e.get("inference_error")
    if inference is not None:
        if inference["result"] is not None:
            lines.append(f"  the result holds no turns, only the inference error: {_short(inference['result'], 400)}")
        else:
            lines.append(f"  the result holds no turns: it is a {inference['result_type']}, not a list of turns")
        if inference.get("traceback_last_line"):
            lines.append(f"  traceback (last line): {_short(inference['traceback_last_line'], 400)}")
    if e["model_turn_count"] is not None and e["model_turn_count"] != e["turn_count"]:
        lines.append(f"  the result has {e['model_turn_count']} turns, the ground truth {e['turn_count']}")
    for turn in e["turns"]:
        lines.append("")
        lines.append(f"== turn {turn['turn']}: {turn['status'].upper()}"
                     + (f" ({turn['error_type']})" if "error_type" in turn else ""))
        for message in turn["user"]:
            lines.append(f"  {message.get('role', 'user')}: {_short(message.get('content'), 400)}")
        if turn["new_tools"]:
            lines.append(f"  (tools made visible in this turn: {', '.join(turn['new_tools'])})")
        lines.append("  model:")
        if not turn["model_turn_recorded"]:
            lines.append("    (no turns: the inference failed, see above)" if inference is not None
                         else "    (no such turn in the result)")
        elif not turn["model"]:
            lines.append("    (no calls)")
        for number, step in enumerate(turn["model"]):
            results = step["results"]
            for position, call in enumerate(step["calls"]):
                text = f"    [{number}] {_short(call, 160)}"
                if results is not None and position < len(results):
                    text += f"\n          -> {_short(results[position])}"
                lines.append(text)
        lines.append("  ground truth:")
        if not turn["ground_truth"]:
            lines.append("    (no calls)")
        for call in turn["ground_truth"]:
            text = f"    {_short(call['call'], 160)}"
            if call["result"] is not None:
                text += f"\n          -> {_short(call['result'])}"
            lines.append(text)
        if not turn["run"]:
            lines.append("  (not run: scoring stops at the first failing turn)" if turn["status"] == "not checked"
                         else "  (not run)")
        if "turn_check" in turn:
            lines.append(f"  this turn's own checks fail too: {turn['turn_check']}")
        if "error_message" in turn:
            lines.append(f"  error: {_short(turn['error_message'], 400)}")
        diff = turn.get("state_diff")
        if diff:
            lines.append(f"  state diff ({diff['class']}):")
            for attribute in diff["attributes"]:
                lines.append(f"    attribute {attribute['attribute']}:")
                for item in attribute["paths"]:
                    lines.append(f"      {item['path']}")
                    lines.append(f"        model:        {_shown_side(item['model'])}")
                    lines.append(f"        ground truth: {_shown_side(item['ground_truth'])}")
                if attribute["more_paths"]:
                    lines.append(f"      ... and {attribute['more_paths']} more differing paths (see --json)")
        if "missing_responses" in turn:
            lines.append("  missing responses (ground-truth results no model result so far matches):")
            for item in turn["missing_responses"]:
                lines.append(f"    {_short(item)}")
    return "\n".join(lines)
