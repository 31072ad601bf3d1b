"""Lesson 17: a plan is numbered lines of text. Reading them, and what the planner is asked.

A planner is the model asked to break a request into steps before any tool runs (plan_execute.py runs
them). Its reply is text, and a model may wrap the steps in anything: a sentence before them, Markdown bold,
"Step 1:" or "第 1 步：", a list after the first one. `parse_plan` takes the first numbered list and nothing
else, and raises `PlanError` (one line, saying what to write instead) when there is no usable list. It never
raises anything else, whatever the text, and reads in time linear in the text's length: a bad plan is something
to tell the planner, not a crash or a hang.

    1. 查询订单 88231 的物流                  -> ["查询订单 88231 的物流",
    2) **查询订单 88232 的物流**                   "查询订单 88232 的物流",
    Step 3: look up the return shipping policy     "look up the return shipping policy"]
"""

from __future__ import annotations

import re

from tinyagent.errors import TinyAgentError

MAX_PLAN_STEPS = 6  # a request a customer types rarely has more parts; a longer plan is a model rambling
NO_FURTHER_STEPS = {"en": "No further steps.", "zh": "没有后续步骤。"}

# One numbered line: an optional bullet or bold, "Step"/"第" before the number, a closing mark after it, and no
# digit right after the mark ("1.5 kg", "1:30 pm" are not steps). Every run of spaces is possessive (`\s*+`): it
# keeps what it took, so a line padded with spaces is read once, not split every way between the runs.
NUMBERED_LINE = re.compile(
    r"^\s*+(?:[-*>•]\s*+)?(?:\*\*|__)?\s*+(?:step\s*+|第\s*+)?(\d{1,3})\s*+(?:步\s*+)?(?:\*\*|__)?\s*+"
    r"[.)、:：．）](?!\d)\s*+(.*)$",
    re.IGNORECASE,
)

# A reply that says only that nothing is left to do (the re-planner is told to write NO_FURTHER_STEPS then): with
# `allow_empty`, the empty plan. Its runs of spaces are possessive too.
NOTHING_LEFT = re.compile(
    r"^\s*+(?:no (?:further|more) steps?|nothing (?:more|else|left) to do|none|没有后续步骤|无需后续步骤|没有了|无)"
    r"\s*+[.。!！]?\s*+$",
    re.IGNORECASE,
)


class PlanError(TinyAgentError, ValueError):
    """A planner's reply that is not a usable plan. The message is one line the planner can act on."""


def parse_plan(text: str, *, allow_empty: bool = False, max_steps: int = MAX_PLAN_STEPS) -> list[str]:
    """The steps of the first numbered list in `text`, in order, their text without number or Markdown.

    A step starts with its number and a mark (`.`, `)`, `、`, `:` ...) that no digit follows: "1.5 kg" and
    "1:30 pm" are not steps. A line that is not numbered continues the step above it (a long step wrapped over
    two lines) until a blank line. The numbers go up; one that does not ends the list when a blank line comes
    before it (a second list, e.g. a summary), and is a PlanError right after a step ("1. / 1. / 2.": number
    the steps 1, 2, 3). With `allow_empty`, a reply that only says there is nothing left to do
    (`NO_FURTHER_STEPS`) is the empty plan. Raises PlanError also when there are no steps, a step is empty,
    or there are more than `max_steps`.
    """
    if not isinstance(text, str):
        raise PlanError(f"the plan must be text, got {type(text).__name__}")
    if allow_empty and NOTHING_LEFT.match(_plain(text)):
        return []
    steps: list[list[str]] = []  # each step's lines, joined at the end
    last_number = 0
    open_step = False  # the last line belonged to a step, so an unnumbered line continues it
    for line in text.splitlines():
        match = NUMBERED_LINE.match(line)
        if match:
            number = int(match.group(1))
            if steps and number <= last_number:
                if open_step:
                    raise PlanError(f"step {number} follows step {last_number}: the numbers must go up, number "
                                    "the steps 1, 2, 3 in one list")
                break
            if not steps and number != 1:
                continue  # "2026 年..." or a stray number before the list: not a step
            last_number = number
            steps.append([_plain(match.group(2))])
            open_step = True
        elif steps and open_step and line.strip():
            steps[-1].append(_plain(line))
        elif not line.strip():
            open_step = False
    if not steps:
        raise PlanError("no numbered steps found: write one step per line, starting '1. '")
    texts = [" ".join(part for part in parts if part) for parts in steps]
    for number, step in enumerate(texts, start=1):
        if not step:
            raise PlanError(f"step {number} is empty: say what the step does")
    if len(texts) > max_steps:
        raise PlanError(f"the plan has {len(texts)} steps, more than {max_steps}: merge steps, at most {max_steps}")
    return texts


def _plain(text: str) -> str:
    """Text without Markdown emphasis or inline code marks, and without surrounding spaces."""
    return re.sub(r"\*\*|__|`", "", text).strip()


def format_plan(steps: list[str] | tuple[str, ...]) -> str:
    """Steps as the numbered lines a planner writes (what parse_plan reads back)."""
    return "\n".join(f"{n}. {step}" for n, step in enumerate(steps, start=1))


# -- what the planner, the re-planner and the composer are told --------------------------------------------
# The classroom model recognises these calls by "Write a numbered plan", "Re-plan" and "Compose the final
# answer" (编号计划, 重新计划, 汇总成最终答复): see tinyagent/classroom/plan_and_reflect.py.

PLANNER_PROMPT = {
    "en": (
        "You plan the work of a customer-service assistant. Write a numbered plan for the customer's request: "
        "one step per line, '1. ', '2. ', ..., at most {max_steps} steps, each a task the assistant can do on "
        "its own with these tools:\n{tools}\nName the order id, tracking number or topic in every step. Write "
        "only the numbered lines."
    ),
    "zh": (
        "你负责为客服助手安排工作。请为顾客的请求写一个编号计划：每行一步，'1. '、'2. '……，最多 {max_steps} 步，"
        "每一步都是助手能用下列工具独立完成的任务：\n{tools}\n每一步都写明订单号、运单号或要查的话题。只写编号的步骤。"
    ),
}
REPLANNER_PROMPT = {
    "en": (
        "Re-plan: a step of the assistant's plan failed. Given the request, the steps done, the step that failed "
        "and why, and the steps not yet run, write the steps still needed as a numbered plan ('1. ', at most "
        "{max_steps}), with these tools:\n{tools}\nIf nothing more can be done, write only: "
        + NO_FURTHER_STEPS["en"]
    ),
    "zh": (
        "重新计划：助手计划中的一步失败了。根据请求、已完成的步骤、失败的步骤及原因、还没执行的步骤，写出还需要的步骤，"
        "编号计划（'1. '，最多 {max_steps} 步），可用工具：\n{tools}\n如果已经无事可做，只写：" + NO_FURTHER_STEPS["zh"]
    ),
}
COMPOSER_PROMPT = {
    "en": (
        "Compose the final answer to the customer from the results of the steps below. Use only what the results "
        "say; if a step failed, say what could not be done. Write only the answer."
    ),
    "zh": "请根据下面各步骤的结果，汇总成最终答复给顾客。只用结果里说的内容；有失败的步骤就说明哪件事没办成。只写答复本身。",
}
LABELS = {
    "en": {"request": "Request", "done": "Steps done", "failed": "Failed step", "left": "Steps not yet run",
           "results": "Step results", "why": "why", "none": "(none)", "unreadable":
           "Your plan could not be read: {error}. Write it again: numbered lines only."},
    "zh": {"request": "请求", "done": "已完成的步骤", "failed": "失败的步骤", "left": "还没执行的步骤",
           "results": "各步骤的结果", "why": "原因", "none": "（无）", "unreadable":
           "无法读取你的计划：{error}。请重写：只写编号的步骤。"},
}
# The steps of a plan run with the earlier steps' results in a system message that starts with this line.
CONTEXT_HEADING = {"en": "Plan context: earlier steps of this plan found:", "zh": "计划上下文：本计划前面的步骤查到了："}
