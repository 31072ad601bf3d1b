"""The reply side of native function calling (tinyagent/protocols/native_calls.py): reading a reply's tool_calls, the
assistant message that keeps them, the tool messages that answer them."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyagent import FunctionTool, ToolRegistry
from tinyagent.protocols.native_calls import (
    NativeCall,
    assistant_message,
    read_arguments,
    read_tool_calls,
    tool_message,
)


def call(name="queryOrder", arguments='{"orderId": "88231"}', call_id="call_a", **extra):
    data = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}, **extra}
    if call_id is None:
        del data["id"]
    return data


def registry():
    schema = {"type": "object", "properties": {"orderId": {"type": "string", "examples": ["88231"]}},
              "required": ["orderId"], "additionalProperties": False}
    return ToolRegistry([
        FunctionTool("queryOrder", "Look up an order.", lambda text: f"order {text}", parameters=schema),
        FunctionTool("searchKnowledge", "Search the policies.", lambda text: f"found {text}"),
        FunctionTool("getCurrentTime", "The time.", lambda text: f"now ({text!r})",
                     parameters={"type": "object", "properties": {}}),
    ])


def test_a_call_is_read_with_its_id_name_and_arguments():
    (read,) = read_tool_calls([call()])
    assert (read.id, read.name, read.arguments, read.parsed, read.problem) == (
        "call_a", "queryOrder", '{"orderId": "88231"}', {"orderId": "88231"}, None)


@pytest.mark.parametrize("arguments, parsed", [
    ("", {}),
    ("  ", {}),
    (None, {}),
    ({"orderId": "88231"}, {"orderId": "88231"}),  # a server that decoded the string itself
    (json.dumps(json.dumps({"orderId": "88231"})), {"orderId": "88231"}),  # encoded twice
])
def test_forgiven_arguments(arguments, parsed):
    text, value, problem = read_arguments(arguments)
    assert value == parsed and problem is None
    assert isinstance(text, str) and json.loads(text or "{}") is not None


@pytest.mark.parametrize("arguments, says", [
    ('{"orderId": "88231"', "not valid JSON"),
    ("orderId=88231", "not valid JSON"),
    ('"88231"', "a string"),
    ("[1, 2]", "a list"),
    ("88231", "a number"),
    (88231, "a number"),
    ("true", "a boolean"),
])
def test_arguments_that_are_not_an_object_are_a_problem(arguments, says):
    text, value, problem = read_arguments(arguments)
    assert value is None
    assert says in problem
    assert isinstance(text, str)


def test_missing_and_repeated_ids_are_filled_in_so_each_tool_message_answers_one_call():
    calls = read_tool_calls([call(call_id=None), call(call_id="same"), call(call_id="same"), call(call_id="")],
                            prefix="call_3")
    assert [c.id for c in calls] == ["call_3_0", "same", "call_3_2", "call_3_3"]
    assert [c.raw["id"] for c in calls] == [c.id for c in calls]


def test_the_assistant_message_keeps_each_call_as_it_came_with_its_arguments_as_a_string():
    calls = read_tool_calls([call(extra_content={"signature": "abc"}), call("getCurrentTime", {}, "call_b")])
    message = assistant_message(None, calls)
    assert message["role"] == "assistant" and message["content"] is None
    first, second = message["tool_calls"]
    assert first == call(extra_content={"signature": "abc"})  # a provider's own field goes back untouched
    assert second["function"]["arguments"] == "{}"
    assert assistant_message("Let me look.", calls)["content"] == "Let me look."


def test_an_assistant_message_without_calls_is_plain_text():
    assert assistant_message("The answer.", []) == {"role": "assistant", "content": "The answer."}
    assert assistant_message(None, []) == {"role": "assistant", "content": ""}


def test_the_tool_message_quotes_its_calls_id():
    (read,) = read_tool_calls([call(call_id="call_x")])
    assert tool_message(read, "result") == {"role": "tool", "tool_call_id": "call_x", "content": "result"}


def test_a_call_becomes_the_action_a_react_step_would_have_written():
    tools = registry()
    (order, search, clock) = read_tool_calls([
        call(), call("searchKnowledge", '{"input": "return policy"}', "b"), call("getCurrentTime", "", "c"),
    ])
    assert order.action(tools).tool_input == '{"orderId":"88231"}'
    assert search.action(tools).tool_input == "return policy"  # a free-text tool gets its "input" as it is
    assert clock.action(tools).tool_input == ""
    unknown = NativeCall("d", "checkOrder", '{"id": 1}', {"id": 1})
    assert unknown.action(tools).tool_name == "checkOrder" and unknown.action(tools).tool_input == '{"id": 1}'


def test_unreadable_arguments_get_an_error_with_an_example_instead_of_running():
    tools = registry()
    (broken,) = read_tool_calls([call(arguments='{"orderId": 88231')])
    rejection = broken.rejection(tools)
    assert rejection.error
    error = json.loads(rejection.text)
    assert "queryOrder" in error["error"] and "not valid JSON" in error["error"] and "nothing ran" in error["error"]
    assert error["example"] == {"orderId": "88231"}
    (fine,) = read_tool_calls([call()])
    assert fine.rejection(tools) is None
    # An unknown tool is the registry's to answer: its error lists the tools there are.
    (unknown,) = read_tool_calls([call("checkOrder", "not json")])
    assert unknown.rejection(tools) is None
    assert "available_tools" in tools.run(unknown.action(tools)).text


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
                           max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), JSON_VALUES, JSON_VALUES.map(json.dumps)))
def test_any_arguments_are_read_or_get_a_problem_never_an_exception(arguments):
    text, parsed, problem = read_arguments(arguments)
    assert isinstance(text, str)
    assert (parsed is None) != (problem is None)
    if parsed is not None:
        assert isinstance(parsed, dict)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["queryOrder", "searchKnowledge", "getCurrentTime", "nope"]),
                          st.one_of(st.text(), JSON_VALUES.map(json.dumps))), min_size=1, max_size=4))
def test_every_call_of_any_reply_gets_one_tool_message_and_the_tools_never_raise_out(items):
    from tinyagent import ChatResult
    from tinyagent.protocols.function_calling import FunctionCallingAgent

    calls = tuple({"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": arguments}}
                  for i, (name, arguments) in enumerate(items))

    class TwoReplies:
        def __init__(self):
            self.replies = [ChatResult("", "tool_calls", tool_calls=calls), ChatResult("done", "stop")]

        def chat(self, messages, **options):
            return self.replies.pop(0)

    result = FunctionCallingAgent(TwoReplies(), registry()).run("?")
    assert result.reason == "final_answer"
    answered = [m["tool_call_id"] for m in result.messages if m["role"] == "tool"]
    assert answered == [f"c{i}" for i in range(len(items))]


def test_an_id_made_for_a_call_never_repeats_an_id_the_server_sent():
    calls = [{"id": "call_1_1", "function": {"name": "t", "arguments": "{}"}},
             {"function": {"name": "t", "arguments": "{}"}},
             {"id": "call_1_1_", "function": {"name": "t", "arguments": "{}"}}]
    ids = [call.id for call in read_tool_calls(calls, prefix="call_1")]
    assert len(set(ids)) == 3 and ids[0] == "call_1_1" and ids[2] == "call_1_1_"


@pytest.mark.parametrize("arguments", ['{"amount": NaN}', '{"amount": Infinity}', '"{\\"amount\\": -Infinity}"',
                                       '{"amount": 1e999}', '"{\\"amount\\": -1e400}"'])
def test_nan_and_infinity_are_not_json_arguments(arguments):
    # Python's json reads them; a NaN then passed a schema's minimum and maximum (every comparison is false).
    _, parsed, problem = read_arguments(arguments)
    assert parsed is None and "not valid JSON" in problem or "not a JSON object" in problem


def test_null_arguments_are_named_null():
    assert read_arguments("null")[2] == "arguments are not a JSON object: a null"


@pytest.mark.parametrize("arguments", ['{"orderId": "88231", "orderId": "88232"}',
                                       json.dumps('{"orderId": "88231", "orderId": "88232"}')])  # encoded twice
def test_arguments_giving_a_key_twice_are_a_problem_that_names_the_key(arguments):
    # json.loads kept the last orderId (88232) silently, where the text protocol's tools refuse such an input.
    (read,) = read_tool_calls([call(arguments=arguments)])
    assert read.parsed is None and read.problem == "the key 'orderId' is given more than once"
    error = json.loads(read.rejection(registry()).text)["error"]
    assert "'orderId' is given more than once" in error and "nothing ran" in error
