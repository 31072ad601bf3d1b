"""`ReActAgent`: the loop. Call the model, parse, act, observe, repeat.

The conversation is a message list that grows by two messages a round:

    system     the ReAct prompt with the tool list
    user       the question
    assistant  Thought / Action / Action Input        <- round 1
    user       Observation: <what the tool returned>
    assistant  Thought / Action / Action Input        <- round 2
    ...
    assistant  Thought / Final Answer                 <- the end

`steps()` runs the loop one event at a time (an iterator); `run()` drains it. The loop never lets
an exception out for things a model or a tool can get wrong: those end as a `Stopped` event with a
reason, and the user gets a polite message. What a tool returns is cut to `max_observation_chars`
before the model reads it, so one huge result cannot fill the context (the trace says when).

The loop is lesson 06's diagram over five parts (loop_parts.py): what is sent, how it is sent, how a reply
is read, how the actions are run, and when to stop. Lesson 06's parts are the plain ones; a later lesson adds a
part in its own module, and an agent takes it with `parts=[...]`. The loop itself never changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import count
from typing import Any

from tinyagent.chat_result import stop_sequences
from tinyagent.errors import TinyAgentError
from tinyagent.events import Event, LlmCall
from tinyagent.llm_client import ChatResult, LlmClient
from tinyagent.loop_parts import (
    EMPTY_REPLY,
    MODEL_UNAVAILABLE,
    LoopParts,
    PlainSend,
    RunInTurn,
    StepLimit,
    Stop,
    StrictRead,
    WholeConversation,
    cut_observation,
    stopped_on_error,
)
from tinyagent.number_checks import check_whole
from tinyagent.parser import ParsedStep
from tinyagent.prompts import build_system_prompt, check_language, detect_language
from tinyagent.registry import ToolRegistry
from tinyagent.safe_text import replace_lone_surrogates
from tinyagent.trace import Trace, kept_with_ctrl_c

__all__ = [
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
# About four times the longest Observation the lessons print (lesson 16's cited search, 1,049 characters), and
# small enough that seven rounds of it still fit a 32k-token context in Chinese (about one token per character).
MAX_OBSERVATION_CHARS = 4000


@dataclass(frozen=True)
class AgentResult:
    """The outcome of `run()`: the answer the user gets, why the run ended, and the whole trace."""

    answer: str
    reason: str  # "final_answer", "fallback", "max_steps", "llm_error", "length", "empty_reply",
    #              "native_tool_calls" (see events.Stopped), or the reason of a later lesson's part
    trace: Trace
    messages: list[dict]

    @property
    def ok(self) -> bool:
        """True when the model produced an answer (with or without the Final Answer format) on its own.
        A run a stop part ended may still hold an answer (a later lesson's closing call): its trace then ends
        with a `Final` whose reason is the stop's, and `ok` is False."""
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
    parts:      parts of later lessons (or your own) mounted on lesson 06's, in order: each fills the slot it
                names, or wraps what holds it (loop_parts.py says what each slot's part must do).
                `agent.parts` shows the parts in use.
    """

    protocol = "text"  # how it talks to the model; a part made for another protocol is refused (loop_parts.py)

    def __init__(
        self,
        llm: LlmClient | None = None,
        tools: ToolRegistry | None = None,
        *,
        max_steps: int = MAX_STEPS,
        lang: str | None = None,
        system_prompt: str | None = None,
        stop: str | tuple[str, ...] | list[str] | None = STOP_SEQUENCES,
        max_tokens: int | None = None,
        max_observation_chars: int | None = MAX_OBSERVATION_CHARS,
        parts: Iterable[Any] = (),
    ):
        if not isinstance(tools, ToolRegistry):
            raise TypeError(f"{type(self).__name__} needs tools=ToolRegistry(...) with the tools the model may call")
        check_whole("max_steps", max_steps)
        if max_observation_chars is not None:
            check_whole("max_observation_chars", max_observation_chars, also="or None")
        self.llm = llm if llm is not None else LlmClient.from_settings()
        self.tools = tools
        self.max_steps = max_steps
        self.lang = check_language(lang) if lang is not None else None
        self.system_prompt = system_prompt
        self.stop = stop_sequences(stop)
        self.max_tokens = max_tokens
        self.max_observation_chars = max_observation_chars
        self.parts = self.default_parts().mount(parts, protocol=self.protocol)

    def default_parts(self) -> LoopParts:
        """Lesson 06's parts: the whole conversation, one plain request, lesson 05's line scanner, the actions in
        turn, and the step cap."""
        return LoopParts(WholeConversation(), PlainSend(), StrictRead(), RunInTurn(), StepLimit(self.max_steps))

    @property
    def stop_rules(self) -> Any:
        return self.parts.stop_rules

    # -- what the parts and the runs ask of the agent --------------------------------------------------------
    def parse(self, reply: ChatResult) -> ParsedStep:
        """Read one reply as the agent's read part does (lesson 05's line scanner, unless a part reads otherwise)."""
        return self.parse_text(reply.text, reply.finish_reason)

    def parse_text(self, text: str, finish_reason: str | None = None) -> ParsedStep:
        """`parse` for a text alone."""
        return self.parts.read.parse(text, finish_reason, self.tools)

    def language_for(self, question: str) -> str:
        return self.lang or detect_language(question)

    def prompt_for(self, lang: str, tools: ToolRegistry | None = None) -> str:
        """The system prompt of a run in `lang`: the one given, else the ReAct prompt with the tool list (of
        `tools`, when a part offers only some of them)."""
        return self.system_prompt or build_system_prompt(tools if tools is not None else self.tools, lang)

    def start(self, question: str, history: list[dict] | None = None) -> AgentRun:
        """Begin a run without executing anything yet; iterate it (or call `.advance()`) to step."""
        return AgentRun(self, question, history)

    def steps(self, question: str, history: list[dict] | None = None) -> Iterator[Event]:
        """The loop as an iterator of events (see events.py)."""
        return iter(self.start(question, history))

    def run(self, question: str, history: list[dict] | None = None) -> AgentResult:
        """Run to the end and return the answer with its trace (a Ctrl-C in the middle carries the trace so far, as
        its `trace`)."""
        return self.start(question, history).finish()


class AgentRun:
    """One run of the loop, paused between events.

    `messages` is the live message list; `trace` grows as events are produced. Iterating yields
    the events; a step-through debugger calls `advance()` and looks at `messages` in between.
    `parts` are the agent's loop parts made fresh for this run (`LoopParts.fresh`: a part that remembers
    something is copied with nothing remembered), so nothing carries over from an earlier run.
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
        self.trace = Trace(lang=self.lang)
        self.parts = agent.parts.fresh()
        self.stop_rules = self.parts.stop_rules
        self._events = self.loop()

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
        with kept_with_ctrl_c(self.trace):
            for _ in self:
                pass
        end = self.trace.end
        return AgentResult(answer=end.answer, reason=end.reason, trace=self.trace, messages=self.messages)

    # -- the loop ------------------------------------------------------------------------------
    def loop(self) -> Iterator[Event]:
        """The loop itself, as lesson 06 draws it: a generator of this run's events. Iterate the run (or call
        `advance()`), which also keeps the trace, rather than this."""
        parts, rules = self.parts, self.stop_rules
        for step in count(1):
            # 0. May the run go on? The stop rules say (lesson 06's: the step cap).
            if stop := rules.before_call(self.trace):
                yield from rules.end(self, stop, step - 1)
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
            stand_ins = []  # per action: a result the stop part puts in its place (it does not run), or None
            for parsed in reading.parsed:
                yield parsed
                verdict = rules.after_reply(self.trace)
                if isinstance(verdict, Stop):  # (any call of the reply is answered as not run)
                    self.messages.extend(reading.not_run(verdict.reason))
                    yield from rules.end(self, verdict, step)
                    return
                stand_ins.append(verdict)
            if reading.ending is not None:  # a Final Answer, the fallback, or why there is neither
                yield reading.ending
                return

            # 3. Act: run the tools it asked for. 4. Observe: each result goes back to the model as the next message.
            ready = [stand_in or done for stand_in, done in zip(stand_ins, reading.ready)]
            results = yield from parts.act(self, step, reading.actions, ready)
            for message, observation in reading.observe(step, results, self.agent.max_observation_chars):
                self.messages.append(message)
                yield observation

