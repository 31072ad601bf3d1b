"""Lesson 07 (tool schemas): a typed queryLogistics, and the fields errors name."""

from __future__ import annotations

import copy
import json
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from tinyagent.checks.generated import Rule, Spec, agree_on
from tinyagent.checks.reporting import _brief, _fail, _fresh_shop, _not_attempted, _passed, grades, shown
from tinyagent.shop import Shop

# The lesson's tool, for exercise 2; `tinyagent.checks` offers both names, as it did when they were defined here.
from tinyagent.toolkit.pickup import Address, pickup_tool  # noqa: F401
from tinyagent.toolkit.typed_tool import TypedTool, tool


def _reference_tool(shop: Shop) -> TypedTool:
    """07, exercise 1's answer (the solution's), around `shop`."""
    @tool(name="queryLogistics")
    def track_parcel(tracking_no: str, latest_only: bool = False) -> dict:
        """Track a parcel.

        Args:
            tracking_no: the tracking number from queryOrder, e.g. SF1234567890
            latest_only: only the newest event
        """
        parcel = shop.get_logistics(tracking_no)
        if parcel is None:
            return {"error": f"运单不存在：{tracking_no}"}
        if latest_only:
            parcel["traces"] = parcel["traces"][-1:]  # oldest first, so the newest is the last
        return parcel

    return track_parcel


NOT_CALLED = "not called: @tool refused the input"


@dataclass(frozen=True)
class _Answer:
    """What the tool did with one Action Input: the Observation (read as JSON) and the type of what the function
    itself returned. Compared whole; shown in a few words, so a failure fits on a notebook's screen."""

    observation: Any
    returned: str

    def __repr__(self) -> str:
        seen = self.observation
        if isinstance(seen, dict) and isinstance(seen.get("traces"), list) and seen["traces"]:
            times = [str(event.get("time", "?"))[5:16] if isinstance(event, dict) else "?" for event in seen["traces"]]
            if len(times) == 1:
                return f"{seen.get('trackingNo')}: 1 trace, {times[0]}"
            return f"{seen.get('trackingNo')}: {len(times)} traces to {times[-1]}"
        return _brief(seen, 46)


def _through(track_parcel: TypedTool) -> Callable[[str], _Answer]:
    """What the tool does with one Action Input: the Observation it gives (as JSON), and what the function itself
    returned before @tool wrote it as text (the spec states a dict)."""
    def run(text: str) -> _Answer:
        returned: list[Any] = []

        def function(**arguments: Any) -> Any:
            returned.append(track_parcel.fn(**arguments))
            return returned[-1]

        spy = copy.copy(track_parcel)  # the learner's tool, with its function watched
        spy.fn = function
        observation = spy.invoke(text)
        try:
            observation = json.loads(observation)
        except ValueError:
            pass  # compared as the text it is
        if not returned and isinstance(observation, dict) and "field" in observation:
            # A refusal's wording quotes the docstring's example: what the spec fixes is the field it names (a
            # "field" in a dict the function returned is the function's, compared as it is).
            observation = {"refused, naming": observation["field"]}
        return _Answer(observation, _kind(returned[0]) if returned else NOT_CALLED)
    return run


def _kind(value: Any) -> str:
    """The type of a returned value as the spec names it (a dict of any class is a dict)."""
    for kind in (dict, str):
        if isinstance(value, kind):
            return kind.__name__
    return type(value).__name__


def _a_dict(answer: _Answer) -> str | None:
    if answer.returned in ("dict", NOT_CALLED, "NoneType"):  # None: the unknown number's rule says what it becomes
        return None
    if answer.returned == "str":
        return ("track_parcel returned a str (JSON text?); the spec says it returns shop.get_logistics(...), a dict, "
                "or the error dict: return the dict, @tool writes the JSON")
    return f"track_parcel returned a {answer.returned}; the spec says it returns a dict"


def _what_differs(args: tuple, expected: _Answer, got: _Answer) -> str | None:
    """The difference between two Observations, in words."""
    want, have = expected.observation, got.observation
    if got.returned == "NoneType":
        return "Your function returned None, which @tool sends as {\"ok\": true}."
    if not (isinstance(want, dict) and isinstance(have, dict)):
        return None
    if "error" in have and "error" not in want:
        return "It answered with an error for a parcel the shop has."
    if "error" in want and "error" not in have:
        said = next((key for key, value in have.items() if isinstance(value, str) and value == want["error"]), None)
        if said is not None:  # the right words under another key
            return f"Its error is under {said!r}; the spec's error dict has the key \"error\": {{\"error\": ...}}."
        return "It found a parcel for a number the shop lacks: look the number up as given, not tidied."
    if set(want) != set(have):
        # Named in a few words: a parcel is shown as a summary that looks the same with a field more or less, and
        # the hint shares its lines with that summary.
        lacks = [str(key) for key in want if key not in have]
        adds = [str(key) for key in have if key not in want]
        parts = []
        if lacks:
            parts.append(f"lacks {_and(lacks)}")
        if adds:
            parts.append(f"adds {_and(adds)}")
        return f"It {'; it '.join(parts)}."
    if "traces" in want and want["traces"] != have["traces"]:
        newest = want["traces"][-1]["time"] if want["traces"] else None
        if not isinstance(have["traces"], list):
            return f"Its traces is a {type(have['traces']).__name__}; the spec keeps it a list (of one event)."
        if not all(isinstance(event, dict) for event in have["traces"]):
            return "Its traces holds something else than the shop's events: keep each event as it is (a dict)."
        if len(want["traces"]) == 1 and len(have["traces"]) == 1:
            return f"It kept the event of {have['traces'][0].get('time')}; the newest is that of {newest}."
        if have["traces"] == want["traces"][::-1]:
            return "Its traces are newest first; keep the shop's order, oldest first."
        if len(have["traces"]) == len(want["traces"]):
            return "Its traces are not the shop's events as the shop lists them."
        return f"traces holds {len(have['traces'])} event(s), not {len(want['traces'])}."
    key = next(key for key in want if want[key] != have[key])
    return f"Its {key} is {_brief(have[key], 40)}, not {_brief(want[key], 40)}."


def _and(names: list[str]) -> str:
    """"carrier", "carrier and status", "a, b and c"."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


# -- exercise 1's inputs, drawn from its spec ------------------------------------------------------
_PARCELS = ("SF1234567890", "YT2468013579", "ZT5566778899", "JD0098765432")  # every parcel of the course's shop


def _plain_or_json(rng: random.Random, number: str, latest: bool | None) -> str:
    """One Action Input for `number`, written as a model may write it."""
    if latest is None and rng.random() < 0.5:
        return rng.choice(("{n}", " {n}\n", "`{n}`", '"{n}"')).format(n=number)
    fields = {"tracking_no": number}
    if latest is not None:
        fields["latest_only"] = latest
    if rng.random() < 0.4:
        fields = dict(reversed(fields.items()))
    return json.dumps(fields, ensure_ascii=False, indent=rng.choice((None, None, 2)))


def _known(rng: random.Random) -> Iterator[tuple]:
    for number in _PARCELS:
        for latest in (None, None, False):
            yield (_plain_or_json(rng, number, latest),)


def _newest(rng: random.Random) -> Iterator[tuple]:
    for number in _PARCELS:
        for _ in range(2):
            yield (_plain_or_json(rng, number, True),)


def _unknown(rng: random.Random) -> Iterator[tuple]:
    for prefix in ("SF", "YT", "ZT", "JD", "SF", "YT"):  # the shapes of the shop's numbers, other digits
        yield (_plain_or_json(rng, f"{prefix}{rng.randint(10**9, 10**10 - 1)}", rng.choice((None, True, False))),)
    for number in _PARCELS[:2]:  # one digit off, one short, one long
        yield (_plain_or_json(rng, number[:-1] + str((int(number[-1]) + rng.randint(1, 9)) % 10), None),)
        yield (_plain_or_json(rng, number[:-1], True),)
        yield (_plain_or_json(rng, number + str(rng.randint(0, 9)), None),)
    for order_id in rng.sample(("88231", "88232", "88234", "88236"), 2):  # an order id where a tracking number goes
        yield (_plain_or_json(rng, order_id, rng.choice((None, True))),)
    yield (_plain_or_json(rng, "顺丰" + str(rng.randint(10**9, 10**10 - 1)), True),)
    yield (json.dumps({"tracking_no": "运单号", "latest_only": True}, ensure_ascii=False),)
    # a shop's number written otherwise (lower case, a space inside) or empty: looked up as given, none is there
    yield (json.dumps({"tracking_no": "sf1234567890"}),)
    yield (json.dumps({"tracking_no": "yt2468013579", "latest_only": True}),)
    yield (json.dumps({"tracking_no": "SF 1234567890"}),)
    yield (json.dumps({"tracking_no": ""}),)
    yield (json.dumps({"tracking_no": " SF1234567890"}),)  # spaces around it, inside the JSON: as given too
    yield (json.dumps({"tracking_no": " SF0000000000 "}),)
    # a shop's number in full-width letters or digits: the shop has none, and NFKC is tidying it too
    yield (json.dumps({"tracking_no": "ＳＦ１２３４５６７８９０"}, ensure_ascii=False),)
    yield (json.dumps({"tracking_no": "YT２４６８０１３５７９", "latest_only": True}, ensure_ascii=False),)
    yield (json.dumps({"latest_only": False, "tracking_no": "ＪＤ００９８７６５４３２"}, ensure_ascii=False),)


def _wrong_types(rng: random.Random) -> Iterator[tuple]:
    for _ in range(2):
        yield (json.dumps({"tracking_no": rng.randint(10**9, 10**10 - 1)}),)
    yield (json.dumps({"tracking_no": rng.choice(_PARCELS), "latest_only": rng.choice(("yes", "true", 1))}),)
    yield (json.dumps({"latest_only": True}),)
    yield ("",)


LOGISTICS_RULES = (
    Rule("it returns shop.get_logistics(tracking_no), every trace, for each parcel the shop has (the Action Input as "
         "plain text or as JSON, latest_only left out or false)", _known, _what_differs),
    Rule("with latest_only true, traces holds only the newest event (the shop lists them oldest first), and the other "
         "fields stay as they are", _newest, _what_differs),
    Rule('for a number the shop does not have (shop.get_logistics returns None) it returns exactly '
         '{"error": "运单不存在：<number>"}, with that number as given', _unknown, _what_differs),
    Rule("the schema refuses a number where a string belongs, a latest_only that is not a boolean and a missing "
         "tracking_no, naming the field", _wrong_types, _what_differs),
)


# A tracking number as the shop writes them (SF1234567890): what an example must look like for a model to copy it.
_TRACKING_NO = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}[0-9]{10}(?![A-Za-z0-9])")  # in the example, words around it free
_SCHEMA = ("named queryLogistics, a required string tracking_no with an example under Args: written as the shop "
           "writes its numbers (two capitals, then ten digits), an optional boolean latest_only (default False), "
           "read from the schema")


@grades("Exercise 1", spec=Spec(LOGISTICS_RULES, extra=(_SCHEMA,)))
def check_typed_logistics_tool(track_parcel: Any) -> None:
    """07, exercise 1: queryLogistics as a typed tool: its schema, and what it returns for good and bad input."""
    exercise = "Exercise 1"
    if track_parcel is None:
        return _not_attempted(exercise, "Write def track_parcel(...) with @tool(name=\"queryLogistics\") above it.")
    if not isinstance(track_parcel, TypedTool):
        _fail(exercise, f"track_parcel is a {type(track_parcel).__name__}, not a tool: put @tool(name="
                        "\"queryLogistics\") on the line above `def track_parcel`")
    if track_parcel.name != "queryLogistics":
        _fail(exercise, f"its name is {shown(track_parcel.name)}; the model writes `Action: queryLogistics`, so give "
                        "@tool(name=\"queryLogistics\")")
    params = track_parcel.parameters if isinstance(track_parcel.parameters, dict) else {}  # @tool always makes one
    properties = params.get("properties") if isinstance(params.get("properties"), dict) else {}
    if set(properties) != {"tracking_no", "latest_only"} or not all(isinstance(p, dict) for p in properties.values()):
        _fail(exercise, f"the schema's fields are {sorted(properties)}; expected exactly tracking_no and latest_only")
    number, latest = properties["tracking_no"], properties["latest_only"]
    if number.get("type") != "string" or "tracking_no" not in params.get("required", ()):
        _fail(exercise, f"tracking_no should be a required string (`tracking_no: str`, no default); its schema is "
                        f"{number}")
    if not number.get("examples") and number.get("description"):
        _fail(exercise, f"tracking_no's description, {_brief(number['description'], 50)}, has no example @tool can "
                        "read: it takes the words after `e.g.` (or `for example`, `such as`, `例如`), as in "
                        "`tracking_no: the tracking number from queryOrder, e.g. SF1234567890`")
    if not number.get("examples"):
        _fail(exercise, "describe tracking_no in the docstring, with an example the model can copy: under `Args:`, "
                        "`tracking_no: the tracking number from queryOrder, e.g. SF1234567890`")
    if not any(isinstance(example, str) and _TRACKING_NO.search(example) for example in number["examples"]):
        _fail(exercise, f"tracking_no's example is {shown(number['examples'][0])}: a model copies it as written, so "
                        "write one as the shop writes its numbers, two capitals then ten digits (e.g. SF1234567890)")
    if latest.get("type") != "boolean":
        _fail(exercise, f"latest_only should be a boolean (`latest_only: bool = False`); its schema is {latest}")
    if "latest_only" in params.get("required", ()) or latest.get("default") is not False:
        _fail(exercise, "latest_only should be optional with the default False (`latest_only: bool = False`), so "
                        "the model may leave it out")
    tried = agree_on(exercise, "check_typed_logistics_tool", LOGISTICS_RULES, _through(track_parcel),
                     _through(_reference_tool(_fresh_shop())), shape=_a_dict, call="track_parcel.invoke(text)")
    return _passed(exercise, f"the schema says what the model may send (a required string with an example, an "
                             f"optional boolean), and on {tried} generated inputs (each parcel of the shop, unknown "
                             "numbers of every shape, plain text and JSON) the tool answers as the spec says; @tool "
                             "refuses the rest before your function runs.")


# Inputs for the lesson's schedulePickup tool (toolkit/pickup.py): exercise 2 predicts its errors.
PICKUP_INPUTS = (
    '{"order_id": "88231", "address": {"city": "上海", "street": "南京西路 1 号"}, "window": "morning"}',
    '{"order_id": "88231", "address": {"city": "上海"}}',
    '{"order_id": "88231", "address": {"city": "上海", "street": "南京西路 1 号"}, "window": "evening"}',
    '{"order_id": "88231", "address": {"city": "上海", "street": "南京西路 1 号"}, "items": ["扫地机", 2]}',
    '{"order": "88231", "address": {"city": "上海", "street": "南京西路 1 号"}}',
)


@grades("Exercise 2", spec=Spec(fixed=(
    "a prediction of what @tool answers to the five fixed PICKUP_INPUTS of the lesson's schedulePickup: nothing to "
    "generate; each predicted field is compared with the field the tool's error names (None where it accepts)")))
def check_error_fields(predicted_fields: list | None) -> None:
    """07, exercise 2: for each of PICKUP_INPUTS, the field the error Observation names (None: accepted)."""
    exercise = "Exercise 2"
    if predicted_fields is None:
        return _not_attempted(exercise, f"Set predicted_fields to a list of {len(PICKUP_INPUTS)} field names (or None "
                                        "where the input is accepted).")
    if isinstance(predicted_fields, str) or not isinstance(predicted_fields, (list, tuple)):
        _fail(exercise, f"predicted_fields should be a list, got {type(predicted_fields).__name__}")
    if len(predicted_fields) != len(PICKUP_INPUTS):
        _fail(exercise, f"there are {len(PICKUP_INPUTS)} inputs; predicted_fields has {len(predicted_fields)} entries")
    pickup = pickup_tool()
    for number, (text, predicted) in enumerate(zip(PICKUP_INPUTS, predicted_fields), start=1):
        data = json.loads(pickup.invoke(text))
        actual = data.get("field") if "error" in data else None
        if predicted == actual or (isinstance(predicted, str) and predicted.strip() == actual):
            continue  # a space typed around a field's name is no other field (lesson 00's names are read so too)
        if actual is None:
            _fail(exercise, f"input {number} is accepted (every required field is there, each of the right type), "
                            f"so predict None; you predicted {shown(predicted)}")
        hint = ""
        if isinstance(predicted, str) and predicted.strip().lower() == actual.lower():
            hint = ": the right field, in another case; a field is named as the schema writes it"
        elif isinstance(predicted, str) and (actual.startswith((predicted + ".", predicted + "["))):
            hint = ": a field inside an object or a list is named by its path, down to the part that is wrong"
        elif predicted is None:
            hint = ": it is refused; read it against the schema again"
        elif actual == "order_id":
            hint = (": an unknown field is reported after the fields the schema has, and order_id, which the "
                    "schema requires, is missing")
        _fail(exercise, f"input {number}: the error names {shown(actual)}, you predicted {shown(predicted)}{hint}. "
                        f"The error was: {data['error']}")
    return _passed(exercise, "each error names the exact field (a path such as address.street or items[1]) and "
                             "shows an example, which is what lets a model fix its input in one round.")
