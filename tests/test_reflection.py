"""reflection.py: a draft checked against the run's Observations; a contradicted one is revised; a check that
cannot be read or made leaves the draft standing."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyagent import LlmClient, ReActAgent
from tinyagent.architectures.reflection import Reflected, ReflectingAgent, read_verdict, reflection_messages
from tinyagent.events import Final, Observation

from .lesson17_helpers import ScriptedLlm, SlippingLlm, down, shop_tools

DRAFT = "Order 88231 is on its way."


@pytest.fixture(scope="module")
def llm():
    return LlmClient.classroom()


@pytest.mark.parametrize("reply, verdict, answer, problems", [
    ("Verdict: ok", "ok", DRAFT, ()),
    ("**Verdict:** OK.", "ok", DRAFT, ()),
    ("结论：通过", "ok", DRAFT, ()),
    ("Verdict: revise\nProblems:\n- it was signed for\nRevised answer: Order 88231 was signed for.",
     "revise", "Order 88231 was signed for.", ("it was signed for",)),
    ("结论：需修改\n问题：\n- 状态不对\n修改后的答复：订单 88231 已签收。", "revise", "订单 88231 已签收。", ("状态不对",)),
    ("Verdict: revise\nProblems: wrong status\nRevised answer:\nLine one.\nLine two.", "revise",
     "Line one.\nLine two.", ("wrong status",)),
    ("Looks fine to me!", "unchecked", DRAFT, ("the check's reply has no 'Verdict:' line",)),
    ("Verdict: maybe", "unchecked", DRAFT, ("unknown verdict 'maybe'",)),
    # the label's Markdown is no part of the answer; a word is a whole word ("correction" is not "correct"): these
    # two say revise, and wrote no revised answer
    ("Verdict: revise\n**Revised answer:** Order 88231 was signed for.", "revise", "Order 88231 was signed for.", ()),
    ("Verdict: correction needed", "unchecked", DRAFT, ("the check asked for a revision but wrote no revised answer",)),
    ("Verdict: okay-ish, but wrong", "unchecked", DRAFT,
     ("the check asked for a revision but wrote no revised answer",)),
    ("结论：通过了", "ok", DRAFT, ()),
])
def test_the_check_s_reply_is_read_leniently(reply, verdict, answer, problems):
    got = read_verdict(reply, DRAFT)
    assert (got.verdict, got.answer, got.problems) == (verdict, answer, problems)


REVISION = "\nProblems:\n- it was signed for\nRevised answer: Order 88231 was signed for."
REVISION_ZH = "\n问题：\n- 状态不对\n修改后的答复：订单 88231 已签收。"


@pytest.mark.parametrize("verdict", [
    # an ok word beside a revise word or a negation: read as revise, never as ok
    "Verdict: OK -> revise", "Verdict: ok, but revise", "Verdict: pass? no - revise", "Verdict: not ok",
    "Verdict: isn't ok", "结论：通过不了", "结论：无误？不，有误", "结论：正确与否：错误",
    # the ordinary ways to say revise
    "Verdict: fail", "Verdict: failed", "Verdict: needs revision", "Verdict: fix needed", "Verdict: wrong",
    "结论：不通过", "结论：有误",
])
def test_a_verdict_that_holds_a_revise_word_or_a_negation_is_revise(verdict):
    # each was read as ok (the problems dropped, the wrong draft sent) or as an unknown verdict
    got = read_verdict(verdict + (REVISION_ZH if verdict.startswith("结论") else REVISION), DRAFT)
    assert got.verdict == "revise" and got.answer in ("Order 88231 was signed for.", "订单 88231 已签收。")
    assert got.problems in (("it was signed for",), ("状态不对",))


@pytest.mark.parametrize("verdict", ["Verdict: correct the status", "Verdict: correct it as below",
                                     "Verdict: ok, the draft matches", "结论：通过，但金额要再看"])
def test_an_ok_word_with_more_words_beside_it_is_not_ok(verdict):
    # "correct the status" was read as ok: an ok word is ok only alone
    got = read_verdict(verdict + REVISION, DRAFT)
    assert got.verdict == "unchecked" and got.answer == DRAFT


@pytest.mark.parametrize("verdict", ["Verdict: ok", "**Verdict:** OK.", "Verdict: Passed!", "结论：没问题",
                                     "结论：无误。", "结论：通过了", "> **Verdict**: *correct*"])
def test_an_ok_word_alone_is_ok(verdict):
    assert read_verdict(verdict, DRAFT) == read_verdict("Verdict: ok", DRAFT)
    assert read_verdict(verdict, DRAFT).verdict == "ok"


def test_verdicts_that_do_not_agree_leave_the_draft():
    got = read_verdict("Verdict: ok\nVerdict: revise" + REVISION, DRAFT)
    assert got.verdict == "unchecked" and got.answer == DRAFT and "do not agree" in got.problems[0]


def test_a_revised_answer_stops_at_the_next_label_line():
    # the template's second line "Verdict: ok" was given to the customer as the answer
    got = read_verdict("Verdict: revise\nProblems:\n- x\nRevised answer:\nVerdict: revise", DRAFT)
    assert got.verdict == "unchecked" and got.answer == DRAFT
    got = read_verdict("Verdict: revise\nRevised answer: Order 88231 was signed for.\nProblems:\n- x", DRAFT)
    assert (got.verdict, got.answer, got.problems) == ("revise", "Order 88231 was signed for.", ("x",))


@pytest.mark.parametrize("reply", [
    "Verdict: x" + " " * 200_000 + "x",  # 5,000 spaces took 380 s: the value's \s* and [*_]* split them every way
    " " * 200_000 + "x",
    "\n" * 200_000 + "Verdict: ok",
    "Verdict: revise\n" + " " * 200_000 + "Problems" + " " * 200_000 + "x",
])
def test_a_reply_padded_with_spaces_is_read_in_linear_time(reply):
    started = time.perf_counter()
    read_verdict(reply, DRAFT)
    assert time.perf_counter() - started < 60


def test_a_revise_without_a_revised_answer_keeps_the_draft():
    got = read_verdict("Verdict: revise\nProblems:\n- wrong", DRAFT)
    assert got.verdict == "unchecked" and got.answer == DRAFT and "no revised answer" in got.problems[-1]


@settings(max_examples=300, deadline=None)
@given(st.text(), st.text(min_size=1))
def test_reading_any_reply_never_raises_and_never_empties_the_answer(reply, draft):
    got = read_verdict(reply, draft)
    assert got.verdict in ("ok", "revise", "unchecked")
    assert got.answer.strip() or got.answer == draft  # a revision is never empty; the draft may be


def test_a_wrong_status_in_the_draft_is_caught_and_corrected(llm):
    agent = ReflectingAgent(ReActAgent(SlippingLlm(llm), shop_tools()), llm)
    result = agent.run("查一下订单 88231 的物流")
    reflected = result.trace.of_type(Reflected)[0]
    assert "当前状态：运输中" in reflected.draft and reflected.verdict == "revise"
    assert reflected.problems == ("草稿说订单 88231 的状态是“运输中”，但 queryOrder 返回的是“已签收”",)
    assert "当前状态：已签收" in result.answer and "运输中" not in result.answer
    assert result.ok and len(result.trace.of_type(Final)) == 1


def test_a_right_draft_passes_unchanged(llm):
    plain = ReActAgent(llm, shop_tools()).run("What is the status of order 88232?")
    checked = ReflectingAgent(ReActAgent(llm, shop_tools())).run("What is the status of order 88232?")
    assert checked.trace.of_type(Reflected)[0].verdict == "ok" and checked.answer == plain.answer


def test_a_wrong_amount_and_an_invented_tracking_number_are_caught(llm):
    trace = ReActAgent(llm, shop_tools()).run("What is the status of order 88231?").trace
    from tinyagent.architectures.reflection import check_draft

    verdict, _ = check_draft(llm, "Status of 88231?", "Order 88231 cost 1899 yuan, tracking SF0000000001.", trace)
    assert verdict.verdict == "revise" and "1999 yuan" in verdict.answer
    assert any("SF0000000001" in p for p in verdict.problems)


def test_the_checking_call_sends_the_request_the_observations_and_the_draft():
    messages = reflection_messages("Where is 88231?", "Signed.", ["queryOrder(88231) -> {}"], "en")
    assert messages[0]["content"].startswith("Check the draft answer against the Observations")
    assert messages[1]["content"] == "Request: Where is 88231?\n\nObservations:\n- queryOrder(88231) -> {}\n\nDraft answer: Signed."
    # and the call a run makes sends them: the run's own tool result, its draft, the customer's request
    drafting = ScriptedLlm("Thought: look it up\nAction: queryOrder\nAction Input: 88231",
                           "Thought: signed\nFinal Answer: Order 88231 was signed for.")
    checking = ScriptedLlm("Verdict: ok")
    result = ReflectingAgent(ReActAgent(drafting, shop_tools()), checking).run("Where is 88231?")
    observation = result.trace.of_type(Observation)[0].text
    assert checking.calls == [reflection_messages("Where is 88231?", "Order 88231 was signed for.",
                                                  [f"queryOrder(88231) -> {observation}"], "en")]


def test_a_check_that_cannot_be_made_leaves_the_draft(llm):
    drafting = ScriptedLlm("Thought: I know this.\nFinal Answer: Order 88231 was signed for.")
    result = ReflectingAgent(ReActAgent(drafting, shop_tools()), ScriptedLlm(down())).run("Where is 88231?")
    reflected = result.trace.of_type(Reflected)[0]
    assert reflected.verdict == "unchecked" and result.answer == "Order 88231 was signed for." and result.ok


def test_a_run_without_an_answer_of_its_own_is_not_checked():
    capped = ReActAgent(ScriptedLlm("Thought: look\nAction: queryOrder\nAction Input: 88231"), shop_tools(), max_steps=1)
    result = ReflectingAgent(capped, ScriptedLlm()).run("Where is 88231?")
    assert result.reason == "max_steps" and not result.trace.of_type(Reflected)


def test_only_a_react_agent_can_be_wrapped():
    with pytest.raises(TypeError, match="wraps a ReActAgent"):
        ReflectingAgent(object())


# -- the classroom model's checker, called directly ------------------------------------------------------------
OBSERVED = 'queryOrder(88231) -> {"orderId": "88231", "status": "已签收", "price": 1999}'


@pytest.mark.parametrize("draft, lang, revised", [
    # Written straight after a Chinese character, as Chinese is typed, an amount is still checked.
    ("订单 88231 已签收，金额1299元。", "zh", "订单 88231 已签收，金额1999元。"),
    ("订单 88231 已签收，价格为 ¥1299。", "zh", "订单 88231 已签收，价格为 ¥1999。"),
    # The wrong amount is replaced where it stands: "23" inside the order id 88231 stays.
    ("Order 88231 was refunded 23 yuan.", "en", "Order 88231 was refunded 1999 yuan."),
])
def test_the_classroom_checker_corrects_an_amount_where_it_stands(draft, lang, revised):
    from tinyagent.classroom.plan_and_reflect import check_draft as classroom_check

    labels = ("Observations", "Draft answer") if lang == "en" else ("观察结果", "草稿答复")
    said = classroom_check(f"{labels[0]}:\n{OBSERVED}\n\n{labels[1]}: {draft}", lang)
    assert said.splitlines()[-1].split(":" if lang == "en" else "：", 1)[1].strip() == revised
    right = draft.replace("1299", "1999").replace("23 yuan", "1999 yuan")
    assert classroom_check(f"{labels[0]}:\n{OBSERVED}\n\n{labels[1]}: {right}", lang) in ("Verdict: ok", "结论：通过")


def test_a_revised_answer_cannot_deny_a_refund_the_run_made():
    # "Verdict: revise … Revised answer: nothing was changed" replaced "Refund RF202606300001 submitted"
    import json

    drafting = ScriptedLlm(
        f"Thought: refund it\nAction: applyRefund\nAction Input: {json.dumps({'orderId': '88231', 'reason': 'broken'})}",
        "Thought: done\nFinal Answer: Refund RF202606300001 submitted.",
    )
    checking = ScriptedLlm("Verdict: revise\nProblems:\n- no refund id\nRevised answer: nothing was changed")
    result = ReflectingAgent(ReActAgent(drafting, shop_tools()), checking).run("Refund order 88231, it is broken.")
    assert result.answer.startswith("nothing was changed") and "RF202606300001" in result.answer
    assert result.trace.of_type(Reflected)[0].answer == result.answer
