"""Filling a JSON Schema from what the conversation knows: the classroom model's arguments and structured answers.

When `tool_choice` forces a call the model had not planned (lesson 09: tool_choice.py), the call's arguments are
filled here; so are the answers a request asks for in a schema's shape (lesson 20's frameworks: answer_shapes.py).
`fill` fills a field only from what it is given: `facts`, what the conversation knows (every scalar of the
Observations' JSON, as `facts_in` gathers it: an order's product, price, dates, status, tracking number; a refund's
id; and the order id the customer gave), matched by the field's name or a near one (SYNONYMS) and typed as the schema asks, and, for a field that asks
for prose (answer, summary, reply, ...), the `prose` it is given. A field it cannot know is null where the schema
allows null and left out where the schema does not require it; a required field it cannot fill is never invented:
`Filled.missing` names it, and the reply says which one instead (`cannot_fill`).

A schema the model cannot fill at all is the request's fault, a 400 with one line that says why (`check_schema`):
a keyword it reads with the wrong type (`"required": 5`, `"anyOf": 5`, `"$defs": []`), a `$ref` that points
nowhere, or `$ref`s that loop with no way out, so no finite JSON value fits (`{"$ref": "#"}`, A -> B -> A, an
object that requires an object like itself), or `$ref`s that name the same definitions so often that a fill would
look at more than MAX_FILL_FIELDS fields (definitions that each hold two of the next double it at each level). A
loop with a way out (a `$ref` under an optional property, or in an optional array) is filled: the facts are flat, so
an object inside an object of the same kind would only hold the same facts again; `fill` stops at the first repeat
and treats that field as one it cannot know. `fill` writes no arrays, so a required array, looping or not, is a
required field it cannot fill (the reply says so).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from urllib.parse import unquote

# Fields that ask for prose: the prose `fill` is given goes there (the answer the model would have typed).
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


class TooManyFields(ValueError):
    """`fill` would look at more than MAX_FILL_FIELDS fields (check_schema refuses such a schema first)."""


class _Budget:
    """How many more fields a `fill` may look at: each property, branch and $ref it follows costs one."""

    def __init__(self, fields: int):
        self.left = fields

    def spend(self, fields: int = 1) -> None:
        self.left -= fields
        if self.left < 0:
            raise TooManyFields(f"filling it would look at more than {MAX_FILL_FIELDS} fields")


def fill(schema: dict, facts: dict[str, object], prose: str) -> Filled:
    """An object that matches `schema`, filled from `facts` and `prose` only (see the module's docstring).
    `schema` is one `check_schema` passed (so TooManyFields cannot happen)."""
    budget = _Budget(MAX_FILL_FIELDS)
    spec, seen, _ = _resolve(schema, schema, frozenset({"#"}), budget)  # "#" is the schema itself: already inside it
    return _fill(spec, schema, facts, prose, "", seen, 0, budget)


def _fill(schema: dict, root: dict, facts: dict[str, object], prose: str, path: str, seen: frozenset,
          depth: int, budget: _Budget) -> Filled:
    """`fill` at `path` (dotted, "" at the top), `depth` objects down; `seen` holds the $refs followed so far."""
    properties = schema.get("properties")
    if not isinstance(properties, dict) or not properties:
        branches = _object_branches(schema, root, seen, budget)
        if branches:  # one of several shapes (lesson 23's JSON step: a tool call, or {"final_answer": ...})
            tried = [_fill(spec, root, facts, prose, path, inner_seen, depth, budget)
                     for spec, inner_seen in branches]
            return next((one for one in tried if not one.missing), min(tried, key=lambda one: len(one.missing)))
        return Filled({**facts, "answer": prose}, [])  # any object: what is known, and the answer
    required = set(schema.get("required") or ())
    value: dict = {}
    missing: list[str] = []
    for name, raw in properties.items():
        where = f"{path}{name}"
        if raw is False:  # no value may stand here
            missing += [where] if name in required else []
            continue
        spec, inner_seen, repeated = _resolve(raw if isinstance(raw, dict) else {}, root, seen, budget)
        budget.spend(1 + len(spec.get("anyOf", ())) + len(spec.get("oneOf", ())))  # what _types reads of it
        nested = not repeated and depth < MAX_FILL_DEPTH
        found: object = None
        if nested and "object" in _types(spec) and isinstance(spec.get("properties"), dict):
            inner = _fill(spec, root, facts, prose, where + ".", inner_seen, depth + 1, budget)
            found, missing = (inner.value, [*missing, *inner.missing]) if inner.value else (None, missing)
        elif _norm(name) in PROSE_FIELDS and not _types(spec) - {"string", "null", "any"}:
            found = prose or None
        else:  # a repeat, or past MAX_FILL_DEPTH, looks no deeper: an object is then one it cannot know
            fact = _fact_for(name, facts)
            found = None if fact is None else _as_type(fact, spec)
        if found is not None:
            value[name] = found
        elif "null" in _types(spec):
            value[name] = None
        elif name in required:
            missing.append(where)
    return Filled(value, missing)


def _object_branches(schema: dict, root: dict, seen: frozenset, budget: _Budget) -> list[tuple[dict, frozenset]]:
    """The anyOf / oneOf branches of `schema` that are objects with properties, each resolved, in order (a branch
    that is any object at all would take every answer from the shaped ones after it)."""
    branches = []
    for option in (*schema.get("anyOf", ()), *schema.get("oneOf", ())):
        budget.spend()
        spec, inner_seen, repeated = _resolve(option if isinstance(option, dict) else {}, root, seen, budget)
        if not repeated and "object" in (_types(spec) or {"object"}) and isinstance(spec.get("properties"), dict) \
                and spec["properties"]:
            branches.append((spec, inner_seen))
    return branches


def _resolve(spec: dict, root: dict, seen: frozenset, budget: _Budget) -> tuple[dict, frozenset, bool]:
    """`spec` with its `$ref` replaced by what it points to (pydantic writes nested models as `#/$defs/Name`),
    the $refs followed so far, and True when this one was followed already on the way here (a loop)."""
    repeated = False
    while isinstance(spec.get("$ref"), str) and not repeated:
        budget.spend()
        ref = spec["$ref"]
        repeated = ref in seen
        seen = seen | {ref}
        target = _pointer(root, ref)
        spec = {**(target if isinstance(target, dict) else {}), **{k: v for k, v in spec.items() if k != "$ref"}}
    return spec, seen, repeated


# -- schemas it cannot fill ------------------------------------------------------------------------------------
MAX_SCHEMA_DEPTH = 64  # the server's own limit on a body's nesting (server.MAX_JSON_DEPTH); nothing real nests so
# How many objects deep `fill` goes. $refs to ever new definitions can lead deeper than the schema's own nesting
# (D0 holds a D1, which holds a D2, ...); a field past this depth is one it cannot know. No real answer nests so.
MAX_FILL_DEPTH = 32
# How many fields (properties, branches, $refs followed) `fill` may look at for one answer. $refs can name one
# definition several times, so what a small schema expands to can double at each level (each definition holding
# two of the next: 4 KB of JSON, 2^32 fields); check_schema refuses a schema that would pass this. Real answers
# have tens of fields.
MAX_FILL_FIELDS = 10_000
LIST_KEYWORDS = ("anyOf", "oneOf", "allOf")


def check_schema(schema: object, what: str = "The json_schema") -> None:
    """Raise a one-line ValueError (the server answers 400) when the classroom model cannot fill `schema`: a
    keyword it reads that has the wrong type, a `$ref` it cannot follow, nesting deeper than MAX_SCHEMA_DEPTH,
    no finite JSON value that fits (`$ref`s that loop with no way out), or a fill that would look at more than
    MAX_FILL_FIELDS fields. `what` names the schema."""
    refs = _check_shape(schema, what)
    stuck = _without_finite_value(schema, refs)
    if stuck is not None:
        loop = f" (its $refs {', '.join(sorted(stuck)[:3])} loop with no way out)" if stuck else ""
        raise ValueError(f"{what}: no finite JSON value fits it{loop}, so the classroom model cannot fill it.")
    if isinstance(schema, dict):
        try:  # a fill looks at the same fields whatever the facts: this one, with none, costs what a real one would
            fill(schema, {}, "")
        except TooManyFields as exc:
            raise ValueError(f"{what}: {exc} (its $refs name the same definitions over and over); the classroom "
                             "model fills no answer that large.") from None


def _check_shape(schema: object, what: str) -> set[str]:
    """Each keyword `fill` and `_without_finite_value` read, checked for its type: the set of $refs, all followable.
    The walk keeps its own stack, so no depth of nesting can crash it."""
    refs: set[str] = set()
    stack: list[tuple[object, str, int]] = [(schema, "", 1)]
    while stack:
        node, path, depth = stack.pop()
        if isinstance(node, bool):
            continue
        if not isinstance(node, dict):
            raise _refused(what, f"a schema must be an object, got {_short(node)}", path)
        if depth > MAX_SCHEMA_DEPTH:
            raise _refused(what, f"nests more than {MAX_SCHEMA_DEPTH} levels deep", path)
        kind, required, low = node.get("type"), node.get("required"), node.get("minItems")
        checks = [("type", "a type name or a list of them",
                   isinstance(kind, str) or isinstance(kind, list) and all(isinstance(k, str) for k in kind)),
                  ("required", "a list of property names",
                   isinstance(required, list) and all(isinstance(r, str) for r in required)),
                  ("enum", "a list of values", isinstance(node.get("enum"), list)),
                  ("minItems", "a whole number, 0 or more",
                   isinstance(low, int) and not isinstance(low, bool) and low >= 0),
                  ("$ref", "a string such as '#/$defs/Name'", isinstance(node.get("$ref"), str)),
                  *((key, "an object of schemas", isinstance(node.get(key), dict))
                    for key in ("properties", "$defs", "definitions")),
                  *((key, "a non-empty list of schemas", isinstance(node.get(key), list) and bool(node.get(key)))
                    for key in LIST_KEYWORDS)]
        for key, wants, ok in checks:
            if key in node and not ok:
                raise _refused(what, f"'{key}' must be {wants}, got {_short(node[key])}", path)
        for key in ("properties", "$defs", "definitions"):
            stack.extend((sub, f"{path}.{key}.{name}", depth + 1) for name, sub in node.get(key, {}).items())
        for key in LIST_KEYWORDS:
            stack.extend((sub, f"{path}.{key}[{i}]", depth + 1) for i, sub in enumerate(node.get(key, ())))
        items = node.get("items", True)
        if isinstance(items, list):  # the older tuple form: one schema per position
            stack.extend((sub, f"{path}.items[{i}]", depth + 1) for i, sub in enumerate(items))
        else:
            stack.append((items, f"{path}.items", depth + 1))
        if "$ref" in node:
            try:
                target = _pointer(schema, node["$ref"])
            except LookupError as exc:
                raise _refused(what, str(exc), path) from None
            if not isinstance(target, (dict, bool)):
                raise _refused(what, f"$ref {node['$ref']!r} points to {_short(target)}, not a schema", path)
            if node["$ref"] not in refs:  # a target outside properties, $defs, ... is checked too, once
                refs.add(node["$ref"])
                stack.append((target, node["$ref"], 1))
    return refs


def _refused(what: str, why: str, path: str) -> ValueError:
    """The one line a 400 says: which schema, what is wrong, and where in it."""
    return ValueError(f"{what}: {why}" + (f" (at {path.lstrip('.')})" if path else "") + ".")


def _pointer(root: object, ref: str) -> object:
    """What `ref` points to inside `root`: "#" is the schema itself, "#/$defs/Name" a JSON Pointer into it.
    A LookupError says why not (a ref to another document, or to nothing)."""
    if ref != "#" and not ref.startswith("#/"):
        raise LookupError(f"$ref {ref!r} is not inside the schema: the classroom model follows '#' and '#/...' only")
    node = root
    for part in ref[2:].split("/") if ref != "#" else ():
        key = unquote(part).replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isascii() and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            raise LookupError(f"$ref {ref!r} points to nothing in the schema")
    return node


def _without_finite_value(schema: object, refs: set[str]) -> set[str] | None:
    """None when some finite JSON value fits `schema` (as far as the keywords `fill` reads say), else the $refs
    the schema asks about that have none.

    Which $refs have a finite value is found from the bottom up: none at first; a ref has one once its target
    has one given what is known so far; each time a ref is found to have one, the targets that asked about it
    are looked at again. What is left without one after that has none (its only values contain themselves).
    """
    known = dict.fromkeys(refs, False)
    asked_by: dict[str, set[str]] = {ref: set() for ref in refs}
    waiting = list(refs)
    while waiting:
        ref = waiting.pop()
        if known[ref]:
            continue
        asked: set[str] = set()
        if _value_exists(_pointer(schema, ref), known, asked):
            known[ref] = True
            waiting.extend(user for user in asked_by[ref] if not known[user])
        for other in asked:
            asked_by[other].add(ref)
    return None if _value_exists(schema, known, set()) else {ref for ref in refs if not known[ref]}


def _value_exists(node: object, known: dict[str, bool], asked: set[str]) -> bool:
    """Whether a finite value fits `node`, taking each $ref's answer from `known` (and noting it in `asked`)."""
    if isinstance(node, bool):
        return node
    if not isinstance(node, dict):
        return True
    if "$ref" in node:
        asked.add(node["$ref"])
        if not known[node["$ref"]]:
            return False
    if "const" in node:
        return True
    if "enum" in node:
        return bool(node["enum"])
    for key in ("anyOf", "oneOf"):
        if key in node and not any(_value_exists(sub, known, asked) for sub in node[key]):
            return False
    if "allOf" in node and not all(_value_exists(sub, known, asked) for sub in node["allOf"]):
        return False
    kind = node.get("type")
    kinds = set(kind) if isinstance(kind, list) else {kind} if isinstance(kind, str) else None
    if kinds is None or kinds - {"object", "array"}:  # any value, or a scalar type: "" or 0 or null fits
        return True
    if "array" in kinds:
        items = node.get("items", True)
        if node.get("minItems", 0) == 0 or isinstance(items, list) or _value_exists(items, known, asked):
            return True
    if "object" in kinds:
        properties = node.get("properties") or {}
        return all(_value_exists(properties[name], known, asked) for name in node.get("required") or ()
                   if name in properties)
    return False


def _short(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:39] + "…"


def strict_tools(request: dict) -> frozenset[str]:
    """The names of the request's tools marked `"strict": true`: a call to one must hold every required field."""
    tools = request.get("tools") if isinstance(request.get("tools"), list) else []
    functions = [tool.get("function") for tool in tools if isinstance(tool, dict)]
    return frozenset(function["name"] for function in functions
                     if isinstance(function, dict) and function.get("strict") is True)


def cannot_fill(missing: list[str], zh: bool) -> str:
    fields = ", ".join(missing)
    if zh:
        return f"我填不了这些必填字段：{fields}。对话里没有它们的值，我不会编造。"
    return f"I cannot fill the required field(s) {fields}: nothing in the conversation says what they are, and I do not make them up."
