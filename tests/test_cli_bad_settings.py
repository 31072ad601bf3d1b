"""Settings the commands cannot use (a URL urlsplit refuses, a port that is no port, a .env that is not UTF-8 text):
one line on stderr and exit 2 in ask, eval and serve; a FAIL line in the doctor's report, and exit 2 too (1 is for a
check the provider failed)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tinyagent.__main__ import main

PROVIDER = {"TINYAGENT_API_KEY": "sk-cli-SECRET-0077", "TINYAGENT_MODEL": "m"}
# name: (the settings, what the one line must say)
BAD_SETTINGS = {
    "ipv6 bracket left open": ({**PROVIDER, "TINYAGENT_API_URL": "http://[::1"},
                               "TINYAGENT_API_URL in the environment must write an IPv6 host as an address between"),
    "port out of range": ({**PROVIDER, "TINYAGENT_API_URL": "http://127.0.0.1:99999/v1"},
                          "TINYAGENT_API_URL in the environment must give a port from 1 to 65535"),
    "latin-1 .env": (b"TINYAGENT_API_URL=http://127.0.0.1:1/v1\nTINYAGENT_MODEL=caf\xe9\n",
                     "must be readable UTF-8 text, and is not: it holds bytes that are not UTF-8"),
    # python-dotenv warned and skipped the line, and the key of a URL with its quote left open was then told to have
    # no URL beside it
    ".env line not NAME=value": ((b"TINYAGENT_API_URL='https://api.deepseek.com\nTINYAGENT_API_KEY=sk-cli-SECRET-0077\n"
                                  b"TINYAGENT_MODEL=m\n"), "cannot be read from line 1: each line must be NAME=value"),
    # read as not offline: a room's requests would go to the provider
    "offline neither yes nor no": ({**PROVIDER, "TINYAGENT_API_URL": "http://127.0.0.1:1/v1", "TINYAGENT_OFFLINE": "on"},
                                   "TINYAGENT_OFFLINE must be 1 (or true, yes) to force the classroom model"),
    # requests refused it only at the first call: a run stopped as if the model had failed
    "space in the host": ({**PROVIDER, "TINYAGENT_API_URL": "https://api.deep seek.com/v1"},
                          "TINYAGENT_API_URL in the environment must name its host without spaces or control characters"),
}


def configure(name, tmp_path, monkeypatch):
    """Put the named bad settings in the environment, or in a .env in the current folder (tmp_path)."""
    settings, said = BAD_SETTINGS[name]
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TINYAGENT_OFFLINE", raising=False)
    for variable in ("TINYAGENT_API_URL", *PROVIDER):
        monkeypatch.delenv(variable, raising=False)
    if isinstance(settings, bytes):  # a .env in the current folder
        (tmp_path / ".env").write_bytes(settings)
        said = f"error: the .env file {tmp_path / '.env'} {said}"
    else:
        for variable, value in settings.items():
            monkeypatch.setenv(variable, value)
    return said


def run_main(argv, capsys):
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name", BAD_SETTINGS)
@pytest.mark.parametrize("command", [["ask", "hi", "--db", "shop.db"], ["eval", "--task", "refund", "--no-progress"]],
                         ids=["ask", "eval"])
def test_bad_settings_are_one_line_and_exit_2(name, command, tmp_path, monkeypatch, capsys):
    # Each was a traceback (ValueError: Invalid IPv6 URL, UnicodeDecodeError), or with the port a run that stopped
    # at its first call as if the model had failed (exit 1).
    said = configure(name, tmp_path, monkeypatch)
    code, out, err = run_main(command, capsys)
    assert code == 2, (out, err)
    assert len(err.strip().splitlines()) == 1 and said in err, err
    assert "SECRET" not in out + err


@pytest.mark.parametrize("name", BAD_SETTINGS)
def test_the_doctor_reports_bad_settings_as_a_failed_check_and_exits_2(name, tmp_path, monkeypatch, capsys):
    # It exited 1, as for a provider that failed a check, where ask and eval exit 2 for the same settings.
    said = configure(name, tmp_path, monkeypatch).removeprefix("error: ")
    code, out, err = run_main(["doctor"], capsys)
    assert code == 2 and "Traceback" not in err, err
    assert f"settings  FAIL    {said}" in out


def test_serve_names_the_variable_of_a_url_it_cannot_read(tmp_path):
    # serve printed "error: Invalid IPv6 URL", which names nothing to fix.
    env = {**os.environ, **PROVIDER, "TINYAGENT_API_URL": "http://[::1"}
    env.pop("TINYAGENT_OFFLINE", None)
    done = subprocess.run([sys.executable, "-m", "tinyagent", "serve", "--port", "0", "--db", str(tmp_path / "shop.db"),
                           "--session-store", str(tmp_path / "s.db")],
                          check=False, capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: TINYAGENT_API_URL in the environment must write an IPv6 host as an address")
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("command", ["classroom", "serve"])
@pytest.mark.parametrize("host", ["", "  "])
def test_an_empty_host_is_refused_not_read_as_every_network(command, host, capsys):
    # The classroom's server read "" as 0.0.0.0 and listened on every network, printing the LAN's address
    code, _out, err = run_main([command, "--host", host, "--port", "0"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith("error: --host must name an address: 127.0.0.1 (this machine only) or 0.0.0.0")
