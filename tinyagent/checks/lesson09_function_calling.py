"""Lesson 09 (function calling): tool messages for parallel calls, and the fewest model calls."""

from __future__ import annotations

import copy
import inspect
import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from tinyagent.checks.generated import Rule, Spec, agree_on
from tinyagent.checks.reporting import _brief, _fail, _json, _not_attempted, _passed, _run, grades, shown
from tinyagent.shop.tools import to_json


def _native_call(call_id: str, name: str, arguments: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


# The reply exercise 1 answers: six calls, one of them broken JSON, two JSON that is not an object, one whose tool
# raises.
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
# More calls than a small pool has threads: four queryOrder calls, each waiting for the queryLogistics after them.
CROWDED_REPLY = {"role": "assistant", "content": None, "tool_calls": [
    *(_native_call(f"call_order_{n}", "queryOrder", f'{{"orderId": "8823{n}"}}') for n in range(1, 5)),
    _native_call("call_parcel", "queryLogistics", '{"trackingNo": "SF1234567890"}'),
]}
# More calls than any pool of at most 32 threads has (ThreadPoolExecutor() has min(32, cpus + 4)): 32 queryOrder
# calls, each waiting for the queryLogistics after them.
CROWDED_33_REPLY = {"role": "assistant", "content": None, "tool_calls": [
    *(_native_call(f"call_order_{n}", "queryOrder", f'{{"orderId": "{88200 + n}"}}') for n in range(1, 33)),
    _native_call("call_parcel", "queryLogistics", '{"trackingNo": "SF1234567890"}'),
]}
# The other way round: each queryLogistics waits for the queryOrder between them, so calls run one after the
# other fail in any order (the reply's, from the end, sorted by tool name).
PARCEL_WAITS_REPLY = {"role": "assistant", "content": None, "tool_calls": [
    _native_call("call_parcel_1", "queryLogistics", '{"trackingNo": "SF1234567890"}'),
    _native_call("call_order", "queryOrder", '{"orderId": "88231"}'),
    _native_call("call_parcel_2", "queryLogistics", '{"trackingNo": "YT2468013579"}'),
]}
KNOWLEDGE_OFFLINE = "searchKnowledge failed: the knowledge base is offline"


def _run_tool(name: str, arguments: Any) -> None:
    """How the exercise calls run_tool (its signature, for _CheckTools to bind a call to)."""


_RUN_TOOL = inspect.signature(_run_tool)


class _CheckTools:
    """run_tool(name, arguments) for exercise 1. The `waiter` tool (queryOrder, or queryLogistics) waits until the
    other of the two has started, which happens only when the calls run at the same time; searchKnowledge raises.
    Every waiter waits until one deadline, `patience` s after the first began to wait: calls run in turns, a pool's
    worth at a time, fail in `patience` s, not in `patience` s a turn."""

    def __init__(self, patience: float, waiter: str = "queryOrder"):
        self.patience = patience
        self.waiter = waiter
        self.awaited = "queryLogistics" if waiter == "queryOrder" else "queryOrder"
        self.started = threading.Event()
        self.lock = threading.Lock()
        self.calls: list[tuple[str, Any]] = []
        self.saw: list[bool] = []  # for each run of the waiter: whether the awaited tool had started
        self.threads: set[str] = set()  # the names of the threads the waiter ran in (asyncio's are asyncio_0, ...)
        self.deadline: float | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> str:
        try:  # bound here, so that a call of another shape never names this class in what it raises
            bound = _RUN_TOOL.bind(*args, **kwargs).arguments
        except TypeError as error:
            raise TypeError(f"run_tool(name, arguments): {error}") from None
        name, arguments = bound["name"], bound["arguments"]
        with self.lock:
            self.calls.append((name, arguments))
        if not isinstance(arguments, dict):
            raise TypeError(f"run_tool takes the arguments as a dict, got {type(arguments).__name__}")
        if name == self.awaited:
            self.started.set()
        if name == self.waiter:
            saw = self.started.wait(self._left())
            with self.lock:
                self.saw.append(saw)
                self.threads.add(threading.current_thread().name)
        if name == "queryLogistics":
            return json.dumps({"trackingNo": arguments.get("trackingNo"), "status": "已签收"}, ensure_ascii=False)
        if name == "queryOrder":
            return json.dumps({"orderId": arguments.get("orderId"), "trackingNo": "SF1234567890"})
        raise RuntimeError(KNOWLEDGE_OFFLINE)

    def _left(self) -> float:
        """How long a waiter may still wait: until the deadline, set when the first waiter began."""
        with self.lock:
            if self.deadline is None:
                self.deadline = time.monotonic() + self.patience
            return max(0.0, self.deadline - time.monotonic())

    def all_saw(self) -> bool:
        return bool(self.saw) and all(self.saw)


def _tool_messages(message: dict, run_tool: Callable[[str, Any], str]) -> list[dict]:
    """09, exercise 1's answer (the solution's behaviour): one tool message per call, in the order of the calls;
    arguments that are not a JSON object and a tool that raises answered with {"error": ...}; run in threads."""

    def answer(call: dict) -> str:
        try:
            arguments = json.loads(call["function"]["arguments"] or "{}")
        except ValueError as error:
            return json.dumps({"error": f"the arguments are not valid JSON: {error}"})
        if not isinstance(arguments, dict):
            return json.dumps({"error": "the arguments are not a JSON object"})
        try:
            return run_tool(call["function"]["name"], arguments)
        except Exception as error:  # noqa: BLE001 - a failing tool is an error the model reads
            return json.dumps({"error": f"{type(error).__name__}: {error}"}, ensure_ascii=False)

    calls = message["tool_calls"]
    if not calls:  # no calls, no tool messages (and a pool of no threads is an error)
        return []
    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        results = list(pool.map(answer, calls))
    return [{"role": "tool", "tool_call_id": call["id"], "content": text} for call, text in zip(calls, results)]


# -- exercise 1's inputs, drawn from its spec: (the reply, {tool name: what it raises}) ---------------------
_TOOLS = ("queryOrder", "queryLogistics", "searchKnowledge", "getCurrentTime", "checkStock", "get_weather")
_GOOD_ARGUMENTS = (
    lambda rng: {"orderId": str(rng.randint(10000, 99999))},
    lambda rng: {"trackingNo": rng.choice(("SF", "YT", "JD")) + str(rng.randint(10**9, 10**10 - 1))},
    lambda rng: {"query": rng.choice(("退货 政策", "warranty", "七天无理由退货怎么算运费？", "发票 🧾"))},
    lambda rng: {},
    lambda rng: {"city": rng.choice(("上海", "Berlin", "São Paulo")), "days": rng.randint(1, 14)},
    lambda rng: {"product": "S10 Pro", "options": {"colour": "白色", "sizes": [rng.randint(1, 99), 2]}},
)
_NOT_JSON = ('{"orderId": 88232', "{'orderId': '88231'}", "orderId=88231", '{"orderId": "88231"} and more',
             '{"query": "退货\n政策"}', "{", '{"orderId": "88231",}')
_NOT_OBJECTS = ('["88231"]', '"SF1234567890"', "88231", "null", "true", '[{"orderId": "88231"}]')


def _call_id(rng: random.Random, n: int) -> str:
    shape = rng.randrange(4)
    if shape == 0:
        return "call_" + "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(rng.randint(6, 24)))
    if shape == 1:
        return f"toolu_01{rng.randint(10**9, 10**10 - 1)}"
    if shape == 2:
        return f"call_{n}"
    return str(rng.randint(0, 10**6))


def _encoded(rng: random.Random, arguments: dict) -> str:
    """Arguments as a model sends them: JSON, in one line or several, Chinese kept or escaped."""
    return json.dumps(arguments, ensure_ascii=rng.random() < 0.3, indent=rng.choice((None, None, 2)))


def _reply(rng: random.Random, arguments: list[str]) -> dict:
    ids: list[str] = []
    while len(ids) < len(arguments):  # ids are unique within a reply
        call_id = _call_id(rng, len(ids))
        if call_id not in ids:
            ids.append(call_id)
    calls = [_native_call(call_id, rng.choice(_TOOLS), text) for call_id, text in zip(ids, arguments)]
    return {"role": "assistant", "content": rng.choice((None, "", "我来查一下。", "Let me check.")), "tool_calls": calls}


def _good(rng: random.Random) -> str:
    return _encoded(rng, rng.choice(_GOOD_ARGUMENTS)(rng))


def _every_call_answered(rng: random.Random) -> Iterator[tuple]:
    for size in (1, 1, 2, 3, 4, 5, 6, 8, 10, 12):
        yield (_reply(rng, [_good(rng) for _ in range(size)]), {})


def _unreadable_arguments(rng: random.Random) -> Iterator[tuple]:
    drawn = set()
    for _ in range(10):
        texts = [_good(rng) for _ in range(rng.randint(0, 4))]
        for _ in range(rng.randint(1, 3)):
            at = rng.randint(0, len(texts))  # drawn before the text, as always
            text = rng.choice(_NOT_JSON + _NOT_OBJECTS)
            drawn.add(text)
            texts.insert(at, text)
        yield (_reply(rng, texts), {})
    # every one the draws above missed (trailing text after an object, say), a call of its own; no draw here, so
    # that the rules after this one get the inputs they always got
    for n, text in enumerate(text for text in _NOT_JSON + _NOT_OBJECTS if text not in drawn):
        call = _native_call(f"call_{n}", "queryOrder", text)
        yield ({"role": "assistant", "content": None, "tool_calls": [call]}, {})


_RAISED = ("the knowledge base is offline", "知识库离线", "timeout after 5 s", "订单服务不可用：503")


def _tools_that_raise(rng: random.Random) -> Iterator[tuple]:
    for _ in range(10):
        reply = _reply(rng, [_good(rng) for _ in range(rng.randint(1, 6))])
        names = sorted({call["function"]["name"] for call in reply["tool_calls"]})
        raising = {name: rng.choice(_RAISED) for name in rng.sample(names, rng.randint(1, len(names)))}
        yield (reply, raising)
    # not only RuntimeError: a tool raises whatever its code raises (a missing key, a bad value, a timeout)
    order = _native_call("call_1", "queryOrder", '{"order_id": "88231"}')
    yield ({"role": "assistant", "content": None, "tool_calls": [order, _native_call("call_2", "getCurrentTime", "{}")]},
           {"queryOrder": ("KeyError", "orderId")})
    yield ({"role": "assistant", "content": "我来查一下。", "tool_calls": [
        _native_call("call_a", "checkStock", '{"product": "S10 Pro", "count": "两台"}'),
        _native_call("call_b", "queryLogistics", '{"trackingNo": "SF1234567890"}'),
        _native_call("call_c", "get_weather", '{"city": "上海", "days": 3}')]},
        {"checkStock": ("ValueError", "count 两台 is not a number"), "get_weather": ("TimeoutError", "timeout after 5 s")})
    yield ({"role": "assistant", "content": None, "tool_calls": [
        _native_call("call_x", "searchKnowledge", '{"query": "退货 政策"}')]},
        {"searchKnowledge": ("ConnectionError", "知识库离线")})
    # an exception with no message (TimeoutError()): str(error) is "", so only its type says what went wrong
    yield ({"role": "assistant", "content": None, "tool_calls": [
        _native_call("call_t", "queryLogistics", '{"trackingNo": "SF1234567890"}'),
        _native_call("call_s", "getCurrentTime", "{}")]}, {"queryLogistics": ("TimeoutError", "")})
    # any exception, not only the kinds above: a bug in the tool's code, or an error class of its own
    yield ({"role": "assistant", "content": None, "tool_calls": [
        _native_call("call_p", "checkStock", '{"product": "S10 Pro", "count": 0}'),
        _native_call("call_q", "queryOrder", '{"orderId": "88231"}'),
        _native_call("call_r", "get_weather", '{"city": "上海"}')]},
        {"checkStock": ("ZeroDivisionError", "division by zero"), "get_weather": ("AttributeError", "no attribute 'city'")})
    yield ({"role": "assistant", "content": None, "tool_calls": [
        _native_call("call_e", "searchKnowledge", '{"query": "发票"}')]}, {"searchKnowledge": ("Exception", "索引损坏")})


# What the generated run_tool raises for a tool of `raising`: a message (a RuntimeError), or (type name, message).
_EXCEPTIONS = {"KeyError": KeyError, "ValueError": ValueError, "TimeoutError": TimeoutError,
               "ConnectionError": ConnectionError, "ZeroDivisionError": ZeroDivisionError,
               "AttributeError": AttributeError, "Exception": Exception}


def _exception(raised: str | tuple[str, str]) -> Exception:
    if isinstance(raised, str):
        return RuntimeError(raised)
    kind, message = raised
    return _EXCEPTIONS[kind](message)


def _why(raised: str | tuple[str, str]) -> str:
    """The words an error content should hold about what `raised` (the exception's message)."""
    return raised if isinstance(raised, str) else raised[1] or raised[0]  # no message: its type says it


def _no_calls(rng: random.Random) -> Iterator[tuple]:
    yield ({"role": "assistant", "content": "订单 88231 已签收。", "tool_calls": []}, {})


def _encoded_twice(rng: random.Random) -> Iterator[tuple]:
    """Calls whose arguments are a JSON string holding an object's JSON, among good ones."""
    for _ in range(6):
        texts = [_good(rng) for _ in range(rng.randint(0, 3))]
        for _ in range(rng.randint(1, 2)):
            twice = json.dumps(_encoded(rng, rng.choice(_GOOD_ARGUMENTS)(rng)), ensure_ascii=rng.random() < 0.5)
            texts.insert(rng.randint(0, len(texts)), twice)
        yield (_reply(rng, texts), {})


def _empty_arguments(rng: random.Random) -> Iterator[tuple]:
    """Calls with empty arguments (""), as some servers send a tool without parameters, among good ones."""
    for _ in range(4):
        texts = [_good(rng) for _ in range(rng.randint(0, 3))]
        texts.insert(rng.randint(0, len(texts)), "")
        yield (_reply(rng, texts), {})


def _padded_objects(rng: random.Random) -> Iterator[tuple]:
    """Calls whose arguments are an object with JSON's own whitespace around it (a model may end them with a line
    break), among good ones: json.loads reads an object, so the tool runs."""
    for pad in (" ", "\n", "  ", "\r\n", "\t"):
        texts = [_good(rng) for _ in range(rng.randint(0, 3))]
        padded = _encoded(rng, rng.choice(_GOOD_ARGUMENTS)(rng))
        padded = rng.choice((pad + padded, padded + pad, pad + padded + pad))
        texts.insert(rng.randint(0, len(texts)), padded)
        yield (_reply(rng, texts), {})


def _repeated_calls(rng: random.Random) -> Iterator[tuple]:
    """Replies that ask for the same tool with the same arguments twice or more (under other ids): each call runs."""
    for _ in range(5):
        texts = [_good(rng) for _ in range(rng.randint(1, 3))]
        twice = rng.choice(texts)
        for _ in range(rng.randint(1, 2)):
            texts.insert(rng.randint(0, len(texts)), twice)
        reply = _reply(rng, texts)
        name = rng.choice(_TOOLS)
        for call in reply["tool_calls"]:
            if call["function"]["arguments"] == twice:
                call["function"]["name"] = name
        yield (reply, {})


# Tools whose result has spaces or a line end around it: the content is the result as run_tool returned it.
_PADDED_RESULTS = {"printLabel": "  运单标签 {}\n", "readNote": "\nnote: {}\n\n", "listFiles": "files: {} \t"}


def _padded_results(rng: random.Random) -> Iterator[tuple]:
    for name in _PADDED_RESULTS:
        texts = [_good(rng) for _ in range(rng.randint(1, 3))]
        reply = _reply(rng, texts)
        rng.choice(reply["tool_calls"])["function"]["name"] = name
        yield (reply, {})


def _result(name: str, arguments: dict) -> str:
    """What the generated inputs' run_tool returns: plain text for some tools, and for others compact JSON as the
    shop's tools write it (to_json), which json.dumps(json.loads(result)) would rewrite (spaces after , and :)."""
    if name in _PADDED_RESULTS:
        return _PADDED_RESULTS[name].format(json.dumps(arguments, ensure_ascii=False, sort_keys=True))
    if name in ("getCurrentTime", "get_weather"):
        return f"{name} 结果：{json.dumps(arguments, ensure_ascii=False, sort_keys=True)}"
    return to_json({"tool": name, "received": arguments, "status": "已签收"})


@dataclass(frozen=True)
class _Answered:
    """What agree_on compares of one call of tool_messages: its messages as the spec fixes them, and the tools
    it ran (sorted: threads finish in any order). Shown as how many messages; a hint says what differs."""

    messages: Any
    ran: tuple[str, ...]

    def __repr__(self) -> str:  # short: the hint says which message differs, and how
        if not isinstance(self.messages, list):
            return repr(self.messages)
        return f"{len(self.messages)} message{'' if len(self.messages) == 1 else 's'}" if self.messages else "[]"


def _answered(tool_messages: Callable) -> Callable[[dict, dict], _Answered]:
    """The answer as agree_on calls it: on `reply`, with a run_tool that raises for the tools of `raising`, what
    of its messages the spec fixes, and which tools it ran with which arguments."""

    def run(reply: dict, raising: dict) -> _Answered:
        lock = threading.Lock()
        ran: list[str] = []
        raised: list[tuple[str, Exception]] = []

        def run_tool(name: str, arguments: Any) -> str:
            with lock:
                ran.append(_run_of(name, arguments))
            if not isinstance(arguments, dict):
                raise TypeError(f"run_tool takes the arguments as a dict, got {type(arguments).__name__}")
            if name in raising:
                error = _exception(raising[name])
                with lock:
                    raised.append((name, error))
                raise error
            return _result(name, arguments)

        try:
            messages = tool_messages(reply, run_tool)
        except Exception as error:
            let_out = next((name for name, one in raised if one is error), None)
            if let_out is None:
                raise
            return _Answered(_LetOut(f"run_tool raised {type(error).__name__}: {error} for {let_out}, and it "
                                     "got out: catch every exception a tool raises, whatever its type"),
                             tuple(sorted(ran)))
        if isinstance(messages, list):
            messages = [_seen(message, raising) for message in messages]
        return _Answered(messages, tuple(sorted(ran)))

    return run


@dataclass(frozen=True)
class _LetOut:
    """In place of the messages: the answer let out an exception a tool raised (what to say about it)."""

    text: str

    def __repr__(self) -> str:
        return "an exception a tool raised"


def _seen(message: Any, raising: dict) -> Any:
    """A tool message as the spec fixes it: its role, its call's id, and its content, an error object read as
    "an error" (saying why when it holds what the tool raised: the words of an error are the answer's own)."""
    if not isinstance(message, dict):
        return message
    content = message.get("content")
    if isinstance(content, str) and (error := _json_error(content)) is not None:
        content = "an error saying why" if any(_why(why) in error for why in raising.values()) else "an error"
    return {"role": message.get("role"), "tool_call_id": message.get("tool_call_id"), "content": content}


def _list_of_messages(value: _Answered) -> str | None:
    messages = value.messages
    if isinstance(messages, _LetOut):
        return messages.text
    if isinstance(messages, list) and all(isinstance(message, dict) for message in messages):
        return None
    return f"it returned {_brief(messages, 40)}: return a list of messages (dicts)"


def _messages_hint(args: tuple, expected: _Answered, got: _Answered) -> str | None:
    want, want_ran, have, have_ran = expected.messages, expected.ran, got.messages, got.ran
    if want_ran != have_ran:
        wanted, had = Counter(want_ran), Counter(have_ran)
        extra = next((run for run in have_ran if had[run] > wanted[run]), None)
        if extra is not None and not wanted[extra] and extra in _laxly_run(args[0]["tool_calls"]):
            return ("(a raw line break or tab inside a string is not JSON: json.loads(text) refuses it, "
                    "strict=False does not)")
        if extra is not None and not wanted[extra]:
            return f"(it ran {_brief(extra, 40)}, which the spec does not run)"
        if extra is not None:
            return f"(it ran {_brief(extra, 40)} {had[extra]} times: run each call once)"
        missing = next(run for run in want_ran if had[run] < wanted[run])
        if had[missing]:
            return f"(it ran {_brief(missing, 40)} {had[missing]} times for {wanted[missing]} calls: run every call)"
        return f"(it did not run {_brief(missing, 40)})"
    if len(want) != len(have):
        return f"({len(want)} calls need {len(want)} tool messages)"
    for n, (one, other) in enumerate(zip(want, have), start=1):
        if one != other:
            key = next(key for key in one if one[key] != other.get(key))
            if key == "content" and one[key] == "an error saying why" and other[key] == "an error" and any(
                    isinstance(why, tuple) and not why[1] for why in args[1].values()):
                raised = _exception(next(iter(args[1].values())))
                return f"(a tool raised {shown(raised)}, no message: name its type too)"
            if key == "content" and isinstance(other[key], str) and one[key] != other[key] == one[key].strip():
                return f"(message {n}'s content lost the spaces or line ends around run_tool's result: keep them)"
            if key == "content" and _same_json(one[key], other[key]):
                return (f"(message {n}'s content holds what run_tool returned, but rewritten: the content is the "
                        "tool's result as it is, the same string)")
            return f"(message {n}'s {key}: expected {_brief(one[key], 30)}, got {_brief(other.get(key), 30)})"
    return None


def _run_of(name: str, arguments: Any) -> str:
    """One tool run as the check records it: the tool's name and its arguments as JSON."""
    return f"{name} {json.dumps(arguments, ensure_ascii=False, sort_keys=True)}"


def _laxly_run(calls: list[dict]) -> list[str]:
    """The runs (as the check records them) of the calls whose arguments are JSON only to json.loads(strict=False):
    a control character raw inside a string."""
    runs = []
    for call in calls:
        text = call["function"]["arguments"]
        try:
            json.loads(text)
        except (TypeError, ValueError):
            try:
                arguments = json.loads(text, strict=False)
            except (TypeError, ValueError):
                continue
            runs.append(_run_of(call["function"]["name"], arguments))
    return runs


def _same_json(text: Any, other: Any) -> bool:
    try:
        return json.loads(text) == json.loads(other)
    except (TypeError, ValueError):
        return False


def _show_reply(args: tuple) -> str:
    reply, raising = args
    calls = [f"{call['id']} {call['function']['name']}({call['function']['arguments']})" for call in reply["tool_calls"]]
    said = [f"{name} {shown(_exception(why))}" for name, why in raising.items()]
    raises = f"; raising: {_brief(said, 50)}" if raising else ""
    return f"calls {_brief(calls, 60)}{raises}"


MESSAGES_RULES = (
    Rule("one tool message per call, in the calls' order, with its id and what run_tool returned",
         _every_call_answered, _messages_hint),
    Rule("arguments that are not a JSON object are not run: the content is {\"error\": ...}", _unreadable_arguments,
         _messages_hint),
    Rule("a tool that raises (any exception) ends nothing: its content is an error that says what went wrong",
         _tools_that_raise, _messages_hint),
    Rule("a reply with no calls (an empty tool_calls) gets no tool messages: []", _no_calls, _messages_hint),
    Rule("a JSON string is not an object, even one that holds an object's JSON (encoded twice): not run",
         _encoded_twice, _messages_hint),
    Rule('empty arguments ("") are no arguments: the tool runs with {}', _empty_arguments, _messages_hint),
    Rule("an object with spaces or line breaks around it is a JSON object all the same: the tool runs",
         _padded_objects, _messages_hint),
    Rule("every call runs, one that asks the same as another (the same tool and arguments) too", _repeated_calls,
         _messages_hint),
    Rule("the content is what run_tool returned as it is, spaces and line ends around it too", _padded_results,
         _messages_hint),
)


@grades("Exercise 1", spec=Spec(MESSAGES_RULES, extra=(
    ("the calls run at the same time, in threads (queryOrder waits until queryLogistics has started, "
     "also behind four and behind 32 other calls; and queryLogistics, first and last, for the queryOrder between)"),)))
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
    if not tools.calls:  # a tool's error in every content: run_tool called with keywords of its own, or a dict
        _fail(exercise, "run_tool was never called as the exercise says: run_tool(name, arguments), the tool's name "
                        "and the dict json.loads makes of the call's arguments")
    by_id = {m["tool_call_id"]: m["content"] for m in messages}
    if any(arguments in NOT_OBJECTS.values() for _, arguments in tools.calls):
        _fail(exercise, "call_list's and call_text's arguments are JSON but not an object (an array, a string): "
                        "do not run the tool with them; answer each with an error")
    if wrapped := _made_of_non_objects(tools.calls):
        call_id, arguments = wrapped
        _fail(exercise, f"{call_id}'s arguments are JSON but not an object ({_brief(NOT_OBJECTS[call_id], 20)}), "
                        f"and the tool ran with {_brief(arguments, 40)}, made of them: do not run it; answer "
                        f"{call_id} with an error")
    if any(not isinstance(arguments, dict) for _, arguments in tools.calls):
        kinds = sorted({type(arguments).__name__ for _, arguments in tools.calls})
        _fail(exercise, f"run_tool takes the arguments as a dict (json.loads of the call's arguments string), got "
                        f"{', '.join(kinds)}")
    if sum(name == "queryOrder" for name, _ in tools.calls) > 1 and any(
            name == "queryOrder" and arguments.get("orderId") != "88231" for name, arguments in tools.calls):
        _fail(exercise, "call_broken's arguments are not valid JSON: answer it with an error, and do not run the "
                        "tool with anything made up")
    if changed := next(((name, arguments) for name, arguments in tools.calls
                        if name in _OBJECT_CALLS and arguments != _OBJECT_CALLS[name]), None):
        name, arguments = changed
        _fail(exercise, f"run_tool ran {name} with {_brief(arguments, 40)}, where the call's arguments are "
                        f"{shown(_OBJECT_CALLS[name])}: pass the dict json.loads makes of them as it is, nothing "
                        "added or changed")
    broken = _json_error(by_id["call_broken"])
    if broken is None:
        _fail(exercise, f"call_broken's arguments are not valid JSON, so its content should be an error the model "
                        f'can read: a JSON object with an "error" key, got {shown(by_id["call_broken"])}')
    for call_id in NOT_OBJECTS:
        if _json_error(by_id[call_id]) is None:
            _fail(exercise, f"{call_id}'s arguments are not a JSON object, so its content should be an error: a JSON "
                            f'object with an "error" key, got {_brief(by_id[call_id])}')
    failed = _json_error(by_id["call_policy"])
    if failed is None or "offline" not in failed:
        _fail(exercise, f"searchKnowledge raised {shown(KNOWLEDGE_OFFLINE)}: its content should be a JSON object with an "
                        f'"error" key that says so, got {shown(by_id["call_policy"])}')
    order = _json(exercise, by_id["call_order"], "call_order's content")
    parcel = _json(exercise, by_id["call_parcel"], "call_parcel's content")
    if not (isinstance(order, dict) and order.get("orderId") == "88231" and isinstance(parcel, dict)
            and parcel.get("trackingNo") == "SF1234567890"):
        _fail(exercise, "call_order and call_parcel should carry what run_tool returned for them, as it is")
    if not tools.all_saw():
        _fail(exercise, f"the calls ran one after the other: queryOrder waited {patience:g} s for queryLogistics to "
                        "start, and it never did. Run them at the same time, e.g. with "
                        "concurrent.futures.ThreadPoolExecutor")
    _crowded(exercise, tool_messages, CROWDED_REPLY, patience, "the second reply")
    tried = agree_on(exercise, "check_tool_messages", MESSAGES_RULES, _answered(tool_messages),
                     _answered(_tool_messages), shape=_list_of_messages, call="tool_messages",
                     show=_show_reply)
    # last, as they take `patience` s to fail: any pool of at most 32 threads, and calls run one by one in another
    # order than the reply's (from the last, or sorted by the tool's name)
    _crowded(exercise, tool_messages, CROWDED_33_REPLY, patience, "a reply of 33 calls")
    waiting = _replied(exercise, tool_messages, PARCEL_WAITS_REPLY, _CheckTools(patience, waiter="queryLogistics"),
                       "a reply of queryLogistics, queryOrder, queryLogistics")
    if not waiting.all_saw():
        _fail(exercise, "the calls ran one after the other: in a reply of queryLogistics, queryOrder, queryLogistics, "
                        f"a queryLogistics waited {patience:g} s for the queryOrder to start, and it never did "
                        "(whatever their order, calls run one by one fail here). Run them at the same time, in threads")
    return _passed(exercise, f"one tool message per call, in the order of the calls, each quoting its id; the broken "
                             f"calls and the failing tools are answered with errors the model can read, on "
                             f"{tried} generated replies; and the calls ran at the same time.")


def _crowded(exercise: str, tool_messages: Callable, reply: dict, patience: float, which: str) -> None:
    """Failed when, in `reply` (queryOrder calls, then the queryLogistics they wait for), a queryOrder waited in
    vain: the calls ran in turns, in a pool of fewer threads than calls."""
    crowded = _replied(exercise, tool_messages, reply, _CheckTools(patience), which)
    if not crowded.all_saw():
        calls = len(reply["tool_calls"])
        waited = (f"in a reply of {calls} calls, queryLogistics last, a queryOrder waited {patience:g} s for it to "
                  "start, and it never did")
        if any(name.startswith("asyncio") for name in crowded.threads):  # asyncio.to_thread, run_in_executor(None)
            _fail(exercise, f"{waited}: asyncio runs the calls in its own pool of threads, min(32, cpus + 4) of them "
                            "at a time, so in turns. Give every call its own thread: a ThreadPoolExecutor("
                            "max_workers=len(calls)) of your own, passed to loop.run_in_executor")
        _fail(exercise, f"{waited}: a pool of fewer than {calls} threads runs the calls in turns. Give every call its "
                        "own thread (max_workers=len(calls))")


def _replied(exercise: str, tool_messages: Callable, reply: dict, tools: _CheckTools, which: str) -> _CheckTools:
    """`tools` after the answer answered `reply` (`which`, as a failure names it) with them: failed when it did not
    run one of the reply's tools (it kept an answer from a reply before: the waits would be blamed)."""
    _run(exercise, "tool_messages(reply, run_tool)", tool_messages, copy.deepcopy(reply), tools)
    ran = {name for name, _ in tools.calls}
    for name in (tools.awaited, tools.waiter):
        if name not in ran:
            _fail(exercise, f"{name} was never run on {which}: run every call each time; keep nothing "
                            "between calls.")
    return tools


# What each tool of TOOL_CALLS_REPLY runs with, once: the arguments of its one call that holds a JSON object.
_OBJECT_CALLS = {"queryOrder": {"orderId": "88231"}, "queryLogistics": {"trackingNo": "SF1234567890"},
                 "searchKnowledge": {"query": "退货 政策"}}


def _made_of_non_objects(calls: list[tuple[str, Any]]) -> tuple[str, Any] | None:
    """(the call's id, the arguments the tool ran with) for the first call of TOOL_CALLS_REPLY whose arguments are
    JSON but not an object and still reached its tool, made into an object ({"value": ["88231"]}), or None. Only a
    tool run more often than its object call: one run with arguments changed is that call's (a key added)."""
    runs = Counter(name for name, _ in calls)
    for call in TOOL_CALLS_REPLY["tool_calls"]:
        call_id, name = call["id"], call["function"]["name"]
        if call_id not in NOT_OBJECTS or runs[name] <= 1:
            continue
        meant = _OBJECT_CALLS[name]
        for ran, arguments in calls:
            if ran == name and arguments != meant and _holds(arguments, NOT_OBJECTS[call_id]):
                return call_id, arguments
    return None


def _holds(value: Any, part: Any) -> bool:
    """Whether `value` is `part` or holds it, at any depth of its dicts and lists."""
    if value == part:
        return True
    if isinstance(value, dict):
        return any(_holds(item, part) for item in value.values())
    if isinstance(value, (list, tuple)):
        return any(_holds(item, part) for item in value)
    return False


def _json_error(text: str) -> str | None:
    """The "error" of a JSON object, or None when `text` is not one."""
    try:
        value = json.loads(text)
    except (ValueError, TypeError, RecursionError):  # not JSON, not text, or nested deeper than Python reads
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


def _whole(number: Any) -> bool:
    """An int (not a bool), or a float that is one (6.0)."""
    if isinstance(number, float):
        return number.is_integer()
    return isinstance(number, int) and not isinstance(number, bool)


@grades("Exercise 2", spec=Spec(fixed=(
    "a prediction about three fixed requests (the fewest model calls each protocol needs): nothing to generate; "
    "each pair is compared with the count of the request's tool calls and waves of calls")))
def check_fewest_model_calls(predicted_calls: list | None) -> None:
    """09, exercise 2: the fewest model calls each protocol needs for three requests, for a model that makes no
    mistake: text ReAct one tool call per reply, function calling every call whose inputs are known."""
    exercise = "Exercise 2"
    if predicted_calls is None:
        return _not_attempted(exercise, "Set predicted_calls to a list of 3 pairs (text ReAct, function calling).")
    n = len(FEWEST_CALLS_REQUESTS)
    if (not isinstance(predicted_calls, (list, tuple)) or len(predicted_calls) != n or not all(
            isinstance(pair, (list, tuple)) and len(pair) == 2
            and all(_whole(x) for x in pair) for pair in predicted_calls)):
        _fail(exercise, f"predicted_calls should be a list of {n} pairs of whole numbers, (text ReAct, function "
                        f"calling) for each request, got {shown(predicted_calls)}")
    last_call = "Did you count the last model call, the one that writes the answer from the results?"
    pairs = [(int(text), int(native)) for text, native in predicted_calls]  # 6.0 is 6: a whole number all the same
    for number, (waves, (text, native)) in enumerate(zip(_WAVES, pairs), start=1):
        calls = sum(len(wave) for wave in waves)
        right_text, right_native = calls + 1, len(waves) + 1
        where = f"request {number} ({shown(FEWEST_CALLS_REQUESTS[number - 1])})"
        if text != right_text and (text, native) == (right_native, right_text):
            _fail(exercise, f"{where}: the pairs are (text ReAct, function calling): yours look swapped, "
                            f"({text}, {native}) for ({native}, {text})")
        if text != right_text:
            if text == right_text - 1:
                every = " (getCurrentTime too)" if any("getCurrentTime" in wave for wave in waves) else ""
                hint = (f"{text} is one short. Did you count a model call for every tool call{every}, and the last "
                        "one, that writes the answer from the results?")
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
