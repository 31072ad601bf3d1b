"""The classroom model's tool-list reader (tinyagent/classroom/tool_list.py): one test per shape of list.

Each prompt lists the same three tools; the reader must find exactly those, in order, with their
descriptions, and nothing from the format section (Thought:, Action:, Final Answer: ...).
"""

from __future__ import annotations

import json

import pytest
import requests

from tinyagent.classroom.behaviour import respond
from tinyagent.classroom.server import ClassroomServer
from tinyagent.classroom.tool_list import read_tool_list

NAMES = ["queryOrder", "queryLogistics", "applyRefund"]
DESCRIPTIONS = ["look up an order by its id", "track a parcel by tracking number", "submit a refund"]
FORMAT = """
Use this format:
Question: the question
Thought: what to do
Action: the tool to use
Action Input: its input
Observation: its result
Final Answer: the answer
Begin!
"""


def lines(template: str) -> str:
    return "".join(template.format(i=i, name=n, desc=d) + "\n" for i, (n, d) in enumerate(zip(NAMES, DESCRIPTIONS), 1))


SHAPES = {
    "numbered, dash": lines("{i}. {name} - {desc}"),
    "numbered, colon": lines("{i}. {name}: {desc}"),
    "numbered, em dash": lines("{i}. {name} — {desc}"),
    "numbered, en dash and parenthesis": lines("{i}) {name} – {desc}"),
    "numbered, full-width": lines("{i}、{name}：{desc}"),
    "full-width digits and dash": "".join(
        f"{chr(0xFF10 + i)}．{n}－{d}\n" for i, (n, d) in enumerate(zip(NAMES, DESCRIPTIONS), 1)
    ),
    "name: description (LangChain)": lines("{name}: {desc}"),
    "Markdown bullets": lines("- {name}: {desc}"),
    "Markdown bold names": lines("* **{name}**: {desc}"),
    "Markdown bold colon inside": lines("- **{name}:** {desc}"),
    "Markdown code names": lines("- `{name}` — {desc}"),
    "signature": lines("{i}. {name}(input: str) - {desc}"),
    "Markdown table": "| tool | what it does |\n| --- | --- |\n" + lines("| {name} | {desc} |"),
    "Markdown table with code names": "| name | description |\n|:--|:--|\n" + lines("| `{name}` | {desc} |"),
    "JSON list": json.dumps([{"name": n, "description": d} for n, d in zip(NAMES, DESCRIPTIONS)], indent=2),
    "JSON fenced OpenAI tools": "```json\n" + json.dumps({"tools": [
        {"type": "function", "function": {"name": n, "description": d, "parameters": {"type": "object"}}}
        for n, d in zip(NAMES, DESCRIPTIONS)]}) + "\n```",
    "JSON Schema": "\n".join(json.dumps({"title": n, "description": d, "type": "object", "properties": {}})
                             for n, d in zip(NAMES, DESCRIPTIONS)),
    "JSON object name -> description": json.dumps(dict(zip(NAMES, DESCRIPTIONS)), ensure_ascii=False),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_each_shape_gives_the_three_tools(shape):
    prompt = "You are the Bit Mall assistant. You have these tools:\n\n" + SHAPES[shape] + FORMAT
    found = read_tool_list(prompt)
    assert list(found.tools) == NAMES, shape
    assert list(found.tools.values()) == DESCRIPTIONS, shape
    assert found.problem is None


def test_one_of_line_says_which_names_are_tools():
    prompt = "Tools:\n" + lines("{name}: {desc}") + "Note: be polite\n" + FORMAT.replace(
        "Action: the tool to use", f"Action: the action to take, should be one of [{', '.join(NAMES)}]")
    assert list(read_tool_list(prompt).tools) == NAMES


def test_one_of_line_alone_gives_names_without_descriptions():
    prompt = "Action: the action to take, should be one of [queryOrder, getCurrentTime]\nFinal Answer: ..."
    assert read_tool_list(prompt).tools == {"queryOrder": "", "getCurrentTime": ""}


def test_chinese_one_of_line():
    prompt = "Action: 工具名，必须是 [queryOrder、applyRefund] 之一\nFinal Answer: ..."
    assert list(read_tool_list(prompt).tools) == ["queryOrder", "applyRefund"]


def test_plain_words_need_company_but_numbered_lines_do_not():
    """A lone `Note: ...` line is not a tool; a lone numbered `1. weather - ...` line is (lesson 01's seed)."""
    assert read_tool_list("Note: be polite.\nAction: one step\nFinal Answer: done").tools == {}
    assert read_tool_list("1. weather - 查询天气\nAction: ...").tools == {"weather": "查询天气"}
    assert list(read_tool_list("Search: search the web\nCalculator: do sums\n").tools) == ["Search", "Calculator"]


def test_the_course_prompt_in_both_languages_and_a_shorter_rewording():
    from tinyagent import build_system_prompt
    from tinyagent.shop import Shop, shop_registry

    with Shop(":memory:") as shop:
        registry = shop_registry(shop)
        for lang in ("en", "zh"):
            assert list(read_tool_list(build_system_prompt(registry, lang)).tools) == registry.names
        shorter = "工具：\n" + "".join(f"{i}. {t.name}：{t.description[:10]}\n" for i, t in enumerate(registry, 1))
        assert list(read_tool_list(shorter).tools) == registry.names


def test_a_react_prompt_without_a_readable_list_is_answered_plainly():
    prompt = "You are a helpful assistant with tools.\nUse: Thought / Action / Action Input / Observation.\n" + FORMAT
    found = read_tool_list(prompt)
    assert found.tools == {} and "could not find a tool list" in found.problem["en"]
    reply = respond({"model": "classroom", "messages": [
        {"role": "system", "content": prompt}, {"role": "user", "content": "Where is order 88231?"}]})
    assert reply.text.startswith("Thought: ") and "Final Answer: I could not find a tool list" in reply.text
    assert "Action:" not in reply.text.split("Final Answer:")[1]
    zh = respond({"model": "classroom", "messages": [
        {"role": "system", "content": prompt}, {"role": "user", "content": "订单 88231 到哪了"}]})
    assert "没有找到工具列表" in zh.text


@pytest.mark.parametrize("prompt", ["You are a friendly assistant.", "你是一个友好的助手，这次不需要使用工具。"])
def test_a_prompt_that_asks_for_no_tools_is_plain_chat(prompt):
    reply = respond({"model": "classroom", "messages": [
        {"role": "system", "content": prompt}, {"role": "user", "content": "Hello"}]})
    assert "Thought:" not in reply.text and "Hello" in reply.text


def test_tools_only_in_the_request_are_function_calling():
    tools = [{"type": "function", "function": {"name": "queryOrder", "description": "look up an order",
                                               "parameters": {"type": "object", "properties": {"orderId": {"type": "string"}}}}}]
    reply = respond({"model": "classroom", "tools": tools, "messages": [
        {"role": "system", "content": "You are the Bit Mall assistant."},
        {"role": "user", "content": "What is the status of order 88232?"}]})
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("queryOrder", {"orderId": "88232"})]


def test_malformed_native_tools_are_a_value_error():
    with pytest.raises(ValueError, match="tools\\[0\\]"):
        respond({"model": "classroom", "tools": [{"type": "function"}], "messages": [{"role": "user", "content": "hi"}]})
    with pytest.raises(ValueError, match="tool_choice"):
        respond({"model": "classroom", "tools": [{"type": "function", "function": {"name": "a"}}],
                 "tool_choice": {"type": "function", "function": {"name": "b"}},
                 "messages": [{"role": "user", "content": "hi"}]})




# --- a tool's `parameters` is checked as the request is read ---------------------------------------------------
SOUND = {"type": "object", "properties": {"orderId": {"type": "string"}}}
MALFORMED_PARAMETERS = {
    "enum that is no list": ({"type": "object", "properties": {"q": {"enum": True}}}, "'enum' must be a list"),
    "a $ref to nothing": ({"type": "object", "properties": {"q": {"$ref": "#/$defs/nope"}}}, "points to nothing"),
    "a $ref to another document": ({"type": "object", "properties": {"q": {"$ref": "https://example.com/q.json"}}},
                                   "is not inside the schema"),
    "required holding an object": ({"type": "object", "properties": {"q": {"type": "string"}}, "required": [{}]},
                                   "'required' must be a list of property names"),
    "a type that is a list of lists": ({"type": "object", "properties": {"q": {"type": [[]]}}},
                                       "'type' must be a type name"),
    "required: 3": ({"type": "object", "properties": {"q": {"type": "string"}}, "required": 3},
                    "'required' must be a list of property names"),
    "properties as a list": ({"type": "object", "properties": ["orderId"]}, "'properties' must be an object"),
    "no object at all": ("x", "must be a JSON Schema object"),
}


@pytest.fixture(scope="module")
def classroom():
    with ClassroomServer() as server:
        yield server


@pytest.mark.parametrize("tool_choice", [None, "required", {"type": "function", "function": {"name": "lookUp"}}])
@pytest.mark.parametrize(("parameters", "says"), MALFORMED_PARAMETERS.values(), ids=MALFORMED_PARAMETERS.keys())
def test_malformed_tool_parameters_are_a_400_naming_the_tool_on_both_apis(classroom, parameters, says, tool_choice):
    # Each was a 500 with a traceback on the room's stderr, from the forced call's arguments or the planner.
    question = "Where is my order 88231?"
    chat_tools = [{"type": "function", "function": {"name": name, "description": name, "parameters": schema}}
                  for name, schema in (("searchThings", SOUND), ("lookUp", parameters))]
    chat_body = {"model": "classroom", "messages": [{"role": "user", "content": question}], "tools": chat_tools}
    responses_body = {"model": "classroom", "input": question,
                      "tools": [{"type": "function", **tool["function"]} for tool in chat_tools]}
    if tool_choice is not None:
        chat_body["tool_choice"] = tool_choice
        responses_body["tool_choice"] = tool_choice if isinstance(tool_choice, str) else {
            "type": "function", "name": "lookUp"}
    for url, body, param in ((classroom.chat_url, chat_body, "tools[1].function.parameters"),
                             (classroom.base_url + "/responses", responses_body, "tools[1].parameters")):
        answer = requests.post(url, json=body, timeout=30)
        assert answer.status_code == 400, answer.text
        error = answer.json()["error"]
        assert error["type"] == "invalid_request_error" and error["param"] == param, error
        assert error["message"].startswith(param) and says in error["message"] and "\n" not in error["message"]


def test_a_malformed_schema_in_a_prompt_s_tool_args_leaves_the_tool_without_one():
    prompt = ("> Tool Name: queryOrder\nTool Description: look an order up\n"
              'Tool Args: {"type": "object", "properties": ["orderId"]}\n')
    assert read_tool_list(prompt).schemas == {}
    assert read_tool_list(prompt.replace('["orderId"]', '{"orderId": {"type": "string"}}')).schemas == {
        "queryOrder": {"type": "object", "properties": {"orderId": {"type": "string"}}}}


@pytest.mark.parametrize(("extra", "param", "says"), [
    ({"tool_choice": "required"}, "tool_choice", "offers no 'tools'"),
    ({"tool_choice": {"type": "function", "function": {"name": "queryOrder"}}}, "tool_choice", "offers no 'tools'"),
    ({"tools": [SOUND]}, "tools[0]", "tools[0] must be"),
    ({"tools": [{"type": "function", "function": {"name": "queryOrder", "parameters": SOUND}}],
      "tool_choice": "sometimes"}, "tool_choice", "tool_choice must be"),
    ({"tools": [{"type": "function", "function": {"name": "queryOrder", "parameters": SOUND}}],
      "tool_choice": {"type": "function", "function": {"name": "gone"}}}, "tool_choice", "names 'gone'"),
    ({"response_format": {"type": "yaml"}}, "response_format", "response_format.type must be"),
])
def test_a_bad_tools_tool_choice_or_response_format_is_a_400_naming_that_param(classroom, extra, param, says):
    # Each said param "messages"; a tool_choice that asks for a call with no tools to call was taken silently.
    body = {"model": "classroom", "messages": [{"role": "user", "content": "Where is my order 88231?"}], **extra}
    answer = requests.post(classroom.chat_url, json=body, timeout=30)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["param"] == param and says in error["message"], error
