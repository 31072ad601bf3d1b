"""Lessons 12, 18, 19 and 20's checks on the answers a prober found mis-graded or mis-named: a memory that keeps a
session's turn 1 (or its turns' token counts) on self by the session's id, a refund id cut out of the answer a
failure shows, an SSE reader that makes an event of every block, and an Observation reader that writes 'None' for a
tool that returned nothing, reads a system message's prompt, or drops a result that repeats one. Each wrong answer
fails with a message that names its mistake; the solutions still pass."""

from __future__ import annotations

import re
from dataclasses import replace

from tests.test_exercises import (
    FirstAndLast,
    TokenWindow,
    _text_of,
    fails,
    passes,
    read_events_solution,
    turn_pairs,
)
from tinyagent.checks import (
    EVAL_EXERCISE_REQUEST,
    check_eval_task,
    check_first_and_last,
    check_observations_in,
    check_sse_reader,
    check_token_window,
)
from tinyagent.evaluation import EvalTask
from tinyagent.memory.session import message_tokens

# -- 12 · Memory ------------------------------------------------------------------------------------


class FirstTurnByItsId(FirstAndLast):  # turn 1 kept on self per session id: another session with that id gets it
    def __init__(self, last):
        super().__init__(last)
        self.first = {}

    def history(self, session):
        turns = session.turns()
        if turns:
            self.first.setdefault(session.id, turns[0])
        kept = [self.first[session.id]] if turns else []
        return turn_pairs(kept + turns[max(1, len(turns) - self.last):])


class CostsByIdAndNumber(TokenWindow):  # each turn's tokens kept on self by (session id, number)
    def __init__(self, max_tokens):
        super().__init__(max_tokens)
        self.costs = {}

    def history(self, session):
        turns, total, count = session.turns(), 0, 0
        for turn in reversed(turns):
            cost = self.costs.setdefault((session.id, turn.number), message_tokens(turn_pairs([turn])))
            if total + cost > self.max_tokens:
                break
            total, count = total + cost, count + 1
        return turn_pairs(turns[len(turns) - count:]) if count else []


class FirstAndLastFromTheStore(FirstAndLast):  # right: a session's turns are its store's turns(session.id)
    def history(self, session):
        turns = session.store.turns(session.id)
        return turn_pairs(turns[:1] + turns[max(1, len(turns) - self.last):])


class TokenWindowFromTheStore(TokenWindow):  # right, read from the store too
    def history(self, session):
        kept = []
        for turn in reversed(session.store.turns(session.id)):
            if message_tokens(turn_pairs([turn]) + kept) > self.max_tokens:
                break
            kept = turn_pairs([turn]) + kept
        return kept


def test_12_a_memory_keyed_by_session_id_is_told_two_sessions_may_share_one():
    # an application chooses its sessions' ids (Session(..., session_id=...)), and store.delete(id) exists: a second
    # store's session "a", or one made again after a delete, got the first one's turn 1 (or its turns' token counts)
    fails(check_first_and_last, FirstTurnByItsId,
          says="the spec says: one memory, many sessions, two with one id too (in two stores, or one deleted and made "
               "again): each gets its own first and last turns")
    fails(check_first_and_last, FirstTurnByItsId, says="(B had A's id: keep no session's turns on self, not even by")
    fails(check_token_window, CostsByIdAndNumber,
          says="the spec says: one memory, many sessions, two with one id too (in two stores, or one deleted and made "
               "again): each is windowed on its own turns")
    fails(check_token_window, CostsByIdAndNumber, says="(B had A's id: keep nothing of a session on self, not even by")
    assert passes(check_first_and_last, FirstAndLast) and passes(check_token_window, TokenWindow)
    # a session with A's id lives in a store of its own: read from session.store, each still gets its own turns
    assert passes(check_first_and_last, FirstAndLastFromTheStore)
    assert passes(check_token_window, TokenWindowFromTheStore)


# -- 18 · Evaluation --------------------------------------------------------------------------------
REFUND_TOOLS = ("queryOrder", "getCurrentTime", "searchKnowledge", "applyRefund")
EVAL_SOLUTION = EvalTask("unused refund", EVAL_EXERCISE_REQUEST, ("RF202606300001",), lang="en", tools=REFUND_TOOLS,
                         refunds=("88234",))  # notebooks/solutions/18_evaluation.ipynb


def test_18_a_failure_names_the_refund_id_the_shop_issued():
    # the answer shown is cut in the middle, where its refund id is: the failure named the order only ("wrote refund
    # 88234"), and a learner who wrote a wrong id could not read the right one
    fails(check_eval_task, replace(EVAL_SOLUTION, facts=("RF202606300002",)),
          says="wrote refund RF202606300001 for order 88234 and answered")
    fails(check_eval_task, replace(EVAL_SOLUTION, facts=("RF202606300002",)), says="it does not say RF202606300002")
    assert passes(check_eval_task, EVAL_SOLUTION)


# -- 19 · Serving -----------------------------------------------------------------------------------


def every_block_an_event(text):  # the solution without its `if data:`: the empty text after the last blank line too
    events = []
    for block in re.sub(r"\r\n|\r", "\n", text).split("\n\n"):
        name, data = "message", []
        for line in block.split("\n"):
            if line.startswith(":"):
                continue
            if line.startswith("event:"):
                name = line[len("event:"):].strip() or "message"
            elif line.startswith("data:"):
                data.append(line[len("data:"):].removeprefix(" "))
        events.append((name, "\n".join(data)))
    return events


def test_19_an_event_for_every_block_is_told_a_block_without_data_gives_none():
    # it was told only "It read 2 event(s), expected 1." under the one-space sentence, whose streams come first
    fails(check_sse_reader, every_block_an_event,
          says="Its events' names and data are right, but it made an event of a block with no data: line: such a "
               "block gives none, nor does the empty text after the stream's last blank line.")
    assert passes(check_sse_reader, read_events_solution)


# -- 20 · Frameworks --------------------------------------------------------------------------------


def observations_in_with(customers=("user",), tool_text=_text_of, output=lambda value: value or "",
                         found_as=lambda found: found):
    """The solution of 20's exercise 1 (notebooks/solutions/20_frameworks.ipynb), with the pieces a wrong answer
    swaps: the roles read as the customer's (`customers`), a tool message's text (`tool_text(content)`), a Responses
    item's result (`output(value)`), and what becomes of the list found (`found_as`)."""
    def observations_in(body):
        found = []
        for item in body.get("messages", body.get("input", [])):
            if item.get("type") == "function_call_output":
                found.append(output(item["output"]))
                continue
            text = _text_of(item.get("content")).strip()
            if item.get("role") == "tool":
                found.append(tool_text(item.get("content")).strip())
            elif item.get("role") in customers and text.startswith("Observation:"):
                found.append(text[len("Observation:"):].strip())
            elif item.get("role") in customers and "\nQuestion:" in "\n" + text:
                scratchpad = ("\n" + text).rsplit("\nQuestion:", 1)[1]
                found += [line[len("Observation:"):].strip() for line in scratchpad.splitlines()
                          if line.startswith("Observation:")]
        return found_as(found)
    return observations_in


def test_20_a_tool_that_returned_none_gives_an_empty_result():
    # no generated request had content None (null): str(content) passed, giving 'None' for a tool that returned nothing
    fails(check_observations_in, observations_in_with(tool_text=lambda content: str(content) if content is None else
                                                      _text_of(content)),
          says="Result 2: content None (null) is a tool that returned nothing, \"\", not 'None'.")
    # a Responses item's output None, kept as it is (the solution's reading before): a list of strings is asked for
    fails(check_observations_in, observations_in_with(output=lambda value: value),
          says="it returned [None]: return a list of strings")
    assert passes(check_observations_in, observations_in_with())


def test_20_another_roles_prompt_and_repeated_results_are_named():
    # both were told only "It found N result(s), expected M." under the sentence on user messages
    fails(check_observations_in, observations_in_with(customers=("user", "system")),
          says="A system message holds no results: only user and tool messages do.")
    fails(check_observations_in, observations_in_with(customers=("user", "assistant")),
          says="An assistant message holds no results: only user and tool messages do.")
    fails(check_observations_in, observations_in_with(found_as=lambda found: list(dict.fromkeys(found))),
          says="It dropped a result that repeats one: two alike are two results.")
