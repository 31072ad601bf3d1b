"""How long a connection may take to send its request's headers, and how many connections are held at once.

uvicorn times out a connection only while it sits idle between two requests (`timeout_keep_alive`): once a
client has sent one byte of a request, it may take forever to send the rest, and every such connection holds
a socket and a file descriptor. A few hundred clients dripping a header byte every few seconds would then
hold the service's descriptors until it could accept nobody. So, per connection:

    headers     the request line and headers must be complete `header_timeout_s` after the connection opens
                (or after the previous response on a kept-alive connection); otherwise it is closed
    connections beyond `max_connections` held at once, a new connection is closed as soon as it opens

A request that is slow after its headers (a body that drips) is the app's to bound (app.py, BODY_TIMEOUT_S).
This is a floor, not a shield: on a network, put a reverse proxy (nginx, Caddy) in front, which buffers
requests and limits clients per address (the README says how).
"""

from __future__ import annotations

import asyncio
import functools

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from tinyagent.serving.stopping import STATE_KEY

# h11's own limit on a request's line and headers together (its default too): larger is refused with a 400.
MAX_HEADER_BYTES = 16 * 1024


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request's headers and a cap on connections held."""

    def __init__(self, *args, header_timeout_s: float, max_connections: int, **kwargs):
        super().__init__(*args, **kwargs)
        self.header_timeout_s = header_timeout_s
        self.max_connections = max_connections
        self._header_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.max_connections:
            transport.close()  # connection_lost follows and forgets it
            return
        self._start_header_clock()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._start_header_clock()  # a kept-alive connection's next request gets the same time

    def shutdown(self) -> None:
        # uvicorn stops, and asks each connection to end: first the app declines what waits (stopping.py),
        # so that the responses under way can end by themselves.
        begin_stopping = self.app_state.get(STATE_KEY)
        if callable(begin_stopping):
            begin_stopping()
        super().shutdown()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_header_clock()
        super().connection_lost(exc)

    def _start_header_clock(self) -> None:
        self._stop_header_clock()
        self._header_deadline = self.loop.call_later(self.header_timeout_s, self._headers_overdue)

    def _stop_header_clock(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _headers_overdue(self) -> None:
        self._header_deadline = None
        # IDLE: h11 has not yet seen a whole request line and headers from this client.
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


def guarded_protocol(header_timeout_s: float, max_connections: int):
    """The `http=` argument of uvicorn.Config: the protocol with these limits (a partial pickles, so worker
    processes get it too)."""
    return functools.partial(GuardedH11Protocol, header_timeout_s=header_timeout_s, max_connections=max_connections)
