"""`POST /v1/responses` on the classroom server, with plain HTTP (tests/test_frameworks.py drives it with the
openai client and the Agents SDK)."""

from __future__ import annotations

import json

import pytest
import requests

from tinyagent.classroom.server import ClassroomServer

ORDER_TOOL = {"type": "function", "name": "queryOrder", "description": "Look up an order.",
              "parameters": {"type": "object", "properties": {"orderId": {"type": "string"}}, "required": ["orderId"]}}


@pytest.fixture(scope="module")
def classroom():
    with ClassroomServer() as server:
        yield server


def post(classroom, body, **options):
    return requests.post(classroom.base_url + "/responses", json=body, timeout=30, **options)


def test_a_function_call_comes_back_as_an_output_item(classroom):
    answer = post(classroom, {"model": "classroom", "input": "Where is order 88231?", "tools": [ORDER_TOOL]})
    assert answer.status_code == 200
    (item,) = answer.json()["output"]
    assert (item["type"], item["name"], json.loads(item["arguments"])) == ("function_call", "queryOrder",
                                                                          {"orderId": "88231"})
    assert item["call_id"].startswith("call_") and answer.json()["status"] == "completed"


def test_the_function_call_output_is_read_as_the_observation(classroom):
    first = post(classroom, {"model": "classroom", "input": "Where is order 99999?", "tools": [ORDER_TOOL]}).json()
    call = first["output"][0]
    items = ["Where is order 99999?", call, {"type": "function_call_output", "call_id": call["call_id"],
                                             "output": '{"error": "order 99999 not found"}'}]
    items[0] = {"role": "user", "content": [{"type": "input_text", "text": items[0]}]}
    answer = post(classroom, {"model": "classroom", "input": items, "tools": [ORDER_TOOL]}).json()
    (message,) = answer["output"]
    # "99999" is in the question too: only the output's own words show that the output was read.
    assert message["type"] == "message" and "order 99999 not found" in message["content"][0]["text"]


def test_a_stream_is_named_events_in_sequence_ending_with_completed(classroom):
    answer = post(classroom, {"model": "classroom", "input": "Hello", "stream": True}, stream=True)
    lines = [line for line in answer.iter_lines(decode_unicode=True) if line]
    names = [line.removeprefix("event: ") for line in lines if line.startswith("event: ")]
    data = [json.loads(line.removeprefix("data: ")) for line in lines if line.startswith("data: ")]
    assert names == [event["type"] for event in data]
    assert [event["sequence_number"] for event in data] == list(range(len(data)))
    assert names[:2] == ["response.created", "response.in_progress"] and names[-1] == "response.completed"
    text = "".join(event["delta"] for event in data if event["type"] == "response.output_text.delta")
    assert text == data[-1]["response"]["output"][0]["content"][0]["text"] and text


@pytest.mark.parametrize(("body", "says"), [
    ({"model": "classroom"}, "'input' must be"),
    ({"model": "classroom", "input": "hi", "tools": [{"type": "web_search"}]}, "only function tools"),
    ({"model": "classroom", "input": "hi", "previous_response_id": "resp_1"}, "stores no responses"),
    ({"model": "classroom", "input": [{"type": "image_generation_call"}]}, "reads messages"),
    ({"model": "nope", "input": "hi"}, "does not exist"),
])
def test_bad_input_is_a_json_4xx(classroom, body, says):
    answer = post(classroom, body)
    assert answer.status_code in (400, 404) and says in answer.json()["error"]["message"]


ASKED = {"role": "user", "content": "Where is order 88231?"}
CALL = {"type": "function_call", "call_id": "call_1", "name": "queryOrder", "arguments": '{"orderId": "88231"}'}


@pytest.mark.parametrize(("field", "value", "says"), [
    ("arguments", {"orderId": "88231"}, "'input[1].arguments' must be a string (the call's arguments as JSON text"),
    ("arguments", ["88231"], "'input[1].arguments' must be a string"),
    ("arguments", None, "'input[1].arguments' must be a string"),
    ("name", 5, "'input[1].name' must be a string"),
    ("call_id", None, "'input[1].call_id' must be a string"),
])
def test_a_function_call_item_takes_its_arguments_as_a_json_string_only(classroom, field, value, says):
    # The API requires a string: an object there was accepted, and read as the call's arguments.
    call = {**CALL, field: value} if value is not None else {k: v for k, v in CALL.items() if k != field}
    output = {"type": "function_call_output", "call_id": "call_1", "output": '{"status": "已签收"}'}
    answer = post(classroom, {"model": "classroom", "tools": [ORDER_TOOL],
                              "input": [ASKED, call, output]})
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["message"].startswith(says) and error["param"] == f"input[1].{field}"
    assert "\n" not in error["message"]
    assert post(classroom, {"model": "classroom", "tools": [ORDER_TOOL],  # the same with a string: answered
                            "input": [ASKED, CALL, output]}).status_code == 200


def test_get_is_not_allowed(classroom):
    assert requests.get(classroom.base_url + "/responses", timeout=30).status_code == 405


def test_max_output_tokens_makes_an_incomplete_response(classroom):
    body = {"model": "classroom", "input": "What is a ReAct agent?", "max_output_tokens": 5}
    answer = post(classroom, body).json()
    assert answer["status"] == "incomplete" and answer["incomplete_details"] == {"reason": "max_output_tokens"}
    assert answer["usage"]["output_tokens"] == 5
    streamed = post(classroom, {**body, "stream": True}, stream=True)
    last = [line for line in streamed.iter_lines(decode_unicode=True) if line.startswith("event: ")][-1]
    assert last == "event: response.incomplete"


@pytest.mark.parametrize(("extra", "param", "says"), [
    ({"text": "json"}, "text", "'text' must be an object"),
    ({"text": {"format": "json"}}, "text.format", "'text.format' must be an object"),
    ({"text": {"format": {"type": "yaml"}}}, "text.format", "'text.format' must be an object"),
    ({"text": {"format": {"type": "json_schema"}}}, "text.format.name", "must be a string"),
    ({"text": {"format": {"type": "json_schema", "name": "Answer"}}}, "text.format.schema", "must be a JSON Schema"),
    ({"text": {"format": {"type": "json_schema", "name": "A", "schema": {"type": 5}}}}, "text.format", "'type' must"),
    ({"max_output_tokens": 0}, "max_output_tokens", "'max_output_tokens' must be an integer of 1 or more"),
    ({"max_output_tokens": "ten"}, "max_output_tokens", "'max_output_tokens' must be an integer of 1 or more"),
    ({"tool_choice": "required"}, "tool_choice", "offers no 'tools'"),
    ({"temperature": "hot"}, "temperature", "Invalid type for 'temperature'"),
    ({"metadata": [1]}, "metadata", "Invalid type for 'metadata'"),
    ({"parallel_tool_calls": "yes"}, "parallel_tool_calls", "Invalid type for 'parallel_tool_calls'"),
])
def test_a_field_of_the_wrong_shape_is_a_400_naming_it_not_echoed_back(classroom, extra, param, says):
    # Each came back as sent in the response (text, temperature, metadata, parallel_tool_calls), or was a 400
    # naming the chat route's field (max_tokens, messages) or, for a json_schema format without a schema, none.
    answer = post(classroom, {"model": "classroom", "input": "Where is order 88231?", **extra})
    assert answer.status_code == 400, answer.text[:300]
    error = answer.json()["error"]
    assert error["param"] == param and says in error["message"], error


def statuses(classroom, body):
    """The output items' statuses of the plain response and of the stream (each item as output_item.done gave
    it, and as the last event's response holds it), and the response's own status."""
    whole = post(classroom, body).json()
    streamed = post(classroom, {**body, "stream": True}, stream=True)
    events = [json.loads(line.removeprefix("data: ")) for line in streamed.iter_lines(decode_unicode=True)
              if line.startswith("data: ")]
    done = [event["item"]["status"] for event in events if event["type"] == "response.output_item.done"]
    last = events[-1]["response"]
    assert done == [item["status"] for item in last["output"]] == [item["status"] for item in whole["output"]]
    assert last["status"] == whole["status"]
    return whole["status"], done


TWO_ORDERS = {"model": "classroom", "input": "Where are orders 88231 and 88232?", "tools": [ORDER_TOOL]}


@pytest.mark.parametrize(("budget", "expected"), [
    (None, ("completed", ["completed", "completed"])),
    (4, ("incomplete", ["incomplete"])),  # cut inside the first call's arguments
    (14, ("incomplete", ["completed", "incomplete"])),  # the first call whole, the second cut
    (11, ("incomplete", ["completed", "incomplete"])),  # the second call's name, then no room for arguments
    (10, ("incomplete", ["completed"])),  # no room for the second call's name: it was never begun
])
def test_the_item_max_output_tokens_cut_is_incomplete_and_only_that_one(classroom, budget, expected):
    # A cut function_call said "completed" inside an incomplete response. The API's items end "incomplete" when
    # the token budget runs out while the model is typing them; such an item is the last one, and the items
    # before it are whole.
    body = TWO_ORDERS if budget is None else {**TWO_ORDERS, "max_output_tokens": budget}
    assert statuses(classroom, body) == expected


def test_a_message_max_output_tokens_cut_is_incomplete(classroom):
    body = {"model": "classroom", "input": "What is a ReAct agent?"}
    assert statuses(classroom, body) == ("completed", ["completed"])
    assert statuses(classroom, {**body, "max_output_tokens": 5}) == ("incomplete", ["incomplete"])
