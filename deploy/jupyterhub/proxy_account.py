"""The hub's proxy as a system account of its own, not as the hub's root (jupyterhub_config.py, section 1).

    python proxy_account.py ACCOUNT FOLDER PROGRAM [the proxy's arguments ...]

JupyterHub starts its proxy, configurable-http-proxy, as the account it runs as: root, which a hub that starts
each learner's server as her own account must be. The proxy is the one process that reads what the whole network
sends, so a flaw in it would be root's. The config names this file as the proxy's command, and JupyterHub appends
the proxy's arguments. Run by root, it

1. copies every key and certificate those arguments name (the hub keeps them in its state folder, root's only)
   into FOLDER, written by ACCOUNT itself (learner_accounts.write_private_copies), and points the arguments there;
2. gives up root for ACCOUNT (no other groups) and replaces itself with PROGRAM (Node.js, with the proxy's script
   among the arguments: jupyterhub_config.py): the same process, so the hub's record of it (its pid, its signals)
   stays right. Its environment is the proxy's token, PATH and LANG, nothing
   else of the hub's.

Something wrong (no such account, a file it cannot copy) is one line on stderr and exit 2: the hub then says its
proxy did not start.
"""

from __future__ import annotations

import errno
import os
import pwd
import socket
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from learner_accounts import write_private_copies  # this folder's module, found through the line above

from tinyagent.hosting.peer_account import listening_uids

# configurable-http-proxy's options that name a file it reads: the keys and certificates of its API, of its
# connections to each learner's server (JupyterHub's internal_ssl), and of its public page if that is HTTPS.
FILE_OPTIONS = ("--api-ssl-key", "--api-ssl-cert", "--api-ssl-ca", "--client-ssl-key", "--client-ssl-cert",
                "--client-ssl-ca", "--ssl-key", "--ssl-cert", "--ssl-ca")
KEPT_ENVIRONMENT = ("CONFIGPROXY_AUTH_TOKEN", "PATH", "LANG")  # PATH: its `#!/usr/bin/env node` finds Node.js


def private_arguments(account: str, folder: Path, arguments: list[str]) -> list[str]:
    """`arguments` with every file FILE_OPTIONS name replaced by the account's copy of it in `folder`."""
    copies, pointed = {}, list(arguments)
    for at, option in enumerate(arguments[:-1]):
        if option in FILE_OPTIONS:
            name = option.lstrip("-") + ".pem"  # one name an option: two CAs' files may share a name
            copies[name] = Path(arguments[at + 1]).read_bytes()
            pointed[at + 1] = str(folder / name)
    write_private_copies(account, folder, copies)
    return pointed


def page_port_problem(ip: str, port: int, proxy_uid: int) -> str | None:
    """Why the hub must not start with its page on `ip`:`port`, or None: the port is held by an account other than
    the proxy's (`proxy_uid`).

    The proxy that cannot bind its page's port says so once in the log and runs on without it, and the hub starts all
    the same: whoever holds the port (a learner's process left running while the hub was down) gets what the
    learners' browsers and kernels send the hub, their cookies and tokens with them, and the classroom model's token
    checks. A port held by the proxy's own account is the hub's proxy from before, which JupyterHub stops and starts
    again (its pid file)."""
    with socket.socket(socket.AF_INET6 if ":" in ip else socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the proxy binds it: old connections pass
        try:
            probe.bind((ip, port))
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                return None  # the proxy says what else is wrong with the address
        else:
            return None
    others = sorted(listening_uids(port) - {proxy_uid})
    if not others:
        return None
    names = ", ".join(_account_name(uid) for uid in others)
    return (f"port {port} of {ip}, the hub's page, is held by the account {names}, not by the hub's proxy: it would "
            "get what the learners' browsers and kernels send the hub, their tokens with them; stop its process "
            f"(ss -ltnp 'sport = :{port}' shows it) and start the hub again")


def _account_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def main(argv: list[str]) -> None:
    if len(argv) < 3:
        sys.exit("usage: proxy_account.py ACCOUNT FOLDER PROGRAM [the proxy's arguments ...]")
    account, folder, program, *arguments = argv
    try:
        entry = pwd.getpwnam(account)
        arguments = private_arguments(account, Path(folder), arguments)
    except (KeyError, OSError, RuntimeError) as exc:
        print(f"error: the proxy's account {account}: {exc}", file=sys.stderr)
        sys.exit(2)
    os.chdir("/")
    os.setgroups([])
    os.setgid(entry.pw_gid)
    os.setuid(entry.pw_uid)  # last: after it, no way back to root
    environment = {name: os.environ[name] for name in KEPT_ENVIRONMENT if name in os.environ}
    os.execve(program, [program, *arguments], environment)


if __name__ == "__main__":
    main(sys.argv[1:])
