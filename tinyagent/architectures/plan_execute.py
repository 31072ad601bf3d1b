"""Lesson 17: plan-and-execute. A planner writes numbered steps; each step runs in the ReAct loop; a step that
fails gets the rest of the plan rewritten (a bounded number of times); one last call composes the answer.

    request ─planner─> 1. … 2. … 3. …                                  PlanMade
       step 1 ─ReActAgent─> answer                                    PlanStepStarted … PlanStepDone
       step 2 ─ReActAgent─> failed (no answer, a stop rule, an error it could not get past)
          └─re-planner─> the steps still needed                       PlanMade(revision=1)
       ...
    composer(request, every step's result) ─> the answer              Final

Each step is an ordinary run of the agent: the same tools, the same loop, the same events, in one trace (its
rounds numbered on from the plan's). A step sees the request and what earlier steps found in a system message
before its question. (Lesson 25: with a fence on the executor's requests, `data_fence`, those answers go out fenced
as data, in that note and to the re-planner and the composer.) The planner's reply is read with `parse_plan`; one it
cannot read is shown to it with the error and asked again, and if that fails too the plan is the request itself, run
as one step: a bad plan never ends a run. Every loop here is bounded: `max_plan_attempts` readings of a plan,
`max_replans` re-plans, at most MAX_PLAN_STEPS steps a plan.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from tinyagent.agent import MODEL_UNAVAILABLE, ReActAgent
from tinyagent.architectures.handed_runs import conversation_of, handed_over
from tinyagent.architectures.plan_text import (
    COMPOSER_PROMPT,
    CONTEXT_HEADING,
    LABELS,
    MAX_PLAN_STEPS,
    PLANNER_PROMPT,
    REPLANNER_PROMPT,
    PlanError,
    format_plan,
    parse_plan,
)
from tinyagent.errors import LlmError
from tinyagent.events import Event, Final, LlmCall, Observation, Stopped, event_kind
from tinyagent.llm_client import ChatResult, LlmClient
from tinyagent.loop_parts import part_in_chain
from tinyagent.memory.run_changes import MADE, changes_made, said_after, writes_in
from tinyagent.number_checks import check_whole
from tinyagent.prompts import check_language, detect_language
from tinyagent.registry import ToolRegistry
from tinyagent.trace import Trace

# What a printed trace says of a plan and its steps.
PLAN_LABELS = {
    "en": {"plan": "[Plan]", "replan": "[Re-plan {n}] {reason}", "plan_error": "[Plan unreadable] {error}",
           "plan_step": "[Step {n}] {text}", "step_done": "[Step {n} done]", "step_failed": "[Step {n} failed: {reason}]"},
    "zh": {"plan": "[计划]", "replan": "[重新计划 {n}] {reason}", "plan_error": "[计划无法解析] {error}",
           "plan_step": "[第 {n} 步] {text}", "step_done": "[第 {n} 步完成]", "step_failed": "[第 {n} 步失败：{reason}]"},
}


@event_kind
class PlanMade(Event):
    """Lesson 17 (plan_execute.py): the planner's numbered steps. `revision` 0 is the first plan; 1, 2, ... are
    re-plans of the steps left after a failed one, and `reason` says which failed and why. `error` is set when
    the planner's reply could not be read as a plan (then `steps` is empty)."""

    kind: ClassVar[str] = "plan_made"
    steps: tuple[str, ...] = ()
    revision: int = 0
    reason: str = ""
    error: str = ""

    def lines(self, lang: str, usage: bool = False, round: list[Event] = ()) -> list[str]:
        labels = PLAN_LABELS[lang]
        if self.error:  # the planner is asked again: its next PlanMade has the heading
            return [labels["plan_error"].format(error=self.error)]
        head = labels["replan"].format(n=self.revision, reason=self.reason) if self.revision else labels["plan"]
        return [head.rstrip()] + [f"  {n}. {text}" for n, text in enumerate(self.steps, start=1)]


@event_kind
class PlanStepStarted(Event):
    """One step of the plan begins: `number` in the plan as it stands, `text` the step given to the loop."""

    kind: ClassVar[str] = "plan_step_started"
    number: int = 0
    text: str = ""

    def lines(self, lang: str, usage: bool = False, round: list[Event] = ()) -> list[str]:
        return [PLAN_LABELS[lang]["plan_step"].format(n=self.number, text=self.text)]


@event_kind
class PlanStepDone(Event):
    """One step of the plan ended: `ok` False when it failed (see plan_execute.step_failure), `result` its
    answer, `reason` why the loop ended or why the step counts as failed."""

    kind: ClassVar[str] = "plan_step_done"
    number: int = 0
    ok: bool = True
    result: str = ""
    reason: str = ""

    def lines(self, lang: str, usage: bool = False, round: list[Event] = ()) -> list[str]:
        labels = PLAN_LABELS[lang]
        if self.ok:
            return [f"{labels['step_done'].format(n=self.number)} {self.result}"]
        return [f"{labels['step_failed'].format(n=self.number, reason=self.reason)} {self.result}".rstrip()]


MAX_REPLANS = 2
MAX_PLAN_ATTEMPTS = 2  # a plan that cannot be read is shown to the planner once, with the reason
STEP_MAX_STEPS = 6  # rounds of the loop for one step: a step is one part of a request


@dataclass(frozen=True)
class StepOutcome:
    """What one step of the plan came to: its text, its answer, why it failed (None when it did not), and what
    it changed (changes_made: a refund made, one line each), which stands even when the step failed."""

    text: str
    result: str
    failure: str | None = None
    changes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.failure is None


@dataclass(frozen=True)
class PlanResult:
    """The outcome of a plan-and-execute run: the answer, why the run ended ("final_answer", or "llm_error"
    when the planner or composer could not be reached), each step's outcome, and the whole trace."""

    answer: str
    reason: str
    trace: Trace
    outcomes: tuple[StepOutcome, ...] = ()
    replans: int = 0

    @property
    def ok(self) -> bool:
        return self.reason == "final_answer"


# Why a step failed, in the run's language: the reason appears in a trace printed in that language.
STEP_FAILURES = {
    "en": {"unended": "the run did not end", "no_answer": "the loop ended without an answer ({reason})",
           "error": "the last Observation was an error: {text}"},
    "zh": {"unended": "这一步没有结束", "no_answer": "循环没有给出答复就结束了（{reason}）",
           "error": "最后一条观察是错误：{text}"},
}


def step_failure(trace: Trace, lang: str | None = None) -> str | None:
    """Why a step's run counts as failed, or None when it did not fail: it ended without an answer of its own
    (a stop rule, the step cap, a model error), or its last Observation was an error it did not get past.
    The reason is in `lang` (default: the trace's language)."""
    said = STEP_FAILURES[check_language(lang or trace.lang)]
    end = trace.end
    if end is None:
        return said["unended"]
    if isinstance(end, Stopped) or end.reason not in ("final_answer", "fallback"):
        return said["no_answer"].format(reason=end.reason)
    observations = trace.of_type(Observation)
    if observations and observations[-1].error:
        return said["error"].format(text=observations[-1].text[:160])
    return None


class PlanAndExecuteAgent:
    """Plan, run each step with a ReActAgent, re-plan after a failed step, compose the answer.

    llm:        the model for the planner, the re-planner and the composer (and the steps, unless `executor`)
    tools:      the ToolRegistry the steps may use (the planner sees its list, to plan what can be done)
    executor:   the ReActAgent that runs each step (default: a ReActAgent on `llm` and `tools`, with
                STEP_MAX_STEPS rounds); its events appear in this run's trace
    lang:       the run's language (its prompts, its trace, the default executor's); None: each question's own
    max_replans: how many times the rest of the plan may be rewritten after a failed step; a failure after
                that is reported in the answer and the plan carries on
    max_plan_attempts: how many times the planner is asked for a plan `parse_plan` can read; after that, the
                request itself is the one step (the steps left, for a re-plan)
    max_plan_steps: the most steps a plan may have (`parse_plan`'s `max_steps`)
    """

    def __init__(
        self,
        llm: LlmClient | None = None,
        tools: ToolRegistry | None = None,
        *,
        executor: ReActAgent | None = None,
        lang: str | None = None,
        max_replans: int = MAX_REPLANS,
        max_plan_attempts: int = MAX_PLAN_ATTEMPTS,
        max_plan_steps: int = MAX_PLAN_STEPS,
    ):
        for name, value, least in (("max_replans", max_replans, 0), ("max_plan_attempts", max_plan_attempts, 1),
                                   ("max_plan_steps", max_plan_steps, 1)):
            check_whole(name, value, least=least)
        if executor is None:
            if not isinstance(tools, ToolRegistry):
                raise TypeError("PlanAndExecuteAgent needs tools=ToolRegistry(...) or executor=ReActAgent(...)")
            executor = ReActAgent(llm, tools, max_steps=STEP_MAX_STEPS, lang=lang)
        self.executor = executor
        self.llm = llm if llm is not None else executor.llm
        self.tools = executor.tools
        self.lang = check_language(lang) if lang is not None else None
        self.max_replans = max_replans
        self.max_plan_attempts = max_plan_attempts
        self.max_plan_steps = max_plan_steps

    def start(self, question: str) -> PlanRun:
        return PlanRun(self, question)

    def run(self, question: str) -> PlanResult:
        return self.start(question).finish()


class PlanRun:
    """One plan-and-execute run, paused between events (iterate it, or call `finish()`)."""

    def __init__(self, agent: PlanAndExecuteAgent, question: str):
        if not isinstance(question, str) or not question.strip():
            raise ValueError("the question must be a non-empty string")
        self.agent = agent
        self.question = question
        self.lang = agent.lang or detect_language(question)
        self.trace = Trace(lang=self.lang)
        self.outcomes: list[StepOutcome] = []
        self.replans = 0
        self.round = 0  # the last round number used in this trace
        self._handed_from = [{"role": "user", "content": question}]  # the customer's request, then each step's run
        self._events = self._run()

    def __iter__(self) -> PlanRun:
        return self

    def __next__(self) -> Event:
        event = next(self._events)
        self.trace.append(event)
        return event

    def finish(self) -> PlanResult:
        for _ in self:
            pass
        end = self.trace.end
        return PlanResult(end.answer, end.reason, self.trace, tuple(self.outcomes), self.replans)

    # -- the run ---------------------------------------------------------------------------------
    def _run(self) -> Iterator[Event]:
        try:
            steps = yield from self._plan(self._planner_messages(), revision=0, reason="")
            while steps:
                text, steps = steps[0], steps[1:]
                outcome = yield from self._execute(text, len(self.outcomes) + 1)
                self.outcomes.append(outcome)
                if outcome.ok or self.replans >= self.agent.max_replans:
                    continue
                self.replans += 1
                why = f"{LABELS[self.lang]['failed']} {len(self.outcomes)}: {outcome.failure}"
                steps = yield from self._plan(self._replanner_messages(steps), self.replans, why, allow_empty=True,
                                              fallback=steps)
            answer = yield from self._compose()
        except LlmError as error:
            yield Stopped(self.round, "llm_error", MODEL_UNAVAILABLE[self.lang], detail=str(error))
            return
        yield Final(self.round, answer, "final_answer")

    def _call(self, messages: list[dict]) -> Iterator[Event]:
        """One model call of the planner or the composer, in a round of its own."""
        self.round += 1
        reply: ChatResult = self.agent.llm.chat(messages)
        yield LlmCall.of_reply(self.round, messages, reply)
        return reply.text

    def _plan(self, messages: list[dict], revision: int, reason: str, allow_empty: bool = False,
              fallback: list[str] | None = None) -> Iterator[Event]:
        """Ask for a plan until one can be read (at most max_plan_attempts times); else `fallback`, or the
        request itself as the one step."""
        for _ in range(self.agent.max_plan_attempts):
            text = yield from self._call(messages)
            try:
                steps = parse_plan(text, allow_empty=allow_empty, max_steps=self.agent.max_plan_steps)
            except PlanError as error:
                yield PlanMade(self.round, (), revision, reason, error=str(error))
                messages = [*messages, {"role": "assistant", "content": text},
                            {"role": "user", "content": LABELS[self.lang]["unreadable"].format(error=error)}]
                continue
            yield PlanMade(self.round, tuple(steps), revision, reason)
            return steps
        steps = list(fallback) if fallback is not None else [self.question]
        yield PlanMade(self.round, tuple(steps), revision, reason or "fallback: the request as one step")
        return steps

    def _execute(self, text: str, number: int) -> Iterator[Event]:
        """Run one step in the agent's loop; its events join this trace with their rounds numbered on."""
        offset = self.round
        yield PlanStepStarted(offset + 1, number, text)
        # The step's text is the planner's, not the customer's: the run keeps the conversation it came from (the
        # request, then the earlier steps'), where lesson 25's defences read the customer's words (handed_runs.py).
        run = handed_over(self.agent.executor.start(text, history=self._context()), self._handed_from)
        for event in run:
            self.round = offset + event.step
            if isinstance(event, (Final, Stopped)):
                continue  # a step's answer is not the run's: PlanStepDone carries it
            yield replace(event, step=self.round)
        self.round = max(self.round, offset + 1)
        failure = step_failure(run.trace, self.lang)
        result = run.trace.answer or ""
        changes = changes_made(run.trace, writes_in(self.agent.tools))
        self._handed_from = conversation_of(run)
        yield PlanStepDone(self.round, number, failure is None, result, failure or run.trace.reason or "")
        return StepOutcome(text, result, failure, tuple(changes))

    def _reported(self, outcome: StepOutcome) -> str:
        """A step's answer and what it changed: a step that failed after a refund must not read as one that
        did nothing, to the re-planner (who would plan the refund again) or the composer (who would deny it)."""
        return said_after(outcome.result or "-", list(outcome.changes), self.lang, MADE)

    def _context(self) -> list[dict]:
        """What the step is told besides its own text: the request and what earlier steps found."""
        lines = [CONTEXT_HEADING[self.lang], f"{LABELS[self.lang]['request']}: {self.question}"]
        lines += [f"{n}. {o.text} -> {o.result or '-'}" for n, o in enumerate(self.outcomes, start=1) if o.ok]
        return [{"role": "system", "content": "\n".join(lines)}]

    def _planner_messages(self) -> list[dict]:
        prompt = PLANNER_PROMPT[self.lang].format(max_steps=self.agent.max_plan_steps, tools=self._tool_list())
        return [{"role": "system", "content": prompt},
                {"role": "user", "content": f"{LABELS[self.lang]['request']}: {self.question}"}]

    def _replanner_messages(self, left: list[str]) -> list[dict]:
        labels = LABELS[self.lang]
        done = [o for o in self.outcomes[:-1] if o.ok]
        failed = self.outcomes[-1]
        report = [
            f"{labels['done']}:\n" + ("\n".join(f"- {o.text} -> {self._reported(o)}" for o in done) or labels["none"]),
            f"{labels['failed']}: {failed.text}\n{labels['why']}: "
            + said_after(failed.failure, list(failed.changes), self.lang),
            f"{labels['left']}:\n" + (format_plan(left) or labels["none"]),
        ]
        prompt = REPLANNER_PROMPT[self.lang].format(max_steps=self.agent.max_plan_steps, tools=self._tool_list())
        return self._told(prompt, "\n\n".join(report))

    def _compose(self) -> Iterator[Event]:
        labels = LABELS[self.lang]
        lines = []
        for n, o in enumerate(self.outcomes, start=1):
            status = "" if o.ok else f" [{labels['failed']}: {o.failure}]"
            lines.append(f"{n}. {o.text}{status}\n   -> {self._reported(o)}")
        report = f"{labels['results']}:\n" + "\n".join(lines)
        text = yield from self._call(self._told(COMPOSER_PROMPT[self.lang], report))
        answer = _strip_answer_label(text)
        # A composer that says nothing still leaves the customer the steps' own answers.
        return answer or "\n".join(o.result for o in self.outcomes if o.result)

    def _told(self, prompt: str, report: str) -> list[dict]:
        """The re-planner's or the composer's messages: `prompt`, then the request and `report`, what the steps came
        to. Their answers are a model's, written from tool results that may hold planted text, and lesson 25's fence
        on the executor (`data_fence`) fences them in the steps' note: here too then, the report in the same fence and
        the prompt with its rule. The request is the customer's, and stays as it is; without a fence nothing changes."""
        fence = data_fence(self.agent.executor)
        if fence is not None:
            prompt, report = fence.fence_report(prompt, report, self.lang)
        return [{"role": "system", "content": prompt},
                {"role": "user", "content": f"{LABELS[self.lang]['request']}: {self.question}\n\n{report}"}]

    def _tool_list(self) -> str:
        return self.agent.tools.build_tool_list(self.lang).strip()


def data_fence(executor: ReActAgent) -> Any | None:
    """The part of `executor`'s requests (however many parts wrap it) that fences what the tools returned as data and
    says so in a `fence_report(prompt, report, lang)` of its own (lesson 25's FencedData), or None. The executor's
    runs are told earlier steps' answers through that part; the plan's own calls, which it never builds, ask it to
    fence them the same way."""
    return part_in_chain(executor.parts.request, lambda part: callable(getattr(part, "fence_report", None)))


def _strip_answer_label(text: str) -> str:
    text = (text or "").strip()
    for label in ("Final Answer:", "最终答复：", "最终答案：", "Answer:", "答复："):
        if text.startswith(label):
            return text[len(label):].strip()
    return text


__all__ = ["MAX_REPLANS", "PlanAndExecuteAgent", "PlanResult", "PlanRun", "StepOutcome", "step_failure"]
