"""What a run changed before it ended without an answer of its own: said to the person who asked, and kept.

The service's promise is that no answer hides an effect. A run ends with the model's answer, which reports
what it did, or it ends another way after a person's yes was given and the refund written: the model failed
on its next call (the answer is then the loop's canned MODEL_UNAVAILABLE, "Sorry, I cannot reach the language model ..."), the service was told
to stop, the client went away, the run took too long. Each of those must still say what was done:

    changes_made(trace, guards)     the calls of guarded tools (the ones a person must approve: a refund, a
                                    message) that ran without an error, with what each returned; a result that
                                    says it changed nothing (a repeated refund, "duplicate": true) is not one
    calls_cut_short(trace, guards)  the calls of guarded tools with no result, for a run stopped inside one
                                    (Ctrl-C or a `kill` in `ask`): each may have made its change
    writes_in(tools)                the guards when no gate names them: every tool of a registry not `read_only`
    said_after(answer, changes)     the answer with those changes after it, in the run's language

A change is counted from the trace, where the tool's own result says it happened; the shop is not read again. The
trace-reading core (pairing each call with its result, the line of one change, `writes_in`, `canned`, `said_after`
and SAID) lives in lesson 12's tinyagent/memory/run_changes.py, where a Session uses it to keep a stopped run's
changes in its turn; this module adds what only a stop from outside needs, and keeps every name importable here. A
call cut short has no result to say so, and is said as one that may have been made: a refund's write can commit
just before the stop. Lesson 19's service uses the module (its runs stop between two events, so a call without a
result never started there), and so does `python -m tinyagent ask` when it is interrupted or its trace cannot be
printed: here, beside the gate (confirmation.py) whose tools it counts, not in serving/, so that `ask` needs
neither Starlette nor uvicorn.
"""

from __future__ import annotations

from collections.abc import Callable

from tinyagent.memory.run_changes import (
    MADE,
    MAX_CHANGE_CHARS,
    SAID,
    calls_and_results,
    canned,
    changes_made,
    said_after,
    said_after_stop,
    shortened,
    writes_in,
)
from tinyagent.safe_text import one_line
from tinyagent.trace import Trace

__all__ = ["CUT_SHORT", "MADE", "MAX_CHANGE_CHARS", "SAID", "STOPPED", "calls_cut_short", "canned", "changes_made",
           "said_after", "said_after_stop", "writes_in"]

STOPPED = {"en": "The run was stopped before its answer.", "zh": "这次运行在给出回答之前被停下了。"}
CUT_SHORT = {"en": "(no result: the run stopped while it ran; it may have been made)",
             "zh": "（没有结果：运行在它执行时停下了；它可能已经完成）"}


def calls_cut_short(trace: Trace, guards: Callable[[str], bool]) -> list[str]:
    """Each call of a tool `guards` names that has no result in the trace, as one line: "applyRefund {...} ->
    (no result: the run stopped while it ran; it may have been made)", in the trace's language. For a run that
    ended inside a call (Ctrl-C or a `kill` in `ask`, raised while the refund's write waited or had just
    committed): the shop may hold its change while the trace does not. A run stopped between two events (the
    service's) has not started the calls it has no result for: it asks changes_made alone."""
    said = CUT_SHORT.get(trace.lang, CUT_SHORT["en"])
    room = MAX_CHANGE_CHARS - len(said) - len(" -> ")  # the call is shortened, never the words that it may be made
    return [f"{shortened(one_line(f'{call.name} {call.input}'), room)} -> {said}"
            for call, result in calls_and_results(trace) if result is None and guards(call.name)]

