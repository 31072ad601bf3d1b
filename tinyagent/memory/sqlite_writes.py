"""One SQLite write transaction, as the shop, the session store and the user facts all write.

`BEGIN IMMEDIATE` takes SQLite's write lock before the first read, so what the block reads (is there a
refund for this order? which turn number comes next? is this fact already known?) cannot change under it
before it writes: two processes doing the same thing at once take turns instead of both finding the row
missing. Another writer waits for the lock (the connection's busy timeout). The connection must be opened
with `isolation_level=None`, so that the transactions are these and not Python's implicit ones.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def immediate_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """Committed if the block ends, rolled back if it raises."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
