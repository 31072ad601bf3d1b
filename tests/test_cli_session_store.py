"""`python -m tinyagent serve --session-store ...`: a value that cannot be the sessions' own file is one line, exit 2,
before anything is made or changed."""

from __future__ import annotations

import os
import sqlite3

import pytest

from tinyagent.shop import Shop

from .conftest import ServerProcess
from .test_cli import run_main


def _refused(tmp_path, *args) -> str:
    """The one line `serve ARGS` says on stderr as it exits 2 without serving; the test fails, not hangs, if it
    starts serving (ServerProcess kills it on the way out)."""
    env = {**os.environ, "TINYAGENT_OFFLINE": "1", "HOME": str(tmp_path)}
    with ServerProcess("serve", "--port", "0", *args, env=env) as server:
        with pytest.raises(AssertionError, match="before printing"):
            server.wait_for_line("Press Ctrl-C to stop")
        assert server.process.returncode == 2 and "Traceback" not in server.stderr, server.output()
        [line] = server.stderr.strip().splitlines()
        return line


def _tables(path) -> list[str]:
    with sqlite3.connect(path) as db:
        tables = sorted(row[0] for row in db.execute("SELECT name FROM sqlite_schema WHERE type = 'table'"))
    db.close()
    return tables


def test_the_shops_database_as_the_session_store_is_refused_and_left_as_it_was(tmp_path):
    # It got tables sessions and session_turns, and the service started as if nothing were amiss.
    shop = tmp_path / "shop.db"
    with Shop(shop):
        pass
    tables = _tables(shop)
    line = _refused(tmp_path, "--db", str(tmp_path / "other.db"), "--session-store", str(shop))
    assert line.startswith(f"error: {shop} is the shop's database (its tables: ")
    assert _tables(shop) == tables and "sessions" not in tables


def test_the_same_file_for_shop_and_sessions_is_refused_before_it_is_made(tmp_path):
    line = _refused(tmp_path, "--db", str(tmp_path / "both.db"), "--session-store", f"{tmp_path}/./both.db")
    assert line == (f"error: --session-store and --db are the same file ({tmp_path}/./both.db): the sessions need a "
                    "file of their own")
    assert not (tmp_path / "both.db").exists()


@pytest.mark.parametrize("store", ["", " ", "\t"], ids=["empty", "space", "tab"])
def test_an_empty_or_blank_session_store_is_one_line(tmp_path, monkeypatch, capsys, store):
    # '' quietly meant the default file; ' ' made a file named " " in the current folder.
    from tinyagent.serving import ServiceServer

    def started(*args, **kwargs):
        raise AssertionError(f"--session-store {store!r}: the service started")

    monkeypatch.setattr(ServiceServer, "serve_forever", started)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    code, out, err = run_main(["serve", "--port", "0", "--db", str(tmp_path / "shop.db"), "--session-store", store],
                              capsys)
    assert code == 2 and out == "", err
    assert err.strip() == (f"error: --session-store needs an SQLite file or a postgresql:// URL, got {store!r} (leave "
                           "it out for ~/.cache/tinyagent/sessions.sqlite3) (see python -m tinyagent serve --help)")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("url", ["postgres://[::1/db", "postgresql://tiny:secret@[zz]/db",
                                 "postgresql://tiny:secret@host:99x/db"], ids=["bracket open", "no address", "no port"])
def test_a_postgresql_url_that_cannot_be_read_is_one_line_that_keeps_its_password(tmp_path, url):
    # It was "error: Invalid IPv6 URL", naming neither the option nor the form a URL takes.
    line = _refused(tmp_path, "--db", str(tmp_path / "shop.db"), "--session-store", url)
    assert line.startswith("error: the PostgreSQL URL cannot be read (") and "postgresql://user@[::1]" in line, line
    assert "secret" not in line


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_refused_session_store_leaves_no_new_shop_file(tmp_path, workers):
    # The shop's file was made first, then the store refused: exit 2, and a new shop.db nobody was told about.
    notes = tmp_path / "notes.sqlite"
    with sqlite3.connect(notes) as db:
        db.execute("CREATE TABLE notes (text)")
    db.close()
    line = _refused(tmp_path, "--workers", workers, "--db", str(tmp_path / "shop.db"), "--session-store", str(notes))
    assert line.startswith(f"error: {notes} is another program's database (its tables: notes)"), line
    assert sorted(path.name for path in tmp_path.iterdir()) == ["notes.sqlite"]


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_refused_shop_leaves_no_new_session_store(tmp_path, workers):
    # The other order's mistake: the store made first, then the shop refused (the shop's file is there, so it is
    # checked first).
    (tmp_path / "folder").mkdir()
    line = _refused(tmp_path, "--workers", workers, "--db", str(tmp_path / "folder"), "--session-store",
                    str(tmp_path / "sessions.db"))
    assert line.startswith(f"error: {tmp_path / 'folder'} is a folder: give the shop's database a file path"), line
    assert sorted(path.name for path in tmp_path.iterdir()) == ["folder"]


def test_a_named_pipe_as_the_session_store_is_one_line(tmp_path):
    # Refused in one line and left as it was: the store now looks before SQLite opens it, as the shop does (an SQLite
    # that waited on a pipe would fail this test after PATIENCE, its server killed, not hang the run).
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    line = _refused(tmp_path, "--db", str(tmp_path / "shop.db"), "--session-store", str(pipe))
    assert line == f"error: {pipe} is not a regular file: give the session store a file path, such as sessions.db"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["pipe"]


def test_a_session_store_that_cannot_be_made_leaves_no_folders_behind(tmp_path):
    # SQLite takes paths of at most 504 bytes: the store made the folders on the way, and left them after exit 2. The
    # line said "cannot create ... (unable to open database file): give a path in a folder you can write to".
    deep = tmp_path / "made" / ("d" * 200) / ("d" * 200) / ("d" * 200) / "sessions.db"
    line = _refused(tmp_path, "--db", str(tmp_path / "shop.db"), "--session-store", str(deep))
    assert line == (f"error: the session store {deep} cannot be opened: its full path is too long for SQLite "
                    f"({len(os.fsencode(deep.resolve()))} bytes; SQLite opens at most 504): give a shorter path"), line
    assert list(tmp_path.iterdir()) == []
