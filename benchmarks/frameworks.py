"""Each framework of lesson 20 beside tinyagent, measured in one run on this machine.

    .venv/bin/python benchmarks/frameworks.py [--runs 5] [--steps-runs 5] [--only langchain,smolagents]

One row per agent (tinyagent's ReActAgent and FunctionCallingAgent, then each framework's adapter in
tinyagent/frameworks/), all against the classroom model on loopback, with the shop's real tools:

1. The suite. Lesson 18's 24 tasks, each on a fresh shop, graded by lesson 18's checks
   (tinyagent.frameworks.suite): tasks passed, model calls, tokens (the usage the classroom model returned;
   "n/a" where the framework streams without asking for it), and the size of the first request's JSON body.
2. Import time. `python -c "<the names the adapter imports>"` in a fresh subprocess, wall time of the
   whole process, median of --runs, alternating with `python -c "import requests"` measured in the same
   run; printed as the ratio to that baseline. One warm-up each first, so bytecode is cached.
3. Cost per step. The refund request (four tool calls and the answer), run --steps-runs times in this
   process against the classroom model on loopback (a real HTTP server on 127.0.0.1, answering in about a
   millisecond); wall time of the whole run (building the agent included) per model call, median, printed
   as the ratio to tinyagent's ReActAgent in the same run. It includes the classroom model's own time, which is the same for every agent, so the
   ratios understate the differences between the agents themselves.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
import warnings

from tinyagent.classroom.server import ClassroomServer
from tinyagent.command_options import OneLineParser, whole_number
from tinyagent.frameworks import FRAMEWORKS, available, check_key, framework_name, run_framework
from tinyagent.frameworks.suite import score_framework

REFUND = "Order 88231: my robot vacuum won't charge any more. Please refund it."

# What each adapter imports before it can build its agent: what a program using it pays at start.
IMPORTS = {
    "tinyagent": "import tinyagent",
    "tinyagent-function": "import tinyagent",
    "langchain": "from langchain.agents import create_agent; from langchain_openai import ChatOpenAI",
    "langchain-classic": "from langchain_classic.agents import AgentExecutor; from langchain_openai import ChatOpenAI",
    "llama-index": "from llama_index.core.agent.workflow import FunctionAgent; "
                   "from llama_index.llms.openai_like import OpenAILike",
    "llama-index-react": "from llama_index.core.agent.workflow import ReActAgent; "
                         "from llama_index.llms.openai_like import OpenAILike",
    "smolagents": "from smolagents import OpenAIServerModel, ToolCallingAgent",
    "pydantic-ai": "from pydantic_ai import Agent; from pydantic_ai.models.openai import OpenAIChatModel",
    "agents-sdk": "from agents import Agent, OpenAIChatCompletionsModel, Runner",
}
BASELINE = "import requests"


def process_seconds(code: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    return time.perf_counter() - started


def import_times(keys: list[str], runs: int) -> tuple[dict[str, float], float]:
    """Median wall time of a fresh process per import line, and of the baseline, taken in turns."""
    lines = sorted({IMPORTS[key] for key in keys})
    for code in [BASELINE, *lines]:
        process_seconds(code)  # warm-up: bytecode compiled, files in the page cache
    samples: dict[str, list[float]] = {code: [] for code in [BASELINE, *lines]}
    for _ in range(runs):
        for code, times in samples.items():
            times.append(process_seconds(code))
    medians = {code: statistics.median(times) for code, times in samples.items()}
    return {key: medians[IMPORTS[key]] for key in keys}, medians[BASELINE]


def seconds_per_step(key: str, base_url: str, runs: int) -> float:
    run_framework(key, REFUND, base_url=base_url)  # warm-up: imports, first connections
    per_step = []
    for _ in range(runs):
        started = time.perf_counter()
        run = run_framework(key, REFUND, base_url=base_url)
        per_step.append((time.perf_counter() - started) / max(run.model_calls, 1))
    return statistics.median(per_step)


def framework_keys(text: str) -> list[str]:
    """--only: comma-separated keys of FRAMEWORKS."""
    keys = [key.strip() for key in text.split(",") if key.strip()]
    for key in keys or [text]:
        try:
            check_key(key)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"--only: {exc}") from None
    return keys


def main() -> None:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=whole_number("--runs", 100, "each run is a fresh process"), default=5,
                        help="fresh processes per import line (median)")
    parser.add_argument("--steps-runs", type=whole_number("--steps-runs", 1000, "each is a whole refund run"),
                        default=5, help="refund runs per agent for the cost per step")
    parser.add_argument("--only", type=framework_keys, default=[],
                        help="comma-separated keys (default: every installed one)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")  # the frameworks' notices about their own renamed names
    keys = [key for key in (args.only or FRAMEWORKS) if available(key)]
    if "tinyagent" not in keys:
        keys.insert(0, "tinyagent")  # the ratios are against it

    imports, baseline = import_times(keys, args.runs)
    rows = []
    with ClassroomServer() as server:
        for key in keys:
            score = score_framework(key, base_url=server.base_url)
            rows.append((key, score, seconds_per_step(key, server.base_url, args.steps_runs)))
    own_step = next(step for key, _, step in rows if key == "tinyagent")

    print(f"classroom model on loopback; import baseline `{BASELINE}` = {baseline * 1000:.0f} ms; "
          f"tinyagent ReActAgent's step = {own_step * 1000:.1f} ms (median of {args.steps_runs} refunds)")
    print(f"{'agent':<32} {'passed':>6} {'calls':>5} {'tokens':>7} {'1st req':>8} "
          f"{'import':>8} {'×requests':>9} {'step':>8} {'×tinyagent':>10}")
    for key, score, step in rows:
        s = score.report.summary
        tokens = f"{s['prompt_tokens'] + s['completion_tokens']:>7}" if score.usage_known else "    n/a"
        print(f"{framework_name(key):<32} {s['passed']:>3}/{s['tasks']:<2} {s['model_calls']:>5} {tokens} "
              f"{score.first_request:>6} B {imports[key] * 1000:>5.0f} ms {imports[key] / baseline:>8.1f}× "
              f"{step * 1000:>5.1f} ms {step / own_step:>9.2f}×")


if __name__ == "__main__":
    main()
