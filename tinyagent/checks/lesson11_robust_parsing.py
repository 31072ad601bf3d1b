"""Lesson 11 (robust parsing): bracketed actions, and an Action that wins over a Final Answer."""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator
from typing import Any

from tinyagent.checks.generated import Rule, Spec, agree_on
from tinyagent.checks.lesson05_parser import MULTI_LINE_ANSWER, _reading
from tinyagent.checks.reporting import _brief, _fail, _not_attempted, _passed, grades
from tinyagent.parser import parse_step, split_keyed_lines

_REFUND_JSON = '{"orderId":"88231","reason":"质量问题：扫地机不回充"}'

# The lesson's own replies (exercise 1): tried first, beside the generated ones.
BRACKET_CASES = [
    ("Thought: I need the order first.\nAction: queryOrder[88231]", "queryOrder[88231]"),
    ("Thought: I need the policy.\nAction: searchKnowledge[扫地机 退货 政策]",
     "an input with spaces: searchKnowledge[扫地机 退货 政策]"),
    ("thought: I need today's date.\naction: getCurrentTime[]", "an empty input: getCurrentTime[]"),
    (f"**Thought:** It is faulty.\n**Action:** applyRefund[{_REFUND_JSON[:-1]},\"photos\":[\"dock.jpg\"]}}]",
     "an input that holds brackets itself (JSON with a list)"),
    ("Thought: I need the order first.\nAction: `queryOrder` (to see when it was signed for)\nAction Input: 88231",
     "a name in backticks with a comment in round brackets, and its Action Input"),
    ("Thought：先查订单。\nAction：queryOrder\nAction Input：88231", "full-width colons, no brackets at all"),
    ("Thought: Done.\nFinal Answer: Refund RF202606300001 [quality problem] is submitted.",
     "a Final Answer with brackets in it"),
]


# -- exercise 1's reference: the lesson's `my_tolerant` (step 2) with the solution's `read_action_v2` ------------
_KEY = re.compile(r"^[\s*_#>`-]*(thought|action input|action|final answer|observation)[\s*_`]*[:：][\s*_]*(.*)$",
                  re.IGNORECASE)
_NAMES = {"thought": "Thought", "action input": "Action Input", "action": "Action", "final answer": "Final Answer",
          "observation": "Observation"}
# The whole Action value is `name[input]`: greedy `.*` runs to the last `]`, and DOTALL lets the input span lines.
_CALL = re.compile(r"(\w+)[ \t]*\[(.*)\]", re.DOTALL)  # spaces or tabs may stand before the [


def _sections(text: str) -> list[tuple[str, str]]:
    found: list[tuple[str, list[str]]] = []
    for line in text.replace("\r\n", "\n").split("\n"):
        match = _KEY.match(line)
        if match:
            found.append((_NAMES[match.group(1).lower()], [match.group(2)]))
        elif found:
            found[-1][1].append(line.rstrip())
    return [(key, "\n".join(lines).strip()) for key, lines in found]


def _unfence(value: str) -> str:
    lines = value.split("\n")
    if lines[0].startswith("```"):
        lines = lines[1:]
    if lines and lines[-1].strip() == "```":
        lines = lines[:-1]
    return "\n".join(lines).strip()


def _read_action_v2(value: str) -> tuple[str, str | None]:
    call = _CALL.fullmatch(value.strip())
    if call:
        return call.group(1), call.group(2).strip()
    words = value.split()  # the lesson's read_action: the first word, without its marks
    return (words[0].strip("`*'\"") if words else ""), None


def _tolerant_v2(text: str) -> tuple[tuple[str, str] | None, str | None]:
    """11, exercise 1's answer (the solution's behaviour), read as (action, final answer)."""
    step = []
    for key, value in _sections(text):
        if key == "Observation":
            break
        step.append((key, value))
    name, tool_input = "", ""
    for key, value in step:
        if key == "Action":
            name, written = _read_action_v2(value)
            tool_input = written or ""
        elif key == "Action Input" and name:
            tool_input = _unfence(value)
    final = next((_unfence(value) for key, value in step if key == "Final Answer"), None)
    if final is not None:
        return None, final
    return ((name, tool_input) if name else None), None


# -- what a parser returned, as the checks compare it ----------------------------------------------
class _Reading(tuple):
    """(action, final answer) of a step, shown whole, as lesson 05's _Read: a failure cuts two readings where they
    differ (each cut short alike, two inputs that differ in the middle read the same)."""

    def __repr__(self) -> str:
        return _reading(*self, whole=True)


# The reference's readings, of a type named for what the learner returns: generated.py names the reference's value
# by its type ("returned None for every input, where a step (Step or ParsedStep) was expected").
_Expected = type("step (Step or ParsedStep)", (_Reading,), {"__module__": __name__})


def _reading_of(step: Any) -> Any:
    """The step's (action as (name, input), final answer); the value itself when it has not those fields."""
    if not (hasattr(step, "action") and hasattr(step, "final_answer")):
        return step
    action = step.action
    if action is not None and hasattr(action, "tool_name") and hasattr(action, "tool_input"):
        action = (action.tool_name, action.tool_input)
    return _Reading((action, step.final_answer))


def _a_step(value: Any) -> str | None:
    if not (hasattr(value, "action") and hasattr(value, "final_answer")):
        return (f"it returned {type(value).__name__} {_brief(value, 40)}: return a step with `action` and "
                "`final_answer` fields (this lesson's Step, or tinyagent.ParsedStep)")
    action = value.action
    if action is not None and not (isinstance(getattr(action, "tool_name", None), str)
                                   and isinstance(getattr(action, "tool_input", None), str)):
        return (f"its action is {type(action).__name__} {_brief(action, 40)}: make it an Action(tool_name, "
                "tool_input), both strings")
    return None


def _as_reading(value: Any) -> Any:
    return _reading_of(value) if _a_step(value) is None else value


def _read(value: Any) -> Any:
    """What agree_on compares: the step's reading. A value of the wrong form (an action that is a tuple) has none:
    its failure is the form `_a_step` names, never "asked again, it gave another answer"."""
    if isinstance(value, _Reading):  # the reference's, read already
        return value
    if _a_step(value) is not None:
        raise ValueError("not a step of the right form")
    return _reading_of(value)


def _shown(args: tuple) -> str:
    """A reply as a failure shows it: from its Action or answer on (its Thought says nothing), cut short. 30 columns
    keep it on the line that names it (FAILURE_COLUMNS) and the failure within FAILURE_LINES; the readings below it
    are shown where they differ."""
    (text,) = args
    lines = text.split("\n")
    keyed = (n for n, line in enumerate(lines) if re.search(r"action|answer|observation", line, re.IGNORECASE))
    start = next(keyed, 0)
    return _brief("\n".join(lines[start:]), 30)


# -- exercise 1's inputs, drawn from its spec ------------------------------------------------------
_TOOLS = ("queryOrder", "queryLogistics", "searchKnowledge", "applyRefund", "checkStock", "cancelOrder",
          "get_weather", "lookup_invoice", "search2", "translateText", "calc")
_THOUGHTS = ("Thought: I need the order first.", "Thought: 先查一下订单。", "**Thought:** It is faulty.",
             "thought: I look it up.", "Thought：客户要退款，先查订单状态。", "Thought: 🙂 one more look-up.")
_ACTION_KEYS = ("Action: ", "**Action:** ", "action: ", "Action：", "ACTION: ", "- Action: ")
_WORDS = ("扫地机 退货 政策", "return policy", "七天无理由", "invoice for order {id}", "发票 怎么开", "Müller GmbH",
          "坏了 怎么办？", "S10 Pro 扫地机", "what is 12 + 30", "运费 谁 出", "😀 emoji and 中文")


def _order_id(rng: random.Random) -> str:
    return str(rng.randint(10000, 99999))


def _tracking_no(rng: random.Random) -> str:
    return rng.choice(("SF", "YT", "JD", "ZT")) + "".join(rng.choice("0123456789") for _ in range(10))


def _plain_input(rng: random.Random) -> str:
    kind = rng.randrange(4)
    if kind == 0:
        return _order_id(rng)
    if kind == 1:
        return _tracking_no(rng)
    return rng.choice(_WORDS).format(id=_order_id(rng))


def _reply(rng: random.Random, action: str, *after: str) -> str:
    text = "\n".join([rng.choice(_THOUGHTS), f"{rng.choice(_ACTION_KEYS)}{action}", *after])
    return text.replace("\n", "\r\n") if rng.random() < 0.2 else text  # Windows line ends, every one of them


def _named_calls(rng: random.Random) -> Iterator[tuple]:
    for _ in range(14):
        yield (_reply(rng, f"{rng.choice(_TOOLS)}[{_plain_input(rng)}]"),)
    # any tool: a name is any word, in any letters, not only ASCII ones
    yield ("Thought: 先查一下订单。\nAction: 查询订单[88231]",)
    yield ("Thought: I need the weather.\nAction: 天气_查询[上海 明天]",)
    yield ("Thought: I count them.\nAction: zählen[3]",)
    yield ('Action: searchKnowledge["refund"]',)  # quotes are part of the input as written


def _inputs_with_brackets(rng: random.Random) -> Iterator[tuple]:
    for _ in range(4):
        order = _order_id(rng)
        photos = ",".join(f'"{rng.choice(("dock", "底座", "box"))}{n}.jpg"' for n in range(rng.randint(1, 3)))
        yield (_reply(rng, f'applyRefund[{{"orderId":"{order}","photos":[{photos}],"reason":"坏了"}}]'),)
    forms = ("{w} [{id}]", "[{id}] and [{w}]", "{w}] and [{w}", "[[{id}]]", "{w} [7天]", "a[b]c[{id}]")
    for form in forms:  # an input that ends in "]" itself: "the last ]" is not "every ] at the end"
        yield (_reply(rng, f"{rng.choice(_TOOLS)}[{form.format(w=rng.choice(_WORDS), id=_order_id(rng))}]"),)


def _empty_inputs(rng: random.Random) -> Iterator[tuple]:
    for _ in range(4):
        yield (_reply(rng, f"{rng.choice(_TOOLS)}[]"),)


def _inputs_over_lines(rng: random.Random) -> Iterator[tuple]:
    for _ in range(6):
        order = _order_id(rng)
        lines = [f'{{"orderId": "{order}",', f' "reason": "{rng.choice(("质量问题：扫地机不回充", "broken", "不想要了"))}",',
                 f' "amount": {rng.randint(10, 99999)}}}']
        yield (_reply(rng, "applyRefund[" + "\n".join(lines[: rng.randint(2, 3)]) + ("" if rng.random() < 0.5 else "}")
                      + "]"),)
    for _ in range(3):
        yield (_reply(rng, f"searchKnowledge[{rng.choice(_WORDS)}\n{rng.choice(_WORDS)}]".format(id=_order_id(rng))),)
    # everything between the brackets is the input as written, ``` fences too
    yield (f"Thought: It is faulty.\nAction: applyRefund[```json\n{_REFUND_JSON}\n```]",)


def _other_shapes(rng: random.Random) -> Iterator[tuple]:
    for _ in range(3):
        name, given = rng.choice(_TOOLS), _plain_input(rng)
        written = rng.choice((f"`{name}`", f"{name} (to look it up)", f"**{name}**", name, f"'{name}'"))
        yield (_reply(rng, written, rng.choice(("Action Input: ", "action input: ", "Action Input：")) + given),)
    for _ in range(3):  # an input over several lines, on its own key
        yield (_reply(rng, "applyRefund", "Action Input: {", f'  "orderId": "{_order_id(rng)}",', '  "reason": "坏了"',
                      "}"),)
    for _ in range(2):
        yield ((f"Thought: Done.\nFinal Answer: {rng.choice(('Refund', '退款单'))} RF2026{rng.randint(10**7, 10**8)} "
               f"[{rng.choice(_WORDS)}] is submitted."),)
    yield (_reply(rng, f"{rng.choice(_TOOLS)}[{_order_id(rng)}]", f"Observation: {{\"orderId\":\"{_order_id(rng)}\"}}",
                  f"Action: applyRefund[{_order_id(rng)}]"),)
    yield ("",)
    yield ("您好，您的包裹已经签收了。",)
    yield ("Thought: I need the order first.\nAction: queryOrder[88231",)  # no last ]: not name[input]
    # Brackets inside the value, which does not end in ]: not name[input] either.
    yield ("Thought: I need the order first.\nAction: queryOrder (order [88231])\nAction Input: 88231",)
    yield ("Action: queryOrder [88231] please\nAction Input: 88231",)
    yield ("Thought: 查物流。\nAction: queryLogistics [SF1234567890] 先查\nAction Input: SF1234567890",)
    # The same with no Action Input line: read_action's reading, the first word and no input, shows apart from a
    # reader that takes the brackets out of a longer value.
    yield ("Thought: I need the order.\nAction: queryOrder [88231] please",)
    yield ("Thought: 查物流。\nAction: queryLogistics [SF1234567890] 先查",)
    # The mirror: text before the name. The value is not name[input] as a whole either: read_action reads "I".
    yield ("Action: I will use queryOrder[88231]",)
    # Nothing after its ]: not even a full stop, so read_action reads the value (its first word, all of it).
    yield ("Thought: I need the order before I can answer.\nAction: queryOrder[88231].",)
    yield ("Thought: 客户问包裹到哪了，先查一下物流再回答。\nAction: queryLogistics[SF1234567890]。",)


def _lesson_replies(rng: random.Random) -> Iterator[tuple]:
    for text, _ in BRACKET_CASES:
        yield (text,)


def _inputs_with_spaces(rng: random.Random) -> Iterator[tuple]:
    for _ in range(4):
        before, after = rng.choice((" ", "  ", "\t", "")), rng.choice((" ", "  ", "\t", " \n"))
        yield (_reply(rng, f"{rng.choice(_TOOLS)}[{before}{_plain_input(rng)}{after}]"),)
    yield ("Thought: 先查订单。\nAction: queryOrder[ 88231 ]",)
    yield ("Thought: I need today's date.\nAction: getCurrentTime[ ]",)  # empty once its spaces are off
    yield (f"Thought: It is faulty.\nAction: applyRefund[\n{_REFUND_JSON}\n]",)


def _spaces_inside(rng: random.Random) -> Iterator[tuple]:
    """Runs of spaces and tabs inside the input: between the brackets the input is kept as written."""
    yield ("Thought: I need the policy.\nAction: searchKnowledge[扫地机  退货\t政策]",)
    for _ in range(4):
        words = [rng.choice(_WORDS).format(id=_order_id(rng)) for _ in range(rng.randint(2, 3))]
        gaps = [rng.choice(("  ", "   ", "\t", " \t ", "\t\t")) for _ in words[1:]]
        yield (_reply(rng, f"{rng.choice(_TOOLS)}[{words[0]}{''.join(g + w for g, w in zip(gaps, words[1:]))}]"),)
    for _ in range(2):  # JSON as models pretty-print it: each key indented by a run of spaces
        indent = rng.choice(("  ", "    ", "\t"))
        yield (_reply(rng, f'applyRefund[{{\n{indent}"orderId": "{_order_id(rng)}",\n{indent}"reason": "坏了"\n}}]'),)


def _bracket_hint(args: tuple, expected: Any, got: Any) -> str | None:
    got = _as_reading(got)
    if not isinstance(got, tuple) or expected[0] is None or got[0] is None:
        return None
    (name, wanted), (_, given) = expected[0], got[0]
    if name == got[0][0]:  # the right tool, another input: which of the input's rules it missed
        if given == _unfence(wanted):
            return "(the input is everything between the brackets as written, ``` fences too)"
        if not wanted and given and re.search(r"\][^\]\n]*\S[^\]\n]*$", args[0]):
            return "(text follows the last ]: the value as a whole is not name[input], so read_action reads it)"
        if isinstance(given, str) and given != wanted and given.strip() == wanted:
            if given.strip(" ") != wanted:  # spaces off, a tab or a line break left
                return "(the input is without the spaces around it: tabs and line breaks too, as str.strip() removes)"
            return "(the input is without the spaces around it)"
        if isinstance(given, str) and not given and wanted and re.search(rf"{re.escape(name)}[ \t]*\t[ \t]*\[",
                                                                         args[0]):
            return "(a tab may stand between the name and its [ too, as spaces may: it is still name[input])"
        if isinstance(given, str) and not given and wanted and re.search(rf"{re.escape(name)}[ \t]+\[", args[0]):
            return "(spaces may stand between the name and its [: it is still name[input])"
        if isinstance(given, str) and given != wanted and given == wanted.strip("'\""):
            return "(the input is everything between the brackets as written, quotes too)"
        if isinstance(given, str) and given != wanted and given.split() == wanted.split():
            return "(the input is kept as written between the brackets: a run of spaces, a tab or a line break stays)"
        return "(the input runs from the first [ to the last ], on every line)"
    if "[" in expected[0][0] and "]" not in expected[0][0] and "[" not in got[0][0]:
        return "(no ] closes it, so it is not name[input]: read it as read_action does)"
    if re.search(r"\][^\]]+$", expected[0][0]) and "[" not in got[0][0]:
        return ("(text follows the last ]: the value as a whole is not name[input], so read_action reads it; a full "
                "stop too)")
    if "[" in got[0][0] and not expected[0][0].isascii():
        return f"(the name ends at the first [, whatever letters it is in: here {expected[0][0]})"
    if "[" in got[0][0]:
        return "(the name ends at the first [)"
    if not wanted and given and "[" in args[0]:
        return "(text stands before the name: the value as a whole is not name[input], so read_action reads it)"
    return None


def _with_hint(rules: tuple[Rule, ...], hint: Callable[[tuple, Any, Any], str | None]) -> tuple[Rule, ...]:
    return tuple(Rule(rule.sentence, rule.inputs, hint) for rule in rules)


def _space_before_the_bracket(rng: random.Random) -> Iterator[tuple]:
    """Spaces or a tab between the name and its `[`: still name[input], as the package's parser reads it."""
    yield ("Thought: 先查订单。\nAction: queryOrder [88231]",)
    yield (_reply(rng, f"searchKnowledge\t[{rng.choice(_WORDS)} 退货]"),)
    yield (_reply(rng, f"{rng.choice(_TOOLS)}  [{_plain_input(rng)}]"),)


def _as_my_tolerant_reads(rng: random.Random) -> Iterator[tuple]:
    """The rest of step 2's `my_tolerant`, which `my_tolerant_v2` keeps (its comments say each of these)."""
    yield ("Action: queryOrder[88231]\nFinal Answer: done",)  # as in lesson 05: an answer ends the run
    yield ("Action: queryOrder[1]\nAction: applyRefund[2]",)  # the last Action wins
    yield ("Action Input: 88231\nAction: queryOrder",)  # ... with the input that follows it
    yield ("Final Answer: a\nFinal Answer: b",)  # next(...): the first Final Answer
    yield ('Action: queryOrder[88231]\nObservation: {"status": "已签收"}\nFinal Answer: It was signed for.',)
    yield ("Action: queryOrder\nAction Input: `88231`",)  # unfence takes off ``` lines, not single backticks


def _my_tolerant_hint(args: tuple, expected: Any, got: Any) -> str | None:
    (text,) = args
    got = _as_reading(got)
    if not isinstance(got, tuple):
        return None
    (want_action, want_final), (got_action, got_final) = expected, got
    if want_final is not None and got_final is None and got_action is not None:
        return "(my_tolerant keeps lesson 05's order: a Final Answer beside an Action wins)"
    if want_action is not None and got_final is not None and re.search(r"observation", text, re.IGNORECASE):
        return "(my_tolerant stops at an Observation the model wrote: what follows it is invented)"
    if want_final is not None and got_final is not None:
        return "(of two Final Answers, my_tolerant takes the first)"
    if want_action is None or got_action is None:
        return None
    if want_action[0] != got_action[0]:
        return "(the last Action wins, as in my_tolerant)" if want_action[0] in text else None
    if not want_action[1] and got_action[1]:
        return "(an `Action Input:` before the Action is not its input: only one after it is)"
    if got_action[1] == want_action[1].strip("`"):
        return "(unfence takes off ``` lines only: single backticks stay)"
    return _bracket_hint(args, expected, got)


def _input_lines_after_brackets(rng: random.Random) -> Iterator[tuple]:
    """`name[input]`, then an `Action Input:` line: the line is read last, so it is the input (parse_tolerant)."""
    yield ("Thought: 先查订单。\nAction: queryOrder[88231]\nAction Input: 12345",)
    yield (_reply(rng, "getCurrentTime[]", f"Action Input: {_plain_input(rng)}"),)
    tool = rng.choice(_TOOLS)
    yield (_reply(rng, f"{tool}[{_plain_input(rng)}]", f"Action Input: {_plain_input(rng)}"),)


def _thoughts_after_the_action(rng: random.Random) -> Iterator[tuple]:
    """A Thought after the Action (the model says what it will do next): my_tolerant takes only an `Action Input:`
    line for the Action's input, so the brackets' input, or the Action Input's, stands."""
    yield ("Thought: 先查订单。\nAction: queryOrder[88231]\nThought: 然后再查物流。",)
    yield ("Thought: I need the order first.\nAction: queryOrder\nAction Input: 88231\nThought: Then the parcel.",)
    yield (_reply(rng, f"{rng.choice(_TOOLS)}[{_plain_input(rng)}]", rng.choice(_THOUGHTS)),)


def _thought_hint(args: tuple, expected: Any, got: Any) -> str | None:
    got = _as_reading(got)
    if (isinstance(got, tuple) and expected[0] is not None and got[0] is not None and got[0][0] == expected[0][0]
            and got[0][1] != expected[0][1]):
        return "(only an `Action Input:` line is the Action's input: a Thought after the Action is not, in my_tolerant)"
    return None


def _line_break_before_the_bracket(rng: random.Random) -> Iterator[tuple]:
    """A line break between the name and its `[`: not a space or a tab, so not name[input] (read_action reads it)."""
    yield ("Thought: 先查订单。\nAction: queryOrder\n[88231]",)
    yield ("Thought: I need the policy.\nAction: searchKnowledge\n[退货 政策]",)


def _line_break_hint(args: tuple, expected: Any, got: Any) -> str | None:
    got = _as_reading(got)
    if isinstance(got, tuple) and got[0] is not None and expected[0] is not None and got[0][1] != expected[0][1]:
        return "(a line break is neither a space nor a tab: the value is not name[input], so read_action reads it)"
    return None


def _observations_mentioned(rng: random.Random) -> Iterator[tuple]:
    """A Thought that mentions `Observation:` mid-line: no key, so the step goes on (my_tolerant's sections)."""
    yield ("Thought: The Observation: above says signed, so I refund it.\nAction: applyRefund[88231]",)
    yield ("Thought: 上一个 Observation: 显示已签收。\nAction: queryLogistics[SF1234567890]",)


def _mention_hint(args: tuple, expected: Any, got: Any) -> str | None:
    got = _as_reading(got)
    if isinstance(got, tuple) and expected[0] is not None and got[0] is None:
        return "(only an Observation key at the start of a line ends the step: a Thought that mentions one goes on)"
    return None


def _input_line_hint(args: tuple, expected: Any, got: Any) -> str | None:
    got = _as_reading(got)
    if isinstance(got, tuple) and expected[0] is not None and got[0] is not None and got[0][0] == expected[0][0]:
        return "(an `Action Input:` line after the Action is its input, as in my_tolerant: it comes after the brackets)"
    return _bracket_hint(args, expected, got)


BRACKET_RULES = _with_hint((
    Rule("`Action: name[input]` is the tool `name` with the input in the brackets, for any tool and any input",
         _named_calls),
    Rule("the input is everything between the first `[` and the **last** `]`, brackets of its own too",
         _inputs_with_brackets),
    Rule("the input may be empty (`getCurrentTime[]`)", _empty_inputs),
    Rule("the input may contain spaces of its own, kept as written: a run of spaces or a tab too "
         "(`searchKnowledge[退货  政策]` reads 退货  政策)", _spaces_inside),
    Rule("the input is everything between the brackets, also over several lines", _inputs_over_lines),
    Rule("otherwise it does what `read_action` does (a name in backticks, `Action Input:` lines, an answer)",
         _other_shapes),
    Rule("the lesson's own replies are read as the lesson reads them", _lesson_replies),
    Rule("the input is without the spaces around it (`queryOrder[ 88231 ]` reads 88231)", _inputs_with_spaces),
    Rule("spaces between the name and its `[` are allowed, tabs too (`queryOrder [88231]` reads 88231)",
         _space_before_the_bracket),
), _bracket_hint) + (
    Rule("all else as `my_tolerant` reads it: the first Final Answer wins over an Action, the last Action with the "
         "`Action Input:` after it, nothing after an Observation", _as_my_tolerant_reads, _my_tolerant_hint),
    Rule("an `Action Input:` after `name[input]` is the Action's input all the same, in place of the brackets'",
         _input_lines_after_brackets, _input_line_hint),
    Rule("a Thought after the Action is not its input, as in my_tolerant: only an `Action Input:` line is",
         _thoughts_after_the_action, _thought_hint),
    Rule("only spaces or tabs may stand between the name and its `[`: after a line break it is not name[input]",
         _line_break_before_the_bracket, _line_break_hint),
    Rule("an Observation ends the step only as a key at the start of a line, as in my_tolerant: a Thought that "
         "mentions `Observation:` goes on", _observations_mentioned, _mention_hint),
)


@grades("Exercise 1", spec=Spec(BRACKET_RULES))
def check_bracket_actions(my_tolerant_v2: Callable[[str], Any] | None) -> None:
    """11, exercise 1: the hand-built tolerant parser, extended to read `Action: tool[input]`."""
    exercise = "Exercise 1"
    if my_tolerant_v2 is None:
        return _not_attempted(exercise, "Write def my_tolerant_v2(text) in the cell above.")
    if not callable(my_tolerant_v2):
        _fail(exercise, f"my_tolerant_v2 should be a function, got {type(my_tolerant_v2).__name__}")
    tried = agree_on(exercise, "check_bracket_actions", BRACKET_RULES, my_tolerant_v2,
                     lambda text: _Expected(_tolerant_v2(text)), shape=_a_step, read=_read,
                     call="my_tolerant_v2(text)", show=_shown)
    return _passed(exercise, f"{tried} generated replies read as the spec says: name[input] with any tool and any "
                             "input, to the last ], over several lines too; every other shape as before.")


# -- exercise 2 -------------------------------------------------------------------------------------
ACTION_FIRST_CASES = [
    ((f"Thought: It is faulty, so I refund it.\nAction: applyRefund\nAction Input: {_REFUND_JSON}\n"
     "Final Answer: Your refund RF20260629001 is on its way."),
     "a reply that typed past its Action to a Final Answer"),
    (("Thought: I need the order first.\nAction: queryOrder\nAction Input: 88231\n"
     'Observation: {"orderId":"88231","status":"已签收"}\nThought: Signed, so I refund it.\n'
     f"Action: applyRefund\nAction Input: {_REFUND_JSON}\nFinal Answer: Refund RF20260629001 submitted."),
     "a reply that ran on past an Observation it invented"),
    ("Thought: The refund went through.\nFinal Answer: Refund RF202606300001 is submitted.", "a plain final answer"),
    (("Thought: The refund went through. No need for another Action: applyRefund.\n"
     "Final Answer: Refund RF202606300001 is submitted."), "a final answer whose Thought mentions 'Action:'"),
    (f"Thought: Done.\nFinal Answer: Refunded.\nAction: applyRefund\nAction Input: {_REFUND_JSON}",
     "a Final Answer written before the Action"),
    ("Thought: Too early for a Final Answer: I need the order first.\nAction: queryOrder\nAction Input: 88231",
     "a Thought that mentions 'Final Answer:' mid-line"),
    ("Thought: I need the order first.\nAction: queryOrder\nAction Input: 88231\n", "a plain action"),
    (MULTI_LINE_ANSWER, "a three-line answer"),
    ("您好，您的包裹已经签收了。", "plain prose"),
]


def _action_first(text: str) -> _Reading:
    """11, exercise 2's answer (the solution's behaviour): parse_step, except that an Action (before any
    Observation) with the Action Input that follows it wins over a Final Answer."""
    step = parse_step(text)
    if step.final_answer is None:
        return _reading_of(step)
    name, tool_input = "", ""
    for key, value in split_keyed_lines(text):
        if key == "Observation:":
            break
        if key == "Action:":
            name, tool_input = value, ""
        elif key == "Action Input:" and name:
            tool_input = value
    return _Reading(((name, tool_input), None)) if name else _reading_of(step)


_FINALS = ("Your refund RF2026{n} is on its way.", "退款已提交，退款单号 RF2026{n}。", "It was signed for on 22 June.",
           "订单 {id} 已签收。", "Refund {id} [quality problem] is submitted.", "您好 🙂 已为您处理。")
_LESSON05_THOUGHTS = ("Thought: It is faulty, so I refund it.", "Thought: 先查订单。", "Thought: I need the order.",
                      "Thought: 顾客要退款。")


# Answers of several lines (lesson 05: an answer runs to the end of the reply): after an Action, the lines after
# the first are the answer's too, not the Action Input's.
_LONG_FINALS = (MULTI_LINE_ANSWER.split("Final Answer: ", 1)[1], "已签收：\n- 单号 SF{n}\n- 签收时间 6月22日",
                "Your refund RF2026{n} is on its way.\nIt takes 1-3 working days.", "订单 {id}：\n\n已发货。")


def _final(rng: random.Random, finals: tuple[str, ...] = _FINALS) -> str:
    return "Final Answer: " + rng.choice(finals).format(n=rng.randint(10**7, 10**8), id=_order_id(rng))


def _action_lines(rng: random.Random) -> list[str]:
    name = rng.choice(_TOOLS)
    kind = rng.randrange(5)
    if kind == 0:
        return [f"Action: {name}"]  # no input written: the input is empty
    if kind == 1:  # JSON over several lines
        return [f"Action: {name}", "Action Input: {", f'  "orderId": "{_order_id(rng)}",',
                f'  "reason": "{rng.choice(("坏了", "broken", "不回充"))}"', "}"]
    return [f"Action: {name}", f"Action Input: {_plain_input(rng)}"]


def _lesson_cases(rule: str) -> Iterator[tuple]:
    """The lesson's replies (ACTION_FIRST_CASES) under the rule each tests: where the Action wins over what
    parse_step returns, "action" (or "observation", past one); the others "otherwise"."""
    for text, _ in ACTION_FIRST_CASES:
        wins = _action_first(text) != _reading_of(parse_step(text))
        if rule == (("observation" if "Observation:" in text else "action") if wins else "otherwise"):
            yield (text,)


def _action_and_answer(rng: random.Random) -> Iterator[tuple]:
    for n in range(14):
        action = _action_lines(rng)
        lines = [rng.choice(_LESSON05_THOUGHTS), *action, _final(rng)] if n % 3 else \
            [rng.choice(_LESSON05_THOUGHTS), _final(rng), *action]  # the answer may come first
        yield ("\n".join(lines),)
    for _ in range(4):  # a final answer of several lines after the Action: none of its lines is the input
        yield ("\n".join([rng.choice(_LESSON05_THOUGHTS), *_action_lines(rng), _final(rng, _LONG_FINALS)]),)
    yield from _lesson_cases("action")


def _empty_last_actions(rng: random.Random) -> Iterator[tuple]:
    """The last `Action:` names nothing (lesson 05: then there is no action): parse_step's answer stands."""
    yield ("Thought: x\nAction: queryOrder\nAction Input: 88231\nAction:\nFinal Answer: done",)
    yield ("Thought: 先查订单。\nAction: queryOrder\nAction:   \nAction Input: 88231\nFinal Answer: 已签收。",)
    for _ in range(3):
        lines = [rng.choice(_LESSON05_THOUGHTS), *_action_lines(rng), "Action:" + rng.choice(("", " ", "  "))]
        yield ("\n".join([*lines, _final(rng)] if rng.random() < 0.7 else [lines[0], _final(rng), *lines[1:]]),)


# How models quote an Action Input: parse_step keeps the quotes, as written.
_QUOTED = ('"{}"', "'{}'", "“{}”", "「{}」", "`{}`")


def _inputs_as_parse_step_reads(rng: random.Random) -> Iterator[tuple]:
    """The Action Input as parse_step reads it: ``` fences and quotes kept; of two inputs after the Action, the
    last."""
    yield ((f"Thought: It is faulty.\nAction: applyRefund\nAction Input: ```json\n{_REFUND_JSON}\n```\n"
            "Final Answer: Refund submitted."),)
    yield (("Thought: 先查订单。\nAction: queryOrder\nAction Input: 12345\nAction Input: 88231\n"
            "Final Answer: 已签收。"),)
    for form in _QUOTED:
        action = [f"Action: {rng.choice(_TOOLS)}", f"Action Input: {form.format(_plain_input(rng))}"]
        thought, final = rng.choice(_LESSON05_THOUGHTS), _final(rng)
        yield ("\n".join([thought, *action, final] if rng.random() < 0.7 else [thought, final, *action]),)


def _inputs_before(rng: random.Random) -> Iterator[tuple]:
    """An `Action Input:` written before the Action is not the one that follows it."""
    yield ("Thought: I need the time.\nAction Input: 88231\nAction: getCurrentTime\nFinal Answer: It is 10:00.",)
    yield ("Thought: 先查订单。\nAction Input: 12345\nAction: queryOrder\nAction Input: 88231\nFinal Answer: 已签收。",)
    yield ("Thought: Done.\nFinal Answer: Your refund is on its way.\nAction Input: 88231\nAction: getCurrentTime",)
    # the input after the Action, though not right after it (a Final Answer between them)
    yield ("Thought: I need the order first.\nAction: queryOrder\nFinal Answer: 订单已签收。\nAction Input: 88231",)
    # the last Action wins, as in lesson 05, with no input of its own: the first Action's input is not its input
    yield (("Thought: I need the order first.\nAction: queryOrder\nAction Input: 88231\nAction: getCurrentTime\n"
            "Final Answer: It was signed for."),)


def _invented_observations(rng: random.Random) -> Iterator[tuple]:
    for _ in range(6):
        lines = [rng.choice(_LESSON05_THOUGHTS), *_action_lines(rng),
                 f'Observation: {{"orderId":"{_order_id(rng)}","status":"已签收"}}', "Thought: Signed, so I refund it.",
                 *_action_lines(rng), _final(rng)]
        yield ("\n".join(lines),)
    yield from _lesson_cases("observation")
    # an "Observation:" in the middle of a line is a mention: the step goes on
    yield ("Thought: The Observation: above says signed.\nAction: queryOrder\nAction Input: 88231\nFinal Answer: done",)


def _mentions(rng: random.Random) -> Iterator[tuple]:
    for _ in range(5):
        name = rng.choice(_TOOLS)
        thought = rng.choice((f"Thought: No need for another Action: {name}.", f"Thought: 上一步的 Action: {name} 已完成。",
                              f"Thought: The Action: {name} before has its result."))
        yield (f"{thought}\n{_final(rng)}",)
    # A key not written as lesson 05 writes it is no Action line: bold, lower case, a full-width colon.
    for key in ("**Action:**", "action:", "Action："):
        yield (f"Thought: 查一下。\n{key} queryOrder\nAction Input: 88231\nFinal Answer: done",)
    # Spaces before the key: still the start of the line, as split_keyed_lines (and so parse_step) reads it.
    yield ("Thought: I need the order.\n  Action: queryOrder\n  Action Input: 88231\nFinal Answer: It was signed for.",)
    yield ("Thought: 查一下。\n\tAction: queryLogistics\nAction Input: SF1234567890\nFinal Answer: 已签收",)


def _otherwise(rng: random.Random) -> Iterator[tuple]:
    for _ in range(4):
        yield ("\n".join([rng.choice(_LESSON05_THOUGHTS), *_action_lines(rng)]),)
    for _ in range(3):
        yield (f"{rng.choice(_LESSON05_THOUGHTS)}\n{_final(rng)}\nThanks for waiting.\n谢谢。",)
    yield ("您好，您的包裹已经签收了。",)
    yield ("",)
    yield from _lesson_cases("otherwise")
    # parse_step's answer wherever it is, after an Observation too, and running to the end past one
    yield ('Thought: t\nObservation: {"a": 1}\nFinal Answer: It was signed for.',)
    yield ('Thought: t\nFinal Answer: It was signed for.\nObservation: {"a": 1}',)
    # parse_step reads `Final Answer:` only as written: a lower-case or full-width-colon one is no answer
    yield ("Thought: Done.\nfinal answer: It was signed for.",)
    yield ("Thought: 好了。\nFinal Answer：已签收。",)


# A line that starts with an `Action:` key written another way (bold, lower-case, a full-width colon, a space before
# the colon), which split_keyed_lines does not read as a key.
_LOOSE_ACTION = re.compile(r"^(?!(?-i:[ \t]*Action:))[\s*_]*action[\s*_]*[:：]", re.IGNORECASE)


def _action_names(text: str) -> list[str]:
    """The values of the step's `Action:` lines (those before any `Observation:`), in order."""
    names = []
    for key, value in split_keyed_lines(text):
        if key == "Observation:":
            break
        if key == "Action:":
            names.append(value)
    return names


def _action_first_hint(args: tuple, expected: Any, got: Any) -> str | None:
    (text,) = args
    got = _as_reading(got)
    if not isinstance(got, tuple):
        return None
    if expected[0] is not None and got[1] is not None:
        if got[0] == expected[0]:
            return (f"The Action is right; beside it final_answer must be None (got {_brief(got[1], 20)}): that "
                    "answer rests on nothing observed yet.")
        if not re.search(r"^Final Answer:", text, re.MULTILINE):
            return "parse_step reads that 'Final Answer:' mid-line as an answer: the Action still wins."
        return "The answer rests on nothing observed yet: the Action must run first."
    observation = re.search(r"^[ \t]*Observation:", text, re.MULTILINE)
    if expected[0] is None and expected[1] is not None and got[1] != expected[1] and observation:
        if isinstance(got[1], str) and got[1] and expected[1].startswith(got[1]):
            return "parse_step's answer runs to the end of the text, past an Observation too."
        return "parse_step's answer counts wherever it is; the Action before the Observation still wins over it."
    if expected[0] is not None and got[0] is None and re.search(r"^.*\S.*Observation:", text, re.MULTILINE):
        return "Only an 'Observation:' at the start of a line ends the step: one mid-line is a mention."
    if expected[0] is None and got[0] is not None:
        names = _action_names(text)
        if names and not names[-1]:
            return "The last 'Action:' names nothing, so there is no action (lesson 05): parse_step's answer stands."
        if any(_LOOSE_ACTION.match(line) for line in text.split("\n")):
            return ("A bold, lower-case or full-width-colon 'Action:' is no key, as split_keyed_lines reads it: only "
                    "'Action:' as written starts an Action line.")
        return "Only an 'Action:' at the start of a line is an action: one in the middle of a line is a mention."
    if expected == (None, None) and got[0] is None and got[1] is not None:
        return "parse_step reads 'Final Answer:' only as written: a lower-case or full-width-colon one is no answer."
    if (expected[0] is not None and got[0] is not None and expected[0][0] != got[0][0]
            and isinstance(got[0][0], str) and got[0][0] and got[0][0] in expected[0][0]):
        if expected[0][0].startswith(got[0][0]) and expected[0][0][len(got[0][0])].isspace():
            return "parse_step keeps the whole value as the tool name, not only its first word."
        return ("parse_step keeps the whole value as the tool name, as written: its backticks, stars, quotes or "
                "brackets too.")
    if expected[0] is not None and got[0] is not None and expected[0][0] == got[0][0]:
        keys = [key for key, _ in split_keyed_lines(text)]
        keys = keys[:keys.index("Observation:")] if "Observation:" in keys else keys
        action = len(keys) - 1 - keys[::-1].index("Action:") if "Action:" in keys else 0
        if "Action Input:" in keys[:action] and "Action:" in keys[:action]:
            return "The last Action wins with the input after it; an earlier Action's input is not its input."
        if "Action Input:" in keys[:action]:
            return "An 'Action Input:' before the Action is not its input: only the one after it is."
        if "Action Input:" in keys[action + 2:] and not got[0][1]:
            return "The 'Action Input:' after the Action is its input, even with other lines between them."
        if got[0][1] == _unfence(expected[0][1]):
            return "The input is as parse_step reads it, ``` fences too: do not unfence it."
        if isinstance(got[0][1], str) and got[0][1].strip() == expected[0][1][1:-1].strip() != "":
            return "The input is as parse_step reads it, quotes too: do not take them off."
        if keys[action + 1:].count("Action Input:") > 1:
            return "Of two 'Action Input:' lines after the Action, the last counts, as parse_step reads it."
        if isinstance(got[0][1], str) and got[0][1].startswith(expected[0][1]):
            return "The input ends where the next key starts: a final answer's later lines are the answer's."
        return "The tool is right, the input is not: it is every line after 'Action Input:'."
    if expected[0] is not None and got[0] is not None and "Observation:" in text:
        return "Nothing after an Observation the model wrote itself is part of this step."
    return None


def _empty_finals(rng: random.Random) -> Iterator[tuple]:
    """`Final Answer:` with nothing after it: parse_step reads the answer '' (not None), so the Action wins."""
    yield ("Thought: I need the order first.\nAction: queryOrder\nAction Input: 88231\nFinal Answer:",)
    yield ("Thought: 先查物流。\nAction: queryLogistics\nAction Input: SF1234567890\nFinal Answer:   \n",)


def _empty_final_hint(args: tuple, expected: Any, got: Any) -> str | None:
    got = _as_reading(got)
    if isinstance(got, tuple) and expected[0] is not None and got[0] is None and got[1] == "":
        return "parse_step reads an empty 'Final Answer:' as the answer '' (not None): the Action still wins."
    return None


def _observation_lines(rng: random.Random) -> Iterator[tuple]:
    """An `Observation:` key as split_keyed_lines reads it: on an indented line, and on the reply's first line."""
    yield (("Thought: I need the order.\nAction: queryOrder\nAction Input: 88231\n"
            '  Observation: {"orderId":"88231","status":"已签收"}\nAction: applyRefund\nAction Input: 88231\n'
            "Final Answer: Refunded."),)
    yield (('Observation: {"orderId":"88231","status":"已签收"}\nThought: Signed, so I refund it.\n'
            "Action: applyRefund\nAction Input: 88231\nFinal Answer: 已退款。"),)


def _observations_as_written(rng: random.Random) -> Iterator[tuple]:
    """A bold, lower-case or full-width-colon `Observation:` is no key: it ends no step."""
    for key in ("**Observation:**", "observation:", "Observation："):
        yield (("Thought: I need the order.\nAction: queryOrder\nAction Input: 88231\n"
                f'{key} {{"orderId":"88231","status":"已签收"}}\nAction: applyRefund\nAction Input: 88231\n'
                "Final Answer: Refunded."),)


# How models write a tool's name on its `Action:` line: parse_step keeps every mark of it, as written.
_NAMES_AS_WRITTEN = ("`{}`", "**{}**", "*{}*", "'{}'", '"{}"', "{}[{id}]", "{}()", "<{}>", "{}:", "{}.",
                     "{} (to look it up)", "{} 工具", "```{}```")


def _whole_names(rng: random.Random) -> Iterator[tuple]:
    """The tool name is the whole value of the Action line, as parse_step reads it: not its first word, and with
    its backticks, stars, quotes and brackets."""
    yield ("Action: queryOrder (to see when)\nAction Input: 88231\nFinal Answer: done",)
    for form in _NAMES_AS_WRITTEN:
        name = form.format(rng.choice(_TOOLS), id=_order_id(rng))
        action = [f"Action: {name}", f"Action Input: {_plain_input(rng)}"]
        thought, final = rng.choice(_LESSON05_THOUGHTS), _final(rng)
        yield ("\n".join([thought, *action, final] if rng.random() < 0.7 else [thought, final, *action]),)


ACTION_FIRST_RULES = _with_hint((
    Rule("an `Action:` beside a final answer wins, with its whole `Action Input:`, and no final answer",
         _action_and_answer),
    Rule("nothing after an `Observation:` at the start of a line is part of the step", _invented_observations),
    Rule("only `Action:` at the start of a line counts (spaces before it too, as split_keyed_lines reads it)",
         _mentions),
    Rule("the Action's input is the `Action Input:` after it, not one written before it", _inputs_before),
    Rule("otherwise it returns what `parse_step(text)` returns", _otherwise),
    Rule("the Action's input is as parse_step reads it: ``` fences and quotes kept; of two `Action Input:`s, the "
         "last",
         _inputs_as_parse_step_reads),
    Rule("the last `Action:` wins, as in lesson 05, even when it names nothing: then there is no action, and "
         "parse_step's answer stands", _empty_last_actions),
    Rule("the Action's tool name is as parse_step reads it: the whole value of the `Action:` line, its backticks, "
         "stars and brackets too", _whole_names),
), _action_first_hint) + (
    Rule("a `Final Answer:` with nothing after it is a final answer too (parse_step reads ''): the Action wins",
         _empty_finals, _empty_final_hint),
    Rule("an `Observation:` line ends the step as split_keyed_lines reads it: an indented one, or the first line, too",
         _observation_lines, lambda args, expected, got: "An 'Observation:' key ends the step as split_keyed_lines "
                                                         "reads it: on an indented line, or on the reply's first "
                                                         "line, too."),
    Rule("an `Observation:` counts only as written: a bold, lower-case or full-width-colon one ends no step",
         _observations_as_written, lambda args, expected, got: "An 'Observation:' counts only as written, as "
                                                               "split_keyed_lines reads it: a bold, lower-case or "
                                                               "full-width-colon one ends no step."),
)


@grades("Exercise 2", spec=Spec(ACTION_FIRST_RULES))
def check_action_over_final(action_first: Callable[[str], Any] | None) -> None:
    """11, exercise 2: lesson 05's parser with the new rule: an Action beside a Final Answer wins."""
    exercise = "Exercise 2"
    if action_first is None:
        return _not_attempted(exercise, "Write def action_first(text) in the cell above.")
    if not callable(action_first):
        _fail(exercise, f"action_first should be a function, got {type(action_first).__name__}")
    tried = agree_on(exercise, "check_action_over_final", ACTION_FIRST_RULES,
                     action_first, lambda text: _Expected(_action_first(text)), shape=_a_step, read=_read,
                     call="action_first(text)", show=_shown)
    return _passed(exercise, f"{tried} generated replies: every Action beside a Final Answer runs with its whole "
                             "input, and a mere mention of 'Action:' stays a mention.")
