"""What a thread-per-connection HTTP server does about clients that are slow or many: the classroom model
(lesson 00) and the weather API (lesson 15) share it.

    RequestClock      a connection's reader that gives each request one deadline for all its bytes
    connection_cap()  how many connections may have a thread at once, from the process's descriptor limit
    EndingGently      connections refused past the cap, each read after its answer until its client closes it
    CLIENT_GONE       what a read or write raises when the client has gone: no traceback for it

A socket timeout bounds one wait only: a client that sends a byte every few seconds, each within the timeout,
holds its thread and its file descriptor for as long as it likes, and a few hundred such clients hold every
descriptor the process has, until it can accept nobody. The clock bounds the whole request; the cap bounds how
many threads and descriptors the connections being served may take.
"""

from __future__ import annotations

import io
import selectors
import socket
import ssl
import time
from collections import OrderedDict

try:
    import resource  # Unix only: how many file descriptors this process may open
except ImportError:
    resource = None

MAX_CONNECTIONS = 256  # connections served at once where the descriptor limit is unknown (see connection_cap())

# What a connection's reads and writes raise when its client hung up (a reset, a closed tab) or ran out of time:
# normal for a server, not a fault worth the traceback socketserver's handle_error prints for anything a handler
# lets out. Over TLS a reset is an SSLEOFError.
CLIENT_GONE = (BrokenPipeError, ConnectionResetError, TimeoutError, ssl.SSLEOFError)


class RequestClock(io.RawIOBase):
    """A connection's bytes, each request's read within `seconds` of its start.

    A request starts at its first byte (or when `start()` is called: a server that takes one request per
    connection starts it as the connection opens), and each later read of that request waits only for what is
    left of `seconds`; past that, a read raises TimeoutError. Between two requests on a kept-alive connection
    (`between_requests()`), the wait is `seconds` of silence. Use it as a handler's rfile:
    `io.BufferedReader(RequestClock(connection, seconds))`.
    """

    def __init__(self, connection: socket.socket, seconds: float):
        super().__init__()
        self.connection, self.seconds = connection, seconds
        self.deadline: float | None = None  # None: waiting for a request's first byte
        self.idle = False  # waiting for the next request after an answer: the server may close it for room

    def readable(self) -> bool:
        return True

    def start(self) -> None:
        """The request has begun (its head may have come in an earlier read, with the request before it)."""
        self.idle = False
        if self.deadline is None:
            self.deadline = time.monotonic() + self.seconds

    def answered(self) -> None:
        """The answer's last bytes are written, about to go out: from here the server may close the connection for
        room (its reading side only, so they still leave). Marked before they go, not after: a client that has the
        whole answer may open its next connection at once, before this thread gets to `between_requests()`, and must
        find this one closable, or be refused for a connection it no longer uses."""
        self.idle = True

    def between_requests(self) -> None:
        """An answer has gone out: the connection waits, idle, for the next request, whose clock starts at its
        first byte."""
        self.deadline = None
        self.idle = True

    def readinto(self, buffer) -> int:
        wait = self.seconds if self.deadline is None else self.deadline - time.monotonic()
        if wait <= 0:
            raise TimeoutError(f"the request did not arrive within {self.seconds:g} s")
        self.connection.settimeout(wait)
        count = self.connection.recv_into(buffer)
        if count:
            self.start()
        return count


def connection_cap() -> int:
    """How many connections a server gives a thread at once, from this process's descriptor limit.

    A quarter of the file descriptors it may open (RLIMIT_NOFILE), between 8 and 512: each connection served
    holds one, as many again may wait for a thread (the classroom server keeps silent ones waiting), and the other
    half stays for whatever else the process opens (a notebook kernel's files and sockets, the hub's token checks,
    the other server a lesson runs beside it). MAX_CONNECTIONS where the limit cannot be read.
    """
    if resource is None:
        return MAX_CONNECTIONS
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 512
    return max(8, min(512, soft // 4))


class EndingGently:
    """Refused connections, answered and ended on our side, read in a serving loop until the client closes them.

    Closing a connection with bytes of its request unread, or still to come (urllib3 sends a body after its head),
    sends a reset, and a client that read a moment later found its answer gone: requests said "Remote end closed
    connection without response" or "Connection reset by peer" instead of the 503 it would wait on and retry. Each
    is closed `seconds` after its answer at the latest, or once `most_bytes` came (a client that keeps sending is
    no client reading its answer); past `limit` of them (they cost a descriptor each) the oldest is closed at once,
    as every refused connection was before. The loop calls `read` for each of them `selector` finds readable, and
    `close_overdue` now and then.
    """

    def __init__(self, selector: selectors.BaseSelector, limit: int, seconds: float, most_bytes: int):
        self._selector = selector
        self._limit, self._seconds, self._most_bytes = limit, seconds, most_bytes
        self._until: OrderedDict[socket.socket, float] = OrderedDict()  # oldest first
        self._received: dict[socket.socket, int] = {}

    def __contains__(self, connection: object) -> bool:
        return connection in self._until

    def __len__(self) -> int:
        return len(self._until)

    def add(self, connection: socket.socket) -> None:
        """The answer is sent: end our side, and read what comes until the client ends its own."""
        if len(self._until) >= self._limit:
            self.close_oldest()
        try:
            connection.shutdown(socket.SHUT_WR)
        except OSError:  # the client has gone
            connection.close()
            return
        connection.setblocking(False)
        self._selector.register(connection, selectors.EVENT_READ)
        self._until[connection] = time.monotonic() + self._seconds
        self._received[connection] = 0

    def read(self, connection: socket.socket) -> None:
        try:
            part = connection.recv(65536)
        except BlockingIOError:
            return  # a spurious wake-up
        except OSError:  # reset by the client
            part = b""
        self._received[connection] += len(part)
        if not part or self._received[connection] >= self._most_bytes:
            self._close(connection)  # the client has closed its side, or sends on and on

    def close_overdue(self) -> None:
        now = time.monotonic()
        while self._until and next(iter(self._until.values())) <= now:
            self.close_oldest()

    def close_oldest(self) -> None:
        self._close(next(iter(self._until)))

    def __enter__(self):
        return self

    def __exit__(self, *exception) -> None:  # the loop has stopped: close them all
        for connection in self._until:
            connection.close()
        self._until.clear()
        self._received.clear()

    def _close(self, connection: socket.socket) -> None:
        del self._until[connection], self._received[connection]
        self._selector.unregister(connection)
        connection.close()
