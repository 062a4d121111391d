"""One BFCL multi-turn entry played as an OpenAI chat: the layer every adapter shares.

A :class:`Conversation` wraps a play-API :class:`~bfcl_safe.checker.play.Episode` and
speaks chat messages only, the way BFCL's FC inference does:

- :meth:`Conversation.opening` — the first turn's user messages; :meth:`Conversation.tools`
  — the OpenAI ``tools`` list BFCL sends at the current turn (held-out docs of
  ``multi_turn_miss_func`` appear when their turn starts);
- :meth:`Conversation.reply` takes the model's assistant message (OpenAI shape: a dict with
  ``content`` and optionally ``tool_calls``, or an SDK object) and returns what the chat
  gets next: the ``tool`` messages of the calls that ran, and when the reply ended the turn
  (no tool calls, an undecodable reply) the next turn's user messages. BFCL's 20-step limit
  and its force-termination end the episode where BFCL ends it;
- :attr:`Conversation.done`, :meth:`Conversation.verdict` (the official verdict of the steps
  played: what ``bfcl-safe evaluate`` gives :meth:`Conversation.result`) and
  :meth:`Conversation.reward`.

Rewards (:meth:`Conversation.reward`):

- ``partial_credit=False`` — 1.0 when the official verdict passes, else 0.0;
- ``partial_credit=True`` — what ``evaluate --partial-credit`` counts for the entry: 1.0
  when it passes, else ``turns_passed / turns`` (the turns before the first failing one).

Nothing here imports a framework.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Mapping, Sequence

from bfcl_safe.checker.contract import MULTI_TURN_CATEGORIES
from bfcl_safe.checker.play import ArgumentError, Episode, TurnOutcome
from bfcl_safe.checker.verdict import Verdict


class Conversation:
    """An entry's episode driven by chat messages (see the module docstring)."""

    def __init__(self, episode: Episode):
        if not isinstance(episode, Episode):
            raise ArgumentError("episode", f"a Conversation plays an Episode, not a {type(episode).__name__}")
        self.episode = episode
        #: The outcome of each turn that ended (``TurnOutcome``: per-turn check and verdict).
        self.outcomes: list[TurnOutcome] = []
        #: Steps given to the episode (one per assistant message).
        self.steps = 0

    @classmethod
    def from_entry(cls, entry_id: str, dataset: Any, *, owner: str | None = None) -> "Conversation":
        """A conversation of ``entry_id``; ``owner`` as in :meth:`Episode.from_entry` (the
        model folder name ``evaluate`` would score the result under)."""
        return cls(Episode.from_entry(entry_id, dataset, owner=owner))

    @property
    def id(self) -> str:
        return self.episode.id

    @property
    def done(self) -> bool:
        return self.episode.done

    @property
    def turn(self) -> int:
        return self.episode.turn

    @property
    def turn_count(self) -> int:
        return self.episode.turn_count

    def opening(self) -> list[dict]:
        """The user messages of the first turn (call before any :meth:`reply`)."""
        return self.episode.messages(0)

    def tools(self, format: str = "openai") -> list[dict]:
        """The OpenAI ``tools`` list BFCL sends at the current turn: ``format`` ``"openai"``
        (Chat Completions) or ``"openai-responses"`` (a copy, see :meth:`Episode.tools`)."""
        if not isinstance(format, str) or format not in ("openai", "openai-responses"):
            shown = repr(format[:80]) if isinstance(format, str) else f"a {type(format).__name__}"
            raise ArgumentError("format", f"format must be 'openai' or 'openai-responses', not {shown}")
        return self.episode.tools(format=format)

    def reply(self, message: Any) -> list[dict]:
        """Play the model's reply: an assistant ``message`` (Chat Completions) or a
        Responses API answer (its ``output`` list, see :meth:`Episode.step`); the
        messages the chat gets next (``tool`` messages, or ``function_call_output``
        items for a Responses answer; ``[]`` when the reply ended the episode without
        running a call)."""
        step = self.episode.step(message)
        self.steps += 1
        out = [dict(item) for item in step.messages]
        if step.turn_over:
            self.outcomes.append(self.episode.end_turn())
            if not self.episode.done:
                out.extend(self.episode.messages())
        return out

    async def areply(self, message: Any) -> list[dict]:
        """:meth:`reply` for asyncio callers: the step and the turn's checks run in the play
        API's worker thread (:meth:`Episode.astep`), the event loop stays free."""
        step = await self.episode.astep(message)
        self.steps += 1
        out = [dict(item) for item in step.messages]
        if step.turn_over:
            self.outcomes.append(await self.episode.aend_turn())
            if not self.episode.done:
                out.extend(self.episode.messages())
        return out

    def verdict(self) -> Verdict:
        """The official verdict of the steps played so far (after the episode: the score
        file's verdict on :meth:`result`)."""
        return self.episode.check_turn()

    def reward(self, partial_credit: bool = False) -> float:
        """See the module docstring."""
        if not isinstance(partial_credit, bool):
            raise ArgumentError("partial_credit", f"partial_credit must be a bool, not {type(partial_credit).__name__}")
        verdict = self.verdict()
        if verdict.valid:
            return 1.0
        if not partial_credit:
            return 0.0
        return verdict.turns_passed / self.turn_count

    def result(self) -> list[list[Any]]:
        """The steps played, as a BFCL result file's ``result`` holds them."""
        return self.episode.result()

    def summary(self) -> dict:
        """Plain data about the outcome: ``valid``, ``error_type``, ``turns_passed``,
        ``first_failing_turn``, ``turns``, ``force_terminated``, ``steps``."""
        verdict = self.verdict()
        return {
            "id": self.id,
            "valid": verdict.valid,
            "error_type": None if verdict.error_type is None else verdict.error_type.value,
            "turns_passed": verdict.turns_passed,
            "first_failing_turn": verdict.failing_turn,
            "turns": self.turn_count,
            "force_terminated": self.episode.force_terminated,
            "steps": self.steps,
        }


def chosen_categories(categories: Sequence[str] | str | None) -> list[str]:
    """An adapter's ``categories`` argument as a list (a name, names, or None for all four);
    :class:`~bfcl_safe.checker.play.ArgumentError` (a ValueError) naming the unknown ones."""
    if categories is None:
        return list(MULTI_TURN_CATEGORIES)
    if isinstance(categories, str):
        categories = [categories]
    if not isinstance(categories, (list, tuple, set, frozenset)) or not all(isinstance(c, str) for c in categories):
        raise ArgumentError("categories", f"categories must be a category name or a list of them, "
                            f"not {type(categories).__name__}")
    chosen = list(categories) or list(MULTI_TURN_CATEGORIES)
    unknown = [c for c in chosen if c not in MULTI_TURN_CATEGORIES]
    if unknown:
        raise ArgumentError("categories", f"unknown categories {unknown}; expected some of "
                            f"{list(MULTI_TURN_CATEGORIES)}"[:300])
    return chosen


def selected_entries(dataset: Any, categories: Iterable[str],
                     ids: Iterable[str] | None = None) -> Iterator[tuple[str, dict]]:
    """``(category, entry)`` for the entries of ``categories``, only those in ``ids`` when given."""
    wanted = None if ids is None else set(ids)
    for category in categories:
        for entry in dataset.entries(category):
            if wanted is None or entry["id"] in wanted:
                yield category, entry


def assistant_message(content: Any, tool_calls: Sequence[Mapping[str, Any]] | None) -> dict:
    """An OpenAI assistant message: ``tool_calls`` items as ``{"id", "name", "arguments"}``
    (arguments the JSON text the model wrote); None — no ``tool_calls`` key, as a reply
    without calls comes back from the API."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = [{"id": call["id"], "type": "function",
                                  "function": {"name": call["name"], "arguments": call["arguments"]}}
                                 for call in tool_calls]
    return message


__all__ = ["Conversation", "assistant_message"]
