"""Edit and continue on lesson 19's trace page, in a real browser (Debian's Chromium, Playwright).

`python -m tinyagent serve` on the offline classroom model; the page asks the parcel question, then a person edits
round 1's Thought (and its Action) and presses Continue, and later retries a tool with another input. The test
reads what the page draws (the rounds, the person's marks, the answer), the session's turns on the service, and
checks that no console error appears and no request leaves the machine. Then a refund, declined: retried on the
page it asks again, and the shop's refunds table stays empty until a retry is approved.

In CI (the CI environment variable is set) a missing Chromium fails the run; elsewhere these tests are skipped.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import requests

from tests.browser.lab import Browser, browser_missing
from tests.serving_process import PATIENCE, serve_process

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
LOGISTICS = "帮我看看订单 88231 的快递到哪了。"
REFUND = "我上周买的扫地机不回充了，修不好我想退。订单号 88231。"
EDITED = "Thought: 运单号我已经知道了，直接查物流。\nAction: queryLogistics\nAction Input: SF1234567890"

MISSING = browser_missing()
if MISSING and not os.environ.get("CI"):
    pytest.skip(f"browser tests skipped: {MISSING}", allow_module_level=True)


def test_a_person_edits_a_thought_on_the_page_and_the_run_carries_on_from_it(tmp_path):
    if MISSING:
        pytest.fail(f"browser tests need Chromium in CI: {MISSING}", pytrace=False)
    wait = PATIENCE * 1000
    with serve_process(tmp_path, "--auto-approve") as service, Browser() as browser:
        page = browser.context.new_page()
        problems: list[str] = []
        page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: problems.append(str(error)))
        outside: list[str] = []
        page.on("request", lambda request: None if request.url.startswith((service.url, "data:"))
                else outside.append(request.url))
        page.goto(service.url + "/")
        page.fill("#query", LOGISTICS)
        page.click("#send")
        page.locator("#status", has_text="turn 1").wait_for(timeout=wait)
        first_tools = page.locator(".round .tool-call .value").all_inner_texts()
        assert first_tools == ["queryOrder(88231)", "queryLogistics(SF1234567890)"]
        assert page.locator(".person").count() == 0

        # Edit round 1: the box opens with the model's reply; the person's reply replaces it.
        round_1 = page.locator('.round[data-step="1"]')
        round_1.locator("button.edit-thought").click()
        box = round_1.locator("textarea.reply")
        assert box.input_value().startswith("Thought: ") and "Action: queryOrder" in box.input_value()
        box.fill(EDITED)
        round_1.locator("button.continue").click()
        page.locator("#status", has_text="turn 2").wait_for(timeout=wait)

        round_1 = page.locator('.round[data-step="1"]')
        assert round_1.locator(".person .label").inner_text() == "Edited by you · 人工修改"
        assert round_1.locator(".thought .value").inner_text().startswith("运单号我已经知道了，直接查物流。")
        assert round_1.locator(".tool-call .value").inner_text() == "queryLogistics(SF1234567890)"
        assert page.locator(".round").first.get_attribute("data-step") == "1"  # round 1 drawn once, as edited
        assert page.locator('.round[data-step="1"]').count() == 1
        assert not page.locator("#answer").is_hidden() and "SF1234567890" in page.locator("#answer p").inner_text()
        assert page.locator(".round .person").count() == 1  # only round 1 is the person's

        # Retry round 1's tool with another input: it runs again, fails, and the model carries on.
        round_1.locator("button.retry-tool").click()
        tool_input = round_1.locator("input.tool-input")
        assert tool_input.input_value() == "SF1234567890"
        tool_input.fill("SF0000000000")
        round_1.locator("button.continue").click()
        page.locator("#status", has_text="turn 3").wait_for(timeout=wait)
        round_1 = page.locator('.round[data-step="1"]')
        assert round_1.locator(".person .label").inner_text() == "Retried by you · 人工重试"
        assert round_1.locator(".tool-call .value").inner_text() == "queryLogistics(SF0000000000)"
        assert "SF0000000000" in round_1.locator(".observation.error .value").inner_text()
        assert page.locator("#status").inner_text().startswith("done:")

        status = page.locator("#status").inner_text()
        session_id = status.split("session ")[1].split(" ")[0]
        turns = requests.get(f"{service.url}/agent/sessions/{session_id}", timeout=30).json()["turns"]
        assert [t["question"] for t in turns] == [LOGISTICS] * 3
        assert turns[1]["tools"][0] == "queryLogistics" and turns[2]["tools"][0] == "queryLogistics"
        page.screenshot(path=str(ARTIFACTS / "serving-edited-thought.png"), full_page=True)  # lesson 19 shows it
        assert problems == [] and outside == []


def test_a_retried_refund_on_the_page_waits_for_a_person_again(tmp_path):
    if MISSING:
        pytest.fail(f"browser tests need Chromium in CI: {MISSING}", pytrace=False)
    wait = PATIENCE * 1000
    with serve_process(tmp_path) as service, Browser() as browser:  # no --auto-approve: a refund asks a person
        page = browser.context.new_page()
        problems: list[str] = []
        page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.goto(service.url + "/")
        page.fill("#query", REFUND)
        page.click("#send")
        page.locator(".approval button.decline").click(timeout=wait)
        page.locator("#status", has_text="turn 1").wait_for(timeout=wait)
        assert service.refunds() == []
        refund_round = page.locator(".round", has=page.locator(".tool-call .value", has_text="applyRefund"))
        step = refund_round.get_attribute("data-step")

        def retry_and_answer(answer: str, turn: int) -> list:
            """Retry the refund round's tool, answer its approval with a click; the refunds while it was asked."""
            card = page.locator(f'.round[data-step="{step}"]')
            card.locator("button.retry-tool").click()
            card.locator("button.continue").click()
            asked = page.locator(f'.round[data-step="{step}"] .approval button.{answer}')
            asked.wait_for(timeout=wait)  # the retried refund asks again
            written = service.refunds()
            asked.click()
            page.locator("#status", has_text=f"turn {turn}").wait_for(timeout=wait)
            return written

        assert retry_and_answer("decline", 2) == []
        card = page.locator(f'.round[data-step="{step}"]')
        assert card.locator(".person .label").inner_text() == "Retried by you · 人工重试"
        assert "declined" in card.locator(".approval").get_attribute("class").split()
        assert service.refunds() == []  # declined twice: nothing written
        assert retry_and_answer("approve", 3) == []  # nothing before the yes ...
        assert len(service.refunds()) == 1  # ... and one refund after it
        assert "RF2026" in page.locator("#answer p").inner_text()
        page.screenshot(path=str(ARTIFACTS / "serving-retried-refund.png"), full_page=True)
        assert problems == []
