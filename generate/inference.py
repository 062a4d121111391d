"""One entry played against a model, as BFCL's OpenAI-compatible handler plays it.

:func:`play_entry` is BFCL's multi-turn inference loop (``inference_multi_turn_FC`` and
``inference_multi_turn_prompting`` with ``OpenAICompletionsHandler``'s message handling)
with the model's calls run by bfcl-safe's interpreter on the entry's own backends,
never by ``eval``. The turns and steps are the play API's
(:meth:`Episode.for_inference <bfcl_safe.checker.play.Episode.for_inference>`): the
episode decodes and runs each step and decides when a turn ends and when the entry is
force-terminated; this loop talks to the model and writes BFCL's log:

- per turn: the turn's user messages (a held-out turn of ``multi_turn_miss_func`` gets
  BFCL's "I have updated some more functions..." message and, in FC mode, the new tools;
  in prompting mode the new docs in the message), then steps of *model call -> decode ->
  run -> results back* until a step decodes to no call or does not decode;
- a turn's 21st step that ran calls force-terminates the entry (BFCL's step limit of 20);
- the result line holds what BFCL's holds: ``result`` (per turn, per step, the raw
  model output), token counts, latencies and the ``inference_log`` (state of the
  stateful backends before the first turn and after each turn, and per step the
  assistant output, the decoding, the tool results);
- an exception while playing (an API error after the retries, a reply without the
  fields BFCL reads) makes the whole line ``"Error during inference: {error}"``, as BFCL
  writes it; BFCL's traceback field holds the exception's type and text instead of a
  traceback;
- the answer's fields that reach the result line are checked to be of the types BFCL
  writes (token counts ints, tool-call names, arguments and ids strings, text a string):
  anything else ends the entry the same way, saying which field (``InferenceError``).

Every entry runs under its own :class:`~bfcl_safe.interp.budget.Budget`, which the
episode's steps share: everything an answer adds to the chat (:func:`answer_size`) and
its tool calls are charged to it, as is the steps' work; a budget exceeded ends the
entry the same way (its error text names the budget).
"""

from __future__ import annotations

import copy
import json
from typing import Any, Callable, Mapping, Protocol

import attrs

from bfcl_safe.checker import openai_format
from bfcl_safe.checker.boundary import EntryBoundary
from bfcl_safe.checker.decoders import DECODERS
from bfcl_safe.checker.episode import MAXIMUM_STEP_LIMIT
from bfcl_safe.checker.play import Episode, StepResult, TurnEnd
from bfcl_safe.checker.system_prompt import system_prompt, with_system_prompt
from bfcl_safe.generate.decode_errors import fc_decode_error, prompting_decode_error
from bfcl_safe.generate.result_writer import inference_error_line
from bfcl_safe.interp import budget as budgets
from bfcl_safe.interp.errors import BfclSafeError, BudgetExceeded

MODES = ("fc", "prompting")

#: Backends whose state BFCL leaves out of the inference log (``STATELESS_CLASSES``).
STATELESS_CLASSES = frozenset({"MathAPI"})

#: Fields of a result line whose values depend on the clock or the machine, not on
#: the conversation: compare result files without them.
VOLATILE_FIELDS = ("latency", "traceback")

#: Log texts of BFCL's handler (the inference log's ``handler_log`` entries).
DECODED = "Successfully decoded model response."
EMPTY = "Empty response from the model. Proceed to next turn."
UNDECODABLE = "Error decoding the model response. Proceed to next turn."
FORCE_QUIT = f"Model has been forced to quit after {MAXIMUM_STEP_LIMIT} steps."

#: Characters of one model reply (its text, or its calls' names and arguments) counted
#: against the entry's budget before it is decoded (``interp/limits.py``).
REPLY_BUDGET = "generate_reply_characters"
#: Tool calls the answers add to the chat, counted against the entry's budget.
TOOL_CALL_BUDGET = "generate_tool_calls"
#: Characters of the ``--include-input-log`` records an entry keeps (the chat as sent,
#: at every step, with the tools), counted as each is made.
INPUT_LOG_BUDGET = "generate_input_log_characters"


@attrs.frozen
class ModelSpec:
    """The model as BFCL's handler knows it."""

    #: The name sent to the endpoint (BFCL's ``model_name``).
    api_name: str
    #: ``"fc"`` or ``"prompting"``.
    mode: str
    temperature: float = 0.001

    @property
    def owner(self) -> str:
        """BFCL's ``model_name_underline_replaced``: the prefix of its backend instances'
        names (it decides the rewrite of instance names inside string arguments)."""
        return self.api_name.replace("/", "_").replace("-", "_").replace(".", "_")


class Completion(Protocol):
    """What :func:`play_entry` needs from a client (a protocol: :class:`~bfcl_safe.generate.client.ChatClient`,
    or any object with the method): ``complete(messages, tools)`` returning ``(response, seconds)``,
    the response an OpenAI SDK ``ChatCompletion`` (or an object with the same attributes)."""

    def complete(self, messages: list, tools: list | None) -> tuple[Any, float]: ...


def serializable(value: Any) -> Any:
    """``value`` as BFCL writes it into a result line (``make_json_serializable``):
    dicts and lists item by item, anything ``json.dumps`` takes as it is, anything else
    its ``str()``."""
    if isinstance(value, dict):
        return {key: serializable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [serializable(item) for item in value]
    try:
        json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return str(value)
    return value


def _state_log(instances: Mapping[str, Any]) -> list[dict]:
    out = []
    for class_name, instance in instances.items():
        if class_name in STATELESS_CLASSES:
            continue
        out.append({"role": "state_info", "class_name": class_name,
                    "content": serializable(dict(instance.public_state()))})
    return out


# --------------------------------------------------------------------------- the answer's fields


class InferenceError(BfclSafeError, RuntimeError):
    """An entry's play cannot go on (an answer with a field of the wrong type, a step
    bfcl-safe could not run); the message is the result line's reason."""


def _type_name(value: Any) -> str:
    """``value``'s kind as a result line's reason says it: ``null``, ``an int``, ``a dict``."""
    if value is None:
        return "null"
    name = {"str": "string", "dict": "JSON object", "list": "JSON array"}.get(type(value).__name__,
                                                                              type(value).__name__)
    return ("an " if name[0] in "aeiou" else "a ") + name


def _token_count(usage: Any, name: str) -> Any:
    """``usage.name`` as BFCL reads it (the same exception when it cannot), then checked to
    be what BFCL writes: an int (or null)."""
    value = getattr(usage, name)
    if value is not None and (type(value) is not int or not -(2 ** 63) <= value < 2 ** 63):
        raise InferenceError(f"the answer's usage.{name} is {_type_name(value)}, not an int")
    return value


def _checked_step(step: Any, call_ids: list[Any], fc: bool) -> None:
    """The step and ids BFCL copies into the result line and the chat: tool-call names
    and argument texts strings, ids strings (or null), text a string (or null)."""
    if fc and isinstance(step, list):
        for index, call in enumerate(step):
            for name, arguments in call.items():
                if type(name) is not str:
                    raise InferenceError(f"the answer's tool call {index} has a name that is "
                                         f"{_type_name(name)}, not a string")
                if type(arguments) is not str:
                    raise InferenceError(f"the answer's tool call {index} has arguments that are "
                                         f"{_type_name(arguments)}, not a string")
        for index, call_id in enumerate(call_ids):
            if call_id is not None and type(call_id) is not str:
                raise InferenceError(f"the answer's tool call {index} has an id that is "
                                     f"{_type_name(call_id)}, not a string")
        budgets.charge(TOOL_CALL_BUDGET, len(step))
    elif step is not None and type(step) is not str:
        raise InferenceError(f"the answer's content is {_type_name(step)}, not a string")


def _fields(value: Any) -> list[Any]:
    """The values an answer's object holds (an SDK model's fields and extra fields, a
    dict's keys and values, a list's items)."""
    if isinstance(value, Mapping):
        return [*value.keys(), *value.values()]
    if isinstance(value, (list, tuple)):
        return list(value)
    out = list(getattr(value, "__dict__", {}).values())
    extra = getattr(value, "__pydantic_extra__", None)
    if isinstance(extra, dict):
        out.extend(extra.values())
    return out


def answer_size(message: Any) -> int:
    """What an assistant message adds to the chat that is re-sent with every later
    request: the characters of every string in it (content, reasoning and any other
    field, tool-call ids, names and arguments), plus one per value. Iterative; each
    object counted once."""
    size = 0
    seen: set[int] = set()
    stack = [message]
    while stack:
        item = stack.pop()
        size += 1
        if isinstance(item, str):
            size += len(item)
        elif item is None or isinstance(item, (bool, int, float)):
            continue
        elif id(item) not in seen:
            seen.add(id(item))
            stack.extend(_fields(item))
    return size


def play_entry(
    entry: Mapping[str, Any],
    prompt: Mapping[str, Any],
    model: ModelSpec,
    client: Completion,
    *,
    templates: Mapping[str, Any] | None = None,
    long_context_data: Callable[[], Mapping[str, Any]] | None = None,
    exclude_state_log: bool = False,
    include_input_log: bool = False,
) -> dict:
    """Play one entry; return its result line (a dict: ``id``, ``result``, metadata).

    ``entry`` is the question-file line, ``prompt`` :meth:`Dataset.prompt_entry` of it,
    ``templates`` the wheel's prompt templates (prompting mode).
    """
    if model.mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, not {model.mode!r}")
    # The one per-entry fault boundary (checker/boundary.py); what escapes becomes BFCL's
    # inference-error line for this entry, as the reference writes it, and the run goes on.
    boundary = EntryBoundary("play this entry", budget=budgets.Budget())
    with boundary:
        result, metadata = _play(entry, prompt, model, client, templates, long_context_data, exclude_state_log,
                                 include_input_log, budget=boundary.budget)
    exc = boundary.exception
    if exc is not None:
        return inference_error_line(entry["id"], exc)
    return {"id": entry["id"], "result": result, **metadata}


def _display(step: Any, decoder: str) -> list[str]:
    """The call texts BFCL's log shows for a step that ran no call (``[]`` or ``[""]``)."""
    try:
        return list(DECODERS[decoder][1](step))
    except BudgetExceeded:
        raise
    except Exception:  # noqa: BLE001 - shown text only: an empty step shows nothing
        return []


def _abort_reason(episode: Episode) -> Exception:
    """The exception that ends an entry whose episode aborted (budget, internal error)."""
    verdict = episode.check_turn()
    details = verdict.details or {}
    if {"budget", "limit", "spent"} <= set(details):
        return BudgetExceeded(details["budget"], details["limit"], details["spent"])
    message = verdict.error_message
    text = "; ".join(map(str, message)) if isinstance(message, list) else str(message)
    return InferenceError(text)


def play_step(episode: Episode, step: Any, decoder: str) -> tuple[StepResult, list[dict]]:
    """Run one model ``step`` (as the result line holds it) on the episode; its result and
    the handler-log entries BFCL writes for it: the decoded call texts (and, for a step
    with no call, the empty-response note), or BFCL's decoding-error text. An episode
    that aborts (a budget, a step bfcl-safe could not run) raises the entry's error."""
    result = episode.step(step, decoder=decoder)
    if result.ended in (TurnEnd.RESOURCE_LIMIT, TurnEnd.INTERNAL_ERROR):
        raise _abort_reason(episode)
    if result.ended is TurnEnd.UNDECODABLE:
        reason = fc_decode_error(step) if decoder == "fc" else prompting_decode_error(step)
        return result, [{"role": "handler_log", "content": UNDECODABLE,
                         "error": reason if reason is not None else result.decode_error}]
    if result.ended is TurnEnd.NO_CALLS:
        texts = _display(step, decoder)
        return result, [{"role": "handler_log", "content": DECODED, "model_response_decoded": texts},
                        {"role": "handler_log", "content": EMPTY, "model_response_decoded": texts}]
    texts = [call.call for call in result.calls]
    return result, [{"role": "handler_log", "content": DECODED, "model_response_decoded": texts}]


def _play(entry: Mapping[str, Any], prompt: Mapping[str, Any], model: ModelSpec, client: Completion,
          templates: Mapping[str, Any] | None, long_context_data: Callable[[], Mapping[str, Any]] | None,
          exclude_state_log: bool, include_input_log: bool = False, *, budget: budgets.Budget) -> tuple[list, dict]:
    """BFCL's inference loop on the play API's core: the :class:`Episode` decides when a
    turn ends (no call, undecodable) and when the entry is force-terminated (the step
    limit); this loop talks to the model and writes BFCL's log."""
    fc = model.mode == "fc"
    decoder = "fc" if fc else "prompting"
    episode = Episode.for_inference(entry, prompt, owner=model.owner, long_context_data=long_context_data)
    episode.budget = budget  # one budget per entry: the answers and the steps' work
    docs, _missed = openai_format.inference_docs(prompt)

    input_tokens: list[list] = []
    output_tokens: list[list] = []
    latencies: list[list] = []
    responses: list[list] = []
    log: list = []

    if not exclude_state_log:
        state = _state_log(episode.instances)
        if state:
            log.append(state)

    messages: list = []
    if not fc and templates is None:
        raise ValueError("prompting mode needs the prompt templates")

    while True:
        turn = episode.turn
        turn_messages = episode.messages(mode=decoder)
        if turn == 0 and not fc and templates is not None:  # (not fc: templates were checked above)
            turn_messages = with_system_prompt(turn_messages, system_prompt(templates, docs))
        tools = episode.tools(format="openai") if fc else None
        tools_chars: int | None = None  # (their JSON's length, once a turn, for the input log)
        messages.extend(copy.deepcopy(turn_messages))
        turn_log: dict = {"begin_of_turn_query": turn_messages}
        turn_responses: list = []
        turn_in: list = []
        turn_out: list = []
        turn_latency: list = []
        count = 0
        while not episode.turn_over:
            step_log: list = []
            turn_log[f"step_{count}"] = step_log
            response, latency = client.complete(messages, tools if tools else None)
            if include_input_log:
                # BFCL's --include-input-log: what was sent, as its handler records it (the
                # repr of the message list; in FC mode with the tools). The whole chat at
                # every step: charged, so that an entry's log stays within what a result
                # line may hold, instead of growing with the square of its steps.
                sent_text = repr(messages)
                if fc and tools_chars is None:
                    tools_chars = len(json.dumps(tools))
                budgets.charge(INPUT_LOG_BUDGET, len(sent_text) + (tools_chars or 0))
                sent = {"message": sent_text, "tools": tools} if fc else {"message": sent_text}
                step_log.append({"role": "inference_input", "content": sent})
            message = response.choices[0].message
            if fc:
                step, call_ids = openai_format.reply_step(message)
            else:
                step, call_ids = message.content, []
            messages.append(message)
            turn_in.append(_token_count(response.usage, "prompt_tokens"))
            turn_out.append(_token_count(response.usage, "completion_tokens"))
            _checked_step(step, call_ids, fc)
            budgets.charge(REPLY_BUDGET, answer_size(message))
            turn_latency.append(latency)
            turn_responses.append(step)
            step_log.append({"role": "assistant", "content": step})

            result, handler_log = play_step(episode, step, decoder)
            step_log.extend(handler_log)
            if result.ended in (TurnEnd.UNDECODABLE, TurnEnd.NO_CALLS):
                break
            if fc:
                messages.extend(openai_format.tool_messages(result.results, call_ids))
            else:
                messages.extend(result.messages)
            for call in result.calls:
                step_log.append({"role": "tool", "content": call.result})
            count += 1
            if result.ended is TurnEnd.STEP_LIMIT:
                step_log.append({"role": "handler_log", "content": FORCE_QUIT})

        responses.append(turn_responses)
        log.append(turn_log)
        input_tokens.append(turn_in)
        output_tokens.append(turn_out)
        latencies.append(turn_latency)
        if not exclude_state_log:
            state = _state_log(episode.instances)
            if state:
                log.append(state)
        if episode.force_terminated or not episode.next_turn():
            break

    metadata = {
        "input_token_count": input_tokens,
        "output_token_count": output_tokens,
        "latency": latencies,
        "inference_log": log,
    }
    return serializable(responses), serializable(metadata)
