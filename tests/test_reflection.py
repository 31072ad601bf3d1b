"""reflection.py: a draft checked against the run's Observations; a contradicted one is revised; a check that
cannot be read or made leaves the draft standing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyagent import LlmClient, ReActAgent, Trace
from tinyagent.architectures.reflection import Reflected, ReflectingAgent, read_verdict, reflection_messages
from tinyagent.events import Final

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
    # the label's Markdown is no part of the answer; a word is a whole word ("correction" is not "correct")
    ("Verdict: revise\n**Revised answer:** Order 88231 was signed for.", "revise", "Order 88231 was signed for.", ()),
    ("Verdict: correction needed", "unchecked", DRAFT, ("unknown verdict 'correction needed'",)),
    ("Verdict: okay-ish, but wrong", "unchecked", DRAFT, ("unknown verdict 'okay-ish, but wrong'",)),
    ("结论：通过了", "ok", DRAFT, ()),
])
def test_the_check_s_reply_is_read_leniently(reply, verdict, answer, problems):
    got = read_verdict(reply, DRAFT)
    assert (got.verdict, got.answer, got.problems) == (verdict, answer, problems)


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
    trace = Trace()
    messages = reflection_messages("Where is 88231?", "Signed.", ["queryOrder(88231) -> {}"], "en")
    assert messages[0]["content"].startswith("Check the draft answer against the Observations")
    assert messages[1]["content"] == "Request: Where is 88231?\n\nObservations:\n- queryOrder(88231) -> {}\n\nDraft answer: Signed."
    assert len(trace) == 0


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
