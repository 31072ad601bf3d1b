"""Lesson 21 (several agents): a registry scoped to one specialist's tools, and the rule that decides a reminder."""

from __future__ import annotations

import contextlib
import json
import random
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from tinyagent.checks.generated import Rule, Spec, agree_on
from tinyagent.checks.reporting import COURSE_NOW, _brief, _fail, _not_attempted, _passed, _run, grades, shown
from tinyagent.clock import fixed_clock
from tinyagent.registry import ToolRegistry, ToolResult, error_observation
from tinyagent.shop import Shop
from tinyagent.shop.tools import shop_tools
from tinyagent.tools import Action, FunctionTool

SCOPE_ALLOWED = ("queryOrder", "queryLogistics")


def _reference_scope(registry: ToolRegistry, names: list[str]) -> ToolRegistry:
    """21, exercise 1's answer (the solution's): the named tools, in the order given; another tool of `registry`
    comes back as an error naming the tools allowed."""

    class Scoped(ToolRegistry):
        def _run(self, action: Action | None) -> ToolResult:
            name = action.tool_name if action is not None else None
            name = name.strip() if isinstance(name, str) else ""  # None, or no text (42): the registry's own error
            if name in registry and name not in names:
                return ToolResult(error_observation(f"tool {name} is not available here: use one of "
                                                    f"{', '.join(names)}"), error=True)
            return super()._run(action)

    return Scoped([registry.get(name) for name in names])


# -- exercise 1's inputs, drawn from its spec ------------------------------------------------------
# Beside the shop's five tools a registry may hold others (lesson 21's team has weather and calendar tools): a
# scope written for the shop's names only shows there. Each records its calls, so a call that ran shows.
_EXTRA_TOOLS = ("getForecast", "getMeetings", "sendWechat", "createReminder", "queryOrderStatus")
_SHOP_TOOLS = ("queryOrder", "queryLogistics", "applyRefund", "searchKnowledge", "getCurrentTime")
_ORDER_IDS = ("88231", "88232", "88233", "88234", "88235", "88236")
_TRACKING = ("SF1234567890", "YT2468013579", "ZT5566778899", "JD0098765432")


def _registry(shop: Shop, extras: tuple[str, ...], calls: list[tuple[str, str]]) -> ToolRegistry:
    clock = fixed_clock(COURSE_NOW)
    tools = list(shop_tools(shop, clock))
    for name in extras:
        def record(text: str, name: str = name) -> str:
            calls.append((name, text))
            return json.dumps({"tool": name, "input": text, "ok": True}, ensure_ascii=False)

        tools.append(FunctionTool(name, f"{name}: one of the team's tools.", record,
                                  descriptions={"zh": f"{name}：团队的工具之一。"}))
    return ToolRegistry(tools)


def _tool_input(rng: random.Random, tool: str) -> str:
    """An input of the kind `tool` takes, right or wrong, in either language."""
    if tool == "queryOrder":
        return rng.choice((rng.choice(_ORDER_IDS), str(rng.randint(10000, 99999)), f" {rng.choice(_ORDER_IDS)} "))
    if tool == "queryLogistics":
        return rng.choice((rng.choice(_TRACKING), f"SF{rng.randint(10 ** 9, 10 ** 10 - 1)}"))
    if tool == "applyRefund":
        reason = rng.choice(("质量问题：扫地机不回充", "it stopped charging", "不想要了"))
        return rng.choice((json.dumps({"orderId": rng.choice(_ORDER_IDS), "reason": reason}, ensure_ascii=False),
                           '{"orderId": "88231"', ""))
    if tool == "searchKnowledge":
        return rng.choice(("退货 政策", "return policy", "发票", "七天无理由退货"))
    if tool == "getCurrentTime":
        return ""
    return rng.choice(("北京 明天", '{"city":"北京","date":"2026-07-01"}', "明天 15:00 带伞", "tomorrow"))


# A tool's line in the prompt's list: its name is the line's first word, after a number or a mark ("1. queryOrder -
# ...", as the registry writes it, or "- queryOrder: ...": the spec names no format), and a word that is no tool of
# the registry (a heading, a description's next line) lists none.
_LISTED = re.compile(r"^[^A-Za-z0-9\n]*(?:[0-9]+[.)])?[^A-Za-z0-9\n]*([A-Za-z_][A-Za-z0-9_]*)", re.MULTILINE)


@dataclass(frozen=True)
class _Probe:
    """What a scoped registry did with one input (`what`, compared with the reference's), or what is wrong with
    the scope itself (`problem`: not a registry, or it changed what it was given)."""

    what: str
    problem: str | None = None

    def __repr__(self) -> str:  # as a failure quotes it
        return repr(self.problem or self.what)


def _effects(shop: Shop, before: int, calls: list[tuple[str, str]]) -> str:
    wrote = [f"refund of {refund['orderId']}" for refund in shop.refunds()[before:]]
    wrote += [f"{name} ran" for name, _ in calls]
    return f"; effects: {', '.join(wrote)}" if wrote else ""


@contextlib.contextmanager
def _shop_for(shared: Shop, tool: str) -> Iterator[Shop]:
    """The shop a probe runs on: a fresh one for applyRefund (its refund must be the first), else `shared`
    (making a shop takes milliseconds, and the look-ups change nothing)."""
    if tool.strip() != "applyRefund":  # the registry strips a tool's name: " applyRefund " is applyRefund
        yield shared
        return
    with Shop(":memory:", clock=fixed_clock(COURSE_NOW)) as shop:
        yield shop


def _prober(scope: Callable[[ToolRegistry, list[str]], ToolRegistry], shared: Shop,
            exercise: str = "Exercise 1") -> Callable[..., _Probe]:
    """`scope` as the check calls it: on a new registry, scoped to `names`, then asked one thing (`asked`): run a
    tool, or build the prompt's tool list; or ("second", tool, input, other names): build a second scope on the
    same registry, then run the tool in the first. What the call wrote in the shop is part of the answer. A
    registry or names list the answer changed fails at once, on the input that changed it."""

    def probe(extras: tuple[str, ...], names: tuple[str, ...], asked: tuple) -> _Probe:
        calls: list[tuple[str, str]] = []
        with _shop_for(shared, asked[1] if asked[0] not in ("list", "no name") else "") as shop:
            registry = _registry(shop, extras, calls)
            held = [(tool.name, id(tool)) for tool in registry]
            given, before = list(names), len(shop.refunds())
            scoped = scope(registry, given)
            _unchanged(exercise, registry, held, given, names, (extras, names, asked), scoped)
            if not isinstance(scoped, ToolRegistry):
                return _Probe("", f"it returned {_brief(scoped, 30)}: return a ToolRegistry, so an agent can use it")
            if asked[0] == "second":  # another scope on the same registry, then the first one's tool run
                other = list(asked[3])
                second = scope(registry, other)
                _unchanged(exercise, registry, held, other, asked[3], (extras, names, asked), second)
            if asked[0] == "list":
                listed = scoped.build_tool_list(asked[1])
                if not isinstance(listed, str):
                    return _Probe("", f"build_tool_list() returned {_kind(listed)}: return a str")
                names = [name for name in _LISTED.findall(listed) if name in registry]
                own = all(registry.get(name).describe(asked[1]) in listed for name in names if name in registry)
                return _Probe(f"{'' if own else 'not the registry descriptions: '}lists {names}")
            result = scoped.run(_action(asked))
            _unchanged(exercise, registry, held, given, names, (extras, names, asked), scoped)
            if not isinstance(result, ToolResult):
                return _Probe("", f"run() returned {_kind(result)}: return a ToolResult")
            if asked[0] == "no name":  # run(None), or an Action with no name: an error, nothing run
                return _Probe(_nameless(result, _effects(shop, before, calls)))
            if asked[0] == "spaced":  # what the registry itself does with that name
                ran = registry.run(Action(asked[1], asked[2]))
                same = (result.text, result.error) == (ran.text, ran.error)
                return _Probe(f"{'it ran' if same else 'it did not run'} {asked[1].strip()} as the registry does")
            effects = _effects(shop, before, calls)
            refused = asked[0] == "refuse" or (asked[0] == "second" and asked[1].strip() not in names)
            if refused:
                refusal = _refusal(shared, extras, names, asked, result, effects)
                if asked[0] == "refuse" or refusal != _REFUSED:
                    return _Probe(refusal)
        if asked[0] == "run" or (asked[0] == "second" and not refused):
            return _Probe(_ran(shared, extras, asked, result, effects))
        missing = [name for name in names if not _mentions(result.text, name)]
        others = [name for name in registry.names if name not in names and name != asked[1].strip()
                  and _mentions(result.text, name)]
        if missing:
            return _Probe(f"the error does not name {', '.join(missing)}")
        if others:
            return _Probe(f"the error also names {', '.join(others)}, not allowed")
        return _Probe("names every tool allowed")

    return probe


def _action(asked: tuple) -> Action | None:
    """The Action a probe runs: ("no name",) is run(None); ("no name", name) an Action with that name, which is no
    tool's (None, "", spaces); any other, Action(tool, input)."""
    if asked[0] == "no name":
        return Action(asked[1], "88231") if len(asked) > 1 else None
    return Action(asked[1], asked[2])


def _nameless(result: ToolResult, effects: str) -> str:
    """How run(None), or an Action with no tool name, came back, in words (the reference's: the last one)."""
    if effects:
        return f"it ran a tool{effects}"
    if not result.error:
        return "error=False, its text an error" if _looks_like_error(result.text) else f"no error: {shown(result.text)}"
    if not _looks_like_error(result.text):
        return 'error=True, its text not {"error": ...}'
    return _REFUSED


# How a probe shows a ToolResult with error=True: its flag, then its text.
_FLAGGED = "error=True: "
_REFUSED = "an error Observation; nothing ran"


def _ran(shared: Shop, extras: tuple[str, ...], asked: tuple, result: ToolResult, effects: str) -> str:
    """How a call to a named tool came back, in words: its text (error=True before it), or, where only the flag
    differs from what the registry gives, that in a few words (the same long text twice cuts a failure's hint)."""
    if "closed database" in result.text:  # a tool of a registry from an earlier call: its shop is gone
        return f"error=True: a closed database{effects}"
    with _shop_for(shared, asked[1]) as shop:  # what the registry itself gives
        ran = _registry(shop, extras, []).run(Action(asked[1], asked[2]))
    if result.text == ran.text and result.error != ran.error:
        return f"same text, error={result.error}{effects}"
    return f"{_FLAGGED if result.error else ''}{result.text}{effects}"


def _kind(value: object) -> str:
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiouAEIOU' else 'a'} {name}"


def _unchanged(exercise: str, registry: ToolRegistry, held: list[tuple[str, int]], given: list[str],
               names: tuple[str, ...], args: tuple, scoped: object) -> None:
    """Fail at once when the answer changed the registry (it `held` those tools) or the names list it was given
    (`given`, a list of `names`); `args`: the probe's input, as the failure shows it; `scoped`: what scope returned
    (the registry itself, a copy.copy sharing its tools, or a registry of its own: the failure says which)."""
    where = _show_probe(args)
    if [(tool.name, id(tool)) for tool in registry] != held:
        if scoped is registry:
            how = "scope changed the registry it was given, and returned it: take no tool out of registry"
        elif getattr(scoped, "_tools", None) is getattr(registry, "_tools", ()):
            how = "scope changed the registry it was given: copy.copy shares its tool dict"
        else:
            how = "scope changed the registry it was given: leave it as it was"
        _fail(exercise, f"{how}; build a new ToolRegistry of registry.get(name) for each name.\nThe input: {where}\n"
                        f"It held {len(held)} tools; after it, {len(registry)}: {_brief(registry.names, 50)}")
    if given != list(names):
        _fail(exercise, "scope changed the names list it was given: read it, do not sort or change it (sorted(names) "
                        f"makes a new list).\nThe input: {where}\nIt left the names as {_brief(given, 60)}")


def _refusal(shared: Shop, extras: tuple[str, ...], names: tuple[str, ...], asked: tuple, result: ToolResult,
             effects: str) -> str:
    """How a call to a tool outside the names came back, in words (the reference's: the last one)."""
    with _shop_for(shared, asked[1]) as shop:  # what the tool gives when it does run
        registry = _registry(shop, extras, [])
        ran = registry.run(Action(asked[1], asked[2]))
    name = asked[1].strip()
    if effects or (result.text == ran.text and name in registry):
        return f"it ran {name}{effects}"
    if not result.error:
        return "error=False, its text an error" if _looks_like_error(result.text) else f"no error: {shown(result.text)}"
    if not _looks_like_error(result.text):
        return 'error=True, its text not {"error": ...}'
    # A name the registry does not hold ran nothing (no refund, no call recorded): the scope passed it on, and the
    # registry's own refusal offers every tool it holds, those outside the scope too. That is the fault to name.
    if result.text == ran.text and any(tool not in names and _mentions(result.text, tool) for tool in registry.names):
        return "an error offering other tools"
    return _REFUSED


def _mentions(text: str, tool: str) -> bool:
    """Whether `text` names `tool` as a word of its own (queryOrder is not named by queryOrderStatus)."""
    return re.search(rf"(?<![A-Za-z]){tool}(?![A-Za-z])", text) is not None


def _looks_like_error(text: str) -> bool:
    """The registry's own test for an error Observation: a JSON object with "error"."""
    try:
        return "error" in json.loads(text)
    except (ValueError, TypeError):
        return False


def _subset(rng: random.Random, tools: list[str], *, leave_out: bool) -> tuple[str, ...]:
    """Some of `tools` in a random order (the order `names` gives is the prompt's), at least one left out when
    `leave_out`."""
    size = rng.randint(1, len(tools) - 1 if leave_out else len(tools))
    return tuple(rng.sample(tools, size))


def _draw(rng: random.Random, *, leave_out: bool) -> tuple[tuple[str, ...], tuple[str, ...], list[str]]:
    extras = tuple(rng.sample(_EXTRA_TOOLS, rng.randint(0, 2)))
    tools = [*_SHOP_TOOLS, *extras]
    return extras, _subset(rng, tools, leave_out=leave_out), tools


def _named_runs(rng: random.Random) -> Iterator[tuple]:
    yield ((), SCOPE_ALLOWED, ("run", "queryOrder", "88231"))  # the lesson's own specialist
    for _ in range(14):
        extras, names, _ = _draw(rng, leave_out=False)
        tool = rng.choice(names)
        yield (extras, names, ("run", tool, _tool_input(rng, tool)))


def _other_tools(rng: random.Random) -> Iterator[tuple]:
    yield ((), SCOPE_ALLOWED, ("refuse", "applyRefund", '{"orderId": "88231", "reason": "it stopped charging"}'))
    # a name that begins with an allowed one is another tool
    yield (("queryOrderStatus",), SCOPE_ALLOWED, ("refuse", "queryOrderStatus", "88231"))
    for _ in range(12):
        extras, names, tools = _draw(rng, leave_out=True)
        tool = rng.choice([name for name in tools if name not in names])
        yield (extras, names, ("refuse", tool, _tool_input(rng, tool)))
    # the registry strips a tool's name, so spaces around it still name a tool outside the scope
    yield ((), SCOPE_ALLOWED, ("refuse", " applyRefund ", '{"orderId": "88231", "reason": "it stopped charging"}'))
    yield (("sendWechat",), ("sendWechat", "queryOrder"), ("refuse", "applyRefund\n", '{"orderId": "88232", "reason": "不想要了"}'))


def _error_names(rng: random.Random) -> Iterator[tuple]:
    for _ in range(8):
        extras, names, tools = _draw(rng, leave_out=True)
        tool = rng.choice([name for name in tools if name not in names])
        yield (extras, names, ("names", tool, _tool_input(rng, tool)))


# Names no registry here holds (beside the extra tools a drawn registry lacks): the scope refuses them as well.
_UNKNOWN_NAMES = ("cancelOrder", "query_order", "queryOrders", "refund", "查询订单", "weather")


def _unknown_names(rng: random.Random) -> Iterator[tuple]:
    """A name `registry` does not hold: its error offers the tools allowed and no other, as the registry's own
    unknown-tool error offers its tools (a scope that hands such a call on to `registry` offers them all)."""
    for _ in range(6):
        extras, names, _ = _draw(rng, leave_out=rng.random() < 0.8)
        unknown = rng.choice([*_UNKNOWN_NAMES, *(name for name in _EXTRA_TOOLS if name not in extras)])
        yield (extras, names, ("names", unknown, _tool_input(rng, "queryOrder")))


def _tool_lists(rng: random.Random) -> Iterator[tuple]:
    yield ((), SCOPE_ALLOWED, ("list", "en"))
    yield ((), tuple(reversed(SCOPE_ALLOWED)), ("list", "zh"))
    for _ in range(8):
        extras, names, _ = _draw(rng, leave_out=rng.random() < 0.8)
        yield (extras, names, ("list", rng.choice(("en", "zh", None))))


def _spaced_runs(rng: random.Random) -> Iterator[tuple]:
    yield ((), SCOPE_ALLOWED, ("spaced", " queryOrder", "88231"))  # the registry strips a tool's name
    yield (("getForecast",), ("getForecast", "queryOrder"), ("spaced", "getForecast ", "北京 明天"))
    # a tab or a line end around the name is stripped too, as str.strip() strips it
    yield ((), SCOPE_ALLOWED, ("spaced", "queryOrder\t", "88231"))


def _other_cases(rng: random.Random) -> Iterator[tuple]:
    """A name written in another case is another name, to the registry as to the scope: it runs nothing."""
    yield ((), SCOPE_ALLOWED, ("refuse", "queryorder", "88231"))
    yield (("getForecast",), ("getForecast", "queryOrder"), ("refuse", "GetForecast", "北京 明天"))


def _second_scopes(rng: random.Random) -> Iterator[tuple]:
    """Two scopes on one registry: the first must keep its own names once the second is built (a list kept on the
    class, shared by every scope, lets the last one built win). A tool named only in the first runs in it; any other
    is refused there, naming the first's tools."""
    yield ((), SCOPE_ALLOWED, ("second", "queryOrder", "88231", ("applyRefund", "searchKnowledge")))
    yield ((), SCOPE_ALLOWED, ("second", "applyRefund", '{"orderId": "88231", "reason": "不想要了"}', ("applyRefund",)))
    yield ((), SCOPE_ALLOWED, ("second", "searchKnowledge", "退货 政策", ("applyRefund",)))
    for _ in range(8):
        extras, names, tools = _draw(rng, leave_out=True)
        other = _subset(rng, [name for name in tools if name != names[0]], leave_out=False)
        only_first = [name for name in names if name not in other]  # names[0] at least
        outside = [name for name in tools if name not in names]
        tool = rng.choice(only_first if rng.random() < 0.6 else outside)
        yield (extras, names, ("second", tool, _tool_input(rng, tool), other))


def _no_names(rng: random.Random) -> Iterator[tuple]:
    """run(None), and Actions with no tool name (None, empty, spaces, a name that is no text): fixed inputs, nothing
    drawn from `rng`."""
    yield ((), SCOPE_ALLOWED, ("no name",))
    yield ((), SCOPE_ALLOWED, ("no name", None))
    yield ((), SCOPE_ALLOWED, ("no name", ""))
    yield (("getForecast",), ("getForecast", "queryOrder"), ("no name", "  "))
    yield ((), ("applyRefund",), ("no name",))
    # a number where the name belongs: registry.run checks the name is text, and says no name was found
    yield ((), SCOPE_ALLOWED, ("no name", 42))


def _nameless_hint(args: tuple, expected: _Probe, got: _Probe) -> str | None:
    if got.what.startswith("it ran"):
        return "A call with no tool name runs nothing."
    if got.what.startswith(("error=False", "no error")):
        return "It is an error: return ToolResult(error_observation(...), error=True), as registry.run(None) does."
    if got.what.startswith("error=True, its text"):
        return 'An error Observation is JSON {"error": ...}: build its text with error_observation(...).'
    return None


def _scope_hint(args: tuple, expected: _Probe, got: _Probe) -> str | None:
    name = args[2][1] if args[2][0] != "list" else ""
    if "a closed database" in got.what:
        return "It ran on a registry from an earlier call: build the scope anew each call (no cache)."
    if got.what.startswith("same text, error=False"):
        return ("Same text, but error=False: return registry.run(action) as it is (execute() and invoke() drop "
                "the flag).")
    if got.what.startswith("same text, error=True"):
        return "Same text, but error=True: return registry.run(action) as it is."
    if args[2][0] == "second":
        return "Each scope keeps its own names: a second scope changed the first."
    if got.what.startswith("an error offering"):
        return ("Nothing ran, but the registry's own error (unknown tool) offers all its tools: name only those in "
                "names.")
    if got.what.startswith("error=False, its text"):
        return "Its text is an error, but its ToolResult has error=False: return ToolResult(text, error=True)."
    if got.what.startswith("error=True, its text"):
        return 'An error Observation is JSON {"error": ...}: build its text with error_observation(...).'
    if got.what.startswith(("it ran", "no error")) and name.strip() not in args[1] and name.strip().lower() in {
            allowed.lower() for allowed in args[1]}:
        return f"Names are compared as written: {shown(name.strip())} is no tool; the registry refuses it too."
    if got.what.startswith("it ran") and name != name.strip():
        return f"A tool outside the names must never run: the registry strips {shown(name)} to {name.strip()}."
    if got.what.startswith("it ran"):
        return "A tool outside the names must never run."
    if got.what.startswith("the error also names"):
        return "Name only the tools in names: a tool it may not call is no choice for the model."
    if got.what.startswith("the error does not name") and name.strip() not in (*_SHOP_TOOLS, *args[0]):
        return f"{name.strip()} is no tool of the registry: its error names the tools allowed too."
    if got.what.startswith("not the registry"):
        return "Hold the registry's own tools (registry.get(name)): they keep their zh descriptions."
    if name.strip(" ") != name.strip():
        return f"The registry strips {shown(name)} to {name.strip()}: strip(), not strip(' ')."
    if name != name.strip():
        return f"The registry strips {shown(name)} to {name.strip()}: strip the name before you compare."
    return None


SCOPE_RULES = (
    Rule("the named tools run as they do in `registry` (the same Observation, the same effect)",
         _named_runs, _scope_hint),
    Rule("a call to any other tool must not run it: it comes back as an error Observation",
         _other_tools, _scope_hint),
    Rule("that error names the tools that are allowed, and no other, so the model can pick one", _error_names,
         _scope_hint),
    Rule("the tool list it builds for the prompt shows only the named tools, in the order `names` gives them",
         _tool_lists, _scope_hint),
    Rule("a named tool runs with spaces around its name too, as in `registry`",
         _spaced_runs, _scope_hint),
    Rule("a name in another case is another name: queryorder runs nothing", _other_cases, _scope_hint),
    Rule("a name `registry` does not hold at all gets such an error too", _unknown_names, _scope_hint),
    Rule("a scope keeps its names when another is built after it", _second_scopes, _scope_hint),
    Rule("run never raises, as in `registry`: run(None), or an Action with no tool name (or a name that is no text: "
         "42), comes back as an error Observation", _no_names, _nameless_hint),
)


def _show_probe(args: tuple) -> str:
    extras, names, asked = args
    held = f"shop + {', '.join(extras)}" if extras else "shop"
    if asked[0] == "no name":
        doing = f"run(Action({asked[1]!r}, '88231'))" if len(asked) > 1 else "run(None)"
        return f"scope(<{held}>, {_names_shown(names, '')}), then {doing}"
    name = asked[1] if asked[0] == "list" or asked[1] == asked[1].strip() else repr(asked[1])
    doing = f"build_tool_list({shown(asked[1])})" if asked[0] == "list" else f"run {name} {_brief(asked[2], 40)}"
    first = f"scope(<{held}>, {_names_shown(names, asked[1] if asked[0] != 'list' else '')})"
    if asked[0] == "second":
        return f"{first}, then scope(<same>, {_names_shown(asked[3], '')}), then in the first {doing}"
    return f"{first}, then {doing}"


def _names_shown(names: tuple[str, ...], tool: str) -> str:
    """`names` as a failure shows them: whole when short, else how many, the first two and `tool` if named (a
    failure longer than a few lines is cut, its hint lost)."""
    if len(names) < 4:
        return str(list(names))
    kept = [name if n < 2 or name == tool.strip() else "…" for n, name in enumerate(names)]
    kept = [name for n, name in enumerate(kept) if name != "…" or n == 0 or kept[n - 1] != "…"]
    return f"[{len(names)} names: {', '.join(kept)}]"


@grades("Exercise 1", spec=Spec(SCOPE_RULES))
def check_scoped_registry(scope: Callable[[ToolRegistry, list[str]], ToolRegistry] | None) -> None:
    """21, exercise 1: scope(registry, names) -> a registry that runs only those tools."""
    exercise = "Exercise 1"
    if scope is None:
        return _not_attempted(exercise, "Write def scope(registry, names) in the cell above.")
    if not callable(scope):
        _fail(exercise, f"scope should be a function, got {type(scope).__name__}")
    with Shop(":memory:", clock=fixed_clock(COURSE_NOW)) as shop:  # the lesson's own specialist, first
        scoped = _run(exercise, "scope(registry, ['queryOrder', 'queryLogistics'])", scope,
                      _registry(shop, (), []), list(SCOPE_ALLOWED))
        if not isinstance(scoped, ToolRegistry):
            _fail(exercise, f"scope returned {type(scoped).__name__}: return a ToolRegistry, so an agent can use it")
    with Shop(":memory:", clock=fixed_clock(COURSE_NOW)) as mine, \
            Shop(":memory:", clock=fixed_clock(COURSE_NOW)) as reference:
        tried = agree_on(exercise, "check_scoped_registry", SCOPE_RULES, _prober(scope, mine, exercise),
                         _prober(_reference_scope, reference, exercise), shape=lambda probe: probe.problem,
                         read=lambda probe: probe.what, call="scope(registry, names)", show=_show_probe)
    return _passed(exercise, f"{tried} generated scopes tried: the named tools run as in the registry, any other "
                             "comes back as an error naming the tools allowed and runs nothing, and the prompt "
                             "lists only the named tools, in their order.")


RAIN_WORDS = ("rain", "shower", "storm", "drizzle", "雨")


def _reference_rains_during(meeting: dict, forecast: dict) -> bool:
    """21, exercise 2's answer (the solution's): rain in an hour from the start hour up to the end, the end hour
    only when the meeting runs into it."""
    start, end = int(meeting["start"][:2]), int(meeting["end"][:2])
    if meeting["end"][3:5] != "00":
        end += 1  # the meeting runs into its end hour
    for hour in forecast["hours"]:
        if start <= int(hour["hour"][:2]) < end and _rainy(hour):
            return True
    return False


def _rainy(hour: dict) -> bool:
    said = f"{hour.get('condition', '')} {hour.get('condition_zh', '')}".lower()
    return any(word in said for word in RAIN_WORDS)


def _hours(*rainy: str, zh_only: bool = False) -> dict:
    hours = []
    for hour in range(8, 22):
        name = f"{hour:02d}:00"
        wet = name in rainy
        hours.append({"hour": name, "condition": "" if zh_only and wet else ("thundershowers" if wet else "cloudy"),
                      "condition_zh": "雷阵雨" if wet else "多云"})
    return {"hours": hours}


# The lesson's own meetings (meeting, forecast, what the case is about): tried first, each with its rule.
RAIN_CASES = (
    ({"start": "15:00", "end": "16:30"}, _hours("15:00", "16:00"), "rain at 15:00 and 16:00, meeting 15:00-16:30"),
    ({"start": "09:00", "end": "10:00"}, _hours("15:00", "16:00"), "rain only in the afternoon, meeting 09:00-10:00"),
    ({"start": "15:00", "end": "16:00"}, _hours("16:00"), "rain at 16:00, meeting 15:00-16:00 (it ends as the rain starts)"),
    ({"start": "15:00", "end": "16:30"}, _hours("16:00"), "rain at 16:00, meeting 15:00-16:30 (it runs into that hour)"),
    ({"start": "15:00", "end": "17:00"}, _hours("14:00"), "rain at 14:00, meeting from 15:00 (the rain is over)"),
    ({"start": "10:00", "end": "11:00"}, _hours("10:00", zh_only=True), "rain at 10:00 said only in Chinese (雷阵雨)"),
    ({"start": "18:00", "end": "19:00"}, {"hours": [{"hour": "18:00", "condition": "light drizzle",
                                                     "condition_zh": "毛毛雨"}]}, "a drizzle at 18:00"),
)


# -- exercise 2's inputs, drawn from its spec ------------------------------------------------------
# (condition, condition_zh) as getForecast gives them: dry ones, and rain in each word of the spec.
_PLAIN_WET = (("light rain", "小雨"), ("moderate rain", "中雨"), ("heavy rain", "大雨"))  # rain in both languages
_DRY = (("cloudy", "多云"), ("sunny", "晴"), ("overcast", "阴"), ("fog", "雾"), ("light snow", "小雪"),
        ("windy", "大风"), ("clear", "晴朗"))
_WET = (("light rain", "小雨"), ("thundershowers", "雷阵雨"), ("showers", "阵雨"), ("drizzle", "毛毛雨"),
        ("thunderstorms", "雷暴雨"), ("moderate rain", "中雨"), ("heavy rain", "大雨"), ("sleet", "雨夹雪"),
        ("rain showers", "阵雨"), ("storm", "暴风雨"))


def _time(hour: int, minute: int = 0) -> str:
    return f"{hour:02d}:{minute:02d}"


def _forecast(rng: random.Random, rainy: set[int], *, first: int = 8, last: int = 21) -> dict:
    """A forecast from `first` to `last` o'clock: plain rain in the `rainy` hours, said in both languages (the
    words and the languages are the last rule's), dry elsewhere."""
    hours = []
    for hour in range(first, last + 1):
        english, chinese = rng.choice(_PLAIN_WET if hour in rainy else _DRY)
        hours.append({"hour": _time(hour), "condition": english, "condition_zh": chinese,
                      "rain_chance_pct": rng.choice((80, 90)) if hour in rainy else rng.choice((0, 10, 20))})
    return {"hours": hours}


def _meeting(rng: random.Random, start: int, end: int, *, start_minute: int | None = None,
             end_minute: int | None = None) -> dict:
    start_minute = rng.choice((0, 15, 30, 45)) if start_minute is None else start_minute
    end_minute = rng.choice((0, 5, 30, 45)) if end_minute is None else end_minute
    return {"start": _time(start, start_minute), "end": _time(end, end_minute)}


def _lesson_meetings(*which: int) -> Iterator[tuple]:
    return ((dict(RAIN_CASES[n][0]), RAIN_CASES[n][1]) for n in which)


def _said_plainly(inputs: Callable[[random.Random], Iterable[tuple]]) -> Callable[[random.Random], Iterator[tuple]]:
    """`inputs` with each hour said plainly, rain/雨 where it rains and sunny/晴 where it does not. The rules about
    hours come before the rule about words: a word read wrong (thundershowers missed, cloudy taken for rain) must
    fail on that rule's inputs, with its hint, not on theirs."""

    def plain(rng: random.Random) -> Iterator[tuple]:
        for meeting, forecast in inputs(rng):
            yield meeting, {"hours": [{**hour, **(_PLAIN_RAIN if _rainy(hour) else _PLAIN_DRY)}
                                      for hour in forecast["hours"]]}

    return plain


_PLAIN_RAIN = {"condition": "rain", "condition_zh": "雨"}
_PLAIN_DRY = {"condition": "sunny", "condition_zh": "晴"}


def _start_hours(rng: random.Random) -> Iterator[tuple]:
    yield from _lesson_meetings(0)
    for _ in range(10):  # rain in the start hour of a meeting that starts after the hour (15:30 is in 15:00)
        start = rng.randint(7, 20)
        meeting = _meeting(rng, start, rng.randint(start + 1, 22), start_minute=rng.choice((0, 10, 30, 45)))
        yield (meeting, _forecast(rng, {start}, first=6, last=23))
    for _ in range(8):  # rain in one hour in the middle of a long meeting, across 9 and 10 o'clock too
        start = rng.randint(7, 16)
        end = rng.randint(start + 3, 22)
        yield (_meeting(rng, start, end), _forecast(rng, {rng.randint(start + 1, end - 1)}, first=6, last=23))


def _late_starts(rng: random.Random) -> Iterator[tuple]:
    """A start late in its hour, and a meeting inside one hour: the start hour still counts."""
    yield ({"start": "15:50", "end": "16:30"}, _hours("15:00"))
    yield ({"start": "15:10", "end": "15:50"}, _hours("15:00"))


def _end_hours(rng: random.Random) -> Iterator[tuple]:
    yield from _lesson_meetings(2, 3)
    for _ in range(12):  # rain in the end hour only: it counts when the meeting runs into it
        end = rng.randint(9, 22)
        start = rng.randint(max(6, end - 4), end - 1)
        meeting = _meeting(rng, start, end, end_minute=rng.choice((0, 0, 1, 15, 30, 59)))
        yield (meeting, _forecast(rng, {end}, first=6, last=23))


def _outside(rng: random.Random) -> Iterator[tuple]:
    yield from _lesson_meetings(1, 4)
    for _ in range(10):  # rain before the start, or after the end, only
        start = rng.randint(8, 19)
        end = rng.randint(start + 1, min(start + 3, 21))
        meeting = _meeting(rng, start, end, end_minute=0)
        before = set(range(6, start)) if rng.random() < 0.5 else {start - 1}
        after = set(range(end, 24)) if rng.random() < 0.5 else {end}
        yield (meeting, _forecast(rng, rng.choice((before, after, before | after)), first=6, last=23))
    yield ({"start": "10:00", "end": "11:30"}, {"hours": []})  # no forecast at all
    # a meeting that runs into its end hour, and rain only in the hour after that one
    yield ({"start": "15:00", "end": "16:30"}, _hours("17:00"))
    yield ({"start": "09:15", "end": "10:45"}, _hours("11:00", "12:00"))


def _rain_words(rng: random.Random) -> Iterator[tuple]:
    yield from _lesson_meetings(5, 6)
    for english, chinese in _WET:  # each kind of rain, said in English, in Chinese or in both
        start = rng.randint(8, 18)
        meeting = _meeting(rng, start, start + rng.randint(1, 3))
        said = rng.choice(("both", "zh", "en"))
        if said == "en" and not any(word in english for word in RAIN_WORDS):
            said = "both"  # sleet is rain only in its Chinese
        forecast = _forecast(rng, set())
        wet = next(hour for hour in forecast["hours"] if hour["hour"] == _time(start))
        wet.update(condition=english if said != "zh" else "", condition_zh=chinese if said != "en" else "")
        yield (meeting, forecast)
    for _ in range(4):  # no rain word in either language all day
        start = rng.randint(8, 18)
        yield (_meeting(rng, start, start + rng.randint(1, 3)), _forecast(rng, set()))
    for english in ("light rain", "showers", "thunderstorms", "drizzle"):  # each word alone decides, no 雨 beside it
        hours = [{"hour": "14:00", "condition": "cloudy", "condition_zh": "多云"},
                 {"hour": "15:00", "condition": english, "condition_zh": ""},
                 {"hour": "16:00", "condition": "cloudy", "condition_zh": "多云"}]
        yield ({"start": "15:00", "end": "16:00"}, {"hours": hours})
    # a high rain_chance_pct is not rain: only the condition's words are
    hours = [{"hour": "15:00", "condition": "overcast", "condition_zh": "阴", "rain_chance_pct": 70},
             {"hour": "16:00", "condition": "cloudy", "condition_zh": "多云", "rain_chance_pct": 60}]
    yield ({"start": "15:00", "end": "16:30"}, {"hours": hours})
    # shower as the spec writes it, singular: a shower is rain as showers are (English alone decides)
    hours = [{"hour": "10:00", "condition": "cloudy", "condition_zh": "多云"},
             {"hour": "11:00", "condition": "a passing shower", "condition_zh": ""}]
    yield ({"start": "10:30", "end": "11:30"}, {"hours": hours})
    # the English alone decides when the Chinese has no 雨 (a thunderstorm is 雷暴): both fields are read
    hours = [{"hour": "14:00", "condition": "thunderstorm", "condition_zh": "雷暴"},
             {"hour": "15:00", "condition": "cloudy", "condition_zh": "多云"}]
    yield ({"start": "14:00", "end": "15:00"}, {"hours": hours})


def _cases(rng: random.Random) -> Iterator[tuple]:
    """A condition written with capitals (Heavy Rain), its Chinese left out so the English alone decides."""
    yield ({"start": "15:00", "end": "16:00"}, {"hours": [{"hour": "15:00", "condition": "Heavy Rain",
                                                          "condition_zh": ""}]})
    for english in ("Thundershowers", "Light Drizzle", "RAIN", "Storm"):
        start = rng.randint(8, 18)
        forecast = _forecast(rng, set())
        wet = next(hour for hour in forecast["hours"] if hour["hour"] == _time(start))
        wet.update(condition=english, condition_zh="")
        yield (_meeting(rng, start, start + rng.randint(1, 3)), forecast)
    yield ({"start": "09:00", "end": "10:00"}, {"hours": [{"hour": "09:00", "condition": "Light Snow",
                                                          "condition_zh": "小雪"}]})


def _start_hint(args: tuple, expected: bool, got: object) -> str | None:
    start, end = args[0]["start"], args[0]["end"]
    if expected is True and got is False and (start[:2] == end[:2] or start[3:5] >= "50"):
        return f"{start}–{end} has the {start[:2]}:00 hour, however late in it the meeting starts."
    return _dry_hint(args, expected, got)


def _rain_hint(args: tuple, expected: bool, got: object) -> str | None:
    if expected is True and got is False:
        said = [hour.get("condition", "").lower() for hour in _covered(*args) if _rainy(hour)]
        singular = next((f" ({condition!r} holds shower, not showers)" for condition in said
                         if "shower" in condition and "showers" not in condition), "")
        inside = next((f" ({condition!r} holds {word}, inside a longer word)" for condition in said
                       for word in RAIN_WORDS[:-1] if re.search(rf"[a-z]{word}|{word}[a-z]", condition)), "")
        return f"Each word alone is rain: rain, shower, storm or drizzle in condition, 雨 in condition_zh{singular or inside}."
    if expected is False and got is True and any(h.get("rain_chance_pct", 0) >= 50
                                                 for h in args[1]["hours"]):
        # the same True from an answer that reads the chance and from one that takes a dry word for rain: name both
        dry = " and ".join(f"{h.get('condition', '')}/{h.get('condition_zh', '')}" for h in _covered(*args))
        return f"Rain is in the condition's words, not in rain_chance_pct{f', and {dry} say none' if dry else ''}."
    return _dry_hint(args, expected, got)


def _covered(meeting: dict, forecast: dict) -> list[dict]:
    """The hours of `forecast` the meeting covers, as the reference counts them."""
    start, end = int(meeting["start"][:2]), int(meeting["end"][:2]) + (meeting["end"][3:5] != "00")
    return [hour for hour in forecast["hours"] if start <= int(hour["hour"][:2]) < end]


def _dry_hint(args: tuple, expected: bool, got: object) -> str | None:
    """True where no hour of the meeting has rain: the dry condition it took for rain, named (snow first, the one
    most taken for rain). Not said when rain outside the meeting may be what it counted."""
    if not (expected is False and got is True):
        return None
    dry = [hour for hour in _covered(*args) if not _rainy(hour)]
    snowy = [hour for hour in dry if "snow" in hour.get("condition", "").lower() or "雪" in hour.get("condition_zh", "")]
    if not snowy and (not dry or any(_rainy(hour) for hour in args[1]["hours"])):
        return None
    hour = (snowy or dry)[0]
    return (f"{hour.get('condition', '')}/{hour.get('condition_zh', '')} is not rain: only "
            f"{', '.join(RAIN_WORDS[:-1])} or {RAIN_WORDS[-1]}.")


def _case_hint(args: tuple, expected: bool, got: object) -> str | None:
    if expected is True and got is False:
        hour = next(hour for hour in _covered(*args) if _rainy(hour))
        return f"Case does not matter: {hour['condition']!r} is rain (lower-case the condition before you look)."
    return _dry_hint(args, expected, got)


RAIN_RULES = (
    Rule("an hour counts from the meeting's start hour (a meeting from 15:30 has the 15:00 hour) up to its end",
         _said_plainly(_start_hours), _dry_hint),
    Rule("the hour the meeting ends in counts only if the meeting runs into it (15:00–16:00 does not include "
         "16:00; 15:00–16:30 does)", _said_plainly(_end_hours), _dry_hint),
    Rule("rain before the start does not count (nor after the end)", _said_plainly(_outside), _dry_hint),
    Rule("rain is a condition with rain, shower, storm or drizzle in it, or 雨 in `condition_zh`", _rain_words,
         _rain_hint),
    Rule("the start hour counts however late the meeting starts in it (15:50–16:30 and 15:10–15:50 "
         "have 15:00)",
         _late_starts, _start_hint),
    Rule("the case of a condition does not matter: Heavy Rain is rain", _cases, _case_hint),
)


def _a_bool(value: object) -> str | None:
    return None if isinstance(value, bool) else f"it returned {_brief(value, 30)}: return True or False"


def _show_meeting(args: tuple) -> str:
    meeting, forecast = args
    wet = [f"{h['hour']} {h.get('condition', '')}/{h.get('condition_zh', '')}" for h in forecast["hours"] if _rainy(h)]
    if not forecast["hours"]:
        return f"meeting {meeting['start']}–{meeting['end']}, a forecast with no hours in it"
    return f"meeting {meeting['start']}–{meeting['end']}, " + (f"rain at {', '.join(wet)}" if wet else
                                                            "no rain at any hour of the forecast")


@grades("Exercise 2", spec=Spec(RAIN_RULES))
def check_rains_during(rains_during: Callable[[dict, dict], bool] | None) -> None:
    """21, exercise 2: rains_during(meeting, forecast) -> True when an hour of the meeting has rain."""
    exercise = "Exercise 2"
    if rains_during is None:
        return _not_attempted(exercise, "Write def rains_during(meeting, forecast) in the cell above.")
    if not callable(rains_during):
        _fail(exercise, f"rains_during should be a function, got {type(rains_during).__name__}")
    tried = agree_on(exercise, "check_rains_during", RAIN_RULES, rains_during, _reference_rains_during,
                     shape=_a_bool, call="rains_during(meeting, forecast)", show=_show_meeting)
    return _passed(exercise, f"{tried} generated meetings judged: only the hours the meeting covers count, from its "
                             "start hour, and rain in either language.")
