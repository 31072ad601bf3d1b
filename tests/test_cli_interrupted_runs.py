"""Ctrl-C during `python -m tinyagent ask`: what the run had done before it is said, never hidden."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from .conftest import DEFAULT_SIGINT_THEN_EXEC, PATIENCE, completion

REFUND_ACTION = ('Thought: refund it.\nAction: applyRefund\n'
                 'Action Input: {"orderId": "88231", "reason": "faulty: does not dock"}')


def _wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + PATIENCE
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {PATIENCE:g} s")
        time.sleep(0.05)


@pytest.mark.parametrize(("signum", "json_flag"), [
    (signal.SIGINT, []), (signal.SIGINT, ["--json"]),
    # A `kill` or a closed terminal ended the process at once: exit -15 or 129, nothing printed, the refund made
    (signal.SIGTERM, []), (signal.SIGHUP, []),
], ids=["rounds", "json", "sigterm", "sighup"])
def test_ctrl_c_after_a_refund_says_the_refund_was_made(tmp_path, scripted_server, signum, json_flag):
    # The model's first reply makes a refund; its second never comes. Ctrl-C then said only "interrupted", exit
    # 130, with nothing on stdout, while the refund stayed in the shop's file.
    from tinyagent.shop import Shop

    second_call_may_end = threading.Event()

    def stall(request):  # the model thinking, until the test is done with the command
        second_call_may_end.wait(PATIENCE)
        request.close_connection = True

    scripted_server.reply((200, completion(REFUND_ACTION)), stall)
    env = {name: value for name, value in os.environ.items() if not name.startswith("TINYAGENT_")}
    env.update(HOME=str(tmp_path), TINYAGENT_API_URL=scripted_server.url.removesuffix("/chat/completions"),
               TINYAGENT_API_KEY="", TINYAGENT_MODEL="test-model")
    command = subprocess.Popen([sys.executable, "-c", DEFAULT_SIGINT_THEN_EXEC,  # Ctrl-C works, however the run began
                                sys.executable, "-m", "tinyagent", "ask", "Refund order 88231, it is faulty",
                                "--db", str(tmp_path / "shop.db"), "--now", "2026-06-25T10:00:00", *json_flag],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env)
    try:
        _wait_for(lambda: len(scripted_server.requests) == 2 or command.poll() is not None, "second model call")
        assert command.poll() is None, command.communicate()
        command.send_signal(signum)
        out, err = command.communicate(timeout=PATIENCE)
    finally:
        second_call_may_end.set()
        if command.poll() is None:
            command.kill()
            command.communicate()
    assert command.returncode == 130 and "Traceback" not in err, err
    [line] = err.strip().splitlines()
    assert line.startswith("interrupted; the run had done this before: applyRefund")
    assert "RF202606250001" in line
    assert "applyRefund" in out and "RF202606250001" in out  # the rounds that ran, as a finished run prints them
    with Shop(tmp_path / "shop.db") as shop:
        assert [refund["refundId"] for refund in shop.refunds()] == ["RF202606250001"]


def test_a_servers_error_with_escape_sequences_is_printed_escaped(tmp_path, scripted_server):
    # The "stopped: llm_error: ..." line and the printed trace quoted the server's message raw: its ESC sequences
    # could erase the lines above and set the terminal's title.
    message = "\x1b[1A\x1b[2Kall fine\x1b]0;owned\x07"
    scripted_server.reply((400, {"error": {"message": message}}))
    env = {name: value for name, value in os.environ.items() if not name.startswith("TINYAGENT_")}
    env.update(HOME=str(tmp_path), TINYAGENT_API_URL=scripted_server.url.removesuffix("/chat/completions"),
               TINYAGENT_API_KEY="", TINYAGENT_MODEL="test-model")
    done = subprocess.run([sys.executable, "-m", "tinyagent", "ask", "Where is order 88231?", "--db",
                           str(tmp_path / "shop.db")], capture_output=True, text=True, cwd=tmp_path, env=env,
                          timeout=PATIENCE, check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "\x1b" not in done.stdout + done.stderr and "\x07" not in done.stdout + done.stderr
    assert "\\x1b[1A\\x1b[2Kall fine" in done.stderr and "\\x1b[1A\\x1b[2Kall fine" in done.stdout
