"""Lesson 22 (a tree of thoughts): the shop's scoring rule, and the beam step that keeps the best nodes."""

from __future__ import annotations

import dataclasses
import numbers
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from tinyagent.architectures.tree_search import Candidate, Node
from tinyagent.checks.generated import Rule, Spec, agree_on
from tinyagent.checks.reporting import _brief, _fail, _json_or_none, _not_attempted, _passed, grades
from tinyagent.parser import parse_step


def _reference_rule(candidate: Candidate) -> float:
    """22, exercise 1's answer (the solution's, and the package's `shop_rule`): 0.0 for a tool that changes
    something before queryOrder ran on the branch, 0.2 for a call the branch already made, else 1.0."""
    looked_up = any(tool == "queryOrder" for tool, _ in candidate.history)
    if candidate.tool_name is not None and not candidate.read_only and not looked_up:
        return 0.0
    if candidate.tool_name is not None and (candidate.tool_name, candidate.tool_input or "") in candidate.history:
        return 0.2
    return 1.0


_LOOKED_UP = (("queryOrder", "88231"),)
# The lesson's own cases (candidate, the score the rule gives, what the case is about): tried first, each with the
# rule it belongs to, before the generated ones.
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


def _lesson_cases(about: Callable[[Candidate, float], bool]) -> Iterator[tuple]:
    return ((candidate,) for candidate, score, _ in RULE_CASES if about(candidate, score))


# -- exercise 1's inputs, drawn from its spec ------------------------------------------------------
# Tools that change something: the shop's, and names no lesson uses (the rule reads read_only, not a list of names).
_CHANGING = ("applyRefund", "sendMessage", "cancelOrder", "issueCoupon", "createReminder", "sendWechat",
             "updateAddress")
# Look-ups other than queryOrder (read-only, but they are not the look-up the rule waits for).
_LOOK_UPS = ("queryLogistics", "searchKnowledge", "getCurrentTime", "getForecast", "checkStock", "getMeetings")
_THOUGHTS = ("Refund it now.", "先查一下订单。", "The customer asked twice.", "再确认一下物流", "I can answer.", "")
_ANSWERS = ("订单 {id} 已签收。", "Your refund for {id} is on its way.", "您的包裹 SF{n} 明天送达。",
            "I could not find order {id}.", "")


def _order_id(rng: random.Random) -> str:
    return str(rng.randint(10000, 99999))


def _tool_input(rng: random.Random, tool: str) -> str:
    """An input of the kind `tool` takes: an order id, a tracking number, JSON, Chinese keywords or nothing."""
    if tool in ("queryOrder", "cancelOrder", "checkStock"):
        return _order_id(rng)
    if tool == "queryLogistics":
        return f"{rng.choice(('SF', 'YT', 'ZT', 'JD'))}{rng.randint(10 ** 9, 10 ** 10 - 1)}"
    if tool in ("applyRefund", "issueCoupon", "updateAddress"):
        return f'{{"orderId": "{_order_id(rng)}", "reason": "{rng.choice(("质量问题", "it stopped charging"))}"}}'
    if tool in ("sendMessage", "sendWechat", "createReminder"):
        return rng.choice(("您的退款已提交", "Bring an umbrella at 15:00.", "明天 9:00 开会\n记得带伞"))
    if tool == "getCurrentTime":
        return ""
    return rng.choice(("退货 政策", "return policy", "北京", "明天", "七天无理由"))


def _look_ups(rng: random.Random, most: int, *, order: bool) -> list[tuple[str, str]]:
    """A branch's history of look-ups: queryOrder among them when `order`, at any place, on any order id."""
    calls = [(tool, _tool_input(rng, tool)) for tool in rng.choices(_LOOK_UPS, k=rng.randint(0, most))]
    if order:
        calls.insert(rng.randint(0, len(calls)), ("queryOrder", _order_id(rng)))
    return calls


def _candidate(rng: random.Random, tool: str | None, tool_input: str | None, read_only: bool,
               history: list[tuple[str, str]]) -> Candidate:
    if tool is None:
        answer = rng.choice(_ANSWERS).format(id=_order_id(rng), n=rng.randint(10 ** 9, 10 ** 10 - 1))
        return Candidate(rng.choice(_THOUGHTS), None, None, answer, read_only, tuple(history))
    return Candidate(rng.choice(_THOUGHTS), tool, tool_input, None, read_only, tuple(history),
                     rng.choice(("en", "zh")))


def _side_effects(rng: random.Random) -> Iterator[tuple]:
    yield from _lesson_cases(lambda candidate, score: candidate.tool_name is not None and not candidate.read_only)
    for _ in range(10):  # before queryOrder: 0.0, whatever else the branch looked up
        tool = rng.choice(_CHANGING)
        yield (_candidate(rng, tool, _tool_input(rng, tool), False, _look_ups(rng, 3, order=False)),)
    for _ in range(10):  # once queryOrder has run (any order id, at any place in the history): scored as usual
        tool = rng.choice(_CHANGING)
        yield (_candidate(rng, tool, _tool_input(rng, tool), False, _look_ups(rng, 3, order=True)),)
    # another tool whose name begins with queryOrder is not queryOrder
    yield (Candidate("Refund.", "applyRefund", '{"orderId":"88231"}', None, False, (("queryOrderStatus", "88231"),)),)
    yield (Candidate("通知客户", "sendMessage", "您的退款已提交", None, False,
                     (("searchKnowledge", "退货 政策"), ("queryOrders", "88232"))),)
    # read_only decides, not the name: checkout begins like checkStock and changes something
    yield (Candidate("Pay.", "checkout", "88231", None, False, ()),)
    # queryOrder ran, whatever its input
    yield (Candidate("Refund.", "applyRefund", '{"orderId":"88231"}', None, False, (("queryOrder", ""),)),)
    # a name in another case is another tool (one the model misspelt: it ran nothing), not queryOrder
    yield (Candidate("Refund.", "applyRefund", '{"orderId":"88231"}', None, False, (("queryorder", "88231"),)),)
    yield (Candidate("通知客户", "sendMessage", "您的退款已提交", None, False, (("QueryOrder", "88232"),)),)


def _first_rule_first(rng: random.Random) -> Iterator[tuple]:
    # a side effect that repeats a call of its branch, before queryOrder ran: rule 1 decides (0.0), not rule 2
    yield (Candidate("Refund again.", "applyRefund", '{"orderId":"88231"}', None, False,
                     (("applyRefund", '{"orderId":"88231"}'),)),)
    yield (Candidate("再发一次", "sendMessage", "您的退款已提交", None, False,
                     (("getCurrentTime", ""), ("sendMessage", "您的退款已提交"))),)


def _repeats(rng: random.Random) -> Iterator[tuple]:
    yield from _lesson_cases(lambda candidate, score: candidate.read_only and candidate.history)
    for _ in range(12):  # the same (tool, input) anywhere in the history, not only the last call
        tool = rng.choice(("queryOrder", *_LOOK_UPS))
        tool_input = _tool_input(rng, tool)
        history = _look_ups(rng, 4, order=rng.random() < 0.5)
        history.insert(rng.randint(0, len(history)), (tool, tool_input))
        yield (_candidate(rng, tool, tool_input, True, history),)
    for _ in range(4):  # a side effect made twice after queryOrder: a repeat
        tool = rng.choice(_CHANGING)
        tool_input = _tool_input(rng, tool)
        history = _look_ups(rng, 2, order=True)
        history.append((tool, tool_input))
        yield (_candidate(rng, tool, tool_input, False, history),)
    for _ in range(8):  # near misses: the same tool on another input, or the same input to another tool
        tool = rng.choice(("queryOrder", "queryLogistics", "searchKnowledge"))
        tool_input = _tool_input(rng, tool)
        history = _look_ups(rng, 3, order=True)
        if rng.random() < 0.5:
            history.append((tool, tool_input + rng.choice(("0", "1", " 政策")) if tool_input else "x"))
        else:
            other = "queryLogistics" if tool == "queryOrder" else "queryOrder"
            history.append((other, tool_input))
        yield (_candidate(rng, tool, tool_input, True, history),)
    # near misses in the text only: another case, a space inside, a space at the end (no repeats: the input differs)
    for tool_input, before in (("Return Policy", "return policy"), ("退货政策", "退货 政策"),
                               ("return policy", "return policy ")):
        yield (Candidate("Again.", "searchKnowledge", tool_input, None, True, (("searchKnowledge", before),)),)
    # the same JSON written with other spaces or another key order is another input, character for character
    yield (Candidate("Refund again.", "applyRefund", '{"orderId":"88231"}', None, False,
                     (("queryOrder", "88231"), ("applyRefund", '{"orderId": "88231"}'))),)
    yield (Candidate("Refund again.", "applyRefund", '{"orderId": "88231", "reason": "质量问题"}', None, False,
                     (("queryOrder", "88231"), ("applyRefund", '{"reason": "质量问题", "orderId": "88231"}'))),)
    # the same input to a tool named in another case: another tool, so no repeat
    yield (Candidate("Look it up.", "queryOrder", "88231", None, True, (("queryorder", "88231"),)),)


def _everything_else(rng: random.Random) -> Iterator[tuple]:
    yield from _lesson_cases(lambda candidate, score: candidate.tool_name is None
                             or (candidate.read_only and not candidate.history))
    for _ in range(8):  # a Final Answer: no tool, and read_only False as the search builds it (no tool says so)
        yield (_candidate(rng, None, None, False, _look_ups(rng, 3, order=rng.random() < 0.3)),)
    for _ in range(8):  # a look-up before or after queryOrder, new on its branch
        tool = rng.choice(("queryOrder", *_LOOK_UPS))
        tool_input = _tool_input(rng, tool)
        history = [call for call in _look_ups(rng, 3, order=rng.random() < 0.5) if call != (tool, tool_input)]
        yield (_candidate(rng, tool, tool_input, True, history),)
    # read-only by its flag, whatever its name
    yield (Candidate("Track it.", "trackParcel", "SF1234567890", None, True, ()),)


def _rule_hint(args: tuple, expected: float, got: object) -> str | None:
    candidate = args[0]
    if _a_score(got) is not None:
        return None  # the shape's own message says it
    call = (candidate.tool_name, candidate.tool_input or "")
    if got == 0.2 and expected == 1.0 and candidate.tool_name is not None and not any(
            tool.casefold() == candidate.tool_name.casefold() or text == (candidate.tool_input or "")
            for tool, text in candidate.history):
        return ("No call in candidate.history has this tool or this input, so it is no repeat (only the branch's "
                "own history counts, nothing kept from other candidates).")
    if got == 0.0 and candidate.read_only and call not in candidate.history:
        return ("Only a tool that changes something (read_only False) waits for queryOrder: this one is "
                "read-only.")
    if got == 0.0 and candidate.read_only and all(tool != "queryOrder" for tool, _ in candidate.history):
        # a read-only repeat before queryOrder: made to wait for it, or a repeat scored 0.0; this input cannot tell
        return ("A repeat scores 0.2, and a read-only tool never waits for queryOrder (only read_only False "
                "does).")
    if expected == 0.0 and got == 0.2:
        return "Rule 1 comes first: before queryOrder, a side effect scores 0.0 even when it repeats."
    near = [tool for tool, _ in candidate.history
            if tool != "queryOrder" and tool.casefold().startswith("queryorder")]
    if expected == 0.0 and near:
        return f"{near[0]} is another tool: look for queryOrder in candidate.history by its whole name, as written."
    if expected == 0.0:
        return "Read candidate.read_only (not the tool's name), and look for queryOrder in candidate.history."
    if expected == 0.2:
        return "A repeat is the same (tool, input) pair as any one in candidate.history."
    if candidate.tool_name is None and not candidate.final_answer:
        return ("A Final Answer with empty text is a Final Answer all the same: tell one by tool_name None, not by "
                "its text.")
    if candidate.tool_name is None:
        return "A Final Answer has no tool: nothing in it can change the shop."
    if not candidate.read_only and got == 0.0:
        return ("Once queryOrder has run on the branch (whatever its input), a side effect is scored like any "
                "other step.")
    loose = [text for tool, text in candidate.history
             if tool == candidate.tool_name and _loosely(text) == _loosely(candidate.tool_input or "")]
    if got == 0.2 and loose:
        return (f"A repeat needs the same tool and the same input, character for character: "
                f"{candidate.tool_input!r} is not {loose[0]!r}.")
    data = _json_or_none(candidate.tool_input or "")
    same_data = [text for tool, text in candidate.history
                 if tool == candidate.tool_name and data is not None and _json_or_none(text) == data]
    if got == 0.2 and same_data:
        return (f"A repeat needs the same input, character for character, not the same JSON data: "
                f"{candidate.tool_input!r} is not {same_data[0]!r}.")
    if got == 0.2 and any(tool.casefold() == (candidate.tool_name or "").casefold() for tool, _ in candidate.history):
        return "A repeat needs the same tool, by its name as written: queryorder is not queryOrder."
    return "A repeat needs the same tool and the same input."


def _loosely(text: str) -> str:
    return "".join(text.split()).casefold()


RULE_RULES = (
    Rule("a tool that changes something (`read_only` False) scores 0.0 while `queryOrder` has not run on its branch",
         _side_effects, _rule_hint),
    Rule("a call its branch already made (the same tool and input, anywhere in its history) scores 0.2", _repeats,
         _rule_hint),
    Rule("every other candidate scores 1.0, a Final Answer (no tool) included", _everything_else, _rule_hint),
    Rule("rule 1 comes before rule 2: a side effect repeated before `queryOrder` ran still scores 0.0",
         _first_rule_first, _rule_hint),
)


def _a_score(value: object) -> str | None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value <= 1:
        return f"it returned {_brief(value, 30)}: a score is a number from 0 to 1"
    return None


def _read_score(score: object) -> object:
    """A score as compared: any real number (a Fraction too) as a float, to 9 places."""
    if isinstance(score, numbers.Real) and not isinstance(score, bool):
        return round(float(score), 9)
    return score


def _show_candidate(args: tuple) -> str:
    candidate = args[0]
    step = (f"Final Answer {_brief(candidate.final_answer, 24)}" if candidate.tool_name is None
            else f"{candidate.tool_name} {_brief(candidate.tool_input, 24)}")
    return f"{step}, read_only={candidate.read_only}, history={_brief(list(candidate.history), 60)}"


@grades("Exercise 1", spec=Spec(RULE_RULES))
def check_shop_rule(my_rule: Callable[[Candidate], float] | None) -> None:
    """22, exercise 1: 0.0 for a tool that changes something before queryOrder ran on the branch, 0.2 for a call
    the branch already made, 1.0 for anything else."""
    exercise = "Exercise 1"
    if my_rule is None:
        return _not_attempted(exercise, "Write def my_rule(candidate) in the cell above.")
    if not callable(my_rule):
        _fail(exercise, f"my_rule should be a function, got {type(my_rule).__name__}")
    tried = agree_on(exercise, "check_shop_rule", RULE_RULES, my_rule, _reference_rule, shape=_a_score,
                     read=_read_score,
                     call="my_rule(candidate)", show=_show_candidate)
    return _passed(exercise, f"{tried} generated candidates scored: side effects wait for queryOrder, repeats are "
                             "marked down, everything else is left to the model's score.")


# -- exercise 2 ------------------------------------------------------------------------------------
# The lesson's own beams (the nodes as (id, score, depth, order), width, the ids kept, what the case is about):
# tried first, each with the rule it belongs to, before the generated ones.
BEAM_CASES = (
    ([("1", 0.4, 1, 0), ("2", 0.9, 1, 1), ("3", 0.7, 1, 2)], 2, ["2", "3"], "three scores, width 2"),
    ([("1.1", 0.8, 2, 3), ("3", 0.8, 1, 5), ("2", 0.5, 1, 1)], 2, ["3", "1.1"],
     "a tie between depth 1 and depth 2"),
    ([("2.1", 0.8, 2, 4), ("1.1", 0.8, 2, 5), ("1.2", 0.3, 2, 6)], 2, ["2.1", "1.1"],
     "a tie at the same depth: 2.1 was proposed before 1.1"),
    ([("1", 0.2, 1, 0)], 3, ["1"], "one node, width 3"),
    ([], 2, [], "no nodes"),
)


def _lesson_beams(*which: int) -> Iterator[tuple]:
    return ((tuple(BEAM_CASES[n][0]), BEAM_CASES[n][1]) for n in which)


def _reference_keep_best(nodes: list[Node], width: int) -> list[Node]:
    """22, exercise 2's answer (the solution's, and the package's `keep_best`)."""
    return sorted(nodes, key=lambda node: (-node.score, node.depth, node.order))[:width]


def _nodes(spec: tuple[tuple[str, float, int, int], ...]) -> list[Node]:
    step = parse_step("Thought: -\nFinal Answer: -")
    return [Node(node_id, None, depth, order, "", step, score=score) for node_id, score, depth, order in spec]


@dataclass(frozen=True)
class _Kept:
    """What a beam step did with one input: the ids it kept, or what is wrong with what it returned."""

    ids: list[str] | None
    problem: str | None = None

    def __repr__(self) -> str:  # as a failure quotes it
        return repr(self.problem or self.ids)


def _beam(exercise: str, keep_best: Callable[[list[Node], int], list[Node]]) -> Callable[..., _Kept]:
    """`keep_best` as the check calls it: on nodes built from plain data, returning the ids it kept. A list (or a
    node) changed in place fails at once: the spec says to leave it as it was, whatever the ids."""

    def kept(spec: tuple, width: int) -> _Kept:
        nodes = _nodes(spec)
        given = list(nodes)
        before = [_state(node) for node in nodes]  # every field: a node marked ("why") is changed too
        result = keep_best(given, width)
        if given != nodes or [_state(node) for node in nodes] != before:
            _fail(exercise, "the spec says: leave the list you are given as it was\nmy_keep_best(nodes, width) "
                            "changed it (the list's order, or a node in it): return a new list, nodes untouched. "
                            f"The input: {_show_beam((spec, width))}")
        if result is given:
            return _Kept(None, "it returned the list it was given: return a new list (sorted() makes one)")
        if not isinstance(result, list) or not all(isinstance(node, Node) for node in result):
            return _Kept(None, f"it returned {_brief(result, 40)}: return a list of the nodes themselves")
        if not all(any(node is one for one in nodes) for node in result):
            return _Kept(None, "it returned copies of the nodes: return a list of the nodes themselves, not copies")
        return _Kept([node.id for node in result])

    return kept


def _state(node: Node) -> tuple:
    """What a node holds, to tell whether an answer changed it: every field, and the names of its attributes (an
    attribute of the answer's own, `node.rank = 1`, is a change too)."""
    return dataclasses.astuple(node), sorted(vars(node))


def _node_id(rng: random.Random, depth: int, taken: set[str]) -> str:
    while True:  # ids as the search gives them ("2.1" is the first child of "2"), with numbers of two digits too
        node_id = ".".join(str(rng.randint(1, 12)) for _ in range(depth))
        if node_id not in taken:
            taken.add(node_id)
            return node_id


def _beam_input(rng: random.Random, scores: list[float], depths: list[int]) -> tuple:
    taken: set[str] = set()
    orders = rng.sample(range(25), len(scores))  # proposal order, up to two digits, not the list's order
    spec = [(_node_id(rng, depth, taken), score, depth, order) for score, depth, order in zip(scores, depths, orders)]
    rng.shuffle(spec)
    return tuple(spec)


def _best_first(rng: random.Random) -> Iterator[tuple]:
    yield from _lesson_beams(0, 3, 4)
    yield ((), rng.randint(1, 3))  # no nodes: nothing to keep
    for _ in range(12):
        count = rng.randint(1, 7)
        scores = [round(x, 2) for x in rng.sample([n / 100 for n in range(101)], count)]  # all different
        width = rng.randint(1, count + 2)  # more room than nodes too: at most `width`
        yield (_beam_input(rng, scores, [rng.randint(1, 4) for _ in scores]), width)
    yield ((("1", 0.0, 1, 0), ("2", 0.5, 1, 1)), 2)  # a score of 0.0 is kept while there is room
    yield ((("1.1", 0.804, 2, 0), ("2", 0.801, 1, 1)), 1)  # scores as they are, not rounded: no tie here


def _ties_by_depth(rng: random.Random) -> Iterator[tuple]:
    yield from _lesson_beams(1)
    for _ in range(10):  # equal scores at different depths; the deeper often proposed first
        score = rng.choice((0.5, 0.8, 0.95, 1.0))
        depths = rng.sample(range(1, 5), rng.randint(2, 3))
        others = [round(rng.uniform(0, 1), 2) for _ in range(rng.randint(0, 3))]
        scores = [score] * len(depths) + [s for s in others if s != score]
        spec = _beam_input(rng, scores, depths + [rng.randint(1, 4) for _ in scores[len(depths):]])
        yield (spec, rng.randint(1, len(spec)))


def _ties_by_order(rng: random.Random) -> Iterator[tuple]:
    yield from _lesson_beams(2)
    for _ in range(10):  # equal scores at one depth: the one proposed first (its order: 9 before 12)
        score, depth = rng.choice((0.3, 0.7, 0.8, 1.0)), rng.randint(1, 4)
        count = rng.randint(2, 4)
        spec = list(_beam_input(rng, [score] * count, [depth] * count))
        spec += [(f"{n + 13}", round(rng.uniform(0, 1), 2), 1, 30 + n) for n in range(rng.randint(0, 2))]
        rng.shuffle(spec)
        yield (tuple(spec), rng.randint(1, len(spec)))


def _left_as_given(rng: random.Random) -> Iterator[tuple]:
    for _ in range(4):  # worst first, so a sort in place would show
        count = rng.randint(2, 6)
        spec = sorted(_beam_input(rng, [round(rng.uniform(0, 1), 2) for _ in range(count)],
                                  [rng.randint(1, 3) for _ in range(count)]), key=lambda node: node[1])
        yield (tuple(spec), rng.randint(1, count))


def _no_room(rng: random.Random) -> Iterator[tuple]:
    # width 0: at most 0 nodes (a loop that appends before it compares with `width` keeps one)
    yield ((("1", 0.4, 1, 0), ("2", 0.9, 1, 1), ("3", 0.7, 1, 2)), 0)
    yield ((("1", 0.2, 1, 0),), 0)


def _beam_hint(args: tuple, expected: _Kept, got: _Kept) -> str | None:
    if got.problem is not None or got.ids is None:
        return None  # the shape's own message says it
    scores = {node_id: score for node_id, score, _, _ in args[0]}
    ids, want = got.ids, expected.ids or []
    if len(ids) > len(want):
        return "Keep at most `width` nodes."
    if len(ids) < len(want) and ids == want[:len(ids)]:
        return (f"It kept {len(ids)} node{'s' * (len(ids) != 1)} where there was room for {len(want)}: keep "
                "min(width, len(nodes)); a low score or a tie is no reason to drop one.")
    got_scores = [scores.get(one) for one in ids]
    if len(want) == len(args[0]) and ids == [node_id for node_id, _, _, _ in args[0]] and \
            got_scores != sorted(got_scores, reverse=True):
        return "Sort by score, highest first, even when every node fits."
    if got_scores == [scores[one] for one in want]:
        return "Best first; on a tie, the smaller depth, then the smaller order (a number: 9 before 12)."
    rounded = [node_id for node_id, *_ in sorted(args[0], key=lambda node: (-round(node[1], 2), node[2], node[3]))]
    if ids == rounded[:len(want)]:
        return "Compare the scores as they are, not rounded: two scores that round alike are no tie."
    return "Sort by score, highest first, before you cut to `width`."


BEAM_RULES = (
    Rule("return a new list of at most `width` nodes, the highest score first", _best_first, _beam_hint),
    Rule("on equal scores the shallower node comes first (it commits sooner)", _ties_by_depth, _beam_hint),
    Rule("then the one proposed first (the smaller `order`, not the list's order or the id)", _ties_by_order, _beam_hint),
    Rule("leave the list you are given as it was", _left_as_given, _beam_hint),
    Rule("at most `width` nodes: with width 0, none", _no_room, _beam_hint),
)


def _show_beam(args: tuple) -> str:
    spec, width = args
    nodes = ", ".join(f"{node_id}:{score}/d{depth}/o{order}" for node_id, score, depth, order in spec)
    return f"width {width}, nodes (id:score/depth/order) [{nodes}]"


@grades("Exercise 2", spec=Spec(BEAM_RULES))
def check_keep_best(my_keep_best: Callable[[list[Node], int], list[Node]] | None) -> None:
    """22, exercise 2: the `width` best nodes, best first; ties to the shallower, then to the one proposed first."""
    exercise = "Exercise 2"
    if my_keep_best is None:
        return _not_attempted(exercise, "Write def my_keep_best(nodes, width) in the cell above.")
    if not callable(my_keep_best):
        _fail(exercise, f"my_keep_best should be a function, got {type(my_keep_best).__name__}")
    tried = agree_on(exercise, "check_keep_best", BEAM_RULES, _beam(exercise, my_keep_best),
                     _beam(exercise, _reference_keep_best), shape=lambda kept: kept.problem,
                     read=lambda kept: kept.ids, call="my_keep_best(nodes, width)", show=_show_beam)
    return _passed(exercise, f"{tried} generated beams kept: best first, ties to the shallower node, then to the one "
                             "the model proposed first, and the list given left as it was.")
