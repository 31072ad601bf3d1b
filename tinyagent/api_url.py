"""Where a Chat Completions server is: the endpoint from whatever base URL a learner types, and whether it is
on this machine. Read by the settings (which model is configured) and the client (which one it calls)."""

from __future__ import annotations

from urllib.parse import urlsplit

from tinyagent.errors import ConfigurationError

CHAT_PATH = "/chat/completions"


def normalize_chat_url(url: str) -> str:
    """Accept a base URL with or without /v1 or /chat/completions and return the endpoint.

    https://api.deepseek.com                       -> https://api.deepseek.com/v1/chat/completions
    https://dashscope.aliyuncs.com/compatible-mode/v1 -> .../compatible-mode/v1/chat/completions
    http://127.0.0.1:8000/v1/chat/completions      -> unchanged
    """
    url = (url or "").strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigurationError(f"an API URL must start with http:// or https://, got {url!r}")
    path = parts.path.rstrip("/")
    if path.endswith(CHAT_PATH):
        return url.rstrip("/")
    if not path:
        path = "/v1"  # a bare host: OpenAI-compatible servers live under /v1
    return f"{parts.scheme}://{parts.netloc}{path}{CHAT_PATH}"


LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "0.0.0.0"})


def is_loopback(url: str) -> bool:
    """True for a server on this machine (the classroom model, a local llama.cpp or Ollama)."""
    return urlsplit(url or "").hostname in LOOPBACK_HOSTS
