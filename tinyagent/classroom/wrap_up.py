"""Lesson 10: the classroom model asked to stop and give its best answer from what it knows.

When a stop rule ends the agent's loop (`tinyagent/robustness/stop_rules.py`), the agent makes one last call: a
user message after the conversation that says why it stops, that no more tools may be called, and asks
for the best answer to the customer now. A real model reads that sentence; the classroom model looks
for the instruction not to call tools (`no_more_tools()`, English or Chinese) in the last user message,
after an earlier request.

Every variant answers it the same careful way (a model asked plainly to stop and answer, answers): from
the Observations of the tools that really ran, never from a warning or a timeout the agent's rules
wrote (those carry a "stop_rule" key). If they are enough for the whole answer, that is the answer;
otherwise it says what was found, what it did not get to, and that the customer may ask again. It never
invents what no Observation said.
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import cache

from tinyagent.classroom.conversation import Conversation, Step, message_text
from tinyagent.classroom.planning import (
    Act,
    Answer,
    read_now,
    read_order,
    read_parcel,
    sentence,
    top_knowledge,
)
from tinyagent.classroom.render import final_text
from tinyagent.classroom.reply import Reply
from tinyagent.classroom.scenarios import plan


@cache  # compiled the first time a message could hold it: every request's last message is asked, few do
def no_more_tools() -> re.Pattern:
    """The instruction not to call tools, as the agent's closing request words it (and a few other ways).
    Every wording holds "tool" or "工具"."""
    return re.compile(
        r"(do not|don't|never) call any (more )?tools?|no more tool( call)?s?|without (calling )?any (more )?tools?"
        r"|不要再?调用(任何)?工具|别再调用(任何)?工具|不再调用(任何)?工具",
        re.IGNORECASE,
    )


def closing_request(request: dict) -> dict | None:
    """`request` without its last message when that message asks for the best answer with no more tools
    (and an earlier user message holds the real request); None for any other request."""
    messages = request.get("messages") if isinstance(request, dict) else None
    if not isinstance(messages, list) or len(messages) < 2:
        return None
    last = messages[-1]
    if not isinstance(last, dict) or last.get("role") != "user" or not isinstance(last.get("content"), (str, list)):
        return None
    text = message_text(last)
    if not ("tool" in text.lower() or "工具" in text) or not no_more_tools().search(text):
        return None
    if not any(isinstance(m, dict) and m.get("role") == "user" for m in messages[:-1]):
        return None
    # Function calling sends its tools with tool_choice "none" here (lesson 09). The wrap-up calls no tool
    # either way, but plans with every tool declared, to name the step it did not get to.
    before = {key: value for key, value in request.items() if key != "tool_choice"}
    return {**before, "messages": messages[:-1]}


def wrap_up(conv: Conversation) -> Reply:
    """The best answer from what the Observations said, with no tool call."""
    known = replace(conv, steps=tuple(step for step in conv.steps if informative(step)))
    step = plan(known)
    thought = conv.say(
        "按要求停下，不再调用工具，只根据已有的 Observation 回答。",
        "I stop here as asked, call no more tools, and answer only from the Observations so far.",
    )
    answer = step.answer if isinstance(step, Answer) else partial_answer(known, step)
    return Reply(answer if conv.native else final_text(thought, answer))


def informative(step: Step) -> bool:
    """A tool call that really ran and answered (an error from the shop counts: "no such order" is news).
    Not: a call still waiting, a wrong tool name, or a note the agent's stop rules wrote instead."""
    data = step.data
    return step.observation is not None and step.ran and not (isinstance(data, dict) and "stop_rule" in data)


def partial_answer(conv: Conversation, next_step: Act) -> str:
    """What was found, and what the model did not get to (the next call it would have made)."""
    facts = list(dict.fromkeys(fact for step in conv.steps if (fact := describe(conv, step))))
    todo = to_do(conv, next_step)
    if not facts:
        return conv.say(
            f"抱歉，这次我还没来得及查到任何信息（下一步本来要{todo}）。请再问我一次，或者补充一些细节。",
            f"Sorry, I did not get to look anything up this time (next I would have had to {todo}). "
            "Please ask again, or add some details.",
        )
    if conv.zh:
        return f"抱歉，这次没能全部处理完。目前查到的情况：{'；'.join(facts)}。还没来得及{todo}；如果需要，请再问我一次。"
    return (
        f"Sorry, I could not finish everything this time. What I found: {'; '.join(facts)}. "
        f"I did not get to {todo}; ask me again if you need it."
    )


def describe(conv: Conversation, step: Step) -> str | None:
    """One Observation as a short fact, in the customer's language."""
    if step.error:
        return conv.say(f"{step.tool}（{step.input}）返回错误：{step.error}", f"{step.tool}({step.input}) said: {step.error}")
    if step.kind == "order":
        order = read_order(step, step.input)
        if conv.zh:
            parts = [f"订单 {order.order_id}（{order.product}）状态：{order.status}"]
            parts += [f"{order.sign_time} 签收"] if order.sign_time else []
            parts += [f"运单号 {order.tracking_no}"] if order.tracking_no else []
            return "，".join(parts)
        parts = [f"order {order.order_id} ({order.product}) is {order.status}"]
        parts += [f"signed for on {order.sign_time}"] if order.sign_time else []
        parts += [f"tracking number {order.tracking_no}"] if order.tracking_no else []
        return ", ".join(parts)
    if step.kind == "logistics":
        parcel = read_parcel(step, step.input)
        latest = f"{parcel.latest[0]} {parcel.latest[1]}" if parcel.latest else conv.say("暂无轨迹", "no trace yet")
        return conv.say(
            f"运单 {parcel.tracking_no}（{parcel.carrier}）{parcel.status}，最新：{latest}",
            f"parcel {parcel.tracking_no} ({parcel.carrier}) is {parcel.status}, latest: {latest}",
        )
    if step.kind == "time":
        now = read_now(step)
        return conv.say(f"今天是 {now[0]}", f"today is {now[0]}") if now else None
    if step.kind == "knowledge":
        top = top_knowledge(step)
        if top is None:
            return None
        title, content = top
        return conv.say(f"售后政策「{title}」：{sentence(content)}", f'the policy "{title}": {sentence(content)}')
    if step.kind == "refund":
        refund_id = (step.data or {}).get("refundId") if isinstance(step.data, dict) else None
        return conv.say(f"退款已提交，退款单号 {refund_id}", f"the refund was submitted, refund id {refund_id}")
    text = " ".join((step.observation or "").split())
    return conv.say(f"{step.tool} 返回：{text[:120]}", f"{step.tool} returned: {text[:120]}")


def to_do(conv: Conversation, next_step: Act) -> str:
    """The call the model would have made next, as a few words."""
    call = next_step.calls[0]
    words = {
        "order": (f"查询订单 {call.input}", f"look up order {call.input}"),
        "logistics": (f"查询运单 {call.input} 的物流轨迹", f"track parcel {call.input}"),
        "refund": ("提交退款申请", "submit the refund"),
        "knowledge": ("查询售后政策", "check the after-sales policy"),
        "time": ("确认今天的日期", "check today's date"),
    }.get(call.kind, (f"调用 {call.tool}", f"call {call.tool}"))
    return conv.say(*words)
