"""Streaming (lesson 14): the SSE reader, the stop cutter, and `LlmClient.stream` against the classroom model
and against loopback servers that break a stream the ways real ones do.

Every failure mid-stream must come out as one of the client's LlmErrors with a message that says what
happened, never as an exception from requests or urllib3, and never with the API key in it.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyagent import (
    AuthenticationError,
    LlmClient,
    LlmConnectionError,
    LlmError,
    LlmTimeoutError,
    StopCutter,
    build_system_prompt,
)
from tinyagent.classroom.server import ClassroomServer
from tinyagent.classroom.tokens import count_tokens
from tinyagent.clock import fixed_clock
from tinyagent.errors import BadResponseError, ServerError
from tinyagent.llm_client import cut_at_stop
from tinyagent.protocols.streaming import (
    CUT_BEFORE_USAGE,
    NO_USAGE,
    SseEvent,
    StreamCutMidLine,
    chat_streamed,
    open_stream,
    read_events,
)
from tinyagent.shop import Shop, shop_registry

from .conftest import completion

KEY = "sk-stream-SECRET-7d1e55"
CLOCK = fixed_clock("2026-06-30T19:05:23")
STOP = ["Observation:"]
REACT = "Thought: I look the order up.\nAction: queryOrder\nAction Input: 88231\nObservation: {\"status\": \"lost\"}\n"


def shop_messages(question: str, lang: str = "en") -> list[dict]:
    tools = shop_registry(Shop(":memory:", clock=CLOCK), CLOCK)
    return [{"role": "system", "content": build_system_prompt(tools, lang)}, {"role": "user", "content": question}]


# -- the SSE line protocol ---------------------------------------------------------------------------------
STREAM = (
    ": a comment, as a keep-alive\n"
    'data: {"a": 1}\n\n'
    "event: error\r\ndata: first line\r\ndata: second line\r\n\r\n"
    "data: 订单 88231 已签收\r\r"
    "id: 7\nretry: 100\ndata:no space after the colon\n\n"
    "data: [DONE]\n\n"
).encode()
EVENTS = [
    SseEvent("message", '{"a": 1}'),
    SseEvent("error", "first line\nsecond line"),
    SseEvent("message", "订单 88231 已签收"),
    SseEvent("message", "no space after the colon"),
    SseEvent("message", "[DONE]"),
]


def test_events_comments_multi_line_data_and_every_line_ending():
    assert list(read_events([STREAM])) == EVENTS


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, len(STREAM)), max_size=8))
def test_events_are_the_same_however_the_bytes_are_cut(cuts):
    """A chunk boundary anywhere (inside a line, between \\r and \\n, inside a Chinese character) changes nothing."""
    points = [0, *sorted(cuts), len(STREAM)]
    chunks = [STREAM[a:b] for a, b in pairwise(points)]
    assert list(read_events(chunks)) == EVENTS


def test_a_last_event_without_its_blank_line_is_still_read():
    assert list(read_events([b"data: {}\n", b"data: [DONE]\n"])) == [SseEvent("message", "{}\n[DONE]")]


def test_a_long_line_in_one_byte_chunks_is_read_once_not_once_a_byte():
    # Each chunk once re-split and copied the whole line so far: 200 KB in 1-byte chunks took 12 s. Now about a
    # second; 60 s only tells a hang from a loaded machine.
    line = b"data: " + b"x" * 1_000_000 + b"\n\n"  # about 5 minutes before
    started = time.monotonic()
    assert [len(event.data) for event in read_events(line[n : n + 1] for n in range(len(line)))] == [1_000_000]
    assert time.monotonic() - started < 60


def test_a_lone_cr_at_the_very_end_still_ends_its_line():
    assert list(read_events([b"data: [DONE]\r"])) == [SseEvent("message", "[DONE]")]


def test_bytes_that_end_in_the_middle_of_a_line_are_a_cut_connection():
    with pytest.raises(StreamCutMidLine):
        list(read_events([b"data: {\"choices\": [{\"del"]))


# -- stop strings across chunks --------------------------------------------------------------------------------
def cut_in_pieces(pieces: list[str], stop) -> tuple[str, bool]:
    cutter = StopCutter(stop)
    out = "".join(cutter.feed(piece) for piece in pieces) + cutter.finish()
    return out, cutter.stopped


def test_a_stop_string_split_at_every_possible_point_is_cut_as_the_whole_text_is():
    whole = cut_at_stop(REACT, STOP)
    assert whole == (REACT[: REACT.index("Observation:")], True)
    for i in range(len(REACT) + 1):
        assert cut_in_pieces([REACT[:i], REACT[i:]], STOP) == whole, i
    at = REACT.index("Observation:")
    for i in range(at, at + len("Observation:") + 1):  # three pieces, both cuts inside the stop string
        for j in range(i, at + len("Observation:") + 1):
            assert cut_in_pieces([REACT[:i], REACT[i:j], REACT[j:]], STOP) == whole, (i, j)


def test_what_cannot_start_a_stop_string_is_released_at_once():
    cutter = StopCutter(STOP)
    assert cutter.feed("Thought: I look") == "Thought: I look"
    assert cutter.feed(" it up.\nObs") == " it up.\n"  # "Obs" may be the start of "Observation:"
    assert cutter.held == "Obs"
    assert cutter.feed("erved nothing") == "Observed nothing"  # it was not
    assert cutter.feed("\nObservation: {") == "\n" and cutter.stopped
    assert cutter.feed("more") == "" and cutter.finish() == ""


def test_a_longer_stop_string_that_starts_earlier_wins():
    assert cut_in_pieces(["abc", "d"], ["abcd", "c"]) == ("", True)
    assert cut_in_pieces(["abc", "x"], ["abcd", "c"]) == ("ab", True)


pieces_text = st.text(alphabet="Obsrvaton:\n AB", max_size=40)
stops = st.lists(st.text(alphabet="Obsrvaton:\n", min_size=1, max_size=6), max_size=4)


@settings(max_examples=500, deadline=None)
@given(pieces_text, stops, st.lists(st.integers(0, 40), max_size=6))
def test_any_text_in_any_pieces_is_cut_as_the_whole_text_is(text, stop, cuts):
    points = [0, *sorted(min(c, len(text)) for c in cuts), len(text)]
    pieces = [text[a:b] for a, b in pairwise(points)]
    assert cut_in_pieces(pieces, stop) == cut_at_stop(text, stop)


# -- LlmClient.stream against the classroom model -----------------------------------------------------------------
REQUESTS = [
    ("classroom", shop_messages("Where is the parcel for order 88231?"), {"stop": STOP}),
    ("classroom", shop_messages("我上周买的扫地机不回充了，修不好我想退。订单号 88231。", "zh"), {"stop": STOP}),
    ("classroom", shop_messages("Where is the parcel for order 88231?"), {}),  # runs on without stop
    ("classroom", shop_messages("Where is the parcel for order 88231?"), {"stop": STOP, "max_tokens": 12}),
    ("classroom-ignores-stop", shop_messages("Where is the parcel for order 88231?"), {"stop": STOP}),
    ("classroom-split-stop", shop_messages("Where is the parcel for order 88231?"), {"stop": STOP}),
]


@pytest.mark.parametrize(("model", "messages", "options"), REQUESTS)
def test_a_streamed_reply_is_the_reply_chat_gives(model, messages, options):
    llm = LlmClient.classroom(model)
    plain = llm.chat(messages, **options)
    with open_stream(llm, messages, **options) as stream:
        pieces = list(stream)
    reply = stream.result
    assert len(pieces) > 3 and all(pieces)
    assert "".join(pieces) == reply.text == plain.text
    assert (reply.finish_reason, reply.client_cut, reply.model) == (plain.finish_reason, plain.client_cut, model)
    assert reply.streamed and not plain.streamed
    assert 0 < reply.first_piece_s <= reply.latency_s
    assert stream.pieces == len(pieces)
    if not plain.client_cut:  # the usage arrived in the final chunk, and says what the plain reply says
        assert reply.usage == plain.usage and stream.notes == []


def test_usage_comes_from_the_final_chunk_and_is_not_invented_without_it():
    llm = LlmClient.classroom()
    messages = shop_messages("Where is the parcel for order 88231?")
    asked = open_stream(llm, messages, stop=STOP)
    asked.finish()
    assert asked.result.usage == llm.chat(messages, stop=STOP).usage
    assert asked.result.raw["chunks"][-1]["choices"] == [] and asked.result.raw["chunks"][-1]["usage"]
    not_asked = open_stream(llm, messages, stop=STOP, include_usage=False)
    assert not_asked.finish().usage == {}
    assert not_asked.notes == [NO_USAGE]


def test_a_stop_string_split_across_two_chunks_is_cut_and_the_stream_closed():
    llm = LlmClient.classroom("classroom-split-stop")
    messages = shop_messages("Where is the parcel for order 88231?")
    chunks = chat_streamed(llm, messages, stop=STOP, include_usage=False)  # read as a stream: one ChatResult
    assert chunks.client_cut and chunks.finish_reason == "stop" and chunks.text.endswith("Action Input: 88231\n")
    wire = [c["choices"][0]["delta"].get("content") or "" for c in chunks.raw["chunks"] if c["choices"]]
    split = [i for i, piece in enumerate(wire) if piece.endswith("Observ")]
    assert split and wire[split[0] + 1].startswith("ation:"), "on the wire, the stop string is in two chunks"
    assert not any("Observation:" in piece for piece in wire), "no chunk holds it whole"
    stream = open_stream(llm, messages, stop=STOP)
    stream.finish()
    assert stream.notes == [CUT_BEFORE_USAGE]  # closed at the cut, before the usage chunk


def test_streamed_tool_calls_are_assembled_as_chat_returns_them():
    llm = LlmClient.classroom()
    messages = [{"role": "user", "content": "Where are my parcels for orders 88231 and 88232?"}]
    tools = [{"type": "function", "function": {"name": "queryOrder", "description": "Look up an order",
              "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}}}]
    plain = llm.chat(messages, tools=tools)
    streamed = chat_streamed(llm, messages, tools=tools)
    assert len(plain.tool_calls) == 2
    assert streamed.tool_calls == plain.tool_calls and streamed.finish_reason == "tool_calls"


def test_a_paced_room_sends_the_first_piece_long_before_the_whole_reply():
    tps = 40.0
    with ClassroomServer(tokens_per_second=tps, prefill_tokens_per_second=4000.0) as room:
        llm = LlmClient(room.chat_url, None, "classroom")
        messages = shop_messages("Where is the parcel for order 88231?")
        stream = open_stream(llm, messages, stop=STOP)
        first = next(stream)
        reply = stream.finish()
        plain = llm.chat(messages, stop=STOP)
    completion_tokens = reply.usage["completion_tokens"]
    # Sleeps only ever make things later, so these lower bounds hold on any machine, however loaded.
    after_first = (completion_tokens - count_tokens(first)) / tps
    assert reply.latency_s - reply.first_piece_s >= 0.9 * after_first
    assert plain.latency_s >= 0.9 * (completion_tokens / tps + reply.usage["prompt_tokens"] / 4000.0)
    assert plain.text == reply.text


@pytest.mark.parametrize("pace", [0, -1, float("inf"), "fast"])
def test_a_pace_must_be_a_positive_number(pace):
    with pytest.raises(ValueError, match="tokens_per_second"):
        ClassroomServer(tokens_per_second=pace)


# -- streams that break ------------------------------------------------------------------------------------------
def chunk(text: str | None = None, finish_reason: str | None = None, **extra) -> bytes:
    delta = {} if text is None else {"content": text}
    body = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}], **extra}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def sse(*parts, end: str = "close", wait: threading.Event | None = None, written: list | None = None,
        finished: threading.Event | None = None):
    """A handler that streams `parts` (bytes, or a number: seconds to pause), then ends: "close" (FIN),
    "reset" (RST), or "hold" (writes a keep-alive comment every 10 ms, 2000 times, unless the client hangs
    up). `wait`: an Event to wait for before the end; `written`: a list of what was written; `finished`:
    an Event set when the handler is done."""

    def handler(request):
        request.send_response(200)
        request.send_header("Content-Type", "text/event-stream")
        request.send_header("Connection", "close")
        request.end_headers()
        request.close_connection = True
        try:
            for part in parts:
                if isinstance(part, (int, float)):
                    time.sleep(part)
                    continue
                request.wfile.write(part)
                request.wfile.flush()
                if written is not None:
                    written.append(part)
            if wait is not None:
                wait.wait(60)
            if end == "reset":
                request.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                request.connection.close()
            elif end == "hold":
                for _ in range(2000):
                    request.wfile.write(b": still here\n\n")
                    request.wfile.flush()
                    if written is not None:
                        written.append(b": still here\n\n")
                    time.sleep(0.01)
        except OSError:
            pass  # the client hung up, as it may
        finally:
            if finished is not None:
                finished.set()

    return handler


def client(server, **options) -> LlmClient:
    options.setdefault("sleep", lambda seconds: None)
    return LlmClient(server.url, KEY, "test-model", **options)


def read_all(llm: LlmClient, **options):
    """Stream a reply to the end: the pieces that came, and the error (None if it ended well)."""
    pieces: list[str] = []
    try:
        with open_stream(llm, [{"role": "user", "content": "hi"}], stop=STOP, **options) as stream:
            pieces.extend(stream)  # piece by piece: what came before an error stays in the list
    except LlmError as exc:
        assert KEY not in str(exc) and KEY not in repr(exc.args)
        return pieces, exc
    return pieces, None


def test_a_streamed_reply_recognises_llama_cpp_by_the_timings_of_its_last_chunk(scripted_server):
    timings = {"cache_n": 540, "prompt_n": 12, "predicted_n": 30}
    scripted_server.reply(sse(chunk("Thought: t\nFinal Answer: ok"), chunk(finish_reason="stop", timings=timings),
                              b"data: [DONE]\n\n"), (200, completion()))
    llm = client(scripted_server)
    assert chat_streamed(llm, [{"role": "user", "content": "hi"}], stop=STOP).text == "Thought: t\nFinal Answer: ok"
    assert llm.llama_cpp is True
    llm.chat([{"role": "user", "content": "hi"}], stop=STOP)
    assert scripted_server.requests[1]["json"]["cache_prompt"] is True


def test_a_clean_stream_with_done(scripted_server):
    scripted_server.reply(sse(chunk("Thought: hi"), chunk("\nFinal Answer: ok"), chunk(finish_reason="stop"),
                              b"data: [DONE]\n\n"))
    pieces, error = read_all(client(scripted_server))
    assert error is None and "".join(pieces) == "Thought: hi\nFinal Answer: ok"
    sent = scripted_server.requests[0]
    assert sent["json"]["stream"] is True and sent["json"]["stream_options"] == {"include_usage": True}
    assert sent["headers"]["Accept"] == "text/event-stream"


def test_a_connection_reset_mid_stream_is_a_connection_error(scripted_server):
    scripted_server.reply(sse(chunk("Thought: I am"), chunk(" halfway"), end="reset"))
    pieces, error = read_all(client(scripted_server))
    assert "".join(pieces) == "Thought: I am halfway"
    assert isinstance(error, LlmConnectionError)
    assert "broke" in str(error) and "try again" in str(error)


def test_a_stream_that_just_stops_without_finish_reason_or_done_is_incomplete(scripted_server):
    scripted_server.reply(sse(chunk("Thought: I am"), chunk(" halfway")))
    _, error = read_all(client(scripted_server))
    assert isinstance(error, LlmConnectionError) and "without a finish_reason or [DONE]" in str(error)
    assert "21 characters" in str(error)


def test_a_stream_cut_in_the_middle_of_a_line(scripted_server):
    scripted_server.reply(sse(chunk("Thought: hi"), b'data: {"choices": [{"delta": {"cont'))
    _, error = read_all(client(scripted_server))
    assert isinstance(error, LlmConnectionError) and "in the middle of a line" in str(error)


def test_a_line_that_is_not_json_is_a_bad_response_naming_it(scripted_server):
    scripted_server.reply(sse(chunk("Thought: hi"), b"data: <html>Bad Gateway</html>\n\n"))
    _, error = read_all(client(scripted_server))
    assert isinstance(error, BadResponseError)
    assert "not JSON" in str(error) and "<html>Bad Gateway</html>" in str(error)


def test_a_chunk_of_the_wrong_shape_names_the_field(scripted_server):
    scripted_server.reply(sse(chunk("Thought: hi"), b'data: {"choices": [{"delta": {"content": 42}}]}\n\n'))
    _, error = read_all(client(scripted_server))
    assert isinstance(error, BadResponseError) and "choices[0].delta.content" in str(error)


@pytest.mark.parametrize("event", [
    b'data: {"error": {"message": "model overloaded", "type": "server_error"}}\n\n',
    b'event: error\ndata: {"message": "model overloaded"}\n\n',
])
def test_an_error_sent_in_the_stream_is_a_server_error_with_its_message(scripted_server, event):
    scripted_server.reply(sse(chunk("Thought: hi"), event))
    pieces, error = read_all(client(scripted_server))
    assert pieces == ["Thought: hi"]
    assert isinstance(error, ServerError) and "model overloaded" in str(error) and "11 characters" in str(error)


def test_an_error_field_that_is_null_is_no_error(scripted_server):
    """Some servers put "error": null in every chunk; chat() reads such a reply, and so must the stream."""
    scripted_server.reply(sse(chunk("Final Answer: ", error=None), chunk("hi", "stop", error=None),
                              b"data: [DONE]\n\n"))
    pieces, error = read_all(client(scripted_server))
    assert error is None and "".join(pieces) == "Final Answer: hi"


def test_content_sent_in_parts_streams_as_chat_reads_it(scripted_server):
    """Mistral's reasoning models stream delta.content as a list of parts: the text parts are the reply."""
    parts = [{"type": "thinking", "thinking": [{"type": "text", "text": "hmm"}]},
             {"type": "text", "text": "Final Answer: "}]
    scripted_server.reply(sse(b"data: " + json.dumps({"choices": [{"delta": {"content": parts}}]}).encode() + b"\n\n",
                              chunk("hi", "stop"), b"data: [DONE]\n\n"))
    pieces, error = read_all(client(scripted_server))
    assert error is None and "".join(pieces) == "Final Answer: hi"


def test_a_stream_compressed_in_a_way_the_client_cannot_read_says_so(scripted_server):
    """Not "the stream broke, try again", which could never help: what chat() says of the same body."""
    def brotli(request):
        request.send_response(200)
        request.send_header("Content-Type", "text/event-stream")
        request.send_header("Content-Encoding", "br")
        request.send_header("Connection", "close")
        request.end_headers()
        request.close_connection = True
        request.wfile.write(b"\x1b\x03\x00\xf8\xa5\x0c\x08\x9c")
    scripted_server.reply(brotli)
    _, error = read_all(client(scripted_server))
    assert isinstance(error, BadResponseError) and "compressed its reply as 'br'" in str(error)


def test_a_key_echoed_in_a_broken_chunk_is_redacted(scripted_server):
    scripted_server.reply(sse(f"data: not json, and your key is {KEY}\n\n".encode()))
    _, error = read_all(client(scripted_server))
    assert isinstance(error, BadResponseError) and "***" in str(error)  # read_all checks the key is absent


def test_a_stall_between_chunks_is_a_timeout_naming_read_timeout(scripted_server):
    scripted_server.reply(sse(chunk("Thought: hi"), 3.0, chunk(finish_reason="stop")))
    pieces, error = read_all(client(scripted_server, read_timeout=0.5))
    assert pieces == ["Thought: hi"]
    assert isinstance(error, LlmTimeoutError) and "no data for 0.5 s" in str(error)


def test_a_stall_before_the_first_text_says_the_model_may_be_slow(scripted_server):
    scripted_server.reply(sse(b'data: {"choices": [{"delta": {"role": "assistant"}}]}\n\n', 3.0, chunk("late")))
    pieces, error = read_all(client(scripted_server, read_timeout=0.5))
    assert pieces == [] and isinstance(error, LlmTimeoutError)
    assert "sent no text within 0.5 s" in str(error) and "raise read_timeout" in str(error)


def test_a_stream_that_never_ends_hits_the_total_timeout(scripted_server):
    # Keep-alive comments every 10 ms: never silent for read_timeout, never done.
    scripted_server.reply(sse(chunk("Thought: hi"), end="hold"))
    _, error = read_all(client(scripted_server, read_timeout=5, total_timeout=0.5))
    assert isinstance(error, LlmTimeoutError) and "longer than 0.5 s in total" in str(error)


def test_the_client_stops_reading_and_hangs_up_once_it_has_cut(scripted_server):
    """A server that ignores stop keeps typing: the client cuts at the split stop string, returns without
    waiting for more, and closes the connection, so the server's next writes fail."""
    cut, finished, written = threading.Event(), threading.Event(), []
    scripted_server.reply(sse(chunk("Action Input: 88231\nObserv"), chunk("ation: invented"), end="hold",
                              wait=cut, written=written, finished=finished))
    llm = client(scripted_server)
    with open_stream(llm, [{"role": "user", "content": "hi"}], stop=STOP) as stream:
        text = "".join(stream)
    reply = stream.result
    assert text == reply.text == "Action Input: 88231\n"
    assert reply.client_cut and reply.finish_reason == "stop" and reply.usage == {}
    cut.set()  # only now may the server go on writing: the client already has its whole reply
    assert finished.wait(120)
    assert len(written) < 2 + 2000, "the server could write on: the client never hung up"


def test_an_http_error_before_the_stream_is_the_usual_error(scripted_server):
    scripted_server.reply((401, {"error": {"message": "bad key"}}))
    with pytest.raises(AuthenticationError, match="TINYAGENT_API_KEY"):
        open_stream(client(scripted_server), [{"role": "user", "content": "hi"}])


def test_a_429_before_the_stream_is_retried(scripted_server):
    waits = []
    scripted_server.reply((429, {"error": {"message": "slow down"}}, {"Retry-After": "1"}),
                          sse(chunk("Final Answer: ok", "stop"), b"data: [DONE]\n\n"))
    llm = client(scripted_server, sleep=waits.append)
    assert chat_streamed(llm, [{"role": "user", "content": "hi"}]).text == "Final Answer: ok"
    assert waits == [1.0] and len(scripted_server.requests) == 2


def test_a_server_that_does_not_stream_is_read_as_one_piece(scripted_server):
    scripted_server.reply((200, completion("Thought: t\nFinal Answer: whole\nObservation: x")))
    stream = open_stream(client(scripted_server), [{"role": "user", "content": "hi"}], stop=STOP)
    assert list(stream) == ["Thought: t\nFinal Answer: whole\n"]
    assert stream.result.client_cut and stream.result.usage["total_tokens"] == 15
    assert stream.notes == ["the server answered in one piece: it does not stream"]


def test_usage_in_a_chunk_is_checked_like_a_reply_usage(scripted_server):
    scripted_server.reply(sse(chunk("hi", "stop"), b'data: {"choices": [], "usage": {"prompt_tokens": "ten"}}\n\n'))
    _, error = read_all(client(scripted_server))
    assert isinstance(error, BadResponseError) and "usage.prompt_tokens" in str(error)


def tool_call_piece(**call) -> bytes:
    body = {"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def test_a_streamed_tool_call_that_never_names_its_function_is_a_bad_response_as_in_chat(scripted_server):
    scripted_server.reply(sse(tool_call_piece(index=0, id="call_1", function={"arguments": '{"orderId": '}),
                              tool_call_piece(index=0, function={"arguments": '"88231"}'}),
                              chunk(None, "tool_calls"), b"data: [DONE]\n\n"))
    _, error = read_all(client(scripted_server))
    assert isinstance(error, BadResponseError) and "tool call 0 still nameless" in str(error)
    # the name may come in any piece, not only the first: then the call is whole
    scripted_server.reply(sse(tool_call_piece(index=0, id="call_1", function={"arguments": '{"orderId": '}),
                              tool_call_piece(index=0, function={"name": "queryOrder", "arguments": '"88231"}'}),
                              chunk(None, "tool_calls"), b"data: [DONE]\n\n"))
    with open_stream(client(scripted_server), [{"role": "user", "content": "hi"}]) as stream:
        reply = stream.finish()
    assert reply.tool_calls == ({"id": "call_1", "type": "function",
                                 "function": {"name": "queryOrder", "arguments": '{"orderId": "88231"}'}},)


# -- any bytes at all: an answer or an LlmError, never anything else ----------------------------------------------
class FakeRaw:
    def __init__(self, parts: list[bytes]):
        self.parts = list(parts)

    def read1(self, size: int, decode_content: bool = True) -> bytes:
        return self.parts.pop(0) if self.parts else b""


class FakeResponse:
    """Enough of a requests.Response for ReplyStream: the status, the headers, the body in given parts."""

    status_code = 200

    def __init__(self, parts: list[bytes]):
        self.headers = {"Content-Type": "text/event-stream"}
        self.raw = FakeRaw(parts)

    def close(self) -> None:
        pass


json_leaf = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
json_value = st.recursive(json_leaf, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.sampled_from(["choices", "delta", "content", "finish_reason", "usage", "tool_calls", "index", "function",
                     "arguments", "name", "id", "error", "model", "prompt_tokens"]), inner, max_size=4), max_leaves=12)
chunk_line = json_value.map(lambda value: b"data: " + json.dumps(value).encode() + b"\n\n")
any_line = chunk_line | st.sampled_from([b"data: [DONE]\n\n", b": ping\n\n", b"event: error\ndata: x\n\n",
                                         b"data: {\"choices\": [{\"delta\": {\"content\": \"Obs\"}}]}\n\n"]) | st.binary(
    max_size=20)


@settings(max_examples=300, deadline=None)
@given(st.lists(any_line, max_size=6))
def test_whatever_a_stream_holds_the_reader_answers_or_raises_an_llm_error(parts):
    from tinyagent.protocols.streaming import ReplyStream

    llm = LlmClient("http://127.0.0.1:9/v1", KEY, "test-model")
    stream = ReplyStream(llm, FakeResponse(parts), STOP, time.perf_counter())
    try:
        text = "".join(stream)
    except LlmError as exc:
        assert KEY not in str(exc)
        return
    assert stream.result is not None and stream.result.text == text
    assert "Observation:" not in text


def test_a_chunk_nested_too_deeply_is_a_bad_response():
    from tinyagent.protocols.streaming import ReplyStream

    deep = b"data: " + b"[" * 100_000 + b"]" * 100_000 + b"\n\n"
    stream = ReplyStream(LlmClient("http://127.0.0.1:9/v1", None, "m"), FakeResponse([deep]), STOP, time.perf_counter())
    with pytest.raises(BadResponseError, match="nested too deeply"):
        list(stream)


@pytest.mark.parametrize(("pieces", "text"), [
    ([r"ok \ud83d", r"\ude00!"], "ok \U0001F600!"),          # a pair split across two chunks: one emoji, as chat() reads it
    ([r"ok \ud83d", "then more"], "ok \ufffdthen more"),     # a first half and no second half: repaired where it stood
    ([r"ok \ud83d"], "ok \ufffd"),                           # ... at the very end too
    ([r"a \ude00 b"], "a \ufffd b"),                         # a second half alone
])
def test_a_utf16_pair_split_across_chunks_reads_as_chat_reads_it(scripted_server, pieces, text):
    chunks = [b'data: {"choices": [{"delta": {"content": "' + piece.encode() + b'"}}]}\n\n' for piece in pieces]
    scripted_server.reply(sse(*chunks, chunk(None, "stop"), b"data: [DONE]\n\n"))
    joined, error = read_all(client(scripted_server))
    assert error is None and "".join(joined) == text


@pytest.mark.parametrize("number", ["Infinity", "1e999"])
def test_a_chunk_holding_a_number_json_does_not_allow_is_a_bad_response_naming_it(scripted_server, number):
    # 1e999 was read as inf and sent on to the service's page as Infinity, which its JSON.parse refused
    scripted_server.reply(sse(chunk("Thought: hi"),
                              b'data: {"choices": [], "usage": {"cost": %s}}\n\n' % number.encode()))
    pieces, error = read_all(client(scripted_server))
    assert "".join(pieces) == "Thought: hi"
    assert isinstance(error, BadResponseError)
    assert f"holds {number}, which JSON does not allow" in str(error)
