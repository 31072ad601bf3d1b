"""Checks of the numbers a caller passes to the package: one message for one mistake, wherever it is made."""

from __future__ import annotations


def check_whole(what: str, value: object, *, least: int = 1, also: str = "") -> None:
    """A whole number of at least `least` (True and False are not numbers here), else a ValueError that says so."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        wanted = "a positive whole number" if least == 1 else f"a whole number >= {least}"
        raise ValueError(f"{what} must be {wanted}{' ' + also if also else ''}, got {value!r}")


def check_seconds(what: str, value: object) -> None:
    """A number of seconds above 0 (a whole or a decimal number; not True, not NaN), else a ValueError."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{what} must be a number of seconds above 0, got {value!r}")
