"""One SQLite write transaction, as the shop, the session store and the user facts all write.

`BEGIN IMMEDIATE` takes SQLite's write lock before the first read, so what the block reads (is there a
refund for this order? which refund id comes next? is this fact already known?) cannot change under it
before it writes: two processes doing the same thing at once take turns instead of both finding the row
missing. Another writer waits for the lock (the connection's busy timeout). The connection must be opened
with `isolation_level=None`, so that the transactions are these and not Python's implicit ones.

On some errors SQLite ends the transaction itself: a full disk (SQLITE_FULL) or an I/O error rolls it back
before the error reaches Python. A ROLLBACK then would fail ("cannot rollback - no transaction is active") and
put its own error in place of the one that says what happened, so it is sent only while a transaction is open.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def immediate_transaction(conn: sqlite3.Connection,
                          execute: Callable[[str], object] | None = None) -> Iterator[sqlite3.Connection]:
    """Committed if the block ends, rolled back if it raises (or if the COMMIT fails). `execute(sql)` sends the
    BEGIN and the COMMIT, the two statements that may wait for another writer's lock (`conn.execute` by default;
    the shop's waits in slices, so that a stop can end the wait)."""
    execute = execute or conn.execute
    execute("BEGIN IMMEDIATE")
    try:
        yield conn
        execute("COMMIT")
    except BaseException:
        if conn.in_transaction:  # not when SQLite has rolled back already (a full disk)
            conn.execute("ROLLBACK")
        raise
