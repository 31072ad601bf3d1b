"""The articles' other tools: an HTTP weather lookup (third article) and file tools (second article, lesson 15).

They are not part of the shop; a lesson registers them to show that the same model and loop work with
any tool the prompt lists. The planners find them by name: a tool whose name contains "weather", and
ones whose names contain "write", "read" or "list" with "file".

A weather call that fails with `"retryable": true` (a timeout, a 503: lesson 15's http_tool.py) is tried
once more, since such a failure may pass; a second failure, or one that is not retryable (an unknown
city), is reported to the user as it is. A file tool's refusal (`..`, an absolute path, a link) is
reported too, never worked around.
"""

from __future__ import annotations

import re

from tinyagent.classroom.conversation import Conversation, Step
from tinyagent.classroom.intents import file_name_in, has_any, path_in
from tinyagent.classroom.planning import Act, Answer, act, call, pick, sentence
from tinyagent.classroom.small_talk import cannot
from tinyagent.classroom.vocabulary import CITIES

RAIN_WORDS = ("雨", "雷", "雪", "rain", "shower", "storm", "drizzle", "snow")
# A question about rain or an umbrella gets the umbrella advice; "what is the weather like" gets the weather only.
UMBRELLA_WORDS = (*RAIN_WORDS, "伞", "umbrella")


def find_city(text: str) -> str | None:
    known = next((city for city in CITIES if city.lower() in text.lower()), None)
    if known:
        return known
    match = re.search(r"([\u4e00-\u9fff]{2,3}?)(?:今天|明天|现在)?的?天气", text)
    if match:
        return match.group(1)
    match = re.search(r"weather (?:in|for|at) ([A-Z][A-Za-z]+(?: [A-Z][A-Za-z]+)?)", text)
    return match.group(1) if match else None


def plan_weather(conv: Conversation) -> Act | Answer:
    """The HTTP weather tool of the third article: look the city up, then report it, and say whether to take an
    umbrella when the question asks about rain or an umbrella."""
    city = find_city(conv.request)
    umbrella = has_any(conv.request, UMBRELLA_WORDS)
    if city is None:
        return Answer(
            conv.say("用户问天气，但没说是哪个城市。", "The user asks about the weather but names no city."),
            conv.say("请问您想查哪个城市的天气？", "Which city would you like the weather for?"),
        )
    if conv.tool_for("weather") is None:
        return cannot(conv, f"查询{city}的天气", f"check the weather in {city}")
    step = conv.result("weather", city)
    attempts = sum(1 for s in conv.steps if s.kind == "weather" and s.ran and city in s.input)
    if step is not None and step.error and _retryable(step) and attempts < 2:
        return act(
            conv,
            conv.say(
                f"天气工具失败了：{step.error}。这种错误可能是暂时的（retryable），再查一次{city}的天气。",
                f"The weather tool failed: {step.error}. That may be temporary (it says retryable), so I try "
                f"once more for {city}.",
            ),
            [call(conv, "weather", city=city)],
        )
    if step is None:
        if umbrella:
            asked = conv.say(f"用户想知道{city}今天的天气，以及要不要带伞。",
                             f"The user asks about the weather in {city} and whether to take an umbrella.")
        else:
            asked = conv.say(f"用户想知道{city}现在的天气。", f"The user asks about the weather in {city}.")
        return act(
            conv,
            asked + conv.say(f"先查{city}的天气。", f" I check the weather for {city}."),
            [call(conv, "weather", city=city)],
        )
    if step.error and not umbrella:
        return Answer(
            conv.say(f"天气工具返回错误：{step.error}。", f"The weather tool failed: {step.error}."),
            conv.say(
                f"抱歉，暂时查不到{city}的天气（{step.error}）。",
                f"Sorry, I could not get the weather for {city} ({step.error}).",
            ),
        )
    if step.error:
        return Answer(
            conv.say(
                f"天气工具返回错误：{step.error}，判断不了要不要带伞。",
                f"The weather tool failed: {step.error}. I cannot judge the umbrella question.",
            ),
            conv.say(
                f"抱歉，暂时查不到{city}的天气（{step.error}），没法判断要不要带伞，建议出门前再看一眼天气预报。",
                f"Sorry, I could not get the weather for {city} ({step.error}), so I cannot say whether you "
                "need an umbrella. Check a forecast before you go out.",
            ),
        )
    report = _weather_report(conv, step)
    if not umbrella:
        return Answer(
            conv.say(f"天气工具返回：{report}。", f"The weather tool says: {report}."),
            conv.say(f"{city}现在的天气：{report}。", f"The weather in {city} now: {report}."),
        )
    rain = has_any(report, RAIN_WORDS)
    return Answer(
        conv.say(
            f"天气工具返回：{report}。{'有降雨，应该带伞' if rain else '没有降雨，不用带伞'}。",
            f"The weather tool says: {report}. {'Rain is expected' if rain else 'No rain'}, so "
            f"{'an umbrella is needed' if rain else 'no umbrella is needed'}.",
        ),
        conv.say(
            f"{city}今天的天气：{report}。"
            + ("有雨，出门记得带伞。" if rain else "没有下雨的迹象，不用带伞。"),
            f"Today in {city}: {report}. "
            + (
                "Rain is expected: take an umbrella."
                if rain
                else "No rain expected: you can leave the umbrella at home."
            ),
        ),
    )


def _retryable(step: Step) -> bool:
    """The failed call says another try may work ("retryable": true, as http_tool.py's errors do)."""
    return isinstance(step.data, dict) and step.data.get("retryable") is True


def _weather_report(conv: Conversation, step: Step) -> str:
    """ "小雨，22℃" from a weather Observation: JSON fields, or "天气：小雨，温度：22℃" style text."""
    data = step.data
    if isinstance(data, dict):
        condition = pick(data, "condition_zh") if conv.zh else None
        temperature = pick(data, "temperature", "temp", "temperature_c")
        if isinstance(temperature, (int, float)) and not isinstance(temperature, bool):
            temperature = conv.say(f"{temperature:g}℃", f"{temperature:g} °C")
        found = [condition or pick(data, "weather", "condition", "text", "description"), temperature]
    else:
        text = step.observation or ""
        found = [
            re.search(pattern, text, re.IGNORECASE)
            for pattern in (
                r"(?:天气|weather)\s*[:：]\s*([^，,；;\s]+)",
                r"(?:温度|temperature)\s*[:：]\s*([^，,；;\s]+)",
            )
        ]
        found = [match.group(1) if match else None for match in found]
    parts = [str(value) for value in found if value is not None]
    if parts:
        return conv.say("，", ", ").join(parts)
    return sentence(step.observation or "")


def _file_content(text: str) -> tuple[str, str, str] | None:
    """(content, how to describe it in Chinese, in English) for a write request, or None if unclear."""
    match = re.search(r"(\d+)\s*(?:到|至|-|~|to|through)\s*(\d+)", text)
    if match and int(match.group(1)) <= int(match.group(2)) <= int(match.group(1)) + 1000:
        first, last = int(match.group(1)), int(match.group(2))
        numbers = "\n".join(str(n) for n in range(first, last + 1))
        return (
            numbers,
            f"{first} 到 {last} 的整数（每行一个）",
            f"the numbers {first} to {last}, one per line",
        )
    match = re.search(r"[\"“「']([^\"”」']+)[\"”」']", text)
    if match:
        return match.group(1), f"“{match.group(1)}”", f'"{match.group(1)}"'
    return None


def plan_write_file(conv: Conversation) -> Act | Answer:
    """The second article's writeFile: JSON input {"file_path": ..., "content": ...}."""
    path = file_name_in(conv.request)
    if conv.tool_for("write_file") is None:
        return cannot(conv, f"写入文件 {path}", f"write to {path}")
    content = _file_content(conv.request)
    if content is None:
        return Answer(
            conv.say(
                "用户要写文件，但没说清楚写什么内容。",
                "The user wants a file written but not what goes in it.",
            ),
            conv.say(f"请告诉我要往 {path} 里写入什么内容。", f"What should I write into {path}?"),
        )
    text, what_zh, what_en = content
    step = conv.result("write_file", path)
    if step is None:
        tool = conv.tool_for("write_file")
        return act(
            conv,
            conv.say(
                f"用户要把 {what_zh} 写入 {path}。用 {tool} 写文件，输入是包含 file_path 和 content 的 JSON。",
                f"The user wants {what_en}, in {path}. I use {tool}, whose input is JSON "
                "with file_path and content.",
            ),
            [call(conv, "write_file", file_path=path, content=text)],
        )
    if step.error:
        return Answer(
            conv.say(f"写文件失败：{step.error}。", f"Writing the file failed: {step.error}."),
            conv.say(
                f"抱歉，写入 {path} 失败了（{step.error}）。", f"Sorry, writing {path} failed ({step.error})."
            ),
        )
    return Answer(
        conv.say(
            f"工具返回：{sentence(step.observation or '')}。文件已写好，任务完成。",
            f"The tool said: {sentence(step.observation or '')}. The file is written.",
        ),
        conv.say(f"已把 {what_zh} 写入 {path}。", f"Done: {path} now holds {what_en}."),
    )


def plan_read_file(conv: Conversation) -> Act | Answer:
    """readFile (lesson 15): read the file the user names; a refusal is reported, not worked around."""
    path = path_in(conv.request) or ""
    if conv.tool_for("read_file") is None:
        return cannot(conv, f"读取文件 {path}", f"read {path}")
    step = conv.result("read_file")
    if step is None:
        return act(
            conv,
            conv.say(f"用户想看 {path} 的内容。用 {conv.tool_for('read_file')} 读取它。",
                     f"The user wants to see {path}. I read it with {conv.tool_for('read_file')}."),
            [call(conv, "read_file", file_path=path)],
        )
    if step.error:
        return Answer(
            conv.say(f"读文件被拒绝了：{step.error}。文件工具只能读工作区里的文件，不能绕过，如实告诉用户。",
                     f"Reading was refused: {step.error}. The file tool only reads inside the workspace; I "
                     "do not try to get around that, I say so."),
            conv.say(f"抱歉，我不能读取 {path}：{step.error}。我只能读取工作区里的文件。",
                     f"Sorry, I cannot read {path}: {step.error}. I can only read files inside the workspace."),
        )
    content = pick(step.data, "content", "text")
    content = str(content if content is not None else step.observation or "")
    shown = content if len(content) <= 300 else content[:300] + "…"
    return Answer(
        conv.say(f"读到了 {path}，共 {len(content)} 个字符。", f"I read {path}: {len(content)} characters."),
        conv.say(f"{path} 的内容：\n{shown}", f"Here is {path}:\n{shown}"),
    )


def plan_list_files(conv: Conversation) -> Act | Answer:
    """listFiles (lesson 15): what the workspace holds, by name and kind."""
    if conv.tool_for("list_files") is None:
        return cannot(conv, "列出工作区里的文件", "list the files in the workspace")
    step = conv.result("list_files")
    if step is None:
        return act(
            conv,
            conv.say("用户想知道工作区里有哪些文件。列出工作区的根目录。",
                     "The user wants to know what is in the workspace. I list its top folder."),
            [call(conv, "list_files", folder=".")],
        )
    if step.error:
        return Answer(conv.say(f"列文件失败：{step.error}。", f"Listing failed: {step.error}."),
                      conv.say(f"抱歉，列不出文件：{step.error}。", f"Sorry, I could not list the files: {step.error}."))
    entries = pick(step.data, "entries") or []
    names = [f"{e.get('name')}{'/' if e.get('type') == 'folder' else ''}" for e in entries if isinstance(e, dict)]
    listed = conv.say("、", ", ").join(names) or conv.say("（空的）", "(nothing)")
    return Answer(
        conv.say(f"工作区里有 {len(names)} 项。", f"The workspace holds {len(names)} entries."),
        conv.say(f"工作区里有：{listed}", f"The workspace holds: {listed}"),
    )
