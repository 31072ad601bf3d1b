"""Lessons 17 and 21: a run whose question another model wrote, and the conversation that led to it.

A plan's step is the planner's sentence (lesson 17); a specialist's request is the triage's (lesson 21). The executor
and the specialist read it as their question, a user message, as they should: it is what they are asked to do. But
it is a model's words, not the customer's, and a model that read a planted note can write "refund order 88236" into
it. A part that must tell the customer's words from a model's (lesson 25's defences) would take it for the
customer's, as it takes every user message that is not an Observation. So such a run keeps, beside what it sends,
the conversation it was handed from:

    the triage's conversation                         the specialist's run
      system     triage prompt                          system     its skill's prompt
      user       the customer's question      ──┐       user       "refund order 88236"    <- the triage's words
      assistant  Action: handOffToRefunds      │       assistant  Action: applyRefund ...
                 Action Input: refund ...     │       ...
                                              └── run.handed.conversation

    conversation_of(run) = that conversation + the run's own messages without its handed question

What the model is sent does not change: only a reader that asks `conversation_of(run)` sees who wrote what.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Handed:
    """Where a handed run's question came from: the `conversation` it was written in (kept, not sent), and the
    question's place in the run's messages (`question_at`)."""

    conversation: tuple[dict, ...]
    question_at: int


def handed_over(run: Any, conversation: list[dict]) -> Any:
    """Mark `run`, just started (`agent.start(question)`), as one whose question another model wrote in
    `conversation`; returns the run. Its messages, and what it sends, stay as they are."""
    run.handed = Handed(tuple(dict(message) for message in conversation), len(run.messages) - 1)
    return run


def conversation_of(run: Any) -> list[dict]:
    """Who wrote what in `run`: its messages; for a run `handed_over`, the conversation it was handed from, then its
    own messages without the question a model wrote (the system prompts stay: a tool's description is there)."""
    handed = getattr(run, "handed", None)
    if not isinstance(handed, Handed):
        return list(run.messages)
    return [*handed.conversation, *(m for i, m in enumerate(run.messages) if i != handed.question_at)]
