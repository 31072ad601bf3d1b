"""A throwaway JupyterHub on loopback, running the course's own deploy/jupyterhub/jupyterhub_config.py,
for tests/test_jupyterhub.py and benchmarks/jupyterhub_room.py.

    with ClassroomHub() as hub:
        hub.add_learners(["ada", "bob"])     # as the teacher would; or hub.sign_in("ada") as a learner does
        hub.start_servers(["ada", "bob"]); hub.wait_until_ready(["ada", "bob"])
        run = run_notebook(hub, "ada", "notebooks/06_react_loop.ipynb")

Everything lives in two temporary folders: the hub's state (root's only, as in a classroom) and the
learners' homes. Each learner is a system account of their own, as the config makes them, named with a
prefix of this hub's own (`t1a2b-ada`), so that the accounts of two test runs never meet and every one
can be removed at the end. The hub gets four free ports in a row (see the config), from below the
kernel's ephemeral range (`tinyagent.hosting.address.quiet_port_run`). A second config file loads the
course's and adds one thing only: an API-only admin service whose token the tests use, as a teacher's
script would. On exit the hub is sent SIGTERM (it stops the learners' servers, the classroom
model and its proxy); then whatever runs as one of this hub's learner accounts or works inside either
folder is killed, and the accounts are deleted.

Why a staged course: the config refuses to start when the learners' accounts cannot reach the course's
notebooks/, tinyagent/, their runtime (.venv-learners) or the lab settings (learner_accounts.py,
runtime_problem), which is right for a classroom, where the teacher puts the course under /srv or /opt. A
test run's checkout may sit where no other account can pass, though: a CI clone in a `mktemp -d` folder
(0700) or under /root. Then, and only then, the hub stages what the learners need into a third temporary
folder, mode 0755 (`stage_course`): copies of tinyagent/, notebooks/ and deploy/jupyterhub/ (config,
modules, lab settings), and the learners' runtime, linked file by file (hard links, no copying of its 1 GB
where the checkout and the temporary folder share a file system; symlinks kept, so bin/python still points
at /usr/bin/python3 and Python finds the venv by the pyvenv.cfg beside it), with its editable install's
finder and its scripts' #! lines pointing at the staged copies. The hub runs the staged config, so the
learners' servers, kernels and lesson copies import the staged tinyagent (checked at staging, as `nobody`).
The classroom's rule is not loosened and no folder outside this harness's own changes its mode. A runtime
given explicitly (runtime=...) that lies outside the checkout is used as it is, so the hub's own check is
still tested.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tests.browser.lab import LAB_SETTINGS
from tinyagent.hosting.address import quiet_port_run

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "deploy" / "jupyterhub" / "jupyterhub_config.py"
VENV_BIN = Path(sys.executable).parent
PROXY = VENV_BIN / "configurable-http-proxy"
RUNTIME = Path(os.environ.get("TINYAGENT_HUB_RUNTIME") or ROOT / ".venv-learners")

# What the learners' runtime is made from (the Makefile's LEARNER_PYTHON), which any account may run; and a process
# that holds a port on 127.0.0.1 (its argument) until killed, saying "listening" once it does.
LEARNER_PYTHON = "/usr/bin/python3"
HOLD_PORT = """\
import socket, sys, time
listener = socket.create_server(("127.0.0.1", int(sys.argv[1])))
print("listening", flush=True)
time.sleep(600)
"""

ADMIN_CONFIG = """\
import os
c = get_config()
load_subconfig({config!r})
# JupyterLab as the browser tests set it up: every cell in the page (no windowing), nothing saved behind
# the test's back (tests/browser/lab.py)
c.Spawner.environment["JUPYTERLAB_SETTINGS_DIR"] = {settings!r}
c.JupyterHub.services.append({{"name": "room-admin", "api_token": os.environ["ROOM_ADMIN_TOKEN"]}})
c.JupyterHub.load_roles.append({{
    "name": "room-admin",
    "scopes": ["admin:users", "admin:servers", "tokens", "access:servers", "list:users", "read:users",
               "read:services", "access:services!service=classroom"],
    "services": ["room-admin"],
}})
"""


def hub_missing() -> str | None:
    """Why a JupyterHub cannot run here, or None if it can."""
    if shutil.which("node") is None and shutil.which("nodejs") is None:
        return "Node.js is not installed (apt-get install nodejs npm), and the hub's proxy needs it"
    if not PROXY.exists():
        return f"no configurable-http-proxy in {VENV_BIN} (make hub-setup installs it from npm)"
    if os.geteuid() != 0:
        return "the hub starts each learner's server as a system account of their own, which needs root"
    if not (RUNTIME / "bin" / "python").exists():
        return f"no learners' runtime at {RUNTIME} (make hub-setup builds it)"
    if not (RUNTIME / "bin" / "configurable-http-proxy").exists():  # the proxy as its own account runs this one
        return f"no configurable-http-proxy in {RUNTIME / 'bin'} (make hub-setup installs it from npm)"
    try:
        import jupyterhub  # noqa: F401
        import websocket  # noqa: F401
    except ImportError as exc:
        return f"{exc.name} is not installed (pip install -e '.[hub]')"
    return None


COURSE_PARTS = ("tinyagent", "notebooks", "deploy/jupyterhub")
SKIPPED = shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints", "*.pyc", "z2jh-chart")


def course_problem() -> str | None:
    """Why the learners' accounts could not use this checkout's course (learner_accounts.py), or None."""
    sys.path.insert(0, str(CONFIG.parent))
    try:
        from learner_accounts import runtime_problem
    finally:
        sys.path.remove(str(CONFIG.parent))
    return runtime_problem([ROOT / "notebooks", ROOT / "tinyagent",
                            CONFIG.parent / "lab-settings" / "overrides.json"])


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)  # the same file, read-only to learners; fast for a 1 GB venv
    except OSError:  # another file system
        shutil.copy2(source, target)


def stage_course(stage: Path, runtime: Path | None) -> Path | None:
    """Copy what the learners need into `stage` (mode 0755, every account passes): the course's parts and,
    if given, the learners' runtime, re-pointed at the staged copies. Returns the staged runtime."""
    stage.chmod(0o755)
    for part in COURSE_PARTS:
        shutil.copytree(ROOT / part, stage / part, ignore=SKIPPED, symlinks=True)
    if runtime is None:
        return None
    staged = stage / ".venv-learners"
    # Its own __pycache__ kept: without it every learner's server would compile JupyterLab's imports anew.
    shutil.copytree(runtime, staged, symlinks=True, copy_function=_link_or_copy)
    site = sorted((staged / "lib").glob("python3*/site-packages"))
    rewritten = [path for folder in site for path in folder.glob("__editable__*")]
    rewritten += [path for path in (staged / "bin").iterdir() if path.is_file() and not path.is_symlink()]
    for path in rewritten:
        data = path.read_bytes()
        if str(ROOT).encode() not in data or b"\0" in data[:1024]:
            continue
        data = data.replace(str(runtime.absolute()).encode(), str(staged).encode())
        data = data.replace(str(ROOT).encode(), str(stage).encode())
        mode = path.stat().st_mode
        path.unlink()  # a hard link to the checkout's own file: never write through it
        path.write_bytes(data)
        path.chmod(mode)
    # As an account that is not root, which tinyagent do the learners' Pythons import?
    found = subprocess.run(
        ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--",
         str(staged / "bin" / "python"), "-c", "import tinyagent; print(tinyagent.__file__)"],
        cwd="/", env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}, capture_output=True, text=True, timeout=120,
        check=False)
    if found.returncode != 0 or not found.stdout.strip().startswith(str(stage / "tinyagent")):
        raise RuntimeError(f"the staged learners' runtime {staged} does not import the staged course:\n"
                           f"{found.stdout}{found.stderr}")
    return staged


class ClassroomHub:
    """The course's JupyterHub config, started in a temporary folder. Use as a context manager."""

    def __init__(self, *, ready_timeout: float = 120.0, one_account: bool = False, runtime: Path = RUNTIME):
        self.ready_timeout = ready_timeout
        self.one_account = one_account
        self.runtime = runtime
        self.port = quiet_port_run(4)  # the page, the proxy's API, the hub's API, the model (the config)
        self.url = f"http://127.0.0.1:{self.port}"
        self.token = secrets.token_hex(16)
        self.prefix = f"t{secrets.token_hex(2)}-"  # this hub's learner accounts: t1a2b-ada, ...
        self.process: subprocess.Popen | None = None
        self.tokens: dict[str, str] = {}

    def account(self, name: str) -> str:
        """The system account learner `name`'s server runs as."""
        return self.prefix + name

    def home(self, name: str) -> Path:
        return self.state / "homes" / name if self.one_account else self.homes / self.account(name)

    def __enter__(self):
        import requests

        self.session = requests.Session()
        self.session.headers["Authorization"] = f"token {self.token}"
        self.state = Path(tempfile.mkdtemp(prefix="tinyagent-hub-"))  # 0700: the hub's alone
        # Short: a kernel's socket lies in its learner's home, and such a path may be 107 bytes at most.
        self.homes = Path(tempfile.mkdtemp(prefix="ta-homes-"))
        self.homes.chmod(0o755)  # as /home: every account passes through to its own home
        self.stage: Path | None = None
        course, runtime = CONFIG, self.runtime
        if not self.one_account and course_problem():  # the checkout is where learners cannot go
            self.stage = Path(tempfile.mkdtemp(prefix="ta-course-"))
            try:
                inside = runtime.absolute().is_relative_to(ROOT)
                runtime = stage_course(self.stage, runtime if inside else None) or runtime
            except BaseException:
                self.__exit__(None, None, None)
                raise
            course = self.stage / CONFIG.relative_to(ROOT)
        config = self.state / "test_config.py"
        settings = self.homes / "lab-user-settings"  # read by every learner's JupyterLab
        for plugin, values in LAB_SETTINGS.items():
            path = settings / f"{plugin}.jupyterlab-settings"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values))
            path.parent.chmod(0o755)
        config.write_text(ADMIN_CONFIG.format(config=str(course), settings=str(settings)))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TINYAGENT_", "JUPYTER"))}
        env.update(TINYAGENT_HUB_STATE=str(self.state), TINYAGENT_HUB_PORT=str(self.port),
                   TINYAGENT_HUB_HOMES=str(self.homes), TINYAGENT_HUB_ACCOUNT_PREFIX=self.prefix,
                   TINYAGENT_HUB_RUNTIME=str(runtime), ROOM_ADMIN_TOKEN=self.token)
        if self.one_account:
            env["TINYAGENT_HUB_ONE_ACCOUNT"] = "1"
        self.log_path = self.state / "hub.log"
        self._log = open(self.log_path, "wb")  # closed in __exit__
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jupyterhub", "-f", str(config)],
            env=env, cwd=self.state, stdout=self._log, stderr=subprocess.STDOUT,
            start_new_session=True,  # a Ctrl-C in the test run reaches it only through __exit__
        )
        try:
            self._wait_until_up()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _wait_until_up(self) -> None:
        import requests

        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"JupyterHub exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                if self.session.get(f"{self.url}/hub/api/", timeout=5).ok and self.model_answers():
                    return
            except requests.RequestException:
                pass
            time.sleep(0.3)
        raise TimeoutError(f"JupyterHub did not answer within {self.ready_timeout:g} s:\n{self.log_tail()}")

    def model_answers(self) -> bool:
        """True once the classroom model answers through the hub's proxy (to the admin's token)."""
        import requests

        try:
            return self.session.get(f"{self.url}/services/classroom/v1/models", timeout=5).ok
        except requests.RequestException:
            return False

    # -- the hub's REST API, as the room-admin service ----------------------------------------------------
    def api(self, method: str, path: str, **kwargs):
        response = self.session.request(method, f"{self.url}/hub/api{path}", timeout=60, **kwargs)
        response.raise_for_status()
        return response.json() if response.content else None

    def add_learners(self, names: list[str]) -> None:
        self.api("POST", "/users", json={"usernames": names})
        for name in names:
            self.tokens[name] = self.api("POST", f"/users/{name}/tokens", json={"note": "test"})["token"]

    def sign_in(self, name: str, password: str | None = None) -> int:
        """`name` signs in through the hub's login form, as a learner's browser does (the class password
        unless another is given), and, once in, asks the hub for a token of their own, which their servers
        and kernels are then reached with. Returns the login's status: 302 (in, on to their server) or 403."""
        import re

        import requests

        learner = requests.Session()
        form = learner.get(f"{self.url}/hub/login", timeout=60)
        xsrf = re.search(r'name="_xsrf" value="([^"]+)"', form.text).group(1)  # the form's anti-forgery field
        signed = learner.post(f"{self.url}/hub/login", timeout=60, allow_redirects=False,
                              data={"username": name, "password": password or self.secret("class-password"),
                                    "_xsrf": xsrf})
        if signed.status_code == 302:
            # The hub's API takes a signed-in browser's cookie only with the same anti-forgery token.
            own = learner.post(f"{self.url}/hub/api/users/{name}/tokens", json={"note": "signed in"},
                               headers={"X-XSRFToken": learner.cookies["_xsrf"]}, timeout=60)
            own.raise_for_status()
            self.tokens[name] = own.json()["token"]
        learner.close()
        return signed.status_code

    def start_servers(self, names: list[str]) -> None:
        """Each learner's server, started with their own token where they signed in (else as the admin),
        all requested at once, as a room signing in together does: the hub answers a start only once the
        server is up or after its slow_spawn_timeout (10 s), so one request after the other would start
        one server after the other."""
        import requests

        def start(name: str) -> None:
            token = self.tokens.get(name, self.token)
            started = requests.post(f"{self.url}/hub/api/users/{name}/server", timeout=120,
                                    headers={"Authorization": f"token {token}"})
            started.raise_for_status()

        with ThreadPoolExecutor(max_workers=min(len(names), 64) or 1) as pool:
            for done in [pool.submit(start, name) for name in names]:
                done.result()

    def wait_until_ready(self, names: list[str], timeout: float = 300.0) -> None:
        deadline = time.monotonic() + timeout
        waiting = set(names)
        while waiting and time.monotonic() < deadline:
            for user in self.api("GET", "/users", params={"state": "ready"}):
                waiting.discard(user["name"])
            if waiting:
                time.sleep(0.5)
        if waiting:
            raise TimeoutError(f"servers not ready after {timeout:g} s: {sorted(waiting)}\n{self.log_tail()}")

    def secret(self, name: str) -> str:
        """A password the config made on first start: class-password or teacher-password."""
        return (self.state / name).read_text().strip()

    def processes_of(self, name: str) -> list:
        """The learner's processes (server and kernels): those running as their account, or, on one
        account, those working inside their home folder."""
        import psutil

        home = str(self.home(name))
        found = []
        for process in psutil.process_iter():
            try:
                if self.one_account:
                    if process.cwd() == home or process.cwd().startswith(home + os.sep):
                        found.append(process)
                elif process.username() == self.account(name):
                    found.append(process)
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, KeyError):
                continue
        return found

    def _accounts(self) -> list[str]:
        import pwd

        return [entry.pw_name for entry in pwd.getpwall() if entry.pw_name.startswith(self.prefix)]

    def log_tail(self, lines: int = 40) -> str:
        """The log's last lines, after any line that says a port was taken: the proxy logs that once, at
        its start, and then goes on without the port, so the hub fails much later and far down the log."""
        try:
            log = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        taken = [line for line in log[:-lines] if "EADDRINUSE" in line or "address already in use" in line.lower()]
        return "\n".join([*taken[:3], *(["..."] if taken else []), *log[-lines:]])

    def __exit__(self, *exc) -> None:
        import psutil

        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # the hub stops servers, service and proxy itself
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        accounts = set(self._accounts())
        folders = tuple(str(f) for f in (self.state, self.homes, self.stage) if f is not None)
        for process in psutil.process_iter():  # whatever the hub left: ours by account or by folder
            try:
                cwd = process.cwd()
                if process.username() in accounts or any(cwd == f or cwd.startswith(f + os.sep) for f in folders):
                    process.kill()
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, KeyError):
                continue
        for account in sorted(accounts):
            subprocess.run(["userdel", "--force", account], check=False, capture_output=True, timeout=120)
        if getattr(self, "_log", None) is not None:
            self._log.close()
        self.session.close()
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)


# -- running a notebook in a learner's kernel, through the Jupyter server API ------------------------------
@dataclass
class NotebookRun:
    """What each cell printed (stdout and results, one string a cell), what went to stderr, and errors."""

    outputs: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.outputs)


class Kernel:
    """A kernel in a learner's server, driven over its websocket with the learner's token."""

    def __init__(self, hub: ClassroomHub, name: str, token: str | None = None, *, path: str = "notebooks"):
        import requests
        import websocket

        self.base = f"{hub.url}/user/{name}/api"
        self.headers = {"Authorization": f"token {token or hub.tokens[name]}"}
        response = requests.post(f"{self.base}/kernels", json={"name": "python3", "path": path},
                                 headers=self.headers, timeout=120)
        response.raise_for_status()
        self.id = response.json()["id"]
        self.session = uuid.uuid4().hex
        ws_url = self.base.replace("http://", "ws://") + f"/kernels/{self.id}/channels?session_id={self.session}"
        self.ws = websocket.create_connection(ws_url, header=self.headers, timeout=300)

    def execute(self, code: str, run: NotebookRun) -> None:
        """Run one cell; its outputs go to `run`. Waits for the kernel's reply and its idle status."""
        msg_id = uuid.uuid4().hex
        self.ws.send(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "session": self.session,
                       "username": "", "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": True},
        }))
        replied = idle = False
        printed = []
        while not (replied and idle):
            message = json.loads(self.ws.recv())
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = message["msg_type"], message["content"]
            if kind == "stream":
                (run.stderr if content["name"] == "stderr" else printed).append(content["text"])
            elif kind in ("execute_result", "display_data"):
                printed.append(content["data"].get("text/plain", "") + "\n")
            elif kind == "error":
                run.errors.append(f"{content['ename']}: {content['evalue']}")
            elif kind == "status" and content["execution_state"] == "idle":
                idle = True
            elif kind == "execute_reply":
                replied = True
        run.outputs.append("".join(printed))  # a print may arrive in several pieces

    def close(self) -> None:
        import requests

        self.ws.close()
        requests.delete(f"{self.base}/kernels/{self.id}", headers=self.headers, timeout=60)


def notebook_cells(hub: ClassroomHub, name: str, path: str) -> list[str]:
    """The code cells of the learner's own copy of a notebook, read through the contents API."""
    import requests

    response = requests.get(f"{hub.url}/user/{name}/api/contents/{path}", params={"content": 1},
                            headers={"Authorization": f"token {hub.tokens[name]}"}, timeout=60)
    response.raise_for_status()
    return ["".join(cell["source"]) for cell in response.json()["content"]["cells"]
            if cell["cell_type"] == "code"]


def run_notebook(hub: ClassroomHub, name: str, path: str, *, prologue: str = "",
                 before_close: Callable[[], None] | None = None) -> NotebookRun:
    """Run every code cell of the learner's copy of `path` in a new kernel of theirs, as Run All does
    (stopping at the first error). `prologue`, if given, runs first; `before_close`, if given, is called
    after the last cell, while the kernel still runs (the benchmark measures memory then)."""
    run = NotebookRun()
    folder = path.rsplit("/", 1)[0] if "/" in path else ""
    kernel = Kernel(hub, name, path=folder)
    try:
        for code in ([prologue] if prologue else []) + notebook_cells(hub, name, path):
            kernel.execute(code, run)
            if run.errors:
                break
        if before_close is not None:
            before_close()
    finally:
        kernel.close()
    return run
