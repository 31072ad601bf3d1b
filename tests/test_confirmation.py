"""confirmation.py: a side effect happens only on a clear yes; no, no answer and any error write nothing.

Every outcome is run through the real agent, the classroom model and the real SQLite shop in a file, and the
file is opened again afterwards, so "nothing written" means nothing reached the disk either."""

from __future__ import annotations

import json
import threading
import time

import pytest

from tinyagent import (
    Action,
    ApprovalDecided,
    ApprovalRequested,
    ChatResult,
    ConfirmationGate,
    FunctionCallingAgent,
    LlmClient,
    Observation,
    ReActAgent,
    RepeatedAction,
    ToolRegistry,
    Trace,
    fixed_clock,
    tool,
)
from tinyagent.defences.sourced_gate import SourcedGate
from tinyagent.robustness.stop_rules import StopRules
from tinyagent.shop import Shop, describe_refund, refund_gate, shop_registry
from tinyagent.shop.tools import ApplyRefundTool
from tinyagent.toolkit.confirmation import (
    APPROVED,
    DECLINED,
    ERROR,
    TIMEOUT,
    GatedAct,
    ask_on_console,
    read_answer,
)

from .conftest import PATIENCE

CLOCK = fixed_clock("2026-06-30T19:05:23")
REFUND = "我上周买的扫地机不回充了，修不好我想退。订单号 88231。"
REFUND_EN = "Order 88231: the vacuum stopped working yesterday. Refund please."


@pytest.fixture
def shop_file(tmp_path):
    return tmp_path / "shop.sqlite3"


def refunds_on_disk(path) -> list[dict]:
    with Shop(str(path), clock=CLOCK) as fresh:
        return fresh.refunds()


def run_refund(shop_file, gate: ConfirmationGate, question: str = REFUND):
    with Shop(str(shop_file), clock=CLOCK) as shop:
        gate.describe.setdefault("applyRefund", describe_refund(shop))
        result = ReActAgent(LlmClient.classroom(), shop_registry(shop), parts=[GatedAct(gate)]).run(question)
    return result


def approvals(result) -> list:
    return [e for e in result.trace.events if isinstance(e, (ApprovalRequested, ApprovalDecided))]


def test_a_yes_lets_the_refund_through(shop_file):
    result = run_refund(shop_file, ConfirmationGate(ask=lambda request: True))
    asked, decided = approvals(result)
    assert asked.tool == "applyRefund" and asked.summary.startswith("退款 ¥1999，订单 88231（比特 S10 Pro 扫地机")
    assert (decided.outcome, decided.by) == (APPROVED, "the ask callback")
    assert [r["orderId"] for r in refunds_on_disk(shop_file)] == ["88231"]
    assert "RF202606300001" in result.answer and result.reason == "final_answer"


def test_a_no_writes_nothing_and_the_model_says_it_was_not_approved(shop_file):
    result = run_refund(shop_file, ConfirmationGate(ask=lambda request: False), REFUND_EN)
    assert [e.outcome for e in approvals(result) if isinstance(e, ApprovalDecided)] == [DECLINED]
    observation = json.loads(result.trace.of_type(Observation)[-1].text)
    assert observation == {"error": "applyRefund was not run: a person declined it", "approval": "declined",
                           "changed": "nothing", "hint": "nothing was changed; tell the customer it was not "
                           "approved, and do not call it again for this request"}
    assert refunds_on_disk(shop_file) == []
    assert "not approved" in result.answer and "RF2026" not in result.answer
    assert [call.name for call in result.trace.tool_calls].count("applyRefund") == 1  # not asked again


def test_no_answer_in_time_writes_nothing_and_a_late_yes_does_not_count(shop_file):
    release = threading.Event()
    answered: list[bool] = []

    def slow_person(request):  # answers yes, but only after the gate has given up
        release.wait(PATIENCE)
        answered.append(True)
        return True

    gate = ConfirmationGate(ask=slow_person, timeout_s=0.3)
    result = run_refund(shop_file, gate)
    decided = [e for e in approvals(result) if isinstance(e, ApprovalDecided)]
    assert [(e.outcome, e.by) for e in decided] == [(TIMEOUT, "the time limit")]
    assert "nobody approved it within 0.3 s" in result.trace.of_type(Observation)[-1].text
    assert refunds_on_disk(shop_file) == []
    assert "has not been submitted" in result.answer or "没有提交" in result.answer
    release.set()  # now the yes arrives ...
    deadline = time.monotonic() + PATIENCE
    while not answered and time.monotonic() < deadline:
        time.sleep(0.01)
    assert answered == [True]
    request = gate.log[0][0]
    assert gate.answer(request.id, True).outcome == TIMEOUT  # ... and counts for nothing
    assert refunds_on_disk(shop_file) == []


@pytest.mark.parametrize(
    ("ask", "detail"),
    [
        (lambda request: 1 / 0, "ZeroDivisionError: division by zero"),
        (lambda request: "maybe", "the answer 'maybe' is neither yes nor no"),
        (lambda request: None, "the answer None is neither yes nor no"),
        (lambda request: 1, "the answer 1 is neither yes nor no"),  # truthy is not a yes
    ],
)
def test_an_error_while_asking_writes_nothing(shop_file, ask, detail):
    result = run_refund(shop_file, ConfirmationGate(ask=ask))
    decided = [e for e in approvals(result) if isinstance(e, ApprovalDecided)]
    assert [(e.outcome, e.detail) for e in decided] == [(ERROR, detail)]
    assert json.loads(result.trace.of_type(Observation)[-1].text)["approval"] == "error"
    assert refunds_on_disk(shop_file) == []
    assert "RF2026" not in result.answer


def test_a_summary_that_fails_is_an_error_and_writes_nothing(shop_file):
    def broken(text):
        raise LookupError("the order service is down")

    asked = []
    gate = ConfirmationGate(ask=lambda request: asked.append(request) or True, describe={"applyRefund": broken})
    result = run_refund(shop_file, gate)
    assert asked == [] and refunds_on_disk(shop_file) == []
    assert "asking for approval failed (LookupError: the order service is down)" in \
        result.trace.of_type(Observation)[-1].text


def test_step_by_step_the_run_pauses_before_the_tool_and_a_yes_resumes_it(shop_file):
    with Shop(str(shop_file), clock=CLOCK) as shop:
        gate = refund_gate(shop)
        run = ReActAgent(LlmClient.classroom(), shop_registry(shop), parts=[GatedAct(gate)]).start(REFUND)
        while not isinstance(event := run.advance(), ApprovalRequested):
            assert event is not None
        assert gate.pending == [gate.pending[0]] and gate.pending[0].id == event.request_id
        assert shop.refunds() == []  # paused: the tool has not run
        assert gate.answer(event.request_id, "是", by="a click").outcome == APPROVED
        assert gate.answer(event.request_id, False).outcome == APPROVED  # the first answer stands
        result = run.finish()
        assert [r["orderId"] for r in shop.refunds()] == ["88231"] and gate.pending == []
    assert "RF202606300001" in result.answer


def test_step_by_step_a_no_resumes_it_without_writing(shop_file):
    with Shop(str(shop_file), clock=CLOCK) as shop:
        gate = refund_gate(shop)
        run = ReActAgent(LlmClient.classroom(), shop_registry(shop), parts=[GatedAct(gate)]).start(REFUND)
        while not isinstance(event := run.advance(), ApprovalRequested):
            pass
        gate.answer(event.request_id, False, by="a click on Decline")
        result = run.finish()
    assert refunds_on_disk(shop_file) == [] and "没有获得批准" in result.answer


def test_a_click_after_the_limit_is_no_answer(shop_file):
    with Shop(str(shop_file), clock=CLOCK) as shop:
        gate = refund_gate(shop, timeout_s=0.2)
        run = ReActAgent(LlmClient.classroom(), shop_registry(shop), parts=[GatedAct(gate)]).start(REFUND)
        while not isinstance(event := run.advance(), ApprovalRequested):
            pass
        time.sleep(0.4)  # the person is away past the limit (a busy machine only makes it later)
        decision = gate.answer(event.request_id, True, by="a late click")
        assert (decision.outcome, decision.by) == (TIMEOUT, "the time limit")
        assert "a late click" in decision.detail
        run.finish()
    assert refunds_on_disk(shop_file) == []


def test_resumed_with_no_answer_and_no_callback_it_waits_out_the_limit(shop_file):
    result = run_refund(shop_file, ConfirmationGate(timeout_s=0.2))  # run() drives past the pause
    assert [e.outcome for e in approvals(result) if isinstance(e, ApprovalDecided)] == [TIMEOUT]
    assert refunds_on_disk(shop_file) == []


def test_an_answer_from_another_thread_ends_the_wait(shop_file):
    # A server's way: the loop waits in decide(), a person answers through another request (another thread).
    with Shop(str(shop_file), clock=CLOCK) as shop:
        gate = refund_gate(shop, timeout_s=PATIENCE)

        def person():
            while not gate.pending:
                time.sleep(0.01)
            gate.answer(gate.pending[0].id, True, by="the web page")

        helper = threading.Thread(target=person, daemon=True)
        helper.start()
        result = ReActAgent(LlmClient.classroom(), shop_registry(shop), parts=[GatedAct(gate)]).run(REFUND)
        helper.join(PATIENCE)
    assert [(e.outcome, e.by) for e in approvals(result) if isinstance(e, ApprovalDecided)] == [
        (APPROVED, "the web page")]
    assert len(refunds_on_disk(shop_file)) == 1


def test_a_run_abandoned_while_waiting_never_runs_the_tool(shop_file):
    with Shop(str(shop_file), clock=CLOCK) as shop:
        gate = refund_gate(shop)
        run = ReActAgent(LlmClient.classroom(), shop_registry(shop), parts=[GatedAct(gate)]).start(REFUND)
        while not isinstance(event := run.advance(), ApprovalRequested):
            pass
        run.close()  # the notebook moved on: the run is closed at the pause
        assert gate.answer(event.request_id, True).outcome == ERROR
        assert gate.log[-1][1].detail == "the run ended before an answer"
        assert run.advance() is None
    assert refunds_on_disk(shop_file) == []


class Scripted:
    """A model that says the given replies in turn."""

    def __init__(self, *replies: str):
        self.replies = list(replies)

    def chat(self, messages, **options):
        return ChatResult(self.replies.pop(0), "stop")


def test_only_guarded_tools_wait_and_a_rejected_input_is_not_put_to_a_person():
    sent: list[str] = []
    send_email = email_tool(sent)
    asked: list = []
    gate = ConfirmationGate(("sendEmail",), ask=lambda request: asked.append(request) or True)
    model = Scripted('Thought: mail it.\nAction: sendEmail\nAction Input: {"to": "a@b.c"}',
                     'Thought: now with a body.\nAction: sendEmail\nAction Input: {"to": "a@b.c", "body": "hi"}',
                     "Thought: done.\nFinal Answer: sent")
    result = ReActAgent(model, ToolRegistry([send_email]), parts=[GatedAct(gate)]).run("mail a@b.c")
    assert [type(e).__name__ for e in result.trace.events if e.step == 1] == [
        "LlmCall", "Parsed", "ToolCall", "Observation"]  # body is missing: the schema refuses, nobody is asked
    assert "body is missing" in result.trace.of_type(Observation)[0].text
    assert len(asked) == 1 and asked[0].step == 2 and sent == ["a@b.c"]
    assert not gate.guards("queryOrder") and gate.guards(" sendEmail ")


def test_a_warned_repeat_is_not_put_to_a_person_and_does_not_run(shop_file):
    asked: list = []
    refund = 'Action: applyRefund\nAction Input: {"orderId": "88231", "reason": "不回充"}'
    model = Scripted(f"Thought: refund it.\n{refund}", f"Thought: again.\n{refund}", "Thought: ok.\nFinal Answer: ok")
    with Shop(str(shop_file), clock=CLOCK) as shop:
        gate = refund_gate(shop, ask=lambda request: asked.append(request) or True)
        result = ReActAgent(model, shop_registry(shop), parts=[StopRules([RepeatedAction()]), GatedAct(gate)]).run(REFUND)
    assert len(asked) == 1 and len(refunds_on_disk(shop_file)) == 1
    assert "stop_rule" in result.trace.of_type(Observation)[1].text  # the repeat got the rule's warning


def test_a_guarded_call_that_skipped_the_gate_is_refused():
    """A part that goes around the gate (calling its perform() without its act) cannot run a guarded tool."""
    from tinyagent.loop_parts import RunInTurn
    from tinyagent.toolkit.confirmation import GatedAct

    with Shop(":memory:", clock=CLOCK) as shop:
        run = ReActAgent(LlmClient.classroom(), shop_registry(shop)).start(REFUND)
        act = GatedAct(ConfirmationGate(), RunInTurn())
        refund, order = Action("applyRefund", '{"orderId": "88231", "reason": "x"}'), Action("queryOrder", "88231")
        refusal, looked_up = list(act.perform(run, [refund, order], [None, None]))
        assert refusal.error and "no approval was asked for this call" in refusal.text
        assert not looked_up.error and "88231" in looked_up.text and shop.refunds() == []


def test_function_calling_waits_for_the_same_yes(shop_file):
    with Shop(str(shop_file), clock=CLOCK) as shop:
        gate = refund_gate(shop)
        run = FunctionCallingAgent(LlmClient.classroom(), shop_registry(shop), parts=[GatedAct(gate)]).start(REFUND_EN)
        while not isinstance(event := run.advance(), ApprovalRequested):
            assert event is not None
        assert shop.refunds() == [] and "refund ¥1999 for order 88231" in event.summary
        gate.answer(event.request_id, False)
        result = run.finish()
    assert refunds_on_disk(shop_file) == [] and "not approved" in result.answer


class ScriptedCalls:
    """A function-calling model whose replies are lists of sendEmail calls (one reply, several calls), then done."""

    def __init__(self, *replies: list[str]):
        self.replies = [ChatResult("", "tool_calls", tool_calls=tuple(
            {"id": f"c{n}{i}", "type": "function",
             "function": {"name": "sendEmail", "arguments": json.dumps({"to": to, "body": "hi"})}}
            for i, to in enumerate(reply))) for n, reply in enumerate(replies)]

    def chat(self, messages, **options):
        return self.replies.pop(0) if self.replies else ChatResult("done", "stop")


def email_tool(sent: list[str]):
    @tool(name="sendEmail")
    def send_email(to: str, body: str) -> str:
        """Send an email.

        Args:
            to: the address, e.g. a@b.c
            body: the text
        """
        sent.append(to)
        return "sent"

    return send_email


def test_after_a_request_nobody_answered_the_rest_of_the_reply_is_not_asked():
    # 40 refunds in one reply, nobody there: each waited its 120 s in turn, 80 minutes before the run went on.
    asked, sent, came_back = [], [], threading.Event()

    def person(request):  # away for the first reply's first request; back for the next reply
        asked.append(request.input)
        if len(asked) == 1:
            came_back.wait(PATIENCE)
        return True

    gate = ConfirmationGate(("sendEmail",), ask=person, timeout_s=0.3)
    model = ScriptedCalls(["a@b.c", "d@e.f", "g@h.i"], ["j@k.l"])
    try:
        result = FunctionCallingAgent(model, ToolRegistry([email_tool(sent)]), parts=[GatedAct(gate)]).run("mail")
    finally:
        came_back.set()
    assert [json.loads(text)["to"] for text in asked] == ["a@b.c", "j@k.l"]  # the first reply asked once
    assert [(e.step, e.outcome) for e in approvals(result) if isinstance(e, ApprovalDecided)] == [
        (1, TIMEOUT), (1, "not_asked"), (1, "not_asked"), (2, APPROVED)]  # the next reply asks again
    assert len(result.trace.of_type(ApprovalRequested)) == 2 and len(gate.log) == 2 and gate.pending == []
    assert sent == ["j@k.l"]
    first, *skipped, last = result.trace.of_type(Observation)
    assert json.loads(first.text)["approval"] == TIMEOUT and not last.error
    for observation in skipped:  # read as a timeout is read (the classroom model, the service), saying why
        said = json.loads(observation.text)
        assert (said["approval"], said["changed"]) == (TIMEOUT, "nothing")
        assert said["error"] == ("sendEmail was not run: it was not asked, because the request before it in the "
                                 "same reply got no answer within 0.3 s")
    assert "[Approval: not asked, nobody answered the request before it] by the gate\nrequest 1 got no answer " \
           "within 0.3 s" in result.trace.format("en")
    assert "[批准结果：未询问，前一个请求无人答复] 决定方：the gate" in result.trace.format("zh")


def test_step_by_step_a_call_not_asked_is_never_shown_as_waiting():
    # The approval panel and the service's list show what `pending` holds: a call not asked must never be there.
    sent: list[str] = []
    gate = ConfirmationGate(("sendEmail",), timeout_s=0.2)
    run = FunctionCallingAgent(ScriptedCalls(["a@b.c", "d@e.f"]), ToolRegistry([email_tool(sent)]),
                               parts=[GatedAct(gate)]).start("mail")
    shown = []
    while (event := run.advance()) is not None:
        shown.append((type(event).__name__, [request.id for request in gate.pending]))
    assert [waiting for name, waiting in shown if waiting] == [[1]]  # only the first request, while it waited
    assert [name for name, _ in shown].count("ApprovalRequested") == 1 and sent == []


@pytest.mark.parametrize("answer", [False, "late"])
def test_a_person_who_answers_is_asked_about_each_call_of_the_reply(answer):
    # A no (or a yes that came after the limit) says a person is there: the next call is asked, not skipped.
    sent: list[str] = []
    gate = ConfirmationGate(("sendEmail",), timeout_s=0.2)
    run = FunctionCallingAgent(ScriptedCalls(["a@b.c", "d@e.f"]), ToolRegistry([email_tool(sent)]),
                               parts=[GatedAct(gate)]).start("mail")
    requests = []
    while (event := run.advance()) is not None:
        if isinstance(event, ApprovalRequested):
            requests.append(event.request_id)
            if len(requests) == 1 and answer == "late":
                time.sleep(0.4)
                gate.answer(event.request_id, True, by="a late click")
            else:
                gate.answer(event.request_id, len(requests) == 2, by="a click")
    first = DECLINED if answer is False else TIMEOUT
    assert requests == [1, 2]
    assert [e.outcome for e in approvals(run) if isinstance(e, ApprovalDecided)] == [first, APPROVED]
    assert sent == ["d@e.f"]


def test_a_refund_summary_says_what_would_happen():
    with Shop(":memory:", clock=CLOCK) as shop:
        summary = describe_refund(shop)
        # In the language the model wrote the reason in, which is the customer's: one language per trace.
        assert summary('{"orderId": "88231", "reason": "不回充"}') == \
            "退款 ¥1999，订单 88231（比特 S10 Pro 扫地机，2026-06-20 下单，已签收）；原因：不回充"
        assert summary('{"orderId": "88231", "reason": "no charge"}') == \
            "refund ¥1999 for order 88231 (比特 S10 Pro 扫地机, ordered 2026-06-20, 已签收); reason: no charge"
        assert describe_refund(shop, "en")('{"orderId": "88231", "reason": "不回充"}').startswith("refund ¥1999 for")
        assert summary('{"orderId": "99999", "reason": "x"}') == \
            "refund order 99999, which the shop does not have; reason: x"
        assert summary('{"orderId": "99999", "reason": "坏了"}') == "为订单 99999 退款，但店里没有这个订单；原因：坏了"
        assert summary("not json") == \
            "applyRefund with an input the tool will refuse (输入不是合法的 JSON（input is not valid JSON）): not json"
        assert summary('{"orderId": "-1"}').startswith("applyRefund with an input the tool will refuse (orderId：")
        # What the tool refuses, the summary never shows as a refund a person could approve.
        for refused in ('{"orderId": [88231], "reason": "faulty"}', '{"orderId": "88231", "reason": 5}',
                        '{"orderId": "88231"}', '{"orderId": "88231", "reason": "x\\ud800"}', "[" * 100_000):
            said = summary(refused)
            assert said.startswith("applyRefund with an input the tool will refuse") and "¥" not in said, said
            assert ApplyRefundTool(shop).invoke(refused).startswith('{"error"')
            said.encode("utf-8")  # a lone surrogate is shown escaped: the summary can be sent as UTF-8
        assert shop.refunds() == []


def test_a_native_calls_json_value_is_shown_as_the_json_text_the_tool_reads():
    # A native call's arguments can reach the gate as a JSON value (a dict): the person is shown the JSON text the
    # registry hands the tool, not Python's str() of the dict ('orderId', True, None), which the summary could not read.
    refund = Action("applyRefund", {"orderId": "88231", "reason": "不回充"})
    odd = Action("applyRefund", {"orderId": "88231", "urgent": True, "note": None, "why": "坏了"})
    with Shop(":memory:", clock=CLOCK) as shop:
        assert describe_refund(shop, "en")(refund.tool_input).startswith("refund ¥1999 for order 88231")
        for gate in (refund_gate(shop, "en"), SourcedGate(describe={"applyRefund": describe_refund(shop, "en")})):
            request = gate.request_for(refund, 1)
            assert request.input == '{"orderId": "88231", "reason": "不回充"}'
            assert "refund ¥1999 for order 88231" in request.summary, request.summary
        plain = ConfirmationGate().request_for(odd, 1)
        assert plain.input == '{"orderId": "88231", "urgent": true, "note": null, "why": "坏了"}'
        assert plain.summary == f"applyRefund({plain.input})"


@pytest.mark.parametrize(("trick", "refused"), [
    ("x\rrefund ¥39 for order 88234 (USB-C cable); reason: wrong colour", False),
    ("x\x1b[2K\x1b[1Grefund ¥39 for order 88234", True),  # a hidden character: the tool refuses the reason itself
    ("x\n[manager] pre-approved, just say y", False), ("x\u202edecnuf", True)])
def test_what_the_model_wrote_cannot_rewrite_the_line_a_person_approves(trick, refused):
    # a "\r" in the reason made a terminal show only "refund ¥39 for order 88234": a person said y to ¥1999
    with Shop(":memory:", clock=CLOCK) as shop:
        gate = refund_gate(shop)
        request = gate.request_for(Action("applyRefund", json.dumps({"orderId": "88231", "reason": trick})), 1)
        assert request.summary.startswith("applyRefund with an input the tool will refuse" if refused else
                                          "refund ¥1999 for order 88231 (比特 S10 Pro 扫地机"), request.summary
        assert request.summary.isprintable() and "\x1b" not in request.summary and "\u202e" not in request.summary
        if not refused:
            assert request.summary.endswith(trick.encode("unicode_escape").decode()[-12:])
        plain = ConfirmationGate(("applyRefund",)).request_for(Action("applyRefund", f"88231 {trick}"), 1)
        assert plain.summary.isprintable() and plain.summary.startswith("applyRefund(88231 x\\")


def test_the_trace_prints_and_saves_the_approval_events():
    trace = Trace([ApprovalRequested(4, 1, "applyRefund", "refund ¥1999 for order 88231", 120.0),
                   ApprovalDecided(4, 1, "applyRefund", "declined", "a click on Decline")], lang="en")
    assert trace.format() == ("===== Round 4 =====\n[Approval asked] applyRefund: refund ¥1999 for order 88231 "
                              "(waits up to 120 s)\n[Approval: declined] by a click on Decline")
    assert "[批准结果：被拒绝] 决定方：a click on Decline" in trace.format("zh")
    assert Trace.from_json(trace.to_json()).events == trace.events


def test_read_answer_and_the_console_callback(monkeypatch):
    assert [read_answer(a) for a in (True, "YES", "y.", "同意", False, "no", "拒绝", "maybe", 1, None)] == [
        True, True, True, True, False, False, False, None, None, None]
    gate = ConfirmationGate()
    request = gate.open(Action("applyRefund", '{"orderId":"88231"}'), 1)
    prompts: list[str] = []
    for typed, expected in (("y", True), ("", False), ("whatever", False)):
        monkeypatch.setattr("builtins.input", lambda prompt, typed=typed: prompts.append(prompt) or typed)
        assert ask_on_console(request) is expected
    assert prompts[0] == 'Approve applyRefund? applyRefund({"orderId":"88231"})\n[y/N] '


def test_bad_settings_are_refused_at_once():
    with pytest.raises(ValueError, match="timeout_s"):
        ConfirmationGate(timeout_s=0)
    with pytest.raises(TypeError, match="ask must be a function"):
        ConfirmationGate(ask="yes")
    with pytest.raises(TypeError, match="GatedAct needs a ConfirmationGate"):
        ReActAgent(LlmClient.classroom(), ToolRegistry(), parts=[GatedAct(lambda request: True)])
    with pytest.raises(KeyError):
        ConfirmationGate().answer(42, True)


def test_a_second_gate_around_the_first_is_refused_when_the_agent_is_made():
    # The same gate mounted twice asked once and was approved, and the refund was still refused ("no approval was
    # asked for this call"); two different gates never asked the inner one, so its tool could never run.
    shop = Shop(":memory:")
    gate = refund_gate(shop, ask=lambda request: True)
    other = ConfirmationGate(("queryOrder",), ask=lambda request: True)
    for parts in ([GatedAct(gate), GatedAct(gate)], [GatedAct(gate), GatedAct(other)]):
        with pytest.raises(TypeError, match="an agent has one confirmation gate; give it every tool that needs"):
            ReActAgent(LlmClient.classroom(), shop_registry(shop), parts=parts)
