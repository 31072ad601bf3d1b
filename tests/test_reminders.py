"""Lesson 21's closed loop: the calendar, the forecast, and a reminder that leaves only after a yes."""

from __future__ import annotations

from datetime import date

import pytest
import requests

from tinyagent import LlmClient, ReActAgent
from tinyagent.architectures.reminder_loop import (
    DAY_WORDS,
    ReminderStore,
    outbox_report,
    reminder_gate,
    reminder_registry,
)
from tinyagent.classroom.reminders import DAY_SAID, day_named_in
from tinyagent.events import ToolCall
from tinyagent.registry import Action
from tinyagent.toolkit.confirmation import ApprovalDecided, GatedAct
from tinyagent.toolkit.weather_api import WeatherService

EN = "will it rain in Beijing during my meeting tomorrow? remind me to take an umbrella"
ZH = "明天开会的时候北京会下雨吗？提醒我带伞"


@pytest.fixture(scope="module")
def weather():
    with WeatherService() as service:
        yield service


def run(weather, store, question, answer):
    agent = ReActAgent(LlmClient.classroom(), reminder_registry(store, weather.base_url),
                       parts=[GatedAct(reminder_gate(ask=lambda request: answer))])
    return agent.run(question)


@pytest.mark.parametrize("question", [EN, ZH])
def test_a_declined_message_writes_nothing_to_the_outbox_and_the_answer_says_so(weather, question):
    with ReminderStore() as store:
        result = run(weather, store, question, False)
        assert store.outbox() == []
        assert outbox_report(store) == "Nothing was sent."
    assert [e.outcome for e in result.trace if isinstance(e, ApprovalDecided)] == ["declined"]
    assert result.reason == "final_answer"
    assert ("Nothing was sent." if question == EN else "什么都没有发出。") in result.answer


@pytest.mark.parametrize("question", [EN, ZH])
def test_an_approved_message_writes_exactly_one_row_and_the_answer_reports_it(weather, question):
    with ReminderStore() as store:
        result = run(weather, store, question, True)
        sent = store.outbox()
    assert len(sent) == 1 and sent[0]["recipient"] == "me" and sent[0]["channel"] == "wechat"
    assert sent[0]["text"] in result.answer and f"{sent[0]['id']}" in result.answer
    assert "umbrella" in sent[0]["text"] or "带伞" in sent[0]["text"]
    assert [e.name for e in result.trace if isinstance(e, ToolCall)] == ["getMeetings", "getForecast", "sendWechat"]


def test_the_outbox_is_a_real_sqlite_table_that_outlives_the_store(tmp_path, weather):
    path = str(tmp_path / "me.sqlite3")
    with ReminderStore(path) as store:
        run(weather, store, EN, True)
    with ReminderStore(path) as again:
        assert len(again.outbox()) == 1 and len(again.meetings_on(again.day("tomorrow"))) == 1


def test_the_forecast_has_rain_in_beijing_tomorrow_afternoon_and_only_two_days(weather):
    hours = requests.get(weather.url("/forecast"), params={"city": "北京", "date": "2026-07-01"}, timeout=10).json()
    by_hour = {h["hour"]: h["condition"] for h in hours["hours"]}
    assert by_hour["15:00"] == "thundershowers" and by_hour["10:00"] == "cloudy"
    late = requests.get(weather.url("/forecast"), params={"city": "北京", "date": "2026-07-05"}, timeout=10)
    assert late.status_code == 404 and late.json()["dates"] == ["2026-06-30", "2026-07-01"]


def test_a_bad_day_is_an_error_observation_not_an_exception(weather):
    with ReminderStore() as store:
        tools = reminder_registry(store, weather.base_url)
        result = tools.run(Action("getMeetings", "next week"))
    assert result.error and "not a day" in result.text


def test_no_rain_during_the_meeting_sends_nothing(weather):
    with ReminderStore() as store:
        store.conn.execute("UPDATE meetings SET start = '09:00', end = '10:00'")
        result = run(weather, store, EN, True)
        assert store.outbox() == []
    assert "Nothing was sent." in result.answer and "sendWechat" not in [e.name for e in result.trace.tool_calls]


def calls(result) -> list[tuple[str, str]]:
    return [(e.name, e.input) for e in result.trace if isinstance(e, ToolCall)]


@pytest.mark.parametrize("question, day, forecast", [
    ("will it rain in Shanghai during my meeting the day after tomorrow? remind me to take an umbrella",
     "day after tomorrow", '{"city":"Shanghai","date":"2026-07-02"}'),
    ("后天开会的时候上海会下雨吗？提醒我带伞", "后天", '{"city":"上海","date":"2026-07-02"}'),
    ("will it rain during my meeting on 2026-07-01? remind me to take an umbrella", "2026-07-01",
     '{"city":"Beijing","date":"2026-07-01"}'),
    (EN, "tomorrow", '{"city":"Beijing","date":"2026-07-01"}'),
    (ZH, "明天", '{"city":"北京","date":"2026-07-01"}'),
])
def test_the_classroom_looks_at_the_day_the_user_named(weather, question, day, forecast):
    # "the day after tomorrow", 后天 and a date read as today or tomorrow: the wrong meeting's forecast
    with ReminderStore() as store:
        result = run(weather, store, question, False)
    assert calls(result)[:2] == [("getMeetings", day), ("getForecast", forecast)]


@pytest.mark.parametrize("question, says", [
    ("will it rain in Shanghai during my meeting tomorrow? remind me to take an umbrella",
     "no meeting in Shanghai that day (that day's meetings are in Beijing)"),
    ("明天开会的时候上海会下雨吗？提醒我带伞", "那天您没有在上海的会议（那天的会议在北京）"),
])
def test_a_city_no_meeting_that_day_is_in_gets_no_forecast_of_another_city(weather, question, says):
    # the meeting in Beijing was taken instead, and Beijing's rain sent as the answer about Shanghai
    with ReminderStore() as store:
        result = run(weather, store, question, True)
        assert store.outbox() == []
    assert [name for name, _ in calls(result)] == ["getMeetings"] and says in result.answer


def test_the_store_reads_a_day_word_in_any_case_and_an_iso_date_as_python_reads_it():
    with ReminderStore() as store:
        assert store.day(" Tomorrow ") == store.day("明天") == date(2026, 7, 1)
        assert store.day("day after tomorrow") == store.day("后天") == date(2026, 7, 2)
        assert store.day("2026-W27-3") == date.fromisoformat("2026-W27-3") == date(2026, 7, 1)  # was refused
        assert store.day("20260701") == date(2026, 7, 1)


@pytest.mark.parametrize("text, day", [
    ("my meeting the Day After Tomorrow", "day after tomorrow"),
    ("大后天开会", "大后天"),
    ("后天开会", "后天"),
    ("tomorrow, that is 2026-07-01", "2026-07-01"),
    ("order 120260701999", None),
    ("will it rain?", None),
])
def test_day_named_in_finds_the_word_or_date_the_store_reads(text, day):
    assert day_named_in(text) == day


def test_the_classroom_spots_exactly_the_day_words_the_store_reads():
    assert set(DAY_SAID) == set(DAY_WORDS)
    with ReminderStore() as store:
        for word, (zh, en) in DAY_SAID.items():
            assert store.day(word) == store.day(zh), word
