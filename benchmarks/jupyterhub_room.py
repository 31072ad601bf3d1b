"""A room on JupyterHub: N learners' servers started at once, then lesson 06 run in every one at once.

    .venv/bin/python benchmarks/jupyterhub_room.py [--learners 20] [--hub-log FILE]
    .venv/bin/python benchmarks/jupyterhub_room.py --find-max [--learners 20] [--step 10]

The hub is the course's own deploy/jupyterhub/jupyterhub_config.py on loopback (tests/hub_server.py
starts it in a temporary folder, with the proxy from npm; each learner a system account of their own, so
it runs as root). All N servers are requested through the hub's REST API together, each request in a thread
of its own (at most 64 threads) (the hub answers a start only when the server is up or after 10 s); once every one is ready,
every learner runs lesson 06 top to bottom in a kernel of their own, all at the same time, through the
Jupyter server API (a websocket per kernel, as JupyterLab uses), against the classroom model the hub runs
as a service. Printed:

  - the time until every server is up, and until every notebook has finished (both from the moment the
    servers were requested);
  - errors, target zero: a server that did not start, or a notebook with an error output, anything on
    stderr, or without lesson 06's refund trace (5 rounds, refund RF202606300001);
  - memory per learner: the RSS of their server and kernel together, measured as each finished (the
    kernel still running), and their CPU time; the hub, its proxy and the classroom model's memory;
  - the load average before and after (other work on the machine slows every figure);
  - on errors, the lines of the hub's log that explain them (--hub-log keeps the whole log).

--find-max searches for the largest N whose room finishes (every notebook done, no error) in under
5 minutes: N doubles from --learners while rooms pass; then the gap between the last N that passed and
the first that failed is bisected until it is --step learners wide. A room is stopped and counted as
failed as soon as it passes 5 minutes. N is never raised past what the free memory holds (measured
per learner in each room, with 30% to spare).
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/hub_server.py

import psutil  # comes with Jupyter

from tests.hub_server import ClassroomHub, hub_missing, run_notebook
from tinyagent.command_options import OneLineParser, whole_number

LESSON = "notebooks/06_react_loop.ipynb"
LIMIT_S = 300.0  # "under 5 minutes"
MiB = 1024 * 1024
# Words in the hub's log that explain an error: a websocket closed, a process that died, a traceback.
CLUES = ("WebSocket", "websocket", "ping timeout", "Traceback", "[E ", "ERROR", "Killed", "exited", "Timeout")


def room(learners: int, limit_s: float = LIMIT_S, keep_log: Path | None = None) -> dict:
    """One room of `learners`: start their servers, run the lesson in all; return the figures."""
    names = [f"learner{i:03d}" for i in range(1, learners + 1)]
    errors: list[str] = []
    memory: dict[str, float] = {}
    cpu: dict[str, float] = {}
    finished: dict[str, float] = {}
    load_before = _load()
    with ClassroomHub(ready_timeout=180) as hub:
        services = _hub_processes(hub)
        hub.add_learners(names)
        began = time.monotonic()
        hub.start_servers(names)
        try:
            hub.wait_until_ready(names, timeout=limit_s)
        except TimeoutError as exc:
            return {"learners": learners, "load_before": load_before, "servers_up_s": None, "finished_s": None,
                    "errors": [f"servers: {str(exc).splitlines()[0]}"], "memory": {}, "cpu": {}, "services": {}}
        servers_up = time.monotonic() - began

        def learner(name: str) -> None:
            def measure() -> None:
                processes = hub.processes_of(name)
                memory[name] = sum(_safe(lambda p: p.memory_info().rss, p) for p in processes) / MiB
                cpu[name] = sum(_safe(lambda p: sum(p.cpu_times()[:2]), p) for p in processes)

            try:
                run = run_notebook(hub, name, LESSON, before_close=measure)
                problems = run.errors + [f"stderr: {t.strip()[:80]}" for t in run.stderr]
                if "final_answer 5 rounds" not in run.text or "RF202606300001" not in run.text:
                    problems.append("no refund trace")
                errors.extend(f"{name}: {p}" for p in problems)
            except Exception as exc:  # noqa: BLE001 - a benchmark counts every failure, whatever it is
                errors.append(f"{name}: {type(exc).__name__}: {exc}")
            finished[name] = time.monotonic() - began

        threads = [threading.Thread(target=learner, args=(n,), daemon=True) for n in names]
        for t in threads:
            t.start()
        deadline = began + limit_s
        for t in threads:
            t.join(timeout=max(deadline - time.monotonic(), 0.1))
        late = [n for n in names if n not in finished]
        # As at the limit: a late learner's kernel then dies with the hub, which is no news.
        at_limit = list(errors)
        if late:
            at_limit.append(f"{len(late)} notebooks not finished within {limit_s:.0f} s")
        if keep_log is not None:
            shutil.copyfile(hub.log_path, keep_log)
        # What the hub's log (the servers' logs too) said about a dropped connection or a failed start.
        clues = [line for line in hub.log_path.read_text(errors="replace").splitlines()
                 if any(word in line for word in CLUES)] if at_limit else []
        service_memory = {label: (_safe(lambda p: p.memory_info().rss, p) / MiB, _safe(lambda p: sum(p.cpu_times()[:2]), p))
                          for label, p in services.items()}
    return {"learners": learners, "load_before": load_before, "servers_up_s": servers_up,
            "finished_s": None if late else max(finished.values()),
            "errors": at_limit, "memory": memory, "cpu": cpu, "services": service_memory, "clues": clues}


def _hub_processes(hub: ClassroomHub) -> dict:
    """The hub itself, its proxy and the classroom model service, by what they run."""
    hub_process = psutil.Process(hub.process.pid)
    found = {"hub": hub_process}
    for child in hub_process.children(recursive=True):
        command = " ".join(_safe(lambda p: p.cmdline(), child) or [])
        if "configurable-http-proxy" in command:
            found["proxy"] = child
        elif "tinyagent classroom" in command:
            found["classroom model"] = child
    return found


def _safe(read, process):
    try:
        return read(process)
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return 0


def passed(figures: dict) -> bool:
    return not figures["errors"] and figures["finished_s"] is not None and figures["finished_s"] < LIMIT_S


def report(figures: dict) -> None:
    n = figures["learners"]
    print(f"room of {n} learners: lesson 06 in every kernel at once, cpus={os.cpu_count()}, "
          f"load average before {figures['load_before']}, after {_load()}")
    if figures["servers_up_s"] is None:
        print(f"  servers up         not within {LIMIT_S:.0f} s")
    else:
        print(f"  servers up         {figures['servers_up_s']:.1f} s   ({figures['servers_up_s'] / n:.2f} s a learner)")
    finished = figures["finished_s"]
    print(f"  notebooks finished {'not all' if finished is None else f'{finished:.1f} s'}   (target < {LIMIT_S:.0f} s)")
    print(f"  errors             {len(figures['errors'])}   (target 0)")
    for error in figures["errors"][:5]:
        print(f"    {error}")
    for clue in figures.get("clues", [])[:10]:
        print(f"    hub log: {clue[:160]}")
    memory = list(figures["memory"].values())
    if memory:
        print(f"  memory a learner   {statistics.median(memory):.0f} MiB median, {max(memory):.0f} MiB max "
              f"(RSS of server + kernel); {sum(memory) / 1024:.1f} GiB for the room")
        print(f"  CPU a learner      {statistics.median(figures['cpu'].values()):.1f} s median "
              f"(server start + kernel + lesson 06)")
    if figures["services"]:
        print("  shared             " + ", ".join(f"{k} {rss:.0f} MiB {cpu:.0f} s CPU"
                                                  for k, (rss, cpu) in figures["services"].items()))


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def find_max(start: int, step: int) -> None:
    """Double N while rooms pass, then bisect the gap down to `step` learners (see the module doc)."""
    free = psutil.virtual_memory().available / MiB
    good, bad, n, per_learner = 0, None, start, None
    while True:
        if per_learner and n * per_learner > 0.7 * free:
            n_cap = int(0.7 * free / per_learner)
            print(f"(N={n} would need about {n * per_learner / 1024:.1f} GiB: capped at {n_cap} by free memory)")
            if n_cap <= good:
                break
            n = n_cap
        figures = room(n)
        report(figures)
        if figures["memory"]:
            per_learner = max(figures["memory"].values())
        if passed(figures):
            good = n
            if bad is None and n < int(0.7 * free / (per_learner or 1)):
                n *= 2
            elif bad is None:
                break
        else:
            bad = n
        if bad is not None:
            if bad - good <= step:
                break
            n = (good + bad) // 2
        print()
    print(f"largest room that finished in under {LIMIT_S / 60:.0f} minutes: {good} learners"
          + (f" ({bad} did not)" if bad else " (memory, not time, stopped the search)"))


def main() -> int:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", type=whole_number("--learners", 500, "each is a Jupyter server and a kernel"),
                        default=20, help="learners in the room (default 20)")
    parser.add_argument("--find-max", action="store_true",
                        help="search for the largest room that finishes in under 5 minutes")
    parser.add_argument("--step", type=whole_number("--step", 500, "the gap between two room sizes"), default=10,
                        help="--find-max stops when the gap is this narrow")
    parser.add_argument("--hub-log", type=Path, help="copy the hub's log (with every server's) to this file")
    args = parser.parse_args()
    missing = hub_missing()
    if missing:
        print(f"error: cannot start JupyterHub here: {missing}", file=sys.stderr)
        return 2
    if args.find_max:
        find_max(args.learners, args.step)
        return 0
    figures = room(args.learners, keep_log=args.hub_log)
    report(figures)
    return 0 if passed(figures) else 1


if __name__ == "__main__":
    sys.exit(main())
