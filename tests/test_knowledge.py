"""The knowledge base: bigram tokenizing, the FTS5 query, and ranking for Chinese and English questions."""

import re
import sqlite3

import pytest

from tinyagent.shop import knowledge
from tinyagent.shop.knowledge import (
    KNOWLEDGE_BASE,
    KnowledgeEntry,
    create_index,
    index_is_current,
    knowledge_hash,
    match_query,
    search,
    search_terms,
)


@pytest.fixture
def conn():
    conn = sqlite3.connect(":memory:")
    create_index(conn)
    yield conn
    conn.close()


def titles(conn, question, limit=3):
    return [hit["title"] for hit in search(conn, question, limit)]


def test_han_text_becomes_overlapping_bigrams():
    assert search_terms("签收次日") == ["签收", "收次", "次日"]


def test_latin_words_are_lower_cased_and_a_lone_han_character_is_kept():
    assert search_terms("7 天 Warranty, SF") == ["天", "7", "warranty", "sf"]


def test_query_terms_are_quoted_deduplicated_and_joined_with_or():
    assert match_query("退货 退货 how long") == '"退货" OR "long"'


def test_query_of_only_stop_words_or_punctuation_is_empty():
    assert match_query("how to ？！") == ""


def test_fts_syntax_in_a_question_is_searched_as_plain_words(conn):
    assert match_query('NOT near "refund" (*') == '"not" OR "near" OR "refund"'
    assert titles(conn, 'refund" NOT (*')[0] == "退款到账时间"  # no sqlite3.OperationalError


def test_two_character_word_finds_the_return_policies(conn):
    assert titles(conn, "退货") == ["七天无理由退货政策", "质量问题退换货"]


def test_seed_question_ranks_quality_then_seven_day_returns_first(conn):
    assert titles(conn, "扫地机 不回充 退货 政策")[:2] == ["质量问题退换货", "七天无理由退货政策"]


def test_quality_problem_question_ranks_quality_entry_first(conn):
    assert titles(conn, "质量问题 退货")[0] == "质量问题退换货"


def test_english_warranty_finds_the_warranty_policy(conn):
    assert titles(conn, "warranty") == ["保修政策"]


def test_english_refund_how_long_finds_refund_timing_first(conn):
    assert titles(conn, "refund how long")[0] == "退款到账时间"


@pytest.mark.parametrize(
    "question, best",
    [("包邮", "配送与运费"), ("发票", "发票开具"), ("换货", "换货流程"), ("保修", "保修政策"), ("invoice", "发票开具"),
     ("How long does shipping take?", "配送与运费"), ("cancel my order", "取消订单")],
)
def test_each_topic_is_found_by_its_own_word(conn, question, best):
    assert titles(conn, question)[0] == best


def test_scores_are_rounded_and_best_first(conn):
    scores = [hit["score"] for hit in search(conn, "扫地机 不回充 退货 政策")]
    assert scores == sorted(scores, reverse=True)
    assert all(score == round(score, 3) for score in scores)
    assert scores[0] > 0


def test_unrelated_question_finds_nothing(conn):
    assert search(conn, "股票 行情") == []


def test_limit_caps_the_results(conn):
    assert len(search(conn, "退货 保修 运费 发票", limit=2)) == 2


def test_rebuilding_the_index_does_not_duplicate_entries(conn):
    create_index(conn)
    assert conn.execute("SELECT COUNT(*) FROM knowledge_fts").fetchone()[0] == len(KNOWLEDGE_BASE)


def test_policies_state_their_day_limits_as_n_days():
    # The classroom model reads the limits out of these sentences; the phrasing "N 天" is a contract.
    text = {entry.title: entry.content for entry in KNOWLEDGE_BASE}
    assert re.search(r"签收次日起 7 天内", text["七天无理由退货政策"])
    assert re.search(r"签收次日起 15 天内.*超过 15 天", text["质量问题退换货"])
    assert "365 天" in text["保修政策"]
    assert "1-3 个工作日" in text["退款到账时间"]
    assert "满 99 元包邮" in text["配送与运费"]


def test_the_index_knows_whether_it_holds_the_current_knowledge(conn):
    assert index_is_current(conn)
    changed = (*KNOWLEDGE_BASE[:-1], KnowledgeEntry("取消订单", "发货前可取消。", "cancel"))
    assert not index_is_current(conn, changed)
    create_index(conn, changed)
    assert index_is_current(conn, changed) and not index_is_current(conn)


def test_an_empty_database_has_no_current_index():
    assert not index_is_current(sqlite3.connect(":memory:"))


def test_the_fingerprint_covers_the_text_and_how_it_is_split(monkeypatch):
    first = KNOWLEDGE_BASE[0]
    retitled = (KnowledgeEntry(first.title + "！", first.content, first.keywords), *KNOWLEDGE_BASE[1:])
    before = knowledge_hash()
    assert before == knowledge_hash(KNOWLEDGE_BASE) != knowledge_hash(retitled)
    # the same text split another way (a change to search_terms), and a new table layout: each rebuilds the index
    monkeypatch.setattr(knowledge, "indexed_terms", lambda title, body: (" ".join(title), " ".join(body)))
    split_otherwise = knowledge_hash()
    assert split_otherwise != before
    monkeypatch.setattr(knowledge, "INDEX_LAYOUT", knowledge.INDEX_LAYOUT + 1)
    assert knowledge_hash() not in (before, split_otherwise)


def test_a_temp_index_hides_the_stored_one_for_this_connection_only(conn):
    create_index(conn, (KnowledgeEntry("以旧换新", "旧机折价。", "trade in"),), schema="temp")
    assert titles(conn, "trade in") == ["以旧换新"]
    assert conn.execute("SELECT COUNT(*) FROM main.knowledge").fetchone()[0] == len(KNOWLEDGE_BASE)


def test_han_runs_are_the_runs_a_class_of_the_two_han_ranges_finds():
    # han_runs finds Han runs without the costly class; it must find exactly what the class finds, for every
    # code point beside Han and Latin text, and in mixed strings.
    import random
    import re

    from tinyagent.shop.knowledge import han_runs

    by_class = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]+")
    for code in range(0x110000):
        if 0xD800 <= code <= 0xDFFF:
            continue
        char = chr(code)
        for text in (char, f"a{char}中", f"中{char}文", f"{char}{char}"):
            assert han_runs(text) == by_class.findall(text), (hex(code), text)
    rng = random.Random(7)
    pool = [chr(c) for c in [*range(0x20, 0x250), *range(0x3000, 0x3100), *range(0x33F0, 0x3410),
                             *range(0x4DB0, 0x4E10), *range(0x9FF0, 0xA010), *range(0xFF00, 0xFF70), 0x20000, 0x3007]]
    for _ in range(20000):
        text = "".join(rng.choice(pool) for _ in range(rng.randint(0, 12)))
        assert han_runs(text) == by_class.findall(text), text


def test_proximity_is_at_most_one_and_a_passage_holding_every_term_comes_first():
    # 退 and 退货 both sit in the one word 退货: that is not two terms packed tighter than a phrase, and a passage
    # that answers half the question must not come before the one that holds all of it.
    from tinyagent.shop.knowledge import Passage
    from tinyagent.shop.rerank import proximity, rerank

    assert proximity(["退", "退货"], ["退货"]) == 1.0
    assert proximity(["退货", "运费"], search_terms("退货运费")) <= 1.0
    whole = Passage("政策", "退货需要先申请，审核通过后寄回商品，仓库验收无误之后，订单满足条件的可以包邮", 1.0, 1.0)
    part = Passage("政策", "退货", 1.0, 1.0)
    assert [p.content for p in rerank("退 退货 包邮", [part, whole])] == [whole.content, part.content]


def test_search_terms_read_full_width_letters_and_digits_as_the_letters_and_digits():
    assert search_terms("ｗａｒｒａｎｔｙ ７ 天") == search_terms("warranty 7 天")
