"""The citing searchKnowledge (tinyagent/shop/cited_search.py), and the default one left as it was."""

import json

import pytest

from tinyagent import Action, build_system_prompt, fixed_clock
from tinyagent.shop import SearchKnowledgeTool, Shop, shop_registry
from tinyagent.shop.cited_search import cited_shop_registry
from tinyagent.shop.database import MAX_QUERY_CHARS
from tinyagent.shop.policies import POLICY_FOLDER
from tinyagent.toolkit.typed_tool import TypedTool

CLOCK = fixed_clock("2026-06-30T19:05:23")


@pytest.fixture
def shop():
    with Shop(":memory:", clock=CLOCK) as shop:
        shop.import_documents(POLICY_FOLDER)
        yield shop


def observe(registry, text):
    return json.loads(registry.run(Action("searchKnowledge", text)).text)


def test_each_result_names_its_document_section_and_source(shop):
    answer = observe(cited_shop_registry(shop), "质量问题多少天内可以退货")
    first = answer["results"][0]
    assert list(first) == ["title", "section", "source", "content", "score"]
    assert (first["title"], first["section"], first["source"]) == (
        "退换货政策", "质量问题退换货 › 期限与检测", "zh/returns.md#5")
    assert first["content"].startswith("签收次日起 15 天内出现性能故障的")
    assert len(answer["results"]) == 3


def test_it_searches_the_documents_only_never_the_built_in_entries(shop):
    results = observe(cited_shop_registry(shop), "保修 退货 运费 发票 取消")["results"]
    assert results and all(result["source"] for result in results)


def test_it_re_ranks_by_default(shop):
    question = "Can I return an opened item without a reason?"
    cited = observe(cited_shop_registry(shop), question)["results"][0]
    assert cited["section"] == "Seven-day no-reason returns › Conditions"


@pytest.mark.parametrize("text", ['{"query": "满多少包邮"}', "满多少包邮", "```\n满多少包邮\n```"])
def test_the_query_may_come_as_text_or_json(shop, text):
    assert observe(cited_shop_registry(shop), text)["results"][0]["section"] == "运费"


def test_an_empty_or_too_long_query_is_an_error_observation(shop):
    registry = cited_shop_registry(shop)
    assert "query" in observe(registry, "   ")["error"]
    too_long = observe(registry, "退货" * MAX_QUERY_CHARS)
    assert str(MAX_QUERY_CHARS) in too_long["error"] and registry.run(Action("searchKnowledge", "退货" * 500)).error


def test_nothing_found_and_nothing_imported_say_so():
    with Shop(":memory:", clock=CLOCK) as empty:
        registry = cited_shop_registry(empty)
        assert "no documents have been imported" in observe(registry, "退货")["hint"]
        empty.import_documents(POLICY_FOLDER / "zh" / "shipping.md")
        answer = observe(registry, "股票 行情")
        assert answer["results"] == [] and "try other words" in answer["hint"]


def test_the_citing_registry_has_the_same_tools_in_the_same_order(shop):
    cited, plain = cited_shop_registry(shop), shop_registry(shop)
    assert cited.names == plain.names
    assert isinstance(cited.get("searchKnowledge"), TypedTool)
    assert isinstance(plain.get("searchKnowledge"), SearchKnowledgeTool)
    prompt = build_system_prompt(cited, "zh")
    assert "出处" in prompt and "searchKnowledge" in prompt
    later = fixed_clock("2026-07-01T08:00:00")  # a clock given is the time tool's, as shop_registry's
    assert "2026-07-01T08:00:00" in cited_shop_registry(shop, later).run(Action("getCurrentTime", "")).text


def test_the_default_search_knowledge_is_unchanged_on_a_shop_without_documents():
    # The exact Observation lesson 06's committed trace shows: documents must not change a byte of it.
    with Shop(":memory:", clock=CLOCK) as plain:
        text = shop_registry(plain).run(Action("searchKnowledge", "扫地机 不回充 退货 政策")).text
    assert text == (
        '{"query":"扫地机 不回充 退货 政策","results":[{"title":"质量问题退换货","content":"签收次日起 15 天内出现性能故障'
        '（质量问题，例如扫地机不回充、无法开机、异响），经售后检测确认后可退货或换货，往返运费由商家承担；超过 15 天、在保修期内'
        '可免费维修。","score":6.792},{"title":"七天无理由退货政策","content":"签收次日起 7 天内，商品完好、配件齐全、不影响二次'
        '销售，可申请无理由退货，寄回运费由买家承担；开封试用不影响退货，人为损坏的商品不适用。","score":2.204},{"title":"保修政策",'
        '"content":"整机保修 1 年（365 天），自签收次日起计算，保修期内的非人为故障免费维修；边刷、滤网、尘袋等耗材不在保修范围内，'
        '进水、摔落等人为损坏需付费维修。","score":0.622}]}'
    )
