"""A stop while the shop waits for another program's lock on its database (database.py: BUSY_SLICE_SECONDS).

SQLite's busy wait is one C call that neither a signal nor Connection.interrupt() ends: a refund waiting there held
`serve` and `ask` for the whole busy timeout (30 s) after SIGINT or SIGTERM, and uvicorn said its graceful shutdown
timed out. Here another connection holds the lock the whole time, and each command must stop well before 30 s,
with no refund written and no traceback. Also: the wait still ends at BUSY_TIMEOUT_SECONDS when nobody stops it, a
write still succeeds when the lock is let go in the middle of it, and lesson 16's cited search says the shop is
busy in the shop's words.
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
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.conftest import DEFAULT_SIGINT_THEN_EXEC, PATIENCE, completion
from tests.serving_process import serve_process, wait_for
from tinyagent import Action, fixed_clock
from tinyagent.shop import Shop, shop_registry
from tinyagent.shop.cited_search import cited_shop_registry
from tinyagent.shop.shop_errors import ShopBusyError

NOW = "2026-06-30T19:05:23"
REFUND = "我上周买的扫地机不回充了，修不好我想退。订单号 88231。"
REFUND_ACTION = ('Thought: refund it.\nAction: applyRefund\n'
                 'Action Input: {"orderId": "88231", "reason": "faulty: does not dock"}')
STOP_WITHIN = 12.0  # seconds: generous for a loaded machine, and far below the busy timeout (30 s) it used to take
NOTHING_CHANGED = "nothing was changed"  # the shop's busy words for a write (ShopBusyError)


@contextlib.contextmanager
def holding_the_write_lock(path: Path, how: str = "BEGIN IMMEDIATE") -> Iterator[sqlite3.Connection]:
    """Another program's transaction on the shop's file, held until the block ends."""
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        other.execute(how)
        if how == "BEGIN":  # a reader: the shop can begin its write, but not commit it
            other.execute("SELECT COUNT(*) FROM orders").fetchone()
        yield other
    finally:
        if other.in_transaction:
            other.execute("ROLLBACK")
        other.close()


def refunds_in(path: Path) -> list[tuple]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return db.execute("SELECT refund_id, order_id FROM refunds").fetchall()


# -- the shop's own wait ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["BEGIN IMMEDIATE", "BEGIN"], ids=["at-BEGIN", "at-COMMIT"])
def test_a_wait_nobody_stops_still_gives_up_after_the_busy_timeout(tmp_path, monkeypatch, how):
    monkeypatch.setattr("tinyagent.shop.database.BUSY_TIMEOUT_SECONDS", 0.5)
    path = tmp_path / "shop.db"
    with Shop(path, clock=fixed_clock(NOW)) as shop, holding_the_write_lock(path, how):
        started = time.monotonic()
        with pytest.raises(ShopBusyError, match=NOTHING_CHANGED):
            shop.apply_refund("88231", "质量问题")
        waited = time.monotonic() - started
    assert 0.5 <= waited < STOP_WITHIN  # the whole timeout, in slices, and then no longer
    assert refunds_in(path) == []


@pytest.mark.parametrize("how", ["BEGIN IMMEDIATE", "BEGIN"], ids=["at-BEGIN", "at-COMMIT"])
def test_a_write_succeeds_when_the_lock_is_let_go_in_the_middle_of_its_wait(tmp_path, monkeypatch, how):
    monkeypatch.setattr("tinyagent.shop.database.BUSY_TIMEOUT_SECONDS", 20.0)
    path = tmp_path / "shop.db"
    with Shop(path, clock=fixed_clock(NOW)) as shop, holding_the_write_lock(path, how) as other:
        threading.Timer(0.5, other.execute, ["ROLLBACK"]).start()  # the other program ends its transaction
        refund = shop.apply_refund("88231", "质量问题")
    assert refund["duplicate"] is False
    assert refunds_in(path) == [(refund["refundId"], "88231")]


def test_stop_waiting_ends_a_refunds_wait_at_once_and_writes_nothing(tmp_path):
    # The busy timeout is the real one (30 s): only the stop can end the wait this soon.
    path = tmp_path / "shop.db"
    with Shop(path, clock=fixed_clock(NOW)) as shop, holding_the_write_lock(path):
        threading.Timer(0.5, shop.stop_waiting).start()
        started = time.monotonic()
        answer = json.loads(shop_registry(shop).execute(Action("applyRefund", '{"orderId": "88231", "reason": "x"}')))
        assert time.monotonic() - started < STOP_WITHIN
    assert NOTHING_CHANGED in answer["error"] and "商店数据库正忙" in answer["error"], answer
    assert "(another program holds it locked)" in answer["error"], answer  # no "past 30 s": the stop cut the wait
    assert refunds_in(path) == []


def test_stop_waiting_ends_a_reads_wait_too(tmp_path):
    path = tmp_path / "shop.db"
    with Shop(path, clock=fixed_clock(NOW)) as shop, holding_the_write_lock(path, "BEGIN EXCLUSIVE"):
        threading.Timer(0.5, shop.stop_waiting).start()
        started = time.monotonic()
        with pytest.raises(ShopBusyError, match="try again shortly"):
            shop.get_order("88231")
        assert time.monotonic() - started < STOP_WITHIN


# -- lesson 16's search with citations ----------------------------------------------------------------------------
def test_the_cited_search_says_the_shop_is_busy_in_the_shops_words(tmp_path, monkeypatch):
    monkeypatch.setattr("tinyagent.shop.database.BUSY_TIMEOUT_SECONDS", 0.05)
    path = tmp_path / "shop.db"
    policy = tmp_path / "returns.md"
    policy.write_text("# 退换货政策\n\n## 质量问题退换货\n\n签收次日起 15 天内出现性能故障的，可以退货。\n", encoding="utf-8")
    with Shop(path, clock=fixed_clock(NOW)) as shop:
        shop.import_documents(policy)
        registry = cited_shop_registry(shop)
        with holding_the_write_lock(path, "BEGIN EXCLUSIVE"):  # no one else may even read
            answer = json.loads(registry.execute(Action("searchKnowledge", '{"query": "质量问题 退货"}')))
        assert answer == {"error": (f"商店数据库正忙（另一个程序正在使用它），请稍后再试（the shop's database {path} is busy "
                                    "(another program held it locked past 0.05 s): try again shortly）")}
        assert json.loads(registry.execute(Action("searchKnowledge", '{"query": "质量问题 退货"}')))["results"]


# -- serve --------------------------------------------------------------------------------------------------------
class EventReader:
    """A streamed run's events, read by a thread of their own."""

    def __init__(self, url: str, query: str):
        self.response = requests.post(url + "/agent/stream", json={"query": query}, stream=True, timeout=PATIENCE)
        self.events: list[tuple[str, dict]] = []
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        with contextlib.suppress(Exception):  # the stream cut, or closed by the test: the events so far are what counts
            for block in self.response.iter_lines(decode_unicode=True, delimiter="\n\n"):
                if block.strip() and not block.startswith(":"):
                    fields = dict(line.split(": ", 1) for line in block.strip("\n").split("\n"))
                    self.events.append((fields["event"], json.loads(fields["data"])))

    def wait_for_the_end(self) -> list[tuple[str, dict]]:
        self._thread.join(PATIENCE)
        return self.events


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_serve_stops_at_once_while_a_refund_waits_for_the_shops_lock(tmp_path, signum):
    # It took 29 s (the rest of the busy timeout), and uvicorn said "timeout graceful shutdown exceeded".
    pytest.importorskip("starlette")
    path = tmp_path / "shop.sqlite3"
    Shop(path).close()
    with holding_the_write_lock(path), serve_process(tmp_path, "--auto-approve") as service:
        reader = EventReader(service.url, REFUND)
        try:
            wait_for(lambda: any(kind == "tool_call" and data["name"] == "applyRefund" for kind, data in reader.events),
                     "the run's applyRefund call")
            time.sleep(1.0)  # the refund has had time to be written, were the database free
            call = max(n for n, (kind, _) in enumerate(reader.events) if kind == "tool_call")
            after_the_call = {kind for kind, _ in reader.events[call + 1:]}  # --auto-approve: asked and approved at once
            assert after_the_call <= {"approval_requested", "approval_decided"}, reader.events[-2:]  # no result: it waits
            started = time.monotonic()
            assert service.server.stop(signum) == 0
            took = time.monotonic() - started
            events = reader.wait_for_the_end()
        finally:
            reader.response.close()
    assert took < STOP_WITHIN, f"the stop took {took:.1f} s"
    errors = service.server.stderr
    assert "Traceback" not in errors and "graceful shutdown exceeded" not in errors, errors[-2000:]
    assert refunds_in(path) == []  # the lock is let go now: nothing was written after the stop either
    assert any(NOTHING_CHANGED in json.dumps(data, ensure_ascii=False) for kind, data in events
               if kind != "tool_call"), events[-3:]  # the tool's result said so
    assert "RF2026" not in json.dumps(events, ensure_ascii=False)  # and no answer claims a refund


# -- ask ----------------------------------------------------------------------------------------------------------
def test_ask_stops_at_once_on_ctrl_c_while_a_refund_waits_for_the_shops_lock(tmp_path, scripted_server):
    # It took the rest of the busy timeout (26 s after 4 s of waiting) to print "interrupted".
    scripted_server.reply((200, completion(REFUND_ACTION)), (200, completion("Thought: done\nFinal Answer: ok")))
    path = tmp_path / "shop.db"
    Shop(path).close()
    env = {name: value for name, value in os.environ.items() if not name.startswith("TINYAGENT_")}
    env.update(HOME=str(tmp_path), TINYAGENT_API_URL=scripted_server.url.removesuffix("/chat/completions"),
               TINYAGENT_API_KEY="", TINYAGENT_MODEL="test-model")
    with holding_the_write_lock(path):
        command = subprocess.Popen([sys.executable, "-c", DEFAULT_SIGINT_THEN_EXEC,  # Ctrl-C works, however it began
                                    sys.executable, "-m", "tinyagent", "ask", "Refund order 88231, it is faulty",
                                    "--db", str(path), "--now", "2026-06-25T10:00:00"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env)
        try:
            wait_for(lambda: scripted_server.requests or command.poll() is not None, "the model's first call")
            time.sleep(1.0)  # the refund has had time to be written, were the database free
            # still waiting for the lock: no second model call (it would read the refund's result)
            assert command.poll() is None and len(scripted_server.requests) == 1, command.communicate()
            started = time.monotonic()
            command.send_signal(signal.SIGINT)
            _out, err = command.communicate(timeout=PATIENCE)
            took = time.monotonic() - started
        finally:
            if command.poll() is None:
                command.kill()
                command.communicate()
    assert took < STOP_WITHIN, f"the stop took {took:.1f} s"
    assert command.returncode == 130 and "Traceback" not in err, err
    assert err.startswith("interrupted"), err
    assert refunds_in(path) == []


# -- a Ctrl-C that lands as a BEGIN returns ---------------------------------------------------------------------------
class CtrlCAfter:
    """A connection that raises KeyboardInterrupt just after running `sql` once: where Python raises a Ctrl-C that
    arrived while SQLite ran it (as the call returns, the transaction begun)."""

    def __init__(self, conn: sqlite3.Connection, sql: str):
        self.conn, self.sql, self.armed = conn, sql, True

    def execute(self, sql, *args):
        cursor = self.conn.execute(sql, *args)
        if self.armed and sql == self.sql:
            self.armed = False
            raise KeyboardInterrupt
        return cursor

    def __getattr__(self, name):
        return getattr(self.conn, name)


@pytest.mark.parametrize("sql", ["BEGIN", "BEGIN IMMEDIATE"], ids=["a read", "a refund"])
def test_a_ctrl_c_as_a_begin_returns_leaves_no_transaction_open(tmp_path, monkeypatch, sql):
    # The shop's connection stayed in the transaction: its later reads kept SQLite's lock, another program's refund
    # waited out the busy timeout, and its own refund failed with "cannot start a transaction within a transaction".
    path = tmp_path / "shop.sqlite3"
    shop = Shop(path, clock=fixed_clock(NOW))
    real = shop._conn
    try:
        if sql == "BEGIN":  # a read's BEGIN is the shop's own; BEGIN IMMEDIATE goes through its LockWait
            monkeypatch.setattr(shop, "_conn", CtrlCAfter(real, sql))
        else:
            monkeypatch.setattr(shop._waits, "_conn", CtrlCAfter(real, sql))
        with pytest.raises(KeyboardInterrupt):
            shop.get_order("88231") if sql == "BEGIN" else shop.apply_refund("88231", "faulty")
        monkeypatch.undo()
        assert not real.in_transaction
        shop.get_order("88232")
        monkeypatch.setattr("tinyagent.shop.database.BUSY_TIMEOUT_SECONDS", 2.0)
        other = Shop(path, clock=fixed_clock(NOW))  # another program on the same file can write
        try:
            assert "RF2026" in str(other.apply_refund("88232", "faulty"))
        finally:
            other.close()
        assert "RF2026" in str(shop.apply_refund("88233", "faulty"))  # and so can this one
    finally:
        shop.close()
