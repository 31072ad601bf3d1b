"""`LlmClient`: one Chat Completions request over raw HTTP with `requests`, and nothing hidden.

    POST {api_url}            Authorization: Bearer <key>
    {"model": ..., "messages": [...], "temperature": 0.1, "stop": ["Observation:"], "max_tokens": 512}
    -> {"choices": [{"message": {"content": "..."}, "finish_reason": "stop"}], "usage": {...}}

What a real server can do wrong is turned into one error family (`errors.py`) whose messages say
what to do: a reply whose JSON does not have the shape above is a `BadResponseError` naming the field,
checked in one place (`reply_fields`). The key goes into the Authorization header and nowhere else:
not into a message, a repr, a trace or a log.
"""

from __future__ import annotations

import json
import math
import os
import random
import time
import unicodedata
from collections.abc import Callable
from email.utils import parsedate_to_datetime
from itertools import count
from typing import Any, TypeVar
from urllib.parse import urljoin

import requests
import urllib3

from tinyagent.api_url import CHAT_PATH, LOOPBACK_HOSTS, is_loopback, normalize_chat_url, shown_url, url_host
from tinyagent.chat_result import (
    CHECK_THE_URL,
    MAX_REPLY_BYTES,
    UNTRUSTED_CERTIFICATE,
    ChatResult,
    NoAnswer,
    NotJsonNumber,
    WrongShape,
    clipped,
    cut_at_stop,
    describe_body,
    finite_float,
    no_json_constant,
    provider_error,
    reply_fields,
    server_message,
    short_reason,
    stop_sequences,
)
from tinyagent.errors import (
    AuthenticationError,
    BadRequestError,
    BadResponseError,
    ConfigurationError,
    LlmConnectionError,
    LlmError,
    LlmTimeoutError,
    NotFoundError,
    RateLimitError,
    RedirectError,
    ServerError,
    error_class,
    first_line,
    redact,
    redact_json,
)
from tinyagent.safe_text import json_may_hold_surrogates, replace_lone_surrogates
from tinyagent.settings import load_settings

# Kept here too, where learners met them (lessons 03 and 04): the reply and the URL helpers live in their own
# modules.
__all__ = ["CHAT_PATH", "DEFAULT_MAX_TOKENS", "LOOPBACK_HOSTS", "MAX_REPLY_BYTES", "STEP_MAX_TOKENS", "ChatResult",
           "LlmClient", "cut_at_stop", "is_loopback", "key_problem", "normalize_chat_url", "reply_timeouts"]

# The encodings the client asks for, and reads: the two the standard library's zlib decodes. A reply
# of a few kB compresses well, and proxies in front of HTTPS providers often compress whatever the
# client says, so decoding them is the robust choice; asking for `identity` would only move the
# failure to the first server that compresses anyway.
ACCEPT_ENCODING = "gzip, deflate"
READABLE_ENCODINGS = frozenset({"", "identity", "gzip", "x-gzip", "deflate"})


def check_encoding(response: requests.Response, host: str) -> str:
    """The body's Content-Encoding; BadResponseError when it is one this client cannot read (a stream's too)."""
    encoding = response.headers.get("Content-Encoding", "").strip().lower()
    if any(part.strip() not in READABLE_ENCODINGS for part in encoding.split(",")):
        raise BadResponseError(
            f"{host} compressed its reply as {encoding!r}, which tinyagent did not ask for (it asks for "
            f"{ACCEPT_ENCODING}) and cannot read: a proxy may be rewriting the reply; " + CHECK_THE_URL,
            response.status_code,
        )
    return encoding


def key_problem(key: str) -> str | None:
    """Why `key` cannot travel in an Authorization header as every client writes it (printable ASCII, no spaces),
    or None when it can. Names the first character at fault by its position and Unicode name, never the key: a key
    pasted through a chat or a document can gain a zero-width space, smart quotes or full-width letters. The one
    rule for the client's key and for the keys `python -m tinyagent serve` asks clients to send."""
    if key[:7].lower() == "bearer ":
        return 'it starts with "Bearer ", which the client writes itself: give the key alone'
    for position, char in enumerate(key, start=1):
        if not (char.isascii() and char.isprintable()) or char.isspace():
            what = "a space" if char == " " else f"U+{ord(char):04X} ({unicodedata.name(char, 'unprintable')})"
            return f"its character {position} is {what}; a key is printable ASCII without spaces"
    return None


def reply_timeouts(seconds: float) -> dict[str, float]:
    """LlmClient options that give each reply `seconds` for each wait: to connect (at most 10 s), between two
    bytes (the reply's first byte too: a server that sends nothing until its reply is done must finish within
    it), and from the body's first byte to its last. What `ask --timeout` and `doctor --timeout` mean. The status
    line and headers have no deadline of their own: see LlmClient's `total_timeout`."""
    return {"connect_timeout": min(seconds, 10.0), "read_timeout": seconds, "total_timeout": seconds}


# A reply of the course is one ReAct step or one answer: the classroom model's longest (lesson 04's
# run-on without `stop`) is 232 tokens. Without a cap a real model that loses the format writes
# until its context is full (2,048 tokens for the appendix's local model, minutes on a CPU).
DEFAULT_MAX_TOKENS = 512
# A request with a stop sequence asks for one ReAct step: a Thought and an Action with its input, or a Final
# Answer: the classroom model's run to about 160 tokens (lesson 06's refund answer 139, a fault report's 161).
# Sent to llama.cpp's server only (see the class doc: appendix A1's local model), where a tiny model that loses the
# format would otherwise write to DEFAULT_MAX_TOKENS on every call: in lesson 06, SmolLM2's replies nearly all did
# (benchmarks/real_model_lesson.py).
STEP_MAX_TOKENS = 160


# The variables that choose the certificate authorities a request trusts (requests reads them in this order).
CA_BUNDLE_VARIABLES = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")
TRUST_ITS_AUTHORITY = (f"if your organisation or a proxy signs its own certificates, set {CA_BUNDLE_VARIABLES[0]} to "
                       "that authority's certificate (a .pem file)")


def unsent_reason(exc: OSError) -> str:
    """Why requests could not start a request (`exc`, not one of its own errors), in one line; a TLS certificate
    bundle that is not there names the variables that choose it."""
    bundle = f" (check {' and '.join(CA_BUNDLE_VARIABLES)})" if "CA certificate bundle" in str(exc) else ""
    return first_line(exc) + bundle


def unreached_advice(reason: str) -> str:
    """What to do about a server that could not be reached for `reason` (`short_reason`'s words): a certificate
    this machine does not trust is no fault of the URL."""
    if reason.startswith(UNTRUSTED_CERTIFICATE):
        return TRUST_ITS_AUTHORITY
    return "check TINYAGENT_API_URL, and that the server is running"


def retry_after_seconds(value: str | None) -> float | None:
    """The wait a Retry-After header asks for, in seconds (it may say them, or give an HTTP date), or None when there
    is none or it is garbage ("soon", and "nan" or "inf", which float() reads)."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:  # the other form the standard allows: "Wed, 21 Oct 2026 07:28:00 GMT"
            seconds = parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError):
            return None
    return max(seconds, 0.0) if math.isfinite(seconds) else None


def how_long(seconds: float) -> str:
    """A wait as a person reads it: 90 s, 25 minutes, 3 hours, 12 days."""
    for unit, size in (("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= 2 * size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"


Reply = TypeVar("Reply")  # what one attempt of a request gives back (`LlmClient._retrying`)

# What to do about an error a provider sent in place of a reply, by its class.
_NEXT_STEP = {
    AuthenticationError: "check TINYAGENT_API_KEY",
    NotFoundError: "check TINYAGENT_MODEL",
    RateLimitError: "wait a minute, or check your plan's quota",
    BadRequestError: "check the request's options against the provider's documentation",
    ServerError: "try again later",
}


class LlmClient:
    """A client for any OpenAI-compatible `/chat/completions` endpoint.

    api_url:   the endpoint (or a base URL; see `normalize_chat_url`)
    api_key:   sent as "Authorization: Bearer ..."; None or "" sends no header (local servers). A key that
               `key_problem` refuses (a space, a zero-width space, "Bearer " in front) is a ConfigurationError here
    model:     the model name the server knows
    max_retries: extra attempts for 429 and 5xx (an HTTP status, or the code of an error a provider sends with
               HTTP 200), waiting with exponential backoff and jitter
               (or the server's Retry-After), each wait capped at `max_retry_wait` seconds; a server whose
               Retry-After asks for longer is not tried again: the error says how long it asked for
    total_timeout: a cap on reading the reply's body, from the end of its headers to its last byte;
               `read_timeout` alone never fires if a server drips one byte at a time. The status line and
               headers are bounded by `read_timeout` between bytes only: requests reads them in one call
               that no deadline interrupts, so a server that drips its headers a byte at a time holds the
               call as long as it drips
    max_tokens: the cap on each reply when `chat` is not given one; None sends no cap

    For appendix A1's local model, not lessons 03 and 04's: llama.cpp's server (`local-model`, `llama-server`) is
    recognised by its first reply, which carries its `timings`. From then on every request asks it to keep the
    conversation read so far (`cache_prompt`: a call reads only the new end of the prompt), and a request for one
    step (one with `stop`) is capped at STEP_MAX_TOKENS, or `max_tokens` if lower (a client made with
    `max_tokens=None` sends no cap), unless `chat` is given a cap. A reply cut there ends with finish_reason
    "length", which ends an agent's run (a reply cut at max_tokens never runs). Other servers get neither. Appendix
    A1 explains both after its request with `stop`, and prints the body `build_request` then makes.
    """

    def __init__(
        self,
        api_url: str,
        api_key: str | None,
        model: str,
        *,
        temperature: float = 0.1,
        connect_timeout: float = 10.0,
        read_timeout: float = 120.0,
        total_timeout: float = 300.0,
        max_retries: int = 2,
        max_retry_wait: float = 20.0,
        max_tokens: int | None = DEFAULT_MAX_TOKENS,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if not model:
            raise ValueError("LlmClient needs a model name")
        self.api_url = normalize_chat_url(api_url)
        if api_key and (problem := key_problem(api_key)):
            raise ConfigurationError(f"the API key cannot be sent in an HTTP header: {problem}. Copy it again from "
                                     "your provider's page into TINYAGENT_API_KEY")
        self._api_key = api_key or None
        self.model = model
        self.temperature = temperature
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.total_timeout = total_timeout
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        self.max_tokens = max_tokens
        self.llama_cpp: bool | None = None  # llama.cpp's server (appendix A1)? None: no reply read yet (class doc)
        self._session = session or requests.Session()
        if session is None and is_loopback(self.api_url):
            # Proxies and .netrc are for other machines: read from the environment, a learner's HTTP_PROXY
            # (with no NO_PROXY naming this machine) would send the classroom model's requests to the proxy.
            # The certificate authority a learner names is still trusted (a TLS server on this machine).
            self._session.trust_env = False
            self._session.verify = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE") or True
        self._sleep = sleep

    def close(self) -> None:
        """Close the connections kept open for the next call (HTTP keep-alive: a run's calls share one). The
        client stays usable, its next call connects again; a service that makes a client per run closes it when
        the run is over, so that no connection outlives its run."""
        self._session.close()

    @classmethod
    def from_settings(cls, settings=None, **options: Any) -> LlmClient:
        """A client for the configured model (see `tinyagent.settings.load_settings`)."""
        settings = settings or load_settings()
        return cls(settings.api_url, settings.api_key, settings.model, **options)

    @classmethod
    def classroom(cls, model: str = "classroom", **options: Any) -> LlmClient:
        """A client for the in-process classroom model (or one of its variants, by name), whatever
        .env says: for lessons that need a particular misbehaviour even when a real model is set."""
        from tinyagent.classroom.server import ensure_classroom_server

        return cls(ensure_classroom_server().chat_url, None, model, **options)

    def __repr__(self) -> str:
        key = "set" if self._api_key else "not set"
        return f"LlmClient(api_url={shown_url(self.api_url)!r}, model={self.model!r}, api_key={key})"

    # -- the request ---------------------------------------------------------------------------
    def build_request(
        self, messages: list[dict], *, stop=None, max_tokens: int | None = None, **extra: Any
    ) -> dict:
        """The JSON body that `chat` sends (handy to print in a lesson)."""
        if not isinstance(messages, list) or not messages:
            raise ValueError("messages must be a non-empty list of {'role': ..., 'content': ...}")
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": self.temperature}
        if stop:
            body["stop"] = list(stop_sequences(stop))
        if max_tokens is None:
            max_tokens = self.max_tokens
            if self.llama_cpp and stop and max_tokens is not None:  # appendix A1's step cap (see the class doc)
                max_tokens = min(max_tokens, STEP_MAX_TOKENS)
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if self.llama_cpp:  # appendix A1's local server keeps what it read (see the class doc)
            body["cache_prompt"] = True
        body.update(extra)
        return body

    def note_server(self, reply: Any) -> None:
        """Recognise llama.cpp's server (appendix A1's local model) by the `timings` its replies (and its last
        stream chunk) carry; the first reply decides (see the class doc)."""
        if self.llama_cpp is None and isinstance(reply, dict):
            timings = reply.get("timings")
            self.llama_cpp = isinstance(timings, dict) and "prompt_n" in timings

    def chat(self, messages: list[dict], *, stop=None, max_tokens: int | None = None, **extra: Any) -> ChatResult:
        """Send the conversation, return the reply. Raises an `LlmError` subclass on failure."""
        body = self.build_request(messages, stop=stop, max_tokens=max_tokens, **extra)
        started = time.perf_counter()

        def attempt() -> ChatResult:
            response = self._send(body)
            payload = self._read_body(response)
            latency = time.perf_counter() - started
            return self._read_reply(response.status_code, payload, body.get("stop"), latency,
                                    response.headers.get("Retry-After"))

        return self._retrying(attempt)

    @property
    def host(self) -> str:
        """The server's host and port, as the error messages name it (never a user or password in the URL)."""
        return url_host(self.api_url)

    def _headers(self, accept: str = "application/json") -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": accept, "Accept-Encoding": ACCEPT_ENCODING}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def post(self, body: dict, accept: str = "application/json") -> requests.Response:
        """POST `body`; the response, its body unread (lesson 14 reads a stream from it as it comes). An error status is
        its LlmError (`raise_for_status`), a 429 or 5xx after the retries `_retrying` makes."""

        def attempt() -> requests.Response:
            response = self._send(body, accept)
            self.raise_for_status(response)
            return response

        return self._retrying(attempt)

    def _retrying(self, attempt: Callable[[], Reply]) -> Reply:
        """`attempt()`, made again while it fails with a 429 or a 5xx: an HTTP status, or the code of an error a
        provider sent with HTTP 200 in place of a reply (`_provider_error`). Up to `max_retries` more times, waiting as
        `_retry_wait` says, unless the server's Retry-After asks for longer than `max_retry_wait`: that is the error at
        once, which says how long. Every request is sent through here (`chat`, and `post` for a stream), so each
        retries the same way. An error sent inside a stream, which its reader may have begun to show, is never retried
        (lesson 14's module says why)."""
        for tries in count():
            try:
                return attempt()
            except (RateLimitError, ServerError) as error:
                # A ServerError without a status: a provider's error in a 200 with no code, which says nothing of trying again.
                if error.status is None or tries >= self.max_retries or self._asked_too_long(error.retry_after):
                    raise
                self._sleep(self._retry_wait(tries, error.retry_after))
        raise AssertionError("unreachable: count() never ends")

    def _asked_too_long(self, asked: float | None) -> bool:
        """Whether a Retry-After of `asked` seconds is longer than the client waits: trying sooner than the server
        asked would only spend the attempts, in silence."""
        return asked is not None and asked > self.max_retry_wait

    def _retry_wait(self, attempt: int, asked: float | None) -> float:
        """Honour the wait the server asked for (`retry_after_seconds`, at most `max_retry_wait`: `_retrying` checked),
        else back off: 1, 2, 4 s (+ jitter), never longer than `max_retry_wait`."""
        if asked is not None:
            return asked
        return min(2.0**attempt + random.uniform(0, 0.5), self.max_retry_wait)

    def _send(self, body: dict, accept: str = "application/json") -> requests.Response:
        """POST `body` once; the response with its body unread. Failures before the status line are LlmErrors, and so
        is a redirect, which is not followed: a RedirectError naming where it points."""
        # A lone surrogate (from a tool, a notebook, a file name) cannot be encoded: repair, don't crash.
        data = json.dumps(replace_lone_surrogates(body), ensure_ascii=False).encode("utf-8")
        host = self.host
        # A connection kept alive from the last reply may be closed by the server, or a proxy, just as this
        # request sets out on it (Node's servers, JupyterHub's proxy among them, close one idle for 5 s): the
        # request is then reset before any reply. It is sent once more, on a fresh connection; a chat
        # request changes nothing on the server, which is why the official openai client retries too.
        for last_try in (False, True):
            try:
                response = self._session.post(
                    self.api_url,
                    data=data,
                    headers=self._headers(accept),
                    timeout=(self.connect_timeout, self.read_timeout),
                    stream=True,
                    allow_redirects=False,  # see `_refuse_redirect`
                )
            except requests.exceptions.ConnectTimeout:
                raise LlmTimeoutError(
                    f"could not connect to {host} within {self.connect_timeout:g} s: "
                    "check TINYAGENT_API_URL and your network"
                ) from None
            except requests.exceptions.ReadTimeout:
                raise LlmTimeoutError(
                    f"{host} accepted the request but sent no reply within {self.read_timeout:g} s: "
                    "the model may be slow or overloaded; try again or raise read_timeout"
                ) from None
            except requests.exceptions.ConnectionError as exc:
                if "timed out" in str(exc):  # a read timeout while streaming the body arrives this way
                    raise LlmTimeoutError(
                        f"{host} stopped sending before the reply was complete (no data for "
                        f"{self.read_timeout:g} s): try again or raise read_timeout"
                    ) from None
                reason = short_reason(exc)
                if reason in ("connection reset", "remote end closed"):
                    if not last_try:
                        continue
                    raise LlmConnectionError(
                        f"{host} closed the connection without replying ({reason}), twice: the server may have "
                        "crashed, or a proxy cut the request; try again"
                    ) from None
                raise LlmConnectionError(f"could not reach {host} ({reason}): {unreached_advice(reason)}") from None
            except requests.exceptions.RequestException as exc:
                raise LlmConnectionError(f"the request to {host} failed: {short_reason(exc)}") from None
            except OSError as exc:  # before any byte is sent: the TLS certificates named by REQUESTS_CA_BUNDLE, say
                raise LlmConnectionError(f"the request to {host} could not start: {unsent_reason(exc)}") from None
            self._refuse_redirect(response)
            return response
        raise AssertionError("unreachable: the last try returns or raises")

    def _refuse_redirect(self, response: requests.Response) -> None:
        """A redirect is a RedirectError naming where it points, not followed: a 302 would send the request again as
        a GET, without its body."""
        status = response.status_code
        if 300 <= status < 400 and "Location" in response.headers:
            response.close()
            where = redact(shown_url(urljoin(self.api_url, response.headers["Location"])), self._api_key)
            raise RedirectError(
                f"{self.host} answered HTTP {status}, a redirect to {clipped(where, 200)}: set TINYAGENT_API_URL "
                "to that URL if you trust it (tinyagent does not follow redirects)", status,
            )

    def raise_for_status(self, response: requests.Response) -> None:
        """A response whose status is an error (4xx, 5xx) as the client's LlmError, read from its body (to its end, so
        the connection can carry the next attempt); nothing for any other."""
        if response.status_code >= 400:
            text = self._read_body(response).decode("utf-8", errors="replace")
            raise self._http_error(response.status_code, text, response.headers.get("Retry-After"))

    def _read_body(self, response: requests.Response) -> bytes:
        """Read (and decompress) the body under `total_timeout`, counted from here (the headers are read), so a
        server that drips bytes cannot hang the loop, and under MAX_REPLY_BYTES, so a huge or inflating body
        cannot fill the memory."""
        host = self.host
        deadline = time.monotonic() + self.total_timeout
        chunks, received = [], 0
        try:
            encoding = check_encoding(response, host)
            # read1 returns whatever arrived (at most one socket read, decompressed to at most 64 kB),
            # so the deadline and the size cap are checked between drips; iter_content would wait to
            # fill a whole chunk first.
            while chunk := response.raw.read1(65536, decode_content=True):
                chunks.append(chunk)
                received += len(chunk)
                if received > MAX_REPLY_BYTES:
                    raise BadResponseError(
                        f"the reply from {host} is larger than {MAX_REPLY_BYTES // 2**20} MB (decompressed), "
                        "far more than any chat reply: " + CHECK_THE_URL, response.status_code,
                    )
                if time.monotonic() > deadline:
                    raise LlmTimeoutError(
                        f"the reply took longer than {self.total_timeout:g} s in total "
                        "(the server kept sending slowly): try again or raise total_timeout"
                    )
        # Errors while reading the body come from urllib3 itself, not wrapped by requests.
        except urllib3.exceptions.ReadTimeoutError:
            raise LlmTimeoutError(
                f"{host} stopped sending before the reply was complete (no data "
                f"for {self.read_timeout:g} s): try again or raise read_timeout"
            ) from None
        except urllib3.exceptions.DecodeError:
            raise BadResponseError(
                f"{host} sent a reply marked {encoding!r} that does not decompress: a proxy may have "
                "damaged it; try again, and " + CHECK_THE_URL, response.status_code,
            ) from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise LlmConnectionError(
                f"the connection to {host} broke after {received} bytes of the "
                f"reply ({short_reason(exc)}): the server or a proxy dropped it; try again"
            ) from None
        finally:
            response.close()
        return b"".join(chunks)

    # -- the reply -----------------------------------------------------------------------------
    def _read_reply(self, status: int, payload: bytes, stop, latency: float, retry_after: str | None = None
                    ) -> ChatResult:
        """The reply in `payload`, or the LlmError it is; `retry_after`: the response's Retry-After header."""
        text = payload.decode("utf-8", errors="replace")
        if status >= 400:
            raise self._http_error(status, text, retry_after)
        try:
            # NaN is not JSON (no_json_constant), nor a number a float cannot hold, 1e999 (finite_float): kept, either
            # made the trace and the service's response unwritable as JSON, after the run's tools had run
            data = json.loads(text, parse_constant=no_json_constant, parse_float=finite_float)
            if json_may_hold_surrogates(text):  # only a \ud800-style escape can put one in
                data = replace_lone_surrogates(data)
            data = redact_json(data, self._api_key)  # a server may echo the key into any field: model, raw, text
            if error := provider_error(data):
                raise self._provider_error(status, *error, retry_after)
            content, tool_calls, finish_reason, usage, model = reply_fields(data)
            self.note_server(data)
        except RecursionError:
            raise BadResponseError(
                f"the reply is nested too deeply to be a Chat Completions reply: {CHECK_THE_URL}", status
            ) from None
        except NoAnswer as exc:  # the reply's shape is right: nothing to do with the URL
            raise BadResponseError(f"{exc}. The reply: {redact(clipped(text), self._api_key)}", status) from None
        except WrongShape as exc:
            raise BadResponseError(
                f"{exc}: {CHECK_THE_URL}. The reply: {redact(clipped(text), self._api_key)}", status
            ) from None
        except NotJsonNumber as exc:
            raise BadResponseError(
                f"the server answered HTTP {status} with {exc.constant} in its JSON, which "
                "JSON does not allow (a number is finite): the server's reply is not standard JSON. The reply: "
                f"{redact(clipped(text), self._api_key)}", status,
            ) from None
        except ValueError:
            body = redact(describe_body(text), self._api_key)
            raise BadResponseError(
                f"the server answered HTTP {status} but not with JSON ({body}): {CHECK_THE_URL}", status
            ) from None
        content, client_cut = cut_at_stop(content or "", stop)
        return ChatResult(
            text=content,
            finish_reason="stop" if client_cut else finish_reason,
            usage=usage,
            latency_s=latency,
            model=model or self.model,
            tool_calls=tool_calls,
            client_cut=client_cut,
            raw=data,
        )

    def _provider_error(self, status: int, code: int | None, message: str, retry_after: str | None = None) -> LlmError:
        """An error the provider sent in place of a reply (with HTTP 200: OpenRouter, once generation has begun), as
        the class its code names (`provider_error`, `error_class`), in its own words; a 429 or 5xx is retried as that
        status is (`_retrying`)."""
        kind = error_class(code)
        asked = retry_after_seconds(retry_after)
        said = f"error code {code}" if code is not None else "no error code"
        if self._asked_too_long(asked):
            said += f", {self._not_tried_again(asked)}"
        return kind(f"{self.host} answered HTTP {status} with an error instead of a reply ({said}): "
                    f"{redact(message, self._api_key)}; {_NEXT_STEP[kind]}", code, retry_after=asked)

    def _not_tried_again(self, asked: float) -> str:
        """What an error says of a Retry-After that asked for longer than the client waits."""
        return (f"and asked to wait {how_long(asked)} (Retry-After), longer than max_retry_wait "
                f"({self.max_retry_wait:g} s), so it was not tried again")

    def _http_error(self, status: int, text: str, retry_after: str | None = None) -> LlmError:
        """The error for an HTTP error status, of the class `error_class` names, saying what to do; `retry_after`: the
        response's Retry-After header. A 429's or 5xx's is raised after `_retrying`'s attempts, or at once when it
        asks to wait longer than `max_retry_wait`."""
        kind = error_class(status)
        asked = retry_after_seconds(retry_after)
        server_says = redact(server_message(text), self._api_key)
        tried = self._not_tried_again(asked) if self._asked_too_long(asked) else f"after {self.max_retries + 1} attempts"
        if kind is AuthenticationError:
            said = (f"the server refused the API key (HTTP {status}): check TINYAGENT_API_KEY in your .env, "
                    "or remove it to use the offline classroom model")
        elif kind is NotFoundError:
            said = (f"HTTP 404 from {shown_url(self.api_url)} for model {self.model!r}: check TINYAGENT_API_URL and "
                    "TINYAGENT_MODEL")
        elif kind is RateLimitError:
            said = (f"rate limited (HTTP 429) {tried}: "
                    f"{'try again after that' if self._asked_too_long(asked) else 'wait a minute'}, or check your "
                    "plan's quota")
        elif kind is ServerError:
            said = f"the provider failed (HTTP {status}) {tried}: try again later"
        else:
            return BadRequestError(f"the server rejected the request (HTTP {status}): {server_says}", status)
        return kind(f"{said}. Server said: {server_says}", status, retry_after=asked)
