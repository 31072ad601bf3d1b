"""The conversation shapes other frameworks send, read by the classroom model without the frameworks installed
(tests/test_frameworks.py runs the frameworks themselves). One test per shape; docs/classroom-model.md lists them."""

from __future__ import annotations

import json

from tests.framework_shop import CLASSIC_REACT_PROMPT
from tinyagent.classroom.behaviour import respond
from tinyagent.classroom.conversation import read_conversation

ORDER = {"orderId": "88231", "product": "比特 S10 Pro 扫地机", "price": 1999, "orderTime": "2026-06-20",
         "signTime": "2026-06-22", "status": "已签收", "trackingNo": "SF1234567890"}
TOOLS_AS_TEXT = ("queryOrder(orderId: 'str') -> 'str' - Look up an order and its trackingNo.\n"
                 "getCurrentTime() -> 'str' - The current date and time.\n"
                 "searchKnowledge(query: 'str') -> 'str' - Search the after-sales policies.")


def classic(scratchpad: str) -> dict:
    prompt = CLASSIC_REACT_PROMPT.format(tools=TOOLS_AS_TEXT, tool_names="queryOrder, getCurrentTime, searchKnowledge",
                                         input="Where is the parcel of order 88231?", agent_scratchpad=scratchpad)
    return {"model": "classroom", "messages": [{"role": "user", "content": prompt}], "stop": ["\nObservation"]}


def test_a_one_message_react_prompt_lists_its_tools_and_ends_with_the_question():
    conv = read_conversation(classic(""))
    assert list(conv.tools) == ["queryOrder", "getCurrentTime", "searchKnowledge"]
    assert conv.tools["queryOrder"] == "Look up an order and its trackingNo."  # the signature is not the text
    assert conv.request == "Where is the parcel of order 88231?" and conv.steps == ()


def test_the_scratchpad_holds_the_steps_and_the_reply_goes_on_after_thought():
    pad = (" I look the order up.\nAction: queryOrder\nAction Input: 88231\n"
           f"Observation: {json.dumps(ORDER, ensure_ascii=False)}\nThought: ")
    conv = read_conversation(classic(pad))
    assert [(s.tool, s.input, s.data) for s in conv.steps] == [("queryOrder", "88231", ORDER)]
    assert conv.rounds == 1
    reply = respond(classic(pad)).text
    assert not reply.startswith(("Thought:", " "))  # the prompt typed "Thought: " already
    assert "Action: queryOrder" not in reply  # it does not ask again for what the scratchpad holds


def test_native_calls_kept_as_text_and_their_observations_are_steps():
    calls = ("Calling tools:\n[{'id': 'call_1', 'type': 'function', 'function': {'name': 'getCurrentTime', "
             "'arguments': {}}}, {'id': 'call_2', 'type': 'function', 'function': {'name': 'queryOrder', "
             "'arguments': {'orderId': '88231'}}}]")
    now = '{"currentTime": "2026-06-30T19:05:23"}'
    request = {"model": "classroom", "tool_choice": "required", "tools": [
        {"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": {}}}}
        for name in ("queryOrder", "getCurrentTime", "final_answer")], "messages": [
        {"role": "system", "content": "You are an expert assistant who can solve any task using tool calls."},
        {"role": "user", "content": "New task:\nWhat is the status of order 88231?"},
        {"role": "assistant", "content": calls},
        {"role": "user", "content": f"Observation:\n{now}\n{json.dumps(ORDER, ensure_ascii=False)}"}]}
    conv = read_conversation(request)
    assert conv.request == "What is the status of order 88231?"  # the framework's label is not the customer's
    assert [(s.tool, s.data) for s in conv.steps] == [("getCurrentTime", json.loads(now)), ("queryOrder", ORDER)]
    assert list(conv.tools) == ["queryOrder", "getCurrentTime"]  # final_answer is how the answer is given
    (call,) = respond(request).tool_calls
    assert call.name == "final_answer" and "已签收" in call.arguments["answer"]


def test_a_prompt_that_asks_for_code_is_told_the_classroom_model_writes_none():
    request = {"model": "classroom", "messages": [
        {"role": "system", "content": "You are an expert assistant who can solve any task using code blobs."},
        {"role": "user", "content": "订单 88231 到哪了？"}]}
    assert "课堂模型不会写代码" in respond(request).text


LLAMA_PROMPT = """You have access to the following tools:
> Tool Name: queryOrder
Tool Description: queryOrder(orderId: 'str') -> 'str'
Look up an order and its trackingNo.

        Args:
            orderId: the order id, e.g. 88231
Tool Args: {"properties": {"orderId": {"title": "Orderid", "type": "string"}}, "required": ["orderId"], "type": "object"}

> Tool Name: getCurrentTime
Tool Description: getCurrentTime() -> 'str'
The current date and time.
Tool Args: {"properties": {}, "type": "object"}

## Output Format

Thought: The current language of the user is: (user's language). I need to use a tool to help me answer the question.
Action: tool name (one of queryOrder, getCurrentTime) if using a tool.
Action Input: the input to the tool, in a JSON format representing the kwargs (e.g. {"input": "hello world", "num_beams": 5})

Thought: I can answer without using any more tools. I'll use the user's language to answer
Answer: [your answer here (In the same language as the user's question)]
"""


def test_tool_name_blocks_give_names_descriptions_and_schemas_and_json_inputs_follow_them():
    request = {"model": "classroom", "messages": [{"role": "system", "content": LLAMA_PROMPT},
                                                  {"role": "user", "content": "What is the status of order 88231?"}]}
    conv = read_conversation(request)
    assert conv.tools == {"queryOrder": "Look up an order and its trackingNo.",
                          "getCurrentTime": "The current date and time."}
    assert conv.schemas["queryOrder"]["required"] == ["orderId"] and conv.json_input
    assert "Action: queryOrder\nAction Input: {\"orderId\":\"88231\"}\n" in respond(request).text
    request["messages"] += [{"role": "assistant", "content": "Thought: I look it up.\nAction: queryOrder\n"
                             "Action Input: {'orderId': '88231'}"},
                            {"role": "user", "content": f"Observation: {json.dumps(ORDER, ensure_ascii=False)}"}]
    answer = respond(request).text
    assert "\nAnswer: " in answer and "Final Answer" not in answer  # the key the prompt's format names
