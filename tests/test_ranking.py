"""Ranking the policy documents' chunks: bm25 over the bigram index, and the re-rank step (rerank.py)."""

import pytest

from tinyagent import fixed_clock
from tinyagent.shop import Shop
from tinyagent.shop.knowledge import Passage
from tinyagent.shop.policies import POLICY_FOLDER, POLICY_QUESTIONS
from tinyagent.shop.rerank import RERANK_CANDIDATES, coverage, proximity, rerank


@pytest.fixture(scope="module")
def shop():
    with Shop(":memory:", clock=fixed_clock("2026-06-30T19:05:23")) as shop:
        shop.import_documents(POLICY_FOLDER)
        yield shop


def top(shop, question, **options):
    best = shop.search_passages(question, 1, scope="documents", **options)
    return (best[0].document, best[0].section) if best else None


@pytest.mark.parametrize("case", POLICY_QUESTIONS, ids=[case.question for case in POLICY_QUESTIONS])
def test_the_right_section_comes_first_after_the_re_rank(shop, case):
    assert top(shop, case.question, rerank=True) == (case.document, case.section)


def test_bm25_alone_gets_all_but_one_right_and_the_re_rank_fixes_that_one(shop):
    missed = [case.question for case in POLICY_QUESTIONS
              if top(shop, case.question) != (case.document, case.section)]
    assert missed == ["Can I return an opened item without a reason?"]
    # bm25 prefers Exclusions ("opened up for a home repair ... cannot be returned without a reason"); the
    # re-rank sees that Conditions holds more of the question's words ("return", "item"), closer together.
    assert top(shop, missed[0]) == ("en/returns.md", "Seven-day no-reason returns › Exclusions")


def test_chinese_questions_find_chinese_documents_and_english_questions_english_ones(shop):
    for case in POLICY_QUESTIONS:
        found = shop.search_passages(case.question, 3, scope="documents", rerank=True)
        language = "zh/" if any("\u4e00" <= ch <= "\u9fff" for ch in case.question) else "en/"
        assert found and all(p.document.startswith(language) for p in found), case.question


def test_re_ranking_only_reorders_what_bm25_found_and_keeps_its_score(shop):
    question = "Can I return an opened item without a reason?"
    found = shop.search_passages(question, RERANK_CANDIDATES, scope="documents")
    reordered = rerank(question, found)
    assert sorted(p.source for p in reordered) == sorted(p.source for p in found)
    assert {p.source: p.bm25 for p in reordered} == {p.source: p.bm25 for p in found}
    scores = [p.score for p in reordered]
    assert scores == sorted(scores, reverse=True) and all(s == round(s, 3) for s in scores)
    assert rerank(question, found) == reordered  # the same every time


def test_the_shop_re_ranks_more_candidates_than_it_returns(shop, monkeypatch):
    from tinyagent.shop import rerank as module

    seen = []
    monkeypatch.setattr(module, "rerank", lambda question, passages: seen.append(len(passages)) or list(passages))
    shop.search_passages("退货 运费 保修 发票 取消", 2, rerank=True)
    assert seen == [RERANK_CANDIDATES]


def test_coverage_counts_the_question_terms_a_passage_holds():
    assert coverage(["退货", "运费"], ["退货", "的", "运费"]) == 1.0
    assert coverage(["退货", "运费", "保修"], ["退货"]) == pytest.approx(1 / 3)
    assert coverage(["退"], ["退货"]) == 1.0  # a lone Han character matches the bigrams it starts
    assert coverage([], ["退货"]) == 0.0


def test_proximity_rewards_the_question_s_terms_close_together():
    words = ["a", "b", "return", "c", "d", "e", "f", "g", "h", "reason"]
    near = ["a", "return", "reason", "b"]
    assert proximity(["return", "reason"], near) == 1.0  # side by side
    assert proximity(["return", "reason"], words) == pytest.approx(2 / 8)  # a window of 8 words
    assert proximity(["return", "reason", "item"], near) == pytest.approx(1.0 * 2 / 3)
    assert proximity(["return"], near) == 0.0  # one term has no distance


def test_a_passage_holding_every_term_close_together_outranks_one_repeating_a_rare_word():
    repeats = Passage("T", "engraved engraved engraved engraved items", 9.0, 9.0, "a.md", "", 1)
    answers = Passage("T", "engraved items cannot be returned without a reason", 5.0, 5.0, "a.md", "", 2)
    assert [p.position for p in rerank("engraved returned reason", [repeats, answers])] == [2, 1]


def test_a_question_of_only_stop_words_leaves_the_order_alone():
    found = [Passage("T", "x", 2.0, 2.0), Passage("T", "y", 1.0, 1.0)]
    assert rerank("how do I", found) == found


@pytest.mark.parametrize("limit", [0, -1, -5])
def test_a_limit_below_one_finds_nothing_with_or_without_the_re_rank(limit):
    with Shop(":memory:") as shop:
        assert shop.search_passages("保修", limit=limit) == []
        assert shop.search_passages("保修", limit=limit, rerank=True) == []  # [:-1] once kept all but the last
