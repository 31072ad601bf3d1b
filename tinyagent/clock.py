"""Clocks: the agent's only source of "now", so lessons and tests give the same output on any date.

A clock is any zero-argument callable that returns a `datetime`. Production code uses `system_clock`;
a notebook passes `fixed_clock(...)` and gets the first article's 2026-06-30 every time it runs.

Both give the shop's own time: a naive `datetime` on China Standard Time (UTC+8), like every date the shop keeps
(an order's signTime, a parcel's trace). The shop is in China, so its return windows are counted in its days, and a
refund id carries its date. The machine's own zone would move them: a hub or a CI runner set to UTC is 8 hours
behind, so from midnight to 08:00 in Beijing it would still say yesterday, and a return window would stay open for
eight hours of the day after its last.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone

Clock = Callable[[], datetime]

# China has kept one offset all year since 1991 (no daylight saving), so a fixed offset is its whole rule: no
# time-zone database needed, which Windows does not ship.
SHOP_TIME_ZONE = timezone(timedelta(hours=8), "China Standard Time")

# The course's "today" (lesson 00): the first article's day, in the shop's time. The notebooks, the checks, the
# evaluation and the service's exercises stop their clocks here, so every run prints the same dates.
COURSE_NOW = "2026-06-30T19:05:23"


def system_clock() -> datetime:
    """The real time as the shop's clocks show it (China Standard Time), to the second, whatever zone the machine
    is set to."""
    return datetime.now(SHOP_TIME_ZONE).replace(tzinfo=None, microsecond=0)


def fixed_clock(moment: datetime | str) -> Clock:
    """A clock stopped at `moment` (a datetime or an ISO string such as "2026-06-30T19:05:23"), read as the shop's
    time. A moment with an offset ("2026-06-30T13:05:23+02:00") is a definite instant: the clock gives the shop's
    time at that instant (19:05:23), so it reads like every other date the shop keeps."""
    if isinstance(moment, str):
        moment = datetime.fromisoformat(moment)
    if not isinstance(moment, datetime):
        raise TypeError(f"fixed_clock needs a datetime or an ISO date string, got {type(moment).__name__}")
    if moment.tzinfo is not None:
        try:
            moment = moment.astimezone(SHOP_TIME_ZONE).replace(tzinfo=None)
        except OverflowError:  # 0001-01-01T05:00+09:00 is a moment of the year 0 in the shop
            raise ValueError(f"{moment.isoformat()} is outside the dates the shop's clock can tell") from None

    def clock() -> datetime:
        return moment

    return clock
