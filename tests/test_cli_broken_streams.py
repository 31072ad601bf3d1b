"""`python -m tinyagent` with stdout or stderr going nowhere (a closed pipe, a full disk): the exit code still says
what happened, a healthy stream is still written, and no message claims less than was done."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys

import pytest

needs_dev_full = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")


@contextlib.contextmanager
def closed_pipe():
    """The writing end of a pipe nobody reads: what `| true` or `| head -1` leave once they are gone."""
    read, write = os.pipe()
    os.close(read)
    try:
        yield write
    finally:
        os.close(write)


def tinyagent(tmp_path, *args, stdout, stderr):
    return subprocess.run([sys.executable, "-m", "tinyagent", *args], check=False, stdout=stdout, stderr=stderr,
                          timeout=120, cwd=tmp_path, env={**os.environ, "TINYAGENT_OFFLINE": "1", "HOME": str(tmp_path)})


def test_eval_with_output_and_errors_in_a_closed_pipe_exits_2_not_1(tmp_path):
    # `eval 2>&1 | head -1`: every task passed, and it exited 1, which eval's help says means a task failed (the
    # handler that reports the lost table raised on stderr in its turn).
    with closed_pipe() as pipe:
        done = tinyagent(tmp_path, "eval", "--task", "refund", "--no-progress", stdout=pipe, stderr=pipe)
    assert done.returncode == 2


def test_a_bad_option_with_errors_in_a_closed_pipe_exits_2(tmp_path):
    # `ask x --model nope 2>&1 | true` exited 1.
    with closed_pipe() as pipe:
        done = tinyagent(tmp_path, "ask", "x", "--model", "nope", "--db", str(tmp_path / "shop.db"),
                         stdout=pipe, stderr=pipe)
    assert done.returncode == 2
    assert not (tmp_path / "shop.db").exists()


@needs_dev_full
def test_eval_with_errors_on_a_full_disk_still_prints_its_table(tmp_path):
    # `eval 2>/dev/full`: the failed notice on stderr was taken for a failed stdout, which was then sent to
    # /dev/null: nothing printed, exit 1.
    with open("/dev/full", "w") as full:
        done = tinyagent(tmp_path, "eval", "--task", "refund", "--no-progress", stdout=subprocess.PIPE, stderr=full)
    assert done.returncode == 0
    assert "2 of 2 tasks passed (100%)" in done.stdout.decode()


@needs_dev_full
def test_ask_with_errors_on_a_full_disk_exits_as_without_them(tmp_path):
    with open("/dev/full", "w") as full:
        bad = tinyagent(tmp_path, "ask", "x", "--model", "nope", stdout=subprocess.PIPE, stderr=full)
        good = tinyagent(tmp_path, "ask", "Where is order 88231?", "--lang", "en", stdout=subprocess.PIPE,
                         stderr=full)
    assert bad.returncode == 2 and bad.stdout == b""
    assert good.returncode == 0 and "[Final answer]" in good.stdout.decode()


def test_serve_into_a_closed_pipe_names_the_files_it_made(tmp_path):
    # It said "before anything was done", and had made both folders and both databases.
    shop, sessions = tmp_path / "new" / "a" / "shop.db", tmp_path / "new" / "b" / "sessions.db"
    with closed_pipe() as pipe:
        done = tinyagent(tmp_path, "serve", "--port", "0", "--db", str(shop), "--session-store", str(sessions),
                         stdout=pipe, stderr=subprocess.PIPE)
    assert done.returncode == 2
    assert done.stderr.decode().strip() == (
        f"error: could not write to standard output (Broken pipe); the server stopped before serving, after creating "
        f"{shop} and {sessions}")
    assert shop.is_file() and sessions.is_file()


def test_mcp_server_into_a_closed_pipe_names_the_file_it_made(tmp_path):
    pytest.importorskip("mcp")
    shop = tmp_path / "new" / "shop.db"
    with closed_pipe() as pipe:
        done = tinyagent(tmp_path, "mcp-server", "--port", "0", "--db", str(shop), stdout=pipe,
                         stderr=subprocess.PIPE)
    assert done.returncode == 2
    assert done.stderr.decode().strip() == (
        f"error: could not write to standard output (Broken pipe); the server stopped before serving, after creating "
        f"{shop}")


def test_serve_into_a_closed_pipe_with_files_it_had_already_says_nothing_was_done(tmp_path):
    shop, sessions = tmp_path / "shop.db", tmp_path / "sessions.db"
    with closed_pipe() as pipe:
        tinyagent(tmp_path, "serve", "--port", "0", "--db", str(shop), "--session-store", str(sessions),
                  stdout=pipe, stderr=subprocess.PIPE)
        done = tinyagent(tmp_path, "serve", "--port", "0", "--db", str(shop), "--session-store", str(sessions),
                         stdout=pipe, stderr=subprocess.PIPE)
    assert done.returncode == 2
    assert done.stderr.decode().strip() == ("error: could not write to standard output (Broken pipe) before anything "
                                            "was done")
