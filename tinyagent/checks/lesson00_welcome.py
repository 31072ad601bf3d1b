"""Lesson 00 (welcome): predict the tools of the parcel question and of a missing order."""

from __future__ import annotations

import re

from tinyagent.checks.generated import Spec
from tinyagent.checks.reporting import _fail, _fresh_shop, _not_attempted, _passed, grades, shown
from tinyagent.shop import shop_registry, shop_tools
from tinyagent.tools import Action


def _written_exactly(names: list[str], known: list[str]) -> str:
    """For names that are a shop tool's but for case, or that hold one tool's name among other characters (a
    class name, snake_case, quotes, `Action:` or the input written with it): which names are meant (the registry
    looks a name up as it is written), or "" when none is."""
    meant = []
    for name in names:
        letters = re.sub(r"[^a-z]", "", name.lower())
        held = [tool for tool in known if tool.lower() in letters]
        if len(held) == 1:  # two tools in one name ("queryOrder, queryLogistics") are no one name meant
            meant.extend(held)
    return f": a tool name is written exactly, {', '.join(map(shown, meant))}" if meant else ""


@grades("Exercise 1", spec=Spec(fixed="a prediction of one run (order 88231's parcel), so nothing to generate: the "
                                      "names are compared with the two tools that run takes, queryOrder then "
                                      "queryLogistics"))
def check_parcel_prediction(predicted_tools: list[str] | None) -> None:
    """00, exercise 1: the tools the parcel question needs, in order."""
    exercise = "Exercise 1"
    if predicted_tools is None:
        return _not_attempted(exercise, 'Set predicted_tools to a list of tool names, e.g. ["getCurrentTime"].')
    if isinstance(predicted_tools, str):  # ("queryOrder") is a string: a tuple needs its comma
        _fail(exercise, f"predicted_tools is one string, {shown(predicted_tools)}: write a list of tool names, "
                        'e.g. ["getCurrentTime"] (a tuple of one needs its comma)')
    if not isinstance(predicted_tools, (list, tuple)) or not all(isinstance(name, str) for name in predicted_tools):
        _fail(exercise, f"predicted_tools should be a list of tool names (strings), got {shown(predicted_tools)}")
    names = [name.strip() for name in predicted_tools]
    known = [tool.name for tool in shop_tools(_fresh_shop())]
    unknown = [name for name in names if name not in known]
    if unknown:
        _fail(exercise, f"{unknown} {'is' if len(unknown) == 1 else 'are'} not among the shop's tools {known}"
                        + _written_exactly(unknown, known))
    if "queryLogistics" not in names:
        _fail(exercise, "the question is where the parcel is: which tool tracks a parcel?")
    if "queryOrder" not in names:
        _fail(exercise, "queryLogistics needs a tracking number, and the customer gave only an order id "
                        "(88231): which tool turns an order id into a tracking number?")
    if names.index("queryOrder") > names.index("queryLogistics"):
        _fail(exercise, "the order matters: the tracking number comes from queryOrder, so it must run "
                        "before queryLogistics")
    if names != ["queryOrder", "queryLogistics"]:
        extra = [name for name in names if name not in ("queryOrder", "queryLogistics")]
        _fail(exercise, f"two calls are enough; what would {extra or 'a repeated call'} add to "
                        "finding the parcel?")
    return _passed(exercise, "queryOrder turns the order id into a tracking number, then queryLogistics "
                             "tracks it. Now run the agent and compare with result.trace.tool_calls.")


@grades("Exercise 2", spec=Spec(fixed="a prediction of one run (order 99999), so nothing to generate: the first "
                                      "tool is compared with queryOrder, and the error flag with what the shop's "
                                      "queryOrder answers for 99999"))
def check_missing_order_prediction(first_tool: str | None, observation_is_error: bool | None) -> None:
    """00, exercise 2: order 99999 does not exist. Which tool goes first, and is its Observation an error?"""
    exercise = "Exercise 2"
    if first_tool is None and observation_is_error is None:
        return _not_attempted(exercise, "Set first_tool (a tool name) and observation_is_error (True or False).")
    known = [tool.name for tool in shop_tools(_fresh_shop())]
    if first_tool is None:
        _fail(exercise, "first_tool is still None: set it to the name of the tool you expect first (a str)")
    if not isinstance(first_tool, str):
        _fail(exercise, f"first_tool={shown(first_tool)}: write one tool's name as a string, like 'getCurrentTime'")
    if first_tool.strip() not in known:
        _fail(exercise, f"first_tool={shown(first_tool)} is not among the shop's tools {known}"
                        + _written_exactly([first_tool.strip()], known))
    if first_tool.strip() != "queryOrder":
        _fail(exercise, f"first_tool={shown(first_tool)}: the customer gave an order id and wants the parcel; "
                        "tracking needs a tracking number, which only the order holds")
    if not isinstance(observation_is_error, bool):
        _fail(exercise, f"observation_is_error should be True or False, got {shown(observation_is_error)}")
    error = shop_registry(_fresh_shop()).run(Action("queryOrder", "99999")).error
    if observation_is_error != error:
        _fail(exercise, f"observation_is_error={observation_is_error}: the shop has orders 88231 to 88236 "
                        "only; what does a tool return for an order it does not have? (the registry sets the "
                        "Observation's error flag when a tool answers with an \"error\" object)")
    return _passed(exercise, "queryOrder(99999) comes back as an error Observation, the loop goes on, and "
                             "an honest reply passes the error on. Run it and find the error line in the trace.")
