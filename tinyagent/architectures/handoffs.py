"""Lesson 21: several agents. A triage agent hands each request to a specialist through a handoff tool.

    customer ──> triage (tools: handOffToLogistics, handOffToRefunds, handOffToPolicies)
                   │ Action: handOffToRefunds / Action Input: <the customer's words>        Handoff
                   ▼
                 refunds (lesson 17's skill as an agent: only its tools, plus handBack)
                   │ its own loop, its own conversation: it sees only what it was handed (its run keeps the
                   │ triage's conversation beside it, unsent: handed_runs.py, for lesson 25's defences)
                   ▼ its Final Answer, or handBack(<why not me>)                           Handoff(back)
                 triage reads that as the handoff's Observation, and answers (or hands on)

Each specialist is a ReActAgent on lesson 17's `SkillRegistry`: the prompt lists only the skill's tools, and an
Action naming another specialist's tool comes back as an error Observation, never a run of that tool. The
handoff is a loop part (`HandoffAct`, the triage's act): when the triage calls a handoff tool, the act runs
the specialist's loop in its place, yields the specialist's events with `agent` set to its name, and returns
what came back as the tool's result. `Team` runs the triage and names the triage's own events; its trace holds
every agent's events in the order they happened, and `Trace.format` starts a new round per agent.

    team = Team(llm, shop_specialists(llm, shop_registry(shop, clock)))
    result = team.run("我上周买的扫地机不回充了……订单号 88231")
    {event.agent for event in result.trace}                      -> {"triage", "refunds"}
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from tinyagent.agent import AgentResult, AgentRun, ReActAgent
from tinyagent.architectures.handed_runs import conversation_of, handed_over
from tinyagent.architectures.skills import Skill, SkillRegistry, shop_skills
from tinyagent.events import Event, Final, LlmCall, ToolCall, event_kind
from tinyagent.llm_client import LlmClient
from tinyagent.loop_parts import RunInTurn
from tinyagent.memory.run_changes import changes_made, said_after, writes_in
from tinyagent.prompts import build_system_prompt
from tinyagent.registry import ToolRegistry, ToolResult, error_observation
from tinyagent.toolkit.confirmation import GatedAct, settling_part
from tinyagent.tools import Action, FunctionTool
from tinyagent.trace import Trace, kept_with_ctrl_c

HANDOFF_LABELS = {  # in a printed trace
    "en": {"handoff": "[Handoff] {source} -> {target}: {message}", "handback": "[Handed back] {target} -> {source}: {message}"},
    "zh": {"handoff": "[转交] {source} -> {target}：{message}", "handback": "[交回] {target} -> {source}：{message}"},
}


@event_kind
class Handoff(Event):
    """Lesson 21 (handoffs.py): `source` hands the request to `target` with `message`, all `target` sees of it;
    or, with `back` True, `target` hands its result back to `source` (`message` is then what it hands back)."""

    kind: ClassVar[str] = "handoff"
    source: str = ""
    target: str = ""
    message: str = ""
    back: bool = False

    def lines(self, lang: str, usage: bool = False, round: list[Event] = ()) -> list[str]:
        label = HANDOFF_LABELS[lang]["handback" if self.back else "handoff"]
        return [label.format(source=self.source, target=self.target, message=self.message)]


TRIAGE = "triage"
HANDOFF_PREFIX = "handOffTo"
HAND_BACK = "handBack"
SPECIALIST_MAX_STEPS = 6  # a specialist does one part of the shop's work (lesson 17's STEP_MAX_STEPS)

TRIAGE_INSTRUCTIONS = {
    "en": "You are the triage agent of the Bit Mall shop. You have no shop tools: hand the customer's request, in "
          "their own words, to the one specialist whose tools fit it. When the specialist answers, give its answer "
          "to the customer as your Final Answer. If it hands the request back, hand it to another specialist "
          "that fits, or tell the customer what cannot be done. Answer a greeting or a question outside the shop "
          "yourself.",
    "zh": "你是比特严选的分诊智能体。你没有店铺的工具：把顾客的请求按原话转交给工具对得上的那一位专员。专员答复后，把它的答复作为"
          "你的 Final Answer 告诉顾客。专员把请求交回时，转交给另一位合适的专员，或者告诉顾客哪些事做不了。问候和店铺以外的问题由你自己回答。",
}
EMPTY_HANDOFF = {  # the triage's Observation when its Action Input is empty: the specialist is not run
    "en": "{tool} needs the customer's words: write the customer's request as its Action Input",
    "zh": "{tool} 需要顾客的原话：把顾客的请求写在 Action Input 里",
}
HAND_BACK_INSTRUCTIONS = {
    "en": "If the request needs a tool you do not have, do not guess: call handBack with one sentence saying what "
          "it needs, and the triage agent will hand it to someone else.",
    "zh": "如果请求需要你没有的工具，不要猜：调用 handBack，用一句话说明它需要什么，分诊智能体会转交给别人。",
}


def handoff_name(specialist: str) -> str:
    """The triage's tool for one specialist: "refunds" -> "handOffToRefunds"."""
    return HANDOFF_PREFIX + specialist[:1].upper() + specialist[1:]


def is_handoff(tool_name: str) -> bool:
    """True for a handoff or hand-back tool: the team's routing, not a tool of the shop."""
    name = (tool_name or "").strip()
    return name.startswith(HANDOFF_PREFIX) or name == HAND_BACK


def hand_back_tool() -> FunctionTool:
    """The specialist's way back to the triage. Inside a team the call never runs (`HandoffAct` ends the
    specialist's loop at it); alone, it says where the request would go."""
    return FunctionTool(
        HAND_BACK,
        "Hand the request back to the triage agent, with one sentence saying what it needs that you cannot do.",
        lambda note: json.dumps({"handed_back": note.strip()}, ensure_ascii=False),
        {"zh": "把请求交回分诊智能体，并用一句话说明它需要什么、你做不了什么。"},
    )


@dataclass(frozen=True)
class Specialist:
    """One agent of the team: a skill (its name, its description, its tools and instructions) on a model.

    Its registry holds only the skill's tools and handBack; any other tool of the shop is refused with an error
    Observation (lesson 17's SkillRegistry). `options` go to its ReActAgent (max_steps, parts, ...).
    """

    skill: Skill
    registry: SkillRegistry
    llm: Any
    options: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.skill.name

    @property
    def tools(self) -> tuple[str, ...]:
        return tuple(self.registry.names)

    def agent(self, lang: str) -> ReActAgent:
        """The specialist's agent for a run in `lang`: the skill's prompt, then the hand-back rule."""
        prompt = f"{self.registry.skill.system_prompt(self.registry.full, lang)}\n{HAND_BACK_INSTRUCTIONS[lang]}"
        options = {"max_steps": SPECIALIST_MAX_STEPS, **self.options}
        return ReActAgent(self.llm, self.registry, lang=lang, system_prompt=prompt, **options)

    def __repr__(self) -> str:
        return f"<Specialist {self.name}: {', '.join(self.tools)}>"


class _ScopedWithHandBack(SkillRegistry):
    """A skill's registry with handBack added; `full` is the registry the skill was scoped from, plus handBack."""

    def __init__(self, registry: ToolRegistry, skill: Skill):
        self.full = ToolRegistry([*registry, hand_back_tool()])
        super().__init__(self.full, replace(skill, tools=(*skill.tools, HAND_BACK)))


def specialist(skill: Skill, registry: ToolRegistry, llm: Any, **options: Any) -> Specialist:
    """`skill` as an agent on `llm`, with `registry`'s tools that the skill allows (SkillError if one is missing)."""
    return Specialist(skill, _ScopedWithHandBack(registry, skill), llm, options)


def shop_specialists(llm: Any, registry: ToolRegistry, **options: Any) -> list[Specialist]:
    """Lesson 17's three skills (logistics, policies, refunds) as agents on the shop's tools."""
    return [specialist(skill, registry, llm, **options) for skill in shop_skills().values()]


def handoff_tool(member: Specialist) -> FunctionTool:
    """The triage's tool for handing a request to `member`; its description is the specialist's, with its tools."""
    tools = ", ".join(name for name in member.tools if name != HAND_BACK)
    return FunctionTool(
        handoff_name(member.name),
        f"Hand the request to the {member.name} agent: {member.skill.description} (tools: {tools}). "
        "Input: the customer's request, in their words.",
        lambda text: error_observation(f"{handoff_name(member.name)} runs only inside a team's loop (HandoffAct)"),
        {"zh": f"把请求转交给 {member.name} 专员：{member.skill.description}（工具：{tools}）。输入：顾客的原话。"},
    )


class HandoffAct:
    """How the triage's actions are run: a handoff runs the specialist's loop, every other call runs as `inner`
    runs it. The specialist starts a conversation of its own from the handed message alone; a handoff with an
    empty message runs no specialist and is an error Observation (`EMPTY_HANDOFF`) for the triage."""

    slot: ClassVar[str] = "act"
    settles_calls: ClassVar[bool] = True  # a handoff's result comes in __call__, before the calls run (settling_part)

    def __init__(self, team: Team, inner: Any | None = None):
        self.team = team
        self.inner = inner if inner is not None else RunInTurn()

    def around(self, inner: Any) -> HandoffAct:
        # Around a gate, the gate is never asked (its `perform` refuses each guarded call); under one, no handoff
        # runs (the gate runs the calls with this part's `perform`). GatedAct refuses the second order itself.
        part = settling_part(inner)
        if isinstance(part, GatedAct):
            raise TypeError(f"{self!r} would go around {part!r}, which would never be asked and would refuse every "
                            "guarded call: mount the gate on the specialists that call the guarded tools, "
                            "shop_specialists(llm, tools, parts=[GatedAct(gate)])")
        if part is not None:
            raise TypeError(f"{self!r} would go around {part!r}, which settles each call itself before it runs, and "
                            "the handoffs would skip that: mount one of them only")
        return HandoffAct(self.team, inner)

    def __call__(self, run: AgentRun, step: int, actions: list[Action], ready: list[ToolResult | None]
                 ) -> Iterator[Event]:
        ready = list(ready)
        for i, action in enumerate(actions):
            yield ToolCall(step, action.tool_name, action.tool_input)
            member = self.team.member_for(action.tool_name)
            if member is not None and ready[i] is None:
                message = str(action.tool_input or "")
                if message.strip():  # the specialist's run keeps the triage's conversation: who wrote what
                    ready[i] = yield from self.team.hand_off(member, message, step, run.lang, conversation_of(run))
                else:  # the specialist would start from nothing: the triage is told what to hand over
                    said = EMPTY_HANDOFF[run.lang].format(tool=handoff_name(member.name))
                    ready[i] = ToolResult(error_observation(said), error=True)
        return self.inner.perform(run, actions, ready)

    def perform(self, run: AgentRun, actions: list[Action], ready: list[ToolResult | None]):
        return self.inner.perform(run, actions, ready)

    def __repr__(self) -> str:
        return f"HandoffAct({', '.join(self.team.members)})"


class OwnEvents:
    """The triage's stop rules, judging only the triage's own events: a specialist's rounds, inside one of
    the triage's, neither count against the triage's step cap nor look like the triage repeating itself."""

    slot: ClassVar[str] = "stop_rules"

    def __init__(self, rules: Any = None):
        self.rules = rules

    def around(self, inner: Any) -> OwnEvents:
        return OwnEvents(inner)

    def end(self, run: Any, stop: Any, step: int) -> Iterator[Event]:
        return self.rules.end(run, stop, step)

    def before_call(self, trace: Trace) -> Any:
        return self.rules.before_call(_own(trace))

    def after_reply(self, trace: Trace) -> Any:
        return self.rules.after_reply(_own(trace))

    def run_tool(self, tools: ToolRegistry, action: Action) -> ToolResult:
        return self.rules.run_tool(tools, action)

    def fresh(self) -> OwnEvents:
        fresh = getattr(self.rules, "fresh", None)
        return OwnEvents(fresh() if callable(fresh) else self.rules)

    def __repr__(self) -> str:
        return f"OwnEvents({self.rules!r})"


def _own(trace: Trace) -> Trace:
    return Trace([event for event in trace.events if not event.agent], lang=trace.lang)


class TriageAgent(ReActAgent):
    """The triage: a ReActAgent whose tools are the handoffs, with the triage's rule after the tool list."""

    def prompt_for(self, lang: str, tools: ToolRegistry | None = None) -> str:
        return f"{build_system_prompt(tools if tools is not None else self.tools, lang)}\n\n{TRIAGE_INSTRUCTIONS[lang]}"


class Team:
    """A triage agent and its specialists; `run` and `start` as ReActAgent's, every event named by its agent.

    llm:         the triage's model (each specialist has its own, usually the same)
    specialists: the Specialist agents the triage may hand requests to
    options:     for the triage's ReActAgent (max_steps, lang, parts, ...)
    """

    def __init__(self, llm: LlmClient | None, specialists: Iterable[Specialist], **options: Any):
        self.members = {member.name: member for member in specialists}
        if not self.members:
            raise ValueError("a team needs at least one specialist")
        tools = ToolRegistry([handoff_tool(member) for member in self.members.values()])
        given = list(options.pop("parts", ()))
        if any(isinstance(part, GatedAct) for part in given):
            # The triage calls handoffs only: a gate there would guard nothing while a specialist refunds.
            raise ValueError("a confirmation gate in the team's parts guards the triage, which calls no shop tool: "
                             "mount it on the specialists instead, shop_specialists(llm, tools, "
                             "parts=[GatedAct(gate)])")
        parts = [*given, HandoffAct(self), OwnEvents()]
        self.triage = TriageAgent(llm, tools, parts=parts, **options)

    @property
    def lang(self) -> str | None:
        return self.triage.lang

    @property
    def llms(self) -> tuple:
        """Every model the team talks to, each once: the triage's, then the specialists' (often the same one)."""
        models = [self.triage.llm, *(member.llm for member in self.members.values())]
        return tuple({id(model): model for model in models}.values())

    def language_for(self, question: str) -> str:
        return self.triage.language_for(question)

    def member_for(self, tool_name: str) -> Specialist | None:
        name = (tool_name or "").strip()
        return next((m for m in self.members.values() if handoff_name(m.name) == name), None)

    def writes(self, tool_name: str) -> bool:
        """For changes_made, as writes_in for one agent: whether a call of `tool_name` by any agent of the team may
        have changed something. A handoff or handBack is the team's routing, never a change; a specialist's tool
        counts unless its registry marks it `read_only`; a name no specialist has counts, so it is never left unsaid."""
        if is_handoff(tool_name):
            return False
        name = tool_name.strip()
        tool = next((m.registry.get(name) for m in self.members.values() if name in m.registry), None)
        return tool is None or not tool.read_only

    def hand_off(self, member: Specialist, message: str, step: int, lang: str,
                 handed_from: list[dict] | None = None) -> Iterator[Event]:
        """Run `member` on `message` alone (all it is sent); `handed_from` is the conversation the triage wrote
        `message` in, which the specialist's run keeps (`handed_over`: lesson 25's defences read the customer's words
        there, and never take the triage's for them), or None when `message` is the customer's own (`hand_to`).
        Yields its events (named) between two Handoff events and returns the result the triage reads, as JSON:
        {"agent", "answer"} or {"agent", "handed_back"}, with "ended" when the specialist's run ended other than by a
        final answer or the fallback (its reason, e.g. "max_steps"), and "changes" when it changed something
        (changes_made: a refund made, one line each)."""
        yield Handoff(step, source=TRIAGE, target=member.name, message=message, agent=TRIAGE)
        run = member.agent(lang).start(message)
        if handed_from is not None:
            handed_over(run, handed_from)
        handed_back = None
        try:
            for event in run:
                yield replace(event, agent=member.name)
                if isinstance(event, ToolCall) and event.name.strip() == HAND_BACK:
                    handed_back = event.input.strip()
                    break  # the specialist's turn ends at its handBack: the tool does not run
        finally:
            # Also when the team's run is closed while the specialist waits for a person's yes: that request is
            # cancelled with it, not left to be answered later.
            run.close()
        if handed_back is not None:
            said = {"agent": member.name, "handed_back": handed_back}
        else:
            end = run.trace.end
            said = {"agent": member.name, "answer": end.answer if end else ""}
            if not isinstance(end, Final) or end.reason not in ("final_answer", "fallback"):
                said["ended"] = end.reason if end else "unended"
        # A refund made stands whatever the specialist said after it, or if it handed back: the triage must hear of
        # it, or its answer to the customer would hide it.
        changes = changes_made(run.trace, writes_in(member.registry))
        if changes:
            said["changes"] = changes
        # An empty handBack is still one: its message is what it said, nothing (there is no "answer" then).
        yield Handoff(step, source=TRIAGE, target=member.name,
                      message=handed_back if handed_back is not None else said["answer"], back=True, agent=TRIAGE)
        return ToolResult(json.dumps(said, ensure_ascii=False), error=False)

    def hand_to(self, name: str, message: str, lang: str | None = None) -> AgentResult:
        """Hand `message` straight to the specialist `name` (the triage's model is not asked; the two Handoff
        events still stand around the run) and return how it ended as an AgentResult: to try one alone."""
        if name not in self.members:
            raise KeyError(f"no specialist {name!r}; the team has {', '.join(self.members)}")
        lang = lang or self.language_for(message)
        trace = Trace(lang=lang)
        events = self.hand_off(self.members[name], message, 1, lang)
        while True:
            try:
                trace.append(next(events))
            except StopIteration as done:
                result = done.value
                break
        said = json.loads(result.text)
        reason = "handed_back" if "handed_back" in said else said.get("ended", "final_answer")
        answer = said.get("handed_back") or said.get("answer", "")
        if reason != "final_answer":  # then no answer of the specialist's own reports what it changed
            answer = said_after(answer, said.get("changes", []), lang)
        return AgentResult(answer, reason, trace, [])

    def start(self, question: str, history: list[dict] | None = None) -> TeamRun:
        return TeamRun(self, self.triage.start(question, history))

    def steps(self, question: str, history: list[dict] | None = None) -> Iterator[Event]:
        return iter(self.start(question, history))

    def run(self, question: str, history: list[dict] | None = None) -> AgentResult:
        return self.start(question, history).finish()

    def __repr__(self) -> str:
        return f"<Team {TRIAGE} -> {', '.join(self.members)}>"


class TeamRun:
    """One run of a team: the triage's run, with each of its own events named "triage". `trace` holds every
    agent's events; `messages` is the triage's conversation (a specialist's is in its LlmCall events)."""

    def __init__(self, team: Team, run: AgentRun):
        self.team = team
        self.run = run
        self.lang = run.lang
        self.trace = Trace(lang=run.lang)

    @property
    def messages(self) -> list[dict]:
        return self.run.messages

    @property
    def done(self) -> bool:
        return self.trace.end is not None and self.trace.end.agent == TRIAGE

    def __iter__(self) -> TeamRun:
        return self

    def __next__(self) -> Event:
        event = next(self.run)
        if not event.agent:
            event = replace(event, agent=TRIAGE)
        self.trace.append(event)
        return event

    def advance(self) -> Event | None:
        return next(self, None)

    def close(self) -> None:
        self.run.close()

    def finish(self) -> AgentResult:
        with kept_with_ctrl_c(self.trace):  # every agent's events so far
            for _ in self:
                pass
        end = self.run.trace.end
        return AgentResult(answer=end.answer, reason=end.reason, trace=self.trace, messages=self.run.messages)


def shop_team(llm: Any, tools: ToolRegistry, **options: Any) -> Team:
    """The shop's team on `tools`: a triage agent and lesson 17's three skills as specialists, all on `llm`.
    `options` go to the triage (max_steps, ...). Lesson 21 runs lesson 18's suite on it with
    `evaluate(llm, build=shop_team)`: each task's agent is then a team on that task's fresh shop."""
    return Team(llm, shop_specialists(llm, tools), **options)


def calls_by_agent(trace: Trace) -> dict[str, dict[str, int]]:
    """Per agent, in order of appearance: its model calls and tokens (prompt + completion)."""
    table: dict[str, dict[str, int]] = {}
    for call in trace.of_type(LlmCall):
        row = table.setdefault(call.agent or "-", {"model_calls": 0, "tokens": 0})
        row["model_calls"] += 1
        row["tokens"] += int(call.usage.get("prompt_tokens") or 0) + int(call.usage.get("completion_tokens") or 0)
    return table
