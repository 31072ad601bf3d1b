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
    if problem := url_problem(url):
        raise ConfigurationError(f"an API URL {problem}, got {shown_url(url)!r}")
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    if not path.endswith(CHAT_PATH):
        path = (path or "/v1") + CHAT_PATH  # a bare host: OpenAI-compatible servers live under /v1
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def url_problem(url: str) -> str | None:
    """What is wrong with `url` as an API URL, as words that follow "an API URL" (or the variable's name), or None
    when nothing is. urlsplit refuses a bracket left open with a ValueError, and requests a port that is no port
    only at the first call (InvalidURL, a run stopped as if the model failed): both are the settings' mistake."""
    try:
        parts = urlsplit(url)
    except ValueError:
        if "[" in url or "]" in url:  # "http://[::1" (Invalid IPv6 URL), "http://[zz]/v1"
            return "must write an IPv6 host as an address between [ and ], as in http://[::1]:8080/v1"
        return "must name its host in characters a URL allows there (not full-width ones)"  # NFKC's refusal
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return "must start with http:// or https://"
    if any(ch.isspace() or ch < " " or ch == "\x7f" for ch in parts.netloc):  # requests refuses it only at the call
        return "must name its host without spaces or control characters"
    try:
        has_port = parts.port != 0  # None (no port given) is fine: the scheme's own
    except ValueError:  # "Port out of range", "could not be cast to integer": :99999, :abc, :-1
        has_port = False
    if (not has_port or "@" in parts.fragment) and user_info_misread(url):  # https://alice:s3cr#t@host: the host
        # read as alice, its port as s3cr (an @ in a fragment, never sent, is a password's too: alice:12#3@host)
        return "must percent-encode a #, / or ? in its user name or password (as %23, %2F, %3F)"
    if not has_port:
        return "must give a port from 1 to 65535 after the host's colon, as in http://127.0.0.1:8080/v1"
    if ":" not in (parts.hostname or ""):  # a name or an IPv4 address, as requests will encode it (IDNA) at the call
        try:
            (parts.hostname or "").encode("idna")
        except UnicodeError:  # "api.deepseek..com": requests refuses it with a traceback of urllib3's
            return "must name its host with parts of 1 to 63 characters between its dots, as in api.deepseek.com"
    return None


def models_url(chat_url: str) -> str:
    """The model list (GET .../models) beside an endpoint `normalize_chat_url` made, with its query kept."""
    parts = urlsplit(chat_url)
    return urlunsplit(parts._replace(path=parts.path.removesuffix(CHAT_PATH) + "/models"))


def user_info_misread(url: str) -> bool:
    """Whether `url` has an @ after its host as urlsplit reads it: a #, / or ? in a password (https://alice:s3cr#t@host)
    ends the host early, so urlsplit finds no password to hide (or an @ in a path or query, shown hidden too)."""
    rest = url.partition("//")[2]
    try:
        netloc = urlsplit(url).netloc
    except ValueError:
        return "@" in rest
    return "@" in rest and "@" not in netloc


def shown_url(url: str) -> str:
    """`url` as a message or a repr may show it: a password in it (https://user:pw@host) becomes ***, and so does
    everything before the last @ when the user and password cannot be told apart from the rest (an @ in them)."""
    if user_info_misread(url):  # that is also any URL urlsplit cannot read ("http://u:pw@[::1") with an @ in it
        scheme, _, rest = url.partition("//")
        return f"{scheme}//***@{rest.rpartition('@')[2]}"
    try:
        parts = urlsplit(url)
    except ValueError:  # not a URL urlsplit reads, and no @: no user or password to hide
        return url
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
