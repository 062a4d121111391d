"""bfcl-safe's episodes over HTTP in the OpenEnv convention (``pip install 'bfcl-safe[serve]'``;
``bfcl-safe serve`` runs it).

::

    from bfcl_safe.integrations.serve import BfclEnvClient, BfclAction

    with BfclEnvClient(base_url="http://127.0.0.1:8000").sync() as env:   # one WebSocket session
        result = env.reset(entry_id="multi_turn_base_0")                   # or category=..., seed=...
        chat, tools = result.observation.messages, result.observation.tools
        while not result.done:
            reply = model(chat, tools)                                      # an OpenAI assistant message
            chat.append(reply)
            result = env.step(BfclAction(content=reply["content"], tool_calls=reply.get("tool_calls")))
            chat += result.observation.messages                             # tool messages, next turn's user messages
            tools = result.observation.tools or tools                       # new tools when a turn starts
        result.reward, result.observation.verdict                           # the official verdict (1.0 / 0.0)

The server is OpenEnv's own (``openenv.core.env_server.create_fastapi_app``): ``/ws`` (a
WebSocket session per episode: ``reset``, ``step``, ``state``, ``close`` messages),
``/reset``, ``/step``, ``/state``, ``/schema``, ``/metadata``, ``/health``, and the task API
(``/bfcl_multi_turn/splits``, ``/tasks``, ``/task``: the four categories and their entry ids).
Over plain HTTP ``/reset`` and ``/step`` are stateless, as in every OpenEnv server (each
request gets a new environment): play episodes over the WebSocket, as OpenEnv's clients do.

**Environment** (:class:`BfclEnvironment`): ``reset`` picks the entry — ``entry_id``; or
``category`` (``split``) and ``index``; or one drawn from ``category`` (default: all four)
with ``seed`` — and starts its episode; ``mode`` ``"fc"`` (the user messages, tools in
``observation.tools``) or ``"prompting"`` (BFCL's system prompt with the docs first);
``results`` as in :mod:`bfcl_safe.integrations.text_env`; ``partial_credit`` the reward.
Each ``step`` is one model reply (:class:`BfclAction`): an OpenAI assistant message
(``content`` and ``tool_calls`` in Chat Completions form), or ``text`` with the name of
the ``decoder`` that reads it (the decoder of that model's BFCL handler; default
``prompting``). The observation carries the messages the chat gets next (tool results, and
when a reply ended the turn, the next turn's user messages), the tools when a turn starts,
the calls that ran, why a turn ended, this turn's own checks (``turn_reward``) and, once
``done``, ``reward`` (the official verdict) and ``verdict`` (plain data). ``state`` holds
the steps played as a BFCL result file holds them.

**Untrusted requests** (limits in :mod:`bfcl_safe.interp.limits`, SECURITY.md): every HTTP
body and WebSocket message passes :class:`Guard` before OpenEnv or pydantic read it — size
(:data:`~bfcl_safe.interp.limits.MAX_SERVE_BODY_BYTES`), JSON depth counted without
parsing (:data:`~bfcl_safe.interp.limits.MAX_SERVE_JSON_DEPTH`), text frames only, a body
deadline, connections at once; the action's fields are typed (pydantic, strict), each
episode's total input is bounded; sessions are capped
(:data:`~bfcl_safe.interp.limits.MAX_SERVE_SESSIONS`) and expire when idle
(:data:`~bfcl_safe.interp.limits.SERVE_IDLE_SECONDS`). A refused message gets an error
answer and the session goes on. Each session owns its episode; sessions share only the
read-only dataset and prompt templates.
"""

from __future__ import annotations

import asyncio
import functools
import json
from typing import Any, Awaitable, Callable, Optional

from bfcl_safe.integrations import MissingExtra

try:
    import uvicorn
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse
    from openenv.core.client_types import StepResult
    from openenv.core.env_client import EnvClient
    from openenv.core.env_server.http_server import create_fastapi_app
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, ConcurrencyConfig, EnvironmentMetadata, Observation, State
    from pydantic import ConfigDict, Field
except ImportError:  # pragma: no cover - only without the extra
    raise MissingExtra("serve", "openenv>=0.10") from None

from bfcl_safe.checker.contract import MULTI_TURN_CATEGORIES
from bfcl_safe.checker.play import Episode
from bfcl_safe.checker.result_files import deeper_than
from bfcl_safe.checker.terminal import shown
from bfcl_safe.integrations.text_env import (
    MODES,
    RESULT_FORMATS,
    Player,
    TextEnvError,
    check_decoder,
    pick_entry,
    prompting_system_prompt,
)
from bfcl_safe.interp import limits
from bfcl_safe.interp.errors import BfclSafeError

#: The environment's name (OpenEnv's task API routes: ``/bfcl_multi_turn/...``).
ENV_NAME = "bfcl_multi_turn"


class ServeError(BfclSafeError, ValueError):
    """A request the environment refuses (no episode yet, an episode's input limit, ...)."""


# --------------------------------------------------------------------------- wire types


class BfclAction(Action):
    """One model reply: an OpenAI assistant message (``content``, ``tool_calls`` in Chat
    Completions form; no ``tool_calls`` ends the turn), or ``text`` read by ``decoder``
    (default ``prompting``). Strictly typed; unknown fields are refused."""

    model_config = ConfigDict(extra="forbid", strict=True)

    content: Optional[str] = Field(default=None, description="The assistant message's text")
    tool_calls: Optional[list[dict[str, Any]]] = Field(
        default=None, description="OpenAI Chat Completions tool calls: {id, type, function: {name, arguments}}")
    text: Optional[str] = Field(default=None, description="The model's raw reply text (instead of a message)")
    decoder: Optional[str] = Field(default=None, description="The decoder that reads `text` (checker.decoders)")


class BfclObservation(Observation):
    """What a reset or step gives back (see the module docstring)."""

    entry_id: Optional[str] = None
    turn: int = 0
    turns: int = 0
    step_in_turn: int = 0
    messages: list[dict[str, Any]] = Field(default_factory=list, description="Messages the chat gets next")
    tools: Optional[list[dict[str, Any]]] = Field(default=None, description="OpenAI tools, when a turn starts")
    calls: list[dict[str, Any]] = Field(default_factory=list, description="Calls that ran: call, result, tool_call_id")
    turn_ended: Optional[str] = None
    decode_error: Optional[str] = None
    turn_reward: Optional[float] = Field(default=None, description="This turn's own checks, when it ended")
    verdict: Optional[dict[str, Any]] = Field(default=None, description="The official verdict, once done")


class BfclState(State):
    """The session's episode: its entry, turn, verdict so far, the steps played."""

    entry_id: Optional[str] = None
    turn: int = 0
    turns: int = 0
    done: bool = False
    verdict: Optional[dict[str, Any]] = None
    result: Optional[list[Any]] = Field(default=None, description="The steps played, as a BFCL result file holds them")


# --------------------------------------------------------------------------- the environment


class BfclEnvironment(Environment[BfclAction, BfclObservation, BfclState]):
    """One OpenEnv session: at most one episode at a time (see the module docstring).
    ``dataset``: an open :class:`~bfcl_safe.checker.dataset.Dataset` (None: the cache
    ``bfcl-safe data fetch`` fills, so that frameworks that build environments with no
    arguments, as NeMo-Gym's OpenEnv resource server does, can)."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, dataset: Any = None, *, owner: str | None = None, templates: Any = None):
        super().__init__()
        if dataset is None:  # built with no arguments (NeMo-Gym's OpenEnv adapter): the cached dataset
            from bfcl_safe.checker.dataset import Dataset

            dataset = Dataset.open(None)
        self.dataset = dataset
        self.owner = owner
        self.templates = templates
        self.player: Player | None = None
        self.partial_credit = False
        self.episode_id: str | None = None
        self.input_chars = 0
        self.closed = False

    # -- reset and step

    def reset(self, seed: Any = None, episode_id: Any = None, entry_id: Any = None, category: Any = None,
              split: Any = None, index: Any = None, mode: Any = "fc", results: Any = None,
              partial_credit: Any = False) -> BfclObservation:
        self._open()
        if split is not None and category is not None and split != category:
            raise ServeError("give category or split, not both")
        if episode_id is not None and (not isinstance(episode_id, str) or len(episode_id) > 255):
            raise ServeError("episode_id must be a str of at most 255 characters")
        if type(partial_credit) is not bool:
            raise ServeError(f"partial_credit must be true or false, not {type(partial_credit).__name__}")
        if not isinstance(mode, str) or mode not in MODES:
            raise ServeError(f"mode must be one of {', '.join(MODES)}")
        if results is not None and (not isinstance(results, str) or results not in RESULT_FORMATS):
            raise ServeError(f"results must be one of {', '.join(RESULT_FORMATS)} or null")
        chosen = pick_entry(self.dataset, entry_id=entry_id, category=category if category is not None else split,
                            index=index, seed=seed)
        episode = Episode.from_entry(chosen, self.dataset, owner=self.owner)
        self.player = Player(episode, mode=mode, results=results, templates=self.templates, dataset=self.dataset)
        self.partial_credit = partial_credit
        self.episode_id = episode_id
        self.input_chars = 0
        return BfclObservation(entry_id=chosen, turn=0, turns=episode.turn_count, messages=self.player.opening(),
                               tools=self.player.tools(), reward=None, done=False)

    def step(self, action: BfclAction, timeout_s: Any = None, **kwargs: Any) -> BfclObservation:
        self._open()
        player = self.player
        if player is None:
            raise ServeError("no episode in this session: send reset first")
        size = len(action.model_dump_json())
        if self.input_chars + size > limits.MAX_SERVE_EPISODE_INPUT_CHARS:
            raise ServeError(f"this episode's actions passed {limits.MAX_SERVE_EPISODE_INPUT_CHARS:,} characters; "
                             "send reset to start a new one")
        self.input_chars += size
        if action.text is not None:
            if action.content is not None or action.tool_calls is not None:
                raise ServeError("an action is text (with a decoder) or a message (content, tool_calls), not both")
            move = player.play(action.text, check_decoder(action.decoder or "prompting"))
        else:
            if action.decoder is not None:
                raise ServeError("decoder reads text: give text with it")
            message: dict[str, Any] = {"role": "assistant", "content": action.content}
            if action.tool_calls is not None:
                message["tool_calls"] = action.tool_calls
            move = player.play(message)
        done = player.done
        return BfclObservation(
            entry_id=player.episode.id, turn=player.episode.turn, turns=player.episode.turn_count,
            step_in_turn=move.step.step_in_turn, messages=list(move.messages),
            tools=player.tools() if move.new_turn else None,
            calls=[{"call": c.call, "result": c.result, "tool_call_id": c.tool_call_id} for c in move.step.calls],
            turn_ended=None if move.step.ended is None else move.step.ended.value,
            decode_error=move.step.decode_error,
            turn_reward=None if move.outcome is None else move.outcome.reward,
            verdict=player.summary() if done else None,
            reward=player.reward(self.partial_credit) if done else 0.0, done=done)

    @property
    def state(self) -> BfclState:
        player = self.player
        if player is None:
            return BfclState(episode_id=self.episode_id, step_count=0)
        return BfclState(episode_id=self.episode_id, step_count=player.steps, entry_id=player.episode.id,
                         turn=player.episode.turn, turns=player.episode.turn_count, done=player.done,
                         verdict=player.summary(), result=player.result())

    def close(self) -> None:
        """Drop the episode (OpenEnv calls this when the session ends or expires)."""
        self.closed = True
        self.player = None

    def _open(self) -> None:
        if self.closed:
            raise ServeError("this session expired or was closed; open a new one")

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name=ENV_NAME, version="0.1.0",
            description="BFCL multi-turn entries (bfcl-eval 2026.3.23) played on bfcl-safe's simulated backends; "
                        "reward: the official verdict of the steps played")

    # -- OpenEnv's task API: splits are the four categories, tasks their entries

    def list_splits(self) -> list[str]:
        return list(MULTI_TURN_CATEGORIES)

    def _ids(self, split: Any) -> list[str]:
        if not isinstance(split, str) or split not in MULTI_TURN_CATEGORIES:
            raise TextEnvError("split", f"split must be one of {', '.join(MULTI_TURN_CATEGORIES)}")
        return self.dataset.ids(split)

    def list_tasks(self, split: Any) -> list[dict]:
        return [{"id": entry_id, "index": i} for i, entry_id in enumerate(self._ids(split))]

    def num_tasks(self, split: Any) -> int:
        return len(self._ids(split))

    def get_task(self, split: Any, index: Any) -> dict:
        ids = self._ids(split)
        if type(index) is not int or not 0 <= index < len(ids):
            raise IndexError(index)
        return {"id": ids[index], "index": index}

    def get_task_range(self, split: Any, start: Any = None, stop: Any = None) -> list[dict]:
        tasks = self.list_tasks(split)
        if not all(v is None or type(v) is int for v in (start, stop)):
            raise TextEnvError("start", "start and stop must be ints or null")
        return tasks[start:stop]


# --------------------------------------------------------------------------- the door


Receive = Callable[[], Awaitable[dict]]
Send = Callable[[dict], Awaitable[None]]


async def _answer(send: Send, status: int, message: str) -> None:
    body = json.dumps({"detail": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


def _problem(text: str, max_depth: int) -> str | None:
    """Why a request's text is refused before parsing (None: it is not)."""
    if deeper_than(text, max_depth):
        return f"JSON nested deeper than {max_depth} levels"
    return None


class Guard:
    """The ASGI door in front of OpenEnv's app: every HTTP body and WebSocket message is
    bounded here before anything parses it (see the module docstring). Counts connections
    (HTTP requests in progress and open WebSockets) against ``max_connections``."""

    def __init__(self, app: Any, *, max_body: int = limits.MAX_SERVE_BODY_BYTES,
                 max_depth: int = limits.MAX_SERVE_JSON_DEPTH, max_connections: int = limits.MAX_SERVE_CONNECTIONS,
                 idle_seconds: float = limits.SERVE_IDLE_SECONDS,
                 request_seconds: float = limits.SERVE_REQUEST_SECONDS):
        self.app = app
        self.max_body = max_body
        self.max_depth = max_depth
        self.max_connections = max_connections
        self.idle_seconds = idle_seconds
        self.request_seconds = request_seconds
        #: Connections open now; refusals of each kind so far (for tests and operators).
        self.open = 0
        self.refused: dict[str, int] = {}

    def _refuse(self, kind: str) -> None:
        self.refused[kind] = self.refused.get(kind, 0) + 1

    async def __call__(self, scope: dict, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    # -- HTTP

    async def _http(self, scope: dict, receive: Receive, send: Send) -> None:
        if self.open >= self.max_connections:
            self._refuse("busy")
            await _answer(send, 503, "too many connections; try again later")
            return
        self.open += 1
        try:
            refusal, body = await self._body(scope, receive)
            if refusal is not None:
                status, message = refusal
                self._refuse(str(status))
                await _answer(send, status, message)
                return
            if body is None:  # the client went away
                return
            delivered = False

            async def replay() -> dict:
                nonlocal delivered
                if not delivered:
                    delivered = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()

            await self.app(scope, replay, send)
        finally:
            self.open -= 1

    async def _body(self, scope: dict, receive: Receive) -> tuple[tuple[int, str] | None, bytes | None]:
        for name, value in scope.get("headers", ()):
            if name.lower() == b"content-length":
                if not value.isdigit() or len(value) > 18:
                    return (400, "malformed Content-Length"), None
                if int(value) > self.max_body:
                    return (413, f"request body larger than {self.max_body:,} bytes"), None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.request_seconds
        chunks: list[bytes] = []
        size = 0
        while True:
            remaining = deadline - loop.time()
            try:
                if remaining <= 0:
                    raise asyncio.TimeoutError
                message = await asyncio.wait_for(receive(), remaining)
            except asyncio.TimeoutError:
                return (408, f"request body not received within {self.request_seconds} seconds"), None
            if message["type"] == "http.disconnect":
                return None, None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                return (413, f"request body larger than {self.max_body:,} bytes"), None
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if body:
            try:
                text = body.decode("utf-8")
            except UnicodeDecodeError:
                return (400, "request body is not UTF-8"), None
            problem = _problem(text, self.max_depth)
            if problem is not None:
                return (400, problem), None
        return None, body

    # -- WebSocket

    async def _websocket(self, scope: dict, receive: Receive, send: Send) -> None:
        if self.open >= self.max_connections:
            self._refuse("busy")
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": 1013})
            return
        self.open += 1
        try:
            await self.app(scope, self._guarded_receive(receive, send), send)
        except Exception as error:  # noqa: BLE001 - the client left while OpenEnv was answering
            # OpenEnv's session loop re-raises when it cannot send its answer to a client
            # that went away (its session is dropped first, in its own `finally`). Nothing
            # is left to answer: counted in `refused`, not logged as a traceback.
            self._refuse(f"gone:{type(error).__name__}")
        finally:
            self.open -= 1

    def _guarded_receive(self, receive: Receive, send: Send) -> Receive:
        async def guarded() -> dict:
            while True:
                try:
                    message = await asyncio.wait_for(receive(), self.idle_seconds)
                except asyncio.TimeoutError:
                    self._refuse("idle")
                    return {"type": "websocket.disconnect", "code": 1001}
                if message["type"] != "websocket.receive":
                    return message
                text = message.get("text")
                if text is None:
                    problem: str | None = "binary messages are not accepted; send JSON text"
                elif len(text) > self.max_body:
                    problem = f"message larger than {self.max_body:,} bytes"
                else:
                    problem = _problem(text, self.max_depth)
                if problem is None:
                    return message
                self._refuse("message")
                await send({"type": "websocket.send",
                            "text": json.dumps({"type": "error", "data": {"message": problem,
                                                                          "code": "VALIDATION_ERROR"}})})

        return guarded


# --------------------------------------------------------------------------- the app


def build_app(dataset: Any, *, owner: str | None = None, max_sessions: int = limits.MAX_SERVE_SESSIONS,
              idle_seconds: float = limits.SERVE_IDLE_SECONDS, **guard: Any) -> Guard:
    """The ASGI app of ``bfcl-safe serve``: OpenEnv's FastAPI app over
    :class:`BfclEnvironment` (``dataset`` shared read-only by every session; ``owner`` as in
    :meth:`Episode.from_entry`), behind :class:`Guard`. Limits may be lowered (tests)."""
    if type(max_sessions) is not int or not 1 <= max_sessions <= limits.MAX_SERVE_SESSIONS:
        raise ServeError(f"max_sessions must be 1..{limits.MAX_SERVE_SESSIONS}")
    # Fill the dataset's lazy indexes now: sessions then only read it, from their threads.
    for category in MULTI_TURN_CATEGORIES:
        for entry_id in dataset.ids(category)[:1]:
            dataset.entry(entry_id)
            dataset.ground_truth_for(entry_id)
    dataset.long_context_data()
    templates = prompting_system_prompt(dataset)
    factory = functools.partial(BfclEnvironment, dataset, owner=owner, templates=templates)
    app: FastAPI = create_fastapi_app(
        factory, BfclAction, BfclObservation, env_name=ENV_NAME, state_cls=BfclState,
        concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=idle_seconds))

    async def refused(request: Request, error: Exception) -> JSONResponse:
        return JSONResponse(status_code=400, content={"detail": shown(str(error))[:500]})

    app.add_exception_handler(BfclSafeError, refused)
    return Guard(app, idle_seconds=idle_seconds, **guard)


def server(app: Guard, host: str = "127.0.0.1", port: int = 8000, *, log_level: str = "warning") -> "uvicorn.Server":
    """A uvicorn server for ``app`` with the WebSocket limits of SECURITY.md (message size,
    a short queue, no compression); ``.run()`` it, or ``serve()``."""
    config = uvicorn.Config(
        app, host=host, port=port, log_level=log_level, ws_max_size=limits.MAX_SERVE_BODY_BYTES, ws_max_queue=2,
        ws_per_message_deflate=False, limit_concurrency=2 * limits.MAX_SERVE_CONNECTIONS, timeout_keep_alive=5,
        h11_max_incomplete_event_size=64 * 1024, lifespan="on")
    return uvicorn.Server(config)


def serve(dataset: Any, host: str = "127.0.0.1", port: int = 8000, *, owner: str | None = None,
          log_level: str = "warning") -> None:
    """Run the server until interrupted (``bfcl-safe serve``)."""
    server(build_app(dataset, owner=owner), host, port, log_level=log_level).run()


# --------------------------------------------------------------------------- the client


class BfclEnvClient(EnvClient[BfclAction, BfclObservation, BfclState]):
    """OpenEnv's WebSocket client typed for this environment: ``reset(**options)``,
    ``step(BfclAction(...))``, ``state()``; ``.sync()`` for a synchronous client."""

    def _step_payload(self, action: BfclAction) -> dict[str, Any]:
        return action.model_dump(exclude_none=True, exclude={"metadata"})

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[BfclObservation]:
        observation = BfclObservation.model_validate(
            {**payload.get("observation", {}), "reward": payload.get("reward"), "done": payload.get("done", False)})
        return StepResult(observation=observation, reward=payload.get("reward"), done=payload.get("done", False),
                          metadata=payload.get("metadata"))

    def _parse_state(self, payload: dict[str, Any]) -> BfclState:
        return BfclState.model_validate(payload)


__all__ = ["BfclAction", "BfclEnvClient", "BfclEnvironment", "BfclObservation", "BfclState", "ENV_NAME", "Guard",
           "ServeError", "build_app", "serve", "server"]
