"""What a run changed, read from its trace: the calls of tools that change something (a refund) that worked.

No lesson builds this module; several use it. Lesson 12's Session is the first (`Session.ask` says a stopped run's
changes after its canned answer, and keeps them in the Turn); lessons 15 (the approval panel), 17 (the re-planner and
the reflection), 19 (the service), 21 (the triage) and the command line say them the same way.

A run's answer is the model's own report of what it did, unless the run stopped without one (lesson 06's `Stopped`:
the step cap, the model failing on its next call, lesson 13's context budget), or was stopped from outside (a Ctrl-C,
lesson 19's service told to stop or its client gone). Its answer is then the loop's canned sentence ("Sorry, I could
not finish ...") or none, neither of which knows of a refund written a round before. Whoever keeps or shows that
answer (a Session, lesson 15's ApprovalPanel, lesson 19's service, `python -m tinyagent ask`, the re-planner,
composer and triage of lessons 17 and 21) says the changes after it:

    changes_made(trace, guards)        each call of a tool `guards` names that came back without an error and did
                                       not say it changed nothing (changed_nothing: a repeated refund), one line
                                       each: "applyRefund {...} -> {...}"
    calls_cut_short(trace, guards)     each call of such a tool with no result, for a run a Ctrl-C stopped inside
                                       the call: it may have made its change
    writes_in(tools)                   the guards when no gate names them (lesson 15's gate does): every tool of a
                                       registry not `read_only` (tools.Tool: a look-up that changes nothing)
    canned(trace)                      whether the answer is the loop's words for a stop, not the model's
    said_after_stop(answer, changes, trace)  said_after under SAID (after canned words) or MADE (after lesson 10's
                                       closing reply)
    said_after(answer, changes, lang)  the answer with those changes after it, under SAID in the run's language

A change is counted from the trace, where the tool's own result says it happened; the shop is not read again. A call
cut short has no result to say so, and is said as one that may have been made: a refund's write can commit just before
a Ctrl-C. Lesson 19's service stops a run between two events, so a call without a result never started there: it asks
changes_made alone, and answers under STOPPED.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tinyagent.events import LlmCall, Observation, Stopped, ToolCall
from tinyagent.robustness.tolerant_parser import FormatObservation
from tinyagent.safe_text import one_line
from tinyagent.trace import Trace

MAX_CHANGE_CHARS = 300  # one change, as a line: the call and the start of its result

SAID = {"en": "Before the run stopped, it had already done this:",
        "zh": "在停下之前，已经完成了以下操作："}
# Said after an answer the model did give but may not report its changes in: a stop's closing reply (lesson 10's
# StopRules asks the model for its best answer at a limit), a plan's or a reflection's summary.
MADE = {"en": "The run made these changes:", "zh": "这次运行做了以下更改："}
# The answer of a run stopped from outside (Ctrl-C, the service told to stop, its client gone), before its changes,
# and what a call cut short by it is said to have returned.
STOPPED = {"en": "The run was stopped before its answer.", "zh": "这次运行在给出回答之前被停下了。"}
CUT_SHORT = {"en": "(no result: the run stopped while it ran; it may have been made)",
             "zh": "（没有结果：运行在它执行时停下了；它可能已经完成）"}


def changes_made(trace: Trace, guards: Callable[[str], bool]) -> list[str]:
    """Each call of a tool `guards` names that came back without an error and changed something, as one line:
    "applyRefund {...} -> {...}". A result that says it changed nothing (`changed_nothing`: the shop's second refund
    of an order) is no change: the first call, which made it, is said."""
    return [shortened(one_line(f"{call.name} {call.input} -> {result.text}"), MAX_CHANGE_CHARS)
            for call, result in calls_and_results(trace)
            if result is not None and guards(call.name) and not result.error and not changed_nothing(result.text)]


def calls_cut_short(trace: Trace, guards: Callable[[str], bool]) -> list[str]:
    """Each call of a tool `guards` names that has no result in the trace, as one line: "applyRefund {...} -> (no
    result: the run stopped while it ran; it may have been made)", in the trace's language. For a run that ended
    inside a call (Ctrl-C or a `kill`, raised while the refund's write waited or had just committed): the shop may
    hold its change while the trace does not. A run stopped between two events (lesson 19's service's) has not
    started the calls it has no result for: it asks changes_made alone."""
    said = CUT_SHORT.get(trace.lang, CUT_SHORT["en"])
    room = MAX_CHANGE_CHARS - len(said) - len(" -> ")  # the call is shortened, never the words that it may be made
    return [f"{shortened(one_line(f'{call.name} {call.input}'), room)} -> {said}"
            for call, result in calls_and_results(trace) if result is None and guards(call.name)]


def calls_and_results(trace: Trace) -> list[tuple[ToolCall, Observation | None]]:
    """Each call with its result, None when the trace has none. Both protocols write a round's results after its
    calls, in the same order, before the agent's next model call: a result is its agent's oldest call of the round
    still waiting. An agent's next LlmCall (or a call of another step) starts its next round, and the calls still
    waiting got no result (a specialist's handBack ends its loop before the tool runs). Rounds are told apart per
    agent: in lesson 21's team a specialist's rounds sit inside the triage's round, and a specialist handed two
    requests numbers the first round of each 1. Lesson 11's FormatObservation (a reply that could not be read) is
    no call's result."""
    paired: list[tuple[ToolCall, Observation | None]] = []
    waiting: dict[str, list[int]] = {}  # per agent: where in `paired` its round's calls without a result are
    for event in trace.events:
        calls = waiting.setdefault(event.agent, [])
        if isinstance(event, LlmCall) or (isinstance(event, ToolCall) and calls
                                          and paired[calls[0]][0].step != event.step):
            calls.clear()
        if isinstance(event, ToolCall):
            calls.append(len(paired))
            paired.append((event, None))
        elif isinstance(event, Observation) and not isinstance(event, FormatObservation) and calls:
            call, _ = paired[calls[0]]
            if call.step == event.step:
                paired[calls.pop(0)] = (call, event)
    return paired


def changed_nothing(result: str) -> bool:
    """Whether a tool's result says it changed nothing: a JSON object with "duplicate": true, the shop's answer to a
    second refund of an order ("未重复提交", with the first refund's id) and reminder_loop.py's to a reminder
    already sent (lesson 21)."""
    try:
        said = json.loads(result)
    except (ValueError, RecursionError):  # not JSON (RecursionError: nested deeper than Python reads)
        return False
    return isinstance(said, dict) and said.get("duplicate") is True


def shortened(line: str, limit: int) -> str:
    """`line` cut to `limit` characters, with "…" where it was cut."""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def writes_in(tools: Any) -> Callable[[str], bool]:
    """For changes_made: a tool name is a change unless `tools` (a ToolRegistry) marks its tool `read_only`; a name
    it does not know counts, so an unknown tool that ran is never left unsaid (`ask`, a Session and lessons 17 and 21
    count this way: they have no gate that names the tools, as lesson 15's does)."""
    return lambda name: not getattr(tools.get(name), "read_only", False)


def canned(trace: Trace) -> bool:
    """Whether the run's answer is the loop's own words for a stop (its trace ends with `Stopped`), not the
    model's: a stop with a closing call (lesson 10) ends with the model's `Final`, which reports what was done
    itself."""
    return isinstance(trace.end, Stopped)


def said_after_stop(answer: str, changes: list[str], trace: Trace) -> str:
    """The answer of a run a stop ended, with its changes after it: under SAID after the loop's canned sentence, which
    knows nothing of them, under MADE after a closing reply (lesson 10: the model's best answer at a limit), which
    may leave them out."""
    return said_after(answer, changes, trace.lang, SAID if canned(trace) else MADE)


def said_after(answer: str, changes: list[str], lang: str, heading: dict[str, str] = SAID) -> str:
    """`answer`, then the changes, one per line, under `heading` in `lang` ("en" or "zh"): SAID after a stop,
    MADE after an answer the run gave that may not say them."""
    if not changes:
        return answer
    listed = "\n".join(f"- {change}" for change in changes)
    return f"{answer}\n{heading.get(lang, heading['en'])}\n{listed}".strip()
