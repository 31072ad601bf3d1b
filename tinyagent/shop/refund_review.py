"""What a person sees before approving a refund (lesson 15's confirmation gate, confirmation.py).

The model's Action Input is `{"orderId":"88231","reason":"..."}`: enough for the tool, too little for a
person who must decide whether money goes out. `describe_refund(shop)` looks the order up and says it in
words: the amount, the product, where the order is, and the reason the model wrote. `refund_gate(shop)` is
a `ConfirmationGate` for applyRefund that shows that summary (for the shop's own applyRefund only: over MCP, the one
of the server named `server`, under any name lesson 24's registry gives it).

The summary only reads the shop; what the refund really does is still up to `applyRefund` (which checks
the order again when it runs). The input is read as applyRefund reads it (`read_refund_input`): one the tool
would refuse is shown as it is, with why, so the person is never asked about a refund that cannot happen; so is
an order the shop will not refund (cancelled, unpaid, already refunded or returned), and one that already has a
refund, which the tool only returns (nothing new is paid): both read by `Shop.refund_outcome`, the rule
applyRefund itself follows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tinyagent.memory.run_changes import shortened
from tinyagent.prompts import check_language, detect_language
from tinyagent.registry import input_text
from tinyagent.shop.database import Shop
from tinyagent.shop.tools import BadInput, read_refund_input
from tinyagent.toolkit.confirmation import ConfirmationGate
from tinyagent.tools import Action

# The summary in the run's language, so a Chinese trace (and the approval panel) reads in one language.
SUMMARIES = {
    "en": {"refused": "applyRefund with an input the tool will refuse ({why}): {text}",
           "unknown": "refund order {order_id}, which the shop does not have; reason: {reason}",
           "refunded": "order {order_id} ({product}) already has refund {refund_id} of ¥{amount}: applyRefund will "
                       "only return it, nothing new is paid; reason: {reason}",
           "not_allowed": "applyRefund will refuse order {order_id} ({product}, ¥{price}): its status {status} cannot "
                          "be refunded, nothing is paid; reason: {reason}",
           "refund": "refund ¥{price} for order {order_id} ({product}, ordered {ordered}, {status}); reason: {reason}"},
    "zh": {"refused": "applyRefund 的输入会被工具拒绝（{why}）：{text}",
           "unknown": "为订单 {order_id} 退款，但店里没有这个订单；原因：{reason}",
           "refunded": "订单 {order_id}（{product}）已有退款 {refund_id}（¥{amount}）：applyRefund 只会返回这笔退款，"
                       "不会再付款；原因：{reason}",
           "not_allowed": "applyRefund 会拒绝订单 {order_id}（{product}，¥{price}）：状态“{status}”不能退款，不会付款；"
                          "原因：{reason}",
           "refund": "退款 ¥{price}，订单 {order_id}（{product}，{ordered} 下单，{status}）；原因：{reason}"},
}


def describe_refund(shop: Shop, lang: str | None = None) -> Callable[[str], str]:
    """A `describe` function for applyRefund: its input text (or a native call's JSON value) -> one line a person
    can judge, in `lang`
    (default: the language of the input, which the model writes in the customer's language)."""

    def summary(text: str) -> str:
        # A native call's arguments (a dict) as the JSON text applyRefund will be handed (registry.py's input_text).
        text = input_text(Action("applyRefund", text))
        said = SUMMARIES[check_language(lang) if lang else detect_language(text)]
        try:
            order_id, reason = read_refund_input(text)
        except BadInput as exc:
            shown = shortened(text, 200).encode("utf-8", "backslashreplace").decode("utf-8")  # a lone surrogate as \ud800
            return said["refused"].format(why=exc, text=shown)
        # The reason whole (the tool takes no longer one): the person approves what the refund will keep.
        outcome, found = shop.refund_outcome(order_id)  # what applyRefund will do, by the shop's own rule
        if outcome == "existing":
            order = shop.get_order(order_id)
            return said["refunded"].format(order_id=order_id, product=order["product"] if order else "?",
                                           refund_id=found["refundId"], amount=found["amount"], reason=reason)
        if outcome == "unknown":
            return said["unknown"].format(order_id=order_id, reason=reason)
        order = found
        if outcome == "not_allowed":
            return said["not_allowed"].format(order_id=order_id, product=order["product"], price=order["price"],
                                              status=order["status"], reason=reason)
        return said["refund"].format(price=order["price"], order_id=order_id, product=order["product"],
                                     ordered=order["orderTime"], status=order["status"], reason=reason)

    return summary


def refund_gate(shop: Shop, lang: str | None = None, *, server: str | None = None, **options: Any
                ) -> ConfirmationGate:
    """A gate on applyRefund that shows `describe_refund`'s summary (in `lang`, default the input's language);
    `options` go to ConfirmationGate (`ask=...`, `timeout_s=...`).

    The summary is the shop's word for the shop's applyRefund, and for no other tool: the registry's own applyRefund
    (`shop_registry`), and, when the shop's tools come over MCP (lesson 24), the one of the server whose connection is
    named `server` (`McpConnection(..., name="shop")`), under whatever name the registry gives it: applyRefund, or
    shop_applyRefund when another server offers an applyRefund too. Another server's applyRefund, which refunds nothing
    in this shop, is asked about as the call it is (confirmation.py's `tool_key`)."""
    summary = describe_refund(shop, lang)
    describe = {"applyRefund": summary, **({(server, "applyRefund"): summary} if server is not None else {})}
    return ConfirmationGate(("applyRefund",), describe=describe, **options)
