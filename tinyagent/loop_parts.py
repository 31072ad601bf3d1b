"""The parts of lesson 06's loop, and what a part must do to take the place of one.

The loop (agent.py, `AgentRun.loop`) is the same for every agent of the course; what changes from lesson to
lesson is the part it consults at each move of its diagram. Each part names the slot it fills:

    slot         the question it answers        lesson 06's part (this module)
    request      what is sent                   WholeConversation
    send         how it is sent                 PlainSend
    read         how a reply is read            StrictRead
    act          how the actions are run        RunInTurn
    stop_rules   when to stop                   StepLimit (MAX_STEPS, and a reply cut at max_tokens)

A later lesson brings a part of its own, in its own module, and an agent takes it the one way:
`ReActAgent(llm, tools, parts=[MyPart()])`. A part with a `slot` takes that slot. A part that also has
`around(inner)` wraps whatever holds its slot (it is handed the part it wraps, and returns a part that holds it), so
two parts for one slot compose. `agent.parts` shows what an agent uses. What each slot's part must do, as the loop
calls it:

    request.build(run, closing=False) -> (messages, options)
        The messages to send and the keyword options of the call (stop, max_tokens, ...). `closing` is a last
        call a stop part may make for the best answer (lesson 10's closing call; lesson 06 never makes one).
    send(run, step, messages, **options) -> a generator of events that returns the ChatResult
        The events it yields come before the round's LlmCall.
    read(run, step, reply) -> Reading; read.parse(text, finish_reason, tools) -> ParsedStep
        What the reply asked for (see `Reading`); `parse` reads a text alone.
    act(run, step, actions, ready) -> a generator of events that returns the results, in order
        It announces each call (a ToolCall event) before anything runs. `ready[i]`, when not None, is a result
        that stands in for action i: it does not run. Lesson 06's parts never make one; later ones do (a native
        call whose arguments could not be read, lesson 09; a stop part's warning, lesson 10).
        `act.perform(run, actions, ready)` runs them.
    stop_rules.before_call(trace) -> Stop | None; stop_rules.after_reply(trace) -> Stop | a stand-in | None;
    stop_rules.run_tool(tools, action) -> ToolResult; stop_rules.end(run, stop, step) -> the events that end it
        A stand-in is a result put in the action's place (lesson 10's warning); lesson 06's StepLimit gives none.

A part with state of its own for one run (a count, a cache: lesson 10's stop rules count repeats) has `fresh()`,
which the run calls at its start: two runs of one agent never share what a part remembers. Lesson 06's parts
remember nothing.

The two paragraphs below are for later lessons' parts: lesson 06's agent and parts all speak "text", and none of
them is `outermost`.

A part made for one protocol says which with `protocol`, the agent's word for the way it talks to the model
(lesson 06's agent speaks "text": Thought / Action / Action Input lines; lesson 09's speaks "function calling", with
the API's tool calls). The agent refuses, when it is made, a part that says another protocol than its own: lesson
06's line scanner would read a reply of another protocol as no step at all, and a part that builds another
protocol's request asks the agent for what it does not have. A part that names no protocol works with any.

A part whose work must go out as it is (lesson 13's context budget measures what the parts before it made) says
`outermost = True`: it must be the last part of its slot in the list, and a part listed after it for that slot, which
would wrap it, is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from tinyagent.errors import TinyAgentError
from tinyagent.events import Event, Final, LlmCall, Observation, Parsed, Stopped, ToolCall
from tinyagent.llm_client import ChatResult
from tinyagent.number_checks import check_whole
from tinyagent.parser import ParsedStep, parse_step
from tinyagent.registry import ToolRegistry, ToolResult, error_observation
from tinyagent.tools import Action
from tinyagent.trace import Trace

MODEL_UNAVAILABLE = {
    "en": "Sorry, I cannot reach the language model right now. Please try again in a moment.",
    "zh": "抱歉，现在连不上大模型，请稍后再试。",
}
EMPTY_REPLY = {
    "en": "Sorry, I did not manage to put an answer together. Please ask again.",
    "zh": "抱歉，我没能组织好答复，请再问一次。",
}


# -- what a reply asked for ------------------------------------------------------------------------------------
@dataclass
class Reading:
    """One reply as the loop acts on it.

    message: the reply as it joins the conversation (an assistant message)
    parsed:  the Parsed events: one for a text step (lesson 09's native reply has one per call); the stop
             rules judge each before anything runs
    actions: the tools to run, in order (none when the reply is an answer)
    ready:   per action, a result that stands in for it without running it, or None (always None in
             lesson 06; lesson 09's unreadable arguments make one)
    ending:  the event that ends the run when there is nothing to run: Final (an answer) or Stopped
    """

    message: dict
    parsed: list[Parsed]
    actions: list[Action] = field(default_factory=list)
    ready: list[ToolResult | None] = field(default_factory=list)
    ending: Event | None = None

    def observe(self, step: int, results: Iterable[ToolResult], limit: int | None
                ) -> Iterator[tuple[dict, Observation]]:
        """Each result as the message the model reads next and its Observation event: in text ReAct, a user
        message "Observation: ...", cut to `limit` characters."""
        for result in results:
            text, original_chars = cut_observation(result.text, limit)
            yield {"role": "user", "content": f"Observation: {text}"}, Observation(step, text, result.error,
                                                                                   original_chars)

    def not_run(self, reason: str) -> list[dict]:
        """Messages for the calls a stop left unrun (none in text ReAct: nothing answers an Action line; lesson
        09's native reply must answer each of its calls, and says so in its own Reading)."""
        return []


def text_reading(step: int, reply: ChatResult, parsed: ParsedStep, lang: str) -> Reading:
    """A text ReAct reply, read into `parsed`: an Action to run, a Final Answer, or the fallback."""
    action = parsed.action
    event = Parsed(step, parsed.thought, action.tool_name if action else None,
                   action.tool_input if action else None, parsed.final_answer, parsed.rule)
    reading = Reading({"role": "assistant", "content": reply.text}, [event])
    if parsed.final_answer is not None and not parsed.final_answer.strip():
        # "Final Answer:" with nothing after it: an empty answer would reach the customer as if it were one.
        reading.ending = Stopped(step, "empty_reply", EMPTY_REPLY[lang], detail="the model's Final Answer was empty")
    elif parsed.final_answer is not None:
        reading.ending = Final(step, parsed.final_answer, "final_answer")
    elif action is not None:
        reading.actions, reading.ready = [action], [None]
    elif reply.tool_calls:
        # The API's tool_calls field, not text (lesson 09 reads it): this text agent never sends `tools`, but a
        # server or proxy may add them. This loop reads only "Action:" lines, and any prose beside the calls is
        # the model's preamble to them, not its answer.
        reading.ending = Stopped(step, "native_tool_calls", EMPTY_REPLY[lang], detail=_native_calls_detail(reply))
    elif not reply.text.strip():
        reading.ending = Stopped(step, "empty_reply", EMPTY_REPLY[lang], detail="the model sent an empty reply")
    else:
        # The fallback: no Action and no "Final Answer:" means the model answered in prose.
        reading.ending = Final(step, reply.text.strip(), "fallback")
    return reading


def cut_observation(text: str, limit: int | None) -> tuple[str, int | None]:
    """`text` cut to its first `limit` characters, with a line telling the model so, and the original
    length; `(text, None)` when it fits."""
    if limit is not None:
        check_whole("limit", limit)
    if limit is None or len(text) <= limit:
        return text, None
    note = f"[cut: the tool returned {len(text)} characters; this is the first {limit}]"
    return f"{text[:limit]}\n{note}", len(text)


# -- lesson 06's parts -------------------------------------------------------------------------------------------
class WholeConversation:
    """What is sent: the whole message list, with the agent's stop sequences and reply cap."""

    slot: ClassVar[str] = "request"
    protocol: ClassVar[str] = "text"  # the tools are listed in the text prompt, not sent beside it

    def build(self, run: Any, closing: bool = False) -> tuple[list[dict], dict]:
        return run.messages, {"stop": run.agent.stop, "max_tokens": run.agent.max_tokens}

    def __repr__(self) -> str:
        return "WholeConversation()"


class PlainSend:
    """How it is sent: one request, one whole reply (`LlmClient.chat`)."""

    slot: ClassVar[str] = "send"

    def __call__(self, run: Any, step: int, messages: list[dict], **options: Any
                 ) -> Generator[Event, None, ChatResult]:
        return run.agent.llm.chat(messages, **options)
        yield  # a generator like every send (another send may yield events before the reply); this one yields nothing

    def __repr__(self) -> str:
        return "PlainSend()"


class StrictRead:
    """How a reply is read: lesson 05's line scanner."""

    slot: ClassVar[str] = "read"
    protocol: ClassVar[str] = "text"

    def __call__(self, run: Any, step: int, reply: ChatResult) -> Reading:
        return text_reading(step, reply, self.parse(reply.text, reply.finish_reason, run.agent.tools), run.lang)

    def parse(self, text: str, finish_reason: str | None = None, tools: Any = None) -> ParsedStep:
        return parse_step(text)

    def __repr__(self) -> str:
        return "StrictRead()"


class RunInTurn:
    """How the actions are run: each call announced, then run one after the other through the stop part and
    the registry."""

    slot: ClassVar[str] = "act"

    def __call__(self, run: Any, step: int, actions: list[Action], ready: list[ToolResult | None]
                 ) -> Generator[Event, None, Iterable[ToolResult]]:
        for action in actions:
            yield ToolCall(step, action.tool_name, action.tool_input)
        return self.perform(run, actions, ready)

    def perform(self, run: Any, actions: list[Action], ready: list[ToolResult | None]) -> Iterator[ToolResult]:
        """The results, in order; each tool runs when its result is asked for."""
        return (done or run_tool(run, action) for action, done in zip(actions, ready))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def run_tool(run: Any, action: Action) -> ToolResult:
    """One action's result. The registry never raises; a stop part that runs tools its own way might, and that
    must not end the run."""
    try:
        return run.stop_rules.run_tool(run.agent.tools, action)
    except Exception as exc:  # noqa: BLE001 - a failure becomes the call's error result
        return ToolResult(error_observation(f"tool {action.tool_name} failed: {type(exc).__name__}: {exc}"),
                          error=True)


def stopped_on_error(step: int, exc: TinyAgentError, lang: str) -> Stopped:
    """The end of a run whose request could not be made or answered. An error may say how it ends the run
    (`stop_reason` and a polite `answer` per language); any other is the model being out of reach."""
    polite = getattr(exc, "answer", None) or MODEL_UNAVAILABLE
    return Stopped(step, getattr(exc, "stop_reason", "llm_error"), polite[lang], detail=str(exc))


# -- when to stop -----------------------------------------------------------------------------------------
GIVE_UP = {
    "en": "Sorry, I could not finish this within {n} steps. Please rephrase your request or add "
    "details, and I will try again.",
    "zh": "抱歉，这个问题我走了 {n} 步仍没有处理完。请换个说法或补充一些信息，我再试一次。",
}
CUT_OFF = {
    "en": "Sorry, my reply was cut off before it was complete. Please ask again, perhaps more briefly.",
    "zh": "抱歉，我的回复被截断了，没能说完。请再问一次，或者把问题说得简短一些。",
}
POLITE_OTHER = {
    "en": "Sorry, I had to stop before I was done ({reason}). Please try again.",
    "zh": "抱歉，我在处理完之前不得不停下（{reason}）。请再试一次。",
}


@dataclass(frozen=True)
class Stop:
    """End the run. `reason` is the name the trace and `result.reason` show; `detail` (for the developer)
    says what was seen; `values` fill the messages (e.g. {"n": 3} for max_steps); `polite` is the message the
    user gets, per language, with `{reason}` and the values to fill in."""

    reason: str
    detail: str = ""
    values: Mapping[str, Any] = field(default_factory=dict)
    polite: Mapping[str, str] = field(default_factory=lambda: POLITE_OTHER, repr=False, compare=False)

    def message(self, lang: str) -> str:
        """The polite message the user gets when no answer comes from the model."""
        return self.polite[lang].format(reason=self.reason, **self.values)


@dataclass
class StepLimit:
    """When to stop in lesson 06: after `max_steps` rounds, or on a reply cut at max_tokens (it may hold half an
    Action Input, so it never runs). Tools run through the registry; a stop ends the run with a polite message."""

    max_steps: int = 10
    slot: ClassVar[str] = "stop_rules"

    def __post_init__(self) -> None:
        check_whole("StepLimit(max_steps)", self.max_steps)  # NaN never compares >=: the loop would not end

    def before_call(self, trace: Trace) -> Stop | None:
        if trace.rounds >= self.max_steps:
            return Stop("max_steps", values={"n": self.max_steps}, polite=GIVE_UP)
        return None

    def after_reply(self, trace: Trace) -> Stop | None:
        call = next((e for e in reversed(trace.events) if isinstance(e, LlmCall)), None)
        if call is not None and call.finish_reason == "length":
            return Stop("length", detail=f"cut off after: {call.text[-200:]!r}", polite=CUT_OFF)
        return None

    def run_tool(self, tools: ToolRegistry, action: Action) -> ToolResult:
        return tools.run(action)

    def end(self, run: Any, stop: Stop, step: int) -> Iterator[Event]:
        """The events that end `run` on `stop`, found in round `step`: the polite message."""
        yield Stopped(step, stop.reason, stop.message(run.lang), detail=stop.detail)


# -- the parts of one agent ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class LoopParts:
    """The five parts an agent's loop consults (see the module's docstring)."""

    request: Any
    send: Any
    read: Any
    act: Any
    stop_rules: Any

    def __post_init__(self) -> None:
        for name, needs in _NEEDS.items():
            part = getattr(self, name)
            # "__call__" asks that the part itself be callable; any other need is a method of that name.
            missing = [signature for method, signature in needs.items()
                       if not callable(part if method == "__call__" else getattr(part, method, None))]
            if missing:
                raise TypeError(f"the {name} part {part!r} needs {' and '.join(missing)}")

    def fresh(self) -> LoopParts:
        """The same parts for a new run: each that remembers something, with nothing remembered."""
        return LoopParts(*(_fresh(getattr(self, name)) for name in _NEEDS))

    def mount(self, parts: Iterable[Any] = (), protocol: str | None = None) -> LoopParts:
        """These parts with `parts` mounted, in order: each takes its `slot`, or wraps what holds it when it has
        `around(inner)`. A part without `around` listed after another part of the same slot would throw that one
        away (a confirmation gate, a budget): a TypeError says to list it first; so does a part listed after one
        that must stay `outermost`. With `protocol` (the agent's), a part that says it is for another protocol is a
        TypeError too."""
        if isinstance(parts, Mapping) or not isinstance(parts, Iterable):
            raise TypeError(f"parts must be a list of parts, such as parts=[MyPart()], got {parts!r}")
        slots = {name: getattr(self, name) for name in _NEEDS}
        given: dict[str, Any] = {}  # the slots a part of this list holds already, and that part
        for part in parts:
            slot = getattr(part, "slot", None)
            if slot not in slots:
                raise TypeError(f"{part!r} names no slot of the loop: a part's class says `slot = ...`, one of "
                                f"{', '.join(_NEEDS)}")
            wanted = getattr(part, "protocol", None)
            if protocol is not None and wanted is not None and wanted != protocol:
                raise TypeError(f"{part!r} is a part for the {wanted} protocol, and this agent speaks the {protocol} "
                                f"protocol: mount it on an agent that speaks {wanted}, or leave it out")
            around = getattr(part, "around", None)
            if not callable(around) and slot in given:
                raise TypeError(f"{part!r} takes the {slot} slot whole, and would throw away {given[slot]!r}, listed "
                                "before it: list it first, so that the other wraps it")
            if getattr(given.get(slot), "outermost", False):
                raise TypeError(f"{part!r} would go around {given[slot]!r}, which must be the last {slot} part (what it "
                                f"builds goes out as it is): list {type(part).__name__} before "
                                f"{type(given[slot]).__name__}")
            slots[slot] = around(slots[slot]) if callable(around) else part
            given[slot] = part
        return LoopParts(**slots)


# What the loop calls on each slot's part, and how: the slots in the order LoopParts takes them.
_NEEDS = {
    "request": {"build": "build(run, closing=False) -> (messages, options)"},
    "send": {"__call__": "to be called as send(run, step, messages, **options)"},
    "read": {"__call__": "to be called as read(run, step, reply)", "parse": "parse(text, finish_reason, tools)"},
    "act": {"__call__": "to be called as act(run, step, actions, ready)", "perform": "perform(run, actions, ready)"},
    "stop_rules": {"before_call": "before_call(trace)", "after_reply": "after_reply(trace)",
                   "run_tool": "run_tool(tools, action)", "end": "end(run, stop, step)"},
}


def part_in_chain(part: Any, found: Callable[[Any], bool]) -> Any | None:
    """The first part of the chain `part` heads (it, the part it wraps, that one's, and so on: a part mounted with
    `around(inner)` keeps the part it wraps as `inner`) for which `found(part)` is true, or None."""
    while part is not None:
        if found(part):
            return part
        part = getattr(part, "inner", None)
    return None


def _fresh(part: Any) -> Any:
    fresh = getattr(part, "fresh", None)
    return fresh() if callable(fresh) else part


def _native_calls_detail(reply: ChatResult) -> str:
    names = ", ".join(_call_name(call) for call in reply.tool_calls)
    return (
        f"the model answered with native tool calls ({names}), which the text protocol does not read: "
        "don't send `tools` to this agent (it never does itself; check a server or proxy that adds them, "
        "or the server's automatic tool-call parsing), or use a model or prompt that writes "
        "Thought / Action / Action Input lines"
    )


def _call_name(call: object) -> str:
    function = call.get("function") if isinstance(call, dict) else None
    return str(function.get("name", "?")) if isinstance(function, dict) else "?"
