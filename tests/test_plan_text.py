"""plan_text.py: a planner's reply read as numbered steps, robustly; anything else is a PlanError, never a crash."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyagent.architectures.plan_text import MAX_PLAN_STEPS, PlanError, format_plan, parse_plan


@pytest.mark.parametrize("text, steps", [
    ("1. 查询订单 88231 的物流\n2. 查询订单 88232 的物流\n3. 查询售后政策",
     ["查询订单 88231 的物流", "查询订单 88232 的物流", "查询售后政策"]),
    ("Here is my plan:\n\n1) Look up order 88231\n2) Track its parcel\n\nThat's all.",
     ["Look up order 88231", "Track its parcel"]),
    ("**1.** **Look up order 88231**\n**2.** Search the policy", ["Look up order 88231", "Search the policy"]),
    ("Step 1: look up the order\nStep 2: answer", ["look up the order", "answer"]),
    ("第1步：查订单\n第2步：查物流", ["查订单", "查物流"]),
    ("1、查订单\n2、查物流", ["查订单", "查物流"]),
    ("１．查订单\n２．查物流", ["查订单", "查物流"]),  # full-width digits and stop, as a Chinese keyboard types them
    ("- 1. `queryOrder` for 88231\n- 2. queryLogistics", ["queryOrder for 88231", "queryLogistics"]),
    ("1. Look up order 88231,\n   then note its tracking number\n2. Track it",
     ["Look up order 88231, then note its tracking number", "Track it"]),
    ("1. a\n2. b\n\nSummary:\n1. a again", ["a", "b"]),
    ("In 2026 we ship fast.\n1. Look up the order", ["Look up the order"]),
])
def test_numbered_steps_are_read_whatever_wraps_them(text, steps):
    assert parse_plan(text) == steps


@pytest.mark.parametrize("text, says", [
    ("", "no numbered steps"),
    ("I will look up both orders and then answer.", "no numbered steps"),
    ("1.\n2. Track it", "step 1 is empty"),
    ("\n".join(f"{n}. step {n}" for n in range(1, MAX_PLAN_STEPS + 2)), f"more than {MAX_PLAN_STEPS}"),
])
def test_an_unusable_plan_is_a_plan_error_that_says_what_to_write(text, says):
    with pytest.raises(PlanError, match=says) as caught:
        parse_plan(text)
    assert "\n" not in str(caught.value)


def test_nothing_left_is_the_empty_plan_only_when_allowed():
    assert parse_plan("No further steps.", allow_empty=True) == []
    assert parse_plan("没有后续步骤。", allow_empty=True) == []
    with pytest.raises(PlanError):
        parse_plan("No further steps.")


def test_a_plan_that_is_not_text_is_a_plan_error():
    with pytest.raises(PlanError, match="must be text"):
        parse_plan(None)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_arbitrary_text_never_raises_anything_but_plan_error(text):
    try:
        steps = parse_plan(text)
    except PlanError:
        return
    assert 1 <= len(steps) <= MAX_PLAN_STEPS and all(isinstance(s, str) and s for s in steps)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), min_size=1)
                .map(str.strip).filter(lambda s: s and "*" not in s and "_" not in s and "`" not in s),
                min_size=1, max_size=MAX_PLAN_STEPS))
def test_a_written_plan_reads_back_as_itself(steps):
    assert parse_plan(format_plan(steps)) == steps


@pytest.mark.parametrize("text", [
    "1" + " " * 200_000 + "x",  # spaces between the number and the text, where the mark should be
    " " * 200_000 + "x",  # spaces before the number
    "1." + " " * 200_000 + "x\n2. " + " " * 200_000,
    "**" + " " * 200_000 + "1",
    "第" + " " * 200_000 + "1" + " " * 200_000 + "步" + " " * 200_000,
])
def test_a_plan_padded_with_spaces_is_read_in_linear_time(text):
    # Before, the runs of spaces were split every way between the pattern's \s*: a 2,000-space line took 15 s
    # and 200,000 spaces would take hours. 60 s tells a hang from a slow machine.
    started = time.perf_counter()
    try:
        parse_plan(text)
    except PlanError:
        pass
    assert time.perf_counter() - started < 60


def test_nothing_left_padded_with_spaces_is_read_in_linear_time():
    started = time.perf_counter()
    with pytest.raises(PlanError):
        parse_plan("none" + " " * 200_000 + "x", allow_empty=True)
    assert parse_plan("none" + " " * 200_000 + ".", allow_empty=True) == []
    assert time.perf_counter() - started < 60


def test_a_step_wrapped_over_many_lines_is_read_in_linear_time():
    started = time.perf_counter()
    assert parse_plan("1. a\n" + "x\n" * 200_000) == ["a" + " x" * 200_000]
    assert time.perf_counter() - started < 60


@pytest.mark.parametrize("text", [
    "1.5 kg parcel: where is it\n2. look up 88231",
    "1:30 pm call the courier\n2. look up the order",
    "1.88231 的物流",
])
def test_a_number_with_a_digit_after_its_mark_starts_no_step(text):
    with pytest.raises(PlanError, match="no numbered steps"):
        parse_plan(text)


def test_a_decimal_or_a_time_inside_a_plan_continues_its_step():
    assert parse_plan("1. Weigh the parcel:\n1.5 kg\n2. Call at\n1:30 pm") == ["Weigh the parcel: 1.5 kg", "Call at 1:30 pm"]


@pytest.mark.parametrize("text, says", [
    ("1. look up 88231\n1. look up 88232\n2. policy", "step 1 follows step 1"),
    ("1. a\n2. b\n2. c\n3. d", "step 2 follows step 2"),
    ("1. a\n   wrapped\n1. b", "step 1 follows step 1"),
    ("1. a\n3. b\n2. c", "step 2 follows step 3"),
])
def test_a_number_that_does_not_go_up_right_after_a_step_is_a_plan_error(text, says):
    with pytest.raises(PlanError, match=says) as caught:
        parse_plan(text)
    assert "1, 2, 3" in str(caught.value) and "\n" not in str(caught.value)


def test_a_number_that_does_not_go_up_after_a_blank_line_ends_the_list():
    assert parse_plan("1. a\n2. b\n\n1. a again") == ["a", "b"]
    assert parse_plan("1. a\n2. b\n\nSummary:\n1. a again") == ["a", "b"]
