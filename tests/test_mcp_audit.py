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


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_the_sdks_default_client_is_asked_for_a_yes_and_the_refund_runs(mode):
    # At 2026-07-28 (the SDK Client's default, mode="auto") a server cannot send elicitation/create: every refund
    # failed "asking failed: NoBackChannelError ..." and no person was ever asked.
    import anyio
    import mcp_types as types
    from mcp import Client

    from tinyagent.shop import shop_registry
    from tinyagent.toolkit.mcp_server import McpHttpServer

    asked: list[str] = []

    async def yes(ctx, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})

    async def call(url: str):
        async with Client(url, mode=mode, elicitation_callback=yes, read_timeout_seconds=PATIENCE) as client:
            return await client.call_tool("applyRefund", {"orderId": "88231", "reason": "faulty"})

    clock = fixed_clock(NOW)
    with Shop(":memory:", clock=clock) as shop, McpHttpServer(shop_registry(shop, clock)) as server:
        result = anyio.run(call, server.url)
        assert not result.is_error, result.content[0].text
        assert asked == ['Allow applyRefund {"orderId": "88231", "reason": "faulty"}?']
        assert [refund["orderId"] for refund in shop.refunds()] == ["88231"]


class ClientAt20260728:
    """What RegistryServer.call_tool reads of a client at protocol version 2026-07-28 that declared elicitation."""

    protocol_version = "2026-07-28"

    class session:
        check_client_capability = staticmethod(lambda capabilities: True)


def call_at_2026_07_28(server, order: str, **retry) -> object:
    """`server`'s answer to applyRefund for `order`, with `retry`'s input_responses and request_state if any."""
    import anyio
    import mcp_types as types

    params = types.CallToolRequestParams(name="applyRefund", arguments={"orderId": order, "reason": "x"}, **retry)
    return anyio.run(server.call_tool, ClientAt20260728(), params)


def test_at_2026_07_28_a_yes_to_other_arguments_does_not_run_the_call():
    # The answer comes back with the call: it counts only for the question it answers (request_state).
    import mcp_types as types

    from tinyagent.shop import shop_registry
    from tinyagent.toolkit.mcp_server import RegistryServer

    clock = fixed_clock(NOW)
    with Shop(":memory:", clock=clock) as shop:
        server = RegistryServer(shop_registry(shop, clock))
        question = call_at_2026_07_28(server, "88231")
        assert isinstance(question, types.InputRequiredResult)
        yes = {"approve": types.ElicitResult(action="accept", content={"approve": True})}
        assert isinstance(call_at_2026_07_28(server, "88232", input_responses=yes,
                                             request_state=question.request_state), types.InputRequiredResult)
        assert shop.refunds() == []
        done = call_at_2026_07_28(server, "88231", input_responses=yes, request_state=question.request_state)
        assert not done.is_error and [refund["orderId"] for refund in shop.refunds()] == ["88231"]


def test_at_2026_07_28_a_yes_to_a_question_this_server_never_asked_does_not_run_the_call():
    # request_state was the SHA-256 of the question, which a client could work out and send with its yes in the first
    # call, never asked; and a question of another server (one started before, or beside it) passed for this one's.
    import hashlib

    import mcp_types as types

    from tinyagent.shop import shop_registry
    from tinyagent.toolkit.mcp_server import RegistryServer, yes_question

    clock = fixed_clock(NOW)
    yes = {"approve": types.ElicitResult(action="accept", content={"approve": True})}
    with Shop(":memory:", clock=clock) as shop:
        server, another = RegistryServer(shop_registry(shop, clock)), RegistryServer(shop_registry(shop, clock))
        asked = yes_question(types.CallToolRequestParams(name="applyRefund",
                                                         arguments={"orderId": "88231", "reason": "x"}))
        made_up = hashlib.sha256(asked.encode()).hexdigest()
        elsewhere = call_at_2026_07_28(another, "88231").request_state
        for request_state in (made_up, elsewhere, "é"):  # and one no question ever had, not even in ASCII
            again = call_at_2026_07_28(server, "88231", input_responses=yes, request_state=request_state)
            assert isinstance(again, types.InputRequiredResult), request_state
        assert shop.refunds() == []


def test_a_host_that_fails_to_ask_is_said_without_the_sdks_class_name():
    # "asking failed: NoBackChannelError: Cannot send ..." named an SDK class to the model.
    import anyio
    import mcp_types as types

    from tinyagent.shop import shop_registry
    from tinyagent.toolkit.mcp_server import RegistryServer

    class NoBackChannelError(Exception):
        pass

    class Ctx:
        protocol_version = "2025-06-18"
        request = None
        request_id = 2

        class session:  # a client that declared elicitation, and whose host cannot ask
            check_client_capability = staticmethod(lambda capabilities: True)

            @staticmethod
            async def elicit_form(*args, **kwargs):
                raise NoBackChannelError("Cannot send 'elicitation/create'")

    clock = fixed_clock(NOW)
    with Shop(":memory:", clock=clock) as shop:
        params = types.CallToolRequestParams(name="applyRefund", arguments={"orderId": "88231", "reason": "x"})
        result = anyio.run(RegistryServer(shop_registry(shop, clock)).call_tool, Ctx(), params)
    text = result.content[0].text
    assert result.is_error and "asking failed: Cannot send" in text and "NoBackChannelError" not in text, text


def test_tools_list_with_a_cursor_is_an_invalid_cursor_error(stdio_server):
    # There is never a second page, and a cursor got the whole list again.
    server, _ = stdio_server
    server.send({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"cursor": "page-2"}})
    server.send({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {}})
    answers = {answer["id"]: answer for answer in server.answers(2)}
    assert answers[3]["error"]["code"] == -32602 and "invalid cursor" in answers[3]["error"]["message"], answers[3]
    assert "nextCursor" not in answers[4]["result"] and len(answers[4]["result"]["tools"]) > 1


@pytest.mark.parametrize("batch", [[{"jsonrpc": "2.0", "id": 7, "method": "ping"}], []], ids=["one-ping", "empty"])
def test_a_batch_over_http_is_one_plain_invalid_request(batch):
    # The SDK answered 400 with -32602 and a pydantic validation dump.
    import requests

    from tinyagent.shop import shop_registry
    from tinyagent.toolkit.mcp_server import McpHttpServer

    accept = {"Accept": "application/json, text/event-stream"}
    clock = fixed_clock(NOW)
    with Shop(":memory:", clock=clock) as shop, McpHttpServer(shop_registry(shop, clock)) as server:
        opening = requests.post(server.url, json=INITIALIZE, headers=accept, timeout=PATIENCE)
        session = {**accept, "Mcp-Session-Id": opening.headers["mcp-session-id"]}
        requests.post(server.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session,
                      timeout=PATIENCE)
        reply = requests.post(server.url, json=batch, headers=session, timeout=PATIENCE)
    error = reply.json()["error"]
    assert reply.status_code == 400 and error["code"] == -32600, reply.text
    assert "batch" in error["message"] and "\n" not in error["message"] and "pydantic" not in reply.text
