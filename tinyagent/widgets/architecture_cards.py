"""The parts of a card for the events that close a round in the designs around the loop: lesson 17's finished plan
step (PlanStepDone) and reflection (Reflected), lesson 21's handoff (Handoff, below the call that made it). Each is
drawn as the printed trace shows it, below the round's results. Their other events (a plan, a step started, a route,
a skill, lesson 22's search) open a round, as every event with no part of its own does.
"""

from __future__ import annotations

from tinyagent.architectures.handoffs import Handoff
from tinyagent.architectures.plan_execute import PlanStepDone
from tinyagent.architectures.reflection import Reflected
from tinyagent.widgets.cards import CARD_PARTS, ClosingNote

CARD_PARTS[PlanStepDone] = CARD_PARTS[Reflected] = CARD_PARTS[Handoff] = ClosingNote()
