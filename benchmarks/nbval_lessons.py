"""Wall time of nbval over lessons 00-06 in one serial pytest run, strict and offline as in CI.

    .venv/bin/python benchmarks/nbval_lessons.py

Target on the 2-core course machine: under 45 s for the seven notebooks. The time includes pytest's
start-up (about 3 s, importing nbval and Jupyter) and one fresh kernel per notebook.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tinyagent.command_options import OneLineParser

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    OneLineParser(description=__doc__.splitlines()[0]).parse_args()  # no options: --help, or a typo refused
    lessons = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "notebooks").glob("0[0-6]_*.ipynb"))
    env = {**os.environ, "TINYAGENT_OFFLINE": "1"}
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *lessons],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - began
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "(no output)"
    print(f"nbval over {len(lessons)} lessons: {wall:.1f} s wall   (target < 45 s)")
    print(f"  pytest: {summary}")
    if done.returncode:
        print(done.stdout[-3000:], done.stderr[-2000:], sep="\n")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
