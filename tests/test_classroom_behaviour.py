"""The classroom model's behaviour: `respond(request) -> Reply`, called directly (no HTTP).

The conversations are driven the way the agent drives them: the real system prompt, replies cut at
"Observation:" (what `stop` does), and Observations from hand-written tools that answer like the shop.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tinyagent import Action, FunctionTool, ToolRegistry, build_system_prompt
from tinyagent.classroom.behaviour import MODELS, VARIANTS_TABLE, UnknownModelError, respond
from tinyagent.classroom.conversation import parse_action
from tinyagent.classroom.refund import ReturnLimits, decide, read_limits
from tinyagent.classroom.reply import Reply
from tinyagent.classroom.tokens import count_tokens

REFUND_ZH = "我上周买的扫地机不回充了，修不好我想退。订单号 88231。"
REFUND_EN = "My robot vacuum from last week won't go back to its dock... I want a refund. Order 88231."
LOGISTICS_ZH = "帮我看看订单 88231 的快递到哪了。"
TWO_ORDERS_ZH = "订单 88231 和 88232 分别到哪了？"

FAKE_REFUND_ID = "RF20260629001"
POLICY_RESULTS = [
    {
        "title": "质量问题退换货",
        "content": "签收次日起 15 天内出现性能故障（质量问题），经售后检测确认后可退货或换货；"
        "超过 15 天、在保修期内可免费维修。",
    },
    {"title": "七天无理由退货政策", "content": "签收次日起 7 天内，商品完好、配件齐全，可申请无理由退货。"},
    {"title": "保修政策", "content": "整机保修 1 年（365 天），自签收次日起计算。"},
]


def as_json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class FakeShop:
    """Tools that answer like the shop's, from a few hand-written orders, with a settable clock and policy."""

    def __init__(self, now="2026-06-30T19:05:23", signed="2026-06-22", policy=POLICY_RESULTS, refund_error=None):
        self.now, self.policy, self.refund_error = now, policy, refund_error
        self.refunds: list[dict] = []
        self.orders = {
            "88231": {"orderId": "88231", "product": "比特 S10 Pro 扫地机", "price": 1999, "orderTime": "2026-06-20",
                      "signTime": signed, "status": "已签收", "trackingNo": "SF1234567890"},
            "88232": {"orderId": "88232", "product": "比特 W5 洗地机", "price": 2499, "orderTime": "2026-06-27",
                      "signTime": None, "status": "运输中", "trackingNo": "YT2468013579"},
            "88233": {"orderId": "88233", "product": "比特 AirPure 空气净化器", "price": 899, "orderTime": "2026-06-29",
                      "signTime": None, "status": "待发货", "trackingNo": None},
            "88235": {"orderId": "88235", "product": "比特 T3 智能体脂秤", "price": 199, "orderTime": "2026-06-18",
                      "signTime": None, "status": "已取消", "trackingNo": None},
        }
        self.parcels = {
            "SF1234567890": {"trackingNo": "SF1234567890", "carrier": "顺丰速运", "status": "已签收", "traces": [
                {"time": "2026-06-20 18:20:00", "desc": "快件已揽收"},
                {"time": "2026-06-21 09:10:00", "desc": "快件到达上海转运中心"},
                {"time": "2026-06-22 11:35:00", "desc": "快件已由本人签收"}]},
            "YT2468013579": {"trackingNo": "YT2468013579", "carrier": "圆通速递", "status": "运输中", "traces": [
                {"time": "2026-06-28 16:40:00", "desc": "快件已揽收"},
                {"time": "2026-06-30 07:50:00", "desc": "快件到达上海转运中心"}]},
        }

    def query_order(self, text: str) -> str:
        order = self.orders.get(text.strip())
        return as_json(order) if order else as_json({"error": f"订单不存在：{text.strip()}"})

    def query_logistics(self, text: str) -> str:
        parcel = self.parcels.get(text.strip())
        return as_json(parcel) if parcel else as_json({"error": f"运单不存在：{text.strip()}"})

    def apply_refund(self, text: str) -> str:
        if self.refund_error:
            return as_json({"error": self.refund_error})
        payload = json.loads(text)
        refund_id = f"RF{self.now[:10].replace('-', '')}{len(self.refunds) + 1:04d}"
        self.refunds.append({"refundId": refund_id, **payload})
        return as_json({"success": True, "refundId": refund_id, "message": "退款申请已提交，预计 1-3 个工作日到账"})

    def search_knowledge(self, text: str) -> str:
        return as_json({"query": text, "results": self.policy})

    def current_time(self, text: str) -> str:
        return as_json({"currentTime": self.now, "weekday": "星期二"})

    def registry(self, names=("queryOrder", "queryLogistics", "applyRefund", "searchKnowledge", "getCurrentTime")):
        tools = {
            "queryOrder": ("查询订单详情。输入：订单号，如 88231。", self.query_order),
            "queryLogistics": ("查询物流轨迹。输入：运单号，如 SF1234567890。", self.query_logistics),
            "applyRefund": ("发起退款申请。输入：JSON，包含 orderId 和 reason。", self.apply_refund),
            "searchKnowledge": ("检索售后知识库。输入：关键词。", self.search_knowledge),
            "getCurrentTime": ("获取当前日期时间。无需输入。", self.current_time),
        }
        return ToolRegistry([FunctionTool(name, *tools[name]) for name in names])


def system_prompt(registry: ToolRegistry, lang: str) -> str:
    return build_system_prompt(registry, lang)


def first_request(question: str, registry: ToolRegistry, lang: str = "zh", model: str = "classroom") -> dict:
    return {"model": model, "messages": [
        {"role": "system", "content": system_prompt(registry, lang)},
        {"role": "user", "content": question},
    ]}


class Run:
    """A finished text-ReAct conversation: each reply as the agent received it, and the actions taken."""

    def __init__(self, replies: list[str], actions: list[tuple[str, str]], requests: list[dict]):
        self.replies, self.actions, self.requests = replies, actions, requests

    @property
    def tools(self) -> list[str]:
        return [name for name, _ in self.actions]

    @property
    def final(self) -> str:
        return self.replies[-1]

    @property
    def answer(self) -> str:
        return self.final.split("Final Answer:", 1)[-1].strip()


def converse(question: str, registry: ToolRegistry, lang: str = "zh", model: str = "classroom",
             max_rounds: int = 10) -> Run:
    """Drive the model like the agent does: cut each reply at the stop string, run its Action, feed back."""
    request = first_request(question, registry, lang, model)
    replies, actions, requests = [], [], []
    for _ in range(max_rounds):
        requests.append(json.loads(json.dumps(request)))
        text = respond(request).text.split("Observation:")[0]  # what stop=["Observation:"] leaves
        replies.append(text)
        action = parse_action(text)
        if action is None:
            break
        actions.append(action)
        request["messages"].append({"role": "assistant", "content": text})
        request["messages"].append({"role": "user", "content": "Observation: " + registry.execute(Action(*action))})
    return Run(replies, actions, requests)


# --- the refund scenario -------------------------------------------------------------------------------


def test_refund_takes_five_rounds_and_answers_with_the_real_refund_id():
    shop = FakeShop()
    run = converse(REFUND_ZH, shop.registry())
    assert run.tools == ["queryOrder", "getCurrentTime", "searchKnowledge", "applyRefund"]
    assert run.actions[0] == ("queryOrder", "88231")
    assert run.actions[1] == ("getCurrentTime", "")
    assert run.actions[2] == ("searchKnowledge", "扫地机 不回充 退货 政策")
    refund = json.loads(run.actions[3][1])
    assert refund["orderId"] == "88231" and "不回充" in refund["reason"] and "质量问题" in refund["reason"]
    assert len(run.replies) == 5
    assert "Final Answer:" in run.final
    assert "RF202606300001" in run.answer and FAKE_REFUND_ID not in run.answer
    assert shop.refunds[0]["refundId"] == "RF202606300001"


def test_refund_thoughts_use_the_observed_dates():
    run = converse(REFUND_ZH, FakeShop().registry())
    assert "2026-06-22" in run.replies[1]  # the signing date queryOrder returned
    assert "2026-06-30" in run.replies[2] and "8 天" in run.replies[2]  # today, from getCurrentTime
    assert "7 天" in run.replies[3] and "15 天" in run.replies[3]  # limits read from the policy


def test_refund_in_english():
    shop = FakeShop()
    run = converse(REFUND_EN, shop.registry(), lang="en")
    assert run.tools == ["queryOrder", "getCurrentTime", "searchKnowledge", "applyRefund"]
    assert run.replies[0].startswith("Thought: The customer wants a refund for order 88231")
    assert not re.search(r"[\u4e00-\u9fff]", run.replies[0])
    assert "RF202606300001" in run.answer and "refund" in run.answer.lower()


@pytest.mark.parametrize(
    ("signed", "question", "expected_tools", "in_answer"),
    [
        # 3 days: a no-reason return, fault or not
        ("2026-06-27", "订单 88231 我想退货", ["queryOrder", "getCurrentTime", "searchKnowledge", "applyRefund"],
         "7 天无理由"),
        # 8 days with a fault: a quality return (the seed)
        ("2026-06-22", REFUND_ZH, ["queryOrder", "getCurrentTime", "searchKnowledge", "applyRefund"], "质量问题"),
        # 8 days, no fault reported: past the no-reason window, no refund yet
        ("2026-06-22", "订单 88231 我想退货", ["queryOrder", "getCurrentTime", "searchKnowledge"], "无理由退货期"),
        # 40 days with a fault: past 15 days, under warranty: free repair, no refund
        ("2026-05-21", REFUND_ZH, ["queryOrder", "getCurrentTime", "searchKnowledge"], "免费维修"),
        # past the warranty
        ("2025-05-01", REFUND_ZH, ["queryOrder", "getCurrentTime", "searchKnowledge"], "保修期"),
    ],
)
def test_refund_decision_follows_the_dates(signed, question, expected_tools, in_answer):
    shop = FakeShop(signed=signed)
    run = converse(question, shop.registry())
    assert run.tools == expected_tools
    assert in_answer in (shop.refunds[0]["reason"] if shop.refunds else run.answer)
    assert "Final Answer:" in run.final


def test_a_signing_date_after_today_is_not_day_zero():
    # Signed five days after today (a wrong record): it was read as day 0, a no-reason refund written for ¥1999.
    shop = FakeShop(signed="2026-07-05")
    run = converse("订单 88231 我想退货", shop.registry())
    assert shop.refunds == [] and "applyRefund" not in run.tools
    assert "确认不了今天的日期或签收日期" in run.replies[-1] and "人工客服" in run.answer


def test_forty_days_offers_a_repair_in_four_rounds():
    shop = FakeShop(signed="2026-05-21")
    run = converse(REFUND_ZH, shop.registry())
    assert len(run.replies) == 4 and shop.refunds == []
    assert "40 天" in run.answer and "免费维修" in run.answer and "RF" not in run.answer


def test_day_limits_are_read_from_the_policy_observation():
    ten_day_policy = [{"title": "无理由退货", "content": "签收次日起 10 天内可申请无理由退货。"}]
    shop = FakeShop(policy=ten_day_policy)  # signed 8 days ago, no fault mentioned
    run = converse("订单 88231 我想退货", shop.registry())
    assert run.tools[-1] == "applyRefund"
    assert "10 天无理由" in shop.refunds[0]["reason"]


def test_read_limits_parses_chinese_english_and_falls_back():
    text = "\n".join(r["content"] for r in POLICY_RESULTS)
    assert read_limits(text) == ReturnLimits(7, 15, 365, from_policy=True)
    assert read_limits("七天无理由退货；三十天内出现故障可退换；保修 2 年") == ReturnLimits(7, 30, 730, from_policy=True)
    english = "No-reason returns within 7 days of delivery. A fault within 15 days: return or exchange. 1-year warranty."
    assert read_limits(english) == ReturnLimits(7, 15, 365, from_policy=True)
    assert read_limits("") == ReturnLimits(7, 15, 365, from_policy=False)


def test_each_policy_entry_read_alone_gives_no_limit_it_does_not_state():
    # The warranty entry's "365 天 ... 故障" is no 365-day quality limit; the quality entry's "15 days ... within the
    # warranty" is no 15-day warranty. Each entry, ranked first, is read alone.
    from tinyagent.shop.knowledge import KNOWLEDGE_BASE

    for entry in KNOWLEDGE_BASE:
        for text in (entry.content, entry.content_en):
            limits = read_limits(text)
            assert (limits.no_reason, limits.quality, limits.warranty) == (7, 15, 365), (entry.title, text)


def test_decide_by_days():
    limits = ReturnLimits()
    assert decide(3, limits, fault=False).kind == "no_reason"
    assert decide(7, limits, fault=False).kind == "no_reason"
    assert decide(8, limits, fault=True).kind == "quality"
    assert decide(8, limits, fault=False).kind == "needs_fault"
    assert decide(40, limits, fault=True).kind == "repair"
    assert decide(400, limits, fault=True).kind == "out_of_warranty"
    assert [decide(d, limits, True).refund for d in (3, 8, 40)] == [True, True, False]


def test_refund_for_an_order_in_transit_needs_no_date_check():
    shop = FakeShop()
    run = converse("订单 88232 我不想要了，退款", shop.registry())
    assert run.tools == ["queryOrder", "applyRefund"]
    assert "拒收" in run.answer and shop.refunds[0]["refundId"] in run.answer


def test_cancelled_order_is_not_refunded():
    shop = FakeShop()
    run = converse("订单 88235 我要退款", shop.registry())
    assert run.tools == ["queryOrder"] and shop.refunds == []
    assert "取消" in run.answer


def test_refund_error_is_reported_honestly():
    shop = FakeShop(refund_error="退款系统维护中")
    run = converse(REFUND_ZH, shop.registry())
    assert run.tools[-1] == "applyRefund"
    assert "退款系统维护中" in run.answer and "RF" not in run.answer


# --- the other scenarios -------------------------------------------------------------------------------


def test_logistics_uses_the_tracking_number_from_the_order():
    run = converse(LOGISTICS_ZH, FakeShop().registry())
    assert run.actions == [("queryOrder", "88231"), ("queryLogistics", "SF1234567890")]
    assert len(run.replies) == 3
    assert "SF1234567890" in run.answer and "顺丰速运" in run.answer
    assert "2026-06-22 11:35:00 快件已由本人签收" in run.answer


def test_logistics_for_an_order_not_shipped_stops_after_the_order():
    run = converse("订单 88233 的快递到哪了？", FakeShop().registry())
    assert run.tools == ["queryOrder"]
    assert "还没有发货" in run.answer


def test_order_status():
    run = converse("订单 88232 现在什么状态？", FakeShop().registry())
    assert run.actions == [("queryOrder", "88232")]
    assert "运输中" in run.answer and "YT2468013579" in run.answer


@pytest.mark.parametrize(("question", "lang"), [("七天无理由退货怎么算？", "zh"), ("How long does a refund take?", "en")])
def test_policy_question_answers_from_the_top_result(question, lang):
    run = converse(question, FakeShop().registry(), lang=lang)
    assert run.tools == ["searchKnowledge"]
    assert POLICY_RESULTS[0]["content"] in run.answer


@pytest.mark.parametrize(("question", "lang", "apology"), [("七天无理由退货怎么算？", "zh", "暂时查不了"),
                                                       ("How long does a refund take?", "en", "could not search")])
def test_a_failed_policy_search_is_said_as_a_failure_not_as_nothing_found(question, lang, apology):
    class DownShop(FakeShop):
        def search_knowledge(self, text: str) -> str:
            return as_json({"error": "the knowledge service is down (HTTP 503)"})

    run = converse(question, DownShop().registry(), lang=lang)
    assert run.tools == ["searchKnowledge"]
    assert apology in run.answer and "HTTP 503" in run.answer
    assert "没有找到" not in run.answer and "found nothing" not in run.answer


def test_time_question():
    run = converse("现在几点了？", FakeShop().registry())
    assert run.actions == [("getCurrentTime", "")]
    assert run.answer == "现在是 2026 年 6 月 30 日（星期二）19:05。"


def test_unknown_order_gets_an_apology_and_no_invented_data():
    run = converse("订单 99999 的快递到哪了？", FakeShop().registry())
    assert run.actions == [("queryOrder", "99999")]
    assert "99999" in run.answer and "订单不存在" in run.answer and "核对" in run.answer
    assert "SF" not in run.answer


@pytest.mark.parametrize(("question", "lang"), [("帮我写一首诗", "zh"), ("Book me a flight to Tokyo", "en")])
def test_out_of_scope_request_is_declined_in_one_round(question, lang):
    run = converse(question, FakeShop().registry(), lang=lang)
    assert run.actions == [] and len(run.replies) == 1
    assert run.final.startswith("Thought: ") and "\nFinal Answer: " in run.final
    assert ("查询订单" if lang == "zh" else "look up orders") in run.answer


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What is a ReAct agent? Answer in one sentence.", "A ReAct agent is"),
        ("你好", "课堂模型"),
        ("Who are you?", "classroom model"),
    ],
)
def test_plain_chat_without_tools_is_short_plain_text(question, expected):
    reply = respond({"model": "classroom", "messages": [{"role": "user", "content": question}]})
    assert expected in reply.text
    assert "Thought:" not in reply.text and "Final Answer:" not in reply.text and not reply.tool_calls


def test_write_file_tool_from_the_second_seed():
    written = {}

    def write_file(text: str) -> str:
        payload = json.loads(text)
        written[payload["file_path"]] = payload["content"]
        return "写入成功"

    registry = ToolRegistry([FunctionTool("writeFile", "将指定内容写入本地文件。输入：含 file_path 和 content 的 JSON。",
                                          write_file)])
    for question, lang in [("把 1 到 10 写入 numbers.txt", "zh"), ("Write the numbers 1 to 10 into numbers.txt", "en")]:
        run = converse(question, registry, lang=lang)
        assert run.tools == ["writeFile"]
        assert written["numbers.txt"] == "\n".join(str(n) for n in range(1, 11))
        assert "numbers.txt" in run.answer


@pytest.mark.parametrize(
    ("observation", "advice"),
    [("城市：北京市，天气：小雨，温度：22℃", "带伞"), ("城市：北京市，天气：晴，温度：28℃", "不用带伞")],
)
def test_weather_tool_from_the_third_seed(observation, advice):
    registry = ToolRegistry([FunctionTool("weather", "查询指定城市的实时天气。输入：城市中文名，如北京。", lambda c: observation)])
    run = converse("北京今天天气怎么样，要带伞吗？", registry)
    assert run.actions == [("weather", "北京")]
    assert advice in run.answer


def test_only_offered_tools_are_called():
    shop = FakeShop()
    questions = [REFUND_ZH, LOGISTICS_ZH, "订单 88232 现在什么状态？", "七天无理由退货怎么算？", "现在几点了？"]
    subsets = [("queryOrder",), ("queryOrder", "applyRefund"), ("searchKnowledge", "getCurrentTime"), ("queryLogistics",)]
    for names in subsets:
        registry = shop.registry(names)
        for question in questions:
            run = converse(question, registry)
            assert set(run.tools) <= set(names), (names, question, run.tools)
            assert "Final Answer:" in run.final


def test_refund_without_clock_or_policy_tools_does_not_guess():
    shop = FakeShop()
    run = converse(REFUND_ZH, shop.registry(("queryOrder", "applyRefund")))
    assert run.tools == ["queryOrder"] and shop.refunds == []
    assert "人工客服" in run.answer


def test_an_earlier_turn_supplies_the_order_id():
    registry = FakeShop().registry()
    request = first_request(LOGISTICS_ZH, registry)
    request["messages"] += [
        {"role": "assistant", "content": "Thought: 已查到。\nFinal Answer: 订单 88231 已签收。"},
        {"role": "user", "content": "那我想退货，扫地机不回充。"},
    ]
    text = respond(request).text.split("Observation:")[0]
    assert parse_action(text) == ("queryOrder", "88231")


def test_a_step_the_registry_refused_is_tried_again():
    """A parser bug (lesson 05) turns the tool name into "Input: 88231": the step did not run, so redo it."""
    request = first_request(LOGISTICS_ZH, FakeShop().registry())
    error = as_json({"error": "unknown tool: Input: 88231", "available_tools": ["queryOrder"]})
    request["messages"] += [
        {"role": "assistant", "content": "Thought: 先查订单。\nAction: queryOrder\nAction Input: 88231\n"},
        {"role": "user", "content": f"Observation: {error}"},
    ]
    assert parse_action(respond(request).text) == ("queryOrder", "88231")


# --- lesson 04: the hallucination ----------------------------------------------------------------------

REFUND_ROUND_1_STEP = (
    "Thought: 用户想退订单 88231，原因是扫地机不回充。先查订单详情，确认商品、签收时间和状态。\n"
    "Action: queryOrder\n"
    "Action Input: 88231\n"
)


def test_without_stop_the_model_invents_observations_and_a_refund():
    text = respond(first_request(REFUND_ZH, FakeShop().registry())).text
    assert text.split("Observation:")[0] == REFUND_ROUND_1_STEP
    observations = [line for line in text.splitlines() if line.startswith("Observation:")]
    assert len(observations) == 2
    assert text.count("Observation:") == 2  # only at the start of lines
    invented_order = json.loads(observations[0].removeprefix("Observation: "))
    assert invented_order["orderId"] == "88231" and "signTime" not in invented_order
    assert "Action: applyRefund" in text
    assert "getCurrentTime" not in text and "searchKnowledge" not in text  # it skipped the checks
    assert FAKE_REFUND_ID in observations[1]
    assert text.splitlines()[-1].startswith("Final Answer:") and FAKE_REFUND_ID in text.splitlines()[-1]


def test_every_key_starts_its_own_line():
    text = respond(first_request(REFUND_ZH, FakeShop().registry())).text
    for line in text.splitlines():
        assert re.match(r"(Thought|Action|Action Input|Observation|Final Answer): ?", line), line


def test_later_rounds_also_run_on_with_invented_observations():
    shop = FakeShop()
    run = converse(REFUND_ZH, shop.registry())
    uncut = respond(run.requests[1]).text  # round 2: the real step is getCurrentTime
    assert uncut.split("Observation:")[0] == run.replies[1]
    assert "Observation: " in uncut and FAKE_REFUND_ID in uncut and "Final Answer:" in uncut


def test_final_answer_steps_contain_no_observation():
    run = converse(REFUND_ZH, FakeShop().registry())
    assert respond(run.requests[-1]).text == run.final
    assert "Observation:" not in run.final


def test_invented_logistics_data_is_false():
    text = respond(first_request(LOGISTICS_ZH, FakeShop().registry())).text
    final = text.splitlines()[-1]
    assert final.startswith("Final Answer:") and "SF1234567890" not in final


# --- the variants --------------------------------------------------------------------------------------


def test_models_and_the_variants_table_agree():
    assert set(MODELS) == {
        "classroom", "classroom-sloppy", "classroom-no-final", "classroom-loop", "classroom-wrong-tool",
        "classroom-verbose", "classroom-ignores-stop", "classroom-bad-args", "classroom-forgets-action",
        "classroom-rephrase", "classroom-split-stop", "classroom-gullible",
    }
    assert VARIANTS_TABLE.startswith("| model | what it does | lessons |")
    rows = [line for line in VARIANTS_TABLE.splitlines()[2:]]
    assert [re.match(r"\| `([^`]+)`", row).group(1) for row in rows] == list(MODELS)


def test_each_variants_lessons_are_the_notebooks_that_name_it():
    folder = Path(__file__).resolve().parents[1] / "notebooks"
    texts = {path.name[:2]: path.read_text(encoding="utf-8") for path in folder.glob("[0-9][0-9]_*.ipynb")}
    for row in VARIANTS_TABLE.splitlines()[3:]:  # the careful `classroom` is in nearly every lesson: not listed here
        model, lessons = re.match(r"\| `([^`]+)` \|.*\| ([^|]+) \|$", row).groups()
        named = {lesson for lesson, text in texts.items() if any(f"{model}{end}" in text for end in '"` ')}
        assert set(re.findall(r"\b\d\d\b", lessons)) == named, model


def test_sloppy_shows_each_sloppiness_in_the_refund_run():
    shop = FakeShop()
    run = converse(REFUND_ZH, shop.registry(), model="classroom-sloppy")
    assert run.tools == ["queryOrder", "getCurrentTime", "searchKnowledge", "applyRefund"]
    r1, r2, r3, r4, r5 = run.replies
    assert "**Action:** queryOrder" in r1
    assert "\naction: getCurrentTime" in r2 and "\naction input:" in r2
    assert "\nAction：searchKnowledge" in r3
    # "Action:" inside the Thought lands on an action step: the Thought names the tool before, and the
    # real Action line below it is applyRefund.
    thought, action = r4.splitlines()[:2]
    assert thought.startswith("Thought: ") and "Action: searchKnowledge" in thought
    assert action == "Action: applyRefund" and "\nAction Input: {" in r4
    assert "\nFinal Answer:\n```\n" in r5 and r5.endswith("\n```")
    assert shop.refunds[0]["refundId"] in r5
    # A strict line scanner finds no "Action:" line in the first three rounds
    for reply in (r1, r2, r3):
        assert not any(line.startswith("Action:") for line in reply.splitlines())


def test_sloppy_style_cycle_puts_action_in_the_thought_on_an_action_step():
    from tinyagent.classroom.variants import SLOPPY_STYLES

    assert SLOPPY_STYLES.index("Action: inside the Thought") == 3  # round 4 of the refund: applyRefund
    assert SLOPPY_STYLES[:3] == ("bold keys", "lower-case keys", "full-width colons")


def test_forgets_action_writes_a_bare_thought_first_then_full_steps():
    shop = FakeShop()
    request = first_request(REFUND_ZH, shop.registry(), model="classroom-forgets-action")
    first = respond(request).text
    assert first.startswith("Thought: ") and "Action" not in first and "Final Answer" not in first
    # Told anything at all (here: the format), it writes the step in full and goes on like `classroom`.
    request["messages"] += [
        {"role": "assistant", "content": first},
        {"role": "user", "content": "Observation: Format error: the reply has a Thought but no Action."},
    ]
    second = respond(request).text.split("Observation:")[0]
    assert second == respond(first_request(REFUND_ZH, shop.registry())).text.split("Observation:")[0]
    assert parse_action(second) == ("queryOrder", "88231")


def test_no_final_ends_in_plain_prose():
    shop = FakeShop()
    run = converse(REFUND_ZH, shop.registry(), model="classroom-no-final")
    assert run.tools == ["queryOrder", "getCurrentTime", "searchKnowledge", "applyRefund"]
    assert "Final Answer" not in run.final and "Thought:" not in run.final and "Action" not in run.final
    assert shop.refunds[0]["refundId"] in run.final


def test_loop_repeats_the_same_action_whatever_it_observes():
    run = converse(LOGISTICS_ZH, FakeShop().registry(), model="classroom-loop", max_rounds=4)
    assert run.actions == [("queryOrder", "88231")] * 4
    assert len(set(run.replies)) == 1


def test_wrong_tool_corrects_itself_from_the_error():
    shop = FakeShop()
    run = converse(REFUND_ZH, shop.registry(), model="classroom-wrong-tool")
    assert run.tools == ["checkOrder", "queryOrder", "getCurrentTime", "searchKnowledge", "applyRefund"]
    assert "checkOrder" in run.replies[1] and "queryOrder、queryLogistics" in run.replies[1]
    assert shop.refunds[0]["refundId"] in run.answer


def test_verbose_thought_is_well_over_300_tokens():
    for question, lang in [(REFUND_ZH, "zh"), (REFUND_EN, "en")]:
        text = respond(first_request(question, FakeShop().registry(), lang, "classroom-verbose")).text
        step = text.split("Observation:")[0]
        thought = step.split("\nAction:")[0]
        assert count_tokens(thought) > 400
        assert step.endswith("Action: queryOrder\nAction Input: 88231\n")


def test_ignores_stop_has_the_classroom_text_and_the_flag():
    request = first_request(REFUND_ZH, FakeShop().registry())
    careful = respond(request)
    rude = respond({**request, "model": "classroom-ignores-stop"})
    assert rude.text == careful.text and rude.ignores_stop and not careful.ignores_stop


def test_keywords_stay_in_english_in_chinese_replies():
    run = converse(REFUND_ZH, FakeShop().registry())
    # Every line of every reply starts with an English key, in the order of the format: a translated key
    # ("最终答案：", "行动输入：") on any line, not only the first, fails. Four steps, then the answer.
    key = re.compile(r"(Thought|Action Input|Action|Final Answer):(?: |$)")
    step, last = ["Thought", "Action", "Action Input"], ["Thought", "Final Answer"]
    assert len(run.replies) == 5
    for number, reply in enumerate(run.replies, 1):
        keys = [match.group(1) if (match := key.match(line)) else line for line in reply.splitlines()]
        assert keys == (last if number == len(run.replies) else step), reply
        assert re.search(r"[\u4e00-\u9fff]", reply), reply  # the reply itself is in Chinese
    assert "\nFinal Answer: " in run.final


# --- function calling ----------------------------------------------------------------------------------

SCHEMAS = {
    "queryOrder": {"order_id": "订单号"},
    "queryLogistics": {"tracking_no": "运单号"},
    "applyRefund": {"orderId": "订单号", "reason": "原因"},
    "searchKnowledge": {"query": "关键词"},
    "getCurrentTime": {},
}


def native_tools(registry: ToolRegistry) -> list[dict]:
    return [{"type": "function", "function": {
        "name": tool.name, "description": tool.description,
        "parameters": {"type": "object", "properties": {k: {"type": "string", "description": d}
                                                        for k, d in SCHEMAS[tool.name].items()},
                       "required": list(SCHEMAS[tool.name])},
    }} for tool in registry]


def converse_natively(question: str, shop: FakeShop, model: str = "classroom", max_rounds: int = 8):
    """The function-calling loop: tool_calls out, one `tool` message per call back."""
    registry = shop.registry()
    messages = [{"role": "system", "content": "You are the Bit Mall assistant."}, {"role": "user", "content": question}]
    replies = []
    for round_no in range(max_rounds):
        reply = respond({"model": model, "messages": messages, "tools": native_tools(registry)})
        replies.append(reply)
        if not reply.tool_calls:
            break
        calls = [{"id": f"call_{round_no}_{i}", "type": "function",
                  "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)}}
                 for i, c in enumerate(reply.tool_calls)]
        messages.append({"role": "assistant", "content": reply.text, "tool_calls": calls})
        for call in reply.tool_calls:
            values = list(call.arguments.values())
            text = "" if not values else values[0] if len(values) == 1 else json.dumps(call.arguments)
            messages.append({"role": "tool", "tool_call_id": calls[reply.tool_calls.index(call)]["id"],
                             "content": registry.execute(Action(call.name, text))})
    return replies


def test_function_calling_queries_two_orders_in_parallel():
    r1, r2, r3 = converse_natively(TWO_ORDERS_ZH, FakeShop())
    assert r1.text is None
    assert [(c.name, c.arguments) for c in r1.tool_calls] == [
        ("queryOrder", {"order_id": "88231"}), ("queryOrder", {"order_id": "88232"})]
    assert [(c.name, c.arguments) for c in r2.tool_calls] == [
        ("queryLogistics", {"tracking_no": "SF1234567890"}), ("queryLogistics", {"tracking_no": "YT2468013579"})]
    assert not r3.tool_calls and "SF1234567890" in r3.text and "YT2468013579" in r3.text
    assert "Final Answer" not in r3.text


def test_text_react_takes_the_two_orders_one_at_a_time():
    run = converse(TWO_ORDERS_ZH, FakeShop().registry())
    assert run.actions == [("queryOrder", "88231"), ("queryOrder", "88232"),
                           ("queryLogistics", "SF1234567890"), ("queryLogistics", "YT2468013579")]
    assert "快件到达上海转运中心" in run.answer and "快件已由本人签收" in run.answer


def test_function_calling_refund_checks_time_and_policy_at_once():
    shop = FakeShop()
    replies = converse_natively(REFUND_ZH, shop)
    assert [[c.name for c in r.tool_calls] for r in replies] == [
        ["queryOrder"], ["getCurrentTime", "searchKnowledge"], ["applyRefund"], []]
    assert shop.refunds[0]["refundId"] in replies[-1].text


@pytest.mark.parametrize("model", list(MODELS))
def test_every_variant_works_with_function_calling(model):
    replies = converse_natively(TWO_ORDERS_ZH, FakeShop(), model=model, max_rounds=5)
    assert replies[0].tool_calls
    if model not in ("classroom-loop", "classroom-rephrase"):  # these two repeat their calls
        assert not replies[-1].tool_calls and "YT2468013579" in replies[-1].text


def test_wrong_tool_in_function_calling_calls_a_missing_tool_first():
    replies = converse_natively(LOGISTICS_ZH, FakeShop(), model="classroom-wrong-tool")
    assert [c.name for c in replies[0].tool_calls] == ["checkOrder"]
    assert [c.name for c in replies[1].tool_calls] == ["queryOrder"]


def test_tool_choice_none_forbids_calls():
    registry = FakeShop().registry()
    reply = respond({"model": "classroom", "tools": native_tools(registry), "tool_choice": "none",
                     "messages": [{"role": "user", "content": LOGISTICS_ZH}]})
    assert not reply.tool_calls and reply.text


# --- determinism and bad input -------------------------------------------------------------------------


@pytest.mark.parametrize("model", list(MODELS))
def test_same_request_same_reply(model):
    run = converse(REFUND_ZH, FakeShop().registry(), max_rounds=3)
    for request in run.requests:
        request = {**request, "model": model}
        assert respond(request) == respond(json.loads(json.dumps(request)))
    assert isinstance(respond(run.requests[0]), Reply)


@pytest.mark.parametrize(
    "request_body",
    [
        [],
        {"model": "classroom"},
        {"model": "classroom", "messages": []},
        {"model": "classroom", "messages": "hi"},
        {"messages": [{"role": "user", "content": "hi"}]},
        {"model": "classroom", "messages": [{"role": "robot", "content": "hi"}]},
        {"model": "classroom", "messages": [{"role": "user", "content": 42}]},
        {"model": "classroom", "messages": [{"role": "user"}]},
        {"model": "classroom", "messages": [{"role": "system", "content": "only a system prompt"}]},
        {"model": "classroom", "messages": [{"role": "user", "content": "hi"}, {"role": "tool", "content": "{}"}]},
        {"model": "classroom", "messages": [
            {"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "nope", "content": "{}"}]},
        {"model": "classroom", "messages": [
            {"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]}]},
        {"model": "classroom", "messages": [{"role": "user", "content": "hi"}], "tools": "queryOrder"},
        {"model": "classroom", "messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function"}]},
    ],
)
def test_malformed_requests_raise_value_error(request_body):
    with pytest.raises(ValueError):
        respond(request_body)


def test_unknown_model_names_the_real_ones():
    with pytest.raises(UnknownModelError, match="classroom-sloppy"):
        respond({"model": "gpt-classroom", "messages": [{"role": "user", "content": "hi"}]})
    assert issubclass(UnknownModelError, ValueError)


# --- the real shop -------------------------------------------------------------------------------------


def test_refund_against_the_real_shop_writes_the_refund_it_quotes():
    from tinyagent import fixed_clock
    from tinyagent.shop import Shop, shop_registry

    with Shop(clock=fixed_clock("2026-06-30T19:05:23")) as shop:
        run = converse(REFUND_ZH, shop_registry(shop))
        assert run.tools == ["queryOrder", "getCurrentTime", "searchKnowledge", "applyRefund"]
        [refund] = shop.refunds()
        assert refund["refundId"] in run.answer and refund["orderId"] == "88231"


# --- errors about the input (lesson 07) ----------------------------------------------------------------


def test_a_rejected_input_is_fixed_from_the_error_observation():
    def query_order(text: str) -> str:
        if not text.startswith("{"):
            return as_json({"error": "input must be a JSON object", "expected": '{"order_id": "88231"}'})
        return FakeShop().query_order(json.loads(text)["order_id"])

    shop = FakeShop()
    registry = ToolRegistry([FunctionTool("queryOrder", "查询订单。输入：JSON。", query_order),
                             *[t for t in shop.registry() if t.name != "queryOrder"]])
    run = converse(LOGISTICS_ZH, registry)
    assert run.actions[:2] == [("queryOrder", "88231"), ("queryOrder", '{"order_id":"88231"}')]
    assert run.actions[2] == ("queryLogistics", "SF1234567890")
    assert "快件已由本人签收" in run.answer


def test_a_tool_that_rejects_every_input_gets_two_tries():
    registry = ToolRegistry([FunctionTool("queryOrder", "查询订单。", lambda text: as_json(
        {"error": "invalid input", "expected": "something else"}))])
    run = converse(LOGISTICS_ZH, registry)
    assert run.tools == ["queryOrder", "queryOrder"]
    assert "invalid input" in run.answer


def test_function_calling_sends_numbers_where_the_schema_asks_for_integers():
    tools = [{"type": "function", "function": {"name": "queryOrder", "parameters": {
        "type": "object", "properties": {"order_id": {"type": "integer"}}, "required": ["order_id"]}}}]
    reply = respond({"model": "classroom", "tools": tools, "messages": [{"role": "user", "content": LOGISTICS_ZH}]})
    assert reply.tool_calls[0].arguments == {"order_id": 88231}


def test_chinese_limits_read_clause_by_clause_as_a_pattern_kept_within_one_clause_would():
    """read_limits searches each Chinese pattern clause by clause instead of with a class of the clause's ends in
    the pattern (cheaper to compile): on policies mixed from their parts, it finds what the class version finds."""
    import random
    import re

    from tinyagent.classroom import refund

    number, clause = r"(\d+|[一二两三四五六七八九十百]+)", r"[^。；;\n]"
    within_one_clause = {  # the patterns as they were: the clause is a character class in each
        "no_reason_zh": number + r"\s*天内?" + clause + r"*?无理由",
        # a quality limit is in no clause about the warranty: nothing from the clause's start says 保修
        "quality_zh": r"(?:^|(?<=[。；;\n]))(?:(?!保修)" + clause + r")*?" + number
                      + r"\s*天内?((?:(?!无理由|保修)" + clause + r")*?)(?:故障|质量)",
        "warranty_years_zh": r"保修" + clause + r"*?" + number + r"\s*年",
        "warranty_days_zh": r"保修" + clause + r"*?(\d+)\s*天",
    }
    rng = random.Random(16)
    parts = ["七", "十五", "30", "7", " ", "天", "天内", "无理由", "退货", "故障", "质量", "保修", "年", "。", "；", ";",
             "，", "\n", "可退换", "签收后"]
    found = 0
    for _ in range(8000):
        text = "".join(rng.choice(parts) for _ in range(rng.randint(1, 14)))
        for name, source in within_one_clause.items():
            theirs = re.search(source, text)
            ours = refund._search_limit(name, text)
            if theirs and "\n" in theirs.group():
                continue  # "\s*" let the old pattern run across a line break between a number and 天: no clause
            assert (ours and ours.group(1)) == (theirs and theirs.group(1)), (name, text)
            found += bool(theirs)
    assert found > 300  # the mixes do reach the patterns
