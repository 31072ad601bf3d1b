"""Lesson 17: a router. One ReAct loop for a request with one part; plan-and-execute for a request with several.
With skills, the model picks the one that fits a one-part request, and the loop runs inside it.

    "订单 88231 的快递到哪了"                      -> react, skill logistics (chosen by the model)
    "订单 88231 和 88232 的物流都查一下，另外……"    -> plan: the request names 2 orders

Whether a request has several parts is decided by rules, not by the model: they cost nothing, a person can
read why (`Route.reason`, and the trace's `Routed` event), and a test can pin them. `needs_plan` returns that
reason, or None. Which skill fits is a question of meaning, so it is the model's: one call that lists the
skills (name and description) and asks for one name; a reply that names none of them leaves every tool on.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

from tinyagent.agent import AgentResult, ReActAgent
from tinyagent.architectures.plan_execute import PlanAndExecuteAgent
from tinyagent.architectures.reflection import ReflectingAgent
from tinyagent.architectures.skills import Skill, SkillActivated
from tinyagent.errors import LlmError
from tinyagent.events import Event, LlmCall, event_kind
from tinyagent.llm_client import LlmClient
from tinyagent.prompts import check_language, detect_language
from tinyagent.registry import ToolRegistry
from tinyagent.trace import Trace

ROUTE_LABEL = {"en": "[Route: {mode}{skill}] {reason}", "zh": "[路由：{mode}{skill}] {reason}"}  # in a printed trace


@event_kind
class Routed(Event):
    """Lesson 17 (router.py): how a request will be handled. mode "react" (one loop) or "plan" (plan-and-execute);
    `skill` the skill asked for (or ""); `reason` says why, in words a person can check."""

    kind: ClassVar[str] = "routed"
    mode: str = "react"
    skill: str = ""
    reason: str = ""

    def lines(self, lang: str, usage: bool = False, round: list[Event] = ()) -> list[str]:
        skill = f", {self.skill}" if self.skill else ""
        return [ROUTE_LABEL[lang].format(mode=self.mode, skill=skill, reason=self.reason)]


ORDER_ID = re.compile(r"(?<!\d)\d{5}(?!\d)")
# Words that join a second, separate request to the first ("..., and also ...").
PART_JOINERS = ("另外", "还有", "以及", "顺便", "同时", "此外", "再帮我", "also", "as well as", "besides",
                "and then", "in addition", "on top of that")
QUESTION_MARKS = re.compile(r"[?？]")

# The classroom model recognises the call by "Choose one skill" / 选择一个技能 (classroom/plan_and_reflect.py).
SKILL_CHOICE_PROMPT = {
    "en": ("Choose one skill for the customer's request from this list (name: what it is for (its tools)):\n{skills}\n"
           "Reply with one line, 'Skill: <name>', or 'Skill: none' if no skill fits."),
    "zh": ("从下面的技能列表（名称：用途（可用工具））中为顾客的请求选择一个技能：\n{skills}\n"
           "只回复一行“Skill: <名称>”；没有合适的就回复“Skill: none”。"),
}
_SKILL_LINE = re.compile(r"(?:skill|技能)\s*[:：]\s*[`*\"']*([A-Za-z0-9_-]+)", re.IGNORECASE)


# Each reason in the trace's language, so that a Chinese trace reads in one language (lesson 17).
ROUTE_REASONS = {
    "en": {"orders": "the request names {n} orders ({ids})", "joiner": "the request joins another part with {word!r}",
           "questions": "the request asks {n} questions", "one_part": "one part: one ReAct loop",
           "not_asked": "; no skill (the model could not be asked: {error})",
           "none_named": "; no skill (the model's reply names none: {reply!r})",
           "chosen": "; the model chose the skill {name!r}"},
    "zh": {"orders": "请求提到 {n} 个订单（{ids}）", "joiner": "请求用“{word}”连接了另一部分",
           "questions": "请求问了 {n} 个问题", "one_part": "只有一部分：一个 ReAct 循环",
           "not_asked": "；不用技能（无法询问模型：{error}）",
           "none_named": "；不用技能（模型的回复没有说出技能名：{reply!r}）",
           "chosen": "；模型选择了技能“{name}”"},
}


def needs_plan(question: str, lang: str | None = None) -> str | None:
    """Why `question` needs a plan (it has several parts), or None when one loop will do. The reason is in
    `lang` (default: the question's language)."""
    reasons = ROUTE_REASONS[check_language(lang) if lang else detect_language(question)]
    ids = list(dict.fromkeys(ORDER_ID.findall(question)))
    if len(ids) >= 2:
        return reasons["orders"].format(n=len(ids), ids=", ".join(ids))
    low = question.lower()
    joiner = next((word for word in PART_JOINERS if (word in low if not word.isascii() else
                   re.search(rf"\b{word}\b", low))), None)
    if joiner is not None:
        return reasons["joiner"].format(word=joiner)
    questions = len(QUESTION_MARKS.findall(question))
    if questions >= 2:
        return reasons["questions"].format(n=questions)
    return None


@dataclass(frozen=True)
class Route:
    """How a request is handled: mode "react" or "plan", the skill (or None), and why."""

    mode: str
    skill: Skill | None
    reason: str


def read_skill_choice(text: str, skills: dict[str, Skill]) -> Skill | None:
    """The skill a reply names ("Skill: logistics"; or a reply that is just a skill's name), or None."""
    text = text or ""
    found = _SKILL_LINE.search(text)
    name = found.group(1) if found else text.strip().strip("`*\"'.。").strip()
    by_lower = {key.lower(): skill for key, skill in skills.items()}
    return by_lower.get(name.lower())


def skill_choice_messages(question: str, skills: dict[str, Skill], lang: str) -> list[dict]:
    listing = "\n".join(f"{skill.name}: {skill.description} (tools: {', '.join(skill.tools)})"
                        for skill in skills.values())
    return [{"role": "system", "content": SKILL_CHOICE_PROMPT[lang].format(skills=listing)},
            {"role": "user", "content": question}]


class Router:
    """Routes each request to one ReAct loop (inside a skill, if one fits) or to plan-and-execute.

    llm, tools: the model and the full registry
    skills:     {name: Skill} (e.g. `shop_skills()`), or None for no skills
    reflect:    check one-loop answers against their Observations (reflection.py) before giving them
    """

    def __init__(self, llm: LlmClient | None = None, tools: ToolRegistry | None = None, *,
                 skills: dict[str, Skill] | None = None, reflect: bool = False, lang: str | None = None):
        if not isinstance(tools, ToolRegistry):
            raise TypeError("Router needs tools=ToolRegistry(...) with every tool the agent may use")
        self.llm = llm if llm is not None else LlmClient.from_settings()
        self.tools = tools
        self.skills = dict(skills or {})
        for skill in self.skills.values():
            skill.scope(tools)  # a skill naming a tool the registry lacks is an error now, not mid-run
        self.reflect = reflect
        self.lang = check_language(lang) if lang is not None else None

    def choose_skill(self, question: str, lang: str | None = None) -> tuple[Skill | None, str, LlmCall | None]:
        """(the skill the model picks for a one-part request or None, why, the LlmCall event of the asking)."""
        lang = lang or self.lang or detect_language(question)
        reasons = ROUTE_REASONS[lang]
        why = reasons["one_part"]
        if not self.skills:
            return None, why, None
        messages = skill_choice_messages(question, self.skills, lang)
        try:
            reply = self.llm.chat(messages, max_tokens=32)
        except LlmError as error:
            return None, why + reasons["not_asked"].format(error=error), None
        call = LlmCall.of_reply(1, messages, reply)
        skill = read_skill_choice(reply.text, self.skills)
        if skill is None:
            return None, why + reasons["none_named"].format(reply=reply.text.strip()[:60]), call
        return skill, why + reasons["chosen"].format(name=skill.name), call

    def steps(self, question: str) -> Iterator[Event]:
        lang = self.lang or detect_language(question)
        why_plan = needs_plan(question, lang)
        if why_plan is not None:
            yield Routed(1, "plan", "", why_plan)
            run = PlanAndExecuteAgent(self.llm, self.tools, lang=self.lang).start(question)
            yield from run
            return
        skill, why, call = self.choose_skill(question, lang)
        if call is not None:
            yield call
        yield Routed(1, "react", skill.name if skill else "", why)
        if skill is not None:
            scoped = skill.scope(self.tools)
            yield SkillActivated(1, skill.name, tuple(scoped.names), skill.description)
            agent = ReActAgent(self.llm, scoped, lang=lang, system_prompt=skill.system_prompt(self.tools, lang))
        else:
            agent = ReActAgent(self.llm, self.tools, lang=lang)
        yield from (ReflectingAgent(agent).steps(question) if self.reflect else agent.steps(question))

    def run(self, question: str) -> AgentResult:
        trace = Trace(lang=self.lang or detect_language(question))
        for event in self.steps(question):
            trace.append(event)
        return AgentResult(trace.answer, trace.reason, trace, [])
