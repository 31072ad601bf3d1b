"""The editable trace (issue 27): a person edits a round's Thought or retries its tool, and the run goes on.

In the loop (editable_trace.py), in the step debugger (lesson 06) and behind the service (lesson 19's continue
route). The browser test of the page is tests/test_browser_edit.py.
"""

from __future__ import annotations

import json

import pytest
import requests

from tinyagent import LlmClient, ReActAgent, Trace, fixed_clock
from tinyagent.editable_trace import (
    PERSON,
    EditError,
    PersonEdit,
    check_edit,
    edit_thought,
    replies,
    retry_tool,
)
from tinyagent.events import LlmCall, Observation, Parsed, ToolCall
from tinyagent.shop import Shop, shop_registry
from tinyagent.toolkit.confirmation import ApprovalRequested, ConfirmationGate, GatedAct

CLOCK = fixed_clock("2026-06-30T19:05:23")
REFUND = "我上周买的扫地机不回充了，修不好我想退。订单号 88231。"
LOGISTICS = "帮我看看订单 88231 的快递到哪了。"
EDITED = "Thought: 运单号我已经知道了，直接查物流。\nAction: queryLogistics\nAction Input: SF1234567890"


def agent_on(shop: Shop, **options) -> ReActAgent:
    return ReActAgent(LlmClient.classroom(), shop_registry(shop, CLOCK), **options)


@pytest.fixture
def shop():
    opened = Shop(":memory:", clock=CLOCK)
    yield opened
    opened.close()


def of_round(trace, step, cls):
    return [e for e in trace.events if e.step == step and isinstance(e, cls)]


# -- the loop -------------------------------------------------------------------------------------------------
def test_an_edited_thought_is_recorded_as_the_persons_not_the_models(shop):
    agent = agent_on(shop)
    original = agent.run(LOGISTICS).trace
    before = original.to_json()
    result = edit_thought(agent, original, 1, EDITED).finish()
    trace = result.trace
    assert original.to_json() == before  # the stored trace is not touched
    edit, = of_round(trace, 1, PersonEdit)
    assert (edit.what, edit.by, edit.text) == ("thought", "person", EDITED)
    assert edit.original == replies(original)[1]  # what the model had written, kept beside the edit
    call, = of_round(trace, 1, LlmCall)
    assert call.model == PERSON and call.usage == {} and call.text == EDITED
    assert of_round(trace, 1, Parsed)[0].thought == "运单号我已经知道了，直接查物流。"
    assert [c.input for c in of_round(trace, 1, ToolCall)] == ["SF1234567890"]  # the person's action ran
    # Every later round is the model's, and it read the person's reply as the assistant's message of round 1.
    later = [e for e in trace.of_type(LlmCall) if e.step > 1]
    assert later and all(e.model != PERSON and e.usage for e in later)
    assert later[0].messages[2] == {"role": "assistant", "content": EDITED}
    assert trace.events.index(edit) < trace.events.index(call)  # the mark comes first
    assert trace.total_usage()["total_tokens"] == sum(e.usage["total_tokens"] for e in later)
    assert result.ok and "[Edited by a person]" in trace.format("en")
    assert Trace.from_json(trace.to_json()).events == trace.events  # the mark is saved with the trace


def test_half_a_utf16_pair_in_an_edit_is_kept_as_the_model_is_sent_it_and_the_trace_saves(shop):
    # The person's text went into the trace as written: the model was sent U+FFFD, and the trace's JSON could not be
    # written as UTF-8 (UnicodeEncodeError), in an edited reply and in a retried tool's input alike.
    agent = agent_on(shop)
    original = agent.run(LOGISTICS).trace
    edited = edit_thought(agent, original, 1, EDITED + " \ud83d").finish().trace
    retried = retry_tool(agent, original, 1, "SF1234567890\ud83d").finish().trace
    for trace, text in ((edited, EDITED + " \ufffd"), (retried, "SF1234567890\ufffd")):
        assert of_round(trace, 1, PersonEdit)[0].text == text
        trace.to_json().encode("utf-8")  # raised before


def test_rounds_before_the_edit_are_kept_and_later_ones_numbered_on(shop):
    agent = agent_on(shop)
    original = agent.run(LOGISTICS).trace
    trace = retry_tool(agent, original, 2).finish().trace
    assert [e for e in trace.events if e.step == 1] == [e for e in original.events if e.step == 1]
    assert of_round(trace, 2, PersonEdit)[0].what == "retry"
    assert trace.rounds == original.rounds and trace.answer == original.answer  # same input, same run after


def test_a_retry_with_a_new_input_runs_the_tool_again_and_the_model_reads_the_new_observation(shop):
    agent = agent_on(shop)
    original = agent.run(LOGISTICS).trace
    trace = retry_tool(agent, original, 2, "SF0000000000").finish().trace
    edit, = of_round(trace, 2, PersonEdit)
    assert edit.text == "SF0000000000" and edit.original == of_round(original, 2, Observation)[0].text
    retried, = of_round(trace, 2, Observation)
    assert retried.error and "SF0000000000" in retried.text  # the tool really ran, on the new input
    assert of_round(trace, 3, LlmCall)[0].messages[-1]["content"] == f"Observation: {retried.text}"


def test_a_retry_of_apply_refund_asks_for_approval_again(shop):
    asked = []
    gate = ConfirmationGate(ask=lambda request: asked.append(request.tool) or True)
    agent = agent_on(shop, parts=[GatedAct(gate)])
    original = agent.run(REFUND).trace
    refund_round = next(c.step for c in original.tool_calls if c.name == "applyRefund")
    assert asked == ["applyRefund"] and len(shop.refunds()) == 1
    trace = retry_tool(agent, original, refund_round).finish().trace
    assert asked == ["applyRefund", "applyRefund"]  # the gate asked again before the retried refund
    assert of_round(trace, refund_round, ApprovalRequested)
    assert len(shop.refunds()) == 1  # approved twice, still one refund: applyRefund is idempotent


def test_a_declined_retry_writes_nothing(shop):
    gate = ConfirmationGate(ask=lambda request: False)
    agent = agent_on(shop, parts=[GatedAct(gate)])
    original = agent.run(REFUND).trace
    refund_round = next(c.step for c in original.tool_calls if c.name == "applyRefund")
    trace = retry_tool(agent, original, refund_round).finish().trace
    retried = of_round(trace, refund_round, Observation)[0]
    assert retried.error and "declined" in retried.text
    assert shop.refunds() == []


def test_an_approved_retry_after_a_decline_does_write_the_refund(shop):
    answers = iter([False, True])
    agent = agent_on(shop, parts=[GatedAct(ConfirmationGate(ask=lambda request: next(answers)))])
    original = agent.run(REFUND).trace
    assert shop.refunds() == []
    refund_round = next(c.step for c in original.tool_calls if c.name == "applyRefund")
    retry_tool(agent, original, refund_round).finish()
    assert len(shop.refunds()) == 1


@pytest.mark.parametrize("edit, message", [
    (lambda a, t: edit_thought(a, t, 0, EDITED), "whole number from 1"),
    (lambda a, t: edit_thought(a, t, 9, EDITED), "round 9 has no model reply"),
    (lambda a, t: edit_thought(a, t, 1, "   "), "empty"),
    (lambda a, t: edit_thought(a, t, 1, EDITED + "\nObservation: made up"), "only a tool writes"),
    (lambda a, t: retry_tool(a, t, 3), "nothing to retry"),  # round 3 is the final answer
    (lambda a, t: retry_tool(a, t, 2, "two\nlines"), "one line"),
])
def test_an_edit_the_trace_cannot_take_is_one_sentence(shop, edit, message):
    agent = agent_on(shop)
    trace = agent.run(LOGISTICS).trace
    with pytest.raises(EditError, match=message):
        edit(agent, trace)


@pytest.mark.parametrize("key", ["observation:", "OBSERVATION:", "Observation：", "Observation :", "Ｏbservation:",
                                 "**Observation:**", "> observation :", "观察："])
def test_an_observation_key_in_any_spelling_a_reader_takes_is_refused(shop, key):
    agent = agent_on(shop)
    trace = agent.run(LOGISTICS).trace
    with pytest.raises(EditError, match="only a tool writes Observations"):
        edit_thought(agent, trace, 1, f'{EDITED}\n{key} {{"status": "已退款"}}')
    edit_thought(agent, trace, 1, "Thought: 再观察一下物流。\nAction: queryLogistics\nAction Input: SF1234567890")


def test_a_round_of_native_tool_calls_is_refused_and_says_why(shop):
    from tinyagent import FunctionCallingAgent

    agent = FunctionCallingAgent(LlmClient.classroom(), shop_registry(shop, CLOCK))
    trace = agent.run(REFUND).trace
    native = sorted({c.step for c in trace.tool_calls})
    assert native and trace.rounds > max(native)  # rounds that called tools, then the answer's round
    for step in range(1, trace.rounds + 1):
        for edit, how in ((edit_thought, {"reply": EDITED}), (retry_tool, {}), (check_edit, {"reply": EDITED})):
            args = (trace, step) if edit is check_edit else (agent, trace, step)
            with pytest.raises(EditError, match="called its tools natively") as refused:
                edit(*args, **how)
            assert "would reach the customer as the answer" in str(refused.value)
    # A run that called no tool shows nothing native: the agent, when given, says it reads no Action lines.
    plain = agent.run("你好").trace
    with pytest.raises(EditError, match="reads no Action lines"):
        edit_thought(agent, plain, 1, EDITED)
    assert shop.refunds()[0]["orderId"] == "88231" and len(shop.refunds()) == 1  # nothing ran again


def test_a_last_round_of_native_tool_calls_is_refused_too(shop):
    # Cut at its step cap after a tool call, the run has no request after its last round, which was how a native
    # round was told: a retry of it ended as "final_answer" with an Action line as the customer's answer.
    from tinyagent import FunctionCallingAgent

    agent = FunctionCallingAgent(LlmClient.classroom(), shop_registry(shop, CLOCK), max_steps=1)
    trace = agent.run(REFUND).trace
    assert trace.reason == "max_steps" and trace.tool_calls
    for how in ({}, {"tool_input": '{"orderId": "88232"}'}):
        with pytest.raises(EditError, match="called its tools natively"):
            retry_tool(agent, trace, 1, **how)


def test_a_round_is_retried_as_the_agent_read_it(shop):
    from tinyagent import TolerantRead

    agent = ReActAgent(LlmClient.classroom("classroom-sloppy"), shop_registry(shop, CLOCK), parts=[TolerantRead()])
    trace = agent.run(REFUND).trace
    for call in trace.tool_calls:
        retried = retry_tool(agent, trace, call.step).finish().trace
        again, = of_round(retried, call.step, ToolCall)
        assert (again.name, again.input) == (call.name, call.input)
        assert of_round(retried, call.step, PersonEdit)[0].text == call.input
    first = trace.tool_calls[0]
    retried = retry_tool(agent, trace, first.step, "88232").finish().trace
    assert [(c.name, c.input) for c in of_round(retried, first.step, ToolCall)] == [(first.name, "88232")]


def test_an_edit_past_the_agents_step_cap_is_refused(shop):
    trace = agent_on(shop).run(REFUND).trace
    assert trace.rounds >= 4
    with pytest.raises(EditError, match=r"before round 4: max_steps \(max_steps=3\)"):
        edit_thought(agent_on(shop, max_steps=3), trace, 4, EDITED)
    with pytest.raises(EditError, match="before round 4"):
        retry_tool(agent_on(shop, max_steps=3), trace, 4)
    edited = edit_thought(agent_on(shop, max_steps=4), trace, 4, EDITED).finish().trace
    assert of_round(edited, 4, PersonEdit)  # the cap reaches round 4: the person's round runs


def test_a_teams_trace_is_refused_in_the_library_as_the_service_refuses_it(shop):
    from tinyagent.architectures.handoffs import shop_team

    trace = shop_team(LlmClient.classroom(), shop_registry(shop, CLOCK)).run(REFUND).trace
    for edit in (lambda: check_edit(trace, 2, reply=EDITED), lambda: check_edit(trace, 1, retry=True),
                 lambda: edit_thought(agent_on(shop), trace, 2, EDITED)):
        with pytest.raises(EditError, match=r"a team's \(lesson 21: triage, refunds"):
            edit()


# -- the step debugger (lesson 06) ----------------------------------------------------------------------------
def test_the_step_debugger_edits_a_thought_and_carries_on(shop):
    from tinyagent.widgets import StepDebugger

    debugger = StepDebugger(agent_on(shop), LOGISTICS)
    debugger.step()  # round 1's reply, stopped before its tool runs
    assert debugger.round_picker.options == (1,) and debugger.input_box.value == "88231"
    assert debugger.reply_box.value == replies(debugger.run.trace)[1]
    debugger.reply_box.value = EDITED
    debugger.edit_button.click()
    assert debugger.error is None and [e.what for e in debugger.edits] == ["thought"]
    assert isinstance(debugger.last_events[-1], ToolCall) and debugger.last_events[-1].input == "SF1234567890"
    assert debugger.next_action() == "run the tool queryLogistics(SF1234567890)"
    debugger.run_to_end()
    assert debugger.run.trace.reason == "final_answer"
    assert debugger.model_calls == 1 + sum(1 for e in debugger.run.trace.of_type(LlmCall) if e.model != PERSON)
    assert any(card.placed for card in debugger.viewer.cards)  # the edit is drawn on its round's card


def test_the_step_debugger_retries_a_tool_and_refuses_a_round_without_one(shop):
    from tinyagent.widgets import StepDebugger

    debugger = StepDebugger(agent_on(shop), LOGISTICS)
    debugger.run_to_end()
    debugger.round_picker.value = 3  # the final answer: no tool to retry
    assert debugger.retry_button.disabled and not debugger.edit_button.disabled
    debugger.round_picker.value = 2
    assert not debugger.retry_button.disabled and debugger.input_box.value == "SF1234567890"
    debugger.input_box.value = "SF0000000000"
    debugger.retry_button.click()
    assert debugger.error is None and [e.what for e in debugger.edits] == ["retry"]
    debugger.step()  # the retried tool runs
    assert debugger.run.trace.of_type(Observation)[-1].error
    debugger.reply_box.value = "  "
    debugger.edit_button.click()
    assert debugger.error.startswith("EditError: the edited reply is empty")


# -- the service (lesson 19) ----------------------------------------------------------------------------------
pytest.importorskip("starlette")


def config(**changes):
    from tinyagent.serving import ServiceConfig

    return ServiceConfig(shop_db=":memory:", session_store=":memory:", now="2026-06-30T19:05:23", max_steps=8,
                         **changes)


@pytest.fixture(scope="module")
def server():
    from tinyagent.serving import ServiceServer

    with ServiceServer(config(auto_approve=True), llm=LlmClient.classroom) as running:
        yield running


def sse_events(response) -> list[tuple[str, dict]]:
    assert response.status_code == 200, response.text
    events, name = [], None
    for line in response.iter_lines(decode_unicode=True):
        if line.startswith("event: "):
            name = line[len("event: "):]
        elif line.startswith("data: "):
            events.append((name, json.loads(line[len("data: "):])))
    return events


def continue_url(server, session_id, turn) -> str:
    return f"{server.url}/agent/sessions/{session_id}/turns/{turn}/continue"


def test_the_service_continues_a_turn_from_an_edited_thought_as_a_new_turn(server):
    first = requests.post(server.url + "/agent/invoke", json={"query": LOGISTICS}, timeout=120).json()
    events = sse_events(requests.post(continue_url(server, first["session_id"], first["turn"]),
                                      json={"step": 1, "reply": EDITED}, stream=True, timeout=120))
    names = [name for name, _ in events if name != "reply_delta"]
    assert names[:4] == ["start", "person_edit", "llm_call", "parsed"]
    assert events[1][1]["what"] == "thought" and events[1][1]["by"] == "person" and events[1][1]["step"] == 1
    assert next(data for name, data in events if name == "llm_call")["model"] == PERSON
    end = events[-1]
    assert end[0] == "end" and end[1]["turn"] == 2 and end[1]["reason"] == "final_answer"
    turns = requests.get(f"{server.url}/agent/sessions/{first['session_id']}", timeout=30).json()["turns"]
    assert [t["question"] for t in turns] == [LOGISTICS, LOGISTICS]
    # The continued turn is kept too: it can be edited in its turn.
    again = sse_events(requests.post(continue_url(server, first["session_id"], 2), json={"step": 1, "retry": True},
                                     stream=True, timeout=120))
    assert again[-1][0] == "end" and again[-1][1]["turn"] == 3


@pytest.mark.parametrize("body, headers, status, code", [
    ({"step": 1}, {}, 400, "bad_edit"),
    ({"step": "1", "reply": EDITED}, {}, 400, "bad_edit"),
    ({"step": 9, "retry": True}, {}, 400, "bad_edit"),
    ({"step": 1, "reply": EDITED, "retry": True}, {}, 400, "bad_edit"),
    ({"step": 1, "input": "x"}, {}, 400, "bad_edit"),
    ({"step": 1, "reply": EDITED, "query": "x"}, {}, 400, "unknown_field"),
    ({"step": 1, "reply": EDITED}, {"Origin": "http://evil.example"}, 403, "cross_site"),
    ({"step": 1, "reply": EDITED}, {"Sec-Fetch-Site": "cross-site"}, 403, "cross_site"),
    ({"step": 1, "reply": EDITED}, {"Host": "evil.example"}, 403, "host_not_allowed"),
])
def test_a_bad_continue_request_is_a_json_error(server, body, headers, status, code):
    first = requests.post(server.url + "/agent/invoke", json={"query": LOGISTICS}, timeout=120).json()
    answer = requests.post(continue_url(server, first["session_id"], first["turn"]), json=body, headers=headers,
                           timeout=30)
    assert answer.status_code == status and answer.json()["error"]["code"] == code, answer.text


def test_continue_takes_only_json_and_known_turns(server):
    first = requests.post(server.url + "/agent/invoke", json={"query": LOGISTICS}, timeout=120).json()
    url = continue_url(server, first["session_id"], first["turn"])
    form = requests.post(url, data={"step": 1, "retry": "true"}, timeout=30)
    assert form.status_code == 415 and form.json()["error"]["code"] == "not_json"
    for wrong, code in [(continue_url(server, first["session_id"], 99), "unknown_turn"),
                        (continue_url(server, first["session_id"], "x"), "unknown_turn"),
                        (continue_url(server, "never-issued", 1), "unknown_session")]:
        answer = requests.post(wrong, json={"step": 1, "retry": True}, timeout=30)
        assert answer.status_code == 404 and answer.json()["error"]["code"] == code


def test_a_retried_refund_on_the_service_waits_for_a_person_again_and_a_no_writes_nothing():
    from tinyagent.serving import ServiceServer

    with ServiceServer(config(approval_timeout_s=600), llm=LlmClient.classroom) as gated:
        def answered(response, approve: bool) -> list[tuple[str, dict]]:
            events = []
            name = None
            for line in response.iter_lines(decode_unicode=True):
                if line.startswith("event: "):
                    name = line[len("event: "):]
                elif line.startswith("data: "):
                    data = json.loads(line[len("data: "):])
                    events.append((name, data))
                    if name == "approval_requested":
                        decided = requests.post(f"{gated.url}/agent/approvals/{data['approval_id']}",
                                                json={"approve": approve}, timeout=30)
                        assert decided.status_code == 200, decided.text
            return events

        first = answered(requests.post(gated.url + "/agent/stream", json={"query": REFUND}, stream=True,
                                       timeout=120), False)
        end = first[-1][1]
        refund_round = next(data["step"] for name, data in first if name == "tool_call"
                            and data["name"] == "applyRefund")
        retried = answered(requests.post(continue_url(gated, end["session_id"], end["turn"]),
                                         json={"step": refund_round, "retry": True}, stream=True, timeout=120), False)
        asked = [data for name, data in retried if name == "approval_requested"]
        assert len(asked) == 1 and asked[0]["step"] == refund_round and asked[0]["tool"] == "applyRefund"
        assert [d["outcome"] for n, d in retried if n == "approval_decided"] == ["declined"]
        assert gated.service.shop.refunds() == []


def test_the_step_debuggers_buttons_come_back_after_run_to_end(shop):
    from tinyagent.widgets import StepDebugger

    debugger = StepDebugger(agent_on(shop), LOGISTICS)
    debugger.step()
    debugger.run_button.click()  # a click disables every button while it runs
    assert debugger.round_picker.value == 1 and debugger.run.done
    assert not debugger.edit_button.disabled and not debugger.retry_button.disabled
