"""The first request stays small: exact cl100k tokens, tools described in the prompt's language, each
tool stating its input with an example.

Counted with benchmarks/overhead.py's own functions, so the figure the benchmark prints is the one
tested here: the messages a real `ReActAgent` sends in its first round, OpenAI's cookbook chat rule.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from tinyagent import FunctionTool, ToolRegistry, build_system_prompt, fixed_clock
from tinyagent.shop import Shop, shop_tools

pytest.importorskip("quicktok")

BUDGET = {"en": 300, "zh": 380}  # cl100k tokens of system prompt + question (issue 12)
HAN = re.compile(r"[\u4e00-\u9fff]")


def _overhead():
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "overhead.py"
    spec = importlib.util.spec_from_file_location("overhead_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


overhead = _overhead()


@pytest.fixture(scope="module")
def tools():
    return shop_tools(Shop(":memory:", clock=fixed_clock("2026-06-30T19:05:23")))


def test_token_counter_matches_known_cl100k_ids():
    # Checks the counter itself: "hello 世界" is 5 tokens in cl100k_base (tiktoken gives the same ids).
    import quicktok

    assert quicktok.get_encoding("cl100k_base").encode("hello 世界") == [15339, 220, 3574, 244, 98220]
    # 3 per message + role + content, + 3 for the reply: two one-token messages make 3+1+1 + 3+1+1 + 3.
    assert overhead.chat_tokens([{"role": "user", "content": "hello"}, {"role": "system", "content": "hi"}]) == 13


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_first_refund_request_fits_the_token_budget(lang):
    messages = overhead.first_request(lang)
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[1]["content"] == overhead.REFUND_QUESTIONS[lang]
    assert overhead.chat_tokens(messages) <= BUDGET[lang]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_system_prompt_is_in_one_language(lang, tools):
    prompt = build_system_prompt(ToolRegistry(tools), lang)
    tool_lines = [line for line in prompt.splitlines() if re.match(r"\d+\. \S+ - ", line)]
    assert len(tool_lines) == len(tools)
    for line in tool_lines:
        if lang == "en":
            assert not HAN.search(line), line
        else:
            assert HAN.search(line), line
    if lang == "en":
        assert not HAN.search(prompt)


@pytest.mark.parametrize(("lang", "input_word", "example_words"), [
    ("en", "Input:", ("e.g.", "none")),
    ("zh", "输入：", ("如 ", "无")),
])
def test_every_shop_tool_states_its_input_with_an_example(lang, input_word, example_words, tools):
    for tool in tools:
        description = tool.describe(lang)
        assert input_word in description, (tool.name, description)
        stated = description.split(input_word, 1)[1]
        assert any(word in stated for word in example_words), (tool.name, description)


def test_refund_examples_are_valid_json_in_both_languages(tools):
    import json

    refund = next(tool for tool in tools if tool.name == "applyRefund")
    for lang in ("en", "zh"):
        example = re.search(r"\{.*\}", refund.describe(lang))[0]
        assert set(json.loads(example)) == {"orderId", "reason"}


def test_tool_list_takes_each_tools_description_for_the_language():
    bilingual = FunctionTool("lookup", "Look something up.", str, descriptions={"zh": "查一下。"})
    plain = FunctionTool("echo", "Echo the input.", str)
    registry = ToolRegistry([bilingual, plain])
    assert registry.build_tool_list("zh") == "1. lookup - 查一下。\n2. echo - Echo the input.\n"
    assert registry.build_tool_list("en") == "1. lookup - Look something up.\n2. echo - Echo the input.\n"
    assert registry.build_tool_list() == registry.build_tool_list("en")
    assert "1. lookup - 查一下。" in build_system_prompt(registry, "zh")
