"""Evaluation (lesson 18): a task suite that tells whether a model, a prompt or a change does the job.

    from tinyagent import LlmClient
    from tinyagent.evaluation import evaluate, plot_tasks, scoreboard

    report = evaluate(LlmClient.from_settings())         # every task, text ReAct, with a progress bar
    print(report.table())                                # each check per task, and why a task failed
    report.save("classroom.json")                        # the results as JSON (report.REPORT_SCHEMA)
    plot_tasks(report)                                   # success, steps and tokens per task (matplotlib)

    python -m tinyagent eval --model classroom-loop --protocol function --json loop.json

The parts, one idea each:

    tasks.py        the suite: the shop's requests in Chinese and English, and what a right run does
    grading.py      four checks of one run: the tools called, the database afterwards, the answer, the format
    conclusions.py  what an answer concludes (a refund submitted, refused or possible, under warranty), read in words
    harness.py      running it: a fresh shop per task, any model, either protocol
    report.py       the results: a table, a scoreboard across reports, JSON with a stable schema
    progress.py     tqdm's bar when installed, plain lines when not
    plots.py        matplotlib figures (imported only when you plot)
    handoff_calls.py  lesson 21: a team's handoffs are its routing, which grading does not count as tool uses
"""

# The calls of a later lesson's agents that route a run rather than use a tool, each test registered in
# grading.ROUTING_CALLS as its module is imported: here, so that it is in place before a run is graded.
from tinyagent.evaluation import handoff_calls  # noqa: F401  (lesson 21: a team's handoffs)
from tinyagent.evaluation.grading import CHECKS, Check, RunOutcome, ToolUse, grade, written_in
from tinyagent.evaluation.harness import evaluate, run_eval_task
from tinyagent.evaluation.report import (
    REPORT_SCHEMA,
    SCHEMA_VERSION,
    EvalReport,
    TaskResult,
    report_problems,
    scoreboard,
)
from tinyagent.evaluation.tasks import EVAL_TASKS, LANGS, TASK_NAMES, EvalTask, select_tasks

__all__ = [
    "CHECKS",
    "EVAL_TASKS",
    "LANGS",
    "REPORT_SCHEMA",
    "SCHEMA_VERSION",
    "TASK_NAMES",
    "Check",
    "EvalReport",
    "EvalTask",
    "RunOutcome",
    "TaskResult",
    "ToolUse",
    "evaluate",
    "grade",
    "plot_costs",
    "plot_reports",
    "plot_tasks",
    "report_problems",
    "run_eval_task",
    "scoreboard",
    "select_tasks",
    "written_in",
]


def __getattr__(name: str):
    # The plots import matplotlib, which takes a second and is an optional extra: only when asked for.
    if name in ("plot_costs", "plot_tasks", "plot_reports"):
        from tinyagent.evaluation import plots

        return getattr(plots, name)
    raise AttributeError(f"module 'tinyagent.evaluation' has no attribute {name!r}")
