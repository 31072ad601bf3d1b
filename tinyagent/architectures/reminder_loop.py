"""Lesson 21: the third article's closed loop. Look up a meeting, look up the weather for it, and send a reminder.

    "will it rain in Beijing during my meeting tomorrow? remind me to take an umbrella"
       getMeetings("tomorrow")                -> the meetings of 2026-07-01 (a real SQLite table)
       getForecast({"city", "date"})          -> the weather service's forecast, hour by hour (HTTP)
       sendWechat("...take an umbrella")      -> a row in the outbox table, only after a person's yes

A send is a side effect: the message leaves, and cannot be taken back. So `sendWechat` sits behind lesson 15's
gate (`reminder_gate`, a ConfirmationGate): declined, nothing is written and the model reads why. The outbox
is what really happened; `outbox_report` says it in one line per message, whatever the model's answer claims
and whatever a message holds (a newline in a body is printed as \\n, so a body cannot forge a line). A message
that cannot be sent as written (no text, a NUL, a bidi override, a lone surrogate) is refused in a sentence
(`MessageRefused`; the tools say it as an error Observation), and nothing is written.

A message is sent once, as a refund is (shop/database.py): the same message asked again finds the first.
What makes two sends the same is the send's identity:

    channel + recipient + body (its surrounding whitespace stripped) + the day it was sent (the store's clock)

The body carries what the reminder is about (the course's reminders name their meeting's date and hour), so
the same reminder asked twice, or retried after a crash, returns the first message's id with "duplicate":
True and writes nothing; a different body is a new message. The day bounds it: a reminder sent yesterday is
not today's (a daily "take your pills" goes out every day); a retry that crosses midnight sends again. A
UNIQUE index on that identity holds it in the database too, and the look-up and the insert are one
`BEGIN IMMEDIATE` transaction (memory/sqlite_writes.py): two processes sending at once take turns, and a
process killed at any moment leaves either no row or the one row, which the retry then finds.

The store is one SQLite file (or ":memory:"), seeded with the learner's meetings; the clock decides what
"today" and "tomorrow" are, so a notebook prints the same on any day.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, timedelta
from typing import Annotated

from tinyagent.clock import COURSE_NOW, Clock, fixed_clock
from tinyagent.errors import TinyAgentError
from tinyagent.memory.sqlite_files import (
    columns_of,
    connect_file,
    failures_said,
    store_opening,
    why_not_ours,
)
from tinyagent.memory.sqlite_writes import LockWait, immediate_transaction
from tinyagent.registry import ToolRegistry, error_observation
from tinyagent.safe_text import hidden_character, one_line
from tinyagent.toolkit.action_input import read_arguments
from tinyagent.toolkit.confirmation import ConfirmationGate
from tinyagent.toolkit.http_tool import ApiCallFailed, JsonApi
from tinyagent.toolkit.typed_tool import TypedTool, tool
from tinyagent.toolkit.weather_tool import MAX_CITY_CHARS

COURSE_CLOCK = fixed_clock(COURSE_NOW)  # the course's day (lesson 00): tomorrow is 2026-07-01
RECIPIENT = "me"  # a reminder goes to the learner's own WeChat
MAX_MESSAGE_CHARS = 500
# How long a send or a look-up waits for another program's lock on the store's file (SQLite's busy timeout), as the
# shop waits; read at each wait, so that a test can set it small.
BUSY_TIMEOUT_SECONDS = 30.0
# What the errors call the store (memory/sqlite_files.why_unusable: every store's words), and the name they suggest.
NAMED = "the reminder store"
EXAMPLE = "me.db"
# The learner's meetings, as days from the store's today: (days ahead, start, end, title, city, place).
MEETINGS = (
    (1, "15:00", "16:30", "Project review · 项目评审", "北京", "望京 SOHO T1, 12F"),
    (2, "10:00", "11:00", "Supplier call · 供应商电话会", "上海", "online"),
)
DAY_WORDS = {"today": 0, "今天": 0, "tomorrow": 1, "明天": 1, "day after tomorrow": 2, "后天": 2, "大后天": 3}

SCHEMA = """
CREATE TABLE IF NOT EXISTS meetings (
    id INTEGER PRIMARY KEY, day TEXT NOT NULL, start TEXT NOT NULL, end TEXT NOT NULL,
    title TEXT NOT NULL, city TEXT NOT NULL, place TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS outbox (
    id INTEGER PRIMARY KEY, channel TEXT NOT NULL, recipient TEXT NOT NULL, text TEXT NOT NULL,
    sent_at TEXT NOT NULL);
"""
_STORE_COLUMNS = columns_of(SCHEMA)  # what the tables of the store's names must hold to be the store's
# A send's identity (the module docstring): the day is sent_at's first ten characters, 2026-06-30.
ONCE_INDEX = ("CREATE UNIQUE INDEX IF NOT EXISTS outbox_once "
              "ON outbox (channel, recipient, text, substr(sent_at, 1, 10))")
SAME_MESSAGE = ("SELECT id, channel, recipient, text, sent_at FROM outbox WHERE channel = ? AND recipient = ? "
                "AND text = ? AND substr(sent_at, 1, 10) = ? ORDER BY id LIMIT 1")


class ReminderStoreError(TinyAgentError):
    """The store's file cannot be used (a folder, not a database, another program's database), or a look-up or a
    send failed (another program holds the file locked, the disk is full): one line saying why, and for a send that
    nothing was sent (`send_result` says it as an error Observation)."""


class MessageRefused(ValueError):
    """A message `ReminderStore.send` will not send (no text, no recipient, too long, a hidden character): the
    sender's mistake, said in a sentence; nothing was written."""


class ReminderStore:
    """The learner's calendar and message outbox in one SQLite database.

    path:  an SQLite file (made, with its folders, on first use), or ":memory:" (a fresh store, seeded with MEETINGS)
    clock: what "today" is (default: the course's day)

    Raises `ReminderStoreError` for a path that cannot be the store (an empty one, a folder, a pipe, a text file,
    another program's database), and leaves nothing behind that was not there before. A send or a look-up that waits
    for another program's lock waits BUSY_TIMEOUT_SECONDS, in slices that a Ctrl-C or `stop_waiting()` ends
    (memory/sqlite_writes.py), as the shop's do.
    """

    def __init__(self, path: str = ":memory:", *, clock: Clock = COURSE_CLOCK):
        self.clock = clock
        self.path = str(path)
        self._lock = threading.Lock()  # one connection, used from the loop's and a gate's threads
        # Refused before anything is made (a blank path was a file named by spaces); on a failure, nothing is left
        # behind and one line says why (sqlite_files.store_opening).
        with store_opening(self.path, NAMED, EXAMPLE, ReminderStoreError, BUSY_TIMEOUT_SECONDS):
            # Always the file of that name, even "file:me.db?mode=memory", which SQLite would read as a URI and keep
            # in memory. Its busy timeout is one slice of a wait: self._waits waits the rest, and a stop ends it.
            self.conn = connect_file(self.path)
            self.conn.row_factory = sqlite3.Row
            self._waits = LockWait(self.conn, lambda: BUSY_TIMEOUT_SECONDS)
            try:
                self._prepare()
            except BaseException:
                self.conn.close()  # a refused file is left as it was, and not held open
                raise

    def _prepare(self) -> None:
        """Make the tables and seed the meetings, in one transaction, in a file that holds no other program's tables:
        pointed at a session store's file, the outbox made its sessions unreachable. Such a file is refused."""
        with self._lock, immediate_transaction(self.conn, execute=self._waits.execute):
            refusal = why_not_ours(self.conn, _STORE_COLUMNS, self.path, "a reminder store", "meetings and messages")
            if refusal:
                raise ReminderStoreError(refusal)
            for statement in filter(str.strip, SCHEMA.split(";")):  # executescript() would commit first
                self.conn.execute(statement)
            try:
                self.conn.execute(ONCE_INDEX)
            except sqlite3.IntegrityError:
                # An outbox written before sends were once already holds a duplicate: its rows stay as they
                # are, and `send` still finds the first inside its transaction, which is what keeps it once.
                pass
            if self.conn.execute("SELECT COUNT(*) FROM meetings").fetchone()[0] == 0:
                today = self.today()
                self.conn.executemany(
                    "INSERT INTO meetings (day, start, end, title, city, place) VALUES (?, ?, ?, ?, ?, ?)",
                    [((today + timedelta(days=n)).isoformat(), *rest) for n, *rest in MEETINGS])

    def today(self) -> date:
        return self.clock().date()

    def day(self, text: str) -> date:
        """A word of DAY_WORDS ("today", "tomorrow", "明天", ...) or an ISO date ("2026-07-01", or "20260701" as
        Python reads it too) -> the date; ValueError for anything else."""
        key = text.strip()
        if key.lower() in DAY_WORDS:
            return self.today() + timedelta(days=DAY_WORDS[key.lower()])
        try:
            return date.fromisoformat(key)  # as written: 2026-W27-3 has a capital W
        except ValueError:
            raise ValueError(f"not a day: {text[:40]!r}; write today, tomorrow, 明天 or a date like 2026-07-01") from None

    def meetings_on(self, day: date) -> list[dict]:
        with self._lock, self._failures("the meetings could not be read"):
            rows = self._waits.execute("SELECT day, start, end, title, city, place FROM meetings WHERE day = ? "
                                       "ORDER BY start", (day.isoformat(),))
        return [dict(row) for row in rows]

    def send(self, text: str, channel: str = "wechat", recipient: str = RECIPIENT) -> dict:
        """Send one message (write it to the outbox: there is no draft state) and return its row, with
        "duplicate" saying whether the same message had already been sent today.

        Idempotent: the same message (the module docstring says what is the same) returns the first row,
        "duplicate": True, and writes nothing. Raises MessageRefused (a ValueError) for an empty or too long body,
        an empty recipient, or a character that cannot be sent (`hidden_character`) in either.
        """
        text = text.strip()
        if not text:
            raise MessageRefused("a message needs a text")
        if len(text) > MAX_MESSAGE_CHARS:
            raise MessageRefused(f"the message is {len(text)} characters long; the limit is {MAX_MESSAGE_CHARS}")
        if not recipient.strip():  # sendMessage's "to" may be spaces only: its minimum length counts them
            raise MessageRefused("a message needs a recipient")
        for field, value in (("text", text), ("recipient", recipient)):
            # Before the insert: SQLite cannot store a lone surrogate (UnicodeEncodeError), and a NUL or a bidi
            # override would reach the recipient unseen.
            hidden = hidden_character(value)
            if hidden is not None:
                raise MessageRefused(f"the {field} holds a character that cannot be sent, {one_line(hidden)} (a "
                                     "control character such as NUL, a bidi override or a lone surrogate); "
                                     f"write the {field} without it")
        sent_at = self.clock().isoformat(timespec="seconds")
        # One transaction from the look-up to the insert: another thread waits on the lock, another process
        # on SQLite's write lock, so neither can send the same message in between.
        with self._lock, self._failures("nothing was sent"), \
                immediate_transaction(self.conn, execute=self._waits.execute):
            first = self.conn.execute(SAME_MESSAGE, (channel, recipient, text, sent_at[:10])).fetchone()
            if first is not None:
                return {**dict(first), "duplicate": True}
            cursor = self.conn.execute("INSERT INTO outbox (channel, recipient, text, sent_at) VALUES (?, ?, ?, ?)",
                                       (channel, recipient, text, sent_at))
        return {"id": cursor.lastrowid, "channel": channel, "recipient": recipient, "text": text, "sent_at": sent_at,
                "duplicate": False}

    def outbox(self) -> list[dict]:
        """Every message sent, oldest first."""
        with self._lock, self._failures("the outbox could not be read"):
            rows = self._waits.execute("SELECT id, channel, recipient, text, sent_at FROM outbox ORDER BY id")
        return [dict(row) for row in rows]

    def stop_waiting(self) -> None:
        """The program is stopping: a send or a look-up waiting for another program's lock gives up at once (a send:
        nothing was sent), and so does every later one. Call it from any thread: it takes no lock."""
        self._waits.stop_waiting()

    @contextmanager
    def _failures(self, undone: str) -> Iterator[None]:
        """A statement that failed on the file (another program's lock held past BUSY_TIMEOUT_SECONDS, a full disk,
        a file moved away): one line that starts with what was not done (`undone`), then names the store and its file
        and says why and what to do, not in SQLite's own words. A failed send wrote nothing: its transaction is rolled
        back (immediate_transaction)."""
        with failures_said(self.path, NAMED, EXAMPLE, ReminderStoreError, self._waits, undone):
            yield

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
          param_descriptions={"zh": {"day": "哪一天：today、tomorrow、明天，或 2026-07-01 这样的日期"}}, read_only=True)
    def get_meetings(day: Annotated[str, {"minLength": 1, "maxLength": 20}]) -> dict | str:
        """My meetings on one day: start, end, title, city and place.

        Args:
            day: which day: today, tomorrow, 明天, or a date such as 2026-07-01
        """
        try:
            when = store.day(day)
            return {"date": when.isoformat(), "meetings": store.meetings_on(when)}
        # the model's word for the day, or a busy store: not a crash, but this tool's own error
        except (ValueError, ReminderStoreError) as exc:
            return error_observation(str(exc))

    return get_meetings


def forecast_tool(base_url: str, *, read_timeout: float = 5.0) -> TypedTool:
    """The weather service's forecast (toolkit/weather_api.py, GET /forecast), hour by hour."""
    api = JsonApi(base_url, name="the weather API", read_timeout=read_timeout)

    @tool(name="getForecast", descriptions={"zh": "查询一个城市某天逐小时的天气预报（今天或明天）。"},
          param_descriptions={"zh": {"city": "城市名，如 北京", "date": "日期，如 2026-07-01"}}, read_only=True)
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
    def send_wechat(text: Annotated[str, {"minLength": 1, "maxLength": MAX_MESSAGE_CHARS}]) -> dict | str:
        """Send me a WeChat reminder (it really is sent).

        Args:
            text: what the reminder says
        """
        return send_result(store, text)

    return send_wechat


def send_result(store: ReminderStore, text: str, **where: str) -> dict | str:
    """What a send tool returns for `store.send(text, **where)`: the message sent; the first one, with a sentence
    saying it was not sent again; or an error Observation saying why nothing was sent."""
    try:
        sent = store.send(text, **where)
    except MessageRefused as refused:  # the input's mistake, said in the tool's words, not as a crash
        return error_observation(f"nothing was sent: {refused}")
    except ReminderStoreError as failed:  # a busy or full file: its words say nothing was sent, and to try again
        return error_observation(str(failed))
    if sent.pop("duplicate"):
        # Said as the shop says a second refund: the first message's id, and that nothing left twice.
        return {"sent": True, **sent, "duplicate": True,
                "message": f"这条消息今天已经发过（#{sent['id']}），没有重复发送"
                           f"（already sent today as #{sent['id']}; not sent again）"}
    return {"sent": True, **sent}


def reminder_registry(store: ReminderStore, weather_url: str) -> ToolRegistry:
    """The closed loop's three tools: getMeetings, getForecast, sendWechat."""
    return ToolRegistry([meetings_tool(store), forecast_tool(weather_url), message_tool(store)])


# sendWechat's one parameter, as `read_arguments` needs it to read an Action Input the way the tool does.
MESSAGE_PARAMETERS = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


def message_of(action_input: str) -> str:
    """The message a sendWechat Action Input would send, read as the tool reads it (plain text, or the "text" of a
    JSON object) and stripped as `send` strips it; the input itself when it holds no such text."""
    arguments = read_arguments(action_input, MESSAGE_PARAMETERS)
    text = arguments.get("text") if isinstance(arguments, dict) else None
    return text.strip() if isinstance(text, str) else action_input


def reminder_gate(**options) -> ConfirmationGate:
    """Lesson 15's gate on sendWechat, showing the person the message that would leave."""
    # The person reads the message that would leave, not the JSON around it (the gate puts it on one line).
    describe = {"sendWechat": lambda text: f"send a WeChat message to {RECIPIENT}: {message_of(text)}"}
    return ConfirmationGate(("sendWechat",), describe=describe, **options)


def outbox_report(store: ReminderStore, before: int = 0, lang: str = "en") -> str:
    """What the outbox says was sent after its first `before` messages, in one line per message, or that
    nothing was: the truth to set beside the model's answer. Every field is printed through `one_line`, so
    each message is exactly one line whatever its body holds."""
    sent = store.outbox()[before:]
    if not sent:
        return {"en": "Nothing was sent.", "zh": "什么都没有发出。"}[lang]
    head = {"en": "Sent", "zh": "已发出"}[lang]
    return "\n".join(f"{head} #{m['id']} ({one_line(m['channel'])} to {one_line(m['recipient'])}, "
                     f"{one_line(m['sent_at'])}): {one_line(m['text'])}" for m in sent)
