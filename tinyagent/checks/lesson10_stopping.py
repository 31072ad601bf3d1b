"""Lesson 10 (stopping): the second article's loop counter fixed, and a cost budget as a stop rule."""

from __future__ import annotations

import contextlib
import copy
import itertools
import math
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

from tinyagent.agent import ReActAgent
from tinyagent.checks.generated import Rule, Spec, agree_on
from tinyagent.checks.lesson06_react_loop import ORDER_STEP
from tinyagent.checks.reporting import (
    ExerciseFailed,
    _brief,
    _fail,
    _fresh_shop,
    _instance,
    _not_attempted,
    _passed,
    _run,
    grades,
    shown,
)
from tinyagent.events import LlmCall, Observation, Parsed, ToolCall
from tinyagent.llm_client import ChatResult
from tinyagent.loop_parts import Stop
from tinyagent.parser import parse_step
from tinyagent.prompts import build_system_prompt, detect_language
from tinyagent.registry import ToolRegistry
from tinyagent.robustness.stop_rules import LimitReached, StopRules
from tinyagent.shop import shop_registry
from tinyagent.tools import FunctionTool
from tinyagent.trace import Trace


class GivingUpModel:
    """A scripted model for the loop-counter check: call n gets `script(n)`; after `give_up_after` calls
    it writes a Final Answer itself, so even a loop whose counter never moves ends (and the check says so)."""

    GAVE_UP = "(the check's model gave up)"

    def __init__(self, script: Callable[[int], str], give_up_after: int):
        self.script, self.give_up_after = script, give_up_after
        self.calls = 0

    @property
    def ran_away(self) -> bool:
        return self.calls > self.give_up_after

    def chat(self, messages: list[dict], **options: Any) -> ChatResult:
        n, self.calls = self.calls, self.calls + 1
        text = f"Thought: enough.\nFinal Answer: {self.GAVE_UP}" if n >= self.give_up_after else self.script(n)
        return ChatResult(text, "stop", {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15})


MISSING_TOOL_STEP = "Thought: 查一下订单。\nAction: checkOrder\nAction Input: 88231\n"
FINAL_STEP = "Thought: 查到了。\nFinal Answer: 订单 88231 已签收。"
TIME_STEP = "Thought: 现在几点？\nAction: getCurrentTime\nAction Input: \n"
# The run that reads what each model call is sent: a tool that works, a missing one, another that works, an answer.
HEARD_SCRIPT = (ORDER_STEP, MISSING_TOOL_STEP, TIME_STEP, FINAL_STEP)
HEARD_QUESTIONS = ("帮我看看订单 88231 的快递到哪了。", "Where is the parcel of order 88231?")


class _ListeningModel(GivingUpModel):
    """A GivingUpModel that also reads what each call is sent, as seed_loop sends it: the system prompt first,
    the question, then each earlier round whose tool worked as its reply (an assistant message) and its result (a
    user message "Observation: ..."); other messages between them are let be. `missing`: the first thing a call
    lacked, or None."""

    def __init__(self, script: Callable[[int], str], give_up_after: int, question: str):
        super().__init__(script, give_up_after)
        self.question, self.missing = question, None
        self.tools = shop_registry(_fresh_shop())
        self.heard: list[tuple[int, str, str]] = []  # (round, reply, its observation) of each round whose tool worked

    def chat(self, messages: list[dict], **options: Any) -> ChatResult:
        n = self.calls
        if self.missing is None:
            lacked = self._lacked(messages)
            if lacked is None and "Observation:" not in (options.get("stop") or ()):
                lacked = 'stop=["Observation:"], so that the model stops where the tool\'s result goes'
            if lacked is None and n == 0 and isinstance(messages, list) and len(messages) != 2:
                lacked = (f"just the system prompt and the question (it was sent {len(messages)} messages: "
                          "a conversation kept from an earlier call?)")
            self.missing = None if lacked is None else f"model call {n + 1} was not sent {lacked}"
        result = super().chat(messages, **options)
        step = parse_step(result.text)
        tool = self.tools.get(step.action.tool_name) if step.action is not None else None
        with contextlib.suppress(Exception):  # a missing or raising tool: the seed appends nothing that round
            self.heard.append((n + 1, result.text, tool.invoke(step.action.tool_input)))
        return result

    def _lacked(self, messages: Any) -> str | None:
        said = [(m.get("role"), str(m.get("content", "")).strip()) for m in messages if isinstance(m, dict)] \
            if isinstance(messages, list) else []
        prompt = ("system", build_system_prompt(self.tools, detect_language(self.question)).strip())
        if not said or said[0] != prompt:
            return "the system prompt first, in the question's language (build_system_prompt(tools, " \
                   "detect_language(question)))"
        at = _find(said, 1, ("user", self.question.strip()))
        if at is None:
            return "the question as a user message"
        for number, reply, observation in self.heard:
            at = _find(said, at + 1, ("assistant", reply.strip()))
            if at is None:
                return f"round {number}'s reply (its tool worked) as an assistant message"
            at = _find(said, at + 1, ("user", f"Observation: {observation.strip()}"))
            if at is None:
                return f"round {number}'s result as a user message, \"Observation: \" + what the tool returned"
        return None


def _find(said: list[tuple[str, str]], start: int, message: tuple[str, str]) -> int | None:
    """Where `message` (role, content) is in `said`, from `start` on; "Observation:" read with or without a space."""
    def same(other: tuple[str, str]) -> bool:
        return other == message or other[0] == message[0] == "user" and other[1].startswith("Observation:") and \
            message[1].startswith("Observation:") and other[1][12:].strip() == message[1][12:].strip()
    return next((n for n in range(start, len(said)) if same(said[n])), None)


LOOP_COUNTER_CASES = [
    # (what the model does, limit, its reply to call n, model calls expected, the answer expected or None)
    ("a model that keeps calling a tool that works", 4, lambda n: ORDER_STEP, 4, None),
    ("a model that answers in round 2", 4, lambda n: ORDER_STEP if n < 1 else FINAL_STEP, 2, "订单 88231 已签收。"),
    ("a model that calls a missing tool twice, then answers", 4,
     lambda n: MISSING_TOOL_STEP if n < 2 else FINAL_STEP, 3, "订单 88231 已签收。"),
    ("a model that only ever calls a missing tool", 4, lambda n: MISSING_TOOL_STEP, 4, None),
    ("a model that keeps calling a tool that works, with limit=1", 1, lambda n: ORDER_STEP, 1, None),
]


# -- exercise 1's inputs, drawn from its spec: (question, limit, the model's replies) -------------------------
# The model's reply to call n is replies[n], and the last one again after them (a model that never answers keeps
# doing the last thing); past 3 * limit + 2 calls it gives up (GivingUpModel), so a loop that never ends still does.
_QUESTIONS = ("帮我看看订单 {id} 的快递到哪了。", "Where is the parcel of order {id}?", "订单 {id} 能退吗？",
              "What time is it, and what is the status of {id}?")
_FINALS = ("订单 {id} 已签收。", "Your order {id} was signed for on 22 June.", "订单 {id}：\n- 已签收\n- 运单号 SF1234567890",
           "It is 19:05 now.\nOrder {id} has shipped.", "抱歉，没有查到订单 {id}。")
RAISING_TOOL = "checkStock"  # a tool of the check's registry that raises every time


def _working_step(rng: random.Random) -> str:
    tool, tool_input = rng.choice((("queryOrder", str(rng.randint(10000, 99999))), ("queryOrder", "88231"),
                                   ("getCurrentTime", ""), ("searchKnowledge", rng.choice(("退货 政策", "warranty")))))
    thought = rng.choice(("先查一下。", "Let me look it up.", "查订单。"))
    return f"Thought: {thought}\nAction: {tool}\nAction Input: {tool_input}\n"


def _throwing_step(rng: random.Random) -> str:
    kind = rng.randrange(3)
    if kind == 0:  # a tool the registry does not have: tools.get returns None
        name = rng.choice(("checkOrder", "trackParcel", "查询订单", "queryorder"))
        return f"Thought: 查一下。\nAction: {name}\nAction Input: {rng.randint(10000, 99999)}\n"
    if kind == 1:  # a tool that raises
        return f"Thought: Is it in stock?\nAction: {RAISING_TOOL}\nAction Input: S10 Pro\n"
    return rng.choice(("I think the parcel is on its way.", "让我想想……", ""))  # neither Action nor Final Answer


def _final_step(rng: random.Random, order_id: str) -> str:
    return f"Thought: {rng.choice(('查到了。', 'Done.'))}\nFinal Answer: {rng.choice(_FINALS).format(id=order_id)}"


def _question(rng: random.Random) -> tuple[str, str]:
    order_id = str(rng.randint(10000, 99999))
    return rng.choice(_QUESTIONS).format(id=order_id), order_id


def _tools_that_work(rng: random.Random) -> Iterator[tuple]:
    for limit in (1, 2, 3, 5, 7, 10, 12):
        question, _ = _question(rng)
        yield (question, limit, tuple(_working_step(rng) for _ in range(rng.randint(1, 3))))
    yield ("帮我看看订单 88231 的快递到哪了。", 0, (ORDER_STEP,))  # limit=0: no round, so no model call at all


def _tools_that_throw(rng: random.Random) -> Iterator[tuple]:
    for _ in range(10):
        question, order_id = _question(rng)
        limit = rng.randint(1, 8)
        replies = [rng.choice((_working_step, _throwing_step, _throwing_step))(rng) for _ in range(rng.randint(1, 9))]
        if rng.random() < 0.4:
            replies.append(_final_step(rng, order_id))  # reached or not, as the limit falls
        yield (question, limit, tuple(replies))


def _answers(rng: random.Random) -> Iterator[tuple]:
    for _ in range(10):
        question, order_id = _question(rng)
        before = [rng.choice((_working_step, _throwing_step))(rng) for _ in range(rng.randint(0, 4))]
        limit = rng.randint(len(before) + 1, len(before) + 4)
        yield (question, limit, (*before, _final_step(rng, order_id)))
    # "Final Answer:" with nothing after it: parse_step reads "" (not None), the model's answer all the same
    yield ("订单 88231 能退吗？", 3, (ORDER_STEP, "Thought: 没什么可说的。\nFinal Answer:"))
    # a Thought that mentions "final answer:" in lower case is no answer: parse_step reads the Action after it
    yield ("Where is the parcel of order 88231?", 3, (
        "Thought: I have no final answer: yet, so I check the order.\nAction: queryOrder\nAction Input: 88231\n",
        FINAL_STEP))


def _answers_too_late(rng: random.Random) -> Iterator[tuple]:
    for _ in range(6):
        question, order_id = _question(rng)
        limit = rng.randint(1, 5)
        before = [rng.choice((_working_step, _throwing_step))(rng) for _ in range(limit + rng.randint(0, 2))]
        yield (question, limit, (*before, _final_step(rng, order_id)))


def _never_answering_pairs(rng: random.Random) -> Iterator[tuple]:
    """Two models that never answer, for the same question and limit: every round a tool that works, the two with
    other Thoughts and other order ids, so other tool results too."""
    thoughts = (("先查一下。", "Let me look it up.", "查订单。"), ("再核对一次。", "Checking once more.", "看看别的订单。"))
    for _ in range(6):
        question, _ = _question(rng)
        limit = rng.randint(1, 5)
        ids = ["88231", "88232", "88233", "88235"]  # the shop's orders, and ids it does not have (an error result)
        while len(ids) < 2 * limit + 4:
            if (order_id := str(rng.randint(10000, 99999))) not in ids:
                ids.append(order_id)
        ids = rng.sample(ids, 2 * limit)
        yield (question, limit, *(tuple(
            f"Thought: {rng.choice(thoughts[model])}\nAction: queryOrder\nAction Input: {ids[2 * n + model]}\n"
            for n in range(limit)) for model in (0, 1)))
    # The two calling other tools of the shop, so a give-up text that quotes the model's tool name differs too.
    for _ in range(4):
        question, _ = _question(rng)
        limit = rng.randint(1, 4)
        names = rng.sample(("queryOrder", "queryLogistics", "searchKnowledge", "getCurrentTime"), 2)
        yield (question, limit, *(tuple(
            f"Thought: {rng.choice(thoughts[model])}\nAction: {names[model]}\nAction Input: {_input_for(names[model], rng)}\n"
            for _ in range(limit)) for model in (0, 1)))


def _input_for(tool: str, rng: random.Random) -> str:
    """An input the shop's `tool` answers (a result, or an error result for an order it does not have)."""
    if tool == "getCurrentTime":
        return ""
    if tool == "searchKnowledge":
        return rng.choice(("退货 政策", "warranty", "运费", "发票"))
    return rng.choice(("88231", "88232", str(rng.randint(10000, 99999))))


GIVE_UP = "<a give-up text>"


def _model_reply(answer: Any, replies: Sequence[str]) -> bool:
    """Whether `answer` is (or holds) one of the model's own replies: the model's words, not a give-up text."""
    return isinstance(answer, str) and any(
        reply.strip() and (reply.strip() in answer or reply.strip() == answer.strip()) for reply in replies)


def _tools() -> ToolRegistry:
    def out_of_stock(text: str) -> str:
        raise RuntimeError("the stock service is down")

    shop_tools = list(shop_registry(_fresh_shop()))
    return ToolRegistry([*shop_tools, FunctionTool(RAISING_TOOL, "Units in stock. Input: a product.", out_of_stock)])


def _looped(fixed_seed_loop: Callable) -> Callable[..., tuple]:
    """The answer as agree_on calls it: on a scripted model of `replies`, how many model calls it made and what it
    returned. Any text it gives up with reads as one give-up text (the spec names none). Given `other` replies too,
    the same loop (the same question, limit and tools) runs on a second model as well: the calls of each, and the
    one answer both got, or _TwoTexts when they got different ones."""

    def once(question: str, limit: int, replies: tuple) -> tuple[int, Any, Any]:
        model = GivingUpModel(lambda n: replies[min(n, len(replies) - 1)], give_up_after=3 * limit + 2)
        returned = answer = fixed_seed_loop(question, model, _tools(), limit=limit)
        asked = [replies[min(n, len(replies) - 1)] for n in range(min(model.calls, model.give_up_after))]
        answered = any(parse_step(reply).final_answer is not None for reply in asked)
        if (not answered and not model.ran_away and isinstance(answer, str) and answer.strip()
                and not _model_reply(answer, asked)):
            answer = GIVE_UP
        return model.calls, answer, returned

    def run(question: str, limit: int, replies: tuple, other: tuple | None = None) -> tuple:
        calls, answer, returned = once(question, limit, replies)
        if other is None:
            return calls, answer
        other_calls, _, other_returned = once(question, limit, other)
        if returned != other_returned:
            return calls, other_calls, _TwoTexts(returned, other_returned)
        return calls, other_calls, answer

    return run


@dataclass(frozen=True)
class _TwoTexts:
    """What a loop returned on two models where the spec wants one give-up text: a different text on each."""

    first: Any
    second: Any

    def __repr__(self) -> str:
        return "a text on each model"


def _loop_hint(args: tuple, expected: tuple, got: tuple) -> str | None:
    (calls, answer), (made, returned) = expected, got
    if args[1] == 0 and made > calls:
        return "(limit=0 allows no round: test the counter before each model call, not after it)"
    if answer == "" and returned != "":
        return '(an empty "Final Answer:" is still the answer: parse_step reads "", so test `is not None`)'
    if 0 < made < calls and made <= len(args[2]) and _answer_in_other_case(args[2][made - 1]):
        return (f"(it ended in round {made}, whose reply parse_step reads no Final Answer in: `final answer:` in "
                "lower case is none)")
    if made > calls:
        return "(more calls than rounds: does the counter move every round?)"
    last = parse_step(args[2][made - 1]) if 0 < made <= len(args[2]) else None
    if made < calls and last is not None and last.action is None and last.final_answer is None:
        return (f"(it stopped in round {made}, whose reply has no Action and no Final Answer: that round throws in the "
                "seed, counts once, and the loop goes on)")
    if made < calls and all(_works(reply) for reply in args[2]):
        return "(fewer calls, though every tool worked: does the loop stop before `limit` rounds?)"
    if made < calls:
        return "(fewer calls: does a round that throws count twice?)"
    if answer == GIVE_UP and returned != GIVE_UP:
        if _model_reply(returned, args[2]):
            return "(that is the model's own reply, not a give-up text)"
        return "(give up with a text the caller can show)"
    return "(return the model's final answer as it is)"


def _answer_in_other_case(reply: str) -> bool:
    """Whether `reply` writes "final answer:" in another case than parse_step reads, and parse_step reads none."""
    return "final answer:" in reply.lower() and parse_step(reply).final_answer is None


def _works(reply: str) -> bool:
    """Whether `reply` asks for a tool of the check's registry that answers (not missing, not raising)."""
    action = parse_step(reply).action
    return action is not None and action.tool_name != RAISING_TOOL and _tools().get(action.tool_name) is not None


def _throws(reply: str) -> bool:
    """Whether the seed's round throws on `reply`: no Final Answer, and no tool of the check's registry that answers."""
    return parse_step(reply).final_answer is None and not _works(reply)


def _own_text_hint(args: tuple, expected: tuple, got: tuple) -> str | None:
    if isinstance(got[2], _TwoTexts):
        return (f"(it gave up with {_brief(got[2].first, 20)} and {_brief(got[2].second, 20)}: use words of your "
                "own, not the model's or a tool's)")
    model = 0 if got[0] != expected[0] else 1  # the model whose calls differ (either, when only the answer does)
    return _loop_hint((*args[:2], args[2 + model]), (expected[model], expected[2]), (got[model], got[2]))


def _show_loop(args: tuple) -> str:
    _, limit, replies, *other = args
    if other:
        return f"limit={limit}, a model's replies {_brief(list(replies), 30)}, another's {_brief(list(other[0]), 30)}"
    return f"limit={limit}, replies {_brief(list(replies), 64)}"


def _fixed_seed_loop(question: str, llm: Any, tools: ToolRegistry, limit: int = 10) -> str:
    """10, exercise 1's answer (the solution's behaviour): the seed's loop, its counter moved once every round."""
    messages = [
        {"role": "system", "content": build_system_prompt(tools, detect_language(question))},
        {"role": "user", "content": question},
    ]
    i = 0
    while i < limit:
        with contextlib.suppress(Exception):  # the seed prints the stack trace here; the round counts either way
            reply = llm.chat(messages, stop=["Observation:"])
            step = parse_step(reply.text)
            if step.final_answer is not None:
                return step.final_answer
            observation = tools.get(step.action.tool_name).invoke(step.action.tool_input)
            messages.append({"role": "assistant", "content": reply.text})
            messages.append({"role": "user", "content": f"Observation: {observation}"})
        i += 1
    return "达到了循环最大次数"


LOOP_RULES = (
    Rule("`limit` rounds are `limit` model calls, when every tool works", _tools_that_work, _loop_hint),
    Rule("every round counts once, whether its tool worked or threw (missing, raising, no Action)",
         _tools_that_throw, _loop_hint),
    Rule("it returns the model's final answer as parse_step reads it", _answers, _loop_hint),
    Rule("an answer after `limit` rounds is never asked for: it gives up with a text", _answers_too_late,
         _loop_hint),
    Rule("the give-up text is the loop's own: two models that never answer (other Thoughts, other tools, other tool "
         "results) get the same one", _never_answering_pairs, _own_text_hint),
)


@grades("Exercise 1", spec=Spec(LOOP_RULES, extra=(
    *(f"with limit={limit}, {what}" for what, limit, *_ in LOOP_COUNTER_CASES),
    "each model call is sent the system prompt, the question, each earlier worked round's reply and Observation")))
def check_fixed_seed_loop(fixed_seed_loop: Callable | None) -> None:
    """10, exercise 1: the second article's loop with a counter that moves every round, and only once."""
    exercise = "Exercise 1"
    if fixed_seed_loop is None:
        return _not_attempted(exercise, "Write def fixed_seed_loop(question, llm, tools, limit=10) in the cell above.")
    def calls_made(limit: int, script: Callable[[int], str]) -> tuple[int, Any]:
        model = GivingUpModel(script, give_up_after=3 * limit + 2)
        answer = _run(exercise, f"fixed_seed_loop(..., limit={limit})", fixed_seed_loop,
                      "帮我看看订单 88231 的快递到哪了。", model, shop_registry(_fresh_shop()), limit=limit)
        return model.calls, answer

    first = None
    for what, limit, script, expected_calls, expected_answer in LOOP_COUNTER_CASES:
        calls, answer = calls_made(limit, script)
        first = first or (calls, limit, script)
        where = f"with limit={limit} and {what}"
        replies = [script(n) for n in range(min(calls, 3 * limit + 2))]
        right = calls == expected_calls and (answer == expected_answer if expected_answer else
                                             isinstance(answer, str) and answer.strip()
                                             and not _model_reply(answer, replies))
        if not right and (again := calls_made(*first[1:])[0]) != first[0]:  # the first case, asked again
            _fail(exercise, f"run again on the first model, your loop made {again} model calls instead of "
                            f"{first[0]}: it keeps something between calls (a counter outside the function?), so "
                            "every run after the first is wrong")
        if calls > 3 * limit + 2:  # past the point where GivingUpModel answers by itself
            _fail(exercise, f"{where}, your loop made {calls} model calls and ended only because the check's "
                            "model gave up: does the counter move every round, or only when something throws?")
        if calls > expected_calls:
            _fail(exercise, f"{where}, your loop made {calls} model calls, expected {expected_calls}: "
                            "limit rounds means limit model calls (mind < and <=)")
        if calls < expected_calls and not any(_throws(reply) for reply in replies):
            _fail(exercise, f"{where}, your loop stopped after {calls} model calls, expected {expected_calls}, though "
                            "no round threw: does it stop before `limit` rounds (mind < and <=)?")
        if calls < expected_calls:
            _fail(exercise, f"{where}, your loop stopped after {calls} model calls, expected {expected_calls}: "
                            "does a round that throws move the counter twice?")
        if expected_answer is None and not (isinstance(answer, str) and answer.strip()):
            _fail(exercise, f"{where}, your loop returned {shown(answer)} when it gave up; return a give-up text (a "
                            "string the caller can show), as the first article's loop does")
        if expected_answer is None and _model_reply(answer, replies):
            _fail(exercise, f"{where}, your loop gave up with {_brief(answer, 40)}: that is the model's own reply, "
                            "not a give-up text. Return your own text saying the loop gave up, as seed_loop does")
        if expected_answer is not None and answer != expected_answer:
            _fail(exercise, f"{where}, your loop returned {shown(answer)}, expected the model's answer {shown(expected_answer)}")
    tried = agree_on(exercise, "check_fixed_seed_loop", LOOP_RULES, _looped(fixed_seed_loop),
                     _looped(_fixed_seed_loop), call="fixed_seed_loop", show=_show_loop)
    for question in HEARD_QUESTIONS:  # one in each language: the system prompt follows the question's
        model = _ListeningModel(lambda n: HEARD_SCRIPT[min(n, len(HEARD_SCRIPT) - 1)], 17, question)
        _run(exercise, "fixed_seed_loop(..., limit=5)", fixed_seed_loop, question, model,
             shop_registry(_fresh_shop()), limit=5)
        if model.missing is not None:
            break
    if model.missing is not None:
        _fail(exercise, f"with limit=5 and a model that calls queryOrder, a missing tool, getCurrentTime, then "
                        f"answers, {model.missing}. Each round sends the conversation so far, as seed_loop does: "
                        "the system prompt, the question, each reply and its 'Observation: ...'")
    model = GivingUpModel(lambda n: ORDER_STEP, give_up_after=3 * 10 + 2)  # no limit given: the spec's 10
    _run(exercise, "fixed_seed_loop(question, llm, tools)", fixed_seed_loop, "帮我看看订单 88231 的快递到哪了。",
         model, shop_registry(_fresh_shop()))
    if model.calls != 10:
        _fail(exercise, f"called without a limit, on a model that keeps calling a tool that works, your loop made "
                        f"{model.calls} model calls: the spec's default is limit=10")
    return _passed(exercise, f"the counter moves once a round, whether the tool worked or threw, so a model that "
                             f"never answers costs `limit` calls and no more; {tried} generated runs agree.")


def _costly_trace(*usages: tuple[int, int]) -> Any:
    return Trace(_events(usages, tools=False))


class _Missing:
    """A count the server did not send: its key is not in the call's usage (one of it, copies too)."""

    def __repr__(self) -> str:
        return "missing"

    def __deepcopy__(self, memo: dict) -> _Missing:
        return self


_MISSING = _Missing()


def _counted(usage: Sequence) -> tuple:
    """A usage's (prompt, completion) counts as priced: a missing one is 0 (as Trace.total_usage counts it)."""
    return tuple(0 if count is _MISSING else count for count in usage[:2])


def _events(usages: Sequence[tuple[int, int]], *, tools: bool) -> list:
    """A run's events: a model call of each (prompt, completion) usage (a third item: its finish_reason, else
    "stop"; a count that is _MISSING: no such key in the usage), and, with `tools`, the Parsed, ToolCall and
    Observation events a round also holds (they cost nothing)."""
    events: list = []
    for n, (prompt, completion, *finish) in enumerate(usages, start=1):
        counts = {key: count for key, count in (("prompt_tokens", prompt), ("completion_tokens", completion))
                  if count is not _MISSING}
        events.append(LlmCall(n, text="...", finish_reason=(*finish, "stop")[0],
                              usage={**counts, "total_tokens": sum(counts.values())}))
        if tools:
            events += [Parsed(n, thought="查订单", tool_name="queryOrder", tool_input="88231"),
                       ToolCall(n, name="queryOrder", input="88231"), Observation(n, text='{"status": "已签收"}')]
    return events


class _CostBudget:
    """10, exercise 2's answer (the solution's behaviour): Stop("cost_budget") once the calls have cost `yuan`."""

    def __init__(self, yuan: float, input_price: float, output_price: float):
        self.yuan, self.input_price, self.output_price = yuan, input_price, output_price

    def check(self, trace: Trace) -> Stop | None:
        spent = sum(call.usage.get("prompt_tokens", 0) * self.input_price
                    + call.usage.get("completion_tokens", 0) * self.output_price
                    for call in trace.of_type(LlmCall)) / 1_000_000
        if spent >= self.yuan:
            return Stop("cost_budget", f"¥{spent:.4f} spent, the budget is ¥{self.yuan:g}")
        return None


# -- exercise 2's inputs, drawn from its spec: (yuan, (input_price, output_price), usages, asks, tool events) -----
# `asks`: how many model calls the trace holds each time the one rule is asked, in order (a run asks it before
# every model call, so 0, 1, 2, ...).
_PRICES = ((2.0, 8.0), (0.5, 1.5), (4.0, 16.0), (15.0, 60.0), (0.27, 1.1), (1.0, 1.0), (3.0, 0.0))


def _cost(prices: tuple[float, float], usages: Sequence[tuple[int, int]]) -> Fraction:
    """What `usages` cost, exactly (no float rounding), in yuan."""
    rate = [Fraction(price).limit_denominator(1000) for price in prices]
    return sum((prompt * rate[0] + completion * rate[1] for prompt, completion in map(_counted, usages)),
               Fraction(0)) / 1_000_000


def _ways(prices: tuple[float, float], done: Sequence[tuple[int, int]]) -> tuple[float, ...]:
    """What `done` costs, added up in floats each way a learner may add it: per call or per kind of token,
    dividing by a million first or last (the first way is the solution's)."""
    done = [usage[:2] for usage in done]
    return (
        sum(p * prices[0] + c * prices[1] for p, c in done) / 1_000_000,
        sum((p * prices[0] + c * prices[1]) / 1_000_000 for p, c in done),
        sum(p * prices[0] / 1e6 + c * prices[1] / 1e6 for p, c in done),
        sum(p for p, _ in done) * prices[0] / 1e6 + sum(c for _, c in done) * prices[1] / 1e6,
        sum(p * (prices[0] / 1e6) + c * (prices[1] / 1e6) for p, c in done),
    )


# One kind of token's cost in floats, (tokens, price per million) -> yuan, the million divided out of the product, of
# the token count first, or of the price first; or the product, or the token count, times 1e-6.
_TERMS = (
    lambda tokens, price: tokens * price / 1_000_000,
    lambda tokens, price: tokens / 1_000_000 * price,
    lambda tokens, price: tokens * (price / 1_000_000),
    lambda tokens, price: tokens * price * 1e-6,
    lambda tokens, price: tokens * 1e-6 * price,
)


def _float_costs(prices: tuple[float, float], done: Sequence[tuple[int, int]]) -> Iterator[float]:
    """What `done` costs in floats, every way a learner may order the work: each call's prompt and completion cost
    a term (made each of the _TERMS ways), the terms added in every order; each call's cost a term, in every
    order; the token counts added up first, then priced; the million divided out of the whole, last."""
    done = [_counted(usage) for usage in done]
    totals = [sum(usage[kind] for usage in done) for kind in (0, 1)]
    for term in _TERMS:
        terms = [term(tokens, price) for usage in done for tokens, price in zip(usage, prices)]
        yield from (sum(order) for order in itertools.permutations(terms))
        yield math.fsum(terms)
        yield from (sum(order) for order in itertools.permutations(term(p, prices[0]) + term(c, prices[1])
                                                                    for p, c in done))
        yield term(totals[0], prices[0]) + term(totals[1], prices[1])
    yield from (sum(order) / 1_000_000 for order in itertools.permutations(
        tokens * price for usage in done for tokens, price in zip(usage, prices)))
    yield from (sum(order) for order in itertools.permutations((p * prices[0] + c * prices[1]) / 1_000_000
                                                                for p, c in done))
    yield (totals[0] * prices[0] + totals[1] * prices[1]) / 1_000_000
    yield (totals[0] * prices[0] + totals[1] * prices[1]) * 1e-6


# How near the budget an exact cost must be for float rounding to decide the verdict: a few float operations are
# off by a few parts in 10**16; a billionth leaves room for any order of them.
_NEAR = Fraction(1, 10**9)
_MOST_TERMS = 6  # every order of more terms than this is too many to try (8! sums for 4 calls)


def _settled(args: tuple) -> bool:
    """Whether no way of adding the prices up can change the verdict at any time the rule is asked: the exact cost
    (the prices and the budget read as written) is clearly over or under the budget, or is the budget exactly and
    every float order of the work (_float_costs) reaches it too. An input where float rounding decides is left
    out, since the spec does not say how to add."""
    yuan, prices, usages, asks, _ = args
    budget = Fraction(str(yuan))
    for calls in asks:
        exact = _cost(prices, usages[:calls])
        if abs(exact - budget) > budget * _NEAR:
            continue
        if exact != budget or 2 * calls > _MOST_TERMS or not all(
                cost >= yuan for cost in _float_costs(prices, usages[:calls])):
            return False
    return True


def _usages(rng: random.Random, calls: int) -> tuple[tuple[int, int], ...]:
    return tuple((rng.randint(200, 60000), rng.randint(10, 4000)) for _ in range(calls))


def _budget_near(rng: random.Random, cost: Fraction) -> float:
    """A budget clearly above or below `cost` (by 5% at least), so no way of adding the prices up rounds across."""
    return round(float(cost) * rng.choice((rng.uniform(0.4, 0.95), rng.uniform(1.05, 2.5))), 8) or 0.0001


def _one_call(rng: random.Random) -> Iterator[tuple]:
    for _ in range(12):
        prices, usages = rng.choice(_PRICES), _usages(rng, 1)
        yield (_budget_near(rng, _cost(prices, usages)), prices, usages, (0, 1), rng.random() < 0.5)
    # prompt and completion priced apart: the same total of tokens, a budget between the two readings
    yield (0.01, (2.0, 8.0), ((1000, 1000),), (0, 1), False)  # ¥0.0100 spent; every token at 2.0 would be ¥0.004


def _several_calls(rng: random.Random) -> Iterator[tuple]:
    for _ in range(14):
        prices, usages = rng.choice(_PRICES), _usages(rng, rng.randint(2, 6))
        biggest = max(_cost(prices, [usage]) for usage in usages)
        total = _cost(prices, usages)
        yuan = round(float(biggest + (total - biggest) * Fraction(rng.randint(20, 80), 100)), 8)  # no one call reaches it
        if abs(Fraction(yuan) - total) < total / 20:
            continue
        yield (yuan, prices, usages, tuple(range(len(usages) + 1)), rng.random() < 0.5)
    # a reply cut by max_tokens (finish_reason "length") was billed all the same
    yield (0.01, (2.0, 8.0), ((1000, 100), (1000, 1000, "length")), (0, 1, 2), False)
    yield (0.03, (2.0, 8.0), ((6000, 4000, "length"), (3000, 500), (2000, 300)), (0, 1, 2, 3), True)


def _exactly_the_budget(rng: random.Random) -> Iterator[tuple]:
    yield (0.02, (2.0, 8.0), ((3000, 500), (6000, 500)), (0, 1, 2), True)
    found = 0
    for _ in range(200):  # budgets the run's cost reaches exactly
        prices = rng.choice(((1.0, 2.0), (2.0, 8.0), (4.0, 0.0), (0.5, 1.5), (3.0, 0.0)))
        usages = tuple((rng.randint(1, 40) * 500, rng.choice((0, 500, 1000, 2000))) for _ in range(rng.randint(1, 3)))
        yuan = _ways(prices, usages)[0]
        args = (yuan, prices, usages, tuple(range(len(usages) + 1)), rng.random() < 0.5)
        # The draws stop at the fourth budget that _ways agree on, as they did before _settled tried every order,
        # so the later rules' inputs are drawn as they were; _settled_only leaves out a budget another order misses.
        if yuan > 0 and all(len({way >= yuan for way in _ways(prices, usages[:calls])}) == 1 for calls in args[3]):
            yield args
            yield (yuan + 0.0001, *args[1:])  # a ten-thousandth of a yuan more: not reached
            found += 1
        if found == 4:
            break
    # just under the budget: the cost is not rounded before it is compared (to the detail's 4 places, or 6)
    yield (0.01, (1.0, 0.0), ((9999, 0),), (0, 1), False)  # ¥0.009999
    yield (1.0, (0.5, 0.0), ((1999999, 0),), (0, 1), False)  # ¥0.9999995
    yield (0.05, (2.0, 8.0), ((3000, 500), (9999, 2499)), (0, 1, 2), True)  # ¥0.049990
    # More budgets the cost reaches exactly, that no way of adding it up misses (_settled), from a generator of
    # their own: the shared one's draws stay as they were for the later rules.
    own, found = random.Random("check_cost_budget: exactly the budget"), 0
    for _ in range(200):
        prices = own.choice(((1.0, 2.0), (2.0, 8.0), (4.0, 0.0), (0.5, 1.5), (3.0, 0.0), (0.27, 1.1), (15.0, 60.0)))
        usages = tuple((own.randint(1, 40) * 500, own.choice((0, 500, 1000, 2000))) for _ in range(own.randint(1, 3)))
        yuan = float(_cost(prices, usages))
        args = (yuan, prices, usages, tuple(range(len(usages) + 1)), own.random() < 0.5)
        if yuan > 0 and _settled(args):
            yield args
            yield (yuan + 0.0001, *args[1:])
            found += 1
        if found == 4:
            break
    # just under by three billionths (¥0.999999997, at a price of ¥0.001 per million): rounded to 7 or 8 places, ¥1
    yield (1.0, (0.001, 0.0), ((999999997, 0),), (0, 1), False)
    # Costs in fractions of a millionth of a yuan (any token count at ¥0.27 per million, say: 1001 tokens cost
    # 270.27 millionths): the budget reached exactly, and one just above it, short of the next whole millionth.
    # A cost cut or rounded to whole millionths (a call's, or the run's) misses the one or the other.
    yield (0.00081081, (0.27, 1.1), ((1001, 0),) * 3, (0, 1, 2, 3), False)
    fine, found = random.Random("check_cost_budget: fractions of a millionth"), 0
    for _ in range(200):
        prices = fine.choice(((0.27, 1.1), (1.1, 0.27), (0.5, 1.5), (2.5, 0.3)))
        usages = tuple((fine.randint(1, 3000), fine.randint(0, 900)) for _ in range(fine.randint(1, 3)))
        exact, tools = _cost(prices, usages), fine.random() < 0.5
        millionths = exact * 1_000_000
        if millionths.denominator == 1:
            continue
        above = exact + (math.ceil(millionths) - millionths) / 2 / 1_000_000
        pair = [(float(budget), prices, usages, tuple(range(len(usages) + 1)), tools) for budget in (exact, above)]
        if all(map(_settled, pair)):
            yield from pair
            found += 1
        if found == 4:
            break


def _nothing_spent_yet(rng: random.Random) -> Iterator[tuple]:
    yield (0.02, (2.0, 8.0), (), (0,), False)
    yield (0.0001, rng.choice(_PRICES), (), (0, 0), False)
    for _ in range(4):
        prices, usages = rng.choice(_PRICES), _usages(rng, rng.randint(1, 4))
        yield (round(float(_cost(prices, usages)) * 3 + 0.001, 6), prices, usages, tuple(range(len(usages) + 1)), True)


def _asked_out_of_turn(rng: random.Random) -> Iterator[tuple]:
    for _ in range(6):
        prices, usages = rng.choice(_PRICES), _usages(rng, rng.randint(2, 5))
        calls = len(usages)
        asks = rng.choice(((calls,), (calls, calls), (calls, 1), (1, 1, calls, calls), (calls, 0)))
        yield (_budget_near(rng, _cost(prices, usages)), prices, usages, asks, rng.random() < 0.5)


def _verdicts(CostBudget: type, exercise: str) -> Callable[..., tuple]:
    """The answer as agree_on calls it: one rule, asked on the run's trace as it grows (`asks`); what it said each
    time (see _said)."""

    def asked(yuan: float, prices: tuple[float, float], usages: tuple, asks: tuple, tools: bool) -> tuple:
        rule = CostBudget(yuan, *prices)
        events = _events(usages, tools=tools)
        verdicts = []
        for calls in asks:
            upto = [event for event in events if event.step <= calls]
            trace = Trace(copy.deepcopy(upto))
            verdicts.append(_said(rule.check(trace)))
            if trace.events != upto:
                _fail(exercise, "check(trace) changed the trace it was given (its events, or their usage, are not "
                                "what they were): a stop rule only reads the trace")
        return tuple(verdicts)

    return asked


@dataclass(frozen=True)
class _NotAStop:
    """A verdict that is neither a Stop nor None, as it was returned."""

    value: Any

    def __repr__(self) -> str:
        return f"not a Stop: {_brief(self.value, 30)}"


def _said(verdict: Any) -> Any:
    """What is compared of a verdict: a Stop's reason, None, or anything else marked as not a Stop."""
    if isinstance(verdict, Stop):
        return verdict.reason
    return None if verdict is None else _NotAStop(verdict)


def _stop_or_none(verdicts: tuple) -> str | None:
    for verdict in verdicts:
        if isinstance(verdict, _NotAStop):
            return (f"check(trace) returned {_brief(verdict.value, 30)}: return Stop(\"cost_budget\", detail) (from "
                    "tinyagent) to stop the run, or None to let it go on")
    return None


def _show_budget(args: tuple) -> str:
    yuan, prices, usages, asks, _ = args
    return (f"CostBudget({yuan:g}, {prices[0]:g}, {prices[1]:g}), (prompt, completion) tokens "
            f"{_brief(list(usages), 34)}, asked after {_brief(list(asks), 18)}")


def _budget_hint(args: tuple, expected: tuple, got: tuple) -> str | None:
    yuan, prices, usages, asks, _ = args
    for calls, want, have in zip(asks, expected, got):
        stopped = next((before for before, said in zip(asks, got) if said and before <= calls), None)
        if want and not have and stopped is not None:
            return f"(stop after {stopped} call(s), then go on after {calls}: money spent stays spent)"
        if want != have:
            exact = _cost(prices, usages[:calls])
            spent = f"{float(exact):.6f}"
            if Fraction(spent) != exact:  # .6f would round it (across the budget, or onto it): as many digits as it has
                spent = f"{float(exact):.10g}"
            why = ""
            if not want and have and exact < Fraction(yuan) and exact * 1000 > Fraction(yuan) * 999:
                why = f": just under, {_NOT_ROUNDED}"
            elif want and not have and any(usage[2:] == ("length",) for usage in usages[:calls]):
                why = ": a call cut by length is billed too"
            return (f"(after {calls} call(s), ¥{spent} spent of a budget of ¥{yuan:g}: "
                    f"{'stop' if want else 'go on'}{why})")
    return None


# What the hint above says of an answer that rounds a cost just under the budget up to it; _rounding names the rest.
_NOT_ROUNDED = "so do not round the cost"


def _rounding(CostBudget: type, exercise: str, *, cost_named: bool) -> str | None:
    """What an answer rounds or cuts before it compares, and to how many places, told by probes at ¥1 per million
    prompt tokens (¥0.1 where a cost is a fraction of a millionth; completion free, one call or none, so no mistake
    of pricing or summing changes them). Rounded to p places, a budget of 0.4 units of the p-th place is ¥0 (nothing
    spent stops it) and one of 0.6 units is not; cut (int(), floor) both are, and one of 1 unit is not. A cost of
    0.4 units is ¥0 (it does not stop a budget of 0.1 units), rounded or cut, and one of 1.2 units is not; one of
    0.6 units is ¥0 cut, not rounded. A widened boundary (a tolerance) or an answer that never stops shows none of
    these. `cost_named`: the failure already says not to round the cost (_NOT_ROUNDED). None when nothing more
    shows, or a probe fails."""

    def stops(yuan: Decimal, spent: Decimal = Decimal(0)) -> bool:
        tokens = spent * 1_000_000
        price = Decimal(1) if tokens == tokens.to_integral_value() else Decimal("0.1")
        rule = _instance(exercise, CostBudget, float(yuan), float(price), 0.0)
        calls = [(int(tokens / price), 0)] if spent else []
        return isinstance(_run(exercise, "check(trace)", rule.check, _costly_trace(*calls)), Stop)

    budget = cost = ""
    verbs = set()
    try:
        for places in range(7):  # to a whole yuan, to fen (2), to the detail's 4 places, ..., to a millionth
            low, high, over, tiny, unit = (Decimal(n).scaleb(-places) for n in ("0.4", "0.6", "1.2", "0.1", "1"))
            where = f"{places} places" + {2: " (fen)", 6: " (a millionth)"}.get(places, "")
            if not budget and stops(low) and not stops(unit):
                if not stops(high):
                    budget = f"the budget to {where}: with nothing spent, a budget of ¥{low:f} stops it (¥{high:f} does not)"
                    verbs.add("rounds")
                else:
                    budget = (f"the budget to {where}, cutting the rest off (as int() does): with nothing spent, a "
                              f"budget of ¥{high:f} stops it (¥{unit:f} does not)")
                    verbs.add("cuts")
            if not cost and not cost_named and not stops(tiny, low) and stops(tiny, over):
                if stops(tiny, high):
                    cost = f"the cost to {where}: ¥{low:f} spent of ¥{tiny:f} does not stop it (¥{over:f} does)"
                    verbs.add("rounds")
                else:
                    cost = (f"the cost to {where}, cutting the rest off (as int() does): ¥{high:f} spent of "
                            f"¥{tiny:f} does not stop it (¥{over:f} does)")
                    verbs.add("cuts")
    except Exception:  # noqa: BLE001 - the answer failed a probe itself: the failure it had already stands
        return None
    if not budget and not cost:
        return None
    did, undo = (("rounds", "round neither") if verbs == {"rounds"} else ("cuts", "cut neither") if verbs == {"cuts"}
                 else ("rounds and cuts", "round or cut neither"))
    return (f"it {did} before it compares, {'; and '.join(filter(None, (budget, cost)))}. The spec stops once the "
            f"calls have cost `yuan` or more, both as they are: {undo}.")


def _zero_budget(rng: random.Random) -> Iterator[tuple]:
    """A budget of 0: nothing spent is already 0 or more, so it stops before the first call, and after any."""
    yield (0, (2.0, 8.0), (), (0,), False)
    yield (0.0, rng.choice(_PRICES), ((1000, 100),), (0, 1), False)


def _counts_missing(rng: random.Random) -> Iterator[tuple]:
    """A usage without prompt_tokens or completion_tokens (a server that sent only one of them): that count is 0, as
    Trace.total_usage counts it. Budgets a token over or under the cost, so a missing count read as 1 or -1 shows."""
    yield (0.001, (2.0, 8.0), ((_MISSING, 125),), (0, 1), False)  # ¥0.001 spent: the budget exactly
    yield (0.001001, (2.0, 8.0), ((_MISSING, 125),), (0, 1), True)
    yield (0.00025, (2.0, 8.0), ((125, _MISSING),), (0, 1), False)
    yield (0.000251, (2.0, 8.0), ((125, _MISSING),), (0, 1), True)
    yield (0.015, (2.0, 8.0), ((3000, 500), (_MISSING, 400), (2000, _MISSING)), (0, 1, 2, 3), False)
    yield (0.0001, (0.5, 1.5), ((_MISSING, _MISSING), (1000, 100)), (0, 1, 2), True)


def _missing_hint(args: tuple, expected: tuple, got: tuple) -> str | None:
    yuan, prices, usages, asks, _ = args
    for calls, want, have in zip(asks, expected, got):
        if want != have:
            return (f"(after {calls} call(s), ¥{float(_cost(prices, usages[:calls])):.6g} spent of a budget of "
                    f"¥{yuan:g}: {'stop' if want else 'go on'}; a count the usage lacks, missing here, is 0)")
    return None


def _settled_only(inputs: Callable[[random.Random], Iterator[tuple]]) -> Callable[[random.Random], Iterator[tuple]]:
    return lambda rng: (args for args in inputs(rng) if _settled(args))


BUDGET_RULES = (
    Rule("prices are yuan per million tokens: prompt at input_price, completion at output_price",
         _settled_only(_one_call), _budget_hint),
    Rule("the model calls in the trace cost together: every call counts (a cut one too), not only the last",
         _settled_only(_several_calls), _budget_hint),
    Rule("Stop(\"cost_budget\", detail) once they have cost `yuan` or more: exactly `yuan` stops",
         _settled_only(_exactly_the_budget), _budget_hint),
    Rule("None before that (nothing is spent before the first call)", _settled_only(_nothing_spent_yet),
         _budget_hint),
    Rule("the verdict is the trace's: asked twice on a trace, or first on a long one, it is the same",
         _settled_only(_asked_out_of_turn), _budget_hint),
    Rule("a budget of 0 is spent before the first call: ¥0 is already `yuan` or more", _settled_only(_zero_budget),
         _budget_hint),
    Rule("a count the usage lacks (no prompt_tokens, or no completion_tokens) is 0, as Trace.total_usage counts it",
         _settled_only(_counts_missing), _missing_hint),
)


@grades("Exercise 2", spec=Spec(BUDGET_RULES, extra=(
    "in a ReActAgent whose every call costs ¥0.0028, a budget of ¥0.01 stops the run after round 4",)))
def check_cost_budget(CostBudget: type | None) -> None:
    """10, exercise 2: a stop rule that ends the run once its model calls have cost `yuan`."""
    exercise = "Exercise 2"
    if CostBudget is None:
        return _not_attempted(exercise, "Write class CostBudget in the cell above.")
    prices = (2.0, 8.0)  # yuan per million prompt tokens, per million completion tokens
    cases = [
        # (budget, usages so far, should it stop, why)
        (0.02, (), False, "before any model call (nothing spent)"),
        (0.02, ((3000, 500),), False, "after one call of 3000 prompt + 500 completion tokens (¥0.0100 spent)"),
        (0.01, ((3000, 500),), True, ("after one call that cost the budget exactly (¥0.0100 spent, the budget "
                                      "is ¥0.01: 'yuan or more' stops)")),
        (0.02, ((3000, 500), (4000, 600)), True,
         "after a second call of 4000 + 600 tokens (¥0.0228 spent, the budget is ¥0.02)"),
        (0.05, ((3000, 500), (4000, 600)), False, "with a budget of ¥0.05 after those two calls (¥0.0228 spent)"),
    ]
    def verdict_of(budget: float, usages: tuple) -> Any:
        check = getattr(_instance(exercise, CostBudget, budget, *prices), "check", None)
        if not callable(check):
            _fail(exercise, "a stop rule needs a method check(self, trace)")
        return _run(exercise, "check(trace)", check, _costly_trace(*usages))

    said = []  # what each new rule said, to ask the first ones again when a later one is wrong
    for budget, usages, should_stop, when in cases:
        verdict = verdict_of(budget, usages)
        said.append(verdict)
        right = isinstance(verdict, Stop) and verdict.reason == "cost_budget" if should_stop else verdict is None
        earlier = [] if right else list(zip(cases, said[:-1]))
        for (old_budget, old_usages, _, old_when), before in earlier:
            if (again := verdict_of(old_budget, old_usages)) != before:
                _fail(exercise, f"a new CostBudget({old_budget}, 2.0, 8.0) {old_when} said {shown(before)} the first "
                                f"time and {shown(again)} now: something is kept between rules (a class attribute, a "
                                "module-level total), so every run after the first is wrong")
        if should_stop and not isinstance(verdict, Stop):
            exact = ""  # ¥0.5 is a float exactly, ¥0.01 is not: an answer that stops at the one and not the other
            # ¥0.25 of prompt and ¥0.25 of completion, each a float exactly: an answer that prices either wrong
            # does not stop here, and is told of the prices, not of exact sums
            if usages == ((3000, 500),) and isinstance(verdict_of(0.5, ((125000, 31250),)), Stop):
                exact = (". It stops at a budget of ¥0.5 reached exactly: adding up exactly? Fraction(0.01) is a "
                         "little more than 0.01; read the budget as written, Fraction(str(yuan))")
            _fail(exercise, f"CostBudget({budget}, 2.0, 8.0) {when} should stop the run: return "
                            f"Stop('cost_budget', ...) (from tinyagent), got {shown(verdict)}. Prices are per million "
                            f"tokens, prompt and completion priced apart, over every call so far{exact}")
        if not should_stop and verdict is not None:
            _fail(exercise, f"CostBudget({budget}, 2.0, 8.0) {when} should let the run go on (return None), got "
                            f"{shown(verdict)}. Prices are per million tokens")
        if should_stop and verdict.reason != "cost_budget":
            _fail(exercise, f"the Stop's reason should be 'cost_budget' (the name the trace shows), got {shown(verdict.reason)}")

    class Endless:  # asks for the same working tool forever, every call 1000 + 100 tokens
        def chat(self, messages: list[dict], **options: Any) -> ChatResult:
            return ChatResult(ORDER_STEP, "stop", {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100})

    try:
        tried = agree_on(exercise, "check_cost_budget", BUDGET_RULES, _verdicts(CostBudget, exercise),
                         _verdicts(_CostBudget, exercise), shape=_stop_or_none,
                         call="CostBudget(...).check(trace)", show=_show_budget)
    except ExerciseFailed as failure:
        # A rule's sentence (prices per million, say) would send an answer that rounds to the wrong place: the
        # rounding is named instead, unless the failure names it already.
        if rounded := _rounding(CostBudget, exercise, cost_named=_NOT_ROUNDED in str(failure)):
            _fail(exercise, rounded)
        raise

    rule = _instance(exercise, CostBudget, 0.01, *prices)
    agent = ReActAgent(Endless(), shop_registry(_fresh_shop()), parts=[StopRules([rule])])
    result = _run(exercise, "ReActAgent(..., parts=[StopRules([CostBudget(0.01, 2.0, 8.0)])]).run(...)", agent.run,
                  "88231?")
    limits = result.trace.of_type(LimitReached)
    if result.reason != "cost_budget" or limits[0].step != 4:
        stopped = f"{result.reason} after round {limits[0].step}" if limits else result.reason
        _fail(exercise, f"in an agent whose every call costs ¥0.0028 (1000 + 100 tokens), a budget of ¥0.01 should "
                        f"stop the run after round 4 (¥0.0112 spent); it ended with {stopped}")
    return _passed(exercise, f"{tried} generated runs priced as the spec says: each call by its prompt and its "
                             "completion tokens, summed over the run, and exactly the budget stops; in the agent "
                             "the budget stopped the run before round 5.")
