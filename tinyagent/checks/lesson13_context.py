"""Lesson 13 (context engineering): fold a parcel's Observation, trim a request to a budget."""

from __future__ import annotations

import json
from collections.abc import Callable

from tinyagent.checks.reporting import (
    _brief,
    _fail,
    _fresh_shop,
    _json,
    _not_attempted,
    _passed,
    _run,
    grades,
)
from tinyagent.errors import ContextBudgetError
from tinyagent.memory.context_budget import request_tokens
from tinyagent.shop import shop_registry
from tinyagent.tools import Action


def _parcel(tracking_no: str, traces: list[tuple[str, str]], carrier: str = "顺丰速运", status: str = "运输中") -> str:
    """A queryLogistics Observation in the shop's own shape."""
    return json.dumps({"trackingNo": tracking_no, "carrier": carrier, "status": status,
                       "traces": [{"time": t, "desc": d} for t, d in traces]}, ensure_ascii=False, separators=(",", ":"))


def _logistics_cases() -> list[tuple[str, str]]:
    """(Observation, what it is): the shop's real results, then parcels whose traces come in other orders."""
    tools = shop_registry(_fresh_shop())
    real = [(tools.execute(Action("queryLogistics", number)), f"the shop's queryLogistics({number})")
            for number in ("YT2468013579", "SF1234567890")]
    traces = [("2026-06-28 16:40:00", "快件已揽收"), ("2026-06-29 08:15:00", "快件到达杭州转运中心"),
              ("2026-06-29 21:30:00", "快件已从杭州转运中心发出"), ("2026-06-30 07:50:00", "快件到达上海转运中心")]
    return [
        *real,
        (_parcel("ZT1029384756", traces[::-1], "中通快递"), "a parcel whose carrier lists the newest trace first"),
        (_parcel("JD5647382910", [traces[2], traces[0], traces[3], traces[1]], "京东物流"),
         "a parcel whose traces come in no order"),
        (_parcel("SF5550001112", [], status="已发货"), "a parcel with no trace yet"),
        (tools.execute(Action("queryLogistics", "SF0000000000")), "an error Observation (no such parcel)"),
    ]


def _expected_parcel_fold(text: str) -> dict | None:
    data = json.loads(text)
    if "error" in data:
        return None
    traces = data["traces"]
    latest = max(traces, key=lambda trace: trace["time"]) if traces else None
    return {"trackingNo": data["trackingNo"], "carrier": data["carrier"], "status": data["status"],
            "latest": latest, "traces": len(traces)}


@grades("Exercise 1")
def check_fold_logistics(fold_logistics: Callable[[str], str] | None) -> None:
    """13, exercise 1: a fold that knows its tool: a parcel's facts and its newest trace, and how many traces."""
    exercise = "Exercise 1"
    if fold_logistics is None:
        return _not_attempted(exercise, "Write def fold_logistics(text) in the cell above.")
    if not callable(fold_logistics):
        _fail(exercise, f"fold_logistics should be a function, got {type(fold_logistics).__name__}")
    cases = _logistics_cases()
    for text, what in cases:
        folded = _run(exercise, f"fold_logistics on {what}", fold_logistics, text)
        expected = _expected_parcel_fold(text)
        if expected is None:
            if folded != text:
                _fail(exercise, f"on {what} it returned {folded!r}; an error comes back unchanged, every word of it: "
                                f"it is what the model must read to tell the customer. Expected {text!r}")
            continue
        got = _json(exercise, folded, f"fold_logistics on {what}")
        if not isinstance(got, dict) or set(got) != set(expected):
            keys = sorted(got) if isinstance(got, dict) else type(got).__name__
            _fail(exercise, f"on {what} the fold has the keys {keys}; expected {sorted(expected)}")
        for key in ("trackingNo", "carrier", "status", "traces"):
            if got[key] != expected[key]:
                _fail(exercise, f"on {what}, {key} is {got[key]!r}, expected {expected[key]!r}"
                      + (" (how many traces the parcel has)" if key == "traces" else ""))
        if got["latest"] != expected["latest"]:
            hint = (" A parcel with no trace has latest = null (None)." if expected["latest"] is None else
                    " The newest trace is the one with the latest time, wherever it is in the list.")
            _fail(exercise, f"on {what}, latest is {got['latest']!r}, expected {expected['latest']!r}.{hint}")
        if expected["traces"] >= 3 and len(folded) >= len(text):
            _fail(exercise, f"on {what} the fold ({len(folded)} characters) is not shorter than the Observation "
                            f"({len(text)}): write compact JSON")
        compact = json.dumps(got, ensure_ascii=False, separators=(",", ":"))
        if folded != compact:
            slip = ("Chinese is written as \\u escapes: ensure_ascii=False keeps it readable (and shorter)"
                    if "\\u" in folded else "it has spaces after , or : — separators=(\",\", \":\") leaves them out")
            _fail(exercise, f"on {what} the fold is not the compact JSON asked for: {slip}. It begins "
                            f"{_brief(folded[:40])}")
    return _passed(exercise, f"{len(cases)} Observations: the parcel's ids, its newest trace by time and the count "
                             "kept, the rest dropped; an error passed on word for word.")


def _turn(request: str, *steps: tuple[str, str], answer: str) -> list[dict]:
    """One turn of a text-ReAct conversation: the request, (Action, Observation) steps, the answer."""
    messages = [{"role": "user", "content": request}]
    for action, observation in steps:
        messages.append({"role": "assistant", "content": f"Thought: I look it up.\n{action}"})
        messages.append({"role": "user", "content": f"Observation: {observation}"})
    messages.append({"role": "assistant", "content": f"Thought: I can answer.\nFinal Answer: {answer}"})
    return messages


def _trim_conversation() -> tuple[dict, list[list[dict]], dict]:
    tools = shop_registry(_fresh_shop())

    def observe(name: str, tool_input: str) -> tuple[str, str]:
        return f"Action: {name}\nAction Input: {tool_input}", tools.execute(Action(name, tool_input))

    system = {"role": "system", "content": "You are Bit Mall's assistant. Tools: 1. queryOrder 2. queryLogistics "
                                           "3. searchKnowledge 4. getCurrentTime"}
    turns = [
        _turn("Where is order 88232?", observe("queryOrder", "88232"), observe("queryLogistics", "YT2468013579"),
              answer="It reached the Shanghai hub at 07:50 today (YT2468013579)."),
        _turn("Thanks!", answer="You're welcome!"),
        _turn("What are the return rules?", observe("searchKnowledge", "退货 政策"),
              answer="Within 7 days of signing, for any reason; within 15 days for a fault."),
        _turn("What time is it?", observe("getCurrentTime", ""), answer="19:05 on Tuesday, 30 June 2026."),
    ]
    request = {"role": "user", "content": "And order 88234, has it arrived?"}
    return system, turns, request


def _trimmed(system: dict, turns: list[list[dict]], request: dict, budget: int) -> list[dict] | None:
    """The answer: the most recent whole turns that fit with the system prompt and the request, or None."""
    for start in range(len(turns) + 1):
        messages = [system, *(m for turn in turns[start:] for m in turn), request]
        if request_tokens(messages) <= budget:
            return messages
    return None


@grades("Exercise 2")
def check_trim_to_budget(trim_to_budget: Callable[[list[dict], int], list[dict]] | None) -> None:
    """13, exercise 2: drop whole turns, oldest first, until the request fits; raise when nothing fits."""
    exercise = "Exercise 2"
    if trim_to_budget is None:
        return _not_attempted(exercise, "Write def trim_to_budget(messages, budget) in the cell above.")
    if not callable(trim_to_budget):
        _fail(exercise, f"trim_to_budget should be a function, got {type(trim_to_budget).__name__}")
    system, turns, request = _trim_conversation()
    whole = [system, *(m for turn in turns for m in turn), request]
    smallest = request_tokens([system, request])
    sizes = [request_tokens([system, *(m for turn in turns[k:] for m in turn), request]) for k in range(len(turns))]
    # Each size itself (it fits: nothing more may go) and one token under it (one more turn must go).
    budgets = [sizes[0] + 50, *(b for size in sizes for b in (size, size - 1)), smallest]
    for budget in budgets:
        given = json.loads(json.dumps(whole))
        got = _run(exercise, f"trim_to_budget(messages, {budget})", trim_to_budget, given, budget)
        if given != whole:
            _fail(exercise, "trim_to_budget changed the list it was given: build a new list (the agent's own "
                            "conversation must stay whole; only what is sent is trimmed)")
        if not isinstance(got, list):
            _fail(exercise, f"trim_to_budget returned {type(got).__name__}, expected a list of messages")
        if got is given:
            _fail(exercise, "trim_to_budget returned the very list it was given: return a new list, so that what is "
                            "sent can change without changing the agent's own conversation")
        expected = _trimmed(system, turns, request, budget)
        where = f"with a budget of {budget} tokens (the whole conversation is {sizes[0]})"
        if not got or got[0] != system:
            _fail(exercise, f"{where} the system prompt must stay first: it holds the tools and the format")
        if got[-1] != request:
            _fail(exercise, f"{where} the current request must stay last: it is what the model answers")
        tokens = request_tokens(got)
        if tokens > budget:
            _fail(exercise, f"{where} it returned {tokens} tokens, over the budget (count with request_tokens)")
        kept = got[1:-1]
        observations = [i for i, m in enumerate(kept) if m["content"].startswith("Observation:")]
        if any(i == 0 or "Action:" not in kept[i - 1]["content"] for i in observations) or (
                kept and kept[0]["content"].startswith(("Thought:", "Observation:"))):
            _fail(exercise, f"{where} it split a turn: an Observation without the Action it answers, or a turn "
                            "without its request. Drop whole turns (a turn starts at a user request)")
        if got != expected:
            dropped = len(turns) - sum(1 for turn in turns if turn[0] in kept)
            _fail(exercise, f"{where} it kept {len(kept)} messages ({dropped} turns dropped); expected "
                            f"{len(expected) - 2} messages: the newest turns that fit, oldest dropped first, and no "
                            "more dropped than needed")
    try:
        got = trim_to_budget(json.loads(json.dumps(whole)), smallest - 1)
    except ContextBudgetError:
        pass
    except Exception as exc:  # noqa: BLE001 - the learner's exception, named in the failure
        _fail(exercise, f"with a budget of {smallest - 1} (less than the system prompt and the request) it raised "
                        f"{type(exc).__name__}: {exc}; raise ContextBudgetError (from tinyagent.errors) instead")
    else:
        _fail(exercise, f"with a budget of {smallest - 1}, less than the system prompt and the request alone "
                        f"({smallest}), it returned {request_tokens(got) if isinstance(got, list) else got!r} "
                        "tokens: raise ContextBudgetError, never send a request over the budget")
    return _passed(exercise, f"{len(budgets)} budgets: whole turns dropped, oldest first, no more than needed; the "
                             "system prompt and the request kept; an impossible budget refused.")
