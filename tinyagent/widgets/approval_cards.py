"""Lesson 15's part of a card: a person's yes or no, between a tool call and its result.

An ApprovalRequested draws the request, and the card's status is "waiting for approval" until an ApprovalDecided
answers it; the decision draws its outcome and who decided.
"""

from __future__ import annotations

from tinyagent.toolkit.confirmation import APPROVAL_LABELS, ApprovalDecided, ApprovalRequested
from tinyagent.widgets.cards import CARD_PARTS, Card, CardPart, esc, register_status, row, tint

WORDS = {"en": {"asked": "Waiting for approval", "decided": "Approval"},
         "zh": {"asked": "等待批准", "decided": "批准结果"}}


class ApprovalPart(CardPart):
    place = "after_calls"
    colour = "#6a1b9a"
    outranks = "acting"  # a call that waits for a person waits for them, not for the tool

    def rows(self, card: Card, event: ApprovalRequested | ApprovalDecided, lang: str) -> list[str]:
        c = self.colour
        if isinstance(event, ApprovalRequested):
            return [row(WORDS[lang]["asked"], esc(event.summary), c, "ta-approval-asked", tint(c))]
        outcome = APPROVAL_LABELS[lang]["outcomes"].get(event.outcome, event.outcome)
        detail = f" ({event.detail})" if event.detail else ""
        return [row(WORDS[lang]["decided"], esc(f"{outcome} · {event.by}{detail}"), c,
                    f"ta-approval ta-approval-{event.outcome}")]

    def status(self, card: Card) -> str | None:
        return "waiting_approval" if isinstance(card.kept[self][-1], ApprovalRequested) else None


register_status("waiting_approval", ApprovalPart.colour, {"en": "waiting for approval", "zh": "等待批准"})
CARD_PARTS[ApprovalRequested] = CARD_PARTS[ApprovalDecided] = ApprovalPart()
