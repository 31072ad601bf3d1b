"""Who may do what on lesson 19's service, and a yes nobody can be told about.

A client (the customer's app, with the client key `--api-key`) runs the agent and reads only the sessions whose ids
it was given; the operator (`--operator-key`, or a person at this machine when the service has no key) alone lists
and answers the refunds waiting for a yes. A client that hangs up while its refund waits leaves no refund and no
waiting request, on every route. Each service here is `python -m tinyagent serve` on a free port (serving_process.py),
with the offline classroom model: the refund question reaches applyRefund at once and waits there.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading

import pytest
import requests

from tests.other_account import needs_root
from tests.serving_process import PATIENCE, as_another_account, serve_process, wait_for
from tests.test_peer_account import lan_address
from tests.test_serving_http import LOGISTICS, REFUND, error_of, rest_of, sse_events, until_approval_requested

pytest.importorskip("starlette")

CLIENT_KEY, OPERATOR_KEY = "client-k3y", "operator-k3y"
AS_CLIENT = {"Authorization": f"Bearer {CLIENT_KEY}"}
AS_OPERATOR = {"Authorization": f"Bearer {OPERATOR_KEY}"}
KEYS = ("--api-key", CLIENT_KEY, "--operator-key", OPERATOR_KEY, "--approval-timeout", "600")
CHAT = {"model": "tinyagent-shop", "messages": [{"role": "user", "content": REFUND}]}


def pending(service, headers=AS_OPERATOR) -> list[dict]:
    response = requests.get(service.url + "/agent/approvals", headers=headers, timeout=PATIENCE)
    assert response.status_code == 200, response.text
    return response.json()["pending"]


def answer(service, approval: str, approve: bool, headers=AS_OPERATOR) -> requests.Response:
    return requests.post(f"{service.url}/agent/approvals/{approval}", json={"approve": approve}, headers=headers,
                         timeout=PATIENCE)


def one_line_refusal(response: requests.Response, status: int, code: str) -> str:
    assert response.status_code == status, response.text
    error = error_of(response)
    assert error["code"] == code and "\n" not in error["message"]
    return error["message"]


def run_id(approval: str) -> str:
    """The secret part of an approval id: the run's own 128 random bits."""
    return approval.rsplit(".", 1)[0]


# -- the operator alone answers ----------------------------------------------------------------------------
def test_a_clients_key_cannot_list_or_answer_approvals_and_the_operators_can(tmp_path):
    with serve_process(tmp_path, *KEYS) as service:
        events = sse_events(requests.post(service.url + "/agent/stream", json={"query": REFUND}, headers=AS_CLIENT,
                                          stream=True, timeout=PATIENCE))
        kind, start = next(events)
        assert kind == "start"
        asked = until_approval_requested(events)
        approval = asked["approval_id"]

        listed = requests.get(service.url + "/agent/approvals", headers=AS_CLIENT, timeout=PATIENCE)
        assert "operator" in one_line_refusal(listed, 403, "operator_only")
        assert run_id(approval) not in listed.text and start["session_id"] not in listed.text
        yes = answer(service, approval, True, headers=AS_CLIENT)  # the customer says yes to their own refund
        one_line_refusal(yes, 403, "operator_only")
        for headers in ({}, {"Authorization": "Bearer guess"}):
            one_line_refusal(requests.get(service.url + "/agent/approvals", headers=headers, timeout=PATIENCE),
                             401, "unauthorized")
            one_line_refusal(answer(service, approval, True, headers=headers), 401, "unauthorized")
        assert service.refunds() == []

        # The operator sees the request (what it would do, and the customer's question), but no session id.
        [waiting] = pending(service)
        assert waiting["approval_id"] == approval and waiting["question"] == REFUND and "session_id" not in waiting
        assert start["session_id"] not in json.dumps(pending(service))
        approved = answer(service, approval, True)
        assert approved.status_code == 200 and approved.json()["outcome"] == "approved"
        seen = rest_of(events)
        assert seen["approval_decided"][0]["outcome"] == "approved"
        assert len(service.refunds()) == 1 and service.refunds()[0][0] in seen["end"][0]["answer"]
        # The operator's key runs the agent too (the page with the operator's key asks and answers).
        assert requests.post(service.url + "/agent/invoke", json={"query": "hi"}, headers=AS_OPERATOR,
                             timeout=PATIENCE).status_code == 200
    output = service.output()
    assert CLIENT_KEY not in output and OPERATOR_KEY not in output and "Traceback" not in output
    assert "operator key: required for approvals" in output and "waits for the operator's yes" in output


def test_with_a_client_key_and_no_operator_key_nobody_answers_approvals(tmp_path):
    with serve_process(tmp_path, "--api-key", CLIENT_KEY, "--approval-timeout", "600") as service:
        events = sse_events(requests.post(service.url + "/agent/stream", json={"query": REFUND}, headers=AS_CLIENT,
                                          stream=True, timeout=PATIENCE))
        approval = until_approval_requested(events)["approval_id"]
        listed = requests.get(service.url + "/agent/approvals", headers=AS_CLIENT, timeout=PATIENCE)
        assert "--operator-key" in one_line_refusal(listed, 403, "no_operator")
        one_line_refusal(answer(service, approval, True, headers=AS_CLIENT), 403, "no_operator")
        one_line_refusal(answer(service, approval, True, headers={}), 401, "unauthorized")
        assert service.refunds() == []
    assert "approvals: nobody can answer them (--api-key without --operator-key" in service.output()


def test_without_any_key_only_a_request_from_this_machine_by_a_loopback_name_answers(tmp_path):
    with serve_process(tmp_path, "--allowed-host", "shop.lan", "--approval-timeout", "600") as service:
        events = sse_events(requests.post(service.url + "/agent/stream", json={"query": REFUND}, stream=True,
                                          timeout=PATIENCE))
        approval = until_approval_requested(events)["approval_id"]
        # shop.lan is answered (--allowed-host), but it is the name the customers use: not the operator.
        lan = {"Host": "shop.lan"}
        listed = requests.get(service.url + "/agent/approvals", headers=lan, timeout=PATIENCE)
        assert "this machine" in one_line_refusal(listed, 403, "operator_only")
        one_line_refusal(answer(service, approval, True, headers=lan), 403, "operator_only")
        assert service.refunds() == []
        # The teacher at this machine (the page at 127.0.0.1) lists and answers.
        assert [p["approval_id"] for p in pending(service, headers={})] == [approval]
        assert answer(service, approval, False, headers={}).json()["outcome"] == "declined"
        assert rest_of(events)["approval_decided"][0]["by"] == "a person over HTTP" and service.refunds() == []
    said = "approvals: each refund waits for a yes from this machine, by the account running the service"
    assert said in service.output()


@needs_root
def test_without_any_key_another_account_of_this_machine_is_not_the_operator(tmp_path):
    # On the course's JupyterHub every learner is an account of her own, all on one loopback: another learner's
    # program listed and answered the refunds waiting in hers, as "a person at this machine".
    with serve_process(tmp_path, "--approval-timeout", "600") as service:
        events = sse_events(requests.post(service.url + "/agent/stream", json={"query": REFUND}, stream=True,
                                          timeout=PATIENCE))
        approval = until_approval_requested(events)["approval_id"]
        listed = as_another_account(service, "GET", "/agent/approvals")
        yes = as_another_account(service, "POST", f"/agent/approvals/{approval}", {"approve": True})
        for answered in (listed, yes):
            assert answered["status"] == 403, answered
            error = json.loads(answered["body"])["error"]
            assert error["code"] == "operator_only" and "another account" in error["message"]
            assert "--operator-key" in error["message"] and run_id(approval) not in answered["body"]
        assert service.refunds() == []
        # The account that started it (this test's) still lists and answers, as the page's buttons do.
        assert [p["approval_id"] for p in pending(service, headers={})] == [approval]
        assert answer(service, approval, True, headers={}).json()["outcome"] == "approved"
        assert rest_of(events)["approval_decided"][0]["outcome"] == "approved" and len(service.refunds()) == 1
    assert "Traceback" not in service.output()


@pytest.mark.parametrize(("account", "says"), [
    (lambda: os.geteuid() + 1, "another account"),
    (lambda: None, "/proc/net"),
], ids=["another-account", "account-unknown"])
def test_without_any_key_a_caller_not_known_to_be_this_account_is_not_the_operator(monkeypatch, account, says):
    from tinyagent import LlmClient
    from tinyagent.serving import ServiceConfig, ServiceServer, app

    with ServiceServer(ServiceConfig(shop_db=":memory:", session_store=":memory:"), llm=LlmClient.classroom) as server:
        # The same requests from this account: the operator (no approval waits, so the answer is a 404).
        assert requests.get(server.url + "/agent/approvals", timeout=PATIENCE).json() == {"pending": []}
        unknown = answer(server, "0" * 32 + ".1", True, headers={})
        one_line_refusal(unknown, 404, "unknown_approval")

        monkeypatch.setattr(app, "peer_uid", lambda client, server: account())
        listed = requests.get(server.url + "/agent/approvals", timeout=PATIENCE)
        assert says in one_line_refusal(listed, 403, "operator_only")
        assert "--operator-key" in error_of(listed)["message"]
        one_line_refusal(answer(server, "0" * 32 + ".1", True, headers={}), 403, "operator_only")


# -- another account of this machine runs nothing -----------------------------------------------------------
# On the course's JupyterHub every learner is an account of her own, all on one loopback: with no --api-key, another
# learner's program found a learner's service in /proc/net/tcp and ran its agent (on her model and her paid key),
# read the sessions whose ids it had and, with --auto-approve, wrote refunds into her shop.
def agent_routes(session_id: str) -> dict[str, tuple[str, str, dict | None]]:
    """Each route that runs the agent or reads what it did: (method, path, body)."""
    return {"invoke": ("POST", "/agent/invoke", {"query": REFUND}),
            "stream": ("POST", "/agent/stream", {"query": REFUND}),
            "session": ("GET", f"/agent/sessions/{session_id}", None),
            "continue": ("POST", f"/agent/sessions/{session_id}/turns/1/continue", {"step": 1, "retry": True}),
            "chat": ("POST", "/v1/chat/completions", CHAT),
            "models": ("GET", "/v1/models", None)}


def refused_as_another_account(status: int, body: str) -> None:
    assert status == 403, body
    error = json.loads(body)["error"]
    assert error["code"] == "another_account" and "\n" not in error["message"], error
    assert "without an API key" in error["message"] and "--api-key" in error["message"]
    assert "Authorization: Bearer <key>" in error["message"]


@needs_root
def test_without_any_key_another_account_of_this_machine_runs_nothing(tmp_path):
    with serve_process(tmp_path, "--auto-approve") as service:
        mine = requests.post(service.url + "/agent/invoke", json={"query": LOGISTICS}, timeout=PATIENCE)
        assert mine.status_code == 200, mine.text
        session_id = mine.json()["session_id"]
        done = service.health()["finished"]
        for name, (method, path, body) in agent_routes(session_id).items():
            answered = as_another_account(service, method, path, body)
            refused_as_another_account(answered["status"], answered["body"])
            assert LOGISTICS not in answered["body"], name
        assert service.refunds() == [] and service.health()["finished"] == done
        # What holds no data and changes nothing stays open: the page, the counts, the description.
        for path in ("/", "/health", "/docs", "/openapi.json"):
            assert as_another_account(service, "GET", path)["status"] == 200, path
        # The account that started it (a child that stays root, as the learner's own kernel would) runs the agent
        # and reads its session.
        for name in ("invoke", "stream", "session"):
            method, path, body = agent_routes(session_id)[name]
            answered = as_another_account(service, method, path, body, uid=os.geteuid())
            assert answered["status"] == 200, (name, answered)
        assert len(service.refunds()) == 1  # the invoke's refund, --auto-approve's yes; the stream's is the same
    assert "Traceback" not in service.output()
    said = "(--allowed-host adds one) and, from this machine, only the programs of the account running the service"
    assert said in service.output()


@needs_root
def test_without_any_key_another_account_is_refused_at_this_machines_network_address_too(tmp_path):
    # A service on 0.0.0.0 answers this machine's programs at its network address as well: that is no door for
    # another account, while the account running it still gets in that way.
    address = lan_address()
    if address is None:
        pytest.skip("this machine has no network address but loopback")
    with serve_process(tmp_path, "--host", "0.0.0.0", "--allowed-host", address) as service:
        others = as_another_account(service, "POST", "/agent/invoke", {"query": LOGISTICS}, address=address)
        refused_as_another_account(others["status"], others["body"])
        own = as_another_account(service, "POST", "/agent/invoke", {"query": LOGISTICS}, uid=os.geteuid(),
                                 address=address)
        assert own["status"] == 200, own
    assert "Traceback" not in service.output()


@pytest.mark.parametrize(("uid", "here", "told", "expected"), [
    (lambda: os.geteuid(), True, True, 200),       # the account that started the service
    (lambda: os.geteuid() + 1, True, True, 403),   # another account of this machine
    (lambda: None, True, True, 403),               # of this machine, whose account cannot be told (it closed its end)
    (lambda: None, False, True, 200),              # another machine: a customer on the network
    (lambda: os.geteuid() + 1, True, False, 200),  # a system that says nothing of accounts (macOS, Windows)
], ids=["this-account", "another-account", "here-account-unknown", "another-machine", "no-proc-net"])
def test_without_any_key_who_runs_the_agent_by_account_and_machine(monkeypatch, uid, here, told, expected):
    from tinyagent import LlmClient
    from tinyagent.serving import ServiceConfig, ServiceServer, app

    with ServiceServer(ServiceConfig(shop_db=":memory:", session_store=":memory:"), llm=LlmClient.classroom) as server:
        session_id = requests.post(server.url + "/agent/invoke", json={"query": LOGISTICS},
                                   timeout=PATIENCE).json()["session_id"]
        monkeypatch.setattr(app, "peer_uid", lambda client, server: uid())
        # (not raising: a service that never asked whether its client is here is what this test must catch)
        monkeypatch.setattr(app, "peer_is_here", lambda client, server: here, raising=False)
        monkeypatch.setattr(app, "accounts_can_be_told", lambda: told, raising=False)
        for name, (method, path, body) in agent_routes(session_id).items():
            answered = requests.request(method, server.url + path, json=body, timeout=PATIENCE)
            if expected == 403:
                refused_as_another_account(answered.status_code, answered.text)
            else:
                assert answered.status_code == 200, (name, answered.text)
        assert requests.get(server.url + "/health", timeout=PATIENCE).status_code == 200
    if expected == 403:  # and the description says what the answer is
        from tinyagent.serving.openapi import openapi_document

        refusal = openapi_document()["paths"]["/agent/invoke"]["post"]["responses"]["403"]["description"]
        assert "another account of this machine" in refusal


SERVE_WHERE_NO_ACCOUNT_IS_SAID = """
import sys
from tinyagent.hosting import peer_account
peer_account.TABLES = ("/nonexistent/tcp", "/nonexistent/tcp6")  # as on macOS or Windows: no /proc/net
from tinyagent.__main__ import main
sys.exit(main(["serve", *sys.argv[1:]]))
"""


def test_where_the_system_cannot_tell_whose_a_connection_is_a_keyless_service_has_no_operator(tmp_path):
    script = tmp_path / "serve_where_no_account_is_said.py"
    script.write_text(SERVE_WHERE_NO_ACCOUNT_IS_SAID, encoding="utf-8")
    with serve_process(tmp_path, "--approval-timeout", "600", script=script) as service:
        listed = requests.get(service.url + "/agent/approvals", timeout=PATIENCE)
        assert "--operator-key" in one_line_refusal(listed, 403, "operator_only")
        # Its clients are as they were: any program the host check lets in, of whichever account.
        ask = ("POST", "/agent/invoke", {"query": LOGISTICS})
        assert requests.request(ask[0], service.url + ask[1], json=ask[2], timeout=PATIENCE).status_code == 200
        if os.geteuid() == 0:  # a program of another account needs root to become one
            assert as_another_account(service, *ask)["status"] == 200
    said = "approvals: nobody can answer them (no key, and this system does not say which account calls: start the "
    assert said + "service with --operator-key)" in service.output()
    assert "and to any account of this machine: this system does not say whose a connection is" in service.output()


@pytest.mark.parametrize(("peer", "host", "expected"), [
    ("127.0.0.1", "127.0.0.1:8000", True),
    ("::1", "[::1]:8000", True),
    ("::ffff:127.0.0.1", "localhost:8000", True),
    ("127.0.0.1", "shop.lan", False),          # a proxy on this machine passes on its clients' name
    ("192.168.1.20", "127.0.0.1:8000", False),  # a neighbour naming 127.0.0.1
    ("testclient", "127.0.0.1", False),
])
def test_this_machine_is_a_loopback_address_naming_a_loopback_host(peer, host, expected):
    from starlette.requests import Request

    from tinyagent.serving.app import from_this_machine

    scope = {"type": "http", "client": (peer, 50000), "headers": [(b"host", host.encode())]}
    assert from_this_machine(Request(scope)) is expected


# -- a client sees only its own run's ids ------------------------------------------------------------------
def test_a_client_never_receives_another_runs_session_id_or_approval_id(tmp_path):
    with serve_process(tmp_path, *KEYS) as service:
        # Customer A: a streamed refund, waiting for the operator.
        a_response = requests.post(service.url + "/agent/stream", json={"query": REFUND}, headers=AS_CLIENT,
                                   stream=True, timeout=PATIENCE)
        a_blocks = a_response.iter_lines(decode_unicode=True, delimiter="\n\n")
        a_seen = []
        for block in a_blocks:
            a_seen.append(block)
            if "event: approval_requested" in block:
                break
        a_start = json.loads(a_seen[0].split("data: ", 1)[1])
        a_approval = json.loads(a_seen[-1].split("data: ", 1)[1])["approval_id"]

        # Customer B, with the same client key, asks for refunds on every route while A's waits.
        b_bodies: dict[str, str] = {}

        def ask(name: str, path: str, body: dict) -> None:
            b_bodies[name] = requests.post(service.url + path, json=body, headers=AS_CLIENT, timeout=PATIENCE).text

        askers = [threading.Thread(target=ask, args=args) for args in [
            ("invoke", "/agent/invoke", {"query": REFUND}),
            ("stream", "/agent/stream", {"query": REFUND}),
            ("chat", "/v1/chat/completions", CHAT),
            ("chat stream", "/v1/chat/completions", {**CHAT, "stream": True})]]
        for asker in askers:
            asker.start()
        waiting = wait_for(lambda: len(p := pending(service)) == 5 and p, "five refunds waiting")
        # What else B can read meanwhile: the approvals (refused), the health, the models.
        for path in ("/agent/approvals", "/health", "/v1/models", "/agent/sessions/" + "0" * 32):
            b_bodies["GET " + path] = requests.get(service.url + path, headers=AS_CLIENT, timeout=PATIENCE).text
        for request in waiting:  # the operator declines B's four, and approves A's
            if request["approval_id"] != a_approval:
                assert answer(service, request["approval_id"], False).json()["outcome"] == "declined"
        assert answer(service, a_approval, True).json()["outcome"] == "approved"
        for asker in askers:
            asker.join(PATIENCE)
        a_text = "\n\n".join(a_seen + list(a_blocks))

        assert len(b_bodies) == 8 and "event: end" in b_bodies["stream"] and "[DONE]" in b_bodies["chat stream"]
        for name, text in b_bodies.items():
            assert a_start["session_id"] not in text, name
            assert run_id(a_approval) not in text, name
        b_sessions = {json.loads(b_bodies["invoke"])["session_id"],
                      json.loads(b_bodies["stream"].split("data: ", 1)[1].split("\n", 1)[0])["session_id"]}
        for request in waiting:
            if request["approval_id"] != a_approval:
                assert run_id(request["approval_id"]) not in a_text
        assert not any(session in a_text for session in b_sessions)
        # Nor does the operator's list hold any session id.
        assert not any(session in json.dumps(waiting) for session in {*b_sessions, a_start["session_id"]})
        assert len(service.refunds()) == 1 and service.refunds()[0][0] in a_text


def test_a_session_is_read_and_continued_only_by_its_id(tmp_path):
    with serve_process(tmp_path, *KEYS, "--auto-approve") as service:
        first = requests.post(service.url + "/agent/invoke", json={"query": "帮我看看订单 88231 的快递到哪了。"},
                              headers=AS_CLIENT, timeout=PATIENCE).json()
        mine = f"{service.url}/agent/sessions/{first['session_id']}"
        assert requests.get(mine, headers=AS_CLIENT, timeout=PATIENCE).status_code == 200
        # Another customer, with the same key and any id but this one's, reads or continues nothing.
        for other in ("0" * 32, first["session_id"][:-1] + "x", "alice"):
            url = f"{service.url}/agent/sessions/{other}"
            one_line_refusal(requests.get(url, headers=AS_CLIENT, timeout=PATIENCE), 404, "unknown_session")
            continued = requests.post(url + "/turns/1/continue", json={"step": 1, "retry": True}, headers=AS_CLIENT,
                                      timeout=PATIENCE)
            one_line_refusal(continued, 404, "unknown_session")
            asked = requests.post(service.url + "/agent/invoke", json={"query": "hi", "session_id": other},
                                  headers=AS_CLIENT, timeout=PATIENCE)
            one_line_refusal(asked, 404, "unknown_session")
        one_line_refusal(requests.get(mine, timeout=PATIENCE), 401, "unauthorized")  # and nothing without the key


# -- a yes nobody can be told about ------------------------------------------------------------------------
def raw_request(service, path: str, body: dict) -> socket.socket:
    """A POST sent on a socket of its own, which the test closes when it wants the client gone."""
    host, port = service.url.removeprefix("http://").rsplit(":", 1)
    data = json.dumps(body).encode()
    sock = socket.create_connection((host, int(port)), timeout=PATIENCE)
    sock.sendall(f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
                 f"Authorization: Bearer {CLIENT_KEY}\r\nContent-Length: {len(data)}\r\n\r\n".encode() + data)
    return sock


@pytest.mark.parametrize(("path", "body"), [
    ("/agent/invoke", {"query": REFUND}),
    ("/v1/chat/completions", CHAT),
    ("/v1/chat/completions", {**CHAT, "stream": True}),
    ("/agent/stream", {"query": REFUND}),
], ids=["invoke", "chat", "chat-stream", "stream"])
def test_a_client_hanging_up_while_its_refund_waits_leaves_no_refund_and_nothing_waiting(tmp_path, path, body):
    with serve_process(tmp_path, *KEYS) as service:
        sock = raw_request(service, path, body)
        try:
            [waiting] = wait_for(lambda: pending(service), "the refund to wait for a yes")
        finally:
            sock.close()  # the customer's app goes away; nobody could be told about a refund now
        # The run stops, its request declined (the stream after its resume grace, 5 s), nothing left waiting.
        health = wait_for(lambda: (h := service.health())["running"] == 0 and h, "the run to end")
        assert health["cancelled"] == 1 and health["finished"] == 0
        assert pending(service) == []
        late = answer(service, waiting["approval_id"], True)  # the operator says yes a little later
        one_line_refusal(late, 404, "unknown_approval")
        assert service.refunds() == []
    assert "Traceback" not in service.output()


# -- the command -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("options", "says"), [
    (["--operator-key", ""], "--operator-key (or TINYAGENT_SERVE_OPERATOR_KEY) must be a key"),
    (["--operator-key", "two words"], "--operator-key (or TINYAGENT_SERVE_OPERATOR_KEY) must be a key"),
    (["--api-key", "same", "--operator-key", "same"], "--operator-key must differ from --api-key"),
])
def test_an_unusable_operator_key_is_one_line_and_exit_code_2(tmp_path, options, says):
    done = subprocess.run([sys.executable, "-m", "tinyagent", "serve", "--db", str(tmp_path / "shop.sqlite3"),
                           "--session-store", str(tmp_path / "s.sqlite3"), *options], cwd=tmp_path,
                          env={"TINYAGENT_OFFLINE": "1", "PATH": "/usr/bin:/bin",
                               **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"}},
                          capture_output=True, text=True, timeout=PATIENCE, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and says in done.stderr and "same" not in done.stderr.replace(says, "")


@pytest.mark.parametrize("forwarded", [b"x-forwarded-for", b"forwarded", b"x-real-ip", b"via", b"x-forwarded-host",
                                       b"x-forwarded-proto"])
def test_a_request_that_says_a_proxy_forwarded_it_is_no_person_at_this_machine(forwarded):
    # a proxy on this machine that names 127.0.0.1 as the host made every customer the operator
    from starlette.requests import Request

    from tinyagent.serving.app import from_this_machine

    headers = [(b"host", b"127.0.0.1:8000"), (forwarded, b"203.0.113.9")]
    assert from_this_machine(Request({"type": "http", "client": ("127.0.0.1", 50000), "headers": headers})) is False


@pytest.mark.parametrize("host", [b"[::1].evil.example:8000", b"[::1]evil.example", b"127.0.0.1:8000@evil.example",
                                  b"localhost:8000@evil.example", b"127.0.0.1:80x", b"[::1]:8000/x"])
def test_a_host_no_client_sends_names_no_host_at_all(host):
    # each was read as a loopback name: the operator's check, and the host check, let it through
    from starlette.requests import Request

    from tinyagent.hosting.request_heads import host_name
    from tinyagent.serving.app import from_this_machine

    assert host_name(host.decode()) == ""
    headers = [(b"host", host)]
    assert from_this_machine(Request({"type": "http", "client": ("127.0.0.1", 50000), "headers": headers})) is False


@pytest.mark.parametrize(("host", "name"), [("127.0.0.1:8000", "127.0.0.1"), ("[::1]:8000", "::1"), ("[::1]", "::1"),
                                            ("Shop.LAN.:80", "shop.lan"), ("localhost", "localhost")])
def test_the_host_names_clients_send_are_read(host, name):
    from tinyagent.hosting.request_heads import host_name

    assert host_name(host) == name


def test_a_service_opened_at_another_loopback_address_takes_a_yes_from_its_own_page(tmp_path):
    # started with --host 127.0.0.2 and no key, every yes was refused ("use http://127.0.0.1:<port>/", where
    # nothing listened), so each refund the banner's page asked for waited out its time, unpaid
    with serve_process(tmp_path, "--host", "127.0.0.2", "--approval-timeout", "600") as service:
        assert service.url.startswith("http://127.0.0.2:")
        events = sse_events(requests.post(service.url + "/agent/stream", json={"query": REFUND}, stream=True,
                                          timeout=PATIENCE))
        approval = until_approval_requested(events)["approval_id"]
        [waiting] = pending(service, headers={})
        assert waiting["approval_id"] == approval
        approved = answer(service, approval, True, headers={})
        assert approved.status_code == 200 and approved.json()["outcome"] == "approved"
        assert rest_of(events)["approval_decided"][0]["outcome"] == "approved"
        assert len(service.refunds()) == 1
