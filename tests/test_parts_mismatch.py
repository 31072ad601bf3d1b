"""Parts of different lessons mounted together: a combination that cannot work is refused when the agent is made,
with a message that says what to do; one that can work keeps each part's promise."""

from __future__ import annotations

import pytest

from tinyagent import ConfirmationGate, FunctionCallingAgent, LlmClient, ReActAgent, ToolRegistry, fixed_clock
from tinyagent.architectures.handoffs import (
    Handoff,
    HandoffAct,
    OwnEvents,
    Team,
    TriageAgent,
    handoff_tool,
    shop_specialists,
)
from tinyagent.architectures.tree_search import BranchExplored, TreeNote, TreeSearch, shop_rule
from tinyagent.defences.fenced_data import FencedData, unfence
from tinyagent.defences.least_privilege import OfferOnly
from tinyagent.loop_parts import StrictRead, WholeConversation
from tinyagent.memory.context_budget import BudgetedRequest, ContextBudget
from tinyagent.memory.plain_turns import run_turns
from tinyagent.memory.tool_filter import ToolFilter
from tinyagent.protocols.constrained_decoding import ConstrainedSend, JsonStepRead, WithExample
from tinyagent.protocols.function_calling import NativeRead, NativeRequest, ParallelAct
from tinyagent.robustness.tolerant_parser import TolerantRead
from tinyagent.shop import Shop, shop_registry
from tinyagent.shop.long_session import LONG_SESSION
from tinyagent.shop.tool_hints import SHOP_TOOL_HINTS
from tinyagent.toolkit.confirmation import GatedAct

CLOCK = fixed_clock("2026-06-30T19:05:23")
QUESTIONS = [task.question for task in LONG_SESSION]


def tools():
    return shop_registry(Shop(":memory:", clock=CLOCK), CLOCK)


# -- 1. a part of one protocol on the agent of the other ----------------------------------------------------------
@pytest.mark.parametrize("part", [NativeRequest(), NativeRead()], ids=repr)
def test_a_function_calling_part_on_a_text_agent_is_refused_when_the_agent_is_made(part):
    # NativeRequest raised AttributeError ('tool_specs') at the first step; NativeRead took the model's first
    # "Action:" step for its final answer
    with pytest.raises(TypeError, match=r"is a part for the function calling protocol, and this agent speaks the "
                                        r"text protocol: mount it on an agent that speaks function calling"):
        ReActAgent(LlmClient.classroom(), tools(), parts=[part])


@pytest.mark.parametrize("part", [StrictRead(), WholeConversation(), TreeSearch(), TolerantRead(), JsonStepRead(),
                                  ConstrainedSend(), WithExample()], ids=repr)
def test_a_text_part_on_a_function_calling_agent_is_refused_when_the_agent_is_made(part):
    # the text read stopped the run at the first tool call ("native_tool_calls"); the text request sent no tools
    with pytest.raises(TypeError, match=r"is a part for the text protocol, and this agent speaks the function "
                                        r"calling protocol"):
        FunctionCallingAgent(LlmClient.classroom(), tools(), parts=[part])


class LinesRead(StrictRead):
    """A learner's own read part: it reads Thought / Action lines and names no protocol."""

    protocol = None


def test_a_read_part_that_names_no_protocol_reads_text_and_a_function_calling_agent_refuses_it():
    # a read that says nothing reads "Action:" lines (every read but NativeRead does): the first tool call ended the
    # run as "native_tool_calls"
    with pytest.raises(TypeError, match=r"names no protocol, so it is taken to read the text protocol's lines, and a "
                                        r"FunctionCallingAgent's replies are tool calls: leave that read part out "
                                        r"\(NativeRead reads them\).*give its class protocol = 'function calling'"):
        FunctionCallingAgent(LlmClient.classroom(), tools(), parts=[LinesRead()])

    class CallsRead:  # a learner's own read of the tool calls, which says so: it mounts, and reads them
        slot, protocol = "read", "function calling"

        def __call__(self, run, step, reply):
            return NativeRead()(run, step, reply)

        def parse(self, text, finish_reason=None, tools=None):
            return NativeRead().parse(text, finish_reason, tools)

    assert isinstance(FunctionCallingAgent(LlmClient.classroom(), tools(), parts=[CallsRead()]).parts.read, CallsRead)


def test_parts_of_either_protocol_or_of_none_still_mount_where_they_belong():
    native = FunctionCallingAgent(LlmClient.classroom(), tools(), parts=[NativeRequest("required"), NativeRead()])
    assert isinstance(native.parts.read, NativeRead) and native.parts.request.tool_choice == "required"
    text = ReActAgent(LlmClient.classroom(), tools(), parts=[TolerantRead(), ParallelAct(2)])
    assert isinstance(text.parts.read, TolerantRead) and isinstance(text.parts.act, ParallelAct)
    assert ReActAgent(LlmClient.classroom(), tools(), parts=[StrictRead()]).run("现在几点？").reason == "final_answer"


# -- 2. a confirmation gate and the handoffs on one triage --------------------------------------------------------
def hand_built_triage(*order: str):
    """A triage made by hand, as Team makes its own, with a gate and the handoffs in `order`."""
    llm = LlmClient.classroom()
    team = Team(llm, shop_specialists(llm, tools()))
    triage_tools = ToolRegistry([handoff_tool(member) for member in team.members.values()])
    made = {"gate": GatedAct(ConfirmationGate(("applyRefund",), ask=lambda request: True)), "handoffs": HandoffAct(team)}
    return TriageAgent(llm, triage_tools, parts=[*(made[name] for name in order), OwnEvents()])


@pytest.mark.parametrize("order, says", [
    # the gate around the handoffs ran them as plain tools: "handOffToRefunds runs only inside a team's loop"
    (("handoffs", "gate"), r"GatedAct.* would go around HandoffAct.*, which settles each call itself before it runs"),
    # the handoffs around the gate never asked it: a guarded call was refused as "no approval was asked"
    (("gate", "handoffs"), r"HandoffAct.* would go around GatedAct.*mount the gate on the specialists"),
])
def test_a_gate_and_the_handoffs_on_one_hand_built_triage_are_refused_in_either_order(order, says):
    with pytest.raises(TypeError, match=says):
        hand_built_triage(*order)


def test_the_handoffs_alone_still_hand_off():
    result = hand_built_triage("handoffs").run("Where is my parcel for order 88231?")
    assert [(h.target, h.back) for h in result.trace.of_type(Handoff)] == [("logistics", False), ("logistics", True)]
    assert result.reason == "final_answer" and "SF1234567890" in result.answer


# -- 3. a request part around the budget ----------------------------------------------------------------------------
class Recorder:
    """Passes every call on to the model and keeps what was sent."""

    def __init__(self, llm):
        self.llm, self.model = llm, getattr(llm, "model", "")
        self.sent: list[tuple[list[dict], list[dict] | None]] = []

    def chat(self, messages, **options):
        self.sent.append(([dict(m) for m in messages], options.get("tools")))
        return self.llm.chat(messages, **options)


@pytest.mark.parametrize("agent_class, after", [
    (ReActAgent, FencedData()), (FunctionCallingAgent, FencedData()), (ReActAgent, WithExample()),
    (ReActAgent, OfferOnly(["queryOrder"])), (FunctionCallingAgent, OfferOnly(["queryOrder"])),
], ids=lambda value: value.__name__ if isinstance(value, type) else type(value).__name__)
def test_a_request_part_listed_after_the_budget_is_refused_and_says_which_order_to_use(agent_class, after):
    # [BudgetedRequest(b), FencedData()]: the fence went round the fitted request, and 2 of 25 requests of a
    # 10-turn session went over a 1,500-token budget with nothing said
    name = type(after).__name__
    with pytest.raises(TypeError, match=rf"{name}.* would go around BudgetedRequest.*, which must be the last request "
                                        rf"part .*: list {name} before BudgetedRequest"):
        agent_class(LlmClient.classroom(), tools(), parts=[BudgetedRequest(ContextBudget(1500)), after])


@pytest.mark.parametrize("agent_class", [ReActAgent, FunctionCallingAgent], ids=["text", "function"])
def test_the_fence_listed_before_the_budget_keeps_every_request_within_it(agent_class):
    recorder, budget = Recorder(LlmClient.classroom()), ContextBudget(1500, tool_filter=ToolFilter(SHOP_TOOL_HINTS))
    run_turns(agent_class(recorder, tools(), parts=[FencedData(), BudgetedRequest(budget)]), QUESTIONS[:10])
    sent = [budget.count(messages, specs) for messages, specs in recorder.sent]
    assert len(sent) > 10 and max(sent) <= 1500, max(sent)
    assert any("<data source=" in str(m.get("content")) for messages, _ in recorder.sent for m in messages)


# -- 4. the tree search's look-ahead under the fence ----------------------------------------------------------------
def test_a_looked_ahead_observation_goes_to_the_model_fenced():
    # the look-ahead appended "Observation: <the tool's text>" itself: under FencedData the model read the result of
    # queryOrder, getTime and searchKnowledge unfenced in the search's requests
    recorder = Recorder(LlmClient.classroom())
    search = TreeSearch(3, 2, 2, rule=shop_rule)
    result = ReActAgent(recorder, tools(), parts=[search, FencedData()]).run("我的扫地机不回充了，想退货，订单号 88234")
    observations = [m["content"].removeprefix("Observation: ") for messages, _ in recorder.sent for m in messages
                    if m["role"] == "user" and m["content"].startswith("Observation: ")]
    assert observations and all(unfence(text) is not None for text in observations), observations
    looked_ahead = [e for e in result.trace.of_type(BranchExplored) if e.ran]
    assert looked_ahead  # the search did run a tool on a branch, and what it returned was sent fenced
    assert {unfence(text)[1] for text in observations} >= {e.tool for e in looked_ahead}


def test_a_looked_ahead_branch_without_a_request_part_that_changes_it_is_the_conversation_as_before():
    recorder = Recorder(LlmClient.classroom())
    ReActAgent(recorder, tools(), parts=[TreeSearch(3, 2, 2, rule=shop_rule)]).run("我的扫地机不回充了，想退货，订单号 88234")
    branches = [messages for messages, _ in recorder.sent if any(m["content"].startswith("Observation: ")
                                                                for m in messages if m["role"] == "user")]
    assert branches and all(m["content"].startswith("Observation: {") for messages in branches for m in messages
                            if m["role"] == "user" and m["content"].startswith("Observation: "))


def test_every_request_of_the_search_is_built_within_the_context_budget_and_the_run_goes_on():
    # The search's requests (its propose and score prompts, and each looked-ahead branch) are built through the budget
    # as the loop's are: one that cannot fit is a note, and the search goes on without it (the greedy step at worst).
    # Before, the prompts were added after the fitted request, and went over the budget.
    budget = ContextBudget(1000)
    recorder = Recorder(LlmClient.classroom())
    agent = ReActAgent(recorder, tools(), parts=[TreeSearch(3, 2, 2, rule=shop_rule), FencedData(),
                                                 BudgetedRequest(budget)])
    result = agent.run("我的扫地机不回充了，想退货，订单号 88234")
    notes = [note for note in result.trace.of_type(TreeNote) if note.stage == "budget"]
    assert result.reason == "final_answer"
    assert notes and notes[0].detail.startswith("the search's request could not be built: even the smallest request")
    assert max(budget.count(messages) for messages, _ in recorder.sent) <= budget.max_tokens
