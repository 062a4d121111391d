"""BFCL multi-turn as a verifiers environment (``pip install 'bfcl-safe[verifiers]'``).

::

    from bfcl_safe.integrations.verifiers import load_environment

    env = load_environment(categories=["multi_turn_base"], partial_credit=False)
    results = env.evaluate_sync(client=vf_client, model="my-model")   # verifiers' own loop

:func:`load_environment` returns a :class:`BfclMultiTurnEnv`, a ``vf.MultiTurnEnv`` (the
verifiers environment API of ``verifiers>=0.3.1,<0.4``: 0.4 removed it). One rollout
plays one entry as BFCL's FC inference does, through
:class:`~bfcl_safe.integrations.session.Conversation`:

- the prompt is the first turn's user messages; the model gets, at every turn, the OpenAI
  tools BFCL sends then (``state["tool_defs"]`` is replaced when a turn starts, so
  ``multi_turn_miss_func`` shows its held-out tools from their turn on). verifiers'
  ``vf.Tool`` has no place for the ``response`` key BFCL's converter keeps: it is left out;
- each assistant message is one step: its tool calls run on the entry's simulated backends
  (never as code) and their results come back as ``tool`` messages; a reply without tool
  calls ends the turn and the next turn's user messages follow;
- the rollout ends where BFCL ends the entry: after the last turn, or when a turn exceeds
  BFCL's 20 steps with calls (force-termination). Leave ``max_turns`` at its default
  (-1, no limit of verifiers' own) to keep BFCL's limit the only one;
- the reward is the official verdict of the steps played (1.0/0.0: what ``bfcl-safe
  evaluate`` gives the rollout's result), or with ``partial_credit=True`` what
  ``evaluate --partial-credit`` counts (``turns_passed / turns`` for a failed entry).
  Metrics: ``turns_passed``, ``turns``, ``force_terminated``.

``state["bfcl"]`` holds the rollout's Conversation (``.result()`` gives the BFCL result
file's steps; ``.summary()`` the verdict as plain data). Episodes share nothing: rollouts
of one entry may run concurrently.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from bfcl_safe.integrations import MissingExtra

try:
    import verifiers as vf
    from datasets import Dataset as HFDataset
except ImportError:  # pragma: no cover - only without the extra
    raise MissingExtra("verifiers", "verifiers>=0.3.1,<0.4") from None

from bfcl_safe.checker.dataset import Dataset
from bfcl_safe.checker.openai_format import turn_messages
from bfcl_safe.integrations.session import Conversation, assistant_message, chosen_categories, selected_entries


def vf_tools(openai_tools: Iterable[dict]) -> list:
    """OpenAI Chat Completions tools as verifiers' ``vf.Tool`` (name, description, parameters)."""
    return [vf.Tool(name=tool["function"]["name"], description=tool["function"].get("description", ""),
                    parameters=tool["function"].get("parameters", {}))
            for tool in openai_tools]


def _text(content: Any) -> Any:
    """A message content as the chat API gives it: text parts joined (BFCL reads a str)."""
    if isinstance(content, list):
        return "".join(part.get("text", "") if isinstance(part, dict) else str(getattr(part, "text", ""))
                       for part in content)
    return content


def openai_message(message: Any) -> dict:
    """A verifiers assistant message (pydantic or dict) as the OpenAI chat message it came from."""
    get = message.get if isinstance(message, dict) else (lambda key, default=None: getattr(message, key, default))
    calls = get("tool_calls")
    tool_calls = None
    if calls is not None:
        tool_calls = []
        for call in calls:
            if isinstance(call, dict) and "function" in call:
                tool_calls.append({"id": call.get("id"), "name": call["function"]["name"],
                                   "arguments": call["function"]["arguments"]})
            else:
                call_get = call.get if isinstance(call, dict) else (lambda key, c=call: getattr(c, key, None))
                tool_calls.append({"id": call_get("id"), "name": call_get("name"), "arguments": call_get("arguments")})
    return assistant_message(_text(get("content")), tool_calls)


class BfclMultiTurnEnv(vf.MultiTurnEnv):
    """One BFCL multi-turn entry per rollout (see the module docstring)."""

    def __init__(self, bfcl_dataset: Dataset, *, owner: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.bfcl_dataset = bfcl_dataset
        self.owner = owner

    async def setup_state(self, state: Any) -> Any:
        info = state["info"]
        entry_id = info["id"] if isinstance(info, dict) else json.loads(info)["id"]
        conversation = Conversation.from_entry(entry_id, self.bfcl_dataset, owner=self.owner)
        state["bfcl"] = conversation
        state["tool_defs"] = vf_tools(conversation.tools())
        return state

    async def env_response(self, messages: Any, state: Any, **kwargs: Any) -> list:
        conversation: Conversation = state["bfcl"]
        out = [vf.ToolMessage(tool_call_id=m["tool_call_id"], content=m["content"]) if m["role"] == "tool"
               else vf.UserMessage(content=m["content"])
               for m in conversation.reply(openai_message(messages[-1]))]
        if conversation.done:
            state["final_env_response"] = out
        else:
            state["tool_defs"] = vf_tools(conversation.tools())
        return out


def _official(state: Any, **kwargs: Any) -> float:
    return state["bfcl"].reward(False)


def _partial(state: Any, **kwargs: Any) -> float:
    return state["bfcl"].reward(True)


def turns_passed(state: Any, **kwargs: Any) -> float:
    return float(state["bfcl"].verdict().turns_passed)


def turns(state: Any, **kwargs: Any) -> float:
    return float(state["bfcl"].turn_count)


def force_terminated(state: Any, **kwargs: Any) -> float:
    return 1.0 if state["bfcl"].episode.force_terminated else 0.0


_official.__name__ = "bfcl_verdict"
_partial.__name__ = "bfcl_partial_credit"


def rows(dataset: Dataset, categories: Iterable[str], ids: Iterable[str] | None = None) -> list[dict]:
    """One dataset row per entry: ``prompt`` (the first turn's user messages), ``info``
    (JSON text ``{"id": ...}``), ``answer`` (empty: the ground truth stays with bfcl-safe)."""
    out = []
    for _, entry in selected_entries(dataset, categories, ids):
        prompt = turn_messages(dataset.prompt_entry(entry["id"]), 0)
        out.append({"prompt": [{"role": m["role"], "content": m["content"]} for m in prompt],
                    "info": json.dumps({"id": entry["id"]}), "answer": ""})
    return out


def load_environment(
    categories: Iterable[str] | str | None = None,
    partial_credit: bool = False,
    *,
    ids: Iterable[str] | None = None,
    data: str | None = None,
    dataset: Dataset | None = None,
    owner: str | None = None,
    **kwargs: Any,
) -> BfclMultiTurnEnv:
    """A verifiers environment over the entries of ``categories`` (default: the four
    multi-turn categories; ``ids`` narrows them down).

    ``data``: a bfcl-eval wheel or folder for ``Dataset.open`` (default: the cache);
    ``dataset``: an open :class:`~bfcl_safe.checker.dataset.Dataset` instead. ``owner``: the
    model folder name ``bfcl-safe evaluate`` would score these results under (decides
    BFCL's instance-name rewrite inside string arguments; None: neutral names).
    ``partial_credit``: the reward (see the module docstring). Other keyword arguments go
    to ``vf.MultiTurnEnv`` (e.g. ``system_prompt``, ``max_concurrent``...).
    """
    categories = chosen_categories(categories)
    dataset = dataset if dataset is not None else Dataset.open(data)
    table = rows(dataset, categories, ids)
    if not table:
        raise ValueError("no entries selected (check categories and ids)")
    main = _partial if partial_credit else _official
    rubric = vf.Rubric(funcs=[main, turns_passed, turns, force_terminated], weights=[1.0, 0.0, 0.0, 0.0])
    return BfclMultiTurnEnv(dataset, owner=owner, eval_dataset=HFDataset.from_list(table), rubric=rubric, **kwargs)


__all__ = ["BfclMultiTurnEnv", "load_environment", "openai_message", "rows", "vf_tools"]
