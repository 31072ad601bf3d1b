"""Stop rules: when the loop must end, and the named reason it ends with (lesson 10).

Lesson 06's loop ends when the model answers, when a reply is cut at `max_tokens` (`length`), or when
MAX_STEPS rounds have gone by. A stuck model is caught only by the last, after it has used every
round. A stop rule watches the run while it goes and ends it early, with a reason the trace names:

    rule               reason            checked               fires when
    StepCap(n)         max_steps         before a model call   n rounds have run
    TokenBudget(n)     token_budget      before a model call   the next call, estimated as the last, would take
                                                               the run past n tokens
    WallClock(s)       timeout           before a model call   s seconds have passed since the first call
    NoProgress(n)      no_progress       before a model call   n rounds in a row brought no new information
    RepeatedAction()   repeated_action   after a reply         an action is asked for again: a warning first,
                                                               then the stop
    CutOff()           length            after a reply         the reply was cut at max_tokens
    ToolTimeout(s)     (does not stop)   around a tool call    a tool takes longer than s seconds: its
                                                               Observation is an error

A rule reads the trace (every event of the run so far) and answers None (go on), `Stop(reason, detail)`,
or, after a reply, `Warn(text)`: the text goes back to the model as the Observation instead of running
the tool. Any object with a `check(trace)` method is a rule; its `when` says at which moment it is asked.

**Which rule wins.** The moments come in loop order: after a reply (length, repeated action), then,
before the next model call, the budgets and caps. At one moment the rules are asked in list order and
the first `Stop` wins; a `Stop` always beats a `Warn` (a cut reply is never run, warned about or not).
`recommended_stop_rules` puts the diagnoses (repeated action, no progress) before the limits (tokens,
time, steps), so a stuck run is reported as stuck rather than merely as out of steps.

**The closing call.** When a rule stops the run, one last model call asks for the best answer from what
the Observations said, with no tool: the run ends with `Final(answer, reason=<the rule's reason>)`, or
with `Stopped(reason)` and a polite message if that call brings no answer. That call comes on top of
every limit (it is one more call, and takes its own time and tokens).

Without this lesson's part an agent keeps lesson 06's `StepLimit`: a step cap and `length`, no closing call.
`ReActAgent(llm, tools, parts=[StopRules([...])])` uses your rules, adds `StepCap(max_steps)` and `CutOff()` if
the list has none (the loop must end, and a cut reply must never run), and makes the closing call.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, is_dataclass, replace
from itertools import groupby
from typing import Any, ClassVar

from tinyagent.errors import TinyAgentError
from tinyagent.events import Event, Final, LlmCall, Observation, Parsed, Stopped, event_kind
from tinyagent.loop_parts import CUT_OFF, GIVE_UP, POLITE_OTHER, StepLimit, Stop
from tinyagent.number_checks import check_seconds, check_whole
from tinyagent.registry import ToolRegistry, ToolResult, error_observation
from tinyagent.tools import Action
from tinyagent.trace import Trace

# What a printed trace says when a rule ends the run, and what each reason means.
LIMIT_LABEL = {"en": "[Limit reached: {reason}] {what}", "zh": "[到达限制：{reason}] {what}"}
REASON_NAMES = {
    "en": {
        "max_steps": "the step cap",
        "length": "a reply cut at max_tokens",
        "token_budget": "the token budget is spent",
        "timeout": "the time limit is up",
        "repeated_action": "the same action again",
        "no_progress": "no new information",
    },
    "zh": {
        "max_steps": "步数上限",
        "length": "回复在 max_tokens 处被截断",
        "token_budget": "token 预算用完了",
        "timeout": "时间到了",
        "repeated_action": "重复同一个动作",
        "no_progress": "没有新的信息",
    },
}


@event_kind
class LimitReached(Event):
    """A stop rule ended the loop (lesson 10, stop_rules.py). `reason` names the rule ("no_progress",
    "token_budget", ...) and `detail` says what it saw. Not the end of the run: a closing round follows
    (one model call for the best answer from what is known), and its Final or Stopped carries the same
    reason."""

    kind: ClassVar[str] = "limit_reached"
    reason: str = ""
    detail: str = ""

    def lines(self, lang: str, usage: bool = False, round: list[Event] = ()) -> list[str]:
        what = REASON_NAMES[lang].get(self.reason, "")
        line = LIMIT_LABEL[lang].format(reason=self.reason, what=what).rstrip()
        return [line, self.detail] if self.detail else [line]


BEFORE_CALL = "before_call"  # before each model call: budgets, caps, progress
AFTER_REPLY = "after_reply"  # after a reply is parsed, before its action runs: length, repeats
AROUND_TOOL = "around_tool"  # wraps the tool call itself: ToolTimeout

# -- what the user reads when the run stops without the model's answer ------------------------------
POLITE = {
    "max_steps": GIVE_UP,
    "length": CUT_OFF,
    "token_budget": {
        "en": "Sorry, I used up what I may spend on one question before I was done. Please ask again, "
        "perhaps more narrowly.",
        "zh": "抱歉，这个问题我用完了允许的计算量，还没处理完。请再问一次，或者问得更具体一些。",
    },
    "timeout": {
        "en": "Sorry, this was taking too long, so I stopped. Please try again in a moment.",
        "zh": "抱歉，处理时间太长，我先停下了。请稍后再试。",
    },
    "repeated_action": {
        "en": "Sorry, I kept trying the same step without getting anywhere. Please rephrase your request "
        "or add details.",
        "zh": "抱歉，我反复尝试同一个步骤，没有进展。请换个说法或补充一些信息。",
    },
    "no_progress": {
        "en": "Sorry, I was not finding anything new, so I stopped. Please rephrase your request or add "
        "details.",
        "zh": "抱歉，我一直没有查到新的信息，先停下了。请换个说法或补充一些信息。",
    },
}

# -- the closing call: why the model is asked to stop, and the request itself --------------------------
WHY = {
    "max_steps": {"en": "the limit of {n} rounds is reached", "zh": "已经用完了 {n} 轮的上限"},
    "length": {
        "en": "your last reply was cut off at the length limit, so keep this one short",
        "zh": "你上一条回复超过长度上限被截断了，这一条请写短一些",
    },
    "token_budget": {"en": "the token budget for this question is spent", "zh": "这个问题的 token 预算用完了"},
    "timeout": {"en": "the time allowed for this question is up", "zh": "这个问题允许的时间到了"},
    "repeated_action": {
        "en": "you asked for the same action again after a warning",
        "zh": "收到警告之后你又重复了同一个动作",
    },
    "no_progress": {
        "en": "the last {n} tool calls brought no new information",
        "zh": "最近 {n} 次工具调用没有带来新的信息",
    },
}
WHY_OTHER = {"en": "a limit was reached ({reason})", "zh": "到达了一个限制（{reason}）"}
CLOSING_REQUEST = {
    "en": "Stop here: {why}. Do not call any more tools. Using only what the Observations above say, give "
    "the customer your best answer now: what you found out, what you could not find out, and what they can "
    "do next. Reply as:\nThought: <one sentence>\nFinal Answer: <your reply to the customer>",
    "zh": "到此为止：{why}。不要再调用任何工具。只根据上面 Observation 里的信息，现在就给用户你能给出的最好答复："
    "查到了什么、还没查到什么、用户接下来可以怎么做。按这个格式回复：\nThought: <一句话>\nFinal Answer: <给用户的答复>",
}


# -- what a rule answers --------------------------------------------------------------------------------
def _stop(reason: str, detail: str = "", values: Mapping[str, Any] | None = None) -> Stop:
    """A rule's Stop, with its polite message."""
    return Stop(reason, detail, values or {}, polite=POLITE.get(reason, POLITE_OTHER))


def closing_request(stop: Stop, lang: str) -> str:
    """The last user message of a stopped run: why it stops, and a request for the best answer, no tools."""
    why = WHY.get(stop.reason, WHY_OTHER)[lang].format(reason=stop.reason, **stop.values)
    return CLOSING_REQUEST[lang].format(why=why)


@dataclass(frozen=True)
class Warn:
    """Do not run the action the model asked for; feed `text` back as its (error) Observation."""

    text: str


class StopRule:
    """A rule the loop asks at one moment of every round (`when`): carry on (None), `Stop`, or `Warn`.

    Subclasses set `when` and write `check(trace)`. A rule may remember things during a run (a start
    time, how many warnings it gave): each run works on its own `fresh()` copy, so nothing leaks from
    one run into the next.
    """

    when: ClassVar[str] = BEFORE_CALL

    def check(self, trace: Trace) -> Stop | Warn | None:
        raise NotImplementedError

    def fresh(self) -> StopRule:
        """A copy for one run: the same settings, nothing remembered."""
        return replace(self) if is_dataclass(self) else copy.copy(self)


# -- the rules -------------------------------------------------------------------------------------------
@dataclass
class StepCap(StopRule):
    """Lesson 06's MAX_STEPS as a rule: stop once `max_steps` rounds have run."""

    max_steps: int = 10

    def __post_init__(self) -> None:
        check_whole("StepCap(max_steps)", self.max_steps)

    def check(self, trace: Trace) -> Stop | None:
        if trace.rounds >= self.max_steps:
            return _stop("max_steps", values={"n": self.max_steps})
        return None


@dataclass
class CutOff(StopRule):
    """Stop on a reply cut at max_tokens (`finish_reason == "length"`): it may hold half an Action Input,
    so it is never run."""

    when: ClassVar[str] = AFTER_REPLY

    def check(self, trace: Trace) -> Stop | None:
        call = _last(trace, LlmCall)
        if call is not None and call.finish_reason == "length":
            return _stop("length", detail=f"cut off after: {call.text[-200:]!r}")
        return None


@dataclass
class TokenBudget(StopRule):
    """Stop when the next model call would take the run past `max_tokens` (prompt + completion, summed
    over every call, as the servers' `usage` reports them).

    Each prompt repeats everything the last call sent and got back, so the next call costs at least
    about as much as the whole last call: the rule stops when `spent + last call > max_tokens`, rather
    than after the budget has already gone. A reply without `usage` is counted as one token per
    character sent and received (too many for English, about right for Chinese), and the detail says so.
    """

    max_tokens: int

    def __post_init__(self) -> None:
        check_whole("TokenBudget(max_tokens)", self.max_tokens)

    def check(self, trace: Trace) -> Stop | None:
        calls = trace.of_type(LlmCall)
        if not calls:
            return None
        counts = [call_tokens(call) for call in calls]
        spent = sum(tokens for tokens, _ in counts)
        next_at_least = counts[-1][0]
        if spent + next_at_least <= self.max_tokens:
            return None
        estimated = " (estimated: a reply came without usage)" if not all(m for _, m in counts) else ""
        return _stop("token_budget", detail=(
            f"{spent} tokens spent in {len(calls)} model calls{estimated}; the next call needs at least about "
            f"{next_at_least} more (its prompt repeats the whole last call), past the budget of {self.max_tokens}"
        ))


def call_tokens(call: LlmCall) -> tuple[int, bool]:
    """(tokens, measured): what one model call cost, from its `usage`, or estimated from its text."""
    usage = call.usage or {}
    total = usage.get("total_tokens")
    if isinstance(total, int) and total > 0:
        return total, True
    parts = [usage.get("prompt_tokens"), usage.get("completion_tokens")]
    if all(isinstance(p, int) for p in parts) and sum(parts) > 0:
        return sum(parts), True
    sent = sum(len(str(m.get("content") or "")) for m in call.messages)
    return sent + len(call.text), False


@dataclass
class WallClock(StopRule):
    """Stop before a model call once `seconds` have passed since the run's first model call.

    `clock` is any function that returns seconds (default `time.monotonic`): a test or a notebook passes
    one it moves by hand, so the rule fires at the same round on every run. A call under way is not
    interrupted: the client's own timeouts bound a model call, `ToolTimeout` a tool call.
    """

    seconds: float
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)
    started: float | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        check_seconds("WallClock(seconds)", self.seconds)

    def check(self, trace: Trace) -> Stop | None:
        now = self.clock()
        if self.started is None:
            self.started = now  # the first check comes just before the first model call
        elapsed = now - self.started
        if elapsed >= self.seconds:
            # Tenths of a second, or thousandths under a one-second limit (0.04 s read "0.0 s" beside "the limit is 0.01 s").
            shown = f"{elapsed:.1f}" if self.seconds >= 1 else f"{elapsed:.3f}"
            return _stop("timeout", detail=f"{shown} s since the first model call; the limit is "
                                          f"{self.seconds:g} s", values={"seconds": self.seconds})
        return None


@dataclass
class NoProgress(StopRule):
    """Stop when the last `rounds` rounds in a row brought no new information.

    A round brings new information when its tool call worked (the Observation is not an error) and
    what it returned is not something the run has already seen (compared after putting JSON keys in
    order and collapsing spaces); a round of function calling with several calls, when one of them did. So the same Observation coming back, however the action was worded,
    counts as nothing new, and so does an error: it may teach the model the right format, which is why
    a few are allowed in a row, but it tells nothing about the customer's order. A warning from
    `RepeatedAction` and a `ToolTimeout` are errors too.

    Why not compare actions? A model can word the same request a new way every round (`88231`,
    `"88231"`, `{"orderId": "88231"}`): the actions differ, the answers do not. What the model learns
    is what counts.
    """

    rounds: int = 3

    def __post_init__(self) -> None:
        check_whole("NoProgress(rounds)", self.rounds)

    def check(self, trace: Trace) -> Stop | None:
        seen: dict[str, int] = {}  # normalized Observation -> the round it first came back
        stale: list[str] = []  # the rounds since the last new information, each with why
        # Round by round (a round of function calling may hold several Observations: counted one by one, two calls
        # of one round made it two stale rounds, and the detail named the round twice).
        for step, observations in groupby(trace.of_type(Observation), key=lambda observation: observation.step):
            why, new = [], False
            for observation in observations:
                key = normalize(observation.text)
                if observation.error:
                    why.append("an error")
                elif key in seen:
                    why.append(f"the same as round {seen[key]}")
                else:
                    new = True
                seen.setdefault(key, step)
            stale = [] if new else [*stale, f"round {step}: {', '.join(why)}"]
        if len(stale) < self.rounds:
            return None
        return _stop("no_progress", detail="no new information in the last "
                    f"{len(stale)} rounds ({'; '.join(stale)})", values={"n": self.rounds})


REPEAT_WARNING = {
    "en": "repeated action: {action} already ran in round {first}, and its result is above. Running it again "
    "brings nothing new: use what you have, take a different step, or give your Final Answer.",
    "zh": "重复的动作：{action} 在第 {first} 轮已经执行过，结果就在上面。再执行一次不会有新信息：请利用已有结果、"
    "换一个步骤，或者给出 Final Answer。",
}


@dataclass
class RepeatedAction(StopRule):
    """An action the run already took (the same tool, the same input) is not run again.

    The first `warnings` repeats get a warning as their Observation (the tool does not run: its result
    is already in the conversation, and running it twice could repeat a side effect); the repeat after
    that stops the run. Inputs are compared after putting JSON keys in order and collapsing spaces, so
    `{"a": 1, "b": 2}` and `{"b":2,"a":1}` are the same action.
    """

    when: ClassVar[str] = AFTER_REPLY
    warnings: int = 1
    given: int = field(default=0, init=False, repr=False)

    def __post_init__(self) -> None:
        check_whole("RepeatedAction(warnings)", self.warnings, least=0)

    def check(self, trace: Trace) -> Stop | Warn | None:
        parsed = _last(trace, Parsed)
        if parsed is None or not parsed.tool_name:
            return None
        key = action_key(parsed.tool_name, parsed.tool_input or "")
        rounds = [call.step for call in trace.tool_calls if action_key(call.name, call.input) == key]
        if not rounds:
            return None
        action = f"{parsed.tool_name}({(parsed.tool_input or '').strip()})"
        if self.given < self.warnings:
            self.given += 1
            text = REPEAT_WARNING.get(trace.lang, REPEAT_WARNING["en"]).format(action=action, first=rounds[0])
            return Warn(error_observation(text, stop_rule="repeated_action"))
        asked = ", ".join(str(n) for n in [*rounds, parsed.step])
        return _stop("repeated_action", detail=f"{action} asked for again after {self.given} "
                    f"warning{'s' if self.given != 1 else ''} (rounds {asked})")


@dataclass
class ToolTimeout(StopRule):
    """A tool that takes longer than `seconds` (or `per_tool[name]`) becomes an error Observation.

    The tool runs in a thread of its own while the loop waits. Python cannot stop a thread from the
    outside, so when the time is up the loop stops waiting, and the thread runs on until the tool
    returns: its result is thrown away, but whatever the tool does still happens (a refund is still
    written, a file still saved). The Observation says so, and `abandoned` keeps those threads, so a
    test or a notebook can wait for them (`join_abandoned`). They are daemon threads: they never keep
    Python from exiting (and die with it, half done, if it exits first). This rule never stops the run
    itself; a tool that keeps timing out is an error every round, which `NoProgress` does stop.
    """

    when: ClassVar[str] = AROUND_TOOL
    seconds: float = 30.0
    per_tool: Mapping[str, float] = field(default_factory=dict)
    # Shared by every run of an agent (a fresh() copy keeps the same list): what is still running.
    abandoned: list[threading.Thread] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        check_seconds("ToolTimeout(seconds)", self.seconds)
        # A list or a set of names has no seconds to read; a key that is no text never matches a tool's name.
        if not isinstance(self.per_tool, Mapping) or not all(isinstance(name, str) for name in self.per_tool):
            raise ValueError("ToolTimeout(per_tool) must be a mapping of tool names to seconds, like "
                             f"{{'applyRefund': 60}}; got {self.per_tool!r}")
        for name, seconds in self.per_tool.items():
            check_seconds(f"ToolTimeout(per_tool[{name!r}])", seconds)

    def check(self, trace: Trace) -> None:
        return None

    def run_tool(self, tools: ToolRegistry, action: Action) -> ToolResult:
        """`tools.run(action)`, waiting at most the tool's time limit."""
        name = (action.tool_name or "").strip()
        limit = self.per_tool.get(name, self.seconds)
        box: list[ToolResult] = []
        thread = threading.Thread(target=lambda: box.append(tools.run(action)), name=f"tool {name}", daemon=True)
        thread.start()
        thread.join(limit)
        if box:
            return box[0]
        self.abandoned.append(thread)
        message = (f"tool {name} did not answer within {limit:g} s. It was not stopped and may still finish "
                   "(and do what it does); do not assume it failed: check before calling it again")
        return ToolResult(error_observation(message, stop_rule="tool_timeout"), error=True)

    def join_abandoned(self, timeout: float | None = None) -> bool:
        """Wait for the tool threads this rule gave up on; True when none is still running."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in list(self.abandoned):
            thread.join(None if deadline is None else max(deadline - time.monotonic(), 0))
        self.abandoned[:] = [thread for thread in self.abandoned if thread.is_alive()]
        return not self.abandoned


# -- putting rules together ------------------------------------------------------------------------------
class StopRules:
    """When to stop in lesson 10: the rules of one agent, in order (the first Stop at a moment wins), and whether a
    stop makes the closing call for the best answer. A part for the loop's `stop_rules` slot:

        ReActAgent(llm, tools, parts=[StopRules([RepeatedAction(), TokenBudget(5000)])])

    Mounted on an agent, it keeps the agent's step cap (`StepCap(max_steps)`) and `CutOff()` unless its rules have
    their own: the loop must end, and a cut reply must never run."""

    slot: ClassVar[str] = "stop_rules"

    def __init__(self, rules: Iterable[Any] = (), *, closing_call: bool = True):
        if isinstance(rules, (str, bytes)) or not isinstance(rules, Iterable):
            raise TypeError(f"StopRules takes a list of rules, got {type(rules).__name__}")
        self.rules = list(rules)
        for rule in self.rules:
            if not callable(getattr(rule, "check", None)):
                raise TypeError(f"a stop rule needs a check(trace) method, got {rule!r}")
            when = getattr(rule, "when", BEFORE_CALL)
            if when not in (BEFORE_CALL, AFTER_REPLY, AROUND_TOOL):
                raise ValueError(f"{rule!r}: when must be {BEFORE_CALL!r}, {AFTER_REPLY!r} or {AROUND_TOOL!r}, "
                                 f"got {when!r}")
        self.closing_call = closing_call
        self._at = {when: [r for r in self.rules if getattr(r, "when", BEFORE_CALL) == when]
                    for when in (BEFORE_CALL, AFTER_REPLY)}

    def around(self, inner: Any) -> StopRules:
        """These rules, mounted where `inner` held the slot: with inner's step cap and CutOff() if they have none.
        Mounted over another StopRules, its rules of a kind these lack are kept too: two lists compose. Over any
        other part (one that wraps rules, such as lesson 21's OwnEvents) it would throw that part away: a TypeError
        says to mount StopRules first."""
        rules = list(self.rules)
        if isinstance(inner, StopRules):
            rules += [rule for rule in inner.rules if not any(type(rule) is type(mine) for mine in rules)]
        elif not isinstance(inner, StepLimit):
            raise TypeError(f"StopRules would throw away {inner!r}, which holds the stop_rules slot: mount StopRules "
                            "before it, so that it wraps these rules")
        if isinstance(inner, StepLimit) and not any(isinstance(rule, StepCap) for rule in rules):
            rules.append(StepCap(inner.max_steps))
        if not any(isinstance(rule, CutOff) for rule in rules):
            rules.append(CutOff())
        return StopRules(rules, closing_call=self.closing_call)

    def fresh(self) -> StopRules:
        """The same rules for a new run, each with nothing remembered."""
        return StopRules([_fresh(rule) for rule in self.rules], closing_call=self.closing_call)

    def before_call(self, trace: Trace) -> Stop | None:
        verdict = self.ask(BEFORE_CALL, trace)
        return verdict if isinstance(verdict, Stop) else None

    def after_reply(self, trace: Trace) -> Stop | ToolResult | None:
        """A Stop, or a warning as the result that stands in for the action (it does not run), or None."""
        verdict = self.ask(AFTER_REPLY, trace)
        return ToolResult(verdict.text, error=True) if isinstance(verdict, Warn) else verdict

    def run_tool(self, tools: ToolRegistry, action: Action) -> ToolResult:
        """Run the action: through the first rule that runs tools (ToolTimeout), else the registry."""
        runner = next((rule for rule in self.rules if callable(getattr(rule, "run_tool", None))), None)
        return runner.run_tool(tools, action) if runner is not None else tools.run(action)

    def end(self, run: Any, stop: Stop, step: int) -> Iterator[Event]:
        """The events that end `run` (an AgentRun) on `stop`, the rule having fired in round `step`.

        Without the closing call: Stopped(step, reason, polite message). With it: LimitReached(step), then a
        round of its own (step + 1): the closing request joins the message list, one model call made by the run's
        own parts (fitted, streamed, ... as every other call), its reply read as the read part reads a text, and
        Final(answer, reason) if it holds an answer, else Stopped(reason) with the polite message.
        """
        parts, lang = run.parts, run.lang
        if not self.closing_call:
            yield Stopped(step, stop.reason, stop.message(lang), detail=stop.detail)
            return
        yield LimitReached(step, stop.reason, stop.detail)
        closing = step + 1
        run.messages.append({"role": "user", "content": closing_request(stop, lang)})
        try:
            messages, options = parts.request.build(run, closing=True)
            sent = tuple(dict(m) for m in messages)
            reply = yield from parts.send(run, closing, messages, **options)
        except TinyAgentError as exc:
            yield Stopped(closing, stop.reason, stop.message(lang), detail=f"the closing call failed: {exc}")
            return
        yield LlmCall.of_reply(closing, sent, reply)
        run.messages.append({"role": "assistant", "content": reply.text})
        parsed = parts.read.parse(reply.text, None, run.agent.tools)
        action = parsed.action
        yield Parsed(closing, parsed.thought, action.tool_name if action else None,
                     action.tool_input if action else None, parsed.final_answer, parsed.rule)
        answer, problem = closing_answer(reply.text, reply.finish_reason, parsed)
        if answer is None:
            yield Stopped(closing, stop.reason, stop.message(lang), detail=f"the closing call gave no answer: {problem}")
        else:
            yield Final(closing, answer, stop.reason)

    def ask(self, when: str, trace: Trace) -> Stop | Warn | None:
        """What the rules of one moment (`when`) say, asked in order: the first Stop, else the first Warn, else None."""
        warning = None
        for rule in self._at[when]:
            verdict = rule.check(trace)
            if isinstance(verdict, Stop):
                return verdict  # the first Stop wins, and beats any Warn
            if isinstance(verdict, Warn) and warning is None:
                warning = verdict
            elif verdict is not None and not isinstance(verdict, Warn):
                raise TypeError(f"{rule!r}.check() must return Stop, Warn or None, got {verdict!r}")
        return warning

    def __repr__(self) -> str:
        return f"StopRules({self.rules!r}, closing_call={self.closing_call})"


def recommended_stop_rules(
    *,
    max_steps: int = 10,
    max_tokens: int = 20_000,
    seconds: float = 120.0,
    tool_seconds: float = 30.0,
    no_progress_rounds: int = 3,
    clock: Callable[[], float] = time.monotonic,
) -> list[StopRule]:
    """Every rule, diagnoses first (a stuck run is reported as stuck, not only as out of steps)."""
    return [
        RepeatedAction(),
        NoProgress(no_progress_rounds),
        TokenBudget(max_tokens),
        WallClock(seconds, clock=clock),
        StepCap(max_steps),
        CutOff(),
        ToolTimeout(tool_seconds),
    ]


def closing_answer(text: str, finish_reason: str | None, parsed: Any) -> tuple[str | None, str]:
    """The answer in the closing reply, or (None, why there is none)."""
    if finish_reason == "length":
        return None, "the reply was cut at max_tokens"
    if parsed.final_answer is not None and parsed.final_answer.strip():
        return parsed.final_answer.strip(), ""
    if parsed.final_answer is not None:  # its reply, "Thought: ...\nFinal Answer:", is no answer to give
        return None, "the Final Answer was empty"
    if parsed.action is not None:
        return None, f"the model asked for a tool ({parsed.action.tool_name}) instead of answering"
    if not text.strip():
        return None, "the reply was empty"
    return text.strip(), ""  # prose without the format: the fallback of lesson 06


# -- helpers ---------------------------------------------------------------------------------------------
def normalize(text: str) -> str:
    """Text for comparing: JSON with its keys in order, anything else with its spaces collapsed."""
    text = (text or "").strip()
    try:
        return json.dumps(json.loads(text), ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    except (ValueError, RecursionError):  # RecursionError: an Observation nested deeper than Python reads
        return " ".join(text.split())


def action_key(tool_name: str, tool_input: str) -> tuple[str, str]:
    """What makes two actions the same: the tool's name and its normalized input."""
    return (tool_name or "").strip(), normalize(tool_input)


def _last(trace: Trace, cls: type) -> Any:
    return next((event for event in reversed(trace.events) if isinstance(event, cls)), None)


def _fresh(rule: Any) -> Any:
    fresh = getattr(rule, "fresh", None)
    return fresh() if callable(fresh) else rule
