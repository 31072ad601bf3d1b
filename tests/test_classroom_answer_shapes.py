"""Structured answers filled only from what the conversation knows (tinyagent/classroom/answer_shapes.py)."""

from __future__ import annotations

import json

import pytest

from tinyagent.classroom.answer_shapes import AnswerShape, fill, read_answer_shape
from tinyagent.classroom.behaviour import respond

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
