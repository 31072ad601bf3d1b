"""What each session memory costs over a long conversation, and how fast the session stores take turns (lesson 12).

    .venv/bin/python benchmarks/session_memory.py [--turns 24] [--appends 200] [--workers 4]
    .venv/bin/python benchmarks/session_memory.py --postgres postgresql://user:pw@host:5432/db
    .venv/bin/python benchmarks/session_memory.py --throwaway-postgres     # starts one (tests/postgres_server.py)

1. Memories. One customer conversation of `--turns` turns on the classroom model: the order and a fault in
   turn 1, then questions that name no order (where is it, the policy, the date, ...), and a refund in the last
   turn. Run with FullHistory(), SlidingWindow(3) and SummaryMemory(window=3), each on a fresh shop. Per turn:
   the tokens of history each memory gave the run and of the run's first request (cl100k_base via
   tinyagent.protocols.token_count), every few turns; then per memory the tokens of every request of the session added up,
   the summarizing calls, and whether the last turn's refund was written (it needs turn 1). Deterministic: the
   same table on every run.
2. Stores. `--appends` turns appended one by one to one session by one process, then `--workers` processes each
   appending `--appends / workers` turns to one shared session at once: milliseconds per append (wall time over
   all appends), and whether every turn arrived, numbered 1..n. SQLite in a temporary file; PostgreSQL with
   `--postgres URL` or `--throwaway-postgres`. Timings vary with the machine's load: read them as orders of size.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from tinyagent import FullHistory, LlmClient, ReActAgent, Session, SlidingWindow, SummaryMemory, fixed_clock
from tinyagent.command_options import OneLineParser, whole_number
from tinyagent.memory.session_store import SessionStoreError, Turn, open_session_store
from tinyagent.protocols.token_count import token_counter
from tinyagent.shop import Shop, shop_registry

COURSE_NOW = "2026-06-30T19:05:23"
FIRST = "Hi, my order is 88231. The vacuum won't charge any more."
MIDDLE = (
    "Where is it?",
    "What is your exchange policy?",
    "What's today's date?",
    "How long until my refund shows up in my account?",
    "Thanks!",
    "How do I get an invoice?",
)
LAST = "Then refund it."


def conversation(turns: int) -> list[str]:
    middle = [MIDDLE[i % len(MIDDLE)] for i in range(max(0, turns - 2))]
    return [FIRST, *middle, LAST]


def memories() -> dict[str, object]:
    return {"full history": FullHistory(), "window of 3": SlidingWindow(3), "summary + 3": SummaryMemory(window=3)}


def run_memories(turns: int) -> dict[str, tuple[Session, Shop]]:
    done = {}
    llm = LlmClient.classroom()
    for name, memory in memories().items():
        shop = Shop(":memory:", clock=fixed_clock(COURSE_NOW))
        session = Session(ReActAgent(llm, shop_registry(shop)), memory=memory)
        for question in conversation(turns):
            session.ask(question)
        done[name] = (session, shop)
    return done


def print_memories(done: dict[str, tuple[Session, Shop]], turns: int) -> None:
    print(f"1. Memories: {turns} turns on the classroom model; tokens by {token_counter().name}")
    print(f"{'':>6}" + "".join(f"{name:>26}" for name in done))
    print(f"{'turn':>6}" + "".join(f"{'history':>13}{'1st request':>13}" for _ in done))
    every = max(1, turns // 8)
    shown = sorted({1, *range(every, turns + 1, every), turns})
    for n in shown:
        cells = ""
        for session, _ in done.values():
            turn = session.turns()[n - 1]
            cells += f"{turn.history_tokens:>13}{turn.prompt_tokens:>13}"
        print(f"{n:>6}{cells}")
    print()
    for name, (session, shop) in done.items():
        sent = sum(turn.tokens_sent for turn in session.turns())
        memory = session.memory
        calls = getattr(memory, "calls", [])
        summary = ""
        if calls:
            used = sum(call.usage.get("total_tokens", 0) for call in calls)
            summary = f", {len(calls)} summarizing calls ({used} tokens by the model's usage)"
        refund = "written" if shop.refunds() else "NOT written (the order was forgotten)"
        print(f"{name:<13} all requests of the session: {sent:>7} tokens{summary}; last turn's refund {refund}")


WORKER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from tinyagent.memory.session_store import Turn, open_session_store

    target, worker, count, go = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
    with open_session_store(target) as store:
        while not go.exists():
            time.sleep(0.005)
        for i in range(count):
            store.append_turn("shared", Turn(f"worker {worker} turn {i}", "an answer of a few words"))
    """
)


def time_store(target: str, appends: int, workers: int, label: str) -> None:
    with open_session_store(target) as store:
        started = time.perf_counter()
        for i in range(appends):
            store.append_turn("alone", Turn(f"question {i}", "an answer of a few words"))
        alone = (time.perf_counter() - started) / appends * 1000
        ok_alone = [t.number for t in store.turns("alone")] == list(range(1, appends + 1))
    each = max(1, appends // workers)
    with tempfile.TemporaryDirectory() as folder:
        go = Path(folder) / "go"
        processes = [
            subprocess.Popen([sys.executable, "-c", WORKER, target, str(w), str(each), str(go)])
            for w in range(workers)
        ]
        try:
            time.sleep(1.0)  # let every worker connect; a late one only starts later
            started = time.perf_counter()
            go.touch()
            codes = [process.wait(timeout=600) for process in processes]
            shared = (time.perf_counter() - started) / (each * workers) * 1000
        finally:
            for process in processes:
                if process.poll() is None:
                    process.kill()
                    process.wait()
    with open_session_store(target) as store:
        numbers = [t.number for t in store.turns("shared")]
    ok_shared = codes == [0] * workers and numbers == list(range(1, each * workers + 1))
    print(f"{label:<11} one process: {alone:6.2f} ms per append ({appends} turns, all numbered: {ok_alone}); "
          f"{workers} processes on one session: {shared:6.2f} ms per append ({each * workers} turns, "
          f"none lost, numbered 1..{each * workers}: {ok_shared})")


def postgres_url(text: str) -> str:
    """--postgres: a PostgreSQL URL; anything else would open (and make) an SQLite file of that name."""
    if not text.startswith(("postgresql://", "postgres://")):
        raise argparse.ArgumentTypeError(f"--postgres must be a URL such as postgresql://user:password@host:5432/db, "
                                         f"got {text!r}")
    return text


def main() -> int:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=whole_number("--turns", 1000, "each turn is a model run", lowest=2),
                        default=24, help="turns of the long session (default 24)")
    parser.add_argument("--appends", type=whole_number("--appends", 100_000, "each is a write to the store"),
                        default=200, help="turns each store appends (default 200)")
    parser.add_argument("--workers", type=whole_number("--workers", 64, "each is a process of its own"), default=4,
                        help="processes appending to one session at once (default 4)")
    parser.add_argument("--postgres", metavar="URL", type=postgres_url,
                        help="also time a PostgreSQL store (an empty database)")
    parser.add_argument("--throwaway-postgres", action="store_true",
                        help="start a throwaway PostgreSQL server for the store timings (tests/postgres_server.py)")
    args = parser.parse_args()
    os.environ["TINYAGENT_OFFLINE"] = "1"

    print_memories(run_memories(args.turns), args.turns)
    print()
    print("2. Stores")
    with tempfile.TemporaryDirectory() as folder:
        time_store(str(Path(folder) / "sessions.db"), args.appends, args.workers, "SQLite")
    try:
        if args.postgres:
            time_store(args.postgres, args.appends, args.workers, "PostgreSQL")
        elif args.throwaway_postgres:
            sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
            from tests.postgres_server import throwaway_postgres

            with throwaway_postgres() as server:
                time_store(server.new_database(), args.appends, args.workers, "PostgreSQL")
        else:
            print("PostgreSQL  not timed: give --postgres URL or --throwaway-postgres")
    except SessionStoreError as error:
        print(f"PostgreSQL  {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
