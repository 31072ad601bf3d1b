"""Wrong answers to lessons 05, 06 and 10's exercises that an audit found passing, or failing with a message that
named another mistake or showed no difference: each now fails and says what is wrong, and each lesson's solution
still passes."""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

from tests.test_exercises import (
    CountingLlm,
    Recorder,
    Replayer,
    Step,
    failure,
    final_answer_of,
    passes,
    run_loop,
    split_sections,
)
from tinyagent import Action, LlmCall, Stop
from tinyagent.checks import (
    check_cost_budget,
    check_counting_llm,
    check_parser_stops_at_observation,
    check_record_replay,
)


# -- 05, exercise 1 ----------------------------------------------------------------------------------
def parsed(sections, text):
    thought = "\n".join(value for key, value in sections if key == "Thought:" and value)
    final = final_answer_of(text)
    if final is not None:
        return Step(thought, None, final)
    tool_name, tool_input = "", ""
    for key, value in sections:
        if key == "Action:":
            tool_name, tool_input = value, ""
        elif key == "Action Input:" and tool_name:
            tool_input = value
        elif key == "Observation:":
            break
    return Step(thought, Action(tool_name, tool_input) if tool_name else None, None)


def my_parse_v2(text):  # the solution's
    return parsed(split_sections(text), text)


def test_05_an_input_changed_where_the_cut_hides_it_is_shown_where_it_differs():
    # full-width colons made ASCII before the keys are read: the JSON value's "质量问题：" changed too, and the
    # message quoted the two inputs cut alike ('{ …  … 不回充"\n}' twice), "not the same ones"
    def colons_normalised(text):
        return parsed(split_sections(text.replace("：", ":")), text)

    said = failure(check_parser_stops_at_observation, colons_normalised)
    assert "质量问题：扫地机" in said and "质量问题:扫地机" in said, said
    assert "not the same ones" not in said, said
    assert passes(check_parser_stops_at_observation, my_parse_v2)


# -- 06 ----------------------------------------------------------------------------------------------
def test_06_a_list_shared_through_a_default_value_is_named_as_the_default():
    # `usages=[]` in __init__'s signature: one list for every instance, told as "a list made in the class body"
    class DefaultUsages:
        def __init__(self, llm, usages=[]):  # noqa: B006 - the mistake under test
            self.llm, self.usages = llm, usages

        def chat(self, messages, **options):
            reply = self.llm.chat(messages, **options)
            self.usages.append(reply.usage)
            return reply

    class DefaultReplies(Recorder):
        def __init__(self, llm, replies=[]):  # noqa: B006 - the mistake under test
            self.llm, self.replies = llm, replies

    said = failure(check_counting_llm, DefaultUsages)
    assert "A default (usages=[]) is one list, made once" in said and "class body" not in said, said
    said = failure(check_record_replay, DefaultReplies, Replayer, run_loop)
    assert "A default (replies=[]) is one list, made once" in said and "class body" not in said, said
    assert passes(check_counting_llm, CountingLlm)


SHARED: list = []  # a module's list, for the answer below


def test_06_a_list_shared_from_outside_the_class_is_named_so():
    class ModuleUsages(CountingLlm):
        def __init__(self, llm):
            self.llm, self.usages = llm, SHARED

    said = failure(check_counting_llm, ModuleUsages)
    assert "A list made outside the class" in said and "class body" not in said, said

    class ClassUsages(CountingLlm):  # a list made in the class body is still told so
        usages = []  # noqa: RUF012 - the mistake under test

        def __init__(self, llm):
            self.llm = llm

    assert "A list made in the class body is shared by every instance" in failure(check_counting_llm, ClassUsages)


# -- 10, exercise 2 ----------------------------------------------------------------------------------
class CostBudget:  # the solution's
    def __init__(self, yuan, input_price, output_price):
        self.yuan, self.input_price, self.output_price = yuan, input_price, output_price

    def check(self, trace):
        spent = sum(call.usage.get("prompt_tokens", 0) * self.input_price
                    + call.usage.get("completion_tokens", 0) * self.output_price
                    for call in trace.of_type(LlmCall)) / 1_000_000
        if spent >= self.yuan:
            return Stop("cost_budget", f"¥{spent:.4f} spent, the budget is ¥{self.yuan:g}")
        return None


def each_call_in_millionths(whole):
    """A CostBudget that makes each call's cost a whole number of millionths of a yuan with `whole`."""
    class InMillionths(CostBudget):
        def check(self, trace):
            spent = sum(whole(call.usage.get("prompt_tokens", 0) * self.input_price
                              + call.usage.get("completion_tokens", 0) * self.output_price)
                        for call in trace.of_type(LlmCall)) / 1e6
            return Stop("cost_budget", "spent") if spent >= self.yuan else None

    return InMillionths


def test_10_a_cost_cut_to_whole_millionths_fails_and_is_named():
    # int() on each call's cost in millionths passed: 3 calls of 1001 tokens at ¥0.27 per million cost 810.81
    # millionths, exactly a budget of ¥0.00081081, and it read 810; every exact budget was a whole millionth
    said = failure(check_cost_budget, each_call_in_millionths(int))
    assert "it cuts before it compares, the cost to 6 places (a millionth), cutting the rest off" in said, said
    # rounded or rounded up to whole millionths: the exact budget, or one just above it, tells them too
    assert "exactly `yuan` stops" in failure(check_cost_budget, each_call_in_millionths(round))
    assert "exactly `yuan` stops" in failure(check_cost_budget, each_call_in_millionths(math.ceil))

    class ExactFromText(CostBudget):  # right: exact arithmetic, the prices and the budget read as written
        def check(self, trace):
            spent = sum((call.usage.get("prompt_tokens", 0) * Fraction(str(self.input_price))
                         + call.usage.get("completion_tokens", 0) * Fraction(str(self.output_price))
                         for call in trace.of_type(LlmCall)), Fraction(0)) / 10**6
            return Stop("cost_budget", "spent") if spent >= Fraction(str(self.yuan)) else None

    class InDecimal(CostBudget):  # right: Decimal, the tokens of each kind added up first
        def check(self, trace):
            calls = trace.of_type(LlmCall)
            prompt, completion = (sum(c.usage.get(kind, 0) for c in calls) for kind in ("prompt_tokens",
                                                                                         "completion_tokens"))
            spent = (prompt * Decimal(str(self.input_price)) + completion * Decimal(str(self.output_price))) / 10**6
            return Stop("cost_budget", "spent") if spent >= Decimal(str(self.yuan)) else None

    assert passes(check_cost_budget, CostBudget)
    assert passes(check_cost_budget, ExactFromText)
    assert passes(check_cost_budget, InDecimal)


def test_10_a_budget_cut_to_fen_is_named_as_cut_not_as_the_prices():
    # int(spent * 100) >= int(yuan * 100): failed under "prices are yuan per million tokens", which it had right
    class InFen(CostBudget):
        def check(self, trace):
            spent = sum(call.usage.get("prompt_tokens", 0) * self.input_price
                        + call.usage.get("completion_tokens", 0) * self.output_price
                        for call in trace.of_type(LlmCall)) / 1e6
            return Stop("cost_budget", "spent") if int(spent * 100) >= int(self.yuan * 100) else None

    said = failure(check_cost_budget, InFen)
    assert ("it cuts before it compares, the budget to 2 places (fen), cutting the rest off (as int() does): with "
            "nothing spent, a budget of ¥0.006 stops it (¥0.01 does not)") in said, said
    assert "prices are yuan per million" not in said and "cut neither" in said, said

    class FloorOfTheCost(CostBudget):  # the cost alone cut to fen with math.floor: told as cut, not rounded
        def check(self, trace):
            spent = sum(call.usage.get("prompt_tokens", 0) * self.input_price
                        + call.usage.get("completion_tokens", 0) * self.output_price
                        for call in trace.of_type(LlmCall)) / 1e6
            return Stop("cost_budget", "spent") if math.floor(spent * 100) / 100 >= self.yuan else None

    said = failure(check_cost_budget, FloorOfTheCost)
    assert "the cost to 2 places (fen), cutting the rest off (as int() does): ¥0.006 spent of ¥0.001" in said, said
