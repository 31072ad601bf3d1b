"""Wrong answers to lessons 13, 14, 15, 19, 20, 23 and 25's exercises that an audit found passing or told the wrong
thing: NaN told apart as "state", a refused 2 ** 100 with no word of the limit, an event name left unstripped and
blamed on lstrip, an event name handed on from a block without data (blamed on case), a Responses output stripped,
the label lstrip()ped as letters and the whole prompt's lines stripped before they are read, grammars that let a letter
stand in a digit's place, ids sorted, missed in Observations or repeated (told under another rule's sentence), ids
read only beside some marks, and the customer's first message skipped as if it were the system prompt (told that it
was read as an Observation). Each now fails and says what is wrong, and each lesson's solution still passes."""

from __future__ import annotations

import re
import unicodedata

import pytest

from tests.test_exercise_audit_21_23_25 import ids_from_customer
from tests.test_exercises import (
    _ids_seen_solution,
    _observations_in_with,
    _solution_20_observations_in,
    _text_of,
    failure,
    fold_logistics,
    passes,
    read_chunks,
    read_events_with,
    safe_eval,
    trim_to_budget,
)
from tinyagent.checks import (
    check_fold_logistics,
    check_ids_from_customer,
    check_ids_seen,
    check_observations_in,
    check_read_chunks,
    check_safe_eval,
    check_sse_reader,
    check_tracking_grammar,
    check_trim_to_budget,
)


# -- 13 and 14: an answer that returns NaN is told what it should return, not that it keeps state --------------
@pytest.mark.parametrize("check, solution, says", [
    (check_read_chunks, read_chunks, "it returned nan: return (text, finish_reason, usage), a tuple"),
    (check_fold_logistics, fold_logistics, "returned a float each time it should return a str"),
    (check_trim_to_budget, trim_to_budget, "returned a float each time it should return a list"),
])
def test_13_14_nan_returned_is_named_as_the_wrong_kind_of_value(check, solution, says):
    said = failure(check, lambda *given: float("nan"))
    assert says in said and "looks the same" not in said and "_NotATriple" not in said, said
    assert passes(check, solution)


# -- 15, exercise 1 ----------------------------------------------------------------------------------
def test_15_an_exponent_of_100_refused_is_told_the_limit():
    def refuses_100(text):  # `>= 100` for `> 100`: 2 ** 100 and 2 ** -100 refused
        if re.search(r"\*\*\s*\(?\s*-?\s*100(?![0-9.])", text):
            raise ValueError("the exponent is too big")
        return safe_eval(text)

    said = failure(check_safe_eval, refuses_100)
    assert "an exponent of 100 or less in size: 2 ** 100 and 2 ** -100 too" in said, said
    assert passes(check_safe_eval, safe_eval)


# -- 19, exercise 1 ----------------------------------------------------------------------------------
def test_19_an_event_name_left_unstripped_is_told_to_strip_not_blamed_on_lstrip():
    for unstripped in (lambda line: line[len("event:"):] or "message", lambda line: line[len("event:"):]):
        said = failure(check_sse_reader, read_events_with(name_in=unstripped))
        assert "strip every space and tab around it" in said and "lstrip" not in said, said
    # lstrip('event:') is still named where its reading is not the unstripped one's
    said = failure(check_sse_reader, read_events_with(name_in=lambda line: line.lstrip("event:").strip() or "message"))  # noqa: B005
    assert "lstrip('event:') strips those letters, not the prefix" in said, said


def test_19_a_name_kept_from_a_block_without_data_is_told_so_not_blamed_on_case():
    def name_carried(text):  # the name reset only once an event is made: a block with no data hands it on
        events, name = [], "message"
        for block in re.sub(r"\r\n|\r", "\n", text).split("\n\n"):
            data = []
            for line in block.split("\n"):
                if line.startswith("event:"):
                    name = line[len("event:"):].strip() or "message"
                elif line.startswith("data:"):
                    data.append(line[len("data:"):].removeprefix(" "))
            if data:
                events.append((name, "\n".join(data)))
                name = "message"
        return events

    said = failure(check_sse_reader, name_carried)
    assert "the spec says: a block with an event: line but no data: line gives no event ('event: ping' alone is " \
           "none), and names no block after it" in said, said
    assert "its event: line names only that block" in said and "case" not in said, said
    assert passes(check_sse_reader, read_events_with())

# -- 20, exercise 1 ----------------------------------------------------------------------------------
def test_20_a_responses_output_stripped_fails():
    def outputs_stripped(body):  # the solution, with each function_call_output's output stripped
        items = [dict(item, output=item["output"].strip()) if item.get("type") == "function_call_output"
                 and isinstance(item.get("output"), str) else item for item in body.get("input", [])]
        return _solution_20_observations_in(dict(body, input=items) if "input" in body else body)

    said = failure(check_observations_in, outputs_stripped)
    assert "the spec says: the Responses API's input: each function_call_output item's output" in said, said
    assert passes(check_observations_in, _solution_20_observations_in)


@pytest.mark.parametrize("chars", ["Observation:", "Observation: "])
def test_20_the_label_lstripped_as_letters_fails(chars):
    # str.lstrip takes a set of characters: it strips the label, then a result's first letters if they are the
    # label's too (order, no, in transit); it passed, as every generated result began with {, R or Chinese
    lstripped = _observations_in_with(cut=lambda text: text.lstrip(chars), line_cut=lambda line: line.lstrip(chars))
    said = failure(check_observations_in, lstripped)
    assert "the spec says: the label is cut once, as a prefix" in said, said
    assert "lost its first letters: lstrip() strips any of the label's letters, not the label. Cut " \
           "len('Observation:') characters, then strip." in said, said
    assert passes(check_observations_in, _solution_20_observations_in)


def test_20_the_whole_prompt_read_with_its_lines_stripped_fails():
    def lines_stripped(text):  # the whole prompt's lines stripped before they are looked at: an indented one read
        lines = [line.strip() for line in text.splitlines()]
        last = max(n for n, line in enumerate(lines) if line.startswith("Question:"))
        return [line[len("Observation:"):] for line in lines[last:] if line.startswith("Observation:")]

    stripped = _observations_in_with(prompt_reader=lambda scratchpad: [])

    def read(body):  # the solution, but for a user message holding the whole prompt
        if "messages" not in body:
            return stripped(body)
        found = []
        for message in body["messages"]:
            text = _text_of(message.get("content")).strip()
            whole = message.get("role") == "user" and not text.startswith("Observation:") and any(
                line.strip().startswith("Question:") for line in text.splitlines())
            found += lines_stripped(text) if whole else stripped({"messages": [message]})
        return [one.strip() for one in found]

    said = failure(check_observations_in, read)
    assert "the spec says: the whole prompt: only lines that start with Question: or Observation: are those lines" \
           in said, said
    assert "An indented line is no Question: or Observation: line: do not strip() the lines." in said, said
    assert passes(check_observations_in, _solution_20_observations_in)

# -- 23, exercise 1 ----------------------------------------------------------------------------------
@pytest.mark.parametrize("grammar", [
    "root ::= [A-Z]{2} [0-9]{9} [0-9A-Z]",  # a letter allowed in the last digit's place
    "root ::= [A-Z]{2} [0-9A-F]{10}",  # hexadecimal digits
    "root ::= [A-Z]{2} [0-9]{10} | [A-Z] [0-9] [A-Z] [0-9]{9}",  # the second letter and the first digit swapped
    "root ::= [A-Z]{2} [0-9]{10} | [0-9] [A-Z]{2} [0-9]{9}",  # a digit before the letters
])
def test_23_a_grammar_with_a_letter_in_a_digits_place_fails(grammar):
    said = failure(check_tracking_grammar, grammar)
    assert "the ten digits 0 to 9" in said and "expected 'refused'" in said, said
    assert passes(check_tracking_grammar, "root ::= [A-Z] [A-Z] [0-9]{10}")


# -- 23, exercise 2 ----------------------------------------------------------------------------------
def _every_id(messages, example):  # the solution, each id as often as it is written
    found = []
    for message in messages:
        found += [one for one in _ids_seen_solution([message], example) for _ in range(
            unicodedata.normalize("NFKC", message["content"]).upper().count(one))]
    return found


@pytest.mark.parametrize("answer, sentence, hint", [
    (lambda messages, example: sorted(_ids_seen_solution(messages, example)), "and the Observations, in order",
     "Keep the order they first appear in."),
    (lambda messages, example: _ids_seen_solution(
        [m for m in messages if not m["content"].startswith("Observation:")], example),
     "in the customer's messages and the Observations", "ids come from every Observation too."),
    (_every_id, "each once, in the order they first appear", "Each id once."),
])
def test_23_ids_in_another_order_missed_in_observations_or_repeated_are_told_by_their_sentence(answer, sentence, hint):
    # each failed under a sentence about another thing (the words' shape, or whose messages count) with the right hint
    said = failure(check_ids_seen, answer)
    assert sentence in said.split("ids_seen(messages, example) does not hold to it")[0], said
    assert hint in said, said
    assert passes(check_ids_seen, _ids_seen_solution)

# -- 25, exercise 2 ----------------------------------------------------------------------------------
@pytest.mark.parametrize("joined", ["-/", "【】", "、", "\"'", "|"])
def test_25_ids_read_only_beside_some_marks_fail(joined):
    word = re.escape(joined)

    def marks_as_letters(messages):  # the solution, with `joined` taken for part of a word, as a letter is
        found = []
        for message in messages:
            if message["role"] != "user" or message["content"].startswith("Observation:"):
                continue
            text = unicodedata.normalize("NFKC", message["content"])
            for one in re.findall(rf"(?<![A-Za-z0-9{word}])(?<![0-9][.])[0-9]{{5}}(?![A-Za-z0-9{word}])(?![.][0-9])",
                                  text):
                if one not in found:
                    found.append(one)
        return found

    said = failure(check_ids_from_customer, marks_as_letters)
    assert "a word ends at anything that is not a Latin letter or a digit" in said, said
    assert "A word ends at any mark that is not a Latin letter or digit: an id beside one counts." in said, said
    assert passes(check_ids_from_customer, ids_from_customer)


def test_25_the_first_message_skipped_as_the_system_prompt_is_told_so():
    # messages[0] taken for the system prompt: every generated conversation but the label rule's began with one, so it
    # failed there, told that 'OBSERVATION: 88236' was read as an Observation
    said = failure(check_ids_from_customer, lambda messages: ids_from_customer(messages[1:]))
    assert "the spec says: the five-digit ids the customer wrote" in said, said
    assert "It skipped the first message: it is the customer's here (there is no system prompt)" in said, said
    assert "Observation" not in said, said
