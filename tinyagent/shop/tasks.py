"""The shop's task set: customer requests that exercise every tool, in both languages, to compare agents on.

Each task is a question and the facts a right answer holds: ids, numbers and dates that only the shop's tools
can give, so an answer that holds them was looked up rather than guessed. The facts are those of the seeded
shop on the course's day (2026-06-30), which `run_task` in protocol_comparison.py sets up for every run.
The questions are worded afresh, not taken from the phrasings tests/test_classroom_understanding.py checks.
Three tasks ask about two orders at once: their lookups do not depend on each other, which is where native
function calling can ask for both in one reply (lesson 09).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ShopTask:
    """name: a short label; question: what the customer writes; facts: what a right answer contains."""

    name: str
    question: str
    facts: tuple[str, ...]

    def answered(self, answer: str | None) -> bool:
        """True when the answer holds every fact."""
        return bool(answer) and all(fact in answer for fact in self.facts)


SHOP_TASKS: tuple[ShopTask, ...] = (
    ShopTask("refund", "我上周买的扫地机不回充了，修不好我想退。订单号 88231。", ("RF202606300001",)),
    ShopTask("parcel", "帮我看看订单 88231 的快递到哪了。", ("SF1234567890", "2026-06-22")),
    ShopTask("two parcels", "Where are my parcels for orders 88231 and 88232?", ("SF1234567890", "YT2468013579")),
    ShopTask("two orders", "What is the status of orders 88233 and 88234?", ("2026-06-29", "ZT5566778899")),
    ShopTask("two orders (zh)", "订单 88232 和 88235 现在什么状态？", ("YT2468013579", "2026-06-18")),
    ShopTask("warranty", "Does the warranty still cover order 88236?", ("343",)),
    ShopTask("refund timing", "When will the refund money reach my account?", ("1-3",)),
    ShopTask("time", "现在几点了？", ("19:05",)),
    ShopTask("order status", "Could you check order 88234 for me?", ("ZT5566778899",)),
)
