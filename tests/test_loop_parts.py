"""The loop takes parts (loop_parts.py): a new part plugs in without touching agent.py, each keyword picks one,
and lesson 06's loop stays lesson 06's."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys

import pytest

from tinyagent import (
    FunctionCallingAgent,
    LlmCall,
    LlmClient,
    Observation,
    ReActAgent,
    ReplyDelta,
    ToolCall,
    fixed_clock,
)
from tinyagent.agent import AgentRun
from tinyagent.loop_parts import LoopParts, PlainSend, RunInTurn, StrictRead, WholeConversation
from tinyagent.memory.context_budget import BudgetedRequest, ContextBudget
from tinyagent.protocols.function_calling import NativeRead, NativeRequest, ParallelAct
from tinyagent.protocols.streaming import StreamedSend
from tinyagent.robustness.tolerant_parser import TolerantRead
from tinyagent.shop import Shop, refund_gate, shop_registry
from tinyagent.toolkit.confirmation import GatedAct

CLOCK = fixed_clock("2026-06-30T19:05:23")
REFUND = "我上周买的扫地机不回充了，修不好我想退。订单号 88231。"
LOGISTICS = "帮我看看订单 88231 的快递到哪了。"


def tools():
    return shop_registry(Shop(":memory:", clock=CLOCK), CLOCK)


class RecordingSend:
    """A part of our own: sends as the send part it wraps does, and keeps every request it sent."""

    slot = "send"

    def __init__(self, inner=None):
        self.inner = inner
        self.sent: list[tuple[int, list[dict], dict]] = []

    def around(self, inner):
        self.inner = inner  # the recording is read after the run: this very part is mounted
        return self

    def __call__(self, run, step, messages, **options):
        self.sent.append((step, [dict(m) for m in messages], dict(options)))
        return (yield from self.inner(run, step, messages, **options))


def test_a_part_of_our_own_records_every_request_without_touching_the_loop():
    recorder = RecordingSend()
    recorded = ReActAgent(LlmClient.classroom(), tools(), parts=[recorder]).run(REFUND)
    plain = ReActAgent(LlmClient.classroom(), tools()).run(REFUND)
    calls = recorded.trace.of_type(LlmCall)
    assert [step for step, _, _ in recorder.sent] == [call.step for call in calls] == [1, 2, 3, 4, 5]
    assert [tuple(messages) for _, messages, _ in recorder.sent] == [call.messages for call in calls]
    assert all(options == {"stop": ("Observation:",), "max_tokens": None} for _, _, options in recorder.sent)
    assert recorded.answer == plain.answer and len(recorded.trace.events) == len(plain.trace.events)


def test_a_recording_part_wraps_a_streamed_send_and_a_native_request_alike():
    recorder = RecordingSend()
    result = FunctionCallingAgent(LlmClient.classroom(), tools(), parts=[StreamedSend(), recorder]).run(LOGISTICS)
    assert result.reason == "final_answer" and result.trace.of_type(ReplyDelta)
    assert all(options["tools"] and options["tool_choice"] == "auto" for _, _, options in recorder.sent)
    assert len(recorder.sent) == len(result.trace.of_type(LlmCall))


def test_each_later_part_takes_its_slot_and_a_wrapping_part_wraps_what_holds_it():
    shop_tools = tools()
    llm = LlmClient.classroom()
    plain = ReActAgent(llm, shop_tools).parts
    assert (type(plain.request), type(plain.send), type(plain.read), type(plain.act)) == (
        WholeConversation, PlainSend, StrictRead, RunInTurn)
    assert isinstance(ReActAgent(llm, shop_tools, parts=[TolerantRead(max_format_errors=3)]).parts.read, TolerantRead)
    budgeted = ReActAgent(llm, shop_tools, parts=[BudgetedRequest(ContextBudget(2000))]).parts.request
    assert isinstance(budgeted, BudgetedRequest) and isinstance(budgeted.inner, WholeConversation)
    assert isinstance(ReActAgent(llm, shop_tools, parts=[StreamedSend()]).parts.send, StreamedSend)
    gated = ReActAgent(llm, shop_tools, parts=[GatedAct(refund_gate(Shop(":memory:")))]).parts.act
    assert isinstance(gated, GatedAct) and isinstance(gated.inner, RunInTurn)
    native = FunctionCallingAgent(llm, shop_tools, parts=[BudgetedRequest(ContextBudget(2000)), StreamedSend()]).parts
    assert isinstance(native.request, BudgetedRequest) and isinstance(native.request.inner, NativeRequest)
    assert isinstance(native.read, NativeRead) and isinstance(native.act, ParallelAct)
    assert isinstance(native.send, StreamedSend)
    assert type(FunctionCallingAgent(llm, shop_tools, parts=[RunInTurn()]).parts.act) is RunInTurn


@pytest.mark.parametrize("agent_class", [ReActAgent, FunctionCallingAgent], ids=["text", "function"])
def test_a_part_that_takes_its_slot_whole_may_not_throw_away_one_listed_before_it(agent_class):
    # [GatedAct(gate), RunInTurn()] mounted RunInTurn in the gate's place: a refund was written with nobody asked.
    shop = Shop(":memory:")
    with pytest.raises(TypeError, match=r"RunInTurn.* takes the act slot whole, and would throw away GatedAct"):
        agent_class(LlmClient.classroom(), tools(), parts=[GatedAct(refund_gate(shop)), RunInTurn()])
    whole = NativeRequest() if agent_class is FunctionCallingAgent else WholeConversation()  # of the agent's protocol
    with pytest.raises(TypeError, match=r"(NativeRequest|WholeConversation).* takes the request slot whole, and would "
                                        r"throw away Budget"):
        agent_class(LlmClient.classroom(), tools(), parts=[BudgetedRequest(ContextBudget(900)), whole])
    listed_first = agent_class(LlmClient.classroom(), tools(), parts=[RunInTurn(), GatedAct(refund_gate(shop))])
    assert isinstance(listed_first.parts.act, GatedAct) and isinstance(listed_first.parts.act.inner, RunInTurn)


def test_a_part_is_checked_when_the_agent_is_made():
    class NoSlot:
        def __call__(self, run, step, messages, **options):
            yield

    class HalfARead:
        slot = "read"

        def __call__(self, run, step, reply):
            return None

    class NotARequest:
        slot = "request"

    with pytest.raises(TypeError, match="names no slot of the loop"):
        ReActAgent(LlmClient.classroom(), tools(), parts=[NoSlot()])
    with pytest.raises(TypeError, match="a list of parts"):
        ReActAgent(LlmClient.classroom(), tools(), parts={"send": PlainSend()})
    with pytest.raises(TypeError, match=r"the read part .* needs .*parse\(text, finish_reason, tools\)"):
        ReActAgent(LlmClient.classroom(), tools(), parts=[HalfARead()])
    with pytest.raises(TypeError, match=r"the request part .* needs build\(run, closing=False\)"):
        ReActAgent(LlmClient.classroom(), tools(), parts=[NotARequest()])
    with pytest.raises(TypeError, match="the act part"):
        LoopParts(WholeConversation(), PlainSend(), StrictRead(), object(), ReActAgent(
            LlmClient.classroom(), tools()).stop_rules)


def test_a_part_that_remembers_starts_afresh_in_every_run():
    """TolerantRead counts botched replies; a second run of the same agent must not inherit the first's."""
    agent = ReActAgent(LlmClient.classroom("classroom-forgets-action"), tools(), parts=[TolerantRead(max_format_errors=1)])
    first, second = agent.run(LOGISTICS), agent.run(LOGISTICS)
    assert first.reason == second.reason
    assert [type(e).__name__ for e in first.trace.events] == [type(e).__name__ for e in second.trace.events]
    assert agent.parts.read.errors == 0  # the agent's own part was never used by a run


def test_lesson_06_prints_a_short_loop_that_no_later_lesson_is_in():
    source = inspect.getsource(AgentRun.loop)
    assert len(source.splitlines()) <= 50
    assert not re.search(r"[Ll]esson (0[7-9]|1\d)|tolerant|budget|stream|confirm|gate|native|tool_calls", source)


def test_the_gate_reads_nothing_private_of_the_run():
    source = inspect.getsource(GatedAct) + inspect.getsource(refund_gate(Shop(":memory:")).settle)
    assert not re.search(r"\brun\._\w+", source)


def test_a_run_is_closed_at_a_pause_and_nothing_runs_later():
    with Shop(":memory:", clock=CLOCK) as shop:
        gate = refund_gate(shop)
        run = ReActAgent(LlmClient.classroom(), shop_registry(shop, CLOCK), parts=[GatedAct(gate)]).start(REFUND)
        while run.advance() is not None and not gate.pending:
            pass
        run.close()
        assert not gate.pending and shop.refunds() == [] and run.advance() is None
        assert gate.log[-1][1].outcome == "error"


def test_sequential_native_calls_run_one_at_a_time_as_their_results_are_read():
    """RunInTurn runs a tool when its result is asked for: in function calling without `parallel`, the second
    call of a reply has not run when the first call's Observation is out."""
    ran: list[str] = []
    shop_tools = tools()
    original = shop_tools.run

    def counting(action):
        ran.append(action.tool_name)
        return original(action)

    shop_tools.run = counting
    run = FunctionCallingAgent(LlmClient.classroom(), shop_tools, parts=[RunInTurn()]).start(
        "帮我看看订单 88231 和 88232 的快递到哪了。")
    while not isinstance(event := run.advance(), Observation):
        assert not isinstance(event, ToolCall) or not ran
    assert ran == ["queryOrder"]
    run.finish()


def test_importing_the_loop_loads_no_later_lessons_part():
    code = ("import sys, tinyagent.agent; late = ['tinyagent.toolkit.confirmation', 'tinyagent.memory.context_budget', "
            "'tinyagent.protocols.function_calling']; print([m for m in late if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("steps", [float("nan"), "3", 0, -1, True, 2.5])
def test_a_step_limit_that_is_no_positive_whole_number_is_refused_at_once(steps):
    # StepLimit(nan) never stopped (rounds >= nan is always false): the loop ran on.
    from tinyagent.loop_parts import StepLimit

    with pytest.raises(ValueError, match="StepLimit\\(max_steps\\) must be a positive whole number"):
        StepLimit(steps)


@pytest.mark.parametrize("limit", [-5, 0, 2.5, float("nan")])
def test_cut_observation_refuses_a_limit_that_is_no_positive_whole_number(limit):
    # -5 gave "abcde" and "this is the first -5": a false note to the model.
    from tinyagent.loop_parts import cut_observation

    with pytest.raises(ValueError, match="limit must be a positive whole number"):
        cut_observation("abcdefghij", limit)
