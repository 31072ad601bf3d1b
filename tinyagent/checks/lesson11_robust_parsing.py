"""Lesson 11 (robust parsing): bracketed actions, and an Action that wins over a Final Answer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tinyagent.checks.lesson05_parser import MULTI_LINE_ANSWER, _action_of, _reading
from tinyagent.checks.reporting import _brief, _fail, _not_attempted, _passed, _run, grades
from tinyagent.robustness.tolerant_parser import parse_tolerant

_REFUND_JSON = '{"orderId":"88231","reason":"质量问题：扫地机不回充"}'

# (reply, what it is): the check compares the learner's parser with `parse_tolerant` on each.
BRACKET_CASES = [
    ("Thought: I need the order first.\nAction: queryOrder[88231]", "queryOrder[88231]"),
    ("Thought: I need the policy.\nAction: searchKnowledge[扫地机 退货 政策]",
     "an input with spaces: searchKnowledge[扫地机 退货 政策]"),
    ("thought: I need today's date.\naction: getCurrentTime[]", "an empty input: getCurrentTime[]"),
    (f"**Thought:** It is faulty.\n**Action:** applyRefund[{_REFUND_JSON[:-1]},\"photos\":[\"dock.jpg\"]}}]",
     "an input that holds brackets itself (JSON with a list)"),
    ("Thought: I need the order first.\nAction: `queryOrder` (to see when it was signed for)\nAction Input: 88231",
     "a name in backticks with a comment in round brackets, and its Action Input"),
    ("Thought：先查订单。\nAction：queryOrder\nAction Input：88231", "full-width colons, no brackets at all"),
    ("Thought: Done.\nFinal Answer: Refund RF202606300001 [quality problem] is submitted.",
     "a Final Answer with brackets in it"),
]


def _read(step: Any) -> tuple[tuple[str, str] | None, str | None]:
    return _action_of(step), getattr(step, "final_answer", None)


def _readings_against_tolerant(exercise: str, name: str, fn: Callable[[str], Any], cases: list):
    """Each case where `fn` reads a reply differently from `parse_tolerant`: (text, what, mine, theirs)."""
    for text, what in cases:
        mine = _read(_run(exercise, f"{name} on {what}", fn, text))
        theirs = _read(parse_tolerant(text))
        if mine != theirs:
            yield text, what, mine, theirs


@grades("Exercise 1")
def check_bracket_actions(my_tolerant_v2: Callable[[str], Any] | None) -> None:
    """11, exercise 1: the hand-built tolerant parser, extended to read `Action: tool[input]`."""
    exercise = "Exercise 1"
    if my_tolerant_v2 is None:
        return _not_attempted(exercise, "Write def my_tolerant_v2(text) in the cell above.")
    if not callable(my_tolerant_v2):
        _fail(exercise, f"my_tolerant_v2 should be a function, got {type(my_tolerant_v2).__name__}")
    for text, what, mine, theirs in _readings_against_tolerant(exercise, "my_tolerant_v2", my_tolerant_v2,
                                                                BRACKET_CASES):
        hint = ""
        if theirs[0] and mine[0] and mine[0][0] == theirs[0][0] and theirs[1] is None:
            hint = " (the name is right; the input is everything between the first [ and the last ])"
        _fail(exercise, f"on {what} ({_brief(text)}) it read {_reading(*mine)}; tinyagent.parse_tolerant "
                        f"reads {_reading(*theirs)}{hint}")
    return _passed(exercise, f"{len(BRACKET_CASES)} replies read as parse_tolerant reads them, brackets "
                             "inside the input included.")


ACTION_FIRST_CASES = [
    ((f"Thought: It is faulty, so I refund it.\nAction: applyRefund\nAction Input: {_REFUND_JSON}\n"
     "Final Answer: Your refund RF20260629001 is on its way."),
     "a reply that typed past its Action to a Final Answer"),
    (("Thought: I need the order first.\nAction: queryOrder\nAction Input: 88231\n"
     'Observation: {"orderId":"88231","status":"已签收"}\nThought: Signed, so I refund it.\n'
     f"Action: applyRefund\nAction Input: {_REFUND_JSON}\nFinal Answer: Refund RF20260629001 submitted."),
     "a reply that ran on past an Observation it invented"),
    ("Thought: The refund went through.\nFinal Answer: Refund RF202606300001 is submitted.", "a plain final answer"),
    (("Thought: The refund went through. No need for another Action: applyRefund.\n"
     "Final Answer: Refund RF202606300001 is submitted."), "a final answer whose Thought mentions 'Action:'"),
    (f"Thought: Done.\nFinal Answer: Refunded.\nAction: applyRefund\nAction Input: {_REFUND_JSON}",
     "a Final Answer written before the Action"),
    ("Thought: Too early for a Final Answer: I need the order first.\nAction: queryOrder\nAction Input: 88231",
     "a Thought that mentions 'Final Answer:' mid-line"),
    ("Thought: I need the order first.\nAction: queryOrder\nAction Input: 88231\n", "a plain action"),
    (MULTI_LINE_ANSWER, "a three-line answer"),
    ("您好，您的包裹已经签收了。", "plain prose"),
]


@grades("Exercise 2")
def check_action_over_final(action_first: Callable[[str], Any] | None) -> None:
    """11, exercise 2: lesson 05's parser with the new rule: an Action beside a Final Answer wins."""
    exercise = "Exercise 2"
    if action_first is None:
        return _not_attempted(exercise, "Write def action_first(text) in the cell above.")
    if not callable(action_first):
        _fail(exercise, f"action_first should be a function, got {type(action_first).__name__}")
    for text, what, mine, theirs in _readings_against_tolerant(exercise, "action_first", action_first,
                                                                ACTION_FIRST_CASES):
        why = ""
        if theirs[0] is not None and mine[1] is not None:
            why = " The answer rests on nothing observed yet: the Action must run first."
        elif theirs[0] is None and mine[0] is not None:
            why = " Only an 'Action:' at the start of a line is an action."
        elif theirs[0] is not None and mine[0] is not None and mine[0][0] == theirs[0][0]:
            why = " The tool is right and its input is not: the input is what follows 'Action Input:'."
        elif theirs[0] is not None and mine[0] is not None and "Observation:" in text:
            why = " Nothing after an Observation the model wrote itself is part of this step."
        _fail(exercise, f"on {what} ({_brief(text)}) it read {_reading(*mine)}; expected {_reading(*theirs)}.{why}")
    return _passed(exercise, f"{len(ACTION_FIRST_CASES)} replies: every Action beside a Final Answer runs, "
                             "and a mere mention of 'Action:' stays a mention.")
