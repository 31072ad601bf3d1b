"""Each lesson run with the solutions' answers typed into its own exercise cells: does every check pass there?

    .venv/bin/python benchmarks/solutions_in_lessons.py                       # every lesson with exercises
    .venv/bin/python benchmarks/solutions_in_lessons.py --lesson notebooks/01_tools.ipynb [--lesson ...]
    .venv/bin/python benchmarks/solutions_in_lessons.py --jobs 2              # two lessons at once (2 cores: at most)
    .venv/bin/python benchmarks/solutions_in_lessons.py --show                # print the answers typed in, run nothing
    .venv/bin/python benchmarks/solutions_in_lessons.py --keep /tmp/executed  # keep each executed copy there

The tests run the solutions notebooks, which import the package's classes in their first cell; a learner answers in
the lesson, beside the lesson's own classes (lesson 01 defines its own `Tool`). A check tied to the package's class
(`isinstance(tool, tinyagent.Tool)`) passes every solution and fails every learner. This script is the learner's
side: for each lesson `notebooks/NN_*.ipynb` it makes a copy in which each exercise's answer cell (the `name = None
# replace with ...` cell before a `check_*(...)` cell) holds the solution's answer as a learner would type it there:

- the answer: the statements before the check call in the solution's cell that calls the same check, or, when that
  cell holds only the call (and an import from tinyagent.checks), the solution's code cell before it. What follows
  the check call is the solution's own demonstration, not the answer, and is left out;
- above it, only the lines of the solution's setup cells (its code cells before the first answer) that the answer
  needs, directly or through another such line, and that define no name the lesson defined earlier: the lesson's
  `class Tool` stays, so `from tinyagent import Tool` is dropped; `import re` is kept when the lesson has no `re`.

Then it runs the copy top to bottom in a fresh kernel (nbclient, TINYAGENT_OFFLINE=1, 600 s a cell, errors allowed,
the kernel's folder notebooks/ as for the lesson) and reads each check cell's output: passed when the check printed
"...: passed." (tinyagent/checks/reporting.py, `_passed`); FAILED when it raised ExerciseFailed or said "not attempted
yet"; ERROR for any other exception, in the check cell or in the answer cell. A name the answer uses that neither the
lesson (before the answer) nor the solution's setup defines is printed under the table: the solution depends on
something the learner's notebook does not have. Exit code 1 when any exercise did not pass.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import os
import re
import symtable
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from IPython.core.inputtransformer2 import TransformerManager
from nbclient import NotebookClient

from tinyagent.command_options import OneLineParser, whole_number

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
SOLUTIONS = NOTEBOOKS / "solutions"
CELL_TIMEOUT_S = 600
# What every kernel has without a definition: Python's builtins and what IPython adds to the user's namespace.
ALWAYS_THERE = set(dir(builtins)) | {"get_ipython", "display", "In", "Out", "_", "__", "___", "exit", "quit"}
PLACEHOLDER = re.compile(r"^\s*\w+\s*=\s*None\b")
COLOUR = re.compile(r"\x1b\[[0-9;]*m")


# -- names a piece of code defines and reads ------------------------------------------------------------------------
def python_of(source: str) -> str:
    """A cell's source as Python: IPython's magics (`%time`, `!pip`) become the calls IPython makes of them."""
    return TransformerManager().transform_cell(source)


def bound_names(statements: list[ast.stmt]) -> set[str]:
    """The names these top-level statements bind in the notebook's namespace: assignment and loop targets, `def`,
    `class`, imports, `with ... as`, `except ... as`; not the names bound inside a function or class body."""
    names: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            return  # its body's names are its own
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        for child in ast.iter_child_nodes(node):
            visit(child)

    for statement in statements:
        visit(statement)
    return names


def touched_names(statement: ast.stmt) -> set[str]:
    """Names a top-level statement changes without binding them: `headers["x"] = ...`, `shop.clock = ...`,
    `found.append(...)`. A line that changes a name the answer needs is part of the answer's setup."""
    touched = set()
    for node in ast.walk(statement):
        targets = []
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            targets = [node.value.func]
        for target in targets:
            while isinstance(target, (ast.Attribute, ast.Subscript)):
                target = target.value
                if isinstance(target, ast.Name):
                    touched.add(target.id)
    return touched


def read_names(source: str) -> set[str]:
    """The global names `source` reads (in its top level, or in the functions and classes it defines) that it does
    not bind itself: what must already be defined when it runs."""
    table = symtable.symtable(source, "<cell>", "exec")
    reads: set[str] = set()

    def visit(scope: symtable.SymbolTable) -> None:
        for symbol in scope.get_symbols():
            if symbol.is_referenced() and (symbol.is_global() or scope.get_type() == "module"):
                reads.add(symbol.get_name())
        for child in scope.get_children():
            visit(child)

    visit(table)
    return reads - bound_names(ast.parse(source).body) - ALWAYS_THERE


def lines_of(source: str, statement: ast.stmt) -> str:
    """The source lines of a top-level statement, its decorators and comments inside it included."""
    first = min([statement.lineno, *(d.lineno for d in getattr(statement, "decorator_list", []))])
    return "\n".join(source.splitlines()[first - 1 : statement.end_lineno])


def check_calls(tree: ast.Module) -> list[ast.Expr]:
    """The top-level `check_*(...)` calls of a cell."""
    return [statement for statement in tree.body if isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Call) and isinstance(statement.value.func, ast.Name)
            and statement.value.func.id.startswith("check_")]


def imports_checks_only(statements: list[ast.stmt]) -> bool:
    return all(isinstance(s, ast.ImportFrom) and (s.module or "").startswith("tinyagent.checks") for s in statements)


# -- the solutions notebook: each exercise's answer, and the setup before the first -------------------------------
@dataclass
class Solution:
    setup: list[tuple[ast.stmt, str]]  # each setup statement and its source lines
    answers: dict[str, str]  # check function name -> the answer's source


def read_solution(path: Path) -> Solution:
    cells = [cell.source for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code"]
    answers: dict[str, str] = {}
    first_answer = len(cells)
    for index, source in enumerate(cells):
        tree = ast.parse(source)
        calls = check_calls(tree)
        if not calls:
            continue
        before = [s for s in tree.body if s.lineno < calls[0].lineno]
        if imports_checks_only(before) and index > 0:  # the check has a cell of its own: the answer is the cell before
            answer_index, answer = index - 1, cells[index - 1]
        else:
            answer_index, answer = index, "\n".join(source.splitlines()[: calls[0].lineno - 1])
        for call in calls:
            answers[call.value.func.id] = answer.strip()
        first_answer = min(first_answer, answer_index)
    setup = []
    for source in cells[:first_answer]:
        setup += [(statement, lines_of(source, statement)) for statement in ast.parse(source).body]
    return Solution(setup, answers)


def setup_for(answer: str, setup: list[tuple[ast.stmt, str]], lesson_has: set[str]) -> tuple[list[str], set[str]]:
    """The setup lines `answer` needs and that define nothing the lesson has, in their order, and the names the answer
    needs that neither the lesson nor the kept lines define. Walked backwards, so a kept line's own needs are
    looked for in the lines above it."""
    needed = read_names(answer) - lesson_has
    kept: list[str] = []
    for statement, source in reversed(setup):
        if isinstance(statement, ast.ImportFrom):  # one name of an import can be needed, another the lesson's
            aliases = [a for a in statement.names if (a.asname or a.name) in needed - lesson_has]
            if aliases:
                kept.append(ast.unparse(ast.ImportFrom(statement.module, aliases, statement.level)))
                needed -= {a.asname or a.name for a in aliases}
            continue
        binds = bound_names([statement])
        if not (binds | touched_names(statement)) & (needed - lesson_has) or binds & lesson_has:
            continue  # not needed, or it would replace what the lesson defined
        kept.append(source)
        needed = (needed - binds) | (read_names(source) - lesson_has)
    return kept[::-1], needed - lesson_has


# -- the lesson with the answers typed in -------------------------------------------------------------------------
@dataclass
class Exercise:
    checks: list[str]  # the check functions its check cell calls
    answer_cell: int
    check_cell: int
    missing: set[str] = field(default_factory=set)  # names the answer needs that nothing defines
    problem: str = ""  # why no answer could be typed in (then the lesson's placeholder stays)


def with_answers(lesson: Path) -> tuple[nbformat.NotebookNode, list[Exercise]]:
    """A copy of `lesson` whose answer cells hold the solution's answers, and its exercises."""
    notebook = nbformat.read(lesson, as_version=4)
    solution = read_solution(SOLUTIONS / lesson.name) if (SOLUTIONS / lesson.name).exists() else None
    exercises: list[Exercise] = []
    lesson_has: set[str] = set()
    code = [index for index, cell in enumerate(notebook.cells) if cell.cell_type == "code"]
    for position, index in enumerate(code):
        tree = ast.parse(python_of(notebook.cells[index].source))
        calls = check_calls(tree)
        if calls and position > 0:
            answer_index = code[position - 1]
            exercise = Exercise([call.value.func.id for call in calls], answer_index, index)
            exercises.append(exercise)
            placeholder = notebook.cells[answer_index].source
            answer = solution.answers.get(exercise.checks[0]) if solution else None
            if not all(PLACEHOLDER.match(line) for line in placeholder.splitlines() if line.strip()):
                exercise.problem = "the cell before the check cell is not a `name = None  # ...` answer cell"
            elif answer is None:
                exercise.problem = f"no cell of {SOLUTIONS.name}/{lesson.name} calls {exercise.checks[0]}"
            else:
                # the placeholder's names were bound by the cell being replaced, not by the lesson
                lesson_has -= bound_names(ast.parse(placeholder).body)
                setup, exercise.missing = setup_for(answer, solution.setup, lesson_has)
                notebook.cells[answer_index].source = "\n".join(setup) + "\n\n\n" + answer if setup else answer
                lesson_has |= bound_names(ast.parse(notebook.cells[answer_index].source).body)
        lesson_has |= bound_names(tree.body)
    return notebook, exercises


# -- running it and reading the checks --------------------------------------------------------------------------
@dataclass
class Row:
    exercise: str
    verdict: str  # passed, FAILED or ERROR
    detail: str = ""


def text_of(cell: nbformat.NotebookNode) -> str:
    return "".join(output.get("text", "") for output in cell.get("outputs", []) if output.output_type == "stream")


def error_of(cell: nbformat.NotebookNode) -> nbformat.NotebookNode | None:
    return next((output for output in cell.get("outputs", []) if output.output_type == "error"), None)


def first_lines(text: str, count: int = 3) -> str:
    return " / ".join(line.strip() for line in COLOUR.sub("", text).splitlines()[:count] if line.strip())


def verdict(notebook: nbformat.NotebookNode, exercise: Exercise) -> Row:
    """What the check cell said, and what the answer cell raised if it did."""
    name = ", ".join(exercise.checks)
    if exercise.problem:
        return Row(name, "ERROR", f"not run: {exercise.problem}")
    answer_error = error_of(notebook.cells[exercise.answer_cell])
    check_error = error_of(notebook.cells[exercise.check_cell])
    said = text_of(notebook.cells[exercise.check_cell])
    if check_error is not None and check_error.ename == "ExerciseFailed":
        row = Row(name, "FAILED", first_lines(check_error.evalue))
    elif check_error is not None:
        row = Row(name, "ERROR", f"{check_error.ename}: {first_lines(check_error.evalue)}")
    elif "not attempted yet" in said:
        row = Row(name, "FAILED", first_lines(said))
    elif len(re.findall(r"^.+?: passed\.", said, re.MULTILINE)) >= len(exercise.checks):
        row = Row(name, "passed")
    else:
        row = Row(name, "ERROR", f"the check printed no verdict: {first_lines(said) or '(nothing)'}")
    if answer_error is not None:
        raised = f"the answer cell raised {answer_error.ename}: {first_lines(answer_error.evalue, 1)}"
        row = Row(name, "ERROR" if row.verdict == "passed" else row.verdict, "; ".join(filter(None, [raised, row.detail])))
    return row


@dataclass
class LessonResult:
    lesson: str
    rows: list[Row]
    seconds: float
    missing: list[str]  # one line per answer that needs a name nothing defines
    other_errors: list[str]  # errors in the lesson's own cells


def run_lesson(lesson: Path, keep: Path | None) -> LessonResult:
    notebook, exercises = with_answers(lesson)
    missing = [f"{', '.join(e.checks)} needs {', '.join(sorted(e.missing))}" for e in exercises if e.missing]
    began = time.perf_counter()
    NotebookClient(notebook, timeout=CELL_TIMEOUT_S, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    seconds = time.perf_counter() - began
    if keep is not None:
        nbformat.write(notebook, keep / lesson.name)
    ours = {cell for e in exercises for cell in (e.answer_cell, e.check_cell)}
    other_errors = [f"cell {index}: {error.ename}: {first_lines(error.evalue, 1)[:160]}"
                    for index, cell in enumerate(notebook.cells)
                    if index not in ours and (error := error_of(cell)) is not None]
    return LessonResult(lesson.stem, [verdict(notebook, e) for e in exercises], seconds, missing, other_errors)


def show(lesson: Path) -> None:
    notebook, exercises = with_answers(lesson)
    for exercise in exercises:
        print(f"===== {lesson.stem}, cell {exercise.answer_cell}, for {', '.join(exercise.checks)}")
        print(exercise.problem or notebook.cells[exercise.answer_cell].source)
        if exercise.missing:
            print(f"----- needs what nothing defines: {', '.join(sorted(exercise.missing))}")


def lesson_path(text: str) -> Path:
    path = (Path.cwd() / text).resolve()
    if path.parent != NOTEBOOKS or not re.fullmatch(r"[0-9A]\w*_\w+\.ipynb", path.name) or not path.exists():
        raise argparse.ArgumentTypeError(f"--lesson must be a lesson notebook such as notebooks/01_tools.ipynb, got {text!r}")
    return path


def has_exercises(lesson: Path) -> bool:
    return any(check_calls(ast.parse(python_of(cell.source))) for cell in nbformat.read(lesson, as_version=4).cells
               if cell.cell_type == "code")


def main(argv: list[str]) -> int:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lesson", action="append", type=lesson_path, default=[], metavar="PATH",
                        help="a lesson notebook, e.g. notebooks/01_tools.ipynb (repeatable; default: every lesson)")
    parser.add_argument("--jobs", type=whole_number("--jobs", os.cpu_count() or 1, "one kernel a core at most"),
                        default=1, help="lessons run at once (default 1)")
    parser.add_argument("--show", action="store_true", help="print each answer cell as typed in; run nothing")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="write each executed copy to DIR")
    options = parser.parse_args(argv)
    lessons = sorted(set(options.lesson)) or sorted(NOTEBOOKS.glob("[0-9A]*_*.ipynb"))
    without = [lesson.stem for lesson in lessons if not has_exercises(lesson)]
    lessons = [lesson for lesson in lessons if lesson.stem not in without]
    if not lessons:
        print(f"no exercises in {', '.join(without)}: nothing to run")
        return 0
    if options.show:
        for lesson in lessons:
            show(lesson)
        return 0
    if options.keep is not None:
        options.keep.mkdir(parents=True, exist_ok=True)
    os.environ["TINYAGENT_OFFLINE"] = "1"  # the kernels inherit it: the classroom model, whatever .env says
    if options.jobs > 1:  # two lessons' real-model cells at once share the cores, as the test run's do (conftest.py)
        os.environ.setdefault("TINYAGENT_LOCAL_MODEL_THREADS", "1")
    print(f"load average {os.getloadavg()[0]:.1f} before; no exercises: {', '.join(without) or 'none'}")
    print("| lesson | exercise | verdict | Run All |\n| --- | --- | --- | --- |", flush=True)
    results: list[LessonResult] = []
    with ProcessPoolExecutor(options.jobs) as pool:
        for result in pool.map(run_lesson, lessons, [options.keep] * len(lessons)):
            results.append(result)
            for row in result.rows:
                detail = f": {row.detail}" if row.detail else ""
                print(f"| {result.lesson} | {row.exercise} | {row.verdict}{detail} | {result.seconds:.0f} s |",
                      flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} after")
    for result in results:
        for line in result.missing:
            print(f"{result.lesson}: the answer to {line}, which neither the lesson nor the solution's setup defines")
        for line in result.other_errors:
            print(f"{result.lesson}: error in a lesson cell, {line}")
    bad = sum(row.verdict != "passed" for result in results for row in result.rows)
    total = sum(len(result.rows) for result in results)
    print(f"{total - bad} of {total} exercises passed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
