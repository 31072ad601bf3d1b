"""Lesson 15's part of the step debugger: with a confirmation gate that has no `ask`, a tool step stops at the gate's
ApprovalRequested, and "Approve" or "Decline" answers it and finishes the step.

Why stop there: advancing the run past the request waits for the answer, and a click reaches the kernel only after
the cell (or the click's handler) ends, so "Next step" could only wait until the request timed out. The buttons are
added only for an agent whose gate waits for clicks, and show only while a request waits.
"""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as widgets

from tinyagent.agent import AgentRun
from tinyagent.events import Event
from tinyagent.toolkit.confirmation import ApprovalRequested, gate_of
from tinyagent.widgets.step_debugger import STEP_PARTS, StepDebugger, StepPart


class ApprovalStep(StepPart):
    def pauses(self, run: AgentRun, event: ApprovalRequested) -> bool:
        gate = gate_of(run)
        return gate is not None and gate.ask is None

    def next_action(self, debugger: StepDebugger, event: ApprovalRequested) -> str | None:
        if debugger.waiting is not event:
            return None
        return (f"{event.tool} waits for a person's approval ({event.summary}): click Approve or Decline "
                f"(a yes after {event.timeout_s:g} s no longer counts)")

    def buttons(self, debugger: StepDebugger) -> list[tuple[widgets.Button, Callable[[], object]]]:
        gate = gate_of(debugger.agent)  # the agent's parts are those each of its runs starts from
        if gate is None or gate.ask is not None:
            return []  # no request of this agent ever waits for a click
        approve = widgets.Button(description="Approve", icon="check", button_style="success")
        decline = widgets.Button(description="Decline", icon="times", button_style="danger")
        return [(approve, lambda: answer(debugger, True)), (decline, lambda: answer(debugger, False))]


def answer(debugger: StepDebugger, yes: bool) -> list[Event]:
    """What a click on Approve (yes) or Decline does: answer the waiting request, then finish the tool step."""
    if debugger.waiting is None:
        raise RuntimeError("nothing is waiting for approval")
    gate_of(debugger.run).answer(debugger.waiting.request_id, yes, by=f"a click on {'Approve' if yes else 'Decline'}")
    return debugger.resume()


STEP_PARTS[ApprovalRequested] = ApprovalStep()
