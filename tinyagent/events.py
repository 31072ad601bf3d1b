"""The typed events the agent loop yields. Everything else (trace, widgets, CLI) consumes them.

One round of the loop yields, in order:

    LlmCall -> Parsed -> ToolCall -> Observation      (the model asked for a tool)
    LlmCall -> Parsed -> Final                        (the model answered)
    ... or Stopped, when the loop ends without an answer (step cap, a failed model call)
    ... or LimitReached, when a stop rule ends the loop (lesson 10), then a closing round:
    LlmCall -> Parsed -> Final (the best answer from what is known) or Stopped
    ... and for a tool behind a confirmation gate (lesson 15), between ToolCall and Observation:
    ToolCall -> ApprovalRequested -> ApprovalDecided -> Observation
    ... and lesson 17's parts around the loop: Routed (ReAct or a plan, and why), SkillActivated (the tools a
    skill allows), PlanMade / PlanStepStarted / PlanStepDone (plan-and-execute), Reflected (a draft checked)
    ... and lesson 22's tree of thoughts (tree_search.py), before the round's LlmCall: the search's own LlmCalls,
    ThoughtCandidate (one per candidate, scored), BranchExplored (a kept candidate looked ahead), TreeNote (what
    the search could not do), PathChosen (the decision, and what it cost)
    ... and a person's hand in a trace (editable_trace.py): PersonEdit opens the round whose reply a person wrote
    (an edited Thought) or replayed (a retried tool); its LlmCall is the person's (model "person", no tokens)
    ... and lesson 21's several agents (handoffs.py): every event names the `agent` behind it ("" for a single
    agent), and a Handoff marks where one agent hands the request to another, or hands it back

With `ReActAgent(stream=True)` (lesson 14) each model call is read as it is typed: its round starts with
the reply's pieces, ReplyDelta ... ReplyDelta, and then the same events as without streaming.

Events are frozen dataclasses: a trace is a record of what happened, never edited afterwards. Each kind is made
with `@event`, a frozen `@record` (records.py: a dataclass whose ==, hash and immutability are written once for
all records, and whose __init__ is compiled on first use), shown by Event's repr: `agent` appears only when it
names one.
"""

from __future__ import annotations

from typing import Any, ClassVar

from .records import field, record

_PLAIN = frozenset({str, int, float, bool, type(None)})  # what asdict returns as it is


def event(cls: type) -> type:
    """An event kind: a frozen record (records.py), shown by Event's repr."""
    return record(repr=False)(cls)


@event
class Event:
    """Base class: `step` is the round number, starting at 1. `agent` names the agent whose loop made the event
    when several work on one request (lesson 21); a keyword, and "" (left out of `to_dict`) for a single agent."""

    kind: ClassVar[str] = "event"
    step: int
    agent: str = field(default="", kw_only=True)

    def __repr__(self) -> str:  # `agent` only when several agents share the trace (lesson 21), as in to_dict
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._record_shown
                          if name != "agent" or self.agent)
        return f"{type(self).__qualname__}({shown})"

    def to_dict(self) -> dict[str, Any]:
        # asdict copies every value deeply: the same dict, at a fraction of the cost, when every value is a plain
        # str, number, bool or None (a streamed run's ReplyDelta events, about 70 a run, are nothing else).
        values = {name: getattr(self, name) for name in self._record_names}
        if not all(type(v) in _PLAIN for v in values.values()):
            from dataclasses import asdict

            values = asdict(self)
        data = {"type": self.kind, **values}
        if not data["agent"]:
            del data["agent"]  # a single agent's trace reads as it always has
        return data


@event
class LlmCall(Event):
    """One request to the model and what came back.

    messages:      the message list that was sent (a copy, as it was at that moment)
    text:          the reply text, after any stop-string cut
    finish_reason: "stop", "length", ... as the server said
    usage:         the server's token counts (prompt/completion/total), {} if it sent none
    latency_s:     seconds the request took (varies run to run; printed traces leave it out)
    model:         the model that answered
    client_cut:    True when the server ignored `stop` and the client cut the text itself
    """

    kind: ClassVar[str] = "llm_call"
    messages: tuple[dict, ...] = ()
    text: str = ""
    finish_reason: str | None = None
    usage: dict = field(default_factory=dict)
    latency_s: float = field(default=0.0, repr=False)  # varies run to run: kept out of printed reprs
    model: str = ""
    client_cut: bool = False

    @classmethod
    def of_reply(cls, step: int, messages: list[dict], reply: Any) -> LlmCall:
        """The event of a call made outside the loop (lesson 17's planner, checker, skill chooser): the
        messages sent, and the ChatResult that came back."""
        return cls(step, tuple(dict(m) for m in messages), reply.text, reply.finish_reason, reply.usage,
                   reply.latency_s, reply.model, reply.client_cut)


@event
class Parsed(Event):
    """What the parser read in the reply. `rule` says which case applied (see parser.ParsedStep)."""

    kind: ClassVar[str] = "parsed"
    thought: str = ""
    tool_name: str | None = None
    tool_input: str | None = None
    final_answer: str | None = None
    rule: str = ""


@event
class ToolCall(Event):
    """The tool the parsed reply asked for, and the input as the model wrote it (before the tool reads it)."""

    kind: ClassVar[str] = "tool_call"
    name: str = ""
    input: str = ""


@event
class Observation(Event):
    """A tool's result as the model will read it. `error` marks a failed call (still fed back).

    original_chars: set only when the result was longer than the agent's `max_observation_chars`
                    and was cut: how many characters the tool returned (`text` is what the model saw).
    format_error:   True when no tool ran: the model's reply could not be read, and `text` tells it the
                    exact format (a tolerant agent, lesson 11).
    """

    kind: ClassVar[str] = "observation"
    text: str = ""
    error: bool = False
    original_chars: int | None = None
    format_error: bool = False

    @property
    def truncated(self) -> bool:
        return self.original_chars is not None


@event
class Final(Event):
    """The run ended with an answer. reason: "final_answer", or "fallback" when the model
    replied with neither an Action nor "Final Answer:" and its text was taken as the answer, or the
    reason of the stop rule that ended the loop ("max_steps", "no_progress", ... see stop_rules.py)
    when the answer came from the closing call that asks for the best answer from what is known."""

    kind: ClassVar[str] = "final"
    answer: str = ""
    reason: str = "final_answer"


@event
class Stopped(Event):
    """The run ended without an answer; `answer` is the polite message the user gets instead and
    `detail` is for the developer. reason: "max_steps" (the step cap), "llm_error" (the model call
    failed, or its reply was not a Chat Completions reply), "length" (the reply was cut at max_tokens),
    "empty_reply" (the model said nothing), "native_tool_calls" (the model answered with the API's
    tool_calls, which the text protocol does not read), "format_errors" (a tolerant agent got more
    unreadable replies than its max_format_errors)."""

    kind: ClassVar[str] = "stopped"
    reason: str = ""
    answer: str = ""
    detail: str = ""


@event
class LimitReached(Event):
    """A stop rule ended the loop (lesson 10, stop_rules.py). `reason` names the rule ("no_progress",
    "token_budget", ...) and `detail` says what it saw. Not the end of the run: a closing round follows
    (one model call for the best answer from what is known), and its Final or Stopped carries the same
    reason."""

    kind: ClassVar[str] = "limit_reached"
    reason: str = ""
    detail: str = ""


@event
class ReplyDelta(Event):
    """A piece of the model's reply as it arrives (lesson 14: `ReActAgent(stream=True)`), before the round's
    LlmCall. Joined, the pieces of a round are that LlmCall's text (already cut at the stop strings).

    text:      the new piece, never empty
    elapsed_s: seconds from the request to this piece (varies run to run; printed traces leave it out)
    """

    kind: ClassVar[str] = "reply_delta"
    text: str = ""
    elapsed_s: float = field(default=0.0, repr=False)


@event
class ApprovalRequested(Event):
    """Lesson 15: a tool with side effects waits for a person's yes (confirmation.py). Between this event and
    its `ApprovalDecided` the run is paused: the tool has not run. `summary` is what the person is shown."""

    kind: ClassVar[str] = "approval_requested"
    request_id: int = 0
    tool: str = ""
    summary: str = ""
    timeout_s: float = 0.0


@event
class ApprovalDecided(Event):
    """How the request ended: outcome "approved" (the tool runs next), "declined", "timeout" or "error" (the
    tool does not run; the Observation says why). `by` says who or what decided."""

    kind: ClassVar[str] = "approval_decided"
    request_id: int = 0
    tool: str = ""
    outcome: str = ""
    by: str = ""
    detail: str = ""


@event
class Routed(Event):
    """Lesson 17 (router.py): how a request will be handled. mode "react" (one loop) or "plan" (plan-and-execute);
    `skill` the skill asked for (or ""); `reason` says why, in words a person can check."""

    kind: ClassVar[str] = "routed"
    mode: str = "react"
    skill: str = ""
    reason: str = ""


@event
class SkillActivated(Event):
    """Lesson 17 (skills.py): a skill is active; the model is offered only `tools`, and the registry refuses the
    others. `reason` says how it was chosen."""

    kind: ClassVar[str] = "skill_activated"
    name: str = ""
    tools: tuple[str, ...] = ()
    reason: str = ""


@event
class PlanMade(Event):
    """Lesson 17 (plan_execute.py): the planner's numbered steps. `revision` 0 is the first plan; 1, 2, ... are
    re-plans of the steps left after a failed one, and `reason` says which failed and why. `error` is set when
    the planner's reply could not be read as a plan (then `steps` is empty)."""

    kind: ClassVar[str] = "plan_made"
    steps: tuple[str, ...] = ()
    revision: int = 0
    reason: str = ""
    error: str = ""


@event
class PlanStepStarted(Event):
    """One step of the plan begins: `number` in the plan as it stands, `text` the step given to the loop."""

    kind: ClassVar[str] = "plan_step_started"
    number: int = 0
    text: str = ""


@event
class PlanStepDone(Event):
    """One step of the plan ended: `ok` False when it failed (see plan_execute.step_failure), `result` its
    answer, `reason` why the loop ended or why the step counts as failed."""

    kind: ClassVar[str] = "plan_step_done"
    number: int = 0
    ok: bool = True
    result: str = ""
    reason: str = ""


@event
class Reflected(Event):
    """Lesson 17 (reflection.py): the draft answer checked against the run's Observations. verdict "ok",
    "revise" (then `answer` is the revised one) or "unchecked" (the check could not be read or made; the draft
    stands); `problems` what the check found wrong."""

    kind: ClassVar[str] = "reflected"
    verdict: str = "ok"
    draft: str = ""
    problems: tuple[str, ...] = ()
    answer: str = ""


@event
class ThoughtCandidate(Event):
    """Lesson 22 (tree_search.py): one candidate next step, scored. `node` is its place in the tree ("2": the second
    candidate at the root; "2.1": the first proposed after it), `parent` the node it follows ("" at the root),
    `depth` 1 at the root. `model_score` and `rule_score` are in 0..1, None when that score could not be had (a
    TreeNote says why); `score` is what the search ranks by; `why` is the model's reason for its score."""

    kind: ClassVar[str] = "thought_candidate"
    node: str = ""
    parent: str = ""
    depth: int = 1
    thought: str = ""
    tool_name: str | None = None
    tool_input: str | None = None
    final_answer: str | None = None
    model_score: float | None = None
    rule_score: float | None = None
    score: float = 0.0
    why: str = ""


@event
class BranchExplored(Event):
    """Lesson 22: a kept candidate looked ahead. `ran` True when its tool ran while exploring (a read-only tool)
    and `observation` is what it said; False when it did not run, and `detail` says why (a tool that changes
    something runs only on the chosen path)."""

    kind: ClassVar[str] = "branch_explored"
    node: str = ""
    tool: str = ""
    ran: bool = False
    observation: str = ""
    error: bool = False
    detail: str = ""


@event
class TreeNote(Event):
    """Lesson 22: what the search could not do at `node`. stage "propose" (a reply with no readable candidate),
    "score" (a score reply that could not be read), "rule" (the scoring rule raised or gave no number in 0..1),
    "budget" (the next call would not fit the budget)."""

    kind: ClassVar[str] = "tree_note"
    node: str = ""
    stage: str = ""
    detail: str = ""


@event
class PathChosen(Event):
    """Lesson 22: the search's decision. `path` runs from the root to the best node found; `committed` (its first
    node) is the step the loop takes now, with `score`. `calls` and `tokens` are what the run's searches have spent
    so far, `budget_calls` and `budget_tokens` their limits (None: no limit)."""

    kind: ClassVar[str] = "path_chosen"
    path: tuple[str, ...] = ()
    committed: str = ""
    score: float = 0.0
    calls: int = 0
    tokens: int = 0
    budget_calls: int | None = None
    budget_tokens: int | None = None
    reason: str = ""


TREE_EVENTS = (ThoughtCandidate, BranchExplored, TreeNote, PathChosen)  # lesson 22's, in the order a search yields them


@event
class PersonEdit(Event):
    """A person stepped into the trace (editable_trace.py): this round's reply is not the model's. what "thought"
    (the person wrote the reply: `text`, in place of the model's `original`) or "retry" (the round's tool runs
    again: `text` is the Action Input it runs with, `original` the Observation it had before). `by` who did it."""

    kind: ClassVar[str] = "person_edit"
    what: str = "thought"
    original: str = ""
    text: str = ""
    by: str = "person"


@event
class Handoff(Event):
    """Lesson 21 (handoffs.py): `source` hands the request to `target` with `message`, all `target` sees of it;
    or, with `back` True, `target` hands its result back to `source` (`message` is then what it hands back)."""

    kind: ClassVar[str] = "handoff"
    source: str = ""
    target: str = ""
    message: str = ""
    back: bool = False


EVENT_TYPES: dict[str, type[Event]] = {
    cls.kind: cls
    for cls in (LlmCall, Parsed, ToolCall, Observation, Final, Stopped, LimitReached, ReplyDelta, ApprovalRequested,
                ApprovalDecided, Routed, SkillActivated, PlanMade, PlanStepStarted, PlanStepDone, Reflected,
                Handoff, ThoughtCandidate, BranchExplored, TreeNote, PathChosen, PersonEdit)
}


def event_from_dict(data: dict[str, Any]) -> Event:
    """Rebuild an event from `Event.to_dict()` output (used by Trace.from_json)."""
    data = dict(data)
    kind = data.pop("type", None)
    cls = EVENT_TYPES.get(kind)
    if cls is None:
        raise ValueError(f"unknown event type {kind!r}; expected one of {', '.join(EVENT_TYPES)}")
    unknown = set(data) - cls._record_fields
    if unknown:
        raise ValueError(f"{kind} event has unknown fields: {', '.join(sorted(unknown))}")
    for name in ("messages", "tools", "steps", "problems", "path"):  # tuples in the event, lists in JSON
        if isinstance(data.get(name), list):
            data[name] = tuple(data[name])
    return cls(**data)
