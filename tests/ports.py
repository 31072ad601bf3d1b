"""Free loopback ports for the servers the tests start in other processes (JupyterLab, JupyterHub and its proxy,
PostgreSQL).

Such a server is told its port before it binds it, and a slow one (JupyterHub starts its proxy seconds later)
leaves a long gap between our look and its bind. A port from the kernel's ephemeral range (what `bind(("...", 0))`
gives) can be handed, in that gap, to any other socket on the machine: every outgoing connection takes its local
port from that range, and the tests running beside this one (pytest-xdist) make thousands. The proxy then logs
EADDRINUSE and goes on without its API, and the hub gives up 30 s later. So the ports here come from below that
range, where nothing is handed out unasked; each is still tried before it is given.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

LOWEST = 10000  # below: the well-known and registered ports other software may expect to have
LINUX_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
DEFAULT_EPHEMERAL_START = 32768  # Linux's default; macOS and Windows start at 49152, higher still


def ephemeral_start() -> int:
    """The first port the kernel hands out to sockets that do not ask for one."""
    try:
        return int(LINUX_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return DEFAULT_EPHEMERAL_START


def free_port_run(count: int = 1) -> int:
    """The first of `count` consecutive loopback ports, each free when tried, below the ephemeral range."""
    top = ephemeral_start() - count
    if top <= LOWEST:  # an unusual range that starts low: no quiet ports, take the kernel's
        return _kernel_run(count)
    for _ in range(200):
        first = random.randint(LOWEST, top)
        if _all_free(first, count):
            return first
    raise RuntimeError(f"no {count} consecutive free ports found between {LOWEST} and {top + count}")


def free_port() -> int:
    """One loopback port, free when tried, below the ephemeral range."""
    return free_port_run(1)


def _all_free(first: int, count: int) -> bool:
    held = []
    try:
        for port in range(first, first + count):
            sock = socket.socket()
            held.append(sock)
            sock.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        for sock in held:
            sock.close()


def _kernel_run(count: int) -> int:
    for _ in range(200):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            first = probe.getsockname()[1]
        if first + count <= 65536 and _all_free(first, count):
            return first
    raise RuntimeError(f"no {count} consecutive free ports found")
