"""`Shop`: the Bit Mall (比特严选) backend behind the five tools, in one SQLite database.

Four tables: `orders`, `traces` (one row per logistics event, keyed by tracking number), `shipments` (carrier
and status per tracking number) and `refunds`, plus the knowledge index from `knowledge.py`. The first time a
database is opened it is created and seeded with a handful of orders, each taking a different path through an
after-sales conversation:

    88231  signed 2026-06-22 (the seed's order: 8 days before "today", 2026-06-30)
    88232  in transit, not signed yet
    88233  paid, not shipped yet (no tracking number)
    88234  a cheap accessory signed 3 days ago
    88235  cancelled: cannot be refunded
    88236  signed 22 days ago: past the return windows, still under warranty

Every public method takes the lock, so one `Shop` can serve a threaded server or parallel tool calls.
Methods return plain dicts shaped like the JSON the tools print; they raise `ShopError`s for requests the
shop refuses, and the tools turn those into error Observations.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

from ..clock import Clock, system_clock
from ..errors import TinyAgentError
from . import knowledge


class ShopError(TinyAgentError):
    """The shop refused a request: the message says why, in words a customer-service agent can pass on."""


class OrderNotFoundError(ShopError, LookupError):
    """No order has this id."""


class RefundNotAllowedError(ShopError):
    """The order exists but its status rules out a refund (it was cancelled)."""


# Statuses from which no refund can be asked: nothing was paid for or everything was already returned.
NON_REFUNDABLE_STATUSES = frozenset({"已取消"})

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


class Shop:
    """The shop's database. `Shop()` is a fresh in-memory shop; `Shop("shop.db")` keeps its state in a file.

    A file is created and seeded the first time; opening it again keeps what happened since (refunds).
    `clock` stamps refunds and picks the date in refund ids, so a fixed clock gives the same ids every run.
    Use it as a context manager, or call `close()`.
    """

    def __init__(self, path: str | os.PathLike[str] = ":memory:", clock: Clock = system_clock):
        self.path = str(path)
        self.clock = clock
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        # One connection shared by all threads; the lock below is what makes that safe.
        self._conn = sqlite3.connect(self.path, check_same_thread=False)
        self._conn.execute("PRAGMA foreign_keys = ON")
        self._lock = threading.RLock()
        with self._lock:
            # Schema, seed and knowledge index in one transaction (committed when the `with` block ends,
            # rolled back if it raises): a new file costs one sync to disk instead of one per CREATE
            # TABLE, about 90 ms less on a cold `python -m tinyagent ask`. IMMEDIATE takes the write
            # lock at once, so two processes opening the same new file cannot both seed it.
            # IF NOT EXISTS: the schema is a no-op on a database made before.
            self._conn.executescript("BEGIN IMMEDIATE;" + _SCHEMA)
            with self._conn:
                if self._conn.execute("SELECT COUNT(*) FROM orders").fetchone()[0] == 0:
                    self._seed()
                knowledge.create_index(self._conn)

    def _seed(self) -> None:
        self._conn.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?, ?)", SEED_ORDERS)
        for tracking_no, (carrier, status, traces) in SEED_SHIPMENTS.items():
            self._conn.execute("INSERT INTO shipments VALUES (?, ?, ?)", (tracking_no, carrier, status))
            self._conn.executemany(
                "INSERT INTO traces VALUES (?, ?, ?)", [(tracking_no, time, desc) for time, desc in traces]
            )

    # --- reading ---------------------------------------------------------------------------------------

    def get_order(self, order_id: str | int) -> dict | None:
        """The order as the queryOrder JSON shows it, or None if there is no such order."""
        with self._lock:
            row = self._conn.execute(
                "SELECT order_id, product, price, order_time, sign_time, status, tracking_no"
                " FROM orders WHERE order_id = ?",
                (str(order_id),),
            ).fetchone()
        return _order_dict(row) if row else None

    def orders(self) -> list[dict]:
        """Every order, by id: handy for a notebook cell that shows what the shop holds."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT order_id, product, price, order_time, sign_time, status, tracking_no"
                " FROM orders ORDER BY order_id"
            ).fetchall()
        return [_order_dict(row) for row in rows]

    def get_logistics(self, tracking_no: str) -> dict | None:
        """Carrier, status and traces (oldest first) for a tracking number, or None if it is unknown."""
        with self._lock:
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
        with self._lock:
            rows = self._conn.execute(
                "SELECT refund_id, order_id, reason, amount, status, created_at FROM refunds ORDER BY refund_id"
            ).fetchall()
        return [_refund_dict(row) for row in rows]

    def search_knowledge(self, query: str, limit: int = 3) -> list[dict]:
        """The best after-sales policies for `query` (Chinese or English), best first; see `knowledge.py`."""
        with self._lock:
            return knowledge.search(self._conn, query, limit)

    # --- writing ---------------------------------------------------------------------------------------

    def apply_refund(self, order_id: str | int, reason: str) -> dict:
        """Submit a refund for the whole order and return it, with "duplicate" saying whether it existed.

        Idempotent: a second request for the same order returns the first refund (same id, "duplicate":
        True) and writes nothing. Raises `OrderNotFoundError` for an unknown order, `RefundNotAllowedError`
        for a cancelled one, `ValueError` for an empty reason. It does not judge the after-sales policy
        (return windows and the like): that is the agent's job, with searchKnowledge and getCurrentTime.
        """
        order_id = str(order_id).strip()
        reason = (reason or "").strip()
        if not reason:
            raise ValueError("a refund needs a reason")
        with self._lock:
            existing = self._find_refund(order_id)
            if existing:
                return {**existing, "duplicate": True}
            order = self.get_order(order_id)
            if order is None:
                raise OrderNotFoundError(f"订单不存在：{order_id}")
            if order["status"] in NON_REFUNDABLE_STATUSES:
                raise RefundNotAllowedError(f"订单 {order_id} 状态为“{order['status']}”，不能申请退款")
            now = self.clock()
            try:
                with self._conn:
                    refund_id = self._next_refund_id(now.strftime("%Y%m%d"))
                    self._conn.execute(
                        "INSERT INTO refunds VALUES (?, ?, ?, ?, ?, ?)",
                        (refund_id, order_id, reason, order["price"], REFUND_SUBMITTED,
                         now.isoformat(timespec="seconds")),
                    )
            except sqlite3.IntegrityError:
                # Another process sharing the database file got there first: theirs is the refund.
                existing = self._find_refund(order_id)
                if existing is None:
                    raise
                return {**existing, "duplicate": True}
            return {**self._find_refund(order_id), "duplicate": False}

    def _find_refund(self, order_id: str) -> dict | None:
        row = self._conn.execute(
            "SELECT refund_id, order_id, reason, amount, status, created_at FROM refunds WHERE order_id = ?",
            (order_id,),
        ).fetchone()
        return _refund_dict(row) if row else None

    def _next_refund_id(self, day: str) -> str:
        # "RF" + yyyymmdd + a 4-digit daily sequence. Four digits, not the seed's three, so an id a model
        # makes up in the seed's style (RF20260629001) can never be mistaken for one this shop issued.
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


def _order_dict(row: tuple) -> dict:
    keys = ("orderId", "product", "price", "orderTime", "signTime", "status", "trackingNo")
    return dict(zip(keys, row))


def _refund_dict(row: tuple) -> dict:
    keys = ("refundId", "orderId", "reason", "amount", "status", "createdAt")
    return dict(zip(keys, row))
