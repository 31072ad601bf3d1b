"""Lesson 17 (plan, reflect, skills): read a numbered plan, and the rule for a plan."""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator

from tinyagent.checks.generated import Rule, Spec, agree_on
from tinyagent.checks.reporting import _brief, _fail, _not_attempted, _passed, grades

_PLAN_LINE = re.compile(r"^\s*(?:\*\*)?(\d+)[.)](?:\*\*)?\s*(.*)$")


def _plan_lines(text: str) -> list[str]:
    """17, exercise 1's answer (the solution's behaviour): the first numbered list, whatever number it starts at,
    while the numbers go up; ValueError if there is none, or if a step of it has no text."""
    steps, last = [], 0
    for line in text.splitlines():
        match = _PLAN_LINE.match(line)
        if match is None:
            continue
        number = int(match.group(1))
        if steps and number <= last:
            break
        step = match.group(2).replace("**", "").strip()
        if not step:
            raise ValueError(f"step {number} is empty")
        steps.append(step)
        last = number
    if not steps:
        raise ValueError("no numbered steps")
    return steps


# -- exercise 1's inputs, drawn from its spec ------------------------------------------------------
_STEPS = ("查询订单 {id} 的物流", "查询售后政策", "为订单 {id} 申请退款", "Look up order {id}", "Track the parcel of {id}",
          "Search the return policy", "Answer the customer", "查询 **{id}** 的状态", "回复顾客：已处理")
_NOTES = ("计划如下：", "Here is the plan:", "   (it was signed for on 22 June)", "", "注意：先查订单再退款",
          "In short, two look-ups.", "总结：", "Then I answer.")


def _step(rng: random.Random) -> str:
    return rng.choice(_STEPS).format(id=rng.randint(10000, 99999))


def _numbered(rng: random.Random, number: int, text: str, *, styled: bool = True) -> str:
    indent = rng.choice(("", "", " ", "   ", "\t")) if styled else ""
    mark = rng.choice((".", ")")) if styled else "."
    bold = styled and rng.random() < 0.3
    return f"{indent}{'**' if bold else ''}{number}{mark}{'**' if bold else ''} {text}"


def _plans_styled(rng: random.Random) -> Iterator[tuple]:
    for _ in range(14):
        lines = [_numbered(rng, n, _step(rng)) for n in range(1, rng.randint(1, 5) + 1)]
        yield ("\n".join(lines),)
    yield ("计划：\n1.查询订单 88231\n2)查询物流",)  # no space after the mark: a model writes that too
    yield ("**1. Look up order 88231**\n2. Answer the customer",)  # the whole line in bold
    yield ("计划：\n1) 查询订单 88231\n**2) 查询物流**",)
    yield ("1. 计算 2*3 的运费",)  # a single `*` is the step's own: only `**` come out
    yield ("    1. 查询订单 88231\n    2. 回复顾客",)  # an indent of more than 3 spaces is an indent too
    yield ("1. 查询订单 88231\n2. 查询售后政策*",)  # a single `*` at a step's end (a footnote mark) stays too


def _styled_missed(args: tuple, expected: list, got: list) -> str | None:
    if _BOLD_LINE.search(args[0]) and len(got) < len(expected):
        return "— the bold may cover the whole line (`**1. step**`): it is still a step."
    if len(got) == len(expected) and any("*" in want.replace("**", "") and want != have
                                         for want, have in zip(expected, got)):
        return "— only `**` come out: a single `*` (`2*3`) is part of the step."
    return None


def _plans_with_a_second_list(rng: random.Random) -> Iterator[tuple]:
    for size in range(1, 13):
        first = [_numbered(rng, n, _step(rng)) for n in range(1, size + 1)]  # 10, 11, 12: more than one digit
        second = [_numbered(rng, n, _step(rng)) for n in range(1, rng.randint(1, 3) + 1)]
        between = [rng.choice(_NOTES)] if rng.random() < 0.5 else []
        yield ("\n".join([*first, *between, *second]),)
    for start in (2, 3, 9):  # a list need not start at 1; it still ends where a number does not go up
        yield ("\n".join(_numbered(rng, n, _step(rng)) for n in (start, start + 1, start)),)
    yield ("\n".join(_numbered(rng, n, _step(rng)) for n in (1, 2, 2, 3)),)
    yield ("\n".join(_numbered(rng, n, _step(rng)) for n in (1, 3, 7, 12)),)  # going up, not one by one
    yield ("1. 查询订单 88231\n总结：\n1. 查询订单\n2. 查询物流\n3. 回复顾客",)  # the first list, though shorter
    yield ("1. 查询订单\n2. 查询物流\n2. 回复顾客",)  # the same number again does not go up


def _numbers(text: str) -> list[int]:
    return [int(match.group(1)) for match in map(_PLAN_LINE.match, text.splitlines()) if match]


def _list_end_missed(args: tuple, expected: list, got: list) -> str | None:
    numbers = _numbers(args[0])
    if got == [] and numbers and numbers[0] > 1:
        return "— a list may start at any number, not only at 1."
    if not isinstance(got, list) or len(got) <= len(expected):
        return None
    if got[:len(expected)] != expected:
        return "— the plan is the first list, even when a later one is longer."
    if len(numbers) > len(expected) and numbers[len(expected)] == numbers[len(expected) - 1]:
        return f"— {numbers[len(expected)]}. after {numbers[len(expected)]}. does not go up: the list ends there."
    return None


def _plans_with_notes(rng: random.Random) -> Iterator[tuple]:
    for _ in range(10):
        lines = [rng.choice(_NOTES)]
        for n in range(1, rng.randint(2, 4) + 1):
            lines.append(_numbered(rng, n, _step(rng)))
            if rng.random() < 0.5:
                lines.append(rng.choice(_NOTES))
        yield (rng.choice(("\n", "\r\n")).join(lines),)
    # A number inside a line does not make it a step: a step line starts with its number.
    yield ("Here is the plan (total 19.99 yuan):\n1. Look up order 88231\n2. Answer the customer",)
    yield ("1. 查询订单 88231\n订单 88231 的金额是 1999.00 元。\n2. 回复顾客",)
    # A line that starts with a number but no `.` or `)` after it is a note, not a step.
    yield ("1. Look up order 88231\n88231 was signed for on 22 June\n2. Answer the customer",)
    yield ("1. 查询订单 88231\n10:30 顾客来电\n2. 回复顾客",)
    yield ("1. 查询订单 88231\n2、查询物流\n3. 回复顾客",)  # 、 is not `.` or `)`
    yield ("1、查询订单 88231\n2. 查询物流\n3. 回复顾客",)
    yield ("1. 查询订单 88231\n2）查询物流\n3. 回复顾客",)  # full-width marks are not `.` or `)`
    yield ("1。查询订单 88231\n2. 查询物流\n3. 回复顾客",)
    # A line that starts with `.` or `)` but no number is a note too.
    yield ("1. 查询订单 88231\n...\n2. 查询售后政策",)
    yield ("1. Look up order 88231\n) and its parcel, if it has one\n2. Answer the customer",)
    # a note's number is no step's: a note that starts with a number that does not go up ends nothing
    yield ("1. 查询订单 88231\n2. 查询物流\n1 件商品已签收\n3. 回复顾客",)
    yield ("1. Look up order 88231\n2. Track its parcel\n2 days ago it was signed for\n3. Answer the customer",)
    # a bulleted line is not numbered either: only whitespace and `**` may stand before a step's number
    yield ("- 1. 查询订单 88231\n- 2. 查询物流\n1. 回复顾客",)
    yield ("1. Look up order 88231\n* 2) Track its parcel\n2) Answer the customer",)
    yield ("计划：\n+ 1. 查询订单 88231\n  - 2. 查询售后政策\n3. 回复顾客",)
    yield ("- **1.** Look up order 88231\n• 2. Track its parcel\n2. Answer the customer",)


_BOLD_LINE = re.compile(r"(?m)^\*\*\d+[.)] .*\*\*$")
_NOTE_LINE = re.compile(r"^\s*(?:\*\*)?\d+(?![\d.)])")


def _spaces_left(text: str, expected: list, got: list) -> str | None:
    """What the answer left around steps it read right but for the spaces at their ends, or None."""
    if not isinstance(got, list) or len(got) != len(expected) or got == expected:
        return None
    wrong = [n for n, (have, want) in enumerate(zip(got, expected)) if have != want]
    if not all(isinstance(got[n], str) and got[n].strip() == expected[n] for n in wrong):
        return None
    left = {char for n in wrong for char in got[n][:len(got[n]) - len(got[n].lstrip())] + got[n][len(got[n].rstrip()):]}
    if "\r" in left:
        return "— a line may end in \\r\\n: use text.splitlines()."
    if left - {" "}:
        return "— strip every kind of space, a tab too: str.strip() with no argument."
    rests = [match.group(2) for match in map(_PLAN_LINE.match, text.splitlines()) if match]
    if any(n < len(rests) and re.search(r"\s\*\*|\*\*\s", rests[n]) for n in wrong):
        return "— take the `**` out first, then the spaces: `**1. 查询订单 **` is `查询订单`."
    return None


_BULLETED = re.compile(r"^\s*[-*+•]\s*(?:\*\*)?\d+[.)]")


def _note_read_as_step(args: tuple, expected: list, got: list) -> str | None:
    if why := _spaces_left(args[0], expected, got):
        return why
    bulleted = [line for line in args[0].splitlines() if _BULLETED.match(line)]
    if bulleted and (not isinstance(expected, list) or not isinstance(got, list) or got != expected) and any(
            isinstance(step, str) and step and step in line for step in (got if isinstance(got, list) else [])
            for line in bulleted):
        return ("— a bulleted line (`- 1. 查询订单`) is not numbered: only whitespace and `**` may stand before a "
                "step's number.")
    notes = [line for line in args[0].splitlines() if _NOTE_LINE.match(line)]
    if any(isinstance(step, str) and step and step in line and step not in expected for step in got for line in notes):
        return "— a line starting with a number but no `.` or `)` after it is a note, not a step."
    if notes and isinstance(got, list) and 0 < len(got) < len(expected) and got == expected[:len(got)]:
        return "— a note does not end the list, even one that starts with a number that does not go up."
    return None


def _texts_without_steps(rng: random.Random) -> Iterator[tuple]:
    yield ("",)
    yield ("I will look both orders up and then answer.",)
    yield ("先查订单 88231，再查物流。\n然后回复顾客。",)
    yield ("...\n) 注意：先核对订单号",)  # `.` and `)` without a number before them
    yield ("Step one: look up the order.\n- then track it",)
    yield ("\u200b\n  \n🙂",)
    for _ in range(4):
        yield ("\n".join(rng.choice(_NOTES) for _ in range(rng.randint(1, 4))),)
    # the shapes parse_plan reads besides (Step 2's cell): a line that starts with 第 or Step starts with no number
    yield ("第1步：查询订单 88231\n第2步：查询物流",)
    yield ("Step 1: look up order 88231\nStep 2: answer the customer",)


def _steps_with_spaces(rng: random.Random) -> Iterator[tuple]:
    for _ in range(4):  # spaces or a tab after a step, as a model leaves them
        lines = [_numbered(rng, n, _step(rng)) + rng.choice((" ", "   ", "\t", " \t")) for n in range(1, rng.randint(2, 4))]
        yield ("\n".join(lines),)
    yield ("1. 查询订单 88231   \n2)  查询物流\t",)
    yield ("**1.**   Look up order 88231  \n**2.** Answer the customer ",)
    # only the number and its mark come off: a step's own digits, `.` and `)` stay
    yield ("1) Look up order 88231. Check the date.\n2) Answer the customer (in English)",)
    yield ("1. 88231 的物流\n2. 1) 查询政策",)
    # one mark, even where the step itself starts with `.` or `)` right after it (an ellipsis): it stays
    yield ("1. 查询订单 88231\n2....然后回复顾客",)
    yield ("1)...稍后再问\n2) 回复顾客",)
    yield ("**1.**...查询售后政策\n**2.** Answer the customer",)
    yield ("1. Look up order 88231\n2. ...then answer the customer",)
    # a space just inside the bold, as a model may write it: the spaces around the step go once the `**` are out
    yield ("**1. 查询订单 **\n2) ** 查询售后政策**",)
    yield ("计划：\n**1.** Look up order 88231 **\n**2.**  ** Answer the customer",)
    yield ("1. 查询订单 88231\u3000\n\u30002. 回复顾客",)  # U+3000, the full-width space, is a space too
    yield ("1. 查询订单.\n2. 回复顾客。",)  # a step's own `.` or `。` at its end stays
    yield ("1. Look up order  88231\n2. 回复顾客：\t已处理",)  # only the spaces around a step go: those inside stay


def _step_text_cut(args: tuple, expected: list, got: list) -> str | None:
    if why := _spaces_left(args[0], expected, got):
        return why
    if isinstance(got, list) and len(got) == len(expected) and got != expected and all(
            isinstance(have, str) and have.split() == want.split() for have, want in zip(got, expected)):
        return "— only the spaces around a step come off: the spaces inside it stay as they are."
    if "\u3000" in args[0] and got != expected:
        return "— U+3000, the full-width space, is a space too (in an indent as well): `\\s` and str.strip() know it."
    if isinstance(got, list) and len(got) == len(expected) and any(
            isinstance(have, str) and have != want and want.startswith(have) and want[len(have):].strip(".。") == ""
            for have, want in zip(got, expected)):
        return "— only the number and its one mark come off: a `.` or `。` that ends a step is the step's own."
    if any(re.search(r"^\d|[.)]", step) for step in expected):
        return ("— only the number and its one mark come off: a step may hold digits, `.` and `)` of its own "
                "(`1....稍后再问` is `...稍后再问`).")
    return None


def _plans_from_zero(rng: random.Random) -> Iterator[tuple]:
    """A list that starts at 0: its first step is a step like any other (only a number that does not go up after a
    step ends the list)."""
    yield ("0. 查询订单 88231\n1. 回复顾客",)
    yield ("Plan:\n0) Look up order 88231\n1) Track its parcel\n2) Answer the customer",)
    yield ("0. 查询订单 88231",)  # one step, numbered 0
    for _ in range(3):
        lines = [_numbered(rng, n, _step(rng)) for n in range(rng.randint(1, 4))]  # from 0
        yield ("\n".join([*lines, *([rng.choice(_NOTES)] if rng.random() < 0.5 else []),
                          _numbered(rng, 0, _step(rng))]),)  # a second list from 0 after it: not the plan


def _plans_in_other_digits(rng: random.Random) -> Iterator[tuple]:
    """Step numbers in digits other than 0 to 9, as `\\d` and int() read them (and the package's parse_plan): the
    full-width ones a Chinese keyboard types, Arabic-Indic ones. Fixed inputs: nothing is drawn from `rng`."""
    yield ("１. 查询订单 88231\n２. 回复顾客",)
    yield ("计划：\n１) 查询订单 88231\n２) 查询物流\n３) 回复顾客",)
    yield ("1. Look up order 88231\n２. Answer the customer",)
    yield ("**１.** 查询订单 88231\n**２.** 回复顾客",)
    yield ("١. Look up order 88231\n٢. Answer the customer",)
    yield ("٩. Look up order 88231\n١٠. Answer the customer",)  # 9 then 10: it goes up
    yield ("1. 查询订单 88231\n2. 查询物流\n１. 回复顾客",)  # １ is 1: after 2 it does not go up


def _other_digits_missed(args: tuple, expected: list, got: list) -> str | None:
    if isinstance(got, list) and len(got) < len(expected):
        return "— １ (full-width) and ١ are digits too: `\\d` and int() read them, as the package's parse_plan does."
    return None


def _plans_with_an_empty_step(rng: random.Random) -> Iterator[tuple]:
    """A step of the plan with nothing after its number (as a model cut short, or one that lost a line, writes it):
    no step to run, like no plan at all. A numbered line with nothing after it once the list has ended is not read."""
    yield ("1.",)
    yield ("1.\n2. 查询订单 88231",)
    yield ("1. 查询订单 88231\n2.",)
    yield ("1. Look up order 88231\n2)   \n3. Answer the customer",)  # spaces only
    yield ("计划：\n**1.** 查询订单 88231\n**2.**\n**3.** 回复顾客",)  # the number in bold, no step
    yield ("1. Look up order 88231\n2. ****\n3. Answer the customer",)  # only `**` after the number
    yield ("1. 查询订单 88231\n2.\u3000\t",)  # the full-width space and a tab only
    for _ in range(4):
        size = rng.randint(2, 4)
        empty = rng.randint(1, size)
        yield ("\n".join(_numbered(rng, n, "" if n == empty else _step(rng)).rstrip(" ") for n in range(1, size + 1)),)
    # the plan ended before the empty line: nothing wrong with the plan
    yield ("1. 查询订单 88231\n2. 回复顾客\n\n总结：\n1.",)
    yield ("1. Look up order 88231\n2. Answer the customer\n2.",)


PLAN_RULES = (
    Rule("a step line may be indented, its number followed by `.` or `)`, and in Markdown bold (`**1.**`); take "
         "every `**` out of the step (a bold word in it too)", _plans_styled, _styled_missed),
    Rule("the list ends where a number does not go up (a second list after the first is not part of the plan)",
         _plans_with_a_second_list, _list_end_missed),
    Rule("lines that are not numbered are ignored", _plans_with_notes, _note_read_as_step),
    Rule("when there is no numbered step at all, raise ValueError", _texts_without_steps),
    Rule("a step is its text without the spaces around it (`1. 查询订单   ` is `查询订单`)", _steps_with_spaces,
         _step_text_cut),
    Rule("the list may start at any number, 0 too (`0. 查询订单` is a step)", _plans_from_zero),
    Rule("a number may be written in any digits `\\d` reads (full-width `１.`, Arabic-Indic `١.`)",
         _plans_in_other_digits, _other_digits_missed),
    Rule("a step of the list with no text (`2.` alone, or only `**` and spaces after its number) is a ValueError too "
         "(once the list has ended, such a line is not read)",
         _plans_with_an_empty_step),
)


def _list_of_strings(value: object) -> str | None:
    if isinstance(value, list) and all(isinstance(step, str) for step in value):
        return None
    return f"it returned {type(value).__name__} {_brief(value, 40)}: return the steps as a list of strings"


@grades("Exercise 1", spec=Spec(PLAN_RULES))
def check_plan_parser(my_parse_plan: Callable[[str], list[str]] | None) -> None:
    """17, exercise 1: read a planner's numbered steps; no steps is a ValueError."""
    exercise = "Exercise 1"
    if my_parse_plan is None:
        return _not_attempted(exercise, "Write def my_parse_plan(text) in the cell above.")
    if not callable(my_parse_plan):
        _fail(exercise, f"my_parse_plan should be a function, got {type(my_parse_plan).__name__}")
    tried = agree_on(exercise, "check_plan_parser", PLAN_RULES, my_parse_plan, _plan_lines,
                     shape=_list_of_strings, call="my_parse_plan(text)")
    return _passed(exercise, f"{tried} generated replies read as the spec says: the plan found whatever surrounds "
                             "it, and no plan is a ValueError the planner can be shown.")


_ORDER_ID = re.compile(r"(?<!\d)\d{5}(?!\d)")  # as the package's router reads them (architectures/router.py)
_JOINER = re.compile(r"另外|还有|\balso\b", re.IGNORECASE)


def _several_parts(question: str) -> bool:
    return len(set(_ORDER_ID.findall(question))) >= 2 or _JOINER.search(question) is not None


# -- exercise 2's inputs, drawn from its spec ------------------------------------------------------
_ASKS = ("订单 {a} 的物流查一下", "{a} 到哪了？", "Where is order {a}?", "Refund {a} please", "订单{a}的快递到哪了",
         "Please check {a}", "查询订单{a}")
_QUESTIONS = ("发票怎么开？", "how do I get an invoice?", "七天无理由退货怎么算运费？", "what is the return policy?")


def _order_id(rng: random.Random) -> str:
    return str(rng.randint(10000, 99999))


def _two_orders(rng: random.Random) -> Iterator[tuple]:
    # one order named twice comes first: asked again after all the others, it shows ids kept from earlier calls
    yield ("订单 88231 还没到，88231 是上周买的",)
    for _ in range(10):
        a, b = rng.sample(range(10000, 100000), 2)
        form = rng.choice(("订单 {a} 和 {b} 的物流都查一下", "Refund {a} and {b}", "订单{a}、{b}到哪了", "{a},{b}",
                           "Where are {a} and {b}? And {a} again.", "{a}, {a} 和 {b}"))
        yield (form.format(a=a, b=b),)
    for _ in range(6):  # the same id twice is one order
        a = _order_id(rng)
        yield (rng.choice(("订单 {a} 还没到，{a} 是上周买的", "{a} {a}", "Where is {a}? I paid for {a} on Monday.")).format(a=a),)
    yield ("88231? 88231! 88231.",)  # the same id three times is still one order
    yield ("订单 88232、88232 和 88232 都没到",)
    yield ("Refund 88231. Then 88232.",)  # an id at the end of a sentence is still an id
    yield ("order88231 and order88232",)  # letters next to an id do not make it a longer number
    yield ("订单 01234 和 05678 都没到",)  # an id may start with 0
    # letters or Chinese right after an id, or a mark before it, make no longer number either
    yield ("订单88231号和88232号都没到",)
    yield ("#88231 and #88232",)
    yield ("88231的物流，88232的发票",)


def _ids_missed(args: tuple, expected: object, got: object) -> str | None:
    if got is True and expected is False:
        return "— count different ids: one id, however often it is named, is one order" + (
            "; and 和 is no joining word." if "和" in args[0] else ".")
    if got is False and expected is True and re.search(r"[A-Za-z]\d|\b0\d{4}", args[0]):
        return "— five digits are an id next to letters too, and may start with 0."
    if got is False and expected is True and re.search(r"[^\x00-\x7f]\d|\d{5}[^\x00-\x7f]", args[0]):
        return ("— five digits are an id next to Chinese characters too (to \\b a Chinese character is a word "
                "character, so it finds no edge there): only more digits make them part of a longer number.")
    return None


def _longer_or_shorter(args: tuple, expected: object, got: object) -> str | None:
    """The number of another length that an answer took for an id (or for two), named."""
    if got is True and expected is False:
        other = next((number for number in re.findall(r"\d+", args[0]) if len(number) != 5), None)
        if other is not None and len(other) > 5:
            return (f"— {other} is a {len(other)}-digit number: no five of its digits are an order id (an id is "
                    "exactly five digits, with no digit on either side).")
        if other is not None:
            return f"— {other} has {len(other)} digits: no order id (an id is exactly five digits)."
    return None


def _not_order_ids(rng: random.Random) -> Iterator[tuple]:
    a = _order_id(rng)
    for _ in range(3):
        yield (f"My phone is 138{rng.randint(10000000, 99999999)}. Where is {a}?",)  # eleven digits
    yield (f"Order {a} was paid with invoice {rng.randint(1000, 9999)}",)  # four digits
    yield (f"订单号是 {rng.randint(100000, 999999)} 吗？",)  # six digits
    yield (f"{a}{rng.randint(10000, 99999)}",)  # ten digits in a row: one longer number
    yield (f"Tracking SF{rng.randint(1000000000, 9999999999)} for {a}",)
    yield (f"订单{a}和{rng.randint(100, 999)}号快递",)
    # four and six digits beside an id (one digit short of one, one over), and two six-digit numbers: one order or none
    yield (f"Order {a}, invoice {rng.randint(100000, 999999)}",)
    yield (f"订单{a}的发票号是{rng.randint(100000, 999999)}",)
    yield (f"{rng.randint(100000, 999999)} 和 {rng.randint(100000, 999999)} 是运单号",)
    yield (f"订单{a}，取件码{rng.randint(1000, 9999)}",)


def _joining_words(rng: random.Random) -> Iterator[tuple]:
    for word in ("另外", "还有", "also", "Also", "ALSO", "aLsO"):
        ask = rng.choice(_ASKS).format(a=_order_id(rng))
        joined = f"{ask} {word}, {rng.choice(_QUESTIONS)}" if word.isascii() else f"{ask}，{word}{rng.choice(_QUESTIONS)}"
        yield (joined,)
    for word in ("alsoran", "Alsop", "falso", "ALSOS"):  # 'also' inside a longer word is not the word
        yield (f"{rng.choice(_ASKS).format(a=_order_id(rng))} ({word})",)
    yield (f"Also: {_order_id(rng)}",)
    yield (f"{rng.choice(_ASKS).format(a=_order_id(rng))}, also.",)
    yield (f"{rng.choice(_ASKS).format(a=_order_id(rng))} (also {rng.choice(_QUESTIONS)})",)  # a word in brackets
    yield (f'{rng.choice(_ASKS).format(a=_order_id(rng))} "Also" {rng.choice(_QUESTIONS)}',)
    yield ("发票怎么开？另外，运费怎么算？",)  # no order id: the joining word alone makes two parts


def _one_part(rng: random.Random) -> Iterator[tuple]:
    yield ("",)
    for _ in range(6):
        yield (rng.choice(_ASKS).format(a=_order_id(rng)),)
    yield (rng.choice(_QUESTIONS),)
    yield ("Where is order 88231 and when will it arrive?",)  # only the rule's words join parts
    yield ("Refund 88231, then tell me the policy too.",)
    yield ("订单 88231 也没到",)  # 也 ("too") joins no parts
    yield ("订单 88231 和发票都要查",)  # nor does 和 ("and")
    # what the package's needs_plan counts besides (the exercise's Markdown says so): one part here
    yield ("88231 到哪了？能退吗？",)  # two question marks
    yield ("订单 88231 的物流查一下，顺便问下发票怎么开",)
    yield ("Refund 88231 please. Besides, how do I get an invoice",)
    yield ("订单 88231 以及发票",)


def _joiner_missed(args: tuple, expected: object, got: object) -> str | None:
    if got is False and re.search(r"[(\"]also", args[0], re.IGNORECASE):
        return "— a word next to a bracket or quote is still the word: not only spaces part it."
    if got is False and expected is True and not _ORDER_ID.search(args[0]):
        return "— a joining word makes several parts with no order id too."
    return None


def _other_words_joined(args: tuple, expected: object, got: object) -> str | None:
    if got is not True or expected is not False:
        return None
    if re.search(r"\b(and|then|too)\b", args[0]):
        return "— only 另外, 还有 and \"also\" join parts: not \"and\", \"then\" or \"too\"."
    if more := [word for word in ("以及", "顺便", "同时", "此外", "besides", "in addition", "as well as")
                if word in args[0].lower()]:
        return f"— {more[0]} is the package's joining word, not the rule's: only 另外, 还有 and \"also\" join parts."
    if len(re.findall(r"[?？]", args[0])) >= 2:
        return "— the rule counts no question marks (the package's needs_plan does): only ids and its three words."
    if words := [word for word in ("和", "也") if word in args[0]]:
        return f"— {' and '.join(words)} {'is no joining word' if len(words) == 1 else 'are no joining words'}: only 另外, 还有 and \"also\" join parts."
    return None


ROUTER_RULES = (
    Rule("two or more *different* order ids make several parts (the same id twice or more is one)", _two_orders,
         _ids_missed),
    Rule("an order id is exactly five digits, not part of a longer number", _not_order_ids, _longer_or_shorter),
    Rule("另外, 还有 or the word \"also\" (a whole word, in any case) make several parts", _joining_words,
         _joiner_missed),
    Rule("anything else is one part: False", _one_part, _other_words_joined),
)


def _a_bool(value: object) -> str | None:
    return None if isinstance(value, bool) else f"it returned {_brief(value, 40)}: return True or False"


@grades("Exercise 2", spec=Spec(ROUTER_RULES))
def check_plan_rule(my_needs_plan: Callable[[str], bool] | None) -> None:
    """17, exercise 2: the router's rule for a request in several parts."""
    exercise = "Exercise 2"
    if my_needs_plan is None:
        return _not_attempted(exercise, "Write def my_needs_plan(question) in the cell above.")
    if not callable(my_needs_plan):
        _fail(exercise, f"my_needs_plan should be a function, got {type(my_needs_plan).__name__}")
    tried = agree_on(exercise, "check_plan_rule", ROUTER_RULES, my_needs_plan, _several_parts, shape=_a_bool,
                     call="my_needs_plan(question)")
    return _passed(exercise, f"{tried} generated requests routed: several orders or a joining word make a plan; the "
                             "same order twice, 'alsoran' and a phone number do not.")
