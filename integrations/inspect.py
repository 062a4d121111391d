"""BFCL multi-turn as an Inspect AI task (``pip install 'bfcl-safe[inspect]'``).

::

    inspect eval bfcl_safe/integrations/inspect.py@bfcl_multi_turn --model openai/gpt-4o-mini

    # or from Python
    from inspect_ai import eval
    from bfcl_safe.integrations.inspect import bfcl_multi_turn
    eval(bfcl_multi_turn(categories=["multi_turn_base"]), model="openai/gpt-4o-mini")

:func:`bfcl_multi_turn` is a ``@task`` over the four multi-turn categories (one sample per
entry, id = the entry's id; the solver reads the entry id from ``metadata["entry_id"]``,
so samples of your own may repeat an entry). Its solver (:func:`bfcl_solver`) plays the
entry as BFCL's FC inference does, through
:class:`~bfcl_safe.integrations.session.Conversation`:

- at each turn the model is offered the OpenAI tools BFCL sends then, as Inspect
  ``ToolInfo`` (schemas only: Inspect never runs them; the calls run on the entry's
  simulated backends, never as code). ``ToolInfo`` has no place for the ``response`` key
  BFCL's converter keeps: it is left out;
- each model reply is one step; its calls' results come back as ``tool`` messages; a reply
  without tool calls ends the turn and the next turn's user messages follow. A tool call
  whose arguments Inspect could not parse (``parse_error``), or parsed into what JSON
  cannot hold (its YAML fallback makes a bare ``2024-01-01`` a ``date``, ``!!set {a, b}`` a
  ``set``), is given to the episode as undecodable arguments, so that, as in BFCL, the
  step does not decode and the turn ends; the sample and the evaluation go on;
- the sample ends where BFCL ends the entry: after the last turn, or at the 21st step
  with calls of a turn (force-termination; ``message_limit`` should stay unset).

The scorer (:func:`bfcl_scorer`) gives the official verdict: ``value`` 1/0 (``CORRECT`` /
``INCORRECT`` in the log's terms), ``answer`` the error type or ``"valid"``, ``metadata``
``{"valid", "error_type", "turns_passed", "first_failing_turn", "turns",
"force_terminated", "steps", "result"}`` — ``result`` being the BFCL result-file steps, which
``bfcl-safe evaluate`` scores to the same verdict. With ``partial_credit=True`` the value is
``evaluate --partial-credit``'s count instead (``turns_passed / turns`` when failed).
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from bfcl_safe.integrations import MissingExtra

try:
    from inspect_ai import Task, task
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import ChatMessage, ChatMessageSystem, ChatMessageTool, ChatMessageUser, get_model
    from inspect_ai.scorer import Score, Target, mean, scorer
    from inspect_ai.solver import Generate, TaskState, solver
    from inspect_ai.tool import ToolInfo, ToolParams
except ImportError:  # pragma: no cover - only without the extra
    raise MissingExtra("inspect", "inspect-ai") from None

from bfcl_safe.checker.dataset import Dataset
from bfcl_safe.checker.openai_format import turn_messages
from bfcl_safe.integrations.session import Conversation, assistant_message, chosen_categories, selected_entries

#: The store key where the solver leaves the outcome for the scorer (plain data).
STORE_KEY = "bfcl_safe"


def tool_infos(openai_tools: Iterable[dict]) -> list[ToolInfo]:
    """OpenAI Chat Completions tools as Inspect ``ToolInfo`` (name, description, parameters)."""
    return [ToolInfo(name=tool["function"]["name"], description=tool["function"].get("description", ""),
                     parameters=ToolParams.model_validate(tool["function"].get("parameters") or {}))
            for tool in openai_tools]


def arguments_text(call: Any) -> str:
    """The JSON text of an Inspect ``ToolCall``'s arguments, or ``""`` — arguments that do
    not decode, so that the step does not decode and the turn ends, as in BFCL — when
    Inspect could not parse them (``parse_error``) or parsed them into what JSON cannot
    hold: its YAML fallback turns a bare ``2024-01-01`` into a ``date`` and ``!!set {a, b}``
    into a ``set`` (as BFCL sees it, text that is not a JSON object)."""
    if call.parse_error is not None:
        return ""
    try:
        return json.dumps(call.arguments)
    except (TypeError, ValueError, RecursionError):  # a date, a set, bytes, an int past str()'s limit, ...
        return ""


def openai_message(message: Any) -> dict:
    """An Inspect ``ChatMessageAssistant`` as the OpenAI chat message BFCL's handler reads."""
    calls = message.tool_calls
    tool_calls = None
    if calls is not None:
        tool_calls = [{"id": call.id, "name": call.function, "arguments": arguments_text(call)} for call in calls]
    return assistant_message(message.text, tool_calls)


def samples(dataset: Dataset, categories: Iterable[str], ids: Iterable[str] | None = None) -> list[Sample]:
    out = []
    for category, entry in selected_entries(dataset, categories, ids):
        messages: list[ChatMessage] = [
            (ChatMessageSystem if m["role"] == "system" else ChatMessageUser)(content=m["content"])
            for m in turn_messages(dataset.prompt_entry(entry["id"]), 0)]
        out.append(Sample(input=messages, id=entry["id"], metadata={"entry_id": entry["id"], "category": category}))
    return out


def _tool_message(message: dict, calls: dict[str, str]) -> ChatMessageTool:
    return ChatMessageTool(content=message["content"], tool_call_id=message["tool_call_id"],
                           function=calls.get(message["tool_call_id"]))


@solver
def bfcl_solver(dataset: Dataset, owner: str | None = None):
    """Plays the sample's entry (see the module docstring)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        entry_id = state.metadata.get("entry_id", state.sample_id)
        conversation = Conversation.from_entry(str(entry_id), dataset, owner=owner)
        model = get_model()
        offered: list[dict] | None = None  # the episode's tools list (the same object until it changes)
        infos: list[ToolInfo] = []
        while not conversation.done:
            tools = conversation.episode.tools(format="openai", shared=True)
            if tools is not offered:
                offered, infos = tools, tool_infos(tools)
            output = await model.generate(state.messages, tools=infos)
            reply = output.message
            state.messages.append(reply)
            names = {call.id: call.function for call in reply.tool_calls or ()}
            for message in conversation.reply(openai_message(reply)):
                if message["role"] == "tool":
                    state.messages.append(_tool_message(message, names))
                else:
                    state.messages.append(ChatMessageUser(content=message["content"]))
        state.store.set(STORE_KEY, {**conversation.summary(), "result": conversation.result()})
        return state

    return solve


@scorer(metrics=[mean()])
def bfcl_scorer(partial_credit: bool = False):
    """The official verdict of the steps the solver played (see the module docstring)."""

    async def score(state: TaskState, target: Target) -> Score:
        outcome = state.store.get(STORE_KEY)
        if outcome is None:
            return Score(value=0, answer="not played", explanation="the bfcl_safe solver did not run")
        if outcome["valid"]:
            value = 1.0
        elif partial_credit:
            value = outcome["turns_passed"] / outcome["turns"]
        else:
            value = 0.0
        answer = "valid" if outcome["valid"] else outcome["error_type"]
        return Score(value=value, answer=answer, metadata=dict(outcome),
                     explanation=f"{outcome['turns_passed']}/{outcome['turns']} turns passed")

    return score


@task
def bfcl_multi_turn(categories: list[str] | str | None = None, ids: list[str] | None = None,
                    data: str | None = None, owner: str | None = None, partial_credit: bool = False,
                    dataset: Dataset | None = None) -> Task:
    """BFCL multi-turn entries of ``categories`` (default: all four; ``ids`` narrows down).
    ``data``: a bfcl-eval wheel or folder (default: the cache); ``owner``: the model folder
    name ``bfcl-safe evaluate`` would score the results under (None: neutral names)."""
    categories = chosen_categories(categories)
    dataset = dataset if dataset is not None else Dataset.open(data)
    table = samples(dataset, categories, ids)
    if not table:
        raise ValueError("no entries selected (check categories and ids)")
    return Task(dataset=MemoryDataset(table, name="bfcl_multi_turn"), solver=bfcl_solver(dataset, owner),
                scorer=bfcl_scorer(partial_credit))


__all__ = ["STORE_KEY", "arguments_text", "bfcl_multi_turn", "bfcl_scorer", "bfcl_solver", "openai_message", "samples",
           "tool_infos"]
