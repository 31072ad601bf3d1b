"""Checks that a lesson runs: the learner's exercise answers graded, classroom-only checks explained.

Each exercise in a lesson leaves a named place for the answer (`predicted_tools = None`, or a class the
learner writes), then one visible cell calls a check from this module on it:

    check_parcel_prediction(predicted_tools)

A check prints "not attempted yet" while the answer is still None (so a lesson runs top to bottom
untouched), prints "passed" with the reason when the answer is right, and raises `ExerciseFailed` (an
`AssertionError`) saying what is wrong when it is not. It returns nothing, so a check cell shows only that line. Checks grade the learner's own answer (their
prediction, their function, their class) on inputs chosen here, never the path a model happened to
take, so they hold on any model. The solutions notebooks (`notebooks/solutions/`) pass the same checks.

`classroom_only(settings, why)` guards the asserts that only hold for the scripted classroom model:
on a real model it prints "skipped on a real model: <why>" instead of skipping in silence.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from .clock import fixed_clock
from .errors import LlmError
from .llm_client import ChatResult
from .parser import parse_step
from .tools import Action, Tool

# The course's "today" (lesson 00): every check builds its shop with this clock.
COURSE_NOW = "2026-06-30T19:05:23"


class ExerciseFailed(AssertionError):
    """The learner's answer is wrong; the message says what was expected and what came back."""


def classroom_only(settings: Any, why: str) -> bool:
    """True on the classroom model. On a real model, say which check is skipped and why, and return False.

    Use it as `if classroom_only(settings, "a real model words its replies its own way"):`."""
    if settings.offline:
        return True
    print(f"skipped on a real model: {why}")
    return False


# -- how every check reports ---------------------------------------------------------------------
def _not_attempted(exercise: str, hint: str) -> None:
    print(f"{exercise}: not attempted yet. {hint}")


def _passed(exercise: str, why: str) -> None:
    print(f"{exercise}: passed. {why}")


def _fail(exercise: str, what: str) -> None:
    raise ExerciseFailed(f"{exercise}: {what}")


def _run(exercise: str, what: str, function: Callable, *args: Any, **kwargs: Any) -> Any:
    """Call the learner's code; an exception in it becomes a failure that names the call."""
    try:
        return function(*args, **kwargs)
    except ExerciseFailed:
        raise
    except Exception as exc:  # noqa: BLE001 - the learner's bug, reported as the check's failure
        _fail(exercise, f"{what} raised {type(exc).__name__}: {exc}")


def _fresh_shop():
    from .shop import Shop

    return Shop(":memory:", clock=fixed_clock(COURSE_NOW))


def _instance(exercise: str, cls: Any, *args: Any, **kwargs: Any) -> Any:
    if not isinstance(cls, type):
        _fail(exercise, f"expected a class, got {type(cls).__name__}: write `class ...:` in the answer cell")
    return _run(exercise, f"{cls.__name__}({', '.join(map(repr, args))})", cls, *args, **kwargs)


def _json(exercise: str, text: Any, where: str) -> Any:
    if not isinstance(text, str):
        _fail(exercise, f"{where} returned {type(text).__name__}, not a string: a tool returns text")
    try:
        return json.loads(text)
    except ValueError:
        _fail(exercise, f"{where} returned text that is not JSON: {text[:120]!r}")


# -- 00 · Welcome ---------------------------------------------------------------------------------
def check_parcel_prediction(predicted_tools: list[str] | None) -> None:
    """00, exercise 1: the tools the parcel question needs, in order."""
    exercise = "Exercise 1"
    if predicted_tools is None:
        return _not_attempted(exercise, 'Set predicted_tools to a list of tool names, e.g. ["getCurrentTime"].')
    if isinstance(predicted_tools, str) or not all(isinstance(name, str) for name in predicted_tools):
        _fail(exercise, f"predicted_tools should be a list of tool names (strings), got {predicted_tools!r}")
    names = [name.strip() for name in predicted_tools]
    from .shop import shop_tools

    known = [tool.name for tool in shop_tools(_fresh_shop())]
    unknown = [name for name in names if name not in known]
    if unknown:
        _fail(exercise, f"{unknown} {'is' if len(unknown) == 1 else 'are'} not among the shop's tools {known}")
    if "queryLogistics" not in names:
        _fail(exercise, "the question is where the parcel is: which tool tracks a parcel?")
    if "queryOrder" not in names:
        _fail(exercise, "queryLogistics needs a tracking number, and the customer gave only an order id "
                        "(88231): which tool turns an order id into a tracking number?")
    if names.index("queryOrder") > names.index("queryLogistics"):
        _fail(exercise, "the order matters: the tracking number comes from queryOrder, so it must run "
                        "before queryLogistics")
    if names != ["queryOrder", "queryLogistics"]:
        extra = [name for name in names if name not in ("queryOrder", "queryLogistics")]
        _fail(exercise, f"two calls are enough; what would {extra or 'a repeated call'} add to "
                        "finding the parcel?")
    return _passed(exercise, "queryOrder turns the order id into a tracking number, then queryLogistics "
                             "tracks it. Now run the agent and compare with result.trace.tool_calls.")


def check_missing_order_prediction(first_tool: str | None, observation_is_error: bool | None) -> None:
    """00, exercise 2: order 99999 does not exist. Which tool goes first, and is its Observation an error?"""
    exercise = "Exercise 2"
    if first_tool is None and observation_is_error is None:
        return _not_attempted(exercise, "Set first_tool (a tool name) and observation_is_error (True or False).")
    if first_tool != "queryOrder":
        _fail(exercise, f"first_tool={first_tool!r}: the customer gave an order id and wants the parcel; "
                        "tracking needs a tracking number, which only the order holds")
    if not isinstance(observation_is_error, bool):
        _fail(exercise, f"observation_is_error should be True or False, got {observation_is_error!r}")
    from .shop import shop_registry

    error = shop_registry(_fresh_shop()).run(Action("queryOrder", "99999")).error
    if observation_is_error != error:
        _fail(exercise, f"observation_is_error={observation_is_error}: the shop has orders 88231 to 88236 "
                        "only; what does a tool return for an order it does not have?")
    return _passed(exercise, "queryOrder(99999) comes back as an error Observation, the loop goes on, and "
                             "an honest reply passes the error on. Run it and find the error line in the trace.")


# -- 01 · Tools -----------------------------------------------------------------------------------
def check_toy_logistics_tool(QueryLogisticsTool: type | None) -> None:
    """01, exercise 1: a toy queryLogistics that agrees with the package's on SF1234567890 and unknown ids."""
    exercise = "Exercise 1"
    if QueryLogisticsTool is None:
        return _not_attempted(exercise, "Write class QueryLogisticsTool(Tool) in the cell above.")
    from .shop import shop_tools

    tool = _instance(exercise, QueryLogisticsTool)
    if not isinstance(tool, Tool):
        _fail(exercise, "QueryLogisticsTool should subclass Tool (the contract of this lesson)")
    if tool.name != "queryLogistics":
        _fail(exercise, f"its name is {tool.name!r}; the model writes `Action: queryLogistics`")
    package = {t.name: t for t in shop_tools(_fresh_shop())}["queryLogistics"]
    for text in ["SF1234567890", " SF1234567890\n"]:
        mine = _json(exercise, _run(exercise, f"invoke({text!r})", tool.invoke, text), f"invoke({text!r})")
        theirs = json.loads(package.invoke(text))
        if mine != theirs:
            diff = sorted(k for k in set(mine) | set(theirs) if not isinstance(mine, dict) or mine.get(k) != theirs.get(k))
            _fail(exercise, f"invoke({text!r}) differs from the package's in {diff}; expected {theirs}")
    for text in ["SF0000000000", "YT0000000000"]:
        mine = _json(exercise, _run(exercise, f"invoke({text!r})", tool.invoke, text), f"invoke({text!r})")
        expected = json.loads(package.invoke(text))["error"]
        if not isinstance(mine, dict) or mine.get("error") != expected:
            _fail(exercise, f"invoke({text!r}) should be an error object with \"error\": {expected!r}, "
                            f"got {mine!r}")
    return _passed(exercise, "the same tracking events and the same error as tinyagent's queryLogistics.")


FORGIVING_INPUTS = ['"88231"', "订单 88231", '{"orderId": 88231}', "order #88231, please", " 88231\n"]


def check_forgiving_query_order(ForgivingQueryOrderTool: type | None) -> None:
    """01, exercise 2: find the order id in what models write; an "expected" hint when there is none."""
    exercise = "Exercise 2"
    if ForgivingQueryOrderTool is None:
        return _not_attempted(exercise, "Write class ForgivingQueryOrderTool in the cell above.")
    from .shop import shop_tools

    tool = _instance(exercise, ForgivingQueryOrderTool)
    package = {t.name: t for t in shop_tools(_fresh_shop())}["queryOrder"]
    for text in FORGIVING_INPUTS:
        mine = _json(exercise, _run(exercise, f"invoke({text!r})", tool.invoke, text), f"invoke({text!r})")
        if mine != json.loads(package.invoke(text)):
            _fail(exercise, f"invoke({text!r}) should find order 88231, got {mine!r}")
    for text in ["", "tomorrow", "订单号"]:
        mine = _json(exercise, _run(exercise, f"invoke({text!r})", tool.invoke, text), f"invoke({text!r})")
        if not isinstance(mine, dict) or "error" not in mine or "expected" not in mine:
            _fail(exercise, f"invoke({text!r}) has no order id in it: answer with an error object that has "
                            f"\"error\" and an \"expected\" hint, got {mine!r}")
    mine = _json(exercise, tool.invoke("99999"), "invoke('99999')")
    if not isinstance(mine, dict) or mine.get("error") != json.loads(package.invoke("99999"))["error"]:
        _fail(exercise, f"invoke('99999') should still say the order does not exist, got {mine!r}")
    return _passed(exercise, f"all {len(FORGIVING_INPUTS)} wrappings find 88231, and no number gets a hint.")


# -- 02 · The registry ----------------------------------------------------------------------------
def check_suggesting_registry(SuggestingRegistry: type | None) -> None:
    """02, exercise 1: an unknown-tool error with "did_you_mean" for near-misses only."""
    exercise = "Exercise 1"
    if SuggestingRegistry is None:
        return _not_attempted(exercise, "Write class SuggestingRegistry(CarefulRegistry) in the cell above.")
    from .shop import shop_tools

    tools = shop_tools(_fresh_shop())
    names = [tool.name for tool in tools]
    registry = _instance(exercise, SuggestingRegistry, tools)
    cases = [("queryorder", "queryOrder"), ("checkOrder", "queryOrder"), ("getTime", "getCurrentTime"),
             ("applyrefund", "applyRefund"), ("trackParcel", None), ("weather", None)]
    for wrong, expected in cases:
        text = _run(exercise, f"execute(Action({wrong!r}, '88231'))", registry.execute, Action(wrong, "88231"))
        data = _json(exercise, text, f"execute(Action({wrong!r}, ...))")
        if not isinstance(data, dict) or "error" not in data:
            _fail(exercise, f"{wrong!r} is not a tool: the Observation should be an error object, got {data!r}")
        if data.get("available_tools") != names:
            _fail(exercise, f"for {wrong!r} the error should still list available_tools {names}")
        if data.get("did_you_mean") != expected:
            if expected is None:
                _fail(exercise, f"{wrong!r} is not close to any tool name, yet did_you_mean is "
                                f"{data.get('did_you_mean')!r}: suggest only a near-miss (leave the key out)")
            _fail(exercise, f"{wrong!r} should suggest {expected!r}, got did_you_mean={data.get('did_you_mean')!r}")
    real = _run(exercise, "execute(Action('queryOrder', '88231'))", registry.execute, Action("queryOrder", "88231"))
    if _json(exercise, real, "execute(queryOrder)").get("orderId") != "88231":
        _fail(exercise, "a real tool must still run: execute(Action('queryOrder', '88231')) lost the order")
    return _passed(exercise, "near-misses get a suggestion, synonyms only the list of tools.")


CUT_NOTE = re.compile(r"\[cut: (\d+) more characters?\]\s*$")


def check_capped_registry(CappedRegistry: type | None) -> None:
    """02, exercise 2: Observations longer than `limit` are cut, with a note that counts what was cut."""
    exercise = "Exercise 2"
    if CappedRegistry is None:
        return _not_attempted(exercise, "Write class CappedRegistry(CarefulRegistry) in the cell above.")
    from .registry import ToolRegistry
    from .shop import shop_tools

    full_registry = ToolRegistry(shop_tools(_fresh_shop()))
    for limit, action in [(120, Action("searchKnowledge", "退货")), (60, Action("queryOrder", "88231"))]:
        capped = _instance(exercise, CappedRegistry, shop_tools(_fresh_shop()), limit=limit)
        full = full_registry.execute(action)
        short = _run(exercise, f"execute({action})", capped.execute, action)
        if not isinstance(short, str):
            _fail(exercise, f"execute returned {type(short).__name__}, not a string")
        if short == full:
            _fail(exercise, f"with limit={limit} an Observation of {len(full)} characters came back whole")
        if not short.startswith(full[:limit]):
            _fail(exercise, f"with limit={limit} the kept part should be the first {limit} characters "
                            f"of the Observation, got {short[:limit + 20]!r}")
        note = CUT_NOTE.search(short[limit:])
        if note is None:
            _fail(exercise, f"the cut Observation ends without a note such as '… [cut: N more characters]', "
                            f"so the model cannot tell it is incomplete: it ends {short[-40:]!r}")
        cut = len(full) - limit
        if int(note.group(1)) != cut:
            _fail(exercise, f"the note says {note.group(1)} more characters, but {cut} were cut "
                            f"({len(full)} in the Observation, {limit} kept)")
    capped = _instance(exercise, CappedRegistry, shop_tools(_fresh_shop()), limit=120)
    short_text = full_registry.execute(Action("getCurrentTime"))
    if _run(exercise, "execute(getCurrentTime)", capped.execute, Action("getCurrentTime")) != short_text:
        _fail(exercise, "an Observation within the limit must pass untouched (getCurrentTime's did not)")
    return _passed(exercise, "long Observations are cut at the limit, and the note counts what was cut.")


# -- 03 · One raw HTTP call -----------------------------------------------------------------------
def check_unknown_model(status: int | None, error: BaseException | None, check_first: str | None) -> None:
    """03, exercise 1: the status by hand, the error LlmClient raises, and which part of the request to check."""
    exercise = "Exercise 1"
    if status is None and error is None and check_first is None:
        return _not_attempted(exercise, "Set status, error (the exception you caught) and check_first.")
    if not isinstance(status, int) or not 400 <= status < 500:
        _fail(exercise, f"status={status!r}: the server refuses a request it cannot serve with a 4xx status "
                        "(an int, from response.status_code)")
    if not isinstance(error, LlmError):
        _fail(exercise, f"error should be the exception LlmClient raised (a tinyagent.LlmError), got {error!r}")
    if getattr(error, "status", None) != status:
        _fail(exercise, f"by hand you got {status}, but the error says {getattr(error, 'status', None)}: "
                        "they are answers to the same request")
    if not isinstance(check_first, str) or check_first.strip().lower() not in ("body", "the body"):
        _fail(exercise, f"check_first={check_first!r}: the error names the model, so the URL and the key "
                        "worked; which part of the request holds the \"model\" field?")
    return _passed(exercise, f"HTTP {status}, {type(error).__name__}: the URL and the key were right, "
                             "the body's \"model\" field was not.")


def check_prompt_share(share: float | None, llm: Any, messages: list[dict]) -> None:
    """03, exercise 2: the system prompt's share of the first round's prompt tokens, measured on `llm`."""
    exercise = "Exercise 2"
    if share is None:
        return _not_attempted(exercise, "Set share to a number between 0 and 1.")
    if not isinstance(share, (int, float)) or isinstance(share, bool):
        _fail(exercise, f"share should be a number between 0 and 1, got {share!r}")
    if share > 1:
        _fail(exercise, f"share={share}: give a fraction between 0 and 1 (95% is 0.95)")
    # Measured here, on the same model, so the check holds whatever the prompt's length or the tokenizer.
    with_prompt = llm.chat(messages, max_tokens=1).usage["prompt_tokens"]
    without_prompt = llm.chat(messages[1:], max_tokens=1).usage["prompt_tokens"]
    truth = (with_prompt - without_prompt) / with_prompt
    if abs(share - truth) <= 0.01:
        return _passed(exercise, f"the system prompt is {truth:.0%} of the first round's input, "
                                 "and it is sent again every round.")
    if abs(share - (1 - truth)) <= 0.01 or abs(share - without_prompt / with_prompt) <= 0.01:
        _fail(exercise, f"share={share:.2f} is the part that is NOT the system prompt: the system prompt's "
                        "tokens are the difference between the two counts")
    _fail(exercise, f"share={share:.2f} is not what the two prompt_tokens counts give; "
                    "share = (with the prompt - without) / with the prompt")


# -- 04 · The stop sequence -----------------------------------------------------------------------
RUN_ON = """Thought: 用户想退订单 88231。先查订单。
Action: queryOrder
Action Input: 88231
Observation: {"orderId":"88231","status":"已签收"}
Thought: 订单正常，直接退款。
Action: applyRefund
Action Input: {"orderId":"88231","reason":"不回充"}
Observation: {"success":true,"refundId":"RF20260629001"}
Thought: 退款已提交。
Final Answer: 退款单号 RF20260629001。"""

STOPPED = "Thought: 用户想退订单 88231。先查订单。\nAction: queryOrder\nAction Input: 88231\n"

INVENTION_SAMPLES = [
    (RUN_ON, 2, "a run-on reply with two invented Observations"),
    (STOPPED, 0, "a reply cut at the stop sequence"),
    ("Thought: I wait for the Observation: it comes from the tool.\nAction: getCurrentTime\nAction Input:", 0,
     "a Thought that mentions 'Observation:' in the middle of its line"),
    ("Action: queryOrder\nAction Input: 88231\n  Observation: {\"orderId\":\"88231\"}", 1,
     "an indented Observation line"),
    ("", 0, "an empty reply"),
]


def check_invented_counter(count_invented_observations: Callable[[str], int] | None) -> None:
    """04, exercise 1: count the lines of a reply that start with `Observation:`."""
    exercise = "Exercise 1"
    if count_invented_observations is None:
        return _not_attempted(exercise, "Write def count_invented_observations(text) in the cell above.")
    for text, expected, what in INVENTION_SAMPLES:
        got = _run(exercise, "count_invented_observations(...)", count_invented_observations, text)
        if got != expected:
            _fail(exercise, f"on {what} it returned {got!r}, expected {expected}:\n{text}")
    return _passed(exercise, "only lines that start with 'Observation:' are counted.")


PRETENDED_SAMPLES = [
    (RUN_ON, ["queryOrder", "applyRefund"], "the run-on reply"),
    (STOPPED, ["queryOrder"], "a reply cut at the stop sequence"),
    ("Thought: nothing to do.\nFinal Answer: 好的", [], "a final answer"),
    ("  Action: getCurrentTime\nAction Input:\n", ["getCurrentTime"], "an indented Action with an empty input"),
]


def check_pretended_calls(pretended_tools: Callable[[str], list[str]] | None, skipped: Any = None) -> None:
    """04, exercise 2: the tools a reply asks for (its `Action:` lines), and the tools the invention skipped."""
    exercise = "Exercise 2"
    if pretended_tools is None and skipped is None:
        return _not_attempted(exercise, "Write def pretended_tools(text) and set skipped above.")
    if pretended_tools is None:
        _fail(exercise, "write pretended_tools(text) too")
    for text, expected, what in PRETENDED_SAMPLES:
        got = _run(exercise, "pretended_tools(...)", pretended_tools, text)
        if list(got or []) != expected:
            hint = ""
            if any("Input" in str(name) or ":" in str(name) for name in got or []):
                hint = " ('Action Input: ...' starts with 'Action' too: match the key with its colon)"
            _fail(exercise, f"on {what} it returned {got!r}, expected {expected}{hint}")
    if skipped is None:
        _fail(exercise, "set skipped to the tools the invented run skipped")
    if isinstance(skipped, str) or set(skipped) != {"getCurrentTime", "searchKnowledge"}:
        _fail(exercise, f"skipped={skipped!r}: deciding a refund needs today's date (how many days since "
                        "signing?) and the shop's policy (which windows apply?); which tools give those?")
    return _passed(exercise, "the invention asked for queryOrder and applyRefund, and skipped the date and "
                             "the policy: nothing checked that a refund was allowed.")


# -- 05 · The parser ------------------------------------------------------------------------------
INVENTED_STEP = """Thought: 先查订单。
Action: queryOrder
Action Input: 88231
Observation: {"orderId":"88231","status":"已签收"}
Thought: 已签收，直接退款。
Action: applyRefund
Action Input: {"orderId":"88231","reason":"不回充"}"""

MULTI_LINE_ANSWER = """Thought: 退款已经提交，信息齐了。
Final Answer: 您好，订单 88231 的退款申请已提交：
- 退款单号：RF202606300001
- 预计 1-3 个工作日到账"""

PARSER_CASES = [
    INVENTED_STEP,
    STOPPED,
    MULTI_LINE_ANSWER,
    "Thought: I will use Action: getCurrentTime later.\nAction: queryOrder\nAction Input: 88231",
    ("Thought: The customer wants the parcel.\nAction: queryLogistics needs a number.\nAction: queryOrder\n"
    "Action Input: 88231"),
    'Thought: 可以退款。\nAction: applyRefund\nAction Input: {\n  "orderId": "88231",\n  "reason": "不回充"\n}',
    "Action Input: 88231\nAction: queryOrder",
    "您好，您的包裹已经签收了。",
    "",
]


def _action_of(step: Any) -> tuple[str, str] | None:
    action = getattr(step, "action", None)
    return None if action is None else (action.tool_name, action.tool_input)


def check_parser_stops_at_observation(my_parse_v2: Callable[[str], Any] | None) -> None:
    """05, exercise 1: a parser that ignores everything after an invented `Observation:`."""
    exercise = "Exercise 1"
    if my_parse_v2 is None:
        return _not_attempted(exercise, "Write def my_parse_v2(text) in the cell above.")
    for text in PARSER_CASES:
        mine = _run(exercise, "my_parse_v2(...)", my_parse_v2, text)
        theirs = parse_step(text)
        if _action_of(mine) != _action_of(theirs) or getattr(mine, "final_answer", None) != theirs.final_answer:
            what = "the step the model invented after its Observation" if text == INVENTED_STEP else "this reply"
            _fail(exercise, f"on {what} it read action={_action_of(mine)}, final_answer="
                            f"{getattr(mine, 'final_answer', None)!r}; tinyagent.parse_step reads action="
                            f"{_action_of(theirs)}, final_answer={theirs.final_answer!r}:\n{text}")
    return _passed(exercise, f"{len(PARSER_CASES)} replies read as parse_step reads them; the invented "
                             "step after the Observation is ignored.")


ANCHORED_CASES = [
    ("Thought: Too early for a Final Answer: I need the order first.\nAction: queryOrder\nAction Input: 88231",
     None, "a Thought that mentions 'Final Answer:' mid-line"),
    (MULTI_LINE_ANSWER,
     "您好，订单 88231 的退款申请已提交：\n- 退款单号：RF202606300001\n- 预计 1-3 个工作日到账",
     "a three-line answer (the refund id is on its second line)"),
    ("Thought: done.\n   Final Answer: 好的", "好的", "an indented Final Answer line"),
    ("**Final Answer:** done", None, "a bold key (the price of anchoring)"),
    ("Thought: ok\nAction: getCurrentTime", None, "a reply with an action"),
]


def check_anchored_final_answer(final_answer_anchored: Callable[[str], str | None] | None) -> None:
    """05, exercise 2: `Final Answer:` found only at the start of a line, and kept to the end of the text."""
    exercise = "Exercise 2"
    if final_answer_anchored is None:
        return _not_attempted(exercise, "Write def final_answer_anchored(text) in the cell above.")
    for text, expected, what in ANCHORED_CASES:
        got = _run(exercise, "final_answer_anchored(...)", final_answer_anchored, text)
        if got != expected:
            hint = ""
            if expected and isinstance(got, str) and expected.startswith(got) and got:
                hint = " (an answer runs to the end of the text, not to the end of its line)"
            _fail(exercise, f"on {what} it returned {got!r}, expected {expected!r}{hint}")
    return _passed(exercise, "the key counts only at a line start, and the whole answer is kept; "
                             "a bold **Final Answer:** is what you lose.")


# -- 06 · The ReAct loop --------------------------------------------------------------------------
class ScriptedModel:
    """A stand-in for `LlmClient` that answers with the given replies in order (then a final answer),
    and remembers the options of every call. Each reply is a text, or (text, finish_reason)."""

    def __init__(self, replies: list[str | tuple[str, str]]):
        self.script = [reply if isinstance(reply, tuple) else (reply, "stop") for reply in replies]
        self.calls: list[dict] = []

    def chat(self, messages: list[dict], **options: Any) -> ChatResult:
        n = len(self.calls)
        self.calls.append(options)
        text, finish = self.script[n] if n < len(self.script) else ("Thought: done.\nFinal Answer: 好的。", "stop")
        prompt = sum(len(m["content"]) for m in messages)
        usage = {"prompt_tokens": prompt, "completion_tokens": len(text) + 1, "total_tokens": prompt + len(text) + 1}
        return ChatResult(text, finish, usage, model="scripted")


ORDER_STEP = "Thought: 先查订单。\nAction: queryOrder\nAction Input: 88231\n"
SCRIPTS = {
    "a parcel run ending in a Final Answer": [
        ORDER_STEP,
        "Thought: 有运单号了。\nAction: queryLogistics\nAction Input: SF1234567890\n",
        "Thought: 已签收。\nFinal Answer: 您的包裹已于 2026-06-22 签收。",
    ],
    "a run that answers in prose (the fallback)": [ORDER_STEP, "订单 88231 已签收。"],
    "a run whose second reply is cut by max_tokens": [ORDER_STEP, ("Thought: 订单已签收，运单号是 SF12", "length")],
    "a reply cut inside its Action Input": [("Thought: 先查订单。\nAction: queryOrder\nAction Input: 882", "length")],
    "an empty reply": [ORDER_STEP, ""],
}


def check_counting_llm(CountingLlm: type | None) -> None:
    """06, exercise 1: a wrapper that passes every call on and keeps each reply's usage."""
    exercise = "Exercise 1"
    if CountingLlm is None:
        return _not_attempted(exercise, "Write class CountingLlm in the cell above.")
    model = ScriptedModel(SCRIPTS["a parcel run ending in a Final Answer"])
    counting = _instance(exercise, CountingLlm, model)
    messages = [{"role": "user", "content": "帮我看看订单 88231 的快递到哪了。"}]
    replies = []
    for n in range(3):
        messages = [*messages, {"role": "user", "content": f"round {n + 1}"}]
        replies.append(_run(exercise, "chat(messages, stop=...)", counting.chat, messages,
                            stop=["Observation:"], max_tokens=64))
    if [getattr(reply, "text", None) for reply in replies] != [text for text, _ in model.script]:
        _fail(exercise, "chat() should return the wrapped model's reply as it is (a ChatResult)")
    if any(call.get("stop") != ["Observation:"] or call.get("max_tokens") != 64 for call in model.calls):
        _fail(exercise, f"chat() should pass every option on to the model (stop, max_tokens); the model got "
                        f"{model.calls}")
    expected = [reply.usage for reply in replies]
    usages = getattr(counting, "usages", None)
    if usages != expected:
        _fail(exercise, f"after 3 calls, .usages should hold the 3 usages in order {expected}, got {usages!r}")
    return _passed(exercise, "every call passes through, and every round's usage is kept.")


def _compare_replay(label: str, mine: Any, theirs: Any, exercise: str) -> str:
    """Your loop's result against ReActAgent's on the same replies; the explanation of a difference
    that is honest (ReActAgent stops on a reply cut by max_tokens or an empty one: lesson 10)."""
    their_calls = [(call.name, call.input) for call in theirs.trace.tool_calls]
    if theirs.reason in ("length", "empty_reply"):
        # Your loop does not look at finish_reason or at an empty reply; it agrees up to that round.
        rounds = theirs.trace.rounds
        if list(mine.calls[: len(their_calls)]) != their_calls or mine.messages[: len(theirs.messages)] != theirs.messages:
            _fail(exercise, f"{label}: up to round {rounds} both loops had the same replies, yet they differ: "
                            f"your calls {mine.calls}, ReActAgent's {their_calls}")
        return f"{label}: the same up to round {rounds}, where ReActAgent stops ({theirs.reason})"
    problems = []
    if mine.reason != theirs.reason:
        problems.append(f"reason {mine.reason!r} vs {theirs.reason!r}")
    if theirs.ok and mine.answer != theirs.answer:
        problems.append(f"answer {mine.answer!r} vs {theirs.answer!r}")
    if list(mine.calls) != their_calls:
        problems.append(f"calls {mine.calls} vs {their_calls}")
    if mine.rounds != theirs.trace.rounds:
        problems.append(f"rounds {mine.rounds} vs {theirs.trace.rounds}")
    if mine.messages != theirs.messages:
        problems.append("the message lists differ")
    if problems:
        _fail(exercise, f"{label}: given the same replies, your loop and ReActAgent disagree: "
                        + "; ".join(problems) + ". Does the Recorder keep every reply, and the Replayer "
                        "hand them back one after the other?")
    return f"{label}: same answer, calls, rounds and messages ({theirs.reason})"


def check_record_replay(
    Recorder: type | None,
    Replayer: type | None,
    run_loop: Callable | None = None,
    llm: Any = None,
    questions: tuple[str, ...] = (),
) -> None:
    """06, exercise 2: record the replies your loop got, replay them to ReActAgent, compare.

    Checked on scripted replies (a final answer, the fallback, a reply cut by max_tokens, an empty one),
    then, when `llm` and `questions` are given, on that model's own replies: true on any model."""
    exercise = "Exercise 2"
    if Recorder is None and Replayer is None:
        return _not_attempted(exercise, "Write class Recorder and class Replayer in the cell above.")
    if run_loop is None:
        _fail(exercise, "pass your run_loop too: check_record_replay(Recorder, Replayer, run_loop, ...)")
    from .agent import ReActAgent
    from .shop import shop_registry

    parcel = "帮我看看订单 88231 的快递到哪了。"
    sources = [(label, ScriptedModel(script), parcel) for label, script in SCRIPTS.items()]
    if llm is not None:
        sources += [(f"{getattr(llm, 'model', 'your model')}: {question}", llm, question) for question in questions]
    lines = []
    for label, source, question in sources:
        recorder = _instance(exercise, Recorder, source)
        mine = _run(exercise, "run_loop(...) with your Recorder", run_loop, question, recorder,
                    shop_registry(_fresh_shop()), verbose=False)
        replies = getattr(recorder, "replies", None)
        if not replies:
            _fail(exercise, f"{label}: after the run, recorder.replies is {replies!r}: keep every reply")
        replayer = _instance(exercise, Replayer, replies)
        agent = ReActAgent(replayer, shop_registry(_fresh_shop()))
        theirs = _run(exercise, "ReActAgent(Replayer(...)).run(...)", agent.run, question)
        lines.append(_compare_replay(label, mine, theirs, exercise))
    return _passed(exercise, "\n  " + "\n  ".join(lines))


# -- 07 · Tool schemas ----------------------------------------------------------------------------
def check_typed_logistics_tool(track_parcel: Any) -> None:
    """07, exercise 1: queryLogistics as a typed tool: its schema, and what it returns for good and bad input."""
    exercise = "Exercise 1"
    if track_parcel is None:
        return _not_attempted(exercise, "Write def track_parcel(...) with @tool(name=\"queryLogistics\") above it.")
    from .shop import shop_tools
    from .typed_tool import TypedTool

    if not isinstance(track_parcel, TypedTool):
        _fail(exercise, f"track_parcel is a {type(track_parcel).__name__}, not a tool: put @tool(name="
                        "\"queryLogistics\") on the line above `def track_parcel`")
    if track_parcel.name != "queryLogistics":
        _fail(exercise, f"its name is {track_parcel.name!r}; the model writes `Action: queryLogistics`, so give "
                        "@tool(name=\"queryLogistics\")")
    params = track_parcel.parameters
    properties = params.get("properties", {})
    if set(properties) != {"tracking_no", "latest_only"}:
        _fail(exercise, f"the schema's fields are {sorted(properties)}; expected exactly tracking_no and latest_only")
    number, latest = properties["tracking_no"], properties["latest_only"]
    if number.get("type") != "string" or "tracking_no" not in params.get("required", ()):
        _fail(exercise, f"tracking_no should be a required string (`tracking_no: str`, no default); its schema is "
                        f"{number}")
    if not number.get("examples"):
        _fail(exercise, "describe tracking_no in the docstring, with an example the model can copy: under `Args:`, "
                        "`tracking_no: the tracking number from queryOrder, e.g. SF1234567890`")
    if latest.get("type") != "boolean":
        _fail(exercise, f"latest_only should be a boolean (`latest_only: bool = False`); its schema is {latest}")
    if "latest_only" in params.get("required", ()) or latest.get("default") is not False:
        _fail(exercise, "latest_only should be optional with the default False (`latest_only: bool = False`), so "
                        "the model may leave it out")
    package = {t.name: t for t in shop_tools(_fresh_shop())}["queryLogistics"]
    for number_text in ("SF1234567890", "YT2468013579"):
        whole = json.loads(package.invoke(number_text))
        mine = _json(exercise, _run(exercise, f"invoke({number_text!r})", track_parcel.invoke, number_text),
                     f"invoke({number_text!r})")
        if mine != whole:
            _fail(exercise, f"invoke({number_text!r}) should return the shop's logistics for that parcel "
                            f"(shop.get_logistics), all {len(whole['traces'])} traces; got {mine!r}")
        text = json.dumps({"tracking_no": number_text, "latest_only": True})
        mine = _json(exercise, _run(exercise, f"invoke({text!r})", track_parcel.invoke, text), f"invoke({text!r})")
        newest = whole["traces"][-1]
        if not isinstance(mine, dict) or mine.get("traces") != [newest]:
            got = mine.get("traces") if isinstance(mine, dict) else mine
            _fail(exercise, f"with latest_only true, traces should hold only the newest event {[newest]} "
                            f"(the shop lists them oldest first); got {got!r}")
        if {key: value for key, value in mine.items() if key != "traces"} != {
                key: value for key, value in whole.items() if key != "traces"}:
            _fail(exercise, "with latest_only true, keep the other fields (trackingNo, carrier, status) as they are")
    unknown = _json(exercise, _run(exercise, "invoke('SF0000000000')", track_parcel.invoke, "SF0000000000"),
                    "invoke('SF0000000000')")
    if not isinstance(unknown, dict) or "error" not in unknown:
        _fail(exercise, f"for a tracking number the shop does not have (shop.get_logistics returns None), return an "
                        f"error object such as {{\"error\": \"运单不存在：SF0000000000\"}}; got {unknown!r}")
    wrong = json.loads(track_parcel.invoke('{"tracking_no": 1234567890}'))
    if wrong.get("field") != "tracking_no":
        _fail(exercise, f"a number for tracking_no should be refused by the schema, naming tracking_no; got {wrong}")
    return _passed(exercise, "the schema says what the model may send (a required string with an example, an "
                             "optional boolean), and @tool refuses the rest before your function runs.")


# The lesson's schedulePickup tool, as the lesson writes it: exercise 2 predicts its errors.
PICKUP_INPUTS = (
    '{"order_id": "88231", "address": {"city": "上海", "street": "南京西路 1 号"}, "window": "morning"}',
    '{"order_id": "88231", "address": {"city": "上海"}}',
    '{"order_id": "88231", "address": {"city": "上海", "street": "南京西路 1 号"}, "window": "evening"}',
    '{"order_id": "88231", "address": {"city": "上海", "street": "南京西路 1 号"}, "items": ["扫地机", 2]}',
    '{"order": "88231", "address": {"city": "上海", "street": "南京西路 1 号"}}',
)


@dataclass
class Address:
    """Where the courier collects the parcel.

    Args:
        city: the city, e.g. 上海
        street: the street and number, e.g. 南京西路 1 号
    """

    city: str
    street: str


def pickup_tool():
    """The lesson's `schedulePickup`: a nested dataclass, a Literal, a list. Returns what it would book."""
    from .typed_tool import tool

    @tool(name="schedulePickup")
    def schedule_pickup(order_id: str, address: Address, window: Literal["morning", "afternoon"] = "morning",
                        items: tuple[str, ...] = ()) -> dict:
        """Book a courier to collect a return.

        Args:
            order_id: the order id, e.g. 88231
            address: where the courier collects the parcel
            window: the half of the day the courier comes
            items: what goes back, if not the whole order
        """
        return {"orderId": order_id, "city": address.city, "window": window, "items": items}

    return schedule_pickup


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
        if predicted == actual:
            continue
        if actual is None:
            _fail(exercise, f"input {number} is accepted (every required field is there, each of the right type), "
                            f"so predict None; you predicted {predicted!r}")
        hint = ""
        if isinstance(predicted, str) and (actual.startswith((predicted + ".", predicted + "["))):
            hint = ": a field inside an object or a list is named by its path, down to the part that is wrong"
        elif predicted is None:
            hint = ": it is refused; read it against the schema again"
        elif actual == "order_id":
            hint = (": an unknown field is reported after the fields the schema has, and order_id, which the "
                    "schema requires, is missing")
        _fail(exercise, f"input {number}: the error names {actual!r}, you predicted {predicted!r}{hint}. "
                        f"The error was: {data['error']}")
    return _passed(exercise, "each error names the exact field (a path such as address.street or items[1]) and "
                             "shows an example, which is what lets a model fix its input in one round.")


# -- 08 · Prompt design ---------------------------------------------------------------------------
LEAN_SHARE = 0.75  # the lean prompt's budget: this share of the default prompt's tokens
LEAN_KEYS = ("Thought:", "Action:", "Action Input:", "Final Answer:")


def _second_registry():
    """Tools the lean prompt has never seen: a prompt written for the shop's five alone fails here."""
    from .registry import ToolRegistry
    from .tools import FunctionTool

    return ToolRegistry([
        FunctionTool("checkStock", "Units in stock for a product. Input: the product name, e.g. S10 Pro.",
                     lambda text: '{"stock": 3}'),
        FunctionTool("getCurrentTime", "The current date and time. Input: none (empty).",
                     lambda text: "2026-06-30 19:05:23"),
    ])


def check_lean_prompt(lean_prompt: Callable | None) -> None:
    """08, exercise 1: an English prompt within 75% of the default's tokens that keeps what a model needs."""
    exercise = "Exercise 1"
    if lean_prompt is None:
        return _not_attempted(exercise, "Write def lean_prompt(tools) in the cell above.")
    if not callable(lean_prompt):
        _fail(exercise, f"lean_prompt should be a function of the registry, got {type(lean_prompt).__name__}")
    from .classroom.tool_list import read_tool_list
    from .prompts import build_system_prompt
    from .shop import shop_registry
    from .token_count import token_counter

    counter = token_counter()
    sizes = []
    with _fresh_shop() as shop:
        for label, registry in (("the shop's tools", shop_registry(shop)), ("two other tools", _second_registry())):
            prompt = _run(exercise, f"lean_prompt(<{label}>)", lean_prompt, registry)
            if not isinstance(prompt, str):
                _fail(exercise, f"lean_prompt returned {type(prompt).__name__}, not the prompt's text")
            lost = [tool.name for tool in registry if tool.describe("en") not in prompt]
            if lost:
                _fail(exercise, f"with {label} the descriptions of {lost} are missing (each must appear word for "
                                "word): they say what input each tool takes. Build the list from `tools`, and "
                                "cut the words around it instead")
            keys = [key for key in LEAN_KEYS if key not in prompt]
            if keys:
                _fail(exercise, f"the keys {keys} are missing: the parser reads only lines that start with them, "
                                "so the prompt must show each one")
            if "Observation" not in prompt:
                _fail(exercise, "say that the tool's result comes back as an Observation: otherwise the model "
                                "cannot know that it should stop after Action Input")
            found = list(read_tool_list(prompt).tools)
            if found != registry.names:
                _fail(exercise, f"with {label}, a tool-list reader finds {found} in your prompt, expected "
                                f"{registry.names}: put one tool on each line (numbered, or `name: description`)")
            default = counter.text(build_system_prompt(registry, "en"))
            budget, used = int(default * LEAN_SHARE), counter.text(prompt)
            if used > budget:
                _fail(exercise, f"with {label} your prompt has {used} tokens and the default {default}: the "
                                f"budget is {budget} ({LEAN_SHARE:.0%}). Which words around the tools can go?")
            sizes.append((used, default))
    (used, default), _ = sizes
    return _passed(exercise, f"{used} tokens instead of {default} ({used / default:.0%}), with every tool's "
                             "description and every key kept. Run the agent with it and watch the refund.")


def shorter_pairs() -> dict[str, dict[str, str]]:
    """08, exercise 2's three pairs of texts, by pair and by option."""
    from .prompt_builders import VARIANTS
    from .prompts import build_system_prompt
    from .shop import shop_registry

    with _fresh_shop() as shop:
        registry = shop_registry(shop)
        return {
            "system prompt": {"en": build_system_prompt(registry, "en"), "zh": build_system_prompt(registry, "zh")},
            "question": {
                "en": "The robot vacuum I bought last week no longer goes back to its dock. "
                      "If it can't be fixed, I want a refund. Order number 88231.",
                "zh": "我上周买的扫地机不回充了，修不好我想退。订单号 88231。",
            },
            "json or example": {name: VARIANTS[name].system_prompt(registry, "en")
                                for name in ("json", "one-shot-prompt")},
        }


SHORTER_HINTS = {
    "system prompt": "the Chinese prompt has half the characters; is a Chinese character cheaper than an "
                     "English word?",
    "question": "count words in one and characters in the other: about one token each",
    "json or example": "five tool definitions with their schemas, or one short conversation: "
                       "which holds more text?",
}


def check_shorter_predictions(shorter: dict | None) -> None:
    """08, exercise 2: for each pair, which text has fewer tokens (measured here with the lesson's counter)."""
    exercise = "Exercise 2"
    if shorter is None:
        return _not_attempted(exercise, 'Set shorter to a dict such as {"system prompt": "en", ...}.')
    from .token_count import token_counter

    pairs = shorter_pairs()
    if not isinstance(shorter, dict) or set(shorter) != set(pairs):
        _fail(exercise, f"shorter should be a dict with the keys {list(pairs)}, got {shorter!r}")
    counter = token_counter()
    counts = {pair: {option: counter.text(text) for option, text in texts.items()} for pair, texts in pairs.items()}
    wrong = []
    for pair, options in counts.items():
        if shorter[pair] not in options:
            _fail(exercise, f"shorter[{pair!r}] should be one of {list(options)}, got {shorter[pair]!r}")
        if options[shorter[pair]] > min(options.values()):
            wrong.append(f"{pair}: not {shorter[pair]!r} ({SHORTER_HINTS[pair]})")
    if wrong:
        _fail(exercise, f"{len(wrong)} of {len(pairs)} wrong. " + "; ".join(wrong))
    lines = [
        f"{pair}: " + ", ".join(f"{option} {count} tokens ({len(pairs[pair][option])} characters)"
                                for option, count in options.items())
        for pair, options in counts.items()
    ]
    return _passed(exercise, f"measured with {counter.name}:\n  " + "\n  ".join(lines))


# -- 09 · Function calling ------------------------------------------------------------------------
def _native_call(call_id: str, name: str, arguments: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


# The reply exercise 1 answers: four calls, one of them with broken JSON, one whose tool raises.
TOOL_CALLS_REPLY = {"role": "assistant", "content": None, "tool_calls": [
    _native_call("call_order", "queryOrder", '{"orderId": "88231"}'),
    _native_call("call_broken", "queryOrder", '{"orderId": 88232'),
    _native_call("call_parcel", "queryLogistics", '{"trackingNo": "SF1234567890"}'),
    _native_call("call_policy", "searchKnowledge", '{"query": "退货 政策"}'),
]}
KNOWLEDGE_OFFLINE = "searchKnowledge failed: the knowledge base is offline"


class _CheckTools:
    """run_tool(name, arguments) for exercise 1. queryOrder waits (at most `patience` s) until queryLogistics
    has started, which happens only when the calls run at the same time; searchKnowledge raises."""

    def __init__(self, patience: float):
        import threading

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


def check_tool_messages(tool_messages: Callable[[dict, Callable], list] | None, patience: float = 10.0) -> None:
    """09, exercise 1: the tool messages that answer a reply's calls: one per call, in the order of the calls,
    each quoting its call's id; unreadable arguments and a failing tool answered with an error; run at once.
    `patience`: how long the check's queryOrder waits for queryLogistics to start before calling it sequential."""
    exercise = "Exercise 1"
    if tool_messages is None:
        return _not_attempted(exercise, "Write def tool_messages(message, run_tool) in the cell above.")
    if not callable(tool_messages):
        _fail(exercise, f"tool_messages should be a function, got {type(tool_messages).__name__}")
    import copy

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


# -- 10 · Stopping --------------------------------------------------------------------------------
class GivingUpModel:
    """A scripted model for the loop-counter check: call n gets `script(n)`; after `give_up_after` calls
    it writes a Final Answer itself, so even a loop whose counter never moves ends (and the check says so)."""

    GAVE_UP = "(the check's model gave up)"

    def __init__(self, script: Callable[[int], str], give_up_after: int):
        self.script, self.give_up_after = script, give_up_after
        self.calls = 0

    @property
    def ran_away(self) -> bool:
        return self.calls > self.give_up_after

    def chat(self, messages: list[dict], **options: Any) -> ChatResult:
        n, self.calls = self.calls, self.calls + 1
        text = f"Thought: enough.\nFinal Answer: {self.GAVE_UP}" if n >= self.give_up_after else self.script(n)
        return ChatResult(text, "stop", {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15})


MISSING_TOOL_STEP = "Thought: 查一下订单。\nAction: checkOrder\nAction Input: 88231\n"
FINAL_STEP = "Thought: 查到了。\nFinal Answer: 订单 88231 已签收。"
LOOP_COUNTER_CASES = [
    # (what the model does, limit, its reply to call n, model calls expected, the answer expected or None)
    ("a model that keeps calling a tool that works", 4, lambda n: ORDER_STEP, 4, None),
    ("a model that answers in round 2", 4, lambda n: ORDER_STEP if n < 1 else FINAL_STEP, 2, "订单 88231 已签收。"),
    ("a model that calls a missing tool twice, then answers", 4,
     lambda n: MISSING_TOOL_STEP if n < 2 else FINAL_STEP, 3, "订单 88231 已签收。"),
    ("a model that only ever calls a missing tool", 4, lambda n: MISSING_TOOL_STEP, 4, None),
    ("a model that keeps calling a tool that works, with limit=1", 1, lambda n: ORDER_STEP, 1, None),
]


def check_fixed_seed_loop(fixed_seed_loop: Callable | None) -> None:
    """10, exercise 1: the second seed's loop with a counter that moves every round, and only once."""
    exercise = "Exercise 1"
    if fixed_seed_loop is None:
        return _not_attempted(exercise, "Write def fixed_seed_loop(question, llm, tools, limit=10) in the cell above.")
    from .shop import shop_registry

    for what, limit, script, expected_calls, expected_answer in LOOP_COUNTER_CASES:
        model = GivingUpModel(script, give_up_after=3 * limit + 2)
        answer = _run(exercise, f"fixed_seed_loop(..., limit={limit})", fixed_seed_loop,
                      "帮我看看订单 88231 的快递到哪了。", model, shop_registry(_fresh_shop()), limit=limit)
        where = f"with limit={limit} and {what}"
        if model.ran_away:
            _fail(exercise, f"{where}, your loop made {model.calls} model calls and ended only because the check's "
                            "model gave up: does the counter move every round, or only when something throws?")
        if model.calls > expected_calls:
            _fail(exercise, f"{where}, your loop made {model.calls} model calls, expected {expected_calls}: "
                            "limit rounds means limit model calls (mind < and <=)")
        if model.calls < expected_calls:
            _fail(exercise, f"{where}, your loop stopped after {model.calls} model calls, expected {expected_calls}: "
                            "does a round that throws move the counter twice?")
        if expected_answer is not None and answer != expected_answer:
            _fail(exercise, f"{where}, your loop returned {answer!r}, expected the model's answer {expected_answer!r}")
    return _passed(exercise, "the counter moves once a round, whether the tool worked or threw, so a model "
                             "that never answers costs `limit` calls and no more.")


def _costly_trace(*usages: tuple[int, int]) -> Any:
    from .events import LlmCall
    from .trace import Trace

    return Trace([
        LlmCall(n, text="...", finish_reason="stop",
                usage={"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c})
        for n, (p, c) in enumerate(usages, start=1)
    ])


def check_cost_budget(CostBudget: type | None) -> None:
    """10, exercise 2: a stop rule that ends the run once its model calls have cost `yuan`."""
    exercise = "Exercise 2"
    if CostBudget is None:
        return _not_attempted(exercise, "Write class CostBudget in the cell above.")
    from .stop_rules import Stop

    prices = (2.0, 8.0)  # yuan per million prompt tokens, per million completion tokens
    cases = [
        # (budget, usages so far, should it stop, why)
        (0.02, (), False, "before any model call (nothing spent)"),
        (0.02, ((3000, 500),), False, "after one call of 3000 prompt + 500 completion tokens (¥0.0100 spent)"),
        (0.02, ((3000, 500), (4000, 600)), True,
         "after a second call of 4000 + 600 tokens (¥0.0228 spent, the budget is ¥0.02)"),
        (0.05, ((3000, 500), (4000, 600)), False, "with a budget of ¥0.05 after those two calls (¥0.0228 spent)"),
    ]
    for budget, usages, should_stop, when in cases:
        rule = _instance(exercise, CostBudget, budget, *prices)
        check = getattr(rule, "check", None)
        if not callable(check):
            _fail(exercise, "a stop rule needs a method check(self, trace)")
        verdict = _run(exercise, "check(trace)", check, _costly_trace(*usages))
        if should_stop and not isinstance(verdict, Stop):
            _fail(exercise, f"CostBudget({budget}, 2.0, 8.0) {when} should stop the run: return "
                            f"Stop('cost_budget', ...) (from tinyagent), got {verdict!r}. Prices are per million "
                            "tokens, prompt and completion priced apart, over every call so far")
        if not should_stop and verdict is not None:
            _fail(exercise, f"CostBudget({budget}, 2.0, 8.0) {when} should let the run go on (return None), got "
                            f"{verdict!r}. Prices are per million tokens")
        if should_stop and verdict.reason != "cost_budget":
            _fail(exercise, f"the Stop's reason should be 'cost_budget' (the name the trace shows), got {verdict.reason!r}")

    from .agent import ReActAgent
    from .events import LimitReached
    from .shop import shop_registry

    class Endless:  # asks for the same working tool forever, every call 1000 + 100 tokens
        def chat(self, messages: list[dict], **options: Any) -> ChatResult:
            return ChatResult(ORDER_STEP, "stop", {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100})

    rule = _instance(exercise, CostBudget, 0.01, *prices)
    agent = ReActAgent(Endless(), shop_registry(_fresh_shop()), stop_rules=[rule])
    result = _run(exercise, "ReActAgent(..., stop_rules=[CostBudget(0.01, 2.0, 8.0)]).run(...)", agent.run, "88231?")
    limits = result.trace.of_type(LimitReached)
    if result.reason != "cost_budget" or limits[0].step != 4:
        stopped = f"{result.reason} after round {limits[0].step}" if limits else result.reason
        _fail(exercise, f"in an agent whose every call costs ¥0.0028 (1000 + 100 tokens), a budget of ¥0.01 should "
                        f"stop the run after round 4 (¥0.0112 spent); it ended with {stopped}")
    return _passed(exercise, "each call is priced by its prompt and its completion tokens, summed over the run; "
                             "in the agent the budget stopped the run before round 5.")


# -- 11 · Robust parsing --------------------------------------------------------------------------
_REFUND_JSON = '{"orderId":"88231","reason":"质量问题：扫地机不回充"}'

# (reply, what it is): the check compares the learner's parser with `parse_tolerant` on each.
BRACKET_CASES = [
    ("Thought: I need the order first.\nAction: queryOrder[88231]", "queryOrder[88231]"),
    ("Thought: I need the policy.\nAction: searchKnowledge[扫地机 退货 政策]",
     "an input with spaces: searchKnowledge[扫地机 退货 政策]"),
    ("thought: I need today's date.\naction: getCurrentTime[]", "an empty input: getCurrentTime[]"),
    (f"**Thought:** It is faulty.\n**Action:** applyRefund[{_REFUND_JSON[:-1]},\"photos\":[\"dock.jpg\"]}}]",
     "an input that holds brackets itself (JSON with a list)"),
    ("Thought: I need the order first.\nAction: `queryOrder` (to see when it was signed for)\nAction Input: 88231",
     "a name in backticks with a comment in round brackets, and its Action Input"),
    ("Thought：先查订单。\nAction：queryOrder\nAction Input：88231", "full-width colons, no brackets at all"),
    ("Thought: Done.\nFinal Answer: Refund RF202606300001 [quality problem] is submitted.",
     "a Final Answer with brackets in it"),
]


def _read(step: Any) -> tuple[tuple[str, str] | None, str | None]:
    return _action_of(step), getattr(step, "final_answer", None)


def _readings_against_tolerant(exercise: str, name: str, fn: Callable[[str], Any], cases: list):
    """Each case where `fn` reads a reply differently from `parse_tolerant`: (text, what, mine, theirs)."""
    from .tolerant_parser import parse_tolerant

    for text, what in cases:
        mine = _read(_run(exercise, f"{name} on {what}", fn, text))
        theirs = _read(parse_tolerant(text))
        if mine != theirs:
            yield text, what, mine, theirs


def check_bracket_actions(my_tolerant_v2: Callable[[str], Any] | None) -> None:
    """11, exercise 1: the hand-built tolerant parser, extended to read `Action: tool[input]`."""
    exercise = "Exercise 1"
    if my_tolerant_v2 is None:
        return _not_attempted(exercise, "Write def my_tolerant_v2(text) in the cell above.")
    if not callable(my_tolerant_v2):
        _fail(exercise, f"my_tolerant_v2 should be a function, got {type(my_tolerant_v2).__name__}")
    for text, what, mine, theirs in _readings_against_tolerant(exercise, "my_tolerant_v2", my_tolerant_v2,
                                                                BRACKET_CASES):
        hint = ""
        if theirs[0] and mine[0] and mine[0][0] == theirs[0][0] and theirs[1] is None:
            hint = " (the name is right; the input is everything between the first [ and the last ])"
        _fail(exercise, f"on {what} it read action={mine[0]}, final_answer={mine[1]!r}; "
                        f"tinyagent.parse_tolerant reads action={theirs[0]}, final_answer={theirs[1]!r}"
                        f"{hint}:\n{text}")
    return _passed(exercise, f"{len(BRACKET_CASES)} replies read as parse_tolerant reads them, brackets "
                             "inside the input included.")


ACTION_FIRST_CASES = [
    ((f"Thought: It is faulty, so I refund it.\nAction: applyRefund\nAction Input: {_REFUND_JSON}\n"
     "Final Answer: Your refund RF20260629001 is on its way."),
     "a reply that typed past its Action to a Final Answer"),
    (("Thought: I need the order first.\nAction: queryOrder\nAction Input: 88231\n"
     'Observation: {"orderId":"88231","status":"已签收"}\nThought: Signed, so I refund it.\n'
     f"Action: applyRefund\nAction Input: {_REFUND_JSON}\nFinal Answer: Refund RF20260629001 submitted."),
     "a reply that ran on past an Observation it invented"),
    ("Thought: The refund went through.\nFinal Answer: Refund RF202606300001 is submitted.", "a plain final answer"),
    (("Thought: The refund went through. No need for another Action: applyRefund.\n"
     "Final Answer: Refund RF202606300001 is submitted."), "a final answer whose Thought mentions 'Action:'"),
    (f"Thought: Done.\nFinal Answer: Refunded.\nAction: applyRefund\nAction Input: {_REFUND_JSON}",
     "a Final Answer written before the Action"),
    ("Thought: Too early for a Final Answer: I need the order first.\nAction: queryOrder\nAction Input: 88231",
     "a Thought that mentions 'Final Answer:' mid-line"),
    ("Thought: I need the order first.\nAction: queryOrder\nAction Input: 88231\n", "a plain action"),
    (MULTI_LINE_ANSWER, "a three-line answer"),
    ("您好，您的包裹已经签收了。", "plain prose"),
]


def check_action_over_final(action_first: Callable[[str], Any] | None) -> None:
    """11, exercise 2: lesson 05's parser with the new rule: an Action beside a Final Answer wins."""
    exercise = "Exercise 2"
    if action_first is None:
        return _not_attempted(exercise, "Write def action_first(text) in the cell above.")
    if not callable(action_first):
        _fail(exercise, f"action_first should be a function, got {type(action_first).__name__}")
    for text, what, mine, theirs in _readings_against_tolerant(exercise, "action_first", action_first,
                                                                ACTION_FIRST_CASES):
        why = ""
        if theirs[0] is not None and mine[1] is not None:
            why = " The answer rests on nothing observed yet: the Action must run first."
        elif theirs[0] is None and mine[0] is not None:
            why = " Only an 'Action:' at the start of a line is an action."
        elif theirs[0] is not None and mine[0] is not None:
            why = " Nothing after an Observation the model wrote itself is part of this step."
        _fail(exercise, f"on {what} it read action={mine[0]}, final_answer={mine[1]!r}; expected "
                        f"action={theirs[0]}, final_answer={theirs[1]!r}.{why}\n{text}")
    return _passed(exercise, f"{len(ACTION_FIRST_CASES)} replies: every Action beside a Final Answer runs, "
                             "and a mere mention of 'Action:' stays a mention.")




# -- 12 · Memory ----------------------------------------------------------------------------------
class _TurnsOnly:
    """A stand-in for a Session that a memory reads: its turns, an id, a store and a language."""

    def __init__(self, turns: list):
        from .session_store import SqliteSessionStore

        self._turns, self.id, self.lang, self.store = list(turns), "check", "en", SqliteSessionStore()

    def turns(self) -> list:
        return list(self._turns)


def _numbered_turns(count: int) -> list:
    from .session_store import Turn

    return [Turn(f"question {n}", f"answer {n}", number=n) for n in range(1, count + 1)]


def _which_turns(messages: Any, turns: list) -> list | str:
    """The numbers of the turns whose messages `messages` are, in order; or what is wrong with them."""
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        return f"a {type(messages).__name__}, not a list of message dicts"
    by_pair = {(turn.question, turn.answer): turn.number for turn in turns}
    numbers = []
    for i in range(0, len(messages), 2):
        pair = messages[i : i + 2]
        roles = [m.get("role") for m in pair]
        if roles != ["user", "assistant"]:
            return f"messages {i + 1}-{i + len(pair)} have roles {roles}; each turn is a user message, then an assistant one"
        key = (pair[0].get("content"), pair[1].get("content"))
        if key not in by_pair:
            return f"messages {i + 1}-{i + 2} are not a question and its answer from the session: {key}"
        numbers.append(by_pair[key])
    return numbers


FIVE_TURN_CONVERSATION = (
    "Hello, my order number is 88231 and the robot vacuum won't charge any more.",
    "Has it been delivered?",
    "What is your exchange policy?",
    "What's today's date?",
    "OK, then refund it please.",
)


def check_first_and_last(FirstAndLast: type | None) -> None:
    """12, exercise 1: a memory that keeps the first turn and the last `last` turns."""
    exercise = "Exercise 1"
    if FirstAndLast is None:
        return _not_attempted(exercise, "Write class FirstAndLast in the cell above.")
    for count, last in [(0, 2), (1, 2), (2, 2), (3, 2), (5, 2), (6, 1), (6, 0), (4, 3), (4, 10)]:
        turns = _numbered_turns(count)
        memory = _instance(exercise, FirstAndLast, last)
        got = _which_turns(_run(exercise, f"FirstAndLast({last}).history(...)", memory.history, _TurnsOnly(turns)),
                           turns)
        expected = sorted({1, *range(max(1, count - last + 1), count + 1)} & set(range(1, count + 1)))
        if got != expected:
            why = ""
            if isinstance(got, list) and len(got) != len(set(got)):
                why = " A turn that is both the first and among the last is given once."
            elif isinstance(got, list) and last == 0 and len(got) > 1:
                why = " With last=0 only the first turn is kept: careful, turns[-0:] is the whole list."
            elif isinstance(got, list) and got != sorted(got):
                why = " Oldest first: the model reads the conversation in the order it happened."
            elif isinstance(got, list) and count and 1 not in got:
                why = " Turn 1 is missing: it is where a customer says who they are and which order it is."
            _fail(exercise, f"with {count} turn{'' if count == 1 else 's'} and last={last} it gave turns {got}; "
                            f"expected {expected}.{why}")
    # In a real session on the classroom model: turn 5 needs the order and the fault from turn 1.
    from .agent import ReActAgent
    from .llm_client import LlmClient
    from .session import Session
    from .shop import shop_registry

    shop = _fresh_shop()
    session = Session(ReActAgent(LlmClient.classroom(), shop_registry(shop)), memory=_instance(exercise, FirstAndLast, 1))
    for question in FIVE_TURN_CONVERSATION:
        _run(exercise, f"session.ask({question!r})", session.ask, question)
    if [r["orderId"] for r in shop.refunds()] != ["88231"]:
        _fail(exercise, "in a five-turn session with FirstAndLast(1), the refund asked for in turn 5 was not "
                        f"written; the last run was given: {session.last_history}")
    return _passed(exercise, "the first turn and the last ones, each once, oldest first; in a five-turn session "
                             "turn 5 still knew the order and the fault from turn 1, and the refund went through.")


def _token_window_turns() -> list:
    from .session_store import Turn

    texts = [
        ("Hi, my order is 88231.", "Order 88231 (比特 S10 Pro 扫地机) was signed for on 2026-06-22."),
        ("它现在到哪了？", "订单 88231 由顺丰速运配送，运单号 SF1234567890，最新：2026-06-22 11:35:00 快件已由本人签收。"),
        ("Thanks!", "You're welcome."),
        ("What is your exchange policy?", "先提交换货申请，售后检测确认后将商品寄回，仓库收到退件后 48 小时内发出同型号新品。"),
        ("ok", "Anything else?"),
        ("那帮我退款吧，扫地机充不进电了", "已为您提交退款申请，退款单号 RF202606300001，预计 1-3 个工作日到账。"),
    ]
    return [Turn(q, a, number=n) for n, (q, a) in enumerate(texts, start=1)]


def _expected_token_window(turns: list, budget: int) -> list:
    from .session import message_tokens

    kept: list = []
    for turn in reversed(turns):
        if message_tokens([m for t in [turn, *kept] for m in t.messages()]) > budget:
            break
        kept.insert(0, turn)
    return [turn.number for turn in kept]


def check_token_window(TokenWindow: type | None) -> None:
    """12, exercise 2: a memory that keeps as many of the latest whole turns as fit a token budget."""
    exercise = "Exercise 2"
    if TokenWindow is None:
        return _not_attempted(exercise, "Write class TokenWindow in the cell above.")
    from .session import message_tokens

    turns = _token_window_turns()
    sizes = [message_tokens(turn.messages()) for turn in turns]
    # Every budget where the answer changes, and one token either side of it.
    edges = {0, sum(sizes) + 50}
    for start in range(len(turns)):
        cost = message_tokens([m for t in turns[start:] for m in t.messages()])
        edges |= {cost - 1, cost, cost + 1}
    for budget in sorted(b for b in edges if b >= 0):
        memory = _instance(exercise, TokenWindow, budget)
        messages = _run(exercise, f"TokenWindow({budget}).history(...)", memory.history, _TurnsOnly(turns))
        got = _which_turns(messages, turns)
        expected = _expected_token_window(turns, budget)
        if got == expected:
            continue
        why = ""
        if isinstance(got, list) and got:
            cost = message_tokens(messages)
            if cost > budget:
                why = f" Those messages cost {cost} tokens (message_tokens), over the budget."
            elif got != sorted(got):
                why = " Oldest first: the model reads the conversation in the order it happened."
            elif got != list(range(got[0], got[-1] + 1)) or got[-1] != len(turns):
                why = (" Keep the latest turns without gaps: once a turn does not fit, the older ones are dropped"
                       " too (a conversation with a hole in it reads wrong).")
            else:
                why = " Count tokens with message_tokens(messages), not characters: Chinese and English differ."
        _fail(exercise, f"with a budget of {budget} tokens it kept turns {got}; expected {expected} "
                        f"(the six turns cost {sizes} tokens each).{why}")
    return _passed(exercise, f"{len(edges)} budgets, each right at a turn's edge or next to it: the latest whole turns "
                             "that fit, oldest first, never over the budget.")


# -- 13 · Context engineering ---------------------------------------------------------------------
def _parcel(tracking_no: str, traces: list[tuple[str, str]], carrier: str = "顺丰速运", status: str = "运输中") -> str:
    """A queryLogistics Observation in the shop's own shape."""
    return json.dumps({"trackingNo": tracking_no, "carrier": carrier, "status": status,
                       "traces": [{"time": t, "desc": d} for t, d in traces]}, ensure_ascii=False, separators=(",", ":"))


def _logistics_cases() -> list[tuple[str, str]]:
    """(Observation, what it is): the shop's real results, then parcels whose traces come in other orders."""
    from .shop import shop_registry

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
    from .shop import shop_registry

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
    from .context_budget import request_tokens

    for start in range(len(turns) + 1):
        messages = [system, *(m for turn in turns[start:] for m in turn), request]
        if request_tokens(messages) <= budget:
            return messages
    return None


def check_trim_to_budget(trim_to_budget: Callable[[list[dict], int], list[dict]] | None) -> None:
    """13, exercise 2: drop whole turns, oldest first, until the request fits; raise when nothing fits."""
    exercise = "Exercise 2"
    if trim_to_budget is None:
        return _not_attempted(exercise, "Write def trim_to_budget(messages, budget) in the cell above.")
    if not callable(trim_to_budget):
        _fail(exercise, f"trim_to_budget should be a function, got {type(trim_to_budget).__name__}")
    from .context_budget import request_tokens
    from .errors import ContextBudgetError

    system, turns, request = _trim_conversation()
    whole = [system, *(m for turn in turns for m in turn), request]
    smallest = request_tokens([system, request])
    sizes = [request_tokens([system, *(m for turn in turns[k:] for m in turn), request]) for k in range(len(turns))]
    budgets = [sizes[0] + 50, sizes[0] - 1, sizes[1] - 1, sizes[2] - 1, sizes[3] - 1, smallest]
    for budget in budgets:
        given = json.loads(json.dumps(whole))
        got = _run(exercise, f"trim_to_budget(messages, {budget})", trim_to_budget, given, budget)
        if given != whole:
            _fail(exercise, "trim_to_budget changed the list it was given: build a new list (the agent's own "
                            "conversation must stay whole; only what is sent is trimmed)")
        if not isinstance(got, list):
            _fail(exercise, f"trim_to_budget returned {type(got).__name__}, expected a list of messages")
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


# -- 14 · Streaming -------------------------------------------------------------------------------
STREAMED_STEP = ("Thought: The customer wants the parcel; I need the tracking number first.\n"
                 "Action: queryOrder\nAction Input: 88231\n")
RUN_ON = STREAMED_STEP + 'Observation: {"status": "lost at sea"}\nThought: done\nFinal Answer: It is lost.'
CUT_STREAM_TEXTS = [
    # (text, stop strings, what it is)
    (RUN_ON, ["Observation:"], "a step that runs on into an invented Observation"),
    (STREAMED_STEP + "Observed: the order exists.\nObservation: x", ["Observation:"],
     "'Observed' first, which starts like the stop string and is not it"),
    ("Thought: 先查订单。\nAction: queryOrder\nAction Input: 88231\nObservation: 已签收", ["Observation:"],
     "a Chinese step"),
    (STREAMED_STEP, ["Observation:"], "a step with no stop string in it"),
    ("Thought: I know it.\nFinal Answer: signed\nObservation: x", ["Observation:", "\nFinal"],
     "two stop strings, the second one first in the text"),
]


def _pieces_of(text: str, cuts: tuple[int, ...]) -> list[str]:
    from itertools import pairwise

    points = [0, *cuts, len(text)]
    return [text[a:b] for a, b in pairwise(points)]


class _Arriving:
    """Pieces handed out one at a time, as a stream delivers them; it counts how many were taken, and
    refuses to be read past `last` (the piece that completes a stop string)."""

    def __init__(self, pieces: list[str], last: int | None = None):
        self.pieces, self.last, self.taken = pieces, last, 0

    def __iter__(self):
        for piece in self.pieces:
            if self.last is not None and self.taken > self.last:
                raise ExerciseFailed("read past the stop")
            self.taken += 1
            yield piece


def check_cut_stream(cut_stream: Callable | None) -> None:
    """14, exercise 1: stop strings applied to text that arrives in pieces."""
    exercise = "Exercise 1"
    if cut_stream is None:
        return _not_attempted(exercise, "Write def cut_stream(pieces, stop) in the cell above.")
    if not callable(cut_stream):
        _fail(exercise, f"cut_stream should be a function, got {type(cut_stream).__name__}")
    from .llm_client import cut_at_stop

    def run(pieces, stop, what):
        out = _run(exercise, f"cut_stream on {what}", lambda: list(cut_stream(pieces, stop)))
        if not all(isinstance(piece, str) for piece in out):
            _fail(exercise, f"on {what} it yielded {out!r}: yield the text, as strings")
        return out

    # 1. The same text as the whole reply cut at once, wherever the pieces were split.
    checked = 0
    for text, stop, what in CUT_STREAM_TEXTS:
        expected = cut_at_stop(text, stop)[0]
        at = min((text.find(s) for s in stop if s in text), default=len(text) // 2)
        splits = [(i,) for i in range(len(text) + 1)] + [(i, j) for i in range(at, at + 13) for j in range(i, at + 13)
                                                          if j <= len(text)]
        for cuts in splits:
            pieces = _pieces_of(text, cuts)
            got = "".join(run(pieces, stop, what))
            checked += 1
            if got != expected:
                where = " | ".join(repr(p) for p in pieces)
                _fail(exercise, f"on {what}, cut into the pieces {where}, it gave {got!r}; the whole reply cut "
                                f"at {stop} is {expected!r}" + (
                                    " (a stop string split across two pieces must still be found)"
                                    if any(s in got for s in stop) or len(got) > len(expected) else ""))
    # 2. At once: a piece that cannot be the start of a stop string comes out before the next is read.
    first = "Thought: The customer wants the parcel."
    arriving = _Arriving([first, "\nAction: queryOrder", "\nAction Input: 88231\n"])
    stream = iter(_run(exercise, "cut_stream", cut_stream, arriving, ["Observation:"]))
    out = _run(exercise, "the first next() on cut_stream", next, stream, None)
    if out != first or arriving.taken != 1:
        _fail(exercise, f"with the pieces {arriving.pieces}, the first thing it yielded was {out!r} after reading "
                        f"{arriving.taken} piece(s); expected {first!r} after reading one: nothing in it can be the "
                        "start of 'Observation:', so the reader should see it at once (hold back only what could be)")
    # 3. It stops reading once it has found the stop string.
    pieces = ["Action Input: 88231\nObserv", "ation: {\"status\": \"lost\"}", "\nThought: done", "\nFinal Answer: x"]
    arriving = _Arriving(pieces, last=1)
    try:
        got = "".join(_run(exercise, "cut_stream", lambda: list(cut_stream(arriving, ["Observation:"]))))
    except ExerciseFailed as exc:
        if "read past the stop" not in str(exc):
            raise
        _fail(exercise, "after the stop string was complete (in the second piece) it read a third piece: stop "
                        "reading there, as the client closes the connection (the server may stop generating)")
    if got != "Action Input: 88231\n":
        _fail(exercise, f"with the pieces {pieces} it gave {got!r}; expected 'Action Input: 88231\\n'")
    return _passed(exercise, f"{checked} ways of cutting {len(CUT_STREAM_TEXTS)} replies into pieces, each cut as "
                             "the whole reply is; text that cannot start a stop string comes out at once, and "
                             "reading stops at the stop string.")


def _chunk(delta: dict | None, finish_reason: str | None = None, usage: Any = "absent") -> dict:
    data: dict = {"id": "chatcmpl-x", "object": "chat.completion.chunk", "model": "m",
                  "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}
    if usage != "absent":
        data["usage"] = usage
    return data


def _stream_cases() -> list[tuple[str, list[dict], tuple[str, str | None, dict | None]]]:
    """(what, chunks, (text, finish_reason, usage)) for the exercise: real streams of the classroom model, and
    the shapes other servers send."""
    from .llm_client import LlmClient

    cases = []
    llm = LlmClient.classroom()
    messages = [{"role": "user", "content": "Hello!"}]
    for include_usage in (True, False):
        with llm.stream(messages, include_usage=include_usage) as stream:
            reply = stream.finish()
        what = "the classroom model's stream " + ("with usage asked for" if include_usage else "without usage")
        cases.append((what, reply.raw["chunks"], (reply.text, reply.finish_reason, reply.usage or None)))
    usage = {"prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16}
    cases.append(("a stream whose usage comes with its finish_reason, in the same chunk (as some servers send it)",
                  [_chunk({"role": "assistant", "content": None}), _chunk({"content": "Final Answer:"}),
                   _chunk({"content": " signed"}), _chunk({}, "stop", usage)],
                  ("Final Answer: signed", "stop", usage)))
    cases.append(("a stream cut at max_tokens, usage: null in every chunk but the last",
                  [_chunk({"role": "assistant", "content": ""}, usage=None), _chunk({"content": "Thought: I"}, usage=None),
                   _chunk({"content": " need"}, usage=None), _chunk({}, "length", usage=None),
                   _chunk(None, usage=usage)],
                  ("Thought: I need", "length", usage)))
    cases.append(("a stream with no usage and content: null in its role chunk",
                  [_chunk({"role": "assistant", "content": None}), _chunk({"content": "好的"}), _chunk({}, "stop")],
                  ("好的", "stop", None)))
    return cases


def check_read_chunks(read_chunks: Callable | None) -> None:
    """14, exercise 2: text, finish_reason and usage from the chunks of one streamed reply."""
    exercise = "Exercise 2"
    if read_chunks is None:
        return _not_attempted(exercise, "Write def read_chunks(chunks) in the cell above.")
    if not callable(read_chunks):
        _fail(exercise, f"read_chunks should be a function, got {type(read_chunks).__name__}")
    cases = _stream_cases()
    for what, chunks, expected in cases:
        got = _run(exercise, f"read_chunks on {what}", read_chunks, [dict(c) for c in chunks])
        if not isinstance(got, tuple) or len(got) != 3:
            _fail(exercise, f"on {what} it returned {got!r}: return (text, finish_reason, usage)")
        names = ("text", "finish_reason", "usage")
        for name, mine, right in zip(names, got, expected):
            if mine != right:
                why = ""
                if name == "usage" and right is None:
                    why = ": the server sent none, so say so (None); never make counts up"
                elif name == "usage":
                    why = ": it is in the last chunk that carries a usage (often one with no choices)"
                elif name == "finish_reason":
                    why = ": it comes in the chunk that has it, not always the last chunk"
                _fail(exercise, f"on {what} it read {name}={mine!r}, expected {right!r}{why}")
    return _passed(exercise, f"{len(cases)} streams read: the text joined, finish_reason from the chunk that has it, "
                             "and the usage from the final chunk, or None when the server sent none.")


# -- 15 · Real tools -------------------------------------------------------------------------------------
# (expression, value): what a safe evaluator must compute.
SAFE_EVAL_VALUES = [
    ("2 + 3 * 4", 14), ("(2 + 3) * 4", 20), ("-(2 - 5)", 3), ("- -4", 4), ("7 / 2", 3.5), ("(1 + 2) ** 3", 27),
    ("2 ** -1", 0.5), ("2 ** 100", 2**100), ("1999 * 0.85", 1699.15), ("10 - 2 - 3", 5),
]
# (expression, what it is): what a safe evaluator must refuse with ValueError, quickly, running nothing.
SAFE_EVAL_REFUSALS = [
    ("len('abc')", "a function call"),
    ("__import__('os').getcwd()", "a call reaching the operating system"),
    ("().__class__", "an attribute"),
    ("x + 1", "a name"),
    ("'ab' * 3", "text"),
    ("True + 1", "True (a bool is not a number here)"),
    ("[1, 2]", "a list"),
    ("1 if 2 else 3", "an if-expression"),
    ("3 > 2", "a comparison"),
    ("6 % 4", "the operator %, which is not in the list"),
    ("1 / 0", "a division by zero"),
    ("2 ** 101", "an exponent over 100"),
    ("10 ** 1000", "an exponent over 100 (a 1001-digit number)"),
]


def check_safe_eval(safe_eval: Callable[[str], float] | None) -> None:
    """15, exercise 1: an arithmetic evaluator that walks the ast with a whitelist, never `eval`."""
    exercise = "Exercise 1"
    if safe_eval is None:
        return _not_attempted(exercise, "Write def safe_eval(text) in the cell above.")
    if not callable(safe_eval):
        _fail(exercise, f"safe_eval should be a function, got {type(safe_eval).__name__}")
    import math

    for text, expected in SAFE_EVAL_VALUES:
        got = _run(exercise, f"safe_eval({text!r})", safe_eval, text)
        if isinstance(got, bool) or not isinstance(got, (int, float)) or not math.isclose(got, expected,
                                                                                         rel_tol=1e-9):
            _fail(exercise, f"safe_eval({text!r}) returned {got!r}; it should be {expected!r}")
    for text, what in SAFE_EVAL_REFUSALS:
        try:
            got = safe_eval(text)
        except ValueError:
            continue
        except Exception as exc:  # noqa: BLE001 - the learner's bug, reported as the check's failure
            _fail(exercise, f"safe_eval({text!r}) raised {type(exc).__name__}: {exc}; for {what} it should "
                            "raise ValueError with a clear message, so the tool can turn it into an Observation")
        shown = repr(got) if len(repr(got)) <= 60 else f"a {len(str(got))}-digit number"
        _fail(exercise, f"safe_eval({text!r}) returned {shown}: {what} must be refused with ValueError, not "
                        "computed" + (" (is it calling eval?)" if what.startswith("a ") and "call" in what else ""))
    return _passed(exercise, f"{len(SAFE_EVAL_VALUES)} expressions computed, {len(SAFE_EVAL_REFUSALS)} refused "
                             "with ValueError: calls, names, attributes, text, huge powers and division by zero.")


def _workspace_traps(root: Any) -> tuple[Any, list[tuple[str, bool, str]]]:
    """A workspace with traps around it, and (path, inside?, what it is) for each case the check asks about."""
    from pathlib import Path

    root = Path(root)
    workspace, outside, evil = root / "workspace", root / "outside", root / "workspace-evil"
    for folder in (workspace / "notes", outside, evil):
        folder.mkdir(parents=True)
    (workspace / "notes" / "todo.txt").write_text("mine")
    (outside / "secret.txt").write_text("not yours")
    (evil / "x.txt").write_text("not yours either")
    (workspace / "shared").symlink_to(outside, target_is_directory=True)
    (workspace / "secret-link.txt").symlink_to(outside / "secret.txt")
    (workspace / "alias").symlink_to(workspace / "notes", target_is_directory=True)
    (workspace / "dangling.txt").symlink_to(outside / "not-there-yet.txt")
    cases = [
        ("notes/todo.txt", True, "a file inside"),
        ("notes/new.txt", True, "a new file inside (it does not exist yet)"),
        ("./notes//todo.txt", True, "a file inside, written with ./ and //"),
        ("notes", True, "a folder inside"),
        ("../outside/secret.txt", False, "a path that goes up with .."),
        ("notes/../../outside/secret.txt", False, "a path that goes up with .. in the middle"),
        ("../workspace-evil/x.txt", False, "a folder outside whose name starts with the workspace's name"),
        ("/etc/passwd", False, "an absolute path"),
        (str(outside / "secret.txt"), False, "an absolute path to a file outside"),
        ("shared/secret.txt", False, "a path through a link to a folder outside"),
        ("secret-link.txt", False, "a link to a file outside"),
        ("dangling.txt", False, "a link to a file outside that does not exist yet"),
        ("notes/../notes/todo.txt", False, "a path with .. in it, even one that comes back inside"),
        ("alias/todo.txt", False, "a path through a link, even one that points inside"),
    ]
    return workspace, cases


def check_inside_workspace(inside_workspace: Callable[[Any, str], bool] | None) -> None:
    """15, exercise 2: the sandbox's path check, on a workspace with traps (links, .., a look-alike folder)."""
    exercise = "Exercise 2"
    if inside_workspace is None:
        return _not_attempted(exercise, "Write def inside_workspace(workspace, path) in the cell above.")
    if not callable(inside_workspace):
        _fail(exercise, f"inside_workspace should be a function, got {type(inside_workspace).__name__}")
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        workspace, cases = _workspace_traps(scratch)
        for path, expected, what in cases:
            got = _run(exercise, f"inside_workspace(workspace, {path!r})", inside_workspace, workspace, path)
            if not isinstance(got, bool):
                _fail(exercise, f"inside_workspace(workspace, {path!r}) returned {got!r}; return True or False")
            if got != expected:
                shown = path.replace(scratch, "/tmp/...")  # the temporary folder's name changes run to run
                verdict = "allowed" if got else "refused"
                _fail(exercise, f"{shown!r} ({what}) is {verdict}; it should be "
                                f"{'allowed' if expected else 'refused'}")
    return _passed(exercise, f"{len(cases)} paths judged like the package's file tools: no '..', no absolute "
                             "path, no link on the way, wherever it points.")


# -- 16 · Knowledge -------------------------------------------------------------------------------
_NO_PUNCTUATION = "签收次日起十五天内出现性能故障的属于质量问题经售后检测确认后可以退货也可以换货往返运费由商家承担"

# (text, size, overlap, what it is): the check compares the learner's windows with `_windows` on each.
WINDOW_CASES = [
    (_NO_PUNCTUATION, 20, 5, "48 Chinese characters, size 20, overlap 5"),
    (_NO_PUNCTUATION, 20, 0, "the same text with no overlap"),
    (_NO_PUNCTUATION[:35], 20, 5, "35 characters, size 20, overlap 5: the second window reaches the end"),
    (_NO_PUNCTUATION[:20], 20, 5, "a text exactly one window long"),
    (_NO_PUNCTUATION[:21], 20, 5, "a text one character longer than a window"),
    ("Within 7 days from the day after delivery, an item can be returned without giving a reason.", 30, 10,
     "an English sentence, size 30, overlap 10"),
    ("", 20, 5, "an empty text"),
]


def _windows(text: str, size: int, overlap: int) -> list[str]:
    """Windows of `size` characters, each starting `size - overlap` after the last, until one reaches the end."""
    pieces: list[str] = []
    start = 0
    while start < len(text):
        pieces.append(text[start : start + size])
        if start + size >= len(text):
            break
        start += size - overlap
    return pieces


def check_overlapping_windows(windows: Callable[[str, int, int], list[str]] | None) -> None:
    """16, exercise 1: lesson 16's fixed-size chunks, with an overlap."""
    exercise = "Exercise 1"
    if windows is None:
        return _not_attempted(exercise, "Write def windows(text, size, overlap) in the cell above.")
    if not callable(windows):
        _fail(exercise, f"windows should be a function, got {type(windows).__name__}")
    for text, size, overlap, what in WINDOW_CASES:
        mine = _run(exercise, f"windows(text, {size}, {overlap}) on {what}", windows, text, size, overlap)
        expected = _windows(text, size, overlap)
        if not isinstance(mine, list) or not all(isinstance(piece, str) for piece in mine):
            _fail(exercise, f"windows should return a list of strings, got {mine!r} on {what}")
        if mine == expected:
            continue
        why = ""
        if any(len(piece) > size for piece in mine):
            why = f" A window is longer than size ({size})."
        elif len(mine) > len(expected) and mine[: len(expected)] == expected:
            why = " The last window lies inside the one before: stop once a window reaches the end of the text."
        elif len(mine) > 1 and text.find(mine[1]) != size - overlap:
            why = f" Each window starts size - overlap = {size - overlap} characters after the one before."
        elif len(mine) < len(expected):
            why = " The windows stop before the end of the text: the last one must reach it."
        _fail(exercise, f"on {what}, expected {expected!r}, got {mine!r}.{why}")
    return _passed(exercise, f"{len(WINDOW_CASES)} texts cut into windows that overlap by exactly the overlap, and "
                             "no window is wasted at the end.")


def _coverage_order(question: str, passages: list) -> list:
    """Passages by how many distinct question terms their section and content hold; ties keep their order."""
    from .shop.knowledge import query_terms, search_terms

    terms = query_terms(question)

    def held(passage: Any) -> int:
        words = set(search_terms(f"{passage.section} {passage.content}"))
        return sum(term in words for term in terms)

    ranked = sorted(range(len(passages)), key=lambda i: (-held(passages[i]), i))
    return [passages[i] for i in ranked]


def rerank_cases() -> list[tuple[str, list, str]]:
    """(question, passages, what it is): the real shop's bm25 results for one question, and small made-up ones."""
    from .shop import Shop
    from .shop.knowledge import Passage
    from .shop.policies import POLICY_FOLDER

    with Shop(":memory:", clock=fixed_clock(COURSE_NOW)) as shop:
        shop.import_documents(POLICY_FOLDER)
        opened = shop.search_passages("Can I return an opened item without a reason?", 5, scope="documents")

    def made_up(*items: tuple[str, str, float]) -> list:
        return [Passage("Returns", content, score, score, "made-up.md", section, n)
                for n, (section, content, score) in enumerate(items, start=1)]

    return [
        ("Can I return an opened item without a reason?", opened, "bm25's five best for the opened-item question"),
        ("engraved items returned reason", made_up(
            ("", "engraved engraved engraved engraved", 9.0),
            ("", "returned items", 7.0),
            ("", "engraved items cannot be returned without a reason", 5.0)),
         "a passage that repeats one word against one that holds them all"),
        ("包邮 运费", made_up(
            ("发货时效", "现货商品 48 小时内发货。", 3.0),
            ("运费", "不满 99 元收取运费 8 元。", 2.5),
            ("包邮门槛", "满 99 元免运费。", 2.0)),
         "a term found only in a section heading"),
        ("退款 到账", made_up(
            ("发票", "订单退款后发票作废。", 1.0),
            ("取消", "取消后款项全额退款。", 4.0),
            ("退款到账", "审核通过后 1-3 个工作日原路退回。", 2.0)),
         "two passages with the same count, in the order they came"),
    ]


def check_coverage_rerank(my_rerank: Callable[[str, list], list] | None) -> None:
    """16, exercise 2: re-rank search results by how many of the question's terms each passage holds."""
    exercise = "Exercise 2"
    if my_rerank is None:
        return _not_attempted(exercise, "Write def my_rerank(question, passages) in the cell above.")
    if not callable(my_rerank):
        _fail(exercise, f"my_rerank should be a function, got {type(my_rerank).__name__}")
    for question, passages, what in rerank_cases():
        given = list(passages)
        mine = _run(exercise, f"my_rerank({question!r}, ...) on {what}", my_rerank, question, given)
        expected = _coverage_order(question, passages)
        mine = list(mine) if isinstance(mine, (list, tuple)) else mine
        if not isinstance(mine, list) or sorted(map(id, mine)) != sorted(map(id, passages)):
            _fail(exercise, f"on {what}, my_rerank should return every passage it was given, once each, in a new "
                            f"order; got {mine!r}")
        if mine == expected:
            continue

        def shown(order: list) -> list[str]:
            return [f"{p.section or p.content[:24]}" for p in order]

        why = ""
        if what.startswith("bm25") and shown(mine)[0] != shown(expected)[0]:
            why = (" Count whole terms, as the index splits them (search_terms): 'items' is not 'item', and "
                   "'returned' is not 'return'.")
        elif "repeats" in what:
            why = " Count each of the question's terms once, however often the passage repeats it."
        elif "heading" in what:
            why = " A term in the passage's section heading counts too."
        elif "same count" in what:
            why = " Passages with the same count keep the order they came in (bm25's), whatever their scores."
        _fail(exercise, f"on {what} ({question!r}), expected {shown(expected)}, got {shown(mine)}.{why}")
    return _passed(exercise, "Each list is in order of how many of the question's terms a passage holds; the "
                             "opened-item question now starts with the Conditions section.")


# -- 18 · Evaluation ------------------------------------------------------------------------------
# Exercise 1's request: order 88234 was signed for 3 days before the course's day, within the 7-day
# no-reason window, so a right run checks the order, the date and the policy, then writes the refund.
EVAL_EXERCISE_REQUEST = "Order 88234 arrived three days ago and I have not used it. Please refund it."


def check_eval_task(my_task: Any) -> None:
    """18, exercise 1: an EvalTask for EVAL_EXERCISE_REQUEST that the careful model's run passes and that
    fails each wrong run: no refund written, a refund without the checks, the wrong order, an invented id."""
    from dataclasses import replace

    from .evaluation import EvalTask, RunOutcome, ToolUse, grade
    from .llm_client import LlmClient
    from .protocol_comparison import run_on_fresh_shop

    exercise = "Exercise 1"
    if my_task is None:
        return _not_attempted(exercise, "Set my_task = EvalTask(...) in the cell above.")
    if not isinstance(my_task, EvalTask):
        _fail(exercise, f"my_task should be an EvalTask(name, question, facts, lang=..., tools=..., refunds=...), "
                        f"got {type(my_task).__name__}")
    if my_task.question != EVAL_EXERCISE_REQUEST:
        _fail(exercise, f"the question should be the request above, exactly: {EVAL_EXERCISE_REQUEST!r}")
    if my_task.lang != "en":
        _fail(exercise, f"lang says which language the customer wrote in, and expects the answer in: 'en' here, "
                        f"got {my_task.lang!r}")

    # The careful classroom model gets it right (tests/test_exercises.py shows it): its run must pass.
    result, refunds = run_on_fresh_shop(my_task.question, "text", LlmClient.classroom())
    right = RunOutcome.from_run(result, refunds)
    for name, check in grade(my_task, right).items():
        if not check.passed:
            _fail(exercise, f"the careful model's run is right (it called {' → '.join(u.name for u in right.tool_calls)}, "
                            f"wrote refund {', '.join(right.refunds)} and answered {right.answer!r}), but it fails "
                            f"your task's {name} check: {check.detail}. Fix what your task expects there.")

    refund_call = next(use for use in right.tool_calls if use.name == "applyRefund")
    lookups = tuple(use for use in right.tool_calls if use.name != "applyRefund")
    wrong_runs = (
        (replace(right, tool_calls=lookups, refunds=(),
                 answer="Order 88234 is within the 7-day no-reason return period, so it can be refunded."),
         "a run that never wrote the refund (no applyRefund call, no row in the refunds table)",
         "Say which refund the database must hold (refunds) and which tools a right run calls (tools)"),
        (replace(right, tool_calls=(refund_call,)),
         "a run that refunded without looking up the order, the date and the policy",
         "List in tools every call a right run makes, not only the one that writes"),
        (replace(right, tool_calls=(*lookups, ToolUse("applyRefund", '{"orderId": "88231", "reason": "unused"}')),
                 refunds=("88231",)),
         "a run that refunded order 88231 instead of 88234",
         "Say which order's refund the database must hold (refunds)"),
        (replace(right, answer=right.answer.replace("RF202606300001", "RF20260630001")),
         "a run whose answer gives a refund id the shop never issued (RF20260630001)",
         "Put in facts what only the shop can give: the refund id it issued"),
    )
    for outcome, what, fix in wrong_runs:
        if all(check.passed for check in grade(my_task, outcome).values()):
            _fail(exercise, f"your task passes {what}. {fix}.")
    return _passed(exercise, "the careful model's run passes your task, and each wrong run fails it: no refund "
                             "written, a refund without the checks, the wrong order, an invented refund id.")


# Exercise 2: the variants to predict, and what each does on the English refund with text ReAct.
VARIANT_BEHAVIOUR = {
    "classroom-no-final": "it calls the right tools and its last reply holds the refund id, but in plain prose: "
                          "no 'Final Answer:' line",
    "classroom-wrong-tool": "its first call goes to a tool that does not exist; it reads the error, corrects "
                            "itself and carries on to the right refund and answer",
    "classroom-loop": "it asks for the order again every round, whatever it is told, until the step cap; each "
                      "reply is a well-formed step",
    "classroom-forgets-action": "its first reply is a Thought with no Action, which lesson 06's strict loop "
                                "takes as the answer (the fallback): the run ends there",
}


def check_variant_failures(predicted_failures: dict | None) -> None:
    """18, exercise 2: which of the four checks each variant fails on the English refund (text ReAct),
    measured on the spot."""
    from .evaluation import CHECKS, evaluate
    from .llm_client import LlmClient

    exercise = "Exercise 2"
    if predicted_failures is None:
        return _not_attempted(exercise, "Set predicted_failures to a dict: variant -> the set of checks it fails.")
    if not isinstance(predicted_failures, dict) or set(predicted_failures) != set(VARIANT_BEHAVIOUR):
        _fail(exercise, f"predicted_failures should be a dict with the keys {', '.join(VARIANT_BEHAVIOUR)}, "
                        f"got {predicted_failures!r}")
    for model, predicted in predicted_failures.items():
        if not isinstance(predicted, (set, frozenset, list, tuple)) or not set(predicted) <= set(CHECKS):
            _fail(exercise, f"{model}: give a set of check names from {', '.join(CHECKS)} (set() for none), "
                            f"got {predicted!r}")
    for model, behaviour in VARIANT_BEHAVIOUR.items():
        report = evaluate(LlmClient.classroom(model), names=["refund"], langs=["en"], progress=False)
        failed = set(report.results[0].failed_checks)
        predicted = set(predicted_failures[model])
        if predicted != failed:
            missing, extra = sorted(failed - predicted, key=CHECKS.index), sorted(predicted - failed, key=CHECKS.index)
            says = "; ".join(part for part in (
                f"it also fails {', '.join(missing)}" if missing else "",
                f"it passes {', '.join(extra)}" if extra else "") if part)
            _fail(exercise, f"{model}: {says}. What it does: {behaviour}. Which checks read what went wrong?")
    return _passed(exercise, "each check reads one thing: a misstep in the calls fails tools alone, a reply in "
                             "the wrong shape fails format alone, and a run that never does the work fails the "
                             "tools, the database and the answer together.")




# -- 17 · Plan, reflect, skills --------------------------------------------------------------------------
_PLAN_LINE = re.compile(r"^\s*(?:\*\*)?(\d+)[.)](?:\*\*)?\s*(.*)$")


def _plan_lines(text: str) -> list[str]:
    """17, exercise 1's answer: the first numbered list, from 1, while the numbers go up; ValueError if none."""
    steps, last = [], 0
    for line in text.splitlines():
        match = _PLAN_LINE.match(line)
        if match is None:
            continue
        number = int(match.group(1))
        if (not steps and number != 1) or (steps and number <= last):
            if steps:
                break
            continue
        steps.append(match.group(2).replace("**", "").strip())
        last = number
    if not steps:
        raise ValueError("no numbered steps")
    return steps


PLAN_CASES = (
    ("1. 查询订单 88231 的物流\n2. 查询订单 88232 的物流", "a plain plan"),
    ("Here is the plan:\n1) Look up order 88231\n2) Track its parcel", "a sentence before the steps, and '1)'"),
    ("**1.** Look up order 88231\n**2.** Search the policy", "numbers in Markdown bold"),
    ("计划如下：\n   1. 查询订单 88231\n   2. 查询售后政策", "an indented list"),
    ("1. Look up order 88231\n2. Track its parcel\n\nIn short:\n1. Track 88231", "a second list after the plan"),
    ("I will look both orders up and then answer.", "a reply with no plan"),
)


def check_plan_parser(my_parse_plan: Callable[[str], list[str]] | None) -> None:
    """17, exercise 1: read a planner's numbered steps; no steps is a ValueError."""
    exercise = "Exercise 1"
    if my_parse_plan is None:
        return _not_attempted(exercise, "Write def my_parse_plan(text) in the cell above.")
    if not callable(my_parse_plan):
        _fail(exercise, f"my_parse_plan should be a function, got {type(my_parse_plan).__name__}")
    for text, what in PLAN_CASES:
        try:
            expected = _plan_lines(text)
        except ValueError:
            expected = None
        try:
            mine = my_parse_plan(text)
        except ValueError:
            mine = None
        except Exception as exc:  # noqa: BLE001 - the learner's bug, reported as the check's failure
            _fail(exercise, f"on {what}, my_parse_plan raised {type(exc).__name__}: {exc} (only ValueError is expected)")
        if expected is None and mine is not None:
            _fail(exercise, f"on {what} ({text!r}) it returned {mine!r}: with no numbered steps, raise ValueError, so "
                            "the planner can be told its plan could not be read")
        if expected is not None and mine is None:
            _fail(exercise, f"on {what} it raised ValueError, but the text has the steps {expected!r}")
        if mine != expected:
            why = ""
            if isinstance(mine, list) and any("**" in str(step) for step in mine):
                why = " Take the Markdown '**' out of the steps."
            elif isinstance(mine, list) and len(mine) > len(expected):
                why = " Only the first list counts, while the numbers go up: a second list after it is not part of the plan."
            _fail(exercise, f"on {what}, expected {expected!r}, got {mine!r}.{why}")
    return _passed(exercise, f"{len(PLAN_CASES)} replies read: the plan found whatever surrounds it, and no plan is a "
                             "ValueError the planner can be shown.")


_ORDER_ID = re.compile(r"(?<!\d)\d{5}(?!\d)")
_JOINER = re.compile(r"另外|还有|\balso\b", re.IGNORECASE)

ROUTER_CASES = (
    ("订单 88231 和 88232 的物流都查一下，另外七天无理由退货怎么算运费？", "two orders and a policy question"),
    ("订单 88231 的物流查一下，另外发票怎么开？", "one order, then '另外' and another question"),
    ("Where is order 88232? Also, how do I get an invoice?", "'Also' with a capital A"),
    ("Refund 88231 and 88234 please", "two order ids in English"),
    ("订单 88231 的快递到哪了？", "one order, one question"),
    ("订单 88231 还没到，88231 是上周买的", "the same order id twice"),
    ("Please look at the alsoran order 88231", "a word that only contains 'also'"),
    ("My phone is 13812345678. Where is 88231?", "a phone number and one order"),
)


def _several_parts(question: str) -> bool:
    return len(set(_ORDER_ID.findall(question))) >= 2 or _JOINER.search(question) is not None


def check_plan_rule(my_needs_plan: Callable[[str], bool] | None) -> None:
    """17, exercise 2: the router's rule for a request in several parts."""
    exercise = "Exercise 2"
    if my_needs_plan is None:
        return _not_attempted(exercise, "Write def my_needs_plan(question) in the cell above.")
    if not callable(my_needs_plan):
        _fail(exercise, f"my_needs_plan should be a function, got {type(my_needs_plan).__name__}")
    for question, what in ROUTER_CASES:
        mine = _run(exercise, f"my_needs_plan({question!r})", my_needs_plan, question)
        if not isinstance(mine, bool):
            _fail(exercise, f"my_needs_plan should return True or False, got {mine!r} on {what}")
        expected = _several_parts(question)
        if mine != expected:
            hints = {
                "the same order id twice": " Count different order ids: the same one twice is one order.",
                "a word that only contains 'also'": " Match 'also' as a whole word (\\b in a regex).",
                "a phone number and one order": " An order id is exactly five digits, not five digits inside a longer number.",
                "'Also' with a capital A": " Match the joining words in any case.",
            }
            _fail(exercise, f"on {what} ({question!r}) it said {mine}, expected {expected}.{hints.get(what, '')}")
    return _passed(exercise, f"{len(ROUTER_CASES)} requests routed: several orders or a joining word make a plan; the "
                             "same order twice, 'alsoran' and a phone number do not.")


# -- 19 · Serving -----------------------------------------------------------------------------------
# Exercise 1's streams: what the service sends, and what any Server-Sent Events reader must also handle (a
# keep-alive comment, data over two lines, an event with no name, Windows line ends).
SSE_EXERCISE_STREAMS = (
    ("the service's own stream",
     ('event: start\ndata: {"session_id": "s1", "query": "Where is order 88231?"}\n\n'
     'event: reply_delta\ndata: {"type": "reply_delta", "step": 1, "text": "Thought: "}\n\n'
     'event: end\ndata: {"answer": "It is on its way.", "reason": "final_answer"}\n\n')),
    ("a stream with a keep-alive comment between two events",
     ('event: tool_call\ndata: {"name": "queryOrder", "input": "88231"}\n\n: keep-alive\n\n'
     'event: observation\ndata: {"text": "signed"}\n\n')),
    ("an event whose data comes on two data: lines (joined with a newline, then read as JSON)",
     'event: observation\ndata: {"text":\ndata:  "two lines"}\n\n'),
    ("an event with no event: line (its name is then \"message\")",
     'data: {"note": "no name"}\n\n'),
    ("a stream with Windows line ends (\\r\\n)",
     'event: tool_call\r\ndata: {"name": "getCurrentTime"}\r\n\r\nevent: final\r\ndata: {"answer": "done"}\r\n\r\n'),
)


def read_sse_reference(text: str) -> list[tuple[str, dict]]:
    """The check's own reader: (event name, data as JSON) for each block of a Server-Sent Events text."""
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        name, data = "message", []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
        if data:
            events.append((name, json.loads("\n".join(data))))
    return events


def check_sse_reader(read_events: Callable[[str], list] | None) -> None:
    """19, exercise 1: read_events(text) -> [(event name, data dict), ...], for the streams above."""
    exercise = "Exercise 1"
    if read_events is None:
        return _not_attempted(exercise, "Define read_events(text) in the cell above.")
    if not callable(read_events):
        _fail(exercise, f"read_events should be a function of the stream's text, got {type(read_events).__name__}")
    for what, text in SSE_EXERCISE_STREAMS:
        got = _run(exercise, f"read_events on {what}", read_events, text)
        expected = read_sse_reference(text)
        try:
            got = [tuple(pair) for pair in got]
        except TypeError:
            _fail(exercise, f"read_events should return a list of (event, data) pairs, got {got!r}")
        if got != expected:
            _fail(exercise, f"on {what}:\n{text!r}\nread_events gave {got!r}, expected {expected!r}. Split the text "
                            "into blocks at blank lines; in a block, a line starting with ':' is a comment, "
                            "'event:' names the event (\"message\" if none), and the 'data:' lines, joined with "
                            "newlines, are the JSON.")
    return _passed(exercise, f"read_events reads all {len(SSE_EXERCISE_STREAMS)} streams: comments skipped, data "
                             "lines joined, unnamed events called \"message\", \\r\\n line ends too.")


def registry_with_a_broken_courier(shop, clock=None):
    """The shop's tools, but queryLogistics raises as a courier's API that is down would (lesson 19's tests and
    exercise 2): the loop must turn that into an error Observation, and the service still answer 200."""
    from .registry import ToolRegistry
    from .shop.tools import shop_tools
    from .tools import FunctionTool

    def courier_down(text: str) -> str:
        raise ConnectionError("the courier's tracking API did not answer")

    return ToolRegistry([
        FunctionTool(tool.name, tool.description, courier_down, parameters=tool.parameters)
        if tool.name == "queryLogistics" else tool
        for tool in shop_tools(shop, clock)
    ])


SERVING_EXERCISE_REQUESTS = (
    "malformed JSON", "no query field", "body over the limit", "GET on /agent/invoke", "unknown session_id",
    "no API key", "a tool raises mid-run",
)


def check_status_predictions(predicted_status: dict | None) -> None:
    """19, exercise 2: the status code the service answers each request of SERVING_EXERCISE_REQUESTS with.
    The check starts a service (an API key, a 2 KB body limit, queryLogistics broken) and sends them."""
    exercise = "Exercise 2"
    if predicted_status is None:
        return _not_attempted(exercise, "Set predicted_status = {...} in the cell above.")
    if not isinstance(predicted_status, dict) or set(predicted_status) != set(SERVING_EXERCISE_REQUESTS):
        _fail(exercise, f"predicted_status should be a dict with the keys {list(SERVING_EXERCISE_REQUESTS)}, "
                        f"each an HTTP status code (a whole number)")
    for name, status in predicted_status.items():
        if isinstance(status, bool) or not isinstance(status, int):
            _fail(exercise, f"{name!r}: predict a status code, a whole number such as 200, got {status!r}")
    answers = _ask_the_service()
    for name in SERVING_EXERCISE_REQUESTS:
        status, body = answers[name]
        if predicted_status[name] != status:
            said = body.get("error", {}).get("message") if isinstance(body, dict) else None
            why = f': "{said}"' if said else " (the run ended, and the trace holds the tool's error as an Observation)"
            _fail(exercise, f"{name}: you predicted {predicted_status[name]}, the service answered {status}{why}")
    return _passed(exercise, "every status as the service answered: the client's mistakes are 4xx with a JSON "
                             "error, and a tool that fails mid-run is an Observation inside a 200.")


def _ask_the_service() -> dict[str, tuple[int, Any]]:
    import requests

    from .llm_client import LlmClient
    from .serving import ServiceConfig, ServiceServer

    config = ServiceConfig(api_key="exercise-key", max_body_bytes=2048, session_store=":memory:", shop_db=":memory:",
                           now="2026-06-30T19:05:23", max_steps=6)
    key = {"Authorization": "Bearer exercise-key"}
    with ServiceServer(config, llm=LlmClient.classroom, tools=registry_with_a_broken_courier) as server:
        invoke = server.url + "/agent/invoke"
        sent = {
            "malformed JSON": lambda: requests.post(invoke, data='{"query": "Where is order 88231?"',
                                                    headers={**key, "Content-Type": "application/json"}),
            "no query field": lambda: requests.post(invoke, json={"question": "Where is order 88231?"}, headers=key),
            "body over the limit": lambda: requests.post(invoke, json={"query": "x" * 4000}, headers=key),
            "GET on /agent/invoke": lambda: requests.get(invoke, headers=key),
            "unknown session_id": lambda: requests.post(invoke, json={"query": "Hi", "session_id": "abc"}, headers=key),
            "no API key": lambda: requests.post(invoke, json={"query": "Where is order 88231?"}),
            "a tool raises mid-run": lambda: requests.post(invoke, json={"query": "Where is my parcel, order 88231?"},
                                                           headers=key, timeout=300),
        }
        answers = {}
        for name, send in sent.items():
            response = send()
            answers[name] = (response.status_code, response.json())
        return answers
