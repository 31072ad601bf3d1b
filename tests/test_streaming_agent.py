"""`ReActAgent(parts=[StreamedSend()])` (lesson 14): the same run as without streaming, with the reply's pieces first.

Every consumer of the event stream keeps working: the trace prints the same (a streamed round adds one
summary line with usage=True, never a line per piece), saves and loads, the stop rules judge the same
events, the step debugger steps the same, and the trace viewer shows the Thought growing in the card's
own Thought row while it is typed.
"""

from __future__ import annotations

import dataclasses
import re
from itertools import pairwise

import pytest

from tinyagent import (
    FunctionCallingAgent,
    LlmCall,
    LlmClient,
    Parsed,
    ReActAgent,
    ReplyDelta,
    StepCap,
    Stopped,
    Trace,
    fixed_clock,
)
from tinyagent.protocols.streaming import StreamedSend
from tinyagent.robustness.stop_rules import StopRules
from tinyagent.robustness.tolerant_parser import TolerantRead
from tinyagent.shop import Shop, shop_registry
from tinyagent.widgets import ChatPanel, StepDebugger, TraceViewer
from tinyagent.widgets.streamed_cards import typed_thought

from .test_streaming import chunk, sse

CLOCK = fixed_clock("2026-06-30T19:05:23")
REFUND = "我上周买的扫地机不回充了，修不好我想退。订单号 88231。"
LOGISTICS = "Where is the parcel for order 88231?"


def agent(model: str = "classroom", stream: bool = False, **options) -> ReActAgent:
    parts = [*options.pop("parts", []), *([StreamedSend()] if stream else [])]
    return ReActAgent(LlmClient.classroom(model), shop_registry(Shop(":memory:", clock=CLOCK), CLOCK), parts=parts,
                      **options)


def without_deltas(trace: Trace) -> list:
    """The events apart from the deltas, latency set to 0 (it varies run to run), and no usage for a call the
    client cut: streaming, the client hangs up at the stop string, before the server's usage chunk."""
    return [dataclasses.replace(e, latency_s=0.0, usage={} if e.client_cut else e.usage)
            if isinstance(e, LlmCall) else e for e in trace.events if not isinstance(e, ReplyDelta)]


RUNS = [
    ("classroom", REFUND, {}),
    ("classroom", LOGISTICS, {}),
    ("classroom-loop", LOGISTICS, {"parts": [StopRules([StepCap(3)])]}),  # the closing call streams too
    ("classroom-sloppy", REFUND, {"parts": [TolerantRead()]}),
    ("classroom-ignores-stop", LOGISTICS, {}),
    ("classroom-split-stop", REFUND, {}),
    ("classroom-verbose", LOGISTICS, {"max_tokens": 100}),  # cut at max_tokens: length
    ("classroom-forgets-action", LOGISTICS, {"parts": [TolerantRead()]}),
]


@pytest.mark.parametrize(("model", "question", "options"), RUNS)
def test_a_streamed_run_has_the_events_of_a_plain_run_apart_from_the_deltas(model, question, options):
    plain = agent(model, **options).run(question)
    streamed = agent(model, stream=True, **options).run(question)
    assert without_deltas(streamed.trace) == without_deltas(plain.trace)
    assert (streamed.answer, streamed.reason, streamed.messages) == (plain.answer, plain.reason, plain.messages)
    assert not plain.trace.of_type(ReplyDelta)
    assert all(call.usage == {} for call in streamed.trace.of_type(LlmCall) if call.client_cut)
    # Each model call is preceded by its pieces, in its round, and they join to its text.
    events = streamed.trace.events
    for i, call in enumerate(events):
        if not isinstance(call, LlmCall):
            continue
        pieces = []
        for before in reversed(events[:i]):
            if not isinstance(before, ReplyDelta):
                break
            pieces.insert(0, before)
        assert pieces, f"round {call.step} was not streamed"
        assert {p.step for p in pieces} == {call.step}
        assert "".join(p.text for p in pieces) == call.text
        times = [p.elapsed_s for p in pieces]
        assert times == sorted(times) and times[-1] <= call.latency_s


def test_the_printed_trace_is_the_plain_one_and_lists_no_piece():
    plain = agent().run(REFUND).trace
    streamed = agent(stream=True).run(REFUND).trace
    assert streamed.format("en") == plain.format("en") and streamed.format("zh") == plain.format("zh")
    with_usage = streamed.format("en", usage=True).splitlines()
    streamed_lines = [line for line in with_usage if line.startswith("[Streamed]")]
    assert len(streamed_lines) == len(streamed.of_type(LlmCall))
    assert [line for line in with_usage if not line.startswith("[Streamed]")] == plain.format("en", usage=True).splitlines()
    pieces_of_round_1 = sum(1 for e in streamed.of_type(ReplyDelta) if e.step == 1)
    assert streamed_lines[0] == f"[Streamed] the reply came in {pieces_of_round_1} pieces"


def test_a_streamed_trace_saves_and_loads_with_its_pieces():
    trace = agent(stream=True).run(LOGISTICS).trace
    again = Trace.from_json(trace.to_json())
    assert again.events == trace.events and again.of_type(ReplyDelta)


def test_a_stream_that_breaks_mid_reply_ends_the_run_politely_and_keeps_what_was_typed(scripted_server):
    scripted_server.reply(sse(chunk("Thought: I look the"), chunk(" order up"), end="reset"))
    llm = LlmClient(scripted_server.url, None, "test-model", sleep=lambda s: None)
    tools = shop_registry(Shop(":memory:", clock=CLOCK), CLOCK)
    result = ReActAgent(llm, tools, parts=[StreamedSend()], lang="en").run(LOGISTICS)
    assert result.reason == "llm_error"
    assert [type(e).__name__ for e in result.trace.events] == ["ReplyDelta", "ReplyDelta", "Stopped"]
    printed = result.trace.format("en").splitlines()
    assert printed[1] == "[Typed so far] Thought: I look the order up"
    assert printed[2].startswith("[Stopped: llm_error]") and "broke" in printed[3]
    card = TraceViewer(result.trace).cards[0]
    assert card.status == "stopped" and "I look the order up" in card.html() and "ta-caret" not in card.html()


def test_stream_needs_a_client_that_can_stream():
    class ChatOnly:
        model = "scripted"

        def chat(self, messages, **options):
            raise AssertionError("not called")

    agent = ReActAgent(ChatOnly(), shop_registry(Shop(":memory:", clock=CLOCK), CLOCK), parts=[StreamedSend()])
    with pytest.raises(TypeError, match="StreamedSend needs an LlmClient"):
        agent.run(REFUND)


def fc_agent(model: str = "classroom", stream: bool = False, **options) -> FunctionCallingAgent:
    parts = [*options.pop("parts", []), *([StreamedSend()] if stream else [])]
    return FunctionCallingAgent(LlmClient.classroom(model), shop_registry(Shop(":memory:", clock=CLOCK), CLOCK),
                                parts=parts, **options)


@pytest.mark.parametrize("model, question, options", [
    ("classroom", REFUND, {}),
    ("classroom", "帮我看看订单 88231 和 88232 的快递到哪了。", {}),  # two calls at once in a round
    ("classroom-loop", LOGISTICS, {"parts": [StopRules([StepCap(2)])]}),  # the closing call streams too
])
def test_function_calling_streams_the_same_run(model, question, options):
    """FunctionCallingAgent shares the loop, so StreamedSend() mounts the same way: the answer arrives in
    pieces, and apart from them the run is the one chat() gives (tool calls, observations, the closing call)."""
    plain = fc_agent(model, **options).run(question)
    streamed = fc_agent(model, stream=True, **options).run(question)
    assert without_deltas(streamed.trace) == without_deltas(plain.trace)
    assert streamed.answer == plain.answer and streamed.reason == plain.reason
    deltas = streamed.trace.of_type(ReplyDelta)
    last = streamed.trace.of_type(LlmCall)[-1]
    assert len([d for d in deltas if d.step == last.step]) > 1  # the last reply came in several pieces
    assert "".join(d.text for d in deltas if d.step == last.step) == last.text
    assert not plain.trace.of_type(ReplyDelta)


def test_the_step_debugger_steps_a_streamed_run_as_a_plain_one():
    plain, streamed = StepDebugger(agent(), REFUND), StepDebugger(agent(stream=True), REFUND)
    plain.run_to_end()
    streamed.run_to_end()
    assert streamed.step_count == plain.step_count and streamed.model_calls == plain.model_calls
    assert streamed.run.messages == plain.run.messages
    assert streamed.viewer.trace.of_type(ReplyDelta)


# -- the trace viewer, live -----------------------------------------------------------------------------
def thought_row(html: str) -> str:
    """The text of a card's Thought row, as the browser shows it (tags and the caret left out)."""
    match = re.search(r'ta-thought[^"]*".*?<span class="ta-value"[^>]*>(.*?)</span></div>', html, re.DOTALL)
    if match is None:
        return ""
    import html as html_module

    return html_module.unescape(re.sub(r"<[^>]+>", "", match.group(1))).replace("▌", "")


def test_the_viewer_shows_the_thought_growing_in_the_cards_own_thought_row():
    viewer = TraceViewer()
    run = agent(stream=True).start(REFUND)
    seen, statuses = [], []
    for event in run:
        viewer.add(event)
        if event.step == 1 and isinstance(event, ReplyDelta):
            html = viewer.card_box.children[0].body.value  # what the widget shows, refreshed per piece
            seen.append(thought_row(html))
            statuses.append(viewer.cards[0].status)
            assert "ta-caret" in html
    final = viewer.cards[0].parsed.thought
    assert len(seen) > 5 and len(set(seen)) > 5, "the Thought grows piece by piece"
    assert all(final.startswith(text) for text in seen), "each view is the start of the final Thought"
    assert all(a == b[: len(a)] for a, b in pairwise(seen))
    assert set(statuses) == {"typing"}
    assert thought_row(viewer.cards[0].html()) == final  # then the parsed Thought, in the same row
    assert "streamed in" in viewer.cards[0].html()


def test_the_viewer_text_of_a_streamed_run_is_the_plain_one_with_the_pieces_counted():
    plain = TraceViewer(agent().run(LOGISTICS).trace).text().splitlines()
    streamed_trace = agent(stream=True).run(LOGISTICS).trace
    streamed = TraceViewer(streamed_trace).text().splitlines()
    pieces = len(streamed_trace.of_type(ReplyDelta))
    assert streamed[0] == plain[0].replace(" events,", f" events (+ {pieces} streamed pieces),")
    assert [line for line in streamed[1:] if not line.startswith("[Streamed]")] == plain[1:]


def test_typed_thought_splits_a_reply_being_typed():
    assert typed_thought("Thought: The customer") == ("The customer", "")
    assert typed_thought("Thought: I look\nAct") == ("I look", "Act")
    assert typed_thought("Thought: I look\nAction: queryOrder\nAction In") == ("I look", "Action: queryOrder\nAction In")
    assert typed_thought("**Thought:** bold\n**Action:** x") == ("bold", "**Action:** x")
    assert typed_thought("思考中，没有格式") == ("思考中，没有格式", "")


def test_the_chat_panel_answers_with_a_streaming_agent():
    panel = ChatPanel(agent(stream=True))
    turn = panel.send(LOGISTICS)
    assert turn.reason == "final_answer" and "SF1234567890" in turn.answer
    assert panel.viewer.trace.of_type(ReplyDelta) and panel.viewer.trace.of_type(Parsed)
    assert not panel.viewer.trace.of_type(Stopped)
