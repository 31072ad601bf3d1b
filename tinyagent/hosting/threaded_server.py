"""An HTTP server the project runs from a thread: the classroom model (lesson 00) and the weather API
(lesson 15) share this way of starting, stopping and serving until a signal.

It binds in the constructor, so `.port` is known before `start()` (port 0: any free port), and a port
it cannot have is one sentence (address.py). `start()` serves from a daemon thread; `stop()`
frees the port and may be called twice; a `with` block does both. `serve_forever()` is the command
line's way: serve until SIGINT or SIGTERM, even in a process started with SIGINT ignored
(signals.py), then stop.
"""

from __future__ import annotations

import contextlib
import socket
import socketserver
import threading
from collections.abc import Callable

from tinyagent.hosting.address import check_port, explain_listen_error
from tinyagent.hosting.signals import StopSignals


class BackgroundServer:
    """Subclasses call `_listen` in their constructor and name their thread with `thread_name`."""

    thread_name = "server"
    poll_interval = 0.5  # how often the serving loop looks up from its work to see whether to stop

    def _listen(self, host: str, port: int,
                make_server: Callable[[tuple[str, int]], socketserver.BaseServer]) -> None:
        check_port(port)
        try:
            # bind() encodes a name that is not ASCII as IDNA, and one that cannot be ('\udcff', a byte of a
            # command line that is not text) is a TypeError there: encoded first, it is a name of no machine.
            host.encode("idna")
        except UnicodeError:
            unknown = socket.gaierror(socket.EAI_NONAME, f"{host!r} is not a host name")
            raise explain_listen_error(host, port, unknown) from None
        try:
            self._httpd = make_server((host, port))  # bound now, so .port is known before start()
        except OSError as error:
            raise explain_listen_error(host, port, error) from None
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self):
        """Serve from a background daemon thread; returns self."""
        if self._closed:
            raise RuntimeError(f"this {type(self).__name__} was stopped; create a new one")
        if not self.running:
            self._thread = threading.Thread(target=self._httpd.serve_forever,
                                            kwargs={"poll_interval": self.poll_interval},
                                            name=f"{self.thread_name}-{self.port}", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and free the port. Safe to call twice."""
        if self.running:
            self._httpd.shutdown()
            self._thread.join()
        if not self._closed:
            self._closed = True
            self._httpd.server_close()

    def serve_forever(self, stop: StopSignals | None = None) -> str:
        """Serve until SIGINT (Ctrl-C) or SIGTERM, then stop and free the port.

        Pass `stop` when its handlers must be in place earlier, before a banner says "Press Ctrl-C".
        Returns the name of the signal that stopped it.
        """
        with StopSignals() if stop is None else contextlib.nullcontext(stop) as waiting:
            self.start()
            try:
                return waiting.wait()
            finally:
                self.stop()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
