"""How the shop's tools (tinyagent/shop/tools.py) read the model's input, and what they answer when the shop's database
is busy: a key given twice, a tracking number's letters set apart in lower case, another program holding the lock."""

import json
import sqlite3

import pytest

from tinyagent import Action, ToolRegistry, fixed_clock
from tinyagent.shop import Shop, shop_registry

NOW = "2026-06-30T19:05:23"
BUSY = ("商店数据库正忙（另一个程序正在使用它），什么都没有改，请稍后再试（the shop's database is busy (another program is "
        "using it); nothing was changed; try again shortly: {path}）")


@pytest.fixture
def registry():
    with Shop(clock=fixed_clock(NOW)) as shop:
        yield shop_registry(shop)


def call(registry: ToolRegistry, tool: str, tool_input: str) -> dict:
    return json.loads(registry.execute(Action(tool, tool_input)))


def test_a_search_giving_its_query_twice_is_refused_as_the_other_tools_refuse_it(registry):
    # Python's json took the last query ("保修"), where queryOrder, queryLogistics and applyRefund refuse the input.
    answer = call(registry, "searchKnowledge", '{"query": "退货", "query": "保修"}')
    assert answer.get("error") == "输入中 query 出现了不止一次（query is given more than once）", answer
    assert call(registry, "searchKnowledge", '{"query": "保修"}')["query"] == "保修"  # given once, it is read


@pytest.mark.parametrize("written", ["sf 1234567890", "Sf 1234567890", "运单号 sf 1234567890",
                                     '{"trackingNo": "sf 1234567890"}'])
def test_a_tracking_number_with_its_letters_set_apart_in_lower_case_is_refused_saying_the_form(registry, written):
    # The letters, holding no digit, were dropped: "运单不存在：1234567890", as if SF1234567890 did not exist. They may
    # as well be a word ("no 1234567890"), so the tool asks for one of the two forms instead of guessing.
    error = call(registry, "queryLogistics", written)["error"]
    assert "运单不存在" not in error, error
    assert "sf 1234567890" in error.lower() and "SF1234567890" in error and "the digits alone" in error
    assert call(registry, "queryLogistics", "SF 1234567890")["trackingNo"] == "SF1234567890"  # capitals: read whole


def _hold_the_write_lock(other: sqlite3.Connection) -> None:
    other.execute("BEGIN IMMEDIATE")  # the shop's BEGIN IMMEDIATE waits, then fails: before anything is written


def _hold_a_read_lock(other: sqlite3.Connection) -> None:
    other.execute("BEGIN")
    other.execute("SELECT COUNT(*) FROM orders").fetchone()  # the shop's COMMIT waits, then fails: rolled back


@pytest.mark.parametrize("hold", [_hold_the_write_lock, _hold_a_read_lock])
def test_a_refund_while_another_program_holds_the_database_says_it_is_busy_and_changes_nothing(
        tmp_path, monkeypatch, hold):
    # The Observation was "tool applyRefund failed: OperationalError: database is locked".
    monkeypatch.setattr("tinyagent.shop.database.BUSY_TIMEOUT_SECONDS", 0.05)
    path = tmp_path / "shop.db"
    with Shop(path, clock=fixed_clock(NOW)) as shop:
        other = sqlite3.connect(path, isolation_level=None)
        hold(other)
        try:
            answer = call(shop_registry(shop), "applyRefund", '{"orderId": "88231", "reason": "质量问题"}')
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert answer == {"error": BUSY.format(path=path), "orderId": "88231"}
        assert shop.refunds() == []
    with Shop(path, clock=fixed_clock(NOW)) as shop:
        assert shop.refunds() == []  # nothing reached the file either
        assert call(shop_registry(shop), "applyRefund", '{"orderId": "88231", "reason": "质量问题"}')["success"]
