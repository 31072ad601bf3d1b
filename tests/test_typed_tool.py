"""typed_tool.py: `@tool` builds a Tool from a typed function; input is read and checked before it runs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyagent import Action, Observation, ReActAgent, Tool, ToolRegistry, build_system_prompt, tool
from tinyagent.toolkit.typed_tool import TypedTool, as_observation

calls: list[dict] = []


@dataclass
class Address:
    """A pickup address.

    Args:
        city: the city, e.g. 上海
        street: street and number
    """

    city: str
    street: str


@tool(name="applyRefund", descriptions={"zh": "提交退款。"}, param_descriptions={"zh": {"reason": "退款原因"}})
def apply_refund(order_id: str, reason: str, kind: Literal["quality", "no_reason"] = "quality",
                 pickup: Address | None = None) -> dict:
    """Submit a refund.

    Args:
        order_id: the order id, e.g. 88231
        reason: why the customer wants the money back
        kind: a faulty product, or a return without a reason
        pickup: where the courier collects the parcel
    """
    calls.append({"order_id": order_id, "reason": reason, "kind": kind, "pickup": pickup})
    return {"refundId": "RF1", "orderId": order_id, "pickupCity": pickup.city if pickup else None}


@tool
def query_order(order_id: int) -> str:
    """Look up an order.

    Args:
        order_id: the order id, e.g. 88231
    """
    return f"order {order_id!r}"


def test_tool_builds_a_tool_from_the_function():
    assert isinstance(apply_refund, TypedTool) and isinstance(apply_refund, Tool)
    assert apply_refund.name == "applyRefund" and query_order.name == "query_order"
    assert apply_refund.description == "Submit a refund."
    assert apply_refund.parameters["required"] == ["order_id", "reason"]
    assert apply_refund("88231", "broken")["orderId"] == "88231"  # still the function


def test_a_good_input_runs_the_function_with_python_values():
    calls.clear()
    text = apply_refund.invoke('{"order_id": "88231", "reason": "broken", '
                               '"pickup": {"city": "上海", "street": "南京路 1 号"}}')
    assert json.loads(text) == {"refundId": "RF1", "orderId": "88231", "pickupCity": "上海"}
    assert calls == [{"order_id": "88231", "reason": "broken", "kind": "quality",
                      "pickup": Address("上海", "南京路 1 号")}]


@pytest.mark.parametrize(
    "text, field, error",
    [
        ('{"order_id": "88231"}', "reason", "invalid input for applyRefund: reason is missing"),
        ('{"order_id": 88231, "reason": "x"}', "order_id",
         "invalid input for applyRefund: order_id must be a string, got the number 88231"),
        ('{"order_id": "88231", "reason": "x", "kind": "angry"}', "kind", None),
        ('{"order_id": "88231", "reason": "x", "pickup": {"city": "上海"}}', "pickup.street", None),
        ("88231", "", ("invalid input for applyRefund: the input must be a JSON object, not plain text "
                       "(required: order_id, reason; optional: kind, pickup)")),
        ('{"order_id": "88231", "reason": "x"', "", None),
    ],
)
def test_a_bad_input_is_an_error_observation_and_the_function_never_runs(text, field, error):
    calls.clear()
    data = json.loads(apply_refund.invoke(text))
    assert calls == []
    assert set(data) == {"error", "field", "expected", "example"}
    assert data["field"] == field
    if error:
        assert data["error"] == error
    assert data["example"]["order_id"] == "88231"
    assert json.loads(apply_refund.invoke(json.dumps(data["example"])))["refundId"] == "RF1"  # the example works


def test_the_example_shows_the_optional_field_the_error_is_about():
    data = json.loads(apply_refund.invoke('{"order_id": "88231", "reason": "x", "kind": "angry"}'))
    assert data["example"] == {"order_id": "88231", "reason": "...", "kind": "quality"}
    assert data["expected"] == 'one of "quality", "no_reason": a faulty product, or a return without a reason'


def test_a_one_parameter_tool_takes_plain_text_in_its_type():
    assert query_order.invoke("88231") == "order 88231"
    assert query_order.invoke('{"order_id": 88231}') == "order 88231"
    data = json.loads(query_order.invoke("tomorrow"))
    assert data["error"] == 'invalid input for query_order: order_id must be an integer, got the string "tomorrow"'
    assert data["example"] == {"order_id": 88231}


def test_describe_adds_how_to_write_the_input_in_each_language():
    assert apply_refund.describe() == (
        'Submit a refund. Input: a JSON object, e.g. {"order_id": "88231", "reason": "..."}. Fields: '
        "order_id (string, required): the order id, e.g. 88231; reason (string, required): why the customer "
        'wants the money back; kind ("quality" | "no_reason", default "quality"): a faulty product, or a '
        "return without a reason; pickup (object {city, street} | null): where the courier collects the parcel."
    )
    zh = apply_refund.describe("zh")
    assert zh.startswith('提交退款。输入：JSON 对象，如 {"order_id": "88231", "reason": "..."}。字段：')
    assert "reason（string，必填）：退款原因" in zh
    assert apply_refund.summary("zh") == "提交退款。" and apply_refund.summary() == "Submit a refund."
    assert apply_refund.parameters["properties"]["reason"]["description"] == "why the customer wants the money back"
    assert apply_refund.parameters_in("zh")["properties"]["reason"]["description"] == "退款原因"
    assert query_order.describe() == (
        'Look up an order. Input: order_id (integer): the order id, e.g. 88231. As JSON: {"order_id": 88231}.'
    )


def test_the_registry_lists_a_typed_tool_on_one_line_of_the_prompt():
    prompt = build_system_prompt(ToolRegistry([apply_refund, query_order]), "en")
    lines = [line for line in prompt.splitlines() if line[:2] in ("1.", "2.")]
    assert lines[0].startswith("1. applyRefund - Submit a refund. Input: a JSON object")
    assert lines[1].startswith("2. query_order - Look up an order. Input: order_id (integer)")


def test_through_the_registry_a_rejection_is_an_error_result():
    registry = ToolRegistry([apply_refund])
    assert registry.run(Action("applyRefund", '{"order_id": "88231"}')).error
    assert not registry.run(Action("applyRefund", '{"order_id": "88231", "reason": "x"}')).error


def test_mistakes_in_the_function_raise_when_it_is_decorated():
    with pytest.raises(TypeError, match="no description"):
        @tool
        def nothing(x: int) -> str:
            return ""

    with pytest.raises(TypeError, match="no type hint"):
        @tool
        def untyped(x) -> str:
            """Doc."""

    with pytest.raises(TypeError, match=r"param_descriptions\['zh'\] names \['y'\]"):
        @tool(param_descriptions={"zh": {"y": "?"}})
        def typo(x: int) -> str:
            """Doc."""

    with pytest.raises(TypeError, match="needs a function"):
        tool("not a function")


def test_description_argument_wins_over_the_docstring():
    @tool(description="Say  hello\n to someone.")
    def greet(name: str) -> str:
        """Something else."""
        return f"hi {name}"

    assert greet.description == "Say hello to someone."
    assert greet.invoke("Ada") == "hi Ada"


def test_what_a_function_returns_becomes_observation_text():
    assert as_observation("plain") == "plain"
    assert as_observation(None) == '{"ok":true}'
    assert as_observation({"商品": "扫地机", "n": 1}) == '{"商品":"扫地机","n":1}'
    assert as_observation(Address("a", "b")) == '{"city":"a","street":"b"}'
    assert as_observation([1, (2, 3)]) == "[1,[2,3]]"
    with pytest.raises(TypeError, match="has no JSON form"):
        as_observation(object())


def test_a_function_that_raises_is_caught_by_the_registry_not_the_tool():
    @tool
    def explode(n: int) -> str:
        """Always fails.

        Args:
            n: anything
        """
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        explode.invoke("1")
    result = ToolRegistry([explode]).run(Action("explode", "1"))
    assert result.error and "RuntimeError: boom" in result.text


def test_the_agent_runs_a_typed_tool_end_to_end():
    class OneStep:
        def __init__(self):
            self.sent = []

        def chat(self, messages, **options):
            from tinyagent import ChatResult

            self.sent.append(messages[-1]["content"])
            if len(self.sent) == 1:
                return ChatResult('Thought: refund.\nAction: applyRefund\nAction Input: {\n  "order_id": "88231"\n}',
                                  "stop", {})
            if len(self.sent) == 2:
                return ChatResult('Thought: fix.\nAction: applyRefund\nAction Input: ```json\n'
                                  '{"order_id": "88231", "reason": "broken"}\n```', "stop", {})
            return ChatResult("Thought: done.\nFinal Answer: RF1", "stop", {})

    model = OneStep()
    result = ReActAgent(model, ToolRegistry([apply_refund])).run("Refund 88231, it is broken.")
    assert result.answer == "RF1"
    first, second = [event for event in result.trace.events if isinstance(event, Observation)]
    assert first.error and json.loads(first.text)["field"] == "reason"
    assert not second.error and json.loads(second.text)["refundId"] == "RF1"
    assert model.sent[1].startswith('Observation: {"error":"invalid input for applyRefund: reason is missing"')


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_any_input_text_gives_observation_text_never_an_exception(text):
    assert isinstance(apply_refund.invoke(text), str)
    assert isinstance(query_order.invoke(text), str)


def test_import_tinyagent_does_not_load_the_schema_modules_until_they_are_used():
    import subprocess
    import sys

    script = ("import sys, tinyagent; before = sorted(m for m in sys.modules if m.split('.')[-1] in "
              "('schema', 'validation', 'typed_tool', 'tool_rendering', 'workspace_files', 'action_input')); "
              "from tinyagent import tool, write_file_tool; print(before, tool.__module__, write_file_tool.__module__)")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["[]", "tinyagent.toolkit.typed_tool", "tinyagent.toolkit.workspace_files"]


@pytest.mark.parametrize("written", ['{"amount": NaN}', "NaN", '{"amount": Infinity}', "-Infinity"])
def test_nan_and_infinity_are_refused_not_run(written):
    # json.loads reads them, and NaN passes minimum and maximum: the bounded refund ran with {"refunded":NaN}.
    ran = []

    @tool
    def refund(amount: Annotated[float, {"minimum": 0, "maximum": 100}]) -> dict:
        """Refund up to 100."""
        ran.append(amount)
        return {"refunded": amount}

    said = json.loads(refund.invoke(written))
    assert "error" in said and ran == []
