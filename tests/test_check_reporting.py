"""How a failing exercise check shows in a notebook (tinyagent/checks/reporting.py): one short message, no
traceback into the package, and the cell still fails. A learner's code that raises, or lacks a method, is
reported as such; the check's own bug is not disguised as the learner's."""

from __future__ import annotations

import contextlib
import io
import json
import re

import pytest

from tinyagent import checks
from tinyagent.checks import ExerciseFailed, check_cost_budget, check_first_and_last, check_invented_counter
from tinyagent.checks.generated import Rule, _expected_got, agree_on
from tinyagent.checks.lesson14_streaming import _pieces_of
from tinyagent.checks.reporting import (
    FAILURE_COLUMNS,
    FAILURE_LINES,
    _brief,
    _columns,
    _cut_middle,
    failure_lines,
    grades,
)

from .conftest import run_in_ipython

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def plain(lines: list[str]) -> list[str]:
    return [ANSI.sub("", line) for line in lines]


def test_a_short_failure_is_one_line_with_the_name_in_red():
    lines = failure_lines("Exercise 1: the order matters")
    assert lines == ["\x1b[1;31mExerciseFailed:\x1b[0m Exercise 1: the order matters"]


def test_a_long_failure_wraps_at_the_column_limit_counting_chinese_as_two():
    message = "Exercise 2: " + "退货政策的原文很长 " * 20
    lines = plain(failure_lines(message))
    assert 1 < len(lines) <= FAILURE_LINES
    assert all(_columns(line) <= FAILURE_COLUMNS for line in lines)
    # nothing lost in the wrapping: the words come back when the lines are joined
    assert " ".join(lines).split() == f"ExerciseFailed: {message}".split()


def test_a_word_wider_than_a_line_is_broken_not_left_over_long():
    lines = plain(failure_lines("Exercise 1: " + "z" * 250))
    assert all(_columns(line) <= FAILURE_COLUMNS for line in lines)
    assert "".join(lines).count("z") == 250


def test_a_failure_too_long_for_six_lines_is_cut_with_a_note():
    lines = plain(failure_lines("Exercise 1: start\n" + "\n".join(f"line {n}" for n in range(20))))
    assert len(lines) == FAILURE_LINES
    assert lines[-1].startswith("… (the rest is cut")
    assert lines[:2] == ["ExerciseFailed: Exercise 1: start", "line 0"]


def test_brief_cuts_long_values_in_the_middle_and_leaves_short_ones():
    assert _brief("Observation: x") == "'Observation: x'"
    long = _brief("a" * 50 + "\n" + "b" * 50, 40)
    assert _columns(long) <= 42 and long.startswith("'aaa") and long.endswith("bbb'") and " … " in long


def test_a_middle_cut_keeps_the_columns_it_is_given_at_each_end():
    # _brief and lesson 20's request outline both cut with it, each with its own proportions
    assert _cut_middle("abcdefghij", 3, 2) == "abc … ij"
    assert _cut_middle("订单号88231", 4, 3) == "订单 … 231"  # a Chinese character takes two columns
    assert _cut_middle("订单号88231", 5, 1) == "订单 … 1"  # a character that would pass the limit is left out


def test_expected_and_got_that_differ_only_where_cut_are_shown_from_the_difference():
    common = "七天无理由退货：签收后 7 天内，商品未使用可退。" * 3
    want, have = [common, "RF2026063000 submitted", "end"], [common, "RF2026063001 submitted", "end"]
    assert _brief(want, 50) == _brief(have, 50)  # the difference is in the part the usual cut leaves out
    shown = _expected_got(want, have)
    assert "RF2026063000" in shown and "RF2026063001" in shown, shown
    assert shown.startswith("expected …") and _columns(shown) < 2 * 50 + 30, shown
    # values that differ where the usual cut shows them keep the usual form
    assert _expected_got(["a"], ["b"]) == "expected ['a'], got ['b']"

    class Summary:  # a value a check shows as a summary: the two read the same, and the message says they differ
        def __init__(self, items):
            self.items = items

        def __eq__(self, other):
            return self.items == other.items

        def __repr__(self):
            return f"{len(self.items)} messages"

    assert _expected_got(Summary([1, 2]), Summary([1, 3])) == "expected 2 messages, got 2 messages, not the same ones"


def test_ipython_shows_the_message_instead_of_a_traceback_and_the_cell_fails(capsys):
    result, shown = run_in_ipython("from tinyagent.checks import check_parcel_prediction\n"
                                   "check_parcel_prediction(['queryLogistics'])", capsys)
    assert not result.success and isinstance(result.error_in_exec, ExerciseFailed)
    lines = [line for line in plain(shown.splitlines()) if line.strip()]
    assert 1 <= len(lines) <= FAILURE_LINES, shown
    assert lines[0].startswith("ExerciseFailed: Exercise 1: queryLogistics needs a tracking number")
    assert "Traceback" not in shown and "tinyagent/" not in shown and "checks" not in shown


def test_a_check_stopped_in_a_notebook_names_the_input_the_learners_code_was_running_on(capsys):
    """Kernel > Interrupt while a check runs an answer that never returns: a failure that says which input it was
    running on (the generated inputs are otherwise unseen), not a traceback through the checks."""
    result, shown = run_in_ipython(
        "from tinyagent.checks import check_invented_counter\n"
        "def count_invented_observations(text):\n"
        "    if text.count('Observation:') > 1:\n"
        "        raise KeyboardInterrupt  # as Kernel > Interrupt does, on the input it would loop on\n"
        "    return text.count('\\nObservation:')\n"
        "check_invented_counter(count_invented_observations)", capsys)
    said = " ".join(shown.split())  # the message as one line, however it was wrapped
    assert isinstance(result.error_in_exec, ExerciseFailed), shown
    assert "you stopped the check while count_invented_observations(text) was running on 'Thought:" in said
    assert "look for a loop that does not end on that input" in said
    assert "Traceback" not in shown and "generated.py" not in shown and len(shown.strip().splitlines()) <= FAILURE_LINES


def test_a_check_stopped_in_a_notebook_through_the_plain_call_says_what_was_running(capsys):
    result, shown = run_in_ipython(
        "from tinyagent.checks import check_lean_prompt\n"
        "def lean_prompt(registry):\n"
        "    raise KeyboardInterrupt\n"
        "check_lean_prompt(lean_prompt)", capsys)
    assert isinstance(result.error_in_exec, ExerciseFailed), shown
    assert "you stopped the check while lean_prompt(<" in " ".join(shown.split()) and "Traceback" not in shown


def test_a_check_stopped_in_the_learners_code_it_calls_directly_names_their_function(capsys):
    result, shown = run_in_ipython(
        "from tinyagent.checks.reporting import grades\n"
        "def my_answer():\n"
        "    raise KeyboardInterrupt\n"
        "grades('Exercise 9')(lambda answer: answer())(my_answer)", capsys)
    said = " ".join(shown.split())
    assert isinstance(result.error_in_exec, ExerciseFailed), shown
    assert "Exercise 9: you stopped the check while your my_answer (line 3) was running. If it never returns, look " \
           "for a loop that does not end." in said, said


def test_outside_a_notebook_ctrl_c_still_stops_the_run():
    """pytest or a script: a KeyboardInterrupt is not turned into one failed check."""

    def count_invented_observations(text):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        check_invented_counter(count_invented_observations)


def test_a_learners_function_that_raises_is_named_with_its_line():
    def count_invented_observations(text):
        return text.count("\nObservation:") + undefined_name  # noqa: F821 - the learner's slip

    with pytest.raises(ExerciseFailed) as failure:
        check_invented_counter(count_invented_observations)
    assert "raised NameError: name 'undefined_name' is not defined" in str(failure.value)


def test_a_learners_class_without_the_method_the_check_calls_gets_a_message_that_says_so():
    class FirstAndLast:  # the learner named the method messages() instead of history()
        def __init__(self, last):
            self.last = last

        def messages(self, session):
            return []

    with pytest.raises(ExerciseFailed) as failure:
        check_first_and_last(FirstAndLast)
    assert str(failure.value) == ("Exercise 1: your FirstAndLast has no 'history', which the exercise asks for: "
                                  "give FirstAndLast a method or attribute history")


def test_a_learners_method_with_the_wrong_parameters_gets_a_message_that_says_so():
    class CostBudget:  # check(trace) forgotten: check(self) alone
        def __init__(self, yuan, input_price, output_price):
            pass

        def check(self):
            return None

    with pytest.raises(ExerciseFailed) as failure:
        check_cost_budget(CostBudget)
    assert "check(trace) raised TypeError" in str(failure.value) and "positional argument" in str(failure.value)


def test_an_exception_deep_in_the_learners_code_is_theirs_even_through_the_package():
    def answer(text):
        raise KeyError("orderId")

    with pytest.raises(ExerciseFailed) as failure:
        grades("Exercise 9")(_pieces_of_json)(answer)
    assert str(failure.value).startswith("Exercise 9: your code raised KeyError: 'orderId' (in answer, line")


def _pieces_of_json(fn):
    return json.loads(fn("x"))


def test_a_bug_in_the_check_itself_is_not_blamed_on_the_learner():
    # _pieces_of is the package's: with no learner code on the stack, its TypeError goes on as it is
    with pytest.raises(TypeError, match="NoneType"):
        grades("Exercise 9")(_pieces_of)(None, ())


def test_a_megabyte_long_failure_shows_at_once_cut_to_six_lines():
    # a learner's answer quoted whole in a message (one word, no spaces to wrap at) must not make the notebook wait
    lines = plain(failure_lines("Exercise 1: it returned '" + "x" * 10**6 + "': return True or False"))
    assert len(lines) == FAILURE_LINES and lines[-1].startswith("… (the rest is cut")
    assert all(_columns(line) <= FAILURE_COLUMNS for line in lines)


# -- every check, given answers of every form ----------------------------------------------------------------------
# Whatever a learner hands a check (a value where a function was asked for, a function that returns None or a
# number of the wrong kind, raises, takes no argument, or a class whose every method does so), the check fails it
# with a short message, never passes it and never raises into the package.
def _class_whose_methods_return(value):
    class Anything:
        def __init__(self, *args, **kwargs):
            pass

        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return self

        def __call__(self, *args, **kwargs):
            if value is ValueError:
                raise ValueError("boom")
            return value

    return Anything


def _raises(*args, **kwargs):
    raise ValueError("boom")


def _yields(*args, **kwargs):
    yield 1


def _deep(levels: int = 100_000) -> list:
    nested: list = []
    for _ in range(levels):
        nested = [nested]
    return nested


def _holding_itself() -> list:
    itself: list = []
    itself.append(itself)
    return itself


class _UnshownValue:
    """A value no failure can quote with repr(): its __repr__ returns no string."""

    def __repr__(self):
        return 42


class _UnsaidError(Exception):
    def __str__(self):
        return 42  # noqa: PLE0307 - the point: a message that is no string


def _raises_unsaid(*args, **kwargs):
    raise _UnsaidError()


def _returning(value):
    return lambda *args, **kwargs: value


HUGE_INT = 10**5000  # repr() refuses an int of more than 4,300 digits (ValueError)
# Values that break repr(), ==, or str() of an exception: a check quoting or comparing them must still fail them.
HOSTILE_VALUES = {"an int of 5,001 digits": HUGE_INT, "a list 100,000 deep": _deep(),
                  "a list that holds itself": _holding_itself(), "a value whose repr is no string": _UnshownValue()}


ANSWERS_OF_EVERY_FORM = {
    "the number 42": 42, "a string": "hello", "a list": [1, 2], "a dict": {"a": 1}, "True": True,
    "a function that raises": _raises, "a function returning None": lambda *args, **kwargs: None,
    "a function of no argument": lambda: 1, "a generator function": _yields,
    "a function returning a string": lambda *args, **kwargs: "x", "returning 0": lambda *args, **kwargs: 0,
    "returning [None]": lambda *args, **kwargs: [None], "returning [[1, 2, 3]]": lambda *args, **kwargs: [[1, 2, 3]],
    "returning a set": lambda *args, **kwargs: {1}, "returning NaN": lambda *args, **kwargs: float("nan"),
    "returning bytes": lambda *args, **kwargs: b"x", "returning an object": lambda *args, **kwargs: object(),
    "returning 10,000 characters": lambda *args, **kwargs: "x" * 10_000,
    **{f"a class whose methods return {value!r}": _class_whose_methods_return(value)
       for value in (None, "x", 0, [], ["x"], ValueError)},
    **{f"returning {name}": _returning(value) for name, value in HOSTILE_VALUES.items()},
    **{f"a class whose methods return {name}": _class_whose_methods_return(value)
       for name, value in HOSTILE_VALUES.items()},
    "raising an exception whose message is no string": _raises_unsaid, "the int of 5,001 digits itself": HUGE_INT,
}


@pytest.mark.parametrize("name", sorted(name for name in dir(checks) if name.startswith("check_")))
def test_every_check_fails_answers_of_every_form_with_a_short_message(name):
    check = getattr(checks, name)
    for form, answer in ANSWERS_OF_EVERY_FORM.items():
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            try:
                check(answer)
            except ExerciseFailed as failure:
                message = str(failure)
            else:
                raise AssertionError(f"{name} passed {form}: {printed.getvalue()!r}")
        shown = failure_lines(message)
        assert len(shown) <= FAILURE_LINES and "is cut" not in shown[-1], (form, message[:300])
        assert "tinyagent/" not in message, (form, message[:300])


# Two mistakes no rule of an exercise is about: a failure names them, not the first rule's sentence.
_EVENS = [Rule("the numbers ending in 0, 2, 4, 6 or 8, in order", lambda rng: [([1, 2, 3, 4],), ([10, 11],)]),
          Rule("an empty list gives an empty list", lambda rng: [([],)])]


def _evens(numbers: list[int]) -> list[int]:
    return [n for n in numbers if n % 2 == 0]


def test_an_answer_that_returns_none_for_every_input_is_told_to_return_its_answer():
    def prints(numbers):
        print(_evens(numbers))

    with contextlib.redirect_stdout(io.StringIO()), pytest.raises(ExerciseFailed) as failure:
        agree_on("Exercise 1", "check_evens", _EVENS, prints, _evens, call="evens(numbers)")
    assert str(failure.value) == ("Exercise 1: evens(numbers) returned None for every input, where a list was "
                                  "expected: return the answer (print only shows a value, and the function still "
                                  "returns None)")
    # None for some inputs only is a rule's failure, quoted as such.
    with pytest.raises(ExerciseFailed) as failure:
        agree_on("Exercise 1", "check_evens", _EVENS, lambda numbers: _evens(numbers) or None, _evens)
    assert "the spec says: an empty list gives an empty list" in str(failure.value)


def test_an_answer_of_another_kind_every_time_is_told_so_not_a_rule():
    # A tuple where a list belongs (a dict where JSON text does): every input fails, and the first rule's sentence
    # would send the learner to read a rule the answer follows.
    with pytest.raises(ExerciseFailed) as failure:
        agree_on("Exercise 1", "check_evens", _EVENS, lambda numbers: tuple(_evens(numbers)), _evens,
                 call="evens(numbers)")
    assert str(failure.value) == ("Exercise 1: evens(numbers) returned a tuple each time it should return a list. "
                                  "Smallest failing input: [10, 11]\nexpected [10], got (10,)")
    with pytest.raises(ExerciseFailed) as failure:
        agree_on("Exercise 1", "check_evens", _EVENS, lambda numbers: (n for n in _evens(numbers)), _evens)
    assert "returned a generator each time it should return a list" in str(failure.value)
    # Of the same kind, or right for some inputs: a rule's failure, quoted as such.
    with pytest.raises(ExerciseFailed) as failure:
        agree_on("Exercise 1", "check_evens", _EVENS, lambda numbers: list(numbers), _evens)
    assert str(failure.value).startswith("Exercise 1: the spec says: the numbers ending in 0, 2, 4, 6 or 8, in order")
    with pytest.raises(ExerciseFailed) as failure:
        agree_on("Exercise 1", "check_evens", _EVENS, lambda numbers: tuple(_evens(numbers)) or [], _evens)
    assert "the spec says: the numbers ending in 0, 2, 4, 6 or 8, in order" in str(failure.value)

    # A class of the learner's is named as it likes (lesson 11's Step for ParsedStep): never "another kind".
    class Evens(list):
        pass

    with pytest.raises(ExerciseFailed) as failure:
        agree_on("Exercise 1", "check_evens", _EVENS, lambda numbers: Evens(numbers), _evens)
    assert "the spec says: the numbers ending in 0, 2, 4, 6 or 8, in order" in str(failure.value)


def test_an_answer_that_changes_its_input_is_told_so_without_a_rules_sentence():
    def in_place(numbers):
        numbers[:] = _evens(numbers)
        return list(numbers)

    with pytest.raises(ExerciseFailed) as failure:
        agree_on("Exercise 1", "check_evens", _EVENS, in_place, _evens, call="evens(numbers)")
    assert str(failure.value) == ("Exercise 1: evens(numbers): it changed the input it was given, which the spec "
                                  "does not ask it to: work on a copy. Smallest input it changed: [10, 11]\n"
                                  "which it left as [10]")
    # A rule it breaks as well comes first.
    with pytest.raises(ExerciseFailed) as failure:
        agree_on("Exercise 1", "check_evens", _EVENS, lambda numbers: in_place(numbers)[::-1], _evens)
    assert "the spec says: the numbers ending in 0, 2, 4, 6 or 8, in order" in str(failure.value)


def test_an_answer_wrong_only_in_the_form_of_its_result_is_told_so_without_a_rules_sentence_or_hint():
    # `shape` names the form (a set where a list belongs); the rule's hint reads values as if the form were right.
    hinted = [Rule(rule.sentence, rule.inputs, lambda args, expected, got: "— HINT about the values")
              for rule in _EVENS]

    def a_list(value):
        return None if isinstance(value, list) else "it returned a set: return a list of the numbers"

    def set_when_some(numbers):  # right for the empty list, a set for the rest
        return set(_evens(numbers)) if numbers else []

    with pytest.raises(ExerciseFailed) as failure:
        agree_on("Exercise 1", "check_evens", hinted, set_when_some, _evens, shape=a_list, call="evens(numbers)")
    assert str(failure.value) == ("Exercise 1: evens(numbers) returns a result of another form than the spec asks. "
                                  "Smallest failing input: [10, 11]\nit returned a set: return a list of the numbers")
    # Wrong in its values too: the rule's sentence and its hint, as before.
    with pytest.raises(ExerciseFailed) as failure:
        agree_on("Exercise 1", "check_evens", hinted, lambda numbers: set(numbers) if len(numbers) > 2 else numbers,
                 _evens, shape=a_list)
    assert "the spec says: the numbers ending in 0, 2, 4, 6 or 8, in order" in str(failure.value)
    assert "— HINT about the values" in str(failure.value)
