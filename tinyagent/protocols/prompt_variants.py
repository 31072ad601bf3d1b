"""Prompt builders: a system prompt composed from parts, so each part can be switched and measured.

    build_prompt(registry, "en")                                  # == build_system_prompt(registry, "en")
    build_prompt(registry, "zh", tool_list_format="json", rules=True, anchor=True)
    VARIANTS["one-shot-turns"].messages(registry, question, "en")  # a whole first request

The parts, in the order they appear:

    role          who the model is (prompts.DEFAULT_ROLE unless given)
    tool list     "numbered"    1. queryOrder - Look up an order ...   (ToolRegistry.build_tool_list)
                  "name-colon"  queryOrder: Look up an order ...       (LangChain's classic shape)
                  "json"        a fenced JSON block, one tool definition a line: name, description and
                                the JSON Schema of its parameters, the shape function calling sends
    format        Thought / Action / Action Input, then Final Answer (prompts.py's template, unchanged)
    example       the worked example of tinyagent.protocols.compliance, written into the prompt as text;
                  or, as `PromptVariant(example="turns")`, sent as earlier chat turns instead
    rules         negative rules: what a reply must never do
    anchor        the prompt ends with the exact key the reply must start with: "Thought:"

With every switch off, `build_prompt` returns what `build_system_prompt` returns, character for
character: the course's default prompt is the first variant, not a separate text. Every part exists in
English and Chinese, so a prompt is in one language throughout, but for what the tools write themselves: the "json"
tool list shows each parameter's schema as its tool wrote it (the shop's in English).

A tool's parameters come from its `parameters` attribute (a JSON Schema object, lesson 07) when it has
one; otherwise the block shows one string field, `input`, which the tool's description explains.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from tinyagent.prompts import build_system_prompt, check_language
from tinyagent.protocols.compliance import WORKED_EXAMPLE, example_turns
from tinyagent.registry import ToolRegistry
from tinyagent.tools import Tool

TOOL_LIST_FORMATS = ("numbered", "name-colon", "json")
EXAMPLE_PLACES = ("prompt", "turns")

# The first article's roadmap names three remedies for an unsteady format: a worked example, negative rules and
# format anchoring. Each is a block of text after the default prompt, in the prompt's language.
EXAMPLE_HEADER = {
    "en": "Example (a different order: copy the format, not its facts):",
    "zh": "示例（另一个订单：照着格式写，不要照抄里面的数据）：",
}
# How the example's customer turn is introduced inside the prompt. Not "Customer:": a classroom-model
# reader (and some real parsers) could take a `Word: text` line for a tool.
QUESTION_KEY = {"en": "Question: ", "zh": "用户："}

NEGATIVE_RULES = {
    "en": (
        "Rules:\n"
        "- One Action per reply. Never an Action and a Final Answer in the same reply.\n"
        "- Call only the tools in the list, by their exact names.\n"
        "- State no order detail, date or refund id that no Observation gave you.\n"
        "- Write the keys exactly as shown: no Markdown, no code fences, no translation.\n"
    ),
    "zh": (
        "规则：\n"
        "- 每次回复只写一个 Action；不要在同一次回复里既写 Action 又写 Final Answer。\n"
        "- 只调用列表里的工具，工具名一字不差。\n"
        "- Observation 没给出的订单信息、日期、退款单号，一律不说。\n"
        "- 键名照原样写：不加 Markdown，不放进代码块，不翻译。\n"
    ),
}

# Ends the prompt on the first key of every reply, both kinds (a step and a final answer).
ANCHOR = {
    "en": "Every reply starts with this key, exactly as written:\nThought:",
    "zh": "每次回复都以这个键开头，原样照写：\nThought:",
}


# --- the tool list in three shapes ------------------------------------------------------------------


def tool_parameters(tool: Tool) -> dict:
    """The JSON Schema of a tool's input: its own `parameters` (lesson 07) when it declares one, else one
    required string field `input`, which the tool's description explains."""
    if tool.parameters is not None:
        return _plain(tool.parameters)
    return {"type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"]}


def tool_definition(tool: Tool, lang: str | None = None) -> dict:
    """name, description and parameters: one tool as function-calling APIs describe it (lesson 09)."""
    return {"name": tool.name, "description": tool.describe(lang), "parameters": tool_parameters(tool)}


def _plain(value: object) -> object:
    """A schema made of read-only mappings and tuples, as plain dicts and lists that JSON can write."""
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def tool_list(tools: ToolRegistry, fmt: str = "numbered", lang: str | None = None) -> str:
    """The registry's tools in one of TOOL_LIST_FORMATS, one line per tool, in registration order."""
    if fmt == "numbered":
        return tools.build_tool_list(lang)
    if fmt == "name-colon":
        return "".join(f"{tool.name}: {tool.describe(lang)}\n" for tool in tools)
    if fmt == "json":
        # One compact definition a line: readable, and no indentation to pay for in every round.
        lines = ",\n".join(
            json.dumps(tool_definition(tool, lang), ensure_ascii=False, separators=(", ", ": ")) for tool in tools
        )
        return f"```json\n[\n{lines}\n]\n```\n"
    raise ValueError(f"fmt must be one of {', '.join(TOOL_LIST_FORMATS)}, got {fmt!r}")


# --- the other parts ---------------------------------------------------------------------------------


def example_block(lang: str = "en") -> str:
    """compliance.WORKED_EXAMPLE as text for a system prompt: the same four turns, one conversation."""
    lines = [EXAMPLE_HEADER[check_language(lang)]]
    for role, content in WORKED_EXAMPLE[lang]:
        if role == "user" and not content.startswith("Observation:"):
            lines.append(QUESTION_KEY[lang] + content)
        else:  # the model's steps and the Observations already start with their keys
            lines.append(content)
    return "\n".join(lines) + "\n"


def build_prompt(
    tools: ToolRegistry,
    lang: str = "en",
    *,
    tool_list_format: str = "numbered",
    example: bool = False,
    rules: bool = False,
    anchor: bool = False,
    role: str | None = None,
) -> str:
    """A system prompt from parts. With every switch at its default it is `build_system_prompt`'s."""
    check_language(lang)
    if not isinstance(tools, ToolRegistry):
        raise TypeError(f"build_prompt needs a ToolRegistry, got {type(tools).__name__}")
    blocks = [build_system_prompt(tool_list(tools, tool_list_format, lang), lang, role)]
    if example:
        blocks.append(example_block(lang))
    if rules:
        blocks.append(NEGATIVE_RULES[lang])
    if anchor:
        blocks.append(ANCHOR[lang])
    return "\n".join(blocks)


# --- named variants ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PromptVariant:
    """One prompt design: which tool-list shape, and which of example / rules / anchor it adds.

    `example` is None, "prompt" (the worked example as text in the system prompt) or "turns" (the same
    example as earlier chat turns, the way lesson A1's one-shot prompt sends it). `buys` says in a line
    what the variant is for. Language is chosen when the prompt is built, so one variant is both.
    """

    name: str
    tool_list: str = "numbered"
    example: str | None = None
    rules: bool = False
    anchor: bool = False
    buys: str = ""

    def __post_init__(self) -> None:
        if self.tool_list not in TOOL_LIST_FORMATS:
            raise ValueError(f"tool_list must be one of {', '.join(TOOL_LIST_FORMATS)}, got {self.tool_list!r}")
        if self.example is not None and self.example not in EXAMPLE_PLACES:
            raise ValueError(f"example must be None or one of {', '.join(EXAMPLE_PLACES)}, got {self.example!r}")

    def system_prompt(self, tools: ToolRegistry, lang: str = "en", role: str | None = None) -> str:
        return build_prompt(
            tools, lang, tool_list_format=self.tool_list, example=self.example == "prompt",
            rules=self.rules, anchor=self.anchor, role=role,
        )

    def history(self, lang: str = "en") -> list[dict]:
        """The chat turns sent before the question: the worked example when it goes as turns."""
        return example_turns(lang) if self.example == "turns" else []

    def messages(self, tools: ToolRegistry, question: str, lang: str = "en") -> list[dict]:
        """The first request of a run: system prompt, example turns if any, the question."""
        return [
            {"role": "system", "content": self.system_prompt(tools, lang)},
            *self.history(lang),
            {"role": "user", "content": question},
        ]


VARIANTS: dict[str, PromptVariant] = {
    variant.name: variant
    for variant in (
        PromptVariant("plain", buys="the course's default: build_system_prompt"),
        PromptVariant("name-colon", tool_list="name-colon", buys="the shape LangChain's ReAct prompt uses"),
        PromptVariant("json", tool_list="json", buys="parameters and types, the shape function calling sends"),
        PromptVariant("one-shot-prompt", example="prompt", buys="one worked run, as text in the prompt"),
        PromptVariant("one-shot-turns", example="turns", buys="the same run as earlier turns (lesson A1)"),
        PromptVariant("rules", rules=True, buys="what never to do, said outright"),
        PromptVariant("anchored", anchor=True, buys="ends on the first key of the reply"),
        PromptVariant("rules-anchored", rules=True, anchor=True, buys="rules and the anchor together"),
        PromptVariant("full", example="prompt", rules=True, anchor=True,
                      buys="example, rules and anchor: everything"),
        PromptVariant("full-turns", example="turns", rules=True, anchor=True,
                      buys="everything, with the example as turns"),
    )
}


def variant(name: str) -> PromptVariant:
    """The variant called `name`, or a ValueError listing the names there are."""
    try:
        return VARIANTS[name]
    except KeyError:
        raise ValueError(f"no prompt variant {name!r}; there are: {', '.join(VARIANTS)}") from None
