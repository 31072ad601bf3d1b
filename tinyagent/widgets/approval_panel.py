"""`ApprovalPanel`: a run that stops before a side effect and waits for a click on Approve or Decline.

    shop = Shop(":memory:", clock=fixed_clock("2026-06-30T19:05:23"))   # the seed's day: 88231 may be refunded
    gate = refund_gate(shop)                                     # no `ask`: the run pauses at each request
    agent = ReActAgent(llm, shop_registry(shop), parts=[GatedAct(gate)])
    ApprovalPanel(agent.start("订单 88231 的扫地机不回充，帮我退款"))

Why not a callback that waits for the click: the agent's loop runs in the kernel, and the kernel handles
a click only between cells. A cell that waits for the click blocks the kernel, so the click is never
handled and the wait can only time out. So the panel drives the run step by step instead
(`AgentRun.advance()`): it runs until the gate yields an `ApprovalRequested` event, shows the request with
two buttons, and returns, which ends the cell. The click arrives later, as its own message to the kernel:
it answers the gate (`gate.answer`) and advances the run to the end or to the next request.

A click after the gate's time limit counts as no answer: the tool does not run. A run that a stop ends (the step
cap) after a refund was approved says the refund in the status line, as a Session does (memory/run_changes.py).
State for tests and for a notebook under nbval: `.waiting` (the request shown, or None), `.decisions`, `.viewer`,
`.text()`.
"""

from __future__ import annotations

import ipywidgets as widgets

from tinyagent.agent import AgentRun
from tinyagent.memory.run_changes import changes_made, said_after_stop
from tinyagent.toolkit.confirmation import ERROR, ApprovalRequested, Decision, gate_of
from tinyagent.widgets.cards import STATUS, esc, tint
from tinyagent.widgets.trace_viewer import TraceViewer, with_text


class ApprovalPanel(widgets.VBox):
    """Drive `run` (whose agent has a ConfirmationGate without `ask`), pausing at each approval request."""

    def __init__(self, run: AgentRun):
        gate = gate_of(run)
        if gate is None:
            raise ValueError("ApprovalPanel needs a run of an agent with parts=[GatedAct(ConfirmationGate(...))]")
        if gate.ask is not None:
            raise ValueError("this gate asks its own callback; ApprovalPanel needs a gate without ask=, so "
                             "that the run pauses for the buttons")
        self.run = run
        self.gate = gate
        self.waiting: ApprovalRequested | None = None
        self.decisions: list[Decision] = []
        self.error: str | None = None
        self.viewer = TraceViewer(lang=run.lang)
        self.request_box = widgets.HTML()
        self.request_box.add_class("tinyagent-approval-request")
        self.approve_button = widgets.Button(description="Approve", icon="check", button_style="success")
        self.decline_button = widgets.Button(description="Decline", icon="times", button_style="danger")
        self.approve_button.on_click(lambda _: self._safely(self.approve))
        self.decline_button.on_click(lambda _: self._safely(self.decline))
        self.status = widgets.HTML()
        super().__init__([self.request_box, widgets.HBox([self.approve_button, self.decline_button]),
                          self.status, self.viewer])
        self.add_class("tinyagent-approval-panel")
        self._safely(self.resume)

    # -- driving the run -----------------------------------------------------------------------------
    def resume(self) -> None:
        """Advance the run until the gate asks for approval, or the run ends."""
        self.waiting = None
        while (event := self.run.advance()) is not None:
            self.viewer.add(event)
            if isinstance(event, ApprovalRequested):
                self.waiting = event
                break

    def approve(self) -> Decision:
        """What a click on Approve does: answer yes, then go on."""
        return self._answer(True)

    def decline(self) -> Decision:
        """What a click on Decline does: answer no, then go on."""
        return self._answer(False)

    def _answer(self, yes: bool) -> Decision:
        if self.waiting is None:
            raise RuntimeError("nothing is waiting for approval")
        if self.ended_unanswered() is not None:
            raise RuntimeError("the run ended before an answer: nothing waits for approval any more")
        decision = self.gate.answer(self.waiting.request_id, yes, by=f"a click on {'Approve' if yes else 'Decline'}")
        self.decisions.append(decision)
        self.resume()
        return decision

    def _safely(self, action) -> None:
        """Button callbacks run in the kernel, where an exception would vanish: show it instead."""
        self.approve_button.disabled = self.decline_button.disabled = True
        try:
            self.error = None
            action()
        except Exception as exc:  # noqa: BLE001 - shown to the learner, not swallowed
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self._refresh()

    def ended_unanswered(self) -> Decision | None:
        """The error that closed the waiting request when its run was closed (`run.close()`), or None: no answer
        can count any more."""
        if self.waiting is None:
            return None
        for request, decision in reversed(self.gate.log):
            if request.id == self.waiting.request_id:
                return decision if decision.outcome == ERROR else None
        return None

    # -- showing it ----------------------------------------------------------------------------------
    def status_text(self) -> str:
        ended = self.ended_unanswered()
        if ended is not None:
            return (f"the run ended before an answer: {self.waiting.tool} was not run "
                    f"({ended.detail or ended.by}); nothing waits for approval")
        if self.waiting is not None:
            return (f"waiting for approval: {self.waiting.tool}: {self.waiting.summary} (a yes after "
                    f"{self.waiting.timeout_s:g} s no longer counts)")
        if self.run.done:
            result = self.run.finish()  # the run has ended: this only reads how
            ended = f"the run has ended ({result.reason})"
            # A stop's answer (the loop's canned sentence, or the model's best answer at a limit) may not say the
            # refund a click approved a round before; said here, as a Session and the service say it.
            return ended if result.ok else said_after_stop(ended, changes_made(result.trace, self.gate.guards),
                                                           result.trace)
        return "the run is stopped between steps"

    def _refresh(self) -> None:
        waiting = self.waiting is not None and self.ended_unanswered() is None
        self.approve_button.disabled = self.decline_button.disabled = not waiting
        colour = STATUS["waiting_approval"]
        if waiting:
            self.request_box.value = (
                f'<div style="border-left:4px solid {colour};background:{tint(colour)};padding:4px 8px;'
                f'overflow-wrap:anywhere">'
                f"<b>{esc(self.waiting.tool)} is waiting for your approval</b><br>{esc(self.waiting.summary)}"
                f'<br><span style="opacity:0.75">Nothing has been done yet. A yes after '
                f"{self.waiting.timeout_s:g} s no longer counts.</span></div>"
            )
        else:
            self.request_box.value = ""
        error = f'<div style="color:#c62828"><b>Error:</b> {esc(self.error)}</div>' if self.error else ""
        self.status.value = f'<div class="ta-status" style="white-space:pre-line">{esc(self.status_text())}</div>{error}'

    def text(self) -> str:
        self._refresh()  # shown again after the run was closed: the buttons say so too
        lines = [f"ApprovalPanel: {self.status_text()}"]
        lines += [f"decision: {d.outcome}, by {d.by}" for d in self.decisions]
        if self.error:
            lines.append(f"error: {self.error}")
        if self.viewer.trace.events:
            lines.append(self.viewer.trace.format())
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<ApprovalPanel {self.status_text()}>"

    def _repr_mimebundle_(self, **kwargs):
        return with_text(super()._repr_mimebundle_(**kwargs), self.text())
