"""Prompt tokens per turn of a scripted conversation: lesson 13's measurement, for its notebook and benchmark.

    sizes = measure_session(agent, LONG_SESSION)          # one TurnSize per turn
    print(size_table(measure_session(plain, tasks), measure_session(budgeted, tasks), budget=1500))

Every request the agent sends is counted as it goes out (`RequestLog` stands between the agent and its model),
with `context_budget.request_tokens`: messages, tool calls and the request's `tools`, by one counter
(cl100k_base where quicktok is installed). Per turn: how many requests, the largest (what has to fit in the
model's context), all of them together (what a provider bills), and whether the answer holds the turn's facts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tinyagent.agent import ReActAgent
from tinyagent.memory.context_budget import request_tokens
from tinyagent.memory.plain_turns import iter_turns
from tinyagent.protocols.token_count import TokenCounter, token_counter
from tinyagent.shop.tasks import ShopTask


@dataclass(frozen=True)
class TurnSize:
    """One turn: its number, request, model calls, largest request and all requests in tokens, and outcome."""

    turn: int
    question: str
    requests: int
    largest: int
    sent: int
    right: bool
    reason: str


class RequestLog:
    """A model wrapper that counts the tokens of every request before passing it on."""

    def __init__(self, llm, counter: TokenCounter | None = None):
        self.llm = llm
        self.model = getattr(llm, "model", "")
        self.counter = counter or token_counter()
        self.tokens: list[int] = []

    def chat(self, messages, **options):
        self.tokens.append(request_tokens(list(messages), options.get("tools"), self.counter))
        return self.llm.chat(messages, **options)


def measure_session(agent: ReActAgent, tasks: Iterable[ShopTask], counter: TokenCounter | None = None
                    ) -> list[TurnSize]:
    """Run `tasks` as one conversation (plain_turns.iter_turns) and size every turn's requests. The agent's model is
    wrapped in a `RequestLog` for the session and given back afterwards."""
    tasks = list(tasks)
    llm, log = agent.llm, RequestLog(agent.llm, counter)
    agent.llm = log
    sizes = []
    try:
        done = 0
        for number, (task, result) in enumerate(zip(tasks, iter_turns(agent, [t.question for t in tasks])), 1):
            turn = log.tokens[done:]
            done = len(log.tokens)
            sizes.append(TurnSize(number, task.question, len(turn), max(turn, default=0), sum(turn),
                                  task.answered(result.answer), result.reason))
    finally:
        agent.llm = llm
    return sizes


def size_table(without: list[TurnSize], with_budget: list[TurnSize], budget: int, width: int = 44) -> str:
    """The two sessions side by side, turn by turn, with totals: largest request and tokens sent per turn."""
    lines = [
        f"{'':4} {'':{width}} {'without a budget':>18}   {f'with {budget}':>18}",
        f"{'turn':>4} {'request':{width}} {'largest':>8} {'sent':>9}   {'largest':>8} {'sent':>9}  right",
    ]
    for plain, fitted in zip(without, with_budget):
        question = plain.question if len(plain.question) <= width else plain.question[: width - 1] + "…"
        right = "/".join("yes" if s.right else "NO" for s in (plain, fitted))
        lines.append(f"{plain.turn:>4} {question:{width - _wide(question)}} {plain.largest:>8} {plain.sent:>9}   "
                     f"{fitted.largest:>8} {fitted.sent:>9}  {right}")
    lines.append(
        f"{'all':>4} {'':{width}} {max(s.largest for s in without):>8} {sum(s.sent for s in without):>9}   "
        f"{max(s.largest for s in with_budget):>8} {sum(s.sent for s in with_budget):>9}  "
        f"{sum(s.right for s in without)}/{sum(s.right for s in with_budget)} of {len(without)}"
    )
    return "\n".join(lines)


def _wide(text: str) -> int:
    """How many of `text`'s characters take two columns in a terminal (Chinese), so columns line up."""
    return sum(1 for char in text if "\u2e80" <= char <= "\u9fff" or "\uff00" <= char <= "\uffef")
