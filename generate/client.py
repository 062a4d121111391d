"""The chat-completions client: the official ``openai`` SDK, called as BFCL's
OpenAI-compatible handler calls it, with retries.

Two layers of retries, as in BFCL:

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

import random
import threading
import time
from typing import Any, Callable

import attrs

from bfcl_safe.interp.errors import BfclSafeError


class ClientUnavailable(BfclSafeError, ImportError):
    """The ``openai`` package is not installed (``pip install 'bfcl-safe[generate]'``)."""


def _openai():
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
    #: Seconds before one request times out (the SDK's default: 600).
    timeout: float = 600.0

    def wait(self, attempt: int, rng: random.Random) -> float:
        """Seconds to wait before retry ``attempt`` (1, 2, ...): uniform between
        ``min_wait`` and ``min(max_wait, 2 ** attempt)``, at least ``min_wait``
        (tenacity's ``wait_random_exponential(min, max)``)."""
        high = min(self.max_wait, max(self.min_wait, 2.0 ** attempt))
        return max(self.min_wait, rng.uniform(0, high))


class ChatClient:
    """``complete(messages, tools)`` -> ``(ChatCompletion, seconds)`` against one endpoint."""

    def __init__(self, model: str, *, base_url: str, api_key: str | None, temperature: float = 0.001,
                 retry: RetryPolicy | None = None, default_headers: dict | None = None,
                 sleep: Callable[[float], None] = time.sleep, on_retry: Callable[[str], None] | None = None):
        openai = _openai()
        self.retry = retry or RetryPolicy()
        self.model = model
        self.temperature = temperature
        # The SDK insists on a key; local servers (vLLM, llama.cpp) take any.
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key or "EMPTY", max_retries=self.retry.max_retries,
                                     timeout=self.retry.timeout, default_headers=default_headers)
        self._rate_limit_error = openai.RateLimitError
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
                response = self._client.chat.completions.create(**kwargs)
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
            return response, time.time() - start

    def close(self) -> None:
        self._client.close()
