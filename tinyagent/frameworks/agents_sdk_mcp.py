"""Lesson 24: the OpenAI Agents SDK finding the shop's tools through its own MCP support.

    run = run_over_mcp("Where is order 88231?", base_url=url, server={"url": "http://127.0.0.1:8765/mcp"})
    run.tools_listed, run.answer, run.calls          # what the server offered, what the agent said, what it sent

The agent gets no Python function at all: the SDK connects to the server (`MCPServerStreamableHttp` for a URL,
`MCPServerStdio` for a command), lists its tools, puts them in every request to the model, and sends each tool call
the model makes as a `tools/call`. The same server serves tinyagent's own client (toolkit/mcp_client.py), and the
SDK's client here is made to treat it the same way: each call is listed when it is sent (a run that then fails still
shows it), a long result is cut as lesson 06 cuts an Observation, and a call that got no answer is said to be perhaps
done, in tinyagent's words, not the SDK's "Please try again".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tinyagent.agent import MAX_OBSERVATION_CHARS
from tinyagent.errors import named_first_line
from tinyagent.frameworks.agents_sdk_agent import INSTRUCTIONS
from tinyagent.frameworks.setup import Setup, run_async
from tinyagent.frameworks.wire import WireCall
from tinyagent.loop_parts import cut_observation
from tinyagent.registry import ToolRegistry, error_observation

NAME = "OpenAI Agents SDK over MCP"


@dataclass
class McpAgentRun:
    """One request through the Agents SDK with the tools of an MCP server."""

    question: str
    answer: str | None
    error: str | None = None
    tools_listed: list[str] = field(default_factory=list)
    tools_called: list[str] = field(default_factory=list)
    calls: list[WireCall] = field(default_factory=list)


def run_over_mcp(question: str, *, base_url: str, server: dict[str, Any], model: str = "classroom",
                 api_key: str = "none", max_steps: int = 8, timeout: float = 60,
                 max_tokens: int | None = None) -> McpAgentRun:
    """Ask `question` with the tools of the MCP server `server`: {"url": ...} (Streamable HTTP) or
    {"command": ..., "args": [...], "env": {...}} (stdio). `timeout`: the seconds any one request may wait, to the
    model or to the server (starting it, listing, each tool call). A failure of the framework is the run's `error`;
    `tools_called` lists every call sent to the server, also when the run then failed."""
    from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, RunConfig, Runner

    from tinyagent.toolkit.mcp_client import first_failure

    # lesson 20's setup, with no tools of its own: the server has them
    setup = Setup(base_url, model, api_key, ToolRegistry(), max_steps, timeout, max_tokens)
    run = McpAgentRun(question, None)

    async def go() -> None:
        mcp = _shop_server(server, timeout, run.tools_called)
        async with mcp:
            run.tools_listed = [tool.name for tool in await mcp.list_tools()]
            agent = Agent(name="Bit Mall", instructions=INSTRUCTIONS, mcp_servers=[mcp],
                          model_settings=ModelSettings(max_tokens=setup.max_tokens))
            chat = OpenAIChatCompletionsModel(model=setup.model, openai_client=setup.async_openai_client())
            config = RunConfig(model=chat, tracing_disabled=True)  # tracing would post to OpenAI's servers
            result = await Runner.run(agent, question, run_config=config, max_turns=setup.max_steps)
            run.answer = str(result.final_output)

    try:
        run_async(go)
    except Exception as exc:  # noqa: BLE001 - the framework's failure is a result to look at
        exc = first_failure(exc)  # a server that never started fails inside anyio's task group: say what failed there
        run.error = named_first_line(exc)
    run.calls = list(setup.wire.calls)
    return run


def _shop_server(server: dict[str, Any], timeout: float, called: list[str]) -> Any:
    """The SDK's client of `server`, each request waiting at most `timeout` s (the SDK's own default is 5), noting
    each `tools/call` in `called` as it is sent and cutting what it returns as tinyagent's loop would."""
    from agents.exceptions import ModelBehaviorError
    from agents.mcp import MCPServerStdio, MCPServerStreamableHttp

    if "url" in server:
        transport, params = MCPServerStreamableHttp, {"url": server["url"], "timeout": timeout}
    else:
        transport, params = MCPServerStdio, server

    class ShopServer(transport):
        async def call_tool(self, tool_name: str, arguments: dict[str, Any] | None,
                            meta: dict[str, Any] | None = None) -> Any:
            if missing := _missing_required(self.cached_tools, tool_name, arguments):
                # The SDK refuses such a call unsent too, but with the error it gives a call that got no answer: so
                # it is refused here, as the SDK refuses arguments that are not JSON, and never said perhaps done.
                raise ModelBehaviorError(f"{tool_name} was not called: missing required parameters: "
                                         f"{', '.join(missing)}")
            called.append(tool_name)  # before it is sent: a server that does it and then breaks has still done it
            return _cut(await super().call_tool(tool_name, arguments, meta))

    return ShopServer(params=params, name="bitmall-shop", client_session_timeout_seconds=timeout,
                      failure_error_function=_say_tool_failed)


def _missing_required(listed: list[Any] | None, tool_name: str, arguments: dict[str, Any] | None) -> list[str]:
    """The parameters the listed tool's schema requires that `arguments` leaves out, in the schema's order."""
    tool = next((tool for tool in listed or () if tool.name == tool_name), None)
    schema = tool.input_schema if tool is not None else None
    required = schema.get("required") if isinstance(schema, dict) else None
    given = arguments if isinstance(arguments, dict) else {}
    return [name for name in required or () if isinstance(name, str) and name not in given]


def _cut(result: Any) -> Any:
    """A result longer than lesson 06's cap, as tinyagent's loop would give it: read as tinyagent reads a result (an
    embedded blob summarised in one line), then cut with a line telling the model so. A 20 MB result would otherwise
    go whole to the model."""
    from tinyagent.toolkit.mcp_client import observation_text

    size = sum(_size_sent(part) for part in result.content)
    if size <= MAX_OBSERVATION_CHARS:
        return result
    text, _ = cut_observation(observation_text(result), MAX_OBSERVATION_CHARS)
    return type(result)(content=[{"type": "text", "text": text}], is_error=result.is_error)


def _size_sent(part: Any) -> int:
    """How many characters of a content part the SDK passes to the model (MCPUtil.invoke_mcp_tool): a text part's
    text; any other part as its JSON, so an embedded resource's text or base64 blob, an image's or audio's base64
    counts too."""
    return len(part.text) if part.type == "text" else len(part.model_dump_json())


def _say_tool_failed(context: Any, error: Exception) -> str:
    """What the model reads when a tool call failed, as tinyagent's own client says it: the server's error, or, when
    no answer came (a timeout, the server gone), that it may have been done, so the model does not report a refund
    that ran as failed and ask for it again."""
    from agents.exceptions import ModelBehaviorError

    from tinyagent.toolkit.mcp_client import MAYBE_DONE, describe_failure, no_answer_came

    # Refused unsent: arguments that are not a JSON object (the SDK's ModelBehaviorError), or that leave out a required
    # parameter (ShopServer's, which the SDK wraps in an AgentsException on its way here).
    unsent = next((cause for cause in _chain(error) if isinstance(cause, ModelBehaviorError)), None)
    if unsent is not None:
        return error_observation(describe_failure(unsent))
    note = f". {MAYBE_DONE}" if no_answer_came(error) else ""
    return error_observation(f"{describe_failure(error)}{note}")


def _chain(error: BaseException) -> list[BaseException]:
    """The error and what it was raised from, in turn (`raise ... from`)."""
    chain = [error]
    while chain[-1].__cause__ is not None and chain[-1].__cause__ not in chain:
        chain.append(chain[-1].__cause__)
    return chain
