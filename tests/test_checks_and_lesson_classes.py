"""A check grades what a learner writes in the lesson, where the lesson's own classes stand, not the package's.

Lesson 01 writes its own `class Tool(ABC)`, and its exercise says `class QueryLogisticsTool(Tool)`; a check that
asked for `isinstance(tool, tinyagent.Tool)` passed the solutions notebook (which imports the package's Tool) and
failed every learner. `benchmarks/solutions_in_lessons.py` runs each lesson with the solutions typed in to find such
a check; this test is its quick part: no check asks isinstance or issubclass of a class its lesson defines itself.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def classes_the_lesson_defines(lesson: Path) -> set[str]:
    names = set()
    for cell in json.loads(lesson.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "code":
            continue
        # IPython's magics and shell lines are no Python; the class statements are.
        source = "\n".join(line for line in "".join(cell["source"]).splitlines()
                           if not line.lstrip().startswith(("%", "!")))
        names.update(node.name for node in ast.parse(source).body if isinstance(node, ast.ClassDef))
    return names


def type_tests(check_module: Path) -> list[tuple[int, str, str]]:
    """(line, call, the class's own name) for each isinstance/issubclass on a class by name, an import's alias
    read back to the name it imports (`from tinyagent.tools import Tool as PackageTool` is Tool)."""
    tree = ast.parse(check_module.read_text(encoding="utf-8"))
    imported = {alias.asname or alias.name: alias.name for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) for alias in node.names}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("isinstance", "issubclass") and len(node.args) == 2:
            kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
            found += [(node.lineno, ast.unparse(node), imported.get(kind.id, kind.id))
                      for kind in kinds if isinstance(kind, ast.Name)]
    return found


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda path: path.stem)
def test_no_check_asks_for_the_package_class_where_the_lesson_wrote_its_own(lesson):
    own = classes_the_lesson_defines(lesson)
    checks = list((ROOT / "tinyagent" / "checks").glob(f"lesson{lesson.name[:2]}_*.py"))
    assert len(checks) == 1, checks
    tied = [f"{checks[0].name}:{line}: {call}" for line, call, name in type_tests(checks[0]) if name in own]
    assert not tied, (f"{lesson.name} defines its own {sorted(own)}; a learner's answer is built on those, so these "
                      f"checks fail every learner: {tied}")


def test_the_guard_sees_lesson_01s_old_check(tmp_path):
    # The check as it was before b12de38: the test above must have failed on it.
    old = tmp_path / "lesson01_tools.py"
    old.write_text("from tinyagent.tools import Tool as PackageTool\n\n"
                   "def check(tool):\n    if not isinstance(tool, PackageTool):\n        raise ValueError\n")
    own = classes_the_lesson_defines(ROOT / "notebooks" / "01_tools.ipynb")
    assert "Tool" in own
    assert [name for _, _, name in type_tests(old) if name in own] == ["Tool"]
