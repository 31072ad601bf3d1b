"""Lesson 19's service over real HTTP on loopback: `python -m tinyagent serve` as a subprocess, on a free port.

The runs that must take time (two at once, a client that hangs up mid-stream, several workers) talk to a paced
classroom model started here (ClassroomServer(tokens_per_second=...), as lesson 14's benchmark paces it): a run
of the refund question then takes seconds, long enough to be watched while it goes. The other tests use the
service's own offline classroom model. Nothing is timed: the tests wait for states (/health's counters), with a
generous patience.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests

from tests.conftest import completion, ended_cleanly
from tests.serving_process import PATIENCE, serve_process, wait_for
from tinyagent import Observation, Trace
from tinyagent.classroom.server import ClassroomServer
from tinyagent.serving.connections import ENDING_SECONDS

pytest.importorskip("starlette")

HERE = Path(__file__).resolve().parent
REFUND = "我上周买的扫地机不回充了，修不好我想退。订单号 88231。"
LOGISTICS = "帮我看看订单 88231 的快递到哪了。"


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    with serve_process(tmp_path_factory.mktemp("serve"), "--max-body", "2048", "--auto-approve") as running:
        yield running


@pytest.fixture(scope="module")
def paced_room():
    with ClassroomServer(tokens_per_second=60) as room:  # the refund run: about 10 s
        yield room


def invoke(service, body, **options) -> requests.Response:
    return requests.post(service.url + "/agent/invoke", json=body, timeout=PATIENCE, **options)


def stream(service, body, **options) -> requests.Response:
    return requests.post(service.url + "/agent/stream", json=body, stream=True, timeout=PATIENCE, **options)


def error_of(response: requests.Response) -> dict:
    assert response.headers["content-type"].startswith("application/json"), response.text
    error = response.json()["error"]
    assert error["message"] and "Traceback" not in response.text
    return error


# -- answers -----------------------------------------------------------------------------------------------
def test_invoke_returns_the_answer_and_the_whole_trace(service):
    response = invoke(service, {"query": REFUND})
    assert response.status_code == 200
    data = response.json()
    trace = Trace.from_json(json.dumps(data["trace"]))  # the trace's own JSON form, as `ask --json` prints it
    assert [call.name for call in trace.tool_calls] == ["queryOrder", "getCurrentTime", "searchKnowledge",
                                                        "applyRefund"]
    assert data["answer"] == trace.answer and "RF2026" in data["answer"]
    assert data["reason"] == "final_answer" and data["ok"] is True and data["turn"] == 1
    assert data["rounds"] == trace.rounds == 5


def test_a_session_continues_by_its_id_and_an_unknown_one_is_404(service):
    first = invoke(service, {"query": LOGISTICS}).json()
    second = invoke(service, {"query": "谢谢，那它什么时候能到？", "session_id": first["session_id"]})
    assert second.status_code == 200 and second.json()["turn"] == 2
    assert second.json()["session_id"] == first["session_id"]
    turns = requests.get(f"{service.url}/agent/sessions/{first['session_id']}", timeout=PATIENCE).json()["turns"]
    assert [t["number"] for t in turns] == [1, 2] and turns[0]["question"] == LOGISTICS

    unknown = invoke(service, {"query": LOGISTICS, "session_id": "no-such-session"})
    assert unknown.status_code == 404 and error_of(unknown)["code"] == "unknown_session"
    streamed = stream(service, {"query": "hi", "session_id": "nope"})
    assert streamed.status_code == 404 and error_of(streamed)["code"] == "unknown_session"


def test_the_stream_sends_the_same_events_as_the_trace_then_an_end_event(service):
    response = stream(service, {"query": REFUND})
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    blocks = [read_block(block) for block in response.iter_lines(decode_unicode=True, delimiter="\n\n")
              if block.strip() and not block.startswith(":")]
    events = [(kind, data) for _, kind, data in blocks]
    # Every event has an id: the stream's, then its number, 0 for `start`, one more each time (Last-Event-ID).
    stream_id = blocks[0][0].rsplit(".", 1)[0]
    assert [event_id for event_id, _, _ in blocks] == [f"{stream_id}.{n}" for n in range(len(blocks))]
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "start" and kinds[-1] == "end"
    # The stream adds where to answer an approval (its id) to the trace's own event.
    plain_data = [{k: v for k, v in data.items() if k != "approval_id"} for kind, data in events[1:-1]]
    assert all("approval_id" in data for kind, data in events if kind.startswith("approval_"))
    trace = Trace.from_json(json.dumps({"events": plain_data}))
    # The stream adds the reply's pieces as they are typed; without them it is the trace invoke returns.
    plain = [e.kind for e in trace if e.kind != "reply_delta"]
    assert plain == [e["type"] for e in invoke(service, {"query": REFUND}).json()["trace"]["events"]]
    assert events[-1][1]["answer"] == trace.answer and events[-1][1]["session_id"] == events[0][1]["session_id"]


def test_openapi_json_and_a_docs_page_that_loads_nothing_from_elsewhere(service):
    from openapi_spec_validator import validate

    document = requests.get(service.url + "/openapi.json", timeout=PATIENCE)
    assert document.status_code == 200 and document.headers["content-type"].startswith("application/json")
    validate(document.json())
    docs = requests.get(service.url + "/docs", timeout=PATIENCE)
    assert docs.status_code == 200 and docs.headers["content-type"].startswith("text/html")
    assert "/agent/approvals/{approval_id}" in docs.text and "openapi.json" in docs.text
    assert "://" not in docs.text and "<script" not in docs.text  # nothing to fetch from anywhere


@pytest.mark.parametrize(("method", "path", "described", "options", "status", "code"), [
    ("GET", "/agent/invoke", ("/agent/invoke", "post"), {}, 405, "method_not_allowed"),
    ("POST", "/health", ("/health", "get"), {}, 405, "method_not_allowed"),
    ("POST", "/agent/approvals/x.1", ("/agent/approvals/{approval_id}", "post"),
     {"json": {"approve": True, "pad": "x" * 4000}}, 413, "body_too_large"),
    ("GET", "/openapi.json", ("/openapi.json", "get"), {"headers": {"Host": "evil.example"}}, 403, "host_not_allowed"),
    ("POST", "/v1/chat/completions", ("/v1/chat/completions", "post"),
     {"json": {"messages": [{"role": "user", "content": "hi"}]}}, 400, "missing_model"),
    ("POST", "/v1/chat/completions", ("/v1/chat/completions", "post"),
     {"json": {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}}, 404, "model_not_found"),
], ids=["get-invoke", "post-health", "approval-too-large", "docs-foreign-host", "chat-no-model", "chat-other-model"])
def test_what_the_service_answers_is_in_its_description(service, method, path, described, options, status, code):
    # A read-through found these answered but not described (405 nowhere, 413 not on approvals, only 200 on the
    # docs), and a chat request without a model called a 404, where a missing required field is a 400.
    from tinyagent.serving.openapi import openapi_document

    answer = requests.request(method, service.url + path, timeout=PATIENCE, **options)
    assert (answer.status_code, answer.json()["error"]["code"]) == (status, code), answer.text
    route, verb = described
    assert str(status) in openapi_document()["paths"][route][verb]["responses"]


# -- bad requests ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("body", "code"), [
    (b"{bad json", "malformed_json"),
    (b"", "empty_body"),
    (b"\xff\xfe not text", "malformed_json"),
    (b"[1, 2]", "not_an_object"),
    (b'{"question": "Where is order 88231?"}', "unknown_field"),
    (b"{}", "missing_query"),
    (b'{"query": "   "}', "empty_query"),
    (b'{"query": 42}', "empty_query"),
    (b'{"query": "hi", "session_id": "../../etc"}', "bad_session_id"),
])
def test_a_malformed_request_is_a_json_400(service, body, code):
    response = requests.post(service.url + "/agent/invoke", data=body, timeout=PATIENCE,
                             headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    assert error_of(response)["code"] == code


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-32", "utf-32-be"])
def test_a_body_in_another_encoding_than_utf8_is_a_json_400(service, encoding):
    # RFC 8259: JSON between systems is UTF-8. The error said so, while json.loads read UTF-16 and UTF-32 bodies.
    body = json.dumps({"query": "Where is order 88231?"}).encode(encoding)
    response = requests.post(service.url + "/agent/invoke", data=body, timeout=PATIENCE,
                             headers={"Content-Type": "application/json"})
    assert response.status_code == 400 and error_of(response)["code"] == "malformed_json", response.text
    assert "UTF-8" in error_of(response)["message"]


def test_a_body_in_utf8_after_a_byte_order_mark_is_read(service):
    body = b"\xef\xbb\xbf" + json.dumps({"query": "你好"}, ensure_ascii=False).encode()
    response = requests.post(service.url + "/agent/invoke", data=body, timeout=PATIENCE,
                             headers={"Content-Type": "application/json"})
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(("body", "code"), [
    (b"[" * 6000 + b"]" * 6000, "too_deep"),
    (b'{"a":' * 2500 + b"1" + b"}" * 2500, "too_deep"),
    # Readable by json.loads, too deep to walk for the lone surrogate's repair (a 500 once)
    (b'{"x": "\\ud800", "y": ' + b"[" * 700 + b"]" * 700 + b"}", "too_deep"),
    (b'{"query": "hi", "n": ' + b"7" * 5000 + b"}", "number_too_long"),
])
def test_json_too_deep_or_a_number_too_long_is_a_400_not_a_500(tmp_path, body, code):
    with serve_process(tmp_path, "--max-body", str(64 * 1024)) as service:
        response = requests.post(service.url + "/agent/invoke", data=body, timeout=PATIENCE,
                                 headers={"Content-Type": "application/json"})
        assert response.status_code == 400
        assert error_of(response)["code"] == code
    assert "Traceback" not in service.output()


def test_a_lone_surrogate_is_repaired_before_the_run_so_the_refund_and_the_answer_agree(tmp_path):
    body = ('{"query": "' + REFUND + ' \\ud800"}').encode()  # valid JSON for a string no UTF-8 can hold
    with serve_process(tmp_path, "--auto-approve") as service:
        response = requests.post(service.url + "/agent/invoke", data=body, timeout=PATIENCE,
                                 headers={"Content-Type": "application/json"})
        assert response.status_code == 200, response.text
        data = response.json()
        refunds = service.refunds()
        assert len(refunds) == 1 and refunds[0][0] in data["answer"]  # the refund written is the one told
        turns = requests.get(f"{service.url}/agent/sessions/{data['session_id']}", timeout=PATIENCE).json()["turns"]
        assert turns[0]["question"].endswith("\ufffd") and data["turn"] == 1
        nul = requests.post(service.url + "/agent/invoke", data=b'{"query": "' + REFUND.encode() + b'\\u0000"}',
                            headers={"Content-Type": "application/json"}, timeout=PATIENCE)
        assert nul.status_code == 400 and error_of(nul)["code"] == "control_character"
        assert len(service.refunds()) == 1
    assert "Traceback" not in service.output()


@pytest.mark.parametrize("cut", [
    b'Content-Length: 100\r\n\r\n{"q',  # promised 100 bytes, sent 3, then closed
    b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}",  # a chunk size that is no number
])
def test_a_body_cut_short_runs_nothing_and_prints_no_traceback(tmp_path, cut):
    with serve_process(tmp_path) as service:
        host, port = service.url.removeprefix("http://").rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=PATIENCE) as client:
            client.sendall(f"POST /agent/invoke HTTP/1.1\r\nHost: {host}:{port}\r\n".encode()
                           + b"Content-Type: application/json\r\n" + cut)
            client.shutdown(socket.SHUT_WR)
            while client.recv(65536):  # whatever the service answers, until it closes
                pass
        assert service.health()["finished"] == 0
    assert "Traceback" not in service.output() and "ClientDisconnect" not in service.output()


@pytest.mark.parametrize(("options", "content_type"), [
    (["--api-key", "k3y"], b"application/json"),  # no key: a 401 before the body is read
    ([], b"text/plain"),  # a 415 before the body is read
], ids=["no-key", "not-json"])
def test_a_body_unreadable_after_the_app_has_refused_the_request_prints_no_traceback(tmp_path, options, content_type):
    # h11 found the chunk size unreadable and answered 400 while the app was refusing the request: the app's answer,
    # second on the connection, broke h11's state, and the log had a LocalProtocolError's traceback.
    with serve_process(tmp_path, *options) as service:
        host, port = service.url.removeprefix("http://").rsplit(":", 1)
        head, body = raw_exchange(service, f"POST /agent/invoke HTTP/1.1\r\nHost: {host}:{port}\r\n".encode()
                                  + b"Content-Type: " + content_type + b"\r\nTransfer-Encoding: chunked\r\n\r\n"
                                  + b"zz\r\n{}")
        assert head.startswith(b"HTTP/1.1 400 ") and json.loads(body)["error"]["code"] == "unreadable_request"
        assert service.health()["finished"] == 0
    assert "Traceback" not in service.output() and "LocalProtocolError" not in service.output()


def test_a_body_unreadable_while_a_resumed_stream_is_answered_ends_the_connection_without_a_traceback(tmp_path):
    # A resume (Last-Event-ID) reads no body: its events were under way when h11 found the chunk size unreadable,
    # and the 400 h11 asked for could not follow them (a LocalProtocolError's traceback); the connection just ends.
    with serve_process(tmp_path, "--approval-timeout", "600") as service:
        first = requests.post(service.url + "/agent/stream", json={"query": REFUND}, stream=True, timeout=PATIENCE)
        blocks = first.iter_lines(decode_unicode=True, delimiter="\n\n")
        start_id = read_block(next(blocks))[0]
        host, port = service.url.removeprefix("http://").rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=PATIENCE) as client:
            client.sendall(f"POST /agent/stream HTTP/1.1\r\nHost: {host}:{port}\r\nLast-Event-ID: {start_id}\r\n"
                           "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n".encode())
            answer = b""
            while b"event: " not in answer:  # the resumed events have begun
                answer += client.recv(65536)
            assert answer.startswith(b"HTTP/1.1 200 ")
            client.sendall(b"zz\r\n{}")
            while chunk := client.recv(65536):  # until the service ends the connection
                answer += chunk
        assert b"unreadable_request" not in answer  # no second answer inside the first
        first.close()
    assert "Traceback" not in service.output() and "LocalProtocolError" not in service.output()


def raw_exchange(service, request_bytes: bytes) -> tuple[bytes, bytes]:
    """Send bytes on a fresh connection and read until the service closes it: (the answer's head, its body)."""
    host, port = service.url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=PATIENCE) as client:
        client.sendall(request_bytes)
        answer = b""
        while chunk := client.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return head, body


WEBSOCKET_UPGRADE = (b"GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")


@pytest.mark.parametrize("path", [b"/health", b"/agent/stream", b"/nowhere"])
def test_a_websocket_upgrade_is_refused_in_json(service, path):
    # The service has no WebSocket route: uvicorn answered Starlette's close before accept with a 403 and no body.
    host = service.url.removeprefix("http://").encode()
    head, body = raw_exchange(service, WEBSOCKET_UPGRADE.replace(b"{path}", path).replace(b"{host}", host))
    assert head.startswith(b"HTTP/1.1 403 ") and b"content-type: application/json" in head.lower(), head
    assert json.loads(body)["error"]["code"] == "no_websocket" and "Traceback" not in service.output()


@pytest.mark.parametrize("request_bytes", [
    b"GET /he\x00alth HTTP/1.1\r\nHost: {host}\r\n\r\n",  # a NUL in the path
    b"POST /agent/invoke HTTP/1.1\r\nHost: {host}\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{{}}",
    b"GET /health HTTP/1.1\r\nHost: {host}\r\na header line without a colon\r\n\r\n",
    b"GET /health HTTP/1.1\r\nHost: {host}\r\nX-Big: " + b"x" * 20_000,  # unfinished past MAX_HEADER_BYTES
])
def test_a_request_that_is_not_readable_http_gets_a_json_400_before_the_app(service, request_bytes):
    host = service.url.removeprefix("http://")
    head, body = raw_exchange(service, request_bytes.replace(b"{host}", host.encode()).replace(b"{{}}", b"{}"))
    assert head.startswith(b"HTTP/1.1 400 ") and b"content-type: application/json" in head.lower(), head
    assert json.loads(body)["error"]["code"] == "unreadable_request"
    assert requests.get(service.url + "/health", timeout=PATIENCE).status_code == 200


def test_a_body_whose_length_is_given_two_ways_is_refused_and_runs_nothing(service):
    # h11 read the chunks and let Content-Length go: a proxy in front that reads the length instead would take this
    # request's tail for the next request (smuggling). The classroom model refused it already.
    host = service.url.removeprefix("http://")
    finished = service.health()["finished"]
    head, body = raw_exchange(service, f"POST /agent/invoke HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                                       "Content-Length: 3\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                                       "f\r\n{\"query\": \"hi\"}\r\n0\r\n\r\n".encode())  # 0xf: 15 bytes
    assert head.startswith(b"HTTP/1.1 400 "), head
    assert json.loads(body)["error"]["code"] == "ambiguous_body_length"
    assert service.health()["finished"] == finished


@pytest.mark.parametrize("path", ["/", "/docs"])
def test_no_other_site_may_frame_the_pages(service, path):
    # the page holds the approve button: framed by another site under a lure, a person could be made to click it
    page = requests.get(service.url + path, timeout=PATIENCE)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert page.headers["x-frame-options"] == "DENY"
    assert page.headers["x-content-type-options"] == "nosniff"
    # Only the page's own script and style run (named by their hashes), and it talks only to the service.
    policy = dict(part.strip().split(" ", 1) for part in page.headers["content-security-policy"].split(";"))
    assert policy["frame-ancestors"] == policy["default-src"] == "'none'" and policy["connect-src"] == "'self'"
    for tag in ("script", "style"):  # /docs has no script: none may run there
        blocks = re.findall(rf"<{tag}>(.*?)</{tag}>", page.text, flags=re.DOTALL)
        assert policy[f"{tag}-src"].split() == [
            f"'sha256-{base64.b64encode(hashlib.sha256(block.encode()).digest()).decode()}'" for block in blocks
        ] or (not blocks and policy[f"{tag}-src"] == "'none'"), (tag, policy)
    assert "<script" in page.text or path == "/docs"


def test_an_oversized_body_is_a_json_413_declared_or_chunked(service):
    big = json.dumps({"query": "退" * 4000}).encode()
    json_body = {"Content-Type": "application/json"}
    declared = requests.post(service.url + "/agent/invoke", data=big, headers=json_body, timeout=PATIENCE)
    assert declared.status_code == 413 and error_of(declared)["code"] == "body_too_large"
    chunked = requests.post(service.url + "/agent/invoke", data=(big[i:i + 500] for i in range(0, len(big), 500)),
                            headers=json_body, timeout=PATIENCE)  # a generator: sent without Content-Length, in chunks
    assert chunked.status_code == 413 and error_of(chunked)["code"] == "body_too_large"
    assert service.health()["status"] == "ok"


def test_a_wrong_method_or_path_is_json_too(service):
    wrong = requests.get(service.url + "/agent/invoke", timeout=PATIENCE)
    assert wrong.status_code == 405 and error_of(wrong)["code"] == "method_not_allowed"
    assert "POST" in wrong.headers["allow"]
    assert requests.get(service.url + "/agent/stream", timeout=PATIENCE).status_code == 405
    missing = requests.get(service.url + "/agent/nothing", timeout=PATIENCE)
    assert missing.status_code == 404 and error_of(missing)["code"] == "not_found"
    no_query = stream(service, {})
    assert no_query.status_code == 400 and error_of(no_query)["code"] == "missing_query"


def test_the_api_key_is_required_when_set(tmp_path):
    with serve_process(tmp_path, "--api-key", "s3cret-key") as service:
        missing = invoke(service, {"query": LOGISTICS})
        assert missing.status_code == 401 and error_of(missing)["code"] == "unauthorized"
        assert missing.headers["www-authenticate"] == "Bearer"
        wrong = invoke(service, {"query": LOGISTICS}, headers={"Authorization": "Bearer guess"})
        assert wrong.status_code == 401 and "s3cret" not in wrong.text
        assert stream(service, {"query": LOGISTICS}).status_code == 401
        right = invoke(service, {"query": LOGISTICS}, headers={"Authorization": "Bearer s3cret-key"})
        assert right.status_code == 200 and right.json()["ok"]
        assert requests.get(service.url + "/", timeout=PATIENCE).status_code == 200  # the page holds no data
        # A key lets any host name through: a path with a slash too many is no redirect to the name it was sent
        for method, path in (("GET", "/health/"), ("POST", "/agent/invoke/")):
            extra = requests.request(method, service.url + path, headers={"Host": "evil.example"},
                                     json={"query": LOGISTICS}, allow_redirects=False, timeout=PATIENCE)
            assert extra.status_code == 404 and error_of(extra)["code"] == "not_found", (path, extra.status_code)
            assert "location" not in extra.headers
    assert "s3cret" not in service.output()


def test_without_a_key_only_loopback_and_allowed_host_names_are_answered(tmp_path):
    with serve_process(tmp_path, "--allowed-host", "shop.lan") as service:
        first = invoke(service, {"query": LOGISTICS}).json()
        port = service.url.rsplit(":", 1)[1]
        sessions = f"{service.url}/agent/sessions/{first['session_id']}"
        for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example", ""):
            # DNS rebinding: the attacker's name, pointed at 127.0.0.1, arrives in the Host header.
            for response in (requests.get(sessions, headers={"Host": host}, timeout=PATIENCE),
                             requests.get(service.url + "/", headers={"Host": host}, timeout=PATIENCE),
                             invoke(service, {"query": LOGISTICS}, headers={"Host": host})):
                assert response.status_code == 403 and error_of(response)["code"] == "host_not_allowed", host
                assert LOGISTICS not in response.text
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "shop.lan", f"SHOP.LAN:{port}"):
            assert requests.get(sessions, headers={"Host": host}, timeout=PATIENCE).status_code == 200, host
    assert "answers only for the hosts localhost, 127.0.0.1, [::1], shop.lan" in service.output()


def test_with_a_key_any_host_name_is_answered_with_the_key(tmp_path):
    with serve_process(tmp_path, "--api-key", "k3y") as service:
        response = requests.get(service.url + "/health", headers={"Host": "shop.example.com"}, timeout=PATIENCE)
        assert response.status_code == 200


def test_no_simple_cross_site_request_runs_the_agent(tmp_path):
    with serve_process(tmp_path) as service:
        port = service.url.rsplit(":", 1)[1]
        # What any web page can make a browser send without asking: a GET (an <img>), a form, text/plain.
        tried = [
            requests.get(service.url + "/agent/stream", params={"query": REFUND}, timeout=PATIENCE),
            requests.post(service.url + "/agent/stream", data={"query": REFUND}, timeout=PATIENCE),
            requests.post(service.url + "/agent/invoke", data=json.dumps({"query": REFUND}),
                          headers={"Content-Type": "text/plain"}, timeout=PATIENCE),
            # JSON, but the browser says where the page came from.
            invoke(service, {"query": REFUND}, headers={"Origin": "http://evil.example"}),
            invoke(service, {"query": REFUND}, headers={"Origin": "null"}),
            stream(service, {"query": REFUND}, headers={"Sec-Fetch-Site": "cross-site"}),
            invoke(service, {"query": REFUND}, headers={"Sec-Fetch-Site": "same-site"}),
            # An Origin no page sends, which urlsplit cannot read: a 500 and two tracebacks once.
            invoke(service, {"query": REFUND}, headers={"Origin": "http://["}),
        ]
        assert [r.status_code for r in tried] == [405, 415, 415, 403, 403, 403, 403, 403]
        assert [error_of(r)["code"] for r in tried[3:]] == ["cross_site"] * 5
        assert service.refunds() == [] and service.health()["finished"] == 0
        # The service's own page: same origin, as a browser says it.
        own = invoke(service, {"query": LOGISTICS}, headers={"Origin": f"http://127.0.0.1:{port}",
                                                              "Sec-Fetch-Site": "same-origin"})
        assert own.status_code == 200


@pytest.mark.parametrize("doubled", [b"Origin: http://127.0.0.1:{port}\r\nOrigin: http://evil.example\r\n",
                                     b"Sec-Fetch-Site: same-origin\r\nSec-Fetch-Site: cross-site\r\n",
                                     b"Content-Type: application/json\r\nContent-Type: text/plain\r\n"],
                         ids=["origin", "sec-fetch-site", "content-type"])
def test_a_header_the_cross_site_check_reads_sent_twice_is_a_json_400_and_runs_nothing(service, doubled):
    # The first of two was read: a same-origin Origin before another site's passed (the MCP server refuses both).
    host, port = service.url.removeprefix("http://").rsplit(":", 1)
    body = json.dumps({"query": REFUND}).encode()
    finished, refunds = service.health()["finished"], service.refunds()  # the module's service: earlier tests' runs
    content_type = b"" if b"Content-Type" in doubled else b"Content-Type: application/json\r\n"
    head, reply = raw_exchange(service, f"POST /agent/invoke HTTP/1.1\r\nHost: {host}:{port}\r\n".encode()
                               + content_type + doubled.replace(b"{port}", port.encode())
                               + b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    assert head.startswith(b"HTTP/1.1 400 "), head
    assert json.loads(reply)["error"]["code"] == "duplicate_header"
    assert service.health()["finished"] == finished and service.refunds() == refunds


# -- a refund waits for a person's yes ---------------------------------------------------------------------
def read_block(block: str) -> tuple[str | None, str, dict]:
    """(id, event name, data) of one Server-Sent Events block as the service writes it."""
    fields = dict(line.split(": ", 1) for line in block.strip("\n").split("\n"))
    return fields.get("id"), fields["event"], json.loads(fields["data"])


def sse_events(response: requests.Response):
    """(name, data) of each event of a stream, as they arrive."""
    for block in response.iter_lines(decode_unicode=True, delimiter="\n\n"):
        if block.strip() and not block.startswith(":"):
            yield read_block(block)[1:]


def until_approval_requested(events) -> dict:
    for kind, data in events:
        assert kind not in ("end", "error"), data
        if kind == "approval_requested":
            return data
    raise AssertionError("the stream ended without an approval request")


def answer_approval(service, approval: str, approve: bool, **options) -> requests.Response:
    return requests.post(f"{service.url}/agent/approvals/{approval}", json={"approve": approve}, timeout=PATIENCE,
                         **options)


def rest_of(events) -> dict[str, list[dict]]:
    seen: dict[str, list[dict]] = {}
    for kind, data in events:
        seen.setdefault(kind, []).append(data)
    return seen


def test_the_person_is_shown_what_the_refund_will_do_not_the_models_words(tmp_path, scripted_server):
    # The approval showed the call as the model wrote it: a reason saying "¥12 only" was approved, and ¥1999 paid;
    # an order id written in JSON escapes ("\u0038...") hid which order was refunded. It now says what the shop's
    # applyRefund will do (lesson 15's describe_refund): the order as the tool reads it, and the amount.
    escaped = "".join(f"\\u{ord(digit):04x}" for digit in "88234")
    call = f'Action: applyRefund\nAction Input: {{"orderId": "{escaped}", "reason": "仅补偿运费 ¥12，订单 88231"}}'
    scripted_server.reply((200, completion(f"Thought: refund it.\n{call}")),
                          (200, completion("Thought: done.\nFinal Answer: declined")))
    with serve_process(tmp_path, model_url=scripted_server.url) as service:
        events = sse_events(stream(service, {"query": "订单 88231 和 88234，给我退运费"}))
        asked = until_approval_requested(events)
        assert asked["summary"].startswith("退款 ¥39，订单 88234（"), asked["summary"]
        assert answer_approval(service, asked["approval_id"], False).status_code == 200
        assert rest_of(events)["end"] and service.refunds() == []


@pytest.mark.parametrize("approve", [True, False])
def test_a_refund_waits_for_a_yes_over_http(tmp_path, approve):
    with serve_process(tmp_path) as service:
        events = sse_events(stream(service, {"query": REFUND}))
        asked = until_approval_requested(events)
        assert asked["tool"] == "applyRefund" and "88231" in asked["summary"]
        # The run is paused before the tool: nothing written yet, and the request is listed for whoever approves.
        assert service.refunds() == []
        pending = requests.get(service.url + "/agent/approvals", timeout=PATIENCE).json()["pending"]
        assert [p["approval_id"] for p in pending] == [asked["approval_id"]] and pending[0]["question"] == REFUND
        answered = answer_approval(service, asked["approval_id"], approve)
        assert answered.status_code == 200
        assert answered.json()["outcome"] == ("approved" if approve else "declined")
        seen = rest_of(events)
        decided = seen["approval_decided"][0]
        assert decided["outcome"] == answered.json()["outcome"] and decided["by"] == "a person over HTTP"
        answer = seen["end"][0]["answer"]
        refunds = service.refunds()
        if approve:
            assert len(refunds) == 1 and refunds[0][1] == "88231" and refunds[0][0] in answer
        else:
            assert refunds == [] and "RF2026" not in answer
            assert any('"approval":"declined"' in o["text"].replace(" ", "") for o in seen["observation"])
        # The run is over: its request is gone, and a second answer finds nothing to answer.
        assert answer_approval(service, asked["approval_id"], not approve).status_code == 404
        assert requests.get(service.url + "/agent/approvals", timeout=PATIENCE).json()["pending"] == []


def test_no_answer_in_time_is_a_timeout_and_pays_nothing(tmp_path):
    with serve_process(tmp_path, "--approval-timeout", "1") as service:
        response = invoke(service, {"query": REFUND})  # nobody answers
        assert response.status_code == 200
        trace = response.json()["trace"]["events"]
        decided = [e for e in trace if e["type"] == "approval_decided"]
        assert [d["outcome"] for d in decided] == ["timeout"] and decided[0]["by"] == "the time limit"
        assert [e["type"] for e in trace].index("approval_requested") < [e["type"] for e in trace].index(
            "approval_decided")
        assert service.refunds() == [] and "RF2026" not in response.json()["answer"]
    assert "no answer in 1 s is a timeout: nothing is paid" in service.output()


def test_approvals_are_refused_like_any_other_bad_request(tmp_path):
    with serve_process(tmp_path, "--api-key", "k3y", "--operator-key", "op-k3y") as service:
        key = {"Authorization": "Bearer op-k3y"}  # the operator's: a client's key cannot answer (test_serving_roles.py)
        events = sse_events(stream(service, {"query": REFUND}, headers={"Authorization": "Bearer k3y"}))
        approval = until_approval_requested(events)["approval_id"]
        assert answer_approval(service, approval, True).status_code == 401  # no key
        assert requests.get(service.url + "/agent/approvals", timeout=PATIENCE).status_code == 401
        guessed = approval.rsplit(".", 1)[0][:-2] + "xx." + approval.rsplit(".", 1)[1]
        assert answer_approval(service, guessed, True, headers=key).status_code == 404
        cross = answer_approval(service, approval, True, headers={**key, "Sec-Fetch-Site": "cross-site"})
        assert cross.status_code == 403
        bad = requests.post(f"{service.url}/agent/approvals/{approval}", json={"approve": "yes"}, headers=key,
                            timeout=PATIENCE)
        assert bad.status_code == 400 and error_of(bad)["code"] == "bad_answer"
        assert service.refunds() == []
        assert answer_approval(service, approval, False, headers=key).status_code == 200
        assert rest_of(events)["approval_decided"][0]["outcome"] == "declined" and service.refunds() == []


def test_a_client_that_leaves_while_a_refund_waits_ends_the_run_at_once(tmp_path):
    with serve_process(tmp_path, "--approval-timeout", "600") as service:
        response = stream(service, {"query": REFUND})
        until_approval_requested(sse_events(response))
        response.close()
        # Not 600 s: once the resume grace is over, the request is closed as an error, and the run stops.
        health = wait_for(lambda: (h := service.health())["running"] == 0 and h, "the run to end")
        assert health["cancelled"] == 1 and service.refunds() == []


def test_sigterm_while_refunds_wait_for_a_yes_does_nothing_and_exits_cleanly(tmp_path):
    with serve_process(tmp_path) as service:
        streams = [stream(service, {"query": REFUND}) for _ in range(3)]
        for response in streams:
            until_approval_requested(sse_events(response))
        answers: list[requests.Response] = []
        waiting = threading.Thread(target=lambda: answers.append(invoke(service, {"query": REFUND})))
        waiting.start()
        wait_for(lambda: len(requests.get(service.url + "/agent/approvals", timeout=PATIENCE).json()["pending"]) == 4,
                 "four refunds waiting")
        assert service.server.stop(signal.SIGTERM) == 0
        waiting.join(PATIENCE)
        # Declined as the service stops (stopping.py): the run answers from the decline, and nothing is done.
        assert answers[0].status_code == 200, answers[0].text
        decided = [e for e in answers[0].json()["trace"]["events"] if e["type"] == "approval_decided"]
        assert [(d["outcome"], d["by"]) for d in decided] == [("error", "the service")]
        assert service.refunds() == []
    assert "Traceback" not in service.output() and "never retrieved" not in service.output()


def test_one_client_cannot_hold_every_run_thread_with_refunds_nobody_answers(tmp_path):
    # 64 run threads × 8 / 256 connections: this client's share is 2 refunds waiting at once.
    with serve_process(tmp_path, "--max-connections", "256", "--max-connections-per-client", "8",
                       "--approval-timeout", "600") as service:
        held = [stream(service, {"query": REFUND}) for _ in range(2)]
        try:
            asked = [until_approval_requested(sse_events(response)) for response in held]
            # The third is not kept waiting 600 s: its request ends at once, nothing is paid, and the answer says so.
            third = invoke(service, {"query": REFUND})
            assert third.status_code == 200, third.text
            decided = [e for e in third.json()["trace"]["events"] if e["type"] == "approval_decided"]
            assert [(d["outcome"], d["by"]) for d in decided] == [("error", "the service")]
            assert "2 refunds this client asked for wait for a person's yes already" in decided[0]["detail"]
            observations = [e["text"] for e in third.json()["trace"]["events"] if e["type"] == "observation"]
            assert any("applyRefund was not run" in text for text in observations)
            assert service.refunds() == [] and "RF2026" not in third.json()["answer"]
            pending = requests.get(service.url + "/agent/approvals", timeout=PATIENCE).json()["pending"]
            assert sorted(p["approval_id"] for p in pending) == sorted(a["approval_id"] for a in asked)
            # One answered: the client may have one waiting again.
            assert answer_approval(service, asked[0]["approval_id"], False).status_code == 200
            again = stream(service, {"query": REFUND})
            held.append(again)
            until_approval_requested(sse_events(again))
            assert len(requests.get(service.url + "/agent/approvals", timeout=PATIENCE).json()["pending"]) == 2
        finally:
            for response in held:
                response.close()


def test_auto_approve_is_said_at_start_and_in_the_trace(tmp_path):
    with serve_process(tmp_path, "--auto-approve") as service:
        trace = invoke(service, {"query": REFUND}).json()["trace"]["events"]
        assert [e["outcome"] for e in trace if e["type"] == "approval_decided"] == ["approved"]
        assert len(service.refunds()) == 1
    assert "approvals: AUTOMATIC (--auto-approve)" in service.output()


# -- runs that take time -----------------------------------------------------------------------------------
def test_two_requests_at_once_run_at_once(tmp_path, paced_room):
    with serve_process(tmp_path, "--auto-approve", model_url=paced_room.chat_url) as service:
        answers: list[requests.Response] = []
        clients = [threading.Thread(target=lambda: answers.append(invoke(service, {"query": REFUND})))
                   for _ in range(2)]
        for client in clients:
            client.start()
        # Both runs under way at the same moment: the model calls of one do not wait for the other's.
        wait_for(lambda: service.health()["running"] == 2, "two runs under way at once")
        for client in clients:
            client.join(PATIENCE)
        assert [r.status_code for r in answers] == [200, 200]
        # One refund, not two: the second run finds the first's (the shop's refunds are idempotent).
        assert all("RF202606300001" in r.json()["answer"] for r in answers)
        assert service.health()["finished"] == 2


def test_a_client_that_disconnects_mid_stream_stops_the_run(tmp_path, paced_room):
    with serve_process(tmp_path, model_url=paced_room.chat_url) as service:
        response = stream(service, {"query": REFUND})
        lines = response.iter_lines(decode_unicode=True)
        start = json.loads(next(line for line in lines if line.startswith("data:"))[5:])
        assert next(line for line in lines if line.startswith("event: reply_delta"))  # round 1 is being typed
        response.close()  # the client goes away while the model types, and does not come back

        # After the resume grace (5 s by default), the run is asked to stop at the next piece of the reply.
        health = wait_for(lambda: (h := service.health())["cancelled"] == 1 and h["running"] == 0 and h,
                          "the run to be stopped")
        assert health["finished"] == 0
        # Nothing was stored for the abandoned run, and the service goes on answering.
        gone = requests.get(f"{service.url}/agent/sessions/{start['session_id']}", timeout=PATIENCE)
        assert gone.status_code == 404
        assert invoke(service, {"query": LOGISTICS}).status_code == 200


def test_dropped_streams_leave_no_descriptor_open(tmp_path):
    with serve_process(tmp_path) as service:
        service.health()
        before = service.open_descriptors()
        for _ in range(2):
            for _ in range(40):
                response = stream(service, {"query": REFUND})
                assert response.status_code == 200
                next(response.iter_content(64))  # the first bytes of the stream, then the client hangs up
                response.close()
            wait_for(lambda: (h := service.health())["running"] == 0 and h["cancelled"] + h["finished"] > 0,
                     "the dropped runs to end")
        # The runs end a moment after their clients go; their connections to the model close with them.
        wait_for(lambda: service.open_descriptors() <= before + 2,
                 f"descriptors back to {before} (now {service.open_descriptors()})", patience=30)


def blocks_of(response: requests.Response):
    for block in response.iter_lines(decode_unicode=True, delimiter="\n\n"):
        if block.strip() and not block.startswith(":"):
            yield read_block(block)


def test_a_dropped_stream_resumes_from_last_event_id_and_the_run_goes_on(tmp_path, paced_room):
    with serve_process(tmp_path, "--auto-approve", "--resume-grace", "60", model_url=paced_room.chat_url) as service:
        first = stream(service, {"query": REFUND})
        read = []
        for block in blocks_of(first):
            read.append(block)
            if block[1] == "tool_call":  # round 1 has called its tool: the client's connection drops here
                break
        first.close()
        assert service.health()["running"] == 1  # nobody reads it, but the run goes on for its client
        again = stream(service, {"query": REFUND}, headers={"Last-Event-ID": read[-1][0]})
        assert again.status_code == 200
        rest = list(blocks_of(again))
        stream_id = read[0][0].rsplit(".", 1)[0]
        # Every event exactly once, in order: the ids go on from the last one read.
        assert [b[0] for b in read + rest] == [f"{stream_id}.{n}" for n in range(len(read) + len(rest))]
        assert rest[-1][1] == "end" and rest[-1][2]["session_id"] == read[0][2]["session_id"]
        assert service.health()["finished"] == 1 and service.health()["cancelled"] == 0
        assert len(service.refunds()) == 1 and service.refunds()[0][0] in rest[-1][2]["answer"]
        # A finished stream can still be read again from any of its ids, for a while; an unknown one is a 404.
        tail = list(blocks_of(stream(service, {"query": REFUND}, headers={"Last-Event-ID": rest[-3][0]})))
        assert [b[0] for b in tail] == [b[0] for b in rest[-2:]]
        unknown = stream(service, {"query": REFUND}, headers={"Last-Event-ID": "nope.3"})
        assert unknown.status_code == 404 and error_of(unknown)["code"] == "unknown_stream"


def test_the_time_limit_ends_a_long_run_politely(tmp_path, paced_room):
    # The refund run takes about 10 s on the paced model; --timeout 2 ends it early, with an answer, not an error.
    with serve_process(tmp_path, "--timeout", "2", model_url=paced_room.chat_url) as service:
        response = invoke(service, {"query": REFUND})
        assert response.status_code == 200
        data = response.json()
        assert data["reason"] in ("timeout", "llm_error") and data["rounds"] < 5, data["reason"]
        assert data["answer"] and not data["ok"]


def test_a_tool_failure_mid_run_comes_back_as_an_observation_with_status_200(tmp_path):
    with serve_process(tmp_path, script=HERE / "serving_with_a_broken_tool.py") as service:
        response = invoke(service, {"query": LOGISTICS})
        assert response.status_code == 200
        trace = Trace.from_json(json.dumps(response.json()["trace"]))
        failed = [o for o in trace.of_type(Observation) if o.error]
        assert failed and "courier" in failed[0].text and "ConnectionError" in failed[0].text
        assert trace.tool_calls[-1].name == "queryLogistics"
        assert response.json()["answer"] == trace.answer and trace.end.kind == "final"
    assert "Traceback" not in service.output()


def test_several_workers_share_sessions_through_postgresql(tmp_path, paced_room):
    from tests.postgres_server import throwaway_postgres

    with throwaway_postgres() as postgres:
        url = postgres.new_database()
        with serve_process(tmp_path, "--workers", "2", "--session-store", url, model_url=paced_room.chat_url) as service:
            first = invoke(service, {"query": LOGISTICS})
            session_id = first.json()["session_id"]
            workers, turns = {first.headers["x-served-by"]}, [first.json()["turn"]]
            answers: list[requests.Response] = []

            def follow_up() -> None:
                answers.append(invoke(service, {"query": "那它什么时候能到？", "session_id": session_id}))

            for _ in range(5):  # the kernel hands each new connection to either worker; a few rounds see both
                answers.clear()
                clients = [threading.Thread(target=follow_up) for _ in range(4)]
                for client in clients:
                    client.start()
                for client in clients:
                    client.join(PATIENCE)
                assert [r.status_code for r in answers] == [200] * 4
                workers |= {r.headers["x-served-by"] for r in answers}
                turns += [r.json()["turn"] for r in answers]
                if len(workers) >= 2:
                    break
            assert len(workers) == 2, "every request went to one worker"
            stored = requests.get(f"{service.url}/agent/sessions/{session_id}", timeout=PATIENCE).json()["turns"]
            assert sorted(turns) == [t["number"] for t in stored] == list(range(1, len(turns) + 1))
        assert "postgres:" + postgres.password not in service.output()


def test_the_service_answers_again_once_postgresql_is_back(tmp_path):
    from tests.postgres_server import throwaway_postgres

    with throwaway_postgres() as postgres:
        with serve_process(tmp_path, "--session-store", postgres.new_database()) as service:
            first = invoke(service, {"query": LOGISTICS})
            assert first.status_code == 200
            session_id = first.json()["session_id"]
            postgres.stop(keep_data=True)
            down = invoke(service, {"query": LOGISTICS, "session_id": session_id})
            assert down.status_code == 503 and error_of(down)["code"] == "unavailable"
            assert postgres.password not in down.text
            postgres.start()
            # No restart of the service: its pool replaces the connections the server dropped.
            again = wait_for(lambda: (r := invoke(service, {"query": "那它什么时候能到？", "session_id": session_id}))
                             .status_code == 200 and r.json()["turn"] is not None and r,
                             "the service to answer again with PostgreSQL back")
            turns = requests.get(f"{service.url}/agent/sessions/{session_id}", timeout=PATIENCE).json()["turns"]
            assert [t["number"] for t in turns] == [1, 2] and again.json()["turn"] == 2
        assert postgres.password not in service.output() and "Traceback" not in service.output()


# -- the command -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_serve_stops_cleanly_on_sigint_and_sigterm_even_with_sigint_ignored(tmp_path, workers, signum):
    with serve_process(tmp_path, "--workers", workers, ignore_sigint=True) as service:
        assert invoke(service, {"query": LOGISTICS}).status_code == 200
        assert service.server.stop(signum) == 0
    assert "service stopped" in service.output() and "Traceback" not in service.output()


def checkout_path() -> dict:
    """PYTHONPATH as this test run has it: a subprocess with a bare environment imports the same tinyagent."""
    return {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}


@pytest.mark.parametrize(("options", "says"), [
    (["--port", "70000"], "--port must be a whole number from 0 to 65535"),
    (["--port", "³"], "--port must be a whole number from 0 to 65535"),  # int() refused it: argparse's own words
    (["--port", "٠"], "--port must be a whole number from 0 to 65535"),  # Arabic-Indic 0: it served on a free port
    (["--workers", "２"], "--workers must be a whole number from 1 to 64"),
    (["--api-key", ""], "--api-key (or $TINYAGENT_SERVE_API_KEY) is empty"),  # it served without a key
    (["--api-key", " \t"], "--api-key (or $TINYAGENT_SERVE_API_KEY) is empty"),
    (["--workers", "0"], "--workers must be a whole number from 1 to 64"),
    (["--max-steps", "many"], "--max-steps must be a whole number"),
    (["--timeout", "-1"], "--timeout must be a number of seconds above 0"),
    (["--now", "yesterday"], "--now must be an ISO date-time"),
    (["--session-store", "postgresql://tiny:pw@127.0.0.1:1/db"], "cannot connect to PostgreSQL at postgresql://tiny@"),
    (["--host", "999.1.1.1"], "cannot listen on '999.1.1.1'"),
    (["--allowed-host", "http://shop.lan/"], "--allowed-host must be a host name"),
    (["--model", "classroom\nevil"], "holds a control character: 'classroom\\nevil'"),
    (["--session-store", "mysql://u:pw@host/x"], "a mysql:// URL is not a session store"),
])
def test_bad_options_are_one_line_and_exit_code_2(tmp_path, options, says):
    done = subprocess.run([sys.executable, "-m", "tinyagent", "serve", "--db", str(tmp_path / "shop.sqlite3"),
                           "--session-store", str(tmp_path / "s.sqlite3"), *options], cwd=tmp_path,
                          env={"TINYAGENT_OFFLINE": "1", "PATH": "/usr/bin:/bin", **checkout_path()},
                          capture_output=True, text=True, timeout=PATIENCE, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: ") and says in done.stderr
    # Nothing is made from a URL, and its password is not shown.
    assert not [p for p in tmp_path.rglob("*") if "mysql" in str(p) or "pw@" in str(p)]
    assert ":pw@" not in done.stderr


@pytest.mark.parametrize("blank", ["", "  "])
def test_a_blank_key_in_the_environment_is_one_line_and_exit_code_2(tmp_path, blank):
    done = subprocess.run([sys.executable, "-m", "tinyagent", "serve", "--db", str(tmp_path / "shop.sqlite3"),
                           "--session-store", str(tmp_path / "s.sqlite3"), "--port", "0"], cwd=tmp_path,
                          env={"TINYAGENT_OFFLINE": "1", "PATH": "/usr/bin:/bin", "TINYAGENT_SERVE_API_KEY": blank,
                               **checkout_path()}, capture_output=True, text=True, timeout=PATIENCE, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "$TINYAGENT_SERVE_API_KEY) is empty" in done.stderr


# -- connections that never finish a request ---------------------------------------------------------------
def _connected(service) -> socket.socket:
    host, port = service.url.removeprefix("http://").rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=PATIENCE)


def _closed_by_the_service(sock: socket.socket, drip: bytes = b"") -> bool:
    """Whether the service hung up on `sock` (reading returns nothing or the connection is reset),
    sending `drip` a byte at a time meanwhile; False if it is still open after PATIENCE seconds."""
    sock.settimeout(0.5)
    deadline = time.monotonic() + PATIENCE
    while time.monotonic() < deadline:
        try:
            if drip:
                sock.send(drip[:1])
                drip = drip[1:] or b"X"
            if sock.recv(4096) == b"":
                return True
        except TimeoutError:
            continue
        except (ConnectionResetError, BrokenPipeError):
            return True
    return False


def test_headers_that_never_end_are_cut_off(tmp_path):
    with serve_process(tmp_path, "--header-timeout", "1") as service:
        dripping = _connected(service)
        try:
            # A byte every half second, for ever: the headers never end, and the service hangs up, after the 1 s
            # asked for: well before the 10 s it waits by default (the option ignored passed too).
            started = time.monotonic()
            assert _closed_by_the_service(dripping, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            assert time.monotonic() - started < 8
        finally:
            dripping.close()
        assert service.health()["status"] == "ok"  # a request that sends its headers at once is answered


def _head(path: str, content_type: str, length: int, *extra: str) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Type: {content_type}", f"Content-Length: {length}",
             *extra]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


@pytest.mark.parametrize(("request_head", "status"), [
    (_head("/agent/invoke", "text/plain", 1_000_000), b"415"),
    (_head("/agent/invoke", "application/json", 1_000_000), b"413"),
    (_head("/agent/approvals/x.1", "application/json", 100, "Origin: http://evil.example"), b"403"),
    (_head("/agent/invoke", "application/json", 100) + b"{", b"408"),  # the app's 10 s for the body run out
], ids=["415-not-json", "413-too-large", "403-cross-site", "408-body-too-slow"])
def test_a_body_its_answer_left_unread_cannot_hold_the_connection(tmp_path, request_head, status):
    # The service answers without reading the body; the client goes on sending it, a byte every half second, for
    # ever. uvicorn's keep-alive timeout restarts at every byte: the connection was held as long as the client liked.
    with serve_process(tmp_path, "--header-timeout", "1") as service:
        dripping = _connected(service)
        try:
            dripping.sendall(request_head)
            dripping.settimeout(PATIENCE)
            assert dripping.recv(4096).startswith(b"HTTP/1.1 " + status)
            assert _closed_by_the_service(dripping, b"x")
        finally:
            dripping.close()


def test_a_refused_body_sent_whole_keeps_its_connection(tmp_path):
    # The rest of an unread body is read and thrown away: a client that sent it all goes on with its next request.
    with serve_process(tmp_path, "--max-body", "2048") as service:
        client = _connected(service)
        try:
            client.sendall(_head("/agent/invoke", "application/json", 5000) + b" " * 5000)
            client.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            replies = b""
            client.settimeout(PATIENCE)
            while replies.count(b"HTTP/1.1 ") < 2 or not replies.endswith(b"}"):
                chunk = client.recv(4096)
                assert chunk, f"closed after {replies!r}"
                replies += chunk
            refusal, _, health = replies.partition(b"HTTP/1.1 200 OK")
            assert refusal.startswith(b"HTTP/1.1 413 ") and b'"body_too_large"' in refusal
            assert b'"status":"ok"' in health
        finally:
            client.close()


def _reply_until_closed(sock: socket.socket) -> bytes:
    """Everything the service wrote on `sock` before it hung up."""
    sock.settimeout(PATIENCE)
    chunks = []
    try:
        while chunk := sock.recv(4096):
            chunks.append(chunk)
    except ConnectionResetError:
        pass
    return b"".join(chunks)


def _still_open(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        return sock.recv(1) != b""
    except BlockingIOError:  # nothing to read, and not closed
        return True
    except ConnectionResetError:
        return False
    finally:
        sock.setblocking(True)


def test_connections_beyond_the_limit_are_closed_as_they_open(tmp_path):
    # The per-client limit well above: the global one alone decides (one client's 12 connections passed before
    # with the global limit ignored, the per-client limit of 5 closing the same seven).
    with serve_process(tmp_path, "--max-connections", "5", "--max-connections-per-client", "100",
                       "--header-timeout", "600") as service:
        held = [_connected(service) for _ in range(12)]
        try:
            for sock in held:
                sock.send(b"GET /health HTTP/1.1\r\n")  # and never the rest
            # The seven beyond the limit are told 503 busy and closed at once; the first five stay open (their 600 s
            # are not up).
            for reply in (_reply_until_closed(sock) for sock in held[5:]):
                assert reply.startswith(b"HTTP/1.1 503 ") and b'"busy"' in reply, reply[:200]
            assert [_still_open(sock) for sock in held[:5]] == [True] * 5
        finally:
            for sock in held:
                sock.close()
        wait_for(lambda: requests.get(service.url + "/health", timeout=PATIENCE).status_code == 200,
                 "the service to answer again once the held connections are gone")


def _invoke_request(service) -> tuple[bytes, bytes]:
    """A question as its request's head and its body, which urllib3 sends apart."""
    host, port = service.url.removeprefix("http://").rsplit(":", 1)
    body = json.dumps({"query": LOGISTICS}).encode()
    return (f"POST /agent/invoke HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode(), body


def _answered(sock: socket.socket) -> None:
    """Wait until the service's answer has started to arrive on `sock` (without reading it)."""
    arrived = select.poll()
    arrived.register(sock, select.POLLIN)
    assert arrived.poll(PATIENCE * 1000), "no answer"


@pytest.mark.parametrize(("options", "status", "code"), [
    (("--max-connections", "1"), 503, "busy"),
    (("--max-connections-per-client", "1"), 429, "too_many_connections"),
    ((), 400, "unreadable_request"),  # a NUL in the path: h11 cannot read the request
])
def test_a_client_still_sending_after_its_last_answer_reads_it_not_a_reset(tmp_path, options, status, code):
    # The service closed such a connection at once, and what the client sent after the answer met a closed
    # socket: the reset that sent could take the answer with it ("Connection reset by peer" where the JSON was).
    with serve_process(tmp_path, *options) as service:
        head, body = _invoke_request(service)
        if status == 400:
            head = head.replace(b"/agent/invoke", b"/agent/in\x00voke")
        with _connected(service) as holding, _connected(service) as late:
            holding.sendall(b"GET /health HTTP/1.1\r\n")  # takes the one place, where there is one
            for _ in range(3):  # its body after the answer, and then more
                late.sendall(head)
                _answered(late)
                late.sendall(body)
            assert ended_cleanly(late)  # a FIN after the answer, not a reset
            answer = _reply_until_closed(late)
        head, _, reply = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 %d " % status) and json.loads(reply)["error"]["code"] == code, answer


def _settled_sockets(service) -> int:
    """How many sockets the service holds, once two counts 0.2 s apart agree (a connection just closed is gone)."""
    def settled():
        first = service.open_sockets()
        time.sleep(0.2)
        return first == service.open_sockets() and first
    return wait_for(settled, "the service's sockets to settle")


def test_refused_connections_their_clients_keep_open_hold_few_descriptors_and_not_for_long(tmp_path):
    # A refused connection is read until its client closes it; clients that never close theirs keep at most a
    # quarter of --max-connections open, each for ENDING_SECONDS at most.
    with serve_process(tmp_path, "--max-connections", "8", "--max-connections-per-client", "8", "--header-timeout",
                       "600") as service, \
            contextlib.ExitStack() as held:
        head, body = _invoke_request(service)
        service.health()  # its first request makes the sockets the service then keeps
        served = _settled_sockets(service) + 8
        for _ in range(8):
            held.enter_context(_connected(service)).sendall(b"GET /health HTTP/1.1\r\n")
        wait_for(lambda: service.open_sockets() == served, "the eight connections held")
        refused_at = time.monotonic()
        for _ in range(6):
            kept = held.enter_context(_connected(service))
            kept.sendall(head + body)
            assert _reply_until_closed(kept).startswith(b"HTTP/1.1 503 ")  # answered, and kept open by its client
            wait_for(lambda: service.open_sockets() <= served + 2, "at most two refused connections held")
        wait_for(lambda: service.open_sockets() == served, "the refused connections closed",
                 patience=ENDING_SECONDS + PATIENCE)
        assert time.monotonic() - refused_at >= ENDING_SECONDS  # not closed before their time was up


@pytest.mark.parametrize("body", [b"", b"{bad json", b"[1, 2]"])
def test_an_unreadable_answer_to_an_approval_is_told_with_the_approval_body(service, body):
    # These answers once asked for {"query": ...}, the body of the agent's own routes
    answer = requests.post(service.url + "/agent/approvals/" + "ab" * 16, data=body, timeout=PATIENCE,
                           headers={"Content-Type": "application/json"})
    assert answer.status_code == 400, answer.text
    assert '{"approve": true}' in error_of(answer)["message"] and '"query"' not in error_of(answer)["message"]


@pytest.mark.parametrize(("path", "body"), [
    ("/agent/invoke", b'{"query": "Where is order 88231?", "query": "' + REFUND.encode() + b'"}'),
    ("/v1/chat/completions", b'{"model": "tinyagent-shop", "messages": [{"role": "user", "content": "hi", '
                             b'"content": "' + REFUND.encode() + b'"}]}'),
    ("/agent/approvals/" + "ab" * 16, b'{"approve": false, "approve": true}'),
])
def test_a_body_giving_a_key_twice_is_a_json_400(service, path, body):
    # Python's json keeps the last value, at any depth: the client's request was read as what it did not say first.
    refunds = service.refunds()
    answer = requests.post(service.url + path, data=body, timeout=PATIENCE,
                           headers={"Content-Type": "application/json"})
    assert answer.status_code == 400, answer.text
    assert error_of(answer)["code"] == "duplicate_key"
    assert service.refunds() == refunds  # nothing was run


def test_an_approval_giving_approve_twice_is_no_yes(tmp_path):
    # {"approve": false, "approve": true} was read as true: 200 "approved", and the refund was paid.
    with serve_process(tmp_path) as service:
        events = sse_events(stream(service, {"query": REFUND}))
        approval = until_approval_requested(events)["approval_id"]
        ambiguous = requests.post(f"{service.url}/agent/approvals/{approval}", data=b'{"approve": false, "approve": true}',
                                  headers={"Content-Type": "application/json"}, timeout=PATIENCE)
        assert ambiguous.status_code == 400, ambiguous.text
        assert error_of(ambiguous)["code"] == "duplicate_key" and "'approve'" in error_of(ambiguous)["message"]
        assert service.refunds() == []
        assert answer_approval(service, approval, False).json()["outcome"] == "declined"  # still waiting for an answer
        assert rest_of(events)["approval_decided"][0]["outcome"] == "declined" and service.refunds() == []
    assert "Traceback" not in service.output()
