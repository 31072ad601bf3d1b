"""`ChatPanel`: talk to the agent, watch each answer's trace fill in, keep the conversation going.

    ChatPanel(agent)

Type a request and press Enter (or Send). Each earlier turn goes back to the model as a user message and the
agent's final answer (`history`), so "and where is it now?" can follow "refund order 88231".
The panel says which model is answering: the offline classroom model or a real one.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

import ipywidgets as widgets

from tinyagent.agent import ReActAgent
from tinyagent.llm_client import LOOPBACK_HOSTS
from tinyagent.trace import Trace
from tinyagent.widgets.cards import STATUS, WRAP, esc, plural, tint
from tinyagent.widgets.trace_viewer import TraceViewer, with_text


@dataclass(frozen=True)
class Turn:
    """One exchange: what the user asked, what the agent answered, and how."""

    question: str
    answer: str
    reason: str
    trace: Trace

    @property
    def ok(self) -> bool:
        return self.reason in ("final_answer", "fallback")


def describe_model(llm) -> str:
    """Which model answers, in words that do not change from machine to machine (no port)."""
    model = str(getattr(llm, "model", "") or "unknown")
    host = urlsplit(str(getattr(llm, "api_url", "") or "")).hostname
    if model.startswith("classroom"):
        if host is None or host in LOOPBACK_HOSTS:
            return f"the offline classroom model {model!r} (a teaching instrument, not a language model)"
        return f"the classroom model {model!r} at {host} (a teaching instrument, not a language model)"
    if host:
        return f"a real model: {model!r} at {host}"
    return f"the model {model!r}"


class ChatPanel(widgets.VBox):
    """A multi-turn chat with `agent`. State for tests: `.turns`, `.history()`, `.viewer`.
    `delay` pauses after each event while a trace fills in, so a class can follow it."""

    def __init__(self, agent: ReActAgent, *, delay: float = 0.0):
        self.agent = agent
        self.delay = delay
        self.turns: list[Turn] = []
        self.error: str | None = None
        self.model_label = describe_model(agent.llm)
        self.input = widgets.Text(
            placeholder="Type a request, e.g. 帮我看看订单 88231 的快递到哪了。",
            layout=widgets.Layout(flex="1 1 auto", width="auto"),
        )
        self.input.add_class("tinyagent-chat-input")
        self.send_button = widgets.Button(description="Send", icon="paper-plane", button_style="primary")
        self.new_button = widgets.Button(
            description="New conversation", icon="trash", layout=widgets.Layout(width="auto")
        )
        self.send_button.on_click(lambda _: self._safely(self.send))
        # Enter sends too. The box reports Enter as a "submit" message, heard here with the widget's own
        # on_msg: Text.on_submit does the same but is deprecated in ipywidgets 8, and its warning would
        # land in the notebook. (continuous_update=False would also send when the box merely loses focus.)
        self.input.on_msg(self._on_input_message)
        self.new_button.on_click(lambda _: self._safely(self.reset))
        self.transcript = widgets.HTML()
        self.transcript.add_class("tinyagent-transcript")
        self.status = widgets.HTML()
        self.viewer = TraceViewer()
        trace_fold = widgets.Accordion(
            children=[self.viewer], titles=("Trace of the last answer",), selected_index=0
        )
        super().__init__(
            [
                widgets.HTML(f'<div class="ta-model"><b>Answering:</b> {esc(self.model_label)}</div>'),
                self.transcript,
                widgets.HBox([self.input, self.send_button, self.new_button]),
                self.status,
                trace_fold,
            ]
        )
        self.add_class("tinyagent-chat-panel")
        self._refresh()

    def history(self) -> list[dict]:
        """The earlier turns as messages: user question, assistant answer, in order."""
        messages = []
        for turn in self.turns:
            messages.append({"role": "user", "content": turn.question})
            messages.append({"role": "assistant", "content": turn.answer})
        return messages

    def send(self, text: str | None = None) -> Turn | None:
        """Ask `text` (default: what is typed in the box); returns the new Turn, None if empty."""
        question = (self.input.value if text is None else text).strip()
        if not question:
            return None
        self.input.value = ""
        self.send_button.disabled = True
        self.status.value = f'<div class="ta-status">Thinking about: {esc(question)}</div>'
        try:
            self.viewer.clear()
            run = self.agent.start(question, self.history())
            self.viewer.watch(run, delay=self.delay)
            result = run.finish()
            turn = Turn(question, result.answer, result.reason, run.trace)
            self.turns.append(turn)
        finally:
            self.send_button.disabled = False
            self._refresh()
        return turn

    def _on_input_message(self, _widget, content: dict, _buffers) -> None:
        if content.get("event") == "submit":
            self._safely(self.send)

    def reset(self) -> None:
        """Forget the conversation."""
        self.turns = []
        self.viewer.clear()
        self._refresh()

    def _safely(self, action) -> None:
        """Button callbacks run in the kernel, where an exception would vanish: show it instead."""
        try:
            self.error = None
            action()
        except Exception as exc:  # noqa: BLE001 - shown to the learner, not swallowed
            self.error = f"{type(exc).__name__}: {exc}"
            self._refresh()

    # -- showing it ----------------------------------------------------------------------------
    def _refresh(self) -> None:
        bubbles = []
        for turn in self.turns:
            bubbles.append(bubble(turn.question, "#1565c0", "ta-turn-user", "You", right=True))
            colour = STATUS["final"] if turn.ok else STATUS["stopped"]
            who = f"Agent ({turn.reason}, {plural(turn.trace.rounds, 'round')})"
            bubbles.append(bubble(turn.answer, colour, "ta-turn-answer", who))
        self.transcript.value = "".join(bubbles) or (
            '<div style="opacity:0.7">No messages yet. Ask about order 88231, for example.</div>'
        )
        if self.error:
            self.status.value = (
                f'<div class="ta-chat-error" style="color:#c62828"><b>Error:</b> {esc(self.error)}</div>'
            )
        else:
            self.status.value = (
                f'<div class="ta-status" style="opacity:0.7">{plural(len(self.turns), "turn")}</div>'
            )

    def text(self) -> str:
        lines = [f"ChatPanel: answering with {self.model_label}", plural(len(self.turns), "turn")]
        for turn in self.turns:
            lines.append(f"[you] {turn.question}")
            lines.append(f"[agent: {turn.reason}, {plural(turn.trace.rounds, 'round')}] {turn.answer}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<ChatPanel {plural(len(self.turns), 'turn')}>"

    def _repr_mimebundle_(self, **kwargs):
        return with_text(super()._repr_mimebundle_(**kwargs), self.text())


def bubble(text: str, colour: str, css_class: str, who: str, right: bool = False) -> str:
    align = "margin-left:15%" if right else "margin-right:15%"
    return (
        f'<div class="ta-turn {css_class}" style="{align};margin-top:4px;margin-bottom:4px;padding:4px 10px;'
        f'border-radius:8px;border:1px solid {colour};background:{tint(colour)}">'
        f'<div style="color:{colour};font-size:85%;font-weight:600">{esc(who)}</div>'
        f'<div class="ta-turn-text" style="{WRAP}">{esc(text)}</div></div>'
    )
