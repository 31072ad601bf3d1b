"""Lesson 21: a team's handoffs are its routing, not the shop's tools, so lesson 18's grading leaves them out.

A triage agent hands a request on by calling a handoff tool (handOffToRefunds), and a specialist hands it back with
handBack (architectures/handoffs.py). Counted as tool uses, every team run would fail the tools check: "no other tool
was called". Imported by tinyagent.evaluation, this module adds the handoffs' test to grading.ROUTING_CALLS.
"""

from __future__ import annotations

from tinyagent.architectures.handoffs import is_handoff
from tinyagent.evaluation.grading import ROUTING_CALLS

if is_handoff not in ROUTING_CALLS:
    ROUTING_CALLS.append(is_handoff)
