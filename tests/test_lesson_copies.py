"""Each learner's copy of the course (tinyagent/hosting/lesson_copies.py): new files copied, a learner's never touched."""

from __future__ import annotations

import os

import pytest

from tinyagent.hosting.lesson_copies import copy_new_lessons, course_files, main


@pytest.fixture
def course(tmp_path):
    source = tmp_path / "course"
    (source / "solutions").mkdir(parents=True)
    (source / "00_welcome.ipynb").write_text("welcome v1")
    (source / "01_tools.ipynb").write_text("tools v1")
    (source / "solutions" / "01_tools.ipynb").write_text("solution v1")
    (source / ".ipynb_checkpoints").mkdir()
    (source / ".ipynb_checkpoints" / "00_welcome-checkpoint.ipynb").write_text("author's checkpoint")
    (source / "__pycache__").mkdir()
    (source / "__pycache__" / "x.pyc").write_bytes(b"\0")
    return source


def test_first_start_copies_the_whole_course_and_nothing_hidden(course, tmp_path):
    home = tmp_path / "ada" / "notebooks"
    copied = copy_new_lessons(course, home)
    assert [str(p) for p in copied] == ["00_welcome.ipynb", "01_tools.ipynb", os.path.join("solutions", "01_tools.ipynb")]
    assert (home / "solutions" / "01_tools.ipynb").read_text() == "solution v1"
    assert not (home / ".ipynb_checkpoints").exists() and not (home / "__pycache__").exists()


def test_a_learners_edits_survive_a_new_version_of_the_lesson(course, tmp_path):
    home = tmp_path / "ada"
    copy_new_lessons(course, home)
    (home / "01_tools.ipynb").write_text("ada's own work")
    (course / "01_tools.ipynb").write_text("tools v2")  # the teacher updates the lesson
    assert copy_new_lessons(course, home) == []
    assert (home / "01_tools.ipynb").read_text() == "ada's own work"


def test_a_later_lesson_is_added_without_touching_the_old_ones(course, tmp_path):
    home = tmp_path / "ada"
    copy_new_lessons(course, home)
    (home / "00_welcome.ipynb").write_text("ada's notes")
    before = (home / "01_tools.ipynb").stat().st_mtime_ns
    (course / "02_registry.ipynb").write_text("registry v1")
    assert [str(p) for p in copy_new_lessons(course, home)] == ["02_registry.ipynb"]
    assert (home / "00_welcome.ipynb").read_text() == "ada's notes"
    assert (home / "01_tools.ipynb").stat().st_mtime_ns == before
    assert (home / "02_registry.ipynb").read_text() == "registry v1"


def test_a_deleted_lesson_comes_back_fresh(course, tmp_path):
    home = tmp_path / "ada"
    copy_new_lessons(course, home)
    (home / "00_welcome.ipynb").unlink()
    assert [str(p) for p in copy_new_lessons(course, home)] == ["00_welcome.ipynb"]
    assert (home / "00_welcome.ipynb").read_text() == "welcome v1"


def test_a_name_in_the_way_is_left_alone(course, tmp_path):
    home = tmp_path / "ada"
    home.mkdir()
    (home / "00_welcome.ipynb").mkdir()  # a folder where the lesson would go
    (home / "solutions").write_text("a file where the solutions folder would go")
    assert [str(p) for p in copy_new_lessons(course, home)] == ["01_tools.ipynb"]
    assert (home / "00_welcome.ipynb").is_dir()
    assert (home / "solutions").read_text() == "a file where the solutions folder would go"


def test_the_course_files_are_listed_in_a_stable_order(course):
    assert course_files(course) == sorted(course_files(course))


def test_the_command_copies_and_says_how_many(course, tmp_path, capsys):
    assert main([str(course), str(tmp_path / "bob")]) == 0
    assert capsys.readouterr().out == f"3 new course files copied to {tmp_path / 'bob'}\n"
    assert main([str(course), str(tmp_path / "bob")]) == 0
    assert capsys.readouterr().out.startswith("0 new course files copied")


def test_the_command_explains_a_missing_course_in_one_line(tmp_path, capsys):
    assert main([str(tmp_path / "nowhere"), str(tmp_path / "bob")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the course's notebooks are not at ") and err.count("\n") == 1
    assert main(["only-one"]) == 2
    assert "usage:" in capsys.readouterr().err


def test_every_picture_a_lesson_shows_comes_with_the_learners_copy():
    # A hub gives each learner a copy of notebooks/ alone (copy_new_lessons): a picture outside it is broken there.
    import json
    import re
    from pathlib import Path

    course = Path(__file__).resolve().parent.parent / "notebooks"
    copied = {str(path) for path in course_files(course)}
    shown = []
    for notebook in sorted(course.rglob("*.ipynb")):
        for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "markdown":
                for target in re.findall(r"!\[[^\]]*\]\(([^)\s]+)", "".join(cell["source"])):
                    if not target.startswith(("http:", "https:", "attachment:")):
                        shown.append(os.path.relpath((notebook.parent / target).resolve(), course.resolve()))
    assert shown, "no lesson shows a picture: the check would pass for nothing"
    assert [target for target in shown if target not in copied] == []
