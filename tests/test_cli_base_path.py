"""`python -m tinyagent classroom --base-path`: a path the room would print in a URL that answers 404 is refused."""

from __future__ import annotations

import re
import signal

import pytest
import requests

from .conftest import PATIENCE, ServerProcess
from .test_cli import run_main

# Each was accepted, and the learners' TINYAGENT_API_URL answered 404: a client resolves . and .. before it sends
# (/a/./b arrives as /a/b), and the room matches the decoded path, where %2F is a slash and %41 an A.
UNSERVED = {
    "a dot segment": ("/a/./b", "holds a . or .. segment"),
    "a trailing dot": ("/services/classroom/.", "holds a . or .. segment"),
    "a dot-dot segment": ("/a/../b", "holds a . or .. segment"),
    "an encoded slash": ("/a/%2F/b", "(no ?, #, %, spaces or scheme)"),
    "an encoded letter": ("/a/%41", "(no ?, #, %, spaces or scheme)"),
}


@pytest.mark.parametrize("name", UNSERVED)
def test_a_base_path_whose_printed_url_would_answer_404_is_one_line(name, monkeypatch, capsys):
    import tinyagent.classroom.server

    base_path, said = UNSERVED[name]

    def served(*args, **kwargs):
        raise AssertionError(f"--base-path {base_path!r}: the room started")

    monkeypatch.setattr(tinyagent.classroom.server, "serve_room", served)
    code, out, err = run_main(["classroom", "--port", "0", "--base-path", base_path], capsys)
    assert code == 2 and out == "", err
    [line] = err.strip().splitlines()
    assert line.startswith("error: --base-path") and said in line and repr(base_path) in line


def test_dots_inside_a_segment_are_a_name_and_the_printed_url_answers():
    with ServerProcess("classroom", "--port", "0", "--base-path", "/v.1/..x") as room:
        url = room.wait_for_line("TINYAGENT_API_URL=").strip().split("=", 1)[1]
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/v\.1/\.\.x/v1/chat/completions", url), url
        body = {"model": "classroom", "messages": [{"role": "user", "content": "hi"}]}
        assert requests.post(url, json=body, timeout=PATIENCE).status_code == 200
        assert room.stop(signal.SIGTERM) == 0, room.output()
