"""Lesson 24's MCP server: the shop's tools over stdio and Streamable HTTP, driven by the official client."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
from contextlib import ExitStack

import anyio
import mcp_types as types
import pytest
import requests
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.conftest import (
    PATIENCE,
    ServerProcess,
    answered_with_stdout_closed,
    ended_cleanly,
    port_refuses_connections,
)
from tests.serving_process import wait_for
from tests.test_weather_service import raw_reply
from tinyagent.clock import fixed_clock
from tinyagent.serving import connections
from tinyagent.serving.connections import ENDING_BYTES, ENDING_SECONDS
from tinyagent.shop import Shop, shop_registry
from tinyagent.toolkit.mcp_client import McpConnection, mcp_registry
from tinyagent.toolkit.mcp_server import McpHttpServer, input_schema, mcp_tool, shop_server_process

NOW = "2026-06-30T19:05:23"
SERVER_ARGS = ["-m", "tinyagent", "mcp-server", "--now", NOW]
ACCEPT = {"Accept": "application/json, text/event-stream"}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
REFUND_CALL = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "applyRefund", "arguments": {"orderId": "88231", "reason": "faulty"}}}


@pytest.fixture
def shop():
    clock = fixed_clock(NOW)
    with Shop(":memory:", clock=clock) as shop:
        yield shop, shop_registry(shop, clock)


@pytest.fixture
def http_server(shop):
    with McpHttpServer(shop[1]) as server:
        yield server


def test_the_official_client_spawns_the_server_over_stdio_and_lists_and_calls_its_tools(shop):
    registry = shop[1]

    async def talk():
        params = StdioServerParameters(**shop_server_process("--now", NOW))
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            found = await session.call_tool("queryOrder", {"orderId": "88231"})
            missing = await session.call_tool("queryOrder", {"orderId": "99999"})
            return listed, found, missing

    with open(os.devnull, "w") as errlog:  # the server's banner
        listed, found, missing = anyio.run(talk)
    assert [tool.name for tool in listed.tools] == registry.names
    for tool in listed.tools:
        assert tool.input_schema == input_schema(registry.get(tool.name))
        assert set(tool.input_schema["properties"]) == set(registry.get(tool.name).parameters["properties"])
        assert tool.description == registry.get(tool.name).description
    assert not found.is_error and json.loads(found.content[0].text)["trackingNo"] == "SF1234567890"
    # lesson 02's rule over MCP: the tool's failure is a result the model reads, not a JSON-RPC error
    assert missing.is_error and json.loads(missing.content[0].text)["error"] == "订单不存在：99999"


def test_the_tools_hint_what_they_change():
    clock = fixed_clock(NOW)
    with Shop(":memory:", clock=clock) as shop:
        hints = {tool.name: mcp_tool(tool).annotations for tool in shop_registry(shop, clock)}
    assert hints["applyRefund"].read_only_hint is False
    assert hints["queryOrder"].read_only_hint is True


def test_an_unknown_tool_and_a_bad_argument_are_error_results_with_the_observation(http_server):
    with McpConnection.http(http_server.url) as connection:
        unknown = connection.call_tool("cancelOrder", {"orderId": "88231"})
        bad = connection.call_tool("queryOrder", {"orderId": "my order"})
    assert unknown.is_error and json.loads(unknown.content[0].text)["available_tools"][0] == "queryOrder"
    assert bad.is_error and "error" in json.loads(bad.content[0].text)


@pytest.mark.parametrize("answer, refunds", [("yes", 1), ("no", 0), (None, 0)], ids=["yes", "no", "no-ask"])
def test_a_refund_runs_only_after_a_persons_yes(shop, http_server, answer, refunds):
    asked = []

    def person(message: str) -> str:
        asked.append(message)
        return answer

    ask = person if answer is not None else None
    with McpConnection.http(http_server.url, ask=ask) as connection:
        tools = mcp_registry(connection)
        from tinyagent.tools import Action

        result = tools.run(Action("applyRefund", {"orderId": "88231", "reason": "faulty"}))
    assert len(shop[0].refunds()) == refunds
    assert result.error is (refunds == 0)
    if answer is None:
        assert asked == [] and "cannot ask" in result.text
    else:
        assert len(asked) == 1 and "88231" in asked[0]


def test_arguments_the_schema_refuses_are_refused_before_a_person_is_asked(shop, http_server):
    """A yes must be to the call that runs: an extra field ("amount": "0.01") was shown in the question and then
    dropped by the tool, which refunded the whole price."""
    from tinyagent.tools import Action

    asked = []
    with McpConnection.http(http_server.url, ask=lambda message: asked.append(message) or "yes") as connection:
        tools = mcp_registry(connection)
        partial = tools.run(Action("applyRefund", {"orderId": "88231", "reason": "faulty", "amount": "0.01"}))
        untyped = tools.run(Action("applyRefund", {"orderId": 88231, "reason": "faulty"}))
    assert asked == [] and shop[0].refunds() == []
    assert partial.error and "amount" in json.loads(partial.text)["error"]
    assert untyped.error and json.loads(untyped.text)["field"] == "orderId"


def test_the_question_shows_a_hidden_character_in_an_argument_as_its_escape(shop, http_server):
    from tinyagent.tools import Action

    asked = []
    with McpConnection.http(http_server.url, ask=lambda message: asked.append(message) or "no") as connection:
        mcp_registry(connection).run(Action("applyRefund", {"orderId": "88231", "reason": "\u202edeifsitas"}))
    # a right-to-left override would show the rest of the question reversed: "satisfied"
    assert len(asked) == 1 and "\u202e" not in asked[0] and "\\u202edeifsitas" in asked[0], asked


def test_streamable_http_in_a_subprocess_serves_the_official_client_and_stops_on_sigterm():
    with ServerProcess("mcp-server", "--port", "0", "--now", NOW) as server:
        url = re.search(r"http://127\.0\.0\.1:\d+/mcp", server.wait_for_line("MCP server on")).group(0)
        with McpConnection.http(url) as connection:
            names = [tool.name for tool in connection.list_tools()]
            time = connection.call_tool("getCurrentTime", {})
        assert names[0] == "queryOrder" and json.loads(time.content[0].text)["currentTime"] == NOW
        assert server.stop(signal.SIGTERM) == 0
        assert "stopped (SIGTERM)" in server.stderr and "Traceback" not in server.stderr
        assert port_refuses_connections(int(url.rsplit(":", 1)[1].split("/")[0]))


def test_sigint_stops_it_even_when_started_with_sigint_ignored():
    with ServerProcess("mcp-server", "--port", "0", ignore_sigint=True) as server:
        server.wait_for_line("MCP server on")
        assert server.stop(signal.SIGINT) == 0
        assert "stopped (SIGINT)" in server.stderr and "Traceback" not in server.stderr


def _ended(process: subprocess.Popen) -> None:
    """Kill `process` if it still runs, reap it, and close its pipes."""
    if process.poll() is None:
        process.kill()
    process.wait()
    for pipe in (process.stdin, process.stdout, process.stderr):
        pipe.close()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_the_stdio_server_stops_cleanly_on_a_signal(signum):
    process = subprocess.Popen([sys.executable, *SERVER_ARGS], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        assert "MCP server on stdio" in process.stderr.readline()  # ready: its handlers are installed
        process.send_signal(signum)
        assert process.wait(timeout=PATIENCE) == 0
        assert "stopped (" + signal.Signals(signum).name + ")" in process.stderr.read()
    finally:
        _ended(process)


def test_closing_stdin_ends_the_stdio_server():
    process = subprocess.run([sys.executable, *SERVER_ARGS], check=False, input="", capture_output=True, text=True,
                             timeout=PATIENCE)
    assert process.returncode == 0 and process.stdout == ""
    assert "stopped (stdin closed)" in process.stderr


def test_a_closed_stdout_is_one_line_and_exit_2():
    # The stdio server's thread died with AttributeError ('NoneType' ... 'buffer'), and the command said
    # "stopped (stdin closed)" with exit 0.
    process = subprocess.run([sys.executable, *SERVER_ARGS], check=False, input=json.dumps(INITIALIZE) + "\n",
                             stdout=None, stderr=subprocess.PIPE, text=True, timeout=PATIENCE,
                             preexec_fn=lambda: os.close(1))
    assert process.returncode == 2 and "Traceback" not in process.stderr, process.stderr
    assert process.stderr.strip() == ("error: stdin or stdout is closed: an MCP client writes requests to the one "
                                      "and reads answers from the other; run it from an MCP host, or give --port")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_an_answer_that_cannot_be_written_is_one_line_and_exit_2():
    with open("/dev/full", "w") as full:
        process = subprocess.run([sys.executable, *SERVER_ARGS], check=False, input=json.dumps(INITIALIZE) + "\n",
                                 stdout=full, stderr=subprocess.PIPE, text=True, timeout=PATIENCE)
    assert process.returncode == 2 and "Traceback" not in process.stderr, process.stderr
    assert process.stderr.strip().splitlines()[-1] == (
        "error: the answers could not be written to stdout (No space left on device): the client that reads them "
        "has gone, or stdout is a full disk")


@pytest.mark.parametrize("headers, status", [
    ({"Host": "rebound.example.com"}, 421),           # a DNS-rebinding name that points at 127.0.0.1
    ({"Host": "127.0.0.1:1"}, 421),                   # the right address, another port
    ({"Origin": "https://evil.example"}, 403),        # a page elsewhere
    ({"Origin": "null"}, 403),                        # a sandboxed page or a file
], ids=["rebinding-host", "other-port", "foreign-origin", "null-origin"])
def test_a_foreign_host_or_origin_gets_a_json_4xx_and_no_tool_runs(shop, http_server, headers, status):
    reply = requests.post(http_server.url, json=REFUND_CALL, headers={**ACCEPT, **headers}, timeout=PATIENCE)
    assert reply.status_code == status and "error" in reply.json()
    assert shop[0].refunds() == []


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"])
def test_a_simple_cross_site_post_runs_no_tool(shop, http_server, content_type):
    # what a form or fetch(no-cors) on any web page can send without asking the server first
    for origin in ({}, {"Origin": "https://evil.example"}):
        for body in (INITIALIZE, REFUND_CALL):
            reply = requests.post(http_server.url, data=json.dumps(body),
                                  headers={**ACCEPT, "Content-Type": content_type, **origin}, timeout=PATIENCE)
            assert 400 <= reply.status_code < 500 and "error" in reply.json()
    assert shop[0].refunds() == []


def test_another_path_and_a_body_too_large_get_a_json_error(shop, http_server):
    # The SDK answered these itself: 404 as text/plain, 413 with no content type.
    base = http_server.url.rsplit("/", 1)[0]
    for path in ("/", "/nothing", "/mcp/x"):
        reply = requests.get(base + path, headers=ACCEPT, timeout=PATIENCE)
        assert reply.status_code == 404 and "/mcp" in reply.json()["error"]
    host = f"127.0.0.1:{http_server.port}"
    with socket.create_connection(("127.0.0.1", http_server.port), timeout=PATIENCE) as client:
        client.sendall(f"POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                       f"Accept: application/json, text/event-stream\r\nContent-Length: 99999999\r\n\r\n".encode())
        head = client.recv(65536)
    assert head.startswith(b"HTTP/1.1 413 ") and b"application/json" in head.lower()
    assert shop[0].refunds() == []


@pytest.mark.parametrize("request_bytes", [
    b"POST /m\x00cp HTTP/1.1\r\nHost: {host}\r\nContent-Length: 2\r\n\r\n{{}}",  # a NUL in the path
    b"POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{{}}",
], ids=["nul-in-path", "two-lengths"])
def test_a_request_that_is_not_readable_http_gets_a_json_400(shop, http_server, request_bytes):
    host = f"127.0.0.1:{http_server.port}"
    answer = raw_reply(http_server, request_bytes.replace(b"{host}", host.encode()).replace(b"{{}}", b"{}"))
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ") and b"content-type: application/json" in head.lower(), answer[:300]
    assert "not HTTP/1.1 this server can read" in json.loads(body)["error"]
    assert shop[0].refunds() == []


def test_a_body_whose_length_is_given_two_ways_is_refused(shop, http_server):
    # Content-Length and Transfer-Encoding: h11 read the chunks and the SDK opened a session; a proxy in front
    # reading the length instead would take the rest for the next request (request smuggling)
    host = f"127.0.0.1:{http_server.port}"
    body = json.dumps(INITIALIZE).encode()
    with socket.create_connection(("127.0.0.1", http_server.port), timeout=PATIENCE) as client:
        client.sendall(f"POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                       f"Accept: application/json, text/event-stream\r\nContent-Length: 4\r\n"
                       f"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n".encode()
                       + f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n")
        answer = b""
        while chunk := client.recv(65536):
            answer += chunk
    head, _, reply = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ") and b"mcp-session-id" not in head.lower(), answer[:300]
    assert "Content-Length and Transfer-Encoding" in json.loads(reply)["error"]


def test_the_host_is_read_in_any_case_and_a_browsers_cross_site_word_is_refused(shop, http_server):
    upper = {"Host": f"LOCALHOST:{http_server.port}"}
    reply = requests.post(http_server.url, json=INITIALIZE, headers={**ACCEPT, **upper}, timeout=PATIENCE)
    assert reply.status_code == 200, reply.text  # was 421: a host name has no case
    for said in ("cross-site", "same-site"):  # a browser's fetch, even one that sent no Origin
        reply = requests.post(http_server.url, json=REFUND_CALL, headers={**ACCEPT, "Sec-Fetch-Site": said},
                              timeout=PATIENCE)
        assert reply.status_code == 403 and "other web sites" in reply.json()["error"]
    assert shop[0].refunds() == []


def test_the_servers_own_origin_is_served(http_server):
    origin = http_server.url.removesuffix("/mcp")
    reply = requests.post(http_server.url, json=INITIALIZE, headers={**ACCEPT, "Origin": origin}, timeout=PATIENCE)
    assert reply.status_code == 200


@pytest.mark.parametrize("args, says", [
    (["--port", "http"], "--port must be a whole number"),
    (["--port", "70000"], "--port must be a whole number"),
    (["--now", "yesterday"], "--now must be an ISO date-time"),
    (["--db", "/etc/hostname/shop.sqlite3"], "is a file, not a folder"),
])
def test_bad_options_are_one_line_and_exit_2(args, says):
    done = subprocess.run([sys.executable, "-m", "tinyagent", "mcp-server", *args], check=False, input="",
                          capture_output=True,
                          text=True, timeout=PATIENCE)
    assert done.returncode == 2 and says in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stdout == ""


def test_a_port_in_use_is_one_line_and_exit_2(http_server):
    done = subprocess.run([sys.executable, "-m", "tinyagent", "mcp-server", "--port", str(http_server.port)],
                          check=False, capture_output=True, text=True, timeout=PATIENCE)
    assert done.returncode == 2 and done.stderr.startswith("error: cannot listen")
    assert len(done.stderr.strip().splitlines()) == 1


def test_list_changed_is_not_claimed():
    # the registry is fixed for the server's life: it must not promise notifications it never sends
    clock = fixed_clock(NOW)
    with Shop(":memory:", clock=clock) as shop:
        from tinyagent.toolkit.mcp_server import registry_server

        options = registry_server(shop_registry(shop, clock)).create_initialization_options()
    assert options.capabilities.tools == types.ToolsCapability(list_changed=False)


# -- what one client can hold, and stopping with something open ----------------------------------------------------
def _answer_until_closed(sock: socket.socket) -> bytes:
    """Everything the server wrote on `sock` before it closed it; fails if it is still open after PATIENCE s."""
    sock.settimeout(PATIENCE)
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:  # closed while some of what we sent was unread
        pass
    return received


def _json_error(answer: bytes, status: int) -> str:
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 %d " % status) and b"content-type: application/json" in head.lower(), answer
    return json.loads(body)["error"]


@pytest.mark.parametrize("sends", [b"", b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a"], ids=["silent", "drip"])
def test_a_connection_that_never_finishes_its_headers_is_closed(shop, sends):
    # It stayed open for as long as the client liked, holding a descriptor: a few hundred took the server's all.
    with McpHttpServer(shop[1], header_timeout_s=1) as server, \
            socket.create_connection(("127.0.0.1", server.port), timeout=PATIENCE) as client:
        client.sendall(sends)
        assert _answer_until_closed(client) == b""
        reply = requests.post(server.url, json=INITIALIZE, headers=ACCEPT, timeout=PATIENCE)  # one that sends at once
        assert reply.status_code == 200


def test_a_body_that_does_not_all_arrive_gets_a_json_408(shop):
    with McpHttpServer(shop[1], body_timeout_s=1, header_timeout_s=1) as server, \
            socket.create_connection(("127.0.0.1", server.port), timeout=PATIENCE) as client:
        client.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nContent-Type: application/json\r\n"
                       "Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{".encode())
        assert "did not all arrive within 1 s" in _json_error(_answer_until_closed(client), 408)
    assert shop[0].refunds() == []


def test_connections_past_the_cap_get_a_json_503_and_others_are_served_once_they_close(shop):
    with McpHttpServer(shop[1], max_connections=4) as server:
        held = [socket.create_connection(("127.0.0.1", server.port), timeout=PATIENCE) for _ in range(4)]
        try:
            # Connections are taken in the order they came: this one is the fifth.
            with socket.create_connection(("127.0.0.1", server.port), timeout=PATIENCE) as fifth:
                refusal = _json_error(_answer_until_closed(fifth), 503)
                assert refusal.startswith("this MCP server holds as many connections as it may (4)"), refusal
        finally:
            for sock in held:
                sock.close()
        # The server forgets a closed connection when it reads the close: a few 503s may come first.
        deadline = time.monotonic() + PATIENCE
        while (reply := requests.post(server.url, json=INITIALIZE, headers=ACCEPT, timeout=PATIENCE)).status_code == 503:
            assert "error" in reply.json() and time.monotonic() < deadline
        assert reply.status_code == 200


def _initialize_request(port: int) -> tuple[bytes, bytes]:
    """An initialize request as its head and its body, which urllib3 sends apart."""
    body = json.dumps(INITIALIZE).encode()
    head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    return head, body


def _answered(sock: socket.socket) -> None:
    """Wait until the server's answer has started to arrive on `sock` (without reading it)."""
    arrived = select.poll()
    arrived.register(sock, select.POLLIN)
    assert arrived.poll(PATIENCE * 1000), "no answer"


def test_a_refused_client_still_sending_its_body_reads_the_503_not_a_reset(shop):
    # The server closed a refused connection at once, and the body that came after its answer met a closed socket:
    # the reset that sent took the 503 with it, and all ten such clients in a row read "Connection reset by peer".
    with McpHttpServer(shop[1], max_connections=1) as server, \
            socket.create_connection(("127.0.0.1", server.port), timeout=PATIENCE):
        head, body = _initialize_request(server.port)
        for _ in range(3):
            with socket.create_connection(("127.0.0.1", server.port), timeout=PATIENCE) as late:
                late.sendall(head)
                _answered(late)
                late.sendall(body)
                assert ended_cleanly(late)  # a FIN after the answer, not a reset
                assert "as many connections as it may (1)" in _json_error(_answer_until_closed(late), 503)


def test_refused_connections_their_clients_keep_open_are_few_and_closed_in_time(shop):
    # A refused connection is read until its client closes it: clients that never do keep at most a quarter of the
    # cap open (the oldest is closed first), each for ENDING_SECONDS at most, and none counts against the cap.
    with McpHttpServer(shop[1], max_connections=8) as server, ExitStack() as held:
        ending = server._uvicorn.config.http.keywords["ending"]
        assert ending.limit == 2
        for _ in range(8):
            held.enter_context(socket.create_connection(("127.0.0.1", server.port), timeout=PATIENCE))
        head, body = _initialize_request(server.port)
        refused_at = time.monotonic()
        for _ in range(6):
            kept = held.enter_context(socket.create_connection(("127.0.0.1", server.port), timeout=PATIENCE))
            kept.sendall(head + body)
            assert "as many connections as it may (8)" in _json_error(_answer_until_closed(kept), 503)
            assert len(ending) <= 2
        wait_for(lambda: len(ending) == 0, "the refused connections closed", patience=ENDING_SECONDS + PATIENCE)
        assert time.monotonic() - refused_at >= ENDING_SECONDS  # not before their time was up

        # One that sends on and on after its answer is read no further than ENDING_BYTES, then closed.
        with socket.create_connection(("127.0.0.1", server.port), timeout=PATIENCE) as flooding:
            flooding.sendall(head)
            _answered(flooding)
            sent, chunk = 0, b"x" * 65536
            with pytest.raises((BrokenPipeError, ConnectionResetError)):  # closed, not a timeout
                while sent < 16 * ENDING_BYTES:
                    sent += flooding.send(chunk)
        assert sent >= ENDING_BYTES, sent

        # The kept ones never counted: once one held connection goes, a request is served.
        held.close()
        reply = requests.post(server.url, json=INITIALIZE, headers=ACCEPT, timeout=PATIENCE)
        assert reply.status_code == 200, reply.text


def test_an_ending_connection_counts_against_no_cap_and_a_stop_closes_it(shop, monkeypatch):
    # Two connections ending for as long as the test runs: one refused, one answered with a 400.
    monkeypatch.setattr(connections, "ENDING_SECONDS", 600.0)
    with McpHttpServer(shop[1], max_connections=8) as server, ExitStack() as held:
        ending = server._uvicorn.config.http.keywords["ending"]
        assert ending.limit == 2
        known = server._uvicorn.server_state.connections
        first, *_ = [held.enter_context(socket.create_connection(("127.0.0.1", server.port), timeout=PATIENCE))
                     for _ in range(8)]
        refused = held.enter_context(socket.create_connection(("127.0.0.1", server.port), timeout=PATIENCE))
        assert "(8)" in _json_error(_answer_until_closed(refused), 503)
        first.sendall(b"GET /m\x00cp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")  # a NUL in the path
        assert "nothing was run" in _json_error(_answer_until_closed(first), 400)
        wait_for(lambda: len(ending) == 2, "both connections ending")
        # Counted, they would fill the cap with the seven connections still served: the request would get a 503.
        wait_for(lambda: len(known) == 9, "the server to hold the seven served connections and the two ending")
        reply = requests.post(server.url, json=INITIALIZE, headers=ACCEPT, timeout=PATIENCE)
        assert reply.status_code == 200, reply.text

        # They stay among the connections uvicorn knows, so that its stop closes them too: out of its reach, they
        # would be left open when the server's loop ended. (A stop's own 503 to a body still arriving ends a
        # connection that is serving a request, which only the protocol's stop closes: test_a_stop_while_a_body_...)
        server.stop()
        assert not server._thread.is_alive()
        assert len(ending) == 0 and not known


# Starts the server with at most 512 descriptors, the way `ulimit -n 512` would.
LOW_DESCRIPTORS = ("import os, resource, sys; resource.setrlimit(resource.RLIMIT_NOFILE, "
                   "(512, resource.getrlimit(resource.RLIMIT_NOFILE)[1])); "
                   "os.execv(sys.executable, [sys.executable, '-m', 'tinyagent', *sys.argv[1:]])")


def test_more_silent_connections_than_descriptors_are_refused_without_a_traceback():
    # With no cap, 1030 of them under `ulimit -n 1024` left normal clients waiting unanswered, and stderr took
    # hundreds of thousands of "Too many open files" tracebacks.
    with ServerProcess("mcp-server", "--port", "0", code=LOW_DESCRIPTORS) as server:
        port = int(re.search(r"127\.0\.0\.1:(\d+)/mcp", server.wait_for_line("MCP server on")).group(1))
        held = []
        try:
            for _ in range(600):
                held.append(socket.create_connection(("127.0.0.1", port), timeout=PATIENCE))
            reply = requests.post(f"http://127.0.0.1:{port}/mcp", json=INITIALIZE, headers=ACCEPT, timeout=PATIENCE)
            # 503 while the silent connections are held (10 s); once they were cut, the request is served.
            assert reply.status_code in (200, 503)
            if reply.status_code == 503:
                assert "as many connections as it may" in reply.json()["error"]
        finally:
            for sock in held:
                sock.close()
        assert server.stop(signal.SIGTERM) == 0
    assert "Too many open files" not in server.stderr and "Traceback" not in server.stderr, server.stderr[-2000:]


def _initialize(url: str, capabilities: dict | None = None) -> str:
    """A new session's id, initialized as a client does (one that declares `capabilities`)."""
    opening = {**INITIALIZE, "params": {**INITIALIZE["params"], "capabilities": capabilities or {}}}
    reply = requests.post(url, json=opening, headers=ACCEPT, timeout=PATIENCE)
    assert reply.status_code == 200, reply.text
    session = reply.headers["mcp-session-id"]
    done = requests.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                         headers={**ACCEPT, "Mcp-Session-Id": session}, timeout=PATIENCE)
    assert done.status_code == 202
    return session


def _ping(url: str, session: str) -> int:
    return requests.post(url, json={"jsonrpc": "2.0", "id": 9, "method": "ping"},
                         headers={**ACCEPT, "Mcp-Session-Id": session}, timeout=PATIENCE).status_code


def test_a_new_session_takes_the_place_of_the_one_idle_longest(shop):
    # The SDK's 10,000 sessions, each kept 30 minutes idle: one client filled them in 23 s, and every new client
    # got 503 "Too many open sessions" for half an hour.
    with McpHttpServer(shop[1], max_sessions=3) as server:
        streaming, oldest, newer = (_initialize(server.url) for _ in range(3))
        # An open GET stream: the session is in use, however long ago it was opened.
        with requests.get(server.url, headers={"Accept": "text/event-stream", "Mcp-Session-Id": streaming},
                          stream=True, timeout=PATIENCE) as stream:
            assert stream.status_code == 200
            newest = _initialize(server.url)
            assert _ping(server.url, oldest) == 404  # it initializes again, as the specification says
            assert [_ping(server.url, session) for session in (streaming, newer, newest)] == [200, 200, 200]
            assert len(server.sessions._server_instances) == 3


def test_a_server_whose_sessions_are_all_in_use_says_so_in_json(shop):
    with McpHttpServer(shop[1], max_sessions=1) as server:
        session = _initialize(server.url)
        with requests.get(server.url, headers={"Accept": "text/event-stream", "Mcp-Session-Id": session},
                          stream=True, timeout=PATIENCE) as stream:
            assert stream.status_code == 200
            reply = requests.post(server.url, json=INITIALIZE, headers=ACCEPT, timeout=PATIENCE)
            assert reply.status_code == 503 and "Too many open sessions" in reply.json()["error"]["message"]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_ends_an_open_get_stream_without_a_traceback(signum):
    # The stream ran out uvicorn's 2 s grace and was cancelled: CancelledError's traceback on stderr.
    with ServerProcess("mcp-server", "--port", "0") as server:
        url = re.search(r"http://127\.0\.0\.1:\d+/mcp", server.wait_for_line("MCP server on")).group(0)
        session = _initialize(url)
        with requests.get(url, headers={"Accept": "text/event-stream", "Mcp-Session-Id": session}, stream=True,
                          timeout=PATIENCE) as stream:
            assert stream.status_code == 200  # the stream is open
            assert server.stop(signum) == 0
        assert "Traceback" not in server.stderr and "timeout graceful shutdown" not in server.stderr, server.stderr


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_while_a_body_is_arriving_is_a_json_503_without_a_traceback(signum):
    with ServerProcess("mcp-server", "--port", "0") as server:
        port = int(re.search(r"127\.0\.0\.1:(\d+)/mcp", server.wait_for_line("MCP server on")).group(1))
        with socket.create_connection(("127.0.0.1", port), timeout=PATIENCE) as client:
            client.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                           "Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n"
                           "Expect: 100-continue\r\n\r\n".encode())
            client.settimeout(PATIENCE)
            # uvicorn answers 100 Continue once the server asks for the body: it is waiting for it now.
            assert client.recv(65536).startswith(b"HTTP/1.1 100 ")
            client.sendall(b"{")
            assert server.stop(signum) == 0
            assert "stopping" in _json_error(_answer_until_closed(client), 503)
        assert "Traceback" not in server.stderr and "timeout graceful shutdown" not in server.stderr, server.stderr


def test_a_body_too_large_sent_in_chunks_gets_a_json_413(shop, http_server):
    # Without a Content-Length the SDK counted the body itself and answered 413 "Request body too large" as text.
    session = _initialize(http_server.url)
    too_large = b'{"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"x": "' + b"a" * 4_200_000 + b'"}}'
    with socket.create_connection(("127.0.0.1", http_server.port), timeout=PATIENCE) as client:
        client.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{http_server.port}\r\nContent-Type: application/json\r\n"
                       f"Accept: application/json, text/event-stream\r\nMcp-Session-Id: {session}\r\n"
                       "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n".encode()
                       + b"%x\r\n" % len(too_large) + too_large + b"\r\n0\r\n\r\n")
        assert "at most 4194304 bytes" in _json_error(_answer_until_closed(client), 413)
    assert shop[0].refunds() == []


def test_streamable_http_with_its_standard_output_closed_still_serves_and_stops_cleanly(tmp_path):
    # uvicorn's log formatter asked sys.stdout.isatty(), and with stdout closed sys.stdout is None: the server
    # stopped at once with a traceback ("Unable to configure formatter 'default'").
    def a_session_pinged(url):
        return _ping(url + "/mcp", _initialize(url + "/mcp"))

    pinged, code, said = answered_with_stdout_closed(
        ["mcp-server", "--now", NOW, "--db", str(tmp_path / "shop.sqlite3")],
        {k: v for k, v in os.environ.items() if not k.startswith("TINYAGENT_")}, a_session_pinged)
    assert pinged == 200
    assert code == 0 and "Traceback" not in said, said


def _events(reply: requests.Response):
    """The JSON-RPC messages on a POST's SSE stream, as they come. Keep the generator while the stream is to stay
    open: one dropped half-read closes its connection."""
    for line in reply.iter_lines():
        if line.startswith(b"data: "):
            yield json.loads(line[len(b"data: "):])


def _yes(question: dict) -> dict:
    return {"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"approve": True}}}


def test_a_yes_that_comes_after_the_caller_hung_up_runs_nothing(shop, http_server):
    # The question kept waiting after the client that sent tools/call had gone: the yes was taken (202), the
    # refund was written, and its result went nowhere.
    session = _initialize(http_server.url, {"elicitation": {}})
    headers = {**ACCEPT, "Mcp-Session-Id": session}
    with requests.post(http_server.url, json=REFUND_CALL, headers=headers, stream=True, timeout=PATIENCE) as call:
        question = next(_events(call))
        assert question["method"] == "elicitation/create"
    time.sleep(0.5)  # the server sees the connection close
    assert requests.post(http_server.url, json=_yes(question), headers=headers, timeout=PATIENCE).status_code == 202
    time.sleep(0.5)  # a refund would be written by now
    assert shop[0].refunds() == []


@pytest.mark.parametrize("signum, hung_up", [(signal.SIGTERM, True), (signal.SIGINT, True), (signal.SIGINT, False)],
                         ids=["SIGTERM-hung-up", "SIGINT-hung-up", "SIGINT-stream-open"])
def test_a_stop_while_a_person_is_asked_is_prompt_and_quiet_and_pays_nothing(signum, hung_up, tmp_path):
    # A question whose client had hung up, and no connection open: the stop took 6.3 s and said "courtesy cancel
    # ... gave up: transport write blocked" and "shutdown error response ... gave up" (the session's writer had
    # ended before the question was cancelled).
    db = tmp_path / "shop.sqlite3"
    with ServerProcess("mcp-server", "--port", "0", "--now", NOW, "--db", str(db)) as server:
        url = re.search(r"http://127\.0\.0\.1:\d+/mcp", server.wait_for_line("MCP server on")).group(0)
        headers = {**ACCEPT, "Mcp-Session-Id": _initialize(url, {"elicitation": {}})}
        with requests.post(url, json=REFUND_CALL, headers=headers, stream=True, timeout=PATIENCE) as call:
            events = _events(call)
            assert next(events)["method"] == "elicitation/create"
            if hung_up:
                call.close()
                time.sleep(0.5)  # the server sees the connection close
            assert server.stop(signum) == 0
    # No bound on the time (a loaded machine may take long): "gave up" is what the slow stop wrote, after the 6 s
    # its last writes waited for a writer that had ended
    assert "gave up" not in server.stderr and "Traceback" not in server.stderr, server.stderr
    with Shop(str(db), clock=fixed_clock(NOW)) as shop:
        assert shop.refunds() == []


def test_a_second_request_with_an_id_still_in_flight_is_refused_and_the_first_is_answered(shop, http_server):
    # The SDK keeps one stream per id: the second request took the first one's, which waited for ever.
    headers = {**ACCEPT, "Mcp-Session-Id": _initialize(http_server.url, {"elicitation": {}})}
    with requests.post(http_server.url, json=REFUND_CALL, headers=headers, stream=True, timeout=PATIENCE) as first:
        events = _events(first)
        question = next(events)
        again = requests.post(http_server.url, json={**REFUND_CALL, "params": {"name": "getCurrentTime",
                                                                               "arguments": {}}},
                              headers=headers, timeout=PATIENCE)
        assert again.status_code == 409 and again.json()["error"]["code"] == -32600, again.text
        assert "already in use" in again.json()["error"]["message"]
        no = {"jsonrpc": "2.0", "id": question["id"], "result": {"action": "decline"}}
        assert requests.post(http_server.url, json=no, headers=headers, timeout=PATIENCE).status_code == 202
        answer = next(events)
    assert answer["id"] == REFUND_CALL["id"] and answer["result"]["isError"]
    assert "declined" in answer["result"]["content"][0]["text"] and shop[0].refunds() == []
    # Once answered, the id is free again.
    assert _ping(http_server.url, headers["Mcp-Session-Id"]) == 200


@pytest.mark.parametrize("request_id", [None, True, 1.5, {"a": 1}], ids=["null", "true", "float", "object"])
def test_a_request_whose_id_is_not_a_string_or_an_integer_is_a_json_rpc_invalid_request(http_server, request_id):
    # The SDK took it for a notification: 202, an empty body, nothing run, and the client waited for ever.
    session = _initialize(http_server.url)
    reply = requests.post(http_server.url, json={"jsonrpc": "2.0", "id": request_id, "method": "tools/list"},
                          headers={**ACCEPT, "Mcp-Session-Id": session}, timeout=PATIENCE)
    assert reply.status_code == 400 and reply.json()["error"]["code"] == -32600, (reply.status_code, reply.text)
    assert reply.json()["id"] is None


@pytest.mark.parametrize("line", [b"not json", b"\xff\xfe", b'{"jsonrpc": "2.0", "id": "\\ud800", "method": "tools/list"}',
                                  b"[" * 100_000], ids=["not-json", "invalid-utf8", "lone-surrogate", "deep"])
def test_an_unreadable_line_over_stdio_is_a_parse_error_and_the_server_serves_on(line):
    # Nothing came back (over HTTP the same body is a -32700): the client waited for ever.
    opening = [json.dumps(INITIALIZE).encode(), b'{"jsonrpc": "2.0", "method": "notifications/initialized"}']
    ping = b'{"jsonrpc": "2.0", "id": 5, "method": "ping"}'
    process = subprocess.Popen([sys.executable, *SERVER_ARGS], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    try:
        process.stdin.write(b"\n".join([*opening, line, ping, b""]))
        process.stdin.flush()  # and kept open: a client that is still there
        answers = [json.loads(process.stdout.readline())]
        while answers[-1].get("id") != 5:  # the ping's answer comes last
            answers.append(json.loads(process.stdout.readline()))
        process.stdin.close()
        assert process.wait(timeout=PATIENCE) == 0 and b"Traceback" not in process.stderr.read()
    finally:
        _ended(process)
    assert [answer.get("id") for answer in answers] == [1, None, 5], answers
    assert answers[1]["error"]["code"] == -32700 and answers[2]["result"] == {}


@pytest.mark.parametrize("doubled", [
    "Origin: http://evil.example\r\nOrigin: http://{host}",
    "Content-Type: text/plain\r\nContent-Type: application/json",
], ids=["origin", "content-type"])  # two Hosts are h11's 400 already
def test_a_header_sent_twice_gets_the_servers_json_400(shop, http_server, doubled):
    # The guard kept the last of two headers and the SDK read the first: a plain-text 403 or 400 from the SDK.
    host = f"127.0.0.1:{http_server.port}"
    body = json.dumps(INITIALIZE)
    head = f"POST /mcp HTTP/1.1\r\nHost: {host}\r\n"
    head += "" if doubled.startswith("Content-Type") else "Content-Type: application/json\r\n"
    head += (doubled.replace("{host}", host) + f"\r\nAccept: application/json, text/event-stream\r\n"
             f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n")
    with socket.create_connection(("127.0.0.1", http_server.port), timeout=PATIENCE) as client:
        client.sendall(head.encode() + body.encode())
        assert "one" in _json_error(_answer_until_closed(client), 400)


@pytest.mark.parametrize("path", ["/mcp", "/nothing"])
def test_a_websocket_upgrade_is_refused_in_json(shop, http_server, path):
    # The server speaks Streamable HTTP only: the SDK's app closed the handshake before accepting, which uvicorn
    # answered with a 403 and an empty body.
    host = f"127.0.0.1:{http_server.port}"
    answer = raw_reply(http_server, f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: "
                      "Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 403 ") and b"content-type: application/json" in head.lower(), answer[:300]
    assert "WebSocket" in json.loads(body)["error"]
    assert shop[0].refunds() == []
