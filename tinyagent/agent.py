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
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from .errors import TinyAgentError
from .events import Event, Final, LlmCall, Observation, Parsed, Stopped, ToolCall
from .llm_client import LlmClient
from .parser import ParsedStep, parse_step
from .prompts import build_system_prompt, check_language, detect_language
from .registry import ToolRegistry
from .safe_text import replace_lone_surrogates
from .tolerant_parser import format_reminder, parse_tolerant
from .trace import Trace

MAX_STEPS = 10
STOP_SEQUENCES = ("Observation:",)
# Ten times the longest Observation of any lesson (about 400 characters), and small enough that ten
# rounds of it still fit a 32k-token context in Chinese (about one token per character).
MAX_OBSERVATION_CHARS = 4000
# Lesson 11: how many unreadable replies a tolerant agent answers with the format before it gives up.
MAX_FORMAT_ERRORS = 2

GIVE_UP = {
    "en": "Sorry, I could not finish this within {n} steps. Please rephrase your request or add "
    "details, and I will try again.",
    "zh": "抱歉，这个问题我走了 {n} 步仍没有处理完。请换个说法或补充一些信息，我再试一次。",
}
MODEL_UNAVAILABLE = {
    "en": "Sorry, I cannot reach the language model right now. Please try again in a moment.",
    "zh": "抱歉，现在连不上大模型，请稍后再试。",
}
CUT_OFF = {
    "en": "Sorry, my reply was cut off before it was complete. Please ask again, perhaps more briefly.",
    "zh": "抱歉，我的回复被截断了，没能说完。请再问一次，或者把问题说得简短一些。",
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
    #              "native_tool_calls", "format_errors" (see events.Stopped)
    trace: Trace
    messages: list[dict]

    @property
    def ok(self) -> bool:
        """True when the model produced an answer (with or without the Final Answer format)."""
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
        self.tolerant = bool(tolerant)
        if not isinstance(max_format_errors, int) or isinstance(max_format_errors, bool) or max_format_errors < 0:
            raise ValueError(f"max_format_errors must be a whole number >= 0, got {max_format_errors!r}")
        self.max_format_errors = max_format_errors

    def parse(self, reply) -> ParsedStep:
        """Read one reply: strictly (lesson 05), or tolerantly with the tool names and finish_reason."""
        if self.tolerant:
            return parse_tolerant(reply.text, self.tools.names, reply.finish_reason)
        return parse_step(reply.text)

    def language_for(self, question: str) -> str:
        return self.lang or detect_language(question)

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
        prompt = agent.system_prompt or build_system_prompt(agent.tools, self.lang)
        self.messages: list[dict] = [{"role": "system", "content": prompt}]
        self.messages.extend(dict(m) for m in history)
        self.messages.append({"role": "user", "content": question})
        self.trace = Trace(lang=self.lang)
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

    def finish(self) -> AgentResult:
        for _ in self:
            pass
        end = self.trace.end
        return AgentResult(answer=end.answer, reason=end.reason, trace=self.trace, messages=self.messages)

    # -- the loop ------------------------------------------------------------------------------
    def _loop(self) -> Iterator[Event]:
        agent, lang = self.agent, self.lang
        format_errors = 0
        for step in range(1, agent.max_steps + 1):
            # 1. Think: the model reads the whole conversation and writes its next step.
            sent = tuple(dict(m) for m in self.messages)
            try:
                reply = agent.llm.chat(self.messages, stop=agent.stop, max_tokens=agent.max_tokens)
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

            if reply.finish_reason == "length":
                # A reply cut at max_tokens may hold half an Action Input: never run it.
                yield Stopped(step, "length", CUT_OFF[lang], detail=f"cut off after: {reply.text[-200:]!r}")
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
            result = agent.tools.run(action)
            text, original_chars = cut_observation(result.text, agent.max_observation_chars)
            self.messages.append({"role": "user", "content": f"Observation: {text}"})
            yield Observation(step, text, result.error, original_chars)

        yield Stopped(agent.max_steps, "max_steps", GIVE_UP[lang].format(n=agent.max_steps))


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
