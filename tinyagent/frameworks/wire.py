"""What a framework sends and gets back, recorded on its own HTTP client (lesson 20).

Every other framework of the lesson talks to the model through the official `openai` client, and that client
takes an `httpx` client of ours. `Wire` gives it one whose event hooks keep each request's JSON body and the
`usage` the server answered with, so the count of model calls and tokens is the wire's, not the framework's own
bookkeeping, and it works the same on the classroom model and on a real one. A call is recorded when it is sent,
so one that never got an answer (it timed out, the connection dropped) is counted too, marked `answered=False`.
tinyagent's own loops send with `requests`: `requests_session` records their requests, and `with_usage` adds the
usage their trace's LlmCall events read.

    wire = Wire()
    openai.OpenAI(base_url=url, api_key=key, http_client=wire.client())       # or wire.async_client()
    ...
    wire.calls[0].body["messages"]       # the first request, as sent
    wire.usage()                         # {"prompt_tokens": ..., "completion_tokens": ...}
"""

from __future__ import annotations

import json
import ssl
import threading
import weakref
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

import httpx

from tinyagent.api_url import is_loopback


@cache
def tls_context() -> ssl.SSLContext:
    """The certificates every framework's client checks a real provider with, read once: httpx reads its whole
    CA bundle again for each client it makes without one, and the lesson makes a client or two for every run."""
    return httpx.create_ssl_context()


@dataclass(frozen=True)
class WireCall:
    """One model call: the path, the JSON body sent, its size in bytes, and the usage that came back (none if no
    answer came: `answered` False)."""

    path: str
    body: dict
    size: int
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usage_returned: bool = False  # a stream without stream_options.include_usage carries no usage
    asked: tuple[tuple[str, str], ...] = ()  # the reply's tool calls: (name, arguments JSON), in its order
    answered: bool = True  # False: sent, and no answer came back (a timeout, a dropped connection)

    @property
    def messages(self) -> list:
        """The chat messages (or the Responses API's input items) the framework sent."""
        found = self.body.get("messages", self.body.get("input", []))
        return found if isinstance(found, list) else [{"role": "user", "content": found}]

    @property
    def tools(self) -> list[str]:
        """The names of the tools the request offers, in its order."""
        names = []
        for spec in self.body.get("tools") or []:
            names.append((spec.get("function") or spec).get("name", "?"))
        return names


@dataclass
class Wire:
    """The model calls one run made, in the order sent (thread-safe: async frameworks answer on other threads)."""

    calls: list[WireCall] = field(default_factory=list)
    # a request on its way -> the index of its call; the entry goes with the request, answered or not
    _pending: weakref.WeakKeyDictionary = field(default_factory=weakref.WeakKeyDictionary, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def client(self, timeout: float = 60) -> httpx.Client:
        return httpx.Client(timeout=timeout, verify=tls_context(),
                            event_hooks={"request": [self._sent], "response": [self._got]})

    def async_client(self, timeout: float = 60) -> httpx.AsyncClient:
        async def sent(request: httpx.Request) -> None:
            self._sent(request)

        async def got(response: httpx.Response) -> None:
            await response.aread()  # the body is kept: the framework reads the same bytes after us
            self._record(response)

        return httpx.AsyncClient(timeout=timeout, verify=tls_context(),
                                 event_hooks={"request": [sent], "response": [got]})

    def requests_session(self, url: str) -> Any:
        """A `requests.Session` for `url` that records the requests of tinyagent's own LlmClient (lesson 03).
        Their usage is not read here (LlmClient reads the reply as a stream, once): `with_usage` adds it after."""
        import requests

        wire = self

        class RecordedSession(requests.Session):
            def send(self, request: Any, **kwargs: Any) -> Any:
                raw = request.body or b""
                index = wire._sent_body(request.path_url.split("?")[0], raw.encode() if isinstance(raw, str) else raw)
                response = super().send(request, **kwargs)  # a timeout raises: the call stays unanswered
                if index is not None:
                    wire._answered(index, b"")
                return response

        session = RecordedSession()
        if is_loopback(url):
            session.trust_env = False  # as LlmClient does: no proxy applies to this machine's own servers
        return session

    def with_usage(self, usages: list[dict]) -> None:
        """Set the answered calls' usage, in order, from what the client read (tinyagent's LlmCall events)."""
        with self._lock:
            answered = iter(usages)
            calls = []
            for call in self.calls:
                usage = next(answered, None) if call.answered else None
                if usage is not None:
                    call = replace(call, prompt_tokens=usage.get("prompt_tokens", 0),
                                   completion_tokens=usage.get("completion_tokens", 0), usage_returned=bool(usage))
                calls.append(call)
            self.calls = calls

    def usage(self) -> dict[str, int]:
        return {"prompt_tokens": sum(c.prompt_tokens for c in self.calls),
                "completion_tokens": sum(c.completion_tokens for c in self.calls)}

    # -- the hooks ------------------------------------------------------------------------------------------
    def _sent(self, request: httpx.Request) -> None:
        index = self._sent_body(request.url.path, request.content)
        if index is not None:
            with self._lock:
                self._pending[request] = index

    def _got(self, response: httpx.Response) -> None:
        response.read()
        self._record(response)

    def _record(self, response: httpx.Response) -> None:
        with self._lock:
            index = self._pending.pop(response.request, None)
        if index is not None:
            self._answered(index, response.content)

    def _sent_body(self, path: str, raw: bytes) -> int | None:
        """Record a request as it goes out, not yet answered; its index among the calls, or None when it is not
        a model call (a models list, a health check)."""
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {}
        if not isinstance(body, dict) or "model" not in body:
            return None
        with self._lock:
            self.calls.append(WireCall(path, body, len(raw), answered=False))
            return len(self.calls) - 1

    def _answered(self, index: int, content: bytes) -> None:
        """The call at `index` got its answer, `content`: the usage and the tool calls it holds."""
        usage = usage_in(content)
        prompt, completion = usage or (0, 0)
        with self._lock:
            self.calls[index] = replace(self.calls[index], prompt_tokens=prompt, completion_tokens=completion,
                                        usage_returned=usage is not None, asked=tool_calls_in(content),
                                        answered=True)


def reply_objects(content: bytes) -> list[dict]:
    """The JSON objects of a reply: its one body, or each `data:` line of an SSE stream."""
    text = content.decode("utf-8", "replace")
    pieces = [text] if not text.lstrip().startswith(("data:", "event:")) else [
        line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    found = []
    for piece in pieces:
        try:
            data = json.loads(piece)
        except (ValueError, RecursionError):  # not JSON, or nested too deep for the parser
            continue
        if isinstance(data, dict):
            found.append(data)
    return found


def usage_in(content: bytes) -> tuple[int, int] | None:
    """Prompt and completion tokens from a reply (a JSON body, or an SSE stream whose last usage counts), or
    None when it holds none. Chat completions say prompt/completion_tokens, the Responses API input/output."""
    found = None
    for data in reply_objects(content):
        usage = data.get("usage") or _mapping(data.get("response")).get("usage")
        if isinstance(usage, dict):
            found = (_count(usage.get("prompt_tokens", usage.get("input_tokens"))),
                     _count(usage.get("completion_tokens", usage.get("output_tokens"))))
    return found


def tool_calls_in(content: bytes) -> tuple[tuple[str, str], ...]:
    """The tool calls a reply asks for, as (name, arguments JSON) in the model's order: from a chat completion
    (whole, or streamed in deltas that carry each call's index) or a Responses API reply (whole, or the
    stream's last `response`). Empty for a reply that asks for none, or that is not JSON at all."""
    calls: dict[int, tuple[str, str]] = {}  # the call's index -> its name and arguments so far
    for data in reply_objects(content):
        response = _mapping(data.get("response")) or data
        if isinstance(response.get("output"), list):  # the Responses API: all output items, so start again
            asked = [item for item in response["output"] if _mapping(item).get("type") == "function_call"]
            calls = {i: (_text(item.get("name")), _text(item.get("arguments")))
                     for i, item in enumerate(asked)}
            continue
        choices = data.get("choices")
        choice = _mapping(choices[0] if isinstance(choices, list) and choices else None)
        message = _mapping(choice.get("delta") or choice.get("message"))
        tool_calls = message.get("tool_calls")
        for position, call in enumerate(tool_calls if isinstance(tool_calls, list) else []):
            call = _mapping(call)
            index = call.get("index", position)  # a stream numbers each call; a whole reply lists them
            index = index if isinstance(index, int) else position
            function = _mapping(call.get("function"))
            # A stream sends the name once and the arguments in pieces: each delta adds to what came before.
            name, arguments = calls.get(index, ("", ""))
            calls[index] = (name + _text(function.get("name")), arguments + _text(function.get("arguments")))
    return tuple((name or "?", arguments) for _, (name, arguments) in sorted(calls.items()))


# A reply the wire cannot read must not stop the framework that asked for it: each field is taken only when it
# has the type the API gives it.
def _mapping(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str:
    """A field that should be text: as sent, its JSON if a server sent another type, "" if none."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _count(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError, OverflowError):  # not a number, NaN, or Infinity (which json.loads reads)
        return 0
