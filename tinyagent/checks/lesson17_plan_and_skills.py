"""Lesson 17 (plan, reflect, skills): read a numbered plan, and the rule for a plan."""

from __future__ import annotations

import re
from collections.abc import Callable

from tinyagent.checks.reporting import _fail, _not_attempted, _passed, _run, grades

_PLAN_LINE = re.compile(r"^\s*(?:\*\*)?(\d+)[.)](?:\*\*)?\s*(.*)$")


def _plan_lines(text: str) -> list[str]:
    """17, exercise 1's answer: the first numbered list, from 1, while the numbers go up; ValueError if none."""
    steps, last = [], 0
    for line in text.splitlines():
        match = _PLAN_LINE.match(line)
        if match is None:
            continue
        number = int(match.group(1))
        if (not steps and number != 1) or (steps and number <= last):
            if steps:
                break
            continue
        steps.append(match.group(2).replace("**", "").strip())
        last = number
    if not steps:
        raise ValueError("no numbered steps")
    return steps


PLAN_CASES = (
    ("1. 查询订单 88231 的物流\n2. 查询订单 88232 的物流", "a plain plan"),
    ("Here is the plan:\n1) Look up order 88231\n2) Track its parcel", "a sentence before the steps, and '1)'"),
    ("**1.** Look up order 88231\n**2.** Search the policy", "numbers in Markdown bold"),
    ("计划如下：\n   1. 查询订单 88231\n   2. 查询售后政策", "an indented list"),
    ("1. Look up order 88231\n2. Track its parcel\n\nIn short:\n1. Track 88231", "a second list after the plan"),
    ("1. Look up order 88231\n   (it was signed for on 22 June)\n2. Check the return policy",
     "a note that is not numbered between two steps"),
    ("I will look both orders up and then answer.", "a reply with no plan"),
)


@grades("Exercise 1")
def check_plan_parser(my_parse_plan: Callable[[str], list[str]] | None) -> None:
    """17, exercise 1: read a planner's numbered steps; no steps is a ValueError."""
    exercise = "Exercise 1"
    if my_parse_plan is None:
        return _not_attempted(exercise, "Write def my_parse_plan(text) in the cell above.")
    if not callable(my_parse_plan):
        _fail(exercise, f"my_parse_plan should be a function, got {type(my_parse_plan).__name__}")
    for text, what in PLAN_CASES:
        try:
            expected = _plan_lines(text)
        except ValueError:
            expected = None
        try:
            mine = my_parse_plan(text)
        except ValueError:
            mine = None
        except Exception as exc:  # noqa: BLE001 - the learner's bug, reported as the check's failure
            _fail(exercise, f"on {what}, my_parse_plan raised {type(exc).__name__}: {exc} (only ValueError is expected)")
        if expected is None and mine is not None:
            _fail(exercise, f"on {what} ({text!r}) it returned {mine!r}: with no numbered steps, raise ValueError, so "
                            "the planner can be told its plan could not be read")
        if expected is not None and mine is None:
            _fail(exercise, f"on {what} it raised ValueError, but the text has the steps {expected!r}")
        if mine != expected:
            why = ""
            if isinstance(mine, list) and any("**" in str(step) for step in mine):
                why = " Take the Markdown '**' out of the steps."
            elif isinstance(mine, list) and len(mine) > len(expected):
                why = " Only the first list counts, while the numbers go up: a second list after it is not part of the plan."
            _fail(exercise, f"on {what}, expected {expected!r}, got {mine!r}.{why}")
    return _passed(exercise, f"{len(PLAN_CASES)} replies read: the plan found whatever surrounds it, and no plan is a "
                             "ValueError the planner can be shown.")


_ORDER_ID = re.compile(r"(?<!\d)\d{5}(?!\d)")
_JOINER = re.compile(r"另外|还有|\balso\b", re.IGNORECASE)

ROUTER_CASES = (
    ("订单 88231 和 88232 的物流都查一下，另外七天无理由退货怎么算运费？", "two orders and a policy question"),
    ("订单 88231 的物流查一下，另外发票怎么开？", "one order, then '另外' and another question"),
    ("Where is order 88232? Also, how do I get an invoice?", "'Also' with a capital A"),
    ("Refund 88231 and 88234 please", "two order ids in English"),
    ("订单 88231 到哪了？还有，发票怎么开？", "one order, then '还有' and another question"),
    ("订单 88231 的快递到哪了？", "one order, one question"),
    ("订单 88231 还没到，88231 是上周买的", "the same order id twice"),
    ("Please look at the alsoran order 88231", "a word that only contains 'also'"),
    ("My phone is 13812345678. Where is 88231?", "a phone number and one order"),
    ("Order 88231 was paid with invoice 2026", "a four-digit number and one order"),
)


def _several_parts(question: str) -> bool:
    return len(set(_ORDER_ID.findall(question))) >= 2 or _JOINER.search(question) is not None


@grades("Exercise 2")
def check_plan_rule(my_needs_plan: Callable[[str], bool] | None) -> None:
    """17, exercise 2: the router's rule for a request in several parts."""
    exercise = "Exercise 2"
    if my_needs_plan is None:
        return _not_attempted(exercise, "Write def my_needs_plan(question) in the cell above.")
    if not callable(my_needs_plan):
        _fail(exercise, f"my_needs_plan should be a function, got {type(my_needs_plan).__name__}")
    for question, what in ROUTER_CASES:
        mine = _run(exercise, f"my_needs_plan({question!r})", my_needs_plan, question)
        if not isinstance(mine, bool):
            _fail(exercise, f"my_needs_plan should return True or False, got {mine!r} on {what}")
        expected = _several_parts(question)
        if mine != expected:
            hints = {
                "the same order id twice": " Count different order ids: the same one twice is one order.",
                "a word that only contains 'also'": " Match 'also' as a whole word (\\b in a regex).",
                "a phone number and one order": " An order id is exactly five digits, not five digits inside a longer number.",
                "a four-digit number and one order": " An order id is exactly five digits: four are not one.",
                "'Also' with a capital A": " Match the joining words in any case.",
            }
            _fail(exercise, f"on {what} ({question!r}) it said {mine}, expected {expected}.{hints.get(what, '')}")
    return _passed(exercise, f"{len(ROUTER_CASES)} requests routed: several orders or a joining word make a plan; the "
                             "same order twice, 'alsoran' and a phone number do not.")
