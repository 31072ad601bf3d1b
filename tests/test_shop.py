"""The shop backend and its five tools: seeded data, tolerant inputs, readable errors, real idempotent refunds."""

import json
import multiprocessing
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.full_disk import full_database
from tinyagent import Action, ToolRegistry, fixed_clock
from tinyagent.errors import ShopDatabaseError
from tinyagent.shop import (
    KNOWLEDGE_BASE,
    ApplyRefundTool,
    GetCurrentTimeTool,
    KnowledgeEntry,
    OrderNotFoundError,
    QueryLogisticsTool,
    QueryOrderTool,
    RefundNotAllowedError,
    SearchKnowledgeTool,
    Shop,
    ShopWriteError,
    knowledge,
    shop_registry,
    shop_tools,
)
from tinyagent.shop.database import MAX_QUERY_CHARS, MAX_REASON_CHARS
from tinyagent.shop.refund_review import describe_refund
from tinyagent.shop.tools import MAX_ID_INPUT_CHARS, BadInput, read_refund_input

NOW = "2026-06-30T19:05:23"
SEED_ORDER_JSON = (
    '{"orderId":"88231","product":"比特 S10 Pro 扫地机","price":1999,"orderTime":"2026-06-20",'
    '"signTime":"2026-06-22","status":"已签收","trackingNo":"SF1234567890"}'
)
SEED_LOGISTICS_JSON = (
    '{"trackingNo":"SF1234567890","carrier":"顺丰速运","status":"已签收","traces":['
    '{"time":"2026-06-20 18:20:00","desc":"快件已揽收"},'
    '{"time":"2026-06-21 09:10:00","desc":"快件到达上海转运中心"},'
    '{"time":"2026-06-22 11:35:00","desc":"快件已由本人签收"}]}'
)
REFUND_ID = re.compile(r"^RF\d{8}\d{4}$")


@pytest.fixture
def shop():
    with Shop(clock=fixed_clock(NOW)) as shop:
        yield shop


@pytest.fixture
def registry(shop):
    return shop_registry(shop)


def call(registry: ToolRegistry, tool: str, tool_input: str = "") -> dict:
    """Run one tool through the registry and decode its JSON Observation."""
    return json.loads(registry.execute(Action(tool, tool_input)))


def refund_input(order_id, reason="质量问题：扫地机不回充") -> str:
    return json.dumps({"orderId": order_id, "reason": reason}, ensure_ascii=False)


# --- the seeded shop ---------------------------------------------------------------------------------------


def test_seed_order_prints_exactly_as_in_the_seed(registry):
    assert registry.execute(Action("queryOrder", "88231")) == SEED_ORDER_JSON


def test_shop_is_seeded_with_six_orders_on_different_paths(shop):
    statuses = {order["orderId"]: order["status"] for order in shop.orders()}
    assert statuses == {
        "88231": "已签收", "88232": "运输中", "88233": "待发货",
        "88234": "已签收", "88235": "已取消", "88236": "已签收",
    }


def test_fresh_shop_has_no_refunds(shop):
    assert shop.refunds() == []


def test_unshipped_order_has_no_sign_time_and_no_tracking_number(registry):
    order = call(registry, "queryOrder", "88233")
    assert order["signTime"] is None and order["trackingNo"] is None and order["status"] == "待发货"


def test_accessory_order_is_cheap_and_signed(shop):
    order = shop.get_order(88234)
    assert (order["product"], order["price"], order["signTime"]) == ("比特 扫地机边刷滤网套装", 39, "2026-06-27")


# --- queryOrder -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["88231", "  88231\n", '"88231"', "订单 88231", "订单号：88231", '{"orderId": 88231}', "```\n88231\n```"]
)
def test_query_order_finds_the_id_in_sloppy_input(registry, text):
    assert registry.execute(Action("queryOrder", text)) == SEED_ORDER_JSON


def test_unknown_order_is_a_readable_error(registry):
    result = registry.run(Action("queryOrder", "99999"))
    assert result.error
    assert json.loads(result.text)["error"] == "订单不存在：99999"


@pytest.mark.parametrize("text", ["", "   ", "我的订单", '""'])
def test_query_order_without_an_id_asks_for_one(shop, text):
    answer = json.loads(QueryOrderTool(shop).invoke(text))
    assert "订单号" in answer["error"]
    assert "88231" in answer["expected"]


def test_get_order_returns_none_for_an_unknown_id(shop):
    assert shop.get_order("99999") is None


# --- queryLogistics ---------------------------------------------------------------------------------------


def test_seed_logistics_print_exactly_as_in_the_seed(registry):
    assert registry.execute(Action("queryLogistics", "SF1234567890")) == SEED_LOGISTICS_JSON


def test_parcel_in_transit_has_traces_but_no_signing(registry):
    order = call(registry, "queryOrder", "88232")
    logistics = call(registry, "queryLogistics", order["trackingNo"])
    assert logistics["status"] == "运输中"
    assert logistics["carrier"] == "圆通速递"
    assert len(logistics["traces"]) == 4
    assert not any("签收" in trace["desc"] for trace in logistics["traces"])


@pytest.mark.parametrize("text", ["sf1234567890", '"SF1234567890"', "运单号 SF1234567890", '{"trackingNo": "SF1234567890"}'])
def test_query_logistics_finds_the_tracking_number_in_sloppy_input(registry, text):
    assert registry.execute(Action("queryLogistics", text)) == SEED_LOGISTICS_JSON


def test_order_id_given_as_tracking_number_points_to_query_order(registry):
    result = registry.run(Action("queryLogistics", "88231"))
    assert result.error
    answer = json.loads(result.text)
    assert "订单号" in answer["error"] and "queryOrder" in answer["hint"]


def test_unknown_tracking_number_is_a_readable_error(shop):
    assert json.loads(QueryLogisticsTool(shop).invoke("SF0000000000"))["error"] == "运单不存在：SF0000000000"


def test_query_logistics_without_input_asks_for_a_tracking_number(shop):
    assert "运单号" in json.loads(QueryLogisticsTool(shop).invoke(""))["error"]


# --- applyRefund ------------------------------------------------------------------------------------------


def test_refund_writes_a_row_and_reports_it(registry, shop):
    answer = call(registry, "applyRefund", refund_input("88231"))
    assert answer == {
        "success": True,
        "refundId": "RF202606300001",
        "orderId": "88231",
        "amount": 1999,
        "message": "退款申请已提交，预计 1-3 个工作日到账",
    }
    assert shop.refunds() == [{
        "refundId": "RF202606300001",
        "orderId": "88231",
        "reason": "质量问题：扫地机不回充",
        "amount": 1999,
        "status": "已提交",
        "createdAt": NOW,
    }]


def test_refund_id_has_the_clock_date_and_a_four_digit_sequence(registry):
    ids = [call(registry, "applyRefund", refund_input(order_id))["refundId"] for order_id in ("88231", "88234")]
    assert ids == ["RF202606300001", "RF202606300002"]
    assert all(REFUND_ID.match(refund_id) for refund_id in ids)


def test_real_refund_id_never_equals_a_seed_style_fabricated_one(registry):
    refund_id = call(registry, "applyRefund", refund_input("88231"))["refundId"]
    fabricated = "RF20260629001"  # the 3-digit id from the seed's hallucinated Observation
    assert len(refund_id) == len(fabricated) + 1 and refund_id != fabricated


def test_refund_sequence_restarts_on_a_new_day(tmp_path):
    path = tmp_path / "shop.db"
    with Shop(path, clock=fixed_clock(NOW)) as shop:
        assert shop.apply_refund("88231", "质量问题")["refundId"] == "RF202606300001"
    with Shop(path, clock=fixed_clock("2026-07-01T09:00:00")) as shop:
        assert shop.apply_refund("88234", "不想要了")["refundId"] == "RF202607010001"


def test_refund_is_idempotent(registry, shop):
    first = call(registry, "applyRefund", refund_input("88231"))
    again = call(registry, "applyRefund", refund_input(88231, reason="再次申请"))  # a number, another reason
    assert again["refundId"] == first["refundId"]
    assert again["duplicate"] is True
    assert first["refundId"] in again["message"]
    assert len(shop.refunds()) == 1
    assert shop.refunds()[0]["reason"] == "质量问题：扫地机不回充"  # the first request's row, untouched


def test_database_refuses_a_second_refund_row_for_one_order(shop):
    shop.apply_refund("88231", "质量问题")
    with pytest.raises(sqlite3.IntegrityError):
        shop._conn.execute(
            "INSERT INTO refunds VALUES ('RF202606309999', '88231', 'again', 1999, '已提交', ?)", (NOW,)
        )


def test_refund_survives_reopening_a_file_database_and_stays_idempotent(tmp_path):
    path = tmp_path / "data" / "shop.db"  # the folder does not exist yet
    with Shop(path, clock=fixed_clock(NOW)) as shop:
        first = shop.apply_refund("88231", "质量问题")
    assert path.exists()
    with Shop(path, clock=fixed_clock("2026-07-02T10:00:00")) as shop:
        assert [refund["refundId"] for refund in shop.refunds()] == [first["refundId"]]
        again = shop.apply_refund("88231", "质量问题")
        assert again["refundId"] == first["refundId"] and again["duplicate"] is True
        assert len(shop.refunds()) == 1
        assert len(shop.orders()) == 6  # seeded once, not again on reopening


def test_reopening_a_file_database_keeps_one_copy_of_the_knowledge_base(tmp_path):
    path = tmp_path / "shop.db"
    Shop(path).close()
    with Shop(path) as shop:
        assert [hit["title"] for hit in shop.search_knowledge("warranty")] == ["保修政策"]
        assert shop._conn.execute("SELECT COUNT(*) FROM knowledge").fetchone()[0] == 8


def test_a_new_file_database_is_created_in_one_transaction(tmp_path, monkeypatch):
    # Schema, seed and knowledge index commit together (one sync to disk, not one per table), so a
    # creation that fails half-way leaves no half-made database behind, and a retry seeds it whole.
    from tinyagent.shop import knowledge

    def broken_index(conn, *args):
        raise RuntimeError("disk full")

    path = tmp_path / "shop.db"
    monkeypatch.setattr(knowledge, "create_index", broken_index)
    with pytest.raises(RuntimeError, match="disk full"):
        Shop(path)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT name FROM sqlite_master").fetchall() == []
    monkeypatch.undo()
    with Shop(path) as shop:
        assert len(shop.orders()) == 6
        assert shop.search_knowledge("warranty")


@pytest.mark.parametrize(
    "text, complaint",
    [
        ("88231", "JSON 对象"),
        ("not json", "JSON"),
        ('{"orderId": "88231", "reason": ', "JSON"),
        ('["88231", "broken"]', "JSON 对象"),
        ('{"reason": "坏了"}', "orderId"),
        ('{"orderId": "", "reason": "坏了"}', "orderId"),
        ('{"orderId": true, "reason": "坏了"}', "orderId"),
        ('{"orderId": "88231"}', "reason"),
        ('{"orderId": "88231", "reason": "  "}', "reason"),
        ('{"orderId": "88231", "reason": 42}', "reason"),
    ],
)
def test_bad_refund_input_says_what_is_wrong_and_what_is_expected(registry, shop, text, complaint):
    result = registry.run(Action("applyRefund", text))
    answer = json.loads(result.text)
    assert result.error
    assert complaint in answer["error"]
    assert json.loads(answer["expected"]) == {"orderId": "88231", "reason": "质量问题：扫地机不回充"}
    assert shop.refunds() == []


def test_refund_input_in_a_code_fence_is_accepted(registry):
    fenced = "```json\n" + refund_input("88231") + "\n```"
    assert call(registry, "applyRefund", fenced)["refundId"] == "RF202606300001"


def test_refund_for_an_unknown_order_is_refused_without_a_row(registry, shop):
    answer = call(registry, "applyRefund", refund_input("99999"))
    assert answer == {"error": "订单不存在：99999", "orderId": "99999"}
    assert shop.refunds() == []


def test_cancelled_order_cannot_be_refunded(registry, shop):
    answer = call(registry, "applyRefund", refund_input("88235"))
    assert "已取消" in answer["error"]
    assert shop.refunds() == []


@pytest.mark.parametrize("status", ["待付款", "已退款", "已退货", "已取消 "])
def test_an_order_unpaid_refunded_or_returned_cannot_be_refunded(shop, status):
    # Only 已取消 was refused: an unpaid order, or one refunded or returned already, got a refund of its price.
    shop._conn.execute("UPDATE orders SET status = ? WHERE order_id = '88231'", (status,))
    with pytest.raises(RefundNotAllowedError, match=status.strip()):
        shop.apply_refund("88231", "坏了")
    assert shop.refunds() == []


def test_a_reason_too_long_is_refused_before_anyone_is_asked(shop):
    # The approval summary showed "refund ¥1999 for order 88231" for a reason the tool then refused.
    too_long = refund_input("88231", reason="质量问题" * 130)  # 520 characters
    assert describe_refund(shop, "en")(too_long).startswith("applyRefund with an input the tool will refuse (退款原因过长：520")
    with pytest.raises(BadInput, match="退款原因过长：520 个字符，上限 500"):
        read_refund_input(too_long)
    assert read_refund_input(refund_input("88231", reason="质" * 500)) == ("88231", "质" * 500)


def test_shop_raises_typed_errors_the_tool_turns_into_observations(shop):
    with pytest.raises(OrderNotFoundError):
        shop.apply_refund("99999", "坏了")
    with pytest.raises(RefundNotAllowedError):
        shop.apply_refund("88235", "坏了")
    with pytest.raises(ValueError):
        shop.apply_refund("88231", "")


def test_refund_tool_leaves_policy_to_the_agent(registry):
    # 88236 was signed 22 days before NOW, past both return windows: the tool still accepts it.
    assert call(registry, "applyRefund", refund_input("88236"))["success"] is True


def test_parallel_refunds_for_different_orders_get_distinct_ids(shop):
    orders = ["88231", "88232", "88233", "88234", "88236"]
    results: dict[str, str] = {}

    def ask(order_id: str) -> None:
        for _ in range(3):  # each thread also repeats itself, to race the idempotency check
            results[order_id] = shop.apply_refund(order_id, "并发测试")["refundId"]

    threads = [threading.Thread(target=ask, args=(order_id,)) for order_id in orders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results.values()) == [f"RF20260630{n:04d}" for n in range(1, 6)]
    assert sorted(refund["orderId"] for refund in shop.refunds()) == orders


def test_parallel_refunds_for_one_order_write_one_row(shop):
    ids: list[str] = []
    threads = [
        threading.Thread(target=lambda: ids.append(shop.apply_refund("88231", "并发")["refundId"]))
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert set(ids) == {"RF202606300001"}
    assert len(shop.refunds()) == 1


# --- searchKnowledge --------------------------------------------------------------------------------------


def test_search_knowledge_returns_ranked_policies_as_json(registry):
    answer = call(registry, "searchKnowledge", "扫地机 不回充 退货 政策")
    assert answer["query"] == "扫地机 不回充 退货 政策"
    assert [hit["title"] for hit in answer["results"]][:2] == ["质量问题退换货", "七天无理由退货政策"]
    assert "15 天" in answer["results"][0]["content"]
    assert set(answer["results"][0]) == {"title", "content", "score"}


def test_search_knowledge_accepts_a_json_query(registry):
    answer = call(registry, "searchKnowledge", '{"query": "warranty"}')
    assert [hit["title"] for hit in answer["results"]] == ["保修政策"]


def test_search_with_no_match_returns_an_empty_list_and_a_hint(registry):
    result = registry.run(Action("searchKnowledge", "股票行情"))
    answer = json.loads(result.text)
    assert not result.error
    assert answer["results"] == [] and "退货" in answer["hint"]


def test_empty_search_is_an_error(shop):
    assert "关键词" in json.loads(SearchKnowledgeTool(shop).invoke("  "))["error"]


# --- getCurrentTime ---------------------------------------------------------------------------------------


def test_current_time_comes_from_the_injected_clock(registry):
    assert registry.execute(Action("getCurrentTime", "")) == '{"currentTime":"2026-06-30T19:05:23","weekday":"星期二"}'


def test_current_time_ignores_its_input():
    tool = GetCurrentTimeTool(fixed_clock(NOW))
    assert tool.invoke("now please") == tool.invoke("")


@pytest.mark.parametrize("zone", ["UTC", "America/Los_Angeles", "Asia/Tokyo", "Asia/Shanghai"])
def test_the_real_clock_tells_the_shops_time_whatever_zone_the_machine_is_in(zone):
    # A hub or a CI runner in UTC would be 8 hours behind the shop in China: for those hours its getCurrentTime
    # said yesterday, and the return windows (counted in the shop's days) stayed open too long.
    code = ("import datetime, json; from tinyagent.clock import system_clock; "
            "before = datetime.datetime.now(datetime.timezone.utc); shop = system_clock(); "
            "after = datetime.datetime.now(datetime.timezone.utc); "
            "print(json.dumps([before.isoformat(), shop.isoformat(), after.isoformat()]))")
    env = {**os.environ, "TZ": zone}
    output = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    before, shop_time, after = (datetime.fromisoformat(text) for text in json.loads(output))
    assert shop_time.tzinfo is None  # naive, like every date the shop keeps
    eight = timedelta(hours=8)
    assert (before + eight).replace(tzinfo=None, microsecond=0) <= shop_time <= (after + eight).replace(tzinfo=None)


def test_a_fixed_moment_with_an_offset_reads_as_the_shops_time_at_that_instant():
    assert fixed_clock("2026-06-30T13:05:23+02:00")() == datetime(2026, 6, 30, 19, 5, 23)
    assert fixed_clock("2026-06-30T16:30:00+00:00")() == datetime(2026, 7, 1, 0, 30)  # a day later in the shop
    assert fixed_clock(datetime(2026, 6, 30, 11, 5, 23, tzinfo=UTC))() == datetime(2026, 6, 30, 19, 5, 23)
    assert fixed_clock(NOW)() == datetime.fromisoformat(NOW)  # a naive moment is the shop's time already
    tool = GetCurrentTimeTool(fixed_clock("2026-06-30T16:30:00Z"))
    assert json.loads(tool.invoke("")) == {"currentTime": "2026-07-01T00:30:00", "weekday": "星期三"}
    with pytest.raises(ValueError, match="outside the dates the shop's clock can tell"):  # not an OverflowError
        fixed_clock("0001-01-01T05:00:00+09:00")


# --- wiring -----------------------------------------------------------------------------------------------


def test_shop_tools_come_in_the_seed_order(shop):
    tools = shop_tools(shop)
    assert [tool.name for tool in tools] == [
        "queryOrder", "queryLogistics", "applyRefund", "searchKnowledge", "getCurrentTime"
    ]
    assert [type(tool) for tool in tools] == [
        QueryOrderTool, QueryLogisticsTool, ApplyRefundTool, SearchKnowledgeTool, GetCurrentTimeTool
    ]


def test_tools_use_the_shop_clock_unless_given_another(shop):
    assert json.loads(shop_tools(shop)[-1].invoke(""))["currentTime"] == NOW
    other = shop_tools(shop, clock=fixed_clock("2026-07-01T08:00:00"))[-1]
    assert json.loads(other.invoke(""))["currentTime"] == "2026-07-01T08:00:00"


def test_registry_lists_the_five_tools_with_descriptions(registry):
    lines = registry.build_tool_list().splitlines()
    assert [line.split(" - ")[0] for line in lines] == [
        "1. queryOrder", "2. queryLogistics", "3. applyRefund", "4. searchKnowledge", "5. getCurrentTime"
    ]
    assert all(" - " in line and len(line) > 30 for line in lines)


def test_closed_shop_refuses_to_work():
    shop = Shop()
    shop.close()
    with pytest.raises(sqlite3.ProgrammingError):
        shop.get_order("88231")


# --- several processes on one database file ---------------------------------------------------------------
# Threads share one Shop and its lock; processes share only the file, so SQLite's own locking must keep the
# refunds apart. Each trial starts its processes together at a barrier, to make the race as likely as it gets.

EXTRA_ORDERS = [str(n) for n in range(70001, 70031)]  # more orders than the seed has, to widen the race
TRIALS = 3


def _process_context():
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def _refund_in_a_process(path, order_ids, barrier, results):
    answers = []
    try:
        barrier.wait()
        with Shop(path, clock=fixed_clock(NOW)) as shop:
            for order_id in order_ids:
                try:
                    answers.append((order_id, shop.apply_refund(order_id, "并发测试")["refundId"]))
                except Exception as exc:  # noqa: BLE001 - the test reports every failure, not just the first
                    answers.append((order_id, f"{type(exc).__name__}: {exc}"))
    finally:
        results.put(answers)


def _run_processes(target, args_per_process) -> list:
    """Start one process per args tuple, all at once; return the lists they put on the queue, joined."""
    context = _process_context()
    barrier = context.Barrier(len(args_per_process))
    results = context.Queue()
    processes = [context.Process(target=target, args=(*args, barrier, results)) for args in args_per_process]
    try:
        for process in processes:
            process.start()
        # Read before joining: a process that has put data on a queue exits only once it is read.
        collected = [item for _ in processes for item in results.get(timeout=300)]
        for process in processes:
            process.join(timeout=60)
        return collected
    finally:
        for process in processes:
            if process.is_alive():
                process.kill()
                process.join()


def test_refunds_of_different_orders_from_several_processes_all_land_with_distinct_ids(tmp_path):
    for trial in range(TRIALS):
        path = str(tmp_path / f"shop{trial}.db")
        with Shop(path, clock=fixed_clock(NOW)) as shop:
            shop._conn.executemany(
                "INSERT INTO orders VALUES (?, '测试商品', 100, '2026-06-20', NULL, '待发货', NULL)",
                [(order_id,) for order_id in EXTRA_ORDERS],
            )
            shop._conn.commit()
        # Six processes, five orders each, no order shared: every refund must be written, once.
        chunks = [(path, EXTRA_ORDERS[i::6]) for i in range(6)]
        results = dict(_run_processes(_refund_in_a_process, chunks))
        failures = {order: answer for order, answer in results.items() if not REFUND_ID.match(answer)}
        assert failures == {}, f"trial {trial}"
        assert sorted(results) == EXTRA_ORDERS
        assert sorted(results.values()) == [f"RF20260630{n:04d}" for n in range(1, 31)]
        with Shop(path) as shop:
            assert sorted(refund["orderId"] for refund in shop.refunds()) == EXTRA_ORDERS


def test_refunds_of_one_order_from_several_processes_write_one_row(tmp_path):
    for trial in range(TRIALS):
        path = str(tmp_path / f"shop{trial}.db")
        Shop(path).close()
        # Every process asks for 88231 and for an order of its own: one row for 88231, one for each other.
        orders = ["88232", "88233", "88234", "88236"]
        results = _run_processes(_refund_in_a_process, [(path, ["88231", order]) for order in orders])
        ids_for_88231 = {answer for order, answer in results if order == "88231"}
        assert len(ids_for_88231) == 1 and REFUND_ID.match(ids_for_88231.pop()), (trial, results)
        with Shop(path) as shop:
            assert sorted(refund["orderId"] for refund in shop.refunds()) == ["88231", *orders]


def _open_in_a_process(path, barrier, results):
    answer = "did not finish"
    try:
        barrier.wait()
        with Shop(path) as shop:
            answer = (len(shop.orders()), [hit["title"] for hit in shop.search_knowledge("warranty")])
    except Exception as exc:  # noqa: BLE001 - reported by the test
        answer = f"{type(exc).__name__}: {exc}"
    finally:
        results.put([answer])


def test_many_processes_opening_a_new_file_at_once_all_get_the_same_seeded_shop(tmp_path):
    for trial in range(TRIALS):
        path = str(tmp_path / f"new{trial}.db")
        results = _run_processes(_open_in_a_process, [(path,)] * 12)
        assert results == [(6, ["保修政策"])] * 12, f"trial {trial}"
        with Shop(path) as shop:
            assert len(shop.orders()) == 6
            assert shop._conn.execute("SELECT COUNT(*) FROM knowledge").fetchone()[0] == len(KNOWLEDGE_BASE)


# --- a database that cannot be written -------------------------------------------------------------------

# Run as the child process of the read-only tests: open the shop, query it, ask for a refund.
READ_ONLY_CHILD = """
import json, sys
from tinyagent import Action, fixed_clock
from tinyagent.shop import Shop, shop_registry
with Shop(sys.argv[1], clock=fixed_clock("2026-06-30T19:05:23")) as shop:
    tools = shop_registry(shop)
    print(json.dumps({
        "order": json.loads(tools.execute(Action("queryOrder", "88231"))),
        "search": [hit["title"] for hit in shop.search_knowledge("warranty")],
        "refunds": shop.refunds(),
        "refund": json.loads(tools.execute(Action("applyRefund", '{"orderId": "88231", "reason": "坏了"}'))),
    }, ensure_ascii=False))
"""


def run_in_read_only_folder(folder, *command) -> subprocess.CompletedProcess:
    """Run `command` while `folder` and everything in it genuinely cannot be written.

    A normal user gets that from chmod. root ignores file modes, so for root the folder is bind-mounted
    read-only in a private mount namespace of the child alone (`unshare -m`): the kernel then refuses every
    write with EROFS, as it would on a read-only disk, and the mount vanishes with the child.
    """
    folder = str(folder)
    if os.geteuid() != 0:
        paths = [folder, *(os.path.join(folder, name) for name in os.listdir(folder))]
        modes = {path: os.stat(path).st_mode for path in paths}
        for path in paths:
            os.chmod(path, 0o555 if os.path.isdir(path) else 0o444)
        try:
            return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        finally:
            for path, mode in modes.items():
                os.chmod(path, mode)
    if shutil.which("unshare") is None:
        _cannot("root needs unshare(1) to make a folder read-only")
    script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" "$0" && exec "$@"'
    done = subprocess.run(["unshare", "-m", "sh", "-c", script, folder, *command],
                          capture_output=True, text=True, timeout=120, check=False)
    if "mount:" in done.stderr or "unshare:" in done.stderr:
        _cannot(f"cannot make a read-only folder here: {done.stderr.strip()}")
    return done


def _cannot(why: str) -> None:
    """Skip on a developer's machine that cannot; in CI (which runs as root, with util-linux) the tests must run."""
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the read-only folder tests: {why}", pytrace=False)
    pytest.skip(why)


def test_the_read_only_helper_really_stops_writes(tmp_path):
    (tmp_path / "file.txt").write_text("before")
    code = "import sys; open(sys.argv[1], 'w').write('after')"
    done = run_in_read_only_folder(tmp_path, sys.executable, "-c", code, str(tmp_path / "file.txt"))
    assert done.returncode != 0 and ("Read-only" in done.stderr or "Permission denied" in done.stderr)
    assert (tmp_path / "file.txt").read_text() == "before"


@pytest.mark.parametrize("stale_knowledge", [False, True])
def test_read_only_database_answers_queries_and_refuses_refunds_with_a_clear_observation(tmp_path, stale_knowledge):
    path = tmp_path / "shop.db"
    Shop(path).close()
    if stale_knowledge:  # as if made by an older version: the index cannot be rebuilt in the file
        with sqlite3.connect(path) as conn:
            conn.execute("UPDATE meta SET value = 'older' WHERE key = 'knowledge_hash'")
            conn.execute("DELETE FROM knowledge_fts")
        conn.close()
    before = path.read_bytes()
    done = run_in_read_only_folder(tmp_path, sys.executable, "-c", READ_ONLY_CHILD, str(path))
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["order"] == json.loads(SEED_ORDER_JSON)
    assert answer["search"] == ["保修政策"]
    assert answer["refunds"] == []
    assert "只读" in answer["refund"]["error"] and "read-only" in answer["refund"]["error"]
    assert path.read_bytes() == before


def test_a_refund_on_a_full_disk_is_refused_with_a_clear_observation_and_writes_nothing(tmp_path):
    # SQLite rolls back by itself on SQLITE_FULL: the shop's own ROLLBACK then raised "cannot rollback - no
    # transaction is active", and the tool reported that instead of what happened.
    path = tmp_path / "shop.db"
    with Shop(path, clock=fixed_clock(NOW)) as shop:
        full_database(path, shop._conn, "INSERT INTO refunds VALUES (?, ?, 'x', 0, 's', 't')",
                      lambda n: (f"RF1999{n:08d}", f"F{n:05d}"))
        filled = len(shop.refunds())
        answer = json.loads(shop_registry(shop).execute(Action("applyRefund", '{"orderId": "88231", "reason": "坏了"}')))
        assert "写入失败" in answer["error"] and "database or disk is full" in answer["error"], answer
        assert "\n" not in answer["error"] and str(path) in answer["error"]
        assert len(shop.refunds()) == filled and not shop._conn.in_transaction
        assert json.loads(shop_registry(shop).execute(Action("queryOrder", "88231")))["orderId"] == "88231"
        with pytest.raises(ShopWriteError, match="nothing was changed"):
            shop.apply_refund("88231", "坏了")


def test_reopening_a_database_writes_nothing_to_it(tmp_path):
    path = tmp_path / "shop.db"
    Shop(path).close()
    before = path.read_bytes()  # SQLite's header counts every write transaction: any write changes the bytes
    with Shop(path) as shop:
        assert shop.search_knowledge("warranty")[0]["title"] == "保修政策"
    assert path.read_bytes() == before


def test_a_changed_knowledge_base_is_rebuilt_when_the_database_is_opened(tmp_path, monkeypatch):
    path = tmp_path / "shop.db"
    Shop(path).close()
    new_entry = KnowledgeEntry(title="以旧换新", content="旧机折价 100 元。", keywords="trade in old machine")
    monkeypatch.setattr(knowledge, "KNOWLEDGE_BASE", (*KNOWLEDGE_BASE, new_entry))
    with Shop(path) as shop:
        assert [hit["title"] for hit in shop.search_knowledge("trade in")] == ["以旧换新"]
        assert shop._conn.execute("SELECT COUNT(*) FROM knowledge").fetchone()[0] == len(KNOWLEDGE_BASE) + 1


# --- inputs that do not name exactly one order ------------------------------------------------------------


@pytest.mark.parametrize("text", ["-88236", "−88236", "订单 −88236", "88232 88234", "88231, 88232", "88231.5", "+88231", "88231-88234",
                                  "订单 88231 和 88232", '{"orderId": "88232 88234"}', '{"orderId": -88236}'])
def test_query_order_refuses_an_input_that_does_not_name_exactly_one_order(shop, text):
    answer = json.loads(QueryOrderTool(shop).invoke(text))
    assert "error" in answer and "订单号" in answer["error"] and "88231" in answer["expected"], answer
    assert "orderId" not in answer  # no order was looked up, let alone shown


@pytest.mark.parametrize("order_id", ["-88236", "88232 88234", "88231 88231x", 88231.0, -88236, "88236.0"])
def test_refund_refuses_an_order_id_that_does_not_name_exactly_one_order(registry, shop, order_id):
    result = registry.run(Action("applyRefund", refund_input(order_id)))
    answer = json.loads(result.text)
    assert result.error and "orderId" in answer["error"], answer
    assert shop.refunds() == []


def test_ambiguous_refund_says_which_ids_it_saw(registry):
    answer = call(registry, "applyRefund", refund_input("88232 88234"))
    assert "88232" in answer["error"] and "88234" in answer["error"]


@pytest.mark.parametrize("text", ["SF1234567890 YT2468013579", "-SF1234567890", "运单 SF1234567890 或 ZT5566778899"])
def test_query_logistics_refuses_an_input_that_does_not_name_exactly_one_parcel(shop, text):
    answer = json.loads(QueryLogisticsTool(shop).invoke(text))
    assert "运单号" in answer["error"] and "SF1234567890" in answer["expected"], answer
    assert "traces" not in answer


@pytest.mark.parametrize("text", ["88231 88231", "order #88231, please", "订单88231", "８８２３１", '{"order": "88231"}',
                                  '{"orderId": "88231", "note": "第 2 次"}'])
def test_one_order_named_in_any_harmless_way_is_still_found(registry, text):
    assert registry.execute(Action("queryOrder", text)) == SEED_ORDER_JSON


# --- size limits ------------------------------------------------------------------------------------------


def test_a_huge_search_query_is_refused_at_once_with_the_limit_stated(registry, shop):
    result = registry.run(Action("searchKnowledge", "扫地机不回充怎么退货" * 100_000))  # 1 MB
    answer = json.loads(result.text)
    assert result.error
    assert str(MAX_QUERY_CHARS) in answer["error"] and "query" in answer["error"]
    assert len(result.text) < 1000  # the query is not echoed back whole


@pytest.mark.parametrize("wrapped", ["```1" + " " * 100_000 + "1", "```json\n1" + " \n" * 50_000 + "1"])
def test_a_huge_query_in_an_unclosed_fence_is_refused_at_once_too(registry, wrapped):
    # The fence was taken off by a regex tried at every position of the spaces, before the length was checked:
    # 100,000 of them held the shop's tool for 14 s. Now milliseconds; 60 s only tells a hang from a loaded machine.
    started = time.monotonic()
    result = registry.run(Action("searchKnowledge", wrapped))
    assert time.monotonic() - started < 60
    assert result.error and str(MAX_QUERY_CHARS) in json.loads(result.text)["error"]


def test_a_query_typed_in_full_width_letters_finds_what_the_same_letters_find(registry):
    # A Chinese keyboard in full-width mode types ｗａｒｒａｎｔｙ: the index reads it as warranty (NFKC).
    assert call(registry, "searchKnowledge", "ｗａｒｒａｎｔｙ")["results"] == call(
        registry, "searchKnowledge", "warranty")["results"] != []


@pytest.mark.parametrize("limit", [2.5, "3", True, None])
def test_a_search_limit_that_is_no_whole_number_is_refused_in_one_line(shop, limit):
    with pytest.raises(TypeError, match="limit must be a whole number"):
        shop.search_passages("保修", limit)
    with pytest.raises(TypeError, match="limit must be a whole number"):
        shop.search_knowledge("保修", limit)
    with pytest.raises(TypeError, match="limit must be a whole number"):
        SearchKnowledgeTool(shop, limit=limit)


def test_a_huge_search_limit_returns_every_match(shop):
    assert shop.search_passages("保修", 10**30) == shop.search_passages("保修", 1000)


def test_the_shop_itself_refuses_a_huge_search_query(shop):
    with pytest.raises(ValueError, match=str(MAX_QUERY_CHARS)):
        shop.search_knowledge("退货" * MAX_QUERY_CHARS)


def test_a_query_at_the_limit_is_still_searched(registry):
    query = ("退货 " * MAX_QUERY_CHARS)[:MAX_QUERY_CHARS]
    assert call(registry, "searchKnowledge", query)["results"][0]["title"] == "七天无理由退货政策"


def test_a_huge_refund_reason_is_refused_and_nothing_is_stored(registry, shop):
    result = registry.run(Action("applyRefund", refund_input("88231", reason="坏了" * 5_000_000)))  # 10 MB
    answer = json.loads(result.text)
    assert result.error and str(MAX_REASON_CHARS) in answer["error"], answer["error"]
    assert len(result.text) < 1000
    assert shop.refunds() == []
    with pytest.raises(ValueError, match=str(MAX_REASON_CHARS)):
        shop.apply_refund("88231", "x" * (MAX_REASON_CHARS + 1))
    assert shop.refunds() == []


@pytest.mark.parametrize("tool", ["queryOrder", "queryLogistics"])
def test_a_huge_id_input_is_refused_with_the_limit_stated(registry, tool):
    result = registry.run(Action(tool, "88231 " + "x" * 1_000_000))
    assert result.error and str(MAX_ID_INPUT_CHARS) in json.loads(result.text)["error"]
    assert len(result.text) < 1000


# --- database paths that cannot be used -------------------------------------------------------------------


def bad_database_paths(tmp_path) -> dict[str, str]:
    (tmp_path / "folder").mkdir()
    (tmp_path / "notes.txt").write_text("this is not a database\n" * 50)
    return {
        "a folder": str(tmp_path / "folder"),
        "a text file": str(tmp_path / "notes.txt"),
        "/dev/null": "/dev/null",
        "a path under /proc": "/proc/tinyagent/shop.db",
        "a file in /proc": "/proc/self/status",
        "a path under a file": str(tmp_path / "notes.txt" / "shop.db"),
    }


@pytest.mark.parametrize("what", ["a folder", "a text file", "/dev/null", "a path under /proc", "a file in /proc",
                                  "a path under a file"])
def test_a_path_that_is_not_a_usable_database_raises_one_clear_error(tmp_path, what):
    path = bad_database_paths(tmp_path)[what]
    before = Path(path).read_bytes() if Path(path).is_file() and not path.startswith("/proc") else None
    with pytest.raises(ShopDatabaseError) as caught:
        Shop(path)
    message = str(caught.value)
    assert "\n" not in message and path in message, message
    if before is not None:
        assert Path(path).read_bytes() == before  # the text file was not touched


@pytest.mark.parametrize("blank", ["", "  ", "\t"])
def test_a_blank_database_path_is_one_clear_error_and_makes_no_file(tmp_path, monkeypatch, blank):
    monkeypatch.chdir(tmp_path)  # "  " was a file of that name in the current folder; "" read as " is a folder"
    with pytest.raises(ShopDatabaseError, match="the path given for the shop's database is empty: give a file path"):
        Shop(blank)
    assert list(tmp_path.iterdir()) == []


def test_a_new_database_in_a_read_only_folder_raises_one_clear_error(tmp_path):
    code = (
        "import sys\nfrom tinyagent.errors import ShopDatabaseError\nfrom tinyagent.shop import Shop\n"
        "try:\n    Shop(sys.argv[1])\nexcept ShopDatabaseError as exc:\n    print(exc)\n"
    )
    done = run_in_read_only_folder(tmp_path, sys.executable, "-c", code, str(tmp_path / "shop.db"))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert "shop.db" in done.stdout and len(done.stdout.strip().splitlines()) == 1
    assert "writ" in done.stdout  # "cannot be written" / "not writable": says what is wrong


def ask_with_db(db: str, cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "TINYAGENT_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "tinyagent", "ask", "订单 88231 到哪了？", "--db", db],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=120, check=False)


@pytest.mark.parametrize("what", ["a folder", "a text file", "/dev/null", "a path under /proc", "a path under a file"])
def test_ask_with_an_unusable_db_prints_one_line_and_exits_2(tmp_path, what):
    path = bad_database_paths(tmp_path)[what]
    done = ask_with_db(path, tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and path in lines[0], done.stderr


def test_ask_with_a_db_in_a_read_only_folder_prints_one_line_and_exits_2(tmp_path):
    offline_main = ("import os, sys; os.environ['TINYAGENT_OFFLINE'] = '1'; "
                    "from tinyagent.__main__ import main; sys.exit(main(sys.argv[1:]))")
    command = [sys.executable, "-c", offline_main, "ask", "订单 88231 到哪了？", "--db", str(tmp_path / "shop.db")]
    done = run_in_read_only_folder(tmp_path, *command)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "shop.db" in done.stderr


def test_a_database_that_cannot_be_made_leaves_no_folders_behind(tmp_path):
    # SQLite takes paths of at most 504 bytes; the folders on the way were made first, and stayed.
    deep = tmp_path / "made" / ("d" * 200) / ("d" * 200) / ("d" * 200) / "shop.db"
    with pytest.raises(ShopDatabaseError, match="too long for SQLite"):
        Shop(deep, clock=fixed_clock(NOW))
    assert list(tmp_path.iterdir()) == []


def test_the_folders_for_a_new_database_are_made(tmp_path):
    with Shop(tmp_path / "new" / "shop.db", clock=fixed_clock(NOW)) as shop:
        assert shop.get_order("88231")
    assert (tmp_path / "new" / "shop.db").is_file()


@pytest.mark.parametrize("uri_like", ["file:{}?mode=memory", "file:{}"])
def test_a_database_name_that_reads_like_an_sqlite_uri_is_just_a_file_name(tmp_path, monkeypatch, uri_like):
    # SQLite read "file:/x/m.db?mode=memory" as a URI even with uri=False: the refund lived in memory and was lost (the
    # next run issued the same id); "file:/x/m.db" opened /x/m.db, while the folders made were ./file:/x.
    monkeypatch.chdir(tmp_path)
    elsewhere = tmp_path / "elsewhere" / "m.db"
    elsewhere.parent.mkdir()
    name = uri_like.format(elsewhere)
    with Shop(name, clock=fixed_clock(NOW)) as shop:
        refund = shop.apply_refund("88231", "质量问题")
    with Shop(name, clock=fixed_clock(NOW)) as shop:
        assert shop.refunds() == [{key: value for key, value in refund.items() if key != "duplicate"}]
    assert (tmp_path / name).is_file() and not elsewhere.exists()


@pytest.mark.parametrize("written", ["SF 1234567890", "运单 SF 1234567890", '{"trackingNo": "SF  1234567890"}'])
def test_a_tracking_number_with_its_carrier_letters_set_apart_is_read_whole(registry, written):
    # The letters, holding no digit, were dropped: "运单不存在：1234567890", a number the model never wrote.
    assert call(registry, "queryLogistics", written)["trackingNo"] == "SF1234567890"


def test_a_refund_input_giving_a_key_twice_is_refused(registry, shop):
    # Python's json took the last orderId (88232), where a person reading the input sees 88231 first.
    answer = call(registry, "applyRefund", '{"orderId": "88231", "orderId": "88232", "reason": "坏了"}')
    assert answer["error"] == "输入中 orderId 出现了不止一次（orderId is given more than once）"
    assert shop.refunds() == []


@pytest.mark.parametrize(("tool", "written", "twice"), [
    ("queryOrder", '{"orderId": "88231", "orderId": "88232"}', "orderId"),
    ("queryOrder", '{"orderId": "88231", "orderid": "88232"}', "orderId / orderid"),
    ("queryOrder", '{"order_id": "88231", "ORDERID": "88232"}', "order_id / ORDERID"),
    ("queryLogistics", '{"trackingNo": "SF1234567890", "tracking_no": "YT2468013579"}', "trackingNo / tracking_no"),
])
def test_a_look_up_giving_its_id_twice_is_refused_as_applyrefund_refuses_it(registry, tool, written, twice):
    # The key is matched however it is spelled, and the last spelling won: queryOrder looked up 88232, not 88231.
    answer = call(registry, tool, written)
    assert answer.get("error") == f"输入中 {twice} 出现了不止一次（{twice} is given more than once）", answer
    assert call(registry, "queryOrder", '{"order_id": "88232"}')["orderId"] == "88232"  # one spelling is still read


def test_the_approval_summary_says_what_applyrefund_will_do_with_a_cancelled_or_refunded_order(registry, shop):
    # It said "refund ¥199 for order 88235 (..., 已取消)" and "refund ¥1999" for an order refunded already: a person
    # was asked to approve a payment the tool would refuse, or not make.
    cancelled = describe_refund(shop, "en")(refund_input("88235"))
    assert cancelled.startswith("applyRefund will refuse order 88235") and "nothing is paid" in cancelled
    assert "已取消" in call(registry, "applyRefund", refund_input("88235"))["error"]
    first = shop.apply_refund("88231", "坏了")
    for lang in ("en", "zh"):
        again = describe_refund(shop, lang)(refund_input("88231"))
        assert first["refundId"] in again and not again.startswith(("refund ¥", "退款 ¥")), again
    assert call(registry, "applyRefund", refund_input("88231"))["duplicate"] is True
    assert describe_refund(shop, "en")(refund_input("88234")).startswith("refund ¥39 for order 88234")
