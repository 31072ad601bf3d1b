"""Lesson 19's service under a stop and under load: `python -m tinyagent serve` as a subprocess, on a free port.

A stop (SIGTERM, SIGINT, SIGINT with SIGINT ignored at start) while refunds wait for a person's yes declines them
and ends every stream before the process exits (stopping.py); one client holding hundreds of slow connections
does not lock out another (connections.py). Nothing is timed: the tests wait for the events they need (a
stream's approval request, the service closing a connection), with a generous patience.
"""

from __future__ import annotations

import json
import signal
import threading

import pytest
import requests

from tests.serving_process import PATIENCE, serve_process
from tinyagent.classroom.server import ClassroomServer

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
    with serve_process(tmp_path, "--approval-timeout", "600", "--workers", workers,
                       ignore_sigint=ignore_sigint) as service:
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
