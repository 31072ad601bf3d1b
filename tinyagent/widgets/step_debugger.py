"""`StepDebugger`: run the loop one call at a time and look at the message list in between.

    StepDebugger(agent, "我上周买的扫地机不回充了，修不好我想退。订单号 88231。")

Each "Next step" does exactly one thing the agent depends on the outside world for:

    a model step   call the model, parse its reply, and stop just before the tool runs
                   (the Action is in the message list; its Observation is not there yet)
    a tool step    run the tool and append its Observation to the message list

so a learner can stop between an Action and its Observation and read what the model will see. A reply may ask for
several tools: its model step ends once every call is shown, and its tool step runs them all and appends every
result. "Run to end" finishes the run; "Reset" starts the same question again.

An event of a later lesson shows in its card and the step goes on past it, unless the lesson registers a `StepPart`
for its kind in `STEP_PARTS`, from a module of its own in this folder (this package's `__init__` imports those
modules): such a part may end a step at its event, say what "Next step" will do after it, or pause the run there for
a person, with buttons of its own that answer and finish the step.

A person can step into the trace (editable_trace.py): pick a round, then "Edit this Thought" replaces its reply with
the text in the box (the round's reply, as the model wrote it, until you change it), or "Retry this tool" runs its
Action again (with the input in the box). Either way the run goes on from there as a new run of the loop: the
rounds before stay, the edited round is marked as the person's, and "Next step" carries on from it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import ipywidgets as widgets

from tinyagent.agent import AgentRun, ReActAgent
from tinyagent.editable_trace import PERSON, PersonEdit, check_edit, edit_thought, replies, retry_tool
from tinyagent.events import Event, Final, LlmCall, Observation, Parsed, Stopped, ToolCall
from tinyagent.parser import parse_step
from tinyagent.widgets.cards import esc, messages_html, messages_text, plural
from tinyagent.widgets.trace_viewer import TraceViewer, with_text


class StepPart:
    """How a kind of event that lesson 06 does not know takes part in stepping. This one, the part of every kind
    that registers none, does nothing: the event shows in its card and the step goes on.

    A later lesson registers a part for a kind of its own with `STEP_PARTS[kind] = part`:
    `ends_step(event)`       whether a step stops after the event, as it stops after a tool call
    `pauses(run, event)`     whether the run waits at the event for a person: "Next step" does nothing until one of
                             the part's buttons answers and calls `debugger.resume()`
    `next_action(debugger, event)`  what "Next step" will do, in words, while the run waits at the event or when it
                             is the last event of the run (None: what lesson 06 would say)
    `buttons(debugger)`      the buttons the part adds beside "Next step" (asked once, with `debugger.agent` set),
                             each with what a click on it does; they show only while the run waits at an event of
                             this part
    """

    def ends_step(self, event: Event) -> bool:
        return False

    def pauses(self, run: AgentRun, event: Event) -> bool:
        return False

    def next_action(self, debugger: StepDebugger, event: Event) -> str | None:
        return None

    def buttons(self, debugger: StepDebugger) -> list[tuple[widgets.Button, Callable[[], object]]]:
        return []


NO_PART = StepPart()
STEP_PARTS: dict[type[Event], StepPart] = {}  # kind -> its part, filled by the modules of the lessons that add kinds


def step_part(event: Event) -> StepPart:
    return STEP_PARTS.get(type(event), NO_PART)


class StepDebugger(widgets.VBox):
    """Step through `agent` answering `question` (optionally after `history` messages).

    State for tests: `.run` (the AgentRun), `.step_count`, `.model_calls`, `.tool_calls`,
    `.last_events` (what the last step produced), `.viewer.cards`, `.run.messages`, `.edits` (the PersonEdit
    events of the edits made since the last reset), `.round_picker`, `.reply_box`, `.input_box`, `.waiting` (the
    event a step part paused the run at, or None), `.part_buttons` (the step parts' buttons, with their parts).
    `.model_calls` and `.tool_calls` count every call made since the last reset, those of rounds an edit replaced
    too (`.replaced_calls` counts those).
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
        self.part_buttons: list[tuple[StepPart, widgets.Button]] = []
        for part in dict.fromkeys(STEP_PARTS.values()):  # each part once, though it may serve several kinds
            for button, action in part.buttons(self):
                button.on_click(lambda _, action=action: self._safely(action))
                self.part_buttons.append((part, button))
        super().__init__(
            [
                self.header,
                widgets.HBox([self.next_button, self.run_button, self.reset_button,
                              *(button for _, button in self.part_buttons)]),
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
        self.waiting: Event | None = None
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
        """One model call or one tool call; returns the events it produced ([] when done). While the run waits at
        a step part's event, it does nothing: one of the part's buttons answers and finishes the step."""
        if self.run.done or self.waiting is not None:
            return []
        before = len(self.run.messages)
        results_before = _tool_results(self.run.trace.events)
        events: list[Event] = []
        while (event := self.run.advance()) is not None:
            events.append(event)
            self.viewer.add(event)
            if step_part(event).pauses(self.run, event):
                self.waiting = event
                break
            if self._ends_step(event):
                break
        self.step_count += 1
        self.model_calls += _model_calls(events)
        self.tool_calls += _tool_results(self.run.trace.events) - results_before
        self.last_events = events
        self._new_from = before
        self._refresh()
        return events

    def resume(self) -> list[Event]:
        """The run goes on from the event it waited at (a step part's button answered it): the rest of the step."""
        if self.waiting is None:
            raise RuntimeError("the run is not waiting at anything")
        self.waiting = None
        return self.step()

    def _ends_step(self, event: Event) -> bool:
        """Whether a step stops after `event`: a model step once every call of the reply is shown, a tool step
        once every call of the round has its result (one each in text ReAct), and at the run's end."""
        if isinstance(event, (Final, Stopped)):
            return True
        if not isinstance(event, (ToolCall, Observation)):
            return step_part(event).ends_step(event)
        this_round = [e for e in self.run.trace.events if e.step == event.step]
        asked = sum(isinstance(e, Parsed) and e.tool_name is not None for e in this_round)
        calls = sum(isinstance(e, ToolCall) for e in this_round)
        if isinstance(event, ToolCall):
            return calls >= asked
        return sum(isinstance(e, Observation) for e in this_round) >= calls

    def run_to_end(self) -> None:
        """Step until the run ends, or until it waits at a step part's event."""
        while not self.run.done and self.waiting is None:
            self.step()

    @property
    def done(self) -> bool:
        return self.run.done

    def next_action(self) -> str:
        """What "Next step" will do, in words."""
        if self.run.done:
            return f"nothing: the run has ended ({self.run.trace.reason})"
        events = self.run.trace.events
        last = self.waiting or (events[-1] if events else None)
        if last is not None and (said := step_part(last).next_action(self, last)) is not None:
            return said
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
                   *(button for _, button in self.part_buttons))
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
        for part, button in self.part_buttons:  # a part's buttons show while the run waits at one of its events
            mine = waiting and step_part(self.waiting) is part
            button.disabled = not mine
            button.layout.display = None if mine else "none"
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
    """The tool calls `events` (a whole trace, or its start) show a result of: each round's results, up to the number
    of its tool calls. An Observation that answers no call (a note to the model about its reply) ran no tool."""
    calls = Counter((e.step, e.agent) for e in events if isinstance(e, ToolCall))
    results = Counter((e.step, e.agent) for e in events if isinstance(e, Observation))
    return sum(min(n, calls[round_]) for round_, n in results.items())


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
