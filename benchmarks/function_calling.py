"""Text ReAct against native function calling, and parallel against sequential tool calls (lesson 09).

    .venv/bin/python benchmarks/function_calling.py [--model classroom] [--runs 7] [--tool-ms 200]
    .venv/bin/python benchmarks/function_calling.py --configured     # the model in .env instead

1. Protocols. Every task of the shop's task set (tinyagent/shop/tasks.py) run once with `ReActAgent`
   (lesson 06's loop, strict parser) and once with `FunctionCallingAgent`, on a fresh shop each, against the
   classroom model (or `--model` one of its variants, or `--configured`). Per task and in total: model calls,
   prompt and completion tokens (the server's `usage`), parse failures, and whether the answer holds the
   task's facts. Deterministic on the classroom model: the same table on every run.
2. Parallel tools. The two-order request "What is the status of orders 88233 and 88234?" with every shop
   tool made `--tool-ms` slower (a sleep, as a tool behind a network is): the classroom model asks for both
   orders in one reply, and `FunctionCallingAgent` runs the two calls at once (its default) or one after
   the other (`parts=[RunInTurn()]`). `--runs` runs each, in turns; the medians of the time spent waiting for tools
   (from a round's last ToolCall event to its last Observation) and of the whole run, in ms and as a multiple
   of one tool's time. Target: the parallel tool wait within 1.3x one tool's time. Wall time varies with the
   machine's load: read the multiples.
"""

from __future__ import annotations

import statistics
import sys

from tinyagent import LlmClient, load_settings
from tinyagent.clock import fixed_clock
from tinyagent.command_options import OneLineParser, number, whole_number
from tinyagent.errors import TinyAgentError
from tinyagent.loop_parts import RunInTurn
from tinyagent.protocols.function_calling import FunctionCallingAgent
from tinyagent.protocols.protocol_comparison import (
    COURSE_NOW,
    compare_protocols,
    protocol_table,
    slowed,
    time_run,
    totals,
)
from tinyagent.shop import Shop, shop_registry

TWO_ORDERS = "What is the status of orders 88233 and 88234?"
TARGET = 1.3


class NotParallel(Exception):
    """The model did not ask for the two orders in one reply, so there is nothing to run at once."""


def parallel_timings(llm: LlmClient, runs: int, seconds: float) -> dict[bool, list]:
    """`runs` timed runs of the two-order request with parallel and with sequential tools, in turns."""
    timings: dict[bool, list] = {True: [], False: []}
    for _ in range(runs):
        for parallel in (True, False):
            clock = fixed_clock(COURSE_NOW)
            with Shop(":memory:", clock=clock) as shop:
                agent = FunctionCallingAgent(llm, slowed(shop_registry(shop, clock), seconds), parts=[*([] if parallel else [RunInTurn()])])
                result, timing = time_run(agent, TWO_ORDERS)
            if result.reason != "final_answer" or timing.tool_calls != 2 or timing.rounds != 2:
                raise NotParallel(f"the model made {timing.tool_calls} tool calls in {timing.rounds} rounds and "
                                  f"ended with {result.reason}: this part needs a model that asks for both orders "
                                  "in one reply")
            timings[parallel].append(timing)
    return timings


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="classroom", help="a classroom model or variant (default classroom)")
    parser.add_argument("--configured", action="store_true", help="use the configured model (.env) instead")
    parser.add_argument("--runs", type=whole_number("--runs", 1000, "each run is a whole agent run"), default=7,
                        help="timed runs of each tool mode (default 7)")
    parser.add_argument("--tool-ms", type=number("--tool-ms", 0, 60_000, "a number of milliseconds", above=True),
                        default=200.0, help="how much slower each tool is (default 200)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # a bad option, said in one line: returned as exit code 2, like every other refusal
        return stop.code
    try:
        llm = LlmClient.from_settings(load_settings()) if args.configured else LlmClient.classroom(args.model)
        llm.chat([{"role": "user", "content": "Hello"}], max_tokens=5)  # a wrong model or URL fails here, once
        print(f"model: {llm.model}\n")
        runs = compare_protocols(llm)
    except (TinyAgentError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    print("1. The shop's task set, text ReAct against function calling")
    print(protocol_table(runs))
    text, native = totals(runs, "text"), totals(runs, "function")
    for key, label in (("model_calls", "model calls"), ("prompt_tokens", "prompt tokens"),
                       ("completion_tokens", "completion tokens")):
        print(f"  function calling / text ReAct, {label}: {native[key] / max(text[key], 1):.2f}")

    seconds = args.tool_ms / 1000
    print(f"\n2. {TWO_ORDERS!r}, every tool {args.tool_ms:g} ms slower, {args.runs} runs each (medians)")
    try:
        timings = parallel_timings(llm, args.runs, seconds)
    except TinyAgentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except NotParallel as exc:
        print(f"  skipped: {exc}")
        return 1
    for parallel, label in ((True, "parallel  "), (False, "sequential")):
        tools_s = statistics.median(t.tools_s for t in timings[parallel])
        run_s = statistics.median(t.run_s for t in timings[parallel])
        print(f"  {label}  waiting for tools {tools_s * 1000:6.0f} ms = {tools_s / seconds:.2f}x one tool   "
              f"whole run {run_s * 1000:6.0f} ms = {run_s / seconds:.2f}x")
    parallel_wait = statistics.median(t.tools_s for t in timings[True]) / seconds
    verdict = "met" if parallel_wait <= TARGET else "missed"
    print(f"  target: parallel tool wait within {TARGET}x one tool's time: {verdict} ({parallel_wait:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
