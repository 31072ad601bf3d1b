"""Running the suite: every task on a fresh shop, graded, with a progress bar.

    report = evaluate(LlmClient.from_settings())                      # text ReAct, every task, both languages
    report = evaluate(llm, protocol="function", langs=["en"], max_steps=6)
    report = evaluate(LlmClient.classroom("classroom-sloppy"), parts=[TolerantRead()], label="sloppy, tolerant")

Each task gets a new in-memory shop with the course's clock (2026-06-30 19:05:23), so one task's refund cannot
change the next task's answer, and the facts of the suite hold. Options other than the ones named go to the agent
(`ReActAgent` or `FunctionCallingAgent`, or whatever `build(llm, tools, **options)` makes in their place, as lesson
21's `build=shop_team` does): max_tokens, parts, ...
Nothing here raises for what a model gets wrong: a failed model call ends its run ("llm_error"), and the
task fails its checks like any other wrong run. A run that raises (a model client with a bug of its own) fails
every check of its task, saying what it raised, and the suite goes on: the results so far are not lost.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, TextIO

from tinyagent.agent import MAX_STEPS
from tinyagent.errors import named_first_line
from tinyagent.evaluation.grading import CHECKS, Check, RunOutcome, grade
from tinyagent.evaluation.progress import progress_bar
from tinyagent.evaluation.report import EvalReport, TaskResult
from tinyagent.evaluation.tasks import EVAL_TASKS, EvalTask, check_task, select_tasks
from tinyagent.events import LlmCall
from tinyagent.protocols.protocol_comparison import COURSE_NOW, PROTOCOLS, run_on_fresh_shop
from tinyagent.trace import Trace


def run_eval_task(task: EvalTask, llm: Any, protocol: str = "text", *, now: str = COURSE_NOW,
                  max_steps: int = MAX_STEPS, **options: Any) -> TaskResult:
    """Run one task on a fresh shop and grade it."""
    started = time.perf_counter()
    try:
        result, refunds = run_on_fresh_shop(task.question, protocol, llm, now=now, max_steps=max_steps, **options)
    except Exception as exc:  # noqa: BLE001 - one task's crash is its failure, not the end of the suite
        raised = named_first_line(exc)
        return TaskResult(
            name=task.name, lang=task.lang, question=task.question,
            checks={name: Check(False, f"the run raised {raised}") for name in CHECKS}, reason=f"error: {raised}",
            answer=None, steps=0, model_calls=0, tool_calls=(), refunds=(), prompt_tokens=0, completion_tokens=0,
            seconds=round(time.perf_counter() - started, 3),
        )
    seconds = round(time.perf_counter() - started, 3)  # to the millisecond, as the JSON keeps them
    trace = result.trace
    usage = trace.total_usage()
    outcome = RunOutcome.from_run(result, refunds)
    return TaskResult(
        name=task.name, lang=task.lang, question=task.question, checks=grade(task, outcome),
        reason=result.reason, answer=result.answer, steps=trace.rounds, model_calls=len(trace.of_type(LlmCall)),
        tool_calls=tuple(use.name for use in outcome.tool_calls), refunds=outcome.refunds,
        prompt_tokens=usage["prompt_tokens"], completion_tokens=usage["completion_tokens"],
        seconds=seconds, trace=trace, tokens_unreported=tokens_unreported(trace),
    )


def tokens_unreported(trace: Trace) -> int:
    """The model calls of a run whose reply counted no tokens (`"usage": null`, or no prompt or completion count):
    the run's tokens are then at least what the others counted, not all of it. A person's reply costs none."""
    return sum(call.model != "person" and not {"prompt_tokens", "completion_tokens"} <= call.usage.keys()
               for call in trace.of_type(LlmCall))


def evaluate(
    llm: Any,
    protocol: str = "text",
    *,
    tasks: Iterable[EvalTask] = EVAL_TASKS,
    names: Iterable[str] | None = None,
    langs: Iterable[str] | None = None,
    max_steps: int = MAX_STEPS,
    now: str = COURSE_NOW,
    progress: bool | str = True,
    progress_file: TextIO | None = None,
    label: str = "",
    on_result: Callable[[TaskResult], None] | None = None,
    **options: Any,
) -> EvalReport:
    """Run the suite (or the tasks picked by `names` and `langs`) against `llm` with one protocol.

    protocol: "text" (ReActAgent) or "function" (FunctionCallingAgent)
    progress: True for a tqdm bar (plain lines without tqdm), "plain" for lines, False for nothing
    label:    the report's name in tables and plots (default: "<model> · <protocol's name>", as
              "classroom · text ReAct")
    on_result: told of each task's result as it ends
    """
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {', '.join(PROTOCOLS)}, got {protocol!r}")
    chosen = select_tasks(names, langs, tasks)
    if not chosen:
        raise ValueError("no task to run: the names, languages or tasks given leave none")
    for task in chosen:
        check_task(task)
    twice = [task_id for task_id, listed in Counter(task.id for task in chosen).items() if listed > 1]
    if twice:
        raise ValueError(f"the task {twice[0]!r} is listed twice: each task's name and language is one task")
    report = EvalReport(getattr(llm, "model", "?"), protocol, [], now, max_steps, label)
    bar = progress_bar(len(chosen), report.label, progress, progress_file)
    try:
        for task in chosen:
            result = run_eval_task(task, llm, protocol, now=now, max_steps=max_steps, **options)
            report.results.append(result)
            bar.advance(result)
            if on_result is not None:
                on_result(result)
    finally:
        bar.close()
    return report
