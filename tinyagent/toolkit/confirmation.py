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
    not asked    the same as no answer ("approval":"timeout"), at once: see "Nobody there" below.

How a person answers, two ways:

    callback     `ConfirmationGate(ask=fn)`: the loop calls fn(request) and waits for its answer (True, False,
                 or a word such as "yes"/"no"/"是"/"否"), at most `timeout_s` seconds; fn runs in a thread of
                 its own, so one that never returns (an `input()` nobody answers) still times out. Right for a
                 script, a terminal (`ask_on_console`), or a server whose request handler waits.
    step by step without `ask`: the run pauses. An agent with `parts=[GatedAct(gate)]` yields an
                 `ApprovalRequested` event after the ToolCall, before the tool would run; whoever drives the run
                 (`run.advance()`, a widget) shows it, calls `gate.answer(request.id, True/False)` when the person
                 decides, and advances again. This is the way inside a notebook: a cell that blocks waiting for a
                 click can never get the click, because the kernel handles the click only after the cell ends
                 (widgets/approval_panel.py).

If a run is advanced past the pause with no answer and no callback, the gate waits out `timeout_s` and the
request times out. A run abandoned while it waits closes its request as an error: nothing runs later.

Nobody there: one reply may hold several guarded calls (lesson 09's parallel calls). Once one of them timed out with
no answer at all, the reply's later guarded calls are not asked: nobody is there to answer them, and asking each
would hold the run `timeout_s` more per call (40 refunds, 80 minutes). Each is refused at once as a timeout is
("approval":"timeout"), its Observation saying it was not asked because the request before it got no answer, and
nothing was done; it is never opened, so no one is shown it as waiting (`pending`). A no does not skip the rest (a
person is there and answers each), nor does an answer that came after the limit; the next reply asks again.

Every request and decision goes into the trace (`ApprovalRequested`, `ApprovalDecided`) and `gate.log`; a call whose
summary cannot be made is never asked: the trace records an error decision for it (request 0), the log nothing. A call
not asked because nobody was there is recorded the same way, with the outcome "not_asked".
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Generator, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from tinyagent.events import Event, ToolCall, event_kind
from tinyagent.loop_parts import part_in_chain
from tinyagent.number_checks import check_seconds
from tinyagent.registry import ToolRegistry, ToolResult, error_observation, input_text
from tinyagent.safe_text import one_line
from tinyagent.tools import Action

# What a printed trace says of a request for approval and its outcome.
APPROVAL_LABELS = {
    "en": {"asked": "[Approval asked] {tool}: {summary} (waits up to {timeout:g} s)",
           "decided": "[Approval: {outcome}] by {by}",
           "outcomes": {"approved": "approved", "declined": "declined", "timeout": "no answer in time",
                        "error": "error", "not_asked": "not asked, nobody answered the request before it"}},
    "zh": {"asked": "[等待批准] {tool}：{summary}（最多等 {timeout:g} 秒）",
           "decided": "[批准结果：{outcome}] 决定方：{by}",
           "outcomes": {"approved": "已批准", "declined": "被拒绝", "timeout": "超时无人答复",
                        "error": "出错", "not_asked": "未询问，前一个请求无人答复"}},
}


@event_kind
class ApprovalRequested(Event):
    """Lesson 15: a tool with side effects waits for a person's yes (confirmation.py). Between this event and
    its `ApprovalDecided` the run is paused: the tool has not run. `summary` is what the person is shown."""

    kind: ClassVar[str] = "approval_requested"
    request_id: int = 0
    tool: str = ""
    summary: str = ""
    timeout_s: float = 0.0

    def lines(self, lang: str, usage: bool = False, round: list[Event] = ()) -> list[str]:
        return [APPROVAL_LABELS[lang]["asked"].format(tool=self.tool, summary=self.summary, timeout=self.timeout_s)]


@event_kind
class ApprovalDecided(Event):
    """How the request ended: outcome "approved" (the tool runs next), "declined", "timeout", "error" or
    "not_asked" (the tool does not run; the Observation says why). `by` says who or what decided."""

    kind: ClassVar[str] = "approval_decided"
    request_id: int = 0
    tool: str = ""
    outcome: str = ""
    by: str = ""
    detail: str = ""

    def lines(self, lang: str, usage: bool = False, round: list[Event] = ()) -> list[str]:
        labels = APPROVAL_LABELS[lang]
        line = labels["decided"].format(outcome=labels["outcomes"].get(self.outcome, self.outcome), by=self.by)
        return [line, self.detail] if self.detail else [line]


APPROVED, DECLINED, TIMEOUT, ERROR = "approved", "declined", "timeout", "error"
NOT_ASKED = "not_asked"  # a call of a reply whose earlier request nobody answered ("Nobody there" above)
OUTCOMES = (APPROVED, DECLINED, TIMEOUT, ERROR, NOT_ASKED)
DEFAULT_TIMEOUT_S = 120.0
MAX_REMEMBERED = 1000  # requests whose late answers still get their standing decision back
YES = ("y", "yes", "ok", "approve", "approved", "是", "好", "同意", "确认", "可以")
NO = ("n", "no", "decline", "declined", "deny", "否", "不", "不行", "不同意", "拒绝")

# What the model is told, per outcome: why the tool did not run, and what to do next.
_WHY = {
    DECLINED: "a person declined it",
    TIMEOUT: "nobody approved it within {timeout:g} s",
    ERROR: "asking for approval failed ({detail})",
    NOT_ASKED: "it was not asked, because the request before it in the same reply got no answer within {timeout:g} s",
}
_HINT = {
    DECLINED: "nothing was changed; tell the customer it was not approved, and do not call it again for this "
              "request",
    TIMEOUT: "nothing was changed; tell the customer the request is waiting for a person to approve it",
    ERROR: "nothing was changed; tell the customer it could not be done now",
    NOT_ASKED: "nothing was changed; tell the customer the request needs a person's approval, and nobody has given it "
               "yet",
}
# What the Observation's "approval" says: a call not asked is, to the model and the service reading it, a timeout.
_APPROVAL_SAID = {NOT_ASKED: TIMEOUT}


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

    @property
    def nobody_answered(self) -> bool:
        """The time limit passed with no answer at all (the limit's own decision has no detail; a late answer's
        names who came, so a person is there)."""
        return self.outcome == TIMEOUT and not self.detail

    def observation(self, tool: str, timeout_s: float) -> str:
        """The error Observation for a call that did not run (never for an approved one)."""
        why = _WHY[self.outcome].format(timeout=timeout_s, detail=self.detail)
        return error_observation(f"{tool} was not run: {why}", approval=_APPROVAL_SAID.get(self.outcome, self.outcome),
                                 changed="nothing", hint=_HINT[self.outcome])


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
               (default: "tool(input)"); a tool is known here as `tool_key` knows it: a tool made in this
               program by its name, one an MCP server offers (lesson 24) by (its server, its own name)
    """

    def __init__(
        self,
        tools: Iterable[str] = ("applyRefund",),
        *,
        ask: Callable[[ApprovalRequest], object] | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        describe: Mapping[str | tuple[str, str], Callable[[str], str]] | None = None,
    ):
        if isinstance(tools, str):
            tools = (tools,)
        self.tools = frozenset(tools)
        if ask is not None and not callable(ask):
            raise TypeError(f"ask must be a function of the request, got {type(ask).__name__}")
        check_seconds("timeout_s", timeout_s)
        self.ask = ask
        self.timeout_s = float(timeout_s)
        self.describe = dict(describe or {})
        self.log: list[tuple[ApprovalRequest, Decision]] = []
        self._lock = threading.Lock()
        self._pending: dict[int, _Pending] = {}
        self._ids = itertools.count(1)

    def guards(self, tool_name: str, tools: ToolRegistry | None = None) -> bool:
        """True when a call of `tool_name` needs a yes: the name is one of `self.tools`, or, given the run's registry
        `tools`, the tool it calls there is one of them under its own name (`own_name`: the shop's applyRefund
        that lesson 24's mcp_registry calls shop_applyRefund is guarded as applyRefund)."""
        name = (tool_name or "").strip()
        return name in self.tools or own_name(tools, name) in self.tools

    @property
    def pending(self) -> list[ApprovalRequest]:
        """The requests waiting for an answer now, oldest first."""
        with self._lock:
            return [p.request for p in self._pending.values() if p.decision is None]

    # -- the three moves: open a request, answer it, wait for its decision ---------------------------
    def open(self, action: Action, step: int, run: Any = None) -> ApprovalRequest:
        """Register a request for `action` (`request_for` makes it); its clock starts now. Raises if the summary
        cannot be made."""
        request = self.request_for(action, step, run)
        with self._lock:
            if len(self._pending) >= MAX_REMEMBERED:  # a long-lived gate forgets its oldest decided requests
                for old in [key for key, p in self._pending.items() if p.decision is not None][:MAX_REMEMBERED // 2]:
                    del self._pending[old]
            self._pending[request.id] = _Pending(request, time.monotonic() + self.timeout_s, threading.Event())
        return request

    def request_for(self, action: Action, step: int, run: Any = None) -> ApprovalRequest:
        """What a person is asked about `action`: the tool, its input and a summary in words. `run` is the run that
        asks (None outside the loop): this gate reads its registry only, to know which tool the call is (`tool_key`);
        lesson 25's SourcedGate, which tells the person where the call's values came from, reads the run too."""
        name = action.tool_name.strip()
        text = input_text(action)  # a native call's JSON value as the JSON text the tool will read, not Python's str()
        describe = self.describe.get(tool_key(run.agent.tools if run is not None else None, name))
        summary = describe(text) if describe is not None else f"{name}({text})"
        # One line, shown as it is: a "\r" or an escape sequence in the model's words must not rewrite what the
        # person reads (a reason of "x\rrefund ¥39 for order 88234" hid the ¥1999 refund asked for).
        return ApprovalRequest(next(self._ids), step, name, text, one_line(str(summary)), self.timeout_s)

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

    def cancel(self, request_id: int, why: str, by: str = "the run") -> Decision:
        """End a request that will never be answered (its run was abandoned, the service stops): an error,
        nothing runs."""
        return self._close(request_id, ERROR, by, why)

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
    def settle(self, run: Any, step: int, action: Action, unanswered: int | None = None
               ) -> Generator[Event, None, tuple[ToolResult | None, Decision | None]]:
        """Put one guarded call to a person (`GatedAct` calls this right after the call's ToolCall).

        Yields ApprovalRequested (the run pauses there, the tool not run yet), waits for the decision
        (`decide`) and yields ApprovalDecided. Returns the result and the decision: the result is None when the
        tool may run, else the error result that stands in for it. An input the tool's own schema rejects is not
        put to a person: the tool refuses it without running its function (None, None). A run closed while it
        waits cancels its request: nothing runs later. `unanswered`: the id of an earlier request of the same reply
        that nobody answered; the call is then not asked, never opened, and refused at once ("Nobody there").
        """
        name = action.tool_name.strip()
        check = getattr(run.agent.tools.get(name), "check", None)
        if callable(check) and isinstance(check(action.tool_input), list):
            return None, None  # the typed tool answers with its rejection; its function never runs
        if unanswered is not None:
            why = f"request {unanswered} got no answer within {self.timeout_s:g} s"
            decision = Decision(0, NOT_ASKED, "the gate", why)
            yield ApprovalDecided(step, 0, name, NOT_ASKED, decision.by, decision.detail)
            return ToolResult(decision.observation(name, self.timeout_s), error=True), decision
        try:
            request = self.open(action, step, run)
        except Exception as exc:  # noqa: BLE001 - a summary that fails is a failure to ask: nothing runs
            decision = Decision(0, ERROR, "the summary", f"{type(exc).__name__}: {exc}")
            yield ApprovalDecided(step, 0, name, ERROR, decision.by, decision.detail)
            return ToolResult(decision.observation(name, self.timeout_s), error=True), decision
        decision = None
        try:
            yield ApprovalRequested(step, request.id, request.tool, request.summary, request.timeout_s)
            decision = self.decide(request)
        finally:
            if decision is None:  # the run was closed while it waited: the request can never run
                self.cancel(request.id, "the run ended before an answer")
        yield ApprovalDecided(step, request.id, request.tool, decision.outcome, decision.by, decision.detail)
        return (None if decision.approved else ToolResult(decision.observation(name, self.timeout_s), error=True)), \
            decision

    def __repr__(self) -> str:
        how = "asks a callback" if self.ask is not None else "pauses the run"
        return f"<ConfirmationGate {sorted(self.tools)}: {how}, waits {self.timeout_s:g} s>"


def own_name(tools: ToolRegistry | None, tool_name: str) -> str:
    """The name the tool that `tool_name` calls in `tools` has where it was made, whatever the registry calls it: a
    registry of several MCP servers' tools (lesson 24) names a tool two servers offer `<server>_<name>`, and the tool
    keeps its server's name for it as `remote_name`. A list of tools to watch (a gate's, lesson 25's defences) must
    follow the tool, not the registry's word for it. `tool_name` itself for any other tool, or one `tools` lacks."""
    name = (tool_name or "").strip()
    own = getattr(tools.get(name), "remote_name", None) if tools is not None else None
    return own.strip() if isinstance(own, str) and own.strip() else name


def tool_key(tools: ToolRegistry | None, tool_name: str) -> str | tuple[str, str]:
    """How a gate's `describe` knows the tool that `tool_name` calls in `tools`: a tool made in this program by its
    name; a tool an MCP server offers (lesson 24's McpTool) by (its server, its own name), the server being the name
    the host gave its connection. The name alone says whose tool it is only for a tool made here: lesson 24's registry
    calls a server's applyRefund applyRefund or, when two servers offer one, <server>_applyRefund, so the shop's words
    for its refund must follow the shop's server, not the name. The gate's list follows `own_name` instead: asking
    about one more tool is safe, describing another server's tool as the shop's is not."""
    name = (tool_name or "").strip()
    tool = tools.get(name) if tools is not None else None
    server = getattr(getattr(tool, "connection", None), "name", None)
    if isinstance(getattr(tool, "remote_name", None), str) and isinstance(server, str):
        return server, own_name(tools, name)
    return name


def ask_on_console(request: ApprovalRequest) -> bool:
    """An `ask` callback for a terminal or a script: prints the request and reads y/n from `input()`.
    Anything but a yes is a no."""
    reply = input(f"Approve {request.tool}? {request.summary}\n[y/N] ")
    return read_answer(reply) is True


class GatedAct:
    """How the actions are run in lesson 15 (`ReActAgent(llm, tools, parts=[GatedAct(gate)])`): as the act part
    it wraps runs them (one after the other, or at once in function calling), except that each call of a guarded
    tool is put to a person first, right after its ToolCall and before any tool of the reply runs. A call another
    part has answered already (a stop rule's warning, arguments that could not be read) is not asked about: it
    does not run anyway. Once a request of the reply got no answer in time, its later guarded calls are not asked
    either: they are refused at once as a timeout ("Nobody there" in the module docstring)."""

    slot: ClassVar[str] = "act"
    # It settles calls in `__call__`, between a call's ToolCall and its run, and runs them with the inner part's
    # `perform`: a part that settles calls too must be neither around it nor under it (`settling_part`). In lesson 15
    # that part is a second gate; lesson 21's HandoffAct settles calls too, and says so the same way.
    settles_calls: ClassVar[bool] = True

    def __init__(self, gate: ConfirmationGate, inner: Any = None):
        if not isinstance(gate, ConfirmationGate):
            raise TypeError(f"GatedAct needs a ConfirmationGate, got {type(gate).__name__}")
        self.gate = gate
        self.inner = inner

    def around(self, inner: Any) -> GatedAct:
        # Under another gate, this one's yes would reach that gate's perform, which refuses whatever it was not asked
        # about: one gate holds every tool that needs a person's yes. Any other part that settles calls would be
        # skipped the same way: this gate runs the calls with its `perform`, never its `__call__`.
        part = settling_part(inner)
        if isinstance(part, GatedAct):
            raise TypeError(f"{self!r} would go around {part!r}: an agent has one confirmation gate; give it "
                            "every tool that needs a person's yes")
        if part is not None:
            raise TypeError(f"{self!r} would go around {part!r}, which settles each call itself before it runs, and "
                            "the gate would skip that: mount the gate on an agent without it, the one that calls the "
                            "guarded tools")
        return GatedAct(self.gate, inner)

    def __call__(self, run: Any, step: int, actions: list[Action], ready: list[ToolResult | None]
                 ) -> Generator[Event, None, Iterable[ToolResult]]:
        ready = list(ready)
        unanswered: int | None = None  # the id of this reply's request that timed out with nobody answering
        for i, action in enumerate(actions):
            yield ToolCall(step, action.tool_name, action.tool_input)
            if ready[i] is None and self.gate.guards(action.tool_name, run.agent.tools):
                ready[i], decision = yield from self.gate.settle(run, step, action, unanswered)
                if unanswered is None and decision is not None and decision.nobody_answered:
                    unanswered = decision.request_id
        return self.inner.perform(run, actions, ready)

    def perform(self, run: Any, actions: list[Action], ready: list[ToolResult | None]) -> Iterable[ToolResult]:
        """Run the calls without asking anyone: only a part that went around this one calls it, so a guarded
        call nobody settled is refused (nothing with a side effect runs without going through the gate)."""
        unasked = ToolResult(Decision(0, ERROR, "the gate", "no approval was asked for this call")
                             .observation("the tool", self.gate.timeout_s), error=True)
        ready = [done or (unasked if self.gate.guards(a.tool_name, run.agent.tools) else None)
                 for a, done in zip(actions, ready)]
        return self.inner.perform(run, actions, ready)

    def __repr__(self) -> str:
        return f"GatedAct({self.gate!r}, {self.inner!r})"


def settling_part(part: Any) -> Any | None:
    """The first part of an act part's chain (it, the part it wraps, and so on) that settles calls itself before
    they run (its class says `settles_calls = True`, as GatedAct's does, and lesson 21's HandoffAct's), or None.
    Such a part does its work in `__call__` and runs the calls with the `perform` of the part it wraps: one around
    another would skip the inner one's work."""
    return part_in_chain(part, lambda part: getattr(part, "settles_calls", False))


def gate_of(run: Any) -> ConfirmationGate | None:
    """The gate of a run's act part (a GatedAct, however many parts wrap it), or None."""
    part = part_in_chain(run.parts.act, lambda part: isinstance(part, GatedAct))
    return part.gate if part is not None else None
