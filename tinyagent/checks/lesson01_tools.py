"""Lesson 01 (tools): a toy queryLogistics, and a queryOrder that forgives what models write."""

from __future__ import annotations

import json

from tinyagent.checks.reporting import (
    _fail,
    _fresh_shop,
    _instance,
    _json,
    _not_attempted,
    _passed,
    _run,
    grades,
)
from tinyagent.shop import shop_tools
from tinyagent.tools import Tool


@grades("Exercise 1")
def check_toy_logistics_tool(QueryLogisticsTool: type | None) -> None:
    """01, exercise 1: a toy queryLogistics that agrees with the package's on SF1234567890 and unknown ids."""
    exercise = "Exercise 1"
    if QueryLogisticsTool is None:
        return _not_attempted(exercise, "Write class QueryLogisticsTool(Tool) in the cell above.")
    tool = _instance(exercise, QueryLogisticsTool)
    if not isinstance(tool, Tool):
        _fail(exercise, "QueryLogisticsTool should subclass Tool (the contract of this lesson)")
    if tool.name != "queryLogistics":
        _fail(exercise, f"its name is {tool.name!r}; the model writes `Action: queryLogistics`")
    package = {t.name: t for t in shop_tools(_fresh_shop())}["queryLogistics"]
    for text in ["SF1234567890", " SF1234567890\n"]:
        mine = _json(exercise, _run(exercise, f"invoke({text!r})", tool.invoke, text), f"invoke({text!r})")
        theirs = json.loads(package.invoke(text))
        if mine != theirs:
            diff = sorted(k for k in set(mine) | set(theirs) if not isinstance(mine, dict) or mine.get(k) != theirs.get(k))
            _fail(exercise, f"invoke({text!r}) differs from the package's in {diff}; expected {theirs}")
    for text in ["SF0000000000", "YT0000000000"]:
        mine = _json(exercise, _run(exercise, f"invoke({text!r})", tool.invoke, text), f"invoke({text!r})")
        expected = json.loads(package.invoke(text))["error"]
        if not isinstance(mine, dict) or mine.get("error") != expected:
            _fail(exercise, f"invoke({text!r}) should be an error object with \"error\": {expected!r}, "
                            f"got {mine!r}")
    return _passed(exercise, "the same tracking events and the same error as tinyagent's queryLogistics.")


FORGIVING_INPUTS = ['"88231"', "订单 88231", '{"orderId": 88231}', "order #88231, please", " 88231\n"]


@grades("Exercise 2")
def check_forgiving_query_order(ForgivingQueryOrderTool: type | None) -> None:
    """01, exercise 2: find the order id in what models write; an "expected" hint when there is none."""
    exercise = "Exercise 2"
    if ForgivingQueryOrderTool is None:
        return _not_attempted(exercise, "Write class ForgivingQueryOrderTool in the cell above.")
    tool = _instance(exercise, ForgivingQueryOrderTool)
    package = {t.name: t for t in shop_tools(_fresh_shop())}["queryOrder"]
    for text in FORGIVING_INPUTS:
        mine = _json(exercise, _run(exercise, f"invoke({text!r})", tool.invoke, text), f"invoke({text!r})")
        if mine != json.loads(package.invoke(text)):
            _fail(exercise, f"invoke({text!r}) should find order 88231, got {mine!r}")
    for text in ["", "tomorrow", "订单号"]:
        mine = _json(exercise, _run(exercise, f"invoke({text!r})", tool.invoke, text), f"invoke({text!r})")
        if not isinstance(mine, dict) or "error" not in mine or "expected" not in mine:
            _fail(exercise, f"invoke({text!r}) has no order id in it: answer with an error object that has "
                            f"\"error\" and an \"expected\" hint, got {mine!r}")
    mine = _json(exercise, tool.invoke("99999"), "invoke('99999')")
    if not isinstance(mine, dict) or mine.get("error") != json.loads(package.invoke("99999"))["error"]:
        _fail(exercise, f"invoke('99999') should still say the order does not exist, got {mine!r}")
    return _passed(exercise, f"all {len(FORGIVING_INPUTS)} wrappings find 88231, and no number gets a hint.")
