"""deploy/jupyterhub/jupyterhub_config.py read as JupyterHub reads it, without starting a hub: the URLs it writes.

On one account (TINYAGENT_HUB_ONE_ACCOUNT=1) loading it makes no system account, so any test run can read it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("jupyterhub")

CONFIG = Path(__file__).resolve().parents[1] / "deploy" / "jupyterhub" / "jupyterhub_config.py"
READ = f"""
import json
from traitlets.config import Config
c = Config()
names = {{"get_config": lambda: c, "__file__": {str(CONFIG)!r}}}
exec(compile(open({str(CONFIG)!r}).read(), {str(CONFIG)!r}, "exec"), names)
print(json.dumps({{"api": c.JupyterHub.services[0]["environment"]["JUPYTERHUB_API_URL"],
                  "classroom": names["CLASSROOM_URL"], "bind": c.JupyterHub.bind_url}}))
"""


@pytest.mark.parametrize(("address", "in_url"), [("127.0.0.1", "127.0.0.1"), ("::1", "[::1]"),
                                                 ("0.0.0.0", "127.0.0.1")])
def test_the_urls_learners_and_the_classroom_use_hold_the_hubs_address_as_a_url_host(address, in_url, tmp_path):
    # With TINYAGENT_HUB_IP=::1 the classroom's JUPYTERHUB_API_URL was http://::1:PORT/hub/api, which no client
    # reads: every learner's token check failed.
    env = {**os.environ, "TINYAGENT_HUB_ONE_ACCOUNT": "1", "TINYAGENT_HUB_IP": address,
           "TINYAGENT_HUB_STATE": str(tmp_path / "state"), "TINYAGENT_HUB_PORT": "18100"}
    done = subprocess.run([sys.executable, "-c", READ], env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    urls = json.loads(done.stdout.strip().splitlines()[-1])
    assert urls["api"] == f"http://{in_url}:18100/hub/api"
    assert urls["classroom"] == f"http://{in_url}:18100/services/classroom/v1/chat/completions"
