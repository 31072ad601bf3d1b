"""A program of another account of this machine, for the tests that show what one may do to a learner's servers.

On the course's JupyterHub every learner is a system account of her own, all on one loopback. As root, a test runs
`program` (Python source) in a child interpreter that imports what it needs first, then calls
`become_another_account()` (defined ahead of the program) and from there on is uid OTHER_UID. (Not os.setuid in a
preexec_fn: the interpreter's own files may be where that account cannot read, as under /root; so a module the
program imports after it has become the other account may not be found.)

    @needs_root
    def test_...():
        output = run_as_another_account(PROGRAM, url)   # its stdout, once it exited 0
        child = start_as_another_account(PROGRAM, url)  # still running: the test reads and ends it (kill in finally)
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import PATIENCE

OTHER_UID = 65534  # nobody: any uid but the test's will do, it need not name an account
needs_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                reason="a program of another account needs root to become one")

BECOME = """
import os as _os


def become_another_account():
    _os.setgroups([])
    _os.setgid({uid})
    _os.setuid({uid})

"""


def command(program: str, *args: str, uid: int = OTHER_UID) -> list[str]:
    """The child's command line: `program` after become_another_account(), with `args` as its sys.argv[1:]."""
    return [sys.executable, "-c", BECOME.format(uid=uid) + program, *args]


def run_as_another_account(program: str, *args: str, uid: int = OTHER_UID) -> str:
    """What `program` (which calls become_another_account() once its imports are done) printed, run with `args`
    as its sys.argv[1:]; the test fails with its stderr if it exits with anything but 0."""
    done = subprocess.run(command(program, *args, uid=uid), capture_output=True, text=True, timeout=PATIENCE,
                          check=False)  # killed past PATIENCE
    assert done.returncode == 0, done.stderr
    return done.stdout


def start_as_another_account(program: str, *args: str, uid: int = OTHER_UID) -> subprocess.Popen:
    """`program` started as run_as_another_account runs it, with pipes for its stdin and stdout, still running: the
    test kills it in `finally`."""
    return subprocess.Popen(command(program, *args, uid=uid), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
