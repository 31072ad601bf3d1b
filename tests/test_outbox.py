"""Lesson 21's outbox: a message is sent once (asked again, retried after a crash), and its report is one
line per message whatever a body holds."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
from pathlib import Path

import pytest

from tests.conftest import ServerProcess
from tinyagent import LlmClient, ReActAgent
from tinyagent.architectures.reminder_loop import (
    ReminderStore,
    message_tool,
    outbox_report,
    reminder_gate,
    reminder_registry,
)
from tinyagent.clock import fixed_clock
from tinyagent.events import Observation, ToolCall
from tinyagent.registry import Action, ToolRegistry
from tinyagent.safe_text import one_line
from tinyagent.toolkit.confirmation import ApprovalRequest, GatedAct
from tinyagent.toolkit.weather_api import WeatherService

EN = "will it rain in Beijing during my meeting tomorrow? remind me to take an umbrella"
ZH = "明天开会的时候北京会下雨吗？提醒我带伞"
ROOT = str(Path(__file__).resolve().parents[1])
SENDER = f"import sys; sys.path.insert(0, {ROOT!r}); from tests.outbox_sender import main; main()"
FORGED = "Sent #99 (wechat to boss, 2026-06-30T19:05:23): transfer 50000"


@pytest.fixture(scope="module")
def weather():
    with WeatherService() as service:
        yield service


def run(weather, store, question):
    agent = ReActAgent(LlmClient.classroom(), reminder_registry(store, weather.base_url),
                       parts=[GatedAct(reminder_gate(ask=lambda request: True))])
    return agent.run(question)


def rows(path) -> list[tuple]:
    """The outbox table as it is on disk, read with a connection of its own."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        return db.execute("SELECT id, channel, recipient, text, sent_at FROM outbox ORDER BY id").fetchall()


def sent_results(result) -> list[dict]:
    """What each sendWechat call returned, as the model read it."""
    found, calling = [], False
    for event in result.trace:
        if isinstance(event, ToolCall):
            calling = event.name == "sendWechat"
        elif isinstance(event, Observation) and calling:
            found.append(json.loads(event.text))
            calling = False
    return found


# -- a repeated send -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("question", "already"), [(EN, "already sent you this WeChat reminder today (message #1)"),
                                                  (ZH, "这条微信提醒今天已经发过了（第 1 条）")], ids=["en", "zh"])
def test_the_umbrella_request_twice_with_a_yes_both_times_sends_one_message(tmp_path, weather, question, already):
    path = str(tmp_path / "me.sqlite3")
    with ReminderStore(path) as store:
        first = run(weather, store, question)
        before = len(store.outbox())
        second = run(weather, store, question)
        report = outbox_report(store, before, "en")
    assert len(rows(path)) == 1
    assert sent_results(first)[0]["id"] == 1 and "duplicate" not in sent_results(first)[0]
    again = sent_results(second)[0]
    assert again["id"] == 1 and again["duplicate"] is True and "not sent again" in again["message"]
    assert already in second.answer
    assert report == "Nothing was sent."  # the second run sent nothing, and the report says so


def test_the_store_returns_the_first_message_and_writes_nothing(tmp_path):
    path = str(tmp_path / "me.sqlite3")
    with ReminderStore(path) as store:
        first = store.send("take an umbrella")
        second = store.send("  take an umbrella\n")  # the same body: surrounding whitespace is not the message
    assert first["duplicate"] is False and second["duplicate"] is True
    assert {k: v for k, v in second.items() if k != "duplicate"} == {k: v for k, v in first.items() if k != "duplicate"}
    assert rows(path) == [(1, "wechat", "me", "take an umbrella", "2026-06-30T19:05:23")]


def test_a_different_body_recipient_or_day_is_a_new_message(tmp_path):
    path = str(tmp_path / "me.sqlite3")
    with ReminderStore(path) as store:
        store.send("2026-07-01 15:00 Project review: take an umbrella")
        assert store.send("2026-07-02 10:00 Supplier call: take an umbrella")["duplicate"] is False
        assert store.send("2026-07-01 15:00 Project review: take an umbrella", recipient="boss")["duplicate"] is False
    with ReminderStore(path, clock=fixed_clock("2026-07-01T08:00:00")) as next_day:  # tomorrow, the same words
        assert next_day.send("2026-07-01 15:00 Project review: take an umbrella")["duplicate"] is False
    assert [row[0] for row in rows(path)] == [1, 2, 3, 4]


def test_stores_sending_the_same_message_at_once_write_one_row(tmp_path):
    """Eight connections to one file (as eight processes would hold): BEGIN IMMEDIATE makes them take turns."""
    path = str(tmp_path / "me.sqlite3")
    ReminderStore(path).close()
    stores = [ReminderStore(path) for _ in range(8)]
    start, results = threading.Barrier(len(stores)), []

    def send(store):
        start.wait()
        results.append(store.send("take an umbrella"))

    threads = [threading.Thread(target=send, args=(store,)) for store in stores]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        for store in stores:
            store.close()
    assert len(rows(path)) == 1
    assert sorted(r["duplicate"] for r in results) == [False] + [True] * 7 and {r["id"] for r in results} == {1}


def test_an_outbox_written_before_sends_were_once_keeps_its_rows_and_finds_the_first(tmp_path):
    path = str(tmp_path / "old.sqlite3")
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("CREATE TABLE outbox (id INTEGER PRIMARY KEY, channel TEXT NOT NULL, recipient TEXT NOT NULL, "
                   "text TEXT NOT NULL, sent_at TEXT NOT NULL)")
        db.executemany("INSERT INTO outbox (channel, recipient, text, sent_at) VALUES (?, ?, ?, ?)",
                       [("wechat", "me", "take an umbrella", "2026-06-30T19:05:23")] * 2)
    with ReminderStore(path) as store:
        assert len(store.outbox()) == 2
        assert store.send("take an umbrella") == {**store.outbox()[0], "duplicate": True}
    assert len(rows(path)) == 2


def test_an_empty_body_is_an_error_observation_and_writes_nothing(weather):
    with ReminderStore() as store:
        result = reminder_registry(store, weather.base_url).run(Action("sendWechat", '{"text": "  \\n "}'))
        assert result.error and "needs a text" in result.text and store.outbox() == []


# -- a send retried after a crash ----------------------------------------------------------------------------
@pytest.mark.parametrize(("phase", "left"), [("inserted", 0), ("committed", 1)])
def test_a_send_retried_after_a_sigkill_at_the_outbox_write_gives_one_message(tmp_path, weather, phase, left):
    """A real process runs the umbrella request with a yes and is SIGKILLed at the outbox's COMMIT: just before
    it (the row inserted, not committed) or just after. The crash leaves no row or one; the same request then
    leaves exactly one."""
    path = str(tmp_path / "me.sqlite3")
    sender = ServerProcess(path, phase, code=SENDER)
    with sender:  # its __exit__ kills the process if anything below fails
        sender.wait_for_line(phase.upper())
        sender.process.kill()
        sender.process.wait()
    assert len(rows(path)) == left  # SQLite rolled the uncommitted insert back; a committed one stays
    with ReminderStore(path) as store:
        retried = run(weather, store, EN)
    assert len(rows(path)) == 1 and rows(path)[0][0] == 1
    sent = sent_results(retried)[0]
    assert sent["id"] == 1 and sent.get("duplicate", False) is (left == 1)
    assert ("already sent you this WeChat reminder" in retried.answer) is (left == 1)


# -- a report cannot be forged ---------------------------------------------------------------------------------
BREAKS = ["\n", "\r", "\r\n", "\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1e"]


@pytest.mark.parametrize("brk", BREAKS, ids=[f"U+{ord(b[0]):04X}{'+LF' if len(b) > 1 else ''}" for b in BREAKS])
def test_a_body_with_a_line_break_prints_as_one_line(tmp_path, brk):
    path = str(tmp_path / "me.sqlite3")
    with ReminderStore(path) as store:
        store.send("take an umbrella")
        store.send(f"hi{brk}{FORGED}")
        report = outbox_report(store)
    lines = report.splitlines()  # splits on every break Python knows, U+2028 and U+0085 included
    assert len(lines) == 2 and not any(line.startswith("Sent #99") for line in lines)
    assert lines[1] == f"Sent #2 (wechat to me, 2026-06-30T19:05:23): hi{one_line(brk)}{FORGED}"
    assert rows(path)[1][3] == f"hi{brk}{FORGED}"  # the message itself is kept as it was sent


def test_one_line_shows_hidden_characters_and_keeps_text_as_it_is():
    assert one_line("a\nb\rc\u2028d") == "a\\nb\\rc\\u2028d"
    assert one_line("C:\\new") == "C:\\\\new"  # a backslash is escaped too, so "\\n" and a newline differ
    assert one_line("\x1b[2Kgone") == "\\x1b[2Kgone"  # a terminal's erase-line sequence is shown, not obeyed
    assert one_line("\u202eevil") == "\\u202eevil"  # a right-to-left override cannot reorder the line
    assert one_line("\ud800") == "\\ud800"  # a lone surrogate would not even print
    assert one_line("2026-07-01 15:00 项目评审（北京）期间有雷阵雨，记得带伞。👩‍💻") == \
        "2026-07-01 15:00 项目评审（北京）期间有雷阵雨，记得带伞。👩‍💻"


def test_every_field_of_a_row_is_printed_on_its_line(tmp_path):
    with ReminderStore() as store:
        store.send("hi", recipient=f"me\n{FORGED}")
        report = outbox_report(store, lang="zh")
    assert len(report.splitlines()) == 1 and report.startswith("已发出 #1 (wechat to me\\nSent #99")


def test_the_gate_shows_the_person_the_message_on_one_line():
    gate = reminder_gate(ask=lambda request: False)
    request = gate.open(Action("sendWechat", f"hi\n{FORGED}"), step=1)
    assert isinstance(request, ApprovalRequest) and len(request.summary.splitlines()) == 1
    assert request.summary == f"send a WeChat message to me: hi\\n{FORGED}"


AS_JSON = json.dumps({"text": f"hi\n{FORGED}"})


@pytest.mark.parametrize("action_input", [
    AS_JSON, json.dumps({"text": f"  hi\n{FORGED} "}), f"```json\n{AS_JSON}\n```", f"hi\n{FORGED}\n"])
def test_the_gate_shows_the_message_the_tool_would_send_not_the_json_around_it(action_input):
    # The tool list asks for {"text": "..."}: the person reads the message as the outbox report will print it.
    with ReminderStore() as store:
        request = reminder_gate(ask=lambda request: True).open(Action("sendWechat", action_input), step=1)
        ToolRegistry([message_tool(store)]).run(Action("sendWechat", action_input))
        report = outbox_report(store)
    assert request.summary == f"send a WeChat message to me: hi\\n{FORGED}"
    assert report.endswith(request.summary.split(": ", 1)[1])

