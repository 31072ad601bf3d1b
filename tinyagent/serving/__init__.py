"""Lesson 19: the shop agent as a web service, with a page that draws its trace live.

    from tinyagent.serving import ServiceConfig, ServiceServer
    with ServiceServer(ServiceConfig(shop_db=":memory:")) as server:
        requests.post(server.url + "/agent/invoke", json={"query": "Where is order 88231?"}).json()

    python -m tinyagent serve --port 8000          # the same from the terminal; the page is at http://127.0.0.1:8000/

Parts, one idea each: service.py (runs in threads, sessions), app.py (the routes, the JSON errors, the
Server-Sent Events), uvicorn_server.py (uvicorn from a thread, or several worker processes), page/index.html (the page).
Needs the `serve` extra (Starlette and uvicorn); `import tinyagent` never loads this package.
"""

try:
    import starlette  # noqa: F401
    import uvicorn  # noqa: F401
except ImportError:
    raise ImportError('tinyagent.serving needs Starlette and uvicorn: pip install -e ".[serve]" in the course folder') from None

from tinyagent.serving.app import create_app
from tinyagent.serving.service import AgentService, RunCancelled, ServiceConfig
from tinyagent.serving.uvicorn_server import ServiceServer, serve_workers

__all__ = ["AgentService", "RunCancelled", "ServiceConfig", "ServiceServer", "create_app", "serve_workers"]
