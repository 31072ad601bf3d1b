"""Wrong answers to lessons 02, 11, 14, 16 and 17's exercises that an audit found passing, or failing with a message
that named another mistake: a note with a line break after it, a constructor whose parameter is not `limit`, an
Action Input with its quotes taken off, full-width-colon look-alikes taken for stop strings, stop strings stripped,
a count divided by the passage's length, bulleted lines read as plan steps, and ids kept between calls. Each now
fails and says what is wrong, and each lesson's solution still passes."""

from __future__ import annotations

import json
import re

import pytest

from tests.test_exercises import failure, passes
from tinyagent import Action, ParsedStep, parse_step
from tinyagent.checks import (
    check_action_over_final,
    check_capped_registry,
    check_coverage_rerank,
    check_cut_stream,
    check_plan_parser,
    check_plan_rule,
)
from tinyagent.parser import split_keyed_lines
from tinyagent.shop.knowledge import query_terms, search_terms


# -- 02, exercise 2 ----------------------------------------------------------------------------------
class CarefulRegistry:  # the lesson's careful registry, as the solution writes it
    def __init__(self, tools=()):
        self.tools = {tool.name.strip(): tool for tool in tools}

    def execute(self, action):
        if action is None or not action.tool_name.strip():
            return json.dumps({"error": "no tool name in the action"})
        name = action.tool_name.strip()
        tool = self.tools.get(name)
        if tool is None:
            return json.dumps({"error": f"unknown tool: {name}", "available_tools": list(self.tools)},
                              ensure_ascii=False)
        try:
            output = tool.invoke(action.tool_input.strip())
        except Exception as error:  # noqa: BLE001 - any crash becomes an Observation
            return json.dumps({"error": f"tool {name} failed: {type(error).__name__}: {error}"}, ensure_ascii=False)
        return output if isinstance(output, str) else json.dumps({"error": f"tool {name} returned no string"})


def _capped(note: str, parameter: str = "limit"):
    """A CappedRegistry (the solution's) whose note is `note` (formatted with n, what was cut), and whose limit is
    given as `parameter`."""

    class CappedRegistry(CarefulRegistry):
        def __init__(self, tools=(), **given):
            super().__init__(tools)
            unknown = set(given) - {parameter}
            if unknown:
                raise TypeError(f"CappedRegistry.__init__() got an unexpected keyword argument {unknown.pop()!r}")
            self.limit = given.get(parameter, 2000)

        def execute(self, action):
            observation = super().execute(action)
            if len(observation) <= self.limit:
                return observation
            return observation[: self.limit] + note.format(n=len(observation) - self.limit)

    return CappedRegistry


def test_02_solution_passes():
    assert passes(check_capped_registry, _capped("… [cut: {n} more characters]"))


def test_02_a_space_or_line_break_before_the_note_is_forgiven():
    # the note is what the Observation ends with; a separator before it is not ruled out by the spec
    assert passes(check_capped_registry, _capped(" … [cut: {n} more characters]"))
    assert passes(check_capped_registry, _capped("\n… [cut: {n} more characters]"))


def test_02_a_line_break_after_the_note_fails_as_something_after_the_note():
    message = failure(check_capped_registry, _capped("… [cut: {n} more characters]\n"))
    assert "'… [cut: N more characters]', nothing after it" in message
    assert "Nothing comes after the note's ], not even '\\n'" in message
    message = failure(check_capped_registry, _capped("… [cut: {n} more characters]  "))
    assert "not even '  '" in message


def test_02_a_limit_parameter_named_otherwise_shows_the_call_with_limit():
    message = failure(check_capped_registry, _capped("… [cut: {n} more characters]", parameter="max_chars"))
    assert "CappedRegistry(tools, limit=" in message
    assert "unexpected keyword argument 'limit'" in message


# -- 11, exercise 2 ----------------------------------------------------------------------------------
def _action_first(strip_input=None):
    """The solution's action_first; `strip_input`, when given, applied to the Action Input (the wrong answer)."""

    def action_first(text):
        step = parse_step(text)
        if step.final_answer is None:
            return step
        name, tool_input = "", ""
        for key, value in split_keyed_lines(text):
            if key == "Observation:":
                break
            if key == "Action:":
                name, tool_input = value, ""
            elif key == "Action Input:" and name:
                tool_input = strip_input(value) if strip_input else value
        if name:
            return ParsedStep(step.thought, Action(name, tool_input), None, "action_over_final")
        return step

    return action_first


def test_11_solution_passes():
    assert passes(check_action_over_final, _action_first())


@pytest.mark.parametrize("quotes", ['"', "'\"", "\"'“”「」`"])
def test_11_an_action_input_with_its_quotes_taken_off_fails(quotes):
    message = failure(check_action_over_final, _action_first(lambda value: value.strip(quotes)))
    assert "the Action's input is as parse_step reads it: ``` fences and quotes kept" in message
    assert "quotes too: do not take them off" in message


# -- 14, exercise 1 ----------------------------------------------------------------------------------
def _cut_stream(change_stop=None):
    """The solution's cut_stream; `change_stop`, when given, makes the stop strings it looks for (the wrong
    answers)."""

    def cut_stream(pieces, stop):
        stop = change_stop(stop) if change_stop else stop
        held = ""
        for piece in pieces:
            text = held + piece
            found = [text.find(s) for s in stop if s in text]
            if found:
                yield text[: min(found)]
                return
            keep = len(text)
            for i in range(max(len(text) - max(len(s) for s in stop) + 1, 0), len(text)):
                if any(s.startswith(text[i:]) for s in stop):
                    keep = i
                    break
            held = text[keep:]
            if keep:
                yield text[:keep]
        if held:
            yield held

    return cut_stream


def test_14_solution_passes():
    assert passes(check_cut_stream, _cut_stream())


def test_14_full_width_colon_look_alikes_taken_for_stop_strings_fail():
    also_full_width = _cut_stream(lambda stop: [*stop, *(s.replace(":", "：") for s in stop if ":" in s)])
    message = failure(check_cut_stream, also_full_width)
    assert "the whole text cut at its earliest stop string" in message
    assert "a full-width ： is not :" in message


def test_14_stop_strings_stripped_are_named_as_changed():
    message = failure(check_cut_stream, _cut_stream(lambda stop: [s.strip() for s in stop]))
    assert "it cut at 'User:', not at the stop string '\\n\\nUser:'" in message
    assert "do not strip it" in message
    assert "hold back the longest" not in message


# -- 16, exercise 2 ----------------------------------------------------------------------------------
def _rerank(size=None):
    """The solution's my_rerank; `size`, when given, divides the count by size(the passage's terms)."""

    def my_rerank(question, passages):
        terms = query_terms(question)

        def held(passage):
            words = set(search_terms(f"{passage.section} {passage.content}"))
            count = sum(term in words for term in terms)
            return count / max(1, size(words)) if size else count

        return sorted(passages, key=held, reverse=True)

    return my_rerank


def test_16_solution_passes():
    assert passes(check_coverage_rerank, _rerank())


def test_16_a_count_divided_by_the_passage_length_is_told_so():
    message = failure(check_coverage_rerank, _rerank(len))
    assert "the spec says: passages in order of how many of the question's terms each holds, most first" in message
    assert "it divided by the passage's length" in message
    assert "Han bigrams" not in message


# -- 17, exercises 1 and 2 ---------------------------------------------------------------------------
def _parse_plan(before_number=r"\s*"):
    """The solution's my_parse_plan; `before_number`: what may stand before a step's number."""
    step_line = re.compile(rf"^{before_number}(?:\*\*)?(\d+)[.)](?:\*\*)?\s*(.*)$")

    def my_parse_plan(text):
        steps, last = [], 0
        for line in text.splitlines():
            match = step_line.match(line)
            if match is None:
                continue
            number = int(match.group(1))
            if steps and number <= last:
                break
            step = match.group(2).replace("**", "").strip()
            if not step:
                raise ValueError(f"step {number} is empty")
            steps.append(step)
            last = number
        if not steps:
            raise ValueError("no numbered steps")
        return steps

    return my_parse_plan


def test_17_plan_parser_solution_passes():
    assert passes(check_plan_parser, _parse_plan())


@pytest.mark.parametrize("bullets", [r"\s*(?:[-*]\s*)?", r"\s*(?:[-*+•]\s*)?"])
def test_17_bulleted_lines_read_as_steps_fail(bullets):
    message = failure(check_plan_parser, _parse_plan(bullets))
    assert "the spec says: lines that are not numbered are ignored" in message
    assert "a bulleted line (`- 1. 查询订单`) is not numbered" in message


ORDER_ID = re.compile(r"(?<!\d)\d{5}(?!\d)")
JOINER = re.compile(r"另外|还有|\balso\b", re.IGNORECASE)


def test_17_plan_rule_solution_passes():
    def my_needs_plan(question):
        return len(set(ORDER_ID.findall(question))) >= 2 or JOINER.search(question) is not None

    assert passes(check_plan_rule, my_needs_plan)


def test_17_ids_kept_between_calls_are_told_so():
    seen = set()

    def my_needs_plan(question):
        seen.update(ORDER_ID.findall(question))
        return len(seen) >= 2 or JOINER.search(question) is not None

    message = failure(check_plan_rule, my_needs_plan)
    assert "it keeps something between calls" in message
    assert "count different ids" not in message
