"""Each learner's own copy of the course's notebooks, for a classroom on JupyterHub (deploy/jupyterhub/).

    copy_new_lessons(Path("notebooks"), Path("/home/ada/notebooks"))   # -> the files it copied
    python -m tinyagent.hosting.lesson_copies notebooks /home/ada/notebooks     # the same, from a shell

Run it every time a learner's server starts. A file the learner already has is never touched, whatever
they did to it: only files missing from their folder are copied. So the first start copies the whole
course, a later start adds the lessons the teacher has published since, and a lesson the learner deleted
comes back fresh (the way to start one over). Hidden files and folders (.ipynb_checkpoints, .git, ...) and
__pycache__ are not part of the course and are left out.
"""

from __future__ import annotations

import sys
from pathlib import Path

SKIPPED = "__pycache__"


def course_files(source: Path) -> list[Path]:
    """The course's files under `source`, as paths relative to it, in a stable order."""
    found = []
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if path.is_file() and not any(part.startswith(".") or part == SKIPPED for part in relative.parts):
            found.append(relative)
    return found


def copy_new_lessons(source: Path, dest: Path) -> list[Path]:
    """Copy every course file that `dest` does not have yet; return those copied (relative paths).

    A name in the way (a folder where a file would go, or the other way round) is left alone too.
    """
    source, dest = Path(source), Path(dest)
    if not source.is_dir():
        raise FileNotFoundError(f"the course's notebooks are not at {source} (no such folder)")
    copied = []
    for relative in course_files(source):
        target = dest / relative
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            # "x": create, never replace. Even a file the learner saves at this very moment stays theirs.
            with open(target, "xb") as out:
                try:
                    out.write((source / relative).read_bytes())
                except BaseException:
                    out.close()
                    target.unlink()  # never leave half a notebook behind
                    raise
        except (FileExistsError, IsADirectoryError, NotADirectoryError):
            continue
        copied.append(relative)
    return copied


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0].startswith("-"):
        print("usage: python -m tinyagent.hosting.lesson_copies COURSE_NOTEBOOKS LEARNER_FOLDER", file=sys.stderr)
        return 2
    try:
        copied = copy_new_lessons(Path(args[0]), Path(args[1]))
    except OSError as exc:
        print(f"error: {exc.strerror + ': ' + str(exc.filename) if exc.strerror else exc}", file=sys.stderr)
        return 2
    print(f"{len(copied)} new course file{'s' if len(copied) != 1 else ''} copied to {args[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
