"""Lessons 22 to 25: a tracking-number grammar with a mark allowed at one place, or an extra alternative beside the
number (a word, a long run of letters or digits, both counts wrong) passed; a merge that lower-cased the server's name
passed; and a few failures quoted a hint that named another mistake. Each wrong answer fails with a message that
names the mistake; the solutions still pass."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

import pytest

from tests.test_exercises import (
    TRACKING_SOLUTION,
    _fence_solution,
    _ids_from_customer_solution,
    _ids_seen_solution,
    _merge_solution,
    fails,
    passes,
)
from tinyagent.checks import (
    check_fence,
    check_ids_from_customer,
    check_ids_seen,
    check_merged_names,
    check_tracking_grammar,
)


# -- 23, exercise 1: a mark at any place, an extra alternative --------------------------------------------------------
@pytest.mark.parametrize("grammar, allowed", [
    ('[A-Z] "-"? [A-Z] [0-9]{10}', "-"),  # between the letters
    ("[A-Z] [_]? [A-Z] [0-9]{10}", "_"),
    ("[A-Z]{2} [0-9]{5} [.]? [0-9]{5}", "."),  # among the digits, at every place
    *((f"[A-Z]{{2}} [0-9]{{{k}}} [ ]? [0-9]{{{10 - k}}}", " ") for k in (1, 2, 3, 6, 7, 8, 9)),
])
def test_23_grammar_with_a_mark_at_one_place_fails(grammar, allowed):
    fails(check_tracking_grammar, f"root ::= {grammar}",
          says="the spec says: nothing between or instead: no space, dash or other mark among the two letters and "
               "ten digits")
    fails(check_tracking_grammar, f"root ::= {grammar}", says=f"{allowed}")


@pytest.mark.parametrize("extra, says", [
    ('"unknown"', "Smallest failing input: 'unknown'"),
    ('"N/A"', "Smallest failing input: 'N/A'"),
    ("[A-Z]{5,}", "nothing else at all: no word"),  # letters alone, five and more
    ("[0-9]{21,}", "nothing else at all: no word"),  # digits alone, twenty-one and more
    ("[0-9]{30}", "nothing else at all: no word"),
    ("[A-Z]{2} [0-9]{13,}", "It allows 2 letters and 13 digits: exactly two and ten."),
    ("[A-Z]{3} [0-9]{9}", "It allows 3 letters and 9 digits: exactly two and ten."),  # both counts wrong
    ("[A-Z]{4} [0-9]{10}", "It allows 4 letters and 10 digits: exactly two and ten."),
    ("[a-z]{2} [0-9]{9}", "It allows 2 lower-case letters and 9 digits: exactly two capitals and ten."),
])
def test_23_grammar_with_an_extra_alternative_fails(extra, says):
    fails(check_tracking_grammar, f"root ::= [A-Z]{{2}} [0-9]{{10}} | {extra}", says=says)


def test_23_tracking_solution_still_passes():
    assert passes(check_tracking_grammar, TRACKING_SOLUTION)
    assert passes(check_tracking_grammar, "root ::= [A-Z]{2} [0-9]{10}")
    assert passes(check_tracking_grammar, 'root ::= [A-Z] [A-Z] d{10}\nd ::= "0"|"1"|"2"|"3"|"4"|"5"|"6"|"7"|"8"|"9"')


# -- 23, exercise 2: hints that name the mistake ---------------------------------------------------------------------
def _ids_seen_with(pattern_before: str, pattern_after: str):
    def ids_seen(messages, example):
        shape = "".join("[A-Z]" if ch.isalpha() else "[0-9]" for ch in example)
        found = []
        for message in messages:
            if message["role"] != "user":
                continue
            text = unicodedata.normalize("NFKC", message["content"])
            for word in re.findall(pattern_before + shape + pattern_after, text, re.IGNORECASE):
                if word.upper() not in found:
                    found.append(word.upper())
        return found
    return ids_seen


def test_23_ids_seen_hints_name_the_mistake():
    assert passes(check_ids_seen, _ids_seen_solution)
    # a comma taken for a decimal point (a full-width ， too): not "any letter A-Z in a letter's place"
    comma_a_point = _ids_seen_with(r"(?<![A-Za-z0-9])(?<![0-9][.,])", r"(?![A-Za-z0-9])(?![.,][0-9])")
    fails(check_ids_seen, comma_a_point, says="A comma is no decimal point (nor ，): it ends a word")

    cache = {}

    def cached_by_example(messages, example):  # the first conversation's ids, for every one with this example
        return cache.setdefault(example, _ids_seen_solution(messages, example))

    fails(check_ids_seen, cached_by_example, says="It returned an id that none of these messages holds: it keeps "
                                                  "something between calls")

    def every_time(messages, example):  # an id once for each time it is said
        return [one for message in messages if message["role"] == "user"
                for one in _ids_seen_solution([message], example)]

    fails(check_ids_seen, every_time, says="Each id once. An id said twice is given once, where it first appears.")


# -- 24, exercise 2: the server's name as given ----------------------------------------------------------------------
def test_24_merge_keeps_the_servers_name_as_given():
    assert passes(check_merged_names, _merge_solution)

    def server_lower_cased(offers):
        servers_of = Counter(name for names in offers.values() for name in set(names))
        return [name if servers_of[name] == 1 else f"{server.lower()}_{name}" for server, names in offers.items()
                for name in names]

    fails(check_merged_names, server_lower_cased,
          says="the spec says: <server> is the server's name as it is given (GitHub_search, KB-2_search)")
    fails(check_merged_names, server_lower_cased, says="use the server's name as it is given: GitHub, not github")


def test_24_merge_prefixing_every_name_is_told_to_keep_names_one_server_offers():
    fails(check_merged_names, lambda offers: [f"{server}_{name}" for server, names in offers.items() for name in names],
          says="a name only one server offers is kept as it is: prefix only the names two servers offer.")


# -- 22, exercise 1: a read-only tool made to wait for queryOrder ----------------------------------------------------
def test_22_read_only_tools_made_to_wait_are_told_so():
    from tinyagent.architectures.tree_search import shop_rule
    from tinyagent.checks import check_shop_rule

    def every_tool_waits(candidate):  # read_only ignored: every tool but queryOrder waits for it
        if candidate.tool_name not in (None, "queryOrder") and all(t != "queryOrder" for t, _ in candidate.history):
            return 0.0
        return shop_rule(candidate)

    assert passes(check_shop_rule, shop_rule)
    fails(check_shop_rule, every_tool_waits, says="a read-only tool never waits for queryOrder (only read_only False "
                                                  "does)")


# -- 25: the tags' case, and ids that start with another digit -------------------------------------------------------
def test_25_fence_tags_in_capitals_are_told_their_case():
    assert passes(check_fence, _fence_solution)

    def capital_tags(text, source):
        return _fence_solution(text, source).replace("<data ", "<DATA ").replace("</data>", "</DATA>")

    fails(check_fence, capital_tags, says='The tags are lower case, as written: <data source="..."> and </data>.')


def test_25_ids_of_one_first_digit_only_are_told_what_they_missed():
    assert passes(check_ids_from_customer, _ids_from_customer_solution)

    def eights_only(messages):
        return [one for one in _ids_from_customer_solution(messages) if one.startswith("8")]

    fails(check_ids_from_customer, eights_only, says="expected ['79584'], got [] It missed ['79584']: any five digits")
