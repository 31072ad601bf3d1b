"""Answers to lessons 10-18's exercises from an audit with learner-like answers (session 50) that the checks passed
or told wrongly: lesson 16's windows that take a text of only spaces for an empty one. Each now fails, or fails
naming what it did, and each lesson's solution still passes."""

from __future__ import annotations

from tests.test_exercises import failure, passes
from tinyagent.checks import check_overlapping_windows


# -- 16, exercise 1 ----------------------------------------------------------------------------------
def windows(text, size, overlap):  # the solution's
    pieces, start = [], 0
    while start < len(text):
        pieces.append(text[start : start + size])
        if start + size >= len(text):
            break
        start += size - overlap
    return pieces


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
