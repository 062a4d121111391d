"""One entry played against a model, as BFCL's OpenAI-compatible handler plays it.

:func:`play_entry` is BFCL's multi-turn inference loop (``inference_multi_turn_FC`` and
``inference_multi_turn_prompting`` with ``OpenAICompletionsHandler``'s message handling)
with the model's calls run by bfcl-safe's interpreter on the entry's own backends
(``checker.episode.Side``: per-entry backends and method table), never by ``eval``:

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
  traceback.

Every entry runs under its own :class:`~bfcl_safe.interp.budget.Budget`: a budget
exceeded ends the entry the same way (its error text names the budget).
"""

from __future__ import annotations

import copy
import json
from typing import Any, Callable, Mapping, Sequence

import attrs

from bfcl_safe.checker import openai_format
from bfcl_safe.checker.contract import category_of
from bfcl_safe.checker.decoders import DECODERS, DecodeError, decode_step
from bfcl_safe.checker.episode import MAXIMUM_STEP_LIMIT, Side
from bfcl_safe.generate.prompting import fc_decode_error, prompting_decode_error, system_prompt, with_system_prompt
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


class Completion:
    """What :func:`play_entry` needs from a client: ``complete(messages, tools)``
    returning ``(response, seconds)``, the response an OpenAI SDK
    ``ChatCompletion`` (or an object with the same attributes)."""

    def complete(self, messages: list, tools: list | None) -> tuple[Any, float]:  # pragma: no cover - interface
        raise NotImplementedError


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


def _state_log(episode: Side) -> list[dict]:
    out = []
    for class_name, instance in episode.instances.items():
        if class_name in STATELESS_CLASSES:
            continue
        out.append({"role": "state_info", "class_name": class_name,
                    "content": serializable(dict(instance.public_state()))})
    return out


def _reply_size(step: Any) -> int:
    if isinstance(step, str):
        return len(step)
    if isinstance(step, list):
        return sum(len(str(name)) + len(arguments if isinstance(arguments, str) else str(arguments))
                   for call in step if isinstance(call, dict) for name, arguments in call.items())
    return 0


def decode_reply(step: Any, mode: str) -> tuple[list[str], list[Any]] | str:
    """``(texts, calls)`` of a model step as BFCL decodes it (``texts`` the call texts
    its log shows), or the text of BFCL's decoding error."""
    decoder = "fc" if mode == "fc" else "prompting"
    try:
        texts = DECODERS[decoder][1](step)
        calls = decode_step(step, decoder)
    except BudgetExceeded:
        raise  # the entry's budget, not the step's decoding: it ends the entry
    except (DecodeError, BfclSafeError, ValueError, TypeError, AttributeError, KeyError, IndexError,
            RecursionError) as exc:
        reason = fc_decode_error(step) if mode == "fc" else prompting_decode_error(step)
        return reason if reason is not None else str(exc)
    return list(texts), list(calls)


def _is_empty(texts: Sequence[str]) -> bool:
    """BFCL's ``is_empty_execute_response``."""
    return len(texts) == 0 or (len(texts) == 1 and len(texts[0]) == 0)


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
    budget = budgets.Budget()
    try:
        with budget.active():
            result, metadata = _play(entry, prompt, model, client, templates, long_context_data, exclude_state_log,
                                     include_input_log)
    except Exception as exc:  # noqa: BLE001 - BFCL's per-entry boundary: the error becomes the result
        return {"id": entry["id"], "result": f"Error during inference: {exc}",
                "traceback": f"{type(exc).__module__}.{type(exc).__qualname__}: {exc}"}
    return {"id": entry["id"], "result": result, **metadata}


def _play(entry, prompt, model, client, templates, long_context_data, exclude_state_log,
          include_input_log=False) -> tuple[list, dict]:
    entry_id = entry["id"]
    category = category_of(entry_id)
    fc = model.mode == "fc"
    long_context = "long_context" in category or "composite" in category
    episode = Side.create(entry, owner=model.owner, long_context=long_context,
                             long_context_data=long_context_data)
    docs, missed = openai_format.inference_docs(prompt)
    questions = [list(turn) for turn in copy.deepcopy(entry["question"])]

    input_tokens: list[list] = []
    output_tokens: list[list] = []
    latencies: list[list] = []
    responses: list[list] = []
    log: list = []
    force_quit = False

    if not exclude_state_log:
        state = _state_log(episode)
        if state:
            log.append(state)

    messages: list = []
    tools = openai_format.openai_tools(docs) if fc else None
    if not fc:
        if templates is None:
            raise ValueError("prompting mode needs the prompt templates")
        questions[0] = with_system_prompt(questions[0], system_prompt(templates, docs))

    for turn, turn_messages in enumerate(questions):
        if turn in missed:
            if fc:
                tools = openai_format.openai_tools(openai_format.docs_at_turn(docs, missed, turn))
            turn_messages = openai_format.turn_messages(prompt, turn, "fc" if fc else "prompting")
        messages.extend(copy.deepcopy(turn_messages))
        turn_log: dict = {"begin_of_turn_query": turn_messages}
        turn_responses: list = []
        turn_in: list = []
        turn_out: list = []
        turn_latency: list = []
        count = 0
        while True:
            step_log: list = []
            turn_log[f"step_{count}"] = step_log
            response, latency = client.complete(messages, tools if fc and len(tools) > 0 else None)
            if include_input_log:
                # BFCL's --include-input-log: what was sent, as its handler records it (the
                # repr of the message list; in FC mode with the tools).
                sent = {"message": repr(messages), "tools": tools} if fc else {"message": repr(messages)}
                step_log.append({"role": "inference_input", "content": sent})
            message = response.choices[0].message
            if fc:
                step, call_ids = openai_format.reply_step(message)
            else:
                step, call_ids = message.content, []
            messages.append(message)
            turn_in.append(response.usage.prompt_tokens)
            turn_out.append(response.usage.completion_tokens)
            turn_latency.append(latency)
            turn_responses.append(step)
            step_log.append({"role": "assistant", "content": step})

            budgets.charge(REPLY_BUDGET, _reply_size(step))
            decoded = decode_reply(step, model.mode)
            if isinstance(decoded, str):
                step_log.append({"role": "handler_log", "content": UNDECODABLE, "error": decoded})
                break
            texts, calls = decoded
            step_log.append({"role": "handler_log", "content": DECODED, "model_response_decoded": texts})
            if _is_empty(texts):
                step_log.append({"role": "handler_log", "content": EMPTY, "model_response_decoded": texts})
                break

            results = episode.run(calls)
            if fc:
                messages.extend(openai_format.tool_messages(results, call_ids))
            else:
                messages.append(openai_format.prompting_results_message(results, texts))
            for result in results:
                step_log.append({"role": "tool", "content": result})
            count += 1
            if count > MAXIMUM_STEP_LIMIT:
                force_quit = True
                step_log.append({"role": "handler_log", "content": FORCE_QUIT})
                break

        responses.append(turn_responses)
        log.append(turn_log)
        input_tokens.append(turn_in)
        output_tokens.append(turn_out)
        latencies.append(turn_latency)
        if not exclude_state_log:
            state = _state_log(episode)
            if state:
                log.append(state)
        if force_quit:
            break

    metadata = {
        "input_token_count": input_tokens,
        "output_token_count": output_tokens,
        "latency": latencies,
        "inference_log": log,
    }
    return serializable(responses), serializable(metadata)
