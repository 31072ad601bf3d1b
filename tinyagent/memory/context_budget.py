"""A budget in tokens for every request the agent sends (lesson 13).

    budget = ContextBudget(2000, tool_filter=ToolFilter(SHOP_TOOL_HINTS))
    agent = ReActAgent(llm, tools, parts=[BudgetedRequest(budget)])

Every request re-sends the whole conversation, so a long one grows by each turn's Thoughts and
Observations until it is slow, costly, and finally too long for the model. With a budget, the agent's live
message list stays whole (the trace and the next turn's history keep everything); the budget decides only
what is *sent*: `fit` turns the conversation into a request of at most `max_tokens` tokens.

Fitting, in this order; each step from step 1 on is taken only while the request is still over the budget,
oldest first, one message or turn at a time:

  0. tools: with a `tool_filter`, only the tools relevant to the request are offered (tool_filter.py), and
     the system prompt is rebuilt with that list (function calling: the `tools` field holds only them);
  1. fold the Observations of earlier turns into short summaries (observation_folding.py); one wrapped in a
     tag of its own (`<data ...>` on its first line, `</data>` on its last, as lesson 25's FencedData marks a
     tool's result) keeps the tag, and what is inside it is folded;
  2. shorten earlier turns to the customer's request and the answer (their Thoughts, Actions and
     Observations go);
  3. drop earlier turns;
  4. fold this turn's Observations, all but the latest;
  5. still over: `ContextBudgetError`, which says how big the smallest request is and of what. The agent
     ends the run with `Stopped("context_budget")`.

A turn begins at a user message that is a request, not a tool's result ("Observation: ..."). One that starts with
"Observation:" right after the model's Final Answer is a request too: no result is awaited there, so the customer
wrote it; after an answer without "Final Answer:" (the model's prose, a stopped run's polite answer) it is still
read as a result. The current turn begins at the question the run was started with, whatever it starts with, and a
turn's request is never folded. The system prompt, and any system message in the history (a summary,
instructions), are never folded or dropped.

Counting. One tokenizer: `token_count.token_counter()`, cl100k_base through quicktok (exact), or the
classroom model's rule where quicktok is not installed; `counter.name` says which. One rule for the chat
format, `request_tokens`: the counter's chat rule on each message (3 tokens a message, its role and `name`
(cl100k_base only: the classroom rule leaves them out), its content, and 3 that start the reply), plus the name and
arguments of each tool call a message carries, plus the JSON text of the request's `tools` (function calling).
Content given as a list of parts counts each text part on its own, as the chat rule does; content of any other
kind (a dict, a number) would be counted as nothing and sent, so it is refused with a ValueError. It is the rule
the classroom model counts its `usage` by, so with `classroom_counter()` the count equals its `prompt_tokens`. A
real provider counts with its own tokenizer: give the budget some room below the model's context window, and leave
the reply's `max_tokens` out of it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from tinyagent.errors import TinyAgentError
from tinyagent.memory.observation_folding import fold_observation
from tinyagent.memory.tool_filter import ToolFilter, ToolSelection
from tinyagent.number_checks import check_whole
from tinyagent.parser import parse_step
from tinyagent.protocols.token_count import TokenCounter, token_counter
from tinyagent.protocols.tool_rendering import function_specs
from tinyagent.registry import ToolRegistry

OBSERVATION_PREFIX = "Observation:"

__all__ = ["BudgetedRequest", "ContextBudget", "ContextBudgetError", "FittedRequest", "called_tools", "request_tokens"]


class ContextBudgetError(TinyAgentError):
    """Even the smallest request the conversation allows is over the context budget (the message says how big it
    is, and of what). The agent ends the run with Stopped("context_budget") and this polite answer: lesson 06's
    loop_parts.stopped_on_error reads both from any error that has them."""

    stop_reason: ClassVar[str] = "context_budget"
    answer: ClassVar[dict[str, str]] = {
        "en": "Sorry, this conversation has grown too long for me to follow. Please start a new one.",
        "zh": "抱歉，这段对话太长了，我已经跟不上了。请开始一段新的对话。",
    }


@dataclass(frozen=True)
class FittedRequest:
    """One request as the budget let it go out, and what it took.

    messages:     what is sent
    tool_specs:   the request's `tools` (function calling), else None
    offered:      the names of the tools offered, in the registry's order
    tokens:       `messages` and `tool_specs` counted by `request_tokens`
    whole_tokens: the same request without the budget: the whole conversation, every tool
    budget:       the budget's `max_tokens`
    folded:       folded Observations in `messages` (earlier turns and this one)
    shortened:    earlier turns cut to their request and answer
    dropped:      earlier turns left out
    selection:    the tool filter's verdict (scores, and why each tool is offered), or None
    """

    messages: list[dict]
    tool_specs: list[dict] | None
    offered: tuple[str, ...]
    tokens: int
    whole_tokens: int
    budget: int
    folded: int = 0
    shortened: int = 0
    dropped: int = 0
    selection: ToolSelection | None = None

    def summary(self) -> str:
        """One line: the size against the budget, and what was done to get there."""
        done = [f"{len(self.offered)} tools offered"] if self.offered else []
        for count, what in ((self.folded, "Observations folded"), (self.shortened, "turns shortened"),
                            (self.dropped, "turns dropped")):
            if count:
                done.append(f"{count} {what}")
        return f"{self.tokens} of {self.budget} tokens (whole: {self.whole_tokens})" + (
            "; " + ", ".join(done) if done else "")


class ContextBudget:
    """At most `max_tokens` tokens in any request (see the module's docstring for how a request is fitted).

    max_tokens:  the budget for the prompt: messages, tool calls and `tools`, counted by `counter`
    tool_filter: a `ToolFilter` to offer only the relevant tools; None offers every tool
    counter:     a `TokenCounter` (default: `token_counter()`, cl100k_base when quicktok is installed)
    """

    def __init__(self, max_tokens: int, *, tool_filter: ToolFilter | None = None, counter: TokenCounter | None = None):
        check_whole("max_tokens", max_tokens)
        self.max_tokens = max_tokens
        self.tool_filter = tool_filter
        self.counter = counter or token_counter()
        self._cost = _MessageCost(self.counter)

    def __repr__(self) -> str:
        return f"ContextBudget({self.max_tokens}, tool_filter={self.tool_filter!r}, counter={self.counter.name!r})"

    def count(self, messages: list[dict], tool_specs: list[dict] | None = None) -> int:
        """`request_tokens` with this budget's counter."""
        return self._cost.reply + sum(self._cost(m) for m in messages) + self._cost.tools(tool_specs)

    def fit(
        self,
        messages: list[dict],
        tools: ToolRegistry | None = None,
        *,
        system_prompt: Callable[[ToolRegistry], str] | None = None,
        tool_specs: Callable[[ToolRegistry], list[dict]] | None = None,
        request_index: int | None = None,
    ) -> FittedRequest:
        """The request to send for the conversation `messages` (left unchanged).

        tools:         the agent's registry (for the tool filter, and for `tool_specs`)
        system_prompt: builds the system prompt for a set of tools (text ReAct); messages[0] is replaced
                       by it. None when the prompt is the caller's own: it is sent as it is, with no filtering
        tool_specs:    builds the request's `tools` for a set of tools (function calling)
        request_index: where the current request is in `messages` (default: the last user request)
        Raises ContextBudgetError when even the smallest request is over the budget.
        """
        if not messages:
            raise ValueError("fit() needs the conversation: at least one message")
        if request_index is None:
            request_index = _last_request(messages)
        if not 0 <= request_index < len(messages):
            raise ValueError(f"request_index {request_index} is outside the {len(messages)} messages")
        cost = self._cost
        has_prompt = messages[0].get("role") in ("system", "developer") and request_index > 0
        head = [dict(messages[0])] if has_prompt else []
        earlier = _split_turns(messages[len(head) : request_index])
        current = [dict(m) for m in messages[request_index:]]
        request = _text(messages[request_index].get("content"))

        # 0. The tools: filtered when there is a filter and a prompt (or `tools`) to rebuild.
        filtering = self.tool_filter is not None and tools is not None and (system_prompt or tool_specs)
        selection = None
        offered = tuple(tools.names) if tools is not None else ()

        def render(names: tuple[str, ...]) -> tuple[list[dict], list[dict] | None]:
            subset = ToolRegistry([tools.get(n) for n in names]) if tools is not None else None
            new_head = head
            if head and system_prompt is not None and subset is not None and filtering:
                new_head = [{**head[0], "content": system_prompt(subset)}]
            specs = tool_specs(subset) if tool_specs is not None and subset is not None else None
            return new_head, specs

        whole_tokens = self.count(messages, render(offered)[1])  # what would go out without the budget
        if filtering:
            selection = self.tool_filter.select(request, tools, called_tools(messages, tools))
            offered = selection.offered
        head_now, specs = render(offered)

        state = _Fitting(head_now, earlier, current, specs, cost)
        state.fit(self.max_tokens)
        if state.tokens() > self.max_tokens:
            raise ContextBudgetError(state.too_big(self.max_tokens, self.counter.name))

        # Turns shortened or dropped took their Actions with them: a tool only they called need not stay.
        if filtering:
            called_now = called_tools(state.messages(), tools)
            narrower = self.tool_filter.select(request, tools, called_now)
            if set(narrower.offered) < set(offered):
                selection, offered = narrower, narrower.offered
                state.head, state.specs = render(offered)

        sent = state.messages()
        return FittedRequest(
            messages=sent, tool_specs=state.specs, offered=offered, tokens=self.count(sent, state.specs),
            whole_tokens=whole_tokens, budget=self.max_tokens, folded=state.folded, shortened=state.shortened,
            dropped=state.dropped, selection=selection,
        )


class BudgetedRequest:
    """What is sent in lesson 13: the request of the part it wraps (the whole conversation, or function calling's
    with `tools`), fitted to the budget. Mount it on any agent:

        ReActAgent(llm, tools, parts=[BudgetedRequest(ContextBudget(3000))])

    The run's message list stays whole; each fitted request is kept in `fits`, request by request (the run's own
    part: `run.parts.request.fits`). A request that cannot fit raises ContextBudgetError, which ends the run with
    Stopped("context_budget"). List it after the other request parts (lesson 25's fence:
    `parts=[FencedData(), BudgetedRequest(b)]`): it fits what they built; a request part listed after it would
    change the request once it was fitted (a fence adds characters the budget never counted), so the agent refuses
    one. The current turn starts at the run's question, found in what they built: they may add messages before it
    (lesson 23's WithExample adds an example exchange) and change messages in place, and leave the question as the
    customer wrote it. A part before it may offer fewer tools than the agent has (lesson 25's OfferOnly): the
    filter chooses among those (`offered_tools`)."""

    slot: ClassVar[str] = "request"
    outermost: ClassVar[bool] = True  # what it fitted goes out as it is: no request part may wrap it (loop_parts.py)

    def __init__(self, budget: ContextBudget, inner: Any = None):
        if not isinstance(budget, ContextBudget):
            raise TypeError(f"BudgetedRequest needs a ContextBudget, got {type(budget).__name__}")
        self.budget = budget
        self.inner = inner
        self.fits: list[FittedRequest] = []  # this run's requests (a fresh part for every run)

    def around(self, inner: Any) -> BudgetedRequest:
        return BudgetedRequest(self.budget, inner)

    def fresh(self) -> BudgetedRequest:
        return BudgetedRequest(self.budget, self.inner)

    def build(self, run: Any, closing: bool = False) -> tuple[list[dict], dict]:
        messages, options = self.inner.build(run, closing)
        # Found in what the wrapped part built: a part may have put messages before it (lesson 23's WithExample puts an
        # example exchange there).
        request_index = _question_index(messages, run.question)
        # Fewer tools are offered as the wrapped part offers tools: fewer `tools`, or a prompt rebuilt for them
        # (unless the prompt is the caller's own, or a part before this one narrowed its tool list already: lesson
        # 25's OfferOnly).
        if "tools" in options:
            rebuild = {"tool_specs": lambda tools: function_specs(tools, run.lang)}
        elif run.agent.system_prompt is None and run.agent.prompt_for(run.lang) in _text(messages[0].get("content")):
            rebuild = {"system_prompt": lambda tools: narrowed_prompt(run, messages, tools)}
        else:
            rebuild = {}
        fitted = self.budget.fit(messages, offered_tools(run, options), request_index=request_index, **rebuild)
        self.fits.append(fitted)
        if "tools" in options:
            options = {**options, "tools": fitted.tool_specs}
        return fitted.messages, options

    def __repr__(self) -> str:
        return f"BudgetedRequest({self.budget!r}, {self.inner!r})"


def offered_tools(run: Any, options: dict) -> ToolRegistry:
    """The tools the wrapped part offers, among which the filter chooses: a part before this one may offer fewer
    than the agent has (lesson 25's OfferOnly), and the filter must never add one back. In function calling they
    are the request's `tools`; a text prompt whose tool list another part narrowed is left as it was built, so the
    agent's are given."""
    if "tools" not in options:
        return run.agent.tools
    names = {spec.get("function", {}).get("name") for spec in options["tools"] or ()}
    return ToolRegistry([tool for tool in run.agent.tools if tool.name in names])


def narrowed_prompt(run: Any, messages: list[dict], tools: Any) -> str:
    """The system prompt of `messages` with its tool list narrowed to `tools`, where the list stands: a rule another
    part added to the prompt (lesson 25's FencedData) stays."""
    whole, built = run.agent.prompt_for(run.lang), str(messages[0].get("content") or "") if messages else ""
    prompt = run.agent.prompt_for(run.lang, tools)
    return built.replace(whole, prompt, 1) if whole in built else prompt


def _question_index(messages: list[dict], question: str) -> int:
    """Where the run's question is in `messages`: the last user message that is exactly it (the Observations after it
    are user messages too, in text ReAct)."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "user" and messages[i].get("content") == question:
            return i
    return len(messages) - 1


def request_tokens(messages: list[dict], tool_specs: list[dict] | None = None,
                   counter: TokenCounter | None = None) -> int:
    """The tokens of a request: the counter's chat rule on every message's role and text, each tool call's
    name and arguments, and the JSON text of `tool_specs` (see the module's docstring)."""
    counter = counter or token_counter()
    cost = _MessageCost(counter)
    return cost.reply + sum(cost(m) for m in messages) + cost.tools(tool_specs)


def called_tools(messages: list[dict], tools: ToolRegistry | None = None) -> list[str]:
    """The tools the conversation's assistant messages call (text Actions and native tool calls), in order
    of first call; with `tools`, only the ones it has."""
    names: dict[str, None] = {}
    for message in messages:
        if message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or []:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and isinstance(function.get("name"), str):
                names.setdefault(function["name"])
        content = message.get("content")
        if isinstance(content, str) and content:
            action = parse_step(content).action
            if action is not None and action.tool_name:
                names.setdefault(action.tool_name)
    return [n for n in names if tools is None or n in tools]


# -- the pieces ----------------------------------------------------------------------------------------


class _MessageCost:
    """Tokens of one message by `request_tokens`' rule, and of a request's `tools`."""

    def __init__(self, counter: TokenCounter):
        self.counter = counter
        self.reply = counter.chat([])  # the reply's start: a request of no messages costs only that

    def __call__(self, message: dict) -> int:
        # What the chat rule reads of a message: the role, the name, the content (a string, or parts, each counted
        # on its own as the rule does: "hello" and "world" are two tokens, "helloworld" one) and the tool calls
        # (their names and arguments, as a provider counts them). Counted as the request's JSON carries it: tool
        # calls kept in a tuple are a list there, and a value JSON cannot hold (an image's bytes, which no rule
        # counts) is its repr.
        content = _checked_content(message)
        counted = {"role": str(message.get("role") or ""), "content": "" if content is None else content,
                   "tool_calls": message.get("tool_calls") or None}
        if message.get("name"):
            counted["name"] = str(message["name"])
        as_sent = json.loads(json.dumps(counted, ensure_ascii=False, sort_keys=True, default=repr))
        return self.counter.chat([as_sent]) - self.reply

    def tools(self, specs: list[dict] | None) -> int:
        return self.counter.text(json.dumps(specs, ensure_ascii=False)) if specs else 0


def _checked_content(message: dict) -> str | list | None:
    """A message's content, when it is one a provider takes: a string, None, or a list of content parts (dicts;
    a text part's text a string). Anything else would be counted as nothing and sent: it is refused."""
    content = message.get("content")
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list) and all(
        isinstance(part, dict) and (part.get("type") != "text" or isinstance(part.get("text"), str))
        for part in content
    ):
        return content
    raise ValueError(
        f"a message with role {message.get('role')!r} has content the context budget cannot count: "
        f"{_preview(content)}; content must be a string, None or a list of parts like "
        '[{"type": "text", "text": "..."}]'
    )


def _preview(value: object, limit: int = 60) -> str:
    shown = repr(value)
    return f"{type(value).__name__} {shown[:limit]}{'...' if len(shown) > limit else ''}"


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts: [{"type": "text", "text": "..."}], a line each (words stay apart)
        return "\n".join(p["text"] for p in value if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _is_observation(message: dict) -> bool:
    if message.get("role") == "tool":
        return True
    return message.get("role") == "user" and _text(message.get("content")).lstrip().startswith(OBSERVATION_PREFIX)


def _is_request(message: dict, before: dict | None) -> bool:
    """A user message that starts a turn: not an Observation, or one written after the model's Final Answer (the
    customer's, who may begin with "Observation:" too: nothing is waiting for a tool's result there)."""
    return message.get("role") == "user" and (not _is_observation(message) or _is_final_answer(before))


def _is_final_answer(message: dict | None) -> bool:
    if message is None or message.get("role") != "assistant" or message.get("tool_calls"):
        return False
    step = parse_step(_text(message.get("content")))
    return step.final_answer is not None and step.action is None


def _last_request(messages: list[dict]) -> int:
    for index in range(len(messages) - 1, -1, -1):
        if _is_request(messages[index], messages[index - 1] if index else None):
            return index
    raise ValueError("the conversation has no user request to fit a request around")


@dataclass
class _Part:
    """A piece of the earlier conversation: a turn (a request and what followed it), or a pinned message
    (a system message in the history, never changed)."""

    messages: list[dict]
    pinned: bool = False
    shortened: bool = False


def _split_turns(messages: list[dict]) -> list[_Part]:
    parts: list[_Part] = []
    before = None
    for message in messages:
        message = dict(message)
        if message.get("role") in ("system", "developer"):
            parts.append(_Part([message], pinned=True))
        elif _is_request(message, before) or not parts or parts[-1].pinned:
            parts.append(_Part([message]))
        else:
            parts[-1].messages.append(message)
        before = message
    return parts


def _fold(message: dict) -> dict | None:
    """The message with its Observation folded, or None when folding would not shorten it."""
    content = _text(message.get("content"))
    if message.get("role") == "tool":
        head, body = "", content
    else:
        prefix, _, body = content.partition(OBSERVATION_PREFIX)
        head, body = f"{prefix}{OBSERVATION_PREFIX} ", body.strip()
    folded = _folded_body(body)
    return None if folded == body else {**message, "content": head + folded}


# A tool result wrapped in a tag of its own, the opening tag on the first line and the closing one on the last, as
# prompts often mark what is data (lesson 25's FencedData does): the tag says what the text is, so it stays whole,
# and the text inside is folded.
_WRAPPED = re.compile(r"(<([A-Za-z][\w-]*)[^<>\n]*>\n)(.*)(\n</\2>)", re.DOTALL)


def _folded_body(body: str) -> str:
    """An Observation's text folded; one wrapped in a tag keeps the tag, and what is inside it is folded (its JSON
    keeps its shape, and the tag still closes)."""
    wrapped = _WRAPPED.fullmatch(body)
    if wrapped is None:
        return fold_observation(body)
    opening, _, inside, closing = wrapped.groups()
    folded = f"{opening}{fold_observation(inside)}{closing}"
    return folded if len(folded) < len(body) else body


def _shortened(part: _Part) -> _Part:
    """A turn as its request and its answer: the last assistant message, if it calls no tool and nothing
    came after it (a turn that ended without an answer keeps only its request)."""
    request, *rest = part.messages
    last = rest[-1] if rest else None
    keep = [request]
    if last is not None and last.get("role") == "assistant" and not last.get("tool_calls"):
        keep.append(last)
    return replace(part, messages=keep, shortened=True)


class _Fitting:
    """The request being fitted: the head (system prompt), the earlier parts, the current turn."""

    def __init__(self, head: list[dict], earlier: list[_Part], current: list[dict], specs, cost: _MessageCost):
        self.head, self.earlier, self.current, self.specs, self.cost = head, earlier, current, specs, cost
        self.shortened = self.dropped = 0
        self._folded: set[int] = set()  # ids of the folded messages this fitting made

    @property
    def folded(self) -> int:
        """Folded Observations in the request as it stands (a fold in a turn shortened later is gone with it)."""
        return sum(1 for m in self.messages() if id(m) in self._folded)

    def _keep_fold(self, message: dict) -> dict:
        self._folded.add(id(message))
        return message

    def messages(self) -> list[dict]:
        return [*self.head, *(m for part in self.earlier for m in part.messages), *self.current]

    def tokens(self) -> int:
        return self.cost.reply + sum(self.cost(m) for m in self.messages()) + self.cost.tools(self.specs)

    def fit(self, budget: int) -> None:
        total = self.tokens()
        # 1. Fold earlier turns' Observations, oldest first.
        for part in self.earlier:
            for i, message in enumerate(part.messages):
                if total <= budget:
                    return
                # A turn's first message is its request, whatever it starts with.
                if not part.pinned and i > 0 and _is_observation(message) and (folded := _fold(message)) is not None:
                    total += self.cost(folded) - self.cost(message)
                    part.messages[i] = self._keep_fold(folded)
        # 2. Shorten earlier turns to their request and answer, oldest first.
        for index, part in enumerate(self.earlier):
            if total <= budget:
                return
            if not part.pinned and not part.shortened:
                short = _shortened(part)
                total += sum(self.cost(m) for m in short.messages) - sum(self.cost(m) for m in part.messages)
                self.earlier[index] = short
                self.shortened += 1
        # 3. Drop earlier turns, oldest first.
        for part in list(self.earlier):
            if total <= budget:
                return
            if not part.pinned:
                total -= sum(self.cost(m) for m in part.messages)
                self.earlier.remove(part)
                self.dropped += 1
                self.shortened -= part.shortened  # counted as dropped, not as both
        # 4. Fold this turn's Observations, all but the latest.
        observations = [i for i, m in enumerate(self.current) if i > 0 and _is_observation(m)]
        for i in observations[:-1]:
            if total <= budget:
                return
            if (folded := _fold(self.current[i])) is not None:
                total += self.cost(folded) - self.cost(self.current[i])
                self.current[i] = self._keep_fold(folded)

    def too_big(self, budget: int, counter_name: str) -> str:
        prompt = sum(self.cost(m) for m in self.head)
        request = self.cost(self.current[0]) if self.current else 0
        steps = sum(self.cost(m) for m in self.current[1:])
        pinned = sum(self.cost(m) for part in self.earlier for m in part.messages)
        parts = [f"system prompt {prompt}"]
        if self.specs:
            parts.append(f"tools {self.cost.tools(self.specs)}")
        if pinned:
            parts.append(f"pinned system messages {pinned}")
        parts += [f"the request {request}", f"this turn's steps {steps} (all but the latest Observation folded)"]
        return (
            f"even the smallest request is {self.tokens()} tokens ({', '.join(parts)}, counted with "
            f"{counter_name}), over the context budget of {budget}: raise the budget, shorten the request, or "
            "start a new conversation"
        )
