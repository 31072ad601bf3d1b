"""Several agents against one (lesson 21) on lesson 18's suite: tasks passed, model calls, tokens, wall time.

    .venv/bin/python benchmarks/several_agents.py                          # the classroom model, the whole suite
    .venv/bin/python benchmarks/several_agents.py --configured --langs en  # the model in .env, English tasks

The single agent is lesson 06's ReActAgent with the five shop tools; the team is handoffs.shop_team: a triage agent
whose only tools are the three handoffs, and lesson 17's skills (logistics, policies, refunds) as specialists.
Both run every task on a fresh shop and are graded by the same checks (tinyagent/evaluation). Prints the
scoreboard, then per setup: tasks passed, model calls, tokens (prompt + completion) and seconds, then the team's
model calls and tokens per agent. On the classroom model the numbers are the same on every run (seconds aside).
"""

from __future__ import annotations

import sys
import time

from tinyagent import LlmClient, load_settings
from tinyagent.architectures.handoffs import calls_by_agent, shop_team
from tinyagent.command_options import OneLineParser, whole_number
from tinyagent.errors import TinyAgentError
from tinyagent.evaluation import evaluate, scoreboard


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configured", action="store_true", help="the model in .env instead of the classroom's")
    parser.add_argument("--langs", nargs="*", choices=("zh", "en"), help="only these languages' tasks")
    parser.add_argument("--max-steps", type=whole_number("--max-steps", 100, "each round resends the whole "
                        "conversation"), default=10, help="rounds per task (default 10)")
    args = parser.parse_args(argv)
    try:
        llm = LlmClient.from_settings(load_settings(), read_timeout=600, total_timeout=900) if args.configured \
            else LlmClient.classroom()
        llm.chat([{"role": "user", "content": "Hello"}], max_tokens=5)  # a wrong model or URL fails here, once
    except TinyAgentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    reports = []
    for build, label in ((None, "one agent"), (shop_team, "several agents")):
        started = time.perf_counter()
        report = evaluate(llm, langs=args.langs, max_steps=args.max_steps, progress=args.configured, label=label,
                          **({"build": build} if build else {}))
        reports.append((report, time.perf_counter() - started))
    print(f"model: {llm.model}")
    print(scoreboard([report for report, _ in reports]))
    print()
    print(f"{'setup':<16} {'passed':>8} {'model calls':>12} {'tokens':>8} {'seconds':>8}")
    for report, seconds in reports:
        s = report.summary
        print(f"{report.label:<16} {s['passed']:>4}/{s['tasks']:<3} {s['model_calls']:>12} "
              f"{s['prompt_tokens'] + s['completion_tokens']:>8} {seconds:>8.1f}")
    per_agent: dict[str, dict[str, int]] = {}
    for result in reports[1][0].results:
        for agent, row in calls_by_agent(result.trace).items():
            total = per_agent.setdefault(agent, {"model_calls": 0, "tokens": 0})
            total["model_calls"] += row["model_calls"]
            total["tokens"] += row["tokens"]
    print()
    print("the team, per agent:")
    for agent, row in per_agent.items():
        print(f"  {agent:<10} {row['model_calls']:>4} model calls {row['tokens']:>7} tokens")
    return 0


if __name__ == "__main__":
    sys.exit(main())
