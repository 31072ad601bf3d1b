"""The agent against servers that misbehave the way real ones do, one behaviour per test.

Each test runs the whole agent (or the command line) against a loopback server scripted to do one bad
thing, checks that the run ends the way a learner would want (an answer, or a named stop reason with
a message that says what to do, never an exception out of the loop), and then searches everything a
learner or a log could see for the API key.

The client-level versions of several behaviours live in test_llm_client.py (the exact retry waits,
`content: null` beside tool_calls, extra fields, the stop cut, a read timeout, the slow drip, the
URL forms); this file adds the agent, the trace, the command line and the behaviours the client had
no test for (a connection dropped mid-reply, a stall mid-body, Retry-After as a date, echoed keys in
every kind of body).
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import threading
import time
from email.utils import formatdate

import pytest

from tinyagent import (
    AuthenticationError,
    FunctionTool,
    LlmClient,
    LlmConnectionError,
    LlmError,
    LlmTimeoutError,
    ReActAgent,
    ToolRegistry,
    llm_client,
    load_settings,
)
from tinyagent.__main__ import main
from tinyagent.classroom.server import ensure_classroom_server
from tinyagent.clock import fixed_clock
from tinyagent.errors import BadResponseError, ServerError
from tinyagent.shop import Shop, shop_registry

from .conftest import completion, compressed, drip, hang_up_mid_body, hang_up_without_reply

KEY = "sk-hostile-SECRET-5f0c2e7a91"
QUESTION = "Where is the parcel for order 88231?"
CLOCK = fixed_clock("2026-06-30T19:05:23")


@pytest.fixture
def waits():
    return []


@pytest.fixture
def make_agent(waits):
    def make(url, **options):
        options.setdefault("sleep", waits.append)
        llm = LlmClient(url, KEY, "test-model", **options)
        return ReActAgent(llm, shop_registry(Shop(":memory:", clock=CLOCK), CLOCK), lang="en", max_steps=4)

    return make


@pytest.fixture
def no_key_anywhere(capfd, caplog):
    """Collects what a test produced; at the end, checks none of it (nor stdout/stderr/logs) has the key."""
    caplog.set_level(logging.DEBUG)  # urllib3 and requests log each request at DEBUG
    seen: list[str] = []

    def show(*things):
        for thing in things:
            if hasattr(thing, "trace"):  # an AgentResult: everything it can print or save
                trace = thing.trace
                print(trace.format("en", usage=True))
                print(trace.format("zh", usage=True))
                seen.extend([trace.to_json(), repr(thing), repr(trace.events), json.dumps(thing.messages)])
            elif isinstance(thing, BaseException):
                print(f"{type(thing).__name__}: {thing}")
                seen.extend([str(thing), repr(thing), repr(thing.args)])
            else:
                seen.extend([str(thing), repr(thing)])

    yield show
    out, err = capfd.readouterr()
    for text in [*seen, out, err, caplog.text]:
        assert KEY not in text
        assert KEY[-10:] not in text  # not even its tail


def run_agent(agent):
    """What a notebook does; any exception escaping the loop fails the test."""
    return agent.run(QUESTION)


# -- the server ignores stop ---------------------------------------------------------------------
def test_server_ignoring_stop_is_cut_and_the_trace_says_so(scripted_server, make_agent, no_key_anywhere):
    typed_on = (
        "Thought: I should look up the order.\nAction: queryOrder\nAction Input: 88231\n"
        'Observation: {"status": "lost at sea", "refundId": "RF-FAKE-0001"}\n'
        "Thought: done\nFinal Answer: Your parcel was lost at sea; refund RF-FAKE-0001 is on its way."
    )
    scripted_server.reply(
        (200, completion(typed_on, finish_reason="stop")),
        (200, completion("Thought: I have the order.\nFinal Answer: It was signed for on 2026-06-22.")),
    )
    result = run_agent(make_agent(scripted_server.url))
    no_key_anywhere(result)

    assert scripted_server.requests[0]["json"]["stop"] == ["Observation:"]
    assert result.reason == "final_answer"
    assert [call.name for call in result.trace.tool_calls] == ["queryOrder"]  # the real tool ran
    first_call = result.trace.events[0]
    assert first_call.client_cut and "Observation" not in first_call.text
    assert "RF-FAKE-0001" not in result.trace.to_json()  # the invented Observation is gone for good
    assert "[Client cut] the server ignored stop" in result.trace.format("en")
    assert "[客户端截断]" in result.trace.format("zh")
    assert json.loads(result.trace.to_json())["events"][0]["client_cut"] is True
    assert "[Client cut]" not in result.trace.format("en").split("===== Round 2 =====")[1]


# -- odd but valid reply shapes ------------------------------------------------------------------
def test_null_content_beside_tool_calls_says_the_text_protocol_cannot_read_them(scripted_server, make_agent,
                                                                                no_key_anywhere):
    call = {"id": "call_1", "type": "function", "function": {"name": "queryOrder", "arguments": '{"id": "88231"}'}}
    scripted_server.reply((200, completion(content=None, finish_reason="tool_calls", tool_calls=[call])))
    result = run_agent(make_agent(scripted_server.url))
    no_key_anywhere(result)
    # A text-protocol agent cannot use native tool calls: it stops and says so, instead of "empty reply".
    assert result.reason == "native_tool_calls"
    assert result.trace.events[0].text == ""
    detail = result.trace.end.detail
    assert "native tool calls (queryOrder)" in detail and "text protocol" in detail
    assert "`tools`" in detail  # and how to fix it
    assert result.trace.tool_calls == []  # nothing was run


def test_extra_fields_such_as_reasoning_content_are_ignored(scripted_server, make_agent, no_key_anywhere):
    body = completion(
        "Thought: I know this.\nFinal Answer: Order 88231 was signed for on 2026-06-22.",
        reasoning_content="<think>the user wants the parcel... maybe I should call a tool</think>",
        refusal=None,
    )
    body.update(system_fingerprint="fp_x", prompt_filter_results=[], timings={"predicted_ms": 12.5})
    body["choices"][0]["logprobs"] = None
    scripted_server.reply((200, body))
    result = run_agent(make_agent(scripted_server.url))
    no_key_anywhere(result)
    assert result.reason == "final_answer"
    assert result.answer == "Order 88231 was signed for on 2026-06-22."
    assert "<think>" not in result.trace.to_json()


# Valid JSON of the wrong shape: a clear BadResponseError naming the field, never a TypeError out of run().
WRONG_SHAPES = {
    "content is a number": (completion(content=42), "choices[0].message.content is a number"),
    "content is an object": (completion(content={"text": "hi"}), "choices[0].message.content is an object"),
    "content is a list of numbers": (completion(content=[1, 2]), "choices[0].message.content[0] is a number"),
    "usage is a string": (completion(usage="lots"), "usage is a string"),
    "usage is a list": (completion(usage=[10, 5]), "usage is a list"),
    "usage is a number": (completion(usage=15), "usage is a number"),
    "a token count is text": (completion(usage={"prompt_tokens": "ten"}), "usage.prompt_tokens is a string"),
    "a token count is true": (completion(usage={"total_tokens": True}), "usage.total_tokens is a boolean"),
    "tool_calls is a number": (completion(content=None, tool_calls=3), "choices[0].message.tool_calls is a number"),
    "a tool call is a string": (completion(content=None, tool_calls=["queryOrder"]),
                                "choices[0].message.tool_calls[0] is a string"),
    "a tool call has no name": (completion(content=None, tool_calls=[{"function": {"arguments": "{}"}}]),
                                "choices[0].message.tool_calls[0].function.name is missing"),
    "finish_reason is a list": (completion(finish_reason=["stop"]), "choices[0].finish_reason is a list"),
    "model is an object": ({**completion(), "model": {"id": "m"}}, "model is an object"),
    "the reply is a list": (json.dumps([completion()]), "the reply is a list"),
    "the reply is a string": (json.dumps("Final Answer: hi"), "the reply is a string"),
    "the reply is null": ("null", "the reply is null"),
    "choices is an object": ({"choices": {"0": {"message": {"content": "hi"}}}}, "choices is an object"),
    "a choice is a number": ({"choices": [7]}, "choices[0] is a number"),
    "message is a string": ({"choices": [{"message": "hi"}]}, "choices[0].message is a string"),
    "nested 100,000 deep": ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
}


@pytest.mark.parametrize("name", WRONG_SHAPES)
def test_valid_json_of_the_wrong_shape_is_a_bad_response(scripted_server, make_agent, name, no_key_anywhere):
    body, said = WRONG_SHAPES[name]
    scripted_server.reply((200, body))
    with pytest.raises(BadResponseError, match=re.escape(said)) as info:
        LlmClient(scripted_server.url, KEY, "m").chat([{"role": "user", "content": "hi"}])
    result = run_agent(make_agent(scripted_server.url))
    no_key_anywhere(info.value, result)
    assert result.reason == "llm_error"
    assert said in result.trace.end.detail
    assert "OpenAI-compatible" in result.trace.end.detail  # what to do about it


def test_content_as_a_list_of_text_parts_is_read_as_their_text(scripted_server, make_agent, no_key_anywhere):
    # Some providers send content parts, e.g. a reasoning part and a text part: the text parts are the reply.
    parts = [{"type": "thinking", "thinking": "the user wants the parcel"},
             {"type": "text", "text": "Thought: I know.\n"}, {"type": "text", "text": "Final Answer: Signed for."}]
    scripted_server.reply((200, completion(content=parts)))
    result = run_agent(make_agent(scripted_server.url))
    no_key_anywhere(result)
    assert result.reason == "final_answer" and result.answer == "Signed for."
    assert "the user wants the parcel" not in result.trace.to_json()


def test_a_lone_surrogate_in_the_reply_is_replaced(scripted_server, make_agent, no_key_anywhere):
    # json.dumps escapes the lone surrogate as \ud800, exactly what such a server sends.
    body = completion("Thought: I know.\nFinal Answer: parcel \ud800 signed for", usage={
        "prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15, "note": "\udfff"})
    body["model"] = "m\udc80"
    scripted_server.reply((200, json.dumps(body)))
    result = run_agent(make_agent(scripted_server.url))
    no_key_anywhere(result)
    assert result.reason == "final_answer"
    assert result.answer == "parcel \ufffd signed for"
    for shown in (result.trace.format("en", usage=True), result.trace.format("zh"), result.trace.to_json()):
        shown.encode("utf-8")  # printable and savable: no UnicodeEncodeError


def test_a_valid_surrogate_pair_escape_still_reads_as_its_character(scripted_server, no_key_anywhere):
    scripted_server.reply((200, json.dumps(completion("Final Answer: \U0001f600 and \ud83d"))))
    reply = LlmClient(scripted_server.url, KEY, "m").chat([{"role": "user", "content": "hi"}])
    no_key_anywhere(reply)
    assert reply.text == "Final Answer: \U0001f600 and \ufffd"


def test_a_lone_surrogate_in_a_tool_result_reaches_the_model_repaired(scripted_server, no_key_anywhere):
    scripted_server.reply(
        (200, completion("Thought: look it up\nAction: lookUp\nAction Input: 88231\n")),
        (200, completion("Thought: done\nFinal Answer: found it")),
    )
    registry = ToolRegistry([FunctionTool("lookUp", "Look something up.", lambda text: f"found \udcff{text}")])
    agent = ReActAgent(LlmClient(scripted_server.url, KEY, "m"), registry, lang="en")
    result = agent.run(QUESTION)
    no_key_anywhere(result)
    assert result.reason == "final_answer"
    sent = scripted_server.requests[1]["json"]["messages"][-1]["content"]
    assert sent == "Observation: found \ufffd88231"
    result.trace.to_json().encode("utf-8")


# -- retries ---------------------------------------------------------------------------------------
def test_429_then_success_waits_as_retry_after_says(scripted_server, make_agent, waits, no_key_anywhere):
    scripted_server.reply(
        (429, {"error": {"message": "Rate limit reached, retry in 2s"}}, {"Retry-After": "2"}),
        (200, completion("Thought: ok\nFinal Answer: signed for on 2026-06-22")),
    )
    result = run_agent(make_agent(scripted_server.url))
    no_key_anywhere(result)
    assert result.reason == "final_answer"
    assert waits == [2.0]
    assert len(scripted_server.requests) == 2


def test_retry_after_as_an_http_date_is_honoured_or_said(scripted_server, waits, no_key_anywhere):
    # 30 s ahead, so that a slow machine's seconds between writing the date and reading it cannot pass for a bug.
    soon, late = formatdate(time.time() + 30, usegmt=True), formatdate(time.time() + 3600, usegmt=True)
    scripted_server.reply(
        (429, {"error": {"message": "slow down"}}, {"Retry-After": soon}),
        (503, {"error": {"message": "busy"}}, {"Retry-After": late}),
        (200, completion()),
    )
    llm = LlmClient(scripted_server.url, KEY, "m", sleep=waits.append, max_retry_wait=60)
    with pytest.raises(ServerError, match=r"asked to wait (59|60) minutes \(Retry-After\)") as info:
        llm.chat([{"role": "user", "content": "hi"}])
    no_key_anywhere(info.value)
    assert len(waits) == 1 and 20.0 <= waits[0] <= 30.0  # about 30 s from now (the date has whole seconds)
    assert len(scripted_server.requests) == 2  # an hour away: not waited for, and not tried again


def test_5xx_is_retried_with_a_cap_then_the_run_stops_clearly(scripted_server, make_agent, waits, no_key_anywhere):
    scripted_server.reply((503, {"error": {"message": "overloaded"}}, {"Retry-After": "3"}))
    result = run_agent(make_agent(scripted_server.url, max_retries=2, max_retry_wait=4))
    no_key_anywhere(result)
    assert result.reason == "llm_error"
    assert waits == [3, 3]  # Retry-After honoured, within the cap
    assert len(scripted_server.requests) == 3
    assert "after 3 attempts" in result.trace.end.detail
    assert "HTTP 503" in result.trace.end.detail and "overloaded" in result.trace.end.detail
    assert result.answer.startswith("Sorry, I cannot reach the language model")


def test_backoff_without_retry_after_grows_with_jitter(scripted_server, waits, no_key_anywhere):
    scripted_server.reply((500, "oops"))
    with pytest.raises(ServerError) as info:
        LlmClient(scripted_server.url, KEY, "m", sleep=waits.append, max_retries=3).chat(
            [{"role": "user", "content": "hi"}])
    no_key_anywhere(info.value)
    assert [int(w) for w in waits] == [1, 2, 4]
    assert all(0 <= w - int(w) <= 0.5 for w in waits)


# -- broken connections ----------------------------------------------------------------------------
@pytest.mark.parametrize("reset", [True, False], ids=["reset", "closed"])
def test_connection_dropped_mid_reply_is_a_clear_connection_error(scripted_server, make_agent, reset,
                                                                   no_key_anywhere):
    scripted_server.reply(hang_up_mid_body(reset=reset))
    with pytest.raises(LlmConnectionError, match=r"broke after \d+ bytes of the reply") as info:
        LlmClient(scripted_server.url, KEY, "m").chat([{"role": "user", "content": "hi"}])
    result = run_agent(make_agent(scripted_server.url))
    no_key_anywhere(info.value, result)
    assert result.reason == "llm_error"
    assert "broke after" in result.trace.end.detail


def test_connection_closed_before_any_reply_says_so(scripted_server, no_key_anywhere):
    scripted_server.reply(hang_up_without_reply)
    with pytest.raises(LlmConnectionError, match="closed the connection without replying") as info:
        LlmClient(scripted_server.url, KEY, "m").chat([{"role": "user", "content": "hi"}])
    no_key_anywhere(info.value)
    assert len(scripted_server.requests) == 2  # sent once more on a fresh connection, then given up


def test_a_request_reset_before_any_reply_is_sent_once_more_and_answered(scripted_server):
    # As when a proxy closes the kept-alive connection just as the next request sets out on it (a room of
    # 45 on JupyterHub, load average 26: one learner's lesson 06 failed so before this retry).
    scripted_server.reply(hang_up_without_reply, (200, completion("Thought: t\nFinal Answer: ok")),
                          (200, completion("Thought: t\nFinal Answer: ok")))
    llm = LlmClient(scripted_server.url, KEY, "m")
    assert llm.chat([{"role": "user", "content": "hi"}]).text == "Thought: t\nFinal Answer: ok"
    assert len(scripted_server.requests) == 2
    assert scripted_server.requests[0]["json"] == scripted_server.requests[1]["json"]


def test_slow_drip_ends_in_a_clear_total_timeout(scripted_server, make_agent, no_key_anywhere):
    scripted_server.reply(drip(total_bytes=1000, every=0.05))
    started = time.monotonic()
    result = run_agent(make_agent(scripted_server.url, read_timeout=2, total_timeout=0.6))
    no_key_anywhere(result)
    assert time.monotonic() - started < 20  # the whole drip takes 50 s; a loaded machine may take seconds more
    assert result.reason == "llm_error"
    assert "longer than 0.6 s in total" in result.trace.end.detail


def test_a_stall_in_the_middle_of_the_body_is_a_read_timeout(scripted_server, no_key_anywhere):
    scripted_server.reply(drip(total_bytes=100, every=0.01, stall_after=10))
    with pytest.raises(LlmTimeoutError, match="stopped sending before the reply was complete") as info:
        LlmClient(scripted_server.url, KEY, "m", read_timeout=0.5).chat([{"role": "user", "content": "hi"}])
    no_key_anywhere(info.value)


# -- pages that are not the API --------------------------------------------------------------------
HTML = "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1></body></html>"


@pytest.mark.parametrize(("status", "error"), [(502, ServerError), (200, BadResponseError)])
def test_html_error_page_is_named_as_such(scripted_server, make_agent, status, error, no_key_anywhere):
    scripted_server.reply((status, HTML, {"Content-Type": "text/html"}))
    with pytest.raises(error, match="an HTML page") as info:
        LlmClient(scripted_server.url, KEY, "m", max_retries=0).chat([{"role": "user", "content": "hi"}])
    result = run_agent(make_agent(scripted_server.url, max_retries=0))
    no_key_anywhere(info.value, result)
    assert result.reason == "llm_error"
    assert "HTML page" in result.trace.end.detail
    assert "<h1>" not in result.trace.end.detail


# -- compressed replies ------------------------------------------------------------------------------
@pytest.mark.parametrize("encoding", ["gzip", "deflate", "raw-deflate"])
def test_a_compressed_reply_is_decoded(scripted_server, make_agent, encoding, no_key_anywhere):
    body = completion("Thought: I know.\nFinal Answer: Order 88231 was signed for on 2026-06-22.")
    scripted_server.reply(compressed(body, encoding))
    result = run_agent(make_agent(scripted_server.url))
    no_key_anywhere(result)
    assert result.reason == "final_answer", result.trace.end
    assert result.answer == "Order 88231 was signed for on 2026-06-22."
    # The client says which encodings it reads: the two the standard library decodes.
    assert scripted_server.requests[0]["headers"]["Accept-Encoding"] == "gzip, deflate"


def test_an_encoding_the_client_did_not_ask_for_is_named(scripted_server, make_agent, no_key_anywhere):
    scripted_server.reply(compressed(b"\x8b\x00\x80not-really-brotli", "br"))
    with pytest.raises(BadResponseError, match="compressed its reply as 'br'") as info:
        LlmClient(scripted_server.url, KEY, "m").chat([{"role": "user", "content": "hi"}])
    result = run_agent(make_agent(scripted_server.url))
    no_key_anywhere(info.value, result)
    assert result.reason == "llm_error" and "'br'" in result.trace.end.detail


def test_a_reply_that_inflates_past_the_size_cap_is_refused(scripted_server, no_key_anywhere):
    bomb = b" " * (llm_client.MAX_REPLY_BYTES + 1)  # about 16 kB once gzipped
    scripted_server.reply(compressed(bomb, "gzip"))
    with pytest.raises(BadResponseError, match=r"larger than 16 MB") as info:
        LlmClient(scripted_server.url, KEY, "m").chat([{"role": "user", "content": "hi"}])
    no_key_anywhere(info.value)


# -- URL forms ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/", "/v1/chat/completions", "/v1/chat/completions/"])
def test_every_url_form_reaches_the_chat_endpoint(scripted_server, suffix, no_key_anywhere):
    root = scripted_server.url.removesuffix("/v1/chat/completions")
    scripted_server.reply((200, completion("Thought: ok\nFinal Answer: yes")))
    settings = load_settings(api_url=root + suffix, api_key=KEY, model="test-model")
    agent = ReActAgent(LlmClient.from_settings(settings), shop_registry(Shop(":memory:", clock=CLOCK), CLOCK))
    result = run_agent(agent)
    no_key_anywhere(result, settings)
    assert result.reason == "final_answer"
    assert scripted_server.requests[0]["path"] == "/v1/chat/completions"


@pytest.mark.parametrize("form", ["base_url", "chat_url", "root"])
def test_url_forms_reach_the_real_classroom_server(form):
    server = ensure_classroom_server()
    url = {"base_url": server.base_url, "chat_url": server.chat_url,
           "root": server.base_url.removesuffix("/v1")}[form]
    reply = LlmClient(url, None, "classroom").chat([{"role": "user", "content": "hi"}], max_tokens=5)
    assert reply.text and reply.usage["completion_tokens"] <= 5


# -- the key echoed back -------------------------------------------------------------------------------
ECHOES = {
    "json error": (401, {"error": {"message": f"Incorrect API key provided: {KEY}.", "code": "invalid_api_key"}}),
    "plain text 400": (400, f"bad header Authorization: Bearer {KEY}"),
    "plain text 200": (200, f"echo: Authorization: Bearer {KEY}"),
    "json without choices": (200, {"echo": {"authorization": f"Bearer {KEY}"}}),
    "html 500": (500, f"<html><body>debug: Bearer {KEY}</body></html>"),
}


@pytest.mark.parametrize("name", ECHOES)
def test_a_key_echoed_in_any_body_never_comes_out(scripted_server, make_agent, name, no_key_anywhere):
    scripted_server.reply(ECHOES[name])
    with pytest.raises(LlmError) as info:
        LlmClient(scripted_server.url, KEY, "m", max_retries=0).chat([{"role": "user", "content": "hi"}])
    result = run_agent(make_agent(scripted_server.url, max_retries=0))
    no_key_anywhere(info.value, result)
    assert result.reason == "llm_error"


def test_command_line_with_an_echoing_server_never_prints_the_key(scripted_server, monkeypatch, tmp_path, capsys):
    scripted_server.reply(ECHOES["json error"])
    monkeypatch.chdir(tmp_path)  # no .env found upward
    monkeypatch.delenv("TINYAGENT_OFFLINE", raising=False)
    monkeypatch.setenv("TINYAGENT_API_URL", scripted_server.url)
    monkeypatch.setenv("TINYAGENT_API_KEY", KEY)
    monkeypatch.setenv("TINYAGENT_MODEL", "test-model")
    for extra in ([], ["--json"], ["--usage"]):
        code = main(["ask", QUESTION, "--db", str(tmp_path / "shop.sqlite3"), "--now", "2026-06-30T19:05:23",
                     *extra])
        out, err = capsys.readouterr()
        assert code == 2  # a key the server refused: the settings' mistake
        assert "refused the API key" in out + err
        assert KEY not in out + err and KEY[-10:] not in out + err
    # The key did reach the server, in the one place it belongs.
    assert scripted_server.requests[0]["headers"]["Authorization"] == f"Bearer {KEY}"


def test_authentication_error_from_an_echoing_server_is_redacted(scripted_server, no_key_anywhere):
    scripted_server.reply(ECHOES["json error"])
    with pytest.raises(AuthenticationError, match=r"Incorrect API key provided: \*\*\*") as info:
        LlmClient(scripted_server.url, KEY, "m").chat([{"role": "user", "content": "hi"}])
    no_key_anywhere(info.value)


def test_command_line_prints_a_final_answer_holding_a_lone_surrogate(scripted_server, tmp_path):
    scripted_server.reply((200, json.dumps(completion("Thought: ok\nFinal Answer: parcel \ud800 signed for"))))
    env = {**os.environ, "TINYAGENT_API_URL": scripted_server.url, "TINYAGENT_MODEL": "test-model",
           "PYTHONIOENCODING": "utf-8"}  # strict, as a real terminal or pipe is
    for name in ("TINYAGENT_OFFLINE", "TINYAGENT_API_KEY"):
        env.pop(name, None)
    for extra in ([], ["--json"]):
        done = subprocess.run(
            [sys.executable, "-m", "tinyagent", "ask", QUESTION, "--db", str(tmp_path / "shop.db"), *extra],
            check=False, capture_output=True, env=env, cwd=tmp_path, timeout=120,
        )
        out, err = done.stdout.decode("utf-8"), done.stderr.decode("utf-8")
        assert "Traceback" not in err, err
        assert done.returncode == 0, err
        assert "parcel \ufffd signed for" in (out if not extra else json.loads(out)["events"][-1]["answer"])


@pytest.mark.parametrize("command", ["ask", "doctor"])
def test_timeout_option_bounds_the_wait_for_a_stalled_server(scripted_server, monkeypatch, tmp_path, capsys,
                                                             command):
    stalled = threading.Event()
    scripted_server.reply(lambda request: stalled.wait(60))  # accepts the request, never answers
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TINYAGENT_OFFLINE", raising=False)
    monkeypatch.setenv("TINYAGENT_API_URL", scripted_server.url)
    monkeypatch.setenv("TINYAGENT_API_KEY", KEY)
    monkeypatch.setenv("TINYAGENT_MODEL", "test-model")
    argv = {"ask": ["ask", QUESTION, "--db", str(tmp_path / "shop.db")], "doctor": ["doctor"]}[command]
    try:
        code = main([*argv, "--timeout", "1.5"])
    finally:
        stalled.set()
    out, err = capsys.readouterr()
    assert code == 1
    assert "no reply within 1.5 s" in out + err
    assert "Traceback" not in err and KEY not in out + err


@pytest.mark.parametrize("where", ["extra", "arguments"])
def test_a_tool_call_nested_deeper_than_python_copies_is_a_bad_response_not_a_traceback(scripted_server, where,
                                                                                          no_key_anywhere):
    # The loop copies each call it reads: 600 lists deep, RecursionError raised out of FunctionCallingAgent.run()
    from tinyagent import FunctionCallingAgent, FunctionTool, ToolRegistry

    deep = "[" * 600 + "]" * 600
    call = {"id": "a", "type": "function", "function": {"name": "echo", "arguments": "{}"}}
    text = json.dumps({"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [call]},
                                    "finish_reason": "tool_calls"}]})
    text = (text.replace('"type": "function",', f'"type": "function", "extra": {deep},') if where == "extra"
            else text.replace('"arguments": "{}"', f'"arguments": {{"a": {deep}}}'))
    scripted_server.reply((200, text), (200, text))
    agent = FunctionCallingAgent(LlmClient(scripted_server.url, KEY, "m"),
                                 ToolRegistry([FunctionTool("echo", "says it back", lambda s: s)]))
    result = agent.run("hi")
    no_key_anywhere(result)
    assert result.reason == "llm_error" and "nested too deeply to be a tool call" in result.trace.end.detail


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity", "1e999", "-1E400"])
def test_a_reply_holding_a_number_json_does_not_allow_is_a_bad_response_naming_it(
        scripted_server, make_agent, constant, no_key_anywhere):
    # Python's json reads NaN; kept in the usage, it made the trace's JSON unreadable to any other reader (and the
    # service's response to an invoke failed after the run). The reply is refused before anything acts on it. 1e999
    # is JSON's syntax, but Python read it as inf and wrote it back as Infinity: a 500 after a refund was made.
    body = ('{"choices": [{"message": {"role": "assistant", "content": "Final Answer: hi"}, "finish_reason": "stop"}],'
            f' "usage": {{"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5, "cost": {constant}}}}}')
    scripted_server.reply((200, body), (200, body))
    with pytest.raises(BadResponseError, match=f"with {re.escape(constant)} in its JSON, which JSON does not allow"):
        LlmClient(scripted_server.url, KEY, "m").chat([{"role": "user", "content": "hi"}])
    result = run_agent(make_agent(scripted_server.url))
    no_key_anywhere(result)
    assert result.reason == "llm_error" and constant in result.trace.end.detail
    json.loads(result.trace.to_json(), parse_constant=lambda name: pytest.fail(f"{name} in the trace's JSON"))
