"""Each lesson run the ways a learner runs it besides "Restart and Run All" on a good setup. Not a timing: a list
of what broke.

    .venv/bin/python benchmarks/lesson_probes.py out-of-reach [NN ...]
    .venv/bin/python benchmarks/lesson_probes.py twice [NN ...]
    .venv/bin/python benchmarks/lesson_probes.py any-day "2028-02-29 23:59:50+00:00" [NN ...]
    .venv/bin/python benchmarks/lesson_probes.py in-a-browser [NN ...]

out-of-reach  a `.env` that points at nothing: TINYAGENT_API_URL at a closed port (127.0.0.1:9), a made-up key and
              model, TINYAGENT_OFFLINE unset. A lesson that calls the model itself should stop at that call with
              the client's one-line error; every other lesson should run to the end, its runs ending `llm_error`.
              Printed: each lesson's errors, cell by cell (the first of a cascade of NameErrors is the one to read).
twice         Run All, then Run All again in the same kernel (offline): a learner who edits an exercise and runs
              everything again. Printed: errors in the second pass, and cells whose output differs from the first
              pass (ports and temporary paths masked as nbval's sanitizing does; NBVAL_IGNORE_OUTPUT cells, stderr
              and the classroom model's notice, which print once a process, left out).
any-day       nbval, strict, on every notebook and solution (offline), with the kernels' clock moved to the given
              moment and ticking from there: the course promises its notebooks pass on any day. Needs the
              `time-machine` package (`.venv/bin/pip install time-machine`; not a dependency of the course), started
              in each Python process by a `sitecustomize.py` this script writes to a temporary folder on PYTHONPATH.
              (libfaketime, the usual tool, hangs the kernel's start here.)
in-a-browser  each lesson opened in JupyterLab in Chromium (the browser tests' tests/browser/lab.py, offline), its
              stored outputs cleared, then Run All from the menu, as a learner does. Printed: error outputs, widgets
              JupyterLab could not draw ("Error displaying widget", or still "Loading widget..."), errors in the
              browser's console and requests that failed (HTTP 400 and above, a missing image for one).

Measured results are in docs/benchmarks.md ("A model out of reach", "Run All twice, and on other days", "Run All in a
browser") and in the notes of the session that ran them.
"""

from __future__ import annotations

import configparser
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from run_all import lesson_notebooks  # this folder is on sys.path when a script here runs

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
OUT_OF_REACH = {"TINYAGENT_API_URL": "http://127.0.0.1:9/v1", "TINYAGENT_API_KEY": "sk-made-up",
                "TINYAGENT_MODEL": "made-up-model"}
ONCE_A_PROCESS = "[tinyagent] Using the offline classroom model"
SITECUSTOMIZE = """import os
if os.environ.get("LESSON_PROBES_DAY"):
    import time_machine
    time_machine.travel(os.environ["LESSON_PROBES_DAY"], tick=True).start()
"""


def fail(message: str) -> None:
    """Bad input: one line, exit code 2."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def nbval_sanitizing() -> list[tuple[re.Pattern, str]]:
    """The course's nbval sanitizing rules (tests/nbval-sanitize.cfg: loopback ports, temporary paths), read from
    that file, so this script masks what nbval masks."""
    rules = configparser.ConfigParser(interpolation=None)
    rules.read(ROOT / "tests" / "nbval-sanitize.cfg", encoding="utf-8")
    return [(re.compile(rules[name]["regex"]), rules[name]["replace"]) for name in rules.sections()]


SANITIZING = nbval_sanitizing()


def masked(text: str) -> str:
    """Output text as nbval compares it."""
    for pattern, replacement in SANITIZING:
        text = pattern.sub(replacement, text)
    return text


def cell_text(cell) -> str:
    """What a cell showed, without what prints once a process by design: the classroom model's notice
    (settings.py) and anything on stderr (a Python warning is shown once)."""
    text = "".join(output.get("text", "") or str(output.get("data", {}).get("text/plain", ""))
                   for output in cell.get("outputs", []) if output.get("name") != "stderr")
    return masked("".join(line for line in text.splitlines(keepends=True) if not line.startswith(ONCE_A_PROCESS)))


def cell_errors(notebook) -> list[str]:
    """Each error output as one line: the cell's index, the exception's name and its message (colours removed)."""
    colour = re.compile(r"\x1b\[[0-9;]*m")
    return [f"cell {index}: {output.ename}: {colour.sub('', output.evalue)[:160]}"
            for index, cell in enumerate(notebook.cells) if cell.cell_type == "code"
            for output in cell.get("outputs", []) if output.output_type == "error"]


def run_all(client: NotebookClient, notebook) -> None:
    for index, cell in enumerate(notebook.cells):
        client.execute_cell(cell, index)


def client_for(notebook) -> NotebookClient:
    return NotebookClient(notebook, timeout=900, kernel_name="python3", allow_errors=True,
                          resources={"metadata": {"path": str(NOTEBOOKS)}})


def out_of_reach(paths: list[Path]) -> int:
    os.environ.pop("TINYAGENT_OFFLINE", None)
    os.environ.update(OUT_OF_REACH)  # the kernels inherit this process's environment
    for path in paths:
        notebook = nbformat.read(path, as_version=4)
        client = client_for(notebook)
        with client.setup_kernel():
            run_all(client, notebook)
        errors = cell_errors(notebook)
        print(f"{path.stem}: {len(errors)} errors", *(f"    {line}" for line in errors[:4]), sep="\n", flush=True)
    return 0


def twice(paths: list[Path]) -> int:
    os.environ["TINYAGENT_OFFLINE"] = "1"
    broken = 0
    for path in paths:
        notebook = nbformat.read(path, as_version=4)
        client = client_for(notebook)
        with client.setup_kernel():
            run_all(client, notebook)
            first = [cell_text(cell) for cell in notebook.cells]
            run_all(client, notebook)
        errors = cell_errors(notebook)
        differ = [index for index, cell in enumerate(notebook.cells)
                  if cell.cell_type == "code" and cell_text(cell) != first[index]
                  and "NBVAL_IGNORE_OUTPUT" not in cell.source]
        broken += bool(errors or differ)
        print(f"{path.stem}: {len(errors)} errors in the second pass; outputs that differ: cells {differ or 'none'}",
              *(f"    {line}" for line in errors[:4]), sep="\n", flush=True)
    return 1 if broken else 0


def moment(text: str) -> str:
    """any-day's MOMENT, checked here: a bad one would fail only inside each kernel's sitecustomize, which Python
    reports and goes on from, so nbval would run on today's clock and report passes."""
    try:
        datetime.fromisoformat(text)
    except ValueError:
        fail(f"any-day needs an ISO date-time such as 2028-02-29 23:59:50+00:00, got {text!r}")
    return text


def any_day(moment: str, paths: list[Path]) -> int:
    try:
        import time_machine  # noqa: F401 - only to say early that it is missing
    except ImportError:
        fail("any-day needs time-machine: .venv/bin/pip install time-machine")
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
        env = {**os.environ, "TINYAGENT_OFFLINE": "1", "LESSON_PROBES_DAY": moment,
               "PYTHONPATH": os.pathsep.join(filter(None, [folder, os.environ.get("PYTHONPATH")]))}
        solutions = [NOTEBOOKS / "solutions" / path.name for path in paths
                     if (NOTEBOOKS / "solutions" / path.name).exists()]
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadfile",
                   "--nbval", *map(str, paths + solutions)]
        return subprocess.run(command, cwd=ROOT, env=env, check=False).returncode


def run_all_in_the_browser(notebook, timeout: float = 900.0) -> None:
    """Run All from the menu, then wait for every cell to have run, or for an error (Run All stops there)."""
    notebook.menu("Run", "runmenu:run-all")
    prompts = notebook.panel.locator(".jp-CodeCell .jp-InputArea-prompt")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        texts = [text.strip() for text in prompts.all_inner_texts()]
        if all(re.fullmatch(r"\[\d+\]:", text) for text in texts) or notebook.error_outputs():
            notebook.wait_until_idle(timeout=max(deadline - time.monotonic(), 1))
            return
        time.sleep(0.2)
    raise TimeoutError(f"cells still running after {timeout:g} s")


def browser_findings(lab, browser, path: Path) -> list[str]:
    """One lesson in a new tab: what went wrong while it was opened, cleared and run."""
    from playwright.sync_api import Error as PlaywrightError

    from tests.browser.lab import Notebook

    page = browser.context.new_page()
    found: list[str] = []
    page.on("console", lambda message: message.type == "error" and found.append(f"console: {message.text}"))
    page.on("pageerror", lambda error: found.append(f"page error: {error}"))
    page.on("response", lambda response: response.status >= 400 and found.append(
        f"HTTP {response.status}: {response.url.split('?')[0]}"))
    page.goto(lab.url_for(path.name))
    notebook = Notebook(page)
    try:
        notebook.wait_until_idle(timeout=120)
        notebook.clear_outputs()
        run_all_in_the_browser(notebook)
    except (TimeoutError, PlaywrightError) as error:  # this lesson's finding; the next lesson still runs
        found.append(f"Run All: {type(error).__name__}: {error}")
    errors = dict.fromkeys(notebook.error_outputs())  # an error output is found both by its class and its text
    found += [f"error output: {text.strip().splitlines()[-1] if text.strip() else text}"[:200] for text in errors]
    found += [f"widget not drawn: {text[:160]}" for text in notebook.output_texts()
              if "Error displaying widget" in text or "Loading widget" in text]
    lab.delete_sessions()
    page.close()
    return found


def in_a_browser(paths: list[Path]) -> int:
    sys.path.insert(0, str(ROOT))
    from tests.browser.lab import Browser, JupyterLab, browser_missing

    if browser_missing():
        fail(f"in-a-browser: {browser_missing()}")
    broken = 0
    with JupyterLab(paths, timeout=120) as lab, Browser() as browser:
        for folder in ("data", "images"):  # what the lessons read and show beside them
            shutil.copytree(NOTEBOOKS / folder, lab.root / folder)
        for path in paths:
            found = browser_findings(lab, browser, path)
            broken += bool(found)
            print(f"{path.stem}: {len(found)} findings", *(f"    {line}" for line in found[:6]), sep="\n", flush=True)
    return 1 if broken else 0


def main(argv: list[str]) -> int:
    modes = ("out-of-reach", "twice", "any-day", "in-a-browser")
    if argv[:1] in (["-h"], ["--help"]):
        print(f"usage: lesson_probes.py {{{','.join(modes)}}} [NN ...]\n\n{__doc__}")
        return 0
    if not argv or argv[0] not in modes or (argv[0] == "any-day" and len(argv) < 2):
        got = " ".join(argv) or "nothing"
        print(f"error: the first argument is a probe, one of {', '.join(modes)} (any-day then a moment); got {got!r} "
              "(see lesson_probes.py --help)", file=sys.stderr)
        return 2
    if argv[0] == "any-day":
        return any_day(moment(argv[1]), lesson_notebooks(argv[2:]))
    probe = {"out-of-reach": out_of_reach, "twice": twice, "in-a-browser": in_a_browser}[argv[0]]
    return probe(lesson_notebooks(argv[1:]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
