"""How a share of runs is written in the course's tables (lesson 08's compliance, lesson 18's reports).

A whole percent, except that a share is never written as none or all when it is neither: 199 of 200 rounds to
"100%", which reads as "every run", and 1 of 200 to "0%"; those are ">99%" and "<1%".
"""

from __future__ import annotations


def percent(rate: float) -> str:
    """`rate` (0 to 1) as a whole percent: "67%"; ">99%" and "<1%" where rounding would say all or none."""
    whole = f"{rate:.0%}"
    if whole == "0%" and rate > 0:
        return "<1%"
    if whole == "100%" and rate < 1:
        return ">99%"
    return whole
