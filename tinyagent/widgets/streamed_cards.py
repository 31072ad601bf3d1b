"""Lesson 14's part of a card: a streamed reply's Thought, growing as its pieces (ReplyDelta) arrive.

While a round's reply is being typed, its card's status is "typing" and its Thought row fills from the text so far
(`typed_thought`); the Action lines being typed show in a row of their own until the round's Parsed event arrives and
the card is drawn as usual. Once the model call is done, the header says how the reply arrived (in how many pieces,
the first after how long: HTML only, the times vary), and a viewer's summary counts the pieces apart from the other
events. `typed_text(card)` is the text typed so far.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import ClassVar

from tinyagent.protocols.streaming import ReplyDelta
from tinyagent.widgets.cards import CARD_PARTS, LABELS, STATUS, Card, CardPart, esc, register_status, row

WORDS = {
    "en": {"streamed": "streamed in {n} pieces, the first after {first:.2f} s", "typing_rest": "typing"},
    "zh": {"streamed": "分 {n} 段流式到达，第一段用了 {first:.2f} 秒", "typing_rest": "正在输入"},
}

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


@dataclass
class Typed:
    """What a card keeps of its round's pieces: them, and their text joined as they come."""

    pieces: list[ReplyDelta] = field(default_factory=list)
    text: str = ""


class StreamedPart(CardPart):
    place = ""  # no row per piece: the pieces together fill the Thought row
    outranks = "thinking"
    counted_apart: ClassVar[dict[str, str]] = {"en": "streamed piece", "zh": "段流式文本"}

    def file(self, card: Card, event: ReplyDelta) -> None:
        typed = card.kept.setdefault(self, Typed())
        typed.pieces.append(event)
        typed.text += event.text

    def status(self, card: Card) -> str | None:
        return "typing" if card.llm is None else None

    def thought_rows(self, card: Card, lang: str) -> list[str]:
        thought, rest = typed_thought(card.kept[self].text)
        caret = '<span class="ta-caret">▌</span>' if card.llm is None and card.end is None else ""
        rows = [row(LABELS[lang]["thought"], esc(thought) + caret, "#616161", "ta-thought ta-live")]
        if rest:
            rows.append(row(WORDS[lang]["typing_rest"], f"<code>{esc(rest)}</code>", STATUS["typing"], "ta-typing"))
        return rows

    def usage(self, card: Card, lang: str) -> str:
        pieces = card.kept[self].pieces
        return WORDS[lang]["streamed"].format(n=len(pieces), first=pieces[0].elapsed_s)


def typed_text(card: Card) -> str:
    """The text of the card's streamed reply so far ("" for a round that was not streamed)."""
    typed = card.kept.get(CARD_PARTS[ReplyDelta])
    return typed.text if typed else ""


register_status("typing", "#5e35b1", {"en": "typing…", "zh": "正在输入…"})
CARD_PARTS[ReplyDelta] = StreamedPart()
