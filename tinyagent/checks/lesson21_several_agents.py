"""Lesson 21 (several agents): a registry scoped to one specialist's tools, and the rule that decides a reminder."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from tinyagent.checks.reporting import COURSE_NOW, _fail, _not_attempted, _passed, _run, grades
from tinyagent.clock import fixed_clock
from tinyagent.registry import ToolRegistry
from tinyagent.shop import Shop, shop_registry
from tinyagent.tools import Action

SCOPE_ALLOWED = ("queryOrder", "queryLogistics")


@grades("Exercise 1")
def check_scoped_registry(scope: Callable[[ToolRegistry, list[str]], ToolRegistry] | None) -> None:
    """21, exercise 1: scope(registry, names) -> a registry that runs only those tools."""
    exercise = "Exercise 1"
    if scope is None:
        return _not_attempted(exercise, "Write def scope(registry, names) in the cell above.")
    if not callable(scope):
        _fail(exercise, f"scope should be a function, got {type(scope).__name__}")
    clock = fixed_clock(COURSE_NOW)
    with Shop(":memory:", clock=clock) as shop:
        full = shop_registry(shop, clock)
        scoped = _run(exercise, "scope(registry, ['queryOrder', 'queryLogistics'])", scope, full, list(SCOPE_ALLOWED))
        if not isinstance(scoped, ToolRegistry):
            _fail(exercise, f"scope returned {type(scoped).__name__}: return a ToolRegistry, so an agent can use it")
        order = _run(exercise, "running queryOrder 88231", scoped.run, Action("queryOrder", "88231"))
        if order.error or "SF1234567890" not in order.text:
            _fail(exercise, f"queryOrder 88231 should run as in the full registry; it gave {order.text[:100]!r}")
        refund = json.dumps({"orderId": "88231", "reason": "it stopped charging"})
        outside = _run(exercise, "asking it for applyRefund", scoped.run, Action("applyRefund", refund))
        if shop.refunds():
            _fail(exercise, "applyRefund ran and wrote a refund: a tool outside the names must never run")
        if not outside.error:
            _fail(exercise, f"applyRefund should come back as an error Observation, got {outside.text[:100]!r}")
        if not all(name in outside.text for name in SCOPE_ALLOWED):
            _fail(exercise, f"the error should name the tools it allows ({', '.join(SCOPE_ALLOWED)}), so the model "
                            f"can pick one; it said {outside.text[:120]!r}")
        listing = _run(exercise, "its build_tool_list('en')", scoped.build_tool_list, "en")
        found = {name: re.search(rf"\b{name}\b", listing) for name in full.names}
        listed = sorted((name for name, at in found.items() if at), key=lambda name: found[name].start())
        if listed != list(SCOPE_ALLOWED):
            _fail(exercise, f"its tool list (the prompt's) shows {listed}: it should show only "
                            f"{list(SCOPE_ALLOWED)}, in that order")
        swapped = _run(exercise, "scope(registry, ['queryLogistics', 'queryOrder'])", scope, full,
                       list(reversed(SCOPE_ALLOWED)))
        if list(getattr(swapped, "names", [])) != list(reversed(SCOPE_ALLOWED)):
            _fail(exercise, f"scope(registry, ['queryLogistics', 'queryOrder']) holds {getattr(swapped, 'names', '?')}: "
                            "keep the names in the order given")
    return _passed(exercise, "queryOrder runs, applyRefund comes back as an error naming the tools allowed and "
                             "writes nothing, and the prompt lists only the two tools.")


def _reference_rains_during(meeting: dict, forecast: dict) -> bool:
    """21, exercise 2's answer, used to grade the cases."""
    start, end = meeting["start"], meeting["end"]
    last = end[:2] if end[3:] == "00" else f"{int(end[:2]) + 1:02d}"
    for hour in forecast["hours"]:
        if start[:2] <= hour["hour"][:2] < last:
            said = f"{hour.get('condition', '')} {hour.get('condition_zh', '')}".lower()
            if any(word in said for word in RAIN_WORDS):
                return True
    return False


RAIN_WORDS = ("rain", "shower", "storm", "drizzle", "雨")


def _hours(*rainy: str, zh_only: bool = False) -> dict:
    hours = []
    for hour in range(8, 22):
        name = f"{hour:02d}:00"
        wet = name in rainy
        hours.append({"hour": name, "condition": "" if zh_only and wet else ("thundershowers" if wet else "cloudy"),
                      "condition_zh": "雷阵雨" if wet else "多云"})
    return {"hours": hours}


RAIN_CASES = (
    ({"start": "15:00", "end": "16:30"}, _hours("15:00", "16:00"), "rain at 15:00 and 16:00, meeting 15:00-16:30"),
    ({"start": "09:00", "end": "10:00"}, _hours("15:00", "16:00"), "rain only in the afternoon, meeting 09:00-10:00"),
    ({"start": "15:00", "end": "16:00"}, _hours("16:00"), "rain at 16:00, meeting 15:00-16:00 (it ends as the rain starts)"),
    ({"start": "15:00", "end": "16:30"}, _hours("16:00"), "rain at 16:00, meeting 15:00-16:30 (it runs into that hour)"),
    ({"start": "15:00", "end": "17:00"}, _hours("14:00"), "rain at 14:00, meeting from 15:00 (the rain is over)"),
    ({"start": "10:00", "end": "11:00"}, _hours("10:00", zh_only=True), "rain at 10:00 said only in Chinese (雷阵雨)"),
    ({"start": "18:00", "end": "19:00"}, {"hours": [{"hour": "18:00", "condition": "light drizzle",
                                                     "condition_zh": "毛毛雨"}]}, "a drizzle at 18:00"),
)


@grades("Exercise 2")
def check_rains_during(rains_during: Callable[[dict, dict], bool] | None) -> None:
    """21, exercise 2: rains_during(meeting, forecast) -> True when an hour of the meeting has rain."""
    exercise = "Exercise 2"
    if rains_during is None:
        return _not_attempted(exercise, "Write def rains_during(meeting, forecast) in the cell above.")
    if not callable(rains_during):
        _fail(exercise, f"rains_during should be a function, got {type(rains_during).__name__}")
    for meeting, forecast, what in RAIN_CASES:
        expected = _reference_rains_during(meeting, forecast)
        mine = _run(exercise, f"rains_during on {what}", rains_during, meeting, forecast)
        if not isinstance(mine, bool):
            _fail(exercise, f"on {what} it returned {mine!r}: return True or False")
        if mine != expected:
            _fail(exercise, f"on {what} it said {mine}, expected {expected}")
    return _passed(exercise, f"{len(RAIN_CASES)} meetings judged: only the hours the meeting covers count, and rain "
                             "in either language.")
