"""Lesson 19: the shop agent as a web service, with a page that draws its trace live.

    from tinyagent.serving import ServiceConfig, ServiceServer
    with ServiceServer(ServiceConfig(shop_db=":memory:")) as server:
        requests.post(server.url + "/agent/invoke", json={"query": "Where is order 88231?"}).json()

    python -m tinyagent serve --port 8000          # the same from the terminal; the page is at http://127.0.0.1:8000/

Parts, one idea each:

    service.py         AgentService: each run's agent, run in a thread of its own; sessions kept in the store
    app.py             the routes, who may call each, the one-line JSON errors
    streams.py         a run's events as Server-Sent Events, resumed with Last-Event-ID
    approvals.py       a refund waiting for a person's yes over HTTP (lesson 15's gate)
    edits.py           a stored turn continued from a person's edit of one round
    openai_chat.py     the same agent behind OpenAI's chat API (/v1/chat/completions)
    openapi.py         the routes described (/openapi.json, /docs)
    connections.py     how long a connection may take, and how many are held at once
    stopping.py        a stop that ends every response before uvicorn cuts it
    uvicorn_server.py  uvicorn from a thread, or several worker processes
    page/index.html    the page that draws a trace live

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
