"""`Shop`: the Bit Mall (比特严选) backend behind the five tools, in one SQLite database.

Four tables: `orders`, `traces` (one row per logistics event, keyed by tracking number), `shipments` (carrier
and status per tracking number) and `refunds`, plus the knowledge index from `knowledge.py` (and `order_notes`
once a delivery note is written: `add_order_note`, lesson 25). The first time a
database is opened it is created and seeded with a handful of orders, each taking a different path through an
after-sales conversation:

    88231  signed 2026-06-22 (the first article's order: 8 days before "today", 2026-06-30)
    88232  in transit, not signed yet
    88233  paid, not shipped yet (no tracking number)
    88234  a cheap accessory signed 3 days ago
    88235  cancelled: cannot be refunded
    88236  signed 22 days ago: past the return windows, still under warranty

Every public method takes the lock, so one `Shop` can serve a threaded server or parallel tool calls.
Several processes may share one file: every write (seeding, the knowledge index, a refund) is one
`BEGIN IMMEDIATE` transaction that reads what it needs and writes in the same breath, so SQLite's write lock
lets one process at a time decide (whether to seed, which refund id comes next) and the others wait.
A database that cannot be written (a read-only folder or disk) is opened for reading: queries work, and a
refund is refused with `ShopReadOnlyError`; a write that fails on the way to the disk (a full disk, an I/O
error) is refused with `ShopWriteError`, and nothing of it is kept. A read or write that waited past
BUSY_TIMEOUT_SECONDS for another process's lock is refused with `ShopBusyError`, to be tried again; so is one
waiting when the program stops (`stop_waiting`), so that `serve` and `ask` stop at once. Methods return plain dicts
shaped like the JSON the tools print;
they raise `ShopError`s for requests the shop refuses, and the tools turn those into error Observations.
A path that cannot hold a database at all (a folder, a text file, /dev/null, a damaged or unreadable database file)
raises `ShopDatabaseError`; a damaged file is left as it is, for its owner to restore or move away. Each of these
errors says in one line what is wrong with the file, its path and what to do, in the words every store uses
(memory/sqlite_files.py: `why_unusable`); a read's or a write's `ShopError` says it in Chinese first, for the tools.

Since lesson 16 the knowledge base also takes documents: `import_documents` (documents.py, one transaction per
call), `search_passages` (results that name their document and section, optionally re-ranked: rerank.py).
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tinyagent.clock import Clock, system_clock
from tinyagent.errors import ShopDatabaseError
from tinyagent.memory.sqlite_files import (
    columns_of,
    connect_file,
    other_columns,
    store_opening,
    table_list,
    table_names,
    why_damaged,
    why_read_only,
    why_unusable,
)
from tinyagent.memory.sqlite_writes import (
    BUSY_SLICE_SECONDS,
    LockWait,
    immediate_transaction,
    is_busy,
    is_read_only,
    is_write_failure,
    was_moved,
)
from tinyagent.shop import knowledge
from tinyagent.shop.shop_errors import (
    InputTooLongError,
    OrderNotFoundError,
    RefundNotAllowedError,
    ShopBusyError,
    ShopReadOnlyError,
    ShopWriteError,
)

# Longest search query and refund reason the shop accepts. A customer's question or reason fits easily;
# a megabyte query would otherwise hold the shop's lock for most of a minute while FTS5 ranks it.
MAX_QUERY_CHARS = 500
MAX_REASON_CHARS = 500

# How long a process waits for another one's write transaction before giving up (SQLite's busy timeout).
# Transactions here take milliseconds; the margin is for a loaded machine with many processes at once.
# Read at each wait, so a test can set it small (monkeypatch). The wait is made in slices (sqlite_writes.LockWait):
# a refund waiting in one C call for the whole timeout held `serve` and `ask` that long after a stop.
BUSY_TIMEOUT_SECONDS = 30.0
# What the errors call the file (sqlite_files.why_unusable: the words every store says an unusable file in), and the
# name they suggest for it.
NAMED = "the shop's database"
EXAMPLE = "shop.db"

# Statuses from which no refund can be asked: nothing was paid for or everything was already returned.
NON_REFUNDABLE_STATUSES = frozenset({"已取消", "待付款", "已退款", "已退货"})  # cancelled, unpaid, refunded, returned



def reason_too_long(reason: str) -> str | None:
    """Why a refund's reason (already stripped) is too long to be stored, in Chinese and English; None when it fits.
    applyRefund's input is read with the same rule (tools.read_refund_input), so an approval is never asked for a
    reason the shop would refuse."""
    if len(reason) <= MAX_REASON_CHARS:
        return None
    return (f"退款原因过长：{len(reason)} 个字符，上限 {MAX_REASON_CHARS}"
            f"（the reason is {len(reason)} characters long; the limit is {MAX_REASON_CHARS}）")


REFUND_SUBMITTED = "已提交"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS orders (
    order_id    TEXT PRIMARY KEY,
    product     TEXT NOT NULL,
    price       INTEGER NOT NULL,          -- whole yuan, so JSON shows 1999 and not 1999.0
    order_time  TEXT NOT NULL,
    sign_time   TEXT,                      -- NULL until the customer signs for the parcel
    status      TEXT NOT NULL,
    tracking_no TEXT                       -- NULL until the order ships
);
CREATE TABLE IF NOT EXISTS shipments (
    tracking_no TEXT PRIMARY KEY,
    carrier     TEXT NOT NULL,
    status      TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS traces (
    tracking_no TEXT NOT NULL REFERENCES shipments(tracking_no),
    time        TEXT NOT NULL,
    description TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS refunds (
    refund_id   TEXT PRIMARY KEY,
    order_id    TEXT NOT NULL UNIQUE REFERENCES orders(order_id),  -- UNIQUE: one refund per order, ever
    reason      TEXT NOT NULL,
    amount      INTEGER NOT NULL,
    status      TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
"""
_SHOP_COLUMNS = columns_of(_SCHEMA)  # what a table of the shop's name must hold to be the shop's

# (order_id, product, price, order_time, sign_time, status, tracking_no)
SEED_ORDERS = (
    ("88231", "比特 S10 Pro 扫地机", 1999, "2026-06-20", "2026-06-22", "已签收", "SF1234567890"),
    ("88232", "比特 W5 洗地机", 2499, "2026-06-27", None, "运输中", "YT2468013579"),
    ("88233", "比特 AirPure 空气净化器", 899, "2026-06-29", None, "待发货", None),
    ("88234", "比特 扫地机边刷滤网套装", 39, "2026-06-25", "2026-06-27", "已签收", "ZT5566778899"),
    ("88235", "比特 T3 智能体脂秤", 199, "2026-06-18", None, "已取消", None),
    ("88236", "比特 H2 手持吸尘器", 1299, "2026-06-06", "2026-06-08", "已签收", "JD0098765432"),
)

# tracking_no -> (carrier, status, [(time, description), ...] oldest first)
SEED_SHIPMENTS = {
    "SF1234567890": ("顺丰速运", "已签收", [
        ("2026-06-20 18:20:00", "快件已揽收"),
        ("2026-06-21 09:10:00", "快件到达上海转运中心"),
        ("2026-06-22 11:35:00", "快件已由本人签收"),
    ]),
    "YT2468013579": ("圆通速递", "运输中", [
        ("2026-06-28 16:40:00", "快件已揽收"),
        ("2026-06-29 08:15:00", "快件到达杭州转运中心"),
        ("2026-06-29 21:30:00", "快件已从杭州转运中心发出，下一站上海转运中心"),
        ("2026-06-30 07:50:00", "快件到达上海转运中心"),
    ]),
    "ZT5566778899": ("中通快递", "已签收", [
        ("2026-06-25 20:05:00", "快件已揽收"),
        ("2026-06-26 13:40:00", "快件到达上海转运中心"),
        ("2026-06-27 09:20:00", "快件已由本人签收"),
    ]),
    "JD0098765432": ("京东物流", "已签收", [
        ("2026-06-06 19:30:00", "快件已揽收"),
        ("2026-06-07 06:45:00", "快件到达上海嘉定分拣中心"),
        ("2026-06-08 10:02:00", "快件已由本人签收"),
    ]),
}
# The carriers' codes that start the shop's tracking numbers (SF, YT, ZT, JD): queryLogistics joins them to the digits
# when a model writes them apart ("sf 1234567890"), and reads other letters there as words ("tracking no 123").
CARRIER_CODES = frozenset(re.match(r"[A-Z]+", tracking_no)[0] for tracking_no in SEED_SHIPMENTS)


class Shop:
    """The shop's database. `Shop()` is a fresh in-memory shop; `Shop("shop.db")` keeps its state in a file.

    A file is created and seeded the first time; opening it again keeps what happened since (refunds).
    `clock` stamps refunds and picks the date in refund ids, so a fixed clock gives the same ids every run.
    `read_only` says whether the file could only be opened for reading. Raises `ShopDatabaseError` when
    `path` cannot be a database. Use it as a context manager, or call `close()`.
    """

    def __init__(self, path: str | os.PathLike[str] = ":memory:", clock: Clock = system_clock):
        self.path = str(path)
        self.clock = clock
        self.read_only = False
        self._lock = threading.RLock()
        # Refused before anything is made (an empty path, a folder, a device or a pipe: SQLite would misread
        # /dev/null); a failed start leaves nothing behind and one line says why, as every store does
        # (sqlite_files.store_opening). A busy file or a failed write goes on as the ShopError that says it.
        with store_opening(self.path, NAMED, EXAMPLE, ShopDatabaseError, BUSY_TIMEOUT_SECONDS):
            self._conn = self._open_file()
            self._waits = LockWait(self._conn, lambda: BUSY_TIMEOUT_SECONDS)
            try:
                self._prepare()
            except BaseException as exc:
                self._conn.close()  # the file is left as it was, and not held open
                if isinstance(exc, ShopReadOnlyError) and exc.__cause__ is not None:
                    raise exc.__cause__ from None  # a disk that refused the first write: said as a start's failure
                raise

    def _open_file(self) -> sqlite3.Connection:
        path = Path(self.path)
        if self.path == ":memory:":  # a fresh database in memory, even beside a file of that name
            return _connect(self.path)
        # Asking the kernel (not the file mode) is right for root too: on a read-only disk it says no.
        if path.exists() and not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)):
            self.read_only = True
            return _connect(path, read_only=True)
        return _connect(path)

    def _prepare(self) -> None:
        """Make sure the file holds the schema, the first article's orders and the current knowledge index.

        Checked with reads first: a database that is already complete is not written to at all (so a
        read-only one opens). Otherwise one immediate transaction checks again and does what is missing,
        so processes opening a new file at the same moment seed it exactly once.
        """
        with self._lock:
            self._conn.execute("PRAGMA foreign_keys = ON")  # outside a transaction: inside one it does nothing
            with self._read_transaction():
                self._refuse_damaged()
                self._refuse_another_database()  # before a look at the orders, which another program's may lack
                if self._is_complete():
                    return
                if self.read_only:
                    self._prepare_read_only()
                    return
            with self._write_transaction():
                # executescript() would commit first, ending the transaction: one statement at a time.
                for statement in filter(str.strip, _SCHEMA.split(";")):
                    self._conn.execute(statement)  # IF NOT EXISTS: a no-op on a database made before
                if self._conn.execute("SELECT COUNT(*) FROM orders").fetchone()[0] == 0:
                    self._seed()
                if not knowledge.index_is_current(self._conn):
                    knowledge.create_index(self._conn)

    def _refuse_damaged(self) -> None:
        """ShopDatabaseError for a file with a damaged page (a disk's fault, a copy cut short): opened without a
        look, it served until a query reached the page, and the tool's error read like a wrong order number.
        quick_check reads each page once; it skips integrity_check's slow part, matching indexes to their tables."""
        finding = self._conn.execute("PRAGMA quick_check(1)").fetchone()[0]
        if finding != "ok":  # "*** in database main ***\nPage 2: btreeInitPage() returns error code 11"
            raise ShopDatabaseError(why_damaged(self.path, finding.splitlines()[-1], NAMED))

    def _is_complete(self) -> bool:
        return self._is_seeded() and knowledge.index_is_current(self._conn)

    def _is_seeded(self) -> bool:
        if not _SHOP_COLUMNS.keys() <= set(table_names(self._conn)):
            return False
        return self._conn.execute("SELECT COUNT(*) FROM orders").fetchone()[0] > 0

    def _refuse_another_database(self) -> None:
        """ShopDatabaseError for an SQLite file that holds tables but no shop (a `--db` pointed at the wrong file), or
        a table of the shop's name with other columns (another program's `orders`): the shop's tables and orders
        would be written into it, and every tool would then fail ("no such column: price"). Nothing is written."""
        tables = table_names(self._conn)
        if tables and "orders" not in tables:
            raise ShopDatabaseError(self._another_database(f"its tables: {table_list(tables)}"))
        changed = other_columns(self._conn, _SHOP_COLUMNS)
        if changed:
            tables_have = "table has" if len(changed) == 1 else "tables have"
            raise ShopDatabaseError(self._another_database(f"its {table_list(changed)} {tables_have} other columns"))

    def _another_database(self, why: str) -> str:
        return (f"{self.path} is another program's database ({why}), not the shop's: the shop does not write into it; "
                "give a new file name, or a file the shop made")

    def _prepare_read_only(self) -> None:
        if not self._is_seeded():
            raise ShopDatabaseError(
                f"{self.path} cannot be written and holds no shop database: give a path in a folder you can"
                " write to (a new file is created and seeded there)"
            )
        # The file's knowledge index is missing or stale and cannot be rebuilt in place: build a private
        # one for this connection (the temp schema hides the file's tables of the same names).
        knowledge.create_index(self._conn, schema="temp")

    def _seed(self) -> None:
        self._conn.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?, ?)", SEED_ORDERS)
        for tracking_no, (carrier, status, traces) in SEED_SHIPMENTS.items():
            self._conn.execute("INSERT INTO shipments VALUES (?, ?, ?)", (tracking_no, carrier, status))
            self._conn.executemany(
                "INSERT INTO traces VALUES (?, ?, ?)", [(tracking_no, time, desc) for time, desc in traces]
            )

    @contextmanager
    def _write_transaction(self) -> Iterator[None]:
        """One `BEGIN IMMEDIATE` transaction: committed if the block ends, rolled back if it raises.

        IMMEDIATE takes SQLite's write lock before the first read, so what the block reads (is there a
        refund for this order? which id comes next?) cannot change under it before it writes. Another
        process that wants to write waits (`LockWait`, in slices) until this one commits.
        """
        if self.read_only:
            raise ShopReadOnlyError(self._read_only_message())
        try:
            with immediate_transaction(self._conn, execute=self._waits.execute):
                yield
        except sqlite3.OperationalError as exc:
            # In Chinese for the customer's agent, then the words every store says it in (sqlite_files.why_unusable).
            why = why_unusable(self.path, exc, NAMED, EXAMPLE, self._waits.patience)
            if was_moved(exc):  # SQLite says "read-only", and people looked at the file's permissions
                raise ShopWriteError(f"商店数据库文件在打开之后被移走或删除了，什么都没有改，请重新启动程序（nothing was "
                                     f"changed: {why}）") from exc
            # Writable by its mode but not in fact (a disk remounted read-only, a folder that forbids
            # the journal file): SQLite says so only when it tries to write.
            if is_read_only(exc):
                raise ShopReadOnlyError(f"商店数据库是只读的，无法写入，什么都没有改（nothing was changed: {why}）") from exc
            if is_write_failure(exc):  # SQLite has rolled back: nothing of the write was kept
                raise ShopWriteError(f"商店数据库写入失败，什么都没有改（nothing was changed: {why}）") from exc
            if is_busy(exc):  # at BEGIN IMMEDIATE, before anything was written, or at COMMIT, rolled back above
                raise ShopBusyError(f"商店数据库正忙（另一个程序正在使用它），什么都没有改，请稍后再试（nothing was "
                                    f"changed: {why}）") from exc
            raise

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """The lock, for reads: another process's lock held past BUSY_TIMEOUT_SECONDS is `ShopBusyError`, in words
        that claim nothing about changes (nothing was being changed), not the raw "database is locked"."""
        with self._lock:
            try:
                if self._conn.in_transaction:  # a write transaction's own reads (apply_refund's checks): it holds the lock
                    yield
                else:
                    with self._read_transaction():
                        yield
            except sqlite3.OperationalError as exc:
                if is_busy(exc):
                    raise ShopBusyError(f"商店数据库正忙（另一个程序正在使用它），请稍后再试"
                                        f"（{why_unusable(self.path, exc, NAMED, EXAMPLE, self._waits.patience)}）") from exc
                raise

    @contextmanager
    def _read_transaction(self) -> Iterator[None]:
        """The block's reads as one transaction, whose first statement takes SQLite's shared lock (waiting as
        `LockWait` waits): the reads after it find the lock held, so none of them can meet a busy database."""
        try:  # the BEGIN and the COMMIT inside it: a Ctrl-C raised as either returns must not leave the lock held
            self._conn.execute("BEGIN")  # deferred: it takes no lock by itself
            self._waits.execute("SELECT COUNT(*) FROM sqlite_schema")
            yield
            self._conn.execute("COMMIT")  # lets the lock go, and keeps a read-only file's index in the temp schema
        except BaseException:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise

    def stop_waiting(self) -> None:
        """The program is stopping: a read or write waiting for another program's lock gives up within
        BUSY_SLICE_SECONDS, as if the busy timeout had passed (`ShopBusyError`, nothing changed), and so does every
        later one. Call it from any thread (a signal's handler, the server's stop): it takes no lock."""
        self._waits.stop_waiting()

    def _read_only_message(self) -> str:
        return f"商店数据库是只读的，无法写入，什么都没有改（nothing was changed: {why_read_only(self.path, NAMED)}）"

    # --- reading ---------------------------------------------------------------------------------------

    def get_order(self, order_id: str | int) -> dict | None:
        """The order as the queryOrder JSON shows it, or None if there is no such order. An order with a note
        (`add_order_note`, lesson 25) shows it as "note"; one without, every order before lesson 25, shows no such
        key."""
        with self._reading():
            row = self._conn.execute(
                "SELECT order_id, product, price, order_time, sign_time, status, tracking_no"
                " FROM orders WHERE order_id = ?",
                (str(order_id),),
            ).fetchone()
            note = self._order_note(str(order_id)) if row else None
        order = _order_dict(row) if row else None
        return {**order, "note": note} if order is not None and note is not None else order

    def add_order_note(self, order_id: str | int, note: str) -> None:
        """Write the customer's delivery note on an order (the text a customer types at checkout: lesson 25 plants
        an instruction there). The notes live in a table of their own, made on first use, so a shop that never
        takes a note is the same database as before. Raises `OrderNotFoundError` for an unknown order."""
        order_id = str(order_id).strip()
        with self._lock, self._write_transaction():
            if self._conn.execute("SELECT 1 FROM orders WHERE order_id = ?", (order_id,)).fetchone() is None:
                raise OrderNotFoundError(f"订单不存在：{order_id}")
            self._conn.execute("CREATE TABLE IF NOT EXISTS order_notes ("
                               "order_id TEXT PRIMARY KEY REFERENCES orders(order_id), note TEXT NOT NULL)")
            self._conn.execute("INSERT OR REPLACE INTO order_notes VALUES (?, ?)", (order_id, note))

    def _order_note(self, order_id: str) -> str | None:
        try:
            row = self._conn.execute("SELECT note FROM order_notes WHERE order_id = ?", (order_id,)).fetchone()
        except sqlite3.OperationalError as exc:  # no note was ever written: the table does not exist
            if is_busy(exc):
                raise  # not "no note": _reading says the database is busy
            return None
        return row[0] if row else None

    def orders(self) -> list[dict]:
        """Every order, by id: handy for a notebook cell that shows what the shop holds."""
        with self._reading():
            rows = self._conn.execute(
                "SELECT order_id, product, price, order_time, sign_time, status, tracking_no"
                " FROM orders ORDER BY order_id"
            ).fetchall()
        return [_order_dict(row) for row in rows]

    def get_logistics(self, tracking_no: str) -> dict | None:
        """Carrier, status and traces (oldest first) for a tracking number, or None if it is unknown."""
        with self._reading():
            shipment = self._conn.execute(
                "SELECT tracking_no, carrier, status FROM shipments WHERE tracking_no = ?", (tracking_no,)
            ).fetchone()
            if shipment is None:
                return None
            traces = self._conn.execute(
                "SELECT time, description FROM traces WHERE tracking_no = ? ORDER BY time", (tracking_no,)
            ).fetchall()
        return {
            "trackingNo": shipment[0],
            "carrier": shipment[1],
            "status": shipment[2],
            "traces": [{"time": time, "desc": desc} for time, desc in traces],
        }

    def refunds(self) -> list[dict]:
        """Every refund ever submitted, oldest first. Empty in a fresh shop."""
        with self._reading():
            rows = self._conn.execute(
                "SELECT refund_id, order_id, reason, amount, status, created_at FROM refunds ORDER BY refund_id"
            ).fetchall()
        return [_refund_dict(row) for row in rows]

    def search_knowledge(self, query: str, limit: int = 3) -> list[dict]:
        """The best after-sales policies for `query` (Chinese or English), best first; see `knowledge.py`.

        Raises `InputTooLongError` for a query longer than `MAX_QUERY_CHARS`.
        """
        _check_query(query)
        limit = checked_limit(limit)
        with self._reading():
            return knowledge.search(self._conn, query, limit)

    # --- documents (lesson 16: documents.py, chunking.py, rerank.py) ---------------------------------------

    def search_passages(
        self, query: str, limit: int = 3, *, scope: str = "all", rerank: bool = False
    ) -> list[knowledge.Passage]:
        """`search_knowledge` as `Passage`s, which name the document and section of an imported chunk.

        scope:  "all", "documents" (imported chunks only) or "entries" (the built-in entries only)
        rerank: re-order bm25's best `RERANK_CANDIDATES` by how many of the query's terms each passage
                holds, and how close together (rerank.py), then keep `limit`
        """
        from tinyagent.shop import rerank as reranking  # imported when used: lessons 00-11 never need it

        _check_query(query)
        limit = checked_limit(limit)
        with self._reading():
            found = knowledge.search_passages(
                self._conn, query, max(limit, reranking.RERANK_CANDIDATES) if rerank else limit, scope
            )
        return reranking.rerank(query, found)[:max(limit, 0)] if rerank else found  # limit < 1: none, as without

    def import_documents(self, *paths: str | os.PathLike[str], size: int | None = None,
                         overlap: int | None = None) -> list:
        """Import Markdown and plain-text documents, files or folders of them; one `ImportResult` each.

        Every document is read, checked and chunked (`size` and `overlap` in characters; chunking.py's
        defaults if not given) before anything is written, then all are written in one transaction: a
        `DocumentError` (missing, not UTF-8, empty, too large, ...) leaves the knowledge base as it was.
        Importing a document again replaces its chunks. See documents.py.
        """
        from tinyagent.shop import chunking, documents

        if not paths:
            raise documents.DocumentError("name at least one document or folder to import")
        size = chunking.CHUNK_CHARS if size is None else size
        overlap = chunking.OVERLAP_CHARS if overlap is None else overlap
        chunking.check_sizes(size, overlap)
        return self.import_chunks(documents.load_documents(paths, size, overlap))

    def import_chunks(self, chunks: Iterable) -> list:
        """Store chunks cut by any chunker (chunking.Chunk), as `import_documents` stores its own: one
        transaction, each document's old chunks replaced."""
        from tinyagent.shop import documents

        chunks = list(chunks)
        if not chunks:
            raise documents.DocumentError("there are no chunks to import")
        with self._lock, self._write_transaction():
            return documents.store_documents(self._conn, chunks, self.clock().isoformat(timespec="seconds"))

    def documents(self) -> list[dict]:
        """Every imported document: name, title, number of chunks, when it was imported."""
        from tinyagent.shop import documents

        with self._reading():
            return documents.list_documents(self._conn)

    def remove_document(self, name: str) -> bool:
        """Take a document and all its chunks out of the knowledge base. False if there was no such document."""
        from tinyagent.shop import documents

        with self._lock, self._write_transaction():
            return documents.delete_document(self._conn, name)

    # --- writing ---------------------------------------------------------------------------------------

    def apply_refund(self, order_id: str | int, reason: str) -> dict:
        """Submit a refund for the whole order and return it, with "duplicate" saying whether it existed.

        Idempotent: a second request for the same order returns the first refund (same id, "duplicate":
        True) and writes nothing. Raises `OrderNotFoundError` for an unknown order, `RefundNotAllowedError`
        for one in a status of NON_REFUNDABLE_STATUSES, `ValueError` for an empty reason, `InputTooLongError` for
        a reason too long (`reason_too_long`). It does not judge the after-sales policy
        (return windows and the like): that is the agent's job, with searchKnowledge and getCurrentTime.
        """
        order_id = str(order_id).strip()
        reason = (reason or "").strip()
        if not reason:
            raise ValueError("a refund needs a reason")
        if (too_long := reason_too_long(reason)) is not None:
            raise InputTooLongError(too_long)
        # One transaction from the first read to the insert: another thread waits on the lock, another
        # process on SQLite's write lock, so neither can slip a refund (or the same id) in between.
        with self._lock, self._write_transaction():
            outcome, found = self.refund_outcome(order_id)
            if outcome == "existing":
                return {**found, "duplicate": True}
            if outcome == "unknown":
                raise OrderNotFoundError(f"订单不存在：{order_id}")
            if outcome == "not_allowed":
                raise RefundNotAllowedError(f"订单 {order_id} 状态为“{found['status']}”，不能申请退款")
            order = found
            now = self.clock()
            self._conn.execute(
                "INSERT INTO refunds VALUES (?, ?, ?, ?, ?, ?)",
                (self._next_refund_id(now.strftime("%Y%m%d")), order_id, reason, order["price"],
                 REFUND_SUBMITTED, now.isoformat(timespec="seconds")),
            )
            return {**self._find_refund(order_id), "duplicate": False}

    def refund_outcome(self, order_id: str | int) -> tuple[str, dict | None]:
        """What `apply_refund` would do for the order now, in the order it checks, writing nothing:
        ("existing", the refund it would return), ("unknown", None), ("not_allowed", the order, whose status is
        in NON_REFUNDABLE_STATUSES) or ("refund", the order). The approval summary (refund_review.py) asks it too,
        so a person is told what the tool will do by the tool's own rule."""
        order_id = str(order_id).strip()
        with self._reading():
            existing = self._find_refund(order_id)
            if existing:
                return "existing", existing
            order = self.get_order(order_id)
            if order is None:
                return "unknown", None
            if order["status"].strip() in NON_REFUNDABLE_STATUSES:
                return "not_allowed", order
            return "refund", order

    def _find_refund(self, order_id: str) -> dict | None:
        row = self._conn.execute(
            "SELECT refund_id, order_id, reason, amount, status, created_at FROM refunds WHERE order_id = ?",
            (order_id,),
        ).fetchone()
        return _refund_dict(row) if row else None

    def _next_refund_id(self, day: str) -> str:
        # "RF" + yyyymmdd + a 4-digit daily sequence. Four digits, not the first article's three, so an id a model
        # makes up in the first article's style (RF20260629001) can never be mistaken for one this shop issued.
        prefix = f"RF{day}"
        last = self._conn.execute(
            "SELECT MAX(CAST(substr(refund_id, ?) AS INTEGER)) FROM refunds WHERE refund_id LIKE ?",
            (len(prefix) + 1, prefix + "%"),
        ).fetchone()[0]
        return f"{prefix}{(last or 0) + 1:04d}"

    # --- lifetime --------------------------------------------------------------------------------------

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self):  # returns the shop itself, for `with Shop(...) as shop:`
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Shop {self.path!r}>"


MAX_RESULTS = 1000  # more passages than the shop's knowledge holds: a larger limit reads as this one


def checked_limit(limit: int) -> int:
    """How many results a search may return: a whole number (below 1: none; above MAX_RESULTS: MAX_RESULTS). A
    TypeError for anything else, which SQLite would refuse with "datatype mismatch" or an OverflowError."""
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"limit must be a whole number of results, got {limit!r}")
    return min(limit, MAX_RESULTS)


def _check_query(query: str) -> None:
    if len(query) > MAX_QUERY_CHARS:
        raise InputTooLongError(
            f"检索词过长：{len(query)} 个字符，上限 {MAX_QUERY_CHARS}"
            f"（the query is {len(query)} characters long; the limit is {MAX_QUERY_CHARS}）"
        )


def _connect(path: str | Path, read_only: bool = False) -> sqlite3.Connection:
    # One connection shared by all threads; the Shop's lock is what makes that safe. Its busy timeout is one slice
    # of the wait: Shop._waits waits the rest (sqlite_writes.py says why). connect_file opens the file `path` names,
    # even one named "file:x.db?mode=memory", which this Python's SQLite would read as a URI and keep in memory.
    return connect_file(path, read_only=read_only, timeout=min(BUSY_SLICE_SECONDS, BUSY_TIMEOUT_SECONDS))


def _order_dict(row: tuple) -> dict:
    keys = ("orderId", "product", "price", "orderTime", "signTime", "status", "trackingNo")
    return dict(zip(keys, row))


def _refund_dict(row: tuple) -> dict:
    keys = ("refundId", "orderId", "reason", "amount", "status", "createdAt")
    return dict(zip(keys, row))
