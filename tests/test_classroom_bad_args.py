"""The `classroom-bad-args` variant (lesson 07): a mistake in the first call to each tool, read from the error
Observation and fixed on the next round; and the careful model follows the field names a prompt shows."""

from __future__ import annotations

import json

import pytest

from tinyagent import (
    Action,
    LlmClient,
    Observation,
    ReActAgent,
    ToolRegistry,
    fixed_clock,
    tool,
    write_file_tool,
)
from tinyagent.protocols.tool_rendering import function_specs, input_from_arguments
from tinyagent.shop import Shop, shop_registry

REFUND = "我上周买的扫地机不回充了，修不好我想退。订单号 88231。"
PARCEL = "Where is my parcel? It's order 88231."


def typed_registry(shop: Shop) -> ToolRegistry:
    """queryOrder and applyRefund as typed tools (strict about their fields), the rest the shop's own."""

    @tool(name="queryOrder")
    def query_order(order_id: str) -> dict:
        """Look up an order and its tracking number.

        Args:
            order_id: the order id, e.g. 88231
        """
        return shop.get_order(order_id) or {"error": f"no order {order_id}"}

    @tool(name="applyRefund")
    def apply_refund(order_id: str, reason: str) -> dict:
        """Submit a refund.

        Args:
            order_id: the order id, e.g. 88231
            reason: why the customer wants the money back
        """
        refund = shop.apply_refund(order_id, reason)
        return {"refundId": refund["refundId"], "amount": refund["amount"]}

    own = {t.name: t for t in shop_registry(shop)}
    return ToolRegistry([query_order, own["queryLogistics"], apply_refund, own["searchKnowledge"],
                         own["getCurrentTime"]])


def new_shop() -> Shop:
    return Shop(":memory:", clock=fixed_clock("2026-06-30T19:05:23"))


def observations(result) -> list[Observation]:
    return [event for event in result.trace.events if isinstance(event, Observation)]


def test_the_refund_with_a_wrong_type_and_a_missing_field_each_fixed_next_round():
    shop = new_shop()
    result = ReActAgent(LlmClient.classroom("classroom-bad-args"), typed_registry(shop)).run(REFUND)
    calls = [(call.name, call.input) for call in result.trace.tool_calls]
    assert calls[0] == ("queryOrder", '{"order_id":88231}')  # a number where the example shows a string
    assert calls[1] == ("queryOrder", '{"order_id":"88231"}')  # as the error's example shows
    assert [name for name, _ in calls] == ["queryOrder", "queryOrder", "getCurrentTime", "searchKnowledge",
                                           "applyRefund", "applyRefund"]
    assert calls[4] == ("applyRefund", '{"order_id":"88231"}')  # the reason left out
    assert json.loads(calls[5][1])["reason"].startswith("质量问题")
    errors = [json.loads(o.text) for o in observations(result) if o.error]
    assert [(e["field"], e["error"]) for e in errors] == [
        ("order_id", "invalid input for queryOrder: order_id must be a string, got the number 88231"),
        ("reason", "invalid input for applyRefund: reason is missing"),
    ]
    assert result.reason == "final_answer" and result.trace.rounds == 7
    [refund] = shop.refunds()
    assert refund["refundId"] in result.answer


def test_the_fixing_round_says_what_the_error_was():
    result = ReActAgent(LlmClient.classroom("classroom-bad-args"), typed_registry(new_shop())).run(PARCEL)
    thoughts = [event.thought for event in result.trace.events if type(event).__name__ == "Parsed"]
    assert thoughts[1].startswith("queryOrder rejected my input: invalid input for queryOrder: order_id must be "
                                  "a string, got the number 88231. I write it as its example shows")
    assert not thoughts[0].startswith("queryOrder rejected") and not thoughts[2].startswith("queryOrder rejected")
    assert result.trace.rounds == 4 and "SF1234567890" in result.answer
    zh = ReActAgent(LlmClient.classroom("classroom-bad-args"), typed_registry(new_shop())).run(REFUND)
    parsed = [event.thought for event in zh.trace.events if type(event).__name__ == "Parsed"]
    assert parsed[1].startswith("queryOrder 拒绝了刚才的输入：") and parsed[5].startswith("applyRefund 拒绝了刚才的输入：")


def test_the_careful_model_writes_the_fields_the_prompt_shows():
    shop = new_shop()
    result = ReActAgent(LlmClient.classroom(), typed_registry(shop)).run(REFUND)
    assert not any(o.error for o in observations(result))
    refund_input = json.loads(result.trace.tool_calls[3].input)
    assert list(refund_input) == ["order_id", "reason"]  # the typed tool's names, not the shop's orderId
    assert result.trace.rounds == 5 and len(shop.refunds()) == 1


def test_on_the_shops_own_tools_only_the_strict_one_complains():
    # queryOrder forgives {"orderId": 88231}; applyRefund needs its reason and says so, with an example.
    shop = new_shop()
    result = ReActAgent(LlmClient.classroom("classroom-bad-args"), shop_registry(shop)).run(REFUND)
    calls = [(call.name, call.input) for call in result.trace.tool_calls]
    assert calls[0] == ("queryOrder", '{"orderId":88231}')
    assert [name for name, _ in calls] == ["queryOrder", "getCurrentTime", "searchKnowledge", "applyRefund",
                                           "applyRefund"]
    assert calls[3] == ("applyRefund", '{"orderId":"88231"}')
    assert json.loads(calls[4][1])["reason"]
    assert len(shop.refunds()) == 1 and result.reason == "final_answer"


def test_write_file_first_leaves_out_the_content_then_writes_it(tmp_path):
    registry = ToolRegistry([write_file_tool(tmp_path)])
    result = ReActAgent(LlmClient.classroom("classroom-bad-args"), registry).run("把 1 到 10 的整数写入 numbers.txt")
    first, second = observations(result)
    assert first.error and json.loads(first.text)["field"] == "content"
    assert not second.error and json.loads(second.text)["written"] == "numbers.txt"
    assert (tmp_path / "numbers.txt").read_text() == "\n".join(map(str, range(1, 11)))


def test_a_tool_without_arguments_or_with_a_word_is_called_right_the_first_time():
    result = ReActAgent(LlmClient.classroom("classroom-bad-args"), typed_registry(new_shop())).run(
        "What is your exchange policy?")
    assert [(c.name, c.input) for c in result.trace.tool_calls] == [("searchKnowledge", "What is your exchange policy")]


@pytest.mark.parametrize("question, tools", [(REFUND, ["queryOrder", "queryOrder", "getCurrentTime",
                                                       "searchKnowledge", "applyRefund", "applyRefund"])])
def test_function_calling_makes_the_same_mistakes_and_fixes_them(question, tools):
    shop = new_shop()
    registry = typed_registry(shop)
    llm = LlmClient.classroom("classroom-bad-args")
    messages = [{"role": "user", "content": question}]
    made = []
    for _ in range(10):
        reply = llm.chat(messages, tools=function_specs(registry, "zh"))
        if not reply.tool_calls:
            break
        messages.append({"role": "assistant", "content": reply.text or None, "tool_calls": list(reply.tool_calls)})
        for call in reply.tool_calls:
            name, arguments = call["function"]["name"], json.loads(call["function"]["arguments"])
            result = registry.run(Action(name, input_from_arguments(registry.get(name), arguments)))
            made.append((name, arguments, result.error))
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result.text})
    assert [name for name, _, _ in made] == tools
    assert made[0][1] == {"order_id": 88231} and made[0][2]  # the wrong type, judged by the schema
    assert made[1][1] == {"order_id": "88231"} and not made[1][2]
    assert made[4][1] == {"order_id": "88231"} and made[4][2]  # reason left out
    assert not made[5][2] and shop.refunds()[0]["refundId"] in reply.text
