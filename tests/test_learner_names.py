"""Which names the classroom hub accepts (deploy/jupyterhub/learner_names.py); the hub itself refusing a
name at its login form is in tests/test_jupyterhub.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HUB_DIR = ROOT / "deploy" / "jupyterhub"
sys.path.insert(0, str(HUB_DIR))

from learner_names import LearnerListError, is_learner_name, read_learners, typed_name


@pytest.mark.parametrize("name", ["ada", "bob.smith", "learner_007", "li-wei", "x", "a" * 24, "3d"])
def test_names_a_person_would_type_are_accepted(name):
    assert is_learner_name(name)


@pytest.mark.parametrize("name", [
    "ada\nteacher", "ada\n", "bo\x07b", "ada\x00", "ada\x1b[31m", "ada\u2028b", "ada\x85", "a\tb", "a b",
    "", ".", "..", "-rf", ".ada", "_ada", "a/b", "../root", "a" * 25, "Ada", "Ådne", "李雷", "ada;rm",
])
def test_anything_else_is_refused(name):
    assert not is_learner_name(name)


def test_learners_txt_is_read_one_name_a_line(tmp_path):
    listed = tmp_path / "learners.txt"
    listed.write_text("# the morning class\nada\n  Bob  \r\n\ncleo.d\n", encoding="utf-8")
    assert read_learners(listed) == {"ada", "bob", "cleo.d"}


@pytest.mark.parametrize("line", ["bo\x0bb", "bo\x1cb", "eve\x85", "ada\u2028teacher", "two words", "a" * 25, "x/y"])
def test_a_bad_line_of_learners_txt_is_one_line_naming_file_and_line(tmp_path, line):
    listed = tmp_path / "learners.txt"
    listed.write_text(f"ada\n{line}\nbob\n", encoding="utf-8")
    with pytest.raises(LearnerListError) as bad:
        read_learners(listed)
    message = str(bad.value)
    assert message.startswith(f"{listed}:2: ") and "\n" not in message and "\x0b" not in message


@pytest.mark.parametrize(("line", "shown"), [("\u212aen", "'\u212aen'"), ("ada\u00a0", "'ada\\xa0'")],
                         ids=["kelvin-sign", "no-break-space"])
def test_a_name_that_is_no_ascii_is_refused_as_written(tmp_path, line, shown):
    # The Kelvin sign lower-cases to an ASCII k, so the line was taken as `ken`; a no-break space was refused, but
    # the message showed 'ada', which looks right.
    listed = tmp_path / "learners.txt"
    listed.write_text(f"ada\n{line}\n", encoding="utf-8")
    with pytest.raises(LearnerListError) as bad:
        read_learners(listed)
    assert str(bad.value).startswith(f"{listed}:2: {shown} is not a learner name")


class _Form:
    """What typed_name reads of a login request: the form's raw fields."""

    def __init__(self, *usernames: bytes):
        self.request = type("Request", (), {"body_arguments": {"username": list(usernames)}})()


@pytest.mark.parametrize(("fields", "name"), [
    ((b"ada",), "ada"), ((b"Ada ",), "ada"), ((b"ada\x00",), "ada\x00"), (("\u212aen".encode(),), ""),
    ((b"ada", b"ada\x00"), ""), ((b"ada", b"bob"), ""),
], ids=["plain", "capital-and-space", "control", "kelvin-sign", "twice-one-bad", "twice"])
def test_the_login_form_name_is_read_as_jupyterhub_will_take_it(fields, name):
    # JupyterHub signs in the last `username` field; this checked the first, so `ada` then `ada\x00` passed.
    assert typed_name(_Form(*fields), {}) == name


def test_learners_txt_that_is_not_text_is_refused(tmp_path):
    listed = tmp_path / "learners.txt"
    listed.write_bytes(b"ada\n\xff\xfe\n")
    with pytest.raises(LearnerListError, match="not UTF-8"):
        read_learners(listed)


def test_make_classroom_hub_refuses_a_bad_learners_txt_before_starting(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    (state / "learners.txt").write_text("ada\nbob\x07\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TINYAGENT_", "JUPYTER"))}
    env.update(TINYAGENT_HUB_STATE=str(state), TINYAGENT_HUB_PORT="1")  # nothing may listen anyway
    done = subprocess.run([sys.executable, str(HUB_DIR / "classroom_hub.py")], env=env, check=False,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr == f"error: {state / 'learners.txt'}:2: 'bob\\x07' is not a learner name " \
        "(letters, digits, '.', '_' or '-', starting with a letter or digit, at most 24 characters)\n"
    assert not (state / "jupyterhub.log").exists()


@pytest.mark.parametrize(("ip", "shown"), [("0.0.0.0", "network"), ("127.0.0.1", "http://127.0.0.1:8123")])
def test_the_hubs_banner_shows_an_address_the_learners_can_open(tmp_path, ip, shown):
    # Listening on every network, the banner said "Open http://127.0.0.1:8000": each learner's own machine.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TINYAGENT_", "JUPYTER"))}
    env.update(TINYAGENT_HUB_STATE=str(tmp_path), TINYAGENT_HUB_IP=ip, TINYAGENT_HUB_PORT="8123")
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import classroom_hub as hub; "
            "print(hub.shown_url('http://127.0.0.1:8123'))")
    done = subprocess.run([sys.executable, "-c", code, str(HUB_DIR)], env=env, check=True, capture_output=True,
                          text=True, timeout=120)
    from tinyagent.hosting.address import this_machine_address

    expected = f"http://{this_machine_address()}:8123" if shown == "network" else shown
    assert done.stdout.strip() == expected
