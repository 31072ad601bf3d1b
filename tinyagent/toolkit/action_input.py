"""Reading the model's `Action Input` text as the arguments of a tool with a JSON Schema.

A model writes a tool's input in several ways, and all of these mean {"order_id": "88231"} for a tool whose
one parameter is `order_id: str`:

    Action Input: 88231                         plain text: a tool with one parameter takes it as that value
    Action Input: {"order_id": "88231"}         a JSON object
    Action Input: {                             the same object over several lines
      "order_id": "88231"
    }
    Action Input: ```json                       the same object in a Markdown code fence
    {"order_id": "88231"}
    ```

Plain text also works for a tool whose other parameters are all optional: it is the one required
parameter's value (`SF1234567890` for `track(tracking_no: str, latest_only: bool = False)`). Any other tool
with two or more parameters needs the JSON object. Inside a JSON string a raw line break is read as
a line break (`json.loads(..., strict=False)`): models writing a file's content often forget to escape it.
A key given twice (`{"overwrite": false, "overwrite": true}`) is a `Problem`, never its last value (lesson 01's
`keys_once` in tools.py, which the shop's tools read with).

`read_arguments` only reads; it does not judge. `{"order_id": 88231}` comes back as it is, and the
validator (validation.py) then says that order_id must be a string. What it cannot read at all (broken
JSON, plain text for a tool that needs several fields) comes back as a `Problem` saying so. For a tool with one
text parameter, a `{` followed by a quote starts a JSON object, so `{"text": "take an umbrella",}` (a trailing comma)
is broken JSON too, never a message to send; a `{` followed by anything else (`{not json`) is the text's own.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from typing import Any

from tinyagent.chat_result import NotJsonNumber, no_json_constant
from tinyagent.toolkit.validation import Problem, describe_schema
from tinyagent.tools import RepeatedKey, keys_once, without_fence

# How a JSON object's first key starts: {"text": or, in Python's quotes, {'text':.
OBJECT_START = re.compile(r"""\{\s*["']""")


def unwrap(text: str) -> str:
    """The text without surrounding whitespace, a Markdown code fence (```json ... ```: lesson 01's
    `without_fence`, which the shop's tools read with too) or a pair of backticks."""
    text = without_fence(text or "")
    if len(text) >= 2 and text[0] == text[-1] == "`" and "`" not in text[1:-1]:
        return text[1:-1].strip()
    return text


def accepts_strings(schema: Any) -> bool:
    """True when a plain string could be a valid value: the schema's type (or one of its types, or one of
    its anyOf branches) is "string", or it is an enum with a string in it, or it is JSON Schema's `true`
    (anything). A keyword of the wrong form (an MCP server's schema is outside data) counts for nothing."""
    if not isinstance(schema, Mapping):
        return schema is True
    kind = schema.get("type")
    if kind == "string" or (isinstance(kind, list) and "string" in kind):
        return True
    enum = schema.get("enum")
    if isinstance(enum, list) and any(isinstance(value, str) for value in enum):
        return True
    branches = schema.get("anyOf") or schema.get("oneOf")
    return isinstance(branches, list) and any(accepts_strings(branch) for branch in branches)


def read_arguments(text: str, parameters: Mapping[str, Any]) -> dict[str, Any] | Problem:
    """The arguments the Action Input `text` gives, for a tool whose JSON Schema is `parameters`
    (an object schema); or a `Problem` when the text cannot be read as arguments at all."""
    properties: Mapping[str, Any] = parameters.get("properties") or {}
    names = list(properties)
    required = [name for name in names if name in (parameters.get("required") or ())]
    # The parameter plain text stands for: the only one, or the only required one.
    single = names[0] if len(names) == 1 else required[0] if len(required) == 1 else None
    text = unwrap(text)
    if not text:
        return {}
    if text.startswith("{"):
        try:
            value = json.loads(text, strict=False, parse_constant=no_json_constant, object_pairs_hook=keys_once)
        except RepeatedKey as exc:
            return _repeated(exc, names)
        except (ValueError, RecursionError) as exc:  # RecursionError: nested deeper than Python reads
            # A "{" then a quote starts an object's first key: an object broken on the way ({"text": "...",} or
            # cut off) is refused, never sent as the text. Any other "{" is a text parameter's first character.
            if single is not None and accepts_strings(properties[single]) and not OBJECT_START.match(text):
                return {single: text}
            return Problem("", f"the input is not valid JSON: {_json_error(exc)}", _object_expected(names))
        if isinstance(value, dict):
            if len(names) == 1 and value and not set(value) & set(names) and _is_object(properties[names[0]]):
                return {names[0]: value}  # the one parameter's own object, written without its name
            return value
    if not names:
        return {}  # a tool that takes nothing: whatever the model wrote asks for nothing
    if single is None:
        return Problem("", f"the input must be a JSON object, not plain text ({_fields_in_words(parameters)})",
                       _object_expected(names))
    try:
        return {single: _single_value(text, properties[single])}
    except RepeatedKey as exc:  # [{"a": 1, "a": 2}] for a list parameter
        return _repeated(exc, names)


def _single_value(text: str, schema: Mapping[str, Any]) -> Any:
    """The value of a tool's one parameter, written as plain text."""
    try:
        value = json.loads(text, parse_constant=no_json_constant, object_pairs_hook=keys_once)
    except RepeatedKey:
        raise
    except (ValueError, RecursionError):
        return text  # not JSON: the words themselves (the validator says if a string will not do)
    if accepts_strings(schema) and not isinstance(value, str):
        return text  # 88231 for `order_id: str` is the text "88231"
    return value  # 88231 -> 88231 for an integer ("88231", quoted, stays a string); true, [1, 2], ... as JSON


def _repeated(exc: RepeatedKey, names: list[str]) -> Problem:
    # Python's json keeps the last value: {"overwrite": false, "overwrite": true} would overwrite the file.
    key = exc.key[:30]
    return Problem("", f"the input gives {key!r} more than once: give each field once", _object_expected(names))


def _fields_in_words(parameters: Mapping[str, Any]) -> str:
    required = [name for name in parameters.get("properties") or {} if name in (parameters.get("required") or ())]
    optional = [name for name in parameters.get("properties") or {} if name not in required]
    words = [f"required: {', '.join(required)}"] if required else []
    return "; ".join(words + ([f"optional: {', '.join(optional)}"] if optional else []))


def _is_object(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind)


def _object_expected(names: list[str]) -> str:
    return describe_schema({"type": "object", "properties": {key: {} for key in names}}, False)


def _json_error(exc: ValueError | RecursionError) -> str:
    """Why json.loads refused the text, in the lesson's words. Python's own for a long number and a deep nesting
    speak of Python ("use sys.set_int_max_str_digits()", "maximum recursion depth exceeded"), not of the input."""
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at line {exc.lineno}, column {exc.colno}"
    if isinstance(exc, RecursionError):
        return "it is nested too deeply to read"
    if isinstance(exc, NotJsonNumber):
        return str(exc)  # NaN is not JSON
    # The one other ValueError json.loads raises: Python reads no integer of more digits than this.
    return f"a number in it is too long (more than {sys.get_int_max_str_digits()} digits)"
