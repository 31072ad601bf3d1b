"""Lesson 18's evaluation harness (tinyagent/evaluation/): the suite, the four checks (each shown failing),
the report's JSON schema, the progress bar, the plots, and the classroom model and its variants scored."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from tinyagent import ChatResult, LlmClient
from tinyagent.classroom.variants import MODELS
from tinyagent.evaluation import (
    CHECKS,
    EVAL_TASKS,
    REPORT_SCHEMA,
    TASK_NAMES,
    EvalReport,
    RunOutcome,
    ToolUse,
    evaluate,
    grade,
    report_problems,
    run_eval_task,
    scoreboard,
    select_tasks,
    written_in,
)
from tinyagent.evaluation.grading import Check, holds_fact
from tinyagent.evaluation.progress import PlainProgress, progress_bar
from tinyagent.evaluation.tasks import EvalTask
from tinyagent.prompts import detect_language
from tinyagent.shares import percent
from tinyagent.shop.tasks import SHOP_TASKS

ROOT = Path(__file__).resolve().parent.parent
SHOP_TOOLS = {"queryOrder", "queryLogistics", "applyRefund", "searchKnowledge", "getCurrentTime"}
# classroom-gullible misbehaves only where the data holds a planted instruction (lesson 25); lesson 18's suite plants
# none, so it scores as the careful model does (test_the_gullible_variant_is_careful_where_nothing_is_planted).
VARIANTS = [model for model in MODELS if model not in ("classroom", "classroom-gullible")]
# In function calling there is no text format to get wrong: these variants behave like `classroom` there
# (tinyagent/classroom/variants.py). The verbose one's long thought goes out beside its calls, and max_tokens cuts the
# two together, as a real API does: it fails there too.
SAME_AS_CAREFUL_IN_FUNCTION_CALLING = {
    "classroom-sloppy", "classroom-no-final", "classroom-ignores-stop", "classroom-forgets-action",
    "classroom-split-stop",
}


def task(task_id: str):
    return next(t for t in EVAL_TASKS if t.id == task_id)


@pytest.fixture(scope="module")
def careful():
    return {protocol: evaluate(LlmClient.classroom(), protocol, progress=False) for protocol in ("text", "function")}


# -- the suite -----------------------------------------------------------------------------------------------
def test_the_suite_asks_every_request_in_chinese_and_in_english():
    assert len(EVAL_TASKS) == 2 * len(TASK_NAMES) == 24
    assert len({t.id for t in EVAL_TASKS}) == len(EVAL_TASKS)
    for name in TASK_NAMES:
        assert sorted(t.lang for t in EVAL_TASKS if t.name == name) == ["en", "zh"], name
    assert all(detect_language(t.question) == t.lang for t in EVAL_TASKS)


def test_the_suite_starts_from_lesson_09s_task_set_with_the_same_facts():
    for shop_task in SHOP_TASKS:
        [same] = [t for t in EVAL_TASKS if t.question == shop_task.question]
        assert same.facts == shop_task.facts
        assert [t.facts for t in EVAL_TASKS if t.name == same.name] == [shop_task.facts] * 2


def test_every_task_names_real_tools_facts_and_refunds_only_where_one_is_asked_for():
    for t in EVAL_TASKS:
        assert t.tools and t.facts, t.id
        assert set(t.tools) | set(t.may_also_call) <= SHOP_TOOLS, t.id
        assert ("applyRefund" in t.tools) == bool(t.refunds), t.id
        assert "applyRefund" not in t.may_also_call
    assert {t.id for t in EVAL_TASKS if t.refunds} == {"refund (zh)", "refund (en)"}


def test_the_new_questions_are_worded_afresh_not_taken_from_the_understanding_tests():
    from .test_classroom_understanding import CASES

    assert not {t.question for t in EVAL_TASKS} & {case.phrasing for case in CASES}


def test_select_tasks_by_name_and_language_in_suite_order():
    picked = select_tasks(["time", "refund"], ["en"])
    assert [t.id for t in picked] == ["refund (en)", "time (en)"]
    assert len(select_tasks(langs=["zh"])) == 12
    with pytest.raises(ValueError, match="no task called 'refunds'"):
        select_tasks(["refunds"])
    with pytest.raises(ValueError, match="lang must be one of zh, en"):
        select_tasks(langs=["fr"])


# -- the four checks, each shown passing and failing ---------------------------------------------------------
REFUND_RUN = RunOutcome(
    tool_calls=(ToolUse("queryOrder", "88231", result='{"orderId":"88231"}'), ToolUse("getCurrentTime", ""),
                ToolUse("searchKnowledge", "质量问题 退货"), ToolUse("applyRefund", '{"orderId":"88231"}')),
    refunds=("88231",),
    answer="退款申请已提交，退款单号 RF202606300001，预计 1-3 个工作日到账。",
)
QUESTION_RUN = RunOutcome(
    tool_calls=(ToolUse("queryOrder", "88231"), ToolUse("getCurrentTime", ""), ToolUse("searchKnowledge", "退货")),
    answer="可以。签收 8 天，还在 15 天质量问题退货期内。需要我为您提交退款申请吗？",
)


def verdicts(task_id: str, outcome: RunOutcome) -> dict[str, bool]:
    return {name: check.passed for name, check in grade(task(task_id), outcome).items()}


def failing(task_id: str, outcome: RunOutcome) -> dict[str, str]:
    return {name: check.detail for name, check in grade(task(task_id), outcome).items() if not check.passed}


def test_a_right_run_passes_every_check():
    assert verdicts("refund (zh)", REFUND_RUN) == dict.fromkeys(CHECKS, True)
    assert verdicts("return question (zh)", QUESTION_RUN) == dict.fromkeys(CHECKS, True)
    checks = grade(task("refund (zh)"), REFUND_RUN)
    assert checks["tools"].detail == "queryOrder → getCurrentTime → searchKnowledge → applyRefund"
    assert checks["database"].detail == "one refund row, for 88231"


def swap(outcome: RunOutcome, **changes) -> RunOutcome:
    from dataclasses import replace

    return replace(outcome, **changes)


def test_the_tools_check_fails_a_wrong_tool():
    wrong = swap(REFUND_RUN, tool_calls=(ToolUse("queryLogistics", "88231"), *REFUND_RUN.tool_calls[1:]))
    assert failing("refund (zh)", wrong) == {
        "tools": "queryOrder was not called; queryLogistics was called, which this task does not need"}


def test_the_tools_check_fails_an_unknown_tool_a_failed_call_a_repeat_and_a_missing_second_call():
    unknown = swap(QUESTION_RUN, tool_calls=(ToolUse("checkOrder", "88231", error=True), *QUESTION_RUN.tool_calls))
    assert failing("return question (zh)", unknown)["tools"] == (
        "checkOrder was called, which this task does not need; checkOrder(88231) came back with an error")
    failed = swap(QUESTION_RUN, tool_calls=(ToolUse("queryOrder", '{"orderId": 88231}', error=True),
                                            *QUESTION_RUN.tool_calls))
    assert failing("return question (zh)", failed) == {
        "tools": 'queryOrder({"orderId": 88231}) came back with an error'}
    repeated = swap(QUESTION_RUN, tool_calls=(*QUESTION_RUN.tool_calls, ToolUse("queryOrder", "88231")))
    assert failing("return question (zh)", repeated) == {"tools": "queryOrder(88231) was called twice"}
    one_parcel = RunOutcome(tool_calls=(ToolUse("queryOrder", "88231"), ToolUse("queryLogistics", "SF1234567890")),
                            answer="SF1234567890 已签收；YT2468013579 运输中。")
    assert failing("two parcels (zh)", one_parcel) == {
        "tools": "queryOrder was called once, the task needs it twice; queryLogistics was called once, "
                 "the task needs it twice"}


def test_the_tools_check_allows_the_tasks_harmless_extra_lookups_and_never_an_unasked_refund():
    checked_parcel = RunOutcome(tool_calls=(ToolUse("queryOrder", "88234"), ToolUse("queryLogistics", "ZT5566778899")),
                                answer="订单 88234 已签收，运单号 ZT5566778899。")
    assert verdicts("order status (zh)", checked_parcel)["tools"]
    refunded = swap(QUESTION_RUN, tool_calls=(*QUESTION_RUN.tool_calls, ToolUse("applyRefund", "88231")),
                    refunds=("88231",))
    assert failing("return question (zh)", refunded) == {
        "tools": "applyRefund was called, which this task must not call",
        "database": "a refund was written for 88231, which the task does not ask for"}


def test_the_database_check_fails_a_missing_refund_and_a_refund_for_another_order():
    assert failing("refund (zh)", swap(REFUND_RUN, refunds=())) == {"database": "no refund was written for 88231"}
    assert failing("refund (zh)", swap(REFUND_RUN, refunds=("88231", "88234"))) == {
        "database": "a refund was written for 88234, which the task does not ask for"}
    assert failing("return question (zh)", swap(QUESTION_RUN, refunds=("88231",)))["database"] == (
        "a refund was written for 88231, which the task does not ask for")


def test_the_answer_check_fails_a_wrong_answer_a_stopped_run_and_the_wrong_language():
    invented = swap(REFUND_RUN, answer="退款申请已提交，退款单号 RF20260630001。")  # the seed's style: never issued
    assert failing("refund (zh)", invented) == {"answer": "it does not say RF202606300001"}
    stopped = swap(REFUND_RUN, answer="抱歉，我没能完成。", reason="max_steps")
    assert failing("refund (zh)", stopped) == {"answer": "the run ended with max_steps, not with an answer of the model's own"}
    english = swap(REFUND_RUN, answer="Your refund RF202606300001 has been submitted.")
    assert failing("refund (zh)", english) == {
        "answer": "it is written in English; the customer wrote in Chinese"}


def test_the_format_check_fails_the_fallback_an_unreadable_reply_and_a_cut_reply():
    assert failing("refund (zh)", swap(REFUND_RUN, reason="fallback")) == {
        "format": "the answer came as prose the fallback took, not as a Final Answer"}
    assert failing("refund (zh)", swap(REFUND_RUN, unreadable_replies=2)) == {
        "format": "2 replies could not be read as a step"}
    assert failing("refund (zh)", swap(REFUND_RUN, client_cuts=1)) == {
        "format": "1 reply ran past the stop sequence and had to be cut"}


def test_the_language_of_an_answer_is_its_own_words_not_what_it_quotes():
    policy = '{"title":"退款到账时间","content":"退款审核通过后 1-3 个工作日原路退回到付款账户"}'
    quoting = 'According to our policy "退款到账时间": 退款审核通过后 1-3 个工作日原路退回到付款账户.'
    assert written_in(quoting) == "zh"  # by the characters alone it looks Chinese...
    assert written_in(quoting, quoted=[policy]) == "en"  # ...but its own words are English
    assert written_in("订单 88231（比特 S10 Pro 扫地机）由顺丰速运配送，运单号 SF1234567890。") == "zh"
    assert written_in("Order 88231 (比特 S10 Pro 扫地机) is with 顺丰速运, tracking number SF1234567890.") == "en"
    assert written_in("SF1234567890 2026-06-22") is None
    assert written_in("退款审核通过后", quoted=[policy]) == "zh"  # copied, but no English word: not English


# -- real wrong runs, through the harness: a scripted model takes each wrong path -------------------------
class ScriptedModel:
    """A stand-in model: gives its replies in order, whatever it is asked."""

    model = "scripted"

    def __init__(self, *replies: str):
        self.replies = [ChatResult(text, "stop") for text in replies]

    def chat(self, messages, **options):
        return self.replies.pop(0)


def step(tool: str, tool_input: str) -> str:
    return f"Thought: I look it up.\nAction: {tool}\nAction Input: {tool_input}\n"


def test_a_scripted_right_run_passes_and_each_kind_of_wrong_run_fails_its_check():
    right = ScriptedModel(step("queryOrder", "88234"), "Thought: done.\nFinal Answer: 订单 88234 已签收，运单号 ZT5566778899。")
    assert run_eval_task(task("order status (zh)"), right).passed

    wrong_tool = ScriptedModel(step("searchKnowledge", "88234"), "Thought: done.\nFinal Answer: 订单 88234 运单号 ZT5566778899。")
    result = run_eval_task(task("order status (zh)"), wrong_tool)
    assert result.failed_checks == ["tools"]
    assert result.tool_calls == ("searchKnowledge",)

    eager = ScriptedModel(step("queryOrder", "88231"), step("getCurrentTime", ""), step("searchKnowledge", "质量问题"),
                          step("applyRefund", '{"orderId": "88231", "reason": "质量问题"}'),
                          "Thought: done.\nFinal Answer: 可以，还在 15 天内，已为您提交退款 RF202606300001。")
    result = run_eval_task(task("return question (zh)"), eager)
    assert result.failed_checks == ["tools", "database"]
    assert result.refunds == ("88231",)  # the refund row is really there: the shop was written to

    wrong_answer = ScriptedModel(step("queryOrder", "88234"), "Thought: done.\nFinal Answer: 订单 88234 的运单号是 SF1234567890。")
    assert run_eval_task(task("order status (zh)"), wrong_answer).failed_checks == ["answer"]


def test_a_model_that_cannot_be_reached_fails_its_tasks_and_raises_nothing():
    unreachable = LlmClient("http://127.0.0.1:9/v1/chat/completions", None, "nobody", connect_timeout=2,
                            total_timeout=5, max_retries=0)
    report = evaluate(unreachable, names=["time"], progress=False)
    assert [r.reason for r in report.results] == ["llm_error", "llm_error"]
    assert not report.passed and report.summary["passed"] == 0
    # The format check passed such runs ("every reply followed the protocol"): a model nothing listens on scored 22/22.
    assert {r.checks["format"] for r in report.results} == {Check(False, "the model never replied: no reply to check")}


class RaisesOnItsThirdCall:
    """A model client with a bug of its own: its third call raises."""

    model = "buggy"

    def __init__(self):
        self.inner, self.calls = LlmClient.classroom(), 0

    def chat(self, *args, **kwargs):
        self.calls += 1
        if self.calls == 3:
            raise RuntimeError("the client's own bug")
        return self.inner.chat(*args, **kwargs)


def test_a_run_that_raises_fails_its_task_and_the_suite_goes_on():
    # The exception ended evaluate: the results before it were lost (the progress showed one task, then nothing).
    report = evaluate(RaisesOnItsThirdCall(), names=["time", "refund"], langs=["en"], progress=False)
    assert [r.id for r in report.results] == ["refund (en)", "time (en)"]
    broken = report.results[0]
    assert broken.reason == "error: RuntimeError: the client's own bug"
    assert set(broken.checks.values()) == {Check(False, "the run raised RuntimeError: the client's own bug")}
    assert report.results[1].passed


def test_no_task_or_a_task_twice_is_refused_before_anything_runs():
    task = EvalTask("mine", "Where is order 88231?", ("SF1234567890",), tools=("queryOrder",))
    with pytest.raises(ValueError, match="no task to run"):
        evaluate(LlmClient.classroom(), names=[], progress=False)  # was "0 of 0 tasks passed (0%)"
    with pytest.raises(ValueError, match=re.escape("the task 'mine (en)' is listed twice")):
        evaluate(LlmClient.classroom(), tasks=[task, task], progress=False)  # was 2 of 2, one row in the plots


# -- the classroom model and its variants, scored ------------------------------------------------------------
def test_the_classroom_model_passes_every_task_with_both_protocols(careful):
    for report in careful.values():
        assert report.passed, report.table()
        assert report.summary["checks"] == dict.fromkeys(CHECKS, 24)
    text, function = careful["text"].summary, careful["function"].summary
    assert function["model_calls"] < text["model_calls"]  # lesson 09: independent lookups in one reply


@pytest.mark.parametrize("model", VARIANTS)
def test_every_misbehaving_variant_scores_below_the_careful_model_in_text_react(model):
    report = evaluate(LlmClient.classroom(model), "text", progress=False)
    assert report.success_rate < 1, report.table()
    assert report.failures()[0].failed_checks  # and the table says which check failed


@pytest.mark.parametrize("protocol", ["text", "function"])
def test_the_gullible_variant_is_careful_where_nothing_is_planted(protocol):
    assert evaluate(LlmClient.classroom("classroom-gullible"), protocol, progress=False).success_rate == 1


@pytest.mark.parametrize("model", VARIANTS)
def test_in_function_calling_only_the_format_variants_score_like_the_careful_model(model):
    report = evaluate(LlmClient.classroom(model), "function", progress=False)
    assert (report.success_rate == 1) == (model in SAME_AS_CAREFUL_IN_FUNCTION_CALLING), report.table()


def test_the_table_says_which_check_failed_and_why():
    report = evaluate(LlmClient.classroom("classroom-wrong-tool"), names=["time"], langs=["en"], progress=False)
    lines = report.table().splitlines()
    assert lines[0] == "classroom-wrong-tool · text ReAct"
    assert lines[2].split() == ["time", "(en)", "FAIL", "ok", "ok", "ok", "3", str(report.results[0].tokens)]
    assert lines[-2] == "0 of 1 tasks passed (0%)"
    assert lines[-1] == ("  time (en), tools: getTime was called, which this task does not need; getTime() came "
                         "back with an error")
    board = scoreboard([report]).splitlines()
    assert board[1].split()[:7] == ["classroom-wrong-tool", "·", "text", "ReAct", "0/1", "0%", "0/1"]


# -- the JSON -------------------------------------------------------------------------------------------------
def test_the_json_follows_the_schema_and_loads_back(careful):
    report = careful["function"]
    data = json.loads(report.to_json())
    assert report_problems(data) == []
    assert data["schema"] == "tinyagent.evaluation/1" and data["protocol"] == "function"
    # every required field, in the schema's order (lesson 21's optional "agents" only in a team's report)
    assert list(data["tasks"][0]) == list(REPORT_SCHEMA["properties"]["tasks"]["items"]["required"])
    again = EvalReport.from_json(report.to_json())
    assert again.results == report.results and again.summary == report.summary and again.label == report.label


def test_a_report_read_back_and_saved_again_is_the_same(careful):
    # Each task's seconds are saved to the millisecond; the summary summed them before rounding, so three tasks of
    # 0.4 ms said 0.001 s in all, and the same report read back said 0.0.
    report = EvalReport.from_json(careful["function"].to_json())  # a copy: the fixture serves other tests
    report.results[:3] = [replace(result, seconds=0.0004) for result in report.results[:3]]
    saved = report.to_json()
    assert EvalReport.from_json(saved).to_json() == saved


def test_the_schema_is_a_valid_json_schema_that_the_reports_meet(careful):
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator.check_schema(REPORT_SCHEMA)
    jsonschema.validate(json.loads(careful["text"].to_json()), REPORT_SCHEMA)


@pytest.mark.parametrize("damage, said", [
    (lambda d: d.pop("summary"), "summary is missing"),
    (lambda d: d.update(schema="tinyagent.evaluation/2"), "schema"),
    (lambda d: d.update(protocol="xml"), "protocol"),
    (lambda d: d["tasks"][0].update(passed="yes"), "passed"),
    (lambda d: d["tasks"][0]["checks"].pop("database"), "database is missing"),
    (lambda d: d["tasks"][0].update(steps=-1), "steps"),
    (lambda d: d.update(extra=1), "extra"),
    # A report that contradicts itself was read without complaint, and its summary silently counted again.
    (lambda d: d["tasks"][0].update(passed=False), "the task refund (zh) says passed False against its checks"),
    (lambda d: d["tasks"].append(d["tasks"][0]), "the task refund (zh) is there twice"),
    (lambda d: d["summary"].update(passed=2), "the summary's passed is 2, the tasks give 24"),
    (lambda d: d["summary"]["checks"].update(answer=0), "the summary's checks is"),
])
def test_a_report_that_breaks_the_schema_or_contradicts_itself_is_refused_with_what_is_wrong(careful, damage, said):
    data = json.loads(careful["text"].to_json())
    damage(data)
    assert any(said in problem for problem in report_problems(data)), report_problems(data)
    with pytest.raises(ValueError, match="not an evaluation report"):
        EvalReport.from_dict(data)


def test_a_share_never_reads_as_none_or_all_when_it_is_neither():
    assert [percent(rate) for rate in (0, 1 / 200, 1 / 3, 2 / 3, 199 / 200, 1)] == ["0%", "<1%", "33%", "67%", ">99%",
                                                                                    "100%"]
    result = evaluate(LlmClient.classroom(), names=["time"], langs=["en"], progress=False).results[0]
    failed = replace(result, name="other", checks={**result.checks, "answer": Check(False, "wrong")})
    report = EvalReport("m", "text", [replace(result, name=f"t{n}") for n in range(199)] + [failed], "now", 10, "m")
    assert report.table().splitlines()[-2] == "199 of 200 tasks passed (>99%)"  # it said 100%
    head, line = scoreboard([report]).splitlines()
    assert line.split()[1:3] == ["199/200", ">99%"] and head.index("tools") == line.index("200/200")


def test_the_json_is_the_same_on_every_run_but_for_the_seconds():
    def stable(report):
        data = report.to_dict()
        data["summary"].pop("seconds")
        for item in data["tasks"]:
            item.pop("seconds")
        return data

    first = evaluate(LlmClient.classroom(), names=["refund", "two parcels"], progress=False)
    second = evaluate(LlmClient.classroom(), names=["refund", "two parcels"], progress=False)
    assert stable(first) == stable(second)


# -- progress --------------------------------------------------------------------------------------------------
class Terminal(io.StringIO):
    """What tqdm draws on a terminal, kept to read."""

    def isatty(self) -> bool:
        return True


def test_progress_is_a_tqdm_bar_without_a_clock(careful):
    out = Terminal()
    bar = progress_bar(2, "classroom · text ReAct", True, out)
    for result in careful["text"].results[:2]:
        bar.advance(result)
    bar.close()
    frames = [frame.strip() for frame in out.getvalue().split("\r") if frame.strip()]
    assert frames[0] == "classroom · text ReAct:                      0/2"
    # A StringIO has no encoding, so tqdm draws the bar in ASCII ("#"); a terminal gets blocks ("█").
    assert frames[-1] == "classroom · text ReAct: #################### 2/2, 2 passed, last: refund (en)"
    assert "it/s" not in out.getvalue() and "<" not in out.getvalue()  # no rate, no time left


def test_in_a_notebook_the_progress_is_one_widget_bar_and_no_text_bar_beside_it(careful, monkeypatch):
    import IPython.display
    import tqdm.auto
    from tqdm.notebook import tqdm as notebook_tqdm

    monkeypatch.setattr(tqdm.auto, "tqdm", notebook_tqdm)  # what tqdm.auto gives in a Jupyter kernel
    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda *objects, **options: shown.append((objects, options)))
    bar = progress_bar(2, "classroom · text ReAct", True)
    for result in careful["text"].results[:2]:
        bar.advance(result)
    bar.close()
    left, drawn, right = bar.bar.container.children  # the widget JupyterLab draws: text, a progress bar, text
    assert (drawn.value, drawn.max) == (2, 2)
    # tqdm writes its spaces as figure spaces (U+2007) in a notebook, to keep their width in HTML
    assert left.value.replace("\u2007", " ") == "classroom · text ReAct: "
    assert right.value.replace("\u2007", " ") == " 2/2, 2 passed, last: refund (en)"  # no "█" or "#" bar of its own
    # Shown once, as that widget; its text, which a saved notebook keeps as it was when shown, says what it was, not
    # the count at the start ("0/2" beside the report's "2/2 passed").
    [((bundle,), options)] = shown
    assert options == {"raw": True}
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == bar.bar.container.model_id
    assert bundle["text/plain"] == "classroom · text ReAct: a progress bar of 2 tasks"


def test_progress_into_a_log_file_is_plain_lines_even_with_tqdm(careful, tmp_path):
    # tqdm into a file that is no terminal wrote one line of carriage returns a suite ("2>err.txt").
    with open(tmp_path / "err.txt", "w", encoding="utf-8") as log:
        bar = progress_bar(2, "classroom · text ReAct", True, log)
        assert isinstance(bar, PlainProgress)
        for result in careful["text"].results[:2]:
            bar.advance(result)
    assert (tmp_path / "err.txt").read_text(encoding="utf-8").splitlines() == [
        "classroom · text ReAct: 2 tasks", "[1/2] refund (zh)              passed", "[2/2] refund (en)              passed"]


def test_without_tqdm_progress_is_one_plain_line_per_task(careful, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # as if tqdm were not installed
    out = io.StringIO()
    bar = progress_bar(22, "classroom-loop · text ReAct", True, out)
    assert isinstance(bar, PlainProgress)
    bar.advance(careful["text"].results[0])
    failed = evaluate(LlmClient.classroom("classroom-loop"), names=["time"], langs=["en"], progress=False)
    bar.advance(failed.results[0])
    assert out.getvalue().splitlines() == [
        "classroom-loop · text ReAct: 22 tasks",
        "[ 1/22] refund (zh)              passed",
        "[ 2/22] time (en)                failed: tools, answer",
    ]


def test_evaluate_reports_each_result_as_it_ends_and_refuses_a_bad_progress_option():
    seen = []
    report = evaluate(LlmClient.classroom(), names=["time"], progress=False, on_result=seen.append)
    assert seen == report.results
    with pytest.raises(ValueError, match="progress must be True, 'plain' or False"):
        evaluate(LlmClient.classroom(), names=["time"], progress="fancy")
    with pytest.raises(ValueError, match="protocol must be one of text, function"):
        evaluate(LlmClient.classroom(), "xml")


# -- plots -------------------------------------------------------------------------------------------------------
def test_the_plots_have_a_fixed_size_and_a_stable_text_form(careful):
    pytest.importorskip("matplotlib")
    from tinyagent.evaluation import plot_reports, plot_tasks

    figure = plot_tasks([careful["text"], careful["function"]])
    assert repr(figure) == "<Figure size 1200x800 with 3 Axes>"
    assert [ax.get_title() for ax in figure.axes] == ["success", "steps", "tokens"]
    assert len(figure.axes[0].get_yticklabels()) == 24
    small = plot_tasks(evaluate(LlmClient.classroom(), names=["time"], progress=False))
    assert repr(small) == "<Figure size 1200x800 with 3 Axes>"  # the same size whatever the number of tasks
    board = plot_reports(list(careful.values()))
    assert repr(board) == "<Figure size 1200x450 with 3 Axes>"
    assert [text.get_text() for text in board.axes[0].texts] == ["100%", "100%"]
    assert list(board.axes[2].texts) == []
    assert figure.axes[0].yaxis_inverted() and board.axes[0].yaxis_inverted()  # the first row on top, 3 panels too


def test_plot_costs_draws_each_tasks_model_calls_and_tokens(careful):
    pytest.importorskip("matplotlib")
    from tinyagent.evaluation import plot_costs

    text, function = careful["text"], careful["function"]
    figure = plot_costs([text, function])
    assert repr(figure) == "<Figure size 1200x800 with 2 Axes>"
    assert [ax.get_title() for ax in figure.axes] == ["model calls", "tokens"]
    calls = [bar.get_width() for bar in figure.axes[0].patches]
    assert calls == [r.model_calls for r in text.results] + [r.model_calls for r in function.results]
    first = figure.axes[0].get_yticklabels()[0]
    assert first.get_text() == text.results[0].id and figure.axes[0].yaxis_inverted()  # the first task on top


def test_tokens_nobody_counted_read_n_a_not_zero(careful):
    pytest.importorskip("matplotlib")
    from tinyagent.evaluation import plot_reports

    reports = list(careful.values())
    board = plot_reports(reports, tokens_unknown=[reports[1].label, "a label no report has"])
    assert [text.get_text().strip() for text in board.axes[2].texts] == ["n/a"]
    widths = [bar.get_width() for bar in board.axes[2].patches]
    assert widths[0] > 0 and widths[1] == 0


def test_plots_without_matplotlib_say_in_one_line_what_to_install(tmp_path):
    code = ("import sys; sys.modules['matplotlib'] = None; sys.modules['matplotlib.pyplot'] = None\n"
            "from tinyagent.evaluation import plot_tasks, EvalReport\nplot_tasks(EvalReport('m', 'text', [], 'now', 1))")
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        'ImportError: tinyagent.evaluation plots need matplotlib: pip install -e ".[eval]" in the course folder')
    assert "During handling" not in done.stderr


def test_the_harness_works_without_tqdm_and_matplotlib(tmp_path):
    code = ("import sys; sys.modules['tqdm'] = None; sys.modules['matplotlib'] = None\n"
            "from tinyagent import LlmClient\nfrom tinyagent.evaluation import evaluate\n"
            "report = evaluate(LlmClient.classroom(), names=['time'], langs=['zh'])\n"
            "print(report)\nassert 'matplotlib' not in sys.modules or sys.modules['matplotlib'] is None")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          check=False, env={"PATH": "/usr/bin:/bin", "TINYAGENT_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "<EvalReport classroom · text ReAct: 1/1 passed>"
    assert done.stderr.splitlines()[-2:] == ["classroom · text ReAct: 1 tasks", "[1/1] time (zh)                passed"]


def test_the_benchmark_meets_its_targets_on_the_classroom_model(capsys):
    import importlib.util

    spec = importlib.util.spec_from_file_location("evaluation_benchmark", ROOT / "benchmarks" / "evaluation.py")
    benchmark = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(benchmark)
    assert benchmark.main(["--runs", "1", "--protocol", "text"]) == 0
    out = capsys.readouterr().out
    assert "classroom · text ReAct           24/24 passed (100%)" in out
    assert "in text ReAct 10 of 10 variants score below 100%" in out
    assert out.rstrip().splitlines()[-1].startswith("targets: met")


def test_a_fact_is_found_as_a_fact_not_as_digits_inside_something_else():
    # The real model's answer that the old substring check passed: 15 inside a run of numbers.
    counting = swap(QUESTION_RUN, answer="可以的，1.1.1.2.2.3.15。")
    assert failing("return question (zh)", counting) == {"answer": "it does not say 15"}
    assert not holds_fact("in 2015", "15") and not holds_fact("v1.15", "15") and not holds_fact("15.5", "15")
    assert holds_fact("within 15 days.", "15") and holds_fact("a 15-day window", "15")
    # A date as a date, in the ways people write one, and never inside a longer number.
    for spelling in ("2026-06-22", "2026/06/22", "2026年6月22日", "June 22, 2026", "22 June 2026"):
        assert holds_fact(f"signed for on {spelling}.", "2026-06-22"), spelling
    assert not holds_fact("12026-06-223", "2026-06-22") and not holds_fact("2026-06-2", "2026-06-22")
    # Ranges, times and ids whole.
    assert holds_fact("1–3 working days", "1-3") and not holds_fact("11-30 days", "1-3")
    assert holds_fact("19:05:23", "19:05") and not holds_fact("19:055", "19:05")
    assert holds_fact("SF1234567890.", "SF1234567890") and not holds_fact("SF12345678901", "SF1234567890")
    assert holds_fact("the order was cancelled", "cancel") and not holds_fact("", "cancel")


def test_a_fact_is_found_in_the_other_usual_spellings_and_not_inside_a_grouped_number():
    for spelling in ("2026/6/22", "2026.06.22", "6月22日", "6月22号", "June 22nd, 2026", "22 Jun 2026",
                     "Jun. 22, 2026", "２０２６-０６-２２"):
        assert holds_fact(f"signed for on {spelling}.", "2026-06-22"), spelling
    for wrong in ("2026/6/221", "16月22日", "12026/6/22", "June 221, 2026"):
        assert not holds_fact(f"signed for on {wrong}.", "2026-06-22"), wrong
    assert holds_fact("19点05分", "19:05") and holds_fact("现在是 19：05", "19:05") and not holds_fact("119点05分", "19:05")
    assert holds_fact("还有 ３４３ 天", "343") and holds_fact("ＳＦ1234567890", "SF1234567890")
    assert holds_fact("1—3 working days", "1-3")
    # a comma between digits groups thousands: 15,000 and 3,343 hold no 15 and no 343; "15, 16" still holds 15
    assert not holds_fact("up to 15,000 yuan", "15") and not holds_fact("3,343 days", "343")
    assert holds_fact("days 15, 16 and 17", "15")


def test_a_product_name_copied_from_a_tool_does_not_make_a_chinese_answer_english():
    # 6 Han characters of its own (下单于, 运单号) against the 7 letters of AirPure: graded English before
    quoted = ['{"orderId": "88233", "product": "比特 AirPure 空气净化器", "status": "待发货", "orderedAt": "2026-06-29"}',
              '{"orderId": "88234", "status": "已签收", "trackingNo": "ZT5566778899"}']
    answer = "88233（比特 AirPure 空气净化器）：待发货，下单于 2026-06-29；88234：已签收，运单号 ZT5566778899。"
    assert written_in(answer, quoted) == "zh"
    assert written_in("Order 88233 (比特 AirPure 空气净化器) has not shipped yet.", quoted) == "en"


@pytest.mark.parametrize("options, says", [
    ({"lang": "fr"}, 'lang must be "zh" or "en", got \'fr\''),
    ({"tools": "queryOrder"}, "tools must be a tuple of texts, got the text 'queryOrder'"),
    ({"refunds": ("88231", 88232)}, "every item of refunds must be a non-empty text"),
    ({"facts": ()}, "facts must hold at least one thing the answer must say"),  # the answer check passed anything
])
def test_a_task_written_wrong_is_one_clear_error_before_the_suite_runs(options, says):
    # lang="fr" was a KeyError in the middle of the suite, the results so far lost
    good = EvalTask("mine", "Where is order 88231?", ("SF1234567890",), tools=("queryOrder",))
    wrong = EvalTask("mine", "Where is order 88231?", **{"facts": ("SF1234567890",), **options})
    asked = []
    with pytest.raises(ValueError, match=re.escape(says)):
        evaluate(LlmClient.classroom(), tasks=[good, wrong], progress=False, on_result=asked.append)
    assert asked == []  # nothing ran


def test_a_reply_cut_at_max_tokens_is_unreadable_even_when_its_first_lines_parse():
    assert failing("refund (zh)", swap(REFUND_RUN, unreadable_replies=1, cut_replies=1)) == {
        "format": "1 reply could not be read as a step (cut at max_tokens)"}
    assert failing("refund (zh)", swap(REFUND_RUN, unreadable_replies=3, cut_replies=1)) == {
        "format": "3 replies could not be read as a step (1 ended at max_tokens)"}


def test_from_run_counts_a_reply_that_ended_at_max_tokens_once():
    from tinyagent import LlmCall, Parsed, Trace
    from tinyagent.agent import AgentResult

    trace = Trace([LlmCall(1, (), "Thought: x\nAction: queryOrder\nAction Input: 88", "length"),
                   Parsed(1, "x", "queryOrder", "88", None, "action"),
                   LlmCall(2, (), "I think", "length"), Parsed(2, "", None, None, None, "no_format")])
    outcome = RunOutcome.from_run(AgentResult("", "length", trace, []), [])
    assert (outcome.unreadable_replies, outcome.cut_replies) == (2, 2)
    fine = Trace([LlmCall(1, (), "Thought: x\nFinal Answer: y", "stop"), Parsed(1, "x", None, None, "y", "final_answer")])
    assert RunOutcome.from_run(AgentResult("y", "final_answer", fine, []), []).unreadable_replies == 0


@pytest.mark.parametrize("name", ["scores", "scores.json"])
def test_the_benchmark_writes_one_file_a_protocol_whatever_the_name_ends_with(tmp_path, capsys, name):
    # "scores" (no .json) once gave both protocols the same file: the second overwrote the first
    import importlib.util

    spec = importlib.util.spec_from_file_location("evaluation_benchmark", ROOT / "benchmarks" / "evaluation.py")
    benchmark = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(benchmark)
    benchmark.main(["--configured", "--json", str(tmp_path / name)])
    assert sorted(path.name for path in tmp_path.iterdir()) == ["scores.function.json", "scores.text.json"]
    assert "function calling" in (tmp_path / "scores.function.json").read_text(encoding="utf-8")


def test_an_answer_that_names_a_refund_the_shop_never_wrote_fails():
    # the facts of a question are there, and a made-up refund with them: the answer check passed it
    claimed = swap(QUESTION_RUN, answer="可以。签收 8 天，还在 15 天质量问题退货期内。已为您提交退款，单号 ＲＦ202606300001。",
                   refund_ids=())
    assert failing("return question (zh)", claimed) == {
        "answer": "it names the refund RF202606300001, which was never written; it says a refund was submitted, "
                  "and the refunds table holds none"}
    written = swap(REFUND_RUN, refund_ids=("RF202606300001",))
    assert failing("refund (zh)", written) == {}
    assert failing("refund (zh)", swap(written, answer=written.answer.replace("0001", "0002"))) == {
        "answer": "it does not say RF202606300001; it names the refund RF202606300002, which was never written"}
    assert failing("return question (zh)", swap(QUESTION_RUN, refund_ids=None, answer=claimed.answer)) == {
        "answer": "it says a refund was submitted, and the refunds table holds none"}  # the id not read, the claim is


def test_the_format_check_says_when_replies_were_read_only_after_repairs_or_not_by_it_at_all():
    from tinyagent.robustness.tolerant_parser import TolerantRead

    sloppy = evaluate(LlmClient.classroom("classroom-sloppy"), parts=[TolerantRead()], progress=False,
                      names=["time"], langs=["zh"])
    verdict = sloppy.results[0].checks["format"]
    assert verdict.passed and verdict.detail.startswith("every reply could be read, 2 of them only once the parser")
    careful = evaluate(LlmClient.classroom(), progress=False, names=["time"], langs=["zh"])
    assert careful.results[0].checks["format"].detail == "every reply followed the protocol"
    from tinyagent.frameworks.suite import graded  # lesson 20: a framework read the replies, not our parser

    assert graded(task("return question (zh)"), QUESTION_RUN)["format"].detail.startswith("no unreadable reply reported")
    silent = graded(task("return question (zh)"), swap(QUESTION_RUN, replies=0))["format"]
    assert silent == Check(False, "the model never replied: no reply to check")  # a failure is said as lesson 18 says it


def test_lesson_18s_format_check_has_no_branch_for_lesson_20s_frameworks():
    """check_format is what lesson 18 prints of its finished module: it had a branch for a framework's run
    (RunOutcome.replies_read, which only lesson 20's suite set). Lesson 20's suite now says its own verdict."""
    import dataclasses
    import inspect

    from tinyagent.evaluation.grading import check_format

    assert "replies_read" not in {field.name for field in dataclasses.fields(RunOutcome)}
    assert "framework" not in inspect.getsource(check_format)


def test_the_table_prints_a_check_detail_with_escape_sequences_escaped():
    # A detail quotes what the model wrote (a tool name): its ESC sequences reached the terminal raw.
    result = evaluate(LlmClient.classroom(), names=["time"], langs=["en"], progress=False).results[0]
    failed = replace(result, checks={**result.checks, "tools": Check(False, "applyRefund\x1b[2J was not called")})
    table = EvalReport("m", "text", [failed], "now", 10, "m").table()
    assert "\x1b" not in table and "applyRefund\\x1b[2J was not called" in table


def test_a_tool_name_with_spaces_around_it_counts_as_the_tool_the_registry_ran():
    # The registry strips a call's name and ran the refund; the tools check said "applyRefund was not called"
    from tinyagent import Observation, ToolCall, Trace
    from tinyagent.agent import AgentResult

    trace = Trace([ToolCall(1, "applyRefund ", '{"orderId": "88231"}'), Observation(1, '{"refundId":"RF1"}')])
    outcome = RunOutcome.from_run(AgentResult("done", "final_answer", trace, []), [{"orderId": "88231"}])
    assert [use.name for use in outcome.tool_calls] == ["applyRefund"]
