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
    ... and lesson 21's several agents (handoffs.py): every event names the `agent` behind it ("" for a single
    agent), and a Handoff marks where one agent hands the request to another, or hands it back

With `ReActAgent(stream=True)` (lesson 14) each model call is read as it is typed: its round starts with
the reply's pieces, ReplyDelta ... ReplyDelta, and then the same events as without streaming.

Events are frozen dataclasses: a trace is a record of what happened, never edited afterwards.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar


@dataclass(frozen=True)
class Event:
    """Base class: `step` is the round number, starting at 1. `agent` names the agent whose loop made the event
    when several work on one request (lesson 21); a keyword, and "" (left out of `to_dict`) for a single agent."""

    kind: ClassVar[str] = "event"
    step: int
    agent: str = field(default="", kw_only=True)

    def to_dict(self) -> dict[str, Any]:
        data = {"type": self.kind, **asdict(self)}
        if not data["agent"]:
            del data["agent"]  # a single agent's trace reads as it always has
        return data


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class Parsed(Event):
    """What the parser read in the reply. `rule` says which case applied (see parser.ParsedStep)."""

    kind: ClassVar[str] = "parsed"
    thought: str = ""
    tool_name: str | None = None
    tool_input: str | None = None
    final_answer: str | None = None
    rule: str = ""


@dataclass(frozen=True)
class ToolCall(Event):
    kind: ClassVar[str] = "tool_call"
    name: str = ""
    input: str = ""


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class Final(Event):
    """The run ended with an answer. reason: "final_answer", or "fallback" when the model
    replied with neither an Action nor "Final Answer:" and its text was taken as the answer, or the
    reason of the stop rule that ended the loop ("max_steps", "no_progress", ... see stop_rules.py)
    when the answer came from the closing call that asks for the best answer from what is known."""

    kind: ClassVar[str] = "final"
    answer: str = ""
    reason: str = "final_answer"


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class LimitReached(Event):
    """A stop rule ended the loop (lesson 10, stop_rules.py). `reason` names the rule ("no_progress",
    "token_budget", ...) and `detail` says what it saw. Not the end of the run: a closing round follows
    (one model call for the best answer from what is known), and its Final or Stopped carries the same
    reason."""

    kind: ClassVar[str] = "limit_reached"
    reason: str = ""
    detail: str = ""


@dataclass(frozen=True)
class ReplyDelta(Event):
    """A piece of the model's reply as it arrives (lesson 14: `ReActAgent(stream=True)`), before the round's
    LlmCall. Joined, the pieces of a round are that LlmCall's text (already cut at the stop strings).

    text:      the new piece, never empty
    elapsed_s: seconds from the request to this piece (varies run to run; printed traces leave it out)
    """

    kind: ClassVar[str] = "reply_delta"
    text: str = ""
    elapsed_s: float = field(default=0.0, repr=False)


@dataclass(frozen=True)
class ApprovalRequested(Event):
    """Lesson 15: a tool with side effects waits for a person's yes (confirmation.py). Between this event and
    its `ApprovalDecided` the run is paused: the tool has not run. `summary` is what the person is shown."""

    kind: ClassVar[str] = "approval_requested"
    request_id: int = 0
    tool: str = ""
    summary: str = ""
    timeout_s: float = 0.0


@dataclass(frozen=True)
class ApprovalDecided(Event):
    """How the request ended: outcome "approved" (the tool runs next), "declined", "timeout" or "error" (the
    tool does not run; the Observation says why). `by` says who or what decided."""

    kind: ClassVar[str] = "approval_decided"
    request_id: int = 0
    tool: str = ""
    outcome: str = ""
    by: str = ""
    detail: str = ""


@dataclass(frozen=True)
class Routed(Event):
    """Lesson 17 (router.py): how a request will be handled. mode "react" (one loop) or "plan" (plan-and-execute);
    `skill` the skill asked for (or ""); `reason` says why, in words a person can check."""

    kind: ClassVar[str] = "routed"
    mode: str = "react"
    skill: str = ""
    reason: str = ""


@dataclass(frozen=True)
class SkillActivated(Event):
    """Lesson 17 (skills.py): a skill is active; the model is offered only `tools`, and the registry refuses the
    others. `reason` says how it was chosen."""

    kind: ClassVar[str] = "skill_activated"
    name: str = ""
    tools: tuple[str, ...] = ()
    reason: str = ""


@dataclass(frozen=True)
class PlanMade(Event):
    """Lesson 17 (plan_execute.py): the planner's numbered steps. `revision` 0 is the first plan; 1, 2, ... are
    re-plans of the steps left after a failed one, and `reason` says which failed and why. `error` is set when
    the planner's reply could not be read as a plan (then `steps` is empty)."""

    kind: ClassVar[str] = "plan_made"
    steps: tuple[str, ...] = ()
    revision: int = 0
    reason: str = ""
    error: str = ""


@dataclass(frozen=True)
class PlanStepStarted(Event):
    """One step of the plan begins: `number` in the plan as it stands, `text` the step given to the loop."""

    kind: ClassVar[str] = "plan_step_started"
    number: int = 0
    text: str = ""


@dataclass(frozen=True)
class PlanStepDone(Event):
    """One step of the plan ended: `ok` False when it failed (see plan_execute.step_failure), `result` its
    answer, `reason` why the loop ended or why the step counts as failed."""

    kind: ClassVar[str] = "plan_step_done"
    number: int = 0
    ok: bool = True
    result: str = ""
    reason: str = ""


@dataclass(frozen=True)
class Reflected(Event):
    """Lesson 17 (reflection.py): the draft answer checked against the run's Observations. verdict "ok",
    "revise" (then `answer` is the revised one) or "unchecked" (the check could not be read or made; the draft
    stands); `problems` what the check found wrong."""

    kind: ClassVar[str] = "reflected"
    verdict: str = "ok"
    draft: str = ""
    problems: tuple[str, ...] = ()
    answer: str = ""


@dataclass(frozen=True)
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
                ApprovalDecided, Routed, SkillActivated, PlanMade, PlanStepStarted, PlanStepDone, Reflected, Handoff)
}


def event_from_dict(data: dict[str, Any]) -> Event:
    """Rebuild an event from `Event.to_dict()` output (used by Trace.from_json)."""
    data = dict(data)
    kind = data.pop("type", None)
    cls = EVENT_TYPES.get(kind)
    if cls is None:
        raise ValueError(f"unknown event type {kind!r}; expected one of {', '.join(EVENT_TYPES)}")
    known = {f.name for f in fields(cls)}
    unknown = set(data) - known
    if unknown:
        raise ValueError(f"{kind} event has unknown fields: {', '.join(sorted(unknown))}")
    for name in ("messages", "tools", "steps", "problems"):  # tuples in the event, lists in JSON
        if isinstance(data.get(name), list):
            data[name] = tuple(data[name])
    return cls(**data)
