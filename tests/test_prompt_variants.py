"""Lesson 08's prompt builders: every part, both languages, and every variant on the classroom model.

The default prompt must not move (lessons 00-06 print it), every tool-list shape must be read by the
classroom model's reader as a real model would read it, and each variant must reach the same refund.
"""

from __future__ import annotations

import json
import re
from types import MappingProxyType

import pytest

from tinyagent import FunctionTool, LlmClient, ReActAgent, ToolRegistry, build_system_prompt, fixed_clock
from tinyagent.classroom.tool_list import read_tool_list
from tinyagent.parser import parse_step
from tinyagent.prompts import DEFAULT_ROLE
from tinyagent.protocols.compliance import WORKED_EXAMPLE, example_turns, messages_for
from tinyagent.protocols.prompt_variants import (
    ANCHOR,
    NEGATIVE_RULES,
    TOOL_LIST_FORMATS,
    VARIANTS,
    PromptVariant,
    build_prompt,
    example_block,
    tool_definition,
    tool_list,
    tool_parameters,
    variant,
)
from tinyagent.shop import Shop, shop_registry

NOW = "2026-06-30T19:05:23"
HAN = re.compile(r"[\u4e00-\u9fff]")
REFUND = ["queryOrder", "getCurrentTime", "searchKnowledge", "applyRefund"]
QUESTIONS = {  # written for this file: the shop's refund, with a fault, in each language
    "en": "My vacuum from order 88231 has stopped charging, so I would like a refund.",
    "zh": "订单 88231 的扫地机充不进电了，我想退款。",
}


@pytest.fixture()
def registry():
    with Shop(":memory:", clock=fixed_clock(NOW)) as shop:
        yield shop_registry(shop)


@pytest.fixture(scope="module")
def llm():
    return LlmClient.classroom()


# --- the default stays the default --------------------------------------------------------------------


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_switch_off_is_the_course_default_prompt(registry, lang):
    assert build_prompt(registry, lang) == build_system_prompt(registry, lang)
    assert VARIANTS["plain"].system_prompt(registry, lang) == build_system_prompt(registry, lang)
    assert build_prompt(registry, lang, role="R.") == build_system_prompt(registry, lang, role="R.")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_lesson_a1s_two_prompts_are_two_of_the_variants(registry, lang):
    question = QUESTIONS[lang]
    assert messages_for("zero-shot", registry, question, lang) == VARIANTS["plain"].messages(registry, question, lang)
    assert messages_for("one-shot", registry, question, lang) == VARIANTS["one-shot-turns"].messages(
        registry, question, lang)
    assert messages_for(VARIANTS["full"], registry, question, lang) == VARIANTS["full"].messages(
        registry, question, lang)


# --- the tool list in three shapes --------------------------------------------------------------------


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_numbered_list_is_the_registrys_own(registry, lang):
    assert tool_list(registry, "numbered", lang) == registry.build_tool_list(lang)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_name_colon_list_has_one_line_per_tool(registry, lang):
    lines = tool_list(registry, "name-colon", lang).splitlines()
    assert lines == [f"{tool.name}: {tool.describe(lang)}" for tool in registry]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_json_block_is_a_fenced_list_of_definitions(registry, lang):
    text = tool_list(registry, "json", lang)
    assert text.startswith("```json\n[\n") and text.endswith("\n]\n```\n")
    definitions = json.loads(text.removeprefix("```json\n").removesuffix("```\n"))
    assert [d["name"] for d in definitions] == registry.names
    assert [d["description"] for d in definitions] == [tool.describe(lang) for tool in registry]
    assert len(text.splitlines()) == len(registry) + 4  # one definition a line
    if lang == "zh":
        assert "查询订单" in text  # Chinese kept readable, not \\u escapes


def test_a_tool_without_parameters_gets_one_string_field_input():
    tool = FunctionTool("echo", "Echo the input.", str)
    assert tool_parameters(tool) == {
        "type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"],
    }
    assert tool_definition(tool) == {"name": "echo", "description": "Echo the input.",
                                     "parameters": tool_parameters(tool)}


def test_a_tool_that_declares_parameters_shows_its_own_schema():
    schema = {"type": "object", "properties": {"orderId": {"type": "string", "description": "5 digits"}},
              "required": ["orderId"]}

    class WithSchema(FunctionTool):
        parameters = MappingProxyType({**schema, "required": ("orderId",)})  # read-only, as a class might hold it

    tool = WithSchema("queryOrder", "Look up an order.", str)
    assert tool_parameters(tool) == schema
    block = tool_list(ToolRegistry([tool]), "json")
    assert json.loads(block.removeprefix("```json\n").removesuffix("```\n"))[0]["parameters"] == schema


def test_unknown_format_is_refused(registry):
    with pytest.raises(ValueError, match="numbered, name-colon, json"):
        tool_list(registry, "yaml")
    with pytest.raises(ValueError, match="tool_list must be one of"):
        PromptVariant("x", tool_list="yaml")
    with pytest.raises(ValueError, match="example must be None or one of prompt, turns"):
        PromptVariant("x", example="system")
    with pytest.raises(ValueError, match="lang must be one of"):
        build_prompt(registry, "fr")
    with pytest.raises(TypeError, match="ToolRegistry"):
        build_prompt("1. queryOrder - x", "en")


@pytest.mark.parametrize("fmt", TOOL_LIST_FORMATS)
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_classroom_reader_finds_every_tool_in_every_shape(registry, fmt, lang):
    """The example, the rules and the anchor add no false tools (Question:, Rules:, Thought: lines)."""
    for extras in ({}, {"example": True, "rules": True, "anchor": True}):
        found = read_tool_list(build_prompt(registry, lang, tool_list_format=fmt, **extras))
        assert list(found.tools) == registry.names
        assert list(found.tools.values()) == [tool.describe(lang) for tool in registry]


# --- example, rules, anchor ---------------------------------------------------------------------------


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_example_block_is_the_worked_example_of_compliance(lang):
    block = example_block(lang)
    for _, content in WORKED_EXAMPLE[lang]:
        assert content in block
    # Read as one reply, the example parses to its Final Answer: the keys are the parser's.
    assert parse_step(block).final_answer == WORKED_EXAMPLE[lang][-1][1].split("Final Answer: ")[1]
    assert block.splitlines()[1].startswith({"en": "Question: ", "zh": "用户："}[lang])


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_parts_are_appended_in_order_after_the_default(registry, lang):
    base = build_system_prompt(registry, lang)
    full = build_prompt(registry, lang, example=True, rules=True, anchor=True)
    assert full == "\n".join([base, example_block(lang), NEGATIVE_RULES[lang], ANCHOR[lang]])
    assert full.endswith("\nThought:")  # the anchor: the last thing read is the reply's first key
    assert build_prompt(registry, lang, rules=True) == base + "\n" + NEGATIVE_RULES[lang]


@pytest.mark.parametrize("name", list(VARIANTS))
def test_english_prompts_are_english_and_chinese_ones_chinese(registry, name):
    english = VARIANTS[name].system_prompt(registry, "en")
    assert not HAN.search(english)
    chinese = VARIANTS[name].system_prompt(registry, "zh")
    extra = chinese.removeprefix(build_system_prompt(registry, "zh"))
    for block in filter(None, extra.strip().split("\n\n")):
        assert HAN.search(block.splitlines()[0]), block  # every added part opens in Chinese
    assert DEFAULT_ROLE["zh"] in chinese


def test_rules_forbid_what_lesson_11_and_04_show(registry):
    for lang, words in {"en": ("Action and a Final Answer", "refund id", "Markdown"),
                        "zh": ("Action 又写 Final Answer", "退款单号", "Markdown")}.items():
        assert all(word in NEGATIVE_RULES[lang] for word in words)


def test_variants_are_named_and_say_what_they_buy():
    assert next(iter(VARIANTS)) == "plain"
    assert all(v.name == name and v.buys for name, v in VARIANTS.items())
    assert variant("json") is VARIANTS["json"]
    with pytest.raises(ValueError, match="no prompt variant 'nope'; there are: plain, "):
        variant("nope")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_history_holds_the_example_only_when_sent_as_turns(registry, lang):
    assert VARIANTS["one-shot-turns"].history(lang) == example_turns(lang)
    assert VARIANTS["one-shot-prompt"].history(lang) == []
    messages = VARIANTS["one-shot-turns"].messages(registry, QUESTIONS[lang], lang)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert messages[-1] == {"role": "user", "content": QUESTIONS[lang]}


# --- every variant works on the classroom model as on a real one ----------------------------------------


@pytest.mark.parametrize("name", list(VARIANTS))
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_variant_reaches_the_same_refund_with_stop(llm, name, lang):
    prompt = VARIANTS[name]
    with Shop(":memory:", clock=fixed_clock(NOW)) as shop:
        registry = shop_registry(shop)
        agent = ReActAgent(llm, registry, system_prompt=prompt.system_prompt(registry, lang))
        result = agent.run(QUESTIONS[lang], history=prompt.history(lang))
        calls = [(call.name, call.input) for call in result.trace.tool_calls]
        assert [tool for tool, _ in calls] == REFUND, result.answer
        assert calls[0] == ("queryOrder", "88231")
        [refund] = shop.refunds()
        assert refund["orderId"] == "88231" and refund["refundId"] in result.answer
        assert result.reason == "final_answer"


@pytest.mark.parametrize("fmt", TOOL_LIST_FORMATS)
def test_a_tool_left_out_of_the_list_is_never_called(llm, fmt):
    """The classroom model reads the list in each shape: without applyRefund listed, no refund is written."""
    with Shop(":memory:", clock=fixed_clock(NOW)) as shop:
        registry = ToolRegistry([tool for tool in shop_registry(shop) if tool.name != "applyRefund"])
        prompt = build_prompt(registry, "en", tool_list_format=fmt)
        result = ReActAgent(llm, registry, system_prompt=prompt).run(QUESTIONS["en"])
        assert "applyRefund" not in [call.name for call in result.trace.tool_calls]
        assert shop.refunds() == []


@pytest.mark.parametrize("name", list(VARIANTS))
def test_every_variant_still_runs_on_without_stop(llm, name):
    """No prompt replaces the stop sequence: without it the model writes Observations of its own."""
    with Shop(":memory:", clock=fixed_clock(NOW)) as shop:
        registry = shop_registry(shop)
        text = llm.chat(VARIANTS[name].messages(registry, QUESTIONS["en"], "en")).text
        assert "\nAction: queryOrder\nAction Input: 88231\nObservation: " in text
        assert shop.refunds() == []
