"""StopSignals: SIGINT and SIGTERM become a stop request, whatever handler was there before."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from tinyagent.hosting.signals import StopSignals


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stop_signal_ends_the_wait_and_the_old_handlers_come_back(signum):
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    with StopSignals() as stop:
        assert not stop.stop_requested
        os.kill(os.getpid(), signum)  # delivered to this (main) thread; the handler only sets a flag
        assert stop.wait() == signal.Signals(signum).name
    assert {s: signal.getsignal(s) for s in before} == before


def test_it_takes_over_from_an_ignored_sigint():
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # as nohup or a background job leaves it
    try:
        with StopSignals() as stop:
            os.kill(os.getpid(), signal.SIGINT)
            assert stop.wait() == "SIGINT"
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


def test_outside_the_main_thread_it_installs_nothing_and_request_stop_works():
    results = []

    def serve():
        with StopSignals() as stop:
            results.append(signal.getsignal(signal.SIGTERM))
            stop.request_stop()
            results.append(stop.wait())

    before = signal.getsignal(signal.SIGTERM)
    thread = threading.Thread(target=serve)
    thread.start()
    thread.join(timeout=120)
    assert results == [before, "request"]


def test_a_signal_that_comes_while_the_wait_holds_its_events_lock_neither_hangs_nor_is_lost():
    # A handler runs between two bytecodes of the main thread, which may be inside Event.wait() holding the event's
    # lock. The handler used to call Event.set(), which waited for that lock for ever: about one stop in a hundred
    # hung. Here the lock is held as wait() holds it, and the handler is run as the interpreter would run it.
    stop = StopSignals()
    done = threading.Event()

    def handler_inside_the_lock():
        with stop._stop._cond:  # what Event.wait() holds between entering and sleeping
            stop._on_signal(signal.SIGTERM, None)
        done.set()

    runner = threading.Thread(target=handler_inside_the_lock, daemon=True)  # a hung handler must not hang the run
    runner.start()
    runner.join(60)
    assert done.is_set(), "the handler waited for the lock the interrupted wait held"
    assert stop.stop_requested
    assert stop.wait() == "SIGTERM"


def test_a_stop_noted_by_an_earlier_stopsignals_is_the_next_ones_too():
    with StopSignals() as early:
        os.kill(os.getpid(), signal.SIGINT)
        with StopSignals() as server:  # entered after the slow imports: the stop was asked before it
            assert server.stop_requested
            assert server.wait() == "SIGINT"
    assert early.received is signal.SIGINT


# A server started with SIGINT ignored gets a SIGINT while its modules load (before its own StopSignals).
_INTERRUPTED_START = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a background job or nohup starts it
class Trip:
    def find_spec(self, name, path=None, target=None):
        if name == sys.argv[1]:
            print("SIGINT while importing " + name, file=sys.stderr, flush=True)
            os.kill(os.getpid(), signal.SIGINT)
        return None
sys.meta_path.insert(0, Trip())
from tinyagent.__main__ import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize(("command", "module"), [(["mcp-server", "--port", "0"], "tinyagent.toolkit.mcp_server"),
                                                 (["serve", "--port", "0"], "tinyagent.serving.service")],
                         ids=["mcp-server", "serve"])
def test_a_sigint_while_a_server_started_with_sigint_ignored_loads_its_modules_still_stops_it(command, module,
                                                                                              tmp_path):
    # The SIGINT came before the server's StopSignals, while SIGINT was still ignored: it was lost, and the server
    # ran on (the MCP SDK alone takes half a second to load).
    import subprocess
    import sys

    from tests.conftest import PATIENCE

    env = {k: v for k, v in os.environ.items() if not k.startswith("TINYAGENT_")} | {"TINYAGENT_OFFLINE": "1"}
    process = subprocess.Popen([sys.executable, "-c", _INTERRUPTED_START, module, *command,
                                "--db", str(tmp_path / "shop.sqlite3")], cwd=tmp_path, env=env,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = process.communicate(timeout=PATIENCE)
    finally:
        if process.poll() is None:
            process.kill()
            out, err = process.communicate()
    assert f"SIGINT while importing {module}" in err
    assert process.returncode == 0, (out, err)
    assert "stopped (SIGINT)" in out + err and "Traceback" not in err, (out, err)
