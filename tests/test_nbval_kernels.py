"""The notebooks' kernels under nbval talk over Unix sockets of their own, never over TCP ports (conftest.py).

A TCP port is chosen by one process and bound by another a moment later; on a loaded machine a kernel could lose
one in between and hang until nbval's startup timeout (benchmarks/kernel_ports.py shows it)."""

import os
import stat

import nbval.kernel


def test_nbval_starts_kernels_on_unix_sockets_in_a_folder_of_the_run():
    start = nbval.kernel.start_new_kernel
    assert start.__name__ == "start_kernel_on_unix_sockets"

    with open(os.devnull, "w") as quiet:
        km, kc = start(startup_timeout=600, kernel_name="python3", stderr=quiet)
    try:
        info = km.get_connection_info()
        assert info["transport"] == "ipc"
        folder = os.path.dirname(info["ip"])
        assert os.path.basename(folder).startswith("nbk-")
        sockets = [os.path.join(folder, name) for name in os.listdir(folder)
                   if name.startswith(os.path.basename(info["ip"]))]
        assert len(sockets) == 5 and all(stat.S_ISSOCK(os.stat(path).st_mode) for path in sockets)
        reply = kc.execute_interactive("6 * 7", timeout=600, output_hook=lambda message: None)
        assert reply["content"]["status"] == "ok"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert not any(os.path.exists(path) for path in sockets)  # the kernel's sockets go with it
