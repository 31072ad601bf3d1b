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
from tinyagent.frameworks.langchain_classic_agent import REACT_PROMPT
from tinyagent.frameworks.shop_functions import ToolLog
from tinyagent.frameworks.shop_functions import shop_functions as package_shop_functions
from tinyagent.shop import Shop, shop_registry

NOW = "2026-06-30T19:05:23"  # the course's "today": order 88231 was signed eight days before
REFUND_REQUEST = "Order 88231: my robot vacuum won't charge any more. Please refund it."
REFUND_ID = "RF202606300001"

# The standard ReAct prompt of LangChain's hub ("hwchase17/react"), which create_react_agent is used with: the
# package's adapter keeps it (tinyagent/frameworks/langchain_classic_agent.py).
CLASSIC_REACT_PROMPT = REACT_PROMPT


def need(module: str, extra: str = "frameworks") -> Any:
    """Import a framework of the `frameworks` extra (or `extra`): skipped where it is not installed, a failure
    in CI."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"{module} is missing in CI: `make setup` installs the {extra} extra ({exc})")
        pytest.skip(f'{module} is not installed: pip install -e ".[{extra}]"')


def new_shop() -> Shop:
    return Shop(":memory:", clock=fixed_clock(NOW))


def shop_functions(shop: Shop) -> list[Callable[..., str]]:
    """The five shop tools as functions with type hints and a docstring (what frameworks build schemas from):
    the package's own (tinyagent/frameworks/shop_functions.py), which lesson 20 gives every framework."""
    return package_shop_functions(shop_registry(shop), ToolLog())


def assert_refunded(shop: Shop, answer: object) -> None:
    """The refund row is really there, once, and the answer names its id."""
    assert [(r["orderId"], r["refundId"]) for r in shop.refunds()] == [("88231", REFUND_ID)]
    assert REFUND_ID in str(answer)
