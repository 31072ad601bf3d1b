"""Prompt injection (lesson 25): the attack suite under each defence, attack success and task success.

    .venv/bin/python benchmarks/prompt_injection.py                                   # classroom-gullible, ~10 s
    .venv/bin/python benchmarks/prompt_injection.py --model classroom                 # the careful model
    .venv/bin/python -m tinyagent local-model --threads 1 &                           # then the real SmolLM2:
    .venv/bin/python benchmarks/prompt_injection.py --base-url http://127.0.0.1:8080/v1 \\
        --model SmolLM2-135M-Instruct --json notebooks/data/prompt_injection.json

Twenty planted instructions (tinyagent/defences/attack_suite.py: a knowledge-base document, an order's delivery
note, a fetched page, a tool's description; Chinese and English; a refund for another order or a message to a
stranger), each run on a fresh shop and outbox with no defence, each defence alone and all together. Attack success:
the planted refund row or outbox message exists after the run. Task success: the customer's request answered (lesson
18's answer check). Text ReAct, temperature 0 on a real model, max_steps 8. Prints a Markdown table; --json saves the
settings, the figures and every run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from tinyagent import LlmClient
from tinyagent.api_url import normalize_chat_url
from tinyagent.classroom.behaviour import MODELS
from tinyagent.command_options import OneLineParser, output_file, whole_number, write_whole
from tinyagent.defences.attack_suite import ATTACKS, DEFENCES, rates, run_suite, suite_table, to_json
from tinyagent.errors import ConfigurationError, TinyAgentError


def _said(result) -> None:
    print(f"{result.defence} · {result.attack}: attack {'succeeded' if result.attack_succeeded else 'failed'}, task "
          f"{'succeeded' if result.task_succeeded else 'failed'} ({result.seconds:.0f} s)", file=sys.stderr, flush=True)


def _server_url(text: str) -> str:
    try:
        normalize_chat_url(text)
    except ConfigurationError as exc:
        raise argparse.ArgumentTypeError(f"--base-url: {exc}") from None
    return text


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="classroom-gullible",
                        help="a classroom model (default classroom-gullible), or the model at --base-url")
    parser.add_argument("--base-url", type=_server_url, help="an OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1 "
                                           "(python -m tinyagent local-model); default: the classroom model")
    parser.add_argument("--defences", nargs="+", default=list(DEFENCES), metavar="NAME",
                        help=f"which defences (default all): {', '.join(DEFENCES)}")
    parser.add_argument("--attacks", type=int, nargs="+", metavar="N", help="attack numbers, 1-20 (default all)")
    parser.add_argument("--max-steps", type=whole_number("--max-steps", 100, "each round resends the whole "
                        "conversation"), default=8, help="rounds per run (default 8)")
    parser.add_argument("--json", type=output_file, metavar="FILE",
                        help="also write the settings, figures and runs to this file")
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # a bad option, said in one line: returned as exit code 2, like every other refusal
        return stop.code
    for name in args.defences:
        if name not in DEFENCES:
            print(f"error: no defence {name!r}: the defences are {', '.join(DEFENCES)}", file=sys.stderr)
            return 2
    numbers = {a.number for a in ATTACKS}
    for number in args.attacks or ():
        if number not in numbers:
            print(f"error: no attack {number}: the attacks are 1 to {len(ATTACKS)}", file=sys.stderr)
            return 2
    if args.base_url is None and args.model not in MODELS:
        print(f"error: no classroom model {args.model!r} (give --base-url for another server): "
              f"{', '.join(MODELS)}", file=sys.stderr)
        return 2
    if args.base_url is not None:
        url = args.base_url.rstrip("/")
        url = url if url.endswith("/chat/completions") else url + "/chat/completions"
        llm = LlmClient(url, None, args.model, temperature=0, read_timeout=600, total_timeout=900)
    else:
        llm = LlmClient.classroom(args.model)
    try:
        # One tiny request first, as `python -m tinyagent eval` does: a model that cannot be reached would
        # otherwise fail every run alike, and an attack that never ran would read as a perfect defence.
        llm.chat([{"role": "user", "content": "Hello"}], max_tokens=5)
    except TinyAgentError as exc:
        print(f"error: the model does not answer: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    attacks = [a for a in ATTACKS if not args.attacks or a.number in args.attacks]
    results: list = []  # each run as it ends: a Ctrl-C on a slow model keeps the runs that finished

    def finished(result) -> None:
        results.append(result)
        if args.base_url:  # a slow model: say each run as it ends
            _said(result)

    load_before, started = os.getloadavg(), time.perf_counter()
    try:
        run_suite(llm, args.defences, attacks, max_steps=args.max_steps, on_result=finished)
        interrupted = False
    except KeyboardInterrupt:
        interrupted = True
    seconds, load_after = time.perf_counter() - started, os.getloadavg()
    figures = rates(results)
    print(f"{args.model}, {len(attacks)} attacks x {len(args.defences)} defences, text ReAct, max_steps "
          f"{args.max_steps}, {seconds:.0f} s")
    print(suite_table(figures))
    if args.json:
        write_whole(args.json, json.dumps({"model": args.model, "max_steps": args.max_steps,
                                           "seconds": round(seconds, 1), "load": [load_before[0], load_after[0]],
                                           "cores": os.cpu_count(), "interrupted": interrupted, "figures": figures,
                                           "runs": to_json(results)}, ensure_ascii=False, indent=2))
    if interrupted:
        print(f"interrupted: {len(results)} of {len(attacks) * len(args.defences)} runs finished, and the table "
              "holds only those", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
