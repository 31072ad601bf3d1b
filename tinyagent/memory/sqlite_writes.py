"""One SQLite write transaction, and the wait for another program's lock, as the shop, the session store and the
user facts all write.

`BEGIN IMMEDIATE` takes SQLite's write lock before the first read, so what the block reads (is there a
refund for this order? which refund id comes next? is this fact already known?) cannot change under it
before it writes: two processes doing the same thing at once take turns instead of both finding the row
missing. Another writer waits for the lock (`LockWait`, or the connection's busy timeout). The connection must be
opened with `isolation_level=None`, so that the transactions are these and not Python's implicit ones.

SQLite waits for a lock inside one C call, which neither Ctrl-C, SIGTERM nor `Connection.interrupt()` ends: a
statement waiting there held `serve` (and a Ctrl-C) for the whole busy timeout, 30 s. So a connection that a
program must be able to stop is opened with BUSY_SLICE_SECONDS as its busy timeout, and `LockWait.execute` tries
its statement again until the patience is spent, looking between two tries for a stop (`LockWait.stop_waiting`;
Python raises a Ctrl-C there too).

On some errors SQLite ends the transaction itself: a full disk (SQLITE_FULL) or an I/O error rolls it back
before the error reaches Python. A ROLLBACK then would fail ("cannot rollback - no transaction is active") and
put its own error in place of the one that says what happened, so it is sent only while a transaction is open.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

# How long a connection waits for a lock in one C call (its busy timeout, given to sqlite3.connect): the longest
# a stop or a Ctrl-C waits for a statement to give up.
BUSY_SLICE_SECONDS = 0.1


def primary_code(exc: sqlite3.Error) -> int:
    """SQLite's primary result code of `exc` (sqlite3.SQLITE_BUSY, ...): the low byte of its extended code."""
    return getattr(exc, "sqlite_errorcode", 0) & 0xFF


def is_busy(exc: sqlite3.Error) -> bool:
    """SQLITE_BUSY ("database is locked"): another connection held the lock past the busy timeout."""
    return primary_code(exc) == sqlite3.SQLITE_BUSY


def is_write_failure(exc: sqlite3.Error) -> bool:
    """SQLITE_FULL (the disk, or PRAGMA max_page_count, is full) or SQLITE_IOERR (with its extended codes): SQLite has
    rolled the transaction back, so nothing of the write was kept."""
    return primary_code(exc) in (sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL)


def was_moved(exc: sqlite3.Error) -> bool:
    """SQLITE_READONLY_DBMOVED: the file was moved or deleted since it was opened. SQLite then refuses every
    write in a read-only database's words ("attempt to write a readonly database"), which sent people to look at
    permissions; `sqlite_files.why_unusable` says what happened."""
    return getattr(exc, "sqlite_errorcode", 0) == sqlite3.SQLITE_READONLY_DBMOVED


def is_read_only(exc: sqlite3.Error) -> bool:
    """SQLITE_READONLY (with its extended codes; a file moved away is one of them, `was_moved`) or SQLITE_CANTOPEN (at
    a write, the journal beside the file cannot be created): the file, its folder or its disk cannot be written."""
    return primary_code(exc) in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN)


class LockWait:
    """How one connection's statements wait for another program's lock: `patience()` seconds in all (read at each
    wait, so that a test can set its module's timeout small), in slices of the connection's busy timeout, or until
    `stop_waiting()`. Then the last busy error is raised, as if the whole timeout had passed: each store says it in
    the shared words of `sqlite_files.why_unusable`."""

    def __init__(self, conn: sqlite3.Connection, patience: Callable[[], float]):
        self._conn = conn
        self._patience = patience
        self._stopped = threading.Event()

    def execute(self, sql: str, params: tuple = ()) -> list[tuple]:
        """The rows of `sql`, tried again while the database is busy. Only for a statement that may simply be
        tried again: BEGIN IMMEDIATE, COMMIT, the first read of a read transaction, or a read on its own."""
        give_up_at = time.monotonic() + self._patience()
        while True:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.OperationalError as exc:
                if not is_busy(exc) or self._stopped.is_set() or time.monotonic() >= give_up_at:
                    raise

    @property
    def patience(self) -> float | None:
        """The seconds a statement waits for another program's lock, which a busy file's error says
        (sqlite_files.why_unusable); None once `stop_waiting()` has cut the waits short: it waited no such time."""
        return None if self._stopped.is_set() else self._patience()

    def stop_waiting(self) -> None:
        """The program is stopping: a statement waiting for the lock gives up within BUSY_SLICE_SECONDS, and so
        does every later one. Call it from any thread (a signal's handler, a server's stop): it takes no lock."""
        self._stopped.set()


@contextmanager
def immediate_transaction(conn: sqlite3.Connection,
                          execute: Callable[[str], object] | None = None) -> Iterator[sqlite3.Connection]:
    """Committed if the block ends, rolled back if it raises (or if the COMMIT fails). `execute(sql)` sends the
    BEGIN and the COMMIT, the two statements that may wait for another writer's lock (`conn.execute` by default;
    a `LockWait`'s, so that a stop can end the wait)."""
    execute = execute or conn.execute
    try:
        # Inside the try: a Ctrl-C that arrives while SQLite runs the BEGIN is raised as the call returns, with the
        # transaction begun, and it must be rolled back too (else the connection stays in it, holding the lock).
        execute("BEGIN IMMEDIATE")
        yield conn
        execute("COMMIT")
    except BaseException:
        if conn.in_transaction:  # not when SQLite has rolled back already (a full disk)
            conn.execute("ROLLBACK")
        raise
