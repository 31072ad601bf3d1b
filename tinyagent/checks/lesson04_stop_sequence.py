"""Lesson 04 (the stop sequence): count invented Observations, name the pretended calls."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tinyagent.checks.reporting import _brief, _fail, _not_attempted, _passed, _run, grades

RUN_ON = """Thought: 用户想退订单 88231。先查订单。
Action: queryOrder
Action Input: 88231
Observation: {"orderId":"88231","status":"已签收"}
Thought: 订单正常，直接退款。
Action: applyRefund
Action Input: {"orderId":"88231","reason":"不回充"}
Observation: {"success":true,"refundId":"RF20260629001"}
Thought: 退款已提交。
Final Answer: 退款单号 RF20260629001。"""

STOPPED = "Thought: 用户想退订单 88231。先查订单。\nAction: queryOrder\nAction Input: 88231\n"

INVENTION_SAMPLES = [
    (RUN_ON, 2, "a run-on reply with two invented Observations"),
    (STOPPED, 0, "a reply cut at the stop sequence"),
    ("Thought: I wait for the Observation: it comes from the tool.\nAction: getCurrentTime\nAction Input:", 0,
     "a Thought that mentions 'Observation:' in the middle of its line"),
    ("Action: queryOrder\nAction Input: 88231\n  Observation: {\"orderId\":\"88231\"}", 1,
     "an indented Observation line"),
    ("", 0, "an empty reply"),
]


@grades("Exercise 1")
def check_invented_counter(count_invented_observations: Callable[[str], int] | None) -> None:
    """04, exercise 1: count the lines of a reply that start with `Observation:`."""
    exercise = "Exercise 1"
    if count_invented_observations is None:
        return _not_attempted(exercise, "Write def count_invented_observations(text) in the cell above.")
    for text, expected, what in INVENTION_SAMPLES:
        got = _run(exercise, "count_invented_observations(...)", count_invented_observations, text)
        if got != expected:
            _fail(exercise, f"on {what} ({_brief(text)}) it returned {got!r}, expected {expected}")
    return _passed(exercise, "only lines that start with 'Observation:' are counted.")


PRETENDED_SAMPLES = [
    (RUN_ON, ["queryOrder", "applyRefund"], "the run-on reply"),
    (STOPPED, ["queryOrder"], "a reply cut at the stop sequence"),
    ("Thought: nothing to do.\nFinal Answer: 好的", [], "a final answer"),
    ("  Action: getCurrentTime\nAction Input:\n", ["getCurrentTime"], "an indented Action with an empty input"),
]


@grades("Exercise 2")
def check_pretended_calls(pretended_tools: Callable[[str], list[str]] | None, skipped: Any = None) -> None:
    """04, exercise 2: the tools a reply asks for (its `Action:` lines), and the tools the invention skipped."""
    exercise = "Exercise 2"
    if pretended_tools is None and skipped is None:
        return _not_attempted(exercise, "Write def pretended_tools(text) and set skipped above.")
    if pretended_tools is None:
        _fail(exercise, "write pretended_tools(text) too")
    for text, expected, what in PRETENDED_SAMPLES:
        got = _run(exercise, "pretended_tools(...)", pretended_tools, text)
        if got is not None and not isinstance(got, (list, tuple)):
            _fail(exercise, f"on {what} it returned {_brief(got)}: return a list of tool names")
        if list(got or []) != expected:
            hint = ""
            if any("Input" in str(name) or ":" in str(name) for name in got or []):
                hint = " ('Action Input: ...' starts with 'Action' too: match the key with its colon)"
            _fail(exercise, f"on {what} it returned {got!r}, expected {expected}{hint}")
    if skipped is None:
        _fail(exercise, "set skipped to the tools the invented run skipped")
    if isinstance(skipped, str) or set(skipped) != {"getCurrentTime", "searchKnowledge"}:
        _fail(exercise, f"skipped={skipped!r}: deciding a refund needs today's date (how many days since "
                        "signing?) and the shop's policy (which windows apply?); which tools give those?")
    return _passed(exercise, "the invention asked for queryOrder and applyRefund, and skipped the date and "
                             "the policy: nothing checked that a refund was allowed.")
