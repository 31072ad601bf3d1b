"""A disk that is full, for the tests of what a write does then (issue 37).

Two ways, the first everywhere, the second where the machine allows it:

- `full_database(path, conn)`: SQLite's own limit. `PRAGMA max_page_count` (per connection) set to the file's
  size means the file may not grow, and a write that needs one more page fails with SQLITE_FULL, "database or
  disk is full", exactly as on a full disk: SQLite rolls the transaction back by itself. A small write still
  fits in the room left in a page, so `fill_up` first writes rows until no such row fits.
- `run_on_a_full_disk(folder, command)`: a real full disk. A small tmpfs is mounted on `folder` in a mount
  namespace of the command alone (`unshare -m` for root, `unshare -rm`, a user namespace, for anyone else), so
  that the command can fill it up; the mount vanishes with the command. Skips where namespaces are not allowed.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest


def no_room_to_grow(conn: sqlite3.Connection) -> None:
    """From now on `conn` may not make its database file any larger (until it is closed)."""
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")


def fill_up(path: Path, insert: str, row: Callable[[int], tuple]) -> int:
    """Rows `row(0)`, `row(1)`, ... inserted into the database at `path`, each on its own, until one does not fit
    without the file growing: the page the next row goes to is then full. Returns how many went in."""
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
        no_room_to_grow(db)
        for n in itertools.count():
            try:
                db.execute(insert, row(n))
            except sqlite3.OperationalError as exc:
                assert "full" in str(exc), exc
                return n
    raise AssertionError("unreachable")


def full_database(path: Path, conn: sqlite3.Connection, insert: str, row: Callable[[int], tuple]) -> None:
    """The database at `path` filled up, and `conn` (the code under test's connection to it) unable to grow it."""
    assert fill_up(path, insert, row) > 0
    no_room_to_grow(conn)


MOUNT_AND_RUN = 'mount -t tmpfs -o size="$1" tmpfs "$0" && shift && exec "$@"'


def run_on_a_full_disk(folder: Path, *command: str, size: str = "4m", timeout: float = 300,
                       env: dict | None = None) -> subprocess.CompletedProcess:
    """`command` run with a tmpfs of `size` mounted on `folder` (empty), which only it sees. The command fills it."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare(1) is needed to mount a small disk for one command")
    user_namespace = [] if os.geteuid() == 0 else ["-r"]
    done = subprocess.run(["unshare", *user_namespace, "-m", "sh", "-c", MOUNT_AND_RUN, str(folder), size, *command],
                          capture_output=True, text=True, timeout=timeout, check=False, env=env)
    if done.returncode != 0 and ("unshare:" in done.stderr or "mount:" in done.stderr):
        pytest.skip(f"cannot mount a small disk here: {done.stderr.strip()}")
    return done
