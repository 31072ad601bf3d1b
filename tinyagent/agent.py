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
When the loop ends is up to its stop rules (stop_rules.py, lesson 10): by default lesson 06's step cap
and `length`; `stop_rules=[...]` adds budgets, timeouts, repeat and no-progress detection, and a last
call for the best answer from what is known.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass
from itertools import count
from typing import TYPE_CHECKING

from .errors import ContextBudgetError, TinyAgentError
from .events import Event, Final, LlmCall, Observation, Parsed, ReplyDelta, Stopped, ToolCall
from .llm_client import ChatResult, LlmClient
from .parser import ParsedStep, parse_step
from .prompts import build_system_prompt, check_language, detect_language
from .registry import ToolRegistry, ToolResult
from .safe_text import replace_lone_surrogates
from .stop_rules import Stop, StopRules, end_on_stop
from .tolerant_parser import format_reminder, parse_tolerant
from .trace import Trace

if TYPE_CHECKING:  # lessons 13's and 15's modules load only when a budget or a gate is given
    from .confirmation import ConfirmationGate
    from .context_budget import ContextBudget, FittedRequest

MAX_STEPS = 10
STOP_SEQUENCES = ("Observation:",)
# Ten times the longest Observation of any lesson (about 400 characters), and small enough that ten
# rounds of it still fit a 32k-token context in Chinese (about one token per character).
MAX_OBSERVATION_CHARS = 4000
# Lesson 11: how many unreadable replies a tolerant agent answers with the format before it gives up.
MAX_FORMAT_ERRORS = 2

MODEL_UNAVAILABLE = {
    "en": "Sorry, I cannot reach the language model right now. Please try again in a moment.",
    "zh": "抱歉，现在连不上大模型，请稍后再试。",
}
CONTEXT_FULL = {  # lesson 13: the conversation no longer fits the context budget
    "en": "Sorry, this conversation has grown too long for me to follow. Please start a new one.",
    "zh": "抱歉，这段对话太长了，我已经跟不上了。请开始一段新的对话。",
}
EMPTY_REPLY = {
    "en": "Sorry, I did not manage to put an answer together. Please ask again.",
    "zh": "抱歉，我没能组织好答复，请再问一次。",
}


@dataclass(frozen=True)
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
                botched step is answered with an Observation giving the exact format
    max_format_errors: with `tolerant`, how many such replies are answered before the run stops
                ("format_errors"), so a model that never complies still ends
    stop_rules: None for lesson 06's loop (the step cap, `length`); or a list of rules from
                stop_rules.py (lesson 10), which also brings the closing call for the best answer
    context_budget: None sends the whole conversation; a `ContextBudget` (lesson 13) fits every request
                to its tokens: only the relevant tools, old Observations folded, old turns shortened. The
                live message list stays whole; a request that cannot fit ends the run ("context_budget")
    stream:     read each reply as it is typed (lesson 14): every round starts with ReplyDelta events, one
                per piece of text, and then yields the same events as without streaming
    confirm:    a ConfirmationGate (lesson 15, confirmation.py): the tools it guards run only after a
                person says yes; the run pauses at an ApprovalRequested event until then (the loop below is
                unchanged: the gate watches its events and its stop rules run the tool)
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
    ):
        if tools is None or not isinstance(tools, ToolRegistry):
            raise TypeError("ReActAgent needs tools=ToolRegistry(...) with the tools the model may call")
        if not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"max_steps must be a positive whole number, got {max_steps!r}")
        if max_observation_chars is not None and (
            not isinstance(max_observation_chars, int) or isinstance(max_observation_chars, bool)
            or max_observation_chars < 1
        ):
            raise ValueError(
                f"max_observation_chars must be a positive whole number or None, got {max_observation_chars!r}"
            )
        self.llm = llm if llm is not None else LlmClient.from_settings()
        self.tools = tools
        self.max_steps = max_steps
        self.lang = check_language(lang) if lang is not None else None
        self.system_prompt = system_prompt
        self.stop = tuple(stop) if stop else ()
        self.max_tokens = max_tokens
        self.max_observation_chars = max_observation_chars
        self.stop_rules = StopRules.for_agent(stop_rules, max_steps)
        self.tolerant = bool(tolerant)
        if not isinstance(max_format_errors, int) or isinstance(max_format_errors, bool) or max_format_errors < 0:
            raise ValueError(f"max_format_errors must be a whole number >= 0, got {max_format_errors!r}")
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

    def parse(self, reply) -> ParsedStep:
        """Read one reply: strictly (lesson 05), or tolerantly with the tool names and finish_reason."""
        return self.parse_text(reply.text, reply.finish_reason)

    def parse_text(self, text: str, finish_reason: str | None = None) -> ParsedStep:
        """`parse` for a text alone (the stop rules' closing call reads its reply this way too)."""
        if self.tolerant:
            return parse_tolerant(text, self.tools.names, finish_reason)
        return parse_step(text)

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
        self.fits: list[FittedRequest] = []  # what the context budget sent, request by request
        self.trace = Trace(lang=self.lang)
        self.stop_rules = agent.stop_rules.fresh()  # this run's own copies: nothing left from earlier runs
        self._events = self._loop()
        # Lesson 15: with a confirmation gate, the events come through it (a guarded tool waits for a yes).
        confirm = getattr(agent, "confirm", None)
        self._watched = confirm.watch(self) if confirm is not None else self._events

    def __iter__(self) -> AgentRun:
        return self

    def __next__(self) -> Event:
        event = next(self._watched)
        self.trace.append(event)
        return event

    def advance(self) -> Event | None:
        """Produce the next event, or None if the run has ended."""
        return next(self, None)

    @property
    def done(self) -> bool:
        return self.trace.end is not None

    def closing_call_fields(self) -> dict:
        """What the stop rules' closing call sends besides the messages, `stop` and `max_tokens`: nothing
        for text ReAct (function calling, lesson 09, sends its tools again with tool_choice "none")."""
        return {}

    def request(self, closing: bool = False) -> tuple[list[dict], dict]:
        """What the next model call sends: the messages, and the fields besides `stop` and `max_tokens`.
        Without a context budget, the whole conversation. With one (lesson 13), the conversation fitted to
        it; raises ContextBudgetError when it cannot fit."""
        fields = self.closing_call_fields() if closing else {}
        budget = self.agent.context_budget
        if budget is None:
            return self.messages, fields
        # The prompt is rebuilt with the tools the budget offers, unless it is the caller's own.
        own = self.agent.system_prompt is not None
        fitted = budget.fit(self.messages, self.agent.tools, request_index=self.request_index,
                            system_prompt=None if own else lambda tools: self.agent.prompt_for(self.lang, tools))
        self.fits.append(fitted)
        return fitted.messages, fields

    def call_model(self, step: int, messages: list[dict], **options) -> Generator[Event, None, ChatResult]:
        """The model's reply to `messages`, what `request()` sends (`reply = yield from self.call_model(...)`).

        Without streaming it yields nothing and returns `llm.chat(...)`. With the agent's `stream`
        (lesson 14) the reply is read as it is typed: each piece of text is yielded first, as a
        ReplyDelta of round `step`, and the same ChatResult is returned at the end.
        """
        llm = self.agent.llm
        if not self.agent.stream:
            return llm.chat(messages, **options)
        with llm.stream(messages, **options) as stream:
            for piece in stream:
                yield ReplyDelta(step, piece, stream.elapsed())
            return stream.finish()

    def finish(self) -> AgentResult:
        for _ in self:
            pass
        end = self.trace.end
        return AgentResult(answer=end.answer, reason=end.reason, trace=self.trace, messages=self.messages)

    # -- the loop ------------------------------------------------------------------------------
    def _loop(self) -> Iterator[Event]:
        agent, lang, rules = self.agent, self.lang, self.stop_rules
        format_errors = 0
        for step in count(1):
            # 0. May the run go on? The step cap, and any budget of stop_rules (lesson 10).
            if stop := rules.before_call(self.trace):
                yield from end_on_stop(self, stop, step - 1, agent.parse_text)
                return

            # 1. Think: the model reads the whole conversation and writes its next step. (With a context
            # budget, lesson 13, it reads the conversation fitted to the budget.)
            try:
                messages, fields = self.request()
                sent = tuple(dict(m) for m in messages)
                reply = yield from self.call_model(step, messages, stop=agent.stop, max_tokens=agent.max_tokens,
                                                   **fields)
            except ContextBudgetError as exc:
                yield Stopped(step, "context_budget", CONTEXT_FULL[lang], detail=str(exc))
                return
            except TinyAgentError as exc:
                yield Stopped(step, "llm_error", MODEL_UNAVAILABLE[lang], detail=str(exc))
                return
            yield LlmCall(
                step, sent, reply.text, reply.finish_reason, reply.usage, reply.latency_s,
                reply.model, reply.client_cut,
            )

            # 2. Read what it wrote.
            # The reply joins the conversation first, so a debugger paused here sees it in the list.
            self.messages.append({"role": "assistant", "content": reply.text})
            parsed = agent.parse(reply)
            action = parsed.action
            yield Parsed(
                step, parsed.thought, action.tool_name if action else None,
                action.tool_input if action else None, parsed.final_answer, parsed.rule,
            )

            # A rule may end the run on the reply itself: `length` (a reply cut at max_tokens may hold
            # half an Action Input: never run it), or with stop_rules an action asked for again.
            verdict = rules.after_reply(self.trace)
            if isinstance(verdict, Stop):
                yield from end_on_stop(self, verdict, step, agent.parse_text)
                return
            if parsed.final_answer is not None:
                yield Final(step, parsed.final_answer, "final_answer")
                return
            if action is None and reply.tool_calls:
                # The API's tool_calls field, not text: this loop reads only "Action:" lines, and any
                # prose beside the calls is the model's preamble to them, not its answer.
                yield Stopped(step, "native_tool_calls", EMPTY_REPLY[lang], detail=_native_calls_detail(reply))
                return
            if action is None and parsed.error is not None:
                # Lesson 11: a botched step is not an answer. Tell the model the exact format instead,
                # a few times at most: a model that never complies must still end.
                format_errors += 1
                if format_errors > agent.max_format_errors:
                    yield Stopped(step, "format_errors", EMPTY_REPLY[lang], detail=f"{format_errors} "
                                  f"replies could not be read; the last: {parsed.error}")
                    return
                text = format_reminder(parsed.error, agent.tools.names, lang)
                self.messages.append({"role": "user", "content": f"Observation: {text}"})
                yield Observation(step, text, error=True, format_error=True)
                continue
            if action is None:
                # The fallback: no Action and no "Final Answer:" means the model answered in prose.
                if not reply.text.strip():
                    yield Stopped(step, "empty_reply", EMPTY_REPLY[lang], detail="the model sent an empty reply")
                else:
                    yield Final(step, reply.text.strip(), "fallback")
                return

            # 3. Act: run the tool. 4. Observe: feed its result back as the next user message.
            yield ToolCall(step, action.tool_name, action.tool_input)
            # A repeat the rules warn about does not run: the warning is its Observation. A ToolTimeout
            # rule, if any, runs the tool in a thread and stops waiting when its time is up.
            result = ToolResult(verdict.text, error=True) if verdict else rules.run_tool(agent.tools, action)
            text, original_chars = cut_observation(result.text, agent.max_observation_chars)
            self.messages.append({"role": "user", "content": f"Observation: {text}"})
            yield Observation(step, text, result.error, original_chars)


def cut_observation(text: str, limit: int | None) -> tuple[str, int | None]:
    """`text` cut to its first `limit` characters, with a line telling the model so, and the original
    length; `(text, None)` when it fits."""
    if limit is None or len(text) <= limit:
        return text, None
    note = f"[cut: the tool returned {len(text)} characters; this is the first {limit}]"
    return f"{text[:limit]}\n{note}", len(text)


def _native_calls_detail(reply) -> str:
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
