"""Lesson 05 (the parser): stop at an invented Observation; an anchored Final Answer."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from tinyagent.checks.generated import Rule, Spec, agree_on
from tinyagent.checks.lesson04_stop_sequence import RUN_ON, STOPPED
from tinyagent.checks.reporting import _brief, _fail, _not_attempted, _passed, grades, shown
from tinyagent.parser import FINAL_ANSWER, parse_step

INVENTED_STEP = """Thought: 先查订单。
Action: queryOrder
Action Input: 88231
Observation: {"orderId":"88231","status":"已签收"}
Thought: 已签收，直接退款。
Action: applyRefund
Action Input: {"orderId":"88231","reason":"不回充"}"""

MULTI_LINE_ANSWER = """Thought: 退款已经提交，信息齐了。
Final Answer: 您好，订单 88231 的退款申请已提交：
- 退款单号：RF202606300001
- 预计 1-3 个工作日到账"""

# The lesson's own replies: each is among the inputs the checks below generate (kept importable by these names).
PARSER_CASES = [
    INVENTED_STEP,
    STOPPED,
    MULTI_LINE_ANSWER,
    "Thought: I will use Action: getCurrentTime later.\nAction: queryOrder\nAction Input: 88231",
    # "Observation:" inside a Thought is a mention, not the start of an Observation section
    "Thought: The Observation: part comes from the tool.\nAction: getCurrentTime\nAction Input:",
    ("Thought: The customer wants the parcel.\nAction: queryLogistics needs a number.\nAction: queryOrder\n"
    "Action Input: 88231"),
    'Thought: 可以退款。\nAction: applyRefund\nAction Input: {\n  "orderId": "88231",\n  "reason": "不回充"\n}',
    "Action Input: 88231\nAction: queryOrder",
    "您好，您的包裹已经签收了。",
    "",
]


def _action_of(step: Any) -> tuple[str, str] | None:
    action = getattr(step, "action", None)
    return None if action is None else (action.tool_name, action.tool_input)


def _reading(action: tuple[str, str] | None, final_answer: Any, *, whole: bool = False) -> str:
    """A reading of a reply in a few words: the action and its input, the final answer, or neither. `whole`: the
    input and the answer as they are, not cut short (for a failure that cuts the two readings where they differ)."""
    def cut(value: Any, columns: int) -> str:
        return shown(value) if whole else _brief(value, columns)

    if action is not None:
        name, tool_input = action
        said = f"Action {shown(name)} with input {cut(tool_input, 40)}"
        return said if final_answer is None else f"{said} and Final Answer {cut(final_answer, 30)}"
    return "no action and no answer" if final_answer is None else f"Final Answer {cut(final_answer, 50)}"


@dataclass(frozen=True)
class _Read:
    """What a parse says that the checks compare (the action and the final answer), shown whole: a failure cuts two
    readings where they differ (two inputs cut alike would read the same)."""

    action: tuple[str, str] | None
    final_answer: Any

    def __repr__(self) -> str:
        return _reading(self.action, self.final_answer, whole=True)


def _read(step: Any) -> _Read:
    return _Read(_action_of(step), getattr(step, "final_answer", None))


# -- the pieces of a reply, drawn at random: both languages, any tool, any id --------------------------------
_TOOLS = ("queryOrder", "queryLogistics", "applyRefund", "getCurrentTime", "searchKnowledge", "cancelOrder",
          "checkStock", "calculator", "get_weather", "sendCoupon")
_THOUGHTS = ("用户想退订单 {id}。先查订单。", "签收后第 8 天，属于 15 天内的质量问题。", "我需要知道今天的日期。",
             "先查物流 {tracking}。", "The customer asks about order {id}.", "I need the parcel's status first.",
             "Let me check the policy. 然后再决定。", "已签收，直接退款。")
_SECOND_LINES = ("So I look the order up first.", "然后再查物流。", "- 先查订单", "(the id is {id})")


def _order_id(rng: random.Random) -> str:
    return str(rng.randint(10000, 99999))


def _tracking(rng: random.Random) -> str:
    return rng.choice(("SF", "YT", "JD", "ZTO")) + str(rng.randint(10**9, 10**12))


def _fill(rng: random.Random, template: str) -> str:
    return template.format(id=_order_id(rng), tracking=_tracking(rng))


def _thought_lines(rng: random.Random) -> list[str]:
    lines = [f"Thought: {_fill(rng, rng.choice(_THOUGHTS))}"]
    if rng.random() < 0.3:  # a Thought over two lines: the second starts with no key
        lines.append(_fill(rng, rng.choice(_SECOND_LINES)))
    return lines


def _input_lines(rng: random.Random, *, pretty: bool = False) -> list[str]:
    """An `Action Input:` and its value: an id, a tracking number, a query, nothing, or JSON (over several lines
    when `pretty`)."""
    if pretty:
        value = {"orderId": _order_id(rng), "reason": rng.choice(("质量问题：扫地机不回充", "damaged box"))}
        first, *rest = json.dumps(value, ensure_ascii=False, indent=rng.choice((2, 4))).splitlines()
        return [f"Action Input: {first}", *rest]
    value = rng.choice((_order_id(rng), _tracking(rng), "扫地机 退货 政策", "", f'{{"orderId":"{_order_id(rng)}"}}'))
    return [f"Action Input: {value}".rstrip()]


def _step_lines(rng: random.Random, *, pretty: bool = False) -> list[str]:
    return [*_thought_lines(rng), f"Action: {rng.choice(_TOOLS)}", *_input_lines(rng, pretty=pretty)]


def _observation_lines(rng: random.Random, indent: str = "") -> list[str]:
    """An Observation the model made up: JSON on one line or several, or a sentence; with or without a space
    after the colon (Chinese text is often written without one)."""
    order = {"orderId": _order_id(rng), "status": rng.choice(("已签收", "运输中", "delivered"))}
    kind = rng.randrange(4)
    if kind == 0:
        first, *rest = json.dumps(order, ensure_ascii=False, indent=2).splitlines()
        return [f"{indent}Observation: {first}", *rest]
    value = (json.dumps(order, ensure_ascii=False), f"订单{order['orderId']}已签收", "The parcel was delivered.")[kind - 1]
    return [f"{indent}Observation:{rng.choice((' ', ''))}{value}"]


def _run_on(rng: random.Random, *, pretty: bool = False) -> list[str]:
    """What a model writes after its invented Observation: one to three more steps, more Observations between."""
    lines: list[str] = []
    for n in range(rng.randint(1, 3)):
        if n:
            lines += _observation_lines(rng)
        lines += _step_lines(rng, pretty=pretty and rng.random() < 0.5)
    return lines


def _text(lines: list[str]) -> tuple[str]:
    return ("\n".join(lines),)


# -- exercise 1 ----------------------------------------------------------------------------------------------
def _invented_steps(rng: random.Random) -> Iterator[tuple]:
    yield (INVENTED_STEP,)
    yield (STOPPED,)
    for _ in range(10):
        yield _text([*_step_lines(rng), *_observation_lines(rng), *_run_on(rng)])
    for _ in range(2):  # the Observation comes first: no action is this step's
        yield _text([*_observation_lines(rng), *_step_lines(rng)])
    # An `Observation:` line with nothing after it is a section all the same.
    yield ("Action: queryOrder\nAction Input: 88231\nObservation:\nAction: applyRefund\nAction Input: 88231",)
    yield (("Thought: 先查订单。\nAction: queryOrder\nAction Input: 88231\nObservation:   \n"
            "Thought: 已签收，直接退款。\nAction: applyRefund\nAction Input: {}"),)


def _invented_step_hint(args: tuple, expected: Any, got: Any) -> str | None:
    action, want = _action_of(got), _action_of(expected)
    if action is None or want == action:
        return None
    if not action[0]:
        return "(an `Action:` with no name is no action: .action is None)"
    if want is not None and want[0] == action[0] and not isinstance(action[1], str):
        return "(the Action Input is a string: '' when there is none)"
    if want is not None and want[0] == action[0] and want[1] == action[1].strip():
        return "(strip the Action Input of the spaces around it, as split_sections does)"
    if want is not None and want[0] == action[0]:
        return None  # the same tool: what differs is its input, not the step it came from
    lines = [line.strip() for line in args[0].splitlines()]
    start = next((n for n, line in enumerate(lines) if line.startswith("Observation:")), len(lines))
    if not any(line.startswith("Action:") and line[len("Action:"):].strip() == action[0] for line in lines[start:]):
        return None
    if any(line == "Observation:" for line in lines):
        return "(an `Observation:` line with nothing after it ends the step too)"
    return "(it read the step the model invented after its Observation)"


_OBSERVATION_MENTIONS = ("Thought: The Observation: part comes from the tool.", "Thought: 先别写Observation:，那是工具的事。",
                         "Thought: 等工具返回 Observation: 之后再说。", "Thought: no Observation: yet.")


def _observation_at_a_line_start(rng: random.Random) -> Iterator[tuple]:
    yield (PARSER_CASES[4],)
    for _ in range(5):  # a mention is no section: the action after it is this step's
        lines = [rng.choice(_OBSERVATION_MENTIONS), f"Action: {rng.choice(_TOOLS)}", *_input_lines(rng)]
        if rng.random() < 0.5:
            lines += [*_observation_lines(rng), *_run_on(rng)]
        yield _text(lines)
    for _ in range(5):  # an indented Observation line is a section all the same
        indent = rng.choice((" ", "  ", "    ", "\t"))
        yield _text([*_step_lines(rng), *_observation_lines(rng, indent), *_run_on(rng)])
    # indented with full-width spaces, as Chinese text indents a paragraph: strip() takes them too
    yield (INVENTED_STEP.replace("\nObservation:", "\n\u3000\u3000Observation:"),)


def _observation_line_hint(args: tuple, expected: Any, got: Any) -> str | None:
    """Which of the rule's two halves was missed: an indented `Observation:` line read as no section, or a mention
    mid-line read as one (both show as the wrong action, and the input is cut short)."""
    action, want = _action_of(got), _action_of(expected)
    if action == want:
        return None
    lines = str(args[0]).splitlines()
    indented = next((n for n, line in enumerate(lines)
                     if line.strip().startswith("Observation:") and line != line.lstrip()), None)
    if indented is not None and action is not None and any(
            line.strip().startswith("Action:") for line in lines[indented + 1:]):
        if "\u3000" in lines[indented][:lines[indented].find("Observation:")]:
            return "(that `Observation:` line is indented, with U+3000 spaces: strip() takes them)"
        return "(that `Observation:` line is indented: strip it before testing its start)"
    if any("Observation:" in line and not line.strip().startswith("Observation:") for line in lines):
        return "(a Thought that mentions `Observation:` mid-line is no section: the action after it is this step's)"
    return None


def _last_action(rng: random.Random) -> Iterator[tuple]:
    yield (PARSER_CASES[3],)
    yield (PARSER_CASES[5],)
    yield (PARSER_CASES[8],)
    for _ in range(4):  # two actions before the Observation: the last, with its own input
        lines = [*_step_lines(rng), *_step_lines(rng)]
        if rng.random() < 0.5:
            lines += [*_observation_lines(rng), *_run_on(rng)]
        yield _text(lines)
    for _ in range(3):  # the last action has no input: an earlier input is not its input
        yield _text([*_step_lines(rng), f"Action: {rng.choice(_TOOLS)}"])
    for _ in range(2):  # an Action line inside a Thought, then the real one
        yield _text([f"Thought: {_fill(rng, rng.choice(_THOUGHTS))}",
                     f"Action: {rng.choice(_TOOLS)} needs a tracking number, and I only have {_order_id(rng)}.",
                     "So I look the order up first.", f"Action: {rng.choice(_TOOLS)}", *_input_lines(rng)])


def _values_over_lines(rng: random.Random) -> Iterator[tuple]:
    yield (PARSER_CASES[7],)
    for _ in range(5):
        lines = _step_lines(rng, pretty=True)
        if rng.random() < 0.6:
            lines += [*_observation_lines(rng), *_run_on(rng, pretty=True)]
        yield _text(lines)


def _continued_value_hint(args: tuple, expected: Any, got: Any) -> str | None:
    want, have = _action_of(expected), _action_of(got)
    if want is None or have is None or want[0] != have[0] or want[1] == have[1] or not isinstance(have[1], str):
        return None
    if "".join(want[1].split()) == "".join(have[1].split()):
        return "(keep a value's lines as written, indented too)"
    return None


_ANSWERS = ("您好，订单 {id} 的退款申请已提交：\n- 退款单号：RF{refund}\n- 预计 1-3 个工作日到账",
            "Your parcel {tracking} was signed for on 22 June.", "订单 {id} 已签收。", "Done.\n\nRefund RF{refund} is on its way.",
            "1. 退款已提交\n2. 单号 RF{refund}")


def _answer(rng: random.Random) -> str:
    return rng.choice(_ANSWERS).format(id=_order_id(rng), tracking=_tracking(rng), refund=rng.randint(10**11, 10**12))


def _final_answers(rng: random.Random) -> Iterator[tuple]:
    yield (MULTI_LINE_ANSWER,)
    yield (ANCHORED_CASES[0][0],)  # the mention in a Thought ends the run too: parse_step finds the key anywhere
    yield ("**Final Answer:** done",)
    for _ in range(6):
        lines = _thought_lines(rng)
        if rng.random() < 0.4:  # an answer wins over an action in the same reply
            lines += [f"Action: {rng.choice(_TOOLS)}", *_input_lines(rng)]
        lines.append(f"Final Answer:{rng.choice((' ', '', '  '))}{_answer(rng)}")
        yield _text(lines)
    for _ in range(2):
        yield _text([f"Thought: {rng.choice(('现在可以给出', 'Too early for a'))} Final Answer: {_answer(rng)}",
                     f"Action: {rng.choice(_TOOLS)}", *_input_lines(rng)])
    # An Observation stops the actions, not the answer: a Final Answer after it still makes the reply an answer.
    yield (RUN_ON,)
    yield (('Thought: 先查订单。\nAction: queryOrder\nAction Input: 88231\nObservation: {"status":"已签收"}\n'
            "Thought: 可以回复了。\nFinal Answer: 已签收。"),)
    # A reply may end in a newline or spaces: the answer is stripped of them, as parse_step strips it.
    yield ("Thought: 可以回复了。\nFinal Answer: 订单 88231 已签收。\n",)
    yield ("Final Answer: Your refund is on its way.  \n\n",)
    # Only the first `Final Answer:` starts the answer: a later one is part of it (not split(...)[1] or [-1]).
    yield ("Final Answer: 已提交。\nFinal Answer: 单号 RF202606300001",)
    # An answer that starts with letters of the key, with a colon of its own: all of it stays.
    yield ("Final Answer: All set at 19:05.",)
    # An empty answer is still an answer (''), and it wins over an action as any answer does: not `if final:`.
    yield ("Thought: 先查订单。\nAction: queryOrder\nAction Input: 88231\nFinal Answer:",)
    yield ("Action: getCurrentTime\nAction Input: \nFinal Answer:   \n",)


def _answer_after_observation_hint(args: tuple, expected: Any, got: Any) -> str | None:
    text = args[0]
    if (getattr(expected, "final_answer", None) is not None and getattr(got, "final_answer", None) is None
            and -1 < text.find("Observation:") < text.find(FINAL_ANSWER)):
        return "(an Observation stops the actions only: a Final Answer after it is still the answer)"
    want, have = getattr(expected, "final_answer", None), getattr(got, "final_answer", None)
    if isinstance(want, str) and isinstance(have, str) and have != want and have.strip() == want:
        return "(strip the answer of the spaces and newlines around it, as parse_step does)"
    if isinstance(want, str) and isinstance(have, str) and have != want:
        return _answer_cut_hint(want, have)
    return None


def _answer_cut_hint(want: str, have: str) -> str | None:
    """A hint for an answer that is a piece of the expected one: cut at a second `Final Answer:`, at a colon
    of its own, or by lstrip('Final Answer:'), which strips letters, not the key."""
    if FINAL_ANSWER in want and (want.startswith(have) or want.endswith(have)):
        return "(a later `Final Answer:` is part of the answer)"
    if not have or not want.endswith(have):
        return None
    cut = want[: len(want) - len(have)]
    if cut.rstrip().endswith(":"):
        return "(colons in the answer stay: only the key's colon ends the key)"
    if set(cut) <= set(FINAL_ANSWER):
        return "(lstrip('Final Answer:') strips letters, not the key: cut the key off by its length)"
    return None


def _neither(rng: random.Random) -> Iterator[tuple]:
    yield (PARSER_CASES[9],)
    yield ("",)
    yield ("\u200b🙂",)
    yield (f"Thought: {_fill(rng, rng.choice(_THOUGHTS))}",)
    yield _text(_observation_lines(rng))
    tool, order = rng.choice(_TOOLS), _order_id(rng)
    for sloppy in (f"**Action:** {tool}\n**Action Input:** {order}", f"action: {tool}\naction input: {order}",
                   f"Action：{tool}\nAction Input：{order}", f"Thought：先查订单。\nfinal answer: 订单 {order} 已签收",
                   f"Action:\nAction Input: {order}"):
        yield (sloppy,)


def _empty_last_actions(rng: random.Random) -> Iterator[tuple]:
    """The last `Action:` line wins even when it names nothing: then the step has no action, whatever came before."""
    tool, order = rng.choice(_TOOLS), _order_id(rng)
    yield (f"Thought: 先查订单。\nAction: {tool}\nAction Input: {order}\nAction:\nAction Input: {order}",)
    yield (f"Thought: check it.\nAction: {tool}\nAction Input: {order}\nAction: \n",)

def _sloppy_observations(rng: random.Random) -> Iterator[tuple]:
    # An Observation key counts only as written too: a sloppy one is a line of the value above, and ends nothing.
    for sloppy in ("observation: {\"status\":\"已签收\"}", "Observation：已签收", "**Observation:** 已签收",
                   "OBSERVATION: delivered"):
        yield ((f"Thought: 先查订单。\nAction: queryOrder\nAction Input: 88231\n{sloppy}\nThought: 已签收。\n"
                "Action: applyRefund\nAction Input: 88231"),)


def _sloppy_observation_hint(args: tuple, expected: Any, got: Any) -> str | None:
    if _action_of(got) != _action_of(expected):
        return "(a key counts only as written: 'observation:' or '**Observation:**' is no section)"
    return None


def _values_after_keys(rng: random.Random) -> Iterator[tuple]:
    """Values that start with letters of their key: all of them stay."""
    yield ("Thought: 先看库存。\nAction:checkStock\nAction Input:iPhone 15",)
    yield ("Thought: 查一下政策。\nAction: searchKnowledge\nAction Input: noise-cancelling headphones 退货",)
    yield ("Action:cancelOrder\nAction Input: 88231",)


def _value_hint(args: tuple, expected: Any, got: Any) -> str | None:
    want, have = _action_of(expected), _action_of(got)
    if want is None or have is None or want == have:
        return None
    for mine, theirs, key in zip(have, want, ("Action:", "Action Input:")):
        if mine != theirs and mine and theirs.endswith(mine) and set(theirs[: len(theirs) - len(mine)]) <= set(key):
            return f"(lstrip('{key}') strips letters, not the key: cut the key off by its length)"
    return None


def _keys_spaced(rng: random.Random) -> Iterator[tuple]:
    """Keys with a space before the colon: a loose regex (`Action\\s*:`) reads them as keys, parse_step does not."""
    order = _order_id(rng)
    yield (f"Thought: 先查订单。\nAction : queryOrder\nAction Input : {order}",)
    yield ((f"Thought: 先查订单。\nAction: queryOrder\nAction Input: {order}\nObservation : {{\"status\":\"已签收\"}}\n"
            f"Thought: 已签收。\nAction: applyRefund\nAction Input: {order}"),)
    yield (f"Thought: 可以回复了。\nFinal Answer : 订单 {order} 已签收。",)


def _spaced_key_hint(args: tuple, expected: Any, got: Any) -> str | None:
    if _read(got) != _read(expected):
        return "(a key counts only as written: 'Action :', 'Observation :' or 'Final Answer :' is none)"
    return None


def _two_inputs(rng: random.Random) -> Iterator[tuple]:
    """Two `Action Input:` lines after the last `Action:`: parse_step keeps the later (each replaces the one before).
    Fixed inputs: nothing drawn from `rng`."""
    yield ("Thought: 先查订单。\nAction: queryOrder\nAction Input: 88231\nAction Input: 88232",)
    yield ("Action: searchKnowledge\nAction Input: 退货\nAction Input: 扫地机 退货 政策",)
    yield ('Action: applyRefund\nAction Input: 88231\nAction Input: {\n  "orderId": "88231",\n  "reason": "不回充"\n}',)
    yield (("Action: queryOrder\nAction Input: 88231\nAction: queryLogistics\nAction Input: 88231\n"
            "Action Input: SF1234567890"),)
    yield (('Action: queryOrder\nAction Input: 88230\nAction Input: 88231\nObservation: {"status":"已签收"}\n'
            "Action: applyRefund\nAction Input: 88231"),)
    yield ("Thought: 看看时间。\nAction: getCurrentTime\nAction Input: now\nAction Input:",)


def _two_inputs_hint(args: tuple, expected: Any, got: Any) -> str | None:
    want, have = _action_of(expected), _action_of(got)
    if want is not None and have is not None and want[0] == have[0] and want[1] != have[1]:
        return "(of two `Action Input:` lines after the last `Action:`, the later one counts)"
    return None


PARSER_RULES = (
    Rule("an `Observation:` section ends the step: the action the model invented after it is not read",
         _invented_steps, hint=_invented_step_hint),
    Rule("`Observation:` is a section only at the start of a (stripped) line: a Thought that mentions it goes on",
         _observation_at_a_line_start, hint=_observation_line_hint),
    Rule("the last `Action:` line wins, with the `Action Input:` that follows it (an earlier input belongs to the "
         "discarded action)", _last_action),
    Rule("a line that starts with no key continues the value above it (JSON written over several lines)",
         _values_over_lines, hint=_continued_value_hint),
    Rule("`Final Answer:` found anywhere (after an Observation too) makes the reply an answer: everything after "
         "it to the end of the text, as parse_step reads it", _final_answers, hint=_answer_after_observation_hint),
    Rule("keys count only as written (a bold, lower-case or full-width-colon key is none): a reply with no "
         "`Action:` and no `Final Answer:` has neither; an `Action:` with no name is no action", _neither),
    Rule("an `Observation:` key counts only as written too: a bold, lower-case or full-width-colon one ends no step",
         _sloppy_observations, hint=_sloppy_observation_hint),
    Rule("the last `Action:` line wins even when it names nothing: then there is no action", _empty_last_actions),
    Rule("a value is all the text after its key (`Action:checkStock` names checkStock, `Action Input: iPhone 15` "
         "reads iPhone 15)", _values_after_keys, hint=_value_hint),
    Rule("a key with a space before its colon (`Action :`, `Observation :`, `Final Answer :`) is none either",
         _keys_spaced, hint=_spaced_key_hint),
    Rule("of two `Action Input:` lines after the last `Action:`, the later one counts (each replaces the one before)",
         _two_inputs, hint=_two_inputs_hint),
)


def _a_step(value: Any) -> str | None:
    if not (hasattr(value, "action") and hasattr(value, "final_answer")):
        return (f"it returned {_brief(value, 40)}: return a Step with .action and .final_answer, as parse_step's "
                "ParsedStep has")
    action = value.action
    if action is not None and not (hasattr(action, "tool_name") and hasattr(action, "tool_input")):
        return f"its .action is {_brief(action, 40)}: make it an Action(tool_name, tool_input), or None"
    return None


@grades("Exercise 1", spec=Spec(PARSER_RULES))
def check_parser_stops_at_observation(my_parse_v2: Callable[[str], Any] | None) -> None:
    """05, exercise 1: a parser that ignores everything after an invented `Observation:`."""
    exercise = "Exercise 1"
    if my_parse_v2 is None:
        return _not_attempted(exercise, "Write def my_parse_v2(text) in the cell above.")
    if not callable(my_parse_v2):
        _fail(exercise, f"my_parse_v2 should be a function, got {type(my_parse_v2).__name__}")
    tried = agree_on(exercise, "check_parser_stops_at_observation", PARSER_RULES, my_parse_v2, parse_step,
                     shape=_a_step, read=_read, call="my_parse_v2(text)")
    return _passed(exercise, f"{tried} generated replies read as parse_step reads them (the same action, the same "
                             "final answer); the invented step after an Observation is ignored.")


# -- exercise 2 ----------------------------------------------------------------------------------------------
ANCHORED_CASES = [
    ("Thought: Too early for a Final Answer: I need the order first.\nAction: queryOrder\nAction Input: 88231",
     None, "a Thought that mentions 'Final Answer:' mid-line"),
    (MULTI_LINE_ANSWER,
     "您好，订单 88231 的退款申请已提交：\n- 退款单号：RF202606300001\n- 预计 1-3 个工作日到账",
     "a three-line answer (the refund id is on its second line)"),
    ("Thought: done.\n   Final Answer: 好的", "好的", "an indented Final Answer line"),
    ("**Final Answer:** done", None, "a bold key (the price of anchoring)"),
    ("Thought: ok\nAction: getCurrentTime", None, "a reply with an action"),
]


def _anchored(text: str) -> str | None:
    """05, exercise 2's answer (the solution's behaviour)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith(FINAL_ANSWER):
            return "\n".join([stripped[len(FINAL_ANSWER):]] + lines[i + 1:]).strip()
    return None


def _answer_lines(rng: random.Random, indent: str = "") -> list[str]:
    """A reply that ends in an answer: a Thought (maybe an action before it), then the `Final Answer:` line and
    every line of the answer, on the key's line or starting on the next, maybe with blank lines around it."""
    lines = _thought_lines(rng) if rng.random() < 0.8 else []
    if rng.random() < 0.3:
        lines += [f"Action: {rng.choice(_TOOLS)}", *_input_lines(rng)]
    answer = _answer(rng)
    if rng.random() < 0.2:
        answer = f"\n{answer}"  # the answer starts on the line after the key
    after = rng.choice(("", "", "\n", "  \n\n"))  # what follows the answer is stripped off
    lines.append(f"{indent}Final Answer:{rng.choice((' ', '', '  '))}{answer}{after}")
    return lines


def _answers_to_the_end(rng: random.Random) -> Iterator[tuple]:
    yield (MULTI_LINE_ANSWER,)
    for _ in range(10):
        yield _text(_answer_lines(rng))
    yield ("Final Answer: 已为您提交退款：\n  - 单号 RF202606300001\n  - 原路退回",)  # indented lines of the answer stay
    # A keyed line after the answer is part of it all the same: the answer runs to the end of the text.
    yield ("Final Answer: 退款已提交，单号 RF202606300001。\nThought: 已完成。",)
    yield ("Thought: 可以回复了。\nFinal Answer: 订单 88231 已签收。\nAction: queryOrder\nAction Input: 88231",)
    # Only the first `Final Answer:` line starts the answer: a later one is a line of it.
    yield ("Final Answer: 退款已提交。\nThought: 再确认一下。\nFinal Answer: 单号 RF202606300001。",)
    # An Observation line after the answer is part of it too (it ends actions, not the answer).
    yield ('Thought: 可以回复了。\nFinal Answer: 订单 88231 已签收。\nObservation: {"orderId":"88231","status":"已签收"}',)
    # An answer that starts with letters of the key, with a colon of its own: all of it stays.
    yield ("Final Answer: All set at 19:05.",)
    # The key twice on its line (a model that repeats it, an answer that quotes it): all after the first stays.
    yield ("Thought: 可以回复了。\nFinal Answer: Final Answer: 订单 88231 已签收。",)
    yield ("Final Answer: 先写 Final Answer: 再写答案。",)
    # A fenced answer is everything after the key too, its fence lines included.
    yield ("Thought: 可以回复了。\nFinal Answer: ```\n订单 88231 已签收。\n```",)


def _tab_indent_hint(args: tuple, expected: Any, got: Any) -> str | None:
    """A key indented with a tab missed: the failing input is shown cut short, so say what the indent is."""
    indents = [line[:line.find(FINAL_ANSWER)] for line in str(args[0]).splitlines()
               if line.strip().startswith(FINAL_ANSWER)]
    if got is None and isinstance(expected, str) and any("\t" in indent for indent in indents):
        return "(that `Final Answer:` line is indented with a tab: strip() takes tabs off too, ' ' or ' *' does not)"
    if got is None and isinstance(expected, str) and any("\u3000" in indent for indent in indents):
        return ("(that `Final Answer:` line is indented with U+3000 spaces: strip() takes them off too, ' ' or ' *' "
                "does not)")
    return None


def _indented_keys(rng: random.Random) -> Iterator[tuple]:
    yield (ANCHORED_CASES[2][0],)
    for _ in range(4):
        yield _text(_answer_lines(rng, indent=rng.choice((" ", "  ", "    ", "\t"))))
    # indented with full-width spaces, as Chinese text indents a paragraph: strip() takes them too
    yield ("Thought: 好了。\n\u3000\u3000Final Answer: 订单 88231 已签收。",)


_ANSWER_MENTIONS = ("Thought: Too early for a Final Answer: I need the order first.",
                    "Thought: 现在还不能给Final Answer:，先查订单。", "Thought: 先查订单，再写 Final Answer: 给顾客。",
                    "Action Input: Final Answer: {id}")


def _mid_line(rng: random.Random) -> Iterator[tuple]:
    yield (ANCHORED_CASES[0][0],)
    yield (ANCHORED_CASES[3][0],)
    for _ in range(4):
        yield _text([_fill(rng, rng.choice(_ANSWER_MENTIONS)), f"Action: {rng.choice(_TOOLS)}", *_input_lines(rng)])
    for _ in range(3):  # a mention first, a real answer line later: the real one
        yield _text([_fill(rng, rng.choice(_ANSWER_MENTIONS)), *_answer_lines(rng)])
    yield (f"**Final Answer:** {_answer(rng)}",)


def _nothing_after_the_key(rng: random.Random) -> Iterator[tuple]:
    yield ("Final Answer:",)
    yield (f"Thought: {_fill(rng, rng.choice(_THOUGHTS))}\nFinal Answer:   ",)
    yield ("Thought: 好了。\n  Final Answer:\n\n",)


def _no_answer_line(rng: random.Random) -> Iterator[tuple]:
    yield (ANCHORED_CASES[4][0],)
    yield ("",)
    yield ("您好，您的包裹已经签收了。",)
    yield ("\u200b🙂\n",)
    for _ in range(3):
        yield _text(_step_lines(rng, pretty=rng.random() < 0.3))
    # The key only as written: a lower-case or full-width-colon key is none.
    yield ("final answer: 好的",)
    yield ("Thought: 好了。\nFINAL ANSWER: 已签收。",)
    yield ("Thought: 好了。\nFinal Answer：订单 88231 已签收。",)


def _cut_at_line_end(args: tuple, expected: Any, got: Any) -> str | None:
    if isinstance(expected, str) and got != expected and any(
            line.strip().startswith(FINAL_ANSWER) and line.count(FINAL_ANSWER) > 1 for line in str(args[0]).splitlines()):
        return "(`Final Answer:` twice on a line: all after the first stays, the second too)"
    if isinstance(expected, str) and isinstance(got, str) and got and expected.startswith(got):
        if expected[len(got):].strip().startswith(("Thought:", "Action:", "Observation:")):
            return "(an answer runs to the end of the text, not to the end of its line: keyed lines too)"
        return "(an answer runs to the end of the text, not to the end of its line)"
    if (isinstance(expected, str) and isinstance(got, str) and got != expected and expected.endswith(got)
            and FINAL_ANSWER in expected):
        return "(the first line that starts with `Final Answer:` counts: a later one is part of the answer)"
    if isinstance(expected, str) and isinstance(got, str) and got != expected:
        return _answer_cut_hint(expected, got)
    return None


def _key_as_written(args: tuple, expected: Any, got: Any) -> str | None:
    if expected is None and got == "":
        return "(no line starts with `Final Answer:` here: return None; '' is for a key with nothing after it)"
    if expected is None and isinstance(got, str):
        lines = [line.strip() for line in args[0].splitlines()]
        if any(line.lower().replace("：", ":").startswith("final answer:") for line in lines):
            return "(the key counts only as written: not 'final answer:', 'FINAL ANSWER:' or 'Final Answer：')"
    return None


def _answer_keys_spaced(rng: random.Random) -> Iterator[tuple]:
    yield ("Final Answer : 好的",)
    yield (f"Thought: 好了。\n  Final Answer : 订单 {_order_id(rng)} 已签收。",)
    yield ("Thought: 好了。\nFinal Answer : 退款已提交。\nFinal Answer: 单号 RF202606300001。",)


def _spaced_answer_hint(args: tuple, expected: Any, got: Any) -> str | None:
    if isinstance(got, str) and got != expected:
        return "(the key counts only as written: 'Final Answer :', with a space before the colon, is none)"
    return None


ANCHORED_RULES = (
    Rule("`Final Answer:` at the start of a line: the answer is everything after it to the end of the text, every "
         "line of it (stripped of the spaces around it)", _answers_to_the_end, hint=_cut_at_line_end),
    Rule("the line is stripped before its start is tested: an indented `Final Answer:` line counts",
         _indented_keys, hint=_tab_indent_hint),
    # Before the mid-line rule: an answer that returns '' for no answer line fails on these first, under the
    # sentence that says None, not on a bold key under the mid-line sentence.
    Rule("with no line that starts with `Final Answer:` (a lower-case or full-width-colon key is none), return None",
         _no_answer_line, hint=_key_as_written),
    Rule("`Final Answer:` in the middle of a line (a Thought that mentions it, a bold **Final Answer:**) does not "
         "count; a later line that starts with it does", _mid_line),
    Rule("a `Final Answer:` line with nothing after it is an empty answer, '', not None", _nothing_after_the_key),
    Rule("a `Final Answer :` line (a space before the colon) does not start with `Final Answer:`: it is no answer line",
         _answer_keys_spaced, hint=_spaced_answer_hint),
)


def _a_string_or_none(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return None
    return f"it returned {_brief(value, 40)}: return the answer as a string, or None"


@grades("Exercise 2", spec=Spec(ANCHORED_RULES))
def check_anchored_final_answer(final_answer_anchored: Callable[[str], str | None] | None) -> None:
    """05, exercise 2: `Final Answer:` found only at the start of a line, and kept to the end of the text."""
    exercise = "Exercise 2"
    if final_answer_anchored is None:
        return _not_attempted(exercise, "Write def final_answer_anchored(text) in the cell above.")
    if not callable(final_answer_anchored):
        _fail(exercise, f"final_answer_anchored should be a function, got {type(final_answer_anchored).__name__}")
    tried = agree_on(exercise, "check_anchored_final_answer", ANCHORED_RULES, final_answer_anchored, _anchored,
                     shape=_a_string_or_none, call="final_answer_anchored(text)")
    return _passed(exercise, f"{tried} generated replies read: the key counts only at a line start, and the whole "
                             "answer is kept; a bold **Final Answer:** is what you lose.")
