"""The shop's after-sales policy documents, in Chinese (`zh/`) and English (`en/`), and questions about them.

Lesson 16 imports them into the knowledge base (`shop.import_documents(POLICY_FOLDER)`). They say what the
built-in entries of knowledge.py say, at more length and with sections: 7 days for a no-reason return, 15
for a quality problem, a 1-year (365-day) warranty, free shipping from 99 yuan, refunds in 1-3 business days.

`POLICY_QUESTIONS` are customer questions with the section that answers each: what tests/test_ranking.py
checks the ranking on, and what lesson 16 measures bm25 and the re-rank step with.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

POLICY_FOLDER = Path(__file__).resolve().parent


@dataclass(frozen=True)
class PolicyQuestion:
    """A question, and the document and section (heading path, " › " between levels) that answer it."""

    question: str
    document: str
    section: str


POLICY_QUESTIONS: tuple[PolicyQuestion, ...] = (
    PolicyQuestion("质量问题多少天内可以退货？", "zh/returns.md", "质量问题退换货 › 期限与检测"),
    PolicyQuestion("开封了还能无理由退货吗？", "zh/returns.md", "七天无理由退货 › 适用条件"),
    PolicyQuestion("定制刻字的商品能无理由退货吗？", "zh/returns.md", "七天无理由退货 › 不适用的情形"),
    PolicyQuestion("无理由退货的运费谁出？", "zh/returns.md", "七天无理由退货 › 运费"),
    PolicyQuestion("保修多久？", "zh/warranty.md", "保修期限"),
    PolicyQuestion("滤网坏了保修吗？", "zh/warranty.md", "保修范围 › 不在保修范围内"),
    PolicyQuestion("订单满多少钱包邮？", "zh/shipping.md", "运费"),
    PolicyQuestion("已经发货了还能取消吗？", "zh/shipping.md", "取消订单"),
    PolicyQuestion("退款几天到账？", "zh/returns.md", "退款到账"),
    PolicyQuestion("客服几点下班？", "zh/service-hours.txt", ""),
    PolicyQuestion("Can I return an opened item without a reason?", "en/returns.md",
                   "Seven-day no-reason returns › Conditions"),
    PolicyQuestion("Can engraved items be returned?", "en/returns.md", "Seven-day no-reason returns › Exclusions"),
    PolicyQuestion("Who pays the shipping for a quality return?", "en/returns.md", "Quality problems › Shipping cost"),
    PolicyQuestion("Are filters covered by the warranty?", "en/warranty.md", "What the warranty covers › Not covered"),
    PolicyQuestion("How do I get a repair?", "en/warranty.md", "How to get a repair"),
    PolicyQuestion("How long does a refund take?", "en/returns.md", "Refund timing"),
    PolicyQuestion("When is customer service open?", "en/service-hours.txt", ""),
    PolicyQuestion("Can I cancel an order that has shipped?", "en/shipping.md", "Cancelling an order"),
    PolicyQuestion("How do I get an invoice?", "en/shipping.md", "Invoices"),
    PolicyQuestion("Can I exchange it for a different model?", "en/returns.md", "Exchanges"),
)
