"""The official `openai` Python client, unchanged, against the classroom server.

If the official client can talk to it, so can any OpenAI-compatible tool a learner meets later.
"""

from __future__ import annotations

import json

import pytest

openai = pytest.importorskip("openai")

from tinyagent.classroom.reply import Reply, ToolCallRequest
from tinyagent.classroom.server import CREATED, ClassroomServer

REACT = "Thought: 先查订单。\nAction: queryOrder\nAction Input: 88231\nObservation: 订单已签收\nThought: 好"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "queryOrder",
            "description": "Look up an order by its id",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
        },
    }
]


def echo(request: dict) -> Reply:
    """The model says the last message back, or calls two tools when it is offered tools."""
    if request.get("tools"):
        return Reply(
            None,
            (ToolCallRequest("queryOrder", {"order_id": "88231"}), ToolCallRequest("getCurrentTime", {})),
        )
    return Reply(request["messages"][-1]["content"])


@pytest.fixture(scope="module")
def server():
    with ClassroomServer(responder=echo, api_key="room-key") as running:
        yield running


@pytest.fixture
def client(server):
    return openai.OpenAI(base_url=server.base_url, api_key="room-key", max_retries=0, timeout=10)


def ask(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def test_plain_completion_parses(client):
    completion = client.chat.completions.create(model="classroom", messages=ask("Final Answer: 已签收"))
    assert completion.object == "chat.completion"
    assert completion.created == CREATED
    assert completion.choices[0].message.role == "assistant"
    assert completion.choices[0].message.content == "Final Answer: 已签收"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage.completion_tokens == 6  # Final, Answer, :, 已, 签, 收
    assert completion.usage.prompt_tokens == 3 + 6 + 3  # the message's overhead and text, the reply's start
    assert completion.usage.total_tokens == 18


def test_stop_is_applied(client):
    completion = client.chat.completions.create(model="classroom", messages=ask(REACT), stop=["Observation:"])
    assert (
        completion.choices[0].message.content
        == "Thought: 先查订单。\nAction: queryOrder\nAction Input: 88231\n"
    )
    assert completion.choices[0].finish_reason == "stop"


def test_max_tokens_gives_finish_reason_length(client):
    completion = client.chat.completions.create(model="classroom", messages=ask(REACT), max_tokens=4)
    assert completion.choices[0].message.content == "Thought: 先查"
    assert completion.choices[0].finish_reason == "length"


def test_streaming_chunks_add_up_to_the_plain_answer(client):
    plain = client.chat.completions.create(model="classroom", messages=ask(REACT), stop="Observation:")
    stream = client.chat.completions.create(
        model="classroom",
        messages=ask(REACT),
        stop="Observation:",
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == plain.choices[0].message.content
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens == plain.usage.total_tokens


def test_tool_calls_are_parsed(client):
    completion = client.chat.completions.create(
        model="classroom", messages=ask("查一下订单 88231"), tools=TOOLS, tool_choice="auto"
    )
    message = completion.choices[0].message
    assert completion.choices[0].finish_reason == "tool_calls"
    assert message.content is None
    assert [call.function.name for call in message.tool_calls] == ["queryOrder", "getCurrentTime"]
    assert json.loads(message.tool_calls[0].function.arguments) == {"order_id": "88231"}
    assert json.loads(message.tool_calls[1].function.arguments) == {}
    assert message.tool_calls[0].id.startswith("call_")


def test_streamed_tool_calls_are_assembled_by_the_clients_stream_helper(client):
    with client.chat.completions.stream(model="classroom", messages=ask("查订单"), tools=TOOLS) as stream:
        for _ in stream:
            pass
        final = stream.get_final_completion()
    calls = final.choices[0].message.tool_calls
    assert [c.function.name for c in calls] == ["queryOrder", "getCurrentTime"]
    assert json.loads(calls[0].function.arguments) == {"order_id": "88231"}
    assert final.choices[0].finish_reason == "tool_calls"


def test_models_list(client):
    assert [m.id for m in client.models.list()] == ["classroom"]


def test_wrong_key_raises_authentication_error(server):
    wrong = openai.OpenAI(base_url=server.base_url, api_key="not-the-key", max_retries=0, timeout=10)
    with pytest.raises(openai.AuthenticationError) as caught:
        wrong.chat.completions.create(model="classroom", messages=ask("hi"))
    assert caught.value.status_code == 401
    assert "not-the-key" not in str(caught.value)


def test_unknown_model_raises_not_found_and_bad_request_raises_bad_request(client):
    with pytest.raises(openai.NotFoundError, match="classroom"):
        client.chat.completions.create(model="gpt-4o", messages=ask("hi"))
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="classroom", messages=[])
