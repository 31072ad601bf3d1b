"""Constrained decoding (lesson 23): grammars and JSON Schemas built from the registry, sent with each step.

llama.cpp's server takes a `grammar` (GBNF, see gbnf.py) or a JSON Schema (`response_format`) with a request
and samples only tokens that keep the reply inside it; vLLM takes both too, OpenAI's structured outputs take a
JSON Schema. So the reply has the ReAct shape by construction. What the model still chooses is everything the
grammar leaves open, and this module says how much that is.

    schema_rules(schema)          GBNF for a JSON value that fits a tool's JSON Schema (lesson 07)
    input_grammar(tool)           a tool's Action Input: its one string, or its JSON arguments
    StepChoices                   what may come next: the tools, each id property's values, a Final Answer
    allowed_steps(messages, tools) those choices read from the conversation so far (never from the answer)
    step_grammar(choices, tools)  the choices as GBNF: Thought, then an Action and its input, or a Final Answer
    step_schema(choices, tools)   the same as a JSON Schema: {"tool", "arguments"} or {"final_answer"}
    ConstrainedSend               the loop's send part: rebuilds the grammar (or schema) every step
    JsonStepRead                  the read part for a JSON step

What the conversation narrows (`allowed_steps` with narrow=True), and nothing more:

- an id property (its schema's example is one word with a digit, like 88231 or SF1234567890) takes only values
  of the same shape that the customer wrote or an Observation showed, so an id is copied, never invented;
- no call is repeated: an id already used with a tool is not offered to it again, and a tool whose input is
  free words (searchKnowledge) or nothing (getCurrentTime) is offered once;
- a Final Answer only after at least one Observation (or when no call is left);
- with a `tool_filter` (lesson 13's ToolFilter), only the tools it offers for the question.

Whatever text a grammar of this module allows, lesson 05's parser reads as the step the grammar took: its lines
hold no line break the parser splits at, and its Thought and inputs no "Final Answer:" (see LINE_BREAKS).

The grammar never holds an answer: no fact, no tool result, no wording of the Final Answer. But when it leaves
one action only, that step was chosen by the program, not the model; `StepChoices.forced` says so, and the
send part keeps a log of it, so a measurement can report the share of such steps beside its pass count.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Generator, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from tinyagent.events import Event
from tinyagent.llm_client import ChatResult
from tinyagent.loop_parts import WholeConversation, text_reading
from tinyagent.parser import FINAL_ANSWER, ParsedStep, parse_step
from tinyagent.protocols.compliance import example_turns
from tinyagent.protocols.gbnf import MAX_REPETITIONS, GrammarError, char_class, literal, rule_name
from tinyagent.protocols.tool_rendering import input_from_arguments, parameters_of
from tinyagent.toolkit.action_input import read_arguments
from tinyagent.tools import Action, Tool

THOUGHT_CHARS = 160
ANSWER_CHARS = 300
FREE_TEXT_CHARS = 80  # a query or a reason: a short line
MAX_GRAMMAR_CHARS = 200_000  # a step's grammar past this is refused: the server reads it again at every step
MAX_SCHEMA_DEPTH = 32  # schemas inside schemas (objects, lists, anyOf): deeper is refused, not followed
JSON_TYPES = ("string", "integer", "number", "boolean", "null", "array", "object")
EMPTY = '""'  # GBNF's empty literal: a rule that writes nothing
_ID_EXAMPLE = re.compile(r"[A-Za-z]*\d[A-Za-z0-9]*")

# What a text the model writes may not hold, so that a reply the grammar allows reads as the step it chose. Lesson
# 05's parser ends a line wherever str.splitlines() does (at these characters), and a new line may start with
# "Action:" or "Observation:". And it reads "Final Answer:" anywhere in a reply as the answer, so in a Thought, a
# query or a JSON string a colon comes only after a character other than "r" (or a colon): "Final Answer:" cannot
# be written, "19:05" and "https://" can (and a JSON string may still hold "r:", written "r\u003a"). A character and
# its colon count as one in a length bound, so a text with colons may run longer by as many; the tool's own check of
# its input still sees that. The Final Answer's own line may hold anything: the reply ends with it.
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"

# The pieces a grammar may use, written once at its end when it does: one character of a line or of free text,
# and JSON's own, as the JSON grammars of llama.cpp's examples write them (json-char kept to the rules above).
BASICS = {
    "line-char": char_class(LINE_BREAKS, negate=True),
    "text-char": f'{char_class(LINE_BREAKS + ":", negate=True)} | {char_class(LINE_BREAKS + ":r", negate=True)} ":"',
    # the same, but not a space: the parser strips the spaces around an Action Input, so one written first is lost
    "text-start": f'{char_class(LINE_BREAKS + ": ", negate=True)} | {char_class(LINE_BREAKS + ": r", negate=True)} ":"',
    "ws": '[ ]?',
    "json-char": '[^"\\\\\\x00-\\x1F\\x7F\\x85\\u2028\\u2029:] | [^"\\\\\\x00-\\x1F\\x7F\\x85\\u2028\\u2029:r] ":" | '
                 '"\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4})',
    "json-string": '"\\"" json-char* "\\""',
    "json-integer": '"-"? ("0" | [1-9] [0-9]{0,15})',
    "json-number": 'json-integer ("." [0-9]+)? ([eE] [-+]? [0-9]+)?',
    "json-boolean": '"true" | "false"',
    "json-null": '"null"',
}


# -- a JSON Schema as GBNF -------------------------------------------------------------------------------------
class RuleBook:
    """Rules being written: each gets a name of its own, and only the JSON basics it uses come along."""

    def __init__(self) -> None:
        self.rules: dict[str, str] = {}
        self.size = 0  # the characters of the rules so far (MAX_GRAMMAR_CHARS)

    def add(self, name: str, body: str) -> str:
        """Add a rule named after `name` (made a valid name by gbnf.rule_name, whatever a tool is called) and
        return its name: the same name for the same rule, a numbered one (`-2`, `-3`) when another rule has the
        name already, and never a JSON basic's name (`text` writes those)."""
        name = rule_name(name)
        unique, n = name, 1
        while (unique in self.rules and self.rules[unique] != body) or unique in BASICS:
            n += 1
            unique = f"{name}-{n}"
        if unique not in self.rules:
            self.size += len(unique) + len(body)
            if self.size > MAX_GRAMMAR_CHARS:
                raise GrammarError(f"{name}: the grammar grows past {MAX_GRAMMAR_CHARS:,} characters here (a schema "
                                   "this big would cost the server its time at every step)")
        self.rules[unique] = body
        return unique

    def text(self, root: str = "root") -> str:
        """The grammar, `root` first, then the rules in the order they were added, then the basics used."""
        names = [root] + [n for n in self.rules if n != root]
        lines = [f"{n} ::= {self.rules[n]}" for n in names]
        used = " ".join(self.rules.values())
        needed = [n for n in BASICS if re.search(rf"(?<![\w-]){n}(?![\w-])", used)]
        # json-number needs json-integer, json-string needs json-char: close over what the basics use
        for name in list(needed):
            for other in BASICS:
                if other not in needed and re.search(rf"(?<![\w-]){other}(?![\w-])", BASICS[name]):
                    needed.append(other)
        lines += [f"{n} ::= {BASICS[n]}" for n in BASICS if n in needed]
        return "\n".join(lines) + "\n"


def json_literal(value: Any, name: str = "value") -> str:
    r"""A JSON value written as the GBNF literal of its compact JSON text; a GrammarError for what is no JSON value
    (NaN, Infinity, a set). Inside its strings a line break and the colon of "Final Answer:" are written as
    escapes (\u2028, \u003a): the same value, and no text the parser would split or read as an answer."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise GrammarError(f"{name}: {repr(value)[:40]} is no JSON value ({exc})") from None
    for ch in "\x85\u2028\u2029":  # json.dumps escapes the other line breaks (control characters) already
        text = text.replace(ch, f"\\u{ord(ch):04x}")
    return literal(text.replace(FINAL_ANSWER, FINAL_ANSWER[:-1] + "\\u003a"))


def schema_rules(schema: Mapping[str, Any], book: RuleBook | None = None, name: str = "value",
                 values: Mapping[str, Iterable[str]] | None = None, depth: int = 0) -> str:
    """The GBNF expression for a JSON value that fits `schema`; its rules go into `book`.

    What it writes for each keyword: `type` (one or a list), `enum` and `const` (the JSON literals),
    `properties` + `required` (the keys in the schema's order, optional ones may be left out; no others, with
    `additionalProperties` false, absent or `{}`), `items` with `minItems`/`maxItems`, `minLength`/`maxLength`,
    `anyOf`/`oneOf` (alternatives). `values` maps a property name to the only strings it may take (how the
    conversation narrows an id). Not expressible here, and refused with a GrammarError: `pattern`, `minimum`,
    `maximum`, `uniqueItems`, `$ref`, an object whose other keys `additionalProperties` allows, a count past
    llama.cpp's limit (MAX_REPETITIONS), a schema nested deeper than MAX_SCHEMA_DEPTH and a grammar bigger than
    MAX_GRAMMAR_CHARS. Any other keyword (`format`, `multipleOf`, `minProperties`, `allOf`, ...) is left out: the
    grammar does not enforce it, and only the tool's own check of its input (if it has one) sees it.
    """
    if not isinstance(schema, Mapping):  # JSON Schema's true and false are schemas too, which this does not write
        raise GrammarError(f"{name}: a schema must be a JSON object here, got {repr(schema)[:40]}")
    if depth > MAX_SCHEMA_DEPTH:
        raise GrammarError(f"{name}: schemas nested more than {MAX_SCHEMA_DEPTH} deep are not written here")
    book = RuleBook() if book is None else book
    values = values or {}
    _refuse_inexpressible(schema, name)
    if "const" in schema:
        return json_literal(schema["const"], name)
    if "enum" in schema:
        if not isinstance(schema["enum"], list) or not schema["enum"]:
            raise GrammarError(f"{name}: enum must be a non-empty list of values; an empty one lets no value fit")
        return "(" + " | ".join(json_literal(v, name) for v in schema["enum"]) + ")"
    for key in ("anyOf", "oneOf"):
        if key in schema:
            if not isinstance(schema[key], list) or not schema[key]:
                raise GrammarError(f"{name}: {key} must be a non-empty list of schemas; an empty one lets no value fit")
            options = [schema_rules(option, book, f"{name}-{i}", values, depth + 1)
                       for i, option in enumerate(schema[key])]
            return book.add(name, " | ".join(options))
    kind = schema.get("type")
    if isinstance(kind, list):
        if not kind or not all(isinstance(k, str) and k in JSON_TYPES for k in kind):
            raise GrammarError(f"{name}: a list of types must hold one or more of {', '.join(JSON_TYPES)}; "
                               f"got {repr(kind)[:60]}")
        # Each type once, and each writes only its own keywords: the rest of the schema is not written twice.
        kinds = list(dict.fromkeys(kind))
        if len(kinds) == 1:
            return schema_rules({**schema, "type": kinds[0]}, book, name, values, depth)
        options = [schema_rules({**schema, "type": k}, book, f"{name}-{k}", values, depth) for k in kinds]
        return book.add(name, " | ".join(options))
    if kind is not None and kind not in JSON_TYPES:
        raise GrammarError(f"{name}: unknown type {repr(kind)[:40]}; the types are {', '.join(JSON_TYPES)}")
    if kind == "string":
        low, high = _bounds(schema, "minLength", "maxLength", name)
        if low == 0 and high is None:
            return "json-string"
        return book.add(name, f'"\\"" json-char{{{low},{"" if high is None else high}}} "\\""')
    if kind in ("integer", "number", "boolean", "null"):
        return f"json-{kind}"
    if kind == "array":
        return _array_rule(schema, book, name, values, depth)
    if kind == "object" or "properties" in schema:
        return _object_rule(schema, book, name, values, depth)
    if "$ref" in schema:
        raise GrammarError(f"{name}: $ref (a definition kept elsewhere in the schema) is not written here; give the "
                           "definition in its place")
    raise GrammarError(f"{name}: a schema without a type allows any JSON value; give it a type")


def _refuse_inexpressible(schema: Mapping[str, Any], name: str) -> None:
    for keyword in ("pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "uniqueItems"):
        if keyword in schema:
            raise GrammarError(f"{name}: the grammar cannot express {keyword!r}; check it after the reply instead")


def _bounds(schema: Mapping[str, Any], low_key: str, high_key: str, name: str) -> tuple[int, int | None]:
    """(least, most) of a length or a count: whole numbers, 0 or more, the least no more than the most (None: no
    most), below llama.cpp's MAX_REPETITIONS; a GrammarError for any other pair, which would make a grammar
    llama.cpp refuses or one that allows too much ({3,2}, {-1,}, Infinity, {0,5000})."""
    low, high = schema.get(low_key, 0), schema.get(high_key)
    whole = [isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (low, 0 if high is None else high)]
    if not all(whole) or (high is not None and high < low):
        raise GrammarError(f"{name}: {low_key} {low!r} and {high_key} {high!r} must be whole numbers from 0, the "
                           "first no more than the second")
    if max(low, high or 0) >= MAX_REPETITIONS:
        raise GrammarError(f"{name}: {low_key} {low!r} and {high_key} {high!r} must be below {MAX_REPETITIONS}, "
                           "the most repeats llama.cpp takes in a grammar")
    return low, high


def _array_rule(schema: Mapping[str, Any], book: RuleBook, name: str, values: Mapping[str, Iterable[str]],
                depth: int) -> str:
    if not isinstance(schema.get("items", {}), Mapping):
        raise GrammarError(f"{name}: items must be one schema; the older list form (a schema per place) is not "
                           "expressible here")
    item = schema_rules(schema.get("items", {}), book, f"{name}-item", values, depth + 1)
    low, high = _bounds(schema, "minItems", "maxItems", name)
    more = f'(ws "," ws {item}){{{max(low - 1, 0)},{"" if high is None else max(high - 1, 0)}}}'
    body = f'"[" ws {item} {more} ws "]"'
    if low == 0:
        body = f'"[" ws "]" | {body}'
    if high == 0:
        body = '"[" ws "]"'
    return book.add(name, body)


def _object_rule(schema: Mapping[str, Any], book: RuleBook, name: str, values: Mapping[str, Iterable[str]],
                 depth: int = 0) -> str:
    extra = schema.get("additionalProperties", False)
    if extra not in (False, None) and extra != {}:  # with properties or without: other keys cannot be written
        raise GrammarError(f"{name}: the grammar writes only the keys the schema names; set additionalProperties "
                           "to false")
    properties = properties_in(schema, name)
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(key, str) for key in required):
        raise GrammarError(f"{name}: required must be a list of property names, got {repr(required)[:40]}")
    pieces = []
    for key, sub in properties.items():
        if key in values:
            choices = list(dict.fromkeys(values[key]))
            if not choices:
                raise GrammarError(f"{name}.{key}: no value is left for it")
            value = "(" + " | ".join(json_literal(v, name) for v in choices) + ")"
        else:
            value = schema_rules(sub, book, f"{name}-{key}", values, depth + 1)
        pieces.append((f'{json_literal(key, name)} ws ":" ws {value}', key in required))

    if all(needed for _, needed in pieces):  # every key, in the schema's order
        body = " ws \",\" ws ".join(piece for piece, _ in pieces)
        return book.add(name, f'"{{" ws {body} ws "}}"'.replace("  ", " "))
    # With optional keys: the keys in the schema's order, a comma before every key but the first one written. A
    # rule per place, so the grammar grows with the keys, not with their square: NAME-rest-i, the keys from i on
    # after one was written; NAME-start-i, the same with none written yet.
    rest = start = ""
    for i in reversed(range(len(pieces))):
        piece, needed = pieces[i]
        first = f"{piece} {rest}".strip()
        start = book.add(f"{name}-start-{i}", first if needed else f'{first} | {start or EMPTY}')
        rest = book.add(f"{name}-rest-{i}", f'ws "," ws {first}' if needed else f'(ws "," ws {piece})? {rest}'.strip())
    return book.add(name, f'"{{" ws {start} ws "}}"')


def properties_in(schema: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """A schema's `properties` ({} when it has none); a GrammarError when they are no JSON object of schemas."""
    properties = schema.get("properties") or {}
    if not isinstance(properties, Mapping) or not all(isinstance(key, str) for key in properties):
        raise GrammarError(f"{name}: properties must be a JSON object (a schema per key), got {repr(properties)[:40]}")
    return properties


def schema_grammar(schema: Mapping[str, Any], values: Mapping[str, Iterable[str]] | None = None) -> str:
    """A whole grammar whose root is a JSON value that fits `schema` (see `schema_rules`)."""
    book = RuleBook()
    book.add("root", schema_rules(schema, book, "value", values))
    return book.text()


# -- a tool's Action Input ---------------------------------------------------------------------------------------
def single_string(tool: Tool) -> str | None:
    """The name of the tool's only parameter when it is a string (the tool then takes that string as its
    Action Input, as the shop's queryOrder takes 88231), else None."""
    schema = parameters_of(tool) or {}
    properties = schema.get("properties") or {}
    if isinstance(properties, Mapping) and len(properties) == 1:  # (a malformed schema has no single string)
        [(key, sub)] = properties.items()
        if isinstance(sub, Mapping) and sub.get("type") == "string" and not {"enum", "const"} & set(sub):
            return key
    return None


def id_property(schema: Mapping[str, Any]) -> bool:
    """A property holds an id when its example is one word with a digit in it (88231, SF1234567890)."""
    if not isinstance(schema, Mapping) or not isinstance(schema.get("examples"), list) or not schema["examples"]:
        return False  # no examples, or a malformed schema (true, examples: 5): no id
    return schema.get("type") == "string" and bool(_ID_EXAMPLE.fullmatch(str(schema["examples"][0])))


def id_shape(example: str) -> re.Pattern:
    """Words shaped like `example`: its letters as letters, its digits as digits, as many of each. A word ends at
    anything that is not a Latin letter or a digit, but digits beside a decimal point belong to a number, not an id:
    ¥12345.67 holds none, while the full stop that ends "order 88231." ends the id."""
    pattern = "".join("[A-Z]" if ch.isalpha() else "[0-9]" if ch.isdigit() else re.escape(ch) for ch in example.upper())
    return re.compile(rf"(?<![A-Za-z0-9])(?<![0-9][.])({pattern})(?![A-Za-z0-9])(?![.][0-9])", re.IGNORECASE)


def ids_in(text: str, example: str) -> list[str]:
    """The words of `text` shaped like `example` (id_shape), upper-cased, each once, in the order they first appear.
    The text is read NFKC-normalised, so an id typed in full-width characters (８８２３１, as a Chinese keyboard in
    full-width mode writes it) is the id it looks like, the one the tools know."""
    found = id_shape(example).finditer(unicodedata.normalize("NFKC", text))
    return list(dict.fromkeys(match.group(1).upper() for match in found))


def input_rules(tool: Tool, book: RuleBook, values: Mapping[str, Iterable[str]] | None = None,
                free_chars: int = FREE_TEXT_CHARS, lead: str = " ") -> str:
    """The GBNF for the text after "Action Input:": `lead` (a space) and the input, when there is one.

    A tool with no `parameters` takes a line of at most `free_chars`; one whose schema has no properties takes
    nothing; a tool with one string parameter takes the
    string itself (its `values` when given, else a line of at most `free_chars`); any other takes its arguments
    as one line of JSON that fits its schema.
    """
    schema = parameters_of(tool)
    space = literal(lead) + " " if lead else ""
    if schema is None:
        return book.add(f"{tool.name}-input", f"{space}text-char{{1,{free_chars}}}")
    properties = properties_in(schema, tool.name)
    if not properties:
        return EMPTY
    key = single_string(tool)
    values = values or {}
    if key is not None:
        if key in values:
            return book.add(f"{tool.name}-input", " | ".join(literal(lead + v) for v in dict.fromkeys(values[key])))
        # The string as written, on one line: what the schema says of it holds here as in JSON (its length, and
        # a ValueError for what a grammar cannot say), not only in the JSON form of the same schema.
        _refuse_inexpressible(properties[key], f"{tool.name}-{key}")
        low, high = _bounds(properties[key], "minLength", "maxLength", f"{tool.name}-{key}")
        high = max(low, free_chars) if high is None else high  # a line has an end
        if high == 0:
            return EMPTY
        return book.add(f"{tool.name}-input", f"{space}text-start text-char{{{max(low - 1, 0)},{high - 1}}}")
    bounded = {key: _capped_string(sub, free_chars) for key, sub in properties.items()}
    return book.add(f"{tool.name}-input", space + schema_rules({**schema, "properties": bounded}, book,
                                                               f"{tool.name}-args", values))


def _capped_string(schema: Any, chars: int) -> Any:
    """A string property's schema with a maxLength (`chars` when it gives none), so that its value is one short line;
    any other schema as it is."""
    if isinstance(schema, Mapping) and schema.get("type") == "string":
        return {**schema, "maxLength": schema.get("maxLength", chars)}
    return schema


def input_grammar(tool: Tool, values: Mapping[str, Iterable[str]] | None = None) -> str:
    """A whole grammar for one tool's Action Input alone (no leading space), for a test or a look."""
    book = RuleBook()
    book.add("root", "")
    book.rules["root"] = input_rules(tool, book, values, lead="")
    return book.text()


# -- what may come next -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StepChoices:
    """What a step may do.

    tools:   the tool names that may be called, in the registry's order
    values:  per tool, the values each of its id properties may take (absent: any value of its type)
    final:   whether a Final Answer may come instead
    """

    tools: tuple[str, ...]
    values: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)
    final: bool = True

    def actions(self) -> int:
        """How many actions are open: a tool with its ids counted once per combination of ids (the words of a
        query or a reason are the model's and do not count), an unbounded id as many."""
        total = 0
        for name in self.tools:
            n = 1
            for options in self.values.get(name, {}).values():
                n *= len(options)
            total += n
        return total

    @property
    def forced(self) -> bool:
        """True when the grammar leaves one thing to do: one action and no answer, or the answer alone."""
        return self.actions() + self.final == 1


def _own_part(messages: list[dict]) -> tuple[str, list[dict]]:
    """The customer's question and what followed it (a worked example before it is not this conversation)."""
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        content = str(message.get("content") or "")
        if message.get("role") == "user" and not content.startswith("Observation:"):
            return content, messages[i + 1:]
    return "", []


def _calls_made(after: list[dict], tools: Any) -> list[Action]:
    calls = []
    for message in after:
        if message.get("role") != "assistant":
            continue
        step = read_step(str(message.get("content") or ""), tools)
        if step.action is not None:
            calls.append(step.action)
    return calls


def allowed_steps(messages: list[dict], tools: Any, *, narrow: bool = True, tool_filter: Any = None,
                  final_after_observation: bool = True) -> StepChoices:
    """What the next step may do, read from the conversation (see the module's docstring).

    narrow=False gives only what the ids seen allow (each tool whose id properties have a value seen, those values,
    a Final Answer at any time); narrow=True
    adds the rest: no repeated call, a Final Answer only after an Observation, and the `tool_filter`'s tools.
    """
    question, after = _own_part(messages)
    seen_text = question + "\n" + "\n".join(str(m.get("content") or "") for m in after if m.get("role") == "user")
    offered = list(tools.names)
    calls = _calls_made(after, tools) if narrow else []
    if narrow and tool_filter is not None:
        offered = list(tool_filter.select(question, tools, [c.tool_name for c in calls]).offered)
    values: dict[str, dict[str, tuple[str, ...]]] = {}
    open_tools = []
    for name in offered:
        tool = tools.get(name)
        properties = properties_in(parameters_of(tool) or {}, f"tool {name}")
        mine = [c for c in calls if c.tool_name == name]
        ids = {key: sub for key, sub in properties.items() if id_property(sub)}
        if narrow and mine and not ids:
            continue  # a query, or no input at all: once is enough
        tool_values = {}
        for key, sub in ids.items():
            found = ids_in(seen_text, str(sub["examples"][0]))
            used = {_argument(c, tool, key) for c in mine}
            tool_values[key] = tuple(v for v in found if v not in used)
        if any(not options for options in tool_values.values()):
            continue  # an id it needs has not been seen (or every one was used)
        values[name] = tool_values
        open_tools.append(name)
    observed = any(str(m.get("content") or "").startswith("Observation:") for m in after)
    final = not narrow or not final_after_observation or observed or not open_tools
    return StepChoices(tuple(open_tools), values, final)


def _argument(call: Action, tool: Tool, key: str) -> str:
    """The value of `key` in a call's input: the text itself for a one-string tool, else from its JSON."""
    text = call.tool_input.strip()
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        data = None
    if isinstance(data, dict):
        return str(data.get(key, "")).upper()
    return text.upper() if single_string(tool) == key else ""


def step_grammar(choices: StepChoices, tools: Any, *, ids: bool = True, thought_chars: int = THOUGHT_CHARS,
                 answer_chars: int = ANSWER_CHARS) -> str:
    """The choices as a GBNF grammar for one text ReAct step:

        Thought: <one line>
        Action: <a tool offered>
        Action Input: <what that tool's schema allows, its ids from the choices>
    or
        Thought: <one line>
        Final Answer: <one line>

    A line holds no line break of str.splitlines(), and the Thought and the inputs no "Final Answer:" (see
    LINE_BREAKS), so whatever the grammar allows, lesson 05's parser reads as the branch it took. ids=False writes
    each tool's input as a free line (the format alone, not the inputs). A GrammarError names the tool whose
    schema cannot be written."""
    for what, chars in (("thought_chars", thought_chars), ("answer_chars", answer_chars)):
        if not 0 < chars < MAX_REPETITIONS:
            raise GrammarError(f"{what} must be from 1 to {MAX_REPETITIONS - 1} (llama.cpp's limit), got {chars}")
    book = RuleBook()
    book.add("root", "")
    book.add("thought", f'"Thought: " text-char{{1,{thought_chars}}} "\\n"')
    branches = []
    for name in choices.tools:
        tool = tools.get(name)
        try:
            if ids:
                value = input_rules(tool, book, choices.values.get(name, {}))
            else:
                value = book.add(f"{name}-input", f'(" " text-char{{1,{FREE_TEXT_CHARS}}})?')
            header = literal(f"Action: {name}\nAction Input:")
            branches.append(book.add(f"call-{name}", f"{header} {value}"))
        except GrammarError as exc:
            raise GrammarError(f"tool {name}: {exc}") from None
    if choices.final:
        branches.append(book.add("answer", f'"Final Answer: " line-char{{1,{answer_chars}}}'))
    book.rules["root"] = "thought (" + " | ".join(branches) + ")"
    return book.text()


def step_schema(choices: StepChoices, tools: Any, *, answer_chars: int = ANSWER_CHARS) -> dict:
    """The choices as a JSON Schema: `{"tool": name, "arguments": {...}}` per tool offered (its ids as an
    enum), or `{"final_answer": "..."}`."""
    options = []
    for name in choices.tools:
        schema = dict(parameters_of(tools.get(name)) or {"type": "object", "properties": {}})
        id_values = choices.values.get(name, {})
        properties = {}
        for key, sub in properties_in(schema, f"tool {name}").items():
            if key in id_values:  # an id: only the values the conversation showed
                properties[key] = {**sub, "enum": list(id_values[key])}
            else:  # any other string is capped at one short line
                properties[key] = _capped_string(sub, FREE_TEXT_CHARS)
        arguments = {"type": "object", "properties": properties, "required": list(properties),
                     "additionalProperties": False}
        options.append({"type": "object", "properties": {"tool": {"const": name}, "arguments": arguments},
                        "required": ["tool", "arguments"], "additionalProperties": False})
    if choices.final:
        options.append({"type": "object",
                        "properties": {"final_answer": {"type": "string", "minLength": 1, "maxLength": answer_chars}},
                        "required": ["final_answer"], "additionalProperties": False})
    return {"anyOf": options}


# -- the loop's parts ---------------------------------------------------------------------------------------------
def read_step(text: str, tools: Any = None) -> ParsedStep:
    """A step written as text ReAct, or as the JSON of `step_schema`: whichever the text is."""
    stripped = text.strip()
    if not stripped.startswith("{"):
        return parse_step(text)
    try:
        data = json.loads(stripped)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than Python reads
        return ParsedStep("", None, None, "no_format")
    if isinstance(data, dict) and isinstance(data.get("final_answer"), str):
        return ParsedStep("", None, data["final_answer"], "final_answer")
    if isinstance(data, dict) and isinstance(data.get("tool"), str):
        tool = tools.get(data["tool"]) if tools is not None else None
        arguments = data.get("arguments") if isinstance(data.get("arguments"), dict) else {}
        key = single_string(tool) if tool is not None else None
        value = arguments[key] if key and set(arguments) == {key} else None
        if isinstance(value, str) and read_arguments(value, tool.parameters) == {key: value}:
            # A one-string tool takes its string as the Action Input (88231), when the tool reads it back as that
            # string: '{"text": "hi"}' as the text would be read as JSON, and "hi" sent.
            text_input = value
        elif tool is not None:
            # Any other value goes on as JSON, as a native call's does, so the tool's check says "text must be a
            # string ..., got null": str() made null the text "None", and sendWechat sent it.
            text_input = input_from_arguments(tool, arguments)
        else:
            text_input = json.dumps(arguments, ensure_ascii=False)
        return ParsedStep("", Action(data["tool"], text_input), None, "action")
    return ParsedStep("", None, None, "no_format")


class JsonStepRead:
    """How a reply is read when it is a step of `step_schema` (JSON), or text ReAct when it is not."""

    slot: ClassVar[str] = "read"
    protocol: ClassVar[str] = "text"  # a Thought / Action step, in lines or as JSON (loop_parts.py)

    def __call__(self, run: Any, step: int, reply: ChatResult):
        return text_reading(step, reply, self.parse(reply.text, reply.finish_reason, run.agent.tools), run.lang)

    def parse(self, text: str, finish_reason: str | None = None, tools: Any = None) -> ParsedStep:
        return read_step(text, tools)

    def __repr__(self) -> str:
        return "JsonStepRead()"


@dataclass(frozen=True)
class ConstrainedStep:
    """One constrained request, as the send part logged it: the step, what was allowed, what was sent."""

    step: int
    choices: StepChoices
    constraint: str | dict  # the grammar text, or the JSON Schema

    @property
    def forced(self) -> bool:
        return self.choices.forced


class ConstrainedSend:
    """How a step is sent: with a grammar (`grammar`, GBNF) or a JSON Schema (`response_format`) rebuilt from
    the conversation before every request.

    form:        "grammar" (text ReAct) or "json_schema" (the JSON step, read it with JsonStepRead)
    inputs:      False: the format only (any line as the input); True: each tool's input from its schema
    narrow:      False: ids from the conversation only; True: also no repeat, answer after an Observation,
                 and the `tool_filter`'s tools (see allowed_steps)
    log:         every request's ConstrainedStep, appended (across runs: the measurement's record)
    """

    slot: ClassVar[str] = "send"
    protocol: ClassVar[str] = "text"  # a Thought / Action step, in lines or as JSON (loop_parts.py)

    def __init__(self, form: str = "grammar", *, inputs: bool = True, narrow: bool = True, tool_filter: Any = None,
                 thought_chars: int = THOUGHT_CHARS, answer_chars: int = ANSWER_CHARS):
        if form not in ("grammar", "json_schema"):
            raise ValueError(f"form must be 'grammar' or 'json_schema', got {form!r}")
        self.form, self.inputs, self.narrow, self.tool_filter = form, inputs, narrow, tool_filter
        self.thought_chars, self.answer_chars = thought_chars, answer_chars
        self.log: list[ConstrainedStep] = []

    def constraint_for(self, messages: list[dict], tools: Any) -> tuple[StepChoices, str | dict]:
        """What the next step may do, and the grammar or schema that says it."""
        if self.inputs:
            choices = allowed_steps(messages, tools, narrow=self.narrow, tool_filter=self.tool_filter)
        else:
            choices = StepChoices(tuple(tools.names), {}, True)
        if self.form == "json_schema":
            return choices, step_schema(choices, tools, answer_chars=self.answer_chars)
        return choices, step_grammar(choices, tools, ids=self.inputs, thought_chars=self.thought_chars,
                                     answer_chars=self.answer_chars)

    def __call__(self, run: Any, step: int, messages: list[dict], **options: Any) -> Generator[Event, None, ChatResult]:
        choices, constraint = self.constraint_for(run.messages, run.agent.tools)
        self.log.append(ConstrainedStep(step, choices, constraint))
        if self.form == "grammar":
            options["grammar"] = constraint
        else:
            options["response_format"] = {"type": "json_schema",
                                          "json_schema": {"name": "react_step", "schema": constraint}}
        return run.agent.llm.chat(messages, **options)
        yield  # a generator like every send; this one yields nothing

    def __repr__(self) -> str:
        return f"ConstrainedSend({self.form!r}, inputs={self.inputs}, narrow={self.narrow})"


class WithExample:
    """What is sent: the request of the part it wraps, with a worked example (chat turns) after the system
    prompt, in the run's language (compliance.example_turns)."""

    slot: ClassVar[str] = "request"
    protocol: ClassVar[str] = "text"  # a Thought / Action step, in lines or as JSON (loop_parts.py)

    def __init__(self, inner: Any = None):
        self.inner = inner or WholeConversation()

    def around(self, inner: Any) -> WithExample:
        return WithExample(inner)

    def build(self, run: Any, closing: bool = False) -> tuple[list[dict], dict]:
        messages, options = self.inner.build(run, closing)
        head = 1 if messages and messages[0].get("role") == "system" else 0
        return [*messages[:head], *example_turns(run.lang), *messages[head:]], options

    def __repr__(self) -> str:
        return f"WithExample({self.inner!r})"


def forced_share(steps: Iterable[ConstrainedStep]) -> float:
    """The share of logged steps whose grammar left one thing to do (0.0 for none logged)."""
    steps = list(steps)
    return sum(s.forced for s in steps) / len(steps) if steps else 0.0


# -- lesson 23's measurement ----------------------------------------------------------------------------------------
VARIANTS = {
    "none": "the course's prompt, no grammar",
    "format": "a grammar for the format (Thought, then Action + Action Input, or Final Answer)",
    "inputs": "+ each tool's input from its schema, ids only as seen in the conversation",
    "conversation": "+ rebuilt each step (no repeat, answer after an Observation), tool filter, one-shot example",
    "json_schema": "a JSON Schema ({tool, arguments} or {final_answer}), narrowed and filtered the same way",
}


def variant_options(name: str) -> dict:
    """The agent options (`parts`) of one of VARIANTS, with a new send part (so a new log) each call."""
    from tinyagent.memory.tool_filter import ToolFilter
    from tinyagent.shop.tool_hints import SHOP_TOOL_HINTS

    if name == "none":
        return {}
    if name == "format":
        return {"parts": [ConstrainedSend(inputs=False)]}
    if name == "inputs":
        return {"parts": [ConstrainedSend(narrow=False)]}
    narrowed = {"tool_filter": ToolFilter(SHOP_TOOL_HINTS), "thought_chars": 60, "answer_chars": 100}
    if name == "conversation":
        return {"parts": [ConstrainedSend(**narrowed), WithExample()]}
    if name == "json_schema":
        return {"parts": [ConstrainedSend("json_schema", **narrowed), WithExample(), JsonStepRead()]}
    raise ValueError(f"no variant {name!r}: the variants are {', '.join(VARIANTS)}")
