"""Lesson 10's part of the step debugger: a stop rule's LimitReached ends its step.

Each other step ends one model call or one tool call; a LimitReached follows the reply that fired an after-reply rule
(cut off, a repeated action) or, for a rule that fires before a model call (the step cap, the budget, the time, no
progress), stands alone as a step with no call. The closing call, one more model call for the best answer from what
is known, is the next step, and the status says so.
"""

from __future__ import annotations

from tinyagent.robustness.stop_rules import LimitReached
from tinyagent.widgets.step_debugger import STEP_PARTS, StepDebugger, StepPart


class LimitStep(StepPart):
    def ends_step(self, event: LimitReached) -> bool:
        return True

    def next_action(self, debugger: StepDebugger, event: LimitReached) -> str:
        return f"call the model once more for a closing answer (a stop rule fired: {event.reason})"


STEP_PARTS[LimitReached] = LimitStep()
