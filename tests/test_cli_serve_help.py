"""`python -m tinyagent serve --help` says what each limit bounds."""

from __future__ import annotations

import re

from .test_cli import run_main


def test_header_timeout_help_says_it_bounds_the_rest_of_a_body_already_answered(capsys):
    # connections.py's header clock also runs after a request answered before its body was read (415, 413, ...).
    code, out, _ = run_main(["serve", "--help"], capsys)
    assert code == 0
    said = " ".join(out.split("--header-timeout SECONDS", 2)[2].split("--max-connections")[0].split())
    assert re.search(r"headers before it is cut off, and, once a request was answered before its body was read "
                     r"\(.*\), to send the rest of that body", said), said


def test_api_key_help_says_who_runs_the_agent_without_one(capsys):
    # On a machine of several accounts (the course's JupyterHub), a keyless service answers its own account only.
    code, out, _ = run_main(["serve", "--help"], capsys)
    assert code == 0
    said = " ".join(out.split("--api-key API_KEY")[-1].split("--operator-key")[0].split())  # the last: its help
    assert "else none: any program the host check lets in runs it, but of this machine only those of the account " \
           "running the service, on Linux" in said, said
