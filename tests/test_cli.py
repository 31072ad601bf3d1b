"""`python -m tinyagent ask ...` end to end, on the classroom model."""

import json
import os
import subprocess
import sys

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


def test_bad_arguments_exit_2(tmp_path):
    assert ask(tmp_path, "hi", "--now", "yesterday").returncode == 2
    assert ask(tmp_path, "hi", "--max-steps", "0").returncode == 2
    assert ask(tmp_path, "hi", "--model", "gpt-unknown").returncode == 2
