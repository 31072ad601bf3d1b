"""Why nbval's kernels use Unix sockets in the tests (conftest.py): a kernel that loses a TCP port to another process.

    .venv/bin/python benchmarks/kernel_ports.py                 # both parts, 3 loops of 300 kernels each way
    .venv/bin/python benchmarks/kernel_ports.py --kernels 100   # fewer

jupyter_client picks a kernel's five TCP ports by binding port 0 and letting go; the kernel binds them a moment
later. Part 1 holds one channel's port in this process before the kernel starts, channel by channel, and says what
the kernel does: it dies (nbval then fails the notebook at once) or stays alive and never answers (nbval waits out
its startup timeout, 600 s in pyproject.toml, then fails every cell). Part 2 starts kernels as nbval does, in
several loops at once, first on TCP and then on Unix sockets in a folder of their own (conftest.py's
`start_kernel_on_unix_sockets`), and counts the ones that never became ready. Beside them, as in a test run where
the tests start hundreds of servers on ports the system picks, another process keeps listening on new ports
(from the range a kernel's ports come from); `--churn 0` turns it off.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import socket
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from jupyter_client import KernelManager
from nbval.kernel import NbvalKernelspecManager, start_new_kernel

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from conftest import start_kernel_on_unix_sockets
from tinyagent.command_options import OneLineParser, number, number_of_seconds, whole_number

NOTEBOOKS = ROOT / "notebooks"
CHANNELS = ("shell", "iopub", "stdin", "control", "hb")


def held_port(channel: str, timeout: float) -> str:
    """Start a kernel whose `channel` port this process already listens on; what happens to it."""
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    km = KernelManager(kernel_name="python3", kernel_spec_manager=NbvalKernelspecManager(), cache_ports=False,
                       **{f"{channel}_port": holder.getsockname()[1]})
    with open(os.devnull, "w") as quiet:
        km.start_kernel(cwd=str(NOTEBOOKS), stderr=quiet)
    kc = km.client()
    kc.start_channels()
    began = time.monotonic()
    try:
        kc.wait_for_ready(timeout=timeout)
        return "starts and answers"
    except RuntimeError:
        waited = time.monotonic() - began
        return (f"stays alive and never answers ({waited:.0f} s)" if km.is_alive()
                else f"dies after {waited:.1f} s")
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        holder.close()


def start_and_stop(transport: str, sockets: str, timeout: float) -> str | None:
    """One kernel started as the tests start it (nbval's own start over TCP, conftest.py's over Unix sockets in
    `sockets`), a cell run, then stopped; why it failed, or None."""
    with open(os.devnull, "w") as quiet:
        try:
            if transport == "ipc":
                km, kc = start_kernel_on_unix_sockets(timeout, "python3", folder=sockets, stderr=quiet,
                                                      cwd=str(NOTEBOOKS))
            else:
                km, kc = start_new_kernel(timeout, "python3", stderr=quiet, cwd=str(NOTEBOOKS))
        except RuntimeError as exc:  # it died, or never answered
            return str(exc)
    try:
        kc.execute_interactive("1 + 1", timeout=timeout, output_hook=lambda message: None)
        return None
    except TimeoutError as exc:
        return str(exc)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def one_loop(job: tuple[str, str, float, int]) -> list[str]:
    transport, sockets, timeout, kernels = job
    return [why for why in (start_and_stop(transport, sockets, timeout) for _ in range(kernels)) if why]


def churn(per_second: float, stop) -> None:
    """Listen on a new port of the system's choosing every 1/per_second s, as a test's server does, keeping the
    latest 100 (each holds its port): now and then the system hands out a port a kernel was just given."""
    held = []
    while not stop.is_set():
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen()
        held.append(server)
        if len(held) > 100:
            held.pop(0).close()
        time.sleep(1 / per_second)
    for server in held:
        server.close()


def race(transport: str, loops: int, kernels: int, timeout: float, per_second: float
         ) -> tuple[int, list[str], float]:
    sockets = tempfile.mkdtemp(prefix="nbk-")
    stop = multiprocessing.Event()
    churning = multiprocessing.Process(target=churn, args=(per_second, stop), daemon=True)
    if per_second > 0:
        churning.start()
    began = time.monotonic()
    try:
        # Processes, not threads: within one process jupyter_client never hands out a port twice.
        with ProcessPoolExecutor(loops) as pool:
            found = pool.map(one_loop, [(transport, sockets, timeout, kernels)] * loops)
            failures = [why for whys in found for why in whys]
    finally:
        stop.set()
        if churning.is_alive():
            churning.join(10)
        shutil.rmtree(sockets, ignore_errors=True)
    return loops * kernels, failures, time.monotonic() - began


def main() -> int:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=whole_number("--kernels", 10_000, "each is a kernel started and stopped"),
                        default=300, help="kernels per loop and transport (default 300)")
    parser.add_argument("--loops", type=whole_number("--loops", 64, "each loop is a process of its own"), default=3,
                        help="loops starting kernels at once (default 3)")
    parser.add_argument("--churn", type=number("--churn", 0, 100_000, "a number of ports a second"), default=500,
                        help="new listening ports a second beside the kernels (default 500; 0: none)")
    parser.add_argument("--timeout", type=number_of_seconds("--timeout", 3600), default=60,
                        help="seconds a kernel may take to answer (default 60)")
    args = parser.parse_args()

    print("1. One channel's TCP port taken before the kernel binds it:")
    for channel in CHANNELS:
        print(f"   {channel:8} the kernel {held_port(channel, min(args.timeout, 20))}")
    print(f"2. {args.loops} loops of {args.kernels} kernels each, started, run and stopped as nbval does, "
          f"beside {args.churn:g} new listening ports a second:")
    for transport in ("tcp", "ipc"):
        started, failures, took = race(transport, args.loops, args.kernels, args.timeout, args.churn)
        print(f"   {transport}: {len(failures)} of {started} never became ready ({took:.0f} s)")
        for why in sorted(set(failures)):
            print(f"        {failures.count(why)} x {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
