"""The shop's five tools as typed Python functions: what every framework builds its own tool type from.

A framework reads a function's name, type hints and docstring (LangChain's `StructuredTool`, LlamaIndex's
`FunctionTool`, smolagents' `@tool`, pydantic-ai's tools, the Agents SDK's `function_tool`), the way lesson 07's
`@tool` does. Each function runs the shop's real tool through the course's registry, so applyRefund writes a
real row, and it notes the call in `ToolLog`: the same record of tool calls lesson 18's grading reads from a
trace, kept here because a framework's loop makes no trace of ours.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from tinyagent.evaluation.grading import ToolUse
from tinyagent.registry import ToolRegistry
from tinyagent.tools import Action


class ToolFailed(RuntimeError):
    """A shop tool's error, raised instead of returned (`ToolLog(raise_errors=True)`): how a tool written
    the usual Python way reports a failure, and what lesson 20 hands each framework to see what it does."""


@dataclass
class ToolLog:
    """The tool calls a framework made, as they ran, with whether each one's result was an error
    (`run_framework` lists them in the order the model asked: `in_asked_order`).

    raise_errors: raise ToolFailed for an error result rather than return it as the tool's text
    """

    uses: list[ToolUse] = field(default_factory=list)
    raise_errors: bool = False

    def run(self, registry: ToolRegistry, name: str, text: str) -> str:
        result = registry.run(Action(name, text))
        self.uses.append(ToolUse(name, text, result.error, result.text))
        if result.error and self.raise_errors:
            raise ToolFailed(result.text)
        return result.text


def in_asked_order(uses: list[ToolUse], asked: list[tuple[str, str]]) -> list[ToolUse]:
    """The tool uses in the order the model asked for them: `asked` is each reply's tool calls, (name,
    arguments JSON), reply after reply (`WireCall.asked`).

    A framework that runs one reply's tool calls at once (in threads, or as async tasks) logs them as they
    finish, and that order changes from run to run. Each use is matched to the first asked call of its name
    whose arguments are the use's, or else of its name; a use no reply asked for keeps its place after them.
    """
    left = list(uses)
    ordered = []
    for name, arguments in asked:
        same_name = [use for use in left if use.name == name]
        exact = [use for use in same_name if _asked_with(use, arguments)]
        if same_name:
            match = (exact or same_name)[0]
            left.remove(match)
            ordered.append(match)
    return ordered + left


def _asked_with(use: ToolUse, arguments: str) -> bool:
    """Whether the use's input is the arguments' values: the one value itself, or the JSON of several."""
    try:
        given = json.loads(arguments or "{}")
        values = sorted(str(value) for value in given.values())
    except (ValueError, TypeError, AttributeError):
        return False
    if len(values) <= 1:
        return use.input == (values[0] if values else "")
    try:
        logged = json.loads(use.input)
        return sorted(str(value) for value in logged.values()) == values
    except (ValueError, TypeError, AttributeError):
        return False


def shop_functions(registry: ToolRegistry, log: ToolLog) -> list[Callable[..., str]]:
    """queryOrder, queryLogistics, applyRefund, searchKnowledge, getCurrentTime, each calling `registry`."""

    def queryOrder(orderId: str) -> str:  # the shop's own tool names: the model sees these
        """Look up an order and its trackingNo.

        Args:
            orderId: the order id, e.g. 88231
        """
        return log.run(registry, "queryOrder", str(orderId))

    def queryLogistics(trackingNo: str) -> str:
        """Track a parcel by its trackingNo (from queryOrder).

        Args:
            trackingNo: the tracking number from queryOrder, e.g. SF1234567890
        """
        return log.run(registry, "queryLogistics", str(trackingNo))

    def applyRefund(orderId: str, reason: str) -> str:
        """Submit a refund (really recorded, once per order).

        Args:
            orderId: the order id, e.g. 88231
            reason: why the customer wants the refund
        """
        text = json.dumps({"orderId": str(orderId), "reason": reason}, ensure_ascii=False)
        return log.run(registry, "applyRefund", text)

    def searchKnowledge(query: str) -> str:
        """Search the after-sales policies.

        Args:
            query: keywords, e.g. return policy
        """
        return log.run(registry, "searchKnowledge", query)

    def getCurrentTime() -> str:
        """The current date and time."""
        return log.run(registry, "getCurrentTime", "")

    return [queryOrder, queryLogistics, applyRefund, searchKnowledge, getCurrentTime]
