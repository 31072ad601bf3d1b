"""Lesson 07's `schedulePickup`: the tool of "Richer types", as the lesson writes it. A nested dataclass (`Address`),
a Literal and a tuple of strings, which `@tool` turns into a JSON Schema and checks a model's input against.

Lesson 07's exercise 2 predicts its errors, lesson 08 counts its prompt's tokens, and lesson 23 builds a grammar
from its schema.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tinyagent.toolkit.typed_tool import TypedTool, tool


@dataclass
class Address:
    """Where the courier collects the parcel.

    Args:
        city: the city, e.g. 上海
        street: the street and number, e.g. 南京西路 1 号
    """

    city: str
    street: str


def pickup_tool() -> TypedTool:
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
