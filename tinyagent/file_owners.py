"""Whose a file is, on a machine several accounts share (the course's JupyterHub room: each learner an account of her
own on one machine).

A file the course takes as the learner's own, her .env (settings.py), a store's SQLite file (memory/sqlite_files.py)
or a results file it writes over (command_options.write_whole), may stand in a folder that others may write too: /tmp,
a folder the class shares, a folder above hers that the search for .env reaches. There another account could have put
it first, to be read as hers (a .env that sends her key to its server, a session store with turns of its own) or
written as hers (a link to a folder of its own, or to another file of hers, which the write would replace). So a file
that belongs to another account is refused, as git refuses a repository another account owns; root's files are taken,
as root could change hers anyway. A process of root's takes every file: root may read and change any of them, and
where root runs the course (a container, which `make course` allows with --allow-root) over a folder its host's user
owns, the owners differ for no harm, and refusing would leave the learner no way on.

    belongs_to_another_account(os.stat(".env").st_uid)   -> False for her own file or root's
    another_accounts("/tmp/sessions.db")                   -> 1002: the file, or the link there, is that account's
"""

from __future__ import annotations

import os


def belongs_to_another_account(owner: int) -> bool:
    """Whether a file whose owner is the uid `owner` is another account's: neither this process's nor root's. Never
    for a process of root's, nor on Windows, whose files have no such owner."""
    if not hasattr(os, "geteuid") or os.geteuid() == 0:
        return False
    return owner not in (os.geteuid(), 0)


def another_accounts(path: str | os.PathLike[str]) -> int | None:
    """The uid of the account the file at `path`, or the link there, belongs to when that is another account's; None
    otherwise, and when nothing is there. A link counts as well as what it leads to: a link another account made
    may lead to a file of hers (which a write through it would replace) or to a folder of its own (where a file made
    through it would be for that account to read)."""
    for look in (os.lstat, os.stat):  # the link itself, then what it leads to
        try:
            owner = look(path).st_uid
        except OSError:  # nothing there, a link to nothing yet or to itself: nothing of another account's
            continue
        if belongs_to_another_account(owner):
            return owner
    return None
