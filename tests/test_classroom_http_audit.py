"""The classroom model's HTTP server against what an audit sent it: a request target that is a whole URL, a Host
with a user in it, an empty line before the request, headers cut by the end of the stream, a TLS handshake on the
plain-HTTP port, and a header line that is no `Name: value` or whose value holds a line break or a NUL."""

from __future__ import annotations

import json
import socket
import ssl

import pytest
import requests

from tinyagent.classroom.reply import Reply
from tinyagent.classroom.server import ClassroomServer

from .conftest import PATIENCE
from .serving_process import wait_for

MODELS = {"classroom": "echo"}
BODY = {"model": "classroom", "messages": [{"role": "user", "content": "hi"}]}


def echo(request: dict) -> Reply:
    return Reply(request["messages"][-1]["content"])


@pytest.fixture(scope="module")
def room():
    with ClassroomServer(responder=echo, models=MODELS) as server:
        yield server


def answer_to(port: int, data: bytes, *, then_end: bool = False) -> bytes:
    """Send `data` as it is on a fresh connection (and end our side after it, with `then_end`); what comes back
    until the server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=PATIENCE) as sock:
        sock.sendall(data)
        if then_end:
            sock.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def client_hello() -> bytes:
    """The first bytes a TLS client sends (its ClientHello), as an https:// URL makes any client send them."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ssl.create_default_context().wrap_bio(incoming, outgoing, server_hostname="127.0.0.1")
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def status_and_error(answer: bytes) -> tuple[bytes, dict]:
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b"application/json" in head, answer[:300]
    return head.split(b" ", 2)[1], json.loads(body)["error"]


def test_an_absolute_form_target_is_checked_as_the_host_it_names(room):
    # RFC 9112 §3.2.2: with a whole URL as its target, a request names the URL's host, and Host is ignored. The
    # room answered "GET http://evil.example/v1/models" as /v1/models for whatever Host came with it.
    foreign = answer_to(room.port, b"GET http://evil.example/v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                   b"Connection: close\r\n\r\n")
    status, error = status_and_error(foreign)
    assert status == b"403" and error["code"] == "host_not_allowed", foreign
    own = answer_to(room.port, b"GET http://127.0.0.1:%d/v1/models HTTP/1.1\r\nHost: evil.example\r\n"
                               b"Connection: close\r\n\r\n" % room.port)
    assert own.startswith(b"HTTP/1.1 200 "), own


@pytest.mark.parametrize("host", ["127.0.0.1:{port}@evil.example", "localhost:{port}@evil.example",
                                  "[::1]:{port}@evil.example", "[::1].evil.example:{port}"])
def test_a_host_with_a_user_or_more_after_an_ipv6_address_is_refused(room, host):
    # A URL's host is what follows its "@": 127.0.0.1:PORT@evil.example names evil.example, and was taken for
    # this machine.
    answer = requests.get(room.base_url + "/models", headers={"Host": host.format(port=room.port)}, timeout=PATIENCE)
    assert answer.status_code == 403 and answer.json()["error"]["code"] == "host_not_allowed"


def test_a_request_after_an_empty_line_is_answered(room):
    # RFC 9112 §2.2: a server SHOULD ignore at least one empty line before the request line. The room took it
    # for the request line and closed the connection without a word.
    answer = answer_to(room.port, b"\r\nGET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200 "), answer
    assert json.loads(answer.partition(b"\r\n\r\n")[2])["data"][0]["id"] == "classroom"


@pytest.mark.parametrize("blank", [b"\r\n" * 5, b"   \r\n", b"\t\r\n"])
def test_a_missing_request_line_gets_a_400_not_a_silent_close(room, blank):
    # More empty lines than are skipped, or a line of spaces, was taken for a request line of no words, and the
    # connection closed without a word.
    answer = answer_to(room.port, blank + b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    status, error = status_and_error(answer)
    assert status == b"400" and "request line is missing" in error["message"], answer


def test_headers_cut_short_by_the_end_of_the_stream_are_not_answered(room):
    # The headers end at an empty line; the base class also ended them where the stream ended, and answered 200.
    answer = answer_to(room.port, b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1:%d" % room.port, then_end=True)
    status, error = status_and_error(answer)
    assert status == b"400" and "empty line" in error["message"], answer


def test_a_tls_handshake_on_the_plain_http_port_gets_a_json_400_at_once(room):
    # A client given https:// for this plain-HTTP server: its ClientHello holds no line break to end a request line
    # on, so the room held it until the read timeout (60 s) and then closed without a word.
    answer = answer_to(room.port, client_hello())
    status, error = status_and_error(answer)
    assert status == b"400" and "http://" in error["message"] and "https://" in error["message"], answer
    assert requests.get(room.base_url + "/models", timeout=PATIENCE).status_code == 200


# A request its head says is a POST of this many bytes, whose body is a whole request of its own: were the head's
# Content-Length lost, that body would be answered as the next request on the connection.
SMUGGLED = b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"


@pytest.mark.parametrize("bad_line", [b"X-Note : a\r\n", b"X-Note\t: a\r\n", b"X-Note: a\rb\r\n", b"X-Note\r\n",
                                      b" X-Note: a\r\n"],
                         ids=["space before the colon", "tab before the colon", "bare CR", "no colon",
                              "a first line that starts with a space"])
def test_a_header_line_that_is_no_name_and_value_is_a_400_and_its_body_never_a_request(room, bad_line):
    # http.server reads the headers with the email package, which ended them at the first line that was no
    # "Name: value" and dropped the lines after it, Content-Length among them: the room answered 411 to a POST with
    # no body, then read the body as a request of its own and answered it too (RFC 9112 §5.1: a 400).
    answer = answer_to(room.port, b"POST /v1/chat/completions HTTP/1.1\r\n" + bad_line + b"Host: 127.0.0.1\r\n"
                                  b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(SMUGGLED)
                                  + SMUGGLED)
    assert answer.count(b"HTTP/1.1 ") == 1, answer  # one request, one answer
    status, error = status_and_error(answer)
    assert status == b"400" and "Name: value" in error["message"], answer


@pytest.mark.parametrize("bad_header", [b"X-Note: a\r\n b\r\n", b"X-Note: a\r\n\tb\r\n", b"X-Note: a\x00b\r\n"],
                         ids=["folded with a space", "folded with a tab", "NUL"])
def test_a_header_value_holding_a_line_break_or_a_nul_is_a_400(room, bad_header):
    # RFC 9110 §5.5 and RFC 9112 §5.2: a value with CR, LF or NUL in it (an obsolete folded line) is refused or each
    # of them replaced by a space; the room kept them, and answered.
    body = json.dumps(BODY).encode()
    answer = answer_to(room.port, b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                                  b"application/json\r\n" + bad_header + b"Content-Length: %d\r\nConnection: close"
                                  b"\r\n\r\n" % len(body) + body)
    status, error = status_and_error(answer)
    assert status == b"400" and "line break or a NUL" in error["message"], answer


def test_a_request_line_without_its_version_gets_a_400_with_a_status_line(room):
    answer = answer_to(room.port, b"GET /v1/models\r\n\r\n")
    status, error = status_and_error(answer)
    assert status == b"400" and "HTTP version" in error["message"], answer


def expecting(port: int, head: bytes) -> tuple[socket.socket, bytes]:
    """A connection that sent `head` (a request with "Expect: 100-continue" and a body still to come) and nothing
    more, and the first answer that came for it: a whole interim "100 Continue", or a final answer as far as it came
    in one read."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=PATIENCE)
    sock.sendall(head)
    first = sock.recv(65536)
    return sock, first


EXPECT = b"Expect: 100-continue\r\n"


REFUSED_FROM_THE_HEAD = pytest.mark.parametrize(("path", "host", "media_type", "length", "status"), [
    (b"/v1/nowhere", b"127.0.0.1", b"application/json", 10, b"404"),
    (b"/v1/chat/completions", b"127.0.0.1", b"application/json", 99999999, b"413"),
    (b"/v1/chat/completions", b"127.0.0.1", b"text/plain", 10, b"415"),
    (b"/v1/chat/completions", b"evil.example", b"application/json", 10, b"403"),
], ids=["unknown path", "too large", "not JSON", "foreign Host"])


@REFUSED_FROM_THE_HEAD
def test_a_request_refused_from_its_head_gets_the_refusal_not_100_continue(room, path, host, media_type, length,
                                                                           status):
    # RFC 9110 §10.1.1: "100 Continue" asks the client for a body; a server that refuses from the head alone answers
    # the refusal instead. The room sent "100 Continue" first, then refused the body it had invited.
    head = (b"POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n"
            % (path, host, media_type, length))
    sock, first = expecting(room.port, head + EXPECT + b"\r\n")
    with sock:
        assert first.startswith(b"HTTP/1.1 " + status + b" "), first
        assert b"Connection: close" in first.partition(b"\r\n\r\n")[0], first


def test_a_request_it_will_read_gets_100_continue_before_its_body(room):
    # The interim answer went into the handler's write buffer and stayed there until the final answer, so a client
    # that waits for it (curl, up to a second) waited for nothing; one that waits longer, for ever.
    body = json.dumps(BODY).encode()
    head = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n" % len(body))
    sock, first = expecting(room.port, head + EXPECT + b"\r\n")
    with sock:
        sock.settimeout(5)  # the 100 comes at once; the room's own read_timeout is far longer
        while first.count(b"\r\n\r\n") < 1:
            first += sock.recv(65536)
        assert first == b"HTTP/1.1 100 Continue\r\n\r\n", first
        sock.settimeout(PATIENCE)
        sock.sendall(body)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200 ") and b'"hi"' in answer, answer[:300]


def read_to_the_end(sock: socket.socket) -> bytes:
    """What comes on `sock` until the server ends its side (PATIENCE at most for each read)."""
    answer = b""
    while chunk := sock.recv(65536):
        answer += chunk
    return answer


@REFUSED_FROM_THE_HEAD
def test_a_refusal_to_a_client_waiting_for_100_continue_ends_the_connection(path, host, media_type, length, status):
    # The room then waited for the body it had not asked for, until its read_timeout: a client that kept the
    # connection open (waiting for the 100, or for the server to end it as its Connection: close said) held the
    # room's thread that long. Its read_timeout here is longer than any wait of this test's: only the room's own
    # choice ends the connection sooner.
    head = (b"POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n"
            % (path, host, media_type, length))
    with ClassroomServer(responder=echo, models=MODELS, read_timeout=10 * PATIENCE) as patient:
        sock, first = expecting(patient.port, head + EXPECT + b"\r\n")
        with sock:  # kept open, sending nothing, until the room has ended the connection and its thread
            answer = first + read_to_the_end(sock)
            assert answer.startswith(b"HTTP/1.1 " + status + b" ") and answer.endswith(b"}"), answer
            wait_for(lambda: not patient._httpd._open, "the connection's thread to end")


def test_a_body_sent_without_waiting_for_100_continue_is_read_past_after_the_refusal():
    # RFC 9110 §10.1.1 lets a client send its body without waiting for the 100: the room ends its side at the refusal
    # and reads what comes until the client closes, so no reset takes the answer from under the client's reader.
    body = b"{" + b" " * 100_000 + b"}"
    head = (b"POST /v1/nowhere HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n" % len(body))
    with ClassroomServer(responder=echo, models=MODELS, read_timeout=10 * PATIENCE) as patient:
        with socket.create_connection(("127.0.0.1", patient.port), timeout=PATIENCE) as sock:
            sock.sendall(head + EXPECT + b"\r\n" + body)
            answer = read_to_the_end(sock)
        assert answer.startswith(b"HTTP/1.1 404 ") and answer.endswith(b"}"), answer
        wait_for(lambda: not patient._httpd._open, "the connection's thread to end")
