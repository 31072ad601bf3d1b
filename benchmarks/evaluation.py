"""The evaluation suite end to end (lesson 18): every task, graded, against the classroom model and its variants.

    .venv/bin/python benchmarks/evaluation.py                       # the classroom model and every variant
    .venv/bin/python benchmarks/evaluation.py --configured --protocol text --max-steps 4 --json real.json

1. The careful classroom model: the whole suite (tinyagent/evaluation/tasks.py: 12 requests in Chinese and
   English, 24 tasks) with text ReAct and with function calling, each task on a fresh shop, graded on the tools
   called, the refunds table afterwards, the answer and the format. Target: every task passes, and each
   protocol's whole suite takes under 30 s (wall time; the first run includes the classroom server's start). `--runs` repeats
   it and prints the median.
2. Every misbehaving variant (tinyagent/classroom/variants.py) but classroom-gullible (it misbehaves only on planted
   data), both protocols: the scoreboard, which must show each variant below 100% in text ReAct. Deterministic: the same table on every run.

With `--configured` it runs the suite once against the model in .env (or TINYAGENT_API_URL/TINYAGENT_MODEL)
instead, with a progress bar, and prints the table with seconds per task: the way to score a real model.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from tinyagent import LlmClient, load_settings
from tinyagent.classroom.variants import MODELS
from tinyagent.command_options import OneLineParser, output_file, whole_number, write_whole
from tinyagent.errors import TinyAgentError
from tinyagent.evaluation import evaluate, scoreboard

# A variant that misbehaves only on planted data (lesson 25's benchmark, prompt_injection.py): on this suite it is
# the careful model.
PLANTED_ONLY = ("classroom-gullible",)

TARGET_SECONDS = 30.0


def timed_suite(model: str, protocol: str) -> tuple[float, object]:
    """The whole suite on a classroom model, timed (the process's first run includes the classroom server's start)."""
    started = time.perf_counter()
    report = evaluate(LlmClient.classroom(model), protocol, progress=False)
    return time.perf_counter() - started, report


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configured", action="store_true", help="score the configured model (.env) instead")
    parser.add_argument("--protocol", choices=("text", "function", "both"), default="both")
    parser.add_argument("--max-steps", type=whole_number("--max-steps", 100, "each round resends the whole "
                        "conversation"), help="with --configured: rounds per task (default 10)")
    parser.add_argument("--runs", type=whole_number("--runs", 100, "each run is the whole suite"),
                        help="timed runs of the classroom suite (default 3)")
    parser.add_argument("--json", type=output_file, metavar="FILE",
                        help="with --configured: write the report(s) to this file (with both protocols, one file "
                             "each, the protocol appended)")
    args = parser.parse_args(argv)
    protocols = ("text", "function") if args.protocol == "both" else (args.protocol,)

    if args.configured:
        if args.runs is not None:
            parser.error("--runs times the classroom suite: with --configured the suite runs once")
        files = {}
        if args.json:  # one file a protocol: "out" and "out.json" both make two
            stem = str(args.json).removesuffix(".json")
            files = {p: args.json if len(protocols) == 1 else Path(f"{stem}.{p}.json") for p in protocols}
        for path in files.values():
            if path.is_dir():
                parser.error(f"--json: {str(path)!r} is a folder, and the report would go there")
        return score_configured(protocols, args.max_steps or 10, files)
    if args.json or args.max_steps:
        parser.error("--json and --max-steps go with --configured: the classroom suites write no file and take "
                     "the default rounds")
    args.runs = args.runs or 3

    print(f"1. The careful classroom model, the whole suite, {args.runs} runs (median wall time)")
    met = True
    for protocol in protocols:
        runs = [timed_suite("classroom", protocol) for _ in range(args.runs)]
        seconds = statistics.median(s for s, _ in runs)
        report = runs[-1][1]
        s = report.summary
        ok = report.passed and seconds < TARGET_SECONDS
        met &= ok
        print(f"  {report.label:<32} {s['passed']}/{s['tasks']} passed ({s['success_rate']:.0%})  "
              f"{seconds:5.2f} s  {s['model_calls']} model calls  {s['prompt_tokens'] + s['completion_tokens']} tokens"
              f"  {'target met' if ok else 'TARGET MISSED'}")

    print("\n2. Every variant of the classroom model, both protocols")
    started = time.perf_counter()
    reports = [evaluate(LlmClient.classroom(model), protocol, progress=False)
               for protocol in protocols for model in MODELS if model not in PLANTED_ONLY]
    elapsed = time.perf_counter() - started
    print(scoreboard(reports))
    below = [r for r in reports if r.protocol == "text" and r.model != "classroom" and r.success_rate < 1]
    variants = [r for r in reports if r.protocol == "text" and r.model != "classroom"]
    print(f"  {len(reports)} suites, {sum(len(r.results) for r in reports)} tasks in {elapsed:.1f} s; "
          f"in text ReAct {len(below)} of {len(variants)} variants score below 100%")
    met &= len(below) == len(variants)
    print(f"\ntargets: {'met' if met else 'MISSED'} (every task passes on the careful model, each suite under "
          f"{TARGET_SECONDS:.0f} s, every variant below 100% in text ReAct)")
    return 0 if met else 1


def score_configured(protocols: tuple[str, ...], max_steps: int, files: dict[str, Path]) -> int:
    """The suite once on the configured model for each protocol; each report also written to its file in `files`."""
    try:
        settings = load_settings()
        # A small model on a busy CPU can take minutes for one reply: wait for it.
        llm = LlmClient.from_settings(settings, read_timeout=600, total_timeout=900)
        print(f"model: {settings.describe()}")
        llm.chat([{"role": "user", "content": "Hello"}], max_tokens=5)  # a wrong model or URL fails here, once
    except TinyAgentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    reports = []
    for protocol in protocols:
        started = time.perf_counter()
        report = evaluate(llm, protocol, max_steps=max_steps)
        print(report.table(latency=True))
        print(f"  whole suite: {time.perf_counter() - started:.0f} s\n")
        reports.append(report)
        if protocol in files:
            write_whole(files[protocol], report.to_json() + "\n")  # what report.save writes
            print(f"  written to {files[protocol]}\n")
    if len(reports) > 1:
        print(scoreboard(reports))
    return 0 if all(r.passed for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
