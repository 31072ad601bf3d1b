"""Lesson 22: a tree of thoughts. Where the loop would commit to one Thought, it looks at several first.

    propose  one call: the conversation, then "Propose k different next steps"  ->  up to k candidates
    score    one call: "Score each candidate"  ->  a model score per candidate, 0..1; and the rule you write
    keep     the `beam` best (`keep_best`); each kept candidate whose tool is read-only runs that tool on a copy
             of the conversation, and the steps after it are proposed and scored in turn, down to `depth`
    commit   the first step of the path to the best node found is the reply the loop reads this round

`TreeSearch` is a send part (loop_parts.py), for the text protocol:
`ReActAgent(llm, tools, parts=[TreeSearch(k=3, beam=2, depth=2, rule=shop_rule, budget=TreeBudget(...))])`.

What it promises:

- Exploring never runs a tool that changes something. A tool runs on a branch the search is only exploring when
  the tool says `read_only = True` (tools.Tool: in its class, or lesson 07's `@tool(read_only=True)`; the shop's four
  look-ups and lesson 15's getWeather do, applyRefund does not) and the agent's confirmation gate does not guard it.
  Any other tool ends its branch: it runs only when its branch is chosen, through the loop's act part, so lesson 15's
  gate still asks a person first.
- The budget (`TreeBudget`: model calls and tokens) covers every call the searches make in one run. Before each
  call the search checks that it fits: one more call, and the prompt's tokens (counted by the classroom model's
  rule, which is what its `usage` reports) plus the reply's cap (`max_tokens`). What does not fit is not sent (a
  TreeNote says so); a round whose search cannot start is one plain call, the greedy step, as in lesson 06.
  After each call the search pays what the reply's `usage` says it cost; a reply whose usage is missing or zero
  (a model that does not count, or says 0) pays what was sent and received, counted by that same rule, so a
  model that reports nothing cannot search for free. On another model the token limit holds to within the
  difference between its tokenizer and that rule.
- Every request of the search goes out as the loop's own requests do: the run's conversation with the branch's steps
  (none at the root) and the search's prompt after it, built by the agent's request part (`branch_request`). Under
  lesson 25's fence a looked-ahead Observation is fenced; under lesson 13's budget each request is fitted, and one
  that cannot fit is a TreeNote, not the end of the run (with no candidate, the loop's greedy step).
- A reply the search cannot read is a TreeNote in the trace, never an exception: no readable candidate means the
  greedy step; no readable score means the rule alone ranks.
- The round's own LlmCall holds the chosen candidate's text with no usage: no request was made for it. The
  requests the search made are the LlmCall events before it, and PathChosen says what they cost.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from tinyagent.editable_trace import PERSON
from tinyagent.errors import TinyAgentError
from tinyagent.events import Event, LlmCall, ToolCall, event_kind
from tinyagent.llm_client import ChatResult
from tinyagent.loop_parts import cut_observation
from tinyagent.number_checks import ascii_number, check_whole
from tinyagent.parser import ParsedStep
from tinyagent.protocols.token_count import classroom_counter
from tinyagent.toolkit.confirmation import gate_of
from tinyagent.trace import Trace

# What a printed trace says of a search.
TREE_LABELS = {
    "en": {"candidate": "[Candidate {node}] {step}  (model {model}, rule {rule} -> {score})",
           "explored": "[Explored {node}] {tool} ran: {text}", "not_explored": "[Not explored {node}] {detail}",
           "note": "[Tree: {stage}] {detail}",
           "chosen": "[Chosen] path {path}; this round takes {committed} ({calls} calls, {tokens} tokens spent)"},
    "zh": {"candidate": "[候选 {node}] {step}（模型 {model}，规则 {rule} -> {score}）",
           "explored": "[探索 {node}] 运行了 {tool}：{text}", "not_explored": "[未探索 {node}] {detail}",
           "note": "[树：{stage}] {detail}",
           "chosen": "[选定] 路径 {path}；这一圈执行 {committed}（已花 {calls} 次调用、{tokens} 个 token）"},
}


@event_kind
class ThoughtCandidate(Event):
    """Lesson 22 (tree_search.py): one candidate next step, scored. `node` is its place in the tree ("2": the second
    candidate at the root; "2.1": the first proposed after it), `parent` the node it follows ("" at the root),
    `depth` 1 at the root. `model_score` and `rule_score` are in 0..1, None when that score could not be had (a
    TreeNote says why) or, for `rule_score`, when the search has no rule; `score` is what the search ranks by;
    `why` is the model's reason for its score."""

    kind: ClassVar[str] = "thought_candidate"
    node: str = ""
    parent: str = ""
    depth: int = 1
    thought: str = ""
    tool_name: str | None = None
    tool_input: str | None = None
    final_answer: str | None = None
    model_score: float | None = None
    rule_score: float | None = None
    score: float = 0.0
    why: str = ""

    def lines(self, lang: str, usage: bool = False, round: list[Event] = ()) -> list[str]:
        what = f"{self.tool_name}({self.tool_input or ''})" if self.tool_name else f"Final Answer: {self.final_answer}"
        return [TREE_LABELS[lang]["candidate"].format(node=self.node, step=what, model=_num(self.model_score),
                                                      rule=_num(self.rule_score), score=f"{self.score:.2f}")]


@event_kind
class BranchExplored(Event):
    """Lesson 22: a kept candidate looked ahead. `ran` True when its tool ran while exploring (a read-only tool)
    and `observation` is what it said; False when it did not run, and `detail` says why (a tool that changes
    something runs only on the chosen path)."""

    kind: ClassVar[str] = "branch_explored"
    node: str = ""
    tool: str = ""
    ran: bool = False
    observation: str = ""
    error: bool = False
    detail: str = ""

    def lines(self, lang: str, usage: bool = False, round: list[Event] = ()) -> list[str]:
        if self.ran:
            return [TREE_LABELS[lang]["explored"].format(node=self.node, tool=self.tool, text=self.observation)]
        return [TREE_LABELS[lang]["not_explored"].format(node=self.node, detail=self.detail)]


@event_kind
class TreeNote(Event):
    """Lesson 22: what the search could not do at `node`. stage "propose" (a proposal with no heading, or one of
    its candidates left out: no step, a repeat, or cut at max_tokens), "score" (no readable score for one or more
    candidates), "rule" (the scoring rule raised or gave no number in 0..1), "budget" (the next call would not fit
    the budget, or a looked-ahead branch the agent's context budget)."""

    kind: ClassVar[str] = "tree_note"
    node: str = ""
    stage: str = ""
    detail: str = ""

    def lines(self, lang: str, usage: bool = False, round: list[Event] = ()) -> list[str]:
        return [TREE_LABELS[lang]["note"].format(stage=self.stage, detail=self.detail)]


@event_kind
class PathChosen(Event):
    """Lesson 22: the search's decision. `path` runs from the root to the best node found; `committed` (its first
    node) is the step the loop takes now, with `score`. `calls` and `tokens` are what the run's searches have spent
    so far, `budget_calls` and `budget_tokens` their limits (None: no limit)."""

    kind: ClassVar[str] = "path_chosen"
    path: tuple[str, ...] = ()
    committed: str = ""
    score: float = 0.0
    calls: int = 0
    tokens: int = 0
    budget_calls: int | None = None
    budget_tokens: int | None = None
    reason: str = ""

    def lines(self, lang: str, usage: bool = False, round: list[Event] = ()) -> list[str]:
        return [TREE_LABELS[lang]["chosen"].format(path=" -> ".join(self.path), committed=self.committed,
                                                   calls=self.calls, tokens=self.tokens)]


TREE_EVENTS = (ThoughtCandidate, BranchExplored, TreeNote, PathChosen)  # the kinds of event a search yields

__all__ = [
    "PROPOSE_PROMPT",
    "SCORE_PROMPT",
    "Candidate",
    "Node",
    "TreeBudget",
    "TreeSearch",
    "keep_best",
    "read_candidates",
    "read_scores",
    "requests_made",
    "search_cost",
    "shop_rule",
    "tokens_spent",
    "tree_mermaid",
    "tree_text",
]

# The classroom model recognises both calls by these phrases (classroom/tree_of_thoughts.py).
PROPOSE_PROMPT = {
    "en": ("Propose {k} different next steps for the assistant above, each a real alternative. Write each in the "
           "conversation's format, under its own heading:\nCandidate 1:\nThought: ...\nAction: <a tool>\n"
           "Action Input: <its input>\n(or Thought: ... and then Final Answer: ...)\nWrite no Observation."),
    "zh": ("为上面的助手提出 {k} 个不同的下一步，每个都是真正不同的做法。每个按对话的格式写，放在自己的标题下：\n候选 1：\n"
           "Thought: ...\nAction: <工具>\nAction Input: <输入>\n（或者 Thought: ... 然后 Final Answer: ...）\n不要写 Observation。"),
}
SCORE_PROMPT = {
    "en": ("Score each candidate next step below for the assistant above: how likely it is to lead to a correct and "
           "safe answer for the customer, from 0 (wrong or harmful) to 10 (clearly right). Reply with one line per "
           "candidate:\nCandidate N: <score>/10 - <why>\n\n{listing}"),
    "zh": ("给每个候选步骤打分：它有多大可能为顾客带来正确、安全的答复，0 分（错误或有害）到 10 分（显然正确）。每个候选一行：\n"
           "候选 N：<分数>/10 - <理由>\n\n{listing}"),
}
HEADING = {"en": "Candidate {n}:", "zh": "候选 {n}："}
CHOSEN = "tree of thoughts: candidate "  # the `model` of a round's LlmCall that records the chosen candidate
TOKENS_PER_CANDIDATE = 160  # the cap on a proposal's reply, per candidate asked for
TOKENS_PER_SCORE = 40  # the cap on a score reply, per candidate scored

# Possessive runs (*+): a run of spaces is never split two ways between neighbouring [ \t]*, which made a reply
# with 16,000 spaces after a score take 23 s.
_HEADER = re.compile(r"^[ \t]*+[*#>]*+[ \t]*+(?:candidate|候选)[ \t]*+(\d+)[ \t]*+[*]*+[ \t]*+[:：.)][ \t]*+[*]*+[ \t]*+",
                     re.IGNORECASE | re.MULTILINE)
_SCORE_LINE = re.compile(r"^[ \t]*+[*#>-]*+[ \t]*+(?:candidate|候选)[ \t]*+(\d+)[ \t]*+[*]*+[ \t]*+[:：][ \t]*+[*]*+[ \t]*+"
                         r"(\d+(?:\.\d+)?)[ \t]*+(?:/[ \t]*+10|分)?[*]*+[ \t]*+(?:[-–—:：,，][ \t]*+(.*))?$",
                         re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True)
class TreeBudget:
    """What the searches may spend in one run: `calls` model calls and `tokens` tokens (prompt + reply), None = no
    limit. Every proposal and every score counts; the plain calls of the rounds after the budget ran out are the
    loop's own, as in lesson 06 (its step cap and lesson 10's stop rules bound them)."""

    calls: int | None = None
    tokens: int | None = None

    def __post_init__(self) -> None:
        for name, value in (("calls", self.calls), ("tokens", self.tokens)):
            if value is not None:
                check_whole(name, value, also="or None")


@dataclass(frozen=True)
class Candidate:
    """One candidate step as a scoring rule sees it.

    thought, tool_name, tool_input, final_answer: the step (a final answer has no tool)
    read_only: True when the registry's tool says it changes nothing (`Tool.read_only`)
    history:   the calls already asked for on this branch, oldest first, as (tool, input): the run's own
               (`committed_calls`: one a gate refused is there too), then the ones this branch made while exploring
    lang:      the run's language
    """

    thought: str
    tool_name: str | None
    tool_input: str | None
    final_answer: str | None
    read_only: bool
    history: tuple[tuple[str, str], ...] = ()
    lang: str = "en"


@dataclass
class Node:
    """A candidate in the tree: its place (`id`, `parent`, `depth`, `order` among all the search's nodes), what
    it says (`text`, `parsed`), the calls on its branch before it (`history`), the messages its branch added to the
    run's conversation (`steps`: none at the root; `branch_request` builds what is sent from them), and its scores."""

    id: str
    parent: Node | None
    depth: int
    order: int
    text: str
    parsed: ParsedStep
    history: tuple[tuple[str, str], ...] = ()
    steps: list[dict] = field(repr=False, default_factory=list)
    model_score: float | None = None
    rule_score: float | None = None
    score: float = 0.0
    why: str = ""

    @property
    def path(self) -> tuple[str, ...]:
        """The ids from the root's candidate down to this one."""
        return (*self.parent.path, self.id) if self.parent is not None else (self.id,)


def keep_best(nodes: Iterable[Node], width: int) -> list[Node]:
    """The `width` best nodes, best first: highest score; on a tie the shallower (it commits sooner), then the one
    proposed first (the model's own first choice)."""
    return sorted(nodes, key=lambda node: (-node.score, node.depth, node.order))[:width]


def shop_rule(candidate: Candidate) -> float:
    """The shop's scoring rule (lesson 22's first exercise asks for it): 0.0 for a tool that changes something
    before queryOrder has run on the branch; 0.2 for a call the branch already made (same tool, same input);
    1.0 for anything else."""
    looked_up = any(tool == "queryOrder" for tool, _ in candidate.history)
    if candidate.tool_name is not None and not candidate.read_only and not looked_up:
        return 0.0
    if candidate.tool_name is not None and (candidate.tool_name, candidate.tool_input or "") in candidate.history:
        return 0.2
    return 1.0


def read_candidates(text: str, parse: Callable[[str], ParsedStep], cut: bool = False
                    ) -> tuple[list[tuple[str, ParsedStep]], list[str]]:
    """The candidates of a proposal reply, each as (its text, what `parse` reads in it), in order, and what was
    wrong with the rest: a block that is no step, or one that repeats an earlier candidate. `cut`: the reply
    stopped at max_tokens, so its last block may end mid-input; it is dropped, never run half read."""
    marks = list(_HEADER.finditer(text or ""))
    found: list[tuple[str, ParsedStep]] = []
    problems: list[str] = []
    if not marks:
        return [], ["the reply has no 'Candidate N:' heading"]
    for mark, after in zip(marks, [*marks[1:], None]):
        block = text[mark.end(): after.start() if after else len(text)].strip()
        parsed = parse(block)
        if cut and after is None:
            problems.append(f"candidate {mark.group(1)} is dropped: the reply was cut at max_tokens, so it may "
                            "stop mid-input")
        elif parsed.action is None and parsed.final_answer is None:
            problems.append(f"candidate {mark.group(1)} is neither an Action nor a Final Answer")
        elif any(_same_step(parsed, other) for _, other in found):
            problems.append(f"candidate {mark.group(1)} repeats an earlier one")
        else:
            found.append((block, parsed))
    return found, problems


def read_scores(text: str, count: int) -> dict[int, tuple[float, str]]:
    """The scores of a score reply, by candidate number (1 to `count`): (score in 0..1, the reason given). A
    score above 10 counts as 10; a number outside 1..count is ignored."""
    scores: dict[int, tuple[float, str]] = {}
    for match in _SCORE_LINE.finditer(text or ""):
        # ascii_number, not int(): a candidate "number" of 5,000 digits made int() raise out of the run
        number, value = ascii_number(match.group(1)), float(match.group(2))
        if number is not None and 1 <= number <= count and number not in scores and math.isfinite(value):
            scores[number] = (min(value, 10.0) / 10.0, (match.group(3) or "").strip())
    return scores


def _same_step(a: ParsedStep, b: ParsedStep) -> bool:
    if a.action is not None and b.action is not None:
        return (a.action.tool_name, a.action.tool_input.strip()) == (b.action.tool_name, b.action.tool_input.strip())
    return a.action is None and b.action is None and (a.final_answer or "").strip() == (b.final_answer or "").strip()


class TreeSearch:
    """A send part that searches before it commits (see the module's docstring).

    k:      candidates asked for at each node
    beam:   how many nodes are kept at each depth (1: always the best one only)
    depth:  how many steps ahead a search looks (1: score the candidates, no look-ahead)
    rule:   your scoring rule, `rule(Candidate) -> float in 0..1`, or None; a node's score is the mean of the
            model's score and the rule's (either alone when the other could not be had)
    budget: a TreeBudget for the whole run
    """

    slot: ClassVar[str] = "send"
    protocol: ClassVar[str] = "text"  # its candidates are Thought / Action lines, read by the agent's line scanner

    def __init__(self, k: int = 3, beam: int = 2, depth: int = 2, rule: Callable[[Candidate], float] | None = None,
                 budget: TreeBudget | None = None):
        for name, value in (("k", k), ("beam", beam), ("depth", depth)):
            check_whole(name, value)
        if rule is not None and not callable(rule):
            raise TypeError(f"rule must be a function rule(candidate) -> float, got {type(rule).__name__}")
        self.k, self.beam, self.depth, self.rule = k, beam, depth, rule
        self.budget = budget or TreeBudget()
        self.calls = self.tokens = 0  # what this run has spent
        self._count = classroom_counter().chat

    def fresh(self) -> TreeSearch:
        return TreeSearch(self.k, self.beam, self.depth, self.rule, self.budget)

    def __repr__(self) -> str:
        rule = getattr(self.rule, "__name__", repr(self.rule)) if self.rule else None
        return (f"TreeSearch(k={self.k}, beam={self.beam}, depth={self.depth}, rule={rule}, "
                f"budget={self.budget})")

    # -- the send part ----------------------------------------------------------------------------------------
    def __call__(self, run: Any, step: int, messages: list[dict], **options: Any) -> Generator[Event, None, ChatResult]:
        chosen = yield from self._search(run, step, options)
        if chosen is not None:
            nothing = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}  # no request was made for it
            return ChatResult(chosen.text, "stop", nothing, model=f"{CHOSEN}{chosen.id}")
        # No search (the budget is spent, or no candidate could be read): the greedy step, lesson 06's one call.
        return run.agent.llm.chat(messages, **options)

    # -- the search -------------------------------------------------------------------------------------------
    def _search(self, run: Any, step: int, options: dict) -> Generator[Event, None, Node | None]:
        self._order = 0
        history = committed_calls(run.trace)
        kept = yield from self._grow(run, step, None, history, options)
        if not kept:
            return None
        kept = keep_best(kept, self.beam)
        looked = set()  # the nodes already looked ahead at: a leaf kept for the next level is not run again
        for _ in range(2, self.depth + 1):
            children, leaves = [], []
            for node in kept:
                grown = []
                if node.id not in looked:
                    looked.add(node.id)
                    grown = yield from self._look_ahead(run, step, node, options)
                if grown:
                    children.extend(grown)
                else:
                    leaves.append(node)
            if not children:
                break
            kept = keep_best(leaves + children, self.beam)
        best = kept[0]
        committed = best
        while committed.parent is not None:
            committed = committed.parent
        yield PathChosen(step, best.path, committed.id, round(committed.score, 4), self.calls, self.tokens,
                         self.budget.calls, self.budget.tokens,
                         f"the best node found is {best.id} ({best.score:.2f}); its first step is {committed.id}")
        return committed

    def _grow(self, run: Any, step: int, parent: Node | None, history: tuple, options: dict,
              steps: Iterable[dict] = ()) -> Generator[Event, None, list[Node]]:
        """Propose and score the candidates after the run's conversation and then `steps` (the branch so far): the new
        nodes (none when there are none)."""
        where = parent.id if parent is not None else ""
        lang = run.lang
        asked = yield from self._asking(run, step, where, steps, PROPOSE_PROMPT[lang].format(k=self.k))
        if asked is None:
            return []
        reply = yield from self._call(run, step, where, asked, TOKENS_PER_CANDIDATE * self.k, options.get("stop"))
        if reply is None:
            return []
        found, problems = read_candidates(reply.text, run.agent.parse_text, cut=reply.finish_reason == "length")
        for problem in problems:
            yield TreeNote(step, where, "propose", problem)
        if not found:
            return []
        listing = "\n\n".join(f"{HEADING[lang].format(n=n)}\n{text}" for n, (text, _) in enumerate(found, 1))
        asked = yield from self._asking(run, step, where, steps, SCORE_PROMPT[lang].format(listing=listing))
        reply = None if asked is None else (yield from self._call(run, step, where, asked, TOKENS_PER_SCORE * len(found),
                                                                   None))
        scores = read_scores(reply.text, len(found)) if reply is not None else {}
        if reply is not None and len(scores) < len(found):
            missing = ", ".join(str(n) for n in range(1, len(found) + 1) if n not in scores)
            yield TreeNote(step, where, "score", f"no readable score for candidate(s) {missing}")
        nodes = []
        for n, (text, parsed) in enumerate(found, 1):
            node_id = f"{where}.{n}" if where else str(n)
            node = Node(node_id, parent, parent.depth + 1 if parent else 1, self._order, text, parsed, history,
                        list(steps))
            self._order += 1
            node.model_score, node.why = scores.get(n, (None, ""))
            node.rule_score, problem = self._rule_score(run, node)
            if problem:
                yield TreeNote(step, node_id, "rule", problem)
            known = [s for s in (node.model_score, node.rule_score) if s is not None]
            node.score = sum(known) / len(known) if known else 0.0
            action = parsed.action
            yield ThoughtCandidate(step, node_id, where, node.depth, parsed.thought,
                                   action.tool_name if action else None, action.tool_input if action else None,
                                   parsed.final_answer, node.model_score, node.rule_score, round(node.score, 4),
                                   node.why)
            nodes.append(node)
        return nodes

    def _look_ahead(self, run: Any, step: int, node: Node, options: dict) -> Generator[Event, None, list[Node]]:
        """Run a kept candidate's read-only tool on a copy of the conversation and grow the steps after it."""
        action = node.parsed.action
        if action is None:
            return []  # an answer: nothing comes after it
        if not explorable(run, action.tool_name):
            yield BranchExplored(step, node.id, action.tool_name, False, detail=(
                f"{action.tool_name} is not read-only (or a person must approve it): it runs only if this "
                "branch is chosen"))
            return []
        result = run.agent.tools.run(action)
        text, _ = cut_observation(result.text, run.agent.max_observation_chars)
        yield BranchExplored(step, node.id, action.tool_name, True, text, result.error)
        steps = [*node.steps, {"role": "assistant", "content": node.text},
                 {"role": "user", "content": f"Observation: {text}"}]
        history = (*node.history, (action.tool_name, action.tool_input))
        return (yield from self._grow(run, step, node, history, options, steps))

    def _rule_score(self, run: Any, node: Node) -> tuple[float | None, str]:
        if self.rule is None:
            return None, ""
        action = node.parsed.action
        candidate = Candidate(node.parsed.thought, action.tool_name if action else None,
                              action.tool_input if action else None, node.parsed.final_answer,
                              bool(action) and read_only(run, action.tool_name), node.history, run.lang)
        try:
            value = self.rule(candidate)
        except Exception as exc:  # noqa: BLE001 - a learner's rule that raises is a note, not a crash
            return None, f"the rule raised {type(exc).__name__}: {exc}"
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            return None, f"the rule returned {value!r}, not a number from 0 to 1"
        return float(value), ""

    # -- the budget -------------------------------------------------------------------------------------------
    def _asking(self, run: Any, step: int, where: str, steps: Iterable[dict], prompt: str
                ) -> Generator[Event, None, list[dict] | None]:
        """The search's own request: the run's conversation, the branch's `steps` and the search's `prompt` after
        them, built by the agent's request part as the loop's requests are (`branch_request`): a context budget fits
        the prompt too, a fence fences the branch's Observations. None, with a TreeNote, when it cannot be built."""
        try:
            return branch_request(run, [*steps, {"role": "user", "content": prompt}])
        except TinyAgentError as exc:  # too long for a context budget: the search goes on without this call
            yield TreeNote(step, where, "budget", f"the search's request could not be built: {exc}")
            return None

    def _call(self, run: Any, step: int, where: str, messages: list[dict], cap: int, stop: Any
              ) -> Generator[Event, None, ChatResult | None]:
        if not self._fits(messages, cap):
            yield TreeNote(step, where, "budget", f"the next call does not fit the budget ({self._spent_line()})")
            return None
        reply = run.agent.llm.chat(messages, stop=stop, max_tokens=cap)
        self._pay(messages, reply)
        yield LlmCall.of_reply(step, messages, reply)
        return reply

    def _fits(self, messages: list[dict], cap: int) -> bool:
        calls, tokens = self.budget.calls, self.budget.tokens
        if calls is not None and self.calls + 1 > calls:
            return False
        return tokens is None or self.tokens + self._count(messages) + cap <= tokens

    def _pay(self, messages: list[dict], reply: ChatResult) -> None:
        self.calls += 1
        self.tokens += tokens_spent(messages, reply.text, reply.usage)

    def _spent_line(self) -> str:
        calls = f"{self.calls} of {self.budget.calls}" if self.budget.calls is not None else str(self.calls)
        tokens = f"{self.tokens} of {self.budget.tokens}" if self.budget.tokens is not None else str(self.tokens)
        return f"{calls} calls, {tokens} tokens spent"


def branch_request(run: Any, steps: list[dict]) -> list[dict]:
    """The messages the run's request part sends for its conversation with a branch's `steps` after it: a branch goes
    out as the loop's own requests do, so a part that changes what is sent (lesson 25's fence around each
    Observation, lesson 13's budget) changes a looked-ahead request too."""
    branch = copy.copy(run)  # the same run, seen with the branch's conversation
    branch.messages = [*run.messages, *steps]
    messages, _ = run.parts.request.build(branch)
    return [dict(m) for m in messages]


def read_only(run: Any, tool_name: str) -> bool:
    """True when the registry's tool says it changes nothing (`Tool.read_only`)."""
    tool = run.agent.tools.get(tool_name)
    return tool is not None and tool.read_only is True


def explorable(run: Any, tool_name: str) -> bool:
    """True when a branch that is only being explored may run this tool: the registry's tool says it is
    read-only, and the agent's confirmation gate (lesson 15) does not guard it."""
    return read_only(run, tool_name) and not gated(run, tool_name)


def gated(run: Any, tool_name: str) -> bool:
    """True when the run's confirmation gate (lesson 15) guards the tool."""
    gate = gate_of(run)
    return gate is not None and gate.guards(tool_name, run.agent.tools)


def tokens_spent(messages: list[dict], text: str, usage: Any) -> int:
    """What one call cost in tokens: the `total_tokens` its reply's usage reports; when the usage is missing, zero
    or not a number, what was sent (`messages`) and received (`text`), counted by the classroom model's rule.
    A request is never free: it always sends at least the reply's 3 tokens of overhead."""
    reported = usage.get("total_tokens") if isinstance(usage, dict) else None
    if isinstance(reported, (int, float)) and not isinstance(reported, bool) and math.isfinite(reported) \
            and reported >= 1:
        return int(reported)
    counter = classroom_counter()
    return counter.chat(list(messages)) + counter.text(text or "")


def requests_made(trace: Trace) -> tuple[int, int]:
    """(model calls, tokens) a run cost: every LlmCall but the records of chosen candidates and the replies a person
    wrote (editable_trace.py: their model is "person"; no model was called), and their usage (counted from the
    call when the usage is missing or zero, as the budget does: `tokens_spent`)."""
    calls = [call for call in trace.of_type(LlmCall) if not call.model.startswith(CHOSEN) and call.model != PERSON]
    return len(calls), sum(tokens_spent(call.messages, call.text, call.usage) for call in calls)


def search_cost(trace: Trace) -> tuple[int, int]:
    """(model calls, tokens) the searches of a run cost: the LlmCalls whose last message is a proposal or a score
    prompt, and their usage (or their count, as `tokens_spent` says). What the budget bounds."""
    heads = [prompt[lang].split("{")[0] for prompt in (PROPOSE_PROMPT, SCORE_PROMPT) for lang in prompt]
    calls = [call for call in trace.of_type(LlmCall)
             if call.messages and str(call.messages[-1].get("content", "")).startswith(tuple(heads))]
    return len(calls), sum(tokens_spent(call.messages, call.text, call.usage) for call in calls)


def committed_calls(trace: Trace) -> tuple[tuple[str, str], ...]:
    """The calls the run has asked for so far, as (tool, input): every ToolCall of its trace, the ones a gate then
    refused included (asking again after a person's no is a repeat too). Never a call only explored."""
    return tuple((call.name, call.input) for call in trace.of_type(ToolCall))


# -- drawing the tree ------------------------------------------------------------------------------------------
def tree_text(trace: Trace, step: int | None = None) -> str:
    """Each search of a trace (or only round `step`'s) as an indented tree: every candidate with its scores,
    what looking ahead did, and the path chosen (marked *)."""
    lines: list[str] = []
    for round_no, nodes, explored, notes, chosen in _searches(trace, step):
        lines.append(f"Round {round_no}: {chosen.calls} calls, {chosen.tokens} tokens spent so far"
                     if chosen else f"Round {round_no}: no decision")
        for node in nodes.values():
            mark = "*" if chosen and node.node in chosen.path else " "
            indent = "    " * (node.depth - 1)
            scores = f"model {_num(node.model_score)}, rule {_num(node.rule_score)} -> {node.score:.2f}"
            lines.append(f"  {indent}{mark} {node.node} {_step_label(node)}  [{scores}]")
            if node.node in explored:
                lines.append(f"  {indent}    {explored[node.node]}")
        lines.extend(f"  ! {note.stage} {note.node or 'root'}: {note.detail}" for note in notes)
        if chosen:
            lines.append(f"  chosen: {' -> '.join(chosen.path)}; the loop takes {chosen.committed}")
    return "\n".join(lines)


def tree_mermaid(trace: Trace, step: int | None = None) -> str:
    """Each search of a trace (or only round `step`'s) as a Mermaid flowchart: the candidates with their scores,
    the chosen path in bold, and a dotted arrow from the step each round took to the next round. Every text from
    the trace goes in through `_mermaid_id` or `_mermaid_label`: a tool name is the model's writing, and a trace
    loaded from a file may hold anything."""
    lines = ["flowchart TD"]
    taken = None  # the node of the previous round's step, drawn into the next round
    for round_no, nodes, _, notes, chosen in _searches(trace, step):
        root = f"r{round_no}"
        stages = sorted({note.stage for note in notes})
        label = f"round {round_no}" if nodes else f"round {round_no}: no search ({', '.join(stages) or 'none'})"
        lines.append(f'  {root}(["{_mermaid_label(label)}"])')
        if taken:
            lines.append(f"  {taken} -.-> {root}")
        for node in nodes.values():
            key = _mermaid_id(root, node.node)
            text = _mermaid_label(f"{node.node} {_step_label(node, 40)}")
            lines.append(f'  {key}["{text}<br/>{node.score:.2f}"]')
            parent = _mermaid_id(root, node.parent) if node.parent else root
            arrow = "==>" if chosen and node.node in chosen.path else "-->"
            lines.append(f"  {parent} {arrow} {key}")
        if chosen:
            lines.extend(f"  style {_mermaid_id(root, n)} stroke-width:3px" for n in chosen.path)
        taken = _mermaid_id(root, chosen.committed) if chosen else root
    return "\n".join(lines)


def _mermaid_id(root: str, node: str) -> str:
    """A node's Mermaid id: its round, then its id ("1.2") with every character but letters and digits made _."""
    return f"{root}_" + re.sub(r"[^0-9A-Za-z]", "_", node)


def _mermaid_label(text: str) -> str:
    """Text for inside a quoted Mermaid label, on one line (a line break could end the Markdown code block around
    the chart), with no quote to end the label and no tag or Markdown string to start: " as ', ` as ', < and > as
    Mermaid's entity codes."""
    text = " ".join(text.split()).replace('"', "'").replace("`", "'")
    return text.replace("<", "#60;").replace(">", "#62;")


def _searches(trace: Trace, step: int | None):
    by_round: dict[int, tuple[dict, dict, list, list]] = {}
    for event in trace:
        if step is not None and event.step != step:
            continue
        if isinstance(event, TREE_EVENTS):
            nodes, explored, notes, chosen = by_round.setdefault(event.step, ({}, {}, [], []))
            if isinstance(event, ThoughtCandidate):
                nodes[event.node] = event
            elif isinstance(event, BranchExplored):
                explored[event.node] = (f"ran {event.tool}: {_short(event.observation, 70)}" if event.ran
                                        else f"not run: {event.detail}")
            elif isinstance(event, TreeNote):
                notes.append(event)
            else:
                chosen.append(event)
    for round_no, (nodes, explored, notes, chosen) in sorted(by_round.items()):
        ordered = dict(sorted(nodes.items(), key=lambda item: _tree_order(item[0])))
        yield round_no, ordered, explored, notes, (chosen[-1] if chosen else None)


def _tree_order(node: str) -> list[tuple[int, int | str]]:
    """A node id's place in the tree: "1.10" after "1.9", by the numbers its parts are; a part that is no number
    (a trace loaded from a file may hold any id: "²" or 5,000 digits, which int() refuses) after every number, by its
    text."""
    order = []
    for part in node.split("."):
        number = ascii_number(part)
        order.append((1, part) if number is None else (0, number))
    return order


def _step_label(node: ThoughtCandidate, width: int = 60) -> str:
    if node.tool_name is not None:
        return f"{node.tool_name}({_short(node.tool_input or '', width - len(node.tool_name))})"
    return f"Final Answer: {_short(node.final_answer or '', width)}"


def _short(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: max(width - 1, 1)] + "…"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"

