"""hosting/peer_account.py: which account holds the client's end of a loopback connection, read from /proc/net.

Real sockets: one this process opens is this process's account; as root, one a child opens after it has become
another account (uid 65534, nobody) is that account; a client gone, or no connection at all, is nobody's (None).
A client of this machine is here (peer_is_here), gone or not; an address of another machine is not.
"""

from __future__ import annotations

import contextlib
import os
import socket

import pytest

from tests.other_account import OTHER_UID, needs_root, start_as_another_account
from tinyagent.hosting import peer_account
from tinyagent.hosting.peer_account import accounts_can_be_told, peer_is_here, peer_uid

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="reads /proc/net/tcp (Linux)")


def has_ipv6_loopback() -> bool:
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET6) as probe:
        probe.bind(("::1", 0))
        return True
    return False


@contextlib.contextmanager
def listening(family: int, host: str, *, dual_stack: bool = False):
    with socket.socket(family) as server:
        if dual_stack:
            server.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        server.bind((host, 0))
        server.listen()
        yield server


def ends(accepted: socket.socket) -> tuple[tuple[str, int], tuple[str, int]]:
    """(client, server) as the server's socket sees them, as uvicorn puts them in a request's scope."""
    return accepted.getpeername()[:2], accepted.getsockname()[:2]


@pytest.mark.parametrize(("family", "listen_on", "connect_to", "dual_stack"), [
    (socket.AF_INET, "127.0.0.1", "127.0.0.1", False),
    (socket.AF_INET6, "::1", "::1", False),
    (socket.AF_INET6, "::", "127.0.0.1", True),  # the server sees ::ffff:127.0.0.1; the client's socket is IPv4
], ids=["ipv4", "ipv6", "ipv4-on-a-dual-stack-server"])
def test_the_client_end_of_a_connection_of_this_process_is_this_account(family, listen_on, connect_to, dual_stack):
    if family == socket.AF_INET6 and not has_ipv6_loopback():
        pytest.skip("no IPv6 loopback here")
    with listening(family, listen_on, dual_stack=dual_stack) as server, \
            socket.create_connection((connect_to, server.getsockname()[1])) as client:
        accepted, _ = server.accept()
        with accepted:
            client_end, server_end = ends(accepted)
            assert client_end[1] == client.getsockname()[1]
            assert peer_uid(client_end, server_end) == os.geteuid()


def test_a_client_that_closed_its_end_is_nobodys():
    # Linux shows uid 0 for a socket its program has closed (FIN_WAIT): taken as it is, a closed client would be
    # root's, the account of a service run as root.
    with listening(socket.AF_INET, "127.0.0.1") as server:
        client = socket.create_connection(server.getsockname())
        accepted, _ = server.accept()
        with accepted:
            client.close()
            assert peer_uid(*ends(accepted)) is None


def test_a_client_that_only_shut_its_sending_side_is_still_its_accounts():
    # A half-close after the request (shutdown(SHUT_WR)) leaves the socket with its program, in FIN_WAIT2: its account
    # is still told, and a service answers it as before.
    with listening(socket.AF_INET, "127.0.0.1") as server, socket.create_connection(server.getsockname()) as client:
        accepted, _ = server.accept()
        with accepted:
            client.shutdown(socket.SHUT_WR)
            assert accepted.recv(1) == b""  # the server has seen the client's end of sending
            assert peer_uid(*ends(accepted)) == os.geteuid()


def test_no_such_connection_or_no_address_is_nobodys():
    with listening(socket.AF_INET, "127.0.0.1") as server:
        nobody_there = ("127.0.0.1", 9), server.getsockname()
        assert peer_uid(*nobody_there) is None
        assert peer_uid(("testclient", 50000), server.getsockname()) is None


def lan_address() -> str | None:
    """This machine's address on its network (the one it would send from), or None without one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("198.51.100.1", 9))  # no packet is sent: the kernel only picks the route
        except OSError:
            return None
        address = probe.getsockname()[0]
    return None if address.startswith("127.") else address


def test_a_client_of_this_machine_is_here_and_stays_here_once_it_has_closed_its_end():
    # Its account can no longer be told then (no established line): it must not pass for a customer on the network,
    # whose socket is in no table here, and whom a service with no key lets run its agent.
    with listening(socket.AF_INET, "127.0.0.1") as server:
        client = socket.create_connection(server.getsockname())
        accepted, _ = server.accept()
        with accepted:
            assert peer_is_here(*ends(accepted))
            client.close()
            assert peer_is_here(*ends(accepted)) and peer_uid(*ends(accepted)) is None


def test_a_client_from_another_address_of_this_machine_is_here_by_its_socket():
    # Neither a loopback address nor the server's: only /proc/net says it is this machine's, closed or not.
    address = lan_address()
    if address is None:
        pytest.skip("this machine has no network address but loopback")
    with listening(socket.AF_INET, "0.0.0.0") as server, socket.socket() as client:
        client.bind((address, 0))
        client.connect(("127.0.0.1", server.getsockname()[1]))
        accepted, _ = server.accept()
        with accepted:
            client_end, server_end = ends(accepted)
            assert client_end[0] == address and server_end[0] == "127.0.0.1"
            assert peer_is_here(client_end, server_end) and peer_uid(client_end, server_end) == os.geteuid()
            client.close()
            assert peer_is_here(client_end, server_end)


def test_an_address_of_another_machine_or_no_address_is_not_here():
    with listening(socket.AF_INET, "127.0.0.1") as server:
        assert not peer_is_here(("203.0.113.9", 50412), server.getsockname())  # TEST-NET-3: nobody's here
        assert not peer_is_here(("testclient", 50000), server.getsockname())


def test_without_proc_net_the_account_cannot_be_told(monkeypatch):
    assert accounts_can_be_told()
    monkeypatch.setattr(peer_account, "TABLES", ("/nonexistent/tcp", "/nonexistent/tcp6"))
    assert not accounts_can_be_told()
    with listening(socket.AF_INET, "127.0.0.1") as server, socket.create_connection(server.getsockname()):
        accepted, _ = server.accept()
        with accepted:
            assert peer_uid(*ends(accepted)) is None


# A program of another account (tests/other_account.py): it connects, says its port, and holds the connection.
CONNECT_AS_ANOTHER_ACCOUNT = """
import encodings.idna, socket, sys
become_another_account()
client = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
print(client.getsockname()[1], flush=True)
sys.stdin.read()  # holds the connection until the test closes stdin
"""


@needs_root
def test_the_client_end_of_a_connection_of_another_account_is_that_account():
    with listening(socket.AF_INET, "127.0.0.1") as server:
        child = start_as_another_account(CONNECT_AS_ANOTHER_ACCOUNT, str(server.getsockname()[1]))
        try:
            assert child.stdout.readline().strip().isdigit()
            accepted, _ = server.accept()
            with accepted:
                assert peer_uid(*ends(accepted)) == OTHER_UID != os.geteuid()
        finally:
            child.kill()
            child.wait()
            child.stdin.close()
            child.stdout.close()
