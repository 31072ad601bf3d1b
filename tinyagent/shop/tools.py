"""The five tools of the first article's customer-service agent, backed by a real `Shop`.

Each tool reads the model's raw text, forgives the harmless slips models make (quotes around an id, "订单 88231",
a JSON object where a bare value was asked for, a code fence), and answers with compact JSON. When the input
cannot be used, the answer is an error Observation (`error_observation`) that says what was wrong and what
is expected, so the model can correct itself on the next round instead of the loop ending.

Forgiving is not guessing: `read_one_id` is the one reader of order ids and tracking numbers, and an input
that does not name exactly one ("88232 88234", "-88236", "88231.5") is an error, never its first number.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from types import MappingProxyType

from tinyagent.clock import Clock, system_clock
from tinyagent.registry import ToolRegistry, error_observation
from tinyagent.safe_text import hidden_character, holds_surrogate, one_line
from tinyagent.shop.database import CARRIER_CODES, MAX_QUERY_CHARS, Shop, checked_limit, reason_too_long
from tinyagent.shop.shop_errors import InputTooLongError, ShopError
from tinyagent.tools import RepeatedKey, Tool, keys_once, without_fence

REFUND_MESSAGE = "退款申请已提交，预计 1-3 个工作日到账"
REFUND_INPUT_EXAMPLE = '{"orderId": "88231", "reason": "质量问题：扫地机不回充"}'
WEEKDAYS = ("星期一", "星期二", "星期三", "星期四", "星期五", "星期六", "星期日")

# Longest input queryOrder and queryLogistics read: an id with a few words or a small JSON object around it.
# (A search query and a refund reason have their own limits, in the shop: MAX_QUERY_CHARS, MAX_REASON_CHARS.)
MAX_ID_INPUT_CHARS = 200


def to_json(value: object) -> str:
    """Compact JSON that keeps Chinese readable: {"orderId":"88231","product":"比特 S10 Pro 扫地机",...}."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _unwrap(text: str) -> str:
    """Strip whitespace, a Markdown code fence and surrounding quotes: what models wrap values in."""
    return without_fence(text).strip("\"'“”‘’`").strip()


def _shorten(text: str, limit: int = 200) -> str:
    """Echo at most `limit` characters of a bad input back: enough to see the mistake, not a flood."""
    return text if len(text) <= limit else text[:limit] + "…"


class BadInput(ValueError):
    """A tool input that cannot be used; the message says why, in Chinese and English, for the model."""


@dataclass(frozen=True)
class IdKind:
    """What one kind of id looks like: an order id (88231) or a tracking number (SF1234567890)."""

    field: str  # its JSON key
    zh: str
    en: str  # with its article: "an order id"
    example: str
    shape: re.Pattern[str]
    rule_zh: str  # the shape in words, for the error
    rule_en: str
    # The carriers' codes that start this kind of id (SF, YT, ...). Written apart from the digits ("SF 1234567890",
    # "sf 1234567890", "SF 顺丰 1234567890") they are one id with them; else the letters, holding no digit, would be
    # dropped and the digits looked up alone. Other letters ("tracking no 1234567890", "in 3 days") are words.
    carrier_codes: frozenset[str] = frozenset()


ORDER_ID = IdKind("orderId", "订单号", "an order id", "88231", re.compile(r"[0-9]+"), "只含数字", "digits only")
TRACKING_NO = IdKind("trackingNo", "运单号", "a tracking number", "SF1234567890", re.compile(r"[A-Za-z0-9]+"),
                     "由字母和数字组成", "letters and digits", carrier_codes=CARRIER_CODES)
# A short word set apart from digits by spaces or a carrier's name ("SF 123", "SF 顺丰 123", "no 123", "in 3").
_LETTERS_APART = re.compile(r"(?<![A-Za-z0-9])([A-Za-z]{2,4})(?:[ \t]+|[ \t]*[^\x00-\x7f\s]{1,4}[ \t]*)(?=[0-9])")
_CARRIER_AND_DIGITS = re.compile(r"([A-Za-z]+)[0-9]+")

# A candidate id: a number with its sign and decimal or thousands separators (so "-88236" and "88231.5" are
# read whole, and refused, rather than as 88236 and 88231), or a run of letters and digits. (The minus sign
# "−" is read as "-" before this pattern sees the text.)
_CANDIDATE = re.compile(r"[-+]?(?:[0-9]+(?:[.,][0-9]+)*(?![A-Za-z0-9])|[A-Za-z0-9]+)")


def read_one_id(text: str, kind: IdKind) -> str:
    """The one id of `kind` that `text` names, or `BadInput` saying why there is not exactly one.

    Forgiven: whitespace, quotes, a code fence, words around the id ("订单 88231", "order #88231, please"),
    full-width digits, the same id twice, a tracking number's carrier code set apart from its digits in any case
    ("SF 1234567890", "sf 1234567890"), a bare number beside one tracking number with a carrier's code
    ("SF1234567890 arriving in 3 days": a tracking number always has its letters), and JSON: a bare value, or an
    object holding the id under `kind.field`, however its key is spelled ("orderid", "order_id"), or as its only value
    with digits. Refused: no id, two different ids ("88231, 88232", "88231-88234"), something that only contains one
    ("-88236", "88231.5"), or JSON that gives a key, or `kind.field` in two spellings, more than once.
    """
    if len(text) > MAX_ID_INPUT_CHARS:
        raise BadInput(f"输入过长：{len(text)} 个字符，上限 {MAX_ID_INPUT_CHARS}"
                       f"（the input is {len(text)} characters long; the limit is {MAX_ID_INPUT_CHARS}）")
    text = unicodedata.normalize("NFKC", _unwrap(text)).replace("−", "-")  # "８８２３１" -> "88231", "−1" -> "-1"
    if text[:1] in "{[":
        text = _id_text_in_json(text, kind.field)
    if kind.carrier_codes:
        text = _LETTERS_APART.sub(lambda apart: apart[1] if _is_carrier(apart[1], kind) else apart[0], text)
    candidates = list(dict.fromkeys(word for word in _CANDIDATE.findall(text) if any(c.isdigit() for c in word)))
    with_code = [word for word in candidates
                 if (code := _CARRIER_AND_DIGITS.fullmatch(word)) and _is_carrier(code[1], kind)]
    if len(with_code) == 1 and not any(c.isalpha() for word in candidates if word not in with_code for c in word):
        candidates = with_code  # the other numbers ("in 3 days") have no carrier's letters: not tracking numbers
    if not candidates:
        raise BadInput(f"请提供{kind.zh}（{kind.en} is needed）")
    if len(candidates) > 1:
        shown = "、".join(_shorten(word, 30) for word in candidates[:5])
        raise BadInput(f"输入含有 {len(candidates)} 个{kind.zh}：{shown}，一次只能给一个"
                       f"（found {len(candidates)}: {shown}; give exactly one）")
    word = _shorten(candidates[0], 30)
    if not kind.shape.fullmatch(candidates[0]):
        raise BadInput(f"“{word}”不是{kind.zh}，{kind.zh}{kind.rule_zh}"
                       f"（{word} is not {kind.en}: {kind.rule_en}, e.g. {kind.example}）")
    return candidates[0]


def _is_carrier(letters: str, kind: IdKind) -> bool:
    return letters.upper() in kind.carrier_codes


def _id_text_in_json(text: str, field: str) -> str:
    """The part of a JSON input that holds the id: the value under `field`, else every scalar value."""
    try:
        value = json.loads(text, object_pairs_hook=_keys_once)
    except BadInput:
        raise  # a key given twice: which of its values is meant cannot be told
    except (ValueError, RecursionError):
        return text  # not JSON after all (or nested deeper than Python reads): read it as text
    if isinstance(value, dict):
        named = _spellings(value, field)
        value = value[named[0]] if named else list(value.values())
    values = value if isinstance(value, list) else [value]
    return " ".join(str(item) for item in values if isinstance(item, (str, int, float)) and not isinstance(item, bool))


def _spellings(payload: dict, field: str) -> list[str]:
    """The keys of `payload` that spell `field` ("orderId", "orderid", "order_id"): at most one, else `BadInput`, as
    two spellings name the field twice and one of the values would be dropped unsaid."""
    named = [key for key in payload if _loose_key(key) == _loose_key(field)]
    if len(named) > 1:
        raise BadInput(_given_more_than_once(" / ".join(_shorten(key, 30) for key in named)))
    return named


def _loose_key(key: str) -> str:
    return key.lower().replace("_", "")


def _schema(properties: dict[str, dict]) -> MappingProxyType:
    """The JSON Schema of a shop tool's arguments (lesson 07): every property required, no others.

    The tools read their text input themselves (and forgive more than the schema says); the schema is
    what native function calling offers, and its arguments come back to them as a JSON object, which
    each of them reads (tool_rendering.input_from_arguments)."""
    schema: dict = {"type": "object", "properties": properties}
    if properties:
        schema["required"] = list(properties)
    schema["additionalProperties"] = False
    return MappingProxyType(schema)


class QueryOrderTool(Tool):
    name = "queryOrder"
    read_only = True  # a look-up: lesson 22 may run it while exploring
    description = "Look up an order and its trackingNo. Input: the order id, e.g. 88231."
    descriptions = MappingProxyType({"zh": "查询订单详情和运单号。输入：订单号，如 88231。"})
    parameters = _schema({"orderId": {"type": "string", "description": "the order id, e.g. 88231",
                                      "examples": ["88231"]}})

    def __init__(self, shop: Shop):
        self.shop = shop

    def invoke(self, input: str) -> str:
        try:
            order_id = read_one_id(input, ORDER_ID)
        except BadInput as exc:
            return error_observation(str(exc), expected="订单号数字，如 88231", received=_shorten(input))
        try:
            order = self.shop.get_order(order_id)
        except ShopError as exc:  # the database is busy: the shop says so, in both languages
            return error_observation(str(exc), orderId=order_id)
        if order is None:
            return error_observation(f"订单不存在：{order_id}", hint="请核对订单号，或请用户确认（check the id）")
        return to_json(order)


class QueryLogisticsTool(Tool):
    name = "queryLogistics"
    read_only = True  # a look-up: lesson 22 may run it while exploring
    description = "Track a parcel. Input: its trackingNo (from queryOrder), e.g. SF1234567890."
    descriptions = MappingProxyType({"zh": "查询物流。输入：运单号（用 queryOrder 查到），如 SF1234567890。"})
    parameters = _schema({"trackingNo": {"type": "string", "description": "the tracking number from queryOrder, "
                                         "e.g. SF1234567890", "examples": ["SF1234567890"]}})

    def __init__(self, shop: Shop):
        self.shop = shop

    def invoke(self, input: str) -> str:
        # '{"trackingNo": "SF1234567890"}' and "运单号 sf1234567890" both name SF1234567890.
        try:
            tracking_no = read_one_id(input, TRACKING_NO).upper()
        except BadInput as exc:
            return error_observation(str(exc), expected="运单号，如 SF1234567890", received=_shorten(input))
        try:
            logistics = self.shop.get_logistics(tracking_no)
            order = None if logistics is not None else self.shop.get_order(tracking_no)
        except ShopError as exc:  # the database is busy: the shop says so, in both languages
            return error_observation(str(exc), trackingNo=tracking_no)
        if logistics is not None:
            return to_json(logistics)
        if order is not None:
            # The commonest slip: passing the order id. Say so, and say how to get the right number.
            return error_observation(
                f"{tracking_no} 是订单号，不是运单号",
                hint="先用 queryOrder 查询该订单的 trackingNo；trackingNo 为 null 表示尚未发货",
            )
        return error_observation(f"运单不存在：{tracking_no}", hint="请核对运单号，可用 queryOrder 查询订单的运单号")


class ApplyRefundTool(Tool):
    name = "applyRefund"
    description = (
        'Submit a refund (really recorded, once per order). Input: JSON, e.g. {"orderId": "88231", '
        '"reason": "faulty: does not dock"}.'
    )
    descriptions = MappingProxyType({"zh": f"提交退款（真实写入，每单一次）。输入：JSON，如 {REFUND_INPUT_EXAMPLE}。"})
    parameters = _schema({
        "orderId": {"type": "string", "description": "the order id, e.g. 88231", "examples": ["88231"]},
        "reason": {"type": "string", "description": "why the customer wants the refund, e.g. faulty: does not dock",
                   "examples": ["faulty: does not dock"]},
    })

    def __init__(self, shop: Shop):
        self.shop = shop

    def invoke(self, input: str) -> str:
        try:
            order_id, reason = read_refund_input(input)
        except BadInput as exc:
            return self._bad_input(str(exc), input)

        try:
            refund = self.shop.apply_refund(order_id, reason)
        except ShopError as exc:
            return error_observation(str(exc), orderId=order_id)

        result = {
            "success": True,
            "refundId": refund["refundId"],
            "orderId": refund["orderId"],
            "amount": refund["amount"],
        }
        if refund["duplicate"]:
            result["duplicate"] = True
            result["message"] = f"该订单已有退款申请 {refund['refundId']}，未重复提交；预计 1-3 个工作日到账"
        else:
            result["message"] = REFUND_MESSAGE
        return to_json(result)

    @staticmethod
    def _bad_input(message: str, received: str) -> str:
        return error_observation(message, expected=REFUND_INPUT_EXAMPLE, received=_shorten(received))


def read_refund_input(text: str) -> tuple[str, str]:
    """(order id, reason) of an applyRefund input, read as the tool reads it, or `BadInput` saying what is wrong.
    The approval summary (refund_review.py) reads it the same way: a person is never asked to approve a refund
    that the tool would then refuse."""
    try:
        payload = json.loads(_unwrap_json(text), object_pairs_hook=_keys_once)
    except BadInput:
        raise
    except (ValueError, RecursionError):  # RecursionError: JSON nested deeper than Python reads
        raise BadInput("输入不是合法的 JSON（input is not valid JSON）") from None
    if not isinstance(payload, dict):
        raise BadInput("输入应是一个 JSON 对象（expected a JSON object）")
    # Two spellings of one field ({"orderId": "88232", "order_id": "88234"}: which order is meant?) are refused; one
    # other spelling is read as no field at all (lesson 07 shows this tool's own code asking for orderId).
    spelled = [key for field in ("orderId", "reason") for key in _spellings(payload, field)]
    # A field the tool has no use for ("amount": 1, "customerId") would be dropped unsaid, and the refund made as
    # if the model had not asked for it: refused, as the schema (additionalProperties: false) and MCP refuse it.
    if extra := [key for key in payload if key not in spelled]:
        shown = _shorten(extra[0], 30)
        raise BadInput(f"{shown} 不是 applyRefund 的字段，只需 orderId 和 reason（{shown} is not a field: give only "
                       "orderId and reason）")
    raw_id = payload.get("orderId")
    if not isinstance(raw_id, (str, int)) or isinstance(raw_id, bool):  # True is an int in Python
        raise BadInput("缺少 orderId，或 orderId 不是订单号（orderId is missing）")
    try:
        order_id = read_one_id(str(raw_id), ORDER_ID)
    except BadInput as exc:
        raise BadInput(f"orderId：{exc}") from None
    reason = payload.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise BadInput("缺少 reason，请写明退款原因（reason is missing）")
    if holds_surrogate(reason):  # SQLite could not store it (UTF-8)
        raise BadInput("reason 含有无效字符（the reason holds a lone surrogate, \\ud800-\\udfff: not text）")
    if (hidden := hidden_character(reason)) is not None:  # a NUL or a bidi override, kept in the refund unseen
        raise BadInput(f"reason 含有不可见字符 {one_line(hidden)}（the reason holds a hidden character, {one_line(hidden)}: "
                       "write it without）")
    if (too_long := reason_too_long(reason.strip())) is not None:
        raise BadInput(too_long)
    return order_id, reason


def _keys_once(pairs: list[tuple[str, object]]) -> dict:
    """`keys_once` (tools.py), its refusal said in the shop's words, for the model."""
    try:
        return keys_once(pairs)
    except RepeatedKey as exc:
        raise BadInput(_given_more_than_once(_shorten(exc.key, 30))) from None


def _given_more_than_once(shown: str) -> str:
    return f"输入中 {shown} 出现了不止一次（{shown} is given more than once）"


def _unwrap_json(text: str) -> str:
    # Unlike _unwrap, quotes are kept: they belong to the JSON.
    return without_fence(text)


def read_search_query(text: str) -> str:
    """The query a searchKnowledge input asks for, read as the tool reads it ("" for none): the text without
    quotes or a fence, or the "query" of a JSON object; `BadInput` when the object gives the query twice."""
    query = _unwrap(text)
    if query.startswith("{"):  # {"query": "..."}: the model sent arguments as JSON
        try:
            payload = json.loads(query, object_pairs_hook=_keys_once)
            if isinstance(payload, dict):
                _spellings(payload, "query")  # {"query": "warranty", "Query": "退货"}
        except BadInput:
            raise
        except (ValueError, RecursionError):  # not JSON after all: the text is the query
            payload = None
        if isinstance(payload, dict) and isinstance(payload.get("query"), str):
            query = payload["query"].strip()
    return query


class SearchKnowledgeTool(Tool):
    name = "searchKnowledge"
    read_only = True  # a look-up: lesson 22 may run it while exploring
    description = "Search the after-sales policies. Input: keywords, e.g. return policy."
    descriptions = MappingProxyType({"zh": "检索售后政策。输入：关键词，如 退货 政策。"})
    parameters = _schema({"query": {"type": "string", "description": "keywords, e.g. return policy",
                                    "examples": ["return policy"]}})

    def __init__(self, shop: Shop, limit: int = 3):
        self.shop = shop
        self.limit = checked_limit(limit)  # refused here, not as a failure of every call

    def invoke(self, input: str) -> str:
        try:
            query = read_search_query(input)
        except BadInput as exc:  # a key given twice: which query is meant cannot be told
            return error_observation(str(exc), expected='如 {"query": "退货 政策"}', received=_shorten(input))
        if not query:
            return error_observation("请提供检索关键词（a search query is needed）", expected="如 退货 政策、warranty")
        try:
            results = self.shop.search_knowledge(query, self.limit)
        except InputTooLongError as exc:  # the shop states its limit
            return error_observation(str(exc), expected=f"检索词，最多 {MAX_QUERY_CHARS} 个字符，如 退货 政策")
        except ShopError as exc:  # the database is busy
            return error_observation(str(exc))
        answer: dict = {"query": query, "results": results}
        if not results:
            answer["hint"] = "没有匹配的条目，换个说法试试，如 退货、保修、运费、退款（try other words）"
        return to_json(answer)


class GetCurrentTimeTool(Tool):
    name = "getCurrentTime"
    read_only = True  # a look-up: lesson 22 may run it while exploring
    description = "The current date and time. Input: none (empty)."
    descriptions = MappingProxyType({"zh": "获取当前日期时间。输入：无（留空）。"})
    parameters = _schema({})

    def __init__(self, clock: Clock = system_clock):
        self.clock = clock

    def invoke(self, input: str) -> str:
        now = self.clock()  # the input is ignored: there is nothing to ask a clock
        return to_json({"currentTime": now.isoformat(timespec="seconds"), "weekday": WEEKDAYS[now.weekday()]})


def shop_tools(shop: Shop, clock: Clock | None = None) -> list[Tool]:
    """The five tools in the first article's order. `clock` is the shop's own unless given."""
    return [
        QueryOrderTool(shop),
        QueryLogisticsTool(shop),
        ApplyRefundTool(shop),
        SearchKnowledgeTool(shop),
        GetCurrentTimeTool(clock or shop.clock),
    ]


def shop_registry(shop: Shop, clock: Clock | None = None) -> ToolRegistry:
    """A `ToolRegistry` holding the five shop tools: what the agent of the lessons uses (see `shop_tools`)."""
    return ToolRegistry(shop_tools(shop, clock))
