"""Lessons 11, 14 and 16's checks on the answers a prober found mis-graded or mis-named: a tool name with its marks
taken off, an `Action:` key read in any spelling, an action that is a tuple, a loop that never ends (and one that
runs out of memory), the order given handed back, None, and text yielded for no pieces. Each wrong answer fails
with a message that names its mistake; the solutions still pass."""

from __future__ import annotations

import re
import sys
import time
import weakref

import pytest

from tests.test_exercises import cut_stream, fails, failure, my_rerank, passes, windows
from tinyagent import Action, ParsedStep, parse_step
from tinyagent.checks import (
    check_action_over_final,
    check_bracket_actions,
    check_coverage_rerank,
    check_cut_stream,
    check_overlapping_windows,
)
from tinyagent.parser import split_keyed_lines

# -- 11 · Robust parsing ------------------------------------------------------------------------------


def action_first(text, name_of=lambda value: value, keys=split_keyed_lines):
    """The solution of exercise 2; `name_of(value)`: the tool name read from an `Action:` value, `keys(text)`: the
    (key, value) sections."""
    step = parse_step(text)
    if step.final_answer is None:
        return step
    name, tool_input = "", ""
    for key, value in keys(text):
        if key == "Observation:":
            break
        if key == "Action:":
            name, tool_input = name_of(value), ""
        elif key == "Action Input:" and name:
            tool_input = value
    if name:
        return ParsedStep(step.thought, Action(name, tool_input), None, "action_over_final")
    return step


def test_11_action_name_keeps_its_marks():
    assert passes(check_action_over_final, action_first)
    # `value.strip("`*")`: the spec says the name is the whole Action: value, as parse_step reads it (passed before)
    no_marks = lambda text: action_first(text, name_of=lambda value: value.strip("`*"))
    fails(check_action_over_final, no_marks, says="the whole value of the `Action:` line")
    fails(check_action_over_final, no_marks, says="its backticks, stars, quotes or brackets too")
    # the first word only is still told as such
    fails(check_action_over_final, lambda text: action_first(text, name_of=lambda value: value.split()[0] if value else ""),
          says="not only its first word")


def test_11_two_readings_are_shown_where_they_differ():
    # Each reading was cut short to a few words before the failure compared them, so an input that differs in its
    # middle (here every line of a JSON Action Input stripped) read alike on both sides, cut twice: `' …  … 不回充"\n…`.
    def lines_stripped(text):
        step = action_first(text)
        if step.action is None or step.final_answer is not None:
            return step
        tool_input = "\n".join(line.strip() for line in step.action.tool_input.split("\n"))
        return ParsedStep(step.thought, Action(step.action.tool_name, tool_input), None, step.rule)

    message = failure(check_action_over_final, lines_stripped)
    expected_got = next(line for line in message.splitlines() if line.startswith("expected "))
    want, _, have = expected_got.partition(", got ")
    assert '\\n  "reason":' in want and '\\n"reason":' in have, message  # the second line, where they differ
    assert " …  … " not in message, message


KEYS = {"thought": "Thought:", "action input": "Action Input:", "action": "Action:", "final answer": "Final Answer:",
        "observation": "Observation:"}


def forgiving_keys(text):
    """Sections under keys in any spelling: bold, lower-case, a full-width colon (as the lesson's `my_tolerant`
    reads them, which exercise 2 does not ask for)."""
    found = []
    for line in text.splitlines():
        match = re.match(r"^\s*\**(thought|action input|action|final answer|observation)\**\s*[:：]\**\s*(.*)$", line,
                         re.IGNORECASE)
        if match:
            found.append((KEYS[match.group(1).lower()], [match.group(2).strip()]))
        elif found:
            found[-1][1].append(line.rstrip())
    return [(key, "\n".join(lines).strip()) for key, lines in found]


def test_11_action_key_in_another_spelling_is_named():
    answer = lambda text: action_first(text, keys=forgiving_keys)
    fails(check_action_over_final, answer, says="only `Action:` at the start of a line counts")
    fails(check_action_over_final, answer, says="A bold, lower-case or full-width-colon 'Action:' is no key")


class Reading:
    """A step whose action is a (name, input) tuple, not an Action."""

    def __init__(self, step):
        action = step.action
        self.action = (action.tool_name, action.tool_input) if action is not None else None
        self.final_answer = step.final_answer


@pytest.mark.parametrize("check", [check_bracket_actions, check_action_over_final])
def test_11_action_as_a_tuple_is_named(check):
    with pytest.raises(AssertionError) as failure:
        check(lambda text: Reading(action_first(text)))
    assert "looks the same" not in str(failure.value), str(failure.value)
    fails(check, lambda text: Reading(action_first(text)), says="its action is tuple")
    fails(check, lambda text: Reading(action_first(text)), says="make it an Action(tool_name, tool_input)")


# -- 14 · Streaming -----------------------------------------------------------------------------------


def test_14_text_yielded_for_no_pieces_is_named():
    assert passes(check_cut_stream, cut_stream)

    def placeholder(pieces, stop):  # a reply with no text shown as a placeholder
        empty = True
        for text in cut_stream(pieces, stop):
            empty = empty and not text
            yield text
        if empty:
            yield "(no reply)"

    fails(check_cut_stream, placeholder, says="the pieces hold no text, so there is nothing to yield")
    with pytest.raises(AssertionError) as failure:
        check_cut_stream(placeholder)
    assert "earlier call" not in str(failure.value), str(failure.value)


@pytest.mark.skipif(sys.gettrace() is not None, reason="a tracer (coverage, a debugger) is set: the check leaves it "
                                                       "alone, and so has no step budget")
def test_14_a_stream_that_never_ends_fails_within_its_steps():
    def for_ever(pieces, stop):  # the text, then padding for ever: the check's reading of it would fill the memory
        yield from cut_stream(pieces, stop)
        for count in range(10_000_000):  # past the check's budget, so this test never fills the memory anyway
            yield " "
        raise RuntimeError("the test's own bound")

    fails(check_cut_stream, for_ever, says="cut_stream(pieces, stop) did not stop within 1,000,000 steps on [")
    fails(check_cut_stream, for_ever, says="does its loop end?")


# -- 16 · Knowledge -----------------------------------------------------------------------------------


@pytest.mark.skipif(sys.gettrace() is not None, reason="a tracer (coverage, a debugger) is set: the check leaves it "
                                                       "alone, and so has no step budget")
def test_16_a_loop_that_never_ends_fails_within_its_steps():
    assert passes(check_overlapping_windows, windows)

    def runaway(text, size, overlap):  # `start = size - overlap`, not `+=`: it never gets past the second window
        pieces, start, began = [], 0, time.monotonic()
        while start < len(text):
            pieces.append(text[start : start + size])
            if start + size >= len(text):
                break
            start = size - overlap
            if len(pieces) > 1_000_000:  # this test never fills the memory, even where the check has no budget,
                pieces.clear()             # and ends long after the check's stop (its lines, and 2 s)
                if time.monotonic() - began > 120:
                    raise RuntimeError("the test's own bound")
        return pieces

    fails(check_overlapping_windows, runaway, says="windows did not stop within 1,000,000 steps on '")
    fails(check_overlapping_windows, runaway, says="size=20, overlap=5: does its loop end?")


def test_16_out_of_memory_names_the_input_and_lets_the_memory_go():
    held = []

    class Hoard(list):
        pass

    def hoarding(text, size, overlap):  # what a runaway loop did by the time the memory ran out
        hoard = Hoard([text] * 100)
        held.append(weakref.ref(hoard))
        raise MemoryError

    fails(check_overlapping_windows, hoarding, says="windows ran out of memory on '")
    fails(check_overlapping_windows, hoarding, says="does its loop end?")
    assert held and all(ref() is None for ref in held)  # the answer's frame went with the traceback


def test_16_rerank_order_given_and_none_are_named():
    assert passes(check_coverage_rerank, my_rerank)
    fails(check_coverage_rerank, lambda question, passages: list(passages), says="kept as given")
    fails(check_coverage_rerank, lambda question, passages: None,
          says="my_rerank returned None for every input, where a list of passages was expected")
    # None for some inputs only: the form, not a type name
    fails(check_coverage_rerank, lambda question, passages: my_rerank(question, passages) if passages else None,
          says="it returned None: return the list of passages")
