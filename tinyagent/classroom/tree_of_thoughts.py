"""Lesson 22: the classroom model asked for several candidate next steps, and asked to score candidates.

Both calls are the agent's conversation with one more user message at the end (tinyagent/architectures/tree_search.py writes
it), which this module recognises by a phrase, in English or Chinese, as plan_and_reflect.py does lesson 17's:

    Propose <k> different next steps / 提出 <k> 个不同的下一步     propose   up to k candidates, numbered
    Score each candidate / 给每个候选步骤打分                        score     one line per candidate, 0-10

The candidates, in this order, without repeats, the first k kept:

    1. the careful model's own next step (what it writes when asked for one step: the greedy step)
    2. when an order was looked up and its product is not the one the customer named: an answer that says so
       and asks which order they mean
    3. on a refund request or a fault report with an order id, the hasty step: applyRefund at once (lesson 04's
       shortcut)
    4. the look-ups not made yet: queryOrder of each order named, searchKnowledge of the request, getCurrentTime

The scores (`score_step`), the first rule that applies, in this order; a reason goes with each. A Final Answer:

    the answer that points out the product mismatch and asks ........................... 9
    the careful model's own next step .................................................. 8
    an answer before any tool ran, to a request that names an order .................... 2
    any other answer ................................................................... 5

Anything else:

    a tool that was not offered, or a reply that is no step ............................ 0
    a call already made (same tool, same input) ........................................ 2
    applyRefund on an order whose product is not the one named ......................... 1
    applyRefund before the order, today's date and the policy have all been read ....... 2
    more checks on an order whose product is not the one named ......................... 4
    the careful model's own next step .................................................. 8
    any other step ..................................................................... 5

So when the customer names one product and an order that holds another, the careful model's own step carries
on with the refund's checks (it never compares the two), while its scores favour the answer that asks.
"""

from __future__ import annotations

import re
from functools import cache

from tinyagent.classroom.conversation import (
    Conversation,
    message_text,
    parse_action,
    read_conversation,
    tool_kind,
)
from tinyagent.classroom.intents import detect_intent
from tinyagent.classroom.planning import Act, Answer, act, call, pick
from tinyagent.classroom.refund import product_word, read_fault
from tinyagent.classroom.render import step_text
from tinyagent.classroom.reply import Reply
from tinyagent.classroom.scenarios import plan

# What an English product word is called in the shop's (Chinese) product names.
PRODUCT_IN_ZH = {"robot vacuum": "扫地机", "vacuum": "吸尘器", "air purifier": "空气净化器", "floor washer": "洗地机"}
SCORES = {"not_a_step": 0, "refund_wrong_item": 1, "refund_unchecked": 2, "repeat": 2, "answer_unchecked": 2,
          "asks_about_mismatch": 9, "checks_wrong_item": 4, "careful": 8, "other": 5}


@cache
def _kinds() -> list[tuple[str, re.Pattern]]:
    return [
        ("propose", re.compile(r"propose (\d+) different next steps|提出\s*(\d+)\s*个不同的下一步", re.IGNORECASE)),
        ("score", re.compile(r"score each candidate|给每个候选步骤打分", re.IGNORECASE)),
    ]


def tree_reply(request: dict) -> Reply | None:
    """The reply to a propose or score call (see the module's docstring); None for any other request."""
    messages = request.get("messages") if isinstance(request, dict) else None
    if not isinstance(messages, list) or len(messages) < 3 or request.get("tools"):
        return None
    last = messages[-1]
    if not isinstance(last, dict) or last.get("role") != "user":
        return None
    text = message_text(last)
    for kind, pattern in _kinds():
        found = pattern.search(text)
        if found is None:
            continue
        conv = read_conversation({**request, "messages": messages[:-1]})
        if not conv.declared:
            return None
        if kind == "propose":
            k = int(found.group(1) or found.group(2))
            return Reply(_listing(conv, [step_text(step) for step in candidates(conv, k)]))
        return Reply(_scores(conv, text))
    return None


# -- the candidates -----------------------------------------------------------------------------------------
def candidates(conv: Conversation, k: int) -> list[Act | Answer]:
    """Up to k distinct next steps, the careful model's own first (see the module's docstring)."""
    found: list[Act | Answer] = []
    seen: set[str] = set()

    def add(step: Act | Answer | None) -> None:
        if step is None or len(found) >= k:
            return
        key = f"{step.calls[0].tool}\n{step.calls[0].input}" if isinstance(step, Act) else step.answer
        if key not in seen:  # the same call (or answer) with other words is no alternative
            seen.add(key)
            found.append(step)

    add(plan(conv))
    add(_ask_about_mismatch(conv))
    add(_hasty_refund(conv))
    for step in _look_ups(conv):
        add(step)
    return found


def mismatched_order(conv: Conversation) -> tuple[str, str, str] | None:
    """(order id, the product the order holds, the product the customer named) when they differ, else None."""
    named = product_word(conv.request, conv.lang)
    if named is None:
        return None
    word = PRODUCT_IN_ZH.get(named, named)
    for order_id in conv.order_ids:
        found = conv.result("order", order_id)
        product = pick(found.data, "product") if found is not None else None
        if isinstance(product, str) and product and not product.split()[-1].endswith(word):
            return order_id, product, named
    return None


def _ask_about_mismatch(conv: Conversation) -> Answer | None:
    found = mismatched_order(conv)
    if found is None:
        return None
    order_id, product, named = found
    return Answer(
        conv.say(f"订单 {order_id} 里是{product}，不是用户说的{named}。先别退，问清楚是哪一单。",
                 f"Order {order_id} holds the {product}, not the {named} the customer describes. No refund yet: "
                 "I ask which order they mean."),
        conv.say(f"您好！订单 {order_id} 购买的是{product}，不是{named}。请问出问题的{named}是哪一个订单？"
                 f"把订单号告诉我，我马上帮您查看能否退货。",
                 f"Hello! Order {order_id} is for the {product}, not a {named}. Which order was the {named} "
                 "on? Send me that order number and I will check whether it can be returned."),
    )


def _hasty_refund(conv: Conversation) -> Act | None:
    if detect_intent(conv) not in ("refund", "fault_report") or not conv.order_ids or conv.tool_for("refund") is None:
        return None
    order_id = conv.order_ids[0]
    if conv.result("refund", order_id) is not None:
        return None
    fault = read_fault(conv)
    reason = fault.description if fault else conv.say("用户申请退货", "the customer asked for a return")
    return act(conv, conv.say(f"用户给了订单号 {order_id} 和原因，可以直接提交退款。",
                              f"The customer gave order {order_id} and the reason, so I can submit the refund now."),
               [call(conv, "refund", orderId=order_id, reason=reason)])


def _look_ups(conv: Conversation) -> list[Act]:
    steps = []
    for order_id in conv.order_ids:
        if conv.tool_for("order") and conv.result("order", order_id) is None:
            steps.append(act(conv, conv.say(f"先查订单 {order_id}，看看买的是什么、什么时候签收的。",
                                            f"First I look up order {order_id}: what was bought and when it arrived."),
                             [call(conv, "order", orderId=order_id)]))
    if conv.tool_for("knowledge") and conv.result("knowledge") is None:
        fault = read_fault(conv)
        words = [product_word(conv.request, conv.lang), fault.keyword if fault else None,
                 conv.say("退货 政策", "return policy")]
        query = " ".join(word for word in words if word)
        steps.append(act(conv, conv.say("先查售后政策，看这种情况怎么处理。", "I check the after-sales policy for this case."),
                         [call(conv, "knowledge", query=query)]))
    if conv.tool_for("time") and conv.result("time") is None:
        steps.append(act(conv, conv.say("查一下今天的日期，好算天数。", "I need today's date to count the days."),
                         [call(conv, "time")]))
    return steps


def _listing(conv: Conversation, texts: list[str]) -> str:
    head = "候选 {n}：" if conv.zh else "Candidate {n}:"
    return "\n\n".join(f"{head.format(n=n)}\n{text.rstrip()}" for n, text in enumerate(texts, start=1))


# -- the scores -----------------------------------------------------------------------------------------------
_CANDIDATE = re.compile(r"^\s*(?:candidate|候选)\s*(\d+)\s*[:：]\s*$", re.IGNORECASE | re.MULTILINE)
_REASONS = {
    "not_a_step": ("不是一个可执行的步骤", "not a step that can be taken"),
    "refund_wrong_item": ("订单里的商品不是用户说的那件，不能退", "the order holds another product than the one named"),
    "refund_unchecked": ("订单、日期和政策还没核对就退款", "a refund before the order, the date and the policy are checked"),
    "repeat": ("重复了已经做过的查询", "repeats a look-up already made"),
    "answer_unchecked": ("什么都没查就回答", "answers before anything was looked up"),
    "asks_about_mismatch": ("指出商品不符，并问清楚是哪一单", "points out the product mismatch and asks"),
    "checks_wrong_item": ("在商品不符的订单上继续核对", "keeps checking an order that holds another product"),
    "careful": ("请求需要的下一项核对", "the next check the request needs"),
    "other": ("可能有用", "may help"),
}


def _scores(conv: Conversation, text: str) -> str:
    marks = list(_CANDIDATE.finditer(text))
    lines = []
    for mark, after in zip(marks, [*marks[1:], None]):
        body = text[mark.end(): after.start() if after else len(text)].strip()
        rule = score_step(conv, body)
        reason = _REASONS[rule][0 if conv.zh else 1]
        label = "候选 {n}：{s}/10 - {r}" if conv.zh else "Candidate {n}: {s}/10 - {r}"
        lines.append(label.format(n=mark.group(1), s=SCORES[rule], r=reason))
    return "\n".join(lines) or conv.say("没有找到候选步骤。", "I found no candidates to score.")


def score_step(conv: Conversation, text: str) -> str:
    """Which row of the module's score table one candidate's text falls under."""
    careful = step_text(plan(conv)).strip()
    mismatch = mismatched_order(conv)
    if "Final Answer:" in text:
        if mismatch is not None and mismatch[1] in text:
            return "asks_about_mismatch"
        if text.strip() == careful:
            return "careful"
        return "answer_unchecked" if not conv.steps and conv.order_ids else "other"
    action = parse_action(text)
    if action is None or action[0] not in conv.tools:
        return "not_a_step"
    tool, tool_input = action
    if any(step.tool == tool and step.input.strip() == tool_input.strip() for step in conv.steps):
        return "repeat"
    if tool_kind(tool) == "refund":
        if mismatch is not None:
            return "refund_wrong_item"
        order = next(iter(conv.order_ids), "")
        if not (conv.result("order", order) and conv.result("time") and conv.result("knowledge")):
            return "refund_unchecked"
    if mismatch is not None:
        return "checks_wrong_item"
    return "careful" if text.strip() == careful else "other"


__all__ = ["SCORES", "candidates", "mismatched_order", "score_step", "tree_reply"]
