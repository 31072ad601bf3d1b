"""deploy/jupyterhub/learner_accounts.py without a hub: the check the classroom hub makes before it starts (can
another account use the learners' Python and the course?), the port each learner's server is told, the accounts
it would make (useradd's arguments, the classroom model's account) and each learner's TMPDIR. Learner accounts
themselves, the service's account, and the ports their servers listen on, are in tests/test_jupyterhub.py."""

from __future__ import annotations

import asyncio
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("jupyterhub")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "deploy" / "jupyterhub"))

from jupyterhub.spawner import LocalProcessSpawner
from learner_accounts import (
    LearnerAccountSpawner,
    OneAccountSpawner,
    OwnPortSpawner,
    ordinary_uids,
    runtime_problem,
    service_account,
    service_account_name,
    useradd_command,
)
from learner_names import is_learner_name

from tests.other_account import needs_root
from tinyagent.hosting import address


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


@pytest.mark.parametrize("writable", ["venv", "site-packages", "python"])
def test_a_runtime_every_account_may_change_is_refused(tmp_path, writable):
    # A `chmod -R 777` to get past "other accounts cannot read": then any learner could put a .pth file in
    # site-packages, or change the course's modules, and every other learner's Python would run her code.
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (tmp_path / "venv" / "bin").mkdir()
    program = tmp_path / "venv" / "bin" / "python"
    program.write_text("#!/bin/sh\n")
    for path in [tmp_path, *tmp_path.rglob("*")]:
        path.chmod(0o755)
    changed = {"venv": tmp_path / "venv", "site-packages": site, "python": program}[writable]
    changed.chmod(0o777)
    problem = runtime_problem([program, site])
    assert problem == (f"every account can change {changed} (mode 0777), so a learner could put code there that "
                       f"other learners run: chmod o-w {changed}"), problem
    # On the way to the runtime, a folder others may write but not rename in (the sticky bit, as /tmp) is fine; not
    # site-packages itself, where a new .pth file is enough.
    changed.chmod(0o1777 if changed.is_dir() else 0o755)
    assert (runtime_problem([program, site]) is None) == (writable != "site-packages")


# -- the port each learner's server is told -------------------------------------------------------------------
def started_on(spawner_class, name: str) -> int:
    """The port a server of `name`'s is told, the start itself left out (no hub, no process)."""
    spawner = spawner_class(user=SimpleNamespace(name=name, url=f"/user/{name}/"))
    return asyncio.run(spawner.start())[1]


@pytest.fixture()
def no_process(monkeypatch):
    async def told(self):
        return (self.ip, self.port)

    monkeypatch.setattr(LocalProcessSpawner, "start", told)
    monkeypatch.setattr(OwnPortSpawner, "_told", {})


def test_each_learners_server_is_told_a_port_below_the_ephemeral_range_of_its_own(no_process):
    ports = {name: started_on(OwnPortSpawner, name) for name in ("ada", "bob", "cy")}
    assert len(set(ports.values())) == 3
    assert all(address.QUIET_PORTS_FROM <= port < address.ephemeral_start() for port in ports.values())
    assert OwnPortSpawner._told == {f"{name}/": port for name, port in ports.items()}
    assert started_on(OneAccountSpawner, "dee") not in ports.values()  # the trial on one account too


def test_a_port_another_learners_server_was_told_is_not_told_again(no_process, monkeypatch):
    bobs = started_on(OwnPortSpawner, "bob")
    spare = address.quiet_port_run(avoid={bobs})
    picks = iter([bobs, spare])  # the first draw is bob's port, free again while his server has not bound it
    monkeypatch.setattr(address.random, "randint", lambda low, high: next(picks))
    assert started_on(OwnPortSpawner, "ada") == spare
    picks = iter([spare])  # a learner's own port may come back to her at her next start
    assert started_on(OwnPortSpawner, "ada") == spare


def test_the_ordinary_uids_are_read_from_login_defs(tmp_path):
    defs = tmp_path / "login.defs"
    defs.write_text("# comment\nUID_MIN\t\t\t 2000\n#UID_MAX 9\nUID_MAX 30000 # ours\nSYS_UID_MIN 100\n")
    assert ordinary_uids(defs) == range(2000, 30001)
    assert ordinary_uids(tmp_path / "none") == range(1000, 60001)


@pytest.mark.parametrize(("name", "uid"), [("root", 0), ("daemon", 1), ("nobody", 65534)])
def test_a_system_account_is_never_a_learners(monkeypatch, name, uid):
    # With an empty prefix (PAM), the learner `root` was the account root: her server would have run as uid 0.
    entry = pwd.struct_passwd((name, "x", uid, uid, "", "/root", "/bin/sh"))
    monkeypatch.setattr(pwd, "getpwnam", lambda account: entry)
    spawner = LearnerAccountSpawner(user=SimpleNamespace(name=name, url=f"/user/{name}/"), account_prefix="")
    with pytest.raises(RuntimeError, match=f"the system account {name} \\(uid {uid}\\) is not an ordinary user's"):
        asyncio.run(spawner._ensure_account())


def test_an_ordinary_account_that_exists_is_the_learners(monkeypatch):
    entry = pwd.struct_passwd(("ada", "x", 1001, 1001, "", "/home/ada", "/bin/bash"))
    monkeypatch.setattr(pwd, "getpwnam", lambda account: entry)
    spawner = LearnerAccountSpawner(user=SimpleNamespace(name="ada", url="/user/ada/"), account_prefix="")
    assert asyncio.run(spawner._ensure_account()) == entry


def test_each_learners_temporary_files_go_to_a_folder_in_her_home(monkeypatch):
    # Not the shared /tmp, where another learner could make /tmp/ipykernel_<pid> (ipykernel's cell files) first.
    entry = pwd.struct_passwd(("jupyter-ada", "x", 1001, 1001, "", "/home/jupyter-ada", "/bin/bash"))
    monkeypatch.setattr(pwd, "getpwnam", lambda account: entry)
    spawner = LearnerAccountSpawner(user=SimpleNamespace(name="ada", url="/user/ada/"))
    assert spawner.user_env({})["TMPDIR"] == "/home/jupyter-ada/.tmp"


# -- the accounts useradd makes: a learner's, and the classroom model's -----------------------------------------
def test_a_learner_gets_an_ordinary_account_and_a_service_a_system_account_with_no_home_or_login():
    assert useradd_command("jupyter-ada", "tinyagent learner ada", home=Path("/home/jupyter-ada")) == [
        "useradd", "--create-home", "--key", "HOME_MODE=0700", "--home-dir", "/home/jupyter-ada", "--shell", "/bin/bash",
        "--user-group", "--comment", "tinyagent learner ada", "jupyter-ada"]
    assert useradd_command("jupyter-_classroom", "tinyagent classroom model") == [
        "useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin",
        "--user-group", "--comment", "tinyagent classroom model", "jupyter-_classroom"]


@needs_root
@pytest.mark.skipif(shutil.which("useradd") is None, reason="no useradd here")
def test_a_learners_home_is_hers_alone_from_the_moment_useradd_makes_it(tmp_path):
    # The real useradd, told to make its accounts in a copy of /etc under tmp_path (--prefix): this machine's own
    # accounts stay as they are. A home made 0755 and set to 0700 after was open to every account in between, and a
    # folder another account opened then can still be listed through that opening.
    (tmp_path / "home").mkdir()
    shutil.copytree("/etc/skel", tmp_path / "etc" / "skel", symlinks=True)
    for name in ("passwd", "group", "shadow", "gshadow", "login.defs"):
        shutil.copy2(Path("/etc") / name, tmp_path / "etc" / name)
    command = useradd_command("jupyter-ada", "tinyagent learner ada", home=Path("/home/jupyter-ada"))
    subprocess.run([command[0], "--prefix", str(tmp_path), *command[1:]], check=True, capture_output=True)
    assert stat.S_IMODE((tmp_path / "home" / "jupyter-ada").stat().st_mode) == 0o700


@pytest.mark.parametrize("prefix", ["jupyter-", "", "t1a2b-", "_"])
def test_no_learners_account_is_named_as_the_services(prefix):
    account = service_account_name(prefix, "classroom")
    assert account == f"{prefix}_classroom"
    # A learner's account is prefix + a learner name; what follows the prefix here is never one.
    assert not is_learner_name(account.removeprefix(prefix))


def test_the_services_account_is_made_when_missing(monkeypatch):
    made = []
    entry = pwd.struct_passwd(("jupyter-_classroom", "x", 998, 998, "", "/nonexistent", "/usr/sbin/nologin"))

    def getpwnam(account):
        if not made:
            raise KeyError(account)
        return entry

    monkeypatch.setattr(pwd, "getpwnam", getpwnam)
    monkeypatch.setattr(subprocess, "run", lambda command, **options: made.append(command) or
                        subprocess.CompletedProcess(command, 0, "", ""))
    assert service_account("jupyter-_classroom", "tinyagent classroom model") == entry
    assert made == [useradd_command("jupyter-_classroom", "tinyagent classroom model")]
    made.clear()
    monkeypatch.setattr(subprocess, "run", lambda command, **options: made.append(command) or
                        subprocess.CompletedProcess(command, 9, "", "useradd: group '_classroom' exists\n"))
    with pytest.raises(RuntimeError, match=r"^useradd _classroom failed \(9\): useradd: group '_classroom' exists$"):
        service_account("_classroom", "tinyagent classroom model")


@pytest.mark.parametrize(("uid", "used"), [(998, True), (65534, True), (0, False), (1001, False)])
def test_an_account_the_service_would_run_as_is_used_only_if_a_system_account_not_root(monkeypatch, uid, used):
    # Root, or an ordinary user's (a learner's, a person's): the service must not run as either.
    entry = pwd.struct_passwd(("_classroom", "x", uid, uid, "", "/nonexistent", "/usr/sbin/nologin"))
    monkeypatch.setattr(pwd, "getpwnam", lambda account: entry)
    monkeypatch.setattr(subprocess, "run", lambda *args, **kwargs: pytest.fail("no useradd for an account that exists"))
    if used:
        assert service_account("_classroom", "tinyagent classroom model") == entry
    else:
        with pytest.raises(RuntimeError, match=f"the account _classroom \\(uid {uid}\\) is not a system account"):
            service_account("_classroom", "tinyagent classroom model")
