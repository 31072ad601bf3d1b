"""`python -m tinyagent eval` (lesson 18): the suite from the terminal, its exit codes and its bad options."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from tinyagent.evaluation import EvalReport, report_problems

from .test_cli import run_main


def test_every_task_passing_exits_0_with_the_table_on_stdout_and_the_bar_on_stderr(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "tinyagent", "eval", "--task", "refund", "--task", "time"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False,
        env={**os.environ, "TINYAGENT_OFFLINE": "1"},
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "classroom · text ReAct"
    assert lines[1].split() == ["task", "tools", "database", "answer", "format", "steps", "tokens", "seconds"]
    assert [line.split()[0:2] for line in lines[2:6]] == [["refund", "(zh)"], ["refund", "(en)"], ["time", "(zh)"],
                                                          ["time", "(en)"]]
    assert lines[-1] == "4 of 4 tasks passed (100%)"
    assert "evaluating classroom model 'classroom'" in done.stderr
    # stderr is a pipe here, no terminal: the progress comes as plain lines, not a bar redrawn with carriage returns
    assert "[4/4] time (en)                passed" in done.stderr and "\r" not in done.stderr


def test_a_failing_task_exits_1(capsys):
    code, out, err = run_main(["eval", "--model", "classroom-no-final", "--lang", "en", "--task", "time",
                               "--no-progress"], capsys)
    assert code == 1
    assert "time (en), format: the answer came as prose the fallback took, not as a Final Answer" in out
    assert err.strip() == "evaluating classroom model 'classroom-no-final', offline, in this process (TINYAGENT_OFFLINE=1)"


def test_json_goes_to_a_file_beside_the_table_or_alone_to_stdout(tmp_path, capsys):
    path = tmp_path / "scores.json"
    code, out, err = run_main(["eval", "--protocol", "function", "--task", "two parcels", "--json", str(path),
                               "--no-progress"], capsys)
    assert code == 0, err
    data = json.loads(path.read_text(encoding="utf-8"))
    assert report_problems(data) == [] and data["protocol"] == "function"
    assert [t["name"] for t in data["tasks"]] == ["two parcels", "two parcels"]
    assert "2 of 2 tasks passed" in out and f"results written to {path}" in err

    code, out, _ = run_main(["eval", "--lang", "zh", "--task", "time", "--json", "-", "--no-progress"], capsys)
    assert code == 0
    report = EvalReport.from_json(out)  # stdout holds the JSON and nothing else
    assert [r.id for r in report.results] == ["time (zh)"]


def test_json_that_names_a_pipe_or_a_device_is_refused_and_left_as_it_is(tmp_path, capsys):
    # The results took its place: run as root, --json /dev/full left a regular file where the device had been. A pipe
    # stands in for the device here, so that this test, failing, replaces nothing of the machine's.
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    code, out, err = run_main(["eval", "--task", "time", "--json", str(pipe), "--no-progress"], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert f"--json {str(pipe)!r} is not a file (a device or a pipe)" in err
    assert stat.S_ISFIFO(pipe.lstat().st_mode)


@pytest.mark.parametrize("links, says", [
    ({"results.json": "no/such/folder/x.json"}, "the folder"),  # the run ended in "could not write", after it all
    ({"results.json": "loop.json", "loop.json": "results.json"}, "a loop of links"),  # the link became a file
    ({"results.json": "pipe"}, "is not a file (a device or a pipe)"),
], ids=["dangling", "loop", "to-a-pipe"])
def test_json_through_a_link_is_checked_where_the_link_leads(links, says, tmp_path, capsys):
    os.mkfifo(tmp_path / "pipe")
    for name, target in links.items():
        (tmp_path / name).symlink_to(target)
    code, out, err = run_main(["eval", "--task", "time", "--json", str(tmp_path / "results.json"), "--no-progress"],
                              capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and says in err, err
    assert (tmp_path / "results.json").is_symlink()


def test_json_through_a_link_writes_the_file_it_names_and_the_link_stays(tmp_path, capsys):
    results, link = tmp_path / "results.json", tmp_path / "latest.json"
    results.write_text('{"schema": "tinyagent.evaluation/1"}', encoding="utf-8")  # an earlier run's, in short
    link.symlink_to(results)
    code, _, err = run_main(["eval", "--task", "time", "--lang", "en", "--json", str(link), "--no-progress"], capsys)
    assert code == 0, err
    assert link.is_symlink() and EvalReport.from_json(results.read_text(encoding="utf-8")).results


BAD_OPTIONS = {
    "protocol": (["--protocol", "xml"], "invalid choice: 'xml' (choose from 'text', 'function')"),
    "lang": (["--lang", "fr"], "invalid choice: 'fr' (choose from 'zh', 'en', 'both')"),
    "task": (["--task", "refunds"], "no task called 'refunds': choose from refund, parcel, two parcels"),
    "json folder missing": (["--json", "{tmp}/no/such/folder/x.json"], "does not exist"),
    "json is a folder": (["--json", "{tmp}"], "is a folder: give a file name"),
    "max steps": (["--max-steps", "0"], "--max-steps must be a whole number from 1 to 100"),
    "timeout": (["--timeout", "0"], "--timeout must be a number of seconds above 0"),
    "unknown model": (["--model", "classroom-nope"], "there is no classroom model called 'classroom-nope': choose one of classroom,"),
    "unknown option": (["--colour"], "unrecognized arguments: --colour (see python -m tinyagent eval --help)"),
}


@pytest.mark.parametrize("name", BAD_OPTIONS)
def test_a_bad_option_is_one_line_on_stderr_and_exit_2(name, tmp_path, capsys):
    options, said = BAD_OPTIONS[name]
    code, out, err = run_main(["eval", *[o.replace("{tmp}", str(tmp_path)) for o in options]], capsys)
    assert code == 2, (out, err)
    assert len(err.strip().splitlines()) == 1, err
    assert said in err
    assert "Traceback" not in err and out == ""


def test_a_provider_that_cannot_be_reached_is_one_line_without_the_key(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TINYAGENT_OFFLINE", raising=False)
    monkeypatch.setenv("TINYAGENT_API_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("TINYAGENT_API_KEY", "sk-eval-SECRET-0042")
    monkeypatch.setenv("TINYAGENT_MODEL", "some-model")
    code, out, err = run_main(["eval", "--timeout", "5"], capsys)
    assert code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("error: ") and "SECRET" not in out + err


def test_ctrl_c_during_eval_is_one_line_not_a_traceback(monkeypatch, capsys):
    from tinyagent.evaluation import harness

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(harness, "run_eval_task", interrupted)
    code, _, err = run_main(["eval", "--no-progress"], capsys)
    assert code == 130
    assert err.strip().splitlines()[-1] == "interrupted"
