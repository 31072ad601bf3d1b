"""router.py: one loop for a one-part request (in the skill the model picks), a plan for several parts; the
reason is in the trace."""

from __future__ import annotations

import pytest

from tinyagent import LlmClient
from tinyagent.architectures.plan_execute import PlanMade
from tinyagent.architectures.reflection import Reflected
from tinyagent.architectures.router import Routed, Router, needs_plan, read_skill_choice
from tinyagent.architectures.skills import SkillActivated, shop_skills

from .lesson17_helpers import TWO_ORDERS_AND_A_POLICY, ScriptedLlm, SlippingLlm, down, shop_tools


@pytest.fixture(scope="module")
def llm():
    return LlmClient.classroom()


@pytest.mark.parametrize("question, reason", [
    (TWO_ORDERS_AND_A_POLICY, "请求提到 2 个订单（88231, 88232）"),
    ("订单 88231 的物流查一下，另外发票怎么开？", "请求用“另外”连接了另一部分"),
    ("Where is order 88232? Also, how do I get an invoice?", "the request joins another part with 'also'"),
    ("88231 到哪了？能退吗？", "请求问了 2 个问题"),
    ("订单 88231 的快递到哪了？", None),
    ("Where is order 88232?", None),
    ("The vacuum of 88231 won't charge, please refund it.", None),
    ("Can I return it besides?", "the request joins another part with 'besides'"),
    ("I also want 88231 tracked", "the request joins another part with 'also'"),
    ("Please look at the alsoran order 88231", None),  # a word that only contains "also" joins nothing
])
def test_needs_plan_says_why_or_none(question, reason):
    assert needs_plan(question) == reason


def test_needs_plan_says_why_in_the_language_asked_for():
    assert needs_plan(TWO_ORDERS_AND_A_POLICY, "en") == "the request names 2 orders (88231, 88232)"
    assert needs_plan("88231 到哪了？能退吗？", "en") == "the request asks 2 questions"
    assert needs_plan("Where is order 88232? Also, how do I get an invoice?", "zh") == "请求用“also”连接了另一部分"


@pytest.mark.parametrize("reply, name", [
    ("Skill: logistics", "logistics"), ("skill：**Refunds**", "refunds"), ("policies", "policies"),
    ("`logistics`.", "logistics"), ("Skill: none", None), ("I would use the tracking one.", None), ("", None),
])
def test_the_skill_choice_is_read_from_the_reply(reply, name):
    skill = read_skill_choice(reply, shop_skills())
    assert (skill.name if skill else None) == name


@pytest.mark.parametrize("question, skill, tools", [
    ("订单 88231 的快递到哪了？", "logistics", ["queryOrder", "queryLogistics"]),
    ("七天无理由退货怎么算运费？", "policies", ["searchKnowledge"]),
    ("88231 的扫地机充不进电了，帮我退款", "refunds", ["queryOrder", "getCurrentTime", "searchKnowledge", "applyRefund"]),
    ("What is the status of order 88232?", "logistics", ["queryOrder"]),
])
def test_a_one_part_request_runs_in_the_skill_the_model_picks(llm, question, skill, tools):
    result = Router(llm, shop_tools(), skills=shop_skills()).run(question)
    routed, activated = result.trace.of_type(Routed)[0], result.trace.of_type(SkillActivated)[0]
    chosen = f"; the model chose the skill {skill!r}" if question.isascii() else f"；模型选择了技能“{skill}”"
    assert routed.mode == "react" and routed.skill == skill and chosen in routed.reason
    assert activated.name == skill and {c.name for c in result.trace.tool_calls} <= set(activated.tools)
    assert [c.name for c in result.trace.tool_calls] == tools and result.ok


def test_a_request_no_skill_fits_keeps_every_tool(llm):
    result = Router(llm, shop_tools(), skills=shop_skills()).run("给我讲个笑话")
    routed = result.trace.of_type(Routed)[0]
    assert routed.skill == "" and "不用技能" in routed.reason and not result.trace.of_type(SkillActivated)


def test_a_request_in_several_parts_is_planned(llm):
    result = Router(llm, shop_tools(), skills=shop_skills()).run(TWO_ORDERS_AND_A_POLICY)
    routed = result.trace.of_type(Routed)[0]
    assert (routed.mode, routed.reason) == ("plan", "请求提到 2 个订单（88231, 88232）")
    assert len(result.trace.of_type(PlanMade)[0].steps) == 3 and "YT2468013579" in result.answer
    assert str(result.trace).startswith("===== 第 1 圈 =====\n[路由：plan] 请求提到 2 个订单")


def test_a_skill_chooser_that_cannot_be_reached_leaves_every_tool():
    model = ScriptedLlm(down(), "Thought: easy\nFinal Answer: Hello!")
    result = Router(model, shop_tools(), skills=shop_skills()).run("Hello there")
    assert "the model could not be asked" in result.trace.of_type(Routed)[0].reason and result.answer == "Hello!"


def test_reflect_checks_the_one_loop_answer(llm):
    result = Router(SlippingLlm(llm), shop_tools(), reflect=True).run("查一下订单 88231 的物流")
    assert result.trace.of_type(Reflected)[0].verdict == "revise" and "当前状态：已签收" in result.answer


def test_a_router_needs_the_full_registry():
    with pytest.raises(TypeError, match="tools=ToolRegistry"):
        Router(ScriptedLlm(), None)


@pytest.mark.parametrize("listed, chosen", [
    # Four tools of which only one is a kind the model knows, against two: the one with fewer tools wins.
    (("big: x (tools: queryOrder, getOrderNotes, getOrderHistory, getOrderInvoice)\n"
      "small: y (tools: queryOrder, queryLogistics)"), "small"),
    # A tie goes to the skill listed first.
    ("second: x (tools: queryOrder, queryLogistics)\nfirst: y (tools: queryOrder, searchKnowledge)", "second"),
])
def test_the_classroom_chooser_takes_the_skill_with_the_fewest_tools(listed, chosen):
    from tinyagent.classroom.plan_and_reflect import choose_skill

    assert choose_skill(listed, "What is the status of order 88231?") == f"Skill: {chosen}"
