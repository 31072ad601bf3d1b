"""Checking the model's arguments against a JSON Schema, and saying in words what is wrong and where.

`problems_in(value, schema)` returns every problem it finds, each naming its field the way a person
would ("reason", "address.city", "items[1]"), what is wrong ("reason is missing", "order_id must be a
string, got the number 88231") and what was expected ("a string: the order id, e.g. 88231"). An empty
list means the value fits. The typed tools of `typed_tool.py` turn the problems into an error Observation,
so the model reads them and writes a better input on the next round.

It checks the keywords that `schema.py` writes and a few common hand-written ones: `type` (one or a list),
`enum`, `const`, `properties`, `required`, `additionalProperties`, `items`, `minItems`, `maxItems`,
`uniqueItems`, `minLength`, `maxLength`, `pattern`, `minimum`, `maximum`, `anyOf`, `oneOf`. Any other
keyword is not checked. Values are JSON data (what `json.loads` returns): no coercion, so the string
"88231" is not an integer. The model learns the difference from the error, once.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_ARTICLE_TYPES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
    "array": "a list",
    "object": "an object",
}


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the arguments.

    field:    where, as a path: "reason", "address.city", "items[1]"; "" for the input as a whole
    message:  what is wrong, in one sentence that names the field
    expected: what would be right, in words (with the field's description when the schema has one)
    """

    field: str
    message: str
    expected: str


def describe_schema(schema: Mapping[str, Any], with_description: bool = True) -> str:
    """A schema in a few words: "a string", "one of "quality", "no_reason"", "a list of strings", ..."""
    if "const" in schema:
        words = f"exactly {_show(schema['const'])}"
    elif "enum" in schema:
        words = "one of " + ", ".join(_show(value) for value in schema["enum"])
    elif "anyOf" in schema or "oneOf" in schema:
        words = " or ".join(describe_schema(branch, False) for branch in schema.get("anyOf") or schema.get("oneOf") or ())
    else:
        kinds = schema.get("type")
        kinds = [kinds] if isinstance(kinds, str) else list(kinds or [])
        words = " or ".join(_describe_type(kind, schema) for kind in kinds) or "any JSON value"
    description = schema.get("description") if with_description else None
    return f"{words}: {description}" if description else words


def _describe_type(kind: str, schema: Mapping[str, Any]) -> str:
    if kind == "array" and isinstance(schema.get("items"), Mapping):
        item = describe_schema(schema["items"], False)
        return f"a list of {_plural(item)}"
    if kind == "object" and schema.get("properties"):
        return "an object with " + ", ".join(schema["properties"])
    words = _ARTICLE_TYPES.get(kind, kind)
    limits = [(key, text) for key, text in _LIMIT_WORDS.get(kind, ()) if key in schema]
    if limits:
        words += " (" + ", ".join(text.format(schema[key]) for key, text in limits) + ")"
    return words


_LIMIT_WORDS = {
    "string": (("minLength", "at least {} characters"), ("maxLength", "at most {} characters")),
    "integer": (("minimum", "at least {}"), ("maximum", "at most {}")),
    "number": (("minimum", "at least {}"), ("maximum", "at most {}")),
    "array": (("minItems", "at least {} items"), ("maxItems", "at most {} items")),
}


def _plural(words: str) -> str:
    for single, plural in (("a string", "strings"), ("an integer", "integers"), ("a number", "numbers"),
                           ("an object", "objects"), ("a list", "lists"), ("true or false", "booleans")):
        if words.startswith(single):
            return plural + words[len(single):]
    return words


def _show(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def describe_value(value: Any) -> str:
    """What the model sent, in words: "the number 88231", "the string "88231"", "a list of 2 items"."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return f"the number {_show(value)}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:40] + "…"
        return f"the string {_show(shown)}"
    if isinstance(value, list):
        return f"a list of {len(value)} item{'s' if len(value) != 1 else ''}"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _fits_any_type(value: Any, kinds: str | list[str]) -> bool:
    return any(_fits_type(value, kind) for kind in ([kinds] if isinstance(kinds, str) else kinds))


def _fits_type(value: Any, kind: str) -> bool:
    actual = _json_type(value)
    return actual == kind or (kind == "number" and actual == "integer")


def _same(value: Any, allowed: Any) -> bool:
    """Equal as JSON values: true is not 1 (Python says it is), 1.0 is 1 (JSON Schema says it is)."""
    return _json_type(value) == _json_type(allowed) and value == allowed


def _json_key(value: Any) -> str:
    """One text per JSON value, the same for values `_same` calls equal (1.0 is 1; true is not 1)."""
    return json.dumps(_canonical(value), sort_keys=True)


def _canonical(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_canonical(item) for item in value]
    if isinstance(value, dict):
        return {key: _canonical(item) for key, item in value.items()}
    return value


def _name(path: str) -> str:
    return path or "the input"


def problems_in(value: Any, schema: Mapping[str, Any], path: str = "") -> list[Problem]:
    """Every way `value` (JSON data) breaks `schema`; [] when it fits. `path` is where `value` sits."""
    expected = describe_schema(schema)
    for keyword in ("anyOf", "oneOf"):
        if keyword in schema:
            branches = schema[keyword]
            if any(not problems_in(value, branch, path) for branch in branches):
                break
            # `Address | None` given an object: the problem is inside the object, so say where.
            same_type = [b for b in branches if "type" in b and _fits_any_type(value, b["type"])]
            if len(same_type) == 1:
                return problems_in(value, {**same_type[0], "description": schema.get("description")}
                                   if schema.get("description") and not same_type[0].get("description")
                                   else same_type[0], path)
            return [Problem(path, f"{_name(path)} must be {describe_schema(schema, False)}, got "
                                  f"{describe_value(value)}", expected)]
    kinds = schema.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else list(kinds)
        if not _fits_any_type(value, kinds):
            return [Problem(path, f"{_name(path)} must be {describe_schema(schema, False)}, got "
                                  f"{describe_value(value)}", expected)]
    if "const" in schema and not _same(value, schema["const"]):
        return [Problem(path, f"{_name(path)} must be {_show(schema['const'])}, got {describe_value(value)}",
                        expected)]
    if "enum" in schema and not any(_same(value, allowed) for allowed in schema["enum"]):
        return [Problem(path, f"{_name(path)} must be one of {', '.join(_show(v) for v in schema['enum'])}, "
                              f"got {describe_value(value)}", expected)]
    if isinstance(value, dict):
        return _object_problems(value, schema, path)
    if isinstance(value, list):
        return _array_problems(value, schema, path, expected)
    if isinstance(value, str):
        return _string_problems(value, schema, path, expected)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _number_problems(value, schema, path, expected)
    return []


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _object_problems(value: dict, schema: Mapping[str, Any], path: str) -> list[Problem]:
    properties: Mapping[str, Any] = schema.get("properties") or {}
    required = schema.get("required") or ()
    problems = []
    # In the schema's order (the order the prompt lists the fields), then the fields it does not know.
    for name in [*properties, *(name for name in required if name not in properties)]:
        if name in value:
            problems.extend(problems_in(value[name], properties.get(name, {}), _child(path, name)))
        elif name in required:
            spec = properties.get(name, {})
            problems.append(Problem(_child(path, name), f"{_child(path, name)} is missing", describe_schema(spec)))
    extra = schema.get("additionalProperties", True)
    for name, item in value.items():
        if name in properties:
            continue
        if extra is False:
            known = [key for key in properties if key not in value]
            close = _closest(name, known)
            hint = f" (did you mean {close}?)" if close else ""
            fields = ", ".join(properties) or "none"
            where = f" of {path}" if path else ""
            problems.append(Problem(_child(path, name), f"{_child(path, name)} is not a field{where}{hint}",
                                    f"only these fields: {fields}"))
        elif isinstance(extra, Mapping):
            problems.extend(problems_in(item, extra, _child(path, name)))
    return problems


def _closest(name: str, candidates: list[str]) -> str | None:
    """The field a mistyped name most likely meant: the same letters (orderId / order_id), or a near miss."""

    def squash(text: str) -> str:
        return re.sub(r"[^0-9a-z]", "", text.lower())

    same = [candidate for candidate in candidates if squash(candidate) == squash(name)]
    if same:
        return same[0]
    near = difflib.get_close_matches(squash(name), [squash(c) for c in candidates], n=1, cutoff=0.75)
    return next((c for c in candidates if near and squash(c) == near[0]), None)


def _array_problems(value: list, schema: Mapping[str, Any], path: str, expected: str) -> list[Problem]:
    problems = []
    if "minItems" in schema and len(value) < schema["minItems"]:
        problems.append(Problem(path, f"{_name(path)} has {len(value)} items; at least {schema['minItems']} "
                                      "are needed", expected))
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        problems.append(Problem(path, f"{_name(path)} has {len(value)} items; at most {schema['maxItems']} "
                                      "are allowed", expected))
    if schema.get("uniqueItems"):
        seen: set[str] = set()  # one pass with a set: `item in list` took 73 s for 140,000 numbers
        for index, item in enumerate(value):
            key = _json_key(item)
            if key in seen:
                problems.append(Problem(f"{path}[{index}]", f"{path}[{index}] repeats an earlier item", expected))
                break
            seen.add(key)
    items = schema.get("items")
    if isinstance(items, Mapping):
        for index, item in enumerate(value):
            problems.extend(problems_in(item, items, f"{path}[{index}]"))
    return problems


def _string_problems(value: str, schema: Mapping[str, Any], path: str, expected: str) -> list[Problem]:
    problems = []
    if "minLength" in schema and len(value) < schema["minLength"]:
        what = "empty" if not value else f"{len(value)} characters long"
        problems.append(Problem(path, f"{_name(path)} is {what}; at least {schema['minLength']} characters "
                                      "are needed", expected))
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        problems.append(Problem(path, f"{_name(path)} is {len(value)} characters long; at most "
                                      f"{schema['maxLength']} are allowed", expected))
    if "pattern" in schema and not re.search(schema["pattern"], value):
        problems.append(Problem(path, f"{_name(path)} does not match the pattern {schema['pattern']}", expected))
    return problems


def _number_problems(value: float, schema: Mapping[str, Any], path: str, expected: str) -> list[Problem]:
    problems = []
    if "minimum" in schema and value < schema["minimum"]:
        problems.append(Problem(path, f"{_name(path)} is {_show(value)}; the smallest allowed is "
                                      f"{_show(schema['minimum'])}", expected))
    if "maximum" in schema and value > schema["maximum"]:
        problems.append(Problem(path, f"{_name(path)} is {_show(value)}; the largest allowed is "
                                      f"{_show(schema['maximum'])}", expected))
    return problems
