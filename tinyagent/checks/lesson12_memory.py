"""Lesson 12 (memory): the first and the last turns, and a window measured in tokens."""

from __future__ import annotations

from typing import Any

from tinyagent.agent import ReActAgent
from tinyagent.checks.reporting import (
    _brief,
    _fail,
    _fresh_shop,
    _instance,
    _not_attempted,
    _passed,
    _run,
    grades,
)
from tinyagent.llm_client import LlmClient
from tinyagent.memory.session import Session, message_tokens
from tinyagent.memory.session_store import SqliteSessionStore, Turn
from tinyagent.shop import shop_registry


class _TurnsOnly:
    """A stand-in for a Session that a memory reads: its turns, an id, a store and a language."""

    def __init__(self, turns: list):
        self._turns, self.id, self.lang, self.store = list(turns), "check", "en", SqliteSessionStore()

    def turns(self) -> list:
        return list(self._turns)


def _numbered_turns(count: int) -> list:
    return [Turn(f"question {n}", f"answer {n}", number=n) for n in range(1, count + 1)]


def _which_turns(messages: Any, turns: list) -> list | str:
    """The numbers of the turns whose messages `messages` are, in order; or what is wrong with them."""
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        return f"a {type(messages).__name__}, not a list of message dicts"
    by_pair = {(turn.question, turn.answer): turn.number for turn in turns}
    numbers = []
    for i in range(0, len(messages), 2):
        pair = messages[i : i + 2]
        roles = [m.get("role") for m in pair]
        if roles != ["user", "assistant"]:
            at = f"message {i + 1} has" if len(pair) == 1 else f"messages {i + 1} and {i + 2} have"
            return f"{at} the roles {roles}; each turn is a user message, then an assistant one"
        key = (pair[0].get("content"), pair[1].get("content"))
        if key not in by_pair:
            return f"messages {i + 1} and {i + 2} are not a question and its answer from the session: {_brief(key)}"
        numbers.append(by_pair[key])
    return numbers


FIVE_TURN_CONVERSATION = (
    "Hello, my order number is 88231 and the robot vacuum won't charge any more.",
    "Has it been delivered?",
    "What is your exchange policy?",
    "What's today's date?",
    "OK, then refund it please.",
)


@grades("Exercise 1")
def check_first_and_last(FirstAndLast: type | None) -> None:
    """12, exercise 1: a memory that keeps the first turn and the last `last` turns."""
    exercise = "Exercise 1"
    if FirstAndLast is None:
        return _not_attempted(exercise, "Write class FirstAndLast in the cell above.")
    for count, last in [(0, 2), (1, 2), (2, 2), (3, 2), (5, 2), (6, 1), (6, 0), (4, 3), (4, 10)]:
        turns = _numbered_turns(count)
        memory = _instance(exercise, FirstAndLast, last)
        got = _which_turns(_run(exercise, f"FirstAndLast({last}).history(...)", memory.history, _TurnsOnly(turns)),
                           turns)
        expected = sorted({1, *range(max(1, count - last + 1), count + 1)} & set(range(1, count + 1)))
        if got != expected:
            why = ""
            if isinstance(got, list) and len(got) != len(set(got)):
                why = " A turn that is both the first and among the last is given once."
            elif isinstance(got, list) and last == 0 and len(got) > 1:
                why = " With last=0 only the first turn is kept: careful, turns[-0:] is the whole list."
            elif isinstance(got, list) and got != sorted(got):
                why = " Oldest first: the model reads the conversation in the order it happened."
            elif isinstance(got, list) and count and 1 not in got:
                why = " Turn 1 is missing: it is where a customer says who they are and which order it is."
            gave = f"it gave turns {got}" if isinstance(got, list) else f"what it gave is wrong: {got}"
            _fail(exercise, f"with {count} turn{'' if count == 1 else 's'} and last={last}, {gave}; "
                            f"expected turns {expected}.{why}")
    # In a real session on the classroom model: turn 5 needs the order and the fault from turn 1.
    shop = _fresh_shop()
    session = Session(ReActAgent(LlmClient.classroom(), shop_registry(shop)), memory=_instance(exercise, FirstAndLast, 1))
    for question in FIVE_TURN_CONVERSATION:
        _run(exercise, f"session.ask({question!r})", session.ask, question)
    if [r["orderId"] for r in shop.refunds()] != ["88231"]:
        _fail(exercise, "in a five-turn session with FirstAndLast(1), the refund asked for in turn 5 was not "
                        f"written; the last run was given: {session.last_history}")
    return _passed(exercise, "the first turn and the last ones, each once, oldest first; in a five-turn session "
                             "turn 5 still knew the order and the fault from turn 1, and the refund went through.")


def _token_window_turns() -> list:
    texts = [
        ("Hi, my order is 88231.", "Order 88231 (比特 S10 Pro 扫地机) was signed for on 2026-06-22."),
        ("它现在到哪了？", "订单 88231 由顺丰速运配送，运单号 SF1234567890，最新：2026-06-22 11:35:00 快件已由本人签收。"),
        ("Thanks!", "You're welcome."),
        ("What is your exchange policy?", "先提交换货申请，售后检测确认后将商品寄回，仓库收到退件后 48 小时内发出同型号新品。"),
        ("ok", "Anything else?"),
        ("那帮我退款吧，扫地机充不进电了", "已为您提交退款申请，退款单号 RF202606300001，预计 1-3 个工作日到账。"),
    ]
    return [Turn(q, a, number=n) for n, (q, a) in enumerate(texts, start=1)]


def _expected_token_window(turns: list, budget: int) -> list:
    kept: list = []
    for turn in reversed(turns):
        if message_tokens([m for t in [turn, *kept] for m in t.messages()]) > budget:
            break
        kept.insert(0, turn)
    return [turn.number for turn in kept]


@grades("Exercise 2")
def check_token_window(TokenWindow: type | None) -> None:
    """12, exercise 2: a memory that keeps as many of the latest whole turns as fit a token budget."""
    exercise = "Exercise 2"
    if TokenWindow is None:
        return _not_attempted(exercise, "Write class TokenWindow in the cell above.")
    turns = _token_window_turns()
    sizes = [message_tokens(turn.messages()) for turn in turns]
    # Every budget where the answer changes, and one token either side of it.
    edges = {0, sum(sizes) + 50}
    for start in range(len(turns)):
        cost = message_tokens([m for t in turns[start:] for m in t.messages()])
        edges |= {cost - 1, cost, cost + 1}
    for budget in sorted(b for b in edges if b >= 0):
        memory = _instance(exercise, TokenWindow, budget)
        messages = _run(exercise, f"TokenWindow({budget}).history(...)", memory.history, _TurnsOnly(turns))
        got = _which_turns(messages, turns)
        expected = _expected_token_window(turns, budget)
        if got == expected:
            continue
        why = ""
        if isinstance(got, list) and got:
            cost = message_tokens(messages)
            if cost > budget:
                why = f" Those messages cost {cost} tokens (message_tokens), over the budget."
            elif got != sorted(got):
                why = " Oldest first: the model reads the conversation in the order it happened."
            elif got != list(range(got[0], got[-1] + 1)) or got[-1] != len(turns):
                why = (" Keep the latest turns without gaps: once a turn does not fit, the older ones are dropped"
                       " too (a conversation with a hole in it reads wrong).")
            else:
                why = " Count tokens with message_tokens(messages), not characters: Chinese and English differ."
        kept = f"it kept turns {got}" if isinstance(got, list) else f"what it gave is wrong: {got}"
        _fail(exercise, f"with a budget of {budget} tokens, {kept}; expected turns {expected} "
                        f"(the six turns cost {sizes} tokens each).{why}")
    return _passed(exercise, f"{len(edges)} budgets, each right at a turn's edge or next to it: the latest whole turns "
                             "that fit, oldest first, never over the budget.")
