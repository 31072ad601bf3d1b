"""What an audit of the command line found: a results file that was not one written over, a password shown in a
URL's error, a host with an empty label and a missing TLS bundle as tracebacks, a refund unsaid when a stop came
while the answer was printed, messages in stdout when stderr is closed, files made before a refusal, an empty
shop file left on a full disk, a setting's stray space, and a room's suggested key hiding model names. Each test
fails on the code before."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tinyagent.memory.session_store import SessionStoreError

from .conftest import DEFAULT_SIGINT_THEN_EXEC, PATIENCE
from .full_disk import run_on_a_full_disk

REFUND_REQUEST = "我上周买的扫地机不回充了，修不好我想退。订单号 88231。"


def tinyagent(tmp_path: Path, *args: str, env: dict | None = None, **options) -> subprocess.CompletedProcess:
    """`python -m tinyagent ARGS` in `tmp_path`, offline unless `env` says otherwise, with no .env of the course's."""
    base = {name: value for name, value in os.environ.items() if not name.startswith("TINYAGENT_")}
    base.update(HOME=str(tmp_path), TINYAGENT_OFFLINE="1")
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **options}
    return subprocess.run([sys.executable, "-m", "tinyagent", *args], text=True, cwd=tmp_path,
                          env={**base, **(env or {})}, timeout=PATIENCE, check=False, **streams)


# -- eval --json: only an earlier run's results are written over ----------------------------------------
@pytest.mark.parametrize("kept", ["my notes for tomorrow\n", '{"another program": true}\n', "\udcff"])
def test_eval_json_refuses_a_file_that_holds_something_else(tmp_path, kept):
    notes = tmp_path / "notes.txt"
    notes.write_bytes(kept.encode("utf-8", "surrogateescape"))
    done = tinyagent(tmp_path, "eval", "--task", "time", "--lang", "en", "--json", str(notes), "--no-progress")
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert "holds something other than an earlier run's results" in line, line
    assert notes.read_bytes() == kept.encode("utf-8", "surrogateescape")


def test_eval_json_writes_over_an_earlier_runs_results_and_an_empty_file(tmp_path):
    for name, before in (("empty.json", ""), ("results.json", None)):
        path = tmp_path / name
        if before is not None:
            path.write_text(before, encoding="utf-8")
        for _ in range(2):  # the second time over the first run's own results
            done = tinyagent(tmp_path, "eval", "--task", "time", "--lang", "en", "--json", str(path), "--no-progress")
            assert done.returncode == 0, done.stderr
            assert json.loads(path.read_text(encoding="utf-8"))["schema"] == "tinyagent.evaluation/1"


# -- a URL's password is never shown; a URL requests cannot use is a setting's one-line error ---------------------
@pytest.mark.parametrize("url", ["https://alice:s3cr#t@example.com/v1", "https://alice:s3/cr@example.com/v1",
                                 "https://alice:12#34@example.com/v1"])
def test_a_password_that_breaks_its_url_is_never_shown(tmp_path, url):
    (tmp_path / ".env").write_text(f"TINYAGENT_API_URL={url}\nTINYAGENT_API_KEY=sk-abc\nTINYAGENT_MODEL=m\n",
                                   encoding="utf-8")
    for command in (["ask", "hi"], ["doctor"]):
        done = tinyagent(tmp_path, *command, env={"TINYAGENT_OFFLINE": ""})
        said = done.stdout + done.stderr
        assert "Traceback" not in said and "s3cr" not in said and "s3/cr" not in said and "12#34" not in said, said
        assert "percent-encode a #, / or ? in its user name or password" in said, said
        assert "https://***@example.com/v1" in said, said
        if command == ["ask", "hi"]:
            assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr


@pytest.mark.parametrize("url", ["https://api.deepseek..com", "http://a..b/v1", f"https://{'a' * 64}.com/v1",
                                 "https://.example.com/v1"])
def test_a_host_with_an_empty_or_long_label_is_a_settings_error(tmp_path, url):
    env = {"TINYAGENT_OFFLINE": "", "TINYAGENT_API_URL": url, "TINYAGENT_API_KEY": "sk-abc", "TINYAGENT_MODEL": "m"}
    done = tinyagent(tmp_path, "ask", "hi", env=env)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert "must name its host with parts of 1 to 63 characters between its dots" in line, line


def test_a_tls_bundle_that_is_not_there_is_said_in_one_line(tmp_path):
    env = {"TINYAGENT_OFFLINE": "", "TINYAGENT_API_URL": "https://api.deepseek.com", "TINYAGENT_API_KEY": "sk-abc",
           "TINYAGENT_MODEL": "m", "REQUESTS_CA_BUNDLE": str(tmp_path / "no-such-ca.pem")}
    done = tinyagent(tmp_path, "ask", "hi", env=env)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("stopped: llm_error: the request to api.deepseek.com could not start") and (
        "check REQUESTS_CA_BUNDLE" in line), line
    done = tinyagent(tmp_path, "doctor", env=env)
    assert "Traceback" not in done.stdout + done.stderr and "check REQUESTS_CA_BUNDLE" in done.stdout, done.stderr


@pytest.mark.parametrize("url", ["postgresql://alice:s3cr#t@127.0.0.1:1/db", "postgresql://alice:s3cr@t@127.0.0.1:1/db",
                                 "postgresql://alice:s3cr/t@127.0.0.1:1/db"])
def test_a_postgresql_url_whose_password_breaks_it_is_refused_unshown(url):
    pytest.importorskip("psycopg")
    from tinyagent.memory.session_store import PostgresSessionStore

    with pytest.raises(SessionStoreError) as refused:
        PostgresSessionStore(url)
    said = str(refused.value)
    assert "s3cr" not in said and "t@127" not in said and "%40" in said, said


# -- a stop while the answer is printed still says what the run did -------------------------------------------
def _blocked_on_its_pipe(pid: int) -> bool:
    with open(f"/proc/{pid}/wchan", encoding="ascii") as wchan:
        return "pipe" in wchan.read()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_stop_while_the_answer_waits_for_its_reader_says_the_refund(tmp_path, signum):
    # A terminal paused with Ctrl-S, or a pipe nobody reads, holds the printing of the answer; a stop then said
    # only "interrupted" (or nothing, and exit -15), while the refund stayed in the shop.
    from tinyagent.shop import Shop

    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, 1031, 4096)  # F_SETPIPE_SZ: the answer's JSON is far longer than the pipe holds
    env = {name: value for name, value in os.environ.items() if not name.startswith("TINYAGENT_")}
    env.update(HOME=str(tmp_path), TINYAGENT_OFFLINE="1")
    # through DEFAULT_SIGINT_THEN_EXEC: a test run started in the background ignores SIGINT, and its children too
    process = subprocess.Popen([sys.executable, "-c", DEFAULT_SIGINT_THEN_EXEC, sys.executable, "-m", "tinyagent", "ask",
                                REFUND_REQUEST, "--json", "--now", "2026-06-30T19:05:23", "--db", str(tmp_path / "shop.db")],
                               stdout=write_end, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env)
    os.close(write_end)
    try:
        deadline = time.monotonic() + PATIENCE
        while not _blocked_on_its_pipe(process.pid):
            assert process.poll() is None and time.monotonic() < deadline, "never blocked on its full pipe"
            time.sleep(0.05)
        process.send_signal(signum)  # the pipe stays full and open: the stop alone ends the wait
        _, err = process.communicate(timeout=PATIENCE)
        assert process.returncode == 130 and "Traceback" not in err, err
    finally:
        process.kill()
        process.wait()
        os.close(read_end)
    [line] = err.strip().splitlines()
    assert line.startswith("interrupted while the answer was printed; the run had done this before: applyRefund"), line
    assert "RF202606300001" in line
    with Shop(tmp_path / "shop.db") as shop:
        assert [refund["refundId"] for refund in shop.refunds()] == ["RF202606300001"]


# -- stderr closed: what nobody can read does not go into the answer -------------------------------------------
def test_with_stderr_closed_the_json_answer_is_all_stdout_holds(tmp_path):
    done = tinyagent(tmp_path, "ask", REFUND_REQUEST, "--json", "--max-steps", "2", stderr=None,
                     preexec_fn=lambda: os.close(2))
    assert done.returncode == 1  # stopped at max_steps, which stderr would have said
    assert json.loads(done.stdout)["events"][-1]["reason"] == "max_steps"


# -- a refusal makes no file first --------------------------------------------------------------------------------
def test_mcp_server_on_closed_stdio_makes_no_shop_file(tmp_path):
    done = tinyagent(tmp_path, "mcp-server", "--db", "shop.db", stdout=None, preexec_fn=lambda: os.close(1))
    assert done.returncode == 2 and "stdin or stdout is closed" in done.stderr, done.stderr
    assert not (tmp_path / "shop.db").exists()


def test_a_shop_file_that_could_not_be_made_on_a_full_disk_is_not_left_empty(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    script = (f"dd if=/dev/zero of={disk}/fill bs=1k 2>/dev/null; {sys.executable} -m tinyagent ask hi --db "
              f"{disk}/new.db; echo exit=$?; ls -a {disk}")
    env = {**os.environ, "TINYAGENT_OFFLINE": "1", "HOME": str(tmp_path)}
    done = run_on_a_full_disk(disk, "sh", "-c", script, size="200k", env=env)
    assert "exit=2" in done.stdout and "nothing was changed" in done.stderr, done.stdout + done.stderr
    assert "new.db" not in done.stdout, done.stdout  # a 0-byte file was left, which the next run took for a shop


def test_the_shop_db_setting_is_read_without_its_spaces(tmp_path):
    done = tinyagent(tmp_path, "ask", "Where is order 88231?", env={"TINYAGENT_SHOP_DB": " shop.db "})
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "shop.db").is_file() and not list(tmp_path.glob(" *"))


# -- the room's suggested key is no model's name --------------------------------------------------------------
def test_the_rooms_suggested_key_hides_no_model_name(tmp_path):
    from tinyagent.classroom.server import ClassroomServer, _print_banner
    from tinyagent.errors import redact

    with ClassroomServer(port=0) as room:
        import contextlib
        import io

        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            _print_banner(room, "127.0.0.1", None)
    [key] = [line.partition("=")[2] for line in printed.getvalue().splitlines()
             if line.startswith("TINYAGENT_API_KEY=")]
    said = f"The model 'classroom-lopp' does not exist. Available models: {', '.join(room.models)}"
    assert redact(said, key) == said, key  # with 'classroom', every model's name became ***
