"""Stopping a foreground server cleanly on SIGINT (Ctrl-C) or SIGTERM (`kill`, a CI runner, systemd).

Python turns SIGINT into KeyboardInterrupt only if SIGINT was not ignored when the process started.
A background job of a non-interactive shell, `nohup`, and some CI runners start their children with
SIGINT ignored, and SIGTERM kills a Python process without running any `finally`. So a server that
waits for KeyboardInterrupt can neither be stopped with Ctrl-C there, nor stopped cleanly with kill.

`StopSignals` installs its own handlers for both signals, whatever was there before (ignored
included), and turns either into an event the server waits for:

    with StopSignals() as stop:       # handlers installed: before the slow start, so none is lost
        server = start_the_server()
        print("Serving ... Press Ctrl-C to stop.")
        signal_name = stop.wait()     # returns once SIGINT or SIGTERM arrives
        server.stop()                 # the `finally` work runs, sockets close, exit code 0
    print(f"stopped ({signal_name}).")

The previous handlers come back when the block ends. Used by every foreground server of the command line:
`classroom`, `local-model`, `weather-service`, `serve` and `mcp-server` (with `--port`).
"""

from __future__ import annotations

import signal
import threading
from typing import Self

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopSignals:
    """While active, SIGINT and SIGTERM ask the server to stop instead of interrupting or killing it.

    Signal handlers can only be installed from the main thread; elsewhere (a server run in a
    thread by a test or a notebook) none is installed, and `request_stop()` is the way to stop.
    """

    def __init__(self, signals: tuple[signal.Signals, ...] = STOP_SIGNALS):
        self.signals = signals
        self.received: signal.Signals | None = None  # the first stop signal that arrived
        self._stop = threading.Event()  # set by request_stop(), or by wait() once a signal came
        self._previous: dict[signal.Signals, object] = {}

    def __enter__(self) -> Self:
        if threading.current_thread() is threading.main_thread():
            for signum in self.signals:
                self._previous[signum] = previous = signal.signal(signum, self._on_signal)
                # A StopSignals entered earlier (the command line's, before the server's slow imports) may already
                # hold a stop: it is this one's too, so a Ctrl-C during the start stops the server once it is up.
                earlier = getattr(previous, "__self__", None)
                if isinstance(earlier, StopSignals) and earlier.received is not None and self.received is None:
                    self.received = earlier.received
        return self

    def __exit__(self, *exc) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()

    def _on_signal(self, signum: int, frame) -> None:
        # Runs in the main thread, between two bytecodes: it only notes the signal, and takes no lock. Event.set()
        # here would take the lock the main thread may already hold inside Event.wait() (between entering it and
        # sleeping), and wait for it for ever: about one stop in a hundred hung that way.
        if self.received is None:
            self.received = signal.Signals(signum)

    def request_stop(self) -> None:
        """Stop as a signal would (from any thread)."""
        self._stop.set()

    @property
    def stop_requested(self) -> bool:
        return self.received is not None or self._stop.is_set()

    def wait(self) -> str:
        """Block until a stop is requested; the name of the signal that asked ("SIGTERM"), or "request"."""
        # A wait with a timeout returns to the interpreter now and then: the handler runs promptly even on platforms
        # where a blocked wait is not interrupted by signals, and what it noted is seen within a tenth of a second.
        while not self._stop.wait(0.1) and self.received is None:
            pass
        self._stop.set()  # here, not in the handler: for anyone else who asks
        return self.received.name if self.received is not None else "request"
