"""Take the README's screenshot of the trace viewer: docs/trace-viewer.png.

    .venv/bin/python -m tests.browser.screenshot_docs

Runs the refund request on the classroom model in a throwaway notebook in JupyterLab (Debian's
Chromium, as the browser tests do), opens round 1's raw reply, and saves the viewer alone.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from tests.browser.lab import Browser, JupyterLab, Notebook, browser_missing

ROOT = Path(__file__).resolve().parents[2]
OUTPUT = ROOT / "docs" / "trace-viewer.png"

CODE = """\
from tinyagent import LlmClient, ReActAgent, fixed_clock
from tinyagent.shop import Shop, shop_registry
from tinyagent.widgets import TraceViewer

shop = Shop(":memory:", clock=fixed_clock("2026-06-30T19:05:23"))
agent = ReActAgent(LlmClient.from_settings(), shop_registry(shop))
TraceViewer(agent.run("我上周买的扫地机不回充了，修不好我想退。订单号 88231。").trace)"""


def main() -> int:
    missing = browser_missing()
    if missing:
        print(f"cannot take the screenshot: {missing}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace_viewer.ipynb"
        nbformat.write(new_notebook(cells=[new_code_cell(CODE)], metadata={"kernelspec": {
            "display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}}), path)  # fmt: skip
        with JupyterLab([path]) as lab, Browser(viewport={"width": 1240, "height": 2400}) as browser:
            page = browser.open(lab.url_for(path.name))
            notebook = Notebook(page)
            notebook.wait_until_idle()
            notebook.run_all()
            viewer = notebook.panel.locator(".tinyagent-trace-viewer").first
            viewer.locator(".tinyagent-card").nth(4).wait_for()
            first_card = viewer.locator(".tinyagent-card").first
            first_card.locator(".jupyter-widget-Collapse-header").nth(1).click()  # "raw reply"
            first_card.locator(".jupyter-widget-Collapse-contents").nth(1).wait_for(state="visible")
            page.mouse.move(0, 0)  # no hover highlight in the picture
            OUTPUT.parent.mkdir(exist_ok=True)
            viewer.screenshot(path=OUTPUT)
    print(f"wrote {OUTPUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
