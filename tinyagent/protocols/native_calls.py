"""Native function calling, the reply side (lesson 09): tool calls come back, tool messages go in.

tool_rendering.py renders the tools for the request's `tools`. This module reads what comes back and writes
what goes back:

    the reply     choices[0].message = {"role": "assistant", "content": null, "tool_calls": [
                      {"id": "call_a1", "type": "function",
                       "function": {"name": "queryOrder", "arguments": "{\"orderId\": \"88231\"}"}}, ...]}
    kept          that assistant message joins the conversation with its calls (`assistant_message`): a
                  tool message must answer a call the conversation holds, or the API refuses the request
    answered      one {"role": "tool", "tool_call_id": "call_a1", "content": "<the result>"} per call,
                  in the order of the calls (`tool_message`)

`read_tool_calls` reads a reply's calls into `NativeCall`s and checks what a model can get wrong. The
`arguments` are a JSON *string* the model wrote, so it can be broken JSON, JSON that is not an object
(`"88231"`), or an object that gives a key twice: the call then has a `problem`, and the agent answers it
with an error tool message instead of running anything. A call without an id (some local servers) gets
one, so its tool message can answer it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tinyagent.chat_result import finite_float, no_json_constant
from tinyagent.protocols.tool_rendering import FREE_TEXT_PARAMETERS, input_from_arguments
from tinyagent.registry import ToolRegistry, ToolResult, error_observation
from tinyagent.toolkit.schema import example_arguments
from tinyagent.tools import Action, RepeatedKey, keys_once

NOT_AN_OBJECT = "arguments are not a JSON object"


@dataclass(frozen=True)
class NativeCall:
    """One tool call of a reply.

    id:        the call's id, which its tool message quotes back (`tool_call_id`)
    name:      the tool the model asked for
    arguments: the arguments as the model wrote them (the API's JSON string)
    parsed:    the arguments as a JSON object, or None when they are not one
    problem:   why they are not one ("not valid JSON: ...", "arguments are not a JSON object: a string"), else None
    raw:       the call as it came, with its id filled in and its arguments as a string: what the
               assistant message keeps (a provider may put fields of its own in it, which it wants back)
    """

    id: str
    name: str
    arguments: str
    parsed: dict | None
    problem: str | None = None
    raw: Mapping[str, Any] | None = None

    def action(self, tools: ToolRegistry) -> Action:
        """The Action this call stands for: the tool's name and the Action Input text its arguments make
        (tool_rendering.input_from_arguments), so the registry runs it exactly like a ReAct step."""
        tool = tools.get(self.name)
        if tool is None or self.parsed is None:
            return Action(self.name, self.arguments)
        return Action(self.name, input_from_arguments(tool, self.parsed))

    def rejection(self, tools: ToolRegistry) -> ToolResult | None:
        """The error a call with unreadable arguments gets instead of running, or None when it can run.

        An unknown tool is left to the registry, whose error lists the tools there are (lesson 02)."""
        tool = tools.get(self.name)
        if self.problem is None or tool is None:
            return None
        schema = tool.parameters if tool.parameters is not None else FREE_TEXT_PARAMETERS
        message = (f"the arguments of {self.name} could not be read ({self.problem}); nothing ran. "
                   "Call it again with the arguments as one JSON object that fits its parameters")
        return ToolResult(error_observation(message, example=example_arguments(schema)), error=True)


def read_tool_calls(tool_calls: Iterable[Mapping[str, Any]], prefix: str = "call") -> list[NativeCall]:
    """The calls of a reply (`ChatResult.tool_calls`, each {"id", "type", "function": {"name", "arguments"}}).

    A call without an id, or with the id of an earlier call of the same reply, gets `<prefix>_<n>` (n its
    position; with "_" added while another call of the reply has that id), so every tool message answers exactly
    one call. The client has already checked that each call has a function with a name.
    """
    tool_calls = [copy.deepcopy(dict(call)) for call in tool_calls]  # the client refused one too deep to copy
    given = {call.get("id") for call in tool_calls if isinstance(call.get("id"), str)}
    calls, seen = [], set()
    for index, raw in enumerate(tool_calls):
        function = dict(raw.get("function") or {})
        call_id = raw.get("id")
        if not isinstance(call_id, str) or not call_id or call_id in seen:
            call_id = f"{prefix}_{index}"
            while call_id in given or call_id in seen:  # a server's own id may look like one made here
                call_id += "_"
        seen.add(call_id)
        arguments, parsed, problem = read_arguments(function.get("arguments"))
        function["arguments"] = arguments  # the API wants the string back, whatever a server sent
        raw.update(id=call_id, type=raw.get("type") or "function", function=function)
        calls.append(NativeCall(call_id, str(function.get("name") or ""), arguments, parsed, problem, raw))
    return calls


def read_arguments(arguments: Any) -> tuple[str, dict | None, str | None]:
    """(the arguments as a JSON string, as an object or None, the problem or None).

    The API sends a JSON string. Forgiven: no arguments or "" (a tool without parameters; some servers
    leave them out), an object instead of a string (some servers decode it), and an object encoded twice
    (a JSON string that holds the object's JSON, which small models write). Anything else that is not an
    object is a problem: the tool never sees it. So is an object that gives a key twice (`{"orderId": "88231",
    "orderId": "88232"}`): json.loads keeps the last value silently, and which one was meant cannot be told.
    """
    if arguments is None:
        return "{}", {}, None
    if isinstance(arguments, Mapping):
        return json.dumps(arguments, ensure_ascii=False), dict(arguments), None
    if not isinstance(arguments, str):
        return json.dumps(arguments, ensure_ascii=False), None, f"{NOT_AN_OBJECT}: a {_kind(arguments)}"
    if not arguments.strip():
        return "{}", {}, None
    try:
        value = json.loads(arguments, object_pairs_hook=keys_once,  # a key given twice: RepeatedKey
                           parse_constant=no_json_constant, parse_float=finite_float)  # 1e999: no float
    except RepeatedKey as exc:
        return arguments, None, _given_twice(exc)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested deeper than Python reads
        return arguments, None, f"not valid JSON: {_short(exc)}"
    if isinstance(value, str):  # encoded twice: a string that holds the object
        try:
            inner = json.loads(value, object_pairs_hook=keys_once, parse_constant=no_json_constant,
                               parse_float=finite_float)
        except RepeatedKey as exc:
            return arguments, None, _given_twice(exc)
        except (ValueError, RecursionError):
            inner = None
        if isinstance(inner, dict):
            return arguments, inner, None
    if not isinstance(value, dict):
        return arguments, None, f"{NOT_AN_OBJECT}: a {_kind(value)}"
    return arguments, value, None


def _given_twice(exc: RepeatedKey) -> str:
    key = exc.key if len(exc.key) <= 60 else exc.key[:60] + "..."
    return f"the key {key!r} is given more than once"


def assistant_message(text: str | None, calls: Iterable[NativeCall]) -> dict:
    """The model's reply as it joins the conversation: its text (None when it wrote none, as the API
    sends it) and its calls, each as it came (`NativeCall.raw`). Without calls, a plain text message."""
    calls = list(calls)
    if not calls:
        return {"role": "assistant", "content": text or ""}
    return {"role": "assistant", "content": text or None, "tool_calls": [dict(call.raw or {}) for call in calls]}


def tool_message(call: NativeCall, text: str) -> dict:
    """The answer to one call: the tool's result (or the error that took its place)."""
    return {"role": "tool", "tool_call_id": call.id, "content": text}


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "string", list: "list"}.get(type(value), type(value).__name__)


def _short(exc: ValueError) -> str:
    text = str(exc)
    return text if len(text) <= 120 else text[:120] + "..."
