"""`classroom --hub-auth`: the classroom model asks the JupyterHub about each token (tinyagent/classroom/hub_tokens.py).

A stand-in for the hub's API answers GET /hub/api/user as JupyterHub does (the token's owner and its
scopes, or 403 for a token it does not know); tests/test_jupyterhub.py checks the same against a real hub.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest
import requests

pytest.importorskip("jupyterhub")

from tinyagent.classroom.hub_tokens import HubTokens
from tinyagent.classroom.server import ClassroomServer

USERS = {
    "ada-token": {"kind": "user", "name": "ada", "scopes": ["access:services!service=classroom"]},
    "narrow-token": {"kind": "user", "name": "bob", "scopes": ["read:users!user=bob"]},
}


class _FakeHub(BaseHTTPRequestHandler):
    asked: ClassVar[list[str]] = []

    def do_GET(self):
        token = self.headers.get("Authorization", "").removeprefix("token ")
        self.asked.append(token)
        user = USERS.get(token)
        body = json.dumps(user or {"status": 403, "message": "no such token"}).encode()
        self.send_response(200 if user else 403)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture()
def hub_api(monkeypatch):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeHub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _FakeHub.asked = []
    try:
        monkeypatch.setenv("JUPYTERHUB_API_URL", f"http://127.0.0.1:{server.server_port}/hub/api")
        monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "the-service-token")
        monkeypatch.setenv("JUPYTERHUB_SERVICE_NAME", "classroom")
        monkeypatch.delenv("JUPYTERHUB_OAUTH_ACCESS_SCOPES", raising=False)
        yield server
    finally:
        server.shutdown()
        server.server_close()


def test_only_tokens_the_hub_accepts_for_the_service_get_answers(hub_api):
    with ClassroomServer(hub_tokens=HubTokens()) as room:
        def status(headers):
            return requests.get(room.base_url + "/models", headers=headers, timeout=30)

        assert status({}).status_code == 401
        assert status({}).json()["error"]["code"] == "missing_api_key"
        assert status({"Authorization": "Bearer unknown"}).status_code == 401
        assert status({"Authorization": "Basic ada-token"}).status_code == 401
        assert status({"Authorization": "Bearer narrow-token"}).status_code == 403
        assert status({"Authorization": "Bearer ada-token"}).status_code == 200
        assert status({"Authorization": "token ada-token"}).status_code == 200


def test_the_hub_is_asked_about_a_token_once_then_remembered(hub_api):
    with ClassroomServer(hub_tokens=HubTokens()) as room:
        for _ in range(5):
            answer = requests.get(room.base_url + "/models", headers={"Authorization": "Bearer ada-token"}, timeout=30)
            assert answer.status_code == 200
    assert _FakeHub.asked == ["ada-token"]


def test_a_hub_that_is_down_is_a_503_not_a_pass(hub_api):
    tokens = HubTokens()
    hub_api.shutdown()
    hub_api.server_close()
    with ClassroomServer(hub_tokens=tokens) as room:
        answer = requests.get(room.base_url + "/models", headers={"Authorization": "Bearer ada-token"}, timeout=60)
    assert answer.status_code == 503
    assert answer.json()["error"]["code"] == "hub_unavailable"


def test_hub_auth_outside_a_hub_is_a_one_line_error():
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTERHUB_")}
    done = subprocess.run([sys.executable, "-m", "tinyagent", "classroom", "--hub-auth", "--port", "0"],
                          check=False, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: --hub-auth needs"), done.stderr
    assert done.stdout == ""


ODD_ANSWERS = {  # token: (status, body) the stand-in hub answers for it
    "hang-token": None,  # never answers
    "no-scopes-token": (200, {"kind": "user", "name": "x"}),
    "list-token": (200, [1, 2, 3]),
    "null-scopes-token": (200, {"kind": "user", "name": "x", "scopes": None}),
    "false-token": (200, False),
}


class _OddHub(_FakeHub):
    released = threading.Event()

    def do_GET(self):
        token = self.headers.get("Authorization", "").removeprefix("token ")
        if token not in ODD_ANSWERS:
            return super().do_GET()
        self.asked.append(token)
        if ODD_ANSWERS[token] is None:
            self.released.wait(120)  # a hub that hangs on this one token
            return
        status, body = ODD_ANSWERS[token]
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_a_hub_that_hangs_on_one_token_holds_up_no_other_learner(hub_api, monkeypatch):
    # HubAuth asked on one thread for the whole process, and waited up to 300 s: a learner whose token was already
    # remembered waited behind a stranger's made-up token, and so did a stop.
    from tinyagent.classroom import hub_tokens

    hub_api.RequestHandlerClass = _OddHub
    monkeypatch.setattr(hub_tokens, "HUB_TIMEOUT_S", 60.0)  # the hang outlasts the test: nothing may wait for it
    _OddHub.released.clear()
    with ClassroomServer(hub_tokens=HubTokens()) as room:
        def models(token):
            return requests.get(room.base_url + "/models", headers={"Authorization": f"Bearer {token}"}, timeout=120)

        assert models("ada-token").status_code == 200  # remembered from now on
        stranger = threading.Thread(target=models, args=("hang-token",))
        stranger.start()
        try:
            while "hang-token" not in _FakeHub.asked:  # the hub has the stranger's question
                threading.Event().wait(0.01)
            assert models("ada-token").status_code == 200  # answered while the hub still hangs
            assert stranger.is_alive()
        finally:
            _OddHub.released.set()
            stranger.join()


@pytest.mark.parametrize("token", ["no-scopes-token", "list-token", "null-scopes-token", "false-token"])
def test_a_hub_answer_that_is_no_user_model_is_a_503_not_a_500(hub_api, token):
    # It was a 500 "KeyError: 'scopes'" (or TypeError) with a traceback, and remembered for a minute.
    hub_api.RequestHandlerClass = _OddHub
    with ClassroomServer(hub_tokens=HubTokens()) as room:
        answer = requests.get(room.base_url + "/models", headers={"Authorization": f"Bearer {token}"}, timeout=60)
    assert answer.status_code == 503 and answer.json()["error"]["code"] == "hub_unavailable", answer.text


@pytest.mark.parametrize("token", ["a\x01b", "ab\x7f", "caf\u00e9"])
def test_a_token_no_hub_issues_is_a_401_and_the_hub_is_not_asked(hub_api, token):
    # It was a 503 "cannot reach the JupyterHub": the client's own mistake told as the hub's
    tokens = HubTokens()
    assert tokens.check(f"Bearer {token}").status == 401
    assert _FakeHub.asked == []
