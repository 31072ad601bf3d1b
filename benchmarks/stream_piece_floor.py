"""The least a streamed piece can cost the service (lesson 19, issue 40): two steps no relay can skip.

    .venv/bin/python benchmarks/stream_piece_floor.py [--repeat 2000]

For every piece of text the model streams, the service must at least read the model's chunk (`json.loads` of its
`data:` line) and write its own `reply_delta` event as JSON (`Event.to_dict` and `streams.sse`, as the service
does). This runs the seed's refund question once against an in-process classroom model, asks the model again for
each round's reply as raw Server-Sent Events (read with lesson 14's `read_events`), and times those two steps on
every text chunk of the run, `--repeat` times over, in this one thread, with nothing else running: a floor, as the
service under load pays more for each (other threads, other caches). Prints the microseconds a piece for each step
and for both, and what they add up to for the whole run. docs/benchmarks.md (Serving) sets that against what a
streamed run may cost beyond an invoked one.
"""

from __future__ import annotations

import json
import sys
import time

import requests

from tinyagent import LlmCall, LlmClient, ReActAgent, ReplyDelta
from tinyagent.classroom.server import ClassroomServer
from tinyagent.clock import fixed_clock
from tinyagent.command_options import OneLineParser, whole_number
from tinyagent.protocols.streaming import DONE, read_events
from tinyagent.serving.streams import sse
from tinyagent.shop import Shop, shop_registry

REFUND = "我上周买的扫地机不回充了，修不好我想退。订单号 88231。"
NOW = "2026-06-30T19:05:23"


def text_chunks(room: ClassroomServer) -> list[tuple[str, str]]:
    """Every chunk that carries text in the refund question's run, asked again as a stream: its `data:` line as
    sent, and its text."""
    clock = fixed_clock(NOW)
    llm = LlmClient(room.chat_url, None, "classroom")
    with Shop(":memory:", clock=clock) as shop:
        trace = ReActAgent(llm, shop_registry(shop, clock)).run(REFUND).trace
    chunks = []
    for call in trace.of_type(LlmCall):
        body = llm.build_request(list(call.messages), stop=["Observation:"], stream=True)
        raw = requests.post(room.chat_url, json=body, timeout=30).content
        for event in read_events([raw]):
            if event.data == DONE:
                continue
            choices = json.loads(event.data)["choices"]  # [] in the usage chunk
            if choices and choices[0]["delta"].get("content"):
                chunks.append((event.data, choices[0]["delta"]["content"]))
    return chunks


def microseconds_each(step, items: list, repeat: int) -> float:
    started = time.perf_counter()
    for _ in range(repeat):
        for item in items:
            step(item)
    return (time.perf_counter() - started) / (repeat * len(items)) * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=whole_number("--repeat", 100_000, "2000 already gives a steady figure"),
                        default=2000, help="times over every piece (default 2000)")
    args = parser.parse_args(argv)
    with ClassroomServer() as room:
        pieces = text_chunks(room)
    chunks = [data for data, _ in pieces]
    deltas = [ReplyDelta(1, text, 0.0123) for _, text in pieces]
    event_id = "3q2-7wEm9P0aXcKQnVvYtA.4"  # as long as the service's ids
    read = microseconds_each(json.loads, chunks, args.repeat)
    write = microseconds_each(lambda delta: sse(delta.kind, delta.to_dict(), event_id), deltas, args.repeat)
    print(f"the refund run, streamed: {len(chunks)} pieces of text; each timed {args.repeat} times, in one thread")
    print(f"  read the model's chunk (json.loads):        {read:6.2f} us a piece")
    print(f"  write the reply_delta event (to_dict, sse): {write:6.2f} us a piece")
    print(f"  both: {read + write:.2f} us a piece, {(read + write) * len(chunks) / 1000:.2f} ms for the run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
