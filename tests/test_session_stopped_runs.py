"""A Session's run that stopped without an answer of its own: the refund it wrote is said, returned and kept.

The loop's canned sentence for a stop (the step cap, the model failing on its next call) knows nothing of a refund
written a round before; `Session.ask` says the run's changes after it (tinyagent/memory/run_changes.py), in the
answer it returns and in the Turn the next run is told about.
"""

from __future__ import annotations

import pytest

from tinyagent import ChatResult, LlmConnectionError, ReActAgent, fixed_clock
from tinyagent.loop_parts import GIVE_UP, MODEL_UNAVAILABLE
from tinyagent.memory.session import Session
from tinyagent.shop import Shop, shop_registry

CLOCK = fixed_clock("2026-06-30T19:05:23")
REFUND = 'Thought: refund\nAction: applyRefund\nAction Input: {"orderId": "88231", "reason": "x"}'
LOOK = 'Thought: look\nAction: queryOrder\nAction Input: {"orderId": "88231"}'
FAILS = LlmConnectionError("cannot reach the model")


class Scripted:
    """A scripted model: each reply in turn; an exception in the script is raised instead of replying."""

    model = "scripted"

    def __init__(self, *replies):
        self.replies = list(replies)

    def chat(self, messages, **options):
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return ChatResult(reply, "stop")


def session_with(*replies, max_steps: int = 2) -> tuple[Session, Shop]:
    shop = Shop(":memory:", clock=CLOCK)
    agent = ReActAgent(Scripted(*replies), shop_registry(shop, CLOCK), max_steps=max_steps)
    return Session(agent), shop


@pytest.mark.parametrize("replies, reason, canned", [
    ((REFUND, LOOK), "max_steps", GIVE_UP["en"].format(n=2)),
    ((REFUND, FAILS), "llm_error", MODEL_UNAVAILABLE["en"]),
], ids=["max-steps", "model-fails"])
def test_a_stopped_run_that_refunded_says_the_refund_in_its_answer_its_turn_and_the_next_history(
        replies, reason, canned):
    # The answer was the canned sentence alone: the caller, the stored turn and the next run never heard that
    # refund 88231 had been written.
    session, shop = session_with(*replies)
    result = session.ask("Refund order 88231, please.")
    (refund,) = shop.refunds()
    assert result.reason == reason and result.answer.startswith(canned)
    assert "Before the run stopped, it had already done this:" in result.answer
    assert "applyRefund" in result.answer and refund["refundId"] in result.answer
    assert "queryOrder" not in result.answer  # read-only: not a change
    assert session.turns()[-1].answer == result.answer and session.last_result is result
    assert session.history()[-1] == {"role": "assistant", "content": result.answer}
    assert result.trace.end.answer == canned  # the trace keeps the loop's own words


def test_a_stopped_run_in_chinese_says_its_changes_under_the_chinese_heading():
    session, shop = session_with(REFUND, FAILS)
    result = session.ask("请给订单 88231 退款。")
    assert result.answer.startswith(MODEL_UNAVAILABLE["zh"]) and "在停下之前，已经完成了以下操作：" in result.answer
    assert shop.refunds()[0]["refundId"] in session.turns()[-1].answer


def test_a_stopped_run_with_only_read_only_calls_keeps_the_canned_answer():
    session, shop = session_with(LOOK, LOOK)
    result = session.ask("Refund order 88231, please.")
    assert result.reason == "max_steps" and result.answer == GIVE_UP["en"].format(n=2) == session.turns()[-1].answer
    assert shop.refunds() == []


def test_a_run_the_model_answered_keeps_its_own_answer():
    session, _ = session_with(REFUND, "Thought: done\nFinal Answer: refund done")
    result = session.ask("Refund order 88231, please.")
    assert result.reason == "final_answer" and result.answer == "refund done" == session.turns()[-1].answer
