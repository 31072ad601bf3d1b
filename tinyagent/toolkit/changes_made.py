"""What a run changed before it ended without an answer of its own: said to the person who asked, and kept.

The service's promise is that no answer hides an effect. A run ends with the model's answer, which reports
what it did, or it ends another way after a person's yes was given and the refund written: the model failed
on its next call (the answer is then the loop's canned MODEL_UNAVAILABLE, "Sorry, I cannot reach the language model ..."), the service was told
to stop, the client went away, the run took too long. Each of those must still say what was done:

    changes_made(trace, guards)     the calls of guarded tools (the ones a person must approve: a refund, a
                                    message) that ran without an error, with what each returned
    calls_cut_short(trace, guards)  the calls of guarded tools with no result, for a run stopped inside one
                                    (Ctrl-C or a `kill` in `ask`): each may have made its change
    writes_in(tools)                the guards when no gate names them: every tool of a registry not `read_only`
    said_after(answer, changes)     the answer with those changes after it, in the run's language

A change is counted from the trace, where the tool's own result says it happened; the shop is not read again. A
call cut short has no result to say so, and is said as one that may have been made: a refund's write can commit
just before the stop. Lesson 19's service uses the module (its runs stop between two events, so a call without a
result never started there), and so does `python -m tinyagent ask` when it is interrupted or its trace cannot be
printed: here, beside the gate (confirmation.py) whose tools it counts, not in serving/, so that `ask` needs
neither Starlette nor uvicorn.
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
MADE = {"en": "The run made these changes:", "zh": "这次运行做了以下更改："}  # said after an answer it did give
STOPPED = {"en": "The run was stopped before its answer.", "zh": "这次运行在给出回答之前被停下了。"}
CUT_SHORT = {"en": "(no result: the run stopped while it ran; it may have been made)",
             "zh": "（没有结果：运行在它执行时停下了；它可能已经完成）"}


def changes_made(trace: Trace, guards: Callable[[str], bool]) -> list[str]:
    """Each call of a tool `guards` names that came back without an error, as one line: "applyRefund
    {...} -> {...}"."""
    return [_shortened(one_line(f"{call.name} {call.input} -> {result.text}"), MAX_CHANGE_CHARS)
            for call, result in _calls_and_results(trace)
            if result is not None and guards(call.name) and not result.error]


def calls_cut_short(trace: Trace, guards: Callable[[str], bool]) -> list[str]:
    """Each call of a tool `guards` names that has no result in the trace, as one line: "applyRefund {...} ->
    (no result: the run stopped while it ran; it may have been made)", in the trace's language. For a run that
    ended inside a call (Ctrl-C or a `kill` in `ask`, raised while the refund's write waited or had just
    committed): the shop may hold its change while the trace does not. A run stopped between two events (the
    service's) has not started the calls it has no result for: it asks changes_made alone."""
    said = CUT_SHORT.get(trace.lang, CUT_SHORT["en"])
    room = MAX_CHANGE_CHARS - len(said) - len(" -> ")  # the call is shortened, never the words that it may be made
    return [f"{_shortened(one_line(f'{call.name} {call.input}'), room)} -> {said}"
            for call, result in _calls_and_results(trace) if result is None and guards(call.name)]


def _calls_and_results(trace: Trace) -> list[tuple[ToolCall, Observation | None]]:
    """Each call with its result, None when the trace has none. A round's calls are paired with its results in
    order, as both protocols write them; a round is one agent's (lesson 21's team: a specialist's round 1 sits
    inside the triage's round 1)."""
    paired = []
    for step, agent in dict.fromkeys((call.step, call.agent) for call in trace.of_type(ToolCall)):
        calls = [call for call in trace.of_type(ToolCall) if (call.step, call.agent) == (step, agent)]
        results = [o for o in trace.of_type(Observation)
                   if (o.step, o.agent) == (step, agent) and not isinstance(o, FormatObservation)]
        paired.extend(zip(calls, results + [None] * (len(calls) - len(results))))
    return paired


def _shortened(line: str, limit: int) -> str:
    return line if len(line) <= limit else line[: limit - 1] + "…"


def writes_in(tools: Any) -> Callable[[str], bool]:
    """For changes_made: a tool name is a change unless `tools` (a ToolRegistry) marks its tool `read_only`; a name
    it does not know counts, so an unknown tool that ran is never left unsaid (`ask` and lessons 17 and 21 count
    this way: they have no gate that names the tools)."""
    return lambda name: not getattr(tools.get(name), "read_only", False)


def canned(trace: Trace) -> bool:
    """Whether the run's answer is the loop's own words for a stop (its trace ends with `Stopped`), not the
    model's: a stop with a closing call ends with the model's `Final`, which reports what was done itself."""
    return isinstance(trace.end, Stopped)


def said_after(answer: str, changes: list[str], lang: str, heading: dict[str, str] = SAID) -> str:
    """`answer`, then the changes, one per line, under `heading` in `lang` ("en" or "zh"): SAID after a stop,
    MADE after an answer the run gave that may not say them."""
    if not changes:
        return answer
    listed = "\n".join(f"- {change}" for change in changes)
    return f"{answer}\n{heading.get(lang, heading['en'])}\n{listed}".strip()
