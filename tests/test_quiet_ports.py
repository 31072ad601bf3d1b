"""`tinyagent.hosting.address.quiet_port_run`: a port told to a server before it binds it (JupyterHub's proxy and
learners' servers, and the JupyterLab, hub and PostgreSQL the tests start) comes from below the kernel's ephemeral
range, where an outgoing connection or another server's bind to port 0 cannot take it in the meantime; each port is
free when tried, and none is one already promised to another server."""

from __future__ import annotations

import socket

import pytest

from tinyagent.hosting import address
from tinyagent.hosting.address import ServerAddressError, quiet_port_run


def test_a_run_of_ports_is_free_and_below_the_ephemeral_range():
    for count in (1, 4):
        first = quiet_port_run(count)
        assert address.QUIET_PORTS_FROM <= first and first + count - 1 < address.ephemeral_start()
        held = []
        try:
            for port in range(first, first + count):  # each can be bound now
                sock = socket.socket()
                held.append(sock)
                sock.bind(("127.0.0.1", port))
        finally:
            for sock in held:
                sock.close()


def test_a_port_someone_holds_or_was_promised_is_passed_over(monkeypatch):
    spare, promised = quiet_port_run(2), quiet_port_run()
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", quiet_port_run()))
        taken = holder.getsockname()[1]
        picks = iter([taken - 1, taken, promised, spare])  # runs of two that hold `taken`, then `promised`
        monkeypatch.setattr(address.random, "randint", lambda low, high: next(picks))
        assert quiet_port_run(2, avoid={promised}) == spare


def test_no_free_run_is_one_line_not_a_loop_forever(monkeypatch):
    monkeypatch.setattr(address, "_all_free", lambda family, host, ports: False)
    with pytest.raises(ServerAddressError, match="no 3 consecutive free ports found on 127.0.0.1"):
        quiet_port_run(3)


def test_the_kernel_range_is_read_and_a_missing_file_falls_back(tmp_path, monkeypatch):
    table = tmp_path / "ip_local_port_range"
    table.write_text("40000\t60999\n")
    monkeypatch.setattr(address, "LINUX_EPHEMERAL_RANGE", str(table))
    assert address.ephemeral_start() == 40000
    monkeypatch.setattr(address, "LINUX_EPHEMERAL_RANGE", str(tmp_path / "absent"))
    assert address.ephemeral_start() == address.DEFAULT_EPHEMERAL_START


def test_a_range_that_starts_low_takes_the_kernels_ports(tmp_path, monkeypatch):
    table = tmp_path / "ip_local_port_range"
    table.write_text("5000\t60999\n")
    monkeypatch.setattr(address, "LINUX_EPHEMERAL_RANGE", str(table))
    first = quiet_port_run(3)
    assert 1024 <= first and first + 2 <= address.MAX_PORT


def test_a_quiet_range_another_account_fills_gives_way_to_the_kernels_ports(monkeypatch):
    # Any account may listen on every port below the ephemeral range (about 22,800 of them: two processes): then no
    # learner's server could start, where the kernel's own choice still gives one.
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", quiet_port_run()))
        taken = holder.getsockname()[1]
        monkeypatch.setattr(address.random, "randint", lambda low, high: taken)  # every quiet port tried is held
        port = quiet_port_run()
    assert port != taken and port >= address.ephemeral_start()
