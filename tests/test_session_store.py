"""The session stores: one suite, run against SQLite and against a real PostgreSQL server.

The PostgreSQL server is started by the tests themselves (tests/postgres_server.py: initdb into a temporary
folder, a free loopback port, stopped afterwards). Where PostgreSQL is not installed these tests skip, except
under CI, where they fail: .ci/run installs Debian's postgresql.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from tests.full_disk import no_room_to_grow
from tests.other_account import needs_root, run_as_another_account
from tests.postgres_server import PREFIX, require_postgres, stop_leftover_servers, throwaway_postgres
from tinyagent import LlmClient, ReActAgent, fixed_clock
from tinyagent.hosting.address import quiet_port_run
from tinyagent.memory.session import Session
from tinyagent.memory.session_memory import SlidingWindow, SummaryMemory
from tinyagent.memory.session_store import (
    PostgresSessionStore,
    SessionStoreError,
    SqliteSessionStore,
    Turn,
    open_session_store,
    safe_url,
)
from tinyagent.memory.sqlite_writes import immediate_transaction
from tinyagent.shop import Shop, shop_registry

PATIENCE = 300  # seconds for worker processes on a loaded machine


@pytest.fixture(scope="module")
def postgres():
    with throwaway_postgres() as server:
        yield server


@pytest.fixture(params=["sqlite", "postgres"])
def target(request, tmp_path):
    """Where a store lives: an SQLite file, or a fresh database on the throwaway PostgreSQL server."""
    if request.param == "sqlite":
        return str(tmp_path / "sessions.db")
    return request.getfixturevalue("postgres").new_database()


@pytest.fixture
def store(target):
    with open_session_store(target) as opened:
        yield opened


def a_turn(n: int = 1, **fields) -> Turn:
    values = {"question": f"question {n}", "answer": f"answer {n}", "reason": "final_answer", "rounds": 2,
              "tools": ("queryOrder",), "history_tokens": 10 * n, "prompt_tokens": 100 + n, "tokens_sent": 300 + n}
    return Turn(**{**values, **fields})


# --- the same tests for both backends -------------------------------------------------------------------


def test_the_target_picks_the_backend(store, target):
    expected = PostgresSessionStore if target.startswith("postgresql://") else SqliteSessionStore
    assert type(store) is expected


def test_appended_turns_come_back_numbered_in_order_with_every_field(store):
    first = store.append_turn("s1", a_turn(1, question="我的订单是 88231", tools=("queryOrder", "queryLogistics")))
    second = store.append_turn("s1", a_turn(2, reason="max_steps", tools=()))
    assert (first.number, second.number) == (1, 2)
    turns = store.turns("s1")
    assert turns == [first, second]
    assert turns[0].question == "我的订单是 88231" and turns[0].tools == ("queryOrder", "queryLogistics")
    assert turns[1].reason == "max_steps" and turns[1].tools == () and turns[1].tokens_sent == 302


def test_sessions_are_kept_apart_and_an_unknown_one_is_empty(store):
    store.append_turn("alice", a_turn(1))
    store.append_turn("bob", a_turn(1, question="bob's"))
    store.append_turn("alice", a_turn(2))
    assert [t.number for t in store.turns("alice")] == [1, 2]
    assert [t.question for t in store.turns("bob")] == ["bob's"]
    assert store.turns("nobody") == []
    assert store.session_ids() == ["alice", "bob"]


def test_a_new_store_on_the_same_database_sees_the_turns(store, target):
    store.append_turn("s1", a_turn(1))
    store.close()
    with open_session_store(target) as reopened:
        assert [t.question for t in reopened.turns("s1")] == ["question 1"]
        assert reopened.append_turn("s1", a_turn(2)).number == 2


def test_a_summary_is_kept_and_never_moves_backwards(store):
    assert store.summary("s1") is None
    store.save_summary("s1", 2, "Orders: 88231")
    assert store.summary("s1") == (2, "Orders: 88231")
    store.save_summary("s1", 1, "an older, shorter summary")  # another worker, late: dropped
    assert store.summary("s1") == (2, "Orders: 88231")
    store.save_summary("s1", 4, "Orders: 88231\nRefunds: RF202606300001")
    assert store.summary("s1") == (4, "Orders: 88231\nRefunds: RF202606300001")
    assert store.turns("s1") == []  # a summary alone adds no turn


def test_delete_forgets_the_turns_and_the_summary(store):
    store.append_turn("s1", a_turn(1))
    store.save_summary("s1", 1, "text")
    store.append_turn("s2", a_turn(1))
    store.delete("s1")
    assert store.turns("s1") == [] and store.summary("s1") is None
    assert store.session_ids() == ["s2"]
    assert store.append_turn("s1", a_turn(1)).number == 1  # a new session under the old id starts at 1


def test_a_nul_in_a_turn_or_a_summary_is_kept_alike_by_both_stores(store):
    # pasted text may hold a NUL: PostgreSQL refused it (after the run, the turn lost), SQLite kept it
    store.append_turn("s1", a_turn(1, question="where is 88231?\x00", answer="on its way\x00"))
    store.save_summary("s1", 1, "asked about 88231\x00")
    [turn] = store.turns("s1")
    assert (turn.question, turn.answer) == ("where is 88231?\ufffd", "on its way\ufffd")
    assert store.summary("s1") == (1, "asked about 88231\ufffd")


def test_a_session_deleted_between_two_appends_starts_again_at_turn_one(store):
    store.append_turn("s1", a_turn(1))
    store.delete("s1")
    assert store.append_turn("s1", a_turn(2)).number == 1 and [t.question for t in store.turns("s1")] == ["question 2"]


def test_a_bad_session_id_is_refused(store):
    for bad in ("", "   ", None, 42, "x" * 201, "s\ud800"):
        with pytest.raises(ValueError, match="session id"):
            store.append_turn(bad, a_turn(1))
    assert store.session_ids() == []


def test_a_resumed_session_sees_its_history(store, target):
    """The session's id and its store are all it takes: a new Session object continues the conversation."""
    clock = fixed_clock("2026-06-30T19:05:23")
    agent = ReActAgent(LlmClient.classroom(), shop_registry(Shop(":memory:", clock=clock)))
    first = Session(agent, store=store)
    first.ask("Hi, my order is 88231.")
    store.close()

    with open_session_store(target) as reopened:
        resumed = Session(agent, store=reopened, session_id=first.id)
        assert [t.question for t in resumed.turns()] == ["Hi, my order is 88231."]
        result = resumed.ask("Where is it?")
        assert resumed.last_history[0] == {"role": "user", "content": "Hi, my order is 88231."}
        assert [call.name for call in result.trace.tool_calls] == ["queryOrder", "queryLogistics"]
        assert "SF1234567890" in result.answer
        assert [t.number for t in reopened.turns(first.id)] == [1, 2]


def test_a_summary_written_before_a_restart_is_not_written_again(store, target):
    clock = fixed_clock("2026-06-30T19:05:23")
    agent = ReActAgent(LlmClient.classroom(), shop_registry(Shop(":memory:", clock=clock)))
    memory = SummaryMemory(window=1)
    session = Session(agent, memory=memory, store=store)
    for question in ("Hi, my order is 88231.", "Where is it?", "What's today's date?"):
        session.ask(question)
    assert len(memory.calls) == 1 and store.summary(session.id)[0] == 1  # turn 1 left the window before turn 3
    session.history("Then refund it.")  # turn 2 leaves it now: the summary is brought up to date
    assert len(memory.calls) == 2 and store.summary(session.id)[0] == 2
    store.close()

    with open_session_store(target) as reopened:
        fresh_memory = SummaryMemory(window=1)
        resumed = Session(agent, memory=fresh_memory, store=reopened, session_id=session.id)
        history = resumed.history("Then refund it.")
        assert fresh_memory.calls == []  # the saved summary covers turns 1-2: nothing to summarize again
        assert "Orders: 88231" in history[0]["content"]


WORKER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from tinyagent.memory.session_store import Turn, open_session_store

    target, worker, count, go = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
    with open_session_store(target) as store:
        while not go.exists():  # every worker connected first, then all start writing at once
            time.sleep(0.01)
        for i in range(count):
            store.append_turn("shared", Turn(f"worker {worker} turn {i}", f"answer {worker}/{i}"))
    """
)


def test_several_processes_writing_to_one_session_lose_nothing(target, tmp_path):
    with open_session_store(target):  # the tables exist before the workers race
        pass
    workers, count = 4, 15
    go = tmp_path / "go"
    processes = [
        subprocess.Popen([sys.executable, "-c", WORKER, target, str(w), str(count), str(go)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for w in range(workers)
    ]
    try:
        time.sleep(0.5)  # not a timing assumption: a worker that connects later simply starts later
        go.touch()
        for process in processes:
            _, err = process.communicate(timeout=PATIENCE)
            assert process.returncode == 0, err
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    with open_session_store(target) as store:
        turns = store.turns("shared")
    assert [t.number for t in turns] == list(range(1, workers * count + 1))
    assert sorted(t.question for t in turns) == sorted(f"worker {w} turn {i}" for w in range(workers) for i in range(count))
    for w in range(workers):  # each worker's own turns are in the order it wrote them
        mine = [t.question for t in turns if t.question.startswith(f"worker {w} ")]
        assert mine == [f"worker {w} turn {i}" for i in range(count)]


# --- SQLite only ------------------------------------------------------------------------------------------


def test_an_in_memory_store_is_the_default_and_private(tmp_path):
    one, two = SqliteSessionStore(), SqliteSessionStore()
    one.append_turn("s", a_turn(1))
    assert two.turns("s") == [] and one.path == ":memory:"


def test_a_folder_or_a_text_file_is_not_a_session_store(tmp_path):
    with pytest.raises(SessionStoreError, match="is a folder"):
        SqliteSessionStore(tmp_path)
    text = tmp_path / "notes.txt"
    text.write_text("not a database, just text that is long enough to be read as a header\n" * 20)
    with pytest.raises(SessionStoreError, match="notes.txt is not an SQLite database: give the session store a new file name") as caught:
        SqliteSessionStore(text)
    assert "\n" not in str(caught.value)


def test_a_disk_that_fills_up_is_the_stores_own_error_and_the_store_goes_on(tmp_path):
    # SQLite rolls the transaction back by itself on SQLITE_FULL; a second ROLLBACK raised "cannot rollback - no
    # transaction is active", which was not a SessionStoreError (the service answered 500 after the run).
    with SqliteSessionStore(tmp_path / "sessions.db") as store:
        store.append_turn("s", a_turn(1))
        no_room_to_grow(store._conn)
        with pytest.raises(SessionStoreError, match="database or disk is full") as caught:
            store.append_turn("s", a_turn(2, answer="长" * 20_000))  # needs pages of its own: the file must grow
        assert "\n" not in str(caught.value) and str(tmp_path / "sessions.db") in str(caught.value)
        assert not store._conn.in_transaction
        assert [t.number for t in store.turns("s")] == [1]  # nothing of it kept: not even the turn count
        assert store.append_turn("s", a_turn(2)).number == 2  # what fits still goes in


def test_a_failed_commit_is_rolled_back_so_the_next_write_can_begin():
    # A COMMIT can fail and leave its transaction open (here a deferred foreign key): it used to stay open, and
    # every later BEGIN failed with "cannot start a transaction within a transaction".
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.executescript("PRAGMA foreign_keys = ON; CREATE TABLE parent (id INTEGER PRIMARY KEY); CREATE TABLE child "
                       "(parent INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)")
    with pytest.raises(sqlite3.IntegrityError), immediate_transaction(conn):
        conn.execute("INSERT INTO child VALUES (7)")  # no parent 7: only the COMMIT finds out
    assert not conn.in_transaction
    with immediate_transaction(conn):
        conn.execute("INSERT INTO parent VALUES (7)")
    assert conn.execute("SELECT COUNT(*) FROM child").fetchone()[0] == 0


def test_a_session_resumed_in_another_process_sees_its_history(tmp_path):
    """What a kernel restart is: a new Python process that opens the same file."""
    path = tmp_path / "sessions.db"
    clock = fixed_clock("2026-06-30T19:05:23")
    agent = ReActAgent(LlmClient.classroom(), shop_registry(Shop(":memory:", clock=clock)))
    with SqliteSessionStore(path) as store:
        session = Session(agent, memory=SlidingWindow(3), store=store)
        session.ask("Hi, my order is 88231.")
    code = textwrap.dedent(
        """
        import sys
        from tinyagent import LlmClient, ReActAgent, fixed_clock
        from tinyagent.memory.session import Session
        from tinyagent.memory.session_memory import SlidingWindow
        from tinyagent.memory.session_store import SqliteSessionStore
        from tinyagent.shop import Shop, shop_registry

        agent = ReActAgent(LlmClient.classroom(),
                           shop_registry(Shop(":memory:", clock=fixed_clock("2026-06-30T19:05:23"))))
        with SqliteSessionStore(sys.argv[1]) as store:
            session = Session(agent, memory=SlidingWindow(3), store=store, session_id=sys.argv[2])
            result = session.ask("Where is it?")
            print([t.number for t in session.turns()], [c.name for c in result.trace.tool_calls])
        """
    )
    done = subprocess.run([sys.executable, "-c", code, str(path), session.id], check=False, capture_output=True,
                          text=True, timeout=PATIENCE, env={**os.environ, "TINYAGENT_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[1, 2] ['queryOrder', 'queryLogistics']"


# --- PostgreSQL only --------------------------------------------------------------------------------------


def test_postgres_that_is_not_running_gives_one_line_naming_the_url_without_its_password():
    require_postgres()  # psycopg must be installed to get this far
    port = quiet_port_run()  # nothing listens on it
    url = f"postgresql://tiny:s3cret-Pa55@127.0.0.1:{port}/shop"
    with pytest.raises(SessionStoreError) as caught:
        PostgresSessionStore(url)
    message = str(caught.value)
    assert message == (
        f"cannot connect to PostgreSQL at postgresql://tiny@127.0.0.1:{port}/shop: "
        "Connection refused (is the server running?)"
    )
    assert "s3cret" not in repr(caught.value) and caught.value.__cause__ is None
    with pytest.raises(SessionStoreError) as caught:  # a URL with options
        open_session_store(f"postgresql://u:pw-in-url@127.0.0.1:{port}/db?sslmode=disable")
    assert "pw-in-url" not in str(caught.value) and "postgresql://u@127.0.0.1" in str(caught.value)
    with pytest.raises(SessionStoreError) as caught:  # the key=value form of a connection string
        PostgresSessionStore(f"host=127.0.0.1 port={port} user=u password=pw-kv dbname=db")
    assert str(caught.value).startswith(f"cannot connect to PostgreSQL at host=127.0.0.1 port={port} user=u dbname=db: ")
    assert "pw-kv" not in str(caught.value)


def test_a_postgres_server_that_goes_away_mid_session_is_one_line_without_the_password(tmp_path):
    with throwaway_postgres() as server:
        store = PostgresSessionStore(server.new_database())
        store.append_turn("s1", a_turn(1))
        server.stop()
        with pytest.raises(SessionStoreError) as caught:
            store.append_turn("s1", a_turn(2))
    message = str(caught.value)
    assert message.startswith(f"PostgreSQL at postgresql://postgres@127.0.0.1:{server.port}/")
    assert server.password not in message and "\n" not in message


def test_a_store_outlives_its_server_going_away_and_coming_back():
    with throwaway_postgres() as server:
        store = PostgresSessionStore(server.new_database())
        try:
            store.append_turn("s1", a_turn(1))
            server.stop(keep_data=True)
            with pytest.raises(SessionStoreError):
                store.turns("s1")
            server.start()
            # The dropped connection is noticed when next handed out, and replaced: no new store needed.
            deadline = time.monotonic() + 120
            while True:
                try:
                    number = store.append_turn("s1", a_turn(2)).number
                    break
                except SessionStoreError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
            assert number == 2 and [t.number for t in store.turns("s1")] == [1, 2]
        finally:
            store.close()


def test_a_wrong_password_is_reported_without_the_password():
    with throwaway_postgres() as server:
        url = f"postgresql://postgres:wrong-{server.password[:4]}@127.0.0.1:{server.port}/postgres"
        with pytest.raises(SessionStoreError) as caught:
            PostgresSessionStore(url)
    message = str(caught.value)
    assert "password authentication failed" in message and f"wrong-{server.password[:4]}" not in message
    assert message.startswith(f"cannot connect to PostgreSQL at postgresql://postgres@127.0.0.1:{server.port}/")


def test_without_psycopg_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg now raises ImportError
    with pytest.raises(SessionStoreError, match=r"pip install -e '\.\[postgres\]' in the course folder"):
        PostgresSessionStore("postgresql://u:p@127.0.0.1:5432/db")


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://tiny:secret@db.example:5432/shop", "postgresql://tiny@db.example:5432/shop"),
        ("postgres://tiny@db/shop", "postgres://tiny@db/shop"),
        ("postgresql://db/shop?user=tiny&password=secret&sslmode=require",
         "postgresql://db/shop?user=tiny&sslmode=require"),
        ("host=db user=tiny password=secret dbname=shop", "host=db user=tiny dbname=shop"),
        ("host=db password='se cret' dbname=shop", "host=db dbname=shop"),
    ],
)
def test_safe_url_takes_the_password_out(url, shown):
    assert safe_url(url) == shown and "secret" not in safe_url(url) and "cret" not in safe_url(url)


PLANT_A_LEFTOVER = """
import os
import shutil
import sys
import tempfile

become_another_account()
folder = sys.argv[1]
os.makedirs(os.path.join(folder, "data"))
with open(os.path.join(folder, "owner.pid"), "w") as file:
    file.write("999999999")  # a maker no longer alive
with open(os.path.join(folder, "data", "postmaster.pid"), "w") as file:
    file.write(sys.argv[2] + "\\n")  # the pid pg_ctl stop would signal
"""


@needs_root
def test_a_leftover_folder_another_account_made_in_tmp_is_not_stopped_or_deleted():
    """/tmp is every account's: a folder there with the tests' prefix, a dead maker and a postmaster.pid naming some
    process of the postgres account's is not one of ours, and pg_ctl stop must not signal what it names."""
    bin_dir = require_postgres()
    folder = Path(tempfile.gettempdir()) / f"{PREFIX}planted-{os.getpid()}"
    try:
        run_as_another_account(PLANT_A_LEFTOVER, str(folder), str(os.getpid()))
        assert folder not in stop_leftover_servers(bin_dir)
        assert (folder / "data" / "postmaster.pid").exists()  # left as it was, for its owner
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_server_left_by_a_killed_test_is_stopped_by_its_data_folder(tmp_path):
    """A test process killed outright leaves its postmaster running; the next start stops it."""
    bin_dir = require_postgres()
    code = textwrap.dedent(
        """
        import os, signal, sys
        sys.path.insert(0, sys.argv[1])
        from tests.postgres_server import throwaway_postgres
        with throwaway_postgres() as server:
            print(server.folder, server.port, flush=True)
            os.kill(os.getpid(), signal.SIGKILL)  # no finally runs: the server is left behind
        """
    )
    root = str(Path(__file__).resolve().parents[1])
    done = subprocess.run([sys.executable, "-c", code, root], check=False, capture_output=True, text=True,
                          timeout=PATIENCE)
    folder, port = done.stdout.split()
    assert Path(folder, "data", "postmaster.pid").exists()  # still running
    assert Path(folder) in stop_leftover_servers(bin_dir)
    assert not Path(folder).exists()
    with pytest.raises(SessionStoreError, match="Connection refused"):
        PostgresSessionStore(f"postgresql://postgres:x@127.0.0.1:{port}/postgres")


def test_a_user_who_may_not_create_the_tables_gets_one_line_without_the_password(postgres):
    import secrets

    import psycopg

    url, role = postgres.new_database(), f"reader_{secrets.token_hex(4)}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'reader-pw-123'")
    reader = url.replace(f"postgres:{postgres.password}@", f"{role}:reader-pw-123@")
    with pytest.raises(SessionStoreError) as caught:
        PostgresSessionStore(reader)
    message = str(caught.value)
    assert message.startswith(f"PostgreSQL at postgresql://{role}@127.0.0.1:") and "permission denied" in message
    assert "reader-pw-123" not in message and "\n" not in message


@pytest.mark.parametrize("url", ["mysql://u:pw@db/x", "sqlite:///tmp/s.db", "redis://:pw@cache:6379/0"])
def test_a_url_of_another_kind_is_refused_and_never_becomes_a_path(url, tmp_path, monkeypatch):
    from tinyagent.memory.session_store import open_session_store

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SessionStoreError) as caught:
        open_session_store(url)
    message = str(caught.value)
    assert message.startswith(f"a {url.split(':')[0]}:// URL is not a session store") and "pw" not in message
    assert list(tmp_path.iterdir()) == []
