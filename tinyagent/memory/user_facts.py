"""Long-term memory about a user: short facts kept across sessions, recalled by relevance to the question.

    facts = UserFacts("facts.db")                   # or ":memory:"
    facts.remember("u1", "I live in Hangzhou.")
    facts.remember("u1", "My usual order is 88231.")
    facts.recall("u1", "Where is my usual order?")  # [Fact(text='My usual order is 88231.', score=...)]
    facts.facts("u1")                               # everything kept about u1, oldest first
    facts.forget("u1", fact_id)

A session's memory (session_memory.py) ends with the session; these facts outlive it. What to keep is
decided by whoever calls `remember`: here the application, when the customer states something about
themselves. Only the facts that match the question are given to the model, so a customer with a hundred
facts does not send a hundred lines with every question.

Ranking is the shop's knowledge-base ranking (shop/knowledge.py): SQLite FTS5 over character bigrams for
Chinese and lower-cased words for English, ordered by `bm25()`. It finds facts that share words with the
question: "usual order" finds "My usual order is 88231". It cannot find a fact that shares only meaning:
"Will it rain at home tonight?" does not find "I live in Hangzhou" (no word in common). Vectors (an
embedding model turning each text into numbers, and the nearest facts by cosine similarity) would find that
one too, at the price of a model to run for every fact and every question, and of rankings that are harder
to explain. Facts are few and short, so words get far here; that is the trade-off lesson 16 takes up.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from tinyagent.memory.session_store import BUSY_TIMEOUT_SECONDS, SessionStoreError
from tinyagent.memory.sqlite_files import (
    columns_of,
    connect_file,
    failures_said,
    store_opening,
    why_not_ours,
)
from tinyagent.memory.sqlite_writes import LockWait, immediate_transaction
from tinyagent.number_checks import check_whole
from tinyagent.safe_text import replace_lone_surrogates
from tinyagent.shop.knowledge import match_query, search_terms

MAX_FACT_CHARS = 500
MAX_USER_ID_CHARS = 200
RECALL_LIMIT = 3
# What the errors call the facts' file (sqlite_files.why_unusable: every store's words), and the name they suggest.
NAMED = "the facts store"
EXAMPLE = "facts.db"

FACTS_HEADER = {
    "en": "What this customer told us in earlier sessions (most relevant first):",
    "zh": "这位顾客在之前的会话里告诉过我们（最相关的在前）：",
}

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS user_facts (
        id      INTEGER PRIMARY KEY,
        user_id TEXT NOT NULL,
        text    TEXT NOT NULL,
        UNIQUE (user_id, text)
    )""",
    # The fact's terms (bigrams and words, space-separated), indexed by FTS5 under the fact's id.
    "CREATE VIRTUAL TABLE IF NOT EXISTS user_facts_fts USING fts5(terms)",
)
_FACT_COLUMNS = columns_of(";".join(_SCHEMA))  # the two tables, and the FTS5 index's own tables, with their columns


@dataclass(frozen=True)
class Fact:
    """One thing kept about a user. `score` is the recall's relevance (higher is better), None in listings."""

    id: int
    text: str
    score: float | None = None


class UserFacts:
    """Facts about users in SQLite, recalled by bm25 ranking. Safe to share between threads and processes.

    Raises `SessionStoreError` when `path` cannot hold a database, or is another program's (a session store's file):
    the facts keep a file of their own."""

    def __init__(self, path: str | os.PathLike[str] = ":memory:"):
        self.path = str(path)
        self._lock = threading.RLock()
        # Refused before anything is made (a blank path was a file named by spaces); on a failure, nothing is left
        # behind and one line says why (sqlite_files.store_opening).
        with store_opening(self.path, NAMED, EXAMPLE, SessionStoreError, BUSY_TIMEOUT_SECONDS):
            # Always the file of that name, even "file:x.db?mode=memory" (sqlite_files.py). The busy timeout is one
            # slice of a wait: self._waits waits the rest, and a stop ends it; the patience is the session store's.
            self._conn = connect_file(self.path)
            self._waits = LockWait(self._conn, lambda: BUSY_TIMEOUT_SECONDS)
            self._prepare()

    def _prepare(self) -> None:
        """Make the tables, in a file that holds no other program's: pointed at a session store's file, the facts
        made its sessions unreachable (the store refuses a file with tables not its own). Such a file is refused,
        left as it was and not held open."""
        try:
            with self._write():
                refusal = why_not_ours(self._conn, _FACT_COLUMNS, self.path, "a facts store", "facts")
                if refusal:
                    raise SessionStoreError(refusal)
                for statement in _SCHEMA:
                    self._conn.execute(statement)
        except BaseException:
            self._conn.close()
            raise

    def remember(self, user_id: str, text: str) -> Fact:
        """Keep `text` about `user_id` (a fact kept already is not kept twice); returns it with its id."""
        user_id, text = _check("user_id", user_id, MAX_USER_ID_CHARS), _check("text", text, MAX_FACT_CHARS)
        with self._failures(), self._write():
            row = self._conn.execute("SELECT id FROM user_facts WHERE user_id = ? AND text = ?", (user_id, text))
            found = row.fetchone()
            if found:
                return Fact(found[0], text)
            fact_id = self._conn.execute(
                "INSERT INTO user_facts (user_id, text) VALUES (?, ?)", (user_id, text)
            ).lastrowid
            self._conn.execute(
                "INSERT INTO user_facts_fts (rowid, terms) VALUES (?, ?)", (fact_id, " ".join(search_terms(text)))
            )
        return Fact(fact_id, text)

    def recall(self, user_id: str, question: str, limit: int = RECALL_LIMIT) -> list[Fact]:
        """The user's facts that share words with `question`, most relevant first (at most `limit`)."""
        check_whole("limit", limit, least=0)
        user_id = _check("user_id", user_id, MAX_USER_ID_CHARS)  # read as remember() kept it: stripped, surrogates replaced
        expression = match_query(replace_lone_surrogates(question or ""))
        if not expression or limit < 1:
            return []
        with self._failures(), self._lock:
            rows = self._waits.execute(
                "SELECT f.id, f.text, bm25(user_facts_fts) AS rank FROM user_facts_fts"
                " JOIN user_facts AS f ON f.id = user_facts_fts.rowid"
                " WHERE user_facts_fts MATCH ? AND f.user_id = ? ORDER BY rank, f.id LIMIT ?",
                (expression, user_id, limit),
            )
        # bm25() is lower-is-better; its negative, rounded, reads "higher is better" and prints the same every run.
        return [Fact(fact_id, text, round(-rank, 3)) for fact_id, text, rank in rows]

    def facts(self, user_id: str) -> list[Fact]:
        """Everything kept about `user_id`, oldest first."""
        user_id = _check("user_id", user_id, MAX_USER_ID_CHARS)
        with self._failures(), self._lock:
            rows = self._waits.execute("SELECT id, text FROM user_facts WHERE user_id = ? ORDER BY id", (user_id,))
        return [Fact(fact_id, text) for fact_id, text in rows]

    def forget(self, user_id: str, fact_id: int) -> bool:
        """Delete one fact; True if it existed (and belonged to `user_id`)."""
        user_id = _check("user_id", user_id, MAX_USER_ID_CHARS)
        with self._failures(), self._write():
            gone = self._conn.execute(
                "DELETE FROM user_facts WHERE id = ? AND user_id = ?", (fact_id, user_id)
            ).rowcount
            if gone:
                self._conn.execute("DELETE FROM user_facts_fts WHERE rowid = ?", (fact_id,))
        return bool(gone)

    def stop_waiting(self) -> None:
        """The program is stopping: a call waiting for another program's lock gives up soon (SessionStoreError: the
        facts store is busy, nothing changed), and so does every later one. Call it from any thread: it takes no
        lock."""
        self._waits.stop_waiting()

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"UserFacts({self.path!r})"

    @contextmanager
    def _failures(self) -> Iterator[None]:
        """A file that fails after it was opened (another program's lock held past the busy timeout, a full disk, a
        disk gone read-only, a file moved away): one line naming the facts' file, saying why and what to do, in the
        session store's error, not SQLite's own. Nothing of a failed write is kept."""
        with failures_said(self.path, NAMED, EXAMPLE, SessionStoreError, self._waits):
            yield

    @contextmanager
    def _write(self) -> Iterator[None]:
        """One write transaction. IMMEDIATE takes SQLite's write lock before the first read, so two processes
        remembering the same fact at once cannot both find it missing and insert it twice."""
        with self._lock, immediate_transaction(self._conn, execute=self._waits.execute):
            yield


def _check(name: str, value: object, limit: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    value = replace_lone_surrogates(value.strip())  # text pasted from anywhere: SQLite stores only UTF-8
    if len(value) > limit:
        raise ValueError(f"{name} is {len(value)} characters; the limit is {limit}")
    return value


def facts_message(facts: list[Fact], lang: str = "en") -> dict:
    """The recalled facts as the system message a run is given."""
    lines = "\n".join(f"- {fact.text}" for fact in facts)
    return {"role": "system", "content": f"{FACTS_HEADER[lang]}\n{lines}"}
