"""Lesson 15 (real tools): a safe arithmetic evaluator, and the workspace's path check."""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tinyagent.checks.reporting import _fail, _not_attempted, _passed, _run, grades

# (expression, value): what a safe evaluator must compute.
SAFE_EVAL_VALUES = [
    ("2 + 3 * 4", 14), ("(2 + 3) * 4", 20), ("-(2 - 5)", 3), ("- -4", 4), ("7 / 2", 3.5), ("(1 + 2) ** 3", 27),
    ("2 ** -1", 0.5), ("2 ** 100", 2**100), ("2 ** -100", 2**-100), ("1999 * 0.85", 1699.15), ("10 - 2 - 3", 5),
]
# (expression, what it is): what a safe evaluator must refuse with ValueError, quickly, running nothing.
SAFE_EVAL_REFUSALS = [
    ("len('abc')", "a function call"),
    ("__import__('os').getcwd()", "a call reaching the operating system"),
    ("().__class__", "an attribute"),
    ("x + 1", "a name"),
    ("'ab' * 3", "text"),
    ("True + 1", "True (a bool is not a number here)"),
    ("[1, 2]", "a list"),
    ("1 if 2 else 3", "an if-expression"),
    ("3 > 2", "a comparison"),
    ("6 % 4", "the operator %, which is not in the list"),
    ("1 / 0", "a division by zero"),
    ("2 ** 101", "an exponent over 100"),
    ("10 ** 1000", "an exponent over 100 (a 1001-digit number)"),
    # The exponent as it is computed, not as it is written: a guard that reads only a literal lets
    # 10 ** (10 ** 99) through, and hangs. This one is small enough to come back if it gets through.
    ("2 ** (10 * 11)", "an exponent of 110 that is not written as one number"),
    ("2 ** -101", "an exponent of -101 (over 100 in size)"),
    ("7 // 2", "the operator //, which is not in the list"),
    ("2j", "a complex number (only int and float)"),
]


@grades("Exercise 1")
def check_safe_eval(safe_eval: Callable[[str], float] | None) -> None:
    """15, exercise 1: an arithmetic evaluator that walks the ast with a whitelist, never `eval`."""
    exercise = "Exercise 1"
    if safe_eval is None:
        return _not_attempted(exercise, "Write def safe_eval(text) in the cell above.")
    if not callable(safe_eval):
        _fail(exercise, f"safe_eval should be a function, got {type(safe_eval).__name__}")
    for text, expected in SAFE_EVAL_VALUES:
        got = _run(exercise, f"safe_eval({text!r})", safe_eval, text)
        if isinstance(got, bool) or not isinstance(got, (int, float)) or not math.isclose(got, expected,
                                                                                         rel_tol=1e-9):
            _fail(exercise, f"safe_eval({text!r}) returned {got!r}; it should be {expected!r}")
    for text, what in SAFE_EVAL_REFUSALS:
        try:
            got = safe_eval(text)
        except ValueError as refusal:
            if not str(refusal).strip():
                _fail(exercise, f"safe_eval({text!r}) raised ValueError with no message: say what is refused "
                                f"({what}), since the tool turns the message into the Observation the model reads")
            continue
        except Exception as exc:  # noqa: BLE001 - the learner's bug, reported as the check's failure
            _fail(exercise, f"safe_eval({text!r}) raised {type(exc).__name__}: {exc}; for {what} it should "
                            "raise ValueError with a clear message, so the tool can turn it into an Observation")
        shown = repr(got) if len(repr(got)) <= 60 else f"a {len(str(got))}-digit number"
        _fail(exercise, f"safe_eval({text!r}) returned {shown}: {what} must be refused with ValueError, not "
                        "computed" + (" (is it calling eval?)" if what.startswith("a ") and "call" in what else ""))
    return _passed(exercise, f"{len(SAFE_EVAL_VALUES)} expressions computed, {len(SAFE_EVAL_REFUSALS)} refused "
                             "with ValueError: calls, names, attributes, text, huge powers and division by zero.")


def _workspace_traps(root: Any) -> tuple[Any, list[tuple[str, bool, str]]]:
    """A workspace with traps around it, and (path, inside?, what it is) for each case the check asks about."""
    root = Path(root)
    workspace, outside, evil = root / "workspace", root / "outside", root / "workspace-evil"
    for folder in (workspace / "notes", outside, evil):
        folder.mkdir(parents=True)
    (workspace / "notes" / "todo.txt").write_text("mine")
    (outside / "secret.txt").write_text("not yours")
    (evil / "x.txt").write_text("not yours either")
    (workspace / "shared").symlink_to(outside, target_is_directory=True)
    (workspace / "secret-link.txt").symlink_to(outside / "secret.txt")
    (workspace / "alias").symlink_to(workspace / "notes", target_is_directory=True)
    (workspace / "dangling.txt").symlink_to(outside / "not-there-yet.txt")
    cases = [
        ("notes/todo.txt", True, "a file inside"),
        ("notes/new.txt", True, "a new file inside (it does not exist yet)"),
        ("./notes//todo.txt", True, "a file inside, written with ./ and //"),
        ("notes", True, "a folder inside"),
        ("../outside/secret.txt", False, "a path that goes up with .."),
        ("notes/../../outside/secret.txt", False, "a path that goes up with .. in the middle"),
        ("../workspace-evil/x.txt", False, "a folder outside whose name starts with the workspace's name"),
        ("/etc/passwd", False, "an absolute path"),
        (str(outside / "secret.txt"), False, "an absolute path to a file outside"),
        ("shared/secret.txt", False, "a path through a link to a folder outside"),
        ("secret-link.txt", False, "a link to a file outside"),
        ("dangling.txt", False, "a link to a file outside that does not exist yet"),
        ("notes/../notes/todo.txt", False, "a path with .. in it, even one that comes back inside"),
        ("alias/todo.txt", False, "a path through a link, even one that points inside"),
        ("~/notes/todo.txt", False, "a path that starts with ~ (the home folder)"),
        ("\\notes\\todo.txt", False, "a path that starts with \\ (absolute on Windows)"),
        ("C:notes/todo.txt", False, "a path with a drive letter (it holds a ':')"),
    ]
    return workspace, cases


@grades("Exercise 2")
def check_inside_workspace(inside_workspace: Callable[[Any, str], bool] | None) -> None:
    """15, exercise 2: the sandbox's path check, on a workspace with traps (links, .., a look-alike folder)."""
    exercise = "Exercise 2"
    if inside_workspace is None:
        return _not_attempted(exercise, "Write def inside_workspace(workspace, path) in the cell above.")
    if not callable(inside_workspace):
        _fail(exercise, f"inside_workspace should be a function, got {type(inside_workspace).__name__}")
    with tempfile.TemporaryDirectory() as scratch:
        workspace, cases = _workspace_traps(scratch)
        for path, expected, what in cases:
            got = _run(exercise, f"inside_workspace(workspace, {path!r})", inside_workspace, workspace, path)
            if not isinstance(got, bool):
                _fail(exercise, f"inside_workspace(workspace, {path!r}) returned {got!r}; return True or False")
            if got != expected:
                shown = path.replace(scratch, "/tmp/...")  # the temporary folder's name changes run to run
                verdict = "allowed" if got else "refused"
                _fail(exercise, f"{shown!r} ({what}) is {verdict}; it should be "
                                f"{'allowed' if expected else 'refused'}")
    return _passed(exercise, f"{len(cases)} paths judged like the package's file tools: no '..', no absolute "
                             "path, no link on the way, wherever it points.")
