"""Lesson 24's MCP client: a registry filled from servers' tools/list, usable by ReActAgent unchanged."""

from __future__ import annotations

import json
import sys
import threading
import time

import anyio
import mcp_types as types
import pytest
from mcp.server.mcpserver import MCPServer

from tinyagent.agent import ReActAgent
from tinyagent.classroom.server import ClassroomServer
from tinyagent.clock import fixed_clock
from tinyagent.events import Observation
from tinyagent.llm_client import LlmClient
from tinyagent.shop import Shop, shop_registry
from tinyagent.toolkit.mcp_client import (
    McpConnection,
    McpError,
    ToolNameClash,
    mcp_registry,
    observation_text,
)
from tinyagent.toolkit.mcp_server import McpHttpServer, registry_server
from tinyagent.tools import Action

NOW = "2026-06-30T19:05:23"


@pytest.fixture
def shop():
    clock = fixed_clock(NOW)
    with Shop(":memory:", clock=clock) as shop:
        yield shop, shop_registry(shop, clock)


def weather_server() -> MCPServer:
    """A second server, written as the lesson's learner does: one tool of its own, one whose name the shop has."""
    server = MCPServer("weather")

    @server.tool()
    def getWeather(city: str) -> str:
        """The weather now in one city."""
        return json.dumps({"city": city, "condition": "light rain"})

    @server.tool()
    def getCurrentTime() -> str:
        """The time in the weather service's city."""
        return "08:00"

    return server


def _text(*parts: str, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=part) for part in parts], is_error=error)


def test_observation_text_joins_parts_and_makes_an_error_observation():
    assert observation_text(_text("a", "b")) == "a\nb"
    assert observation_text(_text('{"error":"no"}', error=True)) == '{"error":"no"}'
    assert json.loads(observation_text(_text("boom", error=True))) == {"error": "boom"}
    image = types.CallToolResult(content=[types.ImageContent(data="AA==", mime_type="image/png")])
    assert observation_text(image) == "[image]"


class _AnsweringConnection:
    """Stands in for an McpConnection: notes each call's arguments and answers with them."""

    name = "fake"
    trust_hints = False

    def __init__(self):
        self.calls: list[dict] = []

    def call_tool(self, name: str, arguments: dict) -> types.CallToolResult:
        self.calls.append(arguments)
        return _text(json.dumps(arguments))


def test_an_mcp_tool_reads_its_action_input_as_lesson_07_does():
    from tinyagent.toolkit.mcp_client import McpTool

    one = {"type": "object", "properties": {"orderId": {"type": "string"}}, "required": ["orderId"]}
    two = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
           "required": ["a", "b"]}
    connection = _AnsweringConnection()
    order = McpTool(connection, types.Tool(name="queryOrder", input_schema=one))
    for written in ('{"orderId": "88231"}', "88231", '```json\n{"orderId": "88231"}\n```', ' {\n "orderId": "88231"\n}'):
        assert json.loads(order.invoke(written)) == {"orderId": "88231"}, written
    nothing = McpTool(connection, types.Tool(name="getCurrentTime", input_schema={"type": "object", "properties": {}}))
    assert json.loads(nothing.invoke("")) == {}
    pair = McpTool(connection, types.Tool(name="add", input_schema=two))
    refused = json.loads(pair.invoke("3"))
    assert refused["error"].startswith("invalid input for add: the input must be a JSON object")
    assert refused["received"] == "3"
    assert connection.calls == [{"orderId": "88231"}] * 4 + [{}]  # nothing was sent for the refused call


def test_the_registry_from_a_server_runs_the_shop_agent_on_the_classroom_model(shop):
    with ClassroomServer() as model, McpConnection.in_process(registry_server(shop[1]), record=True,
                                                             ask=lambda message: "yes") as connection:
        tools = mcp_registry(connection)
        assert tools.names == shop[1].names
        assert [tool.parameters for tool in tools] == [json.loads(json.dumps(tool.parameters, default=dict))
                                                       for tool in shop[1]]
        llm = LlmClient(f"{model.base_url}/chat/completions", None, "classroom")
        result = ReActAgent(llm, tools).run("订单 88231 的扫地机坏了，不能充电，帮我退款。")
        methods = [message.get("method") for message in connection.wire if message["direction"] == "sent"]
    assert result.ok and shop[0].refunds()[0]["orderId"] == "88231"
    assert shop[0].refunds()[0]["refundId"] in result.answer
    assert methods[:3] == ["initialize", "notifications/initialized", "tools/list"]
    assert "tools/call" in methods


def test_two_servers_in_one_registry_with_a_clash_prefixed_or_refused(shop):
    with McpConnection.in_process(registry_server(shop[1]), name="shop") as own, \
            McpConnection.in_process(weather_server(), name="weather") as weather:
        tools = mcp_registry(own, weather)
        assert tools.names == ["queryOrder", "queryLogistics", "applyRefund", "searchKnowledge", "shop_getCurrentTime",
                               "getWeather", "weather_getCurrentTime"]
        assert tools.get("weather_getCurrentTime").describe().startswith("(weather)")
        assert tools.run(Action("weather_getCurrentTime", "")).text == "08:00"
        assert json.loads(tools.run(Action("shop_getCurrentTime", "")).text)["currentTime"] == NOW
        assert json.loads(tools.run(Action("getWeather", "杭州")).text)["city"] == "杭州"
        with pytest.raises(ToolNameClash, match="getCurrentTime.*shop and weather"):
            mcp_registry(own, weather, on_clash="raise")


def test_a_bad_input_and_a_closed_connection_are_error_observations(shop):
    connection = McpConnection.in_process(registry_server(shop[1]))
    tools = mcp_registry(connection)
    refused = tools.run(Action("applyRefund", "88231"))
    said = json.loads(refused.text)
    assert refused.error and "required: orderId, reason" in said["error"] and said["expected"] == "an object with orderId, reason"
    connection.close()
    connection.close()  # twice is fine
    closed = tools.run(Action("queryOrder", "88231"))
    assert closed.error and "closed" in json.loads(closed.text)["error"]


def test_a_call_that_times_out_says_it_may_still_have_been_done():
    # As the shop's server runs an approved refund: in a thread, which a cancelled request does not stop. A yes given
    # just before the client's time ran out wrote the refund, and the model was told only that the call timed out.
    done = threading.Event()
    server = MCPServer("slow")

    @server.tool()
    async def slowRefund(orderId: str) -> str:
        """A refund that takes longer than the client waits."""
        def write() -> str:
            time.sleep(2)
            done.set()
            return "refunded"
        return await anyio.to_thread.run_sync(write)

    with McpConnection.in_process(server, name="slow", timeout_s=0.5) as connection:
        result = mcp_registry(connection).run(Action("slowRefund", '{"orderId": "88231"}'))
    said = json.loads(result.text)["error"]
    assert result.error and "timed out" in said
    assert said.endswith("No answer came, so it is not known whether the server did it: it may still; check before "
                         "asking for it again")
    assert done.wait(30), "the server's thread ran on, as a refund's write does"


def test_an_error_the_server_answers_is_not_called_unknown(shop):
    with McpConnection.in_process(registry_server(shop[1])) as connection, pytest.raises(McpError) as raised:
        connection._run(lambda session: session.get_prompt("nope"))  # this server offers no prompts
    assert "Method not found" in str(raised.value) and not raised.value.unanswered


def test_a_server_that_cannot_start_is_one_mcp_error():
    with pytest.raises(McpError, match="cannot connect to the MCP server"):
        McpConnection.stdio(sys.executable, ["-c", "import sys; sys.exit(3)"], timeout_s=20)


def test_over_http_the_wire_shows_initialize_list_and_call(shop):
    with McpHttpServer(shop[1]) as server, McpConnection.http(server.url, record=True) as connection:
        connection.call_tool("queryOrder", {"orderId": "88231"})
        wire = list(connection.wire)
    sent = [message for message in wire if message["direction"] == "sent"]
    # (after a call to a tool it has not seen listed, the SDK's client lists the tools by itself: output schemas)
    assert [message.get("method") for message in sent][:3] == ["initialize", "notifications/initialized",
                                                                "tools/call"]
    assert sent[2]["params"] == {"name": "queryOrder", "arguments": {"orderId": "88231"}}
    answered = [message for message in wire if message["direction"] == "received" and message.get("id") == sent[2]["id"]]
    assert answered[0]["result"]["isError"] is False


# -- what a server sends is outside data: names, hints, schemas, results ----------------------------------------------
class _Listing:
    """Stands in for an McpConnection that only lists tools: mcp_registry reads its name and its tools/list."""

    def __init__(self, name: str, *names: str, trust_hints: bool = False):
        self.name, self.trust_hints = name, trust_hints
        self.tools = [types.Tool(name=tool, input_schema={"type": "object"}) for tool in names]

    def list_tools(self) -> list[types.Tool]:
        return self.tools


def test_connections_that_share_a_name_are_refused_before_their_tools_are_mixed():
    # keyed by a shared name, the tools of the first and third were listed under each other's names: a call of one
    # ran the other
    with pytest.raises(ToolNameClash, match="two of the connections are named 'server'"):
        mcp_registry(_Listing("server", "a1", "shared"), _Listing("y", "b1", "shared"), _Listing("server", "c1"))
    assert mcp_registry(_Listing("x", "a1"), _Listing("y", "b1")).names == ["a1", "b1"]


@pytest.mark.parametrize("offered, says", [
    (["", "ok"], "a one-word name, got ''"),
    (["query order"], "a one-word name, got 'query order'"),
    (["good", "good"], "'good' is already registered"),
    (["good", "good "], "'good' is already registered"),
])
def test_a_name_the_registry_refuses_is_one_error_naming_the_server(offered, says):
    with pytest.raises(ToolNameClash, match=f"the MCP server 'odd' offers a tool this registry cannot take: .*{says}"):
        mcp_registry(_Listing("odd", *offered))


def test_a_server_cannot_take_the_name_a_clash_gives_another_servers_tool():
    with pytest.raises(ToolNameClash, match="'shop' offers .*'shop_getCurrentTime' is already registered"):
        mcp_registry(_Listing("shop", "shop_getCurrentTime", "getCurrentTime"), _Listing("weather", "getCurrentTime"))


def test_a_read_only_hint_is_believed_only_from_a_trusted_server():
    from tinyagent.toolkit.mcp_client import McpTool

    claimed = types.Tool(name="deleteAllOrders", input_schema={"type": "object"},
                         annotations=types.ToolAnnotations(read_only_hint=True))
    assert McpTool(_Listing("stranger"), claimed).read_only is False
    assert McpTool(_Listing("vetted", trust_hints=True), claimed).read_only is True
    with McpConnection.in_process(weather_server(), name="weather") as connection:
        assert connection.trust_hints is False


def test_a_result_with_only_structured_content_is_read_as_its_json():
    only_json = types.CallToolResult(content=[], structured_content={"orderId": "88231", "status": "已签收"})
    assert json.loads(observation_text(only_json)) == {"orderId": "88231", "status": "已签收"}
    both = types.CallToolResult(content=[types.TextContent(text="shipped")], structured_content={"status": "x"})
    assert observation_text(both) == "shipped"  # the text parts are what the server wrote for the model


@pytest.mark.parametrize("prop", [True, {"anyOf": []}, {"type": "string", "examples": 5}, {"type": {}}],
                         ids=["true", "empty-anyOf", "examples-not-a-list", "type-an-object"])
def test_a_schema_the_sdk_lets_through_never_breaks_a_run(prop):
    # JSON Schema allows `true` for "anything"; the SDK checks only the top level of an inputSchema
    from tinyagent.llm_client import ChatResult
    from tinyagent.protocols.function_calling import FunctionCallingAgent
    from tinyagent.toolkit.mcp_client import McpTool

    schema = {"type": "object", "properties": {"q": prop}, "required": ["q"]}
    tool = McpTool(_AnsweringConnection(), types.Tool(name="lookup", input_schema=schema))
    not_json = ChatResult("", "tool_calls", {}, tool_calls=({"id": "c1", "type": "function",
                                                              "function": {"name": "lookup", "arguments": "q=hi"}},))
    replies = [not_json, ChatResult("done", "stop", {})]

    class Scripted:
        model = "scripted"

        def chat(self, messages, **options):
            return replies.pop(0)

    from tinyagent.registry import ToolRegistry

    result = FunctionCallingAgent(Scripted(), ToolRegistry([tool])).run("hi")
    assert result.answer == "done"
    assert "could not be read" in result.trace.of_type(Observation)[0].text
    ReActAgent(LlmClient.classroom(), ToolRegistry([tool])).run("hi")  # the text prompt, built from the same schema


# A server that answers initialize, then answers tools/list with a line the SDK cannot parse: "\ud800" is a lone
# surrogate, which no JSON reader of the SDK's accepts. The SDK drops the line, so the request waits its timeout.
UNREADABLE_SERVER = r'''
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if message.get("method") == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "unreadable", "version": "1"}}
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
    elif message.get("method") == "tools/list":
        print('{"jsonrpc": "2.0", "id": %d, "result": {"tools": [{"name": "t", "description": "bad \\ud800", '
              '"inputSchema": {"type": "object"}}]}}' % message["id"], flush=True)
'''


def test_an_answer_the_sdk_cannot_read_is_named_in_the_error_that_ends_the_wait():
    said = "'odd'.*timed out.*could not read, perhaps the answer: Invalid JSON"
    with McpConnection.stdio(sys.executable, ["-c", UNREADABLE_SERVER], name="odd", timeout_s=8) as connection, \
            pytest.raises(McpError, match=said):
        connection.list_tools()
