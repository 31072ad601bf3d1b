"""Lesson 21's umbrella request in a process of its own, stopped at the outbox write until it is killed.

    python -c "from tests.outbox_sender import main; main()" DB_PATH inserted|committed

runs the reminder loop (the classroom model, its own weather service, a yes from the gate) on the store in
DB_PATH. When `sendWechat` writes the message, the process prints `INSERTED` (the row is inserted, the
transaction not yet committed) or `COMMITTED` (the COMMIT has returned) and then waits, holding where it is,
for the test to SIGKILL it: a crash at exactly that moment, on a real SQLite file.
"""

from __future__ import annotations

import sqlite3
import sys
import threading

from tinyagent import LlmClient, ReActAgent
from tinyagent.architectures.reminder_loop import (
    BUSY_TIMEOUT_SECONDS,
    ReminderStore,
    reminder_gate,
    reminder_registry,
)
from tinyagent.memory.sqlite_writes import LockWait
from tinyagent.toolkit.confirmation import GatedAct
from tinyagent.toolkit.weather_api import WeatherService

UMBRELLA = "will it rain in Beijing during my meeting tomorrow? remind me to take an umbrella"


class StopsAtCommit:
    """The store's connection, except that its COMMIT stops the process (before or after it commits)."""

    def __init__(self, conn: sqlite3.Connection, phase: str):
        self._conn = conn
        self._phase = phase

    def execute(self, sql: str, *args):
        if sql == "COMMIT" and self._phase == "inserted":
            self._hold("INSERTED")
        cursor = self._conn.execute(sql, *args)
        if sql == "COMMIT" and self._phase == "committed":
            self._hold("COMMITTED")
        return cursor

    def __getattr__(self, name: str):
        return getattr(self._conn, name)

    @staticmethod
    def _hold(marker: str) -> None:
        print(marker, flush=True)
        threading.Event().wait()  # until the SIGKILL


def main(argv: list[str] | None = None) -> None:
    path, phase = argv or sys.argv[1:]
    with WeatherService() as weather, ReminderStore(path) as store:
        store.conn = StopsAtCommit(store.conn, phase)  # after the store's own seeding has committed
        store._waits = LockWait(store.conn, lambda: BUSY_TIMEOUT_SECONDS)  # its BEGIN and COMMIT go through it too
        agent = ReActAgent(LlmClient.classroom(), reminder_registry(store, weather.base_url),
                           parts=[GatedAct(reminder_gate(ask=lambda request: True))])
        agent.run(UMBRELLA)
    print("FINISHED without reaching the outbox", flush=True)
