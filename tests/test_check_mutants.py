"""benchmarks/check_mutants.py: the mutants it makes of a definition, and its run on two lessons whose checks
fail every mutant (docs/benchmarks.md, "Exercise checks against mutants")."""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "check_mutants.py"


def load_script():
    spec = importlib.util.spec_from_file_location("check_mutants", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_mutants_of_a_definition_are_one_edit_each():
    script = load_script()
    tree = ast.parse("def is_observation(line):\n    return line.strip().startswith('Observation:') and len(line) < 80\n")
    mutants = {ast.unparse(script.mutant(tree, k)).splitlines()[1].strip()
               for k in range(len(script.sites(tree)))}
    for expected in (
        "return line.startswith('Observation:') and len(line) < 80",  # strip() left out
        "return line.lstrip().startswith('Observation:') and len(line) < 80",
        "return line.strip().endswith('Observation:') and len(line) < 80",
        "return line.strip().startswith('Observation') and len(line) < 80",  # the key without its colon
        "return line.strip().startswith('observation:') and len(line) < 80",
        "return line.strip().startswith('Observation:') or len(line) < 80",
        "return line.strip().startswith('Observation:') and len(line) <= 80",
        "return line.strip().startswith('Observation:') and len(line) < 81",
    ):
        assert expected in mutants, expected
    original = ast.unparse(tree)
    assert original not in {ast.unparse(script.mutant(tree, k)) for k in range(len(script.sites(tree)))}
    assert ast.unparse(tree) == original  # each mutant is made on a copy


def test_lessons_12_and_24_fail_every_mutant_of_their_solutions():
    done = subprocess.run([sys.executable, str(SCRIPT), "12", "24"], capture_output=True, text=True, timeout=600,
                          check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1].endswith(", 0 passed"), done.stdout
    # a line for each definition a check is given, and for each helper of the notebook's it uses (lesson 24's
    # part_text), each with every mutant killed
    counts = [re.search(r": (\d+) mutants, (\d+) killed$", line) for line in lines[:-1]]
    assert len(lines) >= 5 and all(count and count[1] == count[2] for count in counts), done.stdout
    assert "24_mcp check_merged_names merge: " in done.stdout


def test_a_value_written_out_as_the_answer_is_mutated_too():
    # Lesson 20's exercise 2 and lesson 23's exercise 1 are given a dict and a grammar, not a function: they had
    # no mutants at all, so a run said nothing of those checks.
    done = subprocess.run([sys.executable, str(SCRIPT), "20", "23"], capture_output=True, text=True, timeout=600,
                          check=False)
    assert done.returncode == 0, done.stderr
    for line in ("20_frameworks check_part_lessons part_lessons: ",
                 "23_constrained_decoding check_tracking_grammar tracking_grammar: "):
        assert line in done.stdout, done.stdout
    made = re.search(r"check_part_lessons part_lessons: (\d+) mutants", done.stdout)
    assert int(made.group(1)) >= 16, done.stdout  # each of the eight lesson numbers one up and one down, at least


def test_an_unknown_lesson_is_a_one_line_error():
    done = subprocess.run([sys.executable, str(SCRIPT), "99"], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("error: no solutions notebook for lessons 99: there are 00, 01, 02,")
    assert done.stderr.endswith(", 25\n") and done.stderr.count("\n") == 1  # one line, naming the lessons there are
