"""Folding an Observation into a short summary that keeps its facts (lesson 13).

An old Observation has done its job: the model read it and answered. Sent again in full with every later
request, it costs tokens; thrown away, a later "refund that order" or "what was the tracking number?" loses
what it said. Folding keeps the facts and drops the prose, by a fixed rule (no model call, so the same
Observation always folds the same way):

- JSON, what the shop's tools return, keeps its shape:
  - numbers, true, false and null stay;
  - a text of up to `SHORT_TEXT` (24) characters stays whole: ids, dates, statuses, names, titles;
  - a longer text keeps its first `SHORT_TEXT` characters and "…", then, in brackets, every id and number
    of the part left out (`(15, 48)`), so no id or number is lost;
  - an error (the value of "error") stays whole up to `ERROR_TEXT` (200) characters.
- Plain text keeps its first `PLAIN_TEXT` (60) characters, then the ids and numbers of the rest; a text that
  reports an error ("Error: ...", "错误：...") stays whole up to `ERROR_TEXT` characters.

An id or a number is a run that holds a digit, with the letters and separators around it: 88231,
SF1234567890, RF202606300001, 2026-06-22, 19:05:23, 1-3, 6.792, and the same typed in full width
(`IDS_AND_NUMBERS`). An underscore joins as a letter does (REF_A_88231 is one id); a word joined to an id by a
hyphen but holding no digit itself is not part of it (CASE-77 keeps 77). A sign that starts a number is part of it
(-15, -120.50, +86-138-0013-8000), and so are the commas that group its thousands (¥1,001,001 keeps 1,001,001; a
comma followed by other than three digits separates two numbers: 1,2).

JSON numbers stay numbers, as Python writes them (1999.00 becomes 1999.0, the same number). A number that a float
cannot hold as written (more digits than a float keeps, 12345678901234567890123.0, or past its range, 1e400) makes
the Observation fold as plain text, which keeps it as it was written.

The folded text starts with `(folded from N characters)`, so a model, and a reader of the trace, can see
that something was left out and how much. A fold that would not be shorter leaves the Observation as it
was, and folding a folded Observation changes nothing.
"""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal

SHORT_TEXT = 24
PLAIN_TEXT = 60
ERROR_TEXT = 200
FOLD_MARK = "(folded from {chars} characters) "
_MARK_START, _MARK_END = "(folded from ", " characters) "
# A digit with the letters, digits and inner separators around it, in ASCII or full width (ＲＦ２０２６…, as a
# Chinese keyboard in full-width mode types them).
# Starting only where a run of letters and digits starts: it finds the same ids, and a run of 32,000 letters with
# no digit is tried once, not from each of its letters (that took 4 s, a megabyte about an hour).
_WORD, _DIGIT, _SEPARATOR, _SIGN = "A-Za-z0-9Ａ-Ｚａ-ｚ０-９_", "0-9０-９", "-:./－：．／", "-+−－＋"
IDS_AND_NUMBERS = (rf"(?<![{_WORD}])(?:[{_SIGN}](?=[{_DIGIT}]))?[{_WORD}]*[{_DIGIT}][{_WORD}]*"
                   rf"(?:[{_SEPARATOR}][{_WORD}]+|(?<=[{_DIGIT}]),[{_DIGIT}]{{3}}(?![{_DIGIT}]))*")


_IDS_AND_NUMBERS = re.compile(IDS_AND_NUMBERS)


def fold_observation(text: str) -> str:
    """`text` folded to its facts (see the module's docstring); `text` itself when folding would not
    make it shorter, or when it is folded already."""
    if is_folded(text):
        return text
    try:
        value = json.loads(text, parse_float=_float_as_written)
        body = json.dumps(_fold_value(value), ensure_ascii=False, separators=(",", ":")) \
            if isinstance(value, (dict, list)) else None
    except (ValueError, RecursionError):  # not JSON, or nested deeper than Python reads (or folds): text
        body = None
    if body is None:
        reports_error = text.lstrip().lower().startswith(("error", "错误"))
        body = _fold_text(text, ERROR_TEXT if reports_error else PLAIN_TEXT)
    folded = FOLD_MARK.format(chars=len(text)) + body
    return folded if len(folded) < len(text) else text


def _float_as_written(number: str) -> float:
    """A JSON number as a float, or a ValueError (then the Observation folds as text) for one a float cannot hold:
    1e400 would be written back as Infinity, which is no JSON, and 12345678901234567890123.0 as 1.2345678901234568e+22,
    another number."""
    value = float(number)
    if not math.isfinite(value):
        raise ValueError(f"{number} is past a float's range")
    if Decimal(repr(value)) != Decimal(number):
        raise ValueError(f"{number} has more digits than a float keeps")
    return value


def is_folded(text: str) -> bool:
    """True for a text that `fold_observation` wrote."""
    return _mark_length(text) > 0


def strip_fold_mark(text: str) -> str:
    """The folded body without its `(folded from N characters)` mark: JSON stays JSON. The classroom model
    reads a folded Observation this way (classroom/conversation.py)."""
    return (text or "")[_mark_length(text):]


def _mark_length(text: str) -> int:
    """How long the fold mark at the start of `text` is (0: there is none). No regex: this runs for every
    Observation the classroom model reads."""
    if not (text or "").startswith(_MARK_START):
        return 0
    end = text.find(_MARK_END, len(_MARK_START))
    return end + len(_MARK_END) if end > 0 and text[len(_MARK_START) : end].isdigit() else 0


def ids_and_numbers(text: str) -> list[str]:
    """Every id and number in `text`, in order, each once."""
    return list(dict.fromkeys(_IDS_AND_NUMBERS.findall(text or "")))


def _fold_value(value: object, key: str | None = None) -> object:
    if isinstance(value, dict):
        return {k: _fold_value(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_fold_value(item) for item in value]
    if isinstance(value, str):
        return _fold_text(value, ERROR_TEXT if key == "error" else SHORT_TEXT)
    return value  # numbers, true, false, null


def _fold_text(text: str, keep: int) -> str:
    """The first `keep` characters, "…", and in brackets the ids and numbers that were cut off."""
    if len(text) <= keep:
        return text
    kept = text[:keep].rstrip() + "…"
    # An id that starts in the kept part and runs past it is listed whole, so no id is ever half kept; so is one the
    # cut changed (12,3456 cut after 12,345 reads as one grouped number, and 12 is no longer there).
    shown = set(ids_and_numbers(kept))
    left_out = [m.group() for m in _IDS_AND_NUMBERS.finditer(text) if m.end() > keep or m.group() not in shown]
    return kept + (f"({', '.join(dict.fromkeys(left_out))})" if left_out else "")
