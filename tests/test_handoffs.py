"""Lesson 21: several agents. A specialist sees only its tools and what it was handed; every event names its agent."""

from __future__ import annotations

import json

import pytest

from tests.lesson17_helpers import CLOCK, ScriptedLlm
from tinyagent import LlmClient, Trace
from tinyagent.architectures.handoffs import (
    TRIAGE,
    TRIAGE_INSTRUCTIONS,
    Handoff,
    Team,
    shop_specialists,
    shop_team,
)
from tinyagent.evaluation import EvalReport, evaluate
from tinyagent.evaluation.harness import run_eval_task
from tinyagent.evaluation.tasks import EVAL_TASKS
from tinyagent.events import Final, LlmCall, Observation, ToolCall
from tinyagent.shop import Shop, shop_registry

REFUND = "我上周买的扫地机不回充了，修不好我想退。订单号 88231。"
PARCEL = "Where is my parcel for order 88231?"


def team_on(llm, shop: Shop, **options) -> Team:
    return Team(llm, shop_specialists(llm, shop_registry(shop, CLOCK)), **options)


def step(thought: str, tool: str, text: str) -> str:
    return f"Thought: {thought}\nAction: {tool}\nAction Input: {text}"


def test_a_specialist_asking_for_another_specialists_tool_gets_an_error_and_the_tool_never_runs():
    llm = ScriptedLlm(
        step("a parcel question", "handOffToLogistics", "refund order 88231"),
        step("I will refund it myself", "applyRefund", json.dumps({"orderId": "88231", "reason": "broken"})),
        "Thought: I cannot.\nFinal Answer: I cannot refund here.",
        "Thought: pass it on.\nFinal Answer: The logistics agent cannot refund.",
    )
    with Shop(":memory:", clock=CLOCK) as shop:
        result = team_on(llm, shop).run("please refund order 88231")
        refused = [e for e in result.trace if isinstance(e, Observation) and e.agent == "logistics"]
        assert len(refused) == 1 and refused[0].error
        assert "not available" in refused[0].text and "applyRefund" in refused[0].text
        assert "queryOrder" in refused[0].text  # it says what the specialist may use instead
        assert shop.refunds() == []  # the refund tool never ran
    assert result.reason == "final_answer"


def test_a_specialist_is_offered_only_its_own_tools_and_hand_back():
    with Shop(":memory:", clock=CLOCK) as shop:
        team = shop_team(LlmClient.classroom(), shop_registry(shop, CLOCK))
        assert team.members["logistics"].tools == ("queryOrder", "queryLogistics", "handBack")
        assert team.members["policies"].tools == ("searchKnowledge", "handBack")
        result = team.run(PARCEL)
    system = next(e for e in result.trace if isinstance(e, LlmCall) and e.agent == "logistics").messages[0]["content"]
    assert "queryLogistics" in system and "applyRefund" not in system and "searchKnowledge" not in system
    triage_system = next(e for e in result.trace if isinstance(e, LlmCall) and e.agent == TRIAGE).messages[0]["content"]
    assert "handOffToLogistics" in triage_system and "queryOrder(" not in triage_system.split("handOffTo")[0]


def test_a_handoff_carries_only_what_was_handed_not_the_triage_conversation():
    secret = "my note to the shop: ZX-0042"
    llm = ScriptedLlm(
        step("only the parcel part goes on", "handOffToLogistics", "Where is the parcel of order 88231?"),
        "Thought: I know enough.\nFinal Answer: It was signed for.",
        "Thought: pass it on.\nFinal Answer: It was signed for.",
    )
    with Shop(":memory:", clock=CLOCK) as shop:
        result = team_on(llm, shop).run(f"Hello, {secret}. Where is the parcel of order 88231?")
    specialist_calls = [e for e in result.trace if isinstance(e, LlmCall) and e.agent == "logistics"]
    assert specialist_calls
    first = specialist_calls[0].messages
    assert [m["role"] for m in first] == ["system", "user"]
    assert first[1]["content"] == "Where is the parcel of order 88231?"
    for call in specialist_calls:
        assert all(secret not in m["content"] for m in call.messages)
        assert all(TRIAGE_INSTRUCTIONS["en"] not in m["content"] and "handOffTo" not in m["content"]
                   for m in call.messages)
    handed = [e for e in result.trace if isinstance(e, Handoff)]
    assert [(h.target, h.back, h.message) for h in handed] == [
        ("logistics", False, "Where is the parcel of order 88231?"), ("logistics", True, "It was signed for.")]


def test_a_specialist_without_the_tools_a_request_needs_hands_it_back_and_handback_never_runs():
    with Shop(":memory:", clock=CLOCK) as shop:
        team = shop_team(LlmClient.classroom(), shop_registry(shop, CLOCK))
        result = team.hand_to("logistics", REFUND)
        assert shop.refunds() == []
    assert result.reason == "handed_back" and "applyRefund" in result.answer
    calls = [e for e in result.trace if isinstance(e, ToolCall) and e.agent == "logistics"]
    assert calls[-1].name == "handBack"
    assert not [e for e in result.trace if isinstance(e, Observation) and e.agent == "logistics"
                and "handed_back" in e.text]  # the run ended at the call: the tool did not run
    assert result.trace.events[-1] == Handoff(1, source=TRIAGE, target="logistics", message=result.answer,
                                              back=True, agent=TRIAGE)


def test_the_triage_hands_each_request_to_the_specialist_with_the_tools_for_it():
    with Shop(":memory:", clock=CLOCK) as shop:
        team = shop_team(LlmClient.classroom(), shop_registry(shop, CLOCK))
        targets = {q: [h.target for h in team.run(q).trace if isinstance(h, Handoff) and not h.back]
                   for q in (REFUND, PARCEL, "七天无理由退货怎么算运费？")}
        assert [row["orderId"] for row in shop.refunds()] == ["88231"]
    assert targets == {REFUND: ["refunds"], PARCEL: ["logistics"], "七天无理由退货怎么算运费？": ["policies"]}


def test_the_trace_names_the_agent_behind_each_event_and_keeps_it_in_json():
    with Shop(":memory:", clock=CLOCK) as shop:
        result = shop_team(LlmClient.classroom(), shop_registry(shop, CLOCK)).run(REFUND)
    agents = [event.agent for event in result.trace]
    assert set(agents) == {TRIAGE, "refunds"} and all(agents)
    assert agents[0] == TRIAGE and isinstance(result.trace.events[-1], Final) and agents[-1] == TRIAGE
    assert {e.agent for e in result.trace if isinstance(e, ToolCall) and e.name == "applyRefund"} == {"refunds"}
    again = Trace.from_json(result.trace.to_json())
    assert [e.agent for e in again] == agents and again.events == result.trace.events
    printed = result.trace.format()
    assert "===== 第 1 圈 · refunds =====" in printed and "===== 第 2 圈 · triage =====" in printed
    assert "[转交] triage -> refunds：" in printed


def test_a_single_agents_events_have_no_agent_and_its_json_is_unchanged():
    from tinyagent import ReActAgent

    with Shop(":memory:", clock=CLOCK) as shop:
        result = ReActAgent(LlmClient.classroom(), shop_registry(shop, CLOCK)).run(PARCEL)
    assert all(event.agent == "" for event in result.trace)
    assert all("agent" not in event.to_dict() for event in result.trace)
    assert "·" not in result.trace.format().splitlines()[0]


def test_the_triage_step_cap_counts_only_the_triage_rounds():
    with Shop(":memory:", clock=CLOCK) as shop:
        result = shop_team(LlmClient.classroom(), shop_registry(shop, CLOCK), max_steps=2).run(REFUND)
    assert result.reason == "final_answer"  # the refunds agent's five rounds happen inside the triage's first
    assert max(e.step for e in result.trace if e.agent == "refunds") == 5


def test_the_evaluation_runs_a_team_and_its_report_names_the_agents():
    refund = next(t for t in EVAL_TASKS if t.name == "refund" and t.lang == "en")
    result = run_eval_task(refund, LlmClient.classroom(), build=shop_team)
    assert result.passed and result.agents == ("triage", "refunds")
    assert result.refunds == ("88231",) and "handOffToRefunds" not in result.tool_calls
    report = evaluate(LlmClient.classroom(), build=shop_team, names=["refund", "parcel"], langs=["en"],
                      progress=False)
    table = report.table()
    assert "agents" in table.splitlines()[1] and "triage > logistics" in table
    again = EvalReport.from_json(report.to_json())
    assert [r.agents for r in again.results] == [r.agents for r in report.results]
    single = evaluate(LlmClient.classroom(), names=["parcel"], langs=["en"], progress=False)
    assert "agents" not in single.table() and "agents" not in single.to_json()


def test_the_classroom_triage_takes_the_specialist_with_the_fewest_tools_and_the_first_listed_on_a_tie():
    from tinyagent import ReActAgent
    from tinyagent.registry import ToolRegistry
    from tinyagent.tools import FunctionTool

    def handoff(name: str, tools: str) -> FunctionTool:
        return FunctionTool(f"handOffTo{name}", f"Hand the request to the {name} agent (tools: {tools}).", str)

    def first_target(*listed: FunctionTool) -> str:
        result = ReActAgent(LlmClient.classroom(), ToolRegistry(list(listed)), max_steps=1).run(
            "What is the status of order 88231?")
        return result.trace.tool_calls[0].name

    # A tie of two tools each: the first listed, not the first by name.
    assert first_target(handoff("Zeta", "queryOrder, queryLogistics"),
                        handoff("Alpha", "queryOrder, searchKnowledge")) == "handOffToZeta"
    # Four tools (three of a kind the model does not know) against two: the one with two.
    assert first_target(handoff("Big", "queryOrder, getOrderNotes, getOrderHistory, getOrderInvoice"),
                        handoff("Small", "queryOrder, queryLogistics")) == "handOffToSmall"


def test_an_empty_hand_back_is_handed_back_not_a_key_error():
    # a specialist's "Action: handBack" with no input raised KeyError: 'answer' out of the team's run
    with Shop(":memory:", clock=CLOCK) as shop:
        llm = ScriptedLlm("Thought: not mine.\nAction: handBack\n")
        team = Team(llm, shop_specialists(llm, shop_registry(shop, CLOCK)))
        result = team.hand_to("logistics", "帮我看看订单 88231 的快递到哪了。")
    assert result.reason == "handed_back" and result.answer == ""
    assert result.trace.events[-1] == Handoff(1, source=TRIAGE, target="logistics", message="", back=True,
                                              agent=TRIAGE)


def test_a_gate_mounted_on_the_team_is_refused_since_it_would_guard_nothing():
    # on the triage, which calls handoffs only, the refunds specialist refunded with nobody asked
    from tinyagent import ConfirmationGate
    from tinyagent.toolkit.confirmation import GatedAct

    with Shop(":memory:", clock=CLOCK) as shop:
        tools = shop_registry(shop, CLOCK)
        with pytest.raises(ValueError, match="mount it on the specialists instead"):
            shop_team(LlmClient.classroom(), tools, parts=[GatedAct(ConfirmationGate())])


def test_closing_a_team_run_cancels_the_request_its_specialist_waits_on():
    from tinyagent import ConfirmationGate
    from tinyagent.toolkit.confirmation import ApprovalRequested, GatedAct

    gate = ConfirmationGate(("applyRefund",), timeout_s=60)
    llm = ScriptedLlm("Thought: refunds.\nAction: handOffToRefunds\nAction Input: 订单 88231 退款\n",
                      'Thought: refund.\nAction: applyRefund\nAction Input: {"orderId": "88231", "reason": "坏了"}\n')
    with Shop(":memory:", clock=CLOCK) as shop:
        team = Team(llm, shop_specialists(llm, shop_registry(shop, CLOCK), parts=[GatedAct(gate)]))
        run = team.start("订单 88231 坏了，退款。")
        for event in run:
            if isinstance(event, ApprovalRequested):
                break
        assert len(gate.pending) == 1
        run.close()
        assert gate.pending == [] and gate.answer(1, True).outcome != "approved" and shop.refunds() == []


@pytest.mark.parametrize("question, handed, says", [
    ("please refund order 88231", "", "handOffToRefunds needs the customer's words"),
    ("please refund order 88231", "   ", "handOffToRefunds needs the customer's words"),
    (REFUND, "", "handOffToRefunds 需要顾客的原话"),
])
def test_an_empty_handoff_is_an_error_observation_for_the_triage_and_runs_no_specialist(question, handed, says):
    # an empty Action Input raised ValueError ("the question must be a non-empty string") out of Team.run
    llm = ScriptedLlm(f"Thought: hand it on\nAction: handOffToRefunds\nAction Input: {handed}",
                      "Thought: I cannot hand it on without the words.\nFinal Answer: done")
    with Shop(":memory:", clock=CLOCK) as shop:
        result = team_on(llm, shop).run(question)
    assert result.reason == "final_answer" and result.answer == "done"
    assert not result.trace.of_type(Handoff) and {event.agent for event in result.trace} == {TRIAGE}
    [observation] = result.trace.of_type(Observation)
    assert observation.error and says in json.loads(observation.text)["error"]


def _refund_then(*after: str) -> ScriptedLlm:
    """A triage that hands a refund on, a specialist that makes it and then goes on with `after`."""
    return ScriptedLlm(step("a refund", "handOffToRefunds", "refund order 88231, it is broken"),
                       step("refund it", "applyRefund", json.dumps({"orderId": "88231", "reason": "broken"})),
                       *after)


@pytest.mark.parametrize("after", [
    [step("check again", "queryOrder", "88231")] * 5,  # to its step cap, no answer of its own
    [step("not sure this was mine", "handBack", "this needs a person")],
], ids=["max_steps", "hand_back"])
def test_a_refund_the_specialist_made_is_in_what_the_triage_reads_however_its_run_ended(after):
    # the triage read only {"agent","answer":"Sorry, I could not finish…","ended":"max_steps"} or {"handed_back"}
    from tinyagent.shop.refund_review import refund_gate
    from tinyagent.toolkit.confirmation import GatedAct

    llm = _refund_then(*after, "Thought: tell them.\nFinal Answer: done")
    with Shop(":memory:", clock=CLOCK) as shop:
        gated = [GatedAct(refund_gate(shop, ask=lambda request: True))]
        result = Team(llm, shop_specialists(llm, shop_registry(shop, CLOCK), parts=gated)).run("refund order 88231")
        [refund] = shop.refunds()
    [read] = [json.loads(e.text) for e in result.trace.of_type(Observation) if e.agent == TRIAGE]
    [change] = read["changes"]
    assert change.startswith("applyRefund") and refund["refundId"] in change


def test_a_specialist_tried_alone_says_the_refund_it_made_before_its_step_cap():
    llm = _refund_then(*[step("check again", "queryOrder", "88231")] * 5)
    llm.replies.pop(0)  # the triage is not asked
    with Shop(":memory:", clock=CLOCK) as shop:
        result = Team(llm, shop_specialists(llm, shop_registry(shop, CLOCK))).hand_to("refunds", "refund 88231")
        [refund] = shop.refunds()
    assert result.reason == "max_steps" and refund["refundId"] in result.answer
