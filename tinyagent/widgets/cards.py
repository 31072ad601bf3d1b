"""Cards: one round of the loop as one thing to look at, in HTML for a widget and in plain text.

A round is the events that share a step number:

    LlmCall -> Parsed -> ToolCall -> Observation      a card that asked for a tool
    LlmCall -> Parsed -> Final                        a card that answered
    ... Stopped                                       the run ended without an answer

A round may ask for several tools (its card holds every call and every result, in order) or make several model
calls (its header sums them all, and its fold shows the reply the round read, the last one). When several agents
share a trace (`Event.agent`), each has its own cards, and a round can come in two cards: a call's result may come
after another agent's rounds. A call counts as waiting only while its result has come nowhere in the trace: the
first card says where the result is.

An event of a later lesson shows as the printed trace shows it (`Event.lines`), in a row above the round's Thought.
A lesson whose events need more (a row in another place, a status of the card, a line in its header) registers a
`CardPart` for them in `CARD_PARTS`, from a module of its own in this folder; this package's `__init__` imports
those modules, so every part is registered before a card is drawn. Lesson 14 adds a part for streamed pieces.

`apply_event(cards, event)` files each event into the card of its round, so a viewer can grow
while the agent runs. The plain text is the trace's own `format()`, which leaves latency out: the
text a notebook saves is the same on every run, while the HTML in the browser shows the timing.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from tinyagent.events import Event, Final, LlmCall, Observation, Parsed, Stopped, ToolCall
from tinyagent.safe_text import terminal_text
from tinyagent.trace import Trace

LABELS = {
    "en": {
        "round": "Round {n}",
        "thought": "Thought",
        "action": "Action",
        "observation": "Observation",
        "tool_error": "Tool error",
        "final": "Final answer",
        "fallback": "Final answer (fallback: no format)",
        "after_limit": "Final answer (after a limit)",
        "stopped": "Stopped: {reason}",
        "waiting": "waiting: the tool has not run yet",
        "answered_later": "its result comes in a later card of this round, below",
        "calls": "{n} model calls",
        "total_time": "{seconds:.2f} s in all",
        "messages": "Messages sent ({n})",
        "raw": "Raw reply",
        "messages_of": "Messages sent ({n}) with call {i} of {total}",
        "raw_of": "Raw reply: the one this round read, call {i} of {total}",
        "tokens": "{prompt} in + {completion} out tokens",
        "badges": {
            "thinking": "model replied",
            "acting": "tool pending",
            "observed": "tool ran",
            "tool_error": "tool error",
            "final": "final answer",
            "fallback": "fallback answer",
            "after_limit": "answer after a limit",
            "stopped": "stopped",
        },
    },
    "zh": {
        "round": "第 {n} 圈",
        "thought": "思考",
        "action": "工具调用",
        "observation": "工具结果",
        "tool_error": "工具出错",
        "final": "最终答复",
        "fallback": "最终答复（兜底：没按格式）",
        "after_limit": "最终答复（到达限制后）",
        "stopped": "停止：{reason}",
        "waiting": "等待中：工具还没执行",
        "answered_later": "它的结果在这一圈后面的卡片里（见下方）",
        "calls": "{n} 次模型调用",
        "total_time": "共 {seconds:.2f} 秒",
        "messages": "发送的消息（{n} 条）",
        "raw": "模型原始回复",
        "messages_of": "发送的消息（{n} 条），第 {i} 次调用（共 {total} 次）",
        "raw_of": "模型原始回复：这一圈读的那条，第 {i} 次调用（共 {total} 次）",
        "tokens": "输入 {prompt} + 输出 {completion} token",
        "badges": {
            "thinking": "模型已回复",
            "acting": "待执行工具",
            "observed": "工具已执行",
            "tool_error": "工具出错",
            "final": "最终答复",
            "fallback": "兜底答复",
            "after_limit": "到达限制后的答复",
            "stopped": "已停止",
        },
    },
}

# The colour of each status, strong enough to read on a light or a dark theme.
STATUS = {
    "thinking": "#757575",
    "acting": "#ef6c00",
    "observed": "#1565c0",
    "tool_error": "#c62828",
    "final": "#2e7d32",
    "fallback": "#9e7700",
    "after_limit": "#9e7700",
    "stopped": "#ad1457",
}


# Lesson 06's statuses, strongest first: a card is stopped once it has a Stopped, whatever else it holds. A part's
# status stands in for those from `CardPart.outranks` down ("final" covers fallback and after_limit, "observed"
# covers tool_error).
RANKS = ("stopped", "final", "observed", "acting", "thinking")


def register_status(name: str, colour: str, badges: dict[str, str]) -> None:
    """A status a card part gives a card: its colour, and its badge in each language."""
    STATUS[name] = colour
    for lang, badge_text in badges.items():
        LABELS[lang]["badges"][name] = badge_text


@dataclass
class Card:
    """The events of one round. Every field is None (or empty) until its event arrives; `parsed` is the
    round's first Parsed (the one with the thought), `tool_calls` and `observations` all of them, in order.
    `llm` is the round's last model call (the reply it read), `calls` all of them. `later_results`: results to
    this card's calls that came in a later card of the same round (another agent's rounds came between).
    `kept`: what each card part keeps of the round's other events; `placed`: those events that a part draws in a
    row of their own, in the order they came."""

    step: int
    llm: LlmCall | None = None
    calls: list[LlmCall] = field(default_factory=list)
    parsed: Parsed | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    observations: list[Observation] = field(default_factory=list)
    end: Final | Stopped | None = None
    events: list[Event] = field(default_factory=list)  # every event of the round, as it came
    agent: str = ""  # the agent whose round it is (several agents in one trace: a card per agent and round)
    later_results: list[Observation] = field(default_factory=list)
    kept: dict[CardPart, Any] = field(default_factory=dict)
    placed: list[Event] = field(default_factory=list)

    @property
    def tool_call(self) -> ToolCall | None:
        """The round's last tool call (its only one in text ReAct)."""
        return self.tool_calls[-1] if self.tool_calls else None

    @property
    def observation(self) -> Observation | None:
        """The round's last result (its only one in text ReAct)."""
        return self.observations[-1] if self.observations else None

    @property
    def pending(self) -> int:
        """How many of the card's tool calls have no result anywhere in the trace yet."""
        return max(0, len(self.tool_calls) - len(self.observations) - len(self.later_results))

    @property
    def status(self) -> str:
        """thinking, acting, observed, tool_error, final, fallback, after_limit or stopped, or a status a card part
        gives (see RANKS)."""
        rank, status = self.own_status()
        said = [(RANKS.index(part.outranks), name) for part in self.kept if (name := part.status(self)) is not None]
        strongest = min(said, key=lambda ranked: ranked[0], default=None)
        return strongest[1] if strongest is not None and strongest[0] <= rank else status

    def own_status(self) -> tuple[int, str]:
        """The status lesson 06's events give, and its rank in RANKS."""
        if isinstance(self.end, Stopped):
            return 0, "stopped"
        if isinstance(self.end, Final):
            return 1, final_key(self.end)
        results = self.observations + self.later_results
        if results and not self.pending:
            return 2, "tool_error" if any(o.error for o in results) else "observed"
        if self.tool_calls:
            return 3, "acting"
        return 4, "thinking"

    def text(self, lang: str = "en") -> str:
        """The round as the trace prints it (with token counts, without latency)."""
        return Trace(self.events, lang=lang).format(usage=True)

    def html(self, lang: str = "en") -> str:
        return card_html(self, lang)


class CardPart:
    """How a kind of event that lesson 06 does not know shows in a card. This one, the part of every kind that
    registers none, draws the event as the printed trace shows it, in a row above the round's Thought.

    A later lesson registers a part for a kind of its own with `CARD_PARTS[kind] = part`:
    `place`      where its events' rows go: "opening" (above the Thought), "after_calls" (between the tool calls
                 and their results), "closing" (below the results), or "" (no row per event)
    `file`       what the card keeps of an event (`card.kept[part]`: by default the part's events, in order)
    `rows`       the rows of one event, at `place`
    `status`     the card's status this part gives, or None; it stands in for lesson 06's from `outranks` down
    `thought_rows`  rows that stand for the Thought while the round's reply is not read yet
    `usage`      a note after the header's tokens and time, once the round's model call came
    `counted_apart` {"en": noun, "zh": noun}: a viewer's summary counts these events apart from the others
    """

    place = "opening"
    outranks = "thinking"
    colour = "#00695c"
    counted_apart: ClassVar[dict[str, str]] = {}

    def file(self, card: Card, event: Event) -> None:
        card.kept.setdefault(self, []).append(event)

    def rows(self, card: Card, event: Event, lang: str) -> list[str]:
        text = "\n".join(Trace([event], lang=lang).format().splitlines()[1:])  # without the round's heading
        return [row("", esc(text), self.colour, f"ta-note ta-{event.kind}", tint(self.colour))]

    def status(self, card: Card) -> str | None:
        return None

    def thought_rows(self, card: Card, lang: str) -> list[str]:
        return []

    def usage(self, card: Card, lang: str) -> str:
        return ""


class ClosingNote(CardPart):
    """An event drawn as the printed trace shows it, below the round's results: what closes a round."""

    place = "closing"


NOTE = CardPart()
CARD_PARTS: dict[type[Event], CardPart] = {}  # kind -> its part, filled by the modules of the lessons that add kinds


def part_of(event: Event) -> CardPart:
    return CARD_PARTS.get(type(event), NOTE)


def final_key(end: Final) -> str:
    """How a Final is labelled, as the printed trace labels it: final, fallback, or after_limit (the closing call
    of a stop that still brought an answer)."""
    return {"final_answer": "final", "fallback": "fallback"}.get(end.reason, "after_limit")


def apply_event(cards: list[Card], event: Event) -> Card:
    """File `event` into its round's card (the last card, or a new one) and return that card. A result to a call
    of an earlier card of the same round (another agent's rounds came between) is noted in that card's
    `later_results` too."""
    if cards and (cards[-1].step, cards[-1].agent) == (event.step, event.agent):
        card = cards[-1]
    else:
        card = Card(event.step, agent=event.agent)
        cards.append(card)
    card.events.append(event)
    if isinstance(event, LlmCall):
        card.llm = event
        card.calls.append(event)
    elif isinstance(event, Parsed):
        card.parsed = card.parsed or event
    elif isinstance(event, ToolCall):
        card.tool_calls.append(event)
    elif isinstance(event, Observation):
        card.observations.append(event)
        # A result in a card with no model call of its own answers an earlier card's call of its round.
        if len(card.observations) > len(card.tool_calls) and card.llm is None:
            earlier = next((c for c in reversed(cards[:-1]) if (c.step, c.agent) == (card.step, card.agent)
                            and c.pending), None)
            if earlier is not None:
                earlier.later_results.append(event)
    elif isinstance(event, (Final, Stopped)):
        card.end = event
    else:
        part = part_of(event)
        part.file(card, event)
        if part.place:
            card.placed.append(event)
    return card


def placed_rows(card: Card, lang: str, place: str) -> list[str]:
    """The rows of the card's events whose parts draw them at `place`, in the order the events came."""
    rows = []
    for event in card.placed:
        part = part_of(event)
        if part.place == place:
            rows += part.rows(card, event, lang)
    return rows


def build_cards(events: Iterable[Event]) -> list[Card]:
    cards: list[Card] = []
    for event in events:
        apply_event(cards, event)
    return cards


# -- HTML --------------------------------------------------------------------------------------
def esc(text: object) -> str:
    """`text` as HTML that shows what it holds: a bidi override or other hidden character a model or a tool wrote
    appears as its escape (\\u202e), as the printed trace shows it, rather than reordering the Action beside it."""
    return html.escape(terminal_text(str(text)), quote=True)


# A long unbroken string (a hash, "C" * 100000) breaks anywhere rather than widening the notebook.
WRAP = "white-space:pre-wrap;overflow-wrap:anywhere"


def badge(text: str, colour: str, css_class: str = "") -> str:
    return (
        f'<span class="ta-badge {esc(css_class)}" style="background:{colour};color:#fff;border-radius:3px;'
        f'padding:0 6px;font-size:85%;font-weight:600;white-space:nowrap">{esc(text)}</span>'
    )


def row(label: str, body_html: str, colour: str, css_class: str, tint: str = "transparent") -> str:
    return (
        f'<div class="ta-row {esc(css_class)}" style="margin:3px 0;padding:2px 6px;background:{tint};'
        f'border-radius:3px"><span style="color:{colour};font-weight:600">{esc(label)}</span> '
        f'<span class="ta-value" style="{WRAP}">{body_html}</span></div>'
    )


def tint(colour: str) -> str:
    """A light wash of `colour` (#rrggbb) that keeps the theme's text readable."""
    r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},0.12)"


def usage_line(call: LlmCall, lang: str) -> str:
    """Tokens, latency, finish_reason and model of one model call (HTML only: latency varies)."""
    usage = call.usage or {}
    parts = [
        LABELS[lang]["tokens"].format(
            prompt=usage.get("prompt_tokens", "?"), completion=usage.get("completion_tokens", "?")
        ),
        f"{call.latency_s:.2f} s",
        f"finish_reason={call.finish_reason}",
    ]
    if call.model:
        parts.append(call.model)
    if call.client_cut:
        parts.append("cut by the client")
    return " · ".join(parts)


def round_usage_line(card: Card, lang: str) -> str:
    """The header's line: the one model call's usage_line, or for a round of several calls, their
    tokens and time summed, then the finish_reason and model of the reply the round read."""
    if len(card.calls) < 2:
        return usage_line(card.llm, lang)
    labels = LABELS[lang]
    usages = [call.usage or {} for call in card.calls]
    prompt, completion = (sum(int(u.get(key) or 0) for u in usages) for key in ("prompt_tokens", "completion_tokens"))
    parts = [labels["calls"].format(n=len(card.calls)), labels["tokens"].format(prompt=prompt, completion=completion),
             labels["total_time"].format(seconds=sum(call.latency_s for call in card.calls)),
             f"finish_reason={card.llm.finish_reason}"]
    if card.llm.model:
        parts.append(card.llm.model)
    return " · ".join(parts)


def card_html(card: Card, lang: str = "en") -> str:
    labels = LABELS[lang]
    status = card.status
    colour = STATUS[status]
    head = [f"<b>{esc(labels['round'].format(n=card.step))}</b>", badge(labels["badges"][status], colour)]
    if card.agent:  # whose round it is, when several agents share the trace
        head.insert(1, badge(card.agent, "#0b57d0", "ta-agent"))
    if card.llm is not None:
        line = " · ".join([round_usage_line(card, lang), *filter(None, (part.usage(card, lang) for part in card.kept))])
        head.append(f'<span class="ta-usage" style="opacity:0.75;font-size:90%">{esc(line)}</span>')
    rows = placed_rows(card, lang, "opening")
    if card.parsed is not None and card.parsed.thought:
        rows.append(row(labels["thought"], esc(card.parsed.thought), "#616161", "ta-thought"))
    elif card.parsed is None:
        for part in card.kept:
            rows += part.thought_rows(card, lang)
    for tool_call in card.tool_calls:
        call = f"<code>{esc(tool_call.name)}({esc(tool_call.input)})</code>"
        rows.append(row(labels["action"], call, STATUS["acting"], "ta-action"))
    rows += placed_rows(card, lang, "after_calls")
    if card.pending and card.end is None:
        rows.append(row("…", esc(labels["waiting"]), STATUS["acting"], "ta-waiting"))
    if card.later_results:
        rows.append(row("↓", esc(labels["answered_later"]), STATUS["observed"], "ta-answered-later"))
    for observation in card.observations:
        if observation.error:
            c = STATUS["tool_error"]
            rows.append(row(labels["tool_error"], esc(observation.text), c, "ta-observation ta-error", tint(c)))
        else:
            c = STATUS["observed"]
            rows.append(row(labels["observation"], esc(observation.text), c, "ta-observation", tint(c)))
    rows += placed_rows(card, lang, "closing")
    if isinstance(card.end, Final):
        key = final_key(card.end)
        c = STATUS[key]
        rows.append(row(labels[key], esc(card.end.answer), c, f"ta-final ta-{key}", tint(c)))
    elif isinstance(card.end, Stopped):
        c = STATUS["stopped"]
        body = esc(card.end.answer)
        if card.end.detail:
            body += f'<br><span style="opacity:0.75">{esc(card.end.detail)}</span>'
        rows.append(row(labels["stopped"].format(reason=card.end.reason), body, c, "ta-stopped", tint(c)))
    return (
        f'<div class="ta-card ta-status-{status}" style="border-left:4px solid {colour};padding:4px 8px;'
        f'line-height:1.45">'
        f'<div class="ta-card-head" style="display:flex;gap:8px;align-items:baseline;flex-wrap:wrap">'
        f"{''.join(head)}</div>{''.join(rows)}</div>"
    )


ROLE_COLOURS = {"system": "#757575", "user": "#1565c0", "assistant": "#2e7d32", "tool": "#ef6c00"}


def message_content(message: dict) -> str:
    """A message's text, with the tool calls an assistant message may carry (native function calling), one line
    each, and the id of the call a tool message answers."""
    content = "" if message.get("content") is None else str(message["content"])
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls:
        lines = [content] if content else []
        for call in calls:
            function = call.get("function") if isinstance(call, dict) else None
            function = function if isinstance(function, dict) else {}
            lines.append(f"-> {call.get('id', '?') if isinstance(call, dict) else '?'}: "
                         f"{function.get('name', '?')}({function.get('arguments', '')})")
        content = "\n".join(lines)
    if message.get("role") == "tool" and message.get("tool_call_id"):
        content = f"<- {message['tool_call_id']}: {content}"
    return content


def messages_html(messages: Iterable[dict], *, new_from: int | None = None) -> str:
    """A message list as boxes, one per message. The system prompt starts folded; messages from
    index `new_from` on are marked "new" (what the last step added)."""
    parts = []
    for i, message in enumerate(messages):
        role = str(message.get("role", "?"))
        colour = ROLE_COLOURS.get(role, "#757575")
        content = message_content(message)
        mark = " " + badge("new", "#ef6c00") if new_from is not None and i >= new_from else ""
        title = f'<span style="color:{colour};font-weight:600">[{i}] {esc(role)}</span>{mark}'
        body = f'<pre style="{WRAP};margin:2px 0 0 0;font-size:90%">{esc(content)}</pre>'
        if role == "system":
            first = content.splitlines()[0] if content else ""
            body = f"<details><summary>{esc(first)} …</summary>{body}</details>"
        parts.append(
            f'<div class="ta-message ta-role-{esc(role)}" style="border-left:3px solid {colour};'
            f'margin:4px 0;padding:2px 8px;background:{tint(colour)}">{title}{body}</div>'
        )
    return "".join(parts)


def pre_html(text: str) -> str:
    return f'<pre style="{WRAP};margin:0;font-size:90%">{esc(text)}</pre>'


# -- plain text --------------------------------------------------------------------------------
def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def messages_text(messages: Iterable[dict], system_lines: int = 1) -> str:
    """A message list as text; the long system prompt is cut to its first line."""
    lines = []
    for message in messages:
        role = message.get("role", "?")
        content = message_content(message).rstrip()
        if role == "system":
            head = content.splitlines()[:system_lines]
            more = len(content.splitlines()) - len(head)
            content = "\n".join(head) + (f" ... (+{more} lines)" if more > 0 else "")
        lines.append(f"[{role}] {content}")
    return "\n".join(lines)
