"""The ReAct system prompt, in English and Chinese, built from the registry's tool list.

The prompt tells the model three things: who it is, which tools it has (the numbered list from
`ToolRegistry.build_tool_list()`), and the exact text format the parser reads. It is deliberately
plain; lesson 08 measures what few-shot examples and format anchoring add.
"""

from __future__ import annotations

import re

from tinyagent.registry import ToolRegistry

LANGUAGES = ("en", "zh")

DEFAULT_ROLE = {
    "en": "You are the customer-service assistant of Bit Mall, an online electronics shop.",
    "zh": "你是比特严选电子商城的客服助手。",
}

# Short on purpose: every token here is sent again in every round. What stays is what a model needs
# (the tools, each with an input example, and the exact format), in one language per prompt.
# Lesson 02 prints the English prompt up to "Work in this format": keep those words.
_TEMPLATE = {
    "en": """{role}
Help the customer step by step with these tools:
{tool_list}
Work in this format, one step per reply:
Thought: <your reasoning>
Action: <a tool name from the list>
Action Input: <the tool's input>

Then stop: the result comes back as "Observation: <result>". When you can answer:
Thought: <why you can answer now>
Final Answer: <your reply to the customer>

Never write the Observation yourself or invent results. Reply in the customer's language.
""",
    "zh": """{role}
请用下面的工具一步步解决用户的问题：
{tool_list}
每次回复只走一步：
Thought: <你的思考>
Action: <列表中的一个工具名>
Action Input: <工具的输入>

然后停下，结果会以 "Observation: <结果>" 发回给你。可以回答时：
Thought: <为什么现在可以回答>
Final Answer: <给用户的回复>

不要自己写 Observation，不要编造工具或结果。用用户的语言回复。
""",
}

CHINESE_CHARACTER = re.compile("[\u4e00-\u9fff]")  # CJK Unified Ideographs


def detect_language(text: str) -> str:
    """"zh" if the text contains any Chinese character, else "en": enough to pick a prompt."""
    return "zh" if CHINESE_CHARACTER.search(text or "") else "en"


def check_language(lang: str) -> str:
    if lang not in LANGUAGES:
        raise ValueError(f"lang must be one of {', '.join(LANGUAGES)}, got {lang!r}")
    return lang


def build_system_prompt(tools: ToolRegistry | str, lang: str = "en", role: str | None = None) -> str:
    """The system prompt for `tools` (a registry, or a tool list it built) in `lang` ("en" or "zh")."""
    check_language(lang)
    tool_list = tools.build_tool_list(lang) if isinstance(tools, ToolRegistry) else str(tools)
    if not tool_list.strip():
        raise ValueError("the system prompt needs at least one tool in the tool list")
    if not tool_list.endswith("\n"):
        tool_list += "\n"
    return _TEMPLATE[lang].format(role=role or DEFAULT_ROLE[lang], tool_list=tool_list)
