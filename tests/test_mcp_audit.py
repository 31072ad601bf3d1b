"""Lesson 24's audit: what the MCP server answered wrongly, or not at all, and now answers as the protocol says."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time

import pytest

from tests.conftest import PATIENCE
from tinyagent.clock import fixed_clock
from tinyagent.shop import Shop

NOW = "2026-06-30T19:05:23"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {"elicitation": {}},
                         "clientInfo": {"name": "t", "version": "1"}}}
REFUND_CALL = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
               "params": {"name": "applyRefund", "arguments": {"orderId": "88231", "reason": "faulty"}}}


class StdioServer:
    """`python -m tinyagent mcp-server` over stdio, spoken to one JSON line at a time."""

    def __init__(self, db: str):
        self.process = subprocess.Popen([sys.executable, "-m", "tinyagent", "mcp-server", "--now", NOW, "--db", db],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True)
        self.lines: queue.Queue[str] = queue.Queue()  # read by a thread: select() misses lines already buffered
        threading.Thread(target=self._read, daemon=True).start()
        self.send(INITIALIZE)
        assert self.answers(1)[0]["id"] == 1
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line)

    def send(self, message: dict) -> None:
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def answers(self, count: int, wait_s: float = 20) -> list[dict]:
        """The next `count` lines, or fewer if none comes for `wait_s` seconds."""
        got: list[dict] = []
        while len(got) < count:
            try:
                got.append(json.loads(self.lines.get(timeout=wait_s)))
            except queue.Empty:
                break
        return got

    def close(self) -> None:
        self.process.stdin.close()
        try:
            self.process.wait(PATIENCE)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            self.process.stdout.close()
            self.process.stderr.close()


@pytest.fixture
def stdio_server(tmp_path):
    db = str(tmp_path / "shop.db")
    server = StdioServer(db)
    try:
        yield server, db
    finally:
        server.close()


def refunds(db: str) -> list:
    with Shop(db, clock=fixed_clock(NOW)) as shop:
        return shop.refunds()


def test_over_stdio_an_id_still_in_flight_is_refused_and_the_first_call_can_still_be_cancelled(stdio_server):
    # The SDK answered the ping with id 7, and the call's entry under 7 was gone: the cancel found nothing, and a
    # yes that came after it ran the refund the client had cancelled.
    server, db = stdio_server
    server.send(REFUND_CALL)
    question = server.answers(1)[0]
    assert question["method"] == "elicitation/create"
    server.send({"jsonrpc": "2.0", "id": 7, "method": "ping"})
    refused = server.answers(1)[0]
    assert refused["id"] is None and refused["error"]["code"] == -32600, refused
    assert "already in use" in refused["error"]["message"]
    server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}})
    time.sleep(0.3)
    server.send({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"approve": True}}})
    server.send({"jsonrpc": "2.0", "id": 8, "method": "ping"})
    later = [answer for answer in server.answers(3, wait_s=2) if "method" not in answer]
    assert [answer["id"] for answer in later] == [8], later  # the cancelled call is never answered
    server.send({"jsonrpc": "2.0", "id": 7, "method": "ping"})  # and its id is free again
    assert server.answers(1)[0] == {"jsonrpc": "2.0", "id": 7, "result": {}}
    server.close()
    assert refunds(db) == []


@pytest.mark.parametrize("request_id", [None, 1.5, True, {"a": 1}], ids=["null", "float", "bool", "object"])
def test_over_stdio_a_request_whose_id_is_not_a_string_or_an_integer_is_answered_with_id_null(stdio_server,
                                                                                             request_id):
    # The SDK took it for a notification: no answer at all, and the client waited for ever.
    server, _ = stdio_server
    server.send({"jsonrpc": "2.0", "id": request_id, "method": "ping"})
    server.send({"jsonrpc": "2.0", "id": 5, "method": "ping"})
    answers = server.answers(2)
    assert [answer["id"] for answer in answers] == [None, 5], answers
    assert answers[0]["error"]["code"] == -32600
    assert "must be a string or an integer" in answers[0]["error"]["message"]
