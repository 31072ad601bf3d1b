"""The shape of the answer a request asks for: prose, JSON that matches a schema, or a call to an answer tool.

Frameworks ask for a final answer in three ways besides prose, and the classroom model writes each from one
function (`shape_answer`), after it has decided what to say:

    response_format {"type": "json_schema", ...}   the openai client's `chat.completions.parse`, LangChain's
                                                   `with_structured_output`, the Responses API's `text.format`
    response_format {"type": "json_object"}        "answer in JSON", no schema given
    an answer tool in `tools`                      pydantic-ai's `final_result`, smolagents' `final_answer`,
                                                   the one tool no planner calls when `tool_choice` is
                                                   "required" (LangChain's ToolStrategy): the answer is the
                                                   arguments of a call to that tool

Its fields are filled as schema_filling.py fills a schema (`fill`): from the Observations' JSON, a JSON object the
user pasted (for a `response_format` answer; not for an answer tool: conversation.read_conversation says why), the
order id the customer gave, and, for a field that asks for prose (answer, summary, reply, ...), the answer the model
would have typed. A required field it cannot fill is never invented: the reply says which one instead (the API's
`refusal`, or prose when the answer goes through a tool the request does not force). When `tool_choice` forces the
answer tool's call, the reply is a call, as OpenAI's always is: without the fields it cannot fill, or, for a
`"strict": true` tool, which may not be called without them, a refusal. A schema it cannot fill at all is refused
with a 400 (`check_schema`, there).
"""

from __future__ import annotations

import json
import re
from typing import NamedTuple

from tinyagent.classroom.reply import Reply, ToolCallRequest
from tinyagent.classroom.schema_filling import cannot_fill, check_schema, fill, strict_tools

# Names under which frameworks offer the tool that ends the conversation with the answer as its arguments.
ANSWER_TOOLS = ("final_result", "final_answer", "final_output")


class AnswerShape(NamedTuple):
    """What the request wants the answer to look like (None for both: prose).

    schema: the JSON Schema of the answer ({} for `json_object`, or an object with the keys the messages ask for by
            name); name: the schema's name
    tool:   the answer tool to call with the answer as its arguments (its schema is `schema`); forced and strict
            say what the request asks of a call to it (shape_answer says what each changes)
    """

    schema: dict | None = None
    name: str = ""
    tool: str | None = None
    forced: bool = False  # `tool_choice` makes the answer tool's call the only reply ("required", or its name)
    strict: bool = False  # the answer tool is `"strict": true`: no call to it may leave out a required field


def read_answer_shape(request: dict, tools: dict[str, str], schemas: dict[str, dict],
                      unplanned: tuple[str, ...] = ()) -> AnswerShape:
    """The answer's shape: an answer tool among `tools` (`schemas`: their parameters, each one `check_schema`
    passed), else `response_format`. A malformed `response_format` is a ValueError (the server answers 400).

    An answer tool is one named as frameworks name them (ANSWER_TOOLS), or, when `tool_choice` is "required"
    (every reply must be a call, so the answer must be one too), the only tool of `unplanned`, the tools no
    planner would call (LangChain's structured output as a tool named after its schema, `OrderFacts`).
    """
    tool = next((name for name in tools if name.lower() in ANSWER_TOOLS or name.startswith("final_result_")), None)
    if tool is None and request.get("tool_choice") == "required" and len(unplanned) == 1:
        tool = unplanned[0]
    if tool is not None:  # its schema is one tool_list.read_native_tools checked
        return AnswerShape(schemas.get(tool) or {}, tool, tool, forces_call(request, tool), tool in strict_tools(request))
    wanted = request.get("response_format")
    if wanted is None:
        return AnswerShape()
    kind = wanted.get("type") if isinstance(wanted, dict) else None
    if kind == "text":
        return AnswerShape()
    if kind == "json_object":  # JSON mode: any object, or one with the keys the messages ask for by name
        asked = keys_asked_for(request)
        return AnswerShape({"type": "object", "properties": {key: {} for key in asked}} if asked else {}, "")
    if kind == "json_schema":
        spec = wanted.get("json_schema")
        if not isinstance(spec, dict) or not isinstance(spec.get("schema", {}), dict):
            raise ValueError("response_format.json_schema must be an object with a 'name' and a 'schema'")
        schema = spec.get("schema") or {}
        check_schema(schema, "The json_schema")
        return AnswerShape(schema, str(spec.get("name") or ""))
    raise ValueError("response_format.type must be 'text', 'json_object' or 'json_schema'")


# "with the keys item and state", "fields `product`, `status`", "字段 item、state": the names a JSON-mode prompt asks
# for, written after one of these words.
_KEYS_WORD = re.compile(r"\b(?:keys|fields|properties|attributes)\b|字段|键名|属性", re.IGNORECASE)
_KEY_NAME = re.compile(r"\s*(?:named|called)?\s*[:：]?\s*[\"'`“‘]?([A-Za-z_][A-Za-z0-9_]*)[\"'`”’]?")
_KEY_SEPARATOR = re.compile(r"\s*(?:,\s*(?:and\s+)?|\band\b|、|和|及|与|/|;)\s*", re.IGNORECASE)
_NOT_KEYS = frozenset({"a", "an", "the", "of", "in", "for", "with", "that", "this", "these", "those", "only", "must",
                       "should", "are", "is", "be", "as", "to", "json", "object", "and", "or"})


def keys_asked_for(request: dict) -> list[str]:
    """The key names the request's messages ask a JSON answer to have, in the order written; [] when none."""
    messages = request.get("messages") if isinstance(request.get("messages"), list) else []
    texts = [m.get("content") for m in messages if isinstance(m, dict) and m.get("role") in ("system", "user")]
    for text in reversed([t for t in texts if isinstance(t, str)]):
        for word in _KEYS_WORD.finditer(text):
            names, at = [], word.end()
            while (name := _KEY_NAME.match(text, at)) and name.group(1).lower() not in _NOT_KEYS:
                names.append(name.group(1))
                at = name.end()
                separator = _KEY_SEPARATOR.match(text, at)
                if separator is None:
                    break
                at = separator.end()
            if names:
                return list(dict.fromkeys(names))
    return []


def forces_call(request: dict, name: str) -> bool:
    """Whether the request's `tool_choice` leaves a call to `name` as the only reply: "required" or the name itself."""
    choice = request.get("tool_choice")
    named = choice.get("function") if isinstance(choice, dict) else None
    return choice == "required" or (isinstance(named, dict) and named.get("name") == name)


def shape_answer(shape: AnswerShape, facts: dict[str, object], prose: str, zh: bool) -> Reply:
    """The final answer `prose` in the shape the request asked for, filled from `facts`."""
    if shape.schema is None:
        return Reply(prose)
    filled = fill(shape.schema, facts, prose)
    # Made to call a tool that is not strict, a model calls it with the fields it has (a careless call: the caller's
    # validation catches it); free to answer in words, it says what it cannot fill; made to call a strict tool, or to
    # answer in a schema's shape, it refuses, as OpenAI's models do.
    careless_call = shape.tool is not None and shape.forced and not shape.strict
    if filled.missing and not careless_call:
        text = cannot_fill(filled.missing, zh)
        return Reply(text) if shape.tool and not shape.forced else Reply(None, refusal=text)
    if shape.tool:
        return Reply(None, (ToolCallRequest(shape.tool, filled.value),))
    return Reply(json.dumps(filled.value, ensure_ascii=False))
