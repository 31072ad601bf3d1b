"""A confirmation gate: a tool with side effects runs only after a person says yes.

`applyRefund` writes money into the shop's books. A model that misread the order, or a customer who talked
it into something, must not be enough to make that happen: the gate stops the call, shows a person what is
about to be done, and runs the tool only on a clear yes. Everything else leaves the world as it was, and the
model reads why as an error Observation:

    yes          the tool runs, and its Observation is the tool's own
    no           {"error":"applyRefund was not run: a person declined it","approval":"declined",
                  "changed":"nothing","hint":"..."}
    no answer    the same with "approval":"timeout", after `timeout_s` seconds; a yes that comes later
                 does not count
    an error     the same with "approval":"error": the ask callback raised, answered neither yes nor no,
                 or the summary could not be made. Nothing runs on a failure to ask.

How a person answers, two ways:

    callback     `ConfirmationGate(ask=fn)`: the loop calls fn(request) and waits for its answer (True, False,
                 or a word such as "yes"/"no"/"是"/"否"), at most `timeout_s` seconds; fn runs in a thread of
                 its own, so one that never returns (an `input()` nobody answers) still times out. Right for a
                 script, a terminal (`ask_on_console`), or a server whose request handler waits.
    step by step without `ask`: the run pauses. `ReActAgent(..., confirm=gate)` yields an `ApprovalRequested`
                 event after the ToolCall, before the tool would run; whoever drives the run (`run.advance()`, a widget) shows it,
                 calls `gate.answer(request.id, True/False)` when the person decides, and advances again. This
                 is the way inside a notebook: a cell that blocks waiting for a click can never get the click,
                 because the kernel handles the click only after the cell ends (widgets/approval_panel.py).

If a run is advanced past the pause with no answer and no callback, the gate waits out `timeout_s` and the
request times out. A run abandoned while it waits closes its request as an error: nothing runs later.
Every request and decision goes into the trace (`ApprovalRequested`, `ApprovalDecided`) and `gate.log`.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .events import ApprovalDecided, ApprovalRequested, Event, ToolCall
from .registry import ToolRegistry, ToolResult, error_observation
from .stop_rules import Stop
from .tools import Action

APPROVED, DECLINED, TIMEOUT, ERROR = "approved", "declined", "timeout", "error"
OUTCOMES = (APPROVED, DECLINED, TIMEOUT, ERROR)
DEFAULT_TIMEOUT_S = 120.0
MAX_REMEMBERED = 1000  # requests whose late answers still get their standing decision back
YES = ("y", "yes", "ok", "approve", "approved", "是", "好", "同意", "确认", "可以")
NO = ("n", "no", "decline", "declined", "deny", "否", "不", "不行", "不同意", "拒绝")

# What the model is told, per outcome: why the tool did not run, and what to do next.
_WHY = {
    DECLINED: "a person declined it",
    TIMEOUT: "nobody approved it within {timeout:g} s",
    ERROR: "asking for approval failed ({detail})",
}
_HINT = {
    DECLINED: "nothing was changed; tell the customer it was not approved, and do not call it again for this "
              "request",
    TIMEOUT: "nothing was changed; tell the customer the request is waiting for a person to approve it",
    ERROR: "nothing was changed; tell the customer it could not be done now",
}


@dataclass(frozen=True)
class ApprovalRequest:
    """One call waiting for a yes: which tool, with what input, and in words what it would do."""

    id: int
    step: int
    tool: str
    input: str
    summary: str
    timeout_s: float


@dataclass(frozen=True)
class Decision:
    """How a request ended. `by` says who or what decided it (a callback, a button, the time limit)."""

    request_id: int
    outcome: str  # one of OUTCOMES
    by: str
    detail: str = ""

    @property
    def approved(self) -> bool:
        return self.outcome == APPROVED

    def observation(self, tool: str, timeout_s: float) -> str:
        """The error Observation for a call that did not run (never for an approved one)."""
        why = _WHY[self.outcome].format(timeout=timeout_s, detail=self.detail)
        return error_observation(f"{tool} was not run: {why}", approval=self.outcome, changed="nothing",
                                 hint=_HINT[self.outcome])


@dataclass
class _Pending:
    request: ApprovalRequest
    deadline: float
    done: threading.Event
    decision: Decision | None = None


def read_answer(answer: object) -> bool | None:
    """True for a yes, False for a no, None for anything else (which is not taken as either)."""
    if isinstance(answer, bool):
        return answer
    if isinstance(answer, str):
        word = answer.strip().lower().rstrip(".!。！")
        if word in YES:
            return True
        if word in NO:
            return False
    return None


class ConfirmationGate:
    """Which tools need a person's yes, how to ask, and how long to wait; see the module docstring.

    tools:     the names of the tools to guard (default: applyRefund)
    ask:       fn(request) -> True / False / "yes" / "no"; None: the run pauses for `answer()`
    timeout_s: how long a request waits for its answer
    describe:  per tool, fn(input text) -> what the call would do, in words a person can judge
               (default: "tool(input)")
    """

    def __init__(
        self,
        tools: Iterable[str] = ("applyRefund",),
        *,
        ask: Callable[[ApprovalRequest], object] | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        describe: Mapping[str, Callable[[str], str]] | None = None,
    ):
        if isinstance(tools, str):
            tools = (tools,)
        self.tools = frozenset(tools)
        if ask is not None and not callable(ask):
            raise TypeError(f"ask must be a function of the request, got {type(ask).__name__}")
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not timeout_s > 0:
            raise ValueError(f"timeout_s must be a number of seconds above 0, got {timeout_s!r}")
        self.ask = ask
        self.timeout_s = float(timeout_s)
        self.describe = dict(describe or {})
        self.log: list[tuple[ApprovalRequest, Decision]] = []
        self._lock = threading.Lock()
        self._pending: dict[int, _Pending] = {}
        self._ids = itertools.count(1)

    def guards(self, tool_name: str) -> bool:
        return (tool_name or "").strip() in self.tools

    @property
    def pending(self) -> list[ApprovalRequest]:
        """The requests waiting for an answer now, oldest first."""
        with self._lock:
            return [p.request for p in self._pending.values() if p.decision is None]

    # -- the three moves: open a request, answer it, wait for its decision ---------------------------
    def open(self, action: Action, step: int) -> ApprovalRequest:
        """Register a request for `action`; its clock starts now. Raises if the summary cannot be made."""
        name = action.tool_name.strip()
        text = action.tool_input if isinstance(action.tool_input, str) else str(action.tool_input)
        describe = self.describe.get(name)
        summary = describe(text) if describe is not None else f"{name}({text})"
        request = ApprovalRequest(next(self._ids), step, name, text, str(summary), self.timeout_s)
        with self._lock:
            if len(self._pending) >= MAX_REMEMBERED:  # a long-lived gate forgets its oldest decided requests
                for old in [key for key, p in self._pending.items() if p.decision is not None][:MAX_REMEMBERED // 2]:
                    del self._pending[old]
            self._pending[request.id] = _Pending(request, time.monotonic() + self.timeout_s, threading.Event())
        return request

    def answer(self, request_id: int, approved: object, by: str = "a person") -> Decision:
        """A person's answer to a request (from any thread). Returns the decision that stands: this one, or
        an earlier one (the first answer wins), or a timeout if the time limit has passed."""
        yes = read_answer(approved)
        if yes is None:
            return self._close(request_id, ERROR, by, f"the answer {approved!r} is neither yes nor no")
        return self._close(request_id, APPROVED if yes else DECLINED, by)

    def decide(self, request: ApprovalRequest) -> Decision:
        """The request's decision: the answer given already, else the `ask` callback's (in a thread), else
        whatever `answer()` brings before the time limit; a timeout when nothing does."""
        with self._lock:
            pending = self._pending.get(request.id)
        if pending is None:
            raise KeyError(f"no approval request {request.id}")
        if pending.decision is None and self.ask is not None:
            threading.Thread(target=self._ask, args=(pending.request,), name=f"approval-{request.id}",
                             daemon=True).start()
        pending.done.wait(max(pending.deadline - time.monotonic(), 0.0))
        return self._close(request.id, TIMEOUT, "the time limit")

    def cancel(self, request_id: int, why: str) -> Decision:
        """End a request that will never be answered (its run was abandoned): an error, nothing runs."""
        return self._close(request_id, ERROR, "the run", why)

    def _ask(self, request: ApprovalRequest) -> None:
        try:
            reply = self.ask(request)
        except Exception as exc:  # noqa: BLE001 - a failure to ask is an answer too: no
            self._close(request.id, ERROR, "the ask callback", f"{type(exc).__name__}: {exc}")
            return
        self.answer(request.id, reply, by="the ask callback")

    def _close(self, request_id: int, outcome: str, by: str, detail: str = "") -> Decision:
        """Record a decision unless one stands already; past the deadline, any late answer is a timeout."""
        with self._lock:
            pending = self._pending.get(request_id)
            if pending is None:
                raise KeyError(f"no approval request {request_id}")
            if pending.decision is None:
                if outcome in (APPROVED, DECLINED) and time.monotonic() > pending.deadline:
                    outcome, by, detail = TIMEOUT, "the time limit", f"an answer came from {by} after the limit"
                pending.decision = Decision(request_id, outcome, by, detail)
                self.log.append((pending.request, pending.decision))
                pending.done.set()
            return pending.decision

    # -- in the agent's loop ---------------------------------------------------------------------------
    def watch(self, run: Any) -> Iterator[Event]:
        """A run's events, with the gate's own between each guarded ToolCall and the tool's result.

        `AgentRun` reads its events through this when its agent has `confirm=`: after a ToolCall for a guarded
        tool it yields `ApprovalRequested` (the run pauses there, the tool not run yet), then waits for the
        decision (`decide`) and yields `ApprovalDecided`. The tool runs through the run's stop rules, which
        this wraps so that they run a guarded call only after a yes (`_GatedRules`); anything else gets the
        decision's error Observation. The loop itself is unchanged. An input the tool's own schema rejects
        is not put to a person: the tool refuses it without running its function.
        """
        guard = _RunGuard(self)
        run.stop_rules = _GatedRules(run.stop_rules, guard)
        calls_in_step: dict[int, int] = {}
        for event in run._events:
            yield event
            if not isinstance(event, ToolCall) or not self.guards(event.name):
                continue
            nth = calls_in_step[event.step] = calls_in_step.get(event.step, -1) + 1
            action = Action(event.name, event.input)
            if guard.warned(event.step, nth):
                guard.settle(action, None)  # the rules answer with a warning instead: the tool does not run
                continue
            tool = run.agent.tools.get(event.name.strip())
            check = getattr(tool, "check", None)
            if callable(check) and isinstance(check(event.input), list):
                guard.settle(action, None)  # the typed tool answers with its rejection; its function never runs
                continue
            try:
                request = self.open(action, event.step)
            except Exception as exc:  # noqa: BLE001 - a summary that fails is a failure to ask: nothing runs
                decision = Decision(0, ERROR, "the summary", f"{type(exc).__name__}: {exc}")
                guard.settle(action, decision)
                yield ApprovalDecided(event.step, 0, action.tool_name.strip(), ERROR, decision.by, decision.detail)
                continue
            decision = None
            try:
                yield ApprovalRequested(event.step, request.id, request.tool, request.summary, request.timeout_s)
                decision = self.decide(request)
            finally:
                if decision is None:  # the run was closed while it waited: the request can never run
                    self.cancel(request.id, "the run ended before an answer")
            guard.settle(action, decision)
            yield ApprovalDecided(event.step, request.id, request.tool, decision.outcome, decision.by,
                                  decision.detail)

    def __repr__(self) -> str:
        how = "asks a callback" if self.ask is not None else "pauses the run"
        return f"<ConfirmationGate {sorted(self.tools)}: {how}, waits {self.timeout_s:g} s>"


def ask_on_console(request: ApprovalRequest) -> bool:
    """An `ask` callback for a terminal or a script: prints the request and reads y/n from `input()`.
    Anything but a yes is a no."""
    reply = input(f"Approve {request.tool}? {request.summary}\n[y/N] ")
    return read_answer(reply) is True


class _RunGuard:
    """One run's decisions, in the order the calls were made, for `_GatedRules.run_tool` to consult."""

    def __init__(self, gate: ConfirmationGate):
        self.gate = gate
        self._lock = threading.Lock()  # function calling runs a reply's calls in threads
        self._decided: dict[tuple[str, str], list[Decision | None]] = {}
        self._verdicts: dict[int, list[object]] = {}

    def note_verdict(self, step: int, verdict: object) -> None:
        self._verdicts.setdefault(step, []).append(verdict)

    def warned(self, step: int, nth: int) -> bool:
        """Whether the rules answered the step's `nth` call with a warning (so the tool will not run)."""
        verdicts = self._verdicts.get(step, [])
        return nth < len(verdicts) and verdicts[nth] is not None and not isinstance(verdicts[nth], Stop)

    def settle(self, action: Action, decision: Decision | None) -> None:
        """Record how a guarded call was settled: a decision, or None when it needs none (see `watch`)."""
        with self._lock:
            self._decided.setdefault(self._key(action), []).append(decision)

    def refusal_for(self, action: Action) -> ToolResult | None:
        """None if the call may run; else the error result that stands in for it. A guarded call nobody
        settled is refused too: nothing with a side effect runs without going through the gate."""
        if not self.gate.guards(action.tool_name):
            return None
        with self._lock:
            queue = self._decided.get(self._key(action))
            if not queue:
                decision: Decision | None = Decision(0, ERROR, "the gate", "no approval was asked for this call")
            else:
                decision = queue.pop(0)
        if decision is None or decision.approved:
            return None
        return ToolResult(decision.observation(action.tool_name.strip(), self.gate.timeout_s), error=True)

    @staticmethod
    def _key(action: Action) -> tuple[str, str]:
        text = action.tool_input if isinstance(action.tool_input, str) else str(action.tool_input)
        return action.tool_name.strip(), text


class _GatedRules:
    """A run's stop rules, as they were, except that a guarded tool runs only as the gate decided."""

    def __init__(self, rules: Any, guard: _RunGuard):
        self._rules = rules
        self._guard = guard

    def __getattr__(self, name: str) -> Any:
        return getattr(self._rules, name)

    def after_reply(self, trace: Any) -> object:
        verdict = self._rules.after_reply(trace)
        self._guard.note_verdict(trace.events[-1].step if trace.events else 0, verdict)
        return verdict

    def run_tool(self, tools: ToolRegistry, action: Action) -> ToolResult:
        refusal = self._guard.refusal_for(action)
        return refusal if refusal is not None else self._rules.run_tool(tools, action)
