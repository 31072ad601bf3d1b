"""`python -m tinyagent doctor` against real servers (classroom, llama.cpp) and broken ones."""

from __future__ import annotations

import io
import json
import time
from http.server import BaseHTTPRequestHandler

import pytest

from tinyagent import load_settings
from tinyagent.__main__ import main
from tinyagent.doctor import FAIL, OK, SKIP, WARN, diagnose, run_doctor
from tinyagent.settings import Settings

from .conftest import LoopbackHttp, completion

KEY = "sk-doctor-SECRET-77aa01bc"
REQUIRED = ("reachable", "key accepted", "model exists", "reply")


def statuses(checks):
    return {check.name: check.status for check in checks}


def report(settings):
    out = io.StringIO()
    code = run_doctor(settings, out=out, timeout=10)
    return code, out.getvalue()


def settings_for(url, key=KEY, model="test-model"):
    return Settings(api_url=url, api_key=key, model=model, source="test")


def test_classroom_model_passes_every_check_but_the_grammar_and_schema_it_reads_and_does_not_follow():
    checks = diagnose(load_settings(notice=False))
    found = statuses(checks)
    assert list(found) == [*REQUIRED, "stop honoured", "usage", "streaming", "tool_calls", "grammar", "json_schema"]
    assert {name: status for name, status in found.items() if status != OK} == {"grammar": WARN, "json_schema": WARN}
    details = {check.name: check for check in checks}
    assert details["grammar"].detail.startswith("accepted, but not followed")
    assert "llama.cpp" in details["grammar"].fix and "vLLM" in details["grammar"].fix
    assert "OpenAI's structured outputs" in details["json_schema"].fix


def test_the_doctor_says_its_exit_codes_in_its_help(capsys):
    with pytest.raises(SystemExit):
        main(["doctor", "--help"])
    said = " ".join(capsys.readouterr().out.split())
    assert "Exit code 0 when every required check passed, 1 when the endpoint failed one, 2 for a bad option or " \
           "settings that cannot be used" in said, said


def test_command_line_doctor_on_the_classroom_model_exits_0(capsys):
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "All required checks passed" in out
    for name in ("reachable", "stop honoured", "usage", "streaming", "tool_calls"):
        assert f"\n{name}" in out


def test_local_llama_cpp_passes_but_warns_about_tool_calls(local_model):
    settings = Settings(api_url=local_model.chat_url, api_key=local_model.api_key, model=local_model.model, source="test")
    out = io.StringIO()
    code, text = run_doctor(settings, out=out, timeout=60), out.getvalue()
    found = statuses(diagnose(settings, timeout=60))
    assert code == 0, text
    assert all(found[name] == OK for name in REQUIRED)
    assert found["stop honoured"] == OK
    assert found["usage"] == OK
    assert found["streaming"] == OK
    assert found["tool_calls"] == WARN  # llama.cpp takes `tools` but SmolLM2 answers in text
    assert found["grammar"] == OK and found["json_schema"] == OK  # llama.cpp follows both (lesson 23)
    assert "How to fix:" in text and "- tool_calls (WARN): native function calling" in text


def test_local_llama_cpp_without_its_key_fails_key_accepted_and_says_where_the_key_is(local_model):
    # The local model answers only requests with its key: a .env from before, with TINYAGENT_API_KEY empty, is refused,
    # and the fix names the command that prints the key, not a provider's page.
    settings = Settings(api_url=local_model.chat_url, api_key=None, model=local_model.model, source="test")
    code, text = report(settings)
    found = statuses(diagnose(settings, timeout=60))
    assert code == 1, text
    assert found["reachable"] == OK and found["key accepted"] == FAIL, text
    assert "- key accepted (FAIL): " in text and "local-model" in text.split("- key accepted (FAIL): ")[1], text


def test_local_llama_cpp_through_the_environment(local_model, monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TINYAGENT_OFFLINE", raising=False)
    for line in local_model.env_lines().splitlines():  # exactly what `local-model` tells a learner
        name, _, value = line.partition("=")
        monkeypatch.setenv(name, value)
    assert main(["doctor", "--timeout", "60"]) == 0
    assert "All required checks passed" in capsys.readouterr().out


def test_nothing_listening_fails_reachable_and_skips_the_rest():
    code, text = report(settings_for("http://127.0.0.1:9/v1"))
    assert code == 1
    assert "reachable      FAIL" in text
    assert "check TINYAGENT_API_URL" in text
    assert "Required checks failed: reachable, key accepted, model exists, reply." not in text  # skipped ≠ failed
    assert "Required checks failed: reachable." in text


def test_refused_key_fails_and_never_shows_the_key(scripted_server, capfd):
    scripted_server.reply((401, {"error": {"message": f"Incorrect API key provided: {KEY}"}}))
    code, text = report(settings_for(scripted_server.url))
    assert code == 1
    found = statuses(diagnose(settings_for(scripted_server.url)))
    assert found["reachable"] == OK and found["key accepted"] == FAIL and found["reply"] == SKIP
    assert "TINYAGENT_API_KEY" in text
    out, err = capfd.readouterr()
    for shown in (text, out, err):
        assert KEY not in shown and KEY[-8:] not in shown
    assert "set (not shown)" in text


def test_wrong_model_or_url_fails_model_exists(scripted_server):
    scripted_server.reply((404, {"error": {"message": "The model `gpt-5-mini-typo` does not exist"}}))
    code, text = report(settings_for(scripted_server.url, model="gpt-5-mini-typo"))
    assert code == 1
    assert "model exists   FAIL" in text and "TINYAGENT_MODEL" in text


def test_html_page_instead_of_the_api_fails_reply(scripted_server):
    scripted_server.reply((200, "<!DOCTYPE html><html><body>Welcome to nginx!</body></html>", {"Content-Type": "text/html"}))
    code, text = report(settings_for(scripted_server.url))
    assert code == 1
    assert "reply          FAIL" in text and "an HTML page" in text
    assert "OpenAI-compatible /chat/completions" in text


def test_server_ignoring_stop_and_stream_and_tools_only_warns(scripted_server):
    # Always the same JSON, whatever the request says: no stop, no SSE, no tool_calls, no usage.
    scripted_server.reply((200, completion("Hello there, dear customer, how can I help?", usage={})))
    code, text = report(settings_for(scripted_server.url))
    found = statuses(diagnose(settings_for(scripted_server.url)))
    assert code == 0, text  # tinyagent works with it, with the client cutting at stop
    assert found["stop honoured"] == WARN and "tinyagent cut the reply itself" in text
    assert found["usage"] == WARN
    assert found["streaming"] == WARN and "not text/event-stream" in text
    assert found["tool_calls"] == WARN
    assert found["grammar"] == WARN and found["json_schema"] == WARN and "accepted, but not followed" in text
    assert "All required checks passed" in text


def test_rate_limited_server_fails_reply_with_advice(scripted_server):
    scripted_server.reply((429, {"error": {"message": "quota exceeded"}}, {"Retry-After": "0"}))
    code, text = report(settings_for(scripted_server.url))
    assert code == 1
    assert "reply          FAIL" in text and "quota" in text


def test_incomplete_settings_fail_before_any_request(monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TINYAGENT_OFFLINE", raising=False)
    monkeypatch.delenv("TINYAGENT_API_URL", raising=False)
    monkeypatch.setenv("TINYAGENT_API_KEY", KEY)
    monkeypatch.setenv("TINYAGENT_MODEL", "m")
    assert main(["doctor"]) == 2  # the settings' mistake, as in ask; 1 says the provider failed a check
    out = capsys.readouterr().out
    assert "settings  FAIL" in out and "TINYAGENT_API_URL is not" in out
    assert KEY not in out


@pytest.mark.parametrize("listed", [["other-model"], []])
def test_model_missing_from_the_models_list_warns(scripted_server, monkeypatch, listed):
    from tinyagent import doctor

    listing = json.dumps({"object": "list", "data": [{"id": name} for name in listed]}).encode()
    monkeypatch.setattr(doctor, "_get_models", lambda *a, **k: (200, listing, ""))
    scripted_server.reply((200, completion("Hello there, dear customer.")))
    found = statuses(diagnose(settings_for(scripted_server.url)))
    assert found["model exists"] == (WARN if listed else OK)


def sse(*chunks: str):
    """A handler that answers with Server-Sent Events carrying these `data:` payloads, then [DONE]."""

    def handler(request):
        body = "".join(f"data: {chunk}\n\n" for chunk in (*chunks, "[DONE]")).encode()
        request.send_response(200)
        request.send_header("Content-Type", "text/event-stream")
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        request.wfile.write(body)

    return handler


@pytest.mark.parametrize("chunk", ["[1, 2]", '{"choices": 5}', '{"choices": ["x"]}',
                                   '{"choices": [{"delta": "hi"}]}', '{"choices": [{"delta": {"content": 7}}]}',
                                   "[" * 100_000 + "]" * 100_000, "not json"])
def test_a_stream_of_the_wrong_shape_warns_instead_of_crashing(scripted_server, chunk):
    plain = (200, completion("Hello there, dear customer, how can I help?"))
    scripted_server.reply(plain, plain, plain, sse('{"choices": [{"delta": {"content": "Hi"}}]}', chunk), plain)
    code, text = report(settings_for(scripted_server.url))
    assert code == 0, text
    assert "streaming      WARN" in text and "the stream broke" in text


def keep_alive_for_ever(request):
    """A stream that never ends: a ": keep-alive" comment every 0.2 s until the client goes away (or 60 s)."""
    request.send_response(200)
    request.send_header("Content-Type", "text/event-stream")
    request.end_headers()
    for _ in range(300):
        try:
            request.wfile.write(b": keep-alive\n\n")
            request.wfile.flush()
        except OSError:
            return
        time.sleep(0.2)


def test_a_stream_that_never_ends_warns_once_its_time_is_up(scripted_server):
    plain = (200, completion("Hello there, dear customer, how can I help?"))
    scripted_server.reply(plain, plain, plain, keep_alive_for_ever, plain)
    checks = {check.name: check for check in diagnose(settings_for(scripted_server.url), timeout=1)}
    assert checks["streaming"].status == WARN and "did not end within 1 s" in checks["streaming"].detail


@pytest.mark.parametrize("listing", [b"[1, 2]", b'{"data": 5}', b'{"data": [7, null]}',
                                     b"[" * 100_000 + b"]" * 100_000, b"\xff not text"])
def test_a_models_list_of_the_wrong_shape_is_ignored(scripted_server, monkeypatch, listing):
    from tinyagent import doctor

    monkeypatch.setattr(doctor, "_get_models", lambda *a, **k: (200, listing, ""))
    scripted_server.reply((200, completion("Hello there, dear customer.")))
    found = statuses(diagnose(settings_for(scripted_server.url)))
    assert found["model exists"] == OK


def test_a_stream_holding_nan_warns_and_names_it(scripted_server):
    # The course's client refuses a chunk holding NaN (not JSON); the doctor must not call that stream fine.
    plain = (200, completion("Hello there, dear customer, how can I help?"))
    scripted_server.reply(plain, plain, plain, sse('{"choices": [{"delta": {"content": "Hi"}}]}',
                                                   '{"choices": [], "usage": {"cost": NaN}}'), plain)
    code, text = report(settings_for(scripted_server.url))
    assert code == 0, text
    assert "streaming      WARN" in text and "holds NaN, which JSON does not allow" in text


@pytest.mark.parametrize("key", ["sk-abc def", "sk-ké", "sk-a\nb", "sk-\x01", "sk-\udcff"],
                         ids=["space", "not ascii", "newline", "control", "not text"])
def test_a_key_that_cannot_go_in_a_header_is_a_failed_check_not_a_traceback(key):
    # LlmClient's ConfigurationError escaped diagnose(): `python -m tinyagent doctor` ended in a traceback.
    code, text = report(settings_for("http://127.0.0.1:1/v1", key=key))
    assert code == 2, text  # the settings' mistake, found before any request: as a command's bad input
    assert "key accepted   FAIL    the API key cannot be sent in an HTTP header: its character" in text
    assert "reachable      SKIP    not tried: the key cannot be sent" in text
    assert "Required checks failed: key accepted." in text
    assert key not in text and key[3:] not in text


def test_the_doctor_command_reports_a_key_with_a_space_as_a_failed_check(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TINYAGENT_OFFLINE", raising=False)
    monkeypatch.setenv("TINYAGENT_API_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("TINYAGENT_API_KEY", "sk-abc def")
    monkeypatch.setenv("TINYAGENT_MODEL", "m")
    assert main(["doctor"]) == 2  # a key no header can carry is the settings' mistake: no request was sent
    out, err = capsys.readouterr()
    assert "key accepted   FAIL    the API key cannot be sent in an HTTP header: its character 7 is a space" in out
    assert err == ""


def test_a_password_in_the_url_is_never_shown_by_the_doctor():
    # The report's endpoint line and the reachable check's detail showed it, where the settings line hid it.
    code, text = report(settings_for("http://ada:hunter2@127.0.0.1:1/v1"))
    assert code == 1
    assert "hunter2" not in text
    assert "  endpoint: http://ada:***@127.0.0.1:1/v1\n" in text
    assert "reachable      FAIL    could not reach 127.0.0.1:1: connection refused" in text


# -- a hostile server cannot hold the doctor, nor write over its report ---------------------------------------------
class ModelsServer(LoopbackHttp):
    """A loopback server whose GET /models is `handler(request)`; every POST gets a plain completion."""

    def __init__(self, handler):
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                handler(self)

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.dumps(completion("Hello there, dear customer, how can I help?")).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        super().__init__(Handler)


def drip_for_a_minute(request, content_type="application/json", start=b'{"data": ['):
    """Promise a huge body, then send one byte every 0.2 s for 60 s (or until the client hangs up): never a pause
    long enough for a read timeout, and never the end."""
    request.send_response(200)
    request.send_header("Content-Type", content_type)
    request.send_header("Content-Length", "100000000")
    request.end_headers()
    try:
        request.wfile.write(start)
        for _ in range(300):
            time.sleep(0.2)
            request.wfile.write(b" ")
            request.wfile.flush()
    except OSError:
        return


def test_a_models_list_that_drips_for_ever_fails_reachable_once_the_timeout_is_up():
    # `doctor --timeout 3` hung for ever on such a server: requests' timeout is a wait between two bytes only.
    server = ModelsServer(drip_for_a_minute)
    try:
        started = time.monotonic()
        out = io.StringIO()
        code = run_doctor(settings_for(server.url), out=out, timeout=1)
        elapsed = time.monotonic() - started
    finally:
        server.close()
    text = out.getvalue()
    assert elapsed < 30, f"the doctor waited {elapsed:.0f} s for a server that drips for 60 s"
    assert code == 1, text
    assert "reachable      FAIL    GET http://127.0.0.1:" in text
    assert "began to answer, but its body did not come in full within 1 s" in text
    assert "Required checks failed: reachable." in text


def test_a_models_list_larger_than_any_reply_fails_reachable():
    def huge(request):
        body = b'{"data": [' + b'{"id": "' + b"x" * (17 * 2**20) + b'"}]}'
        request.send_response(200)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        try:
            request.wfile.write(body)
        except OSError:
            return

    server = ModelsServer(huge)
    try:
        checks = {check.name: check for check in diagnose(settings_for(server.url), timeout=10)}
    finally:
        server.close()
    assert checks["reachable"].status == FAIL
    assert "is larger than 16 MB" in checks["reachable"].detail


def test_a_stream_that_drips_for_ever_warns_once_the_timeout_is_up(scripted_server):
    # iter_lines waited for 512 bytes or a line's end: at a byte every 0.2 s, the deadline was never looked at.
    plain = (200, completion("Hello there, dear customer, how can I help?"))
    stream = lambda request: drip_for_a_minute(request, "text/event-stream", b"data: ")
    scripted_server.reply(plain, plain, plain, stream, plain)
    started = time.monotonic()
    checks = {check.name: check for check in diagnose(settings_for(scripted_server.url), timeout=1)}
    assert time.monotonic() - started < 30
    assert checks["streaming"].status == WARN and "did not end within 1 s" in checks["streaming"].detail


HOSTILE = "stop\r\x1b[2K\x1b[1A\x1b[2KAll required checks passed: tinyagent can use this endpoint.\x1b[8m"


def assert_nothing_a_terminal_obeys(text):
    for hidden in ("\x1b", "\r", "\x07", "\u202e"):
        assert hidden not in text, f"{hidden!r} reached the terminal: {text!r}"


def test_a_finish_reason_and_tool_names_holding_escapes_are_shown_not_obeyed(scripted_server):
    # A server's finish_reason wrote "All required checks passed" over the report's own lines.
    plain = (200, completion("Hello there, dear customer, how can I help?", finish_reason=HOSTILE))
    call = {"id": "c", "type": "function",
            "function": {"name": "\x1b]0;pwned\x07\rX\nY\u202eevil", "arguments": "{}"}}
    tools = (200, completion(None, finish_reason="tool_calls", tool_calls=[call]))
    scripted_server.reply(plain, plain, plain, sse('{"choices": [{"delta": {"content": "Hi"}}]}'), tools, plain)
    code, text = report(settings_for(scripted_server.url))
    assert code == 0, text
    assert_nothing_a_terminal_obeys(text)
    assert "finish_reason=stop\\r\\x1b[2K\\x1b[1A" in text
    assert "tool_calls: \\x1b]0;pwned\\x07\\rX\\nY\\u202eevil" in text


def test_a_server_error_message_holding_escapes_is_shown_on_one_line(scripted_server):
    scripted_server.reply((400, {"error": {"message": "bad \x1b[31mRED\r\nsecond line\u202e"}}))
    code, text = report(settings_for(scripted_server.url))
    assert code == 1, text
    assert_nothing_a_terminal_obeys(text)
    assert "(HTTP 400): bad \\x1b[31mRED\\r\\nsecond line\\u202e\n" in text
