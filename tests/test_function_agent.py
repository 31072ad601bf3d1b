"""`FunctionCallingAgent` (lesson 09): the loop on native tool calls, driven by a scripted model (no HTTP),
then end to end against the classroom model and a scripted HTTP server."""

from __future__ import annotations

import json
import threading

import pytest

from tinyagent import (
    AuthenticationError,
    ChatResult,
    Final,
    FunctionTool,
    LimitReached,
    LlmCall,
    LlmClient,
    Observation,
    Parsed,
    ReActAgent,
    Stopped,
    ToolCall,
    ToolRegistry,
    Trace,
    fixed_clock,
    function_specs,
)
from tinyagent.loop_parts import RunInTurn
from tinyagent.protocols.function_calling import (
    TOOL_CALL,
    UNREADABLE_ARGUMENTS,
    FunctionCallingAgent,
    ParallelAct,
    build_function_prompt,
)
from tinyagent.robustness.stop_rules import RepeatedAction, StepCap, StopRules, ToolTimeout
from tinyagent.widgets.cards import build_cards, messages_text

# Long enough never to fire on a healthy machine, however loaded; it only keeps a broken test from hanging.
PATIENCE = 60


def tool_call(name, arguments, call_id):
    arguments = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def calls(*items, text="", finish_reason="tool_calls"):
    return ChatResult(text, finish_reason, {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
                      tool_calls=tuple(tool_call(*item) for item in items))


def answer(text, finish_reason="stop"):
    return ChatResult(text, finish_reason, {"prompt_tokens": 30, "completion_tokens": 8, "total_tokens": 38})


class ScriptedLlm:
    """Replies with the scripted ChatResults in order (the last repeats) and records every request."""

    model = "scripted"

    def __init__(self, *replies):
        self.replies = list(replies)
        self.requests = []

    def chat(self, messages, *, stop=None, max_tokens=None, **extra):
        self.requests.append({"messages": [dict(m) for m in messages], "stop": stop, **extra})
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if isinstance(reply, Exception):
            raise reply
        return reply


ORDER_SCHEMA = {"type": "object", "properties": {"orderId": {"type": "string", "examples": ["88231"]}},
                "required": ["orderId"], "additionalProperties": False}


def order_tool(log=None, wait=None):
    """queryOrder that logs when it starts and ends, and may first wait for an event."""

    def run(text):
        order_id = json.loads(text)["orderId"]
        if log is not None:
            log.append(f"start {order_id}")
        if wait is not None and order_id in wait:
            started = wait[order_id].wait(PATIENCE)
            if log is not None:
                log.append(f"{order_id} saw the other start: {started}")
        if log is not None:
            log.append(f"end {order_id}")
        return json.dumps({"orderId": order_id, "status": "signed"})

    return FunctionTool("queryOrder", "Look up an order.", run, parameters=ORDER_SCHEMA)


def registry(*extra, log=None, wait=None):
    return ToolRegistry([order_tool(log, wait), *extra])


TWO_ORDERS = calls(("queryOrder", {"orderId": "88231"}, "call_1"), ("queryOrder", {"orderId": "88232"}, "call_2"))
DONE = answer("Both orders are signed for.")


def test_a_reply_with_text_and_no_calls_is_the_final_answer():
    llm = ScriptedLlm(DONE)
    result = FunctionCallingAgent(llm, registry()).run("Where are 88231 and 88232?")
    assert result.ok and result.reason == "final_answer" and result.answer == "Both orders are signed for."
    assert [type(e) for e in result.trace] == [LlmCall, Parsed, Final]
    assert [m["role"] for m in result.messages] == ["system", "user", "assistant"]


def test_the_request_carries_the_tools_and_no_stop_and_the_prompt_has_no_tool_list():
    tools = registry()
    llm = ScriptedLlm(DONE)
    FunctionCallingAgent(llm, tools, lang="zh").run("订单 88231 呢？")
    (request,) = llm.requests
    assert request["tools"] == function_specs(tools, "zh")
    assert request["tool_choice"] == "auto"
    assert not request["stop"]
    system = request["messages"][0]["content"]
    assert system == build_function_prompt("zh") and "queryOrder" not in system and "Action" not in system


def test_two_calls_in_one_reply_run_and_their_results_go_back_in_call_order_with_their_ids():
    llm = ScriptedLlm(TWO_ORDERS, DONE)
    result = FunctionCallingAgent(llm, registry()).run("Where are 88231 and 88232?")
    assert result.reason == "final_answer" and result.trace.rounds == 2
    assert [type(e) for e in result.trace if e.step == 1] == [
        LlmCall, Parsed, Parsed, ToolCall, ToolCall, Observation, Observation]
    assert [(c.name, c.input) for c in result.trace.tool_calls] == [
        ("queryOrder", '{"orderId":"88231"}'), ("queryOrder", '{"orderId":"88232"}')]
    assert [json.loads(o.text)["orderId"] for o in result.trace.of_type(Observation)] == ["88231", "88232"]
    # The conversation the second request sent: the assistant message with both calls, then one tool
    # message per call, in order, each quoting its call's id.
    sent = llm.requests[1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "tool"]
    assert sent[2]["content"] is None and [c["id"] for c in sent[2]["tool_calls"]] == ["call_1", "call_2"]
    assert [m["tool_call_id"] for m in sent[3:]] == ["call_1", "call_2"]
    assert json.loads(sent[4]["content"])["orderId"] == "88232"


def test_the_calls_of_one_reply_run_at_the_same_time():
    # 88231's tool waits until 88232's has started: only threads running at once let it see that.
    log, second_started = [], threading.Event()

    class Signal(list):
        def append(self, item):
            super().append(item)
            if item == "start 88232":
                second_started.set()

    log = Signal()
    llm = ScriptedLlm(TWO_ORDERS, DONE)
    result = FunctionCallingAgent(llm, registry(log=log, wait={"88231": second_started})).run("88231 and 88232?")
    assert "88231 saw the other start: True" in log
    assert log.index("start 88232") < log.index("end 88231")
    # Results still in call order, though 88232 finished first.
    assert [json.loads(o.text)["orderId"] for o in result.trace.of_type(Observation)] == ["88231", "88232"]


def test_parallel_false_runs_the_calls_one_after_the_other():
    log = []
    llm = ScriptedLlm(TWO_ORDERS, DONE)
    FunctionCallingAgent(llm, registry(log=log), parts=[RunInTurn()]).run("88231 and 88232?")
    assert log == ["start 88231", "end 88231", "start 88232", "end 88232"]


def test_an_unknown_tool_becomes_an_error_tool_message_and_the_run_goes_on():
    llm = ScriptedLlm(calls(("checkOrder", {"orderId": "88231"}, "c1")), DONE)
    result = FunctionCallingAgent(llm, registry()).run("88231?")
    (observation,) = result.trace.of_type(Observation)
    assert observation.error
    error = json.loads(observation.text)
    assert "unknown tool: checkOrder" in error["error"] and error["available_tools"] == ["queryOrder"]
    assert result.reason == "final_answer"
    assert llm.requests[1]["messages"][-1] == {"role": "tool", "tool_call_id": "c1", "content": observation.text}


def test_arguments_that_are_not_json_are_answered_with_an_error_and_the_tool_does_not_run():
    log = []
    llm = ScriptedLlm(calls(("queryOrder", '{"orderId": 88231', "c1"), ("queryOrder", {"orderId": "88232"}, "c2")),
                      DONE)
    result = FunctionCallingAgent(llm, registry(log=log)).run("88231 and 88232?")
    assert log == ["start 88232", "end 88232"]  # the broken call never reached the tool
    first, second = result.trace.of_type(Observation)
    assert first.error and "not valid JSON" in json.loads(first.text)["error"]
    assert json.loads(first.text)["example"] == {"orderId": "88231"}
    assert not second.error
    assert [p.rule for p in result.trace.of_type(Parsed)][:2] == [UNREADABLE_ARGUMENTS, TOOL_CALL]
    assert result.trace.tool_calls[0].input == '{"orderId": 88231'  # the trace shows what the model sent
    assert result.reason == "final_answer"


def test_a_tool_that_raises_becomes_an_error_tool_message():
    def broken(text):
        raise RuntimeError("the database is down")

    tools = ToolRegistry([FunctionTool("queryOrder", "Look up an order.", broken, parameters=ORDER_SCHEMA)])
    result = FunctionCallingAgent(ScriptedLlm(TWO_ORDERS, DONE), tools).run("88231 and 88232?")
    observations = result.trace.of_type(Observation)
    assert len(observations) == 2 and all(o.error and "the database is down" in o.text for o in observations)
    assert result.reason == "final_answer"


def test_a_rule_that_runs_tools_and_raises_does_not_end_the_run():
    class Exploding(StepCap):
        def run_tool(self, tools, action):
            raise OSError("no threads left")

    result = FunctionCallingAgent(ScriptedLlm(TWO_ORDERS, DONE), registry(), parts=[StopRules([Exploding(5)])]).run("?")
    assert all(o.error and "no threads left" in o.text for o in result.trace.of_type(Observation))
    assert result.reason == "final_answer"


def test_an_empty_reply_and_a_failed_call_stop_politely():
    empty = FunctionCallingAgent(ScriptedLlm(answer("  ")), registry()).run("88231?")
    assert empty.reason == "empty_reply" and isinstance(empty.trace.end, Stopped)
    failed = FunctionCallingAgent(ScriptedLlm(AuthenticationError("refused", 401)), registry()).run("88231?")
    assert failed.reason == "llm_error" and "refused" in failed.trace.end.detail


def test_text_beside_the_calls_is_the_thought_of_the_round():
    reply = calls(("queryOrder", {"orderId": "88231"}, "c1"), text="Let me look that up.")
    result = FunctionCallingAgent(ScriptedLlm(reply, DONE), registry()).run("88231?")
    assert result.trace.of_type(Parsed)[0].thought == "Let me look that up."
    assert result.messages[2]["content"] == "Let me look that up."
    assert "[Thought] Let me look that up." in result.trace.format()


def test_the_step_cap_ends_a_run_that_keeps_calling():
    llm = ScriptedLlm(calls(("queryOrder", {"orderId": "88231"}, "c1")))
    result = FunctionCallingAgent(llm, registry(), max_steps=3).run("88231?")
    assert result.reason == "max_steps" and len(llm.requests) == 3


def test_a_long_result_is_cut_before_the_model_reads_it():
    tools = ToolRegistry([FunctionTool("queryOrder", "Look up.", lambda text: "x" * 500, parameters=ORDER_SCHEMA)])
    llm = ScriptedLlm(calls(("queryOrder", {"orderId": "1"}, "c1")), DONE)
    result = FunctionCallingAgent(llm, tools, max_observation_chars=100).run("?")
    (observation,) = result.trace.of_type(Observation)
    assert observation.original_chars == 500 and observation.text.startswith("x" * 100)
    assert llm.requests[1]["messages"][-1]["content"] == observation.text


# -- lesson 10's stop rules on this loop ---------------------------------------------------------------
def test_a_repeated_call_is_warned_about_not_run_then_the_run_stops_with_a_closing_call_without_tools():
    log = []
    same = calls(("queryOrder", {"orderId": "88231"}, "c1"))
    llm = ScriptedLlm(same, same, same, answer("Order 88231 is signed for."))
    result = FunctionCallingAgent(llm, registry(log=log), parts=[StopRules([RepeatedAction()])]).run("88231?")
    assert log == ["start 88231", "end 88231"]  # ran once: the repeat was warned about, not run
    warning = result.trace.of_type(Observation)[1]
    assert warning.error and "repeated action" in warning.text
    assert [type(e) for e in result.trace if e.step == 3] == [LlmCall, Parsed, LimitReached]
    assert result.reason == "repeated_action" and result.answer == "Order 88231 is signed for."
    closing = llm.requests[-1]
    assert closing["tool_choice"] == "none" and closing["tools"] == function_specs(registry(), "en")
    # The stopped reply's call is answered (the API requires it) before the closing request.
    roles = [m["role"] for m in closing["messages"]]
    assert roles[-3:] == ["assistant", "tool", "user"]
    assert "not run" in closing["messages"][-2]["content"] and closing["messages"][-2]["tool_call_id"] == "c1"
    assert json.loads(closing["messages"][-2]["content"])["stop_rule"] == "repeated_action"  # a note, not a result


def test_a_reply_cut_at_max_tokens_runs_none_of_its_calls():
    log = []
    cut = calls(("queryOrder", {"orderId": "88231"}, "c1"), ("queryOrder", '{"orderId": "882', "c2"),
                finish_reason="length")
    llm = ScriptedLlm(cut, answer("I could not finish."))
    result = FunctionCallingAgent(llm, registry(log=log), parts=[StopRules([])]).run("88231?")
    assert log == [] and not result.trace.tool_calls
    assert result.reason == "length" and isinstance(result.trace.end, Final)
    closing = llm.requests[-1]["messages"]
    assert [m.get("tool_call_id") for m in closing if m["role"] == "tool"] == ["c1", "c2"]


def test_without_stop_rules_a_cut_reply_stops_with_length_and_no_closing_call():
    llm = ScriptedLlm(answer("Order 88231 is", finish_reason="length"))
    result = FunctionCallingAgent(llm, registry()).run("88231?")
    assert result.reason == "length" and isinstance(result.trace.end, Stopped) and len(llm.requests) == 1


def test_a_tool_timeout_is_an_error_for_that_call_only():
    release = threading.Event()
    slow = FunctionTool("queryLogistics", "Track.", lambda text: "late" if release.wait(PATIENCE) else "never")
    timeout = ToolTimeout(seconds=30, per_tool={"queryLogistics": 0.05})
    llm = ScriptedLlm(calls(("queryLogistics", {"input": "SF1"}, "c1"), ("queryOrder", {"orderId": "88231"}, "c2")),
                      DONE)
    try:
        result = FunctionCallingAgent(llm, registry(slow), parts=[StopRules([timeout])]).run("?")
    finally:
        release.set()
        timeout.join_abandoned(PATIENCE)
    late, order = result.trace.of_type(Observation)
    assert late.error and "did not answer within" in late.text
    assert not order.error and result.reason == "final_answer"


# -- the trace, the widgets ----------------------------------------------------------------------------
def test_the_trace_prints_every_call_then_every_result_and_survives_json():
    result = FunctionCallingAgent(ScriptedLlm(TWO_ORDERS, DONE), registry()).run("88231 and 88232?")
    text = result.trace.format()
    assert "[Parser]" not in text
    assert text.splitlines()[1:5] == [
        '[Tool call] queryOrder({"orderId":"88231"})',
        '[Tool call] queryOrder({"orderId":"88232"})',
        '[Tool result] {"orderId": "88231", "status": "signed"}',
        '[Tool result] {"orderId": "88232", "status": "signed"}',
    ]
    assert Trace.from_json(result.trace.to_json()).format() == text


def test_a_card_holds_every_call_and_result_of_its_round_and_the_messages_show_the_calls():
    result = FunctionCallingAgent(ScriptedLlm(TWO_ORDERS, DONE), registry()).run("88231 and 88232?")
    first, last = build_cards(result.trace)
    assert len(first.tool_calls) == 2 and len(first.observations) == 2 and first.status == "observed"
    assert first.html().count("ta-action") == 2 and first.html().count('class="ta-row ta-observation') == 2
    assert first.text() == Trace([e for e in result.trace if e.step == 1]).format(usage=True)
    assert last.status == "final"
    text = messages_text(result.messages)
    assert '-> call_1: queryOrder({"orderId": "88231"})' in text
    assert '[tool] <- call_2: {"orderId": "88232", "status": "signed"}' in text


def test_it_is_a_react_agent_for_everything_that_takes_one():
    agent = FunctionCallingAgent(ScriptedLlm(DONE), registry())
    assert isinstance(agent, ReActAgent)
    run = agent.start("88231?")
    assert run.advance() is not None and not run.done
    assert run.finish().reason == "final_answer"


@pytest.mark.parametrize("options, says", [
    ({"max_parallel": 0}, "max_parallel"),
    ({"max_steps": 0}, "max_steps"),
])
def test_settings_that_make_no_sense_are_refused(options, says):
    with pytest.raises(ValueError, match=says):
        if "max_parallel" in options:
            ParallelAct(options["max_parallel"])
        else:
            FunctionCallingAgent(ScriptedLlm(DONE), registry(), **options)
    with pytest.raises(TypeError, match="ToolRegistry"):
        FunctionCallingAgent(ScriptedLlm(DONE), [order_tool()])


# -- end to end: the classroom model over HTTP -----------------------------------------------------------
def shop_tools():
    from tinyagent.shop import Shop, shop_registry

    clock = fixed_clock("2026-06-30T19:05:23")
    shop = Shop(":memory:", clock=clock)
    return shop, shop_registry(shop, clock)


def test_a_two_order_question_gets_two_calls_in_one_reply_from_the_classroom_model():
    _, tools = shop_tools()
    result = FunctionCallingAgent(LlmClient.classroom(), tools).run("Where are my parcels for orders 88231 and 88232?")
    assert result.reason == "final_answer"
    by_round = [[c.name for c in result.trace.tool_calls if c.step == n] for n in (1, 2)]
    assert by_round == [["queryOrder", "queryOrder"], ["queryLogistics", "queryLogistics"]]
    assert result.trace.rounds == 3
    assert "SF1234567890" in result.answer and "YT2468013579" in result.answer


def test_the_classroom_refund_by_function_calling_writes_one_refund():
    shop, tools = shop_tools()
    result = FunctionCallingAgent(LlmClient.classroom(), tools).run("我上周买的扫地机不回充了，修不好我想退。订单号 88231。")
    assert result.reason == "final_answer" and "RF202606300001" in result.answer
    assert [r["orderId"] for r in shop.refunds()] == ["88231"]
    assert [c.name for c in result.trace.tool_calls] == ["queryOrder", "getCurrentTime", "searchKnowledge",
                                                          "applyRefund"]


def test_stop_rules_on_the_classroom_loop_variant_end_with_its_best_answer():
    _, tools = shop_tools()
    result = FunctionCallingAgent(LlmClient.classroom("classroom-loop"), tools,
                                  parts=[StopRules([RepeatedAction()])]).run("Where is the parcel of order 88231?")
    assert result.reason == "repeated_action" and isinstance(result.trace.end, Final)
    assert "88231" in result.answer


def test_calls_without_ids_from_a_real_server_get_ids_their_tool_messages_answer(scripted_server):
    def reply(message, finish="tool_calls"):
        return (200, {"choices": [{"message": message, "finish_reason": finish}],
                      "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12}}, {})

    scripted_server.responses = [
        reply({"role": "assistant", "content": None, "tool_calls": [
            {"type": "function", "function": {"name": "queryOrder", "arguments": '{"orderId": "88231"}'}},
            {"type": "function", "function": {"name": "queryOrder", "arguments": {"orderId": "88232"}}},
        ]}),
        reply({"role": "assistant", "content": "Both are signed for."}, "stop"),
    ]
    llm = LlmClient(scripted_server.url, None, "local")
    result = FunctionCallingAgent(llm, registry()).run("88231 and 88232?")
    assert result.answer == "Both are signed for."
    sent = scripted_server.requests[1]["json"]["messages"]
    ids = [c["id"] for c in sent[2]["tool_calls"]]
    assert ids == ["call_1_0", "call_1_1"]
    assert [m["tool_call_id"] for m in sent[3:]] == ids
    assert sent[2]["tool_calls"][1]["function"]["arguments"] == '{"orderId": "88232"}'  # sent back as a string
    assert scripted_server.requests[0]["json"]["tools"][0]["function"]["name"] == "queryOrder"


def test_import_tinyagent_loads_the_function_calling_modules_only_when_they_are_used():
    import subprocess
    import sys

    script = ("import sys, tinyagent; before = sorted(m for m in sys.modules if m.split('.')[-1] in "
              "('function_agent', 'tool_calls')); from tinyagent import FunctionCallingAgent; "
              "print(before, FunctionCallingAgent.__module__)")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["[]", "tinyagent.protocols.function_calling"]


def test_the_step_debugger_shows_a_reply_with_several_calls_as_one_model_step_and_one_tool_step():
    pytest.importorskip("ipywidgets")
    from tinyagent.widgets import StepDebugger

    debugger = StepDebugger(FunctionCallingAgent(ScriptedLlm(TWO_ORDERS, DONE), registry()), "88231 and 88232?")
    assert [type(e).__name__ for e in debugger.step()] == ["LlmCall", "Parsed", "Parsed", "ToolCall", "ToolCall"]
    assert debugger.next_action() == ('run the tools queryOrder({"orderId":"88231"}), '
                                      'queryOrder({"orderId":"88232"})')
    assert [type(e).__name__ for e in debugger.step()] == ["Observation", "Observation"]
    assert [m["role"] for m in debugger.run.messages][-3:] == ["assistant", "tool", "tool"]
    assert debugger.next_action() == "call the model"
    assert [type(e).__name__ for e in debugger.step()] == ["LlmCall", "Parsed", "Final"]
    assert (debugger.model_calls, debugger.tool_calls, debugger.step_count) == (2, 2, 3)
