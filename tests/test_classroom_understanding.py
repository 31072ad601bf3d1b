"""What the classroom model understands: fresh phrasings, run through the real agent against the real shop.

Every phrasing here was written for this file and appears in no notebook (a test checks). Each runs
through `ReActAgent` and the in-process classroom server on a fresh in-memory shop, frozen at
2026-06-30 19:05:23, and each checks three things: the tools called, the refund table at the end, and
the decision in the answer. docs/classroom-model.md lists the same phrasings for teachers.

The shop's orders on that day: 88231 signed for 8 days ago (past the 7-day no-reason window, within
the 15-day fault window), 88232 in transit, 88233 not shipped, 88234 signed 3 days ago, 88235
cancelled, 88236 signed 22 days ago (past 15 days, under the 1-year warranty).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from tinyagent import LlmClient, Observation, ReActAgent, build_system_prompt, fixed_clock
from tinyagent.shop import Shop, shop_registry

NOW = "2026-06-30T19:05:23"
CHECKS = ["queryOrder", "getCurrentTime", "searchKnowledge"]  # the refund's checks before any decision
REFUND = [*CHECKS, "applyRefund"]


@dataclass(frozen=True)
class Case:
    """A phrasing and what must come of it.

    tools:    the tool calls, in order
    refunds:  (order id, a phrase of the reason) for each refund in the table at the end
    answer:   phrases the answer must contain (the decision, in the user's language)
    """

    phrasing: str
    tools: list[str]
    refunds: list[tuple[str, str]]
    answer: tuple[str, ...]


def case(phrasing: str, tools: list[str], refunds: list[tuple[str, str]], *answer: str) -> Case:
    return Case(phrasing, tools, refunds, answer)


QUALITY_EN, QUALITY_ZH = ("88231", "Quality problem"), ("88231", "质量问题")
NOT_DELIVERED_EN, NOT_DELIVERED_ZH = ("88232", "not delivered"), ("88232", "未签收")
NO_REASON_EN, NO_REASON_ZH = ("88234", "no-reason return"), ("88234", "无理由退货")
REFUSED_EN = ("past the 7-day no-reason return period",)
REFUSED_ZH = ("超过了 7 天无理由退货期",)

ENGLISH = [
    # a refund asked for, with a fault: the quality return
    case("Order 88231: the vacuum stopped working yesterday. Refund please.", REFUND, [QUALITY_EN], "RF202606300001"),
    case("my vacuum (order #88231) won't charge anymore, I want my money back", REFUND, [QUALITY_EN], "RF202606300001"),
    case("Hi, 88231 makes a loud grinding noise when it runs. I'd like a refund.", REFUND, [QUALITY_EN],
         "RF202606300001"),
    case("Please refund order 88231 - it doesn't dock any more.", REFUND, [QUALITY_EN], "RF202606300001"),
    case("The robot from 88231 is broken. Send it back and refund me.", REFUND, [QUALITY_EN], "RF202606300001"),
    case("I need a refund for 88231 because it keeps beeping and won't move.", REFUND, [QUALITY_EN],
         "RF202606300001"),
    case("Refund 88231, the battery drains in ten minutes.", REFUND, [QUALITY_EN], "RF202606300001"),
    case("I bought the robot vacuum 88231 last week, it no longer docks; I want to return it", REFUND,
         [QUALITY_EN], "RF202606300001"),
    # a refund asked for, no fault: past 7 days, no refund (and an invitation to report a fault)
    case("I'd like to send order 88231 back and get a refund.", CHECKS, [], *REFUSED_EN),
    case("Return request for order 88231 please, I changed my mind.", CHECKS, [], *REFUSED_EN),
    # a question: answered, never acted on
    case("Is it too late to return order 88231? I don't need it anymore.", CHECKS, [], *REFUSED_EN),
    case("Can I return order 88231? I just don't like it.", CHECKS, [], *REFUSED_EN),
    case("Could I still return 88234? Not what I expected.", CHECKS, [], "Yes.", "within the 7-day",
         "Shall I submit the refund"),
    case("Am I able to get a refund on 88231? It won't charge at all.", CHECKS, [], "Yes.",
         "within the 15-day period for quality problems", "Shall I submit the refund"),
    # a fault reported, nothing asked: what the rules allow, and a question
    case("Order 88231 keeps making a strange noise.", CHECKS, [], "Sorry about that.", "Would you like a refund"),
    # something is wrong, but what? ask; neither refund nor refuse
    case("I want to return 88231, something is not right with it.", CHECKS, [], "what exactly is wrong"),
    # other orders: in transit, cancelled, past the fault window, within the no-reason window
    case("Cancel order 88232 and refund me, I don't want it.", ["queryOrder", "applyRefund"], [NOT_DELIVERED_EN],
         "refuse it when the courier arrives"),
    case("Can you refund order 88235?", ["queryOrder"], [], "has been cancelled"),
    case("The handheld vacuum from order 88236 is defective, I want a refund.", CHECKS, [], "repaired for free"),
    case("Please take back order 88234 and refund it, I never used it.", REFUND, [NO_REASON_EN],
         "within the 7-day no-reason return period"),
    # warranty, refund timing, parcels, status, an unknown order, the time, the rules
    case("Is order 88236 still under warranty?", CHECKS, [], "under warranty", "343 days are left"),
    case("How long until my refund shows up in my account?", ["searchKnowledge"], [], "1-3 business days"),
    case("Has the parcel for 88232 left the warehouse yet?", ["queryOrder", "queryLogistics"], [],
         "YT2468013579", "快件到达上海转运中心"),
    case("Track YT2468013579 for me", ["queryLogistics"], [], "YT2468013579", "圆通速递"),
    case("When will order 88233 arrive?", ["queryOrder"], [], "has not shipped yet"),
    case("What's going on with order 88234?", ["queryOrder"], [], "Order 88234", "ZT5566778899"),
    case("Give me the details of 88235.", ["queryOrder"], [], "Order 88235", "已取消"),
    case("Where is my package? The order number is 12345.", ["queryOrder"], [], "could not find order 12345"),
    case("What's today's date?", ["getCurrentTime"], [], "30 June 2026"),
    case("What is your exchange policy?", ["searchKnowledge"], [], "exchanged"),
    case("How do returns work if I just changed my mind?", ["searchKnowledge"], [], "Within 7 days"),
    # no order number: ask for it
    case("I want a refund for my vacuum, it broke.", [], [], "order number"),
    # chat, and a request it cannot place: ask, or decline; never a tool
    case("Thanks a lot!", [], [], "You're welcome"),
    case("Good evening", [], [], "Hello!"),
    case("Something about my purchase...", [], [], "did not understand"),
    case("Tell me a joke about cats", [], [], "can't help with that"),
]

CHINESE = [
    case("订单 88231 的扫地机充不进电了，帮我退款", REFUND, [QUALITY_ZH], "RF202606300001"),
    case("88231 这个扫地机坏了，我要退货", REFUND, [QUALITY_ZH], "RF202606300001"),
    case("我的订单88231扫地机有异响，申请退款", REFUND, [QUALITY_ZH], "RF202606300001"),
    case("扫地机找不到充电座了，订单号88231，麻烦退一下", REFUND, [QUALITY_ZH], "RF202606300001"),
    case("88231 不工作了，把钱退给我", REFUND, [QUALITY_ZH], "RF202606300001"),
    case("订单 88231 的扫地机开不了机，想退款", REFUND, [QUALITY_ZH], "RF202606300001"),
    case("88231 扫地机不回座了，请帮我办理退款", REFUND, [QUALITY_ZH], "RF202606300001"),
    case("订单 88231 我不喜欢，要退货", CHECKS, [], *REFUSED_ZH),
    case("88231 买错了，帮我退掉", CHECKS, [], *REFUSED_ZH),
    case("88231 还能退货吗？后悔了", CHECKS, [], *REFUSED_ZH),
    case("88231这单能退吗？不想要了", CHECKS, [], *REFUSED_ZH),
    case("88234 可以退吗？拍错了", CHECKS, [], "可以。", "7 天无理由退货期内", "需要我现在为您提交退款申请吗"),
    case("88231 的扫地机不充电了，能不能退？", CHECKS, [], "可以。", "15 天质量问题退货期内", "需要我现在为您提交退款申请吗"),
    case("订单 88231 的扫地机死机了", CHECKS, [], "抱歉给您添麻烦了", "您想退款，还是换货或维修"),
    case("88231 我要退货，感觉有点问题", CHECKS, [], "能具体说说是什么情况吗"),
    case("88232 还在路上，我不要了，帮我退款", ["queryOrder", "applyRefund"], [NOT_DELIVERED_ZH], "拒收"),
    case("帮我把 88235 退款", ["queryOrder"], [], "已经取消"),
    case("88236 的吸尘器坏了，我要退货", CHECKS, [], "免费维修"),
    case("88234 用不上了，帮我退货", REFUND, [NO_REASON_ZH], "7 天无理由退货期内"),
    case("88231 现在还在保修期内吗？", CHECKS, [], "在保修期内", "还剩 357 天"),
    case("88236 过保了没有？", CHECKS, [], "在保修期内", "还剩 343 天"),
    case("退款一般几天到账？", ["searchKnowledge"], [], "1-3 个工作日"),
    case("88232 的包裹现在到哪儿了", ["queryOrder", "queryLogistics"], [], "YT2468013579", "快件到达上海转运中心"),
    case("运单 YT2468013579 现在在哪", ["queryLogistics"], [], "圆通速递"),
    case("88233 什么时候发货？", ["queryOrder"], [], "还没有发货"),
    case("查一下 88234 这个订单", ["queryOrder"], [], "订单 88234", "ZT5566778899"),
    case("订单 54321 怎么还没到", ["queryOrder"], [], "没有查到订单 54321"),
    case("今天星期几？", ["getCurrentTime"], [], "星期二"),
    case("开发票怎么弄？", ["searchKnowledge"], [], "发票"),
    case("满多少包邮？", ["searchKnowledge"], [], "99 元包邮"),
    case("我想退货，东西坏了", [], [], "请提供您的订单号"),
    case("谢谢你", [], [], "不客气"),
    case("嗨，在吗", [], [], "您好！"),
    case("我那个订单的事情……", [], [], "没太明白"),
    case("给我讲个笑话", [], [], "帮不上忙"),
]

CASES = ENGLISH + CHINESE


@pytest.fixture(scope="module")
def llm() -> LlmClient:
    return LlmClient.classroom()


def run(llm: LlmClient, question: str, system_prompt: str | None = None, **options):
    with Shop(":memory:", clock=fixed_clock(NOW)) as shop:
        result = ReActAgent(llm, shop_registry(shop), system_prompt=system_prompt, **options).run(question)
        return result, shop.refunds()


def test_enough_fresh_phrasings_in_both_languages():
    assert len(ENGLISH) >= 30 and len(CHINESE) >= 30
    assert len({c.phrasing for c in CASES}) == len(CASES)


def test_no_phrasing_is_used_in_a_notebook():
    notebooks = Path(__file__).resolve().parents[1] / "notebooks"
    text = "\n".join(
        "".join(cell["source"]) + json.dumps(cell.get("outputs", []), ensure_ascii=False)
        for path in notebooks.glob("*.ipynb")
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]
    )
    assert not [c.phrasing for c in CASES if c.phrasing in text]


@pytest.mark.parametrize("item", CASES, ids=[c.phrasing[:40] for c in CASES])
def test_phrasing(llm, item: Case):
    result, refunds = run(llm, item.phrasing)
    assert result.reason == "final_answer", result.answer
    assert [call.name for call in result.trace.tool_calls] == item.tools, result.answer
    assert [r["orderId"] for r in refunds] == [order_id for order_id, _ in item.refunds]
    for refund, (_, reason) in zip(refunds, item.refunds):
        assert reason in refund["reason"], refund["reason"]
        assert refund["refundId"] in result.answer  # the answer quotes the refund the shop really wrote
    for phrase in item.answer:
        assert phrase in result.answer, result.answer
    if not refunds:
        assert "RF2026" not in result.answer  # no refund id, real or invented, when nothing was refunded


def test_a_question_then_yes_submits_the_refund(llm):
    """ "Can I return it?" gets an answer and an offer; "please refund it" then acts, with the fault said before."""
    with Shop(":memory:", clock=fixed_clock(NOW)) as shop:
        agent = ReActAgent(llm, shop_registry(shop))
        first = agent.run("Am I able to get a refund on 88231? It won't charge at all.")
        assert shop.refunds() == [] and "Shall I submit" in first.answer
        history = [{"role": "user", "content": "Am I able to get a refund on 88231? It won't charge at all."},
                   {"role": "assistant", "content": first.answer}]
        second = agent.run("OK, please refund it.", history=history)
        [refund] = shop.refunds()
        assert refund["orderId"] == "88231" and "won't charge" in refund["reason"]
        assert refund["refundId"] in second.answer


# --- system prompts in other styles ------------------------------------------------------------------

TOOLS = [  # (name, description) as another framework might describe the shop's tools
    ("queryOrder", "Look up an order by its 5-digit id. Returns product, dates, status, tracking number."),
    ("queryLogistics", "Track a parcel by its tracking number."),
    ("applyRefund", 'Submit a refund. Input: JSON with orderId and reason, e.g. {"orderId": "88231"}.'),
    ("searchKnowledge", "Search the after-sales policies (returns, faults, warranty)."),
    ("getCurrentTime", "Current date and time. No input."),
]
NAMES = ", ".join(name for name, _ in TOOLS)

LANGCHAIN_REACT = (
    "Answer the following questions as best you can. You have access to the following tools:\n\n"
    + "\n".join(f"{name}: {desc}" for name, desc in TOOLS)
    + "\n\nUse the following format:\n\n"
    "Question: the input question you must answer\n"
    "Thought: you should always think about what to do\n"
    f"Action: the action to take, should be one of [{NAMES}]\n"
    "Action Input: the input to the action\n"
    "Observation: the result of the action\n"
    "... (this Thought/Action/Action Input/Observation can repeat N times)\n"
    "Thought: I now know the final answer\n"
    "Final Answer: the final answer to the original input question\n\n"
    "Begin!"
)
FORMAT_EN = (
    "\n\nReply with Thought, then Action and Action Input, and wait for the Observation. "
    "When you know the answer, reply with Thought and Final Answer."
)
STYLES = {
    "course, English": lambda registry: build_system_prompt(registry, "en"),
    "course, Chinese": lambda registry: build_system_prompt(registry, "zh"),
    "LangChain ReAct": lambda registry: LANGCHAIN_REACT,
    "Markdown bullets, bold names": lambda registry: "# Bit Mall assistant\n\n## Tools\n"
    + "".join(f"- **{name}**: {desc}\n" for name, desc in TOOLS) + FORMAT_EN,
    "Markdown table": lambda registry: "You help Bit Mall customers.\n\n| Tool | Description |\n|---|---|\n"
    + "".join(f"| `{name}` | {desc} |\n" for name, desc in TOOLS) + FORMAT_EN,
    "JSON tool definitions": lambda registry: "You can call these tools:\n```json\n"
    + json.dumps([{"name": n, "description": d, "parameters": {"type": "object"}} for n, d in TOOLS], indent=2)
    + "\n```" + FORMAT_EN,
    "Chinese, full-width punctuation": lambda registry: "你是比特严选的客服。可用工具：\n"
    + "".join(f"{i}、{name}：{desc}\n" for i, (name, desc) in enumerate(TOOLS, 1))
    + "\n按 Thought / Action / Action Input 的格式回复，等待 Observation；知道答案后写 Final Answer。",
}
REFUND_REQUEST = "The vacuum from order 88231 stopped charging a few days ago. I want a refund."


@pytest.mark.parametrize("style", list(STYLES))
def test_each_prompt_style_reaches_the_same_refund_with_stop(llm, style):
    with Shop(":memory:", clock=fixed_clock(NOW)) as shop:
        registry = shop_registry(shop)
        result = ReActAgent(llm, registry, system_prompt=STYLES[style](registry)).run(REFUND_REQUEST)
        calls = [(call.name, call.input) for call in result.trace.tool_calls]
        assert [name for name, _ in calls] == REFUND, result.answer
        assert calls[0] == ("queryOrder", "88231")
        [refund] = shop.refunds()
        assert refund["orderId"] == "88231" and "stopped charging" in refund["reason"]
        assert refund["refundId"] in result.answer and result.reason == "final_answer"


@pytest.mark.parametrize("style", list(STYLES))
def test_each_prompt_style_invents_observations_without_stop(llm, style):
    with Shop(":memory:", clock=fixed_clock(NOW)) as shop:
        registry = shop_registry(shop)
        messages = [{"role": "system", "content": STYLES[style](registry)}, {"role": "user", "content": REFUND_REQUEST}]
        text = llm.chat(messages).text  # no stop sequence
        assert text.startswith("Thought: ") and "\nAction: queryOrder\nAction Input: 88231\nObservation: " in text
        assert "Action: applyRefund" in text and "RF20260629001" in text.splitlines()[-1]  # the invented refund
        assert shop.refunds() == []  # nothing ran: every Observation in the text was made up


def table_row(c: Case) -> str:
    """The case as a row of docs/classroom-model.md's tables: phrasing, tools, refunds, answer."""
    cells = [c.phrasing.replace("|", "\\|"), " → ".join(c.tools) or "(none)",
             ", ".join(f"{order} ({reason})" for order, reason in c.refunds) or "none", "; ".join(c.answer)]
    return "| " + " | ".join(cells) + " |"


def test_the_teachers_table_lists_every_phrasing_with_what_its_test_checks():
    doc = (Path(__file__).resolve().parents[1] / "docs" / "classroom-model.md").read_text(encoding="utf-8")
    rows = set(doc.splitlines())
    assert [table_row(c) for c in CASES if table_row(c) not in rows] == []


def test_an_english_policy_question_is_answered_in_english_from_the_chinese_entry_it_read():
    shop = Shop(":memory:", clock=fixed_clock("2026-06-30T19:05:23"))
    result = ReActAgent(LlmClient.classroom(), shop_registry(shop)).run("How long does delivery take?")
    [seen] = [o.text for o in result.trace.of_type(Observation)]
    assert "配送与运费" in seen  # the shop's text is Chinese, as it stores it
    assert result.answer.startswith('According to our policy "Shipping and fees": Shipping is free on orders of 99 yuan')
    assert not any("\u4e00" <= ch <= "\u9fff" for ch in result.answer)
    chinese = ReActAgent(LlmClient.classroom(), shop_registry(shop)).run("运费怎么算？")
    assert chinese.answer.startswith("根据《配送与运费》：全场满 99 元包邮")
