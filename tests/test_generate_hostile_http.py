"""``bfcl-safe generate`` against hostile HTTP endpoints: the bounded exchange.

Each case runs the real command (``python -m bfcl_safe generate ... --evaluate``) in a
child process under a 2 GB address-space cap and a time limit, against a server of the
test's own on 127.0.0.1 (:mod:`tests.scripted_server`; its hostile answers are bounded
loops that end by themselves). Three entries are played: the middle one gets the hostile
answer, the other two the ground truth. Each case asserts: exit 0; the hostile entry's
result line is BFCL's ``Error during inference: ...`` line with the reason; the other two
are scored normally (they pass); the child's peak memory stays under 1.8 GB and it ends
within 120 s.
"""

from __future__ import annotations

import functools
import json
import os
import resource
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Callable, Iterator

import pytest

from bfcl_safe.generate.result_writer import result_path
from bfcl_safe.interp import limits
from tests.checker_support import dataset as load_dataset
from tests.scripted_server import EntryScript, Reply, ScriptedServer, completion, tool_calls_message, truth_policy

ROOT = Path(__file__).resolve().parent.parent
BASE = "multi_turn_base"
IDS = [f"{BASE}_0", f"{BASE}_1", f"{BASE}_2"]
HOSTILE = IDS[1]
MEMORY_CAP = 2 << 30
MEMORY_BOUND = int(1.8 * (1 << 30))
TIME_LIMIT = 120
#: The total deadline of one request in these runs (ordinary answers take milliseconds).
DEADLINE = 6
#: How long a dripping server keeps dripping (it stops by itself well after the deadline).
DRIP_SECONDS = 40
MODEL = "hostile/model"

TOO_LARGE = f"the answer is larger than {limits.MAX_ANSWER_BYTES:,} bytes (after decompression)"


def _head(status: str = "200 OK", headers: dict[str, str] | None = None) -> bytes:
    lines = [f"HTTP/1.1 {status}", "Content-Type: application/json", *(f"{k}: {v}" for k, v in (headers or {}).items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _drip_body() -> Iterator[bytes]:
    yield _head(headers={"Content-Length": "100000"})
    body = json.dumps(completion({"messages": []}, {"role": "assistant", "content": "x" * 99_000})).encode()
    for index in range(int(DRIP_SECONDS / 0.25)):
        yield body[index:index + 1]
        time.sleep(0.25)


def _drip_headers() -> Iterator[bytes]:
    yield b"HTTP/1.1 200 OK\r\n"
    for index in range(int(DRIP_SECONDS / 0.25)):
        yield f"X-Drip-{index}: 1\r\n".encode()
        time.sleep(0.25)


@functools.lru_cache(maxsize=1)
def _bomb() -> bytes:
    """1.2 GB of JSON text (a chat completion whose content is zeros) gzipped to ~1.2 MB, a
    valid gzip file. Made in a second: each 1 MB block is compressed after a full flush
    (which resets the compressor's state), so every block after the first compresses to
    the same bytes, computed once."""
    prefix = (b'{"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": '
              b'{"role": "assistant", "content": "')
    suffix, block, blocks = b'"}}]}', b"0" * (1 << 20), 1200
    packer = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    first = packer.compress(prefix) + packer.compress(block) + packer.flush(zlib.Z_FULL_FLUSH)
    repeated = packer.compress(block) + packer.flush(zlib.Z_FULL_FLUSH)
    last = packer.compress(suffix) + packer.flush()
    crc = zlib.crc32(prefix)
    for _ in range(blocks):
        crc = zlib.crc32(block, crc)
    crc = zlib.crc32(suffix, crc)
    size = len(prefix) + blocks * len(block) + len(suffix)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    trailer = crc.to_bytes(4, "little") + (size % (1 << 32)).to_bytes(4, "little")
    return header + first + repeated * (blocks - 1) + last + trailer


def _gzip_bomb() -> Iterator[bytes]:
    bomb = _bomb()
    yield _head(headers={"Content-Encoding": "gzip", "Content-Length": str(len(bomb))})
    for start in range(0, len(bomb), 1 << 16):
        yield bomb[start:start + (1 << 16)]


def _huge_body() -> Iterator[bytes]:
    """600 MB announced and streamed (one 1 MB block, sent again and again)."""
    yield _head(headers={"Content-Length": str(600 << 20)})
    yield b'{"id": "x", "choices": [{"message": {"role": "assistant", "content": "'
    block = b"y" * (1 << 20)
    for _ in range(600):
        yield block


def _endless_chunks() -> Iterator[bytes]:
    yield _head(headers={"Transfer-Encoding": "chunked"})
    chunk = b"z" * (1 << 16)
    framed = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
    for _ in range(20_000):  # 1.3 GB if nobody stops reading: "endless" for the client
        yield framed


def _raw(stream: Callable[[], Iterator[bytes]]) -> Callable:
    return lambda view: Reply(stream=stream)


def _message(build: Callable) -> Callable:
    return lambda view: Reply(200, build(view))


def _answer(view, message: dict, **fields) -> dict:
    body = completion({"messages": []}, message)
    body.update(fields)
    return body


def _nested(levels: int):
    value: object = 7
    for _ in range(levels):
        value = {"n": value}
    return value


def _calls(count: int):
    return lambda view: _answer(view, tool_calls_message([("pwd", "{}")] * count, view))


def _content_beside_a_call(size: int):
    return lambda view: _answer(view, tool_calls_message([("pwd", "{}")], view, content="c" * size))


def _with_usage(**usage):
    def build(view):
        body = _answer(view, {"role": "assistant", "content": "done"})
        body["usage"].update(usage)
        return body
    return build


def _call_field(**function):
    def build(view):
        message = tool_calls_message([("pwd", "{}")], view)
        call = message["tool_calls"][0]
        for key, value in function.items():
            if key == "id":
                call["id"] = value
            else:
                call["function"][key] = value
        return _answer(view, message)
    return build


def _encoded(encoding: str, body: bytes) -> Callable[[], Iterator[bytes]]:
    def stream() -> Iterator[bytes]:
        yield _head(headers={"Content-Encoding": encoding, "Content-Length": str(len(body))})
        yield body
    return stream


TIMED_OUT = "Request timed out."

#: id -> (hostile policy, the reason the hostile entry's result line gives)
CASES: dict[str, tuple[Callable, str]] = {
    "slow_drip_body": (_raw(_drip_body), TIMED_OUT),
    "slow_drip_headers": (_raw(_drip_headers), TIMED_OUT),
    "gzip_bomb": (_raw(_gzip_bomb), TOO_LARGE),
    "body_600_mb": (_raw(_huge_body), TOO_LARGE),
    "endless_chunked_stream": (_raw(_endless_chunks), TOO_LARGE),
    "brotli_not_asked_for": (_raw(_encoded("br", b"\x0b\x02\x80{}\x03")),
                             "the answer uses the content encoding 'br', which was not asked for"),
    "corrupt_gzip": (_raw(_encoded("gzip", b"\x1f\x8b\x08\x00garbage-garbage")), "the answer's gzip data is corrupt"),
    "content_40_mb_beside_one_call": (_message(_content_beside_a_call(40 << 20)), TOO_LARGE),
    # Under the answer size, but each step re-sends it: the entry's budget ends it.
    "content_12_mb_beside_one_call_each_step": (
        _message(_content_beside_a_call(12 << 20)),
        "resource budget 'generate_reply_characters' exceeded"),
    "tool_calls_5000": (_message(_calls(5000)),
                        f"the answer has 5,000 tool calls, more than {limits.MAX_TOOL_CALLS_PER_ANSWER:,}"),
    "tool_calls_100_each_step": (_message(_calls(100)), "resource budget 'generate_tool_calls' exceeded"),
    "usage_nested_400_levels": (_message(_with_usage(prompt_tokens=_nested(400))),
                                f"the answer nests deeper than {limits.MAX_ANSWER_DEPTH} levels"),
    "usage_a_string": (_message(_with_usage(completion_tokens="twelve")),
                       "the answer's usage.completion_tokens is a string, not an int"),
    "usage_a_float": (_message(_with_usage(prompt_tokens=1.5)),
                      "the answer's usage.prompt_tokens is a float, not an int"),
    "usage_a_shallow_object": (_message(_with_usage(prompt_tokens={"a": [1]})),
                               "the answer's usage.prompt_tokens is a JSON object, not an int"),
    "tool_call_id_a_number": (_message(_call_field(id=5)),
                              "the answer's tool call 0 has an id that is an int, not a string"),
    "tool_call_name_a_number": (_message(_call_field(name=7)),
                                "the answer's tool call 0 has a name that is an int, not a string"),
    "tool_call_arguments_an_array": (_message(_call_field(arguments=[1, 2])),
                                     "the answer's tool call 0 has arguments that are a JSON array, not a string"),
}


def _policy(hostile: Callable) -> Callable:
    def policy(view):
        if view.entry_id == HOSTILE:
            return hostile(view)
        return truth_policy(view)
    return policy


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def _run_capped(command: list[str], cwd: Path) -> dict:
    """The command in a child under the memory cap; its exit status, output, peak RSS
    (bytes) and time. Killed past TIME_LIMIT."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    env = {key: value for key, value in env.items() if not key.upper().endswith("_PROXY")}
    out, err = cwd / "stdout", cwd / "stderr"
    started = time.monotonic()
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        child = subprocess.Popen(command, cwd=cwd, env=env, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL,
                                 preexec_fn=_limit_memory)
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - started > TIME_LIMIT:
                os.kill(child.pid, signal.SIGKILL)
                pid, status, usage = os.wait4(child.pid, 0)
                break
            time.sleep(0.1)
    child.returncode = os.waitstatus_to_exitcode(status)
    return {"returncode": child.returncode, "elapsed": time.monotonic() - started,
            "peak": usage.ru_maxrss * 1024, "stdout": out.read_text("utf-8", "replace"),
            "stderr": err.read_text("utf-8", "replace")}


@pytest.fixture(scope="module")
def dataset():
    return load_dataset()


@pytest.mark.parametrize("hostile, reason", list(CASES.values()), ids=list(CASES))
def test_a_hostile_answer_fails_its_entry_only(dataset, tmp_path, hostile, reason):
    _bomb()  # made (once) before the clock of any request starts
    script = EntryScript(dataset, dataset.ids(BASE), "fc", _policy(hostile))
    with ScriptedServer(script) as server:
        run = _run_capped([sys.executable, "-m", "bfcl_safe", "generate", "--model", MODEL, "--fc",
                           "--base-url", server.base_url, "--result-dir", str(tmp_path / "result"),
                           "--score-dir", str(tmp_path / "score"), "--ids", ",".join(IDS), "--evaluate",
                           "--timeout", str(DEADLINE), "--max-retries", "0", "--data", str(dataset.location)],
                          tmp_path)
        assert server.failures == []
    assert run["elapsed"] < TIME_LIMIT, f"killed after {TIME_LIMIT} s: {run['stderr'][-2000:]}"
    assert run["returncode"] == 0, run["stderr"][-3000:]
    assert "Traceback" not in run["stderr"]
    assert run["peak"] < MEMORY_BOUND, f"peak {run['peak'] / 2 ** 20:.0f} MiB"
    lines = {line["id"]: line for line in map(json.loads, result_path(tmp_path / "result", "hostile_model", BASE)
                                               .read_text(encoding="utf-8").splitlines())}
    assert sorted(lines) == sorted(IDS)
    assert isinstance(lines[HOSTILE]["result"], str)
    assert lines[HOSTILE]["result"].startswith(f"Error during inference: {reason}"), lines[HOSTILE]["result"][:300]
    for entry_id in IDS:
        if entry_id != HOSTILE:
            assert isinstance(lines[entry_id]["result"], list), lines[entry_id]["result"][:300]
    score = (tmp_path / "score" / "hostile_model" / "multi_turn" / f"BFCL_v4_{BASE}_score.json").read_text()
    header, *failed = map(json.loads, score.splitlines())
    assert header["total_count"] == 3 and header["correct_count"] == 2, header
    assert [record["id"] for record in failed] == [HOSTILE]
    assert failed[0]["error"]["error_type"] == "multi_turn:inference_error"


def _content_for_steps(size: int, steps: int):
    """The first turn's first ``steps`` answers: ``size`` characters of content beside one
    call; then text without a call (the turn ends); later turns: the ground truth."""
    def build(view):
        if view.turn == 0 and view.step < steps:
            return _answer(view, tool_calls_message([("pwd", "{}")], view, content="c" * size))
        if view.turn == 0:
            return _answer(view, {"role": "assistant", "content": "done"})
        return _answer(view, truth_policy(view))
    return build


def _generate_capped(dataset, tmp_path, hostile: Callable, *flags: str) -> tuple[dict, dict]:
    script = EntryScript(dataset, dataset.ids(BASE), "fc", _policy(hostile))
    with ScriptedServer(script) as server:
        run = _run_capped([sys.executable, "-m", "bfcl_safe", "generate", "--model", MODEL, "--fc",
                           "--base-url", server.base_url, "--result-dir", str(tmp_path / "result"),
                           "--ids", ",".join(IDS), "--timeout", str(DEADLINE), "--max-retries", "0",
                           "--data", str(dataset.location), *flags], tmp_path)
        assert server.failures == []
    assert run["returncode"] == 0, run["stderr"][-3000:]
    assert run["elapsed"] < TIME_LIMIT and run["peak"] < MEMORY_BOUND, (run["elapsed"], run["peak"])
    path = result_path(tmp_path / "result", "hostile_model", BASE)
    text = path.read_text(encoding="utf-8")
    assert max(map(len, text.splitlines())) <= limits.MAX_RESULT_LINE_CHARS
    return run, {line["id"]: line for line in map(json.loads, text.splitlines())}


def test_the_input_log_is_charged(dataset, tmp_path):
    """--include-input-log writes the whole chat at every step: 2 MB of content beside a
    call at each of 20 steps would log ~420 MB; the entry's budget ends it at 32 MiB, and
    the two other entries keep their (input-logged) lines."""
    _, lines = _generate_capped(dataset, tmp_path, _message(_content_for_steps(2 << 20, 20)), "--include-input-log")
    assert lines[HOSTILE]["result"].startswith(
        "Error during inference: resource budget 'generate_input_log_characters' exceeded"), lines[HOSTILE]["result"]
    for entry_id in IDS:
        if entry_id != HOSTILE:
            log = lines[entry_id]["inference_log"]
            assert any(item.get("role") == "inference_input" for turn in log if isinstance(turn, dict)
                       for step in turn.values() if isinstance(step, list) for item in step)


def _text_each_turn(size: int):
    """Every turn's first answer: ``size`` characters of text and no call (the turn ends)."""
    return lambda view: _answer(view, {"role": "assistant", "content": "t" * size})


def test_a_line_too_long_to_read_back_is_an_inference_error(dataset, tmp_path):
    """Text answers of 4.75 M characters, one a turn for four turns (19 M characters,
    within the reply budget), appear twice in the result line (the step and its log): 38
    M characters, more than a result file's line may have. The entry's line says so
    instead, and the file stays readable whole."""
    turns = len(dataset.entry(HOSTILE)["question"])
    _, lines = _generate_capped(dataset, tmp_path, _message(_text_each_turn(19_000_000 // turns)))
    assert lines[HOSTILE]["result"].startswith("Error during inference: the result line would be "), \
        str(lines[HOSTILE]["result"])[:300]
    assert f"more than the {limits.MAX_RESULT_LINE_CHARS:,}" in lines[HOSTILE]["result"]
    for entry_id in IDS:
        if entry_id != HOSTILE:
            assert isinstance(lines[entry_id]["result"], list)


def test_the_deadline_is_total_not_per_read(dataset, tmp_path):
    """A body dripping a byte every 0.25 s never waits a whole read timeout, yet the
    request ends at its deadline: within a few seconds of it, not DRIP_SECONDS."""
    script = EntryScript(dataset, dataset.ids(BASE), "fc", _policy(_raw(_drip_body)))
    with ScriptedServer(script) as server:
        started = time.monotonic()
        run = _run_capped([sys.executable, "-m", "bfcl_safe", "generate", "--model", MODEL, "--fc",
                           "--base-url", server.base_url, "--result-dir", str(tmp_path / "result"),
                           "--ids", HOSTILE, "--timeout", "2", "--max-retries", "0",
                           "--data", str(dataset.location)], tmp_path)
    assert run["returncode"] == 0, run["stderr"][-2000:]
    assert time.monotonic() - started < DRIP_SECONDS / 2
    (line,) = map(json.loads, result_path(tmp_path / "result", "hostile_model", BASE).read_text().splitlines())
    assert line["result"] == f"Error during inference: {TIMED_OUT}"


# --------------------------------------------------------------------------- the body reader, in process


def _gzip(data: bytes) -> bytes:
    packer = zlib.compressobj(6, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    return packer.compress(data) + packer.flush()


def _deflate(data: bytes, raw: bool) -> bytes:
    packer = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS if raw else zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


def _pieces(data: bytes, size: int = 7) -> list[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)]


BODY = json.dumps({"choices": [{"message": {"content": "é" * 300}}]}).encode()

READ_CASES = {
    "identity": ([], BODY),
    "gzip": (["gzip"], _gzip(BODY)),
    "x_gzip": (["x-gzip"], _gzip(BODY)),
    "deflate_zlib": (["deflate"], _deflate(BODY, raw=False)),
    "deflate_raw": (["deflate"], _deflate(BODY, raw=True)),
    "gzip_then_deflate": (["gzip", "deflate"], _deflate(_gzip(BODY), raw=False)),
}


@pytest.mark.parametrize("encodings, data", list(READ_CASES.values()), ids=list(READ_CASES))
def test_the_body_is_read_whole_through_its_encodings(encodings, data):
    from bfcl_safe.generate.client import read_body

    assert read_body(_pieces(data), encodings, len(BODY)) == BODY


@pytest.mark.parametrize("encodings, data", list(READ_CASES.values()), ids=list(READ_CASES))
def test_one_byte_past_the_limit_is_refused_in_every_encoding(encodings, data):
    from bfcl_safe.generate.client import AnswerRefused, read_body

    with pytest.raises(AnswerRefused, match="larger than"):
        read_body(_pieces(data), encodings, len(BODY) - 1)


def test_a_bomb_is_refused_after_reading_little_of_it():
    from bfcl_safe.generate.client import AnswerRefused, read_body

    bomb = _bomb()
    consumed = []

    def chunks():
        for start in range(0, len(bomb), 1 << 12):
            consumed.append(1 << 12)
            yield bomb[start:start + (1 << 12)]

    with pytest.raises(AnswerRefused, match="larger than 1,048,576 bytes"):
        read_body(chunks(), ["gzip"], 1 << 20)
    assert sum(consumed) < 64 << 10  # 1 MB inflated from a few KB; the other 1.2 MB never read


def test_the_environment_proxy_is_used_bounded_and_no_proxy_honoured(monkeypatch):
    """The bounded transport is the only way out: it takes the environment's proxy itself
    (httpx's own proxy transports, unbounded, are not mounted)."""
    from bfcl_safe.generate.client import _environment_proxy

    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy",
                 "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert _environment_proxy("http://model.example:8000/v1") is None
    monkeypatch.setenv("http_proxy", "http://proxy.example:3128")
    monkeypatch.setenv("no_proxy", "localhost,127.0.0.1")
    assert _environment_proxy("http://model.example:8000/v1") == "http://proxy.example:3128"
    assert _environment_proxy("https://model.example/v1") is None
    assert _environment_proxy("http://127.0.0.1:8000/v1") is None
