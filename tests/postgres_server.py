"""A throwaway PostgreSQL server for tests: initdb into a temporary folder, a free loopback port, stopped after.

    with throwaway_postgres() as server:        # skips (or, under CI, fails) when PostgreSQL is not installed
        store = PostgresSessionStore(server.new_database())

Debian's `postgresql` package puts its binaries in /usr/lib/postgresql/<version>/bin (not on PATH); .ci/run
installs it where it is missing. initdb, pg_ctl and postgres refuse to run as root, so as root they run as the
`postgres` user, in a folder handed over to it. The server is stopped in `finally`. A test process killed
outright (SIGKILL) leaves the postmaster running, because pg_ctl daemonizes it: each folder records the pid of
the process that made it, and the next start stops every server whose maker is gone, by its data folder.
"""

from __future__ import annotations

import contextlib
import glob
import os
import secrets
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tinyagent.hosting.address import quiet_port_run

PREFIX = "tinyagent-pg-"
PATIENCE = 120  # seconds for initdb and pg_ctl on a loaded machine (they take about a second when quiet)


def postgres_bin() -> Path | None:
    """The folder holding initdb and pg_ctl: Debian's newest version, or PATH; None when not installed."""
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version, reverse=True):
        if os.access(Path(candidate) / "initdb", os.X_OK) and os.access(Path(candidate) / "pg_ctl", os.X_OK):
            return Path(candidate)
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb and shutil.which("pg_ctl") else None


def _version(path: str) -> tuple[int, ...]:
    return tuple(int(part) for part in Path(path).parent.name.split(".") if part.isdigit())


def require_postgres() -> Path:
    """The binaries' folder; skip the test where PostgreSQL or psycopg is missing, but fail under CI."""
    missing = []
    folder = postgres_bin()
    if folder is None:
        missing.append("PostgreSQL's initdb and pg_ctl (Debian: apt-get install postgresql)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        missing.append("psycopg (make setup installs the postgres extra)")
    if missing:
        message = "PostgreSQL tests need " + " and ".join(missing)
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the PostgreSQL tests: {message}; .ci/run installs them", pytrace=False)
        pytest.skip(message)
    return folder


class PostgresServer:
    """One running server: `url` connects as the superuser with a password (over TCP, scram-sha-256)."""

    def __init__(self, folder: Path, port: int, password: str, bin_dir: Path):
        self.folder, self.port, self.password, self.bin_dir = folder, port, password, bin_dir
        self.url = f"postgresql://postgres:{password}@127.0.0.1:{port}/postgres"
        self._databases = 0

    def new_database(self) -> str:
        """A fresh empty database on this server; returns its URL (so each test starts clean)."""
        import psycopg

        self._databases += 1
        name = f"test_{self._databases}_{secrets.token_hex(4)}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql://postgres:{self.password}@127.0.0.1:{self.port}/{name}"

    def stop(self, keep_data: bool = False) -> None:
        """Stop the server; with `keep_data`, its folder stays, for `start()` to bring it back."""
        stop_server(self.folder, self.bin_dir, keep_data=keep_data)

    def start(self) -> None:
        """Start it again after `stop()`, on the same port with the same data (a database coming back)."""
        _as_postgres([self.bin_dir / "pg_ctl", "-D", self.folder / "data", "-l", self.folder / "server.log", "-w",
                      "-t", str(PATIENCE), "-o", _options(self.folder, self.port), "start"])


@contextlib.contextmanager
def throwaway_postgres() -> Iterator[PostgresServer]:
    bin_dir = require_postgres()
    stop_leftover_servers(bin_dir)
    folder = Path(tempfile.mkdtemp(prefix=PREFIX))
    (folder / "owner.pid").write_text(str(os.getpid()))
    try:
        password = secrets.token_urlsafe(12)
        (folder / "sock").mkdir()
        (folder / "pwfile").write_text(password + "\n")
        _hand_over(folder)
        _as_postgres(
            [bin_dir / "initdb", "-D", folder / "data", "-U", "postgres", f"--pwfile={folder / 'pwfile'}",
             "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"],
        )
        for attempt in range(5):  # another process may take the free port between our look and the start
            port = quiet_port_run()
            started = _as_postgres(
                [bin_dir / "pg_ctl", "-D", folder / "data", "-l", folder / "server.log", "-w", "-t", str(PATIENCE),
                 "-o", _options(folder, port), "start"],
                check=attempt == 4,
            )
            if started.returncode == 0:
                break
        yield PostgresServer(folder, port, password, bin_dir)
    finally:
        stop_server(folder, bin_dir)


def _options(folder: Path, port: int) -> str:
    return (f"-p {port} -k {folder / 'sock'} -c listen_addresses=127.0.0.1 -c fsync=off"
            " -c synchronous_commit=off -c full_page_writes=off")


def stop_server(folder: Path, bin_dir: Path, keep_data: bool = False) -> None:
    """Stop the server whose data folder is `folder / "data"` (if it runs), and delete the folder (unless
    `keep_data`)."""
    data = folder / "data"
    if (data / "postmaster.pid").exists():
        # "fast" when the data is kept: "immediate" would need crash recovery at the next start.
        mode = "fast" if keep_data else "immediate"
        _as_postgres([bin_dir / "pg_ctl", "-D", data, "-m", mode, "-w", "-t", str(PATIENCE), "stop"], check=False)
    if not keep_data:
        shutil.rmtree(folder, ignore_errors=True)


def stop_leftover_servers(bin_dir: Path) -> list[Path]:
    """Stop the servers that tests killed outright left running: their maker's pid is no longer alive."""
    stopped = []
    for candidate in Path(tempfile.gettempdir()).glob(f"{PREFIX}*"):
        if not _ours(candidate):  # another account's folder of that name: pg_ctl would signal the pid it names
            continue
        try:
            owner = int((candidate / "owner.pid").read_text())
        except (OSError, ValueError):
            continue
        if not _alive(owner):
            stop_server(candidate, bin_dir)
            stopped.append(candidate)
    return stopped


def _ours(folder: Path) -> bool:
    """Whether `folder` is one these tests made: a real folder (no link), owned by this account or, as root, by the
    postgres account it was handed to (_hand_over). /tmp is every account's, so another may have made one too."""
    try:
        info = folder.lstat()
    except OSError:
        return False
    owners = {os.geteuid()}
    if os.geteuid() == 0:
        import pwd

        owners.add(pwd.getpwnam("postgres").pw_uid)
    return stat.S_ISDIR(info.st_mode) and info.st_uid in owners


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _hand_over(folder: Path) -> None:
    """As root, give the folder to the postgres user (initdb refuses to run as root)."""
    if os.geteuid() != 0:
        return
    import pwd

    account = pwd.getpwnam("postgres")
    for path in (folder, *folder.rglob("*")):
        os.chown(path, account.pw_uid, account.pw_gid)


def _as_postgres(command: list, check: bool = True) -> subprocess.CompletedProcess:
    """Run a PostgreSQL command, as the postgres user when we are root; output captured for the error."""
    extra = {"user": "postgres", "group": "postgres", "extra_groups": []} if os.geteuid() == 0 else {}
    done = subprocess.run([str(part) for part in command], check=False, capture_output=True, text=True, cwd="/",
                          timeout=PATIENCE * 2, **extra)
    if check and done.returncode != 0:
        raise RuntimeError(f"{Path(str(command[0])).name} failed ({done.returncode}): {done.stderr or done.stdout}")
    return done
