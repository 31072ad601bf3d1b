"""Constrained decoding on the real local model (lesson 23): lesson 18's suite with and without a grammar.

    .venv/bin/python benchmarks/constrained_decoding.py                          # the five variants, all 24 tasks
    .venv/bin/python benchmarks/constrained_decoding.py --names parcel --langs en --variants none conversation

SmolLM2-135M through llama.cpp (tinyagent/local_model.py, started here with --threads, one by default),
temperature 0, max_steps 6, max_tokens 512 (the client's DEFAULT_MAX_TOKENS: at 200 a Chinese
Thought with its Action can run into the cap, and a cut reply counts as unread). For each variant of tinyagent.protocols.constrained_decoding.VARIANTS: tasks
passed (lesson 18's four checks), the share of replies the strict parser reads (a reply cut at max_tokens counts
as unread), mean model calls per task, the suite's wall time, and the share of steps whose grammar left one
thing to do (the program chose that step, not the model). The load average is printed beside it: on a busy
machine the times grow, the other columns should not.

Targets: with the grammar rebuilt from the conversation, at least 99% of replies readable.
"""

from __future__ import annotations

import json
import os
import sys
import time

from tinyagent.command_options import OneLineParser, output_file, whole_number, write_whole
from tinyagent.evaluation import evaluate
from tinyagent.evaluation.grading import unreadable_replies
from tinyagent.evaluation.tasks import LANGS, TASK_NAMES
from tinyagent.events import LlmCall
from tinyagent.local_model import MAX_THREADS, LocalModelUnavailableError, start_local_model
from tinyagent.protocols.constrained_decoding import VARIANTS, ConstrainedSend, forced_share, variant_options

READABLE_TARGET = 0.99


def measure(llm, variant: str, names, langs, max_steps: int, max_tokens: int) -> dict:
    """One variant over the chosen tasks: the table's row, as numbers."""
    options = variant_options(variant)
    send = next((part for part in options.get("parts", []) if isinstance(part, ConstrainedSend)), None)
    started = time.perf_counter()
    report = evaluate(llm, names=names, langs=langs, max_steps=max_steps, max_tokens=max_tokens, progress=False,
                      **options)
    seconds = time.perf_counter() - started
    replies = sum(len(r.trace.of_type(LlmCall)) for r in report.results)
    unread = sum(unreadable_replies(r.trace) for r in report.results)
    tasks = len(report.results)
    return {
        "variant": variant,
        "passed": sum(r.passed for r in report.results),
        "tasks": tasks,
        "readable": (replies - unread) / replies if replies else 0.0,
        "replies": replies,
        "mean_calls": replies / tasks if tasks else 0.0,
        "seconds": seconds,
        "forced": None if send is None else forced_share(send.log),
        "passed_tasks": [r.name + f" ({r.lang})" for r in report.results if r.passed],
    }


def table(rows: list[dict]) -> str:
    header = ("| variant | tasks passed | replies the strict parser reads | mean model calls | suite wall time "
              "| steps the grammar forced |")
    lines = [header, "| --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        forced = "—" if row["forced"] is None else f"{row['forced']:.0%}"
        lines.append(f"| {VARIANTS[row['variant']]} | {row['passed']}/{row['tasks']} | {row['readable']:.0%} "
                     f"| {row['mean_calls']:.1f} | {row['seconds']:.0f} s | {forced} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), metavar="NAME",
                        help=f"which variants (default all): {', '.join(VARIANTS)}")
    parser.add_argument("--names", nargs="+", metavar="TASK", help="task names (default: all)")
    parser.add_argument("--langs", nargs="+", metavar="LANG", help="zh, en (default: both)")
    parser.add_argument("--threads", type=whole_number("--threads", MAX_THREADS, "1 suits a busy machine"), default=1,
                        help="llama.cpp threads (default 1)")
    parser.add_argument("--max-steps", type=whole_number("--max-steps", 100, "each round resends the whole "
                        "conversation"), default=6, help="rounds per task (default 6)")
    parser.add_argument("--max-tokens", type=whole_number("--max-tokens", 2048, "the model's whole context is "
                        "2,048 tokens"), default=512, help="cap on each reply (default 512)")
    parser.add_argument("--json", type=output_file, metavar="FILE", help="also write the rows to this file")
    args = parser.parse_args(argv)
    for name in args.variants:
        if name not in VARIANTS:
            print(f"error: no variant {name!r}: the variants are {', '.join(VARIANTS)}", file=sys.stderr)
            return 2
    for name in args.names or ():
        if name not in TASK_NAMES:
            print(f"error: no task {name!r}: the tasks are {', '.join(TASK_NAMES)}", file=sys.stderr)
            return 2
    for lang in args.langs or ():
        if lang not in LANGS:
            print(f"error: --langs takes {', '.join(LANGS)}, got {lang!r}", file=sys.stderr)
            return 2
    try:
        model = start_local_model(threads=args.threads)
    except LocalModelUnavailableError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    rows = []
    load_before = os.getloadavg()
    with model:
        llm = model.client(temperature=0, read_timeout=600, total_timeout=900)
        for variant in args.variants:
            row = measure(llm, variant, args.names, args.langs, args.max_steps, args.max_tokens)
            rows.append(row)
            forced = "-" if row["forced"] is None else f"{row['forced']:.0%}"
            print(f"{variant}: {row['passed']}/{row['tasks']} passed, {row['readable']:.0%} readable, "
                  f"{row['mean_calls']:.1f} calls a task, {row['seconds']:.0f} s, {forced} of steps forced",
                  file=sys.stderr, flush=True)
    load_after = os.getloadavg()
    print(f"SmolLM2-135M via llama.cpp, {args.threads} thread(s), temperature 0, max_steps {args.max_steps}, "
          f"max_tokens {args.max_tokens}; load average (1 min) {load_before[0]:.1f} before, {load_after[0]:.1f} "
          f"after, on {os.cpu_count()} cores")
    print(table(rows))
    for row in rows:
        if row["passed_tasks"]:
            print(f"passed with {row['variant']}: {', '.join(row['passed_tasks'])}")
    met = all(row["readable"] >= READABLE_TARGET for row in rows if row["variant"] == "conversation")
    if "conversation" in args.variants:
        print(f"target: with the conversation-built grammar, at least {READABLE_TARGET:.0%} of replies readable: "
              f"{'met' if met else 'NOT met'}")
    if args.json:
        # The shape lesson 23 reads (notebooks/data/constrained_decoding.json): runs made at the same time
        # with other --variants can be merged by joining their "runs" and "rows".
        runs = [{"variants": args.variants, "load": [load_before, load_after]}]
        write_whole(args.json, json.dumps({"max_steps": args.max_steps, "max_tokens": args.max_tokens,
                                           "threads": args.threads, "runs": runs, "rows": rows}, indent=2))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
