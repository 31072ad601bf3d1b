"""Lesson 21 behind lesson 19's service: `serve --team` answers with the triage and its specialists, and the trace
it returns names the agent behind every event."""

from __future__ import annotations

import json
import threading

import pytest
import requests

pytest.importorskip("starlette")

from tests.serving_process import PATIENCE, serve_process
from tinyagent import ChatResult, LlmClient, LlmConnectionError, Trace
from tinyagent.serving import AgentService, RunCancelled, ServiceConfig

REFUND = "我上周买的扫地机不回充了，修不好我想退。订单号 88231。"
PARCEL = "Where is my parcel for order 88231?"


def test_the_service_runs_the_team_in_process_and_each_event_names_its_agent():
    config = ServiceConfig(shop_db=":memory:", session_store=":memory:", now="2026-06-30T19:05:23", team=True,
                           auto_approve=True)
    service = AgentService(config, llm=LlmClient.classroom)
    try:
        seen = []
        outcome = service.submit(REFUND, None, stream=True, on_event=seen.append).result(120)
    finally:
        service.close()
    assert outcome.result.reason == "final_answer" and "RF2026" in outcome.result.answer
    assert {e.agent for e in seen} == {"triage", "refunds"}
    assert [e.agent for e in seen] == [e.agent for e in outcome.result.trace]


def test_the_http_service_returns_the_agent_names_in_its_trace(tmp_path):
    with serve_process(tmp_path, "--team", "--auto-approve") as service:
        response = requests.post(service.url + "/agent/invoke", json={"query": PARCEL}, timeout=PATIENCE)
        assert response.status_code == 200, response.text
        data = response.json()
    assert data["reason"] == "final_answer" and "SF1234567890" in data["answer"]
    agents = [event["agent"] for event in data["trace"]["events"]]
    assert agents[0] == "triage" and agents[-1] == "triage" and "logistics" in agents
    handoffs = [e for e in data["trace"]["events"] if e["type"] == "handoff"]
    assert [(h["target"], h["back"]) for h in handoffs] == [("logistics", False), ("logistics", True)]
    trace = Trace.from_json(json.dumps(data["trace"]))
    assert "Round 1 · logistics" in trace.format()


def test_a_team_service_refuses_a_persons_edit_with_a_409_that_says_why(tmp_path):
    with serve_process(tmp_path, "--team", "--auto-approve") as service:
        response = requests.post(service.url + "/agent/invoke", json={"query": PARCEL}, timeout=PATIENCE)
        session_id = response.json()["session_id"]
        edit = requests.post(f"{service.url}/agent/sessions/{session_id}/turns/1/continue",
                             json={"step": 1, "reply": "Thought: x\nFinal Answer: y"}, timeout=PATIENCE)
    assert edit.status_code == 409, edit.text
    assert edit.json()["error"]["code"] == "edits_need_one_agent" and "--team" in edit.json()["error"]["message"]


def act(tool: str, text: str) -> str:
    return f"Thought: go\nAction: {tool}\nAction Input: {text}"


TWICE_TO_REFUNDS = [act("handOffToRefunds", "Refund order 88231"), act("handBack", "need more"),
                    act("handOffToRefunds", "Refund order 88231, reason broken"),
                    act("applyRefund", '{"orderId": "88231", "reason": "x"}'), "Thought: ok\nFinal Answer: Refund done."]


class Scripted:
    """One script for the triage and its specialists (they share the run's model); an exception is raised, a
    function is called for the reply."""

    model = "scripted"

    def __init__(self, replies: list):
        self.replies = replies

    def chat(self, messages, **options):
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return ChatResult(reply() if callable(reply) else reply, "stop")

    def close(self):
        pass


def team_service(script: list) -> AgentService:
    return AgentService(ServiceConfig(shop_db=":memory:", session_store=":memory:", now="2026-06-30T19:05:23",
                                      team=True, auto_approve=True), llm=lambda: Scripted(script))


def test_a_stopped_team_run_handed_twice_to_refunds_says_the_refund_under_applyrefund():
    # The specialist's two runs both number their first round 1: pairing by (step, agent) gave handBack the refund's
    # result, applyRefund none, and the answer said a handBack as done and not the refund.
    service = team_service([*TWICE_TO_REFUNDS, LlmConnectionError("the model stopped answering")])
    try:
        outcome = service.submit("Refund order 88231 please", None).result(60)
        (refund,) = service.shop.refunds()
        stored = service.store.turns(outcome.session_id)[-1].answer
    finally:
        service.close()
    said = outcome.result.answer.split("Before the run stopped, it had already done this:\n")[1].splitlines()
    assert outcome.result.reason == "llm_error" and len(said) == 1 and stored == outcome.result.answer
    assert said[0].startswith("- applyRefund ") and refund["refundId"] in said[0]


def test_a_cancelled_team_run_ends_cleanly_and_its_turn_says_the_refund():
    # Closing a team's run looked for `run.agent`, which a TeamRun has not: AttributeError, no turn, nothing said.
    cancelled = threading.Event()

    def leave():
        cancelled.set()
        return "Thought: ok\nFinal Answer: done"

    service = team_service([*TWICE_TO_REFUNDS, leave])
    try:
        with pytest.raises(RunCancelled) as stopped:
            service.submit("Refund order 88231 please", "s1", cancelled=cancelled).result(60)
        (refund,) = service.shop.refunds()
        (turn,) = service.store.turns("s1")
    finally:
        service.close()
    (change,) = stopped.value.changes
    assert change.startswith("applyRefund ") and refund["refundId"] in change
    assert stopped.value.turn == 1 and turn.reason == "cancelled" and refund["refundId"] in turn.answer
    assert turn.tools == ("applyRefund",)
