"""What a run changed, read from its trace: the calls of tools that change something (a refund) that worked.

A run's answer is the model's own report of what it did, unless the run stopped without one (lesson 06's `Stopped`:
the step cap, the model failing on its next call, lesson 13's context budget). Its answer is then the loop's canned
sentence ("Sorry, I could not finish ..."), which knows nothing of a refund written a round before. Whoever keeps or
shows that answer (a Session, lesson 19's service, `python -m tinyagent ask`) says the changes after it:

    changes_made(trace, guards)        each call of a tool `guards` names that came back without an error, one line
                                       each: "applyRefund {...} -> {...}"
    writes_in(tools)                   the guards when no gate names them: every tool of a registry not `read_only`
    canned(trace)                      whether the answer is the loop's words for a stop, not the model's
    said_after(answer, changes, lang)  the answer with those changes after it, under SAID in the run's language

A change is counted from the trace, where the tool's own result says it happened; the shop is not read again.
Lesson 19's toolkit/changes_made.py builds on this (a call cut short by Ctrl-C, the service's headings).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tinyagent.events import Observation, Stopped, ToolCall
from tinyagent.robustness.tolerant_parser import FormatObservation
from tinyagent.safe_text import one_line
from tinyagent.trace import Trace

MAX_CHANGE_CHARS = 300  # one change, as a line: the call and the start of its result

SAID = {"en": "Before the run stopped, it had already done this:",
        "zh": "在停下之前，已经完成了以下操作："}


def changes_made(trace: Trace, guards: Callable[[str], bool]) -> list[str]:
    """Each call of a tool `guards` names that came back without an error, as one line: "applyRefund
    {...} -> {...}"."""
    return [shortened(one_line(f"{call.name} {call.input} -> {result.text}"), MAX_CHANGE_CHARS)
            for call, result in calls_and_results(trace)
            if result is not None and guards(call.name) and not result.error]


def calls_and_results(trace: Trace) -> list[tuple[ToolCall, Observation | None]]:
    """Each call with its result, None when the trace has none. A round's calls are paired with its results in
    order, as both protocols write them; lesson 11's FormatObservation (a reply that could not be read) is no call's
    result; a round is one agent's (lesson 21's team: a specialist's round 1 sits inside the triage's round 1)."""
    paired = []
    for step, agent in dict.fromkeys((call.step, call.agent) for call in trace.of_type(ToolCall)):
        calls = [call for call in trace.of_type(ToolCall) if (call.step, call.agent) == (step, agent)]
        results = [o for o in trace.of_type(Observation)
                   if (o.step, o.agent) == (step, agent) and not isinstance(o, FormatObservation)]
        paired.extend(zip(calls, results + [None] * (len(calls) - len(results))))
    return paired


def shortened(line: str, limit: int) -> str:
    """`line` cut to `limit` characters, with "…" where it was cut."""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def writes_in(tools: Any) -> Callable[[str], bool]:
    """For changes_made: a tool name is a change unless `tools` (a ToolRegistry) marks its tool `read_only`; a name
    it does not know counts, so an unknown tool that ran is never left unsaid (`ask`, a Session and lessons 17 and 21
    count this way: they have no gate that names the tools)."""
    return lambda name: not getattr(tools.get(name), "read_only", False)


def canned(trace: Trace) -> bool:
    """Whether the run's answer is the loop's own words for a stop (its trace ends with `Stopped`), not the
    model's: a stop with a closing call ends with the model's `Final`, which reports what was done itself."""
    return isinstance(trace.end, Stopped)


def said_after(answer: str, changes: list[str], lang: str, heading: dict[str, str] = SAID) -> str:
    """`answer`, then the changes, one per line, under `heading` in `lang` ("en" or "zh"): SAID after a stop,
    lesson 19's MADE after an answer the run gave that may not say them."""
    if not changes:
        return answer
    listed = "\n".join(f"- {change}" for change in changes)
    return f"{answer}\n{heading.get(lang, heading['en'])}\n{listed}".strip()
