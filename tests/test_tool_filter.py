"""`ToolFilter` (lesson 13): the tools a task needs are offered, the rest are not, and nothing is guessed."""

from __future__ import annotations

import pytest

from tinyagent import FunctionTool, LlmCall, LlmClient, ReActAgent, ToolRegistry, fixed_clock
from tinyagent.memory.context_budget import BudgetedRequest, ContextBudget
from tinyagent.memory.plain_turns import run_turns
from tinyagent.memory.tool_filter import ToolFilter, ToolHint
from tinyagent.shop import Shop, shop_registry
from tinyagent.shop.long_session import LONG_SESSION
from tinyagent.shop.tasks import SHOP_TASKS
from tinyagent.shop.tool_hints import SHOP_TOOL_HINTS

CLOCK = fixed_clock("2026-06-30T19:05:23")
SHOP_FILTER = ToolFilter(SHOP_TOOL_HINTS)


@pytest.fixture(scope="module")
def llm():
    return LlmClient.classroom()


def registry() -> ToolRegistry:
    return shop_registry(Shop(":memory:", clock=CLOCK))


def echo(name: str, description: str) -> FunctionTool:
    return FunctionTool(name, description, lambda text: text)


TASKS = [*SHOP_TASKS, *(task for task in LONG_SESSION if not task.name.startswith("go ahead"))]


@pytest.mark.parametrize("task", TASKS, ids=[t.name for t in TASKS])
def test_every_tool_the_task_needs_is_offered(llm, task):
    """What the classroom model calls with every tool offered is offered by the filter, from the request alone."""
    needed = [call.name for call in ReActAgent(llm, registry()).run(task.question).trace.tool_calls]
    offered = SHOP_FILTER.select(task.question, registry()).offered
    assert set(needed) <= set(offered), (needed, offered)


def test_a_refund_brings_the_tools_it_is_decided_on():
    selection = SHOP_FILTER.select("please refund order 88231, it is broken", registry())
    assert selection.offered == ("queryOrder", "applyRefund", "searchKnowledge", "getCurrentTime")
    assert selection.why["getCurrentTime"] == "needed by applyRefund"
    assert selection.why["applyRefund"] == "words"


def test_a_time_question_is_offered_the_clock_alone():
    assert SHOP_FILTER.select("What time is it now?", registry()).offered == ("getCurrentTime",)
    assert SHOP_FILTER.select("88232 的快递现在到哪了？", registry()).offered == ("queryOrder", "queryLogistics")


def test_tools_the_conversation_called_stay_offered():
    selection = SHOP_FILTER.select("What time is it now?", registry(), called=["queryLogistics", "noSuchTool"])
    assert selection.offered == ("queryLogistics", "getCurrentTime")
    assert selection.why == {"queryLogistics": "called earlier", "getCurrentTime": "words"}


def test_when_nothing_matches_every_tool_is_offered():
    selection = SHOP_FILTER.select("Hello, is anyone there?", registry())
    assert selection.offered == tuple(registry().names)
    assert set(selection.why.values()) == {"nothing matched"}


def test_numbers_in_a_request_match_no_example_in_a_description():
    # queryOrder's and applyRefund's descriptions show 88231 as an example; a bare order number matches neither.
    assert set(ToolFilter().scores("88231", registry()).values()) == {0}


def test_words_of_the_description_rank_without_hints_and_rare_words_weigh_more():
    tools = ToolRegistry([
        echo("convertCurrency", "Convert an amount of money between currencies. Input: amount and currency."),
        echo("getWeather", "The weather forecast for a city. Input: the city."),
        echo("lookUpStore", "Find a store in a city and its opening hours. Input: the city."),
    ])
    plain = ToolFilter(max_tools=1)
    assert plain.select("What is the weather forecast in Hangzhou?", tools).offered == ("getWeather",)
    assert plain.select("convert 100 dollars to yuan, what currency rate?", tools).offered == ("convertCurrency",)
    scores = plain.scores("forecast city", tools)
    assert scores["getWeather"] > scores["lookUpStore"] > 0  # "city" is in two descriptions, "forecast" in one


def test_max_tools_caps_the_words_and_needs_and_always_come_on_top():
    hints = {"b": ToolHint(words=("beta",), needs=("c",)), "c": ToolHint(needs=("d",))}
    tools = ToolRegistry([echo(n, f"tool {n}") for n in "abcde"])
    chooser = ToolFilter(hints, max_tools=1, always=("e",))
    selection = chooser.select("beta please", tools)
    assert selection.offered == ("b", "c", "d", "e")  # needs follow needs
    assert selection.why == {"b": "words", "c": "needed by b", "d": "needed by c", "e": "always"}


def test_max_tools_must_be_a_positive_whole_number():
    for bad in (0, -1, 1.5, True, "3"):
        with pytest.raises(ValueError, match="max_tools"):
            ToolFilter(max_tools=bad)


def test_the_rebuilt_prompt_lists_only_the_offered_tools(llm):
    budget = ContextBudget(100_000, tool_filter=SHOP_FILTER)
    result = ReActAgent(llm, registry(), parts=[BudgetedRequest(budget)]).run("What time is it now?")
    sent_prompt = result.trace.of_type(LlmCall)[0].messages[0]["content"]
    assert "getCurrentTime" in sent_prompt
    assert not any(name in sent_prompt for name in ("queryOrder", "queryLogistics", "applyRefund", "searchKnowledge"))
    assert "queryOrder" in result.messages[0]["content"]  # the live list keeps the prompt with every tool
    assert result.answer == "It is 19:05 on Tuesday, 30 June 2026."


def test_filtered_tools_give_the_same_answers_over_the_long_session(llm):
    questions = [task.question for task in LONG_SESSION]
    plain = run_turns(ReActAgent(llm, registry()), questions)
    budget = ContextBudget(100_000, tool_filter=SHOP_FILTER)  # no folding needed: only the tools change
    filtered = run_turns(ReActAgent(llm, registry(), parts=[BudgetedRequest(budget)]), questions)
    assert [r.answer for r in filtered] == [r.answer for r in plain]
    assert all(task.answered(r.answer) for task, r in zip(LONG_SESSION, filtered))
    names = registry().names
    offered = [sum(f"{name} -" in call.messages[0]["content"] for name in names)
               for result in filtered for call in result.trace.of_type(LlmCall)]
    # "Hello" gets every tool, "What time is it now?" (turn 3) what turn 2 called and the clock; with the whole
    # conversation sent, every tool called once stays, so later turns get all five.
    assert offered[:6] == [5, 2, 2, 2, 3, 3]  # one request in turn 1, three in turn 2, two in turn 3
    assert max(offered) == len(names) and min(offered) == 2


def test_words_alone_miss_what_a_refund_needs_and_the_model_refuses_to_guess(llm):
    question = LONG_SESSION[3].question  # the refund: "... will not go back to its dock any more, please refund it."
    words_only = ToolFilter()
    assert words_only.select(question, registry()).offered == ("applyRefund",)
    shop = Shop(":memory:", clock=CLOCK)
    result = ReActAgent(llm, shop_registry(shop), parts=[BudgetedRequest(ContextBudget(100_000, tool_filter=words_only))]
                        ).run(question)
    assert result.trace.tool_calls == [] and shop.refunds() == []
    assert result.answer.startswith("Sorry, I cannot look up orders right now, so I cannot handle a refund")
    with_hints = ReActAgent(llm, registry(), parts=[BudgetedRequest(ContextBudget(100_000, tool_filter=SHOP_FILTER))])
    assert "RF202606300001" in with_hints.run(question).answer
    # With the order tool but no clock, it looks the order up, then says it cannot tell the date, and stops there.
    order_too = ToolFilter({"applyRefund": ToolHint(needs=("queryOrder",))})
    result = ReActAgent(llm, shop_registry(shop), parts=[BudgetedRequest(ContextBudget(100_000, tool_filter=order_too))]
                        ).run(question)
    assert [call.name for call in result.trace.tool_calls] == ["queryOrder"] and shop.refunds() == []
    assert "cannot establish today's date" in result.trace.of_type(LlmCall)[-1].text


def test_always_must_be_tool_names_not_one_string():
    # tuple("applyRefund") is its letters: the tool would never be offered always.
    with pytest.raises(TypeError, match="not one string"):
        ToolFilter(always="applyRefund")
    assert ToolFilter(always=["applyRefund"]).select("Hello", registry()).offered == ("applyRefund",)


def test_a_blank_hint_word_is_refused():
    # "" is in every request: a blank word would offer its tool for anything.
    for blank in ("", "   "):
        with pytest.raises(ValueError, match="empty or blank"):
            ToolHint(words=("refund", blank))
    with pytest.raises(TypeError, match="not one string"):
        ToolHint(words="refund")
    assert ToolHint(words=["refund"], needs=["queryOrder"]) == ToolHint(("refund",), ("queryOrder",))
