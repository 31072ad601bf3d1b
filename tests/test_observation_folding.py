"""Folding an Observation (lesson 13): shorter, the same facts (every id, number and error), JSON stays JSON."""

from __future__ import annotations

import json
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from tinyagent import fixed_clock
from tinyagent.memory.observation_folding import (
    ERROR_TEXT,
    SHORT_TEXT,
    fold_observation,
    ids_and_numbers,
    is_folded,
    strip_fold_mark,
)
from tinyagent.shop import Shop, shop_registry
from tinyagent.tools import Action

KNOWLEDGE = json.dumps({
    "query": "扫地机 不回充 退货 政策",
    "results": [
        {"title": "质量问题退换货", "content": "签收次日起 15 天内出现性能故障（质量问题，例如扫地机不回充、无法开机、异响），"
         "经售后检测确认后可退货或换货，往返运费由商家承担；超过 15 天、在保修期内可免费维修。", "score": 6.792},
        {"title": "保修政策", "content": "整机保修 1 年（365 天），自签收次日起计算，保修期内的非人为故障免费维修；边刷、滤网、"
         "尘袋等耗材不在保修范围内，进水、摔落等人为损坏需付费维修，工单号 WX20260630001 可查。", "score": 0.622},
    ],
}, ensure_ascii=False, separators=(",", ":"))


def test_a_long_knowledge_result_folds_to_less_than_three_quarters_and_keeps_its_shape():
    folded = fold_observation(KNOWLEDGE)
    assert is_folded(folded) and folded.startswith(f"(folded from {len(KNOWLEDGE)} characters) ")
    assert len(folded) < 0.75 * len(KNOWLEDGE)
    data = json.loads(strip_fold_mark(folded))  # JSON stays JSON
    assert [r["title"] for r in data["results"]] == ["质量问题退换货", "保修政策"]
    assert [r["score"] for r in data["results"]] == [6.792, 0.622]
    assert data["results"][0]["content"].startswith("签收次日起 15 天内出现性能故障")


def test_folding_keeps_every_id_and_number_even_from_the_prose_it_cuts():
    folded = fold_observation(KNOWLEDGE)
    assert "WX20260630001" in folded and "365" in folded  # late in a long text: listed after the cut
    assert set(ids_and_numbers(KNOWLEDGE)) <= set(ids_and_numbers(folded))


def test_an_id_that_straddles_the_cut_is_kept_whole():
    text = json.dumps({"note": "x" * (SHORT_TEXT - 4) + " RF202606300001 was issued for the order, as asked" * 2})
    folded = strip_fold_mark(fold_observation(text))
    assert "RF202606300001" in json.loads(folded)["note"].split("…")[1]


def test_an_error_is_kept_whole_up_to_its_limit():
    error = "订单不存在：99999，请核对订单号后再试；如果订单号确认无误，可能是订单还在同步中，请稍后再查（the order was not found）"
    text = json.dumps({"error": error, "hint": "请核对订单号，或请用户确认（check the id with the customer, please）"},
                      ensure_ascii=False)
    data = json.loads(strip_fold_mark(fold_observation(text)))
    assert data["error"] == error  # shorter than ERROR_TEXT: whole
    assert data["hint"].endswith("…")  # other prose is cut
    long_error = "E" * (ERROR_TEXT + 50)
    assert json.loads(strip_fold_mark(fold_observation(json.dumps({"error": long_error}))))["error"] == (
        "E" * ERROR_TEXT + "…")


def test_plain_text_keeps_its_start_and_its_numbers():
    text = "The weather in Hangzhou today is sunny, 31 degrees, humidity 60 percent; tomorrow rain, 26 degrees."
    folded = fold_observation(text)
    assert strip_fold_mark(folded).startswith(text[:50])
    assert folded.endswith("(60, 26)")


def test_a_text_error_keeps_more_than_plain_text():
    text = "Error: the refund service did not answer within 30 s; the request for order 88231 may still land, " * 2
    body = strip_fold_mark(fold_observation(text))
    assert body.startswith(text[:ERROR_TEXT].rstrip())


def test_the_shops_short_results_stay_as_they_are():
    shop = Shop(":memory:", clock=fixed_clock("2026-06-30T19:05:23"))
    tools = shop_registry(shop)
    for name, tool_input in [("queryOrder", "88231"), ("getCurrentTime", ""), ("queryLogistics", "SF1234567890"),
                             ("applyRefund", '{"orderId": "88231", "reason": "不回充"}')]:
        text = tools.execute(Action(name, tool_input))
        assert fold_observation(text) == text, name  # nothing to fold: every value is short
    search = tools.execute(Action("searchKnowledge", "退货 政策"))
    assert is_folded(fold_observation(search))
    assert set(ids_and_numbers(search)) <= set(ids_and_numbers(fold_observation(search)))


def test_folding_twice_changes_nothing_and_only_a_real_mark_counts():
    once = fold_observation(KNOWLEDGE)
    assert fold_observation(once) == once
    assert not is_folded("(folded from many characters) {}")
    assert not is_folded("(folded from 12 characters)")
    assert strip_fold_mark("(folded from x characters) {}") == "(folded from x characters) {}"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**9) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=80),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


def facts(value: object) -> set[str]:
    """The ids and numbers in a JSON value's keys and leaves (as decoded: an escape such as \\u0007 is no id)."""
    if isinstance(value, dict):
        return set().union(*(set(ids_and_numbers(k)) | facts(v) for k, v in value.items())) if value else set()
    if isinstance(value, list):
        return set().union(*(facts(item) for item in value)) if value else set()
    return set(ids_and_numbers(value if isinstance(value, str) else json.dumps(value)))


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=10), json_values, max_size=6))
def test_any_json_observation_folds_no_longer_with_every_id_and_number(value):
    text = json.dumps(value, ensure_ascii=False)
    folded = fold_observation(text)
    assert len(folded) <= len(text)
    kept = json.loads(strip_fold_mark(folded))
    assert kept.keys() == value.keys()  # the shape stays
    assert facts(value) <= facts(kept)
    assert fold_observation(folded) == folded


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_any_text_observation_folds_no_longer_with_every_id_and_number(text):
    folded = fold_observation(text)
    assert len(folded) <= len(text)
    assert set(ids_and_numbers(text)) <= set(ids_and_numbers(folded))


def test_a_long_run_of_letters_without_a_digit_does_not_hang_the_fold():
    # The id pattern was tried from each letter of the run: 32,000 letters took 4 s, a megabyte about an hour.
    # Now it starts only where a run starts; 60 s only tells a hang from a loaded machine.
    started = time.monotonic()
    assert is_folded(fold_observation("a" * 1_000_000))
    assert time.monotonic() - started < 60
    assert ids_and_numbers("x-1 ab1-cd SF1234567890, 2026-06-22") == ["1", "ab1-cd", "SF1234567890", "2026-06-22"]


def test_ids_typed_in_full_width_are_kept_as_written():
    # a Chinese keyboard in full-width mode: the refund id and the amount past the kept part were dropped
    text = "退款申请已经收到，我们会尽快处理，请耐心等待，谢谢您的理解与支持。" * 3 + \
        "退款单号ＲＦ２０２６０６３００００１，金额１９９９元，预计１－３个工作日到账。"
    folded = fold_observation(text)
    assert is_folded(folded) and folded.endswith("(ＲＦ２０２６０６３００００１, １９９９, １－３)")


def test_a_json_number_past_a_floats_range_folds_as_text_not_as_infinity():
    text = '{"note": "' + "x" * 100 + '", "amount": 1e400}'
    folded = fold_observation(text)
    assert "Infinity" not in folded and "1e400" in folded


def test_a_sign_stays_with_its_number():
    # low -15°C folded to (15, 3), a balance of -120.50 to 120.50: the opposite of what the tool said
    assert ids_and_numbers("low -15°C, high -3°C; -120.50 yuan; call +86-138-0013-8000; CASE-77; x-1") == [
        "-15", "-3", "-120.50", "+86-138-0013-8000", "77", "1"]
    weather = "Weather for Harbin today is cold and snowy with strong winds from the north and east; low -15°C, high -3°C."
    assert fold_observation(weather).endswith("(-15, -3)")
    note = json.dumps({"note": "After the coupon was removed the balance was adjusted by -120.50 yuan, see ticket"})
    assert json.loads(strip_fold_mark(fold_observation(note)))["note"].endswith("…(-120.50)")


def test_a_number_grouped_in_thousands_is_kept_as_one():
    # ¥1,001,001 folded to (1, 001): split at its commas, and the second 001 taken for the first
    assert ids_and_numbers("¥1,999.00, ¥1,001,001, sizes 38,40, ids 88231,88232") == [
        "1,999.00", "1,001,001", "38", "40", "88231", "88232"]
    note = json.dumps({"note": "The order total was ¥1,999.00, and a refund of ¥1,001,001 was requested for it"},
                      ensure_ascii=False)
    assert json.loads(strip_fold_mark(fold_observation(note)))["note"].endswith("…(1,999.00, 1,001,001)")


def test_a_cut_that_changes_a_number_it_keeps_lists_it():
    # cut after 12,345, the kept "12,3" reads as one grouped number: 12 is listed, as 3456 is
    note = json.dumps({"note": "x" * (SHORT_TEXT - 7) + " 12,3456 is the number, and the rest is cut off"})
    assert json.loads(strip_fold_mark(fold_observation(note)))["note"].endswith(" 12,345…(12, 3456)")


def test_an_underscore_joins_an_id():
    # REF_A_88231 kept only 88231: a reference nobody can look up
    assert ids_and_numbers("REF_A_88231, order_88232 and CASE-77") == ["REF_A_88231", "order_88232", "77"]
    note = json.dumps({"note": "Refund was filed and the internal reference is REF_A_88231 for the records"})
    assert json.loads(strip_fold_mark(fold_observation(note)))["note"].endswith("…(REF_A_88231)")


def test_a_json_number_a_float_cannot_hold_folds_as_text_as_it_was_written():
    # 12345678901234567890123.0 came back as 1.2345678901234568e+22, another number
    text = '{"amount": 0.30000000000000004441, "trackingNo": 12345678901234567890123.0, "x": "' + "y" * 80 + '"}'
    folded = fold_observation(text)
    assert is_folded(folded) and "e+22" not in folded
    assert {"0.30000000000000004441", "12345678901234567890123.0"} <= set(ids_and_numbers(folded))
    assert json.loads(strip_fold_mark(fold_observation(KNOWLEDGE)))["results"][1]["score"] == 0.622  # JSON still
