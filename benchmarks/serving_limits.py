"""The service stopping with refunds waiting, and one client holding many slow connections (lesson 19; issue 37).

    .venv/bin/python benchmarks/serving_limits.py [--waiting 30] [--slow 600] [--signal TERM|INT]

Stop: starts `python -m tinyagent serve` (offline classroom model, a throwaway shop) on a free loopback port, opens
`--waiting` streamed refunds and reads each until its approval request (nobody answers), sends the signal, and prints
the seconds from the signal to the exit, the exit code, how many tracebacks stderr holds, and how many streams ended with
their refund declined and an `end` event (the rest were cut).

Load: starts it again with `--header-timeout 600` (so nothing is cut while it runs), opens `--slow` connections from
127.0.0.1 that each send a partial request and stall, and times 20 requests of another client (127.0.0.2, another
loopback address: Linux only) to GET /health before and while they are held: median milliseconds, and what went
wrong if anything did.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests

from tinyagent.command_options import OneLineParser, whole_number

REFUND = "我上周买的扫地机不回充了，修不好我想退。订单号 88231。"
NOW = "2026-06-30T19:05:23"


def start_service(folder: Path, *options: str) -> tuple[subprocess.Popen, str, list[str]]:
    """The service, its URL, and its stderr as it comes (read by a thread: a full pipe would stop the service)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TINYAGENT_")}
    env["TINYAGENT_OFFLINE"] = "1"
    process = subprocess.Popen(
        [sys.executable, "-m", "tinyagent", "serve", "--port", "0", "--now", NOW, "--db", str(folder / "shop.sqlite3"),
         "--session-store", str(folder / "sessions.sqlite3"), *options],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    found = re.search(r"http://[^/\s]+", process.stdout.readline())
    if not found:
        process.kill()
        raise SystemExit(f"error: the service did not start: {process.stderr.read()[-500:]}")
    threading.Thread(target=process.stdout.read, daemon=True).start()  # the rest of the banner, never blocking it
    errors: list[str] = []
    threading.Thread(target=lambda: errors.extend(process.stderr), daemon=True).start()
    return process, found.group(0), errors


def read_stream(url: str, asked: threading.Event, events: list[tuple[str, dict]]) -> None:
    try:
        with requests.post(url + "/agent/stream", json={"query": REFUND}, stream=True, timeout=300) as response:
            for block in response.iter_lines(decode_unicode=True, delimiter="\n\n"):
                if block.strip() and not block.startswith(":"):
                    fields = dict(line.split(": ", 1) for line in block.strip("\n").split("\n"))
                    events.append((fields["event"], json.loads(fields["data"])))
                    if fields["event"] == "approval_requested":
                        asked.set()
    except requests.RequestException as exc:
        events.append(("cut", {"error": repr(exc)}))
    finally:
        asked.set()


def measure_stop(waiting: int, signum: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        # Every stream comes from 127.0.0.1: as behind a proxy, one client's share is the whole service's, so that
        # all of them wait (with the default share, the 17th would be declined at once; approvals.py).
        process, url, errors = start_service(Path(folder), "--approval-timeout", "600",
                                             "--max-connections-per-client", "512")
        try:
            streams = [(threading.Event(), []) for _ in range(waiting)]
            readers = [threading.Thread(target=read_stream, args=(url, *s), daemon=True) for s in streams]
            for reader in readers:
                reader.start()
            for asked, _ in streams:
                asked.wait(300)
            started = time.monotonic()
            process.send_signal(signum)
            code = process.wait(300)
            seconds = time.monotonic() - started
            for reader in readers:
                reader.join(300)
        finally:
            if process.poll() is None:
                process.kill()
    ended = sum(any(k == "approval_decided" and d["outcome"] != "approved" for k, d in events)
                and events[-1][0] == "end" for _, events in streams)
    print(f"stop ({signal.Signals(signum).name}) with {waiting} streamed refunds waiting: exit {code} after "
          f"{seconds:.2f} s; {''.join(errors).count('Traceback')} tracebacks; {ended} of {waiting} streams ended with their "
          "refund declined and an end event")


def probe(host: str, port: int) -> str:
    times, failures = [], set()
    for _ in range(20):
        started = time.perf_counter()
        other = http.client.HTTPConnection(host, port, timeout=30, source_address=("127.0.0.2", 0))
        try:
            other.request("GET", "/health")
            answer = other.getresponse()
            answer.read()
            if answer.status != 200:
                failures.add(f"HTTP {answer.status}")
        except OSError as exc:
            failures.add(type(exc).__name__)
        finally:
            other.close()
        times.append(time.perf_counter() - started)
    return f"median {statistics.median(times) * 1000:.1f} ms, " + (", ".join(sorted(failures)) or "every one 200")


def measure_slow_connections(slow: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        process, url, _ = start_service(Path(folder), "--header-timeout", "600")
        host, port = url.removeprefix("http://").rsplit(":", 1)
        held: list[socket.socket] = []
        try:
            print(f"another client, nothing held: {probe(host, int(port))}")
            for _ in range(slow):
                sock = socket.create_connection((host, int(port)), timeout=30, source_address=("127.0.0.1", 0))
                held.append(sock)
                try:
                    sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
                except OSError:
                    pass
            try:  # taken in order: once the last one is answered (refused), all of them were
                while held[-1].recv(4096):
                    pass
            except OSError:
                pass
            print(f"another client, {slow} slow connections from 127.0.0.1 held: {probe(host, int(port))}")
        finally:
            for sock in held:
                sock.close()
            process.kill()
            process.wait()


def main() -> None:
    parser = OneLineParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--waiting", type=whole_number("--waiting", 1000, "each is a stream and a thread"),
                        default=30, help="streamed refunds waiting when the signal comes (default 30)")
    parser.add_argument("--slow", type=whole_number("--slow", 10_000, "each holds a file descriptor"), default=600,
                        help="slow connections one client holds (default 600)")
    parser.add_argument("--signal", choices=("TERM", "INT"), default="TERM")
    args = parser.parse_args()
    measure_stop(args.waiting, getattr(signal, f"SIG{args.signal}"))
    measure_slow_connections(args.slow)


if __name__ == "__main__":
    main()
