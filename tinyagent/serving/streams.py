"""One streamed run's events as Server-Sent Events, kept so that a client whose connection dropped can come back.

Each event goes out as a block with an `id:` line, `<stream id>.<n>` (n counts from 0, `start`):

    id: 3q2-7wEm9P0aXcKQnVvYtA.4
    event: tool_call
    data: {"type": "tool_call", "step": 1, "name": "queryOrder", "input": "88231"}

A client that loses the connection sends `POST /agent/stream` again with the header `Last-Event-ID: <the last id it
read>` (for a continued run's stream too; the body is not read) and gets every event after that one, then the rest as
it comes: EventSource's convention, done by hand, since EventSource cannot POST. The stream id is random (128 bits):
only the client that read the stream can resume it.

The run does not belong to one connection. When its last reader goes away, it goes on for `resume_grace_s`
seconds (ServiceConfig) in case the client comes back; then it is asked to stop, at the next piece of the
model's reply (a refund waiting for a person is declined as an error). It stores no turn, unless it had already
changed something: then the session keeps a "cancelled" turn that says what. A finished stream
is kept for the same few seconds, for a client that lost only its last events.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import AsyncIterator

from tinyagent.errors import TinyAgentError, first_line
from tinyagent.events import Observation
from tinyagent.number_checks import ascii_number
from tinyagent.serving.approvals import approval_id, new_run_id
from tinyagent.serving.service import AgentService, RunCancelled
from tinyagent.toolkit.confirmation import ApprovalDecided, ApprovalRequested

log = logging.getLogger("tinyagent.serving")

# A silent stream (a slow model between two pieces, a refund waiting for a person) sends a comment line this
# often: a proxy keeps the connection open, and a client that went away is noticed at the next write.
KEEP_ALIVE_SECONDS = 5.0
# A run still going this long after its own time limit (WallClock, the model's reply timeout) is stuck.
GRACE_SECONDS = 30.0
_DONE = object()


def sse(event: str, data: dict, event_id: str | None = None) -> str:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


class RunStreams:
    """The streams of one service process, by stream id: started, read, resumed, forgotten."""

    def __init__(self, service: AgentService):
        self.service = service
        self._streams: dict[str, RunStream] = {}

    def start(self, query: str, session_id: str, outcome_json, edit=None, client: str = "") -> RunStream:
        stream = RunStream(self, query, session_id, outcome_json, edit, client)
        self._streams[stream.id] = stream
        return stream

    def resume(self, last_event_id: str) -> tuple[RunStream, int] | None:
        """The stream a `Last-Event-ID` names, and the number of the first event not yet read; None when
        there is no such stream (never issued, or over and forgotten)."""
        stream_id, _, text = last_event_id.strip().rpartition(".")
        stream, number = self._streams.get(stream_id), ascii_number(text)
        if stream is None or number is None or number >= len(stream.blocks):
            return None
        return stream, number + 1

    def forget(self, stream: RunStream) -> None:
        self._streams.pop(stream.id, None)

    def end_all(self, why: str) -> None:
        """The service stops (stopping.py): every stream still going ends now with an error event `stopping`,
        its run asked to stop, so that no response is left for uvicorn to cut."""
        for stream in list(self._streams.values()):
            stream.end(why)


class RunStream:
    """A run started for a stream: its events so far (as SSE blocks), and the readers attached to it."""

    def __init__(self, streams: RunStreams, query: str, session_id: str, outcome_json, edit=None, client: str = ""):
        self._streams, self._outcome_json = streams, outcome_json
        service = self.service = streams.service
        self._loop = asyncio.get_running_loop()
        # the run id names this run's approvals: the stream shows it only inside their approval_id
        self.id, self.run_id = new_run_id(), new_run_id()
        self.blocks: list[str] = []
        self.done = False
        self.readers = 0
        self._changed = asyncio.Event()
        self._cancelled = threading.Event()
        self._alone: asyncio.TimerHandle | None = None
        self._handover_lock = threading.Lock()
        self._handed: list = []
        self._wake_pending = False
        self._running_approved: str | None = None  # a tool approved above whose Observation has not come yet
        self._push("start", {"session_id": session_id, "query": query})
        self.future = service.submit(query, session_id, stream=True, on_event=self._from_run,
                                     cancelled=self._cancelled, run_id=self.run_id, edit=edit, client=client)
        self.future.add_done_callback(lambda _: self._from_run(_DONE))
        self._deadline = self._loop.call_later(service.config.longest_run_s + GRACE_SECONDS, self._too_long)

    # -- the run's side (its thread hands each event over to the event loop) --------------------------
    def _from_run(self, item) -> None:
        # Events come in bursts (a fast model's pieces): they wait in a list, and the event loop is woken once
        # per burst, not once per event (each wake-up is a write to its self-pipe and a turn of the loop).
        with self._handover_lock:
            self._handed.append(item)
            if self._wake_pending:
                return
            self._wake_pending = True
        with contextlib.suppress(RuntimeError):  # the loop is closing (the server stops): nobody is listening
            self._loop.call_soon_threadsafe(self._take_handed)

    def _take_handed(self) -> None:
        with self._handover_lock:
            items, self._handed, self._wake_pending = self._handed, [], False
        for item in items:
            self._take(item)
        self._push_nothing()  # the readers are woken once for the whole burst

    def _take(self, item) -> None:
        if self.done:
            return
        if item is _DONE:
            self._finish()
            return
        if isinstance(item, ApprovalDecided) and item.outcome == "approved":
            self._running_approved = item.tool
        elif isinstance(item, Observation):
            self._running_approved = None
        data = item.to_dict()
        if isinstance(item, (ApprovalRequested, ApprovalDecided)):  # where to answer it (approvals.py)
            data["approval_id"] = approval_id(self.run_id, item.request_id)
        self._add(item.kind, data)

    def _finish(self) -> None:
        try:
            outcome = self.future.result()
        except RunCancelled as stopped:  # the reader went (and did not come back in time), or the service stops
            said = stopped.said("the run was stopped before its answer")
            self._push("error", {"error": {"code": "stopped", "message": said, "turn": stopped.turn}})
            outcome = None
        except TinyAgentError as exc:
            self._push("error", {"error": {"code": "unavailable", "message": first_line(exc)}})
            outcome = None
        except Exception as exc:
            log.error("unexpected error in a streamed run", exc_info=exc)
            self._push("error", {"error": {"code": "internal_error", "message": "the run failed; the log says why"}})
            outcome = None
        if outcome is not None:
            self._push("end", self._outcome_json(outcome, trace=False))
        self._close()

    def _too_long(self) -> None:
        if self.done:
            return
        self._stop_run("the run took too long")
        said = self.service.config.too_long() + self._still_running()
        self._push("error", {"error": {"code": "timeout", "message": said}})
        self._close()

    def _push(self, kind: str, data: dict) -> None:
        self._add(kind, data)
        self._push_nothing()

    def _add(self, kind: str, data: dict) -> None:
        self.blocks.append(sse(kind, data, f"{self.id}.{len(self.blocks)}"))

    def _close(self) -> None:
        self.done = True
        self._deadline.cancel()
        self._push_nothing()
        # Kept a little longer for a client that lost only the last events, then forgotten.
        self._loop.call_later(self.service.config.resume_grace_s, self._streams.forget, self)

    def _push_nothing(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()  # wakes every reader waiting for the next block (or for the end)

    def end(self, why: str) -> None:
        """End the stream now, whatever its run is doing: the readers get an error event, then the end."""
        if self.done:
            return
        self._stop_run(why)
        said = f"{why}: the run was stopped before its end (the events above say what it did){self._still_running()}"
        self._push("error", {"error": {"code": "stopping", "message": f"{said}; ask again in a moment"}})
        self._close()

    def _still_running(self) -> str:
        """A stream cannot wait for a tool a person approved and the run is still running (a slow tool; a refund
        waiting for the shop's lock gives up at the stop, Shop.stop_waiting): it may yet be done after the stream
        ends, and its client must not read it as not done."""
        if self._running_approved is None:
            return ""
        return (f"; {self._running_approved}, approved above, was still running and may yet be done: the session's "
                "last turn will say, check before asking for it again")

    def _stop_run(self, why: str) -> None:
        if not self.future.done():
            self._cancelled.set()
            self.service.approvals.abandon(self.run_id, why)

    # -- a reader's side --------------------------------------------------------------------------------
    async def events(self, first: int = 0) -> AsyncIterator[str]:
        """The blocks from number `first` on, then each new one as it comes, until the stream ends. When the
        client goes away, Starlette closes this generator; the last reader to go starts the grace period."""
        self.readers += 1
        if self._alone is not None:
            self._alone.cancel()
            self._alone = None
        try:
            sent = first
            while True:
                if sent < len(self.blocks):  # every block not sent yet, in one write
                    upto = len(self.blocks)
                    yield "".join(self.blocks[sent:upto])
                    sent = upto
                    continue
                if self.done:
                    return
                changed = self._changed
                try:
                    await asyncio.wait_for(changed.wait(), KEEP_ALIVE_SECONDS)
                except TimeoutError:  # asyncio.TimeoutError is this builtin since Python 3.11
                    yield ": keep-alive\n\n"
        finally:
            self.readers -= 1
            if self.readers == 0 and not self.done:
                self._alone = self._loop.call_later(self.service.config.resume_grace_s, self._left_alone)

    def _left_alone(self) -> None:
        self._alone = None
        if self.readers == 0 and not self.done:
            self._stop_run("the client went away")
