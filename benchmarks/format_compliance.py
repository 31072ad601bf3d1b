"""How often does a model follow the ReAct format? The appendix notebook's table, from the command line.

    .venv/bin/python benchmarks/format_compliance.py [--seeds 5] [--lang en|zh] [--max-tokens 120]
    .venv/bin/python benchmarks/format_compliance.py --configured      # the model in .env instead
    .venv/bin/python benchmarks/format_compliance.py --prompt plain --prompt full --stop yes   # lesson 08

By default it starts the local model (SmolLM2-135M on llama.cpp, see tinyagent/local_model.py) in this
process; `--configured` measures whatever `load_settings()` picks (a provider in .env, or the
classroom model). For each prompt (zero-shot, one-shot) and stop setting (without, with
`stop=["Observation:"]`) it asks the shop's refund question once per seed, and prints how many
replies `parse_step` could read (an Action or a Final Answer), how many invented an Observation, and
how many asked for a tool the shop really has.

`--prompt NAME` (repeatable) measures other prompts: lesson 08's variants (tinyagent.protocols.prompt_variants:
plain, name-colon, json, one-shot-prompt, one-shot-turns, rules, anchored, rules-anchored, full,
full-turns) beside the two names above. `--stop yes` measures only with the stop sequence, as the agent sends it.
The measurement itself lives in tinyagent/protocols/compliance.py, shared with the notebooks.
"""

from __future__ import annotations

import sys
import time

from tinyagent import LlmClient, fixed_clock, load_settings
from tinyagent.command_options import OneLineParser, number, number_of_seconds, whole_number
from tinyagent.errors import TinyAgentError
from tinyagent.local_model import MAX_THREADS
from tinyagent.protocols.compliance import PROMPTS, format_table, measure_compliance, summarize
from tinyagent.protocols.prompt_variants import VARIANTS
from tinyagent.shop import Shop, shop_registry

QUESTIONS = {
    "en": "The robot vacuum I bought last week no longer goes back to its dock. "
          "If it can't be fixed, I want a refund. Order number 88231.",
    "zh": "我上周买的扫地机不回充了，修不好我想退。订单号 88231。",
}


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="replies per prompt and stop setting (default 5)")
    parser.add_argument("--lang", choices=("en", "zh"), default="en", help="language of prompt and question")
    parser.add_argument("--max-tokens", type=whole_number("--max-tokens", 32_768, "a cap on one reply"), default=120,
                        help="cap on each reply (default 120)")
    parser.add_argument("--temperature", type=number("--temperature", 0, 2), default=0.7,
                        help="sampling temperature, 0 to 2 as the API takes it (default 0.7)")
    parser.add_argument("--configured", action="store_true", help="measure the configured model, not SmolLM2")
    parser.add_argument("--threads", type=whole_number("--threads", MAX_THREADS, "1 suits a busy machine"), help="llama.cpp threads (default: up to 4; 1 holds up best on "
                        "a machine other processes keep busy)")
    parser.add_argument("--timeout", type=number_of_seconds("--timeout"), default=120.0, help="seconds to wait for each reply (default 120)")
    parser.add_argument("--prompt", action="append", choices=[*PROMPTS, *VARIANTS], metavar="NAME",
                        help=f"a prompt to measure, repeatable (default: {' and '.join(PROMPTS)}); one of "
                        f"{', '.join([*PROMPTS, *VARIANTS])}")
    parser.add_argument("--stop", choices=("both", "yes", "no"), default="both",
                        help="measure with the stop sequence, without it, or both (default both)")
    args = parser.parse_args(argv)
    if not 1 <= args.seeds <= 1000:  # each seed is a model reply for every prompt and stop setting
        parser.error(f"--seeds must be 1 or more and at most 1000, got {args.seeds}")
    prompts = [name if name in PROMPTS else VARIANTS[name] for name in dict.fromkeys(args.prompt or PROMPTS)]
    stops = {"both": (False, True), "yes": (True,), "no": (False,)}[args.stop]

    try:
        if args.configured:
            llm = LlmClient.from_settings(load_settings(), read_timeout=args.timeout,
                                          total_timeout=max(300.0, args.timeout))
        else:
            from tinyagent.local_model import start_local_model

            started = time.perf_counter()
            local = start_local_model(threads=args.threads)
            llm = local.client(read_timeout=args.timeout, total_timeout=max(300.0, args.timeout))
            threads = args.threads or "default (up to 4)"
            print(f"started {local.model} on llama.cpp in {time.perf_counter() - started:.1f} s, threads {threads}")
    except TinyAgentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    clock = fixed_clock("2026-06-30T19:05:23")
    registry = shop_registry(Shop(":memory:", clock=clock), clock)
    print(f"model {llm.model}, lang {args.lang}, seeds 0-{args.seeds - 1}, max_tokens {args.max_tokens}, "
          f"temperature {args.temperature}")
    started = time.perf_counter()
    try:
        runs = measure_compliance(llm, registry, QUESTIONS[args.lang], lang=args.lang, prompts=prompts,
                                  stops=stops, seeds=range(args.seeds), max_tokens=args.max_tokens,
                                  temperature=args.temperature)
    except TinyAgentError as exc:  # a reply too slow on a busy machine: say so, no traceback
        print(f"error: the measurement stopped: {exc} (on a busy machine try --threads 1 or a longer --timeout)",
              file=sys.stderr)
        return 1
    elapsed = time.perf_counter() - started
    print()
    print(format_table(summarize(runs, registry)))
    tokens = sum(int(run.usage.get("completion_tokens") or 0) for run in runs)
    print(f"\n{len(runs)} calls in {elapsed:.1f} s ({tokens} tokens generated, {tokens / elapsed:.0f} tokens/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
