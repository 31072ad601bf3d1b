"""`python -m tinyagent serve` as a subprocess for the tests: any free port, readiness, and a kill on the way out.

    with serve_process(tmp_path, "--workers", "2", model_url=room.chat_url) as service:
        requests.post(service.url + "/agent/invoke", json={"query": "..."})

With `model_url` the service talks to that classroom server (one the test started, usually paced, so runs take
seconds and can be watched); without it, to its own offline classroom model. `script` runs another program in
place of `python -m tinyagent serve` (tests/serving_with_a_broken_tool.py), with the same options.
`as_another_account(service, "POST", "/agent/invoke", {...})` sends it a request from a program of another account
of this machine (as root: a child that becomes uid 65534), as another learner on the course's JupyterHub would.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import requests

from tests.conftest import ServerProcess
from tests.other_account import OTHER_UID, run_as_another_account

NOW = "2026-06-30T19:05:23"
PATIENCE = 120  # seconds to become ready on a loaded machine (about half a second when quiet)


@dataclass
class ServiceProcess:
    url: str
    server: ServerProcess
    folder: Path  # where its shop (shop.sqlite3) and, unless told otherwise, its sessions live

    @property
    def process(self):
        return self.server.process

    def health(self) -> dict:
        return requests.get(self.url + "/health", timeout=30).json()

    def output(self) -> str:
        return self.server.output()

    def refunds(self) -> list[tuple[str, str]]:
        """(refund_id, order_id) of every refund in the service's shop: what the runs really wrote."""
        with contextlib.closing(sqlite3.connect(self.folder / "shop.sqlite3")) as db:
            return db.execute("SELECT refund_id, order_id FROM refunds ORDER BY refund_id").fetchall()

    def open_descriptors(self) -> int:
        return len(os.listdir(f"/proc/{self.process.pid}/fd"))

    def open_sockets(self) -> int:
        """Its descriptors that are sockets: the connections it holds, its listening socket, its loop's own."""
        folder = f"/proc/{self.process.pid}/fd"
        links = []
        for descriptor in os.listdir(folder):
            with contextlib.suppress(FileNotFoundError):  # closed since it was listed
                links.append(os.readlink(f"{folder}/{descriptor}"))
        return sum(link.startswith("socket:") for link in links)


def service_environment(model_url: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TINYAGENT_")}
    if model_url is None:
        env["TINYAGENT_OFFLINE"] = "1"
    else:
        env.update(TINYAGENT_API_URL=model_url, TINYAGENT_API_KEY="no-key-needed", TINYAGENT_MODEL="classroom")
    return env


@contextlib.contextmanager
def serve_process(folder: Path, *options: str, model_url: str | None = None, script: Path | None = None,
                  ignore_sigint: bool = False) -> Iterator[ServiceProcess]:
    """The service on a free port (--port 0: it prints the one it got), ready; killed on the way out."""
    defaults = ["--port", "0", "--now", NOW, "--db", str(folder / "shop.sqlite3")]
    if "--session-store" not in options:
        defaults += ["--session-store", str(folder / "sessions.sqlite3")]
    code = script.read_text(encoding="utf-8") if script else None
    args = [*defaults, *options] if script else ["serve", *defaults, *options]
    with ServerProcess(*args, code=code, ignore_sigint=ignore_sigint, env=service_environment(model_url)) as server:
        banner = server.wait_for_line("tinyagent service on ", PATIENCE)
        url = re.search(r"http://[^/\s]+", banner).group(0)
        try:
            yield ServiceProcess(url, server, folder)
        finally:
            # SIGTERM first: with --workers, the supervisor stops its workers (a SIGKILL would orphan them,
            # and they would hold its output pipes open).
            if server.process.poll() is None:
                server.stop(signal.SIGTERM)


# What another account's program sends (tests/other_account.py says why it becomes that account after its imports): a
# request with the address it connects to as its host, and no forwarding header, as a person at this machine would
# send it. As root, the child becomes `uid` (by default 65534, nobody); as root with uid 0, it stays this account.
REQUEST_AS_ANOTHER_ACCOUNT = """
import encodings.idna, json, socket, sys
address, port, method, path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
body = sys.argv[5].encode()
become_another_account()
with socket.create_connection((address, port)) as client:
    client.sendall(f"{method} {path} HTTP/1.1\\r\\nHost: {address}:{port}\\r\\nContent-Type: application/json\\r\\n"
                   f"Content-Length: {len(body)}\\r\\nConnection: close\\r\\n\\r\\n".encode() + body)
    answer = b"".join(iter(lambda: client.recv(65536), b""))
head, _, text = answer.decode().partition("\\r\\n\\r\\n")
print(json.dumps({"status": int(head.split()[1]), "body": text}))
"""


def as_another_account(service: ServiceProcess, method: str, path: str, body: dict | None = None, *,
                       uid: int = OTHER_UID, address: str = "127.0.0.1") -> dict:
    """{"status": ..., "body": ...} of a request sent to `service` at `address` by a program of the account `uid`
    (needs root). The answer is read to its end: a stream's, once its run is over."""
    port = service.url.rsplit(":", 1)[1]
    output = run_as_another_account(REQUEST_AS_ANOTHER_ACCOUNT, address, port, method, path,
                                    json.dumps(body) if body is not None else "", uid=uid)
    return json.loads(output)


def wait_for(condition, what: str, patience: float = PATIENCE, every: float = 0.05):
    """Poll `condition()` until it returns something true; fail with `what` after `patience` seconds."""
    deadline = time.monotonic() + patience
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {patience} s for {what}")
        time.sleep(every)
