"""`python -m tinyagent serve` with its standard output closed (`serve >&-`, a service started by a supervisor that
gives it none): it serves, as the classroom model and the weather service do, and stops without a traceback."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import requests

from tests.serving_process import NOW, PATIENCE, service_environment
from tinyagent.hosting.address import quiet_port_run


def test_serve_with_its_standard_output_closed_still_serves_and_stops_cleanly(tmp_path):
    # uvicorn's log formatter asked sys.stdout.isatty(), and with stdout closed sys.stdout is None: the service
    # stopped at once with "error: Unable to configure formatter 'default'".
    port = quiet_port_run()
    process = subprocess.Popen(
        ["bash", "-c", 'exec "$@" >&-', "serve-closed",  # the shell closes fd 1, then becomes the service
         sys.executable, "-m", "tinyagent", "serve", "--port", str(port), "--now", NOW,
         "--db", str(tmp_path / "shop.sqlite3"), "--session-store", str(tmp_path / "sessions.sqlite3")],
        env=service_environment(None), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + PATIENCE
        health = None
        while time.monotonic() < deadline and process.poll() is None:
            try:
                health = requests.get(f"http://127.0.0.1:{port}/health", timeout=10)
                break
            except requests.ConnectionError:
                time.sleep(0.2)
        assert health is not None and health.status_code == 200, process.poll()
        answer = requests.post(f"http://127.0.0.1:{port}/agent/invoke", json={"query": "帮我看看订单 88231 的快递到哪了。"},
                               timeout=PATIENCE)
        assert answer.status_code == 200 and answer.json()["ok"] is True
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            _, said = process.communicate(timeout=PATIENCE)
        except subprocess.TimeoutExpired:
            process.kill()
            _, said = process.communicate()
    assert process.returncode == 0, said
    assert "Traceback" not in said and "error" not in said.lower(), said
