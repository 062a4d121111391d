"""The chat-completions client: the official ``openai`` SDK, called as BFCL's
OpenAI-compatible handler calls it, with retries, over one bounded HTTP exchange.

**The bounded exchange** (:class:`BoundedTransport`, the SDK's only way to the network):
every byte an endpoint sends is hostile input, so each request has

- a *total* deadline (``RetryPolicy.timeout``): connecting, sending, the headers and the
  body together. The SDK's timeouts are per read (an endpoint sending one byte, or one
  header line, a second would hold a request forever); here every read and write of the
  socket waits at most the time left (:class:`_DeadlineBackend`), so the request ends at
  its deadline whatever the endpoint does. A request past its deadline is a timeout, as
  the SDK's own: retried like one, then ``Request timed out.``;
- a maximum answer size counted *after* decompression
  (:data:`~bfcl_safe.interp.limits.MAX_ANSWER_BYTES`): the body is read here, chunk by
  chunk, and inflated with a bound per call (a gzip bomb, a 600 MB body or an endless
  chunked stream stops at the limit, holding at most the limit in memory); only
  ``gzip`` and ``deflate`` are asked for and accepted;
- the answer's JSON checked before the SDK parses it (:func:`check_answer`): nesting
  depth (:data:`~bfcl_safe.interp.limits.MAX_ANSWER_DEPTH`) and the number of tool calls
  (:data:`~bfcl_safe.interp.limits.MAX_TOOL_CALLS_PER_ANSWER`).

An answer past a bound raises :class:`AnswerRefused` (never retried: the same request
gets the same answer): the entry's result becomes ``Error during inference: {reason}``.
What the accepted answer adds to the conversation is charged to the entry's budget by
:mod:`~bfcl_safe.generate.inference`.

**Retries**, two layers as in BFCL:

- the SDK's own (``max_retries``, default 2): connection errors, timeouts, HTTP 408, 409,
  429 and 5xx, with its exponential backoff (it honours ``Retry-After``);
- then, on HTTP 429 (``RateLimitError``) still failing, BFCL's own backoff: a random
  exponential wait between ``min_wait`` and ``max_wait`` seconds (BFCL: 6 and 120). BFCL
  retries a rate limit forever; here at most ``rate_limit_retries`` times (default 20),
  after which the error ends the entry like any other API error.

An error left after the retries propagates: the entry's result becomes
``"Error during inference: {error}"``, as BFCL writes it.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
import urllib.request
import zlib
from typing import Any, Callable, Iterable, Iterator

import attrs

from bfcl_safe.interp import limits
from bfcl_safe.interp.errors import BfclSafeError


class ClientUnavailable(BfclSafeError, ImportError):
    """The ``openai`` package is not installed (``pip install 'bfcl-safe[generate]'``)."""


class AnswerRefused(BfclSafeError, ValueError):
    """An endpoint's answer broke a bound of the exchange (size, encoding, depth, tool
    calls, a field's type); ``reason`` says which, in words for the result line."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)

    def __reduce__(self) -> tuple:
        return (type(self), (self.reason,))


def _openai() -> Any:
    try:
        import openai
    except ImportError:
        raise ClientUnavailable(
            "bfcl-safe generate needs the openai package: pip install 'bfcl-safe[generate]'"
        ) from None
    return openai


@attrs.define
class RetryPolicy:
    """How transient HTTP errors are retried (see the module docstring)."""

    #: The SDK's own retries of connection errors, timeouts, 408/409/429/5xx.
    max_retries: int = 2
    #: Further retries of HTTP 429 with BFCL's random exponential backoff.
    rate_limit_retries: int = 20
    min_wait: float = 6.0
    max_wait: float = 120.0
    #: Seconds one request may take in all (connect, send, headers, body; the SDK's
    #: default per-read timeout is 600).
    timeout: float = 600.0

    def wait(self, attempt: int, rng: random.Random) -> float:
        """Seconds to wait before retry ``attempt`` (1, 2, ...): uniform between
        ``min_wait`` and ``min(max_wait, 2 ** attempt)``, at least ``min_wait``
        (tenacity's ``wait_random_exponential(min, max)``)."""
        high = min(self.max_wait, max(self.min_wait, 2.0 ** attempt))
        return max(self.min_wait, rng.uniform(0, high))


# --------------------------------------------------------------------------- the deadline


class _Deadline(threading.local):
    """The deadline (``time.monotonic()``) of the request this thread is making, if any."""

    at: float | None = None


_DEADLINE = _Deadline()


def _time_left(timeout: float | None, error: type[Exception]) -> float:
    """``timeout`` cut to the time left before this thread's request deadline; ``error``
    (an httpcore timeout) once it has passed."""
    at = _DEADLINE.at
    if at is None:
        return timeout if timeout is not None else 3600.0
    left = at - time.monotonic()
    if left <= 0:
        raise error("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


def _network() -> tuple[Any, Any]:
    try:
        import httpcore
        import httpx
    except ImportError:
        raise ClientUnavailable(
            "bfcl-safe generate needs the httpx and httpcore packages: pip install 'bfcl-safe[generate]'"
        ) from None
    return httpcore, httpx


def _deadline_backend() -> Any:
    """A httpcore network backend whose every connect, read and write waits at most
    the time left before the request's deadline."""
    _network()  # (httpcore is there, or ClientUnavailable; imported by name for its classes)
    import httpcore

    class _DeadlineStream(httpcore.NetworkStream):
        def __init__(self, inner: Any):
            self._inner = inner

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            return self._inner.read(max_bytes, _time_left(timeout, httpcore.ReadTimeout))

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            self._inner.write(buffer, _time_left(timeout, httpcore.WriteTimeout))

        def close(self) -> None:
            self._inner.close()

        def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                      timeout: float | None = None) -> Any:
            return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname,
                                                         _time_left(timeout, httpcore.ConnectTimeout)))

        def get_extra_info(self, info: str) -> Any:
            return self._inner.get_extra_info(info)

    class _DeadlineBackend(httpcore.NetworkBackend):
        def __init__(self) -> None:
            self._inner = httpcore.SyncBackend()

        def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                        socket_options: Iterable[Any] | None = None) -> Any:
            return _DeadlineStream(self._inner.connect_tcp(host, port, _time_left(timeout, httpcore.ConnectTimeout),
                                                           local_address, socket_options))

        def connect_unix_socket(self, path: str, timeout: float | None = None,
                                socket_options: Iterable[Any] | None = None) -> Any:
            return _DeadlineStream(self._inner.connect_unix_socket(path, _time_left(timeout, httpcore.ConnectTimeout),
                                                                   socket_options))

        def sleep(self, seconds: float) -> None:
            self._inner.sleep(seconds)

    return _DeadlineBackend()


# --------------------------------------------------------------------------- the body


#: Content encodings asked for and accepted (``Accept-Encoding``).
ACCEPTED_ENCODINGS = ("gzip", "deflate")


class _Inflater:
    """One content encoding undone, each call's output bounded."""

    def __init__(self, encoding: str):
        self.encoding = encoding
        self._first = True
        self._object = zlib.decompressobj(zlib.MAX_WBITS | 32 if encoding in ("gzip", "x-gzip") else zlib.MAX_WBITS)
        self.total = 0

    def feed(self, data: bytes, limit: int) -> bytes:
        try:
            out = self._object.decompress(data, limit - self.total + 1)
        except zlib.error:
            if not (self._first and self.encoding == "deflate"):
                raise AnswerRefused(f"the answer's {self.encoding} data is corrupt") from None
            # "deflate" is raw deflate for some servers (as browsers and httpx accept).
            self._object = zlib.decompressobj(-zlib.MAX_WBITS)
            self._first = False
            return self.feed(data, limit)
        self._first = False
        self.total += len(out)
        if self.total > limit:
            raise AnswerRefused(too_large(limit))
        return out


def too_large(limit: int) -> str:
    return f"the answer is larger than {limit:,} bytes (after decompression)"


def _encodings(headers: Iterable[tuple[bytes, bytes]]) -> list[str]:
    """The content encodings of an answer, in the order they were applied."""
    out: list[str] = []
    for name, value in headers:
        if name.lower() == b"content-encoding":
            out.extend(part.strip().lower() for part in value.decode("latin-1").split(",") if part.strip())
    out = [encoding for encoding in out if encoding != "identity"]
    for encoding in out:
        if encoding not in (*ACCEPTED_ENCODINGS, "x-gzip"):
            raise AnswerRefused(f"the answer uses the content encoding {encoding[:40]!r}, which was not asked for")
    return out


def _announced(headers: Iterable[tuple[bytes, bytes]]) -> int:
    """The ``Content-Length`` an answer announces (0 when none, or not a number)."""
    for name, value in headers:
        if name.lower() == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() and len(text) < 20 else 0
    return 0


def read_body(chunks: Iterable[bytes], encodings: list[str], limit: int) -> bytes:
    """The body of an answer from its raw ``chunks``, every encoding undone, at most
    ``limit`` bytes after decompression (:class:`AnswerRefused` past it). Holds the
    decoded body and one chunk at a time."""
    stages = [_Inflater(encoding) for encoding in reversed(encodings)]
    out = bytearray()
    for chunk in chunks:
        if _DEADLINE.at is not None and time.monotonic() > _DEADLINE.at:
            httpcore, _ = _network()
            raise httpcore.ReadTimeout("the request's deadline passed")
        for stage in stages:
            chunk = stage.feed(chunk, limit)
        if len(out) + len(chunk) > limit:
            raise AnswerRefused(too_large(limit))
        out += chunk
    return bytes(out)


# --------------------------------------------------------------------------- the transport


def _mapped_errors() -> Any:
    """httpcore's exceptions as httpx's (what the SDK retries and names)."""
    httpcore, httpx = _network()
    table = [
        (httpcore.ConnectTimeout, httpx.ConnectTimeout), (httpcore.ReadTimeout, httpx.ReadTimeout),
        (httpcore.WriteTimeout, httpx.WriteTimeout), (httpcore.PoolTimeout, httpx.PoolTimeout),
        (httpcore.TimeoutException, httpx.TimeoutException), (httpcore.ConnectError, httpx.ConnectError),
        (httpcore.ReadError, httpx.ReadError), (httpcore.WriteError, httpx.WriteError),
        (httpcore.NetworkError, httpx.NetworkError), (httpcore.ProxyError, httpx.ProxyError),
        (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
        (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
        (httpcore.LocalProtocolError, httpx.LocalProtocolError), (httpcore.ProtocolError, httpx.ProtocolError),
    ]

    @contextlib.contextmanager
    def mapping() -> Iterator[None]:
        try:
            yield
        except Exception as exc:
            for theirs, ours in table:
                if isinstance(exc, theirs):
                    raise ours(str(exc) or type(exc).__name__) from exc
            raise

    return mapping()


def _environment_proxy(base_url: str) -> str | None:
    """The proxy the environment (``HTTP_PROXY``, ``HTTPS_PROXY``, ``NO_PROXY``) names for
    ``base_url``, as the SDK's own client would use it."""
    scheme, _, rest = base_url.partition("://")
    host = rest.split("/", 1)[0].rsplit("@", 1)[-1]
    proxies = urllib.request.getproxies()
    proxy = proxies.get(scheme.lower()) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass(host.split(":", 1)[0]):
        return None
    return proxy


def make_transport(base_url: str, *, max_bytes: int | None = None, deadline: float = 600.0) -> Any:
    """The bounded exchange as an ``httpx`` transport (see the module docstring)."""
    _network()  # (the packages are there, or ClientUnavailable; imported by name for their classes)
    import httpcore
    import httpx
    limit = limits.MAX_ANSWER_BYTES if max_bytes is None else max_bytes
    proxy_url = _environment_proxy(base_url)

    class BoundedTransport(httpx.BaseTransport):
        """Each request: the total deadline, the body read and inflated here within the limit."""

        def __init__(self) -> None:
            self.deadline = deadline
            self.max_bytes = limit
            options: dict[str, Any] = {"proxy": httpcore.Proxy(url=proxy_url)} if proxy_url else {}
            self._pool = httpcore.ConnectionPool(
                ssl_context=httpx.create_ssl_context(), max_connections=1000, max_keepalive_connections=100,
                keepalive_expiry=5.0, network_backend=_deadline_backend(), **options)

        def handle_request(self, request: Any) -> Any:
            headers = [(name, value) for name, value in request.headers.raw if name.lower() != b"accept-encoding"]
            headers.append((b"Accept-Encoding", ", ".join(ACCEPTED_ENCODINGS).encode()))
            url = request.url
            core_request = httpcore.Request(
                method=request.method,
                url=httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path),
                headers=headers, content=request.stream, extensions=request.extensions)
            _DEADLINE.at = time.monotonic() + self.deadline
            try:
                with _mapped_errors():
                    response = self._pool.handle_request(core_request)
                    try:
                        encodings = _encodings(response.headers)
                        if not encodings and _announced(response.headers) > self.max_bytes:
                            raise AnswerRefused(too_large(self.max_bytes))
                        body = read_body(response.iter_stream(), encodings, self.max_bytes)
                    finally:
                        response.close()
            finally:
                _DEADLINE.at = None
            kept = [(name, value) for name, value in response.headers
                    if name.lower() not in (b"content-encoding", b"content-length", b"transfer-encoding")]
            return httpx.Response(response.status, headers=kept, content=body,
                                  extensions={key: value for key, value in response.extensions.items()
                                              if key in ("http_version", "reason_phrase")})

        def close(self) -> None:
            self._pool.close()

    return BoundedTransport()


# --------------------------------------------------------------------------- the answer


def check_answer(body: bytes) -> None:
    """The bounds of an answer's JSON that the SDK does not check: nesting depth and
    the number of tool calls of its first choice (:class:`AnswerRefused`). A body that
    is not JSON, or not shaped like a chat completion, is left to the SDK (it fails as
    BFCL's handler fails on it)."""
    from bfcl_safe.checker.codec import deeper_than, loads_json

    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return
    if deeper_than(text, limits.MAX_ANSWER_DEPTH):
        raise AnswerRefused(f"the answer nests deeper than {limits.MAX_ANSWER_DEPTH} levels")
    try:
        answer = loads_json(text)  # (the depth is bounded above; the SDK parses it again)
    except (ValueError, RecursionError):
        return
    choices = answer.get("choices") if isinstance(answer, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return
    message = choices[0].get("message")
    calls = message.get("tool_calls") if isinstance(message, dict) else None
    if isinstance(calls, list) and len(calls) > limits.MAX_TOOL_CALLS_PER_ANSWER:
        raise AnswerRefused(f"the answer has {len(calls):,} tool calls, more than "
                            f"{limits.MAX_TOOL_CALLS_PER_ANSWER:,}")


class ChatClient:
    """``complete(messages, tools)`` -> ``(ChatCompletion, seconds)`` against one endpoint."""

    def __init__(self, model: str, *, base_url: str, api_key: str | None, temperature: float = 0.001,
                 retry: RetryPolicy | None = None, default_headers: dict | None = None,
                 sleep: Callable[[float], None] = time.sleep, on_retry: Callable[[str], None] | None = None):
        openai = _openai()
        _, httpx = _network()
        self.retry = retry or RetryPolicy()
        self.model = model
        self.temperature = temperature
        # Every request goes through the bounded exchange (no proxy from the environment
        # is mounted by httpx itself: the transport uses it, bounded too).
        self._http = httpx.Client(transport=make_transport(base_url, deadline=self.retry.timeout),
                                  timeout=self.retry.timeout, trust_env=False, follow_redirects=True)
        # The SDK insists on a key; local servers (vLLM, llama.cpp) take any.
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key or "EMPTY", max_retries=self.retry.max_retries,
                                     timeout=self.retry.timeout, default_headers=default_headers,
                                     http_client=self._http)
        self._rate_limit_error = openai.RateLimitError
        self._connection_error = openai.APIConnectionError
        self._sleep = sleep
        self._on_retry = on_retry
        self._rng = random.Random()
        self._lock = threading.Lock()

    def complete(self, messages: list, tools: list | None) -> tuple[Any, float]:
        """One chat completion, as BFCL's handler asks for it: the messages, the model,
        the temperature, ``store=False``, and the tools when there are some."""
        kwargs: dict[str, Any] = {"messages": messages, "model": self.model, "temperature": self.temperature,
                                  "store": False}
        if tools:
            kwargs["tools"] = tools
        attempt = 0
        while True:
            start = time.time()
            try:
                raw = self._client.chat.completions.with_raw_response.create(**kwargs)
            except self._rate_limit_error as exc:
                attempt += 1
                if attempt > self.retry.rate_limit_retries:
                    raise
                with self._lock:
                    delay = self.retry.wait(attempt, self._rng)
                if self._on_retry is not None:
                    self._on_retry(f"rate limited ({exc.status_code}); retry {attempt} in {delay:.1f}s")
                self._sleep(delay)
                continue
            except self._connection_error as exc:
                # (SDKs that wrap every transport error: the refusal, not "Connection error.")
                if isinstance(exc.__cause__, AnswerRefused):
                    raise exc.__cause__ from None
                raise
            check_answer(raw.http_response.content)
            return raw.parse(), time.time() - start

    def close(self) -> None:
        self._client.close()
        self._http.close()
