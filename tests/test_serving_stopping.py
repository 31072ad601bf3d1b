"""Lesson 19's service under a stop and under load: `python -m tinyagent serve` as a subprocess, on a free port.

A stop (SIGTERM, SIGINT, SIGINT with SIGINT ignored at start) while refunds wait for a person's yes declines them
and ends every stream before the process exits, and a request whose body is still arriving is answered 503 at
once (stopping.py); one client holding hundreds of slow connections does not lock out another (connections.py).
Nothing is timed: the tests wait for the events they need (a stream's approval request, the service closing a
connection), with a generous patience.
"""

from __future__ import annotations

import http.client
import json
import signal
import socket
import sqlite3
import subprocess
import sys
import threading

import pytest
import requests

from tests.serving_process import PATIENCE, serve_process
from tinyagent.classroom.server import ClassroomServer
from tinyagent.serving.connections import client_key

pytest.importorskip("starlette")

REFUND = "我上周买的扫地机不回充了，修不好我想退。订单号 88231。"
WAITING = 20  # streamed refunds waiting for a yes when the stop comes


class StreamReader:
    """One streamed run's events, read in a thread of their own until the stream ends (so that no stream waits
    for the test to read another)."""

    def __init__(self, service, query: str):
        self.response = requests.post(service.url + "/agent/stream", json={"query": query}, stream=True,
                                      timeout=PATIENCE)
        self.events: list[tuple[str, dict]] = []
        self.failure: Exception | None = None
        self._ended = False
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for block in self.response.iter_lines(decode_unicode=True, delimiter="\n\n"):
                if block.strip() and not block.startswith(":"):
                    fields = dict(line.split(": ", 1) for line in block.strip("\n").split("\n"))
                    with self._changed:
                        self.events.append((fields["event"], json.loads(fields["data"])))
                        self._changed.notify_all()
        except Exception as exc:  # noqa: BLE001 - a stream cut in the middle: what the test must see
            self.failure = exc
        finally:
            with self._changed:
                self._ended = True
                self._changed.notify_all()

    def wait_for(self, kind: str) -> None:
        """Until the stream has sent an event `kind` (fails if it ends first)."""
        with self._changed:
            self._changed.wait_for(lambda: self._ended or any(k == kind for k, _ in self.events), PATIENCE)
        assert any(k == kind for k, _ in self.events), f"no {kind} event: {self.events[-2:]}"

    def wait_for_the_end(self) -> list[tuple[str, dict]]:
        self._thread.join(PATIENCE)
        assert not self._thread.is_alive(), "the stream did not end"
        assert self.failure is None, f"the stream was cut: {self.failure!r}"
        return self.events

    def close(self) -> None:
        self.response.close()


def _clean_exit(service) -> None:
    errors = service.server.stderr
    assert "Traceback" not in errors and "CancelledError" not in errors, errors[-2000:]
    assert "graceful shutdown exceeded" not in errors  # uvicorn never had to cut a response


# -- a stop while refunds wait for a yes ---------------------------------------------------------------------------
@pytest.mark.parametrize(("signum", "ignore_sigint", "workers"), [
    (signal.SIGTERM, False, "1"), (signal.SIGINT, False, "1"), (signal.SIGINT, True, "1"), (signal.SIGTERM, False, "2"),
], ids=["SIGTERM", "SIGINT", "SIGINT-while-ignored-at-start", "SIGTERM-two-workers"])
def test_a_stop_declines_the_waiting_refunds_and_ends_every_stream_before_the_exit(tmp_path, signum, ignore_sigint,
                                                                                   workers):
    # Every stream comes from 127.0.0.1: one client's share is made the whole service's, so that all 20 wait (with
    # the default share of 16, the rest would be declined at once by the share, not by the stop).
    with serve_process(tmp_path, "--approval-timeout", "600", "--workers", workers, "--max-connections-per-client",
                       "512", ignore_sigint=ignore_sigint) as service:
        readers: list[StreamReader] = []
        try:
            for _ in range(WAITING):
                readers.append(StreamReader(service, REFUND))
            for reader in readers:
                reader.wait_for("approval_requested")
            assert service.server.stop(signum) == 0
            ended = [reader.wait_for_the_end() for reader in readers]
        finally:
            for reader in readers:
                reader.close()
    for events in ended:
        kinds = [kind for kind, _ in events]
        decided = [data for kind, data in events if kind == "approval_decided"]
        # Declined as an error by the service (nothing was done), and the run went on to its answer and its end.
        assert [(d["outcome"], d["by"], d["detail"]) for d in decided] == [
            ("error", "the service", "the service is stopping")]
        assert kinds[-1] == "end" and kinds.index("approval_decided") < kinds.index("end")
        assert "RF2026" not in events[-1][1]["answer"]
    assert service.refunds() == []
    _clean_exit(service)
    assert "service stopped" in service.output()
    # approvals live in each worker: the banner says an answer may miss, and what to do
    assert ("approvals with 2 workers: each waits in the worker running its refund" in service.output()) is \
        (workers == "2")


def test_a_run_still_going_after_the_decline_is_ended_by_the_service_not_cut_by_uvicorn(tmp_path):
    # A model slow enough that the run is mid-reply well past the stop (five pieces a second).
    with ClassroomServer(tokens_per_second=5) as room, serve_process(tmp_path, model_url=room.chat_url) as service:
        reader = StreamReader(service, REFUND)
        try:
            reader.wait_for("reply_delta")  # the model has begun to answer
            assert service.server.stop(signal.SIGTERM) == 0
            events = reader.wait_for_the_end()
        finally:
            reader.close()
    kind, data = events[-1]
    assert kind == "error" and data["error"]["code"] == "stopping", events[-3:]
    assert "the service is stopping" in data["error"]["message"]
    assert service.refunds() == []
    _clean_exit(service)


def test_a_stop_while_an_approved_refund_waits_for_the_shops_lock_ends_the_wait_and_says_nothing_changed(tmp_path):
    # The shop's database is busy (another process holds its write lock) when the person says yes. The refund used to
    # wait out SQLite's busy timeout (30 s) past the stream's end and then be written, the stream saying only that it
    # "may yet be done". The stop now ends the wait (database.py, Shop.stop_waiting): nothing is written, the tool's
    # result says so, and the run answers from it.
    with serve_process(tmp_path) as service:
        reader = StreamReader(service, REFUND)
        locker = None
        try:
            reader.wait_for("approval_requested")
            approval = next(data["approval_id"] for kind, data in reader.events if kind == "approval_requested")
            locker = sqlite3.connect(tmp_path / "shop.sqlite3", isolation_level=None, check_same_thread=False)
            locker.execute("BEGIN IMMEDIATE")  # the shop's write lock, held
            answer = requests.post(f"{service.url}/agent/approvals/{approval}", json={"approve": True},
                                   timeout=PATIENCE)
            assert answer.status_code == 200, answer.text
            reader.wait_for("approval_decided")
            service.process.send_signal(signal.SIGTERM)
            events = reader.wait_for_the_end()
            assert service.process.wait(PATIENCE) == 0
            locker.execute("ROLLBACK")  # let go only once the service has gone: nothing may be written after the stop
        finally:
            reader.close()
            if locker is not None:
                locker.close()
    said = json.dumps(events, ensure_ascii=False)
    assert "nothing was changed" in said, events[-3:]  # the refund's result: the shop was busy
    assert "RF2026" not in said  # no refund id anywhere: none was made, and no answer claims one
    assert events[-1][0] in ("end", "error"), events[-3:]
    assert service.refunds() == []


# -- a stop while a request's body is still arriving ----------------------------------------------------------------
@pytest.mark.parametrize(("signum", "ignore_sigint"), [
    (signal.SIGTERM, False), (signal.SIGINT, False), (signal.SIGINT, True),
], ids=["SIGTERM", "SIGINT", "SIGINT-while-ignored-at-start"])
def test_a_stop_while_a_body_is_still_arriving_answers_503_and_does_not_wait_for_it(tmp_path, signum, ignore_sigint):
    # The body's first byte of a hundred, and no more: the app waited for the rest until uvicorn's grace ran out,
    # and uvicorn cancelled it with a traceback (CancelledError in the body's reading).
    with serve_process(tmp_path, ignore_sigint=ignore_sigint) as service:
        host, port = service.url.removeprefix("http://").rsplit(":", 1)
        client = socket.create_connection((host, int(port)), timeout=PATIENCE)
        try:
            # uvicorn says 100 Continue when the app first asks for the body: the app is waiting for it now.
            client.sendall(b"POST /agent/invoke HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                           b"Content-Length: 100\r\nExpect: 100-continue\r\n\r\n")
            assert client.recv(4096).startswith(b"HTTP/1.1 100 ")
            client.sendall(b"{")
            assert service.server.stop(signum) == 0
            reply = _refused(client)  # the whole reply, then the connection closed
        finally:
            client.close()
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503 "), reply
    error = json.loads(body)["error"]
    assert error["code"] == "stopping" and "nothing was run" in error["message"]
    _clean_exit(service)


# -- one client's connections do not lock out another --------------------------------------------------------------
SLOW = 600  # more than --max-connections (512)
SHARE = 128  # what one client may hold (a quarter of 512, the default)


def _refused(sock: socket.socket) -> bytes:
    """What the service sent before it closed `sock` (b"" when it only closed it); fails if it is still open after
    PATIENCE seconds."""
    sock.settimeout(PATIENCE)
    received = b""
    try:
        while chunk := sock.recv(4096):
            received += chunk
    except ConnectionResetError:  # closed while our partial request was unread: what was sent may be lost
        pass
    return received


def _still_open(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        sock.recv(1, socket.MSG_PEEK)
    except BlockingIOError:
        return True  # nothing to read and not closed
    except OSError:
        return False
    return False  # a refusal's answer, or the end of the stream


def test_one_client_holding_600_slow_connections_does_not_lock_out_another(tmp_path):
    # --header-timeout 600: the slow connections are not cut while the test runs (with the default, 10 s, a
    # client that opens them again as fast as they are cut holds as many).
    with serve_process(tmp_path, "--header-timeout", "600") as service:
        host, port = service.url.removeprefix("http://").rsplit(":", 1)
        held: list[socket.socket] = []
        try:
            for _ in range(SLOW):
                sock = socket.create_connection((host, int(port)), timeout=PATIENCE, source_address=("127.0.0.1", 0))
                held.append(sock)
                try:
                    sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")  # the headers never end
                except (ConnectionResetError, BrokenPipeError):
                    pass  # refused already
            # Connections are taken in the order they came: once the last one is answered, all of them were.
            last = _refused(held[-1])
            assert last == b"" or last.startswith(b"HTTP/1.1 429 "), last
            assert sum(_still_open(sock) for sock in held[:-1]) == SHARE
            # Another client (another loopback address) is answered at once; this one is refused, with a reason.
            other = http.client.HTTPConnection(host, int(port), timeout=PATIENCE, source_address=("127.0.0.2", 0))
            try:
                other.request("GET", "/health")
                answer = other.getresponse()
                assert answer.status == 200 and json.loads(answer.read())["status"] == "ok"
            finally:
                other.close()
            again = socket.create_connection((host, int(port)), timeout=PATIENCE, source_address=("127.0.0.1", 0))
            try:
                refusal = _refused(again)
            finally:
                again.close()
            head, _, body = refusal.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 429 ")
            assert json.loads(body)["error"]["code"] == "too_many_connections"
        finally:
            for sock in held:
                sock.close()


@pytest.mark.parametrize(("address", "client"), [
    ("192.0.2.7", "192.0.2.7"),
    ("::ffff:192.0.2.7", "192.0.2.7"),  # an IPv4 client of a dual-stack socket: the same client
    ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),  # any address of a /64 is one machine's to take
    ("2001:db8:1:2:bbbb::9", "2001:db8:1:2::/64"),
    ("2001:db8:1:3::1", "2001:db8:1:3::/64"),
    ("fe80::1", "fe80::1"),  # every neighbour shares fe80::/64: link-local addresses count one by one
    ("::1", "::1"),
])
def test_a_client_is_an_ipv4_address_or_an_ipv6_64(address, client):
    assert client_key(address) == client


def test_the_per_client_cap_is_an_option_of_serve_said_in_its_help(tmp_path):
    run = [sys.executable, "-m", "tinyagent", "serve"]
    helped = subprocess.run([*run, "--help"], capture_output=True, text=True, timeout=PATIENCE, check=False)
    assert helped.returncode == 0 and "--max-connections-per-client N" in helped.stdout
    assert "a quarter of --max-connections, 128" in " ".join(helped.stdout.split())
    refused = subprocess.run([*run, "--max-connections-per-client", "0", "--db", str(tmp_path / "shop.sqlite3")],
                             capture_output=True, text=True, timeout=PATIENCE, check=False)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "--max-connections-per-client must be a whole number from 1 to 100000, got '0'" in refused.stderr


def test_a_stop_caught_before_the_workers_take_the_signals_ends_the_service_there(tmp_path):
    """serve --workers: a Ctrl-C between the start and uvicorn's supervisor taking SIGINT over was caught by
    StopSignals and then never looked at: the service ran on. Now no worker starts, and serve_workers returns."""
    from tinyagent.hosting.signals import StopSignals
    from tinyagent.serving import ServiceConfig, serve_workers

    bound = []
    config = ServiceConfig(shop_db=str(tmp_path / "shop.db"), session_store=str(tmp_path / "sessions.db"))
    with StopSignals() as stop:  # also puts back this process's own handlers, which the supervisor replaces
        stop.request_stop()
        serve_workers(config, "127.0.0.1", 0, 2, listening=bound.append, stop=stop)
    assert len(bound) == 1  # it bound its port, then returned: no worker ran (they would serve until a signal)
