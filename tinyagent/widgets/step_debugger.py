"""`StepDebugger`: run the loop one call at a time and look at the message list in between.

    StepDebugger(agent, "我上周买的扫地机不回充了，修不好我想退。订单号 88231。")

Each "Next step" does exactly one thing the agent depends on the outside world for:

    a model step   call the model, parse its reply, and stop just before the tool runs
                   (the Action is in the message list; its Observation is not there yet)
    a tool step    run the tool and append its Observation to the message list

so a learner can stop between an Action and its Observation and read what the model will see. In function
calling (lesson 09) one reply may ask for several tools: its model step ends once every call is shown, and its
tool step runs them all and appends every result. When a stop rule fires (lesson 10), the step ends at its
LimitReached: a rule that fires before a model call (the step cap, the budget, the time, no progress) takes a step
of its own with no call, and the next step adds the closing request to the message list and makes the closing call.
With a confirmation gate that has no `ask` (lesson 15), a tool step pauses where the gate asks for approval:
"Approve" or "Decline" answers it and finishes the step (waiting in "Next step" could only time out).
"Run to end" finishes the run (or runs to the next approval); "Reset" starts the same question again.

A person can step into the trace (editable_trace.py): pick a round, then "Edit this Thought" replaces its reply with
the text in the box (the round's reply, as the model wrote it, until you change it), or "Retry this tool" runs its
Action again (with the input in the box). Either way the run goes on from there as a new run of the loop: the
rounds before stay, the edited round is marked as the person's, and "Next step" carries on from it.
"""

from __future__ import annotations

import ipywidgets as widgets

from tinyagent.agent import AgentRun, ReActAgent
from tinyagent.editable_trace import PERSON, PersonEdit, check_edit, edit_thought, replies, retry_tool
from tinyagent.events import Event, Final, LlmCall, Observation, Parsed, Stopped, ToolCall
from tinyagent.parser import parse_step
from tinyagent.robustness.stop_rules import LimitReached
from tinyagent.robustness.tolerant_parser import FormatObservation
from tinyagent.toolkit.confirmation import ApprovalRequested, gate_of
from tinyagent.widgets.cards import esc, messages_html, messages_text, plural
from tinyagent.widgets.trace_viewer import TraceViewer, with_text

# The events a step ends on: each one follows exactly one model call or tool call, but a LimitReached: it follows the
# reply that fired an after-reply rule (cut off, a repeated action), or, for a rule that fires before a model call,
# stands alone as a step with no call. The closing call is the next step.
STEP_ENDS = (ToolCall, Observation, Final, Stopped, LimitReached)


class StepDebugger(widgets.VBox):
    """Step through `agent` answering `question` (optionally after `history` messages).

    State for tests: `.run` (the AgentRun), `.step_count`, `.model_calls`, `.tool_calls`,
    `.last_events` (what the last step produced), `.viewer.cards`, `.run.messages`, `.edits` (the PersonEdit
    events of the edits made since the last reset), `.round_picker`, `.reply_box`, `.input_box`, `.waiting` (an
    ApprovalRequested the run waits on, or None). `.model_calls` and `.tool_calls` count every call made since the
    last reset, those of rounds an edit replaced too (`.replaced_calls` counts those).
    """

    def __init__(self, agent: ReActAgent, question: str, *, history: list[dict] | None = None):
        self.agent = agent
        self.question = question
        self.history = history
        self.error: str | None = None
        self.viewer = TraceViewer(lang=agent.language_for(question))
        self.next_button = widgets.Button(
            description="Next step", icon="step-forward", button_style="primary"
        )
        self.run_button = widgets.Button(description="Run to end", icon="fast-forward")
        self.reset_button = widgets.Button(description="Reset", icon="undo")
        self.approve_button = widgets.Button(description="Approve", icon="check", button_style="success")
        self.decline_button = widgets.Button(description="Decline", icon="times", button_style="danger")
        self.approve_button.on_click(lambda _: self._safely(self.approve))
        self.decline_button.on_click(lambda _: self._safely(self.decline))
        self.next_button.on_click(lambda _: self._safely(self.step))
        self.run_button.on_click(lambda _: self._safely(self.run_to_end))
        self.reset_button.on_click(lambda _: self._safely(self.reset))
        # A person's hand in the trace: which round, its reply (for an edit), its Action Input (for a retry).
        self.round_picker = widgets.Dropdown(description="Round", options=[], layout=widgets.Layout(width="150px"))
        self.reply_box = widgets.Textarea(placeholder="the round's reply: Thought, Action, Action Input",
                                          layout=widgets.Layout(width="100%", height="80px"))
        self.input_box = widgets.Text(description="Tool input", placeholder="the Action Input to run again")
        self.edit_button = widgets.Button(description="Edit this Thought", icon="pencil", layout=widgets.Layout(width="auto"),
                                          tooltip="the reply in the box replaces the model's; the run goes on from it")
        self.retry_button = widgets.Button(description="Retry this tool", icon="repeat", layout=widgets.Layout(width="auto"),
                                           tooltip="run the round's tool again with the input in the box")
        self._filled: tuple = (None, None)
        self.round_picker.observe(lambda change: self._fill_edit_boxes(), names="value")
        self.edit_button.on_click(lambda _: self._safely(
            lambda: self.edit_thought(self.round_picker.value, self.reply_box.value)))
        self.retry_button.on_click(lambda _: self._safely(
            lambda: self.retry_tool(self.round_picker.value, self.input_box.value)))
        edit_box = widgets.VBox([
            widgets.HTML("<b>Step in</b> (the edited round is recorded as yours, not the model's)"),
            widgets.HBox([self.round_picker, self.input_box, self.retry_button]),
            self.reply_box,
            self.edit_button,
        ])
        self.header = widgets.HTML(f'<div class="ta-question"><b>Question:</b> {esc(question)}</div>')
        self.status = widgets.HTML()
        self.messages_view = widgets.HTML()
        self.messages_view.add_class("tinyagent-messages")
        messages_box = widgets.VBox(
            [
                widgets.HTML("<b>The message list now</b> (what the model reads on its next call)"),
                self.messages_view,
            ],
            layout=widgets.Layout(
                max_height="420px", overflow="auto", border="1px solid #ccc", padding="4px"
            ),
        )
        super().__init__(
            [
                self.header,
                widgets.HBox([self.next_button, self.run_button, self.reset_button, self.approve_button,
                              self.decline_button]),
                self.status,
                self.viewer,
                edit_box,
                messages_box,
            ]
        )
        self.add_class("tinyagent-step-debugger")
        self.reset()

    # -- driving the run -----------------------------------------------------------------------
    def reset(self) -> None:
        """Start over: a fresh run of the same question, nothing executed yet."""
        self.run: AgentRun = self.agent.start(self.question, self.history)
        self.step_count = 0
        self.model_calls = 0
        self.tool_calls = 0
        self.last_events: list[Event] = []
        self.edits: list[PersonEdit] = []
        self.replaced_calls = (0, 0)  # model calls and tool calls of rounds an edit replaced
        self.waiting: ApprovalRequested | None = None
        self._new_from = len(self.run.messages)
        self.viewer.clear()
        self._refresh()

    # -- a person steps in -----------------------------------------------------------------------
    def edit_thought(self, step: int, reply: str) -> list[Event]:
        """Round `step`'s reply becomes `reply` (the person's), and the run goes on from it: this takes the
        person's round up to its tool call, as "Next step" would. Returns the events of that step."""
        return self._continue(edit_thought(self.agent, self.run.trace, step, reply))

    def retry_tool(self, step: int, tool_input: str | None = None) -> list[Event]:
        """Round `step`'s tool runs again (with `tool_input` when given and not blank), and the run goes on
        from it: this takes the retried round up to its tool call. Returns the events of that step."""
        tool_input = tool_input if tool_input and tool_input.strip() else None
        return self._continue(retry_tool(self.agent, self.run.trace, step, tool_input))

    def _continue(self, run: AgentRun) -> list[Event]:
        self.run.close()  # the old run stops where it is: nothing of it happens later
        self.waiting = None
        kept = run.trace.events  # the rounds before the edited one: their calls still count as the trace's
        self.replaced_calls = (self.model_calls - _model_calls(kept), self.tool_calls - _tool_results(kept))
        self.run = run
        self.viewer.clear()
        for event in run.trace.events:
            self.viewer.add(event)
        events = self.step()
        self.edits += [e for e in events if isinstance(e, PersonEdit)]
        return events

    def _fill_edit_boxes(self) -> None:
        step = self.round_picker.value
        reply = replies(self.run.trace).get(step, "") if step else ""
        self._filled = (step, reply or None)
        self.reply_box.value = reply
        action = parse_step(reply).action if reply else None
        self.input_box.value = action.tool_input if action else ""
        self._enable_edit_buttons()

    def _enable_edit_buttons(self) -> None:
        step = self.round_picker.value
        self.edit_button.disabled = step is None or not _can_edit(self.run.trace, step)
        self.retry_button.disabled = step is None or not _can_retry(self.run.trace, step)

    def step(self) -> list[Event]:
        """One model call or one tool call; returns the events it produced ([] when done). While a request for
        approval waits, it does nothing: `approve()` or `decline()` answers it and finishes the tool step."""
        if self.run.done or self.waiting is not None:
            return []
        before = len(self.run.messages)
        events: list[Event] = []
        gate = gate_of(self.run)
        while (event := self.run.advance()) is not None:
            events.append(event)
            self.viewer.add(event)
            if isinstance(event, ApprovalRequested) and gate is not None and gate.ask is None:
                self.waiting = event  # advancing now would block the kernel until the request times out
                break
            if self._ends_step(event):
                break
        self.step_count += 1
        self.model_calls += _model_calls(events)
        self.tool_calls += _tool_results(events)
        self.last_events = events
        self._new_from = before
        self._refresh()
        return events

    def approve(self) -> list[Event]:
        """What a click on Approve does: answer the waiting request yes, then finish the tool step."""
        return self._answer(True)

    def decline(self) -> list[Event]:
        """What a click on Decline does: answer the waiting request no, then finish the tool step."""
        return self._answer(False)

    def _answer(self, yes: bool) -> list[Event]:
        if self.waiting is None:
            raise RuntimeError("nothing is waiting for approval")
        gate_of(self.run).answer(self.waiting.request_id, yes, by=f"a click on {'Approve' if yes else 'Decline'}")
        self.waiting = None
        return self.step()

    def _ends_step(self, event: Event) -> bool:
        """Whether a step stops after `event`: a model step once every call of the reply is shown, a tool step
        once every call of the round has its result (one each in text ReAct)."""
        if not isinstance(event, STEP_ENDS):
            return False
        if not isinstance(event, (ToolCall, Observation)):
            return True
        this_round = [e for e in self.run.trace.events if e.step == event.step]
        asked = sum(isinstance(e, Parsed) and e.tool_name is not None for e in this_round)
        calls = sum(isinstance(e, ToolCall) for e in this_round)
        if isinstance(event, ToolCall):
            return calls >= asked
        return sum(isinstance(e, Observation) for e in this_round) >= calls

    def run_to_end(self) -> None:
        """Step until the run ends, or until a request waits for approval."""
        while not self.run.done and self.waiting is None:
            self.step()

    @property
    def done(self) -> bool:
        return self.run.done

    def next_action(self) -> str:
        """What "Next step" will do, in words."""
        if self.run.done:
            return f"nothing: the run has ended ({self.run.trace.reason})"
        if self.waiting is not None:
            return (f"{self.waiting.tool} waits for a person's approval ({self.waiting.summary}): click Approve or "
                    f"Decline (a yes after {self.waiting.timeout_s:g} s no longer counts)")
        events = self.run.trace.events
        if events and isinstance(events[-1], LimitReached):
            return f"call the model once more for a closing answer (a stop rule fired: {events[-1].reason})"
        if events and isinstance(events[-1], ToolCall):
            calls = [e for e in events if isinstance(e, ToolCall) and e.step == events[-1].step]
            if len(calls) > 1:
                return "run the tools " + ", ".join(f"{call.name}({call.input})" for call in calls)
            return f"run the tool {events[-1].name}({events[-1].input})"
        if events and events[-1].step >= self.agent.max_steps:
            return f"stop: the step cap ({self.agent.max_steps}) is reached"
        return "call the model"

    def _safely(self, action) -> None:
        """Button callbacks run in the kernel, where an exception would vanish: show it instead."""
        buttons = (self.next_button, self.run_button, self.reset_button, self.edit_button, self.retry_button,
                   self.approve_button, self.decline_button)
        for button in buttons:
            button.disabled = True
        try:
            self.error = None
            action()
        except Exception as exc:  # noqa: BLE001 - shown to the learner, not swallowed
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.reset_button.disabled = False
            self._refresh()

    # -- showing it ----------------------------------------------------------------------------
    def status_text(self) -> str:
        model, tools = self.replaced_calls
        replaced = (f"; {plural(model, 'model call')} and {plural(tools, 'tool call')} of them in rounds an edit "
                    "replaced" if model or tools else "")
        return (
            f"steps: {self.step_count} ({plural(self.model_calls, 'model call')}, "
            f"{plural(self.tool_calls, 'tool call')}{replaced}); "
            f"next: {self.next_action()}"
        )

    def _refresh(self) -> None:
        done = self.run.done
        waiting = self.waiting is not None
        self.next_button.disabled = self.run_button.disabled = done or waiting
        self.approve_button.disabled = self.decline_button.disabled = not waiting
        self.approve_button.layout.display = self.decline_button.layout.display = None if waiting else "none"
        error = (
            f'<div class="ta-debugger-error" style="color:#c62828"><b>Error:</b> {esc(self.error)}</div>'
            if self.error
            else ""
        )
        self.status.value = f'<div class="ta-status">{esc(self.status_text())}</div>{error}'
        self._refresh_edit_boxes()
        new_from = self._new_from if self.step_count else None
        self.messages_view.value = messages_html(self.run.messages, new_from=new_from)

    def _refresh_edit_boxes(self) -> None:
        rounds = sorted(replies(self.run.trace))
        if list(self.round_picker.options) != rounds:
            keep = self.round_picker.value
            self.round_picker.options = rounds
            self.round_picker.value = keep if keep in rounds else (rounds[-1] if rounds else None)
        step = self.round_picker.value
        if self._filled != (step, replies(self.run.trace).get(step)):  # the boxes keep what a person typed
            self._fill_edit_boxes()
        self._enable_edit_buttons()

    def text(self) -> str:
        lines = [f"StepDebugger: {self.question}", self.status_text()]
        if self.run.trace.events:
            lines.append(self.run.trace.format(usage=True))
        lines.append(f"--- message list ({len(self.run.messages)} messages) ---")
        lines.append(messages_text(self.run.messages))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<StepDebugger {self.status_text()}>"

    def _repr_mimebundle_(self, **kwargs):
        return with_text(super()._repr_mimebundle_(**kwargs), self.text())


def _model_calls(events: list[Event]) -> int:
    """The model calls `events` show: each LlmCall but a person's, and a call that failed (its Stopped)."""
    made = sum(isinstance(e, LlmCall) and e.model != PERSON for e in events)
    return made + sum(isinstance(e, Stopped) and e.reason == "llm_error" for e in events)


def _tool_results(events: list[Event]) -> int:
    """The tool calls `events` show a result of (a format reminder is no tool call: lesson 11)."""
    return sum(isinstance(e, Observation) and not isinstance(e, FormatObservation) for e in events)


def _can_edit(trace, step: int) -> bool:
    """Whether check_edit takes an edited reply for round `step` (a round of native tool calls has no reply to edit)."""
    try:
        check_edit(trace, step, reply="Thought: a person's reply")
    except ValueError:
        return False
    return True


def _can_retry(trace, step: int) -> bool:
    try:
        check_edit(trace, step, retry=True)
    except ValueError:
        return False
    return True
