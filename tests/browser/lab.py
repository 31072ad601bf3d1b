"""JupyterLab in a real browser, for the browser tests: a private server and Debian's Chromium.

    with JupyterLab(notebooks=[path]) as lab, Browser() as browser:
        page = browser.open(lab.url_for(path.name))
        notebook = Notebook(page)
        notebook.wait_until_idle(); notebook.clear_outputs(); notebook.run_all()

The server runs on a free loopback port with its own config, data, runtime, settings and
workspace folders in a temporary directory (news, update checks and autosave off), serving a
copy of the notebooks, so a test never touches the learner's JupyterLab or the files in the repo.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from tinyagent.hosting.address import quiet_port_run

CHROMIUM = Path(os.environ.get("TINYAGENT_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
KERNEL_IDLE = "Python 3 (ipykernel) | Idle"

# JupyterLab user settings: nothing fetched from the internet, nothing saved behind our back,
# and every cell in the DOM (no windowing), so locators see the whole notebook.
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
}


def browser_missing() -> str | None:
    """Why the browser tests cannot run here, or None if they can."""
    if not CHROMIUM.exists():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[dev]')"
    return None


class JupyterLab:
    """A private JupyterLab server serving copies of `notebooks`. Use as a context manager."""

    def __init__(self, notebooks: list[Path], *, timeout: float = 60.0):
        self.notebooks = [Path(p) for p in notebooks]
        self.timeout = timeout
        self.token = secrets.token_hex(16)
        self.port = quiet_port_run()  # told to JupyterLab, which binds it seconds later
        self.base = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None

    def __enter__(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="tinyagent-lab-"))
        self.root = self.tmp / "root"
        self.root.mkdir()
        for notebook in self.notebooks:
            shutil.copy(notebook, self.root / notebook.name)
        env = dict(os.environ, TINYAGENT_OFFLINE="1")
        for name, folder in {
            "JUPYTER_CONFIG_DIR": "config",
            "JUPYTER_DATA_DIR": "data",
            "JUPYTER_RUNTIME_DIR": "runtime",
            "JUPYTERLAB_SETTINGS_DIR": "settings",
            "JUPYTERLAB_WORKSPACES_DIR": "workspaces",
        }.items():
            (self.tmp / folder).mkdir()
            env[name] = str(self.tmp / folder)
        for plugin, values in LAB_SETTINGS.items():
            path = self.tmp / "settings" / f"{plugin}.jupyterlab-settings"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values))
        self.log_path = self.tmp / "jupyterlab.log"
        self._log = open(self.log_path, "wb")  # closed in __exit__
        self.process = subprocess.Popen(
            [
                sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
                "--ip=127.0.0.1", f"--port={self.port}", f"--IdentityProvider.token={self.token}",
                f"--ServerApp.root_dir={self.root}",
            ],
            env=env, cwd=self.root, stdout=self._log, stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: the kernels it starts go with it
        )  # fmt: skip
        try:
            self._wait_until_ready()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                self.api("GET", "/api/status")
                return
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.2)
        raise TimeoutError(f"JupyterLab did not answer within {self.timeout:g} s:\n{self.log_tail()}")

    def api(self, method: str, path: str):
        request = urllib.request.Request(
            self.base + path, method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            body = response.read()
        return json.loads(body) if body else None

    def url_for(self, notebook_name: str) -> str:
        return f"{self.base}/lab/tree/{notebook_name}?reset&token={self.token}"

    def delete_sessions(self) -> None:
        """Kernels outlive the browser: shut down every session this server started."""
        for session in self.api("GET", "/api/sessions") or []:
            self.api("DELETE", f"/api/sessions/{session['id']}")

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def __exit__(self, *exc) -> None:
        if self.process is not None and self.process.poll() is None:
            try:
                self.delete_sessions()
            except (OSError, urllib.error.URLError):
                pass
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self._log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


class Browser:
    """Headless Debian Chromium through Playwright, with a throwaway profile."""

    def __init__(self, *, viewport: dict | None = None):
        self.viewport = viewport or {"width": 1280, "height": 1000}

    def __enter__(self):
        from playwright.sync_api import sync_playwright

        self.profile = tempfile.mkdtemp(prefix="tinyagent-chromium-")
        self._playwright = sync_playwright().start()
        try:
            self.context = self._playwright.chromium.launch_persistent_context(
                self.profile,
                executable_path=str(CHROMIUM),
                headless=True,
                args=CHROMIUM_ARGS,
                viewport=self.viewport,
            )
        except BaseException:
            self._playwright.stop()
            raise
        return self

    def open(self, url: str):
        page = self.context.pages[0] if self.context.pages else self.context.new_page()
        page.goto(url)
        return page

    def __exit__(self, *exc) -> None:
        try:
            self.context.close()
        finally:  # even when closing the browser failed, stop the Playwright driver process it ran under
            self._playwright.stop()
            shutil.rmtree(self.profile, ignore_errors=True)


class Notebook:
    """The open notebook tab of a JupyterLab page, and the menu commands the tests need."""

    PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"

    def __init__(self, page):
        self.page = page
        self.panel = page.locator(self.PANEL)

    def wait_until_idle(self, timeout: float = 60.0) -> None:
        """Wait for the status bar to say the kernel is idle; the toolbar's indicator says idle
        while the kernel is still starting, and Run All would then lose cells."""
        self.page.get_by_text(KERNEL_IDLE, exact=True).wait_for(timeout=timeout * 1000)

    def menu(self, menu: str, command: str) -> None:
        self.page.locator(".lm-MenuBar-item", has_text=menu).first.click()
        self.page.locator(f".lm-Menu-item[data-command='{command}']").click()

    def clear_outputs(self) -> None:
        self.menu("Edit", "editmenu:clear-all")
        self.panel.locator(".jp-OutputArea-output").first.wait_for(state="detached", timeout=10_000)

    def run_all(self, timeout: float = 60.0) -> None:
        """Run every cell and wait until each has run and the kernel is idle again."""
        self.menu("Run", "runmenu:run-all")
        deadline = time.monotonic() + timeout
        prompts = self.panel.locator(".jp-CodeCell .jp-InputArea-prompt")
        while time.monotonic() < deadline:
            texts = [t.strip() for t in prompts.all_inner_texts()]
            if texts and all(t.startswith("[") and t[1:-2].strip().isdigit() for t in texts):
                self.wait_until_idle(timeout=max(deadline - time.monotonic(), 1))
                return
            time.sleep(0.1)
        raise TimeoutError(f"cells still running after {timeout:g} s: prompts {texts}")

    def shift_enter_through(self, timeout: float = 120.0) -> None:
        """Run the notebook the way a learner does: select the first cell, then press Shift+Enter once
        per cell, waiting for each code cell to finish before the next press."""
        cells = self.panel.locator(".jp-Notebook .jp-Cell")
        count = cells.count()
        cells.first.click(position={"x": 8, "y": 8})
        self.page.keyboard.press("Escape")  # command mode: Shift+Enter runs the selected cell
        deadline = time.monotonic() + timeout
        for i in range(count):
            cell = cells.nth(i)
            self.page.keyboard.press("Shift+Enter")
            if "jp-CodeCell" not in (cell.get_attribute("class") or ""):
                continue
            prompt = cell.locator(".jp-InputArea-prompt")
            while not re.fullmatch(r"\[\d+\]:", prompt.inner_text().strip()):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"cell {i} still running after {timeout:g} s")
                time.sleep(0.05)
        self.wait_until_idle(timeout=max(deadline - time.monotonic(), 1))

    def output_texts(self) -> list[str]:
        return self.panel.locator(".jp-OutputArea-output").all_inner_texts()

    def error_outputs(self) -> list[str]:
        """The text of every stderr or error output, and of any output showing a traceback."""
        found = self.panel.locator(
            ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr'], "
            ".jp-OutputArea-output.jp-mod-error"
        ).all_inner_texts()
        found += [
            t for t in self.panel.locator(".jp-OutputArea-output").all_inner_texts() if "Traceback" in t
        ]
        return found
