"""Lesson 18's suite through a framework, graded by lesson 18's own checks (evaluation/grading.py).

    report = evaluate_framework("langchain", base_url=url)       # an EvalReport, like evaluate()'s
    print(scoreboard([evaluate(llm, "function"), report]))

What the grading reads comes from outside the framework, since its loop keeps no trace of ours: the tool calls
from the shop functions' log, the refunds from the shop's table, the model calls and tokens from the wire. One
difference, said plainly: a framework reads its model's replies itself and does not tell us how many it
could not read, so the "format" check sees none (unreadable_replies is 0); a reply it could not read and gave
up on ends the run with an error, which fails the "answer" check instead.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from ..evaluation.grading import RunOutcome, grade
from ..evaluation.report import EvalReport, TaskResult
from ..evaluation.tasks import EVAL_TASKS, EvalTask, select_tasks
from ..protocol_comparison import COURSE_NOW
from . import FrameworkRun, framework_name, run_framework

# how each framework speaks to the model: lesson 18's two protocols
PROTOCOL = {"tinyagent": "text", "langchain-classic": "text", "llama-index-react": "text"}


def outcome_of(run: FrameworkRun) -> RunOutcome:
    """A framework's run as lesson 18's checks read it."""
    return RunOutcome(tool_calls=tuple(run.tool_uses),
                      refunds=tuple(sorted(str(row["orderId"]) for row in run.refunds)),
                      answer=run.answer, reason="final_answer" if run.answer else "error")


def run_framework_task(key: str, task: EvalTask, **options: Any) -> TaskResult:
    """One task on a fresh shop through framework `key`, graded."""
    started = time.perf_counter()
    run = run_framework(key, task.question, **options)
    outcome = outcome_of(run)
    return TaskResult(
        name=task.name, lang=task.lang, question=task.question, checks=grade(task, outcome),
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
    report = EvalReport(model, PROTOCOL.get(key, "function"), [], now, max_steps, framework_name(key))
    for task in select_tasks(names, langs, tasks):
        report.results.append(run_framework_task(key, task, base_url=base_url, model=model, api_key=api_key,
                                                 now=now, max_steps=max_steps, **options))
    return report
