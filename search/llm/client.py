"""One streamed Messages API call with retries, cancellation, a ledger row per attempt and a budget.

The SDK's own retries are turned off (``max_retries=0``) so that every attempt, failed or not, is
one ledger row with its tokens and latency, and so that errors that arrive *inside* a stream
(an SSE ``error`` event such as ``overloaded_error``) are retried the same way as HTTP 429/5xx.
The API key is held by the SDK client only; every message this module produces is redacted.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import anthropic
from kernelevolve.search.llm.pricing import cost_usd, price_for

DEFAULT_MODEL = "claude-sonnet-5-5"
RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504, 529}
RETRYABLE_ERROR_TYPES = {"overloaded_error", "rate_limit_error", "api_error", "timeout_error"}


class LlmError(Exception):
    """The call failed for good (after retries, or not retryable). The message is redacted."""


class LlmCancelled(Exception):
    """The caller's cancel event fired while a call was in flight."""


class BudgetExhausted(Exception):
    """The run's LLM budget is spent: no further calls are made."""


@dataclass
class LlmCall:
    """One attempt at one API call: a row of the run's ledger."""

    run_id: int
    model: str
    purpose: str  # "episode" (a tool-using turn) or "diagnosis"
    status: str  # "ok", "retried", "error", "cancelled"
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    attempt: int = 1
    parent_candidate_id: int | None = None
    candidate_hash: str | None = None
    error: str | None = None
    price_known: bool = True
    request_id: str | None = None


class Ledger(Protocol):
    def record(self, call: LlmCall) -> None: ...

    def spent_usd(self) -> float: ...


class MemoryLedger:
    """A ledger kept in memory (tests, `kb` dry runs); history_llm.HistoryLedger persists it."""

    def __init__(self) -> None:
        self.calls: list[LlmCall] = []

    def record(self, call: LlmCall) -> None:
        self.calls.append(call)

    def spent_usd(self) -> float:
        return sum(c.cost_usd for c in self.calls)


def redact(text: str, secret: str | None) -> str:
    if secret and len(secret) >= 4:
        text = text.replace(secret, "[redacted]")
    return text


@dataclass
class ClientSettings:
    model: str = DEFAULT_MODEL
    max_tokens: int = 8192
    timeout_s: float = 300.0  # per attempt; connect is capped at 10 s
    max_attempts: int = 5
    backoff_s: float = 1.0  # first retry delay; doubles each time, capped at 30 s
    budget_usd: float | None = None


class LlmClient:
    def __init__(
        self,
        api_key: str,
        ledger: Ledger,
        run_id: int,
        settings: ClientSettings | None = None,
        *,
        base_url: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.settings = settings or ClientSettings()
        self.ledger = ledger
        self.run_id = run_id
        self._key = api_key
        self._sleep = sleep
        self._sdk = anthropic.Anthropic(
            api_key=api_key,
            base_url=base_url or os.environ.get("ANTHROPIC_BASE_URL") or None,
            max_retries=0,
            timeout=anthropic.Timeout(self.settings.timeout_s, connect=10.0),
        )

    def redact(self, text: str) -> str:
        """``text`` with this client's API key replaced; for anything that gets stored or shown."""
        return redact(text, self._key)

    @property
    def model(self) -> str:
        return self.settings.model

    def check_budget(self) -> None:
        budget = self.settings.budget_usd
        if budget is not None and self.ledger.spent_usd() >= budget:
            raise BudgetExhausted(
                f"LLM budget spent: ${self.ledger.spent_usd():.4f} of ${budget:.2f} for run {self.run_id}"
            )

    def create(
        self,
        *,
        system: list[dict[str, Any]],
        messages: list[dict[str, Any]],
        tools: Iterable[dict[str, Any]] = (),
        cancel: threading.Event,
        purpose: str = "episode",
        parent_candidate_id: int | None = None,
    ) -> Any:
        """Stream one reply; returns the SDK's final ``Message``. Raises LlmError, LlmCancelled or
        BudgetExhausted; every attempt is recorded in the ledger first."""
        delay = self.settings.backoff_s
        for attempt in range(1, self.settings.max_attempts + 1):
            self.check_budget()
            if cancel.is_set():
                raise LlmCancelled("cancelled before the call")
            call = LlmCall(self.run_id, self.model, purpose, "ok", attempt=attempt)
            call.parent_candidate_id = parent_candidate_id
            started = time.monotonic()
            try:
                message = self._stream_once(system, messages, list(tools), cancel, call)
            except LlmCancelled:
                call.status = "cancelled"
                self._finish(call, started)
                raise
            except Exception as exc:
                if not isinstance(exc, anthropic.APIError) and not _is_transport_error(exc):
                    raise
                retry = _retryable(exc) and attempt < self.settings.max_attempts
                call.status = "retried" if retry else "error"
                call.error = redact(_describe(exc), self._key)
                self._finish(call, started)
                if not retry:
                    raise LlmError(call.error) from None
                if cancel.wait(min(delay, 30.0)):
                    raise LlmCancelled("cancelled while waiting to retry") from None
                delay *= 2
                continue
            self._finish(call, started)
            return message
        raise LlmError("unreachable: retries exhausted")  # pragma: no cover

    def _finish(self, call: LlmCall, started: float) -> None:
        call.latency_s = time.monotonic() - started
        call.cost_usd = cost_usd(
            call.model,
            call.input_tokens,
            call.output_tokens,
            call.cache_creation_input_tokens,
            call.cache_read_input_tokens,
        )
        call.price_known = price_for(call.model)[1]
        self.ledger.record(call)

    def _stream_once(
        self,
        system: list[dict[str, Any]],
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        cancel: threading.Event,
        call: LlmCall,
    ) -> Any:
        """Run the stream on a helper thread so a cancel can abandon a stalled connection at once."""
        box: dict[str, Any] = {}
        done = threading.Event()
        holder: dict[str, Any] = {}

        def pump() -> None:
            try:
                kwargs: dict[str, Any] = {
                    "model": self.model,
                    "max_tokens": self.settings.max_tokens,
                    "system": system,
                    "messages": messages,
                }
                if tools:
                    kwargs["tools"] = tools
                with self._sdk.messages.stream(**kwargs) as stream:
                    holder["stream"] = stream
                    call.request_id = stream.request_id
                    for event in stream:
                        if event.type == "message_start":
                            _take_usage(call, event.message.usage)
                        elif event.type == "message_delta":
                            call.output_tokens = event.usage.output_tokens
                        if cancel.is_set():
                            return
                    box["message"] = stream.get_final_message()
                    _take_usage(call, box["message"].usage)
            except BaseException as exc:  # handed to the caller's thread
                box["error"] = exc
            finally:
                done.set()

        thread = threading.Thread(target=pump, name="kernelevolve-llm-stream", daemon=True)
        thread.start()
        while not done.wait(0.05):
            if cancel.is_set():
                stream = holder.get("stream")
                if stream is not None:
                    with contextlib.suppress(Exception):  # closing a half-read response may race
                        stream.close()
                raise LlmCancelled("cancelled mid-stream")
        if cancel.is_set() and "message" not in box:
            raise LlmCancelled("cancelled mid-stream")
        if "error" in box:
            raise box["error"]
        return box["message"]


def _take_usage(call: LlmCall, usage: Any) -> None:
    call.input_tokens = usage.input_tokens or 0
    call.output_tokens = max(call.output_tokens, usage.output_tokens or 0)
    call.cache_creation_input_tokens = getattr(usage, "cache_creation_input_tokens", 0) or 0
    call.cache_read_input_tokens = getattr(usage, "cache_read_input_tokens", 0) or 0


def _is_transport_error(exc: BaseException) -> bool:
    """A network error raised while a stream is being read (read timeout, dropped connection): the
    SDK wraps these into APIConnectionError only while sending, not during iteration. Matched by
    name so it holds for the SDK's httpx flavour of any version."""
    return any(c.__name__ == "TransportError" and c.__module__.startswith("httpx") for c in type(exc).__mro__)


def _error_type(exc: BaseException) -> str | None:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and isinstance(err.get("type"), str):
            return str(err["type"])
    return None


def _retryable(exc: BaseException) -> bool:
    if isinstance(exc, anthropic.APIConnectionError) or _is_transport_error(exc):  # timeouts included
        return True
    if _error_type(exc) in RETRYABLE_ERROR_TYPES:
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status in RETRYABLE_STATUS or status >= 500)


def _describe(exc: BaseException) -> str:
    if _is_transport_error(exc):
        return f"{type(exc).__name__} (network, mid-stream)"
    status = getattr(exc, "status_code", None)
    kind = _error_type(exc) or type(exc).__name__
    if status == 200:  # an SSE error event inside an accepted stream
        return f"{kind} (mid-stream)"
    return f"{kind} (HTTP {status})" if status else kind
