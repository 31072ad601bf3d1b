"""Lesson 21: the third article's closed loop. The calendar, then the forecast for the meeting, then (if it rains
and the user asked) a reminder; when a reminder was asked for, the answer says what was sent, or that nothing was.

    明天开会的时候北京会下雨吗？提醒我带伞
        getMeetings 明天 -> getForecast {"city":"北京","date":"2026-07-01"} -> sendWechat <the reminder> -> answer

A declined send (lesson 15's gate) is reported as nothing sent, never retried; a send the outbox already held
("duplicate": true) is reported as sent before, not as sent now.
"""

from __future__ import annotations

import re

from tinyagent.classroom.conversation import Conversation
from tinyagent.classroom.intents import has_any
from tinyagent.classroom.planning import Act, Answer, act, call, maybe_done
from tinyagent.classroom.small_talk import cannot
from tinyagent.classroom.vocabulary import REMIND
from tinyagent.classroom.weather_and_files import RAIN_WORDS, find_city

# The words getMeetings reads as a day (reminder_loop.DAY_WORDS, which turns them into dates: the classroom only
# spots them, and a test keeps the two lists the same), with how the thought names each day.
DAY_SAID = {"today": ("今天", "today"), "今天": ("今天", "today"), "tomorrow": ("明天", "tomorrow"),
            "明天": ("明天", "tomorrow"), "day after tomorrow": ("后天", "the day after tomorrow"),
            "后天": ("后天", "the day after tomorrow"), "大后天": ("大后天", "in three days")}
ISO_DATE = re.compile(r"(?<![0-9])[0-9]{4}-[0-9]{2}-[0-9]{2}(?![0-9])")  # 2026-07-01, as the tool's help writes it


def day_named_in(request: str) -> str | None:
    """What the request says the day is, for getMeetings: a date like 2026-07-01 in it, else its longest day word
    ("day after tomorrow" before "tomorrow", 大后天 before 后天), in any case; None when it names no day."""
    found = ISO_DATE.search(request)
    if found:
        return found.group()
    low = request.lower()
    return next((word for word in sorted(DAY_SAID, key=len, reverse=True) if word in low), None)


def plan_reminder(conv: Conversation) -> Act | Answer:
    if conv.tool_for("calendar") is None:
        return cannot(conv, "查看您的日程", "look at your calendar")
    calendar = conv.result("calendar")
    if calendar is None:
        day = day_named_in(conv.request) or "today"  # the store reads it: ReminderStore.day
        zh, en = DAY_SAID.get(day, (day, f"on {day}"))
        return act(conv, conv.say(f"先查日程，看{zh}的会议在什么时间、哪个城市。",
                                  f"First the calendar: when and where is the meeting {en}?"),
                   [call(conv, "calendar", content=day)])
    nothing = conv.say("什么都没有发出。", "Nothing was sent.")
    data = calendar.data if isinstance(calendar.data, dict) else {}
    meetings = [m for m in data.get("meetings") or [] if isinstance(m, dict)]
    if calendar.error or not meetings:
        why = calendar.error or conv.say("那天没有会议", "there is no meeting that day")
        return Answer(conv.say(f"日程工具说：{why}。", f"The calendar says: {why}."),
                      conv.say(f"{why}，所以不用看天气，也没有提醒要发。{nothing}",
                               f"{why[:1].upper()}{why[1:]}, so there is no weather to check and no reminder to send. "
                               f"{nothing}"))
    city = find_city(conv.request)
    in_city = [m for m in meetings if city and city in (m.get("city"), _english(m.get("city")))]
    if city and not in_city:  # the user asked about a city none of that day's meetings is in
        cities = [str(m.get("city") if conv.zh else _english(m.get("city")) or m.get("city")) for m in meetings]
        held = conv.say("、", ", ").join(dict.fromkeys(cities))
        return Answer(conv.say(f"那天的会议不在{city}，在{held}。", f"No meeting that day is in {city}; they are in {held}."),
                      conv.say(f"那天您没有在{city}的会议（那天的会议在{held}），所以不用看{city}的天气，"
                               f"也没有提醒要发。{nothing}",
                               f"You have no meeting in {city} that day (that day's meetings are in {held}), so there "
                               f"is no weather to check and no reminder to send. {nothing}"))
    meeting = (in_city or meetings)[0]
    city = str(meeting.get("city") or city or "")
    city = city if conv.zh else (_english(city) or city)
    title = _title(conv, str(meeting.get("title", "")))
    when = f"{data.get('date', '')} {meeting.get('start', '')}–{meeting.get('end', '')}".strip()
    if conv.tool_for("forecast") is None:
        return cannot(conv, f"查{city}的天气预报", f"get the forecast for {city}")
    forecast = conv.result("forecast")
    if forecast is None:
        return act(conv, conv.say(f"会议是 {when} 在{city}（{title}）。查{city}那天的逐小时预报。",
                                  f"The meeting is {when} in {city} ({title}). I get {city}'s hourly forecast "
                                  "for that day."),
                   [call(conv, "forecast", city=city, date=str(data.get("date", "")))])
    if forecast.error:
        return Answer(conv.say(f"预报工具失败：{forecast.error}。", f"The forecast failed: {forecast.error}."),
                      conv.say(f"抱歉，查不到{city}的天气预报（{forecast.error}），判断不了会议期间会不会下雨。{nothing}",
                               f"Sorry, I could not get the forecast for {city} ({forecast.error}), so I cannot "
                               f"say whether it rains during the meeting. {nothing}"))
    during = _hours_during(forecast.data, str(meeting.get("start", "")), str(meeting.get("end", "")))
    said = dict.fromkeys(str(h.get("condition_zh" if conv.zh else "condition", "")) for h in during)
    conditions = ("、" if conv.zh else ", ").join(said)
    rain = any(has_any(str(h.get("condition", "")) + str(h.get("condition_zh", "")), RAIN_WORDS) for h in during)
    hours = f"{during[0]['hour']}–{during[-1]['hour']}" if during else when
    weather = conv.say(f"{title}（{when}，{city}）期间的预报：{conditions or '无'}",
                       f"The forecast for {title} ({when}, {city}): {conditions or 'none'}")
    if not rain:
        return Answer(conv.say(f"{hours} 没有雨。", f"No rain from {hours}."),
                      conv.say(f"{weather}。会议期间不会下雨，不用带伞，所以没有发提醒。{nothing}",
                               f"{weather}. No rain during the meeting, so no umbrella and no reminder. {nothing}"))
    if not REMIND.found_in(conv.request):
        return Answer(conv.say("会议期间有雨。", "Rain during the meeting."),
                      conv.say(f"{weather}。会议期间有雨，记得带伞。", f"{weather}. It rains during the meeting: "
                               "take an umbrella."))
    if conv.tool_for("message") is None:
        return Answer(conv.say("有雨，但我没有发消息的工具。", "Rain, but I have no tool to send a message."),
                      conv.say(f"{weather}。会议期间有雨，记得带伞；我没有办法发提醒。{nothing}",
                               f"{weather}. It rains during the meeting: take an umbrella. I have no way to send "
                               f"a reminder. {nothing}"))
    text = conv.say(f"{data.get('date', '')} {meeting.get('start', '')} {title}（{city}）期间有{conditions.split('、')[0]}，"
                    "记得带伞。",
                    f"{data.get('date', '')} {meeting.get('start', '')} {title} ({city}): "
                    f"{conditions.split(', ')[0]} expected, take an umbrella.")
    sent = conv.result("message")
    if sent is None:
        return act(conv, conv.say(f"{hours} 有雨，用户要我提醒带伞。发一条微信提醒（需要确认）。",
                                  f"Rain from {hours}, and the user asked for a reminder: I send one (it needs a yes)."),
                   [call(conv, "message", content=text)])
    if sent.error and maybe_done(sent.error):  # no answer came: it may have left, so never "not sent"
        return Answer(conv.say(f"发提醒后没有收到结果：{sent.error}。它可能已经发出，不能说没发。",
                               f"The reminder got no answer: {sent.error}. It may have been sent; I must not say "
                               "it was not."),
                      conv.say(f"{weather}。会议期间有雨，记得带伞。提醒已经发出请求，但没有收到结果（{sent.error}），"
                               "它可能已经发出：请先看看微信里有没有这条提醒，再决定要不要重发。",
                               f"{weather}. It rains during the meeting: take an umbrella. The reminder was sent off "
                               f"but no answer came back ({sent.error}), so it may have been sent: look in WeChat "
                               "for it before asking for it again."))
    if sent.error:
        return Answer(conv.say(f"提醒没有发出：{sent.error}。", f"The reminder was not sent: {sent.error}."),
                      conv.say(f"{weather}。会议期间有雨，记得带伞。提醒没有发出（{sent.error}）。{nothing}",
                               f"{weather}. It rains during the meeting: take an umbrella. The reminder was not "
                               f"sent ({sent.error}). {nothing}"))
    number = sent.data.get("id") if isinstance(sent.data, dict) else None
    if isinstance(sent.data, dict) and sent.data.get("duplicate") is True:
        # sendWechat is idempotent: the same reminder asked again returns the first message and sends
        # nothing. The answer must say it was already sent, not that it was just sent.
        return Answer(conv.say(f"这条提醒今天已经发过（第 {number} 条），没有重复发送。",
                               f"This reminder was already sent today (message #{number}); nothing was sent twice."),
                      conv.say(f"{weather}。会议期间有雨。这条微信提醒今天已经发过了（第 {number} 条）：“{text}”，"
                               "这次没有重复发送。",
                               f"{weather}. It rains during the meeting. I had already sent you this WeChat reminder "
                               f"today (message #{number}): \"{text}\"; it was not sent again."))
    return Answer(conv.say("提醒已经发出。", "The reminder is sent."),
                  conv.say(f"{weather}。会议期间有雨。已给您发了一条微信提醒（第 {number} 条）：“{text}”",
                           f"{weather}. It rains during the meeting. I sent you a WeChat reminder (message #{number}): "
                           f"\"{text}\""))


def _title(conv: Conversation, title: str) -> str:
    """"Project review · 项目评审" in the user's language."""
    parts = [part.strip() for part in title.split("·")]
    return (parts[-1] if conv.zh else parts[0]) if len(parts) == 2 else title


def _english(city: object) -> str:
    from tinyagent.toolkit.weather_api import find_city as known

    found = known(str(city or ""))
    return found.en if found else ""


def _hours_during(data: object, start: str, end: str) -> list[dict]:
    """The forecast's hours from the meeting's start hour up to (not including) its end."""
    hours = data.get("hours") if isinstance(data, dict) else None
    if not isinstance(hours, list):
        return []
    first, last = start[:2], end[:2] if end[3:5] in ("", "00") else f"{int(end[:2]) + 1:02d}"
    return [h for h in hours if isinstance(h, dict) and first <= str(h.get("hour", ""))[:2] < last]
