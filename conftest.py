"""pytest start-up for the whole project (unit tests and notebooks under nbval alike).

Tests and notebook checks always use the offline classroom model: a learner's .env or exported key
never changes a test. Kernels that nbval starts inherit this environment.
"""

import os

os.environ["TINYAGENT_OFFLINE"] = "1"
# The real local model's cells (lessons 08, 18, 23, A1) on one llama.cpp thread: the run's other workers keep the
# cores busy, and two threads wait for each other at every token (lesson 18's real-model cell: 12.3 s on two
# threads beside one busy process, 7.7 s on one; 4.9 and 5.1 s on a quiet machine).
os.environ.setdefault("TINYAGENT_LOCAL_MODEL_THREADS", "1")


# nbval's kernels talk to pytest over Unix sockets in a folder of this run's own, not over TCP ports. For TCP,
# jupyter_client picks a kernel's five ports by binding port 0 and letting go, and the kernel binds them a moment
# later: on a busy machine another process (another worker's kernel or a test's server) can take one in between.
# A kernel that loses its shell, stdin or control port dies ("Kernel died before replying to kernel_info"); one
# that loses its IOPub port stays alive and never answers, and nbval waits out the whole startup timeout before
# failing every cell of the notebook (benchmarks/kernel_ports.py makes both happen on purpose, and counts them).
_kernel_sockets = None


def start_kernel_on_unix_sockets(startup_timeout=60, kernel_name="python", folder=None, **kwargs):
    """nbval's `start_new_kernel`, with the kernel's channels on Unix sockets named only for it, in `folder` (by
    default the run's own, made by pytest_configure)."""
    import uuid

    from jupyter_client import KernelManager
    from nbval.kernel import NbvalKernelspecManager

    km = KernelManager(kernel_name=kernel_name, kernel_spec_manager=NbvalKernelspecManager(), transport="ipc",
                       ip=os.path.join(folder or _kernel_sockets, uuid.uuid4().hex[:12]))
    km.start_kernel(**kwargs)
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=startup_timeout)
    except RuntimeError:
        kc.stop_channels()
        km.shutdown_kernel()
        raise
    return km, kc


def pytest_configure(config):
    global _kernel_sockets
    try:
        import nbval.kernel
    except ImportError:  # an install without nbval (the notebooks extra): no notebooks to run under pytest
        return
    import tempfile

    # Short: a Unix socket's path holds at most 107 bytes (this folder, 12 characters, "-5").
    _kernel_sockets = tempfile.mkdtemp(prefix="nbk-")
    nbval.kernel.start_new_kernel = start_kernel_on_unix_sockets


def pytest_unconfigure(config):
    if _kernel_sockets is not None:
        import shutil

        shutil.rmtree(_kernel_sockets, ignore_errors=True)


# CI installs everything the tests need (.ci/run, `make setup`, `make hub-setup`): a test that skips there tests
# nothing while the run stays green. A skip is a developer's convenience on a machine without a tool; with CI set,
# any skip (a module-level importorskip, a missing binary) fails the run, naming it.
def _skipped_in_ci(config) -> list:
    """The skip reports of this run when CI is set, on the process that reports (not an xdist worker)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if not os.environ.get("CI") or reporter is None or hasattr(config, "workerinput"):
        return []
    return reporter.stats.get("skipped", [])


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    skipped = _skipped_in_ci(config)
    if skipped:
        terminalreporter.section("skipped in CI", red=True)
        for report in skipped:
            where, reason = report.nodeid or report.fspath, report.longrepr
            terminalreporter.line(f"{where}: {reason[-1] if isinstance(reason, tuple) else reason}")


def pytest_sessionfinish(session, exitstatus):
    if exitstatus == 0 and _skipped_in_ci(session.config):
        session.exitstatus = 1  # pytest.ExitCode.TESTS_FAILED
