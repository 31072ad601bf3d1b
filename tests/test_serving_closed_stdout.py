"""`python -m tinyagent serve` with its standard output closed (`serve >&-`, a service started by a supervisor that
gives it none): it serves, as the classroom model and the weather service do, and stops without a traceback."""

from __future__ import annotations

import requests

from tests.conftest import PATIENCE, answered_with_stdout_closed
from tests.serving_process import NOW, service_environment


def test_serve_with_its_standard_output_closed_still_serves_and_stops_cleanly(tmp_path):
    # uvicorn's log formatter asked sys.stdout.isatty(), and with stdout closed sys.stdout is None: the service
    # stopped at once with "error: Unable to configure formatter 'default'".
    def health_then_a_run(url):
        assert requests.get(url + "/health", timeout=PATIENCE).status_code == 200
        return requests.post(url + "/agent/invoke", json={"query": "帮我看看订单 88231 的快递到哪了。"}, timeout=PATIENCE)

    answer, code, said = answered_with_stdout_closed(
        ["serve", "--now", NOW, "--db", str(tmp_path / "shop.sqlite3"),
         "--session-store", str(tmp_path / "sessions.sqlite3")], service_environment(None), health_then_a_run)
    assert answer.status_code == 200 and answer.json()["ok"] is True
    assert code == 0, said
    assert "Traceback" not in said and "error" not in said.lower(), said
