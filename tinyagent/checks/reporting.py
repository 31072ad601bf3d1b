"""How every check reports: not attempted yet, passed, or `ExerciseFailed` with what is wrong; and the helper
that calls the learner's code, so that an exception in it becomes a failure that names the call."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..clock import fixed_clock
from ..shop import Shop

# The course's "today" (lesson 00): every check builds its shop with this clock.
COURSE_NOW = "2026-06-30T19:05:23"


class ExerciseFailed(AssertionError):
    """The learner's answer is wrong; the message says what was expected and what came back."""


def classroom_only(settings: Any, why: str) -> bool:
    """True on the classroom model. On a real model, say which check is skipped and why, and return False.

    Use it as `if classroom_only(settings, "a real model words its replies its own way"):`."""
    if settings.offline:
        return True
    print(f"skipped on a real model: {why}")
    return False


# -- how every check reports ---------------------------------------------------------------------
def _not_attempted(exercise: str, hint: str) -> None:
    print(f"{exercise}: not attempted yet. {hint}")


def _passed(exercise: str, why: str) -> None:
    print(f"{exercise}: passed. {why}")


def _fail(exercise: str, what: str) -> None:
    raise ExerciseFailed(f"{exercise}: {what}")


def _run(exercise: str, what: str, function: Callable, *args: Any, **kwargs: Any) -> Any:
    """Call the learner's code; an exception in it becomes a failure that names the call."""
    try:
        return function(*args, **kwargs)
    except ExerciseFailed:
        raise
    except Exception as exc:  # noqa: BLE001 - the learner's bug, reported as the check's failure
        _fail(exercise, f"{what} raised {type(exc).__name__}: {exc}")


def _fresh_shop() -> Shop:
    return Shop(":memory:", clock=fixed_clock(COURSE_NOW))


def _instance(exercise: str, cls: Any, *args: Any, **kwargs: Any) -> Any:
    if not isinstance(cls, type):
        _fail(exercise, f"expected a class, got {type(cls).__name__}: write `class ...:` in the answer cell")
    return _run(exercise, f"{cls.__name__}({', '.join(map(repr, args))})", cls, *args, **kwargs)


def _json(exercise: str, text: Any, where: str) -> Any:
    if not isinstance(text, str):
        _fail(exercise, f"{where} returned {type(text).__name__}, not a string: a tool returns text")
    try:
        return json.loads(text)
    except ValueError:
        _fail(exercise, f"{where} returned text that is not JSON: {text[:120]!r}")

