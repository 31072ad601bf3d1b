"""`without_fence` (lesson 01's tools.py): the one reader of the Markdown code fence models wrap a tool's input in,
used by the shop's tools (01), typed tools and MCP tools (07, 24), the tolerant parser (11) and the classroom model.

Before it there were four, each with its own rules. Lesson 11's took the first word of a one-line fence for its
language, so `Final Answer: ```Your parcel is out for delivery.```` reached the customer as "parcel is out for
delivery."; the shop's dropped a tracking number's letters (```SF1234567890``` searched for 1234567890).
"""

from __future__ import annotations

import json
import time

import pytest

from tinyagent import Action, fixed_clock, parse_tolerant
from tinyagent.classroom.conversation import parse_action
from tinyagent.shop import Shop, shop_registry
from tinyagent.toolkit.action_input import read_arguments
from tinyagent.tools import without_fence

ORDER = '{"orderId": "88231"}'


@pytest.mark.parametrize(("text", "inside"), [
    ("```json\n" + ORDER + "\n```", ORDER),
    ("```\n88231\n```", "88231"),
    ("```JSON\n" + ORDER + "\n```", ORDER),
    ("```json5\n" + ORDER + "\n```", ORDER),  # any language word, digits too
    ("``` json \n" + ORDER + "\n```", ORDER),  # spaces around it
    ("```json\r\n" + ORDER + "\r\n```", ORDER),
    ("```c++\nx\n```", "x"),
    ("```json\n" + ORDER, ORDER),  # cut short: no closing fence
    ("```json", ""),  # cut right after the opening fence
    ("```", ""),
    ("``````", ""),
    ("```json\n```", ""),
    ("```88231```", "88231"),  # one line: a code span, no language in it
    ("```SF1234567890```", "SF1234567890"),
    ("```return policy```", "return policy"),
    ("```退货 政策```", "退货 政策"),
    ("```json " + ORDER + "```", ORDER),  # but a word before a JSON value is one
    ("```" + ORDER + "\n```", ORDER),  # an opening line holding more than a word: the first line inside
    ("```退货\n政策\n```", "退货\n政策"),  # a Chinese first line is no language word
    ("```88231\n```", "88231"),  # an id on the opening line is what the fence holds, not its language
    ("```88231", "88231"),
    ("```SF1234567890\n```", "SF1234567890"),
    ("```SF1234567890", "SF1234567890"),
    ("```python3\nx\n```", "x"),
    ("```json 88231```", "88231"),  # json before any JSON value
    ('```json "88231"```', '"88231"'),
    ("```SF 1234```", "SF 1234"),  # but only json before a number
    ("  \n```json\n  " + ORDER + "  \n```\n\n", ORDER),
    ('```json\n{"note": "a ``` inside"}\n```', '{"note": "a ``` inside"}'),
    # not read: text before the fence, another kind of fence
    ("Here:\n```\n88231\n```", "Here:\n```\n88231\n```"),
    ("~~~\n88231\n~~~", "~~~\n88231\n~~~"),
    ("88231", "88231"),
])
def test_what_a_fence_holds(text, inside):
    assert without_fence(text) == inside


@pytest.mark.parametrize("text", ["```" + " " * 200_000 + "x", "```" + "a" * 100_000 + " " * 100_000 + "b",
                                  "```json\n" + " \n" * 100_000 + "x", "```json" + " " * 200_000 + "{"])
def test_long_runs_are_read_in_a_moment(text):
    # Regexes once read these fences in cubic time (24 s for 4,000 spaces); 60 s only tells a hang from a busy box.
    started = time.monotonic()
    without_fence(text)
    assert time.monotonic() - started < 60


@pytest.fixture
def registry():
    return shop_registry(Shop(":memory:", clock=fixed_clock("2026-06-30T19:05:23")))


@pytest.mark.parametrize("fenced", ["```SF1234567890```", "```SF1234567890\n```", "```SF1234567890"])
def test_the_shop_keeps_a_tracking_numbers_letters(registry, fenced):
    found = json.loads(registry.execute(Action("queryLogistics", fenced)))
    assert found["trackingNo"] == "SF1234567890"


@pytest.mark.parametrize("fenced", ["```88231\n```", "```88231", "```json 88231```"])
def test_the_shop_reads_an_order_id_fenced_any_way(registry, fenced):
    assert json.loads(registry.execute(Action("queryOrder", fenced)))["orderId"] == "88231"


def test_the_shop_reads_an_order_fenced_on_one_line_with_its_language(registry):
    found = json.loads(registry.execute(Action("applyRefund", '```json {"orderId": "88231", "reason": "坏了"}```')))
    assert found["refundId"] == "RF202606300001"


@pytest.mark.parametrize(("reply", "answer"), [
    ("Final Answer: ```Your parcel is out for delivery.```", "Your parcel is out for delivery."),
    ("Final Answer: ```您的包裹已签收。```", "您的包裹已签收。"),
])
def test_a_one_line_fenced_answer_keeps_its_first_word(reply, answer):
    assert parse_tolerant(reply).final_answer == answer


@pytest.mark.parametrize(("tool_input", "read"), [("```88231```", "88231"), ("```SF1234567890```", "SF1234567890"),
                                                  ("```退货 政策```", "退货 政策")])
def test_the_tolerant_parser_passes_a_one_line_fenced_input_whole(tool_input, read):
    step = parse_tolerant(f"Thought: look it up.\nAction: queryOrder\nAction Input: {tool_input}")
    assert step.action == Action("queryOrder", read)


def test_a_typed_tool_reads_a_fence_cut_short_as_what_it_holds():
    schema = {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}
    assert read_arguments('```json\n{"order_id": "88231"}', schema) == {"order_id": "88231"}
    assert read_arguments('``` json\n{"order_id": "88231"}\n```', schema) == {"order_id": "88231"}


def test_the_classroom_reads_a_reply_wrapped_whole_in_a_fence():
    assert parse_action("```\nThought: look it up.\nAction: queryOrder\nAction Input: 88231\n```\n") == (
        "queryOrder", "88231")


@pytest.mark.parametrize("tool_input", ["```json\n" + ORDER + "\n```", "{\n  \"orderId\": \"88231\"\n}"])
def test_the_classroom_reads_an_input_that_starts_on_the_key_line_and_goes_on(tool_input):
    # It kept the key line only: "```json" read as "", "{" as "{", so an edited step asked for the tool again.
    tool, read = parse_action(f"Thought: look it up.\nAction: queryOrder\nAction Input: {tool_input}")
    assert (tool, json.loads(read)) == ("queryOrder", {"orderId": "88231"})
