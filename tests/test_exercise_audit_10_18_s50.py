"""Answers to lessons 10-18's exercises from an audit with learner-like answers (session 50) that the checks passed
or told wrongly: lesson 16's windows that take a text of only spaces for an empty one, and lesson 14's cut streams
whose failure named another mistake than theirs (a strip() at the end told as an empty piece taken for the end, a
reader that holds nothing back told only as one that stripped its stop strings). Each now fails, or fails naming
what it did, and each lesson's solution still passes."""

from __future__ import annotations

from tests.test_exercises import cut_stream, failure, passes, windows
from tinyagent.checks import check_cut_stream, check_overlapping_windows


# -- 16, exercise 1 ----------------------------------------------------------------------------------
def test_16_a_text_of_only_spaces_taken_for_an_empty_one_fails():
    def blank_is_empty(text, size, overlap):  # "an empty text has no windows", read as a blank one
        if not text.strip():
            return []
        return windows(text, size, overlap)

    said = failure(check_overlapping_windows, blank_is_empty)
    assert "got [] — a text of only spaces or line ends is not empty, and its windows are windows" in said, said
    assert passes(check_overlapping_windows, windows)


def test_16_windows_counted_before_they_are_cut_still_pass():
    def counted(text, size, overlap):  # another way: how many windows first, then each by its number
        if not text:
            return []
        step = size - overlap
        count = 1 if len(text) <= size else 1 + -(-(len(text) - size) // step)
        return [text[n * step : n * step + size] for n in range(count)]

    assert passes(check_overlapping_windows, counted)


# -- 14, exercise 1 ----------------------------------------------------------------------------------
def holds_nothing_back(pieces, stop):
    """A reader that looks for a stop string in the last piece and the one before, but lets every piece out whole
    as it comes."""
    before = ""
    for piece in pieces:
        text = before + piece
        found = [text.find(s) for s in stop if s in text]
        if found:
            yield text[len(before) : max(min(found), len(before))]
            return
        yield piece
        before = piece


def test_14_a_text_stripped_at_the_end_is_told_of_the_strip_not_of_an_empty_piece():
    def stripped_at_the_end(pieces, stop):
        yield "".join(cut_stream(pieces, stop)).rstrip()

    said = failure(check_cut_stream, stripped_at_the_end)
    assert "keep the text before the stop string as it is: no strip()" in said, said
    assert "an empty piece" not in said, said
    assert passes(check_cut_stream, cut_stream)


def test_14_a_reader_that_holds_nothing_back_is_told_so_too():
    said = failure(check_cut_stream, holds_nothing_back)
    assert "expected '好的。', got '好的。\\n\\n'" in said, said
    assert "it cut at 'User:', not at the stop string '\\n\\nUser:' (do not strip it)" in said, said
    assert "or let '\\n\\n' out too soon (hold it back)" in said, said
