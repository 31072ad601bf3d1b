"""Pictures of evaluation reports, with matplotlib (the `eval` extra; not needed for anything else).

    plot_tasks([text, function])      per task: checks passed, steps, tokens; one bar per report
    plot_costs([one, team])           per task: model calls and tokens; one bar per report
    plot_reports(reports)             per report: success rate, steps per task, tokens per task
    plot_reports(reports, tokens_unknown=["a label"])   that report's tokens read n/a: nobody counted them

Each returns a matplotlib Figure of a fixed size, closed to pyplot, so a notebook shows it once (as the
cell's value) and its text form, "<Figure size 1200x800 with 3 Axes>", is the same on every run. Their bars
are drawn by `grouped_bars`, which lesson 25's attack chart draws with too.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence

from tinyagent.evaluation.grading import CHECKS
from tinyagent.evaluation.report import EvalReport
from tinyagent.shares import percent

TASKS_FIGSIZE = (12, 8)  # inches: room for the suite's 24 rows
REPORTS_FIGSIZE = (12, 4.5)  # room for a dozen reports
COLOURS = ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C",
           "#CCB974", "#64B5CD", "#2F4B7C")


def pyplot():
    """matplotlib's pyplot, or an ImportError that says how to install it."""
    # The first import of matplotlib on a machine builds a font cache and logs a warning about it, which
    # would land in the notebook's output once and never again: a difference nbval would report.
    logging.getLogger("matplotlib.font_manager").setLevel(logging.ERROR)
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError('tinyagent.evaluation plots need matplotlib: pip install -e ".[eval]" in the course folder') from None
    return plt


def grouped_bars(ax, labels: list[str], series: list[tuple[str, list[float]]], title: str, xlabel: str) -> None:
    """Horizontal grouped bars on `ax`: one group per label (top to bottom), one bar per series (name, values)."""
    n = max(len(series), 1)
    height = 0.8 / n
    for i, (name, values) in enumerate(series):
        positions = [row + (i - (n - 1) / 2) * height for row in range(len(labels))]
        ax.barh(positions, values, height=height, label=name, color=COLOURS[i % len(COLOURS)])
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels)
    if not ax.yaxis_inverted():  # the first label on top; panels that share the y axis turn it over only once
        ax.invert_yaxis()
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", alpha=0.3)


def _task_columns(reports: EvalReport | Sequence[EvalReport]):
    """The reports as a list, every task id in order, and `column(get)`: each report's label with `get(result)`
    per task (0 where the report has no result for it), the series `grouped_bars` draws."""
    reports = [reports] if isinstance(reports, EvalReport) else list(reports)
    ids = list(dict.fromkeys(r.id for report in reports for r in report.results))
    by = [{r.id: r for r in report.results} for report in reports]

    def column(get) -> list[tuple[str, list[float]]]:
        return [(report.label, [get(results[i]) if i in results else 0 for i in ids])
                for report, results in zip(reports, by)]

    return reports, ids, column


def plot_tasks(reports: EvalReport | Sequence[EvalReport], title: str = ""):
    """Three panels, one row per task: checks passed (of 4; 4 is a passed task), steps, tokens."""
    plt = pyplot()
    reports, ids, column = _task_columns(reports)

    fig, axes = plt.subplots(1, 3, figsize=TASKS_FIGSIZE, sharey=True)
    grouped_bars(axes[0], ids, column(lambda r: len(CHECKS) - len(r.failed_checks)), "success",
                 f"checks passed (of {len(CHECKS)})")
    axes[0].set_xlim(0, len(CHECKS))
    axes[0].set_xticks(range(len(CHECKS) + 1))
    grouped_bars(axes[1], ids, column(lambda r: r.steps), "steps", "rounds of the loop")
    grouped_bars(axes[2], ids, column(lambda r: r.tokens), "tokens", "prompt + completion")
    return _per_task_figure(plt, fig, axes[2], reports, title)


def _per_task_figure(plt, fig, last, reports: list[EvalReport], title: str):
    """The last touches of a figure with a row per task: a legend on its last panel when several reports share the
    bars, the title (the reports' labels when none is given), closed so that a notebook shows it once, as the value
    returned."""
    if len(reports) > 1:
        last.legend(loc="lower right", fontsize="small")
    fig.suptitle(title or " vs ".join(report.label for report in reports))
    fig.tight_layout()
    plt.close(fig)
    return fig


def plot_costs(reports: EvalReport | Sequence[EvalReport], title: str = ""):
    """Two panels, one row per task: model calls and tokens, what each task cost (the rounds of plot_tasks count
    the highest round of a trace, less than the calls when one agent's rounds run inside another's)."""
    plt = pyplot()
    reports, ids, column = _task_columns(reports)

    fig, axes = plt.subplots(1, 2, figsize=TASKS_FIGSIZE, sharey=True)
    grouped_bars(axes[0], ids, column(lambda r: r.model_calls), "model calls", "calls to the model")
    grouped_bars(axes[1], ids, column(lambda r: r.tokens), "tokens", "prompt + completion")
    return _per_task_figure(plt, fig, axes[1], reports, title)


def plot_reports(reports: Sequence[EvalReport], title: str = "the suite, model by model",
                 tokens_unknown: Collection[str] = ()):
    """Three panels, one row per report: success rate, steps per task, tokens per task.

    `tokens_unknown` names the reports (by label) whose tokens nobody counted, such as a framework that streamed
    its replies without asking for the usage: their tokens read "n/a" with no bar, where 0 would be a claim."""
    plt = pyplot()
    reports = list(reports)
    unknown = set(tokens_unknown) & {report.label for report in reports}
    labels = [report.label for report in reports]
    summaries = [report.summary for report in reports]

    def per_task(key: str) -> list[float]:
        return [sum(s[k] for k in key.split("+")) / max(s["tasks"], 1) for s in summaries]

    fig, axes = plt.subplots(1, 3, figsize=REPORTS_FIGSIZE, sharey=True)
    rates = [s["success_rate"] * 100 for s in summaries]
    grouped_bars(axes[0], labels, [("", rates)], "success", "% of tasks passed")
    axes[0].set_xlim(0, 118)  # room for the label beside a full bar
    axes[0].set_xticks(range(0, 101, 20))
    axes[0].bar_label(axes[0].containers[0], labels=[percent(s["success_rate"]) for s in summaries], padding=2, fontsize="small")
    grouped_bars(axes[1], labels, [("", per_task("steps"))], "steps", "rounds per task")
    tokens = [0 if label in unknown else value
              for label, value in zip(labels, per_task("prompt_tokens+completion_tokens"))]
    grouped_bars(axes[2], labels, [("", tokens)], "tokens", "tokens per task")
    for row, label in enumerate(labels):
        if label in unknown:
            axes[2].text(0, row, " n/a", va="center", fontsize="small")
    fig.suptitle(title)
    fig.tight_layout()
    plt.close(fig)
    return fig
