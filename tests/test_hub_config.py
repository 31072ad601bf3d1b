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
                  "classroom": names["CLASSROOM_URL"], "bind": c.JupyterHub.bind_url,
                  "threads": c.Spawner.environment.get("TINYAGENT_LOCAL_MODEL_THREADS")}}))
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


def test_a_page_port_below_1024_stops_the_hub_with_one_line_before_any_account_is_made(tmp_path):
    # The proxy runs as an account of its own, which may not listen there: the hub would start and its proxy die.
    if os.geteuid() != 0:
        pytest.fail("this test reads the config as the hub runs it with learners' accounts: as root", pytrace=False)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TINYAGENT_")}
    prefix = "tport-"
    env.update(TINYAGENT_HUB_STATE=str(tmp_path / "state"), TINYAGENT_HUB_PORT="443",
               TINYAGENT_HUB_ACCOUNT_PREFIX=prefix)
    done = subprocess.run([sys.executable, "-c", READ], env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode != 0
    assert done.stderr.splitlines() == [
        ("error: TINYAGENT_HUB_PORT=443: the proxy runs as an account of its own, which may not listen on a port "
         "below 1024; use 8000 (the default), with a web server such as nginx or Caddy in front for ports 80 and 443")]
    import pwd

    assert not [entry.pw_name for entry in pwd.getpwall() if entry.pw_name.startswith(prefix)]


def test_the_proxys_launcher_says_in_one_line_what_is_wrong_and_exits_2(tmp_path):
    launcher = CONFIG.parent / "proxy_account.py"
    cases = [(["tinyagent-no-such-account", str(tmp_path / "copies"), "/bin/true", "--api-ssl-key", "/etc/hostname"],
              "error: the proxy's account tinyagent-no-such-account: "),
             (["root", str(tmp_path / "copies"), "/bin/true", "--api-ssl-key", str(tmp_path / "missing.key")],
              "error: the proxy's account root: ")]
    for arguments, start in cases:
        done = subprocess.run([sys.executable, str(launcher), *arguments], capture_output=True, text=True,
                              timeout=120, check=False)
        assert done.returncode == 2, done.stderr
        (line,) = done.stderr.splitlines()
        assert line.startswith(start), line
    assert not (tmp_path / "copies").exists()  # nothing written for an account that is not there, or a file missing


@pytest.mark.parametrize(("teacher_says", "learners_get"), [(None, "1"), ("2", "2")])
def test_learners_real_model_takes_one_thread_each_unless_the_teacher_says(teacher_says, learners_get, tmp_path):
    # A room's kernels share the cores: two llama.cpp servers of two threads each on 2 cores took 4.5 times as long
    # as with one thread each (benchmarks/local_model_neighbours.py). The learners' environment said nothing before.
    env = {k: v for k, v in os.environ.items() if k != "TINYAGENT_LOCAL_MODEL_THREADS"}
    env.update(TINYAGENT_HUB_ONE_ACCOUNT="1", TINYAGENT_HUB_STATE=str(tmp_path / "state"), TINYAGENT_HUB_PORT="18100")
    if teacher_says is not None:
        env["TINYAGENT_LOCAL_MODEL_THREADS"] = teacher_says
    done = subprocess.run([sys.executable, "-c", READ], env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1])["threads"] == learners_get


@pytest.mark.skipif(os.geteuid() != 0, reason="a listener of another account needs root to start")
def test_make_classroom_hub_refuses_a_page_port_another_account_holds_before_starting(tmp_path):
    # The proxy would run on without its page's port, and the holder get what the learners send the hub: the hub
    # refuses in its log, and `make classroom-hub` says so on the terminal, before it starts the hub.
    import contextlib
    import pwd

    import psutil

    from tests.hub_server import HOLD_PORT, LEARNER_PYTHON
    from tinyagent.hosting.address import quiet_port_run

    port = quiet_port_run()
    nobody = pwd.getpwnam("nobody")
    holder = subprocess.Popen(
        [LEARNER_PYTHON, "-c", HOLD_PORT, str(port)],
        user=nobody.pw_uid, group=nobody.pw_gid, extra_groups=[], cwd="/", stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "listening\n"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TINYAGENT_", "JUPYTER"))}
        env.update(TINYAGENT_HUB_STATE=str(tmp_path / "state"), TINYAGENT_HUB_PORT=str(port),
                   TINYAGENT_HUB_ONE_ACCOUNT="1")
        done = subprocess.run([sys.executable, str(CONFIG.parent / "classroom_hub.py")], env=env, check=False,
                              capture_output=True, text=True, timeout=120)
    finally:
        holder.kill()
        holder.wait()
        for process in psutil.process_iter():  # a hub it started all the same (it runs in the state folder)
            with contextlib.suppress(psutil.Error):
                if process.cwd().startswith(str(tmp_path)):
                    process.kill()
    assert done.returncode == 2, done.stderr
    assert done.stderr == (f"error: port {port} of 127.0.0.1, the hub's page, is held by the account nobody, not by "
                           "the hub's proxy: it would get what the learners' browsers and kernels send the hub, their "
                           f"tokens with them; stop its process (ss -ltnp 'sport = :{port}' shows it) and start the "
                           "hub again\n")
    assert not (tmp_path / "state" / "jupyterhub.log").exists()
