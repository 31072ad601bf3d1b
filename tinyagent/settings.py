"""Which model to talk to: `TINYAGENT_API_URL`, `TINYAGENT_API_KEY`, `TINYAGENT_MODEL`.

Each value comes from the first place that has it:

    explicit arguments  >  the environment  >  a .env file (found from the current folder upward)

and when nothing names a provider (no key and no URL), the offline classroom model: a local,
deterministic server started in this process. `TINYAGENT_OFFLINE=1` forces the classroom model
whatever the environment and .env say (tests set it, so a learner's key never changes a test);
only explicit arguments, written in code, still win over it. A .env that another account owns is refused,
not read: in a folder others may write, it could be theirs, put there to send your key elsewhere.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field

from dotenv import dotenv_values
from dotenv.parser import parse_stream

from tinyagent.api_url import is_loopback, shown_url, url_host, url_problem
from tinyagent.errors import NO_KEY_NEEDED, ConfigurationError, redact
from tinyagent.file_owners import belongs_to_another_account
from tinyagent.safe_text import holds_surrogate, replace_lone_surrogates

NAMES = ("TINYAGENT_API_URL", "TINYAGENT_API_KEY", "TINYAGENT_MODEL")
CLASSROOM_MODEL = "classroom"

_notice_shown = False


@dataclass(frozen=True)
class Settings:
    """Where the model lives. The key is kept out of repr() and str()."""

    api_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    source: str = ""  # where the settings came from, or why the classroom model is used
    offline: bool = False  # True for the in-process classroom model

    @property
    def classroom(self) -> bool:
        """The scripted classroom model: in this process, or a classroom server's careful model, asked for by
        its name `classroom` (a JupyterHub room's service, `python -m tinyagent classroom`)."""
        return self.offline or self.model == CLASSROOM_MODEL

    def describe(self) -> str:
        """One line a learner can read: which model, where, and why."""
        if self.offline:
            return f"classroom model {self.model!r}, offline, in this process ({self.source})"
        key = "key set" if self.api_key else "no key"
        return f"model {self.model!r} at {shown_url(self.api_url)} ({key}; from {self.source})"

    def key_in_clear(self) -> str | None:
        """A warning when the key travels unencrypted: set, and sent over http:// to a host that is not this
        machine, where anyone on the network between can read it; None otherwise. A warning, not an error: a
        lab's own server on its own network may serve plain http on purpose."""
        if self.api_key in (None, "", NO_KEY_NEEDED):
            return None
        if not self.api_url.lower().startswith("http://") or is_loopback(self.api_url):
            return None
        return (f"TINYAGENT_API_KEY is sent unencrypted (http://) to {url_host(self.api_url)}, where anyone on the "
                "network between can read it: use the provider's https:// URL, unless this is your own lab's server")


def find_env_file(start: str | os.PathLike | None = None) -> str:
    """The `.env` nearest the current folder (or `start`), looking upward as python-dotenv's
    `find_dotenv(usecwd=True)` does; "" when there is none."""
    folder = os.path.abspath(start if start is not None else os.getcwd())
    while True:
        candidate = os.path.join(folder, ".env")
        if os.path.isfile(candidate):
            return candidate
        parent = os.path.dirname(folder)
        if parent == folder:
            return ""
        folder = parent


def load_settings(
    api_url: str | None = None,
    api_key: str | None = None,
    model: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    dotenv_path: str | os.PathLike | None = None,
    notice: bool = True,
) -> Settings:
    """Resolve the settings (see the module docstring). Raises ConfigurationError if incomplete.

    environ and dotenv_path are for tests; by default the process environment and the .env file
    found by `find_env_file()` from the current folder upward (read by python-dotenv) are used.
    """
    environ = os.environ if environ is None else environ
    explicit = {"TINYAGENT_API_URL": api_url, "TINYAGENT_API_KEY": api_key, "TINYAGENT_MODEL": model}
    forced_offline = _forced_offline(environ.get("TINYAGENT_OFFLINE", ""))

    layers: list[tuple[str, Mapping[str, str | None]]] = [("arguments", explicit)]
    if not forced_offline:
        layers.append(("environment", environ))
        path = dotenv_path if dotenv_path is not None else find_env_file()
        if path and os.path.isfile(path):
            layers.append((".env", _read_env_file(path)))

    values, sources = _first_values(layers)
    url, key, chosen_model = (values.get(name) for name in NAMES)
    if not url and not key:
        why = "TINYAGENT_OFFLINE=1" if forced_offline else "no TINYAGENT_API_KEY or TINYAGENT_API_URL configured"
        _check_classroom_model(chosen_model, sources.get("TINYAGENT_MODEL"), why)
        return _classroom_settings(chosen_model, why, notice)
    _check_provider(url, key, chosen_model, sources)
    described = ", ".join(sorted(set(sources.values())))
    return Settings(api_url=url, api_key=key or None, model=chosen_model, source=described)


def _first_values(layers: list[tuple[str, Mapping[str, str | None]]]) -> tuple[dict[str, str], dict[str, str]]:
    """Each setting from the first layer that gives it, and that layer's name; a ConfigurationError for a value
    that is not text, or a model name that is not one line."""
    values: dict[str, str] = {}
    sources: dict[str, str] = {}
    for name in NAMES:
        for layer_name, layer in layers:
            value = (layer.get(name) or "").strip()
            if value:
                values[name], sources[name] = value, layer_name
                break

    for name, value in values.items():
        if holds_surrogate(value):
            raise ConfigurationError(_not_text(name, value, sources[name]))
    model = values.get("TINYAGENT_MODEL")
    if model and any(ch < " " or ch == "\x7f" for ch in model):
        # A pasted name with a newline would reach the provider's error, printed over several lines.
        raise ConfigurationError(
            f"TINYAGENT_MODEL (from the {sources['TINYAGENT_MODEL']}) holds a control character: {model!r}; "
            "write the model's name on one line, e.g. 'classroom' or your provider's model name"
        )
    return values, sources


def _check_classroom_model(model: str | None, source: str | None, why: str) -> None:
    """A ConfigurationError when no provider is configured (`why`) and `model` cannot be a classroom model: a
    provider's name given in code, or a classroom name that does not exist."""
    if model and source == "arguments" and not model.startswith(CLASSROOM_MODEL):
        raise ConfigurationError(
            f"model {model!r} needs a provider, but none is configured ({why}): set "
            "TINYAGENT_API_URL and TINYAGENT_API_KEY, or choose a classroom model such as 'classroom'"
        )
    # A misspelt classroom model (classroom-lopp) would make every call a 404, and a run stop on "the model failed".
    if model and model.startswith(CLASSROOM_MODEL) and model not in classroom_models():
        raise ConfigurationError(
            f"there is no classroom model called {model!r}: choose one of {', '.join(classroom_models())}"
        )


def _check_provider(url: str | None, key: str | None, model: str | None, sources: dict[str, str]) -> None:
    """A ConfigurationError, saying what to add or fix, unless a provider is configured whole: a URL that is one,
    a key (not needed on this machine) and a model name."""
    if url and (problem := url_problem(url)):
        where = "the .env" if sources["TINYAGENT_API_URL"] == ".env" else f"the {sources['TINYAGENT_API_URL']}"
        # Never echo what may be a key (URL and key swapped is an easy slip): a URL has a dot or ://.
        shown = repr(shown_url(url))
        got = shown if ("." in url or "://" in url) and not url.startswith("sk-") else "something that is not a URL"
        raise ConfigurationError(
            f"TINYAGENT_API_URL in {where} {problem}, got {redact(got, key)}: "
            "write the provider's full URL, e.g. https://api.deepseek.com (see .env.example)"
        )
    if not url:
        raise ConfigurationError(
            f"TINYAGENT_API_KEY is set (in the {sources['TINYAGENT_API_KEY']}) but TINYAGENT_API_URL is not: "
            "add your provider's URL to .env (see .env.example), or remove the key to use the classroom model"
        )
    if not key and not is_loopback(url):
        raise ConfigurationError(
            "TINYAGENT_API_KEY is not set: copy .env.example to .env and put your key in it, "
            "or remove TINYAGENT_API_URL to use the offline classroom model"
        )
    if not model:
        raise ConfigurationError(
            "TINYAGENT_MODEL is not set: add the model name your provider uses to .env (see .env.example)"
        )


def _not_text(name: str, value: str, source: str) -> str:
    """Why a setting holding bytes that are not UTF-8 is refused. The environment and the command line hand such bytes
    to Python as lone surrogates ('caf\\xe9', written in Latin-1, comes as 'caf\\udce9'): sent, the name would reach
    the provider changed, and every message would show it as `\\udce9`. The value is shown readably, bad bytes as
    U+FFFD, and a key not at all."""
    shown = "" if name == "TINYAGENT_API_KEY" else f" (shown as \ufffd: {replace_lone_surrogates(value)!r})"
    return (f"{name} (from the {source}) is not valid text: it holds bytes that are not UTF-8{shown}, from a terminal "
            "or a file in another encoding; set it again as UTF-8 text")


OFFLINE_YES, OFFLINE_NO = ("1", "true", "yes"), ("", "0", "false", "no")


def _forced_offline(value: str) -> bool:
    """TINYAGENT_OFFLINE read: yes or no. Any other value is refused, not read as no: a teacher who wrote `on` or
    `maybe` meant the classroom model, and would otherwise send the room's requests to a paid provider."""
    said = value.strip().lower()
    if said not in OFFLINE_YES + OFFLINE_NO:
        raise ConfigurationError(f"TINYAGENT_OFFLINE must be 1 (or true, yes) to force the classroom model, or 0 (or "
                                 f"false, no, empty) to use the configured one; got {value.strip()[:40]!r}")
    return said in OFFLINE_YES


def _read_env_file(path: str | os.PathLike) -> dict[str, str | None]:
    """The variables in the .env file at `path`; ConfigurationError, naming the file, when it cannot be read as
    UTF-8 text (saved as UTF-16 or Latin-1, or not readable by this account), or when a line of it is not
    `NAME=value` (python-dotenv would only warn and skip it: a key with its quote left open, then, was no key)."""
    try:
        with open(path, encoding="utf-8-sig") as file:  # -sig: a byte order mark, as python-dotenv skips it
            _refuse_another_accounts(path, os.fstat(file.fileno()).st_uid)
            text = file.read()
    except UnicodeDecodeError:
        why = "it holds bytes that are not UTF-8 (saved as UTF-16 or Latin-1?); save it again as UTF-8 in your editor"
    except OSError as error:
        why = f"{error.strerror or error}; give your account permission to read it"
    else:
        unreadable = next((binding.original.line for binding in parse_stream(io.StringIO(text)) if binding.error),
                          None)
        if unreadable is None:
            return dotenv_values(stream=io.StringIO(text))
        # The line itself is not shown: it may hold a key.
        raise ConfigurationError(f"the .env file {os.fspath(path)} cannot be read from line {unreadable}: each line "
                                 "must be NAME=value (a value in quotes must close them), or a # comment")
    raise ConfigurationError(f"the .env file {os.fspath(path)} must be readable UTF-8 text, and is not: {why}")


def _refuse_another_accounts(path: str | os.PathLike, owner: int) -> None:
    """ConfigurationError when the .env file at `path` belongs to an account other than this one or root: the search
    goes up from the current folder, and in a folder others may write (/tmp, a folder the class shares) another
    account could have put it there, to send the key in this account's environment to a server of its own
    (file_owners.py)."""
    if belongs_to_another_account(owner):
        raise ConfigurationError(f"the .env file {os.fspath(path)} belongs to another account (uid {owner}), so it "
                                 "was not read: it could send your key to their server; work in a folder of your own, "
                                 "with a .env of your own")


def classroom_models() -> tuple[str, ...]:
    """The names the classroom model answers to: `classroom` and its variants."""
    from tinyagent.classroom.variants import MODELS

    return tuple(MODELS)


def _classroom_settings(model: str | None, why: str, notice: bool) -> Settings:
    from tinyagent.classroom.server import ensure_classroom_server

    server = ensure_classroom_server()
    if not (model or "").startswith(CLASSROOM_MODEL):
        model = CLASSROOM_MODEL  # a provider's model name left in the environment means nothing here
    global _notice_shown
    if notice and not _notice_shown:
        _notice_shown = True
        # The same words whatever the reason, so a notebook's output does not depend on the
        # machine it ran on; `Settings.describe()` says why.
        print(
            "[tinyagent] Using the offline classroom model: a teaching instrument, not a language "
            "model. See .env.example to use a real one.",
            file=sys.stdout,
        )
    return Settings(api_url=server.chat_url, api_key=None, model=model, source=why, offline=True)
