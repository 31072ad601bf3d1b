"""A classroom on JupyterHub: the course's deploy/jupyterhub/jupyterhub_config.py, started for real on loopback.

One hub for the module (tests/hub_server.py): two learners sign in through the hub's login form with the
class password, each asks for a token of their own and starts their server with it; lesson 06 runs in a kernel of each, over the Jupyter server API (a websocket, as JupyterLab
does), against the classroom model the hub manages and routes to. Then learner A tries learner B's server,
a process of B's account takes a third learner's port once her server has stopped (the proxy, talking TLS
inside the hub, refuses it), and a fourth learner signs in through the hub's login page in Chromium and runs
lesson 00. Last, the classroom model is killed and a process of B's account takes its address and port until the
hub starts it again (the proxy, talking TLS to the model too, refuses that as well).

Node.js runs the hub's proxy: where it is missing these tests are skipped, except in CI (the CI environment
variable set), where they fail. The browser test follows the browser tests' rule for Chromium.
"""

from __future__ import annotations

import ipaddress
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.browser.lab import Browser, Notebook, browser_missing
from tests.hub_server import (
    HOLD_PORT,
    LEARNER_PYTHON,
    ROOT,
    ClassroomHub,
    Kernel,
    NotebookRun,
    hub_missing,
    run_notebook,
)
from tinyagent.hosting.address import QUIET_PORTS_FROM, ephemeral_start

MISSING = hub_missing()
if MISSING and not os.environ.get("CI"):
    pytest.skip(f"JupyterHub tests skipped: {MISSING}", allow_module_level=True)
sys.path.insert(0, str(ROOT / "deploy" / "jupyterhub"))  # the config's modules, for the tests' own checks

LEARNERS = ["ada", "bob"]
COURSE = ROOT / "notebooks"
ARTIFACTS = ROOT / "test-artifacts"
LESSON_06 = "notebooks/06_react_loop.ipynb"
# Printed by the first cell: where the kernel's settings point. Not offline: the hub's service.
SETTINGS = "from tinyagent import load_settings; print(load_settings().describe())"


@pytest.fixture(scope="module")
def hub():
    if MISSING:
        pytest.fail(f"the JupyterHub tests need this in CI: {MISSING}", pytrace=False)
    started = time.monotonic()
    with ClassroomHub() as running:
        for name in LEARNERS:
            assert running.sign_in(name) == 302, f"{name} could not sign in with the class password"
        running.start_servers(LEARNERS)
        running.wait_until_ready(LEARNERS)
        yield running
    print(f"JupyterHub tests: {time.monotonic() - started:.1f} s with the hub")


@pytest.fixture(scope="module")
def lesson_06_runs(hub):
    """Lesson 06 run top to bottom in each learner's kernel, one learner after the other."""
    return {name: run_notebook(hub, name, LESSON_06, prologue=SETTINGS) for name in LEARNERS}


def test_the_classroom_model_is_a_service_the_hub_routes_to(hub):
    import requests

    ada = {"Authorization": f"Bearer {hub.tokens['ada']}"}  # as the openai client and LlmClient send it
    models = requests.get(f"{hub.url}/services/classroom/v1/models", headers=ada, timeout=30).json()
    assert "classroom" in [m["id"] for m in models["data"]]
    service = hub.api("GET", "/services/classroom")
    assert service["command"][-8:-4] == ["--port", str(hub.port + 3), "--base-path", "/services/classroom"]


def test_the_classroom_service_refuses_a_request_without_a_valid_token(hub):
    import requests

    chat = f"{hub.url}/services/classroom/v1/chat/completions"
    body = {"model": "classroom", "messages": [{"role": "user", "content": "hi"}]}
    # A learner's token whose scopes leave the service out: the hub knows it, the model refuses it.
    narrow = hub.api("POST", "/users/ada/tokens", json={"note": "no model", "scopes": ["read:users!user=ada"]})
    refused = {
        "no token": ({}, 401),
        "a made-up token": ({"Authorization": "Bearer 0123456789abcdef0123456789abcdef"}, 401),
        "not a bearer token": ({"Authorization": f"Basic {hub.tokens['ada']}"}, 401),
        "a token without the service": ({"Authorization": f"Bearer {narrow['token']}"}, 403),
    }
    for why, (headers, status) in refused.items():
        for answer in (requests.post(chat, json=body, headers=headers, timeout=60),
                       requests.get(f"{hub.url}/services/classroom/v1/models", headers=headers, timeout=60)):
            assert answer.status_code == status, (why, answer.status_code, answer.text)
            assert answer.json()["error"]["message"], why  # the model's own JSON error, not the proxy's
    ok = requests.post(chat, json=body, headers={"Authorization": f"Bearer {hub.tokens['bob']}"}, timeout=60)
    assert ok.status_code == 200 and ok.json()["choices"][0]["message"]["content"]


def test_a_request_too_large_for_the_classroom_model_gets_its_413_through_the_proxy_not_a_503(hub):
    # The model refused such a body from its headers and closed the connection without reading it; the proxy, still
    # sending the body, met a reset and answered the hub's own 503 page instead, which LlmClient took for a busy
    # server and sent the whole body again, three times over.
    import requests

    from tinyagent.classroom.server import MAX_BODY_BYTES

    chat = f"{hub.url}/services/classroom/v1/chat/completions"
    ada = {"Authorization": f"Bearer {hub.tokens['ada']}", "Content-Type": "application/json"}
    for extra in (1_000_000, 3 * MAX_BODY_BYTES):
        body = b'{"model": "classroom", "messages": [{"role": "user", "content": "' + b"x" * (MAX_BODY_BYTES + extra)
        answer = requests.post(chat, data=body + b'"}]}', headers=ada, timeout=120)
        assert answer.status_code == 413 and answer.json()["error"]["code"] == "request_too_large", \
            (extra, answer.status_code, answer.text[:200])
    # and the model serves the next request as before
    ok = requests.post(chat, headers=ada, timeout=60,
                       json={"model": "classroom", "messages": [{"role": "user", "content": "hi"}]})
    assert ok.status_code == 200, ok.text


def classroom_model_process(hub):
    import psutil

    for child in psutil.Process(hub.process.pid).children(recursive=True):
        try:
            command = child.cmdline()
        except psutil.Error:  # gone, or a zombie the hub has not reaped yet
            continue
        if command[1:4] == ["-m", "tinyagent", "classroom"]:
            return child
    return None


def test_the_classroom_model_runs_as_a_system_account_of_its_own_not_as_the_hubs_root(hub):
    # Every learner's code reaches it over loopback: a flaw in its HTTP server must not be root's.
    import requests
    from learner_accounts import ordinary_uids

    service = classroom_model_process(hub)
    assert service is not None
    account = pwd.getpwnam(hub.account("_classroom"))  # the learners' prefix, then a name no learner has
    assert set(service.uids()) == {account.pw_uid} and account.pw_uid != 0
    assert set(service.gids()) == {account.pw_gid} and account.pw_gid != 0
    assert account.pw_uid not in ordinary_uids()  # a system account: no learner's server may run as it
    assert (account.pw_shell, os.path.exists(account.pw_dir)) == ("/usr/sbin/nologin", False)
    assert not any(account.pw_name == hub.account(name) for name in LEARNERS)
    # It cannot enter the hub's state, so it runs from "/", with the learners' Python (the course's .venv may
    # sit where only root goes) ...
    assert service.cwd() == "/"
    assert service.cmdline()[0] == learner_servers(hub, "ada")[0].cmdline()[0]
    # ... and still asks the hub about tokens: a learner's token gets an answer (lesson 06 below, from kernels).
    chat = requests.post(f"{hub.url}/services/classroom/v1/chat/completions", timeout=60,
                         headers={"Authorization": f"Bearer {hub.tokens['ada']}"},
                         json={"model": "classroom", "messages": [{"role": "user", "content": "hi"}]})
    assert chat.status_code == 200, chat.text


def test_the_hubs_proxy_runs_as_a_system_account_of_its_own_with_its_own_copies_of_its_keys(hub):
    # The proxy reads what the whole network sends: a flaw in it must not be root's. The process the hub started
    # (its pid file) became the proxy as that account, and the files it reads are copies its account wrote.
    import psutil
    from learner_accounts import ordinary_uids
    from proxy_account import FILE_OPTIONS

    proxy = psutil.Process(int((hub.state / "proxy.pid").read_text()))
    assert "configurable-http-proxy" in " ".join(proxy.cmdline())
    account = pwd.getpwnam(hub.account("_proxy"))
    assert set(proxy.uids()) == {account.pw_uid} and account.pw_uid != 0
    assert set(proxy.gids()) == {account.pw_gid} and account.pw_gid != 0
    assert account.pw_uid not in ordinary_uids() and account.pw_shell == "/usr/sbin/nologin"
    assert proxy.cwd() == "/"
    # None of the hub's environment but the proxy's token, PATH and LANG (the tests' admin token is in the hub's).
    assert set(proxy.environ()) <= {"CONFIGPROXY_AUTH_TOKEN", "PATH", "LANG"}
    assert "CONFIGPROXY_AUTH_TOKEN" in proxy.environ()
    command = proxy.cmdline()
    read = [Path(command[at + 1]) for at, word in enumerate(command[:-1]) if word in FILE_OPTIONS]
    assert len(read) == 6, command  # the API's key, certificate and CA; the same for its connections out
    folder = hub.homes / hub.account("_proxy")
    for path in [folder, *read]:
        assert path == folder or path.parent == folder, path
        assert (path.stat().st_uid, stat.S_IMODE(path.stat().st_mode)) == (
            account.pw_uid, 0o700 if path == folder else 0o600), path
    # The hub's originals stay where the proxy's account cannot go.
    assert not any(str(path).startswith(str(hub.state)) for path in read)
    # And it proxies: the page answers, and so does a learner's server through it.
    ada = {"Authorization": f"token {hub.tokens['ada']}"}
    assert hub.session.get(f"{hub.url}/user/ada/api/status", headers=ada, timeout=60).status_code == 200


def test_each_learner_gets_their_own_copy_of_the_course(hub):
    for name in LEARNERS:
        copied = hub.home(name) / "notebooks"
        assert (copied / "00_welcome.ipynb").read_bytes() == (COURSE / "00_welcome.ipynb").read_bytes()
        assert (copied / "solutions" / "06_react_loop.ipynb").exists()
        # made by the learner's own account: theirs to edit, nobody else's to read
        account = pwd.getpwnam(hub.account(name))
        assert {p.stat().st_uid for p in [copied, *copied.rglob("*")]} == {account.pw_uid}


def test_each_learner_is_a_system_account_of_their_own_and_the_hubs_state_is_roots(hub):
    uids = set()
    for name in LEARNERS:
        account = pwd.getpwnam(hub.account(name))
        assert account.pw_uid != 0 and account.pw_dir == str(hub.home(name))
        home = hub.home(name).stat()
        assert (home.st_uid, stat.S_IMODE(home.st_mode)) == (account.pw_uid, 0o700)
        servers = hub.processes_of(name)
        assert servers and {p.uids().real for p in servers} == {account.pw_uid}
        uids.add(account.pw_uid)
        # A folder of their own for temporary files, not the shared /tmp, made before the server started.
        tmp = hub.home(name) / ".tmp"
        assert (tmp.stat().st_uid, stat.S_IMODE(tmp.stat().st_mode)) == (account.pw_uid, 0o700)
        assert {p.environ().get("TMPDIR") for p in learner_servers(hub, name)} == {str(tmp)}
    assert len(uids) == len(LEARNERS)
    state = hub.state.stat()
    assert (state.st_uid, stat.S_IMODE(state.st_mode)) == (0, 0o700)


def learner_servers(hub, name: str) -> list:
    """The learner's server processes (learner_server.py), not their kernels."""
    return [p for p in hub.processes_of(name) if any(a.endswith("learner_server.py") for a in p.cmdline())]


def test_each_learners_server_runs_without_the_hubs_database_code(hub):
    # learner_server.py: SQLAlchemy's compiled parts (sqlalchemy/**/*.so) are mapped into any process that
    # imported it, as `python -m jupyterhub.singleuser` does; the learner signed in through the hub all the same.
    for name in LEARNERS:
        servers = learner_servers(hub, name)
        assert len(servers) == 1, [p.cmdline() for p in hub.processes_of(name)]
        maps = Path(f"/proc/{servers[0].pid}/maps").read_text()
        assert "/site-packages/jupyter_server/" not in maps  # pure Python: nothing of it is mapped
        assert "/site-packages/tornado/" in maps  # tornado's speedups: what a mapped import looks like
        assert "/site-packages/sqlalchemy/" not in maps


def learner_server_ports(hub, name: str) -> set[int]:
    """The TCP ports the learner's server listens on."""
    return {c.laddr.port for p in learner_servers(hub, name) for c in p.net_connections(kind="tcp")
            if c.status == "LISTEN"}


def test_each_learners_server_listens_on_a_port_of_its_own_below_the_ephemeral_range(hub):
    # learner_accounts.OwnPortSpawner: a port bound to port 0 and freed, as JupyterHub picks it, may be told to two
    # learners at once, or taken by an outgoing connection before the server binds it.
    ports = {name: learner_server_ports(hub, name) for name in LEARNERS}
    assert all(len(each) == 1 for each in ports.values()), ports
    told = [port for each in ports.values() for port in each]
    assert len(set(told)) == len(LEARNERS)
    assert all(QUIET_PORTS_FROM <= port < ephemeral_start() for port in told), told


def test_from_a_learners_kernel_other_learners_files_and_the_hubs_state_cannot_be_opened(hub):
    # What ada's code tries: bob's lesson and folder, and everything the hub keeps (its database, its
    # cookie secret, the teacher's and the class password); and, to show the probe works, her own lesson.
    targets = {
        "bob's lesson": hub.home("bob") / "notebooks" / "00_welcome.ipynb",
        "bob's folder": hub.home("bob"),
        "teacher password": hub.state / "teacher-password",
        "class password": hub.state / "class-password",
        "cookie secret": hub.state / "cookie_secret",
        "hub database": hub.state / "jupyterhub.sqlite",
        "bob's server key": Path(learner_servers(hub, "bob")[0].environ()["JUPYTERHUB_SSL_KEYFILE"]),
        "the hub's CA key for servers": hub.state / "internal-ssl" / "notebooks-ca" / "notebooks-ca.key",
        "the classroom model's key": hub.homes / hub.account("_classroom") / "classroom.key",
        "her own lesson": hub.home("ada") / "notebooks" / "00_welcome.ipynb",
    }
    probe = (
        "import os\n"
        f"for label, path in {[(k, str(v)) for k, v in targets.items()]!r}:\n"
        "    try:\n"
        "        os.listdir(path) if os.path.isdir(path) else open(path, 'rb').read(1)\n"
        "        print(label, 'OPENED')\n"
        "    except OSError as exc:\n"
        "        print(label, type(exc).__name__)\n"
        "print('uid', os.getuid())\n"
        "import tempfile, ipykernel.compiler\n"
        "print('tmp', tempfile.gettempdir())\n"
        "print('ipykernel tmp', ipykernel.compiler.get_tmp_directory())\n"
        "import json, ipykernel.connect\n"
        "print('kernel transport', json.load(open(ipykernel.connect.get_connection_file()))['transport'])\n"
    )
    kernel = Kernel(hub, "ada")
    run = NotebookRun()
    try:
        kernel.execute(probe, run)
    finally:
        kernel.close()
    assert run.errors == [] and run.stderr == [], (run.errors, run.stderr)
    seen = dict(line.rsplit(" ", 1) for line in run.text.splitlines())
    assert seen.pop("her own lesson") == "OPENED"
    assert seen.pop("uid") == str(pwd.getpwnam(hub.account("ada")).pw_uid)
    # Her temporary files (ipykernel's cell files among them) in her own folder, never in the shared /tmp,
    # where another learner could have made /tmp/ipykernel_<pid> first.
    own_tmp = hub.home("ada") / ".tmp"
    assert seen.pop("tmp") == str(own_tmp)
    assert Path(seen.pop("ipykernel tmp")).parent == own_tmp
    # Unix sockets in her home, not TCP ports any account could connect to (or collide on)
    assert seen.pop("kernel transport") == "ipc"
    assert seen == {label: "PermissionError" for label in targets if label != "her own lesson"}, seen


def test_lesson_06_runs_in_each_learners_kernel_against_the_hub_service(hub, lesson_06_runs):
    for name, run in lesson_06_runs.items():
        assert run.errors == [], f"{name}: {run.errors}"
        assert run.stderr == [], f"{name}: {run.stderr}"
        # The kernel used the hub's classroom service, not a model of its own in the kernel.
        assert run.outputs[0].startswith(
            f"model 'classroom' at http://127.0.0.1:{hub.port}/services/classroom/v1/chat/completions"
        ), run.outputs[0]
        assert "offline" not in run.outputs[0]
        # The refund trace: five rounds, then the refund the shop really wrote.
        assert "final_answer 5 rounds" in run.text
        assert "'refundId': 'RF202606300001'" in run.text
        assert "[Tool call] applyRefund" in run.text
        # ... and the lesson ran to its last cells: the loop's source, then its parts.
        assert "def loop(self)" in run.outputs[-2]
        assert run.outputs[-1].startswith("request     WholeConversation()")


def test_a_wrong_password_does_not_sign_in(hub):
    assert hub.sign_in("eve", password="not-the-class-password") == 403
    assert "eve" not in hub.tokens


def test_a_name_with_a_newline_or_a_control_character_does_not_sign_in(hub):
    for name in ("ada\nteacher", "bo\x07b", "eve\x1b[2J", "zed\x00", "a" * 25, "../bob"):
        assert hub.sign_in(name) == 403, repr(name)
        assert name not in hub.tokens
    # Nor can the teacher's side add one through the hub's API.
    added = hub.session.post(f"{hub.url}/hub/api/users", json={"usernames": ["ok", "bad\nname"]}, timeout=60)
    assert added.status_code == 400
    names = {user["name"] for user in hub.api("GET", "/users")}
    assert not any(set(n) - set("abcdefghijklmnopqrstuvwxyz0123456789._-") for n in names), names


def test_a_learner_cannot_reach_another_learners_server(hub):
    import requests
    import websocket

    ada = {"Authorization": f"token {hub.tokens['ada']}"}
    own = requests.get(f"{hub.url}/user/ada/api/contents/notebooks", headers=ada, timeout=60)
    assert own.status_code == 200  # the token works, on ada's own server
    for path in ("/user/bob/api/contents/notebooks", "/user/bob/api/kernels"):
        assert requests.get(hub.url + path, headers=ada, timeout=60).status_code == 403, path
    started = requests.post(f"{hub.url}/user/bob/api/kernels", headers=ada, json={"name": "python3"}, timeout=60)
    assert started.status_code == 403
    assert requests.get(f"{hub.url}/hub/api/users/bob", headers=ada, timeout=60).status_code == 404

    bobs = Kernel(hub, "bob")  # a kernel bob really has: ada may not open its websocket
    try:
        url = f"ws://127.0.0.1:{hub.port}/user/bob/api/kernels/{bobs.id}/channels?session_id=x"
        with pytest.raises(websocket.WebSocketBadStatusException) as refused:
            websocket.create_connection(url, header=ada, timeout=60)
        assert refused.value.status_code == 403
    finally:
        bobs.close()


# -- internal_ssl: the proxy talks to a learner's server only if it shows the certificate made for it ----------
def test_each_learners_server_speaks_tls_on_an_address_of_its_own_with_a_key_only_she_can_read(hub):
    from cryptography import x509

    addresses = set()
    for name in LEARNERS:
        (server,) = learner_servers(hub, name)
        env = server.environ()
        told = urlparse(env["JUPYTERHUB_SERVICE_URL"])  # https://127.1.0.N:PORT/user/NAME/
        assert told.scheme == "https", told
        assert ipaddress.ip_address(told.hostname).is_loopback and told.hostname != "127.0.0.1", told
        addresses.add(told.hostname)
        # Her certificate names her server's address and nothing else: no 127.0.0.1, no localhost, which every
        # learner's certificate would name and so pass for hers.
        cert = x509.load_pem_x509_certificate(Path(env["JUPYTERHUB_SSL_CERTFILE"]).read_bytes())
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == [told.hostname]
        assert names.get_values_for_type(x509.DNSName) == []
        # Her copy of her key, certificate and the CAs her server trusts: hers alone, in her home.
        account = pwd.getpwnam(hub.account(name))
        copies = [Path(env[f"JUPYTERHUB_SSL_{kind}"]) for kind in ("KEYFILE", "CERTFILE", "CLIENT_CA")]
        folder = copies[0].parent
        assert folder.parent == hub.home(name)
        for path, mode in [(folder, 0o700)] + [(copy, 0o600) for copy in copies]:
            assert (path.stat().st_uid, stat.S_IMODE(path.stat().st_mode)) == (account.pw_uid, mode), path
    assert len(addresses) == len(LEARNERS)
    # The CAs' keys and every certificate: in the hub's state (root's only, 0700), past which no other account can
    # go, whatever modes certipy gives the folders inside (0755).
    assert (hub.state / "internal-ssl" / "notebooks-ca" / "notebooks-ca.key").exists()
    state = hub.state.stat()
    assert (state.st_uid, stat.S_IMODE(state.st_mode)) == (0, 0o700)


def test_a_learner_who_opened_the_hub_by_a_name_reaches_her_server_her_kernel_and_the_model(hub):
    # A browser at http://localhost:8000, at the machine's name, or behind a web server in front that passes the
    # public name on sends that name in Host. Node's HTTPS client checked each target's certificate against it, and
    # no certificate of the room names one (each names its server's address alone): every request past the hub's
    # own pages was a 503. The proxy now checks each certificate against the address it connects to.
    import requests
    import websocket

    ada = {"Authorization": f"token {hub.tokens['ada']}"}
    for name in (f"localhost:{hub.port}", "hub.school.example"):
        own = requests.get(f"{hub.url}/user/ada/api/contents/notebooks", timeout=60,
                           headers={**ada, "Host": name})
        assert own.status_code == 200 and "00_welcome.ipynb" in {item["name"] for item in own.json()["content"]}, \
            (name, own.status_code, own.text[:200])
        model = requests.get(f"{hub.url}/services/classroom/v1/models", timeout=60, headers={**ada, "Host": name})
        assert model.status_code == 200 and model.json()["data"], (name, model.status_code, model.text[:200])
    kernel = Kernel(hub, "ada")  # her kernel's websocket, as her browser at http://localhost opens it
    try:
        url = f"ws://127.0.0.1:{hub.port}/user/ada/api/kernels/{kernel.id}/channels?session_id=x"
        ws = websocket.create_connection(url, header=ada, host=f"localhost:{hub.port}",
                                         origin=f"http://localhost:{hub.port}", timeout=60)
        ws.close()
    finally:
        kernel.close()
    # bob's token still opens none of it, whatever the name
    bob = {"Authorization": f"token {hub.tokens['bob']}", "Host": f"localhost:{hub.port}"}
    assert requests.get(f"{hub.url}/user/ada/api/contents/notebooks", headers=bob, timeout=60).status_code == 403


def test_an_impostor_on_a_learners_port_gets_none_of_her_requests_and_her_own_server_works(hub):
    # A learner's server that stops (killed here) frees its port while the proxy still routes her requests there:
    # the hub notices at its next poll, up to 30 s later. bob's code binds her address and port at once, with his
    # own server's certificate. Over plain HTTP the proxy handed such a process her requests, her token with them;
    # with internal_ssl it asks for the certificate made for her server's address, and bob's names his.
    import psutil
    import requests

    assert hub.sign_in("dan") == 302
    hub.start_servers(["dan"])
    hub.wait_until_ready(["dan"])
    dans = {"Authorization": f"token {hub.tokens['dan']}"}
    (server,) = learner_servers(hub, "dan")
    told = urlparse(server.environ()["JUPYTERHUB_SERVICE_URL"])
    (bobs_server,) = learner_servers(hub, "bob")
    bobs = bobs_server.environ()
    bob = pwd.getpwnam(hub.account("bob"))
    server.kill()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(
            c.laddr.port == told.port and c.status == "LISTEN" for c in psutil.net_connections(kind="tcp")):
        time.sleep(0.01)  # until his server's socket is closed
    impostor = subprocess.Popen(
        [bobs_server.cmdline()[0], "-c", IMPOSTOR, told.hostname, str(told.port),
         bobs["JUPYTERHUB_SSL_CERTFILE"], bobs["JUPYTERHUB_SSL_KEYFILE"]],
        user=bob.pw_uid, group=bob.pw_gid, extra_groups=[], cwd=bob.pw_dir, env={"PATH": "/usr/bin:/bin"},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert impostor.stdout.readline() == "listening\n"
        # as his browser sends it at the hub's address, and at a name (the proxy checks the address all the same)
        answers = [requests.get(f"{hub.url}/user/dan/api/contents/notebooks", headers={**dans, **host}, timeout=60,
                                allow_redirects=False) for host in ({}, {"Host": f"localhost:{hub.port}"})]
    finally:
        impostor.kill()
        said = impostor.communicate(timeout=30)[0].splitlines()
    assert said.count("connection") >= 2, said  # the proxy did go to dan's address and port ...
    assert not any(line.startswith("request") for line in said), said  # ... and sent nothing past TLS
    for answer in answers:
        assert answer.status_code >= 500 and "impostor" not in answer.text, (answer.status_code, answer.text[:200])

    hub.api("DELETE", "/users/dan/server")  # the hub finds his server gone, and takes its route away
    hub.start_servers(["dan"])
    hub.wait_until_ready(["dan"])
    own = requests.get(f"{hub.url}/user/dan/api/contents/notebooks", headers=dans, timeout=60)
    assert own.status_code == 200 and "00_welcome.ipynb" in {item["name"] for item in own.json()["content"]}


def hub_user_id(hub, name: str) -> int:
    """The hub's number for user `name`, from its database (its API does not show it)."""
    import sqlite3

    with sqlite3.connect(hub.state / "jupyterhub.sqlite") as db:
        (found,) = db.execute("SELECT id FROM users WHERE name = ?", (name,)).fetchone()
    return found


def test_a_new_learner_never_gets_the_address_of_a_learner_deleted_from_the_hub(hub):
    # The hub's SQLite database gives a new user the number of the last one deleted. Were her address made from that
    # number, fay would listen where eve did, and a process eve's account left running, with eve's certificate for
    # that address, would pass for fay's server. Her address comes from her own system account's uid.
    from cryptography import x509

    assert hub.sign_in("eve") == 302
    hub.start_servers(["eve"])
    hub.wait_until_ready(["eve"])
    (server,) = learner_servers(hub, "eve")
    eves = server.environ()
    eves_address = urlparse(eves["JUPYTERHUB_SERVICE_URL"]).hostname
    eves_number = hub_user_id(hub, "eve")
    hub.api("DELETE", "/users/eve")  # her server stopped, her user gone; her account and its files stay
    assert hub.sign_in("fay") == 302
    assert hub_user_id(hub, "fay") == eves_number  # what made the hub's number unfit for an address
    hub.start_servers(["fay"])
    hub.wait_until_ready(["fay"])
    (server,) = learner_servers(hub, "fay")
    fays_address = urlparse(server.environ()["JUPYTERHUB_SERVICE_URL"]).hostname
    assert fays_address != eves_address
    left = x509.load_pem_x509_certificate(Path(eves["JUPYTERHUB_SSL_CERTFILE"]).read_bytes())
    names = left.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == [eves_address]
    for name, address in (("eve", eves_address), ("fay", fays_address)):  # 127.1.0.0 plus her account's uid
        uid = pwd.getpwnam(hub.account(name)).pw_uid
        assert ipaddress.ip_address(address) == ipaddress.ip_address("127.1.0.0") + uid, (name, address, uid)


# -- the hub's own checks at start, each with a hub of its own ----------------------------------------------
def test_a_learners_runtime_other_accounts_cannot_use_stops_the_hub_with_one_line():
    if MISSING:
        pytest.fail(f"the JupyterHub tests need this in CI: {MISSING}", pytrace=False)
    # As the course's .venv under /root is: a Python behind a folder only root may enter.
    private = Path(tempfile.mkdtemp(prefix="tinyagent-private-"))  # mode 0700
    try:
        hidden = private / "venv"
        (hidden / "bin").mkdir(parents=True)
        (hidden / "bin" / "python").symlink_to(sys.executable)
        with pytest.raises(RuntimeError) as stopped, ClassroomHub(runtime=hidden):
            pass
    finally:
        shutil.rmtree(private)
    lines = [line for line in str(stopped.value).splitlines() if line.startswith("error:")]
    assert lines == [(f"error: the learners' accounts cannot use the course: other accounts cannot reach "
                      f"{hidden / 'bin' / 'python'}: {private} is mode 0700; put the course where every account "
                      "can read it (for example under /opt or /srv), or set TINYAGENT_HUB_ONE_ACCOUNT=1")], lines


def test_a_page_port_another_account_holds_stops_the_hub_with_one_line():
    if MISSING:
        pytest.fail(f"the JupyterHub tests need this in CI: {MISSING}", pytrace=False)
    # A learner's process left running while the hub was down (her server stops with the hub; a process she started
    # apart does not) binds the hub's page port. The proxy, started as before, could not bind it and went on without
    # it, and the hub started all the same: every browser, every kernel's model request with its token, and the
    # model's own token checks went to her process. The hub now refuses to start, and says who holds the port.
    squatter = pwd.getpwnam("nobody")
    hub = ClassroomHub(ready_timeout=60)
    holder = subprocess.Popen(
        [LEARNER_PYTHON, "-c", HOLD_PORT, str(hub.port)],
        user=squatter.pw_uid, group=squatter.pw_gid, extra_groups=[], cwd="/", stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "listening\n"
        with pytest.raises(RuntimeError) as stopped, hub:
            pass
    finally:
        holder.kill()
        holder.wait()
    lines = [line for line in str(stopped.value).splitlines() if line.startswith("error:")]
    assert lines == [(f"error: port {hub.port} of 127.0.0.1, the hub's page, is held by the account nobody, not by "
                      "the hub's proxy: it would get what the learners' browsers and kernels send the hub, their tokens "
                      f"with them; stop its process (ss -ltnp 'sport = :{hub.port}' shows it) and start the hub again")], lines


def test_the_one_account_trial_says_what_it_gives_away_and_does_it():
    if MISSING:
        pytest.fail(f"the JupyterHub tests need this in CI: {MISSING}", pytrace=False)
    with ClassroomHub(one_account=True) as trial:
        assert "a trial on one account: every learner's server runs as root, so any learner can read every " \
            "other learner's files and the teacher's password" in trial.log_path.read_text()
        assert trial.sign_in("solo") == 302
        trial.start_servers(["solo"])
        trial.wait_until_ready(["solo"])
        assert {p.uids().real for p in trial.processes_of("solo")} == {0}
        # The classroom model runs as the hub's account too, and no account is made for it.
        assert classroom_model_process(trial).uids().real == os.geteuid() and trial.model_answers()
        assert trial.api("GET", "/services/classroom")["url"] == f"https://127.0.0.2:{trial.port + 3}"  # TLS too
        assert not any(e.pw_name == trial.account("_classroom") for e in pwd.getpwall())
        (port,) = learner_server_ports(trial, "solo")  # OneAccountSpawner, a port of its own
        assert QUIET_PORTS_FROM <= port < ephemeral_start()
        (server,) = learner_servers(trial, "solo")  # and TLS on an address of its own, as with accounts
        told = urlparse(server.environ()["JUPYTERHUB_SERVICE_URL"])
        assert (told.scheme, told.port) == ("https", port) and told.hostname.startswith("127.1."), told
        assert not any(e.pw_name == trial.account("solo") for e in pwd.getpwall())
        # Its proxy, the hub's own, checks each server's certificate against its address too, not against Host.
        at_localhost = trial.session.get(f"{trial.url}/user/solo/api/status", timeout=60,
                                         headers={"Authorization": f"token {trial.tokens['solo']}",
                                                  "Host": f"localhost:{trial.port}"})
        assert at_localhost.status_code == 200, (at_localhost.status_code, at_localhost.text[:200])


# -- a learner in the browser ------------------------------------------------------------------------------
def test_a_learner_signs_in_opens_lesson_00_runs_it_and_sees_the_trace(hub):
    missing = browser_missing()
    if missing and not os.environ.get("CI"):
        pytest.skip(f"browser test skipped: {missing}")
    if missing:
        pytest.fail(f"the browser test needs Chromium in CI: {missing}", pytrace=False)
    from playwright.sync_api import expect

    with Browser() as browser:
        page = browser.open(f"{hub.url}/hub/login")
        try:
            page.fill("#username_input", "cleo")
            page.fill("#password_input", hub.secret("class-password"))
            page.click("#login_submit")
            # The hub starts cleo's server, then JupyterLab opens lesson 00 (the config's default_url).
            page.wait_for_url("**/user/cleo/lab/tree/notebooks/00_welcome.ipynb**", timeout=300_000)
            nb = Notebook(page)
            nb.wait_until_idle(timeout=180)
            nb.clear_outputs()
            nb.run_all(timeout=180)
            viewer = nb.panel.locator(".tinyagent-trace-viewer").first
            expect(viewer).to_be_visible(timeout=60_000)
            viewer.scroll_into_view_if_needed()
            expect(viewer.locator(".tinyagent-card").first).to_be_visible()
            assert nb.panel.locator(".jupyter-widgets-disconnected").count() == 0  # drawn by the live kernel
            assert nb.error_outputs() == []
        finally:
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=ARTIFACTS / "jupyterhub-lesson-00.png")


# -- last: it takes the classroom model away for a while ---------------------------------------------------
# Another learner's code where a learner's server or the classroom model listened, with the one certificate it can
# read (its own learner's server's) or with none (plain HTTP). It says what reaches it: each connection, then the
# request line if one came, or what came instead.
IMPOSTOR = """\
import socket, ssl, sys
host, port, cert, key = sys.argv[1], int(sys.argv[2]), sys.argv[3:4], sys.argv[4:5]
context = None
if cert:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert[0], key[0])
listener = socket.create_server((host, port))
print("listening", flush=True)
while True:
    connection, _ = listener.accept()
    print("connection", flush=True)
    try:
        if context is not None:
            connection = context.wrap_socket(connection, server_side=True)
        first = connection.recv(65536)
        if first[:1].isalpha():  # GET, POST, ...: an HTTP request, a token in its headers
            print("request", first.split(b"\\r\\n")[0].decode("latin-1"), flush=True)
        else:  # a TLS ClientHello (0x16), which a plain listener cannot answer
            print("not http", first[:1].hex(), flush=True)
        connection.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: 8\\r\\nConnection: close\\r\\n\\r\\nimpostor")
        connection.close()
    except OSError as exc:  # ssl.SSLError: the other side would not take this certificate
        print("refused", exc, flush=True)
"""


def test_the_hub_restarts_the_classroom_model_when_it_dies_and_a_learner_on_its_port_meanwhile_gets_nothing(hub):
    # When the model dies, its port is free until the hub notices (it looks at its services every 30 s) and
    # starts it again. Over plain HTTP a process of bob's account that bound it got ada's model requests through the
    # proxy, her token with them. Now the proxy talks TLS to the model's own address (127.0.0.2, no learner's), and
    # asks for the certificate made for that address: bob's names his server's address, and without one there is no
    # TLS at all.
    import psutil
    import requests
    from cryptography import x509
    from learner_accounts import FIRST_LEARNER_ADDRESS, LAST_LEARNER_ADDRESS

    service = urlparse(hub.api("GET", "/services/classroom")["url"])
    assert service.scheme == "https" and ipaddress.ip_address(service.hostname).is_loopback, service
    assert service.hostname != "127.0.0.1"
    assert not FIRST_LEARNER_ADDRESS <= ipaddress.ip_address(service.hostname) <= LAST_LEARNER_ADDRESS
    first = classroom_model_process(hub)
    assert first is not None and hub.model_answers()
    runs_as = first.uids().real
    # Its key and certificate, a copy in a folder of its account's alone; the certificate names its address only.
    command = first.cmdline()
    certfile, keyfile = Path(command[command.index("--certfile") + 1]), Path(command[command.index("--keyfile") + 1])
    for path, mode in [(keyfile.parent, 0o700), (keyfile, 0o600), (certfile, 0o600)]:
        assert (path.stat().st_uid, stat.S_IMODE(path.stat().st_mode)) == (runs_as, mode), path
    names = x509.load_pem_x509_certificate(certfile.read_bytes()).extensions.get_extension_for_class(
        x509.SubjectAlternativeName).value
    assert ([str(ip) for ip in names.get_values_for_type(x509.IPAddress)], names.get_values_for_type(x509.DNSName)) \
        == ([service.hostname], [])

    (bobs_server,) = learner_servers(hub, "bob")
    bobs = bobs_server.environ()
    bob = pwd.getpwnam(hub.account("bob"))
    ada = {"Authorization": f"Bearer {hub.tokens['ada']}"}
    first.kill()
    # The killed process is the hub's child, not ours: it stays a zombie until the hub reaps it,
    # so the loops below wait for its socket to close and for a new pid rather than for the old one to vanish.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(
            c.laddr.port == service.port and c.status == "LISTEN" for c in psutil.net_connections(kind="tcp")):
        time.sleep(0.01)
    for certificate in ([bobs["JUPYTERHUB_SSL_CERTFILE"], bobs["JUPYTERHUB_SSL_KEYFILE"]], []):
        impostor = subprocess.Popen(
            [bobs_server.cmdline()[0], "-c", IMPOSTOR, service.hostname, str(service.port), *certificate],
            user=bob.pw_uid, group=bob.pw_gid, extra_groups=[], cwd=bob.pw_dir, env={"PATH": "/usr/bin:/bin"},
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            assert impostor.stdout.readline() == "listening\n", "bob's process could not bind the model's port"
            answer = requests.get(f"{hub.url}/services/classroom/v1/models", headers=ada, timeout=60)
        finally:
            impostor.kill()
            said = impostor.communicate(timeout=30)[0].splitlines()
        kind = "bob's certificate" if certificate else "no certificate"
        assert "connection" in said, (kind, said)  # the proxy did go to the model's address and port ...
        assert not any(line.startswith("request") for line in said), (kind, said)  # ... and sent no request
        assert answer.status_code >= 500 and "impostor" not in answer.text, (kind, answer.status_code, answer.text)

    # The hub starts the model again, as its own account, and learners' kernels are served as before.
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        again = classroom_model_process(hub)
        if again is not None and again.pid != first.pid and hub.model_answers():
            break
        time.sleep(1)
    else:
        pytest.fail(f"the classroom model was not restarted within 180 s:\n{hub.log_tail()}")
    assert again.uids().real == runs_as != 0  # restarted as its own account, not root
    kernel = Kernel(hub, "ada")
    run = NotebookRun()
    try:
        kernel.execute("import os, json, urllib.request\n"
                       "ask = urllib.request.Request(os.environ['TINYAGENT_API_URL'], headers={\n"
                       "    'Authorization': 'Bearer ' + os.environ['TINYAGENT_API_KEY'],\n"
                       "    'Content-Type': 'application/json'}, data=json.dumps({'model': 'classroom',\n"
                       "    'messages': [{'role': 'user', 'content': 'hi'}]}).encode())\n"
                       "print(json.load(urllib.request.urlopen(ask, timeout=60))['object'])\n", run)
    finally:
        kernel.close()
    assert (run.errors, run.stderr, run.text.strip()) == ([], [], "chat.completion"), run
