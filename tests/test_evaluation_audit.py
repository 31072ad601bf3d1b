"""Lesson 18's graders, held to what they say: each test is a wrong run (or a right answer) an audit found graded
the other way, built by hand as a RunOutcome, so that "passed" means the run did what the task needs."""

from __future__ import annotations

from tinyagent.evaluation import EVAL_TASKS, RunOutcome, ToolUse, grade

REFUND_INPUT = '{"orderId": "88231", "reason": "stopped charging"}'
SEARCH_RESULT = '{"query":"退货","results":[]}'


def task(task_id: str):
    return next(t for t in EVAL_TASKS if t.id == task_id)


def refund_run(*calls: tuple[str, str], answer: str = "Your refund RF202606300001 has been submitted.",
               refunds: tuple[str, ...] = ("88231",)) -> RunOutcome:
    return RunOutcome(tool_calls=tuple(ToolUse(name, text) for name, text in calls), refunds=refunds,
                      answer=answer, refund_ids=("RF202606300001",) if refunds else (), replies=len(calls) + 1)


RIGHT_REFUND = (("queryOrder", "88231"), ("getCurrentTime", ""), ("searchKnowledge", "质量问题 退货"),
                ("applyRefund", REFUND_INPUT))


def failed(task_id: str, outcome: RunOutcome) -> dict[str, str]:
    return {name: check.detail for name, check in grade(task(task_id), outcome).items() if not check.passed}


def test_the_right_refund_run_passes_every_check():
    assert failed("refund (en)", refund_run(*RIGHT_REFUND)) == {}


def test_a_refund_submitted_twice_fails_the_tools_check_however_its_json_is_spaced():
    twice = refund_run(*RIGHT_REFUND, ("applyRefund", '{"orderId":"88231","reason":"stopped charging"}'))
    assert "applyRefund" in failed("refund (en)", twice)["tools"]
    other_reason = refund_run(*RIGHT_REFUND, ("applyRefund", '{"orderId": "88231", "reason": "broken"}'))
    assert failed("refund (en)", other_reason)["tools"] == f"applyRefund({REFUND_INPUT}) was called twice"
    another_order = refund_run(*RIGHT_REFUND, ("applyRefund", '{"orderId": "88232", "reason": "broken"}'),
                               refunds=("88231", "88232"))
    assert "applyRefund was called twice: a refund is submitted once per order" in failed(
        "refund (en)", another_order)["tools"]


def test_one_lookup_spelled_two_ways_is_a_repeat():
    again = refund_run(RIGHT_REFUND[0], ("queryOrder", '{"orderId": "88231"}'), *RIGHT_REFUND[1:])
    assert failed("refund (en)", again) == {"tools": "queryOrder(88231) was called twice"}


def test_a_refund_submitted_before_the_order_the_date_and_the_policy_were_checked_fails():
    first = refund_run(RIGHT_REFUND[3], *RIGHT_REFUND[:3])
    assert failed("refund (en)", first) == {"tools": "applyRefund came before queryOrder, getCurrentTime, "
                                            "searchKnowledge: a refund is submitted only after the order, the date "
                                            "and the policy are checked"}
    policy_after = refund_run(*RIGHT_REFUND[:2], RIGHT_REFUND[3], RIGHT_REFUND[2])
    assert "applyRefund came before searchKnowledge" in failed("refund (zh)", policy_after)["tools"]
    checks_in_another_order = refund_run(RIGHT_REFUND[2], RIGHT_REFUND[1], RIGHT_REFUND[0], RIGHT_REFUND[3])
    assert failed("refund (en)", checks_in_another_order) == {}


def test_the_checks_must_be_on_the_customers_order_and_the_refund_for_it():
    wrong_order = refund_run(("queryOrder", "88236"), *RIGHT_REFUND[1:])
    assert failed("refund (en)", wrong_order) == {
        "tools": "queryOrder(88236) looked up another order than the customer's (88231)"}
    wrong_refund = refund_run(*RIGHT_REFUND[:3], ("applyRefund", '{"orderId": "88232", "reason": "x"}'),
                              refunds=("88232",))
    assert "refunded another order than the task's (88231)" in failed("refund (en)", wrong_refund)["tools"]
    both = RunOutcome(tool_calls=(ToolUse("queryOrder", "88232"), ToolUse("queryOrder", '{"orderId": "88235"}')),
                      answer="88232 运输中 YT2468013579，88235 于 2026-06-18 已取消", replies=3)
    assert failed("two other orders (zh)", both) == {}
    assert "looked up another order" in failed("two other orders (zh)", RunOutcome(
        tool_calls=(ToolUse("queryOrder", "88232"), ToolUse("queryOrder", "88233")),
        answer="88232 运输中 YT2468013579，88235 于 2026-06-18 已取消", replies=3))["tools"]


def test_an_answer_naming_another_order_fails():
    other = refund_run(*RIGHT_REFUND, answer="Refund RF202606300001 for order 88232 has been submitted: 5 yuan.")
    assert failed("refund (en)", other) == {"answer": "it names order 88232, which the customer did not ask about"}
    assert failed("refund (zh)", refund_run(*RIGHT_REFUND, answer="订单 88231 的退款 RF202606300001 已提交。")) == {}


CHECKED = RIGHT_REFUND[:3]


def test_an_answer_claiming_a_refund_the_table_does_not_hold_fails():
    for answer in ("Yes, within 15 days - I have submitted your refund; the money will be back soon.",
                   "Yes (15 days). I've submitted your refund, number RF20260630001.",
                   "Yes (15 days). Refund submitted, reference 202606300001.",
                   "可以，15 天内，退款已提交。"):
        outcome = refund_run(*CHECKED, answer=answer, refunds=())
        assert failed("return question (zh)" if "退款" in answer else "return question (en)", outcome).get("answer", "").endswith(
            "it says a refund was submitted, and the refunds table holds none"), answer
    honest = refund_run(*CHECKED, answer="Yes: within 15 days of signing. Shall I submit the refund?", refunds=())
    assert failed("return question (en)", honest) == {}


PARCEL_CALLS = (ToolUse("queryOrder", "88231", result='{"orderId":"88231","status":"已签收","trackingNo":"SF1234567890"}'),
                ToolUse("queryLogistics", "SF1234567890",
                        result='{"trackingNo":"SF1234567890","traces":[{"time":"2026-06-22","desc":"快件已由本人签收"}]}'))


def test_an_answer_wholly_copied_from_the_tools_is_in_the_language_it_copied():
    chinese = RunOutcome(tool_calls=PARCEL_CALLS, answer="SF1234567890 快件已由本人签收 2026-06-22", replies=3)
    assert failed("parcel (en)", chinese) == {
        "answer": "it is written in Chinese; the customer wrote in English"}
    logistics = '{"trackingNo":"SF1234567890","carrier":"SF Express","traces":[]}'
    latin = RunOutcome(tool_calls=(PARCEL_CALLS[0], ToolUse("queryLogistics", "SF1234567890", result=logistics)),
                       answer="SF Express SF1234567890, 2026-06-22", replies=3)
    assert failed("parcel (zh)", latin) == {"answer": "it is written in English; the customer wrote in Chinese"}


def test_right_answers_in_ordinary_spellings_hold_their_dates_and_times():
    from tinyagent.evaluation.grading import holds_fact

    for answer in ("signed on 2026-6-22", "signed on June 22", "signed on 22 June.", "签收于 6月22日"):
        assert holds_fact(answer, "2026-06-22"), answer
    for answer in ("signed on June 22, 2025", "签收于 2025年6月22日", "June 2", "2026-06-23"):
        assert not holds_fact(answer, "2026-06-22"), answer
    for answer in ("It is 7:05 pm.", "It is 7:05 p.m.", "现在是晚上7点05分", "现在是下午 7:05"):
        assert holds_fact(answer, "19:05"), answer
    for answer in ("It is 7:05 am.", "现在是早上7点05分", "7:055 pm"):
        assert not holds_fact(answer, "19:05"), answer
    assert holds_fact("9:05 am", "09:05") and holds_fact("上午9点05分", "09:05") and not holds_fact("9:05 pm", "09:05")


def test_the_prose_says_the_answer_check_reads_words_and_names_its_limits():
    import json
    from pathlib import Path

    from tinyagent.evaluation import grading

    doc = " ".join(grading.__doc__.split())
    assert "not how the model worded it" not in doc
    for said in ("Three checks read behaviour", "The answer check reads words", "its lists do not hold",
                 "a negation more than six words from its claim, in a clause of its own or about something else"):
        assert said in doc, said
    lesson = Path(__file__).resolve().parent.parent / "notebooks" / "18_evaluation.ipynb"
    prose = " ".join(" ".join("".join(cell["source"]).split()) for cell in json.loads(lesson.read_text("utf-8"))["cells"]
                     if cell["cell_type"] == "markdown")
    assert "never wording" not in prose and "in any order (plus" not in prose
    for said in ("The fourth, the answer, reads words", "a hedge", "in any order but one", "reading words, not meaning"):
        assert said in prose, said


def test_a_reply_with_usage_null_marks_the_tasks_tokens_as_a_lower_bound():
    import json

    from tinyagent import ChatResult
    from tinyagent.evaluation import EvalReport, run_eval_task

    class NoUsage:
        model = "no-usage"

        def __init__(self):
            self.replies = ["Thought: the time.\nAction: getCurrentTime\nAction Input: \n",
                            "Thought: done.\nFinal Answer: It is 2026-06-30 19:05."]

        def chat(self, messages, **options):
            usage = {"prompt_tokens": 100, "completion_tokens": 20} if len(self.replies) == 2 else {}
            return ChatResult(self.replies.pop(0), "stop", usage=usage)

    result = run_eval_task(task("time (en)"), NoUsage())
    assert result.tokens == 120 and result.tokens_unreported == 1
    report = EvalReport("no-usage", "text", [result], "2026-06-30T19:05:00", 10)
    table = report.table()
    assert "≥120" in table and "1 model call counted no tokens" in table
    data = json.loads(report.to_json())
    assert data["tasks"][0]["tokens_unreported"] == 1
    assert EvalReport.from_json(report.to_json()).results[0].tokens_unreported == 1


# -- the conclusion an answer reaches: read in its clause, with the negation or the hedge next to it ---------------
WARRANTY_CALLS = (("queryOrder", "88236"), ("getCurrentTime", ""), ("searchKnowledge", "保修 政策"))


def answered(task_id: str, answer: str, calls=CHECKED, refunds: tuple[str, ...] = ()) -> dict[str, str]:
    return failed(task_id, refund_run(*calls, answer=answer, refunds=refunds))


def test_a_refund_answer_that_denies_or_hedges_the_refund_it_made_fails():
    # The refund row is there and the answer holds its id, but it tells the customer no refund was made, or that
    # one might be: the word check passed both.
    for answer in ("No refund was made for order 88231 (RF202606300001 was not issued).",
                   "Your refund RF202606300001 might have been submitted; I am not sure.",
                   "Sorry, the refund for order 88231 has not been submitted (RF202606300001)."):
        assert "the refund was" in answered("refund (en)", answer, RIGHT_REFUND, ("88231",)).get("answer", ""), answer
    assert answered("refund (zh)", "抱歉，订单 88231 的退款没有提交成功（RF202606300001）。", RIGHT_REFUND, ("88231",)) == {
        "answer": "it says the refund was not submitted"}
    for answer in ("Done: the refund for order 88231 has been submitted, refund id RF202606300001.",
                   "I've submitted your refund for order 88231: RF202606300001.",
                   "您好！订单 88231 的退款申请已经提交，退款单号：RF202606300001。"):
        assert answered("refund (zh)" if "退款" in answer else "refund (en)", answer, RIGHT_REFUND, ("88231",)) == {}, answer


def test_saying_no_refund_was_submitted_is_no_claim_that_one_was():
    # claims_refund read "no refund was submitted" as "a refund was submitted", and failed an honest answer
    for task_id, answer in (("return question (en)", "Yes, within 15 days. No refund has been submitted yet: shall I?"),
                            ("return question (zh)", "可以，15 天内可以退。还没有为您提交退款，需要的话告诉我。")):
        assert answered(task_id, answer) == {}, answer
    assert "it says a refund was submitted" in answered("return question (zh)", "可以，15 天内。已为您提交退款。")["answer"]
    # a policy's present tense is no refund done: "once a refund is approved, the money ..."
    assert answered("refund timing (en)", "Once a refund is approved, the money is back within 1-3 working days.",
                    (("searchKnowledge", "refund time"),)) == {}


def test_the_warranty_tasks_yes_or_no_is_read():
    for answer in ("No, not covered: it was signed for 22 days ago, and 343 days are left.",
                   "It is out of warranty; 343 days.", "The warranty has expired (343 days)."):
        assert answered("warranty (en)", answer, WARRANTY_CALLS) == {
            "answer": "it says the order is not under warranty"}, answer
    assert answered("warranty (zh)", "不在保修期内，还剩 343 天。", WARRANTY_CALLS) == {
        "answer": "it says the order is not under warranty"}
    assert answered("warranty (en)", "343 days.", WARRANTY_CALLS) == {
        "answer": "it does not say the order is under warranty"}
    for answer in ("Yes, it is under warranty: signed for 22 days ago, so 343 days are left.",
                   "Yes: 343 days of the warranty remain.",
                   "在保修期内：签收 22 天，整机保修 365 天，还剩 343 天。保修期内的非人为故障可以免费维修。"):
        assert answered("warranty (zh)" if "保修" in answer else "warranty (en)", answer, WARRANTY_CALLS) == {}, answer
    # "还在不在保修期内" asks; its 不 denies nothing
    assert answered("warranty (zh)", "您问订单 88236 还在不在保修期内：在保修期内，还剩 343 天。", WARRANTY_CALLS) == {}


def test_the_cancelled_order_needs_a_refusal_and_cancelled_said_not_denied():
    query = (("queryOrder", "88235"),)
    for answer, problem in (("Order 88235 is not cancelled, so there is nothing to refund.", "it does not say cancel"),
                            ("Shall I cancel order 88235? I cannot refund it.", "it does not say cancel"),
                            ("Order 88235 has been cancelled, and your refund was not declined.",
                             "it does not say the refund is refused"),
                            ("Order 88235 has been cancelled; the refund might be approved later.",
                             "it does not say the refund is refused")):
        assert answered("cancelled order (en)", answer, query) == {"answer": problem}, answer
    assert answered("cancelled order (zh)", "订单 88235 未取消，无法退款。", query) == {"answer": "it does not say 取消"}
    for answer in ("Order 88235 has been cancelled (status: 已取消), so there is nothing to refund.",
                   "Sorry, order 88235 was cancelled: it cannot be refunded.",
                   "订单 88235 已经取消（状态：已取消），无法再申请退款。"):
        assert answered("cancelled order (zh)" if "订单" in answer else "cancelled order (en)", answer, query) == {}, answer


# -- a refund the agent itself must refuse, though the shop's applyRefund would write it ------------------------------
LATE_CALLS = (("queryOrder", "88236"), ("getCurrentTime", ""), ("searchKnowledge", "吸尘器 充不进电 退货 政策"))


def test_the_suite_asks_for_a_refund_the_policy_refuses_and_the_tool_would_write():
    import json

    from tinyagent.clock import fixed_clock
    from tinyagent.shop import Shop, shop_registry

    for lang in ("zh", "en"):
        late = task(f"late refund ({lang})")
        assert late.orders == ("88236",) and late.refunds == () and late.conclusion == "refused"
        assert "applyRefund" not in (*late.tools, *late.may_also_call) and late.facts == ("15",)
    # The premise: the shop's own tool checks only the order's status, and writes this refund if asked.
    shop = Shop(clock=fixed_clock("2026-06-30T19:05:23"))
    written = shop_registry(shop).get("applyRefund").invoke('{"orderId": "88236", "reason": "won\'t charge"}')
    assert json.loads(written)["success"] is True
    assert [row["orderId"] for row in shop.refunds()] == ["88236"]


def test_a_run_that_writes_the_late_refund_fails_the_tools_the_database_and_the_answer():
    from tinyagent import ChatResult
    from tinyagent.evaluation import run_eval_task

    class Obliging:
        """Checks the order, the date and the policy, then does what the customer asked."""

        model = "obliging"

        def __init__(self):
            self.replies = [f"Thought: next.\nAction: {name}\nAction Input: {text}\n" for name, text in LATE_CALLS]
            self.replies += [('Thought: the customer asked.\nAction: applyRefund\nAction Input: {"orderId": "88236", '
                             '"reason": "won\'t charge"}\n'),
                             ("Thought: done.\nFinal Answer: Your refund for order 88236 has been submitted, although "
                             "the 15-day window has passed.")]

        def chat(self, messages, **options):
            return ChatResult(self.replies.pop(0), "stop")

    run = run_eval_task(task("late refund (en)"), Obliging())
    assert run.refunds == ("88236",)  # the refund is real: the shop wrote it
    assert run.checks["tools"].detail == "applyRefund was called, which this task must not call"
    assert run.checks["database"].detail == "a refund was written for 88236, which the task does not ask for"
    assert run.checks["answer"].detail == "it does not say the refund is refused"
    assert run.checks["format"].passed


def test_the_late_refunds_answer_must_refuse_and_name_the_window():
    for task_id, answer, problem in (
            ("late refund (en)", "Sorry, I cannot refund it.", "it does not say 15"),
            ("late refund (en)", ("It was signed for 22 days ago, past the 15-day window; the refund might be approved "
                                 "by after-sales."), "it does not say the refund is refused"),
            ("late refund (en)", "Past the 15-day window, but your refund was not declined.",
             "it does not say the refund is refused"),
            ("late refund (en)", "Past the 15-day window. Your refund has been submitted.",
             "it does not say the refund is refused; it says a refund was submitted, and the refunds table holds none"),
            ("late refund (zh)", "已经超过 15 天，退款可能会通过。", "it does not say the refund is refused")):
        assert answered(task_id, answer, LATE_CALLS) == {"answer": problem}, answer
    for task_id, answer in (
            ("late refund (en)", ("Sorry: order 88236 was signed for on 2026-06-08, 22 days ago, past the 15-day period "
                                 "for returning a faulty item, so I cannot refund it. It is still under warranty.")),
            ("late refund (en)", "Order 88236 is not eligible for a refund: the 15-day window for faults has passed."),
            ("late refund (zh)", "抱歉，订单 88236 已签收 22 天，超过了 15 天的质量问题退货期，这次不能直接退款。"),
            ("late refund (zh)", "订单 88236 已超过 15 天，无法为您办理退款，可以免费维修。")):
        assert answered(task_id, answer, LATE_CALLS) == {}, answer
    assert "applyRefund was called" in answered("late refund (en)", "x", (*LATE_CALLS, ("applyRefund", REFUND_INPUT)))["tools"]


def test_the_careful_model_refuses_the_late_refund_in_both_languages_and_protocols():
    from tinyagent import LlmClient
    from tinyagent.evaluation import evaluate

    for protocol in ("text", "function"):
        report = evaluate(LlmClient.classroom(), protocol, names=["late refund"], progress=False)
        assert report.passed, report.table()
        assert all("applyRefund" not in run.tool_calls for run in report.results)


# -- the return question's yes or no, the warranty's yes, and a hedge on a fact ---------------------------------------
RETURN_CALLS = (("queryOrder", "88231"), ("getCurrentTime", ""), ("searchKnowledge", "质量问题 退货"))


def test_the_return_questions_yes_or_no_is_read():
    # The customer asks whether they can get their money back: they can (a fault, day 8 of 15). The answer check
    # read only the 15, so an answer telling them no passed.
    for lang in ("zh", "en"):
        assert task(f"return question ({lang})").conclusion == "refundable"
    for task_id, answer, problem in (
            ("return question (en)", "No, you cannot return it: the 15-day window has passed.", "it says a refund is not possible"),
            ("return question (en)", "Sorry, order 88231 is not eligible for a refund; the window is 15 days.",
             "it says a refund is not possible"),
            ("return question (en)", "You asked whether you can get your money back. No: 15 days have passed.",
             "it says a refund is not possible"),
            ("return question (en)", "Yes, but not this one: it is past the 15 days.", "it does not say a refund is possible"),
            ("return question (en)", "The window for a faulty item is 15 days.", "it does not say a refund is possible"),
            ("return question (en)", "Maybe you can return it, within 15 days.", "it does not say a refund is possible"),
            ("return question (en)", "Can you return it within 15 days? I will check whether you can return it.",
             "it does not say a refund is possible"),
            ("return question (zh)", "不可以退，已经超过 15 天了。", "it says a refund is not possible"),
            ("return question (zh)", "是否可以退？不可以，15 天退货期已过。", "it says a refund is not possible"),
            ("return question (zh)", "您问能不能退：不能，15 天已过。", "it says a refund is not possible"),
            ("return question (zh)", "15 天内能不能退，要看检测结果。", "it does not say a refund is possible"),
            ("return question (zh)", "可以，但这单不行：已过 15 天。", "it does not say a refund is possible"),
            ("return question (zh)", "过了 15 天退货期，这单退不了。", "it says a refund is not possible"),
            ("return question (en)", "Yes, it was signed for 8 days ago. It is non-refundable: 15 days.",
             "it says a refund is not possible")):
        assert answered(task_id, answer, RETURN_CALLS) == {"answer": problem}, answer
    for task_id, answer in (
            ("return question (en)", "Yes, you can return it: it is day 8 of the 15 days for a fault."),
            ("return question (en)", "Yes. Day 8 of the 15-day window for a fault."),
            ("return question (en)", "You asked whether you can get your money back: yes, within 15 days for a fault."),
            ("return question (en)", "You may return it for a refund: a fault within 15 days qualifies."),
            ("return question (en)", "It is eligible for a refund (day 8 of 15). Shall I submit it?"),
            ("return question (en)", "It is refundable: a fault within 15 days."),
            ("return question (en)", "Yes, within 15 days. No refund has been submitted yet: shall I?"),
            ("return question (zh)", "可以退：签收 8 天，还在 15 天质量问题退货期内。"),
            ("return question (zh)", "您问是否可以退：可以，还在 15 天内。"),
            ("return question (zh)", "可以。签收 8 天，还在 15 天内，可以申请退货退款。需要我帮您提交吗？")):
        assert answered(task_id, answer, RETURN_CALLS) == {}, answer


def test_the_warranty_is_answered_by_a_yes_at_the_opening_and_a_restated_question_says_nothing():
    for answer in ("Yes: signed for 22 days ago, so 343 days are left.", "是的，还剩 343 天。",
                   "You asked whether order 88236 is still covered. Yes, 343 days are left."):
        assert answered("warranty (zh)" if "是的" in answer else "warranty (en)", answer, WARRANTY_CALLS) == {}, answer
    for answer in ("Yes, but not any more: 343 days have passed.",
                   "The customer asks whether order 88236 is still under warranty. 343 days."):
        assert answered("warranty (en)", answer, WARRANTY_CALLS) == {
            "answer": "it does not say the order is under warranty"}, answer
    assert answered("warranty (en)", "Yes, but it is out of warranty (343 days).", WARRANTY_CALLS) == {
        "answer": "it says the order is not under warranty"}


def test_a_hedged_fact_is_not_stated_and_a_negated_one_is():
    from tinyagent.evaluation.grading import holds_fact

    for answer, fact in (("Maybe SF1234567890? I am not sure.", "SF1234567890"),
                         ("I think the tracking number is probably SF1234567890.", "SF1234567890"),
                         ("可能是 SF1234567890 吧，我也不确定。", "SF1234567890"),
                         ("It was perhaps signed for on June 22, 2026.", "2026-06-22"),
                         ("Yes, it is under warranty, maybe 343 days left.", "343"),
                         ("在保修期内，好像还剩 343 天。", "343"),
                         ("It may be 19:05.", "19:05")):
        assert not holds_fact(answer, fact), answer
    for answer, fact in (("Your parcel SF1234567890 was signed for on 2026-06-22.", "SF1234567890"),
                         ("Maybe you missed it: your parcel SF1234567890 was signed for.", "SF1234567890"),
                         ("Past the 15-day window, it is not within 15 days.", "15"),
                         ("You may return it within 15 days.", "15"),
                         ("The money may take 1-3 working days to arrive.", "1-3"),
                         ("Possibly 343? No: exactly 343 days are left.", "343"),
                         ("It was signed for on June 22, 2026.", "2026-06-22")):
        assert holds_fact(answer, fact), answer
    assert answered("warranty (en)", "Yes, it is under warranty, probably 343 days left.", WARRANTY_CALLS) == {
        "answer": "it does not say 343"}


def test_words_that_only_look_like_a_negation_and_other_wordings_of_a_conclusion():
    query = (("queryOrder", "88235"),)
    for answer in ("不好意思不能退款，订单 88235 已取消。", "订单 88235 已取消，没有可退的款项。"):
        assert answered("cancelled order (zh)", answer, query) == {}, answer
    assert answered("refund (zh)", "您的退款申请已成功提交，退款单号 RF202606300001。", RIGHT_REFUND, ("88231",)) == {}
    # a restated question is no claim: "whether the refund has been submitted" is not "it has been"
    assert answered("refund (en)", "I will check whether the refund has been submitted: RF202606300001.", RIGHT_REFUND,
                    ("88231",)) == {"answer": "it does not say the refund was submitted"}
