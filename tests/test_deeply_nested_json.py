"""JSON nested deeper than Python's parser goes (RecursionError, which is no ValueError): every reader of text a
model, a tool or a server wrote reads it as it reads any other text it cannot parse, never raising."""

from __future__ import annotations

import json

import pytest

from tinyagent import FunctionTool, ToolRegistry
from tinyagent.events import Observation
from tinyagent.registry import Action
from tinyagent.trace import Trace

DEEP = "[" * 100_000  # an unclosed array: json.loads raises RecursionError before it finds the end
DEEP_OBJECT = '{"a":' + DEEP
# Deep enough that walking it (folding, repairing) overruns Python's stack, shallow enough that json.loads reads it.
NESTED_BUT_READABLE = "[" * 700 + "]" * 700


def test_the_tolerant_parser_reads_a_deep_reply_as_text():
    from tinyagent.robustness.tolerant_parser import parse_tolerant

    # Read as text, each as the parser reads any reply of that shape (no JSON recursion error, no stand-in action):
    step = parse_tolerant(DEEP_OBJECT)  # no Thought, no Action, no Final Answer: a reply without the format
    assert (step.rule, step.action, step.final_answer) == ("no_format", None, None)
    step = parse_tolerant('Action: {"action":' + DEEP)  # an Action line whose name is JSON it cannot read
    assert step.action is not None and step.action.tool_name == "{" and step.final_answer is None
    step = parse_tolerant(f"Thought: x\nAction: queryOrder\nAction Input: {DEEP}")  # the input is text, kept whole
    assert (step.action.tool_name, step.action.tool_input) == ("queryOrder", DEEP)


def test_a_tool_whose_text_is_deep_json_is_an_observation_not_a_crash():
    registry = ToolRegistry([FunctionTool("echo", "Echo the input.", lambda text: text)])
    result = registry.run(Action("echo", DEEP_OBJECT))
    assert result.text == DEEP_OBJECT and result.error is False


def test_a_typed_tool_refuses_deep_json_input_with_a_problem():
    from tinyagent.toolkit.action_input import read_arguments
    from tinyagent.toolkit.validation import Problem

    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}
    assert isinstance(read_arguments(DEEP_OBJECT, schema), Problem)


def test_the_shop_s_tools_answer_deep_json_with_an_error_observation():
    from tinyagent.shop import Shop, shop_registry

    with Shop(":memory:") as shop:
        registry = shop_registry(shop)
        for name in ("queryOrder", "searchKnowledge", "applyRefund"):
            result = registry.run(Action(name, DEEP_OBJECT))
            assert result.error and json.loads(result.text)["error"], (name, result.text[:80])
        assert shop.refunds() == []


def test_function_calling_readers_pass_deep_arguments_on_as_a_problem():
    from tinyagent.protocols.constrained_decoding import read_step
    from tinyagent.protocols.native_calls import read_arguments as read_native
    from tinyagent.protocols.tool_rendering import input_from_arguments
    from tinyagent.shop import Shop, shop_tools

    _, parsed, problem = read_native(DEEP)
    assert parsed is None and "not valid JSON" in problem
    assert read_native('"' + DEEP + '"')[2] is not None  # encoded twice
    with Shop(":memory:") as shop:
        assert input_from_arguments(shop_tools(shop)[0], DEEP_OBJECT) == DEEP_OBJECT
    assert read_step(DEEP_OBJECT).rule == "no_format"


def test_a_stop_rule_and_the_folding_of_an_observation_take_deep_text():
    from tinyagent.memory.observation_folding import fold_observation
    from tinyagent.robustness.stop_rules import NoProgress, normalize

    assert normalize(DEEP) == DEEP
    assert NoProgress().check(Trace([Observation(1, DEEP)])) is None
    for text in (DEEP, NESTED_BUT_READABLE):
        assert isinstance(fold_observation(text), str)


def test_a_server_error_body_of_deep_json_is_described_not_raised():
    from tinyagent.chat_result import server_message

    assert isinstance(server_message(DEEP), str)
    assert isinstance(server_message('{"error":' * 100_000), str)


@pytest.mark.parametrize("data", [DEEP, '{"x": "\\ud800", "y": ' + NESTED_BUT_READABLE + "}"])
def test_a_streamed_chunk_too_deep_to_read_is_a_bad_response(data):
    from tinyagent.errors import BadResponseError
    from tinyagent.protocols.streaming import ReplyStream, SseEvent

    stream = ReplyStream.__new__(ReplyStream)  # only what _take reads: the host, the key, the status, a half pair
    stream._host, stream._client, stream._high = "test", type("Client", (), {"_api_key": None})(), ""
    stream._response = type("Response", (), {"status_code": 200})()
    with pytest.raises(BadResponseError, match="nested too deeply"):
        stream._take(SseEvent(event="message", data=data))
