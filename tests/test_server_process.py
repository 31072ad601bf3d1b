"""tests/conftest.py's ServerProcess, which every test of a command-line server uses: a server that does not stop
when asked fails its test with where its threads were, not with a bare timeout."""

from __future__ import annotations

import signal

import pytest

from tests.conftest import ServerProcess

IGNORES_SIGTERM = """
import signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ready", flush=True)
def stuck_in_shutdown():
    time.sleep(600)
stuck_in_shutdown()
"""


def test_a_server_that_does_not_stop_fails_with_its_threads_stacks():
    with ServerProcess(code=IGNORES_SIGTERM) as server:
        server.wait_for_line("ready")
        with pytest.raises(AssertionError) as failure:
            server.stop(signal.SIGTERM, timeout=2)
        assert server.process.poll() is not None  # SIGABRT ended it
    message = str(failure.value)
    assert message.startswith("SIGTERM did not stop the server within 2 s; where its threads were:")
    assert "stuck_in_shutdown" in message, message
