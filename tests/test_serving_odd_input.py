"""Issue 37: odd input to lesson 19's service is a JSON 4xx with a one-line reason, never a 500.

Numbers in ids are read with one rule (`number_checks.ascii_number`): ASCII digits only. `str.isdigit()` is True for
"³", which `int()` refuses (a 500 on three routes), and `int()` reads "١" (Arabic-Indic) or "１" (full-width) as 1, so
an approval, a stream event or a turn could be named in several spellings.

A disk that fills up while serving is not the client's doing, and is not a 500 either: the answer says what
happened (the refund tool's error Observation, and a `warning` that the turn was not stored).
"""

from __future__ import annotations

import json
import sys

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


# -- a disk that fills up while serving --------------------------------------------------------------------
# SQLite rolls a write back by itself on SQLITE_FULL. The refund's write and the turn's then failed a second time
# on their own ROLLBACK ("cannot rollback - no transaction is active"), which was no store error: the request
# ended in a 500 after its tools had run. Now it is answered as a read-only shop is: the refund tool's error
# Observation says the refund was not written, and the answer's `warning` says the turn was not stored.
FILL_REFUNDS = ("INSERT INTO refunds VALUES (?, ?, 'x', 0, 's', 't')", lambda n: (f"RF1999{n:08d}", f"F{n:05d}"))
FILL_TURNS = ("INSERT INTO session_turns VALUES ('filler', ?, '', '', '', 0, '[]', 0, 0, 0)", lambda n: (n,))


def assert_told_what_happened(data: dict) -> None:
    """An answer (invoke's JSON, or the stream's end event) on a full disk: nothing written, and said so."""
    assert "88231" in data["answer"] and "database or disk is full" in data["answer"], data["answer"]
    assert data["turn"] is None
    assert data["warning"].startswith("the answer was not stored in the session: the session store ")
    assert data["warning"].endswith("could not be written (database or disk is full): make room on its disk, then try "
                                    "again") and "\n" not in data["warning"]


def test_a_refund_on_a_full_disk_is_answered_with_what_happened_not_a_500(tmp_path):
    from tests.full_disk import full_database
    from tinyagent.serving import ServiceConfig, ServiceServer

    config = ServiceConfig(shop_db=str(tmp_path / "shop.sqlite3"), session_store=str(tmp_path / "sessions.sqlite3"),
                           now="2026-06-30T19:05:23", auto_approve=True)
    with ServiceServer(config, llm=LlmClient.classroom) as server:
        service = server.service
        full_database(tmp_path / "shop.sqlite3", service.shop._conn, *FILL_REFUNDS)
        full_database(tmp_path / "sessions.sqlite3", service.store._conn, *FILL_TURNS)
        filled = len(service.shop.refunds())

        answer = requests.post(server.url + "/agent/invoke", json={"query": REFUND}, timeout=PATIENCE)
        assert answer.status_code == 200, answer.text
        assert_told_what_happened(answer.json())
        failed = [e for e in answer.json()["trace"]["events"] if e["type"] == "observation" and e["error"]]
        assert "写入失败" in failed[-1]["text"] and "nothing was changed" in failed[-1]["text"]

        with requests.post(server.url + "/agent/stream", json={"query": REFUND}, stream=True,
                           timeout=PATIENCE) as streamed:
            events = list(blocks_of(streamed))
        assert events[-1][1] == "end"
        assert_told_what_happened(events[-1][2])

        assert len(service.shop.refunds()) == filled and "88231" not in {r["orderId"] for r in service.shop.refunds()}
        assert service.counts["failed"] == 0


# Run on a real disk that fills up (tests/full_disk.py): the service in this process, its files on the small
# disk, filled to the last byte once it is up; then the refund is asked for, by invoke and by stream.
FULL_DISK_CHILD = """
import json, os, sys
import requests
from tinyagent import LlmClient
from tinyagent.serving import ServiceConfig, ServiceServer

folder, query = sys.argv[1], sys.argv[2]
config = ServiceConfig(shop_db=f"{folder}/shop.sqlite3", session_store=f"{folder}/sessions.sqlite3",
                       now="2026-06-30T19:05:23", auto_approve=True)
with ServiceServer(config, llm=LlmClient.classroom) as server:
    filler = os.open(f"{folder}/filler", os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(filler, bytes(4096))
    except OSError as exc:
        full = exc.strerror
    os.close(filler)
    invoked = requests.post(server.url + "/agent/invoke", json={"query": query}, timeout=120)
    streamed = requests.post(server.url + "/agent/stream", json={"query": query}, timeout=120)
    end = [block for block in streamed.text.split("\\n\\n") if block.startswith("id:") and "event: end" in block]
    refunds = server.service.shop.refunds()
print(json.dumps({"full": full, "status": invoked.status_code, "invoked": invoked.json(),
                  "stream_status": streamed.status_code, "end": json.loads(end[0].split("data: ", 1)[1]) if end else None,
                  "refunds": refunds}, ensure_ascii=False))
"""


def test_a_refund_on_a_real_full_disk_is_answered_with_what_happened(tmp_path):
    import os

    from tests.full_disk import run_on_a_full_disk

    folder = tmp_path / "disk"
    folder.mkdir()
    done = run_on_a_full_disk(folder, sys.executable, "-c", FULL_DISK_CHILD, str(folder), REFUND,
                              env={**os.environ, "TINYAGENT_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["full"] == "No space left on device"
    assert result["status"] == 200 and result["stream_status"] == 200, result
    assert_told_what_happened(result["invoked"])
    assert_told_what_happened(result["end"])
    assert result["refunds"] == []
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("route", ["invoke", "stream", "turns"])
def test_a_session_store_locked_by_another_process_holds_up_only_the_requests_that_read_it(tmp_path, route):
    """Checking that a session exists reads the store; SQLite waits out another process's lock (the busy timeout,
    30 s). That wait is in a thread: the event loop goes on answering everyone else, an operator's approval included.
    Once the lock goes, the waiting request is answered as usual."""
    import sqlite3
    import threading

    from tinyagent.serving import ServiceConfig, ServiceServer

    store = tmp_path / "sessions.sqlite3"
    config = ServiceConfig(shop_db=":memory:", session_store=str(store), now="2026-06-30T19:05:23")
    with ServiceServer(config, llm=LlmClient.classroom) as server:
        first = requests.post(server.url + "/agent/invoke", json={"query": "Hi"}, timeout=PATIENCE).json()
        session = first["session_id"]
        other_process = sqlite3.connect(store, isolation_level=None)  # as a teacher's sqlite3 shell would hold it
        other_process.execute("BEGIN EXCLUSIVE")
        answers: list[requests.Response] = []
        send = {
            "invoke": lambda: requests.post(server.url + "/agent/invoke", json={"query": "Hi", "session_id": session},
                                            timeout=PATIENCE),
            "stream": lambda: requests.post(server.url + "/agent/stream", json={"query": "Hi", "session_id": session},
                                            timeout=PATIENCE),
            "turns": lambda: requests.get(f"{server.url}/agent/sessions/{session}", timeout=PATIENCE),
        }[route]
        reading, read = threading.Event(), server.service.session_exists

        def noted(session_id: str) -> bool:
            reading.set()
            return read(session_id)  # waits for the lock

        server.service.session_exists = noted
        waiting = threading.Thread(target=lambda: answers.append(send()))
        try:
            waiting.start()
            reading.wait()
            health = requests.get(server.url + "/health", timeout=PATIENCE / 4)  # well inside the 30 s busy timeout
            assert health.status_code == 200 and waiting.is_alive()
        finally:
            other_process.rollback()
            other_process.close()
            waiting.join()
        assert answers[0].status_code == 200, answers[0].text


def test_a_chat_client_gone_after_a_refund_was_approved_leaves_a_log_line_that_says_what_was_done(caplog):
    """The chat route keeps no session: a client that hangs up after the operator's yes, before the answer, had its
    run stopped with nobody told of the refund and nothing kept but the shop's row. The log says it now."""
    import socket
    import threading

    from tinyagent.classroom.server import ClassroomServer
    from tinyagent.serving import ServiceConfig, ServiceServer

    config = ServiceConfig(shop_db=":memory:", session_store=":memory:", now="2026-06-30T19:05:23",
                           approval_timeout_s=600)
    with ClassroomServer() as room, \
            ServiceServer(config, llm=lambda: LlmClient(room.chat_url, None, "classroom")) as server:
        body = json.dumps({"model": "tinyagent-shop", "messages": [{"role": "user", "content": REFUND}]}).encode()
        client = socket.create_connection(("127.0.0.1", server.port))
        try:
            client.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
                           b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            while not (waiting := requests.get(server.url + "/agent/approvals", timeout=PATIENCE).json()["pending"]):
                threading.Event().wait(0.05)
            room.tokens_per_second = 25  # the answer after the refund takes seconds: the client is gone long before
            yes = requests.post(f"{server.url}/agent/approvals/{waiting[0]['approval_id']}", json={"approve": True},
                                timeout=PATIENCE)
            assert yes.status_code == 200, yes.text
            while not server.service.shop.refunds():  # the refund is written: the client hangs up after it
                threading.Event().wait(0.01)
        finally:
            client.close()
        while server.service.counts["running"]:
            threading.Event().wait(0.05)
        refunds = server.service.shop.refunds()
        assert server.service.counts["cancelled"] == 1 and len(refunds) == 1
    said = [record.getMessage() for record in caplog.records if record.name == "tinyagent.serving"]
    assert len(said) == 1 and "changed the shop" in said[0] and refunds[0]["refundId"] in said[0], said
