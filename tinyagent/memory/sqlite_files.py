"""Which file an SQLite store opens, and whether that file is the store's: what the shop, the session store, the user
facts and lesson 21's outbox share.

    conn = connect_file("sessions.db")        # always the file of that name (":memory:": a database in memory)
    foreign_tables(conn, columns_of(SCHEMA))   # the tables another program made: a store refuses such a file

This Python's SQLite reads a name that starts with "file:" as a URI even when asked not to: a store named
"file:sessions.db?mode=memory" kept its turns in memory, and lost them without a word when it closed. `connect_file`
names the file by a URI built from its path, whatever its name holds.

A store pointed at another program's file (the shop's `--db` given to the session store, the facts pointed at the
sessions) would write its tables beside that program's, and the file then held two programs' data that neither
expects. So each store looks at the tables a file holds before it writes anything, and refuses a file with tables
that are not its own, or a table of its own name with other columns (another program's `orders`, `sessions`).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

from tinyagent.memory.sqlite_writes import BUSY_SLICE_SECONDS


def file_uri(path: str | os.PathLike[str]) -> str:
    """The URI of the file `path` names: "?", "#" and "%" in its name are escaped, so they stay part of it."""
    return Path(path).resolve().as_uri()


def connect_file(path: str | os.PathLike[str], *, read_only: bool = False,
                 timeout: float = BUSY_SLICE_SECONDS) -> sqlite3.Connection:
    """A connection to the file `path` (":memory:": a fresh database in memory), as the stores use it.

    isolation_level=None leaves transactions to the store (sqlite_writes.immediate_transaction: Python's own would
    begin them late, after the reads); any thread may use it, since each store holds its own lock around it; and its
    busy timeout is one slice of a `LockWait`, so that a stop or a Ctrl-C ends a wait for another program's lock.
    """
    options = {"timeout": timeout, "isolation_level": None, "check_same_thread": False}
    if str(path) == ":memory:":
        return sqlite3.connect(":memory:", **options)
    return sqlite3.connect(file_uri(path) + ("?mode=ro" if read_only else ""), uri=True, **options)


def table_names(conn: sqlite3.Connection) -> list[str]:
    """The tables the database holds, SQLite's own (sqlite_sequence, ...) left out, in alphabetical order."""
    return [row[0] for row in conn.execute(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]


def columns_of(schema: str) -> dict[str, set[str]]:
    """The tables a store's CREATE statements make, each with its columns: read from a database in memory made by
    them, so that the store's schema is written once. A virtual table's own tables (FTS5's) are among them."""
    with contextlib.closing(sqlite3.connect(":memory:")) as made:
        made.executescript(schema)
        return {name: _columns(made, name) for name in table_names(made)}


def other_columns(conn: sqlite3.Connection, ours: dict[str, set[str]]) -> list[str]:
    """The tables named in `ours` that the database holds with other columns: another program's of the same name."""
    return [name for name in table_names(conn) if name in ours and _columns(conn, name) != ours[name]]


def foreign_tables(conn: sqlite3.Connection, ours: dict[str, set[str]]) -> list[str]:
    """The tables another program made: any not named in `ours`, and those of our names with other columns."""
    return [name for name in table_names(conn) if name not in ours] + other_columns(conn, ours)


def why_not_ours(conn: sqlite3.Connection, ours: dict[str, set[str]], path: str, what: str, kept: str) -> str | None:
    """None when the database holds no tables but `ours` (a new file, or one the store made); otherwise one line
    saying whose it is and that nothing is written into it, for the store's own error. `what` names the store ("a
    session store"), `kept` what it keeps ("sessions")."""
    others = foreign_tables(conn, ours)
    if not others:
        return None
    whose = "the shop's database" if "orders" in others else "another program's database"
    return (f"{path} is {whose} (its tables: {table_list(others)}), not {what}: {kept} are not written into it; give a "
            f"new file name, or one made for {kept}")


def table_list(names: list[str]) -> str:
    """The first five names, for a one-line message: "notes, orders, ..." when there are more."""
    return ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    quoted = table.replace('"', '""')  # a table's name is another program's text
    return {row[1] for row in conn.execute(f'PRAGMA table_info("{quoted}")')}
