"""LangChain 1.x: `create_agent` (a LangGraph graph: a model node, a tool node, and the edge between them)."""

from __future__ import annotations

from tinyagent.frameworks.setup import Setup

NAME = "LangChain create_agent"


def chat_model(setup: Setup):
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model=setup.model, base_url=setup.base_url, api_key=setup.api_key, max_retries=0,
                      timeout=setup.timeout, http_client=setup.wire.client(setup.timeout),
                      http_async_client=setup.wire.async_client(setup.timeout), max_tokens=setup.max_tokens)


def tools(setup: Setup) -> list:
    from langchain_core.tools import StructuredTool

    return [StructuredTool.from_function(fn, parse_docstring=True) for fn in setup.functions()]


def run(setup: Setup, question: str) -> str:
    from langchain.agents import create_agent

    agent = create_agent(chat_model(setup), tools(setup))
    # A graph counts super-steps, two per round (the model, then its tools), and one for the last answer.
    state = agent.invoke({"messages": [{"role": "user", "content": question}]},
                         {"recursion_limit": 2 * setup.max_steps + 1})
    return str(state["messages"][-1].content)
