"""A Session's run that stopped without an answer of its own: the refund it wrote is said, returned and kept.

The loop's canned sentence for a stop (the step cap, the model failing on its next call) knows nothing of a refund
written a round before; `Session.ask` says the run's changes after it (tinyagent/memory/run_changes.py), in the
answer it returns and in the Turn the next run is told about.
"""

from __future__ import annotations

import pytest

from tinyagent import ChatResult, LlmConnectionError, ReActAgent, fixed_clock
from tinyagent.architectures.handoffs import Team, shop_specialists
from tinyagent.architectures.reflection import ReflectingAgent
from tinyagent.events import Observation
from tinyagent.loop_parts import GIVE_UP, MODEL_UNAVAILABLE
from tinyagent.memory.run_changes import CUT_SHORT, STOPPED, calls_and_results
from tinyagent.memory.session import Session
from tinyagent.memory.session_store import SessionStoreError, SqliteSessionStore
from tinyagent.shop import Shop, shop_registry

from .conftest import signalled_while_the_model_thinks

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
        if isinstance(reply, BaseException):  # KeyboardInterrupt too: Ctrl-C while the model writes
            raise reply
        return ChatResult(reply, "stop")


def session_with(*replies, max_steps: int = 2, wrap=lambda agent: agent, **options) -> tuple[Session, Shop]:
    """A Session over a ReActAgent on a scripted model (wrapped by `wrap`), with the shop its tools change."""
    shop = Shop(":memory:", clock=CLOCK)
    agent = ReActAgent(Scripted(*replies), shop_registry(shop, CLOCK), max_steps=max_steps)
    return Session(wrap(agent), **options), shop


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


def act(tool: str, text: str) -> str:
    return f"Thought: go\nAction: {tool}\nAction Input: {text}"


def team_session_with(*replies) -> tuple[Session, Shop]:
    shop = Shop(":memory:", clock=CLOCK)
    llm = Scripted(*replies)  # the triage and its specialists share one model, so one script
    return Session(Team(llm, shop_specialists(llm, shop_registry(shop, CLOCK)))), shop


def test_a_team_run_handed_twice_to_one_specialist_says_the_refund_under_its_own_call():
    # Both of the refunds specialist's runs number their first round 1: pairing by (step, agent) gave handBack the
    # refund's result and applyRefund none, so the refund written went unsaid and a handoff was said instead.
    session, shop = team_session_with(
        act("handOffToRefunds", "Refund order 88231"), act("handBack", "need more"),
        act("handOffToRefunds", "Refund order 88231, reason broken"), REFUND,
        "Thought: ok\nFinal Answer: Refund done.", FAILS)
    result = session.ask("Refund order 88231 please")
    (refund,) = shop.refunds()
    said = result.answer.split("Before the run stopped, it had already done this:\n")[1].splitlines()
    assert result.reason == "llm_error" and len(said) == 1
    assert said[0].startswith("- applyRefund ") and refund["refundId"] in said[0]
    assert session.turns()[-1].answer == result.answer
    pairs = [(call.name, result and result.text[:12]) for call, result in calls_and_results(result.trace)]
    assert pairs == [("handOffToRefunds", '{"agent": "r'), ("handBack", None), ("handOffToRefunds", '{"agent": "r'),
                     ("applyRefund", '{"success":t')]


def test_a_team_run_that_only_looked_keeps_the_canned_answer():
    # A Team has no `tools`: every call was counted, and a handoff and a look-up were said as done.
    session, shop = team_session_with(
        act("handOffToLogistics", "Where is order 88231?"), LOOK, "Thought: ok\nFinal Answer: It was delivered.",
        FAILS)
    result = session.ask("Where is order 88231?")
    assert result.reason == "llm_error" and result.answer == MODEL_UNAVAILABLE["en"] == session.turns()[-1].answer
    assert shop.refunds() == []


def test_a_refund_asked_twice_is_said_once_the_second_changed_nothing():
    # The shop writes one refund and answers the second call with "duplicate": true ("未重复提交"); both were said.
    session, shop = session_with(REFUND, REFUND, FAILS, max_steps=3)
    result = session.ask("Refund order 88231, please.")
    assert len(shop.refunds()) == 1 and '"duplicate":true' in result.trace.of_type(Observation)[-1].text
    assert result.answer.count("applyRefund") == 1 and "duplicate" not in result.answer


def test_ask_says_a_refund_asked_twice_once():
    from tinyagent.__main__ import _what_was_done

    session, shop = session_with(REFUND, REFUND, FAILS, max_steps=3)
    result = session.ask("Refund order 88231, please.")
    done = _what_was_done(result.trace, shop_registry(shop, CLOCK), interrupted=True)
    assert done.count("applyRefund") == 1 and shop.refunds()[0]["refundId"] in done


def test_a_stops_closing_reply_that_leaves_the_refund_out_is_followed_by_it():
    # Lesson 10's StopRules end a run at its cap with one last call for the model's best answer; that reply may not
    # mention the refund written before ("fine"): the answer, the turn and the next history say it after it.
    from tinyagent.robustness.stop_rules import StopRules

    shop = Shop(":memory:", clock=CLOCK)
    agent = ReActAgent(Scripted(REFUND, LOOK, "Thought: done\nFinal Answer: fine"), shop_registry(shop, CLOCK),
                       max_steps=2, parts=[StopRules()])
    session = Session(agent)
    result = session.ask("refund order 88231")
    refund_id = shop.refunds()[0]["refundId"]
    assert result.reason == "max_steps" and result.answer.startswith("fine\nThe run made these changes:\n- applyRefund")
    assert refund_id in result.answer and result.answer.count("applyRefund") == 1
    assert session.turns()[-1].answer == result.answer and refund_id in session.history()[-1]["content"]


# -- a run stopped by Ctrl-C (Kernel > Interrupt) ------------------------------------------------------------------
# ask raised KeyboardInterrupt and kept nothing: the refund stayed written, and the session's next run, told of no such
# turn, could contradict the shop ("no refund was made") or make the refund again.

def test_ctrl_c_after_a_refund_keeps_an_interrupted_turn_that_says_it_and_raises():
    session, shop = session_with(REFUND, KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt) as stopped:
        session.ask("Refund order 88231, please.")
    (refund,) = shop.refunds()
    (turn,) = session.turns()
    assert turn.reason == "interrupted" and turn.question == "Refund order 88231, please."
    assert turn.answer.startswith(f"{STOPPED['en']}\nBefore the run stopped, it had already done this:\n- applyRefund ")
    assert refund["refundId"] in turn.answer and turn.tools == ("applyRefund",) and turn.rounds == 1
    assert turn.prompt_tokens > 0 and turn.tokens_sent == turn.prompt_tokens  # one model call, its figures counted
    assert session.history()[-2:] == turn.messages()  # the next run is told
    (note,) = stopped.value.__notes__  # the learner's traceback says it too
    assert "the session kept this turn" in note and turn.answer in note
    assert session.last_result is None


def test_ctrl_c_inside_the_refund_keeps_it_as_one_that_may_have_been_made():
    # Ctrl-C raised as the refund's write returns: the shop holds the refund, the trace has the call and no result.
    session, shop = session_with(REFUND, "Thought: done\nFinal Answer: done")
    write = shop.apply_refund

    def written_then_stopped(*args, **kwargs):
        write(*args, **kwargs)
        raise KeyboardInterrupt

    shop.apply_refund = written_then_stopped
    with pytest.raises(KeyboardInterrupt):
        session.ask("Refund order 88231, please.")
    assert [row["orderId"] for row in shop.refunds()] == ["88231"]
    (turn,) = session.turns()
    said = turn.answer.splitlines()
    assert turn.reason == "interrupted" and said[0] == STOPPED["en"] and len(said) == 3
    assert said[2].startswith("- applyRefund ") and said[2].endswith(CUT_SHORT["en"])


def test_ctrl_c_in_chinese_keeps_the_turn_in_chinese():
    session, shop = session_with(REFUND, KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        session.ask("请给订单 88231 退款。")
    answer = session.turns()[0].answer
    assert answer.startswith(f"{STOPPED['zh']}\n在停下之前，已经完成了以下操作：\n- applyRefund ")
    assert shop.refunds()[0]["refundId"] in answer


def test_ctrl_c_after_only_look_ups_keeps_no_turn():
    session, shop = session_with(LOOK, KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt) as stopped:
        session.ask("Where is order 88231?")
    assert session.turns() == [] and shop.refunds() == []
    assert not getattr(stopped.value, "__notes__", None)


def test_ctrl_c_whose_turn_the_store_cannot_keep_says_so_in_the_traceback():
    class FullStore(SqliteSessionStore):
        def append_turn(self, session_id, turn):
            raise SessionStoreError("disk full: sessions.db")

    session, shop = session_with(REFUND, KeyboardInterrupt(), store=FullStore(":memory:"))
    with pytest.raises(KeyboardInterrupt) as stopped:
        session.ask("Refund order 88231, please.")
    (note,) = stopped.value.__notes__
    assert note.startswith("The run was stopped after it had changed something; the session could not keep this "
                           "turn (disk full: sessions.db):")
    assert shop.refunds()[0]["refundId"] in note and session.store_error.endswith("disk full: sessions.db")


def test_ctrl_c_in_a_team_keeps_the_specialists_refund():
    session, shop = team_session_with(act("handOffToRefunds", "Refund order 88231"), REFUND, KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        session.ask("Refund order 88231 please")
    (turn,) = session.turns()
    assert turn.reason == "interrupted" and shop.refunds()[0]["refundId"] in turn.answer
    assert "handOffToRefunds" not in turn.answer  # a handoff changes nothing


class Logged:
    """A wrapper of one's own that calls the agent's run(): it needs nothing to hand the trace on."""

    def __init__(self, agent):
        self.agent = agent

    def run(self, question, history=None):
        return self.agent.run(question, history=history)


@pytest.mark.parametrize("wrap", [Logged, ReflectingAgent], ids=["own-wrapper", "reflecting-agent"])
def test_ctrl_c_in_an_agent_built_on_a_react_agent_keeps_the_turn_too(wrap):
    # The trace comes with the Ctrl-C: lesson 06's AgentRun.finish hands it on, and lesson 17's ReflectingAgent, which
    # gathers its events in a trace of its own, hands that one on.
    session, shop = session_with(REFUND, KeyboardInterrupt(), wrap=wrap)
    with pytest.raises(KeyboardInterrupt):
        session.ask("Refund order 88231, please.")
    (turn,) = session.turns()
    assert turn.reason == "interrupted" and shop.refunds()[0]["refundId"] in turn.answer


def test_ctrl_c_from_an_agent_whose_run_hands_on_no_trace_keeps_nothing():
    class OwnLoop:  # an agent of one's own: its Ctrl-C carries no trace, so there is nothing to read
        def run(self, question, history=None):
            raise KeyboardInterrupt

    session = Session(OwnLoop())
    with pytest.raises(KeyboardInterrupt) as stopped:
        session.ask("Refund order 88231, please.")
    assert session.turns() == [] and not getattr(stopped.value, "__notes__", None)


ASK_IN_A_NOTEBOOK = """
import sys
from tinyagent import LlmClient, ReActAgent, fixed_clock
from tinyagent.memory.session import Session
from tinyagent.memory.session_store import SqliteSessionStore
from tinyagent.shop import Shop, shop_registry

url, folder = sys.argv[1], sys.argv[2]
clock = fixed_clock("2026-06-25T10:00:00")
with Shop(folder + "/shop.db", clock=clock) as shop:
    agent = ReActAgent(LlmClient(url, None, "test-model", max_retries=0), shop_registry(shop, clock))
    session = Session(agent, store=SqliteSessionStore(folder + "/sessions.db"), session_id="s1")
    session.ask("Refund order 88231, it is faulty")
"""


def test_a_real_ctrl_c_while_the_model_thinks_after_a_refund_keeps_the_turn(tmp_path, scripted_server):
    # SIGINT lands in the middle of the second model call, inside requests' read, as Kernel > Interrupt does.
    err = signalled_while_the_model_thinks(scripted_server, REFUND, ["-c", ASK_IN_A_NOTEBOOK, scripted_server.url,
                                                                     str(tmp_path)], cwd=tmp_path).stderr
    assert "KeyboardInterrupt" in err and "the session kept this turn, so its next run is told:" in err, err
    with Shop(tmp_path / "shop.db") as shop:
        [refund_id] = [refund["refundId"] for refund in shop.refunds()]
    store = SqliteSessionStore(tmp_path / "sessions.db")
    try:
        (turn,) = store.turns("s1")
    finally:
        store.close()
    assert turn.reason == "interrupted" and refund_id in turn.answer and refund_id in err
