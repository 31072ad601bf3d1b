"""Wrong answers to lessons 08 and 24's exercises that an audit found passing or told the wrong thing: an error object
found with a regex (broken JSON, or "error" one level down, passed as it came), a "one of [...]" line blamed on the
tool list's lines, a blob's base64 read with validate=True (its line breaks refused), a mimeType of null shown, a clash
looked for among neighbouring servers only and blamed on the names kept, and a tool's name lowercased and blamed on the
server's. Each now fails and says what is wrong, and each lesson's solution still
passes."""

from __future__ import annotations

import base64
import json
import re
from collections import Counter

from tests.test_exercises import (
    _content_text,
    _merge_solution,
    _observation_solution,
    _part_text,
    _shown_value,
    failure,
    lean_prompt,
    passes,
)
from tinyagent.checks import check_lean_prompt, check_merged_names, check_observation_from_result
from tinyagent.registry import error_observation


# -- 08, exercise 1 ----------------------------------------------------------------------------------
def with_one_of_line(names_of):
    """The solution's prompt and a line "Action is one of [...]" naming `names_of(tools)`."""
    def lean(tools):
        return lean_prompt(tools) + f"Action is one of [{', '.join(names_of(tools))}]\n"
    return lean


def test_08_a_one_of_line_naming_other_tools_is_named_not_the_list():
    shops_tools = with_one_of_line(lambda tools: ["queryOrder", "queryLogistics", "applyRefund", "searchKnowledge",
                                                  "getCurrentTime"])
    message = failure(check_lean_prompt, shops_tools)
    assert "with two other tools, your line 'Action is one of [queryOrder" in message, message
    assert "tells a tool-list reader which names are tools" in message, message
    assert "expected ['checkStock', 'getCurrentTime']: build that line from `tools` too, or leave it out" in message
    assert "is in no shape it reads" not in message, message

    first_only = with_one_of_line(lambda tools: [tool.name for tool in tools][:1])
    message = failure(check_lean_prompt, first_only)
    assert "with the shop's tools, your line 'Action is one of [queryOrder]' tells a tool-list reader" in message
    assert "is in no shape it reads" not in message, message

    # right on the fixed registries, whose names have no underscore; wrong on the generated ones
    no_underscores = with_one_of_line(lambda tools: [tool.name for tool in tools if "_" not in tool.name])
    message = failure(check_lean_prompt, no_underscores)
    assert 'expected the spec held, got its "one of [...]" line names other tools' in message, message

    def one_of_from_tools(tools):  # a right "one of" line: built from `tools`, as the list is
        listed = "".join(f"{tool.name}: {tool.describe('en')}\n" for tool in tools)
        return (listed + f"Action: one of [{', '.join(tool.name for tool in tools)}]\nAction Input: ...\n"
                "Stop there: the Observation comes back.\nThought: ...\nFinal Answer: ...\n")

    assert passes(check_lean_prompt, one_of_from_tools)
    assert passes(check_lean_prompt, lean_prompt)


# -- 24, exercise 1 ----------------------------------------------------------------------------------
def joined(result):
    return _content_text(result.get("content", []))


def regex_error_object(result):  # the error object found with a regex, not json.loads
    text = joined(result)
    if result.get("isError") is True and not re.fullmatch(r'\s*\{.*"error"\s*:.*\}\s*', text, re.DOTALL):
        return error_observation(text or "the tool failed and said nothing")
    return text


def has_error_key(value) -> bool:  # the key "error" at any depth
    if isinstance(value, dict):
        return "error" in value or any(has_error_key(item) for item in value.values())
    return isinstance(value, list) and any(has_error_key(item) for item in value)


def error_key_anywhere(result):  # json.loads, then the key "error" looked for at any depth of the object
    text = joined(result)
    if result.get("isError") is True:
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if not (isinstance(value, dict) and has_error_key(value)):
            return error_observation(text or "the tool failed and said nothing")
    return text


def test_24_an_error_text_json_loads_cannot_read_is_no_error_object():
    sentence = ('the spec says: a text json.loads cannot read ({"error": oops}), or with "error" one level down, is '
                "no error object: error_observation(text)")
    message = failure(check_observation_from_result, regex_error_object)
    assert sentence in message, message
    assert "json.loads cannot read it, so it is no JSON object (whatever it says): error_observation(text)." in message

    message = failure(check_observation_from_result, error_key_anywhere)
    assert sentence in message, message
    assert '{"result": ' in message, message
    assert 'Its "error" is inside another key, not the object\'s own: error_observation(text).' in message

    assert passes(check_observation_from_result, _observation_solution)


# -- 24, exercise 2 ----------------------------------------------------------------------------------
def blob_read(size=lambda blob: f"{len(base64.b64decode(blob))} bytes", mime=lambda resource: resource.get("mimeType")):
    """The solution of 24's exercise 1, a blob's size said by `size(blob)` and its mimeType shown where `mime(resource)`
    is true."""
    def part_text(part):
        resource = part.get("resource") or {}
        if part["type"] != "resource" or "blob" not in resource:
            return _part_text(part)
        said = [_shown_value(resource["uri"]),
                *([f"mimeType: {_shown_value(resource['mimeType'])}"] if mime(resource) else [])]
        try:
            said.append(size(resource["blob"]))
        except ValueError:
            said.append("not valid base64")
        return f"[resource {', '.join([*said, 'not shown'])}]"

    return lambda result: _observation_solution(result, part_text)


def test_24_a_blob_with_line_breaks_is_read_as_b64decode_reads_it():
    # validate=True refuses the line breaks base64.encodebytes writes every 76 characters (and a MIME mail's \r\n),
    # which b64decode skips: it passed, as every generated blob was written by b64encode, on one line
    strict = blob_read(size=lambda blob: f"{len(base64.b64decode(blob, validate=True))} bytes")
    said = failure(check_observation_from_result, strict)
    assert "the spec says: a blob's <n> is len(base64.b64decode(blob)): its line breaks (base64.encodebytes writes " \
           "them) are skipped" in said, said
    assert "b64decode(blob) skips line breaks (validate=False, its default): not validate=True." in said, said
    assert passes(check_observation_from_result, _observation_solution)


def test_24_a_mime_type_of_null_is_none():
    # "mimeType": null is a resource with no mimeType: it passed shown as "mimeType: None", no blob having a null one
    said = failure(check_observation_from_result,
                   blob_read(mime=lambda resource: "mimeType" in resource and resource["mimeType"] != ""))
    assert 'the spec says: a blob with no mimeType (or "") leaves "mimeType: …" out' in said, said
    assert "A value missing or empty is left out, and its key with it." in said, said


def neighbours_only(offers):  # a clash looked for on the servers next to each one only
    servers = list(offers)
    merged = []
    for n, server in enumerate(servers):
        neighbours = [offers[servers[i]] for i in (n - 1, n + 1) if 0 <= i < len(servers)]
        merged += [f"{server}_{name}" if any(name in names for names in neighbours) else name
                   for name in offers[server]]
    return merged


def test_24_a_clash_between_servers_far_apart_is_told_the_clash_sentence():
    message = failure(check_merged_names, neighbours_only)
    assert "the spec says: a name that two or more servers offer is kept by none of them" in message, message
    assert "a name only one server offers is kept as it is" not in message, message
    assert passes(check_merged_names, _merge_solution)


def prefixed_with(server_of, name_of):
    def merge(offers):
        servers = Counter(name for names in offers.values() for name in set(names))
        return [name if servers[name] == 1 else f"{server_of(server)}_{name_of(name)}"
                for server, names in offers.items() for name in names]
    return merge


def test_24_a_name_lowercased_is_told_whose_name_it_changed():
    tool_lowered = prefixed_with(str, str.lower)
    message = failure(check_merged_names, tool_lowered)
    assert "keep the tool's name as it is given: getForecast, not getforecast." in message, message
    assert "use the server's name" not in message, message

    server_lowered = prefixed_with(str.lower, str)
    message = failure(check_merged_names, server_lowered)
    said = re.search(r"use the server's name as it is given: (\S+), not (\S+)\.", message)
    assert said and said[1] != said[2] and said[1].lower() == said[2], message

    both_lowered = prefixed_with(str.lower, str.lower)
    message = failure(check_merged_names, both_lowered)
    assert "keep the tool's name as it is given: getForecast, not getforecast." in message, message

    assert passes(check_merged_names, prefixed_with(str, str))
    assert passes(check_merged_names, _merge_solution)
