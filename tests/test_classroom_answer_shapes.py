"""Structured answers filled only from what the conversation knows (tinyagent/classroom/answer_shapes.py), and a
schema it cannot fill refused with a 400 on both routes of the classroom server."""

from __future__ import annotations

import json

import pytest
import requests

from tinyagent.classroom.answer_shapes import AnswerShape, read_answer_shape
from tinyagent.classroom.behaviour import respond
from tinyagent.classroom.schema_filling import MAX_FILL_DEPTH, MAX_FILL_FIELDS, Filled, check_schema, fill
from tinyagent.classroom.server import ClassroomServer

ORDER = {"orderId": "88231", "product": "比特 S10 Pro 扫地机", "price": 1999, "signTime": "2026-06-22",
         "status": "已签收", "trackingNo": "SF1234567890"}


def test_fields_are_matched_by_name_or_a_near_one_and_typed_as_the_schema_asks():
    schema = {"type": "object", "required": ["order_id", "price", "tracking_number", "signed_at"], "properties": {
        "order_id": {"type": "integer"}, "price": {"type": "string"}, "tracking_number": {"type": "string"},
        "signed_at": {"type": "string"}, "status": {"enum": ["shipped", "delivered"]},
        "email": {"anyOf": [{"type": "string"}, {"type": "null"}]}, "note": {"type": "string"}}}
    filled = fill(schema, ORDER, "prose")
    assert filled.value == {"order_id": 88231, "price": "1999", "tracking_number": "SF1234567890",
                            "signed_at": "2026-06-22", "email": None}  # 已签收 is not in the enum: left out
    assert filled.missing == []


def test_a_required_field_nothing_says_is_missing_and_a_prose_field_gets_the_answer():
    schema = {"type": "object", "required": ["summary", "customer_name"],
              "properties": {"summary": {"type": "string"}, "customer_name": {"type": "string"}}}
    filled = fill(schema, ORDER, "Order 88231 was signed for.")
    assert filled.value == {"summary": "Order 88231 was signed for."} and filled.missing == ["customer_name"]


def test_nested_models_are_filled_through_their_refs():
    schema = {"$defs": {"Parcel": {"type": "object", "required": ["tracking_no"],
                                   "properties": {"tracking_no": {"type": "string"}}}},
              "type": "object", "required": ["parcel"], "properties": {"parcel": {"$ref": "#/$defs/Parcel"}}}
    assert fill(schema, ORDER, "").value == {"parcel": {"tracking_no": "SF1234567890"}}


def test_a_schema_of_several_shapes_is_filled_as_the_first_one_it_can_fill_whole():
    # Lesson 23's JSON step: a tool call's shapes or {"final_answer": ...}. It was filled as "any object": every fact
    # and an "answer" key, a value none of the shapes allows, and the step reader took the answer for prose.
    step = {"anyOf": [
        {"type": "object", "required": ["tool", "arguments"], "additionalProperties": False,
         "properties": {"tool": {"const": "searchKnowledge"}, "arguments": {"type": "object"}}},
        {"type": "object", "required": ["final_answer"], "additionalProperties": False,
         "properties": {"final_answer": {"type": "string", "minLength": 1}}}]}
    assert fill(step, ORDER, "Order 88231 was signed for.") == Filled({"final_answer": "Order 88231 was signed for."}, [])
    # through a $ref, under oneOf; and when no shape can be filled whole, the one missing least says what it lacks
    either = {"$defs": {"Parcel": {"type": "object", "required": ["tracking_no"],
                                   "properties": {"tracking_no": {"type": "string"}}}},
              "oneOf": [{"type": "object", "required": ["customer", "email"],
                         "properties": {"customer": {"type": "string"}, "email": {"type": "string"}}},
                        {"$ref": "#/$defs/Parcel"}]}
    assert fill(either, ORDER, "").value == {"tracking_no": "SF1234567890"}
    neither = {"anyOf": [{"type": "object", "required": ["customer", "email"],
                          "properties": {"customer": {"type": "string"}, "email": {"type": "string"}}},
                         {"type": "object", "required": ["email"], "properties": {"email": {"type": "string"}}}]}
    assert fill(neither, ORDER, "").missing == ["email"]


def test_response_format_is_read_and_a_bad_one_is_refused():
    assert read_answer_shape({"response_format": {"type": "json_object"}}, {}, {}) == AnswerShape({}, "")
    assert read_answer_shape({"response_format": {"type": "text"}}, {}, {}) == AnswerShape()
    with pytest.raises(ValueError, match="json_schema"):
        read_answer_shape({"response_format": {"type": "yaml"}}, {}, {})
    tools = {"queryOrder": "", "final_result": ""}
    assert read_answer_shape({}, tools, {"final_result": {"properties": {}}}).tool == "final_result"


def test_a_refusal_in_chinese_for_a_chinese_request():
    reply = respond({"model": "classroom", "messages": [{"role": "user", "content": "订单 88231 是谁买的？"}],
                     "response_format": {"type": "json_schema", "json_schema": {"name": "Buyer", "schema": {
                         "type": "object", "required": ["buyer"], "properties": {"buyer": {"type": "string"}}}}}})
    assert reply.text is None and reply.refusal.startswith("我填不了这些必填字段：buyer")


def test_a_pasted_order_fills_the_schema_without_any_tool():
    schema = {"type": "object", "required": ["orderId", "status"],
              "properties": {"orderId": {"type": "string"}, "status": {"type": "string"}}}
    reply = respond({"model": "classroom", "response_format": {"type": "json_schema", "json_schema": {
        "name": "Order", "schema": schema}}, "messages": [
        {"role": "user", "content": f"Pull the id and status out of this: {json.dumps(ORDER, ensure_ascii=False)}"}]})
    assert json.loads(reply.text) == {"orderId": "88231", "status": "已签收"}


# -- schemas the classroom model cannot fill: a 400 with one line, on both routes of the server ---------------
@pytest.fixture(scope="module")
def classroom():
    with ClassroomServer() as server:
        yield server


QUESTION = "Where is order 88231?"


def chat_route(classroom, schema, **extra):
    return requests.post(classroom.base_url + "/chat/completions", timeout=30, json={
        "model": "classroom", "messages": [{"role": "user", "content": QUESTION}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "Answer", "schema": schema}}, **extra})


def responses_route(classroom, schema, **extra):
    return requests.post(classroom.base_url + "/responses", timeout=30, json={
        "model": "classroom", "input": QUESTION,
        "text": {"format": {"type": "json_schema", "name": "Answer", "schema": schema}}, **extra})


def answer_tool_route(classroom, schema, **extra):
    """pydantic-ai's way: the answer is a call to `final_result`, whose parameters are the schema."""
    tool = {"type": "function", "function": {"name": "final_result", "description": "The answer.",
                                             "parameters": schema}}
    return requests.post(classroom.base_url + "/chat/completions", timeout=30, json={
        "model": "classroom", "messages": [{"role": "user", "content": QUESTION}], "tools": [tool], **extra})


ROUTES = [chat_route, responses_route, answer_tool_route]
NODE = {"type": "object", "properties": {"orderId": {"type": "string"}, "next": {"$ref": "#/$defs/Node"}}}
NO_FINITE_VALUE = "no finite JSON value fits it"
UNFILLABLE = {
    "a $ref to itself": ({"$defs": {"A": {"$ref": "#/$defs/A"}}, "$ref": "#/$defs/A"}, NO_FINITE_VALUE),
    "the root referring to itself": ({"$ref": "#"}, NO_FINITE_VALUE),
    "A -> B -> A": ({"$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}, "$ref": "#/$defs/A"},
                    NO_FINITE_VALUE),
    "an object that requires one like itself": (
        {"$defs": {"Node": {**NODE, "required": ["orderId", "next"]}}, "$ref": "#/$defs/Node"}, NO_FINITE_VALUE),
    "A requires a B that requires an A": (
        {"$defs": {"A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}, "required": ["b"]},
                   "B": {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "required": ["a"]}},
         "$ref": "#/$defs/A"}, NO_FINITE_VALUE),
    "a list of at least one like itself": (
        {"$defs": {"Node": {"type": "object", "required": ["kids"], "properties": {
            "kids": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/Node"}}}}}, "$ref": "#/$defs/Node"},
        NO_FINITE_VALUE),
    "required: 5": ({"type": "object", "properties": {"orderId": {"type": "string"}}, "required": 5},
                    "'required' must be a list of property names, got 5"),
    "anyOf: 5": ({"type": "object", "properties": {"orderId": {"anyOf": 5}}},
                 "'anyOf' must be a non-empty list of schemas, got 5 (at properties.orderId)"),
    "$defs: []": ({"$defs": [], "type": "object", "properties": {"orderId": {"type": "string"}}},
                  "'$defs' must be an object of schemas, got []"),
    "properties: []": ({"type": "object", "properties": []}, "'properties' must be an object of schemas"),
    "a property that is no schema": ({"type": "object", "properties": {"orderId": 5}},
                                     "a schema must be an object, got 5 (at properties.orderId)"),
    "type: 5": ({"type": 5}, "'type' must be a type name or a list of them"),
    "enum: 5": ({"type": "object", "properties": {"orderId": {"enum": 5}}}, "'enum' must be a list of values"),
    "a $ref to nothing": ({"type": "object", "properties": {"orderId": {"$ref": "#/$defs/Gone"}}},
                          "$ref '#/$defs/Gone' points to nothing in the schema"),
    "a $ref to another document": ({"$ref": "https://example.com/order.json"}, "is not inside the schema"),
    # A $ref's target that lies outside properties, $defs, ... is checked too: its own $refs were a 500 (KeyError).
    "a $ref to nothing, inside a $ref's target": (
        {"type": "object", "properties": {"a": {"$ref": "#/x"}}, "required": ["a"], "x": {"$ref": "#/y"}},
        "$ref '#/y' points to nothing in the schema (at #/x)"),
    "a $ref to nothing, a level down in a $ref's target": (
        {"type": "object", "properties": {"a": {"$ref": "#/x"}}, "required": ["a"],
         "x": {"type": "object", "properties": {"b": {"$ref": "#/nope"}}, "required": ["b"]}},
        "$ref '#/nope' points to nothing in the schema (at #/x.properties.b)"),
    "a bad keyword in a $ref's target": ({"type": "object", "properties": {"a": {"$ref": "#/x"}}, "x": {"type": 5}},
                                          "'type' must be a type name or a list of them, got 5 (at #/x)"),
    "a $ref that is no string": ({"type": "object", "properties": {"orderId": {"$ref": 5}}}, "'$ref' must be a string"),
}


@pytest.mark.parametrize("route", ROUTES, ids=lambda route: route.__name__)
@pytest.mark.parametrize(("schema", "says"), UNFILLABLE.values(), ids=UNFILLABLE.keys())
def test_a_schema_the_model_cannot_fill_is_a_400_with_one_line_on_every_route(classroom, route, schema, says):
    for extra in ({}, {"stream": True}):
        answer = route(classroom, schema, **extra)
        assert answer.status_code == 400, answer.text
        error = answer.json()["error"]
        assert says in error["message"] and "\n" not in error["message"], error["message"]
        assert error["type"] == "invalid_request_error" and "Error:" not in error["message"]  # no exception's name


def answer_of(route, answer) -> dict:
    assert answer.status_code == 200, answer.text
    body = answer.json()
    if route is responses_route:
        return json.loads(body["output"][0]["content"][0]["text"])
    message = body["choices"][0]["message"]
    return json.loads(message["tool_calls"][0]["function"]["arguments"] if route is answer_tool_route
                      else message["content"])


# A loop with a way out is filled: the facts are flat, so an object inside one of its own kind would only say the
# same again; the fill stops at the first repeat and leaves out (or writes null for) what it cannot know there.
FINITE = {
    "an optional property like itself": ({"$defs": {"Node": {**NODE, "required": ["orderId"]}},
                                          "$ref": "#/$defs/Node"}, {"orderId": "88231"}),
    "the root as an optional property": ({"type": "object", "required": ["orderId"], "properties": {
        "orderId": {"type": "string"}, "child": {"$ref": "#"}}}, {"orderId": "88231"}),
    "a nullable one like itself, required": (
        {"$defs": {"Node": {**NODE, "type": ["object", "null"], "required": ["orderId", "next"]}},
         "$ref": "#/$defs/Node"}, {"orderId": "88231", "next": None}),
    "a list that may be empty, optional": (
        {"$defs": {"Node": {"type": "object", "required": ["orderId"], "properties": {
            "orderId": {"type": "string"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}},
         "$ref": "#/$defs/Node"}, {"orderId": "88231"}),
    "A holds a B that may hold an A": (
        {"$defs": {"A": {"type": "object", "properties": {"orderId": {"type": "string"}, "b": {"$ref": "#/$defs/B"}},
                         "required": ["orderId", "b"]},
                   "B": {"type": "object", "properties": {"orderId": {"type": "string"}, "a": {"$ref": "#/$defs/A"}},
                         "required": ["orderId"]}}, "$ref": "#/$defs/A"},
        {"orderId": "88231", "b": {"orderId": "88231"}}),
}


@pytest.mark.parametrize("route", ROUTES, ids=lambda route: route.__name__)
@pytest.mark.parametrize(("schema", "value"), FINITE.values(), ids=FINITE.keys())
def test_a_recursive_schema_a_finite_value_fits_is_filled_with_one(classroom, route, schema, value):
    assert answer_of(route, route(classroom, schema)) == value


def test_a_required_list_of_its_own_kind_is_a_field_it_cannot_know_not_an_empty_list(classroom):
    schema = {"$defs": {"Node": {"type": "object", "required": ["orderId", "kids"], "properties": {
        "orderId": {"type": "string"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}},
        "$ref": "#/$defs/Node"}
    message = chat_route(classroom, schema).json()["choices"][0]["message"]
    assert message["content"] is None and message["refusal"].startswith("I cannot fill the required field(s) kids")


def test_a_chain_of_definitions_deeper_than_the_fill_goes_is_a_refusal_not_a_crash():
    defs = {f"D{i}": {"type": "object", "required": ["next"], "properties": {
        "orderId": {"type": "string"}, "next": {"$ref": f"#/$defs/D{i + 1}"}}} for i in range(2000)}
    schema = {"$defs": {**defs, "D2000": {"type": "string"}}, "$ref": "#/$defs/D0"}
    check_schema(schema)  # a finite value fits: a chain of 2000 objects and a string
    filled = fill(schema, ORDER, "")
    assert filled.value and filled.missing == [".".join(["next"] * (MAX_FILL_DEPTH + 1))]


@pytest.mark.parametrize("messages", [
    [{"role": "system", "content": 5}, {"role": "user", "content": "hi"}],
    [{"role": "system", "content": "You are helpful"}, {"role": "user", "content": [1]}],
    [{"role": "system", "content": {"a": 1}}, {"role": "user", "content": "hi"}],
])
def test_a_malformed_message_is_a_400_before_any_lesson_s_call_reads_it(classroom, messages):
    # Lesson 17's and 22's rows look at the first and last messages first: a content that is no text was a 500.
    answer = requests.post(classroom.chat_url, json={"model": "classroom", "messages": messages}, timeout=30)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["message"].startswith("messages[")


def doubling_chain(levels: int) -> dict:
    """Each definition holds two of the next: about 130 bytes a level, 2^levels fields if filled out."""
    defs = {f"L{i}": {"type": "object", "properties": {"a": {"$ref": f"#/$defs/L{i + 1}"},
                                                      "b": {"$ref": f"#/$defs/L{i + 1}"}}, "required": ["a", "b"]}
            for i in range(levels)}
    return {"$defs": {**defs, f"L{levels}": {"type": "string"}}, "$ref": "#/$defs/L0"}


def forced_tool_route(classroom, schema, **extra):
    """A named tool_choice: the call's arguments are filled from the tool's parameters."""
    tool = {"type": "function", "function": {"name": "lookUp", "description": "Look it up.", "parameters": schema}}
    return requests.post(classroom.chat_url, timeout=30, json={
        "model": "classroom", "messages": [{"role": "user", "content": QUESTION}], "tools": [tool],
        "tool_choice": {"type": "function", "function": {"name": "lookUp"}}, **extra})


@pytest.mark.parametrize("levels", [19, 40])
def test_a_schema_whose_refs_double_at_each_level_is_refused_before_any_fill(levels):
    # 19 levels took 3.5 s of CPU to fill; 40 would have taken 2^40 steps. The check counts what a fill would look
    # at and stops at MAX_FILL_FIELDS, so it costs no more than that whatever the schema says.
    with pytest.raises(ValueError, match=f"more than {MAX_FILL_FIELDS} fields"):
        check_schema(doubling_chain(levels))


@pytest.mark.parametrize(("route", "param"), [(chat_route, "response_format"), (responses_route, "text.format"),
                                              (forced_tool_route, "tools[0].function.parameters")],
                         ids=["response_format", "text.format", "named tool_choice"])
@pytest.mark.parametrize("levels", [19, 40])
def test_a_schema_whose_refs_double_at_each_level_is_a_400_naming_the_field(classroom, route, param, levels):
    answer = route(classroom, doubling_chain(levels))
    assert answer.status_code == 400, answer.text[:300]
    error = answer.json()["error"]
    assert error["param"] == param and f"more than {MAX_FILL_FIELDS} fields" in error["message"], error


def test_a_tree_of_its_own_kind_is_still_filled_under_the_limit():
    # Two optional children of the node's own kind: the fill stops at the first repeat, so it stays small.
    node = {"type": "object", "required": ["orderId"], "properties": {
        "orderId": {"type": "string"}, "left": {"$ref": "#/$defs/Node"}, "right": {"$ref": "#/$defs/Node"}}}
    schema = {"$defs": {"Node": node}, "$ref": "#/$defs/Node"}
    check_schema(schema)
    assert fill(schema, ORDER, "").value == {"orderId": "88231"}
