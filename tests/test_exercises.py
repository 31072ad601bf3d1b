"""The exercise checks of lessons 00-06 (tinyagent/checks.py): every check passes on its solution
(the same code as notebooks/solutions/) and fails on plausible wrong answers, and says "not attempted
yet" while the answer is still None."""

from __future__ import annotations

import contextlib
import difflib
import io
import json
import re
from dataclasses import dataclass

import pytest

from tinyagent import Action, LlmClient, Tool, build_system_prompt, detect_language, parse_step
from tinyagent.checks import (
    ExerciseFailed,
    check_anchored_final_answer,
    check_capped_registry,
    check_counting_llm,
    check_forgiving_query_order,
    check_invented_counter,
    check_missing_order_prediction,
    check_parcel_prediction,
    check_parser_stops_at_observation,
    check_pretended_calls,
    check_prompt_share,
    check_record_replay,
    check_suggesting_registry,
    check_toy_logistics_tool,
    check_unknown_model,
    classroom_only,
)
from tinyagent.settings import Settings

# -- the hand-written pieces of the lessons that the exercises build on ---------------------------


def to_json(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def error_json(message, **details):
    return json.dumps({"error": message, **details}, ensure_ascii=False)


class CarefulRegistry:  # lesson 02
    def __init__(self, tools=()):
        self.tools = {}
        for tool in tools:
            self.tools[tool.name] = tool

    def execute(self, action):
        if action is None or not action.tool_name.strip():
            return error_json("no tool name in the action")
        name = action.tool_name.strip()
        tool = self.tools.get(name)
        if tool is None:
            return error_json(f"unknown tool: {name}", available_tools=list(self.tools))
        try:
            output = tool.invoke(action.tool_input.strip())
        except Exception as error:  # noqa: BLE001 - as in the lesson
            return error_json(f"tool {name} failed: {type(error).__name__}: {error}")
        return output if isinstance(output, str) else error_json(f"tool {name} returned a non-string")


ORDER_88231 = {
    "orderId": "88231", "product": "比特 S10 Pro 扫地机", "price": 1999, "orderTime": "2026-06-20",
    "signTime": "2026-06-22", "status": "已签收", "trackingNo": "SF1234567890",
}


class QueryOrderTool(Tool):  # lesson 01's toy
    name = "queryOrder"
    description = "Look up an order."

    def invoke(self, input: str) -> str:
        order_id = input.strip()
        if order_id == "88231":
            return to_json(ORDER_88231)
        return to_json({"error": f"订单不存在：{order_id}"})


KEYS = sorted(["Thought:", "Action:", "Action Input:", "Observation:", "Final Answer:"], key=len, reverse=True)
FINAL = "Final Answer:"


@dataclass(frozen=True)
class Step:
    thought: str
    action: Action | None
    final_answer: str | None


def split_sections(text):  # lesson 05
    sections = []
    for line in text.splitlines():
        stripped = line.strip()
        key = next((k for k in KEYS if stripped.startswith(k)), None)
        if key is not None:
            sections.append((key, [stripped[len(key):].strip()]))
        elif sections:
            sections[-1][1].append(line.rstrip())
        else:
            sections.append((None, [line.rstrip()]))
    return [(key, "\n".join(lines).strip()) for key, lines in sections]


def final_answer_of(text):
    index = text.find(FINAL)
    return None if index < 0 else text[index + len(FINAL):].strip()


def my_parse(text, stop_at_observation=False):
    sections = split_sections(text)
    thought = "\n".join(value for key, value in sections if key == "Thought:" and value)
    final = final_answer_of(text)
    if final is not None:
        return Step(thought, None, final)
    tool_name, tool_input = "", ""
    for key, value in sections:
        if key == "Action:":
            tool_name, tool_input = value, ""
        elif key == "Action Input:" and tool_name:
            tool_input = value
        elif key == "Observation:" and stop_at_observation:
            break
    return Step(thought, Action(tool_name, tool_input) if tool_name else None, None)


@dataclass
class LoopResult:
    answer: str
    reason: str
    rounds: int
    calls: list
    messages: list


def run_loop(question, llm, tools, max_steps=10, fallback=True, verbose=True):  # lesson 06
    messages = [
        {"role": "system", "content": build_system_prompt(tools, detect_language(question))},
        {"role": "user", "content": question},
    ]
    calls = []
    for round_no in range(1, max_steps + 1):
        reply = llm.chat(messages, stop=["Observation:"])
        step = parse_step(reply.text)
        messages.append({"role": "assistant", "content": reply.text})
        if step.final_answer is not None:
            return LoopResult(step.final_answer, "final_answer", round_no, calls, messages)
        if step.action is None and fallback:
            return LoopResult(reply.text.strip(), "fallback", round_no, calls, messages)
        if step.action is not None:
            calls.append((step.action.tool_name, step.action.tool_input))
        messages.append({"role": "user", "content": f"Observation: {tools.execute(step.action)}"})
    return LoopResult("give up", "max_steps", max_steps, calls, messages)


def passes(check, *answer) -> bool:
    """The check prints "passed" (and returns None, so a check cell shows only what it printed)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        returned = check(*answer)
    assert returned is None
    return ": passed." in out.getvalue()


def fails(check, *answer, says: str = "") -> None:
    with pytest.raises(ExerciseFailed) as failure:
        check(*answer)
    assert says in str(failure.value), str(failure.value)


# -- every check: "not attempted yet" on None -----------------------------------------------------
@pytest.mark.parametrize(
    "check, empty",
    [
        (check_parcel_prediction, (None,)),
        (check_missing_order_prediction, (None, None)),
        (check_toy_logistics_tool, (None,)),
        (check_forgiving_query_order, (None,)),
        (check_suggesting_registry, (None,)),
        (check_capped_registry, (None,)),
        (check_unknown_model, (None, None, None)),
        (check_prompt_share, (None, None, None)),
        (check_invented_counter, (None,)),
        (check_pretended_calls, (None, None)),
        (check_parser_stops_at_observation, (None,)),
        (check_anchored_final_answer, (None,)),
        (check_counting_llm, (None,)),
        (check_record_replay, (None, None)),
    ],
)
def test_an_empty_answer_is_not_attempted_yet(check, empty, capsys):
    assert check(*empty) is None
    assert "not attempted yet" in capsys.readouterr().out


def test_sixteen_exercises_have_a_check():
    from tinyagent import checks

    assert len([name for name in dir(checks) if name.startswith("check_")]) == 16


# -- 00 ---------------------------------------------------------------------------------------------
def test_00_parcel_prediction():
    assert passes(check_parcel_prediction, ["queryOrder", "queryLogistics"])
    fails(check_parcel_prediction, ["queryLogistics"], says="order id")
    fails(check_parcel_prediction, ["queryLogistics", "queryOrder"], says="order matters")
    fails(check_parcel_prediction, ["queryOrder", "queryLogistics", "getCurrentTime"], says="two calls")
    fails(check_parcel_prediction, ["trackParcel"], says="not among")
    fails(check_parcel_prediction, "queryOrder", says="list")


def test_00_missing_order_prediction():
    assert passes(check_missing_order_prediction, "queryOrder", True)
    fails(check_missing_order_prediction, "queryLogistics", True, says="first_tool")
    fails(check_missing_order_prediction, "queryOrder", False, says="does not have")
    fails(check_missing_order_prediction, "queryOrder", None, says="True or False")


# -- 01 ---------------------------------------------------------------------------------------------
LOGISTICS = {
    "trackingNo": "SF1234567890", "carrier": "顺丰速运", "status": "已签收",
    "traces": [
        {"time": "2026-06-20 18:20:00", "desc": "快件已揽收"},
        {"time": "2026-06-21 09:10:00", "desc": "快件到达上海转运中心"},
        {"time": "2026-06-22 11:35:00", "desc": "快件已由本人签收"},
    ],
}


class QueryLogisticsTool(Tool):
    name = "queryLogistics"
    description = "Track a parcel."

    def invoke(self, input: str) -> str:
        number = input.strip()
        return to_json(LOGISTICS) if number == "SF1234567890" else to_json({"error": f"运单不存在：{number}"})


def test_01_toy_logistics_tool():
    assert passes(check_toy_logistics_tool, QueryLogisticsTool)

    class NoStrip(QueryLogisticsTool):
        def invoke(self, input):
            return to_json(LOGISTICS) if input == "SF1234567890" else to_json({"error": f"运单不存在：{input}"})

    class ReturnsDict(QueryLogisticsTool):
        def invoke(self, input):
            return json.loads(super().invoke(input))

    class Raises(QueryLogisticsTool):
        def invoke(self, input):
            if input.strip() != "SF1234567890":
                raise KeyError(input)
            return super().invoke(input)

    class WrongStatus(QueryLogisticsTool):
        def invoke(self, input):
            return to_json({**LOGISTICS, "status": "运输中"}) if input.strip() == "SF1234567890" else super().invoke(input)

    fails(check_toy_logistics_tool, NoStrip, says="error")
    fails(check_toy_logistics_tool, ReturnsDict, says="not a string")
    fails(check_toy_logistics_tool, Raises, says="raised KeyError")
    fails(check_toy_logistics_tool, WrongStatus, says="status")
    fails(check_toy_logistics_tool, QueryLogisticsTool(), says="expected a class")


class ForgivingQueryOrderTool(QueryOrderTool):
    def invoke(self, input: str) -> str:
        digits = re.search(r"\d+", input)
        if digits is None:
            return to_json({"error": "请提供订单号（an order id is needed）", "expected": "订单号数字，如 88231"})
        return super().invoke(digits.group())


def test_01_forgiving_query_order():
    assert passes(check_forgiving_query_order, ForgivingQueryOrderTool)

    class OnlyQuotes(QueryOrderTool):
        def invoke(self, input):
            return super().invoke(input.strip().strip('"'))

    class NoHint(QueryOrderTool):
        def invoke(self, input):
            digits = re.search(r"\d+", input)
            return super().invoke(digits.group() if digits else "")

    fails(check_forgiving_query_order, OnlyQuotes, says="订单 88231")
    fails(check_forgiving_query_order, NoHint, says="expected")


# -- 02 ---------------------------------------------------------------------------------------------
class SuggestingRegistry(CarefulRegistry):
    def execute(self, action):
        observation = super().execute(action)
        data = json.loads(observation) if observation.startswith("{") else None
        if isinstance(data, dict) and "available_tools" in data:
            close = difflib.get_close_matches(action.tool_name.strip(), list(self.tools), n=1)
            if close:
                data["did_you_mean"] = close[0]
            return json.dumps(data, ensure_ascii=False)
        return observation


def test_02_suggesting_registry():
    assert passes(check_suggesting_registry, SuggestingRegistry)

    class AlwaysSuggests(CarefulRegistry):  # a suggestion even for a synonym
        def execute(self, action):
            data = json.loads(super().execute(action))
            if "available_tools" in data:
                data["did_you_mean"] = difflib.get_close_matches(action.tool_name, list(self.tools), n=1, cutoff=0)[0]
            return json.dumps(data, ensure_ascii=False)

    class DropsTheList(CarefulRegistry):
        def execute(self, action):
            data = json.loads(super().execute(action))
            if "available_tools" in data:
                close = difflib.get_close_matches(action.tool_name, list(self.tools), n=1)
                return json.dumps({"error": data["error"], "did_you_mean": close[0] if close else None})
            return json.dumps(data, ensure_ascii=False)

    fails(check_suggesting_registry, AlwaysSuggests, says="not close")
    fails(check_suggesting_registry, DropsTheList, says="available_tools")
    fails(check_suggesting_registry, CarefulRegistry, says="should suggest")


class CappedRegistry(CarefulRegistry):
    def __init__(self, tools=(), limit=2000):
        super().__init__(tools)
        self.limit = limit

    def execute(self, action):
        observation = super().execute(action)
        if len(observation) <= self.limit:
            return observation
        return observation[: self.limit] + f"… [cut: {len(observation) - self.limit} more characters]"


def test_02_capped_registry():
    assert passes(check_capped_registry, CappedRegistry)

    class NoNote(CappedRegistry):  # a cut with no note
        def execute(self, action):
            return CarefulRegistry.execute(self, action)[: self.limit]

    class WrongCount(CappedRegistry):  # a note with the wrong count: the whole length
        def execute(self, action):
            observation = CarefulRegistry.execute(self, action)
            if len(observation) <= self.limit:
                return observation
            return observation[: self.limit] + f"… [cut: {len(observation)} more characters]"

    class HardCoded(CappedRegistry):  # the count of one example, whatever the Observation
        def execute(self, action):
            observation = CarefulRegistry.execute(self, action)
            if len(observation) <= self.limit:
                return observation
            return observation[: self.limit] + "… [cut: 156 more characters]"

    class CutsEverything(CappedRegistry):
        def execute(self, action):
            observation = CarefulRegistry.execute(self, action)
            return observation[: self.limit] + f"… [cut: {max(0, len(observation) - self.limit)} more characters]"

    fails(check_capped_registry, NoNote, says="without a note")
    fails(check_capped_registry, WrongCount, says="were cut")
    fails(check_capped_registry, HardCoded, says="were cut")
    fails(check_capped_registry, CutsEverything, says="untouched")


# -- 03 ---------------------------------------------------------------------------------------------
def test_03_unknown_model():
    from tinyagent import NotFoundError

    try:
        LlmClient.classroom("classroom-xl").chat([{"role": "user", "content": "hi"}])
    except NotFoundError as exc:
        error = exc
    assert passes(check_unknown_model, 404, error, "body")
    fails(check_unknown_model, 404, error, "url", says="model")
    fails(check_unknown_model, 404, error, "headers", says="model")
    fails(check_unknown_model, 200, error, "body", says="4xx")
    fails(check_unknown_model, 401, error, "body", says="same request")
    fails(check_unknown_model, 404, "NotFoundError", "body", says="LlmError")


def test_03_prompt_share_is_measured_not_pinned():
    from tinyagent.shop import Shop, shop_registry

    llm = LlmClient.classroom()
    messages = [
        {"role": "system", "content": build_system_prompt(shop_registry(Shop(":memory:")), "zh")},
        {"role": "user", "content": "我上周买的扫地机不回充了，修不好我想退。订单号 88231。"},
    ]
    with_prompt = llm.chat(messages).usage["prompt_tokens"]
    without_prompt = llm.chat(messages[1:]).usage["prompt_tokens"]
    share = (with_prompt - without_prompt) / with_prompt
    assert passes(check_prompt_share, share, llm, messages)
    assert passes(check_prompt_share, round(share, 2), llm, messages)
    fails(check_prompt_share, without_prompt / with_prompt, llm, messages, says="NOT the system prompt")
    fails(check_prompt_share, share * 100, llm, messages, says="between 0 and 1")
    fails(check_prompt_share, 0.5, llm, messages, says="(with the prompt - without)")
    # A shorter system prompt has a smaller share: the check measures, it does not remember a number.
    short = [{"role": "system", "content": "Answer briefly."}, messages[1]]
    fails(check_prompt_share, share, llm, short)


# -- 04 ---------------------------------------------------------------------------------------------
def count_invented_observations(text):
    return sum(1 for line in text.splitlines() if line.strip().startswith("Observation:"))


def test_04_invented_counter():
    assert passes(check_invented_counter, count_invented_observations)
    thought_lines = lambda text: sum(1 for line in text.splitlines() if line.startswith("Thought:"))
    anywhere = lambda text: text.count("Observation:")
    unstripped = lambda text: sum(1 for line in text.splitlines() if line.startswith("Observation:"))
    fails(check_invented_counter, thought_lines, says="run-on")
    fails(check_invented_counter, anywhere, says="middle of its line")
    fails(check_invented_counter, unstripped, says="indented")


def pretended_tools(text):
    return [line.strip()[len("Action:"):].strip() for line in text.splitlines() if line.strip().startswith("Action:")]


def test_04_pretended_calls():
    assert passes(check_pretended_calls, pretended_tools, ["getCurrentTime", "searchKnowledge"])
    assert passes(check_pretended_calls, pretended_tools, {"searchKnowledge", "getCurrentTime"})

    def lesson_05_bug(text):  # the loose match: "Action Input: 88231" starts with "Action" too
        return [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Action")]

    fails(check_pretended_calls, lesson_05_bug, ["getCurrentTime", "searchKnowledge"], says="with its colon")
    fails(check_pretended_calls, pretended_tools, ["getCurrentTime"], says="policy")
    fails(check_pretended_calls, pretended_tools, ["applyRefund", "queryOrder"], says="policy")
    fails(check_pretended_calls, pretended_tools, None, says="skipped")


# -- 05 ---------------------------------------------------------------------------------------------
def test_05_parser_stops_at_observation():
    assert passes(check_parser_stops_at_observation, lambda text: my_parse(text, stop_at_observation=True))
    fails(check_parser_stops_at_observation, my_parse, says="invented after its Observation")

    def first_action(text):  # keeps the first Action instead of the last
        step = my_parse(text, stop_at_observation=True)
        names = [value for key, value in split_sections(text) if key == "Action:"]
        if step.action is None or not names:
            return step
        return Step(step.thought, Action(names[0], step.action.tool_input), None)

    fails(check_parser_stops_at_observation, first_action, says="parse_step reads")


def final_answer_anchored(text):
    lines = text.splitlines()
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith(FINAL):
            return "\n".join([stripped[len(FINAL):]] + lines[i + 1:]).strip()
    return None


def test_05_anchored_final_answer():
    assert passes(check_anchored_final_answer, final_answer_anchored)

    def first_line_only(text):  # keeps only the answer's first line: the refund id is lost
        for line in text.splitlines():
            if line.strip().startswith(FINAL):
                return line.strip()[len(FINAL):].strip()
        return None

    fails(check_anchored_final_answer, first_line_only, says="refund id")
    fails(check_anchored_final_answer, final_answer_of, says="mid-line")  # the unanchored search

    def unstripped(text):
        for i, line in enumerate(text.splitlines()):
            if line.startswith(FINAL):
                return "\n".join([line[len(FINAL):]] + text.splitlines()[i + 1:]).strip()
        return None

    fails(check_anchored_final_answer, unstripped, says="indented")


# -- 06 ---------------------------------------------------------------------------------------------
class CountingLlm:
    def __init__(self, llm):
        self.llm = llm
        self.usages = []

    def chat(self, messages, **options):
        reply = self.llm.chat(messages, **options)
        self.usages.append(reply.usage)
        return reply


def test_06_counting_llm():
    assert passes(check_counting_llm, CountingLlm)

    class KeepsLast(CountingLlm):
        def chat(self, messages, **options):
            reply = self.llm.chat(messages, **options)
            self.usages = [reply.usage]
            return reply

    class DropsOptions(CountingLlm):
        def chat(self, messages, **options):
            reply = self.llm.chat(messages)
            self.usages.append(reply.usage)
            return reply

    fails(check_counting_llm, KeepsLast, says=".usages")
    fails(check_counting_llm, DropsOptions, says="pass every option")


class Recorder:
    def __init__(self, llm):
        self.llm = llm
        self.replies = []

    def chat(self, messages, **options):
        reply = self.llm.chat(messages, **options)
        self.replies.append(reply)
        return reply


class Replayer:
    def __init__(self, replies):
        self.replies = list(replies)

    def chat(self, messages, **options):
        return self.replies.pop(0)


def test_06_record_replay_holds_on_scripted_replies_and_the_classroom(capsys):
    questions = ("我上周买的扫地机不回充了，修不好我想退。订单号 88231。", "帮我看看订单 88231 的快递到哪了。")
    check_record_replay(Recorder, Replayer, run_loop, LlmClient.classroom(), questions)
    out = capsys.readouterr().out
    assert "Exercise 2: passed." in out
    assert "where ReActAgent stops (length)" in out and "where ReActAgent stops (empty_reply)" in out

    class RepeatsTheFirst(Replayer):  # hands back the first reply every time
        def chat(self, messages, **options):
            return self.replies[0]

    class KeepsText(Recorder):  # keeps the text, not the reply: ReActAgent needs .text and .finish_reason
        def chat(self, messages, **options):
            reply = self.llm.chat(messages, **options)
            self.replies.append(reply.text)
            return reply

    class KeepsNothing(Recorder):
        def chat(self, messages, **options):
            return self.llm.chat(messages, **options)

    fails(check_record_replay, Recorder, RepeatsTheFirst, run_loop, says="disagree")
    fails(check_record_replay, KeepsText, Replayer, run_loop, says="raised AttributeError")
    fails(check_record_replay, KeepsNothing, Replayer, run_loop, says="keep every reply")
    fails(check_record_replay, Recorder, Replayer, None, says="run_loop")


# -- classroom-only checks say why they are skipped ------------------------------------------------
def test_classroom_only_says_why_on_a_real_model(capsys):
    offline = Settings(api_url="http://127.0.0.1:1/v1", api_key=None, model="classroom", offline=True, source="test")
    real = Settings(api_url="https://api.example.com/v1", api_key=None, model="m", offline=False, source="test")
    assert classroom_only(offline, "pinned path") is True
    assert capsys.readouterr().out == ""
    assert classroom_only(real, "a real model chooses its own path") is False
    assert capsys.readouterr().out == "skipped on a real model: a real model chooses its own path\n"


# -- 08 ---------------------------------------------------------------------------------------------
from tinyagent.checks import COURSE_NOW, check_lean_prompt, check_shorter_predictions
from tinyagent.clock import fixed_clock
from tinyagent.shop import Shop, shop_registry


def lean_prompt(tools):
    listed = "".join(f"{tool.name}: {tool.describe('en')}\n" for tool in tools)
    return ("Tools:\n" + listed + "Reply with\nThought: ...\nAction: <a tool>\nAction Input: <its input>\n"
            "then stop: the Observation comes back. To answer:\nThought: ...\nFinal Answer: ...\n")


def test_08_checks_say_not_attempted_yet(capsys):
    assert check_lean_prompt(None) is None and check_shorter_predictions(None) is None
    assert capsys.readouterr().out.count("not attempted yet") == 2


def test_08_lean_prompt():
    assert passes(check_lean_prompt, lean_prompt)
    shop_list = lean_prompt(shop_registry(Shop(":memory:", clock=fixed_clock(COURSE_NOW))))

    fails(check_lean_prompt, lambda tools: build_system_prompt(tools, "en"), says="the budget is")
    fails(check_lean_prompt, lambda tools: lean_prompt(tools).replace(
        "".join(f"{t.name}: {t.describe('en')}\n" for t in tools), ", ".join(tools.names) + "\n"),
        says="descriptions of ['queryOrder'")
    fails(check_lean_prompt, lambda tools: shop_list, says="with two other tools the descriptions of ['checkStock'")
    fails(check_lean_prompt, lambda tools: lean_prompt(tools).replace("Final Answer: ...", "Answer: ..."),
          says="keys ['Final Answer:']")
    fails(check_lean_prompt, lambda tools: lean_prompt(tools).replace("the Observation comes back", "wait"),
          says="Observation")
    fails(check_lean_prompt, lambda tools: lean_prompt(tools).replace("Tools:\n", "You can use ").replace(
        ".\n", ". ", len(tools) - 1), says="tool-list reader finds []")
    fails(check_lean_prompt, lambda tools: None, says="returned NoneType")
    fails(check_lean_prompt, "Tools: ...", says="should be a function")


def test_08_shorter_predictions(capsys):
    right = {"system prompt": "en", "question": "zh", "json or example": "one-shot-prompt"}
    assert passes(check_shorter_predictions, right)
    check_shorter_predictions(right)
    assert "system prompt: en " in capsys.readouterr().out  # the counts are shown once it passes

    by_characters = {**right, "system prompt": "zh"}
    fails(check_shorter_predictions, by_characters, says="1 of 3 wrong. system prompt: not 'zh'")
    chinese_costs_more = {**right, "question": "en"}
    fails(check_shorter_predictions, chinese_costs_more, says="question: not 'en'")
    fails(check_shorter_predictions, {**right, "json or example": "json"}, says="json or example: not 'json'")
    fails(check_shorter_predictions, {"system prompt": "en"}, says="with the keys")
    fails(check_shorter_predictions, {**right, "question": "fr"}, says="one of ['en', 'zh']")
