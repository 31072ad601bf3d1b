"""Which learner names the classroom hub accepts: the one rule for the sign-in form, the hub's API and
`.hub/learners.txt` (jupyterhub_config.py and classroom_hub.py both use it).

A name is what a person types at a login form: ASCII letters, digits and `.`, `_`, `-`, starting with a
letter or a digit, at most 24 characters. JupyterHub lower-cases names before it checks them. Each
learner's server runs as the system account `jupyter-<name>` (learner_accounts.py): a newline, a control
character, a slash or a name past 24 characters (the account name's limit is 32) would otherwise reach
`useradd`, the log and the learner's home folder's path.
"""

from __future__ import annotations

import re
from pathlib import Path

MAX_LENGTH = 24
# \A and \Z, not ^ and $: `$` also matches before a final newline, and JupyterHub uses re.match.
PATTERN = rf"\A[a-z0-9][a-z0-9._-]{{0,{MAX_LENGTH - 1}}}\Z"
RULE = f"letters, digits, '.', '_' or '-', starting with a letter or digit, at most {MAX_LENGTH} characters"
_NAME = re.compile(PATTERN)


class LearnerListError(ValueError):
    """A line of learners.txt that is not a learner's name; str() is one line naming the file and line."""


def is_learner_name(name: str) -> bool:
    """True for a name the hub accepts (already lower-cased, as JupyterHub does before checking)."""
    return bool(_NAME.match(name))


def lowered(typed: str) -> str:
    """`typed` lower-cased as JupyterHub does, or "" (no name) when it is not ASCII: a Kelvin sign (U+212A)
    lower-cases to the ASCII `k`, so `\\u212aen` would pass the rule as `ken`."""
    return typed.lower() if typed.isascii() else ""


def typed_name(handler, data: dict) -> str:
    """The user name as the login form sent it. Tornado turns control characters in form fields into
    spaces and JupyterHub trims them, so `ada\\x00` would sign in as `ada`: the raw field shows them. A form
    sending the field twice gives no name: this would check one and JupyterHub sign in the other."""
    if handler is None:
        return data.get("username", "")
    fields = handler.request.body_arguments.get("username") or []
    if len(fields) > 1:
        return ""
    return lowered(fields[0].decode("utf-8", "replace").strip(" ")) if fields else data.get("username", "")


def read_learners(path: Path) -> set[str]:
    """The names listed in `path`, one a line (lower-cased; blank lines and `# comments` skipped).

    Raises LearnerListError for the first line that is not a name, so the hub never starts with a list
    it would silently read differently from what the teacher wrote."""
    names = set()
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise LearnerListError(f"{path}: not UTF-8 text; write one learner name a line") from None
    for number, line in enumerate(text.split("\n"), start=1):
        typed = line.strip(" \t\r")  # spaces around a name and Windows line ends are the editor's
        if not typed or typed.startswith("#"):
            continue
        name = lowered(typed)
        if not is_learner_name(name):
            raise LearnerListError(f"{path}:{number}: {typed!r} is not a learner name ({RULE})")
        names.add(name)
    return names
