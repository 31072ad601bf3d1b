"""Lesson 12: the classroom model asked to summarize a conversation, so a session can forget the turns.

A session's `SummaryMemory` (tinyagent/memory/session_memory.py) sends a request with no tools: a system message
that asks to "Summarize the conversation below" (or 总结下面的对话), and a user message holding the previous
summary, if any, and the turns to fold in, one line per message ("Customer: ...", "Assistant: ...";
"顾客：", "客服："; "User:" and "用户：" work too). A real model writes prose; this one writes the facts a
later turn needs, one labelled line each, in the instruction's language, and nothing it did not read:

    Orders: 88231                                   every order id mentioned, first mention first
    Tracking numbers: SF1234567890                  every tracking number
    Refunds: RF202606300001                         every refund id
    Faults reported: The vacuum won't charge        each fault the customer described (vocabulary.py)
    Cities: Hangzhou                                each city the customer named
    Asked about: their order; where the parcel is   what each customer message asked for (intents.py)

The previous summary's lines are read back and kept, so a summary of a summary loses nothing. Later turns
read the summary as a note (conversation.py): an order id or a fault in it serves a follow-up such as
"then refund it" exactly as the same words in an earlier user message would.
"""

from __future__ import annotations

import re

from tinyagent.classroom.conversation import ORDER_ID, TRACKING_NO, Conversation, message_text
from tinyagent.classroom.intents import detect_intent, fault_clause
from tinyagent.classroom.refund import product_word
from tinyagent.classroom.vocabulary import CITIES
from tinyagent.prompts import detect_language

# Each English wording holds "summar"; each Chinese one "对话" or "聊天" (_SUMMARY_WORDS).
ASKS_FOR_SUMMARY = re.compile(r"summari[sz]e (the|this|our) (conversation|chat|dialogue)|write a summary of the (conversation|chat)"
         r"|(总结|概括)(一下)?(下面|以下|这段|上面)?的?(对话|聊天)|对话(的)?摘要", re.IGNORECASE)
SPEAKER = re.compile(r"^\s*(customer|user|顾客|用户|客户|assistant|agent|客服|助手)\s*[:：]\s*(.*)$", re.IGNORECASE)
REFUND_ID = re.compile(r"(?<![A-Za-z0-9])RF\d{12}(?!\d)")
_SUMMARY_WORDS = ("summar", "对话", "聊天")


_CUSTOMER = ("customer", "user", "顾客", "用户", "客户")

# (field, English label, Chinese label): the summary's lines, in this order.
FIELDS = (
    ("orders", "Orders", "订单"),
    ("tracking", "Tracking numbers", "运单号"),
    ("refunds", "Refunds", "退款单号"),
    ("faults", "Faults reported", "反映的故障"),
    ("cities", "Cities", "城市"),
    ("asked", "Asked about", "问过"),
)
# What a customer message asked for, by the intent the classroom model reads in it (intents.py).
ASKED = {
    "refund": ("退款", "a refund"),
    "return_question": ("能否退货", "whether it can be returned"),
    "fault_report": ("故障", "a fault"),
    "warranty": ("保修", "the warranty"),
    "refund_timing": ("退款到账时间", "when a refund arrives"),
    "logistics": ("物流", "where the parcel is"),
    "order_status": ("订单", "their order"),
    "policy": ("售后政策", "the after-sales policy"),
    "time": ("日期", "the date"),
    "need_order_id": ("售后", "after-sales help"),
}


def summary_request(request: dict) -> tuple[str, str] | None:
    """(instruction, text to summarize) when the request's first system message asks for a summary; else None."""
    messages = request.get("messages") if isinstance(request, dict) else None
    if not isinstance(messages, list) or not messages or not isinstance(messages[0], dict):
        return None
    first = messages[0]
    if first.get("role") not in ("system", "developer") or request.get("tools"):
        return None
    instruction = message_text(first)
    low = instruction.lower()
    if not any(word in low for word in _SUMMARY_WORDS) or not ASKS_FOR_SUMMARY.search(instruction):
        return None
    text = "\n".join(message_text(m) for m in messages[1:] if isinstance(m, dict) and m.get("role") == "user")
    return instruction, text


def write_summary(instruction: str, text: str) -> str:
    """The summary of `text` (a previous summary and the turns), in the language of `instruction`."""
    zh = detect_language(instruction) == "zh"
    found: dict[str, list[str]] = {key: [] for key, _, _ in FIELDS}
    customer_lines: list[str] = []
    for line in text.splitlines():
        speaker = SPEAKER.match(line)
        if speaker is None:
            _read_back(line, found)  # a line of the previous summary (or a header): keep what it holds
        elif speaker.group(1).lower() in _CUSTOMER:
            customer_lines.append(speaker.group(2))
    for key, pattern in (("orders", ORDER_ID), ("tracking", TRACKING_NO), ("refunds", REFUND_ID)):
        for match in pattern.findall(text):
            _add(found[key], match.upper())
    earlier: list[str] = []
    for line in customer_lines:
        clause = fault_clause(line)
        if clause:
            # The customer's own words in English ("The vacuum won't charge any more"): a refund quotes them.
            _add(found["faults"], (product_word(line, "zh") or "") + clause[1] if zh else clause[1])
        for city in CITIES:
            if city.lower() in line.lower():
                _add(found["cities"], city)
        # Read as the model read it then: with the messages before it, and the whole text as a note (so
        # "where is it?" after an order id is a parcel question, not a request for the order number).
        conv = Conversation(request=line, lang="zh" if zh else "en", earlier=tuple(reversed(earlier)), notes=(text,))
        asked = ASKED.get(detect_intent(conv))
        if asked:
            _add(found["asked"], asked[0] if zh else asked[1])
        earlier.append(line)
    separator = "；" if zh else "; "
    lines = [
        f"{zh_label if zh else en_label}{'：' if zh else ': '}{separator.join(found[key])}"
        for key, en_label, zh_label in FIELDS
        if found[key]
    ]
    if not lines:
        return "（对话里没有需要记住的订单、故障或请求。）" if zh else "(Nothing to keep: no order, fault or request.)"
    return "\n".join(lines)


def _read_back(line: str, found: dict[str, list[str]]) -> None:
    """A labelled line of a previous summary ("Orders: 88231"): its values join the new summary's."""
    for key, en_label, zh_label in FIELDS:
        for label in (en_label, zh_label):
            match = re.match(rf"\s*{re.escape(label)}\s*[:：]\s*(.+)$", line)
            if match:
                for value in re.split(r"[;；]", match.group(1)):
                    _add(found[key], value.strip())
                return


def _add(values: list[str], value: str) -> None:
    if value and value not in values:
        values.append(value)
