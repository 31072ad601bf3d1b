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
which the trial on one account uses too), on a loopback address of its own, with a certificate the hub's CA made
for that address alone (OwnAddressSpawner): the hub and its proxy talk to it over TLS (internal_ssl) and check that
certificate, so another account that binds her port first is refused, and her key is in a copy only her account
can read.

The hub's own services run as system accounts of their own (`service_account`), made with the same useradd, so
that a learner who reaches a service over loopback never reaches a root process. The classroom model listens over
TLS on an address of its own (SERVICE_ADDRESS), with a certificate for that address alone (ServiceCertificate): a
learner's process that binds its port while it is down gets no request from the proxy.
"""

from __future__ import annotations

import asyncio
import io
import ipaddress
import os
import pwd
import stat
import subprocess
import tarfile
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


class OwnAddressSpawner(OwnPortSpawner):
    """OwnPortSpawner whose servers each get, with the hub's internal_ssl, a loopback address of their own and a
    certificate for that address alone.

    Another account can bind a learner's port in the seconds between the hub's choice and her server's bind, or
    after her server stopped, while its route stays until the hub's next poll (30 s); over plain HTTP the hub
    took such an impostor for her server and its proxy sent her requests to it, her token with them. With
    internal_ssl the proxy talks to her server over TLS and checks its certificate, but JupyterHub signs every
    learner's certificate with one CA ("notebooks-ca") and names 127.0.0.1 in each: bob's server's certificate,
    which bob can read, would pass for ada's. So each server listens on an address of its own from 127.0.0.0/8
    (learner_address: every one of them is this machine's loopback), and her certificate names that address only.
    """

    async def address_number(self) -> int:
        """The number her address is made from: here the hub's id of her user, which is enough where every server
        runs as one account anyway (the trial). LearnerAccountSpawner uses her system account's uid instead."""
        return self.user.id

    async def create_certs(self):
        self.ip = learner_address(await self.address_number())
        self.ssl_alt_names = [f"IP:{self.ip}"]
        self.ssl_alt_names_include_local = False  # no 127.0.0.1, no localhost: those would be everyone's
        return await super().create_certs()


def learner_address(number: int) -> str:
    """The loopback address for `number` (from 1): 127.1.0.1, 127.1.0.2, ... 127.255.255.255, so a uid of 1001 is
    127.1.3.233. Never 127.0.0.1, where the hub and its proxy listen, nor 127.0.0.2, the classroom model's."""
    if not 1 <= number <= int(LAST_LEARNER_ADDRESS) - int(FIRST_LEARNER_ADDRESS):
        raise ValueError(f"no loopback address of its own for number {number}")
    return str(FIRST_LEARNER_ADDRESS + number)


FIRST_LEARNER_ADDRESS = ipaddress.IPv4Address("127.1.0.0")
LAST_LEARNER_ADDRESS = ipaddress.IPv4Address("127.255.255.255")
# The classroom model's address (jupyterhub_config.py, section 3): loopback, below every learner's, and not 127.0.0.1,
# which the hub's and the proxy's own certificates name.
SERVICE_ADDRESS = "127.0.0.2"


class ServiceCertificate:
    """A managed service's certificate under internal_ssl, for an address of its own, and its account's copy.

    JupyterHub makes each managed service a certificate when it starts it (Spawner.create_certs, signed by the
    "notebooks-ca" that the proxy trusts for every route's target), but always for 127.0.0.1 and localhost, where
    the hub and the proxy listen too, and only in its own folder, which the service's account cannot read: it has
    no move_certs and no setting of alt names for services. So at each start of the service this makes, with the
    same authority, a certificate for `address` alone, and writes it and its key into `folder` (0700, files 0600)
    as the service's `account`, as LearnerAccountSpawner.move_certs writes a learner's: root only makes the folder,
    in a folder of root's, and a link the service planted in it can only lead its own account somewhere. Without an
    account (the trial on one account) the hub's account writes the copy.

    JupyterHub calls a service's environment values that are functions with its spawner just before it starts the
    process, and only then: `prepare` is one, whose value is the key's path (JUPYTERHUB_SSL_KEYFILE).
    """

    def __init__(self, name: str, address: str, folder: Path, account: str | None = None):
        self.name, self.address, self.folder, self.account = name, address, folder, account
        self.certfile = str(folder / f"{name}.crt")
        self.keyfile = str(folder / f"{name}.key")

    def prepare(self, spawner) -> str:
        from certipy import Certipy

        store = Certipy(store_dir=spawner.internal_certs_location)
        pair = store.create_signed_pair(f"service-{self.name}", "notebooks-ca", alt_names=[f"IP:{self.address}"],
                                        overwrite=True)
        files = {self.certfile: Path(pair["files"]["cert"]).read_bytes(),
                 self.keyfile: Path(pair["files"]["key"]).read_bytes()}
        if self.account is None:
            self.folder.mkdir(mode=0o700, exist_ok=True)
            for path, data in files.items():
                Path(path).touch(mode=0o600)
                Path(path).write_bytes(data)
        else:
            write_private_copies(self.account, self.folder, {Path(path).name: data for path, data in files.items()})
        spawner.log.info("%s: certificate for %s alone in %s", self.name, self.address, self.folder)
        return self.keyfile


class OneAccountSpawner(OwnAddressSpawner, SimpleLocalProcessSpawner):
    """The trial on one account (TINYAGENT_HUB_ONE_ACCOUNT=1): every server as the hub's own account, each in a
    folder of its own (SimpleLocalProcessSpawner), on a port and an address of its own. Its certificates stay in
    the hub's folder (SimpleLocalProcessSpawner.move_certs), which every server there can read anyway."""


class LearnerAccountSpawner(OwnAddressSpawner):
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

    async def address_number(self) -> int:
        """Her system account's uid, made here if it is new (the hub makes her certificate before move_certs and
        start). Not the hub's id of her user: SQLite gives a new user the id of the last one deleted, so a new
        learner would get a deleted learner's address, and a process his account left running could show his
        certificate for it and pass for her server. A uid is his account's while the account exists, and the
        deploy never removes one; an account removed by hand with `userdel` should have its processes killed
        first (`pkill -KILL -u`), as a uid given again is the same owner to the kernel."""
        return (await self._ensure_account()).pw_uid

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

    async def move_certs(self, paths: dict[str, str]) -> dict[str, str]:
        """Her copy of her server's key, its certificate and the CAs it trusts, in ~/.jupyterhub-certs (0700, files
        0600), for JupyterHub's internal_ssl. The hub keeps the originals in its own folder, root's only. Written by
        her own account (tar reading what the hub hands it), like her lessons: a link she planted can only lead her
        own account somewhere, never root. The hub calls this before start(), so her account may be new here."""
        entry = await self._ensure_account()
        archive = private_files_tar({Path(path).name: Path(path).read_bytes() for path in paths.values()},
                                    folder=CERTS_FOLDER)
        await self._run("tar", "--extract", "--no-same-owner", "--file=-", f"--directory={entry.pw_dir}",
                        input=archive, user=entry.pw_uid, group=entry.pw_gid, extra_groups=[],
                        cwd=entry.pw_dir, env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
        return {kind: f"{entry.pw_dir}/{CERTS_FOLDER}/{Path(path).name}" for kind, path in paths.items()}

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
            home.chmod(0o700)  # made so by a useradd older than HOME_MODE (shadow 4.8), which makes it 0755
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

    async def _run(self, *command: str, input: bytes | None = None, **options) -> None:
        process = await asyncio.create_subprocess_exec(
            *command, stdin=asyncio.subprocess.PIPE if input is not None else None,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, **options)
        output, _ = await process.communicate(input)
        text = output.decode(errors="replace").strip()
        if process.returncode != 0:
            raise RuntimeError(f"{command[0]} for {self.user.name} failed ({process.returncode}): {text}")
        if text:
            self.log.info("%s: %s", self.user.name, text)


# Her copy of her server's certificate and key (LearnerAccountSpawner.move_certs), in her home.
CERTS_FOLDER = ".jupyterhub-certs"


def private_files_tar(files: dict[str, bytes], folder: str | None = None) -> bytes:
    """A tar archive of `files` (name: content), each mode 0600, inside `folder` (made 0700) if given: what an
    account's own tar extracts, so that the account itself writes its copy of a key (never root, whom a link it
    planted could lead anywhere)."""
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        if folder is not None:
            entry = tarfile.TarInfo(folder)
            entry.type, entry.mode = tarfile.DIRTYPE, 0o700
            tar.addfile(entry)
        for name, data in files.items():
            member = tarfile.TarInfo(f"{folder}/{name}" if folder is not None else name)
            member.mode, member.size = 0o600, len(data)
            tar.addfile(member, io.BytesIO(data))
    return archive.getvalue()


def write_private_copies(account: str, folder: Path, files: dict[str, bytes]) -> None:
    """`files` (name: content) written into `folder` (0700, files 0600) by `account` itself, for a service of the
    hub's (its certificate and key). Root makes the folder only, in a folder only root writes (HOMES), and hands
    it to the account; the account's own tar writes the files, so a link the account planted there can only lead
    the account itself somewhere, never root. Synchronous: once a start of the service, a few milliseconds."""
    entry = pwd.getpwnam(account)
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass
    made = folder.lstat()
    if not stat.S_ISDIR(made.st_mode) or made.st_uid not in (0, entry.pw_uid):
        raise RuntimeError(f"{folder} is not a folder of root's or {account}'s")
    os.chown(folder, entry.pw_uid, entry.pw_gid)  # not a link (lstat), in a folder only root writes
    folder.chmod(0o700)
    done = subprocess.run(["tar", "--extract", "--no-same-owner", "--file=-", f"--directory={folder}"],
                          input=private_files_tar(files), capture_output=True, user=entry.pw_uid,
                          group=entry.pw_gid, extra_groups=[], cwd=folder,
                          env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}, check=False)
    if done.returncode != 0:
        output = (done.stderr or done.stdout).decode(errors="replace").strip()
        raise RuntimeError(f"tar for {account} failed ({done.returncode}): {output}")


def private_tmp(entry: pwd.struct_passwd) -> str:
    """The learner's own folder for temporary files (TMPDIR), in her home."""
    return f"{entry.pw_dir}/.tmp"


def useradd_command(account: str, comment: str, *, home: Path | None = None) -> list[str]:
    """The useradd command that makes `account`: with a `home`, a learner's (an ordinary account, a uid from
    UID_MIN, that home made, bash); without, a service's (a system account, a uid below UID_MIN, no home folder,
    no login shell)."""
    if home is not None:
        # HOME_MODE: the home is 0700 from the moment it is made. Debian's useradd makes it 0755 (its umask's), and
        # a home set to 0700 only after that was open to every other learner in between: a folder another account
        # opened then can be listed through that opening for as long as it keeps it.
        kind = ["--create-home", "--key", "HOME_MODE=0700", "--home-dir", str(home), "--shell", "/bin/bash"]
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


def learners_paths(runtime: Path, course: Path) -> list[Path]:
    """What every learner's account uses, for runtime_problem: her Python and its site-packages (a .pth file there
    runs in every learner's Python), the course's notebooks and package (the editable install reads them from the
    course), JupyterLab's settings for the room and her server's launcher."""
    here = Path(__file__).resolve().parent
    return [runtime / "bin" / "python", *sorted((runtime / "lib").glob("python3*/site-packages")),
            course / "notebooks", course / "tinyagent", here / "lab-settings" / "overrides.json",
            here / "learner_server.py"]


def runtime_problem(paths: list[Path]) -> str | None:
    """Why an account other than root could not use these paths (each folder on the way must be
    searchable by others, each file readable, programs runnable), or why every account could change them (a
    folder on the way, or the path itself, that others may write), or None if every one is fine."""
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
                if problem := others_may_change(folder, on_the_way=True):
                    return problem
        mode = target.stat().st_mode
        needed = stat.S_IROTH | (stat.S_IXOTH if target.is_dir() or os.access(target, os.X_OK) else 0)
        if mode & needed != needed:
            return (f"other accounts cannot {'run' if needed & stat.S_IXOTH else 'read'} {path} "
                    f"(mode {stat.S_IMODE(mode):04o})")
        if problem := others_may_change(target):
            return problem
    return None


def others_may_change(path: Path, *, on_the_way: bool = False) -> str | None:
    """Why every account could change `path`, in one line, or None. The learners share the runtime and the course: a
    .pth file one of them put in site-packages, or a module she changed, would run in every other learner's Python.
    A folder `on_the_way` to a path may be one that others write if its sticky bit keeps each name its owner's (as
    /tmp): none of them can move the course away. The path itself may not: a new .pth file is enough."""
    mode = path.stat().st_mode
    if not mode & stat.S_IWOTH or (on_the_way and stat.S_ISDIR(mode) and mode & stat.S_ISVTX):
        return None
    return (f"every account can change {path} (mode {stat.S_IMODE(mode):04o}), so a learner could put code there "
            f"that other learners run: chmod o-w {path}")
