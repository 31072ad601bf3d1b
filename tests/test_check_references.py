"""Every check's reference is its lesson's solution: each solutions notebook's answers, run in this process, agree
with the check's reference on every generated input (the check compares them and records what it tried), and the
table of what each check tries in docs/authoring-notebooks.md is the one the checks make."""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import re
from pathlib import Path

import pytest

from tinyagent import checks
from tinyagent.checks.generated import cases, recording, spec_of, spec_table

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = sorted((ROOT / "notebooks" / "solutions").glob("[0-9][0-9]_*.ipynb"))
CHECK_CALL = re.compile(r"^(check_\w+)\(", re.MULTILINE)


def _code_cells(notebook: Path) -> list[str]:
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]


def _checks_with_rules() -> dict[str, object]:
    found = {}
    for names in checks._LESSONS.values():
        for name in names:
            if name.startswith("check_"):
                spec = spec_of(getattr(checks, name))
                if spec is not None and spec.rules:
                    found[name] = spec
    return found


@pytest.mark.parametrize("notebook", SOLUTIONS, ids=[path.stem[:2] for path in SOLUTIONS])
def test_each_solution_agrees_with_its_checks_reference(notebook, monkeypatch, tmp_path):
    monkeypatch.setenv("TINYAGENT_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)  # a solution that writes a file writes it here
    code = _code_cells(notebook)
    called = [name for source in code for name in CHECK_CALL.findall(source)]
    assert called, f"{notebook.name} calls no check"
    graded = _checks_with_rules()
    out = io.StringIO()
    namespace: dict[str, object] = {"__name__": "__main__"}
    environment = dict(os.environ)
    with recording() as tallies, contextlib.redirect_stdout(out):
        for source in code:
            exec(compile(source, notebook.name, "exec"), namespace)  # noqa: S102 - the course's own solutions
    # The solutions run in this process: nothing they set may leak into the next test.
    changed = {key for key in {*environment, *os.environ} if environment.get(key) != os.environ.get(key)}
    assert not changed, f"{notebook.name} changed the environment: {sorted(changed)}"
    printed = out.getvalue()
    assert printed.count(": passed.") >= len(called), printed
    for name in called:
        if name not in graded:
            continue
        tally = [tally for tally in tallies if tally.check == name]
        assert tally, f"{name} compared nothing with its reference"
        assert all(one.failure is None for one in tally), [one.failure for one in tally]
        assert tally[0].inputs == len(cases(graded[name].rules, name)) > 0


def _solution_answers(notebook: Path) -> list[tuple[str, tuple]]:
    """Run a solutions notebook in this process and return each check call it makes: (check's name, arguments)."""
    code = _code_cells(notebook)
    namespace: dict[str, object] = {"__name__": "__main__"}
    with contextlib.redirect_stdout(io.StringIO()):
        for source in code:
            exec(compile(source, notebook.name, "exec"), namespace)  # noqa: S102 - the course's own solutions
    calls = []
    for source in code:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id.startswith("check_"):
                args = tuple(eval(compile(ast.Expression(arg), notebook.name, "eval"), namespace)
                             for arg in node.args)
                calls.append((node.func.id, args))
    return calls


# Lessons whose exercises answer with a prediction or a value (00, 03, 18) or a class (01, 02, 06, 12): the
# wrappers below wrap a function. Each class answer's check keeps one object across its inputs instead.
NO_FUNCTION_ANSWER = {"00", "01", "02", "03", "06", "12", "18"}


def test_every_check_says_what_it_tries():
    for names in checks._LESSONS.values():
        for name in names:
            if name.startswith("check_"):
                spec = spec_of(getattr(checks, name))
                assert spec is not None and (spec.rules or spec.fixed), f"{name} has no spec: rules or a reason"


def _first_answer_kept(function):
    """A learner's cache that ignores its key: every call gets the first call's answer."""
    kept = []

    def answer(*args, **kwargs):
        if not kept:
            kept.append(function(*args, **kwargs))
        return kept[0]

    return answer


def _one_call_behind(function):
    """State carried between calls the other way: each call returns what the previous call should have."""
    last = []

    def answer(*args, **kwargs):
        now = function(*args, **kwargs)
        last.append(now)
        return last[-2] if len(last) > 1 else now

    return answer


def _changes_its_input(function):
    """Does its work, then changes the list or dict it was given."""

    def answer(*args, **kwargs):
        result = function(*args, **kwargs)
        for arg in args:
            if isinstance(arg, list):
                arg.append(None)
            elif isinstance(arg, dict):
                arg["changed by the answer"] = True
        return result

    return answer


@pytest.mark.parametrize("notebook", SOLUTIONS, ids=[path.stem[:2] for path in SOLUTIONS])
def test_a_solution_made_stateful_fails_its_check(notebook, monkeypatch, tmp_path):
    """Every check that grades a function on generated inputs fails the lesson's own solution once the solution
    keeps state between calls, or changes a list or dict it is given: the kinds no list of known mistakes names."""
    monkeypatch.setenv("TINYAGENT_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    graded = _checks_with_rules()
    tried = 0
    for name, args in _solution_answers(notebook):
        # the learner's function among the check's arguments (a prediction may stand beside it)
        at = next((n for n, arg in enumerate(args) if callable(arg) and not isinstance(arg, type)), None)
        if name not in graded or at is None or any(isinstance(arg, type) for arg in args):
            continue  # a check that grades a class builds its own objects: the wrappers below do not apply
        check = getattr(checks, name)
        mutants = [_first_answer_kept, _one_call_behind]
        if any(isinstance(arg, (list, dict)) for _, given in cases(graded[name].rules, name) for arg in given):
            mutants.append(_changes_its_input)
        for mutant in mutants:
            with pytest.raises(checks.ExerciseFailed), contextlib.redirect_stdout(io.StringIO()):
                check(*args[:at], mutant(args[at]), *args[at + 1:])
            tried += 1
    if not tried:  # these lessons' answers are predictions, values or classes: the checks build their own objects
        assert notebook.stem[:2] in NO_FUNCTION_ANSWER, f"{notebook.stem}: no check tried a stateful solution"


def test_the_table_of_checks_in_the_authoring_notes_is_current():
    notes = (ROOT / "docs" / "authoring-notebooks.md").read_text(encoding="utf-8")
    begin, end = "<!-- checks table: begin -->", "<!-- checks table: end -->"
    assert begin in notes and end in notes
    table = notes.split(begin, 1)[1].split(end, 1)[0].strip()
    made = spec_table()
    assert table == made, ("docs/authoring-notebooks.md's table of checks is out of date; make it with\n"
                           "  .venv/bin/python -c 'from tinyagent.checks.generated import spec_table; "
                           "print(spec_table())'")
