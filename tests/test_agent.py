"""The loop, driven by a scripted model (no HTTP) so each rule is pinned on its own."""

import json

import pytest

from tinyagent import (
    AuthenticationError,
    ChatResult,
    Final,
    FunctionTool,
    LlmCall,
    Observation,
    Parsed,
    ReActAgent,
    Stopped,
    ToolCall,
    ToolRegistry,
    Trace,
)
from tinyagent.loop_parts import EMPTY_REPLY


class ScriptedLlm:
    """Replies with the scripted texts in order (the last one repeats) and records every request."""

    model = "scripted"

    def __init__(self, *replies, finish_reason="stop"):
        self.replies = list(replies)
        self.finish_reason = finish_reason
        self.requests = []

    def chat(self, messages, *, stop=None, max_tokens=None):
        self.requests.append({"messages": [dict(m) for m in messages], "stop": stop, "max_tokens": max_tokens})
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, ChatResult):
            return reply
        return ChatResult(reply, self.finish_reason, {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10})


def tools():
    return ToolRegistry([
        FunctionTool("queryOrder", "Look up an order.", lambda i: json.dumps({"orderId": i, "trackingNo": "SF1"})),
        FunctionTool("queryLogistics", "Track a parcel.", lambda i: json.dumps({"trackingNo": i, "status": "signed"})),
    ])


ACT_ORDER = "Thought: I need the order.\nAction: queryOrder\nAction Input: 88231\n"
ACT_TRACK = "Thought: Now the parcel.\nAction: queryLogistics\nAction Input: SF1\n"
FINAL = "Thought: I know enough.\nFinal Answer: Your parcel SF1 was signed for."


def test_three_round_run_ends_with_the_final_answer():
    llm = ScriptedLlm(ACT_ORDER, ACT_TRACK, FINAL)
    result = ReActAgent(llm, tools()).run("Where is order 88231?")
    assert result.ok and result.reason == "final_answer"
    assert result.answer == "Your parcel SF1 was signed for."
    assert [c.name for c in result.trace.tool_calls] == ["queryOrder", "queryLogistics"]
    assert result.trace.rounds == 3


def test_message_list_grows_by_assistant_and_observation_pairs():
    llm = ScriptedLlm(ACT_ORDER, ACT_TRACK, FINAL)
    result = ReActAgent(llm, tools()).run("Where is order 88231?")
    roles = [m["role"] for m in result.messages]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user", "assistant"]
    assert result.messages[3]["content"] == 'Observation: {"orderId": "88231", "trackingNo": "SF1"}'
    # each request saw the conversation so far: 2, 4, then 6 messages
    assert [len(r["messages"]) for r in llm.requests] == [2, 4, 6]


def test_every_request_sends_the_observation_stop_sequence():
    llm = ScriptedLlm(ACT_ORDER, FINAL)
    ReActAgent(llm, tools()).run("order 88231?")
    assert all(r["stop"] == ("Observation:",) for r in llm.requests)


def test_system_prompt_lists_the_tools_in_order():
    llm = ScriptedLlm(FINAL)
    ReActAgent(llm, tools()).run("hello")
    system = llm.requests[0]["messages"][0]["content"]
    assert "1. queryOrder - Look up an order.\n2. queryLogistics - Track a parcel." in system


def test_events_come_in_loop_order():
    events = list(ReActAgent(ScriptedLlm(ACT_ORDER, FINAL), tools()).steps("order?"))
    assert [type(e) for e in events] == [LlmCall, Parsed, ToolCall, Observation, LlmCall, Parsed, Final]
    assert [e.step for e in events] == [1, 1, 1, 1, 2, 2, 2]


def test_step_through_pauses_between_action_and_observation():
    run = ReActAgent(ScriptedLlm(ACT_ORDER, FINAL), tools()).start("order?")
    while not isinstance(run.advance(), ToolCall):
        pass
    assert run.messages[-1]["role"] == "assistant"  # the tool has not run yet
    assert isinstance(run.advance(), Observation)
    assert run.messages[-1]["content"].startswith("Observation: ")


def test_fallback_when_the_model_skips_final_answer():
    llm = ScriptedLlm(ACT_ORDER, "Your order 88231 has been delivered.")
    result = ReActAgent(llm, tools()).run("order?")
    assert result.reason == "fallback" and result.ok
    assert result.answer == "Your order 88231 has been delivered."


def test_max_steps_gives_up_politely():
    result = ReActAgent(ScriptedLlm(ACT_ORDER), tools(), max_steps=3).run("order?")
    assert result.reason == "max_steps" and not result.ok
    assert "3 steps" in result.answer
    assert len(result.trace.tool_calls) == 3
    assert isinstance(result.trace.end, Stopped)


def test_give_up_message_speaks_chinese_to_a_chinese_question():
    result = ReActAgent(ScriptedLlm(ACT_ORDER), tools(), max_steps=2).run("订单 88231 到哪了？")
    assert result.answer.startswith("抱歉")


def test_unknown_tool_is_fed_back_and_the_model_can_correct_itself():
    wrong = "Thought: check\nAction: checkOrder\nAction Input: 88231\n"
    llm = ScriptedLlm(wrong, ACT_ORDER, FINAL)
    result = ReActAgent(llm, tools()).run("order?")
    first_observation = result.trace.of_type(Observation)[0]
    assert first_observation.error
    assert "unknown tool: checkOrder" in first_observation.text
    assert result.reason == "final_answer"


def test_model_error_ends_the_run_with_a_reason_not_an_exception():
    llm = ScriptedLlm(AuthenticationError("the server refused the API key (HTTP 401)", 401))
    result = ReActAgent(llm, tools()).run("order?")
    assert result.reason == "llm_error"
    assert "HTTP 401" in result.trace.end.detail


def test_reply_cut_at_max_tokens_is_never_executed():
    llm = ScriptedLlm("Thought: a long thought\nAction: queryOrder\nAction Input: 882", finish_reason="length")
    result = ReActAgent(llm, tools(), max_tokens=20).run("order?")
    assert result.reason == "length"
    assert result.trace.tool_calls == []
    assert llm.requests[0]["max_tokens"] == 20


def test_empty_reply_stops_with_a_reason():
    assert ReActAgent(ScriptedLlm("   "), tools()).run("order?").reason == "empty_reply"


@pytest.mark.parametrize("reply", ["Thought: done\nFinal Answer:", "Final Answer:   \n\n"])
def test_an_empty_final_answer_stops_with_a_reason_not_an_empty_answer(reply):
    # It was given as the answer: the customer got nothing, and the run said final_answer.
    result = ReActAgent(ScriptedLlm(reply), tools()).run("order?")
    assert (result.reason, result.answer) == ("empty_reply", EMPTY_REPLY["en"])
    assert result.trace.end.detail == "the model's Final Answer was empty"


def test_history_is_placed_between_system_and_question():
    llm = ScriptedLlm(FINAL)
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Final Answer: hello"}]
    ReActAgent(llm, tools()).run("and my order?", history=history)
    assert [m["content"] for m in llm.requests[0]["messages"][1:]] == ["hi", "Final Answer: hello", "and my order?"]


@pytest.mark.parametrize("bad", [0, -1, 2.5])
def test_max_steps_must_be_positive(bad):
    with pytest.raises(ValueError):
        ReActAgent(ScriptedLlm(FINAL), tools(), max_steps=bad)


def test_agent_needs_a_registry():
    with pytest.raises(TypeError):
        ReActAgent(ScriptedLlm(FINAL), None)


def test_empty_question_is_refused():
    with pytest.raises(ValueError):
        ReActAgent(ScriptedLlm(FINAL), tools()).run("  ")


def test_reply_is_in_the_message_list_when_parsed_is_yielded():
    run = ReActAgent(ScriptedLlm(ACT_ORDER, FINAL), tools()).start("order?")
    while not isinstance(run.advance(), Parsed):
        pass
    assert run.messages[-1] == {"role": "assistant", "content": ACT_ORDER}


# -- native tool calls sent to the text agent ---------------------------------------------------------
NATIVE_CALL = {"id": "c1", "type": "function", "function": {"name": "queryOrder", "arguments": '{"id": "88231"}'}}


@pytest.mark.parametrize("text", ["", "Let me look that order up for you."])
def test_native_tool_calls_stop_the_text_agent_with_what_to_do(text):
    reply = ChatResult(text, "tool_calls", {}, tool_calls=(NATIVE_CALL,))
    result = ReActAgent(ScriptedLlm(reply), tools()).run("order 88231?")
    assert result.reason == "native_tool_calls" and not result.ok
    assert "native tool calls (queryOrder)" in result.trace.end.detail
    assert "text protocol does not read" in result.trace.end.detail
    assert result.trace.tool_calls == []  # the prose beside the call is not taken as the answer either


def test_a_final_answer_beside_native_tool_calls_is_still_the_answer():
    reply = ChatResult("Thought: known.\nFinal Answer: Signed for.", "stop", {}, tool_calls=(NATIVE_CALL,))
    result = ReActAgent(ScriptedLlm(reply), tools()).run("order 88231?")
    assert result.reason == "final_answer" and result.answer == "Signed for."


# -- a cap on what one Observation may feed the model -------------------------------------------------
def long_tool(size):
    return ToolRegistry([FunctionTool("queryOrder", "Look up an order.", lambda i: "x" * size)])


def test_a_long_observation_is_cut_and_the_trace_says_so():
    llm = ScriptedLlm(ACT_ORDER, FINAL)
    result = ReActAgent(llm, long_tool(10_000), max_observation_chars=1000).run("order 88231?")
    observation = result.trace.of_type(Observation)[0]
    assert observation.truncated and observation.original_chars == 10_000
    sent = llm.requests[1]["messages"][-1]["content"]
    assert sent.startswith("Observation: " + "x" * 1000 + "\n")
    assert "x" * 1001 not in sent
    assert "10000 characters" in sent and "first 1000" in sent  # the model is told it saw only part
    assert "[Observation cut] the tool returned 10000 characters" in result.trace.format("en")
    assert "[观察被截断] 工具返回了 10000 个字符" in result.trace.format("zh")
    again = Trace.from_json(result.trace.to_json())
    assert again.of_type(Observation)[0].original_chars == 10_000


def test_an_observation_within_the_cap_is_passed_whole():
    llm = ScriptedLlm(ACT_ORDER, FINAL)
    agent = ReActAgent(llm, long_tool(4000))
    assert agent.max_observation_chars == 4000  # the default
    result = agent.run("order 88231?")
    observation = result.trace.of_type(Observation)[0]
    assert not observation.truncated and observation.original_chars is None
    assert llm.requests[1]["messages"][-1]["content"] == "Observation: " + "x" * 4000
    assert "[Observation cut]" not in result.trace.format("en")


def test_no_cap_when_asked_for_none():
    llm = ScriptedLlm(ACT_ORDER, FINAL)
    ReActAgent(llm, long_tool(50_000), max_observation_chars=None).run("order 88231?")
    assert llm.requests[1]["messages"][-1]["content"] == "Observation: " + "x" * 50_000


@pytest.mark.parametrize("bad", [0, -5, 2.5, "100"])
def test_observation_cap_must_be_a_positive_whole_number(bad):
    with pytest.raises(ValueError, match="max_observation_chars"):
        ReActAgent(ScriptedLlm(FINAL), tools(), max_observation_chars=bad)


def test_a_lone_surrogate_in_the_question_is_replaced():
    llm = ScriptedLlm(FINAL)
    result = ReActAgent(llm, tools()).run("order 88231 \udcff?", history=[{"role": "user", "content": "\ud800"}])
    assert llm.requests[0]["messages"][-1]["content"] == "order 88231 \ufffd?"
    assert llm.requests[0]["messages"][-2]["content"] == "\ufffd"
    result.trace.to_json().encode("utf-8")


def test_a_stop_written_as_one_string_is_one_stop_sequence():
    # tuple("Observation:") made twelve one-character stops: every reply was cut at its first "o" ("Th").
    agent = ReActAgent(ScriptedLlm("Thought: done\nFinal Answer: shipped"), ToolRegistry([]), stop="Observation:")
    assert agent.stop == ("Observation:",)
