"""Which account of this machine is at the other end of a TCP connection: the uid that Linux shows for it.

On a machine shared by several accounts (the course's JupyterHub room: each learner a system account of her own,
all of them on the same loopback), a connection from 127.0.0.1 says only that its client runs on this machine, not
whose it is. Linux lists every TCP socket of the machine's network namespace in /proc/net/tcp (IPv4) and
/proc/net/tcp6 (IPv6), one a line, each with its local and remote address, its state, the uid of the account
that opened it and its inode (the file its program holds); any account may read them. The client's socket is the
line whose local address is the client's address and port as the server sees them, and whose remote address is the
server's.

    peer_uid(("127.0.0.1", 50412), ("127.0.0.1", 8000))  -> 1001 (jupyter-ada), or None: cannot be told

Only a socket its program still holds counts: once its client closes it, Linux shows the orphaned socket (FIN_WAIT,
TIME_WAIT) with inode 0 and uid 0, which would pass a service run as root for its own. (A client that only shut its
sending side after its request, a half-close, still holds it, and its uid is its own.) None when the uid cannot be
told: not Linux, /proc/net hidden, no such connection (a client on another machine, or one already gone).

A client on another machine is in no table here, and a closed one is; so "no uid" is two answers, which
peer_is_here tells apart: a client of this machine (its socket listed, in any state, or an address only this
machine sends from) whose account cannot be told is not to be taken for a customer on the network.

    peer_is_here(("127.0.0.1", 50412), ("127.0.0.1", 8000))   -> True
    peer_is_here(("192.0.2.40", 50412), ("192.0.2.2", 8000))  -> False: another machine of the network
"""

from __future__ import annotations

import ipaddress
import os
import sys
from collections.abc import Iterator

TABLES = ("/proc/net/tcp", "/proc/net/tcp6")


def peer_uid(client: tuple[str, int], server: tuple[str, int]) -> int | None:
    """The uid of the account that owns the client's end of the connection from `client` to `server` (each an
    (address, port) as the server's socket sees them), or None when it cannot be told."""
    return next((uid for uid, inode in client_sockets(client, server) if inode != 0), None)


def peer_is_here(client: tuple[str, int], server: tuple[str, int]) -> bool:
    """Whether the client of the connection from `client` to `server` runs on this machine (in this network
    namespace, which is what /proc/net lists): its address is a loopback one or the server's own (a program here
    that connects to the machine's network address sends from it), or its socket is listed, in any state (a
    client that connected from another address of this machine, then closed its end)."""
    try:
        address, own = (ipaddress.ip_address(client[0]), ipaddress.ip_address(server[0]))
    except ValueError:  # no address at all (a test's "testclient"): nothing says it is here
        return False
    address, own = unmapped(address), unmapped(own)
    if address.is_loopback or address == own:
        return True
    return next(client_sockets(client, server), None) is not None


def unmapped(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """The IPv4 address an IPv6 one carries (a dual-stack socket writes an IPv4 client as ::ffff:127.0.0.1), else the
    address itself."""
    mapped = address.ipv4_mapped if address.version == 6 else None
    return mapped or address


def scope_ends(scope: dict) -> tuple[tuple[str, int], tuple[str, int]] | None:
    """(client, server) of an ASGI request's connection, each an (address, port) as the server (uvicorn) puts them in
    its scope: what peer_uid and peer_is_here take. None when it has no such ends (a Unix socket)."""
    client, server = scope.get("client"), scope.get("server")
    if not client or not server or server[1] is None:
        return None
    return (client[0], client[1]), (server[0], server[1])


def client_sockets(client: tuple[str, int], server: tuple[str, int]) -> Iterator[tuple[int, int]]:
    """(uid, inode) of each line of /proc/net/tcp and tcp6 whose local address is `client` and whose remote
    address is `server`: the client's end of that connection, when its program runs on this machine."""
    for table in TABLES:
        ipv6 = table.endswith("6")
        local, remote = proc_address(*client, ipv6=ipv6), proc_address(*server, ipv6=ipv6)
        if local is None or remote is None:
            continue
        try:
            found = [(int(fields[7]), int(fields[9])) for fields in socket_lines(table) if fields[1:3] == [local, remote]]
        except (ValueError, IndexError):  # a line not as the kernel writes them: this table says nothing
            continue
        yield from found


def listening_uids(port: int) -> set[int]:
    """The accounts (uids) whose sockets listen on TCP `port`, on any address (deploy/jupyterhub/proxy_account.py
    asks who holds the hub's page port)."""
    uids: set[int] = set()
    for table in TABLES:
        try:
            uids.update(int(fields[7]) for fields in socket_lines(table)
                        if fields[3] == "0A" and int(fields[1].rpartition(":")[2], 16) == port)  # 0A: LISTEN
        except (ValueError, IndexError):
            continue
    return uids


def socket_lines(table: str) -> list[list[str]]:
    """The fields of each socket /proc/net/tcp or tcp6 (`table`) lists, its column names left out; none when it
    cannot be read (not Linux, /proc/net hidden). Read whole, so the file is closed before anyone looks."""
    try:
        with open(table, encoding="ascii") as lines:
            next(lines, None)  # the column names
            return [line.split() for line in lines]
    except OSError:
        return []


def accounts_can_be_told() -> bool:
    """Whether this system lists its connections' accounts where peer_uid reads them (Linux's /proc/net)."""
    return any(os.access(table, os.R_OK) for table in TABLES)


def proc_address(address: str, port: int, *, ipv6: bool) -> str | None:
    """`address:port` as /proc/net/tcp (or, with `ipv6`, tcp6) writes it: the address as the kernel holds it, in
    32-bit words of hex in this machine's byte order, then the port in hex. None if the address does not fit
    that table (an IPv6 address in the IPv4 one, a name that is no address)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return None
    # An IPv4 connection is in either table: a dual-stack server's socket writes its client as ::ffff:127.0.0.1,
    # and a client's IPv6 socket may have connected to an IPv4 server that way.
    if ip.version == 6 and ip.ipv4_mapped and not ipv6:
        ip = ip.ipv4_mapped
    elif ip.version == 4 and ipv6:
        ip = ipaddress.IPv6Address(f"::ffff:{ip}")
    if ip.version != (6 if ipv6 else 4):
        return None
    raw = ip.packed
    words = (int.from_bytes(raw[start:start + 4], sys.byteorder) for start in range(0, len(raw), 4))
    return "".join(f"{word:08X}" for word in words) + f":{port:04X}"
