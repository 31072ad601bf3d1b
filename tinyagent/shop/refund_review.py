"""What a person sees before approving a refund (lesson 15's confirmation gate, confirmation.py).

The model's Action Input is `{"orderId":"88231","reason":"..."}`: enough for the tool, too little for a
person who must decide whether money goes out. `describe_refund(shop)` looks the order up and says it in
words: the amount, the product, where the order is, and the reason the model wrote. `refund_gate(shop)` is
a `ConfirmationGate` for applyRefund that shows that summary.

The summary only reads the shop; what the refund really does is still up to `applyRefund` (which checks
the order again when it runs). An input the summary cannot read is shown as it is, so the person can
decline it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..confirmation import ConfirmationGate
from .database import Shop
from .tools import ORDER_ID, BadInput, _unwrap_json, read_one_id


def describe_refund(shop: Shop) -> Callable[[str], str]:
    """A `describe` function for applyRefund: its input text -> one line a person can judge."""

    def summary(text: str) -> str:
        try:
            payload = json.loads(_unwrap_json(text))
        except ValueError:
            payload = None
        if not isinstance(payload, dict):
            return f"applyRefund with an input it cannot read: {text[:200]}"
        reason = str(payload.get("reason") or "(no reason given)")[:200]
        try:
            order_id = read_one_id(str(payload.get("orderId", "")), ORDER_ID)
        except BadInput:
            return f"applyRefund without a readable order id: {text[:200]}"
        order = shop.get_order(order_id)
        if order is None:
            return f"refund order {order_id}, which the shop does not have; reason: {reason}"
        return (f"refund ¥{order['price']} for order {order_id} ({order['product']}, ordered {order['orderTime']}, "
                f"{order['status']}); reason: {reason}")

    return summary


def refund_gate(shop: Shop, **options: Any) -> ConfirmationGate:
    """A gate on applyRefund that shows `describe_refund`'s summary; `options` go to ConfirmationGate
    (`ask=...`, `timeout_s=...`)."""
    return ConfirmationGate(("applyRefund",), describe={"applyRefund": describe_refund(shop)}, **options)
