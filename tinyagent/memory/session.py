"""`Session`: one conversation across many `run()` calls, kept in a store, with a memory strategy.

    agent = ReActAgent(LlmClient.from_settings(), shop_registry(shop))
    session = Session(agent, memory=SlidingWindow(3))     # defaults: FullHistory(), in-memory SQLite
    session.ask("Hi, my order is 88231.")                 # the AgentResult of agent.run(question, history=...)
    session.ask("Where is it?")                           # this run also sees turn 1
    session.turns()                                       # [Turn, Turn]: question, answer, token counts
    session.history()                                     # what the next run would be given
    session.last_history                                  # what the last run was given

    store = SqliteSessionStore("sessions.db")              # persisted: resume it later, in another process
    session = Session(agent, store=store)                  # a new session, id session.id
    Session(agent, store=store, session_id=session.id)     # the same session again, with its history

    facts = UserFacts("facts.db")                          # long-term memory about a user (user_facts.py)
    Session(agent, facts=facts, user_id="u1")              # recalled facts are given to every run

The agent stays as it is: a run is `agent.run(question, history=messages)` (any agent with that method:
`ReActAgent`, `FunctionCallingAgent`). What the session keeps of each run is a `Turn`: the user's question and the
run's final answer, plus figures. The run's inner rounds (Thought, Action, Observation) are not kept: the next run
sees the earlier turns as plain user/assistant messages, as a chat app shows them. So a later turn that needs an
earlier tool result (a tracking number) must find it in an earlier answer, or call the tool again. A run that
stopped without an answer of its own (lesson 06's step cap, the model failing, lesson 13's budget) answers with the
loop's canned sentence: what it had changed by then (a refund written: run_changes.py) is said after that sentence,
in the answer `ask` returns and in the answer the Turn keeps, so neither the caller nor the next run is told less
than was done. After lesson 10's closing reply (the model's best answer at a limit) the changes are said too, as
that reply may leave them out. Which tools change something: a team's own list (lesson 21), else every tool not
marked `read_only` (tools.Tool). The memory strategy (session_memory.py) decides how much of the history each run
is given.

Messages given to a run, in order: recalled facts (a system message), then the memory's messages (a summary
as a system message, then user/assistant pairs). The agent puts its own system prompt first and the new
question last.

A run stopped by Ctrl-C (Kernel > Interrupt) still raises KeyboardInterrupt, but a refund it wrote stays written: when
it had changed something (a refund's result in its trace, or a refund's call it was stopped inside, which may have
been made), the session keeps an "interrupted" turn that says so, and the traceback ends with the same words. One
that changed nothing keeps no turn. The run's trace comes with the Ctrl-C as its `trace` (lesson 06's
`AgentRun.finish` hands it on through `trace.kept_with_ctrl_c`); from an agent whose run does not, nothing is kept.

A store that fails after the run (a file another process holds locked past the busy timeout, a full disk) does not
lose the answer, whose tools have run: `ask` still returns it, with a `TurnNotStored` warning and `store_error`
saying why.

Token counts are taken with `tinyagent.protocols.token_count.token_counter()` (cl100k_base when quicktok-v1 is
installed, else the classroom rule; `counter.name` says which), not the server's `usage`, so they can be
compared across models.
"""

from __future__ import annotations

import uuid
import warnings
from dataclasses import replace
from typing import TYPE_CHECKING

from tinyagent.errors import first_line
from tinyagent.events import LlmCall
from tinyagent.memory.run_changes import (
    STOPPED,
    calls_cut_short,
    changes_made,
    said_after,
    said_after_stop,
    writes_in,
)
from tinyagent.memory.session_memory import FullHistory, Memory
from tinyagent.memory.session_store import (
    SessionStore,
    SessionStoreError,
    SqliteSessionStore,
    Turn,
    check_session_id,
)
from tinyagent.memory.user_facts import UserFacts, facts_message
from tinyagent.prompts import detect_language
from tinyagent.protocols.token_count import TokenCounter, token_counter
from tinyagent.safe_text import replace_lone_surrogates

if TYPE_CHECKING:
    from tinyagent.agent import AgentResult
    from tinyagent.trace import Trace

__all__ = ["Session", "Turn", "TurnNotStored", "message_tokens"]


class TurnNotStored(UserWarning):
    """The run finished (its tools ran) but the session's store could not keep its turn: the answer is still
    returned, and `Session.store_error` says why."""


def message_tokens(messages: list[dict], counter: TokenCounter | None = None) -> int:
    """What `messages` add to a request, in tokens: the counter's chat rule without the reply's priming
    (3 per message plus its role and content, with cl100k_base). `Turn.history_tokens` is this."""
    counter = counter or token_counter()
    return counter.chat(list(messages)) - counter.chat([])


class Session:
    """A conversation across runs.

    agent:      anything with `run(question, history=[...])` returning an AgentResult
    memory:     a strategy from session_memory.py (default FullHistory()), or your own
    store:      where turns are kept (default: a new in-memory SQLite store, gone with the process)
    session_id: the id of a session to resume (its turns are in `store`), or None for a new one
    facts:      a UserFacts for long-term memory about the user, recalled for every question
    user_id:    whose facts (needed with `facts`)
    counter:    the token counter for the figures in each Turn (default token_counter())
    """

    def __init__(
        self,
        agent,
        *,
        memory: Memory | None = None,
        store: SessionStore | None = None,
        session_id: str | None = None,
        facts: UserFacts | None = None,
        user_id: str | None = None,
        counter: TokenCounter | None = None,
    ):
        if not callable(getattr(agent, "run", None)):
            raise TypeError("Session needs an agent with run(question, history=[...]), e.g. a ReActAgent")
        if facts is not None and not (isinstance(user_id, str) and user_id.strip()):
            raise ValueError("a Session with facts= needs user_id= (whose facts to recall)")
        if memory is not None and not callable(getattr(memory, "history", None)):
            raise TypeError("memory must have a history(session) method (see tinyagent.memory.session_memory)")
        self.agent = agent
        self.memory = memory if memory is not None else FullHistory()
        self.store = store if store is not None else SqliteSessionStore()
        self.id = check_session_id(session_id) if session_id is not None else uuid.uuid4().hex
        self.facts = facts
        self.user_id = user_id
        self.counter = counter or token_counter()
        self.lang = getattr(agent, "lang", None) or "en"  # the language of the question being answered
        self.last_history: list[dict] = []
        self.last_result = None
        self.store_error = ""  # why the last turn could not be stored ("" when it was)

    def turns(self) -> list[Turn]:
        """Every turn of this session so far, oldest first (read from the store each time, so turns other
        processes added are there too)."""
        return self.store.turns(self.id)

    def history(self, question: str | None = None) -> list[dict]:
        """The messages the next run is given: the facts recalled for `question` (if facts are kept), then
        what the memory keeps of the earlier turns. The agent adds its system prompt and the question."""
        if question is not None:
            self.lang = self._language_for(question)
        recalled = []
        if self.facts is not None and question:
            found = self.facts.recall(self.user_id, question)
            recalled = [facts_message(found, self.lang)] if found else []
        return recalled + list(self.memory.history(self))

    def ask(self, question: str) -> AgentResult:
        """Run the agent on `question` with this session's memory, store the turn, return the AgentResult (also
        when the turn could not be stored: see `store_error`). After a stop, its answer and the turn's are the
        canned sentence followed by the changes the run had made (a refund), if it made any. A Ctrl-C is raised
        again, after keeping an "interrupted" turn if the run had changed something (the module's docstring)."""
        if not isinstance(question, str) or not question.strip():
            raise ValueError("the question must be a non-empty string")
        question = replace_lone_surrogates(question)  # as the agent reads it, and as the store can keep it
        history = self.history(question)
        try:
            result = self.agent.run(question, history=history)
        except KeyboardInterrupt as stop:  # Ctrl-C (Kernel > Interrupt): a refund the run wrote stays written
            self.last_history, self.last_result = history, None
            self._keep_interrupted(question, history, getattr(stop, "trace", None), stop)
            raise
        result = self._with_changes_said(result)
        first_request = result.messages[: len(history) + 2]  # system prompt, history, question
        self._keep(self._turn(question, result.answer, result.reason, history, result.trace, first_request))
        if self.store_error:  # after the run, whose tools have run: said, never raised over its answer
            warnings.warn(f"the answer was not stored in the session: {self.store_error}", TurnNotStored,
                          stacklevel=2)
        self.last_history, self.last_result = history, result
        return result

    def _turn(self, question: str, answer: str, reason: str, history: list[dict], trace: Trace,
              first_request: list[dict]) -> Turn:
        calls = trace.of_type(LlmCall)
        return Turn(
            question=question,
            answer=answer,
            reason=reason,
            rounds=len(calls),
            tools=tuple(call.name for call in trace.tool_calls),
            history_tokens=message_tokens(history, self.counter),
            prompt_tokens=self.counter.chat(first_request),
            tokens_sent=sum(self.counter.chat(list(call.messages)) for call in calls),
        )

    def _keep(self, turn: Turn) -> None:
        """Append `turn` to the store; a store that fails is said in `store_error` ("" when it was kept)."""
        try:
            self.store.append_turn(self.id, turn)
            self.store_error = ""
        except SessionStoreError as exc:
            self.store_error = first_line(exc)

    def _keep_interrupted(self, question: str, history: list[dict], trace: Trace | None, stop: KeyboardInterrupt) -> None:
        """A run stopped by Ctrl-C that had changed something (a refund written, or a refund's call cut short, which
        may have been written) is kept as an "interrupted" turn that says so, and the same words end the Ctrl-C's
        traceback: the next run must not contradict the shop. One that changed nothing keeps no turn, as if the
        question had not been asked (lesson 19's service keeps a run it stops the same way). `trace` is what the
        run had done: lesson 06's run hands it on with the Ctrl-C (None from an agent whose run does not)."""
        writes = self._writes()
        done = changes_made(trace, writes) + calls_cut_short(trace, writes) if trace is not None else []
        if not done:
            return
        answer = said_after(STOPPED.get(trace.lang, STOPPED["en"]), done, trace.lang)
        calls = trace.of_type(LlmCall)
        first_request = list(calls[0].messages) if calls else []  # as it was sent: the run's own list went with it
        self._keep(self._turn(question, answer, "interrupted", history, trace, first_request))
        kept = (f"the session could not keep this turn ({self.store_error})" if self.store_error
                else "the session kept this turn, so its next run is told")
        stop.add_note(f"The run was stopped after it had changed something; {kept}:\n{answer}")

    def _with_changes_said(self, result: AgentResult) -> AgentResult:
        """`result`, whose answer, when a stop ended the run, is followed by what the run had changed before it:
        the loop's canned sentence knows nothing of a refund written a round earlier (SAID), and a stop's closing
        reply (lesson 10), the model's best answer at a limit, may leave it out (MADE)."""
        trace = result.trace
        # A run that ended on its own answered for itself; an answer other than the end's own words already says
        # the changes (lesson 19's service adds them to its runs' answers before this session keeps them).
        if result.ok or result.answer != getattr(trace.end, "answer", None):
            return result
        changes = changes_made(trace, self._writes())
        return replace(result, answer=said_after_stop(result.answer, changes, trace)) if changes else result

    def _writes(self):
        """The guards for changes_made: the agent's own when it names them (lesson 21's Team.writes: its specialists'
        tools, never a handoff), else every tool of its registry not `read_only` (writes_in); an agent with neither:
        every tool may change something."""
        writes = getattr(self.agent, "writes", None)
        if callable(writes):
            return writes
        tools = getattr(self.agent, "tools", None)
        return writes_in(tools) if callable(getattr(tools, "get", None)) else lambda name: True

    def remember(self, text: str):
        """Keep `text` as a long-term fact about this session's user (needs `facts=` and `user_id=`)."""
        if self.facts is None:
            raise ValueError("this Session keeps no long-term facts: create it with facts=UserFacts(...), user_id=...")
        return self.facts.remember(self.user_id, text)

    def _language_for(self, question: str) -> str:
        language_for = getattr(self.agent, "language_for", None)
        return language_for(question) if callable(language_for) else detect_language(question)

    def __repr__(self) -> str:
        return f"Session(id={self.id!r}, memory={self.memory!r}, store={self.store!r})"
