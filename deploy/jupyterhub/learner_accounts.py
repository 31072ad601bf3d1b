"""Each learner a system account of their own, as The Littlest JupyterHub does (jupyterhub_config.py).

The learner `ada` signs in to the hub; her server runs as the system account `jupyter-ada` (made with
`useradd` the first time she starts it), in her own home, `/home/jupyter-ada`, mode 0700. So code in her
kernel cannot open another learner's files, nor the hub's state (its database, cookie secret and the
passwords: a root-owned folder, mode 0700). The hub runs as root to start servers as other accounts.

Her copy of the course (tinyagent/hosting/lesson_copies.py) is made by her own account, so every file is hers
and nothing the hub writes can be steered by a link she planted in her home.

The learners' Python (their JupyterLab, kernels and the course package) must be usable by every
account: `runtime_problem()` says why it is not, in one line, before the hub starts.

Her server and kernels keep their temporary files in `~/.tmp` (TMPDIR), mode 0700, made by her account before
the server starts: not in the shared /tmp, where another learner could make a path first (ipykernel's
`/tmp/ipykernel_<pid>/`, jupyter_server's `/tmp/jupyter_checkpoints/`) and read or replace what she writes there.

Each learner's server listens on a port of its own that no other learner's server was told (OwnPortSpawner,
which the trial on one account uses too).

The hub's own services run as system accounts of their own (`service_account`), made with the same useradd, so
that a learner who reaches a service over loopback never reaches a root process.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import stat
import subprocess
from pathlib import Path
from typing import ClassVar

from jupyterhub.spawner import LocalProcessSpawner, SimpleLocalProcessSpawner, set_user_setuid
from traitlets import Unicode

from tinyagent.hosting.address import quiet_port_run


class OwnPortSpawner(LocalProcessSpawner):
    """LocalProcessSpawner that tells each learner's server a port no other learner's server was told.

    JupyterHub's own choice (bind to port 0, close, tell the server the port) can tell two learners who start at
    once the same port, and the second server to bind it fails: "address already in use", a learner without a
    lab. Picked that way for 45 learners before any server had bound its port, as when a room starts together,
    two got the same port in 6 to 7% of rooms (benchmarks/learner_ports.py). An outgoing connection can take
    such a port too before the server binds it, seconds later. Here the port comes from below the kernel's
    ephemeral range (`quiet_port_run`), and none is one another learner's server was told.
    """

    # Each learner's server (user/name) -> the port it was last told. The spawners start on the hub's one event
    # loop and nothing is awaited between choosing a port and noting it, so no two choose at the same time.
    _told: ClassVar[dict[str, int]] = {}

    async def start(self):
        key = f"{self.user.name}/{self.name}"
        others = {port for server, port in self._told.items() if server != key}
        self.port = quiet_port_run(host=self.ip or "0.0.0.0", avoid=others)
        self._told[key] = self.port
        return await super().start()


class OneAccountSpawner(OwnPortSpawner, SimpleLocalProcessSpawner):
    """The trial on one account (TINYAGENT_HUB_ONE_ACCOUNT=1): every server as the hub's own account, each in a
    folder of its own (SimpleLocalProcessSpawner), on a port of its own."""


class LearnerAccountSpawner(OwnPortSpawner):
    """LocalProcessSpawner, with the learner's account made on first start and their lessons copied."""

    account_prefix = Unicode("jupyter-", config=True, help="system account name = prefix + hub user name")
    homes = Unicode("/home", config=True, help="the folder the learners' home folders are made in")
    course_notebooks = Unicode(config=True, help="the course's notebooks folder, copied into each home")
    runtime_python = Unicode(config=True, help="the learners' Python, which copies the lessons as them")

    # useradd locks /etc/passwd: a room starting at once would otherwise see "cannot lock /etc/passwd".
    _accounts_lock = asyncio.Lock()

    @property
    def account(self) -> str:
        return self.account_prefix + self.user.name

    def make_preexec_fn(self, name):
        return set_user_setuid(self.account)  # and chdir to its home

    def user_env(self, env):
        entry = pwd.getpwnam(self.account)
        env.update(USER=self.account, HOME=entry.pw_dir, SHELL=entry.pw_shell or "/bin/bash")
        # The kernels' sockets (get_args) live here; a Unix socket's path may be at most 107 bytes, and
        # ~/.local/share/jupyter/runtime/kernel-<uuid>-ipc-1 would pass that for a 24-character name.
        env["JUPYTER_RUNTIME_DIR"] = f"{entry.pw_dir}/.run"
        env["TMPDIR"] = private_tmp(entry)  # tempfile.gettempdir() in the server and every kernel
        return env

    def get_args(self):
        # Kernels talk to their server over Unix sockets in the learner's own folder, not over TCP ports
        # on 127.0.0.1: in a room of 45 starting at once, two servers picked the same free port, the
        # kernel died with "Address already in use" five restarts running and its websocket closed;
        # and a TCP port is open to every account on the machine.
        return [*super().get_args(), "--KernelManager.transport=ipc"]

    async def start(self):
        entry = await self._ensure_account()
        await self._make_private_tmp(entry)
        await self._copy_lessons(entry)
        return await super().start()

    async def _ensure_account(self) -> pwd.struct_passwd:
        async with self._accounts_lock:
            try:
                entry = pwd.getpwnam(self.account)
            except KeyError:
                pass
            else:
                # With an empty account_prefix (PAM) the learner `root` would be the account root: an account that
                # exists is a learner's only if it is an ordinary one, as useradd makes them.
                if entry.pw_uid not in ordinary_uids():
                    raise RuntimeError(f"{self.user.name}: the system account {self.account} (uid {entry.pw_uid}) "
                                       "is not an ordinary user's; no learner's server runs as it")
                return entry
            home = Path(self.homes) / self.account
            await self._run(*useradd_command(self.account, f"tinyagent learner {self.user.name}", home=home))
            home.chmod(0o700)  # Debian's useradd makes it 0755: readable by every other learner
            self.log.info("%s: made the system account %s, home %s", self.user.name, self.account, home)
            return pwd.getpwnam(self.account)

    async def _make_private_tmp(self, entry: pwd.struct_passwd) -> None:
        # Made (or set back to 0700) by her own account, as her lessons are copied: a link she planted in her
        # home can then only lead her own account somewhere, never the hub's root.
        await self._run("install", "-d", "--mode=0700", private_tmp(entry),
                        user=entry.pw_uid, group=entry.pw_gid, extra_groups=[], cwd=entry.pw_dir,
                        env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})

    async def _copy_lessons(self, entry: pwd.struct_passwd) -> None:
        await self._run(self.runtime_python, "-m", "tinyagent.hosting.lesson_copies", self.course_notebooks,
                        str(Path(entry.pw_dir) / "notebooks"),
                        user=entry.pw_uid, group=entry.pw_gid, extra_groups=[], cwd=entry.pw_dir,
                        env={"PATH": "/usr/bin:/bin", "HOME": entry.pw_dir, "LANG": "C.UTF-8"})

    async def _run(self, *command: str, **options) -> None:
        process = await asyncio.create_subprocess_exec(
            *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, **options)
        output, _ = await process.communicate()
        text = output.decode(errors="replace").strip()
        if process.returncode != 0:
            raise RuntimeError(f"{command[0]} for {self.user.name} failed ({process.returncode}): {text}")
        if text:
            self.log.info("%s: %s", self.user.name, text)


def private_tmp(entry: pwd.struct_passwd) -> str:
    """The learner's own folder for temporary files (TMPDIR), in her home."""
    return f"{entry.pw_dir}/.tmp"


def useradd_command(account: str, comment: str, *, home: Path | None = None) -> list[str]:
    """The useradd command that makes `account`: with a `home`, a learner's (an ordinary account, a uid from
    UID_MIN, that home made, bash); without, a service's (a system account, a uid below UID_MIN, no home folder,
    no login shell)."""
    if home is not None:
        kind = ["--create-home", "--home-dir", str(home), "--shell", "/bin/bash"]
    else:
        kind = ["--system", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin"]
    return ["useradd", *kind, "--user-group", "--comment", comment, account]


def service_account_name(prefix: str, service: str) -> str:
    """The system account a service of the hub runs as: the learners' account prefix, `_`, the service's name
    (`jupyter-_classroom`). No learner's account is ever named so: a learner name never starts with `_`
    (learner_names.PATTERN), whatever the prefix, empty included."""
    return f"{prefix}_{service}"


def service_account(account: str, comment: str) -> pwd.struct_passwd:
    """`account`, a system account for one of the hub's services, made with useradd if it is missing.

    An account of that name that exists is used only if it is a system account (not root, a uid outside
    UID_MIN..UID_MAX): the service must never run as root, nor as a person's or a learner's account, whose
    files it could then read and write."""
    try:
        entry = pwd.getpwnam(account)
    except KeyError:
        made = subprocess.run(useradd_command(account, comment), capture_output=True, text=True, check=False)
        if made.returncode != 0:
            raise RuntimeError(f"useradd {account} failed ({made.returncode}): {made.stderr.strip()}") from None
        return pwd.getpwnam(account)
    if entry.pw_uid == 0 or entry.pw_uid in ordinary_uids():
        raise RuntimeError(f"the account {account} (uid {entry.pw_uid}) is not a system account of its own; "
                           "remove it or choose another TINYAGENT_HUB_ACCOUNT_PREFIX")
    return entry


def ordinary_uids(login_defs: Path = Path("/etc/login.defs")) -> range:
    """The uids useradd gives ordinary accounts: UID_MIN to UID_MAX in login.defs (1000 to 60000 if unset)."""
    bounds = {"UID_MIN": 1000, "UID_MAX": 60000}
    try:
        lines = login_defs.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    for line in lines:
        words = line.partition("#")[0].split()
        if len(words) == 2 and words[0] in bounds and words[1].isascii() and words[1].isdigit():
            bounds[words[0]] = int(words[1])
    return range(bounds["UID_MIN"], bounds["UID_MAX"] + 1)


def runtime_problem(paths: list[Path]) -> str | None:
    """Why an account other than root could not use these paths (each folder on the way must be
    searchable by others, each file readable, programs runnable), or None if every one is fine."""
    for path in paths:
        if not path.exists():
            return f"{path} does not exist (make hub-setup builds the learners' runtime)"
        target = path.resolve()  # a venv's python is a link to the interpreter: check the real file too
        for checked in dict.fromkeys([path, target]):
            for folder in reversed(checked.parents):
                if not folder.stat().st_mode & stat.S_IXOTH:
                    return (f"other accounts cannot reach {path}: {folder} is mode "
                            f"{stat.S_IMODE(folder.stat().st_mode):04o}; put the course where every account "
                            "can read it (for example under /opt or /srv), or set TINYAGENT_HUB_ONE_ACCOUNT=1")
        mode = target.stat().st_mode
        needed = stat.S_IROTH | (stat.S_IXOTH if target.is_dir() or os.access(target, os.X_OK) else 0)
        if mode & needed != needed:
            return (f"other accounts cannot {'run' if needed & stat.S_IXOTH else 'read'} {path} "
                    f"(mode {stat.S_IMODE(mode):04o})")
    return None
