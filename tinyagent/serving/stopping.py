"""Stopping the service without cutting anyone off: what happens between SIGTERM (or SIGINT) and the exit.

uvicorn stops in three steps: it stops accepting connections and asks each one to shut down, it waits for the
responses under way to end (at most GRACEFUL_SECONDS, uvicorn_server.py), then it cancels whatever is left. A
stream whose refund waits for a person does not end by itself, so it used to be cancelled in the middle of its
response once the grace ran out: a traceback a stream, and an exit that took the whole grace. Now the first step
(connections.py hands each connection's shutdown to `ServiceStop.begin`) starts this:

    0. a request whose body is still arriving is answered 503 `stopping` (nothing was run) and its connection
       closed: a client that sends the rest late, or never, does not hold the stop (app.py, read_json_body)
    1. every refund waiting for a yes is declined as an error ("the service is stopping"), and so is any one
       asked later: nothing is done that nobody could be told about
    2. the runs go on from the decline as from any other: the model reads it and answers, each stream sends
       its approval_decided, its last events and its end, and an invoke gets its answer
    3. a run still going RUNS_END_WITHIN_S later (a slow model) is stopped at its next event; its stream ends
       with an error event `stopping`, an invoke gets a 503 `stopping`

So every response ends before uvicorn's grace runs out, and the process exits as soon as the last one has.

The app hands `begin` to the server in the ASGI lifespan state (STATE_KEY): the one thing the app and uvicorn's
connections share both in a server on a thread and in each worker process of `--workers`.
"""

from __future__ import annotations

import asyncio

STATE_KEY = "tinyagent.begin_stopping"
WHY = "the service is stopping"
BY = "the service"
# How long a run may go on after its refund was declined; less than uvicorn's grace (GRACEFUL_SECONDS, 5 s),
# so that the service ends every response itself.
RUNS_END_WITHIN_S = 3.0


class ServiceStop:
    """Steps 1 to 3 above for one app: its service (approvals, runs) and its streams (streams.RunStreams)."""

    def __init__(self, service, streams):
        self.service, self.streams = service, streams
        self.begun = asyncio.Event()  # set on the event loop when the stop begins: what a body's reader waits on
        self._last_call: asyncio.TimerHandle | None = None

    def begin(self) -> None:
        """Decline what waits, and give the runs RUNS_END_WITHIN_S to end. Called on the event loop, once per
        open connection: only the first call does anything."""
        if self.begun.is_set():
            return
        self.begun.set()
        self.service.approvals.stop(WHY, BY)
        self._last_call = asyncio.get_running_loop().call_later(RUNS_END_WITHIN_S, self.end_now)

    def end_now(self) -> None:
        """Stop every run still going and end every stream (the time is up, or the app's lifespan ends)."""
        if not self.begun.is_set():  # no connection was open when the server stopped: nothing was declined yet
            self.begun.set()
            self.service.approvals.stop(WHY, BY)
        if self._last_call is not None:
            self._last_call.cancel()
            self._last_call = None
        self.service.stop_runs()
        self.streams.end_all(WHY)
