"""Lesson 05 (the parser): stop at an invented Observation; an anchored Final Answer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tinyagent.checks.lesson04_stop_sequence import STOPPED
from tinyagent.checks.reporting import _brief, _fail, _not_attempted, _passed, _run, grades
from tinyagent.parser import parse_step

INVENTED_STEP = """Thought: 先查订单。
Action: queryOrder
Action Input: 88231
Observation: {"orderId":"88231","status":"已签收"}
Thought: 已签收，直接退款。
Action: applyRefund
Action Input: {"orderId":"88231","reason":"不回充"}"""

MULTI_LINE_ANSWER = """Thought: 退款已经提交，信息齐了。
Final Answer: 您好，订单 88231 的退款申请已提交：
- 退款单号：RF202606300001
- 预计 1-3 个工作日到账"""

PARSER_CASES = [
    INVENTED_STEP,
    STOPPED,
    MULTI_LINE_ANSWER,
    "Thought: I will use Action: getCurrentTime later.\nAction: queryOrder\nAction Input: 88231",
    # "Observation:" inside a Thought is a mention, not the start of an Observation section
    "Thought: The Observation: part comes from the tool.\nAction: getCurrentTime\nAction Input:",
    ("Thought: The customer wants the parcel.\nAction: queryLogistics needs a number.\nAction: queryOrder\n"
    "Action Input: 88231"),
    'Thought: 可以退款。\nAction: applyRefund\nAction Input: {\n  "orderId": "88231",\n  "reason": "不回充"\n}',
    "Action Input: 88231\nAction: queryOrder",
    "您好，您的包裹已经签收了。",
    "",
]


def _action_of(step: Any) -> tuple[str, str] | None:
    action = getattr(step, "action", None)
    return None if action is None else (action.tool_name, action.tool_input)


def _reading(action: tuple[str, str] | None, final_answer: Any) -> str:
    """A reading of a reply in a few words: the action and its input, the final answer, or neither."""
    if action is not None:
        name, tool_input = action
        said = f"Action {name!r} with input {_brief(tool_input, 40)}"
        return said if final_answer is None else f"{said} and Final Answer {_brief(final_answer, 30)}"
    return "no action and no answer" if final_answer is None else f"Final Answer {_brief(final_answer, 50)}"


@grades("Exercise 1")
def check_parser_stops_at_observation(my_parse_v2: Callable[[str], Any] | None) -> None:
    """05, exercise 1: a parser that ignores everything after an invented `Observation:`."""
    exercise = "Exercise 1"
    if my_parse_v2 is None:
        return _not_attempted(exercise, "Write def my_parse_v2(text) in the cell above.")
    for text in PARSER_CASES:
        mine = _run(exercise, "my_parse_v2(...)", my_parse_v2, text)
        theirs = parse_step(text)
        if _action_of(mine) != _action_of(theirs) or getattr(mine, "final_answer", None) != theirs.final_answer:
            what = "the step the model invented after its Observation" if text == INVENTED_STEP else "this reply"
            _fail(exercise, f"on {what} ({_brief(text)}) it read "
                            f"{_reading(_action_of(mine), getattr(mine, 'final_answer', None))}; "
                            f"tinyagent.parse_step reads {_reading(_action_of(theirs), theirs.final_answer)}")
    return _passed(exercise, f"{len(PARSER_CASES)} replies read as parse_step reads them; the invented "
                             "step after the Observation is ignored.")


ANCHORED_CASES = [
    ("Thought: Too early for a Final Answer: I need the order first.\nAction: queryOrder\nAction Input: 88231",
     None, "a Thought that mentions 'Final Answer:' mid-line"),
    (MULTI_LINE_ANSWER,
     "您好，订单 88231 的退款申请已提交：\n- 退款单号：RF202606300001\n- 预计 1-3 个工作日到账",
     "a three-line answer (the refund id is on its second line)"),
    ("Thought: done.\n   Final Answer: 好的", "好的", "an indented Final Answer line"),
    ("**Final Answer:** done", None, "a bold key (the price of anchoring)"),
    ("Thought: ok\nAction: getCurrentTime", None, "a reply with an action"),
]


@grades("Exercise 2")
def check_anchored_final_answer(final_answer_anchored: Callable[[str], str | None] | None) -> None:
    """05, exercise 2: `Final Answer:` found only at the start of a line, and kept to the end of the text."""
    exercise = "Exercise 2"
    if final_answer_anchored is None:
        return _not_attempted(exercise, "Write def final_answer_anchored(text) in the cell above.")
    for text, expected, what in ANCHORED_CASES:
        got = _run(exercise, "final_answer_anchored(...)", final_answer_anchored, text)
        if got != expected:
            hint = ""
            if expected and isinstance(got, str) and expected.startswith(got) and got:
                hint = " (an answer runs to the end of the text, not to the end of its line)"
            _fail(exercise, f"on {what} it returned {got!r}, expected {expected!r}{hint}")
    return _passed(exercise, "the key counts only at a line start, and the whole answer is kept; "
                             "a bold **Final Answer:** is what you lose.")
