"""What the lessons print of the package's source: public code only, and little of it (issue 35).

A lesson that prints a private helper breaks when the helper is renamed, and teaches what nobody calls; a lesson
that prints pages of source is a wall a learner scrolls past. Where a lesson shows how a part works, it prints the
part's public method, or draws it."""

from __future__ import annotations

import ast
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "notebooks" / "solutions").glob("*.ipynb"))
MOST_PRINTED_LINES = 400  # in the whole course


def code_cells(path: Path) -> list[dict]:
    return [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]


def getsource_targets(source: str) -> list[str]:
    """The dotted names a cell passes to `inspect.getsource` (`getsource(X.y)` gives "X.y")."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a cell of IPython magic: no getsource in any of the course's
        return []
    targets = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "getsource":
            targets.append(ast.unparse(node.args[0]) if node.args else "")
    return targets


def printed_lines(cell: dict) -> int:
    return sum(len("".join(o.get("text", "")).splitlines()) for o in cell.get("outputs", ())
               if o.get("output_type") == "stream")


def test_no_lesson_prints_the_source_of_a_private_name():
    private = [(str(path.relative_to(ROOT)), target) for path in LESSONS for cell in code_cells(path)
               for target in getsource_targets("".join(cell["source"]))
               if any(part.startswith("_") and not (part.startswith("__") and part.endswith("__"))
                      for part in target.split("."))]  # a dunder (__call__) is public: how a part is called
    assert not private, private


def test_the_course_prints_at_most_400_lines_of_package_source():
    per_lesson = {str(path.relative_to(ROOT)): sum(printed_lines(cell) for cell in code_cells(path)
                                 if getsource_targets("".join(cell["source"])))
                  for path in LESSONS}
    assert sum(per_lesson.values()) <= MOST_PRINTED_LINES, {k: v for k, v in per_lesson.items() if v}


def test_the_checks_here_see_a_private_name_and_count_lines():
    assert getsource_targets("import inspect\nprint(inspect.getsource(AgentService._run))") == ["AgentService._run"]
    assert getsource_targets("from inspect import getsource\ngetsource(chunking._cut)") == ["chunking._cut"]
    assert getsource_targets("print(inspect.getsource(StreamedSend.__call__))") == ["StreamedSend.__call__"]
    assert printed_lines({"outputs": [{"output_type": "stream", "text": ["a\n", "b\n"]}]}) == 2
