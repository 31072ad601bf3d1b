"""`tool_choice`, honoured as OpenAI's API defines it: "auto" (the model decides), "none" (no call: read in
tool_list.py), "required" (at least one call) and a named function (a call to that function).

The model plans with every tool the request offers, as a real model sees them all; this module then holds its
reply to what `tool_choice` asks:

- a named function: the plan's calls to it, or, when the plan wanted another tool or an answer, one call to it
  with its arguments filled from what the conversation knows (the order id asked about, a tracking number, the
  customer's words for a free-text field), under the names its own schema gives (`forced_call`: a required one it
  cannot fill is left out, or, for a `"strict": true` tool, the reply is a refusal that names it);
- "required": the plan's calls, or, when the plan wanted to answer, a call to the tool the request most needs:
  the first tool of its kind the request's intent uses that has not been called yet, else the tool whose name and
  description share the most words with the request.

A framework that forces a call to give its answer through a tool of its own ("final_result") is answered by
answer_shapes.py before this module is asked.
"""

from __future__ import annotations

import re

from tinyagent.classroom.conversation import TRACKING_NO, Conversation
from tinyagent.classroom.reply import Reply, ToolCallRequest
from tinyagent.classroom.schema_filling import Filled, cannot_fill, fill, strict_tools

# The kinds of tool each intent's plan calls, in the order it calls them (intents.py names the intents); for an
# intent whose plan calls none (need_order_id), the tool a forced call goes to.
INTENT_TOOLS = {
    "refund": ("order", "time", "knowledge", "refund"),
    "return_question": ("order", "time", "knowledge"),
    "fault_report": ("order", "time", "knowledge"),
    "warranty": ("order", "time", "knowledge"),
    "logistics": ("order", "logistics"),
    "order_status": ("order",),
    "policy": ("knowledge",),
    "refund_timing": ("knowledge",),
    "need_order_id": ("knowledge",),
    "time": ("time",),
    "weather": ("weather",),
    "reminder": ("calendar", "forecast", "message"),
    "calculate": ("calculator",),
    "read_file": ("read_file",),
    "write_file": ("write_file",),
    "list_files": ("list_files",),
}
_WORD = re.compile(r"[a-z]+|[0-9]+|[\u4e00-\u9fff]")


def forced_function(request: dict) -> str | None:
    """The function `tool_choice` names, or None ("auto", "none", "required" or absent)."""
    choice = request.get("tool_choice")
    if isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        name = choice["function"].get("name")
        return name if isinstance(name, str) else None
    return None


def honour_tool_choice(request: dict, conv: Conversation, reply: Reply) -> Reply:
    """`reply` held to the request's `tool_choice` (see the module's docstring)."""
    if not conv.native or reply.refusal is not None:
        return reply
    named = forced_function(request)
    if named is not None:
        mine = tuple(call for call in reply.tool_calls if call.name == named)
        return Reply(None, mine) if mine else forced_call(request, conv, named)
    if request.get("tool_choice") == "required" and not reply.tool_calls and conv.tools:
        return forced_call(request, conv, most_needed_tool(conv))
    return reply


def forced_call(request: dict, conv: Conversation, name: str) -> Reply:
    """The call to `name` that `tool_choice` forces, with the arguments the conversation can fill. A required one it
    cannot fill is never invented: a `"strict": true` tool may not be called without it, so the reply is a refusal
    that names it; any other tool is called without it (a careless model's call, which the caller's validation
    catches)."""
    filled = arguments_for(conv, name)
    if filled.missing and name in strict_tools(request):
        return Reply(None, refusal=cannot_fill(filled.missing, conv.zh))
    return Reply(None, (ToolCallRequest(name, filled.value),))


def most_needed_tool(conv: Conversation) -> str:
    """The tool a forced call goes to when the plan wanted none (see the module's docstring)."""
    from tinyagent.classroom.intents import detect_intent

    called = {step.tool for step in conv.steps}
    for kind in INTENT_TOOLS.get(detect_intent(conv), ()):
        name = conv.tool_for(kind)
        if name is not None and name not in called:
            return name
    asked = set(_words(conv.request))
    return max(conv.tools, key=lambda name: len(asked & set(_words(f"{name} {conv.tools[name]}"))))


def arguments_for(conv: Conversation, name: str) -> Filled:
    """Arguments for a call to `name`, under its schema's names, from what the conversation knows: the facts of
    every tool result, the order id and tracking number asked about, and the request's words for a field that
    takes text (a query, a reason, a question); and the required ones it could not fill."""
    known = dict(conv.facts)
    numbers = conv.tracking_numbers or [str(v).upper() for v in known.values() if TRACKING_NO.fullmatch(str(v))]
    if numbers:
        known.setdefault("trackingNo", numbers[0])
    for text_field in ("query", "question", "reason", "input", "text", "keyword"):
        known.setdefault(text_field, conv.request)
    schema = conv.schemas.get(name) or {}
    if not isinstance(schema.get("properties"), dict) or not schema["properties"]:
        return Filled({}, [])
    return fill(schema, known, conv.request)


def _words(text: str) -> list[str]:
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)  # queryOrder -> query Order
    return _WORD.findall(spaced.lower())
