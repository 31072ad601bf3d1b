"""schema.py: a JSON Schema from type hints and a docstring, examples that fit it, and JSON back to Python."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Optional, TypedDict, Union

import pytest

from tinyagent.toolkit.schema import (
    example_arguments,
    example_in,
    example_value,
    function_schema,
    parse_docstring,
    schema_for,
    to_python,
)
from tinyagent.toolkit.validation import problems_in


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclass
class Address:
    """Where the courier collects the parcel.

    Attributes:
        city: the city, e.g. 上海
        street: street and number
        floor: which floor
    """

    city: str
    street: str
    floor: int = 1


class Item(TypedDict):
    sku: str
    quantity: int


class LooseItem(TypedDict, total=False):
    sku: str


@pytest.mark.parametrize(
    "hint, schema",
    [
        (str, {"type": "string"}),
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (bool, {"type": "boolean"}),
        (type(None), {"type": "null"}),
        (Literal["quality", "no_reason"], {"type": "string", "enum": ["quality", "no_reason"]}),
        (Literal[1, 2], {"type": "integer", "enum": [1, 2]}),
        (Literal["a", 1], {"enum": ["a", 1]}),
        (Colour, {"type": "string", "enum": ["red", "blue"]}),
        (list[str], {"type": "array", "items": {"type": "string"}}),
        (list, {"type": "array"}),
        (tuple[int, ...], {"type": "array", "items": {"type": "integer"}}),
        (set[str], {"type": "array", "items": {"type": "string"}, "uniqueItems": True}),
        (dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
        (dict, {"type": "object"}),
        (Optional[str], {"type": ["string", "null"]}),  # noqa: UP045 - the old spelling must work too
        (str | None, {"type": ["string", "null"]}),
        (Union[int, str], {"anyOf": [{"type": "integer"}, {"type": "string"}]}),  # noqa: UP007 - old spelling
        (Annotated[str, "the city"], {"type": "string", "description": "the city"}),
        (Annotated[str, {"maxLength": 10}], {"type": "string", "maxLength": 10}),
    ],
)
def test_each_supported_type_has_its_schema(hint, schema):
    assert schema_for(hint) == schema


def test_a_dataclass_is_a_nested_object_described_by_its_docstring():
    assert schema_for(Address) == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "the city, e.g. 上海", "examples": ["上海"]},
            "street": {"type": "string", "description": "street and number"},
            "floor": {"type": "integer", "description": "which floor", "default": 1},
        },
        "required": ["city", "street"],
        "additionalProperties": False,
        "description": "Where the courier collects the parcel.",
    }


def test_a_typeddict_is_a_nested_object_with_its_required_keys():
    assert schema_for(Item) == {
        "type": "object",
        "properties": {"sku": {"type": "string"}, "quantity": {"type": "integer"}},
        "required": ["sku", "quantity"],
        "additionalProperties": False,
    }
    assert "required" not in schema_for(LooseItem)


def test_list_of_dataclasses_nests_the_object_schema():
    schema = schema_for(list[Address])
    assert schema["type"] == "array" and schema["items"]["required"] == ["city", "street"]


@pytest.mark.parametrize(
    "hint, says",
    [
        (Any, "no type hint"),
        (complex, "complex has no JSON Schema"),
        (tuple[int, str], "fixed-length tuple"),
        (dict[int, str], "keys are strings"),
    ],
)
def test_a_type_without_json_form_is_refused_at_once(hint, says):
    with pytest.raises(TypeError, match=says):
        schema_for(hint, "parameter 'x'")


def refund(order_id: str, reason: str, kind: Literal["quality", "no_reason"] = "quality",
           photos: list[str] = [], pickup: Address | None = None) -> dict:  # noqa: B006 - a default for the schema
    """Submit a refund.

    It is written to the database once per order.

    Args:
        order_id: the order id, e.g. 88231
        reason: why the customer wants
            the money back
        kind: a faulty product, or a return without a reason
        photos: links to photos of the fault

    Returns:
        the refund record
    """
    return {}


def test_function_schema_reads_required_defaults_and_descriptions():
    found = function_schema(refund)
    assert found.summary == "Submit a refund.\n\nIt is written to the database once per order."
    params = found.parameters
    assert params["required"] == ["order_id", "reason"]
    assert params["additionalProperties"] is False
    props = params["properties"]
    assert list(props) == ["order_id", "reason", "kind", "photos", "pickup"]
    assert props["order_id"] == {"type": "string", "description": "the order id, e.g. 88231", "examples": ["88231"]}
    assert props["reason"]["description"] == "why the customer wants the money back"  # continuation joined
    assert props["kind"]["enum"] == ["quality", "no_reason"] and props["kind"]["default"] == "quality"
    assert props["photos"]["default"] == [] and props["photos"]["items"] == {"type": "string"}
    assert "description" not in props["pickup"] and "default" not in props["pickup"]  # None is no default
    assert props["pickup"]["anyOf"][1] == {"type": "null"}
    assert "Returns" not in str(params)


def test_a_parameter_without_a_hint_is_the_programmers_mistake():
    def lookup(order_id):
        """Look it up."""

    with pytest.raises(TypeError, match="'order_id' of .*lookup has no type hint"):
        function_schema(lookup)


def star_ids(*ids: str) -> str:
    """Doc."""
    return ""


def star_options(**options: str) -> str:
    """Doc."""
    return ""


def positional(order_id: str, /) -> str:
    """Doc."""
    return ""


@pytest.mark.parametrize("fn", [star_ids, star_options, positional])
def test_star_arguments_and_positional_only_have_no_schema(fn):
    with pytest.raises(TypeError, match="args|positional-only"):
        function_schema(fn)


def test_a_default_with_no_json_form_is_refused():
    def f(when: str = object()) -> str:  # type: ignore[assignment]
        """Doc."""

    with pytest.raises(TypeError, match="cannot be written as JSON"):
        function_schema(f)


def test_rest_style_docstrings_are_read_too():
    docs = parse_docstring("""Track a parcel.

    :param tracking_no: the tracking number, e.g. SF1234567890
    :param int limit: how many events
        to return
    :returns: the events
    """)
    assert docs.summary == "Track a parcel."
    assert docs.params == {"tracking_no": "the tracking number, e.g. SF1234567890",
                           "limit": "how many events to return"}


def test_google_args_with_types_in_parentheses_and_chinese_headers():
    docs = parse_docstring("查订单。\n\n参数：\n    order_id (str): 订单号，如 88231\n")
    assert docs.summary == "查订单。"
    assert docs.params == {"order_id": "订单号，如 88231"}


@pytest.mark.parametrize(
    "description, schema, example",
    [
        ("the order id, e.g. 88231", {"type": "string"}, "88231"),
        ("the order id, e.g. 88231", {"type": "integer"}, 88231),
        ("a price, for example 19.5 yuan", {"type": "number"}, 19.5),
        ("订单号，如 88231。", {"type": "string"}, "88231"),
        ("关键词，例如 退货 政策", {"type": "string"}, "退货 政策"),
        ('a reason such as "faulty: does not dock"', {"type": "string"}, "faulty: does not dock"),
        ("the city, e.g. Beijing. Or any other.", {"type": "string"}, "Beijing"),
        ("如果没有就留空", {"type": "string"}, None),  # 如果 ("if") is not 如 ("e.g.")
        ("the amount, e.g. lots", {"type": "integer"}, None),
        ("the kind, e.g. refund", {"type": "string", "enum": ["quality"]}, None),
        ("no example here", {"type": "string"}, None),
    ],
)
def test_the_example_a_description_gives(description, schema, example):
    assert example_in(description, schema) == example


def test_example_arguments_fit_the_schema_they_came_from():
    params = function_schema(refund).parameters
    example = example_arguments(params)
    assert example == {"order_id": "88231", "reason": "..."}
    assert problems_in(example, params) == []
    with_pickup = example_arguments(params, also=("pickup",))
    assert with_pickup["pickup"] == {"city": "上海", "street": "..."}  # its required fields
    assert problems_in(with_pickup, params) == []
    assert example_arguments(params, also=("photos",))["photos"] == ["..."]  # not the empty default


@pytest.mark.parametrize("hint", [str, int, float, bool, list[int], Address, Item, Literal["a", "b"], Colour,
                                  dict[str, float], Address | None, set[str]])
def test_an_example_value_always_passes_its_own_schema(hint):
    schema = schema_for(hint)
    assert problems_in(example_value(schema), schema) == []


def test_to_python_builds_dataclasses_enums_and_containers():
    assert to_python({"city": "上海", "street": "南京路 1 号"}, Address) == Address("上海", "南京路 1 号")
    assert to_python([{"city": "a", "street": "b", "floor": 3}], list[Address]) == [Address("a", "b", 3)]
    assert to_python({"city": "a", "street": "b"}, Address | None) == Address("a", "b")
    assert to_python(None, Address | None) is None
    assert to_python("red", Colour) is Colour.RED
    assert to_python([1, 2], tuple[int, ...]) == (1, 2)
    assert to_python(["a", "a"], set[str]) == {"a"}
    assert to_python(3, float) == 3.0 and isinstance(to_python(3, float), float)
    assert to_python(5.0, int) == 5 and isinstance(to_python(5.0, int), int)
    assert to_python("7", int | str) == "7" and to_python(7, str | int) == 7
    assert to_python({"sku": "A1", "quantity": 2}, Item) == {"sku": "A1", "quantity": 2}


@dataclass
class WithFactory:
    """A thing.

    Args:
        tags: labels
    """

    tags: list[str] = field(default_factory=list)


def test_a_dataclass_field_with_a_default_factory_is_optional_with_that_default():
    schema = schema_for(WithFactory)
    assert "required" not in schema and schema["properties"]["tags"]["default"] == []


@pytest.mark.parametrize("schema", [
    {"type": "string", "minLength": 6}, {"type": "string", "maxLength": 2}, {"type": "string", "maxLength": 0},
    {"type": "integer", "minimum": 2}, {"type": "integer", "maximum": 0}, {"type": "integer", "exclusiveMinimum": 1},
    {"type": "integer", "exclusiveMaximum": 1}, {"type": "number", "minimum": 2.5},
    {"type": "array", "minItems": 3, "items": {"type": "integer", "minimum": 5}}, {"type": "array", "maxItems": 0},
])
def test_a_placeholder_example_fits_its_own_schema(schema):
    # A model copying the example an error Observation shows must not be refused again (lesson 07's promise).
    assert problems_in(example_value(schema), schema) == []


def test_an_example_never_raises_on_a_bound_of_the_wrong_form():
    assert example_value({"type": "integer", "minimum": "2"}) == 1
    assert example_value({"type": "string", "minLength": True}) == "..."
