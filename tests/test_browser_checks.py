"""A failing exercise check in a real browser: JupyterLab shows the learner one short message, no traceback
into the package, and Run All stops at that cell.

A small notebook, written by the test, holds a plausible wrong answer to lesson 04's first exercise (it counts
'Observation:' anywhere, so a Thought that mentions it counts too) and, after it, a cell that must not run.

In CI (the CI environment variable is set) a missing Chromium fails the run; elsewhere these tests are skipped.
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest

from tests.browser.lab import Browser, JupyterLab, Notebook, browser_missing
from tinyagent.checks.reporting import FAILURE_LINES

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"

MISSING = browser_missing()
if MISSING and not os.environ.get("CI"):
    pytest.skip(f"browser tests skipped: {MISSING}", allow_module_level=True)

CELLS = [
    'from tinyagent.checks import check_invented_counter\nprint("ready")',
    ('def count_invented_observations(text):\n    return text.count("Observation:")\n\n'
     "check_invented_counter(count_invented_observations)"),
    'print("this cell ran after the failure")',
]

# How many lines an output's text takes on the screen: its height over the height of one line of the same
# kind of output (the "ready" line above), so lines the browser wraps count too.
LINES_SHOWN = """([output, one]) => {
    const box = (element) => (element.querySelector('pre') || element).getBoundingClientRect().height;
    return Math.round(box(output) / box(one));
}"""


@pytest.fixture()
def notebook_path(tmp_path) -> Path:
    path = tmp_path / "failing_check.ipynb"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in CELLS])
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    nbformat.write(nb, path)
    return path


def test_a_failing_check_shows_a_few_lines_and_stops_run_all(notebook_path):
    if MISSING:
        pytest.fail(f"browser tests need Chromium in CI: {MISSING}", pytrace=False)
    ARTIFACTS.mkdir(exist_ok=True)
    with JupyterLab([notebook_path]) as lab, Browser() as browser:
        page = browser.open(lab.url_for(notebook_path.name))
        try:
            notebook = Notebook(page)
            notebook.wait_until_idle()
            notebook.menu("Run", "runmenu:run-all")
            cells = notebook.panel.locator(".jp-Notebook .jp-CodeCell")
            error = cells.nth(1).locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
            error.wait_for(timeout=120_000)
            notebook.wait_until_idle()
            text = error.inner_text()
            ready = cells.nth(0).locator(".jp-OutputArea-output").first
            shown = page.evaluate(LINES_SHOWN, [error.element_handle(), ready.element_handle()])

            assert text.startswith("ExerciseFailed: Exercise 1: the spec says: a line that mentions `Observation:` in "
                                   "the middle"), text
            assert "Smallest failing input:" in text, text
            assert 1 <= shown <= FAILURE_LINES, f"{shown} lines on screen:\n{text}"
            assert len(text.strip().splitlines()) <= FAILURE_LINES, text
            assert "tinyagent/" not in text and "Traceback" not in text and ".py" not in text, text
            # the cell failed, so Run All stopped: the next cell has no output and no execution count
            assert cells.nth(2).locator(".jp-OutputArea-output").count() == 0
            assert cells.nth(2).locator(".jp-InputArea-prompt").inner_text().strip() in ("[ ]:", "")
        finally:
            page.screenshot(path=ARTIFACTS / "browser-failing-check.png")
