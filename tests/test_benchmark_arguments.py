"""The benchmarks (benchmarks/*.py) against bad input, as a teacher would type it: one line `error: ...` and exit
code 2 before anything runs, never a traceback, never a failure reported as a result, never results lost at the end
of a long run (docs/benchmarks.md; tinyagent/command_options.py)."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tinyagent.command_options import write_whole

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
UNREACHABLE = "http://127.0.0.1:9/v1"  # the discard port: nothing listens there


def run(tmp_path: Path, script: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "TINYAGENT_OFFLINE": "1"}
    return subprocess.run([sys.executable, str(BENCHMARKS / script), *args], check=False, cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=timeout)


def assert_refused(done: subprocess.CompletedProcess, *words: str) -> None:
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, (done.returncode, done.stdout[-500:], done.stderr[-500:])
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    for word in words:
        assert word in lines[0]


REFUSED = [
    # a number that is no number, or none a run can use
    ("serving.py", ["--seconds", "nan"], "--seconds"),
    ("serving.py", ["--seconds", "inf"], "--seconds"),
    ("kernel_ports.py", ["--timeout", "-1"], "--timeout"),
    ("kernel_ports.py", ["--churn", "nan"], "--churn"),
    ("kernel_ports.py", ["--loops", "0"], "--loops"),
    ("function_calling.py", ["--tool-ms", "inf"], "--tool-ms"),
    ("function_calling.py", ["--tool-ms", "nan"], "--tool-ms"),
    ("knowledge_ranking.py", ["--runs", "0"], "--runs"),
    ("knowledge_ranking.py", ["--runs", "-3"], "--runs"),
    ("real_tools.py", ["--runs", "0"], "--runs"),
    ("frameworks.py", ["--runs", "0"], "--runs"),
    ("frameworks.py", ["--steps-runs", "0"], "--steps-runs"),
    ("classroom_hostile_clients.py", ["--bursts", "0"], "--bursts"),
    ("classroom_hostile_clients.py", ["--megabytes", "nan"], "--megabytes"),
    ("classroom_hostile_clients.py", ["--connections", "1e10"], "--connections"),
    ("serving_limits.py", ["--waiting", "0", "--slow", "0"], "--waiting"),
    ("serving_limits.py", ["--waiting", "-3"], "--waiting"),
    ("serving_limits.py", ["--slow", "0"], "--slow"),
    ("several_agents.py", ["--max-steps", "0"], "--max-steps"),
    ("format_compliance.py", ["--timeout", "nan"], "--timeout"),
    ("format_compliance.py", ["--timeout", "-1"], "--timeout"),
    ("format_compliance.py", ["--max-tokens", "-5"], "--max-tokens"),
    ("format_compliance.py", ["--temperature", "nan"], "--temperature"),
    ("format_compliance.py", ["--temperature", "-7"], "--temperature"),
    ("format_compliance.py", ["--threads", "0"], "--threads"),
    ("learner_ports.py", ["--learners", "100000"], "--learners"),
    ("classroom_room.py", ["--learners", "0"], "--learners"),
    ("classroom_room.py", ["--learners", "-5"], "--learners"),
    ("classroom_room.py", ["--processes", "0"], "--processes"),
    ("streaming.py", ["--tokens-per-second", "nan"], "--tokens-per-second"),
    ("context_budget.py", ["--budget", "0"], "--budget"),
    ("local_model_neighbours.py", ["--kernels", "0"], "--kernels"),
    ("local_model_neighbours.py", ["--replies", "nan"], "--replies"),
    # a count with no sane end: it would run until killed
    ("stream_piece_floor.py", ["--repeat", str(10**23)], "--repeat"),
    # what is not what the option needs
    ("session_memory.py", ["--turns", "2", "--appends", "1", "--workers", "1", "--postgres", "notaurl"],
     "--postgres"),
    ("prompt_injection.py", ["--base-url", "notaurl"], "--base-url"),
    ("frameworks.py", ["--only", "nope"], "nope"),
    # a lesson number no lesson has, beside one that is there
    ("run_all.py", ["00", "99"], "99"),
    ("lesson_probes.py", ["twice", "00", "99"], "99"),
    ("check_mutants.py", ["01", "99"], "99"),
    ("lesson_probes.py", ["nope"], "nope"),
    ("lesson_probes.py", ["any-day"], "any-day"),
    # a moment that would fail only inside each kernel, which nbval goes on from
    ("lesson_probes.py", ["any-day", "notadate", "00"], "notadate"),
    # options that would be ignored
    ("evaluation.py", ["--json", "scores.json"], "--configured"),
    ("evaluation.py", ["--max-steps", "4"], "--configured"),
]


@pytest.mark.parametrize(("script", "args", "word"), REFUSED, ids=[f"{s} {' '.join(a)}" for s, a, _ in REFUSED])
def test_a_bad_option_is_one_line_and_exit_code_2(tmp_path, script, args, word):
    assert_refused(run(tmp_path, script, *args), word)


@pytest.mark.parametrize("script", sorted(path.name for path in BENCHMARKS.glob("*.py")))
def test_every_benchmark_refuses_an_option_it_does_not_have_in_one_line(tmp_path, script):
    # check_mutants.py and real_model_lesson.py printed argparse's usage above the error, and lesson_probes.py its
    # modes on four lines, beside the rule the others keep (tinyagent/command_options.py)
    assert_refused(run(tmp_path, script, "--no-such-option", timeout=60), "--no-such-option")


@pytest.mark.parametrize("script", ["run_all.py", "nbval_lessons.py", "lesson_probes.py"])
def test_help_prints_the_usage_and_runs_nothing(tmp_path, script):
    done = run(tmp_path, script, "--help", timeout=30)
    assert done.returncode == 0 and done.stdout.startswith(f"usage: {script}"), done.stdout + done.stderr


def test_session_memory_makes_no_sqlite_file_of_a_postgres_option_that_is_no_url(tmp_path):
    run(tmp_path, "session_memory.py", "--postgres", "notaurl")
    assert not (tmp_path / "notaurl").exists()


def test_a_room_with_fewer_learners_than_processes_runs_instead_of_waiting_for_ever(tmp_path):
    done = run(tmp_path, "classroom_room.py", "--learners", "1", "--runs", "1", timeout=60)  # 2 processes by default
    assert done.returncode == 0, done.stdout + done.stderr
    assert "completions        5" in done.stdout


# -- a failure is not a result -------------------------------------------------------------------------------------
@pytest.mark.parametrize("way", ["invoke", "stream"])
def test_serving_counts_runs_that_could_not_reach_the_model_as_errors(tmp_path, way):
    done = run(tmp_path, "serving.py", "--model-url", UNREACHABLE, "--seconds", "1", "--clients", "1", "--only", way)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "errors: 0" not in done.stdout and "llm_error" in done.stdout


def test_serving_counts_no_errors_on_the_classroom_model(tmp_path):
    done = run(tmp_path, "serving.py", "--seconds", "1", "--clients", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("errors: 0") == 2


def test_prompt_injection_stops_when_the_model_does_not_answer(tmp_path):
    done = run(tmp_path, "prompt_injection.py", "--attacks", "1", "--defences", "none", "--base-url", UNREACHABLE)
    assert_refused(done, "does not answer")
    assert "attack success" not in done.stdout


# -- results files: checked before the run, written whole ---------------------------------------------------------
OUTPUTS = [
    ("evaluation.py", ["--configured", "--protocol", "text"]),
    ("prompt_injection.py", ["--attacks", "1", "--defences", "none"]),
    ("constrained_decoding.py", ["--variants", "none", "--names", "parcel", "--langs", "en"]),
]


@pytest.mark.parametrize("where", ["missing/x.json", "folder"])
@pytest.mark.parametrize(("script", "args"), OUTPUTS, ids=[s for s, _ in OUTPUTS])
def test_a_results_file_that_cannot_be_written_is_refused_before_the_run(tmp_path, script, args, where):
    (tmp_path / "folder").mkdir()
    started = time.monotonic()
    done = run(tmp_path, script, *args, "--json", where)
    assert_refused(done, "--json")
    assert time.monotonic() - started < 20  # the suite did not run first
    assert done.stdout == ""


def test_a_refused_run_leaves_an_existing_results_file_as_it_was(tmp_path):
    kept = tmp_path / "kept.json"
    kept.write_text('{"earlier": "results"}', encoding="utf-8")
    done = run(tmp_path, "prompt_injection.py", "--attacks", "1", "--defences", "none", "--base-url", UNREACHABLE,
               "--json", "kept.json")
    assert_refused(done, "does not answer")
    assert kept.read_text(encoding="utf-8") == '{"earlier": "results"}'



def test_a_write_that_fails_half_way_leaves_the_earlier_file_and_no_part_of_the_new_one(tmp_path):
    kept = tmp_path / "kept.json"
    kept.write_text('{"earlier": "results"}', encoding="utf-8")
    with pytest.raises(UnicodeEncodeError):  # a lone surrogate cannot be written as UTF-8: the write stops there
        write_whole(kept, '{"new": "' + "x" * 100_000 + '\udc80"}')
    assert kept.read_text(encoding="utf-8") == '{"earlier": "results"}'
    assert [p.name for p in tmp_path.iterdir()] == ["kept.json"]


def test_a_whole_write_replaces_the_file(tmp_path):
    kept = tmp_path / "kept.json"
    kept.write_text("old", encoding="utf-8")
    write_whole(kept, "new")
    assert kept.read_text(encoding="utf-8") == "new"
