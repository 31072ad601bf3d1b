"""Lesson 22 in a real browser: run in JupyterLab (Playwright, Debian's Chromium), its tree of thoughts is drawn by
JupyterLab's Mermaid renderer, every candidate of round 1 with its score, and no cell shows an error."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote

import pytest

from tests.browser.lab import Browser, JupyterLab, Notebook, browser_missing

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "22_tree_of_thoughts.ipynb"
ARTIFACTS = ROOT / "test-artifacts"

MISSING = browser_missing()
if MISSING and not os.environ.get("CI"):
    pytest.skip(f"browser tests skipped: {MISSING}", allow_module_level=True)


def test_the_tree_is_drawn_as_a_mermaid_flowchart():
    if MISSING:
        pytest.fail(f"browser tests need Chromium in CI: {MISSING}", pytrace=False)
    ARTIFACTS.mkdir(exist_ok=True)
    with JupyterLab([NOTEBOOK]) as lab, Browser() as browser:
        page = browser.open(lab.url_for(NOTEBOOK.name))
        nb = Notebook(page)
        try:
            nb.wait_until_idle()
            nb.clear_outputs()
            nb.run_all(timeout=180)
            # JupyterLab draws a Mermaid block as an SVG image inside .jp-RenderedMermaid
            drawn = nb.panel.locator(".jp-OutputArea-output .jp-RenderedMermaid img")
            drawn.first.wait_for(state="visible", timeout=60_000)
            svg = unquote(drawn.first.get_attribute("src") or "")
            assert svg.startswith("data:image/svg+xml") and "Syntax error" not in svg, svg[:300]
            for label in ("1 queryOrder(88234)", "1.2 Final Answer", "2 applyRefund", "0.95", "round 1"):
                assert label in svg, label
            assert drawn.first.bounding_box()["height"] > 100  # a drawing, not an empty box
            assert nb.error_outputs() == []
        finally:
            page.screenshot(path=ARTIFACTS / "browser-tree-of-thoughts.png", full_page=False)
