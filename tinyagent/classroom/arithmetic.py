"""Arithmetic (lesson 15): the careful model hands a sum to the calculator tool instead of doing it itself.

A language model does arithmetic by predicting digits, and gets long sums wrong with confidence; so does
this one, by having no arithmetic at all. It finds the expression in the request (intents.expression_in),
calls the offered calculator with it, and answers with what the tool returned, or with the tool's refusal
("division by zero"). Without a calculator tool it says it cannot compute, rather than guess.
"""

from __future__ import annotations

from tinyagent.classroom.conversation import Conversation
from tinyagent.classroom.intents import expression_in
from tinyagent.classroom.planning import Act, Answer, act, call, pick
from tinyagent.classroom.small_talk import cannot


def plan_calculate(conv: Conversation) -> Act | Answer:
    expression = expression_in(conv.request) or ""
    if conv.tool_for("calculator") is None:
        return cannot(conv, f"计算 {expression}", f"calculate {expression}")
    step = conv.result("calculator")
    if step is None:
        return act(
            conv,
            conv.say(f"用户要算 {expression}。心算容易出错，用计算器工具算。",
                     f"The user wants {expression} worked out. Arithmetic in my head is error-prone: I use the "
                     "calculator."),
            [call(conv, "calculator", expression=expression)],
        )
    if step.error:
        return Answer(
            conv.say(f"计算器拒绝了这个算式：{step.error}。如实告诉用户。",
                     f"The calculator refused: {step.error}. I tell the user so."),
            conv.say(f"抱歉，{expression} 算不出来：{step.error}。",
                     f"Sorry, {expression} cannot be worked out: {step.error}."),
        )
    result = pick(step.data, "result", "value", "answer")
    if result is None:
        result = (step.observation or "").strip()
    approximate = isinstance(step.data, dict) and step.data.get("exact") is False
    return Answer(
        conv.say(f"计算器返回 {result}{'（近似值）' if approximate else ''}，可以回答了。",
                 f"The calculator says {result}{' (rounded)' if approximate else ''}. I can answer."),
        conv.say(f"{expression} = {result}{'（近似值）' if approximate else ''}",
                 f"{expression} = {result}{' (rounded)' if approximate else ''}"),
    )
