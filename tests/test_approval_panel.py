"""ApprovalPanel: the run pauses before applyRefund, and the buttons decide; no click, no refund."""

from __future__ import annotations

import time

import pytest

from tests.test_session_stopped_runs import LOOK, Scripted
from tests.test_session_stopped_runs import REFUND as REFUND_REPLY
from tinyagent import ConfirmationGate, LlmClient, ReActAgent, fixed_clock
from tinyagent.shop import Shop, refund_gate, shop_registry
from tinyagent.toolkit.confirmation import GatedAct
from tinyagent.widgets import ApprovalPanel, build_cards

REFUND = "我上周买的扫地机不回充了，修不好我想退。订单号 88231。"


@pytest.fixture
def shop():
    with Shop(":memory:", clock=fixed_clock("2026-06-30T19:05:23")) as opened:
        yield opened


def panel_for(shop, **gate_options) -> ApprovalPanel:
    agent = ReActAgent(LlmClient.classroom(), shop_registry(shop), parts=[GatedAct(refund_gate(shop, **gate_options))])
    return ApprovalPanel(agent.start(REFUND))


def test_it_stops_at_the_request_with_the_buttons_on_and_nothing_written(shop):
    panel = panel_for(shop)
    assert panel.waiting is not None and panel.waiting.tool == "applyRefund"
    assert not panel.approve_button.disabled and not panel.decline_button.disabled
    assert shop.refunds() == [] and not panel.run.done
    assert "退款 ¥1999，订单 88231" in panel.request_box.value
    assert panel.text().startswith("ApprovalPanel: waiting for approval: applyRefund: 退款 ¥1999，订单 88231")
    assert panel._repr_mimebundle_()["text/plain"] == panel.text()
    card = build_cards(panel.viewer.trace.events)[-1]
    assert card.status == "waiting_approval" and "Waiting for approval" in card.html()


def test_a_click_on_approve_writes_the_refund_and_finishes_the_run(shop):
    panel = panel_for(shop)
    panel.approve_button.click()
    assert panel.waiting is None and panel.run.done and panel.error is None
    assert [(d.outcome, d.by) for d in panel.decisions] == [("approved", "a click on Approve")]
    assert [r["orderId"] for r in shop.refunds()] == ["88231"]
    assert panel.approve_button.disabled and panel.decline_button.disabled
    assert "RF202606300001" in panel.viewer.trace.answer


def test_a_click_on_decline_writes_nothing(shop):
    panel = panel_for(shop)
    panel.decline_button.click()
    assert panel.run.done and shop.refunds() == []
    assert panel.text().splitlines()[:2] == ["ApprovalPanel: the run has ended (final_answer)",
                                             "decision: declined, by a click on Decline"]
    assert "[批准结果：被拒绝] 决定方：a click on Decline" in panel.text()  # the trace in the run's language


def test_a_click_after_the_limit_writes_nothing(shop):
    panel = panel_for(shop, timeout_s=0.2)
    time.sleep(0.4)
    panel.approve_button.click()
    assert [d.outcome for d in panel.decisions] == ["timeout"] and shop.refunds() == []


def test_a_second_click_is_shown_as_an_error_not_raised(shop):
    panel = panel_for(shop)
    panel.decline()
    panel._safely(panel.approve)  # as a stray click would, on a button that is already off
    assert panel.error == "RuntimeError: nothing is waiting for approval" and shop.refunds() == []


def test_it_needs_a_gate_that_pauses(shop):
    with pytest.raises(ValueError, match=r"parts=\[GatedAct"):
        ApprovalPanel(ReActAgent(LlmClient.classroom(), shop_registry(shop)).start(REFUND))
    agent = ReActAgent(LlmClient.classroom(), shop_registry(shop), parts=[GatedAct(ConfirmationGate(ask=lambda r: True))])
    with pytest.raises(ValueError, match="without ask="):
        ApprovalPanel(agent.start(REFUND))


def test_a_run_with_nothing_to_approve_just_ends(shop):
    agent = ReActAgent(LlmClient.classroom(), shop_registry(shop), parts=[GatedAct(refund_gate(shop))])
    panel = ApprovalPanel(agent.start("帮我看看订单 88231 的快递到哪了。"))
    assert panel.waiting is None and panel.run.done and panel.approve_button.disabled


def test_a_run_closed_under_the_panel_turns_the_buttons_off_and_says_the_run_ended(shop):
    panel = panel_for(shop)
    panel.run.close()  # the request is cancelled: no answer can count any more
    assert panel.status_text().startswith("the run ended before an answer: applyRefund was not run")
    assert "waiting for approval" not in panel.text() and panel.approve_button.disabled
    panel.approve_button.click()  # a click that came anyway: said, not acted on
    assert "the run ended" in panel.error and panel.decisions == []
    assert shop.refunds() == [] and panel.approve_button.disabled


@pytest.mark.parametrize("question, heading", [
    ("Refund order 88231, please.", "Before the run stopped, it had already done this:"),
    ("订单 88231 请退款。", "在停下之前，已经完成了以下操作："),
], ids=["en", "zh"])
def test_a_run_the_step_cap_stops_after_an_approved_refund_says_the_refund(shop, question, heading):
    # The run's answer is the loop's canned sentence, which knows nothing of the refund the click approved a round
    # before; the panel had said only "the run has ended (max_steps)".
    agent = ReActAgent(Scripted(REFUND_REPLY, LOOK), shop_registry(shop), max_steps=2,
                       parts=[GatedAct(refund_gate(shop))])
    panel = ApprovalPanel(agent.start(question))
    panel.approve_button.click()
    (refund,) = shop.refunds()
    assert panel.run.done and panel.run.trace.reason == "max_steps"
    said = panel.status_text().splitlines()
    assert said[:2] == ["the run has ended (max_steps)", heading], said
    assert len(said) == 3 and said[2].startswith("- applyRefund ") and refund["refundId"] in said[2], said
    assert refund["refundId"] in panel.status.value and "white-space:pre-line" in panel.status.value
    assert panel.text().startswith("ApprovalPanel: the run has ended (max_steps)\n" + heading)


def test_a_run_the_step_cap_stops_after_a_declined_refund_says_only_that_it_ended(shop):
    agent = ReActAgent(Scripted(REFUND_REPLY, LOOK), shop_registry(shop), max_steps=2,
                       parts=[GatedAct(refund_gate(shop))])
    panel = ApprovalPanel(agent.start("Refund order 88231, please."))
    panel.decline_button.click()
    assert shop.refunds() == [] and panel.status_text() == "the run has ended (max_steps)"
