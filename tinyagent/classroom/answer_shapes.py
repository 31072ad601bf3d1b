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

A field is filled only from what the conversation knows: the Observations' JSON (an order's product, price,
dates, status, tracking number; a refund's id), a JSON object the user pasted, the order id the customer gave,
and, for a field that asks for prose (answer, summary, reply, ...), the answer the model would have typed.
A field it cannot know is null where the schema allows null and left out where the schema does not require it;
a required field it cannot fill is never invented: the reply says which one instead (the API's `refusal`, or
prose when the answer goes through a tool).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import NamedTuple

from tinyagent.classroom.reply import Reply, ToolCallRequest

# Names under which frameworks offer the tool that ends the conversation with the answer as its arguments.
ANSWER_TOOLS = ("final_result", "final_answer", "final_output")

# Fields that ask for prose: the answer the model would have typed goes there.
PROSE_FIELDS = frozenset({
    "answer", "finalanswer", "reply", "response", "summary", "message", "text", "content", "explanation",
    "result", "output", "description", "details",
})

# A fact under another name: what a schema's field most likely means, by its normalised name.
SYNONYMS = {
    "orderid": ("ordernumber", "orderno", "order", "id"),
    "product": ("productname", "item", "itemname", "goods", "name", "title"),
    "price": ("amount", "total", "cost", "paid", "totalprice"),
    "status": ("state", "orderstatus"),
    "trackingno": ("trackingnumber", "tracking", "trackingid", "waybill", "waybillno"),
    "signtime": ("signedat", "signeddate", "signdate", "signedon", "deliveredat", "deliverydate", "signed"),
    "ordertime": ("orderdate", "orderedat", "ordered", "purchasedate", "createdat"),
    "refundid": ("refund",),
    "currenttime": ("now", "today", "date"),
}


class AnswerShape(NamedTuple):
    """What the request wants the answer to look like (None for both: prose).

    schema: the JSON Schema of the answer ({} for `json_object`: any object); name: the schema's name
    tool:   the answer tool to call with the answer as its arguments (its schema is `schema`)
    """

    schema: dict | None = None
    name: str = ""
    tool: str | None = None


def read_answer_shape(request: dict, tools: dict[str, str], schemas: dict[str, dict],
                      unplanned: tuple[str, ...] = ()) -> AnswerShape:
    """The answer's shape: an answer tool among `tools`, else `response_format`. A malformed `response_format`
    is a ValueError (the server answers 400).

    An answer tool is one named as frameworks name them (ANSWER_TOOLS), or, when `tool_choice` is "required"
    (every reply must be a call, so the answer must be one too), the only tool of `unplanned`, the tools no
    planner would call (LangChain's structured output as a tool named after its schema, `OrderFacts`).
    """
    tool = next((name for name in tools if name.lower() in ANSWER_TOOLS or name.startswith("final_result_")), None)
    if tool is None and request.get("tool_choice") == "required" and len(unplanned) == 1:
        tool = unplanned[0]
    if tool is not None:
        return AnswerShape(schemas.get(tool) or {}, tool, tool)
    wanted = request.get("response_format")
    if wanted is None:
        return AnswerShape()
    kind = wanted.get("type") if isinstance(wanted, dict) else None
    if kind == "text":
        return AnswerShape()
    if kind == "json_object":
        return AnswerShape({}, "")
    if kind == "json_schema":
        spec = wanted.get("json_schema")
        if not isinstance(spec, dict) or not isinstance(spec.get("schema", {}), dict):
            raise ValueError("response_format.json_schema must be an object with a 'name' and a 'schema'")
        return AnswerShape(spec.get("schema") or {}, str(spec.get("name") or ""))
    raise ValueError("response_format.type must be 'text', 'json_object' or 'json_schema'")


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def facts_in(values: list[object]) -> dict[str, object]:
    """Every scalar field of the JSON objects in `values`, under its own name; a later value wins."""
    facts: dict[str, object] = {}

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if isinstance(item, (dict, list)):
                    walk(item)
                elif item not in (None, "") and isinstance(key, str):
                    facts.pop(key, None)
                    facts[key] = item
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for value in values:
        walk(value)
    return facts


def _fact_for(field: str, facts: dict[str, object]) -> object:
    by_norm = {_norm(key): value for key, value in facts.items()}
    wanted = _norm(field)
    if wanted in by_norm:
        return by_norm[wanted]
    for fact, names in SYNONYMS.items():
        if wanted in names and fact in by_norm:
            return by_norm[fact]
    return None


def _types(spec: dict) -> set[str]:
    """The JSON types a property allows: its `type` (one or a list), or those of its anyOf / oneOf."""
    kind = spec.get("type")
    found = set(kind) if isinstance(kind, list) else {kind} if isinstance(kind, str) else set()
    for option in (*spec.get("anyOf", ()), *spec.get("oneOf", ())):
        if isinstance(option, dict):
            found |= _types(option)
    if "enum" in spec and not found:
        found = {type_name(value) for value in spec["enum"]}
    return found


def type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string"


def _as_type(value: object, spec: dict) -> object:
    """`value` as the property wants it (a number for "integer"/"number", text for "string"), or None."""
    allowed = _types(spec) - {"null"}
    enum = spec.get("enum")
    if isinstance(enum, list) and value not in enum:
        return None
    if not allowed or type_name(value) in allowed or (type_name(value) == "integer" and "number" in allowed):
        return value
    if "string" in allowed and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if allowed & {"integer", "number"} and isinstance(value, str) and re.fullmatch(r"\d+(\.\d+)?", value):
        number = float(value)
        return int(number) if number.is_integer() and "integer" in allowed else number
    return None


@dataclass
class Filled:
    """The answer's JSON, and the required fields it could not fill (dotted paths)."""

    value: dict
    missing: list[str]


def fill(schema: dict, facts: dict[str, object], prose: str, defs: dict | None = None, path: str = "") -> Filled:
    """An object that matches `schema`, filled from `facts` and `prose` only (see the module's docstring)."""
    defs = schema.get("$defs", {}) if defs is None else defs
    schema = _resolve(schema, defs)
    properties = schema.get("properties")
    if not isinstance(properties, dict) or not properties:  # any object: what is known, and the answer
        return Filled({**facts, "answer": prose}, [])
    required = set(schema.get("required") or ())
    value: dict = {}
    missing: list[str] = []
    for name, spec in properties.items():
        spec = _resolve(spec if isinstance(spec, dict) else {}, defs)
        where = f"{path}{name}"
        found: object = None
        if "object" in _types(spec) and isinstance(spec.get("properties"), dict):
            inner = fill(spec, facts, prose, defs, where + ".")
            found, missing = (inner.value, [*missing, *inner.missing]) if inner.value else (None, missing)
        elif _norm(name) in PROSE_FIELDS and not _types(spec) - {"string", "null", "any"}:
            found = prose or None
        else:
            fact = _fact_for(name, facts)
            found = None if fact is None else _as_type(fact, spec)
        if found is not None:
            value[name] = found
        elif "null" in _types(spec):
            value[name] = None
        elif name in required:
            missing.append(where)
    return Filled(value, missing)


def _resolve(spec: dict, defs: dict) -> dict:
    """A `$ref` to `#/$defs/Name` replaced by the definition (pydantic writes nested models that way)."""
    ref = spec.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return {**defs.get(ref.rsplit("/", 1)[1], {}), **{k: v for k, v in spec.items() if k != "$ref"}}
    return spec


def cannot_fill(missing: list[str], zh: bool) -> str:
    fields = ", ".join(missing)
    if zh:
        return f"我填不了这些必填字段：{fields}。对话里没有它们的值，我不会编造。"
    return f"I cannot fill the required field(s) {fields}: nothing in the conversation says what they are, and I do not make them up."


def shape_answer(shape: AnswerShape, facts: dict[str, object], prose: str, zh: bool) -> Reply:
    """The final answer `prose` in the shape the request asked for, filled from `facts`."""
    if shape.schema is None:
        return Reply(prose)
    filled = fill(shape.schema, facts, prose)
    if filled.missing:
        text = cannot_fill(filled.missing, zh)
        return Reply(text) if shape.tool else Reply(None, refusal=text)
    if shape.tool:
        return Reply(None, (ToolCallRequest(shape.tool, filled.value),))
    return Reply(json.dumps(filled.value, ensure_ascii=False))
