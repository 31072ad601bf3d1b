"""The service under load: invoke and stream side by side against `python -m tinyagent serve` (lesson 19).

    .venv/bin/python benchmarks/serving.py [--clients 20] [--seconds 10] [--workers 1] [--only invoke|stream]
                                           [--model-url URL [--model NAME]]

Starts `python -m tinyagent serve` on a free loopback port with its own offline classroom model (in the service's
process, as `serve` starts it without a provider) or, with `--model-url`, the model served there (say a `python -m
tinyagent classroom --port 8000` in another terminal: the model's work then out of the service's process, as a real
provider's is), and a throwaway shop and session store, then runs `--clients` threads that each, until `--seconds`
have passed, send the seed's two questions in turn (the refund, 5 rounds; the parcel, 3 rounds) to POST /agent/invoke,
and, against the same service, for as long again, read the same runs from POST /agent/stream to their `end` event. The
two take turns in slices of 2.5 s (invoke, stream, invoke, ...), and the stream's throughput is printed as a ratio of
invoke's from the same run (the baseline): the load of the machine, which moves both, mostly cancels out. Each request
is a whole agent run: every round a model call from the service to the classroom model over HTTP, the tools on the
shop's SQLite file, a turn appended to the session store. Prints, for each, the requests that finished, the errors
(any status but 200, a broken connection, a stream without its `end`, a run whose answer says `"ok": false`:
the model could not be reached, say), the throughput and the latency percentiles
(p50/p95/p99, nearest rank) and the CPU the service used a run (user + system, its process and workers, read from
/proc where there is one): the steadier figure of what a run costs it, as the throughput also depends on what else the
machine does.

The classroom model answers at once (no pace), so the figures measure the service itself and the agent's own work
around the model, on this machine: they swing with its load (2 cores shared with other work when they were taken).
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests

from tinyagent.api_url import is_loopback, normalize_chat_url
from tinyagent.command_options import OneLineParser, number_of_seconds, whole_number
from tinyagent.errors import ConfigurationError

QUESTIONS = ("我上周买的扫地机不回充了，修不好我想退。订单号 88231。", "帮我看看订单 88231 的快递到哪了。")
NOW = "2026-06-30T19:05:23"
SLICE_SECONDS = 2.5  # invoke and stream take turns in slices this long


def start_service(folder: Path, workers: int, model_url: str | None = None,
                  model: str = "classroom") -> tuple[subprocess.Popen, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TINYAGENT_")}
    if model_url:  # a loopback model needs no key (settings.py)
        env.update(TINYAGENT_API_URL=model_url, TINYAGENT_MODEL=model)
    else:
        env["TINYAGENT_OFFLINE"] = "1"
    process = subprocess.Popen(
        [sys.executable, "-m", "tinyagent", "serve", "--port", "0", "--workers", str(workers), "--now", NOW,
         "--db", str(folder / "shop.sqlite3"), "--session-store", str(folder / "sessions.sqlite3"),
         "--auto-approve"],  # the refund question: no person at hand to say yes
        env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    banner = process.stdout.readline()
    found = re.search(r"http://[^/\s]+", banner)
    if not found:
        process.kill()
        raise SystemExit(f"error: the service did not start: {banner!r}")
    url = found.group(0)
    for _ in range(600):  # workers start after the banner: wait until one answers
        try:
            requests.get(url + "/health", timeout=5)
            return process, url
        except requests.ConnectionError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit("error: the service never answered /health")


def one_request(session: requests.Session, url: str, question: str, stream: bool) -> str:
    """One whole run; "" when it ended well, else what went wrong. Ending well is status 200 and an answer that says
    `"ok": true` (for a stream, in its `end` event): the service answers 200 with `"ok": false` and a reason
    (`llm_error` when the model could not be reached, `max_steps`, ...) when the run itself failed."""
    if not stream:
        response = session.post(url + "/agent/invoke", json={"query": question}, timeout=120)
        if response.status_code != 200:
            return f"status {response.status_code}"
        return failed_run(response.json())
    with session.post(url + "/agent/stream", json={"query": question}, stream=True, timeout=120) as response:
        if response.status_code != 200:
            return f"status {response.status_code}"
        event = ""
        for line in response.iter_lines(decode_unicode=True):
            if line.startswith("event: "):
                event = line.removeprefix("event: ")
            elif line.startswith("data: ") and event in ("end", "error"):
                data = json.loads(line.removeprefix("data: "))
                return failed_run(data) if event == "end" else f"error event ({data['error']['code']})"
        return "a stream without its end"


def failed_run(answer: dict) -> str:
    """"" for an answer that says its run ended well, else the run's reason (say llm_error)."""
    return "" if answer.get("ok") is True else str(answer.get("reason") or "a run that did not end well")


def client(url: str, until: float, stream: bool, latencies: list[float], errors: list[str],
           ends: list[float]) -> None:
    """Ask, one run after the other, until `until`; the last run ends a little later, and `ends` gets that moment."""
    with requests.Session() as session:
        turn = 0
        while time.monotonic() < until:
            question = QUESTIONS[turn % 2]
            turn += 1
            started = time.perf_counter()
            try:
                why = one_request(session, url, question, stream)
            except requests.RequestException as exc:
                why = type(exc).__name__
            if why:
                errors.append(why)
            else:
                latencies.append(time.perf_counter() - started)
    ends.append(time.monotonic())


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=whole_number("--clients", 1000, "each client is a thread with its own "
                        "connection"), default=20, help="clients at once (default 20)")
    parser.add_argument("--seconds", type=number_of_seconds("--seconds", 3600), default=10.0,
                        help="how long they keep asking, each way (default 10)")
    parser.add_argument("--workers", type=whole_number("--workers", 64, "each worker is a process with its own "
                        "threads; 2 cores need few"), default=1, help="the service's worker processes (default 1)")
    parser.add_argument("--only", choices=("invoke", "stream"), help="measure one way only (no ratio)")
    parser.add_argument("--model-url", help="the model the service asks, served elsewhere on this machine, e.g. "
                        "http://127.0.0.1:8000/v1/chat/completions (default: the service's own classroom model)")
    parser.add_argument("--model", default="classroom", help="the model's name at --model-url (default classroom)")
    args = parser.parse_args(argv)
    if args.model_url is not None:
        try:
            args.model_url = normalize_chat_url(args.model_url)  # as the service reads TINYAGENT_API_URL
        except ConfigurationError as exc:
            print(f"error: --model-url: {exc}", file=sys.stderr)
            return 2
        if not is_loopback(args.model_url):
            print(f"error: --model-url must be on this machine (the service sends it no key), got "
                  f"{args.model_url!r}", file=sys.stderr)
            return 2
    ways = (args.only,) if args.only else ("invoke", "stream")
    model = f"model {args.model!r} at {args.model_url}" if args.model_url else "the service's own classroom model"
    print(f"{args.clients} clients for {args.seconds:g} s each way, {args.workers} worker(s), {model} "
          f"(each request a whole agent run: 3 or 5 rounds); load average {os.getloadavg()[0]:.1f} before")
    throughput: dict[str, float] = {}
    failed = False
    with tempfile.TemporaryDirectory() as folder:
        process, url = start_service(Path(folder), args.workers, args.model_url, args.model)
        try:
            # In turns, a slice of each at a time, so that the machine's load, which moves as the run goes on,
            # weighs on both alike (one after the other, a busy spell would fall on one of them only).
            slices = max(1, round(args.seconds / SLICE_SECONDS))
            results = {way: ([], [], 0.0) for way in ways}
            cpu = dict.fromkeys(ways, 0.0)
            for _ in range(slices):
                for way in ways:
                    before = service_cpu_seconds(process.pid)
                    done, errors, elapsed = measure(url, args.clients, args.seconds / slices, way == "stream")
                    cpu[way] += service_cpu_seconds(process.pid) - before
                    so_far = results[way]
                    results[way] = (so_far[0] + done, so_far[1] + errors, so_far[2] + elapsed)
            for way, (done, errors, elapsed) in results.items():
                throughput[way] = len(done) / elapsed
                failed = failed or bool(errors)
                report(way, done, errors, elapsed)
                if cpu[way] and done:
                    print(f"  the service's CPU: {cpu[way] / len(done) * 1000:.1f} ms a run")
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(60)
    if len(throughput) == 2:
        print(f"stream / invoke throughput: {throughput['stream'] / throughput['invoke']:.2f}x")
    return 1 if failed else 0


def service_cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) the service's process and its workers have used so far; 0 without /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return 0.0
    own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return own + sum(service_cpu_seconds(int(child)) for child in children)


def measure(url: str, clients: int, seconds: float, stream: bool) -> tuple[list[float], list[str], float]:
    """Latencies of the runs that ended well, the errors, and the seconds they took: each client asks without a pause
    until `seconds` have passed and then finishes its last run, so its runs took from the start to that end. The
    seconds returned are the mean of those (the slowest client's last run alone would stand for all of them)."""
    latencies: list[float] = []
    errors: list[str] = []
    ends: list[float] = []
    started = time.monotonic()
    threads = [threading.Thread(target=client, args=(url, started + seconds, stream, latencies, errors, ends))
               for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies, errors, sum(ends) / len(ends) - started


def report(way: str, latencies: list[float], errors: list[str], elapsed: float) -> None:
    print(f"POST /agent/{way}")
    print(f"  requests finished: {len(latencies)}   errors: {len(errors)}"
          + (f" ({', '.join(sorted(set(errors)))})" if errors else ""))
    print(f"  throughput: {len(latencies) / elapsed:.1f} runs/s ({elapsed:.1f} s of runs a client)")
    if latencies:
        print(f"  latency: p50 {percentile(latencies, 50):.2f} s   p95 {percentile(latencies, 95):.2f} s   "
              f"p99 {percentile(latencies, 99):.2f} s   max {max(latencies):.2f} s")


if __name__ == "__main__":
    sys.exit(main())
