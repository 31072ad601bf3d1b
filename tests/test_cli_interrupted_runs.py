"""Ctrl-C during `python -m tinyagent ask`: what the run had done before it is said, never hidden."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from tinyagent.__main__ import main

from .conftest import PATIENCE, signalled_while_the_model_thinks

REFUND_ACTION = ('Thought: refund it.\nAction: applyRefund\n'
                 'Action Input: {"orderId": "88231", "reason": "faulty: does not dock"}')


@pytest.mark.parametrize(("signum", "json_flag"), [
    (signal.SIGINT, []), (signal.SIGINT, ["--json"]),
    # A `kill` or a closed terminal ended the process at once: exit -15 or 129, nothing printed, the refund made
    (signal.SIGTERM, []), (signal.SIGHUP, []),
], ids=["rounds", "json", "sigterm", "sighup"])
def test_ctrl_c_after_a_refund_says_the_refund_was_made(tmp_path, scripted_server, signum, json_flag):
    # The model's first reply makes a refund; its second never comes. Ctrl-C then said only "interrupted", exit
    # 130, with nothing on stdout, while the refund stayed in the shop's file.
    from tinyagent.shop import Shop

    env = {name: value for name, value in os.environ.items() if not name.startswith("TINYAGENT_")}
    env.update(HOME=str(tmp_path), TINYAGENT_API_URL=scripted_server.url.removesuffix("/chat/completions"),
               TINYAGENT_API_KEY="", TINYAGENT_MODEL="test-model")
    command = signalled_while_the_model_thinks(
        scripted_server, REFUND_ACTION, ["-m", "tinyagent", "ask", "Refund order 88231, it is faulty", "--db",
                                         str(tmp_path / "shop.db"), "--now", "2026-06-25T10:00:00", *json_flag],
        signum, cwd=tmp_path, env=env)
    out, err = command.stdout, command.stderr
    assert command.returncode == 130 and "Traceback" not in err, err
    [line] = err.strip().splitlines()
    assert line.startswith("interrupted; the run had done this before: applyRefund")
    assert "RF202606250001" in line
    assert "applyRefund" in out and "RF202606250001" in out  # the rounds that ran, as a finished run prints them
    with Shop(tmp_path / "shop.db") as shop:
        assert [refund["refundId"] for refund in shop.refunds()] == ["RF202606250001"]


def test_a_servers_error_with_escape_sequences_is_printed_escaped(tmp_path, scripted_server):
    # The "stopped: llm_error: ..." line and the printed trace quoted the server's message raw: its ESC sequences
    # could erase the lines above and set the terminal's title.
    message = "\x1b[1A\x1b[2Kall fine\x1b]0;owned\x07"
    scripted_server.reply((400, {"error": {"message": message}}))
    env = {name: value for name, value in os.environ.items() if not name.startswith("TINYAGENT_")}
    env.update(HOME=str(tmp_path), TINYAGENT_API_URL=scripted_server.url.removesuffix("/chat/completions"),
               TINYAGENT_API_KEY="", TINYAGENT_MODEL="test-model")
    done = subprocess.run([sys.executable, "-m", "tinyagent", "ask", "Where is order 88231?", "--db",
                           str(tmp_path / "shop.db")], capture_output=True, text=True, cwd=tmp_path, env=env,
                          timeout=PATIENCE, check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "\x1b" not in done.stdout + done.stderr and "\x07" not in done.stdout + done.stderr
    assert "\\x1b[1A\\x1b[2Kall fine" in done.stderr and "\\x1b[1A\\x1b[2Kall fine" in done.stdout


def test_a_guarded_call_the_run_stopped_inside_is_said_as_perhaps_made():
    # A run ended inside applyRefund (its COMMIT had returned, the Observation never came): nothing counted it,
    # while the shop held the refund. Calls that returned an error, or change nothing, stay unsaid.
    from tinyagent.events import Observation, ToolCall
    from tinyagent.memory.run_changes import calls_cut_short, changes_made
    from tinyagent.trace import Trace

    def guards(name: str) -> bool:
        return name == "applyRefund"

    refund = ToolCall(2, "applyRefund", '{"orderId": "88234", "reason": "不想要了"}')
    cut = Trace([ToolCall(1, "getOrder", '{"orderId": "88234"}'), refund], lang="zh")
    assert calls_cut_short(cut, guards) == [
        'applyRefund {"orderId": "88234", "reason": "不想要了"} -> （没有结果：运行在它执行时停下了；它可能已经完成）']
    [english] = calls_cut_short(Trace(cut.events, lang="en"), guards)
    assert english.endswith("-> (no result: the run stopped while it ran; it may have been made)")
    [long] = calls_cut_short(Trace([ToolCall(2, "applyRefund", "x" * 1000)]), guards)
    assert len(long) <= 300 and long.endswith("it may have been made)")  # the call is shortened, not the warning
    assert changes_made(cut, guards) == []  # the service's count: its runs stop between events, before a call runs
    failed = Trace([refund, Observation(2, '{"error": "order 88234 was not found"}', error=True)])
    assert calls_cut_short(failed, guards) == [] and changes_made(failed, guards) == []


def test_ask_stopped_inside_a_refund_says_it_may_have_been_made(tmp_path, monkeypatch, capsys):
    # SIGTERM (Ctrl-C) just after the refund's COMMIT returned: the shop held RF202606300001, the trace stopped at
    # the ToolCall, and stderr said only "interrupted". Here applyRefund writes, then the interrupt comes.
    import tinyagent.shop
    from tinyagent.shop import Shop

    real_registry = tinyagent.shop.shop_registry

    def registry_interrupted_after_the_write(shop, clock=None, **options):
        tools = real_registry(shop, clock, **options)
        refund = tools.get("applyRefund")
        write = refund.invoke

        def write_then_interrupted(input: str) -> str:
            write(input)
            raise KeyboardInterrupt

        monkeypatch.setattr(refund, "invoke", write_then_interrupted)
        return tools

    monkeypatch.setenv("TINYAGENT_OFFLINE", "1")
    monkeypatch.setattr(tinyagent.shop, "shop_registry", registry_interrupted_after_the_write)
    db = tmp_path / "shop.db"
    code = main(["ask", "我上周买的扫地机不回充了，修不好我想退。订单号 88231。", "--db", str(db),
                 "--now", "2026-06-30T19:05:23"])
    out, err = capsys.readouterr()
    assert code == 130 and "Traceback" not in err, err
    [line] = err.strip().splitlines()
    assert line.startswith("interrupted; the run may have done this: applyRefund"), line
    assert line.endswith("它可能已经完成）")
    assert "applyRefund" in out  # the rounds that ran, up to the call
    with Shop(db) as shop:
        assert [refund["refundId"] for refund in shop.refunds()] == ["RF202606300001"]
