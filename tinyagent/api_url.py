"""Where a Chat Completions server is: the endpoint from whatever base URL a learner types, and whether it is
on this machine. Read by the settings (which model is configured) and the client (which one it calls)."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from tinyagent.errors import ConfigurationError

CHAT_PATH = "/chat/completions"


def normalize_chat_url(url: str) -> str:
    """Accept a base URL with or without /v1 or /chat/completions and return the endpoint.

    https://api.deepseek.com                       -> https://api.deepseek.com/v1/chat/completions
    https://dashscope.aliyuncs.com/compatible-mode/v1 -> .../compatible-mode/v1/chat/completions
    http://127.0.0.1:8000/v1/chat/completions      -> unchanged
    https://h.example/v1?api-version=2024          -> https://h.example/v1/chat/completions?api-version=2024

    A query is kept (some providers want one on every request); a fragment (#...) is dropped, as HTTP never sends
    it. A user and password in the URL are kept for the request, and shown as *** (`shown_url`).
    """
    url = (url or "").strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigurationError(f"an API URL must start with http:// or https://, got {shown_url(url)!r}")
    path = parts.path.rstrip("/")
    if not path.endswith(CHAT_PATH):
        path = (path or "/v1") + CHAT_PATH  # a bare host: OpenAI-compatible servers live under /v1
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def models_url(chat_url: str) -> str:
    """The model list (GET .../models) beside an endpoint `normalize_chat_url` made, with its query kept."""
    parts = urlsplit(chat_url)
    return urlunsplit(parts._replace(path=parts.path.removesuffix(CHAT_PATH) + "/models"))


def shown_url(url: str) -> str:
    """`url` as a message or a repr may show it: a password in it (https://user:pw@host) becomes ***."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user_info, _, host = parts.netloc.rpartition("@")
    user = user_info.partition(":")[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def url_host(url: str) -> str:
    """The host and port of `url` as error messages name it, without a user or password."""
    return urlsplit(url).netloc.rpartition("@")[2]


LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "0.0.0.0"})


def is_loopback(url: str) -> bool:
    """True for a server on this machine (the classroom model, a local llama.cpp or Ollama)."""
    return urlsplit(url or "").hostname in LOOPBACK_HOSTS
