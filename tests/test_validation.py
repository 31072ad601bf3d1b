"""validation.py: every problem found, named by its field, with what was expected; never an exception."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyagent.toolkit import validation
from tinyagent.toolkit.validation import Problem, describe_schema, describe_value, problems_in

REFUND = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string", "description": "the order id, e.g. 88231"},
        "reason": {"type": "string", "minLength": 1},
        "kind": {"type": "string", "enum": ["quality", "no_reason"], "default": "quality"},
        "quantity": {"type": "integer", "minimum": 1, "maximum": 5},
        "photos": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
        "pickup": {"anyOf": [
            {"type": "object", "properties": {"city": {"type": "string"}, "street": {"type": "string"}},
             "required": ["city", "street"], "additionalProperties": False},
            {"type": "null"},
        ]},
    },
    "required": ["order_id", "reason"],
    "additionalProperties": False,
}
GOOD = {"order_id": "88231", "reason": "broken"}


def only(value) -> Problem:
    found = problems_in(value, REFUND)
    assert len(found) == 1, found
    return found[0]


def test_a_good_input_has_no_problems():
    assert problems_in(GOOD, REFUND) == []
    assert problems_in({**GOOD, "kind": "no_reason", "quantity": 2, "photos": ["a"], "pickup": None}, REFUND) == []
    assert problems_in({**GOOD, "pickup": {"city": "上海", "street": "南京路 1 号"}}, REFUND) == []


def test_a_missing_field_is_named_with_what_it_should_be():
    problem = only({"order_id": "88231"})
    assert problem.field == "reason"
    assert problem.message == "reason is missing"
    assert problem.expected == "a string (at least 1 characters)"


def test_a_wrong_type_names_the_field_the_type_and_what_came():
    problem = only({**GOOD, "order_id": 88231})
    assert (problem.field, problem.message) == ("order_id", "order_id must be a string, got the number 88231")
    assert problem.expected == "a string: the order id, e.g. 88231"


def test_no_coercion_a_digit_string_is_not_an_integer_and_true_is_not_1():
    assert only({**GOOD, "quantity": "2"}).message == (
        'quantity must be an integer (at least 1, at most 5), got the string "2"'
    )
    assert only({**GOOD, "quantity": True}).message.endswith("got true")
    assert problems_in({**GOOD, "quantity": 2.0}, REFUND) == []  # 2.0 is an integer in JSON Schema


def test_an_enum_lists_the_allowed_values():
    problem = only({**GOOD, "kind": "refund"})
    assert problem.message == 'kind must be one of "quality", "no_reason", got the string "refund"'


def test_an_unknown_field_suggests_the_one_meant():
    problems = problems_in({"orderId": "88231", "reason": "x"}, REFUND)
    assert [p.field for p in problems] == ["order_id", "orderId"]
    assert problems[1].message == "orderId is not a field (did you mean order_id?)"
    assert problems[1].expected.startswith("only these fields: order_id, reason, kind")
    assert "did you mean" not in only({**GOOD, "colour": "red"}).message


def test_nested_fields_and_list_items_are_named_by_path():
    assert only({**GOOD, "pickup": {"city": "上海"}}).field == "pickup.street"
    assert only({**GOOD, "pickup": {"city": "上海", "street": 5}}).field == "pickup.street"
    assert only({**GOOD, "pickup": {"city": "a", "street": "b", "zip": 1}}).message == (
        "pickup.zip is not a field of pickup"
    )
    assert only({**GOOD, "photos": ["a", 2]}).field == "photos[1]"
    assert only({**GOOD, "pickup": "上海"}).message == (
        'pickup must be an object with city, street or null, got the string "上海"'
    )


def test_limits_are_checked_and_said():
    assert only({**GOOD, "quantity": 0}).message == "quantity is 0; the smallest allowed is 1"
    assert only({**GOOD, "quantity": 9}).message == "quantity is 9; the largest allowed is 5"
    assert only({**GOOD, "photos": ["a", "b", "c"]}).message == "photos has 3 items; at most 2 are allowed"
    assert only({**GOOD, "reason": ""}).message == "reason is empty; at least 1 characters are needed"


def test_every_problem_is_reported_not_only_the_first():
    problems = problems_in({"order_id": 1, "kind": "x"}, REFUND)
    assert {p.field for p in problems} == {"order_id", "reason", "kind"}


def test_the_input_itself_of_the_wrong_type():
    problem = only("88231")
    assert problem.field == "" and problem.message.startswith("the input must be an object")


@pytest.mark.parametrize(
    "schema, words",
    [
        ({"type": "string"}, "a string"),
        ({"type": ["string", "null"]}, "a string or null"),
        ({"type": "array", "items": {"type": "integer"}}, "a list of integers"),
        ({"enum": [1, 2]}, "one of 1, 2"),
        ({"const": "x"}, 'exactly "x"'),
        ({}, "any JSON value"),
        ({"type": "string", "maxLength": 9, "description": "a name"}, "a string (at most 9 characters): a name"),
    ],
)
def test_describe_schema(schema, words):
    assert describe_schema(schema) == words


def test_describe_value_keeps_long_strings_short():
    assert describe_value("x" * 100) == 'the string "' + "x" * 40 + '…"'
    assert describe_value([1]) == "a list of 1 item" and describe_value({}) == "an object"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_any_json_value_is_judged_without_an_exception(value):
    problems = problems_in(value, REFUND)
    assert all(isinstance(p, Problem) and p.message for p in problems)
    json.dumps([p.__dict__ for p in problems])  # every problem can go into an Observation


def test_unique_items_tells_true_from_1_and_reads_a_long_list_in_one_pass(monkeypatch):
    schema = {"type": "array", "uniqueItems": True}
    assert problems_in([1, True], schema) == []           # JSON's true is not 1
    assert problems_in([1, 1.0], schema) != []            # 1.0 is 1
    assert problems_in([{"a": [1]}, {"a": [1.0]}], schema) != []
    # One pass: each item made its key once (and looked up in a set). A list kept by `in`, comparing each item with
    # every one before it, took 73 s for 140,000; counted, not timed, so that a loaded machine cannot decide it.
    keyed = []
    real_key = validation._json_key
    monkeypatch.setattr(validation, "_json_key", lambda value: keyed.append(value) or real_key(value))
    items = list(range(20_000))
    assert problems_in(items, schema) == []
    assert len(keyed) == len(items)
