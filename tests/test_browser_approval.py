"""Lesson 15's approval panel in a real JupyterLab: the cell ends with the run paused, and a real click, handled by
the idle kernel, approves or declines the refund. (A cell that waited for the click itself would never get it:
that is why the panel drives the run step by step.) Playwright in Debian's Chromium, as in test_browser.py; its
own JupyterLab, so the two modules do not share state. Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.browser.lab import Browser, JupyterLab, Notebook, browser_missing

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"

MISSING = browser_missing()
if MISSING and not os.environ.get("CI"):
    pytest.skip(f"browser tests skipped: {MISSING}", allow_module_level=True)

try:
    from playwright.sync_api import expect
except ImportError:  # in CI: reported by the fixture, as a failure of the test
    expect = None

CELLS = [
    """from tinyagent import GatedAct, LlmClient, ReActAgent, fixed_clock
from tinyagent.shop import Shop, refund_gate, shop_registry
from tinyagent.toolkit.confirmation import GatedAct
from tinyagent.widgets import ApprovalPanel

REFUND = "我上周买的扫地机不回充了，修不好我想退。订单号 88231。"
shops = [Shop(":memory:", clock=fixed_clock("2026-06-30T19:05:23")) for _ in range(2)]


def panel(shop):
    agent = ReActAgent(LlmClient.classroom(), shop_registry(shop), parts=[GatedAct(refund_gate(shop))])
    return ApprovalPanel(agent.start(REFUND))""",
    "panel(shops[0])",
    "panel(shops[1])",
]


def approval_notebook(folder: Path) -> Path:
    cells = [{"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {}, "outputs": [],
              "source": source.splitlines(True)} for i, source in enumerate(CELLS)]
    notebook = {"cells": cells, "nbformat": 4, "nbformat_minor": 5, "metadata": {
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}}}
    path = folder / "approval.ipynb"
    path.write_text(json.dumps(notebook, ensure_ascii=False), encoding="utf-8")
    return path


def test_a_click_approves_one_refund_and_declines_the_other(tmp_path):
    if MISSING:
        pytest.fail(f"browser tests need Chromium in CI: {MISSING}", pytrace=False)
    ARTIFACTS.mkdir(exist_ok=True)
    path = approval_notebook(tmp_path)
    with JupyterLab([path]) as lab, Browser() as browser:
        page = browser.open(lab.url_for(path.name))
        nb = Notebook(page)
        try:
            nb.wait_until_idle()
            nb.run_all()
            panels = nb.panel.locator(".tinyagent-approval-panel")
            expect(panels).to_have_count(2)
            for i in range(2):  # every cell has ended; each run waits at applyRefund, nothing written
                expect(panels.nth(i).locator(".tinyagent-approval-request")).to_contain_text(
                    "退款 ¥1999，订单 88231")
                expect(panels.nth(i).locator(".ta-approval-asked")).to_be_visible()
                expect(panels.nth(i).locator(".ta-final")).to_have_count(0)
            panels.nth(0).screenshot(path=ARTIFACTS / "approval-panel-waiting.png")

            panels.nth(0).get_by_role("button", name="Approve").click()
            expect(panels.nth(0).locator(".ta-final")).to_contain_text("RF202606300001", timeout=60_000)
            expect(panels.nth(0).locator(".ta-approval-approved")).to_contain_text("a click on Approve")
            expect(panels.nth(0).get_by_role("button", name="Approve")).to_be_disabled()

            panels.nth(1).get_by_role("button", name="Decline").click()
            expect(panels.nth(1).locator(".ta-final")).to_contain_text("没有获得批准", timeout=60_000)
            expect(panels.nth(1).locator(".ta-final")).not_to_contain_text("RF2026")
            panels.nth(1).screenshot(path=ARTIFACTS / "approval-panel-declined.png")
            assert nb.error_outputs() == []
        except Exception:
            page.screenshot(path=ARTIFACTS / "browser-approval-failed.png")
            print(lab.log_tail())
            raise
