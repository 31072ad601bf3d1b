"""What a learner waits for after Run All: each lesson executed top to bottom in a fresh kernel, on the classroom model.

    .venv/bin/python benchmarks/run_all.py [NN ...]        # every lesson, or those whose numbers are given

Runs `jupyter nbconvert --execute` on each `notebooks/NN_*.ipynb` (the appendix too), one after the other, offline,
writing the executed copy to a temporary folder (the committed notebooks are not touched), and prints a Markdown
table of the wall times: the kernel's start included, as a learner's Restart and Run All has it. The load average is
printed before and after: on a busy machine every time grows.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tinyagent.command_options import OneLineParser

ROOT = Path(__file__).resolve().parent.parent
LIMIT_S = 20.0  # issue 40: no lesson's Run All over this on the classroom model, or a reason given


def lesson_notebooks(numbers: list[str]) -> list[Path]:
    """The lessons whose numbers are given (`06`, `A1`), or every lesson; a number no lesson has is one line and exit
    code 2 (a typo must not quietly run the other lessons only)."""
    lessons = sorted((ROOT / "notebooks").glob("[0-9A]*_*.ipynb"))
    known = [path.name.split("_")[0] for path in lessons]
    unknown = [number for number in numbers if number not in known]
    if unknown:
        print(f"error: no lesson numbered {', '.join(unknown)} in notebooks/: the lessons are {', '.join(known)}",
              file=sys.stderr)
        raise SystemExit(2)
    return [path for path in lessons if not numbers or path.name.split("_")[0] in numbers]


def main(argv: list[str]) -> int:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("lessons", nargs="*", metavar="NN", help="lesson numbers, e.g. 06 A1 (default: every lesson)")
    lessons = lesson_notebooks(parser.parse_args(argv).lessons)
    env = {**os.environ, "TINYAGENT_OFFLINE": "1"}
    print(f"load average {os.getloadavg()[0]:.1f} before")
    print("| lesson | Run All, fresh kernel |\n| --- | --- |")
    failed = False
    with tempfile.TemporaryDirectory() as out:
        for lesson in lessons:
            began = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute", "--output-dir", out,
                 str(lesson)], cwd=ROOT, env=env, capture_output=True, text=True, check=False)
            wall = time.perf_counter() - began
            mark = "" if done.returncode == 0 else " (failed)"
            flag = " (over 20 s)" if wall > LIMIT_S else ""
            print(f"| {lesson.stem} | {wall:.1f} s{flag}{mark} |", flush=True)
            failed = failed or bool(done.returncode)
    print(f"load average {os.getloadavg()[0]:.1f} after")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
