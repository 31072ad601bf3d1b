"""weather_service.py: a real HTTP weather API on loopback, that misbehaves when told to and stops cleanly."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import socket
import sys
import threading
import time
from contextlib import ExitStack

import pytest
import requests

from tinyagent.toolkit.weather_api import CITIES, WeatherService, find_city

from .conftest import PATIENCE, ServerProcess, dripped_until_closed, ended_cleanly, port_refuses_connections
from .serving_process import wait_for


@pytest.fixture
def service():
    with WeatherService() as running:
        yield running


def get(service: WeatherService, path: str = "/weather", **params) -> requests.Response:
    return requests.get(service.url(path), params=params, timeout=PATIENCE)


def test_a_city_is_found_in_chinese_or_english_with_or_without_its_suffix():
    assert find_city("杭州").en == "Hangzhou"
    assert find_city("hangzhou ").zh == "杭州"
    assert find_city("杭州市").en == find_city("Hangzhou City").en == "Hangzhou"
    assert find_city("火星") is None


def test_a_report_holds_the_city_the_condition_and_the_course_day(service):
    response = get(service, city="杭州")
    assert response.status_code == 200 and response.headers["Content-Type"].startswith("application/json")
    assert response.json() == {
        "city": "杭州", "city_en": "Hangzhou", "condition": "light rain", "condition_zh": "小雨",
        "temperature_c": 22, "humidity_pct": 85, "wind": "east wind, force 2", "observed_at": "2026-06-30T19:00:00",
    }


@pytest.mark.parametrize(
    ("path", "params", "status", "says"),
    [
        ("/weather", {"city": "火星"}, 404, "unknown city: 火星"),
        ("/weather", {}, 400, "needs a city"),
        ("/weather", {"city": "  "}, 400, "needs a city"),
        ("/forecasts", {"city": "杭州"}, 404, "no such endpoint"),
    ],
)
def test_a_bad_request_gets_a_json_error_with_the_right_status(service, path, params, status, says):
    response = get(service, path, **params)
    assert response.status_code == status and says in response.json()["error"]


def test_health_and_methods(service):
    assert get(service, "/health").json() == {"ok": True}
    response = requests.post(service.url("/weather"), json={"city": "杭州"}, timeout=PATIENCE)
    assert response.status_code == 405 and "only GET" in response.json()["error"]


def raw_reply(service: WeatherService, request: bytes) -> bytes:
    """Send `request` as it is (requests would tidy it up) and read the reply until the service closes."""
    with socket.create_connection(("127.0.0.1", service.port), timeout=PATIENCE) as client:
        client.sendall(request)
        reply = b""
        while chunk := client.recv(65536):
            reply += chunk
    return reply


@pytest.mark.parametrize(("request_bytes", "status"), [
    (b"GET http://[/weather HTTP/1.1\r\n\r\n", b"400"),  # urlsplit raised: a traceback and no reply
    (b"OPTIONS /weather HTTP/1.1\r\n\r\n", b"405"),  # was the standard library's 501, an HTML page
    (b"FOO /weather HTTP/1.1\r\n\r\n", b"501"),
    (b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n", b"414"),
])
def test_a_request_the_standard_library_refuses_is_answered_in_json(service, request_bytes, status):
    head, _, body = raw_reply(service, request_bytes).partition(b"\r\n\r\n")
    assert head.split(b" ")[1] == status and b"application/json" in head
    assert "error" in json.loads(body)


def test_head_gets_405_headers_and_no_body(service):
    head, _, body = raw_reply(service, b"HEAD /weather HTTP/1.1\r\n\r\n").partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 405") and body == b""


def test_a_request_that_stalls_is_dropped_not_held_for_ever(monkeypatch):
    from tinyagent.toolkit import weather_api

    assert weather_api._Handler.timeout == 30  # the service's own rule (a setting of None held a half request)
    monkeypatch.setattr(weather_api._Handler, "timeout", 0.5)  # the same rule, sooner
    with WeatherService() as service:
        # Half a request: the headers never end. The connection once stayed open, a thread held, until the client left.
        reply = raw_reply(service, b"GET /health HTTP/1.1\r\nHost: x\r\n")
        assert reply == b""  # closed without a reply, once the half request had waited its time
        assert get(service, "/health").json() == {"ok": True}


def test_a_request_that_drips_is_dropped_at_its_deadline_not_held_for_ever(monkeypatch):
    from tinyagent.toolkit import weather_api

    monkeypatch.setattr(weather_api._Handler, "timeout", 1.0)  # the same rule, sooner
    with WeatherService() as service, socket.create_connection(("127.0.0.1", service.port), timeout=60) as client:
        # A header byte every 0.1 s, each well within the timeout: once, each byte started the wait anew, and a
        # byte every 5 s held the thread and its descriptor for ever.
        client.sendall(b"GET /weather?city=Beijing HTTP/1.0\r\nHost: 127.0.0.1\r\nX-Pad: ")
        assert dripped_until_closed(client), "the connection was still open after 60 s of a header sent a byte at a time"
        assert get(service, "/health").json() == {"ok": True}


DESCRIPTORS = 64
CAP = DESCRIPTORS // 4  # what connection_cap() gives for 64 descriptors
LIMITED_SERVICE = f"""
import resource
resource.setrlimit(resource.RLIMIT_NOFILE, ({DESCRIPTORS}, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
from tinyagent.toolkit.weather_api import WeatherService
service = WeatherService()
print(f"port {{service.port}}", flush=True)
service.serve_forever()
"""
HALF_A_REQUEST = b"GET /weather?city=Beijing HTTP/1.0\r\nHost: 127.0.0.1\r\nX-Pad: "


@pytest.mark.skipif(sys.platform == "win32", reason="sets the descriptor limit with the resource module")
def test_past_its_cap_a_connection_gets_a_503_and_the_descriptors_stay_free():
    # Connections that never finish their request held a thread and a descriptor each, with no cap: under the
    # usual limit of 1,024 descriptors, 1,024 of them left the service unable to accept a GET /weather at all.
    with ServerProcess(code=LIMITED_SERVICE) as process:
        port = int(process.wait_for_line("port ").split()[1])

        def weather() -> requests.Response:
            return requests.get(f"http://127.0.0.1:{port}/weather", params={"city": "Beijing"}, timeout=PATIENCE)

        with ExitStack() as held:
            for _ in range(CAP):  # each holds a thread: its request begun, never finished
                held.enter_context(socket.create_connection(("127.0.0.1", port), timeout=PATIENCE)).sendall(
                    HALF_A_REQUEST)
            wait_for(lambda: weather().status_code == 503, "a 503 once every thread is held")
            busy = weather()
            assert busy.status_code == 503 and busy.headers["Retry-After"] == "1"
            assert "as many connections" in busy.json()["error"]

            # A request that arrives after its 503 (answered as the connection was accepted) leaves the 503 to be
            # read: the server closed at once, the request met a closed socket, and the reset that sent took the
            # answer with it ("Connection reset by peer").
            for _ in range(3):
                with socket.create_connection(("127.0.0.1", port), timeout=PATIENCE) as late:
                    answered = select.poll()
                    answered.register(late, select.POLLIN)
                    assert answered.poll(PATIENCE * 1000)
                    late.sendall(b"GET /weather?city=Beijing HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
                    assert ended_cleanly(late)
                    assert late.recv(65536).startswith(b"HTTP/1.0 503 ")

            # More than the process has descriptors: each is refused and closed once its client closes it.
            for _ in range(2 * DESCRIPTORS):
                with socket.create_connection(("127.0.0.1", port), timeout=PATIENCE) as more:
                    more.sendall(HALF_A_REQUEST)
                    assert more.recv(65536).startswith(b"HTTP/1.0 503 ")
            kept = socket.create_connection(("127.0.0.1", port), timeout=PATIENCE)  # open past the stop below
            assert kept.recv(65536).startswith(b"HTTP/1.0 503 ")
        try:
            # The holders let go: the service answers again.
            wait_for(lambda: weather().status_code == 200, "a report once the holders are gone")
            assert weather().json()["city_en"] == "Beijing"
            assert process.stop(signal.SIGTERM) == 0, process.output()
        finally:
            kept.close()


def test_a_fault_applies_to_the_next_requests_then_the_service_recovers(service):
    service.inject(status=503, times=2)
    assert [get(service, city="北京").status_code for _ in range(3)] == [503, 503, 200]
    assert service.requests == 3


def test_faults_queue_up_in_order_and_clear_faults_ends_a_lasting_one(service):
    service.inject(body="not_json", times=1)
    service.inject(body="wrong_shape")  # until cleared
    first, second, third = (get(service, city="北京") for _ in range(3))
    assert first.status_code == 200 and first.headers["Content-Type"].startswith("text/html")
    assert second.json() == third.json() == {"status": "1", "info": "OK", "lives": []}
    service.clear_faults()
    assert get(service, city="北京").json()["condition"] == "sunny"


def test_a_huge_reply_is_huge_and_a_dropped_one_has_no_reply(service):
    service.inject(body="huge", times=1)
    assert int(get(service, city="北京").headers["Content-Length"]) > 5_000_000
    service.inject(body="drop", times=1)
    with pytest.raises(requests.ConnectionError):
        get(service, city="北京")
    assert get(service, city="北京").status_code == 200


def test_a_trickling_reply_arrives_whole_but_in_small_pieces(service):
    service.inject(body="trickle", times=1)
    with requests.get(service.url("/weather"), params={"city": "杭州"}, timeout=PATIENCE, stream=True) as response:
        pieces = list(iter(lambda: response.raw.read1(1024), b""))  # each read returns what has arrived
    assert len(pieces) > 5 and max(len(piece) for piece in pieces) <= 16
    assert json.loads(b"".join(pieces))["condition_zh"] == "小雨"


def test_a_slow_reply_is_late_and_a_client_timeout_sees_it(service):
    service.inject(delay_s=30, times=1)
    with pytest.raises(requests.ReadTimeout):
        requests.get(service.url("/weather"), params={"city": "北京"}, timeout=(PATIENCE, 0.3))
    assert get(service, city="北京").status_code == 200  # the slow one was the only one


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"body": "teapot"}, "body must be one of"),
        ({"status": 99}, "status must be an HTTP status"),
        ({"delay_s": -1}, "delay_s must be"),
        # NaN was taken and waited for nothing; inf, or 1e20, broke the handler on a wait too long for a lock.
        ({"delay_s": float("nan")}, "delay_s must be a number of seconds from 0 to 3600"),
        ({"delay_s": float("inf")}, "delay_s must be"),
        ({"delay_s": 1e20}, "delay_s must be"),
        ({"delay_s": True}, "delay_s must be"),
        ({"times": 0}, "times must be"),
    ],
)
def test_a_bad_fault_is_refused_at_once(options, says):
    service = WeatherService()
    try:
        with pytest.raises(ValueError, match=says):
            service.inject(**options)
    finally:
        service.stop()


def test_stop_cuts_a_slow_request_short_and_frees_the_port():
    service = WeatherService().start()
    port = service.port
    service.inject(delay_s=600)
    errors: list[BaseException] = []

    def slow_client():
        try:
            requests.get(service.url("/weather"), params={"city": "北京"}, timeout=PATIENCE)
        except requests.RequestException as exc:
            errors.append(exc)

    client = threading.Thread(target=slow_client)
    try:
        client.start()
        while service.requests == 0:  # wait until the request is being served (no sleep guessing)
            time.sleep(0.01)
        started = time.monotonic()
        service.stop()
        assert time.monotonic() - started < 60  # far less than the 600 s the request would have waited
    finally:
        service.stop()
        client.join(PATIENCE)
    assert errors, "the client got no reply, and it was told so"
    assert port_refuses_connections(port)
    assert not service.running and "stopped" in repr(service) and str(port) not in repr(service)


def test_a_stopped_service_cannot_start_again():
    service = WeatherService()
    service.stop()
    with pytest.raises(RuntimeError, match="create a new one"):
        service.start()


def test_the_table_has_a_rainy_and_a_dry_city():
    conditions = {city.en: city.condition_zh for city in CITIES}
    assert "雨" in conditions["Hangzhou"] and "雨" not in conditions["Beijing"]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_the_command_serves_until_a_signal_even_with_sigint_ignored(signum):
    with ServerProcess("weather-service", "--port", "0", ignore_sigint=True) as process:
        line = process.wait_for_line("weather service on")
        url = re.search(r"(http://127\.0\.0\.1:(\d+)/weather)", line)
        assert url, process.output()
        process.wait_for_line("Press Ctrl-C")
        report = requests.get(url.group(1), params={"city": "Hangzhou"}, timeout=PATIENCE).json()
        assert report["condition_zh"] == "小雨"
        assert process.stop(signum) == 0, process.output()
        assert f"stopped ({signal.Signals(signum).name})" in process.stderr
        assert port_refuses_connections(int(url.group(2)))


def test_the_command_answers_only_for_its_own_names():
    # A page on another site that points its own name at 127.0.0.1 (DNS rebinding) read the service: 200.
    with ServerProcess("weather-service", "--port", "0") as process:
        url = re.search(r"(http://127\.0\.0\.1:(\d+)/weather)", process.wait_for_line("weather service on"))
        port = url.group(2)
        for name in ("evil.example", "127.0.0.1.nip.io"):
            answer = requests.get(url.group(1), params={"city": "Hangzhou"}, headers={"Host": f"{name}:{port}"},
                                  timeout=PATIENCE)
            assert answer.status_code == 421 and "answers only for" in answer.json()["error"]
        for name in ("localhost", "127.0.0.1"):
            answer = requests.get(url.group(1), params={"city": "Hangzhou"}, headers={"Host": f"{name}:{port}"},
                                  timeout=PATIENCE)
            assert answer.status_code == 200
        assert process.stop(signal.SIGTERM) == 0


def test_the_command_serves_when_its_output_cannot_show_chinese():
    # Its banner names 杭州 in a URL: with an ASCII-only stdout (LANG=C without UTF-8, PYTHONIOENCODING=ascii) the
    # print raised UnicodeEncodeError and the service never started.
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    with ServerProcess("weather-service", "--port", "0", env=env) as process:
        url = re.search(r"(http://127\.0\.0\.1:\d+/weather)", process.wait_for_line("weather service on")).group(1)
        assert requests.get(url, params={"city": "Hangzhou"}, timeout=PATIENCE).status_code == 200
        assert process.stop(signal.SIGTERM) == 0


def test_the_command_can_be_slow_or_failing_for_every_request():
    with ServerProcess("weather-service", "--port", "0", "--status", "503") as process:
        url = re.search(r"(http://127\.0\.0\.1:\d+/weather)", process.wait_for_line("weather service on")).group(1)
        for _ in range(2):
            assert requests.get(url, params={"city": "北京"}, timeout=PATIENCE).status_code == 503
        assert process.stop(signal.SIGTERM) == 0


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--delay", "-1"], "--delay must be a number of seconds from 0 to 3600"),
        (["--status", "200"], "--status must be an HTTP error status from 400 to 599"),
        (["--port", "70000"], "--port must be a whole number from 0 to 65535"),
        (["--port", "٨٠٨١"], "--port must be a whole number from 0 to 65535"),  # Arabic-Indic: it served on 8081
    ],
)
def test_bad_arguments_are_one_line_and_exit_code_2(args, says, capsys):
    from tinyagent.__main__ import main

    try:
        code = main(["weather-service", *args])
    except SystemExit as exit_:
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2 and says in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_given_hosts_it_answers_only_for_them_and_by_default_for_any():
    def rebound(service: WeatherService) -> requests.Response:  # another site's name pointed at this machine
        return requests.get(service.url("/weather"), params={"city": "杭州"}, timeout=PATIENCE,
                            headers={"Host": f"evil.example:{service.port}"})

    with WeatherService(hosts=("127.0.0.1",)) as guarded, WeatherService() as open_to_all:
        refused = rebound(guarded)
        assert refused.status_code == 421 and "127.0.0.1" in refused.json()["error"]
        assert get(guarded, city="杭州").json()["city"] == "杭州"
        assert rebound(open_to_all).json()["city"] == "杭州"


@pytest.mark.parametrize(("request_line", "status"), [(b"GET /health HTTP/2.0", b"505"), (b"GET", b"400"),
                                                     (b"POST /health", b"400")])
def test_a_malformed_request_line_is_answered_with_a_status_line_and_headers(service, request_line, status):
    # The standard library takes such a line for HTTP/0.9, whose answers are a bare body: no status, no headers.
    head, _, body = raw_reply(service, request_line + b"\r\n\r\n").partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 " + status) and b"application/json" in head, head
    assert "error" in json.loads(body)


def test_the_log_escapes_the_control_characters_a_request_sends(capsys):
    # A client's escape sequence (here one that turns a terminal red) or line break went to stderr as it came.
    with WeatherService(verbose=True) as service:
        raw_reply(service, b"GET /weather?city=\x1b[31mred\x07 HTTP/1.0\r\n\r\n")
        raw_reply(service, b"GET /\x1b[2J HTTP/9.9\r\n\r\n")  # refused by the standard library: log_error
    logged = capsys.readouterr().err
    assert "\x1b" not in logged and "\x07" not in logged and logged.count("\\x1b") == 2, logged
