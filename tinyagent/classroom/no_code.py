"""Asked to write code (smolagents' CodeAgent, and agents like it), the classroom model says it writes none.

It is a script that plays a shop assistant: it can name a tool and its input, never write a program. Rather
than a reply the agent cannot run, it says so plainly, in the user's language, and names what works instead.
"""

from __future__ import annotations

from tinyagent.classroom.conversation import message_text
from tinyagent.classroom.reply import Reply
from tinyagent.prompts import detect_language

# CodeAgent's prompt: "solve any task using code blobs", "in the Code sequence"; and the plain wordings. Searched in
# the lower-cased system prompt as plain substrings.
ASKS_FOR_CODE = ("using code blobs", "in the code sequence", "write code to solve", "write python code to solve",
                 "用代码解决", "用代码来解决")


def asks_for_code(system: str) -> bool:
    low = system.casefold()
    return any(phrase in low for phrase in ASKS_FOR_CODE)


SAYS = {
    "en": "Thought: This prompt asks me to write code, and I cannot: the classroom model is a scripted teaching "
    "model that writes no code.\nFinal Answer: The classroom model writes no code. Use a tool-calling agent "
    "instead (smolagents' ToolCallingAgent, or function calling), or a real model configured in .env.",
    "zh": "Thought: 这个提示词要我写代码，而我做不到：课堂模型是按固定规则回答的教学模型，不会写代码。\nFinal Answer: 课堂模型不会写代码。"
    "请改用调用工具的智能体（smolagents 的 ToolCallingAgent，或函数调用），或在 .env 里配置一个真实的模型。",
}


def no_code_reply(request: dict) -> Reply | None:
    """The plain refusal when the system prompt asks for code; None for any other request."""
    messages = request.get("messages") if isinstance(request, dict) else None
    if not isinstance(messages, list) or not messages or not isinstance(messages[0], dict):
        return None
    if messages[0].get("role") not in ("system", "developer") or not asks_for_code(message_text(messages[0])):
        return None
    users = [message_text(m) for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    return Reply(SAYS[detect_language(users[0] if users else "")])
