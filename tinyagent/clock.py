"""Clocks: the agent's only source of "now", so lessons and tests give the same output on any date.

A clock is any zero-argument callable that returns a `datetime`. Production code uses `system_clock`;
a notebook passes `fixed_clock(...)` and gets the first article's 2026-06-30 every time it runs.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    """The real local time, to the second."""
    return datetime.now().replace(microsecond=0)


def fixed_clock(moment: datetime | str) -> Clock:
    """A clock stopped at `moment` (a datetime or an ISO string such as "2026-06-30T19:05:23")."""
    if isinstance(moment, str):
        moment = datetime.fromisoformat(moment)
    if not isinstance(moment, datetime):
        raise TypeError(f"fixed_clock needs a datetime or an ISO date string, got {type(moment).__name__}")

    def clock() -> datetime:
        return moment

    clock.moment = moment  # lets a reader (and a repr) see where the clock is stopped
    return clock
