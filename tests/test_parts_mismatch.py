"""Parts of different lessons mounted together: a combination that cannot work is refused when the agent is made,
with a message that says what to do; one that can work keeps each part's promise."""

from __future__ import annotations

import pytest

from tinyagent import FunctionCallingAgent, LlmClient, ReActAgent, fixed_clock
from tinyagent.architectures.tree_search import TreeSearch
from tinyagent.loop_parts import StrictRead, WholeConversation
from tinyagent.protocols.constrained_decoding import JsonStepRead
from tinyagent.protocols.function_calling import NativeRead, NativeRequest, ParallelAct
from tinyagent.robustness.tolerant_parser import TolerantRead
from tinyagent.shop import Shop, shop_registry

CLOCK = fixed_clock("2026-06-30T19:05:23")


def tools():
    return shop_registry(Shop(":memory:", clock=CLOCK), CLOCK)


# -- 1. a part of one protocol on the agent of the other ----------------------------------------------------------
@pytest.mark.parametrize("part", [NativeRequest(), NativeRead()], ids=repr)
def test_a_function_calling_part_on_a_text_agent_is_refused_when_the_agent_is_made(part):
    # NativeRequest raised AttributeError ('tool_specs') at the first step; NativeRead took the model's first
    # "Action:" step for its final answer
    with pytest.raises(TypeError, match=r"is a part for the function calling protocol, and this agent speaks the "
                                        r"text protocol: mount it on an agent that speaks function calling"):
        ReActAgent(LlmClient.classroom(), tools(), parts=[part])


@pytest.mark.parametrize("part", [StrictRead(), WholeConversation(), TreeSearch()], ids=repr)
def test_a_text_part_on_a_function_calling_agent_is_refused_when_the_agent_is_made(part):
    # the text read stopped the run at the first tool call ("native_tool_calls"); the text request sent no tools
    with pytest.raises(TypeError, match=r"is a part for the text protocol, and this agent speaks the function "
                                        r"calling protocol"):
        FunctionCallingAgent(LlmClient.classroom(), tools(), parts=[part])


@pytest.mark.parametrize("read", [TolerantRead(), JsonStepRead()], ids=repr)
def test_a_read_part_that_names_no_protocol_reads_text_and_a_function_calling_agent_refuses_it(read):
    # lesson 11's tolerant read on function calling: the first tool call ended the run as "native_tool_calls"
    with pytest.raises(TypeError, match=r"reads the text protocol's lines, and a FunctionCallingAgent's replies are "
                                        r"tool calls: leave that read part out"):
        FunctionCallingAgent(LlmClient.classroom(), tools(), parts=[read])


def test_parts_of_either_protocol_or_of_none_still_mount_where_they_belong():
    native = FunctionCallingAgent(LlmClient.classroom(), tools(), parts=[NativeRequest("required"), NativeRead()])
    assert isinstance(native.parts.read, NativeRead) and native.parts.request.tool_choice == "required"
    text = ReActAgent(LlmClient.classroom(), tools(), parts=[TolerantRead(), ParallelAct(2)])
    assert isinstance(text.parts.read, TolerantRead) and isinstance(text.parts.act, ParallelAct)
    assert ReActAgent(LlmClient.classroom(), tools(), parts=[StrictRead()]).run("现在几点？").reason == "final_answer"
