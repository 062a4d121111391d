"""BFCL multi-turn as a verifiers environment (``pip install 'bfcl-safe[verifiers]'``).

Supported: ``verifiers>=0.4,<0.5`` (the ``verifiers.v1`` stack). 0.3's ``MultiTurnEnv`` is
not supported any more (0.4 removed it; use bfcl-safe 0.1's adapter with verifiers 0.3).

::

    import asyncio
    import verifiers.v1 as vf
    from bfcl_safe.integrations.verifiers import load_environment

    env = load_environment(categories=["multi_turn_base"], limit=20)
    ctx = vf.ModelContext(client=vf.EvalClientConfig(base_url="http://localhost:8000/v1",
                                                     api_key_var="OPENAI_API_KEY"), model="my-model")

    async def main():
        async with env.serving():                      # verifiers' own loop
            return [await env.run_episode(task, ctx) for task in env.taskset]

    episodes = asyncio.run(main())

or from the command line, with the environment package installed
(``environments/bfcl_multi_turn``): ``vf-eval bfcl_multi_turn -m MODEL --client.base-url URL``.

The pieces (a verifiers plugin: its id is :data:`PLUGIN_ID`, the module name the hub
package installs):

- :class:`BfclTaskset` — one :class:`BfclTask` per BFCL entry (config
  :class:`BfclTasksetConfig`: ``categories``, ``ids``, ``limit``, ``decoder``, ``data``,
  ``owner``, ``task.partial_credit``). The task's prompt is the first turn's user messages.
- :class:`BfclHarness` — the agent's program, run in-process: BFCL's FC inference loop.
  Every model call goes through verifiers' interception endpoint (so the trace records
  it); the request carries the OpenAI tools BFCL sends at the current turn
  (``multi_turn_miss_func``'s held-out tools appear from their turn on). Each assistant
  message is one step of the rollout's own :class:`~bfcl_safe.checker.play.Episode`
  (created per rollout, shared with nothing): its tool calls run on the entry's simulated
  backends (never as code) and their results go back as ``tool`` messages; a reply
  without tool calls (or one that does not decode) ends the turn, which ends the
  harness segment. BFCL's 20-step limit force-terminates the episode. With ``decoder``
  set (a model served without a tool-call parser, whose calls come back as text), the
  tools are sent the same way, the reply's text is decoded with that decoder (as
  ``bfcl-safe evaluate`` decodes such a model's result) and the results come back as one
  ``user`` message, as BFCL's prompting handlers send them. BFCL's prompting mode proper
  (its system prompt listing the tools, no tools in the request) is not offered here.
- :class:`BfclEnv` — ``run(task, agents)`` opens the agent's interaction, takes the
  opening segment, then sends the next turn's user messages with ``interaction.turn()``
  whenever a turn ended and the episode goes on.
- Rewards and metrics (:class:`BfclTask`): reward ``bfcl_verdict`` — 1.0 when the official
  verdict of the steps played is valid (what ``bfcl-safe evaluate`` gives the rollout's
  result), else 0.0; with ``task.partial_credit`` what ``evaluate --partial-credit``
  counts (``turns_passed / turns`` for a failed entry). Metrics: ``valid``,
  ``turns_passed``, ``turns``, ``turn_credit`` (``turns_passed / turns``),
  ``force_terminated``, ``steps``, ``refused``. ``trace.state`` (:class:`BfclState`) keeps
  ``summary`` (``valid``, ``error_type``, ``first_failing_turn``... as plain data) and
  ``result`` (the steps as a BFCL result file holds them).

Untrusted replies: the model's message reaches the episode as the plain JSON the
interception returns. A reply BFCL cannot read as tool calls (a call without a name or
``arguments``, a ``function`` that is not an object, an id that is not a string...) is
handled as BFCL's FC handler handles it: the step falls back to the reply's text, which
does not decode, and the turn ends. A reply the episode refuses outright (nested deeper
than :data:`~bfcl_safe.interp.limits.MAX_RESULT_LINE_DEPTH`) or an answer that is not a
chat completion ends the rollout failed (reward 0, metric ``refused`` 1, ``error_type``
``bfcl_safe:reply_refused``). What verifiers' own message types refuse (content parts
that are not text, ...) fails in verifiers, recorded as the trace's error.
"""

from __future__ import annotations

import sys
from typing import Any, Iterable, Iterator, Sequence

from bfcl_safe.integrations import MissingExtra

try:
    import httpx
    import verifiers.v1 as vf
    from verifiers.v1.errors import HarnessError
except ImportError as exc:  # pragma: no cover - only without the extra
    raise MissingExtra("verifiers", "verifiers>=0.4,<0.5", missing=exc.name) from None

from pydantic import Field

from bfcl_safe.checker.codec import deeper_than, loads_json
from bfcl_safe.checker.dataset import Dataset
from bfcl_safe.checker.play import Episode, EpisodeError
from bfcl_safe.integrations.session import Conversation, chosen_categories, selected_entries
from bfcl_safe.interp import limits

#: The plugin id (verifiers finds tasksets, envs and harnesses by module name).
PLUGIN_ID = "bfcl_multi_turn"
#: The error type of a rollout whose reply the episode refused (see the module docstring).
REPLY_REFUSED = "bfcl_safe:reply_refused"
#: The error type of a rollout that ended before its episode did (a verifiers limit,
#: timeout or failure): ``evaluate`` would not score its result as complete.
UNFINISHED = "bfcl_safe:unfinished"
#: Longest answer read from the interception endpoint (characters of JSON).
MAX_ANSWER_CHARS = 64 * 1024 * 1024


# --------------------------------------------------------------------------- data


class BfclData(vf.TaskData):
    """A task's wire data: the entry and how to play it."""

    entry_id: str
    category: str
    turns: int
    #: ``Dataset.open``'s argument (a bfcl-eval wheel or folder; None: the cache).
    data: str | None = None
    #: The model folder name ``evaluate`` would score the results under (None: neutral names).
    owner: str | None = None
    #: None: an FC model (OpenAI tool calls); else a decoder of ``checker.decoders.DECODERS``
    #: for a model that writes its calls as text.
    decoder: str | None = None


class BfclState(vf.State):
    """The rollout's state, on its trace: where the episode stands, and its outcome."""

    turn: int = 0
    turn_over: bool = False
    done: bool = False
    steps: int = 0
    #: The user messages of the next turn (what :class:`BfclEnv` sends with ``turn()``).
    next_messages: list[dict[str, Any]] = Field(default_factory=list)
    #: Set when the episode's reply was refused (see the module docstring).
    refused: str | None = None
    #: ``Conversation.summary()`` once the rollout's segments are over (plus ``error_type``
    #: :data:`REPLY_REFUSED` / :data:`UNFINISHED` where they apply).
    summary: dict[str, Any] | None = None
    #: The steps played, as a BFCL result file's ``result`` holds them.
    result: list[Any] | None = None


class BfclTaskConfig(vf.TaskConfig):
    #: The reward for a failed entry: 0.0, or ``turns_passed / turns`` (``evaluate --partial-credit``).
    partial_credit: bool = False


def _summary(trace: Any) -> dict[str, Any]:
    summary = trace.state.summary
    return summary if isinstance(summary, dict) else {"valid": False, "error_type": UNFINISHED,
                                                        "turns_passed": 0, "turns": 0,
                                                        "force_terminated": False, "steps": 0}


class BfclTask(vf.Task[BfclData, BfclState, BfclTaskConfig]):
    """One BFCL entry; scored by the official verdict of the steps its rollout played."""

    @property
    def key(self) -> str:
        return self.data.entry_id

    @vf.reward
    async def bfcl_verdict(self, trace: Any) -> float:
        summary = _summary(trace)
        if summary["valid"]:
            return 1.0
        if not self.config.partial_credit or not summary["turns"]:
            return 0.0
        return summary["turns_passed"] / summary["turns"]

    @vf.metric
    async def valid(self, trace: Any) -> float:
        return 1.0 if _summary(trace)["valid"] else 0.0

    @vf.metric
    async def turns_passed(self, trace: Any) -> float:
        return float(_summary(trace)["turns_passed"])

    @vf.metric
    async def turns(self, trace: Any) -> float:
        return float(self.data.turns)

    @vf.metric
    async def turn_credit(self, trace: Any) -> float:
        return _summary(trace)["turns_passed"] / self.data.turns

    @vf.metric
    async def force_terminated(self, trace: Any) -> float:
        return 1.0 if _summary(trace)["force_terminated"] else 0.0

    @vf.metric
    async def steps(self, trace: Any) -> float:
        return float(trace.state.steps)

    @vf.metric
    async def refused(self, trace: Any) -> float:
        return 0.0 if trace.state.refused is None else 1.0


class BfclTasksetConfig(vf.TasksetConfig):
    """Which entries, and how the model plays them (see :func:`load_environment`)."""

    id: str = PLUGIN_ID
    categories: list[str] | None = None
    ids: list[str] | None = None
    limit: int | None = Field(None, ge=1)
    decoder: str | None = None
    data: str | None = None
    owner: str | None = None
    task: BfclTaskConfig = BfclTaskConfig()


_DATASETS: dict[str | None, Dataset] = {}


def _dataset(data: str | None) -> Dataset:
    """The dataset at ``data``, opened once per process (read-only: episodes copy what they change)."""
    if data not in _DATASETS:
        _DATASETS[data] = Dataset.open(data)
    return _DATASETS[data]


def _check_decoder(decoder: str | None) -> None:
    from bfcl_safe.checker.decoders import DECODERS

    if decoder is not None and (not isinstance(decoder, str) or decoder not in DECODERS):
        raise ValueError(f"unknown decoder {decoder!r}"[:200] + f"; expected one of {sorted(DECODERS)}")


class BfclTaskset(vf.Taskset[BfclTask, BfclTasksetConfig]):
    """One task per selected BFCL multi-turn entry, in dataset order."""

    def load(self) -> Iterator[BfclTask]:
        config = self.config
        _check_decoder(config.decoder)
        dataset = _dataset(config.data)
        count = 0
        for category, entry in selected_entries(dataset, chosen_categories(config.categories), config.ids):
            if config.limit is not None and count >= config.limit:
                return
            episode = Episode.from_entry(entry["id"], dataset)
            yield BfclTask(BfclData(id=entry["id"], name=entry["id"], prompt=episode.messages(0),
                                    entry_id=entry["id"], category=category, turns=episode.turn_count,
                                    data=config.data, owner=config.owner, decoder=config.decoder),
                           config.task)
            count += 1


# --------------------------------------------------------------------------- the harness


class _Chat(Conversation):
    """A Conversation that also plays a model's tool calls written as text (``decoder`` set)."""

    def __init__(self, episode: Episode, decoder: str | None):
        super().__init__(episode)
        self.decoder = decoder

    def play(self, message: dict) -> tuple[list[dict], list[dict], bool]:
        """One assistant message as a step: ``(messages of its results, the next turn's
        user messages, whether the turn ended)``."""
        if self.decoder is None:
            step = self.episode.step(message)
        else:
            content = message.get("content")
            step = self.episode.step(content if isinstance(content, str) else "", decoder=self.decoder)
        self.steps += 1
        following: list[dict] = []
        if step.turn_over:
            self.outcomes.append(self.episode.end_turn())
            if not self.episode.done:
                following = self.episode.messages()
        return [dict(item) for item in step.messages], following, step.turn_over


def assistant_reply(answer: Any) -> dict:
    """The assistant message of a chat-completion answer (plain JSON) as the episode takes
    it; HarnessError when the answer is not a chat completion."""
    choices = answer.get("choices") if isinstance(answer, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict) \
            or not isinstance(choices[0].get("message"), dict):
        raise HarnessError("the interception's answer is not a chat completion with a message")
    message = dict(choices[0]["message"])
    message["role"] = "assistant"
    return message


class BfclHarnessConfig(vf.HarnessConfig):
    id: str = PLUGIN_ID
    #: Seconds for one model call through the interception (None: no limit).
    request_timeout: float | None = Field(None, gt=0)


class BfclSession(vf.HarnessSession):
    """One rollout's BFCL inference: its own episode and chat."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        data = self.trace.task.data
        decoder = getattr(data, "decoder", None)
        entry_id = getattr(data, "entry_id", None)
        if not isinstance(entry_id, str):
            raise HarnessError("the bfcl_multi_turn harness plays bfcl_multi_turn tasks only")
        _check_decoder(decoder)
        dataset = _dataset(getattr(data, "data", None))
        self.chat_state = _Chat(Episode.from_entry(entry_id, dataset, owner=getattr(data, "owner", None)), decoder)
        self.chat: list[dict] = []
        self.client = httpx.AsyncClient(timeout=httpx.Timeout(self.harness.config.request_timeout))

    @property
    def state(self) -> BfclState:
        return self.trace.state

    async def _run(self, messages: Any) -> vf.ProgramResult:
        chat, state = self.chat_state, self.state
        if messages is None:
            self.chat = chat.opening()
        else:
            self.chat.extend(m.model_dump(mode="json", exclude_none=True) if hasattr(m, "model_dump") else dict(m)
                             for m in messages)
        state.turn_over, state.next_messages = False, []
        while not chat.done and not state.turn_over:
            message = await self._ask()
            self.chat.append(message)
            try:
                results, following, turn_over = chat.play(message)
            except EpisodeError as exc:  # StepRefused/StepInputError: not a step the episode takes
                state.refused = str(exc)[:500]
                self.trace.stop("bfcl_reply_refused")
                break
            self.chat.extend(results)
            state.steps, state.turn_over, state.next_messages = chat.steps, turn_over, following
        state.turn = chat.turn
        state.done = chat.done or state.refused is not None
        if state.done:
            self._record()
        return vf.ProgramResult(exit_code=0, stdout="", stderr="")

    async def _ask(self) -> dict:
        body: dict[str, Any] = {"model": self.ctx.model, "messages": self.chat}
        tools = self.chat_state.tools()
        if tools:  # BFCL sends no tools key when none are visible
            body["tools"] = tools
        response = await self.client.post(f"{self.endpoint.rstrip('/')}/chat/completions", json=body,
                                          headers={"Authorization": f"Bearer {self.secret}"})
        if response.status_code != 200:
            raise HarnessError(f"model call failed: HTTP {response.status_code}: {response.text[:500]}")
        if len(response.content) > MAX_ANSWER_CHARS:
            raise HarnessError(f"model answer longer than {MAX_ANSWER_CHARS} bytes")
        text = response.text
        if deeper_than(text, limits.MAX_RESULT_LINE_DEPTH):
            raise HarnessError(f"model answer nested deeper than {limits.MAX_RESULT_LINE_DEPTH}")
        try:
            answer = loads_json(text)
        except (ValueError, RecursionError) as exc:
            raise HarnessError(f"model answer is not JSON ({type(exc).__name__})") from None
        return assistant_reply(answer)

    def _record(self) -> None:
        """The outcome onto the trace's state (once the episode is over, or at close)."""
        if self.state.summary is not None:
            return
        chat = self.chat_state
        summary = chat.summary()
        if self.state.refused is not None:
            summary.update(valid=False, error_type=REPLY_REFUSED)
        elif not chat.done:
            summary.update(valid=False, error_type=UNFINISHED)
        self.state.summary = summary
        self.state.result = chat.result()

    async def close(self) -> None:
        if not self._closed:
            self._record()
            await self.client.aclose()
        await super().close()


class BfclHarness(vf.Harness[BfclHarnessConfig]):
    """BFCL's FC inference loop, in-process (see the module docstring)."""

    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_RESUME = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def session(self, ctx: Any, trace: Any, runtime: Any, endpoint: str, secret: str,
                      mcp_urls: dict[str, str], data: Any, tool_interception_url: str | None = None) -> BfclSession:
        return BfclSession(self, ctx, trace, runtime, endpoint, secret, mcp_urls, data, tool_interception_url)

    async def launch(self, *args: Any, **kwargs: Any) -> vf.ProgramResult:
        raise HarnessError("the bfcl_multi_turn harness runs through session(), not launch()")


# --------------------------------------------------------------------------- the env


class BfclEnvConfig(vf.EnvConfig):
    #: The policy's seat: the harness is the taskset's own (``bfcl_multi_turn``), run in
    #: this process (a subprocess runtime: it starts no program).
    agent: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())
    taskset: BfclTasksetConfig = BfclTasksetConfig()


class BfclEnv(vf.Env[BfclEnvConfig]):
    """The agent plays the entry; the env sends each next turn's user messages."""

    async def run(self, task: Any, agents: Any) -> None:
        async with agents.agent.interaction(task) as interaction:
            segment = await interaction.turn()
            state = interaction.trace.state
            while not segment.terminated and not state.done and state.turn_over and state.next_messages:
                segment = await interaction.turn(list(state.next_messages))


def _register_plugin() -> None:
    """Make the plugin id importable when the hub package is not installed (verifiers
    imports tasksets, envs and harnesses by their id)."""
    sys.modules.setdefault(PLUGIN_ID, sys.modules[__name__])


def load_environment(
    categories: Sequence[str] | str | None = None,
    *,
    ids: Iterable[str] | None = None,
    limit: int | None = None,
    decoder: str | None = None,
    data: str | None = None,
    owner: str | None = None,
    partial_credit: bool = False,
    **env: Any,
) -> BfclEnv:
    """A verifiers environment over BFCL's multi-turn entries.

    ``categories``: a name or names of the four multi-turn categories (default: all four);
    ``ids``: only these entry ids; ``limit``: at most this many tasks (in dataset order);
    ``decoder``: None for an FC model (OpenAI tool calls), else a decoder of
    ``bfcl_safe.checker.decoders.DECODERS`` reading calls the model writes as text; ``data``: a
    bfcl-eval wheel or folder for ``Dataset.open`` (default: the cache); ``owner``: the
    model folder name ``bfcl-safe evaluate`` would score the results under (decides BFCL's
    instance-name rewrite inside string arguments; None: neutral names);
    ``partial_credit``: the reward of a failed entry (see the module docstring). Other
    keyword arguments are fields of the env's config (``max_concurrent_agents``,
    ``timeout``...). ValueError for unknown categories or decoders, or no entry selected.
    """
    _register_plugin()
    chosen = chosen_categories(categories)
    _check_decoder(decoder)
    taskset = BfclTasksetConfig(categories=chosen, ids=None if ids is None else list(ids), limit=limit,
                                decoder=decoder, data=data, owner=owner,
                                task=BfclTaskConfig(partial_credit=partial_credit))
    environment = BfclEnv(BfclEnvConfig(taskset=taskset, **env))
    if next(iter(environment.taskset), None) is None:
        raise ValueError("no entries selected (check categories and ids)")
    return environment


__all__ = ["BfclEnv", "BfclHarness", "BfclTaskset", "load_environment"]
