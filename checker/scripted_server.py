"""A scripted OpenAI-compatible chat-completions server: try ``bfcl-safe generate`` offline.

    python -m bfcl_safe.checker.scripted_server --policy truth --mode fc --port 8000
    bfcl-safe generate --model scripted-model --fc --base-url http://127.0.0.1:8000/v1 --ids multi_turn_base_0

A real HTTP server (stdlib ``http.server``, one thread per request) on 127.0.0.1 only,
on ``--port`` (the tests take a free port of their own). ``POST /v1/chat/completions``
is answered by a *responder*: a function of the request body returning a
:class:`Reply`. Every request body is recorded.

Responders built here:

- :class:`EntryScript`: finds which entry, turn and step a conversation is at from
  its messages alone (so that any client, ours or the reference's, with any number of
  threads, gets the same answers) and asks a *policy* for the assistant message;
- :func:`flaky`: wraps a responder so that each distinct request fails with an HTTP
  status the first ``k`` times;
- :func:`slow`: wraps a responder so that each answer comes after a delay.

Policies (``policy(view) -> assistant message``): :func:`truth_policy` (the ground
truth as tool calls or as Python call text, then a text reply), :func:`mixed_policy`
(per turn, by a hash of the turn's question: ground truth, mutated ground truth, text
with no call, malformed calls, endless calls up to the step limit), and hostile ones
in the tests. The command serves one category (``--test-category``): entries of different
categories can open with the same question. Requests are bounded
(``MAX_SCRIPTED_REQUEST_BYTES``); a body that is not JSON gets a 400.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable, Mapping, Sequence

import attrs

from bfcl_safe.checker.codec import loads_bounded
from bfcl_safe.checker.replay import ground_truth_calls
from bfcl_safe.interp.limits import MAX_RESULT_LINE_DEPTH, MAX_SCRIPTED_REQUEST_BYTES

#: The model name the scripted endpoint reports in its answers.
SERVED_MODEL = "scripted"
#: Longest delay a scripted answer may ask for (requests loops stay bounded in time).
MAX_DELAY = 5.0


@attrs.frozen
class Reply:
    status: int = 200
    body: Any = None
    delay: float = 0.0
    headers: Mapping[str, str] = attrs.Factory(dict)
    #: A hostile answer: the raw bytes (status line and headers included) the server
    #: writes to the socket, chunk by chunk, as they come (a generator may sleep between
    #: chunks); ``status``, ``body`` and ``headers`` are then unused. It must end by itself.
    stream: Callable[[], Iterable[bytes]] | None = None


Responder = Callable[[dict], Reply]


def completion(request: dict, message: dict) -> dict:
    """A ``chat.completion`` object holding ``message``; token counts are a pure
    function of the request and the message (same answer, same counts)."""
    prompt_tokens = len(json.dumps(request.get("messages"), sort_keys=True)) // 4
    completion_tokens = len(json.dumps(message, sort_keys=True)) // 4
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": request.get("model", SERVED_MODEL),
        "choices": [{"index": 0, "message": message, "logprobs": None,
                     "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def error_body(status: int, message: str) -> dict:
    return {"error": {"message": message, "type": "scripted_error", "param": None, "code": str(status)}}


class _Handler(BaseHTTPRequestHandler):
    server: "_Server"
    #: Keep-alive: the client reuses its connections, as with a real server.
    protocol_version = "HTTP/1.1"
    #: Headers and body go out in two writes: without this, Nagle's algorithm and the
    #: client's delayed ACK add ~40 ms to every answer.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._send(Reply(404, error_body(404, f"no route {self.path}")))
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_SCRIPTED_REQUEST_BYTES:
            self.close_connection = True
            self._send(Reply(413, error_body(413, f"the body must have a Content-Length of at most "
                                                  f"{MAX_SCRIPTED_REQUEST_BYTES:,} bytes")))
            return
        raw = self.rfile.read(length)
        try:
            request = loads_bounded(raw.decode("utf-8"), MAX_RESULT_LINE_DEPTH)  # (the one JSON door)
        except (ValueError, RecursionError):
            self._send(Reply(400, error_body(400, "body is not JSON")))
            return
        self.server.owner.record(request)
        try:
            reply = self.server.owner.responder(request)
        except Exception as exc:  # noqa: BLE001 - a script bug shows up as a 599 the test sees
            self.server.owner.failures.append(f"{type(exc).__name__}: {exc}")
            reply = Reply(599, error_body(599, f"script failed: {type(exc).__name__}: {exc}"))
        if reply.delay:
            time.sleep(min(reply.delay, MAX_DELAY))
        if reply.stream is not None:
            self._stream(reply.stream)
            return
        self._send(reply)

    def _stream(self, stream: Callable[[], Iterable[bytes]]) -> None:
        self.close_connection = True
        try:
            for chunk in stream():
                self.wfile.write(chunk)
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass  # the client gave up: what the hostile tests want

    def _send(self, reply: Reply) -> None:
        data = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in reply.headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: "ScriptedServer"

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (a timeout test) closes its end: not an error here.
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


class ScriptedServer:
    """The server; use as a context manager (or :meth:`start` / :meth:`stop`)."""

    def __init__(self, responder: Responder, port: int = 0):
        self.responder = responder
        self.port = port
        self.requests: list[dict] = []
        #: Script errors (the request got a 599).
        self.failures: list[str] = []
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def record(self, request: dict) -> None:
        with self._lock:
            self.requests.append(request)

    @property
    def base_url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        assert isinstance(host, str)  # an AF_INET server's address
        return f"http://{host}:{port}/v1"

    def start(self) -> "ScriptedServer":
        self._server = _Server(("127.0.0.1", self.port), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="scripted-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            if self._thread is not None:
                self._thread.join(timeout=10)
            self._server = None

    def __enter__(self) -> "ScriptedServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


# --------------------------------------------------------------------------- fault wrappers


def request_key(request: dict) -> str:
    return hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()


def flaky(inner: Responder, status: int, times: int) -> Responder:
    """Each distinct request fails with ``status`` its first ``times`` times (a
    ``retry-after-ms`` header of 1 ms keeps the client's backoff short), then gets
    ``inner``'s answer."""
    seen: dict[str, int] = {}
    lock = threading.Lock()

    def respond(request: dict) -> Reply:
        key = request_key(request)
        with lock:
            count = seen.get(key, 0)
            seen[key] = count + 1
        if count < times:
            return Reply(status, error_body(status, f"scripted failure {count + 1} of {times}"),
                         headers={"retry-after-ms": "1"})
        return inner(request)

    return respond


def always_failing(status: int) -> Responder:
    def respond(request: dict) -> Reply:
        return Reply(status, error_body(status, "scripted permanent failure"), headers={"retry-after-ms": "1"})

    return respond


def slow(inner: Responder, delay: float) -> Responder:
    def respond(request: dict) -> Reply:
        return attrs.evolve(inner(request), delay=delay)

    return respond


# --------------------------------------------------------------------------- the conversation's place


def is_prompting_results(message: Mapping[str, Any]) -> bool:
    """A prompting model's tool results come back as a user message: the repr of a
    list of ``{'role': 'tool', ...}`` dicts."""
    content = message.get("content")
    return message.get("role") == "user" and isinstance(content, str) and content.startswith("[{'role': 'tool'")


@attrs.frozen
class View:
    """Where a conversation is, for one candidate entry."""

    entry_id: str
    turn: int
    step: int
    mode: str
    ground_truth: list
    involved: tuple[str, ...]
    #: The question of the turn (its last user message's text).
    question: str
    messages: list


def turn_openers(dataset: Any, entry_id: str, mode: str) -> list[list[str]]:
    """Per turn, the texts of the user messages the client sends when the turn starts."""
    from bfcl_safe.checker import openai_format

    prompt = dataset.prompt_entry(entry_id)
    out = []
    for turn in range(len(prompt["question"])):
        messages = openai_format.turn_messages(prompt, turn, mode)
        out.append([m["content"] for m in messages if m.get("role") == "user"])
    return out


class EntryScript:
    """A responder answering from ``policy`` for the entry, turn and step that the
    conversation is at. Entries are told apart by their turns' user messages; entries
    whose conversations are identical so far must get the same answer from the policy
    (else the request fails with a 599: the script is ambiguous)."""

    def __init__(self, dataset: Any, entry_ids: Sequence[str], mode: str, policy: Callable[[View], dict]):
        self.mode = mode
        self.policy = policy
        self._entries = []
        for entry_id in entry_ids:
            entry = dataset.entry(entry_id)
            self._entries.append((entry_id, turn_openers(dataset, entry_id, mode),
                                  list(dataset.ground_truth_for(entry_id)), tuple(entry["involved_classes"])))
        self._by_first: dict[str, list] = {}
        for item in self._entries:
            first = item[1][0][0] if item[1] and item[1][0] else ""
            self._by_first.setdefault(first, []).append(item)

    def views(self, request: dict) -> list[View]:
        messages = request.get("messages") or []
        user_positions = [i for i, m in enumerate(messages)
                          if isinstance(m, dict) and m.get("role") == "user" and not is_prompting_results(m)]
        users = [messages[i].get("content") for i in user_positions]
        if not users:
            return []
        out = []
        for entry_id, openers, truth, involved in self._by_first.get(users[0], []):
            flat: list[str] = []
            for turn, texts in enumerate(openers):
                flat.extend(texts)
                if len(flat) == len(users) and flat == users:
                    last = user_positions[-1]
                    step = sum(1 for m in messages[last + 1:] if isinstance(m, dict) and m.get("role") == "assistant")
                    out.append(View(entry_id, turn, step, self.mode, truth, involved, users[-1], messages))
                    break
                if len(flat) >= len(users):
                    break
        return out

    def __call__(self, request: dict) -> Reply:
        views = self.views(request)
        if not views:
            return Reply(599, error_body(599, "no scripted entry matches this conversation"))
        answers = [self.policy(view) for view in views]
        if any(answer != answers[0] for answer in answers[1:]):
            ids = ", ".join(v.entry_id for v in views)
            return Reply(599, error_body(599, f"ambiguous conversation: {ids} get different answers"))
        message = answers[0]
        if isinstance(message, Reply):
            return message
        return Reply(200, completion(request, message))


# --------------------------------------------------------------------------- assistant messages


def tool_calls_message(calls: Sequence[tuple[str, str]], view: View, content: str | None = None) -> dict:
    """An assistant message with tool calls ``(name, arguments text)``; ids depend on
    the place in the conversation only."""
    return {"role": "assistant", "content": content, "tool_calls": [
        {"id": f"call_{view.turn}_{view.step}_{i}", "type": "function",
         "function": {"name": name, "arguments": arguments}}
        for i, (name, arguments) in enumerate(calls)]}


def text_message(text: str | None) -> dict:
    return {"role": "assistant", "content": text}


def truth_calls(view: View) -> list[tuple[str, dict]]:
    if view.turn >= len(view.ground_truth):
        return []
    return ground_truth_calls([view.ground_truth[view.turn]], view.involved)[0]


def calls_message(calls: Sequence[tuple[str, dict]], view: View) -> dict:
    """``calls`` as the mode sends them: tool calls with JSON arguments, or Python call text."""
    if view.mode == "fc":
        return tool_calls_message([(name, json.dumps(arguments)) for name, arguments in calls], view)
    rendered = [f"{name}({', '.join(f'{k}={v!r}' for k, v in arguments.items())})" for name, arguments in calls]
    return text_message(f"[{', '.join(rendered)}]")


FINAL_TEXT = "I have completed the requested task."
NO_TOOL_TEXT = "I cannot do that with the tools I have."


def truth_policy(view: View) -> dict:
    """Step 0: the turn's ground-truth calls (a text reply when it has none); step 1: a text reply."""
    calls = truth_calls(view)
    if view.step == 0 and calls:
        return calls_message(calls, view)
    return text_message(FINAL_TEXT if calls else NO_TOOL_TEXT)


def _bucket(text: str, buckets: int) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest(), 16) % buckets


def _mutated(calls: list[tuple[str, dict]]) -> list[tuple[str, dict]]:
    """The ground truth with its first string (else number) argument changed, and its
    last call dropped when there are several."""
    out = [(name, dict(arguments)) for name, arguments in calls]
    for _name, arguments in out:
        for key, value in arguments.items():
            if isinstance(value, str):
                arguments[key] = value + "_x"
                break
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                arguments[key] = value + 1
                break
        else:
            continue
        break
    return out[:-1] if len(out) > 1 else out


#: The behaviours of :func:`mixed_policy`, one per turn, chosen by a hash of the turn's question.
MIXED = ("truth", "truth", "truth", "mutated", "split", "no_call", "malformed", "endless", "empty_content",
         "unknown_tool")


def mixed_policy(view: View) -> dict:
    """Per turn (by a hash of its question, so entries sharing a question agree):

    - ``truth``: the ground truth, then a text reply;
    - ``mutated``: the ground truth with an argument changed and a call dropped;
    - ``split``: the ground truth one call per step;
    - ``no_call``: a text reply at once;
    - ``malformed``: FC arguments that are not JSON / call text that does not parse;
    - ``endless``: the first call of the ground truth (or ``pwd``-like listing) at every
      step, until the step limit force-terminates the entry;
    - ``empty_content``: an empty text reply;
    - ``unknown_tool``: a call of a tool no backend has, then a text reply.
    """
    behaviour = MIXED[_bucket(view.question or "", len(MIXED))]
    calls = truth_calls(view)
    if behaviour == "truth":
        return truth_policy(view)
    if behaviour == "mutated":
        if view.step == 0 and calls:
            return calls_message(_mutated(calls), view)
        return text_message(FINAL_TEXT)
    if behaviour == "split":
        if view.step < len(calls):
            return calls_message([calls[view.step]], view)
        return text_message(FINAL_TEXT)
    if behaviour == "no_call":
        return text_message(NO_TOOL_TEXT)
    if behaviour == "malformed":
        if view.step == 0:
            if view.mode == "fc":
                name = calls[0][0] if calls else "ls"
                return tool_calls_message([(name, '{"folder": ')], view)
            return text_message("[ls(a=True), cd(folder='x'")
        return text_message(FINAL_TEXT)
    if behaviour == "endless":
        call = calls[:1] or [("unknown_probe", {})]
        return calls_message(call, view)
    if behaviour == "empty_content":
        return text_message("")
    if behaviour == "unknown_tool":
        if view.step == 0:
            return calls_message([("no_such_tool", {"x": 1})], view)
        return text_message(FINAL_TEXT)
    raise AssertionError(behaviour)


# --------------------------------------------------------------------------- the command


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m bfcl_safe.checker.scripted_server``: serve until interrupted."""
    import click

    from bfcl_safe.checker.contract import MULTI_TURN_CATEGORIES

    @click.command(context_settings={"help_option_names": ["-h", "--help"]})
    @click.option("--policy", type=click.Choice(["truth", "mixed"]), default="truth", show_default=True,
                  help="truth: each turn's ground-truth calls, then a text reply (every entry passes); mixed: per "
                       "turn, ground truth, mutated calls, text, malformed calls or endless calls.")
    @click.option("--mode", type=click.Choice(["fc", "prompting"]), default="fc", show_default=True,
                  help="Answer as a function-calling model (tool_calls) or a prompting one (call text); "
                       "give generate the same --fc/--prompting.")
    @click.option("--test-category", "category", type=click.Choice(list(MULTI_TURN_CATEGORIES)),
                  default=MULTI_TURN_CATEGORIES[0], show_default=True,
                  help="The category whose entries are answered (one per server).")
    @click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535),
                  help="Port on 127.0.0.1 (0: any free port).")
    @click.option("--data", default=None, help="bfcl-eval wheel or folder (default: the cache).")
    def command(policy: str, mode: str, category: str, port: int, data: str | None) -> None:
        """A scripted OpenAI-compatible chat-completions endpoint on 127.0.0.1 for bfcl-safe generate."""
        from bfcl_safe.checker.dataset import Dataset, DatasetError
        from bfcl_safe.checker.terminal import shown

        try:
            dataset = Dataset.open(data)
        except DatasetError as exc:
            raise click.ClickException(shown(str(exc))) from None
        chosen = truth_policy if policy == "truth" else mixed_policy
        server = ScriptedServer(EntryScript(dataset, dataset.ids(category), mode, chosen), port=port)
        try:
            server.start()
        except OSError as exc:
            raise click.ClickException(f"cannot listen on 127.0.0.1:{port} ({exc.strerror or exc})") from None
        click.echo(f"serving {server.base_url} ({policy} policy, {mode} mode, {category}); Ctrl-C stops", err=False)
        sys.stdout.flush()
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            click.echo(f"stopped after {len(server.requests)} requests", err=True)
        finally:
            server.stop()

    command.main(args=list(argv) if argv is not None else None, prog_name="python -m bfcl_safe.checker.scripted_server")


if __name__ == "__main__":
    main()
