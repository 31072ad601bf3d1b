"""The stores' audit: each SQLite store opens only the file it is named, refuses another program's file and writes
nothing into it, and says in one line what went wrong (a file moved away, a busy or full outbox); writeFile never
leaves half a file under its name; PostgreSQL's pool does not print its reconnect warnings beside the store's line.

Each test failed before its fix:
  1. a shop file whose `orders` has other columns was written into, and every tool failed "no such column: price"
  2. a path starting "file:" (a URI to this Python's SQLite) kept the turns, the facts, the outbox in memory only
  3. UserFacts and ReminderStore wrote their tables into a session store's file, which then refused to open
  4. ReminderStore: a folder or a text file raised raw sqlite3 errors; a busy outbox "tool sendWechat failed:
     OperationalError: database is locked" after 5 s that neither a stop nor Ctrl-C could end
  5. writeFile killed mid-write left half a new file under its name, and a temporary file listFiles showed
  6. a database file moved or deleted while open was said to be "read-only"
  7. PostgreSQL down: a dozen multi-line psycopg.pool warnings on stderr beside the store's one line
"""

from __future__ import annotations

import _thread
import contextlib
import json
import logging
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from tests.test_shop_busy_stop import holding_the_write_lock
from tinyagent import Action
from tinyagent.architectures import reminder_loop
from tinyagent.architectures.reminder_loop import ReminderStore, message_tool
from tinyagent.errors import ShopDatabaseError, TinyAgentError
from tinyagent.memory.session_store import SessionStoreError, SqliteSessionStore, Turn, open_session_store
from tinyagent.memory.user_facts import UserFacts
from tinyagent.registry import ToolRegistry
from tinyagent.shop import Shop, shop_registry
from tinyagent.toolkit.workspace_files import workspace_tools

URI_LIKE = "file:sessions.db?mode=memory"  # a file name that this Python's SQLite reads as a URI of a memory database


def _bytes_of(path) -> bytes:
    return open(path, "rb").read()


# -- 1. the shop refuses an `orders` table with other columns ------------------------------------------------------
def _orders_of_another_program(path) -> bytes:
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("CREATE TABLE orders(order_id TEXT PRIMARY KEY, product TEXT)")
        db.execute("INSERT INTO orders VALUES ('88231', 'x')")
    return _bytes_of(path)


def test_a_shop_file_whose_orders_table_has_other_columns_is_refused_and_left_as_it_was(tmp_path):
    path = tmp_path / "orders.db"
    before = _orders_of_another_program(path)
    with pytest.raises(ShopDatabaseError) as caught:
        Shop(path)
    assert "orders" in str(caught.value) and "\n" not in str(caught.value)
    assert _bytes_of(path) == before


def test_ask_with_such_a_file_exits_2_with_one_line_and_writes_nothing(tmp_path):
    path = tmp_path / "orders.db"
    before = _orders_of_another_program(path)
    done = subprocess.run([sys.executable, "-m", "tinyagent", "ask", "I want a refund for order 88231", "--db",
                           str(path)], check=False, capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env={**os.environ, "TINYAGENT_OFFLINE": "1"})
    assert done.returncode == 2, done.stdout
    assert len(done.stderr.strip().splitlines()) == 1 and "orders" in done.stderr, done.stderr
    assert _bytes_of(path) == before


def test_a_shop_file_the_shop_made_still_opens(tmp_path):
    Shop(tmp_path / "shop.db").close()
    with Shop(tmp_path / "shop.db") as shop:
        assert shop.get_order("88231")["price"] == 1999


# -- 2. a name starting "file:" is a file --------------------------------------------------------------------------
def test_a_session_store_named_like_a_uri_keeps_its_turns_in_that_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with open_session_store(URI_LIKE) as store:
        store.append_turn("alice", Turn("refund 88231?", "Done"))
    with open_session_store(URI_LIKE) as store:
        assert [turn.answer for turn in store.turns("alice")] == ["Done"]
    assert (tmp_path / URI_LIKE).is_file()


def test_user_facts_named_like_a_uri_are_kept_in_that_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with UserFacts("file:facts.db?mode=memory") as facts:
        facts.remember("u1", "I live in Hangzhou.")
    with UserFacts("file:facts.db?mode=memory") as facts:
        assert [fact.text for fact in facts.facts("u1")] == ["I live in Hangzhou."]


def test_an_outbox_named_like_a_uri_keeps_its_messages_in_that_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with ReminderStore("file:me.db?mode=memory") as store:
        store.send("take an umbrella")
    with ReminderStore("file:me.db?mode=memory") as store:
        assert [message["text"] for message in store.outbox()] == ["take an umbrella"]


# -- 3. the facts and the outbox refuse another program's file ------------------------------------------------------
@pytest.mark.parametrize("maker", [UserFacts, ReminderStore], ids=["UserFacts", "ReminderStore"])
def test_a_session_stores_file_is_refused_and_its_sessions_stay_reachable(tmp_path, maker):
    path = tmp_path / "sessions.db"
    with SqliteSessionStore(path) as sessions:
        sessions.append_turn("alice", Turn("q", "a"))
    before = _bytes_of(path)
    with pytest.raises(TinyAgentError, match=r"another program's database \(its tables: session_turns, sessions\)"):
        maker(str(path))
    assert _bytes_of(path) == before
    with SqliteSessionStore(path) as sessions:
        assert len(sessions.turns("alice")) == 1


@pytest.mark.parametrize("maker", [UserFacts, ReminderStore], ids=["UserFacts", "ReminderStore"])
def test_a_table_of_the_stores_name_with_other_columns_is_refused(tmp_path, maker):
    path = tmp_path / "mine.db"
    table = "user_facts" if maker is UserFacts else "outbox"
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute(f"CREATE TABLE {table} (note TEXT)")
    with pytest.raises(TinyAgentError, match=f"its tables: {table}"):
        maker(str(path))


@pytest.mark.parametrize("maker", [UserFacts, ReminderStore], ids=["UserFacts", "ReminderStore"])
def test_a_file_the_store_made_opens_again(tmp_path, maker):
    path = str(tmp_path / "mine.db")
    maker(path).close()
    maker(path).close()


# -- 4. the outbox's own errors ----------------------------------------------------------------------------------
def test_an_outbox_path_that_is_a_folder_or_a_text_file_is_one_line(tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    for path, words in ((tmp_path, "is a folder"), (tmp_path / "notes.txt", "not an SQLite database")):
        with pytest.raises(TinyAgentError, match=words) as caught:
            ReminderStore(str(path))
        assert "\n" not in str(caught.value)


def test_a_busy_outbox_is_an_error_observation_saying_nothing_was_sent(tmp_path, monkeypatch):
    monkeypatch.setattr(reminder_loop, "BUSY_TIMEOUT_SECONDS", 0.5, raising=False)
    path = tmp_path / "me.db"
    with ReminderStore(str(path)) as store:
        tools = ToolRegistry([message_tool(store)])
        with holding_the_write_lock(path, "BEGIN EXCLUSIVE"):
            started = time.monotonic()
            result = tools.run(Action("sendWechat", '{"text": "take an umbrella"}'))
            waited = time.monotonic() - started
        assert result.error and "nothing was sent" in result.text and "try again" in result.text, result.text
        assert "OperationalError" not in result.text and waited < 4
        assert store.outbox() == []


def test_a_full_outbox_is_an_error_observation_saying_nothing_was_sent(tmp_path):
    with ReminderStore(str(tmp_path / "me.db")) as store:
        pages = store.conn.execute("PRAGMA page_count").fetchone()[0]
        store.conn.execute(f"PRAGMA max_page_count = {pages}")  # the file cannot grow: as a full disk
        tools = ToolRegistry([message_tool(store)])
        for sent in range(100):  # until the file's last page is full
            result = tools.run(Action("sendWechat", json.dumps({"text": f"reminder {sent}: " + "y" * 450})))
            if result.error:
                break
        assert "nothing was sent" in result.text and "try again" in result.text, result.text
        assert len(store.outbox()) == sent


@pytest.fixture
def python_handles_ctrl_c():
    """interrupt_main does nothing where SIGINT is ignored, as in a test run started in the background (CI's):
    Python's own handler, for the test, makes it the Ctrl-C it stands for."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_an_outbox_wait_ends_at_a_stop_and_at_ctrl_c(tmp_path, monkeypatch, python_handles_ctrl_c):
    monkeypatch.setattr(reminder_loop, "BUSY_TIMEOUT_SECONDS", 30.0, raising=False)
    path = tmp_path / "me.db"
    with ReminderStore(str(path)) as store, holding_the_write_lock(path, "BEGIN EXCLUSIVE"):
        tools = ToolRegistry([message_tool(store)])
        timer = threading.Timer(0.5, _thread.interrupt_main)
        started = time.monotonic()
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            tools.run(Action("sendWechat", '{"text": "take an umbrella"}'))
            time.sleep(10)  # the old store's wait (5 s in one C call) ends before the Ctrl-C is raised: not here
        assert time.monotonic() - started < 3
        stopper = threading.Timer(0.5, getattr(store, "stop_waiting", lambda: None))
        started = time.monotonic()
        stopper.start()
        result = tools.run(Action("sendWechat", '{"text": "take an umbrella"}'))
        assert time.monotonic() - started < 3 and "nothing was sent" in result.text, result.text
    with ReminderStore(str(path)) as store:
        assert store.outbox() == []


# -- 5. writeFile: a new file appears only whole --------------------------------------------------------------------
KILLED_MID_WRITE = textwrap.dedent("""
    import json, os, sys
    real_write = os.write
    def write_half_then_die(fd, data):
        real_write(fd, bytes(data[:len(data) // 2]))
        os._exit(9)  # as a kill -9 in the middle of the write: nothing after it runs
    os.write = write_half_then_die
    from tinyagent.toolkit.workspace_files import write_file_tool
    write_file_tool(sys.argv[1]).invoke(json.dumps({"file_path": sys.argv[2], "content": "x" * 90000,
                                                    "overwrite": True}))
""")


def _killed_mid_write(workspace, name: str) -> None:
    done = subprocess.run([sys.executable, "-c", KILLED_MID_WRITE, str(workspace), name], check=False,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 9, done.stderr


def _listed(workspace) -> list[str]:
    tools = {tool.name: tool for tool in workspace_tools(workspace)}
    return [entry["name"] for entry in json.loads(tools["listFiles"].invoke("{}"))["entries"]]


def test_a_new_file_killed_mid_write_is_not_there_and_a_retry_writes_it(tmp_path):
    _killed_mid_write(tmp_path, "new.txt")
    assert not (tmp_path / "new.txt").exists()
    assert _listed(tmp_path) == []
    tools = {tool.name: tool for tool in workspace_tools(tmp_path)}
    written = json.loads(tools["writeFile"].invoke(json.dumps({"file_path": "new.txt", "content": "whole"})))
    assert written.get("created") is True, written
    assert (tmp_path / "new.txt").read_text() == "whole"


def test_an_overwrite_killed_mid_write_keeps_the_old_file_and_lists_nothing_else(tmp_path):
    (tmp_path / "old.txt").write_text("old content, whole\n")
    _killed_mid_write(tmp_path, "old.txt")
    assert (tmp_path / "old.txt").read_text() == "old content, whole\n"
    assert _listed(tmp_path) == ["old.txt"]


def test_write_file_refuses_a_name_of_its_temporary_files_which_list_files_hides(tmp_path):
    tools = {tool.name: tool for tool in workspace_tools(tmp_path)}
    answer = json.loads(tools["writeFile"].invoke(json.dumps({"file_path": ".notes.txt.1a2b3c4d.tmp", "content": "x"})))
    assert "temporary files" in answer["error"] and not list(tmp_path.iterdir())


# -- 6. a file moved or deleted while open --------------------------------------------------------------------------
def test_a_shop_file_deleted_while_open_says_so_not_read_only(tmp_path):
    path = tmp_path / "shop.db"
    Shop(path).close()
    shop = Shop(path)
    try:
        os.remove(path)
        text = shop_registry(shop).run(Action("applyRefund", '{"orderId": "88236", "reason": "broken"}')).text
    finally:
        shop.close()
    assert "moved or deleted" in text and "restart" in text and "read-only" not in text, text


def test_a_session_store_moved_while_open_says_so_not_read_only(tmp_path):
    path = tmp_path / "sessions.db"
    with SqliteSessionStore(path) as store:
        store.append_turn("a", Turn("q", "a"))
        shutil.move(path, tmp_path / "moved.db")
        with pytest.raises(SessionStoreError) as caught:
            store.append_turn("a", Turn("q2", "a2"))
    message = str(caught.value)
    assert "moved or deleted" in message and "restart" in message and "readonly" not in message, message


# -- 7. PostgreSQL down: one line, no pool warnings -------------------------------------------------------------------
def test_postgres_down_gives_the_stores_line_and_no_pool_warnings(monkeypatch, caplog):
    from tests.postgres_server import throwaway_postgres
    from tinyagent.memory import session_store
    from tinyagent.memory.session_store import PostgresSessionStore

    monkeypatch.setattr(session_store, "POOL_WAIT_SECONDS", 1.0)
    caplog.set_level(logging.INFO, logger="psycopg.pool")
    with throwaway_postgres() as server:
        store = PostgresSessionStore(server.new_database())
        try:
            server.stop(keep_data=True)
            with pytest.raises(SessionStoreError, match="failed: couldn't get a connection"):
                store.append_turn("p", Turn("q", "a"))
            time.sleep(3)  # the pool tries to reconnect while idle
        finally:
            store.close()
        # Another pool's warnings are still logged: only the stores' own are quieted.
        logging.getLogger("psycopg.pool").warning("error connecting in %r: %s", "someone-elses-pool", "refused")
    pool_records = [record.getMessage() for record in caplog.records if record.name.startswith("psycopg.pool")
                    and record.levelno >= logging.WARNING]
    assert pool_records == ["error connecting in 'someone-elses-pool': refused"], pool_records
