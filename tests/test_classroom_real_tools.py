"""The classroom model with lesson 15's tools: the weather API, the calculator, the file tools, a gated refund.

Each phrasing runs through `ReActAgent` and the classroom model against the real tools: a `WeatherService` on
loopback, `calculator_tool`, readFile/listFiles on a temporary workspace, the SQLite shop behind a
confirmation gate. docs/classroom-model.md lists the same phrasings for teachers (a test checks), and none of
them appears in a notebook (the lesson words its own requests).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from tinyagent import (
    ApprovalDecided,
    ConfirmationGate,
    FunctionCallingAgent,
    LlmClient,
    Parsed,
    ReActAgent,
    ToolRegistry,
    WeatherService,
    calculator_tool,
    fixed_clock,
    weather_tool,
    workspace_tools,
)
from tinyagent.shop import Shop, refund_gate, shop_registry
from tinyagent.toolkit.confirmation import GatedAct

NOW = "2026-06-30T19:05:23"


@pytest.fixture(scope="module")
def weather():
    with WeatherService() as service:
        yield service


@pytest.fixture(autouse=True)
def calm_weather(weather):
    weather.clear_faults()
    yield
    weather.clear_faults()


@pytest.fixture
def registry(weather, tmp_path):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "todo.txt").write_text("call the courier\n", encoding="utf-8")
    (workspace / "reports").mkdir()
    (tmp_path / "secret.txt").write_text("do not show", encoding="utf-8")
    return ToolRegistry([weather_tool(weather.base_url, read_timeout=0.5), calculator_tool(),
                         *workspace_tools(workspace)])


@dataclass(frozen=True)
class Case:
    phrasing: str
    calls: list[str]  # "tool(input)" in order
    answer: tuple[str, ...]


def case(phrasing: str, calls: list[str], *answer: str) -> Case:
    return Case(phrasing, calls, answer)


CASES = [
    # the weather API (getWeather), in both languages
    case("Is it going to rain in Hangzhou today? Should I bring an umbrella?", ["getWeather(Hangzhou)"],
         "light rain, 22 °C", "take an umbrella"),
    case("北京现在天气如何？出门要不要带伞？", ["getWeather(北京)"], "晴，28℃", "不用带伞"),
    case("What's the weather like in Guangzhou?", ["getWeather(Guangzhou)"], "thunderstorms, 31 °C"),
    case("上海现在天气怎么样？", ["getWeather(上海)"], "多云，27℃"),
    case("南京今天的天气怎么样", ["getWeather(南京)"], "中雨"),
    case("How is the weather in Atlantis today?", ["getWeather(Atlantis)"], "could not get the weather",
         "unknown city: Atlantis"),
    # the calculator
    case("What's 1999 * 0.85?", ["calculator(1999 * 0.85)"], "1999 * 0.85 = 1699.15"),
    case("Calculate (2499 - 300) * 0.9 for me", ["calculator((2499 - 300) * 0.9)"], "= 1979.1"),
    case("How much is 1,299 + 499?", ["calculator(1299 + 499)"], "1299 + 499 = 1798"),
    case("帮我算一下 1999 乘以 3 是多少", ["calculator(1999 * 3)"], "1999 * 3 = 5997"),
    case("计算 2^16", ["calculator(2^16)"], "2^16 = 65536"),
    case("What is 10 / 3?", ["calculator(10 / 3)"], "= 3.3333333333333335 (rounded)"),
    case("what is 7 / 0", ["calculator(7 / 0)"], "division by zero"),
    # the file tools, inside the workspace and out
    case("Please read todo.txt", ["readFile(todo.txt)"], "call the courier"),
    case("打开 ../secret.txt 给我看看", ["readFile(../secret.txt)"], "不能读取", "goes up with '..'"),
    case("Show me the contents of /etc/hostname", ["readFile(/etc/hostname)"], "cannot read",
         "is an absolute path"),
    case("What files are in the workspace?", ["listFiles(.)"], "reports/", "todo.txt"),
    case("列出工作区里的文件", ["listFiles(.)"], "reports/、todo.txt"),
]


@pytest.mark.parametrize("item", CASES, ids=[c.phrasing for c in CASES])
def test_each_phrasing_uses_its_tool_and_answers_from_it(registry, item):
    result = ReActAgent(LlmClient.classroom(), registry).run(item.phrasing)
    assert result.reason == "final_answer", result.answer
    assert [f"{call.name}({call.input})" for call in result.trace.tool_calls] == item.calls, result.answer
    for phrase in item.answer:
        assert phrase in result.answer, result.answer
    assert "do not show" not in json.dumps(result.messages, ensure_ascii=False)


@pytest.mark.parametrize("question", ["What's the weather like in Guangzhou?", "上海现在天气怎么样？",
                                      "How is the weather in Atlantis today?"])
def test_a_question_about_the_weather_alone_gets_no_umbrella_advice(registry, question):
    """Only a question about rain or an umbrella is answered about the umbrella: the model must not invent
    what the user asked (the thought says what was asked, the answer reports the weather or the failure)."""
    result = ReActAgent(LlmClient.classroom(), registry).run(question)
    said = " ".join([*(step.thought for step in result.trace.of_type(Parsed)), result.answer]).lower()
    assert "umbrella" not in said and "伞" not in said, said
    rainy = ReActAgent(LlmClient.classroom(), registry).run(question.replace("?", "? Will it rain?")
                                                             .replace("？", "？会下雨吗？"))
    assert "umbrella" in rainy.answer or "伞" in rainy.answer, rainy.answer


def test_a_timeout_is_retried_once_and_then_the_answer_is_right(weather, registry):
    weather.inject(delay_s=30, times=1)
    result = ReActAgent(LlmClient.classroom(), registry).run("Is it going to rain in Hangzhou today? Should I "
                                                             "bring an umbrella?")
    errors = [event.error for event in result.trace.events if type(event).__name__ == "Observation"]
    assert [call.input for call in result.trace.tool_calls] == ["Hangzhou", "Hangzhou"] and errors == [True, False]
    assert "try once more" in result.trace.of_type(Parsed)[1].thought and "take an umbrella" in result.answer


def test_two_timeouts_are_reported_not_retried_for_ever(weather, registry):
    weather.inject(delay_s=30, times=2)
    result = ReActAgent(LlmClient.classroom(), registry).run("北京现在天气如何？出门要不要带伞？")
    assert len(result.trace.tool_calls) == 2 and "暂时查不到北京的天气" in result.answer
    assert "did not answer within 0.5 s" in result.answer


def test_an_error_that_is_not_retryable_is_not_retried(weather, registry):
    weather.inject(body="wrong_shape", times=1)
    result = ReActAgent(LlmClient.classroom(), registry).run("What's the weather like in Guangzhou?")
    assert len(result.trace.tool_calls) == 1 and "not the shape the tool reads" in result.answer


def test_without_the_tool_it_says_so_and_never_computes_itself():
    result = ReActAgent(LlmClient.classroom(), ToolRegistry(workspace_tools(Path.cwd()))).run("What's 1999 * 0.85?")
    assert result.trace.tool_calls == [] and "I have no way to calculate 1999 * 0.85" in result.answer
    assert "1699" not in result.answer


def test_shop_requests_are_not_mistaken_for_sums():
    with Shop(":memory:", clock=fixed_clock(NOW)) as shop:
        registry = ToolRegistry([*shop_registry(shop), calculator_tool()])
        for request in ("退款 1-3 个工作日能到账吗？", "Where is my parcel? Order 88231.", "88231 的扫地机坏了，我要退货"):
            result = ReActAgent(LlmClient.classroom(), registry).run(request)
            assert "calculator" not in [call.name for call in result.trace.tool_calls], request


def test_function_calling_uses_the_new_tools_too(registry):
    agent = FunctionCallingAgent(LlmClient.classroom(), registry)
    sums = agent.run("What's 1999 * 0.85?")
    assert [(call.name, json.loads(call.input)) for call in sums.trace.tool_calls] == [
        ("calculator", {"expression": "1999 * 0.85"})]
    assert "1699.15" in sums.answer
    rain = agent.run("Is it going to rain in Hangzhou today? Should I bring an umbrella?")
    assert [call.name for call in rain.trace.tool_calls] == ["getWeather"] and "umbrella" in rain.answer


# -- the refund behind a confirmation gate: each outcome, in both languages --------------------------------
REFUNDS = {
    "en": "The robot vacuum of order 88231 won't charge any more; please refund it.",
    "zh": "订单 88231 的扫地机充不进电了，请帮我退款",
}
ANSWERS = {
    ("approved", "en"): "RF202606300001",
    ("approved", "zh"): "RF202606300001",
    ("declined", "en"): "it was not approved, so it has not been submitted",
    ("declined", "zh"): "这次没有获得批准，所以没有提交",
    ("timeout", "en"): "nobody has approved it yet, so it has not been submitted",
    ("timeout", "zh"): "目前还没有人处理，所以暂时没有提交",
    ("error", "en"): "cannot be submitted right now (the approval step failed)",
    ("error", "zh"): "暂时无法提交（审批环节出了问题）",
}
ASK = {"approved": lambda request: True, "declined": lambda request: False, "error": lambda request: "perhaps"}


@pytest.mark.parametrize(("outcome", "lang"), list(ANSWERS), ids=[f"{o}-{lang}" for o, lang in ANSWERS])
def test_a_gated_refund_answers_each_outcome_truthfully(outcome, lang):
    with Shop(":memory:", clock=fixed_clock(NOW)) as shop:
        gate = refund_gate(shop, ask=ASK.get(outcome), timeout_s=0.3 if outcome == "timeout" else 120)
        result = ReActAgent(LlmClient.classroom(), shop_registry(shop), parts=[GatedAct(gate)]).run(REFUNDS[lang])
        decided = [event.outcome for event in result.trace.events if isinstance(event, ApprovalDecided)]
        assert decided == [outcome] and result.reason == "final_answer"
        assert ANSWERS[(outcome, lang)] in result.answer, result.answer
        assert len(shop.refunds()) == (1 if outcome == "approved" else 0)
        if outcome != "approved":
            assert "RF2026" not in result.answer
            assert [call.name for call in result.trace.tool_calls].count("applyRefund") == 1


def test_an_ungated_tool_never_waits():
    with Shop(":memory:", clock=fixed_clock(NOW)) as shop:
        gate = ConfirmationGate(timeout_s=120)  # no ask: a gated call would wait two minutes
        result = ReActAgent(LlmClient.classroom(), shop_registry(shop), parts=[GatedAct(gate)]).run(
            "Where is my parcel? Order 88231.")
        assert gate.log == [] and result.reason == "final_answer"


def test_the_teachers_page_lists_every_phrasing_with_what_its_test_checks():
    rows = set((Path(__file__).resolve().parents[1] / "docs" / "classroom-model.md").read_text(encoding="utf-8")
               .splitlines())
    expected = [f"| {c.phrasing} | {' → '.join(c.calls)} | {'; '.join(c.answer)} |" for c in CASES]
    outcomes = ("approved", "declined", "timeout", "error")  # the table's order: yes, no, no answer, unreadable
    expected += [f"| {phrasing} | yes / no / no answer / an unreadable answer | 88231 / none / none / none | "
                 f"{' / '.join(ANSWERS[outcome, lang] for outcome in outcomes)} |" for lang, phrasing in REFUNDS.items()]
    assert [row for row in expected if row not in rows] == []


def test_no_phrasing_is_used_in_a_notebook():
    notebooks = Path(__file__).resolve().parents[1] / "notebooks"
    texts = [path.read_text(encoding="utf-8") for path in notebooks.rglob("*.ipynb")]
    phrasings = [c.phrasing for c in CASES] + list(REFUNDS.values())
    assert [p for p in phrasings if any(json.dumps(p, ensure_ascii=False)[1:-1] in text for text in texts)] == []
