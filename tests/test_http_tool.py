"""http_tool.py and weather_tool.py: every way an HTTP API call fails is one error Observation the model reads."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from tinyagent import Action, ToolRegistry
from tinyagent.hosting.address import quiet_port_run
from tinyagent.toolkit.http_tool import KINDS, ApiCallFailed, JsonApi
from tinyagent.toolkit.weather_api import WeatherService
from tinyagent.toolkit.weather_tool import WEATHER_SHAPE, weather_tool


@pytest.fixture(scope="module")
def service():
    with WeatherService() as running:
        yield running


@pytest.fixture(autouse=True)
def no_faults_left(service):
    service.clear_faults()
    yield
    service.clear_faults()


class Scripted:
    """A loopback server that answers every GET with `handler(request_handler)`."""

    def __init__(self, handler):
        self.paths: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def do_GET(self):
                outer.paths.append(self.path)
                try:
                    handler(self)
                except OSError:  # the client hung up on purpose (a cap, a timeout)
                    pass

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def observe(tool, text: str = "杭州") -> dict:
    result = ToolRegistry([tool]).run(Action(tool.name, text))
    data = json.loads(result.text)
    assert result.error == ("error" in data)  # the registry sees a failure as a failure
    return data


def test_a_good_reply_passes_on_exactly_the_fields_the_tool_reads(service):
    assert observe(weather_tool(service.base_url)) == {
        "city": "杭州", "city_en": "Hangzhou", "condition": "light rain", "condition_zh": "小雨",
        "temperature_c": 22, "humidity_pct": 85, "wind": "east wind, force 2", "observed_at": "2026-06-30T19:00:00",
    }


@pytest.mark.parametrize(
    ("fault", "kind", "retryable", "status", "says"),
    [
        ({"status": 503}, "status", True, 503,
         "the weather API answered 503 Service Unavailable: the weather service is failing on purpose (503)"),
        ({"status": 429}, "status", True, 429, "answered 429 Too Many Requests"),
        ({"status": 500}, "status", True, 500, "answered 500"),
        ({"status": 403}, "status", False, 403, "answered 403 Forbidden"),
        ({"body": "not_json"}, "not_json", False, None, "answered 200 with a body that is not JSON: '<html>"),
        ({"body": "wrong_shape"}, "bad_shape", False, None, "not the shape the tool reads: city is missing"),
        ({"body": "huge"}, "too_large", False, 200, "the tool reads at most 65536"),
        ({"body": "drop"}, "unreachable", True, None, "cannot be reached"),
        ({"delay_s": 30}, "timeout", True, None, "the weather API did not answer within 0.3 s"),
    ],
)
def test_every_failure_is_one_error_observation_with_kind_and_retryable(service, fault, kind, retryable, status,
                                                                        says):
    service.inject(times=1, **fault)
    data = observe(weather_tool(service.base_url, read_timeout=0.3))
    assert data["error"].startswith("getWeather: ") and says in data["error"], data
    assert (data["kind"], data["retryable"], data.get("status")) == (kind, retryable, status)
    assert set(data) <= {"error", "kind", "retryable", "status"}
    assert kind in KINDS


def test_an_unknown_city_is_the_services_own_words_and_not_retryable(service):
    data = observe(weather_tool(service.base_url), "火星")
    assert data == {"error": "getWeather: the weather API answered 404 Not Found: unknown city: 火星",
                    "kind": "status", "retryable": False, "status": 404}


def test_a_bad_input_never_reaches_the_api(service):
    before = service.requests
    data = observe(weather_tool(service.base_url), "")
    assert "invalid input for getWeather: city is missing" in data["error"] and "example" in data
    data = observe(weather_tool(service.base_url), "x" * 41)
    assert "at most 40" in data["error"]
    assert service.requests == before


def test_a_server_that_is_not_there_is_unreachable_and_retryable():
    port = quiet_port_run()  # free a moment ago, and nothing listens on it
    data = observe(weather_tool(f"http://127.0.0.1:{port}"))
    assert data == {"error": "getWeather: the weather API cannot be reached (connection refused or dropped)",
                    "kind": "unreachable", "retryable": True}


def test_a_connect_timeout_is_a_timeout(monkeypatch):
    tool = weather_tool("http://127.0.0.1:9", connect_timeout=0.7)

    def never_connects(*args, **kwargs):
        raise requests.ConnectTimeout("connect timed out")

    monkeypatch.setattr(tool.api.session, "get", never_connects)
    assert observe(tool) == {"error": "getWeather: could not connect to the weather API within 0.7 s",
                             "kind": "timeout", "retryable": True}


def trickle(request):
    """A valid JSON reply, a byte every 50 ms: each wait is short, the whole reply takes minutes."""
    body = json.dumps({"city": "杭州", "condition": "x", "condition_zh": "x", "temperature_c": 1,
                       "padding": " " * 5000}).encode()
    request.send_response(200)
    request.send_header("Content-Type", "application/json")
    request.send_header("Content-Length", str(len(body)))
    request.end_headers()
    for byte in body:
        request.wfile.write(bytes([byte]))
        request.wfile.flush()
        time.sleep(0.05)


def test_a_trickling_reply_is_cut_by_the_total_timeout():
    with Scripted(trickle) as server:
        data = observe(weather_tool(server.base_url, read_timeout=30, total_timeout=0.5))
    assert data == {"error": "getWeather: the weather API took more than 0.5 s to send its reply",
                    "kind": "timeout", "retryable": True}


def stall_mid_body(request):
    request.send_response(200)
    request.send_header("Content-Type", "application/json")
    request.send_header("Content-Length", "1000")
    request.end_headers()
    request.wfile.write(b'{"city": "')
    request.wfile.flush()
    time.sleep(5)


def test_the_services_trickle_is_cut_by_the_total_timeout_and_passes_without_it(service):
    service.inject(body="trickle", times=2)
    assert observe(weather_tool(service.base_url, read_timeout=5, total_timeout=0.5))["kind"] == "timeout"
    assert observe(weather_tool(service.base_url, read_timeout=5, total_timeout=60))["condition_zh"] == "小雨"


def test_a_reply_that_stalls_mid_body_is_a_read_timeout():
    with Scripted(stall_mid_body) as server:
        data = observe(weather_tool(server.base_url, read_timeout=0.3))
    assert data == {"error": "getWeather: the weather API stopped sending for more than 0.3 s",
                    "kind": "timeout", "retryable": True}


def endless_without_length(request):
    """No Content-Length: the body runs until the server closes, and this one would never stop on its own."""
    request.send_response(200)
    request.send_header("Content-Type", "application/json")
    request.end_headers()
    request.wfile.write(b'{"padding": "')
    for _ in range(10_000):
        request.wfile.write(b"x" * 1024)


def test_a_reply_without_a_length_is_cut_at_the_cap_while_it_streams():
    with Scripted(endless_without_length) as server:
        data = observe(weather_tool(server.base_url, max_bytes=4096))
    assert data == {"error": "getWeather: the weather API's reply is more than 4096 bytes; the tool reads at most "
                             "4096", "kind": "too_large", "retryable": False, "status": 200}


@pytest.mark.parametrize("length", ["³", "1²", "9" * 5000])
def test_a_length_in_digits_other_than_ascii_is_read_as_no_length(length):
    # "³".isdigit() is True and int("³") raises (so does int() of 5,000 digits): the tool failed with a ValueError
    # from its own length check. Now a length that is not one is no length: the body is read to the cap.
    body = json.dumps({"city": "杭州", "condition": "rain", "condition_zh": "雨", "temperature_c": 20}).encode()

    def odd_length(request):
        request.send_response(200)
        request.send_header("Content-Length", length)  # sent as Latin-1, and read as Latin-1
        request.send_header("Connection", "close")
        request.end_headers()
        request.wfile.write(body)
        request.close_connection = True

    with Scripted(odd_length) as server:
        data = observe(weather_tool(server.base_url))
    assert data == {"city": "杭州", "condition": "rain", "condition_zh": "雨", "temperature_c": 20}, data


def redirect(request):
    if request.path.startswith("/elsewhere"):
        request.send_response(200)
        request.end_headers()
        return
    request.send_response(302)
    request.send_header("Location", "/elsewhere?stolen=1")
    request.send_header("Content-Length", "0")
    request.end_headers()


def test_a_redirect_is_not_followed():
    with Scripted(redirect) as server:
        data = observe(weather_tool(server.base_url))
        assert not any(path.startswith("/elsewhere") for path in server.paths)
    assert data["kind"] == "status" and data["status"] == 302 and "a redirect, which the tool does not follow" in \
        data["error"]


def test_extra_fields_are_fine_and_a_wrong_type_is_a_bad_shape():
    def extra(request):
        body = json.dumps({"city": "杭州", "condition": "rain", "condition_zh": "雨", "temperature_c": 20,
                           "new_field_from_upstream": {"nested": True}}).encode()
        request.send_response(200)
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        request.wfile.write(body)

    with Scripted(extra) as server:
        assert observe(weather_tool(server.base_url)) == {"city": "杭州", "condition": "rain", "condition_zh": "雨",
                                                          "temperature_c": 20}
    with Scripted(lambda r: _send_json(r, {"city": "杭州", "condition": "rain", "condition_zh": "雨",
                                            "temperature_c": "20°C"})) as server:
        data = observe(weather_tool(server.base_url))
    assert data["kind"] == "bad_shape" and "temperature_c must be a number, got the string" in data["error"]


def _send_json(request, payload) -> None:
    body = json.dumps(payload).encode()
    request.send_response(200)
    request.send_header("Content-Length", str(len(body)))
    request.end_headers()
    request.wfile.write(body)


def test_a_key_in_the_query_never_reaches_an_error():
    secret = "sk-weather-0123456789"
    with Scripted(lambda r: _send_json(r, [1, 2])) as server:
        api = JsonApi(server.base_url, name="the weather API")
        with pytest.raises(ApiCallFailed) as caught:
            api.get("/weather", {"city": "杭州", "key": secret}, shape=WEATHER_SHAPE)
        assert any(secret in path for path in server.paths)  # it was sent ...
    failure = caught.value
    assert secret not in str(failure) and secret not in failure.observation("getWeather")  # ... never shown
    assert server.base_url not in failure.observation("getWeather") and server.base_url not in repr(api)
    # and the failures where a URL is most tempting to show: nothing listening, a reply that stalls, one that trickles
    failures = []
    nobody = JsonApi(f"http://127.0.0.1:{quiet_port_run()}", name="the weather API")
    with pytest.raises(ApiCallFailed) as caught:
        nobody.get("/weather", {"city": "杭州", "key": secret}, shape=WEATHER_SHAPE)
    failures.append(caught.value)
    for handler, options in ((stall_mid_body, {"read_timeout": 0.3}), (trickle, {"total_timeout": 0.3})):
        with Scripted(handler) as server, pytest.raises(ApiCallFailed) as caught:
            JsonApi(server.base_url, name="the weather API", **options).get(
                "/weather", {"city": "杭州", "key": secret}, shape=WEATHER_SHAPE)
        failures.append(caught.value)
    assert [failure.kind for failure in failures] == ["unreachable", "timeout", "timeout"]
    for failure in failures:
        assert secret not in str(failure) and secret not in failure.observation("getWeather")


def test_only_known_kinds_and_sane_limits():
    with pytest.raises(ValueError, match="kind must be one of"):
        ApiCallFailed("oops", "x", retryable=False)
    for options, says in [({"read_timeout": 0}, "read_timeout"), ({"connect_timeout": -1}, "connect_timeout"),
                          ({"total_timeout": True}, "total_timeout"), ({"max_bytes": 0}, "max_bytes")]:
        with pytest.raises(ValueError, match=says):
            JsonApi("http://127.0.0.1:9", **options)
    with pytest.raises(ValueError, match="http://"):
        JsonApi("127.0.0.1:9")


@pytest.mark.parametrize("status", [200, 500])
def test_json_nested_too_deeply_is_an_api_call_failed_not_a_recursion_error(status):
    # "nothing else escapes" (JsonApi.get): a reply 5,000 deep raised RecursionError, a 200 and a 500's body alike
    def deep(request):
        body = b'{"city": "x", "condition": "c", "condition_zh": "z", "temperature_c": 1, "extra": ' + \
            b"[" * 5_000 + b"]" * 5_000 + b"}"
        request.send_response(status)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        request.wfile.write(body)

    with Scripted(deep) as server:
        with pytest.raises(ApiCallFailed) as failed:
            JsonApi(server.base_url, name="the weather API").get("/weather", {"city": "x"}, shape=WEATHER_SHAPE)
        data = observe(weather_tool(server.base_url))
    assert failed.value.kind == ("not_json" if status == 200 else "status")
    assert data["kind"] == failed.value.kind and "Recursion" not in data["error"]


def test_a_city_that_cannot_be_put_in_a_url_is_an_error_observation_of_the_tool():
    data = observe(weather_tool("http://127.0.0.1:9"), '{"city": "\\ud800"}')  # a lone surrogate, as JSON spells it
    assert data["kind"] == "bad_input" and data["retryable"] is False and "could not be sent" in data["error"]


def test_nan_in_a_reply_is_no_json_and_a_long_reason_phrase_is_cut():
    # Python's json reads NaN, JSON has none: it reached the model in the Observation; and a 60 KB reason phrase
    # made a 60 KB Observation
    def nan(request):
        body = b'{"city": "x", "condition": "c", "condition_zh": "z", "temperature_c": NaN}'
        request.send_response(200)
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        request.wfile.write(body)

    def long_reason(request):
        request.send_response(503, "Busy " * 12_000)
        request.send_header("Content-Length", "0")
        request.end_headers()

    with Scripted(nan) as server:
        assert observe(weather_tool(server.base_url))["kind"] == "not_json"
    with Scripted(long_reason) as server:
        data = observe(weather_tool(server.base_url))
    assert data["kind"] == "status" and data["status"] == 503 and len(data["error"]) < 400


def test_a_number_beyond_a_float_is_no_json():
    # 1e400 read as inf and went to the model as Infinity, which is no JSON, in a reply taken as a success
    body = {"city": "x", "condition": "c", "condition_zh": "z", "temperature_c": 1}
    with Scripted(lambda r: _send_json_text(r, json.dumps(body).replace("1}", "1e400}"))) as server:
        data = observe(weather_tool(server.base_url))
    assert data.get("kind") == "not_json" and "1e400" in data["error"], data


def _send_json_text(request, text: str) -> None:
    body = text.encode()
    request.send_response(200)
    request.send_header("Content-Length", str(len(body)))
    request.end_headers()
    request.wfile.write(body)
