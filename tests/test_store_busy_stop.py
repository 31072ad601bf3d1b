"""A stop while the session store (or the user facts) waits for another program's lock (sqlite_writes.LockWait).

SQLite's busy wait is one C call that neither a signal nor Connection.interrupt() ends. A run's turn stored at its
end while another program (a teacher's `sqlite3` shell in a transaction) held the store's file held `serve` for the
whole busy timeout (30 s) after SIGTERM or SIGINT, and a Ctrl-C in a program appending a turn just as long. The shop
waits in slices since 60ec6d7 (tests/test_shop_busy_stop.py); the store and the facts now wait with the same helper.
Here each stop must come well before 30 s, with no traceback, and no answer may say its turn was stored when it was
not. Also: the store's wait still ends at BUSY_TIMEOUT_SECONDS when nobody stops it, and still succeeds when the
lock is let go in the middle of it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests

from tests.conftest import DEFAULT_SIGINT_THEN_EXEC, PATIENCE
from tests.serving_process import serve_process, wait_for
from tests.test_shop_busy_stop import STOP_WITHIN, EventReader, holding_the_write_lock
from tinyagent.memory.session_store import SessionStoreError, SqliteSessionStore, Turn
from tinyagent.memory.user_facts import UserFacts

QUESTION = "帮我看看订单 88231 的快递到哪了。"  # the offline classroom model answers it in three rounds, no refund
NOT_STORED = "the answer was not stored in the session"  # what an answer whose turn was not stored says (app.py)


def turns_in(path: Path) -> list[tuple]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return db.execute("SELECT session_id, number FROM session_turns").fetchall()


# -- the store's own wait ----------------------------------------------------------------------------------------
def test_a_stores_wait_nobody_stops_still_gives_up_after_the_busy_timeout(tmp_path, monkeypatch):
    monkeypatch.setattr("tinyagent.memory.session_store.BUSY_TIMEOUT_SECONDS", 0.5)
    path = tmp_path / "sessions.db"
    with SqliteSessionStore(path) as store:
        with holding_the_write_lock(path):
            started = time.monotonic()
            with pytest.raises(SessionStoreError, match=f"the session store {path} is busy"):
                store.append_turn("s1", Turn("q", "a"))
            waited = time.monotonic() - started
        assert store.turns("s1") == []
    assert 0.5 <= waited < STOP_WITHIN  # the whole timeout, in slices, and then no longer


def test_a_stores_read_nobody_stops_still_gives_up_after_the_busy_timeout(tmp_path, monkeypatch):
    monkeypatch.setattr("tinyagent.memory.session_store.BUSY_TIMEOUT_SECONDS", 0.5)
    path = tmp_path / "sessions.db"
    with SqliteSessionStore(path) as store, holding_the_write_lock(path, "BEGIN EXCLUSIVE"):  # no one else may even read
        started = time.monotonic()
        with pytest.raises(SessionStoreError, match=f"the session store {path} is busy"):
            store.turns("s1")
        assert 0.5 <= time.monotonic() - started < STOP_WITHIN


@pytest.mark.parametrize("how", ["BEGIN IMMEDIATE", "BEGIN EXCLUSIVE"], ids=["a-writer", "an-exclusive-lock"])
def test_a_stores_append_succeeds_when_the_lock_is_let_go_in_the_middle_of_its_wait(tmp_path, monkeypatch, how):
    monkeypatch.setattr("tinyagent.memory.session_store.BUSY_TIMEOUT_SECONDS", 20.0)
    path = tmp_path / "sessions.db"
    with SqliteSessionStore(path) as store, holding_the_write_lock(path, how) as other:
        threading.Timer(0.5, other.execute, ["ROLLBACK"]).start()  # the other program ends its transaction
        assert store.append_turn("s1", Turn("q", "a")).number == 1
        assert [turn.answer for turn in store.turns("s1")] == ["a"]


def test_stop_waiting_ends_a_stores_wait_at_once_and_stores_nothing(tmp_path):
    # The busy timeout is the real one (30 s): only the stop can end the wait this soon.
    path = tmp_path / "sessions.db"
    with SqliteSessionStore(path) as store, holding_the_write_lock(path):
        threading.Timer(0.5, store.stop_waiting).start()
        started = time.monotonic()
        with pytest.raises(SessionStoreError, match="is busy .*: try again shortly"):  # the store's words for a busy file
            store.append_turn("s1", Turn("q", "a"))
        assert time.monotonic() - started < STOP_WITHIN
    assert turns_in(path) == []


def test_stop_waiting_ends_the_user_facts_wait_too(tmp_path):
    path = tmp_path / "facts.db"
    with UserFacts(path) as facts, holding_the_write_lock(path):
        threading.Timer(0.5, facts.stop_waiting).start()
        started = time.monotonic()
        with pytest.raises(SessionStoreError, match=f"the facts store {path} is busy"):
            facts.remember("u1", "I live in Hangzhou.")
        assert time.monotonic() - started < STOP_WITHIN
    with UserFacts(path) as facts:
        assert facts.facts("u1") == []  # nothing was kept


def test_the_user_facts_wait_still_gives_up_after_the_busy_timeout(tmp_path, monkeypatch):
    monkeypatch.setattr("tinyagent.memory.user_facts.BUSY_TIMEOUT_SECONDS", 0.5)
    path = tmp_path / "facts.db"
    with UserFacts(path) as facts, holding_the_write_lock(path):
        started = time.monotonic()
        with pytest.raises(SessionStoreError, match=f"the facts store {path} is busy"):
            facts.remember("u1", "I live in Hangzhou.")
        assert 0.5 <= time.monotonic() - started < STOP_WITHIN


# -- serve --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_serve_stops_at_once_while_a_streamed_runs_turn_waits_for_the_stores_lock(tmp_path, signum):
    # It took the rest of the busy timeout (30 s), and uvicorn said "timeout graceful shutdown exceeded".
    pytest.importorskip("starlette")
    sessions = tmp_path / "sessions.sqlite3"
    with serve_process(tmp_path) as service, holding_the_write_lock(sessions):  # the service made the file: now it waits
        reader = EventReader(service.url, QUESTION)
        try:
            wait_for(lambda: any(kind == "final" for kind, _ in reader.events), "the run's final answer")
            time.sleep(1.0)  # the turn has had time to be stored, were the file free
            assert "end" not in {kind for kind, _ in reader.events}, reader.events[-1]  # it waits for the lock
            started = time.monotonic()
            assert service.server.stop(signum) == 0
            took = time.monotonic() - started
            events = reader.wait_for_the_end()
        finally:
            reader.response.close()
    assert took < STOP_WITHIN, f"the stop took {took:.1f} s"
    errors = service.server.stderr
    assert "Traceback" not in errors and "graceful shutdown exceeded" not in errors, errors[-2000:]
    assert turns_in(sessions) == []  # the lock is let go now: nothing was stored after the stop either
    ends = [data for kind, data in events if kind == "end"]
    for end in ends:  # an end that came says the turn was not stored; no end is no claim either
        assert end["turn"] is None and end["warning"].startswith(NOT_STORED), end
        assert "88231" in end["answer"]  # the answer itself still reaches the client
    assert '"turn": 1' not in json.dumps(events, ensure_ascii=False)


def test_serve_stops_at_once_while_an_invoked_runs_turn_waits_for_the_stores_lock(tmp_path):
    pytest.importorskip("starlette")
    sessions = tmp_path / "sessions.sqlite3"
    answers: list[requests.Response] = []
    with serve_process(tmp_path) as service, holding_the_write_lock(sessions):
        asking = threading.Thread(target=lambda: answers.append(
            requests.post(service.url + "/agent/invoke", json={"query": QUESTION}, timeout=PATIENCE)), daemon=True)
        asking.start()
        time.sleep(3.0)  # the offline model answers in well under a second: the run now waits to store its turn
        assert not answers, answers[0].text  # still waiting for the lock
        started = time.monotonic()
        assert service.server.stop(signal.SIGTERM) == 0
        took = time.monotonic() - started
        asking.join(PATIENCE)
    assert took < STOP_WITHIN, f"the stop took {took:.1f} s"
    assert "Traceback" not in service.server.stderr, service.server.stderr[-2000:]
    assert turns_in(sessions) == []
    [answer] = answers
    assert answer.status_code == 200, answer.text
    assert answer.json()["turn"] is None and answer.json()["warning"].startswith(NOT_STORED), answer.json()


# -- Ctrl-C in a program that stores a turn (a notebook's kernel, a script; `ask` keeps no session) -------------------
APPENDING = """
import sys
from tinyagent.memory.session_store import SqliteSessionStore, Turn

store = SqliteSessionStore(sys.argv[1])
print("open", flush=True)
sys.stdin.readline()  # the test takes the lock, then says go
print("appending", flush=True)
try:
    store.append_turn("s1", Turn("q", "a"))
except KeyboardInterrupt:
    print("interrupted", file=sys.stderr)
    sys.exit(130)
"""


def test_ctrl_c_ends_a_turns_wait_for_the_stores_lock_at_once(tmp_path):
    # It took the rest of the busy timeout (30 s) for Python to see the Ctrl-C.
    path = tmp_path / "sessions.db"
    script = tmp_path / "appending.py"
    script.write_text(APPENDING, encoding="utf-8")
    env = {name: value for name, value in os.environ.items() if not name.startswith("TINYAGENT_")}
    command = subprocess.Popen([sys.executable, "-c", DEFAULT_SIGINT_THEN_EXEC,  # Ctrl-C works, however it began
                                sys.executable, str(script), str(path)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env)
    try:
        assert command.stdout.readline() == "open\n", command.communicate()
        with holding_the_write_lock(path):
            command.stdin.write("go\n")
            command.stdin.flush()
            assert command.stdout.readline() == "appending\n", command.communicate()
            time.sleep(1.0)  # the turn has had time to be stored, were the file free
            assert command.poll() is None, command.communicate()  # still waiting for the lock
            started = time.monotonic()
            command.send_signal(signal.SIGINT)
            _out, err = command.communicate(timeout=PATIENCE)
            took = time.monotonic() - started
    finally:
        if command.poll() is None:
            command.kill()
            command.communicate()
    assert took < STOP_WITHIN, f"the stop took {took:.1f} s"
    assert command.returncode == 130 and err == "interrupted\n", err
    assert turns_in(path) == []
