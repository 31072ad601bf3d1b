"""Lesson 10's part of a card: a stop rule's LimitReached, below the reply that reached the limit.

The card's status is "limit" until the closing call's answer (or a Stopped) ends the round, and the note is drawn in
the status's colour.
"""

from __future__ import annotations

from tinyagent.robustness.stop_rules import LimitReached
from tinyagent.widgets.cards import CARD_PARTS, Card, ClosingNote, register_status


class LimitPart(ClosingNote):
    colour = "#d84315"
    outranks = "observed"  # a round that reached a limit says so, even once its tool ran

    def status(self, card: Card) -> str | None:
        return "limit"


register_status("limit", LimitPart.colour, {"en": "limit reached", "zh": "到达限制"})
CARD_PARTS[LimitReached] = LimitPart()
