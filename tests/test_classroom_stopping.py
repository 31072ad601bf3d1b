"""The classroom model's part in lesson 10: `classroom-rephrase` (varied actions, no progress), and every
variant answering the stop rules' closing request from what the Observations said, with no tool."""

from __future__ import annotations

import json

import pytest

from tinyagent import Action, LlmClient, NoProgress, ReActAgent, RepeatedAction, StepCap, Stop, fixed_clock
from tinyagent.classroom.behaviour import MODELS, respond
from tinyagent.classroom.conversation import parse_action
from tinyagent.robustness.stop_rules import StopRules, action_key, closing_request, normalize
from tinyagent.shop import Shop, shop_registry

from .test_classroom_behaviour import LOGISTICS_ZH, REFUND_EN, REFUND_ZH, FakeShop, converse

CLOCK = fixed_clock("2026-06-30T19:05:23")


def closing(lang: str, reason: str = "max_steps", n: int = 3) -> dict:
    return {"role": "user", "content": closing_request(Stop(reason, values={"n": n}), lang)}


# -- classroom-rephrase ---------------------------------------------------------------------------------
def test_rephrase_never_repeats_an_action_in_six_rounds_and_never_learns_anything_new():
    shop = FakeShop()
    run = converse(LOGISTICS_ZH, shop.registry(), model="classroom-rephrase", max_rounds=7)
    inputs = [tool_input for _, tool_input in run.actions]
    assert run.tools == ["queryOrder"] * 7
    assert inputs[:6] == ["88231", '"88231"', "`88231`", '{"orderId":"88231"}', "'88231'", "88231"]
    assert "Action Input:\n```\n88231\n```\n" in run.replies[5]  # the fence, read back by the model's own reader
    assert len({action_key("queryOrder", text) for text in inputs[:5]}) == 5  # five different actions ...
    real = shop_registry(Shop(":memory:", clock=CLOCK))  # the shop reads every wording as the same order id
    observations = [real.run(Action("queryOrder", text)) for text in [*inputs[:5], "```\n88231\n```"]]
    assert not any(o.error for o in observations)
    assert len({normalize(o.text) for o in observations}) == 1  # ... and one answer
    assert run.replies[6] == run.replies[0].replace(run.replies[0].splitlines()[0], run.replies[6].splitlines()[0])


def test_rephrase_against_the_real_shop_is_caught_by_no_progress_not_by_repeats():
    llm = LlmClient.classroom("classroom-rephrase")
    repeats_only = ReActAgent(llm, shop_registry(Shop(":memory:", clock=CLOCK)), max_steps=6,
                              parts=[StopRules([RepeatedAction()])]).run(LOGISTICS_ZH)
    assert repeats_only.reason == "max_steps" and len(repeats_only.trace.tool_calls) == 6
    caught = ReActAgent(llm, shop_registry(Shop(":memory:", clock=CLOCK)),
                        parts=[StopRules([RepeatedAction(), NoProgress(3)])]).run(LOGISTICS_ZH)
    assert caught.reason == "no_progress" and len(caught.trace.tool_calls) == 4
    assert "SF1234567890" in caught.answer and "物流轨迹" in caught.answer


def test_rephrase_in_function_calling_repeats_its_call():
    from .test_classroom_behaviour import converse_natively

    replies = converse_natively(LOGISTICS_ZH, FakeShop(), model="classroom-rephrase", max_rounds=3)
    assert [[(c.name, c.arguments) for c in r.tool_calls] for r in replies] == [[("queryOrder", {"order_id": "88231"})]] * 3


# -- the closing request --------------------------------------------------------------------------------
@pytest.mark.parametrize("model", list(MODELS))
def test_every_variant_answers_the_closing_request_without_a_tool(model):
    run = converse(LOGISTICS_ZH, FakeShop().registry(), max_rounds=1)  # the careful first round
    request = run.requests[0]
    request["messages"] += [{"role": "assistant", "content": run.replies[0]},
                            {"role": "user", "content": "Observation: " + FakeShop().query_order("88231")},
                            closing("zh")]
    text = respond({**request, "model": model}).text
    assert parse_action(text) is None and "\nFinal Answer: " in text
    answer = text.split("Final Answer: ", 1)[1]
    assert "SF1234567890" in answer and "还没来得及查询运单 SF1234567890 的物流轨迹" in answer


def test_a_closing_answer_is_whole_when_everything_is_known():
    shop = FakeShop()
    run = converse(LOGISTICS_ZH, shop.registry(), max_rounds=2)
    request = run.requests[-1]
    request["messages"] += [{"role": "assistant", "content": run.replies[-1]},
                            {"role": "user", "content": "Observation: " + shop.query_logistics("SF1234567890")},
                            closing("zh")]
    answer = respond(request).text.split("Final Answer: ", 1)[1]
    assert "快件已由本人签收" in answer and "还没来得及" not in answer


def test_a_closing_answer_in_english_with_nothing_known_says_so():
    request = {"model": "classroom", "messages": [
        {"role": "system", "content": converse(REFUND_EN, FakeShop().registry(), "en", max_rounds=1)
         .requests[0]["messages"][0]["content"]},
        {"role": "user", "content": REFUND_EN}, closing("en", "timeout")]}
    text = respond(request).text
    assert text.startswith("Thought: I stop here as asked")
    assert "did not get to look anything up" in text and "look up order 88231" in text


def test_the_closing_answer_ignores_notes_written_by_the_stop_rules():
    warning = json.dumps({"error": "repeated action ...", "stop_rule": "repeated_action"})
    run = converse(LOGISTICS_ZH, FakeShop().registry(), max_rounds=1)
    request = run.requests[0]
    request["messages"] += [{"role": "assistant", "content": run.replies[0]},
                            {"role": "user", "content": "Observation: " + warning}, closing("zh")]
    answer = respond(request).text.split("Final Answer: ", 1)[1]
    assert "repeated action" not in answer and "还没来得及查到任何信息" in answer


def test_the_refund_stopped_before_applying_says_what_it_checked_and_writes_nothing():
    shop = Shop(":memory:", clock=CLOCK)
    result = ReActAgent(LlmClient.classroom(), shop_registry(shop), parts=[StopRules([StepCap(3)])]).run(REFUND_ZH)
    assert result.reason == "max_steps" and shop.refunds() == []
    assert "2026-06-22 签收" in result.answer and "今天是 2026-06-30" in result.answer
    assert "还没来得及提交退款申请" in result.answer and "RF" not in result.answer


@pytest.mark.parametrize("text", [
    "Please don't call any tools, just tell me about returns.",  # a customer's first message
    "不要调用工具，直接告诉我退货政策。",
])
def test_a_first_message_that_mentions_tools_is_a_request_not_a_closing_call(text):
    system = converse(REFUND_ZH, FakeShop().registry(), max_rounds=1).requests[0]["messages"][0]
    reply = respond({"model": "classroom", "messages": [system, {"role": "user", "content": text}]})
    assert "我停下" not in (reply.text or "") and "I stop here" not in (reply.text or "")


def test_a_closing_request_in_function_calling_plans_with_the_declared_tools_whatever_tool_choice_says():
    # Lesson 09: FunctionCallingAgent's closing call sends its tools with tool_choice "none" (the conversation
    # holds tool calls, and no new call is allowed). The wrap-up calls no tool either way, but it must still
    # know the tools, to name the step it did not get to, not answer as if it had none.
    from tinyagent import FunctionCallingAgent

    result = FunctionCallingAgent(LlmClient.classroom("classroom-loop"), shop_registry(Shop(":memory:", clock=CLOCK)),
                                  parts=[StopRules([RepeatedAction()])]).run(LOGISTICS_ZH)
    assert result.reason == "repeated_action"
    assert "SF1234567890" in result.answer and "还没来得及查询运单 SF1234567890 的物流轨迹" in result.answer
