"""Which tools a request offers, whatever shape the prompt writes them in. One reader for every shape.

Learners rewrite the system prompt and paste prompts from other frameworks, so the tool list comes in
many shapes. This module reads all of these (tests/test_classroom_tool_list.py has one test per shape):

    1. queryOrder - look an order up        numbered lines, with -, :, —, –, or full-width ：－, and 1) 1、 １．
    queryOrder: look an order up            `name: description` lines (LangChain's classic ReAct prompt)
    queryOrder(orderId: str) -> str - ...   a signature and its return type (LangChain's StructuredTool)
    - **queryOrder**: look an order up      Markdown bullets, with bold or `code` names
    | queryOrder | look an order up |      Markdown tables (a header row such as | name | ... | is skipped)
    [{"name": "queryOrder", ...}]           a JSON (or JSON Schema, or OpenAI `tools`) block, fenced or not
    (1) queryOrder, whose description is ...  a numbered line that names the tool, then describes it in words
    > Tool Name: queryOrder                 LlamaIndex's blocks: the name, a description (maybe over several
    Tool Description: look an order up      lines, maybe opening with the function's signature) and the
    Tool Args: {"properties": {...}}        arguments' JSON Schema, which a JSON Action Input then follows
    ... should be one of [queryOrder, ...]  the "one of [a, b, c]" line; when present it says which names
                                            are tools, and the lines above only supply descriptions
    "tools": [...] in the request           function calling (`read_native_tools`)

A line only counts as a tool when it looks like one: a numbered line, a bullet or table row with a name,
or a `name: description` line whose name is an identifier (queryOrder, query_order) or that sits in a
run of two or more such lines. The ReAct keywords (Thought:, Action:, Final Answer:, ...) never count.

What it cannot read, it says: `ToolList.problem` is a sentence the model puts in its reply.
"""

from __future__ import annotations

import json
import re
from typing import NamedTuple

from tinyagent.classroom.schema_filling import check_schema

# Words that start a `word: text` line in prompts without being tools: the ReAct keywords and the
# usual headings. Compared in lower case.
NOT_TOOLS = frozenset({
    "thought", "action", "observation", "final answer", "question", "answer", "begin", "note", "notes",
    "input", "output", "format", "example", "examples", "rules", "rule", "tools", "tool", "user",
    "assistant", "system", "human", "ai", "role", "context", "important", "step", "tip", "warning",
    "instructions", "response", "reply", "result", "goal", "task", "description", "name", "http",
    "https", "json", "remember", "reminder", "today", "date", "time", "language", "constraints", "use",
    "then", "first", "finally", "always", "never", "only", "tone", "style", "persona",
})
# Header cells of a Markdown table of tools.
TABLE_HEADERS = frozenset({"name", "tool", "tools", "function", "工具", "工具名", "名称", "名字"})


class ToolList(NamedTuple):
    """The tools found (name -> description, in the prompt's order), and what could not be read."""

    tools: dict[str, str]
    problem: dict[str, str] | None = None  # {"zh": ..., "en": ...} when a prompt asks for tools but lists none
    schemas: dict[str, dict] = {}  # noqa: RUF012 - a NamedTuple's default, never changed: the arguments' schemas
    json_input: bool = False  # the prompt asks for the Action Input as a JSON object of the arguments


# --- the patterns ------------------------------------------------------------------------------------


_NAME = r"(?P<name>[A-Za-z_][\w.-]*)"
# "1. ", "1) ", "1、", "１．", "(1) "; or a bullet "- ", "* ", "+ ", "• "
NUMBER = re.compile(r"^\s*(?:[(（]?[0-9０-９]+\s*[.)、．）:：]|#+\s*[0-9]+[.)]?)\s*")
BULLET = re.compile(r"^\s*[-*+•·]\s+")
# the name (maybe **bold** or `code`, maybe with a signature), then a separator, then the text
ENTRY = re.compile(r"^(?P<mark>\*\*|__|`)?" + _NAME + r"(?P=mark)?(?:\s*\([^)]*\)(?:\s*->\s*\S+)?)?(?P<close>\*\*|`)?"
         r"\s*(?:-{1,2}|—{1,2}|–|:|：|－|=>|->)\s*(?P<desc>\S.*)$")
# a numbered line that names the tool and then describes it in words: "queryOrder, whose description is ...",
# "`queryOrder` which looks an order up", "query_order (look an order up)"
WORDED_ENTRY = re.compile(r"^[`*_]*" + _NAME + r"[`*_]*\s*(?:[,，(（]\s*|\s+)(?:(?:whose|the|its)\s+description\s+is"
                          r"|described\s+as|which|that|description\s*[:：])?\s*(?P<desc>\S.*?)[)）]?$", re.IGNORECASE)
ONE_OF = re.compile(r"(?:one of|any of|among|之一|其中一个|中的一个|必须是|只能是)[^\[\n]{0,20}"
         r"[\[【(（]\s*([^\]】)）\n]+?)\s*[\]】)）]", re.IGNORECASE)
ONE_OF_BEFORE = re.compile(r"[\[【]\s*([^\]】\n]+?)\s*[\]】][^\n]{0,6}(?:之一|其中之一|中的一个)")
IDENTIFIER = re.compile(r"^[A-Za-z_][\w.-]*$")
# LlamaIndex's blocks: every one of them holds "Tool Name:"
BLOCK = re.compile(r"^>?[ \t]*Tool Name:[ \t]*(?P<name>[A-Za-z_][\w.-]*)[ \t]*$", re.MULTILINE)
BLOCK_END = re.compile(r"^\s*(?:>?[ \t]*Tool Name:|#)", re.MULTILINE)
BLOCK_DESC = re.compile(r"^[ \t]*Tool Description:[ \t]*", re.MULTILINE)
BLOCK_ARGS = re.compile(r"^[ \t]*Tool Args:[ \t]*(\{.*\})[ \t]*$", re.MULTILINE)
JSON_INPUT = re.compile(r"action input\s*[:：][^\n]*\bin (?:a )?json\b", re.IGNORECASE)
NAME_LIST_SEP = re.compile(r"[,，、|/]|\s+or\s+|\s+")


def looks_like_identifier(word: str) -> bool:
    """queryOrder, query_order, get.time, tool2: a name a programmer gave, not an English word."""
    return bool(
        IDENTIFIER.match(word)
        and (any(c.isupper() for c in word[1:]) or any(c in "_.-" or c.isdigit() for c in word))
    )


# --- the reader ---------------------------------------------------------------------------------------


def read_tool_list(prompt: str) -> ToolList:
    """The tools a prompt lists, in any of the shapes above. `problem` says so when it lists none."""
    named = names_in_one_of(prompt)
    found: dict[str, str] = {}
    blocks = tools_in_blocks(prompt)
    listed = [(name, text) for name, text, _ in blocks] or [*tools_in_json(prompt), *tools_in_lines(prompt, set(named))]
    for name, description in listed:
        if name not in found or (description and not found[name]):  # the first description wins
            found[name] = description
    if named:
        tools = {name: found.get(name, "") for name in named}
    else:
        tools = found
    if tools or not asks_for_tools(prompt):
        schemas = {name: schema for name, _, schema in blocks if schema is not None and name in tools}
        json_input = "json" in prompt.lower() and bool(JSON_INPUT.search(prompt))
        return ToolList(tools, schemas=schemas, json_input=json_input)
    return ToolList({}, problem=_NO_TOOL_LIST)


def tools_in_blocks(prompt: str) -> list[tuple[str, str, dict | None]]:
    """(name, description, arguments' JSON Schema or None) of each `> Tool Name:` block (LlamaIndex)."""
    found: list[tuple[str, str, dict | None]] = []
    if "Tool Name:" not in prompt:
        return found
    for match in BLOCK.finditer(prompt):
        name = match.group("name")
        end = BLOCK_END.search(prompt, match.end())
        block = prompt[match.end() : end.start() if end else len(prompt)]
        args = BLOCK_ARGS.search(block)
        described = BLOCK_DESC.search(block)
        text = block[described.end() : args.start() if args else len(block)] if described else ""
        first, _, rest = text.strip().partition("\n")
        if first.startswith(name + "(") and rest.strip():  # the signature LlamaIndex puts first is not the text
            text = rest
        text = text.strip().split("\n\n", 1)[0]  # a docstring's Args: section repeats the schema
        found.append((name, " ".join(text.split()), _prompt_schema(args.group(1)) if args else None))
    return found


def _prompt_schema(text: str) -> dict | None:
    """The JSON Schema a prompt writes after `Tool Args:`, or None when it is no schema the classroom model can
    fill (the prompt's words, not a request's field: the tool is still offered, only without its schema)."""
    try:
        schema = json.loads(text)
        check_schema(schema)
    except (ValueError, RecursionError):
        return None
    return schema if isinstance(schema, dict) else None


def asks_for_tools(prompt: str) -> bool:
    """True for a prompt that expects the model to call tools: it asks for `Action:` lines."""
    low = prompt.lower()
    return "action:" in low or "action：" in low or ("action" in low and "observation" in low)


_NO_TOOL_LIST = {
    "zh": "我在系统提示词里没有找到工具列表，所以没有调用任何工具。我能读懂的写法有：编号行（1. queryOrder - 说明）、"
    "“名称: 说明”行、Markdown 列表或表格、JSON 工具定义，以及 “one of [queryOrder, ...]” 这样的名单。",
    "en": "I could not find a tool list in the system prompt, so I called no tool. I can read tools written as "
    "numbered lines (1. queryOrder - description), `name: description` lines, Markdown bullets or tables, "
    "a JSON block of tool definitions, or a line such as `one of [queryOrder, ...]`.",
}


def names_in_one_of(prompt: str) -> list[str]:
    """The names in "should be one of [a, b, c]" (or "必须是 [a, b] 之一"), in order; [] if there is none."""
    for pattern in (ONE_OF, ONE_OF_BEFORE):
        for match in pattern.finditer(prompt):
            words = [w.strip(" `'\"*") for w in NAME_LIST_SEP.split(match.group(1))]
            names = [w for w in words if w]
            if names and all(IDENTIFIER.match(w) for w in names):
                return list(dict.fromkeys(names))
    return []


def tools_in_lines(prompt: str, named: set[str] = frozenset()) -> list[tuple[str, str]]:
    """(name, description) from numbered lines, bullets, table rows and `name: description` lines."""
    found: list[tuple[str, str]] = []
    run: list[tuple[str, str]] = []  # consecutive plain `word: text` lines, accepted when 2 or more

    def end_run() -> None:
        if len(run) >= 2:
            found.extend(run)
        run.clear()

    for line in prompt.splitlines():
        if line.lstrip().startswith("|"):
            end_run()
            entry = _table_row(line)
            if entry:
                found.append(entry)
            continue
        numbered = NUMBER.match(line)
        bullet = None if numbered else BULLET.match(line)
        rest = line[(numbered or bullet).end() :] if (numbered or bullet) else line.strip()
        rest = rest.replace(":**", "**:").replace("：**", "**：")  # "**name:** text" as "**name**: text"
        match = ENTRY.match(rest)
        worded = WORDED_ENTRY.match(rest) if match is None and (numbered or bullet) else None
        if worded and looks_like_identifier(worded.group("name")):
            # "(1) queryOrder, whose description is ...": a programmer's name, then words instead of a separator
            end_run()
            found.append((worded.group("name"), worded.group("desc").strip()))
            continue
        if match is None or match.group("name").lower() in NOT_TOOLS or _is_keyword_line(rest):
            end_run()
            continue
        entry = (match.group("name"), match.group("desc").strip())
        marked = bool(match.group("mark") or match.group("close"))
        if numbered or marked or entry[0] in named or (bullet and looks_like_identifier(entry[0])):
            end_run()
            found.append(entry)
        elif looks_like_identifier(entry[0]):
            run.append(entry)
            if len(run) == 1:  # an identifier needs no company
                found.append(run.pop())
        elif not bullet:
            run.append(entry)
        else:
            end_run()
    end_run()
    return found


def _is_keyword_line(text: str) -> bool:
    """'Action Input: ...', 'Final Answer: ...': two-word keywords the name pattern would cut short."""
    head = re.split(r"[:：]", text, maxsplit=1)[0].strip(" *`_").lower()
    return head in NOT_TOOLS or head in ("action input", "final answer")


def _table_row(line: str) -> tuple[str, str] | None:
    cells = [cell.strip().strip("*`_ ") for cell in line.strip().strip("|").split("|")]
    cells = [cell for cell in cells if cell]
    if len(cells) < 2 or set(cells[0]) <= set("-: "):
        return None
    name = cells[0]
    if name.lower() in TABLE_HEADERS or not IDENTIFIER.match(name):
        return None
    return name, cells[1]


def tools_in_json(prompt: str) -> list[tuple[str, str]]:
    """(name, description) from JSON blocks: a list of tools, OpenAI `tools`, JSON Schemas, {name: text}.

    Only a block that starts its own line counts: an example inside a description
    (`如 {"orderId": "88231", "reason": "..."}`) is not a list of tools.
    """
    if "{" not in prompt and "[" not in prompt:
        return []
    decoder = json.JSONDecoder()
    found: list[tuple[str, str]] = []
    position = 0
    while True:
        starts = [i for i in (prompt.find("[", position), prompt.find("{", position)) if i >= 0]
        if not starts:
            return found
        start = min(starts)
        line_start = prompt.rfind("\n", 0, start) + 1
        if prompt[line_start:start].strip():
            position = start + 1
            continue
        try:
            value, end = decoder.raw_decode(prompt, start)
        except ValueError:
            position = start + 1
            continue
        found.extend(_tools_in_value(value))
        position = end


def _tools_in_value(value: object) -> list[tuple[str, str]]:
    identifier = IDENTIFIER
    if isinstance(value, list):
        return [entry for item in value for entry in _tools_in_value(item)]
    if not isinstance(value, dict):
        return []
    for key in ("tools", "functions"):
        if isinstance(value.get(key), list):
            return _tools_in_value(value[key])
    if isinstance(value.get("function"), dict):
        return _tools_in_value(value["function"])
    for key in ("name", "title"):  # a tool definition, or a JSON Schema with a title
        name = value.get(key)
        if isinstance(name, str) and identifier.match(name) and (key == "name" or "properties" in value):
            return [(name, str(value.get("description") or ""))]
    if value and all(isinstance(k, str) and identifier.match(k) for k in value):
        entries = []
        for name, spec in value.items():  # {"queryOrder": "description"} or {"queryOrder": {...}}
            if isinstance(spec, str):
                entries.append((name, spec))
            elif isinstance(spec, dict) and isinstance(spec.get("description"), str):
                entries.append((name, spec["description"]))
        return entries if len(entries) == len(value) else []
    return []


# --- function calling ---------------------------------------------------------------------------------


class MalformedToolsError(ValueError):
    """`tools` or `tool_choice` in the request is not what the API accepts (the server answers 400).
    `param` names the field, as OpenAI's error does (`tools[1].function.parameters`)."""

    def __init__(self, message: str, param: str = "tools"):
        super().__init__(message)
        self.param = param


def read_native_tools(request: dict) -> tuple[dict[str, str] | None, dict[str, dict]]:
    """The request's `tools` as name -> description (None when absent; none at all for `tool_choice` "none"),
    and each tool's JSON Schema `parameters`. A named function keeps every tool in view, as a real model sees them;
    tool_choice.py holds the reply to the name.

    Each `parameters` is checked here, as it is read (schema_filling.check_schema, the check `response_format`
    gets): everything after this (a forced call's arguments, the planner's renaming) may take the schema as sound.
    """
    tools = request.get("tools")
    choice = request.get("tool_choice")
    if tools is None or tools == []:
        if choice == "required" or isinstance(choice, dict):  # nothing to call: OpenAI's API refuses it too
            raise MalformedToolsError("tool_choice asks for a tool call, but the request offers no 'tools'",
                                      "tool_choice")
        return None, {}
    if not isinstance(tools, list):
        raise MalformedToolsError("'tools' must be a list of function tools")
    offered: dict[str, str] = {}
    schemas: dict[str, dict] = {}
    for index, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str) or not function["name"]:
            raise MalformedToolsError(f"tools[{index}] must be {{'type': 'function', 'function': {{'name': ...}}}}",
                                      f"tools[{index}]")
        offered[function["name"]] = str(function.get("description") or "")
        schemas[function["name"]] = _parameters(function.get("parameters"), f"tools[{index}].function.parameters")

    if choice in (None, "auto", "required"):
        return offered, schemas
    if choice == "none":  # the caller forbids calls this turn: answer with what is known
        return {}, schemas
    if isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        name = choice["function"].get("name")
        if name not in offered:
            raise MalformedToolsError(f"tool_choice names {name!r}, which is not in 'tools'", "tool_choice")
        return offered, schemas
    raise MalformedToolsError(
        "tool_choice must be 'auto', 'none', 'required' or {'type': 'function', 'function': {...}}", "tool_choice"
    )


def _parameters(parameters: object, where: str) -> dict:
    """A tool's `parameters`, checked: absent is no arguments ({}); anything but a JSON Schema the classroom model
    can fill is a MalformedToolsError naming `where`."""
    if parameters is None:
        return {}
    if not isinstance(parameters, dict):
        raise MalformedToolsError(f"{where} must be a JSON Schema object, got {json.dumps(parameters)[:40]}.", where)
    try:
        check_schema(parameters, where)
    except ValueError as exc:
        raise MalformedToolsError(str(exc), where) from None
    return parameters
