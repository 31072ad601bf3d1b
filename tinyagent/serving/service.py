"""`AgentService`: what the web app runs for each request, away from the app's event loop.

The agent's model calls are blocking (`requests`), so a run must not happen on the event loop that serves
every other client: each run is given a thread of the service's own pool, and the loop only waits for it.
Two requests at once are then two runs at once (up to `max_runs`; more wait in line for a thread).

A run reports its events as they happen through `on_event`, called from the run's thread: the app turns
them into Server-Sent Events. The app may ask a run to stop (the client went away): the run checks between
events, so it stops at its next event (the next piece of the model's reply, when the run streams). No turn is
stored for it, unless it had already changed something (a refund approved and written): then the session keeps a
turn with reason "cancelled" that says what was done (`RunCancelled.turn`).

A refund needs a person's yes (lesson 15's gate, one per run; approvals.py): the run pauses at the
`ApprovalRequested` event until an answer arrives over HTTP or the time runs out, and its own time limit
stands still meanwhile. `auto_approve` says yes by itself, for a demonstration.

Each run's agent (`AgentService.agent`) is lesson 06's loop on the shop's tools, or with `team` lesson 21's team
of specialists (handoffs.py). Lesson 25's defences against planted instructions are on unless `defences` leaves
one out: Observations fenced (FencedData), a refund's order id only from the customer's words (CustomerWordsOnly),
and each approval saying where its ids came from (the sourced gate, approvals.py).

Sessions are lesson 12's (session.py): a run with a session id reads the session's earlier turns from the
store and adds its own; without one, a new session is made. The store is SQLite by default (one machine)
or PostgreSQL by URL (several workers, several machines), so any worker can continue any session.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path

from tinyagent.agent import AgentResult, ReActAgent
from tinyagent.architectures.handoffs import Team, shop_specialists
from tinyagent.clock import Clock, fixed_clock, system_clock
from tinyagent.errors import first_line
from tinyagent.events import Event
from tinyagent.llm_client import LlmClient, reply_timeouts
from tinyagent.memory.run_changes import STOPPED, changes_made, said_after, said_after_stop
from tinyagent.memory.session import Session
from tinyagent.memory.session_store import SessionStore, SessionStoreError, Turn, open_session_store
from tinyagent.protocols.streaming import StreamedSend
from tinyagent.registry import ToolRegistry
from tinyagent.robustness.stop_rules import StopRules, WallClock
from tinyagent.safe_text import replace_lone_surrogates
from tinyagent.serving.approvals import Approvals, PausableClock, new_gate, new_run_id
from tinyagent.serving.edits import Edit, KeptTraces
from tinyagent.settings import load_settings
from tinyagent.toolkit.confirmation import ApprovalDecided, ApprovalRequested, ConfirmationGate, GatedAct

log = logging.getLogger("tinyagent.serving")  # the app's logger (app.py, streams.py)
DEFAULT_SESSIONS = Path.home() / ".cache" / "tinyagent" / "sessions.sqlite3"
DEFAULT_SHOP = Path.home() / ".cache" / "tinyagent" / "bitmall.sqlite3"  # `ask --db` keeps a shop like this one
SERVICE_DEFENCES = ("fenced data", "customer's words", "sourced gate")  # lesson 25: all on unless turned off


@dataclass(frozen=True)
class ServiceConfig:
    """What one service process needs to know; the command line builds it, every worker reads the same.

    max_steps:      rounds a run may take (lesson 06's cap)
    timeout_s:      wall time of a run: the stop rule WallClock ends it politely after this, and no single
                    model reply may take longer; the app answers 504 if a run is still going well past it
    max_body_bytes: the largest request body the app reads (a question is a few hundred bytes)
    max_runs:       runs at once in this process (threads); requests beyond wait for a free one
    api_key:        the client key: when set, every /agent and /v1 request must send `Authorization: Bearer <api_key>`
                    (or the operator key); without it, of this machine's programs only those of the account
                    running the service may send them (app.py, check_this_account; Linux)
    operator_key:   the key of the person who lists and answers approvals (app.py, check_operator); without it,
                    only a service with no api_key takes answers, and only from this machine, by the account
                    running the service (Linux)
    session_store:  an SQLite file, or a postgresql:// URL (open_session_store)
    shop_db:        the shop's SQLite file (":memory:": a fresh shop per process)
    now:            pretend it is this time (ISO), as `ask --now`; None: the real time
    model:          override TINYAGENT_MODEL (a classroom variant, say)
    header_timeout_s: seconds a connection may take to send a request's headers, and the rest of a body that
                      its answer left unread (connections.py)
    max_connections:  connections held at once; more are closed as they open
    max_connections_per_client: connections held at once from one client address (connections.py); more from
                    it are closed as they open, so that one client cannot take every slot. The same share of the
                    run threads bounds the refunds one client may have waiting for a yes (approvals_per_client)
    allowed_hosts:  without api_key, the host names answered besides localhost, 127.0.0.1, ::1 and the address the
                    service listens on
    approval_timeout_s: how long a refund waits for a person's yes; then it does not run (outcome "timeout",
                    approvals.py)
    auto_approve:   say yes to every refund without asking anyone (a demonstration; printed at start)
    resume_grace_s: how long a streamed run goes on with nobody reading it, for its client to come back with
                    Last-Event-ID (streams.py); then it is stopped
    team:           answer with lesson 21's team (handoffs.py): a triage agent and the shop's specialists; every
                    event of the trace names its agent
    defences:       lesson 25's defences against prompt injection, all on by default (SERVICE_DEFENCES): "fenced
                    data" (Observations fenced; with team, the triage's too, its specialists' answers), "customer's
                    words" (a refund's order id only from the customer's messages), "sourced gate" (each approval
                    lists where its ids came from); `serve --without "fenced data"` (or a tuple without it) turns one
                    off. Least privilege is the team's (--team): each specialist has only its skill's tools
    """

    max_steps: int = 10
    timeout_s: float = 120.0
    max_body_bytes: int = 16 * 1024
    max_runs: int = 64
    api_key: str | None = field(default=None, repr=False)  # a key is never printed
    operator_key: str | None = field(default=None, repr=False)
    session_store: str = str(DEFAULT_SESSIONS)
    shop_db: str = str(DEFAULT_SHOP)
    now: str | None = None
    model: str | None = None
    header_timeout_s: float = 10.0
    max_connections: int = 512
    max_connections_per_client: int = 128
    allowed_hosts: tuple[str, ...] = ()
    approval_timeout_s: float = 60.0
    auto_approve: bool = False
    resume_grace_s: float = 5.0
    team: bool = False
    defences: tuple[str, ...] = SERVICE_DEFENCES

    def __post_init__(self) -> None:
        unknown = [name for name in self.defences if name not in SERVICE_DEFENCES]
        if unknown:
            raise ValueError(f"no defence {', '.join(map(repr, unknown))}: the service's defences are "
                             f"{', '.join(SERVICE_DEFENCES)}")

    @property
    def longest_run_s(self) -> float:
        """How long a run may take in all: its own time, and the time a person may take to approve each request
        it may ask (one a round: a run asking for two refunds waits for two answers)."""
        return self.timeout_s + (0.0 if self.auto_approve else self.max_steps * self.approval_timeout_s)

    @property
    def approvals_per_client(self) -> int:
        """How many refunds one client address may have waiting for a person's yes at once: its share of the
        connections, taken of the run threads (64 × 128 / 512 = 16 by default). Each waiting run holds a thread
        for up to `approval_timeout_s`; without a share, one client asking for refunds nobody answers would hold
        every thread, and everyone else's question would wait in line behind them (approvals.py)."""
        return max(1, self.max_runs * self.max_connections_per_client // max(self.max_connections, 1))

    def too_long(self) -> str:
        """What a client is told of a run stopped at `longest_run_s` (the 504, a stream's error event)."""
        return (f"the run took longer than {self.longest_run_s:g} s in all (its own {self.timeout_s:g} s and a "
                "person's time for each approval) and was stopped")


class RunCancelled(Exception):  # a signal between threads, not an error the user sees
    """The client went away (or the service stops, or the run took too long): the run stopped between two events.
    `changes` are what it had changed by then (memory/run_changes.py: a refund approved and written); when there are
    any, the session keeps a turn that says them (`turn`), and every answer to the client names them."""

    def __init__(self, changes: list[str] | None = None, lang: str = "en"):
        super().__init__("the run was stopped")
        self.changes, self.lang = list(changes or []), lang
        self.turn: int | None = None

    def said(self, stopped: str) -> str:
        """`stopped` (what the client is told), with the changes after it."""
        return said_after(stopped, self.changes, self.lang)


@dataclass
class RunOutcome:
    """A finished run. `turn` is its number in the session; None, with `store_error` saying why, when the
    answer could not be stored (the run's effects stand all the same, so the client still gets its answer)."""

    result: AgentResult
    session_id: str
    turn: int | None
    store_error: str = ""


class AgentService:
    """The shop agent behind the web app: builds an agent per run and runs it in a thread of its pool.

    llm:   a function returning the LlmClient for a run (default: the configured model, as `ask` uses)
    tools: a function (shop, clock) -> ToolRegistry (default: the shop's tools, shop_registry)
    """

    def __init__(self, config: ServiceConfig, *, llm: Callable[[], LlmClient] | None = None,
                 tools: Callable[..., ToolRegistry] | None = None):
        from tinyagent.shop import (  # the shop loads with the service, not with `import tinyagent`
            Shop,
            shop_registry,
        )
        from tinyagent.shop.refund_review import describe_refund

        self.config = config
        self.clock: Clock = fixed_clock(config.now) if config.now else system_clock
        if llm is None:
            settings = load_settings(model=config.model, notice=False)  # a bad setting fails here, at start
            timeouts = reply_timeouts(config.timeout_s)
            llm = lambda: LlmClient.from_settings(settings, **timeouts)  # one client per run
        self._llm = llm
        self._tools = tools or shop_registry
        # The shop and the store may each make a new file. Whichever is refused, the other must leave none behind for
        # a service that never started: an existing shop file is opened first (that makes nothing new), else the
        # store is (a refused store, another program's database or a server that is down, makes no shop file).
        with ExitStack() as opened:  # the first is closed again if the second is refused
            if Path(config.shop_db).exists():
                self.shop = opened.enter_context(Shop(config.shop_db, clock=self.clock))
                self.store: SessionStore = opened.enter_context(open_session_store(config.session_store))
            else:
                self.store = opened.enter_context(open_session_store(config.session_store))
                self.shop = opened.enter_context(Shop(config.shop_db, clock=self.clock))
            opened.pop_all()  # both open: the service keeps them (close() closes them)
        # What a person approves is what the shop's applyRefund will do (the amount, the order as the tool reads its
        # id), not the model's own words for it, which may name another amount or order.
        self._describe = {"applyRefund": describe_refund(self.shop)}
        self._pool = ThreadPoolExecutor(max_workers=config.max_runs, thread_name_prefix="agent-run")
        self._lock = threading.Lock()
        self.counts = {"running": 0, "finished": 0, "cancelled": 0, "failed": 0}
        self.approvals = Approvals(per_client=config.approvals_per_client)
        self._stopping = threading.Event()  # stop_runs(): every run stops at its next event
        self.traces = KeptTraces()  # the last turns' traces, for a person's edit (edits.py)

    def agent(self, stream: bool, gate: ConfirmationGate | None = None,
              clock: Callable[[], float] = time.monotonic) -> ReActAgent:
        # A fresh agent and client per run: nothing of one run (a connection, a parser state) leaks into another.
        send = [StreamedSend()] if stream else []
        rules = StopRules([WallClock(self.config.timeout_s, clock=clock)])
        gated = [GatedAct(gate)] if gate is not None else []
        defences = self.defence_parts()
        if self.config.team:  # lesson 21: the refunds specialist's applyRefund waits at the run's gate
            llm = self._llm()
            members = shop_specialists(llm, self._tools(self.shop, self.clock),
                                       parts=[*send, rules, *gated, *defences])
            # A specialist's answer is the triage's tool result, and may repeat a note the specialist read: fenced.
            return Team(llm, members, max_steps=self.config.max_steps, parts=[*send, rules, *self.fence_parts()])
        return ReActAgent(self._llm(), self._tools(self.shop, self.clock), max_steps=self.config.max_steps,
                          parts=[*send, rules, *gated, *defences])

    def defence_parts(self) -> list:
        """Lesson 25's parts the configured defences mount (the sourced gate is the run's gate: new_gate)."""
        from tinyagent.defences.customer_words import CustomerWordsOnly

        return [*self.fence_parts(), *([CustomerWordsOnly()] if "customer's words" in self.config.defences else [])]

    def fence_parts(self) -> list:
        """Defence (a)'s part, if configured: what the team's triage gets too (it calls no shop tool to check)."""
        from tinyagent.defences.fenced_data import FencedData

        return [FencedData()] if "fenced data" in self.config.defences else []

    def session_exists(self, session_id: str) -> bool:
        return bool(self.store.turns(session_id))

    def submit(self, question: str, session_id: str | None, *, stream: bool = False,
               on_event: Callable[[Event], None] | None = None,
               cancelled: threading.Event | None = None, run_id: str | None = None,
               history: list[dict] | None = None, edit: Edit | None = None, client: str = "") -> Future:
        """Start a run in the pool; the Future holds its RunOutcome (or RunCancelled). `run_id` names the run
        in its approval ids (approvals.py): give a random one (new_run_id) to know them as they come.
        `history` (the OpenAI-compatible route's messages before the question) runs the question after it
        with no session: the conversation is the client's, and nothing is stored. `edit` continues a kept trace
        from a person's edit (edits.py) as a new turn of `session_id`. `client` is who asks (connections.client_key):
        its refunds waiting for a yes are bounded by `config.approvals_per_client`."""
        future = self._pool.submit(self._run, question, session_id, stream, on_event,
                                   cancelled or threading.Event(), run_id or new_run_id(), history, edit, client)
        future.add_done_callback(self._keep_trace)
        return future

    def _keep_trace(self, future: Future) -> None:
        if not future.cancelled() and future.exception() is None and future.result().turn is not None:
            outcome = future.result()
            self.traces.keep(outcome.session_id, outcome.turn, outcome.result.trace)

    def _run(self, question: str, session_id: str | None, stream: bool,
             on_event: Callable[[Event], None] | None, cancelled: threading.Event, run_id: str,
             history: list[dict] | None = None, edit: Edit | None = None, client: str = "") -> RunOutcome:
        self._count("running", +1)
        ended = "failed"
        gate = new_gate(self.config.approval_timeout_s, self.config.auto_approve, "sourced gate" in self.config.defences,
                        describe=self._describe)
        self.approvals.add(run_id, gate, question, client)
        try:
            clock = PausableClock()
            agent = self.agent(stream, gate, clock)
            relay = _RelayingAgent(edit.agent(agent) if edit else agent, on_event, cancelled, clock,
                                   lambda request_id: self.approvals.asked(run_id, request_id), self._stopping,
                                   gate.guards)
            if history is not None:  # the chat route: the conversation is the client's, and no session keeps it
                try:
                    result = relay.run(question, history)
                except RunCancelled as stopped:
                    if stopped.changes:  # the client is gone and no session keeps a turn: the log says what was done
                        log.warning("a chat run was stopped after it had changed the shop: %s",
                                    "; ".join(stopped.changes))
                    raise
                ended = "finished"
                return RunOutcome(result, "", None)
            store = _TurnRecordingStore(self.store)
            session = Session(relay, store=store, session_id=session_id)
            try:
                result = session.ask(question)
            except RunCancelled as stopped:
                if stopped.changes:  # the session must know what was done, or its next turn contradicts the shop
                    turn = Turn(question, stopped.said(STOPPED.get(stopped.lang, STOPPED['en'])), "cancelled", 0,
                                tuple(change.split(" ", 1)[0] for change in stopped.changes))
                    appended = store.append_turn(session.id, turn)
                    stopped.turn = appended.number or None
                raise
            ended = "finished"
            number = store.appended.number if store.appended is not None else None
            return RunOutcome(result, session.id, number, store.error)
        except RunCancelled:
            ended = "cancelled"
            raise
        finally:
            self.approvals.remove(run_id)
            self._count("running", -1)
            self._count(ended, +1)

    def _count(self, name: str, change: int) -> None:
        with self._lock:
            self.counts[name] += change

    def stop_runs(self) -> None:
        """The service stops: every run under way (and any still queued) stops at its next event, as if its
        client had gone (RunCancelled): it stores no turn, unless it had already changed something, and then a
        "cancelled" turn that says what. stopping.py says when."""
        self._stopping.set()
        self.stop_waiting()

    def stop_waiting(self) -> None:
        """The service stops: a refund waiting for another program's lock on the shop gives up (nothing changed),
        and so does a turn waiting for the session store's (its answer says it was not stored), so that their runs
        can end; each would otherwise wait out its busy timeout (30 s), past uvicorn's grace."""
        self.shop.stop_waiting()
        self.store.stop_waiting()

    def close(self) -> None:
        """Wait for the runs under way, then close the store and the shop. Runs waiting for a person's yes
        are not waited for: their requests end as errors (nothing is done) and the runs finish."""
        self.approvals.abandon_all("the service stopped")
        self._pool.shutdown(wait=True, cancel_futures=True)
        self.store.close()
        self.shop.close()


class _TurnRecordingStore:
    """The service's store as one run's Session sees it, keeping the turn it appended: its number is the one
    the store gave it, even when other workers append turns to the same session at the same moment (counting
    the session's turns afterwards would count theirs too)."""

    def __init__(self, store: SessionStore):
        self._store = store
        self.appended: Turn | None = None
        self.error = ""

    def __getattr__(self, name: str):
        return getattr(self._store, name)

    def append_turn(self, session_id: str, turn: Turn) -> Turn:
        # The run is over and its tools have run (a refund may be written): from here on nothing may fail
        # the request, or the client would never learn what was done. Text the store cannot hold is
        # repaired; a store that fails is reported beside the answer (RunOutcome.store_error).
        turn = replace(turn, question=replace_lone_surrogates(turn.question),
                       answer=replace_lone_surrogates(turn.answer), tools=replace_lone_surrogates(turn.tools))
        try:
            self.appended = self._store.append_turn(session_id, turn)
        except SessionStoreError as exc:
            self.error = first_line(exc)
            return turn
        return self.appended


class _RelayingAgent:
    """The agent as a Session sees it (`run(question, history)`), reporting each event as it happens and
    stopping between two events when asked to."""

    def __init__(self, agent: ReActAgent, on_event: Callable[[Event], None] | None, cancelled: threading.Event,
                 clock: PausableClock | None = None, asked: Callable[[int], None] | None = None,
                 stopping: threading.Event | None = None, guards: Callable[[str], bool] = lambda name: False):
        self._agent, self._on_event, self._cancelled = agent, on_event, cancelled
        self._clock, self._asked, self._stopping = clock, asked, stopping or threading.Event()
        self._guards = guards  # the tools that change something (the gate's): what a stop must still report

    def __getattr__(self, name: str):  # lang, language_for: what a Session asks of its agent
        return getattr(self._agent, name)

    def run(self, question: str, history: list[dict] | None = None) -> AgentResult:
        run = self._agent.start(question, history)
        for event in run:
            if isinstance(event, ApprovalRequested):
                if self._asked is not None:
                    self._asked(event.request_id)
                if self._clock is not None:
                    self._clock.pause()  # the run waits for a person from here: its own time stands still
            elif isinstance(event, ApprovalDecided) and self._clock is not None:
                self._clock.resume()
            if self._on_event is not None:
                self._on_event(event)
            if self._cancelled.is_set() or self._stopping.is_set():
                changes = changes_made(run.trace, self._guards)
                _close_run(run, self._agent)
                raise RunCancelled(changes, run.lang)
        result = run.finish()
        _hang_up(self._agent)
        if result.ok:  # the model's own answer, which reports what it did
            return result
        # A stop's answer must not hide a refund: the loop's words for it (the model failed) know nothing of one, and
        # a closing reply (the model's best answer at a limit) may leave it out.
        return replace(result, answer=said_after_stop(result.answer, changes_made(result.trace, self._guards),
                                                      result.trace))


def _close_run(run, agent: ReActAgent | Team) -> None:
    """Close an abandoned run of `agent` now (`AgentRun.close`, which runs the loop's `finally` and `with` blocks:
    a streamed reply's connection is closed and the model stops being read at once; a team's `TeamRun.close` closes
    the triage's run, and with it a specialist's under way). Merely dropping it leaves that to the garbage
    collector, and the exception that carries RunCancelled keeps the frames alive, so every dropped stream held a
    socket open (CLOSE-WAIT) for as long as the process ran. The agent, not the run, names the models to hang up:
    a TeamRun has no `agent`."""
    run.close()
    _hang_up(agent)


def _hang_up(agent: ReActAgent) -> None:
    """Close the run's connections to the model, kept open between its calls (`LlmClient.close`): the client is
    the run's own, and a connection left to the garbage collector stays open, at both ends, for as long as
    a cycle keeps the client alive. A model given as any object with chat() may have no close(). A team (lesson 21)
    names all of its models in `llms`."""
    for llm in getattr(agent, "llms", None) or (agent.llm,):
        close = getattr(llm, "close", None)
        if callable(close):
            close()
