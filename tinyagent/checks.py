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
from typing import Any

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
