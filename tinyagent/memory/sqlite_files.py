"""Which file an SQLite store opens, whether that file is the store's, and what to say when it cannot be used: what the
shop, the session store, the user facts and lesson 21's outbox share.

    conn = connect_file("sessions.db")        # always the file of that name (":memory:": a database in memory)
    foreign_tables(conn, columns_of(SCHEMA))   # the tables another program made: a store refuses such a file
    why_unusable(path, exc, "the session store", "sessions.db", 30)   # the one line a store's error says
    with store_opening("sessions.db", "the session store", "sessions.db", SessionStoreError, 30):
        conn = connect_file("sessions.db")     # refused first if it can be no file; on failure nothing is left behind

This Python's SQLite reads a name that starts with "file:" as a URI even when asked not to: a store named
"file:sessions.db?mode=memory" kept its turns in memory, and lost them without a word when it closed. `connect_file`
names the file by a URI built from its path, whatever its name holds.

A file a store cannot use (a folder, a text file, another program's lock held too long, a full disk, a read-only
file or folder, a file moved away while open) is said in one line that names the store and the path and says what
to do, the same words in every store (`why_unusable`): SQLite's own ("attempt to write a readonly database" for a
file that was moved, "unable to open database file" for a folder that cannot be written, and for a path longer than
SQLite opens) name neither and send people the wrong way. A path that can never be a store's file (empty or blank,
a folder, a pipe, a device) is refused before anything is made (`why_not_a_file`): "  " was a file named by two
spaces in the current folder. And an opening that fails leaves nothing the user did not have before
(`left_as_found`): not the empty file, nor the folders made for it.

A file a store makes is its own account's alone (0600, `make_private`): on a machine shared with other people, a
conversation in it is nobody else's to read, whatever the folder around it allows.

A store pointed at another program's file (the shop's `--db` given to the session store, the facts pointed at the
sessions) would write its tables beside that program's, and the file then held two programs' data that neither
expects. So each store looks at the tables a file holds before it writes anything, and refuses a file with tables
that are not its own, or a table of its own name with other columns (another program's `orders`, `sessions`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

from tinyagent.errors import first_line
from tinyagent.file_owners import another_accounts
from tinyagent.memory.sqlite_writes import BUSY_SLICE_SECONDS, LockWait, is_busy, primary_code, was_moved

# The longest full path, in bytes, of a file SQLite opens. Its unix VFS holds a path in 512 bytes (MAX_PATHNAME), and
# it refuses a file whose journal's path, "-journal" added, would not fit (pager.c): past that, a new file in a
# folder anyone may write to is "unable to open database file", which sent people to the folder's permissions.
SQLITE_MAX_PATH_BYTES = 512 - len("-journal")


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
    if not read_only:
        make_private(path)
    return sqlite3.connect(file_uri(path) + ("?mode=ro" if read_only else ""), uri=True, **options)


def make_private(path: str | os.PathLike[str]) -> None:
    """Create `path` empty, readable and writable by this account alone (0600), if nothing is there yet: SQLite would
    make it 0644 (as the umask leaves it), and a store holds conversations, facts about people, orders. SQLite gives
    the journal and WAL files beside it the database's own mode. An existing file is left as it is, and a path where
    nothing can be made is left to SQLite, whose failure the store says (why_unusable)."""
    with contextlib.suppress(OSError):  # O_EXCL: never through a link, never over a file that is there
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


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


def why_unusable(path: str, exc: BaseException, what: str, example: str, waited: float | None = None) -> str:
    """One line for a store's own error when opening its file, or a statement on it, failed with `exc` (an
    sqlite3.Error or an OSError): what is wrong with the file, naming the store (`what`: "the session store") and
    `path`, and what to do. `example` is the file name it suggests ("sessions.db"); `waited`, the seconds the store
    waits for another program's lock (its `LockWait`'s patience), which a busy file's line says."""
    if isinstance(exc, sqlite3.Error) and was_moved(exc):  # before a look at the path: another file may be there now
        return f"{what} {path} was moved or deleted since it was opened: restart the program to open it again"
    try:
        said = why_not_a_file(path, what, example) or _sqlite_says(path, exc, what, waited)
        if said:
            return said
        if isinstance(exc, sqlite3.Error) and primary_code(exc) != sqlite3.SQLITE_CANTOPEN:
            return f"{what} {path} failed: {first_line(exc)}"  # nothing about the file: SQLite's words
        return _why_this_path(path, exc, what)
    except OSError as looking:  # the path itself cannot be looked at: a name past 255 bytes, a loop of links
        # (no folder's permission is in question: the name is what to change)
        advice = "give a shorter name" if looking.errno == errno.ENAMETOOLONG else "give another path"
        return f"cannot create {what} {path[:200]} ({looking.strerror or looking}): {advice}"


def why_not_a_file(path: str, what: str, example: str) -> str | None:
    """Why `path` can never be a store's file (empty, another account's, a folder, a device or a pipe), in one line;
    None when it may be (":memory:" among them: no file). An OSError when the path cannot even be looked at (a name
    too long)."""
    if path == ":memory:":
        return None
    if not path.strip():
        return f"the path given for {what} is empty: give a file path, such as {example}"
    where = Path(path)
    owner = another_accounts(where)
    if owner is not None:
        return (f"{path} belongs to another account (uid {owner}): {what} neither writes into nor reads another "
                "account's file, which anyone who may write its folder could have put there; give a path in a folder "
                "of your own")
    if where.is_dir():
        return f"{path} is a folder: give {what} a file path, such as {where / example}"
    if where.exists() and not stat.S_ISREG(where.stat().st_mode):  # /dev/null, a pipe: SQLite would misread them
        return f"{path} is not a regular file: give {what} a file path, such as {example}"
    return None


@contextlib.contextmanager
def failures_said(path: str, what: str, example: str, error: type[Exception], waits: LockWait,
                  undone: str = "") -> Iterator[None]:
    """Around a statement on a store's open file: an sqlite3 error (another program's lock held past the wait, a
    full disk, a disk gone read-only, the file moved away) is said in one line (why_unusable), as `error`, the
    store's own, after what was not done (`undone`) if given. `waits` is the store's LockWait: its patience is read
    when the statement failed, as a stop may have cut it short."""
    try:
        yield
    except sqlite3.Error as exc:
        said = why_unusable(path, exc, what, example, waits.patience)
        raise error(f"{undone}: {said}" if undone else said) from None


@contextlib.contextmanager
def store_opening(path: str, what: str, example: str, error: type[Exception],
                  waited: float | None = None) -> Iterator[None]:
    """Around a store's opening of its file `path`: a path that can never be one (why_not_a_file) is refused before
    anything is made, the folders it lacks are made, and a failure leaves nothing behind (left_as_found) and is said
    in one line (why_unusable), each as `error`, the store's own. `what`, `example` and `waited` are the store's
    words for why_unusable. Raised inside, the store's own `error` goes on as it is."""
    try:
        refusal = why_not_a_file(path, what, example)
        if refusal:
            raise error(refusal)
        with left_as_found(path):
            yield
    except (sqlite3.Error, OSError) as exc:
        raise error(why_unusable(path, exc, what, example, waited)) from None


@contextlib.contextmanager
def left_as_found(path: str) -> Iterator[None]:
    """Around a store's opening of its file `path` (":memory:": no file): makes the folders it lacks, and when the
    opening fails, removes what it made before the error goes on, so that a refusal leaves nothing the user did not
    have before: the file, while still empty (one with data may be another process's, opened at the same moment), and
    the folders made for it, while they hold nothing else (the file's journal aside). An OSError when the folders
    cannot be made or the path cannot be looked at (a name too long)."""
    if path == ":memory:":
        yield
        return
    where = Path(path)
    new_file = not os.path.lexists(where)
    made: list[Path] = []  # the folders made for the file, innermost first
    folder = where.absolute().parent
    while not folder.exists() and folder != folder.parent:
        made.append(folder)
        folder = folder.parent
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        yield
    except BaseException:
        _remove_made(where, new_file, made)
        raise


def _remove_made(where: Path, new_file: bool, made: list[Path]) -> None:
    with contextlib.suppress(OSError):
        if new_file and where.stat().st_size == 0:
            where.unlink()
    with contextlib.suppress(OSError):  # something else is in a folder now: it stays, and so do those around it
        if made:  # in the folder made for it, the file and its journal are this opening's, whatever they hold
            for name in (where.name, f"{where.name}-journal", f"{where.name}-wal", f"{where.name}-shm"):
                with contextlib.suppress(FileNotFoundError):
                    (made[0] / name).unlink()
        for folder in made:
            folder.rmdir()


def why_read_only(path: str, what: str) -> str:
    """`what`'s file `path` cannot be written (SQLite's "attempt to write a readonly database"), in one line."""
    return (f"{what} {path} cannot be written (a read-only file, folder or disk): make it writable, or give {what} a "
            "path in a folder you can write to")


def why_damaged(path: str, finding: str, what: str) -> str:
    """`what`'s file `path` is damaged (SQLite's `finding`: a page overwritten, the file cut short), in one line."""
    return (f"{what} {path} is damaged ({finding}): restore it from a copy, or move it away and a new one is made in "
            "its place")


def _sqlite_says(path: str, exc: BaseException, what: str, waited: float | None) -> str | None:
    """What SQLite's error code says of the file, for the codes that say it alone; None for the others."""
    if not isinstance(exc, sqlite3.Error):
        return None
    if is_busy(exc):  # how long it waited, when known: a person can tell a moment's lock from one held for good
        held = "holds it locked" if waited is None else f"held it locked past {waited:g} s"
        return f"{what} {path} is busy (another program {held}): try again shortly"
    if primary_code(exc) == sqlite3.SQLITE_FULL:  # the disk, or PRAGMA max_page_count: SQLite has rolled the write back
        return f"{what} {path} could not be written ({first_line(exc)}): make room on its disk, then try again"
    if primary_code(exc) == sqlite3.SQLITE_IOERR:
        return f"{what} {path} could not be read or written ({first_line(exc)}): check its disk, then try again"
    if primary_code(exc) == sqlite3.SQLITE_CORRUPT:
        return why_damaged(path, first_line(exc), what)
    if primary_code(exc) == sqlite3.SQLITE_NOTADB:
        return f"{path} is not an SQLite database: give {what} a new file name, or a file made for it"
    if primary_code(exc) == sqlite3.SQLITE_READONLY:
        return why_read_only(path, what)
    return None  # SQLITE_CANTOPEN among them: a look at the path tells a new file's folder from the file's own


def _why_this_path(path: str, exc: BaseException, what: str) -> str:
    """The file could not be opened or made (SQLITE_CANTOPEN, or an OSError making its folders): a look at the path
    says why."""
    where = Path(path)
    if where.is_file():  # it exists, so creating it was not what failed
        if not os.access(where, os.R_OK):
            return f"{what} {path} cannot be read: give your account permission to read it"
        if not (os.access(where, os.W_OK) and os.access(where.parent, os.W_OK)):  # SQLite's journal goes beside it
            return why_read_only(path, what)
        return (_why_too_long(path, what)
                or f"cannot open {what} {path} ({first_line(exc)}): give {what} a new file name, or a file made for it")
    folder = where.absolute().parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent  # the nearest folder (or file) that exists: where creating it stopped
    if not folder.is_dir():
        reason = f"{folder} is a file, not a folder"
    elif not os.access(folder, os.W_OK):
        reason = f"the folder {folder} cannot be written"
    elif isinstance(exc, OSError) and exc.strerror:
        reason = f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    else:  # nothing about the folder stopped it: SQLite's own "unable to open database file"
        too_long = _why_too_long(path, what)
        if too_long:
            return too_long
        in_the_way = _in_the_journals_way(where)
        if in_the_way:
            return (f"cannot create {what} {path}: {in_the_way} is in the way of the journal SQLite writes beside "
                    "the file: remove it, or give another file name")
        reason = first_line(exc)
    return f"cannot create {what} {path} ({reason}): give a path in a folder you can write to"


def _in_the_journals_way(where: Path) -> Path | None:
    """What stands where SQLite writes a new file's journal (its name with "-journal") and is no file, such as a
    folder: SQLite cannot write the journal there, though the folder may be written."""
    journal = where.with_name(where.name + "-journal")
    return journal if journal.exists() and not journal.is_file() else None


def _why_too_long(path: str, what: str) -> str | None:
    """`path` is longer than SQLite opens (SQLITE_MAX_PATH_BYTES, its full path: a relative one's folder counts), in
    one line; None when it is not. Asked only once SQLite has failed to open it: a build with room for longer paths
    opens them."""
    full = len(os.fsencode(os.path.realpath(path)))  # what SQLite measures: the file's own path, links followed
    if full <= SQLITE_MAX_PATH_BYTES:
        return None
    return (f"{what} {path} cannot be opened: its full path is too long for SQLite ({full} bytes; SQLite opens at most "
            f"{SQLITE_MAX_PATH_BYTES}): give a shorter path")


def table_list(names: list[str]) -> str:
    """The first five names, for a one-line message: "notes, orders, ..." when there are more."""
    return ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    quoted = table.replace('"', '""')  # a table's name is another program's text
    return {row[1] for row in conn.execute(f'PRAGMA table_info("{quoted}")')}
