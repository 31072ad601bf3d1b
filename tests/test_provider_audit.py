"""The path to a real provider, as an audit found it failing: each error names its real cause (never the URL for
what is not the URL's fault), never shows the key, never waits for nothing, and a command's bad settings exit 2.

Every test runs against fake providers on 127.0.0.1 (`scripted_server`, and the servers below).
"""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import time
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler
from itertools import pairwise

import hypothesis
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinyagent import LlmClient, ReActAgent
from tinyagent.__main__ import main
from tinyagent.classroom.server import ClassroomServer, tls_context
from tinyagent.doctor import FAIL, WARN, diagnose, run_doctor
from tinyagent.errors import (
    MIN_SECRET_CHARS,
    NO_KEY_NEEDED,
    AuthenticationError,
    BadResponseError,
    LlmConnectionError,
    LlmError,
    RateLimitError,
    ServerError,
    redact,
)
from tinyagent.protocols.streaming import (
    ReplyStream,
    SplitKeyRedactor,
    StreamedSend,
    chat_streamed,
    open_stream,
)
from tinyagent.settings import Settings
from tinyagent.shop import Shop, shop_registry

from .conftest import LoopbackHttp, completion
from .test_streaming import FakeResponse, chunk, sse

KEY = "sk-audit-SECRET-4e9b21d0"
MESSAGES = [{"role": "user", "content": "hi"}]
PLAIN = (200, completion("Hello there, dear customer, how can I help?"))


def client(server, **options) -> LlmClient:
    options.setdefault("sleep", lambda seconds: None)
    return LlmClient(server.url, KEY, "test-model", **options)


def settings_for(url, key=KEY, model="test-model"):
    return Settings(api_url=url, api_key=key, model=model, source="test")


def checks_of(settings, timeout=10):
    return {check.name: check for check in diagnose(settings, timeout=timeout)}


def doctor_report(settings, timeout=10):
    out = io.StringIO()
    code = run_doctor(settings, out=out, timeout=timeout)
    return code, out.getvalue()


def ask(argv, url, monkeypatch, tmp_path, capsys, key=KEY):
    """`python -m tinyagent ask` in this process against `url`: its exit code, stdout and stderr."""
    monkeypatch.chdir(tmp_path)  # no .env found upward
    monkeypatch.delenv("TINYAGENT_OFFLINE", raising=False)
    monkeypatch.setenv("TINYAGENT_API_URL", url)
    monkeypatch.setenv("TINYAGENT_API_KEY", key)
    monkeypatch.setenv("TINYAGENT_MODEL", "test-model")
    code = main(["ask", "Where is order 88231?", "--db", str(tmp_path / "shop.db"), *argv])
    out, err = capsys.readouterr()
    return code, out, err


# -- 1. an error object in a reply of HTTP 200 --------------------------------------------------------------------
@pytest.mark.parametrize(("code", "error"), [(429, RateLimitError), (502, ServerError), ("503", ServerError),
                                             (401, AuthenticationError), (None, ServerError)])
def test_an_http_200_holding_an_error_object_is_the_providers_error_with_its_message(scripted_server, code, error):
    # OpenRouter answers HTTP 200 with {"error": {...}} once generation has begun: it was a BadResponseError that
    # blamed TINYAGENT_API_URL.
    scripted_server.reply((200, {"error": {"message": "Provider returned error", "code": code}}))
    with pytest.raises(error) as info:
        client(scripted_server).chat(MESSAGES)
    assert type(info.value) is error
    assert "Provider returned error" in str(info.value) and "TINYAGENT_API_URL" not in str(info.value)


def test_the_doctor_reads_an_http_200_error_object_as_the_providers_error(scripted_server):
    scripted_server.reply((200, {"error": {"message": "Provider returned error", "code": 429}}, {"Retry-After": "0"}))
    checks = checks_of(settings_for(scripted_server.url))
    assert checks["reply"].status == FAIL and "Provider returned error" in checks["reply"].detail
    assert "TINYAGENT_API_URL" not in checks["reply"].detail + checks["reply"].fix
    assert checks["reply"].fix.startswith("wait a minute")


def test_an_error_chunk_in_a_stream_is_read_as_a_reply_of_http_200_is(scripted_server):
    # One reading of a provider's error: a 429 in a chunk is a RateLimitError, as in a whole reply.
    error = {"error": {"code": 429, "message": "slow down"}, "choices": []}
    scripted_server.reply(sse(chunk("Final "), b"data: " + json.dumps(error).encode() + b"\n\n"))
    with pytest.raises(RateLimitError, match="slow down"):
        chat_streamed(client(scripted_server), MESSAGES)



def an_error_in_200(code, **headers):
    """A reply of HTTP 200 holding only an error object with `code` (OpenRouter's, once generation has begun)."""
    return 200, {"error": {"message": "Provider returned error", "code": code}}, headers


@pytest.mark.parametrize("code", [429, 502, "503"])
def test_an_error_in_an_http_200_with_a_code_worth_retrying_is_retried_as_that_status_is(scripted_server, code):
    # A real 429 or 5xx was retried; the same error sent with HTTP 200 failed the call at once.
    waits = []
    scripted_server.reply(an_error_in_200(code, **{"Retry-After": "3"}), PLAIN)
    assert client(scripted_server, sleep=waits.append).chat(MESSAGES).text == PLAIN[1]["choices"][0]["message"]["content"]
    assert waits == [3.0] and len(scripted_server.requests) == 2


def test_an_error_in_an_http_200_is_retried_within_the_same_bound(scripted_server):
    waits = []
    scripted_server.reply(an_error_in_200(429))
    with pytest.raises(RateLimitError, match="Provider returned error"):
        client(scripted_server, sleep=waits.append, max_retry_wait=1.2).chat(MESSAGES)
    assert len(scripted_server.requests) == 3 and 1.0 <= waits[0] <= 1.2 and waits[1] == 1.2  # backoff, capped


def test_http_errors_and_errors_in_an_http_200_share_one_count_of_attempts(scripted_server):
    scripted_server.reply((503, {"error": {"message": "busy"}}), an_error_in_200(502), an_error_in_200(429), PLAIN)
    with pytest.raises(RateLimitError):
        client(scripted_server).chat(MESSAGES)
    assert len(scripted_server.requests) == 3


def test_an_error_in_an_http_200_asking_to_wait_too_long_is_not_retried_and_says_how_long(scripted_server):
    waits = []
    scripted_server.reply(an_error_in_200(429, **{"Retry-After": "999999"}), PLAIN)
    with pytest.raises(RateLimitError, match=r"asked to wait 12 days \(Retry-After\)"):
        client(scripted_server, sleep=waits.append).chat(MESSAGES)
    assert waits == [] and len(scripted_server.requests) == 1


@pytest.mark.parametrize("code", [401, 400, None])
def test_an_error_in_an_http_200_with_another_code_or_none_is_not_retried(scripted_server, code):
    # A refused key or request fails the same way again; an error without a code says nothing of trying again.
    scripted_server.reply(an_error_in_200(code), PLAIN)
    with pytest.raises(LlmError, match="Provider returned error"):
        client(scripted_server).chat(MESSAGES)
    assert len(scripted_server.requests) == 1


def test_an_error_chunk_after_text_is_not_retried(scripted_server):
    # The reader has shown the text before it: a second attempt would show another reply after it.
    error = {"error": {"code": 503, "message": "overloaded"}, "choices": []}
    scripted_server.reply(sse(chunk("Thought: "), b"data: " + json.dumps(error).encode() + b"\n\n"), PLAIN)
    pieces = []
    with pytest.raises(ServerError, match="overloaded"), open_stream(client(scripted_server), MESSAGES) as stream:
        pieces.extend(stream)
    assert pieces == ["Thought: "] and len(scripted_server.requests) == 1

# -- 2. no content, and a finish_reason that says why ---------------------------------------------------------------
@pytest.mark.parametrize("finish_reason", ["length", "content_filter"])
def test_no_content_and_a_finish_reason_that_explains_it_is_an_empty_reply(scripted_server, finish_reason):
    # A reasoning model whose thinking used up max_tokens: content null, finish_reason "length". It was a
    # BadResponseError blaming the URL.
    scripted_server.reply((200, completion(None, finish_reason=finish_reason, reasoning_content="thinking...")))
    reply = client(scripted_server).chat(MESSAGES)
    assert (reply.text, reply.finish_reason, reply.tool_calls) == ("", finish_reason, ())


def test_an_agent_stops_on_a_reply_cut_before_its_first_word_as_on_any_cut_reply(scripted_server):
    scripted_server.reply((200, completion(None, finish_reason="length")))
    result = ReActAgent(client(scripted_server), shop_registry(Shop(":memory:")), lang="en").run("hi")
    assert result.reason == "length"


@pytest.mark.parametrize(("finish_reason", "said"), [("stop", "finish_reason 'stop'"), ("error", "finish_reason 'error'"),
                                                     (None, "no finish_reason")])
def test_no_content_otherwise_names_the_finish_reason_not_the_url(scripted_server, finish_reason, said):
    scripted_server.reply((200, completion(None, finish_reason=finish_reason)))
    with pytest.raises(BadResponseError) as info:
        client(scripted_server).chat(MESSAGES)
    assert said in str(info.value) and "TINYAGENT_API_URL" not in str(info.value)


# -- 3. a Retry-After longer than the client waits ---------------------------------------------------------------
@pytest.mark.parametrize(("retry_after", "said"), [("999999", "12 days"),
                                                   (formatdate(4_000_000_000, usegmt=True), r"\d{5} days")])
def test_a_retry_after_longer_than_max_retry_wait_is_an_error_at_once_saying_how_long(scripted_server, retry_after,
                                                                                      said):
    # It was retried at max_retry_wait twice, in silence (40 s by default), to fail the same way.
    waits = []
    scripted_server.reply((429, {"error": {"message": "Rate limit"}}, {"Retry-After": retry_after}))
    with pytest.raises(RateLimitError) as info:
        client(scripted_server, sleep=waits.append).chat(MESSAGES)
    assert waits == [] and len(scripted_server.requests) == 1
    assert re.search(f"asked to wait {said} \\(Retry-After\\)", str(info.value)), str(info.value)
    assert "Rate limit" in str(info.value)


# -- 4. a certificate this machine does not trust ---------------------------------------------------------------
@pytest.fixture(scope="module")
def untrusted_room(tmp_path_factory):
    """A classroom server over TLS with a self-signed certificate, which no certificate authority vouches for."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed")
    folder = tmp_path_factory.mktemp("tls")
    certfile, keyfile = folder / "self.crt", folder / "self.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", str(keyfile), "-out", str(certfile), "-days", "2", "-subj", "/CN=self",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True, timeout=60)
    with ClassroomServer(tls=tls_context(str(certfile), str(keyfile))) as room:
        yield room, str(certfile)


def test_an_untrusted_certificate_is_named_and_not_blamed_on_the_url(untrusted_room, monkeypatch):
    room, _ = untrusted_room
    for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(LlmConnectionError) as info:
        LlmClient(room.chat_url, None, "classroom").chat(MESSAGES)
    said = str(info.value)
    assert "TLS certificate is not trusted: self-signed certificate" in said and "REQUESTS_CA_BUNDLE" in said, said
    assert "TINYAGENT_API_URL" not in said and "SSLError" not in said


def test_the_doctor_says_the_certificate_is_not_trusted_and_names_requests_ca_bundle(untrusted_room, monkeypatch):
    room, _ = untrusted_room
    for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)
    checks = checks_of(settings_for(room.chat_url, key=None, model="classroom"))
    assert checks["reachable"].status == FAIL
    assert "TLS certificate is not trusted" in checks["reachable"].detail, checks["reachable"].detail
    assert "REQUESTS_CA_BUNDLE" in checks["reachable"].fix and "TINYAGENT_API_URL" not in checks["reachable"].fix


def test_the_certificate_authority_named_in_requests_ca_bundle_is_trusted_on_this_machine_too(untrusted_room,
                                                                                              monkeypatch):
    # The advice must work: a client of a server on this machine read no variable at all (trust_env off).
    room, certfile = untrusted_room
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", certfile)
    assert LlmClient(room.chat_url, None, "classroom").chat(MESSAGES).text


# -- 5. what --timeout bounds, said as it is -------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["ask", "doctor", "eval"])
def test_the_timeout_help_says_the_status_line_and_headers_have_no_deadline(command, capsys):
    # `--timeout` said it bounds a reply "from its first byte to its last", which a server dripping its headers
    # a byte at a time outlasts for ever.
    with pytest.raises(SystemExit):
        main([command, "--help"])
    said = " ".join(capsys.readouterr().out.split())
    assert "its status line and headers are bounded only by the wait between two bytes" in said, said


# -- 6. a redirect, in the doctor -------------------------------------------------------------------------------------
class RedirectingServer(LoopbackHttp):
    """Answers every GET and POST with a 301 to the same path on `target` (a URL without its path)."""

    def __init__(self, target: str):
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def moved(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(301)
                self.send_header("Location", target + self.path)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = moved

        super().__init__(Handler)


@pytest.fixture
def redirecting(scripted_server):
    """A server that redirects to `scripted_server`, which answers well."""
    server = RedirectingServer(scripted_server.url.removesuffix("/v1/chat/completions"))
    yield server
    server.close()


def test_the_doctor_follows_no_redirect_and_says_to_set_the_url_to_its_target(redirecting, scripted_server):
    # It followed the 301 of GET /models ("reachable OK HTTP 200") and then said "HTTP 404 means a wrong URL or
    # model", RedirectError being a NotFoundError.
    scripted_server.reply(PLAIN)
    checks = checks_of(settings_for(redirecting.url))
    assert checks["reachable"].detail.startswith("HTTP 301 from GET"), checks["reachable"].detail
    assert scripted_server.url.removesuffix("/chat/completions") + "/models" in checks["reachable"].detail
    assert checks["reply"].status == FAIL and "redirect" in checks["reply"].detail
    assert "set TINYAGENT_API_URL to the redirect's target" in checks["reply"].fix
    assert not any("404" in check.fix for check in checks.values())


# -- 7. the doctor reads a stream with the course's reader --------------------------------------------------------
def test_the_doctor_warns_of_a_stream_whose_chunk_holds_an_error(scripted_server):
    # The doctor's own parser passed it; chat_streamed refuses it.
    error = (b'data: {"error": {"code": 502, "message": "Provider disconnected"}, '
             b'"choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]}\n\n')
    scripted_server.reply(PLAIN, PLAIN, PLAIN, sse(chunk("Hello "), error, b"data: [DONE]\n\n"), PLAIN)
    checks = checks_of(settings_for(scripted_server.url))
    assert checks["streaming"].status == WARN, checks["streaming"].detail
    assert "Provider disconnected" in checks["streaming"].detail


# -- 8. a stream's total_timeout starts with its headers ---------------------------------------------------------------
def test_a_streams_total_timeout_does_not_count_the_retry_waits_before_it(scripted_server):
    # A 429 with Retry-After 2, then a good stream, with total_timeout 1.5: "the stream took longer than 1.5 s in
    # total (0 characters had arrived)".
    scripted_server.reply((429, {"error": {"message": "slow down"}}, {"Retry-After": "2"}),
                          sse(chunk("Final Answer: ok", "stop"), b"data: [DONE]\n\n"))
    llm = LlmClient(scripted_server.url, KEY, "test-model", total_timeout=1.5, max_retry_wait=5)
    assert chat_streamed(llm, MESSAGES).text == "Final Answer: ok"


# -- 9. a key sent in clear ------------------------------------------------------------------------------------------
def test_the_doctor_warns_of_a_key_sent_over_http_to_another_machine(monkeypatch):
    from tinyagent import doctor

    monkeypatch.setattr(doctor, "diagnose", lambda *args, **kwargs: [])  # the settings' line is the one looked at
    code, text = doctor_report(settings_for("http://192.0.2.1:8000/v1"))
    assert "settings  WARN" in text and "sent unencrypted (http://) to 192.0.2.1:8000" in text, text
    assert code == 0 and KEY not in text
    for fine in (settings_for("https://192.0.2.1/v1"), settings_for("http://127.0.0.1:8000/v1"),
                 settings_for("http://192.0.2.1:8000/v1", key=None),
                 settings_for("http://192.0.2.1:8000/v1", key=NO_KEY_NEEDED)):  # the classroom's banner's: no secret
        assert "settings  OK" in doctor_report(fine)[1]


def test_ask_notes_a_key_sent_over_http_to_another_machine_in_one_line(monkeypatch, tmp_path, capsys):
    _, out, err = ask(["--timeout", "1", "--json"], "http://192.0.2.1:9/v1", monkeypatch, tmp_path, capsys)
    notes = [line for line in err.splitlines() if "unencrypted" in line]
    assert notes == [("[tinyagent] note: TINYAGENT_API_KEY is sent unencrypted (http://) to 192.0.2.1:9, where anyone "
                      "on the network between can read it: use the provider's https:// URL, unless this is your own "
                      "lab's server")], err
    assert KEY not in out + err


# -- 10. a reply's fields that echo the key -------------------------------------------------------------------------
def echo_the_key_in_model(request):
    body = completion("Thought: t\nFinal Answer: hi")
    body["model"] = request.headers["Authorization"]
    body["debug"] = {"headers": [request.headers["Authorization"]]}
    payload = json.dumps(body).encode()
    request.send_response(200)
    request.send_header("Content-Type", "application/json")
    request.send_header("Content-Length", str(len(payload)))
    request.end_headers()
    request.wfile.write(payload)


def test_a_model_field_echoing_the_key_is_redacted_in_the_reply_and_its_raw(scripted_server):
    scripted_server.reply(echo_the_key_in_model)
    reply = client(scripted_server).chat(MESSAGES)
    assert reply.model == "Bearer ***"
    assert KEY not in json.dumps(reply.raw)


def test_a_streamed_model_field_echoing_the_key_is_redacted(scripted_server):
    scripted_server.reply(sse(chunk("Final Answer: hi", "stop", model=f"Bearer {KEY}"), b"data: [DONE]\n\n"))
    reply = chat_streamed(client(scripted_server), MESSAGES)
    assert reply.model == "Bearer ***" and KEY not in json.dumps(reply.raw)


def test_ask_json_never_prints_a_key_echoed_in_the_model_field(scripted_server, monkeypatch, tmp_path, capsys):
    scripted_server.reply(echo_the_key_in_model)
    code, out, err = ask(["--json"], scripted_server.url, monkeypatch, tmp_path, capsys)
    assert code == 0, err
    assert KEY not in out + err and '"model": "Bearer ***"' in out


# -- 11. ask's exit code for a wrong setting ------------------------------------------------------------------------
@pytest.mark.parametrize(("status", "headers"), [(401, {}), (403, {}), (404, {}),
                                                 (301, {"Location": "https://127.0.0.1:1/v1/chat/completions"})])
def test_ask_exits_2_when_a_setting_is_wrong(scripted_server, monkeypatch, tmp_path, capsys, status, headers):
    # A refused key, a wrong URL or model name: exit 1, as if the model had failed, where eval says 2.
    scripted_server.reply((status, {"error": {"message": "no"}}, headers))
    code, _, err = ask([], scripted_server.url, monkeypatch, tmp_path, capsys)
    assert code == 2, err
    assert err.startswith("stopped: llm_error: ") and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("status", [400, 500])
def test_ask_exits_1_when_the_model_failed_otherwise(scripted_server, monkeypatch, tmp_path, capsys, status):
    scripted_server.reply((status, {"error": {"message": "no"}}, {"Retry-After": "0"}))
    code, _, err = ask([], scripted_server.url, monkeypatch, tmp_path, capsys)
    assert code == 1, err



# -- 12. a key split across two chunks of a stream -------------------------------------------------------------------
SPLIT_KEY = sse(chunk("Thought: t\nFinal Answer: your key is " + KEY[:9]), chunk(KEY[9:] + ", kept safe."),
                chunk(finish_reason="stop"), b"data: [DONE]\n\n")


def test_a_key_split_across_two_chunks_is_redacted_in_the_pieces_and_the_reply(scripted_server):
    # Each chunk was redacted alone: "sk-audit-" in one and "SECRET-4e9b21d0" in the next went out whole.
    scripted_server.reply(SPLIT_KEY)
    with open_stream(client(scripted_server), MESSAGES) as stream:
        pieces = list(stream)
        reply = stream.finish()
    assert "".join(pieces) == reply.text == "Thought: t\nFinal Answer: your key is ***, kept safe."
    assert pieces[0] == "Thought: t\nFinal Answer: your key is "  # the text before the key's start is not held


def test_a_key_split_across_the_chunks_of_a_tool_calls_arguments_is_redacted(scripted_server):
    def call(arguments, **function):
        delta = {"tool_calls": [{"index": 0, "function": {"arguments": arguments, **function}}]}
        return b"data: " + json.dumps({"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}).encode() + b"\n\n"

    scripted_server.reply(sse(call('{"note": "' + KEY[:5], name="remember"), call(KEY[5:] + '"}'),
                              chunk(finish_reason="tool_calls"), b"data: [DONE]\n\n"))
    reply = chat_streamed(client(scripted_server), MESSAGES)
    assert reply.tool_calls[0]["function"]["arguments"] == '{"note": "***"}'


def test_a_streamed_agents_trace_never_holds_a_key_split_across_chunks(scripted_server):
    scripted_server.reply(SPLIT_KEY)
    result = ReActAgent(client(scripted_server), shop_registry(Shop(":memory:")), lang="en",
                        parts=[StreamedSend()]).run("hi")
    assert result.answer == "your key is ***, kept safe."
    for shown in (result.trace.to_json(), result.trace.format("en", usage=True), repr(result.trace.events)):
        assert KEY not in shown and KEY[9:] not in shown


@given(st.text(alphabet="ab sk-", max_size=30), st.text(alphabet="ab sk-", max_size=30),
       st.lists(st.integers(min_value=0, max_value=80), max_size=6))
def test_the_pieces_joined_are_the_whole_text_redacted_however_it_is_split(before, after, cuts):
    key = "sk-ab-sk"  # a key whose start comes again inside it: the hold must not release a start too soon
    whole = before + key + after + key[:3]
    redactor = SplitKeyRedactor(key)
    bounds = [0, *sorted(min(cut, len(whole)) for cut in cuts), len(whole)]
    released = [redactor.feed(whole[start:end]) for start, end in pairwise(bounds)]
    assert "".join(released) + redactor.finish() == redact(whole, key)


def joined(chunks: list[dict], field: str) -> str:
    """A field's pieces in the chunks, joined: the content, the first tool call's arguments, or the thinking a
    reasoning model streams beside the content (reasoning_content), which the client keeps in the chunks alone."""
    pieces = []
    for each in chunks:
        for choice in each.get("choices") or []:
            delta = choice.get("delta") or {}
            if field == "arguments":
                pieces += [call["function"].get("arguments", "") for call in delta.get("tool_calls") or []]
            else:
                pieces.append(delta.get(field) or "")
    return "".join(pieces)


def test_a_key_split_across_two_chunks_is_not_kept_in_the_replys_chunks(scripted_server):
    # Each chunk was redacted alone, so reply.raw["chunks"] kept "sk-audit-" in one and "SECRET-4e9b21d0" in the
    # next, though the text, the trace and every command said "***": lesson 09 shows a reply's raw, and a learner
    # printing a streamed one's saw the key in two halves.
    scripted_server.reply(SPLIT_KEY)
    reply = chat_streamed(client(scripted_server), MESSAGES)
    for shown in (repr(reply.raw), json.dumps(reply.raw)):
        assert KEY[:9] not in shown and KEY[9:] not in shown, shown
    assert joined(reply.raw["chunks"], "content") == reply.text == "Thought: t\nFinal Answer: your key is ***, kept safe."


def streamed(key: str, field: str, text: str, cuts: list[int]):
    """The ChatResult of a stream from a server that sends `text` in `field`, cut into chunks at `cuts`, read by a
    client whose key is `key`."""
    bounds = [0, *sorted(min(cut, len(text)) for cut in cuts), len(text)]
    deltas = [{"content": ""}]
    if field == "arguments":  # the call's name first, as servers send it: a call without one is refused
        deltas = [{"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                   "function": {"name": "remember", "arguments": ""}}]}]
    for start, end in pairwise(bounds):
        piece = text[start:end]
        deltas.append({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]} if field == "arguments"
                      else {field: piece})
    lines = [json.dumps({"id": "chatcmpl-1", "model": "test-model",
                         "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}) for delta in deltas]
    lines.append(json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
    body = "".join(f"data: {line}\n\n" for line in lines) + "data: [DONE]\n\n"
    llm = LlmClient("http://127.0.0.1:9/v1", key, "test-model")
    return ReplyStream(llm, FakeResponse([body.encode()]), None, time.perf_counter()).finish()


FIELDS = st.sampled_from(["content", "arguments", "reasoning_content"])


@hypothesis.settings(max_examples=300, deadline=None)
@given(FIELDS, st.lists(st.sampled_from(["sk-ab-sk", "ab", " ", "-", "sk", "s", "k-"]), max_size=12),
       st.lists(st.integers(min_value=0, max_value=120), max_size=10))
def test_the_chunks_never_hold_the_key_however_it_is_split(field, words, cuts):
    # A key whose start comes again inside it, in text made of its own pieces, as often as hypothesis likes, cut
    # anywhere: the chunks joined field by field never hold it, and say what the reply says.
    key = "sk-ab-sk"
    reply = streamed(key, field, "".join(words), cuts)
    chunks = reply.raw["chunks"]
    assert key not in joined(chunks, field)
    if field == "content":
        assert joined(chunks, field) == reply.text
    elif field == "arguments":
        assert joined(chunks, field) == reply.tool_calls[0]["function"]["arguments"]


KEY_CHARACTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
OTHER_TEXT = st.text(alphabet="abcdefghijklmnopqrstuvwxyz .,:'\n你好订单退款", max_size=20)  # none of the key's


@hypothesis.settings(max_examples=300, deadline=None)
@given(FIELDS, st.text(alphabet=KEY_CHARACTERS, min_size=MIN_SECRET_CHARS, max_size=32),
       st.lists(OTHER_TEXT, min_size=2, max_size=4), st.lists(st.integers(min_value=0, max_value=200), max_size=12))
def test_no_piece_of_the_key_as_long_as_the_redaction_floor_is_shown_in_the_chunks(field, key, around, cuts):
    # The key between pieces of other text, once or more, cut anywhere (into many chunks, a few characters each):
    # printed, the chunks hold no piece of it as long as redact's floor (shorter ones are in any text, and in the
    # chunks' own JSON). The other text shares no character with the key, so any such piece could only be the key's.
    reply = streamed(key, field, key.join(around), cuts)
    pieces = {key[start:start + MIN_SECRET_CHARS] for start in range(len(key) - MIN_SECRET_CHARS + 1)}
    for shown in (repr(reply.raw), json.dumps(reply.raw, ensure_ascii=False), str(reply.raw["chunks"])):
        assert not [piece for piece in pieces if piece in shown], shown


# -- 13. a setting that is not valid text ----------------------------------------------------------------------------
# Bytes that are not UTF-8 in the environment or on the command line come into Python as lone surrogates
# (surrogateescape): 'caf\xe9' in Latin-1 is 'caf\udce9', which messages showed as `\udce9`.
@pytest.mark.parametrize("command", [["ask", "hi", "--db", "shop.db"], ["eval", "--task", "refund", "--no-progress"]],
                         ids=["ask", "eval"])
@pytest.mark.parametrize(("model", "url"), [("caf\udce9", "http://127.0.0.1:1/v1"), ("classroom\udcff", None)],
                         ids=["provider's model", "classroom model"])
def test_a_model_name_that_is_not_valid_text_is_one_line_and_exit_2(command, model, url, monkeypatch, tmp_path,
                                                                    capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TINYAGENT_OFFLINE", raising=False)
    monkeypatch.delenv("TINYAGENT_API_KEY", raising=False)
    monkeypatch.delenv("TINYAGENT_API_URL", raising=False)
    if url:
        monkeypatch.setenv("TINYAGENT_API_URL", url)
    monkeypatch.setenv("TINYAGENT_MODEL", model)
    code = main(command)
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert len(err.strip().splitlines()) == 1 and "\\udc" not in err, err
    assert "TINYAGENT_MODEL (from the environment) is not valid text: it holds bytes that are not UTF-8" in err, err
    assert f"{model[:-1]}\ufffd" in err  # the name, readable, with the bad byte shown as the replacement character


def test_a_model_name_on_the_command_line_that_is_not_valid_text_is_named_so(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("TINYAGENT_OFFLINE", "1")
    code = main(["ask", "hi", "--db", str(tmp_path / "shop.db"), "--model", "classroom\udcff"])
    err = capsys.readouterr().err
    assert code == 2 and "TINYAGENT_MODEL (from the arguments) is not valid text" in err and "\\udc" not in err, err


def test_the_doctor_refuses_a_model_name_that_is_not_valid_text_with_exit_2(monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TINYAGENT_OFFLINE", raising=False)
    monkeypatch.setenv("TINYAGENT_API_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("TINYAGENT_API_KEY", KEY)
    monkeypatch.setenv("TINYAGENT_MODEL", "caf\udce9")
    code = main(["doctor"])
    out = capsys.readouterr().out
    assert code == 2 and "settings  FAIL    TINYAGENT_MODEL (from the environment) is not valid text" in out, out
    assert "\\udc" not in out and KEY not in out


@pytest.mark.parametrize("name", ["TINYAGENT_API_URL", "TINYAGENT_API_KEY"])
def test_a_url_or_key_that_is_not_valid_text_is_named_so_and_a_key_never_shown(name, monkeypatch, tmp_path, capsys):
    values = {"TINYAGENT_API_URL": "http://127.0.0.1:1/v1", "TINYAGENT_API_KEY": KEY, "TINYAGENT_MODEL": "m"}
    values[name] += "\udcff"
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TINYAGENT_OFFLINE", raising=False)
    for variable, value in values.items():
        monkeypatch.setenv(variable, value)
    code = main(["ask", "hi", "--db", "shop.db"])
    err = capsys.readouterr().err
    assert code == 2 and f"{name} (from the environment) is not valid text" in err and "\\udc" not in err, err
    assert KEY not in err
