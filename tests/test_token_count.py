"""The lesson's token counter: exact cl100k_base with the cookbook's chat rule, and the documented
fallback to the classroom model's rule when quicktok is not installed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from tinyagent import LlmClient, fixed_clock
from tinyagent.classroom.tokens import count_prompt_tokens, count_tokens
from tinyagent.protocols.prompt_variants import VARIANTS
from tinyagent.protocols.token_count import classroom_counter, token_counter
from tinyagent.shop import Shop, shop_registry

MESSAGES = [{"role": "system", "content": "You help Bit Mall customers."}, {"role": "user", "content": "订单 88231"}]


@pytest.fixture()
def fresh_counter():
    token_counter.cache_clear()
    yield
    token_counter.cache_clear()


def _overhead():
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "overhead.py"
    spec = importlib.util.spec_from_file_location("overhead_for_token_count", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cl100k_counts_known_ids(fresh_counter):
    pytest.importorskip("quicktok")
    counter = token_counter()
    assert counter.exact and counter.name.startswith("cl100k_base (quicktok-v1)")
    assert counter.text("hello 世界") == 5  # [15339, 220, 3574, 244, 98220], as tiktoken gives
    assert counter.text("") == 0
    # 3 per message + role + content, + 3 for the reply: two one-token messages make 3+1+1 + 3+1+1 + 3.
    assert counter.chat([{"role": "user", "content": "hello"}, {"role": "system", "content": "hi"}]) == 13


def test_a_special_token_s_text_and_a_lone_surrogate_are_counted_not_refused(fresh_counter):
    # "<|endoftext|>" in a question or a page is text, as a provider reads it: encode() raised ValueError on it,
    # and a budgeted run (ContextBudget.fit) with it.
    pytest.importorskip("quicktok")
    counter = token_counter()
    assert counter.text("what is <|endoftext|>?") == 8
    assert counter.text("x\ud800") == counter.text("x\ufffd")  # sent as U+FFFD; it raised TypeError
    from tinyagent.memory.context_budget import ContextBudget

    ContextBudget(2000).fit([{"role": "system", "content": "s"}, {"role": "user", "content": "what is <|endoftext|>?"}])


def test_chat_rule_is_the_benchmarks_rule(fresh_counter):
    pytest.importorskip("quicktok")
    overhead = _overhead()
    with Shop(":memory:", clock=fixed_clock("2026-06-30T19:05:23")) as shop:
        registry = shop_registry(shop)
        for variant in VARIANTS.values():
            messages = variant.messages(registry, "订单 88231 的扫地机坏了，帮我退款", "zh")
            assert token_counter().chat(messages) == overhead.chat_tokens(messages)


def test_without_quicktok_the_classroom_rule_is_used_and_named(fresh_counter, monkeypatch):
    monkeypatch.setitem(sys.modules, "quicktok", None)  # import quicktok now raises ImportError
    counter = token_counter()
    assert not counter.exact
    assert "classroom/tokens.py" in counter.name and "quicktok-v1 is not installed" in counter.name
    assert counter.text("Action Input: 88231") == count_tokens("Action Input: 88231") == 4
    assert counter.chat(MESSAGES) == count_prompt_tokens(MESSAGES)


def test_classroom_counter_is_what_the_classroom_model_reports():
    usage = LlmClient.classroom().chat(MESSAGES, max_tokens=1).usage
    assert classroom_counter().chat(MESSAGES) == usage["prompt_tokens"]
    assert classroom_counter().name.startswith("the classroom model's rule")


def test_chat_counts_tool_calls_text_parts_and_a_name(fresh_counter):
    # An assistant's tool_calls counted nothing (7 tokens for 50 copies of the arguments), a list of parts was
    # counted as its Python repr, and a message's name was ignored.
    pytest.importorskip("quicktok")
    counter = token_counter()
    arguments = '{"orderId": "88231"}'

    def call(times):
        return [{"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "queryOrder", "arguments": arguments * times}}]}]

    empty = counter.chat([{"role": "assistant", "content": None}])
    assert counter.chat(call(1)) == empty + counter.text("queryOrder") + counter.text(arguments)
    assert counter.chat(call(50)) == empty + counter.text("queryOrder") + counter.text(arguments * 50)
    as_dict = call(1)
    as_dict[0]["tool_calls"][0]["function"]["arguments"] = {"orderId": "88231"}
    assert counter.chat(as_dict) == counter.chat(call(1))

    plain = counter.chat([{"role": "user", "content": "订单 88231"}])
    parts = [{"type": "text", "text": "订单 88231"}, {"type": "image_url", "image_url": {"url": "data:..."}}]
    assert counter.chat([{"role": "user", "content": parts}]) == plain

    named = counter.chat([{"role": "user", "name": "ada", "content": "订单 88231"}])
    assert named == plain + counter.text("ada") + 1  # the cookbook's tokens_per_name
