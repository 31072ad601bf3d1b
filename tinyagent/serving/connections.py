"""How long a connection may take to send its request's headers, and how many connections are held at once,
by everyone and by one client.

uvicorn times out a connection only while it sits idle between two requests (`timeout_keep_alive`): once a
client has sent one byte of a request, it may take forever to send the rest, and every such connection holds
a socket and a file descriptor. A few hundred clients dripping a header byte every few seconds would then
hold the service's descriptors until it could accept nobody. So, per connection:

    headers     the request line and headers must be complete `header_timeout_s` after the connection opens
                (or after the previous response on a kept-alive connection); otherwise it is closed
    the rest    a request answered before its body was read (a refusal: 413, 415, 408, 403...) has the same
                `header_timeout_s` after the answer for the rest of its body to arrive (it is read and thrown
                away, so a client that sent it all keeps its connection); otherwise the connection is closed
    connections beyond `max_connections` held at once, a new connection is closed as soon as it opens
    per client  beyond `max_connections_per_client` held at once from one client address, a new connection from it
                is closed as soon as it opens: one client cannot take every slot

Either refusal writes a one-line JSON error (503 `busy`, 429 `too_many_connections`), for a client that is not
an attack and would like to know. Then the connection is ended as gently as a request h11 cannot read after its
400 (`EndingConnections`): the server ends its side, and reads and drops what the client still sends until the
client closes, ENDING_SECONDS or ENDING_BYTES at most. A refused connection counts against neither cap. A client is
its IPv4 address, or its IPv6 /64
network (one machine commonly holds a whole /64). Behind a reverse proxy every connection comes from the proxy:
give the per-client cap the same number as `max_connections` there, and let the proxy limit each client.

A body that drips while the app waits for it is the app's to bound (app.py, BODY_TIMEOUT_S); once the app has
answered, this clock bounds the rest of it. uvicorn's own keep-alive timeout does not: the first byte received
cancels it until the next response, so a body dripping a byte every few seconds would hold its connection for ever.
This is a floor, not a shield: on a network, put a reverse proxy (nginx, Caddy) in front, which buffers
requests and limits clients per address (the README says how).
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import json
from collections import OrderedDict
from typing import Any

import h11

from tinyagent.hosting.unreadable_requests import JsonErrorsH11Protocol
from tinyagent.serving.stopping import STATE_KEY

# h11's own limit on a request's line and headers together (its default too), while they are unfinished: a
# request whose headers have not ended within it is refused with a 400. Headers that arrive whole in one read of
# the socket (asyncio reads up to 256 KB at a time) are read, even past it.
MAX_HEADER_BYTES = 16 * 1024

# A connection given its last answer is read for this long at most after it, and this many bytes: more than a
# request either server reads (the service's --max-body goes to 10 MiB, the MCP SDK's limit is 4 MiB).
ENDING_SECONDS = 5.0
ENDING_BYTES = 16 * 1024 * 1024


class EndingConnections:
    """One server's connections that have had their last answer (a refusal, a 400), each ended on the server's
    side and read until its client closes it.

    Closing a connection with bytes of its request unread, or still to come (urllib3 sends a body after its head),
    sends a reset, and the reset can take the answer with it: the client reads "Connection reset by peer" where
    the JSON 503 was, and cannot tell a full server, to try again in a moment, from a broken one. So each is ended
    with a FIN (its answer sent first), and what comes after is read and dropped until the client closes, for
    ENDING_SECONDS at most or ENDING_BYTES (a client that sends on and on is not reading its answer). Past `limit`
    of them at once (each holds a descriptor) the oldest is closed. They stay in uvicorn's set of connections, so
    that a stop closes them too, but count against neither cap. Over TLS (asyncio cannot end one side of it) a
    connection is closed at once, as before.
    """

    def __init__(self, limit: int):
        self.limit = limit
        self._closing: OrderedDict[GuardedH11Protocol, asyncio.TimerHandle] = OrderedDict()  # oldest first
        self._received: dict[GuardedH11Protocol, int] = {}

    def __contains__(self, connection: object) -> bool:
        return connection in self._closing

    def __len__(self) -> int:
        return len(self._closing)

    def add(self, connection: GuardedH11Protocol) -> None:
        """Its answer is written: end our side once it is sent, and read what comes until the client ends its."""
        transport = connection.transport
        if not transport.can_write_eof():
            transport.close()
            return
        if len(self._closing) >= self.limit:
            self.close(next(iter(self._closing)))
        transport.write_eof()
        transport.resume_reading()  # in case uvicorn's flow control had paused it
        self._closing[connection] = connection.loop.call_later(ENDING_SECONDS, self.close, connection)
        self._received[connection] = 0

    def received(self, connection: GuardedH11Protocol, size: int) -> None:
        self._received[connection] += size
        if self._received[connection] >= ENDING_BYTES:
            self.close(connection)

    def close(self, connection: GuardedH11Protocol) -> None:
        self.forget(connection)
        connection.transport.close()

    def forget(self, connection: GuardedH11Protocol) -> None:
        """The connection is closed (by either side): nothing more to wait for."""
        if (timer := self._closing.pop(connection, None)) is not None:
            timer.cancel()
            del self._received[connection]


class GuardedH11Protocol(JsonErrorsH11Protocol):
    """uvicorn's h11 protocol with a deadline for each request's headers (and for the rest of a body its answer
    left unread), and caps on connections held, by all clients and by one; a request h11 cannot read gets the
    service's JSON 400. A connection given its last answer is ended gently (`ending`, shared by the server's
    connections)."""

    name = "the service"  # as its refusals name the server

    def __init__(self, *args, header_timeout_s: float, max_connections: int, max_connections_per_client: int,
                 ending: EndingConnections, **kwargs):
        super().__init__(*args, **kwargs)
        self.header_timeout_s = header_timeout_s
        self.max_connections = max_connections
        self.max_connections_per_client = max_connections_per_client
        self.ending = ending
        self.client_key: str | None = None
        self._header_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)  # adds this connection to `self.connections`, sets `self.client`
        self.client_key = client_key(self.client[0]) if self.client else None
        if len(self.connections) - len(self.ending) > self.max_connections:
            self._refuse(503, "Service Unavailable", "busy", f"{self.name} holds as many connections as it may "
                         f"({self.max_connections}): try again in a moment")
            return
        # Counted over the connections held (at most max_connections): no tally to keep right.
        if self.client_key is not None and sum(
                getattr(other, "client_key", None) == self.client_key and other not in self.ending
                for other in self.connections) > self.max_connections_per_client:
            self._refuse(429, "Too Many Requests", "too_many_connections", f"this client already holds "
                         f"{self.max_connections_per_client} connections to {self.name}: close some, or reuse them")
            return
        self._start_header_clock()

    def _refuse(self, status: int, reason: str, code: str, message: str) -> None:
        """Answer a connection the server will not hold with one JSON error, and end it. It stops counting now
        (it is ending): a burst of connections is taken in before any closed one is forgotten (connection_lost),
        and those refused must not count against the next ones."""
        body = json.dumps(self.refusal_body(code, message)).encode()
        self.transport.write(f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: "
                             f"{len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
        self.hang_up()

    def refusal_body(self, code: str, message: str) -> dict[str, Any]:
        return {"error": {"code": code, "message": message}}  # the app's ApiError shape

    def error_body(self, message: str) -> dict[str, Any]:
        return self.refusal_body("unreadable_request", message)

    def hang_up(self) -> None:
        self.ending.add(self)

    def data_received(self, data: bytes) -> None:
        if self in self.ending:  # answered for the last time: what the client still sends is read and dropped
            self.ending.received(self, len(data))
            return
        super().data_received(data)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # A kept-alive connection's next request gets the same time, and so does the rest of a body left unread.
        self._start_header_clock()

    def shutdown(self) -> None:
        # uvicorn stops, and asks each connection to end: first the app declines what waits (stopping.py),
        # so that the responses under way can end by themselves.
        begin_stopping = self.app_state.get(STATE_KEY)
        if callable(begin_stopping):
            begin_stopping()
        if self in self.ending:  # answered already: a stop does not wait for its client
            self.ending.close(self)
            return
        super().shutdown()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_header_clock()
        self.ending.forget(self)
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
        # IDLE: h11 has not yet seen a whole request line and headers from this client. SEND_BODY once we are DONE:
        # the request was answered without reading its body, and the rest of that body stands before the next
        # request's headers. Either way the client owes what nobody is working on.
        waiting_for_headers = self.conn.their_state is h11.IDLE
        body_after_answer = self.conn.their_state is h11.SEND_BODY and self.conn.our_state is h11.DONE
        if (waiting_for_headers or body_after_answer) and not self.transport.is_closing():
            self.transport.close()


def client_key(host: str) -> str:
    """Who a connection comes from, for the per-client cap: an IPv4 address ("::ffff:192.0.2.7" included) as it
    is, a routed IPv6 address as its /64 network (a machine may use any address of its /64); a link-local or
    loopback address (every neighbour shares fe80::/64) and anything else as it is."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if address.version == 6:
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        if not (address.is_link_local or address.is_loopback):
            return str(ipaddress.ip_network((address, 64), strict=False))
    return str(address)


def guarded_protocol(header_timeout_s: float, max_connections: int, max_connections_per_client: int,
                     protocol: type[GuardedH11Protocol] = GuardedH11Protocol, **options: Any):
    """The `http=` argument of uvicorn.Config: `protocol` with these limits (a partial pickles, so worker
    processes get it too, each its own EndingConnections). A quarter as many connections may be ending at once as
    are served: a client that reads its answer closes at once, and together they stay well under the descriptors
    the process has."""
    return functools.partial(protocol, header_timeout_s=header_timeout_s, max_connections=max_connections,
                             max_connections_per_client=max_connections_per_client,
                             ending=EndingConnections(max(1, max_connections // 4)), **options)
