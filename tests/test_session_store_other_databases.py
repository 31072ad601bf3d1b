"""SqliteSessionStore refuses an SQLite file that is another program's database (the shop's, say): it adds no
tables to it and leaves it as it was."""

from __future__ import annotations

import sqlite3

import pytest

from tinyagent.memory.session_store import SessionStoreError, SqliteSessionStore, Turn
from tinyagent.shop import Shop


def _made_by_another_program(path, schema: str) -> bytes:
    with sqlite3.connect(path) as db:
        db.execute(schema)
    db.close()
    return path.read_bytes()


def test_the_shops_database_is_refused_and_left_as_it_was(tmp_path):
    path = tmp_path / "shop.db"
    with Shop(path):
        pass
    before = path.read_bytes()
    with pytest.raises(SessionStoreError, match=r"shop\.db is the shop's database \(its tables: .*\), not a session "
                                                r"store: sessions are not written into it"):
        SqliteSessionStore(path)
    assert path.read_bytes() == before  # no sessions, no session_turns


def test_another_programs_database_is_refused_with_its_tables(tmp_path):
    path = tmp_path / "notes.sqlite"
    before = _made_by_another_program(path, "CREATE TABLE notes (text)")
    with pytest.raises(SessionStoreError, match=r"is another program's database \(its tables: notes\)"):
        SqliteSessionStore(path)
    assert path.read_bytes() == before


def test_a_sessions_table_of_another_program_is_not_taken_for_ours(tmp_path):
    # A web framework's database often has a table called sessions: ours would have added session_turns beside it.
    path = tmp_path / "web.sqlite"
    before = _made_by_another_program(path, "CREATE TABLE sessions (session_key TEXT PRIMARY KEY, data TEXT)")
    with pytest.raises(SessionStoreError, match=r"another program's database \(its tables: sessions\)"):
        SqliteSessionStore(path)
    assert path.read_bytes() == before


def test_a_file_the_store_made_opens_again_with_its_turns(tmp_path):
    path = tmp_path / "sessions.db"
    with SqliteSessionStore(path) as store:
        store.append_turn("s", Turn("q", "a"))
    with SqliteSessionStore(path) as store:
        assert [turn.answer for turn in store.turns("s")] == ["a"]
