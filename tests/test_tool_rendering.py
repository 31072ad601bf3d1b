"""tool_rendering.py: a tool rendered for native function calling and for the text prompt, and a native call's
arguments turned back into the Action Input the same registry runs."""

from __future__ import annotations

import json

import pytest

from tinyagent import Action, FunctionTool, LlmClient, ToolRegistry, fixed_clock, tool
from tinyagent.protocols.tool_rendering import (
    FREE_TEXT_PARAMETERS,
    function_spec,
    function_specs,
    input_from_arguments,
    input_hint,
    type_words,
)
from tinyagent.shop import Shop, shop_registry, shop_tools
from tinyagent.toolkit.validation import problems_in

CLOCK = fixed_clock("2026-06-30T19:05:23")


@tool(name="writeNote", descriptions={"zh": "记一条备注。"}, param_descriptions={"zh": {"text": "备注内容"}})
def write_note(order_id: str, text: str, urgent: bool = False) -> dict:
    """Add a note to an order.

    Args:
        order_id: the order id, e.g. 88231
        text: what to note
        urgent: show it first
    """
    return {"orderId": order_id, "text": text, "urgent": urgent}


def test_a_typed_tool_as_a_native_function_in_each_language():
    spec = function_spec(write_note)
    assert spec == {"type": "function", "function": {
        "name": "writeNote", "description": "Add a note to an order.", "parameters": write_note.parameters}}
    zh = function_spec(write_note, "zh")["function"]
    assert zh["description"] == "记一条备注。"  # the summary: no "Input: ..." line, the schema says it
    assert zh["parameters"]["properties"]["text"]["description"] == "备注内容"
    assert write_note.parameters["properties"]["text"]["description"] == "what to note"  # not changed


def test_a_spec_is_a_copy_the_caller_may_change():
    spec = function_spec(write_note)
    spec["function"]["parameters"]["properties"].clear()
    assert write_note.parameters["properties"]


def test_a_tool_without_parameters_takes_one_free_text_input():
    echo = FunctionTool("echo", "Repeats its input. Input: any text.", lambda text: text)
    assert echo.parameters is None
    spec = function_spec(echo)["function"]
    assert spec["parameters"] == FREE_TEXT_PARAMETERS and spec["description"] == "Repeats its input. Input: any text."
    assert input_from_arguments(echo, {"input": "hello"}) == "hello"
    assert input_from_arguments(echo, '{"input": "hello"}') == "hello"
    assert input_from_arguments(echo, {"input": 5}) == "5"
    assert input_from_arguments(echo, {}) == "" and input_from_arguments(echo, None) == ""
    assert input_from_arguments(echo, {"text": "hi"}) == '{"text":"hi"}'  # a wrong name: the tool reads it


def test_function_tool_can_be_given_parameters():
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    assert FunctionTool("search", "Search.", lambda text: text, parameters=schema).parameters == schema


def test_the_shop_tools_have_parameters_and_their_descriptions_are_unchanged():
    tools = {t.name: t for t in shop_tools(Shop(":memory:", clock=CLOCK))}
    # The prompt text of lessons 00-06: these exact words.
    assert tools["queryOrder"].describe("zh") == "查询订单详情和运单号。输入：订单号，如 88231。"
    assert tools["queryOrder"].description == "Look up an order and its trackingNo. Input: the order id, e.g. 88231."
    assert tools["getCurrentTime"].describe("zh") == "获取当前日期时间。输入：无（留空）。"
    expected = {"queryOrder": ["orderId"], "queryLogistics": ["trackingNo"], "applyRefund": ["orderId", "reason"],
                "searchKnowledge": ["query"], "getCurrentTime": []}
    for name, fields in expected.items():
        params = tools[name].parameters
        assert list(params["properties"]) == fields and params.get("required", []) == fields
        assert params["additionalProperties"] is False


@pytest.mark.parametrize(
    "name, arguments, expect",
    [
        ("queryOrder", {"orderId": "88231"}, '"trackingNo":"SF1234567890"'),
        ("queryLogistics", {"trackingNo": "SF1234567890"}, "快件已由本人签收"),
        ("applyRefund", {"orderId": "88231", "reason": "faulty: does not dock"}, '"refundId":"RF202606300001"'),
        ("searchKnowledge", {"query": "退货"}, "七天无理由退货政策"),
        ("getCurrentTime", {}, '"currentTime":"2026-06-30T19:05:23"'),
    ],
)
def test_native_arguments_run_each_shop_tool(name, arguments, expect):
    registry = shop_registry(Shop(":memory:", clock=CLOCK))
    tool_ = registry.get(name)
    assert problems_in(arguments, tool_.parameters) == []  # the arguments its own schema asks for
    result = registry.run(Action(name, input_from_arguments(tool_, arguments)))
    assert not result.error and expect in result.text
    as_string = registry.run(Action(name, input_from_arguments(tool_, json.dumps(arguments))))
    assert as_string.text == registry.run(Action(name, input_from_arguments(tool_, arguments))).text


def test_native_arguments_run_a_typed_tool_with_its_checks():
    assert input_from_arguments(write_note, {"order_id": "88231", "text": "call back"}) == (
        '{"order_id":"88231","text":"call back"}'
    )
    registry = ToolRegistry([write_note])
    ok = registry.run(Action("writeNote", input_from_arguments(write_note, {"order_id": "88231", "text": "x"})))
    assert json.loads(ok.text) == {"orderId": "88231", "text": "x", "urgent": False}
    bad = registry.run(Action("writeNote", input_from_arguments(write_note, {"order_id": 88231})))
    assert bad.error and json.loads(bad.text)["field"] == "order_id"
    broken = registry.run(Action("writeNote", input_from_arguments(write_note, '{"order_id": ')))
    assert broken.error and "not valid JSON" in json.loads(broken.text)["error"]


@pytest.mark.parametrize(
    "schema, words",
    [
        ({"type": "string"}, "string"),
        ({"type": "string", "enum": ["a", "b"]}, '"a" | "b"'),
        ({"type": "array", "items": {"type": "integer"}}, "list of integer"),
        ({"type": "object", "properties": {"city": {}, "street": {}}}, "object {city, street}"),
        ({"type": ["string", "null"]}, "string | null"),
        ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, "integer | null"),
        ({}, "any"),
    ],
)
def test_type_words(schema, words):
    assert type_words(schema) == words


def test_input_hint_for_no_one_and_several_fields():
    assert input_hint(None) == ""
    assert input_hint({"type": "object", "properties": {}}) == "Input: none (leave it empty)."
    assert input_hint({"type": "object", "properties": {}}, "zh") == "输入：无（留空）。"
    one = {"type": "object", "properties": {"q": {"type": "string", "description": "keywords\n  to find"}}}
    assert input_hint(one) == 'Input: q (string): keywords to find. As JSON: {"q": "..."}.'
    assert "\n" not in input_hint(write_note.parameters)


def test_the_classroom_model_calls_the_shop_natively_with_these_specs():
    """The whole function-calling round trip lesson 09 builds on: specs out, tool_calls back, run, feed back."""
    shop = Shop(":memory:", clock=CLOCK)
    registry = shop_registry(shop)
    llm = LlmClient.classroom()
    messages = [{"role": "user", "content": "我上周买的扫地机不回充了，修不好我想退。订单号 88231。"}]
    called = []
    for _ in range(8):
        reply = llm.chat(messages, tools=function_specs(registry, "zh"))
        if not reply.tool_calls:
            break
        messages.append({"role": "assistant", "content": reply.text or None, "tool_calls": list(reply.tool_calls)})
        for call in reply.tool_calls:
            name, arguments = call["function"]["name"], call["function"]["arguments"]
            result = registry.run(Action(name, input_from_arguments(registry.get(name), arguments)))
            called.append((name, result.error))
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result.text})
    assert [name for name, _ in called] == ["queryOrder", "getCurrentTime", "searchKnowledge", "applyRefund"]
    assert not any(error for _, error in called)
    assert shop.refunds()[0]["refundId"] in reply.text
