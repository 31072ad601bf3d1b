"""Lesson 14 in a real browser: the trace viewer shows the Thought growing while a streaming agent types it.

A small notebook, written by the test, runs `ReActAgent(parts=[StreamedSend()])` against a paced classroom server (a chunk
every few tenths of a second) into a `TraceViewer`. While the cell runs, the test reads the card's Thought row in
JupyterLab again and again: it must grow, each view the start of the next, through the card's own Thought row,
and end as the parsed Thought once the round is read.

In CI (the CI environment variable is set) a missing Chromium fails the run; elsewhere these tests are skipped.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import nbformat
import pytest

from tests.browser.lab import Browser, JupyterLab, Notebook, browser_missing

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"

MISSING = browser_missing()
if MISSING and not os.environ.get("CI"):
    pytest.skip(f"browser tests skipped: {MISSING}", allow_module_level=True)

CELL = """
from IPython.display import display
from tinyagent import LlmClient, ReActAgent, StreamedSend, fixed_clock
from tinyagent.classroom.server import ClassroomServer
from tinyagent.shop import Shop, shop_registry
from tinyagent.widgets import TraceViewer

clock = fixed_clock("2026-06-30T19:05:23")
room = ClassroomServer(tokens_per_second=10).start()  # three tokens every 0.3 s
agent = ReActAgent(LlmClient(room.chat_url, None, "classroom"), shop_registry(Shop(":memory:", clock=clock), clock),
                   parts=[StreamedSend()], max_steps=1)
viewer = TraceViewer()
display(viewer)
viewer.watch(agent.start("帮我看看订单 88231 的快递到哪了。"))
room.stop()
print("done:", viewer.trace.reason)
"""


@pytest.fixture(scope="module")
def notebook_path(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("streaming") / "streaming_viewer.ipynb"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(CELL.strip())])
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    nbformat.write(nb, path)
    return path


def test_the_thought_grows_in_the_card_while_the_model_types(notebook_path):
    if MISSING:
        pytest.fail(f"browser tests need Chromium in CI: {MISSING}", pytrace=False)
    ARTIFACTS.mkdir(exist_ok=True)
    with JupyterLab([notebook_path]) as lab, Browser() as browser:
        page = browser.open(lab.url_for(notebook_path.name))
        nb = Notebook(page)
        try:
            nb.wait_until_idle()
            nb.menu("Run", "runmenu:run-all")
            thought = nb.panel.locator(".tinyagent-card .ta-thought .ta-value").first
            views: list[str] = []
            live_seen = False
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline:
                if nb.panel.locator(".jp-OutputArea-output", has_text="done:").count():
                    break
                if thought.count():
                    live_seen = live_seen or nb.panel.locator(".tinyagent-card .ta-live").count() > 0
                    text = thought.inner_text().replace("▌", "").strip()
                    if text and (not views or text != views[-1]):
                        views.append(text)
                        if len(views) == 4:  # a picture of the card while it is typed
                            nb.panel.locator(".tinyagent-card").first.screenshot(
                                path=ARTIFACTS / "browser-streaming-typing.png")
                time.sleep(0.05)
            else:
                raise TimeoutError("the cell did not finish within 180 s")
            final = thought.inner_text().strip()
            errors = nb.error_outputs()
            page.screenshot(path=ARTIFACTS / "browser-streaming-thought.png")
        except Exception:
            page.screenshot(path=ARTIFACTS / "browser-streaming-failed.png")
            print(lab.log_tail())
            raise
    assert live_seen, "the card never showed a Thought being typed"
    assert len(views) >= 3, f"the Thought was seen in only {len(views)} states: {views}"
    assert all(final.startswith(view) for view in views), (views, final)
    assert len(views[0]) < len(final), "the first view was already the whole Thought"
    assert final.startswith("用户想知道订单 88231") and "▌" not in final
    assert errors == []
    print(f"the Thought seen in {len(views)} states while it was typed")
