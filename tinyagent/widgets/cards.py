"""Cards: one round of the loop as one thing to look at, in HTML for a widget and in plain text.

A round is the events that share a step number:

    LlmCall -> Parsed -> ToolCall -> Observation      a card that asked for a tool
    LlmCall -> Parsed -> Final                        a card that answered
    ... Stopped                                       the run ended without an answer

With a streaming agent (lesson 14) a round starts with ReplyDelta events: the card shows the Thought
growing as the pieces arrive (status "typing"), then the round as usual once its LlmCall and Parsed come.

A round of native function calling (lesson 09) may ask for several tools: its card holds every call and
every result, in order. A round may make several model calls (lesson 22's tree search): its header sums them all,
and its fold shows the reply the round read, the last one.

A round can come in two cards: in lesson 21 the triage agent's handoff is one card, the refunds agent's rounds
follow, and the handoff's result arrives in a second card of the triage agent's round. A call counts as waiting only
while its result has come nowhere in the trace: the first card says where the result is.

`apply_event(cards, event)` files each event into the card of its round, so a viewer can grow
while the agent runs. The plain text is the trace's own `format()`, which leaves latency out: the
text a notebook saves is the same on every run, while the HTML in the browser shows the timing.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from tinyagent.architectures.handoffs import Handoff
from tinyagent.architectures.plan_execute import PlanMade, PlanStepDone, PlanStepStarted
from tinyagent.architectures.reflection import Reflected
from tinyagent.architectures.router import Routed
from tinyagent.architectures.skills import SkillActivated
from tinyagent.architectures.tree_search import TREE_EVENTS
from tinyagent.editable_trace import PersonEdit
from tinyagent.events import Event, Final, LlmCall, Observation, Parsed, Stopped, ToolCall
from tinyagent.protocols.streaming import ReplyDelta
from tinyagent.robustness.stop_rules import LimitReached
from tinyagent.robustness.tolerant_parser import FormatObservation
from tinyagent.safe_text import terminal_text
from tinyagent.toolkit.confirmation import APPROVAL_LABELS, ApprovalDecided, ApprovalRequested
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
        "streamed": "streamed in {n} pieces, the first after {first:.2f} s",
        "typing_rest": "typing",
        "approval_asked": "Waiting for approval",
        "approval": "Approval",
        "badges": {
            "typing": "typing…",
            "waiting_approval": "waiting for approval",
            "thinking": "model replied",
            "acting": "tool pending",
            "observed": "tool ran",
            "tool_error": "tool error",
            "final": "final answer",
            "fallback": "fallback answer",
            "after_limit": "answer after a limit",
            "limit": "limit reached",
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
        "streamed": "分 {n} 段流式到达，第一段用了 {first:.2f} 秒",
        "typing_rest": "正在输入",
        "approval_asked": "等待批准",
        "approval": "批准结果",
        "badges": {
            "typing": "正在输入…",
            "waiting_approval": "等待批准",
            "thinking": "模型已回复",
            "acting": "待执行工具",
            "observed": "工具已执行",
            "tool_error": "工具出错",
            "final": "最终答复",
            "fallback": "兜底答复",
            "after_limit": "到达限制后的答复",
            "limit": "到达限制",
            "stopped": "已停止",
        },
    },
}

# The colour of each status, strong enough to read on a light or a dark theme.
STATUS = {
    "typing": "#5e35b1",
    "thinking": "#757575",
    "acting": "#ef6c00",
    "observed": "#1565c0",
    "tool_error": "#c62828",
    "final": "#2e7d32",
    "fallback": "#9e7700",
    "after_limit": "#9e7700",
    "limit": "#d84315",
    "stopped": "#ad1457",
    "waiting_approval": "#6a1b9a",
}


@dataclass
class Card:
    """The events of one round. Every field is None (or empty) until its event arrives; `parsed` is the
    round's first Parsed (the one with the thought), `tool_calls` and `observations` all of them, in order.
    `llm` is the round's last model call (the reply it read), `calls` all of them. `later_results`: results to
    this card's calls that came in a later card of the same round (lesson 21's handoff)."""

    step: int
    llm: LlmCall | None = None
    calls: list[LlmCall] = field(default_factory=list)
    parsed: Parsed | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    observations: list[Observation] = field(default_factory=list)
    end: Final | Stopped | None = None
    events: list[Event] = field(default_factory=list)  # every event of the round, as it came
    typed: str = ""  # a streamed reply so far: its ReplyDelta pieces, joined (lesson 14)
    pieces: list[ReplyDelta] = field(default_factory=list)
    approvals: list[ApprovalRequested | ApprovalDecided] = field(default_factory=list)  # lesson 15
    notes: list[Event] = field(default_factory=list)  # lesson 17: the route, the skill, the plan, the reflection
    agent: str = ""  # lesson 21: the agent whose round it is (several agents: a card per agent and round)
    later_results: list[Observation] = field(default_factory=list)

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
        """typing, thinking, acting, waiting_approval, observed, tool_error, limit, final, fallback, after_limit
        or stopped."""
        if isinstance(self.end, Stopped):
            return "stopped"
        if isinstance(self.end, Final):
            return final_key(self.end)
        if any(isinstance(note, LimitReached) for note in self.notes):
            return "limit"
        results = self.observations + self.later_results
        if results and not self.pending:
            return "tool_error" if any(o.error for o in results) else "observed"
        if self.approvals and isinstance(self.approvals[-1], ApprovalRequested):
            return "waiting_approval"
        if self.tool_calls:
            return "acting"
        if self.typed and self.llm is None:
            return "typing"
        return "thinking"

    def text(self, lang: str = "en") -> str:
        """The round as the trace prints it (with token counts, without latency)."""
        return Trace(self.events, lang=lang).format(usage=True)

    def html(self, lang: str = "en") -> str:
        return card_html(self, lang)


def final_key(end: Final) -> str:
    """How a Final is labelled, as the printed trace labels it: final, fallback, or after_limit (a stop rule's
    closing call, lesson 10)."""
    return {"final_answer": "final", "fallback": "fallback"}.get(end.reason, "after_limit")


def apply_event(cards: list[Card], event: Event) -> Card:
    """File `event` into its round's card (the last card, or a new one) and return that card. A result to a call
    of an earlier card of the same round (lesson 21's handoff) is noted in that card's `later_results` too."""
    if cards and (cards[-1].step, cards[-1].agent) == (event.step, event.agent):
        card = cards[-1]
    else:
        card = Card(event.step, agent=event.agent)
        cards.append(card)
    if isinstance(event, (LlmCall, Parsed, ToolCall, Observation, Final, Stopped, ReplyDelta, ApprovalRequested,
                          ApprovalDecided, *NOTE_EVENTS)):
        card.events.append(event)
    if isinstance(event, ReplyDelta):
        card.pieces.append(event)
        card.typed += event.text
    elif isinstance(event, LlmCall):
        card.llm = event
        card.calls.append(event)
    elif isinstance(event, Parsed):
        card.parsed = card.parsed or event
    elif isinstance(event, ToolCall):
        card.tool_calls.append(event)
    elif isinstance(event, Observation):
        card.observations.append(event)
        # A result to no call of this card answers an earlier card's call of its round (not a format reminder).
        if len(card.observations) > len(card.tool_calls) and not isinstance(event, FormatObservation):
            earlier = next((c for c in reversed(cards[:-1]) if (c.step, c.agent) == (card.step, card.agent)
                            and c.pending), None)
            if earlier is not None:
                earlier.later_results.append(event)
    elif isinstance(event, (Final, Stopped)):
        card.end = event
    elif isinstance(event, (ApprovalRequested, ApprovalDecided)):
        card.approvals.append(event)
    elif isinstance(event, NOTE_EVENTS):
        card.notes.append(event)
    return card


# Lesson 17's events around the loop (and a person's edit, editable_trace.py): shown as the trace prints them, those that open a step above the round's
# thought, those that close one (a step's result, a reflection) below its last Observation.
NOTE_EVENTS = (Routed, SkillActivated, PlanMade, PlanStepStarted, PlanStepDone, Reflected,
               Handoff, PersonEdit, LimitReached,
               *TREE_EVENTS)  # lesson 22: the round's search, candidate by candidate, above its thought
# Lesson 21's handoff: below the call that made it; lesson 10's limit: below the reply that reached it.
_CLOSING_NOTES = (PlanStepDone, Reflected, Handoff, LimitReached)


def note_rows(card: Card, lang: str, closing: bool) -> list[str]:
    rows = []
    for note in card.notes:
        if isinstance(note, _CLOSING_NOTES) == closing:
            text = "\n".join(Trace([note], lang=lang).format().splitlines()[1:])  # without the round's heading
            colour = STATUS["limit"] if isinstance(note, LimitReached) else "#00695c"
            rows.append(row("", esc(text), colour, f"ta-note ta-{note.kind}", tint(colour)))
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
    """The header's line: the one model call's usage_line, or for a round of several calls (lesson 22), their
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


def streamed_line(card: Card, lang: str) -> str:
    """How the round's reply arrived, when it was streamed (HTML only: the times vary)."""
    return LABELS[lang]["streamed"].format(n=len(card.pieces), first=card.pieces[0].elapsed_s)


# A line that starts the next part of a ReAct step: where a Thought being typed ends.
_AFTER_THOUGHT = re.compile(r"^[ \t]*(?:\*\*)?(?:Action|Final Answer)\b", re.MULTILINE | re.IGNORECASE)
_THOUGHT_KEY = re.compile(r"\s*(?:\*\*)?Thought(?:\*\*)?\s*[:：]\s*(?:\*\*)?\s*", re.IGNORECASE)
NEXT_KEYS = ("action", "final answer")


def typed_thought(text: str) -> tuple[str, str]:
    """A reply still being typed, split into its Thought so far and what follows it (the Action lines as
    typed). Text with no "Thought:" key is all thought: a model that writes prose is thinking aloud."""
    key = _THOUGHT_KEY.match(text)
    body = text[key.end() :] if key else text.lstrip()
    after = _AFTER_THOUGHT.search(body)
    if after is None:
        # A last line that may be the start of "Action" or "Final Answer" ("\nAct") is not thought yet.
        head, newline, last = body.rpartition("\n")
        word = last.strip().lstrip("*").lower()
        if newline and word and any(k.startswith(word) for k in NEXT_KEYS):
            return head.rstrip(), last
        return body, ""
    return body[: after.start()].rstrip(), body[after.start() :]


def card_html(card: Card, lang: str = "en") -> str:
    labels = LABELS[lang]
    status = card.status
    colour = STATUS[status]
    head = [f"<b>{esc(labels['round'].format(n=card.step))}</b>", badge(labels["badges"][status], colour)]
    if card.agent:  # lesson 21: whose round it is
        head.insert(1, badge(card.agent, "#0b57d0", "ta-agent"))
    if card.llm is not None:
        line = round_usage_line(card, lang) + (f" · {streamed_line(card, lang)}" if card.pieces else "")
        head.append(f'<span class="ta-usage" style="opacity:0.75;font-size:90%">{esc(line)}</span>')
    rows = note_rows(card, lang, closing=False)
    if card.parsed is not None and card.parsed.thought:
        rows.append(row(labels["thought"], esc(card.parsed.thought), "#616161", "ta-thought"))
    elif card.parsed is None and card.typed:
        # Lesson 14: the Thought as it is typed, in the same row the parsed Thought will fill.
        thought, rest = typed_thought(card.typed)
        caret = '<span class="ta-caret">▌</span>' if card.llm is None and card.end is None else ""
        rows.append(row(labels["thought"], esc(thought) + caret, "#616161", "ta-thought ta-live"))
        if rest:
            rows.append(row(labels["typing_rest"], f"<code>{esc(rest)}</code>", STATUS["typing"], "ta-typing"))
    for tool_call in card.tool_calls:
        call = f"<code>{esc(tool_call.name)}({esc(tool_call.input)})</code>"
        rows.append(row(labels["action"], call, STATUS["acting"], "ta-action"))
    c = STATUS["waiting_approval"]
    for approval in card.approvals:  # lesson 15: the person's yes or no, between the call and its result
        if isinstance(approval, ApprovalRequested):
            rows.append(row(labels["approval_asked"], esc(approval.summary), c, "ta-approval-asked", tint(c)))
        else:
            outcome = APPROVAL_LABELS[lang]["outcomes"].get(approval.outcome, approval.outcome)
            detail = f" ({approval.detail})" if approval.detail else ""
            rows.append(row(labels["approval"], esc(f"{outcome} · {approval.by}{detail}"), c,
                            f"ta-approval ta-approval-{approval.outcome}"))
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
    rows += note_rows(card, lang, closing=True)
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
    """A message's text, with what function calling (lesson 09) adds: an assistant message's tool calls,
    one line each, and the id of the call a tool message answers."""
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
    """A message list as text; the long system prompt is shortened to its first line."""
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
