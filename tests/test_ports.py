"""tests/ports.py: the ports the tests give their slower servers come from below the kernel's ephemeral range (where
an outgoing connection of a neighbouring test may take one before the server binds it), and each is free."""

from __future__ import annotations

import socket

from tests import ports


def test_a_run_of_ports_is_free_and_below_the_ephemeral_range():
    for count in (1, 4):
        first = ports.free_port_run(count)
        assert ports.LOWEST <= first and first + count - 1 < ports.ephemeral_start()
        held = []
        try:
            for port in range(first, first + count):  # each can be bound now
                sock = socket.socket()
                held.append(sock)
                sock.bind(("127.0.0.1", port))
        finally:
            for sock in held:
                sock.close()


def test_a_port_someone_holds_is_passed_over(monkeypatch):
    spare = ports.free_port_run(2)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", ports.free_port()))
        taken = holder.getsockname()[1]
        picks = iter([taken - 1, taken, spare])  # the first two runs of two hold `taken`
        monkeypatch.setattr(ports.random, "randint", lambda low, high: next(picks))
        assert ports.free_port_run(2) == spare


def test_the_kernel_range_is_read_and_a_missing_file_falls_back(tmp_path, monkeypatch):
    table = tmp_path / "ip_local_port_range"
    table.write_text("40000\t60999\n")
    monkeypatch.setattr(ports, "LINUX_RANGE", table)
    assert ports.ephemeral_start() == 40000
    monkeypatch.setattr(ports, "LINUX_RANGE", tmp_path / "absent")
    assert ports.ephemeral_start() == ports.DEFAULT_EPHEMERAL_START


def test_a_range_that_starts_low_takes_the_kernels_ports(tmp_path, monkeypatch):
    table = tmp_path / "ip_local_port_range"
    table.write_text("5000\t60999\n")
    monkeypatch.setattr(ports, "LINUX_RANGE", table)
    first = ports.free_port_run(3)
    assert first >= 1024
