"""Lesson 24: the OpenAI Agents SDK lists and calls the shop's tools through its own MCP support."""

from __future__ import annotations

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
