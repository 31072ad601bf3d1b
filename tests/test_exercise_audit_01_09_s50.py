"""Wrong answers to the exercises of lessons 01-09 that a sixth audit with learner-like answers found passing, or
failing with a message that named another mistake: each now fails and says what is wrong, and each lesson's
solution still passes."""

from __future__ import annotations

import re

import pytest

from tests.test_exercises import (
    ForgivingQueryOrderTool,
    QueryLogisticsTool,
    QueryOrderTool,
    failure,
    passes,
    to_json,
)
from tinyagent import LlmClient, LlmError
from tinyagent.checks import check_forgiving_query_order, check_toy_logistics_tool, check_unknown_model


# -- 01 ---------------------------------------------------------------------------------------------
def test_01_a_tracking_number_in_quotes_is_another_number():
    class QuotesForgiven(QueryLogisticsTool):  # strips the quotes a model writes: the toy reads only the exact form
        def invoke(self, input):
            return super().invoke(input.strip().strip("\"'“”"))

    said = failure(check_toy_logistics_tool, QuotesForgiven)
    assert 'in quotes ("SF1234567890") it is another number too' in said, said
    assert "Quotes are not whitespace: strip() keeps them" in said, said
    assert passes(check_toy_logistics_tool, QueryLogisticsTool)


def test_01_a_short_order_id_is_an_id_not_no_number():
    class FourDigitsOrMore(QueryOrderTool):  # an order id "has" at least four digits: order #7 got the hint
        def invoke(self, input):
            digits = re.search(r"\d{4,}", input)
            if digits is None:
                return to_json({"error": "请提供订单号", "expected": "订单号数字，如 88231"})
            return super().invoke(digits.group())

    said = failure(check_forgiving_query_order, FourDigitsOrMore)
    assert "an id the toy does not have gets 订单不存在：<id>, the id it read" in said, said
    assert "42 is a number too: read the first run of digits however short it is" in said, said
    assert passes(check_forgiving_query_order, ForgivingQueryOrderTool)


# -- 03 ---------------------------------------------------------------------------------------------
def test_03_a_404_for_a_path_the_server_does_not_serve_is_not_the_unknown_models():
    from tinyagent.classroom.server import ClassroomServer

    def caught(url: str) -> LlmError:
        with pytest.raises(LlmError) as raised:
            LlmClient(url, None, "classroom-xl").chat([{"role": "user", "content": "hi"}])
        return raised.value

    server = ClassroomServer().start()
    try:
        typo = caught(server.base_url + "/v2")  # a URL mistyped: a 404 too, of the path, naming no model
        right = caught(server.base_url)
    finally:
        server.stop()
    said = failure(check_unknown_model, 404, typo, "body")
    assert "that 404 is the URL's (a path it does not serve), not the unknown model's" in said, said
    assert passes(check_unknown_model, 404, right, "body")
