"""Cutting documents into chunks (tinyagent/shop/chunking.py): headings first, then size with overlap."""

import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyagent.shop.chunking import (
    Chunk,
    Section,
    chunk_document,
    heading_of,
    markdown_sections,
    split_spans,
    split_text,
    text_sections,
)

POLICY = """# 退换货政策

本政策适用于全部商品。

## 七天无理由退货

### 适用条件

签收次日起 7 天内可以无理由退货。

### 运费

寄回运费由买家承担。

## 质量问题退换货

签收次日起 15 天内出现故障可以退换。
"""


# -- headings ------------------------------------------------------------------------------------------
def test_the_leading_h1_is_the_title_and_each_section_keeps_its_heading_path():
    title, sections = markdown_sections(POLICY)
    assert title == "退换货政策"
    assert sections == [
        Section((), "本政策适用于全部商品。"),
        Section(("七天无理由退货", "适用条件"), "签收次日起 7 天内可以无理由退货。"),
        Section(("七天无理由退货", "运费"), "寄回运费由买家承担。"),
        Section(("质量问题退换货",), "签收次日起 15 天内出现故障可以退换。"),
    ]


def test_a_heading_with_no_text_of_its_own_stays_in_the_paths_below_it():
    _, sections = markdown_sections(POLICY)
    assert all(section.path != ("七天无理由退货",) for section in sections)  # nothing directly under it


def test_a_shallower_heading_closes_the_deeper_ones():
    _, sections = markdown_sections("## A\n\na\n\n#### B\n\nb\n\n### C\n\nc\n\n## D\n\nd")
    assert [section.path for section in sections] == [("A",), ("A", "B"), ("A", "C"), ("D",)]


def test_hash_lines_inside_a_code_fence_are_not_headings():
    text = "# Doc\n\n## Setup\n\n```bash\n# install it\npip install x\n```\n\n~~~\n## not a heading\n~~~\n"
    title, sections = markdown_sections(text)
    assert title == "Doc"
    assert [section.path for section in sections] == [("Setup",)]
    assert "# install it" in sections[0].text and "## not a heading" in sections[0].text


def test_closing_hashes_and_indentation_up_to_three_spaces_are_headings_but_hashtags_are_not():
    _, sections = markdown_sections("   ## Returns ##\n\ntext\n\n#hashtag is text\n\n    ## four spaces is code")
    assert sections == [Section(("Returns",), "text\n\n#hashtag is text\n\n    ## four spaces is code")]


# The heading rule as one regular expression, as chunking.py once read it: right, but a line of 32,000 spaces after
# a "#" took it 7 s (its lazy text and optional closing #s tried every split). heading_of reads the same by hand.
SLOW_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet="# \ta期C", max_size=14))
def test_heading_of_reads_a_line_as_the_heading_rule_does(line):
    found = SLOW_HEADING.match(line)
    assert heading_of(line) == (None if found is None else (len(found.group(1)), found.group(2).strip()))


def test_a_heading_padded_with_spaces_is_read_whole():
    assert heading_of("# a" + " " * 32_000 + "x ##") == (1, "a" + " " * 32_000 + "x")
    assert heading_of("## C#") == (2, "C#") and heading_of("# #") == (1, "#")


def test_a_document_without_an_h1_has_no_title_and_a_later_h1_is_a_section():
    title, sections = markdown_sections("## First\n\none\n\n# Second\n\ntwo")
    assert title is None
    assert [section.path for section in sections] == [("First",), ("Second",)]


def test_text_above_the_title_is_kept_as_a_section_without_a_path():
    title, sections = markdown_sections("Draft, do not publish.\n\n# Policy\n\nBody.")
    assert title == "Policy"
    assert sections == [Section((), "Draft, do not publish."), Section((), "Body.")]


def test_plain_text_takes_its_first_line_as_title_only_when_a_blank_line_follows():
    assert text_sections("Service hours\n\nOpen 9 to 21.\n\nClosed never.") == (
        "Service hours", [Section((), "Open 9 to 21.\n\nClosed never.")])
    assert text_sections("Open 9 to 21.\nClosed never.") == (None, [Section((), "Open 9 to 21.\nClosed never.")])


# -- size and overlap ----------------------------------------------------------------------------------
CJK = "签收次日起七天内商品完好配件齐全不影响二次销售可以申请无理由退货开封试用不影响退货人为损坏的商品不适用"


def test_chinese_without_punctuation_is_cut_at_the_size_with_exactly_the_overlap():
    pieces = split_text(CJK, size=20, overlap=5)
    assert all(len(piece) <= 20 for piece in pieces)
    assert pieces[0] == CJK[:20]
    for before, after in itertools.pairwise(pieces):
        assert after[:5] == before[-5:]  # the last five characters come again
    assert pieces[-1].endswith("商品不适用")


def test_without_overlap_the_pieces_put_back_together_are_the_text():
    spans = split_spans(CJK, size=20, overlap=0)
    assert "".join(CJK[start:end] for start, end in spans) == CJK
    assert all(end == start_next for (_, end), (start_next, _) in itertools.pairwise(spans))


def test_a_cut_goes_after_a_sentence_end_rather_than_mid_sentence():
    text = "签收次日起 7 天内可以无理由退货。寄回运费由买家承担，运费险可以抵扣一部分。质量问题的往返运费由商家承担。"
    pieces = split_text(text, size=40, overlap=0)
    assert pieces[0] == "签收次日起 7 天内可以无理由退货。寄回运费由买家承担，运费险可以抵扣一部分。"
    assert all(piece.endswith("。") for piece in pieces)


def test_english_is_cut_between_words_and_the_overlap_starts_at_a_word():
    text = " ".join(f"word{i}" for i in range(40))
    pieces = split_text(text, size=50, overlap=12)
    words = set(text.split())
    for piece in pieces:
        assert len(piece) <= 50
        assert set(piece.split()) <= words  # no word was cut in two
    for before, after in itertools.pairwise(pieces):
        shared = after.split()[0]
        assert shared in before.split()  # the overlap repeats whole words


def test_the_overlap_starts_at_the_next_sentence_when_one_begins_inside_it():
    text = "First sentence here, long enough. Second sentence follows it. Third one ends the text here."
    first, second, *_ = split_text(text, size=70, overlap=30)
    assert first == "First sentence here, long enough. Second sentence follows it."
    assert second.startswith("Second sentence")


def test_a_cut_is_never_earlier_than_half_the_size():
    text = "短句。" + "没有标点的很长一段文字" * 6
    spans = split_spans(text, size=30, overlap=0)
    assert spans[0][1] - spans[0][0] >= 15


def test_a_short_text_is_one_piece():
    assert split_spans("短文本", size=20, overlap=5) == [(0, 3)]


@pytest.mark.parametrize("size, overlap", [(10, 0), (0, 0), (100, 60), (100, -1), (100.0, 10), (True, 0), (100, 1.5)])
def test_sizes_that_make_no_sense_are_refused(size, overlap):
    with pytest.raises(ValueError, match="chunk size|overlap"):
        split_spans(CJK, size, overlap)


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from(list("退货政策签收天内。，；！ \nabcXYZ.,;!?  19")), max_size=400),
    size=st.integers(20, 120),
    data=st.data(),
)
def test_any_text_is_covered_by_pieces_no_longer_than_the_size_that_overlap_as_stated(text, size, data):
    overlap = data.draw(st.integers(0, size // 2))
    spans = split_spans(text, size, overlap)
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    for start, end in spans:
        assert 0 < end - start <= size or len(text) == 0
    for (start, end), (next_start, next_end) in itertools.pairwise(spans):
        assert start < next_start <= end  # always forward, never a gap
        assert end - next_start <= overlap  # never more than the stated overlap
        assert next_end > end  # every piece adds new text


# -- chunks --------------------------------------------------------------------------------------------
def test_chunks_carry_document_title_section_and_position():
    chunks = chunk_document("zh/returns.md", POLICY)
    assert chunks[1] == Chunk("zh/returns.md", "退换货政策", ("七天无理由退货", "适用条件"), 2,
                              "签收次日起 7 天内可以无理由退货。")
    assert [chunk.position for chunk in chunks] == [1, 2, 3, 4]
    assert chunks[1].heading == "七天无理由退货 › 适用条件"
    assert chunks[0].heading == ""


def test_a_long_section_becomes_several_chunks_that_all_keep_its_heading():
    long = "## 质量问题\n\n" + "签收次日起十五天内出现性能故障的属于质量问题经检测确认后可以退货也可以换货" * 4
    chunks = chunk_document("q.md", long, size=40, overlap=10)
    assert len(chunks) > 3
    assert {chunk.section for chunk in chunks} == {("质量问题",)}
    assert all(len(chunk.text) <= 40 for chunk in chunks)


def test_no_chunk_spans_two_sections():
    chunks = chunk_document("zh/returns.md", POLICY, size=20, overlap=5)
    for chunk in chunks:
        assert not ("7 天" in chunk.text and "买家" in chunk.text)


def test_the_title_falls_back_to_the_file_name_and_can_be_given():
    assert chunk_document("notes/after-sales.md", "## A\n\ntext")[0].title == "after-sales"
    assert chunk_document("notes/after-sales.md", "# Stated\n\ntext", title="Given")[0].title == "Given"
    assert chunk_document("hours.txt", "Hours\n\nOpen 9 to 21.", kind="text")[0].title == "Hours"


def test_windows_line_ends_do_not_hide_headings():
    chunks = chunk_document("w.md", "# Title\r\n\r\n## Section\r\n\r\nText.\r\n")
    assert [(chunk.title, chunk.section, chunk.text) for chunk in chunks] == [("Title", ("Section",), "Text.")]


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="markdown"):
        chunk_document("a.html", "<p>x</p>", kind="html")


def test_a_small_size_with_the_default_overlap_says_the_overlap_was_the_default():
    with pytest.raises(ValueError, match=r"half the chunk size \(75\); got 80 \(the default, 80: give a smaller"):
        split_text(CJK, size=150)  # the caller gave no overlap: the message says where the 80 came from
    with pytest.raises(ValueError, match=r"got 90$"):
        split_text(CJK, size=150, overlap=90)
