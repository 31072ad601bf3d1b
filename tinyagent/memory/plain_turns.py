"""Several requests in one conversation, carried as a plain list of messages (lesson 13's driver).

    results = run_turns(agent, ["Where is order 88232?", "Then refund it, please."])

Each turn is `agent.run(question, history=...)` with every message of the turns before it: the requests, the
Thoughts and Actions, the Observations and the answers, everything but the system prompt (each run builds
its own). That is what the model would read had the whole conversation been one long run, and it is what a
context budget (context_budget.py) has to fit. A turn that ended without the model's answer (a stopped run)
gets its polite answer as an assistant message, as the customer saw it.

This is the smallest thing that works, for scripted sessions and benchmarks. Lesson 12's sessions
(`tinyagent.memory.session.Session`) keep a history between calls, in a database, with a memory that chooses what to
keep; any agent works with both.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from tinyagent.agent import AgentResult, ReActAgent
from tinyagent.events import Stopped


def run_turns(agent: ReActAgent, questions: Iterable[str], history: list[dict] | None = None) -> list[AgentResult]:
    """Ask `questions` one after another in one conversation; the result of each turn, in order."""
    return list(iter_turns(agent, questions, history))


def iter_turns(agent: ReActAgent, questions: Iterable[str], history: list[dict] | None = None
               ) -> Iterator[AgentResult]:
    """`run_turns` one turn at a time (a notebook can print each answer as it comes)."""
    history = [dict(m) for m in history or ()]
    for question in questions:
        result = agent.run(question, history=history)
        yield result
        history = next_history(result)


def next_history(result: AgentResult) -> list[dict]:
    """The history the next turn gets after `result`: its messages without the system prompt, ending with
    the answer the customer saw."""
    messages = [dict(m) for m in result.messages[1:]]
    last = messages[-1] if messages else {}
    # A stopped run's last message (if it is the model's at all) is not what the customer was told.
    if isinstance(result.trace.end, Stopped) or last.get("role") != "assistant" or last.get("tool_calls"):
        messages.append({"role": "assistant", "content": result.answer})
    return messages
