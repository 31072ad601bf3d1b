"""The tolerant parser of lesson 11: every real failure shape read as it should be, the rules that
differ from the strict parser, the tool list used to settle a name, and two properties (hypothesis):
it never raises, and every well-formed step round-trips."""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinyagent import (
    Action,
    FunctionTool,
    ParsedStep,
    ToolRegistry,
    format_reminder,
    parse_step,
    parse_tolerant,
)
from tinyagent.robustness.reply_shapes import REPLY_SHAPES
from tinyagent.robustness.tolerant_parser import CUT_OFF, EMPTY_REPLY, NO_TOOL

SHOP = ["queryOrder", "queryLogistics", "applyRefund", "searchKnowledge", "getCurrentTime"]
REFUND_INPUT = '{"orderId":"88231","reason":"质量问题：扫地机不回充"}'
ORDER = Action("queryOrder", "88231")

# name -> (rule, action, final answer, error) with the shop's tools given
EXPECTED = {
    "well-formed": ("action", ORDER, None, None),
    "Markdown bold keys": ("action (Markdown around keys)", ORDER, None, None),
    "lower-case keys": ("action (key case)", Action("getCurrentTime", ""), None, None),
    "full-width colons": ("action (full-width colon)", Action("searchKnowledge", "扫地机 退货 政策"), None, None),
    "Action: inside the Thought": ("action", Action("applyRefund", REFUND_INPUT), None, None),
    "input in a code fence": ("action (code fence)", Action("applyRefund", REFUND_INPUT), None, None),
    "answer in a code fence": ("final_answer (code fence)", None, "Refund RF202606300001 has been submitted.", None),
    "whole reply in a fence": ("action (code fence)", ORDER, None, None),
    "Action: tool[arg]": ("action (tool[input])", ORDER, None, None),
    "Action 1: numbered": ("action (numbered keys)", ORDER, None, None),
    "tool name in backticks": ("action (marks around the tool name)", ORDER, None, None),
    "tool name + comment": ("action (comment after the tool name)", ORDER, None, None),
    "tool name in lower case": ("action (tool name case)", ORDER, None, None),
    "article 2: Reason / ActionInput": ("action (key spelling)", ORDER, None, None),
    "article 2: keys on one line": ("action (key spelling, keys on one line)", Action("applyRefund", REFUND_INPUT),
                                 None, None),
    "article 2: FinalAnswer": ("final_answer (key spelling, keys on one line)", None,
                            "退款申请已提交，退款单号 RF202606300001。", None),
    "JSON agent": ("action (code fence, JSON agent)", ORDER, None, None),
    "JSON agent: Final Answer": ("final_answer (JSON agent)", None, "Your parcel was signed for on 22 June.", None),
    "tool call as JSON": ("action (JSON agent)", Action("queryOrder", '{"orderId":"88231"}'), None, None),
    "CRLF line ends": ("final_answer (CRLF line ends)", None,
                       "Refund RF202606300001 is submitted.\nIt arrives in 1-3 working days.", None),
    "cut by max_tokens": ("format_error", None, None, CUT_OFF),
    "Action and Final Answer": ("action_over_final", Action("applyRefund", REFUND_INPUT), None, None),
    "invented Observation": ("action_over_final (invented Observation cut)", Action("applyRefund", REFUND_INPUT),
                             None, None),
    "Final Answer: in a Thought": ("action_over_final", ORDER, None, None),
    "Action: None": ("final_answer (empty Action ignored)", None, "Hello! How can I help?", None),
    "Thought only": ("format_error", None, None, "the reply has a Thought but no Action and no Final Answer"),
    "two steps in one reply": ("action (later steps dropped)", ORDER, None, None),
    "Chinese keys": ("action (Chinese keys, full-width colon)", ORDER, None, None),
    "plain prose": ("no_format", None, None, None),
    "empty reply": ("format_error", None, None, EMPTY_REPLY),
}


def test_every_shape_has_an_expectation():
    assert [shape.name for shape in REPLY_SHAPES] == list(EXPECTED)


@pytest.mark.parametrize("shape", REPLY_SHAPES, ids=[shape.name for shape in REPLY_SHAPES])
def test_each_real_failure_shape_parses_as_expected(shape):
    rule, action, final, error = EXPECTED[shape.name]
    step = parse_tolerant(shape.text, SHOP, shape.finish_reason)
    assert (step.rule, step.action, step.final_answer, step.error) == (rule, action, final, error)


def test_the_strict_parser_fails_on_most_of_them():
    """What lesson 11 is for: the strict parser misreads or gives up on these shapes."""
    wrong = []
    for shape in REPLY_SHAPES:
        strict, tolerant = parse_step(shape.text), parse_tolerant(shape.text, SHOP, shape.finish_reason)
        if (strict.action, strict.final_answer) != (tolerant.action, tolerant.final_answer):
            wrong.append(shape.name)
    assert "Markdown bold keys" in wrong and "Action and Final Answer" in wrong and "JSON agent" in wrong
    assert "well-formed" not in wrong and "plain prose" not in wrong
    assert len(wrong) >= 20


def test_thoughts_are_read_without_their_keys_and_marks():
    by_name = {shape.name: shape for shape in REPLY_SHAPES}
    for name in ("Markdown bold keys", "whole reply in a fence", "Action 1: numbered", "JSON agent"):
        assert parse_tolerant(by_name[name].text, SHOP).thought == "I need the order first.", name
    assert parse_tolerant(by_name["article 2: keys on one line"].text).thought == "签收第 8 天，可以退。"


# -- the Decision: an Action and a Final Answer in one reply ------------------------------------------
def test_action_beside_a_final_answer_runs_the_action_and_drops_the_answer():
    text = "Thought: x\nAction: queryOrder\nAction Input: 88231\nFinal Answer: It was signed for."
    step = parse_tolerant(text)
    assert step.rule == "action_over_final" and step.action == ORDER and step.final_answer is None
    assert parse_step(text).final_answer == "It was signed for."  # lesson 05 keeps the seed's choice


def test_a_final_answer_before_the_action_is_not_accepted_either():
    step = parse_tolerant("Thought: x\nFinal Answer: Refunded.\nAction: applyRefund\nAction Input: {}")
    assert step.rule == "action_over_final" and step.action == Action("applyRefund", "{}")


def test_action_word_inside_a_final_thought_does_not_make_an_action():
    text = "Thought: No need for another Action: applyRefund.\nFinal Answer: Done."
    step = parse_tolerant(text, SHOP)
    assert step.rule == "final_answer" and step.final_answer == "Done." and step.action is None


def test_a_final_answer_may_list_words_that_look_like_keys():
    text = "Thought: ok\nFinal Answer: Submitted.\n- Refund id: RF1\n- Reason: quality problem\nThought: kept"
    assert parse_tolerant(text).final_answer == "Submitted.\n- Refund id: RF1\n- Reason: quality problem\nThought: kept"


def test_an_input_may_hold_a_line_that_looks_like_a_weak_key():
    step = parse_tolerant("Thought: x\nAction: applyRefund\nAction Input: orderId: 88231\nreason: broken")
    assert step.action == Action("applyRefund", "orderId: 88231\nreason: broken")


def test_an_echoed_observation_before_the_step_is_skipped():
    step = parse_tolerant('Observation: {"a":1}\nThought: ok\nAction: queryOrder\nAction Input: 88231')
    assert step.action == ORDER and step.rule == "action (echoed Observation skipped)"


def test_the_first_complete_step_wins_over_a_thought_line_that_starts_with_action():
    text = ("Thought: The customer wants the parcel.\nAction: queryLogistics needs a number.\nAction: queryOrder\n"
            "Action Input: 88231")
    assert parse_tolerant(text, SHOP).action == ORDER
    assert parse_tolerant(text).action == ORDER


@pytest.mark.parametrize("first", ["Action: queryOrder[88231]", "Action: queryOrder(88231)",
                                   'Action: {"action": "queryOrder", "action_input": "88231"}',
                                   "Action: queryOrder ActionInput: 88231"])
@pytest.mark.parametrize("later", ['Action: applyRefund({"orderId":"88231"})',
                                   'Action: applyRefund\nAction Input: {"orderId":"88231"}'])
def test_a_step_whose_input_sits_beside_its_name_is_complete_and_wins_over_later_ones(first, later):
    # The refund rests on an order nobody has looked at yet: the first complete step runs, whatever its shape.
    step = parse_tolerant(f"Thought: Check the order, then refund.\n{first}\n{later}", SHOP)
    assert step.action == ORDER and "later steps dropped" in step.rule


@pytest.mark.parametrize(("reply", "tool_input"), [
    ("**Thought:** read it.\n**Action:** readFile\n**Action Input:** __init__.py", "__init__.py"),
    ("**Thought:** logs.\n**Action:** listFiles\n**Action Input:** *.log", "*.log"),
    ("**Thought: a bold key and value.**\n**Action: readFile**\n**Action Input: _notes_.md**", "_notes_.md"),
    ("Thought: quoted.\nAction: readFile\nAction Input: `a.md` or `b.md`", "`a.md` or `b.md`"),
    ("Thought: one span.\nAction: readFile\nAction Input: `a.md`", "a.md"),
])
def test_bold_keys_and_code_spans_come_off_the_value_and_nothing_else(reply, tool_input):
    assert parse_tolerant(reply).action == Action("readFile" if "readFile" in reply else "listFiles", tool_input)


@pytest.mark.parametrize(("reply", "answer"), [
    ("**Final Answer:** *Refund submitted*, in 1-3 days.", "*Refund submitted*, in 1-3 days."),
    ("Final Answer: `88231` is your order; the parcel is `SF1234567890`",
     "`88231` is your order; the parcel is `SF1234567890`"),
    ("Final Answer: Run this:\n```\npip install tinyagent\n```", "Run this:\n```\npip install tinyagent\n```"),
    ("Final Answer: ```\nYour parcel is out for delivery.\n```", "Your parcel is out for delivery."),
    ("Final Answer: ```\nYour parcel is out for delivery.", "Your parcel is out for delivery."),
])
def test_an_answer_keeps_its_own_markdown(reply, answer):
    # What the customer reads is changed only where a fence or a bold key was wrapped around the whole of it.
    assert parse_tolerant(reply).final_answer == answer


@pytest.mark.parametrize("space", ["\u00a0", "\u202f", "\u3000", " "])
def test_a_no_break_space_before_a_colon_is_a_space(space):
    # French typography puts one before a colon; without this the step fell to the fallback, notes and all.
    step = parse_tolerant(f"Thought{space}: je vérifie.\nAction{space}: queryOrder\nAction{space}Input{space}: 88231")
    assert step.action == ORDER and step.thought == "je vérifie."
    assert parse_tolerant(f"Thought{space}: c'est fait.\nFinal Answer{space}: Livré.").final_answer == "Livré."


# -- a reply cut by max_tokens --------------------------------------------------------------------------
def test_a_cut_reply_is_an_error_unless_its_step_was_complete():
    cut = "Thought: x\nAction: queryOrder\nAction Input: 882"
    assert parse_tolerant(cut, SHOP, "length").error == CUT_OFF
    assert parse_tolerant(cut, SHOP, "stop").action == Action("queryOrder", "882")  # the text alone looks fine
    # Cut inside an invented Observation (a server ignoring stop, with a small max_tokens): the step is whole.
    ran_on = "Thought: x\nAction: queryOrder\nAction Input: 88231\nObservation: {\"orderId\": \"88"
    assert parse_tolerant(ran_on, SHOP, "length").action == ORDER
    assert parse_tolerant("Thought: x\nFinal Answer: Your refund is", SHOP, "length").error == CUT_OFF
    assert parse_tolerant("", SHOP, "length").error == CUT_OFF
    assert parse_tolerant('{"action": "queryOrder", "action_input": "88231"}', SHOP, "length").action == ORDER


# -- errors and prose -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", EMPTY_REPLY),
        ("  \n\t", EMPTY_REPLY),
        ("Thought: hmm\nAction: None", NO_TOOL),
        ("Thought: hmm\nAction:\nAction Input: 88231", NO_TOOL),
        ("Action Input: 88231", "the reply has an Action Input but no Action line naming the tool"),
        ("Observation: {}", "the reply has only an Observation, and the tools write those, not you"),
        ("I think the Action: queryOrder is next.", "the reply has no Action and no Final Answer"),
        ("Thought: x\nFinal Answer:", "the Final Answer is empty"),
    ],
)
def test_a_botched_step_is_an_error_that_says_what_is_wrong(text, error):
    step = parse_tolerant(text, SHOP)
    assert step.error == error and step.rule.startswith("format_error")
    assert step.action is None and step.final_answer is None


def test_plain_prose_is_no_format_without_an_error():
    step = parse_tolerant("Your parcel was signed for on 22 June.", SHOP)
    assert step == ParsedStep("", None, None, "no_format")


# -- the tool list settles names --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("line", "without_tools", "with_tools", "repair"),
    [
        ("queryorder", "queryorder", "queryOrder", "tool name case"),
        ("QUERYORDER", "QUERYORDER", "queryOrder", "tool name case"),
        ("I will use the queryOrder tool", "I", "queryOrder", "tool name in a sentence"),
        ("I call `queryOrder` now", "queryOrder", "queryOrder", "tool name in a sentence"),
        ("**queryOrder**", "queryOrder", "queryOrder", "marks around the tool name"),
        ('"queryOrder"', "queryOrder", "queryOrder", "marks around the tool name"),
        ("toolName=queryOrder", "queryOrder", "queryOrder", "marks around the tool name"),
        ("queryOrder  # look it up", "queryOrder", "queryOrder", "comment after the tool name"),
        ("queryOrder.", "queryOrder", "queryOrder", None),
    ],
)
def test_tool_names_are_cleaned_and_matched_to_the_tool_list(line, without_tools, with_tools, repair):
    text = f"Thought: x\nAction: {line}\nAction Input: 88231"
    assert parse_tolerant(text).action.tool_name == without_tools
    step = parse_tolerant(text, SHOP)
    assert step.action == Action(with_tools, "88231")
    if repair:
        assert repair in step.rule


def test_an_unknown_name_is_kept_for_the_registry_to_refuse():
    text = "Thought: x\nAction: checkOrder\nAction Input: 88231"
    step = parse_tolerant(text, SHOP)
    assert step.action == Action("checkOrder", "88231") and step.rule == "action (unknown tool)"
    assert parse_tolerant(text).rule == "action"  # without a tool list nothing is unknown
    # Two known names in a sentence: no guess.
    two = parse_tolerant("Thought: x\nAction: queryOrder or queryLogistics?\nAction Input: 1", SHOP)
    assert two.action.tool_name == "queryOrder" and "comment after the tool name" in two.rule


def test_tools_may_be_names_tools_or_a_registry():
    tool = FunctionTool("queryOrder", "Look up an order.", lambda text: text)
    text = "Thought: x\nAction: QUERYORDER\nAction Input: 1"
    for tools in (["queryOrder"], [tool], ToolRegistry([tool]), "queryOrder", ("queryOrder",)):
        assert parse_tolerant(text, tools).action.tool_name == "queryOrder", tools
    for junk in (42, [None, 3, "two words"], b"queryOrder", object()):
        assert parse_tolerant(text, junk).action.tool_name == "QUERYORDER", junk


# -- the format reminder --------------------------------------------------------------------------------
def test_format_reminder_gives_the_problem_the_keys_and_the_tool_names():
    text = format_reminder("the reply is empty", SHOP)
    assert text.startswith("Format error: the reply is empty. Reply in exactly this format")
    for line in ("Thought: <", "Action: <one tool name: queryOrder, queryLogistics,", "Action Input: <",
                 "Final Answer: <"):
        assert line in text
    chinese = format_reminder("the reply is empty", SHOP, "zh")
    assert chinese.startswith("格式错误：the reply is empty\n") and "queryOrder、queryLogistics" in chinese
    assert "Action: <a tool" not in format_reminder("x") and "Action: <one tool name>" in format_reminder("x")


# -- compatibility with lesson 05 -------------------------------------------------------------------------
def test_parsed_step_prints_as_before_and_shows_an_error_only_when_there_is_one():
    assert repr(parse_step("Thought: t\nAction: queryOrder\nAction Input: 1")) == (
        "ParsedStep(thought='t', action=Action(tool_name='queryOrder', tool_input='1'), final_answer=None, "
        "rule='action')"
    )
    assert repr(parse_tolerant("")).endswith("rule='format_error', error='the reply is empty')")
    assert ParsedStep("t", None, "a", "final_answer").error is None


# -- properties -------------------------------------------------------------------------------------------
FRAGMENTS = st.sampled_from([
    "Thought:", "Action:", "Action Input:", "Final Answer:", "Observation:", "ActionInput:", "Reason:",
    "FinalAnswer:", "Action 1:", "思考：", "行动：", "**", "```", "```json", "`", "：", ":", "\n", "\r\n", "\r",
    " ", "{", "}", "[", "]", "(", ")", '"', "queryOrder", "None", "none", "<tool_call>",
    '{"action": "queryOrder", "action_input": {"orderId": 1}}', '{"name": "q", "arguments": "{}"}',
    '{"action": "Final Answer", "action_input": 3}', "\ud800",
])
REPLIES = st.lists(FRAGMENTS | st.text(max_size=8), max_size=40).map("".join) | st.text()
TOOL_LISTS = (
    st.none() | st.text(max_size=10) | st.integers()
    | st.lists(st.text(max_size=10) | st.integers() | st.none() | st.sampled_from(SHOP), max_size=5)
)
FINISH_REASONS = st.none() | st.sampled_from(["stop", "length", "tool_calls"]) | st.text(max_size=6) | st.integers()


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(REPLIES, TOOL_LISTS, FINISH_REASONS)
def test_never_raises_and_always_returns_a_coherent_step(text, tools, finish_reason):
    step = parse_tolerant(text, tools, finish_reason)
    assert isinstance(step, ParsedStep) and isinstance(step.rule, str) and step.rule
    assert isinstance(step.thought, str)
    assert step.action is None or step.final_answer is None
    if step.error is not None:
        assert step.rule.startswith("format_error") and step.action is None and step.final_answer is None
    if step.action is not None:
        name = step.action.tool_name
        assert name.strip() and not any(ch.isspace() for ch in name)
        assert isinstance(step.action.tool_input, str)
    repr(step)


# A well-formed step: values with no colon (so no line can start a key), no backtick (no fence), no
# line break inside a line, and no space at either end of a line (the parser strips them).
_LINE = st.text(
    st.characters(exclude_categories=("Cc", "Cs", "Zl", "Zp"), exclude_characters=":：`"), min_size=1, max_size=20
).map(str.strip).filter(bool)
_VALUE = st.lists(_LINE, min_size=1, max_size=3).map("\n".join)
_NAME = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,15}", fullmatch=True).filter(
    lambda name: name.lower() not in {"none", "null", "nil", "na", "no", "nothing", "finalanswer", "final_answer"}
)


@settings(max_examples=300, deadline=None)
@given(_VALUE, _NAME, _VALUE | st.just(""), st.booleans())
def test_a_well_formed_action_round_trips(thought, tool, tool_input, with_tools):
    text = f"Thought: {thought}\nAction: {tool}\nAction Input: {tool_input}\n"
    step = parse_tolerant(text, [tool, "other"] if with_tools else None)
    assert step == ParsedStep(thought, Action(tool, tool_input), None, "action")
    assert step == parse_step(text)  # and it agrees with lesson 05's parser


@settings(max_examples=300, deadline=None)
@given(_VALUE, _VALUE)
def test_a_well_formed_final_answer_round_trips(thought, answer):
    text = f"Thought: {thought}\nFinal Answer: {answer}"
    step = parse_tolerant(text, SHOP)
    assert step == ParsedStep(thought, None, answer, "final_answer")
    assert step == parse_step(text)


def test_brackets_that_close_on_a_later_line_hold_the_whole_input():
    # lesson 11's exercise 1: the input runs from the first "[" to the last "]", over several lines if it must
    reply = 'Thought: 可以退款。\nAction: applyRefund[{"orderId": "88231",\n  "reason": "不回充 [质量问题]"}]'
    step = parse_tolerant(reply)
    assert step.action == Action("applyRefund", '{"orderId": "88231",\n  "reason": "不回充 [质量问题]"}')
    assert parse_tolerant("Action: queryOrder\n88231").action == Action("queryOrder", "88231")  # no brackets: as before


@pytest.mark.parametrize("reply", [" " * 100_000 + "x", "Action" + " " * 100_000 + "x", "x" + "Action:" * 50_000,
                                   "**" + " \t" * 50_000 + "Action", "Final Answer: ```\nok" + " " * 200_000 + ".",
                                   "Thought: a\nObservation: b\n" * 100_000])
def test_a_long_degenerate_line_does_not_hang_the_parser(reply):
    # A looping model writes such lines. The regexes once backtracked over every split of a run, so the time grew
    # with the square of the length: 16,000 spaces took 8 s, so these (100,000; 350,000 characters) took minutes.
    # Now milliseconds; 60 s only tells a hang from a loaded machine, it measures nothing.
    started = time.monotonic()
    parse_tolerant(reply)
    assert time.monotonic() - started < 60
