"""A stored run, continued with a person's edit (lesson 19's page; editable_trace.py is the edit itself).

    POST /agent/sessions/{session_id}/turns/{turn}/continue
         {"step": 2, "reply": "Thought: ...\\nAction: ...\\nAction Input: ..."}   edit round 2's Thought
         {"step": 2, "retry": true, "input": "SF1234567890"?}                   run round 2's tool again

answers like POST /agent/stream: the continued run's events as Server-Sent Events, from the edited round on (the
earlier rounds are the stored trace's), and last `end` with the new turn's number. The continued run is a new turn
of the same session, a run of the service's own agent: a retried `applyRefund` waits for a person's yes again.

An edited reply chooses the round's Action itself, whatever the model would have done: whoever holds the session id
can ask for any tool with any input. The confirmation gate is what stands between such an edit and a refund; with
`auto_approve` (a demonstration) nobody is asked.

Which runs can be continued: the last `KEEP` turns this process ran (their traces are kept in memory, not in the
session store). A turn another worker ran, or one from before a restart, is answered 404.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from tinyagent.agent import AgentRun, ReActAgent
from tinyagent.editable_trace import ContinuedRun, EditError, check_edit
from tinyagent.events import LlmCall
from tinyagent.trace import Trace

KEEP = 256  # turns whose traces a process keeps for a later edit
FIELDS = ("step", "reply", "retry", "input")


class KeptTraces:
    """The traces of the last `limit` turns, by (session id, turn number). Safe from several threads."""

    def __init__(self, limit: int = KEEP):
        self.limit = limit
        self._traces: OrderedDict[tuple[str, int], Trace] = OrderedDict()
        self._lock = threading.Lock()

    def keep(self, session_id: str, turn: int, trace: Trace) -> None:
        with self._lock:
            self._traces[(session_id, turn)] = trace
            while len(self._traces) > self.limit:
                self._traces.popitem(last=False)

    def get(self, session_id: str, turn: int) -> Trace | None:
        with self._lock:
            return self._traces.get((session_id, turn))


@dataclass(frozen=True)
class Edit:
    """One person's edit of a kept trace, checked (check_edit): the reply round `step` starts from, and its event."""

    trace: Trace
    step: int
    reply: str | None = None
    retry: bool = False
    tool_input: str | None = None

    def __post_init__(self) -> None:
        check_edit(self.trace, self.step, reply=self.reply, retry=self.retry, tool_input=self.tool_input)

    @property
    def question(self) -> str:
        """The question of the run being continued (its first request's last message)."""
        first = next(e for e in self.trace.events if isinstance(e, LlmCall))
        return first.messages[-1]["content"]

    def agent(self, agent: ReActAgent) -> EditingAgent:
        return EditingAgent(agent, self)


class EditingAgent:
    """`agent` as a Session sees it, whose next run is the edited one: `start` continues the kept trace (the
    session's history is not needed: the trace holds the messages the model read)."""

    def __init__(self, agent: ReActAgent, edit: Edit):
        self._agent, self._edit = agent, edit

    def __getattr__(self, name: str):
        return getattr(self._agent, name)

    def start(self, question: str, history: list[dict] | None = None) -> AgentRun:
        e = self._edit
        text, event = check_edit(e.trace, e.step, reply=e.reply, retry=e.retry, tool_input=e.tool_input)
        return ContinuedRun(self._agent, e.trace, e.step, text, event)


def read_edit(data: dict, trace: Trace) -> Edit:
    """The body of a continue request as an Edit, or EditError with what is wrong (the app answers 400)."""
    step, reply, retry, tool_input = data.get("step"), data.get("reply"), data.get("retry", False), data.get("input")
    if not isinstance(retry, bool):
        raise EditError('"retry" must be true (run the round\'s tool again) or left out')
    if reply is not None and not isinstance(reply, str):
        raise EditError('"reply" must be text: the round\'s Thought, Action and Action Input as you want them')
    if tool_input is not None and not retry:
        raise EditError('"input" goes with "retry": true (the Action Input to run the tool again with)')
    if tool_input is not None and not isinstance(tool_input, str):
        raise EditError('"input" must be text: the Action Input to run the tool again with')
    if reply is None and not retry:
        raise EditError('send "reply" (the edited Thought) or "retry": true, with the round in "step"')
    return Edit(trace, step, reply, retry, tool_input)
