"""A person's yes over HTTP: lesson 15's confirmation gate inside the service.

Every run gets a `ConfirmationGate` of its own, without an `ask` callback, so a guarded tool (applyRefund)
pauses the run: the loop yields `ApprovalRequested` (in the stream and in the trace), and the run's thread
waits in `gate.decide()` until somebody answers or the time runs out (then it is declined, as a timeout).

    POST /agent/approvals/<approval id>  {"approve": true}    answers it (false declines)
    GET  /agent/approvals                                     what waits now, for the operator

The approval id is the run's id (random, 128 bits, made by the app for this run) and the request's number: it is
shown to the run's own stream and to the operator, nobody else. Only the operator (`--operator-key`, or on a
service with no key at all a person at this machine, of the account running the service) may list or answer them
(app.py, check_operator): the customer whose run asks for the refund has the approval id in their stream, but their
key cannot say yes. The listing holds no session id: a session's id stays with the client that started it. The routes also have the
other routes' guards: the host check, and no cross-site request for the POST that answers. `--auto-approve`
gives every gate a callback that says yes, for a demonstration with nobody at hand; the requests and decisions
are still in the trace.

By default the gate is lesson 25's `SourcedGate` (defences/sourced_gate.py), one of the service's defences against
planted instructions: each request also says where the call's ids came from (the customer's message, a tool's
result), so a person can tell an order the customer named from one planted text named. `ServiceConfig.defences`
without "sourced gate" gives lesson 15's plain `ConfirmationGate`.

While a run waits for a person, its own time limit (WallClock) stands still: `PausableClock`.

A waiting run holds one of the service's run threads until the answer or the time limit. So one client address
may have only its share of requests waiting at once (`per_client`; ServiceConfig.approvals_per_client): a request
beyond it is ended at once as an error by "the service", the tool not run, and the run goes on from there (the model
reads why, and the answer says it could not be done now). Without the share, a client could ask for refunds
nobody answers until every thread waited, and every other client's question waited in line behind them.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from tinyagent.number_checks import ascii_number
from tinyagent.toolkit.confirmation import ConfirmationGate, Decision

GUARDED_TOOLS = ("applyRefund",)
BY_HTTP = "a person over HTTP"


def new_run_id() -> str:
    return secrets.token_urlsafe(16)


def approval_id(run_id: str, request_id: int) -> str:
    return f"{run_id}.{request_id}"


def _always_yes(request) -> bool:
    return True


def new_gate(timeout_s: float, auto_approve: bool, sourced: bool = True,
             describe: Mapping[str, Callable[[str], str]] | None = None) -> ConfirmationGate:
    """A run's gate. `describe`: per tool, what a call would do in words a person can judge (the service passes
    describe_refund, the summary lesson 15's refund_gate shows: the amount, the order as the tool reads its id);
    without it a person is shown the call as the model wrote it, whose own words may say another amount or order.
    `sourced` (lesson 25, on by default): each request also says where its ids came from (the customer's message or
    a tool's result), listed beside its summary as "sources"."""
    ask = _always_yes if auto_approve else None
    if sourced:
        from tinyagent.defences.sourced_gate import SourcedGate

        return SourcedGate(GUARDED_TOOLS, in_summary=False, ask=ask, timeout_s=timeout_s, describe=describe)
    return ConfirmationGate(GUARDED_TOOLS, ask=ask, timeout_s=timeout_s, describe=describe)


def _sources(request: object) -> dict:
    """Lesson 25: where each id of the call came from, when the gate says (defences/sourced_gate.py)."""
    sources = getattr(request, "sources", None)
    if sources is None:
        return {}
    return {"sources": [{"argument": name, "value": value, "from": where} for name, value, where in sources]}


class PausableClock:
    """Seconds that do not count while paused: a run's WallClock reads this, so that the minutes a person
    takes to approve a refund are not taken from the run's own time."""

    def __init__(self):
        self._paused_at: float | None = None
        self._paused_for = 0.0

    def __call__(self) -> float:
        now = time.monotonic()
        paused = self._paused_for + (now - self._paused_at if self._paused_at is not None else 0.0)
        return now - paused

    def pause(self) -> None:
        if self._paused_at is None:
            self._paused_at = time.monotonic()

    def resume(self) -> None:
        if self._paused_at is not None:
            self._paused_for += time.monotonic() - self._paused_at
            self._paused_at = None


@dataclass
class _Waiting:
    gate: ConfirmationGate
    question: str = ""
    client: str = ""  # who asked (connections.client_key); "" for a run started inside the process
    opened: dict[int, float] = field(default_factory=dict)  # request id -> when it was asked (monotonic)


class Approvals:
    """The gates of the runs under way, by run id; what the approval routes read and answer."""

    def __init__(self, per_client: int | None = None):
        self._lock = threading.Lock()
        self._runs: dict[str, _Waiting] = {}
        self._stopped: tuple[str, str] | None = None  # (why, by) once the service stops: nothing waits any more
        self.per_client = per_client  # requests one client may have waiting at once; None: no limit

    def add(self, run_id: str, gate: ConfirmationGate, question: str, client: str = "") -> None:
        with self._lock:
            self._runs[run_id] = _Waiting(gate, question=question, client=client)

    def asked(self, run_id: str, request_id: int) -> None:
        """A run's gate opened request `request_id` (its thread is about to wait): ended at once as an error when
        the service stops, or when the run's client has its share waiting already."""
        with self._lock:
            run = self._runs.get(run_id)
            if run is not None:
                run.opened[request_id] = time.monotonic()
            refused = self._stopped
            if run is not None and refused is None and run.client and self.per_client is not None:
                # The client's requests waiting now, this one among them.
                waiting = sum(len(other.gate.pending) for other in self._runs.values() if other.client == run.client)
                if waiting > self.per_client:
                    why = (f"{self.per_client} refunds this client asked for wait for a person's yes already, as many "
                           "as one client may have waiting at once; ask again once they are answered")
                    refused = (why, "the service")
        if run is not None and refused is not None:
            run.gate.cancel(request_id, *refused)

    def remove(self, run_id: str) -> None:
        with self._lock:
            self._runs.pop(run_id, None)

    def pending(self) -> list[dict]:
        """Every request waiting for an answer now, oldest run first (what the operator sees: no session id)."""
        with self._lock:
            runs = list(self._runs.items())
        now, waiting = time.monotonic(), []
        for run_id, run in runs:
            for request in run.gate.pending:
                asked = run.opened.get(request.id, now)
                waiting.append({"approval_id": approval_id(run_id, request.id), "question": run.question,
                                "tool": request.tool, "input": request.input, "summary": request.summary,
                                "seconds_left": round(max(request.timeout_s - (now - asked), 0.0), 1),
                                **_sources(request)})
        return waiting

    def answer(self, approval: str, approve: bool) -> Decision | None:
        """A person's answer; the decision that stands (a later or second answer does not change it).
        None when there is no such request (never asked, or its run is over)."""
        run_id, _, text = approval.rpartition(".")
        number = ascii_number(text)
        with self._lock:
            run = self._runs.get(run_id)
        if run is None or number is None:
            return None
        try:
            return run.gate.answer(number, approve, by=BY_HTTP)
        except KeyError:
            return None

    def abandon(self, run_id: str, why: str, by: str = "the run") -> None:
        """The run's client went away (or the service stops): its open requests end as errors, so the
        run's thread stops waiting now, and nothing is done on a yes that can no longer be reported."""
        with self._lock:
            run = self._runs.get(run_id)
        if run is not None:
            for request in run.gate.pending:
                run.gate.cancel(request.id, why, by)

    def abandon_all(self, why: str, by: str = "the run") -> None:
        with self._lock:
            run_ids = list(self._runs)
        for run_id in run_ids:
            self.abandon(run_id, why, by)

    def stop(self, why: str, by: str) -> None:
        """The service stops: every request waiting now is declined as an error, and so is every one asked
        from now on (a run that reaches a refund while the service stops is not kept waiting). The runs go on
        from the decline, as from any other: the model reads it and answers."""
        with self._lock:
            self._stopped = (why, by)
        self.abandon_all(why, by)
