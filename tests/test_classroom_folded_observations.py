"""The classroom model reads a folded Observation (lesson 13's context budget) like a whole one: the fold's
mark goes, its JSON is read, and the facts the fold kept (ids, numbers, dates, short values) decide."""

from __future__ import annotations

import json

from tinyagent import Action, build_system_prompt, fixed_clock
from tinyagent.classroom.behaviour import respond
from tinyagent.classroom.conversation import parse_action, read_conversation
from tinyagent.memory.observation_folding import FOLD_MARK, fold_observation, is_folded
from tinyagent.shop import Shop, shop_registry

CLOCK = fixed_clock("2026-06-30T19:05:23")


def converse_folding(question: str, lang: str = "en", fold=fold_observation):
    """Drive the model as the agent does, folding every Observation before the model reads it, even the
    latest one (harsher than the budget, which keeps the latest whole)."""
    shop = Shop(":memory:", clock=CLOCK)
    tools = shop_registry(shop)
    request = {"model": "classroom", "messages": [
        {"role": "system", "content": build_system_prompt(tools, lang)}, {"role": "user", "content": question}]}
    folded = 0
    for _ in range(8):
        text = respond(request).text.split("Observation:")[0]
        action = parse_action(text)
        if action is None:
            return text.split("Final Answer:", 1)[-1].strip(), shop, folded
        observation = fold(tools.execute(Action(*action)))
        folded += is_folded(observation)
        request["messages"] += [{"role": "assistant", "content": text},
                                {"role": "user", "content": f"Observation: {observation}"}]
    raise AssertionError("no answer in 8 rounds")


def test_a_policy_answer_comes_from_a_folded_search_result():
    answer, _, folded = converse_folding("What are your rules for no-reason returns?")
    assert folded == 1
    assert answer.startswith('According to our policy "七天无理由退货政策": 签收次日起 7 天内')
    assert "folded from" not in answer and "{" not in answer


def test_a_refund_is_decided_on_folded_observations():
    answer, shop, folded = converse_folding(
        "My robot vacuum from order 88231 will not go back to its dock any more, please refund it.")
    assert folded == 1  # the policy search: the shop's other results are short and stay whole
    assert "RF202606300001" in answer and "15" in answer
    assert [r["orderId"] for r in shop.refunds()] == ["88231"]


def test_a_folded_order_keeps_the_dates_the_refund_decision_needs():
    """Every Observation marked as folded (as a fold of a longer result would be): the dates are still read."""
    def mark(text: str) -> str:
        return FOLD_MARK.format(chars=len(text) + 100) + text

    answer, shop, _ = converse_folding("88234 我买错了，想退，可以吗？", lang="zh", fold=mark)
    assert answer.startswith("可以。订单 88234") and "7 天无理由退货期内" in answer
    assert shop.refunds() == []  # a question is answered, not acted on


def test_a_folded_tool_message_is_read_in_function_calling():
    tools = shop_registry(Shop(":memory:", clock=CLOCK))
    search = tools.execute(Action("searchKnowledge", "退货 政策"))
    call = {"id": "call_1", "type": "function", "function": {"name": "searchKnowledge", "arguments": '{"query":"invoice"}'}}
    conversation = read_conversation({"model": "classroom", "tools": [
        {"type": "function", "function": {"name": "searchKnowledge", "parameters": {"type": "object"}}}],
        "messages": [
            {"role": "user", "content": "What's your invoice policy?"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": fold_observation(search)},
        ]})
    step = conversation.steps[0]
    assert is_folded(fold_observation(search)) and not is_folded(step.observation)
    assert json.loads(step.observation)["results"][0]["title"] == json.loads(search)["results"][0]["title"]
