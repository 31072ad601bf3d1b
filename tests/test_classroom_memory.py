"""Lesson 12's classroom model: follow-ups from the conversation, summaries it writes, notes it reads.

docs/classroom-model.md ("Conversations across runs") says what these pin.
"""

from __future__ import annotations

import pytest

from tinyagent import LlmClient, ReActAgent, fixed_clock
from tinyagent.classroom.behaviour import respond
from tinyagent.classroom.conversation import note_lines, read_conversation
from tinyagent.classroom.summaries import summary_request as asks_for_summary
from tinyagent.classroom.variants import MODELS
from tinyagent.memory.session_memory import SUMMARY_PROMPT, summary_request
from tinyagent.memory.session_store import Turn
from tinyagent.shop import Shop, shop_registry

CLOCK = fixed_clock("2026-06-30T19:05:23")


def run(question, history, shop=None):
    agent = ReActAgent(LlmClient.classroom(), shop_registry(shop or Shop(":memory:", clock=CLOCK)))
    return agent.run(question, history=history)


def pair(question, answer="(answered)"):
    return [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]


# --- follow-ups that need the conversation ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("earlier", "question", "tools", "says"),
    [
        ("Hi, my order is 88231.", "Where is it?", ["queryOrder", "queryLogistics"], "SF1234567890"),
        ("Hi, my order is 88231.", "Then refund it.", ["queryOrder", "getCurrentTime", "searchKnowledge"],
         "7-day no-reason return period"),
        ("My order is 88231 and it won't charge any more.", "Then refund it.",
         ["queryOrder", "getCurrentTime", "searchKnowledge", "applyRefund"], "RF202606300001"),
        ("我的订单号是 88232", "到哪了？", ["queryOrder", "queryLogistics"], "YT2468013579"),
        ("我的订单号是 88232", "那帮我退款吧", ["queryOrder", "applyRefund"], "拒收"),
    ],
)
def test_a_follow_up_reads_the_order_from_an_earlier_turn(earlier, question, tools, says):
    result = run(question, pair(earlier))
    assert [c.name for c in result.trace.tool_calls] == tools
    assert says in result.answer


@pytest.mark.parametrize("question", ["Where is it?", "Then refund it.", "到哪了？", "那帮我退款吧"])
def test_without_the_earlier_turn_the_follow_up_asks_for_the_order_number(question):
    result = run(question, [])
    assert result.trace.tool_calls == []
    assert "order number" in result.answer or "订单号" in result.answer


def test_the_most_recent_order_mentioned_wins():
    history = pair("My order is 88231.") + pair("Actually I mean order 88232.")
    result = run("Where is it?", history)
    assert "YT2468013579" in result.answer


# --- notes: system messages after the first ---------------------------------------------------------------


def test_a_note_after_the_system_prompt_serves_a_follow_up():
    note = {"role": "system", "content": "Summary of the earlier conversation (turns 1-3):\nOrders: 88232"}
    result = run("Where is it?", [note])
    assert "YT2468013579" in result.answer


def test_an_earlier_turn_comes_before_a_note():
    note = {"role": "system", "content": "Facts:\n- My usual order is 88231."}
    result = run("Where is it?", [note, *pair("It is order 88232.")])
    assert "YT2468013579" in result.answer


def test_a_fault_in_a_summary_is_quoted_as_the_customers_words():
    shop = Shop(":memory:", clock=CLOCK)
    note = {"role": "system", "content": "Summary:\nOrders: 88231\nFaults reported: It keeps beeping"}
    result = run("Please refund it.", [note], shop)
    assert "RF202606300001" in result.answer
    assert '"It keeps beeping"' in shop.refunds()[0]["reason"]


def test_note_lines_drop_headings_bullets_and_labels():
    note = "What this customer told us:\n- My usual order is 88231.\n\nOrders: 88231; 88232\n* I live in Hangzhou."
    assert note_lines(note) == ["My usual order is 88231.", "88231; 88232", "I live in Hangzhou."]


def test_facts_in_a_note_do_not_change_the_tools_the_model_reads():
    facts = {"role": "system", "content": "Facts:\n- notes: keep them short\n- My usual order is 88231."}
    request = {"model": "classroom", "messages": [
        {"role": "system", "content": ReActAgent(LlmClient.classroom(), shop_registry(Shop())).prompt_for("en")},
        facts, {"role": "user", "content": "Where is it?"}]}
    conv = read_conversation(request)
    assert list(conv.tools) == ["queryOrder", "queryLogistics", "applyRefund", "searchKnowledge", "getCurrentTime"]
    assert conv.order_ids == ["88231"]


# --- summaries ---------------------------------------------------------------------------------------------

TURNS = [
    Turn("Hi, my order is 88231. The vacuum won't charge any more.", "Sorry about that. Order 88231 ..."),
    Turn("Where is it?", "Order 88231 is with 顺丰速运, tracking number SF1234567890, status: 已签收."),
    Turn("I live in Hangzhou. Then refund it.", "Done: refund id RF202606300001."),
]


def summarize(messages, model="classroom"):
    return respond({"model": model, "messages": messages}).text


def test_a_summary_keeps_ids_faults_cities_and_what_was_asked():
    assert summarize(summary_request(TURNS)) == (
        "Orders: 88231\nTracking numbers: SF1234567890\nRefunds: RF202606300001\n"
        "Faults reported: The vacuum won't charge any more\nCities: Hangzhou\n"
        "Asked about: a fault; where the parcel is; a refund"
    )


def test_a_summary_of_a_summary_loses_nothing():
    first = summarize(summary_request(TURNS[:1]))
    second = summarize(summary_request(TURNS[1:2], previous=first))
    assert second == (
        "Orders: 88231\nTracking numbers: SF1234567890\nFaults reported: The vacuum won't charge any more\n"
        "Asked about: a fault; where the parcel is"
    )


def test_a_summary_in_chinese():
    turns = [Turn("订单 88232 到哪了？", "订单 88232 由圆通速递配送，运单号 YT2468013579。"),
             Turn("我住在杭州，扫地机有异响，帮我退款", "已提交退款，退款单号 RF202606300001。")]
    assert summarize(summary_request(turns, lang="zh")) == (
        "订单：88232\n运单号：YT2468013579\n退款单号：RF202606300001\n反映的故障：扫地机有异响\n城市：杭州\n问过：物流；退款"
    )


def test_a_summary_with_nothing_to_keep_says_so():
    assert summarize(summary_request([Turn("Hello!", "Hello! How can I help?")])) == (
        "(Nothing to keep: no order, fault or request.)"
    )


@pytest.mark.parametrize("model", list(MODELS))
def test_every_variant_writes_the_same_summary(model):
    assert summarize(summary_request(TURNS), model) == summarize(summary_request(TURNS))


@pytest.mark.parametrize(
    "instruction",
    ["Please summarize the conversation below.", "Summarise this chat in three lines.", "请总结下面的对话。",
     "概括一下这段对话", "Write a summary of the conversation so far.", SUMMARY_PROMPT["en"], SUMMARY_PROMPT["zh"]],
)
def test_a_summary_request_is_recognised_in_either_language(instruction):
    request = {"model": "classroom", "messages": [{"role": "system", "content": instruction},
                                                  {"role": "user", "content": "User: my order is 88231"}]}
    assert asks_for_summary(request) == (instruction, "User: my order is 88231")
    assert "88231" in respond(request).text


def test_only_a_first_system_message_without_tools_asks_for_a_summary():
    words = {"role": "system", "content": "Summarize the conversation below."}
    user = {"role": "user", "content": "Customer: my order is 88231"}
    assert asks_for_summary({"messages": [user, words]}) is None
    assert asks_for_summary({"messages": [words, user], "tools": [{"type": "function"}]}) is None
    assert asks_for_summary({"messages": [{"role": "system", "content": "You are helpful."}, user]}) is None


def test_a_malformed_summary_request_is_still_refused():
    with pytest.raises(ValueError):
        respond({"model": "classroom", "messages": [{"role": "system", "content": "Summarize the conversation"},
                                                    {"role": "wizard", "content": "x"}]})
