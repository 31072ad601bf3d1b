"""The ReAct system prompt, in English and Chinese, built from the registry's tool list.

The prompt tells the model three things: who it is, which tools it has (the numbered list from
`ToolRegistry.build_tool_list()`), and the exact text format the parser reads. It is deliberately
plain; lesson 08 measures what few-shot examples and format anchoring add.
"""

from __future__ import annotations

import re

from .registry import ToolRegistry

LANGUAGES = ("en", "zh")

DEFAULT_ROLE = {
    "en": "You are the customer-service assistant of Bit Mall (比特严选), an online electronics shop.",
    "zh": "你是比特严选（一家在线电子产品商店）的智能客服助手。",
}

_TEMPLATE = {
    "en": """{role}
You solve the customer's request step by step, using the tools below.

Tools:
{tool_list}
Work in this format, one step per reply:

Thought: <what you know so far and what you will do next>
Action: <the name of one tool from the list>
Action Input: <the input for that tool>

After each Action, stop. The tool's result comes back to you as "Observation: <result>", and you
continue with a new Thought. When you have everything you need, reply in this format:

Thought: <why you can answer now>
Final Answer: <your reply to the customer>

Rules:
- Call one tool per reply, and never write the Observation yourself.
- Always write a Thought before an Action or a Final Answer.
- Only use tools from the list; never invent a tool or a result.
- Reply in the customer's language.
""",
    "zh": """{role}
请借助下面的工具，一步一步解决用户的问题。

工具列表：
{tool_list}
每次回复只走一步，格式如下：

Thought: <目前掌握了哪些信息，下一步打算做什么>
Action: <工具名，必须是列表中的一个>
Action Input: <传给该工具的输入>

写完 Action Input 就停下。工具的结果会以 "Observation: <结果>" 的形式发回给你，你再继续下一个 Thought。
信息足够回答时，按这个格式回复：

Thought: <为什么现在可以回答了>
Final Answer: <给用户的回复>

规则：
- 每次只调用一个工具，不要自己编写 Observation。
- Action 或 Final Answer 之前一定先写 Thought。
- 只使用列表里的工具，不要编造工具或结果。
- 用用户使用的语言回复。
""",
}

_HAN = re.compile(r"[\u4e00-\u9fff]")


def detect_language(text: str) -> str:
    """"zh" if the text contains any Chinese character, else "en": enough to pick a prompt."""
    return "zh" if _HAN.search(text or "") else "en"


def check_language(lang: str) -> str:
    if lang not in LANGUAGES:
        raise ValueError(f"lang must be one of {', '.join(LANGUAGES)}, got {lang!r}")
    return lang


def build_system_prompt(tools: ToolRegistry | str, lang: str = "en", role: str | None = None) -> str:
    """The system prompt for `tools` (a registry, or a tool list it built) in `lang` ("en" or "zh")."""
    check_language(lang)
    tool_list = tools.build_tool_list() if isinstance(tools, ToolRegistry) else str(tools)
    if not tool_list.strip():
        raise ValueError("the system prompt needs at least one tool in the tool list")
    if not tool_list.endswith("\n"):
        tool_list += "\n"
    return _TEMPLATE[lang].format(role=role or DEFAULT_ROLE[lang], tool_list=tool_list)
