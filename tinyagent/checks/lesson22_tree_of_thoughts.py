"""Lesson 22 (a tree of thoughts): the shop's scoring rule, and the beam step that keeps the best nodes."""

from __future__ import annotations

from collections.abc import Callable

from tinyagent.architectures.tree_search import Candidate, Node
from tinyagent.checks.reporting import _fail, _not_attempted, _passed, _run, grades
from tinyagent.parser import parse_step

_LOOKED_UP = (("queryOrder", "88231"),)
# (candidate, the score the rule gives, what the case is about)
RULE_CASES = (
    (Candidate("Refund it now.", "applyRefund", '{"orderId":"88231"}', None, False, ()), 0.0,
     "applyRefund before any look-up"),
    (Candidate("Refund it.", "applyRefund", '{"orderId":"88231"}', None, False,
               (("searchKnowledge", "退货 政策"), ("getCurrentTime", ""))), 0.0,
     "applyRefund after the policy and the date, but before queryOrder"),
    (Candidate("Tell the customer.", "sendMessage", "您的退款已提交", None, False, ()), 0.0,
     "another tool that changes something (sendMessage), before queryOrder"),
    (Candidate("Now the refund.", "applyRefund", '{"orderId":"88231"}', None, False,
               (*_LOOKED_UP, ("getCurrentTime", ""))), 1.0,
     "applyRefund after queryOrder has run on the branch"),
    (Candidate("Look it up again.", "queryOrder", "88231", None, True, _LOOKED_UP), 0.2,
     "queryOrder(88231) when the branch already made that call"),
    (Candidate("The other order.", "queryOrder", "88232", None, True, _LOOKED_UP), 1.0,
     "queryOrder(88232) after queryOrder(88231): same tool, another input"),
    (Candidate("Look it up.", "queryOrder", "88231", None, True, ()), 1.0, "a first look-up"),
    (Candidate("I can answer.", None, None, "订单 88231 已签收。", False, ()), 1.0,
     "a Final Answer (no tool at all) before any look-up"),
)


@grades("Exercise 1")
def check_shop_rule(my_rule: Callable[[Candidate], float] | None) -> None:
    """22, exercise 1: 0.0 for a tool that changes something before queryOrder ran on the branch, 0.2 for a call
    the branch already made, 1.0 for anything else."""
    exercise = "Exercise 1"
    if my_rule is None:
        return _not_attempted(exercise, "Write def my_rule(candidate) in the cell above.")
    if not callable(my_rule):
        _fail(exercise, f"my_rule should be a function, got {type(my_rule).__name__}")
    for candidate, expected, what in RULE_CASES:
        got = _run(exercise, f"my_rule on {what}", my_rule, candidate)
        if isinstance(got, bool) or not isinstance(got, (int, float)) or not 0 <= got <= 1:
            _fail(exercise, f"on {what} my_rule returned {got!r}: a score is a number from 0 to 1")
        if abs(got - expected) > 1e-9:
            _fail(exercise, f"on {what} my_rule gave {got!r}, expected {expected}. {_hint(candidate, expected)}")
    return _passed(exercise, f"{len(RULE_CASES)} candidates scored: side effects wait for queryOrder, repeats are "
                             "marked down, everything else is left to the model's score.")


def _hint(candidate: Candidate, expected: float) -> str:
    if expected == 0.0:
        return "Read candidate.read_only (not the tool's name), and look for queryOrder in candidate.history."
    if expected == 0.2:
        return "A repeat is the same (tool, input) pair as one in candidate.history."
    if candidate.tool_name is None:
        return "A Final Answer has no tool: nothing in it can change the shop."
    if not candidate.read_only:
        return "Once queryOrder has run on the branch, a side effect is scored like any other step."
    return "A repeat needs the same tool and the same input."


def _nodes(spec: list[tuple[str, float, int, int]]) -> list[Node]:
    step = parse_step("Thought: -\nFinal Answer: -")
    return [Node(node_id, None, depth, order, "", step, score=score) for node_id, score, depth, order in spec]


# (the nodes as (id, score, depth, order), width, the ids expected, what the case is about)
BEAM_CASES = (
    ([("1", 0.4, 1, 0), ("2", 0.9, 1, 1), ("3", 0.7, 1, 2)], 2, ["2", "3"], "three scores, width 2"),
    ([("1.1", 0.8, 2, 3), ("3", 0.8, 1, 5), ("2", 0.5, 1, 1)], 2, ["3", "1.1"],
     "a tie between depth 1 and depth 2"),
    ([("2.1", 0.8, 2, 4), ("1.1", 0.8, 2, 5), ("1.2", 0.3, 2, 6)], 2, ["2.1", "1.1"],
     "a tie at the same depth: 2.1 was proposed before 1.1"),
    ([("1", 0.2, 1, 0)], 3, ["1"], "one node, width 3"),
    ([], 2, [], "no nodes"),
)


@grades("Exercise 2")
def check_keep_best(my_keep_best: Callable[[list[Node], int], list[Node]] | None) -> None:
    """22, exercise 2: the `width` best nodes, best first; ties to the shallower, then to the one proposed first."""
    exercise = "Exercise 2"
    if my_keep_best is None:
        return _not_attempted(exercise, "Write def my_keep_best(nodes, width) in the cell above.")
    if not callable(my_keep_best):
        _fail(exercise, f"my_keep_best should be a function, got {type(my_keep_best).__name__}")
    for spec, width, expected, what in BEAM_CASES:
        nodes = _nodes(spec)
        given = list(nodes)
        got = _run(exercise, f"my_keep_best on {what}", my_keep_best, given, width)
        if given != nodes:
            _fail(exercise, f"on {what} my_keep_best changed the list it was given: return a new list")
        if not isinstance(got, list) or not all(isinstance(node, Node) for node in got):
            _fail(exercise, f"on {what} my_keep_best returned {type(got).__name__}: return a list of the nodes")
        ids = [node.id for node in got]
        if ids != expected:
            _fail(exercise, f"on {what} (width {width}) it kept {ids}, expected {expected}. {_beam_hint(ids, expected)}")
    return _passed(exercise, f"{len(BEAM_CASES)} beams kept: best first, ties to the shallower node, then to the one "
                             "the model proposed first.")


def _beam_hint(ids: list[str], expected: list[str]) -> str:
    if len(ids) > len(expected):
        return "Keep at most `width` nodes."
    if sorted(ids) == sorted(expected):
        return "Best first; on a tie, the smaller depth, then the smaller order."
    return "Sort by score, highest first, before you cut to `width`."
