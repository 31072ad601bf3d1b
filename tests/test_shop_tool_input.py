"""How the shop's tools (tinyagent/shop/tools.py) read the model's input, and what they answer when the shop's database
is busy: a key given twice or in two spellings, a tracking number's letters set apart, another program holding the
lock."""

import json
import sqlite3

import pytest

from tinyagent import Action, ToolRegistry, fixed_clock
from tinyagent.errors import ShopDatabaseError
from tinyagent.shop import Shop, shop_registry

NOW = "2026-06-30T19:05:23"
BUSY = ("商店数据库正忙（另一个程序正在使用它），什么都没有改，请稍后再试（nothing was changed: the shop's database {path} is "
        "busy (another program held it locked past 0.05 s): try again shortly）")


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


@pytest.mark.parametrize("written", ["sf 1234567890", "Sf 1234567890", "运单号 sf 1234567890", "SF 顺丰 1234567890",
                                     '{"trackingNo": "sf 1234567890"}', "SF 1234567890"])
def test_a_carriers_code_set_apart_from_the_digits_in_any_case_is_read_with_them(registry, written):
    # "sf 1234567890" was refused, asking for "SF1234567890 or the digits alone" (the digits alone are no tracking
    # number); "SF 顺丰 1234567890" dropped the SF and looked up 1234567890.
    assert call(registry, "queryLogistics", written)["trackingNo"] == "SF1234567890"


@pytest.mark.parametrize("written", ["tracking no 1234567890", "is 1234567890", "NO 1234567890"])
def test_letters_that_are_no_carriers_code_stay_words_before_the_digits(registry, written):
    # They were refused with advice that cannot work: "write it as one word, e.g. NO1234567890" (or IS1234567890).
    assert call(registry, "queryLogistics", written)["error"] == "运单不存在：1234567890"


def test_a_number_in_the_words_beside_a_tracking_number_is_not_a_second_one(registry):
    # It was refused about "“in 3” ... write it as one word, e.g. IN3".
    assert call(registry, "queryLogistics", "SF1234567890 arriving in 3 days")["trackingNo"] == "SF1234567890"
    two = call(registry, "queryLogistics", "SF1234567890 YT2468013579")["error"]  # two tracking numbers: which one?
    assert two.startswith("输入含有 2 个运单号"), two


@pytest.mark.parametrize(("written", "twice"), [
    ('{"orderId": "88232", "order_id": "88234", "reason": "x"}', "orderId / order_id"),
    ('{"orderId": "88232", "reason": "a", "Reason": "b"}', "reason / Reason"),
])
def test_a_refund_giving_its_order_or_reason_in_two_spellings_is_refused(registry, written, twice):
    # It refunded 88232 with no word about 88234, and with reason "a", dropping "b".
    answer = call(registry, "applyRefund", written)
    assert answer.get("error") == f"输入中 {twice} 出现了不止一次（{twice} is given more than once）", answer
    assert call(registry, "applyRefund", '{"orderId": "88232", "reason": "a"}')["orderId"] == "88232"  # nothing yet


def test_a_search_giving_its_query_in_two_spellings_is_refused(registry):
    # It searched for "warranty" and dropped "退货".
    answer = call(registry, "searchKnowledge", '{"query": "warranty", "Query": "退货"}')
    assert answer.get("error") == "输入中 query / Query 出现了不止一次（query / Query is given more than once）", answer


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


READ_BUSY = ("商店数据库正忙（另一个程序正在使用它），请稍后再试（the shop's database {path} is busy (another program held "
             "it locked past 0.05 s): try again shortly）")


@pytest.mark.parametrize(("tool", "tool_input", "named"), [
    ("queryOrder", "88231", {"orderId": "88231"}),
    ("queryLogistics", "SF1234567890", {"trackingNo": "SF1234567890"}),
    ("searchKnowledge", "退货", {}),
])
def test_a_look_up_while_another_program_holds_the_database_says_it_is_busy(tmp_path, monkeypatch, tool, tool_input,
                                                                            named):
    # The Observation was "tool queryOrder failed: OperationalError: database is locked", in English only.
    monkeypatch.setattr("tinyagent.shop.database.BUSY_TIMEOUT_SECONDS", 0.05)
    path = tmp_path / "shop.db"
    with Shop(path, clock=fixed_clock(NOW)) as shop:
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN EXCLUSIVE")  # no one else may even read
        try:
            answer = call(shop_registry(shop), tool, tool_input)
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert answer == {"error": READ_BUSY.format(path=path), **named}  # nothing is said about changes
        assert call(shop_registry(shop), tool, tool_input).get("error") is None  # free again: it is read


def test_opening_a_shop_another_program_holds_locked_says_it_is_busy(tmp_path, monkeypatch):
    # It said "cannot open the shop's database ... (database is locked): give the path of a shop database, or a new
    # file": wrong advice for a good file that is only busy.
    monkeypatch.setattr("tinyagent.shop.database.BUSY_TIMEOUT_SECONDS", 0.05)
    path = tmp_path / "shop.db"
    Shop(path).close()
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(ShopDatabaseError) as refused:
            Shop(path)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert str(refused.value) == (f"the shop's database {path} is busy (another program held it locked past 0.05 s): "
                                  "try again shortly")
    with Shop(path) as shop:
        assert shop.get_order("88231")["orderId"] == "88231"


@pytest.mark.parametrize("extra", ['"amount": 1', '"customerId": "c-7"', '"kind": "no_reason"', '"order_id": "88232"'])
def test_a_refund_with_a_field_the_tool_has_no_use_for_is_refused_and_writes_nothing(extra):
    # "amount": 1 made the order's whole refund (1999), as if the model had not asked for one yuan; the schema says
    # additionalProperties: false, and the same call over MCP is refused
    from tinyagent.clock import fixed_clock
    from tinyagent.shop import Shop, shop_registry
    from tinyagent.tools import Action

    clock = fixed_clock("2026-06-30T19:05:23")
    with Shop(":memory:", clock=clock) as shop:
        said = shop_registry(shop, clock).run(Action("applyRefund", '{"orderId": "88231", "reason": "faulty", '
                                                                  f"{extra}}}"))
        assert said.error, said.text
        message = json.loads(said.text)["error"]
        assert ("is not a field: give only orderId and reason" in message
                or "is given more than once" in message), message  # order_id beside orderId: two spellings
        assert shop.refunds() == []


@pytest.mark.parametrize("reason", ["faulty\u0000", "\u202efaulty", "faulty\x1b[2J"])
def test_a_refund_reason_with_a_hidden_character_is_refused_and_writes_nothing(reason):
    # a NUL was kept in the refund's reason, unseen by whoever reads it (lesson 21's messages refuse the same)
    from tinyagent.clock import fixed_clock
    from tinyagent.shop import Shop, shop_registry
    from tinyagent.tools import Action

    clock = fixed_clock("2026-06-30T19:05:23")
    with Shop(":memory:", clock=clock) as shop:
        said = shop_registry(shop, clock).run(Action("applyRefund", json.dumps({"orderId": "88231", "reason": reason})))
        assert said.error and "the reason holds a hidden character" in json.loads(said.text)["error"], said.text
        assert shop.refunds() == []
        kept = shop_registry(shop, clock).run(Action("applyRefund", json.dumps({"orderId": "88231",
                                                                                 "reason": "faulty:\n does not dock"})))
        assert not kept.error and shop.refunds()[0]["reason"] == "faulty:\n does not dock"  # a line break is seen
