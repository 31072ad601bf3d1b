"""`TraceViewer`: a run as cards, one per round, that fill in while the agent works.

    viewer = TraceViewer(result.trace)          # a finished run
    viewer = TraceViewer(); display(viewer)
    viewer.watch(agent.start(question))         # live: each event appears as it happens

Each card shows the thought, the tool call, the observation and the answer, with the tokens and
latency of its model calls; the exact messages sent and the raw reply the round read sit behind a fold. A later
lesson's events show as their card parts draw them (cards.py); lesson 14's part shows a Thought growing while the
model types it.
In a notebook file (and under nbval) the viewer saves as its text: the trace's `format()`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import ipywidgets as widgets

from tinyagent.events import Event, Final, LlmCall, Observation, Stopped
from tinyagent.safe_text import terminal_text
from tinyagent.trace import Trace
from tinyagent.widgets.cards import (
    LABELS,
    Card,
    CardPart,
    apply_event,
    esc,
    messages_html,
    part_of,
    plural,
    pre_html,
)


class CardView(widgets.VBox):
    """The widget for one card: the round in HTML, and the raw exchange behind two folds (the messages
    sent, the raw reply). Each fold is an Accordion of its own: in one Accordion, opening a fold would
    close the other, and a learner comparing what went in with what came out needs both open.
    A round of several model calls folds its last call, the reply the round read, and says so."""

    def __init__(self, card: Card, lang: str):
        self.card = card
        self.lang = lang
        self.shown: LlmCall | None = None  # the call the folds show
        self.body = widgets.HTML()
        self.folds = (widgets.Accordion(selected_index=None), widgets.Accordion(selected_index=None))
        self.raw = widgets.VBox(list(self.folds), layout=widgets.Layout(margin="0 0 0 12px"))
        super().__init__([self.body], layout=widgets.Layout(margin="4px 0"))
        self.add_class("tinyagent-card")
        self.refresh()

    def refresh(self) -> None:
        self.body.value = self.card.html(self.lang)
        call = self.card.llm
        if call is None or call is self.shown:
            return
        self.shown = call
        labels = LABELS[self.lang]
        reply = call.text
        if call.client_cut:
            reply += "\n\n(the server ignored the stop sequence; the client cut the text here)"
        contents = (widgets.HTML(messages_html(call.messages)), widgets.HTML(pre_html(reply)))
        total = len(self.card.calls)
        if total > 1:
            titles = (labels["messages_of"].format(n=len(call.messages), i=total, total=total),
                      labels["raw_of"].format(i=total, total=total))
        else:
            titles = (labels["messages"].format(n=len(call.messages)), labels["raw"])
        for fold, content, title in zip(self.folds, contents, titles):
            fold.children = [content]
            fold.titles = (title,)
        if self.raw not in self.children:
            self.raw.add_class("tinyagent-raw")
            self.children = [self.body, self.raw]


# The line above the cards, in the cards' language: a Chinese run reads in Chinese from its first line.
SUMMARY = {
    "en": {"empty": "no events yet", "ended": "ended: {reason}", "running": "still running",
           "heading": "Trace: ", "timing": ", {seconds:.2f} s in the model"},
    "zh": {"empty": "还没有事件", "ended": "结束：{reason}", "running": "还在运行",
           "heading": "运行记录：", "timing": "，模型用时 {seconds:.2f} 秒"},
}


# While events come in a burst (a finished trace, or `watch` on a fast model), the list of cards on the page is
# re-sent at most this often: each re-send carries every card, so once per card would take time growing with the run.
SHOW_EVERY_S = 0.2


class TraceViewer(widgets.VBox):
    """Cards for a trace. `trace`: a finished Trace to show; `lang`: "en" or "zh" labels
    (default: the trace's language). State for tests: `.trace`, `.cards`, `.views` (a CardView per card),
    `.text()`.

    Adding an event takes the same time however long the run is: the summary line is kept from running
    totals, and in a burst of events (a finished trace, `watch`) the page's list of cards is re-sent at most every
    SHOW_EVERY_S seconds and once at the end, not once per card."""

    def __init__(self, trace: Trace | None = None, *, lang: str | None = None):
        self.lang = lang or (trace.lang if trace is not None else "en")
        self.follow_lang = lang is None  # take the language of the run being watched
        self.summary = widgets.HTML()
        self.card_box = widgets.VBox()
        super().__init__([self.summary, self.card_box])
        self.add_class("tinyagent-trace-viewer")
        self.clear()
        self._burst = True
        for event in trace or ():
            self.add(event)
        self._burst = False
        self._show_cards()
        self._refresh_summary()

    def add(self, event: Event) -> Card:
        """Show one more event: it updates its round's card, or starts a new one."""
        self.trace.append(event)
        self._count(event)
        count = len(self.cards)
        card = apply_event(self.cards, event)
        if len(self.cards) > count:
            view = CardView(card, self.lang)
            self.views.append(view)
            self._by_round.setdefault((card.step, card.agent), []).append(view)
            self._show_cards()
        else:
            self.views[-1].refresh()
        if isinstance(event, Observation):  # it may answer a call of an earlier card of its round (several agents)
            for view in self._by_round[(card.step, card.agent)][:-1]:
                view.refresh()
        self._refresh_summary()
        return card

    def watch(self, events: Iterable[Event], *, delay: float = 0.0) -> Trace:
        """Show events as they arrive (an AgentRun, or `agent.steps(...)`); returns the trace.
        `delay` pauses after each event, so a class can follow a fast model."""
        if self.follow_lang and not self.trace.events and getattr(events, "lang", None):
            self.lang = self.trace.lang = events.lang
        self._burst = True
        try:
            for event in events:
                self.add(event)
                if delay:
                    time.sleep(delay)
        finally:
            self._burst = False
            self._show_cards()
        return self.trace

    def _show_cards(self) -> None:
        """Put every card on the page: at once, or in a burst if SHOW_EVERY_S has passed since the last time."""
        if len(self.card_box.children) == len(self.views):
            return
        if self._burst and time.monotonic() - self._shown_at < SHOW_EVERY_S:
            return
        self.card_box.children = tuple(self.views)
        self._shown_at = time.monotonic()

    def clear(self) -> None:
        self.trace = Trace(lang=self.lang)
        self.cards: list[Card] = []
        self.views: list[CardView] = []
        self._by_round: dict[tuple[int, str], list[CardView]] = {}
        self.card_box.children = ()
        self._burst, self._shown_at = False, 0.0
        # The summary's running totals, kept as events arrive (see _count).
        self._rounds = self._prompt = self._completion = 0
        self._apart: dict[CardPart, int] = {}  # events a card part counts apart, by part
        self._latency = 0.0
        self._end: Final | Stopped | None = None
        self._refresh_summary()

    def _count(self, event: Event) -> None:
        self._rounds = max(self._rounds, event.step)
        part = part_of(event)
        if part.counted_apart:
            self._apart[part] = self._apart.get(part, 0) + 1
        elif isinstance(event, LlmCall):  # every model call of a round (a round may make several)
            usage = event.usage or {}
            self._prompt += int(usage.get("prompt_tokens") or 0)
            self._completion += int(usage.get("completion_tokens") or 0)
            self._latency += event.latency_s
        elif isinstance(event, (Final, Stopped)):
            self._end = event

    # -- text ----------------------------------------------------------------------------------
    def summary_text(self) -> str:
        """One line about the run so far, in the viewer's language (the cards' language)."""
        said = SUMMARY[self.lang]
        if not self.trace.events:
            return said["empty"]
        ended = said["ended"].format(reason=self._end.reason) if self._end else said["running"]
        # Events a card part counts apart, each kind after the rest (lesson 14's streamed pieces, many more than the rest).
        apart = sum(self._apart.values())
        if self.lang == "zh":
            also = "".join(f"（另有 {n} {part.counted_apart['zh']}）" for part, n in self._apart.items())
            return (f"{self._rounds} 圈，{len(self.trace) - apart} 个事件{also}，输入 "
                    f"{self._prompt} + 输出 {self._completion} 个 token，{ended}")
        also = "".join(f" (+ {plural(n, part.counted_apart['en'])})" for part, n in self._apart.items())
        return (
            f"{plural(self._rounds, 'round')}, {plural(len(self.trace) - apart, 'event')}{also}, "
            f"{self._prompt} in + {self._completion} out tokens, {ended}"
        )

    def text(self) -> str:
        """What a notebook saves for this widget: a summary line and the formatted trace."""
        lines = [f"TraceViewer: {self.summary_text()}"]
        if self.trace.events:
            lines.append(self.trace.format(usage=True))
        return "\n".join(lines)

    def _refresh_summary(self) -> None:
        said = SUMMARY[self.lang]
        timing = said["timing"].format(seconds=self._latency) if self.cards else ""
        self.summary.value = (
            f'<div class="ta-summary" style="opacity:0.8">{said["heading"]}{esc(self.summary_text())}{timing}</div>'
        )

    def __repr__(self) -> str:
        return f"<TraceViewer {self.summary_text()}>"

    def _repr_mimebundle_(self, **kwargs):
        return with_text(super()._repr_mimebundle_(**kwargs), self.text())


def with_text(bundle: dict | None, text: str) -> dict:
    """A widget's display data with our deterministic text in place of the default repr (what a model or a tool
    wrote in it shown, not obeyed, as the printed trace shows it)."""
    bundle = dict(bundle or {})
    bundle["text/plain"] = terminal_text(text)
    return bundle
