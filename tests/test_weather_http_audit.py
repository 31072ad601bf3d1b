"""The weather service's HTTP handling against what an audit sent it: two Host headers, a request target that is
a whole URL, a Host in capitals or with a user in it, the Python version in every answer and a long request line
logged whole, an empty line before the request, headers cut by the end of the stream, a TLS handshake, and a header
line that is no `Name: value`."""

from __future__ import annotations

import json

import pytest
import requests

from tinyagent.toolkit.weather_api import WeatherService

from .conftest import PATIENCE
from .test_classroom_http_audit import answer_to, client_hello

OWN_NAMES = ("127.0.0.1", "localhost", "[::1]")  # what `python -m tinyagent weather-service` answers for


@pytest.fixture
def service():
    with WeatherService(hosts=OWN_NAMES) as running:
        yield running


def status_and_error(answer: bytes) -> tuple[bytes, str]:
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b"application/json" in head, answer[:300]
    return head.split(b" ", 2)[1], json.loads(body)["error"]


@pytest.mark.parametrize("hosts", [OWN_NAMES, None], ids=["own-names", "any-name"])
def test_two_host_headers_are_a_json_400(hosts):
    # Read first-wins, the first Host passed the check while a proxy in front, reading the last, saw evil.com.
    with WeatherService(hosts=hosts) as service:
        answer = answer_to(service.port, b"GET /weather?city=London HTTP/1.0\r\nHost: 127.0.0.1\r\n"
                                         b"Host: evil.com\r\n\r\n")
    status, error = status_and_error(answer)
    assert status == b"400" and "Host" in error, answer


def test_an_absolute_form_target_is_checked_as_the_host_it_names(service):
    # RFC 9112 §3.2.2: with a whole URL as its target, a request names the URL's host, and Host is ignored.
    foreign = answer_to(service.port, b"GET http://evil.com/weather?city=London HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
    status, error = status_and_error(foreign)
    assert status == b"421" and "answers only for" in error, foreign
    own = answer_to(service.port, b"GET http://127.0.0.1:%d/weather?city=London HTTP/1.0\r\nHost: evil.com\r\n\r\n"
                    % service.port)
    assert own.startswith(b"HTTP/1.0 200 ") and json.loads(own.partition(b"\r\n\r\n")[2])["city"] == "London"


def test_a_host_name_in_capitals_is_the_same_name(service):
    answer = requests.get(service.url("/weather"), params={"city": "London"}, timeout=PATIENCE,
                          headers={"Host": f"LOCALHOST:{service.port}"})
    assert answer.status_code == 200 and answer.json()["city"] == "London"


@pytest.mark.parametrize("host", ["127.0.0.1:{port}@evil.example", "[::1]:{port}@evil.example"])
def test_a_host_with_a_user_in_it_is_refused(service, host):
    # A URL's host is what follows its "@": this names evil.example, and was taken for 127.0.0.1 or [::1].
    answer = requests.get(service.url("/weather"), params={"city": "London"}, timeout=PATIENCE,
                          headers={"Host": host.format(port=service.port)})
    assert answer.status_code == 421


def test_answers_do_not_name_the_python_version_and_a_long_request_line_is_logged_cut(capsys):
    with WeatherService(verbose=True) as service:
        answer = requests.get(service.url("/weather"), params={"city": "London", "pad": "x" * 20_000},
                              timeout=PATIENCE)
    assert answer.status_code == 200
    assert "Python" not in answer.headers["Server"], answer.headers["Server"]
    logged = capsys.readouterr().err
    assert "..." in logged and max(len(line) for line in logged.splitlines()) < 1000, len(logged)


def test_a_request_after_an_empty_line_is_answered(service):
    # RFC 9112 §2.2: a server SHOULD ignore at least one empty line before the request line; it closed unanswered.
    answer = answer_to(service.port, b"\r\nGET /weather?city=London HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
    assert answer.startswith(b"HTTP/1.0 200 "), answer
    assert json.loads(answer.partition(b"\r\n\r\n")[2])["city"] == "London"


def test_a_line_of_spaces_for_a_request_line_gets_a_400(service):
    answer = answer_to(service.port, b"  \r\nGET /weather?city=London HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
    status, error = status_and_error(answer)
    assert status == b"400" and "request line is missing" in error, answer


def test_headers_cut_short_by_the_end_of_the_stream_are_not_answered(service):
    answer = answer_to(service.port, b"GET /weather?city=London HTTP/1.0\r\nHost: 127.0.0.1:%d" % service.port,
                       then_end=True)
    status, error = status_and_error(answer)
    assert status == b"400" and "empty line" in error, answer


def test_a_tls_handshake_gets_a_json_400_at_once(service):
    # Its ClientHello holds no line break to end a request line on: held until the 30 s timeout, closed unanswered.
    answer = answer_to(service.port, client_hello())
    status, error = status_and_error(answer)
    assert status == b"400" and "http://" in error and "https://" in error, answer
    assert service.requests == 0  # refused before any GET was counted


def test_a_request_line_without_its_version_gets_a_400_with_a_status_line(service):
    # HTTP/0.9's "GET /path" alone was answered with the bare report: no status line, no headers
    answer = answer_to(service.port, b"GET /weather?city=London\r\n\r\n")
    status, error = status_and_error(answer)
    assert status == b"400" and "HTTP version" in error, answer


@pytest.mark.parametrize("bad_line", [b"X-Note: a\rb\r\n", b"X-Note\r\n", b"Host : evil.com\r\n"],
                         ids=["bare CR", "no colon", "space before the colon"])
def test_a_header_line_that_is_no_name_and_value_is_a_400_not_the_end_of_the_headers(service, bad_line):
    # The headers ended at the first line that was no "Name: value", and the lines after it went unread: here a
    # second Host, which a proxy in front reading the last one would have taken for the request's (RFC 9112 §5.1).
    answer = answer_to(service.port, b"GET /weather?city=London HTTP/1.0\r\nHost: 127.0.0.1\r\n" + bad_line
                       + b"Host: evil.com\r\n\r\n")
    status, error = status_and_error(answer)
    assert status == b"400" and "Name: value" in error, answer
    assert service.requests == 0


@pytest.mark.parametrize("headers", [{"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "same-site"},
                                     {"Origin": "http://evil.example"}], ids=["cross-site", "same-site", "origin"])
def test_a_web_page_of_another_site_uses_up_no_fault(service, headers):
    # Any page can make the browser send a GET here (an <img>); it used up the fault a lesson injected for its own
    # next call. Refused in JSON before the faults are read; the program's call that follows gets the fault.
    service.inject(status=503, times=1)
    refused = requests.get(service.url("/weather"), params={"city": "London"}, timeout=PATIENCE, headers=headers)
    error = refused.json()["error"]
    assert refused.status_code == 403 and ("another site" in error or "page of" in error), refused.text
    assert requests.get(service.url("/weather"), params={"city": "London"}, timeout=PATIENCE).status_code == 503
    assert requests.get(service.url("/weather"), params={"city": "London"}, timeout=PATIENCE).status_code == 200


def test_a_page_of_the_service_itself_and_a_program_are_served(service):
    own = {"Sec-Fetch-Site": "same-origin", "Origin": f"http://127.0.0.1:{service.port}"}
    answer = requests.get(service.url("/weather"), params={"city": "London"}, timeout=PATIENCE, headers=own)
    assert answer.status_code == 200 and answer.json()["city"] == "London"


def test_two_sec_fetch_site_headers_are_a_json_400(service):
    answer = answer_to(service.port, b"GET /weather?city=London HTTP/1.0\r\nHost: 127.0.0.1\r\n"
                                     b"Sec-Fetch-Site: none\r\nSec-Fetch-Site: cross-site\r\n\r\n")
    status, error = status_and_error(answer)
    assert status == b"400" and "Sec-Fetch-Site" in error, answer
