"""Bad tool inputs to lessons 07, 15, 17 and 21's tools: each is a short error Observation in the lesson's words,
never a Python exception's own wording, and nothing is sent that the input did not mean."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from tinyagent.architectures.reminder_loop import ReminderStore, forecast_tool, message_tool
from tinyagent.architectures.skills import shop_skills
from tinyagent.registry import Action, ToolRegistry
from tinyagent.shop import Shop, shop_registry
from tinyagent.toolkit.action_input import read_arguments
from tinyagent.toolkit.calculator import calculator_tool
from tinyagent.toolkit.validation import Problem
from tinyagent.toolkit.weather_tool import weather_tool

from .conftest import tool_error_of

NOWHERE = "http://127.0.0.1:9"  # nothing listens: a request that left would be "unreachable"


@pytest.fixture
def store():
    with ReminderStore() as store:
        yield store


# -- 1. a one-text tool's input that starts a JSON object and breaks it -------------------------------------------
@pytest.mark.parametrize(("text", "where"), [
    ('{"text": "明天北京有雷阵雨，记得带伞",}', "line 1, column 26"),  # a trailing comma
    ('{"text": NaN}', "NaN is not JSON"),
    ("{'text': '记得带伞'}", "line 1, column 2"),  # Python's quotes
    ('{"text": "明天北京有雷阵雨，记', "line 1, column 10"),  # cut off
])
def test_a_broken_json_object_for_a_one_text_tool_is_refused_and_nothing_is_sent(store, text, where):
    message = tool_error_of(ToolRegistry([message_tool(store)]).run(Action("sendWechat", text)))
    assert message.startswith("invalid input for sendWechat: the input is not valid JSON: ") and where in message
    assert store.outbox() == []


@pytest.mark.parametrize("text", ["明天北京有雷阵雨，记得带伞", "{会议} 明天 15:00，记得带伞"])
def test_plain_text_and_a_brace_that_starts_no_object_are_still_the_message(store, text):
    assert not ToolRegistry([message_tool(store)]).run(Action("sendWechat", text)).error
    assert [message["text"] for message in store.outbox()] == [text]


# -- 2. JSON that Python refuses for its own reasons --------------------------------------------------------------
TWO = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}}


@pytest.mark.parametrize(("text", "says"), [
    ('{"a": ' + "1" * 5000 + "}", "a number in it is too long (more than 4300 digits)"),
    ('{"a": ' + "[" * 100_000, "it is nested too deeply to read"),
])
@pytest.mark.parametrize("schema", [TWO, {"type": "object", "properties": {"a": {"type": "string"}}}])
def test_too_long_a_number_or_too_deep_a_nesting_is_said_in_the_lessons_words(text, says, schema):
    problem = read_arguments(text, schema)
    assert isinstance(problem, Problem) and problem.message == f"the input is not valid JSON: {says}"


# -- 3 and 4. the calculator's powers and sizes -------------------------------------------------------------------
def calculate(expression: str) -> dict:
    result = ToolRegistry([calculator_tool()]).run(Action("calculator", expression))
    return json.loads(result.text) | {"failed": result.error}


@pytest.mark.parametrize("expression", ["0**-0.5", "0.0**-1.5", "0 ** -1"])
def test_zero_to_a_negative_power_is_a_division_by_zero_whatever_the_power(expression):
    message = tool_error_of(ToolRegistry([calculator_tool()]).run(Action("calculator", expression)))
    assert message == "calculator: division by zero (0 to a negative power)"


@pytest.mark.parametrize(("expression", "exact"), [
    ("1.0001**365", Fraction("1.0001") ** 365),  # about 1.037, an exact fraction of some 4,850 bits
    ("1999*1.0005**365", 1999 * Fraction("1.0005") ** 365),
    ("1.001**1000", Fraction("1.001") ** 1000),
    ("9.5**1000", Fraction("9.5") ** 1000),  # 978 digits: within the lesson's "about 1,200"
])
def test_a_result_of_an_ordinary_size_is_computed_and_said_to_be_rounded(expression, exact):
    answer = calculate(expression)
    assert not answer["failed"] and answer["exact"] is False, answer
    assert abs(Fraction(str(answer["result"])) / exact - 1) < 1e-15  # a float, or 17 digits as text past a float


def test_the_size_limit_counts_the_results_digits():
    assert calculate("10**1000 * 10**203")["result"] == 10**1203  # 1,204 digits, exact
    assert calculate("10**1000 * 10**205")["error"] == ("calculator: the result would be too large (more than about "
                                                        "1204 digits)")


def test_a_tiny_result_is_said_to_be_too_small_not_too_large():
    answer = calculate("10**-1000*10**-1000")
    assert answer["failed"] and "too small" in answer["error"] and "too large" not in answer["error"], answer
    within = calculate("10**-1000 * 10**-200")  # 1,199 zeros after the point: computed, shown as text (a float's 0.0)
    assert not within["failed"] and within["result"] == "1E-1200" and "exact" not in within  # only false is said


# -- 5. a lone surrogate in the weather tools' city ---------------------------------------------------------------
@pytest.mark.parametrize(("tool", "text"), [(weather_tool(NOWHERE), '{"city": "北京\\ud800"}'),
                                            (forecast_tool(NOWHERE), '{"city": "北京\\ud800", "date": "2026-07-01"}')])
def test_a_city_with_a_lone_surrogate_is_input_that_cannot_be_sent_not_an_unreachable_service(tool, text):
    result = ToolRegistry([tool]).run(Action(tool.name, text))  # the JSON escape \ud800 reads as a lone surrogate
    message = tool_error_of(result)
    data = json.loads(result.text)
    assert message == (f"{tool.name}: the input could not be sent to the weather API: its text holds an invalid "
                       "character (a lone surrogate)")
    assert data["kind"] == "bad_input" and data["retryable"] is False


# -- 6. lesson 17's skill registry and an Action without a name ---------------------------------------------------
@pytest.mark.parametrize("name", [5, None, ["queryOrder"]])
def test_a_skill_registry_answers_a_nameless_action_as_the_base_registry_does(name):
    with Shop(":memory:") as shop:
        registry = shop_registry(shop)
        scoped = shop_skills()["logistics"].scope(registry)
        assert scoped.execute(Action(name, "x")) == registry.execute(Action(name, "x"))
        assert json.loads(scoped.execute(Action(name, "x"))) == {"error": "no tool name was found in the reply"}
