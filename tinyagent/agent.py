"""`ReActAgent`: the loop. Call the model, parse, act, observe, repeat.

The conversation is a message list that grows by two messages a round:

    system     the ReAct prompt with the tool list
    user       the question
    assistant  Thought / Action / Action Input        <- round 1
    user       Observation: <what the tool returned>
    assistant  Thought / Action / Action Input        <- round 2
    ...
    assistant  Thought / Final Answer                 <- the end

`steps()` runs the loop one event at a time (a generator); `run()` drains it. The loop never lets
an exception out for things a model or a tool can get wrong: those end as a `Stopped` event with a
reason, and the user gets a polite message. What a tool returns is cut to `max_observation_chars`
before the model reads it, so one huge result cannot fill the context (the trace says when).

The loop is lesson 06's diagram over five parts (loop_parts.py): what is sent, how it is sent, how a reply
is read, how the actions are run, and when to stop. Lesson 06's parts are the plain ones; each later lesson
adds a part in its own module, and a keyword of `ReActAgent` picks it (`tolerant=True` the tolerant read of
lesson 11, `context_budget=` the budgeted request of 13, `stream=True` the streamed send of 14, `confirm=` the
gated act of 15, `stop_rules=` the rules of 10). The loop itself never changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from itertools import count
from typing import TYPE_CHECKING, Any

from .arguments import check_whole
from .errors import ContextBudgetError, TinyAgentError
from .events import Event, LlmCall
from .llm_client import ChatResult, LlmClient
from .loop_parts import (
    EMPTY_REPLY,
    MODEL_UNAVAILABLE,
    LoopParts,
    PlainSend,
    RunInTurn,
    StrictRead,
    WholeConversation,
    cut_observation,
    stopped_on_error,
)
from .parser import ParsedStep
from .prompts import build_system_prompt, check_language, detect_language
from .records import record
from .registry import ToolRegistry, ToolResult
from .safe_text import replace_lone_surrogates
from .stop_rules import Stop, StopRules, end_on_stop
from .trace import Trace

if TYPE_CHECKING:  # lessons 13's and 15's modules load only when a budget or a gate is given
    from .confirmation import ConfirmationGate
    from .context_budget import ContextBudget, FittedRequest

__all__ = [
    "CONTEXT_FULL",
    "EMPTY_REPLY",
    "MAX_OBSERVATION_CHARS",
    "MAX_STEPS",
    "MODEL_UNAVAILABLE",
    "STOP_SEQUENCES",
    "AgentResult",
    "AgentRun",
    "ReActAgent",
    "cut_observation",
]

MAX_STEPS = 10
STOP_SEQUENCES = ("Observation:",)
# Ten times the longest Observation of any lesson (about 400 characters), and small enough that ten
# rounds of it still fit a 32k-token context in Chinese (about one token per character).
MAX_OBSERVATION_CHARS = 4000
# Lesson 11: how many unreadable replies a tolerant agent answers with the format before it gives up.
MAX_FORMAT_ERRORS = 2
CONTEXT_FULL = ContextBudgetError.answer  # lesson 13: the conversation no longer fits the context budget


@record
class AgentResult:
    """The outcome of `run()`: the answer the user gets, why the run ended, and the whole trace."""

    answer: str
    reason: str  # "final_answer", "fallback", "max_steps", "llm_error", "length", "empty_reply",
    #              "native_tool_calls", "format_errors" (see events.Stopped), or a stop rule's
    #              ("no_progress", ...)
    trace: Trace
    messages: list[dict]

    @property
    def ok(self) -> bool:
        """True when the model produced an answer (with or without the Final Answer format) on its own.
        A run a stop rule ended may still hold the model's best answer: its trace then ends with a
        `Final` whose reason is the rule's, and `ok` is False."""
        return self.reason in ("final_answer", "fallback")


class ReActAgent:
    """A text-protocol ReAct agent.

    llm:        an LlmClient (default: the configured model, see `load_settings`)
    tools:      the ToolRegistry whose tools the model may call
    max_steps:  how many rounds before giving up politely
    lang:       "en" or "zh" for the prompt and messages; None picks it from each question
    stop:       stop sequences sent with every request, so the model cannot write the Observation
    max_tokens: a cap on each reply, passed to the server
    max_observation_chars: a cap on each tool result the model reads (None: no cap); a longer one is
                cut, the model is told so, and the Observation event records the full length
    tolerant:   read replies with `parse_tolerant` (lesson 11) instead of the strict `parse_step`: sloppy
                keys are forgiven, an Action beside a Final Answer runs, and a reply that looks like a
                botched step is answered with an Observation giving the exact format (`TolerantRead`)
    max_format_errors: with `tolerant`, how many such replies are answered before the run stops
                ("format_errors"), so a model that never complies still ends
    stop_rules: None for lesson 06's loop (the step cap, `length`); or a list of rules from
                stop_rules.py (lesson 10), which also brings the closing call for the best answer
    context_budget: None sends the whole conversation; a `ContextBudget` (lesson 13) fits every request
                to its tokens: only the relevant tools, old Observations folded, old turns shortened. The
                live message list stays whole; a request that cannot fit ends the run ("context_budget")
    stream:     read each reply as it is typed (lesson 14, `StreamedSend`): every round starts with ReplyDelta
                events, one per piece of text, and then yields the same events as without streaming
    confirm:    a ConfirmationGate (lesson 15, confirmation.py): the tools it guards run only after a
                person says yes; the run pauses at an ApprovalRequested event until then (`GatedAct`)
    parts:      loop parts of your own in place of the ones the keywords pick, by name: {"send": MySend()}
                (loop_parts.py says what each part must do). `agent.parts` shows the parts in use.
    """

    def __init__(
        self,
        llm: LlmClient | None = None,
        tools: ToolRegistry | None = None,
        *,
        max_steps: int = MAX_STEPS,
        lang: str | None = None,
        system_prompt: str | None = None,
        stop: tuple[str, ...] | list[str] | None = STOP_SEQUENCES,
        max_tokens: int | None = None,
        max_observation_chars: int | None = MAX_OBSERVATION_CHARS,
        tolerant: bool = False,
        max_format_errors: int = MAX_FORMAT_ERRORS,
        stop_rules: StopRules | Iterable | None = None,
        context_budget: ContextBudget | None = None,
        stream: bool = False,
        confirm: ConfirmationGate | None = None,
        parts: Mapping[str, Any] | None = None,
    ):
        if tools is None or not isinstance(tools, ToolRegistry):
            raise TypeError(f"{type(self).__name__} needs tools=ToolRegistry(...) with the tools the model may call")
        check_whole("max_steps", max_steps)
        if max_observation_chars is not None:
            check_whole("max_observation_chars", max_observation_chars, also="or None")
        check_whole("max_format_errors", max_format_errors, least=0)
        self.llm = llm if llm is not None else LlmClient.from_settings()
        self.tools = tools
        self.max_steps = max_steps
        self.lang = check_language(lang) if lang is not None else None
        self.system_prompt = system_prompt
        self.stop = tuple(stop) if stop else ()
        self.max_tokens = max_tokens
        self.max_observation_chars = max_observation_chars
        self.tolerant = bool(tolerant)
        self.max_format_errors = max_format_errors
        self.context_budget = context_budget
        # Lesson 14: the client must be able to stream (LlmClient.stream); a stand-in with only chat() cannot.
        if stream and not callable(getattr(self.llm, "stream", None)):
            raise TypeError(f"stream=True needs a client with a stream() method, such as LlmClient; got {self.llm!r}")
        self.stream = bool(stream)
        if confirm is not None:
            from .confirmation import ConfirmationGate

            if not isinstance(confirm, ConfirmationGate):
                raise TypeError(f"confirm must be a ConfirmationGate, got {type(confirm).__name__}")
        self.confirm = confirm
        self.parts = self.pick_parts(StopRules.for_agent(stop_rules, max_steps)).with_parts(parts)

    # -- which part each keyword picks ----------------------------------------------------------------------
    def protocol_parts(self) -> tuple[Any, Any, Any]:
        """The request, read and act of the text protocol (FunctionCallingAgent has the native ones)."""
        if self.tolerant:
            from .tolerant_parser import TolerantRead

            return WholeConversation(), TolerantRead(self.max_format_errors), RunInTurn()
        return WholeConversation(), StrictRead(), RunInTurn()

    def pick_parts(self, stop_rules: StopRules) -> LoopParts:
        """The protocol's parts, each wrapped or replaced by the part a keyword asks for."""
        request, read, act = self.protocol_parts()
        send = PlainSend()
        if self.context_budget is not None:
            from .context_budget import BudgetedRequest

            request = BudgetedRequest(self.context_budget, request)
        if self.stream:
            from .streaming import StreamedSend

            send = StreamedSend()
        if self.confirm is not None:
            from .confirmation import GatedAct

            act = GatedAct(self.confirm, act)
        return LoopParts(request, send, read, act, stop_rules)

    @property
    def stop_rules(self) -> StopRules:
        return self.parts.stop_rules

    # -- what the parts and the runs ask of the agent --------------------------------------------------------
    def parse(self, reply: ChatResult) -> ParsedStep:
        """Read one reply as the agent's read part does (strictly, lesson 05, or tolerantly, lesson 11)."""
        return self.parse_text(reply.text, reply.finish_reason)

    def parse_text(self, text: str, finish_reason: str | None = None) -> ParsedStep:
        """`parse` for a text alone (the stop rules' closing call reads its reply this way too)."""
        return self.parts.read.parse(text, finish_reason, self.tools)

    def language_for(self, question: str) -> str:
        return self.lang or detect_language(question)

    def prompt_for(self, lang: str, tools: ToolRegistry | None = None) -> str:
        """The system prompt of a run in `lang`: the one given, else the ReAct prompt with the tool list
        (of `tools`, when a context budget offers only some of them; lesson 13)."""
        return self.system_prompt or build_system_prompt(tools if tools is not None else self.tools, lang)

    def start(self, question: str, history: list[dict] | None = None) -> AgentRun:
        """Begin a run without executing anything yet; iterate it (or call `.advance()`) to step."""
        return AgentRun(self, question, history)

    def steps(self, question: str, history: list[dict] | None = None) -> Iterator[Event]:
        """The loop as a generator of events (see events.py)."""
        return iter(self.start(question, history))

    def run(self, question: str, history: list[dict] | None = None) -> AgentResult:
        """Run to the end and return the answer with its trace."""
        return self.start(question, history).finish()


class AgentRun:
    """One run of the loop, paused between events.

    `messages` is the live message list; `trace` grows as events are produced. Iterating yields
    the events; a step-through debugger calls `advance()` and looks at `messages` in between.
    `parts` are this run's own copies of the agent's loop parts (`stop_rules` among them), so nothing
    carries over from an earlier run; `fits` is what a context budget sent, request by request (lesson 13).
    """

    def __init__(self, agent: ReActAgent, question: str, history: list[dict] | None = None):
        if not isinstance(question, str) or not question.strip():
            raise ValueError("the question must be a non-empty string")
        # Typed or pasted text can hold a lone surrogate (a file name, a broken clipboard): repaired
        # here, the whole run can be printed, saved and sent.
        question, history = replace_lone_surrogates(question), replace_lone_surrogates(list(history or ()))
        self.agent = agent
        self.question = question
        self.lang = agent.language_for(question)
        self.messages: list[dict] = [{"role": "system", "content": agent.prompt_for(self.lang)}]
        self.messages.extend(dict(m) for m in history)
        self.messages.append({"role": "user", "content": question})
        self.request_index = len(self.messages) - 1  # where this turn starts (lesson 13's budget)
        self.fits: list[FittedRequest] = []
        self.trace = Trace(lang=self.lang)
        self.parts = agent.parts.fresh()
        self.stop_rules = self.parts.stop_rules
        self._events = self._loop()

    def __iter__(self) -> AgentRun:
        return self

    def __next__(self) -> Event:
        event = next(self._events)
        self.trace.append(event)
        return event

    def advance(self) -> Event | None:
        """Produce the next event, or None if the run has ended."""
        return next(self, None)

    @property
    def done(self) -> bool:
        return self.trace.end is not None

    def close(self) -> None:
        """Abandon the run where it is paused: a request waiting for a person's yes is cancelled, and nothing
        of the run happens later."""
        self._events.close()

    def finish(self) -> AgentResult:
        for _ in self:
            pass
        end = self.trace.end
        return AgentResult(answer=end.answer, reason=end.reason, trace=self.trace, messages=self.messages)

    # -- the loop ------------------------------------------------------------------------------
    def _loop(self) -> Iterator[Event]:
        parts, rules = self.parts, self.stop_rules
        for step in count(1):
            # 0. May the run go on? The stop rules say (lesson 06's: the step cap).
            if stop := rules.before_call(self.trace):
                yield from end_on_stop(self, stop, step - 1)
                return

            # 1. Think: the model reads the conversation and writes its next step.
            try:
                messages, options = parts.request.build(self)
                sent = tuple(map(dict, messages))  # a copy: the list grows after this call
                reply = yield from parts.send(self, step, messages, **options)
            except TinyAgentError as exc:
                yield stopped_on_error(step, exc, self.lang)
                return
            yield LlmCall(step, sent, reply.text, reply.finish_reason, reply.usage, reply.latency_s,
                          reply.model, reply.client_cut)

            # 2. Read what it wrote. The reply joins the conversation first, so a debugger paused
            # here sees it in the list. A rule may end the run on what was read: `length` (a reply
            # cut at max_tokens may hold half an Action Input: never run it).
            reading = parts.read(self, step, reply)
            self.messages.append(reading.message)
            warnings = []
            for parsed in reading.parsed:
                yield parsed
                verdict = rules.after_reply(self.trace)
                if isinstance(verdict, Stop):  # (any call of the reply is answered as not run)
                    self.messages.extend(reading.not_run(verdict.reason))
                    yield from end_on_stop(self, verdict, step)
                    return
                warnings.append(verdict)
            if reading.ending is not None:  # a Final Answer, the fallback, or why there is neither
                yield reading.ending
                return

            # 3. Act: run the tools it asked for (a rule's warning stands in for a result: that tool
            # does not run). 4. Observe: each result goes back to the model as the next message.
            ready = [ToolResult(w.text, error=True) if w else done for w, done in zip(warnings, reading.ready)]
            results = yield from parts.act(self, step, reading.actions, ready)
            for message, observation in reading.observe(step, results, self.agent.max_observation_chars):
                self.messages.append(message)
                yield observation

