"""Wrong answers to lessons 01, 03 and 04's exercises that an audit found passing, or failing with a message that
named another mistake: each now fails and says what is wrong, and each lesson's solution still passes."""

from __future__ import annotations

import re
import unicodedata

import pytest

from tests.test_exercises import (
    LOGISTICS,
    ORDER_88231,
    count_invented_observations,
    failure,
    passes,
    pretended_tools,
    to_json,
)
from tinyagent import LlmClient, Tool, build_system_prompt
from tinyagent.checks import (
    check_forgiving_query_order,
    check_invented_counter,
    check_pretended_calls,
    check_prompt_share,
    check_toy_logistics_tool,
)
from tinyagent.shop import Shop, shop_registry


# -- 01 ---------------------------------------------------------------------------------------------
class QueryLogisticsTool(Tool):  # 01, exercise 1's solution
    name = "queryLogistics"
    description = "Track a parcel. Input: the tracking number, e.g. SF1234567890. Returns JSON with its events."

    def number(self, input: str) -> str:
        return input.strip()

    def invoke(self, input: str) -> str:
        number = self.number(input)
        return to_json(LOGISTICS) if number == "SF1234567890" else to_json({"error": f"运单不存在：{number}"})


def test_01_a_full_width_tracking_number_is_another_number():
    class Normalised(QueryLogisticsTool):  # NFKC first: ＳＦ１２３４５６７８９０ read as SF1234567890, got the parcel
        def number(self, input):
            return unicodedata.normalize("NFKC", input).strip()

    said = failure(check_toy_logistics_tool, Normalised)
    assert "in another case, full-width or with spaces inside" in said, said
    assert "full-width characters are other ones; do not normalise (NFKC)" in said, said
    assert passes(check_toy_logistics_tool, QueryLogisticsTool)


def test_01_the_number_is_stripped_of_all_the_whitespace_strip_takes():
    class SomeWhitespace(QueryLogisticsTool):  # the spec says "as strip() takes them": \u3000 and \f are whitespace
        def number(self, input):
            return input.strip(" \t\r\n")

    said = failure(check_toy_logistics_tool, SomeWhitespace)
    assert "also with stray whitespace around it (all that strip() takes" in said, said
    assert "strip() with no argument takes all the whitespace around it: '\\u3000' too" in said, said
    assert passes(check_toy_logistics_tool, QueryLogisticsTool)


class ForgivingQueryOrderTool(Tool):  # 01, exercise 2's solution on the lesson's toy
    name = "queryOrder"
    description = "Look up an order. Input: the order id, e.g. 88231. Returns JSON with the order's details."
    hint = "订单号数字，如 88231"

    def invoke(self, input: str) -> str:
        digits = re.search(r"\d+", input)
        if digits is None:
            return to_json({"error": "请提供订单号（an order id is needed）", "expected": self.hint})
        if digits.group() == "88231":
            return to_json(ORDER_88231)
        return to_json({"error": f"订单不存在：{digits.group()}"})


@pytest.mark.parametrize("hint", [True, ["88231"], 88231], ids=["True", "a list", "a number"])
def test_01_an_expected_hint_is_a_text(hint):
    class NoTextHint(ForgivingQueryOrderTool):
        pass

    NoTextHint.hint = hint
    said = failure(check_forgiving_query_order, NoTextHint)
    assert 'with an "expected" hint (a text, not empty)' in said, said
    assert f'Its "expected" hint is {hint!r}: a hint is a text that says what to send' in said, said
    assert passes(check_forgiving_query_order, ForgivingQueryOrderTool)


# -- 03 ---------------------------------------------------------------------------------------------
def test_03_a_system_message_removed_from_the_lessons_list_is_named():
    llm = LlmClient.classroom()
    messages = [
        {"role": "system", "content": build_system_prompt(shop_registry(Shop(":memory:")), "zh")},
        {"role": "user", "content": "我上周买的扫地机不回充了，修不好我想退。订单号 88231。"},
    ]
    with_prompt = llm.chat(messages).usage["prompt_tokens"]
    whole = list(messages)
    messages.pop(0)  # the learner's way to send it without the prompt: the lesson's list itself loses it
    without_prompt = llm.chat(messages).usage["prompt_tokens"]
    share = (with_prompt - without_prompt) / with_prompt
    said = failure(check_prompt_share, share, llm, messages)
    assert "they have lost their system message, so your code removed it from the list itself" in said, said
    assert "send messages[1:] (a new list)" in said, said
    assert passes(check_prompt_share, share, llm, whole)


# -- 04 ---------------------------------------------------------------------------------------------
def test_04_a_count_of_none_is_not_blamed_on_lines_one_after_another():
    def no_multiline(text):  # ^ without re.MULTILINE: only the text's start
        return len(re.findall(r"^\s*Observation:", text))

    def paragraphs(text):  # split on blank lines: only a paragraph's start
        return sum(paragraph.strip().startswith("Observation:") for paragraph in text.split("\n\n"))

    for counts_none in (no_multiline, paragraphs):
        said = failure(check_invented_counter, counts_none)
        assert "expected 2, got 0 (it counted none of the 2 lines that start with `Observation:`" in said, said
        assert "read every line" in said and "one after another" not in said, said

    def adjacent_once(text):  # the mistake the hint on lines one after another is for still gets it
        return len(re.findall(r"(?:^[ \t]*Observation:.*(?:\n|$))+", text, re.MULTILINE))

    assert "Observation lines one after another count one each" in failure(check_invented_counter, adjacent_once)
    assert passes(check_invented_counter, count_invented_observations)


SKIPPED = ["getCurrentTime", "searchKnowledge"]


def test_04_a_name_left_unstripped_is_told_to_strip_both_sides():
    def right_only(text):  # the space after the colon stays: ' queryOrder'
        return [line.strip()[len("Action:"):].rstrip() for line in text.splitlines()
                if line.strip().startswith("Action:")]

    def left_only(text):  # the spaces after the name stay: 'queryOrder   '
        return [line.lstrip()[len("Action:"):].lstrip() for line in text.split("\n")
                if line.lstrip().startswith("Action:")]

    for unstripped, shown in ((right_only, r"' (\w+)' is '\1'"), (left_only, r"'(\w+) +' is '\1'")):
        said = failure(check_pretended_calls, unstripped, SKIPPED)
        assert re.search(rf"\(a name is stripped of the spaces around it, on both sides: {shown}\)", said), said
    assert passes(check_pretended_calls, pretended_tools, SKIPPED)


def test_04_skipped_names_each_tool_once():
    said = failure(check_pretended_calls, pretended_tools, ["getCurrentTime", "getCurrentTime", "searchKnowledge"])
    assert "names a tool more than once: the invented run skipped two tools" in said, said
    assert passes(check_pretended_calls, pretended_tools, SKIPPED)
    assert passes(check_pretended_calls, pretended_tools, {"searchKnowledge", "getCurrentTime"})
    assert passes(check_pretended_calls, pretended_tools, ("getCurrentTime", "searchKnowledge "))
