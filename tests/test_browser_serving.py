"""Lesson 19's trace page in a real browser: `python -m tinyagent serve`, Debian's Chromium, Playwright.

The service talks to a paced classroom model (ClassroomServer(tokens_per_second=...), as lesson 14 paces it), so
the refund run takes seconds, and the test watches the page while it goes: round 1 must be on the page before
the final answer is, and the rounds must arrive one at a time (the page is drawn from the stream, not at the end).
The refund waits for a person: the test clicks Approve on the page (and, in another run, Decline) and checks the
shop's refunds table after each. No console error, no request leaving the machine.

    .venv/bin/python -m tests.test_browser_serving    # also saves the picture of README and lesson 19, notebooks/images/serving-trace-page.png

In CI (the CI environment variable is set) a missing Chromium fails the run; elsewhere these tests are skipped.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlencode

import pytest

from tests.browser.lab import Browser, browser_missing
from tests.conftest import completion
from tests.serving_process import PATIENCE, serve_process
from tinyagent.classroom.server import ClassroomServer
from tinyagent.safe_text import terminal_text

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
PICTURE = ROOT / "notebooks" / "images" / "serving-trace-page.png"  # beside the lessons: a hub copies only notebooks/
REFUND = "我上周买的扫地机不回充了，修不好我想退。订单号 88231。"

MISSING = browser_missing()
if MISSING and not os.environ.get("CI") and __name__ != "__main__":
    pytest.skip(f"browser tests skipped: {MISSING}", allow_module_level=True)


def watch_the_refund(folder: Path, picture: Path, approve: bool = True, from_link: bool = False) -> dict:
    """Ask the refund question on the page, answer its approval with a click, and watch; returns what was seen.
    With `from_link`, the question arrives in the page's URL (/?query=...), and nothing may run before the click."""
    with ClassroomServer(tokens_per_second=40) as room, \
            serve_process(folder, model_url=room.chat_url) as service, Browser() as browser:
        page = browser.context.new_page()
        problems: list[str] = []
        page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: problems.append(str(error)))
        outside: list[str] = []
        page.on("request", lambda request: None if request.url.startswith((service.url, "data:"))
                else outside.append(request.url))
        runs: list[str] = []
        page.on("request", lambda request: runs.append(request.method) if "/agent/stream" in request.url else None)
        seen: dict = {}
        if from_link:
            page.goto(service.url + "/?" + urlencode({"query": REFUND}))
            page.locator("#status", has_text="press Ask").wait_for(timeout=PATIENCE * 1000)
            seen["box_from_link"] = page.input_value("#query")
            seen["runs_before_click"] = list(runs)
            seen["health_before_click"] = service.health()
        else:
            page.goto(service.url + "/")
            page.fill("#query", REFUND)
        page.click("#send")

        rounds, answer = page.locator(".round"), page.locator("#answer")
        page.locator('.round[data-step="1"] .thought').wait_for(timeout=PATIENCE * 1000)
        seen.update(answer_hidden_at_round_1=answer.is_hidden(), counts=[rounds.count()])
        button = page.locator(".approval button." + ("approve" if approve else "decline"))
        deadline = time.monotonic() + PATIENCE
        while answer.is_hidden() and time.monotonic() < deadline:
            if rounds.count() != seen["counts"][-1]:
                seen["counts"].append(rounds.count())
            if "refunds_while_asked" not in seen and button.count():
                seen["refunds_while_asked"] = service.refunds()  # the run waits: nothing written yet
                seen["asked"] = page.locator(".approval .value").first.inner_text()
                button.click()
            time.sleep(0.05)
        page.locator("#status", has_text="done").wait_for(timeout=PATIENCE * 1000)
        seen.update(
            answer=answer.locator("p").inner_text(),
            rounds=rounds.count(),
            thoughts=page.locator(".round .thought").count(),
            tools=page.locator(".round .tool-call .value").all_inner_texts(),
            observations=page.locator(".round .observation").count(),
            approval=page.locator(".approval").get_attribute("class"),
            decided=page.locator(".approval .outcome").inner_text(),
            status=page.locator("#status").inner_text(),
            refunds=service.refunds(),
            runs=runs,
            problems=problems,
            outside=outside,
        )
        picture.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(picture), full_page=True)
        return seen


def test_the_page_draws_the_rounds_one_by_one_while_the_run_goes(tmp_path):
    if MISSING:
        pytest.fail(f"browser tests need Chromium in CI: {MISSING}", pytrace=False)
    seen = watch_the_refund(tmp_path, ARTIFACTS / "serving-trace-page.png")
    # Round 1 was on the page while the answer was not: the page draws the stream as it comes.
    assert seen["answer_hidden_at_round_1"]
    assert seen["counts"][0] < 5
    # ... and the rounds came one at a time (2, 3, 4, 5 each seen on its own before the answer).
    assert seen["counts"] == sorted(seen["counts"]) and {2, 3, 4, 5} <= set(seen["counts"])
    assert "RF202606300001" in seen["answer"]
    assert seen["rounds"] == seen["thoughts"] == 5 and seen["observations"] == 4
    assert [t.split("(")[0] for t in seen["tools"]] == ["queryOrder", "getCurrentTime", "searchKnowledge",
                                                         "applyRefund"]
    assert seen["status"].startswith("done: 5 rounds, final_answer")
    assert seen["problems"] == [] and seen["outside"] == []
    # The refund waited for the click on Approve: nothing in the table while it was asked, one row after.
    # The person was shown what the shop's applyRefund will do (lesson 15's describe_refund), not the model's words.
    assert "¥1999" in seen["asked"] and "88231" in seen["asked"] and seen["refunds_while_asked"] == []
    assert "approved" in seen["approval"].split() and "a person over HTTP" in seen["decided"]
    assert len(seen["refunds"]) == 1 and seen["refunds"][0][0] in seen["answer"]


def test_a_link_only_fills_the_box_and_decline_writes_no_refund(tmp_path):
    if MISSING:
        pytest.fail(f"browser tests need Chromium in CI: {MISSING}", pytrace=False)
    seen = watch_the_refund(tmp_path, ARTIFACTS / "serving-trace-page-declined.png", approve=False, from_link=True)
    # The link put the question in the box and ran nothing: the run began with the click, as one POST.
    assert seen["box_from_link"] == REFUND and seen["runs_before_click"] == []
    assert seen["health_before_click"]["finished"] == seen["health_before_click"]["running"] == 0
    assert seen["runs"] == ["POST"]
    assert "declined" in seen["approval"].split() and seen["refunds_while_asked"] == []
    assert seen["refunds"] == [] and "RF2026" not in seen["answer"]
    assert seen["status"].startswith("done:") and seen["problems"] == [] and seen["outside"] == []


def test_on_the_page_a_clients_key_cannot_approve_and_the_operators_can(tmp_path):
    """A page used with the client key (--api-key) shows the refund's request, but its Approve is refused with the
    reason; the same page with the operator's key (--operator-key) approves it."""
    if MISSING:
        pytest.fail(f"browser tests need Chromium in CI: {MISSING}", pytrace=False)
    keys = ("--api-key", "client-k3y", "--operator-key", "operator-k3y", "--approval-timeout", "600")
    wait = PATIENCE * 1000
    with serve_process(tmp_path, *keys) as service, Browser() as browser:
        page = browser.context.new_page()
        page.goto(service.url + "/")
        page.click("details summary")
        page.fill("#key", "client-k3y")
        page.fill("#query", REFUND)
        page.click("#send")
        page.locator(".approval button.approve").click(timeout=wait)
        page.locator("#status", has_text="error 403").wait_for(timeout=wait)
        assert "only the operator's key" in page.locator("#status").inner_text() and service.refunds() == []
        page.fill("#key", "operator-k3y")  # the shop's person, at the same page
        page.locator(".approval button.approve:not([disabled])").click(timeout=wait)
        page.locator("#status", has_text="done").wait_for(timeout=wait)
        assert "approved" in page.locator(".approval").get_attribute("class").split()
        assert len(service.refunds()) == 1 and service.refunds()[0][0] in page.locator("#answer p").inner_text()


class StreamCutter:
    """A TCP relay in front of the service whose `cut()` ends the page's open /agent/stream connection where it is,
    as a network that drops it would. The test cuts only once the page has drawn something new since its last cut:
    a browser throws away what it received but had not yet read when a connection fails, so a cut right behind a
    burst of events would leave the page nothing new, and every resume would look like the one before."""

    def __init__(self, target_port: int):
        self.target_port = target_port
        self.lock = threading.Lock()
        self.open_streams: list[tuple[socket.socket, socket.socket]] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def cut(self) -> bool:
        """End the open stream connection, if there is one (both ways: shutdown, as another thread reads them)."""
        with self.lock:
            if not self.open_streams:
                return False
            ends = self.open_streams.pop()
        for end in ends:
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
        return True

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:  # closed: the test is over
                return
            threading.Thread(target=self._relay, args=(client,), daemon=True).start()

    def _relay(self, client: socket.socket) -> None:
        upstream = socket.create_connection(("127.0.0.1", self.target_port))

        def forward_request() -> None:
            with contextlib.suppress(OSError):
                while data := client.recv(65536):
                    if b"POST /agent/stream" in data:
                        with self.lock:
                            self.open_streams.append((client, upstream))
                    upstream.sendall(data)

        threading.Thread(target=forward_request, daemon=True).start()
        with contextlib.suppress(OSError), client, upstream:
            while data := upstream.recv(65536):
                client.sendall(data)
        with self.lock:
            if (client, upstream) in self.open_streams:
                self.open_streams.remove((client, upstream))

    def close(self) -> None:
        self.listener.close()


def test_a_run_goes_on_through_many_dropped_connections_each_resumed(tmp_path):
    """The page resumes a dropped stream from its last event (Last-Event-ID). It gave up after the third drop of a
    run, each resume having brought new events, and the run was lost: now only drops in a row with nothing new
    between them count."""
    if MISSING:
        pytest.fail(f"browser tests need Chromium in CI: {MISSING}", pytrace=False)
    with ClassroomServer(tokens_per_second=40) as room, \
            serve_process(tmp_path, model_url=room.chat_url) as service, Browser() as browser:
        cutter = StreamCutter(int(service.url.rsplit(":", 1)[1]))
        try:
            page = browser.context.new_page()
            page.goto(f"http://127.0.0.1:{cutter.port}/")
            page.fill("#query", REFUND)
            page.click("#send")
            status, cuts, drawn_at_cut = page.locator("#status"), 0, 0
            deadline = time.monotonic() + PATIENCE
            while not status.inner_text().startswith(("done", "error")) and time.monotonic() < deadline:
                if page.locator(".approval button.approve:not([disabled])").count():
                    page.click(".approval button.approve")
                drawn = page.locator("#trace .row").count()
                if cuts < 5 and drawn > drawn_at_cut and cutter.cut():  # the page read something since the last
                    cuts, drawn_at_cut = cuts + 1, drawn
                time.sleep(0.05)
            assert status.inner_text().startswith("done"), status.inner_text()
            steps = page.locator(".round").evaluate_all("rounds => rounds.map(r => r.dataset.step)")
            assert cuts == 5, f"the run ended after {cuts} cuts: too few to test the fourth"
            assert steps == ["1", "2", "3", "4", "5"], steps  # every round once, none lost or drawn twice
            assert page.locator(".approval").count() == 1 and len(service.refunds()) == 1
            assert service.refunds()[0][0] in page.locator("#answer p").inner_text()
        finally:
            cutter.close()


# The Python rule the page's JavaScript must follow (safe_text.terminal_text): controls, format characters (a bidi
# override, a zero-width space, a tag character), line and paragraph separators escaped; \n, \t and the joiner kept.
HIDDEN_SAMPLE = ("a\x00\x1b[2J\r\n\t\x7f\x85\xad\u200b\u200d\u200e\u202e\u2028\u2029\u2066\ufeff\U000e0041"
                 " 中文👩‍💻 \\u202e")


def test_the_page_shows_a_bidi_override_as_its_escape_and_wraps_a_long_answer(tmp_path, scripted_server):
    """A U+202E in the model's Action Input reversed the tool call shown beside Approve ("1999" read "9991"); an answer
    of "C" * 100000 made the page a million pixels wide. Both come from the model, so the page must show, not obey."""
    if MISSING:
        pytest.fail(f"browser tests need Chromium in CI: {MISSING}", pytrace=False)
    scripted_server.reply(
        (200, completion('Thought: look it up.\nAction: queryOrder\nAction Input: {"orderId": "\u202e88231"}')),
        (200, completion("Thought: done.\nFinal Answer: \u202e1999 " + "C" * 100_000)))
    with serve_process(tmp_path, model_url=scripted_server.url) as service, Browser() as browser:
        page = browser.context.new_page()
        page.goto(service.url + "/")
        page.fill("#query", "Where is order 88231?")
        page.click("#send")
        page.locator("#status", has_text="done").wait_for(timeout=PATIENCE * 1000)
        action = page.locator(".round .tool-call .value").first.inner_text()
        trace = page.locator("#trace").inner_text()
        answer = page.locator("#answer p").inner_text()
        widths = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert action == 'queryOrder({"orderId": "\\u202e88231"})'
        assert answer.startswith("\\u202e1999 CCC") and "\u202e" not in answer + trace  # the Observation row too
        assert widths[0] <= widths[1], f"the page scrolls sideways: {widths[0]} px wide in a {widths[1]} px window"
        # the page's rule is the Python one: the same characters escaped, in the same form
        assert page.evaluate("(text) => shown(text)", HIDDEN_SAMPLE) == terminal_text(HIDDEN_SAMPLE)
        # Were a model's text ever drawn as HTML, the page's Content-Security-Policy stops its script from running.
        blocked = page.evaluate("""() => new Promise((resolve) => {
            document.addEventListener("securitypolicyviolation", (event) => resolve(event.violatedDirective));
            document.body.insertAdjacentHTML("beforeend", '<img src="data:," onload="window.ran = 1">');
        })""")
        assert blocked.startswith("script-src") and page.evaluate("window.ran") is None


if __name__ == "__main__":
    if MISSING:
        sys.exit(f"cannot take the picture: {MISSING}")
    with tempfile.TemporaryDirectory() as folder:
        print(watch_the_refund(Path(folder), PICTURE))
    print(f"saved {PICTURE.relative_to(ROOT)}")
