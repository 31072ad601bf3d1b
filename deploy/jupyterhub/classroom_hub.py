"""`make classroom-hub`: start the classroom's JupyterHub (jupyterhub_config.py beside this file), wait until
it answers, then print its address, the passwords and how to add learners. Ctrl-C (or SIGTERM) stops it,
and with it every learner's server and the classroom model.

The hub runs in a session of its own, so Ctrl-C reaches this script only, which asks the hub to stop with
SIGTERM: the hub stops at once even when this script was started with SIGINT ignored (a background job),
where a SIGINT would make it wait 30 s. The hub's own log goes to STATE/jupyterhub.log.
"""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
import threading
import time
from pathlib import Path

import requests
from learner_accounts import learners_paths, runtime_problem, service_account_name  # beside this file
from learner_names import LearnerListError, read_learners
from proxy_account import page_port_problem

from tinyagent.hosting.address import this_machine_address
from tinyagent.hosting.signals import StopSignals

HERE = Path(__file__).resolve().parent
COURSE = HERE.parents[1]
# The same settings, with the same defaults, as jupyterhub_config.py reads.
STATE = Path(os.environ.get("TINYAGENT_HUB_STATE") or COURSE / ".hub").resolve()
IP = os.environ.get("TINYAGENT_HUB_IP", "127.0.0.1")
PORT = int(os.environ.get("TINYAGENT_HUB_PORT", "8000"))
HOMES = Path(os.environ.get("TINYAGENT_HUB_HOMES") or "/home")
RUNTIME = Path(os.environ.get("TINYAGENT_HUB_RUNTIME") or COURSE / ".venv-learners").absolute()
PREFIX = os.environ.get("TINYAGENT_HUB_ACCOUNT_PREFIX", "jupyter-")
ONE_ACCOUNT = os.environ.get("TINYAGENT_HUB_ONE_ACCOUNT") == "1"
READY_TIMEOUT_S = 120


EVERY_NETWORK = ("", "0.0.0.0", "::")


def shown_url(url: str) -> str:
    """The hub's address as the banner shows it: listening on every network, the machine's address on the local
    network, which the learners' browsers can use (127.0.0.1, where this script reaches the hub, is each learner's
    own machine)."""
    return f"http://{this_machine_address()}:{PORT}" if IP in EVERY_NETWORK else url


def banner(url: str) -> str:
    learners = STATE / "learners.txt"
    allowed = (f"only the names listed in {learners}" if learners.exists()
               else f"any name they choose (to allow only some names, list them one a line in {learners})")
    reach = ("This machine only: learners use a browser here. To open it to the classroom network, start it "
             "with TINYAGENT_HUB_IP=0.0.0.0 (see the README's teacher section)."
             if IP == "127.0.0.1" else f"Listening on {IP}: anyone who can reach this machine sees the login page.")
    return "\n".join([
        "",
        "tinyagent classroom on JupyterHub",
        "",
        f"Open  {url}",
        "",
        "Learners sign in with",
        f"  user name   {allowed}",
        f"  password    {(STATE / 'class-password').read_text().strip()}",
        "Each gets their own JupyterLab with the course, lesson 00 open, and the classroom model.",
        "",
        f"The teacher signs in as 'teacher' with {(STATE / 'teacher-password').read_text().strip()}",
        f"and adds, removes, starts and stops learners at {url}/hub/admin.",
        "",
        reach,
        (f"TRIAL ON ONE ACCOUNT (TINYAGENT_HUB_ONE_ACCOUNT=1): every learner's server runs as this account, so "
         f"any learner can read the others' files and these passwords. Learners' folders: {STATE / 'homes'}."
         if ONE_ACCOUNT else
         f"Each learner's server runs as a system account of their own, {PREFIX}NAME, home {HOMES}/{PREFIX}NAME; "
         f"the classroom model as {PREFIX}_classroom."),
        f"Passwords and the log are in {STATE} (root's only).",
        "Press Ctrl-C to stop (every learner's server stops too; their files stay).",
    ])


def main() -> int:
    STATE.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:  # the hub refuses a bad list too, but only in its log
        if (STATE / "learners.txt").exists():
            read_learners(STATE / "learners.txt")
    except LearnerListError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not ONE_ACCOUNT:  # the hub checks these too, but says so only in its log
        if os.geteuid() != 0:
            print("error: run it as root, so that each learner's server runs as their own account (for a "
                  "trial on one account, where learners can read each other's files, set "
                  "TINYAGENT_HUB_ONE_ACCOUNT=1)", file=sys.stderr)
            return 2
        problem = runtime_problem(learners_paths(RUNTIME, COURSE))
        if problem:
            print(f"error: the learners' accounts cannot use the course: {problem}", file=sys.stderr)
            return 2
    try:  # the proxy's account, made by the hub at its first start (none yet: any holder is another account)
        proxy_uid = os.geteuid() if ONE_ACCOUNT else pwd.getpwnam(service_account_name(PREFIX, "proxy")).pw_uid
    except KeyError:
        proxy_uid = -1
    problem = page_port_problem(IP, PORT, proxy_uid)  # the hub checks it too, but says so only in its log
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    url = f"http://{'127.0.0.1' if IP in EVERY_NETWORK else IP}:{PORT}"  # where this script looks for the hub
    with StopSignals() as stop, open(STATE / "jupyterhub.log", "ab") as log:
        hub = subprocess.Popen(
            [sys.executable, "-m", "jupyterhub", "-f", str(HERE / "jupyterhub_config.py")],
            cwd=STATE, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        # If the hub dies on its own, stop waiting for Ctrl-C.
        threading.Thread(target=lambda: (hub.wait(), stop.request_stop()), daemon=True).start()
        try:
            deadline = time.monotonic() + READY_TIMEOUT_S
            while not stop.stop_requested and time.monotonic() < deadline:
                try:
                    if requests.get(f"{url}/hub/api/", timeout=5).ok:
                        break
                except requests.RequestException:
                    time.sleep(0.5)
            else:
                if not stop.stop_requested:
                    print(f"error: the hub did not answer within {READY_TIMEOUT_S} s: see {STATE / 'jupyterhub.log'}",
                          file=sys.stderr)
                    return 1
            if hub.poll() is None and not stop.stop_requested:
                print(banner(shown_url(url)), flush=True)
                stop.wait()
        finally:
            if hub.poll() is None:
                hub.terminate()  # SIGTERM: the hub stops the learners' servers, the model and its proxy
                try:
                    hub.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    hub.kill()
                    hub.wait()
    if hub.returncode not in (0, -15):
        print(f"error: the hub exited with {hub.returncode}: see {STATE / 'jupyterhub.log'}", file=sys.stderr)
        return 1
    print("classroom hub stopped.", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
