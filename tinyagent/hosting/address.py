"""Where a server listens, and what to say when it cannot listen there.

The operating system answers a bad address with an errno ("Address already in use", "Name or
service not known") or, for a port out of range, an OverflowError. A learner who typed
`--port 70000` or `--host 999.1.1.1` needs one sentence instead: what is wrong, and what to do.
"""

from __future__ import annotations

import errno
import itertools
import random
import socket
from collections.abc import Collection

from tinyagent.errors import ConfigurationError

MAX_PORT = 65535


class ServerAddressError(ConfigurationError):
    """A server cannot listen on the host and port it was given."""


def check_port(port: int) -> int:
    """The port, if it is one a server can listen on (0: any free port); else ServerAddressError."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= MAX_PORT:
        raise ServerAddressError(
            f"the port must be a whole number from 0 to {MAX_PORT} (0: any free port), got {port!r}; "
            "pick another --port, such as 8000"
        )
    return port


def explain_listen_error(host: str, port: int, error: OSError) -> ServerAddressError:
    """The OSError from binding (host, port), as a sentence that says what to do."""
    if isinstance(error, socket.gaierror) or error.errno == errno.EADDRNOTAVAIL:
        return ServerAddressError(
            f"cannot listen on {host!r}: it is not an address of this machine; use --host 127.0.0.1 "
            "(this machine only) or --host 0.0.0.0 (every network it is on)"
        )
    if error.errno == errno.EADDRINUSE:
        return ServerAddressError(
            f"port {port} on {host} is already in use by another program: stop that program, "
            "or pick another --port (0: any free port)"
        )
    if error.errno in (errno.EMFILE, errno.ENFILE):
        return ServerAddressError(
            f"cannot listen on {host}:{port}: this program has no file descriptor left to serve with (too many "
            "open files); close some, or raise its limit (ulimit -n)"
        )
    if error.errno == errno.EACCES:
        return ServerAddressError(
            f"port {port} needs administrator rights on this machine: pick a --port from 1024 to {MAX_PORT}"
        )
    return ServerAddressError(
        f"cannot listen on {host}:{port}: {error.strerror or error}; try another --host or --port"
    )


def _family(host: str, port: int) -> socket.AddressFamily:
    """The address family of `host` (IPv4 or IPv6); socket.gaierror when it names no machine."""
    try:
        return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    except UnicodeError:  # a label empty or over 63 characters ("a..b"): the IDNA codec's error, no machine's name
        raise socket.gaierror(socket.EAI_NONAME, f"{host!r} is not a host name") from None


def listening_socket(host: str, port: int, *, inheritable: bool = False) -> socket.socket:
    """A TCP socket bound to (host, port) and listening, for uvicorn to serve (`sockets=[...]`). OSError when the
    address cannot be had (explain_listen_error says it in a sentence). `inheritable`: for worker processes that
    serve the same socket."""
    family = _family(host, port)
    # IPPROTO_TCP named, not left as 0: asyncio turns Nagle's algorithm off (TCP_NODELAY) only on connections whose
    # socket says TCP. Left on, a response sent in two writes (its headers, then its body) waited for the client's
    # delayed ACK: 40 ms on every request over a kept-alive connection.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
        sock.set_inheritable(inheritable)
    except BaseException:
        sock.close()
        raise
    return sock


def check_can_listen(host: str, port: int) -> None:
    """Bind (host, port) for a moment, to name the problem before a server that cannot explain it starts.

    For servers (llama.cpp) whose own error says only that starting failed. There is a race (another
    program may take the port right after), which the server's own error still covers.
    """
    check_port(port)
    try:
        with socket.socket(_family(host, port), socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers do: TIME_WAIT is fine
            probe.bind((host, port))
    except OSError as error:
        raise explain_listen_error(host, port, error) from None


# -- a port told to a server before it starts ---------------------------------------------------------------
# Most servers here bind port 0 and say which port they got. A few must be told their port first (JupyterHub tells
# each learner's server, and its proxy, theirs), and the server binds it seconds later. A port from the kernel's
# ephemeral range (what bind to port 0 gives) can be handed to another socket in that gap: every outgoing
# connection takes its local port from that range, and so does every other server's bind to port 0. Two such
# servers may even be told the same port (45 picked with JupyterHub's own random_port before any was bound: two the
# same in 6 to 7% of tries, benchmarks/learner_ports.py). So these ports come from below that range, where nothing
# is handed out unasked.
QUIET_PORTS_FROM = 10000  # below: the well-known and registered ports other software may expect to have
LINUX_EPHEMERAL_RANGE = "/proc/sys/net/ipv4/ip_local_port_range"
DEFAULT_EPHEMERAL_START = 32768  # Linux's default; macOS and Windows start at 49152, higher still


def ephemeral_start() -> int:
    """The first port the kernel hands out to sockets that do not ask for one."""
    try:
        with open(LINUX_EPHEMERAL_RANGE) as table:
            return int(table.read().split()[0])
    except (OSError, ValueError, IndexError):
        return DEFAULT_EPHEMERAL_START


def quiet_port_run(count: int = 1, host: str = "127.0.0.1", avoid: Collection[int] = ()) -> int:
    """The first of `count` consecutive ports on `host`, each free when tried and none in `avoid` (ports already
    promised to servers that have not bound them yet), from below the ephemeral range; from the kernel's own
    choice when none is free there (any account may listen on every port below it: a room's servers must
    still start)."""
    family = socket.getaddrinfo(host, 0, type=socket.SOCK_STREAM)[0][0]  # looked up once, not for every try
    top = ephemeral_start() - count
    # An unusual range that starts low leaves no quiet ports: the kernel's then, at once.
    quiet = (random.randint(QUIET_PORTS_FROM, top) for _ in range(200 if top > QUIET_PORTS_FROM else 0))
    candidates = itertools.chain(quiet, (_port_from_kernel(family, host) for _ in range(200)))
    promised = set(avoid)
    for first in candidates:
        run = range(first, first + count)
        if run[-1] <= MAX_PORT and promised.isdisjoint(run) and _all_free(family, host, run):
            return first
    raise ServerAddressError(f"no {count} consecutive free ports found on {host}")


def _port_from_kernel(family: int, host: str) -> int:
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def _all_free(family: int, host: str, ports: range) -> bool:
    held = []
    try:
        for port in ports:
            sock = socket.socket(family, socket.SOCK_STREAM)
            held.append(sock)
            sock.bind((host, port))
        return True
    except OSError:
        return False
    finally:
        for sock in held:
            sock.close()


def this_machine_address() -> str:
    """This machine's address on the local network, for a banner that tells others where to connect when a server
    listens on every network (0.0.0.0); no packet is sent."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("10.255.255.255", 1))
            return probe.getsockname()[0]
    except OSError:
        return socket.gethostname()
