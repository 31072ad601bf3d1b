"""One family of errors, so a caller can catch `TinyAgentError` broadly or one subclass precisely.

Every message says what to do next. None of them ever contains the API key: errors that quote a
server's reply pass it through `redact()` first, because some servers echo the request back.
"""

from __future__ import annotations

from typing import Any


class TinyAgentError(Exception):
    """Base class of every error tinyagent raises on purpose.

    Its message says what went wrong and what to do, so in IPython (a notebook, JupyterLab) it shows as that
    message alone, not a traceback through the package's frames: IPython prints what `_render_traceback_()`
    returns when an exception has it. The cell still fails. The whole traceback is still there:
    `import traceback, sys; traceback.print_exception(sys.last_value)`."""

    def _render_traceback_(self) -> list[str]:
        first, *rest = str(self).splitlines() or [""]
        return [f"\x1b[1;31m{type(self).__name__}:\x1b[0m {first}", *rest]


def first_line(exc: BaseException) -> str:
    """What a one-line error says of `exc`: its message's first line, or its class's name when the message is empty
    (an error of SQLite's or of the network may have none)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def named_first_line(exc: BaseException) -> str:
    """`exc` as one line that names its class: "ValueError: " and its message's first line (nothing after the colon
    when the message is empty or starts with a line break), as a table row says why a run failed."""
    return f"{type(exc).__name__}: {exc}".splitlines()[0]


class ConfigurationError(TinyAgentError, ValueError):
    """The settings are incomplete, contradictory or malformed (a missing key, a URL without http://).

    Also a ValueError, so that code written to catch a bad value (`LlmClient("api.x.com", ...)`) still
    catches it."""


class LlmError(TinyAgentError):
    """Calling the model failed. `status` is the HTTP status when there was one (or the provider's error code, for
    an error it sent with HTTP 200); `retry_after` the seconds its Retry-After header asked to wait, when it did."""

    def __init__(self, message: str, status: int | None = None, *, retry_after: float | None = None):
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class AuthenticationError(LlmError):
    """401/403: the server refused the key."""


class NotFoundError(LlmError):
    """404: the URL or the model name is wrong."""


class RedirectError(NotFoundError):
    """301, 302, 307...: the endpoint is at another URL, which the message names. The client does not follow it
    (a 302 would send the request again as a GET, without its body)."""


class BadRequestError(LlmError):
    """400 (or another 4xx): the server rejected the request; its own message is included."""


class RateLimitError(LlmError):
    """429: too many requests, still refused after the client's retries."""


class ServerError(LlmError):
    """5xx: the provider failed, still failing after the client's retries."""


class LlmTimeoutError(LlmError):
    """The server did not connect or answer in time."""


class LlmConnectionError(LlmError):
    """The server could not be reached at all (refused, reset, DNS)."""


class BadResponseError(LlmError):
    """The reply is not the JSON a Chat Completions server sends."""


def error_class(status: int | None) -> type[LlmError]:
    """The class of the family for an HTTP status, or for a provider's error code that is one (an error sent with
    HTTP 200, or in a stream): a provider's error without such a code is its own failure, a ServerError."""
    if status in (401, 403):
        return AuthenticationError
    if status == 404:
        return NotFoundError
    if status == 429:
        return RateLimitError
    if status is not None and 400 <= status < 500:
        return BadRequestError
    return ServerError


class ShopDatabaseError(TinyAgentError):
    """The shop's database file cannot be used: a folder, not a database, or a place that cannot be written."""


# The key a classroom model that checks none tells its learners to write (its banner): clients want some key. It is
# no secret, so nothing warns about sending it in clear; and since `redact` hides a key wherever it appears, it is
# words no message needs ("classroom" would have hidden every model's name).
NO_KEY_NEEDED = "no-key-needed"


MIN_SECRET_CHARS = 4  # a shorter secret would blank out pieces of ordinary words, and no real key is that short


def redact(text: str, secret: str | None) -> str:
    """Return `text` with every occurrence of `secret` replaced, so a key can never leak through it. A secret
    shorter than 4 characters is left alone: it would blank out pieces of ordinary words, and no real key is
    that short."""
    if secret and len(secret) >= MIN_SECRET_CHARS and secret in text:
        return text.replace(secret, "***")
    return text


def redact_json(value: Any, secret: str | None) -> Any:
    """A decoded JSON value with `redact` applied to every string in it, names too: what a reply holds is shown (a
    trace's model, lesson 09's raw reply) and stored, and a server may echo the Authorization header anywhere."""
    if not secret:
        return value
    if isinstance(value, str):
        return redact(value, secret)
    # Loops, not comprehensions: a comprehension is a call of its own, and a reply nested a few hundred levels deep
    # (which the reply's checks name) must not run out of Python's stack here first.
    if isinstance(value, list):
        items = []
        for item in value:
            items.append(redact_json(item, secret))
        return items
    if isinstance(value, dict):
        fields = {}
        for name, item in value.items():
            fields[redact(name, secret)] = redact_json(item, secret)
        return fields
    return value

