"""A whole room on one classroom server: N learners run the refund scenario at the same time.

    .venv/bin/python benchmarks/classroom_room.py [--learners 60] [--runs 3] [--processes 2]

The server runs as its own process, started the way a teacher starts it
(`python -m tinyagent classroom`). In a real room every learner has a kernel of their own, so the
simulated learners are spread over `--processes` worker processes (threads inside each); each has
its own in-memory shop, `ReActAgent` and `LlmClient` (one keep-alive connection, as a notebook keeps
its `llm`), and runs the seed's refund request end to end `--runs` times (5 model calls each). All learners start together. Printed: completions per second,
latency per completion (p50/p95/p99, measured by the client as the agent saw it), the time for the
whole room, the CPU time of server and learners, and errors (a run that did not end with the shop's
real refund id counts as one).

A room working through the same notebook sends identical requests, which the server answers from
its answer cache after the first time; `--distinct` gives every learner a slightly different
request, so every answer is computed.

Targets on the 2-core course machine: zero errors, the room done in under 10 s, p95 under 100 ms.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import resource
import statistics
import subprocess
import sys
import threading
import time

import requests

from tinyagent import LlmCall, LlmClient, ReActAgent, fixed_clock
from tinyagent.command_options import OneLineParser, whole_number
from tinyagent.hosting.address import quiet_port_run
from tinyagent.shop import Shop, shop_registry

REFUND = "我上周买的扫地机不回充了，修不好我想退。订单号 88231。"


def start_room_server(port: int) -> subprocess.Popen:
    server = subprocess.Popen(
        [sys.executable, "-m", "tinyagent", "classroom", "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if requests.get(f"http://127.0.0.1:{port}/v1/models", timeout=1).ok:
                return server
        except requests.ConnectionError:
            time.sleep(0.05)
    server.kill()
    raise SystemExit("the classroom server did not start within 20 s")


def learner(url: str, runs: int, latencies: list, errors: list, question: str) -> None:
    clock = fixed_clock("2026-06-30T19:05:23")
    llm = LlmClient(url, "classroom", "classroom")  # one per learner, as a notebook keeps its `llm`
    for run in range(runs):
        try:
            with Shop(":memory:", clock=clock) as shop:
                agent = ReActAgent(llm, shop_registry(shop, clock))
                result = agent.run(question.format(run=run + 1))
                latencies.extend(e.latency_s for e in result.trace.of_type(LlmCall))
                refunds = shop.refunds()
                if result.reason != "final_answer" or len(refunds) != 1 or refunds[0]["refundId"] not in result.answer:
                    errors.append(f"unexpected end: {result.reason}")
        except Exception as exc:  # noqa: BLE001 - a benchmark counts every failure, whatever it is
            errors.append(f"{type(exc).__name__}: {exc}")


def worker(url: str, learners: int, runs: int, start, results, first: int, distinct: bool) -> None:
    """One learner process: `learners` threads that begin when every process is ready."""
    latencies: list[float] = []
    errors: list[str] = []
    questions = [REFUND + (f"我是第 {first + i} 位同学，第 {{run}} 次提问。" if distinct else "")
                 for i in range(learners)]
    threads = [threading.Thread(target=learner, args=(url, runs, latencies, errors, q)) for q in questions]
    start.wait()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    results.put((latencies, errors, usage.ru_utime + usage.ru_stime))


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def main() -> int:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", type=whole_number("--learners", 1000, "each is a thread with its own "
                        "connection"), default=60, help="learners in the room (default 60)")
    parser.add_argument("--runs", type=whole_number("--runs", 1000, "each is a whole refund run"), default=3,
                        help="refund scenarios per learner (5 completions each)")
    parser.add_argument("--processes", type=whole_number("--processes", 64, "2 cores need few"), default=2,
                        help="learner processes, at most one a learner (threads share the rest)")
    parser.add_argument("--distinct", action="store_true",
                        help="give every learner a slightly different request, so no answer comes from the "
                             "server's answer cache (by default all run the same lesson: identical requests)")
    args = parser.parse_args()

    port = quiet_port_run()  # told to a server that binds it once it has started
    server = start_room_server(port)
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    processes = min(args.processes, args.learners)  # a process without a learner would never reach the barrier
    shares = [args.learners // processes + (i < args.learners % processes) for i in range(processes)]
    start = mp.Barrier(processes + 1)
    results: mp.Queue = mp.Queue()
    firsts = [sum(shares[:i]) for i in range(len(shares))]
    workers = [mp.Process(target=worker, args=(url, n, args.runs, start, results, first, args.distinct))
               for n, first in zip(shares, firsts)]
    try:
        for w in workers:
            w.start()
        start.wait()
        began = time.perf_counter()
        collected = [results.get() for _ in workers]
        room_s = time.perf_counter() - began
        for w in workers:
            w.join()
    finally:
        server.terminate()  # SIGTERM: the server stops cleanly and exits 0
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()  # never leave it behind
            server.wait()
    server_cpu = sum(resource.getrusage(resource.RUSAGE_CHILDREN)[:2])

    latencies = [x for lat, _, _ in collected for x in lat]
    errors = [x for _, err, _ in collected for x in err]
    learner_cpu = sum(cpu for _, _, cpu in collected)
    n = len(latencies)
    print(f"classroom room benchmark: {args.learners} learners in {len(workers)} processes x {args.runs} "
          f"refund runs, {'distinct' if args.distinct else 'identical'} requests, cpus={os.cpu_count()}")
    print(f"  completions        {n}")
    print(f"  room finished in   {room_s:.2f} s   (target < 10 s)")
    print(f"  completions/s      {n / room_s:.0f}")
    if n:
        print(f"  latency p50        {statistics.median(latencies) * 1000:.1f} ms")
        print(f"  latency p95        {percentile(latencies, 95) * 1000:.1f} ms   (target < 100 ms)")
        print(f"  latency p99        {percentile(latencies, 99) * 1000:.1f} ms")
    print(f"  cpu: learners {learner_cpu:.2f} s, server and learners together {server_cpu:.2f} s")
    print(f"  errors             {len(errors)}   (target 0)")
    for line in sorted(set(errors))[:5]:
        print(f"    {line}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
