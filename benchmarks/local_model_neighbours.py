"""The real local model beside other learners' (lessons 08, 18, 23 and A1 on a shared machine): how many threads?

    .venv/bin/python benchmarks/local_model_neighbours.py [--kernels 2] [--replies 9] [--tokens 120]

Each learner's kernel that reaches a real-model cell starts its own llama.cpp server (`ensure_local_model`), with
one generating thread per core (up to 4) unless TINYAGENT_LOCAL_MODEL_THREADS says otherwise. On a JupyterHub the
room's kernels share the machine's cores. This starts `--kernels` processes at once, each with its own server asking
`--replies` replies of `--tokens` tokens (a fixed question, a seed per reply), first with the default threads and
then with TINYAGENT_LOCAL_MODEL_THREADS=1, then one process alone each way, and prints each way's slowest process's
wall time and the ratios, all from this one run. Needs the `local` extra (make setup).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from tinyagent.command_options import OneLineParser, whole_number
from tinyagent.local_model import THREADS_VARIABLE, local_model_available

ONE_KERNEL = """
import sys
from tinyagent.local_model import ensure_local_model
llm = ensure_local_model().client(read_timeout=900, total_timeout=900)
for seed in range(int(sys.argv[1])):
    llm.chat([{"role": "user", "content": "Tell me about the robot vacuum I bought last week."}],
             max_tokens=int(sys.argv[2]), temperature=0.7, seed=seed)
"""


def kernels_at_once(count: int, replies: int, tokens: int, threads: str | None) -> float:
    """Seconds until the last of `count` processes, started together, has its replies."""
    env = {k: v for k, v in os.environ.items() if k != THREADS_VARIABLE}
    if threads is not None:
        env[THREADS_VARIABLE] = threads
    started = time.monotonic()
    processes = [subprocess.Popen([sys.executable, "-c", ONE_KERNEL, str(replies), str(tokens)], env=env)
                 for _ in range(count)]
    try:
        for process in processes:
            if process.wait(1800) != 0:
                raise SystemExit("error: a kernel's replies failed (see above)")
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
    return time.monotonic() - started


def main() -> None:
    parser = OneLineParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernels", type=whole_number("--kernels", 16, "each loads the model"), default=2)
    parser.add_argument("--replies", type=whole_number("--replies", 100, "each takes seconds"), default=9)
    parser.add_argument("--tokens", type=whole_number("--tokens", 512, "the lessons ask for 120"), default=120)
    args = parser.parse_args()
    if not local_model_available():
        parser.error("the local model is not installed: run make setup")
    print(f"{os.cpu_count()} cores; {args.kernels} kernels at once, {args.replies} replies of {args.tokens} tokens "
          f"each; load average {os.getloadavg()[0]:.1f} before")
    times = {}
    for label, count, threads in (("at once, default threads", args.kernels, None),
                                  ("at once, 1 thread", args.kernels, "1"),
                                  ("alone, default threads", 1, None), ("alone, 1 thread", 1, "1")):
        times[label] = kernels_at_once(count, args.replies, args.tokens, threads)
        print(f"{label:<26} {times[label]:7.1f} s", flush=True)
    print(f"at once: default threads / 1 thread = "
          f"{times['at once, default threads'] / times['at once, 1 thread']:.2f}x the time")
    print(f"alone:   default threads / 1 thread = "
          f"{times['alone, default threads'] / times['alone, 1 thread']:.2f}x the time")


if __name__ == "__main__":
    main()
