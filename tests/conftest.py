"""Shared test helpers: a scriptable loopback HTTP server for the client tests."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


class ScriptedServer:
    """A loopback HTTP server that answers each POST with the next scripted response.

    A response is (status, body, headers) where body is a dict (sent as JSON), str or bytes, or a
    callable handler(request_handler) for behaviours such as hanging or dripping bytes.
    """

    def __init__(self):
        self.responses: list = []
        self.requests: list[dict] = []  # each: {"path", "headers", "json"}
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                outer.requests.append({"path": self.path, "headers": dict(self.headers), "json": body})
                response = outer.responses.pop(0) if len(outer.responses) > 1 else outer.responses[0]
                if callable(response):
                    response(self)
                    return
                status, payload, headers = (response + ({},))[:3] if len(response) == 2 else response
                if isinstance(payload, dict):
                    payload = json.dumps(payload).encode()
                elif isinstance(payload, str):
                    payload = payload.encode()
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                if "Content-Type" not in headers:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1/chat/completions"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def reply(self, *responses) -> ScriptedServer:
        self.responses = list(responses)
        return self

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def completion(content: str | None = "Thought: done\nFinal Answer: ok", finish_reason: str = "stop",
               usage: dict | None = None, **message_extra) -> dict:
    """A minimal, valid Chat Completions body."""
    message = {"role": "assistant", "content": content, **message_extra}
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": "test-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": usage if usage is not None else {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


@pytest.fixture
def scripted_server():
    server = ScriptedServer()
    yield server
    server.close()
