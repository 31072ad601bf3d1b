"""Which account of this machine is at the other end of a TCP connection: the uid that Linux shows for it.

On a machine shared by several accounts (the course's JupyterHub room: each learner a system account of her own,
all of them on the same loopback), a connection from 127.0.0.1 says only that its client runs on this machine, not
whose it is. Linux lists every TCP socket of the machine's network namespace in /proc/net/tcp (IPv4) and
/proc/net/tcp6 (IPv6), one a line, each with its local and remote address, its state and the uid of the account
that opened it; any account may read them. The client's socket is the line whose local address is the client's
address and port as the server sees them, and whose remote address is the server's.

    peer_uid(("127.0.0.1", 50412), ("127.0.0.1", 8000))  -> 1001 (jupyter-ada), or None: cannot be told

Only an established connection counts: once its client closes it, Linux shows uid 0 for the orphaned socket
(FIN_WAIT, TIME_WAIT), which would pass a service run as root for its own. None when the uid cannot be told: not
Linux, /proc/net hidden, no such connection (a client on another machine, or one already gone).
"""

from __future__ import annotations

import ipaddress
import os
import sys

TABLES = ("/proc/net/tcp", "/proc/net/tcp6")
ESTABLISHED = "01"  # the st column: the kernel's TCP_ESTABLISHED, in hex


def peer_uid(client: tuple[str, int], server: tuple[str, int]) -> int | None:
    """The uid of the account that owns the client's end of the connection from `client` to `server` (each an
    (address, port) as the server's socket sees them), or None when it cannot be told."""
    for table in TABLES:
        ipv6 = table.endswith("6")
        local, remote = proc_address(*client, ipv6=ipv6), proc_address(*server, ipv6=ipv6)
        if local is None or remote is None:
            continue
        try:
            with open(table, encoding="ascii") as lines:
                next(lines, None)  # the column names
                for line in lines:
                    fields = line.split()
                    if fields[1:4] == [local, remote, ESTABLISHED]:
                        return int(fields[7])
        except (OSError, ValueError, IndexError):
            continue
    return None


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
