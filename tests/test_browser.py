"""The widgets in a real browser: JupyterLab driven by Playwright in Debian's Chromium.

One JupyterLab server and one browser for the whole module. The notebook is opened, its saved
outputs cleared (stored outputs would make a false pass), every cell run, and then the widgets are
used the way a learner would: "Next step" clicked in the debugger, a message sent in the chat.
Screenshots go to test-artifacts/.

In CI (the CI environment variable is set) a missing Chromium fails the run; on a laptop without
one these tests are skipped.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from tests.browser.lab import Browser, JupyterLab, Notebook, browser_missing

ROOT = Path(__file__).resolve().parent.parent
# The notebook under test: lesson 06, which has a TraceViewer filled in by a run (the first viewer
# shown on its own), a StepDebugger on the refund request for order 88231 and a ChatPanel on the
# shop. Any lesson that has those three will do; a StopComparison is checked too when there is one.
NOTEBOOK = ROOT / "notebooks" / "06_react_loop.ipynb"
ARTIFACTS = ROOT / "test-artifacts"
LOGISTICS = "帮我看看订单 88231 的快递到哪了。"

MISSING = browser_missing()
if MISSING and not os.environ.get("CI"):
    pytest.skip(f"browser tests skipped: {MISSING}", allow_module_level=True)

try:
    from playwright.sync_api import expect
except ImportError:  # in CI: reported by the fixture, as a failure of each browser test
    expect = None


@pytest.fixture(scope="module")
def notebook():
    """The notebook open in JupyterLab, outputs cleared, every cell run in a fresh kernel."""
    if MISSING:
        pytest.fail(f"browser tests need Chromium in CI: {MISSING}", pytrace=False)
    ARTIFACTS.mkdir(exist_ok=True)
    started = time.monotonic()
    with JupyterLab([NOTEBOOK]) as lab, Browser() as browser:
        page = browser.open(lab.url_for(NOTEBOOK.name))
        nb = Notebook(page)
        try:
            nb.wait_until_idle()
            nb.clear_outputs()
            nb.run_all()
            yield nb
        except Exception:
            page.screenshot(path=ARTIFACTS / "browser-setup-failed.png")
            print(lab.log_tail())
            raise
        finally:
            page.screenshot(path=ARTIFACTS / f"{NOTEBOOK.stem}.png")
            print(f"browser tests: {time.monotonic() - started:.1f} s with JupyterLab and Chromium")


@pytest.fixture(autouse=True)
def screenshot_after(request, notebook):
    """The page as each test left it, pass or fail: test-artifacts/browser-<test>.png."""
    yield
    notebook.page.screenshot(path=ARTIFACTS / f"browser-{request.node.name}.png")


def assert_no_errors(nb: Notebook) -> None:
    assert nb.error_outputs() == []
    assert nb.panel.locator(".ta-debugger-error, .ta-chat-error").count() == 0


def test_widgets_render_live_and_without_errors(notebook):
    panel = notebook.panel
    for widget in (".tinyagent-trace-viewer", ".tinyagent-step-debugger", ".tinyagent-chat-panel"):
        expect(panel.locator(widget).first).to_be_visible()
    comparison = panel.locator(".tinyagent-stop-comparison")
    if comparison.count():  # lesson 04's side by side, when the notebook has one
        expect(comparison.locator(".ta-invented").first).to_contain_text("Observation:")
        comparison.first.screenshot(path=ARTIFACTS / "stop-comparison.png")
    # drawn by the live kernel, not from saved widget state
    assert panel.locator(".jupyter-widgets-disconnected").count() == 0
    assert_no_errors(notebook)


def test_trace_viewer_shows_a_card_per_round(notebook):
    viewer = notebook.panel.locator(".jp-OutputArea-output > .tinyagent-trace-viewer").first
    cards = viewer.locator(".tinyagent-card")
    rounds = int(re.search(r"(\d+) rounds?", viewer.locator(".ta-summary").inner_text()).group(1))
    expect(cards).to_have_count(rounds)
    expect(cards.nth(0).locator(".ta-action")).to_contain_text("(")
    expect(cards.nth(rounds - 1).locator(".ta-final")).to_be_visible()
    # the raw exchange is folded away until clicked
    raw = cards.nth(0).locator(".tinyagent-raw")
    expect(raw.locator(".jupyter-widget-Collapse-contents").first).to_be_hidden()
    raw.locator(".jupyter-widget-Collapse-header").first.click()
    expect(raw.locator(".jupyter-widget-Collapse-contents").first).to_be_visible()
    expect(raw.locator(".ta-role-user").first).to_contain_text("88231")
    viewer.screenshot(path=ARTIFACTS / "trace-viewer.png")


def test_next_step_adds_one_call_per_click(notebook):
    debugger = notebook.panel.locator(".tinyagent-step-debugger").first
    status = debugger.locator(".ta-status")
    cards = debugger.locator(".tinyagent-card")
    messages = debugger.locator(".tinyagent-messages .ta-message")
    next_step = debugger.get_by_role("button", name="Next step")
    debugger.get_by_role("button", name="Reset").click()
    expect(status).to_contain_text("steps: 0")

    next_step.click()  # the model's first reply: an Action, its tool not run yet
    expect(status).to_contain_text(
        "steps: 1 (1 model call, 0 tool calls); next: run the tool queryOrder(88231)"
    )
    expect(cards).to_have_count(1)
    expect(cards.nth(0).locator(".ta-action")).to_contain_text("queryOrder(88231)")
    expect(cards.nth(0).locator(".ta-waiting")).to_be_visible()
    expect(messages).to_have_count(3)

    next_step.click()  # the tool runs; its Observation joins the message list
    expect(status).to_contain_text("steps: 2 (1 model call, 1 tool call); next: call the model")
    expect(cards.nth(0).locator(".ta-observation")).to_contain_text("88231")
    expect(messages).to_have_count(4)
    expect(messages.nth(3)).to_contain_text("Observation:")

    next_step.click()  # the second model call starts round 2
    expect(cards).to_have_count(2)
    expect(status).to_contain_text("steps: 3 (2 model calls, 1 tool call)")
    debugger.screenshot(path=ARTIFACTS / "step-debugger.png")
    assert_no_errors(notebook)


def test_chat_panel_answers_and_keeps_the_conversation(notebook):
    chat = notebook.panel.locator(".tinyagent-chat-panel").first
    chat.locator(".tinyagent-chat-input input").fill(LOGISTICS)
    chat.get_by_role("button", name="Send").click()
    answers = chat.locator(".ta-turn-answer")
    expect(answers).to_have_count(1)
    expect(answers.nth(0)).to_contain_text("SF1234567890")
    expect(chat.locator(".tinyagent-trace-viewer .ta-final")).to_contain_text("SF1234567890")

    chat.locator(".tinyagent-chat-input input").fill("那我想退货，可以吗？")
    chat.get_by_role("button", name="Send").click()
    expect(answers).to_have_count(2)
    expect(chat.locator(".ta-status")).to_contain_text("2 turns")
    chat.screenshot(path=ARTIFACTS / "chat-panel.png")
    assert_no_errors(notebook)
