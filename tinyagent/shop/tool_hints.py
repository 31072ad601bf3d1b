"""What the shop's tool descriptions do not say, for lesson 13's tool filter (tool_filter.py).

The descriptions are written for a model that already has the tool in front of it ("Look up an order and
its trackingNo"); a customer says "where is my parcel?" or "我想退货". The hints list those words, in
English and Chinese, and which tools a task needs beside the one it names:

- a refund is decided on the order's signing date, today's date and the policy, so applyRefund brings
  queryOrder, getCurrentTime and searchKnowledge;
- a parcel is tracked by the number queryOrder gives, so queryLogistics brings queryOrder;
- the days of warranty left are counted from today, so warranty words also point at getCurrentTime, and a
  fault ("it won't charge") may become a refund, so fault words point at applyRefund.
"""

from __future__ import annotations

from types import MappingProxyType

from tinyagent.memory.tool_filter import ToolHint

_REFUND_WORDS = (
    "refund", "return", "money back", "send it back", "take back", "cancel",
    "退", "退款", "退货", "退钱", "取消",
)
_FAULT_WORDS = (
    "broken", "faulty", "defective", "stopped working", "doesn't work", "won't", "not working", "dead",
    "noise", "leak", "charge", "dock",
    "坏", "故障", "不工作", "没反应", "开不了", "充不进", "不回充", "异响", "漏水", "死机", "质量问题",
)
_WARRANTY_WORDS = ("warranty", "guarantee", "repair", "保修", "质保", "过保", "维修")

SHOP_TOOL_HINTS = MappingProxyType({
    "queryOrder": ToolHint(words=(
        "order", "bought", "purchase", "status", "details", "订单", "买的", "下单", "状态", "详情",
    )),
    "queryLogistics": ToolHint(
        words=(
            "parcel", "package", "delivery", "deliver", "shipped", "ship", "track", "arrive", "courier",
            "where is", "where's", "快递", "物流", "包裹", "到哪", "发货", "运单", "送到", "到了吗",
        ),
        needs=("queryOrder",),
    ),
    "applyRefund": ToolHint(
        words=_REFUND_WORDS + _FAULT_WORDS,
        needs=("queryOrder", "getCurrentTime", "searchKnowledge"),
    ),
    "searchKnowledge": ToolHint(words=(
        "policy", "policies", "rule", "exchange", "invoice", "shipping fee", "free shipping", "how long",
        "how many days", *_WARRANTY_WORDS,
        "政策", "规则", "换货", "发票", "包邮", "运费", "到账", "多久", "几天",
    )),
    "getCurrentTime": ToolHint(words=(
        "time", "date", "today", "what day", "weekday", "day of the week", *_WARRANTY_WORDS,
        "几点", "几号", "星期", "今天", "时间", "日期",
    )),
})
