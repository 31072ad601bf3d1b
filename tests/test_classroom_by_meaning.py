"""The classroom model reads a request by meaning, not by one client's spelling: six ways, each with a request as a
real client sends it (the official `openai` client, unchanged, against the classroom server) and the shop's real
tools run in between, so the refunds table shows what the model did (docs/classroom-model.md, *Any client*)."""

from __future__ import annotations

import json
import re

import pytest

openai = pytest.importorskip("openai")

from tinyagent import Action
from tinyagent.checks.reporting import COURSE_NOW
from tinyagent.classroom.format_instructions import without_format_instructions
from tinyagent.classroom.server import ClassroomServer
from tinyagent.clock import fixed_clock
from tinyagent.protocols.tool_rendering import function_spec
from tinyagent.shop import Shop, shop_registry

REFUND = "我上周买的扫地机不回充了，修不好我想退。订单号 88231。"


@pytest.fixture(scope="module")
def client():
    with ClassroomServer() as running:
        yield openai.OpenAI(base_url=running.base_url, api_key="unused", max_retries=0, timeout=60)


@pytest.fixture
def shop():
    return Shop(":memory:", clock=fixed_clock(COURSE_NOW))


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def tools_of(shop: Shop, rename=lambda name: name) -> list[dict]:
    """The shop's tools as a client declares them, under its own names (and its own argument names)."""
    tools = []
    for tool in shop_registry(shop):
        spec = function_spec(tool, "en")["function"]
        schema = spec["parameters"]
        properties = {rename(key): value for key, value in (schema.get("properties") or {}).items()}
        parameters = {**schema, "properties": properties, "required": [rename(k) for k in schema.get("required", [])]}
        tools.append({"type": "function", "function": {"name": rename(tool.name), "description": spec["description"],
                                                        "parameters": parameters}})
    return tools


def run_loop(client, shop: Shop, messages: list[dict], *, rename=lambda name: name, wrap=lambda text: text,
             rounds: int = 8, **options) -> tuple[str | None, list[str]]:
    """A native tool loop as a client library runs it: call, run each tool, send its result back (wrapped the
    client's way). Returns the final text and the names of the tools called."""
    registry, called = shop_registry(shop), []
    back = {rename(tool.name): tool.name for tool in registry}
    messages = list(messages)
    for _ in range(rounds):
        reply = client.chat.completions.create(model="classroom", messages=messages, tools=tools_of(shop, rename),
                                               **options).choices[0].message
        if not reply.tool_calls:
            return reply.content, called
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments}}
            for c in reply.tool_calls]})
        for call in reply.tool_calls:
            called.append(call.function.name)
            arguments = {(next((k for k in ("orderId", "trackingNo", "query", "reason")
                                if snake(k) == key), key)): value
                         for key, value in json.loads(call.function.arguments or "{}").items()}
            result = registry.execute(Action(back[call.function.name], json.dumps(arguments, ensure_ascii=False)
                                             if arguments else ""))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": wrap(result)})
    raise AssertionError(f"no answer after {rounds} rounds: {called}")


# 1. tool_choice, honoured -------------------------------------------------------------------------------
def test_a_named_function_in_tool_choice_gets_a_call_to_that_function(client, shop):
    ask = [{"role": "user", "content": "Where is the parcel of order 88231?"}]
    reply = client.chat.completions.create(model="classroom", messages=ask, tools=tools_of(shop),
                                           tool_choice={"type": "function", "function": {"name": "searchKnowledge"}})
    [call] = reply.choices[0].message.tool_calls
    assert call.function.name == "searchKnowledge" and json.loads(call.function.arguments)["query"]
    # after the order is known, a forced getCurrentTime is a call too, not prose
    order = shop_registry(shop).execute(Action("queryOrder", "88231"))
    known = [*ask, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "queryOrder", "arguments": '{"orderId": "88231"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": order}]
    forced = client.chat.completions.create(model="classroom", messages=known, tools=tools_of(shop),
                                            tool_choice={"type": "function", "function": {"name": "queryLogistics"}})
    [call] = forced.choices[0].message.tool_calls
    assert (call.function.name, json.loads(call.function.arguments)) == ("queryLogistics", {"trackingNo": "SF1234567890"})


def test_tool_choice_required_always_calls_and_none_never_does(client, shop):
    order = shop_registry(shop).execute(Action("queryOrder", "88231"))
    known = [{"role": "user", "content": "What is the status of order 88231?"},
             {"role": "assistant", "content": None, "tool_calls": [
                 {"id": "c1", "type": "function", "function": {"name": "queryOrder", "arguments": '{"orderId": "88231"}'}}]},
             {"role": "tool", "tool_call_id": "c1", "content": order}]
    free = client.chat.completions.create(model="classroom", messages=known, tools=tools_of(shop))
    assert free.choices[0].message.tool_calls is None and "88231" in free.choices[0].message.content
    required = client.chat.completions.create(model="classroom", messages=known, tools=tools_of(shop),
                                              tool_choice="required")
    assert required.choices[0].message.tool_calls
    none = client.chat.completions.create(model="classroom", messages=known[:1], tools=tools_of(shop), tool_choice="none")
    assert none.choices[0].message.tool_calls is None


# 2. tool names in another style ---------------------------------------------------------------------------
def test_snake_case_tools_complete_the_refund(client, shop):
    answer, called = run_loop(client, shop, [{"role": "user", "content": REFUND}], rename=snake)
    assert "apply_refund" in called and "RF202606300001" in answer
    assert [row["orderId"] for row in shop.refunds()] == ["88231"]


# 3. a tool list in another written shape -------------------------------------------------------------------
def test_a_tool_list_written_in_words_is_read(client):
    system = ("You can use these tools.\n"
              "(1) queryOrder, whose description is Look up an order by its id. It takes arguments {\"orderId\": \"string\"}\n"
              "(2) getCurrentTime, whose description is The current date and time. It takes arguments {}\n\n"
              "Answer in this format:\nThought: ...\nAction: the tool's name\nAction Input: its input\n"
              "Observation: the result\n... and at the end\nFinal Answer: the answer")
    reply = client.chat.completions.create(model="classroom", stop=["Observation:"], messages=[
        {"role": "system", "content": system}, {"role": "user", "content": "What is the status of order 88231?"}])
    text = reply.choices[0].message.content
    assert "Action: queryOrder" in text and "88231" in text.split("Action Input:", 1)[1]


# 4. a tool result wrapped in an object ----------------------------------------------------------------------
def test_tool_results_wrapped_in_an_object_are_read_and_the_refund_is_made(client, shop):
    wrap = lambda text: json.dumps({"result": text}, ensure_ascii=False)
    answer, called = run_loop(client, shop, [{"role": "user", "content": REFUND}], wrap=wrap)
    assert called.count("applyRefund") == 1 and "RF202606300001" in answer
    assert [row["orderId"] for row in shop.refunds()] == ["88231"]


# 5. a structured answer from the whole conversation -----------------------------------------------------------
def test_a_structured_answer_reads_every_turn_and_the_names_asked_for(client, shop):
    order = shop.get_order("88231")
    before = [{"role": "user", "content": "What is order 88231?"},
              {"role": "assistant", "content": None, "tool_calls": [
                  {"id": "c1", "type": "function", "function": {"name": "queryOrder", "arguments": '{"orderId": "88231"}'}}]},
              {"role": "tool", "tool_call_id": "c1", "content": shop_registry(shop).execute(Action("queryOrder", "88231"))},
              {"role": "assistant", "content": "Order 88231 was signed for on 2026-06-22."}]
    schema = {"type": "object", "properties": {"product": {"type": "string"}, "status": {"type": "string"},
                                               "price": {"type": "number"}},
              "required": ["product", "status", "price"], "additionalProperties": False}
    summary = client.chat.completions.create(model="classroom", messages=[
        *before, {"role": "user", "content": "Summarise that order as JSON."}],
        response_format={"type": "json_schema", "json_schema": {"name": "OrderSummary", "schema": schema, "strict": True}})
    assert json.loads(summary.choices[0].message.content) == {key: order[key] for key in ("product", "status", "price")}
    named = client.chat.completions.create(model="classroom", response_format={"type": "json_object"}, messages=[
        *before, {"role": "user", "content": "Summarise that order as JSON with the keys item and state."}])
    assert json.loads(named.choices[0].message.content) == {"item": order["product"], "state": order["status"]}


# 6. an instruction appended to a message -------------------------------------------------------------------------
@pytest.mark.parametrize("appended", [
    "Return the correct JSON response within a ```json codeblock, not the JSON schema.",
    "请用 JSON 格式回答。",
])
def test_a_format_instruction_appended_to_a_message_does_not_change_the_task(client, shop, appended):
    answer, called = run_loop(client, shop, [{"role": "user", "content": f"What is the status of order 88231?\n\n{appended}"}])
    assert called == ["queryOrder"] and "88231" in answer
    assert shop.refunds() == []


@pytest.mark.parametrize("text, request_part", [
    # A "." inside a number, a version or a host name ends no sentence: the request around it stays.
    ("I paid 19.99 for it, where is order 88231? Reply in JSON.\nThanks",
     "I paid 19.99 for it, where is order 88231?\nThanks"),
    ("Order 88231 costs 1.5k? Where is it? Answer in JSON format.", "Order 88231 costs 1.5k? Where is it?"),
    ("Is v2.0 on example.com out. Answer in JSON!", "Is v2.0 on example.com out."),
    ("订单 88231 到哪了？请用 JSON 格式回答。谢谢", "订单 88231 到哪了？谢谢"),
    ("Reply in JSON.", "Reply in JSON."),  # nothing but the instruction: then it is the request
])
def test_only_the_format_sentence_is_set_apart(text, request_part):
    assert without_format_instructions(text) == request_part


def test_a_price_with_a_decimal_point_before_a_format_instruction_keeps_the_task(client, shop):
    # The whole line was once taken for the format sentence: the model then read only what was left, nothing.
    asked = "I paid 19.99 for order 88231, where is it? Reply in JSON."
    answer, called = run_loop(client, shop, [{"role": "user", "content": asked}])
    assert called == ["queryOrder", "queryLogistics"] and "SF1234567890" in answer
    assert shop.refunds() == []
