"""calculator.py: arithmetic by walking the ast with a whitelist; anything else is a clear refusal, fast."""

from __future__ import annotations

import json
import time
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyagent import Action, ToolRegistry
from tinyagent.toolkit.calculator import (
    MAX_EXPONENT,
    MAX_EXPRESSION_CHARS,
    CalculatorError,
    Value,
    calculate,
    calculator_tool,
    format_number,
)


def result(expression: str) -> dict:
    return json.loads(calculator_tool().invoke(expression))


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("1999 * 0.85", 1699.15),  # floats would say 1699.1499999999999
        ("(1999 - 200) * 0.85", 1529.15),
        ("0.1 + 0.2", 0.3),  # floats would say 0.30000000000000004
        ("2 ** 10", 1024),
        ("2^10", 1024),  # a calculator's power, not Python's exclusive-or
        ("-(-(-5))", -5),
        ("+3 - -2", 5),
        ("7 // 2", 3),
        ("-7 // 2", -4),
        ("7.5 % 2", 1.5),
        ("2 ** -3", 0.125),
        ("１２３×２", 246),  # full-width digits and ×
        ("10 ÷ 4", 2.5),
        ("1e3 + 1", 1001),
        ("((((1))))", 1),
    ],
)
def test_arithmetic_is_exact(expression, expected):
    answer = result(expression)
    assert answer["result"] == expected and type(answer["result"]) is type(expected)
    assert "exact" not in answer


def test_a_caret_is_a_power_and_the_answer_says_so_not_pythons_exclusive_or():
    for written in ("2 ^ 10", "2＾10"):
        answer = result(written)
        assert answer["result"] == 1024 and answer["expression"].replace(" ", "") == "2**10"
        assert "exclusive-or" in answer["note"] and "power" in answer["note"]
    assert "note" not in result("2 ** 10") and "note" not in result("1999 * 0.85")


def test_an_inexact_result_says_so():
    assert result("1/3") == {"expression": "1/3", "result": 0.3333333333333333, "exact": False}
    assert result("2 ** 0.5") == {"expression": "2 ** 0.5", "result": 1.4142135623730951, "exact": False}
    assert result("10**400 / 3")["result"] == "3.3333333333333333E+399"


def test_big_whole_numbers_stay_exact():
    assert result("2 ** 100")["result"] == 2**100
    assert result("99999999999 ** 30")["result"] == 99999999999**30


@pytest.mark.parametrize(
    ("expression", "says"),
    [
        ("1/0", "division by zero"),
        ("5 % 0", "division by zero"),
        ("5 // (2 - 2)", "division by zero"),
        ("0 ** -1", "division by zero (0 to a negative power)"),
        ("(-8) ** 0.5", "(-8) ** 0.5 is not a real number"),
        ("1 +", "this is not an arithmetic expression: 1 +"),
        ("", "the expression is empty"),
        ("   ", "the expression is empty"),
    ],
)
def test_a_bad_expression_is_a_clear_error(expression, says):
    with pytest.raises(CalculatorError) as caught:
        calculate(expression)
    assert says in str(caught.value) and "\n" not in str(caught.value)


# Each of these would run code, read something, or hang an `eval` calculator.
HOSTILE = [
    ("__import__('os').system('echo pwned')", "a function call is not allowed"),
    ("open('/etc/passwd').read()", "a function call is not allowed"),
    ("().__class__.__bases__[0].__subclasses__()", "is not allowed"),
    ("__builtins__", "a name (__builtins__) is not allowed"),
    ("x", "a name (x) is not allowed"),
    ("(lambda: 1)()", "is not allowed"),
    ("[x for x in range(10**9)]", "a comprehension is not allowed"),
    ("'a' * 10**9", "text is not allowed"),
    ("b'abc'", "bytes is not allowed"),
    ("f'{1}'", "an f-string is not allowed"),
    ("True + 1", "True is not allowed"),
    ("2j", "an imaginary number is not allowed"),
    ("1 < 2", "a comparison is not allowed"),
    ("1 if 1 else 2", "an if-expression is not allowed"),
    ("(y := 5)", "an assignment is not allowed"),
    ("1 << 100000", "the operator << is not allowed"),
    ("~1", "the operator ~ is not allowed"),
    ("not 1", "the operator not is not allowed"),
    ("9 ** 9 ** 9", "the exponent 387420489 is too large"),
    ("2 ** 100000", f"the exponent 100000 is too large; the limit is {MAX_EXPONENT}"),
    ("(10 ** 1000) ** 1000", "the result would be too large"),
    ("(2 ** 1000) ** 4", "the result would be too large"),
    ("9" * 150 + " ** 999", "the result would be too large"),
    ("(10 ** 999) * (10 ** 999) * (10 ** 999)", "the result would be too large"),
    ("1e9999", "the exponent of 1e9999 is too large"),  # read as written: 10 ** 9999, not a float's inf
    ("2.0 ** 5000.5", "the exponent 5000.5 is too large"),
    ("(10 ** 1000) ** 1.5", "the result would be too large"),  # a fractional power, judged before it is computed
    ("(10 ** -1000) ** 1.5", "the result would be too small"),
    ("-" * 150 + "1", "nested more than"),
    ("(" * 120 + "1", "not an arithmetic expression"),
    ("-(" * 66 + "1" + ")" * 66, "nested more than"),
    ("1" * (MAX_EXPRESSION_CHARS + 1), f"the limit is {MAX_EXPRESSION_CHARS}"),
    ("1 + 1\x00", "not an arithmetic expression"),
    ("import os", "this is not an arithmetic expression"),
    ("1; 2", "this is not an arithmetic expression"),
]


@pytest.mark.parametrize(("expression", "says"), HOSTILE)
def test_hostile_input_is_refused_quickly_without_running_anything(expression, says):
    started = time.thread_time()  # this thread's CPU, not the wall clock: a loaded machine does not stretch it
    with pytest.raises(CalculatorError) as caught:
        calculate(expression)
    assert says in str(caught.value), str(caught.value)
    assert time.thread_time() - started < 5  # refused, not computed: well under a second of CPU


@pytest.mark.parametrize(("expression", "says"), HOSTILE[:8])
def test_the_tool_turns_a_refusal_into_an_error_observation(expression, says):
    outcome = ToolRegistry([calculator_tool()]).run(Action("calculator", json.dumps({"expression": expression})))
    data = json.loads(outcome.text)
    assert outcome.error and data["error"].startswith("calculator: ") and says in data["error"]
    assert data["expression"] == expression


def test_too_long_an_expression_is_refused_by_the_schema_before_the_function():
    data = result("1+" * 150 + "1")
    assert data["error"].startswith("invalid input for calculator: expression is 301 characters long")


def test_the_description_names_what_is_allowed():
    tool = calculator_tool()
    assert "+ - * / // % **" in tool.describe("en") and tool.parameters["required"] == ["expression"]
    assert "算术表达式" in tool.describe("zh")


def test_format_number_is_exact_or_says_it_is_not():
    assert format_number(Value(Fraction(5))) == (5, True)
    assert format_number(Value(Fraction(169915, 100))) == (1699.15, True)
    assert format_number(Value(Fraction(1, 3))) == (0.3333333333333333, False)
    assert format_number(Value(Fraction(4), exact=False)) == (4.0, False)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="0123456789.+-*/%()^× eE_jx'", max_size=60))
def test_any_text_is_a_number_or_a_calculator_error_and_never_anything_else(text):
    try:
        value = calculate(text)
    except CalculatorError:
        return
    assert isinstance(value.number, Fraction)
    json.dumps(format_number(value)[0])


def test_a_number_is_read_as_it_is_written_not_as_the_float_python_makes_of_it():
    # a float literal lost what a float cannot hold, and the answer still said it was exact
    assert format_number(calculate("12345678901234567.89 - 12345678901234567")) == (0.89, True)
    assert format_number(calculate("1_000.5 * 2")) == (2001, True)
    tiny = calculate("1e-400")
    assert tiny.number == Fraction(1, 10**400) and format_number(tiny) == ("1E-400", True)  # a float's 0.0 is not it
    assert format_number(calculate("1 / 3 * 1e-400")) == ("3.3333333333333333E-401", False)
    assert format_number(calculate("1e-400 ** 2")) == ("1E-800", True)
    assert format_number(calculate("1e-310")) == ("1E-310", True)  # a float holds it with fewer digits (subnormal)
    assert format_number(calculate("2.5e-308")) == (2.5e-308, True)  # the smallest floats with all their digits


@pytest.mark.parametrize(
    "expression",
    ["1e3000000", "1e-3000000", "2 ** 1E+99999999999999999999", "1e99999999999999999999", "１ｅ９９９９９９９９９９"],
)
def test_a_number_with_a_huge_exponent_is_refused_before_it_is_built(expression):
    # building 10 ** exponent holds the interpreter, so no timeout could stop it: the exponent is read first
    started = time.thread_time()  # this thread's CPU, not the wall clock: a loaded machine does not stretch it
    data = result(expression)
    assert time.thread_time() - started < 1
    assert "the exponent of " in data["error"] and f"is too large; the limit is {MAX_EXPONENT}" in data["error"]


def test_a_number_with_an_exponent_at_the_limit_is_still_read_exactly():
    assert calculate(f"1e{MAX_EXPONENT}").number == 10**MAX_EXPONENT
    assert calculate(f"2.5e-{MAX_EXPONENT}").number == Fraction(25, 10 ** (MAX_EXPONENT + 1))


LOOKS = " is not read as it looks: write plain digits, a point and + - * / ( )"


@pytest.mark.parametrize(
    ("expression", "says"),
    [
        ("3²", "3² is not read: write 3**2"),  # NFKC alone makes it 32
        ("10³", "10³ is not read: write 10**3"),
        ("5²+1", "5²+1 is not read: write 5**2+1"),
        ("2⁵ * 3", "2⁵ * 3 is not read: write 2**5 * 3"),
        ("10⁻³", "10⁻³ is not read: write 10**-3"),
        ("2₃ + 1", "the subscript ₃ is not read: write plain digits, and ** for a power"),
        # NFKC made these 13, 1010, 17.5 and 2.5: not what a person reads
        ("①②+1", "①②" + LOOKS),
        ("⑩⑩", "⑩" + LOOKS),
        ("1⒎5", "⒎" + LOOKS),
        ("2\u20245", "\u2024" + LOOKS),
    ],
)
def test_a_superscript_subscript_or_other_lookalike_is_refused_not_read_as_a_plain_digit(expression, says):
    data = result(expression)
    assert data.get("error") == f"calculator: {says}", data


def test_a_comment_is_refused_not_silently_dropped():
    for written, comment in (("1999 # minus 200", "# minus 200"), ("1999 ＃ 减 200", "# 减 200")):
        data = result(written)
        assert data.get("error", "").startswith(f"calculator: {comment} is a comment, which would be skipped"), data
    assert result("１２３×２")["result"] == 246  # full-width digits, which NFKC is there for, still work


def test_a_fractional_power_keeps_the_range_a_float_loses():
    # a float reads 1e-400 as 0.0, so 1e-400 ** -0.5 was a division by zero, and 10 ** 999.5 "too large"
    assert format_number(calculate("1e-400 ** -0.5")) == (1e200, False)
    assert format_number(calculate("10 ** 999.5")) == ("3.1622776601683793E+999", False)
    assert format_number(calculate("2 ** 0.5")) == (2**0.5, False)
