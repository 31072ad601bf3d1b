"""plan_execute.py: a request in several parts planned, each step run in the loop, a failed step re-planned
(a bounded number of times), the answer composed from the steps; on the classroom model and scripted ones."""

from __future__ import annotations

import pytest

from tinyagent import LlmClient, ReActAgent, Trace
from tinyagent.architectures.plan_execute import (
    PlanAndExecuteAgent,
    PlanMade,
    PlanStepDone,
    PlanStepStarted,
    step_failure,
)
from tinyagent.events import Final, Stopped, ToolCall

from .lesson17_helpers import TWO_ORDERS_AND_A_POLICY, ScriptedLlm, down, shop_tools, with_failing_logistics


@pytest.fixture(scope="module")
def llm():
    return LlmClient.classroom()


def test_two_orders_and_a_policy_question_are_planned_and_executed(llm):
    result = PlanAndExecuteAgent(llm, shop_tools()).run(TWO_ORDERS_AND_A_POLICY)
    plan = result.trace.of_type(PlanMade)
    assert [p.steps for p in plan] == [("查询订单 88231 的物流", "查询订单 88232 的物流", "查询售后政策：七天无理由退货怎么算运费")]
    assert [c.name for c in result.trace.tool_calls] == [
        "queryOrder", "queryLogistics", "queryOrder", "queryLogistics", "searchKnowledge"]
    assert [o.ok for o in result.outcomes] == [True, True, True] and result.replans == 0
    assert result.ok and result.reason == "final_answer"
    for fact in ("SF1234567890", "已签收", "YT2468013579", "运输中", "寄回运费由买家承担"):
        assert fact in result.answer
    # One trace: rounds numbered on across the steps, exactly one end.
    rounds = [event.step for event in result.trace]
    assert rounds == sorted(rounds) and len(result.trace.of_type(Final)) == 1


def test_a_step_sees_the_request_and_what_earlier_steps_found(llm):
    recorded = []

    class Recording(ReActAgent):
        def start(self, question, history=None):
            recorded.append((question, history))
            return super().start(question, history)

    executor = Recording(llm, shop_tools(), max_steps=6)
    PlanAndExecuteAgent(llm, executor=executor).run(TWO_ORDERS_AND_A_POLICY)
    last_question, last_history = recorded[-1]
    assert last_question.startswith("查询售后政策")
    context = last_history[0]["content"]
    assert last_history[0]["role"] == "system" and TWO_ORDERS_AND_A_POLICY in context
    assert "SF1234567890" in context and "YT2468013579" in context


def test_a_failed_step_is_re_planned_and_tried_again(llm):
    result = PlanAndExecuteAgent(llm, with_failing_logistics(shop_tools(), 1)).run(TWO_ORDERS_AND_A_POLICY)
    plans = result.trace.of_type(PlanMade)
    assert len(plans) == 2 and plans[1].revision == 1 and "快递公司接口超时" in plans[1].reason
    assert plans[1].steps[0] == "再试一次：查询订单 88231 的物流"
    assert [o.ok for o in result.outcomes] == [False, True, True, True] and result.replans == 1
    assert "SF1234567890" in result.answer and "没有完成" not in result.answer  # the retry speaks for it


def test_re_plans_are_bounded_and_the_answer_says_what_could_not_be_done(llm):
    tools = with_failing_logistics(shop_tools(), -1)  # the courier's system never answers
    result = PlanAndExecuteAgent(llm, tools, max_replans=2).run(TWO_ORDERS_AND_A_POLICY)
    assert result.replans == 2 and len(result.trace.of_type(PlanMade)) == 3
    assert sum(not o.ok for o in result.outcomes) >= 3
    assert len(result.outcomes) <= 3 + 2 * 6  # never more steps than the plans could hold
    assert result.ok and "寄回运费由买家承担" in result.answer
    assert "查询订单 88231 的物流：没有完成。" in result.answer and "再试一次" not in result.answer
    none = PlanAndExecuteAgent(llm, with_failing_logistics(shop_tools(), -1), max_replans=0).run(TWO_ORDERS_AND_A_POLICY)
    assert none.replans == 0 and len(none.trace.of_type(PlanMade)) == 1


def test_an_unreadable_plan_is_shown_to_the_planner_with_the_reason(llm):
    scripted = ScriptedLlm("I would first look things up, then answer.", "1. 查询订单 88231 的物流", "您好！已查到。")
    result = PlanAndExecuteAgent(scripted, executor=ReActAgent(llm, shop_tools())).run("订单 88231 的物流")
    first, second = result.trace.of_type(PlanMade)
    assert first.error.startswith("no numbered steps") and first.steps == ()
    assert second.steps == ("查询订单 88231 的物流",)
    told = scripted.calls[1][-1]["content"]
    assert told.startswith("无法读取你的计划：no numbered steps") and result.answer == "您好！已查到。"
    assert "[计划无法解析] no numbered steps found" in str(result.trace)
    assert "[Plan unreadable] no numbered steps found" in result.trace.format("en")


def test_a_plan_unreadable_twice_becomes_the_request_as_one_step(llm):
    scripted = ScriptedLlm("no plan", "still no plan", "Final Answer: done")
    result = PlanAndExecuteAgent(scripted, executor=ReActAgent(llm, shop_tools())).run("Where is order 88232?")
    plans = result.trace.of_type(PlanMade)
    assert [bool(p.error) for p in plans] == [True, True, False] and plans[-1].steps == ("Where is order 88232?",)
    assert result.trace.of_type(PlanStepStarted)[0].text == "Where is order 88232?" and result.answer == "done"


def test_a_planner_that_cannot_be_reached_stops_politely():
    result = PlanAndExecuteAgent(ScriptedLlm(down()), shop_tools()).run("Where is order 88232?")
    assert result.reason == "llm_error" and isinstance(result.trace.end, Stopped)
    assert "cannot reach" in result.answer


def test_a_composer_that_says_nothing_leaves_the_steps_answers(llm):
    scripted = ScriptedLlm("1. Track the parcel of order 88232", "")
    result = PlanAndExecuteAgent(scripted, executor=ReActAgent(llm, shop_tools())).run("Where is order 88232?")
    assert "YT2468013579" in result.answer


def test_step_failure_reads_the_steps_trace(llm):
    agent = ReActAgent(llm, shop_tools())
    assert step_failure(agent.run("查询订单 88232 的物流").trace) is None
    failed = agent.run("订单 88299 的物流").trace
    assert step_failure(failed).startswith("最后一条观察是错误：")  # a Chinese run says why in Chinese
    assert step_failure(failed, "en").startswith("the last Observation was an error: ")
    capped = ReActAgent(llm, shop_tools(), max_steps=1).run("查询订单 88232 的物流")
    assert step_failure(capped.trace) == "循环没有给出答复就结束了（max_steps）"
    english = ReActAgent(llm, shop_tools(), max_steps=1).run("Where is the parcel of order 88232?")
    assert step_failure(english.trace) == "the loop ended without an answer (max_steps)"


def test_the_plan_s_events_survive_json_and_print_in_both_languages(llm):
    result = PlanAndExecuteAgent(llm, with_failing_logistics(shop_tools(), 1)).run(TWO_ORDERS_AND_A_POLICY)
    again = Trace.from_json(result.trace.to_json())
    assert again.events == result.trace.events
    text = result.trace.format("zh")
    assert "[计划]\n  1. 查询订单 88231 的物流" in text and "[重新计划 1]" in text and "[第 1 步失败：最后一条观察是错误：" in text
    english = result.trace.format("en")
    assert "[Plan]" in english and "[Re-plan 1]" in english and "[Step 2 done]" in english


def test_an_english_request_is_planned_in_english(llm):
    result = PlanAndExecuteAgent(llm, shop_tools()).run(
        "Where are the parcels of orders 88231 and 88232? Also, who pays the shipping for a no-reason return?")
    assert result.trace.of_type(PlanMade)[0].steps[:2] == ("Track the parcel of order 88231",
                                                           "Track the parcel of order 88232")
    assert "SF1234567890" in result.answer and "YT2468013579" in result.answer
    assert [c.name for c in result.trace.tool_calls][-1] == "searchKnowledge"


def test_bad_settings_are_refused_at_once():
    with pytest.raises(ValueError, match="max_replans"):
        PlanAndExecuteAgent(ScriptedLlm(), shop_tools(), max_replans=-1)
    with pytest.raises(TypeError, match="tools=ToolRegistry"):
        PlanAndExecuteAgent(ScriptedLlm())
    with pytest.raises(ValueError, match="non-empty"):
        PlanAndExecuteAgent(ScriptedLlm(), shop_tools()).run("  ")


def test_every_step_start_has_its_end(llm):
    trace = PlanAndExecuteAgent(llm, with_failing_logistics(shop_tools(), 1)).run(TWO_ORDERS_AND_A_POLICY).trace
    started = [e.number for e in trace.of_type(PlanStepStarted)]
    assert started == [e.number for e in trace.of_type(PlanStepDone)] == list(range(1, len(started) + 1))
    assert all(isinstance(e, ToolCall) for e in trace.tool_calls)


def test_the_widgets_show_the_plan_the_steps_and_the_reflection(llm):
    from tinyagent.architectures.reflection import ReflectingAgent
    from tinyagent.widgets.cards import build_cards, card_html

    from .lesson17_helpers import SlippingLlm

    cards = build_cards(PlanAndExecuteAgent(llm, shop_tools()).run(TWO_ORDERS_AND_A_POLICY).trace)
    first = card_html(cards[0], "zh")
    assert "ta-plan_made" in first and "1. 查询订单 88231 的物流" in first
    assert "ta-plan_step_started" in card_html(cards[1], "zh") and "[第 1 步完成]" in cards[3].text("zh")
    checked = ReflectingAgent(ReActAgent(SlippingLlm(llm), shop_tools()), llm).run("查一下订单 88231 的物流")
    last = card_html(build_cards(checked.trace)[-1], "zh")
    assert last.index("ta-reflected") < last.index("ta-final") and "[反思：revise]" in last


def test_an_english_plan_is_re_planned_in_english(llm):
    question = "Where are the parcels of orders 88231 and 88232?"
    result = PlanAndExecuteAgent(llm, with_failing_logistics(shop_tools(), 1)).run(question)
    plans = result.trace.of_type(PlanMade)
    assert plans[1].steps == ("Try again: Track the parcel of order 88231", "Track the parcel of order 88232")
    assert result.answer.startswith("Hello! Here is what you asked about:")
    assert "SF1234567890" in result.answer and "could not be done" not in result.answer


def test_a_refund_made_by_a_step_that_failed_is_told_to_the_re_planner_and_the_composer():
    # they read only "Failed step: refund 88231 / why: the loop ended without an answer (max_steps)"
    import json

    refund = json.dumps({"orderId": "88231", "reason": "broken"})
    scripted = ScriptedLlm(
        "1. refund 88231",
        f"Thought: refund it\nAction: applyRefund\nAction Input: {refund}",
        *["Thought: check again\nAction: queryOrder\nAction Input: 88231"] * 5,  # to the step's cap
        "No further steps.",
        "Final Answer: done",
    )
    result = PlanAndExecuteAgent(scripted, shop_tools()).run("Please refund order 88231, it is broken.")
    replanner, composer = scripted.calls[-2][-1]["content"], scripted.calls[-1][-1]["content"]
    assert "RF202606300001" in replanner and "RF202606300001" in composer
    [step] = result.outcomes
    assert not step.ok and len(step.changes) == 1 and "RF202606300001" in step.changes[0]
