"""`ReActAgent(parts=[TolerantRead()])` (lesson 11): sloppy replies are read, an Action beside a Final Answer runs,
and a botched step is answered with the exact format, a few times at most. The default stays strict."""

from __future__ import annotations

import pytest

from tinyagent import Final, LlmClient, Observation, ReActAgent, Stopped, ToolCall, fixed_clock
from tinyagent.robustness.tolerant_parser import FormatObservation, TolerantRead
from tinyagent.shop import Shop, shop_registry

from .test_agent import ACT_ORDER, FINAL, ScriptedLlm, tools

REFUND_EN = (
    "The robot vacuum I bought last week won't go back to its dock. If it can't be fixed, I want a refund. "
    "Order 88231."
)
PARCEL_ZH = "帮我看看订单 88231 的快递到哪了。"
THOUGHT_ONLY = "Thought: I should look the order up first.\n"


def shop() -> Shop:
    return Shop(":memory:", clock=fixed_clock("2026-06-30T19:05:23"))


def test_sloppy_model_fails_the_strict_agent_and_finishes_the_refund_with_the_tolerant_one():
    strict_shop, tolerant_shop = shop(), shop()
    strict = ReActAgent(LlmClient.classroom("classroom-sloppy"), shop_registry(strict_shop)).run(REFUND_EN)
    assert strict.reason == "fallback" and strict.answer.startswith("**Thought:**")
    assert strict.trace.tool_calls == [] and strict_shop.refunds() == []

    llm = LlmClient.classroom("classroom-sloppy")
    tolerant = ReActAgent(llm, shop_registry(tolerant_shop), parts=[TolerantRead()]).run(REFUND_EN)
    assert tolerant.reason == "final_answer"
    assert [c.name for c in tolerant.trace.tool_calls] == ["queryOrder", "getCurrentTime", "searchKnowledge",
                                                           "applyRefund"]
    refunds = tolerant_shop.refunds()
    assert len(refunds) == 1 and refunds[0]["refundId"] in tolerant.answer
    rules = [e.rule for e in tolerant.trace.events if e.kind == "parsed"]
    assert rules == ["action (Markdown around keys)", "action (key case)", "action (full-width colon)", "action",
                     "final_answer (code fence)"]
    assert "```" not in tolerant.answer


def test_an_action_beside_a_final_answer_runs_and_the_premature_answer_is_dropped():
    typed_past = ACT_ORDER + "Final Answer: Your parcel SF1 was signed for."
    llm = ScriptedLlm(typed_past, FINAL)
    result = ReActAgent(llm, tools(), parts=[TolerantRead()]).run("order?")
    assert [(c.name, c.input) for c in result.trace.tool_calls] == [("queryOrder", "88231")]
    assert result.trace.of_type(Final)[0].step == 2 and len(llm.requests) == 2
    assert result.trace.events[1].rule == "action_over_final"
    # The strict agent keeps the seed's behaviour: the answer, and no tool ever ran.
    strict = ReActAgent(ScriptedLlm(typed_past, FINAL), tools()).run("order?")
    assert strict.trace.tool_calls == [] and strict.answer == "Your parcel SF1 was signed for."


def test_a_botched_step_is_answered_with_the_format_and_the_model_can_comply():
    llm = ScriptedLlm(THOUGHT_ONLY, ACT_ORDER, FINAL)
    result = ReActAgent(llm, tools(), parts=[TolerantRead()]).run("order?")
    assert result.reason == "final_answer" and result.answer == "Your parcel SF1 was signed for."
    reminder = result.trace.of_type(Observation)[0]
    assert reminder.step == 1 and isinstance(reminder, FormatObservation) and reminder.error
    assert reminder.text.startswith("Format error: the reply has a Thought but no Action and no Final Answer.")
    assert "Action: <one tool name: queryOrder, queryLogistics>" in reminder.text
    assert not any(isinstance(e, ToolCall) and e.step == 1 for e in result.trace)
    # What the model read next: its botched reply, then the reminder as an Observation.
    assert llm.requests[1]["messages"][-2:] == [
        {"role": "assistant", "content": THOUGHT_ONLY},
        {"role": "user", "content": f"Observation: {reminder.text}"},
    ]


def test_a_model_that_never_complies_still_ends():
    llm = ScriptedLlm(THOUGHT_ONLY)
    result = ReActAgent(llm, tools(), parts=[TolerantRead(max_format_errors=2)]).run("order?")
    assert result.reason == "format_errors" and not result.ok
    assert len(llm.requests) == 3 and len(result.trace.of_type(Observation)) == 2
    assert "3 replies could not be read" in result.trace.end.detail
    assert result.answer == "Sorry, I did not manage to put an answer together. Please ask again."
    none = ReActAgent(ScriptedLlm(THOUGHT_ONLY), tools(), parts=[TolerantRead(max_format_errors=0)]).run("order?")
    assert none.reason == "format_errors" and none.trace.rounds == 1


def test_the_step_cap_still_bounds_a_tolerant_run():
    result = ReActAgent(ScriptedLlm(THOUGHT_ONLY), tools(), parts=[TolerantRead(max_format_errors=5)], max_steps=2).run("order?")
    assert result.reason == "max_steps"


def test_the_default_agent_is_strict_and_unchanged():
    result = ReActAgent(ScriptedLlm(THOUGHT_ONLY), tools()).run("order?")
    assert result.reason == "fallback" and result.answer == THOUGHT_ONLY.strip()
    assert ReActAgent(ScriptedLlm("**Action:** queryOrder"), tools()).run("order?").reason == "fallback"
    assert ReActAgent(ScriptedLlm("   "), tools()).run("order?").reason == "empty_reply"


def test_plain_prose_is_still_the_fallback_answer():
    result = ReActAgent(ScriptedLlm(ACT_ORDER, "Your order has been delivered."), tools(), parts=[TolerantRead()]).run("order?")
    assert result.reason == "fallback" and result.answer == "Your order has been delivered."


def test_an_empty_reply_gets_the_format_too():
    result = ReActAgent(ScriptedLlm("", ACT_ORDER, FINAL), tools(), parts=[TolerantRead()]).run("order?")
    assert result.reason == "final_answer"
    assert result.trace.of_type(Observation)[0].text.startswith("Format error: the reply is empty.")


def test_a_reply_cut_at_max_tokens_still_stops_the_run():
    llm = ScriptedLlm("Thought: a long thought\nAction: queryOrder\nAction Input: 882", finish_reason="length")
    result = ReActAgent(llm, tools(), parts=[TolerantRead()]).run("order?")
    assert result.reason == "length" and result.trace.tool_calls == []
    assert result.trace.events[1].rule == "format_error"


def test_the_tool_list_settles_a_name():
    llm = ScriptedLlm("Thought: x\nAction: `QueryOrder` (look it up)\nAction Input: 88231\n", FINAL)
    result = ReActAgent(llm, tools(), parts=[TolerantRead()]).run("order?")
    assert [c.name for c in result.trace.tool_calls] == ["queryOrder"]
    assert not result.trace.of_type(Observation)[0].error


@pytest.mark.parametrize("bad", [-1, 1.5, "2", True, None])
def test_max_format_errors_must_be_a_whole_number(bad):
    with pytest.raises(ValueError, match="max_format_errors"):
        TolerantRead(max_format_errors=bad)


def test_the_trace_names_the_repair_and_the_reminder_in_both_languages():
    result = ReActAgent(ScriptedLlm(THOUGHT_ONLY, "**Action:** queryOrder\n**Action Input:** 1", FINAL), tools(),
                        parts=[TolerantRead()]).run("order?")
    english = result.trace.format("en")
    assert "[Parser] format_error\n[Format reminder] Format error: the reply has a Thought" in english
    assert "[Parser] action (Markdown around keys)\n[Tool call] queryOrder(1)" in english
    chinese = result.trace.format("zh")
    assert "[解析] format_error\n[格式提醒] Format error:" in chinese
    # A strict run prints no parser lines: lesson 06's traces are unchanged.
    assert "[Parser]" not in ReActAgent(ScriptedLlm(ACT_ORDER, FINAL), tools()).run("order?").trace.format()


def test_forgets_action_variant_strict_falls_back_and_tolerant_recovers():
    strict = ReActAgent(LlmClient.classroom("classroom-forgets-action"), shop_registry(shop())).run(PARCEL_ZH)
    assert strict.reason == "fallback" and strict.answer.startswith("Thought: ")
    tolerant = ReActAgent(LlmClient.classroom("classroom-forgets-action"), shop_registry(shop()),
                          parts=[TolerantRead()]).run(PARCEL_ZH)
    assert tolerant.reason == "final_answer" and "SF1234567890" in tolerant.answer
    reminder = tolerant.trace.of_type(Observation)[0]
    assert isinstance(reminder, FormatObservation) and reminder.text.startswith("格式错误：")
    assert isinstance(tolerant.trace.end, Final) and not isinstance(tolerant.trace.end, Stopped)
