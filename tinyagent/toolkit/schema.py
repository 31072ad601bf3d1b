"""A JSON Schema from a typed Python function: its type hints say the types, its docstring says the words.

The second article marks a Java method `@Tool(description=...)` and each parameter `@ToolParam(description=...)`,
and reads them by reflection. Python already has both halves: type hints (`order_id: str`, `kind:
Literal["quality", "no_reason"] = "quality"`) and a docstring. `function_schema(fn)` reads them:

    def apply_refund(order_id: str, reason: str, kind: Literal["quality", "no_reason"] = "quality") -> dict:
        '''Submit a refund.

        Args:
            order_id: the order id, e.g. 88231
            reason: why the customer wants the money back
            kind: a faulty product, or a return without a reason
        '''

    ->  summary "Submit a refund."
        {"type": "object",
         "properties": {"order_id": {"type": "string", "description": "the order id, e.g. 88231",
                                     "examples": ["88231"]},
                        "reason": {"type": "string", "description": "why the customer wants the money back"},
                        "kind": {"type": "string", "enum": ["quality", "no_reason"], "default": "quality",
                                 "description": "..."}},
         "required": ["order_id", "reason"],
         "additionalProperties": false}

Types it maps: str, int, float, bool, None; `Literal[...]` and `Enum` (an `enum`); `list[X]`, `tuple[X, ...]`,
`set[X]` (an array); `dict[str, X]`; `X | None` and other unions (`anyOf`); a dataclass or a TypedDict (a
nested object, its fields described by its own docstring); `Annotated[X, "words"]` (X, with that
description; a dict there adds JSON Schema keywords: `Annotated[str, {"maxLength": 100}]`). Anything else
is the programmer's mistake and raises `TypeError` at once, as does a parameter
without a type hint: the schema is all the model will know about it.

`to_python(value, hint)` goes back the other way, for values a schema has already accepted: a JSON object
becomes the dataclass it describes, a list of them a list of dataclasses, a string an `Enum` member.
`example_arguments(schema)` builds an input that satisfies a schema, for error messages ("for example: ...").
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import json
import math
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Union

from tinyagent.toolkit.validation import problems_in

_SCALARS: tuple[tuple[type, str], ...] = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"))
# What becomes a JSON array: lists, tuples of one type (tuple[X, ...]), sets (unique items), any Sequence.
_ARRAYS = (list, tuple, set, frozenset, Sequence)

SUPPORTED = (
    "str, int, float, bool, None, Literal[...], an Enum, list[X], tuple[X, ...], set[X], dict[str, X], "
    "X | None, unions, a dataclass, a TypedDict, Annotated[X, 'description']"
)


# --- the docstring ----------------------------------------------------------------------------------------

# Section headers of Google-style docstrings: "Args:" starts the parameters, the others end them.
_PARAM_HEADERS = ("args", "arguments", "parameters", "params", "attributes", "fields", "参数")
_OTHER_HEADERS = ("returns", "return", "yields", "raises", "examples", "example", "notes", "note", "see also",
                  "返回")


@dataclass(frozen=True)
class Docstring:
    """What a docstring says: the summary (the text before any section) and each parameter's description."""

    summary: str
    params: dict[str, str]


def parse_docstring(doc: str | None) -> Docstring:
    """Read a Google-style docstring (`Args:` then `name: words`, continued on deeper-indented lines);
    reST's `:param name: words` lines are read too. Everything before the first section is the summary."""
    lines = inspect.cleandoc(doc or "").splitlines()
    summary: list[str] = []
    params: dict[str, list[str]] = {}
    section = "summary"
    current: str | None = None
    item_indent = 0
    for line in lines:
        stripped = line.strip()
        header = stripped.rstrip(":：").lower()
        if stripped.endswith((":", "：")) and (header in _PARAM_HEADERS or header in _OTHER_HEADERS):
            section, current = ("params" if header in _PARAM_HEADERS else "other"), None
            continue
        rest = re.match(r":param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)", stripped)  # reST, anywhere
        if stripped.startswith(":") and not rest and re.match(r":\w+[^:]*:", stripped):
            section, current = "other", None  # another reST field (:returns:, :raises ...:) ends a param
            continue
        if rest:
            section, current = "params", rest.group(1)
            params[current] = [rest.group(2)]
            item_indent = -1  # a reST item continues on any indented line that is not a new item
            continue
        if section == "summary":
            summary.append(stripped)
        elif section == "params" and stripped:
            indent = len(line) - len(line.lstrip())
            item = re.match(r"(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*[:：]\s*(.*)", stripped)
            if item and (current is None or indent <= item_indent or item_indent < 0):
                current, item_indent = item.group(1).lstrip("*"), indent
                params[current] = [item.group(2)]
            elif current is not None:
                params[current].append(stripped)
    text = "\n".join(summary).strip()
    # A summary is prose: its line breaks are only the source's wrapping (blank lines stay paragraphs).
    text = "\n\n".join(" ".join(part.split()) for part in re.split(r"\n\s*\n", text) if part.strip())
    return Docstring(text, {name: " ".join(" ".join(words).split()) for name, words in params.items()})


# "e.g. 88231", "for example SF1234567890", "如 88231", "例如 退货 政策": the example a description gives.
# A bare "如" only before a space or a colon: it also starts words such as 如果 ("if").
_EXAMPLE = re.compile(r"(?:\be\.g\.,?|\bfor example,?|\bsuch as|例如|比如|如(?=[\s:：]))\s*[:：]?\s*(.+)$",
                      re.IGNORECASE)


def example_in(description: str, schema: Mapping[str, Any]) -> Any:
    """The example value a description gives ("e.g. 88231"), as the schema's type; None if there is none.

    Only a scalar example is read (a number, a word, a quoted string); the text after it is dropped.
    """
    match = _EXAMPLE.search(description or "")
    if not match:
        return None
    text = match.group(1).strip()
    quoted = re.match(r"[\"“'「](.+?)[\"”'」]", text)
    text = quoted.group(1) if quoted else re.split(r"[,;，；。)）]|\.(?:\s|$)", text, maxsplit=1)[0].strip()
    if not text:
        return None
    kind = schema.get("type")
    if kind in ("integer", "number"):
        text = text.split()[0]  # "19.5 yuan" -> "19.5"
    try:
        if kind == "integer":
            return int(text)
        if kind == "number":
            return float(text) if "." in text else int(text)
    except ValueError:
        return None
    if kind != "string" or ("enum" in schema and text not in schema["enum"]):
        return None
    return text


# --- types to schema --------------------------------------------------------------------------------------


def schema_for(hint: Any, where: str = "a parameter") -> dict[str, Any]:
    """The JSON Schema of values of the Python type `hint`. `where` names it in the TypeError."""
    if hint is Any or hint is inspect.Parameter.empty:
        raise TypeError(f"{where} has no type hint: write one ({SUPPORTED}); the schema is what the model reads")
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:
        schema = schema_for(args[0], where)
        for extra in args[1:]:
            if isinstance(extra, Mapping):  # Annotated[str, {"maxLength": 100}]: more JSON Schema keywords
                schema = {**schema, **extra}
        words = [a for a in args[1:] if isinstance(a, str)]
        return {**schema, "description": " ".join(words)} if words else schema
    if hint is None or hint is type(None):
        return {"type": "null"}
    for python_type, name in _SCALARS:
        if hint is python_type:
            return {"type": name}
    if origin is Literal:
        kinds = {_json_type_of(value) for value in args}
        schema: dict[str, Any] = {"enum": list(args)}
        return {"type": kinds.pop(), **schema} if len(kinds) == 1 else schema
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        values = [member.value for member in hint]
        kinds = {_json_type_of(value) for value in values}
        return {"type": kinds.pop(), "enum": values} if len(kinds) == 1 else {"enum": values}
    if origin in (Union, types.UnionType):
        branches = [schema_for(arg, where) for arg in args]
        plain = [b for b in branches if b != {"type": "null"}]
        if len(plain) == 1 and len(branches) == 2 and isinstance(plain[0].get("type"), str) and set(plain[0]) == {"type"}:
            return {"type": [plain[0]["type"], "null"]}  # `str | None`: one schema with two types
        return {"anyOf": branches}
    if hint in _ARRAYS or origin in _ARRAYS:
        if origin is tuple and args and args[-1] is not Ellipsis:
            raise TypeError(f"{where}: a fixed-length tuple {hint} has no JSON form; use tuple[X, ...] or list[X]")
        schema = {"type": "array"}
        if args:
            schema["items"] = schema_for(args[0], where)
        if origin in (set, frozenset) or hint in (set, frozenset):
            schema["uniqueItems"] = True
        return schema
    if hint is dict or origin in (dict, Mapping):
        if args and args[0] is not str:
            raise TypeError(f"{where}: JSON object keys are strings, so use dict[str, X], not {hint}")
        schema = {"type": "object"}
        if args:
            schema["additionalProperties"] = schema_for(args[1], where)
        return schema
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _object_schema(hint, _dataclass_fields(hint), where)
    if _is_typeddict(hint):
        hints = typing.get_type_hints(hint, include_extras=True)
        required = set(getattr(hint, "__required_keys__", hints))
        return _object_schema(hint, [(name, hints[name], name not in required, None) for name in hints], where)
    raise TypeError(f"{where}: {getattr(hint, '__name__', hint)!s} has no JSON Schema here; use one of: {SUPPORTED}")


def _json_type_of(value: Any) -> str:
    for python_type, name in _SCALARS:
        if isinstance(value, python_type):
            return name
    if value is None:
        return "null"
    raise TypeError(f"Literal and Enum values must be str, int, float, bool or None, got {value!r}")


def _is_typeddict(hint: Any) -> bool:
    return isinstance(hint, type) and issubclass(hint, dict) and hasattr(hint, "__total__")


_MISSING = object()


def _dataclass_fields(cls: type) -> list[tuple[str, Any, bool, Any]]:
    """(name, hint, optional, default) for each init field of a dataclass."""
    hints = typing.get_type_hints(cls, include_extras=True)
    fields = []
    for field in dataclasses.fields(cls):
        if not field.init:
            continue
        if field.default is not dataclasses.MISSING:
            fields.append((field.name, hints[field.name], True, field.default))
        elif field.default_factory is not dataclasses.MISSING:
            fields.append((field.name, hints[field.name], True, field.default_factory()))
        else:
            fields.append((field.name, hints[field.name], False, _MISSING))
    return fields


def _object_schema(cls: type, fields: list[tuple[str, Any, bool, Any]], where: str) -> dict[str, Any]:
    docs = parse_docstring(cls.__doc__ if cls.__doc__ and not cls.__doc__.startswith(cls.__name__ + "(") else "")
    properties, required = {}, []
    for name, hint, optional, default in fields:
        properties[name] = _property(hint, docs.params.get(name, ""), default, f"{where}, field {name}")
        if not optional:
            required.append(name)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    if docs.summary:
        schema["description"] = docs.summary
    return schema


def _property(hint: Any, description: str, default: Any, where: str) -> dict[str, Any]:
    """One property: the type's schema, its description (the docstring's wins), an example, the default."""
    schema = schema_for(hint, where)
    if description:
        schema = {**schema, "description": description}
    example = example_in(schema.get("description", ""), schema)
    if example is not None:
        schema["examples"] = [example]
    if default is not _MISSING and default is not None:
        schema["default"] = _jsonable(default, where)
    return schema


def _jsonable(value: Any, where: str) -> Any:
    if isinstance(value, enum.Enum):
        value = value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    if isinstance(value, (tuple, set, frozenset)):
        value = list(value)
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        raise TypeError(f"{where}: its default {value!r} cannot be written as JSON") from None
    return value


@dataclass(frozen=True)
class FunctionSchema:
    """What `function_schema` read: the docstring's summary, the parameters' JSON Schema, the type hints."""

    summary: str
    parameters: dict[str, Any]
    hints: dict[str, Any]


def function_schema(fn: Callable[..., Any]) -> FunctionSchema:
    """The summary and the JSON Schema of `fn`'s parameters, from its type hints, defaults and docstring."""
    signature = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except NameError as exc:  # a hint names a type that is not importable where fn was defined
        raise TypeError(f"the type hints of {_name(fn)} cannot be read: {exc}") from None
    docs = parse_docstring(inspect.getdoc(fn))
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, param in signature.parameters.items():
        where = f"parameter {name!r} of {_name(fn)}"
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"{where}: *args and **kwargs have no schema; name every parameter")
        if param.kind is param.POSITIONAL_ONLY:
            raise TypeError(f"{where} is positional-only; the model passes arguments by name")
        default = _MISSING if param.default is param.empty else param.default
        properties[name] = _property(hints.get(name, param.empty), docs.params.get(name, ""), default, where)
        if default is _MISSING:
            required.append(name)
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = required
    parameters["additionalProperties"] = False
    hints = {name: hints.get(name, Any) for name in signature.parameters}
    return FunctionSchema(docs.summary, parameters, hints)


def _name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


# --- an example that fits a schema ------------------------------------------------------------------------

_PLACEHOLDERS = {"string": "...", "integer": 1, "number": 1.5, "boolean": True, "null": None}


def example_value(schema: Any, use_default: bool = True) -> Any:
    """A value the schema accepts: its example, else its default (unless `use_default` is False: an
    empty list shows little), else its first allowed value, else a placeholder of its type ("..." for a
    string, 1 for an integer). A schema that is no object (JSON Schema's `true`, or whatever an MCP server
    sent) gets the placeholder "...", as does a keyword of the wrong form: an example never raises."""
    if not isinstance(schema, Mapping):
        return "..."
    examples, enum, branches = schema.get("examples"), schema.get("enum"), schema.get("anyOf")
    if isinstance(examples, list) and examples:
        return examples[0]
    if use_default and "default" in schema:
        return schema["default"]
    if isinstance(enum, list) and enum:
        return enum[0]
    if isinstance(branches, list) and branches:
        return example_value(branches[0], use_default)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        return example_arguments(schema)
    if kind == "array":
        count = max(1, _bound(schema, "minItems", 1))
        return [example_value(schema.get("items") or {"type": "string"})] * min(count, _bound(schema, "maxItems", count))
    placeholder = _PLACEHOLDERS.get(kind, "...") if isinstance(kind, str) else "..."
    return _within_bounds(placeholder, schema)


def _bound(schema: Mapping[str, Any], keyword: str, otherwise: int) -> int:
    """A whole-number keyword (minLength, maxItems, ...), or `otherwise` when it is missing or of the wrong form."""
    value = schema.get(keyword)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else otherwise


def _within_bounds(placeholder: Any, schema: Mapping[str, Any]) -> Any:
    """The placeholder moved inside the schema's bounds, so that a model copying the example is not refused again:
    "......" for minLength 6, 2 for minimum 2. (A pattern cannot be met this way: the example then breaks it.)"""
    if isinstance(placeholder, str):
        length = min(max(len(placeholder), _bound(schema, "minLength", 0)), _bound(schema, "maxLength", 10**6))
        return placeholder[:length] if length <= len(placeholder) else "." * length
    if isinstance(placeholder, bool) or not isinstance(placeholder, (int, float)):
        return placeholder
    number = {key: schema.get(key) for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")}
    number = {key: value for key, value in number.items()
              if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)}
    whole = isinstance(placeholder, int)
    if "minimum" in number and placeholder < number["minimum"]:
        placeholder = math.ceil(number["minimum"]) if whole else number["minimum"]
    if "exclusiveMinimum" in number and placeholder <= number["exclusiveMinimum"]:
        placeholder = math.floor(number["exclusiveMinimum"]) + 1 if whole else number["exclusiveMinimum"] + 1
    if "maximum" in number and placeholder > number["maximum"]:
        placeholder = math.floor(number["maximum"]) if whole else number["maximum"]
    if "exclusiveMaximum" in number and placeholder >= number["exclusiveMaximum"]:
        placeholder = math.ceil(number["exclusiveMaximum"]) - 1 if whole else number["exclusiveMaximum"] - 1
    return placeholder


def example_arguments(schema: Mapping[str, Any], also: tuple[str, ...] = ()) -> dict[str, Any]:
    """An example object for an object schema: its required fields, plus the optional ones named in `also`
    (the field an error is about), in the schema's order."""
    properties = schema.get("properties")
    required = schema.get("required")
    wanted = {name for name in required if isinstance(name, str)} if isinstance(required, list) else set()
    return {name: example_value(spec, use_default=name not in also)
            for name, spec in (properties.items() if isinstance(properties, Mapping) else ())
            if name in wanted | set(also)}


# --- JSON values back to Python ---------------------------------------------------------------------------


def to_python(value: Any, hint: Any) -> Any:
    """`value` (JSON data that the schema of `hint` accepted) as the Python value the function expects."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:
        return to_python(value, args[0])
    if value is None:
        return None
    if origin in (Union, types.UnionType):
        # The first branch the value fits, checked the way the validator checks it.
        for arg in args:
            if arg is not type(None) and not problems_in(value, schema_for(arg)):
                return to_python(value, arg)
        return value
    if hint is float and isinstance(value, int):
        return float(value)
    if hint is int and isinstance(value, float):
        return int(value)  # 5.0 is the integer 5 in JSON Schema
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(value)
    if hint in _ARRAYS or origin in _ARRAYS:
        items = [to_python(item, args[0]) if args else item for item in value]
        container = origin or hint
        return container(items) if container in (tuple, set, frozenset) else items
    if (hint is dict or origin in (dict, Mapping)) and args:
        return {key: to_python(item, args[1]) for key, item in value.items()}
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        hints = typing.get_type_hints(hint, include_extras=True)
        return hint(**{key: to_python(item, hints.get(key, Any)) for key, item in value.items()})
    if _is_typeddict(hint):
        hints = typing.get_type_hints(hint, include_extras=True)
        return {key: to_python(item, hints.get(key, Any)) for key, item in value.items()}
    return value
