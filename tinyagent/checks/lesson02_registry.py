"""Lesson 02 (the registry): did-you-mean for unknown tools, and long Observations capped.

Both answers are subclasses of the lesson's `CarefulRegistry`, so each check's reference is the solution's
subclass of it, written here on `_careful_execute` (the lesson's `CarefulRegistry.execute`). One registry answers
every generated Action, as one registry serves every round of a run, so state it keeps shows (exercise 1's registries
of other tools, drawn per case, each answer their case's Actions); the refunds a call asks the shop for, and those it
makes, are compared too, so a registry that runs a tool it should not (or twice) fails."""

from __future__ import annotations

import difflib
import json
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from tinyagent.checks.generated import Rule, Spec, agree_on
from tinyagent.checks.reporting import (
    _brief,
    _fresh_shop,
    _instance,
    _not_attempted,
    _passed,
    _run,
    grades,
    shown,
)
from tinyagent.clock import COURSE_NOW, fixed_clock
from tinyagent.shop import Shop, shop_tools
from tinyagent.tools import Action, FunctionTool, Tool


def _error_json(message: str, **details: object) -> str:
    return json.dumps({"error": message, **details}, ensure_ascii=False)


def _careful_execute(tools: dict[str, Tool], action: Action | None) -> str:
    """The lesson's CarefulRegistry.execute: every mistake the model makes is an error Observation."""
    if action is None or not action.tool_name.strip():
        return _error_json("no tool name in the action")
    name = action.tool_name.strip()
    tool = tools.get(name)
    if tool is None:
        return _error_json(f"unknown tool: {name}", available_tools=list(tools))
    try:
        output = tool.invoke(action.tool_input.strip())
    except Exception as error:  # noqa: BLE001 - as in the lesson: any crash becomes an Observation
        return _error_json(f"tool {name} failed: {type(error).__name__}: {error}")
    if not isinstance(output, str):
        return _error_json(f"tool {name} returned {type(output).__name__}, not a string")
    return output


def _refunds(shop: Shop) -> list[str]:
    """What the shop holds that a registry could change: the orders refunded (only applyRefund writes)."""
    return [refund["orderId"] for refund in shop.refunds()]


class CountingShop(Shop):
    """The course's shop, counting the refunds asked of it: the shop refunds an order once (a second request gets
    the first refund back), so a registry that runs applyRefund twice shows in the count, not in its refunds."""

    asked = 0

    def apply_refund(self, order_id: str | int, reason: str) -> dict:
        self.asked += 1
        return super().apply_refund(order_id, reason)


def _counting_shop() -> CountingShop:
    return CountingShop(":memory:", clock=fixed_clock(COURSE_NOW))


@dataclass(frozen=True)
class WithRefunds:
    """A call's outcome when it made refunds, or ran applyRefund more than once: its Observation, the orders
    refunded, and how many refunds it asked the shop for (applyRefund's runs)."""

    observation: Any
    refunds: tuple[str, ...]
    asked: int = 1

    def __repr__(self) -> str:
        said = f"{shown(self.observation)}, and it refunded {list(self.refunds)}"
        return said if self.asked == 1 else f"{said} in {self.asked} runs"


def _ran_twice_hint(expected: Any, got: Any) -> str | None:
    """An answer that ran applyRefund more than once for one Action (the same tool twice, most likely)."""
    if not (isinstance(got, WithRefunds) and got.asked > 1):
        return None
    if _text_of(got) != _text_of(expected):
        return f"Its Observation should be the first run's: it ran applyRefund {got.asked} times."
    return f"It ran applyRefund {got.asked} times for one Action: run the tool once."


def _text_of(value: Any) -> Any:
    """The Observation of a call's outcome."""
    return value.observation if isinstance(value, WithRefunds) else value


def _a_string(value: Any) -> str | None:
    text = _text_of(value)
    if isinstance(text, str):
        return None
    return f"execute returned {type(text).__name__} {_brief(text, 30)}, not a string: an Observation is text"


def _show_action(args: tuple) -> str:
    action = args[-1]
    if action is None:
        return "None (no Action)"
    said = f"Action({shown(action.tool_name)}, {_brief(action.tool_input, 26)})"
    if len(args) == 1:
        return said
    limit = args[0]
    return f"limit={'2000 (default)' if limit is None else limit}, {said}"


# -- exercise 1's inputs, drawn from its spec ------------------------------------------------------
_NAMES = ("queryOrder", "queryLogistics", "applyRefund", "searchKnowledge", "getCurrentTime")  # shop_tools' names
_VERBS = ("query", "get", "check", "find", "search", "apply", "fetch", "lookup")
# Far from every name: synonyms, other words, Chinese (difflib compares characters, and finds nothing close).
_FAR = ("trackParcel", "weather", "查询订单", "退款", "refund", "lookup", "time", "order", "now", "calculator",
        "Final Answer", "查物流", "sendEmail", "translate", "天气", "x")


def _inputs_for(rng: random.Random, name: str) -> str:
    return {
        "queryOrder": lambda: rng.choice((str(rng.randint(88231, 88236)), f"订单 {rng.randint(10000, 99999)}")),
        "queryLogistics": lambda: rng.choice(("SF1234567890", "YT2468013579", f"SF{rng.randint(10 ** 9, 10 ** 10)}")),
        "searchKnowledge": lambda: rng.choice(("退货", "warranty", "运费 谁出", "invoice", "保修", "")),
        "getCurrentTime": lambda: rng.choice(("", "now", "北京时间")),
        "applyRefund": lambda: rng.choice(("{}", "88231", '{"orderId": "99999", "reason": "broken"}')),
    }[name]()


def _near_miss(rng: random.Random, name: str) -> str:
    kind = rng.randrange(5)
    if kind == 0:
        return rng.choice((name.lower(), name.upper(), name[0].upper() + name[1:]))
    if kind == 1:  # a letter missing
        at = rng.randrange(1, len(name))
        return name[:at] + name[at + 1:]
    if kind == 2:  # two letters swapped
        at = rng.randrange(1, len(name) - 1)
        return name[:at] + name[at + 1] + name[at] + name[at + 2:]
    if kind == 3:  # a letter added
        at = rng.randrange(1, len(name) + 1)
        return name[:at] + rng.choice("aeiorst_s") + name[at:]
    if rng.random() < 0.6:  # another verb
        verb = re.match(r"[a-z]+", name).group()
        return rng.choice(_VERBS) + name[len(verb):]
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()  # snake_case


def _close(name: str) -> str | None:
    found = difflib.get_close_matches(name, list(_NAMES), n=1)
    return found[0] if found else None


def _near_misses(rng: random.Random) -> Iterator[tuple]:
    for name in ("queryorder", "checkOrder", "getTime", "applyrefund"):
        yield (Action(name, "88231"),)
    count = 0
    while count < 18:
        real = rng.choice(_NAMES)
        name = _near_miss(rng, real)
        if name in _NAMES or _close(name) is None:
            continue
        count += 1
        yield (Action(name, _inputs_for(rng, real)),)
    # Close to two names: did_you_mean is the closest one alone (queryLogistics, then queryOrder).
    yield (Action("queryOrderLogistics", "SF1234567890"),)
    yield (Action("queryL", "88231"),)
    # Near-misses with stray spaces: the name compared is the stripped one, as CarefulRegistry looks it up.
    yield (Action(" checkOrder ", "88231"),)
    yield (Action("  getTime\n", ""),)
    # A tab and a Windows line end: strip() takes them, as CarefulRegistry does; strip(" ") leaves them, and
    # difflib then finds nothing close.
    yield (Action("\tgetTime\r\n", ""),)


def _far_names(rng: random.Random) -> Iterator[tuple]:
    yield (Action("trackParcel", "SF1234567890"),)
    for name in rng.sample(_FAR[1:], 9):
        if _close(name) is not None:  # kept out, should a tool's name come close to it one day
            continue
        yield (Action(name, rng.choice(("88231", "", "退货", "今天几号"))),)
    # Just under difflib's default cutoff (0.6): a lower cutoff would suggest applyRefund, searchKnowledge, ...
    for name, tool_input in (("refund", "88231"), ("search", "退货"), ("lookupOrder", "88231"), ("queryStock", "")):
        yield (Action(name, tool_input),)
    # Names in capitals: difflib compares them as written and finds none close; a case-blind lookup suggests one.
    for name in ("QUERYORDER", "GETCURRENTTIME"):
        yield (Action(name, "88231"),)


def _registered(rng: random.Random) -> Iterator[tuple]:
    for name in _NAMES:
        yield (Action(name, _inputs_for(rng, name)),)
    for _ in range(7):
        name = rng.choice(_NAMES)
        padded = rng.choice(("", " ", "\t")) + name + rng.choice(("", " ", "\n"))
        yield (Action(padded, _inputs_for(rng, name)),)
    # Refunds the shop makes: a tool that writes runs once too (a second run asks the shop for a second refund).
    for order in ("88232", "88236"):
        yield (Action("applyRefund", json.dumps({"orderId": order, "reason": "质量问题"}, ensure_ascii=False)),)
    yield (Action("", "88231"),)  # no tool name: CarefulRegistry's own error, with nothing to suggest from
    yield (Action("  ", ""),)


def _refund_near_misses(rng: random.Random) -> Iterator[tuple]:
    for name in ("applyrefund", "ApplyRefund", "apply_refund", "applyRefunds", "aplyRefund"):
        order = rng.randint(88231, 88236)
        reason = rng.choice(("broken", "质量问题"))
        yield (Action(name, json.dumps({"orderId": str(order), "reason": reason}, ensure_ascii=False)),)


def _after_real_calls(rng: random.Random) -> Iterator[tuple]:
    """A real tool runs, then a near-miss of that same tool or a name close to none: what ran before is no
    suggestion, and the tool just used is still a candidate."""
    for real, then in (("queryOrder", "queryorder"), ("queryLogistics", "trackParcel"),
                       ("getCurrentTime", "getTime"), ("queryOrder", "查询订单"), ("searchKnowledge", "weather"),
                       ("queryLogistics", "querylogistics")):
        yield (Action(real, _inputs_for(rng, real)),)
        yield (Action(then, "88231"),)


def _after_real_calls_hint(args: tuple, expected: Any, got: Any) -> str | None:
    want = json.loads(_text_of(expected))
    if not (isinstance(want, dict) and "available_tools" in want):
        return _passed_on_hint(args, expected, got)
    have = json.loads(_text_of(got))
    name = args[0].tool_name
    if isinstance(have, dict) and have.get("available_tools") == want["available_tools"]:
        if "did_you_mean" in want and have.get("did_you_mean") != want["did_you_mean"]:
            return f"{shown(name)} should suggest {shown(want['did_you_mean'])}, whatever tool ran before: all names count."
        if "did_you_mean" not in want and "did_you_mean" in have:
            return f"{shown(name)} is close to no name: no did_you_mean, whatever tool ran before it."
    return _unknown_tool_hint(args, expected, got)


def _unknown_tool_hint(args: tuple, expected: Any, got: Any) -> str | None:
    """What an answer's unknown-tool error lacks, in the order the exercise builds it."""
    want, have = json.loads(_text_of(expected)), json.loads(_text_of(got))
    if not isinstance(have, dict) or "error" not in have:
        return ('An unknown tool gets the error object (its "error" key, as CarefulRegistry writes it), not a '
                "tool's answer: the model takes the suggestion up.")
    if have.get("available_tools") != want["available_tools"]:
        return "The error should still list available_tools, the registered names in order."
    if "did_you_mean" in want:
        if "did_you_mean" not in have and (misplaced := [  # a misspelt key: the answer shown keeps the spec's keys
                key for key, value in have.items()
                if key not in want and value in (want["did_you_mean"], [want["did_you_mean"]])]):
            return (f"The suggestion for {shown(args[0].tool_name)}, {shown(want['did_you_mean'])}, is under "
                    f"{shown(misplaced[0])}: the key is did_you_mean.")
        if "did_you_mean" not in have and args[0].tool_name != args[0].tool_name.strip():
            return (f"{shown(args[0].tool_name)} should suggest {shown(want['did_you_mean'])}: compare the name "
                    "stripped, as CarefulRegistry looks it up.")
        if isinstance(have.get("did_you_mean"), (list, tuple)):
            return (f"did_you_mean is one name, a string ({shown(want['did_you_mean'])}), not a list: take the name "
                    "out of the list get_close_matches returns.")
        if isinstance(have.get("did_you_mean"), str) and have["did_you_mean"]:
            return (f"{shown(args[0].tool_name)} should suggest only {shown(want['did_you_mean'])}, the closest name "
                    "(n=1).")
        return f"{shown(args[0].tool_name)} should suggest {shown(want['did_you_mean'])}."
    if "did_you_mean" in have:
        name, names = args[0].tool_name.strip(), want["available_tools"]
        lowered = {known.lower(): known for known in names}
        by_case = [lowered[close] for close in difflib.get_close_matches(name.lower(), list(lowered), n=1)]
        by_cutoff = difflib.get_close_matches(name, names, n=1, cutoff=0.5)
        # Two mistakes give a suggestion here: lower-casing both sides, and a lowered cutoff. Name the one that
        # explains this suggestion, or both when either would.
        lower_cased = by_case == [have["did_you_mean"]]
        if lower_cased and by_cutoff == by_case:
            return (f"{shown(args[0].tool_name)} is not close to any tool name at difflib's default cutoff (0.6), the "
                    "names compared as written (not lower-cased).")
        if lower_cased:
            return (f"{shown(args[0].tool_name)} is not close to any tool name as written: compare the names as they "
                    "are, not lower-cased.")
        if by_cutoff:
            return (f"{shown(args[0].tool_name)} is not close to any tool name at difflib's default cutoff (0.6): "
                    "keep the default.")
        return (f"{shown(args[0].tool_name)} is not close to any tool name: suggest only a near-miss, and leave the key "
                "out otherwise.")
    return None


def _passed_on_hint(args: tuple, expected: Any, got: Any) -> str:
    """A registered tool's Observation comes back changed: re-serialised (the same data in other text), or not run,
    or run twice; or a blank name, which is CarefulRegistry's own error, with no name to suggest from."""
    if twice := _ran_twice_hint(expected, got):
        return twice
    try:
        same_data = json.loads(_text_of(got)) == json.loads(_text_of(expected))
    except ValueError:
        same_data = False
    if same_data:
        return ("It holds the same data, re-serialised: pass the Observation on as it is (json.dumps changes its "
                "spacing and escapes).")
    if not args[0].tool_name.strip():
        return "A blank name has no name to suggest from: pass CarefulRegistry's \"no tool name\" error on as it is."
    return "A real tool must still run, its Observation unchanged."


# -- exercise 1 on registries of other tools: the suggestions come from the registry, not from the shop ----------
# Other services' tools: verbs and nouns apart from the shop's, and Chinese names (difflib compares characters).
_OTHER_VERBS = ("send", "book", "convert", "translate", "cancel", "list", "create", "get", "check", "find")
_OTHER_NOUNS = ("Email", "Flight", "Weather", "Invoice", "Coupon", "Stock", "Address", "Reminder", "Currency")
_OTHER_ZH = ("查天气", "发邮件", "订机票", "开发票", "换汇率", "翻译文本")


def _other_name(rng: random.Random) -> str:
    """A tool name of another service: one near to a shop's name (checkOrder, query_logistics, applyRefunds),
    a Chinese one, or another verb and noun (sendEmail)."""
    kind = rng.randrange(6)
    if kind < 2:
        real = rng.choice(_NAMES)
        verb = re.match(r"[a-z]+", real).group()
        return rng.choice((rng.choice(_VERBS) + real[len(verb):], re.sub(r"(?<!^)([A-Z])", r"_\1", real).lower(),
                           real + rng.choice(("s", "V2", "Info"))))
    if kind == 2:
        return rng.choice(_OTHER_ZH)
    return rng.choice(_OTHER_VERBS) + rng.choice(_OTHER_NOUNS)


def _other_names(rng: random.Random) -> tuple[str, ...]:
    """A registry's two to four names; one time in two, one of them is a shop's tool (it gets the shop's own)."""
    held = rng.choice(_NAMES) if rng.random() < 0.5 else None
    names: list[str] = [held] if held else []
    size = rng.randint(2, 4)
    while len(names) < size:
        name = _other_name(rng)
        # Not a shop's name (that is its tool), nor a second spelling of the shop's tool it holds.
        if name in _NAMES or name in names or (held and difflib.get_close_matches(name, [held])):
            continue
        names.append(name)
    rng.shuffle(names)
    return tuple(names)


def _near_held(rng: random.Random, names: tuple[str, ...]) -> str:
    """A near-miss of one of the registry's own names: difflib finds a name of it close."""
    while True:
        target = rng.choice(names)
        if target.isascii():
            name = _near_miss(rng, target)
        else:  # a Chinese name: a character left out, or a word added
            name = rng.choice((target[:-1], target[1:], target + rng.choice(("一下", "吧"))))
        if name not in names and difflib.get_close_matches(name, list(names), n=1):
            return name


def _near_lacked(rng: random.Random, names: tuple[str, ...]) -> str:
    """A near-miss of a shop's name the registry lacks (the shop's name closest to it is that one)."""
    lacked = [name for name in _NAMES if name not in names]
    while True:
        real = rng.choice(lacked)
        name = _near_miss(rng, real)
        if name not in names and name not in _NAMES and _close(name) == real:
            return name


def _far_from_all(rng: random.Random, names: tuple[str, ...]) -> str:
    """A name close to none of the registry's names and none of the shop's."""
    while True:
        name = rng.choice((*_FAR, *_OTHER_ZH, "fetchNews", "playMusic"))
        if name not in names and not difflib.get_close_matches(name, [*names, *_NAMES]):
            return name


def _other_registries(rng: random.Random) -> Iterator[tuple]:
    """(the registry's names, an Action): the check builds one registry of those tools per case and asks it each
    Action of the case in turn."""
    names = ("echoText", "echoLine", "queryOrder")  # the check's own two tools and one of the shop's
    for action in (Action("echoTxt", "hi"), Action("echoLines", "hi"), Action("queryOrdr", "88231"),
                   Action("queryLogistic", "SF1234567890"), Action("applyRefnd", "88231")):
        yield (names, action)
    for _ in range(6):
        names = _other_names(rng)
        asked = [_near_held(rng, names), _near_lacked(rng, names), _far_from_all(rng, names)]
        rng.shuffle(asked)
        for name in asked:
            real = _close(name)
            yield (names, Action(name, _inputs_for(rng, real) if real else rng.choice(("88231", "", "明天 北京"))))


def _other_registry_hint(args: tuple, expected: Any, got: Any) -> str | None:
    """A suggestion from a list of names of the answer's own (the shop's, typed in or added) shows as a name the
    registry lacks, or as none where the registry holds a close one."""
    names, action = args
    want, have = json.loads(_text_of(expected)), json.loads(_text_of(got))
    if isinstance(have, dict) and have.get("available_tools") == want["available_tools"]:
        said = have.get("did_you_mean")
        if isinstance(said, str) and said not in names:
            return f"No {shown(said)} in this registry: suggest among self.tools, not your own list."
        if "did_you_mean" in want and said is None:
            return f"{shown(want['did_you_mean'])} is in this registry: suggest among the names in self.tools."
    return _unknown_tool_hint((action,), expected, got)


def _no_action(rng: random.Random) -> Iterator[tuple]:
    yield (None,)  # a reply with no Action: CarefulRegistry's error, never an exception


# A registry whose echoText passes on what a service behind it said: a real tool, whatever its words.
_ECHOES = ("echoText", "sendEmail", "queryOrder")


def _says_unknown_tool(rng: random.Random) -> Iterator[tuple]:
    """A real tool whose Observation, plain text, says "unknown tool" (the words of a service behind it): an answer
    that tells CarefulRegistry's error by those words (`"unknown tool" in observation`) parses it as JSON, and
    raises."""
    for said_text in ("unknown tool: sendMail", "The mail service said: unknown tool. 请稍后再试"):
        yield (_ECHOES, Action("echoText", said_text))


def _says_unknown_tool_hint(args: tuple, expected: Any, got: Any) -> str | None:
    return (f"{shown(args[1].tool_name)} is a real tool, and it ran: its Observation is passed as it is, whatever it "
            "says. Tell CarefulRegistry's error by what only it has (available_tools, or a name not in self.tools).")


def _registered_later(rng: random.Random) -> Iterator[tuple]:
    """Tools registered after the registry was made (CarefulRegistry.register): registered names all the same, in
    self.tools and in available_tools, so a near-miss of one is suggested. Fixed inputs: nothing drawn from `rng`."""
    yield (("queryOrder", "echoText"), ("queryLogistics",), Action("queryLogistic", "SF1234567890"))
    yield (("getCurrentTime",), ("searchKnowledge",), Action("searchKnowledg", "退货"))


def _registered_later_hint(args: tuple, expected: Any, got: Any) -> str | None:
    _, late, action = args
    want, have = json.loads(_text_of(expected)), _text_of(got)
    have = json.loads(have) if isinstance(have, str) and have.startswith("{") else None
    said = want.get("did_you_mean")
    if said in late and isinstance(have, dict) and have.get("did_you_mean") != said:
        return f"{shown(said)} was registered later: suggest among self.tools as it is now."
    return _unknown_tool_hint((action,), expected, got)


OTHER_REGISTRY = "a registry of other tools suggests among its own names only, never a tool it does not hold"

SUGGESTION_RULES = (
    Rule("a near-miss of a tool's name gets did_you_mean: the closest name "
         "difflib.get_close_matches(name, names, n=1) finds", _near_misses, hint=_unknown_tool_hint),
    Rule("a name close to none gets no did_you_mean key, but still the error and available_tools", _far_names,
         hint=_unknown_tool_hint),
    Rule("everything else is CarefulRegistry's: a real tool still runs, once, and its Observation is passed as it is",
         _registered, hint=_passed_on_hint),
    Rule("a near-miss runs no tool, not even the one suggested: the shop holds what it held", _refund_near_misses,
         hint=lambda args, expected, got: "The suggestion is for the model to take up, not the registry."),
    Rule("a real tool run before changes nothing: the suggestion comes from the name asked, among all names",
         _after_real_calls, hint=_after_real_calls_hint),
    # Last, so the inputs drawn for the rules above stay as they were.
    Rule(OTHER_REGISTRY, _other_registries, hint=_other_registry_hint),
    Rule("execute never raises: no Action at all (None) still gets CarefulRegistry's error", _no_action,
         hint=lambda args, expected, got: "Pass CarefulRegistry's error for it on as it is."),
    Rule("a real tool's Observation is passed as it is, even one that says \"unknown tool\" (a tool's own words)",
         _says_unknown_tool, hint=_says_unknown_tool_hint),
    Rule("a tool registered later (register) is suggested too",
         _registered_later, hint=_registered_later_hint),
)


def _read_suggestion(value: Any) -> Any:
    """An unknown-tool error is compared by what the exercise is about: that it is an error, its available_tools
    and its did_you_mean (or that there is none); its words are CarefulRegistry's, or the learner's. Any other
    Observation is compared whole."""
    text = _text_of(value)
    try:
        data = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        data = None
    if isinstance(data, dict) and ("available_tools" in data or "did_you_mean" in data):
        # did_you_mean first: a failure shows the head of this, cut short
        text = {key: data[key] for key in ("did_you_mean", "available_tools") if key in data}
        text["error"] = "…" if "error" in data else "(none)"
    return replace(value, observation=text) if isinstance(value, WithRefunds) else text


class _Suggesting:
    """02, exercise 1's answer as a registry: its tools, register (CarefulRegistry's), and `_suggesting`'s execute,
    which reads the tools as they are when it is called."""

    def __init__(self, tools: list[Tool]):
        self.tools = {tool.name: tool for tool in tools}
        self.execute = _suggesting(self.tools)

    def register(self, tool: Tool) -> None:
        self.tools[tool.name] = tool


def _suggesting(tools: dict[str, Tool]) -> Callable[[Action], str]:
    """02, exercise 1's answer (the solution's): CarefulRegistry's Observation, and on an unknown-tool error the
    closest registered name as "did_you_mean" when difflib finds one."""

    def execute(action: Action) -> str:
        observation = _careful_execute(tools, action)
        data = json.loads(observation) if observation.startswith("{") else None
        if isinstance(data, dict) and "available_tools" in data:
            close = difflib.get_close_matches(action.tool_name.strip(), list(tools), n=1)
            if close:
                data["did_you_mean"] = close[0]
            return json.dumps(data, ensure_ascii=False)
        return observation

    return execute


def _with_shop(execute: Callable[[Action], Any], shop: CountingShop) -> Callable[[Action], Any]:
    """`execute`, and the refunds the call made in `shop` when it made any, or asked for more than one (the call's,
    not the shop's: asking again compares the call)."""

    def run(action: Action) -> Any:
        before, asked = _refunds(shop), shop.asked
        observation = execute(action)
        made = [order for order in _refunds(shop) if order not in before]
        asked = shop.asked - asked
        return WithRefunds(observation, tuple(made), asked) if made or asked > 1 else observation

    return run


def _registry_tools(names: tuple[str, ...], shop: Shop) -> list[Tool]:
    """The tools of a registry of other tools: the shop's where it holds one, the check's own echo tools, and for
    any other name a tool that returns its input."""
    shops = {tool.name: tool for tool in shop_tools(shop)}
    own = {EchoTool.name: EchoTool, LineTool.name: LineTool}
    return [shops[name] if name in shops else own[name]() if name in own
            else FunctionTool(name, "A tool of another service: returns its input.", str) for name in names]


def _per_registry(shops: Callable[[Action], Any], build: Callable[[list[Tool]], Any]) -> Callable[..., Any]:
    """One side of the check: an Action alone goes to `shops` (the shop's registry); (names, Action) to a registry
    of other tools `build` makes once per case, over a shop of its own (it may hold applyRefund), which answers
    every Action of its case, as the shop's registry answers all the others; (names, later, Action) to one made
    with `names` that then registers the tools named `later`, one by one."""
    made: dict[tuple, Callable[[Action], Any]] = {}

    def answer(*args: Any) -> Any:
        if len(args) == 1:
            return shops(*args)
        *case, action = args
        if tuple(case) not in made:
            own_shop = _counting_shop()
            registry = build(_registry_tools(case[0], own_shop))
            for tool in _registry_tools(case[1], own_shop) if len(case) > 1 else ():
                registry.register(tool)
            made[tuple(case)] = _with_shop(registry.execute, own_shop)
        return made[tuple(case)](action)

    return answer


def _show_asked(args: tuple) -> str:
    if len(args) == 1:
        return _show_action(args)
    names, *later, action = args
    registered = f", then {', '.join(later[0])} registered" if later else ""
    return f"{_show_action((action,))} in a registry of {', '.join(names)}{registered}"


@grades("Exercise 1", spec=Spec(SUGGESTION_RULES))
def check_suggesting_registry(SuggestingRegistry: type | None) -> None:
    """02, exercise 1: an unknown-tool error with "did_you_mean" for near-misses only."""
    exercise = "Exercise 1"
    if SuggestingRegistry is None:
        return _not_attempted(exercise, "Write class SuggestingRegistry(CarefulRegistry) in the cell above.")
    shop, reference_shop = _counting_shop(), _counting_shop()
    registry = _with_shop(_instance(exercise, SuggestingRegistry, shop_tools(shop)).execute, shop)
    reference = _with_shop(_suggesting({tool.name: tool for tool in shop_tools(reference_shop)}), reference_shop)
    mine = _per_registry(registry, lambda tools: _instance(exercise, SuggestingRegistry, tools))
    expected = _per_registry(reference, _Suggesting)
    tried = agree_on(exercise, "check_suggesting_registry", SUGGESTION_RULES, mine, expected, shape=_a_string,
                     read=_read_suggestion, call="execute(action)", show=_show_asked)
    return _passed(exercise, f"{tried} generated Actions: near-misses get the closest name, other names only the "
                             "list of tools, and real tools still run; registries of other tools suggest their "
                             "own names.")


# -- exercise 2's inputs, drawn from its spec ------------------------------------------------------
CUT_NOTE = re.compile(r"\[cut: (\d+) more characters?\]\s*$")
# The whole of what follows the kept part, in the form the exercise gives: "… [cut: 812 more characters]"
# (none between … and [, and "1 more character" are forgiven; spaces before it: `_note_spaces_forgiven`). The note
# is what the Observation ends with ("says at the end"): nothing after the ], not a line break either.
_CUT_TAIL = re.compile(r"(.*?)… ?\[cut: (\d+) more characters?\]\Z", re.DOTALL)
_NOTE_ONLY = re.compile(r"\s*… ?\[cut: \d+ more characters?\]")
# What after the kept part is a note, in another form ('[Cut: …]', '(cut: …)', '… [cut: 1,112 …]', a full stop after
# it, Chinese words): a hint says the form, not that there is no note.
_A_NOTE = re.compile(r"cut|trunc|…|\.\.\.|截|省略", re.IGNORECASE)


class EchoTool(Tool):
    """A tool of the check's own: its Observation is its input, so the check can make one of any length and
    alphabet (Chinese, emoji, line breaks)."""

    name = "echoText"
    description = "Returns its input as it is."

    def invoke(self, input: str) -> str:
        return input


class LineTool(Tool):
    """A tool of the check's own whose Observation ends in whitespace (its input and a line break), as a
    file's text or a command's output often does: those characters count too."""

    name = "echoLine"
    description = "Returns its input as a line, with a line break at its end."

    def invoke(self, input: str) -> str:
        return input + "\n"


def _cap_tools(shop: Shop) -> list[Tool]:
    """The tools a CappedRegistry is built with: the shop's, and the check's own two."""
    return [*shop_tools(shop), EchoTool(), LineTool()]


_WORDS = ("退货", "签收次日起 7 天内", "质量问题", "🙂", "📦", "warranty", "return policy", "\n", "…", " ",
          "[cut: 3 more characters]", "扫地机不回充", "a", "line two\nline three", "é", "ß")


def _text(rng: random.Random, size: int) -> str:
    """A text of exactly `size` characters (no whitespace at its ends: CarefulRegistry strips the input)."""
    text = ""
    while len(text) < size:
        text += rng.choice(_WORDS)
    text = text[:size]
    if text[0].isspace():
        text = "x" + text[1:]
    if text[-1].isspace():
        text = text[:-1] + "x"
    return text


def _length(action: Action) -> int:
    return len(_careful_execute({tool.name: tool for tool in _cap_tools(_fresh_shop())}, action))


def _shop_actions(rng: random.Random) -> Iterator[Action]:
    yield Action("searchKnowledge", "退货")
    yield Action("queryOrder", "88231")
    while True:
        name = rng.choice(("searchKnowledge", "queryOrder", "queryLogistics", "getCurrentTime", "checkOrder"))
        yield Action(name, _inputs_for(rng, name) if name != "checkOrder" else "88231")


def _longer(rng: random.Random) -> Iterator[tuple]:
    yield (120, Action("searchKnowledge", "退货"))
    yield (60, Action("queryOrder", "88231"))
    actions = _shop_actions(rng)
    next(actions), next(actions)
    for _ in range(10):
        action = next(actions)
        size = _length(action)
        yield (rng.choice((1, rng.randint(1, size - 1), size - rng.randint(1, 9), size // 2)), action)
    for size in (11, 100, 1500):  # cuts of one, two, three and four digits
        limit = rng.randint(1, min(size - 1, 60))
        yield (limit, Action("echoText", _text(rng, size)))
    yield (rng.randint(100, 400), Action("echoText", _text(rng, rng.randint(1200, 1600))))
    # A cut right after a space or a line break: the kept part keeps it.
    yield (3, Action("echoText", "ab \ncd"))
    yield (5, Action("echoText", "退货政策\n签收次日起 7 天内"))


def _within(rng: random.Random) -> Iterator[tuple]:
    yield (120, Action("getCurrentTime", ""))
    order = Action("queryOrder", "88231")
    yield (_length(order), order)  # exactly the limit: within it
    yield (_length(order) - 1, order)  # one over: one character cut
    actions = _shop_actions(rng)
    for _ in range(6):
        action = next(actions)
        size = _length(action)
        yield (size + rng.choice((0, 0, 1, rng.randint(2, 500))), action)
    for size in (1, 37, 300):
        yield (size + rng.choice((0, 1, 5)), Action("echoText", _text(rng, size)))


def _default_limit(rng: random.Random) -> Iterator[tuple]:
    for size in (1999, 2000, 2001, rng.randint(2100, 5000)):
        yield (None, Action("echoText", _text(rng, size)))


def _characters(rng: random.Random) -> Iterator[tuple]:
    for _ in range(5):  # within the limit in characters, over it in UTF-8 bytes
        text = "".join(rng.choice("退货政策签收质量问题扫地机🙂📦") for _ in range(rng.randint(20, 80)))
        yield (len(text) + rng.choice((0, 3)), Action("echoText", text))
    for _ in range(3):
        text = "".join(rng.choice("退货政策签收质量问题🙂") for _ in range(rng.randint(40, 90)))
        yield (rng.randint(5, 30), Action("echoText", text))


def _trailing_whitespace(rng: random.Random) -> Iterator[tuple]:
    yield (3, Action("echoLine", "abc"))  # 'abc\n' is 4 characters: over by its line break, cut by 1
    yield (4, Action("echoLine", "abc"))  # exactly the limit with its line break: untouched, line break kept


def _refunds_once(rng: random.Random) -> Iterator[tuple]:
    for limit in (30, 400):
        order = rng.choice((88232, 88233, 88236))
        yield (limit, Action("applyRefund", json.dumps({"orderId": str(order), "reason": "质量问题"},
                                                       ensure_ascii=False)))


def _capped_text(observation: str, limit: int) -> str:
    """02, exercise 2's answer (the solution's): the first `limit` characters and a note, over the limit."""
    if len(observation) <= limit:
        return observation
    return observation[:limit] + f"… [cut: {len(observation) - limit} more characters]"


def _note_spaces_forgiven(text: Any, limit: int) -> Any:
    """An answer's Observation with the spaces it put between its first `limit` characters and the note taken
    out: those are forgiven, the kept part's own whitespace (a line break at the cut) is not."""
    if isinstance(text, str) and len(text) > limit and _NOTE_ONLY.fullmatch(text[limit:]):
        return text[:limit] + text[limit:].lstrip()
    return text


def _read_capped(value: Any) -> Any:
    """The Observation with its note in one spelling: the spec's form, whatever spaces were put around it."""
    text = _text_of(value)
    if isinstance(text, str) and (match := _CUT_TAIL.match(text)):
        text = f"{match.group(1)}… [cut: {match.group(2)} more characters]"
    return replace(value, observation=text) if isinstance(value, WithRefunds) else text


def _characters_n(count: int) -> str:
    return f"{count} character" if count == 1 else f"{count} characters"


def _cut_hint(args: tuple, expected: Any, got: Any) -> str | None:
    """What a capped Observation did wrong, worked out from the whole Observation."""
    limit, action = 2000 if args[0] is None else args[0], args[1]
    got = _text_of(got)
    full = _careful_execute({tool.name: tool for tool in _cap_tools(_fresh_shop())}, action)
    if args[0] is None and (cut := _CUT_TAIL.match(got)) and len(cut.group(1)) != limit:
        return f"It kept {_characters_n(len(cut.group(1)))}: with no limit given, the limit is 2000."
    if len(full) <= limit:
        notes = ["exactly the limit is within it"] if len(full) == limit else []
        if full[-1:].isspace():
            notes.append("keep the whitespace at its end")
        if len(full.encode()) > limit:  # over it only in UTF-8 bytes
            notes.append("counted in characters, not bytes")
        edge = f" ({'; '.join(notes)})" if notes else ""
        return f"It is {_characters_n(len(full))}, within limit={limit}{edge}: pass it untouched."
    if got == full:
        tail = ": the whitespace at its end counts too" if full[-1].isspace() else ""
        return f"It is {_characters_n(len(full))}, over limit={limit}, and came back whole{tail}."
    if got in (full.rstrip(), full.strip()):
        return (f"It is {_characters_n(len(full))}, over limit={limit}, and came back stripped, with no note: the "
                "whitespace at its end counts too.")
    if not got.startswith(full[:limit]) and full[:limit] != full[:limit].rstrip() and got.startswith(
            full[:limit].rstrip()):
        return f"Keep the first {_characters_n(limit)} whole, whitespace at the cut too: do not strip it."
    if (cut := _CUT_TAIL.match(got)) and len(kept := cut.group(1)) != limit and full.startswith(kept):
        return (f"After the first {_characters_n(limit)} comes only the note, but it kept "
                f"{_characters_n(len(kept))}: cut at limit={limit}, the registry's own, the note after it.")
    if not got.startswith(full[:limit]):
        return f"The kept part should be the first {_characters_n(limit)} of the Observation."
    tail = got[limit:]
    note = CUT_NOTE.search(tail)
    if note is None and not full[limit:].startswith(tail) and _A_NOTE.search(tail):
        return "Its note is not in the form '… [cut: N more characters]': write it so, N in digits, nothing after the ]."
    if note is None:
        return "It ends without a note such as '… [cut: N more characters]': the model cannot tell text is missing."
    if _NOTE_ONLY.fullmatch(tail) is None:
        if _NOTE_ONLY.fullmatch(tail.rstrip()):
            return f"Nothing comes after the note's ], not even {shown(tail[len(tail.rstrip()):])}: it ends the Observation."
        if tail.lstrip().startswith("..."):
            return "The note starts with …, one character (an ellipsis), not three full stops: '… [cut: N more characters]'."
        return f"After the first {_characters_n(limit)} comes only the note, in the form '… [cut: N more characters]'."
    if int(note.group(1)) != len(full) - limit:
        return f"The note says {note.group(1)}, but {len(full) - limit} were cut ({len(full)} minus {limit} kept)."
    return None


CAP_RULES = (
    Rule("over the limit: its first limit characters, then '… [cut: N more characters]', nothing after it", _longer,
         hint=_cut_hint),
    Rule("within the limit (exactly limit long too): untouched", _within, hint=_cut_hint),
    Rule("limit is 2000 when not given", _default_limit, hint=_cut_hint),
    Rule("Chinese and emoji count one character each, not bytes", _characters, hint=_cut_hint),
    Rule("the tool runs once (applyRefund asks the shop for one refund)", _refunds_once,
         hint=lambda args, expected, got: _ran_twice_hint(expected, got)
         or "Its Observation should be the first run's: run the tool once per call."),
    Rule("an Observation's whitespace at its end counts too, and is kept within the limit",
         _trailing_whitespace, hint=_cut_hint),
)


@grades("Exercise 2", spec=Spec(CAP_RULES))
def check_capped_registry(CappedRegistry: type | None) -> None:
    """02, exercise 2: Observations longer than `limit` are cut, with a note that counts what was cut."""
    exercise = "Exercise 2"
    if CappedRegistry is None:
        return _not_attempted(exercise, "Write class CappedRegistry(CarefulRegistry) in the cell above.")
    if not isinstance(CappedRegistry, type):
        _instance(exercise, CappedRegistry)  # says a class is expected
    # One registry per limit over one shop answers every Action with that limit, as one registry serves a run;
    # applyRefund, which writes, gets a fresh shop each time, so asking it again is asked of a shop as it was.
    shop = _counting_shop()
    registries: dict[int | None, Any] = {}

    def mine(limit: int | None, action: Action) -> Any:
        writes = action.tool_name == "applyRefund"
        own_shop = _counting_shop() if writes else shop
        if writes or limit not in registries:
            tools = _cap_tools(own_shop)
            # the call as the exercise writes it, limit= too: a parameter named otherwise fails on that name
            made = _run(exercise, "CappedRegistry(tools)", CappedRegistry, tools) if limit is None else _run(
                exercise, f"CappedRegistry(tools, limit={limit})", CappedRegistry, tools, limit=limit)
            if not writes:
                registries[limit] = made
        else:
            made = registries[limit]
        cap = 2000 if limit is None else limit
        return _with_shop(lambda action: _note_spaces_forgiven(made.execute(action), cap), own_shop)(action)

    reference_shop = _counting_shop()
    reference_tools = {tool.name: tool for tool in _cap_tools(reference_shop)}

    def tools_of_reference(action_writes: bool) -> tuple[dict[str, Tool], CountingShop]:
        if not action_writes:
            return reference_tools, reference_shop
        fresh = _counting_shop()
        return {tool.name: tool for tool in _cap_tools(fresh)}, fresh

    def reference(limit: int | None, action: Action) -> Any:
        tools, own_shop = tools_of_reference(action.tool_name == "applyRefund")
        capped = _with_shop(lambda action: _capped_text(_careful_execute(tools, action), 2000 if limit is None
                                                        else limit), own_shop)
        return capped(action)

    tried = agree_on(exercise, "check_capped_registry", CAP_RULES, mine, reference, shape=_a_string,
                     read=_read_capped, call="execute(action)", show=_show_action)
    return _passed(exercise, f"{tried} generated Observations of every length, tool and alphabet: cut at the limit "
                             "with a note that counts what was cut, and untouched within it.")
