"""The widgets' state, driven from Python against the classroom model (no browser needed).

The browser tests (test_browser.py) check that the same widgets draw and respond in JupyterLab;
here each behaviour is pinned on the plain attributes the widgets keep: cards, steps, turns.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from tinyagent import (
    AuthenticationError,
    ChatResult,
    Final,
    LlmCall,
    LlmClient,
    Observation,
    Parsed,
    ReActAgent,
    ToolCall,
    Trace,
    fixed_clock,
    load_settings,
)
from tinyagent.shop import Shop, shop_registry
from tinyagent.widgets import ChatPanel, StepDebugger, StopComparison, TraceViewer, Turn, build_cards
from tinyagent.widgets.cards import plural
from tinyagent.widgets.chat_panel import bubble
from tinyagent.widgets.trace_viewer import CardView

REFUND = "我上周买的扫地机不回充了，修不好我想退。订单号 88231。"
LOGISTICS = "帮我看看订单 88231 的快递到哪了。"
REFUND_ID = "RF202606300001"  # the first refund of the day the fixed clock says it is


def classroom(model: str = "classroom") -> LlmClient:
    return LlmClient.from_settings(load_settings(model=model, notice=False))


def new_shop() -> Shop:
    return Shop(":memory:", clock=fixed_clock("2026-06-30T19:05:23"))


def shop_agent(model: str = "classroom", shop: Shop | None = None, **options) -> ReActAgent:
    return ReActAgent(classroom(model), shop_registry(shop or new_shop()), **options)


class CountingLlm:
    """Passes each request on to `llm` and counts them."""

    def __init__(self, llm):
        self.llm = llm
        self.model = llm.model
        self.calls = 0

    def chat(self, messages, **options):
        self.calls += 1
        return self.llm.chat(messages, **options)


class RaisingLlm:
    model = "broken"

    def __init__(self, error: Exception):
        self.error = error

    def chat(self, messages, **options):
        raise self.error


@pytest.fixture(scope="module")
def refund_trace() -> Trace:
    return shop_agent().run(REFUND).trace


# -- TraceViewer -------------------------------------------------------------------------------
def test_trace_viewer_shows_one_card_per_round(refund_trace):
    viewer = TraceViewer(refund_trace)
    assert [card.step for card in viewer.cards] == [1, 2, 3, 4, 5]
    assert [card.status for card in viewer.cards] == ["observed"] * 4 + ["final"]
    tools = [card.tool_call.name for card in viewer.cards[:4]]
    assert tools == ["queryOrder", "getCurrentTime", "searchKnowledge", "applyRefund"]
    assert REFUND_ID in viewer.cards[3].observation.text
    assert REFUND_ID in viewer.cards[4].end.answer
    assert len(viewer.card_box.children) == 5


def test_card_html_shows_thought_action_observation_tokens_and_latency(refund_trace):
    card = TraceViewer(refund_trace).cards[0]
    html = card.html("zh")
    assert "第 1 圈" in html and "思考" in html and "queryOrder(88231)" in html
    assert "ta-observation" in html and "SF1234567890" in html
    usage = card.llm.usage
    assert f"输入 {usage['prompt_tokens']} + 输出 {usage['completion_tokens']} token" in html
    assert f"{card.llm.latency_s:.2f} s" in html and "finish_reason=stop" in html


def test_what_a_loaded_trace_holds_is_escaped_in_the_summary_and_in_a_rows_class():
    # Trace.from_json takes any text for a reason or an approval's outcome (a file, a service's reply)
    from tinyagent.toolkit.confirmation import ApprovalDecided

    hostile = '"><img src=x onerror=alert(1)>'
    trace = Trace.from_json(json.dumps({"events": [
        {"type": "approval_decided", "step": 1, "tool": "applyRefund", "outcome": hostile, "by": "a person"},
        {"type": "stopped", "step": 1, "reason": hostile, "answer": "sorry", "detail": ""}]}))
    assert isinstance(trace.events[0], ApprovalDecided)
    viewer = TraceViewer(trace)
    assert "<img" not in viewer.summary.value and "&lt;img src=x onerror=alert(1)&gt;" in viewer.summary.value
    card = build_cards(trace.events)[0].html()
    assert "<img" not in card and 'ta-approval-&quot;&gt;&lt;img' in card


def test_card_html_escapes_what_the_model_and_tools_wrote():
    events = [Observation(1, "<script>alert(1)</script>")]
    assert "<script>" not in build_cards(events)[0].html()
    assert "&lt;script&gt;" in build_cards(events)[0].html()


def test_a_bidi_override_the_model_wrote_is_shown_as_its_escape_in_every_row():
    # A U+202E in the Action Input reversed the call shown in the card ("1999" read "9991", 88231 read 13288)
    bidi = "\u202e1999"
    events = [Parsed(1, thought=f"think {bidi}"),
              ToolCall(1, "applyRefund", f'{{"reason": "{bidi}", "orderId": "88231"}}'),
              Observation(1, f"refused: {bidi}"), Final(2, f"done {bidi}\ttab\nline")]
    html = "".join(card.html() for card in build_cards(events))
    assert "\u202e" not in html
    assert html.count("\\u202e1999") == 4 and "\ttab\nline" in html  # a tab and a line break kept
    chat = ChatPanel(shop_agent())
    chat.turns.append(Turn(f"ask {bidi}", f"answer {bidi}", "final_answer", Trace(events)))
    chat._refresh()
    assert "\u202e" not in chat.transcript.value and chat.transcript.value.count("\\u202e1999") == 2
    assert "\u202e" not in chat._repr_mimebundle_()["text/plain"]


def test_a_long_unbroken_string_wraps_in_the_cards_and_the_chat():
    # "C" * 100000 made a card 900,000 px wide and pushed the user's bubble out of view: white-space:pre-wrap alone
    # breaks only at spaces
    long = "C" * 1000
    events = [ToolCall(1, "queryOrder", long), Observation(1, long), Final(2, long)]
    html = "".join(card.html() for card in build_cards(events))
    assert html.count("overflow-wrap:anywhere") == html.count('class="ta-value"') == 3
    assert "overflow-wrap:anywhere" in bubble(long, "#1565c0", "ta-turn-user", "You", right=True)


def test_raw_messages_and_reply_sit_folded_behind_an_accordion(refund_trace):
    viewer = TraceViewer(refund_trace, lang="en")
    view = viewer.card_box.children[1]
    assert isinstance(view, CardView)
    messages_fold, reply_fold = view.folds
    assert messages_fold.selected_index is None and reply_fold.selected_index is None  # folded until opened
    assert (messages_fold.titles, reply_fold.titles) == (("Messages sent (4)",), ("Raw reply",))
    messages_html, reply_html = (fold.children[0].value for fold in view.folds)
    assert "比特严选" in messages_html  # the system prompt is in there
    assert "Action: getCurrentTime" in reply_html


def test_opening_one_fold_leaves_the_other_as_it_was(refund_trace):
    view = TraceViewer(refund_trace, lang="en").card_box.children[1]
    messages_fold, reply_fold = view.folds
    messages_fold.selected_index = 0
    reply_fold.selected_index = 0
    assert messages_fold.selected_index == 0 and reply_fold.selected_index == 0  # both open at once
    assert view.raw.children == (messages_fold, reply_fold)


def test_text_fallback_is_the_formatted_trace_and_has_no_latency(refund_trace):
    viewer = TraceViewer(refund_trace)
    bundle = viewer._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle  # still a live widget in Lab
    assert bundle["text/plain"] == viewer.text()
    assert viewer.text().startswith("TraceViewer: 5 圈，19 个事件，")
    assert viewer.text().endswith(refund_trace.format(usage=True))
    slower = Trace(
        [dataclasses.replace(e, latency_s=9.99) if isinstance(e, LlmCall) else e for e in refund_trace],
        lang=refund_trace.lang,
    )
    assert TraceViewer(slower).text() == viewer.text()


def test_text_fallback_is_the_same_on_every_run():
    assert TraceViewer(shop_agent().run(LOGISTICS).trace).text() == (
        TraceViewer(shop_agent().run(LOGISTICS).trace).text()
    )


def test_a_chinese_run_has_a_chinese_header_above_its_cards():
    zh = TraceViewer(shop_agent().run(LOGISTICS).trace)
    usage = zh.trace.total_usage()
    assert zh.summary_text() == (f"3 圈，11 个事件，输入 {usage['prompt_tokens']} + 输出 {usage['completion_tokens']} "
                                 "个 token，结束：final_answer")
    assert "运行记录：3 圈" in zh.summary.value and "模型用时" in zh.summary.value and "round" not in zh.summary.value
    assert zh.text().startswith("TraceViewer: 3 圈") and "===== 第 1 圈 =====" in zh.text()
    en = TraceViewer(shop_agent().run("Where is the parcel of order 88231?").trace)
    assert en.summary_text().startswith("3 rounds, ") and "Trace: 3 rounds" in en.summary.value


def test_watch_fills_the_viewer_event_by_event():
    viewer = TraceViewer()
    assert viewer.cards == [] and viewer.text() == "TraceViewer: no events yet"
    run = shop_agent().start(LOGISTICS)
    seen = []
    for event in run:
        viewer.add(event)
        seen.append((len(viewer.cards), viewer.cards[-1].status))
    assert seen[:4] == [(1, "thinking"), (1, "thinking"), (1, "acting"), (1, "observed")]
    assert seen[-1] == (3, "final")
    assert viewer.trace.events == run.trace.events


def test_watch_returns_the_trace_it_showed():
    viewer = TraceViewer()
    trace = viewer.watch(shop_agent().start(LOGISTICS))
    assert trace is viewer.trace and trace.rounds == 3 and trace.reason == "final_answer"
    assert viewer.lang == "zh" and "第 1 圈" in viewer.cards[0].html(viewer.lang)
    viewer.clear()
    assert viewer.cards == [] and viewer.card_box.children == ()


def test_a_tool_error_is_marked_as_an_error():
    viewer = TraceViewer(shop_agent("classroom-wrong-tool").run(LOGISTICS).trace)
    assert viewer.cards[0].status == "tool_error"
    assert "ta-error" in viewer.cards[0].html() and "Tool error" in viewer.cards[0].html("en")
    assert viewer.cards[-1].status == "final"


def test_the_step_cap_shows_as_a_stopped_card():
    viewer = TraceViewer(shop_agent("classroom-loop", max_steps=2).run(LOGISTICS).trace, lang="en")
    last = viewer.cards[-1]
    assert len(viewer.cards) == 2 and last.status == "stopped"
    assert "Stopped: max_steps" in last.html("en") and "ta-stopped" in last.html("en")
    assert "ended: max_steps" in viewer.text()


def test_a_fallback_answer_is_labelled_as_one():
    viewer = TraceViewer(shop_agent("classroom-no-final").run(LOGISTICS).trace)
    assert viewer.cards[-1].status == "fallback"
    assert "fallback" in viewer.cards[-1].html("en")


def test_a_failed_model_call_is_a_card_with_only_the_stop():
    agent = ReActAgent(RaisingLlm(AuthenticationError("HTTP 401", 401)), shop_registry(new_shop()))
    viewer = TraceViewer(agent.run("where is order 88231?").trace)
    (card,) = viewer.cards
    assert card.llm is None and card.status == "stopped" and card.end.reason == "llm_error"
    assert viewer.card_box.children[0].raw not in viewer.card_box.children[0].children


def test_a_server_that_ignores_stop_shows_the_client_cut():
    viewer = TraceViewer(shop_agent("classroom-ignores-stop").run(LOGISTICS).trace)
    assert viewer.cards[0].llm.client_cut
    assert "cut by the client" in viewer.cards[0].html()
    assert "the client cut the text here" in viewer.card_box.children[0].folds[1].children[0].value


def test_a_handoff_answered_in_a_later_card_is_not_shown_as_waiting():
    # Lesson 21: the triage agent's handoff is one card, the refunds agent's rounds follow, and the handoff's
    # result comes in a second card of the triage agent's round 1. Only a call answered nowhere is waiting.
    from tinyagent.architectures.handoffs import shop_team

    shop = new_shop()
    run = shop_team(classroom(), shop_registry(shop, fixed_clock("2026-06-30T19:05:23"))).start(REFUND)
    viewer = TraceViewer()
    handoff_card = None
    for event in run:
        viewer.add(event)
        if handoff_card is None and viewer.cards[0].tool_calls:
            handoff_card = viewer.cards[0]
            assert handoff_card.status == "acting" and "ta-waiting" in viewer.card_box.children[0].body.value
    first, resumed = viewer.cards[0], viewer.cards[-2]
    assert (first.step, first.agent) == (resumed.step, resumed.agent) == (1, "triage") and first is not resumed
    assert first.status == "observed" and first.pending == 0
    shown = viewer.card_box.children[0].body.value  # the widget was refreshed when the result came
    assert "ta-waiting" not in shown and "待执行工具" not in shown and "ta-answered-later" in shown
    assert all("ta-waiting" not in card.html("zh") for card in viewer.cards)


def test_a_limit_reached_is_shown_and_the_closing_answer_is_labelled_as_the_trace_labels_it():
    from tinyagent import RepeatedAction, StopRules

    agent = shop_agent("classroom-loop", parts=[StopRules([RepeatedAction()])])
    trace = agent.run(LOGISTICS).trace
    viewer = TraceViewer(trace)
    assert sum(len(card.events) for card in viewer.cards) == len(trace)  # every event is in a card
    limit = next(e for e in trace.events if e.kind == "limit_reached")
    card = next(c for c in viewer.cards if c.step == limit.step)
    assert card.status == "limit" and "ta-limit_reached" in card.html("zh") and limit.detail in card.html("zh")
    assert "[到达限制：repeated_action]" in card.html("zh")
    closing = viewer.cards[-1]
    assert closing.end.reason == "repeated_action" and "[最终答复-到达限制后]" in trace.format()
    assert closing.status == "after_limit"
    assert "到达限制后" in closing.html("zh") and "ta-after_limit" in closing.html("zh")
    assert "answer after a limit" in closing.html("en") and "Final answer (after a limit)" in closing.html("en")


def several_calls_trace() -> Trace:
    """One round of two model calls (as lesson 22's tree search makes), then the answer."""
    def call(text, prompt, latency, model="m"):
        return LlmCall(1, ({"role": "user", "content": "q"},), text, "stop",
                       {"prompt_tokens": prompt, "completion_tokens": 10}, latency, model, False)
    from tinyagent import Final, Parsed

    return Trace([call("candidates", 100, 1.5), call("Thought: t\nFinal Answer: ok", 0, 2.0, "chosen"),
                  Parsed(1, "t", None, None, "ok", "final_answer"), Final(1, "ok")])


def test_a_round_of_several_model_calls_sums_them_in_its_header_and_summary():
    viewer = TraceViewer(several_calls_trace())
    (card,) = viewer.cards
    html = card.html("en")
    assert "2 model calls" in html and "100 in + 20 out tokens" in html and "3.50 s in all" in html
    assert "model time" not in html and "3.50 s in the model" in viewer.summary.value
    folds = viewer.card_box.children[0].folds
    assert folds[1].titles == ("Raw reply: the one this round read, call 2 of 2",)
    assert "Final Answer: ok" in folds[1].children[0].value  # the reply read, not the first call's


def test_the_summary_stays_right_as_events_arrive_one_by_one():
    run = shop_agent().start(LOGISTICS)
    viewer = TraceViewer()
    for event in run:
        viewer.add(event)
        trace = run.trace
        usage = trace.total_usage()
        ended = f"ended: {trace.reason}" if trace.end else "still running"
        assert viewer.summary_text() == (f"{plural(trace.rounds, 'round')}, {plural(len(trace), 'event')}, "
                                         f"{usage['prompt_tokens']} in + {usage['completion_tokens']} out tokens, "
                                         f"{ended}")
        assert len(viewer.card_box.children) == len(viewer.cards)  # a card added by hand shows at once
    watched = TraceViewer(lang="en")
    watched.watch(shop_agent().start(LOGISTICS))
    assert watched.summary_text() == viewer.summary_text() and len(watched.card_box.children) == 3


# -- StepDebugger ------------------------------------------------------------------------------
def counting_debugger(question: str = REFUND) -> tuple[StepDebugger, CountingLlm, list]:
    llm = CountingLlm(classroom())
    registry = shop_registry(new_shop())
    tool_runs = []
    real_run = registry.run
    registry.run = lambda action: tool_runs.append(action) or real_run(action)
    return StepDebugger(ReActAgent(llm, registry), question), llm, tool_runs


def test_next_step_makes_exactly_one_model_call_or_tool_call():
    debugger, llm, tool_runs = counting_debugger()
    kinds = []
    while not debugger.done:
        before = (llm.calls, len(tool_runs))
        debugger.step()
        made = (llm.calls - before[0], len(tool_runs) - before[1])
        assert made in ((1, 0), (0, 1))
        kinds.append("model" if made == (1, 0) else "tool")
    # the refund takes 5 rounds: 4 that call a tool, and the answer
    assert kinds == ["model", "tool"] * 4 + ["model"]
    assert (debugger.step_count, debugger.model_calls, debugger.tool_calls) == (9, 5, 4)


def test_the_debugger_stops_between_the_action_and_its_observation():
    debugger, _, tool_runs = counting_debugger()
    assert [m["role"] for m in debugger.run.messages] == ["system", "user"]
    assert debugger.next_action() == "call the model"

    debugger.step()
    messages = debugger.run.messages
    assert [m["role"] for m in messages] == ["system", "user", "assistant"]
    assert "Action: queryOrder" in messages[-1]["content"] and "Observation" not in messages[-1]["content"]
    assert tool_runs == [] and debugger.viewer.cards[0].status == "acting"
    assert debugger.next_action() == "run the tool queryOrder(88231)"
    assert "waiting: the tool has not run yet" in debugger.viewer.cards[0].html("en")
    assert "[assistant] Thought:" in debugger.text()

    debugger.step()
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[-1]["content"].startswith("Observation: ") and "SF1234567890" in messages[-1]["content"]
    assert debugger.viewer.cards[0].status == "observed" and debugger.next_action() == "call the model"
    # the message list view marks what the last step added
    assert debugger.messages_view.value.count(">new<") == 1


def test_run_to_end_finishes_and_disables_the_step_buttons():
    debugger, _, _ = counting_debugger()
    debugger.step()
    debugger.run_to_end()
    assert debugger.done and debugger.run.trace.reason == "final_answer"
    assert len(debugger.viewer.cards) == 5 and REFUND_ID in debugger.viewer.cards[-1].end.answer
    assert (
        debugger.next_button.disabled and debugger.run_button.disabled and not debugger.reset_button.disabled
    )
    assert debugger.step() == [] and debugger.step_count == 9
    assert debugger.next_action() == "nothing: the run has ended (final_answer)"


def test_reset_starts_the_same_question_again():
    debugger, llm, _ = counting_debugger()
    debugger.step()
    debugger.step()
    debugger.reset()
    assert (debugger.step_count, debugger.model_calls, debugger.tool_calls) == (0, 0, 0)
    assert debugger.viewer.cards == [] and len(debugger.run.messages) == 2
    assert not debugger.next_button.disabled
    debugger.run_to_end()
    assert debugger.run.trace.reason == "final_answer" and llm.calls == 1 + 5


def test_the_buttons_drive_the_debugger():
    debugger, _, _ = counting_debugger()
    debugger.next_button.click()
    assert debugger.step_count == 1 and "steps: 1 (1 model call, 0 tool calls)" in debugger.status.value
    debugger.run_button.click()
    assert debugger.done
    debugger.reset_button.click()
    assert debugger.step_count == 0 and not debugger.done


def test_the_debugger_text_fallback_shows_status_trace_and_message_list():
    debugger, _, _ = counting_debugger(LOGISTICS)
    debugger.step()
    text = debugger._repr_mimebundle_()["text/plain"]
    lines = text.splitlines()
    assert lines[0] == f"StepDebugger: {LOGISTICS}"
    assert lines[1] == "steps: 1 (1 model call, 0 tool calls); next: run the tool queryOrder(88231)"
    assert "[工具调用] queryOrder(88231)" in text
    assert "--- message list (3 messages) ---" in text
    assert "[system] 你是比特严选" in text and "(+" in text  # the system prompt is shortened


def test_the_step_cap_is_one_step_of_its_own():
    debugger = StepDebugger(shop_agent("classroom-loop", max_steps=1), LOGISTICS)
    debugger.step()
    debugger.step()
    assert debugger.next_action() == "stop: the step cap (1) is reached"
    assert [type(e).__name__ for e in debugger.step()] == ["Stopped"]
    assert debugger.done and debugger.viewer.cards[-1].status == "stopped"


def test_an_unexpected_error_in_a_button_is_shown_not_lost():
    debugger = StepDebugger(
        ReActAgent(RaisingLlm(RuntimeError("boom")), shop_registry(new_shop())), LOGISTICS
    )
    debugger.next_button.click()
    assert debugger.error == "RuntimeError: boom"
    assert "ta-debugger-error" in debugger.status.value and "boom" in debugger.status.value
    assert not debugger.reset_button.disabled


# -- ChatPanel ---------------------------------------------------------------------------------
def test_chat_keeps_a_multi_turn_conversation():
    llm = CountingLlm(classroom())
    chat = ChatPanel(ReActAgent(llm, shop_registry(new_shop())))
    first = chat.send(LOGISTICS)
    assert first.ok and "SF1234567890" in first.answer and first.trace.rounds == 3
    second = chat.send("那我想退货，可以吗？")
    assert second.ok and len(chat.turns) == 2
    assert chat.history() == [
        {"role": "user", "content": LOGISTICS},
        {"role": "assistant", "content": first.answer},
        {"role": "user", "content": "那我想退货，可以吗？"},
        {"role": "assistant", "content": second.answer},
    ]
    # the second run was sent the first turn between the system prompt and the new question
    sent = second.trace.of_type(LlmCall)[0].messages
    assert [m["content"] for m in sent[1:4]] == [LOGISTICS, first.answer, "那我想退货，可以吗？"]
    # the viewer shows the last answer's trace; the transcript shows every turn
    assert chat.viewer.trace.format() == second.trace.format()
    assert chat.transcript.value.count("ta-turn-answer") == 2


def test_the_send_button_sends_what_is_typed():
    chat = ChatPanel(shop_agent())
    chat.input.value = "  " + LOGISTICS + " "
    chat.send_button.click()
    assert [turn.question for turn in chat.turns] == [LOGISTICS]
    assert chat.input.value == "" and not chat.send_button.disabled
    assert chat.error is None


def test_enter_in_the_box_sends_what_is_typed():
    chat = ChatPanel(shop_agent())
    chat.input.value = LOGISTICS
    # What the browser sends when Enter is pressed in a Text box (ipywidgets 8's TextView).
    chat.input._handle_custom_msg({"event": "submit"}, [])
    assert [turn.question for turn in chat.turns] == [LOGISTICS]
    assert chat.input.value == "" and chat.error is None
    chat.input._handle_custom_msg({"event": "something else"}, [])
    assert len(chat.turns) == 1


def test_an_empty_message_is_not_sent():
    chat = ChatPanel(shop_agent())
    assert chat.send("   ") is None
    chat.send_button.click()
    assert chat.turns == []


def test_new_conversation_forgets_the_history():
    chat = ChatPanel(shop_agent())
    chat.send(LOGISTICS)
    chat.new_button.click()
    assert chat.turns == [] and chat.history() == [] and chat.viewer.cards == []


def test_chat_text_fallback_lists_the_turns():
    chat = ChatPanel(shop_agent())
    assert chat.text().splitlines()[1] == "0 turns"
    turn = chat.send(LOGISTICS)
    text = chat._repr_mimebundle_()["text/plain"]
    assert text.splitlines() == [
        (
            "ChatPanel: answering with the offline classroom model 'classroom' "
            "(a teaching instrument, not a language model)"
        ),
        "1 turn",
        f"[you] {LOGISTICS}",
        f"[agent: final_answer, 3 rounds] {turn.answer}",
    ]
    assert "127.0.0.1" not in text  # no port: the same text on every machine


def test_chat_says_when_a_real_model_answers_and_never_shows_the_key():
    agent = ReActAgent(
        LlmClient("https://api.deepseek.com", "sk-secret-123", "deepseek-chat"), shop_registry(new_shop())
    )
    chat = ChatPanel(agent)
    assert chat.model_label == "a real model: 'deepseek-chat' at api.deepseek.com"
    assert "sk-secret" not in chat.text() and "sk-secret" not in chat.children[0].value


def test_a_model_failure_becomes_a_polite_turn():
    chat = ChatPanel(ReActAgent(RaisingLlm(AuthenticationError("HTTP 401", 401)), shop_registry(new_shop())))
    turn = chat.send(LOGISTICS)
    assert not turn.ok and turn.reason == "llm_error" and chat.error is None
    assert "抱歉" in turn.answer


# -- StopComparison ----------------------------------------------------------------------------
def test_without_stop_the_model_invents_observations():
    shop = new_shop()
    comparison = StopComparison.from_agent(shop_agent(shop=shop), REFUND)
    assert comparison.fabricated and all(line.startswith("Observation:") for line in comparison.fabricated)
    assert "Observation:" not in comparison.with_stop.text
    assert "Observation:" in comparison.without.text
    invented = [row for row in comparison.rows if row.kind == "invented"]
    assert invented and all(row.right is None for row in invented)
    # the rows before the cut are the same text in both columns
    first_cut = next(i for i, row in enumerate(comparison.rows) if row.right is None)
    assert first_cut > 0 and all(row.kind == "same" for row in comparison.rows[:first_cut])
    assert shop.refunds() == []  # nothing ran: the refund id in the text is made up


def test_the_invented_lines_are_highlighted():
    comparison = StopComparison.from_agent(shop_agent(), REFUND)
    html = comparison.children[0].value
    assert html.count("invented: no tool ran") == len(comparison.fabricated)
    assert 'class="ta-row-invented"' in html and "cut here by stop=" in html
    text = comparison.text()
    assert text.splitlines()[0] == "StopComparison: the same request without and with stop=['Observation:']"
    marked = [line for line in text.splitlines() if line.startswith("! ")]
    assert len(marked) == len(comparison.fabricated)
    assert all(line.endswith("<- invented: no tool ran") for line in marked)


def test_stop_comparison_sends_the_same_messages_twice():
    llm = CountingLlm(classroom())
    messages = shop_agent().start(LOGISTICS).messages
    requests = []
    llm.chat = lambda msgs, **options: requests.append((msgs, options)) or ChatResult("Thought: x", "stop")
    StopComparison(llm, messages, stop=["Observation:"])
    assert [r[0] for r in requests] == [messages, messages]
    assert [r[1].get("stop") for r in requests] == [None, ["Observation:"]]


def test_a_server_that_ignores_stop_is_cut_by_the_client():
    comparison = StopComparison.from_agent(shop_agent("classroom-ignores-stop"), REFUND)
    assert comparison.with_stop.client_cut and comparison.fabricated
    assert "Observation:" not in comparison.with_stop.text


def test_stop_comparison_from_an_agent_sends_the_agent_s_max_tokens():
    llm = CountingLlm(classroom())
    sent = []
    chat = llm.chat
    llm.chat = lambda messages, **options: sent.append(options) or chat(messages, **options)
    StopComparison.from_agent(ReActAgent(llm, shop_registry(new_shop()), max_tokens=20), REFUND)
    assert [options["max_tokens"] for options in sent] == [20, 20]


# -- StepDebugger: stop rules, format reminders, edits, approvals --------------------------------
def test_a_limit_reached_ends_its_step_and_the_closing_call_is_the_next_one():
    from tinyagent import RepeatedAction, StopRules

    agent = shop_agent("classroom-loop", parts=[StopRules([RepeatedAction()])], max_steps=5)
    debugger = StepDebugger(agent, REFUND)
    while not debugger.done:
        events = debugger.step()
        assert sum(isinstance(e, LlmCall) for e in events) <= 1, "one Next step, at most one model call"
        if events[-1].kind == "limit_reached":
            assert debugger.next_action().startswith("call the model once more for a closing answer")
            count = len(debugger.run.messages)
            closing = debugger.step()  # the closing call alone: its request joins the list, then its reply
            assert [e.kind for e in closing][:1] == ["llm_call"] and len(debugger.run.messages) == count + 2
    assert debugger.run.trace.reason == "repeated_action" and debugger.model_calls == 4


def test_a_format_reminder_is_not_counted_as_a_tool_call():
    from tinyagent import TolerantRead

    debugger = StepDebugger(shop_agent("classroom-forgets-action", parts=[TolerantRead()]), REFUND)
    debugger.run_to_end()
    trace = debugger.run.trace
    assert debugger.tool_calls == len(trace.tool_calls) == 4
    assert "4 tool calls" in debugger.status_text()


def test_after_an_edit_the_status_says_which_calls_were_of_replaced_rounds():
    debugger = StepDebugger(shop_agent(), LOGISTICS)
    debugger.step()
    debugger.step()  # round 1: its model call and its tool call
    debugger.edit_thought(1, "Thought: 先查物流\nAction: queryLogistics\nAction Input: SF1234567890")
    assert debugger.replaced_calls == (1, 1)
    assert "1 model call and 1 tool call of them in rounds an edit replaced" in debugger.status_text()


def test_the_edit_button_is_on_only_for_a_round_check_edit_takes(monkeypatch):
    from tinyagent.editable_trace import EditError
    from tinyagent.widgets import step_debugger

    def refusing(trace, step, **options):
        raise EditError("not this round")

    debugger = StepDebugger(shop_agent(), LOGISTICS)
    debugger.step()
    assert not debugger.edit_button.disabled
    monkeypatch.setattr(step_debugger, "check_edit", refusing)
    debugger.step()
    assert debugger.edit_button.disabled and debugger.retry_button.disabled


def test_a_native_call_round_can_be_edited_only_if_check_edit_takes_it():
    from tinyagent import FunctionCallingAgent
    from tinyagent.editable_trace import check_edit

    debugger = StepDebugger(FunctionCallingAgent(classroom(), shop_registry(new_shop())), REFUND)
    debugger.step()
    debugger.round_picker.value = 1
    try:
        check_edit(debugger.run.trace, 1, reply="Thought: a person's reply")
        takes = True
    except ValueError:
        takes = False
    assert debugger.edit_button.disabled is not takes


def gated_debugger(**gate_options) -> tuple[StepDebugger, object]:
    """A debugger on the refund, with lesson 15's gate on applyRefund (its `gate_options`), and the shop."""
    from tinyagent.shop import refund_gate
    from tinyagent.toolkit.confirmation import GatedAct

    shop = new_shop()
    agent = ReActAgent(classroom(), shop_registry(shop), parts=[GatedAct(refund_gate(shop, **gate_options))])
    return StepDebugger(agent, REFUND), shop


def test_a_gated_tool_step_stops_at_the_request_and_the_buttons_answer_it():
    debugger, shop = gated_debugger(timeout_s=30)
    debugger.run_to_end()  # runs up to the request, never into the gate's wait
    assert debugger.waiting is not None and debugger.waiting.tool == "applyRefund" and not debugger.done
    assert "applyRefund waits for a person's approval" in debugger.status_text() and "Approve" in debugger.next_action()
    buttons = {button.description: button for _, button in debugger.part_buttons}  # lesson 15's step part's
    assert debugger.next_button.disabled and not buttons["Approve"].disabled and not buttons["Decline"].disabled
    assert debugger.step() == [] and shop.refunds() == []
    buttons["Approve"].click()
    assert debugger.error is None and debugger.waiting is None and len(shop.refunds()) == 1
    debugger.run_to_end()
    assert debugger.run.trace.reason == "final_answer" and buttons["Approve"].disabled
    assert buttons["Approve"].layout.display == "none"  # shown only while a request waits


def test_a_gated_tool_step_declined_runs_no_tool_and_the_run_goes_on():
    debugger, shop = gated_debugger(timeout_s=30)
    debugger.run_to_end()
    buttons = {button.description: button for _, button in debugger.part_buttons}
    buttons["Decline"].click()
    decided = [e for e in debugger.run.trace.events if e.kind == "approval_decided"]
    assert debugger.error is None and [(e.outcome, e.by) for e in decided] == [("declined", "a click on Decline")]
    assert shop.refunds() == [] and debugger.waiting is None and not debugger.done
    buttons["Decline"].click()  # nothing waits: the click is shown as an error, not lost
    assert debugger.error == "RuntimeError: nothing is waiting for approval"


def test_only_an_agent_whose_gate_waits_for_clicks_gets_approval_buttons():
    assert StepDebugger(shop_agent(), LOGISTICS).part_buttons == []
    debugger, shop = gated_debugger(ask=lambda request: True)
    debugger.run_to_end()  # the gate's own callback answers: nothing waits for a click
    assert debugger.part_buttons == [] and debugger.run.trace.reason == "final_answer" and len(shop.refunds()) == 1
