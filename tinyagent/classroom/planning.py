"""The planner's vocabulary: what a next step can be, and how to read the shop's Observations.

A planner looks at a `Conversation` and returns one of two things:

    Act(thought, calls)     call these tools next (text ReAct uses the first; function calling may send
                            several at once when they do not depend on each other)
    Answer(thought, answer) enough is known: reply to the user

The readers below pull facts out of Observations (an order's dates, a parcel's latest trace, the top
knowledge-base entry). They accept the shop's JSON and a few near variants, and never guess: a fact
that is not in the Observation comes back as None.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import date

from tinyagent.classroom.conversation import Conversation, Step


@dataclass(frozen=True)
class Call:
    """One tool call: which tool (and what kind of tool it is), with arguments under canonical names.

    Canonical names: orderId, trackingNo, query, reason, city, date, file_path, folder, content, expression, to,
    text. Function calling
    renames them to the tool's own schema; text ReAct writes `input`.
    """

    kind: str
    tool: str
    args: dict = field(default_factory=dict)
    # A JSON object to write the input like: its key names, and numbers where it has numbers. Set after a
    # complaint (the error's example), or from the example in the tool's description; {} means "JSON with
    # the canonical names".
    json_example: dict | None = None
    as_object: bool = False  # the prompt wants a JSON object even for no arguments ("{}")

    @property
    def input(self) -> str:
        """The Action Input a ReAct step writes: nothing, the one value, or compact JSON for several."""
        if not self.args:
            return "{}" if self.as_object else ""
        if self.json_example is not None:
            return json.dumps(shaped_like(self.args, self.json_example), ensure_ascii=False, separators=(",", ":"))
        if len(self.args) == 1:
            return str(next(iter(self.args.values())))
        return json.dumps(self.args, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class Act:
    """Call tools next. `thought` is written for text ReAct, where only `calls[0]` is made this round."""

    thought: str
    calls: tuple[Call, ...]


@dataclass(frozen=True)
class Answer:
    """Reply to the user now."""

    thought: str
    answer: str


def call(conv: Conversation, kind: str, **args: str) -> Call:
    """A call to the offered tool of `kind` (the planner checks that one was offered first).

    If that tool already refused an input of ours and gave an example of a good one ("example", or an
    "expected" that is a JSON object), the call follows it: a JSON object with the example's key names,
    and numbers where it has numbers. That is how the model "fixes" a bad argument from the error
    Observation (lesson 07). Before any complaint, a call with several arguments follows the JSON example
    in the tool's description, if it gives one (the field names a typed tool's prompt line shows).
    """
    tool = conv.tool_for(kind)
    if tool is None:
        raise LookupError(f"no {kind} tool was offered")  # a planner bug: it must check tool_for first
    if conv.native:
        return Call(kind, tool, dict(args))
    if conv.json_input:  # the arguments as a JSON object, under the names and types of the tool's schema
        properties = (conv.schemas.get(tool) or {}).get("properties") or {}
        example = {name: 0 if isinstance(spec, dict) and spec.get("type") in ("integer", "number") else ""
                   for name, spec in properties.items()}
        return Call(kind, tool, dict(args), json_example=example or {}, as_object=True)
    complaint = next((s for s in reversed(conv.steps) if s.tool == tool and s.input_error), None)
    if complaint is not None:
        example = _json_object(pick(complaint.data, "example")) or _json_object(pick(complaint.data, "expected"))
        return Call(kind, tool, dict(args), json_example=example or {})
    if len(args) >= 2:
        return Call(kind, tool, dict(args), json_example=json_example_in(conv.tools.get(tool, "")))
    return Call(kind, tool, dict(args))


def _json_object(value: object) -> dict | None:
    """`value` as a JSON object: itself if it is a dict, parsed if it is a string holding one, else None."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return value if isinstance(value, dict) else None


def json_example_in(description: str) -> dict | None:
    """The first JSON object written in a tool's description ('e.g. {"order_id": "88231", ...}'), or None."""
    decoder = json.JSONDecoder()
    start = description.find("{")
    while start >= 0:
        try:
            value, _ = decoder.raw_decode(description, start)
        except ValueError:
            value = None
        if isinstance(value, dict) and value:
            return value
        start = description.find("{", start + 1)
    return None


def shaped_like(args: dict, example: dict) -> dict:
    """`args` (canonical names, string values) under the example's key names, with a digit string as a
    number where the example has a number there, and a number as a string where it has a string."""
    shaped = rename_arguments(args, list(example)) if example else dict(args)
    for key, value in shaped.items():
        wanted = example.get(key)
        if isinstance(wanted, (int, float)) and not isinstance(wanted, bool) and isinstance(value, str) and value.isdigit():
            shaped[key] = int(value)
        elif isinstance(wanted, str) and isinstance(value, (int, float)) and not isinstance(value, bool):
            shaped[key] = str(value)
    return shaped


# Which schema property a canonical argument most likely is, when the names differ.
_ARGUMENT_HINTS = {
    "orderId": ("order",),
    "trackingNo": ("track", "number"),
    "query": ("query", "keyword", "question", "text"),
    "reason": ("reason",),
    "city": ("city", "location", "place"),
    "file_path": ("path", "file", "name"),
    "content": ("content", "text", "data", "body"),
}


def rename_arguments(args: dict, names: list[str], required: list[str] | None = None) -> dict:
    """`args` (canonical names) under the names a tool uses: orderId -> order_id, query -> keyword, ...

    A name that matches nothing is kept; a single argument with no match goes to the (first required) name.
    """
    if not names:
        return dict(args)

    def norm(name: str) -> str:
        return name.lower().replace("_", "").replace("-", "")

    renamed = {}
    for key, value in args.items():
        exact = [n for n in names if norm(n) == norm(key)]
        hinted = [n for n in names if any(h in norm(n) for h in _ARGUMENT_HINTS.get(key, ()))]
        if exact or hinted:
            renamed[(exact or hinted)[0]] = value
        elif len(args) == 1:
            renamed[(required or names)[0]] = value
        else:
            renamed[key] = value
    return renamed


def act(conv: Conversation, thought: str, calls: list[Call]) -> Act:
    """Act on `calls`: all of them at once in function calling, the first one in text ReAct."""
    return Act(thought, tuple(calls if conv.native else calls[:1]))


# --- reading Observations -----------------------------------------------------------------------------


def pick(data: object, *keys: str) -> object:
    """The first of `keys` that `data` (a dict) has with a non-empty value, else None."""
    if not isinstance(data, dict):
        return None
    for key in keys:
        value = data.get(key)
        if value not in (None, ""):
            return value
    return None


# A tool's error that says no answer came, so the call may have done its work all the same: lesson 24's MCP client
# (MAYBE_DONE: "it is not known whether the server did it: it may still"), lesson 10's time limit on a tool
# (ToolTimeout: "It was not stopped and may still finish") and a run stopped inside the call (run_changes.CUT_SHORT:
# "it may have been made", "它可能已经完成"). Read by these notes' own words, as a model reads them, and no looser: a
# refusal that says "this order may have been refunded already" is a refusal. The classroom imports neither the MCP
# SDK nor lessons 10 and 19; tests/test_classroom_unknown_outcome.py keeps these words finding each note.
MAYBE_DONE_WORDS = ("not known whether", "may still finish", "may have been made", "可能已经完成")


def maybe_done(error: str) -> bool:
    """Whether a tool's error says the call may have done its work (no answer came): not a failure to report as one."""
    low = error.lower()
    return any(words in low for words in MAYBE_DONE_WORDS)


DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
DATETIME = re.compile(r"(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2})")


def date_in(text: object) -> date | None:
    """The first YYYY-MM-DD date in `text`, or None."""
    match = DATE.search(str(text or ""))
    return date.fromisoformat(match.group()) if match else None


@dataclass(frozen=True)
class Order:
    """An order as queryOrder reported it. `stage` is what its status means for after-sales."""

    order_id: str
    product: str | None
    status: str | None
    order_time: str | None
    sign_time: str | None
    tracking_no: str | None
    stage: str  # "unshipped" | "in_transit" | "signed" | "cancelled" | "refunded" | "unknown"

    @property
    def signed_on(self) -> date | None:
        return date_in(self.sign_time)


def read_order(step: Step, order_id: str) -> Order:
    data = step.data if isinstance(step.data, dict) else {}
    status = pick(data, "status", "orderStatus")
    sign_time = pick(data, "signTime", "sign_time", "signedAt", "deliveredAt")
    return Order(
        order_id=str(pick(data, "orderId", "order_id") or order_id),
        product=pick(data, "product", "productName", "product_name", "item"),
        status=status,
        order_time=pick(data, "orderTime", "order_time", "createdAt"),
        sign_time=sign_time,
        tracking_no=pick(data, "trackingNo", "tracking_no", "trackingNumber"),
        stage=order_stage(status, sign_time),
    )


def order_stage(status: object, sign_time: object) -> str:
    """Where an order is in its life, from its status words (Chinese or English) and signing time."""
    text = str(status or "").lower()

    def has(*words: str) -> bool:
        return any(word in text for word in words)

    # Order matters: "未签收" contains "签收", and "not shipped" contains "shipped".
    if has("取消", "cancel"):
        return "cancelled"
    if has("退款", "已退", "refund"):
        return "refunded"
    if has(
        "待发货", "未发货", "待付款", "已付款", "not shipped", "unshipped", "pending", "paid", "processing"
    ):
        return "unshipped"
    if sign_time:
        return "signed"
    if has(
        "运输", "已发货", "派送", "配送", "未签收", "transit", "shipped", "out for delivery", "delivering"
    ):
        return "in_transit"
    if has("签收", "收货", "完成", "delivered", "signed", "completed"):
        return "signed"
    return "unknown"


@dataclass(frozen=True)
class Parcel:
    """A parcel as queryLogistics reported it; `latest` is the newest trace as (time, description)."""

    tracking_no: str
    carrier: str | None
    status: str | None
    latest: tuple[str, str] | None
    trace_count: int


def read_parcel(step: Step, tracking_no: str) -> Parcel:
    data = step.data if isinstance(step.data, dict) else {}
    traces = pick(data, "traces", "trace", "events", "history") or []
    entries = [
        (
            str(pick(t, "time", "timestamp", "date") or ""),
            str(pick(t, "desc", "description", "status", "event") or ""),
        )
        for t in traces
        if isinstance(t, dict)
    ]
    latest = (
        max(entries, key=lambda entry: entry[0]) if entries else None
    )  # newest by time, whatever the order
    return Parcel(
        tracking_no=str(pick(data, "trackingNo", "tracking_no") or tracking_no),
        carrier=pick(data, "carrier", "company", "courier"),
        status=pick(data, "status"),
        latest=latest,
        trace_count=len(entries),
    )


def top_knowledge(step: Step) -> tuple[str | None, str] | None:
    """(title, content) of the best knowledge-base hit, or None when the search found nothing."""
    data = step.data
    if data is None:
        text = (step.observation or "").strip()
        return (None, text) if text else None
    items = data if isinstance(data, list) else None
    if isinstance(data, dict):
        items = next(
            (
                data[key]
                for key in ("results", "hits", "items", "matches", "documents")
                if isinstance(data.get(key), list)
            ),
            [data] if pick(data, "content", "text", "answer") else [],
        )
    if not items:
        return None
    top = items[0]
    if isinstance(top, str):
        return None, top
    title = pick(top, "title", "matched", "question", "topic")
    content = pick(top, "content", "text", "answer", "snippet", "body")
    return (str(title) if title else None), str(
        content if content is not None else json.dumps(top, ensure_ascii=False)
    )


WEEKDAYS_ZH = ("星期一", "星期二", "星期三", "星期四", "星期五", "星期六", "星期日")
WEEKDAYS_EN = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def read_now(step: Step) -> tuple[date, str] | None:
    """(today, "HH:MM") from a getCurrentTime Observation, or None if it holds no date and time."""
    match = DATETIME.search(step.text)
    if not match:
        return None
    return date.fromisoformat(match.group(1)), match.group(2)


def sentence(text: str) -> str:
    """`text` without its final full stop, so it can be put inside a longer sentence."""
    return text.strip().rstrip("。.！!")
