"""Reading a recorded request (wire.py's WireCall): what a framework wrote before its model said a word.

    system_prompt(call)        the instructions it sent (its system message, or the Responses `instructions`)
    tool_listing(call)         how it offered the tools: JSON Schemas in `tools`, or lines inside the prompt
    observation_place(call)    where the tools' results sit in the conversation
    message_roles(call)        the conversation as roles, e.g. "system user assistant tool assistant tool"
"""

from __future__ import annotations

import re

from tinyagent.frameworks.wire import WireCall


def text_of(content: object) -> str:
    """A message's text: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def system_prompt(call: WireCall) -> str:
    """The system (or developer) message, or the Responses API's `instructions`; "" when there is none."""
    for message in call.messages:
        if isinstance(message, dict) and message.get("role") in ("system", "developer"):
            return text_of(message.get("content"))
    return str(call.body.get("instructions") or "")


def tool_listing(call: WireCall) -> str:
    """How the request offers the tools to the model."""
    if call.tools:
        return f"`tools` field: {len(call.tools)} JSON Schemas"
    prompt = "\n".join(text_of(m.get("content")) for m in call.messages if isinstance(m, dict))
    if "> Tool Name:" in prompt:
        return "system prompt: '> Tool Name: … Tool Args: {…}' blocks"
    if "(text) - " in prompt:
        return "user message: 'name(text) - description' lines"
    if re.search(r"^\d+\. \w+ - ", prompt, re.MULTILINE):
        return "system prompt: numbered 'N. name - description' lines"
    return "not offered"


def observation_place(call: WireCall) -> str:
    """Where the tools' results are in this request ("-" when it carries none yet)."""
    messages = [m for m in call.messages if isinstance(m, dict)]
    if any(m.get("role") == "tool" for m in messages):
        return "role 'tool' messages"
    if any(m.get("type") == "function_call_output" for m in messages):
        return "function_call_output items"
    users = [text_of(m.get("content")) for m in messages if m.get("role") == "user"]
    if any(text.startswith("Observation:") for text in users):
        return "user messages 'Observation: …'"
    if any("\nObservation: {" in text for text in users):
        return "inside the one user message (the scratchpad)"
    return "-"


def message_roles(call: WireCall) -> str:
    """The conversation's roles in order (a Responses item without a role shows its type)."""
    return " ".join(str(m.get("role") or m.get("type", "?")) if isinstance(m, dict) else "?" for m in call.messages)
