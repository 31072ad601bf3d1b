"""Lesson 02 (the registry): did-you-mean for unknown tools, and long Observations capped."""

from __future__ import annotations

import re

from tinyagent.checks.reporting import (
    _brief,
    _fail,
    _fresh_shop,
    _instance,
    _json,
    _not_attempted,
    _passed,
    _run,
    grades,
)
from tinyagent.registry import ToolRegistry
from tinyagent.shop import shop_tools
from tinyagent.tools import Action


@grades("Exercise 1")
def check_suggesting_registry(SuggestingRegistry: type | None) -> None:
    """02, exercise 1: an unknown-tool error with "did_you_mean" for near-misses only."""
    exercise = "Exercise 1"
    if SuggestingRegistry is None:
        return _not_attempted(exercise, "Write class SuggestingRegistry(CarefulRegistry) in the cell above.")
    tools = shop_tools(_fresh_shop())
    names = [tool.name for tool in tools]
    registry = _instance(exercise, SuggestingRegistry, tools)
    cases = [("queryorder", "queryOrder"), ("checkOrder", "queryOrder"), ("getTime", "getCurrentTime"),
             ("applyrefund", "applyRefund"), ("trackParcel", None), ("weather", None)]
    for wrong, expected in cases:
        text = _run(exercise, f"execute(Action({wrong!r}, '88231'))", registry.execute, Action(wrong, "88231"))
        data = _json(exercise, text, f"execute(Action({wrong!r}, ...))")
        if not isinstance(data, dict) or "error" not in data:
            _fail(exercise, f"{wrong!r} is not a tool: the Observation should be an error object, got {data!r}")
        if data.get("available_tools") != names:
            _fail(exercise, f"for {wrong!r} the error should still list available_tools {names}")
        if expected is None and "did_you_mean" in data:
            _fail(exercise, f"{wrong!r} is not close to any tool name, yet the error has did_you_mean="
                            f"{data['did_you_mean']!r}: suggest only a near-miss, and leave the key out otherwise")
        if data.get("did_you_mean") != expected:
            if expected is None:
                _fail(exercise, f"{wrong!r} is not close to any tool name, yet did_you_mean is "
                                f"{data.get('did_you_mean')!r}: suggest only a near-miss (leave the key out)")
            _fail(exercise, f"{wrong!r} should suggest {expected!r}, got did_you_mean={data.get('did_you_mean')!r}")
    real = _run(exercise, "execute(Action('queryOrder', '88231'))", registry.execute, Action("queryOrder", "88231"))
    if _json(exercise, real, "execute(queryOrder)").get("orderId") != "88231":
        _fail(exercise, "a real tool must still run: execute(Action('queryOrder', '88231')) lost the order")
    return _passed(exercise, "near-misses get a suggestion, synonyms only the list of tools.")


CUT_NOTE = re.compile(r"\[cut: (\d+) more characters?\]\s*$")
# The whole of what follows the kept part, in the form the exercise gives: "… [cut: 812 more characters]".
CUT_FORM = re.compile(r"\s*… ?\[cut: \d+ more characters?\]\s*")


@grades("Exercise 2")
def check_capped_registry(CappedRegistry: type | None) -> None:
    """02, exercise 2: Observations longer than `limit` are cut, with a note that counts what was cut."""
    exercise = "Exercise 2"
    if CappedRegistry is None:
        return _not_attempted(exercise, "Write class CappedRegistry(CarefulRegistry) in the cell above.")
    full_registry = ToolRegistry(shop_tools(_fresh_shop()))
    for limit, action in [(120, Action("searchKnowledge", "退货")), (60, Action("queryOrder", "88231"))]:
        capped = _instance(exercise, CappedRegistry, shop_tools(_fresh_shop()), limit=limit)
        full = full_registry.execute(action)
        short = _run(exercise, f"execute({action})", capped.execute, action)
        if not isinstance(short, str):
            _fail(exercise, f"execute returned {type(short).__name__}, not a string")
        if short == full:
            _fail(exercise, f"with limit={limit} an Observation of {len(full)} characters came back whole")
        if not short.startswith(full[:limit]):
            _fail(exercise, f"with limit={limit} the kept part should be the first {limit} characters "
                            f"of the Observation, got {short[:limit + 20]!r}")
        note = CUT_NOTE.search(short[limit:])
        if note is None:
            _fail(exercise, f"the cut Observation ends without a note such as '… [cut: N more characters]', "
                            f"so the model cannot tell it is incomplete: it ends {short[-40:]!r}")
        if not CUT_FORM.fullmatch(short[limit:]):
            _fail(exercise, f"after the first {limit} characters comes only the note, in the form '… [cut: N more "
                            f"characters]' (the … says the text stops mid-way); it is {_brief(short[limit:])}")
        cut = len(full) - limit
        if int(note.group(1)) != cut:
            _fail(exercise, f"the note says {note.group(1)} more characters, but {cut} were cut "
                            f"({len(full)} in the Observation, {limit} kept)")
    capped = _instance(exercise, CappedRegistry, shop_tools(_fresh_shop()), limit=120)
    short_text = full_registry.execute(Action("getCurrentTime"))
    if _run(exercise, "execute(getCurrentTime)", capped.execute, Action("getCurrentTime")) != short_text:
        _fail(exercise, "an Observation within the limit must pass untouched (getCurrentTime's did not)")
    # The edge: an Observation exactly `limit` long is within it; one character longer loses one.
    order = Action("queryOrder", "88231")
    exact = full_registry.execute(order)
    for limit in (len(exact), len(exact) - 1):
        capped = _instance(exercise, CappedRegistry, shop_tools(_fresh_shop()), limit=limit)
        got = _run(exercise, f"execute({order}) with limit={limit}", capped.execute, order)
        if limit == len(exact) and got != exact:
            _fail(exercise, f"an Observation of exactly {limit} characters with limit={limit} is within the limit and "
                            f"must pass untouched; it came back as {_brief(got[-40:])}")
        if limit < len(exact) and not (isinstance(got, str) and got.startswith(exact[:limit])
                                       and (note := CUT_NOTE.search(got[limit:])) and note.group(1) == "1"):
            _fail(exercise, f"with limit={limit}, one character under the Observation's {len(exact)}, keep {limit} "
                            f"characters and say 1 more was cut; it ends {_brief(str(got)[-40:])}")
    return _passed(exercise, "long Observations are cut at the limit, and the note counts what was cut.")
