"""The classroom model names its sources (tinyagent/classroom/citations.py): when the search Observation says
which document and section a passage comes from, the Final Answer says so too; when it does not, nothing
changes. Run through the real agents (text ReAct and function calling) against the real shop."""

import json

import pytest

from tinyagent import FunctionTool, LlmClient, ReActAgent, ToolRegistry, fixed_clock
from tinyagent.protocols.function_calling import FunctionCallingAgent
from tinyagent.shop import Shop, shop_registry
from tinyagent.shop.cited_search import cited_shop_registry, cited_shop_tools
from tinyagent.shop.policies import POLICY_FOLDER

CLOCK = fixed_clock("2026-06-30T19:05:23")


@pytest.fixture(scope="module")
def llm():
    return LlmClient.classroom("classroom")


def documents_shop():
    shop = Shop(":memory:", clock=CLOCK)
    shop.import_documents(POLICY_FOLDER)
    return shop


def ask(llm, question, agent=ReActAgent, citations=True, shop=None):
    shop = shop or documents_shop()
    result = agent(llm, (cited_shop_registry if citations else shop_registry)(shop)).run(question)
    return result, [call.name for call in result.trace.tool_calls], shop


@pytest.mark.parametrize("agent", [ReActAgent, FunctionCallingAgent])
@pytest.mark.parametrize("question, named", [
    ("质量问题多少天内可以退货？", "根据《退换货政策》「质量问题退换货 › 期限与检测」：签收次日起 15 天内"),
    ("满多少包邮？", "根据《配送、取消与发票》「运费」：全场满 99 元包邮"),
    ("退款一般几天到账？", "根据《退换货政策》「退款到账」：退款审核通过后 1-3 个工作日"),
    ("What is the shipping cost for a quality return?",
     'According to "Returns and exchanges", section "Quality problems › Shipping cost": For a quality return'),
    ("How long until my refund shows up in my account?",
     'According to "Returns and exchanges", section "Refund timing": Once a refund is approved'),
])
def test_a_policy_answer_names_the_document_and_section_it_quotes(llm, agent, question, named):
    result, tools, _ = ask(llm, question, agent)
    assert tools == ["searchKnowledge"]
    assert result.reason == "final_answer" and result.answer.startswith(named), result.answer


@pytest.mark.parametrize("question, note, refunded", [
    ("88231 的扫地机坏了，我要退货", "（出处：《退换货政策》「质量问题退换货 › 期限与检测」）", True),
    ("88234 可以退吗？拍错了", "（出处：《退换货政策》「七天无理由退货 › 适用条件」）", False),
    ("Is order 88236 still under warranty?", '(Source: "Warranty and repairs", section "Warranty period".)', False),
    ("88231 还能退货吗？后悔了", "（出处：《退换货政策》「七天无理由退货 › 适用条件」；《退换货政策》「质量问题退换货 › 期限与检测」）",
     False),  # past the no-reason window, and a fault could still be returned: two rules, two passages
])
def test_a_decision_ends_by_naming_the_passage_that_states_the_rule_it_applied(llm, question, note, refunded):
    result, tools, shop = ask(llm, question)
    assert tools[:3] == ["queryOrder", "getCurrentTime", "searchKnowledge"]
    assert result.answer.endswith(note), result.answer
    assert bool(shop.refunds()) is refunded


@pytest.mark.parametrize("question, answer_says", [
    # The returns chunks found say nothing about how long the warranty lasts: no source for the repair.
    ("88236 的吸尘器坏了，我要退货", "免费维修"),
    # "return policy" finds "Cancelling an order" and two chunks without a day limit: the usual rules are
    # applied, and no passage is named for them.
    ("Can I return order 88231? I just don't like it.", "past the 7-day no-reason return period"),
])
def test_no_passage_states_the_rule_so_none_is_cited(llm, question, answer_says):
    result, _, _ = ask(llm, question)
    assert answer_says in result.answer
    assert "出处" not in result.answer and "Source" not in result.answer


# Each answer in full, checked against the shop (88231 signed 2026-06-22, 8 days before CLOCK; 88236 signed
# 2026-06-08, 22 days before, of a 365-day warranty): not only the absence of a citation, so an answer that lost
# its facts, or was swapped for the Thought, fails.
ANSWERS_WITHOUT_SOURCES = {
    "满多少包邮？": "根据《配送与运费》：全场满 99 元包邮，不满 99 元收取运费 8 元；现货商品下单后 48 小时内发货，"
                "默认使用顺丰速运或圆通速递，发货后可凭运单号查询物流。",
    "88231 的扫地机坏了，我要退货": "您好！订单 88231（比特 S10 Pro 扫地机）的退款申请已经提交，退款单号：RF202606300001。"
                               "您在签收后第 8 天反馈扫地机坏了，属于 15 天内的质量问题，可以退货退款。系统提示：退款申请已提交，"
                               "预计 1-3 个工作日到账。如有其他问题，随时联系我。",
    "Is order 88236 still under warranty?": "Yes, it is under warranty: order 88236 (比特 H2 手持吸尘器) was signed for on "
                                            "2026-06-08, 22 days ago, and the warranty lasts 365 days, so 343 days "
                                            "are left. Faults not caused by damage are repaired free of charge.",
}


@pytest.mark.parametrize("question", list(ANSWERS_WITHOUT_SOURCES))
def test_without_sources_in_the_observation_the_answers_are_as_before(llm, question):
    result, _, _ = ask(llm, question, citations=False, shop=Shop(":memory:", clock=CLOCK))
    assert result.answer == ANSWERS_WITHOUT_SOURCES[question]
    assert "出处" not in result.answer and "Source:" not in result.answer and "section" not in result.answer


def test_the_default_policy_answer_is_unchanged(llm):
    result, _, _ = ask(llm, "满多少包邮？", citations=False, shop=Shop(":memory:", clock=CLOCK))
    assert result.answer == "根据《配送与运费》：全场满 99 元包邮，不满 99 元收取运费 8 元；现货商品下单后 48 小时内发货，" \
        "默认使用顺丰速运或圆通速递，发货后可凭运单号查询物流。"


def search_returning(results):
    """A stand-in searchKnowledge whose Observation is exactly `results`."""
    return FunctionTool("searchKnowledge", "Search the after-sales policies. Input: keywords.",
                        lambda query: json.dumps({"query": query, "results": results}, ensure_ascii=False))


def test_it_cites_exactly_the_source_the_observation_gave(llm):
    passage = {"title": "假想手册", "section": "第三章", "source": "made-up.md#3", "content": "包邮门槛是 199 元。"}
    result = ReActAgent(llm, ToolRegistry([search_returning([passage])])).run("满多少包邮？")
    assert result.answer == "根据《假想手册》「第三章」：包邮门槛是 199 元。"


def test_a_top_result_without_a_source_is_answered_the_old_way(llm):
    results = [{"title": "配送与运费", "content": "满 99 元包邮。"},
               {"title": "假想手册", "section": "第三章", "source": "made-up.md#3", "content": "满 199 元包邮。"}]
    result = ReActAgent(llm, ToolRegistry([search_returning(results)])).run("满多少包邮？")
    assert result.answer == "根据《配送与运费》：满 99 元包邮。"


def test_a_passage_without_a_section_is_named_by_its_document_alone(llm):
    passage = {"title": "客服服务时间", "section": "", "source": "zh/service-hours.txt#1", "content": "每天 9:00-21:00。"}
    result = ReActAgent(llm, ToolRegistry([search_returning([passage])])).run("What is your policy on hours?")
    assert result.answer == 'According to "客服服务时间": 每天 9:00-21:00。'


def test_a_failed_refund_names_no_policy(llm):
    shop = documents_shop()
    failing = FunctionTool("applyRefund", 'Submit a refund. Input: JSON, e.g. {"orderId": "88231", "reason": "..."}',
                           lambda text: json.dumps({"error": "退款系统维护中"}, ensure_ascii=False))
    tools = [failing if tool.name == "applyRefund" else tool for tool in cited_shop_tools(shop)]
    result = ReActAgent(llm, ToolRegistry(tools)).run("88231 的扫地机坏了，我要退货")
    assert "没有提交成功" in result.answer and "出处" not in result.answer
