"""Stand-ins shared by lesson 17's tests: a scripted model, a tool that fails, a client that slips."""

from __future__ import annotations

import json
from dataclasses import replace

from tinyagent import FunctionTool, ToolRegistry, fixed_clock
from tinyagent.errors import LlmConnectionError
from tinyagent.llm_client import ChatResult
from tinyagent.shop import Shop, shop_registry

CLOCK = fixed_clock("2026-06-30T19:05:23")
TWO_ORDERS_AND_A_POLICY = "订单 88231 和 88232 的物流都查一下，另外七天无理由退货怎么算运费？"


def shop_tools() -> ToolRegistry:
    return shop_registry(Shop(":memory:", clock=CLOCK), CLOCK)


class ScriptedLlm:
    """Answers each call with the next reply of the script (a string, or an exception to raise); records calls."""

    def __init__(self, *replies):
        self.replies = list(replies)
        self.calls: list[list[dict]] = []

    def chat(self, messages, **options):
        self.calls.append([dict(m) for m in messages])
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return ChatResult(reply, "stop", {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2})


def down() -> LlmConnectionError:
    return LlmConnectionError("cannot connect (a test)")


def with_failing_logistics(tools: ToolRegistry, failures: int) -> ToolRegistry:
    """`tools` with a queryLogistics that reports an error for its first `failures` calls (-1: every call)."""
    real = tools.get("queryLogistics")
    left = {"n": failures}

    def flaky(text: str) -> str:
        if left["n"] != 0:
            left["n"] -= 1
            return json.dumps({"error": "快递公司接口超时，请稍后再试"}, ensure_ascii=False)
        return real.invoke(text)

    swapped = FunctionTool("queryLogistics", real.description, flaky, real.descriptions)
    return ToolRegistry([swapped if tool.name == "queryLogistics" else tool for tool in tools])


class SlippingLlm:
    """A client whose final answers swap one order status for another: the draft a reflection must catch."""

    def __init__(self, llm, wrong: str = "已签收", written: str = "运输中"):
        self.llm, self.wrong, self.written = llm, wrong, written

    def chat(self, messages, **options):
        reply = self.llm.chat(messages, **options)
        if "Final Answer" in reply.text:
            return replace(reply, text=reply.text.replace(self.wrong, self.written, 1))
        return reply
