"""Text ReAct against native function calling, measured: lesson 09's tables, shared with benchmarks/.

    runs = compare_protocols(llm)                  # every task of SHOP_TASKS, both protocols
    print(protocol_table(runs))                    # model calls, prompt and completion tokens, parse failures

    tools = slowed(shop_registry(shop, clock), 0.2)    # every tool 200 ms slower
    result, timing = time_run(FunctionCallingAgent(llm, tools), question)
    timing.tools_s                                 # the time spent waiting for tools

Each task runs on a fresh shop (a refund is written once per shop) with the course's clock, so the two
protocols meet the same world. Tokens are the server's `usage`: on the classroom model its counting rule
(classroom/tokens.py), on a real provider the provider's own count, which is what it bills.

A parse failure is a reply the agent could not read as a step of its protocol: in text ReAct, a reply
with neither an Action nor a Final Answer (`no_format`: lesson 06's fallback takes it as the answer) or
one the tolerant parser rejects (`format_error`); in function calling, a call whose arguments are not a
JSON object. A tool's own refusal of well-formed input (a schema error, an unknown order) is not one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from tinyagent.agent import AgentResult, ReActAgent
from tinyagent.clock import COURSE_NOW, fixed_clock
from tinyagent.events import LlmCall, Observation, Parsed, ToolCall
from tinyagent.protocols.function_calling import UNREADABLE_ARGUMENTS, FunctionCallingAgent
from tinyagent.protocols.tool_rendering import parameters_of
from tinyagent.registry import ToolRegistry
from tinyagent.shop import Shop, shop_registry
from tinyagent.shop.tasks import SHOP_TASKS, ShopTask
from tinyagent.tools import Tool
from tinyagent.trace import Trace

PROTOCOLS = {"text": ReActAgent, "function": FunctionCallingAgent}
PROTOCOL_NAMES = {"text": "text ReAct", "function": "function calling"}
UNREADABLE_REPLIES = ("no_format", "format_error")


@dataclass(frozen=True)
class TaskRun:
    """One task run with one protocol: what it cost, and how it ended."""

    task: str
    protocol: str  # "text" or "function"
    model_calls: int
    prompt_tokens: int
    completion_tokens: int
    parse_failures: int
    tool_calls: int
    reason: str
    right: bool  # the answer holds every fact the task names


def parse_failures(trace: Trace) -> int:
    """How many replies (text ReAct) or calls (function calling) could not be read (see the module docstring)."""
    return sum(1 for parsed in trace.of_type(Parsed)
               if parsed.rule.startswith(UNREADABLE_REPLIES) or parsed.rule == UNREADABLE_ARGUMENTS)


def run_task(task: ShopTask, protocol: str, llm: Any, *, now: str = COURSE_NOW, **options: Any) -> TaskRun:
    """Run one task with one protocol ("text" or "function") on a fresh shop; `options` go to the agent."""
    result, _ = run_on_fresh_shop(task.question, protocol, llm, now=now, **options)
    return summarize(task, protocol, result)


def run_on_fresh_shop(question: str, protocol: str, llm: Any, *, now: str = COURSE_NOW,
                      build: Callable[..., Any] | None = None, **options: Any) -> tuple[AgentResult, list[dict]]:
    """One question, one protocol, a fresh shop: the agent's result and the shop's refunds afterwards
    (lesson 18's evaluation grades the database's end state with them). `build(llm, tools, **options)` makes
    the agent in place of the protocol's (lesson 21's team of agents)."""
    if build is None and protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {', '.join(PROTOCOLS)}, got {protocol!r}")
    clock = fixed_clock(now)
    with Shop(":memory:", clock=clock) as shop:
        result = (build or PROTOCOLS[protocol])(llm, shop_registry(shop, clock), **options).run(question)
        return result, shop.refunds()


def summarize(task: ShopTask, protocol: str, result: AgentResult) -> TaskRun:
    """What one run cost and how it ended."""
    trace = result.trace
    usage = trace.total_usage()
    return TaskRun(
        task=task.name,
        protocol=protocol,
        model_calls=len(trace.of_type(LlmCall)),
        prompt_tokens=usage["prompt_tokens"],
        completion_tokens=usage["completion_tokens"],
        parse_failures=parse_failures(trace),
        tool_calls=len(trace.tool_calls),
        reason=result.reason,
        right=result.reason in ("final_answer", "fallback") and task.answered(result.answer),
    )


def compare_protocols(
    llm: Any,
    tasks: Iterable[ShopTask] = SHOP_TASKS,
    *,
    now: str = COURSE_NOW,
    on_run: Callable[[TaskRun], None] | None = None,
    **options: Any,
) -> list[TaskRun]:
    """Every task with text ReAct, then with function calling, on the same model. `on_run` is told of each
    run as it ends (to show progress on a slow model); `options` go to both agents (e.g. max_steps)."""
    runs = []
    for task in tasks:
        for protocol in PROTOCOLS:
            run = run_task(task, protocol, llm, now=now, **options)
            runs.append(run)
            if on_run is not None:
                on_run(run)
    return runs


def totals(runs: Iterable[TaskRun], protocol: str) -> dict[str, int]:
    """The runs of one protocol added up: model calls, tokens, parse failures, tool calls, right answers."""
    mine = [run for run in runs if run.protocol == protocol]
    keys = ("model_calls", "prompt_tokens", "completion_tokens", "parse_failures", "tool_calls")
    summed = {key: sum(getattr(run, key) for run in mine) for key in keys}
    summed["right"] = sum(run.right for run in mine)
    summed["tasks"] = len(mine)
    return summed


def protocol_table(runs: list[TaskRun]) -> str:
    """Both protocols side by side, one line per task, then the totals."""
    names = list(dict.fromkeys(run.task for run in runs))
    by = {(run.task, run.protocol): run for run in runs}
    width = max([len(name) for name in names] + [5])
    head = "calls prompt compl. fail right"

    def cells(run: TaskRun | dict | None) -> str:
        if run is None:
            return " " * len(head)
        get = run.get if isinstance(run, dict) else lambda key: getattr(run, key)
        right = get("right")
        right = f"{right}/{get('tasks')}" if isinstance(run, dict) else ("yes" if right else "no")
        return (f"{get('model_calls'):>5} {get('prompt_tokens'):>6} {get('completion_tokens'):>6} "
                f"{get('parse_failures'):>4} {right:>5}")

    lines = [f"{'':<{width}} | {PROTOCOL_NAMES['text']:<{len(head)}} | {PROTOCOL_NAMES['function']}",
             f"{'task':<{width}} | {head} | {head}"]
    for name in names:
        lines.append(f"{name:<{width}} | {cells(by.get((name, 'text')))} | {cells(by.get((name, 'function')))}")
    lines.append(f"{'total':<{width}} | {cells(totals(runs, 'text'))} | {cells(totals(runs, 'function'))}")
    return "\n".join(lines)


# -- slow tools, and how long a run waits for them ---------------------------------------------------------
class SlowTool(Tool):
    """`tool` made `seconds` slower (a sleep before the real call): the same name, words and schema, so the
    model is offered exactly the same thing. Stands in for a tool behind a network, as real ones are."""

    def __init__(self, tool: Tool, seconds: float, sleep: Callable[[float], None] = time.sleep):
        self.inner = tool
        self.seconds = seconds
        self.name, self.description, self.descriptions = tool.name, tool.description, tool.descriptions
        self.parameters = tool.parameters
        self._sleep = sleep

    def describe(self, lang: str | None = None) -> str:
        return self.inner.describe(lang)

    def summary(self, lang: str | None = None) -> str:
        summary = getattr(self.inner, "summary", None)
        return summary(lang) if callable(summary) else self.inner.describe(lang)

    def parameters_in(self, lang: str | None = None) -> dict | None:
        return parameters_of(self.inner, lang)

    def invoke(self, input: str) -> str:
        self._sleep(self.seconds)
        return self.inner.invoke(input)


def slowed(tools: ToolRegistry, seconds: float) -> ToolRegistry:
    """A registry of the same tools, in the same order, each `seconds` slower."""
    return ToolRegistry([SlowTool(tool, seconds) for tool in tools])


@dataclass(frozen=True)
class Timing:
    """How long a run took (seconds; vary from run to run).

    run_s:   the whole run, model calls included
    tools_s: the time the loop waited for tools: in each round, from its last ToolCall event (every call
             of the round is known, nothing has run yet) to its last Observation, added over the rounds
    """

    run_s: float
    tools_s: float
    rounds: int
    tool_calls: int


def time_run(agent: ReActAgent, question: str, clock: Callable[[], float] = time.perf_counter
             ) -> tuple[AgentResult, Timing]:
    """Run `agent` on `question` and time it, round by round (see `Timing`)."""
    run = agent.start(question)
    started = clock()
    called_at: dict[int, float] = {}
    waited: dict[int, float] = {}
    for event in run:
        now = clock()
        if isinstance(event, ToolCall):
            called_at[event.step] = now
        elif isinstance(event, Observation) and event.step in called_at:
            waited[event.step] = now - called_at[event.step]
    ended = clock()
    result = run.finish()
    return result, Timing(ended - started, sum(waited.values()), result.trace.rounds, len(result.trace.tool_calls))
