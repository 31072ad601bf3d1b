"""Lesson 21 on lesson 19's live page, in a real browser: `serve --team` streams the triage's and the specialist's
events, and the page draws a card per agent and round, each titled with its agent. Debian's Chromium, Playwright.

In CI (the CI environment variable is set) a missing Chromium fails the run; elsewhere these tests are skipped.
"""

from __future__ import annotations

import os

import pytest

from tests.browser.lab import Browser, browser_missing
from tests.serving_process import PATIENCE, serve_process

PARCEL = "Where is my parcel for order 88231?"

MISSING = browser_missing()
if MISSING and not os.environ.get("CI"):
    pytest.skip(f"browser tests skipped: {MISSING}", allow_module_level=True)


def test_the_page_draws_each_agents_rounds_under_its_name(tmp_path):
    with serve_process(tmp_path, "--team", "--auto-approve") as service, Browser() as browser:
        page = browser.context.new_page()
        problems: list[str] = []
        page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.goto(service.url + "/")
        page.fill("#query", PARCEL)
        page.click("#send")
        page.locator("#status", has_text="done").wait_for(timeout=PATIENCE * 1000)
        cards = page.locator(".round")
        titles = [cards.nth(i).locator("h2").inner_text() for i in range(cards.count())]
        agents = [cards.nth(i).get_attribute("data-agent") for i in range(cards.count())]
        handoffs = page.locator(".row.handoff .value").all_inner_texts()
        answer = page.locator("#answer p").inner_text()
    assert agents == ["triage", "logistics", "logistics", "logistics", "triage", "triage"]
    assert titles[0] == "Round 1 · 第 1 圈 · triage" and titles[1] == "Round 1 · 第 1 圈 · logistics"
    assert handoffs[0] == f"triage → logistics: {PARCEL}" and handoffs[1].startswith("logistics → triage: ")
    assert "SF1234567890" in answer
    assert problems == []
