"""Wrong answers to the exercises of lessons 01-09 that a sixth audit with learner-like answers found passing, or
failing with a message that named another mistake: each now fails and says what is wrong, and each lesson's
solution still passes."""

from __future__ import annotations

import difflib
import json
import re

import pytest

from tests.test_exercises import (
    FINAL,
    CarefulRegistry,
    ForgivingQueryOrderTool,
    QueryLogisticsTool,
    QueryOrderTool,
    SuggestingRegistry,
    count_invented_observations,
    failure,
    final_answer_anchored,
    lean_prompt,
    my_parse,
    passes,
    pretended_tools,
    to_json,
    tool_messages_with,
)
from tinyagent import LlmClient, LlmError
from tinyagent.checks import (
    check_anchored_final_answer,
    check_forgiving_query_order,
    check_invented_counter,
    check_lean_prompt,
    check_parser_stops_at_observation,
    check_pretended_calls,
    check_suggesting_registry,
    check_tool_messages,
    check_toy_logistics_tool,
    check_unknown_model,
)
from tinyagent.classroom.server import ClassroomServer


# -- 01 ---------------------------------------------------------------------------------------------
def test_01_a_tracking_number_in_quotes_is_another_number():
    class QuotesForgiven(QueryLogisticsTool):  # strips the quotes a model writes: the toy reads only the exact form
        def invoke(self, input):
            return super().invoke(input.strip().strip("\"'“”"))

    said = failure(check_toy_logistics_tool, QuotesForgiven)
    assert 'in quotes ("SF1234567890") it is another number too' in said, said
    assert "Quotes are not whitespace: strip() keeps them" in said, said
    assert passes(check_toy_logistics_tool, QueryLogisticsTool)


def test_01_a_short_order_id_is_an_id_not_no_number():
    class FourDigitsOrMore(QueryOrderTool):  # an order id "has" at least four digits: order #7 got the hint
        def invoke(self, input):
            digits = re.search(r"\d{4,}", input)
            if digits is None:
                return to_json({"error": "请提供订单号", "expected": "订单号数字，如 88231"})
            return super().invoke(digits.group())

    said = failure(check_forgiving_query_order, FourDigitsOrMore)
    assert "an id the toy does not have gets 订单不存在：<id>, the id it read" in said, said
    assert "42 is a number too: read the first run of digits however short it is" in said, said
    assert passes(check_forgiving_query_order, ForgivingQueryOrderTool)



# -- 02 ---------------------------------------------------------------------------------------------
def test_02_a_tool_registered_after_the_registry_was_made_is_suggested_too():
    class NamesKeptFromInit(CarefulRegistry):  # the names read once: a tool registered later is never suggested
        def __init__(self, tools=()):
            super().__init__(tools)
            self.names = list(self.tools)

        def execute(self, action):
            observation = super().execute(action)
            data = json.loads(observation) if observation.startswith("{") else None
            if isinstance(data, dict) and "available_tools" in data:
                close = difflib.get_close_matches(action.tool_name.strip(), self.names, n=1)
                if close:
                    data["did_you_mean"] = close[0]
                return json.dumps(data, ensure_ascii=False)
            return observation

    said = failure(check_suggesting_registry, NamesKeptFromInit)
    assert "a tool registered later (register) is suggested too" in said, said
    assert "'searchKnowledge' was registered later: suggest among self.tools as it is now" in said, said
    assert passes(check_suggesting_registry, SuggestingRegistry)


# -- 03 ---------------------------------------------------------------------------------------------
def test_03_a_404_for_a_path_the_server_does_not_serve_is_not_the_unknown_models():
    def caught(url: str) -> LlmError:
        with pytest.raises(LlmError) as raised:
            LlmClient(url, None, "classroom-xl").chat([{"role": "user", "content": "hi"}])
        return raised.value

    server = ClassroomServer().start()
    try:
        typo = caught(server.base_url + "/v2")  # a URL mistyped: a 404 too, of the path, naming no model
        right = caught(server.base_url)
    finally:
        server.stop()
    said = failure(check_unknown_model, 404, typo, "body")
    assert "that 404 is the URL's (a path it does not serve), not the unknown model's" in said, said
    assert passes(check_unknown_model, 404, right, "body")



# -- 04 and 05: a key indented with full-width spaces (U+3000), as Chinese text indents a paragraph -----------
SPACE_AND_TAB = " \t"  # what a learner lists as indentation: lstrip(" \t") keeps U+3000, which strip() takes


def test_04_a_key_indented_with_full_width_spaces_counts():
    def counted(text):
        return sum(line.lstrip(SPACE_AND_TAB).startswith("Observation:") for line in text.split("\n"))

    def named(text):
        lines = [line.lstrip(SPACE_AND_TAB) for line in text.split("\n")]
        return [line[len("Action:"):].strip() for line in lines if line.startswith("Action:")]

    said = failure(check_invented_counter, counted)
    assert "after leading spaces (an indented line) counts too" in said, said
    assert "(that `Observation:` line is indented with U+3000 spaces: strip() takes them" in said, said
    said = failure(check_pretended_calls, named, ["getCurrentTime", "searchKnowledge"])
    assert "an indented `Action:` line is an Action line too" in said, said
    assert "(that `Action:` line is indented with U+3000 spaces: strip() takes them" in said, said
    assert passes(check_invented_counter, count_invented_observations)
    assert passes(check_pretended_calls, pretended_tools, ["getCurrentTime", "searchKnowledge"])


def test_05_a_key_indented_with_full_width_spaces_counts():
    def cut(text):
        if FINAL in text:
            return my_parse(text)
        lines = text.splitlines()
        keyed = next((n for n, line in enumerate(lines) if line.lstrip(SPACE_AND_TAB).startswith("Observation:")),
                     len(lines))
        return my_parse("\n".join(lines[:keyed]))

    def anchored(text):
        lines = text.splitlines()
        for n, line in enumerate(lines):
            if line.lstrip(SPACE_AND_TAB).startswith(FINAL):
                return "\n".join([line.lstrip(SPACE_AND_TAB)[len(FINAL):], *lines[n + 1:]]).strip()
        return None

    said = failure(check_parser_stops_at_observation, cut)
    assert "(that `Observation:` line is indented, with U+3000 spaces: strip() takes them)" in said, said
    said = failure(check_anchored_final_answer, anchored)
    assert "the line is stripped before its start is tested: an indented `Final Answer:` line counts" in said, said
    assert "(that `Final Answer:` line is indented with U+3000 spaces: strip() takes them off too" in said
    assert passes(check_anchored_final_answer, final_answer_anchored)


# -- 05 ---------------------------------------------------------------------------------------------
def test_05_an_indented_observation_missed_is_named_as_such():
    def cut_at_unindented(text):  # cuts the text at the first line that starts with it, the line not stripped
        if FINAL in text:  # an answer is read in the whole text, as my_parse reads it
            return my_parse(text)
        lines = text.splitlines()
        keyed = next((n for n, line in enumerate(lines) if line.startswith("Observation:")), len(lines))
        return my_parse("\n".join(lines[:keyed]))

    said = failure(check_parser_stops_at_observation, cut_at_unindented)
    assert "`Observation:` is a section only at the start of a (stripped) line" in said, said
    assert "(that `Observation:` line is indented" in said, said
    assert passes(check_parser_stops_at_observation, lambda text: my_parse(text, stop_at_observation=True))


def test_05_a_key_line_that_holds_the_key_twice_keeps_all_after_the_first():
    def split_on_its_line(text):  # the key's line split at the key: a second key on it ends the answer
        lines = text.splitlines()
        for n, line in enumerate(lines):
            if line.strip().startswith(FINAL):
                return "\n".join([line.split(FINAL)[1], *lines[n + 1:]]).strip()
        return None

    said = failure(check_anchored_final_answer, split_on_its_line)
    assert "the answer is everything after it to the end of the text" in said, said
    assert "(`Final Answer:` twice on a line: all after the first stays, the second too)" in said, said
    assert passes(check_anchored_final_answer, final_answer_anchored)


# -- 08 ---------------------------------------------------------------------------------------------
def test_08_a_description_with_its_whitespace_evened_out_is_not_word_for_word():
    def tidied(tools):  # each description's runs of whitespace made one space, to save a token or two
        listed = "".join(f"{tool.name}: {' '.join(tool.describe('en').split())}\n" for tool in tools)
        as_given = "".join(f"{tool.name}: {tool.describe('en')}\n" for tool in tools)
        return lean_prompt(tools).replace(as_given, listed)

    said = failure(check_lean_prompt, tidied)
    assert "descriptions in Chinese, with odd Unicode, colons or numbers, kept word for word" in said, said
    assert "A description's own spaces are part of it (two after a full stop, a full-width one)" in said, said
    assert passes(check_lean_prompt, lean_prompt)


# -- 09 ---------------------------------------------------------------------------------------------
tool_messages = tool_messages_with()


def test_09_arguments_changed_on_the_way_to_run_tool_are_named_as_such():
    def with_a_default(message, run_tool):  # a key added to every call's arguments
        return tool_messages(message, lambda name, arguments: run_tool(name, {**arguments, "lang": "zh"}))

    def ids_as_numbers(message, run_tool):  # orderId made an int, as a number "should" be
        def typed(name, arguments):
            if "orderId" in arguments:
                arguments = {**arguments, "orderId": int(arguments["orderId"])}
            return run_tool(name, arguments)

        return tool_messages(message, typed)

    ran_with = {with_a_default: "{'orderId': '88231', 'lang': 'zh'}", ids_as_numbers: "{'orderId': 88231}"}
    for changed, ran in ran_with.items():
        said = failure(check_tool_messages, changed)
        # was blamed on call_text's string (a key added) or on call_broken's JSON (the id an int)
        assert "call_text" not in said and "call_broken" not in said, said
        assert f"run_tool ran queryOrder with {ran}, where the call's arguments are {{'orderId': '88231'}}" in said
        assert "nothing added or changed" in said, said
    assert passes(check_tool_messages, tool_messages)
