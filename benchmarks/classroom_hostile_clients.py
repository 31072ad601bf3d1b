"""Two hostile rooms for the classroom server: big distinct requests, and a burst of dead connections.

    .venv/bin/python benchmarks/classroom_hostile_clients.py [--requests 40] [--megabytes 7] [--connections 2000]

The server runs as its own process (`python -m tinyagent classroom --port 0`), as a teacher starts it.

1. Memory: the server's resident memory (VmRSS) before and after `--requests` distinct requests of
   `--megabytes` MB each. The answer cache must not keep what it was asked: its growth is bounded
   in bytes, not in entries.
2. Stall: `--connections` TCP connections are opened and left silent (each holds a server thread
   waiting for a request line), then all reset at once; then one ordinary request is timed. It
   must not wait for the dead connections to be dealt with.

Printed: RSS before/after (MB), and the
latency of the request after the burst (best of a few bursts, and the worst).
"""

from __future__ import annotations

import json
import re
import resource
import socket
import struct
import subprocess
import sys
import time

import requests

from tinyagent.command_options import OneLineParser, number, whole_number


def start_server() -> tuple[subprocess.Popen, int]:
    server = subprocess.Popen(
        [sys.executable, "-m", "tinyagent", "classroom", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    for line in server.stdout:
        found = re.search(r"TINYAGENT_API_URL=http://127\.0\.0\.1:(\d+)/", line)
        if found:
            return server, int(found[1])
    server.kill()
    raise SystemExit("the classroom server did not print its address")


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def big_requests(port: int, count: int, megabytes: float) -> None:
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    filler = "x" * int(megabytes * 1024 * 1024 - 200)
    with requests.Session() as session:
        for i in range(count):
            body = {"model": "classroom", "messages": [{"role": "user", "content": f"{i} {filler}"}]}
            response = session.post(url, data=json.dumps(body), timeout=300,
                                    headers={"Content-Type": "application/json"})
            if response.status_code != 200:
                print(f"  request {i}: {response.status_code} {response.text[:200]}")


def dead_connection_burst(port: int, connections: int) -> float:
    """Open `connections` silent connections, reset them all at once; seconds one request then takes."""
    sockets = []
    for _ in range(connections):
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close() sends RST
        sock.setblocking(False)
        try:
            sock.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        sockets.append(sock)
    time.sleep(1.0)  # let the server accept them (or let the backlog fill)
    for sock in sockets:
        sock.close()
    started = time.perf_counter()
    response = requests.get(f"http://127.0.0.1:{port}/v1/models", timeout=120)
    elapsed = time.perf_counter() - started
    assert response.status_code == 200
    return elapsed


def main() -> None:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=whole_number("--requests", 1000, "each is a big request"), default=40,
                        help="big distinct requests (default 40)")
    parser.add_argument("--megabytes", type=number("--megabytes", 0, 8, "a number of megabytes", above=True),
                        default=7.0, help="the size of each (default 7; the server refuses a body above 8 MiB)")
    parser.add_argument("--connections", type=whole_number("--connections", 50_000, "each holds a file "
                        "descriptor and a server thread"), default=2000,
                        help="dead connections in a burst (default 2000)")
    parser.add_argument("--bursts", type=whole_number("--bursts", 100, "the best and worst of a few"), default=3,
                        help="bursts of dead connections (default 3)")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and args.connections + 256 > hard:
        parser.error(f"--connections {args.connections}: this process may open {hard} files at most (ulimit -Hn), "
                     "and a few hundred go to other things")
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, args.connections + 256)), hard))

    server, port = start_server()
    try:
        requests.get(f"http://127.0.0.1:{port}/v1/models", timeout=60)
        before = rss_mb(server.pid)
        started = time.perf_counter()
        big_requests(port, args.requests, args.megabytes)
        after = rss_mb(server.pid)
        print(f"memory: {args.requests} distinct {args.megabytes:g} MB requests in "
              f"{time.perf_counter() - started:.1f} s; server RSS {before:.0f} MB -> {after:.0f} MB")

        stalls = [dead_connection_burst(port, args.connections) for _ in range(args.bursts)]
        print(f"stall: a request right after {args.connections} dead connections took "
              f"{min(stalls) * 1000:.0f} ms at best, {max(stalls) * 1000:.0f} ms at worst "
              f"({args.bursts} bursts)")
    finally:
        server.kill()
        server.wait()
        server.stdout.close()


if __name__ == "__main__":
    main()
