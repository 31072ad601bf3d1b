"""The check the classroom hub makes before it starts (deploy/jupyterhub/learner_accounts.py): can another
account use the learners' Python and the course? Learner accounts themselves are in tests/test_jupyterhub.py."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("jupyterhub")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "deploy" / "jupyterhub"))

from learner_accounts import runtime_problem


@pytest.fixture()
def tmp_path():
    """A folder straight under /tmp (pytest's own lies in a 0700 folder, which would fail every check)."""
    folder = Path(tempfile.mkdtemp(prefix="tinyagent-runtime-check-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_runtime_every_account_can_use_passes(tmp_path):
    tmp_path.chmod(0o755)
    program = tmp_path / "python"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    (tmp_path / "notebooks").mkdir(mode=0o755)
    assert runtime_problem([program, tmp_path / "notebooks"]) is None


def test_a_folder_others_cannot_enter_is_named_in_one_line(tmp_path):
    private = tmp_path / "root-only"
    (private / "venv" / "bin").mkdir(parents=True)
    program = private / "venv" / "bin" / "python"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    tmp_path.chmod(0o755)
    private.chmod(0o700)
    problem = runtime_problem([program])
    assert problem.startswith(f"other accounts cannot reach {program}: {private} is mode 0700"), problem
    assert "\n" not in problem


def test_a_link_to_an_interpreter_others_cannot_reach_is_refused(tmp_path):
    tmp_path.chmod(0o755)
    hidden = tmp_path / "pyenv"
    hidden.mkdir(mode=0o700)
    real = hidden / "python3.11"
    real.write_text("#!/bin/sh\n")
    real.chmod(0o755)
    link = tmp_path / "python"
    link.symlink_to(real)
    assert f"{hidden} is mode 0700" in runtime_problem([link])


def test_a_file_others_cannot_read_or_a_missing_runtime_is_refused(tmp_path):
    tmp_path.chmod(0o755)
    secret = tmp_path / "overrides.json"
    secret.write_text("{}")
    secret.chmod(0o600)
    assert runtime_problem([secret]) == f"other accounts cannot read {secret} (mode 0600)"
    assert "make hub-setup" in runtime_problem([tmp_path / "nowhere" / "python"])
