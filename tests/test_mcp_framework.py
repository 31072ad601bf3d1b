"""Lesson 24: the OpenAI Agents SDK lists and calls the shop's tools through its own MCP support."""

from __future__ import annotations

import sys

import pytest

from tests.framework_shop import need
from tinyagent.classroom.server import ClassroomServer
from tinyagent.clock import fixed_clock
from tinyagent.shop import Shop, shop_registry
from tinyagent.toolkit.mcp_server import McpHttpServer

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
NOW = "2026-06-30T19:05:23"


@pytest.fixture(scope="module")
def classroom():
    with ClassroomServer() as server:
        yield server


def test_the_agents_sdk_finds_and_calls_the_shops_tools_over_streamable_http(classroom):
    need("agents")
    from tinyagent.frameworks.agents_sdk_mcp import run_over_mcp

    clock = fixed_clock(NOW)
    with Shop(":memory:", clock=clock) as shop, McpHttpServer(shop_registry(shop, clock)) as server:
        run = run_over_mcp("帮我看看订单 88231 的快递到哪了。", base_url=classroom.base_url, server={"url": server.url})
        refund = run_over_mcp("Order 88231 won't charge any more. Please refund it.", base_url=classroom.base_url,
                              server={"url": server.url})
        refunds = shop.refunds()
    assert run.error is None and run.tools_listed == ["queryOrder", "queryLogistics", "applyRefund",
                                                      "searchKnowledge", "getCurrentTime"]
    assert run.tools_called == ["queryOrder", "queryLogistics"] and "SF1234567890" in run.answer
    # the schemas the model got are the server's, sent by the framework in its own request
    sent = [tool["function"]["name"] for tool in run.calls[0].body["tools"]]
    assert sent == run.tools_listed
    # the SDK declares no elicitation, so the server cannot ask a person: no refund, and the model is told why
    assert "applyRefund" in refund.tools_called and refunds == []
    assert refund.error is None and "not" in refund.answer.lower()


def test_the_agents_sdk_starts_the_server_over_stdio(classroom):
    need("agents")
    from tinyagent.frameworks.agents_sdk_mcp import run_over_mcp
    from tinyagent.toolkit.mcp_server import shop_server_process

    run = run_over_mcp("What time is it now?", base_url=classroom.base_url, server=shop_server_process("--now", NOW))
    assert run.error is None and run.tools_called == ["getCurrentTime"]


# A shop server that misbehaves on purpose, speaking raw JSON-RPC over stdio: argv[1] is how, argv[2] the file each
# refund it does is written to (the effect a run must not hide).
HOSTILE_SHOP = r'''
import json, os, sys, time
mode, done = sys.argv[1], sys.argv[2]
ORDER = {"orderId": "88231", "product": "S10 Pro", "price": 1999, "orderTime": "2026-06-20",
         "signTime": "2026-06-22", "status": "signed", "trackingNo": "SF1234567890"}
def send(message):
    sys.stdout.write(json.dumps(message) + "\n"); sys.stdout.flush()
def tool(name, *required):
    return {"name": name, "description": name, "inputSchema": {"type": "object", "required": list(required),
            "properties": {key: {"type": "string"} for key in required}}}
for line in sys.stdin:
    message = json.loads(line)
    key, method = message.get("id"), message.get("method")
    if method == "initialize":
        if mode == "exit_at_start":
            sys.exit(3)
        send({"jsonrpc": "2.0", "id": key, "result": {"protocolVersion": message["params"]["protocolVersion"],
              "capabilities": {"tools": {}}, "serverInfo": {"name": "hostile", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": key, "result": {"tools": [tool("queryOrder", "orderId"), tool("getCurrentTime"),
              tool("searchKnowledge", "query"), tool("applyRefund", "orderId", "reason")]}})
    elif method == "tools/call":
        name = message["params"]["name"]
        text = {"queryOrder": json.dumps(ORDER), "getCurrentTime": '{"currentTime": "2026-06-30T19:05:23"}',
                "searchKnowledge": '{"results": [{"title": "quality", "content": "15 days from signing"}]}'}.get(name)
        if name == "queryOrder" and mode == "huge_order":
            text = "A" * 100_000
        if name == "queryOrder" and mode in ("huge_blob", "huge_resource"):  # the order, and a photo or a log with it
            embedded = ({"uri": "file:///dock.jpg", "mimeType": "image/jpeg", "blob": "QUFB" * 25_000}
                        if mode == "huge_blob" else {"uri": "file:///charge.log", "text": "B" * 100_000})
            send({"jsonrpc": "2.0", "id": key, "result": {"content": [{"type": "text", "text": text},
                  {"type": "resource", "resource": embedded}]}})
            continue
        if name == "applyRefund":
            with open(done, "a") as log:
                log.write(json.dumps(message["params"]["arguments"]) + "\n")
            if mode == "exit_on_refund":
                os._exit(1)
            if mode == "hang_on_refund":
                continue
            time.sleep(6 if mode == "slow_refund" else 0)
            text = '{"refundId": "RF-LATE", "status": "submitted"}'
        send({"jsonrpc": "2.0", "id": key, "result": {"content": [{"type": "text", "text": text}]}})
    elif key is not None:
        send({"jsonrpc": "2.0", "id": key, "result": {}})
'''
REFUND = "Order 88231 won't charge any more. Please refund it."


def hostile_run(classroom, mode, done, question=REFUND, timeout=20):
    import os
    import sys

    from tinyagent.frameworks.agents_sdk_mcp import run_over_mcp

    server = {"command": sys.executable, "args": ["-c", HOSTILE_SHOP, mode, str(done)],
              "env": {"PATH": os.environ["PATH"]}}
    return run_over_mcp(question, base_url=classroom.base_url, server=server, timeout=timeout)


def tool_messages(run):
    return [str(message.get("content")) for call in run.calls for message in call.messages
            if isinstance(message, dict) and message.get("role") == "tool"]


def test_a_refund_the_server_did_before_it_broke_is_listed_though_the_run_failed(classroom, tmp_path):
    need("agents")
    done = tmp_path / "refunds"
    run = hostile_run(classroom, "exit_on_refund", done)
    assert len(done.read_text().splitlines()) == 1  # the refund was written
    assert run.error is not None and "applyRefund" in run.tools_called


def test_a_call_with_no_answer_is_said_to_be_perhaps_done_in_tinyagents_words(classroom, tmp_path):
    need("agents")
    from tinyagent.toolkit.mcp_client import MAYBE_DONE

    # The run's timeout bounds the server's start and the model's calls too: 8 s leaves a loaded machine room
    run = hostile_run(classroom, "hang_on_refund", tmp_path / "refunds", timeout=8)
    said = tool_messages(run)[-1]
    assert "applyRefund" in run.tools_called and "timed out" in said
    assert MAYBE_DONE in said and "Please try again" not in said


def test_the_runs_timeout_governs_the_servers_calls_too(classroom, tmp_path):
    need("agents")
    # the SDK's own limit for a tools/call is 5 s; this server answers after 6, within the run's 20
    run = hostile_run(classroom, "slow_refund", tmp_path / "refunds", timeout=20)
    assert run.error is None and "RF-LATE" in tool_messages(run)[-1]


def test_a_server_that_exits_at_start_is_named_not_its_task_group(classroom, tmp_path):
    need("agents")
    run = hostile_run(classroom, "exit_at_start", tmp_path / "refunds")
    assert run.error == "MCPError: Connection closed" and run.tools_listed == []


def test_a_huge_tool_result_is_cut_as_tinyagents_loop_cuts_it(classroom, tmp_path):
    need("agents")
    from tinyagent.agent import MAX_OBSERVATION_CHARS

    run = hostile_run(classroom, "huge_order", tmp_path / "refunds")
    order = tool_messages(run)[0]
    assert run.tools_called[0] == "queryOrder" and len(order) < MAX_OBSERVATION_CHARS + 200
    assert "[cut: the tool returned 100000 characters; this is the first 4000]" in order


@pytest.mark.parametrize("mode", ["huge_blob", "huge_resource"])
def test_a_huge_embedded_resource_is_summarised_or_cut_as_tinyagents_client_reads_it(classroom, tmp_path, mode):
    # Only text parts were counted toward the cap, so a 100,000-character resource beside a short text went whole
    # to the model, a blob as base64 in the resource's JSON.
    need("agents")
    from tinyagent.agent import MAX_OBSERVATION_CHARS

    run = hostile_run(classroom, mode, tmp_path / "refunds")
    order = tool_messages(run)[0]
    assert run.tools_called[0] == "queryOrder" and len(order) < MAX_OBSERVATION_CHARS + 200
    assert "SF1234567890" in order  # the order's own text is kept
    if mode == "huge_blob":  # one line, as tinyagent's client says a blob: a model reads no base64
        assert "[resource file:///dock.jpg, mimeType: image/jpeg, 75000 bytes, not shown]" in order
        assert "QUFB" not in order
    else:
        assert "[resource file:///charge.log]" in order and "[cut: the tool returned" in order


def test_arguments_the_sdk_refuses_unsent_are_not_said_to_be_perhaps_done():
    # The SDK reads a call's arguments before it sends anything (MCPUtil.invoke_mcp_tool): JSON that does not parse, or
    # is not an object, is a ModelBehaviorError there, and nothing reached the server. (A call missing a required
    # parameter is refused before it is sent by the adapter itself: the next test.)
    need("agents")
    import asyncio

    import mcp_types as types
    from agents.exceptions import ModelBehaviorError
    from agents.mcp.util import MCPUtil

    from tinyagent.frameworks.agents_sdk_mcp import _say_tool_failed
    from tinyagent.toolkit.mcp_client import MAYBE_DONE

    refund = types.Tool(name="applyRefund", input_schema={"type": "object", "required": ["orderId"],
                                                          "properties": {"orderId": {"type": "string"}}})
    for written in ('{"orderId": "88231"', '["88231"]'):
        with pytest.raises(ModelBehaviorError) as refused:
            asyncio.run(MCPUtil.invoke_mcp_tool(None, refund, None, written))  # no server: nothing can be sent
        said = _say_tool_failed(None, refused.value)
        assert "Invalid JSON input for tool applyRefund" in said and MAYBE_DONE not in said


def test_a_call_missing_a_required_parameter_is_refused_unsent_unlisted_and_not_said_perhaps_done():
    # The SDK refuses it unsent as a UserError, the type (and unchained form) it also gives a call whose server broke
    # after it was sent: the adapter refuses it first, so it is neither listed as sent nor said to be perhaps done.
    need("agents")
    import asyncio

    import mcp_types as types
    from agents.exceptions import AgentsException
    from agents.mcp.util import MCPUtil

    from tinyagent.frameworks.agents_sdk_mcp import _say_tool_failed, _shop_server
    from tinyagent.toolkit.mcp_client import MAYBE_DONE

    called: list[str] = []
    server = _shop_server({"command": sys.executable, "args": []}, 5, called)  # never started: nothing can be sent
    refund = types.Tool(name="applyRefund", input_schema={
        "type": "object", "required": ["orderId", "reason"], "properties": {"orderId": {"type": "string"}}})
    server._tools_list = [refund]  # as list_tools leaves it
    for written in ("{}", '{"orderId": "88231"}', ""):
        with pytest.raises(AgentsException) as refused:  # the SDK's own path from the model's call to the server
            asyncio.run(MCPUtil.invoke_mcp_tool(server, refund, None, written))
        said = _say_tool_failed(None, refused.value)
        assert "was not called: missing required parameters:" in said and MAYBE_DONE not in said, said
    assert "orderId, reason" in said and called == []
    with pytest.raises(Exception) as unsent:  # all there: listed as sent, and the SDK finds no session to send it on
        asyncio.run(server.call_tool("applyRefund", {"orderId": "88231", "reason": "x"}))
    assert called == ["applyRefund"] and "not initialized" in str(unsent.value)
