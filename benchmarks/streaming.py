"""Time to first token against the whole reply, streamed and not (lesson 14).

    .venv/bin/python benchmarks/streaming.py [--runs 5] [--tokens-per-second 40] [--prefill-tokens-per-second 500]
    .venv/bin/python benchmarks/streaming.py --local        # also the appendix's SmolLM2 on llama.cpp
    .venv/bin/python benchmarks/streaming.py --configured   # also the model in .env

The requests are the ones the agent really sends for the seed's refund question: each model call of one run
of `ReActAgent` on the shop (the first, a short step; the fourth, the refund decision, 138 tokens, one fewer than the final answer). Each is sent
`--runs` times, in turns, three ways: streamed (`open_stream`: the time to the first piece of text, and to
the whole reply) and plain (`chat`: the time to the whole reply). Then the whole refund run, streamed: the time
until the first words of round 1's Thought appear, against the time to the final answer. Medians.

The classroom model "types" instantly unless told a pace, which would make every figure here about zero. It is
started with `tokens_per_second` and `prefill_tokens_per_second` (ClassroomServer; docs/classroom-model.md): it
reads the prompt at the second pace, then sends each chunk of 3 tokens as it is typed at the first. The defaults,
40 and 500 tokens/s, are round figures for a small model on a laptop's CPU (`--local` measures the appendix's
SmolLM2; on the course's shared machine under load it read far slower than 500). So the classroom figures are set by the pace, by design: what they show is the shape (the first piece comes
after the prompt is read and one chunk is typed, the whole reply after every token), not a property of tinyagent.
`--local` gives the same measurements on a real model; its timings swing with the machine's load. llama.cpp keeps
the prompt it has just read and reuses it when the next request starts the same way (an agent's rounds do: each
prompt extends the last); a benchmark that sends one request five times would then time the reading once, so the
local model is asked not to (`cache_prompt: false`, a llama.cpp field), and every first piece includes the reading.
"""

from __future__ import annotations

import statistics
import sys
import time

from tinyagent import LlmCall, LlmClient, ReActAgent, ReplyDelta, load_settings
from tinyagent.classroom.server import ClassroomServer
from tinyagent.clock import fixed_clock
from tinyagent.command_options import OneLineParser, number, whole_number
from tinyagent.errors import TinyAgentError
from tinyagent.local_model import MAX_THREADS
from tinyagent.protocols.streaming import StreamedSend, open_stream
from tinyagent.shop import Shop, shop_registry

REFUND = "我上周买的扫地机不回充了，修不好我想退。订单号 88231。"
STOP = ["Observation:"]
CALLS = (1, 4)  # the model calls measured: the first, and the refund decision (one of the two longest replies)


class ColdPromptClient(LlmClient):
    """A client for llama.cpp that asks it to read every prompt afresh (`cache_prompt: false`)."""

    def build_request(self, messages: list[dict], **options) -> dict:
        return {**super().build_request(messages, **options), "cache_prompt": False}


def refund_agent(llm: LlmClient, **options) -> ReActAgent:
    clock = fixed_clock("2026-06-30T19:05:23")
    return ReActAgent(llm, shop_registry(Shop(":memory:", clock=clock), clock), **options)


def refund_requests(llm: LlmClient) -> list[list[dict]]:
    """The message lists of the refund run's model calls (on the unpaced classroom model: no time spent)."""
    calls = refund_agent(llm).run(REFUND).trace.of_type(LlmCall)
    return [list(calls[n - 1].messages) for n in CALLS]


def time_request(llm: LlmClient, messages: list[dict], runs: int, max_tokens: int | None) -> dict:
    """Medians over `runs`: time to the first piece and to the whole reply streamed, and the plain reply."""
    first, whole, plain, tokens = [], [], [], set()
    for _ in range(runs):
        stream = open_stream(llm, messages, stop=STOP, max_tokens=max_tokens)
        reply = stream.finish()
        first.append(reply.first_piece_s)
        whole.append(reply.latency_s)
        tokens.add(reply.usage.get("completion_tokens", "?"))
        started = time.perf_counter()
        llm.chat(messages, stop=STOP, max_tokens=max_tokens)
        plain.append(time.perf_counter() - started)
    return {
        "tokens": "/".join(str(t) for t in sorted(tokens, key=str)),
        "first": statistics.median(first),
        "whole": statistics.median(whole),
        "plain": statistics.median(plain),
    }


def time_whole_run(llm: LlmClient, runs: int, max_tokens: int | None) -> dict:
    """Medians over `runs` of the streamed refund run: the first piece of round 1, and the final answer."""
    first, whole, rounds = [], [], set()
    for _ in range(runs):
        started = time.perf_counter()
        seen = None
        run = refund_agent(llm, parts=[StreamedSend()], max_tokens=max_tokens).start(REFUND)
        for event in run:
            if seen is None and isinstance(event, ReplyDelta):
                seen = time.perf_counter() - started
        whole.append(time.perf_counter() - started)
        first.append(seen if seen is not None else float("nan"))
        rounds.add(run.trace.rounds)
    return {"first": statistics.median(first), "whole": statistics.median(whole),
            "rounds": "/".join(str(r) for r in sorted(rounds))}


def print_table(title: str, rows: list[tuple[str, dict]]) -> None:
    print(title)
    print(f"  {'request':28} {'reply tokens':>12} {'first piece':>12} {'whole, streamed':>16} "
          f"{'whole, plain':>13} {'first / whole':>14}")
    for name, r in rows:
        print(f"  {name:28} {r['tokens']:>12} {r['first']:>11.2f}s {r['whole']:>15.2f}s {r['plain']:>12.2f}s "
              f"{r['first'] / r['whole']:>13.0%}")


def measure(label: str, llm: LlmClient, requests: list[list[dict]], runs: int, max_tokens: int | None) -> None:
    rows = [(f"refund, model call {n}", time_request(llm, messages, runs, max_tokens))
            for n, messages in zip(CALLS, requests)]
    print_table(f"{label} (medians of {runs} runs)", rows)
    run = time_whole_run(llm, runs, max_tokens)
    print(f"  the whole refund run, streamed ({run['rounds']} rounds): first words of round 1 after "
          f"{run['first']:.2f} s, the final answer after {run['whole']:.2f} s ({run['first'] / run['whole']:.0%})")
    print()


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=whole_number("--runs", 1000, "each is a whole refund run"), default=5,
                        help="timed runs of each measurement (default 5)")
    parser.add_argument("--tokens-per-second", type=number("--tokens-per-second", 0, 100_000, "a pace", above=True),
                        default=40.0, help="the classroom model's typing pace")
    parser.add_argument("--prefill-tokens-per-second", default=500.0,
                        type=number("--prefill-tokens-per-second", 0, 1_000_000, "a pace", above=True),
                        help="the pace at which the classroom model reads the prompt")
    parser.add_argument("--local", action="store_true", help="also measure SmolLM2 on llama.cpp (make setup)")
    parser.add_argument("--threads", type=whole_number("--threads", MAX_THREADS, "1 suits a busy machine"), default=1,
                        help="llama.cpp threads for --local (default 1)")
    parser.add_argument("--configured", action="store_true", help="also measure the model in .env")
    parser.add_argument("--max-tokens", type=whole_number("--max-tokens", 32_768, "a cap on one reply"), default=160,
                        help="the cap on each reply of a real model (default 160; the classroom model's longest reply in the refund is 139 tokens)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # a bad option, said in one line: returned as exit code 2, like every other refusal
        return stop.code
    try:
        requests = refund_requests(LlmClient.classroom())
        with ClassroomServer(tokens_per_second=args.tokens_per_second,
                             prefill_tokens_per_second=args.prefill_tokens_per_second) as room:
            paced = LlmClient(room.chat_url, None, "classroom")
            measure(f"classroom model at {args.tokens_per_second:g} tokens/s, prompt read at "
                    f"{args.prefill_tokens_per_second:g} tokens/s", paced, requests, args.runs, None)
        if args.configured:
            llm = LlmClient.from_settings(load_settings(), read_timeout=600, total_timeout=900)
            measure(f"configured model {llm.model!r}", llm, requests, args.runs, args.max_tokens)
        if args.local:
            from tinyagent.local_model import start_local_model

            with start_local_model(threads=args.threads) as model:
                llm = ColdPromptClient(model.chat_url, model.api_key, model.model, read_timeout=600, total_timeout=900)
                measure(f"local model {llm.model!r} (llama.cpp)", llm, requests, args.runs, args.max_tokens)
    except (TinyAgentError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
