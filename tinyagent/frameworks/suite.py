"""Lesson 18's suite through a framework, graded by lesson 18's own checks (evaluation/grading.py).

    report = evaluate_framework("langchain", base_url=url)       # an EvalReport, like evaluate()'s
    print(scoreboard([evaluate(llm, "function"), report]))

What the grading reads comes from outside the framework, since its loop keeps no trace of ours: the tool calls
from the shop functions' log, the refunds from the shop's table, the model calls and tokens from the wire. One
difference, said plainly: a framework reads its model's replies itself and does not tell us how many it
could not read, so the "format" check sees none (unreadable_replies is 0); a reply it could not read and gave
up on ends the run with an error, which fails the "answer" check instead.

How a run ended is the framework's own word where it gives one (FrameworkRun.reason): tinyagent's loops say
theirs, so a step cap's apology or "cannot reach the model" is graded as lesson 18 grades it (max_steps,
llm_error), not as an answer; langchain-classic and smolagents say when their step cap stopped them. A framework
that says nothing is read by what it handed back: an answer is graded as the model's (LangChain, LlamaIndex,
pydantic-ai and the Agents SDK raise at their caps, so their stops are errors).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tinyagent.evaluation.grading import Check, RunOutcome, grade
from tinyagent.evaluation.report import EvalReport, TaskResult
from tinyagent.evaluation.tasks import EVAL_TASKS, EvalTask, select_tasks
from tinyagent.frameworks import FrameworkRun, framework_name, run_framework
from tinyagent.protocols.protocol_comparison import COURSE_NOW

# how each framework speaks to the model: lesson 18's two protocols
PROTOCOL = {"tinyagent": "text", "langchain-classic": "text", "llama-index-react": "text"}
# A format check that passed on a framework's run saw no reply: the framework read them all itself.
READ_BY_THE_FRAMEWORK = "no unreadable reply reported (the replies were read by the framework, not checked here)"


@dataclass
class FrameworkScore:
    """A framework's suite: the report, the size of the first request it sent (the suite's first task), and
    whether every reply carried its usage (if not, the report's tokens are the part that did: often none)."""

    key: str
    report: EvalReport
    first_request: int
    usage_known: bool

    @property
    def name(self) -> str:
        return self.report.label


def outcome_of(run: FrameworkRun) -> RunOutcome:
    """A framework's run as lesson 18's checks read it."""
    return RunOutcome(tool_calls=tuple(run.tool_uses),
                      refunds=tuple(sorted(str(row["orderId"]) for row in run.refunds)),
                      answer=run.answer, reason=run.reason or ("final_answer" if run.answer else "error"),
                      refund_ids=tuple(sorted(str(row["refundId"]) for row in run.refunds if "refundId" in row)),
                      replies=run.model_calls)


def graded(task: EvalTask, outcome: RunOutcome) -> dict[str, Check]:
    """Lesson 18's checks of a framework's run (`outcome_of`). Its format check has nothing to go on: the framework
    read the replies and reports none it could not read, so when it passes, it says so rather than "every reply
    followed the protocol"."""
    checks = grade(task, outcome)
    if checks["format"].passed:
        checks["format"] = Check(True, READ_BY_THE_FRAMEWORK)
    return checks


def _graded(task: EvalTask, run: FrameworkRun, started: float) -> TaskResult:
    outcome = outcome_of(run)
    return TaskResult(
        name=task.name, lang=task.lang, question=task.question, checks=graded(task, outcome),
        reason=outcome.reason if run.error is None else f"error: {run.error}", answer=run.answer,
        steps=run.model_calls, model_calls=run.model_calls, tool_calls=tuple(u.name for u in run.tool_uses),
        refunds=outcome.refunds, prompt_tokens=run.prompt_tokens, completion_tokens=run.completion_tokens,
        seconds=round(time.perf_counter() - started, 3),
    )


def evaluate_framework(key: str, *, base_url: str, model: str = "classroom", api_key: str = "none",
                       tasks: Iterable[EvalTask] = EVAL_TASKS, names: Iterable[str] | None = None,
                       langs: Iterable[str] | None = None, now: str = COURSE_NOW, max_steps: int = 8,
                       **options: Any) -> EvalReport:
    """The suite (or the tasks `names` and `langs` pick) through framework `key`, as an EvalReport."""
    return score_framework(key, base_url=base_url, model=model, api_key=api_key, tasks=tasks, names=names,
                           langs=langs, now=now, max_steps=max_steps, **options).report


def score_framework(key: str, *, base_url: str, model: str = "classroom", api_key: str = "none",
                    tasks: Iterable[EvalTask] = EVAL_TASKS, names: Iterable[str] | None = None,
                    langs: Iterable[str] | None = None, now: str = COURSE_NOW, max_steps: int = 8,
                    **options: Any) -> FrameworkScore:
    """evaluate_framework's report, with the first request's size and whether the tokens are all there."""
    report = EvalReport(model, PROTOCOL.get(key, "function"), [], now, max_steps, framework_name(key))
    first, known = 0, True
    for task in select_tasks(names, langs, tasks):
        started = time.perf_counter()
        run = run_framework(key, task.question, base_url=base_url, model=model, api_key=api_key, now=now,
                            max_steps=max_steps, **options)
        report.results.append(_graded(task, run, started))
        first = first or run.first_request_size
        known = known and run.usage_known
    return FrameworkScore(key, report, first, known)
