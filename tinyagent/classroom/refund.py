"""The refund scenario: the one where the agent has to reason, not just look things up.

The careful plan, one tool per round in text ReAct (the first article's five rounds):

    queryOrder(88231)        what was bought, when it was signed for, its status
    getCurrentTime()         the model cannot know today's date: it has to ask
    searchKnowledge(...)     the after-sales policy, whose day limits it reads out of the Observation
    applyRefund({...})       only if the dates and the policy allow it
    Final Answer             with the refund id the shop really issued

The decision (`decide`) uses real numbers: days = today - signing date, and the limits parsed from the
policy text ("签收次日起 7 天内 ... 无理由退货", "15 天内出现性能故障", "保修 1 年"), with 7 / 15 / 365 as
the fallback when the policy does not say. Within 7 days: a no-reason return. Within 15 days with a fault
the customer reported: a quality return. Later but under warranty: no refund, a free repair instead. When the
policy search cited its sources (lesson 16), the answer ends by naming the passage that states the rule applied.

`plan_hasty_refund` is the other half of lesson 04: what the same model writes when it is *imagining*
the Observations (no stop sequence). It looks the order up (and imagines what comes back), then checks
nothing else and goes straight to applyRefund.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tinyagent.classroom.citations import cited_passages, source_note
from tinyagent.classroom.conversation import Conversation
from tinyagent.classroom.intents import fault_clause
from tinyagent.classroom.planning import (
    Act,
    Answer,
    Order,
    act,
    call,
    maybe_done,
    pick,
    read_now,
    read_order,
    sentence,
)
from tinyagent.classroom.vocabulary import NO_FAULT_REASON, PRODUCTS_EN, PRODUCTS_ZH, VAGUE_PROBLEM, WARRANTY

# --- the policy's day limits ------------------------------------------------------------------------


@dataclass(frozen=True)
class ReturnLimits:
    """Days after signing: no-reason return, return for a quality fault, warranty (free repair)."""

    no_reason: int = 7
    quality: int = 15
    warranty: int = 365
    from_policy: bool = False  # True when at least one limit was read from a policy text


_NUMBER = r"(\d+|[一二两三四五六七八九十百]+)"


_LIMIT_SOURCES = {  # (pattern, flags) by name
    # The Chinese ones are searched clause by clause (_search_limit): a limit and what it is for sit in one clause.
    "no_reason_zh": (_NUMBER + r"\s*天内?.*?无理由", 0),
    # Not in a clause about the warranty: "保修 1 年（365 天）...保修期内的非人为故障" is no quality limit.
    "quality_zh": (r"^(?:(?!保修).)*?" + _NUMBER + r"\s*天内?((?:(?!无理由|保修).)*?)(?:故障|质量)", 0),
    "warranty_years_zh": (r"保修.*?" + _NUMBER + r"\s*年", 0),
    "warranty_days_zh": (r"保修.*?(\d+)\s*天", 0),
    "no_reason_en": (r"(\d+)[\s-]*days?[^.;\n]*?(?:no[- ]reason|without (?:a |any )?reason|any reason)", re.IGNORECASE),
    "quality_en": (r"(\d+)[\s-]*days?((?:(?!no[- ]reason)[^.;\n])*?)(?:fault|defect|quality)", re.IGNORECASE),
    "warranty_en": (
        # "a 1-year (365-day) warranty" or "under warranty for 1 year"; not "within 15 days ... within the warranty"
        r"(\d+)[\s-]*(year|day)s?\s*(?:\([^)]*\)\s*)?warranty|warranty[^.;\n]*?(\d+)[\s-]*(year|day)", re.IGNORECASE
    ),
}


LIMIT_PATTERNS = {name: re.compile(*source) for name, source in _LIMIT_SOURCES.items()}

# Where a Chinese clause ends: a limit and what it is for sit in one clause.
_CLAUSE_ENDS = str.maketrans({"。": "\n", "；": "\n", ";": "\n"})


def _search_limit(name: str, text: str) -> re.Match | None:
    """The first match of the limit pattern `name` in `text`; a Chinese one within a single clause."""
    pattern = LIMIT_PATTERNS[name]
    if not name.endswith("_zh"):
        return pattern.search(text)
    return next((match for clause in text.translate(_CLAUSE_ENDS).split("\n") if (match := pattern.search(clause))),
                None)


_CHINESE_DIGITS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}


def to_number(text: str) -> int:
    """ "15" -> 15, "七" -> 7, "十五" -> 15, "三十" -> 30: the numbers a policy writes."""
    if text.isdigit():
        return int(text)
    if "百" in text:
        head, _, rest = text.partition("百")
        return _CHINESE_DIGITS.get(head, 1) * 100 + (to_number(rest) if rest else 0)
    if "十" in text:
        tens, _, ones = text.partition("十")
        return _CHINESE_DIGITS.get(tens, 1) * 10 + _CHINESE_DIGITS.get(ones, 0)
    return _CHINESE_DIGITS.get(text, 0)


def read_limits(policy: str) -> ReturnLimits:
    """The day limits a policy text states; the usual 7 / 15 / 365 for any it does not."""
    found: dict[str, int] = {}
    if match := _search_limit("no_reason_zh", policy) or _search_limit("no_reason_en", policy):
        found["no_reason"] = to_number(match.group(1))
    if match := _search_limit("quality_zh", policy) or _search_limit("quality_en", policy):
        found["quality"] = to_number(match.group(1))
    if match := _search_limit("warranty_years_zh", policy):
        found["warranty"] = to_number(match.group(1)) * 365
    elif match := _search_limit("warranty_days_zh", policy):
        found["warranty"] = int(match.group(1))
    elif match := _search_limit("warranty_en", policy):
        number, unit = (
            (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
        )
        found["warranty"] = int(number) * (365 if unit.lower() == "year" else 1)
    return ReturnLimits(**found, from_policy=bool(found))


# --- what the customer said --------------------------------------------------------------------------

@dataclass(frozen=True)
class Fault:
    """A fault the customer reported: the keyword that gave it away, and a phrase that describes it."""

    keyword: str
    description: str


def product_word(text: str | None, lang: str) -> str | None:
    """The kind of product a text mentions ("扫地机", "robot vacuum"), or None."""
    low = (text or "").lower()
    return next((word for word in (PRODUCTS_ZH if lang == "zh" else PRODUCTS_EN) if word in low), None)


def read_fault(conv: Conversation) -> Fault | None:
    """The fault the customer describes, or None if they describe none (see vocabulary.py for the words).

    The request first; if it says nothing about why (no fault, no other reason, no vague problem), an
    earlier request of the conversation may have: "扫地机不回充了" ... "那帮我退吧", or a summary of it (notes).
    """
    for text in conv.said_before:
        found = fault_clause(text)
        if found:
            keyword, said = found
            if conv.zh:
                return Fault(keyword, (product_word(text, "zh") or "") + said)
            return Fault(keyword, said)
        if text is conv.request and (NO_FAULT_REASON.found_in(text) or VAGUE_PROBLEM.found_in(text)):
            return None
    return None


def unclear_problem(conv: Conversation) -> bool:
    """True when the customer says something is wrong but not what: the model asks rather than decides."""
    return read_fault(conv) is None and VAGUE_PROBLEM.found_in(conv.request)


# --- the decision ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """What the rules say. `kind` is one of:

    no_reason        within the no-reason window: refund
    quality          within the quality window, with a reported fault: refund
    not_delivered    not signed for yet: refund (cancel, or refuse the parcel)
    needs_fault      within the quality window but no fault reported: no refund yet
    repair           past the quality window, under warranty: free repair, no refund
    out_of_warranty  past the warranty: paid repair, no refund
    """

    kind: str  # also "unclear_fault": within the quality window, a problem reported but not what it is
    days: int | None = None
    limits: ReturnLimits = ReturnLimits()

    @property
    def refund(self) -> bool:
        return self.kind in ("no_reason", "quality", "not_delivered")


def decide(days: int, limits: ReturnLimits, fault: bool) -> Verdict:
    """The after-sales rules, applied to `days` since signing."""
    if days <= limits.no_reason:
        kind = "no_reason"
    elif days <= limits.quality:
        kind = "quality" if fault else "needs_fault"
    elif days <= limits.warranty:
        kind = "repair"
    else:
        kind = "out_of_warranty"
    return Verdict(kind, days, limits)


# --- the planner -------------------------------------------------------------------------------------


# What the customer asked for, which decides what the planner does once it knows the verdict:
#   "refund"    "I want to return 88231": submit the refund when the rules allow it
#   "question"  "Can I return 88231?": answer yes or no, and offer to submit it (no side effect)
#   "report"    "88231 won't charge": say what the rules allow (return or repair), and ask which they want
#   "warranty"  "Is 88231 still under warranty?": the days left, or how long ago it was signed for and that
#               the warranty is past
MODES = ("refund", "question", "report", "warranty")


def plan_refund(conv: Conversation, order_id: str, mode: str = "refund") -> Act | Answer:
    """The careful refund: look the order up, check the date and the policy, then refund (or not).

    In the other `MODES` the same checks lead to an answer instead of a refund.
    """
    if conv.tool_for("order") is None:
        return Answer(
            conv.say(
                "用户要退款，但我没有查询订单的工具，核实不了订单。",
                "The customer wants a refund, but I have no tool to look the order up, so I cannot check it.",
            ),
            conv.say(
                f"抱歉，我现在查不到订单信息，无法为订单 {order_id} 办理退款，请联系人工客服。",
                f"Sorry, I cannot look up orders right now, so I cannot handle a refund for order "
                f"{order_id}. Please contact a human agent.",
            ),
        )
    step = conv.result("order", order_id)
    if step is None:
        fault = read_fault(conv)
        product = product_word(conv.request, conv.lang)
        because = conv.say(
            f"，原因是{fault.description}" if fault else "",
            (f" because the {product} is faulty" if product else " because of a fault") if fault else "",
        )
        wants = {
            "refund": conv.say(f"用户想退订单 {order_id}{because}", f"The customer wants a refund for order {order_id}{because}"),
            "question": conv.say(
                f"用户问订单 {order_id} 能不能退{because}", f"The customer asks whether order {order_id} can be returned{because}"
            ),
            "report": conv.say(
                f"用户反馈订单 {order_id} 有问题{because}，但没说想怎么处理",
                f"The customer reports a problem with order {order_id}{because}, without saying what they want done",
            ),
            "warranty": conv.say(
                f"用户问订单 {order_id} 还在不在保修期内", f"The customer asks whether order {order_id} is still under warranty"
            ),
        }[mode]
        return act(
            conv,
            conv.say(
                f"{wants}。先查订单详情，确认商品、签收时间和状态。",
                f"{wants}. First I look the order up to see the product, when it was signed for and its status.",
            ),
            [call(conv, "order", orderId=order_id)],
        )
    if step.error:
        return answer_order_error(conv, order_id, step.error)

    order = read_order(step, order_id)
    if order.stage == "cancelled":
        return _answer_cancelled(conv, order)
    if order.stage == "refunded":
        return Answer(
            conv.say(
                f"订单 {order_id} 的状态是{order.status}，已经在退款了，不必重复申请。",
                f"Order {order_id} is already being refunded (status: {order.status}); no need to apply again.",
            ),
            conv.say(
                f"订单 {order_id} 已经在退款流程中（状态：{order.status}），无需重复申请。",
                f"Order {order_id} is already being refunded (status: {order.status}), so there is nothing "
                "more to submit.",
            ),
        )
    if order.stage in ("unshipped", "in_transit"):
        if mode == "warranty":
            return _answer_warranty(conv, order, None)
        return _act_on(conv, order, Verdict("not_delivered"), mode)
    judged = _judge(conv, order, mode)
    if not isinstance(judged, Verdict):
        return judged
    if mode == "warranty":
        return _with_source(conv, _answer_warranty(conv, order, judged), ("warranty",))
    return _with_source(conv, _act_on(conv, order, judged, mode), RULES_OF_VERDICT.get(judged.kind, ()))


def _judge(conv: Conversation, order: Order, mode: str = "refund") -> Verdict | Act | Answer:
    """Gather today's date and the policy (asking for whatever is missing), then apply the rules."""
    now_step, policy_step = conv.result("time"), conv.result("knowledge")
    needed = []
    if now_step is None and conv.tool_for("time"):
        needed.append(call(conv, "time"))
    if policy_step is None and conv.tool_for("knowledge"):
        needed.append(call(conv, "knowledge", query=policy_query(conv, order)))
    now = read_now(now_step) if now_step else None
    product = order.product or conv.say("商品", "item")
    if needed:
        if needed[0].kind == "time":
            thought = conv.say(
                f"订单 {order.order_id} 是{product}，{order.sign_time or '签收时间未知'} 签收，状态：{order.status}。"
                "要判断还在不在退货期内，得先知道今天的日期。",
                f"Order {order.order_id} is the {product}, signed for on {order.sign_time or 'an unknown date'} "
                f"(status: {order.status}). To tell whether it is still within the return period I need today's date.",
            )
        elif now and order.signed_on and order.signed_on <= now[0]:
            days = (now[0] - order.signed_on).days
            thought = conv.say(
                f"今天是 {now[0]}，距 {order.signed_on} 签收已经 {days} 天。再查一下售后政策，看这种情况能不能退。",
                f"Today is {now[0]}, {days} days after it was signed for on {order.signed_on}. Now the after-sales "
                "policy: does this case qualify for a refund?",
            )
        else:
            thought = conv.say(
                f"订单 {order.order_id} 是{product}，已签收。查一下售后政策，确认退货的条件。",
                f"Order {order.order_id} is the {product}, signed for. Let me check the after-sales policy.",
            )
        return act(conv, thought, needed)

    if now is None and mode == "refund" and conv.tool_for("refund") is None:
        # Scoped to tools without the refund (a skill, lesson 17): the first thing it cannot do is the refund
        # itself, so that is what it says, not that a date it was never asked for is unknown.
        signed = conv.say(f"，{order.sign_time} 签收", f", signed for on {order.sign_time}") if order.sign_time else ""
        return Answer(
            conv.say(
                "这里没有提交退款的工具，我办不了退款，如实告诉用户该去哪里办。",
                "I have no tool here to submit a refund, so I cannot do it; I tell the customer where they can.",
            ),
            conv.say(
                f"抱歉，我在这里办理不了退款：没有提交退款的工具。订单 {order.order_id}（{order.product or '商品'}）"
                f"{signed}；退款请联系人工客服，或在“我的订单”中申请。",
                f"Sorry, I cannot handle refunds here: I have no tool to submit one. Order "
                f"{order.order_id} ({order.product or 'the item'}){signed}: for a refund, please contact a human "
                "agent or apply under \"My orders\".",
            ),
        )
    # A signing date after today is a wrong record, not day 0 of the return period: as unknown as no date.
    if now is None or order.signed_on is None or order.signed_on > now[0]:
        return Answer(
            conv.say(
                "我确认不了今天的日期或签收日期，算不出是否还在退货期内，不能贸然退款。",
                "I cannot establish today's date or the signing date, so I cannot tell whether the return "
                "period is still open. I will not guess.",
            ),
            conv.say(
                f"抱歉，我暂时无法确认订单 {order.order_id} 是否还在退货期内，为避免出错，请联系人工客服处理。",
                f"Sorry, I cannot confirm whether order {order.order_id} is still within the return period. "
                "To avoid a mistake, please ask a human agent to handle it.",
            ),
        )
    days = (now[0] - order.signed_on).days
    limits = read_limits(policy_step.text if policy_step else "")
    verdict = decide(days, limits, read_fault(conv) is not None)
    if verdict.kind == "needs_fault" and unclear_problem(conv):
        return Verdict("unclear_fault", days, limits)  # something is wrong, but what? ask, do not refuse
    return verdict


# The rules a decision applied, so its answer can cite the passages that state them (lesson 16). "Past the
# no-reason window; a fault can still be returned within 15 days" rests on two rules, and names both.
RULES_OF_VERDICT = {
    "no_reason": ("no_reason",),
    "quality": ("quality",),
    "needs_fault": ("no_reason", "quality"),
    "unclear_fault": ("no_reason", "quality"),
    "repair": ("quality", "warranty"),
    "out_of_warranty": ("warranty",),
}
_RULE_PATTERNS = {"no_reason": ("no_reason_zh", "no_reason_en"), "quality": ("quality_zh", "quality_en"),
                  "warranty": ("warranty_years_zh", "warranty_days_zh", "warranty_en")}


def states_rule(text: str, rule: str) -> bool:
    """Whether `text` states the day limit of `rule` ("no_reason", "quality" or "warranty")."""
    return any(_search_limit(key, text) for key in _RULE_PATTERNS[rule])


def _with_source(conv: Conversation, outcome: Act | Answer, rules: tuple[str, ...]) -> Act | Answer:
    """An answer that applied `rules`, ending with the cited passages that state them, when the search cited any.

    Nothing changes when the Observation carried no sources (the default searchKnowledge), when no passage
    states a rule applied, or when the refund itself failed (the answer is then about the failure).
    """
    if not isinstance(outcome, Answer) or not rules:
        return outcome
    refund = conv.result("refund")
    if refund is not None and refund.error:
        return outcome
    passages = cited_passages(conv.result("knowledge"))
    stating = [next((p for p in passages if states_rule(p.content, rule)), None) for rule in rules]
    named = list(dict.fromkeys(p for p in stating if p is not None))  # one passage may state two rules
    if not named:
        return outcome
    return Answer(outcome.thought, outcome.answer + source_note(conv, *named))


def policy_query(conv: Conversation, order: Order) -> str:
    """What to search the knowledge base for: the product, the fault, and the word for returns (or warranty)."""
    fault = read_fault(conv)
    warranty = WARRANTY.found_in(conv.request)
    if conv.zh:
        product = product_word(conv.request, "zh") or product_word(order.product, "zh")
        topic = "保修" if warranty else "退货"
        return " ".join(w for w in (product, fault.keyword if fault else None, topic, "政策") if w)
    product = product_word(conv.request, "en")
    topic = "warranty policy" if warranty else "return policy"
    return " ".join(w for w in (product, "quality fault" if fault else None, topic) if w)


def _act_on(conv: Conversation, order: Order, verdict: Verdict, mode: str = "refund") -> Act | Answer:
    """Submit the refund when the rules allow it and the customer asked for it; otherwise explain."""
    if verdict.kind == "unclear_fault":
        return _answer_unclear_fault(conv, order, verdict)
    if not verdict.refund:
        return _answer_no_refund(conv, order, verdict)
    if mode != "refund":
        return _answer_eligible(conv, order, verdict, mode)
    refund = conv.result("refund", order.order_id)
    if refund is None:
        if conv.tool_for("refund") is None:
            return Answer(
                conv.say(
                    "按政策可以退款，但我没有提交退款的工具。",
                    "The policy allows a refund, but I have no tool to submit it.",
                ),
                conv.say(
                    f"订单 {order.order_id} 符合退款条件，但我这里无法直接提交，请在“我的订单”中申请退款。",
                    f"Order {order.order_id} qualifies for a refund, but I cannot submit it from here. Please "
                    "apply under 'My orders'.",
                ),
            )
        return act(
            conv,
            _verdict_thought(conv, order, verdict),
            [call(conv, "refund", orderId=order.order_id, reason=refund_reason(conv, order, verdict))],
        )
    approval = pick(refund.data, "approval") if refund.error else None
    if approval in ("declined", "timeout", "error"):
        return _answer_not_approved(conv, order, str(approval))
    if refund.error and maybe_done(refund.error):
        return _answer_outcome_unknown(conv, order, refund.error)
    if refund.error:
        return Answer(
            conv.say(
                f"提交退款时系统返回错误：{refund.error}。退款没有成功，要如实告诉用户。",
                f"The refund failed: {refund.error}. I must tell the customer so.",
            ),
            conv.say(
                f"抱歉，订单 {order.order_id} 的退款没有提交成功，系统返回：{refund.error}。"
                "建议稍后再试，或联系人工客服处理。",
                f"Sorry, the refund for order {order.order_id} could not be submitted. The system said: "
                f"{refund.error}. Please try again later or contact a human agent.",
            ),
        )
    return _answer_refunded(conv, order, verdict, refund.data)


def _answer_outcome_unknown(conv: Conversation, order: Order, error: str) -> Answer:
    """The refund call got no answer (the server broke or went quiet after it was sent): it may have been written.
    Saying it failed would have the customer apply again for a refund they may already have; saying it went through
    would promise one there may not be. The answer says it is not known, and to look at the order before applying."""
    oid = order.order_id
    return Answer(
        conv.say(f"提交退款后没有收到结果：{error}。退款可能已经提交，也可能没有；不能说失败，也不能说成功，"
                 "要请用户先查订单状态，不要重复申请。",
                 f"The refund call got no answer: {error}. It may have been submitted or not; I must not say it "
                 "failed, nor that it went through. The customer should check the order before applying again."),
        conv.say(f"订单 {oid} 的退款申请已经发出，但系统没有返回结果（系统提示：{error}），"
                 "所以目前无法确认是否提交成功：退款可能已经提交。请先查询订单状态（queryOrder），"
                 "确认没有退款记录后再重新申请，以免重复退款；也可以联系人工客服核实。",
                 f"The refund request for order {oid} was sent, but no answer came back (the system said: {error}), "
                 "so it is not known whether it went through: the refund may have been submitted. Please check "
                 "the order (queryOrder) before applying again, so it is not refunded twice, or ask a human agent "
                 "to confirm."),
    )


def _answer_not_approved(conv: Conversation, order: Order, approval: str) -> Answer:
    """Lesson 15: the refund waited for a person's approval (a confirmation gate) and did not get it.
    Nothing was written, so the answer says so, and never offers a refund id."""
    oid = order.order_id
    if approval == "declined":
        return Answer(
            conv.say("退款需要工作人员批准，这次被拒绝了，系统没有做任何改动。不能再提交，要如实告诉用户。",
                     "The refund needs a staff member's approval, and it was declined: nothing was changed. I "
                     "must not submit it again; I tell the customer."),
            conv.say(f"抱歉，订单 {oid} 的退款申请需要工作人员审核，这次没有获得批准，所以没有提交，"
                     "您的订单也没有任何变动。如有疑问，可以联系人工客服进一步处理。",
                     f"Sorry, the refund for order {oid} needs a staff member's approval, and it was not "
                     "approved, so it has not been submitted and nothing about your order has changed. A human "
                     "agent can look into it with you."),
        )
    if approval == "timeout":
        return Answer(
            conv.say("退款在等待工作人员批准，但在时限内没有人答复，所以没有提交，系统没有改动。要告诉用户。",
                     "The refund waited for a staff member's approval and nobody answered in time, so it was "
                     "not submitted and nothing changed. I tell the customer."),
            conv.say(f"订单 {oid} 的退款需要工作人员批准，目前还没有人处理，所以暂时没有提交，订单没有变动。"
                     "请稍后再联系我们，我们会尽快为您办理。",
                     f"The refund for order {oid} needs a staff member's approval, and nobody has approved it "
                     "yet, so it has not been submitted and nothing has changed. Please check back a little "
                     "later and we will get it done."),
        )
    return Answer(
        conv.say("请求批准时出了错，退款没有提交，系统没有改动。要如实告诉用户。",
                 "Asking for approval failed, so the refund was not submitted and nothing changed. I tell the "
                 "customer."),
        conv.say(f"抱歉，订单 {oid} 的退款暂时无法提交（审批环节出了问题），订单没有任何变动。请稍后再试，"
                 "或联系人工客服。",
                 f"Sorry, the refund for order {oid} cannot be submitted right now (the approval step failed), "
                 "and nothing about your order has changed. Please try again later or contact a human agent."),
    )


def _verdict_thought(conv: Conversation, order: Order, verdict: Verdict) -> str:
    limits, days = verdict.limits, verdict.days
    rules = conv.say(
        "售后政策：" if limits.from_policy else "按常规售后规则：",
        "The policy says: " if limits.from_policy else "By the usual rules: ",
    )
    if verdict.kind == "not_delivered":
        return conv.say(
            f"订单 {order.order_id} 还没有签收（状态：{order.status}），不涉及退货期限，可以直接申请退款。",
            f"Order {order.order_id} has not been signed for yet (status: {order.status}), so no return window "
            "applies: I can apply for the refund straight away.",
        )
    if verdict.kind == "no_reason":
        return conv.say(
            f"{rules}签收次日起 {limits.no_reason} 天内可无理由退货。现在是签收后第 {days} 天，"
            "还在无理由退货期内，可以提交退款申请。",
            f"{rules}a no-reason return within {limits.no_reason} days of delivery. Today is day {days}, inside "
            "that window, so I can submit the refund.",
        )
    fault = read_fault(conv)
    return conv.say(
        f"{rules}签收次日起 {limits.no_reason} 天内可无理由退货，{limits.quality} 天内出现性能故障可以退货。"
        f"现在是签收后第 {days} 天，过了 {limits.no_reason} 天，但还在 {limits.quality} 天内；"
        f"用户反馈{fault.description if fault else '商品有故障'}，属于质量问题，可以提交退款申请。",
        f"{rules}no-reason returns within {limits.no_reason} days, returns for a fault within {limits.quality} "
        f"days. Today is day {days}: past {limits.no_reason}, still within {limits.quality}, and the customer "
        "reports a fault, which is a quality problem. I can submit the refund.",
    )


def refund_reason(conv: Conversation, order: Order, verdict: Verdict) -> str:
    """The reason written into the refund: the rule that allows it and what the customer said."""
    limits, days, fault = verdict.limits, verdict.days, read_fault(conv)
    if verdict.kind == "not_delivered":
        return conv.say(
            "订单未签收，用户申请取消并退款",
            "Order not delivered yet; the customer asks to cancel it for a refund",
        )
    if verdict.kind == "no_reason":
        return conv.say(
            f"{limits.no_reason} 天无理由退货（签收后第 {days} 天）"
            + (f"；用户反馈：{fault.description}" if fault else ""),
            f"{limits.no_reason}-day no-reason return (day {days} after delivery)"
            + (f"; the customer reports: {fault.description}" if fault else ""),
        )
    return conv.say(
        f"质量问题：{fault.description}（签收后第 {days} 天，在 {limits.quality} 天质量问题退货期内）",
        f'Quality problem reported by the customer: "{fault.description}" (day {days} after delivery, within '
        f"the {limits.quality}-day quality return period)",
    )


def _answer_refunded(conv: Conversation, order: Order, verdict: Verdict, data: object) -> Answer:
    refund_id = pick(data, "refundId", "refund_id", "id")
    message = pick(data, "message", "msg")
    product = (
        f"（{order.product}）"
        if conv.zh and order.product
        else (f" ({order.product})" if order.product else "")
    )
    limits, days = verdict.limits, verdict.days
    if verdict.kind == "no_reason":
        why = conv.say(
            f"目前是签收后第 {days} 天，在 {limits.no_reason} 天无理由退货期内。",
            f"Today is day {days} after delivery, within the {limits.no_reason}-day no-reason return period.",
        )
    elif verdict.kind == "quality":
        fault = read_fault(conv)
        why = conv.say(
            f"您在签收后第 {days} 天反馈{fault.description if fault else '商品故障'}，"
            f"属于 {limits.quality} 天内的质量问题，可以退货退款。",
            f"Day {days} after delivery is past the {limits.no_reason}-day no-reason window but within the "
            f"{limits.quality}-day window for quality problems, and the fault you describe is one.",
        )
    elif order.stage == "unshipped":
        why = conv.say(
            "订单还没有发货，已为您申请取消并退款。",
            "The order has not shipped yet, so it is cancelled and refunded.",
        )
    else:
        why = conv.say(
            "包裹还在运输途中，快递送到时请直接拒收。",
            "The parcel is still on its way: please refuse it when the courier arrives.",
        )
    if pick(data, "duplicate") is True:
        # applyRefund is idempotent: asked again, it returns the refund the order already has and writes
        # nothing. The Thought and the answer must say so, not that a refund was just submitted.
        return Answer(
            conv.say(
                f"这个订单已经有退款申请 {refund_id}，系统没有重复提交，如实告诉用户。",
                f"The order already had refund {refund_id}; the shop did not submit a second one. I tell the "
                "customer so.",
            ),
            conv.say(
                f"您好！订单 {order.order_id}{product}之前已经申请过退款，退款单号：{refund_id}，这次没有重复提交。{why}"
                + (f"系统提示：{sentence(str(message))}。" if message else "")
                + "如有其他问题，随时联系我。",
                f"Order {order.order_id}{product} already has a refund, refund id {refund_id}; nothing was submitted "
                f"twice. {why}" + (f" The system says: {sentence(str(message))}." if message else "")
                + " Let me know if there is anything else.",
            ),
        )
    return Answer(
        conv.say(
            f"退款申请提交成功，系统返回的退款单号是 {refund_id}，可以答复用户了。",
            f"The refund went through and the shop issued refund id {refund_id}. I can answer now.",
        ),
        conv.say(
            f"您好！订单 {order.order_id}{product}的退款申请已经提交，退款单号：{refund_id}。{why}"
            + (f"系统提示：{sentence(str(message))}。" if message else "")
            + "如有其他问题，随时联系我。",
            f"Done: the refund for order {order.order_id}{product} has been submitted, refund id {refund_id}. {why}"
            + (f" The system says: {sentence(str(message))}." if message else "")
            + " Let me know if there is anything else.",
        ),
    )


def _answer_no_refund(conv: Conversation, order: Order, verdict: Verdict) -> Answer:
    limits, days = verdict.limits, verdict.days
    product = order.product or conv.say("商品", "item")
    years, rest = divmod(limits.warranty, 365)
    warranty = conv.say(
        f"{years} 年" if years and not rest else f"{limits.warranty} 天",
        f"{years} year{'s' if years > 1 else ''}" if years and not rest else f"{limits.warranty} days",
    )
    if verdict.kind == "needs_fault":
        return Answer(
            conv.say(
                f"签收后第 {days} 天，过了 {limits.no_reason} 天无理由退货期；用户没有提到质量问题，不能直接退款。",
                f"Day {days}: past the {limits.no_reason}-day no-reason window, and no fault was reported, so no "
                "refund for now.",
            ),
            conv.say(
                f"订单 {order.order_id}（{product}）已签收 {days} 天，超过了 {limits.no_reason} 天无理由退货期，"
                f"暂时不能直接退款。如果商品有质量问题，签收后 {limits.quality} 天内仍可退货或换货，请告诉我具体情况。",
                f"Order {order.order_id} ({product}) was signed for {days} days ago, past the "
                f"{limits.no_reason}-day no-reason return period, so I cannot refund it as it is. If the item "
                f"is faulty, it can still be returned within {limits.quality} days: tell me what is wrong.",
            ),
        )
    fault = read_fault(conv)
    problem = conv.say(fault.description if fault else "非人为故障", "the fault")
    if verdict.kind == "repair":
        return Answer(
            conv.say(
                f"签收后第 {days} 天，已超过 {limits.quality} 天的质量问题退货期，不能退款；"
                f"但还在 {warranty}保修期内，可以免费维修。不调用 applyRefund。",
                f"Day {days}: past the {limits.quality}-day quality return period, so no refund; but still "
                f"within the {warranty} warranty, so a free repair. I will not call the refund tool.",
            ),
            conv.say(
                f"抱歉，订单 {order.order_id}（{product}）于 {order.signed_on} 签收，到今天已经 {days} 天，"
                f"超过了 {limits.quality} 天的质量问题退货期，这次不能直接退款。不过商品整机保修 {warranty}，"
                f"目前还在保修期内，{problem}可以免费维修。需要的话，请联系售后安排维修。",
                f"Sorry: order {order.order_id} ({product}) was signed for on {order.signed_on}, {days} days "
                f"ago, past the {limits.quality}-day period for returning a faulty item, so I cannot refund it. "
                f"It is still under the {warranty} warranty, though, so {problem} can be repaired for free. "
                "Contact after-sales service to arrange the repair.",
            ),
        )
    return Answer(
        conv.say(
            f"签收后第 {days} 天，已超过 {warranty}保修期，不能退款，只能付费维修。",
            f"Day {days}: past the {warranty} warranty. No refund; only a paid repair.",
        ),
        conv.say(
            f"抱歉，订单 {order.order_id}（{product}）已签收 {days} 天，超过了 {warranty}保修期，"
            "不能退款，也不在免费维修范围内；可以联系售后了解付费维修。",
            f"Sorry: order {order.order_id} ({product}) was signed for {days} days ago, beyond the {warranty} "
            "warranty. It cannot be refunded or repaired for free; after-sales service can quote a paid repair.",
        ),
    )


def _answer_eligible(conv: Conversation, order: Order, verdict: Verdict, mode: str) -> Answer:
    """The rules allow a refund, but the customer asked a question (or reported a fault): say so, and ask."""
    limits, days = verdict.limits, verdict.days
    product = order.product or conv.say("商品", "item")
    if verdict.kind == "not_delivered":
        why = conv.say(
            f"订单 {order.order_id}（{product}）还没有签收（状态：{order.status}），可以取消或拒收，全额退款。",
            f"Order {order.order_id} ({product}) has not been delivered yet (status: {order.status}), so it "
            "can be cancelled or refused on delivery for a full refund.",
        )
    elif verdict.kind == "no_reason":
        why = conv.say(
            f"订单 {order.order_id}（{product}）签收 {days} 天，还在 {limits.no_reason} 天无理由退货期内，可以退货退款。",
            f"Order {order.order_id} ({product}) was signed for {days} days ago, within the {limits.no_reason}-day "
            "no-reason return period, so it can be returned for a refund.",
        )
    else:
        fault = read_fault(conv)
        why = conv.say(
            f"订单 {order.order_id}（{product}）签收 {days} 天，过了 {limits.no_reason} 天无理由退货期，但还在 "
            f"{limits.quality} 天质量问题退货期内；{fault.description if fault else '商品故障'}属于质量问题，"
            "经售后检测确认后可以退货退款，也可以换货。",
            f"Order {order.order_id} ({product}) was signed for {days} days ago: past the {limits.no_reason}-day "
            f"no-reason period, but within the {limits.quality}-day period for quality problems, and the fault you "
            "describe is one. After the after-sales check it can be returned for a refund, or exchanged.",
        )
    if mode == "question":
        opening = conv.say("可以。", "Yes. ")
        offer = conv.say(
            "需要我现在为您提交退款申请吗？回复“帮我退款”即可。",
            'Shall I submit the refund now? Just reply "please refund it".',
        )
    else:  # a fault reported, with no request: the customer chooses
        opening = conv.say("抱歉给您添麻烦了。", "Sorry about that. ")
        offer = conv.say(
            "您想退款，还是换货或维修？要退款的话回复“帮我退款”，我马上提交。",
            'Would you like a refund, or an exchange or repair? Reply "please refund it" and I will submit the refund.',
        )
    return Answer(
        conv.say(
            "按政策可以退款。用户没有要求我提交，所以先说明，再问用户要不要退款，不调用 applyRefund。",
            "The policy allows a refund. The customer did not ask me to submit one, so I explain and ask; I do "
            "not call the refund tool yet.",
        ),
        conv.say(f"{opening}{why}{offer}", f"{opening}{why} {offer}"),
    )


def _answer_unclear_fault(conv: Conversation, order: Order, verdict: Verdict) -> Answer:
    """Past the no-reason window, and "something is wrong" but not what: ask, never refuse on a guess."""
    limits, days = verdict.limits, verdict.days
    product = order.product or conv.say("商品", "item")
    return Answer(
        conv.say(
            f"签收后第 {days} 天，过了 {limits.no_reason} 天无理由退货期；用户说有问题，但我判断不了是不是质量故障。"
            "不能猜：先问清楚，不退款也不拒绝。",
            f"Day {days}: past the {limits.no_reason}-day no-reason window. The customer says something is wrong, "
            "but I cannot tell whether it is a fault. I will not guess: I ask, and neither refund nor refuse.",
        ),
        conv.say(
            f"订单 {order.order_id}（{product}）已签收 {days} 天，过了 {limits.no_reason} 天无理由退货期；"
            f"如果是质量问题，{limits.quality} 天内仍可以退货。我没能判断您说的问题是不是质量故障，"
            "能具体说说是什么情况吗？比如不回充、充不进电、开不了机、有异响。",
            f"Order {order.order_id} ({product}) was signed for {days} days ago, past the {limits.no_reason}-day "
            f"no-reason return period; a faulty item can still be returned within {limits.quality} days. I could "
            "not tell from your message whether this is a fault: what exactly is wrong? For example, it won't "
            "charge, won't dock, won't turn on, or makes a noise.",
        ),
    )


def _answer_warranty(conv: Conversation, order: Order, verdict: Verdict | None) -> Answer:
    """Is the order under warranty? The days since signing against the warranty the policy states."""
    product = order.product or conv.say("商品", "item")
    if verdict is None:  # not delivered yet: the warranty has not started
        return Answer(
            conv.say("订单还没签收，保修期还没开始。", "Not delivered yet, so the warranty has not started."),
            conv.say(
                f"订单 {order.order_id}（{product}）还没有签收（状态：{order.status}），保修期从签收次日起计算，目前还没开始。",
                f"Order {order.order_id} ({product}) has not been delivered yet (status: {order.status}); the "
                "warranty starts the day after delivery, so it has not started yet.",
            ),
        )
    limits, days = verdict.limits, verdict.days
    left = limits.warranty - days
    if left >= 0:
        return Answer(
            conv.say(
                f"签收后第 {days} 天，保修 {limits.warranty} 天，还剩 {left} 天。",
                f"Day {days} of a {limits.warranty}-day warranty: {left} days left.",
            ),
            conv.say(
                f"在保修期内：订单 {order.order_id}（{product}）于 {order.signed_on} 签收，到今天 {days} 天，"
                f"整机保修 {limits.warranty} 天，还剩 {left} 天。保修期内的非人为故障可以免费维修。",
                f"Yes, it is under warranty: order {order.order_id} ({product}) was signed for on {order.signed_on}, "
                f"{days} days ago, and the warranty lasts {limits.warranty} days, so {left} days are left. "
                "Faults not caused by damage are repaired free of charge.",
            ),
        )
    return Answer(
        conv.say(
            f"签收后第 {days} 天，超过了 {limits.warranty} 天保修期。",
            f"Day {days}: past the {limits.warranty}-day warranty.",
        ),
        conv.say(
            f"订单 {order.order_id}（{product}）于 {order.signed_on} 签收，已经 {days} 天，超过了 {limits.warranty} 天保修期，"
            "可以联系售后了解付费维修。",
            f"Order {order.order_id} ({product}) was signed for on {order.signed_on}, {days} days ago, beyond the "
            f"{limits.warranty}-day warranty. After-sales service can quote a paid repair.",
        ),
    )


def _answer_cancelled(conv: Conversation, order: Order) -> Answer:
    return Answer(
        conv.say(
            f"订单 {order.order_id} 的状态是{order.status}，已取消的订单不能再申请退款，要如实说明。",
            f"Order {order.order_id} is {order.status}: a cancelled order cannot be refunded again.",
        ),
        conv.say(
            f"订单 {order.order_id}（{order.product}）已经取消（状态：{order.status}），无法再申请退款。"
            "如果付过的款项还没有退回，请联系人工客服核实。",
            f"Order {order.order_id} ({order.product}) has been cancelled (status: {order.status}), so there "
            "is nothing to refund. If a payment has not come back to you, please contact a human agent.",
        ),
    )


def answer_order_error(conv: Conversation, order_id: str, error: str) -> Answer:
    """queryOrder said no (unknown order, usually): apologise, quote it, and never make anything up."""
    return Answer(
        conv.say(
            f"查询订单 {order_id} 返回错误：{error}。查不到订单，不能编造信息，请用户核对订单号。",
            f"Looking up order {order_id} failed: {error}. Without the order I must not make anything up; "
            "I will ask the customer to check the number.",
        ),
        conv.say(
            f"抱歉，没有查到订单 {order_id}（系统返回：{error}）。请核对一下订单号是否正确，"
            "可以在“我的订单”里找到，确认后我再帮您处理。",
            f"Sorry, I could not find order {order_id} (the system said: {error}). Please check the order "
            "number, which you can find under 'My orders', and I will look again.",
        ),
    )


# --- what a model writes when it imagines the results --------------------------------------------------


def plan_hasty_refund(conv: Conversation, order_id: str) -> Act | Answer:
    """Lesson 04: no stop sequence, so the model writes its own Observations and skips every check.

    Once it has (imagined) an order, it goes straight to applyRefund; once it has (imagined) a refund id,
    it promises that refund to the customer. No date, no policy.
    """
    refund = conv.result("refund", order_id)
    if conv.result("order", order_id) is None or (refund is None and conv.tool_for("refund") is None):
        return plan_refund(conv, order_id)
    if refund is None:
        fault = read_fault(conv)
        return act(
            conv,
            conv.say(
                f"订单 {order_id} 已经查到，状态正常，可以直接为用户申请退款。",
                f"Order {order_id} is there and looks fine, so I can submit the refund right away.",
            ),
            [
                call(
                    conv,
                    "refund",
                    orderId=order_id,
                    reason=conv.say(
                        f"用户申请退款：{fault.description}" if fault else "用户主动申请退款",
                        f"Customer asked for a refund: {fault.description}"
                        if fault
                        else "Customer asked for a refund",
                    ),
                )
            ],
        )
    refund_id = pick(refund.data, "refundId")
    return Answer(
        conv.say("退款已经提交成功，可以回复用户了。", "The refund is submitted, so I can answer."),
        conv.say(
            f"您好，订单 {order_id} 的退款已提交，退款单号 {refund_id}，预计 1-3 个工作日到账。",
            f"Good news: the refund for order {order_id} has been submitted, refund id {refund_id}; the money "
            "should be back within 1-3 working days.",
        ),
    )
