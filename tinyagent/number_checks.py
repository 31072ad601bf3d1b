"""Checks of the numbers a caller passes to the package: one message for one mistake, wherever it is made.

`ascii_number` is the one rule for a number read from text a client sent (a URL, a header, an option on the
command line): ASCII digits only, so that each number has one spelling and reading it cannot fail.
"""

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


def ascii_number(text: str, most_digits: int = 18) -> int | None:
    """The whole number `text` spells in ASCII digits 0-9 (nothing else: no sign, no space), or None.

    Not `text.isdigit()` then `int(text)`: isdigit() is True for "³" (U+00B3), which int() refuses with a
    ValueError, and int() reads "٣" (Arabic-Indic), "３" (full-width), " 3", "+3" and "1_0" as numbers too, so an
    id would have many spellings. `most_digits` keeps the number small (int() of 5,000 digits raises as well)."""
    if not (isinstance(text, str) and 0 < len(text) <= most_digits and text.isascii() and text.isdigit()):
        return None
    return int(text)
