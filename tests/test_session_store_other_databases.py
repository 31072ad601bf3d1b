"""SqliteSessionStore refuses an SQLite file that is another program's database (the shop's, say): it adds no
tables to it and leaves it as it was. PostgresSessionStore refuses a database whose schema holds another program's
`sessions` or `session_turns` table the same way, and shares one with any other table (an application's database).
"""

from __future__ import annotations

import sqlite3

import pytest

from tests.postgres_server import throwaway_postgres
from tinyagent.memory.session_store import PostgresSessionStore, SessionStoreError, SqliteSessionStore, Turn
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


@pytest.mark.parametrize("table, schema", [
    ("notes", "CREATE TABLE notes (text)"),
    # A web framework's database often has a table called sessions: ours would have added session_turns beside it.
    ("sessions", "CREATE TABLE sessions (session_key TEXT PRIMARY KEY, data TEXT)"),
], ids=["its own tables", "a sessions table not ours"])
def test_another_programs_database_is_refused_with_its_tables(tmp_path, table, schema):
    path = tmp_path / "other.sqlite"
    before = _made_by_another_program(path, schema)
    with pytest.raises(SessionStoreError, match=rf"is another program's database \(its tables: {table}\)"):
        SqliteSessionStore(path)
    assert path.read_bytes() == before


def test_a_file_the_store_made_opens_again_with_its_turns(tmp_path):
    path = tmp_path / "sessions.db"
    with SqliteSessionStore(path) as store:
        store.append_turn("s", Turn("q", "a"))
    with SqliteSessionStore(path) as store:
        assert [turn.answer for turn in store.turns("s")] == ["a"]


# --- PostgreSQL -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def postgres():
    with throwaway_postgres() as server:
        yield server


def _run(url: str, *statements: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def _tables_and_rows(url: str) -> dict:
    """Every table of the database: its columns, and its rows in order."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        names = [row[0] for row in conn.execute(
            "SELECT table_schema || '.' || table_name FROM information_schema.tables WHERE table_schema NOT IN "
            "('pg_catalog', 'information_schema') ORDER BY 1")]
        return {name: ([row[0] for row in conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema || '.' || table_name = %s "
            "ORDER BY ordinal_position", (name,))], conn.execute(f"SELECT * FROM {name} ORDER BY 1").fetchall())
            for name in names}


@pytest.mark.parametrize("table, made", [
    # An auth library's sessions (Lucia's shape): a text id, as ours, so the store's foreign key fitted it.
    ("sessions", [("CREATE TABLE sessions (id TEXT PRIMARY KEY, user_id INTEGER NOT NULL, expires_at TIMESTAMPTZ "
                   "NOT NULL)"), "INSERT INTO sessions VALUES ('abc', 7, '2026-06-30T19:05:23Z')"]),
    ("session_turns", ["CREATE TABLE session_turns (id INTEGER PRIMARY KEY, session_key TEXT, body TEXT)",
                       "INSERT INTO session_turns VALUES (1, 'abc', 'x')"]),
])
def test_postgres_refuses_another_programs_table_of_our_name_and_makes_nothing(postgres, table, made):
    # A web framework's `sessions` was taken for ours (CREATE TABLE IF NOT EXISTS skipped it): the store opened,
    # and failed at its first turn. Beside another program's session_turns, it made a `sessions` table.
    url = postgres.new_database()
    _run(url, *made)
    before = _tables_and_rows(url)
    with pytest.raises(SessionStoreError) as caught:
        PostgresSessionStore(url)
    shown = url.replace(f":{postgres.password}@", "@")
    assert str(caught.value) == (
        f"{shown} already has a table public.{table} that is another program's, not a session store's: sessions "
        "are not written into it; give the store a database of its own (or a schema of its own, first on its "
        "user's search_path)")
    assert _tables_and_rows(url) == before  # the same columns and rows, and no table of ours beside it


def test_postgres_shares_a_database_with_an_applications_other_tables(postgres):
    url = postgres.new_database()
    _run(url, "CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT)", "INSERT INTO orders VALUES (88231, 'S10')",
         "CREATE SCHEMA web", "CREATE TABLE web.sessions (session_key TEXT PRIMARY KEY, data TEXT)")
    with PostgresSessionStore(url) as store:  # web.sessions is not on the search_path: not the store's schema
        store.append_turn("s", Turn("q", "a"))
    tables = _tables_and_rows(url)
    assert tables["public.orders"] == (["id", "item"], [(88231, "S10")])
    assert tables["web.sessions"] == (["session_key", "data"], [])
    assert {"public.sessions", "public.session_turns"} <= tables.keys()


def test_postgres_a_database_the_store_made_opens_again_with_its_turns(postgres):
    url = postgres.new_database()
    with PostgresSessionStore(url) as store:
        store.append_turn("s", Turn("q", "a"))
    with PostgresSessionStore(url) as store:
        assert [turn.answer for turn in store.turns("s")] == ["a"]
