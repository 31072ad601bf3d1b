"""Lesson 10 (stopping): the second article's loop counter fixed, and a cost budget as a stop rule."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tinyagent.agent import ReActAgent
from tinyagent.checks.lesson06_react_loop import ORDER_STEP
from tinyagent.checks.reporting import _fail, _fresh_shop, _instance, _not_attempted, _passed, _run, grades
from tinyagent.events import LlmCall
from tinyagent.llm_client import ChatResult
from tinyagent.loop_parts import Stop
from tinyagent.robustness.stop_rules import LimitReached, StopRules
from tinyagent.shop import shop_registry
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
LOOP_COUNTER_CASES = [
    # (what the model does, limit, its reply to call n, model calls expected, the answer expected or None)
    ("a model that keeps calling a tool that works", 4, lambda n: ORDER_STEP, 4, None),
    ("a model that answers in round 2", 4, lambda n: ORDER_STEP if n < 1 else FINAL_STEP, 2, "订单 88231 已签收。"),
    ("a model that calls a missing tool twice, then answers", 4,
     lambda n: MISSING_TOOL_STEP if n < 2 else FINAL_STEP, 3, "订单 88231 已签收。"),
    ("a model that only ever calls a missing tool", 4, lambda n: MISSING_TOOL_STEP, 4, None),
    ("a model that keeps calling a tool that works, with limit=1", 1, lambda n: ORDER_STEP, 1, None),
]


@grades("Exercise 1")
def check_fixed_seed_loop(fixed_seed_loop: Callable | None) -> None:
    """10, exercise 1: the second article's loop with a counter that moves every round, and only once."""
    exercise = "Exercise 1"
    if fixed_seed_loop is None:
        return _not_attempted(exercise, "Write def fixed_seed_loop(question, llm, tools, limit=10) in the cell above.")
    for what, limit, script, expected_calls, expected_answer in LOOP_COUNTER_CASES:
        model = GivingUpModel(script, give_up_after=3 * limit + 2)
        answer = _run(exercise, f"fixed_seed_loop(..., limit={limit})", fixed_seed_loop,
                      "帮我看看订单 88231 的快递到哪了。", model, shop_registry(_fresh_shop()), limit=limit)
        where = f"with limit={limit} and {what}"
        if model.ran_away:
            _fail(exercise, f"{where}, your loop made {model.calls} model calls and ended only because the check's "
                            "model gave up: does the counter move every round, or only when something throws?")
        if model.calls > expected_calls:
            _fail(exercise, f"{where}, your loop made {model.calls} model calls, expected {expected_calls}: "
                            "limit rounds means limit model calls (mind < and <=)")
        if model.calls < expected_calls:
            _fail(exercise, f"{where}, your loop stopped after {model.calls} model calls, expected {expected_calls}: "
                            "does a round that throws move the counter twice?")
        if expected_answer is None and not (isinstance(answer, str) and answer.strip()):
            _fail(exercise, f"{where}, your loop returned {answer!r} when it gave up; return a give-up text (a "
                            "string the caller can show), as the first article's loop does")
        if expected_answer is not None and answer != expected_answer:
            _fail(exercise, f"{where}, your loop returned {answer!r}, expected the model's answer {expected_answer!r}")
    return _passed(exercise, "the counter moves once a round, whether the tool worked or threw, so a model "
                             "that never answers costs `limit` calls and no more.")


def _costly_trace(*usages: tuple[int, int]) -> Any:
    return Trace([
        LlmCall(n, text="...", finish_reason="stop",
                usage={"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c})
        for n, (p, c) in enumerate(usages, start=1)
    ])


@grades("Exercise 2")
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
    for budget, usages, should_stop, when in cases:
        rule = _instance(exercise, CostBudget, budget, *prices)
        check = getattr(rule, "check", None)
        if not callable(check):
            _fail(exercise, "a stop rule needs a method check(self, trace)")
        verdict = _run(exercise, "check(trace)", check, _costly_trace(*usages))
        if should_stop and not isinstance(verdict, Stop):
            _fail(exercise, f"CostBudget({budget}, 2.0, 8.0) {when} should stop the run: return "
                            f"Stop('cost_budget', ...) (from tinyagent), got {verdict!r}. Prices are per million "
                            "tokens, prompt and completion priced apart, over every call so far")
        if not should_stop and verdict is not None:
            _fail(exercise, f"CostBudget({budget}, 2.0, 8.0) {when} should let the run go on (return None), got "
                            f"{verdict!r}. Prices are per million tokens")
        if should_stop and verdict.reason != "cost_budget":
            _fail(exercise, f"the Stop's reason should be 'cost_budget' (the name the trace shows), got {verdict.reason!r}")

    class Endless:  # asks for the same working tool forever, every call 1000 + 100 tokens
        def chat(self, messages: list[dict], **options: Any) -> ChatResult:
            return ChatResult(ORDER_STEP, "stop", {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100})

    rule = _instance(exercise, CostBudget, 0.01, *prices)
    agent = ReActAgent(Endless(), shop_registry(_fresh_shop()), parts=[StopRules([rule])])
    result = _run(exercise, "ReActAgent(..., parts=[StopRules([CostBudget(0.01, 2.0, 8.0)])]).run(...)", agent.run,
                  "88231?")
    limits = result.trace.of_type(LimitReached)
    if result.reason != "cost_budget" or limits[0].step != 4:
        stopped = f"{result.reason} after round {limits[0].step}" if limits else result.reason
        _fail(exercise, f"in an agent whose every call costs ¥0.0028 (1000 + 100 tokens), a budget of ¥0.01 should "
                        f"stop the run after round 4 (¥0.0112 spent); it ended with {stopped}")
    return _passed(exercise, "each call is priced by its prompt and its completion tokens, summed over the run; "
                             "in the agent the budget stopped the run before round 5.")
