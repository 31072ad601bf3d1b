"""Bad tool inputs to lessons 21, 23 and 25's send tools: each is a short error Observation in the lesson's words,
nothing is sent that the input did not mean, and a send that happened is said."""

from __future__ import annotations

import json

import pytest

from tinyagent.architectures.reminder_loop import ReminderStore, meetings_tool
from tinyagent.architectures.reminder_loop import message_tool as wechat_tool
from tinyagent.defences.planting import message_tool as email_tool
from tinyagent.protocols.constrained_decoding import read_step
from tinyagent.protocols.tool_rendering import input_from_arguments
from tinyagent.registry import Action, ToolRegistry
from tinyagent.safe_text import one_line

from .conftest import tool_error_of


@pytest.fixture
def store():
    with ReminderStore() as store:
        yield store


@pytest.fixture
def tools(store):
    return ToolRegistry([meetings_tool(store), wechat_tool(store), email_tool(store)])


# -- 1. lesson 23's step reader -------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [None, {"a": 1}, True, 5, ["hi"]])
def test_read_step_refuses_a_non_string_value_for_a_string_parameter_as_the_native_path_does(tools, store, value):
    arguments = {"text": value}
    step = read_step(json.dumps({"tool": "sendWechat", "arguments": arguments}), tools)
    result = tools.run(step.action)
    native = tools.run(Action("sendWechat", input_from_arguments(tools.get("sendWechat"), arguments)))
    assert "text must be a string" in tool_error_of(result)
    assert result == native
    assert store.outbox() == []


def test_read_step_still_gives_a_one_string_tool_its_string(tools, store):
    step = read_step('{"tool": "sendWechat", "arguments": {"text": "take an umbrella"}}', tools)
    assert step.action == Action("sendWechat", "take an umbrella")
    assert not tools.run(step.action).error and store.outbox()[0]["text"] == "take an umbrella"


@pytest.mark.parametrize("text", ['{"text": "hi"}', "```\nhi\n```", "  spaces kept  "])
def test_read_step_sends_a_string_the_tool_would_read_otherwise_as_it_was_written(tools, store, text):
    # '{"text": "hi"}' went on as the Action Input itself, which the tool read as JSON: "hi" was sent, not the text
    step = read_step(json.dumps({"tool": "sendWechat", "arguments": {"text": text}}), tools)
    assert not tools.run(step.action).error
    assert store.outbox()[0]["text"] == text.strip()  # the store keeps a message without its outer spaces


# -- 2. lesson 21's reminder tools ----------------------------------------------------------------------------------
def send(tool: str, text: str, to: str = "me") -> Action:
    arguments = {"text": text} if tool == "sendWechat" else {"to": to, "text": text}
    return Action(tool, json.dumps(arguments))  # json.dumps spells "\ud800" as JSON does: \ud800


@pytest.mark.parametrize("tool", ["sendWechat", "sendMessage"])
def test_a_text_with_a_lone_surrogate_is_refused_and_nothing_is_written(tools, store, tool):
    message = tool_error_of(tools.run(send(tool, "take an umbrella \ud800")))
    assert "cannot be sent" in message and "nothing was sent" in message
    assert store.outbox() == []


def test_a_day_that_is_not_a_day_is_said_as_the_tools_own_error(tools):
    message = tool_error_of(tools.run(Action("getMeetings", "bogus")))
    assert message.startswith("not a day: 'bogus'") and "2026-07-01" in message


@pytest.mark.parametrize("tool", ["sendWechat", "sendMessage"])
def test_a_blank_text_is_said_as_the_tools_own_error(tools, store, tool):
    assert tool_error_of(tools.run(send(tool, "   "))) == "nothing was sent: a message needs a text"
    assert store.outbox() == []


@pytest.mark.parametrize("hidden", ["\x00", "\u202e", "\x1b"])
@pytest.mark.parametrize("tool", ["sendWechat", "sendMessage"])
def test_a_hidden_character_in_the_text_is_refused(tools, store, tool, hidden):
    message = tool_error_of(tools.run(send(tool, f"take an{hidden} umbrella")))
    assert "the text holds a character that cannot be sent" in message
    assert one_line(hidden) in message  # named, and shown as an escape, not obeyed
    assert store.outbox() == []


@pytest.mark.parametrize("hidden", ["\x00", "\u202e"])
def test_a_hidden_character_in_the_recipient_is_refused(tools, store, hidden):
    message = tool_error_of(tools.run(send("sendMessage", "hi", to=f"alice@exa{hidden}mple.com")))
    assert "the recipient holds a character that cannot be sent" in message
    assert store.outbox() == []


def test_a_message_keeps_its_line_breaks(tools, store):
    assert not tools.run(send("sendWechat", "take an umbrella\n\tand boots")).error
    assert store.outbox()[0]["text"] == "take an umbrella\n\tand boots"


# -- 3. lesson 25's message tool ------------------------------------------------------------------------------------
def test_send_message_to_a_blank_recipient_is_refused(tools, store):
    assert tool_error_of(tools.run(send("sendMessage", "x", to="   "))) == "nothing was sent: a message needs a recipient"
    assert store.outbox() == []


def test_a_repeated_send_message_says_it_was_not_sent_again(tools, store):
    first = json.loads(tools.run(send("sendMessage", "x", to="bob@example.com")).text)
    again = json.loads(tools.run(send("sendMessage", "x", to="bob@example.com")).text)
    assert again["duplicate"] is True and again["id"] == first["id"]
    assert "not sent again" in again["message"] and f"#{first['id']}" in again["message"]
    assert len(store.outbox()) == 1
