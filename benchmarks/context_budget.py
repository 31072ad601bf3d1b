"""Prompt tokens per turn over a 30-turn customer conversation, without and with a context budget (lesson 13).

    .venv/bin/python benchmarks/context_budget.py [--budget 1500] [--protocol text|function] [--model classroom]
    .venv/bin/python benchmarks/context_budget.py --configured       # the model in .env instead

The scripted conversation (tinyagent/shop/long_session.py, 30 turns, English and Chinese) runs twice on a fresh
shop each: once sending the whole conversation every time, once with `ContextBudget(--budget)` and the shop's
tool filter. Every request is counted as it goes out (tinyagent/memory/turn_tokens.py: messages, tool calls and
`tools`, cl100k_base through quicktok where it is installed). Printed per turn: the largest request (what
must fit in the model's context) and all requests together (what a provider bills), each way, and whether
the answer holds the turn's facts; then the totals and how many answers were right each way.

Target: with the budget, the largest request of every turn at or under the budget (flat, while the other
column grows with the conversation), and as many right answers as without it. The script exits with 1 when
a request went over the budget. Deterministic on the classroom model: the same table on every run.
"""

from __future__ import annotations

import sys

from tinyagent import LlmClient, ReActAgent, load_settings
from tinyagent.clock import fixed_clock
from tinyagent.command_options import OneLineParser, whole_number
from tinyagent.errors import TinyAgentError
from tinyagent.memory.context_budget import BudgetedRequest, ContextBudget
from tinyagent.memory.tool_filter import ToolFilter
from tinyagent.memory.turn_tokens import measure_session, size_table
from tinyagent.protocols.function_calling import FunctionCallingAgent
from tinyagent.shop import Shop, shop_registry
from tinyagent.shop.long_session import LONG_SESSION
from tinyagent.shop.tool_hints import SHOP_TOOL_HINTS

COURSE_NOW = "2026-06-30T19:05:23"
AGENTS = {"text": ReActAgent, "function": FunctionCallingAgent}


def sessions(llm, protocol: str, budget: int):
    """The session measured without and with the budget, each on a fresh shop."""
    measured = []
    for context_budget in (None, ContextBudget(budget, tool_filter=ToolFilter(SHOP_TOOL_HINTS))):
        shop = Shop(":memory:", clock=fixed_clock(COURSE_NOW))
        agent = AGENTS[protocol](llm, shop_registry(shop), parts=[BudgetedRequest(context_budget)] if context_budget else [])
        measured.append(measure_session(agent, LONG_SESSION, counter=context_budget and context_budget.counter))
        shop.close()
    return measured


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=whole_number("--budget", 1_000_000, "tokens per request: no model reads "
                        "more at once"), default=1500, help="tokens per request (default 1500)")
    parser.add_argument("--protocol", choices=AGENTS, default="text", help="text ReAct or function calling")
    parser.add_argument("--model", default="classroom", help="a classroom model or variant (default classroom)")
    parser.add_argument("--configured", action="store_true", help="use the configured model (.env) instead")
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # a bad option, said in one line: returned as exit code 2, like every other refusal
        return stop.code
    try:
        llm = LlmClient.from_settings(load_settings()) if args.configured else LlmClient.classroom(args.model)
        llm.chat([{"role": "user", "content": "Hello"}], max_tokens=5)  # a wrong model or URL fails here, once
        without, with_budget = sessions(llm, args.protocol, args.budget)
    except (TinyAgentError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    counter = ContextBudget(args.budget).counter
    print(f"model: {llm.model}; protocol: {args.protocol}; {len(LONG_SESSION)} turns; tokens: {counter.name}\n")
    print(size_table(without, with_budget, args.budget))
    over = [s.turn for s in with_budget if s.largest > args.budget]
    right = (sum(s.right for s in without), sum(s.right for s in with_budget))
    print(f"\nright answers: {right[0]} of {len(without)} without the budget, {right[1]} with it")
    print(f"largest request: {max(s.largest for s in without)} tokens without, {max(s.largest for s in with_budget)}"
          f" with (budget {args.budget}); tokens sent in all: {sum(s.sent for s in without)} without, "
          f"{sum(s.sent for s in with_budget)} with")
    stopped = [f"{s.turn} ({s.reason})" for s in with_budget if s.reason == "context_budget"]
    if stopped:
        print("turns the budget stopped: " + ", ".join(stopped))
    if over:
        print(f"OVER THE BUDGET in turns {over}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
