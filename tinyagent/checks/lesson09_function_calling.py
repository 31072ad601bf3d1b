"""Lesson 09 (function calling): tool messages for parallel calls, and the fewest model calls."""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable
from typing import Any

from tinyagent.checks.reporting import _brief, _fail, _json, _not_attempted, _passed, _run, grades


def _native_call(call_id: str, name: str, arguments: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


# The reply exercise 1 answers: four calls, one of them with broken JSON, one whose tool raises.
TOOL_CALLS_REPLY = {"role": "assistant", "content": None, "tool_calls": [
    _native_call("call_order", "queryOrder", '{"orderId": "88231"}'),
    _native_call("call_broken", "queryOrder", '{"orderId": 88232'),
    _native_call("call_parcel", "queryLogistics", '{"trackingNo": "SF1234567890"}'),
    _native_call("call_policy", "searchKnowledge", '{"query": "退货 政策"}'),
    # JSON, but not an object: a tool's arguments are named, so these are refused like broken JSON
    _native_call("call_list", "queryOrder", '["88231"]'),
    _native_call("call_text", "queryLogistics", '"SF1234567890"'),
]}
NOT_OBJECTS = {"call_list": ["88231"], "call_text": "SF1234567890"}
KNOWLEDGE_OFFLINE = "searchKnowledge failed: the knowledge base is offline"


class _CheckTools:
    """run_tool(name, arguments) for exercise 1. queryOrder waits (at most `patience` s) until queryLogistics
    has started, which happens only when the calls run at the same time; searchKnowledge raises."""

    def __init__(self, patience: float):
        self.patience = patience
        self.parcel_started = threading.Event()
        self.lock = threading.Lock()
        self.calls: list[tuple[str, Any]] = []
        self.order_saw_parcel: bool | None = None

    def __call__(self, name: str, arguments: Any) -> str:
        with self.lock:
            self.calls.append((name, arguments))
        if not isinstance(arguments, dict):
            raise TypeError(f"run_tool takes the arguments as a dict, got {type(arguments).__name__}")
        if name == "queryLogistics":
            self.parcel_started.set()
            return json.dumps({"trackingNo": arguments.get("trackingNo"), "status": "已签收"}, ensure_ascii=False)
        if name == "queryOrder":
            self.order_saw_parcel = self.parcel_started.wait(self.patience)
            return json.dumps({"orderId": arguments.get("orderId"), "trackingNo": "SF1234567890"})
        raise RuntimeError(KNOWLEDGE_OFFLINE)


@grades("Exercise 1")
def check_tool_messages(tool_messages: Callable[[dict, Callable], list] | None, patience: float = 10.0) -> None:
    """09, exercise 1: the tool messages that answer a reply's calls: one per call, in the order of the calls,
    each quoting its call's id; unreadable arguments and a failing tool answered with an error; run at once.
    `patience`: how long the check's queryOrder waits for queryLogistics to start before calling it sequential."""
    exercise = "Exercise 1"
    if tool_messages is None:
        return _not_attempted(exercise, "Write def tool_messages(message, run_tool) in the cell above.")
    if not callable(tool_messages):
        _fail(exercise, f"tool_messages should be a function, got {type(tool_messages).__name__}")
    tools = _CheckTools(patience)
    calls = TOOL_CALLS_REPLY["tool_calls"]
    ids = [call["id"] for call in calls]
    messages = _run(exercise, "tool_messages(reply, run_tool)", tool_messages, copy.deepcopy(TOOL_CALLS_REPLY), tools)
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        _fail(exercise, f"return a list of messages (dicts), got {type(messages).__name__}")
    if len(messages) != len(calls):
        _fail(exercise, f"the reply made {len(calls)} calls, and each needs its own tool message; got {len(messages)}")
    roles = [m.get("role") for m in messages]
    if roles != ["tool"] * len(calls):
        _fail(exercise, f'every answer to a call has role "tool", got roles {roles}')
    got = [m.get("tool_call_id") for m in messages]
    if sorted(map(str, got)) == sorted(ids) and got != ids:
        _fail(exercise, f"the messages must follow the order of the calls {ids}, whatever finished first; got {got}")
    if got != ids:
        _fail(exercise, f"each message quotes the id of the call it answers under 'tool_call_id': expected {ids}, "
                        f"got {got}")
    if not all(isinstance(m.get("content"), str) for m in messages):
        _fail(exercise, "each message's content is the tool's result as a string")
    by_id = {m["tool_call_id"]: m["content"] for m in messages}
    if any(arguments in NOT_OBJECTS.values() for _, arguments in tools.calls):
        _fail(exercise, "call_list's and call_text's arguments are JSON but not an object (an array, a string): "
                        "do not run the tool with them; answer each with an error")
    if any(not isinstance(arguments, dict) for _, arguments in tools.calls):
        kinds = sorted({type(arguments).__name__ for _, arguments in tools.calls})
        _fail(exercise, f"run_tool takes the arguments as a dict (json.loads of the call's arguments string), got "
                        f"{', '.join(kinds)}")
    if any(name == "queryOrder" and arguments.get("orderId") != "88231" for name, arguments in tools.calls):
        _fail(exercise, "call_broken's arguments are not valid JSON: answer it with an error, and do not run the "
                        "tool with anything made up")
    broken = _json_error(by_id["call_broken"])
    if broken is None:
        _fail(exercise, f"call_broken's arguments are not valid JSON, so its content should be an error the model "
                        f'can read: a JSON object with an "error" key, got {by_id["call_broken"]!r}')
    for call_id in NOT_OBJECTS:
        if _json_error(by_id[call_id]) is None:
            _fail(exercise, f"{call_id}'s arguments are not a JSON object, so its content should be an error: a JSON "
                            f'object with an "error" key, got {_brief(by_id[call_id])}')
    failed = _json_error(by_id["call_policy"])
    if failed is None or "offline" not in failed:
        _fail(exercise, f"searchKnowledge raised {KNOWLEDGE_OFFLINE!r}: its content should be a JSON object with an "
                        f'"error" key that says so, got {by_id["call_policy"]!r}')
    order = _json(exercise, by_id["call_order"], "call_order's content")
    parcel = _json(exercise, by_id["call_parcel"], "call_parcel's content")
    if order.get("orderId") != "88231" or parcel.get("trackingNo") != "SF1234567890":
        _fail(exercise, "call_order and call_parcel should carry what run_tool returned for them, as it is")
    if not tools.order_saw_parcel:
        _fail(exercise, f"the calls ran one after the other: queryOrder waited {patience:g} s for queryLogistics to "
                        "start, and it never did. Run them at the same time, e.g. with "
                        "concurrent.futures.ThreadPoolExecutor")
    return _passed(exercise, "one tool message per call, in the order of the calls, each quoting its id; the broken "
                             "call and the failing tool are answered with errors the model can read; and the calls "
                             "ran at the same time.")


def _json_error(text: str) -> str | None:
    """The "error" of a JSON object, or None when `text` is not one."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return str(value["error"]) if isinstance(value, dict) and "error" in value else None


# Exercise 2's requests, with the tool calls each needs; queryLogistics needs the tracking number queryOrder gives.
FEWEST_CALLS_REQUESTS = (
    "Where are my parcels for orders 88231, 88232 and 88233?",
    "What is the status of orders 88231 and 88235, and what time is it now?",
    "Where is the parcel of order 88232?",
)
# For each request, its tool calls in waves: a wave holds every call whose inputs are known by then.
_WAVES = (
    (("queryOrder 88231", "queryOrder 88232", "queryOrder 88233"),
     ("queryLogistics SF1234567890", "queryLogistics YT2468013579")),  # 88233 has not shipped: no tracking number
    (("queryOrder 88231", "queryOrder 88235", "getCurrentTime"),),
    (("queryOrder 88232",), ("queryLogistics YT2468013579",)),
)


@grades("Exercise 2")
def check_fewest_model_calls(predicted_calls: list | None) -> None:
    """09, exercise 2: the fewest model calls each protocol needs for three requests, for a model that makes no
    mistake: text ReAct one tool call per reply, function calling every call whose inputs are known."""
    exercise = "Exercise 2"
    if predicted_calls is None:
        return _not_attempted(exercise, "Set predicted_calls to a list of 3 pairs (text ReAct, function calling).")
    n = len(FEWEST_CALLS_REQUESTS)
    if (not isinstance(predicted_calls, (list, tuple)) or len(predicted_calls) != n or not all(
            isinstance(pair, (list, tuple)) and len(pair) == 2
            and all(isinstance(x, int) and not isinstance(x, bool) for x in pair) for pair in predicted_calls)):
        _fail(exercise, f"predicted_calls should be a list of {n} pairs of whole numbers, (text ReAct, function "
                        f"calling) for each request, got {predicted_calls!r}")
    last_call = "Did you count the last model call, the one that writes the answer from the results?"
    for number, (waves, (text, native)) in enumerate(zip(_WAVES, predicted_calls), start=1):
        calls = sum(len(wave) for wave in waves)
        right_text, right_native = calls + 1, len(waves) + 1
        where = f"request {number} ({FEWEST_CALLS_REQUESTS[number - 1]!r})"
        if text != right_text:
            if text == right_text - 1:
                hint = f"{text} is one short. {last_call}"
            elif number == 1 and text == right_text + 1:
                hint = f"{text} is one too many. Order 88233 has not shipped yet: it has no tracking number to look up."
            else:
                hint = (f"{text} is not right. A reply holds one Action, so each tool call costs a model call, and "
                        "one more writes the answer. How many tool calls does the request need?")
            _fail(exercise, f"{where}, text ReAct: {hint}")
        if native != right_native:
            if len(waves) > 1 and native == 2:
                hint = (f"{native} would ask for every call in the first reply, but queryLogistics needs the "
                        "tracking number that queryOrder returns: it can only be asked for in the next reply.")
            elif native == right_native - 1:
                hint = f"{native} is one short. {last_call}"
            else:
                hint = (f"{native} is not right. One reply asks for every call whose inputs are already known; a "
                        "call that needs another's result waits for the next reply; one more reply writes the answer.")
            _fail(exercise, f"{where}, function calling: {hint}")
    return _passed(exercise, "text ReAct pays one model call per tool call; function calling one per wave of "
                             "calls that wait for nothing, so it saves calls where lookups are independent "
                             "(requests 1 and 2) and none on a chain (request 3).")
