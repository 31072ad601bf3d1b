"""Lesson 21: the third article's closed loop. Look up a meeting, look up the weather for it, and send a reminder.

    "will it rain in Beijing during my meeting tomorrow? remind me to take an umbrella"
       getMeetings("tomorrow")                -> the meetings of 2026-07-01 (a real SQLite table)
       getForecast({"city", "date"})          -> the weather service's forecast, hour by hour (HTTP)
       sendWechat("...take an umbrella")      -> a row in the outbox table, only after a person's yes

A send is a side effect: the message leaves, and cannot be taken back. So `sendWechat` sits behind lesson 15's
gate (`reminder_gate`, a ConfirmationGate): declined, nothing is written and the model reads why. The outbox
is what really happened; `outbox_report` says it in one line, whatever the model's answer claims.

The store is one SQLite file (or ":memory:"), seeded with the learner's meetings; the clock decides what
"today" and "tomorrow" are, so a notebook prints the same on any day.
"""

from __future__ import annotations

import sqlite3
import threading
from datetime import date, timedelta
from typing import Annotated

from tinyagent.clock import Clock, fixed_clock
from tinyagent.memory.sqlite_writes import immediate_transaction
from tinyagent.registry import ToolRegistry
from tinyagent.toolkit.confirmation import ConfirmationGate
from tinyagent.toolkit.http_tool import ApiCallFailed, JsonApi
from tinyagent.toolkit.typed_tool import TypedTool, tool
from tinyagent.toolkit.weather_tool import MAX_CITY_CHARS

COURSE_CLOCK = fixed_clock("2026-06-30T19:05:23")  # the course's day (lesson 00): tomorrow is 2026-07-01
RECIPIENT = "me"  # a reminder goes to the learner's own WeChat
MAX_MESSAGE_CHARS = 500
# The learner's meetings, as days from the store's today: (days ahead, start, end, title, city, place).
MEETINGS = (
    (1, "15:00", "16:30", "Project review · 项目评审", "北京", "望京 SOHO T1, 12F"),
    (2, "10:00", "11:00", "Supplier call · 供应商电话会", "上海", "online"),
)
DAY_WORDS = {"today": 0, "今天": 0, "tomorrow": 1, "明天": 1, "day after tomorrow": 2, "后天": 2}

SCHEMA = """
CREATE TABLE IF NOT EXISTS meetings (
    id INTEGER PRIMARY KEY, day TEXT NOT NULL, start TEXT NOT NULL, end TEXT NOT NULL,
    title TEXT NOT NULL, city TEXT NOT NULL, place TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS outbox (
    id INTEGER PRIMARY KEY, channel TEXT NOT NULL, recipient TEXT NOT NULL, text TEXT NOT NULL,
    sent_at TEXT NOT NULL);
"""


class ReminderStore:
    """The learner's calendar and message outbox in one SQLite database.

    path:  an SQLite file, or ":memory:" (a fresh store, seeded with MEETINGS)
    clock: what "today" is (default: the course's day)
    """

    def __init__(self, path: str = ":memory:", *, clock: Clock = COURSE_CLOCK):
        self.clock = clock
        self._lock = threading.Lock()  # one connection, used from the loop's and a gate's threads
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.conn.row_factory = sqlite3.Row
        self.conn.executescript(SCHEMA)
        with self._lock, immediate_transaction(self.conn):
            if self.conn.execute("SELECT COUNT(*) FROM meetings").fetchone()[0] == 0:
                today = self.today()
                self.conn.executemany(
                    "INSERT INTO meetings (day, start, end, title, city, place) VALUES (?, ?, ?, ?, ?, ?)",
                    [((today + timedelta(days=n)).isoformat(), *rest) for n, *rest in MEETINGS])

    def today(self) -> date:
        return self.clock().date()

    def day(self, text: str) -> date:
        """"tomorrow", "明天", "2026-07-01" -> the date; ValueError for anything else."""
        key = text.strip().lower()
        if key in DAY_WORDS:
            return self.today() + timedelta(days=DAY_WORDS[key])
        try:
            return date.fromisoformat(key)
        except ValueError:
            raise ValueError(f"not a day: {text[:40]!r}; write today, tomorrow, 明天 or a date like 2026-07-01") from None

    def meetings_on(self, day: date) -> list[dict]:
        with self._lock:
            rows = self.conn.execute("SELECT day, start, end, title, city, place FROM meetings WHERE day = ? "
                                     "ORDER BY start", (day.isoformat(),)).fetchall()
        return [dict(row) for row in rows]

    def send(self, text: str, channel: str = "wechat", recipient: str = RECIPIENT) -> dict:
        """Write one message to the outbox (it is sent: there is no draft state) and return its row."""
        sent_at = self.clock().isoformat(timespec="seconds")
        with self._lock, immediate_transaction(self.conn):
            cursor = self.conn.execute("INSERT INTO outbox (channel, recipient, text, sent_at) VALUES (?, ?, ?, ?)",
                                       (channel, recipient, text, sent_at))
        return {"id": cursor.lastrowid, "channel": channel, "recipient": recipient, "text": text, "sent_at": sent_at}

    def outbox(self) -> list[dict]:
        """Every message sent, oldest first."""
        with self._lock:
            rows = self.conn.execute("SELECT id, channel, recipient, text, sent_at FROM outbox ORDER BY id").fetchall()
        return [dict(row) for row in rows]

    def close(self) -> None:
        self.conn.close()

    def __enter__(self):  # the store itself, for `with ReminderStore() as store:`
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<ReminderStore {len(self.outbox())} message(s) in the outbox>"


def meetings_tool(store: ReminderStore) -> TypedTool:
    @tool(name="getMeetings", descriptions={"zh": "查询我某一天的会议（时间、标题、城市、地点）。"},
          param_descriptions={"zh": {"day": "哪一天：today、tomorrow、明天，或 2026-07-01 这样的日期"}})
    def get_meetings(day: Annotated[str, {"minLength": 1, "maxLength": 20}]) -> dict:
        """My meetings on one day: start, end, title, city and place.

        Args:
            day: which day: today, tomorrow, 明天, or a date such as 2026-07-01
        """
        when = store.day(day)
        return {"date": when.isoformat(), "meetings": store.meetings_on(when)}

    return get_meetings


def forecast_tool(base_url: str, *, read_timeout: float = 5.0) -> TypedTool:
    """The weather service's forecast (weather_service.py, GET /forecast), hour by hour."""
    api = JsonApi(base_url, name="the weather API", read_timeout=read_timeout)

    @tool(name="getForecast", descriptions={"zh": "查询一个城市某天逐小时的天气预报（今天或明天）。"},
          param_descriptions={"zh": {"city": "城市名，如 北京", "date": "日期，如 2026-07-01"}})
    def get_forecast(city: Annotated[str, {"minLength": 1, "maxLength": MAX_CITY_CHARS}],
                     date: Annotated[str, {"minLength": 10, "maxLength": 10}]) -> dict | str:
        """The weather forecast of one city, hour by hour, for today or tomorrow.

        Args:
            city: the city's name, e.g. 北京
            date: the day, e.g. 2026-07-01
        """
        try:
            return api.get("/forecast", {"city": city.strip(), "date": date.strip()})
        except ApiCallFailed as failure:
            return failure.observation("getForecast")

    return get_forecast


def message_tool(store: ReminderStore) -> TypedTool:
    @tool(name="sendWechat", descriptions={"zh": "给我自己发一条微信提醒（会真的发出去）。"},
          param_descriptions={"zh": {"text": "提醒的内容"}})
    def send_wechat(text: Annotated[str, {"minLength": 1, "maxLength": MAX_MESSAGE_CHARS}]) -> dict:
        """Send me a WeChat reminder (it really is sent).

        Args:
            text: what the reminder says
        """
        return {"sent": True, **store.send(text)}

    return send_wechat


def reminder_registry(store: ReminderStore, weather_url: str) -> ToolRegistry:
    """The closed loop's three tools: getMeetings, getForecast, sendWechat."""
    return ToolRegistry([meetings_tool(store), forecast_tool(weather_url), message_tool(store)])


def reminder_gate(**options) -> ConfirmationGate:
    """Lesson 15's gate on sendWechat, showing the person the message that would leave."""
    describe = {"sendWechat": lambda text: f"send a WeChat message to {RECIPIENT}: {text}"}
    return ConfirmationGate(("sendWechat",), describe=describe, **options)


def outbox_report(store: ReminderStore, before: int = 0, lang: str = "en") -> str:
    """What the outbox says was sent after its first `before` messages, in one line per message, or that
    nothing was: the truth to set beside the model's answer."""
    sent = store.outbox()[before:]
    if not sent:
        return {"en": "Nothing was sent.", "zh": "什么都没有发出。"}[lang]
    head = {"en": "Sent", "zh": "已发出"}[lang]
    return "\n".join(f"{head} #{m['id']} ({m['channel']} to {m['recipient']}, {m['sent_at']}): {m['text']}" for m in sent)
