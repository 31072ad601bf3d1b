"""`python -m tinyagent ask ...` end to end, on the classroom model."""

import json
import os
import socket
import subprocess
import sys

import pytest

from tinyagent.__main__ import main

REFUND = "我上周买的扫地机不回充了，修不好我想退。订单号 88231。"


def ask(tmp_path, *args):
    env = {**os.environ, "TINYAGENT_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "tinyagent", "ask", *args, "--db", str(tmp_path / "shop.db")],
        check=False, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60,
    )


def test_refund_prints_five_rounds_and_exits_0(tmp_path):
    done = ask(tmp_path, REFUND, "--now", "2026-06-30T19:05:23")
    assert done.returncode == 0, done.stderr
    assert "===== 第 5 圈 =====" in done.stdout
    assert "[工具调用] applyRefund(" in done.stdout
    assert "RF202606300001" in done.stdout.split("[最终答复]")[1]


def test_lang_en_prints_english_labels(tmp_path):
    done = ask(tmp_path, "帮我看看订单 88231 的快递到哪了。", "--lang", "en")
    assert done.returncode == 0
    assert "===== Round 3 =====" in done.stdout and "[Final answer]" in done.stdout


def test_json_prints_a_trace_that_loads_back(tmp_path):
    from tinyagent import Trace

    done = ask(tmp_path, "Where is order 88231?", "--json")
    assert done.returncode == 0
    trace = Trace.from_json(done.stdout)
    assert trace.reason == "final_answer"
    assert [c.name for c in trace.tool_calls] == ["queryOrder", "queryLogistics"]
    assert json.loads(done.stdout)["lang"] == "en"


def test_running_out_of_steps_exits_1_with_a_one_line_reason(tmp_path):
    done = ask(tmp_path, REFUND, "--max-steps", "2")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == "stopped: max_steps"


def test_refund_is_idempotent_across_runs_of_the_same_database(tmp_path):
    first = ask(tmp_path, REFUND, "--now", "2026-06-30T19:05:23")
    second = ask(tmp_path, REFUND, "--now", "2026-06-30T19:05:23")
    assert first.returncode == second.returncode == 0
    assert "RF202606300001" in second.stdout and "RF202606300002" not in second.stdout


def test_a_second_refund_in_the_same_file_says_the_order_already_had_one(tmp_path):
    ask(tmp_path, REFUND, "--now", "2026-06-30T19:05:23")
    second = ask(tmp_path, REFUND, "--now", "2026-06-30T19:05:23").stdout
    last_round = second.split("===== 第 5 圈 =====")[1]
    assert '"duplicate":true' in second.split("===== 第 4 圈 =====")[1]
    assert "提交成功" not in last_round and "已经提交" not in last_round  # the Thought matches its Observation
    assert "已经有退款申请 RF202606300001" in last_round and "没有重复提交" in last_round


def test_ask_without_db_starts_every_run_from_the_seeded_shop_and_writes_no_file(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "TINYAGENT_SHOP_DB"}
    env.update(TINYAGENT_OFFLINE="1", HOME=str(home))
    runs = [subprocess.run([sys.executable, "-m", "tinyagent", "ask", REFUND, "--now", "2026-06-30T19:05:23"],
                           check=False, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
            for _ in range(2)]
    for done in runs:
        assert done.returncode == 0, done.stderr
        assert "RF202606300001" in done.stdout and '"duplicate"' not in done.stdout
    assert not list(home.rglob("*")) and sorted(p.name for p in tmp_path.iterdir()) == ["home"]


def test_bad_arguments_exit_2(tmp_path):
    assert ask(tmp_path, "hi", "--now", "yesterday").returncode == 2
    assert ask(tmp_path, "hi", "--max-steps", "0").returncode == 2
    assert ask(tmp_path, "hi", "--model", "gpt-unknown").returncode == 2


def run_main(argv, capsys):
    """main() in this process; an exception escaping it (a traceback) fails the test."""
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse's own errors exit
        code = exit_.code
    out, err = capsys.readouterr()
    return code, out, err


BAD_INPUTS = {
    "empty question": (["ask", ""], "the question is empty"),
    "blank question": (["ask", "  \n\t"], "the question is empty"),
    "no steps": (["ask", "hi", "--max-steps", "0"], "--max-steps must be a whole number from 1 to 100"),
    "too many steps": (["ask", "hi", "--max-steps", "100000"], "--max-steps must be a whole number from 1 to 100"),
    "steps not a number": (["ask", "hi", "--max-steps", "ten"], "--max-steps must be a whole number from 1 to 100"),
    # Digits of another script: "³" made int() raise, "٣" (Arabic-Indic) and "３" (full-width) were read as 3.
    "steps as a superscript": (["ask", "hi", "--max-steps", "³"], "--max-steps must be a whole number from 1 to 100"),
    "steps in arabic digits": (["ask", "hi", "--max-steps", "٣"], "--max-steps must be a whole number from 1 to 100"),
    "steps in full-width digits": (["ask", "hi", "--max-steps", "３"], "--max-steps must be a whole number"),
    "weather port superscript": (["weather-service", "--port", "³"], "--port must be a whole number from 0 to 65535"),
    "weather port arabic": (["weather-service", "--port", "٠"], "--port must be a whole number from 0 to 65535"),
    "weather status superscript": (["weather-service", "--status", "5⁰³"], "--status must be an HTTP error status"),
    "weather status arabic": (["weather-service", "--status", "٥٠٣"], "--status must be an HTTP error status"),
    "ask timeout zero": (["ask", "hi", "--timeout", "0"], "--timeout must be a number of seconds above 0"),
    "ask timeout text": (["ask", "hi", "--timeout", "soon"], "--timeout must be a number of seconds above 0"),
    "doctor timeout negative": (["doctor", "--timeout", "-1"], "--timeout must be a number of seconds above 0"),
    "doctor timeout nan": (["doctor", "--timeout", "nan"], "--timeout must be a number of seconds above 0"),
    "doctor timeout infinite": (["doctor", "--timeout", "inf"], "--timeout must be a number of seconds above 0"),
    "unknown option": (["ask", "hi", "--colour"],
                       "unrecognized arguments: --colour (see python -m tinyagent ask --help)"),
    "empty skill": (["ask", "hi", "--skill", ""], "--skill needs the name of one of the shop's skills: logistics"),
    "blank skill": (["ask", "hi", "--skill", "  "], "--skill needs the name of one of the shop's skills"),
    "model with a newline": (["ask", "hi", "--model", "classroom\nevil"], "holds a control character"),
    "eval model with a newline": (["eval", "--model", "classroom\nevil"], "holds a control character"),
    # doctor exits 1 when the endpoint failed a check it ran; a --model it cannot use is the command line's mistake
    "doctor model with a newline": (["doctor", "--model", "classroom\nevil"], "holds a control character"),
    "doctor misspelt classroom model": (["doctor", "--model", "classroom-lopp"],
                                        "there is no classroom model called 'classroom-lopp'"),
    "no command": ([], "the following arguments are required"),
    # Python's sockets and locks refuse a timeout past about 9e9 s: a traceback from urllib3, a 500 from the service.
    "ask timeout past a day": (["ask", "hi", "--timeout", "1e10"], "at most 86400 (a day)"),
    "serve approval timeout past a day": (["serve", "--approval-timeout", "1e300"], "at most 86400 (a day)"),
    # A key no client can send: invalid UTF-8 in argv comes as a surrogate, and ключ is no header's.
    "serve key not ascii": (["serve", "--api-key", "ключ"], "must be printable ASCII without spaces"),
    "serve key from invalid utf-8": (["serve", "--api-key", "k\udcff"], "must be printable ASCII without spaces"),
    "classroom key with a space": (["classroom", "--api-key", "a key"], "must be printable ASCII without spaces"),
    "operator key not ascii": (["serve", "--operator-key", "ключ"], "printable ASCII characters without spaces"),
    "base path with a query": (["classroom", "--base-path", "/x?y#z"], "--base-path must be a URL path"),
    "base path with a scheme": (["classroom", "--base-path", "http://x/y"], "--base-path must be a URL path"),
    "eval file name too long": (["eval", "--json", "a" * 256 + ".json"], "File name too long"),
    # A misspelt classroom variant ran, and every call was a 404: a stopped trace and exit 1, as if the model failed.
    "misspelt classroom model": (["ask", "hi", "--model", "classroom-lopp"],
                                 "there is no classroom model called 'classroom-lopp': choose one of classroom,"),
}


@pytest.mark.parametrize("name", BAD_INPUTS)
def test_bad_input_is_one_line_on_stderr_and_exit_2(name, tmp_path, capsys):
    argv, said = BAD_INPUTS[name]
    if argv[:1] == ["ask"]:
        argv = [*argv, "--db", str(tmp_path / "shop.db")]
    code, out, err = run_main(argv, capsys)
    assert code == 2, (out, err)
    assert len(err.strip().splitlines()) == 1, err
    assert said in err
    assert "Traceback" not in err and out == ""


def test_an_api_url_without_a_scheme_is_one_line_naming_the_variable(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TINYAGENT_OFFLINE", raising=False)
    monkeypatch.setenv("TINYAGENT_API_URL", "api.deepseek.com")
    monkeypatch.setenv("TINYAGENT_API_KEY", "sk-cli-SECRET-0042")
    monkeypatch.setenv("TINYAGENT_MODEL", "deepseek-chat")
    code, out, err = run_main(["ask", "hi", "--db", str(tmp_path / "shop.db")], capsys)
    assert code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert "TINYAGENT_API_URL" in err and "https://" in err and "'api.deepseek.com'" in err
    assert "SECRET" not in out + err
    # The doctor reports it as a failed settings check, the way it reports every settings problem, and exits 2 as ask.
    code, out, err = run_main(["doctor"], capsys)
    assert code == 2
    assert "settings  FAIL" in out and "TINYAGENT_API_URL" in out and "Traceback" not in err


def test_ctrl_c_during_ask_is_one_line_not_a_traceback(tmp_path, monkeypatch, capsys):
    from tinyagent.agent import AgentRun

    def interrupted(self):
        raise KeyboardInterrupt

    monkeypatch.setenv("TINYAGENT_OFFLINE", "1")
    monkeypatch.setattr(AgentRun, "finish", interrupted)  # ask runs ReActAgent.start(...).finish()
    code, _, err = run_main(["ask", "hi", "--db", str(tmp_path / "shop.db")], capsys)
    assert code == 130
    assert err.strip() == "interrupted"


def test_a_database_name_too_long_for_the_file_system_is_one_line(tmp_path):
    done = subprocess.run([sys.executable, "-m", "tinyagent", "ask", "hi", "--db", "a" * 256 + ".db"],
                          check=False, capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env={**os.environ, "TINYAGENT_OFFLINE": "1"})
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().startswith("error: cannot create the shop's database") and "too long" in done.stderr


def test_a_database_path_longer_than_sqlite_opens_is_one_line(tmp_path):
    # Was "cannot create the shop's database ... (unable to open database file): give a path in a folder you can
    # write to", for a folder anyone may write to.
    deep = tmp_path.resolve() / ("d" * 200) / ("d" * 200) / ("d" * 200) / "shop.db"
    done = subprocess.run([sys.executable, "-m", "tinyagent", "ask", "hi", "--db", str(deep)],
                          check=False, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "TINYAGENT_OFFLINE": "1"})
    assert done.returncode == 2, done.stderr
    assert done.stderr == (f"error: the shop's database {deep} cannot be opened: its full path is too long for SQLite "
                           f"({len(os.fsencode(deep))} bytes; SQLite opens at most 504): give a shorter path\n")
    assert list(tmp_path.iterdir()) == []


def test_a_database_of_another_program_is_refused_and_left_as_it_was(tmp_path):
    import sqlite3

    notes = tmp_path / "notes.sqlite"
    with sqlite3.connect(notes) as db:
        db.execute("CREATE TABLE notes (text)")
        db.execute("INSERT INTO notes VALUES ('mine')")
    before = notes.read_bytes()
    done = subprocess.run([sys.executable, "-m", "tinyagent", "ask", "Where is order 88231?", "--db", str(notes)],
                          check=False, capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env={**os.environ, "TINYAGENT_OFFLINE": "1"})
    assert done.returncode == 2 and "another program's database (its tables: notes)" in done.stderr
    assert notes.read_bytes() == before


def _refund_writing_to(stdout, tmp_path, *more):
    return subprocess.run([sys.executable, "-m", "tinyagent", "ask", REFUND, "--now", "2026-06-30T19:05:23",
                           "--db", str(tmp_path / "shop.db"), *more], check=False, stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=60, cwd=tmp_path,
                          env={**os.environ, "TINYAGENT_OFFLINE": "1"})


def _refunds(tmp_path):
    from tinyagent.shop import Shop

    with Shop(tmp_path / "shop.db") as shop:
        return [refund["refundId"] for refund in shop.refunds()]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_an_answer_that_cannot_be_printed_says_what_the_run_did(tmp_path):
    # The refund was written; the trace that shows it could not be: the one line on stderr must say it. (--json:
    # without it the classroom model's notice is printed first, and fails before anything is done, as tested below.)
    with open("/dev/full", "w") as full:
        done = _refund_writing_to(full, tmp_path, "--json")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: could not write to standard output (No space left on device)")
    assert "applyRefund" in line and "RF202606300001" in line
    assert _refunds(tmp_path) == ["RF202606300001"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_a_notice_that_cannot_be_printed_stops_the_run_before_it_does_anything(tmp_path):
    with open("/dev/full", "w") as full:
        done = _refund_writing_to(full, tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip() == ("error: could not write to standard output (No space left on device) before "
                                   "anything was done")
    assert not (tmp_path / "shop.db").exists() or _refunds(tmp_path) == []


def test_a_closed_standard_output_runs_nothing(tmp_path):
    # print() to a closed stdout writes nothing and raises nothing: the refund would be made, and nobody told.
    done = subprocess.run([sys.executable, "-m", "tinyagent", "ask", REFUND, "--db", str(tmp_path / "shop.db")],
                          check=False, preexec_fn=lambda: os.close(1), stderr=subprocess.PIPE, text=True,  # >&-
                          timeout=60, cwd=tmp_path, env={**os.environ, "TINYAGENT_OFFLINE": "1"})
    assert done.returncode == 2 and "standard output is closed" in done.stderr, done.stderr
    assert not (tmp_path / "shop.db").exists()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_eval_saves_its_results_before_printing_them(tmp_path):
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "tinyagent", "eval", "--task", "refund", "--lang", "en",
                               "--no-progress", "--json", "results.json"], check=False, stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=120, cwd=tmp_path,
                              env={**os.environ, "TINYAGENT_OFFLINE": "1"})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "the results are in results.json" in done.stderr
    assert json.loads((tmp_path / "results.json").read_text())


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.parametrize("host", ["a..b", "x" * 64 + ".lan"])
def test_a_host_that_names_no_machine_is_one_line(tmp_path, host, workers):
    # The IDNA codec's UnicodeError ("label empty or too long") came out raw, or as a traceback with two workers.
    done = subprocess.run([sys.executable, "-m", "tinyagent", "serve", "--port", "0", "--host", host, "--workers",
                           workers, "--db", str(tmp_path / "shop.db"), "--session-store", str(tmp_path / "s.db")],
                          check=False, capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "TINYAGENT_OFFLINE": "1"})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip() == (f"error: cannot listen on {host!r}: it is not an address of this machine; use "
                                   "--host 127.0.0.1 (this machine only) or --host 0.0.0.0 (every network it is on)")
    assert list(tmp_path.iterdir()) == []  # the shop's and the store's files were made before the host was tried


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_port_in_use_is_one_line_and_makes_no_file(tmp_path, workers):
    # The shop's file and the session store were made, then the port was found taken: exit 2, two new files unsaid.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "tinyagent", "serve", "--port", str(port), "--workers", workers,
                               "--db", str(tmp_path / "shop.db"), "--session-store", str(tmp_path / "s.db")],
                              check=False, capture_output=True, text=True, timeout=120, cwd=tmp_path,
                              env={**os.environ, "TINYAGENT_OFFLINE": "1"})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"error: port {port} on 127.0.0.1 is already in use"), line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("memory", [["--db", ":memory:"], ["--session-store", ":memory:"]], ids=["shop", "sessions"])
def test_serve_with_workers_refuses_what_would_be_one_per_worker(tmp_path, memory):
    # Each worker process had its own shop: order 88231 was refunded once by each, with the same refund id.
    given = {"--db": str(tmp_path / "shop.db"), "--session-store": str(tmp_path / "s.db")}
    given.update([memory])
    done = subprocess.run([sys.executable, "-m", "tinyagent", "serve", "--port", "0", "--workers", "2",
                           *[word for pair in given.items() for word in pair]],
                          check=False, capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "TINYAGENT_OFFLINE": "1"})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip() == (f"error: {memory[0]} ':memory:' with 2 workers would be one per worker process (an "
                                   "order refunded once by each, a session unknown to the others); give a file, or run "
                                   "one worker")
    assert list(tmp_path.iterdir()) == []  # the other one's file was made before the refusal


def test_serve_reads_an_empty_shop_variable_as_unset(tmp_path):
    # TINYAGENT_SHOP_DB= (set, empty) made serve use the path "." and stop: ". is a folder". ask reads it as unset.
    from .conftest import ServerProcess

    env = {**os.environ, "TINYAGENT_OFFLINE": "1", "TINYAGENT_SHOP_DB": "", "HOME": str(tmp_path)}
    with ServerProcess("serve", "--port", "0", "--session-store", str(tmp_path / "s.db"), env=env) as server:
        server.wait_for_line("Press Ctrl-C to stop")
        assert (tmp_path / ".cache" / "tinyagent" / "bitmall.sqlite3").is_file()
        assert server.stop() == 0, server.output()


def test_the_classroom_key_can_come_from_the_environment_where_ps_does_not_show_it(monkeypatch, capsys):
    # A key on the command line is in /proc/<pid>/cmdline, which every account of the machine may read.
    from tinyagent.classroom import server

    served = {}
    monkeypatch.setattr(server, "serve_room", lambda host, port, **options: served.update(options))
    monkeypatch.setenv("TINYAGENT_CLASSROOM_API_KEY", "room-key-1")
    assert run_main(["classroom", "--port", "0"], capsys) == (0, "", "")
    assert served["api_key"] == "room-key-1" and served["hub_auth"] is False
    assert run_main(["classroom", "--port", "0", "--api-key", "given-key"], capsys)[0] == 0
    assert served["api_key"] == "given-key"  # the command line, when given, wins

    monkeypatch.setenv("TINYAGENT_CLASSROOM_API_KEY", "a key")
    code, out, err = run_main(["classroom", "--port", "0"], capsys)
    assert code == 2 and "--api-key (or $TINYAGENT_CLASSROOM_API_KEY) must be printable ASCII" in err, err
    monkeypatch.setenv("TINYAGENT_CLASSROOM_API_KEY", "room-key-1")
    served.clear()
    code, out, err = run_main(["classroom", "--port", "0", "--hub-auth"], capsys)
    assert (code, out, served) == (2, "", {})
    assert err == "error: --hub-auth serves the hub's tokens, not a key: unset TINYAGENT_CLASSROOM_API_KEY\n"
