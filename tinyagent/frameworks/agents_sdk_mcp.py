"""Lesson 24: the OpenAI Agents SDK finding the shop's tools through its own MCP support.

    run = run_over_mcp("Where is order 88231?", base_url=url, server={"url": "http://127.0.0.1:8765/mcp"})
    run.tools_listed, run.answer, run.calls          # what the server offered, what the agent said, what it sent

The agent gets no Python function at all: the SDK connects to the server (`MCPServerStreamableHttp` for a URL,
`MCPServerStdio` for a command), lists its tools, puts them in every request to the model, and sends each tool call
the model makes as a `tools/call`. The same server serves tinyagent's own client (toolkit/mcp_client.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tinyagent.frameworks.agents_sdk_agent import INSTRUCTIONS
from tinyagent.frameworks.setup import Setup, run_async
from tinyagent.frameworks.wire import WireCall
from tinyagent.registry import ToolRegistry

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
    {"command": ..., "args": [...], "env": {...}} (stdio). A failure of the framework is the run's `error`."""
    from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, RunConfig, Runner
    from agents.items import ToolCallItem
    from agents.mcp import MCPServerStdio, MCPServerStreamableHttp

    # lesson 20's setup, with no tools of its own: the server has them
    setup = Setup(base_url, model, api_key, ToolRegistry(), max_steps, timeout, max_tokens)
    run = McpAgentRun(question, None)

    async def go() -> None:
        if "url" in server:
            mcp = MCPServerStreamableHttp(params={"url": server["url"]}, name="bitmall-shop")
        else:
            mcp = MCPServerStdio(params=server, name="bitmall-shop")
        async with mcp:
            run.tools_listed = [tool.name for tool in await mcp.list_tools()]
            agent = Agent(name="Bit Mall", instructions=INSTRUCTIONS, mcp_servers=[mcp],
                          model_settings=ModelSettings(max_tokens=setup.max_tokens))
            chat = OpenAIChatCompletionsModel(model=setup.model, openai_client=setup.async_openai_client())
            config = RunConfig(model=chat, tracing_disabled=True)  # tracing would post to OpenAI's servers
            result = await Runner.run(agent, question, run_config=config, max_turns=setup.max_steps)
            run.tools_called = [getattr(item.raw_item, "name", "?") for item in result.new_items
                                if isinstance(item, ToolCallItem)]
            run.answer = str(result.final_output)

    try:
        run_async(go)
    except Exception as exc:  # noqa: BLE001 - the framework's failure is a result to look at
        run.error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    run.calls = list(setup.wire.calls)
    return run
