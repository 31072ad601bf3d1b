"""A calculator the model cannot talk into running code: Python's `ast`, walked with a whitelist.

`eval(expression)` is the one-line calculator every tutorial writes, and it runs whatever the model sends:
`__import__('os').system('...')`, or `9**9**9`, which never finishes. `calculate` parses the text with
`ast.parse(mode="eval")`, which only builds a tree, and computes the tree itself, node by node. A node it
does not know is refused, so anything that is not arithmetic is refused:

    allowed     numbers (int and float literals), + - * / // % ** and unary + -, round brackets
    refused     names, calls, attributes, strings, lists, comparisons, lambdas, True, 2j, ...; and what
                would be read other than as written: a # comment, a superscript or subscript (3² is not 32)
    limits      MAX_EXPRESSION_CHARS characters; an exponent up to MAX_EXPONENT, of a power (10 ** 1000) and
                of a number (1e1000) alike; every result (also halfway through) below 2 ** MAX_RESULT_BITS (about
                1,204 digits) and, unless it is 0, above 2 ** -MAX_RESULT_BITS (about 1,204 zeros after the
                point), a power's size estimated *before* it is computed
    errors      `CalculatorError` (a ValueError) with one clear sentence: division by zero, a name, a number
                that is too large or too small, a negative number to a fractional power, text that is not
                arithmetic

It computes with fractions (`fractions.Fraction`), each number read as it is written, so a price stays a price:
1999 * 0.85 is 1699.15 and 0.1 + 0.2 is 0.3, where floats give 1699.1499999999999 and 0.30000000000000004. A
fractional power (2 ** 0.5) has no exact fraction: it is computed to ROUNDED_DIGITS significant digits, and the
result says it is not exact. So is a result whose exact fraction would outgrow MAX_RESULT_BITS bits: 1.0001 ** 365
is about 1.037, but exactly a fraction of some 4,850 bits. For convenience, `×` and `÷` are read as `*` and `/`,
and `^` as `**`: a calculator's power, where Python would read `2 ^ 10` as exclusive-or (8). The tool's answer then
says so in a "note", so neither the model nor the reader of the trace is left to guess which one was computed.
"""

from __future__ import annotations

import ast
import math
import re
import sys
import unicodedata
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Annotated

from tinyagent.registry import error_observation
from tinyagent.toolkit.typed_tool import TypedTool, tool

MAX_EXPRESSION_CHARS = 200
MAX_EXPONENT = 1000
MAX_RESULT_BITS = 4000  # about 1,200 decimal digits: far beyond any shop's sums, and still instant
RESULT_DIGITS = int(MAX_RESULT_BITS * math.log10(2))  # 1204, as the errors say it
ROUNDED_DIGITS = 50  # a result too precise to keep exact keeps these significant digits (an answer shows 17)
MAX_DEPTH = 60  # nested operations; the expression length limits it too

BINARY = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**",
}
UNARY = {ast.UAdd: "+", ast.USub: "-"}
ALLOWED = "numbers and + - * / // % ** ( )"
CARET_NOTE = "^ was read as ** (a power), as on a calculator; in Python ^ is exclusive-or (2 ^ 10 is 8 there)"
# What each refused kind of node is, in words, for the error.
_REFUSED_NODES = {
    ast.Name: "a name", ast.Call: "a function call", ast.Attribute: "an attribute", ast.Subscript: "an index",
    ast.Compare: "a comparison", ast.BoolOp: "and/or", ast.Lambda: "a lambda", ast.List: "a list",
    ast.Tuple: "a tuple", ast.Dict: "a dict", ast.Set: "a set", ast.IfExp: "an if-expression",
    ast.JoinedStr: "an f-string", ast.NamedExpr: "an assignment", ast.ListComp: "a comprehension",
    ast.GeneratorExp: "a generator", ast.Starred: "a *", ast.Await: "await",
}


class CalculatorError(ValueError):
    """An expression the calculator will not or cannot compute; the message says why, in one sentence."""


@dataclass(frozen=True)
class Value:
    """A number as a fraction, and whether it is exact (False once a fractional power was taken)."""

    number: Fraction
    exact: bool = True


def normalize(expression: str) -> str:
    """Full-width characters made plain (NFKC), × ÷ ^ as * / **, and the spaces at the ends removed."""
    text = unicodedata.normalize("NFKC", expression)
    return text.replace("×", "*").replace("÷", "/").replace("^", "**").strip()


def calculate(expression: str) -> Value:
    """The value of an arithmetic expression, or `CalculatorError` saying why there is none."""
    if not isinstance(expression, str):
        raise CalculatorError(f"the expression must be text, got {type(expression).__name__}")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise CalculatorError(f"the expression is {len(expression)} characters long; the limit is "
                              f"{MAX_EXPRESSION_CHARS}")
    _refuse_lookalikes(expression)
    text = normalize(expression)
    if not text:
        raise CalculatorError("the expression is empty: write one such as (1999 - 200) * 0.85")
    if "#" in text:  # ast.parse drops a comment without a word, so "1999 # minus 200" would be 1999
        comment = text[text.index("#"):]
        raise CalculatorError(f"{comment} is a comment, which would be skipped, not computed; only {ALLOWED} "
                              "are allowed")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise CalculatorError(f"this is not an arithmetic expression: {text}; only {ALLOWED} are allowed") from None
    except (ValueError, MemoryError, RecursionError):  # a NUL byte; a pathological nesting
        raise CalculatorError(f"this is not an arithmetic expression; only {ALLOWED} are allowed") from None
    return _value(tree.body, 0, text)


# The characters NFKC may change and the expression still reads as written: full-width and half-width forms (a
# Chinese keyboard's １２３), and a no-break space.
READ_AS_WRITTEN = ("<wide>", "<narrow>", "<noBreak>")


def _refuse_lookalikes(expression: str) -> None:
    """NFKC, which makes full-width digits plain, also makes 3² into 32, x₂ into x2, ①② into 12 and ⒈5 into 1.5:
    a person reads something else than would be computed, so any such character is refused, a superscript or
    subscript with what to write."""
    tags = {char: unicodedata.decomposition(char).partition(" ")[0] for char in set(expression)}
    lowered = "".join(sorted(char for char, tag in tags.items() if tag == "<sub>"))
    raised = "".join(sorted(char for char, tag in tags.items() if tag == "<super>"))
    other = "".join(sorted(char for char, tag in tags.items() if tag.startswith("<") and tag not in READ_AS_WRITTEN
                           and char not in lowered + raised))
    if other:
        raise CalculatorError(f"{other} is not read as it looks: write plain digits, a point and + - * / ( )")
    if lowered:
        raise CalculatorError(f"the subscript {lowered} is not read: write plain digits, and ** for a power")
    if raised:
        def as_power(run: re.Match) -> str:  # ⁻ is the minus sign − in NFKC, which Python does not read
            return "**" + unicodedata.normalize("NFKC", run[0]).replace("−", "-")

        as_powers = re.sub(f"[{re.escape(raised)}]+", as_power, expression.strip())
        raise CalculatorError(f"{expression.strip()} is not read: write {as_powers}")


def _value(node: ast.AST, depth: int, text: str) -> Value:
    if depth > MAX_DEPTH:
        raise CalculatorError(f"the expression is nested more than {MAX_DEPTH} levels deep")
    if isinstance(node, ast.Constant):
        return _checked(Value(_number(node.value, ast.get_source_segment(text, node) or "")))
    if isinstance(node, ast.UnaryOp) and type(node.op) in UNARY:
        operand = _value(node.operand, depth + 1, text)
        return Value(-operand.number if isinstance(node.op, ast.USub) else operand.number, operand.exact)
    if isinstance(node, ast.BinOp) and type(node.op) in BINARY:
        left, right = _value(node.left, depth + 1, text), _value(node.right, depth + 1, text)
        return _checked(_apply(node.op, left, right))
    if isinstance(node, (ast.BinOp, ast.UnaryOp)):
        symbol = {ast.BitXor: "^", ast.BitAnd: "&", ast.BitOr: "|", ast.LShift: "<<", ast.RShift: ">>",
                  ast.MatMult: "@", ast.Invert: "~", ast.Not: "not"}.get(type(node.op), type(node.op).__name__)
        raise CalculatorError(f"the operator {symbol} is not allowed; only {ALLOWED} are")
    what = _REFUSED_NODES.get(type(node), f"a {type(node).__name__} node")
    shown = f" ({node.id})" if isinstance(node, ast.Name) else ""
    raise CalculatorError(f"{what}{shown} is not allowed in an expression; only {ALLOWED} are")


def _number(value: object, written: str) -> Fraction:
    """A literal as an exact fraction, read from how it is `written`: 0.85 is 17/20, and
    12345678901234567.89 keeps its .89 and 1e-400 is not 0, which a float (Python's reading) would lose."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        what = {str: "text", bytes: "bytes", complex: "an imaginary number"}.get(type(value), type(value).__name__)
        if isinstance(value, bool):
            what = str(value)
        raise CalculatorError(f"{what} is not allowed in an expression; only {ALLOWED} are")
    if isinstance(value, int):
        return Fraction(value)
    # Fraction("1e99999999999999999999") would compute 10 to that power, holding the interpreter (and with it
    # every timeout) for good, so the exponent is read from the text and limited first, as a power's is.
    exponent = written.lower().partition("e")[2]
    if exponent and abs(int(exponent)) > MAX_EXPONENT:
        raise CalculatorError(f"the exponent of {written} is too large; the limit is {MAX_EXPONENT}")
    # Every float literal Python reads (5., .5, 1e-400, 1_000.5) is decimal text Fraction reads exactly.
    return Fraction(written.replace("_", ""))


def _apply(op: ast.operator, left: Value, right: Value) -> Value:
    exact = left.exact and right.exact
    a, b = left.number, right.number
    if isinstance(op, ast.Pow):
        return _power(left, right)
    if isinstance(op, (ast.Div, ast.FloorDiv, ast.Mod)) and b == 0:
        raise CalculatorError("division by zero")
    if isinstance(op, ast.Add):
        return Value(a + b, exact)
    if isinstance(op, ast.Sub):
        return Value(a - b, exact)
    if isinstance(op, ast.Mult):  # both within the limits (_checked), so the product is quick to compute and judge
        return Value(a * b, exact)
    if isinstance(op, ast.Div):
        return Value(a / b, exact)
    if isinstance(op, ast.FloorDiv):
        return Value(Fraction(a // b), exact)
    return Value(a % b, exact)


def _power(base: Value, exponent: Value) -> Value:
    a, n = base.number, exponent.number
    if a == 0 and n < 0:  # checked first: float's 0.0 ** -0.5 raises ZeroDivisionError in its own words
        raise CalculatorError("division by zero (0 to a negative power)")
    if n.denominator == 1:
        if abs(n) > MAX_EXPONENT:
            raise CalculatorError(f"the exponent {_show(n)} is too large; the limit is {MAX_EXPONENT}")
        return _whole_power(a, int(n), base.exact and exponent.exact)
    if a < 0:
        raise CalculatorError(f"{_show(a)} ** {_show(n)} is not a real number (a negative number to a "
                              "fractional power)")
    if abs(n) > MAX_EXPONENT:
        raise CalculatorError(f"the exponent {_show(n)} is too large; the limit is {MAX_EXPONENT}")
    if a == 0:
        return Value(a, base.exact and exponent.exact)
    _judge_power_size(a, n)
    # Not float's **: 1e-400 is 0.0 to a float, and 1e-400 ** -0.5 (1e200) would be a division by zero.
    return Value(_rounded(a, n), False)


def _judge_power_size(a: Fraction, n: Fraction) -> None:
    """Refuse a ** n (a not 0) whose size is over the limits, judged from the base's size *before* it is
    computed: 9 ** 9 ** 9 is refused without being computed. The 1 allows for the estimate's rounding; _checked
    judges the result itself."""
    size = n * (math.log2(abs(a.numerator)) - math.log2(a.denominator))
    if size > MAX_RESULT_BITS + 1:
        raise _too_large()
    if size < -MAX_RESULT_BITS - 1:
        raise _too_small()


def _whole_power(a: Fraction, n: int, exact: bool) -> Value:
    """a ** n, its size judged before it is computed: exact while its fraction stays within MAX_RESULT_BITS bits
    (about; _checked rounds what is over), else computed to ROUNDED_DIGITS significant digits."""
    if a == 0 or n == 0:
        return Value(a**n, exact)
    _judge_power_size(a, Fraction(n))
    # A fraction of b bits to the power n has at least (b - 1) * n bits: 1.0001 ** 365, about 1.037, would be exactly
    # a fraction of some 4,850 bits, and 1.001 ** 1000 one of 9,000; more than is kept exact.
    if (_bits(a) - 1) * abs(n) > MAX_RESULT_BITS:
        return Value(_rounded(a, n), False)
    return Value(a**n, exact)


def _checked(value: Value) -> Value:
    """The value when its size is within the limits, rounded to ROUNDED_DIGITS significant digits (and no longer
    exact) when its exact fraction has outgrown MAX_RESULT_BITS bits. The limits are on the size a person counts
    in digits, not on the fraction's: 10 ** 1000 * 10 ** 1000 is too large, 10 ** -1000 * 10 ** -1000 too small,
    1.0001 ** 365 neither."""
    size = abs(value.number)
    if size >= 2**MAX_RESULT_BITS:
        raise _too_large()
    if 0 < size < Fraction(1, 2**MAX_RESULT_BITS):
        raise _too_small()
    if _bits(value.number) > MAX_RESULT_BITS:
        return Value(_rounded(value.number), False)
    return value


def _rounded(number: Fraction, power: Fraction | int = 1) -> Fraction:
    """number ** power, to ROUNDED_DIGITS significant digits (decimal's arithmetic, which rounds as it goes, and
    whose exponents reach far past a float's: the limits hold a result near 10 ** ±1,204). A fractional power
    needs a positive number."""
    power = Fraction(power)
    with localcontext() as context:
        context.prec = ROUNDED_DIGITS
        decimal_number = Decimal(number.numerator) / Decimal(number.denominator)
        if power.denominator == 1:
            return Fraction(decimal_number ** int(power))
        return Fraction(decimal_number ** (Decimal(power.numerator) / Decimal(power.denominator)))


def _bits(number: Fraction) -> int:
    return max(abs(number.numerator).bit_length(), number.denominator.bit_length())


def _too_large() -> CalculatorError:
    return CalculatorError(f"the result would be too large (more than about {RESULT_DIGITS} digits)")


def _too_small() -> CalculatorError:
    return CalculatorError(f"the result would be too small (more than about {RESULT_DIGITS} zeros after the "
                           "decimal point)")


def _show(number: Fraction) -> str:
    shown = str(format_number(Value(number))[0])
    return f"({shown})" if number < 0 else shown


def format_number(value: Value) -> tuple[int | float | str, bool]:
    """(the number as JSON shows it, whether that is exact): an int when whole and exact, else a float when a
    float holds it to 17 digits (exact only when the float is the value itself), else, too big or too small for a
    float (1e-400 is 0.0 to a float), 17 significant digits as text (exact when they are the value)."""
    number = value.number
    if number.denominator == 1 and value.exact:
        return number.numerator, True
    try:
        as_float = float(number)
    except OverflowError:
        as_float = math.inf
    if math.isfinite(as_float) and (number == 0 or abs(as_float) >= sys.float_info.min):
        return as_float, value.exact and Fraction(repr(as_float)) == number
    with localcontext() as context:
        context.prec = 17
        shown = str(Decimal(number.numerator) / Decimal(number.denominator))
    return shown, value.exact and Fraction(shown) == number


def calculator_tool(name: str = "calculator") -> TypedTool:
    """The calculator as a tool: {"expression": ..., "result": ...}, with "exact": false when rounded."""

    @tool(
        name=name,
        descriptions={"zh": "计算一个算术表达式（数字和 + - * / // % ** 以及括号），结果精确到分。"},
        param_descriptions={"zh": {"expression": "算术表达式，如 (1999 - 200) * 0.85"}},
        read_only=True,  # arithmetic: it reads and changes nothing
    )
    def calculate_expression(expression: Annotated[str, {"maxLength": MAX_EXPRESSION_CHARS}]) -> dict | str:
        """Compute an arithmetic expression exactly: numbers, + - * / // % ** and brackets.

        Args:
            expression: the arithmetic to do, e.g. (1999 - 200) * 0.85
        """
        try:
            value = calculate(expression)
        except CalculatorError as exc:
            return error_observation(f"{name}: {exc}", expression=expression[:MAX_EXPRESSION_CHARS])
        result, exact = format_number(value)
        answer: dict = {"expression": normalize(expression), "result": result}
        if not exact:
            answer["exact"] = False
        if "^" in unicodedata.normalize("NFKC", expression):  # also the full-width ＾
            answer["note"] = CARET_NOTE
        return answer

    return calculate_expression
