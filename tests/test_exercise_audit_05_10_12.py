"""Wrong answers to lessons 05, 10 and 12's exercises that an audit found passing or told the wrong thing: a parser
that takes an empty Final Answer for none, a cost budget that prices only the prompt and was told about exact sums,
and memories that keep turns by the session object. Each now fails and says what is wrong, and each lesson's
solution still passes."""

from __future__ import annotations

from tests.test_exercises import (
    CostBudget,
    FirstAndLast,
    TokenWindow,
    failure,
    final_answer_of,
    my_parse,
    passes,
    turn_pairs,
)
from tinyagent.checks import (
    check_cost_budget,
    check_first_and_last,
    check_parser_stops_at_observation,
    check_token_window,
)
from tinyagent.memory.session import message_tokens


# -- 05, exercise 1 ----------------------------------------------------------------------------------
def test_05_an_empty_final_answer_taken_for_none_fails():
    def truthy_answer(text):  # the solution with `if final:` for `if final is not None:`
        if final_answer_of(text) == "":  # an empty answer read as none: the action before its key wins
            return my_parse(text[:text.index("Final Answer:")], stop_at_observation=True)
        return my_parse(text, stop_at_observation=True)

    said = failure(check_parser_stops_at_observation, truthy_answer)
    assert "makes the reply an answer" in said, said
    assert "expected Final Answer '', got Action" in said, said
    assert passes(check_parser_stops_at_observation, lambda text: my_parse(text, stop_at_observation=True))


# -- 10, exercise 2 ----------------------------------------------------------------------------------
def test_10_a_budget_that_prices_tokens_wrong_is_told_of_the_prices_not_of_exact_sums():
    class PromptOnly(CostBudget):  # completion tokens never priced
        def check(self, trace):
            from tinyagent import LlmCall, Stop

            spent = sum(c.usage.get("prompt_tokens", 0) * self.input_price for c in trace.of_type(LlmCall)) / 1e6
            return Stop("cost_budget") if spent >= self.yuan else None

    class InputPriceForAll(CostBudget):  # every token at the prompt's price
        def check(self, trace):
            from tinyagent import LlmCall, Stop

            usage = [c.usage for c in trace.of_type(LlmCall)]
            tokens = sum(u.get("prompt_tokens", 0) + u.get("completion_tokens", 0) for u in usage)
            return Stop("cost_budget") if tokens * self.input_price / 1e6 >= self.yuan else None

    for answer in (PromptOnly, InputPriceForAll):
        said = failure(check_cost_budget, answer)
        assert "prompt and completion priced apart" in said, said
        assert "Fraction" not in said and "exactly" not in said.split("priced apart")[1], said
    assert passes(check_cost_budget, CostBudget)


# -- 12, exercises 1 and 2 ---------------------------------------------------------------------------
class FirstKeptBySession(FirstAndLast):
    """Keeps each session's first turn by the session object: the same Session, its turns deleted (store.delete)
    and asked again, is given the deleted conversation's first turn."""

    def __init__(self, last):
        super().__init__(last)
        self.first = {}

    def history(self, session):
        turns = session.turns()
        if turns and session not in self.first:
            self.first[session] = turns[0]
        first = [self.first[session]] if session in self.first else []
        return turn_pairs(first + turns[max(1, len(turns) - self.last):])


class CountsKeptBySession(TokenWindow):
    """Keeps each turn's messages by (session object, turn number): after a delete, turn 1 is the old turn 1."""

    def __init__(self, max_tokens):
        super().__init__(max_tokens)
        self.kept = {}

    def history(self, session):
        window = []
        for turn in reversed(session.turns()):
            messages = self.kept.setdefault((session, turn.number), turn_pairs([turn]))
            if message_tokens(messages + window) > self.max_tokens:
                break
            window = messages + window
        return window


def test_12_memories_that_keep_turns_by_the_session_object_fail():
    said = failure(check_first_and_last, FirstKeptBySession)
    assert "one deleted and made again" in said and "not even by store, id or session" in said, said
    said = failure(check_token_window, CountsKeptBySession)
    assert "one deleted and made again" in said, said
    assert passes(check_first_and_last, FirstAndLast)
    assert passes(check_token_window, TokenWindow)
