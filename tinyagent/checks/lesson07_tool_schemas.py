"""Lesson 07 (tool schemas): a typed queryLogistics, and the fields errors name."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from tinyagent.checks.reporting import (
    _brief,
    _fail,
    _fresh_shop,
    _json,
    _not_attempted,
    _passed,
    _run,
    grades,
)
from tinyagent.shop import shop_tools
from tinyagent.toolkit.typed_tool import TypedTool, tool


@grades("Exercise 1")
def check_typed_logistics_tool(track_parcel: Any) -> None:
    """07, exercise 1: queryLogistics as a typed tool: its schema, and what it returns for good and bad input."""
    exercise = "Exercise 1"
    if track_parcel is None:
        return _not_attempted(exercise, "Write def track_parcel(...) with @tool(name=\"queryLogistics\") above it.")
    if not isinstance(track_parcel, TypedTool):
        _fail(exercise, f"track_parcel is a {type(track_parcel).__name__}, not a tool: put @tool(name="
                        "\"queryLogistics\") on the line above `def track_parcel`")
    if track_parcel.name != "queryLogistics":
        _fail(exercise, f"its name is {track_parcel.name!r}; the model writes `Action: queryLogistics`, so give "
                        "@tool(name=\"queryLogistics\")")
    params = track_parcel.parameters
    properties = params.get("properties", {})
    if set(properties) != {"tracking_no", "latest_only"}:
        _fail(exercise, f"the schema's fields are {sorted(properties)}; expected exactly tracking_no and latest_only")
    number, latest = properties["tracking_no"], properties["latest_only"]
    if number.get("type") != "string" or "tracking_no" not in params.get("required", ()):
        _fail(exercise, f"tracking_no should be a required string (`tracking_no: str`, no default); its schema is "
                        f"{number}")
    if not number.get("examples"):
        _fail(exercise, "describe tracking_no in the docstring, with an example the model can copy: under `Args:`, "
                        "`tracking_no: the tracking number from queryOrder, e.g. SF1234567890`")
    if latest.get("type") != "boolean":
        _fail(exercise, f"latest_only should be a boolean (`latest_only: bool = False`); its schema is {latest}")
    if "latest_only" in params.get("required", ()) or latest.get("default") is not False:
        _fail(exercise, "latest_only should be optional with the default False (`latest_only: bool = False`), so "
                        "the model may leave it out")
    package = {t.name: t for t in shop_tools(_fresh_shop())}["queryLogistics"]
    for number_text in ("SF1234567890", "YT2468013579"):
        whole = json.loads(package.invoke(number_text))
        mine = _json(exercise, _run(exercise, f"invoke({number_text!r})", track_parcel.invoke, number_text),
                     f"invoke({number_text!r})")
        if mine != whole:
            _fail(exercise, f"invoke({number_text!r}) should return the shop's logistics for that parcel "
                            f"(shop.get_logistics), all {len(whole['traces'])} traces; got {_brief(mine)}")
        text = json.dumps({"tracking_no": number_text, "latest_only": True})
        mine = _json(exercise, _run(exercise, f"invoke({text!r})", track_parcel.invoke, text), f"invoke({text!r})")
        newest = whole["traces"][-1]
        if not isinstance(mine, dict) or mine.get("traces") != [newest]:
            got = mine.get("traces") if isinstance(mine, dict) else mine
            _fail(exercise, f"with latest_only true, traces should hold only the newest event {[newest]} "
                            f"(the shop lists them oldest first); got {got!r}")
        if {key: value for key, value in mine.items() if key != "traces"} != {
                key: value for key, value in whole.items() if key != "traces"}:
            _fail(exercise, "with latest_only true, keep the other fields (trackingNo, carrier, status) as they are")
    for number_text in ("SF0000000000", "YT1357924680"):
        unknown = _json(exercise, _run(exercise, f"invoke({number_text!r})", track_parcel.invoke, number_text),
                        f"invoke({number_text!r})")
        asked = {"error": f"运单不存在：{number_text}"}
        if unknown != asked:
            got = "None (which @tool sends as {\"ok\": true})" if unknown == {"ok": True} else _brief(unknown)
            _fail(exercise, f"for {number_text}, which the shop does not have (shop.get_logistics returns None), "
                            f"return exactly {json.dumps(asked, ensure_ascii=False)}; your function returned {got}")
    wrong = json.loads(track_parcel.invoke('{"tracking_no": 1234567890}'))
    if wrong.get("field") != "tracking_no":
        _fail(exercise, f"a number for tracking_no should be refused by the schema, naming tracking_no; got {wrong}")
    return _passed(exercise, "the schema says what the model may send (a required string with an example, an "
                             "optional boolean), and @tool refuses the rest before your function runs.")


# The lesson's schedulePickup tool, as the lesson writes it: exercise 2 predicts its errors.
PICKUP_INPUTS = (
    '{"order_id": "88231", "address": {"city": "上海", "street": "南京西路 1 号"}, "window": "morning"}',
    '{"order_id": "88231", "address": {"city": "上海"}}',
    '{"order_id": "88231", "address": {"city": "上海", "street": "南京西路 1 号"}, "window": "evening"}',
    '{"order_id": "88231", "address": {"city": "上海", "street": "南京西路 1 号"}, "items": ["扫地机", 2]}',
    '{"order": "88231", "address": {"city": "上海", "street": "南京西路 1 号"}}',
)


@dataclass
class Address:
    """Where the courier collects the parcel.

    Args:
        city: the city, e.g. 上海
        street: the street and number, e.g. 南京西路 1 号
    """

    city: str
    street: str


def pickup_tool():
    """The lesson's `schedulePickup`: a nested dataclass, a Literal, a list. Returns what it would book."""
    @tool(name="schedulePickup")
    def schedule_pickup(order_id: str, address: Address, window: Literal["morning", "afternoon"] = "morning",
                        items: tuple[str, ...] = ()) -> dict:
        """Book a courier to collect a return.

        Args:
            order_id: the order id, e.g. 88231
            address: where the courier collects the parcel
            window: the half of the day the courier comes
            items: what goes back, if not the whole order
        """
        return {"orderId": order_id, "city": address.city, "window": window, "items": items}

    return schedule_pickup


@grades("Exercise 2")
def check_error_fields(predicted_fields: list | None) -> None:
    """07, exercise 2: for each of PICKUP_INPUTS, the field the error Observation names (None: accepted)."""
    exercise = "Exercise 2"
    if predicted_fields is None:
        return _not_attempted(exercise, f"Set predicted_fields to a list of {len(PICKUP_INPUTS)} field names (or None "
                                        "where the input is accepted).")
    if isinstance(predicted_fields, str) or not isinstance(predicted_fields, (list, tuple)):
        _fail(exercise, f"predicted_fields should be a list, got {type(predicted_fields).__name__}")
    if len(predicted_fields) != len(PICKUP_INPUTS):
        _fail(exercise, f"there are {len(PICKUP_INPUTS)} inputs; predicted_fields has {len(predicted_fields)} entries")
    pickup = pickup_tool()
    for number, (text, predicted) in enumerate(zip(PICKUP_INPUTS, predicted_fields), start=1):
        data = json.loads(pickup.invoke(text))
        actual = data.get("field") if "error" in data else None
        if predicted == actual:
            continue
        if actual is None:
            _fail(exercise, f"input {number} is accepted (every required field is there, each of the right type), "
                            f"so predict None; you predicted {predicted!r}")
        hint = ""
        if isinstance(predicted, str) and (actual.startswith((predicted + ".", predicted + "["))):
            hint = ": a field inside an object or a list is named by its path, down to the part that is wrong"
        elif predicted is None:
            hint = ": it is refused; read it against the schema again"
        elif actual == "order_id":
            hint = (": an unknown field is reported after the fields the schema has, and order_id, which the "
                    "schema requires, is missing")
        _fail(exercise, f"input {number}: the error names {actual!r}, you predicted {predicted!r}{hint}. "
                        f"The error was: {data['error']}")
    return _passed(exercise, "each error names the exact field (a path such as address.street or items[1]) and "
                             "shows an example, which is what lets a model fix its input in one round.")
