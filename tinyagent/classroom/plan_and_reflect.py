"""Lesson 17: the classroom model as planner, re-planner, composer, checker of drafts, and chooser of skills.

Each of these calls comes with a system prompt of its own (tinyagent/architectures/plan_text.py, reflection.py, router.py), which
this module recognises by a phrase, in English or Chinese, the way summaries.py recognises lesson 12's:

    Write a numbered plan / 编号计划          plan      one step per part of the request
    Re-plan / 重新计划                        re-plan   the failed step tried once more, then the steps left
    Compose the final answer / 汇总成最终答复   compose   the steps' results, each on a numbered line
    Check the draft answer / 核对草稿答复      reflect   statuses, amounts, tracking numbers and refund ids of
                                                        the draft compared with the Observations
    Choose one skill / 选择一个技能            choose    of the skills listed with their tools, the smallest whose
                                                        tools cover what the request needs

The plan: the request is cut into parts at the words that join a second request (另外, 还有, also, ...) and at
sentence ends. A part with order ids and parcel words becomes one tracking step per order ("查询订单 88231 的物流");
a part with order ids and no parcel words one look-up per order; a part with no order id, a policy step
("查询售后政策：七天无理由退货怎么算运费"). Every step is a request the careful model already handles on its own.
"""

from __future__ import annotations

import json
import re

from tinyagent.architectures.plan_text import NO_FURTHER_STEPS, format_plan
from tinyagent.classroom.conversation import ORDER_ID, TRACKING_NO, message_text, tool_kind
from tinyagent.classroom.intents import detect_intent
from tinyagent.classroom.reply import Reply
from tinyagent.classroom.vocabulary import LOGISTICS
from tinyagent.defences.fenced_data import read_through_fences
from tinyagent.prompts import detect_language

RETRY = {"en": "Try again: ", "zh": "再试一次："}
STATUSES = ("已签收", "运输中", "待发货", "已取消")


JOINERS = re.compile(r"另外|还有|以及|顺便|同时|此外|\balso\b|\bas well as\b|\bbesides\b|\band then\b|\bin addition\b|"
                     r"[。！？!?；;]\s*", re.IGNORECASE)


# Each call's phrases, searched in the lower-cased system prompt; "re-plan" only as a word of its own, so that
# "pre-plan" is no call to re-plan.
CALL_KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("replan", ("re-plan", "重新计划")),
    ("plan", ("write a numbered plan", "编号计划")),
    ("compose", ("compose the final answer", "汇总成最终答复")),
    ("reflect", ("check the draft answer", "核对草稿答复")),
    ("choose", ("choose one skill", "选择一个技能")),
)


REPLAN_WORD = re.compile(r"\bre-plan\b")


def _says(low: str, phrase: str) -> bool:
    return bool(REPLAN_WORD.search(low)) if phrase == "re-plan" else phrase in low


def call_kind(system: str) -> str | None:
    """Which lesson 17 call a system prompt makes ("plan", "replan", ...), or None."""
    low = system.casefold()
    return next((kind for kind, phrases in CALL_KINDS if any(_says(low, phrase) for phrase in phrases)), None)


def lesson_17_reply(request: dict) -> Reply | None:
    """The reply to a planning, composing, checking or skill-choosing call; None for any other request."""
    messages = request.get("messages") if isinstance(request, dict) else None
    if not isinstance(messages, list) or len(messages) < 2 or request.get("tools"):
        return None
    first, last = messages[0], messages[-1]
    if not (isinstance(first, dict) and isinstance(last, dict)) or first.get("role") not in ("system", "developer"):
        return None
    # Lesson 25's fence may hold what the steps came to (fenced_data.py's fence_report): read as data, for its facts.
    system, user = message_text(first), read_through_fences(message_text(last))
    kind = call_kind(system)
    if kind is None or last.get("role") != "user":
        return None
    lang = detect_language(system)
    if kind == "plan":
        request_text = _section(user, ("Request", "请求")) or user
        return Reply(format_plan(plan_steps(request_text, lang)))
    if kind == "replan":
        return Reply(replan(user, lang))
    if kind == "compose":
        return Reply(compose(user, lang))
    if kind == "reflect":
        return Reply(check_draft(user, lang))
    return Reply(choose_skill(system, user))


# -- the plan --------------------------------------------------------------------------------------------
def plan_steps(request: str, lang: str) -> list[str]:
    """One step per part of the request (see the module's docstring); the request itself if none is found."""
    steps: list[str] = []
    for part in (p.strip(" ，,、：:") for p in JOINERS.split(request)):
        if not part:
            continue
        ids = list(dict.fromkeys(ORDER_ID.findall(part)))
        if ids and LOGISTICS.found_in(part):
            steps += [("查询订单 {} 的物流" if lang == "zh" else "Track the parcel of order {}").format(i) for i in ids]
        elif ids:
            steps += [("查询订单 {} 的状态" if lang == "zh" else "Look up order {}").format(i) for i in ids]
        elif len(part) >= (4 if lang == "zh" else 12):  # a fragment ("都查一下", "thanks") is not a task
            steps.append(("查询售后政策：{}" if lang == "zh" else "Look up the policy: {}").format(part))
    return steps or [request.strip()]


def replan(user: str, lang: str) -> str:
    """The failed step once more (marked as a retry), then the steps not yet run; a retry that failed too is
    dropped. Nothing left: NO_FURTHER_STEPS."""
    failed = (_section(user, ("Failed step", "失败的步骤")) or "").splitlines()
    failed_step = failed[0].strip() if failed else ""
    left = [line.split(". ", 1)[1].strip() for line in (_section(user, ("Steps not yet run", "还没执行的步骤")) or
                                                          "").splitlines() if re.match(r"^\d+\. ", line.strip())]
    steps = list(left)
    if failed_step and not failed_step.startswith(RETRY[lang]):
        steps.insert(0, RETRY[lang] + failed_step)
    return format_plan(steps) if steps else NO_FURTHER_STEPS[lang]


def compose(user: str, lang: str) -> str:
    """The steps' results in order, each on its own line; a failed step says it could not be done."""
    body = _section(user, ("Step results", "各步骤的结果")) or ""
    lines, current = [], None
    for line in body.splitlines():
        head = re.match(r"^(\d+)\. (.*)$", line.strip())
        if head:
            current = head.group(2)
            continue
        if current is not None and line.strip().startswith("->"):
            result = line.strip()[2:].strip()
            failed = re.search(r"\[(?:Failed step|失败的步骤): (.*)\]$", current)
            if failed:
                what = current[: failed.start()].strip()
                if RETRY[lang] + what not in body:  # a retry later in the plan speaks for it
                    what = what.removeprefix(RETRY[lang])
                    lines.append(f"{what}：没有完成。" if lang == "zh" else f"{what}: this could not be done.")
            elif result and result != "-":
                lines.append(re.sub(r"^(您好！|Hello! )", "", result))
            current = None
    opening = "您好！以下是您问的几件事：" if lang == "zh" else "Hello! Here is what you asked about:"
    return "\n".join([opening, *(f"{n}. {line}" for n, line in enumerate(lines, start=1))])


# -- reflection ------------------------------------------------------------------------------------------
def _facts(observations: str) -> dict:
    """What the Observations say: each order's status, price and tracking number, every number and id seen."""
    orders: dict[str, dict] = {}
    numbers: set[str] = set()
    ids: set[str] = set()
    for line in observations.splitlines():
        text = line.split("->", 1)[1].strip() if "->" in line else line
        numbers.update(re.findall(r"\d+(?:\.\d+)?", text))
        ids.update(t.upper() for t in TRACKING_NO.findall(text))
        ids.update(re.findall(r"RF\d{12}", text))
        try:
            data = json.loads(text)
        except ValueError:
            continue
        if isinstance(data, dict) and data.get("orderId"):
            orders[str(data["orderId"])] = data
    return {"orders": orders, "numbers": numbers, "ids": ids}


# An amount: a number before 元, yuan or RMB, or after ¥. A Chinese character may stand right before it (金额1299元);
# an ASCII letter, digit or "." may not, for then the number is part of an id or of another number.
AMOUNT = re.compile(r"(?<![0-9A-Za-z.])\d+(?:\.\d+)?(?=\s*(?:元|yuan|RMB))|(?<=[¥￥])\s*\d+(?:\.\d+)?")


def check_draft(user: str, lang: str) -> str:
    """Verdict ok, or revise with each contradiction and the draft corrected (see reflection.py's format)."""
    draft = _section(user, ("Draft answer", "草稿答复"), to_end=True) or ""
    facts = _facts(_section(user, ("Observations", "观察结果")) or "")
    problems, revised = [], draft
    for clause in re.split(r"(?<=[。；;.!！\n])", draft):
        ids = [i for i in dict.fromkeys(ORDER_ID.findall(clause)) if i in facts["orders"]]
        if len(ids) != 1:
            continue
        order = facts["orders"][ids[0]]
        fixed = clause
        for status in STATUSES:
            if status in clause and status != order.get("status") and order.get("status"):
                problems.append(_say(lang, f"草稿说订单 {ids[0]} 的状态是“{status}”，但 queryOrder 返回的是“{order['status']}”",
                                     f"the draft says order {ids[0]} is {status}, but queryOrder said {order['status']}"))
                fixed = fixed.replace(status, order["status"])
        pieces, last = [], 0  # each wrong amount replaced where it stands, never inside an order id
        for amount in AMOUNT.finditer(fixed):
            value = amount.group().strip()
            if value in facts["numbers"] or order.get("price") is None:
                continue
            problems.append(_say(lang, f"草稿说金额是 {value}，但订单 {ids[0]} 的金额是 {order['price']}",
                                 f"the draft says {value}, but order {ids[0]} costs {order['price']}"))
            pieces += [fixed[last:amount.start()], amount.group().replace(value, str(order["price"]))]
            last = amount.end()
        fixed = "".join(pieces) + fixed[last:]
        revised = revised.replace(clause, fixed) if fixed != clause else revised
    for found in set(TRACKING_NO.findall(draft)) | set(re.findall(r"RF\d{12}", draft)):
        if found.upper() not in facts["ids"]:
            problems.append(_say(lang, f"草稿里的 {found} 没有出现在任何观察结果中",
                                 f"{found} in the draft appears in no Observation"))
    if not problems:
        return "结论：通过" if lang == "zh" else "Verdict: ok"
    if lang == "zh":
        return "结论：需修改\n问题：\n" + "\n".join(f"- {p}" for p in problems) + f"\n修改后的答复：{revised}"
    return "Verdict: revise\nProblems:\n" + "\n".join(f"- {p}" for p in problems) + f"\nRevised answer: {revised}"


# -- choosing a skill ------------------------------------------------------------------------------------
# What each kind of request needs, by the kinds of tool conversation.tool_kind knows.
NEEDS = {
    "refund": {"order", "time", "knowledge", "refund"},
    "return_question": {"order", "time", "knowledge"},
    "fault_report": {"order", "time", "knowledge"},
    "warranty": {"order", "time", "knowledge"},
    "logistics": {"order", "logistics"},
    "order_status": {"order"},
    "policy": {"knowledge"},
    "refund_timing": {"knowledge"},
}


def listed_tools(listing: str) -> list[str]:
    """The tool names of a "(tools: a, b)" note's list, as a skill or a specialist is described."""
    return [tool.strip() for tool in listing.split(",") if tool.strip()]


def choose_skill(system: str, question: str) -> str:
    """"Skill: <name>": of the listed skills ("name: description (tools: a, b)") whose tools cover the kinds of
    tool the request needs, the one with the fewest tools (the first listed on a tie); "Skill: none" when none
    does or the request needs no shop tool."""
    from tinyagent.classroom.conversation import read_conversation

    conv = read_conversation({"model": "classroom", "messages": [{"role": "user", "content": question}]})
    needed = NEEDS.get(detect_intent(conv))
    best = None
    for line in system.splitlines():
        match = re.match(r"^\s*([A-Za-z0-9][A-Za-z0-9_-]*)\s*[:：].*\((?:tools|工具)\s*[:：]\s*([^)]*)\)\s*$", line)
        if match is None or needed is None:
            continue
        tools = listed_tools(match.group(2))
        if needed <= {tool_kind(tool) for tool in tools} and (best is None or len(tools) < best[1]):
            best = (match.group(1), len(tools))
    return f"Skill: {best[0] if best else 'none'}"


# -- reading the calls -------------------------------------------------------------------------------------
def _section(text: str, labels: tuple[str, ...], to_end: bool = False) -> str | None:
    """The text after "<label>:" up to the next blank line (or, `to_end`, to the end of the text)."""
    end = r"\Z" if to_end else r"\n\s*\n|\Z"
    for label in labels:
        match = re.search(rf"(?:^|\n){re.escape(label)}\s*[:：]\s*(.*?)(?={end})", text, re.DOTALL)
        if match:
            return match.group(1).strip()
    return None


def _say(lang: str, zh: str, en: str) -> str:
    return zh if lang == "zh" else en
