"""The classroom model against what the real OpenAI API does, for any client: an audit's findings, each pinned.

Each test sends what a client may send (with the openai SDK, or plain HTTP where the SDK would not send it) and
expects what OpenAI's API answers: a 400 in its shape naming the parameter, or the answer's shape it gives."""

from __future__ import annotations

import json

import pytest
import requests

openai = pytest.importorskip("openai")

from tinyagent.classroom.server import ClassroomServer

from .conftest import PATIENCE

MODEL = "classroom"
ORDER_TOOL = {"type": "function", "function": {
    "name": "queryOrder", "description": "Look up an order by its id.",
    "parameters": {"type": "object", "properties": {"orderId": {"type": "string"}}, "required": ["orderId"]}}}


@pytest.fixture(scope="module")
def classroom():
    with ClassroomServer() as server:
        yield server


@pytest.fixture
def client(classroom):
    return openai.OpenAI(base_url=classroom.base_url, api_key="classroom", max_retries=0, timeout=PATIENCE)


def ask(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def post(classroom, path: str, body: dict) -> requests.Response:
    return requests.post(classroom.base_url + path, json=body, timeout=PATIENCE)


def chat(classroom, **fields) -> requests.Response:
    return post(classroom, "/chat/completions", {"model": MODEL, "messages": ask("Hello"), **fields})


def refused(answer: requests.Response, param: str) -> str:
    """The message of an OpenAI-shaped 400 that names `param`."""
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["type"] == "invalid_request_error" and error["param"] == param, error
    return error["message"]


# 11. the legacy completions API ---------------------------------------------------------------------------------


def test_the_legacy_completions_path_says_to_use_chat_completions(classroom):
    answer = post(classroom, "/completions", {"model": MODEL, "prompt": "Hello"})
    assert answer.status_code == 404
    message = answer.json()["error"]["message"]
    assert "/v1/chat/completions" in message and "is_chat_model=True" in message and "legacy" in message


# 6. the legacy functions / function_call parameters -----------------------------------------------------------


@pytest.mark.parametrize(("param", "value"), [
    ("functions", [ORDER_TOOL["function"]]),
    ("function_call", "auto"),
    ("function_call", {"name": "queryOrder"}),
])
def test_the_legacy_function_parameters_are_refused_naming_tools(classroom, param, value):
    message = refused(chat(classroom, **{param: value}), param)
    assert f"'{param}'" in message and "'tools'" in message and "'tool_choice'" in message


# 7. penalties and logit_bias ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("param", "value"), [
    ("presence_penalty", 2.5), ("presence_penalty", -3), ("frequency_penalty", 7), ("frequency_penalty", "1"),
    ("logit_bias", {"50256": 101}), ("logit_bias", {"50256": -100.5}), ("logit_bias", {"hello": 5}),
    ("logit_bias", {"50256": "5"}), ("logit_bias", [1, 2]),
])
def test_a_penalty_or_logit_bias_out_of_range_is_refused(classroom, param, value):
    assert f"'{param}" in refused(chat(classroom, **{param: value}), param)


def test_penalties_and_logit_bias_in_range_are_taken(client):
    completion = client.chat.completions.create(model=MODEL, messages=ask("Hello"), presence_penalty=-2,
                                                frequency_penalty=2, logit_bias={"50256": -100, "13": 100})
    assert completion.choices[0].message.content


# 5. logprobs ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("fields", "param"), [
    ({"logprobs": True}, "logprobs"),
    ({"logprobs": True, "top_logprobs": 5}, "logprobs"),
    ({"top_logprobs": 50}, "top_logprobs"),
    # OpenAI's API refuses 'top_logprobs' of any value, 0 too, without "logprobs": true; 0 was taken here.
    ({"top_logprobs": 0}, "top_logprobs"),
    ({"logprobs": False, "top_logprobs": 0}, "top_logprobs"),
])
def test_logprobs_are_refused_as_the_classroom_model_has_none(classroom, fields, param):
    answer = chat(classroom, **fields)
    assert "log-probabilities" in refused(answer, param)
    assert answer.json()["error"]["code"] == "logprobs_not_supported"


@pytest.mark.parametrize(("fields", "param"), [({"logprobs": "yes"}, "logprobs"), ({"top_logprobs": "5"}, "top_logprobs"),
                                               ({"top_logprobs": 2.5}, "top_logprobs")])
def test_logprobs_of_the_wrong_type_are_refused_naming_the_type(classroom, fields, param):
    answer = chat(classroom, **fields)
    assert "a string" in refused(answer, param) or "a number" in answer.json()["error"]["message"]
    assert answer.json()["error"]["code"] == "invalid_type"


def test_logprobs_false_is_taken(client):
    completion = client.chat.completions.create(model=MODEL, messages=ask("Hello"), logprobs=False)
    assert completion.choices[0].message.content and completion.choices[0].logprobs is None


# 8. content parts that are not text -----------------------------------------------------------------------------

IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
AUDIO = {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}
FILE = {"type": "file", "file": {"file_id": "file-abc123"}}


@pytest.mark.parametrize("part", [IMAGE, AUDIO, FILE], ids=lambda part: part["type"])
def test_an_image_audio_or_file_part_is_refused_as_the_model_reads_text_only(classroom, part):
    messages = [{"role": "user", "content": [{"type": "text", "text": "What is in this?"}, part]}]
    message = refused(chat(classroom, messages=messages), "messages[0].content[1]")
    assert f"'{part['type']}'" in message and "text only" in message


def test_a_part_of_an_unknown_type_is_refused_naming_it(classroom):
    messages = [{"role": "user", "content": [{"type": "banana", "text": "Where is order 88231?"}]}]
    message = refused(chat(classroom, messages=messages), "messages[0].content[0]")
    assert "'banana'" in message and "'text'" in message


@pytest.mark.parametrize("part", [{"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
                                  {"type": "input_file", "file_id": "file-abc123"}], ids=lambda part: part["type"])
def test_a_responses_image_or_file_part_is_refused_as_the_model_reads_text_only(classroom, part):
    items = [{"role": "user", "content": [{"type": "input_text", "text": "What is in this?"}, part]}]
    message = refused(post(classroom, "/responses", {"model": MODEL, "input": items}), "input[0].content[1]")
    assert f"'{part['type']}'" in message and "text only" in message


def test_a_responses_part_of_an_unknown_type_is_refused_naming_it(classroom):
    items = [{"role": "user", "content": [{"type": "banana", "text": "Where is order 88231?"}]}]
    message = refused(post(classroom, "/responses", {"model": MODEL, "input": items}), "input[0].content[0]")
    assert "'banana'" in message and "'input_text'" in message


def test_text_parts_are_still_read_on_both_routes(classroom, client):
    parts = [{"type": "text", "text": "Where is order "}, {"type": "text", "text": "88231?"}]
    completion = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": parts}],
                                                tools=[ORDER_TOOL])
    assert completion.choices[0].message.tool_calls[0].function.arguments == '{"orderId": "88231"}'
    items = [{"role": "user", "content": [{"type": "input_text", "text": "Hello"}]}]
    assert post(classroom, "/responses", {"model": MODEL, "input": items}).status_code == 200


# 9. response_format: json_object needs the word json, json_schema a name -----------------------------------------


def test_json_object_without_the_word_json_in_any_message_is_refused(classroom):
    message = refused(chat(classroom, messages=ask("Summarise order 88231."),
                           response_format={"type": "json_object"}), "messages")
    assert "'json'" in message and "'json_object'" in message


def test_json_object_on_the_responses_route_names_its_own_fields(classroom):
    answer = post(classroom, "/responses", {"model": MODEL, "input": "Summarise order 88231.",
                                            "text": {"format": {"type": "json_object"}}})
    message = refused(answer, "input")
    assert "'json'" in message and "'text.format'" in message and "'input'" in message


def test_json_object_with_the_word_json_anywhere_is_taken(client):
    messages = [{"role": "system", "content": "Answer in Json."}, *ask("Summarise order 88231.")]
    completion = client.chat.completions.create(model=MODEL, messages=messages, response_format={"type": "json_object"})
    assert completion.choices[0].message.content.startswith("{")


def test_json_schema_without_a_name_is_refused(classroom):
    schema = {"type": "object", "properties": {"orderId": {"type": "string"}}}
    answer = chat(classroom, messages=ask("Order 88231 as JSON."),
                  response_format={"type": "json_schema", "json_schema": {"schema": schema}})
    assert "'response_format.json_schema.name'" in refused(answer, "response_format.json_schema.name")


# 3. every tool call answered before the conversation goes on ----------------------------------------------------


def calls(*ids: str) -> dict:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": "queryOrder", "arguments": '{"orderId": "88231"}'}}
        for call_id in ids]}


def result(call_id: str) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": '{"orderId": "88231", "status": "已签收"}'}


@pytest.mark.parametrize(("after", "unanswered"), [
    ([result("call_1")], "call_2"),  # one of two answered, then the conversation ends
    ([result("call_1"), *ask("And order 88232?")], "call_2"),  # one of two answered, then the user
    ([*ask("Thanks. And order 88232?")], "call_1, call_2"),  # none answered: the user right after the calls
], ids=["one missing at the end", "one missing before a user message", "a user message right after"])
def test_a_tool_call_without_its_tool_message_is_refused_naming_its_id(classroom, after, unanswered):
    messages = [*ask("Where is order 88231?"), calls("call_1", "call_2"), *after]
    message = refused(chat(classroom, messages=messages, tools=[ORDER_TOOL]), "messages")
    assert "'tool_calls'" in message and unanswered in message
    assert "call_1" not in message if unanswered == "call_2" else True


def test_every_call_answered_is_taken(client):
    messages = [*ask("Where is order 88231?"), calls("call_1", "call_2"), result("call_2"), result("call_1")]
    completion = client.chat.completions.create(model=MODEL, messages=messages, tools=[ORDER_TOOL])
    assert completion.choices[0].finish_reason == "stop"


def test_a_function_call_without_its_output_is_refused_on_the_responses_route(classroom):
    call = {"type": "function_call", "call_id": "call_1", "name": "queryOrder", "arguments": '{"orderId": "88231"}'}
    items = [{"role": "user", "content": "Where is order 88231?"}, call, {"role": "user", "content": "Well?"}]
    tool = {"type": "function", **ORDER_TOOL["function"]}
    message = refused(post(classroom, "/responses", {"model": MODEL, "input": items, "tools": [tool]}), "input")
    assert "No tool output found for function call call_1" in message and "function_call_output" in message


# 1. a forced call: a call, or a refusal for a strict tool it cannot fill -----------------------------------------


def set_status(strict: bool) -> dict:
    """A tool whose required `status` nothing in a request for an order's update says."""
    return {"type": "function", "function": {
        "name": "setStatus", "description": "Set an order's status.", **({"strict": True} if strict else {}),
        "parameters": {"type": "object", "additionalProperties": False, "required": ["orderId", "status"],
                       "properties": {"orderId": {"type": "string"}, "status": {"type": "string"}}}}}


NAMED = {"type": "function", "function": {"name": "setStatus"}}
UPDATE = ask("Please update order 88231.")


@pytest.mark.parametrize(("tools", "choice"), [([set_status(True)], "required"),
                                               ([ORDER_TOOL, set_status(True)], NAMED)], ids=["required", "named"])
def test_a_forced_strict_call_it_cannot_fill_is_a_refusal(client, tools, choice):
    completion = client.chat.completions.create(model=MODEL, messages=UPDATE, tools=tools, tool_choice=choice)
    (only,) = completion.choices
    assert only.finish_reason == "stop" and only.message.content is None and not only.message.tool_calls
    assert only.message.refusal.startswith("I cannot fill the required field(s) status")


@pytest.mark.parametrize(("tools", "choice"), [([set_status(False)], "required"),
                                               ([ORDER_TOOL, set_status(False)], NAMED)], ids=["required", "named"])
def test_a_forced_call_to_a_tool_that_is_not_strict_is_made_with_what_it_can_fill(client, tools, choice):
    completion = client.chat.completions.create(model=MODEL, messages=UPDATE, tools=tools, tool_choice=choice)
    (only,) = completion.choices
    assert only.finish_reason == "tool_calls" and only.message.refusal is None
    ((call_name, arguments),) = [(call.function.name, call.function.arguments) for call in only.message.tool_calls]
    assert (call_name, arguments) == ("setStatus", '{"orderId": "88231"}')


@pytest.mark.parametrize("strict", [True, False])
def test_a_forced_call_it_can_fill_is_made_whole_strict_or_not(client, strict):
    looked_up = [*UPDATE, calls("call_1"), {"role": "tool", "tool_call_id": "call_1",
                                            "content": '{"orderId": "88231", "status": "shipped"}'}]
    completion = client.chat.completions.create(model=MODEL, messages=looked_up,
                                                tools=[ORDER_TOOL, set_status(strict)], tool_choice=NAMED)
    (call,) = completion.choices[0].message.tool_calls
    assert (call.function.name, call.function.arguments) == ("setStatus", '{"orderId": "88231", "status": "shipped"}')


def test_a_forced_strict_call_it_cannot_fill_is_a_refusal_part_on_the_responses_route(classroom):
    tool = {"type": "function", **set_status(True)["function"]}
    answer = post(classroom, "/responses", {"model": MODEL, "input": "Please update order 88231.",
                                            "tools": [tool], "tool_choice": "required"})
    assert answer.status_code == 200, answer.text
    (item,) = answer.json()["output"]
    assert item["type"] == "message" and item["content"][0]["type"] == "refusal"
    assert item["content"][0]["refusal"].startswith("I cannot fill the required field(s) status")


# 2. parallel_tool_calls: false ----------------------------------------------------------------------------------

TWO_ORDERS = ask("What is the status of orders 88231 and 88232?")


def test_parallel_tool_calls_false_gives_one_call_a_turn(client):
    both = client.chat.completions.create(model=MODEL, messages=TWO_ORDERS, tools=[ORDER_TOOL])
    assert len(both.choices[0].message.tool_calls) == 2  # what the model makes when it may
    one = client.chat.completions.create(model=MODEL, messages=TWO_ORDERS, tools=[ORDER_TOOL],
                                         parallel_tool_calls=False)
    (call,) = one.choices[0].message.tool_calls
    assert call.function.arguments == '{"orderId": "88231"}' and one.choices[0].finish_reason == "tool_calls"


def test_parallel_tool_calls_false_gives_one_call_a_turn_on_the_responses_route(classroom):
    tool = {"type": "function", **ORDER_TOOL["function"]}
    body = {"model": MODEL, "input": TWO_ORDERS[0]["content"], "tools": [tool]}
    assert len(post(classroom, "/responses", body).json()["output"]) == 2
    (item,) = post(classroom, "/responses", {**body, "parallel_tool_calls": False}).json()["output"]
    assert item["type"] == "function_call" and item["arguments"] == '{"orderId": "88231"}'


# 4. max_tokens caps a tool call too ------------------------------------------------------------------------------

WHERE = ask("Where is order 88231?")


@pytest.mark.parametrize("cap", [{"max_tokens": 4}, {"max_completion_tokens": 4}])
def test_max_tokens_cuts_a_tool_call_s_arguments_with_finish_reason_length(client, cap):
    completion = client.chat.completions.create(model=MODEL, messages=WHERE, tools=[ORDER_TOOL], **cap)
    (only,) = completion.choices
    (call,) = only.message.tool_calls
    # queryOrder is one token, then { " orderId: the classroom model's count of 4 tokens
    assert (call.function.name, call.function.arguments) == ("queryOrder", '{"orderId')
    assert only.finish_reason == "length" and completion.usage.completion_tokens == 4


def test_max_tokens_1_leaves_the_name_only(client):
    completion = client.chat.completions.create(model=MODEL, messages=WHERE, tools=[ORDER_TOOL], max_tokens=1)
    (call,) = completion.choices[0].message.tool_calls
    assert call.function.arguments == "" and completion.choices[0].finish_reason == "length"
    assert completion.usage.completion_tokens <= 1


def test_a_stream_cut_by_max_tokens_carries_the_cut_call_and_length(client):
    chunks = list(client.chat.completions.create(model=MODEL, messages=WHERE, tools=[ORDER_TOOL], max_tokens=4,
                                                 stream=True, stream_options={"include_usage": True}))
    arguments = "".join(call.function.arguments or "" for chunk in chunks for choice in chunk.choices
                        for call in choice.delta.tool_calls or ())
    assert arguments == '{"orderId' and chunks[-2].choices[0].finish_reason == "length"
    assert chunks[-1].usage.completion_tokens == 4


def test_a_call_within_max_tokens_is_whole(client):
    completion = client.chat.completions.create(model=MODEL, messages=WHERE, tools=[ORDER_TOOL], max_tokens=10)
    assert completion.choices[0].finish_reason == "tool_calls" and completion.usage.completion_tokens == 10


@pytest.mark.parametrize("stream", [False, True])
def test_max_output_tokens_cuts_a_function_call_on_the_responses_route(classroom, stream):
    tool = {"type": "function", **ORDER_TOOL["function"]}
    body = {"model": MODEL, "input": "Where is order 88231?", "tools": [tool], "max_output_tokens": 4,
            "stream": stream}
    answer = requests.post(classroom.base_url + "/responses", json=body, timeout=PATIENCE)
    assert answer.status_code == 200, answer.text
    if stream:
        events = [line for line in answer.text.splitlines() if line.startswith("data: ")]
        response = json.loads(events[-1].removeprefix("data: "))["response"]
    else:
        response = answer.json()
    assert response["status"] == "incomplete" and response["incomplete_details"] == {"reason": "max_output_tokens"}
    (item,) = response["output"]
    assert item["arguments"] == '{"orderId' and response["usage"]["output_tokens"] == 4


# 10. a tool result that lacks a field ---------------------------------------------------------------------------


def react_step(classroom, question: str, lang: str, *observations: tuple[str, str, str]) -> str:
    """The classroom model's next reply in text ReAct, after the calls and Observations given as (tool, input,
    observation)."""
    from tinyagent import build_system_prompt, fixed_clock
    from tinyagent.shop import Shop, shop_registry

    tools = shop_registry(Shop(":memory:", clock=fixed_clock("2026-06-30T19:05:23")))
    messages = [{"role": "system", "content": build_system_prompt(tools, lang)}, *ask(question)]
    for tool, tool_input, observation in observations:
        messages += [{"role": "assistant", "content": f"Thought: …\nAction: {tool}\nAction Input: {tool_input}"},
                     {"role": "user", "content": f"Observation: {observation}"}]
    answer = chat(classroom, messages=messages, stop=["Observation:"])
    assert answer.status_code == 200, answer.text
    return answer.json()["choices"][0]["message"]["content"]


QUESTIONS = {"en": "Where is the parcel of order 88232?", "zh": "订单 88232 的包裹到哪了？"}
NO_PRODUCT = '{"orderId": "88232", "status": "shipped", "trackingNo": "YT2468013579"}'
NO_STATUS = '{"orderId": "88232", "product": "Robot vacuum", "trackingNo": "YT2468013579"}'
NOT_SHIPPED_OR_SO = '{"orderId": "88232", "product": "Robot vacuum"}'
TRACES = '{"trackingNo": "YT2468013579", "traces": [{"time": "2026-06-30 07:50:00", "desc": "Arrived in Shanghai"}]}'


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("order", [NO_PRODUCT, NO_STATUS], ids=["no product", "no status"])
def test_a_missing_field_is_left_out_of_the_thought_and_the_answer(classroom, lang, order):
    thought = react_step(classroom, QUESTIONS[lang], lang, ("queryOrder", "88232", order))
    assert "YT2468013579" in thought and "None" not in thought
    answer = react_step(classroom, QUESTIONS[lang], lang, ("queryOrder", "88232", order),
                        ("queryLogistics", "YT2468013579", TRACES))
    assert "Arrived in Shanghai" in answer and "None" not in answer and "()" not in answer and "（）" not in answer


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_no_status_and_no_tracking_number_is_not_taken_for_not_shipped(classroom, lang):
    answer = react_step(classroom, QUESTIONS[lang], lang, ("queryOrder", "88232", NOT_SHIPPED_OR_SO))
    assert "None" not in answer and "Robot vacuum" in answer
    assert "not shipped" not in answer and "没有发货" not in answer and "未发货" not in answer
