"""Lesson 24's MCP server over HTTP answers only programs of the account that started it (mcp_guards.LoopbackGuard).

On the course's JupyterHub every learner is a system account of her own, all on one loopback: another learner's
program is "this machine" too, and it read a learner's orders and wrote a refund into her shop, answering the
refund's question itself. Where the system does not say whose a connection is (no /proc/net), the server answers
every program of this machine, as it did.
"""

from __future__ import annotations

import json
import os
import signal

import pytest
import requests

from tests.conftest import PATIENCE, ServerProcess
from tests.other_account import needs_root, run_as_another_account
from tinyagent.clock import fixed_clock
from tinyagent.hosting import peer_account
from tinyagent.shop import Shop, shop_registry
from tinyagent.toolkit import mcp_guards
from tinyagent.toolkit.mcp_client import McpConnection
from tinyagent.toolkit.mcp_server import McpHttpServer

NOW = "2026-06-30T19:05:23"
ACCEPT = {"Accept": "application/json, text/event-stream"}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
REFUND = {"orderId": "88231", "reason": "planted"}

# Another learner's program: the official SDK's client, in both of its ways to open (2026-07-28, where the question
# comes back as the call's result, and initialize with elicitation/create), says yes to the refund's question
# itself; and one plain JSON-RPC POST, to read the server's answer as it is sent.
ANOTHER_LEARNERS_CLIENT = """
import http.client, json, sys
import anyio
import anyio._backends._asyncio
import encodings.idna
import mcp_types as types
from mcp import Client

url, port, refund, initialize = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4]


async def yes(ctx, params):
    return types.ElicitResult(action="accept", content={"approve": True})


async def use(mode):
    try:
        async with Client(url, mode=mode, elicitation_callback=yes, read_timeout_seconds=30) as client:
            order = await client.call_tool("queryOrder", {"orderId": "88231"})
            refunded = await client.call_tool("applyRefund", refund)
            return {"order": order.content[0].text, "refund": refunded.content[0].text}
    except Exception as exc:
        while isinstance(exc, BaseExceptionGroup):
            exc = exc.exceptions[0]
        return {"refused": f"{type(exc).__name__}: {exc}"}


become_another_account()
said = {mode: anyio.run(use, mode) for mode in ("auto", "legacy")}
plain = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
plain.request("POST", "/mcp", initialize, {"Content-Type": "application/json",
                                           "Accept": "application/json, text/event-stream"})
answer = plain.getresponse()
said["plain"] = {"status": answer.status, "type": answer.getheader("Content-Type"), "body": answer.read().decode()}
print(json.dumps(said))
"""


@pytest.fixture
def shop():
    clock = fixed_clock(NOW)
    with Shop(":memory:", clock=clock) as shop:
        yield shop, shop_registry(shop, clock)


@needs_root
def test_a_program_of_another_account_of_this_machine_reads_and_refunds_nothing(shop):
    with McpHttpServer(shop[1]) as server:
        said = json.loads(run_as_another_account(ANOTHER_LEARNERS_CLIENT, server.url, str(server.port),
                                                 json.dumps(REFUND), json.dumps(INITIALIZE)))
        for mode in ("auto", "legacy"):
            # refused by the server (the SDK's error for an HTTP error), not by a failure of the program itself
            assert list(said[mode]) == ["refused"] and said[mode]["refused"].startswith("MCPError"), said
        plain = said["plain"]
        assert (plain["status"], plain["type"]) == (403, "application/json") and "\n" not in plain["body"], plain
        message = json.loads(plain["body"])["error"]
        assert "only programs of the account that started it" in message and "another account" in message
        assert shop[0].refunds() == []
        # This test's own account, which started the server, is served as before.
        with McpConnection.http(server.url) as connection:
            order = connection.call_tool("queryOrder", {"orderId": "88231"})
        assert json.loads(order.content[0].text)["trackingNo"] == "SF1234567890"


def initialize(server: McpHttpServer) -> requests.Response:
    return requests.post(server.url, json=INITIALIZE, headers=ACCEPT, timeout=PATIENCE)


@pytest.mark.skipif(not peer_account.accounts_can_be_told(), reason="reads /proc/net/tcp (Linux)")
@pytest.mark.parametrize(("account", "says"), [
    (lambda: os.geteuid() + 1, "not another account of this machine"),
    (lambda: None, "cannot tell which account sent this request"),  # a client that closed its end
], ids=["another-account", "account-unknown"])
def test_a_caller_not_known_to_be_this_account_gets_a_json_403(shop, monkeypatch, account, says):
    with McpHttpServer(shop[1]) as server:
        assert initialize(server).status_code == 200  # this account, as /proc/net says
        monkeypatch.setattr(mcp_guards, "peer_uid", lambda client, server: account())
        refused = initialize(server)
        assert refused.status_code == 403 and refused.headers["content-type"] == "application/json"
        message = refused.json()["error"]
        assert says in message and "only programs of the account that started it" in message
        assert "\n" not in refused.text


def test_where_the_system_does_not_say_whose_a_connection_is_every_program_here_is_served(shop, monkeypatch):
    monkeypatch.setattr(peer_account, "TABLES", ("/nonexistent/tcp", "/nonexistent/tcp6"))  # as on macOS, Windows
    with McpHttpServer(shop[1]) as server:
        assert initialize(server).status_code == 200


MCP_SERVER_WHERE_NO_ACCOUNT_IS_SAID = """
import sys
from tinyagent.hosting import peer_account
peer_account.TABLES = ("/nonexistent/tcp", "/nonexistent/tcp6")  # as on macOS or Windows: no /proc/net
from tinyagent.__main__ import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.skipif(not peer_account.accounts_can_be_told(), reason="reads /proc/net/tcp (Linux)")
@pytest.mark.parametrize(("code", "says"), [
    (None, "(Streamable HTTP, this machine only, programs of this account)"),
    (MCP_SERVER_WHERE_NO_ACCOUNT_IS_SAID, ("(Streamable HTTP, this machine only, programs of every account: this "
                                           "system does not say whose a connection is)")),
], ids=["linux", "no-proc-net"])
def test_the_banner_says_whose_programs_the_server_answers(code, says):
    with ServerProcess("mcp-server", "--port", "0", "--now", NOW, code=code) as server:
        assert says in server.wait_for_line("MCP server on")
        assert server.stop(signal.SIGTERM) == 0
