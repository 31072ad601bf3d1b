"""Which scenario a request belongs to: a few keyword lists, read in a fixed order.

A real model understands the request; this one looks for words. The order of the checks is the whole
trick: a request with an order number and "退" is a refund, the same words without a number are a
question about the rules, and "帮我写一首诗" matches nothing and is politely declined.
"""

from __future__ import annotations

import re

from .conversation import Conversation

# One line per list reads better than one line per word, so the formatter leaves these alone.
# fmt: off
REFUND_WORDS = ("退款", "退货", "退钱", "想退", "要退", "退掉", "refund", "money back", "return it", "send it back")
LOGISTICS_WORDS = ("快递", "物流", "到哪", "发货", "送到", "运单", "配送", "包裹", "where is", "where's", "track",
                   "deliver", "shipping", "shipped", "parcel", "package", "arrive")
STATUS_WORDS = ("状态", "订单", "status", "order")
TIME_WORDS = ("几点", "时间", "几号", "日期", "星期几", "礼拜几", "what time", "the time", "what day", "the date",
              "today's date")
POLICY_WORDS = ("政策", "规则", "无理由", "保修", "质保", "售后", "换货", "到账", "运费", "包邮", "发票", "policy",
                "warranty", "guarantee", "exchange", "invoice", "return", "cancel", "shipping fee")
# Words that turn a refund or parcel question without an order number into a question about the rules.
RULE_QUESTION_WORDS = ("怎么", "如何", "多久", "多长", "多少", "几天", "政策", "规则", "无理由", "运费", "包邮",
                       "how", "what", "when", "policy", "fee", "cost")
WEATHER_WORDS = ("天气", "带伞", "下雨", "weather", "umbrella", "rain")
WRITE_WORDS = ("写入", "写到", "写进", "保存", "存到", "write", "save", "put")
IDENTITY_WORDS = ("你是谁", "你叫什么", "什么模型", "哪个模型", "who are you", "what are you", "your name",
                  "which model", "what model")
GREETINGS_ZH = ("你好", "您好", "嗨", "哈喽", "在吗")
CITIES = ("北京", "上海", "广州", "深圳", "杭州", "成都", "南京", "武汉", "西安", "重庆", "天津", "苏州",
          "Beijing", "Shanghai", "Guangzhou", "Shenzhen", "Hangzhou", "London", "Paris", "Tokyo", "New York")
# fmt: on
GREETING_EN = re.compile(r"^\s*(hello|hi|hey|good (morning|afternoon|evening))\b", re.IGNORECASE)
FILE_NAME = re.compile(r"[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.(?:txt|md|csv|json|log)\b")


def has_any(text: str, words: tuple[str, ...]) -> bool:
    low = text.lower()
    return any(word in low for word in words)


def detect_intent(conv: Conversation) -> str:
    """Which scenario the request belongs to (the table is in scenarios.py)."""
    text = conv.request
    ids_here = [i for i in conv.order_ids if i in text]  # not the ones remembered from earlier turns
    if FILE_NAME.search(text) and has_any(text, WRITE_WORDS):
        return "write_file"
    if has_any(text, WEATHER_WORDS):
        return "weather"
    if "react" in text.lower():
        return "about_react"
    if has_any(text, REFUND_WORDS):
        if conv.order_ids:
            return "refund"
        return "policy" if has_any(text, RULE_QUESTION_WORDS) else "need_order_id"
    if has_any(text, LOGISTICS_WORDS):
        if conv.order_ids or conv.tracking_numbers:
            return "logistics"
        return "policy" if has_any(text, RULE_QUESTION_WORDS) else "need_order_id"
    if conv.tracking_numbers and not ids_here:
        return "logistics"
    if ids_here or (conv.order_ids and has_any(text, STATUS_WORDS)):
        return "order_status"
    if has_any(text, TIME_WORDS):
        return "time"
    if has_any(text, POLICY_WORDS):
        return "policy"
    if has_any(text, IDENTITY_WORDS):
        return "identity"
    if text.strip().startswith(GREETINGS_ZH) or GREETING_EN.match(text):
        return "greeting"
    return "decline"
