"""`FunctionCallingAgent`: the same loop on the API's native protocol (lesson 09).

The tools go in the request's `tools` field (tool_rendering.function_spec), not in the prompt; the model
answers with `tool_calls` instead of "Action:" lines; each result goes back as a `tool` message that
quotes its call's id. The conversation:

    system     a short prompt: who the assistant is, how to use tools (no tool list, no format)
    user       the question
    assistant  content: null, tool_calls: [queryOrder(88231), queryOrder(88232)]   <- round 1
    tool       tool_call_id: call_1, content: <queryOrder 88231's result>
    tool       tool_call_id: call_2, content: <queryOrder 88232's result>
    assistant  content: "Order 88231 ..."                                           <- the answer

A reply may hold several calls: they run at once, each in a thread of its own (`parts=[RunInTurn()]`
runs them one after the other), and their results go back in the order of the calls, whatever finished
first. A reply with text and no calls is the answer. Nothing here raises for what a model or a tool gets
wrong: an unknown tool, arguments that are not a JSON object, a tool that fails, each becomes an error
tool message the model reads next round (native_calls.py).

The events are `ReActAgent`'s, so a Trace prints, saves and shows the same way. A round that calls tools:

    LlmCall -> Parsed (one per call) -> ToolCall (one per call) -> Observation (one per call, in order)

It is `ReActAgent`'s loop, with three parts of this lesson's in place of lesson 06's: `NativeRequest` (the
tools in `tools`), `NativeRead` (a reply's `tool_calls`, or its text as the answer) and `ParallelAct` (a
reply's calls at once). So every later lesson's part (a budget, a streamed send, a gate) mounts here too.
`Parsed` says what was read from each call (`rule` "tool_call", or "tool_call (arguments are not a JSON
object)"), which is what lets lesson 10's stop rules watch this loop unchanged. The rules that look at a reply (`length`, a repeated action) are asked once per call, before
any tool runs; a warned call does not run, the warning is its result; a `Stop` runs none of the reply's
calls (each gets a tool message saying so, as the API requires) and makes the closing call, with the
tools sent again and tool_choice "none". `NoProgress` counts each call's result.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

from tinyagent.agent import ReActAgent
from tinyagent.events import Final, Observation, Parsed, Stopped
from tinyagent.llm_client import ChatResult, LlmClient
from tinyagent.loop_parts import EMPTY_REPLY, LoopParts, Reading, RunInTurn, cut_observation, run_tool
from tinyagent.number_checks import check_whole
from tinyagent.parser import ParsedStep
from tinyagent.prompts import DEFAULT_ROLE, check_language
from tinyagent.protocols.native_calls import NativeCall, assistant_message, read_tool_calls, tool_message
from tinyagent.protocols.tool_rendering import function_specs
from tinyagent.registry import ToolRegistry, ToolResult, error_observation
from tinyagent.tools import Action

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
    """A ReAct loop on native function calling: `ReActAgent` with this lesson's three parts in place of lesson 06's
    request, read and act. It takes the same arguments, and sends no `stop` (no text format to cut). To change
    how it calls, mount a part: `parts=[NativeRequest(tool_choice="required")]` sends a tool_choice, and
    `parts=[RunInTurn()]` runs a reply's calls one after the other instead of at once. A part made for the text
    protocol (lesson 06's line scanner, lesson 11's tolerant read) is refused when the agent is made.
    """

    protocol = "function calling"

    def __init__(self, llm: LlmClient | None = None, tools: ToolRegistry | None = None, **options: Any):
        super().__init__(llm, tools, **options)
        # A read part that names no protocol is taken to read "Action:" lines (a learner's own, say; lesson 11's and
        # 23's say protocol = "text", and mount() refuses them): it would take this agent's first tool call for a reply
        # with no step and stop the run. Only a read for function calling reads one.
        read = self.parts.read
        if getattr(read, "protocol", None) != self.protocol:
            raise TypeError(f"{read!r} names no protocol, so it is taken to read the text protocol's lines, and a "
                            "FunctionCallingAgent's replies are tool calls: leave that read part out (NativeRead reads "
                            "them), mount it on a ReActAgent, or, if it does read tool calls, give its class "
                            "protocol = 'function calling'")

    def default_parts(self) -> LoopParts:
        return super().default_parts().mount([NativeRequest(), NativeRead(), ParallelAct()])

    def prompt_for(self, lang: str, tools: ToolRegistry | None = None) -> str:
        return self.system_prompt or build_function_prompt(lang)  # no tool list: the tools go in `tools`

    def tool_specs(self, lang: str) -> list[dict]:
        """The request's `tools`: every tool of the registry, in its order, described in `lang`."""
        return function_specs(self.tools, lang)


# -- this lesson's parts ---------------------------------------------------------------------------------------
class NativeRequest:
    """What is sent in function calling: the conversation, and every tool as a JSON Schema in `tools` (built
    once a run), with `tool_choice` ("auto": the model decides, "required", "none", or {"type": "function",
    "function": {"name": ...}}). A closing call for the best answer sends the same tools with tool_choice "none"."""

    slot: ClassVar[str] = "request"
    protocol: ClassVar[str] = "function calling"  # it needs the agent's `tool_specs`

    def __init__(self, tool_choice: str | dict = "auto"):
        self.tool_choice = tool_choice
        self._specs: list[dict] | None = None  # this run's `tools` (a fresh part for every run)

    def fresh(self) -> NativeRequest:
        return NativeRequest(self.tool_choice)

    def build(self, run: Any, closing: bool = False) -> tuple[list[dict], dict]:
        if self._specs is None:
            self._specs = run.agent.tool_specs(run.lang)
        # The conversation may hold tool calls: lesson 10's closing call sends the tools they name, and forbids new
        # calls.
        choice = "none" if closing else self.tool_choice
        return run.messages, {"max_tokens": run.agent.max_tokens, "tools": self._specs, "tool_choice": choice}

    def __repr__(self) -> str:
        return f"NativeRequest(tool_choice={self.tool_choice!r})"


class NativeRead:
    """How a reply is read in function calling: its `tool_calls`, one Parsed event each; with none, its text
    is the answer."""

    slot: ClassVar[str] = "read"
    protocol: ClassVar[str] = "function calling"  # on a text agent it would take every "Action:" step for the answer

    def __call__(self, run: Any, step: int, reply: ChatResult) -> Reading:
        calls = read_tool_calls(reply.tool_calls, prefix=f"call_{step}")
        # The reply joins the conversation with its calls: each tool message must answer one of them.
        reading = NativeReading(assistant_message(reply.text, calls), [], calls=calls)
        if not calls:
            answer = reply.text.strip()
            reading.parsed = [Parsed(step, "", None, None, answer or None, "final_answer" if answer else "no_format")]
            reading.ending = (Final(step, answer, "final_answer") if answer else
                              Stopped(step, "empty_reply", EMPTY_REPLY[run.lang],
                                      detail="the model sent no text and no tool call"))
            return reading
        tools = run.agent.tools
        for i, call in enumerate(calls):
            action = call.action(tools)
            rule = UNREADABLE_ARGUMENTS if call.problem and call.name in tools else TOOL_CALL
            thought = reply.text.strip() if i == 0 else ""  # text beside the calls: the model's preamble
            reading.parsed.append(Parsed(step, thought, action.tool_name, action.tool_input, None, rule))
            reading.actions.append(action)
            reading.ready.append(call.rejection(tools))  # arguments that could not be read do not run
        return reading

    def parse(self, text: str, finish_reason: str | None = None, tools: Any = None) -> ParsedStep:
        """A reply's text read as the answer (the closing call of the stop rules reads it this way)."""
        answer = (text or "").strip()
        return ParsedStep("", None, answer or None, "final_answer" if answer else "no_format")

    def __repr__(self) -> str:
        return "NativeRead()"


class NativeReading(Reading):
    """A native reply: each result goes back as a `tool` message quoting its call's id."""

    def __init__(self, message: dict, parsed: list, calls: list[NativeCall]):
        super().__init__(message, parsed)
        self.calls = calls

    def observe(self, step: int, results: Iterable[ToolResult], limit: int | None
                ) -> Iterator[tuple[dict, Observation]]:
        for call, result in zip(self.calls, results):
            text, original_chars = cut_observation(result.text, limit)
            yield tool_message(call, text), Observation(step, text, result.error, original_chars)

    def not_run(self, reason: str) -> list[dict]:
        # The API wants every call answered; marked like the rules' other notes ("stop_rule"), not a shop result.
        note = error_observation(NOT_RUN.format(reason=reason), stop_rule=reason)
        return [tool_message(call, note) for call in self.calls]


class ParallelAct(RunInTurn):
    """How the actions are run in function calling: the calls of one reply at once, each in a thread of its
    own (at most `max_parallel`); their results come back in the order of the calls, whatever finished first."""

    def __init__(self, max_parallel: int = MAX_PARALLEL):
        check_whole("max_parallel", max_parallel)
        self.max_parallel = max_parallel

    def perform(self, run: Any, actions: list[Action], ready: list[ToolResult | None]) -> Iterator[ToolResult]:
        todo = [i for i, done in enumerate(ready) if done is None]
        if len(todo) < 2:
            yield from super().perform(run, actions, ready)
            return
        with ThreadPoolExecutor(min(len(todo), self.max_parallel), thread_name_prefix="tool") as pool:
            futures = {i: pool.submit(run_tool, run, actions[i]) for i in todo}
            for i in range(len(actions)):
                yield ready[i] or futures[i].result()

    def __repr__(self) -> str:
        return f"ParallelAct(max_parallel={self.max_parallel})"
