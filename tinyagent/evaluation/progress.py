"""A progress bar for a run of the suite: tqdm when it is installed, plain lines when it is not.

tqdm (the `eval` extra) draws a bar that updates in place, in a terminal and in JupyterLab alike. The core
package needs only requests and python-dotenv, so without tqdm the same progress comes as one line per
task; so it does when stderr is no terminal (a log file, a pipe), where a bar drawn in place would be one
line of carriage returns. Both go to stderr, so the results on stdout stay clean.

The bar shows no clock (no elapsed time, no rate): on a slow real model the per-task line says more, and
a bar without times draws the same on every run.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from tinyagent.evaluation.report import TaskResult

BAR_FORMAT = "{desc}: {bar:20} {n_fmt}/{total_fmt}{postfix}"  # tqdm writes ", " before the postfix
# In a notebook tqdm draws a progress widget where the format says "{bar}", and only that exact field: given
# "{bar:20}" it would also print a text bar of blocks beside its widget. The widget has its own width.
WIDGET_BAR_FORMAT = "{desc}: {bar} {n_fmt}/{total_fmt}{postfix}"


class PlainProgress:
    """The fallback: one line per task, `[ 3/22] refund (zh)` and `passed` (or why not) after it."""

    def __init__(self, total: int, desc: str, file: TextIO | None = None):
        self.total = total
        self.done = 0
        self.file = file
        print(f"{desc}: {total} tasks", file=self.stream, flush=True)

    @property
    def stream(self) -> TextIO:
        return self.file or sys.stderr  # looked up at each print: a notebook replaces sys.stderr per cell

    def advance(self, result: TaskResult) -> None:
        self.done += 1
        width = len(str(self.total))
        verdict = "passed" if result.passed else f"failed: {', '.join(result.failed_checks)}"
        print(f"[{self.done:>{width}}/{self.total}] {result.id:<24} {verdict}", file=self.stream, flush=True)

    def close(self) -> None:
        pass


class TqdmProgress:
    """tqdm's bar (`tqdm.auto`: a widget in JupyterLab, text in a terminal), with the passes so far."""

    def __init__(self, tqdm: Any, total: int, desc: str, file: TextIO | None = None, *, widget: bool = False):
        self.passed = 0
        if widget:
            # Shown here rather than by tqdm: a saved notebook keeps a widget's text as it was when shown, and
            # tqdm's reads "0/22" beside the report's "22/22 passed". This text says what the widget was instead.
            from IPython.display import display

            self.bar = tqdm(total=total, desc=desc, unit="task", bar_format=WIDGET_BAR_FORMAT, mininterval=0,
                            display=False)
            shown = self.bar.container._repr_mimebundle_()
            shown["text/plain"] = f"{desc}: a progress bar of {total} tasks"
            display(shown, raw=True)
        else:
            self.bar = tqdm(total=total, desc=desc, unit="task", bar_format=BAR_FORMAT, file=file, mininterval=0)

    def advance(self, result: TaskResult) -> None:
        self.passed += result.passed
        self.bar.set_postfix_str(f"{self.passed} passed, last: {result.id}", refresh=False)
        self.bar.update(1)

    def close(self) -> None:
        self.bar.close()


class NoProgress:
    def advance(self, result: TaskResult) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(total: int, desc: str, style: bool | str = True, file: TextIO | None = None):
    """A progress display with `.advance(result)` and `.close()`.

    style: True for tqdm if it is installed and there is somewhere to draw it (a notebook, a terminal), else
           plain lines; "plain" for plain lines; False for none.
    """
    if style is False:
        return NoProgress()
    if style not in (True, "plain"):
        raise ValueError(f"progress must be True, 'plain' or False, got {style!r}")
    if style is True:
        try:
            from tqdm.auto import tqdm
            from tqdm.notebook import tqdm as notebook_tqdm  # what tqdm.auto picks in a notebook
        except ImportError:  # the core install: no tqdm, plain lines instead
            pass
        else:
            widget = issubclass(tqdm, notebook_tqdm)
            if widget or _a_terminal(file or sys.stderr):
                return TqdmProgress(tqdm, total, desc, file, widget=widget)
    return PlainProgress(total, desc, file)


def _a_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed file
        return False
