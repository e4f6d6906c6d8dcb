"""A chat-completions server on 127.0.0.1 for judge tests, scriptable per request: answer with a
text, return a status (429, 500, …), hang, or send a body that is not JSON. It speaks just enough
of the protocol for the official `openai` client."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# An action: ("answer", text) | ("status", code) | ("hang", seconds) | ("raw", body) |
# ("echo-auth", code): an error whose body repeats the Authorization header.
Action = tuple[str, Any]
Script = Callable[[dict[str, Any]], Action]


@dataclass
class JudgeServer:
    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)  # used first, in order
    script: Script | None = None  # then this; default: answer {"score": 4}
    lock: threading.Lock = field(default_factory=threading.Lock)
    in_flight: int = 0
    max_in_flight: int = 0  # the most requests being answered at once

    def next_action(self, body: dict[str, Any]) -> Action:
        with self.lock:
            if self.actions:
                return self.actions.pop(0)
        if self.script is not None:
            return self.script(body)
        return ("answer", json.dumps({"score": 4, "rationale": "fine"}))


def completion(model: str, text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


@contextmanager
def judge_server() -> Iterator[JudgeServer]:
    state = JudgeServer(url="")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, code: int, body: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            with state.lock:
                state.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "body": body}
                )
                state.in_flight += 1
                state.max_in_flight = max(state.max_in_flight, state.in_flight)
            try:
                self._act(body)
            finally:
                with state.lock:
                    state.in_flight -= 1

        def _act(self, body: dict[str, Any]) -> None:
            kind, value = state.next_action(body)
            if kind == "answer":
                self._send(200, json.dumps(completion(body.get("model", "m"), value)).encode())
            elif kind == "status":
                error = {"error": {"message": f"scripted {value}", "type": "test"}}
                self._send(value, json.dumps(error).encode(), {"retry-after-ms": "10"})
            elif kind == "hang":
                time.sleep(value)
                with_body = json.dumps(completion("m", '{"score": 1}')).encode()
                with suppress(OSError):
                    self._send(200, with_body)
            elif kind == "raw":
                self._send(200, value.encode())
            elif kind == "echo-auth":
                message = f"bad key {self.headers.get('Authorization')}"
                self._send(value, json.dumps({"error": {"message": message}}).encode())

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def numbered_requests(n: int) -> list[Any]:
    """`n` objective-judge requests whose prompts say "answer number i", each its own draw: a
    script can answer each by its number."""
    from calipers.grading.judges import PromptTemplate
    from calipers.running.judging import JudgeRequest

    template = PromptTemplate.load("objective")
    return [
        JudgeRequest(template, template.render(task=f"answer number {i} please", output=str(i)),
                     f"run\x00t\x00s{i}\x001")
        for i in range(n)
    ]  # fmt: skip
