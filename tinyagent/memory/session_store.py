"""Where a session's turns live between runs: SQLite (a file, or memory) or PostgreSQL, one interface.

    store = SqliteSessionStore("sessions.db")          # or ":memory:" (the default of a Session)
    store = PostgresSessionStore("postgresql://tiny:secret@127.0.0.1:5432/shop")   # the `postgres` extra
    store = open_session_store("sessions.db" or "postgresql://...")               # either, by its name

    turn = store.append_turn(session_id, Turn(question, answer, ...))   # -> the Turn with its number
    store.turns(session_id)                  # [Turn, ...], oldest first ([] for a session never seen)
    store.save_summary(session_id, covered, text)   # a memory's summary of turns 1..covered
    store.summary(session_id)                # (covered, text) or None
    store.session_ids()                      # every session that has a turn or a summary
    store.delete(session_id)                 # its turns and its summary, gone
    store.stop_waiting()                     # the program stops: a wait for another program's lock ends now
    store.close()                            # or use the store as a context manager

A store keeps what a `Session` keeps of each run (a `Turn`: the question, the final answer, and a few
figures), not the run's inner rounds. The data is in the database, not in the Python process: a new
process (a restarted kernel, another worker of a web service) that opens the same file or URL sees the
same sessions.

Several processes may write turns to the same session at once (two browser tabs, two workers behind a load
balancer). Numbering them is a read-then-write (the next number is the count plus one), so each append is one
transaction whose first statement creates the session's row or counts one more turn on it and returns the new count
(`INSERT ... ON CONFLICT (id) DO UPDATE SET turn_count = sessions.turn_count + 1 RETURNING turn_count`): PostgreSQL
locks that row until the transaction ends, and SQLite (`BEGIN IMMEDIATE`) the whole database. The other writers
wait their turn; nobody's turn is lost or numbered twice. The same SQL serves both backends; only the placeholders
differ (`?` and `%s`).

Why PostgreSQL at all: an SQLite file lives on one machine and lets one writer in at a time. A service
with several workers on several machines (lesson 19) needs a database server they all reach.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit, urlunsplit

from tinyagent.api_url import user_info_misread
from tinyagent.errors import TinyAgentError, first_line
from tinyagent.memory.sqlite_files import (
    columns_of,
    connect_file,
    failures_said,
    store_opening,
    why_not_ours,
)
from tinyagent.memory.sqlite_writes import LockWait, immediate_transaction
from tinyagent.safe_text import holds_surrogate, replace_lone_surrogates

# How long a writer waits for another one's transaction (SQLite's busy timeout; PostgreSQL waits for a row
# lock without limit). Transactions here take milliseconds; the margin is for a loaded machine. SQLite's wait is
# made in slices (sqlite_writes.LockWait), so that a stop ends it; read at each wait, so a test can set it small.
BUSY_TIMEOUT_SECONDS = 30.0
CONNECT_TIMEOUT_SECONDS = 10
# PostgreSQL: connections kept per store (a call holds one for milliseconds; more calls wait for one), and how
# long a call waits for a working connection before it fails (the server is down, or every connection busy).
POOL_SIZE = 8
POOL_WAIT_SECONDS = 5.0
POOL_NAME = "tinyagent-sessions"  # the stores' pools: their reconnect warnings are not logged (_QuietPool)
# What an SQLite store's errors call it (sqlite_files.why_unusable: every store's words), and the name they suggest.
NAMED = "the session store"
EXAMPLE = "sessions.db"


_URL_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


class SessionStoreError(TinyAgentError):
    """A session store cannot be opened or used: the message says which one (never its password) and why."""


@dataclass(frozen=True)
class Turn:
    """What a session keeps of one run: the question, the final answer, and what it cost.

    number:         1, 2, 3, ... within the session (0 until the store has numbered it)
    question:       what the user asked
    answer:         the run's final answer (`AgentResult.answer`), what the user was told
    reason:         why the run ended ("final_answer", "fallback", "max_steps", ...)
    rounds:         how many model calls the run made (its Thought/Action/Observation rounds are not kept)
    tools:          the tools it called, in order
    history_tokens: tokens of the memory given to the run (earlier turns, a summary, recalled facts)
    prompt_tokens:  tokens of the run's first request: system prompt + memory + question
    tokens_sent:    tokens of every request of the run, added up (each round re-sends the conversation)
    Both by the session's counter (`TokenCounter.chat`): each message's text and each tool call's name and
    arguments, but not the `tools` definitions function calling sends beside them. `prompt_tokens` is the first
    request as the run built it, before any budget's fitting (lesson 13); `tokens_sent` counts each request as it
    went out, fitted.
    """

    question: str
    answer: str
    reason: str = "final_answer"
    rounds: int = 0
    tools: tuple[str, ...] = ()
    history_tokens: int = 0
    prompt_tokens: int = 0
    tokens_sent: int = 0
    number: int = field(default=0)

    def messages(self) -> list[dict]:
        """The turn as the next run reads it: the user's message, then the assistant's answer."""
        return [{"role": "user", "content": self.question}, {"role": "assistant", "content": self.answer}]


_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS sessions (
        id              TEXT PRIMARY KEY,
        turn_count      INTEGER NOT NULL DEFAULT 0,  -- the last turn's number: the row every append locks
        summary_covered INTEGER NOT NULL DEFAULT 0,  -- the summary covers turns 1..summary_covered
        summary         TEXT
    )""",
    """CREATE TABLE IF NOT EXISTS session_turns (
        session_id     TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        number         INTEGER NOT NULL,
        question       TEXT NOT NULL,
        answer         TEXT NOT NULL,
        reason         TEXT NOT NULL,
        rounds         INTEGER NOT NULL,
        tools          TEXT NOT NULL,                -- a JSON list of tool names
        history_tokens INTEGER NOT NULL,
        prompt_tokens  INTEGER NOT NULL,
        tokens_sent    INTEGER NOT NULL,
        PRIMARY KEY (session_id, number)
    )""",
)
_TURN_COLUMNS = "number, question, answer, reason, rounds, tools, history_tokens, prompt_tokens, tokens_sent"


class SessionStore:
    """The interface, and everything both backends share: the SQL and what it means.

    A subclass says how to connect (`_transaction`, `_read`, `close`, and `_placeholder` unless it is "?") and
    nothing else.
    """

    _placeholder = "?"

    def __init__(self) -> None:
        self._lock = threading.RLock()  # one connection per store, shared by threads one at a time

    # -- the interface ------------------------------------------------------------------------------------
    def append_turn(self, session_id: str, turn: Turn) -> Turn:
        """Store `turn` as the session's next turn (the session is created on its first turn); returns it
        with its number. Safe when several processes append to the same session at once."""
        session_id = check_session_id(session_id)
        with self._transaction() as run:
            # One statement creates the session or counts one more turn on it, and takes its row lock until the
            # transaction ends: concurrent appends queue up here. (Apart, a delete committed between the two
            # left nothing to count in PostgreSQL, and the turn was lost.)
            number = run("INSERT INTO sessions (id, turn_count) VALUES (?, 1) ON CONFLICT (id) DO UPDATE "
                         "SET turn_count = sessions.turn_count + 1 RETURNING turn_count", (session_id,))[0][0]
            run(
                f"INSERT INTO session_turns (session_id, {_TURN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (session_id, number, _storable(turn.question), _storable(turn.answer), _storable(turn.reason),
                 turn.rounds, json.dumps([_storable(tool) for tool in turn.tools]), turn.history_tokens, turn.prompt_tokens,
                 turn.tokens_sent),
            )
        return replace(turn, number=number)

    def turns(self, session_id: str) -> list[Turn]:
        """The session's turns, oldest first; [] for a session that has none (or never existed)."""
        rows = self._read(
            f"SELECT {_TURN_COLUMNS} FROM session_turns WHERE session_id = ? ORDER BY number", (session_id,)
        )
        return [
            Turn(question=q, answer=a, reason=reason, rounds=rounds, tools=tuple(json.loads(tools)),
                 history_tokens=history, prompt_tokens=prompt, tokens_sent=sent, number=number)
            for number, q, a, reason, rounds, tools, history, prompt, sent in rows
        ]

    def save_summary(self, session_id: str, covered: int, text: str) -> None:
        """Keep `text` as the summary of turns 1..`covered`. A summary never moves backwards: if another
        process already saved one that covers as much or more, this one is dropped."""
        session_id = check_session_id(session_id)
        with self._transaction() as run:
            run("INSERT INTO sessions (id) VALUES (?) ON CONFLICT (id) DO NOTHING", (session_id,))
            run(
                "UPDATE sessions SET summary_covered = ?, summary = ? WHERE id = ? AND summary_covered < ?",
                (covered, _storable(text), session_id, covered),
            )

    def summary(self, session_id: str) -> tuple[int, str] | None:
        """(covered, text): the latest summary saved for the session, or None."""
        rows = self._read(
            "SELECT summary_covered, summary FROM sessions WHERE id = ? AND summary IS NOT NULL", (session_id,)
        )
        return (rows[0][0], rows[0][1]) if rows else None

    def session_ids(self) -> list[str]:
        """Every session the store holds, in alphabetical order."""
        return [row[0] for row in self._read("SELECT id FROM sessions ORDER BY id", ())]

    def delete(self, session_id: str) -> None:
        """Forget a session: its turns and its summary."""
        with self._transaction() as run:
            run("DELETE FROM session_turns WHERE session_id = ?", (session_id,))
            run("DELETE FROM sessions WHERE id = ?", (session_id,))

    def stop_waiting(self) -> None:
        """The program is stopping: a call waiting for another program's lock gives up soon, with the store's
        error (a turn it was appending is not stored, and its Session says so), and so does every later one. Call
        it from any thread (a signal's handler, a server's stop). Only SQLite's store waits in slices that a stop can
        end; PostgreSQL's calls are left as they are (at most POOL_WAIT_SECONDS for a connection)."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # -- what a backend provides ----------------------------------------------------------------------------
    def _sql(self, statement: str) -> str:
        return statement.replace("?", self._placeholder)

    @contextmanager
    def _transaction(self) -> Iterator:
        """A function run(sql, params) -> rows, inside one write transaction (committed at the end)."""
        raise NotImplementedError
        yield

    def _read(self, statement: str, params: tuple) -> list[tuple]:
        raise NotImplementedError


def _storable(text: object) -> object:
    """Text as both stores keep it: a NUL (pasted text may hold one) as U+FFFD, since PostgreSQL's text holds
    none and SQLite's would keep it, and a lone surrogate (half of a UTF-16 pair, which no UTF-8 store holds) as
    U+FFFD too: a turn is stored after its tools have run, and must not be lost then; anything else as it is."""
    return replace_lone_surrogates(text).replace("\x00", "\ufffd") if isinstance(text, str) else text


def check_session_id(session_id: object) -> str:
    """`session_id` if a store can keep it: a non-empty string of at most 200 characters, UTF-8 (no lone
    surrogate); else a ValueError. `Session` asks it before its first run, so a bad id costs no run."""
    if not isinstance(session_id, str) or not session_id.strip() or len(session_id) > 200 or \
            holds_surrogate(session_id):
        raise ValueError(f"a session id must be a non-empty string of at most 200 characters, got {session_id!r}")
    return session_id


# --- SQLite -----------------------------------------------------------------------------------------------


class SqliteSessionStore(SessionStore):
    """Sessions in an SQLite file (or in memory with ":memory:", gone when the store is closed).

    The file and its folder are created on first use. Raises `SessionStoreError` when `path` cannot hold a
    database (an empty one, a folder, a pipe, a text file, a place that cannot be written), or when the file is
    another program's database (the shop's, say): tables of its own, which the store's would join. A refusal leaves
    nothing behind that was not there before.
    """

    def __init__(self, path: str | os.PathLike[str] = ":memory:"):
        super().__init__()
        self.path = str(path)
        scheme = _URL_SCHEME.match(self.path)
        if scheme:  # a URL of a database this store does not speak: never a file name (it may hold a password)
            raise SessionStoreError(
                f"a {scheme.group(1)}:// URL is not a session store: give an SQLite file path, or a "
                "postgresql://user:password@host:5432/db URL"
            )
        # Refused before anything is made (a blank path was a file named by spaces); on a failure, nothing is left
        # behind and one line says why (sqlite_files.store_opening).
        with store_opening(self.path, NAMED, EXAMPLE, SessionStoreError, BUSY_TIMEOUT_SECONDS):
            # Always the file of that name, even "file:x.db?mode=memory"; transactions are ours (BEGIN IMMEDIATE); the
            # busy timeout is one slice of a wait: self._waits waits the rest, and a stop ends it (sqlite_files.py).
            self._conn = connect_file(self.path)
            self._waits = LockWait(self._conn, lambda: BUSY_TIMEOUT_SECONDS)
            try:
                self._conn.execute("PRAGMA foreign_keys = ON")
                with self._lock, immediate_transaction(self._conn, execute=self._waits.execute) as conn:
                    _refuse_another_database(conn, self.path)
                    for statement in _SCHEMA:
                        conn.execute(statement)
            except BaseException:
                self._conn.close()  # the file is left as it was, and not held open
                raise

    @contextmanager
    def _transaction(self) -> Iterator:
        # IMMEDIATE (sqlite_writes.py): one writer at a time, from the first statement to the commit (the append's
        # upsert counts the turn and returns its number in one statement).
        with self._failures(), self._lock, immediate_transaction(self._conn, execute=self._waits.execute) as conn:
            yield lambda statement, params: conn.execute(statement, params).fetchall()

    def _read(self, statement: str, params: tuple) -> list[tuple]:
        with self._failures(), self._lock:
            return self._waits.execute(statement, params)  # one statement: tried again while another writer commits

    def stop_waiting(self) -> None:
        self._waits.stop_waiting()

    @contextmanager
    def _failures(self) -> Iterator[None]:
        """A file that fails mid-session (another program's lock held too long, a full disk, a disk that went
        read-only, a file moved away): one line naming the store and its file, saying why and what to do, the store's
        own error, as PostgresSessionStore says it. Nothing of the failed write is kept."""
        with failures_said(self.path, NAMED, EXAMPLE, SessionStoreError, self._waits):
            yield

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __repr__(self) -> str:
        return f"SqliteSessionStore({self.path!r})"


_SESSION_COLUMNS = columns_of(";".join(_SCHEMA))  # each table's columns: a table of our name must have them


def _refuse_another_database(conn: sqlite3.Connection, path: str) -> None:
    """SessionStoreError for an SQLite file that holds tables of its own (the shop's `--db`, another program's
    file), or a `sessions` table that is not ours: the store's tables would be written into it, and nothing would
    say so. The shop, the user facts and lesson 21's outbox refuse such a file the same way (sqlite_files.py)."""
    refusal = why_not_ours(conn, _SESSION_COLUMNS, path, "a session store", "sessions")
    if refusal:
        raise SessionStoreError(refusal)


# --- PostgreSQL -------------------------------------------------------------------------------------------

# Any number will do, as long as it is always the same: an advisory lock taken while creating the tables, so
# that several workers starting at once on an empty database do not race each other's CREATE TABLE.
_SCHEMA_LOCK = 1_200_012


class PostgresSessionStore(SessionStore):
    """Sessions in PostgreSQL, for a service whose workers share one database (psycopg 3 and its pool).

    `url` is a libpq URL (`postgresql://user:password@host:port/dbname`) or key=value string. Install the
    driver with the `postgres` extra (`pip install -e '.[postgres]'` in the course folder). Raises `SessionStoreError` with
    one line naming the URL without its password when the server cannot be reached, or when the schema it would use
    holds another program's `sessions` or `session_turns` table (other tables are fine: an application's database).

    The connections come from a pool that checks each one before handing it out (psycopg_pool's
    `check_connection`): a connection the server dropped (a restart, a failover, an idle timeout) is replaced
    by a new one, so a store outlives its database going away and coming back. While the server is down,
    each call waits up to POOL_WAIT_SECONDS for a connection, then fails with one line.
    """

    _placeholder = "%s"

    def __init__(self, url: str):
        super().__init__()
        if not isinstance(url, str) or not url.strip():
            raise ValueError("PostgresSessionStore needs a URL such as postgresql://user:password@host:5432/db")
        if "://" in url:
            # Neither the URL nor urlsplit's words on it are quoted: a password may be in them ("Port could not be
            # cast to integer value as 's3cr'" for postgresql://alice:s3cr#t@host/db), and safe_url cannot read it.
            try:
                parts = urlsplit(url)
                parts.port  # noqa: B018 - reads the host and port, as libpq and safe_url will
            except ValueError:  # a [ left open, an IPv6 host that is none, a port that is no number
                raise SessionStoreError(
                    "the PostgreSQL URL cannot be read (its host or port): write it as "
                    "postgresql://user:password@host:5432/db, an IPv6 host between [ and ] "
                    "(postgresql://user@[::1]:5432/db), and a password's @ # / ? as %40 %23 %2F %3F") from None
            if parts.netloc.count("@") > 1 or user_info_misread(url):
                # libpq reads such a URL otherwise than urlsplit, and would name part of the password as a host
                raise SessionStoreError(
                    "the PostgreSQL URL's user name or password holds an @, #, / or ?: write them as %40, %23, %2F "
                    "and %3F (postgresql://user:password@host:5432/db)")
        self.url = safe_url(url)  # the only form of the URL this object keeps where it can be seen
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError:
            raise SessionStoreError(
                "PostgresSessionStore needs psycopg 3 and its pool: pip install -e '.[postgres]' in the course folder "
                "(or 'psycopg[binary]' and 'psycopg-pool')"
            ) from None
        self._errors = (psycopg.Error,)  # psycopg_pool's PoolTimeout is one of them
        # autocommit: every transaction is an explicit `transaction()` block; without it, a read outside
        # one would leave a transaction open (and its locks held) until the next commit.
        options = {"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_SECONDS}
        try:
            # One connection first, to say at once (and why) when the server cannot be reached, and to make
            # the tables before any worker uses them.
            with psycopg.connect(url, **options) as conn, conn.transaction(), conn.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                _refuse_another_programs_table(cursor, self.url)  # before any CREATE: nothing is half made
                for statement in _SCHEMA:
                    cursor.execute(statement)
        except psycopg.OperationalError as exc:
            raise SessionStoreError(
                f"cannot connect to PostgreSQL at {self.url}: {_connect_reason(exc, url)}"
            ) from None
        except psycopg.Error as exc:  # e.g. a user who may not create tables
            raise SessionStoreError(f"PostgreSQL at {self.url} failed: {first_line(exc)}") from None
        _quiet_pool_logging()
        self._pool = ConnectionPool(url, min_size=1, max_size=POOL_SIZE, kwargs=options, open=True,
                                    check=ConnectionPool.check_connection, timeout=POOL_WAIT_SECONDS,
                                    name=POOL_NAME)

    @contextmanager
    def _transaction(self) -> Iterator:
        with self._failures(), self._pool.connection() as conn, conn.transaction(), conn.cursor() as cursor:

            def run(statement: str, params: tuple) -> list[tuple]:
                cursor.execute(self._sql(statement), params)
                return cursor.fetchall() if cursor.description else []

            yield run

    def _read(self, statement: str, params: tuple) -> list[tuple]:
        with self._failures(), self._pool.connection() as conn, conn.cursor() as cursor:
            cursor.execute(self._sql(statement), params)
            return cursor.fetchall()

    @contextmanager
    def _failures(self) -> Iterator[None]:
        """A server that went away mid-session: one line naming the store, not a driver traceback."""
        try:
            yield
        except self._errors as exc:
            raise SessionStoreError(f"PostgreSQL at {self.url} failed: {first_line(exc)}") from None

    def close(self) -> None:
        self._pool.close()

    def __repr__(self) -> str:
        return f"PostgresSessionStore({self.url!r})"


class _QuietPool(logging.Filter):
    """Drops psycopg_pool's log records about the session stores' pools, and only theirs: while the server is down,
    a pool logs a two-line warning at each attempt to reconnect (a dozen a minute, during a call and while idle), on
    stderr beside the one line the store raises, which says it all. Another pool's records pass as they were."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        return not any(_is_our_pool(arg) or _is_our_pool(getattr(arg, "_pool", None)) for arg in args)


def _is_our_pool(thing: object) -> bool:
    """The stores' pool's name ("error connecting in %r"), or a pool of that name (a connection's `_pool`)."""
    return thing == POOL_NAME or getattr(thing, "name", None) == POOL_NAME


_QUIET_POOL = _QuietPool()


def _quiet_pool_logging() -> None:
    pool_logger = logging.getLogger("psycopg.pool")
    if _QUIET_POOL not in pool_logger.filters:  # once, however many stores are made
        pool_logger.addFilter(_QUIET_POOL)


def _refuse_another_programs_table(cursor, url: str) -> None:
    """SessionStoreError for a `sessions` or `session_turns` table in the schema the store would use (the
    connection's current_schema(), the first of its search_path) whose columns are not the store's: a web
    framework's `sessions`, say. CREATE TABLE IF NOT EXISTS would skip it, and the store would fail at its first
    turn, or write into it. Other tables are fine: a database shared with an application is normal here."""
    # pg_class sees a table whatever the user may read; information_schema.columns only the columns they may.
    cursor.execute(
        "SELECT c.relname, n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = current_schema() AND c.relname IN ('sessions', 'session_turns') ORDER BY c.relname")
    for name, schema in cursor.fetchall():
        cursor.execute("SELECT column_name FROM information_schema.columns WHERE table_schema = %s AND "
                       "table_name = %s", (schema, name))
        if {row[0] for row in cursor.fetchall()} != _SESSION_COLUMNS[name]:
            raise SessionStoreError(
                f"{url} already has a table {schema}.{name} that is another program's, not a session store's: "
                "sessions are not written into it; give the store a database of its own (or a schema of its own, "
                "first on its user's search_path)"
            )


def safe_url(url: str) -> str:
    """The URL with its password taken out: `postgresql://tiny:secret@host/db` -> `postgresql://tiny@host/db`.

    A key=value string (`host=... password=secret`) loses its password field the same way.
    """
    if "://" not in url:
        return re.sub(r"\s*\bpassword\s*=\s*('(?:[^'\\]|\\.)*'|\S*)", "", url).strip()
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        netloc = f"{userinfo.split(':', 1)[0]}@{host}"
    query = re.sub(r"(^|&)password=[^&]*", "", parts.query).lstrip("&")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _connect_reason(exc: BaseException, url: str) -> str:
    """libpq's reason, without its repetition of the host: "Connection refused (is the server running?)"."""
    line = first_line(exc)
    reason = line.rsplit("failed: ", 1)[-1].strip() or line
    password = _password_in(url)
    if password:  # libpq does not echo passwords; this makes sure of it
        reason = reason.replace(password, "***")
    if "refused" in reason.lower():
        reason += " (is the server running?)"
    return reason


def _password_in(url: str) -> str | None:
    if "://" in url:
        return urlsplit(url).password
    match = re.search(r"\bpassword\s*=\s*('(?:[^'\\]|\\.)*'|\S*)", url)
    return match.group(1).strip("'") if match else None


def open_session_store(target: str | os.PathLike[str]) -> SessionStore:
    """A PostgreSQL store for a `postgresql://` (or `postgres://`) URL, an SQLite store for a file path (or
    ":memory:"). Any other URL (mysql://, sqlite://, ...) raises SessionStoreError: it is never taken for a path."""
    text = str(target)
    if text.startswith(("postgresql://", "postgres://")):
        return PostgresSessionStore(text)
    return SqliteSessionStore(text)
