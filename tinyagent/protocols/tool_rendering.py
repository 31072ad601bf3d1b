"""One tool, two renderings: a line of the text prompt, and a function for native function calling.

Every `Tool` has `parameters`: the JSON Schema of its arguments (an object schema), or None for a tool that
takes one free-text input as described in its description. From that:

    input_hint(parameters, lang)   how to write the Action Input, one line for the text prompt
                                   ("Input: a JSON object, e.g. {...}. Fields: ..."); `TypedTool.describe`
                                   appends it, so `ToolRegistry.build_tool_list` lists it with no change
    function_spec(tool, lang)      {"type": "function", "function": {"name", "description", "parameters"}}
                                   for the `tools` field of a Chat Completions request; the description in
                                   `lang`. A tool without `parameters` gets FREE_TEXT_PARAMETERS: one
                                   string argument named "input"
    input_from_arguments(tool, arguments)
                                   the Action Input text a native call's arguments stand for, so the same
                                   `ToolRegistry.run(Action(name, text))` runs both protocols:
                                     parameters None:  arguments["input"] (the free text)
                                     parameters set:   compact JSON of the arguments object
                                     no arguments:     "" (as a ReAct step with an empty Action Input)

Lesson 09 (native function calling) builds on these three:

    tools = [function_spec(tool, lang) for tool in registry]             # the request's "tools"
    text = input_from_arguments(registry.get(name), arguments)           # each tool_call back
    result = registry.run(Action(name, text))                            # checked, never raises
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from typing import Any

from tinyagent.toolkit.schema import example_arguments
from tinyagent.tools import Tool

# The schema of a tool that reads one free text (the shop's hand-written tools before lesson 07, a
# FunctionTool): one string argument, "input", which becomes the Action Input as it is.
FREE_TEXT_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"input": {"type": "string", "description": "the tool's input, as its description says"}},
    "required": ["input"],
    "additionalProperties": False,
}

_WORDS = {
    "en": {
        "none": "Input: none (leave it empty).",
        "one": "Input: {field}. As JSON: {example}.",
        "many": "Input: a JSON object, e.g. {example}. Fields: {fields}.",
        "required": "required",
        "default": "default {value}",
        "separator": "; ",
    },
    "zh": {
        "none": "输入：无（留空）。",
        "one": "输入：{field}。也可写成 JSON：{example}。",
        "many": "输入：JSON 对象，如 {example}。字段：{fields}。",
        "required": "必填",
        "default": "默认 {value}",
        "separator": "；",
    },
}


def _show(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def type_words(schema: Mapping[str, Any]) -> str:
    """A schema's type in the short notation prompts use: string, integer, "quality" | "no_reason",
    list of string, object {city, street}, string | null."""
    if "enum" in schema:
        return " | ".join(_show(value) for value in schema["enum"])
    if "anyOf" in schema or "oneOf" in schema:
        return " | ".join(type_words(branch) for branch in schema.get("anyOf") or schema.get("oneOf") or ())
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else list(kinds or ["any"])
    words = []
    for kind in kinds:
        if kind == "array" and isinstance(schema.get("items"), Mapping):
            words.append(f"list of {type_words(schema['items'])}")
        elif kind == "object" and schema.get("properties"):
            words.append("object {" + ", ".join(schema["properties"]) + "}")
        else:
            words.append(kind)
    return " | ".join(words)


def _one_line(text: str) -> str:
    """A tool is one line of the prompt's numbered list: no line breaks inside."""
    return " ".join(str(text).split())


def input_hint(parameters: Mapping[str, Any] | None, lang: str | None = None) -> str:
    """How to write the Action Input for a tool with these `parameters`, as one line of the text prompt
    in `lang` ("en" or "zh"): its fields with their types, which are required, defaults, and an example.
    "" for None (the tool's description says what its free-text input is)."""
    if parameters is None:
        return ""
    words = _WORDS.get(lang or "en", _WORDS["en"])
    properties: Mapping[str, Any] = parameters.get("properties") or {}
    if not properties:
        return words["none"]
    required = set(parameters.get("required") or ())
    example = _show(example_arguments(parameters))
    parts = []
    for name, spec in properties.items():
        notes = [type_words(spec)]
        if len(properties) > 1 and name in required:
            notes.append(words["required"])
        if "default" in spec:
            notes.append(words["default"].format(value=_show(spec["default"])))
        opened, closed = ("（", "）") if lang == "zh" else (" (", ")")
        colon = "：" if lang == "zh" else ": "
        description = _one_line(spec.get("description") or "")
        separator = "，" if lang == "zh" else ", "
        parts.append(f"{name}{opened}{separator.join(notes)}{closed}" + (f"{colon}{description}" if description else ""))
    if len(properties) == 1:
        name = next(iter(properties))
        example = _show({name: example_arguments(parameters, also=(name,))[name]})
        return words["one"].format(field=parts[0], example=example)
    return words["many"].format(example=example, fields=words["separator"].join(parts))


def parameters_of(tool: Tool, lang: str | None = None) -> dict[str, Any] | None:
    """The tool's `parameters`, with its descriptions in `lang` where the tool has them (a TypedTool)."""
    localized = getattr(tool, "parameters_in", None)
    if callable(localized):
        return localized(lang)
    return copy.deepcopy(dict(tool.parameters)) if tool.parameters is not None else None


def function_spec(tool: Tool, lang: str | None = None) -> dict[str, Any]:
    """The tool as one entry of a request's `tools`, its description in `lang` (its default one without).

    The description is the tool's summary: what it does, without the text prompt's "Input: ..." line
    (a TypedTool's `summary`); the schema says how to call it. A tool without `parameters` takes one
    free-text argument, "input" (FREE_TEXT_PARAMETERS).
    """
    summary = getattr(tool, "summary", None)
    description = summary(lang) if callable(summary) else tool.describe(lang)
    parameters = parameters_of(tool, lang)
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": _one_line(description),
            "parameters": parameters if parameters is not None else copy.deepcopy(FREE_TEXT_PARAMETERS),
        },
    }


def function_specs(tools: Iterable[Tool], lang: str | None = None) -> list[dict[str, Any]]:
    """`function_spec` of every tool, in order: a registry gives them in its prompt order."""
    return [function_spec(tool, lang) for tool in tools]


def input_from_arguments(tool: Tool, arguments: Mapping[str, Any] | str | None) -> str:
    """The Action Input text that a native tool call's `arguments` stand for (a dict, or the API's JSON
    string of one), to run through `ToolRegistry.run(Action(tool.name, text))` like a ReAct step.

    A tool without `parameters` gets its "input" argument as the text (any other value as JSON); a tool
    with `parameters` gets the arguments as compact JSON, which it reads and checks itself. Arguments that
    are not JSON pass through as they are, for the tool to reject with an error Observation.
    """
    if isinstance(arguments, str):
        text = arguments.strip()
        try:
            arguments = json.loads(text) if text else {}
        except (ValueError, RecursionError):
            return text
        if not isinstance(arguments, dict):
            return text
    arguments = dict(arguments or {})
    if not arguments:
        return ""
    if tool.parameters is None and set(arguments) == {"input"}:
        value = arguments["input"]
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
