"""tree_search.py (lesson 22): candidates proposed, scored by the model and a rule, looked ahead within a budget;
never a side effect on a branch that was not chosen; a reply it cannot read is a note in the trace."""

from __future__ import annotations

import json
import re
import time
from dataclasses import replace

import pytest

from tinyagent import ChatResult, FunctionTool, LlmClient, ReActAgent, ToolRegistry, Trace
from tinyagent.architectures.tree_search import (
    PROPOSE_PROMPT,
    SCORE_PROMPT,
    BranchExplored,
    Candidate,
    Node,
    PathChosen,
    ThoughtCandidate,
    TreeBudget,
    TreeNote,
    TreeSearch,
    keep_best,
    read_candidates,
    read_scores,
    requests_made,
    search_cost,
    shop_rule,
    tokens_spent,
    tree_mermaid,
    tree_text,
)
from tinyagent.classroom.server import ensure_classroom_server
from tinyagent.editable_trace import PERSON
from tinyagent.events import LlmCall
from tinyagent.parser import parse_step
from tinyagent.protocols.token_count import classroom_counter
from tinyagent.shop import Shop, shop_registry
from tinyagent.toolkit.confirmation import ApprovalDecided, ConfirmationGate, GatedAct

from .lesson17_helpers import CLOCK, ScriptedLlm

WRONG_ORDER = "我的扫地机不回充了，想退货，订单号 88234"
WRONG_ORDER_EN = "My robot vacuum will not go back to its dock any more, I want to return it. The order number is 88234."
SEED_REFUND = "我上周买的扫地机不回充了，想退货，订单号 88231"
# What the search's two prompts say (tree_search.PROPOSE_PROMPT and SCORE_PROMPT), in both languages.
SEARCH_PHRASES = ("different next steps", "个不同的下一步", "Score each candidate", "给每个候选步骤打分")
TREE_EVENTS = (ThoughtCandidate, BranchExplored, TreeNote, PathChosen)


@pytest.fixture(scope="module")
def llm():
    return LlmClient.classroom()


def shop_and_tools():
    shop = Shop(":memory:", clock=CLOCK)
    return shop, shop_registry(shop, CLOCK)


def tree_agent(llm, tools, **options):
    search = TreeSearch(options.pop("k", 3), options.pop("beam", 2), options.pop("depth", 2),
                        options.pop("rule", shop_rule), options.pop("budget", None))
    return ReActAgent(llm, tools, parts=[search, *options.pop("parts", [])], **options)


def tree_of(trace: Trace) -> list[dict]:
    return [event.to_dict() for event in trace if isinstance(event, TREE_EVENTS)]


# -- the request the greedy loop gets wrong ---------------------------------------------------------------------
@pytest.mark.parametrize("question", [WRONG_ORDER, WRONG_ORDER_EN])
def test_the_greedy_loop_refunds_the_wrong_item_and_the_tree_asks(llm, question):
    shop, tools = shop_and_tools()
    greedy = ReActAgent(llm, tools).run(question)
    assert [call.name for call in greedy.trace.tool_calls][-1] == "applyRefund"
    assert [r["orderId"] for r in shop.refunds()] == ["88234"]  # the 39-yuan filter set, not the vacuum

    shop, tools = shop_and_tools()
    tree = tree_agent(llm, tools).run(question)
    assert tree.reason == "final_answer" and shop.refunds() == []
    assert [call.name for call in tree.trace.tool_calls] == ["queryOrder"]
    assert "扫地机边刷滤网套装" in tree.answer and "88234" in tree.answer
    chosen = tree.trace.of_type(PathChosen)
    assert [c.path for c in chosen] == [("1", "1.2"), ("2",)]


# -- the budget -------------------------------------------------------------------------------------------------
def is_search_call(messages) -> bool:
    last = messages[-1].get("content") if messages else ""
    return isinstance(last, str) and any(p in last for p in SEARCH_PHRASES)


@pytest.mark.parametrize("budget", [TreeBudget(calls=1), TreeBudget(calls=3), TreeBudget(calls=5),
                                    TreeBudget(calls=9), TreeBudget(tokens=1200), TreeBudget(tokens=3000),
                                    TreeBudget(calls=7, tokens=5000), TreeBudget(calls=40, tokens=40000)])
def test_the_tree_keeps_to_its_budget_by_what_the_server_received(llm, budget):
    server = ensure_classroom_server()
    _, tools = shop_and_tools()
    with server.recording() as log:
        result = tree_agent(llm, tools, budget=budget).run(WRONG_ORDER)
    received = [r for r in log if r.path.endswith("/chat/completions") and is_search_call(r.messages)]
    searched = [call for call in result.trace.of_type(LlmCall) if is_search_call(call.messages)]
    assert len(searched) == len(received) > 0  # each request the server got for a search is in the trace
    assert search_cost(result.trace) == (len(searched), sum(call.usage["total_tokens"] for call in searched))
    assert budget.calls is None or len(received) <= budget.calls
    assert budget.tokens is None or sum(call.usage["total_tokens"] for call in searched) <= budget.tokens
    assert result.reason == "final_answer"  # a spent budget means greedy steps, never a crash
    chosen = result.trace.of_type(PathChosen)
    assert all(c.calls <= (budget.calls or 10**9) and c.tokens <= (budget.tokens or 10**9) for c in chosen)


class UncountedLlm:
    """The classroom model behind a server that does not count: every reply's usage is all zeros, or absent."""

    def __init__(self, llm, usage):
        self.llm, self.usage = llm, usage

    def chat(self, messages, **options):
        return replace(self.llm.chat(messages, **options), usage=dict(self.usage))


@pytest.mark.parametrize("usage", [{"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}, {}],
                         ids=["zero usage", "no usage"])
@pytest.mark.parametrize("budget", [TreeBudget(tokens=1200), TreeBudget(tokens=3000), TreeBudget(tokens=5000)],
                         ids=lambda budget: f"{budget.tokens} tokens")
def test_a_model_that_reports_no_usage_still_pays_for_what_was_sent_and_received(llm, usage, budget):
    server = ensure_classroom_server()
    _, tools = shop_and_tools()
    with server.recording() as log:
        result = tree_agent(UncountedLlm(llm, usage), tools, budget=budget).run(WRONG_ORDER)
    sent = [r.messages for r in log if r.path.endswith("/chat/completions") and is_search_call(r.messages)]
    searched = [call for call in result.trace.of_type(LlmCall) if is_search_call(call.messages)]
    assert len(sent) == len(searched) > 0 and all(call.usage == usage for call in searched)
    counter = classroom_counter()
    spent = sum(counter.chat(messages) for messages in sent) + sum(counter.text(call.text) for call in searched)
    assert spent <= budget.tokens  # by what went over the wire, not by what the model said it cost
    assert search_cost(result.trace) == (len(sent), spent)
    assert result.trace.of_type(PathChosen)[-1].tokens == spent
    assert any(n.stage == "budget" for n in result.trace.of_type(TreeNote))  # it stopped: the budget did bind
    # The classroom model's usage is that same count, so the search it allows is the one an honest model gets.
    _, tools = shop_and_tools()
    honest = tree_agent(llm, tools, budget=budget).run(WRONG_ORDER)
    assert tree_of(honest.trace) == tree_of(result.trace) and search_cost(honest.trace) == (len(sent), spent)


def test_a_reply_is_charged_its_reported_usage_or_else_its_count():
    messages = [{"role": "user", "content": "Where is order 88231?"}]  # 3 + 5 tokens, 3 to start the reply
    assert tokens_spent(messages, "Thought: x", {"total_tokens": 40}) == 40
    for usage in ({}, None, {"total_tokens": 0}, {"total_tokens": None}, {"total_tokens": "40"},
                  {"total_tokens": True}, {"total_tokens": float("nan")}, {"total_tokens": float("inf")},
                  {"total_tokens": -5}, {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}):
        assert tokens_spent(messages, "Thought: x", usage) == 11 + 3, usage  # and "Thought: x" is 3


def test_requests_made_counts_a_silent_model_s_call_but_not_a_person_s_reply():
    messages = ({"role": "user", "content": "Where is order 88231?"},)
    trace = Trace([LlmCall(1, messages, "Thought: x", usage={}, model="silent"),
                   LlmCall(2, messages, "Thought: y", usage={}, model=PERSON),
                   LlmCall(3, messages, "Thought: z", usage={"total_tokens": 30}, model="honest")])
    assert requests_made(trace) == (2, 14 + 30)  # the person's reply is neither a model call nor tokens


def test_a_search_that_no_longer_fits_says_so_and_the_rounds_after_it_are_greedy(llm):
    shop, tools = shop_and_tools()
    result = tree_agent(llm, tools, budget=TreeBudget(calls=3)).run(WRONG_ORDER)
    notes = [n for n in result.trace.of_type(TreeNote) if n.stage == "budget"]
    assert notes and "does not fit the budget (3 of 3 calls" in notes[0].detail
    assert [c.step for c in result.trace.of_type(PathChosen)] == [1]
    assert [r["orderId"] for r in shop.refunds()] == ["88234"]  # too small a budget: the greedy mistake again


def test_the_search_phrases_are_in_the_prompts():
    prompts = [PROPOSE_PROMPT["en"], PROPOSE_PROMPT["zh"], SCORE_PROMPT["en"], SCORE_PROMPT["zh"]]
    assert [sum(p in prompt for prompt in prompts) for p in SEARCH_PHRASES] == [1, 1, 1, 1]


def test_a_budget_must_be_whole_numbers():
    with pytest.raises(ValueError):
        TreeBudget(calls=0)
    with pytest.raises((TypeError, ValueError)):
        TreeBudget(tokens=1.5)


# -- the same tree every run --------------------------------------------------------------------------------------
def test_the_same_tree_every_run(llm):
    runs = []
    for _ in range(3):
        _, tools = shop_and_tools()
        runs.append(tree_agent(llm, tools).run(WRONG_ORDER).trace)
    assert tree_of(runs[0]) == tree_of(runs[1]) == tree_of(runs[2])
    assert tree_text(runs[0]) == tree_text(runs[2]) and tree_mermaid(runs[0], 1) == tree_mermaid(runs[1], 1)
    assert len({c["node"] for c in tree_of(runs[0]) if c["type"] == "thought_candidate" and c["step"] == 1}) == 9


def test_the_mermaid_drawing_has_every_round_chained_and_the_chosen_path_bold(llm):
    _, tools = shop_and_tools()
    trace = tree_agent(llm, tools).run(WRONG_ORDER).trace
    drawing = tree_mermaid(trace)
    assert drawing.startswith("flowchart TD") and '  r1(["round 1"])' in drawing and '  r2(["round 2"])' in drawing
    assert "  r1 ==> r1_1" in drawing and "  r1_1 ==> r1_1_2" in drawing and "  r1 --> r1_2" in drawing
    assert "  r1_1 -.-> r2" in drawing  # round 1 took candidate 1, and round 2 starts from it
    assert "  style r1_1_2 stroke-width:3px" in drawing and "  style r2_2 stroke-width:3px" in drawing
    assert tree_mermaid(trace, 2).startswith('flowchart TD\n  r2(["round 2"])') and "r1" not in tree_mermaid(trace, 2)


def test_a_round_the_budget_left_without_a_search_is_drawn_as_one(llm):
    _, tools = shop_and_tools()
    trace = tree_agent(llm, tools, budget=TreeBudget(calls=3)).run(WRONG_ORDER).trace
    drawing = tree_mermaid(trace)
    assert '  r2(["round 2: no search (budget)"])' in drawing and "  r1_1 -.-> r2" in drawing
    assert "  r2 -.-> r3" in drawing


# -- side effects -----------------------------------------------------------------------------------------------
def spied(tools: ToolRegistry, name: str, read_only: bool | None = None):
    """`tools` with `name` wrapped so that every run of it is counted (and its read_only set, if given)."""
    real, runs = tools.get(name), []

    def counted(text: str) -> str:
        runs.append(text)
        return real.invoke(text)

    tool = FunctionTool(name, real.description, counted, real.descriptions)
    tool.read_only = real.read_only if read_only is None else read_only
    return ToolRegistry([tool if t.name == name else t for t in tools]), runs


def test_exploring_never_runs_a_tool_that_changes_something(llm):
    shop, tools = shop_and_tools()
    tools, refunds = spied(tools, "applyRefund")
    result = tree_agent(llm, tools, depth=3, beam=3).run(WRONG_ORDER)
    candidates = [c for c in result.trace.of_type(ThoughtCandidate) if c.tool_name == "applyRefund"]
    assert candidates and refunds == [] and shop.refunds() == []
    assert all(not e.ran for e in result.trace.of_type(BranchExplored) if e.tool == "applyRefund")


def test_a_look_up_that_does_not_say_it_is_read_only_runs_only_on_the_chosen_path(llm):
    _, tools = shop_and_tools()
    tools, looked_up = spied(tools, "queryOrder", read_only=False)
    result = tree_agent(llm, tools).run(WRONG_ORDER)
    committed = [call for call in result.trace.tool_calls if call.name == "queryOrder"]
    assert len(looked_up) == len(committed) == 1
    explored = [e for e in result.trace.of_type(BranchExplored) if e.tool == "queryOrder"]
    assert explored and not any(e.ran for e in explored)


def test_a_tool_behind_the_gate_is_never_explored_and_the_gate_asks_on_the_chosen_path(llm):
    shop, tools = shop_and_tools()
    tools, refunds = spied(tools, "applyRefund", read_only=True)  # even a tool that wrongly says it is read-only
    gate = ConfirmationGate(("applyRefund",), ask=lambda request: False, timeout_s=30)
    result = tree_agent(llm, tools, parts=[GatedAct(gate)]).run(SEED_REFUND)
    assert all(not e.ran for e in result.trace.of_type(BranchExplored) if e.tool == "applyRefund")
    decided = result.trace.of_type(ApprovalDecided)
    assert [d.outcome for d in decided] == ["declined"] and refunds == [] and shop.refunds() == []


# -- replies it cannot read -----------------------------------------------------------------------------------------
STEP = "Thought: I look the order up.\nAction: queryOrder\nAction Input: 88231\n"
ANSWER = "Thought: I can answer.\nFinal Answer: Order 88231 was signed for on 2026-06-22."


def scripted_run(*replies, rule=shop_rule):
    llm = ScriptedLlm(*replies)
    _, tools = shop_and_tools()
    agent = ReActAgent(llm, tools, parts=[TreeSearch(k=2, beam=1, depth=1, rule=rule)])
    return agent.run("Where is order 88231?"), llm


def test_a_proposal_with_no_candidate_is_a_note_and_the_step_is_the_greedy_one():
    result, llm = scripted_run("I think you should look the order up.", ANSWER)
    notes = result.trace.of_type(TreeNote)
    assert [(n.stage, n.detail) for n in notes] == [("propose", "the reply has no 'Candidate N:' heading")]
    assert result.reason == "final_answer" and len(llm.calls) == 2 and "Propose 2" not in llm.calls[1][-1]["content"]


def test_a_candidate_that_is_no_step_is_dropped_with_a_note():
    proposal = f"Candidate 1:\nI would check.\n\nCandidate 2:\n{ANSWER}\n\nCandidate 3:\n{ANSWER}"
    result, _ = scripted_run(proposal, "Candidate 1: 7/10 - fine")
    details = [n.detail for n in result.trace.of_type(TreeNote) if n.stage == "propose"]
    assert details == ["candidate 1 is neither an Action nor a Final Answer", "candidate 3 repeats an earlier one"]
    assert result.reason == "final_answer"


def test_a_proposal_cut_at_max_tokens_loses_its_last_candidate():
    class CutProposal(ScriptedLlm):
        def chat(self, messages, **options):
            reply = super().chat(messages, **options)
            return replace(reply, finish_reason="length") if len(self.calls) == 1 else reply

    llm = CutProposal(f"Candidate 1:\n{ANSWER}\n\nCandidate 2:\nThought: x\nAction: queryOrder\nAction Input: 882",
                      "Candidate 1: 9/10")
    _, tools = shop_and_tools()
    result = ReActAgent(llm, tools, parts=[TreeSearch(k=2, beam=1, depth=1)]).run("Where is order 88231?")
    assert [n.detail for n in result.trace.of_type(TreeNote)] == [
        "candidate 2 is dropped: the reply was cut at max_tokens, so it may stop mid-input"]
    assert [c.node for c in result.trace.of_type(ThoughtCandidate)] == ["1"] and result.trace.tool_calls == []


def test_a_cut_proposal_names_the_candidate_it_drops_and_keeps_the_whole_ones_before_it():
    # Candidate 2 is no step; the cut one is 3. The note names 3 by its heading, and candidate 1, whole, is kept.
    cut = f"Candidate 1:\n{ANSWER}\n\nCandidate 2:\nI would check.\n\nCandidate 3:\n{STEP}"
    found, problems = read_candidates(cut, parse_step, cut=True)
    assert [p.final_answer for _, p in found] == ["Order 88231 was signed for on 2026-06-22."]
    assert problems == ["candidate 2 is neither an Action nor a Final Answer",
                        "candidate 3 is dropped: the reply was cut at max_tokens, so it may stop mid-input"]
    # Its last block unreadable, the cut reply loses that block only: the whole step before it stays.
    found, problems = read_candidates(f"Candidate 1:\n{STEP}\n\nCandidate 2:\nThought: I wou", parse_step, cut=True)
    assert [p.action.tool_name for _, p in found] == ["queryOrder"] and len(problems) == 1
    assert len(read_candidates(cut, parse_step)[0]) == 2  # a reply that was not cut keeps its last step


def test_an_unreadable_score_reply_is_a_note_and_the_rule_alone_ranks():
    proposal = f"Candidate 1:\n{ANSWER}\n\nCandidate 2:\n{STEP}"
    result, _ = scripted_run(proposal, "Both look good to me.")
    notes = [n for n in result.trace.of_type(TreeNote) if n.stage == "score"]
    assert [n.detail for n in notes] == ["no readable score for candidate(s) 1, 2"]
    first = result.trace.of_type(ThoughtCandidate)
    assert [(c.model_score, c.rule_score, c.score) for c in first] == [(None, 1.0, 1.0), (None, 1.0, 1.0)]
    assert result.trace.of_type(PathChosen)[0].committed == "1"  # a tie: the model's own first candidate
    assert result.reason == "final_answer"


def test_a_candidate_number_too_long_for_int_is_an_unread_score_not_a_traceback():
    # int() of a number of 5,000 digits raises ValueError ("Exceeds the limit ... for integer string conversion"),
    # and it escaped the run as a traceback.
    proposal = f"Candidate 1:\n{ANSWER}\n\nCandidate 2:\n{STEP}"
    result, _ = scripted_run(proposal, "Candidate " + "9" * 5000 + ": 5/10\nCandidate ²: 6/10")
    notes = [n.detail for n in result.trace.of_type(TreeNote) if n.stage == "score"]
    assert notes == ["no readable score for candidate(s) 1, 2"] and result.reason == "final_answer"


def test_a_loaded_trace_with_node_ids_int_refuses_still_draws_its_tree(llm):
    # A trace loaded from a file may hold any node id: "²" passed isdigit() and int() refused it.
    _, tools = shop_and_tools()
    saved = tree_agent(llm, tools, beam=3).run(WRONG_ORDER_EN).trace.to_json()
    for odd in ("1.²", "1." + "9" * 5000):
        loaded = Trace.from_json(saved.replace('"1.2"', json.dumps(odd)))
        assert f" {odd} " in tree_text(loaded) and "flowchart TD" in tree_mermaid(loaded)


def test_a_rule_that_raises_or_returns_no_score_is_a_note():
    proposal = f"Candidate 1:\n{STEP}\nCandidate 2:\n{ANSWER}"

    def broken(candidate):
        if candidate.tool_name:
            raise KeyError("orderId")
        return "high"

    result, _ = scripted_run(proposal, "Candidate 1: 4/10\nCandidate 2: 9/10", rule=broken)
    details = [n.detail for n in result.trace.of_type(TreeNote) if n.stage == "rule"]
    assert details == ["the rule raised KeyError: 'orderId'", "the rule returned 'high', not a number from 0 to 1"]
    assert result.answer == "Order 88231 was signed for on 2026-06-22."  # 0.9 by the model alone


def test_the_trace_prints_the_tree_and_survives_json(llm):
    _, tools = shop_and_tools()
    trace = tree_agent(llm, tools, beam=3).run(WRONG_ORDER_EN).trace
    printed = trace.format()
    assert "[Candidate 1.2] Final Answer: Hello! Order 88234 is for the 比特 扫地机边刷滤网套装" in printed
    assert "[Not explored 2] applyRefund is not read-only" in printed
    assert "[Chosen] path 1 -> 1.2; this round takes 1" in printed
    assert Trace.from_json(trace.to_json()).format() == printed
    assert "[候选 1.2]" in trace.format("zh")


# -- the readers and the beam --------------------------------------------------------------------------------------
def test_candidates_are_read_leniently():
    text = f"**Candidate 1:** {STEP}\n### 候选 2：\n{ANSWER}"
    found, problems = read_candidates(text, parse_step)
    assert [p.action.tool_name if p.action else p.final_answer for _, p in found] == [
        "queryOrder", "Order 88231 was signed for on 2026-06-22."] and problems == []


@pytest.mark.parametrize("reply, scores", [
    ("Candidate 1: 8/10 - the next check\nCandidate 2: 2/10 - unsafe", {1: (0.8, "the next check"), 2: (0.2, "unsafe")}),
    ("候选 1：7/10 - 好\n候选 2：3 分", {1: (0.7, "好"), 2: (0.3, "")}),
    ("**Candidate 2:** 12/10\nCandidate 5: 9/10\nCandidate 2: 1/10", {2: (1.0, "")}),
    ("no scores here", {}),
])
def test_scores_are_read_leniently(reply, scores):
    assert read_scores(reply, 3) == scores


def node(node_id, score, depth=1, order=0):
    return Node(node_id, None, depth, order, "", parse_step(ANSWER), score=score)


def test_keep_best_ranks_by_score_then_depth_then_order():
    nodes = [node("a", 0.5, 1, 0), node("b", 0.9, 2, 1), node("c", 0.9, 1, 2), node("d", 0.9, 1, 3)]
    assert [n.id for n in keep_best(nodes, 3)] == ["c", "d", "b"]
    assert [n.id for n in keep_best(nodes, 9)] == ["c", "d", "b", "a"]


@pytest.mark.parametrize("candidate, score", [
    (Candidate("", "applyRefund", "{}", None, False, ()), 0.0),
    (Candidate("", "applyRefund", "{}", None, False, (("queryOrder", "88231"),)), 1.0),
    (Candidate("", "queryOrder", "88231", None, True, (("queryOrder", "88231"),)), 0.2),
    (Candidate("", None, None, "Hello", False, ()), 1.0),
])
def test_the_shop_rule(candidate, score):
    assert shop_rule(candidate) == score


def test_the_trace_viewer_s_card_shows_the_round_s_search(llm):
    from tinyagent.widgets.cards import build_cards, card_html

    _, tools = shop_and_tools()
    trace = tree_agent(llm, tools).run(WRONG_ORDER).trace
    first = card_html(build_cards(trace)[0], "en")
    candidates = [c for c in trace.of_type(ThoughtCandidate) if c.step == 1]
    assert first.count("ta-thought_candidate") == len(candidates) == 9
    assert first.count("ta-path_chosen") == 1 and "[Chosen] path 1 -&gt; 1.2" in first


def test_the_mermaid_drawing_holds_what_a_model_or_a_loaded_trace_wrote_inside_its_labels():
    # parse_step lets an Action name run on over lines: one holding ``` closed the notebook's code block around the
    # chart, and the Markdown after it was HTML; a loaded trace's node ids went into the chart as statements
    named = "queryOrder\n```\n<img src=x onerror=alert(1)>"
    trace = Trace([
        ThoughtCandidate(1, node="1", depth=1, tool_name=named, tool_input='"88231"', score=0.9),
        ThoughtCandidate(1, node='2"]; click r1_2 href "javascript:alert(1)"; x["', depth=1, final_answer="`x`"),
        TreeNote(2, stage='budget"]) click r2 call alert(1) %%', node=""),
        PathChosen(1, path=("1",), committed="1", score=0.9),
    ])
    drawing = tree_mermaid(trace)
    lines = drawing.splitlines()
    assert lines[0] == "flowchart TD" and all(line.startswith("  ") for line in lines[1:])
    assert "```" not in drawing and "<img" not in drawing and "#60;img src=x onerror=alert(1)#62;" in drawing
    statements = re.sub(r'"[^"\n]*"', '""', drawing).splitlines()[1:]  # each quoted label taken out
    shapes = (r'  ID\(\[""\]\)', r'  ID\[""\]', r"  ID (-->|==>|-\.->) ID", r"  style ID stroke-width:3px")
    shapes = [re.compile(shape.replace("ID", "[A-Za-z0-9_]+")) for shape in shapes]
    assert all(any(shape.fullmatch(line) for shape in shapes) for line in statements), statements


def test_a_node_is_looked_ahead_at_once_even_when_it_is_kept_as_a_leaf_for_a_deeper_level():
    """Node 1's look-ahead finds nothing, so it is kept beside node 2's children at the next level: its tool is
    not run again, and its steps are not proposed again (each repeat cost a model call and a tool run)."""
    ran = []

    def look(name):
        lookup = FunctionTool(name, "look something up", lambda text: ran.append(name) or f"{name} result")
        lookup.read_only = True
        return lookup

    class Model:
        calls = 0

        def chat(self, messages, **options):
            Model.calls += 1
            last = messages[-1]["content"]
            observed = [str(m["content"]) for m in messages if str(m["content"]).startswith("Observation:")]
            seen = " ".join(observed)
            if last.startswith("Propose"):
                if not observed:
                    text = ("Candidate 1:\nThought: look\nAction: lookA\nAction Input: a\n\n"
                            "Candidate 2:\nThought: look\nAction: lookB\nAction Input: b\n")
                else:
                    text = ("Candidate 1:\nThought: done\nFinal Answer: B says so\n" if "lookB result" in seen
                            else "nothing readable")
            elif last.startswith("Score"):
                text = "Candidate 1: 9/10 - good\nCandidate 2: 8/10 - ok" if not observed else (
                    "Candidate 1: 1/10 - meh")
            else:
                text = "Final Answer: plain"
            return ChatResult(text, "stop", {"total_tokens": 10})

    result = ReActAgent(Model(), ToolRegistry([look("lookA"), look("lookB")]),
                        parts=[TreeSearch(k=2, beam=2, depth=4)], max_steps=1).run("q")
    explored = [(event.node, event.tool) for event in result.trace.of_type(BranchExplored) if event.step == 1]
    assert explored == [("1", "lookA"), ("2", "lookB")]
    assert ran == ["lookA", "lookB", "lookA"]  # the last: the chosen step, run by the loop
    assert Model.calls == 5  # propose + score, then a proposal after each look-ahead (one scored), then nothing


@pytest.mark.parametrize("spaces", [16_000, 400_000])
def test_a_reply_full_of_spaces_is_read_in_a_moment(spaces):
    # The score and header patterns split a run of spaces two ways: 16,000 spaces took 23 s. Now milliseconds;
    # 60 s only tells a hang from a loaded machine.
    started = time.monotonic()
    assert read_scores("Candidate 1: 9" + " " * spaces + "x", 3) == {}
    read_candidates("Candidate 1:" + " " * spaces + "x", parse_step)
    assert time.monotonic() - started < 60
