"""Wrong answers to lessons 21, 23 and 25's exercises that an audit found passing or told the wrong thing: a grammar
that lets full-width or accented characters through, ids_seen that re-dumps JSON, an Observation tested after NFKC,
a rain word read wrong and blamed on the hours, a hint about a skipped message that skipped none, a scope told about
copy.copy it never used, and a tool list in a format of its own read as listing nothing. Each now fails and says
what is wrong (or, where it met the spec, passes), and each lesson's solution still passes."""

from __future__ import annotations

import json
import re
import unicodedata

import pytest

from tests.test_exercises import failure, passes
from tinyagent import ToolRegistry
from tinyagent.checks import (
    check_ids_from_customer,
    check_ids_seen,
    check_rains_during,
    check_scoped_registry,
    check_tracking_grammar,
)
from tinyagent.registry import ToolResult, error_observation


# -- 21, exercises 1 and 2 ---------------------------------------------------------------------------
def scope(registry, names):  # the solution of exercise 1
    class Scoped(ToolRegistry):
        def _run(self, action):
            name = action.tool_name if action is not None else None
            name = name.strip() if isinstance(name, str) else ""
            if name in registry and name not in names:
                return ToolResult(error_observation(f"tool {name} is not available here: use one of "
                                                    f"{', '.join(names)}"), error=True)
            return super()._run(action)

    return Scoped([registry.get(name) for name in names])


RAIN_WORDS = ("rain", "shower", "storm", "drizzle", "雨")


def rains_during(meeting, forecast, rainy=lambda said: any(word in said for word in RAIN_WORDS)):
    """The solution of exercise 2; `rainy(said)` decides a condition's words (lower-cased, both languages)."""
    start, end = int(meeting["start"][:2]), int(meeting["end"][:2])
    if meeting["end"][3:5] != "00":
        end += 1
    for hour in forecast["hours"]:
        if start <= int(hour["hour"][:2]) < end:
            said = f"{hour.get('condition', '')} {hour.get('condition_zh', '')}".lower()
            if rainy(said):
                return True
    return False


RAIN_RULE = "the spec says: rain is a condition with rain, shower, storm or drizzle in it, or 雨 in `condition_zh`"


@pytest.mark.parametrize("rainy, hint", [
    # whole words: thundershowers and thunderstorm are missed
    (lambda said: any(word in said.split() for word in RAIN_WORDS), "('thunderstorm' holds storm, inside a longer word)"),
    # the first word only: light drizzle is missed
    (lambda said: bool(said.split()) and said.split()[0] in RAIN_WORDS, "Each word alone is rain"),
    # cloudy taken for rain
    (lambda said: any(word in said for word in (*RAIN_WORDS, "cloud")), "overcast/阴 and cloudy/多云 say none"),
])
def test_21_a_rain_word_read_wrong_is_blamed_on_the_rain_rule_not_the_hours(rainy, hint):
    said = failure(check_rains_during, lambda meeting, forecast: rains_during(meeting, forecast, rainy))
    assert RAIN_RULE in said, said
    assert hint in said, said
    assert passes(check_rains_during, rains_during)


def test_21_a_scope_that_empties_the_registry_itself_is_not_told_about_copy_copy():
    def in_place(registry, names):
        for name in list(registry.names):
            if name not in names:
                del registry._tools[name]
        return registry

    said = failure(check_scoped_registry, in_place)
    assert "scope changed the registry it was given, and returned it: take no tool out of registry" in said, said
    assert "copy.copy" not in said, said
    assert passes(check_scoped_registry, scope)


def test_21_a_tool_list_in_its_own_format_is_read_as_it_is():
    def own_format(listing_all):
        def answer(registry, names):
            class Listed(type(scope(registry, names))):
                def build_tool_list(self, lang=None):
                    return "".join(f"- {tool.name}: {tool.describe(lang)}\n" for tool in (registry if listing_all
                                                                                           else self))
            return Listed([registry.get(name) for name in names])
        return answer

    # the spec names no format: a line per named tool, in the order of names, is what it asks
    assert passes(check_scoped_registry, own_format(listing_all=False))
    said = failure(check_scoped_registry, own_format(listing_all=True))
    assert "shows only the named tools" in said, said
    assert "got \"lists ['queryOrder', 'queryLogis" in said, said


# -- 23, exercises 1 and 2 ---------------------------------------------------------------------------
@pytest.mark.parametrize("grammar, allowed", [
    ("root ::= [A-ZＡ-Ｚ]{2} [0-9]{10}", "'ＳＦ1234567890'"),
    ("root ::= [A-Z]{2} [0-9０-９]{10}", "'SF１２３４５６７８９０'"),
    ("root ::= [A-ZÀ-Þ]{2} [0-9]{10}", "'ÉÀ1234567890'"),
])
def test_23_a_grammar_that_allows_full_width_or_accented_characters_fails(grammar, allowed):
    said = failure(check_tracking_grammar, grammar)
    assert "the two letters are capitals from A to Z (not É, not a full-width Ｓ), the ten digits 0 to 9" in said, said
    assert f"It allows {allowed}: A-Z and 0-9 only" in said, said
    assert passes(check_tracking_grammar, "root ::= [A-Z] [A-Z] [0-9]{10}")


def ids_seen(messages, example, shape_of=None):  # the solution of exercise 2; `shape_of`: the word the shape is made of
    shape = "".join("[A-Z]" if ch.isalpha() else "[0-9]" for ch in (shape_of or example))
    word = re.compile(rf"(?<![A-Za-z0-9])(?<![0-9][.]){shape}(?![A-Za-z0-9])(?![.][0-9])", re.IGNORECASE)
    found = []
    for message in messages:
        if message["role"] != "user":
            continue
        text = unicodedata.normalize("NFKC", message["content"])
        for match in word.finditer(text):
            if match.group().upper() not in found:
                found.append(match.group().upper())
    return found


def test_23_json_written_again_with_json_dumps_fails():
    def redumped(messages, example):
        read = []
        for message in messages:
            try:
                read.append({**message, "content": json.dumps(json.loads(message["content"]))})
            except ValueError:
                read.append(message)
        return ids_seen(read, example)

    said = failure(check_ids_seen, redumped)
    assert "the spec says: each user message read as text, JSON or not" in said, said
    assert "It missed ['88231'] in JSON text: read the text as it came (json.dumps writes 订 as \\u8ba2" in said, said
    assert passes(check_ids_seen, ids_seen)


@pytest.mark.parametrize("answer", [
    lambda messages, example: ids_seen(messages, example, shape_of="SF1234567890"),  # the shape written in
    lambda messages, example: ids_seen(messages[1:], example),  # the first message skipped
])
def test_23_an_answer_that_finds_no_id_is_not_told_it_skipped_a_message(answer):
    said = failure(check_ids_seen, answer)
    assert "got [] It found none, though spaces part them: read every user message (the customer's messages, the " \
           "first too), and make the shape from example." in said, said
    assert "It skipped a user message" not in said, said
    assert passes(check_ids_seen, ids_seen)


# -- 25, exercise 2 ----------------------------------------------------------------------------------
def ids_from_customer(messages, is_observation=lambda text: text.startswith("Observation:")):
    """The solution of exercise 2; `is_observation(content)` decides which user messages are Observations."""
    found = []
    for message in messages:
        if message["role"] != "user" or is_observation(message["content"]):
            continue
        text = unicodedata.normalize("NFKC", message["content"])
        for one in re.findall(r"(?<![A-Za-z0-9])(?<![0-9][.])[0-9]{5}(?![A-Za-z0-9])(?![.][0-9])", text):
            if one not in found:
                found.append(one)
    return found


@pytest.mark.parametrize("is_observation, hint", [
    (lambda text: unicodedata.normalize("NFKC", text).startswith("Observation:"),
     "Test for Observation: in the text as sent, before NFKC: 'Ｏｂｓｅｒｖａｔｉｏｎ:' is no label"),
    (lambda text: text.startswith(("Observation:", "观察")),
     "An Observation starts with exactly Observation: (no space first or before the colon, that case), in English"),
    (lambda text: re.match(r"Observation\s*:", text) is not None,  # "Observation :" taken for the label
     "An Observation starts with exactly Observation: (no space first or before the colon, that case), in English"),
])
def test_25_a_label_that_only_looks_like_observation_is_the_customers(is_observation, hint):
    said = failure(check_ids_from_customer, lambda messages: ids_from_customer(messages, is_observation))
    assert "the spec says: an Observation starts with Observation:" in said, said
    assert hint in said, said
    assert passes(check_ids_from_customer, ids_from_customer)
