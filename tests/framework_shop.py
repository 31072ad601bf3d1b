"""What every framework test shares: the classroom model on loopback, the real shop, and its tools as plain
typed Python functions, which each framework wraps in its own tool type (LangChain's `StructuredTool`,
LlamaIndex's `FunctionTool`, smolagents' `@tool`, pydantic-ai's tools, the Agents SDK's `function_tool`).

Each function calls the shop's real tool, so applyRefund writes a real row that the test then reads back.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from typing import Any

import pytest

from tinyagent import fixed_clock
from tinyagent.shop import Shop, shop_tools

NOW = "2026-06-30T19:05:23"  # the course's "today": order 88231 was signed eight days before
REFUND_REQUEST = "Order 88231: my robot vacuum won't charge any more. Please refund it."
REFUND_ID = "RF202606300001"

# The standard ReAct prompt of LangChain's hub ("hwchase17/react"), which create_react_agent is used with:
# the tools and the scratchpad (earlier Thoughts, Actions and Observations) all inside one human message.
CLASSIC_REACT_PROMPT = """Answer the following questions as best you can. You have access to the following tools:

{tools}

Use the following format:

Question: the input question you must answer
Thought: you should always think about what to do
Action: the action to take, should be one of [{tool_names}]
Action Input: the input to the action
Observation: the result of the action
... (this Thought/Action/Action Input/Observation can repeat N times)
Thought: I now know the final answer
Final Answer: the final answer to the original input question

Begin!

Question: {input}
Thought:{agent_scratchpad}"""


def need(module: str) -> Any:
    """Import a framework of the `frameworks` extra: skipped where it is not installed, a failure in CI."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"{module} is missing in CI: `make setup` installs the frameworks extra ({exc})")
        pytest.skip(f'{module} is not installed: pip install -e ".[frameworks]"')


def new_shop() -> Shop:
    return Shop(":memory:", clock=fixed_clock(NOW))


def shop_functions(shop: Shop) -> list[Callable[..., str]]:
    """The five shop tools as functions with type hints and a docstring (what frameworks build schemas from)."""
    tools = {tool.name: tool for tool in shop_tools(shop)}

    def run(name: str, text: str) -> str:
        return tools[name].invoke(text)

    def queryOrder(orderId: str) -> str:  # the shop's tool names, as the model sees them
        """Look up an order and its trackingNo.

        Args:
            orderId: the order id, e.g. 88231
        """
        return run("queryOrder", str(orderId))

    def queryLogistics(trackingNo: str) -> str:
        """Track a parcel by its trackingNo (from queryOrder).

        Args:
            trackingNo: the tracking number from queryOrder, e.g. SF1234567890
        """
        return run("queryLogistics", str(trackingNo))

    def applyRefund(orderId: str, reason: str) -> str:
        """Submit a refund (really recorded, once per order).

        Args:
            orderId: the order id, e.g. 88231
            reason: why the customer wants the refund
        """
        import json

        return run("applyRefund", json.dumps({"orderId": str(orderId), "reason": reason}, ensure_ascii=False))

    def searchKnowledge(query: str) -> str:
        """Search the after-sales policies.

        Args:
            query: keywords, e.g. return policy
        """
        return run("searchKnowledge", query)

    def getCurrentTime() -> str:
        """The current date and time."""
        return run("getCurrentTime", "")

    return [queryOrder, queryLogistics, applyRefund, searchKnowledge, getCurrentTime]


def assert_refunded(shop: Shop, answer: object) -> None:
    """The refund row is really there, once, and the answer names its id."""
    assert [(r["orderId"], r["refundId"]) for r in shop.refunds()] == [("88231", REFUND_ID)]
    assert REFUND_ID in str(answer)
