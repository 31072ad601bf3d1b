"""Which scenario a request belongs to: what the customer said (`Heard`), then a short table of rules.

A real model understands the request; this one looks for the words listed in vocabulary.py and reads
the first rule of `RULES` that applies. The order of the rules is the whole trick: an order number and
a refund word ("退款", "想退", ...: vocabulary.REFUND) make a refund, the same words without a number ask
for the number ("怎么退货", a question, is about the rules), "can I return it?" is a question and not an
order to refund, and "帮我写一首诗" matches nothing and is politely declined.

To teach the model a new phrase, add it to its list in vocabulary.py. To teach it a new kind of request,
add a field to `Heard`, a row to `RULES` and a planner to scenarios.PLANNERS.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from tinyagent.classroom import vocabulary as v
from tinyagent.classroom.conversation import Conversation


def has_any(text: str, words: tuple[str, ...]) -> bool:
    low = text.lower()
    return any(word in low for word in words)


FILE_NAME = re.compile(r"[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.(?:txt|md|csv|json|log)\b")
# ASCII only: Chinese characters are word characters too, and "读一下notes/a.txt" must give notes/a.txt.
PATH = re.compile(r"(?<![A-Za-z0-9_./~-])(?:\.{1,2}/|~/|/)?(?:[A-Za-z0-9_.-]+/)*[A-Za-z0-9_.-]+/?")
# A run of digits, operators and brackets with an operator between two numbers somewhere in it.
EXPRESSION = re.compile(r"(?<![A-Za-z0-9.,])[-+(\d][\d\s.+\-*/×÷^%()]*")


def file_name_in(text: str) -> str | None:
    """The first file name (notes.txt, data/out.csv) in the text, or None."""
    if "." not in text:
        return None
    match = FILE_NAME.search(text)
    return match.group() if match else None


def path_in(text: str) -> str | None:
    """The first path in the text: one with a "/" (../../etc/passwd, notes/todo.txt) or a file name with
    an extension (notes.txt); None when there is none. Order ids and prices are not paths."""
    if "/" not in text and "." not in text:  # neither kind can be there
        return None
    for match in PATH.finditer(text):
        candidate = match.group().rstrip(".")
        if "/" in candidate and any(c.isalpha() for c in candidate):
            return candidate
        if file_name_in(candidate) == candidate:
            return candidate
    return None


_OPERATOR_WORDS = (("乘以", "*"), ("除以", "/"), ("加上", "+"), ("减去", "-"), ("的平方", "**2"))


def expression_in(text: str) -> str | None:
    """The arithmetic in a request ("(1999 - 200) * 0.85", "1999 乘以 0.85" -> "1999 * 0.85"), or None."""
    text = unicodedata.normalize("NFKC", text)
    for word, symbol in _OPERATOR_WORDS:
        text = text.replace(word, f" {symbol} ")
    if not any(operator in text for operator in "+-*/×÷^%"):  # no arithmetic without an operator
        return None
    if "," in text:
        text = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", text)  # 1,999 is 1999
    best = None
    for match in EXPRESSION.finditer(text):
        candidate = " ".join(match.group().split()).rstrip("+-*/×÷^%( ")
        candidate = candidate.lstrip(")")
        if re.search(r"\d\s*(?:\*\*|[-+*/×÷^%])\s*[-+(]*\s*\d", candidate) and (
            best is None or len(candidate) > len(best)
        ):
            best = candidate
    if best is None:
        return None
    while best.count("(") > best.count(")") and best.startswith("("):  # "(1+2" from "what is (1+2)?" cut short
        best = best[1:].lstrip()
    while best.count(")") > best.count("(") and best.endswith(")"):
        best = best[:-1].rstrip()
    return best


def is_greeting(text: str) -> bool:
    """你好 / Hello / hi there / Good morning: a request that starts with a greeting."""
    text = text.strip()
    if text.startswith(v.GREETINGS_ZH):
        return True
    low = text.lower()
    return any(low.startswith(word) and not low[len(word) : len(word) + 1].isalpha() for word in v.GREETINGS_EN)


@dataclass(frozen=True)
class Heard:
    """What the request says, as yes/no facts the rules combine."""

    order_ids: bool  # an order id in the request, or in an earlier request of the conversation
    order_ids_here: bool  # an order id in this request
    tracking_numbers: bool
    refund: bool
    asks_whether: bool  # "can I ...?", "能退吗": a question, not a request to act
    refund_timing: bool
    warranty: bool
    fault: bool  # a fault the vocabulary recognises ("won't charge", "不回充")
    vague_problem: bool  # something is wrong, but not what ("有问题", "acting up")
    logistics: bool
    status: bool
    time: bool
    policy: bool
    rule_question: bool
    weather: bool
    meeting: bool  # lesson 21: a meeting in the calendar
    writes_file: bool
    reads_file: bool  # lesson 15: a path and a word for reading it
    lists_files: bool
    calculation: bool  # an arithmetic expression, and a word that asks for its value
    about_react: bool
    identity: bool
    thanks: bool
    greeting: bool
    shop_topic: bool


def hear(conv: Conversation) -> Heard:
    text = conv.request
    return Heard(
        order_ids=bool(conv.order_ids),
        order_ids_here=any(i in text for i in conv.order_ids),
        tracking_numbers=bool(conv.tracking_numbers),
        refund=v.REFUND.found_in(text) or _return_with_id(text, conv.order_ids),
        asks_whether=v.ASKS_WHETHER.found_in(text) and not v.ASKS_FOR_ACTION.found_in(text),
        refund_timing=v.REFUND_TIMING.found_in(text),
        warranty=v.WARRANTY.found_in(text),
        fault=has_fault(text),
        vague_problem=v.VAGUE_PROBLEM.found_in(text),
        logistics=v.LOGISTICS.found_in(text),
        status=v.STATUS.found_in(text),
        time=v.TIME.found_in(text),
        policy=v.POLICY.found_in(text),
        rule_question=v.RULE_QUESTION.found_in(text),
        weather=v.WEATHER.found_in(text),
        meeting=v.MEETING.found_in(text),
        writes_file=file_name_in(text) is not None and v.WRITE.found_in(text),
        reads_file=path_in(text) is not None and v.READ.found_in(text),
        lists_files=v.LIST_FILES.found_in(text),
        calculation=expression_in(text) is not None and (
            v.CALCULATE.found_in(text) or "".join(text.split()).endswith(("=", "=?", "=？"))),
        about_react="react" in text.lower(),
        identity=v.IDENTITY.found_in(text),
        thanks=v.THANKS.found_in(text),
        greeting=is_greeting(text),
        shop_topic=v.SHOP_TOPIC.found_in(text),
    )


def _return_with_id(text: str, order_ids: list[str]) -> bool:
    """ "return 88231", "return #88231": the verb right before the order id."""
    low = text.lower()
    return any(f"return {i}" in low or f"return #{i}" in low for i in order_ids)


def has_fault(text: str) -> bool:
    """True when the text describes a fault the vocabulary knows (see refund.read_fault for which one)."""
    return fault_clause(text) is not None


def fault_clause(text: str) -> tuple[str, str] | None:
    """(keyword, clause) of the first fault the text describes, or None. Chinese: (keyword, phrase)."""
    for keyword, phrase in v.FAULT_SYMPTOMS_ZH:
        if keyword in text:
            return keyword, phrase
    if v.DOCK_WORDS.found_in(text) and any(n in text for n in v.NEGATIONS.zh):
        for clause in _clauses(text, commas=True):
            if v.DOCK_WORDS.found_in(clause) and any(n in clause for n in v.NEGATIONS.zh):
                return v.DOCK_WORDS.first_in(clause), "回不了充电座"
    for clause in _clauses(text):
        keyword = v.FAULT_SYMPTOMS_EN.first_in(clause)
        padded = f" {clause.lower()} "
        if keyword is None and v.DOCK_WORDS.found_in(clause) and any(n in padded for n in v.NEGATIONS.en):
            keyword = v.DOCK_WORDS.first_in(clause)
        if keyword:
            return keyword, clause.strip()
    return None


def _clauses(text: str, commas: bool = False) -> list[str]:
    """The text cut at sentence ends ("...", ".", "!", "?", ";" and their Chinese forms), and at commas if asked.

    An English fault is quoted whole in the refund reason, so English keeps its commas.
    """
    for mark in ("...", "…", "!", "?", ";", "。", "！", "？", "；", *(("，", ",") if commas else ())):
        text = text.replace(mark, ".")
    return [clause for clause in text.split(".") if clause.strip()]


# The rules, first match wins: (intent, when it applies). scenarios.PLANNERS has a planner per intent.
RULES: tuple[tuple[str, Callable[[Heard], bool]], ...] = (
    ("write_file", lambda h: h.writes_file),
    ("read_file", lambda h: h.reads_file),
    ("list_files", lambda h: h.lists_files),
    # lesson 21's closed loop: the weather during a meeting (and a reminder to send)
    ("reminder", lambda h: h.weather and h.meeting),
    ("weather", lambda h: h.weather),
    ("about_react", lambda h: h.about_react),
    # when the refund money arrives: the policy answers it, whether or not an order id is given
    ("refund_timing", lambda h: h.refund_timing),
    ("warranty", lambda h: h.warranty and h.order_ids_here),
    # "can I return 88231?" is answered; "I want to return 88231" is acted on
    ("return_question", lambda h: h.refund and h.order_ids and h.asks_whether),
    ("refund", lambda h: h.refund and h.order_ids),
    # a fault (or a vague problem) and an order, but no request: say what the rules allow, then ask
    ("fault_report", lambda h: (h.fault or h.vague_problem) and h.order_ids_here),
    ("policy", lambda h: (h.refund or h.fault) and h.rule_question),
    ("need_order_id", lambda h: h.refund or h.fault),
    ("logistics", lambda h: h.logistics and (h.order_ids or h.tracking_numbers)),
    ("policy", lambda h: h.logistics and h.rule_question),
    ("need_order_id", lambda h: h.logistics),
    ("logistics", lambda h: h.tracking_numbers and not h.order_ids_here),
    # arithmetic after the refund and logistics rules: "快递 SF1234567890 要 2+3 天才到，帮我算一下" asks for a sum,
    # but it is about the parcel
    ("calculate", lambda h: h.calculation and not h.order_ids_here),
    ("order_status", lambda h: h.order_ids_here or (h.order_ids and h.status)),
    ("time", lambda h: h.time),
    ("policy", lambda h: h.policy),
    ("identity", lambda h: h.identity),
    ("thanks", lambda h: h.thanks),
    ("greeting", lambda h: h.greeting),
    # about the shop, but not something the rules above recognise: ask, do not guess
    ("clarify", lambda h: h.shop_topic),
)


def detect_intent(conv: Conversation) -> str:
    """Which scenario the request belongs to (the first rule of RULES that applies; else "decline")."""
    heard = hear(conv)
    return next((intent for intent, applies in RULES if applies(heard)), "decline")
