"""Lesson 13 (context engineering): fold a parcel's Observation, trim a request to a budget."""

from __future__ import annotations

import contextlib
import datetime
import json
import random
import re
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

from tinyagent.checks.generated import Rule, Spec, agree_on
from tinyagent.checks.reporting import _brief, _fail, _not_attempted, _passed, grades, shown
from tinyagent.memory.context_budget import ContextBudgetError, request_tokens


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _parcel(tracking_no: str, traces: list[tuple[str, str]], carrier: str = "顺丰速运", status: str = "运输中",
            **more: Any) -> str:
    """A queryLogistics Observation in the shop's own shape (compact JSON), with `more` keys after its traces."""
    return _compact({"trackingNo": tracking_no, "carrier": carrier, "status": status,
                     "traces": [{"time": t, "desc": d} for t, d in traces], **more})


def _fold(text: str) -> str:
    """13, exercise 1's answer (the solution's behaviour)."""
    data = json.loads(text)
    if "error" in data:
        return text
    traces = data["traces"]
    latest = max(traces, key=lambda trace: trace["time"]) if traces else None
    return _compact({"trackingNo": data["trackingNo"], "carrier": data["carrier"], "status": data["status"],
                     "latest": latest, "traces": len(traces)})


# -- exercise 1's inputs, drawn from its spec ------------------------------------------------------
_CARRIERS = ("顺丰速运", "圆通速递", "中通快递", "京东物流", "EMS", "DHL Express", "Royal Mail", "ヤマト運輸")
_STATUSES = ("运输中", "已签收", "派送中", "已揽收", "in transit", "delivered", "清关中 🛃")
_DESCS = ("快件已揽收", "快件到达杭州转运中心", "快件已从杭州转运中心发出，下一站上海转运中心", "快件到达上海转运中心",
          "派送员：张三 138****0000", "Arrived at Leipzig hub", "Out for delivery", "快件已由本人签收",
          "Held at customs — docs needed", "😀 已放入快递柜")


def _tracking_no(rng: random.Random) -> str:
    prefix = rng.choice(("SF", "YT", "ZT", "JD", "EMS", "DHL", "JDVA", "1Z"))
    return prefix + "".join(rng.choice("0123456789") for _ in range(rng.randint(8, 13)))


def _times(rng: random.Random, count: int) -> list[str]:
    """`count` different times, oldest first, over days, months and a year's end; hours of one and two digits."""
    start = rng.choice(((2025, 12, 30), (2026, 6, 28), (2026, 2, 27), (2026, 9, 9)))
    seconds: set[int] = set()
    while len(seconds) < count:
        seconds.add(rng.randrange(0, 5 * 86400, 60 * rng.choice((1, 5, 25))))
    base = datetime.datetime(*start)
    return [(base + datetime.timedelta(seconds=s)).strftime("%Y-%m-%d %H:%M:%S") for s in sorted(seconds)]


def _traces(rng: random.Random, count: int) -> list[tuple[str, str]]:
    return [(time, rng.choice(_DESCS)) for time in _times(rng, count)]


def _a_parcel(rng: random.Random, traces: list[tuple[str, str]], **more: Any) -> str:
    return _parcel(_tracking_no(rng), traces, rng.choice(_CARRIERS), rng.choice(_STATUSES), **more)


def _parcels_in_order(rng: random.Random) -> Iterator[tuple]:
    # one trace each (the newest of those drawn): `latest` is that one however it is picked, so a mistake in
    # picking it fails the next sentence, the one about `latest`, not this one
    for _ in range(8):
        yield (_a_parcel(rng, _traces(rng, rng.randint(1, 5))[-1:]),)
    # as they were means untidied too: a tracking number in lower case or with a space, a status with spaces
    for tracking_no, status in (("sf1234567890", "运输中"), ("SF1234567890 ", " delivered "), (" yt9876543210", "已签收")):
        yield (_parcel(tracking_no, _traces(rng, 1), rng.choice(_CARRIERS), status),)


def _parcels_out_of_order(rng: random.Random) -> Iterator[tuple]:
    for _ in range(4):
        yield (_a_parcel(rng, _traces(rng, rng.randint(2, 6))[::-1]),)  # newest first
    for _ in range(8):
        traces = _traces(rng, rng.randint(3, 7))
        while True:  # in no order: the newest neither first nor last
            rng.shuffle(traces)
            newest = max(traces)
            if traces[0] != newest and traces[-1] != newest:
                break
        yield (_a_parcel(rng, traces),)
    # the newest trace seconds after another in the same minute: the whole time decides, its seconds too
    seconds_apart = [("2026-06-28 08:59:59", "快件到达杭州转运中心"), ("2026-06-28 09:12:05", "快件已揽收"),
                     ("2026-06-28 09:12:48", "Out for delivery"), ("2026-06-27 18:00:00", "快件已揽收")]
    yield (_parcel("ZT7745012093", seconds_apart, "中通快递"),)


def _parcels_without_traces(rng: random.Random) -> Iterator[tuple]:
    for _ in range(3):
        yield (_a_parcel(rng, []),)


def _many_traces(rng: random.Random) -> Iterator[tuple]:
    for count in (10, 12, 15):
        traces = _traces(rng, count)
        rng.shuffle(traces)
        yield (_a_parcel(rng, traces),)
    traces = [(f"2026-06-{day:02d} {day % 24:02d}:30:00", _DESCS[day % len(_DESCS)]) for day in range(1, 24)]
    yield (_parcel("SF1423008817", traces[5:] + traces[:5]),)  # 23 traces: the count has no cap
    # two scans at the same time are two traces (the newest one's time is its own)
    same_time = [("2026-06-28 09:00:00", "快件已揽收"), ("2026-06-28 12:30:00", "快件到达杭州转运中心"),
                 ("2026-06-28 12:30:00", "快件已从杭州转运中心发出，下一站上海转运中心"), ("2026-06-28 18:05:00", "Out for delivery")]
    yield (_parcel("YT5520931174", same_time, "圆通速递"),)


def _parcels_with_more_keys(rng: random.Random) -> Iterator[tuple]:
    for more in ({"eta": "2026-07-01"}, {"receiver": "张*", "phone": "138****0000"}, {"weightKg": 3.2}):
        yield (_a_parcel(rng, _traces(rng, rng.randint(1, 4)), **more),)


def _same_parcel_again(rng: random.Random) -> Iterator[tuple]:
    for _ in range(3):  # asked again later: a newer trace, one more in the count
        number, carrier, traces = _tracking_no(rng), rng.choice(_CARRIERS), _traces(rng, rng.randint(3, 5))
        yield (_parcel(number, traces[:-1], carrier),)
        yield (_parcel(number, traces, carrier, "已签收"),)


def _errors(rng: random.Random) -> Iterator[tuple]:
    number = _tracking_no(rng)
    yield (_compact({"error": f"运单不存在：{number}", "hint": "请核对运单号，可用 queryOrder 查询订单的运单号"}),)
    yield (_compact({"error": "请提供运单号（a tracking number is needed）", "expected": "运单号，如 SF1234567890",
                     "received": ""}),)
    yield (json.dumps({"error": f"tracking number {number} not found"}),)  # with spaces: still word for word
    yield (json.dumps({"hint": "try again later", "error": "carrier timeout 😞"}, ensure_ascii=False, indent=2),)
    yield (_compact({"error": "rate limited", "retryAfter": rng.randint(2, 120)}),)
    # errors with a parcel's keys too: the "error" key alone decides, whatever its value
    yield (_compact({"error": "运单不存在：SF1234567890", "trackingNo": "SF1234567890"}),)
    yield (_parcel("YT7730215566", [("2026-06-28 09:12:00", "快件已揽收")], "圆通速递", "异常", error="carrier timeout"),)
    yield (_parcel("JD0042157781", [("2026-06-29 18:40:00", "快件到达上海转运中心"), ("2026-06-28 21:05:00", "快件已揽收")],
                   "京东物流", error=None),)
    yield (json.dumps({"error": "carrier timeout, try again in a minute", "retryAfter": 60}) + "\n",)  # its \n too


def _parcels_that_mention_an_error(rng: random.Random) -> Iterator[tuple]:
    """Parcels with the word "error" in a trace or the status: no "error" key, so they are folded."""
    for desc in ("Scan error at hub, parcel re-routed", "地址错误 (address error)，已联系收件人"):
        traces = _traces(rng, rng.randint(2, 4))
        at = rng.randrange(len(traces))
        traces[at] = (traces[at][0], desc)
        yield (_a_parcel(rng, traces),)
    yield (_parcel(_tracking_no(rng), _traces(rng, 2), rng.choice(_CARRIERS), "delivery error, retrying"),)
    # the word alone as a value ("error" in quotes in the text): still no "error" key, so it is folded
    yield (_parcel("SF2045318876", [("2026-06-29 08:10:00", "快件已揽收"), ("2026-06-30 06:02:00", "error")],
                   "顺丰速运", "error"),)
    # a status that says something went wrong (异常, "exception"), in Chinese: still no "error" key, so it is folded
    yield (_parcel("YT3318840572", [("2026-06-30 10:25:00", "快件到达上海转运中心"), ("2026-06-30 14:40:00", "派送失败，联系不上收件人")],
                   "圆通速递", "异常"),)


FOLD_RULES = (
    Rule("`trackingNo`, `carrier` and `status` as they were, for any parcel", _parcels_in_order),
    Rule("`latest` is the trace with the latest time, wherever it is", _parcels_out_of_order),
    Rule("`latest` is null when there is no trace", _parcels_without_traces),
    Rule("`traces` is how many traces there were", _many_traces),
    Rule("the fold holds those five keys only", _parcels_with_more_keys),
    Rule("each Observation is folded on its own (the same parcel later)", _same_parcel_again),
    Rule('an Observation with an "error" key comes back unchanged', _errors),
    Rule('a parcel that only mentions an error (no "error" key) is folded', _parcels_that_mention_an_error),
)


_FOLD_KEYS = {"trackingNo", "carrier", "status", "latest", "traces"}


class _Fold(dict):
    """A fold's data, compared as a dict (key order is free) and shown with what most often differs first."""

    def __repr__(self) -> str:
        if set(self) != _FOLD_KEYS:
            return f"a fold with {len(self)} keys"
        latest = self["latest"]
        when = f"at {shown(latest['time'])}" if isinstance(latest, dict) and "time" in latest else _brief(latest, 30)
        return (f"latest {when}, {shown(self['traces'])} traces, {shown(self['status'])}, {shown(self['carrier'])}, "
                f"{shown(self['trackingNo'])}")


def _fold_read(value: Any) -> Any:
    """What is compared: a fold as the data it holds (so key order is free); an error as its very text."""
    if not isinstance(value, str):
        return value
    try:
        data = json.loads(value)
    except ValueError:
        return value
    if not isinstance(data, dict):
        return data
    return value if "error" in data else _Fold(data)


def _compact_json(value: Any) -> str | None:
    if isinstance(value, dict) and "error" in value:  # an error Observation, read and not given back
        return (f"it returned a dict, {_brief(value, 30)}: an Observation with an \"error\" key comes back "
                "unchanged, the very text it was given")
    if not isinstance(value, str):
        return (f"it returned {type(value).__name__} {_brief(value, 30)}: return the fold as JSON text "
                "(json.dumps), not a {type(value).__name__}").replace("{type(value).__name__}", type(value).__name__)
    try:
        data = json.loads(value)
    except ValueError:
        return f"it returned text that is not JSON: {_brief(value, 40)}"
    if isinstance(data, dict) and "error" in data:
        return None  # compared word for word with the Observation
    if isinstance(data, dict) and (wrong := _fold_form(data)):
        return wrong
    if value != _compact(data):
        if value.strip() == _compact(data):
            return "the fold has whitespace around it (a newline?): return the compact JSON text alone"
        if "\\u" in value:
            return "the fold's Chinese is written as \\u escapes: ensure_ascii=False keeps it readable (and shorter)"
        if "\n" in value.strip():
            return "the fold is not compact JSON: it runs over several lines (indent): leave indent out, one line"
        return 'the fold is not compact JSON: separators=(",", ":") leaves out the spaces after , and :'
    return None


def _fold_form(data: dict) -> str | None:
    """What is wrong with a fold's form whatever the parcel (a key missing, `latest` or `traces` of another type),
    so that a failure says so, not the first sentence, about the ids, whose inputs show it first."""
    if isinstance(data.get("traces"), list) and "latest" not in data:
        return None  # the parcel as it came, not folded: the rules' hint says so
    if not _FOLD_KEYS <= set(data):
        return f"The fold has the keys {sorted(data)}; expected {sorted(_FOLD_KEYS)}."
    latest, count = data["latest"], data["traces"]
    if not isinstance(count, (int, float)) or isinstance(count, bool):
        return f"traces is {_brief(count, 30)}: it is how many traces there were, a number."
    if isinstance(latest, str) and latest not in ("", "null", "None"):
        with contextlib.suppress(ValueError):
            if isinstance(json.loads(latest), dict):
                return "`latest` is the trace itself (an object), not JSON text inside the JSON."
        return '`latest` is the whole trace, {"time": ..., "desc": ...}, not a string.'
    if latest and not isinstance(latest, (dict, str)):
        return '`latest` is the trace as an object, {"time": ..., "desc": ...}.'
    if isinstance(latest, dict) and latest and set(latest) != {"time", "desc"}:  # every trace the check makes
        return "`latest` is the whole trace, as it was: its time and its desc, no more."
    return None


def _fold_hint(args: tuple, expected: Any, got: Any, about: tuple[str, ...] = ()) -> str | None:
    """What is wrong with a fold, in a sentence: the key of `about` (the keys the rule's sentence is about) that
    differs, else the first key that does, saying that the rule's own keys are right."""
    if not isinstance(got, str):
        return None  # the shape's message says it all
    want, have = _fold_read(expected), _fold_read(got)
    if isinstance(want, str):
        if isinstance(have, str) and got.strip() == want.strip():
            return "An error Observation comes back unchanged, every character of it: its newline too."
        if json.loads(want)["error"] is None:
            return 'It has an "error" key (null here): it comes back unchanged, whatever its value.'
        return 'An Observation with an "error" key comes back unchanged, every character of it.'
    if not isinstance(have, dict):
        return None
    if got == args[0]:
        said = " (only the word)" if "error" in got.lower() else ""
        return f'It came back unchanged, but it has no "error" key{said}: fold it.'
    if set(have) != set(want):
        return f"The fold has the keys {sorted(have)}; expected {sorted(want)}."
    differ = [key for key in want if want[key] != have[key]]
    wrong = next((key for key in about if key in differ), differ[0])
    said = _key_hint(args, want, have, wrong)
    if about and wrong not in about:  # the rule's inputs showed a mistake in another key
        named = [f"`{key}`" for key in about]
        named_said = " and ".join([", ".join(named[:-1]), named[-1]] if len(named) > 1 else named)
        return f"{named_said} {'is' if len(about) == 1 else 'are'} right here; {said[:1].lower()}{said[1:]}"
    return said


def _key_hint(args: tuple, want: dict, have: dict, wrong: str) -> str:
    """What is wrong with the key `wrong` of a fold (`have`), where the reference's fold is `want`."""
    if wrong == "latest" and want["latest"] is None:
        return "A parcel with no trace has latest = null (None)."
    if wrong == "latest" and isinstance(have["latest"], str):
        with contextlib.suppress(ValueError):
            if isinstance(json.loads(have["latest"]), dict):
                return "`latest` is the trace itself (an object), not JSON text inside the JSON."
        return '`latest` is the whole trace, {"time": ..., "desc": ...}, not a string.'
    if wrong == "latest" and not isinstance(have["latest"], dict):
        return '`latest` is the trace as an object, {"time": ..., "desc": ...}.'
    if wrong == "latest" and set(have["latest"]) != set(want["latest"]):
        return "`latest` is the whole trace, as it was: its time and its desc, no more."
    if wrong == "latest" and re.sub(r"\D", "", str(have["latest"].get("time"))) == re.sub(r"\D", "", want["latest"]["time"]):
        return "`latest` is the trace as it was, its time text too."  # the right trace, its time rewritten
    if wrong == "latest" and str(have["latest"].get("time"))[:16] == want["latest"]["time"][:16]:
        return "The whole time decides, its seconds too: the newest is seconds later in the same minute."
    if wrong == "latest":
        return "The newest trace has the latest time (date and time), wherever it is in the list."
    if wrong == "traces" and have["traces"] == len({trace["time"] for trace in json.loads(args[0])["traces"]}):
        return f"traces is {have['traces']}, expected {want['traces']}: two traces at the same time are two traces."
    if wrong == "traces" and isinstance(have["traces"], int) and have["traces"] < want["traces"]:
        return f"traces is {have['traces']}, expected {want['traces']}: every trace counts, however many there are."
    return f"{wrong} is {_brief(have[wrong], 30)}, expected {_brief(want[wrong], 30)}."


# the keys each rule's sentence is about: a failure's hint names the one of them that is wrong first
_ABOUT = (("trackingNo", "carrier", "status"), ("latest",), ("latest",), ("traces",), (), (), (), ())
FOLD_RULES = tuple(Rule(rule.sentence, rule.inputs, partial(_fold_hint, about=about))
                   for rule, about in zip(FOLD_RULES, _ABOUT, strict=True))


def _parcel_shown(args: tuple) -> str:
    """An Observation as a failure shows it: the parcel's number and how many traces, or the error's text."""
    (text,) = args
    data = json.loads(text)
    if "error" in data:
        return _brief(text, 40)
    count = len(data["traces"])
    return f"parcel {data['trackingNo']} with {count} trace{'' if count == 1 else 's'}"


@grades("Exercise 1", spec=Spec(FOLD_RULES))
def check_fold_logistics(fold_logistics: Callable[[str], str] | None) -> None:
    """13, exercise 1: a fold that knows its tool: a parcel's facts and its newest trace, and how many traces."""
    exercise = "Exercise 1"
    if fold_logistics is None:
        return _not_attempted(exercise, "Write def fold_logistics(text) in the cell above.")
    if not callable(fold_logistics):
        _fail(exercise, f"fold_logistics should be a function, got {type(fold_logistics).__name__}")
    tried = agree_on(exercise, "check_fold_logistics", FOLD_RULES, fold_logistics, _fold, shape=_compact_json,
                     read=_fold_read, call="fold_logistics(text)", show=_parcel_shown)
    return _passed(exercise, f"{tried} generated Observations: the parcel's ids, its newest trace by time and the "
                             "count kept, the rest dropped, as compact JSON; an error passed on word for word.")


# -- exercise 2 -------------------------------------------------------------------------------------
def _trimmed(messages: list[dict], budget: int) -> list[dict]:
    """13, exercise 2's answer (the solution's behaviour): the most recent whole turns that fit with the system
    prompt and the request, as a new list; ContextBudgetError when the two alone are over the budget."""
    system, *earlier, request = messages
    turns: list[list[dict]] = []
    for message in earlier:
        if message["role"] == "user" and not message["content"].startswith("Observation:"):
            turns.append([message])
        else:
            turns[-1].append(message)
    while True:
        trimmed = [system, *(message for turn in turns for message in turn), request]
        if request_tokens(trimmed) <= budget:
            return trimmed
        if not turns:
            raise ContextBudgetError(f"the system prompt and the request alone are over the budget of {budget}")
        turns = turns[1:]


# -- exercise 2's inputs, drawn from its spec ------------------------------------------------------
_SYSTEMS = (
    "You are Bit Mall's assistant. Tools: 1. queryOrder 2. queryLogistics 3. searchKnowledge 4. getCurrentTime",
    ("你是比特商城的客服助手。可用工具：1. queryOrder 查询订单 2. queryLogistics 查询物流 3. applyRefund 申请退款\n"
     "格式：Thought / Action / Action Input，或 Final Answer。"),
    "You are a support agent. Answer in the customer's language. Tools: queryOrder, searchKnowledge.",
)
_REQUESTS = ("Where is order {id}?", "订单 {id} 到哪了？", "Refund {id} please, it is broken.", "发票怎么开？",
             "What are the return rules?", "Thanks!", "好的 👍", "Has {id} arrived?", "帮我查一下 {id} 的物流")
_ANSWERS = ("It reached the Shanghai hub at 07:50 today.", "您的订单 {id} 已签收。", "You're welcome!",
            "7 天无理由退货，15 天内质量问题可退。", "Refund RF2026{n} is submitted.", "19:05 on Tuesday.")
_TOOL_CALLS = (("queryOrder", "{id}", '{{"orderId":"{id}","status":"已签收","price":{price}}}'),
               ("queryLogistics", "SF{n}", '{{"trackingNo":"SF{n}","status":"运输中","traces":[]}}'),
               ("searchKnowledge", "退货 政策", '{{"results":["七天无理由退货","质量问题 15 天内可退"]}}'),
               ("getCurrentTime", "", '{{"now":"2026-06-30 19:05:23"}}'))


def _filled(rng: random.Random, text: str) -> str:
    return text.format(id=rng.randint(10000, 99999), n=rng.randint(10**9, 10**10 - 1), price=rng.randint(9, 19999))


def _a_turn(rng: random.Random, steps: int, end: str = "Final Answer") -> list[dict]:
    """One earlier turn: the request, `steps` Action / Observation pairs, the answer. `end`: "Final Answer",
    "plain" (an answer in plain words), or "none" (the turn stopped at its last Observation, as at max steps)."""
    messages = [{"role": "user", "content": _filled(rng, rng.choice(_REQUESTS))}]
    for _ in range(steps):
        name, given, seen = rng.choice(_TOOL_CALLS)
        messages.append({"role": "assistant",
                         "content": _filled(rng, f"Thought: I look it up.\nAction: {name}\nAction Input: {given}")})
        messages.append({"role": "user", "content": "Observation: " + _filled(rng, seen)})
    if end == "Final Answer":
        messages.append({"role": "assistant", "content": "Thought: I can answer.\nFinal Answer: "
                         + _filled(rng, rng.choice(_ANSWERS))})
    elif end == "plain":
        messages.append({"role": "assistant", "content": _filled(rng, rng.choice(_ANSWERS))})
    return messages


def _conversation(rng: random.Random, turns: int, ends: tuple[str, ...] = ()) -> tuple[list[dict], list[int]]:
    """A conversation of `turns` earlier turns, and the request's size with each number of the newest turns kept
    (sizes[k]: the k newest turns). `ends`: how each turn ends (`_a_turn`), when not all with a Final Answer."""
    system = {"role": "system", "content": rng.choice(_SYSTEMS)}
    if ends:
        earlier = [_a_turn(rng, rng.choice((1, 2)) if end == "none" else rng.choice((0, 1)), end) for end in ends]
    else:
        earlier = [_a_turn(rng, rng.choice((0, 0, 1, 2, 3))) for _ in range(turns)]
    request = {"role": "user", "content": _filled(rng, rng.choice(_REQUESTS))}
    sizes = [request_tokens([system, *(m for turn in earlier[turns - k:] for m in turn), request])
             for k in range(turns + 1)]
    return [system, *(m for turn in earlier for m in turn), request], sizes


def _edges(rng: random.Random) -> Iterator[tuple]:
    for _ in range(10):
        messages, sizes = _conversation(rng, rng.randint(2, 6))
        kept = rng.randrange(len(sizes))
        yield (messages, sizes[kept])  # exactly the size of `kept` turns: they fit, none may go
        if kept:
            yield (messages, sizes[kept] - 1)  # one token less: one more turn must go


def _turns_without_final_answers(rng: random.Random) -> Iterator[tuple]:
    """Turns that end with no Final Answer (stopped at max steps, or answered in plain words), at each budget
    that keeps some of the newest turns."""
    system = {"role": "system", "content": "You are Bit Mall's assistant."}
    stopped = [{"role": "user", "content": "Where is order 88231?"},
               {"role": "assistant", "content": "Thought: I look it up.\nAction: queryOrder\nAction Input: 88231"},
               {"role": "user", "content": 'Observation: {"orderId":"88231","status":"已签收"}'}]
    answered = [{"role": "user", "content": "Thanks!"},
                {"role": "assistant", "content": "Thought: I can answer.\nFinal Answer: You're welcome!"}]
    request = {"role": "user", "content": "发票怎么开？"}
    yield ([system, *stopped, *answered, request], request_tokens([system, *answered, request]))
    for ends in (("none", "Final Answer", "Final Answer"), ("Final Answer", "plain", "none", "Final Answer"),
                 ("none", "none", "plain")):
        messages, sizes = _conversation(rng, len(ends), ends)
        for size in sizes:
            yield (messages, size)
    # a request that only mentions "Observation:" is not an Observation: it starts a turn
    asked = [{"role": "user", "content": "What does 'Observation:' mean in your replies?"},
             {"role": "assistant", "content": "Thought: I can answer.\nFinal Answer: It is what a tool returned."}]
    earlier = [*stopped, {"role": "assistant", "content": "Thought: I can answer.\nFinal Answer: Signed for."}, *asked]
    for kept in (asked, earlier):
        yield ([system, *earlier, request], request_tokens([system, *kept, request]))
    # a request that starts with "Observations" (no colon after "Observation") starts a turn too
    noted = [{"role": "user", "content": "Observations: the box came crushed. Can I return it?"},
             {"role": "assistant", "content": "Thought: I can answer.\nFinal Answer: Yes, within 7 days."}]
    yield ([system, *answered, *noted, request], request_tokens([system, *noted, request]))


def _everything_fits(rng: random.Random) -> Iterator[tuple]:
    for turns in (0, 1, 3, 5):
        messages, sizes = _conversation(rng, turns)
        yield (messages, sizes[-1] + rng.randint(0, 500))


def _between_edges(rng: random.Random) -> Iterator[tuple]:
    for _ in range(6):
        messages, sizes = _conversation(rng, rng.randint(3, 6))
        k = rng.randrange(len(sizes) - 1)
        if sizes[k + 1] - sizes[k] > 2:
            yield (messages, rng.randrange(sizes[k] + 1, sizes[k + 1] - 1))


def _nothing_fits(rng: random.Random) -> Iterator[tuple]:
    for turns in (0, 2, 4):
        messages, sizes = _conversation(rng, turns)
        yield (messages, sizes[0] - rng.choice((1, 1, 7, sizes[0])))
        yield (messages, sizes[0])  # exactly the prompt and the request: they fit, every earlier turn goes


TRIM_RULES = (
    Rule("the newest whole turns that fit, no more dropped than needed", _edges),
    Rule("nothing is dropped when the whole request fits", _everything_fits),
    Rule("oldest turns first, whatever the budget", _between_edges),
    Rule("ContextBudgetError when the prompt and the request alone are over the budget", _nothing_fits),
    Rule("a turn starts at each user request, even after a turn with no Final Answer", _turns_without_final_answers),
)


def _turn_starts(messages: list[dict]) -> set[int]:
    return {id(m) for m in messages if m.get("role") == "user"
            and not str(m.get("content", "")).startswith("Observation:")}


def _trim_hint(args: tuple, expected: Any, got: Any) -> str | None:
    messages, budget = args
    if not isinstance(got, list) or not got:
        return None
    if got[0] != messages[0]:
        return "The system prompt must stay first: it holds the tools and the format."
    if got[-1] != messages[-1]:
        return "The current request must stay last: it is what the model answers."
    kept = got[1:-1]
    earlier = messages[1:-1]
    if any(message not in earlier for message in kept):
        return "It changed a message: keep each one as it was."
    try:
        tokens = request_tokens(got)
    except Exception:  # noqa: BLE001 - messages request_tokens cannot read: the comparison says enough
        return None
    if tokens > budget:
        return f"That is {tokens} tokens, over the budget (count with request_tokens)."
    if kept and (kept[0].get("role") != "user" or str(kept[0].get("content", "")).startswith("Observation:")):
        return "It split a turn: a turn starts at a user request; drop whole turns."
    if kept != earlier[len(earlier) - len(kept):]:
        return "Keep the newest turns, in order, and drop the oldest first."
    if len(kept) < len(expected) - 2:
        if any(m.get("role") == "user" and "Observation:" in str(m.get("content", "")) and m not in kept
               and not str(m.get("content", "")).startswith("Observation:") for m in expected[1:-1]):
            return "A user message that only mentions 'Observation:' is a request: it starts a turn."
        if any(m.get("role") == "user" and m not in kept and str(m.get("content", ""))[:12] in (
                "Observations", "Observation ") for m in expected[1:-1]):
            return "Only 'Observation:', colon and all, is an Observation: this user message starts a turn."
        start, dropped = len(earlier) - (len(expected) - 2), len(earlier) - len(kept)
        if start and not _answered(earlier[start - 1]) and [_answered(m) for m in earlier[start:dropped]].count(
                True) == 1 and _answered(earlier[dropped - 1]):
            return "A turn with no Final Answer ends where the next user request starts: keep that turn."
        if not any(_answered(m) for m in earlier[start:dropped]):  # the turns it dropped and could keep
            return "A turn with no Final Answer is still a whole turn: keep it when it fits."
        if request_tokens(expected) == budget:
            return f"Kept, those turns make {budget} tokens by request_tokens alone: exactly the budget fits."
        return "Drop the oldest turn, one at a time, only until it fits."
    return None


def _answered(message: dict) -> bool:
    return message.get("role") == "assistant" and "Final Answer" in str(message.get("content", ""))


TRIM_RULES = tuple(Rule(rule.sentence, rule.inputs, _trim_hint) for rule in TRIM_RULES)


class _TheSameList(list):
    """What the answer returned when it was the very list it was given (a failure says so)."""


def _a_new_list(value: Any) -> str | None:
    if isinstance(value, _TheSameList):
        return ("it returned the very list it was given: return a new list, so that what is sent can change "
                "without changing the agent's own conversation")
    if not isinstance(value, list) or not all(isinstance(m, dict) for m in value):
        return f"it returned {type(value).__name__} {_brief(value, 30)}: return a list of message dicts"
    return None


def _conversation_shown(args: tuple) -> str:
    messages, budget = args
    turns = len(_turn_starts(messages[1:-1]))
    return (f"{len(messages)} messages ({turns} earlier turns, {request_tokens(messages)} tokens), "
            f"budget {budget}")


def _trim_read(value: Any) -> Any:
    """A list of messages, compared as it is and shown in a few words."""
    if not isinstance(value, list) or not all(isinstance(m, dict) for m in value):
        return value
    return _Messages(value)


class _Messages(list):
    """Messages compared as a list; shown as how many there are and how many earlier turns they keep."""

    def __repr__(self) -> str:
        turns = len(_turn_starts(self[1:-1]))
        oldest = f", the oldest {_brief(str(self[1].get('content')), 24)}" if turns else ""
        return f"{len(self)} messages ({turns} earlier turn{'' if turns == 1 else 's'}{oldest})"


@grades("Exercise 2", spec=Spec(TRIM_RULES))
def check_trim_to_budget(trim_to_budget: Callable[[list[dict], int], list[dict]] | None) -> None:
    """13, exercise 2: drop whole turns, oldest first, until the request fits; raise when nothing fits."""
    exercise = "Exercise 2"
    if trim_to_budget is None:
        return _not_attempted(exercise, "Write def trim_to_budget(messages, budget) in the cell above.")
    if not callable(trim_to_budget):
        _fail(exercise, f"trim_to_budget should be a function, got {type(trim_to_budget).__name__}")

    def trimmed(messages: list[dict], budget: int) -> Any:
        got = trim_to_budget(messages, budget)
        return _TheSameList(got) if got is messages else got

    tried = agree_on(exercise, "check_trim_to_budget", TRIM_RULES, trimmed, _trimmed, shape=_a_new_list,
                     read=_trim_read, call="trim_to_budget(messages, budget)", show=_conversation_shown)
    return _passed(exercise, f"{tried} generated conversations and budgets: whole turns dropped, oldest first, no "
                             "more than needed; the system prompt and the request kept; an impossible budget refused.")
