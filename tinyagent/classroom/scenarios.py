"""What the classroom model does next: read the request's intent, then run that scenario's planner.

Each planner is a small pure function of the `Conversation`. It asks "what do I still need?" and either
calls the tool that gets it or answers from what the Observations really said. Nothing is remembered
between calls and nothing is random: the same conversation always gives the same next step.

    intent          example request                       plan
    refund          我上周买的扫地机不回充了……订单号 88231   see refund.py (5 rounds)
    return_question Can I return order 88231?              the refund's checks -> answer and offer, no refund
    fault_report    订单 88231 的扫地机充不进电了             the refund's checks -> what the rules allow, ask
    warranty        88231 还在保修期吗？                    queryOrder -> getCurrentTime -> searchKnowledge
    refund_timing   退款多久到账？                          searchKnowledge -> answer
    logistics       帮我看看订单 88231 的快递到哪了          queryOrder -> queryLogistics -> answer
    order_status    订单 88232 现在什么状态？               queryOrder -> answer
    policy          七天无理由退货怎么算？                  searchKnowledge -> answer
    time            现在几点了？                           getCurrentTime -> answer
    weather         北京今天天气怎么样，要带伞吗？           <weather tool> -> answer
    reminder        明天开会的时候北京会下雨吗？提醒我带伞   calendar -> forecast -> message (if it rains) -> answer
    write_file      把 1 到 10 写入 numbers.txt            <write-file tool> -> answer
    read_file       Read ../../etc/passwd                  <read-file tool> -> answer (or its refusal)
    list_files      工作区里有哪些文件？                     <list-files tool> -> answer
    calculate       What is (1999 - 200) * 0.85?           <calculator tool> -> answer
    need_order_id   我想退货                               ask for the order number
    about_react     What is a ReAct agent?                 answer
    identity        你是谁？                               answer (the classroom model)
    greeting        你好                                   answer
    thanks          谢谢                                   answer
    clarify         我那个订单的东西……                      ask what the customer wants (never guess)
    decline         帮我写一首诗 / Book me a flight          decline politely, say what it can do

intents.py reads the intent; the planners live in shop_scenarios.py, refund.py, weather_and_files.py,
arithmetic.py, small_talk.py and reminders.py; handoffs.py plays lesson 21's triage and specialists. This
module only puts them together, with one rule that applies to every scenario: a tool that rejects the input
twice in a row gets no third try.
"""

from __future__ import annotations

from collections.abc import Callable

from tinyagent.classroom.arithmetic import plan_calculate
from tinyagent.classroom.conversation import Conversation, tool_kind
from tinyagent.classroom.intents import detect_intent
from tinyagent.classroom.planning import Act, Answer
from tinyagent.classroom.refund import plan_hasty_refund
from tinyagent.classroom.shop_scenarios import (
    plan_fault_report,
    plan_logistics,
    plan_need_order_id,
    plan_order_status,
    plan_policy,
    plan_refund_request,
    plan_return_question,
    plan_time,
    plan_warranty,
)
from tinyagent.classroom.small_talk import (
    plan_about_react,
    plan_clarify,
    plan_decline,
    plan_greeting,
    plan_identity,
    plan_thanks,
)
from tinyagent.classroom.weather_and_files import (
    plan_list_files,
    plan_read_file,
    plan_weather,
    plan_write_file,
)


def plan(conv: Conversation) -> Act | Answer:
    """The careful model's next step."""
    return (_unreadable_tools(conv) or _refused_twice(conv) or _handoffs(conv)
            or PLANNERS[detect_intent(conv)](conv))


# Lesson 21's two modules plan the conversations that offer a handoff, or the reminder's tools.
def _handoffs(conv: Conversation) -> Act | Answer | None:
    """The triage's or a specialist's step (handoffs.py), for a conversation offered a handoff or handBack tool."""
    if not any(tool_kind(name) in ("handoff", "handback") for name in conv.tools):
        return None
    from tinyagent.classroom.handoffs import plan_handoffs

    return plan_handoffs(conv)


def plan_reminder(conv: Conversation) -> Act | Answer:
    """The meeting, its forecast and the reminder (reminders.py)."""
    from tinyagent.classroom.reminders import plan_reminder as plan

    return plan(conv)


def _unreadable_tools(conv: Conversation) -> Answer | None:
    """The prompt asks for tool calls but lists no tool the model can read: say so plainly, call nothing."""
    if conv.tool_problem is None:
        return None
    return Answer(
        conv.say("系统提示词要求调用工具，但我找不到工具列表。", "The prompt asks for tools, but I find no tool list."),
        conv.tool_problem[conv.lang],
    )


def _refused_twice(conv: Conversation) -> Answer | None:
    """A tool that rejected our input twice in a row will not take a third try: say so and stop."""
    answered = [step for step in conv.steps if step.observation is not None][-2:]
    if len(answered) < 2 or not all(s.input_error for s in answered) or answered[0].tool != answered[1].tool:
        return None
    tool, error = answered[1].tool, answered[1].error
    return Answer(
        conv.say(
            f"{tool} 连续两次拒绝了我的输入（{error}），再试也不会有结果，如实告诉用户。",
            f"{tool} rejected my input twice ({error}); a third try will not help, so I say so.",
        ),
        conv.say(
            f"抱歉，系统没能处理这个请求（{tool} 返回：{error}）。请稍后再试，或联系人工客服。",
            f"Sorry, the system could not handle this request ({tool} said: {error}). Please try again "
            "later or contact a human agent.",
        ),
    )


def plan_hasty(conv: Conversation) -> Act | Answer:
    """The next step of a model that is imagining its Observations (lesson 04): it skips the checks."""
    if detect_intent(conv) == "refund":
        return plan_hasty_refund(conv, conv.order_ids[0])
    return plan(conv)


PLANNERS: dict[str, Callable[[Conversation], Act | Answer]] = {
    "refund": plan_refund_request,
    "return_question": plan_return_question,
    "fault_report": plan_fault_report,
    "warranty": plan_warranty,
    "refund_timing": plan_policy,
    "logistics": plan_logistics,
    "order_status": plan_order_status,
    "policy": plan_policy,
    "time": plan_time,
    "weather": plan_weather,
    "reminder": plan_reminder,
    "write_file": plan_write_file,
    "read_file": plan_read_file,
    "list_files": plan_list_files,
    "calculate": plan_calculate,
    "need_order_id": plan_need_order_id,
    "about_react": plan_about_react,
    "identity": plan_identity,
    "greeting": plan_greeting,
    "thanks": plan_thanks,
    "clarify": plan_clarify,
    "decline": plan_decline,
}
