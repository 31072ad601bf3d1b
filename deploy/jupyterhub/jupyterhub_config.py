# JupyterHub for a tinyagent classroom, on one machine.
#
#     make classroom-hub          (or: .venv/bin/jupyterhub -f deploy/jupyterhub/jupyterhub_config.py)
#
# What it sets up, in the order of this file:
#   1. the hub listens on 127.0.0.1 only, unless the teacher sets TINYAGENT_HUB_IP (0.0.0.0: the whole LAN);
#   2. sign-in: a class password and a teacher (admin) password, generated on first start (replace them
#      with your school's sign-in: see "Sign-in" below);
#   3. the classroom model runs as a service of the hub: the hub starts it, restarts it if it dies, and its
#      proxy routes /services/classroom/ to it;
#   4. every learner gets a system account of their own and a JupyterLab server running as it, with the
#      learners' Python (RUNTIME), TINYAGENT_API_URL and TINYAGENT_MODEL set to that service, their own
#      copy of notebooks/ and their own folder for temporary files.
#
# What runs as whom:
#   root                the hub (root, to start each learner's server as their account)
#   jupyter-_proxy      the hub's proxy (section 1), which reads what the network sends: a system account of its
#                       own, no login shell, its copies of its keys in HOMES/jupyter-_proxy
#   jupyter-_classroom  the classroom model (section 3): a system account of its own, no home, no login shell;
#                       the account prefix, then `_classroom`: no learner name starts with `_`, so no
#                       learner's account is ever this one. Over TLS on 127.0.0.2, its key in HOMES/jupyter-_classroom
#   jupyter-NAME        learner NAME's server, kernels and terminals (section 4)
# With TINYAGENT_HUB_ONE_ACCOUNT=1 all of them run as the account that started the hub.
# The hub, its proxy and each learner's server talk TLS (section 1): the certificate authorities and their keys in
# STATE/internal-ssl (root's), each learner's server's key in a copy in her home (hers).
#
# Settings come from the environment, so the same file serves the make target, the tests and a teacher:
#   TINYAGENT_HUB_IP      address to listen on (default 127.0.0.1)
#   TINYAGENT_HUB_PORT    the page learners open (default 8000, at least 1024); the next three ports are the proxy's
#                         API, the hub's API and the classroom model (on 127.0.0.2)
#   TINYAGENT_HUB_STATE   folder for the hub's database, secrets and log, root's only (default: .hub/)
#   TINYAGENT_HUB_HOMES   where the learners' accounts get their homes (default /home)
#   TINYAGENT_HUB_RUNTIME the learners' Python environment (default .venv-learners, from make hub-setup)
#   TINYAGENT_HUB_ACCOUNT_PREFIX   system account name = this + learner name (default jupyter-); the
#                                  classroom model's is this + _classroom, the proxy's this + _proxy
#   TINYAGENT_HUB_ONE_ACCOUNT=1    a trial: every learner's server runs as the hub's account (section 4)

import os
import pwd
import secrets
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
COURSE = HERE.parents[1]  # this repository: its notebooks/ are the lessons
VENV_BIN = Path(sys.executable).parent  # the hub runs in the course's .venv
STATE = Path(os.environ.get("TINYAGENT_HUB_STATE") or COURSE / ".hub").resolve()
HOMES = Path(os.environ.get("TINYAGENT_HUB_HOMES") or "/home")
# Not resolved: a venv's bin/python is a link to the interpreter, and must be run through the venv.
RUNTIME = Path(os.environ.get("TINYAGENT_HUB_RUNTIME") or COURSE / ".venv-learners").absolute()
ONE_ACCOUNT = os.environ.get("TINYAGENT_HUB_ONE_ACCOUNT") == "1"
PREFIX = os.environ.get("TINYAGENT_HUB_ACCOUNT_PREFIX", "jupyter-")
IP = os.environ.get("TINYAGENT_HUB_IP", "127.0.0.1")
PORT = int(os.environ.get("TINYAGENT_HUB_PORT", "8000"))
PROXY_API_PORT, HUB_API_PORT, MODEL_PORT = PORT + 1, PORT + 2, PORT + 3
# How the learners' kernels, on this machine, reach the hub's public port.
HERE_ADDRESS = "127.0.0.1" if IP in ("", "0.0.0.0", "::") else IP
HERE_IN_URL = f"[{HERE_ADDRESS}]" if ":" in HERE_ADDRESS else HERE_ADDRESS  # an IPv6 address in brackets

c = get_config()  # noqa: F821 - JupyterHub defines get_config() when it loads this file

sys.path.insert(0, str(HERE))  # this folder's modules: learner_names.py, ...
from jupyterhub.app import JupyterHub as JupyterHubApp
from jupyterhub.authenticators.shared import SharedPasswordAuthenticator
from learner_accounts import (
    SERVICE_ADDRESS,
    LearnerAccountSpawner,
    OneAccountSpawner,
    ServiceCertificate,
    learners_paths,
    runtime_problem,
    service_account,
    service_account_name,
)
from learner_names import PATTERN, LearnerListError, is_learner_name, read_learners, typed_name
from proxy_account import page_port_problem

from tinyagent.hosting.lesson_copies import copy_new_lessons

STATE.mkdir(mode=0o700, parents=True, exist_ok=True)
STATE.chmod(0o700)  # the passwords, the cookie secret and the database: the hub's alone

# -- 1. where it listens, where it keeps its state -------------------------------------------------
c.JupyterHub.bind_url = f"http://[{IP}]:{PORT}" if ":" in IP else f"http://{IP}:{PORT}"
# Inside the machine, everything the hub starts talks TLS with certificates the hub's own CAs make (internal_ssl):
# the hub's API, the proxy's API, and each learner's server, which the proxy and the hub reach only if it shows
# the certificate made for it. Without it, another learner's code that bound a learner's port before her server
# did (or after it stopped) got her requests through the proxy, her token and her cookies with them. Each
# learner's server gets an address of its own and a certificate that names it alone
# (learner_accounts.OwnAddressSpawner, section 4). The CAs, their keys and every certificate live in
# STATE/internal-ssl, root's only; each learner's server reads a copy of its own key in her home (section 4).
c.JupyterHub.internal_ssl = True
c.JupyterHub.internal_certs_location = str(STATE / "internal-ssl")  # its folders are 0755, inside STATE's 0700
c.JupyterHub.hub_bind_url = f"https://127.0.0.1:{HUB_API_PORT}"
c.ConfigurableHTTPProxy.api_url = f"https://127.0.0.1:{PROXY_API_PORT}"
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "cookie_secret")
c.JupyterHub.pid_file = str(STATE / "jupyterhub.pid")
c.ConfigurableHTTPProxy.pid_file = str(STATE / "proxy.pid")
# The proxy reads what the whole network sends: with learners' accounts (section 4) it runs as a system account of
# its own, PROXY_ACCOUNT, not as the hub's root. proxy_account.py gives its account copies of the proxy's keys
# (in HOMES/<its account>/, 0700, files 0600) and gives up root before it becomes the proxy; the program is the
# learners' runtime's (`make hub-setup`), which every account can run. On one account, it is the hub's.
PROXY_ACCOUNT = service_account_name(PREFIX, "proxy")
PROXY_PROGRAM = (VENV_BIN if ONE_ACCOUNT else RUNTIME / "bin") / "configurable-http-proxy"
# Node.js runs it with proxy_target_names.js loaded first: Node checks a TLS target's certificate against the name in
# the browser's Host header, which no certificate of the room holds, so a hub opened as http://localhost:8000, by the
# machine's name or behind a web server in front answered 503 past its own pages; now against the target's address.
PROXY_TARGET_NAMES = HERE / "proxy_target_names.js"
NODE = Path(shutil.which("node") or "node")
PROXY_COMMAND = [str(NODE), "--require", str(PROXY_TARGET_NAMES), str(PROXY_PROGRAM)]
if ONE_ACCOUNT:
    if PROXY_PROGRAM.exists():  # installed into the venv by `make hub-setup`
        c.ConfigurableHTTPProxy.command = PROXY_COMMAND
else:
    c.ConfigurableHTTPProxy.command = [sys.executable, str(HERE / "proxy_account.py"), PROXY_ACCOUNT,
                                       str(HOMES / PROXY_ACCOUNT), *PROXY_COMMAND]


# -- 2. sign-in --------------------------------------------------------------------------------------
def _password(name: str, length: int) -> str:
    """A password kept in STATE (readable by this account only), made on first start."""
    path = STATE / name
    if not path.exists():
        path.touch(mode=0o600)
        path.write_text(secrets.token_urlsafe(length) + "\n")
    return path.read_text().strip()


# The default is for a trial run: learners sign in with any name they choose and the class password;
# `teacher` signs in with the teacher password and gets the admin page (/hub/admin: add or remove
# learners, start and stop their servers). Anyone who has the class password can sign in as any
# learner (and so open that learner's files), so use it with a class you trust, on loopback or a
# classroom network; each learner's own account (section 4) keeps them out of the others' files and
# the hub's state only as long as nobody signs in under another's name. Whatever the sign-in, a learner's
# code can listen on another port of this machine, and a browser sends the hub's cookies to every port of
# its address: a learner who opens a classmate's page there hands him her session (README, section 2).
#
# Sign-in, the teacher's choice: set c.JupyterHub.authenticator_class to
#   "native"    learners sign up with their own password, the teacher approves them
#               (pip install jupyterhub-nativeauthenticator)
#   "github", "google", "generic-oauth", ...   the school's accounts (pip install oauthenticator)
#   "ltiauthenticator.lti13.authenticator.LTI13Authenticator"   sign-in from Moodle or Canvas
#   "pam"       this machine's Unix accounts (then set LearnerAccountSpawner.account_prefix = "")
class ClassPasswordAuthenticator(SharedPasswordAuthenticator):
    """The shared class password, for names typed without a control character (learner_names.py)."""

    async def authenticate(self, handler, data):
        if not is_learner_name(typed_name(handler, data)):
            return None
        return await super().authenticate(handler, data)


c.JupyterHub.authenticator_class = ClassPasswordAuthenticator
c.SharedPasswordAuthenticator.user_password = _password("class-password", 9)
c.SharedPasswordAuthenticator.admin_password = _password("teacher-password", 32)
c.Authenticator.admin_users = {"teacher"}
# Names a person would type, and nothing else (learner_names.py), at the login form and in the API.
c.Authenticator.username_pattern = PATTERN
# Only these names may sign in, when the teacher lists them (one a line); otherwise any such name.
LEARNERS = STATE / "learners.txt"
if LEARNERS.exists():
    try:
        c.Authenticator.allowed_users = read_learners(LEARNERS)
    except LearnerListError as exc:
        sys.exit(f"error: {exc}")  # one line, and the hub does not start on a list it would misread
else:
    c.Authenticator.allow_all = True

# -- 3. the classroom model, a service the hub manages and routes to ---------------------------------
# Learners reach it through the hub's own address, http://HOST:PORT/services/classroom/v1/...; the
# hub starts it with the hub, restarts it when it exits, and stops it with the hub. It answers only
# tokens the hub vouches for (--hub-auth): every signed-in user may use it (the "user" role below), and
# each learner's server gets a token that may too, which its kernels send as TINYAGENT_API_KEY.
#
# Every learner's code can reach it over loopback, so it must not run as the hub's root: it runs as a
# system account of its own, CLASSROOM_ACCOUNT (made in section 4, with the checks that need root), which
# the hub setuids to. That account can read the course but not the hub's STATE, so it runs the learners'
# Python (RUNTIME: the course's .venv may sit under /root) from "/". It keeps nothing on disk, and talks to
# the hub's API with the token the hub puts in its environment. On one account (section 4) it runs as the
# hub's account, with the hub's Python, as everything else does there.
#
# The hub's own API takes only TLS with a certificate of the hub's (section 1), and the service's copy would sit
# in STATE, where its account cannot go: so it asks the hub about tokens through the proxy's page, as learners'
# browsers reach the hub, and the proxy passes that on over TLS.
#
# The proxy reaches the service over TLS too, on an address of its own (SERVICE_ADDRESS, 127.0.0.2: no learner's
# server's, and not 127.0.0.1), and only if it shows the certificate the hub's CA made for that address alone.
# Over plain HTTP, if the model died, a learner's process that bound its port before the hub restarted it got
# the other learners' model requests, their tokens with them. The service's copy of its key is in HOMES/<its
# account>/ (0700, files 0600), written by its account at each start (learner_accounts.ServiceCertificate); on one
# account (section 4), in STATE/classroom-certs.
CLASSROOM_ACCOUNT = service_account_name(PREFIX, "classroom")
CLASSROOM_CERTS = ServiceCertificate(
    "classroom", SERVICE_ADDRESS, STATE / "classroom-certs" if ONE_ACCOUNT else HOMES / CLASSROOM_ACCOUNT,
    account=None if ONE_ACCOUNT else CLASSROOM_ACCOUNT)
CLASSROOM_ARGS = ["-m", "tinyagent", "classroom", "--hub-auth",
                  "--host", SERVICE_ADDRESS, "--port", str(MODEL_PORT), "--base-path", "/services/classroom",
                  "--certfile", CLASSROOM_CERTS.certfile, "--keyfile", CLASSROOM_CERTS.keyfile]
if ONE_ACCOUNT:
    CLASSROOM_RUNS = {"command": [sys.executable, *CLASSROOM_ARGS], "cwd": str(STATE)}
else:
    CLASSROOM_RUNS = {"command": [str(RUNTIME / "bin" / "python"), *CLASSROOM_ARGS], "cwd": "/",
                      "user": CLASSROOM_ACCOUNT}
c.JupyterHub.services = [
    {
        "name": "classroom",
        **CLASSROOM_RUNS,
        "url": f"https://{SERVICE_ADDRESS}:{MODEL_PORT}",
        "display": False,  # an API for the notebooks, not a page for the hub's home menu
        "environment": {
            "JUPYTERHUB_API_URL": f"http://{HERE_IN_URL}:{PORT}/hub/api",
            # Called by the hub as it starts the service: makes the certificate and its copy (see above).
            "JUPYTERHUB_SSL_KEYFILE": CLASSROOM_CERTS.prepare,
            "JUPYTERHUB_SSL_CERTFILE": CLASSROOM_CERTS.certfile,
            "JUPYTERHUB_SSL_CLIENT_CA": "",  # it checks the hub's tokens, not its clients' certificates
        },
    }
]


# JupyterHub (6.1.1 here) waits for a managed service at its start with its own API's TLS context, a server's, which
# cannot open a connection ("Cannot create a client socket with a PROTOCOL_TLS_SERVER context"): a service on https
# never answers that wait, and the hub exits. Without the argument, start_service makes the client context it
# needs (the hub's certificate and CAs, the service's address checked). A restart after a crash does not wait.
async def _start_service_as_a_client(hub, name, service, ssl_context=None):
    return await _start_service(hub, name, service)


_start_service = JupyterHubApp.start_service
JupyterHubApp.start_service = _start_service_as_a_client


CLASSROOM_URL = f"http://{HERE_IN_URL}:{PORT}/services/classroom/v1/chat/completions"
USE_CLASSROOM = "access:services!service=classroom"
# JupyterHub's default "user" role ("self": their own server and tokens) plus the classroom model.
c.JupyterHub.load_roles = [{"name": "user", "scopes": ["self", USE_CLASSROOM]}]
# The token a learner's server runs with (JUPYTERHUB_API_TOKEN): JupyterHub's "server" role plus the model.
c.Spawner.server_token_scopes = ["users:activity!user", "access:servers!server", USE_CLASSROOM]

# -- 4. the learners' servers --------------------------------------------------------------------------
# Each learner a system account of their own, as The Littlest JupyterHub does (learner_accounts.py):
# `jupyter-NAME`, made on their first start, home HOMES/jupyter-NAME (mode 0700), their server and kernels
# running as that account, so they can open neither another learner's files nor STATE. Their Python is
# RUNTIME (`make hub-setup` builds it from /usr/bin/python3: the course's own .venv may sit where other
# accounts cannot go, such as under /root). A trial on one account only, where every learner can read
# every other's files and the teacher's password, needs TINYAGENT_HUB_ONE_ACCOUNT=1. Each learner's TMPDIR is
# ~/.tmp (mode 0700, made by their account at each start): the kernels' temporary files (ipykernel's
# /tmp/ipykernel_<pid>/) stay out of the shared /tmp, where another learner could make those paths first.
LEARNER_PATH = f"{RUNTIME / 'bin'}{os.pathsep}/usr/local/bin{os.pathsep}/usr/bin{os.pathsep}/bin"
LAB_SETTINGS = HERE / "lab-settings"  # JupyterLab's defaults for the room: no news or update checks online
# `python -m jupyterhub.singleuser`, without the hub's database code it imports and a learner never runs
# (SQLAlchemy and the hub's tables: about 35 MiB a learner); it signs learners in through the hub the same way.
LEARNER_SERVER = HERE / "learner_server.py"
if ONE_ACCOUNT:
    print(f"tinyagent hub: TINYAGENT_HUB_ONE_ACCOUNT=1, a trial on one account: every learner's server runs as "
          f"{pwd.getpwuid(os.geteuid()).pw_name}, so any learner can read every other learner's files and "
          f"the teacher's password in {STATE}. Never for a real class.", file=sys.stderr, flush=True)
    PROXY_UID = os.geteuid()  # the proxy runs as the hub's account
    c.JupyterHub.spawner_class = OneAccountSpawner  # SimpleLocalProcessSpawner, a port of its own each
    c.SimpleLocalProcessSpawner.home_dir_template = str(STATE / "homes" / "{username}")
    c.Spawner.cmd = [sys.executable, str(LEARNER_SERVER)]  # the hub's own Python
    LEARNER_PATH = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"
    c.Spawner.args = ["--allow-root"]  # a hub run as root (a container) spawns as root
    c.Spawner.pre_spawn_hook = lambda spawner: spawner.log.info(
        "%s: %d new course files copied", spawner.user.name,
        len(copy_new_lessons(COURSE / "notebooks", Path(spawner.home_dir) / "notebooks")))
else:
    if os.geteuid() != 0:
        sys.exit("error: the hub must run as root to start each learner's server as their own account; "
                 "for a trial on one account, set TINYAGENT_HUB_ONE_ACCOUNT=1 (learners can then read each "
                 "other's files and the hub's passwords)")
    if PORT < 1024:
        sys.exit(f"error: TINYAGENT_HUB_PORT={PORT}: the proxy runs as an account of its own, which may not listen "
                 "on a port below 1024; use 8000 (the default), with a web server such as nginx or Caddy in front "
                 "for ports 80 and 443")
    problem = runtime_problem(learners_paths(RUNTIME, COURSE))
    if problem:
        sys.exit(f"error: the learners' accounts cannot use the course: {problem}")
    problem = runtime_problem([PROXY_PROGRAM, NODE, PROXY_TARGET_NAMES])
    if problem:
        sys.exit(f"error: the proxy's account cannot run the proxy: {problem}")
    try:
        service_account(CLASSROOM_ACCOUNT, "tinyagent classroom model")  # section 3
    except RuntimeError as exc:
        sys.exit(f"error: the classroom model's account: {exc}")
    try:
        service_account(PROXY_ACCOUNT, "tinyagent hub's proxy")  # section 1
    except RuntimeError as exc:
        sys.exit(f"error: the proxy's account: {exc}")
    PROXY_UID = pwd.getpwnam(PROXY_ACCOUNT).pw_uid
    c.JupyterHub.spawner_class = LearnerAccountSpawner
    c.LearnerAccountSpawner.account_prefix = PREFIX
    c.LearnerAccountSpawner.homes = str(HOMES)
    c.LearnerAccountSpawner.course_notebooks = str(COURSE / "notebooks")
    c.LearnerAccountSpawner.runtime_python = str(RUNTIME / "bin" / "python")
    c.Spawner.cmd = [str(RUNTIME / "bin" / "python"), str(LEARNER_SERVER)]
    c.Spawner.args = []
# The page's port held by another account (a learner's process left running while the hub was down): the proxy
# would run on without it and the hub start all the same, and that account get every browser's and kernel's requests
# to the hub, their tokens with them. The hub stops instead, saying who holds it.
problem = page_port_problem(IP, PORT, PROXY_UID)
if problem:
    sys.exit(f"error: {problem}")
c.Spawner.args += [
    f"--LabApp.app_settings_dir={LAB_SETTINGS}",
    # Server extensions the course never uses, which every learner's server would load at each start:
    # language servers (jupyter_lsp finds none here anyway) and the classic notebook's shim.
    "--ServerApp.jpserver_extensions=jupyter_lsp=False",
    "--ServerApp.jpserver_extensions=notebook_shim=False",
]
c.Spawner.default_url = "/lab/tree/notebooks/00_welcome.ipynb"
c.Spawner.environment = {
    "TINYAGENT_API_URL": CLASSROOM_URL,
    "TINYAGENT_MODEL": "classroom",
    "TINYAGENT_API_KEY": lambda spawner: spawner.api_token,  # the server's own token (section 3)
    "PATH": LEARNER_PATH,  # the terminal's python is the notebooks' python
    # glibc gives each thread that allocates a memory arena of its own; a server's and a kernel's few
    # busy threads do not need them, and a room pays for them once per learner.
    "MALLOC_ARENA_MAX": "2",
    # The real local model (lessons 08, 18, 23, A1) starts a llama.cpp server in each learner's kernel, by default
    # with a generating thread per core, up to 4. A room's kernels share the cores, and llama.cpp's threads wait for
    # each other at every token: two kernels at once on 2 cores took 4.5 times as long as with one thread each
    # (benchmarks/local_model_neighbours.py). One thread each, unless the teacher starts the hub with another number.
    "TINYAGENT_LOCAL_MODEL_THREADS": os.environ.get("TINYAGENT_LOCAL_MODEL_THREADS") or "1",
}
# On 2 busy cores a room's servers start slowly: wait for them rather than fail them.
c.Spawner.start_timeout = 300
c.Spawner.http_timeout = 300
