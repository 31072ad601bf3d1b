import json
import time
import traceback

import pytest

from tinyagent import AuthenticationError, LlmClient, LlmConnectionError, LlmTimeoutError, NotFoundError
from tinyagent.api_url import models_url
from tinyagent.errors import (
    BadRequestError,
    BadResponseError,
    ConfigurationError,
    LlmError,
    RateLimitError,
    RedirectError,
    ServerError,
    error_class,
    first_line,
    named_first_line,
)
from tinyagent.llm_client import DEFAULT_MAX_TOKENS, STEP_MAX_TOKENS, normalize_chat_url

from .conftest import completion, drip, run_in_ipython

KEY = "sk-test-SECRET-1234567890"
MESSAGES = [{"role": "user", "content": "hi"}]


def client(server, **options):
    options.setdefault("sleep", lambda s: None)
    return LlmClient(server.url, KEY, "test-model", **options)


def test_plain_call_returns_text_finish_reason_usage_and_latency(scripted_server):
    scripted_server.reply((200, completion("Thought: t\nFinal Answer: hello")))
    result = client(scripted_server).chat(MESSAGES)
    assert result.text == "Thought: t\nFinal Answer: hello"
    assert result.finish_reason == "stop"
    assert result.usage == {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    assert result.latency_s > 0


def test_request_carries_model_messages_temperature_stop_and_bearer_key(scripted_server):
    scripted_server.reply((200, completion()))
    client(scripted_server, temperature=0.3).chat(MESSAGES, stop=["Observation:"], max_tokens=50)
    sent = scripted_server.requests[0]
    assert sent["json"] == {
        "model": "test-model", "messages": MESSAGES, "temperature": 0.3,
        "stop": ["Observation:"], "max_tokens": 50,
    }
    assert sent["headers"]["Authorization"] == f"Bearer {KEY}"


def test_no_key_sends_no_authorization_header(scripted_server):
    scripted_server.reply((200, completion()))
    LlmClient(scripted_server.url, None, "m").chat(MESSAGES)
    assert "Authorization" not in scripted_server.requests[0]["headers"]


@pytest.mark.parametrize(
    ("status", "error", "hint"),
    [
        (401, AuthenticationError, "TINYAGENT_API_KEY"),
        (403, AuthenticationError, "TINYAGENT_API_KEY"),
        (404, NotFoundError, "TINYAGENT_MODEL"),
        (400, BadRequestError, "messages must not be empty"),
        (422, BadRequestError, "messages must not be empty"),
    ],
)
def test_http_errors_map_to_clear_errors(scripted_server, status, error, hint):
    scripted_server.reply((status, {"error": {"message": "messages must not be empty", "type": "x"}}))
    with pytest.raises(error) as info:
        client(scripted_server).chat(MESSAGES)
    assert hint in str(info.value)
    assert info.value.status == status


def test_server_echoing_the_key_is_redacted(scripted_server):
    scripted_server.reply((400, {"error": {"message": f"bad key format: {KEY}"}}))
    with pytest.raises(BadRequestError) as info:
        client(scripted_server).chat(MESSAGES)
    assert KEY not in str(info.value)
    assert "***" in str(info.value)


def test_429_and_5xx_are_retried_then_succeed(scripted_server):
    waits = []
    scripted_server.reply((429, {"error": {"message": "slow down"}}, {"Retry-After": "3"}),
                          (503, "upstream down"), (200, completion("Final Answer: ok")))
    result = client(scripted_server, sleep=waits.append).chat(MESSAGES)
    assert result.text == "Final Answer: ok"
    assert len(scripted_server.requests) == 3
    assert waits[0] == 3.0  # Retry-After honoured
    assert 2.0 <= waits[1] <= 2.5  # second backoff: 2 s plus jitter


def test_retries_are_capped(scripted_server):
    waits = []
    scripted_server.reply((500, {"error": {"message": "boom"}}))
    with pytest.raises(ServerError, match="after 3 attempts"):
        client(scripted_server, sleep=waits.append, max_retry_wait=1.2).chat(MESSAGES)
    assert 1.0 <= waits[0] <= 1.2 and waits[1] == 1.2  # the backoff (1 s, 2 s, and jitter), capped


def test_a_retry_after_longer_than_the_cap_is_not_waited_for(scripted_server):
    waits = []
    scripted_server.reply((500, {"error": {"message": "boom"}}, {"Retry-After": "999"}))
    with pytest.raises(ServerError, match=r"asked to wait 17 minutes \(Retry-After\), longer than max_retry_wait"):
        client(scripted_server, sleep=waits.append, max_retry_wait=5).chat(MESSAGES)
    assert waits == [] and len(scripted_server.requests) == 1


@pytest.mark.parametrize("not_a_number", ["nan", "NaN", "inf", "-inf", "Infinity"])
def test_a_retry_after_that_is_no_number_of_seconds_gets_the_clients_own_backoff(scripted_server, not_a_number):
    # float() reads these; time.sleep(nan) raises ValueError, which is no LlmError.
    waits = []
    scripted_server.reply((503, {"error": {"message": "busy"}}, {"Retry-After": not_a_number}),
                          (200, completion("Final Answer: ok")))
    assert client(scripted_server, sleep=waits.append).chat(MESSAGES).text == "Final Answer: ok"
    assert 1.0 <= waits[0] <= 1.5  # the first backoff: 1 s plus jitter


def test_a_retry_after_of_nan_with_the_real_sleep_ends_in_an_llm_error(scripted_server):
    scripted_server.reply((503, {"error": {"message": "busy"}}, {"Retry-After": "nan"}))
    llm = LlmClient(scripted_server.url, KEY, "m", max_retries=1, max_retry_wait=0.01)
    with pytest.raises(ServerError, match="after 2 attempts"):
        llm.chat(MESSAGES)


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_not_followed_but_named(scripted_server, status):
    # requests followed it, and a 302 resent the request as a GET: the error then said "choices is missing".
    scripted_server.reply((status, "", {"Location": "/moved/v1/chat/completions"}))
    with pytest.raises(RedirectError, match=rf"HTTP {status}, a redirect to http://127\.0\.0\.1:\d+/moved/v1/chat/"
                                            "completions: set TINYAGENT_API_URL to that URL") as info:
        client(scripted_server).chat(MESSAGES)
    assert isinstance(info.value, NotFoundError) and info.value.status == status
    assert len(scripted_server.requests) == 1  # not followed


def test_rate_limit_error_after_retries(scripted_server):
    scripted_server.reply((429, {"error": {"message": "quota"}}))
    with pytest.raises(RateLimitError):
        client(scripted_server, max_retries=0).chat(MESSAGES)


def test_body_that_is_not_json(scripted_server):
    scripted_server.reply((200, "<html><body>Bad Gateway</body></html>", {"Content-Type": "text/html"}))
    with pytest.raises(BadResponseError, match="HTML page"):
        client(scripted_server).chat(MESSAGES)


def test_body_without_choices(scripted_server):
    scripted_server.reply((200, {"object": "chat.completion", "choices": []}))
    with pytest.raises(BadResponseError, match=r"choices\[0\]\.message"):
        client(scripted_server).chat(MESSAGES)


def test_body_without_content(scripted_server):
    scripted_server.reply((200, completion(content=None)))
    with pytest.raises(BadResponseError, match=r"message\.content"):
        client(scripted_server).chat(MESSAGES)


def test_null_content_beside_tool_calls_is_fine(scripted_server):
    call = {"id": "c1", "type": "function", "function": {"name": "queryOrder", "arguments": "{}"}}
    scripted_server.reply((200, completion(content=None, finish_reason="tool_calls", tool_calls=[call])))
    result = client(scripted_server).chat(MESSAGES)
    assert result.text == ""
    assert result.tool_calls == (call,)


def test_extra_fields_are_ignored(scripted_server):
    scripted_server.reply((200, completion("Final Answer: x", reasoning_content="thinking...")))
    assert client(scripted_server).chat(MESSAGES).text == "Final Answer: x"


def test_server_ignoring_stop_is_cut_by_the_client(scripted_server):
    text = "Thought: t\nAction: queryOrder\nAction Input: 88231\nObservation: {\"fake\": true}"
    scripted_server.reply((200, completion(text)))
    result = client(scripted_server).chat(MESSAGES, stop=["Observation:"])
    assert result.text == "Thought: t\nAction: queryOrder\nAction Input: 88231\n"
    assert result.client_cut
    assert result.finish_reason == "stop"


def test_read_timeout_is_clear(scripted_server):
    def hang(handler):
        time.sleep(1.5)

    scripted_server.reply(hang)
    with pytest.raises(LlmTimeoutError, match="no reply within 0.3 s"):
        client(scripted_server, read_timeout=0.3).chat(MESSAGES)


def test_slow_drip_reply_hits_the_total_timeout(scripted_server):
    scripted_server.reply(drip(total_bytes=1000, every=0.05))
    with pytest.raises(LlmTimeoutError, match="longer than 0.5 s in total"):
        client(scripted_server, read_timeout=1, total_timeout=0.5).chat(MESSAGES)


def test_connection_refused_is_clear():
    dead = LlmClient("http://127.0.0.1:9/v1/chat/completions", KEY, "m", connect_timeout=1)
    with pytest.raises(LlmConnectionError, match="could not reach 127.0.0.1:9"):
        dead.chat(MESSAGES)


@pytest.mark.parametrize(("pasted", "named"), [
    (KEY + "\u200b", "character 26 is U+200B (ZERO WIDTH SPACE)"),
    ("\u201c" + KEY + "\u201d", "character 1 is U+201C (LEFT DOUBLE QUOTATION MARK)"),
    ("\uff53\uff4b" + KEY[2:], "character 1 is U+FF53 (FULLWIDTH LATIN SMALL LETTER S)"),
    (KEY + "\n", "character 26 is U+000A (unprintable)"),
    (KEY + " ", "character 26 is a space"),
    (KEY[:8] + " " + KEY[8:], "character 9 is a space"),
    (KEY + "\u00e9", "character 26 is U+00E9 (LATIN SMALL LETTER E WITH ACUTE)"),
])
def test_a_key_no_http_header_can_carry_is_refused_when_the_client_is_made(pasted, named):
    with pytest.raises(ConfigurationError) as info:
        LlmClient("http://127.0.0.1:9/v1", pasted, "m")
    message = str(info.value)
    assert named in message
    assert "\n" not in message  # one line
    assert KEY[3:] not in message  # the key itself is never shown


@pytest.mark.parametrize("pasted", ["Bearer " + KEY, "bearer " + KEY])
def test_a_key_with_bearer_in_front_is_refused_not_sent_as_bearer_bearer(pasted):
    with pytest.raises(ConfigurationError, match='starts with "Bearer ".*give the key alone') as info:
        LlmClient("http://127.0.0.1:9/v1", pasted, "m")
    assert KEY not in str(info.value)


@pytest.mark.parametrize("key", [KEY + "\u200b", "Bearer " + KEY, KEY + " ", "ключ", "k\udcff", KEY, ""])
def test_the_cli_refuses_exactly_the_keys_the_client_refuses(key):
    from tinyagent.__main__ import _sendable

    try:
        LlmClient("http://127.0.0.1:9/v1", key, "m")
        client_takes_it = True
    except ConfigurationError:
        client_takes_it = False
    assert _sendable(key) == client_takes_it


def test_repr_never_shows_the_key(scripted_server):
    text = repr(client(scripted_server))
    assert KEY not in text
    assert "api_key=set" in text


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("https://api.deepseek.com", "https://api.deepseek.com/v1/chat/completions"),
        ("https://api.openai.com/v1", "https://api.openai.com/v1/chat/completions"),
        ("https://api.openai.com/v1/", "https://api.openai.com/v1/chat/completions"),
        ("https://dashscope.aliyuncs.com/compatible-mode/v1",
         "https://dashscope.aliyuncs.com/compatible-mode/v1/chat/completions"),
        ("http://127.0.0.1:8000/v1/chat/completions", "http://127.0.0.1:8000/v1/chat/completions"),
    ],
)
def test_base_urls_are_normalized(given, expected):
    assert normalize_chat_url(given) == expected


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("https://h.example/v1?api-version=2024", "https://h.example/v1/chat/completions?api-version=2024"),
        ("https://h.example/v1/?api-version=2024", "https://h.example/v1/chat/completions?api-version=2024"),
        ("https://h.example?api-version=2024", "https://h.example/v1/chat/completions?api-version=2024"),
        ("https://h.example/v1/chat/completions?x=/", "https://h.example/v1/chat/completions?x=/"),
        ("https://h.example/v1/chat/completions#notes", "https://h.example/v1/chat/completions"),
        ("https://h.example/v1?a=1#notes", "https://h.example/v1/chat/completions?a=1"),
    ],
)
def test_a_query_is_kept_and_a_fragment_dropped(given, expected):
    assert normalize_chat_url(given) == expected


@pytest.mark.parametrize(("chat_url", "listed"), [
    ("http://h/v1/chat/completions", "http://h/v1/models"),
    ("https://h/v1/chat/completions?api-version=2024", "https://h/v1/models?api-version=2024"),
])
def test_the_model_list_is_beside_the_endpoint_with_its_query(chat_url, listed):
    # doctor cut len("/chat/completions") characters off the end: into the query, when there was one.
    assert models_url(chat_url) == listed


def test_a_password_in_the_url_is_sent_but_never_shown(scripted_server):
    scripted_server.reply((404, {"error": {"message": "no such model"}}))
    with_password = scripted_server.url.replace("http://", "http://ada:hunter2@")
    llm = LlmClient(with_password, KEY, "test-model", sleep=lambda s: None)
    assert "hunter2" not in repr(llm)
    assert "ada:***@" in repr(llm)
    with pytest.raises(NotFoundError) as info:
        llm.chat(MESSAGES)
    assert "hunter2" not in str(info.value)
    dead = LlmClient("http://ada:hunter2@127.0.0.1:9/v1", None, "m", connect_timeout=1)
    with pytest.raises(LlmConnectionError, match="could not reach 127.0.0.1:9 ") as info:
        dead.chat(MESSAGES)
    assert "hunter2" not in str(info.value)
    with pytest.raises(ConfigurationError) as info:
        normalize_chat_url("ftp://ada:hunter2@h.example/v1")
    assert "hunter2" not in str(info.value)


@pytest.mark.parametrize("bad", ["", "api.openai.com/v1", "ftp://x/y"])
def test_bad_urls_are_refused(bad):
    with pytest.raises(ValueError, match="http:// or https://"):
        normalize_chat_url(bad)


def test_build_request_refuses_empty_messages(scripted_server):
    with pytest.raises(ValueError):
        client(scripted_server).build_request([])


def test_request_body_is_valid_utf8_json(scripted_server):
    scripted_server.reply((200, completion()))
    client(scripted_server).chat([{"role": "user", "content": "订单 88231"}])
    assert json.dumps(scripted_server.requests[0]["json"], ensure_ascii=False).count("订单") == 1


def test_classroom_client_reaches_the_in_process_model_by_variant_name():
    llm = LlmClient.classroom("classroom-no-final")
    assert llm.model == "classroom-no-final"
    assert llm.api_url.startswith("http://127.0.0.1:")
    assert llm.chat([{"role": "user", "content": "你好"}]).text


def test_a_bad_url_is_a_configuration_error_that_is_still_a_value_error():
    from tinyagent import TinyAgentError
    from tinyagent.errors import ConfigurationError

    with pytest.raises(ConfigurationError) as info:
        LlmClient("api.openai.com/v1", KEY, "m")
    assert isinstance(info.value, ValueError) and isinstance(info.value, TinyAgentError)


def test_a_lone_surrogate_in_the_request_is_replaced_not_a_crash(scripted_server):
    scripted_server.reply((200, completion()))
    client(scripted_server).chat([{"role": "user", "content": "order \udcff"}])
    assert scripted_server.requests[0]["json"]["messages"][0]["content"] == "order \ufffd"


def test_a_timeout_in_seconds_bounds_each_reply():
    from tinyagent.llm_client import reply_timeouts

    assert reply_timeouts(1.5) == {"connect_timeout": 1.5, "read_timeout": 1.5, "total_timeout": 1.5}
    assert reply_timeouts(60) == {"connect_timeout": 10.0, "read_timeout": 60, "total_timeout": 60}


def test_every_request_carries_a_default_max_tokens_that_fits_the_course():
    from tinyagent import build_system_prompt
    from tinyagent.llm_client import DEFAULT_MAX_TOKENS
    from tinyagent.shop import Shop, shop_registry

    llm = LlmClient("http://127.0.0.1:9/v1", None, "m")
    ping = [{"role": "user", "content": "hi"}]
    assert llm.build_request(ping)["max_tokens"] == DEFAULT_MAX_TOKENS
    assert llm.build_request(ping, max_tokens=12)["max_tokens"] == 12
    assert "max_tokens" not in LlmClient("http://127.0.0.1:9/v1", None, "m", max_tokens=None).build_request(ping)
    # The course's longest reply (lesson 04: the refund request without stop, invented Observations and
    # all) fits under the cap with room to spare, so the classroom model behaves as before.
    messages = [
        {"role": "system", "content": build_system_prompt(shop_registry(Shop(":memory:")), "zh")},
        {"role": "user", "content": "我上周买的扫地机不回充了，修不好我想退。订单号 88231。"},
    ]
    longest = LlmClient.classroom().chat(messages)
    assert longest.finish_reason == "stop"
    assert longest.usage["completion_tokens"] * 2 <= DEFAULT_MAX_TOKENS


LLAMA_CPP_TIMINGS = {"cache_n": 540, "prompt_n": 12, "prompt_ms": 80.5, "predicted_n": 30, "predicted_ms": 900.0}


def test_llama_cpp_is_recognised_by_its_first_reply_and_then_asked_to_keep_the_prompt(scripted_server):
    first = completion()
    first["timings"] = LLAMA_CPP_TIMINGS
    scripted_server.reply((200, first), (200, completion()), (200, completion()))
    llm = client(scripted_server)
    assert llm.llama_cpp is None
    llm.chat(MESSAGES, stop=["Observation:"])
    assert llm.llama_cpp is True
    llm.chat(MESSAGES, stop=["Observation:"])
    llm.chat(MESSAGES, max_tokens=40)
    sent = [r["json"] for r in scripted_server.requests]
    assert "cache_prompt" not in sent[0] and sent[0]["max_tokens"] == DEFAULT_MAX_TOKENS  # not known yet
    # One step (a request with stop): capped to fit a step; a cap given to chat() is kept as given.
    assert (sent[1]["cache_prompt"], sent[1]["max_tokens"]) == (True, STEP_MAX_TOKENS)
    assert (sent[2]["cache_prompt"], sent[2]["max_tokens"]) == (True, 40)


@pytest.mark.parametrize("timings", [None, {"predicted_ms": 12.5}, "fast"], ids=["none", "not llama.cpp's", "not a dict"])
def test_other_servers_get_neither_cache_prompt_nor_the_step_cap(scripted_server, timings):
    first = completion()
    if timings is not None:
        first["timings"] = timings
    scripted_server.reply((200, first), (200, completion()))
    llm = client(scripted_server)
    llm.chat(MESSAGES, stop=["Observation:"])
    llm.chat(MESSAGES, stop=["Observation:"])
    assert llm.llama_cpp is False
    for sent in scripted_server.requests:
        assert "cache_prompt" not in sent["json"]
        assert sent["json"]["max_tokens"] == DEFAULT_MAX_TOKENS


def test_on_llama_cpp_the_step_cap_never_raises_a_lower_cap_or_adds_one_where_none_was_asked():
    llm = LlmClient("http://127.0.0.1:9/v1", None, "m", max_tokens=64)
    llm.llama_cpp = True
    assert llm.build_request(MESSAGES, stop="Observation:")["max_tokens"] == 64
    assert llm.build_request(MESSAGES)["max_tokens"] == 64  # not one step: the client's own cap
    uncapped = LlmClient("http://127.0.0.1:9/v1", None, "m", max_tokens=None)
    uncapped.llama_cpp = True
    assert "max_tokens" not in uncapped.build_request(MESSAGES, stop="Observation:")
    # A caller who says otherwise wins, cache_prompt included.
    assert llm.build_request(MESSAGES, cache_prompt=False)["cache_prompt"] is False


def test_in_a_notebook_a_model_error_shows_as_its_message_not_the_packages_frames(capsys):
    """A learner whose .env points at nothing sees the one line that says so (IPython prints what
    `_render_traceback_()` returns), and the cell still fails; the whole traceback is kept for whoever asks."""
    result, shown = run_in_ipython("from tinyagent import LlmClient\n"
                                   "LlmClient('http://127.0.0.1:9/v1', 'k', 'm', connect_timeout=1)"
                                   ".chat([{'role': 'user', 'content': 'hi'}])", capsys)
    assert not result.success and isinstance(result.error_in_exec, LlmConnectionError)
    assert [line for line in shown.splitlines() if line.strip()] == [
        f"LlmConnectionError: {result.error_in_exec}"], shown
    assert "could not reach" in shown and "check TINYAGENT_API_URL" in shown
    assert "llm_client.py" in "".join(traceback.format_exception(result.error_in_exec))


@pytest.mark.parametrize("usage", [{"prompt_tokens": -1_000_000_000, "completion_tokens": 1_000_000_001},
                                   {"total_tokens": -1}])
def test_a_negative_token_count_is_no_usage_a_reply_can_have(scripted_server, usage):
    # A server's usage of -10**9 prompt tokens made every call cost 1 token to lesson 10's TokenBudget.
    scripted_server.reply((200, {"choices": [{"message": {"content": "Final Answer: ok"}, "finish_reason": "stop"}],
                                 "usage": usage}))
    with pytest.raises(BadResponseError, match="where a count of tokens is 0 or more"):
        LlmClient(scripted_server.url, None, "m", max_retries=0).chat([{"role": "user", "content": "hi"}])


@pytest.mark.parametrize(("message", "first", "named"), [
    ("no such table: turns\nat line 2", "no such table: turns", "OperationalError: no such table: turns"),
    ("", "OperationalError", "OperationalError: "),
    ("\nthe reason on line two", "the reason on line two", "OperationalError: "),
    ("  数据库已锁定  ", "数据库已锁定", "OperationalError:   数据库已锁定  "),
])
def test_an_error_in_one_line_names_its_class_where_its_message_has_none(message, first, named):
    # first_line: a one-line error's text (a command's "error: ...", a service's JSON message); named_first_line: a
    # table row's "why it failed" (lesson 18's evaluation, lesson 20's frameworks), its class named first.
    import sqlite3

    exc = sqlite3.OperationalError(message)
    assert first_line(exc) == first
    assert named_first_line(exc) == named


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 422, 429, 500, 502, 503, 599])
def test_an_http_status_and_the_same_code_in_a_reply_of_http_200_are_the_same_error(scripted_server, status):
    # One table (errors.error_class) names the class of both; each message still says what to do.
    classes = []
    for reply in [(status, {"error": {"message": "no"}}), (200, {"error": {"message": "no", "code": status}})]:
        scripted_server.reply(reply)
        with pytest.raises(LlmError) as info:
            client(scripted_server, max_retries=0).chat(MESSAGES)
        classes.append(type(info.value))
    assert classes[0] is classes[1] is error_class(status)
