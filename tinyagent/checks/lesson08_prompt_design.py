"""Lesson 08 (prompt design): a lean system prompt, and which text has fewer tokens."""

from __future__ import annotations

from collections.abc import Callable

from tinyagent.checks.generated import Rule, Spec, agree_on
from tinyagent.checks.reporting import _fail, _fresh_shop, _not_attempted, _passed, _run, grades
from tinyagent.classroom.tool_list import read_tool_list
from tinyagent.prompts import build_system_prompt
from tinyagent.protocols.prompt_variants import VARIANTS
from tinyagent.protocols.token_count import token_counter
from tinyagent.registry import ToolRegistry
from tinyagent.shop import shop_registry
from tinyagent.tools import FunctionTool

LEAN_SHARE = 0.75  # the lean prompt's budget: this share of the default prompt's tokens
LEAN_KEYS = ("Thought:", "Action:", "Action Input:", "Final Answer:")


def _second_registry():
    """Tools the lean prompt has never seen: a prompt written for the shop's five alone fails here."""
    return ToolRegistry([
        FunctionTool("checkStock", "Units in stock for a product. Input: the product name, e.g. S10 Pro.",
                     lambda text: '{"stock": 3}'),
        FunctionTool("getCurrentTime", "The current date and time. Input: none (empty).",
                     lambda text: "2026-06-30 19:05:23"),
    ])


@grades("Exercise 1")
def check_lean_prompt(lean_prompt: Callable | None) -> None:
    """08, exercise 1: an English prompt within 75% of the default's tokens that keeps what a model needs."""
    exercise = "Exercise 1"
    if lean_prompt is None:
        return _not_attempted(exercise, "Write def lean_prompt(tools) in the cell above.")
    if not callable(lean_prompt):
        _fail(exercise, f"lean_prompt should be a function of the registry, got {type(lean_prompt).__name__}")
    counter = token_counter()
    sizes = []
    with _fresh_shop() as shop:
        for label, registry in (("the shop's tools", shop_registry(shop)), ("two other tools", _second_registry())):
            prompt = _run(exercise, f"lean_prompt(<{label}>)", lean_prompt, registry)
            if not isinstance(prompt, str):
                _fail(exercise, f"lean_prompt returned {type(prompt).__name__}, not the prompt's text")
            lost = [tool.name for tool in registry if tool.describe("en") not in prompt]
            if lost:
                _fail(exercise, f"with {label} the descriptions of {lost} are missing (each must appear word for "
                                "word): they say what input each tool takes. Build the list from `tools`, and "
                                "cut the words around it instead")
            keys = [key for key in LEAN_KEYS if key not in prompt]
            if keys:
                _fail(exercise, f"the keys {keys} are missing: the parser reads only lines that start with them, "
                                "so the prompt must show each one")
            if "Observation" not in prompt:
                _fail(exercise, "say that the tool's result comes back as an Observation: otherwise the model "
                                "cannot know that it should stop after Action Input")
            found = list(read_tool_list(prompt).tools)
            if found != registry.names:
                _fail(exercise, f"with {label}, a tool-list reader finds {found} in your prompt, expected "
                                f"{registry.names}: put one tool on each line (numbered, or `name: description`)")
            default = counter.text(build_system_prompt(registry, "en"))
            budget, used = int(default * LEAN_SHARE), counter.text(prompt)
            if used > budget:
                _fail(exercise, f"with {label} your prompt has {used} tokens and the default {default}: the "
                                f"budget is {budget} ({LEAN_SHARE:.0%}). Which words around the tools can go?")
            sizes.append((used, default))
    (used, default), _ = sizes
    return _passed(exercise, f"{used} tokens instead of {default} ({used / default:.0%}), with every tool's "
                             "description and every key kept. Run the agent with it and watch the refund.")


def shorter_pairs() -> dict[str, dict[str, str]]:
    """08, exercise 2's three pairs of texts, by pair and by option."""
    with _fresh_shop() as shop:
        registry = shop_registry(shop)
        return {
            "system prompt": {"en": build_system_prompt(registry, "en"), "zh": build_system_prompt(registry, "zh")},
            "question": {
                "en": "The robot vacuum I bought last week no longer goes back to its dock. "
                      "If it can't be fixed, I want a refund. Order number 88231.",
                "zh": "我上周买的扫地机不回充了，修不好我想退。订单号 88231。",
            },
            "json or example": {name: VARIANTS[name].system_prompt(registry, "en")
                                for name in ("json", "one-shot-prompt")},
        }


SHORTER_HINTS = {
    "system prompt": "the Chinese prompt has half the characters; is a Chinese character cheaper than an "
                     "English word?",
    "question": "count words in one and characters in the other: about one token each",
    "json or example": "five tool definitions with their schemas, or one short conversation: "
                       "which holds more text?",
}


@grades("Exercise 2", spec=Spec(fixed=(
    "a prediction about three fixed pairs of texts: nothing to generate; each choice is compared with the "
    "lesson's counter's count of both texts, measured on the spot")))
def check_shorter_predictions(shorter: dict | None) -> None:
    """08, exercise 2: for each pair, which text has fewer tokens (measured here with the lesson's counter)."""
    exercise = "Exercise 2"
    if shorter is None:
        return _not_attempted(exercise, 'Set shorter to a dict such as {"system prompt": "en", ...}.')
    pairs = shorter_pairs()
    if not isinstance(shorter, dict) or set(shorter) != set(pairs):
        _fail(exercise, f"shorter should be a dict with the keys {list(pairs)}, got {shorter!r}")
    counter = token_counter()
    counts = {pair: {option: counter.text(text) for option, text in texts.items()} for pair, texts in pairs.items()}
    wrong = []
    for pair, options in counts.items():
        if shorter[pair] not in options:
            _fail(exercise, f"shorter[{pair!r}] should be one of {list(options)}, got {shorter[pair]!r}")
        if options[shorter[pair]] > min(options.values()):
            wrong.append(f"{pair}: not {shorter[pair]!r} ({SHORTER_HINTS[pair]})")
    if wrong:
        _fail(exercise, f"{len(wrong)} of {len(pairs)} wrong. " + "; ".join(wrong))
    lines = [
        f"{pair}: " + ", ".join(f"{option} {count} tokens ({len(pairs[pair][option])} characters)"
                                for option, count in options.items())
        for pair, options in counts.items()
    ]
    return _passed(exercise, f"measured with {counter.name}:\n  " + "\n  ".join(lines))
