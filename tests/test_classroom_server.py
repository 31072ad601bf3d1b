"""The classroom server's API contract, checked with plain `requests`, `http.client` and raw sockets.

Most tests inject an echo responder (the model "says" the last user message), so each test states the
text it needs and checks only the server's rules: stop, max_tokens, streaming, usage, tools, errors.
The tests at the end use the real classroom model (`behaviour.respond`).
"""

from __future__ import annotations

import http.client
import json
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import tracemalloc
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from tinyagent.classroom import behaviour
from tinyagent.classroom import server as server_module
from tinyagent.classroom.reply import Reply, ToolCallRequest
from tinyagent.classroom.server import (
    CREATED,
    TOKENS_PER_CHUNK,
    ClassroomServer,
    StopScanner,
    cut_text,
    ensure_classroom_server,
    stream_text,
)
from tinyagent.classroom.tokens import count_prompt_tokens, count_tokens, split_tokens, truncate_to_tokens

from .conftest import PATIENCE, ServerProcess, dripped_until_closed, port_refuses_connections
from .serving_process import wait_for

MODELS = {"classroom": "echo", "classroom-ignores-stop": "echo, ignoring stop"}
TOOL_CALLS = (
    ToolCallRequest("queryOrder", {"order_id": "88231"}),
    ToolCallRequest("searchKnowledge", {"query": "扫地机 退货"}),
)


def echo(request: dict) -> Reply:
    """A scripted model: it says the last message's content, with a few special contents."""
    text = request["messages"][-1].get("content")
    if text == "malformed":
        raise ValueError("messages[0] has no content")
    if text == "crash":
        raise RuntimeError("the model fell over")
    if text == "not a reply":
        return "just a string"
    if request.get("tools"):
        return Reply(None, TOOL_CALLS)
    return Reply(text, ignores_stop=request["model"] == "classroom-ignores-stop")


@pytest.fixture(scope="module")
def room():
    with ClassroomServer(responder=echo, models=MODELS) as server:
        yield server


def user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def chat(room, text: str = "Hello there.", **params) -> requests.Response:
    return requests.post(
        room.chat_url, json={"model": "classroom", "messages": user(text), **params}, timeout=PATIENCE
    )


def stream_events(room, text: str, **params) -> tuple[bytes, list[dict]]:
    """POST with stream=true; the raw body, and the chunks it carried (all events but [DONE])."""
    response = chat(room, text, stream=True, **params)
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/event-stream")
    raw = response.content
    events = re.findall(rb"data: ([^\n]*)\n\n", raw)
    assert b"".join(b"data: " + e + b"\n\n" for e in events) == raw, (
        "every byte belongs to a 'data: ...' event"
    )
    assert events[-1] == b"[DONE]"
    return raw, [json.loads(e) for e in events[:-1]]


def streamed_content(chunks: list[dict]) -> str:
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])


def assert_error(response: requests.Response, status: int) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["Content-Type"] == "application/json"
    error = response.json()["error"]
    assert isinstance(error["message"], str) and error["message"]
    assert {"message", "type", "code"} <= set(error)
    return error


def raw_exchange(room, data: bytes) -> bytes:
    """Send bytes on a fresh socket and read the whole answer until the server closes."""
    with socket.create_connection(("127.0.0.1", room.port), timeout=PATIENCE) as sock:
        sock.sendall(data)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


# --- the token rule ---------------------------------------------------------------------------------


def test_token_rule_counts_ascii_runs_cjk_characters_and_punctuation():
    assert count_tokens("Action Input: 88231") == 4
    assert count_tokens("订单号 88231。") == 5
    assert count_tokens("SF1234567890") == 1
    assert count_tokens('{"order_id": "88231"}') == 11  # { " order _ id " : " 88231 " }
    assert count_tokens("   \n\t ") == 0
    assert count_tokens(None) == 0


def test_truncate_keeps_exactly_n_tokens_and_leaves_short_text_alone():
    text = "Thought: 查询订单 88231 的状态。\n"
    assert truncate_to_tokens(text, 5) == "Thought: 查询订"
    assert count_tokens(truncate_to_tokens(text, 5)) == 5
    assert truncate_to_tokens(text, count_tokens(text)) == text
    assert truncate_to_tokens(text, 100) == text
    assert truncate_to_tokens(text, 0) == ""


def test_split_tokens_pieces_join_back_to_the_text():
    for text in ["", "  ", "a b  ", "Thought: 查询 88231\n\nAction: queryOrder \n", "😀x y"]:
        pieces = split_tokens(text)
        assert "".join(pieces) == text
        assert all(count_tokens(p) == 1 for p in pieces if p.strip())


def test_prompt_tokens_add_three_per_message_and_three_for_the_reply():
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "订单号 88231。"}]
    assert count_prompt_tokens(messages) == (3 + 3) + (3 + 5) + 3


# --- stop and max_tokens, without HTTP -----------------------------------------------------------------


def test_stop_scanner_catches_a_stop_string_split_across_pieces():
    scanner = StopScanner(("Observation:",))
    # Only what could be the start of the stop string is held back ("Observ"), not a fixed tail.
    assert scanner.feed("Action Input: 88231\nObserv") == "Action Input: 88231\n"
    assert scanner.feed("ation: fake") == ""
    assert scanner.stopped


def test_stop_scanner_waits_for_a_longer_stop_string_that_starts_earlier():
    # "c" is complete in "abc", but "abcd" may be starting at 0: the whole text "abcd" is cut at 0.
    scanner = StopScanner(("abcd", "c"))
    assert scanner.feed("abc") == ""
    assert scanner.feed("d") == "" and scanner.stopped
    assert cut_text("abcd", ("abcd", "c"), None) == ("", "stop")


@pytest.mark.parametrize("max_tokens", [None, 1, 2, 3, 5, 8, 13, 100])
@pytest.mark.parametrize(
    "stop",
    [
        (),
        ("Observation:",),
        ("Obs",),
        ("\n",),
        ("Z", "Action"),
        ("88231\nObservation: 88",),
        ("：",),
        ("不回充",),
    ],
)
def test_streamed_text_equals_the_cut_text_for_every_stop_and_budget(stop, max_tokens):
    text = "Thought: 扫地机不回充了。\nAction: queryOrder\nAction Input: 88231\nObservation: 88231 已签收\n"
    deltas, finish_reason = stream_text(text, stop, max_tokens)
    assert ("".join(deltas), finish_reason) == cut_text(text, stop, max_tokens)
    assert all(deltas)


# --- a plain completion --------------------------------------------------------------------------------


def test_plain_completion_has_the_openai_shape(room):
    response = chat(room, "Thought: 用户问订单。\nFinal Answer: 已签收。")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/json"
    body = response.json()
    assert body["id"].startswith("chatcmpl-classroom-")
    assert body["object"] == "chat.completion"
    assert body["created"] == CREATED == 1782777600
    assert body["model"] == "classroom"
    assert body["system_fingerprint"] == "classroom"
    assert body["choices"] == [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Thought: 用户问订单。\nFinal Answer: 已签收。"},
            "logprobs": None,
            "finish_reason": "stop",
        }
    ]
    assert set(body["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}


def test_the_same_request_gets_the_same_bytes_and_another_request_another_id(room):
    first, second = chat(room, "same"), chat(room, "same")
    assert first.content == second.content
    assert chat(room, "other").json()["id"] != first.json()["id"]


def test_model_defaults_to_classroom_and_temperature_seed_are_ignored(room):
    response = requests.post(
        room.chat_url, json={"messages": user("hi"), "temperature": 0.7, "seed": 42, "top_p": 0.5}, timeout=PATIENCE
    )
    assert response.status_code == 200
    assert response.json()["model"] == "classroom"
    assert response.json()["choices"][0]["message"]["content"] == "hi"


def test_path_without_v1_prefix_works_too(room):
    url = f"http://127.0.0.1:{room.port}/chat/completions"
    response = requests.post(url, json={"messages": user("hi")}, timeout=PATIENCE)
    assert response.json()["choices"][0]["message"]["content"] == "hi"


def test_models_are_listed_and_retrievable(room):
    for path in ("/v1/models", "/models"):
        body = requests.get(f"http://127.0.0.1:{room.port}{path}", timeout=PATIENCE).json()
        assert body["object"] == "list"
        assert [m["id"] for m in body["data"]] == list(MODELS)
    assert requests.get(room.base_url + "/models/classroom", timeout=PATIENCE).json()["id"] == "classroom"
    assert_error(requests.get(room.base_url + "/models/gpt-4", timeout=PATIENCE), 404)


# --- stop ----------------------------------------------------------------------------------------------

REACT = "Thought: 先查订单。\nAction: queryOrder\nAction Input: 88231\nObservation: 订单已签收\nThought: 好"


def test_stop_string_cuts_the_text_before_it(room):
    choice = chat(room, REACT, stop="Observation:").json()["choices"][0]
    assert choice["message"]["content"] == "Thought: 先查订单。\nAction: queryOrder\nAction Input: 88231\n"
    assert choice["finish_reason"] == "stop"


def test_the_earliest_stop_string_in_the_list_wins(room):
    content = chat(room, REACT, stop=["Observation:", "Action Input:", "Thought: 好"]).json()
    assert content["choices"][0]["message"]["content"] == "Thought: 先查订单。\nAction: queryOrder\n"


def test_a_stop_string_that_never_occurs_changes_nothing(room):
    choice = chat(room, REACT, stop=["Final Answer:"]).json()["choices"][0]
    assert choice["message"]["content"] == REACT
    assert choice["finish_reason"] == "stop"


def test_ignores_stop_variant_returns_the_text_uncut(room):
    body = {"model": "classroom-ignores-stop", "messages": user(REACT), "stop": ["Observation:"]}
    choice = requests.post(room.chat_url, json=body, timeout=PATIENCE).json()["choices"][0]
    assert choice["message"]["content"] == REACT
    _, chunks = stream_events(room, REACT, stop=["Observation:"], model="classroom-ignores-stop")
    assert streamed_content(chunks) == REACT


# --- max_tokens ----------------------------------------------------------------------------------------


def test_max_tokens_cuts_to_that_many_tokens_with_finish_reason_length(room):
    body = chat(room, "Thought: 查询订单 88231 的状态。", max_tokens=5).json()
    assert body["choices"][0]["message"]["content"] == "Thought: 查询订"
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["usage"]["completion_tokens"] == 5


def test_max_completion_tokens_is_accepted_as_well(room):
    body = chat(room, "one two three four", max_completion_tokens=2).json()
    assert body["choices"][0]["message"]["content"] == "one two"
    assert body["choices"][0]["finish_reason"] == "length"


def test_a_budget_the_text_fits_in_finishes_with_stop(room):
    choice = chat(room, "one two three", max_tokens=3).json()["choices"][0]
    assert (choice["message"]["content"], choice["finish_reason"]) == ("one two three", "stop")


def test_a_stop_string_beyond_the_budget_does_not_count(room):
    choice = chat(room, "a b c STOP d", stop="STOP", max_tokens=2).json()["choices"][0]
    assert (choice["message"]["content"], choice["finish_reason"]) == ("a b", "length")
    choice = chat(room, "a b c STOP d", stop="STOP", max_tokens=4).json()["choices"][0]
    assert (choice["message"]["content"], choice["finish_reason"]) == ("a b c ", "stop")


# --- usage ---------------------------------------------------------------------------------------------


def test_usage_follows_the_token_rule(room):
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "订单号 88231。"}]
    usage = requests.post(room.chat_url, json={"messages": messages}, timeout=PATIENCE).json()["usage"]
    # system: 3 + 3 ("Be" "brief" "."), user: 3 + 5 ("订" "单" "号" "88231" "。"), the reply's start: 3
    assert usage == {"prompt_tokens": 17, "completion_tokens": 5, "total_tokens": 22}


def test_completion_tokens_count_the_cut_text_not_the_whole_text(room):
    usage = chat(room, "a b c d e f", stop=" d").json()["usage"]
    assert usage["completion_tokens"] == 3


# --- streaming -----------------------------------------------------------------------------------------


def test_stream_is_server_sent_events_that_add_up_to_the_plain_answer(room):
    raw, chunks = stream_events(room, REACT)
    plain = chat(room, REACT).json()
    assert raw.endswith(b"data: [DONE]\n\n")
    assert len({c["id"] for c in chunks}) == 1 and chunks[0]["id"].startswith("chatcmpl-classroom-")
    assert all(c["object"] == "chat.completion.chunk" and c["created"] == CREATED for c in chunks)
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert chunks[-1]["choices"][0] == {"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}
    middle = chunks[1:-1]
    assert len(middle) > 3, "the content arrives in several deltas"
    assert all(1 <= count_tokens(c["choices"][0]["delta"]["content"]) <= TOKENS_PER_CHUNK for c in middle)
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1])
    assert streamed_content(chunks) == plain["choices"][0]["message"]["content"]
    assert "usage" not in chunks[0]


def test_stream_applies_stop_and_max_tokens_like_the_plain_answer(room):
    for params in ({"stop": "Observation:"}, {"stop": ["Action", "Thought: 好"]}, {"max_tokens": 7}):
        _, chunks = stream_events(room, REACT, **params)
        plain = chat(room, REACT, **params).json()["choices"][0]
        assert streamed_content(chunks) == plain["message"]["content"]
        assert chunks[-1]["choices"][0]["finish_reason"] == plain["finish_reason"]


def test_a_stop_string_split_across_two_chunks_still_stops(room):
    # TOKENS_PER_CHUNK - 1 words, then "Observation": the first chunk ends inside the stop string.
    text = " ".join(["w"] * (TOKENS_PER_CHUNK - 1)) + " Observation: 订单已签收"
    _, unstopped = stream_events(room, text)
    first_delta = unstopped[1]["choices"][0]["delta"]["content"]
    assert first_delta.endswith("Observation") and not first_delta.endswith("Observation:"), "precondition"

    _, chunks = stream_events(room, text, stop="Observation:")
    assert streamed_content(chunks) == " ".join(["w"] * (TOKENS_PER_CHUNK - 1)) + " "
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert not any("Observation" in (c["choices"][0]["delta"].get("content") or "") for c in chunks)


def test_include_usage_adds_a_last_chunk_with_usage_and_no_choices(room):
    _, chunks = stream_events(room, REACT, stream_options={"include_usage": True})
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"] == chat(room, REACT).json()["usage"]
    assert all(c["usage"] is None for c in chunks[:-1])
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"


# --- tools ---------------------------------------------------------------------------------------------

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "queryOrder",
            "description": "Look up an order",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        },
    }
]


def test_tool_calls_come_back_in_the_api_shape(room):
    body = chat(room, "查订单 88231", tools=TOOLS, tool_choice="auto").json()
    choice = body["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    calls = choice["message"]["tool_calls"]
    assert [c["type"] for c in calls] == ["function", "function"]
    assert [c["function"]["name"] for c in calls] == ["queryOrder", "searchKnowledge"]
    assert [json.loads(c["function"]["arguments"]) for c in calls] == [
        {"order_id": "88231"},
        {"query": "扫地机 退货"},
    ]
    assert all(re.fullmatch(r"call_[0-9a-f]{24}", c["id"]) for c in calls)
    assert calls[0]["id"] != calls[1]["id"]
    assert body["usage"]["completion_tokens"] == sum(
        count_tokens(c["function"]["name"]) + count_tokens(c["function"]["arguments"]) for c in calls
    )
    assert body["usage"]["prompt_tokens"] == count_prompt_tokens(user("查订单 88231"), TOOLS)


def test_tool_call_ids_are_stable_for_a_request_and_differ_between_requests(room):
    ids = [c["id"] for c in chat(room, "查订单", tools=TOOLS).json()["choices"][0]["message"]["tool_calls"]]
    again = [c["id"] for c in chat(room, "查订单", tools=TOOLS).json()["choices"][0]["message"]["tool_calls"]]
    other = [c["id"] for c in chat(room, "查物流", tools=TOOLS).json()["choices"][0]["message"]["tool_calls"]]
    assert ids == again
    assert not set(ids) & set(other)


def test_streamed_tool_calls_come_as_indexed_deltas(room):
    _, chunks = stream_events(room, "查订单 88231", tools=TOOLS)
    plain = chat(room, "查订单 88231", tools=TOOLS).json()["choices"][0]["message"]["tool_calls"]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": None}
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    rebuilt: dict[int, dict] = {}
    for chunk in chunks[1:-1]:
        (delta,) = chunk["choices"][0]["delta"]["tool_calls"]
        call = rebuilt.setdefault(
            delta["index"], {"id": None, "type": None, "function": {"name": "", "arguments": ""}}
        )
        call["id"] = delta.get("id", call["id"])
        call["type"] = delta.get("type", call["type"])
        call["function"]["name"] += delta["function"].get("name", "")
        call["function"]["arguments"] += delta["function"].get("arguments", "")
    assert [rebuilt[i] for i in sorted(rebuilt)] == plain
    assert len(chunks) > 2 + 2 * 2, "arguments arrive in several pieces"


# --- errors --------------------------------------------------------------------------------------------


def post_raw(room, data: bytes, **headers) -> requests.Response:
    return requests.post(
        room.chat_url, data=data, headers={"Content-Type": "application/json", **headers}, timeout=PATIENCE
    )


@pytest.mark.parametrize(
    "data, param",
    [
        (b"{not json", None),
        (b"\xff\xfe\x00garbage", None),
        (b"", None),
        (b"[1, 2]", None),
        (b'"messages"', None),
        (b'{"model": "classroom"}', "messages"),
        (b'{"messages": "hi"}', "messages"),
        (b'{"messages": []}', "messages"),
        (b'{"messages": ["hi"]}', "messages[0]"),
        (b'{"messages": [{"content": "hi"}]}', "messages[0]"),
        (b'{"messages": [{"role": "user", "content": "hi"}], "stop": ["a", "b", "c", "d", "e"]}', "stop"),
        (b'{"messages": [{"role": "user", "content": "hi"}], "stop": 7}', "stop"),
        (b'{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 0}', "max_tokens"),
        (b'{"messages": [{"role": "user", "content": "hi"}], "max_tokens": "5"}', "max_tokens"),
        (
            b'{"messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": true}',
            "max_completion_tokens",
        ),
        (b'{"messages": [{"role": "user", "content": "hi"}], "n": 2}', "n"),
        (
            b'{"messages": [{"role": "user", "content": "hi"}], "stream_options": {"include_usage": true}}',
            "stream_options",
        ),
        (b'{"messages": [{"role": "user", "content": "hi"}], "model": 3}', "model"),
        (b'{"messages": [{"role": "user", "content": "malformed"}]}', "messages"),
    ],
)
def test_bad_requests_get_400_with_a_json_error(room, data, param):
    error = assert_error(post_raw(room, data), 400)
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param


def test_a_value_error_from_the_model_is_a_400_with_its_message(room):
    error = assert_error(chat(room, "malformed"), 400)
    assert error["message"] == "messages[0] has no content"


def test_unknown_model_is_404_and_lists_the_models(room):
    response = requests.post(room.chat_url, json={"model": "gpt-4o", "messages": user("hi")}, timeout=PATIENCE)
    error = assert_error(response, 404)
    assert error["code"] == "model_not_found"
    assert "gpt-4o" in error["message"] and "classroom, classroom-ignores-stop" in error["message"]


def test_unknown_path_is_404(room):
    assert_error(requests.post(f"http://127.0.0.1:{room.port}/v1/completions", json={}, timeout=PATIENCE), 404)
    assert_error(requests.get(f"http://127.0.0.1:{room.port}/", timeout=PATIENCE), 404)


def test_wrong_method_is_405_with_an_allow_header(room):
    response = requests.get(room.chat_url, timeout=PATIENCE)
    assert_error(response, 405)
    assert response.headers["Allow"] == "POST"
    response = requests.post(room.base_url + "/models", json={}, timeout=PATIENCE)
    assert_error(response, 405)
    assert response.headers["Allow"] == "GET"
    assert_error(requests.delete(room.chat_url, timeout=PATIENCE), 405)
    # TRACE and CONNECT were a 501, a server's error for a method a client may well send
    for method in ("TRACE", "CONNECT"):
        response = requests.request(method, room.chat_url, timeout=PATIENCE)
        assert_error(response, 405)
        assert response.headers["Allow"] == "POST"


def test_a_crashing_model_is_a_500_json_error(room):
    error = assert_error(chat(room, "crash"), 500)
    assert error["type"] == "server_error"
    assert "RuntimeError: the model fell over" in error["message"]
    assert "Reply" in assert_error(chat(room, "not a reply"), 500)["message"]


def test_post_without_content_length_is_411(room):
    raw = raw_exchange(
        room,
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"2\r\n{}\r\n0\r\n\r\n",
    )
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 411 ")
    assert json.loads(body)["error"]["code"] == "length_required"


def test_a_body_over_the_size_cap_is_413(room):
    raw = raw_exchange(
        room, b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n{"
    )
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413 ")
    assert json.loads(body)["error"]["code"] == "request_too_large"


def nested(depth: int) -> bytes:
    return b'{"messages": [{"role": "user", "content": "hi"}], "metadata": ' + b"[" * depth + b"]" * depth + b"}"


@pytest.mark.parametrize("data", [nested(900), nested(5_000), nested(1_000_000)], ids=["900", "5000", "1e6"])
def test_deeply_nested_json_is_the_clients_fault_400(room, data):
    error = assert_error(post_raw(room, data), 400)
    assert error["code"] == "invalid_json"
    assert "nested" in error["message"]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-32", "utf-32-be"])
def test_a_body_in_another_encoding_than_utf8_is_the_clients_fault_400(room, encoding):
    # RFC 8259: JSON between systems is UTF-8; json.loads read UTF-16 and UTF-32 too, which the service of lesson 19
    # refused. Every client of the course (OpenAI's SDK, LangChain, requests) sends UTF-8.
    data = json.dumps({"messages": [{"role": "user", "content": "hi"}]}).encode(encoding)
    error = assert_error(post_raw(room, data), 400)
    assert error["code"] == "invalid_json" and "UTF-8" in error["message"], error


def test_a_key_given_twice_is_the_clients_fault_400(room):
    # Python kept the last: {"model": a, "model": b} was b here, and whatever another reader of the same body took.
    data = b'{"messages": [{"role": "user", "content": "hi"}], "stream": false, "stream": true}'
    error = assert_error(post_raw(room, data), 400)
    assert error["code"] == "invalid_json" and "'stream'" in error["message"], error


def test_a_utf8_body_after_a_byte_order_mark_is_read(room):
    data = b"\xef\xbb\xbf" + json.dumps({"messages": [{"role": "user", "content": "你好"}]}).encode()
    answer = post_raw(room, data)
    assert answer.status_code == 200, answer.text


@pytest.mark.parametrize(
    "data",
    [
        b'{"messages": [{"role": "user", "content": "\\ud800"}]}',
        b'{"messages": [{"role": "user", "content": "fine", "\\udfff": 1}]}',
        b'{"messages": [{"role": "user", "content": "hi"}], "stop": ["\\ud83d"]}',
    ],
    ids=["content", "key", "stop"],
)
def test_a_lone_surrogate_escape_is_the_clients_fault_400(room, data):
    error = assert_error(post_raw(room, data), 400)
    assert error["code"] == "invalid_json"
    assert "surrogate" in error["message"]


def test_a_surrogate_pair_escape_is_an_ordinary_character(room):
    data = b'{"messages": [{"role": "user", "content": "smile \\ud83d\\ude00"}]}'
    assert post_raw(room, data).json()["choices"][0]["message"]["content"] == "smile \U0001f600"


def test_a_body_shorter_than_its_content_length_gets_408_after_the_read_timeout():
    # A short read_timeout, so the test does not wait a minute; the client side waits generously.
    with ClassroomServer(responder=echo, models=MODELS, read_timeout=0.5) as quick:
        with socket.create_connection(("127.0.0.1", quick.port), timeout=60) as sock:
            sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 100\r\n\r\n{\"mess")
            chunks = []
            while chunk := sock.recv(65536):  # the server answers, then closes the connection
                chunks.append(chunk)
        head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 408 "), head
        assert b"Connection: close" in head
        assert json.loads(body)["error"]["code"] == "request_timeout"
        assert chat(quick, "still here").json()["choices"][0]["message"]["content"] == "still here"


def test_a_client_that_drips_its_body_is_cut_off_at_the_read_timeout():
    # One byte at a time, each well within the timeout: the thread is still not held past it in total.
    with ClassroomServer(responder=echo, models=MODELS, read_timeout=1.0) as quick:
        with socket.create_connection(("127.0.0.1", quick.port), timeout=60) as sock:
            sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 1000\r\n\r\n")
            answer = b""
            for _ in range(1000):
                try:
                    sock.sendall(b" ")
                except OSError:  # the server hung up on us, as it should
                    break
                time.sleep(0.1)
                sock.setblocking(False)
                try:
                    answer += sock.recv(65536)
                except BlockingIOError:
                    pass
                finally:
                    sock.setblocking(True)
                if answer:
                    break
        assert answer.startswith(b"HTTP/1.1 408 "), answer


def test_a_stranger_is_refused_before_its_body_is_read_and_the_body_is_never_held():
    # The body was read whole (up to MAX_BODY_BYTES, 8 MB) before the key was checked: any client with no key
    # could make the room hold 8 MB per connection. Refused from its headers, it is now read past and dropped.
    body = json.dumps({"messages": user("x" * 4_000_000)}).encode()
    with ClassroomServer(responder=echo, models=MODELS, api_key="right") as keyed:
        tracemalloc.start()
        try:
            baseline = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            refused = requests.post(keyed.chat_url, data=body, headers={"Content-Type": "application/json",
                                                                        "Authorization": "Bearer wrong"},
                                    timeout=PATIENCE)
            held = tracemalloc.get_traced_memory()[1] - baseline
        finally:
            tracemalloc.stop()
        # The 401 itself arrives, not a reset: the body is read after it, so closing does not throw it away.
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "invalid_api_key"
        assert held < 1_000_000, f"{held} bytes held at the peak for a refused 4 MB body"
        answer = requests.post(keyed.chat_url, data=body, headers={"Content-Type": "application/json",
                                                                   "Authorization": "Bearer right"},
                               timeout=PATIENCE)
        assert answer.status_code == 200


def test_a_refusal_from_the_headers_is_sent_before_the_body_comes():
    # The 401 sat in the handler's buffer until the body had been read past, or the read_timeout (here an hour).
    with (ClassroomServer(responder=echo, models=MODELS, read_timeout=3600, api_key="right") as keyed,
          socket.create_connection(("127.0.0.1", keyed.port), timeout=PATIENCE) as sock):
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 401 ")


@pytest.mark.parametrize("doubled", [b"Origin: http://127.0.0.1\r\nOrigin: http://evil.example\r\n",
                                     b"Host: evil.example\r\n",
                                     b"Content-Type: text/plain\r\n"], ids=["origin", "host", "content-type"])
def test_a_header_the_checks_read_sent_twice_is_a_json_400(room, doubled):
    # The first was read: a same-site Origin (or this machine's Host) before another site's passed.
    body = json.dumps({"messages": user("hi")}).encode()
    raw = raw_exchange(room, b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                             b"Content-Type: application/json\r\n" + doubled
                       + b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    head, _, rest = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 "), raw
    assert json.loads(rest)["error"]["code"] == "duplicate_header"


def test_a_refused_client_that_drips_its_body_is_still_cut_off_at_the_read_timeout():
    # The body of a refused request is read past in the same request's time: a stranger dripping it does not
    # hold the thread for longer than anyone else.
    with (ClassroomServer(responder=echo, models=MODELS, read_timeout=1.0, api_key="right") as quick,
          socket.create_connection(("127.0.0.1", quick.port), timeout=60) as sock):
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 401 ")
        assert dripped_until_closed(sock), "the refused connection was still open after 60 s of a body dripped"


@pytest.mark.parametrize("sent", [b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Pad: ", b"GET /v1/mo"],
                         ids=["headers", "request-line"])
def test_a_client_that_drips_its_head_is_cut_off_at_the_read_timeout(sent):
    # Each byte within the socket timeout, so only a bound on the whole request closes the connection; before,
    # the thread was held as long as the client dripped (a room's threads and descriptors, one learner at a time).
    with ClassroomServer(responder=echo, models=MODELS, read_timeout=1.0) as quick:
        with socket.create_connection(("127.0.0.1", quick.port), timeout=60) as sock:
            sock.sendall(sent)
            closed = dripped_until_closed(sock)
        assert closed, "the connection was still open after 60 s of a head sent a byte at a time"
        assert chat(quick, "still here").json()["choices"][0]["message"]["content"] == "still here"


SMUGGLED = b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"


@pytest.mark.parametrize(
    "headers, code",
    [
        (b"Content-Length: 51\r\nTransfer-Encoding: chunked\r\n", "ambiguous_body_length"),
        (b"Transfer-Encoding: chunked\r\nContent-Length: 51\r\n", "ambiguous_body_length"),
        (b"Content-Length: 51\r\nContent-Length: 0\r\n", "ambiguous_body_length"),
        (b"Content-Length: 51\r\nContent-Length: 51\r\n", "ambiguous_body_length"),
        (b"Content-Length: +51\r\n", "invalid_content_length"),
        (b"Content-Length: 5_1\r\n", "invalid_content_length"),
        (b"Content-Length: 5\xb9\r\n", "invalid_content_length"),  # 5 and a superscript 1, as Latin-1
        ("Content-Length: ٥١\r\n".encode(), "invalid_content_length"),  # Arabic-Indic 51, as UTF-8
    ],
    ids=["cl-te", "te-cl", "two-lengths", "two-equal-lengths", "signed-length", "underscore-length",
         "superscript-length", "arabic-indic-length"],
)
def test_a_body_length_that_could_be_read_two_ways_is_refused(room, headers, code):
    body = b'{"messages": [{"role": "user", "content": "hi"}]}\r\n'
    raw = raw_exchange(room, b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n" + body + SMUGGLED)
    head, _, rest = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 "), raw
    assert b"Connection: close" in head
    assert json.loads(rest)["error"]["code"] == code
    assert raw.count(b"HTTP/1.1 ") == 1, "nothing after the refused request is read as a request"


def test_server_survives_garbage_and_still_answers(room):
    answer = raw_exchange(room, b"\x00\x01garbage that is not HTTP\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert json.loads(answer.partition(b"\r\n\r\n")[2])["error"]["message"]
    for half_request in (  # each client hangs up before the body it announced has arrived
        b'POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 50\r\n\r\n{"messages"',
        b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 10\r\n\r\n",
        b"POST /v1/chat/comp",
    ):
        with socket.create_connection(("127.0.0.1", room.port)) as sock:
            sock.sendall(half_request)
    for data in (b"null", b"{}", b'{"messages": null}', b"\xc0\xaf" * 100):
        post_raw(room, data)
    assert chat(room, "still here").json()["choices"][0]["message"]["content"] == "still here"


def test_keep_alive_serves_several_requests_on_one_connection_even_after_an_error(room):
    connection = http.client.HTTPConnection("127.0.0.1", room.port, timeout=PATIENCE)
    try:
        bodies = [json.dumps({"messages": user("one")}), "{broken", json.dumps({"messages": user("two")})]
        statuses, sockets = [], []
        for body in bodies:
            connection.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
            response = connection.getresponse()
            assert response.getheader("Content-Length") is not None
            response.read()
            statuses.append(response.status)
            sockets.append(connection.sock)
        assert statuses == [200, 400, 200]
        assert sockets[0] is sockets[1] is sockets[2], "the connection was reused"
    finally:
        connection.close()


def test_api_key_is_required_when_set_and_never_echoed():
    with ClassroomServer(api_key="room-key-42", responder=echo, models=MODELS) as keyed:
        body = {"messages": user("hi")}
        missing = assert_error(requests.post(keyed.chat_url, json=body, timeout=PATIENCE), 401)
        wrong = requests.post(
            keyed.chat_url, json=body, headers={"Authorization": "Bearer sk-wrong"}, timeout=PATIENCE
        )
        assert "sk-wrong" not in assert_error(wrong, 401)["message"]
        assert wrong.json()["error"]["code"] == "invalid_api_key"
        assert missing["code"] == "missing_api_key"
        assert_error(requests.get(keyed.base_url + "/models", timeout=PATIENCE), 401)
        good = requests.post(
            keyed.chat_url, json=body, headers={"Authorization": "Bearer room-key-42"}, timeout=PATIENCE
        )
        assert good.status_code == 200
        assert "room-key-42" not in repr(keyed)


def test_the_server_writes_nothing_to_stderr(capfd):
    with ClassroomServer(responder=echo, models=MODELS) as quiet:
        requests.post(quiet.chat_url, json={"messages": user("hi")}, timeout=PATIENCE)
        requests.post(quiet.chat_url, data=b"{", timeout=PATIENCE)
        requests.post(quiet.chat_url, json={"messages": user("crash")}, timeout=PATIENCE)
        raw_exchange(quiet, b"BREW /pot HTTP/1.1\r\n\r\n")
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out == ""


def test_stop_frees_the_port_and_a_stopped_server_refuses_connections():
    server = ClassroomServer(responder=echo, models=MODELS).start()
    try:
        port = server.port
        assert server.running
    finally:
        server.stop()
    server.stop()  # twice is fine
    assert not server.running
    with pytest.raises(requests.ConnectionError):
        requests.get(f"http://127.0.0.1:{port}/v1/models", timeout=2)


def test_sixty_concurrent_clients_are_served_quickly(room):
    def client(i: int) -> list[str]:
        with requests.Session() as session:
            return [
                session.post(
                    room.chat_url, json={"messages": user(f"client {i} request {j}")}, timeout=PATIENCE
                ).json()["choices"][0]["message"]["content"]
                for j in range(5)
            ]

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=60) as pool:
        results = list(pool.map(client, range(60)))
    elapsed = time.perf_counter() - started
    assert results == [[f"client {i} request {j}" for j in range(5)] for i in range(60)]
    # Not a timed test (a loaded machine may be slow): a stall of TCP retries or a serialised
    # server would take minutes; the figure is printed for whoever runs with -s.
    assert elapsed < PATIENCE, f"300 requests from 60 clients took {elapsed:.1f}s"
    print(f"\n300 requests from 60 clients took {elapsed:.2f} s")


def open_silent_connections(port: int, count: int) -> list[socket.socket]:
    """`count` connections that complete the TCP handshake and then never send a byte."""
    connections = []
    try:
        for _ in range(count):
            connection = socket.create_connection(("127.0.0.1", port), timeout=60)
            # SO_LINGER 0: close() sends a reset, as a client that dies or a hostile one does
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            connections.append(connection)
    except BaseException:
        close_all(connections)
        raise
    return connections


def close_all(connections: list[socket.socket]) -> None:
    for connection in connections:
        connection.close()


def test_a_burst_of_dead_connections_does_not_stall_the_server():
    import resource

    count = 1000
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 2 * count + 256:  # both ends of each connection are ours
        pytest.skip(f"needs {2 * count + 256} file descriptors, the limit is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 2 * count + 256), hard))
    try:
        with ClassroomServer(responder=echo, models=MODELS) as server:
            threads_before = threading.active_count()
            silent = open_silent_connections(server.port, count)
            try:
                # The request after them is accepted after them: all 1,000 are in the server by now.
                assert chat(server, "after the silent ones").status_code == 200
                # A connection that has sent nothing holds no thread (the old server held one each).
                assert threading.active_count() < threads_before + 50
                # What one request costs on this machine now, with the silent ones in the server: the baseline.
                started = time.perf_counter()
                assert chat(server, "before the burst").status_code == 200
                baseline = time.perf_counter() - started
            finally:
                started = time.perf_counter()
                close_all(silent)  # all at once, with resets
            response = requests.post(server.chat_url, json={"messages": user("still here")}, timeout=120)
            stall = time.perf_counter() - started
            assert response.json()["choices"][0]["message"]["content"] == "still here"
            print(f"\na request right after {count} connections reset at once took {stall * 1000:.0f} ms"
                  f" (one before the burst: {baseline * 1000:.0f} ms)")
            # The old bug: about 10 ms for each dead connection, 10 s in all before the next request was even
            # accepted. Unbroken this takes some 15 ms. The bound is 3 s (200 times that), or 20 times the
            # baseline on a machine so loaded that one request is slow, but never above 5 s: still half the old
            # stall, so the bug cannot come back under any load, and a busy machine does not fail the test.
            bound = min(5.0, max(3.0, 20 * baseline))
            assert stall < bound, (f"a request after {count} connections were reset took {stall:.1f} s (one before"
                                   f" the burst took {baseline:.2f} s): dead connections stall the server")
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


LOW_FD_SERVER = """
import resource, sys
from tinyagent.classroom.server import ClassroomServer
resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
server = ClassroomServer(read_timeout=3600)  # silent connections would stay for an hour
print(f"port {server.port}", flush=True)
server.serve_forever()
"""


def test_silent_connections_that_use_up_the_file_descriptors_make_room_for_a_real_client():
    with ServerProcess(code=LOW_FD_SERVER) as process:
        port = int(process.wait_for_line("port ").split()[1])
        silent = open_silent_connections(port, 100)  # more than the server's 64 descriptors
        try:
            response = requests.post(
                f"http://127.0.0.1:{port}/v1/chat/completions", json={"messages": user("hi")}, timeout=PATIENCE
            )
            assert response.status_code == 200
        finally:
            close_all(silent)
        assert process.stop(signal.SIGTERM) == 0, process.output()


def test_a_silent_connection_is_closed_after_the_read_timeout():
    with ClassroomServer(responder=echo, models=MODELS, read_timeout=0.5) as quick:
        with socket.create_connection(("127.0.0.1", quick.port), timeout=60) as silent:
            assert silent.recv(1) == b""  # the server closed it (well within the 60 s we wait)
        assert chat(quick, "still here").status_code == 200


@pytest.mark.parametrize("content_type", ["text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x", None])
def test_a_post_a_web_page_could_send_without_asking_is_refused(content_type):
    # A page on any site may POST these to 127.0.0.1 without a preflight: the room answered them all (200).
    with ClassroomServer(responder=echo, models=MODELS) as server:
        headers = {"Content-Type": content_type} if content_type else {}
        answer = requests.post(server.chat_url, data=json.dumps({"messages": user("hi")}), headers=headers,
                               timeout=PATIENCE)
        assert answer.status_code == 415 and answer.json()["error"]["code"] == "unsupported_media_type"


def test_a_post_from_another_site_s_page_is_refused_and_one_from_the_room_s_own_is_taken():
    with ClassroomServer(responder=echo, models=MODELS) as server:
        body = {"messages": user("hi")}
        foreign = requests.post(server.chat_url, json=body, headers={"Origin": "http://evil.example"}, timeout=PATIENCE)
        assert foreign.status_code == 403 and foreign.json()["error"]["code"] == "cross_site"
        own = requests.post(server.chat_url, json=body, headers={"Origin": f"http://127.0.0.1:{server.port}"},
                            timeout=PATIENCE)
        assert own.status_code == 200


@pytest.mark.parametrize("request_bytes, status, code", [
    (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://[\r\n", b"403", "cross_site"),
    (b"GET http://[/v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n", b"400", "invalid_request_target"),
    (b"POST http://[::1/v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n", b"400", "invalid_request_target"),
], ids=["origin", "get-target", "post-target"])
def test_an_origin_or_a_target_urlsplit_cannot_read_is_a_json_4xx_without_a_traceback(request_bytes, status, code,
                                                                                     capfd):
    # urlsplit raises ValueError ("Invalid IPv6 URL") for both: they were a 500, with a traceback on stderr.
    body = json.dumps({"messages": user("hi")}).encode()
    request_bytes += (b"Content-Type: application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n"
                      % len(body) + body)
    with ClassroomServer(responder=echo, models=MODELS, verbose=True) as server:
        head, _, answer = raw_exchange(server, request_bytes).partition(b"\r\n\r\n")
        assert head.split(b" ")[1] == status, head
        assert json.loads(answer)["error"]["code"] == code
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.parametrize("sent", [b"GET /v1/mod", (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                           b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{")],
                         ids=["request-line", "body"])
def test_a_client_that_resets_mid_request_leaves_no_traceback_on_a_verbose_room(sent, capfd):
    # The `classroom` command is verbose: a reset in the request line printed socketserver's traceback of the
    # ConnectionResetError, so anyone who could reach the room could fill the teacher's terminal with them.
    with ClassroomServer(responder=echo, models=MODELS, verbose=True) as server:
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=PATIENCE)
        sock.sendall(sent)
        wait_for(lambda: server._httpd._open, "the connection to be served")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with a reset
        sock.close()
        wait_for(lambda: not server._httpd._open, "the connection's thread to end")
        assert requests.get(server.base_url + "/models", timeout=PATIENCE).status_code == 200
    assert "Traceback" not in capfd.readouterr().err


def test_a_preflight_is_refused_with_405():
    with ClassroomServer(responder=echo, models=MODELS) as server:
        answer = requests.options(server.chat_url, headers={"Origin": "http://evil.example"}, timeout=PATIENCE)
        assert answer.status_code == 405 and answer.headers["Allow"] == "POST"
        assert "Access-Control-Allow-Origin" not in answer.headers


def test_stop_closes_an_idle_keep_alive_connection():
    server = ClassroomServer(responder=echo, models=MODELS, read_timeout=3600).start()
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=PATIENCE) as connection:
            body = json.dumps({"messages": user("hi")}).encode()
            connection.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n" % len(body) + body
            )
            assert connection.recv(65536).startswith(b"HTTP/1.1 200 ")
            server.stop()  # the connection is idle, kept alive for a next request that never comes
            # Closed by the stop, not an hour later by the idle timeout (we give up long before that).
            assert connection.recv(65536) == b""
    finally:
        server.stop()


# --- with the real classroom model ---------------------------------------------------------------------

TOOL_LIST = (
    "1. queryOrder - 查询订单状态，输入订单号\n"
    "2. applyRefund - 为订单申请退款，输入订单号\n"
    "3. searchKnowledge - 搜索售后知识库，输入问题\n"
    "4. getCurrentTime - 获取当前时间，无需输入\n"
)
REFUND = "我上周买的扫地机不回充了，修不好我想退。订单号 88231。"


def refund_request(**params) -> dict:
    from tinyagent.prompts import build_system_prompt

    messages = [
        {"role": "system", "content": build_system_prompt(TOOL_LIST, "zh")},
        {"role": "user", "content": REFUND},
    ]
    return {"model": "classroom", "messages": messages, **params}


@pytest.fixture(scope="module")
def classroom():
    return ensure_classroom_server()


def test_ensure_classroom_server_is_one_server_however_often_it_is_called(classroom):
    with ThreadPoolExecutor(max_workers=8) as pool:
        servers = list(pool.map(lambda _: ensure_classroom_server(), range(16)))
    assert all(s is classroom for s in servers)
    assert ensure_classroom_server().port == classroom.port
    assert classroom.running
    assert server_module._room is classroom


def test_classroom_models_are_the_behaviour_modules(classroom):
    listed = requests.get(classroom.base_url + "/models", timeout=PATIENCE).json()["data"]
    assert [m["id"] for m in listed] == list(behaviour.MODELS)
    assert {"classroom", "classroom-ignores-stop", "classroom-verbose"} <= set(behaviour.MODELS)


def test_without_stop_the_classroom_model_invents_an_observation(classroom):
    content = requests.post(classroom.chat_url, json=refund_request(), timeout=PATIENCE).json()
    assert "Observation:" in content["choices"][0]["message"]["content"]


def test_with_stop_the_classroom_model_ends_after_the_action_input(classroom):
    body = requests.post(classroom.chat_url, json=refund_request(stop=["Observation:"]), timeout=PATIENCE).json()
    choice = body["choices"][0]
    assert choice["finish_reason"] == "stop"
    assert choice["message"]["content"].rstrip().endswith("Action Input: 88231")
    assert "Observation" not in choice["message"]["content"]


def test_classroom_ignores_stop_variant_keeps_typing(classroom):
    body = refund_request(stop=["Observation:"], model="classroom-ignores-stop")
    content = requests.post(classroom.chat_url, json=body, timeout=PATIENCE).json()["choices"][0]["message"][
        "content"
    ]
    assert "Observation:" in content


def test_classroom_verbose_runs_out_of_max_tokens(classroom):
    body = refund_request(max_tokens=50, model="classroom-verbose")
    body = requests.post(classroom.chat_url, json=body, timeout=PATIENCE).json()
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["usage"]["completion_tokens"] == 50


def test_classroom_stream_matches_the_plain_answer(classroom):
    plain = requests.post(classroom.chat_url, json=refund_request(stop=["Observation:"]), timeout=PATIENCE).json()
    response = requests.post(
        classroom.chat_url, json=refund_request(stop=["Observation:"], stream=True), timeout=PATIENCE
    )
    chunks = [json.loads(e) for e in re.findall(rb"data: ([^\n]*)\n\n", response.content)[:-1]]
    assert streamed_content(chunks) == plain["choices"][0]["message"]["content"]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_the_room_server_prints_the_banner_serves_and_stops_cleanly_on_a_signal(signum):
    # Started with SIGINT ignored, as a background job or a CI runner starts it: Python then never
    # raises KeyboardInterrupt, so only the server's own handlers can stop it.
    with ServerProcess("classroom", "--port", "0", "--api-key", "room-key", ignore_sigint=True) as room:
        room.wait_for_line("Press Ctrl-C")
        banner = room.stdout
        assert "classroom model" in banner and "not a language model" in banner.lower()
        url = re.search(r"^TINYAGENT_API_URL=(http://127\.0\.0\.1:(\d+)/v1/chat/completions)$", banner, re.MULTILINE)
        assert url, banner
        assert "TINYAGENT_API_KEY=room-key\n" in banner
        assert "TINYAGENT_MODEL=classroom\n" in banner
        response = requests.post(
            url[1], json=refund_request(stop=["Observation:"]), headers={"Authorization": "Bearer room-key"},
            timeout=60,
        )  # fmt: skip
        assert response.status_code == 200
        assert room.stop(signum) == 0, room.output()
        assert room.stderr_lines[-1] == f"classroom model stopped ({signal.Signals(signum).name}).\n"
        assert "Traceback" not in room.stderr
        assert port_refuses_connections(int(url[2]))


def test_sixty_clients_of_the_real_model_are_served_quickly(classroom):
    body = refund_request(stop=["Observation:"])

    def client(_: int) -> set[str]:
        with requests.Session() as session:
            return {
                session.post(classroom.chat_url, json=body, timeout=PATIENCE).json()["choices"][0]["message"][
                    "content"
                ]
                for _ in range(5)
            }

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=60) as pool:
        answers = set().union(*pool.map(client, range(60)))
    elapsed = time.perf_counter() - started
    assert len(answers) == 1, "every client got the same, deterministic answer"
    # Not a timed test (a loaded machine may be slow): a stall of TCP retries or a serialised
    # server would take minutes; the figure is printed for whoever runs with -s.
    assert elapsed < PATIENCE, f"300 requests from 60 clients took {elapsed:.1f}s"
    print(f"\n300 requests from 60 clients took {elapsed:.2f} s")


def test_the_in_process_server_stops_quietly_when_the_interpreter_exits():
    code = (
        "import requests\n"
        "from tinyagent.classroom.server import ensure_classroom_server\n"
        "server = ensure_classroom_server()\n"
        "body = {'messages': [{'role': 'user', 'content': 'hi'}]}\n"
        "print(requests.post(server.chat_url, json=body, timeout=120).status_code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=PATIENCE
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "200\n", "")


def test_identical_requests_are_answered_from_the_cache_byte_for_byte():
    from tinyagent.classroom.server import ClassroomServer

    body = {"model": "classroom", "messages": [{"role": "user", "content": "你好"}]}
    with ClassroomServer() as room:
        first = requests.post(room.chat_url, json=body, timeout=PATIENCE)
        second = requests.post(room.chat_url, json=body, timeout=PATIENCE)
        assert first.content == second.content
        assert room.answers.hits == 1
        streamed = requests.post(room.chat_url, json={**body, "stream": True}, timeout=PATIENCE)
        assert streamed.text.endswith("data: [DONE]\n\n")
        assert room.answers.hits == 1  # streams are never served from the cache


def test_the_answer_cache_is_bounded_in_bytes_and_keeps_no_request_body():
    from tinyagent.classroom.server import AnswerCache

    cache = AnswerCache(max_bytes=100_000)
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        for i in range(100):
            body = b"%d " % i + b"x" * 1_000_000  # 100 distinct 1 MB requests
            cache.put(body, b"a" * 5_000)
            assert cache.bytes <= cache.max_bytes
        del body
        kept = tracemalloc.get_traced_memory()[0] - baseline
    finally:
        tracemalloc.stop()
    assert kept < 2 * cache.max_bytes, f"the cache holds {kept} bytes: request bodies are kept"
    assert cache.bytes == len(cache) * (5_000 + AnswerCache.ENTRY_OVERHEAD)
    assert 0 < len(cache) < 100
    assert cache.get(b"99 " + b"x" * 1_000_000) == b"a" * 5_000  # the newest is kept...
    assert cache.get(b"0 " + b"x" * 1_000_000) is None  # ...the oldest went first
    cache.put(b"99 " + b"x" * 1_000_000, b"b" * 5_000)  # the same request again: counted once
    assert cache.bytes == len(cache) * (5_000 + AnswerCache.ENTRY_OVERHEAD)
    cache.put(b"huge", b"z" * (cache.max_answer_bytes + 1))  # one answer may not push out the rest
    assert cache.get(b"huge") is None and cache.bytes <= cache.max_bytes


def test_the_servers_answer_cache_stays_under_its_byte_bound_on_big_distinct_requests():
    bound = 16 * 1024  # room for about 19 of the classroom model's short answers
    with ClassroomServer(answer_cache_bytes=bound) as room:
        filler = "x" * 500_000
        requests.post(room.chat_url, json={"messages": user("warm up")}, timeout=120)
        tracemalloc.start()
        try:
            baseline = tracemalloc.get_traced_memory()[0]
            for i in range(30):
                body = {"model": "classroom", "messages": [{"role": "user", "content": f"{i} {filler}"}]}
                assert requests.post(room.chat_url, json=body, timeout=120).status_code == 200
                assert room.answers.bytes <= bound
            kept = tracemalloc.get_traced_memory()[0] - baseline
        finally:
            tracemalloc.stop()
        # 30 requests of 0.5 MB went through; nothing in the server (answer cache, token-count
        # memo) may keep them. A few hundred KB is the cache itself and the allocator's bookkeeping.
        assert kept < 2 * 1024 * 1024, f"{kept} bytes kept after 15 MB of distinct requests"
        assert 0 < len(room.answers) < 30
        again = requests.post(room.chat_url, json=body, timeout=120)  # the last one: still remembered
        assert again.status_code == 200 and room.answers.hits == 1


def test_an_injected_responder_is_always_asked():
    from tinyagent.classroom.reply import Reply
    from tinyagent.classroom.server import ClassroomServer

    calls = []

    def counting(request):
        calls.append(request)
        return Reply(f"answer {len(calls)}")

    body = {"model": "classroom", "messages": [{"role": "user", "content": "hi"}]}
    with ClassroomServer(responder=counting) as room:
        texts = [requests.post(room.chat_url, json=body, timeout=PATIENCE).json()["choices"][0]["message"]["content"]
                 for _ in range(2)]
    assert texts == ["answer 1", "answer 2"]
    assert room.answers is None


# --- command-line errors -------------------------------------------------------------------------------


def run_command(*args: str) -> subprocess.CompletedProcess:
    """`python -m tinyagent ...` that must end on its own (subprocess.run kills it on the timeout)."""
    return subprocess.run(
        [sys.executable, "-m", "tinyagent", *args], check=False, capture_output=True, text=True, timeout=120
    )


def assert_one_line_error(done: subprocess.CompletedProcess, *words: str) -> str:
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
    assert "Traceback" not in done.stderr
    for word in words:
        assert word in done.stderr
    return done.stderr


@pytest.fixture
def busy_port():
    """A port something else is listening on, for as long as the test runs."""
    holder = socket.socket()
    try:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]
    finally:
        holder.close()


@pytest.mark.parametrize("port", ["70000", "-1", "65536"])
def test_classroom_with_a_port_out_of_range_is_a_one_line_error(port):
    assert_one_line_error(run_command("classroom", "--port", port), "0 to 65535", port, "--port")


@pytest.mark.parametrize("key", ["", "   "])
def test_classroom_with_an_empty_api_key_is_a_one_line_error(key):
    # It served anyone who sent "Authorization: Bearer" with nothing after it.
    assert_one_line_error(run_command("classroom", "--port", "0", "--api-key", key),
                          "--api-key (or $TINYAGENT_CLASSROOM_API_KEY) is empty")


@pytest.mark.parametrize("port", ["³", "٨٠٠٠", "８０００"])
def test_classroom_with_a_port_in_other_digits_is_a_one_line_error(port):
    assert_one_line_error(run_command("classroom", "--port", port), "0 to 65535", port, "--port")


def test_classroom_on_a_port_in_use_is_a_one_line_error(busy_port):
    assert_one_line_error(run_command("classroom", "--port", str(busy_port)), "already in use", "--port")


@pytest.mark.parametrize("host", ["999.1.1.1", "no-such-host.invalid"])
def test_classroom_on_a_host_that_is_not_this_machine_is_a_one_line_error(host):
    assert_one_line_error(run_command("classroom", "--host", host, "--port", "0"), host, "--host 127.0.0.1")


def test_a_classroom_server_object_refuses_a_bad_port_with_the_same_error():
    from tinyagent.hosting.address import ServerAddressError

    with pytest.raises(ServerAddressError, match="0 to 65535"):
        ClassroomServer(port=70000, responder=echo, models=MODELS)


def test_behind_a_proxy_it_answers_under_its_base_path_too():
    # JupyterHub's proxy forwards /services/classroom/v1/... unchanged (deploy/jupyterhub/)
    with ClassroomServer(responder=echo, models=MODELS, base_path="/services/classroom/") as routed:
        root = f"http://127.0.0.1:{routed.port}"
        assert routed.chat_url == f"{root}/services/classroom/v1/chat/completions"
        body = {"messages": user("hi")}
        assert requests.post(routed.chat_url, json=body, timeout=PATIENCE).status_code == 200
        assert requests.post(f"{root}/v1/chat/completions", json=body, timeout=PATIENCE).status_code == 200
        assert requests.get(f"{root}/services/classroom/v1/models/classroom", timeout=PATIENCE).status_code == 200
        assert_error(requests.get(f"{root}/services/other/v1/models", timeout=PATIENCE), 404)
        assert_error(requests.get(f"{root}/services/classroomx/v1/models", timeout=PATIENCE), 404)


def test_the_room_server_behind_jupyterhub_takes_its_base_path_from_the_command_line():
    with ServerProcess("classroom", "--port", "0", "--base-path", "/services/classroom") as room:
        room.wait_for_line("Press Ctrl-C")
        url = re.search(r"^TINYAGENT_API_URL=(http://127\.0\.0\.1:\d+/services/classroom/v1/chat/completions)$",
                        room.stdout, re.MULTILINE)
        assert url, room.stdout
        assert requests.post(url[1], json=refund_request(stop=["Observation:"]), timeout=60).status_code == 200
        assert room.stop(signal.SIGTERM) == 0, room.output()


@pytest.mark.parametrize("constant", [b"NaN", b"Infinity", b"-Infinity"])
def test_a_number_json_does_not_allow_is_the_clients_fault_400(room, constant):
    # OpenAI's API refuses such a body as not JSON; the classroom model read it, and answered, in a field it ignores.
    error = assert_error(post_raw(room, b'{"messages": [{"role": "user", "content": "hi"}], "temperature": '
                                        + constant + b"}"), 400)
    assert error["code"] == "invalid_json"
    assert f"({constant.decode()} is not JSON)" in error["message"]


@pytest.mark.parametrize("number", [b"1e400", b"-1E999"])
def test_a_number_beyond_a_float_s_range_is_the_clients_fault_400(room, number):
    # Python's json read it as inf: the Responses API echoed it back as Infinity, which is no JSON.
    for url in (room.chat_url, room.base_url + "/responses"):
        answer = requests.post(url, data=b'{"messages": [{"role": "user", "content": "hi"}], "input": "hi", '
                                         b'"user": ' + number + b"}",
                               headers={"Content-Type": "application/json"}, timeout=PATIENCE)
        error = assert_error(answer, 400)
        assert error["code"] == "invalid_json" and "beyond a float's range" in error["message"], error


@pytest.mark.parametrize(("path", "status"), [(b"/v1/models", b"200"), (b"/v1/models/classroom", b"200"),
                                              (b"/v1/models/nope", b"404"), (b"/v1/chat/completions", b"405"),
                                              (b"/nowhere", b"404")])
def test_head_answers_what_get_would_without_the_body(room, path, status):
    # It was a 501, a server's error for a client's ordinary request.
    def exchange(method: bytes) -> tuple[bytes, bytes]:
        answer = raw_exchange(room, method + b" " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        head, _, body = answer.partition(b"\r\n\r\n")
        # The Date line may tick over between the two requests; everything else must match.
        return re.sub(rb"\r\nDate: [^\r]*", b"", head), body

    head, body = exchange(b"HEAD")
    get_head, get_body = exchange(b"GET")
    assert head.split(b" ")[1] == status and body == b""
    assert head == get_head and int(re.search(rb"Content-Length: (\d+)", head)[1]) == len(get_body)


@pytest.mark.parametrize(("option", "value", "says"), [
    ("temperature", "hot", "Invalid type for 'temperature'"),
    ("temperature", 2.5, "from 0 to 2"),
    ("top_p", 5, "from 0 to 1"),
    ("top_p", True, "Invalid type for 'top_p'"),
    ("seed", "x", "Invalid type for 'seed'"),
    ("parallel_tool_calls", "yes", "Invalid type for 'parallel_tool_calls'"),
    ("metadata", {"a": 1}, "Invalid 'metadata'"),
])
def test_a_sampling_option_of_the_wrong_type_or_range_is_a_400_naming_it(room, option, value, says):
    # OpenAI's API refuses each; the classroom model took them silently (and the Responses API echoed them back).
    for url, body in ((room.chat_url, {"messages": user("hi")}), (room.base_url + "/responses", {"input": "hi"})):
        error = assert_error(requests.post(url, json={**body, option: value}, timeout=PATIENCE), 400)
        assert error["param"] == option and says in error["message"], error
