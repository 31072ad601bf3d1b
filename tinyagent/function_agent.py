"""`FunctionCallingAgent`: the same loop on the API's native protocol (lesson 09).

The tools go in the request's `tools` field (tool_specs.function_spec), not in the prompt; the model
answers with `tool_calls` instead of "Action:" lines; each result goes back as a `tool` message that
quotes its call's id. The conversation:

    system     a short prompt: who the assistant is, how to use tools (no tool list, no format)
    user       the question
    assistant  content: null, tool_calls: [queryOrder(88231), queryOrder(88232)]   <- round 1
    tool       tool_call_id: call_1, content: <queryOrder 88231's result>
    tool       tool_call_id: call_2, content: <queryOrder 88232's result>
    assistant  content: "Order 88231 ..."                                           <- the answer

A reply may hold several calls: they run at once, each in a thread of its own (`parallel=False` runs
them one after the other), and their results go back in the order of the calls, whatever finished
first. A reply with text and no calls is the answer. Nothing here raises for what a model or a tool gets
wrong: an unknown tool, arguments that are not a JSON object, a tool that fails, each becomes an error
tool message the model reads next round (tool_calls.py).

The events are `ReActAgent`'s, so a Trace prints, saves and shows the same way. A round that calls tools:

    LlmCall -> Parsed (one per call) -> ToolCall (one per call) -> Observation (one per call, in order)

`Parsed` says what was read from each call (`rule` "tool_call", or "tool_call (arguments are not a JSON
object)"), which is what lets lesson 10's stop rules watch this loop unchanged: `stop_rules=` works as in
`ReActAgent`. The rules that look at a reply (`length`, a repeated action) are asked once per call, before
any tool runs; a warned call does not run, the warning is its result; a `Stop` runs none of the reply's
calls (each gets a tool message saying so, as the API requires) and makes the closing call, with the
tools sent again and tool_choice "none". `NoProgress` counts each call's result.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from itertools import count
from typing import TYPE_CHECKING

from .agent import (
    CONTEXT_FULL,
    EMPTY_REPLY,
    MAX_OBSERVATION_CHARS,
    MAX_STEPS,
    MODEL_UNAVAILABLE,
    AgentRun,
    ReActAgent,
    cut_observation,
)
from .errors import ContextBudgetError, TinyAgentError
from .events import Event, Final, LlmCall, Observation, Parsed, Stopped, ToolCall
from .llm_client import LlmClient
from .parser import ParsedStep
from .prompts import DEFAULT_ROLE, check_language
from .registry import ToolRegistry, ToolResult, error_observation
from .stop_rules import Stop, StopRules, end_on_stop
from .tool_calls import NativeCall, assistant_message, read_tool_calls, tool_message
from .tool_specs import function_specs
from .tools import Action

if TYPE_CHECKING:  # lesson 15's module loads only when a gate is given (ReActAgent checks it)
    from .confirmation import ConfirmationGate

# What a Parsed event's `rule` says about a native call.
TOOL_CALL = "tool_call"
UNREADABLE_ARGUMENTS = "tool_call (arguments are not a JSON object)"
# More calls than this in one reply wait for a free thread.
MAX_PARALLEL = 8

# The whole prompt: the tools and their schemas travel in `tools`, and there is no text format to teach.
_TEMPLATE = {
    "en": "{role}\nHelp the customer step by step with the tools you are given. Call a tool whenever you "
    "need a fact; call several at once when they do not depend on each other. Answer only from what the "
    "tools returned, never invent a result, and reply in the customer's language.",
    "zh": "{role}\n请用提供给你的工具一步步解决用户的问题。需要事实就调用工具；互不依赖的调用可以一次发出多个。"
    "只根据工具返回的结果回答，不要编造结果，用用户的语言回复。",
}
NOT_RUN = "not run: the run stopped ({reason}) before this call"


def build_function_prompt(lang: str = "en", role: str | None = None) -> str:
    """The system prompt of function calling in `lang`: the role and how to use the tools, nothing more."""
    return _TEMPLATE[check_language(lang)].format(role=role or DEFAULT_ROLE[lang])


class FunctionCallingAgent(ReActAgent):
    """A ReAct loop on native function calling.

    llm, tools, max_steps, lang, system_prompt, max_tokens, max_observation_chars, stop_rules,
    context_budget: as for `ReActAgent` (with a budget, lesson 13, the request's `tools` hold only the tools
                it offers; there is no `stop`: no text format to cut, and no `tolerant`: nothing to parse)
    parallel:   run the calls of one reply at once, in threads (True), or one after the other (False).
                Tools run at once must be safe to share: the shop's are (one lock around its database)
    max_parallel: at most this many tool threads at a time
    tool_choice: sent with every request: "auto" (the model decides), "required", "none", or
                {"type": "function", "function": {"name": ...}}
    confirm:    a ConfirmationGate (lesson 15), as for `ReActAgent`: each guarded call of a reply waits for
                its own yes before the reply's calls run
    """

    def __init__(
        self,
        llm: LlmClient | None = None,
        tools: ToolRegistry | None = None,
        *,
        max_steps: int = MAX_STEPS,
        lang: str | None = None,
        system_prompt: str | None = None,
        max_tokens: int | None = None,
        max_observation_chars: int | None = MAX_OBSERVATION_CHARS,
        stop_rules: StopRules | Iterable | None = None,
        parallel: bool = True,
        max_parallel: int = MAX_PARALLEL,
        tool_choice: str | dict = "auto",
        context_budget=None,
        confirm: ConfirmationGate | None = None,
    ):
        if tools is None or not isinstance(tools, ToolRegistry):
            raise TypeError("FunctionCallingAgent needs tools=ToolRegistry(...) with the tools the model may call")
        super().__init__(
            llm, tools, max_steps=max_steps, lang=lang, system_prompt=system_prompt, stop=None,
            max_tokens=max_tokens, max_observation_chars=max_observation_chars, stop_rules=stop_rules,
            context_budget=context_budget,
            confirm=confirm,
        )
        if not isinstance(max_parallel, int) or isinstance(max_parallel, bool) or max_parallel < 1:
            raise ValueError(f"max_parallel must be a positive whole number, got {max_parallel!r}")
        self.parallel = bool(parallel)
        self.max_parallel = max_parallel
        self.tool_choice = tool_choice

    def prompt_for(self, lang: str, tools: ToolRegistry | None = None) -> str:
        return self.system_prompt or build_function_prompt(lang)  # no tool list: the tools go in `tools`

    def tool_specs(self, lang: str) -> list[dict]:
        """The request's `tools`: every tool of the registry, in its order, described in `lang`."""
        return function_specs(self.tools, lang)

    def parse_text(self, text: str, finish_reason: str | None = None) -> ParsedStep:
        """A reply's text read as the answer (the closing call of the stop rules reads it this way)."""
        answer = (text or "").strip()
        return ParsedStep("", None, answer or None, "final_answer" if answer else "no_format")

    def start(self, question: str, history: list[dict] | None = None) -> FunctionCallingRun:
        return FunctionCallingRun(self, question, history)


class FunctionCallingRun(AgentRun):
    """One run of `FunctionCallingAgent`: an `AgentRun` (messages, trace, stepping) with its own loop."""

    agent: FunctionCallingAgent

    def __init__(self, agent: FunctionCallingAgent, question: str, history: list[dict] | None = None):
        super().__init__(agent, question, history)
        self.tools = agent.tool_specs(self.lang)  # the same list in every request of the run

    def closing_call_fields(self) -> dict:
        # The conversation holds tool calls: send the tools they name, and forbid new calls.
        return {"tools": self.tools, "tool_choice": "none"}

    def request(self, closing: bool = False) -> tuple[list[dict], dict]:
        """As `AgentRun.request`, with the request's `tools`: every tool, or those a context budget offers
        (the tools the conversation already called are among them)."""
        fields = self.closing_call_fields() if closing else {"tools": self.tools, "tool_choice": self.agent.tool_choice}
        budget = self.agent.context_budget
        if budget is None:
            return self.messages, fields
        fitted = budget.fit(self.messages, self.agent.tools, request_index=self.request_index,
                            tool_specs=lambda tools: function_specs(tools, self.lang))
        self.fits.append(fitted)
        return fitted.messages, {**fields, "tools": fitted.tool_specs}

    def _loop(self) -> Iterator[Event]:
        agent, lang, rules = self.agent, self.lang, self.stop_rules
        for step in count(1):
            # 0. May the run go on? (stop_rules, as in ReActAgent)
            if stop := rules.before_call(self.trace):
                yield from end_on_stop(self, stop, step - 1, agent.parse_text)
                return

            # 1. Think: the model reads the conversation and answers, or asks for tools. (With a context
            # budget, lesson 13, it reads the conversation fitted to the budget.)
            try:
                messages, fields = self.request()
                sent = tuple(dict(m) for m in messages)
                reply = agent.llm.chat(messages, max_tokens=agent.max_tokens, **fields)
            except ContextBudgetError as exc:
                yield Stopped(step, "context_budget", CONTEXT_FULL[lang], detail=str(exc))
                return
            except TinyAgentError as exc:
                yield Stopped(step, "llm_error", MODEL_UNAVAILABLE[lang], detail=str(exc))
                return
            yield LlmCall(step, sent, reply.text, reply.finish_reason, reply.usage, reply.latency_s,
                          reply.model, reply.client_cut)
            calls = read_tool_calls(reply.tool_calls, prefix=f"call_{step}")
            # The reply joins the conversation with its calls: each tool message must answer one of them.
            self.messages.append(assistant_message(reply.text, calls))

            # 2. No calls: the text is the answer (unless a rule says the reply was cut).
            if not calls:
                yield from self._answer(step, reply.text)
                return

            # 3. Read each call, and let the rules judge it before anything runs.
            actions, warnings = [], []
            for i, call in enumerate(calls):
                action = call.action(agent.tools)
                rule = UNREADABLE_ARGUMENTS if call.problem and call.name in agent.tools else TOOL_CALL
                thought = reply.text.strip() if i == 0 else ""  # text beside the calls: the model's preamble
                yield Parsed(step, thought, action.tool_name, action.tool_input, None, rule)
                verdict = rules.after_reply(self.trace)
                if isinstance(verdict, Stop):
                    # Marked like the rules' other notes ("stop_rule"): not a result the shop gave.
                    note = error_observation(NOT_RUN.format(reason=verdict.reason), stop_rule=verdict.reason)
                    self.messages.extend(tool_message(c, note) for c in calls)
                    yield from end_on_stop(self, verdict, step, agent.parse_text)
                    return
                actions.append(action)
                warnings.append(ToolResult(verdict.text, error=True) if verdict else None)

            # 4. Act: every call at once. 5. Observe: each result back, in the order of the calls.
            for action in actions:
                yield ToolCall(step, action.tool_name, action.tool_input)
            for call, result in zip(calls, self._results(calls, actions, warnings)):
                text, original_chars = cut_observation(result.text, agent.max_observation_chars)
                self.messages.append(tool_message(call, text))
                yield Observation(step, text, result.error, original_chars)

    def _answer(self, step: int, text: str) -> Iterator[Event]:
        answer = text.strip()
        yield Parsed(step, "", None, None, answer or None, "final_answer" if answer else "no_format")
        verdict = self.stop_rules.after_reply(self.trace)
        if isinstance(verdict, Stop):
            yield from end_on_stop(self, verdict, step, self.agent.parse_text)
        elif answer:
            yield Final(step, answer, "final_answer")
        else:
            yield Stopped(step, "empty_reply", EMPTY_REPLY[self.lang], detail="the model sent no text and no tool call")

    def _results(self, calls: list[NativeCall], actions: list[Action], ready: list[ToolResult | None]
                 ) -> Iterator[ToolResult]:
        """Each call's result, in order. A call already answered (a warning, unreadable arguments) does
        not run; the others run in threads at once (or one by one without `parallel`)."""
        agent = self.agent
        ready = [done or call.rejection(agent.tools) for call, done in zip(calls, ready)]
        todo = [i for i, done in enumerate(ready) if done is None]
        if not agent.parallel or len(todo) < 2:
            for i, action in enumerate(actions):
                yield ready[i] or self._run_tool(action)
            return
        with ThreadPoolExecutor(min(len(todo), agent.max_parallel), thread_name_prefix="tool") as pool:
            futures = {i: pool.submit(self._run_tool, actions[i]) for i in todo}
            for i in range(len(actions)):
                yield ready[i] or futures[i].result()

    def _run_tool(self, action: Action) -> ToolResult:
        """The registry never raises; a rule that runs tools (ToolTimeout) might, and must not end the run."""
        try:
            return self.stop_rules.run_tool(self.agent.tools, action)
        except Exception as exc:  # noqa: BLE001 - a failure becomes the call's error result
            return ToolResult(error_observation(f"tool {action.tool_name} failed: {type(exc).__name__}: {exc}"),
                              error=True)
