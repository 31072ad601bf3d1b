"""Running the web app with uvicorn: from a thread (a notebook, a test) or in the foreground (the command line).

    with ServiceServer(ServiceConfig(shop_db=":memory:")) as server:   # port 0: any free port
        requests.post(server.url + "/agent/invoke", json={"query": "Where is order 88231?"})

`ServiceServer` behaves like the project's other background servers (hosting/threaded_server.py): it binds in the
constructor, so `.port` is known before `start()`; `start()` returns once uvicorn accepts connections;
`stop()` may be called twice; `serve_forever()` serves until SIGINT or SIGTERM, even in a process started with
SIGINT ignored (hosting/signals.py). It is not a BackgroundServer subclass because uvicorn is not a
socketserver: it runs its own asyncio loop, here on a thread of its own.

Several workers (`serve_workers`) are separate processes that share the listening socket. Each builds its own
app from the same configuration, passed in the environment (uvicorn starts workers from an import string, not
from an object), and they share sessions only through the session store: PostgreSQL for a real deployment.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Self

import uvicorn
from uvicorn.supervisors import Multiprocess

from tinyagent.errors import ConfigurationError
from tinyagent.hosting.address import check_port, explain_listen_error, listening_socket
from tinyagent.hosting.signals import StopSignals
from tinyagent.serving.app import create_app
from tinyagent.serving.connections import MAX_HEADER_BYTES, guarded_protocol
from tinyagent.serving.service import AgentService, ServiceConfig

CONFIG_VARIABLE = "TINYAGENT_SERVE_CONFIG"  # how the command line hands its configuration to each worker
# When stopping, how long the responses under way (an open stream) may take to end before uvicorn cuts them. The
# app ends them itself before (stopping.py: a waiting refund is declined, a run gets RUNS_END_WITHIN_S to end).
GRACEFUL_SECONDS = 5
KEEP_ALIVE_SECONDS = 5  # an idle kept-alive connection is closed after this (uvicorn's default, said here)


class ServiceServer:
    """The service on `host:port` from a background thread. Give it a config, or a ready AgentService."""

    def __init__(self, config: ServiceConfig | None = None, host: str = "127.0.0.1", port: int = 0, *,
                 service: AgentService | None = None, **service_options):
        check_port(port)
        self.host = host
        # The port first: a port in use (or a host that names no machine) must not leave behind a shop file and a
        # session store that a new service made for a server that never served.
        try:
            self._socket = listening_socket(host, port)
        except OSError as error:
            if service is not None:
                service.close()
            raise explain_listen_error(host, port, error) from None
        try:
            self.service = service if service is not None else AgentService(config or ServiceConfig(),
                                                                                 **service_options)
        except BaseException:
            self._socket.close()
            raise
        self._port = self._socket.getsockname()[1]  # kept: the socket cannot say it once closed
        self.app = create_app(self.service, listen_host=host)
        self._server = uvicorn.Server(uvicorn.Config(self.app, **_limits(self.service.config)))
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        host = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(self.host, self.host)
        return f"http://[{host}]:{self.port}" if ":" in host else f"http://{host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> ServiceServer:
        """Serve from a background thread; returns once connections are accepted."""
        if self._closed:
            raise RuntimeError("this ServiceServer was stopped; create a new one")
        if not self.running:
            self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]},
                                            name=f"tinyagent-serve-{self.port}", daemon=True)
            self._thread.start()
            while not self._server.started:
                if not self._thread.is_alive():
                    raise RuntimeError("the service did not start: see the log above")
                time.sleep(0.02)
        return self

    def stop(self) -> None:
        """Stop serving (runs under way get GRACEFUL_SECONDS to end), free the port, close the service."""
        self.service.stop_waiting()  # now, not when the runs are stopped (stopping.py, RUNS_END_WITHIN_S later)
        if self.running:
            self._server.should_exit = True
            self._thread.join()
        if not self._closed:
            self._closed = True
            self._socket.close()
            self.service.close()

    def serve_forever(self, stop: StopSignals | None = None) -> str:
        """Serve until SIGINT or SIGTERM; returns the signal's name."""
        with StopSignals() if stop is None else contextlib.nullcontext(stop) as waiting:
            self.start()
            try:
                return waiting.wait()
            finally:
                self.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped" if self._closed else "not started"
        return f"ServiceServer({self.url}, {state})"


def _limits(config: ServiceConfig) -> dict:
    """uvicorn's options for every server here: quiet, a bounded stop, and bounded connections (connections.py)."""
    # use_colors given: uvicorn's formatter would otherwise ask sys.stdout.isatty(), and with stdout closed
    # (`serve >&-`) sys.stdout is None and uvicorn cannot set up its logging at all.
    return {"log_level": "warning", "access_log": False, "timeout_graceful_shutdown": GRACEFUL_SECONDS,
            "use_colors": sys.stdout is not None and sys.stdout.isatty(),
            "http": guarded_protocol(config.header_timeout_s, config.max_connections,
                                     config.max_connections_per_client),
            "h11_max_incomplete_event_size": MAX_HEADER_BYTES, "timeout_keep_alive": KEEP_ALIVE_SECONDS}


# -- several workers --------------------------------------------------------------------------------------
def app_from_environment():
    """The app of one worker process, from the configuration its parent put in the environment."""
    config = ServiceConfig(**json.loads(os.environ[CONFIG_VARIABLE]))
    return create_app(AgentService(config), owns_service=True)


def serve_workers(config: ServiceConfig, host: str, port: int, workers: int,
                  listening: Callable[[int], None] | None = None, stop: StopSignals | None = None) -> None:
    """Serve with `workers` processes until SIGINT or SIGTERM (uvicorn's supervisor handles both, whatever
    the process started with, and stops its workers). `listening(port)` is called once the port is bound.
    `stop`: the StopSignals that held the signals until now; a stop it caught before the supervisor took them
    over ends the service here, before any worker starts. The configuration is checked here, once (a worker
    that fails to start only logs): an AgentService is made and closed after the port is bound, so a port in
    use makes no file. A shop or a session store in memory is refused: each worker would have its own, so one
    order could be refunded once per worker and a session be unknown to the others."""
    in_memory = [option for option, place in (("--db", config.shop_db), ("--session-store", config.session_store))
                 if place == ":memory:"]
    if in_memory:
        raise ConfigurationError(
            f"{' and '.join(in_memory)} ':memory:' with {workers} workers would be one per worker process (an order "
            "refunded once by each, a session unknown to the others); give a file, or run one worker")
    check_port(port)
    os.environ[CONFIG_VARIABLE] = json.dumps(asdict(config))
    settings = uvicorn.Config("tinyagent.serving.uvicorn_server:app_from_environment", factory=True, host=host, port=port,
                              workers=workers, **_limits(config))
    try:
        sock = listening_socket(host, port, inheritable=True)  # worker processes serve it
    except OSError as error:
        raise explain_listen_error(host, port, error) from None
    try:
        AgentService(config).close()  # the settings, the shop and the store, as every worker will open them
    except BaseException:
        sock.close()
        raise
    if listening is not None:
        listening(sock.getsockname()[1])
    try:
        supervisor = Multiprocess(settings, sockets=[sock])  # from here on its own handlers take the signals
        if stop is None or not stop.stop_requested:  # a Ctrl-C right after the start was caught, not lost
            supervisor.run()
    finally:
        sock.close()
