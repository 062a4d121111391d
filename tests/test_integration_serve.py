"""``bfcl-safe serve`` (bfcl_safe.integrations.serve), played through OpenEnv's own client
(``EnvClient`` over the WebSocket session, typed as ``BfclEnvClient``; ``GenericEnvClient``
with plain dicts) against the real server on 127.0.0.1:

- the ground truth of all 800 entries, one session per episode, gets reward 1 and the
  official valid verdict, and the steps the server recorded are the ones sent;
- mutated scripts get the reward and verdict ``bfcl-safe evaluate`` gives the same steps
  (and the reference's error type on a sample); text actions read by a decoder likewise;
- sessions share nothing (concurrent sessions of one entry);
- a hostile client (oversized, malformed, 100,000-deep, mistyped, binary, slow requests;
  thousands of sessions opened and abandoned; idle sessions) is refused cleanly by a server
  in a child process whose memory stays bounded, and the server keeps serving.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from openenv.core.generic_client import GenericEnvClient  # the serve extra is in the test extra: no skip
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from bfcl_safe.checker.contract import category_of
from bfcl_safe.checker.openai_format import tools_for_turn
from bfcl_safe.checker.scoring import Context, score_item
from bfcl_safe.integrations.serve import BfclAction, BfclEnvClient, build_app, server
from bfcl_safe.interp import limits
from tests.checker_support import CATEGORIES, dataset, every
from tests.integration_policies import DONE, MODEL, evaluate_verdict, reference_error_type, result_of, scripts

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def base_url():
    app = build_app(dataset(), owner=MODEL)
    running = server(app, "127.0.0.1", 0)
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not running.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    port = running.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    running.should_exit = True
    thread.join(30)


def _tool_calls(number: int, calls: list) -> list[dict]:
    return [{"id": f"call_{number}_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for i, (name, args) in enumerate(calls)]


def play(env: Any, entry_id: str, replies: list, **reset: Any) -> tuple[list, Any, list]:
    """Play ``replies`` (integration_policies' scripts) as OpenAI assistant messages until
    the server says done; (replies sent, last result, observations)."""
    result = env.reset(entry_id=entry_id, **reset)
    observations = [result.observation]
    sent: list = []
    while not result.done:
        kind, value = replies[len(sent)] if len(sent) < len(replies) else ("text", DONE)
        sent.append((kind, value))
        action = BfclAction(tool_calls=_tool_calls(len(sent), value)) if kind == "calls" else BfclAction(content=value)
        result = env.step(action)
        observations.append(result.observation)
    return sent, result, observations


def _call_text(calls: list) -> str:
    return "[" + ", ".join(f"{name}({', '.join(f'{k}={v!r}' for k, v in args.items())})" for name, args in calls) + "]"


def play_text(env: Any, entry_id: str, replies: list) -> tuple[list, Any]:
    """The same script as a prompting model's text, read by the ``prompting`` decoder."""
    result = env.reset(entry_id=entry_id, mode="prompting")
    sent: list = []
    while not result.done:
        kind, value = replies[len(sent)] if len(sent) < len(replies) else ("text", DONE)
        text = _call_text(value) if kind == "calls" else value
        sent.append(text)
        result = env.step(BfclAction(text=text, decoder="prompting"))
    return sent, result


def _text_result(sent: list[str]) -> list[list[str]]:
    turns: list[list[str]] = [[]]
    for text in sent:
        turns[-1].append(text)
        if not text.startswith("["):
            turns.append([])
    return turns[:-1] if not turns[-1] else turns


@pytest.mark.parametrize("category", CATEGORIES)
def test_ground_truth_of_every_entry_gets_reward_one_and_the_valid_verdict(base_url, category):
    scripted = [(entry_id, replies) for entry_id, _, replies in scripts([category], mutants=False)]
    assert len(scripted) == 200
    disagreements = []
    started = time.perf_counter()
    for entry_id, replies in scripted:
        with BfclEnvClient(base_url=base_url).sync() as env:  # one session per episode
            sent, result, observations = play(env, entry_id, replies)
            state = env.state()
        verdict = evaluate_verdict(entry_id, result_of(sent))
        got = (result.reward, result.observation.verdict["valid"], result.observation.verdict["error_type"],
               verdict["valid"], state.result == result_of(sent), state.done)
        if got != (1.0, True, None, True, True, True):
            disagreements.append((entry_id, got))
        # The tools come at the first observation and whenever a turn starts: BFCL's for that turn.
        for observation in observations:
            if observation.tools is not None:
                assert observation.tools == tools_for_turn(dataset().prompt_entry(entry_id), observation.turn)
    print(f"{category}: 200 ground-truth episodes over WebSocket in {time.perf_counter() - started:.1f} s")
    assert disagreements == []


@pytest.mark.parametrize("category", CATEGORIES)
def test_mutated_scripts_get_the_verdict_evaluate_gives(base_url, category):
    table = [(entry_id, kind, replies) for i, (entry_id, kind, replies)
             in enumerate(scripts([category], ground_truth=False)) if i % (3 * every(4)) == 0]
    outcomes: dict = {}
    disagreements = []
    with BfclEnvClient(base_url=base_url).sync() as env:
        for number, (entry_id, kind, replies) in enumerate(table):
            partial = number % 2 == 1
            sent, result, _ = play(env, entry_id, replies, partial_credit=partial)
            steps = result_of(sent)
            verdict = evaluate_verdict(entry_id, steps)
            turns = len(dataset().ground_truth_for(entry_id))
            reward = 1.0 if verdict["valid"] else (verdict["turns_passed"] / turns if partial else 0.0)
            outcomes[verdict["error_type"]] = outcomes.get(verdict["error_type"], 0) + 1
            got = (result.reward, result.observation.verdict["error_type"], result.observation.verdict["turns_passed"],
                   env.state().result)
            if got != (reward, verdict["error_type"], verdict["turns_passed"], steps):
                disagreements.append((entry_id, kind, got[:3], (reward, verdict["error_type"])))
            if number % 8 == 0 and verdict["error_type"] != reference_error_type(entry_id, steps):
                disagreements.append((entry_id, kind, "reference"))
    print(f"{category}: {len(table)} mutated episodes; evaluate verdicts {outcomes}")
    assert len(table) >= 40 and "multi_turn:force_terminated" in outcomes and None in outcomes and len(outcomes) >= 4
    assert disagreements == []


def _prompting_verdict(entry_id: str, steps: list) -> tuple[bool, str | None]:
    line = score_item(dataset(), Context(MODEL, category_of(entry_id), "prompting"), {"id": entry_id, "result": steps})
    return line.error_type is None, line.error_type


@pytest.mark.parametrize("category", CATEGORIES)
def test_text_actions_read_by_a_decoder_match_evaluate(base_url, category):
    table = [(entry_id, kind, replies) for i, (entry_id, kind, replies) in enumerate(scripts([category]))
             if i % (6 * every(2)) == 0]
    disagreements = []
    with BfclEnvClient(base_url=base_url).sync() as env:
        for entry_id, kind, replies in table:
            sent, result = play_text(env, entry_id, replies)
            valid, error_type = _prompting_verdict(entry_id, _text_result(sent))
            got = (result.reward, result.observation.verdict["error_type"])
            if got != (1.0 if valid else 0.0, error_type) or (kind == "ground-truth" and not valid):
                disagreements.append((entry_id, kind, got, error_type))
    assert len(table) >= 30 and disagreements == []


def test_prompting_mode_starts_with_bfcls_system_prompt_and_answers_in_its_text(base_url):
    with BfclEnvClient(base_url=base_url).sync() as env:
        first = env.reset(entry_id="multi_turn_base_0", mode="prompting").observation
        assert first.messages[0]["role"] == "system" and "[func_name1(params_name1=params_value1" in \
            first.messages[0]["content"]
        step = env.step(BfclAction(text="[cd(folder='document')]")).observation
        assert step.messages == [{"role": "user", "content": repr(
            [{"role": "tool", "name": "cd(folder='document')", "content": '{"current_working_directory": "document"}'}])}]
        tool = env.reset(entry_id="multi_turn_base_0", results="tool")
        step = env.step(BfclAction(text="<tool_call>\n{\"name\": \"cd\", \"arguments\": {\"folder\": \"document\"}}\n"
                                        "</tool_call>", decoder="qwen_tool_call")).observation
        assert tool.observation.tools and step.messages == [
            {"role": "tool", "name": "cd", "content": '{"current_working_directory": "document"}'}]


def test_generic_client_with_plain_dicts_and_the_task_api(base_url):
    with GenericEnvClient(base_url=base_url).sync() as env:
        first = env.reset(category="multi_turn_long_context", index=3)
        assert first.observation["entry_id"] == "multi_turn_long_context_3" and not first.done
        step = env.step({"content": "I cannot help."})
        assert step.observation["turn_ended"] == "undecodable" and step.observation["turn_reward"] in (0.0, 1.0)
        drawn = [env.reset(category="multi_turn_base", seed=7).observation["entry_id"] for _ in range(2)]
        assert drawn[0] == drawn[1]
    host = base_url.removeprefix("http://")
    assert _http(host, "GET", "/bfcl_multi_turn/splits")[1] == [
        {"name": c, "type": "validation"} for c in CATEGORIES]
    status, body = _http(host, "POST", "/bfcl_multi_turn/task", {"split": "multi_turn_miss_param", "index": 5})
    assert (status, body) == (200, {"task": {"id": "multi_turn_miss_param_5", "index": 5}})
    assert _http(host, "POST", "/bfcl_multi_turn/num_tasks", {"split": "multi_turn_base"}) == (200, {"num_tasks": 200})
    schema = _http(host, "GET", "/schema")[1]
    assert {"content", "tool_calls", "text", "decoder"} <= set(schema["action"]["properties"])


def test_sessions_share_nothing(base_url):
    entry_id = "multi_turn_base_7"
    good = next(r for e, _, r in scripts(["multi_turn_base"], mutants=False) if e == entry_id)
    bad = [("calls", [("mkdir", {"dir_name": "intruder"})])] + good

    def one(number: int) -> tuple[float, list, list]:
        with BfclEnvClient(base_url=base_url).sync() as env:
            sent, result, _ = play(env, entry_id, good if number % 2 == 0 else bad)
            return result.reward, result_of(sent), env.state().result

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(one, range(16)))
    for reward, sent, recorded in outcomes:
        assert recorded == sent
        assert reward == (1.0 if evaluate_verdict(entry_id, sent)["valid"] else 0.0)
    assert [reward for reward, _, _ in outcomes] == [1.0, 0.0] * 8


# --------------------------------------------------------------------------- hostile clients


#: _http's status when the server closed the connection before its answer could be read
#: (a body refused while it was still being sent: the answer is lost to the reset).
CLOSED = 0


def _http(host: str, method: str, path: str, body: Any = None, *, raw: bytes | None = None,
          headers: dict | None = None, timeout: float = 60) -> tuple[int, Any]:
    name, port = host.rsplit(":", 1)
    connection = http.client.HTTPConnection(name, int(port), timeout=timeout)
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    try:
        connection.request(method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server answered (413) and closed before the whole body was sent: read its answer
    try:
        response = connection.getresponse()
        text = response.read()
    except (ConnectionResetError, http.client.RemoteDisconnected):
        return CLOSED, b""  # refused by closing the connection (its answer lost to the reset)
    finally:
        connection.close()
    try:
        return response.status, json.loads(text)
    except ValueError:
        return response.status, text


def _rss(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise AssertionError(field)


MEMORY_LIMIT = 2 << 30


def _limit_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


@pytest.fixture(scope="module")
def child():
    """The server in a child process under a 2 GB address-space cap, idle expiry 10 s (long enough that
    a loaded machine does not expire a session the test is still setting up), at most 8 sessions; (host, process)."""
    env = {**os.environ, "MALLOC_ARENA_MAX": "2", "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-m", "tests.serve_child", "--idle", "10", "--max-sessions", "8",
                                "--request-seconds", "2"], cwd=ROOT, env=env, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, preexec_fn=_limit_memory)
    line = process.stdout.readline()
    assert line.startswith("PORT "), line
    yield f"127.0.0.1:{line.split()[1]}", process
    process.stdin.close()
    process.wait(60)


def _ws(host: str):
    return connect(f"ws://{host}/ws", max_size=None, open_timeout=30)


def _ask(ws: Any, message: Any) -> dict:
    ws.send(message if isinstance(message, (str, bytes)) else json.dumps(message))
    return json.loads(ws.recv(timeout=60))


def _ground_truth_episode(host: str, entry_id: str = "multi_turn_base_0") -> float:
    replies = next(r for e, _, r in scripts([category_of(entry_id)], mutants=False) if e == entry_id)
    with BfclEnvClient(base_url=f"http://{host}").sync() as env:
        return play(env, entry_id, replies)[1].reward


def test_hostile_http_requests_are_refused_cleanly(child):
    host, process = child
    assert _ground_truth_episode(host) == 1.0
    deep = b"[" * 100_000 + b"]" * 100_000
    cases = {
        "declared-oversize": _http(host, "POST", "/step", raw=b"{}", headers={"Content-Length": "50000000"}),
        "oversize": _http(host, "POST", "/reset", raw=b'{"x": "' + b"a" * (limits.MAX_SERVE_BODY_BYTES + 10) + b'"}'),
        "deep": _http(host, "POST", "/reset", raw=deep),
        "deep-object": _http(host, "POST", "/step", raw=b'{"action": ' + b'{"a": ' * 5000 + b"1" + b"}" * 5001),
        "malformed": _http(host, "POST", "/step", raw=b'{"action": {"content": '),
        "not-utf8": _http(host, "POST", "/step", raw=b'{"action": "\xff\xfe"}'),
        "wrong-type": _http(host, "POST", "/step", {"action": {"tool_calls": "cd"}}),
        "unknown-field": _http(host, "POST", "/step", {"action": {"eval": "1"}}),
        "no-episode": _http(host, "POST", "/step", {"action": {"content": "hi"}}),
        "bad-entry": _http(host, "POST", "/reset", {"entry_id": 5}),
        "bad-category": _http(host, "POST", "/reset", {"category": ["x"]}),
        "bad-split": _http(host, "POST", "/bfcl_multi_turn/tasks", {"split": "../../etc"}),
    }
    statuses = {name: status for name, (status, _) in cases.items()}
    # A body over the size limit is refused while the client may still be sending it: the 413,
    # or (its answer lost to the TCP reset) the connection closed. Every other case is read whole.
    if statuses["oversize"] == CLOSED:
        statuses["oversize"] = 413
    assert statuses == {"declared-oversize": 413, "oversize": 413, "deep": 400, "deep-object": 400, "malformed": 422,
                        "not-utf8": 400, "wrong-type": 422, "unknown-field": 422, "no-episode": 400,
                        "bad-entry": 400, "bad-category": 400, "bad-split": 400}
    assert "nested deeper than 128" in cases["deep"][1]["detail"]
    assert "send reset first" in cases["no-episode"][1]["detail"]
    # A body that never arrives is cut off after the request deadline (2 s here).
    name, port = host.split(":")
    with socket.create_connection((name, int(port)), timeout=30) as slow:
        slow.sendall(b"POST /reset HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n{")
        started = time.monotonic()
        answer = slow.recv(4096)
        assert answer.startswith(b"HTTP/1.1 408") and time.monotonic() - started < 20
    assert process.poll() is None and _ground_truth_episode(host) == 1.0


def test_hostile_websocket_messages_are_refused_and_the_session_goes_on(child):
    host, process = child
    with _ws(host) as ws:
        answers = {
            "deep": _ask(ws, "[" * 100_000 + "]" * 100_000),
            "malformed": _ask(ws, '{"type": "reset", "data": '),
            "binary": _ask(ws, b"\x00\x01"),
            "step-before-reset": _ask(ws, {"type": "step", "data": {"content": "hi"}}),
            "bad-entry": _ask(ws, {"type": "reset", "data": {"entry_id": [1]}}),
            "bad-seed": _ask(ws, {"type": "reset", "data": {"seed": "x"}}),
            "bad-mode": _ask(ws, {"type": "reset", "data": {"entry_id": "multi_turn_base_1", "mode": {"a": 1}}}),
            "reset": _ask(ws, {"type": "reset", "data": {"entry_id": "multi_turn_base_1"}}),
            "wrong-type": _ask(ws, {"type": "step", "data": {"tool_calls": [1, 2]}}),
            "unknown-field": _ask(ws, {"type": "step", "data": {"content": "x", "__class__": 1}}),
            "text-and-message": _ask(ws, {"type": "step", "data": {"content": "x", "text": "[ls()]"}}),
            "bad-decoder": _ask(ws, {"type": "step", "data": {"text": "[ls()]", "decoder": "eval"}}),
            "unknown-type": _ask(ws, {"type": "exec", "data": {}}),
            "hostile-call": _ask(ws, {"type": "step", "data": {"text": "[__import__('os').system('id')]"}}),
            "step": _ask(ws, {"type": "step", "data": {"tool_calls": _tool_calls(1, [("ls", {"a": True})])}}),
        }
        kinds = {name: answer["type"] for name, answer in answers.items()}
        assert kinds == {**{name: "error" for name in answers}, "reset": "observation", "hostile-call": "observation",
                         "step": "observation"}, kinds
        assert "nested deeper than 128" in answers["deep"]["data"]["message"]
        assert "binary" in answers["binary"]["data"]["message"]
        # Decoded as BFCL's prompting decoder reads it (the call `system()`), run on the table: not found.
        assert answers["hostile-call"]["data"]["observation"]["calls"] == [
            {"call": "system()", "result": "Error during execution: name 'system' is not defined", "tool_call_id": None}]
        assert answers["step"]["data"]["observation"]["calls"][0]["call"] == "ls(a=True)"
        # A message past the size limit closes the connection (1009), never buffered whole.
        ws.send("x" * (limits.MAX_SERVE_BODY_BYTES + 1))
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=60)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    assert process.poll() is None and _ground_truth_episode(host) == 1.0


def test_thousands_of_abandoned_sessions_leave_memory_bounded_and_the_server_serving(child):
    host, process = child
    assert _ground_truth_episode(host) == 1.0
    before = _rss(process.pid, "VmRSS")
    name, port = host.split(":")
    started = time.monotonic()
    at_capacity = 0  # refused while the sessions just dropped were still being torn down
    for number in range(2000):
        ws = _ws(host)
        try:
            ws.send(json.dumps({"type": "reset", "data": {"category": "multi_turn_long_context", "seed": number}}))
            if number % 2:
                at_capacity += json.loads(ws.recv(timeout=60))["type"] == "error"
        except ConnectionClosed:
            at_capacity += 1
        ws.socket.shutdown(socket.SHUT_RDWR)  # abandoned: the TCP connection dropped, no close handshake
        ws.socket.close()
    abandoned_seconds = time.monotonic() - started
    time.sleep(1)
    # Held open and idle, sessions are capped (8 here) and expire (10 s here).
    held = [_ws(host) for _ in range(8)]
    for ws in held:
        assert _ask(ws, {"type": "reset", "data": {"entry_id": "multi_turn_base_2"}})["type"] == "observation"
    with _ws(host) as extra:
        refusal = json.loads(extra.recv(timeout=60))
        assert refusal["type"] == "error" and refusal["data"]["code"] == "CAPACITY_REACHED"
    time.sleep(12)
    for ws in held:
        with pytest.raises(ConnectionClosed):
            ws.recv(timeout=30)
            ws.send(json.dumps({"type": "state"}))
            ws.recv(timeout=30)
        ws.close()
    after = _rss(process.pid, "VmRSS")
    peak = _rss(process.pid, "VmHWM")
    print(f"2,000 abandoned sessions in {abandoned_seconds:.1f} s ({at_capacity} refused at capacity); RSS {before / 2**20:.0f} MB before, "
          f"{after / 2**20:.0f} MB after, peak {peak / 2**20:.0f} MB")
    assert peak < 1 << 30 and after - before < 200 << 20
    assert process.poll() is None and _ground_truth_episode(host) == 1.0
    process.stdin.write("refused\n")
    process.stdin.flush()
    report = json.loads(process.stdout.readline())
    assert report["refused"].get("idle", 0) >= 8 and report["open"] <= 1, report


def test_nemo_gym_openenv_adapter_calls(tmp_path, monkeypatch):
    """NeMo-Gym 0.7.0 needs Python >= 3.13.14 and does not install here; its OpenEnv resource
    server (resources_servers/openenv/app.py) uses an OpenEnv environment in process: it
    builds ``env_class()`` with no arguments per session, calls ``reset(**reset_kwargs)``
    from its config, ``env.step(action_class(**body))`` per tool call, sums the rewards in
    ``verify`` and closes the environment. The same calls, in its order."""
    from bfcl_safe.checker.dataset import CACHE_ENV, WHEEL_NAME
    from bfcl_safe.integrations.serve import BfclEnvironment
    from tests.refenv import wheel

    (tmp_path / WHEEL_NAME).symlink_to(Path(wheel()).resolve())
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    for entry_id, _, replies in [s for s in scripts(["multi_turn_miss_param"]) if s[0].endswith("_9")][:6]:
        env = BfclEnvironment()
        observation = env.reset(entry_id=entry_id)
        total = float(observation.reward or 0.0)
        sent: list = []
        while not observation.done:
            kind, value = replies[len(sent)] if len(sent) < len(replies) else ("text", DONE)
            sent.append((kind, value))
            body = {"tool_calls": _tool_calls(len(sent), value)} if kind == "calls" else {"content": value}
            observation = env.step(BfclAction(**body))
            total += float(observation.reward or 0.0)
        env.close()
        assert total == (1.0 if evaluate_verdict(entry_id, result_of(sent))["valid"] else 0.0)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_command_serves_until_stopped():
    from tests.refenv import wheel

    port = _free_port()
    process = subprocess.Popen([sys.executable, "-m", "bfcl_safe", "serve", "--port", str(port), "--data", str(wheel())],
                               cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stderr=subprocess.PIPE, text=True)
    try:
        banner = process.stderr.readline()
        assert f"http://127.0.0.1:{port}" in banner and "bfcl_multi_turn" in banner
        deadline = time.monotonic() + 60
        while True:
            try:
                assert _http(f"127.0.0.1:{port}", "GET", "/health") == (200, {"status": "healthy"})
                break
            except ConnectionRefusedError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        assert _ground_truth_episode(f"127.0.0.1:{port}", "multi_turn_miss_func_3") == 1.0
    finally:
        process.terminate()
        process.wait(60)


def test_without_the_extra_the_command_says_which_to_install(tmp_path):
    blocked = tmp_path / "openenv"
    blocked.mkdir()
    (blocked / "__init__.py").write_text("raise ImportError('openenv is not installed (test)')\n")
    done = subprocess.run([sys.executable, "-m", "bfcl_safe", "serve", "--port", "1"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"})
    assert done.returncode == 1 and done.stderr.strip().splitlines()[-1] == (
        "Error: bfcl_safe.integrations.serve needs openenv>=0.10: pip install 'bfcl-safe[serve]'"), done.stderr
    assert "Traceback" not in done.stderr


def test_sessions_opened_over_http_are_capped_and_expire(child):
    """OpenEnv also opens sessions over HTTP (``POST /mcp`` ``openenv/session/create``):
    the same cap (8 here) refuses the 9th, and idle ones are dropped by its reaper."""
    host, process = child
    create = {"jsonrpc": "2.0", "method": "openenv/session/create", "params": {}}
    answers = [_http(host, "POST", "/mcp", {**create, "id": i}) for i in range(10)]
    assert [("result" in body) for _, body in answers] == [True] * 8 + [False] * 2
    assert "at capacity" in answers[-1][1]["error"]["message"]
    deadline = time.monotonic() + 30
    while "result" not in _http(host, "POST", "/mcp", {**create, "id": 99})[1]:
        assert time.monotonic() < deadline, "idle HTTP sessions were not dropped"
        time.sleep(1)
    assert process.poll() is None
