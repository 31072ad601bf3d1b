import pytest

from tinyagent import Action, parse_step
from tinyagent.parser import extract_final_answer


def test_reads_thought_action_and_input():
    step = parse_step("Thought: I need the order.\nAction: queryOrder\nAction Input: 88231\n")
    assert step.rule == "action"
    assert step.thought == "I need the order."
    assert step.action == Action("queryOrder", "88231")
    assert step.final_answer is None


def test_prefix_trap_action_input_is_not_read_as_the_tool_name():
    step = parse_step("Action Input: 88231\nAction: queryOrder")
    assert step.action.tool_name == "queryOrder"


def test_action_word_inside_a_thought_is_not_an_action():
    step = parse_step("Thought: I will use Action: getCurrentTime later.\nAction: queryOrder\nAction Input: 1")
    assert step.action == Action("queryOrder", "1")
    assert "getCurrentTime" in step.thought


def test_multiline_json_input_is_kept_whole():
    text = 'Thought: refund\nAction: applyRefund\nAction Input: {\n  "orderId": "88231",\n  "reason": "broken"\n}'
    step = parse_step(text)
    assert step.action.tool_input == '{\n  "orderId": "88231",\n  "reason": "broken"\n}'


def test_empty_action_input_is_empty_string():
    step = parse_step("Thought: time?\nAction: getCurrentTime\nAction Input:")
    assert step.action == Action("getCurrentTime", "")


def test_final_answer_is_extracted_to_the_end():
    step = parse_step("Thought: all done\nFinal Answer: Your refund RF1 is on its way.\nThanks!")
    assert step.rule == "final_answer"
    assert step.final_answer == "Your refund RF1 is on its way.\nThanks!"
    assert step.action is None


def test_final_answer_wins_over_an_invented_action():
    text = "Thought: x\nAction: queryOrder\nAction Input: 1\nObservation: {}\nThought: y\nFinal Answer: done"
    assert parse_step(text).final_answer == "done"


def test_text_after_an_invented_observation_is_ignored():
    text = "Thought: x\nAction: queryOrder\nAction Input: 1\nObservation: {}\nAction: applyRefund\nAction Input: 2"
    assert parse_step(text).action == Action("queryOrder", "1")


@pytest.mark.parametrize("text", ["Your order has shipped.", "", "thought: lower case\naction: queryOrder"])
def test_no_format_is_reported(text):
    step = parse_step(text)
    assert step.rule == "no_format"
    assert step.action is None and step.final_answer is None


def test_extract_final_answer_none_without_marker():
    assert extract_final_answer("no marker here") is None
    assert extract_final_answer("Final Answer:  hi ") == "hi"
