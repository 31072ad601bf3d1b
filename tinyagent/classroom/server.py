"""The classroom model's HTTP server: the OpenAI Chat Completions API, on 127.0.0.1, in the standard library.

The model itself (`behaviour.respond`) only decides what it would say: a `Reply` with the whole text
it would type if nothing stopped it, or the tool calls it makes. This module does the rest, the way
a real inference server does:

    POST /v1/chat/completions
        read and check the JSON body          -> 400 / 404 / 401 errors in OpenAI's JSON shape
        ask the model for its Reply
        cut the text at max_tokens            -> finish_reason "length"
        cut it at the earliest stop string    -> finish_reason "stop" (the stop string is not returned)
        count the tokens                      -> usage
        answer with one JSON object, or stream it as Server-Sent Events (stream=true)
    POST /v1/responses                        the Responses API: the same path, another envelope
                                              (responses_api.py); never paced (tokens_per_second)
    GET  /v1/models

(All also answer without the /v1 prefix.) Run it in-process with `ensure_classroom_server()`, which
is what the notebooks do when neither TINYAGENT_API_KEY nor TINYAGENT_API_URL is set (or with TINYAGENT_OFFLINE=1),
or for a whole room with `serve_room(...)`
(`python -m tinyagent classroom`).

Every answer is a pure function of the request: the ids are hashes of the request, and `created` is a
fixed date. Two identical requests get byte-identical answers, which is what lets nbval compare a
notebook's committed outputs with a fresh run.
"""

from __future__ import annotations

import atexit
import errno
import hashlib
import hmac
import ipaddress
import json
import selectors
import socket
import socketserver
import ssl
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from http import HTTPStatus
from http.server import ThreadingHTTPServer
from itertools import pairwise
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from tinyagent.chat_result import NotJsonNumber
from tinyagent.classroom.reply import Reply
from tinyagent.classroom.tokens import count_prompt_tokens, count_tokens, split_tokens, truncate_to_tokens
from tinyagent.errors import NO_KEY_NEEDED, ConfigurationError
from tinyagent.hosting.address import this_machine_address
from tinyagent.hosting.request_heads import (
    HeadCheckingHandler,
    HeadReader,
    host_name,
    origin_host,
    request_json,
)
from tinyagent.hosting.slow_clients import CLIENT_GONE, EndingGently, RequestClock, connection_cap
from tinyagent.hosting.threaded_server import BackgroundServer
from tinyagent.number_checks import ascii_number
from tinyagent.protocols.streamed_stops import StopCutter
from tinyagent.safe_text import holds_surrogate, replace_lone_surrogates
from tinyagent.tools import RepeatedKey

if TYPE_CHECKING:
    from tinyagent.classroom.hub_tokens import HubTokens

Responder = Callable[[dict], Reply]

DEFAULT_MODEL = "classroom"

# Real servers put the current Unix time in `created`. We put a fixed one (2026-06-30 00:00:00 UTC,
# the course's "today") so that the same request always gets the same bytes back, and notebook
# outputs that show a response do not change from run to run.
CREATED = 1782777600

SYSTEM_FINGERPRINT = "classroom"
MAX_STOP_SEQUENCES = 4  # the OpenAI API's limit
MAX_BODY_BYTES = 8 * 1024 * 1024  # far above any lesson's conversation, far below trouble
MAX_JSON_DEPTH = 64  # a tool's JSON Schema nests a handful of levels; nothing real nests 64
READ_TIMEOUT = 60.0  # seconds a connection may stay silent, and the most a request (head and body) may take
TOKENS_PER_CHUNK = 3  # how many tokens each streamed content delta carries
ACCEPT_PAUSE = 0.1  # seconds the server stops accepting when the process has no file descriptor left
# Over TLS a refused connection's 503 needs a handshake, which the serving loop never waits for: at most this many
# threads do those at once (past that a connection is closed unanswered), each within REFUSAL_SECONDS. After its
# answer a refused connection is read until the client closes it, for REFUSAL_SECONDS at most (EndingGently).
REFUSING_AT_ONCE = 8
REFUSAL_SECONDS = 5.0

CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
RESPONSES_PATHS = ("/v1/responses", "/responses")
MODELS_PATHS = ("/v1/models", "/models")
# The API before chat (a prompt in, text out): clients still default to it (LlamaIndex's OpenAILike, unless told
# is_chat_model=True), so its 404 says what to use instead.
LEGACY_COMPLETIONS_PATHS = ("/v1/completions", "/completions")


# --- errors -----------------------------------------------------------------------------------------


class ApiError(Exception):
    """A request the API refuses: becomes `{"error": {...}}` with `status`, as OpenAI sends it."""

    def __init__(
        self,
        status: int,
        message: str,
        type: str = "invalid_request_error",
        code: str | None = None,
        param: str | None = None,
        headers: dict | None = None,
    ):
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.code = code
        self.param = param
        self.headers = headers or {}

    def to_json(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def _bad_request(message: str, param: str | None = None, code: str | None = "invalid_value") -> ApiError:
    return ApiError(400, message, param=param, code=code)


# --- reading a request ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChatRequest:
    """A checked chat request: the body as sent, plus the parameters the server itself acts on."""

    body: dict
    model: str
    stop: tuple[str, ...]
    max_tokens: int | None
    stream: bool
    include_usage: bool
    digest: str  # a hash of the request: the seed of every id in the answer
    parallel_tool_calls: bool = True  # False: at most one tool call a turn


def parse_chat_request(raw: bytes, models: dict[str, str]) -> ChatRequest:
    """Check a /chat/completions body the way the API does; raise ApiError on the first problem."""
    body = _decode_json(raw)
    if not isinstance(body, dict):
        raise _bad_request(
            f"The request body must be a JSON object, not {_json_type(body)}.", code="invalid_json"
        )

    messages = body.get("messages")
    if messages is None:
        raise _bad_request(
            "Missing required parameter: 'messages'.", "messages", "missing_required_parameter"
        )
    if not isinstance(messages, list):
        raise _bad_request(
            f"Invalid type for 'messages': expected an array, but got {_json_type(messages)}.",
            "messages",
            "invalid_type",
        )
    if not messages:
        raise _bad_request(
            "Invalid 'messages': empty array. Expected at least one message.", "messages", "empty_array"
        )
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise _bad_request(
                f"Invalid 'messages[{i}]': expected an object with a string 'role'.",
                f"messages[{i}]",
                "invalid_type",
            )

    model = body.get("model", DEFAULT_MODEL)
    if model is None:
        model = DEFAULT_MODEL
    if not isinstance(model, str):
        raise _bad_request("Invalid type for 'model': expected a string.", "model", "invalid_type")
    if model not in models:
        raise ApiError(
            404,
            f"The model '{model}' does not exist. Available models: {', '.join(models)}.",
            code="model_not_found",
            param="model",
        )

    stream = _optional(body, "stream", bool) or False
    stream_options = _optional(body, "stream_options", dict)
    if stream_options is not None and not stream:
        raise _bad_request(
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.", "stream_options"
        )
    include_usage = bool(_optional(stream_options or {}, "include_usage", bool))

    n = _optional(body, "n", int)
    if n is not None and n != 1:
        raise _bad_request(
            f"Invalid 'n': the classroom model makes one choice per request (n=1), got {n}.", "n"
        )
    _refuse_legacy_functions(body)
    _optional(body, "tools", list)
    _check_response_format(body)
    _check_sampling_options(body)
    _optional(body, "grammar", str)  # llama.cpp's GBNF (lesson 23): read, not followed (the script keeps the format)

    return ChatRequest(
        body=body,
        model=model,
        stop=_parse_stop(body.get("stop")),
        max_tokens=_parse_max_tokens(body),
        stream=stream,
        include_usage=include_usage,
        digest=_request_digest(body),
        parallel_tool_calls=body.get("parallel_tool_calls") is not False,  # its type checked with the sampling options
    )


def _decode_json(raw: bytes) -> object:
    """The request body as JSON that everything after this can handle, or the ApiError that says why not."""
    try:
        # NaN and Infinity are not JSON, as OpenAI's API says; nor is 1e400, which Python reads as inf (echoed back
        # by the Responses API, it came out as Infinity)
        body = request_json(raw)
    except UnicodeDecodeError:  # RFC 8259: JSON between systems is UTF-8, as every client sends it
        raise _bad_request("The request body is not UTF-8 text. Send JSON in UTF-8 with Content-Type: "
                           "application/json.", code="invalid_json") from None
    except RepeatedKey as exc:  # Python keeps the last, another reader of the same body may keep the first
        key = replace_lone_surrogates(exc.key[:40])  # "\ud800" is a valid key, and no UTF-8 answer holds it
        raise _bad_request(f"The request body gives {key!r} more than once; send each field once.",
                           code="invalid_json") from None
    except ValueError as exc:  # not JSON
        why = f" ({exc})" if isinstance(exc, NotJsonNumber) else ""
        raise _bad_request(
            f"The request body is not valid JSON{why}. Send a JSON object with Content-Type: application/json.",
            code="invalid_json",
        ) from None
    except RecursionError:  # nested deeper than the decoder's stack allows
        raise _too_deep() from None
    _check_json_values(body)
    return body


def _too_deep() -> ApiError:
    return _bad_request(
        f"The request body is nested more than {MAX_JSON_DEPTH} levels deep; send flatter JSON.",
        code="invalid_json",
    )


def _check_json_values(value: object) -> None:
    """Refuse, as the client's fault, JSON that decodes but that nothing after it could handle.

    Nesting deeper than MAX_JSON_DEPTH would make every recursive step after this (hashing, token
    counting, the model) fail; and a lone surrogate escape ("\\ud800") decodes to a string that
    cannot be encoded back to UTF-8. The walk uses its own stack, so depth cannot crash it.
    """
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if holds_surrogate(item):  # json.loads joins a valid pair into one character
                raise _bad_request(
                    "The request body holds a lone surrogate escape such as \\ud800, which is not a "
                    "character: send valid Unicode text (a pair such as \\ud83d\\ude00 is fine).",
                    code="invalid_json",
                )
        elif isinstance(item, (dict, list)):
            if depth > MAX_JSON_DEPTH:
                raise _too_deep()
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)


def _parse_stop(stop: object) -> tuple[str, ...]:
    """`stop` as a tuple of non-empty strings: it may be null, a string, or a list of up to 4 strings."""
    if stop is None:
        return ()
    if isinstance(stop, str):
        stop = [stop]
    if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
        raise _bad_request(
            "Invalid 'stop': expected a string or an array of strings.", "stop", "invalid_type"
        )
    if len(stop) > MAX_STOP_SEQUENCES:
        raise _bad_request(
            f"Invalid 'stop': at most {MAX_STOP_SEQUENCES} stop sequences, got {len(stop)}.", "stop"
        )
    return tuple(s for s in stop if s)  # an empty stop string would stop before the first character


def _parse_max_tokens(body: dict) -> int | None:
    """`max_completion_tokens` (the newer name) or `max_tokens`, the smaller if both are sent."""
    limits = []
    for name in ("max_tokens", "max_completion_tokens"):
        value = _optional(body, name, int)
        if value is not None:
            if value < 1:
                raise _bad_request(f"Invalid '{name}': expected an integer of 1 or more, got {value}.", name)
            limits.append(value)
    return min(limits) if limits else None


def _check_response_format(body: dict) -> None:
    """What OpenAI requires of `response_format` before any model reads it: JSON mode only when a message asks for
    JSON in words (a model told nothing about it may write whitespace until its limit), and a json_schema's name."""
    wanted = _optional(body, "response_format", dict) or {}
    if wanted.get("type") == "json_object" and not any("json" in text.lower() for text in _texts(body["messages"])):
        raise _bad_request("Invalid 'messages': to use 'response_format' of type 'json_object', some message must "
                           "contain the word 'json' (in any case); say in the prompt that the answer is JSON.",
                           "messages")
    spec = wanted.get("json_schema") if wanted.get("type") == "json_schema" else None
    if isinstance(spec, dict) and not (isinstance(spec.get("name"), str) and spec["name"]):
        raise _bad_request("Missing required parameter: 'response_format.json_schema.name'; name the schema, such as "
                           "\"OrderSummary\".", "response_format.json_schema.name", "missing_required_parameter")


def _texts(messages: list[dict]) -> list[str]:
    """The text of every message: its content string, or its parts' text."""
    texts = []
    for message in messages:
        content = message.get("content")
        parts = [{"text": content}] if isinstance(content, str) else content if isinstance(content, list) else []
        texts += [part["text"] for part in parts if isinstance(part, dict) and isinstance(part.get("text"), str)]
    return texts


def _refuse_legacy_functions(body: dict) -> None:
    """`functions` and `function_call`, the API's names for tools before `tools` and `tool_choice`: a 400 that says
    which to send. Taken silently, they left the model with no tool to call ("this request offers no tools")."""
    instead = {"functions": "'tools' (each function as {\"type\": \"function\", \"function\": {...}})",
               "function_call": "'tool_choice'"}
    for name, new_name in instead.items():
        if body.get(name) is not None:
            raise _bad_request(f"The classroom model does not take the legacy '{name}' parameter: send {new_name} "
                               "instead, with the functions in 'tools' and the choice in 'tool_choice'.", name,
                               "unsupported_parameter")


def _check_sampling_options(body: dict) -> None:
    """The options both APIs take that the classroom model reads but does not follow, checked as OpenAI checks
    them: a 400 naming the first one of the wrong type or out of range (the Responses API echoes them back)."""
    _number(body, "temperature", 0, 2)
    _number(body, "top_p", 0, 1)
    _number(body, "presence_penalty", -2, 2)
    _number(body, "frequency_penalty", -2, 2)
    _check_logit_bias(body)
    _check_logprobs(body)
    _optional(body, "seed", int)
    _optional(body, "parallel_tool_calls", bool)
    metadata = _optional(body, "metadata", dict)
    if metadata and not all(isinstance(value, str) for value in metadata.values()):
        raise _bad_request("Invalid 'metadata': expected an object of string values.", "metadata", "invalid_type")


def _check_logit_bias(body: dict) -> None:
    """`logit_bias` as OpenAI takes it: token ids written as text ("50256"), each to a number from -100 to 100."""
    bias = _optional(body, "logit_bias", dict) or {}
    for token in bias:
        if not (token.isascii() and token.isdigit()):
            raise _bad_request(f"Invalid 'logit_bias': its keys must be token ids written as text, such as "
                               f"\"50256\", got {token[:40]!r}.", "logit_bias")
        _number(bias, token, -100, 100, inside="logit_bias")


def _check_logprobs(body: dict) -> None:
    """`logprobs: false` (or none) is all the classroom model can honour: it samples nothing, so it has no
    log-probabilities to give. `top_logprobs` of any value, 0 too, is refused as OpenAI's API refuses it without
    `"logprobs": true`, so a request that works here does not fail on a real model."""
    if _optional(body, "logprobs", bool):
        raise _bad_request("Invalid 'logprobs': the classroom model gives no log-probabilities (it is a script, "
                           "not a sampled model); leave out 'logprobs' and 'top_logprobs', or send "
                           "\"logprobs\": false.", "logprobs", "logprobs_not_supported")
    if _optional(body, "top_logprobs", int) is not None:
        raise _bad_request("Invalid 'top_logprobs': it is only allowed with \"logprobs\": true, and the classroom "
                           "model gives no log-probabilities (it is a script, not a sampled model); leave out "
                           "'top_logprobs'.", "top_logprobs", "logprobs_not_supported")


def _number(body: dict, name: str, low: float, high: float, inside: str | None = None) -> None:
    """A 400 unless body[name] is missing, null, or a number from `low` to `high`. `inside` names the parameter
    `body` is a value of (logit_bias): the 400 then names that parameter, and the key as `inside.name`."""
    value = body.get(name)
    if value is None:
        return
    param, label = (inside, f"{inside}.{name}") if inside else (name, name)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise _bad_request(f"Invalid type for '{label}': expected a number, got {_json_type(value)}.", param,
                           "invalid_type")
    if not low <= value <= high:
        raise _bad_request(f"Invalid '{label}': expected a number from {low} to {high}, got {value}.", param,
                           "decimal_above_max_value" if value > high else "decimal_below_min_value")


def _optional(body: dict, name: str, kind: type):
    """body[name] if it is missing, null or of `kind`; a 400 otherwise (a bool is not an int here)."""
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise _bad_request(
            f"Invalid type for '{name}': expected {kind.__name__}, got {_json_type(value)}.",
            name,
            "invalid_type",
        )
    return value


def _json_type(value: object) -> str:
    names = {
        dict: "an object",
        list: "an array",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        type(None): "null",
    }
    return names.get(type(value), type(value).__name__)


def _request_digest(body: dict) -> str:
    """A hash of what the model is asked: the same conversation gets the same ids, streamed or not."""
    asked = {key: value for key, value in body.items() if key not in ("stream", "stream_options")}
    return _digest(json.dumps(asked, sort_keys=True, ensure_ascii=False))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --- applying the API's rules to the model's text ---------------------------------------------------


def find_stop(text: str, stop: tuple[str, ...]) -> int | None:
    """Where the earliest of the stop strings starts in `text`, or None if none occurs."""
    found = [at for at in (text.find(s) for s in stop) if at >= 0]
    return min(found) if found else None


def cut_text(text: str, stop: tuple[str, ...], max_tokens: int | None) -> tuple[str, str]:
    """The content a client receives, and the finish_reason.

    The model "types" at most `max_tokens` tokens; if a stop string appears in what it typed, the text
    ends just before the earliest one ("stop"); otherwise it ends where the budget ran out ("length")
    or where the model finished on its own ("stop").
    """
    typed = text if max_tokens is None else truncate_to_tokens(text, max_tokens)
    at = find_stop(typed, stop)
    if at is not None:
        return typed[:at], "stop"
    return typed, "stop" if typed == text else "length"


class StopScanner(StopCutter):
    """Applies stop strings to text that arrives in pieces, as a streaming server must.

    A stop string can be split across two pieces ("Observ" + "ation:"), so the scanner holds back the end
    of a piece when it could be the start of a stop string, until the next piece shows what it is. The
    client reading a stream from a server that ignores `stop` needs exactly this, so both use one cutter
    (tinyagent/protocols/streamed_stops.py). It used to hold back the last len(longest stop) - 1 characters of every
    piece, which delayed text that could never be a stop string, and released "ab" for the stops
    ("abcd", "c") on "abc" + "d", where the whole text is cut to "".
    """

    def flush(self) -> str:
        """The text is over: what was held back can go (unless it holds a stop string)."""
        return self.finish()


def stream_text(text: str, stop: tuple[str, ...], max_tokens: int | None) -> tuple[list[str], str]:
    """The content deltas of a streamed answer, and its finish_reason.

    The model "generates" its text a few tokens at a time, and each piece goes through a StopScanner,
    as it would in a real server that cannot see the text ahead. Joined, the deltas equal the content
    that `cut_text` gives for the same request: the tests hold the two to that.
    """
    typed = text if max_tokens is None else truncate_to_tokens(text, max_tokens)
    tokens = split_tokens(typed)
    scanner = StopScanner(stop)
    deltas = []
    for i in range(0, len(tokens), TOKENS_PER_CHUNK):
        deltas.append(scanner.feed("".join(tokens[i : i + TOKENS_PER_CHUNK])))
        if scanner.stopped:
            break
    else:
        deltas.append(scanner.flush())
    finish_reason = "stop" if scanner.stopped or typed == text else "length"
    return [d for d in deltas if d], finish_reason


def split_stop_text(text: str, stop: tuple[str, ...], max_tokens: int | None) -> tuple[list[str], str]:
    """`classroom-split-stop`: the whole text, uncut (the server ignores `stop`), in the usual pieces of
    TOKENS_PER_CHUNK tokens, except that every stop string in it is split across two pieces at its middle
    ("...\\nObserv" | "ation: ..."): the case a client reading the stream must not miss (lesson 14)."""
    typed = text if max_tokens is None else truncate_to_tokens(text, max_tokens)
    tokens = split_tokens(typed)
    ends = {len("".join(tokens[: i + TOKENS_PER_CHUNK])) for i in range(0, len(tokens), TOKENS_PER_CHUNK)}
    found = [(at, len(s)) for s in stop if len(s) > 1 for at in _occurrences(typed, s)]
    ends = {end for end in ends if not any(at < end < at + size for at, size in found)}
    ends |= {at + size // 2 for at, size in found}
    cuts = [0, *sorted(ends | {len(typed)})]
    deltas = [typed[a:b] for a, b in pairwise(cuts) if b > a]
    return deltas, "stop" if typed == text else "length"


def _occurrences(text: str, part: str) -> list[int]:
    found, at = [], text.find(part)
    while at >= 0:
        found.append(at)
        at = text.find(part, at + 1)
    return found


# --- building the answer ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """What the server sends back, before it is shaped into JSON or chunks."""

    content: str | None
    tool_calls: list[dict]  # in the API's shape: {"id", "type": "function", "function": {name, arguments}}
    finish_reason: str
    usage: dict
    deltas: list[str]  # the content in streamed pieces (empty when not streaming)
    refusal: str | None = None  # structured outputs: why the answer cannot take the schema's shape
    # max_tokens ran out inside what was typed last (the text, or the last call's arguments), not between two calls:
    # the Responses route marks that item "incomplete".
    last_item_cut: bool = False


def make_answer(request: ChatRequest, reply: Reply) -> Answer:
    """Apply the API's rules to the model's uncut Reply."""
    if not isinstance(reply, Reply):
        raise TypeError(f"the responder must return a Reply, not {type(reply).__name__}")
    # The misbehaving variants, like servers that ignore `stop` (split_stop_text says how the second streams).
    stop = () if reply.ignores_stop or reply.splits_stop else request.stop

    if reply.refusal:
        # Structured outputs: the model says why it cannot fill the schema; the content stays empty.
        tool_calls, content, finish_reason, deltas, last_item_cut = [], None, "stop", [], False
        completion_tokens = count_tokens(reply.refusal)
    elif reply.tool_calls:
        # A tool-calling turn: the calls are the answer, the first only when the request allows no parallel calls.
        # Any text the model adds goes out as it is; all of it is typed within max_tokens.
        calls = reply.tool_calls if request.parallel_tool_calls else reply.tool_calls[:1]
        tool_calls = [_tool_call_json(request, i, call) for i, call in enumerate(calls)]
        content, tool_calls, cut, last_item_cut = cap_tool_calls(reply.text or None, tool_calls, request.max_tokens)
        finish_reason = "length" if cut else "tool_calls"
        deltas = [content] if content and request.stream else []
        completion_tokens = count_tokens(content) + sum(_call_tokens(call) for call in tool_calls)
    else:
        tool_calls = []
        text = reply.text or ""
        if request.stream and reply.splits_stop:
            deltas, finish_reason = split_stop_text(text, request.stop, request.max_tokens)
            content = "".join(deltas)
        elif request.stream:
            deltas, finish_reason = stream_text(text, stop, request.max_tokens)
            content = "".join(deltas)
        else:
            deltas = []
            content, finish_reason = cut_text(text, stop, request.max_tokens)
        completion_tokens = count_tokens(content)
        last_item_cut = finish_reason == "length"

    prompt_tokens = count_prompt_tokens(request.body["messages"], request.body.get("tools"))
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    return Answer(content, tool_calls, finish_reason, usage, deltas, reply.refusal, last_item_cut)


def cap_tool_calls(content: str | None, tool_calls: list[dict], max_tokens: int | None,
                   ) -> tuple[str | None, list[dict], bool, bool]:
    """What a model that types at most `max_tokens` tokens gets out of a tool-calling turn: the text, then each call's
    name and arguments, in that order, counted as `usage` counts them. Returns the content, the calls (the last one's
    arguments cut where the budget ran out; a call whose name no longer fits is not begun), whether it was cut, and
    whether the cut fell inside what was typed last (so the text or that call is unfinished) or nothing was typed."""
    if max_tokens is None:
        return content, tool_calls, False, False
    left = max_tokens
    if content:
        typed = truncate_to_tokens(content, left)
        if typed != content:
            return typed, [], True, True
        left -= count_tokens(content)
    kept: list[dict] = []
    for call in tool_calls:
        function = call["function"]
        name_tokens = count_tokens(function["name"])
        if name_tokens > left:
            return content, kept, True, not (content or kept)
        arguments = truncate_to_tokens(function["arguments"], left - name_tokens)
        kept.append({**call, "function": {**function, "arguments": arguments}})
        if arguments != function["arguments"]:
            return content, kept, True, True
        left -= name_tokens + count_tokens(arguments)
    return content, kept, False, False


def _call_tokens(call: dict) -> int:
    return count_tokens(call["function"]["name"]) + count_tokens(call["function"]["arguments"])


def _tool_call_json(request: ChatRequest, index: int, call) -> dict:
    """One tool call in the API's shape. The id is a hash of the request and the call's position:
    stable across runs (nbval), different for every call a conversation makes."""
    arguments = (
        call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments, ensure_ascii=False)
    )
    return {
        "id": "call_" + _digest(f"{request.digest}/{index}")[:24],
        "type": "function",
        "function": {"name": call.name, "arguments": arguments},
    }


def _envelope(request: ChatRequest, object_type: str) -> dict:
    return {
        "id": "chatcmpl-classroom-" + request.digest[:24],
        "object": object_type,
        "created": CREATED,
        "model": request.model,
        "system_fingerprint": SYSTEM_FINGERPRINT,
    }


def completion_json(request: ChatRequest, answer: Answer) -> dict:
    """The non-streaming answer: one `chat.completion` object."""
    message = {"role": "assistant", "content": answer.content}
    if answer.refusal:  # only then: the lessons print this message, and it has never had the key
        message["refusal"] = answer.refusal
    if answer.tool_calls:
        message["tool_calls"] = answer.tool_calls
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": answer.finish_reason}
    return {**_envelope(request, "chat.completion"), "choices": [choice], "usage": answer.usage}


def completion_chunks(request: ChatRequest, answer: Answer) -> list[dict]:
    """The streaming answer: the `chat.completion.chunk` objects, in order (`data: [DONE]` not included).

    A role chunk, then the content a few tokens at a time (or each tool call: its id and name, then its
    arguments in pieces), then an empty delta carrying finish_reason, then (with include_usage) a chunk
    with no choices and the usage.
    """
    base = _envelope(request, "chat.completion.chunk")
    if request.include_usage:
        base["usage"] = None  # as OpenAI does: every chunk has the key, only the last one a value

    def chunk(delta: dict, finish_reason: str | None = None) -> dict:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return {**base, "choices": [choice]}

    chunks = [chunk({"role": "assistant", "content": None if answer.tool_calls else ""})]
    chunks += [chunk({"content": delta}) for delta in answer.deltas]
    if answer.refusal:
        chunks.append(chunk({"refusal": answer.refusal}))
    for index, call in enumerate(answer.tool_calls):
        function = call["function"]
        head = {
            "index": index,
            "id": call["id"],
            "type": "function",
            "function": {"name": function["name"], "arguments": ""},
        }
        chunks.append(chunk({"tool_calls": [head]}))
        pieces = split_tokens(function["arguments"])
        for i in range(0, len(pieces), TOKENS_PER_CHUNK):
            part = "".join(pieces[i : i + TOKENS_PER_CHUNK])
            chunks.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]}))
    chunks.append(chunk({}, answer.finish_reason))
    if request.include_usage:
        chunks.append({**base, "choices": [], "usage": answer.usage})
    return chunks


def chunk_tokens(chunk: dict) -> int:
    """The tokens a streamed chunk carries: its content, or its piece of a tool call (name, arguments)."""
    total = 0
    for choice in chunk.get("choices") or ():
        delta = choice.get("delta") or {}
        total += count_tokens(delta.get("content"))
        for call in delta.get("tool_calls") or ():
            function = call.get("function") or {}
            total += count_tokens(function.get("name")) + count_tokens(function.get("arguments"))
    return total


def model_json(name: str, description: str) -> dict:
    return {
        "id": name,
        "object": "model",
        "created": CREATED,
        "owned_by": "tinyagent",
        "description": description,
    }


# --- HTTP -------------------------------------------------------------------------------------------

class _Handler(HeadCheckingHandler):
    """One connection. HTTP/1.1 keep-alive: every non-streamed answer carries Content-Length, so the
    client can send its next request on the same connection."""

    protocol_version = "HTTP/1.1"
    server_version = "tinyagent-classroom/1"
    disable_nagle_algorithm = True  # small answers go out at once, not after a 40 ms delayed-ACK wait
    timeout = READ_TIMEOUT  # replaced by the server's read_timeout in setup()
    # Buffer the answer so its status line, headers and body leave in one write (one packet);
    # handle_one_request flushes after every request, and streaming flushes after every event.
    wbufsize = 64 * 1024

    @property
    def room(self) -> ClassroomServer:
        return self.server.room

    def setup(self) -> None:
        # The socket timeout: an idle keep-alive connection, or a client that stops sending in the
        # middle of its request line or headers, is closed after this many seconds of silence.
        self.timeout = self.room.read_timeout
        super().setup()
        self.rfile.close()  # the socket's own reader, replaced by one that bounds each request in total
        self.clock = RequestClock(self.connection, self.room.read_timeout)
        self.rfile = HeadReader(self.clock)
        self.server.watch_clock(self.connection, self.clock)

    def handle(self) -> None:
        # BaseHTTPRequestHandler.handle, with the wait between two requests marked on the clock: a server
        # with no room left may close a connection idle there for a new one (_HTTPServer._no_room_for).
        self.close_connection = True
        if self.refused_tls_hello():
            return
        self.handle_one_request()
        while not self.close_connection:
            self.clock.between_requests()
            self.handle_one_request()

    def parse_request(self) -> bool:
        self.clock.start()  # a request line has come, perhaps read with the request before it
        return super().parse_request()

    def do_GET(self):
        self._handle()

    def do_HEAD(self):  # GET's answer, headers only (_send_json writes no body for HEAD)
        self._handle()

    def do_POST(self):
        self._handle()

    def do_PUT(self):
        self._handle()

    def do_PATCH(self):
        self._handle()

    def do_DELETE(self):
        self._handle()

    def do_OPTIONS(self):  # a web page's preflight: 405 as for any other method a path does not take
        self._handle()

    def do_TRACE(self):  # methods any client may send: a 405 too, not the base class's 501 (a server's error)
        self._handle()

    def do_CONNECT(self):
        self._handle()

    def _handle(self) -> None:
        # Until the body is read, it sits on the socket in front of the next request (see _send_json).
        self._body_read = "Content-Length" not in self.headers and "Transfer-Encoding" not in self.headers
        try:
            path = self._request_path()
            endpoint = self._route(path)
            size = self._body_size()
            # Who may ask is told from the headers alone: a stranger's body is never held in memory, only read
            # past once the refusal is sent (_read_past_refused_body).
            self._refuse_web_pages()
            self._check_host()
            self._check_key()
            body = self._read_body(size)
            # lesson 20: the request goes to any running recording(); after the key check, so no stranger's body
            self.room.record(self.command, path, body)
            endpoint(body)
        except ApiError as err:
            self._send_json(err.status, err.to_json(), err.headers)
            self._read_past_refused_body()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client went away; nobody to answer
        except Exception as exc:  # noqa: BLE001 - a bug must cost one request a 500, never the server
            error = ApiError(500, f"The classroom model failed: {type(exc).__name__}: {exc}", "server_error")
            self._send_json(500, error.to_json())
            if self.room.verbose:
                import traceback

                traceback.print_exc()

    def _request_path(self) -> str:
        """The path the request asks for, decoded; a 400 for a target urlsplit cannot read ("http://[/v1/models")."""
        try:
            return unquote(urlsplit(self.path).path)
        except ValueError:
            raise _bad_request(f"The request target {self.path[:80]!r} is not a URL this server can read. Send a "
                               "path such as /v1/chat/completions.", code="invalid_request_target") from None

    def _route(self, path: str) -> Callable[[bytes], None]:
        prefix = self.room.base_path
        if prefix and path.startswith(prefix + "/"):
            path = path[len(prefix):]  # a proxy (JupyterHub's) forwards the whole path
        if path in CHAT_PATHS:
            allowed, endpoint = "POST", self._chat
        elif path in RESPONSES_PATHS:
            allowed, endpoint = "POST", self._responses
        elif path in MODELS_PATHS:
            allowed, endpoint = "GET", self._list_models
        elif path.startswith(tuple(p + "/" for p in MODELS_PATHS)):
            allowed, endpoint = "GET", lambda body: self._get_model(path.rsplit("/", 1)[1])
        elif path in LEGACY_COMPLETIONS_PATHS:
            raise ApiError(404, "The legacy completions API (POST /v1/completions) is not served: send the prompt as "
                                "messages to POST /v1/chat/completions (LlamaIndex's OpenAILike needs "
                                "is_chat_model=True for that).", code="unknown_url")
        else:
            raise ApiError(
                404,
                f"Unknown path {path}. This server answers POST /v1/chat/completions, POST /v1/responses "
                "and GET /v1/models.",
                code="unknown_url",
            )
        method = "GET" if self.command == "HEAD" else self.command  # HEAD: GET's answer, headers only
        if method != allowed:
            raise ApiError(
                405,
                f"{method} is not allowed on {path}; use {allowed}.",
                code="method_not_allowed",
                headers={"Allow": allowed},
            )
        return endpoint

    def _refuse_web_pages(self) -> None:
        """A web page on another site may send a POST a browser lets through without asking (a form, text/plain)
        to this machine's port: only JSON from a program, or from a page of this server itself, is taken. Each
        header read here and in _check_host comes once: read first-wins, a second could say what a proxy in front,
        reading the last, refused."""
        for name in ("Host", "Origin", "Content-Type"):
            if len(sent := self.headers.get_all(name) or []) > 1:
                raise _bad_request(f"A request may carry one {name} header, not {len(sent)}.",
                                   code="duplicate_header")
        if self.command != "POST":
            return
        origin = self.headers.get("Origin")
        if origin is not None and origin_host(origin) != self.authority().lower():
            raise ApiError(403, "Requests from web pages of other sites are refused.", code="cross_site")
        media_type = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if media_type != "application/json":
            raise ApiError(415, "Send the body as JSON, with Content-Type: application/json (as OpenAI's clients "
                                "do).", code="unsupported_media_type")

    def _check_host(self) -> None:
        """Without a key, a request must name this server in its Host header (or its target, when that is a whole
        URL: authority()): localhost, an IP address, or the name it listens on; anything else is a 403.

        A page on another site can point its own name at this machine's address (DNS rebinding): the browser then
        takes this server for the page's own site, and lets the page read what it answers. Its requests still name
        the page's site in Host, which is what this refuses. An IP address cannot be rebound (the only page at
        http://<address>:<port>/ is this server, which serves none), so a room on a LAN that asks no key is still
        reached at the address the banner prints. With --api-key or --hub-auth there is no check, as `serve --api-key`
        has none: a page cannot send the key or the hub's token, so naming its own site gains it nothing, and the
        Host is whatever name the room uses (the hub's public name, behind its proxy; the teacher's machine's name).
        """
        if self.room.api_key is not None or self.room.hub_tokens is not None:
            return
        sent = self.authority()
        name = host_name(sent)
        if name and (name in ("localhost", host_name(self.room.host)) or _is_ip_address(name)):
            return
        raise ApiError(403, f"This classroom model asks no key, so it answers only requests that name it: localhost, "
                            f"an IP address or the name it listens on, not {sent[:80] or '(no Host header)'!r}. Open "
                            f"it as {self.room.base_url}, or start it with --api-key.", code="host_not_allowed")

    def _body_size(self) -> int:
        """The body's length in bytes, from the headers: a 400, 411 or 413 for one that cannot be read safely."""
        lengths = self.headers.get_all("Content-Length") or []
        if len(lengths) > 1 or (lengths and "Transfer-Encoding" in self.headers):
            # Two ways to tell where the body ends: a proxy in front may pick the other one, and
            # what it thinks is the body's tail would be read here as the next request (smuggling).
            raise _bad_request(
                "The request says how long its body is twice (two Content-Length headers, or "
                "Content-Length with Transfer-Encoding). Send exactly one Content-Length.",
                code="ambiguous_body_length",
            )
        if not lengths:
            if self.command == "POST" or self.headers.get("Transfer-Encoding"):
                raise ApiError(411, "A Content-Length header is required.", code="length_required")
            return 0
        size = ascii_number(lengths[0].strip(), most_digits=19)  # no sign, no spaces, no other digits
        if size is None:
            raise _bad_request(
                f"Invalid Content-Length: {lengths[0]!r}. Send the body's size in bytes, digits only.",
                code="invalid_content_length",
            )
        if size > MAX_BODY_BYTES:
            raise ApiError(
                413,
                f"The request body is {size} bytes; the limit is {MAX_BODY_BYTES}.",
                code="request_too_large",
            )
        return size

    def _read_body(self, size: int) -> bytes:
        if size:
            self.send_continue()  # only now: a request refused from its head is never invited to send its body
        body = self._read_exactly(size)
        self._body_read = True
        return body

    def _read_past_refused_body(self) -> None:
        """The body of a request refused before it was read, read and dropped as it comes: closing the connection
        with it unread would reset it, and a client that sends its body after its head (urllib3 does) would read
        "Connection reset by peer" in place of the refusal. One too large (413) or of no clear length is not read as
        a body: what comes is dropped for REFUSAL_SECONDS at most after the answer (_let_the_client_finish)."""
        if self._body_read:
            return
        try:
            size = self._body_size()
        except ApiError:
            size = None
        with suppress(ApiError, *CLIENT_GONE):  # out of time, or gone: the connection closes anyway
            self.wfile.flush()  # the refusal goes out now, not once the body has come (or the read_timeout)
            if self.continue_owed or size is None:
                # The client waits for "100 Continue" before it sends its body, and was refused instead: no body is
                # coming (RFC 9110 §10.1.1), and waiting for one held this thread until the read_timeout for a client
                # that kept the connection open. Our side ends now; what is still on its way (a client may send the
                # body without waiting) is read as for any refused connection, until the client closes.
                # A body too large (or of no clear length), closed on unread, reset the connection while JupyterHub's
                # proxy was still sending it: it then answered a 503 page of its own in place of the 413.
                with suppress(OSError):
                    _let_the_client_finish(self.connection, time.monotonic() + REFUSAL_SECONDS)
                return
            self._read_exactly(size, keep=False)

    def _read_exactly(self, size: int, keep: bool = True) -> bytes:
        """The next `size` bytes of the body (or none kept, b"", unless `keep`), or a 408 once the request's
        read_timeout is over (RequestClock: a client that sends one byte a minute does not hold this thread for
        days)."""
        parts, remaining = [], size
        try:
            while remaining:
                part = self.rfile.read1(min(remaining, 1 << 16))
                if not part:
                    raise ConnectionResetError("the client closed the connection in the middle of its body")
                if keep:
                    parts.append(part)
                remaining -= len(part)
        except TimeoutError:
            raise ApiError(
                408,
                f"The request did not arrive within {self.room.read_timeout:g} s: {size - remaining} "
                f"of the {size} body bytes announced by Content-Length came. Send the whole request at once.",
                code="request_timeout",
            ) from None
        return b"".join(parts)

    def _check_key(self) -> None:
        if self.room.hub_tokens is not None:
            refused = self.room.hub_tokens.check(self.headers.get("Authorization", ""))
            if refused is not None:
                raise ApiError(refused.status, refused.message, code=refused.code)
            return
        if self.room.api_key is None:
            return
        sent = self.headers.get("Authorization", "")
        if not sent:
            raise ApiError(
                401,
                "You didn't provide an API key. Send it as 'Authorization: Bearer <key>' "
                "(set TINYAGENT_API_KEY).",
                code="missing_api_key",
            )
        scheme, _, key = sent.partition(" ")
        # compare_digest takes the same time however many characters match: no guessing by timing
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            key.strip().encode(), self.room.api_key.encode()
        ):
            raise ApiError(
                401,
                "Incorrect API key provided. Use the key this classroom server was started "
                "with as TINYAGENT_API_KEY.",
                code="invalid_api_key",
            )

    def _chat(self, body: bytes) -> None:
        # A paced room (lesson 14) must take its time on every answer, remembered or not, and a room with a
        # chunk_delay on every streamed one. A JSON answer is an object, so its bytes start with "{"; a stream's
        # events (remembered whole, in the one write an unpaced room sends) start with "data:".
        cache = None if self.room.paced or self.room.chunk_delay else self.room.answers
        remembered = cache.get(body) if cache is not None else None
        if remembered is not None:
            if remembered.startswith(b"{"):
                self._send_json(200, remembered)
            else:
                self._send_event_bytes(remembered)
            return
        request = parse_chat_request(body, self.room.models)
        answer = make_answer(request, self._ask_model(request))
        prefill = self.room.prefill_seconds(answer.usage["prompt_tokens"])
        if request.stream:
            chunks = completion_chunks(request, answer)
            if cache is not None:
                events = b"".join(_encode_events(chunks))
                cache.put(body, events)
                self._send_event_bytes(events)
            else:
                self._send_events(chunks, prefill)
        else:
            if self.room.paced:  # the whole answer goes out once every token of it is "typed"
                time.sleep(prefill + self.room.typing_seconds(answer.usage["completion_tokens"]))
            data = json.dumps(completion_json(request, answer), ensure_ascii=False).encode("utf-8")
            if cache is not None:
                cache.put(body, data)
            self._send_json(200, data)

    def _responses(self, body: bytes) -> None:
        """The Responses API: translated to a chat request, answered as one, sent back in its own shape."""
        # imported on first use: only lesson 20's Agents SDK run calls it
        from tinyagent.classroom import responses_api

        asked = _decode_json(body)
        try:
            chat = responses_api.to_chat_body(asked)
        except responses_api.ResponsesRequestError as exc:
            raise _bad_request(str(exc), exc.param) from None
        _check_sampling_options(asked)  # before the echo: response_json sends them back as they came
        try:
            request = parse_chat_request(responses_api.encode_body(chat), self.room.models)
            reply = self._ask_model(request)
        except ApiError as err:  # a chat field's name in it is the Responses field's name for the caller
            err.message, err.param = responses_api.in_responses_terms(err.message, err.param)
            raise
        answer = make_answer(request, reply)
        if _optional(asked, "stream", bool):
            events = responses_api.response_events(asked, request.digest, request.model, CREATED, answer)
            self._send_events(events, named=True)
        else:
            self._send_json(200, responses_api.response_json(asked, request.digest, request.model, CREATED, answer))

    def _ask_model(self, request: ChatRequest) -> Reply:
        try:
            return self.room.responder(dict(request.body, model=request.model))
        except ValueError as exc:  # the model's way of saying the request is malformed; `param`: the field at fault
            raise _bad_request(str(exc), getattr(exc, "param", "messages")) from None

    def _list_models(self, body: bytes) -> None:
        data = [model_json(name, description) for name, description in self.room.models.items()]
        self._send_json(200, {"object": "list", "data": data})

    def _get_model(self, name: str) -> None:
        if name not in self.room.models:
            raise ApiError(
                404,
                f"The model '{name}' does not exist. Available models: {', '.join(self.room.models)}.",
                code="model_not_found",
                param="model",
            )
        self._send_json(200, model_json(name, self.room.models[name]))

    def _send_json(self, status: int, payload: dict | bytes, headers: dict | None = None) -> None:
        """Send a JSON answer (a dict, or one already encoded)."""
        data = payload if isinstance(payload, bytes) else json.dumps(payload, ensure_ascii=False).encode("utf-8")
        if not self._body_read:
            # The body we refused unread is still on the socket: the next "request" would be garbage.
            self.close_connection = True
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        self.clock.answered()  # still in wfile's buffer: handle_one_request flushes it

    def _send_events(self, chunks: list[dict], prefill: float = 0.0, named: bool = False) -> None:
        """Server-Sent Events: `data: <json>` and a blank line per event, `data: [DONE]` at the end; or, for the
        Responses API (`named`), `event: <type>` before each and no [DONE], as that API sends them.

        The length is not known in advance, so the body goes out in HTTP/1.1 chunks (`Transfer-Encoding:
        chunked`) and the connection stays open for the client's next request, as with a JSON answer (a
        run makes several calls: a new connection each time would cost a connect and a server thread). An
        HTTP/1.0 client gets the old way: the connection closes at the end. With neither pacing nor
        chunk_delay, every event goes out in one write (the same bytes; nothing to wait for between them). A
        paced room (tokens_per_second) reads the prompt first (`prefill` seconds), then sends each chat
        completion chunk once its tokens are "typed"; the Responses API's events, which hold no chat chunk,
        wait for no typing, only for chunk_delay when one is set.
        """
        events = _encode_events(chunks, named)
        if not (self.room.paced or self.room.chunk_delay):
            self._send_event_bytes(b"".join(events))
            return
        send, end = self._start_events()
        for chunk, event in zip(chunks, events):
            tokens = chunk_tokens(chunk)
            if tokens and self.room.paced:
                time.sleep(prefill + self.room.typing_seconds(tokens))
                prefill = 0.0  # once, before the first token
            send(event)
            if self.room.chunk_delay:
                time.sleep(self.room.chunk_delay)
        if not named:
            send(events[-1])
        end()

    def _send_event_bytes(self, events: bytes) -> None:
        """A whole stream's events at once, in one write (an unpaced room has nothing to wait for)."""
        send, end = self._start_events()
        send(events)
        end()

    def _start_events(self) -> tuple[Callable[[bytes], None], Callable[[], None]]:
        """Send the headers of a stream; return how to send a piece of its body, and how to end it."""
        chunked = self.request_version != "HTTP/1.0"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.close_connection = True
            self.send_header("Connection", "close")
        self.end_headers()

        def send(data: bytes) -> None:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data) if chunked else data)
            self.wfile.flush()

        def end() -> None:
            if chunked:
                self.clock.answered()
                self.wfile.write(b"0\r\n\r\n")  # the last chunk: the body is complete
                self.wfile.flush()

        return send, end

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The base class calls this for requests it cannot parse at all; answer in JSON there too."""
        self._body_read = False
        self.close_connection = True
        if self.request_version == "HTTP/0.9":  # what the base class assumes of a garbled request line
            self.request_version = "HTTP/1.0"  # answer with a status line and headers all the same
        error = ApiError(code, message or HTTPStatus(code).phrase)
        try:
            self._send_json(code, error.to_json())
        except OSError:
            pass

    def log_message(self, format: str, *args) -> None:
        # Quiet by default: nbval compares a notebook's stderr too, and a log line is noise there.
        if self.room.verbose:
            super().log_message(format, *args)


@dataclass
class _Served:
    """A connection that has a thread: its client, for the per-client cap (None: this machine, never capped), and
    its thread's RequestClock (None until the thread has set it up, and once the connection has been closed to make
    room: either way, not one to close for room)."""

    client: str | None
    clock: RequestClock | None = None


def _capped_client(address: str) -> str | None:
    """Whom a connection from `address` counts against, for the per-client cap: its IP address (an IPv4 one however
    a dual-stack socket writes it), or None for this machine's own (loopback), which are never capped
    (_HTTPServer says why)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    ip = getattr(ip, "ipv4_mapped", None) or ip
    return None if ip.is_loopback else str(ip)


def _let_the_client_finish(connection: socket.socket, deadline: float) -> None:
    """After a refusal from a thread (one over TLS, or one whose body was never asked for): end our side (the client
    reads the answer, then the end), and read what the client still sends until it closes, the deadline passes
    (TimeoutError) or MAX_BODY_BYTES came. Why: see hosting.slow_clients.EndingGently, which does the same for plain
    HTTP in the serving loop."""
    connection.shutdown(socket.SHUT_WR)  # also ends TLS on a TLS socket: what follows is read as it comes, undecrypted
    received = 0
    while received < MAX_BODY_BYTES and (left := deadline - time.monotonic()) > 0:
        connection.settimeout(left)
        part = connection.recv(65536)
        if not part:
            return
        received += len(part)


def _refusal_bytes(error: ApiError) -> bytes:
    """A whole HTTP answer refusing a connection the server gives no thread: the API's error shape, when to try
    again, and the connection closed."""
    body = json.dumps(error.to_json()).encode("utf-8")
    head = (f"HTTP/1.1 {error.status} {HTTPStatus(error.status).phrase}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n")
    return head.encode("ascii") + body


class _HTTPServer(ThreadingHTTPServer):
    """A thread per connection, started only once the connection has sent something; at most
    `max_connections` at once.

    The standard loop accepts one connection per wake-up and starts its thread at once (and
    Thread.start waits for the new thread to run). A burst of 2,000 connections that never send a
    byte, then all close at once, then meant 2,000 threads, all waking together to find their
    connection dead, while the accept loop queued behind them: 10 s before the next learner's
    request was even accepted. Here the loop accepts everything pending, and a connection waits in
    the loop's selector, costing no thread, until its first bytes (or its end) arrive. A dead one is
    then closed on the spot; a silent one is closed after read_timeout, as before.

    On a hub one server serves every learner, so no client may take the descriptors they share. Clients
    that each sent a byte a second (within read_timeout) and reconnected when closed held every thread
    and descriptor of a server limited to 256 (250 threads), and every other client was accepted and
    then closed unanswered until they stopped. Now at most max_connections connections have a thread,
    and as many again may wait silent (the oldest makes room for a new one). When all are served, one
    idle between two requests (kept alive, or a Session a script forgot) is closed to make room for a
    new request; if none is, the request gets a 503 in the API's shape, with Retry-After, and no thread.

    That still let one client take every thread: 512 connections from one address, each dripping its body a byte
    every 3 s, and every other learner got the 503 for as long as it went on (each request's read_timeout does
    not help: the client sends another). So one client address may hold at most max_per_client connections (a
    quarter of max_connections, as `serve` allows each client); past that, its own idle one makes room, or it
    gets a 429 `too_many_connections`, with Retry-After, and no thread. A client is its IP address, not its IPv6
    /64 network as `serve` counts: a classroom's LAN is one /64, which would be the whole room under one cap.
    This machine's own addresses (loopback) are never capped: behind the hub every learner's request comes from
    the proxy's one address there, so a cap would be the whole room's, and a program on this machine may bind any
    of 127.0.0.0/8's sixteen million addresses, so it would stop nobody here. What that leaves: a program on this
    machine (a learner's code on the hub's own machine, which can reach the service directly) can still hold every
    thread, as before; at accept time, before any token, it cannot be told from the proxy.
    """

    daemon_threads = True  # a connection left open never keeps the interpreter alive
    block_on_close = False  # stopping closes the open connections instead of waiting on them
    request_queue_size = 1024  # a burst of connections waits in the kernel's queue, not in SYN retries

    def __init__(self, address: tuple[str, int], room: ClassroomServer):
        self.room = room
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.max_connections = connection_cap()
        self._stop_asked = False
        self._loop_done = threading.Event()
        self._loop_done.set()  # not serving yet: a shutdown() now has nothing to wait for
        self.max_per_client = max(2, self.max_connections // 4)
        self._open: dict[socket.socket, _Served] = {}  # the connections that have a thread
        self._open_lock = threading.Lock()
        self._refusing = 0  # threads answering a 503 over TLS now (_refuse_over_tls)
        # shutdown() writes a byte here, so the loop stops at once instead of at its next poll (which
        # would add up to a poll interval to the end of every `python -m tinyagent ask`).
        self._wake_up, self._wake_up_sender = socket.socketpair()
        self._wake_up_sender.setblocking(False)
        # Made here, not in the serving thread: a process out of descriptors when that thread began (a kernel's
        # files, say) killed the loop there with "Too many open files", and the server never answered; here it
        # is the constructor's error, said at once.
        self._selector = selectors.DefaultSelector()
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind looks up the host's full DNS name, which can hang for seconds offline.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        self._loop_done.clear()
        waiting: OrderedDict[socket.socket, tuple[object, float]] = OrderedDict()  # oldest first
        accept_again: float | None = None  # out of descriptors: when to try accepting again
        try:
            with self._selector as selector, EndingGently(selector, self.max_connections, REFUSAL_SECONDS, MAX_BODY_BYTES) as self._ending:
                self.socket.setblocking(False)
                selector.register(self.socket, selectors.EVENT_READ)
                selector.register(self._wake_up, selectors.EVENT_READ)
                while not self._stop_asked:
                    wait = poll_interval if accept_again is None else min(poll_interval, accept_again - time.monotonic())
                    ready = [key.fileobj for key, _ in selector.select(max(wait, 0.0))]
                    # The connections already here first: accepting may close a silent one, not to be read after.
                    for connection in ready:
                        if connection in waiting:
                            self._first_bytes(selector, waiting, connection)
                        elif connection in self._ending:
                            self._ending.read(connection)
                        elif connection is self._wake_up:
                            self._wake_up.recv(64)  # shutdown() asked: the loop condition ends it
                    if self.socket in ready and not self._accept_all(selector, waiting):
                        # The queue is still there, so the loop would wake at once to fail again: stop
                        # listening for a moment, while the threads finish and give descriptors back.
                        selector.unregister(self.socket)
                        accept_again = time.monotonic() + ACCEPT_PAUSE
                    if accept_again is not None and time.monotonic() >= accept_again:
                        selector.register(self.socket, selectors.EVENT_READ)
                        accept_again = None
                    self._close_silent(selector, waiting)
                    self._ending.close_overdue()
        finally:
            for connection in waiting:
                connection.close()
            self._stop_asked = False
            self._loop_done.set()

    def _accept_all(self, selector: selectors.BaseSelector, waiting: OrderedDict) -> bool:
        """Accept every connection queued; False if the process is out of descriptors and none could be freed."""
        deadline = time.monotonic() + self.room.read_timeout
        while True:
            try:
                connection, address = self.socket.accept()
            except BlockingIOError:
                return True  # the queue is empty
            except ConnectionAbortedError:
                continue  # the client gave up while it was queued
            except OSError as error:
                if error.errno in (errno.EMFILE, errno.ENFILE) and (waiting or self._ending):
                    # Out of file descriptors (what else the process opens holds them too): a refused connection
                    # still being read, or else a waiting one, gives its own back.
                    if self._ending:
                        self._ending.close_oldest()
                    else:
                        self._make_room(selector, waiting)
                    continue
                return False
            if len(waiting) >= self.max_connections:
                self._make_room(selector, waiting)
            connection.setblocking(False)
            selector.register(connection, selectors.EVENT_READ)
            waiting[connection] = (address, deadline)

    def _make_room(self, selector: selectors.BaseSelector, waiting: OrderedDict) -> None:
        """The oldest waiting connection leaves the waiting room: served (or refused) if it has sent something
        since the loop last looked, closed if it is still silent (it has the least claim to a place)."""
        oldest = next(iter(waiting))
        self._first_bytes(selector, waiting, oldest)
        if oldest in waiting:
            del waiting[oldest]
            selector.unregister(oldest)
            oldest.close()

    def _first_bytes(self, selector: selectors.BaseSelector, waiting: OrderedDict, connection) -> None:
        """The connection has something to read: a request (give it a thread), or its end (close it)."""
        try:
            alive = connection.recv(1, socket.MSG_PEEK) != b""
        except BlockingIOError:
            return  # a spurious wake-up: keep waiting
        except OSError:  # reset by the client
            alive = False
        selector.unregister(connection)
        address, _ = waiting.pop(connection)
        if not alive:
            connection.close()
            return
        client = _capped_client(address[0])
        refusal = self._no_room_for(client)
        if refusal is None:
            connection.setblocking(True)
            self.process_request(connection, address, client)
        else:
            self._refuse(connection, refusal)

    def _no_room_for(self, client: str | None) -> ApiError | None:
        """None if one more connection from `client` may have a thread now; else the error that refuses it.

        It may if its client holds fewer than max_per_client (a client None is this machine: never capped) and
        fewer than max_connections have one; or if, past either cap, a connection within it (the client's own,
        for the first) is idle, its answer out or going out (RequestClock.answered), and is closed now to make room:
        its reading side, so that answer still leaves whole, and its thread ends as soon as it reads again. A
        client that sends its next request on it just then finds it closed, as when any server closes an idle
        connection, and sends the request again (LlmClient and OpenAI's clients do).
        """
        with self._open_lock:
            own = [connection for connection, served in self._open.items()
                   if client is not None and served.client == client]
            if len(own) >= self.max_per_client:
                within, refusal = own, ApiError(
                    429, f"This client already holds {self.max_per_client} connections to the classroom model, as "
                         "many as one client may: close some, or reuse one (a requests.Session, one OpenAI client).",
                    code="too_many_connections")
            elif len(self._open) >= self.max_connections:
                within, refusal = list(self._open), ApiError(
                    503, f"The classroom model is serving as many requests as it may at once "
                         f"({self.max_connections}); try again in a moment.", "server_error", "server_busy")
            else:
                return None
            idle = next((connection for connection in within
                         if (clock := self._open[connection].clock) and clock.idle), None)
            if idle is None:
                return refusal
            self._open[idle].clock = None  # closed: not one to close again
        _shut_from_outside(idle, socket.SHUT_RD)  # an answer it is still sending goes out whole (RequestClock.answered)
        return None

    def _refuse(self, connection: socket.socket, error: ApiError) -> None:
        """Answer a connection the server has no room for with `error` (a 503, or a 429 for one client's
        connections past its own cap), and close it; it never gets a thread of the cap's. Over TLS the answer needs
        a handshake, so a short-lived thread of its own gives it (_refuse_over_tls)."""
        if self.room.tls is not None:
            self._refuse_over_tls(connection, error)
            return
        try:
            connection.recv(65536)  # what has come of the request (the rest is read after the answer)
            connection.send(_refusal_bytes(error))  # an empty send buffer takes it whole: no wait
        except OSError:  # the client has gone
            connection.close()
            return
        self._ending.add(connection)

    def _refuse_over_tls(self, connection: socket.socket, error: ApiError) -> None:
        """The refusal over TLS, from a thread of its own: at most REFUSING_AT_ONCE at once, so a flood costs a few
        threads, never the cap's (past that, closed unanswered). Unanswered, a client could not tell a full
        server from a broken one, and LlmClient would not wait and try again."""
        with self._open_lock:
            if self._refusing >= REFUSING_AT_ONCE:
                connection.close()
                return
            self._refusing += 1
        threading.Thread(target=self._answer_busy_over_tls, args=(connection, error), name="classroom-busy",
                         daemon=True).start()

    def _answer_busy_over_tls(self, connection: socket.socket, error: ApiError) -> None:
        try:
            connection.setblocking(True)
            connection.settimeout(REFUSAL_SECONDS)  # each wait below; the handshake as a whole (see _start_tls)
            with self.room.tls.wrap_socket(connection, server_side=True) as tls:
                tls.recv(65536)  # the request's first record, read before the answer (see _refuse)
                tls.sendall(_refusal_bytes(error))
                _let_the_client_finish(tls, time.monotonic() + REFUSAL_SECONDS)
        except OSError:  # plain HTTP, a handshake that never came, a client that has gone
            connection.close()
        finally:
            with self._open_lock:
                self._refusing -= 1

    def _close_silent(self, selector: selectors.BaseSelector, waiting: OrderedDict) -> None:
        """Close the connections that sent nothing for read_timeout (the oldest are first in line)."""
        now = time.monotonic()
        while waiting:
            connection, (_, deadline) = next(iter(waiting.items()))
            if deadline > now:
                return
            del waiting[connection]
            selector.unregister(connection)
            connection.close()

    def shutdown(self) -> None:
        """Stop serve_forever (from another thread) and wait until it has returned."""
        self._stop_asked = True
        try:
            self._wake_up_sender.send(b"x")
        except OSError:  # the buffer is full of earlier wake-ups: the loop is waking anyway
            pass
        self._loop_done.wait()

    def process_request(self, request, client_address, client: str | None = None) -> None:
        with self._open_lock:
            self._open[request] = _Served(client)
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address) -> None:
        if self.room.tls is not None:
            request = self._start_tls(request)
            if request is None:
                return
        super().process_request_thread(request, client_address)

    def _start_tls(self, connection: socket.socket) -> ssl.SSLSocket | None:
        """The connection over TLS, its handshake done in its own thread (a client slow to shake hands holds that
        thread only, never the serving loop) within read_timeout in all (CPython's do_handshake waits for the
        whole handshake against one deadline: the socket's timeout). None, the connection closed, if the client
        speaks plain HTTP, hangs up, or takes longer."""
        connection.settimeout(self.room.read_timeout)
        with self._open_lock:  # the TLS socket takes the connection's file descriptor, and its place in _open
            try:
                tls = self.room.tls.wrap_socket(connection, server_side=True, do_handshake_on_connect=False)
            except OSError:
                self._open.pop(connection, None)
                connection.close()
                return None
            self._open[tls] = self._open.pop(connection)
        try:
            tls.do_handshake()
        except OSError:  # ssl.SSLError ("http request", "wrong version number"), TimeoutError, a reset
            self.shutdown_request(tls)
            return None
        return tls

    def watch_clock(self, connection: socket.socket, clock: RequestClock) -> None:
        """A connection's thread has set up: its clock tells when it waits idle between two requests."""
        with self._open_lock:
            if connection in self._open:
                self._open[connection].clock = clock

    def shutdown_request(self, request) -> None:
        with self._open_lock:
            self._open.pop(request, None)
        super().shutdown_request(request)

    def server_close(self) -> None:
        super().server_close()
        self._selector.close()  # serve_forever closed it if it ran
        self._wake_up.close()
        self._wake_up_sender.close()
        # A keep-alive client's thread would wait up to read_timeout for its next request: end it now.
        with self._open_lock:
            open_connections = list(self._open)
        for connection in open_connections:
            _shut_from_outside(connection)

    def handle_error(self, request, client_address) -> None:
        # Quiet unless verbose (a notebook compares stderr), and even then nothing for a client that hung up:
        # anyone who can reach the room could fill the teacher's terminal with tracebacks by resetting connections.
        if self.room.verbose and not isinstance(sys.exc_info()[1], CLIENT_GONE):
            super().handle_error(request, client_address)


def _is_ip_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _shut_from_outside(connection: socket.socket, how: int = socket.SHUT_RDWR) -> None:
    """End a connection another thread is reading: shut down its socket (both ways, or `how`), which wakes that
    thread. For a TLS connection, the socket's own shutdown, not SSLSocket.shutdown, which would also drop its TLS
    state while that thread may be using it."""
    try:
        socket.socket.shutdown(connection, how)
    except OSError:
        pass


def tls_context(certfile: str, keyfile: str) -> ssl.SSLContext:
    """What ClassroomServer(tls=...) serves with: this certificate (a PEM file, the chain after it if any) and its
    private key (PEM, unencrypted). ConfigurationError, in one line, if either cannot be read or the key is not the
    certificate's."""
    for path in (certfile, keyfile):  # load_cert_chain's own error does not say which file it could not read
        try:
            with open(path, "rb"):
                pass
        except OSError as exc:
            raise ConfigurationError(f"cannot read {path}: {exc.strerror or exc}") from None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)

    def no_pass_phrase() -> str:  # asked only for an encrypted key; without it OpenSSL would prompt on the terminal
        raise ConfigurationError(f"the key in {keyfile} is encrypted: give it unencrypted (openssl pkey -in "
                                 f"{keyfile} -out plain.key), readable by the classroom model's account only")

    try:
        context.load_cert_chain(certfile, keyfile, password=no_pass_phrase)
    except ssl.SSLError as exc:
        if exc.reason == "KEY_VALUES_MISMATCH":
            raise ConfigurationError(f"the key in {keyfile} is not the key of the certificate in {certfile}") from None
        raise ConfigurationError(f"cannot use {certfile} as a PEM certificate and {keyfile} as its unencrypted "
                                 "PEM key") from None
    return context


def _encode_events(chunks: list[dict], named: bool = False) -> list[bytes]:
    """Each chunk as an SSE event (`data: <json>` and a blank line; `event: <type>` first when `named`, as the
    Responses API sends them), then `data: [DONE]` unless `named` (the Responses API sends none)."""
    events = [(f"event: {chunk['type']}\n".encode() if named else b"") + b"data: "
              + json.dumps(chunk, ensure_ascii=False).encode("utf-8") + b"\n\n" for chunk in chunks]
    if not named:
        events.append(b"data: [DONE]\n\n")
    return events


class AnswerCache:
    """Recent answers, keyed by a hash of the request body, bounded in bytes. Thread-safe.

    The key is the body's SHA-256, not the body: a room's requests are small, but one client's
    distinct 7 MB requests would otherwise each keep 7 MB alive (40 of them, with the token-count
    memo that also kept them, took the server from 30 MB to 600 MB; now to 46 MB). What is kept is counted in bytes (each answer, plus a fixed cost per entry for
    its key and bookkeeping); the least recently used answers go first, and an answer bigger than
    `max_answer_bytes` is never kept at all.
    """

    ENTRY_OVERHEAD = 256  # bytes: the 32-byte key object, the dict slot, the bytes object's header

    def __init__(self, max_bytes: int = 16 * 1024 * 1024, max_answer_bytes: int | None = None):
        self.max_bytes = max_bytes
        self.max_answer_bytes = max_bytes // 16 if max_answer_bytes is None else max_answer_bytes
        self.hits = 0
        self.bytes = 0  # what the kept answers cost, by the count above; never above max_bytes
        self._answers: OrderedDict[bytes, bytes] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._answers)

    @staticmethod
    def _key(body: bytes) -> bytes:
        return hashlib.sha256(body).digest()

    def _cost(self, answer: bytes) -> int:
        return len(answer) + self.ENTRY_OVERHEAD

    def get(self, body: bytes) -> bytes | None:
        key = self._key(body)
        with self._lock:
            answer = self._answers.get(key)
            if answer is not None:
                self._answers.move_to_end(key)
                self.hits += 1
            return answer

    def put(self, body: bytes, answer: bytes) -> None:
        if len(answer) > self.max_answer_bytes or self._cost(answer) > self.max_bytes:
            return  # one answer must not push out the many small ones a room shares
        key = self._key(body)
        with self._lock:
            old = self._answers.pop(key, None)
            if old is not None:
                self.bytes -= self._cost(old)
            self._answers[key] = answer
            self.bytes += self._cost(answer)
            while self.bytes > self.max_bytes:
                _, evicted = self._answers.popitem(last=False)
                self.bytes -= self._cost(evicted)


class ClassroomServer(BackgroundServer):
    """The classroom model on an OpenAI-compatible HTTP endpoint.

        with ClassroomServer() as server:          # port 0: any free port
            requests.post(server.chat_url, json={"model": "classroom", "messages": [...]})

    api_key:     when set, requests must send `Authorization: Bearer <api_key>` (else 401)
    hub_tokens:  when set (a hub_tokens.HubTokens), requests must send a token the JupyterHub running
                 this service accepts (else 401, or 403 for a token without access to it)
                 (with neither, a request must name in its Host localhost, an IP address or `host`, else 403:
                 _Handler._check_host says why)
    responder:   request dict -> Reply; defaults to the classroom model (`behaviour.respond`)
    models:      model name -> description, for /v1/models and for checking `model`
    verbose:     log each request to stderr (off by default: notebooks compare stderr)
    chunk_delay: seconds to wait between streamed chunks, to watch a stream arrive
    tokens_per_second: the pace at which the model "types" (None: at once), on /v1/chat/completions (the
                 Responses API answers at once). A streamed answer sends each chunk when its tokens are
                 typed; a plain one is sent when all of them are. With it, time to first token and time to
                 the whole reply mean what they mean on a real server (lesson 14); answers are then never
                 served from the cache
    prefill_tokens_per_second: with tokens_per_second, the pace at which the prompt is read before the
                 first token (None: at once), as a real server processes the whole prompt first
    read_timeout: seconds a connection may stay silent (idle keep-alive) before it is closed, and the
                 most a request may take to arrive from its first byte: a head that has not come by then
                 closes the connection, a body a 408
    answer_cache_bytes: what the classroom model's answer cache may hold (see AnswerCache)
    base_path:   a prefix a proxy in front adds to every path, e.g. "/services/classroom" when JupyterHub
                 routes to it (deploy/jupyterhub/); the plain paths are answered too
    tls:         serve HTTPS with this context (tls_context(certfile, keyfile)) instead of plain HTTP: each
                 connection's handshake in its own thread, within read_timeout; a plain HTTP request is closed
                 unanswered

    It serves at most connection_cap() connections at once (a quarter of the process's file descriptors, 8 to
    512), and a quarter of those from one client address other than this machine's; past that, a request gets a
    503 (or that client a 429) with Retry-After, which LlmClient waits for and retries.
    """

    thread_name = "classroom-server"
    # stop() wakes the serving loop at once; the poll (0.5 s, the default) only paces closing silent
    # connections.

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        api_key: str | None = None,
        responder: Responder | None = None,
        models: dict[str, str] | None = None,
        verbose: bool = False,
        chunk_delay: float = 0.0,
        read_timeout: float = READ_TIMEOUT,
        tokens_per_second: float | None = None,
        prefill_tokens_per_second: float | None = None,
        answer_cache_bytes: int = 16 * 1024 * 1024,
        base_path: str = "",
        hub_tokens: HubTokens | None = None,
        tls: ssl.SSLContext | None = None,
    ):
        # The classroom model is a pure function of the request, so a room that runs the same
        # notebook cells gets the same answers from memory. An injected responder may keep state:
        # it is always asked.
        self.answers: AnswerCache | None = None
        if responder is None:
            from tinyagent.classroom import (
                behaviour,  # imported here, so that this module loads without the model
            )

            responder = behaviour.respond
            models = behaviour.MODELS if models is None else models
            self.answers = AnswerCache(answer_cache_bytes)
        elif models is None:
            models = {DEFAULT_MODEL: "a responder given to ClassroomServer"}
        self.host = host
        self.api_key = api_key
        self.hub_tokens = hub_tokens
        self.responder = responder
        self.models = dict(models)
        self.verbose = verbose
        self.chunk_delay = chunk_delay
        for name, pace in (("tokens_per_second", tokens_per_second),
                           ("prefill_tokens_per_second", prefill_tokens_per_second)):
            if pace is not None and not (isinstance(pace, (int, float)) and 0 < pace < float("inf")):
                raise ValueError(f"{name} must be a positive number of tokens per second or None, got {pace!r}")
        self.tokens_per_second = tokens_per_second
        self.prefill_tokens_per_second = prefill_tokens_per_second
        self.read_timeout = read_timeout
        self.tls = tls
        self.base_path = "/" + base_path.strip("/") if base_path.strip("/") else ""
        self._logs: list = []  # the RequestLogs of the recording() blocks running now
        self._logs_lock = threading.Lock()
        self._listen(host, port, lambda address: _HTTPServer(address, self))

    # -- what it was sent (lesson 20) -------------------------------------------------------------
    @contextmanager
    def recording(self):
        """A RequestLog (request_log.py) of every request this server receives while the block runs."""
        from tinyagent.classroom.request_log import RequestLog

        log = RequestLog()
        with self._logs_lock:
            self._logs.append(log)
        try:
            yield log
        finally:
            with self._logs_lock:
                self._logs.remove(log)

    def record(self, method: str, path: str, body: bytes) -> None:
        """Add a request to every recording running now (none, nearly always: then this costs nothing)."""
        if not self._logs:
            return
        with self._logs_lock:
            logs = list(self._logs)
        for log in logs:
            log.add(method, path, body)

    # -- pace (lesson 14) ------------------------------------------------------------------------
    @property
    def paced(self) -> bool:
        return self.tokens_per_second is not None

    def typing_seconds(self, tokens: int) -> float:
        """How long the model takes to type `tokens` tokens at this room's pace."""
        return tokens / self.tokens_per_second if self.paced else 0.0

    def prefill_seconds(self, prompt_tokens: int) -> float:
        """How long the model reads a prompt of `prompt_tokens` tokens before its first token."""
        if not self.paced or self.prefill_tokens_per_second is None:
            return 0.0
        return prompt_tokens / self.prefill_tokens_per_second

    @property
    def base_url(self) -> str:
        """What an OpenAI client takes as base_url, e.g. http://127.0.0.1:PORT/v1."""
        host = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(self.host, self.host)
        if ":" in host:
            host = f"[{host}]"
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}{self.base_path}/v1"

    @property
    def chat_url(self) -> str:
        """What TINYAGENT_API_URL takes: the full chat completions URL."""
        return self.base_url + "/chat/completions"

    # -- running: start(), stop(), a with block, serve_forever() until a signal (hosting/threaded_server.py) --

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped" if self._closed else "not started"
        key = ", api_key=***" if self.api_key else ""  # a key is never printed
        return f"ClassroomServer({self.base_url}, {state}{key})"


# --- the two ways to run it -------------------------------------------------------------------------

_room: ClassroomServer | None = None
_room_lock = threading.Lock()


def ensure_classroom_server() -> ClassroomServer:
    """The in-process classroom server, started on a free port on first use; the same one after that.

    Safe to call from many threads at once; the server stops when the interpreter exits.
    """
    global _room
    with _room_lock:
        if _room is None or not _room.running:
            first = _room is None
            _room = ClassroomServer().start()
            if first:
                atexit.register(_stop_room)
        return _room


def _stop_room() -> None:
    with _room_lock:
        if _room is not None:
            _room.stop()


def serve_room(
    host: str = "127.0.0.1", port: int = 8000, api_key: str | None = None, verbose: bool = True,
    base_path: str = "", hub_auth: bool = False, tls: ssl.SSLContext | None = None,
) -> None:
    """Run one classroom model for a whole room, in the foreground, until Ctrl-C (SIGINT) or SIGTERM.

    Prints what it is and the three `.env` lines each learner needs to use it, and one line on
    stderr when it stops. A host or port it cannot listen on raises ServerAddressError. With `hub_auth`,
    only tokens the JupyterHub running this as a service accepts are served (hub_tokens.py). With `tls`
    (tls_context()), it serves HTTPS.
    """
    hub_tokens = None
    if hub_auth:
        from tinyagent.classroom.hub_tokens import HubTokens

        hub_tokens = HubTokens()
    from tinyagent.hosting.signals import (
        StopSignals,  # only a room's server waits for signals (hosting/threaded_server.py)
    )

    with StopSignals() as stop:  # before the banner: a Ctrl-C right after it must not be lost
        room = ClassroomServer(host, port, api_key=api_key, verbose=verbose, base_path=base_path,
                               hub_tokens=hub_tokens, tls=tls)
        _print_banner(room, host, api_key)
        stopped_by = room.serve_forever(stop)
    print(f"classroom model stopped ({stopped_by}).", file=sys.stderr)


def _print_banner(room: ClassroomServer, host: str, api_key: str | None) -> None:
    address = host if host not in ("0.0.0.0", "::", "") else this_machine_address()
    if ":" in address:
        address = f"[{address}]"
    url = f"{'https' if room.tls else 'http'}://{address}:{room.port}{room.base_path}/v1/chat/completions"
    lines = [
        "tinyagent classroom model",
        "",
        "This is the classroom model: a scripted, deterministic teaching instrument, NOT a language model.",
        "It speaks the OpenAI Chat Completions API so that the course's code runs unchanged against it.",
        "",
        f"Serving {url}  (models: {', '.join(room.models)})",
        "",
        "Each learner puts these three lines in their .env file:",
        "",
        f"TINYAGENT_API_URL={url}",
        f"TINYAGENT_API_KEY={api_key or ('<their JupyterHub token>' if room.hub_tokens else NO_KEY_NEEDED)}",
        "TINYAGENT_MODEL=classroom",
        "",
        "(this server checks the key: it must be exactly the one above)"
        if api_key
        else "(the JupyterHub checks each token: a learner's server sets TINYAGENT_API_KEY to theirs)"
        if room.hub_tokens
        else "(this server checks no key: any text works)",
        "Press Ctrl-C to stop.",
    ]
    print("\n".join(lines), flush=True)

