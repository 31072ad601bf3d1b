"""A Chat Completions reply, and how its JSON is read: `ChatResult`, and the checks that turn a reply of the
wrong shape into a `BadResponseError` naming the field. Shared by the client (llm_client.py, a whole reply) and
streaming.py (a reply in chunks), so neither needs the other to read a reply.
"""

from __future__ import annotations

import copy
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

MAX_REPLY_BYTES = 16 * 1024 * 1024


CHECK_THE_URL = "check that TINYAGENT_API_URL points at an OpenAI-compatible /chat/completions endpoint"


@dataclass(frozen=True)
class ChatResult:
    """One reply. `text` is "" (never None) when the model answered with tool calls only: `tool_calls` is the
    API's field of lesson 09's native function calling, () for a reply of text (lessons 03 to 06)."""

    text: str
    finish_reason: str | None
    usage: dict = field(default_factory=dict)
    latency_s: float = field(default=0.0, repr=False)  # varies run to run: kept out of printed reprs
    model: str = ""
    tool_calls: tuple[dict, ...] = ()  # lesson 09
    client_cut: bool = False
    raw: dict = field(default_factory=dict, repr=False)
    # Lesson 14: a reply read as a stream (`open_stream`, `chat_streamed`), and when its first piece of text came.
    streamed: bool = field(default=False, repr=False)
    first_piece_s: float | None = field(default=None, repr=False)  # varies run to run, like latency_s


class NotJsonNumber(ValueError):
    """NaN, Infinity or -Infinity in a text read as JSON (see no_json_constant), or a number beyond a float's range
    (see finite_float): `constant` says which."""

    def __init__(self, constant: str):
        said = "is not JSON" if constant in ("NaN", "Infinity", "-Infinity") else "is beyond a float's range"
        super().__init__(f"{constant[:40]} {said}")
        self.constant = constant


def no_json_constant(name: str) -> float:
    """For json.loads(parse_constant=...): NaN, Infinity and -Infinity, which Python's json reads but JSON has not.
    A reply holding one is not JSON: kept, it made the trace's JSON unreadable to any other reader (a browser's
    JSON.parse, the service's own response), and a tool's arguments holding one slipped past every comparison."""
    raise NotJsonNumber(name)


def finite_float(text: str) -> float:
    """For json.loads(parse_float=...): a number too large for a float (`1e400`) reads as inf, which is no JSON
    either: written back (an echoed field, a trace) it comes out as `Infinity`, which no other reader takes. Refused
    as NaN is (NotJsonNumber)."""
    value = float(text)
    if not math.isfinite(value):
        raise NotJsonNumber(text)
    return value


def stop_sequences(stop: str | list[str] | tuple[str, ...] | None) -> tuple[str, ...]:
    """`stop` as the API takes it, one string or several, as a tuple of stop strings (a string is one, not its
    characters)."""
    return (stop,) if isinstance(stop, str) else tuple(stop or ())


def cut_at_stop(text: str, stop: list[str] | tuple[str, ...] | None) -> tuple[str, bool]:
    """Cut `text` at the earliest stop string (excluded), as the server should have done."""
    positions = [text.find(s) for s in (stop or ()) if s and s in text]
    if not positions:
        return text, False
    return text[: min(positions)], True


# -- the shape of a reply -------------------------------------------------------------------------


USAGE_COUNTS = ("prompt_tokens", "completion_tokens", "total_tokens")


class WrongShape(ValueError):
    """A field the client reads is missing or of the wrong JSON type (reported as a BadResponseError)."""


class NoAnswer(WrongShape):
    """A reply of the right shape with neither text nor tool calls: the model's or the provider's doing, which the
    message says (by its finish_reason), not the URL's."""


# The finish_reasons of a reply that may hold no text at all: the model spent max_tokens before it wrote any (a
# reasoning model's thinking can use them all up), or the provider withheld what it wrote.
ENDED_WITHOUT_TEXT = ("length", "content_filter")


def reply_fields(data: Any) -> tuple[str | None, tuple[dict, ...], str | None, dict, str | None]:
    """Content, tool calls, finish_reason, usage and model of a decoded reply, each checked for its type.

    The one place that knows the reply's shape: every field a ChatResult is built from is looked at
    here, and the first that is wrong raises WrongShape naming it. Fields it does not read (role, id,
    logprobs, a provider's extras) are never looked at, whatever they hold.
    """
    data = checked_field(data, "the reply", dict, required=True)
    choices = checked_field(data.get("choices"), "choices", list, required=True)
    if not choices:
        raise WrongShape("the reply has no choices[0].message (choices is empty)")
    choice = checked_field(choices[0], "choices[0]", dict, required=True)
    message = checked_field(choice.get("message"), "choices[0].message", dict, required=True)
    content = checked_field(message.get("content"), "choices[0].message.content", str, list)
    if isinstance(content, list):
        content = text_of_parts(content, "choices[0].message.content")
    calls = checked_field(message.get("tool_calls"), "choices[0].message.tool_calls", list) or []
    for i, call in enumerate(calls):
        where = f"choices[0].message.tool_calls[{i}]"
        function = checked_field(checked_field(call, where, dict, required=True).get("function"), f"{where}.function", dict,
                           required=True)
        checked_field(function.get("name"), f"{where}.function.name", str, required=True)
        try:  # lesson 09's loop copies each call it reads (native_calls.read_tool_calls) and sends it back
            copy.deepcopy(call)
        except RecursionError:  # a field nested 600 lists deep: it raised out of the run
            raise WrongShape(f"{where} is nested too deeply to be a tool call") from None
    finish_reason = checked_field(choice.get("finish_reason"), "choices[0].finish_reason", str)
    if content is None and not calls:
        if finish_reason not in ENDED_WITHOUT_TEXT:
            ended = f"finish_reason {finish_reason!r}" if finish_reason else "no finish_reason"
            raise NoAnswer(f"the reply has no choices[0].message.content and no tool calls, with {ended}: the model "
                            "ended without an answer; try again")
        content = ""  # a reply cut before its first word: the loop stops on its finish_reason, as for any cut reply
    usage = checked_field(data.get("usage"), "usage", dict) or {}
    check_usage_counts(usage)
    model = checked_field(data.get("model"), "model", str)
    return content, tuple(calls), finish_reason, dict(usage), model


def text_of_parts(parts: list, where: str) -> str:
    """Content sent as parts ([{"type": "text", "text": ...}, {"type": "thinking", ...}]), as some
    providers do: the text parts, joined, are the reply; the others are not the model's answer."""
    pieces = []
    for i, part in enumerate(parts):
        part = checked_field(part, f"{where}[{i}]", dict, required=True)
        if part.get("type") == "text":
            pieces.append(checked_field(part.get("text"), f"{where}[{i}].text", str, required=True))
    return "".join(pieces)


def check_usage_counts(usage: dict) -> None:
    """Each token count of `usage` a whole number of 0 or more (or absent): a negative one would let a run's token
    budget (lesson 10) count a call as costing nothing, or less."""
    for key in USAGE_COUNTS:
        count = checked_field(usage.get(key), f"usage.{key}", int)
        if count is not None and count < 0:
            raise WrongShape(f"the reply's usage.{key} is {count}, where a count of tokens is 0 or more")


_EXPECTED = {dict: "an object", list: "a list", str: "a string", int: "a whole number"}


def checked_field(value: Any, where: str, *kinds: type, required: bool = False) -> Any:
    """`value` if it is one of `kinds` (null allowed unless `required`); WrongShape naming `where` if not."""
    if value is None and not required:
        return None
    if isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds):
        return value
    expected = " or ".join(_EXPECTED[kind] for kind in kinds) + ("" if required else " or null")
    if where == "the reply":
        raise WrongShape(f"the reply is {_json_type(value)}, where a Chat Completions reply is an object")
    found = "missing (or null)" if value is None else _json_type(value)
    raise WrongShape(f"the reply's {where} is {found}, where a Chat Completions reply has {expected}")


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return {str: "a string", list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def server_message(text: str) -> str:
    """The human part of an error body: OpenAI's {"error": {"message": ...}} or a clipped raw body."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than Python reads
        return describe_body(text)
    return _message_of(data) or clipped(text)


def _message_of(data: Any) -> str | None:
    """The message of a decoded error body ({"error": {"message": ...}}, {"error": "..."}, {"message": ...})."""
    if not isinstance(data, dict):
        return None
    error = data.get("error", data)
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    if isinstance(error, str):
        return error
    if data.get("message"):
        return str(data["message"])
    return None


def provider_error(data: Any) -> tuple[int | None, str] | None:
    """The error a provider sent where a reply, or a stream's chunk, was due: a top-level `error` that is not empty
    (OpenRouter answers HTTP 200 with one once generation has started, and sends one in a chunk), as its code when
    that is an HTTP status (429, "502") or None, and its message. None when `data` holds no error (some servers send
    "error": null in every chunk)."""
    if not isinstance(data, dict) or not data.get("error"):
        return None
    error = data["error"]
    code = error.get("code") if isinstance(error, dict) else None
    if isinstance(code, str) and code.isdigit():
        code = int(code)
    status = code if type(code) is int and 100 <= code <= 599 else None  # not "rate_limit_exceeded", not true
    return status, _message_of(data) or "(an error without a message)"


def describe_body(text: str) -> str:
    """A body that is not the JSON expected, in a few words for an error message: an HTML page, empty, or its start."""
    if "<html" in text[:500].lower() or "<!doctype" in text[:500].lower():
        return "an HTML page, as a proxy or a web server's error page sends"
    return f"body starts {clipped(text)!r}" if text.strip() else "an empty body"


def clipped(text: str, limit: int = 300) -> str:
    """`text` stripped, and cut to `limit` characters with "..." when longer: a server's words quoted in an error."""
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + "..."


UNTRUSTED_CERTIFICATE = "the server's TLS certificate is not trusted"
_REASONS = {
    "Connection refused": "connection refused",
    "Connection reset": "connection reset",
    "Name or service not known": "name or service not known",
    "Remote end closed": "remote end closed",
    # The same over TLS: the server closed the connection without a word (Python's ssl names it two ways).
    "UNEXPECTED_EOF_WHILE_READING": "remote end closed",
    "EOF occurred in violation of protocol": "remote end closed",
    "IncompleteRead": "the body ended early",
    "InvalidChunkLength": "the body ended early",
    "CERTIFICATE_VERIFY_FAILED": UNTRUSTED_CERTIFICATE,  # in words _CERTIFICATE_REFUSED does not know
}


# Python's ssl says why it refused a certificate after these words: "self-signed certificate", "unable to get local
# issuer certificate" (a corporate proxy's own authority), "certificate has expired", "Hostname mismatch, ...".
_CERTIFICATE_REFUSED = re.compile(r"certificate verify failed: (.+?)\.? \(_ssl\.c:\d+\)")


def short_reason(exc: Exception) -> str:
    """Why a connection failed, in the few words of `_REASONS` (or why a certificate was refused), else the
    exception's class name: requests' own messages run to several nested reprs."""
    reason = str(exc)
    if refused := _CERTIFICATE_REFUSED.search(reason):
        return f"{UNTRUSTED_CERTIFICATE}: {refused.group(1)}"
    for marker, said in _REASONS.items():
        if marker in reason:
            return said
    return type(exc).__name__
