"""Lesson 04 (the stop sequence): count invented Observations, name the pretended calls."""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Callable, Iterator
from typing import Any

from tinyagent.checks.generated import Rule, Spec, agree_on
from tinyagent.checks.reporting import _brief, _fail, _not_attempted, _passed, grades, shown

RUN_ON = """Thought: 用户想退订单 88231。先查订单。
Action: queryOrder
Action Input: 88231
Observation: {"orderId":"88231","status":"已签收"}
Thought: 订单正常，直接退款。
Action: applyRefund
Action Input: {"orderId":"88231","reason":"不回充"}
Observation: {"success":true,"refundId":"RF20260629001"}
Thought: 退款已提交。
Final Answer: 退款单号 RF20260629001。"""

STOPPED = "Thought: 用户想退订单 88231。先查订单。\nAction: queryOrder\nAction Input: 88231\n"

# The lesson's own examples: each is among the inputs the checks below generate (kept importable by this name).
INVENTION_SAMPLES = [
    (RUN_ON, 2, "a run-on reply with two invented Observations"),
    (STOPPED, 0, "a reply cut at the stop sequence"),
    ("Thought: I wait for the Observation: it comes from the tool.\nAction: getCurrentTime\nAction Input:", 0,
     "a Thought that mentions 'Observation:' in the middle of its line"),
    ("Action: queryOrder\nAction Input: 88231\n  Observation: {\"orderId\":\"88231\"}", 1,
     "an indented Observation line"),
    ("", 0, "an empty reply"),
]

PRETENDED_SAMPLES = [
    (RUN_ON, ["queryOrder", "applyRefund"], "the run-on reply"),
    (STOPPED, ["queryOrder"], "a reply cut at the stop sequence"),
    ("Thought: nothing to do.\nFinal Answer: 好的", [], "a final answer"),
    ("  Action: getCurrentTime\nAction Input:\n", ["getCurrentTime"], "an indented Action with an empty input"),
]


# -- the pieces of a reply, drawn at random: both languages, any tool, any id --------------------------------
# The shop's tools and a few a pretending model might make up (a name is whatever follows "Action:").
_TOOLS = ("queryOrder", "queryLogistics", "applyRefund", "getCurrentTime", "searchKnowledge", "cancelOrder",
          "checkStock", "calculator", "get_weather", "sendCoupon", "查询物流", "lookupUser2")
_THOUGHTS = ("用户想退订单 {id}。先查订单。", "订单正常，直接退款。", "我需要知道今天的日期。", "先查物流 {tracking}。",
             "The customer asks about order {id}.", "I need the parcel's status first.", "Refund {id} now.",
             "退款已提交，可以回复了。", "Let me check the policy. 然后再决定。")
_STATUSES = ("已签收", "运输中", "已发货", "delivered", "in transit", "待付款")


def _order_id(rng: random.Random) -> str:
    return str(rng.randint(10000, 99999))


def _tracking(rng: random.Random) -> str:
    return rng.choice(("SF", "YT", "JD", "ZTO")) + str(rng.randint(10**9, 10**12))


def _thought(rng: random.Random) -> str:
    return rng.choice(_THOUGHTS).format(id=_order_id(rng), tracking=_tracking(rng))


def _action_input(rng: random.Random) -> str:
    order = _order_id(rng)
    return rng.choice((order, _tracking(rng), "", json.dumps({"orderId": order, "reason": "不回充"}, ensure_ascii=False),
                       f'{{"orderId":"{order}","reason":"quality"}}'))


def _observation_value(rng: random.Random) -> str:
    """What an invented Observation says: JSON or a sentence, with or without a space after the colon (Chinese
    text is often written without one)."""
    value = rng.choice((
        json.dumps({"orderId": _order_id(rng), "status": rng.choice(_STATUSES)}, ensure_ascii=False),
        json.dumps({"success": True, "refundId": f"RF{rng.randint(10**11, 10**12)}"}),
        f"订单{_order_id(rng)}已签收", "2026-06-30T19:05:23", "The parcel was delivered.",
    ))
    return rng.choice((" ", " ", "")) + value


def _step(rng: random.Random, tool: str, indent: str = "") -> list[str]:
    return [f"Thought: {_thought(rng)}", f"{indent}Action: {tool}", f"Action Input: {_action_input(rng)}"]


def _run_on(rng: random.Random, tools: list[str], *, indent: Callable[[], str] = str, end: str = "stopped",
            newline: str = "\n") -> str:
    """A reply that runs on through one step per tool, an invented Observation after each but the last. `end`:
    "stopped" (cut before the last step's Observation), "observed" (one after it too) or "answered"."""
    lines: list[str] = []
    for n, tool in enumerate(tools):
        lines += _step(rng, tool)
        if n < len(tools) - 1 or end != "stopped":
            lines.append(f"{indent()}Observation:{_observation_value(rng)}")
    if end == "answered":
        refund = f"{rng.choice(('退款单号 RF', 'Refund id RF'))}{rng.randint(10**11, 10**12)}"
        lines += [f"Thought: {_thought(rng)}", f"Final Answer: {refund}"]
    return newline.join(lines)


def _tools(rng: random.Random, count: int) -> list[str]:
    return [rng.choice(_TOOLS) for _ in range(count)]


# -- exercise 1 ----------------------------------------------------------------------------------------------
def _count_invented(text: str) -> int:
    """04, exercise 1's answer (the solution's behaviour)."""
    return sum(1 for line in text.splitlines() if line.strip().startswith("Observation:"))


def _run_on_replies(rng: random.Random) -> Iterator[tuple]:
    yield (RUN_ON,)
    for steps in (1, 2, 2, 3, 4, 5, 11, 13):  # 10 and 12 invented Observations: a count of more than one digit
        yield (_run_on(rng, _tools(rng, steps), end=rng.choice(("stopped", "observed", "answered")),
                       newline=rng.choice(("\n", "\r\n"))),)
    yield (f"Observation:{_observation_value(rng)}\n{_run_on(rng, _tools(rng, 2))}",)  # the very first line
    yield ("Observation:",)  # the key alone is a line that starts with it
    # Observation lines one right after another: each is a line of its own, and counts.
    yield ("Action: a\nAction Input: 1\nObservation: {}\nObservation: {}",)
    yield (f"{STOPPED}Observation: {{}}\nObservation:\nObservation: 订单已签收",)
    # Blank lines between the steps: every line of the reply is read, not only its first paragraph.
    yield (f"{STOPPED}\nObservation: {{}}\n\nThought: 已签收。\nAction: applyRefund\n\nObservation: {{}}\n",)


def _run_on_hint(args: tuple, expected: Any, got: Any) -> str | None:
    keyed = [line.strip().startswith("Observation:") for line in args[0].splitlines()]
    if not isinstance(got, int) or got >= expected:
        return None
    if got == 0 and keyed and not keyed[0]:
        # none found, and none is the reply's first line: only the start of the text (or of a paragraph) was read
        return (f"(it counted none of the {expected} lines that start with `Observation:`, none of them the reply's "
                "first: read every line; a regex's ^ matches at each line only with re.MULTILINE)")
    runs = sum(1 for a, b in itertools.pairwise([False, *keyed]) if b and not a)  # groups of keyed lines in a row
    if 0 < got == runs and any(a and b for a, b in itertools.pairwise(keyed)):
        return "(Observation lines one after another count one each)"
    return None


def _indented_observations(rng: random.Random) -> Iterator[tuple]:
    yield (INVENTION_SAMPLES[3][0],)
    for steps in (1, 2, 3, 4):
        yield (_run_on(rng, _tools(rng, steps), indent=lambda: rng.choice(("", " ", "  ", "    ")),
                       end="observed"),)
    yield (f"   Observation:{_observation_value(rng)}",)
    # Indented with full-width spaces, as Chinese text indents a paragraph: spaces too, which strip() takes.
    yield ('Thought: 先查订单。\nAction: queryOrder\nAction Input: 88231\n\u3000\u3000Observation: {"status":"已签收"}',)


_MENTIONS = ("Thought: I wait for the Observation: it comes from the tool.",
             "Thought: 等工具返回 Observation: 之后再说。",
             "Thought: 先别写Observation:，那是工具的事。",
             "Final Answer: The tool's Observation: said it was delivered.",
             "Thought: no Observation: yet. Observation: is not mine to write.",
             "Action Input: Observation: none")


def _mentions(rng: random.Random) -> Iterator[tuple]:
    yield (INVENTION_SAMPLES[2][0],)
    for _ in range(8):
        text = _run_on(rng, _tools(rng, rng.randint(1, 3)), end=rng.choice(("stopped", "observed")))
        lines = text.split("\n")
        lines.insert(rng.randint(0, len(lines)), rng.choice(_MENTIONS))
        yield ("\n".join(lines),)
    yield ("Observations are what the tools return.\nObservation is not a key without its colon.",)


def _after_an_answer(key: str) -> Callable[[tuple, Any, Any], str | None]:
    """A hint for an answer that stopped reading at a `Final Answer:` line: the mentions above put one before
    some `key` lines."""
    def hint(args: tuple, expected: Any, got: Any) -> str | None:
        found = len(got) if isinstance(got, (list, tuple)) else got
        wanted = len(expected) if isinstance(expected, list) else expected
        lines = [line.strip() for line in args[0].splitlines()]
        answer = next((n for n, line in enumerate(lines) if line.startswith("Final Answer:")), None)
        if (isinstance(found, int) and found < wanted and answer is not None
                and any(line.startswith(key) for line in lines[answer + 1:])):
            return f"(every line that starts with `{key}` counts, also one after a `Final Answer:` line)"
        return None
    return hint


def _no_observation(rng: random.Random) -> Iterator[tuple]:
    yield (STOPPED,)
    yield ("",)
    yield ("\n\n",)
    yield ("Thought: 订单已签收。\nFinal Answer: 您好，包裹已签收。",)
    for _ in range(3):
        yield (_run_on(rng, _tools(rng, 1)),)
    yield ("您好，订单 " + _order_id(rng) + " 已签收。🙂\u200b",)
    # The key only as written: a lower-case, upper-case or full-width-colon key starts no Observation line.
    yield ('observation: {"a":1}\nOBSERVATION: x',)
    yield (f"{STOPPED}Observation：{{\"orderId\":\"88231\",\"status\":\"已签收\"}}",)


def _full_width_indent(key: str) -> Callable[[tuple, Any, Any], str | None]:
    """A hint for an answer that missed a `key` line indented with full-width spaces (U+3000, the way Chinese text
    indents a paragraph): the failing input is shown cut short, and the spaces look like any other."""
    def hint(args: tuple, expected: Any, got: Any) -> str | None:
        if got != expected and any(line.strip().startswith(key) and "\u3000" in line[:line.find(key)]
                                   for line in args[0].splitlines()):
            return f"(that `{key}` line is indented with U+3000 spaces: strip() takes them, lstrip(' ') does not)"
        return None
    return hint


def _key_as_written(key: str) -> Callable[[tuple, Any, Any], str | None]:
    """A hint for an answer that read a lower-case or full-width-colon key as `key` (on the rules' inputs that
    hold one and no real key)."""
    def hint(args: tuple, expected: Any, got: Any) -> str | None:
        lines = [line.strip() for line in args[0].splitlines()]
        if any(line.lower().replace("：", ":").startswith(key.lower()) and not line.startswith(key) for line in lines):
            name = key[:-1]
            return f"(the key counts only as written: not '{name.lower()}:', '{name.upper()}:' or '{name}：')"
        return None
    return hint


def _observations_written_otherwise(rng: random.Random) -> Iterator[tuple]:
    """Observation keys written another way: a loose regex (`Observation\\s*:`) or a line stripped of its `*` reads
    them as keys."""
    yield ("Observation : {}",)
    yield ("**Observation:** 订单已签收",)
    yield ((f"{STOPPED}Observation : {{\"orderId\":\"88231\"}}\nThought: 已签收。\n**Observation:** 退款成功\n"
            "Observation: {}"),)


def _actions_written_otherwise(rng: random.Random) -> Iterator[tuple]:
    """Action keys written another way: a loose regex (`Action\\s*:`) or a line stripped of its `*` reads them as
    keys."""
    yield ("Action : queryOrder\nAction Input: 88231",)
    yield ("**Action:** getCurrentTime\n**Action Input:**",)
    yield ((f"{STOPPED}Observation: {{}}\nThought: 已签收。\nAction : applyRefund\nAction Input: 88231\n"
            "**Action:** searchKnowledge\nAction: getCurrentTime"),)


def _written_otherwise_hint(key: str) -> Callable[[tuple, Any, Any], str | None]:
    name = key[:-1]

    def hint(args: tuple, expected: Any, got: Any) -> str | None:
        found = len(got) if isinstance(got, (list, tuple)) else got
        wanted = len(expected) if isinstance(expected, list) else expected
        if isinstance(found, int) and found > wanted:
            return f"(the key counts only as written: not '{name} :' or '**{key}**')"
        return None
    return hint


INVENTED_RULES = (
    Rule("each line that starts with `Observation:` counts, however many a run-on reply invents", _run_on_replies,
         hint=_run_on_hint),
    Rule("a line that starts with `Observation:` after leading spaces (an indented line) counts too",
         _indented_observations, hint=_full_width_indent("Observation:")),
    Rule("a line that mentions `Observation:` in the middle (a Thought, an answer) does not count", _mentions,
         hint=_after_an_answer("Observation:")),
    Rule("a reply with no `Observation:` line (a stopped one, an empty one, a lower-case or full-width-colon key) "
         "counts 0", _no_observation, hint=_key_as_written("Observation:")),
    Rule("a key written another way (`Observation :` with a space before the colon, a bold `**Observation:**`) is "
         "none: such a line does not count", _observations_written_otherwise,
         hint=_written_otherwise_hint("Observation:")),
)


def _a_count(value: object) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return None
    return f"it returned {_brief(value, 40)}: return how many lines, an int"


@grades("Exercise 1", spec=Spec(INVENTED_RULES))
def check_invented_counter(count_invented_observations: Callable[[str], int] | None) -> None:
    """04, exercise 1: count the lines of a reply that start with `Observation:`."""
    exercise = "Exercise 1"
    if count_invented_observations is None:
        return _not_attempted(exercise, "Write def count_invented_observations(text) in the cell above.")
    if not callable(count_invented_observations):
        _fail(exercise, f"count_invented_observations should be a function, got "
                        f"{type(count_invented_observations).__name__}")
    tried = agree_on(exercise, "check_invented_counter", INVENTED_RULES, count_invented_observations,
                     _count_invented, shape=_a_count, call="count_invented_observations(text)")
    return _passed(exercise, f"{tried} generated replies counted: only lines that start with 'Observation:' "
                             "count, indented or not, however many a run-on reply invents.")


# -- exercise 2 ----------------------------------------------------------------------------------------------
def _pretended(text: str) -> list[str]:
    """04, exercise 2's answer (the solution's behaviour)."""
    lines = [line.strip() for line in text.splitlines()]
    return [line[len("Action:"):].strip() for line in lines if line.startswith("Action:")]


def _each_action(rng: random.Random) -> Iterator[tuple]:
    yield (RUN_ON,)
    for steps in (1, 2, 3, 3, 4, 6, 11):
        tools = _tools(rng, steps)
        if steps > 2 and rng.random() < 0.5:
            tools[-1] = tools[0]  # the same tool again is a second call, listed again
        yield (_run_on(rng, tools, end=rng.choice(("stopped", "observed", "answered"))),)
    yield (f"Action: {rng.choice(_TOOLS)}   \nAction Input: {_order_id(rng)}",)  # spaces after the name
    # A reply whose lines end in "\r\n": a line's name is without the "\r".
    yield (_run_on(rng, _tools(rng, 3), end="observed", newline="\r\n"),)
    yield ("Action: queryOrder\r\nAction Input: 88231\r\nObservation: {}\r\nAction: applyRefund\r\n",)


def _no_space_after_the_key(rng: random.Random) -> Iterator[tuple]:
    yield ("Thought: 查订单\nAction:queryOrder\nAction Input:88231",)
    yield ("Action:查询物流\nAction Input:SF1234567890\nObservation:{}\nAction: getCurrentTime\nAction Input:",)
    # Names that start with letters of the key: lstrip("Action:") strips them too ('heckStock').
    yield ("Action:checkStock\nAction Input:88231\nObservation:{}\nAction:cancelOrder\nAction Input:88231",)


def _no_space_hint(args: tuple, expected: Any, got: Any) -> str | None:
    if isinstance(got, (list, tuple)) and len(got) < len(expected):
        return "(nothing need follow the colon: 'Action:queryOrder' names queryOrder)"
    if isinstance(got, (list, tuple)) and any(
            str(mine) != name and str(mine) and name.endswith(str(mine)) and set(name[: -len(str(mine))]) <= set("Action:")
            for mine, name in zip(got, expected)):
        return "(lstrip('Action:') strips letters, not the key: cut the key off by its length)"
    return None


def _indented_actions(rng: random.Random) -> Iterator[tuple]:
    yield (PRETENDED_SAMPLES[3][0],)
    for steps in (1, 2, 3):
        lines: list[str] = []
        for tool in _tools(rng, steps):
            lines += _step(rng, tool, indent=rng.choice((" ", "  ", "    ")))
            lines.append(f"Observation: {_observation_value(rng)}")
        yield ("\n".join(lines),)
    yield ("Thought: 先查订单。\n\u3000\u3000Action: queryOrder\nAction Input: 88231",)  # full-width spaces


_ACTION_MENTIONS = ("Thought: I will use Action: getCurrentTime later.",
                    "Thought: 下一步的 Action: queryLogistics 需要运单号。",
                    "Thought: 写Action:之前先想清楚。",
                    "Final Answer: No Action: was needed.")


def _mentioned_actions(rng: random.Random) -> Iterator[tuple]:
    for _ in range(6):
        text = _run_on(rng, _tools(rng, rng.randint(1, 3)))
        lines = text.split("\n")
        lines.insert(rng.randint(0, len(lines)), rng.choice(_ACTION_MENTIONS))
        yield ("\n".join(lines),)


def _no_action(rng: random.Random) -> Iterator[tuple]:
    yield (PRETENDED_SAMPLES[2][0],)
    yield ("",)
    yield (f"Thought: {_thought(rng)}\nFinal Answer: 订单 {_order_id(rng)} 已签收。",)
    yield (f"Action Input: {_order_id(rng)}\nObservation: {_observation_value(rng)}",)
    yield ("您好，包裹已经签收了。\n\u3000",)
    # The key only as written: a lower-case, upper-case or full-width-colon key starts no Action line.
    yield ("action: queryOrder\nACTION: applyRefund\nAction Input: 88231",)
    yield ("Thought: 先查订单。\nAction：queryOrder\nAction Input：88231",)


def _colon_hint(args: tuple, expected: Any, got: Any) -> str | None:
    if not isinstance(got, (list, tuple)):
        return None  # the failure is the type: the shape check said so
    if any(str(name).endswith("\r") for name in got):
        return "(a reply's lines may end in '\\r\\n': a name is without the '\\r'; strip it)"
    unstripped = [mine for mine, name in zip(got, expected)
                  if isinstance(mine, str) and mine != name and mine.strip() == name]
    if len(got) == len(expected) and unstripped:
        name = unstripped[0]
        return f"(a name is stripped of the spaces around it, on both sides: {name!r} is {name.strip()!r})"
    # These replies name no key mid-line, so a name too many most likely came from an `Action Input:` line.
    if len(got) > len(expected) or any(":" in str(name) or str(name).startswith("Input") for name in got):
        return "('Action Input: ...' starts with 'Action' too: match the key with its colon)"
    return None


def _empty_actions(rng: random.Random) -> Iterator[tuple]:
    yield ("Thought: 先查订单。\nAction:\nAction Input: 88231",)
    yield ("Thought: I look it up.\nAction:   \nAction Input: 88231\nAction: queryOrder",)
    yield ("Thought: 查物流。\nAction:\nqueryLogistics\nAction Input: SF1234567890",)


# What models write after a name on the Action line: a comment, the input in brackets, backticks, a second word.
_NAME_TAILS = (" (先查订单)", " (to see when it was signed for)", "[{id}]", " [{id}]", " 查一下", " now", "()")


def _names_of_several_words(rng: random.Random) -> Iterator[tuple]:
    yield ("Action: queryOrder (先查订单)\nAction Input: 88231",)
    yield ("Thought: 查物流。\nAction: `queryLogistics`\nAction Input: SF1234567890",)
    yield ("Action: query order\nAction Input: 88231\nObservation: {}\nAction:  查询 物流 \nAction Input:",)
    for steps in (1, 2, 3):
        lines: list[str] = []
        for tool in _tools(rng, steps):
            tail = rng.choice(_NAME_TAILS).format(id=_order_id(rng))
            lines += _step(rng, tool + tail + rng.choice(("", " ", "  ")), indent=rng.choice(("", " ")))
            lines.append(f"Observation: {_observation_value(rng)}")
        yield ("\n".join(lines),)
    # Colons within the name: only the first one, the key's, ends the key.
    yield ("Action: queryOrder: 88231",)
    yield ("Thought: 查一下退货规则。\nAction: mcp:searchKnowledge\nAction Input: 七天无理由",)
    yield ("Action: tools:queryLogistics:v2 \nAction Input: SF1234567890",)
    # A full stop after the name is text after the key too: it stays.
    yield ("Thought: 先查订单。\nAction: queryOrder。\nAction Input: 88231\nObservation: {}\nAction: applyRefund.",)


def _keys_written_twice(rng: random.Random) -> Iterator[tuple]:
    yield ("Action: Action: queryOrder\nAction Input: 88231",)
    yield ("Thought: 先查订单。\nAction: queryOrder (not Action: applyRefund yet)\nAction Input: 88231",)


def _second_key_hint(args: tuple, expected: list[str], got: object) -> str | None:
    if isinstance(got, (list, tuple)) and any("Action:" in name for name in expected):
        return "(only the first `Action:` of a line is its key: a second one is part of the name)"
    return None


def _first_word_hint(args: tuple, expected: list[str], got: object) -> str | None:
    if not isinstance(got, (list, tuple)) or len(got) != len(expected):
        return None
    if any(str(mine) != name and ":" in name and str(mine).strip() in name.split(":")
           for mine, name in zip(got, expected)):
        return "(only the key's colon ends the key: the name is all the text after the first `:`, colons and all)"
    if any(str(mine) != name and name.startswith(str(mine)) and not name[len(str(mine)):].strip(".。")
           for mine, name in zip(got, expected)):
        return "(the name is all the text after `Action:` on its line: a full stop after it stays)"
    if any(str(mine) != name and name.startswith(str(mine)) for mine, name in zip(got, expected)):
        return "(the name is all the text after `Action:` on its line, not its first word)"
    return None


def _next_line_hint(args: tuple, expected: list[str], got: object) -> str | None:
    if not isinstance(got, (list, tuple)) or "" not in expected or "" in got:
        return None
    if not all(isinstance(name, str) for name in got):
        return None  # the shape's own message says what is wrong (None for an empty name, say)
    if len(got) < len(expected):
        return "(an `Action:` line with nothing after it is still an Action line: its name is \"\")"
    return "(the name is on the Action line itself: a \\s after the colon crossed a line end)"


PRETENDED_RULES = (
    Rule("the tool names of the reply's `Action:` lines, every one, in order (a tool called twice is listed "
         "twice); an `Action Input:` line is not one", _each_action, hint=_colon_hint),
    Rule("an `Action:` line with no space after the colon (`Action:queryOrder`) is one too", _no_space_after_the_key,
         hint=_no_space_hint),
    Rule("an indented `Action:` line is an Action line too", _indented_actions, hint=_full_width_indent("Action:")),
    Rule("a line that mentions `Action:` in the middle (a Thought, an answer) is not an Action line",
         _mentioned_actions, hint=_after_an_answer("Action:")),
    Rule("a reply with no `Action:` line (a final answer, an empty reply, a lower-case or full-width-colon key) "
         "gives an empty list", _no_action, hint=_key_as_written("Action:")),
    Rule("a name is the text after `Action:` on that line: an `Action:` line with nothing after it gives \"\"",
         _empty_actions, hint=_next_line_hint),
    Rule("a name is all the text after `Action:` on its line, stripped of the spaces around it: spaces, "
         "brackets and colons in it stay",
         _names_of_several_words, hint=_first_word_hint),
    Rule("only a line's first `Action:` is its key: a second `Action:` on the line is part of the name",
         _keys_written_twice, hint=_second_key_hint),
    Rule("a key written another way (`Action :` with a space before the colon, a bold `**Action:**`) is none: "
         "such a line is not an Action line", _actions_written_otherwise,
         hint=_written_otherwise_hint("Action:")),
)


def _a_list_of_names(value: object) -> str | None:
    if isinstance(value, (list, tuple)) and all(isinstance(name, str) for name in value):
        return None
    return f"it returned {_brief(value, 40)}: return a list of tool names (strings)"


def _as_list(value: object) -> object:
    """A tuple of names reads as the list it holds. Anything else is left as it is: the state check of
    `agree_on` compares two answers without the shape check first, so this must take any value."""
    return list(value) if isinstance(value, tuple) else value


@grades("Exercise 2", spec=Spec(PRETENDED_RULES, extra=(
    "skipped names the two tools the invented refund skipped: getCurrentTime and searchKnowledge",)))
def check_pretended_calls(pretended_tools: Callable[[str], list[str]] | None, skipped: Any = None) -> None:
    """04, exercise 2: the tools a reply asks for (its `Action:` lines), and the tools the invention skipped."""
    exercise = "Exercise 2"
    if pretended_tools is None and skipped is None:
        return _not_attempted(exercise, "Write def pretended_tools(text) and set skipped above.")
    if pretended_tools is None:
        _fail(exercise, "write pretended_tools(text) too")
    if not callable(pretended_tools):
        _fail(exercise, f"pretended_tools should be a function, got {type(pretended_tools).__name__}")
    tried = agree_on(exercise, "check_pretended_calls", PRETENDED_RULES, pretended_tools, _pretended,
                     shape=_a_list_of_names, read=_as_list, call="pretended_tools(text)")
    if skipped is None:
        _fail(exercise, "set skipped to the tools the invented run skipped")
    # Fixed: which tools a refund decision needs is a fact of the lesson's run, not something to generate.
    if isinstance(skipped, str):
        _fail(exercise, f"skipped={shown(skipped)}: give a list of tool names, one string each "
                        "(['toolA', 'toolB']), not one string")
    names = list(skipped) if isinstance(skipped, (list, tuple, set)) else None
    if names is not None and not all(isinstance(name, str) for name in names):
        _fail(exercise, f"skipped={_brief(skipped, 50)}: give a list of tool names (strings)")
    if names is not None:  # a space typed around a name is no other tool (lesson 00's names are read so too)
        names = [name.strip() for name in names]
    if names is not None and set(names) == {"getCurrentTime", "searchKnowledge"} and len(names) != 2:
        _fail(exercise, f"skipped={shown(skipped)} names a tool more than once: the invented run skipped two tools, "
                        "so give the two names, each once")
    if names is None or set(names) != {"getCurrentTime", "searchKnowledge"}:
        _fail(exercise, f"skipped={shown(skipped)}: deciding a refund needs today's date (how many days since "
                        "signing?) and the shop's policy (which windows apply?); which tools give those?")
    return _passed(exercise, f"{tried} generated replies read: every Action line's tool, in order. The invention "
                             "asked for queryOrder and applyRefund, and skipped the date and the policy: nothing "
                             "checked that a refund was allowed.")
