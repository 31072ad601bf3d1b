"""Calling an HTTP JSON API from a tool, so that every way it can fail becomes one kind of Observation.

A tool that calls a real service meets the network's failures, and the model must be able to read each
one and decide what to do. The third article's weather tool gets four things right, all kept here:

    a hard timeout        connect_timeout to reach the server, read_timeout for each wait for data,
                          total_timeout for the whole reply (a server that trickles a byte a second never
                          trips a read timeout, so the whole reply has a clock of its own). The clock is read
                          between the pieces of the body: the status line and headers are bounded by
                          read_timeout for each wait and by http.client's limits (100 header lines of 64 KB),
                          not by total_timeout, and interim "100 Continue" replies, which http.client skips
                          without counting, are not bounded at all: lesson 10's ToolTimeout bounds the call as
                          a whole (the tool waits on the network, so the loop goes on without it)
    a status check        anything but 2xx is a failure; a redirect is not followed (it could lead anywhere)
    a shape check         the reply must be JSON and hold the fields the tool reads, checked against a JSON
                          Schema (validation.py); fields the tool does not read are allowed (an upstream
                          that adds a field must not break the tool)
    one error format      `ApiCallFailed.observation(tool)`:
                          {"error":"getWeather: the weather API did not answer within 2 s",
                           "kind":"timeout","retryable":true}
                          `kind` is one of KINDS, `retryable` says whether the same call may work later,
                          `status` is there when the server answered with one

and adds a size cap (`max_bytes`, read as a stream, so a reply of gigabytes is cut at the cap without being
held in memory). An error never shows the URL: its query may hold an API key, and the model has no use
for it. `JsonApi.get` raises `ApiCallFailed`; the tool function catches it and returns its Observation:

    api = JsonApi(base_url, name="the weather API", read_timeout=2)

    @tool(name="getWeather", read_only=True)
    def get_weather(city: str) -> dict | str:
        '''...'''
        try:
            return api.get("/weather", {"city": city}, shape=WEATHER_SHAPE)
        except ApiCallFailed as failure:
            return failure.observation("getWeather")
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

import requests
import urllib3

from tinyagent.chat_result import finite_float, no_json_constant
from tinyagent.errors import TinyAgentError
from tinyagent.llm_client import is_loopback
from tinyagent.number_checks import ascii_number, check_seconds, check_whole
from tinyagent.registry import error_observation
from tinyagent.toolkit.validation import problems_in

# What went wrong, for the model and for code: the first three may work if tried again. The last is the tool's
# input, which cannot be sent at all (text no URL can hold): tried again, it fails again.
KINDS = ("timeout", "unreachable", "status", "too_large", "not_json", "bad_shape", "bad_input")
RETRYABLE_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
MAX_BYTES = 256 * 1024  # a weather report is a few hundred bytes; an API reply the model reads, a few KB
MAX_SERVER_MESSAGE = 160  # how much of a server's own error text goes into the Observation


class ApiCallFailed(TinyAgentError):
    """An HTTP API call that did not bring back usable JSON; `observation(tool)` is what the model reads."""

    def __init__(self, kind: str, message: str, *, retryable: bool, status: int | None = None):
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        super().__init__(message)
        self.kind = kind
        self.retryable = retryable
        self.status = status

    def observation(self, tool_name: str) -> str:
        """The error Observation: {"error": "<tool>: <what happened>", "kind", "retryable"[, "status"]}."""
        details: dict[str, Any] = {"kind": self.kind, "retryable": self.retryable}
        if self.status is not None:
            details["status"] = self.status
        return error_observation(f"{tool_name}: {self}", **details)


class JsonApi:
    """One JSON API: where it is, how long to wait, how much to read. `get()` is the only call.

    base_url:        e.g. http://127.0.0.1:8081 (paths are added to it)
    name:            how errors name it: "the weather API"
    connect_timeout: seconds to open the connection
    read_timeout:    seconds to wait for the server's first byte, and between any two pieces of data
    total_timeout:   seconds for the whole call, from connecting to the body's last byte (checked as the body
                     arrives: see the module's docstring for the headers)
    max_bytes:       the longest reply read; a longer one is refused
    session:         a requests.Session (default: a new one, kept for connection reuse)
    """

    def __init__(self, base_url: str, *, name: str = "the API", connect_timeout: float = 2.0,
                 read_timeout: float = 5.0, total_timeout: float = 10.0, max_bytes: int = MAX_BYTES,
                 session: requests.Session | None = None):
        for label, seconds in (("connect_timeout", connect_timeout), ("read_timeout", read_timeout),
                               ("total_timeout", total_timeout)):
            check_seconds(label, seconds)
        check_whole("max_bytes", max_bytes)
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url[:40]!r}")
        self.base_url = base_url.rstrip("/")
        self.name = name
        self.connect_timeout = float(connect_timeout)
        self.read_timeout = float(read_timeout)
        self.total_timeout = float(total_timeout)
        self.max_bytes = max_bytes
        self.session = session or requests.Session()
        if session is None and is_loopback(self.base_url):
            self.session.trust_env = False  # no proxy or .netrc applies to this machine's own servers

    def get(self, path: str, params: Mapping[str, Any] | None = None, *,
            shape: Mapping[str, Any] | None = None) -> Any:
        """GET base_url + path and return its JSON, checked against `shape` (a JSON Schema) if given.
        Every failure raises `ApiCallFailed`, and nothing else escapes."""
        started = time.monotonic()
        try:
            response = self.session.get(
                self.base_url + path, params=params, stream=True, allow_redirects=False,
                timeout=(self.connect_timeout, self.read_timeout), headers={"Accept": "application/json"},
            )
        except requests.ConnectTimeout:
            raise self._failed("timeout", f"could not connect to {self.name} within {self.connect_timeout:g} s",
                               True) from None
        except requests.ReadTimeout:
            raise self._failed("timeout", f"{self.name} did not answer within {self.read_timeout:g} s",
                               True) from None
        except requests.ConnectionError:
            raise self._failed("unreachable", f"{self.name} cannot be reached (connection refused or dropped)",
                               True) from None
        except UnicodeEncodeError:  # a lone surrogate in the model's text, which no URL can hold: the input's fault
            raise self._failed("bad_input", f"the input could not be sent to {self.name}: its text holds an invalid "
                               "character (a lone surrogate)", False) from None
        except (requests.RequestException, UnicodeError) as exc:  # an invalid URL: the tool's own bug
            raise self._failed("unreachable", f"the request to {self.name} could not be sent "
                               f"({type(exc).__name__})", False) from None
        with response:
            body = self._read_body(response, started)
            if not 200 <= response.status_code < 300:
                raise self._status_failure(response, body)
            try:
                # 1e400 is no float: read as inf, it reached the model as Infinity, which no JSON reader takes
                data = json.loads(body.decode("utf-8"), parse_constant=no_json_constant, parse_float=finite_float)
            except (UnicodeDecodeError, ValueError):
                raise self._failed("not_json", f"{self.name} answered {response.status_code} with a body that "
                                   f"is not JSON: {_excerpt(body)}", False) from None
            except RecursionError:  # JSON, but nested deeper than Python's reader goes
                raise self._failed("not_json", f"{self.name} answered {response.status_code} with JSON nested "
                                   "too deeply to read", False) from None
        if shape is not None:
            problems = problems_in(data, shape)
            if problems:
                said = "; ".join(problem.message for problem in problems[:3])
                raise self._failed("bad_shape", f"{self.name}'s reply is not the shape the tool reads: {said}",
                                   False)
        return data

    def _read_body(self, response: requests.Response, started: float) -> bytes:
        """The body, read piece by piece against the size cap and the total clock."""
        declared = ascii_number(response.headers.get("Content-Length", "").strip())  # None: no length, or not one
        if declared is not None and declared > self.max_bytes:
            raise self._too_large(declared, response.status_code)
        pieces, size = [], 0
        try:
            # read1 returns whatever has arrived (iter_content would wait to fill a whole chunk), so the
            # cap and the clock are checked between drips. Decompressed, so the cap holds for a gzip bomb.
            while piece := response.raw.read1(16 * 1024, decode_content=True):
                size += len(piece)
                if size > self.max_bytes:
                    raise self._too_large(None, response.status_code)
                pieces.append(piece)
                if time.monotonic() - started > self.total_timeout:
                    raise self._failed("timeout", f"{self.name} took more than {self.total_timeout:g} s to send "
                                       "its reply", True)
        # Errors while reading the body come from urllib3 itself, not wrapped by requests.
        except urllib3.exceptions.ReadTimeoutError:
            raise self._failed("timeout", f"{self.name} stopped sending for more than {self.read_timeout:g} s",
                               True) from None
        except urllib3.exceptions.DecodeError:
            raise self._failed("not_json", f"{self.name} sent a compressed reply that does not decompress",
                               False) from None
        except (urllib3.exceptions.HTTPError, OSError):
            raise self._failed("unreachable", f"{self.name} hung up in the middle of its reply", True) from None
        return b"".join(pieces)

    def _status_failure(self, response: requests.Response, body: bytes) -> ApiCallFailed:
        status = response.status_code
        said = _server_message(body)
        message = f"{self.name} answered {status} {_shorten(response.reason or '')}".rstrip()  # a server's words
        if 300 <= status < 400:
            message += " (a redirect, which the tool does not follow)"
        return self._failed("status", f"{message}: {said}" if said else message, status in RETRYABLE_STATUS,
                            status)

    def _too_large(self, declared: int | None, status: int) -> ApiCallFailed:
        size = f"{declared} bytes" if declared is not None else f"more than {self.max_bytes} bytes"
        return self._failed("too_large", f"{self.name}'s reply is {size}; the tool reads at most {self.max_bytes}",
                            False, status)

    @staticmethod
    def _failed(kind: str, message: str, retryable: bool, status: int | None = None) -> ApiCallFailed:
        return ApiCallFailed(kind, message, retryable=retryable, status=status)

    def __repr__(self) -> str:  # the address stays out: it may hold a key, and its port changes run to run
        return (f"<JsonApi {self.name}: connect {self.connect_timeout:g} s, read {self.read_timeout:g} s, "
                f"total {self.total_timeout:g} s, at most {self.max_bytes} bytes>")


def _server_message(body: bytes) -> str:
    """What a failing server said about itself: its JSON "error"/"message", else the start of its text."""
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return _excerpt(body) if body.strip() else ""
    if isinstance(data, dict):
        for key in ("error", "message", "detail", "info"):
            value = data.get(key)
            if isinstance(value, dict):
                value = value.get("message")
            if isinstance(value, str) and value.strip():
                return _shorten(value.strip())
    return ""


def _excerpt(body: bytes) -> str:
    text = body[: MAX_SERVER_MESSAGE * 4].decode("utf-8", "replace")
    return repr(_shorten(" ".join(text.split())))


def _shorten(text: str) -> str:
    return text if len(text) <= MAX_SERVER_MESSAGE else text[:MAX_SERVER_MESSAGE] + "…"
