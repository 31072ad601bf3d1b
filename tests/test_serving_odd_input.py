"""Issue 37: odd input to lesson 19's service is a JSON 4xx with a one-line reason, never a 500.

Numbers in ids are read with one rule (`number_checks.ascii_number`): ASCII digits only. `str.isdigit()` is True for
"³", which `int()` refuses (a 500 on three routes), and `int()` reads "١" (Arabic-Indic) or "１" (full-width) as 1, so
an approval, a stream event or a turn could be named in several spellings.
"""

from __future__ import annotations

import json

import pytest
import requests

from tinyagent import LlmClient
from tinyagent.number_checks import ascii_number

pytest.importorskip("starlette")

REFUND = "我上周买的扫地机不回充了，修不好我想退。订单号 88231。"
PATIENCE = 120

# Other scripts' digits 0-9: str.isdigit() is True for every one of them.
DIGITS = {
    "superscript": "⁰¹²³⁴⁵⁶⁷⁸⁹",
    "arabic-indic": "٠١٢٣٤٥٦٧٨٩",
    "persian": "۰۱۲۳۴۵۶۷۸۹",
    "devanagari": "०१२३४५६७८९",
    "full-width": "０１２３４５６７８９",
    "math-bold": "𝟎𝟏𝟐𝟑𝟒𝟓𝟔𝟕𝟖𝟗",
}


def odd_spellings(number: int) -> list[str]:
    """`number` in each other script's digits, and "³" (which int() refuses: the issue's 500)."""
    return ["³", *(str(number).translate(str.maketrans("0123456789", digits)) for digits in DIGITS.values())]


@pytest.mark.parametrize("text", [*odd_spellings(1), *odd_spellings(30), "", " 1", "1 ", "+1", "-1", "1_0", "1.0",
                                  "0x1", "①", "9" * 19, "9" * 5000])
def test_only_ascii_digits_are_a_number(text):
    assert all(ch.isdigit() for ch in "³١１𝟏")  # what the old check let through
    assert ascii_number(text) is None


def test_ascii_digits_are_read_as_the_number_they_spell():
    assert [ascii_number(text) for text in ("0", "1", "007", "9" * 18)] == [0, 1, 7, 10**18 - 1]
    assert ascii_number("1234", most_digits=3) is None


def refused(response: requests.Response, status: int, code: str) -> str:
    """The refusal's one-line message, after checking it is the service's JSON error with that status and code."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json"), response.text
    error = response.json()["error"]
    assert error["code"] == code and error["message"] and "\n" not in error["message"], error
    return error["message"]


def read_block(block: str) -> tuple[str, str, dict]:
    fields = dict(line.split(": ", 1) for line in block.strip("\n").split("\n"))
    return fields["id"], fields["event"], json.loads(fields["data"])


def blocks_of(response: requests.Response):
    assert response.status_code == 200, response.text
    for block in response.iter_lines(decode_unicode=True, delimiter="\n\n"):
        if block.strip() and not block.startswith(":"):
            yield read_block(block)


@pytest.fixture(scope="module")
def server():
    from tinyagent.serving import ServiceConfig, ServiceServer

    config = ServiceConfig(shop_db=":memory:", session_store=":memory:", now="2026-06-30T19:05:23",
                           approval_timeout_s=600)
    with ServiceServer(config, llm=LlmClient.classroom) as running:
        yield running


def test_an_id_with_digits_other_than_ascii_is_a_json_404_on_every_route(server):
    url = server.url
    with requests.post(url + "/agent/stream", json={"query": REFUND}, stream=True, timeout=PATIENCE) as response:
        check_every_route(server, blocks_of(response))


def check_every_route(server, blocks) -> None:
    url = server.url
    read = []
    for block in blocks:
        read.append(block)
        if block[1] == "approval_requested":
            break
    approval = read[-1][2]["approval_id"]
    run_id, _, number = approval.rpartition(".")
    stream_id, _, last = read[-1][0].rpartition(".")

    # An approval id: "³" was a 500; "١" answered request 1, as if the id were right.
    for odd in odd_spellings(int(number)):
        answer = requests.post(f"{url}/agent/approvals/{run_id}.{odd}", json={"approve": True}, timeout=PATIENCE)
        refused(answer, 404, "unknown_approval")
    pending = requests.get(url + "/agent/approvals", timeout=PATIENCE).json()["pending"]
    assert [p["approval_id"] for p in pending] == [approval]  # still waiting: none of those answered it
    assert server.service.shop.refunds() == []

    # A Last-Event-ID. A header is read as Latin-1, whose odd digits are the superscripts ¹ ² ³; other scripts'
    # digits arrive as their UTF-8 bytes read as Latin-1 (mojibake), refused all the same.
    for odd in ["³", "²", "¹", "¹²", *odd_spellings(int(last))[1:]]:
        again = requests.post(url + "/agent/stream", json={"query": REFUND}, timeout=PATIENCE,
                              headers={"Last-Event-ID": f"{stream_id}.{odd}".encode()
                                       if odd.strip("¹²³") else f"{stream_id}.{odd}".encode("latin-1")})
        refused(again, 404, "unknown_stream")

    declined = requests.post(f"{url}/agent/approvals/{approval}", json={"approve": False}, timeout=PATIENCE)
    assert declined.status_code == 200 and declined.json()["outcome"] == "declined"
    end = next(block for block in blocks if block[1] == "end")[2]
    assert server.service.shop.refunds() == []

    # A turn number: "³" was a 500; "١" continued turn 1.
    session_id, turn = end["session_id"], end["turn"]
    for odd in odd_spellings(turn):
        edit = requests.post(f"{url}/agent/sessions/{session_id}/turns/{odd}/continue",
                             json={"step": 1, "retry": True}, timeout=PATIENCE)
        refused(edit, 404, "unknown_turn")
    assert len(server.service.store.turns(session_id)) == 1  # no turn was continued
