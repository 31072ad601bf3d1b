"""Lesson 21 behind lesson 19's service: `serve --team` answers with the triage and its specialists, and the trace
it returns names the agent behind every event."""

from __future__ import annotations

import json

import pytest
import requests

pytest.importorskip("starlette")

from tests.serving_process import PATIENCE, serve_process
from tinyagent import LlmClient, Trace
from tinyagent.serving import AgentService, ServiceConfig

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
