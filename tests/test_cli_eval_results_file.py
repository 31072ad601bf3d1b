"""`eval --json FILE` and `EvalReport.save`: a write that fails leaves the results file that was there as it was."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys

from tinyagent import LlmClient, command_options
from tinyagent.evaluation import EvalReport, evaluate

EARLIER = json.dumps({"schema": "tinyagent.evaluation/1", "an earlier run's results": "x" * 3000}) + "\n"

# The command, with files it writes limited to 1 KiB (what `ulimit -f 1` does): a disk that fills up halfway
# through the results. Python ignores SIGXFSZ, so the write fails with EFBIG ("File too large").
SMALL_FILES_THEN_EXEC = (
    "import os, resource, sys; resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024)); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)


def test_eval_json_that_cannot_be_written_leaves_the_earlier_results_file_whole(tmp_path):
    results = tmp_path / "results.json"
    results.write_text(EARLIER, encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", SMALL_FILES_THEN_EXEC, sys.executable, "-m", "tinyagent", "eval",
                           "--task", "refund", "--lang", "en", "--no-progress", "--json", str(results)],
                          check=False, capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "TINYAGENT_OFFLINE": "1"})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert results.read_text(encoding="utf-8") == EARLIER  # was 1,024 bytes of the new JSON, cut
    assert (f"error: could not write {results}: File too large; the file that was there is left as it was"
            in done.stderr.splitlines())
    assert "1 of 1 tasks passed" in done.stdout  # the table is still shown
    assert [path.name for path in tmp_path.iterdir()] == ["results.json"]  # no half-written file beside it


def test_save_that_fails_halfway_leaves_the_file_that_was_there(tmp_path, monkeypatch):
    report = evaluate(LlmClient.classroom(), names=["time"], langs=["en"], progress=False)
    path = tmp_path / "results.json"
    path.write_text(EARLIER, encoding="utf-8")

    def disk_full_halfway(file, *args, **kwargs):  # the file write_whole opens: half its text is written
        opened = open(file, *args, **kwargs)  # noqa: SIM115 (write_whole closes it)
        write = opened.write

        def write_half(text):
            write(text[: len(text) // 2])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        opened.write = write_half
        return opened

    monkeypatch.setattr(command_options, "open", disk_full_halfway, raising=False)
    try:
        report.save(path)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    else:
        raise AssertionError("save() did not say the write failed")
    monkeypatch.undo()
    assert path.read_text(encoding="utf-8") == EARLIER
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]
    report.save(path)  # and a write that works replaces it
    assert EvalReport.from_json(path.read_text(encoding="utf-8")).results[0].id == "time (en)"
