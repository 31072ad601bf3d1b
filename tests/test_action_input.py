"""action_input.py: the Action Input text as arguments: JSON (fenced, multi-line), or plain text for one parameter."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyagent.toolkit.action_input import read_arguments, unwrap
from tinyagent.toolkit.validation import Problem

ONE_TEXT = {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}
ONE_INT = {"type": "object", "properties": {"order_id": {"type": "integer"}}, "required": ["order_id"]}
ONE_LIST = {"type": "object", "properties": {"ids": {"type": "array", "items": {"type": "integer"}}}}
ONE_OBJECT = {"type": "object", "properties": {"address": {"type": "object", "properties": {
    "city": {"type": "string"}, "street": {"type": "string"}}}}}
TWO = {"type": "object", "properties": {"file_path": {"type": "string"}, "content": {"type": "string"},
                                        "overwrite": {"type": "boolean"}}, "required": ["file_path", "content"]}
NONE = {"type": "object", "properties": {}}


@pytest.mark.parametrize(
    "text",
    [
        "88231",
        " 88231\n",
        '"88231"',
        "`88231`",
        '{"order_id": "88231"}',
        '{\n  "order_id": "88231"\n}',
        '```json\n{"order_id": "88231"}\n```',
        '```\n{\n  "order_id": "88231"\n}\n```',
    ],
)
def test_every_way_of_writing_one_text_argument(text):
    assert read_arguments(text, ONE_TEXT) == {"order_id": "88231"}


def test_plain_text_becomes_the_parameters_type_when_it_is_json():
    assert read_arguments("88231", ONE_INT) == {"order_id": 88231}
    assert read_arguments('"88231"', ONE_INT) == {"order_id": "88231"}  # quoted: a string, the checker says so
    assert read_arguments("eighty", ONE_INT) == {"order_id": "eighty"}
    assert read_arguments("[1, 2]", ONE_LIST) == {"ids": [1, 2]}


def test_a_json_object_is_taken_as_it_is_for_the_checker_to_judge():
    assert read_arguments('{"order_id": 88231}', ONE_TEXT) == {"order_id": 88231}
    assert read_arguments('{"orderId": "88231"}', ONE_TEXT) == {"orderId": "88231"}


def test_the_one_object_parameter_may_be_written_without_its_name():
    value = {"city": "上海", "street": "南京路 1 号"}
    assert read_arguments('{"city": "上海", "street": "南京路 1 号"}', ONE_OBJECT) == {"address": value}
    assert read_arguments('{"address": {"city": "上海", "street": "南京路 1 号"}}', ONE_OBJECT) == {"address": value}


def test_a_raw_line_break_inside_a_json_string_is_read_as_a_line_break():
    text = '{"file_path": "numbers.txt", "content": "1\n2\n3"}'  # the \n here are real line breaks
    assert read_arguments(text, TWO) == {"file_path": "numbers.txt", "content": "1\n2\n3"}


def test_a_multi_line_object_in_a_fence():
    text = '```json\n{\n  "file_path": "a.txt",\n  "content": "x",\n  "overwrite": true\n}\n```'
    assert read_arguments(text, TWO) == {"file_path": "a.txt", "content": "x", "overwrite": True}


def test_plain_text_for_several_fields_is_a_problem_naming_them():
    problem = read_arguments("numbers.txt", TWO)
    assert isinstance(problem, Problem) and problem.field == ""
    assert problem.message == ("the input must be a JSON object, not plain text "
                               "(required: file_path, content; optional: overwrite)")


@pytest.mark.parametrize("text, where", [('{"file_path": "a.txt",}', "line 1, column 23"),
                                         ('{"file_path": "a.txt"} thanks', "line 1, column 24"),
                                         ("{'file_path': 'a.txt'}", "line 1, column 2")])
def test_broken_json_says_where(text, where):
    problem = read_arguments(text, TWO)
    assert isinstance(problem, Problem) and problem.message.startswith("the input is not valid JSON: ")
    assert where in problem.message


def test_a_brace_is_just_text_for_one_text_parameter():
    assert read_arguments("{not json", ONE_TEXT) == {"order_id": "{not json"}


def test_empty_input_gives_no_arguments_and_a_tool_without_parameters_ignores_text():
    assert read_arguments("", ONE_TEXT) == {}
    assert read_arguments("   ", TWO) == {}
    assert read_arguments("now please", NONE) == {}
    assert read_arguments("{}", NONE) == {}


@pytest.mark.parametrize("text, inner", [("```json\n{}\n```", "{}"), ("```\nabc\n```", "abc"), ("`x`", "x"),
                                         ("``", ""), ("a `b` c", "a `b` c"), ("```88231```", "88231"),
                                         ("```json {\"a\": 1}```", "{\"a\": 1}"), ("``````", ""),
                                         ("```\n{}", "{}"), ("```json\r\n{}\r\n```", "{}"),
                                         ("``` json\n{}\n```", "{}")])
def test_unwrap(text, inner):
    assert unwrap(text) == inner


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60), st.sampled_from([ONE_TEXT, ONE_INT, ONE_LIST, ONE_OBJECT, TWO, NONE]))
def test_any_text_is_read_or_refused_never_raised(text, schema):
    result = read_arguments(text, schema)
    assert isinstance(result, (dict, Problem))


def test_plain_text_is_the_one_required_parameter_when_the_others_are_optional():
    track = {"type": "object", "properties": {"tracking_no": {"type": "string"}, "latest_only": {"type": "boolean"}},
             "required": ["tracking_no"]}
    assert read_arguments("SF1234567890", track) == {"tracking_no": "SF1234567890"}
    assert read_arguments('{"tracking_no": "SF1", "latest_only": true}', track) == {
        "tracking_no": "SF1", "latest_only": True}
    two_required = {**track, "required": ["tracking_no", "latest_only"]}
    assert isinstance(read_arguments("SF1234567890", two_required), Problem)


@pytest.mark.parametrize(("text", "inside"), [("```" + " " * 200_000 + "x", ""),  # an opening fence, language x
                                              ("```json\n" + " \n" * 100_000 + "x", "x")])
def test_a_fence_that_never_closes_is_read_in_a_moment(text, inside):
    # One regex once read the fence: 4,000 spaces after an unclosed ``` took 24 s (the time grew with the cube of
    # the length), in every typed tool's input. Now milliseconds; 60 s only tells a hang from a loaded machine.
    started = time.monotonic()
    assert unwrap(text) == inside  # a fence cut short: what it holds so far
    assert time.monotonic() - started < 60


@pytest.mark.parametrize(("text", "schema"), [
    ('{"file_path": "notes.txt", "content": "q", "overwrite": false, "overwrite": true}', TWO),
    ('{"order_id": "88231", "order_id": "88232"}', ONE_TEXT),
    ('[{"a": 1, "a": 2}]', ONE_LIST),
])
def test_a_key_given_twice_is_a_problem_not_its_last_value(text, schema):
    # Python's json keeps the last value: writeFile with "overwrite": false, then true, replaced the file.
    problem = read_arguments(text, schema)
    assert isinstance(problem, Problem) and "more than once" in problem.message, problem


def test_write_file_with_overwrite_given_twice_keeps_the_file(tmp_path):
    from tinyagent import Action, ToolRegistry
    from tinyagent.toolkit.workspace_files import workspace_tools

    registry = ToolRegistry(workspace_tools(tmp_path))
    (tmp_path / "notes.txt").write_text("kept", encoding="utf-8")
    result = registry.run(Action("writeFile", '{"file_path": "notes.txt", "content": "q", "overwrite": false, '
                                              '"overwrite": true}'))
    assert result.error and "'overwrite' more than once" in result.text
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "kept"
