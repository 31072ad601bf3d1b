"""`TraceViewer`: a run as cards, one per round, that fill in while the agent works.

    viewer = TraceViewer(result.trace)          # a finished run
    viewer = TraceViewer(); display(viewer)
    viewer.watch(agent.start(question))         # live: each event appears as it happens

Each card shows the thought, the tool call, the observation and the answer, with the tokens and
latency of its model call; the exact messages sent and the raw reply sit behind a fold. Watching a
streaming agent (`parts=[StreamedSend()]`, lesson 14), a card shows its Thought growing while the
model types it.
In a notebook file (and under nbval) the viewer saves as its text: the trace's `format()`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import ipywidgets as widgets

from tinyagent.events import Event
from tinyagent.protocols.streaming import ReplyDelta
from tinyagent.trace import Trace
from tinyagent.widgets.cards import LABELS, Card, apply_event, esc, messages_html, plural, pre_html


class CardView(widgets.VBox):
    """The widget for one card: the round in HTML, and the raw exchange behind two folds (the messages
    sent, the raw reply). Each fold is an Accordion of its own: in one Accordion, opening a fold would
    close the other, and a learner comparing what went in with what came out needs both open."""

    def __init__(self, card: Card, lang: str):
        self.card = card
        self.lang = lang
        self.body = widgets.HTML()
        self.folds = (widgets.Accordion(selected_index=None), widgets.Accordion(selected_index=None))
        self.raw = widgets.VBox(list(self.folds), layout=widgets.Layout(margin="0 0 0 12px"))
        super().__init__([self.body], layout=widgets.Layout(margin="4px 0"))
        self.add_class("tinyagent-card")
        self.refresh()

    def refresh(self) -> None:
        self.body.value = self.card.html(self.lang)
        call = self.card.llm
        if call is None or self.raw in self.children:
            return
        labels = LABELS[self.lang]
        reply = call.text
        if call.client_cut:
            reply += "\n\n(the server ignored the stop sequence; the client cut the text here)"
        contents = (widgets.HTML(messages_html(call.messages)), widgets.HTML(pre_html(reply)))
        titles = (labels["messages"].format(n=len(call.messages)), labels["raw"])
        for fold, content, title in zip(self.folds, contents, titles):
            fold.children = [content]
            fold.titles = (title,)
        self.raw.add_class("tinyagent-raw")
        self.children = [self.body, self.raw]


# The line above the cards, in the cards' language: a Chinese run reads in Chinese from its first line.
SUMMARY = {
    "en": {"empty": "no events yet", "ended": "ended: {reason}", "running": "still running",
           "heading": "Trace: ", "timing": ", {seconds:.2f} s in the model"},
    "zh": {"empty": "还没有事件", "ended": "结束：{reason}", "running": "还在运行",
           "heading": "运行记录：", "timing": "，模型用时 {seconds:.2f} 秒"},
}


class TraceViewer(widgets.VBox):
    """Cards for a trace. `trace`: a finished Trace to show; `lang`: "en" or "zh" labels
    (default: the trace's language). State for tests: `.trace`, `.cards`, `.text()`."""

    def __init__(self, trace: Trace | None = None, *, lang: str | None = None):
        self.lang = lang or (trace.lang if trace is not None else "en")
        self.follow_lang = lang is None  # take the language of the run being watched
        self.trace = Trace(lang=self.lang)
        self.cards: list[Card] = []
        self.summary = widgets.HTML()
        self.card_box = widgets.VBox()
        super().__init__([self.summary, self.card_box])
        self.add_class("tinyagent-trace-viewer")
        for event in trace or ():
            self.add(event)
        self._refresh_summary()

    def add(self, event: Event) -> Card:
        """Show one more event: it updates its round's card, or starts a new one."""
        self.trace.append(event)
        count = len(self.cards)
        card = apply_event(self.cards, event)
        if len(self.cards) > count:
            self.card_box.children = (*self.card_box.children, CardView(card, self.lang))
        else:
            self.card_box.children[-1].refresh()
        self._refresh_summary()
        return card

    def watch(self, events: Iterable[Event], *, delay: float = 0.0) -> Trace:
        """Show events as they arrive (an AgentRun, or `agent.steps(...)`); returns the trace.
        `delay` pauses after each event, so a class can follow a fast model."""
        if self.follow_lang and not self.trace.events and getattr(events, "lang", None):
            self.lang = self.trace.lang = events.lang
        for event in events:
            self.add(event)
            if delay:
                time.sleep(delay)
        return self.trace

    def clear(self) -> None:
        self.trace = Trace(lang=self.lang)
        self.cards = []
        self.card_box.children = ()
        self._refresh_summary()

    # -- text ----------------------------------------------------------------------------------
    def summary_text(self) -> str:
        """One line about the run so far, in the viewer's language (the cards' language)."""
        said = SUMMARY[self.lang]
        if not self.trace.events:
            return said["empty"]
        usage = self.trace.total_usage()
        ended = said["ended"].format(reason=self.trace.reason) if self.trace.end else said["running"]
        # A streamed run (lesson 14) has many more events, one per piece of text: counted apart.
        pieces = len(self.trace.of_type(ReplyDelta))
        if self.lang == "zh":
            streamed = f"（另有 {pieces} 段流式文本）" if pieces else ""
            return (f"{self.trace.rounds} 圈，{len(self.trace) - pieces} 个事件{streamed}，输入 "
                    f"{usage['prompt_tokens']} + 输出 {usage['completion_tokens']} 个 token，{ended}")
        streamed = f" (+ {plural(pieces, 'streamed piece')})" if pieces else ""
        return (
            f"{plural(self.trace.rounds, 'round')}, {plural(len(self.trace) - pieces, 'event')}{streamed}, "
            f"{usage['prompt_tokens']} in + {usage['completion_tokens']} out tokens, {ended}"
        )

    def text(self) -> str:
        """What a notebook saves for this widget: a summary line and the formatted trace."""
        lines = [f"TraceViewer: {self.summary_text()}"]
        if self.trace.events:
            lines.append(self.trace.format(usage=True))
        return "\n".join(lines)

    def _refresh_summary(self) -> None:
        latency = sum(card.llm.latency_s for card in self.cards if card.llm is not None)
        said = SUMMARY[self.lang]
        timing = said["timing"].format(seconds=latency) if self.cards else ""
        self.summary.value = (
            f'<div class="ta-summary" style="opacity:0.8">{said["heading"]}{esc(self.summary_text())}{timing}</div>'
        )

    def __repr__(self) -> str:
        return f"<TraceViewer {self.summary_text()}>"

    def _repr_mimebundle_(self, **kwargs):
        return with_text(super()._repr_mimebundle_(**kwargs), self.text())


def with_text(bundle: dict | None, text: str) -> dict:
    """A widget's display data with our deterministic text in place of the default repr."""
    bundle = dict(bundle or {})
    bundle["text/plain"] = text
    return bundle
