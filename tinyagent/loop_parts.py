"""The parts of lesson 06's loop, and what a part must do to take the place of one.

The loop (agent.py, `AgentRun._loop`) is the same for every agent of the course; what changes from lesson to
lesson is the part it consults at each move of its diagram:

    part         the question it answers             lesson 06 (this module)   later lessons
    request      what is sent                        WholeConversation         NativeRequest (09), BudgetedRequest (13)
    send         how it is sent                      PlainSend                 StreamedSend (14)
    read         how a reply is read                 StrictRead                NativeRead (09), TolerantRead (11)
    act          how the actions are run             RunInTurn                 ParallelAct (09), GatedAct (15)
    stop_rules   when to stop                        StepCap + CutOff          stop_rules.py (10)

`ReActAgent`'s keywords pick them (`stream=True` picks StreamedSend, `confirm=gate` wraps the act in a
GatedAct, ...) and `ReActAgent(..., parts={"send": MySend()})` puts in one of your own; `agent.parts` shows what
an agent uses. What each kind of part is, as the loop calls it:

    request.build(run, closing=False) -> (messages, options)
        The messages to send and the keyword options of the call (stop, max_tokens, tools, ...). `closing` is
        the stop rules' closing call for the best answer (lesson 10).
    send(run, step, messages, **options) -> a generator of events that returns the ChatResult
        The events it yields come before the round's LlmCall (a streamed reply's ReplyDelta pieces).
    read(run, step, reply) -> Reading; read.parse(text, finish_reason, tools) -> ParsedStep
        What the reply asked for (see `Reading`); `parse` reads a text alone (the closing call's reply).
    act(run, step, actions, ready) -> a generator of events that returns the results, in order
        It announces each call (a ToolCall event) before anything runs. `ready[i]`, when not None, is a result
        that stands in for action i (a stop rule's warning, arguments that could not be read): it does not run.
        `act.perform(run, actions, ready)` runs them; a part that only adds events (the gate) wraps another.

A part with state of its own for one run (a count, a cache) has `fresh()`, which the run calls at its start,
as the stop rules do: two runs of one agent never share what a part remembers.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator, Mapping
from typing import Any

from .errors import TinyAgentError
from .events import Event, Final, Observation, Parsed, Stopped, ToolCall
from .llm_client import ChatResult
from .parser import ParsedStep, parse_step
from .records import field, record, replace
from .registry import ToolResult, error_observation
from .tools import Action

MODEL_UNAVAILABLE = {
    "en": "Sorry, I cannot reach the language model right now. Please try again in a moment.",
    "zh": "抱歉，现在连不上大模型，请稍后再试。",
}
EMPTY_REPLY = {
    "en": "Sorry, I did not manage to put an answer together. Please ask again.",
    "zh": "抱歉，我没能组织好答复，请再问一次。",
}


# -- what a reply asked for ------------------------------------------------------------------------------------
@record(frozen=False)
class Reading:
    """One reply as the loop acts on it.

    message: the reply as it joins the conversation (an assistant message)
    parsed:  the Parsed events: one for a text step, one per call of a native reply; the stop rules judge
             each before anything runs
    actions: the tools to run, in order (none when the reply is an answer)
    ready:   per action, a result that stands in for it without running it, or None
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
        """Messages for the calls a stop left unrun (none in text ReAct: nothing answers an Action line)."""
        return []


def text_reading(step: int, reply: ChatResult, parsed: ParsedStep, lang: str) -> Reading:
    """A text ReAct reply, read into `parsed`: an Action to run, a Final Answer, or the fallback."""
    action = parsed.action
    event = Parsed(step, parsed.thought, action.tool_name if action else None,
                   action.tool_input if action else None, parsed.final_answer, parsed.rule)
    reading = Reading({"role": "assistant", "content": reply.text}, [event])
    if parsed.final_answer is not None:
        reading.ending = Final(step, parsed.final_answer, "final_answer")
    elif action is not None:
        reading.actions, reading.ready = [action], [None]
    elif reply.tool_calls:
        # The API's tool_calls field, not text: this loop reads only "Action:" lines, and any prose beside the
        # calls is the model's preamble to them, not its answer.
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
    if limit is None or len(text) <= limit:
        return text, None
    note = f"[cut: the tool returned {len(text)} characters; this is the first {limit}]"
    return f"{text[:limit]}\n{note}", len(text)


# -- lesson 06's parts -------------------------------------------------------------------------------------------
class WholeConversation:
    """What is sent: the whole message list, with the agent's stop sequences and reply cap."""

    def build(self, run: Any, closing: bool = False) -> tuple[list[dict], dict]:
        return run.messages, {"stop": run.agent.stop, "max_tokens": run.agent.max_tokens}

    def fit_args(self, run: Any) -> dict:
        """What a context budget (lesson 13) needs to offer fewer tools: the prompt rebuilt for them, unless
        the prompt is the caller's own."""
        if run.agent.system_prompt is not None:
            return {"system_prompt": None}
        return {"system_prompt": lambda tools: run.agent.prompt_for(run.lang, tools)}

    def with_fit(self, options: dict, fitted: Any) -> dict:
        return options

    def __repr__(self) -> str:
        return "WholeConversation()"


class PlainSend:
    """How it is sent: one request, one whole reply (`LlmClient.chat`)."""

    def __call__(self, run: Any, step: int, messages: list[dict], **options: Any
                 ) -> Generator[Event, None, ChatResult]:
        return run.agent.llm.chat(messages, **options)
        yield  # a generator like every send (lesson 14's yields the reply's pieces); this one yields nothing

    def __repr__(self) -> str:
        return "PlainSend()"


class StrictRead:
    """How a reply is read: lesson 05's line scanner."""

    def __call__(self, run: Any, step: int, reply: ChatResult) -> Reading:
        return text_reading(step, reply, self.parse(reply.text, reply.finish_reason, run.agent.tools), run.lang)

    def parse(self, text: str, finish_reason: str | None = None, tools: Any = None) -> ParsedStep:
        return parse_step(text)

    def __repr__(self) -> str:
        return "StrictRead()"


class RunInTurn:
    """How the actions are run: each call announced, then run one after the other through the stop rules
    (a ToolTimeout rule runs a tool in a thread of its own) and the registry."""

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
    """One action's result. The registry never raises; a rule that runs tools (ToolTimeout) might, and must
    not end the run."""
    try:
        return run.stop_rules.run_tool(run.agent.tools, action)
    except Exception as exc:  # noqa: BLE001 - a failure becomes the call's error result
        return ToolResult(error_observation(f"tool {action.tool_name} failed: {type(exc).__name__}: {exc}"),
                          error=True)


def stopped_on_error(step: int, exc: TinyAgentError, lang: str) -> Stopped:
    """The end of a run whose request could not be made or answered. An error may say how it ends the run
    (`stop_reason` and a polite `answer` per language: lesson 13's ContextBudgetError does); any other is the
    model being out of reach."""
    polite = getattr(exc, "answer", None) or MODEL_UNAVAILABLE
    return Stopped(step, getattr(exc, "stop_reason", "llm_error"), polite[lang], detail=str(exc))


# -- the parts of one agent ----------------------------------------------------------------------------------
@record
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
            missing = [m for m in needs if not callable(part if m == "__call__" else getattr(part, m, None))]
            if missing:
                raise TypeError(f"the {name} part {part!r} needs {' and '.join(_SIGNATURES[name][m] for m in missing)}")

    def fresh(self) -> LoopParts:
        """The same parts for a new run: each that remembers something, with nothing remembered."""
        # Once a run, so kept cheap: the parts were checked when these were made, and are not checked again.
        new = object.__new__(LoopParts)
        new.__dict__.update({name: _fresh(part) for name, part in self.__dict__.items()})
        return new

    def with_parts(self, parts: Mapping[str, Any] | None) -> LoopParts:
        """These parts with some replaced: `{"send": MySend()}`. An unknown name is an error."""
        if not parts:
            return self
        unknown = sorted(set(parts) - set(_NEEDS))
        if unknown:
            raise TypeError(f"unknown loop part(s) {', '.join(unknown)}: the parts are {', '.join(_NEEDS)}")
        return replace(self, **parts)


_NEEDS = {
    "request": ("build",),
    "send": ("__call__",),
    "read": ("__call__", "parse"),
    "act": ("__call__", "perform"),
    "stop_rules": ("before_call", "after_reply", "run_tool", "fresh"),
}
_SIGNATURES = {
    "request": {"build": "build(run, closing=False) -> (messages, options)"},
    "send": {"__call__": "to be called as send(run, step, messages, **options)"},
    "read": {"__call__": "to be called as read(run, step, reply)", "parse": "parse(text, finish_reason, tools)"},
    "act": {"__call__": "to be called as act(run, step, actions, ready)", "perform": "perform(run, actions, ready)"},
    "stop_rules": {m: f"{m}()" for m in _NEEDS["stop_rules"]},
}


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
