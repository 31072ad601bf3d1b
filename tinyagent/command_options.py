"""The options of the course's commands, checked before anything runs: a bad one is one line and exit code 2.

`python -m tinyagent` (__main__.py) and the benchmarks a teacher runs (benchmarks/) follow one rule for what they are
given: bad input gets `error: ...` on one line and exit code 2, never a traceback and never a result measured on
nonsense, and a results file is checked before a long run and written whole. These are the parser and the argparse
types that keep that rule, in one place for both.
"""

from __future__ import annotations

import argparse
import errno
import math
import os
import re
import stat
from pathlib import Path
from typing import NoReturn

from tinyagent.file_owners import another_accounts
from tinyagent.number_checks import ascii_number

# The longest wait any option may ask for. Python's sockets and locks refuse a timeout past about 9e9 s (an
# OverflowError from deep inside urllib3, or a 500 on every request of the service): a day is wait enough.
LONGEST_WAIT_S = 86_400


class OneLineParser(argparse.ArgumentParser):
    """argparse, with its errors on one line (argparse prints the usage above them) and exit code 2."""

    def error(self, message: str) -> NoReturn:
        # "argument --timeout: --timeout must be ..." says the name twice: keep our own message whole.
        own = re.match(r"argument ([^:]+): (.*)", message)
        if own and own.group(1).split("/")[0].lstrip("-") in own.group(2).split(":")[0]:
            message = own.group(2)
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


def whole_number(option: str, highest: int, why: str, lowest: int = 1):
    """An argparse type for `option`: a whole number from `lowest` to `highest`, else one line saying so and why."""

    def parse(text: str) -> int:
        number = ascii_number(text)
        if number is None or not lowest <= number <= highest:
            raise argparse.ArgumentTypeError(
                f"{option} must be a whole number from {lowest} to {highest}, got {text!r} ({why})")
        return number

    return parse


def number(option: str, lowest: float, highest: float, what: str = "a number", above: bool = False,
           highest_said: str = ""):
    """An argparse type for `option`: a finite number from `lowest` (with `above`: more than `lowest`) to `highest`,
    else one line (`highest_said` follows the highest value in it). NaN and infinity are refused: every comparison
    with NaN is False, so a check like `<= 0` lets it through."""
    allowed = f"above {lowest:g} and at most {highest:g}" if above else f"from {lowest:g} to {highest:g}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        fits = (lowest < value if above else lowest <= value) and value <= highest
        if not (math.isfinite(value) and fits):
            raise argparse.ArgumentTypeError(f"{option} must be {what} {allowed}{highest_said}, got {text!r}")
        return value

    return parse


def number_of_seconds(option: str, highest: float = LONGEST_WAIT_S, zero_ok: bool = False):
    """An argparse type for `option`: seconds above 0 (from 0 with `zero_ok`) and at most `highest`, a day unless
    said, else one line."""
    return number(option, 0, highest, "a number of seconds", above=not zero_ok,
                  highest_said=" (a day)" if highest == LONGEST_WAIT_S else "")


def output_file(text: str) -> Path:
    """--json: a file the results can be written to, checked before the command runs for minutes."""
    try:
        owner = another_accounts(text)
        if owner is not None:
            raise argparse.ArgumentTypeError(f"--json {text!r} belongs to another account (uid {owner}): nothing is "
                                             "written through it; give a path in a folder of your own")
        # A link is followed: the file it names is what write_whole writes, and what is checked here (a link to a
        # folder that does not exist, or a loop of links, is refused now, not after the run)
        path = Path(text).resolve(strict=False) if Path(text).is_symlink() else Path(text)
        if path.is_dir():
            raise argparse.ArgumentTypeError(f"--json {text!r} is a folder: give a file name, e.g. results.json")
        if path.exists() and not path.is_file():  # written whole, the results would take its place (write_whole)
            raise argparse.ArgumentTypeError(f"--json {text!r} is not a file (a device or a pipe): give a file name, "
                                             "e.g. results.json")
        folder = path.parent if str(path.parent) else Path(".")
        if not folder.is_dir():
            raise argparse.ArgumentTypeError(f"--json {text!r}: the folder {str(folder)!r} does not exist")
        if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
            raise argparse.ArgumentTypeError(f"--json {text!r}: cannot write there (permission denied)")
    except OSError as exc:  # a name longer than the file system allows, ...
        raise argparse.ArgumentTypeError(f"--json {text!r}: {exc.strerror or exc}") from None
    except RuntimeError:  # Path.resolve on a loop of links (Python 3.11 and 3.12; later ones raise OSError)
        raise argparse.ArgumentTypeError(f"--json {text!r}: a loop of links, naming no file") from None
    return Path(text)


def write_whole(path: Path, text: str) -> None:
    """Write `text` to `path` so that a failure (a full disk, an interrupt) leaves the file that was there as it
    was: into a new file beside it first, which then takes its place in one step. A link is followed: the file it
    names is written, and the link stays a link. The file keeps the mode of the one it replaces (a file its owner made
    0600 stays hers alone); a new one gets what the umask leaves, as open() gives. A file or a link that belongs to
    another account is refused (PermissionError): put in a folder others may write, it may lead to a file of hers."""
    owner = another_accounts(path)
    if owner is not None:
        raise PermissionError(errno.EACCES, f"it belongs to another account (uid {owner})", str(path))
    path = Path(os.path.realpath(path))
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = None
    # A name nobody can know beforehand, made with O_EXCL: under a fixed one (.results.json.<pid>.partial) another
    # account could plant a link in a folder it may write (/tmp, a folder the class shares), and the text went
    # through that link into a file of the person running the command.
    temporary = path.with_name(f".{path.name}.{os.urandom(8).hex()}.partial")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    handle = os.open(temporary, flags, 0o666 if mode is None else mode)
    try:
        with open(handle, "w", encoding="utf-8") as file:
            if mode is not None:
                os.chmod(temporary, mode)  # exactly the old file's, before any text: the umask may have taken a bit
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
