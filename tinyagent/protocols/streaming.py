"""Streaming (lesson 14): a reply read while the model is still typing it.

    stream = open_stream(llm, messages, stop=["Observation:"])
    for piece in stream:                     # text as it arrives, already cut at the stop string
        print(piece, end="", flush=True)
    reply = stream.finish()                  # the ChatResult that chat() gives for the same request

Asked with `"stream": true`, a Chat Completions server answers with Server-Sent Events: a `data:` line
per chunk, a blank line after each, and `data: [DONE]` at the end. The chunks carry the reply in
pieces; the last ones carry finish_reason and, when asked for with `stream_options: {"include_usage":
true}`, the usage:

    data: {"choices": [{"delta": {"role": "assistant", "content": ""}, "finish_reason": null}]}
    data: {"choices": [{"delta": {"content": "Thought: The"}, "finish_reason": null}]}
    ...
    data: {"choices": [{"delta": {}, "finish_reason": "stop"}]}
    data: {"choices": [], "usage": {"prompt_tokens": 336, "completion_tokens": 52, "total_tokens": 388}}
    data: [DONE]

Four parts, each usable on its own:

    read_events(byte_chunks)  the SSE line protocol: bytes cut anywhere -> events (type, data)
    StopCutter                (streamed_stops.py) stop strings on text that arrives in pieces: a stop
                              string split across two pieces is still found, and none of it released
    SplitKeyRedactor          (streamed_redaction.py) the API key kept out of text that arrives in pieces,
                              split across two too (and out of the chunks the reply keeps: redact_across_chunks)
    ReplyStream               the chunks of one reply -> text pieces, then the ChatResult (finish_reason,
                              usage from the final chunk, tool calls); every failure an LlmError

What can go wrong mid-stream becomes the client's usual errors, never a traceback from `requests`: a
connection that breaks (LlmConnectionError), a stall longer than `read_timeout` between two chunks or a
reply whose body takes longer than `total_timeout` in all (LlmTimeoutError), a line that is not a chunk
(BadResponseError), an error the server sends in the stream itself (the class its code names: a 429 is a
RateLimitError, a 5xx or no code a ServerError; never retried, as text may have been shown before it).

And the agent's part: `StreamedSend`, how a request is sent in this lesson
(`ReActAgent(llm, tools, parts=[StreamedSend()])`, or any other agent): each piece of the reply becomes a
ReplyDelta event as it arrives.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

import requests
import urllib3

from tinyagent.chat_result import (
    MAX_REPLY_BYTES,
    ChatResult,
    NotJsonNumber,
    WrongShape,
    check_usage_counts,
    checked_field,
    clipped,
    cut_at_stop,
    finite_float,
    no_json_constant,
    provider_error,
    server_message,
    short_reason,
    text_of_parts,
)
from tinyagent.errors import (
    BadResponseError,
    LlmConnectionError,
    LlmError,
    LlmTimeoutError,
    error_class,
    redact,
    redact_json,
)
from tinyagent.events import Event, LlmCall, event_kind
from tinyagent.llm_client import LlmClient, check_encoding
from tinyagent.protocols.streamed_redaction import SplitKeyRedactor, redact_across_chunks
from tinyagent.protocols.streamed_stops import StopCutter
from tinyagent.safe_text import json_may_hold_surrogates, replace_lone_surrogates

# What a printed trace says of a streamed reply.
STREAM_LABELS = {
    "en": {"streamed": "[Streamed] the reply came in {n} pieces", "typed": "[Typed so far] {text}"},
    "zh": {"streamed": "[流式] 回复分 {n} 段到达", "typed": "[已输入] {text}"},
}


@event_kind
class ReplyDelta(Event):
    """A piece of the model's reply as it arrives (lesson 14: an agent with `StreamedSend()` mounted), before the
    round's LlmCall. Joined, the pieces of a round are that LlmCall's text (already cut at the stop strings).

    text:      the new piece, never empty
    elapsed_s: seconds from the request to this piece (varies run to run; printed traces leave it out)
    """

    kind: ClassVar[str] = "reply_delta"
    text: str = ""
    elapsed_s: float = field(default=0.0, repr=False)

    def lines(self, lang: str, usage: bool = False, round: list[Event] = ()) -> list[str]:
        """Never a line per piece (the LlmCall holds the whole text). The last piece of a run of pieces says
        how many there were (with `usage`), or, when no reply followed (the stream broke, or is still going),
        what had been typed."""
        at = next(i for i, e in enumerate(round) if e is self)
        after = round[at + 1] if at + 1 < len(round) else None
        if isinstance(after, ReplyDelta):
            return []
        first = at
        while first > 0 and isinstance(round[first - 1], ReplyDelta):
            first -= 1
        pieces = round[first : at + 1]
        if isinstance(after, LlmCall):
            return [STREAM_LABELS[lang]["streamed"].format(n=len(pieces))] if usage else []
        return [STREAM_LABELS[lang]["typed"].format(text="".join(p.text for p in pieces))]


DONE = "[DONE]"
NO_USAGE = (
    "the server sent no usage: it may not support stream_options include_usage; count the tokens "
    "yourself if you need them (tinyagent.protocols.token_count)"
)
CUT_BEFORE_USAGE = (
    "the client closed the stream at the stop string, before the server's usage chunk: the server "
    "typed (and may bill) more tokens than the reply holds"
)


# -- 1. Server-Sent Events ------------------------------------------------------------------------------
@dataclass(frozen=True)
class SseEvent:
    """One event: `event` is its type ("message" unless an `event:` line says otherwise), `data` its
    `data:` lines joined with newlines."""

    event: str
    data: str


# A line ends with CRLF, LF or CR (the SSE standard allows all three).
_LINE_END = re.compile(rb"\r\n|\r|\n")


class StreamCutMidLine(Exception):
    """The bytes ended in the middle of a line: the connection was cut, not the stream finished."""


def read_events(chunks: Iterable[bytes]) -> Iterator[SseEvent]:
    """The events in a byte stream, however it was cut into chunks (a line, even a character, may be
    split across two). A blank line ends an event; `:` starts a comment (a keep-alive), skipped;
    `id:` and `retry:` are not needed by a chat client and are skipped too. An event whose blank line
    never comes is still delivered when the bytes end after a whole line (some servers end that way);
    bytes that end mid-line raise StreamCutMidLine."""
    data: list[str] = []
    kind = ""
    for line in _lines(chunks):
        if not line:  # the blank line: the event is complete
            if data:
                yield SseEvent(kind or "message", "\n".join(data))
            data, kind = [], ""
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "data":
            data.append(value)
        elif field == "event":
            kind = value
    if data:
        yield SseEvent(kind or "message", "\n".join(data))


def _lines(chunks: Iterable[bytes]) -> Iterator[str]:
    """The lines of a byte stream, decoded, without their line ends."""
    buffer = bytearray()
    first = True
    for chunk in chunks:
        buffer += chunk
        if b"\n" not in chunk and b"\r" not in chunk:
            continue  # no line ends here: a long line in small chunks is looked through once, at its end
        if b"\r" not in buffer:  # lines that end with LF only, as most servers send them: split at once
            *lines, rest = buffer.split(b"\n")
            for line in lines:
                text = line.decode("utf-8", errors="replace")
                if first:
                    text, first = text.removeprefix("\ufeff"), False
                yield text
            buffer = bytearray(rest)
            continue
        start = 0
        while match := _LINE_END.search(buffer, start):
            if match.group() == b"\r" and match.end() == len(buffer):
                break  # maybe the first half of a CRLF: wait for the next chunk
            line = buffer[start : match.start()].decode("utf-8", errors="replace")
            start = match.end()
            if first:
                line, first = line.removeprefix("\ufeff"), False  # a byte order mark may open the stream
            yield line
        del buffer[:start]
    if buffer.endswith(b"\r"):  # a line ended by a lone CR just before the end
        yield buffer[:-1].decode("utf-8", errors="replace")
    elif buffer:
        raise StreamCutMidLine(bytes(buffer[:80]).decode("utf-8", errors="replace"))


# -- 2. One streamed reply ---------------------------------------------------------------------------------
class ReplyStream:
    """A reply being streamed: iterate it for the text as it arrives, then `finish()` for the ChatResult.

    Made by `open_stream(llm, ...)`, which has already sent the request and checked the HTTP status (a 401,
    a 404, a 429 or 5xx after the retries raise there, as in `chat`). The text comes out cut at the stop
    strings (`StopCutter`): when the server ignores `stop`, the client cuts, stops reading and closes the
    connection at once (many servers then stop generating), and the result says `client_cut`.

    After the end: `result` (the ChatResult), `first_piece_s` (seconds from the request to the first piece
    of text), `pieces` (how many pieces of text were released), `notes` (what the reader should know, such
    as "the server sent no usage"). Use it in a `with` block, or `close()` it, when you stop early.
    """

    def __init__(self, client: LlmClient, response: requests.Response, stop, started: float):
        self._client = client
        self._response = response
        self._host = client.host
        self._started = started  # time.perf_counter() when the request was sent
        # total_timeout bounds the body, from here (its headers are in), as `chat` counts it: the waits of the
        # retries before it are the client's own, and no reason to give up on the reply that finally came.
        self._deadline = time.monotonic() + client.total_timeout
        self._cutter = StopCutter(stop)
        # Each chunk is redacted alone (_take), which misses a key split across two: the text is redacted again as a whole.
        self._redactor = SplitKeyRedactor(client._api_key)
        self._chars = 0  # characters of content received so far, for the error messages
        self._chunks: list[dict] = []
        self._content: list[str] = []
        self._calls: dict[int, dict] = {}
        self._finish_reason: str | None = None
        self._usage: dict | None = None
        self._model: str | None = None
        self._high = ""  # the first half of a UTF-16 pair whose second half comes in the next chunk (its JSON split)
        self.result: ChatResult | None = None
        self.first_piece_s: float | None = None
        self.pieces = 0
        self.notes: list[str] = []
        self._reading = self._read()

    # -- the reader's side ---------------------------------------------------------------------------
    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        piece = next(self._reading)
        self.pieces += 1
        if self.first_piece_s is None:
            self.first_piece_s = self.elapsed()
        return piece

    def elapsed(self) -> float:
        """Seconds since the request was sent."""
        return time.perf_counter() - self._started

    def finish(self) -> ChatResult:
        """Read whatever is left, and return the whole reply."""
        for _ in self:
            pass
        return self.result

    def close(self) -> None:
        """Stop reading and hang up (safe to call at any time, and twice)."""
        self._reading.close()
        self._response.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "finished" if self.result is not None else "open"
        return f"<ReplyStream from {self._host}, {self.pieces} pieces so far, {state}>"

    # -- reading ---------------------------------------------------------------------------------------
    def _read(self) -> Iterator[str]:
        try:
            kind = self._response.headers.get("Content-Type", "")
            if "text/event-stream" not in kind:
                yield from self._read_whole_reply()
                return
            done = False
            try:
                events = read_events(self._bytes())
                for event in events:
                    if event.data.strip() == DONE:
                        done = True
                        _read_to_the_end(events)
                        break
                    piece = self._take(event)
                    if piece:
                        safe = self._release(piece)
                        if safe:
                            yield safe
                    if self._cutter.stopped:
                        break  # the server ignored stop: cut here, read no further
            except StreamCutMidLine as exc:
                raise LlmConnectionError(
                    f"the stream from {self._host} broke in the middle of a line ({exc.args[0]!r}) after "
                    f"{self._chars} characters of the reply: the server or a proxy dropped it; try again"
                ) from None
            if not (done or self._finish_reason or self._cutter.stopped):
                raise LlmConnectionError(
                    f"the stream from {self._host} ended after {self._chars} characters without a finish_reason "
                    "or [DONE]: the reply is incomplete (the server or a proxy cut it); try again"
                )
            if self._high:  # a first half whose second half never came
                self._high = ""
                self._content.append("\ufffd")
                safe = self._release("\ufffd")
                if safe:
                    yield safe
            rest = self._cutter.feed(self._redactor.finish()) + self._cutter.finish()
            if rest:
                yield rest
        finally:
            self._response.close()
        self.result = self._result()

    def _release(self, piece: str) -> str:
        """What of the text so far can be shown now: the key kept out (`SplitKeyRedactor`), then cut at the stop
        strings (`StopCutter`). Joined, what it returns is the reply's text (`_result`)."""
        return self._cutter.feed(self._redactor.feed(piece))

    def _read_whole_reply(self) -> Iterator[str]:
        """A server that ignores `stream` answers with one JSON reply: read it as `chat` does, one piece."""
        payload = self._client._read_body(self._response)
        reply = self._client._read_reply(self._response.status_code, payload, self._cutter.stop, self.elapsed())
        self.notes.append("the server answered in one piece: it does not stream")
        if not reply.usage:
            self.notes.append(NO_USAGE)
        self.result = reply
        if reply.text:
            yield reply.text

    def _bytes(self) -> Iterator[bytes]:
        """The body as it arrives, each read bounded by `read_timeout` (silence between chunks) and the
        whole by `total_timeout` (checked whenever bytes arrive) and MAX_REPLY_BYTES."""
        client, received = self._client, 0
        check_encoding(self._response, self._host)  # else a body it cannot inflate reads as a broken line
        try:
            # read1: whatever has arrived (one socket read); iter_content would wait to fill a buffer.
            while chunk := self._response.raw.read1(65536, decode_content=True):
                received += len(chunk)
                if received > MAX_REPLY_BYTES:
                    raise BadResponseError(
                        f"the stream from {self._host} is larger than {MAX_REPLY_BYTES // 2**20} MB, far more "
                        "than any chat reply", self._response.status_code,
                    )
                if time.monotonic() > self._deadline:
                    raise LlmTimeoutError(
                        f"the stream took longer than {client.total_timeout:g} s in total ({self._chars} characters "
                        "had arrived): try again or raise total_timeout"
                    )
                yield chunk
        except urllib3.exceptions.ReadTimeoutError:
            if not self._chars:  # still reading the prompt, perhaps: a long one takes a small model a while
                raise LlmTimeoutError(
                    f"{self._host} started the stream but sent no text within {client.read_timeout:g} s: the model "
                    "may be slow (a long prompt takes a while to read); try again or raise read_timeout"
                ) from None
            raise LlmTimeoutError(
                f"{self._host} stopped sending in the middle of the stream: no data for {client.read_timeout:g} s "
                f"after {self._chars} characters of the reply; try again or raise read_timeout"
            ) from None
        except urllib3.exceptions.DecodeError:
            raise BadResponseError(
                f"the stream from {self._host} does not decompress: a proxy may have damaged it; try again",
                self._response.status_code,
            ) from None
        except (urllib3.exceptions.HTTPError, requests.exceptions.RequestException, OSError) as exc:
            raise LlmConnectionError(
                f"the stream from {self._host} broke after {self._chars} characters of the reply "
                f"({short_reason(exc)}): the server or a proxy dropped it; try again"
            ) from None

    def _take(self, event: SseEvent) -> str:
        """Read one chunk: remember finish_reason, usage, model and tool calls; return its new text."""
        key = self._client._api_key
        if event.event == "error":
            raise self._server_error(event.data)
        try:
            chunk = json.loads(event.data, parse_constant=no_json_constant, parse_float=finite_float)
        except RecursionError:
            raise BadResponseError(
                f"a line of the stream from {self._host} is nested too deeply to be a Chat Completions chunk",
                self._response.status_code,
            ) from None
        except NotJsonNumber as exc:
            raise BadResponseError(
                f"a chunk of the stream from {self._host} holds {exc.constant}, which JSON "
                f"does not allow (a number is finite): data: {redact(clipped(event.data, 120), key)!r}",
                self._response.status_code,
            ) from None
        except ValueError:
            raise BadResponseError(
                f"a line of the stream from {self._host} is not JSON, so not a Chat Completions chunk: "
                f"data: {redact(clipped(event.data, 120), key)!r}", self._response.status_code,
            ) from None
        if isinstance(chunk, dict) and chunk.get("error"):  # some servers send "error": null in every chunk
            raise self._server_error(event.data)
        try:
            if self._high or json_may_hold_surrogates(event.data):
                chunk = replace_lone_surrogates(self._pair_across_chunks(chunk))
            return self._read_chunk(redact_json(chunk, key))  # a server may echo the key into any field
        except RecursionError:  # the repair walks the chunk: two levels of Python's stack for each of its own
            raise BadResponseError(
                f"a line of the stream from {self._host} is nested too deeply to be a Chat Completions chunk",
                self._response.status_code,
            ) from None
        except WrongShape as exc:
            raise BadResponseError(
                f"a chunk of the stream from {self._host} is not a Chat Completions chunk: {exc}. The chunk: "
                f"{redact(clipped(event.data, 200), key)}", self._response.status_code,
            ) from None

    def _pair_across_chunks(self, chunk: Any) -> Any:
        """The chunk with a UTF-16 pair split across chunks made whole: a server that writes \\ud83d at the end of
        one chunk's text and \\ude00 at the start of the next means one emoji, which chat() keeps whole. A first
        half with no second half after it is repaired as any lone surrogate is."""
        try:
            delta = chunk["choices"][0]["delta"]
            text = delta["content"]
        except (KeyError, IndexError, TypeError):
            return chunk
        if not isinstance(text, str):
            return chunk
        text, self._high = self._high + text, ""
        if text and "\ud800" <= text[-1] <= "\udbff":
            text, self._high = text[:-1], text[-1]
        delta["content"] = text
        return chunk

    def _read_chunk(self, chunk: Any) -> str:
        text = _piece_of_text(chunk)
        if text is not None:  # the common chunk, nothing but a piece of text: no finish_reason, usage or tool calls
            self._chunks.append(chunk)
            self._model = self._model or chunk.get("model")
            self._content.append(text)
            self._chars += len(text)
            return text
        chunk = checked_field(chunk, "chunk", dict, required=True)
        self._chunks.append(chunk)
        if "timings" in chunk:  # llama.cpp's last chunk: its server, recognised (LlmClient's doc)
            self._client.note_server(chunk)
        self._model = self._model or checked_field(chunk.get("model"), "model", str)
        usage = checked_field(chunk.get("usage"), "usage", dict)
        if usage:
            check_usage_counts(usage)
            self._usage = dict(usage)  # the last chunk that carries it (the final one, as asked)
        choices = checked_field(chunk.get("choices"), "choices", list) or []  # [] in the usage chunk
        if not choices:
            return ""
        choice = checked_field(choices[0], "choices[0]", dict, required=True)
        self._finish_reason = checked_field(choice.get("finish_reason"), "choices[0].finish_reason", str) or (
            self._finish_reason
        )
        delta = checked_field(choice.get("delta"), "choices[0].delta", dict) or {}
        for i, call in enumerate(checked_field(delta.get("tool_calls"), "choices[0].delta.tool_calls", list) or []):
            self._add_tool_call_piece(checked_field(call, f"choices[0].delta.tool_calls[{i}]", dict, required=True))
        content = checked_field(delta.get("content"), "choices[0].delta.content", str, list)
        # Content in parts, as chat() reads it too: Mistral's reasoning models stream a thinking part and text parts.
        text = text_of_parts(content, "choices[0].delta.content") if isinstance(content, list) else content or ""
        self._content.append(text)
        self._chars += len(text)
        return text

    def _add_tool_call_piece(self, piece: dict) -> None:
        """Tool calls arrive in pieces too: the id and name first, then the arguments a few tokens at a
        time, each piece naming its call by `index`."""
        index = checked_field(piece.get("index"), "tool_calls[].index", int)
        index = len(self._calls) if index is None else index
        # The name's and the arguments' pieces are kept in lists and joined once (_result): added to a string in a
        # dict one by one, 8 MB of arguments in 80-character pieces took 7.3 s, the square of their size.
        call = self._calls.setdefault(index, {"id": "", "type": "function", "function": {"name": [], "arguments": []}})
        call["id"] = checked_field(piece.get("id"), "tool_calls[].id", str) or call["id"]
        function = checked_field(piece.get("function"), "tool_calls[].function", dict) or {}
        call["function"]["name"].append(checked_field(function.get("name"), "tool_calls[].function.name", str) or "")
        call["function"]["arguments"].append(checked_field(function.get("arguments"), "tool_calls[].function.arguments",
                                                     str) or "")

    def _server_error(self, data: str) -> LlmError:
        """The error the server sent in the stream (an `error` object, or an `event: error`), as the class its code
        names, as `chat` reads one sent in place of a reply (`provider_error`).

        Never retried, not even a 429 or a 5xx (`chat` retries those): the reader may have shown the pieces before it
        already (a notebook's print, StreamedSend's ReplyDelta events, a browser's page), and a second attempt would
        go on with another reply after them, so the text shown would no longer be the reply's. A provider that fails
        before it has written anything answers with an HTTP status instead (OpenRouter does), which `post` retries."""
        message = redact(server_message(data), self._client._api_key)
        try:
            code, _ = provider_error(json.loads(data)) or (None, "")
        except (ValueError, RecursionError):  # an `event: error` whose data is plain text
            code = None
        return error_class(code)(
            f"{self._host} reported an error in the middle of the stream, after {self._chars} characters of "
            f"the reply: {message}; try again", code,
        )

    def _result(self) -> ChatResult:
        if self.result is not None:  # a reply that came in one piece
            return self.result
        stopped = self._cutter.stopped
        key = self._client._api_key
        text, _ = cut_at_stop(redact("".join(self._content), key), self._cutter.stop)  # as the pieces were (_release)
        if self._usage is None:
            self.notes.append(CUT_BEFORE_USAGE if stopped else NO_USAGE)
        calls = tuple({**self._calls[i], "function": {name: redact("".join(pieces), key) for name, pieces in
                                                     self._calls[i]["function"].items()}}
                      for i in sorted(self._calls))
        for n, call in enumerate(calls):
            if not call["function"]["name"]:  # as `chat` refuses a call without one: there is nothing to run
                raise BadResponseError(
                    f"the stream from {self._host} ended with tool call {n} still nameless: none of its pieces "
                    "gave tool_calls[].function.name", self._response.status_code,
                )
        return ChatResult(
            text=text,
            finish_reason="stop" if stopped else self._finish_reason,
            usage=self._usage or {},
            latency_s=self.elapsed(),
            model=self._model or self._client.model,
            tool_calls=calls,
            client_cut=stopped,
            raw={"chunks": redact_across_chunks(self._chunks, key)},  # a learner may print them (lesson 09's raw)
            streamed=True,
            first_piece_s=self.first_piece_s,
        )


def _piece_of_text(chunk: Any) -> str | None:
    """The text of a chunk that holds nothing else: one choice whose delta is only `content` (a str), no
    finish_reason, no usage, a str model or none. None for any other chunk, which `_read_chunk` then checks field by
    field (and reads the same way when it is well formed): this is only the quick way through for most chunks."""
    if type(chunk) is not dict or chunk.get("usage") is not None or type(chunk.get("model")) not in _NAME:
        return None
    choices = chunk.get("choices")
    if type(choices) is not list or len(choices) != 1 or type(choices[0]) is not dict:
        return None
    choice = choices[0]
    delta = choice.get("delta")
    if type(delta) is not dict or len(delta) != 1 or choice.get("finish_reason") is not None:
        return None
    text = delta.get("content")
    return text if type(text) is str else None


_NAME = (str, type(None))


def _read_to_the_end(events: Iterator[SseEvent]) -> None:
    """After `[DONE]`, read what is left of the body (the chunked body's last, empty chunk) as OpenAI's own client
    does: a body read to its end puts its connection back in the pool, so the run's next call reuses it instead of
    connecting again (closing the response half-read would close the connection). Anything after `[DONE]` is
    ignored, a failure there too: the reply is complete, and the connection is then closed, not reused."""
    try:
        for _ in events:
            pass
    except (LlmConnectionError, LlmTimeoutError, BadResponseError, StreamCutMidLine):
        pass


def open_stream(
    llm: LlmClient, messages: list[dict], *, stop=None, max_tokens: int | None = None, include_usage: bool = True,
    **extra: Any,
) -> ReplyStream:
    """Send the conversation with `stream: true`; return a `ReplyStream` to read the reply as it is typed. The
    HTTP status is checked here: errors before the first byte of the reply raise now, as in `llm.chat`, after the
    same retries. `include_usage` asks for the usage in a final chunk (`stream_options`); a server that does not
    send it is not given invented counts."""
    body = llm.build_request(messages, stop=stop, max_tokens=max_tokens, stream=True, **extra)
    if include_usage:
        body["stream_options"] = {"include_usage": True}
    started = time.perf_counter()
    response = llm.post(body, accept="text/event-stream")  # an error status raises there: its body is no stream
    return ReplyStream(llm, response, body.get("stop"), started)


def chat_streamed(llm: LlmClient, messages: list[dict], **options: Any) -> ChatResult:
    """The reply `llm.chat(messages, **options)` gives, read as a stream: the same ChatResult."""
    with open_stream(llm, messages, **options) as stream:
        return stream.finish()


class StreamedSend:
    """How a request is sent in lesson 14: as a stream. Each piece of text is yielded as a ReplyDelta of round
    `step` the moment it arrives; the ChatResult at the end is the one `chat()` would have returned."""

    slot: ClassVar[str] = "send"

    def __call__(self, run: Any, step: int, messages: list[dict], **options: Any):
        if not callable(getattr(run.agent.llm, "post", None)):
            raise TypeError(f"StreamedSend needs an LlmClient (it streams over HTTP), got {run.agent.llm!r}")
        with open_stream(run.agent.llm, messages, **options) as stream:
            for piece in stream:
                yield ReplyDelta(step, piece, stream.elapsed())
            return stream.finish()

    def __repr__(self) -> str:
        return "StreamedSend()"
