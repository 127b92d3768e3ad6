"""A loopback Anthropic Messages API server that replays scripted model turns.

Tests point the real ``anthropic`` SDK at it through ANTHROPIC_BASE_URL. It implements
``POST /v1/messages`` both as plain JSON and as server-sent events (message_start,
content_block_start/delta/stop, message_delta, message_stop, error), including tool use, and
records every request it receives (JSON body and headers) for the tests to inspect.

A script is a list of ``Turn`` objects served in order, one per request:

- ``Turn.text("...")`` / ``Turn.tools([...])``: a normal assistant reply;
- ``Turn.error(429, "rate_limit_error")``: an HTTP error response (with retry-after 0);
- ``Turn(..., fail_mid_stream="overloaded_error")``: streams part of the reply then an SSE error;
- ``Turn(..., stall_after_events=N)``: sends N events then hangs (for cancellation tests).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Turn:
    content: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str = "end_turn"
    input_tokens: int = 1000
    output_tokens: int = 200
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    status: int = 200
    error_type: str | None = None
    fail_mid_stream: str | None = None
    stall_after_events: int | None = None

    @classmethod
    def text(cls, text: str, **kwargs: Any) -> Turn:
        return cls(content=[{"type": "text", "text": text}], **kwargs)

    @classmethod
    def tools(cls, calls: list[tuple[str, dict[str, Any]]], text: str = "", **kwargs: Any) -> Turn:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        for name, args in calls:
            blocks.append({"type": "tool_use", "id": f"toolu_{next(_ids)}", "name": name, "input": args})
        return cls(content=blocks, stop_reason="tool_use", **kwargs)

    @classmethod
    def error(cls, status: int, error_type: str) -> Turn:
        return cls(status=status, error_type=error_type)


_ids = itertools.count(1)


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class MessagesServer:
    """Start with ``with MessagesServer(script) as server:``; ``server.base_url`` for the SDK."""

    def __init__(self, script: list[Turn] | None = None, *, fallback: Turn | None = None) -> None:
        self.script: list[Turn] = list(script or [])
        self.fallback = fallback  # served whenever the script is empty (open-ended engine runs)
        self.requests: list[RecordedRequest] = []
        self.stalled = threading.Event()  # set when a stalled turn starts hanging
        self.release = threading.Event()  # set to let stalled handlers finish
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def add(self, *turns: Turn) -> None:
        with self._lock:
            self.script.extend(turns)

    def __enter__(self) -> MessagesServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def _next_turn(self) -> Turn:
        with self._lock:
            if not self.script:
                if self.fallback is not None:
                    return self.fallback
                return Turn.error(500, "api_error")  # the script ran out: a loud, retryable failure
            return self.script.pop(0)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests.append(
                        RecordedRequest(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                    )
                if not self.path.startswith("/v1/messages"):
                    self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": "no"}})
                    return
                turn = server._next_turn()
                if turn.status != 200:
                    payload = {"type": "error", "error": {"type": turn.error_type, "message": "scripted"}}
                    self._json(turn.status, payload, {"retry-after": "0"})
                    return
                if body.get("stream"):
                    self._stream(turn, body)
                else:
                    self._json(200, _message(turn, body, with_content=True))

            def _json(
                self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
            ) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.send_header("request-id", f"req_{next(_ids)}")
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, turn: Turn, body: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                self.close_connection = True
                for i, (name, data) in enumerate(_events(turn, body)):
                    if turn.stall_after_events is not None and i >= turn.stall_after_events:
                        server.stalled.set()
                        server.release.wait(30)
                        return
                    try:
                        self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                        self.wfile.flush()
                    except (BrokenPipeError, ConnectionResetError):
                        return
                    time.sleep(0.001)

        return Handler


def _message(turn: Turn, body: dict[str, Any], *, with_content: bool) -> dict[str, Any]:
    return {
        "id": f"msg_{next(_ids)}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "unknown"),
        "content": turn.content if with_content else [],
        "stop_reason": turn.stop_reason if with_content else None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": turn.input_tokens,
            "output_tokens": turn.output_tokens if with_content else 1,
            "cache_creation_input_tokens": turn.cache_creation_input_tokens,
            "cache_read_input_tokens": turn.cache_read_input_tokens,
        },
    }


def _events(turn: Turn, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": _message(turn, body, with_content=False)})
    ]
    for index, block in enumerate(turn.content):
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            text = block["text"]
            chunks = [text[i : i + 40] for i in range(0, len(text), 40)] or [""]
            deltas = [{"type": "text_delta", "text": c} for c in chunks]
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            raw = json.dumps(block["input"])
            deltas = [
                {"type": "input_json_delta", "partial_json": raw[i : i + 40]} for i in range(0, len(raw), 40)
            ]
        events.append(
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": start})
        )
        for delta in deltas:
            events.append(
                ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
            )
        if turn.fail_mid_stream and index == 0:
            events.append(
                ("error", {"type": "error", "error": {"type": turn.fail_mid_stream, "message": "scripted"}})
            )
            return events
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": turn.stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": turn.output_tokens},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events
