"""A `ToolRegistry` served over the Model Context Protocol (lesson 24), on the official `mcp` SDK.

    server = registry_server(shop_registry(shop, clock))      # an mcp.server.lowlevel.Server
    python -m tinyagent mcp-server                             # over stdio: a host starts it as a subprocess
    python -m tinyagent mcp-server --port 8765                 # over Streamable HTTP on 127.0.0.1:8765/mcp

`tools/list` is made from the registry's own JSON Schemas (lesson 07), one MCP Tool per registry tool, in the
registry's order. `tools/call` runs `ToolRegistry.run`: a tool's failure (an unknown order, a bad argument) comes
back as a result with `isError: true` whose text is the error Observation the model reads (lesson 02's rule),
never as a JSON-RPC error, which is for an exchange that failed. (The specification counts an unknown tool name as
such; here it is lesson 02's error Observation too, listing the names there are, since the model wrote the name.)

A tool that changes something and is named in `needs_yes` (applyRefund) runs only after a person said yes. MCP's
way for a server to ask the person is *elicitation*: the server sends `elicitation/create` with a message and a
small form, the host shows it, and answers accept, decline or cancel. A client that did not declare the
elicitation capability cannot be asked, so the tool does not run and the model reads why. Who the person is and
how they are asked is the host's business; the protocol only carries the question and the answer.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, TransportSecuritySettings

from tinyagent.errors import TinyAgentError
from tinyagent.hosting.address import listening_socket
from tinyagent.protocols.prompt_variants import tool_parameters
from tinyagent.registry import ToolRegistry, error_observation
from tinyagent.tools import Action, Tool

NEEDS_YES = ("applyRefund",)
# The form the client shows the person before a NEEDS_YES tool runs (MCP elicitation): one box, Approve?, required.
YES_FORM = {"type": "object", "properties": {"approve": {"type": "boolean", "title": "Approve?"}},
            "required": ["approve"]}


def input_schema(tool: Tool) -> dict[str, Any]:
    """What `tools/list` says a tool takes: the JSON Schema function calling offers the model (lesson 09), the
    tool's own (lesson 07) or one free-text `input`."""
    return tool_parameters(tool)


def mcp_tool(tool: Tool) -> types.Tool:
    """The MCP description of one registry tool: its name, description and JSON Schema, and what it changes."""
    hints = types.ToolAnnotations(read_only_hint=tool.read_only, destructive_hint=False if tool.read_only else None)
    return types.Tool(name=tool.name, description=tool.description, input_schema=input_schema(tool),
                      annotations=hints)


def registry_input(tool: Tool | None, arguments: dict[str, Any] | None) -> Any:
    """What the registry gets for an MCP call's arguments: the object itself, or a free-text tool's one string.

    A tool with no schema takes one free-text input (tools.py); over MCP that text is its one argument, `input`."""
    arguments = arguments or {}
    if tool is not None and tool.parameters is None:
        return str(arguments.get("input", ""))
    return arguments


def mcp_error_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


class RegistryServer:
    """The handlers of an MCP server whose tools are a registry's. `server` is the SDK's low-level Server.

    A call runs in a worker thread, so a slow tool does not hold up the server's other sessions; the shop's tools
    may run side by side (the shop holds a lock around its database).
    """

    def __init__(self, registry: ToolRegistry, *, name: str = "bitmall-shop", needs_yes: Iterable[str] = NEEDS_YES):
        self.registry = registry
        self.needs_yes = tuple(needs_yes)
        self.server = Server(name, version="1.0", on_list_tools=self.list_tools, on_call_tool=self.call_tool,
                             instructions="The Bit Mall (比特严选) shop's after-sales tools.")

    async def list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[mcp_tool(tool) for tool in self.registry])

    async def call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = self.registry.get(params.name)
        if tool is not None and params.name in self.needs_yes:
            refusal = await self.ask_for_yes(ctx, params)
            if refusal is not None:
                return mcp_error_result(refusal)
        action = Action(params.name, registry_input(tool, params.arguments))
        result = await anyio.to_thread.run_sync(self.registry.run, action)
        return types.CallToolResult(content=[types.TextContent(text=result.text)], is_error=result.error)

    async def ask_for_yes(self, ctx: Any, params: types.CallToolRequestParams) -> str | None:
        """Ask the person through the client (elicitation); None when they said yes, else the Observation why not."""
        name = params.name
        capabilities = types.ClientCapabilities(elicitation=types.ElicitationCapability())
        if not ctx.session.check_client_capability(capabilities):
            return error_observation(f"{name} needs a person's yes, and this client cannot ask one (it did not "
                                     "declare MCP elicitation): nothing was done", tool=name)
        arguments = json.dumps(params.arguments or {}, ensure_ascii=False)
        try:
            answer = await ctx.session.elicit_form(f"Allow {name} {arguments}?", YES_FORM,
                                                   related_request_id=ctx.request_id)
        except Exception as exc:  # noqa: BLE001 - a host that fails to ask is a no, said to the model
            return error_observation(f"{name} needs a person's yes, and asking failed: {type(exc).__name__}: {exc}",
                                     tool=name)
        if answer.action == "accept" and (answer.content or {}).get("approve") is True:
            return None
        said = "declined" if answer.action != "cancel" else "dismissed the question"
        return error_observation(f"the person {said}: {name} was not run", tool=name)


def registry_server(registry: ToolRegistry, **options: Any) -> Server:
    """An MCP server (the SDK's low-level `Server`) listing and calling the tools of `registry`."""
    return RegistryServer(registry, **options).server


def loopback_security(port: int) -> TransportSecuritySettings:
    """Only this machine's names in Host, and no web page's Origin but this server's own: a page elsewhere (or a
    DNS-rebinding name that points here) gets 421 or 403 before any tool runs."""
    names = ("127.0.0.1", "localhost", "[::1]")
    return TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                     allowed_hosts=[f"{name}:{port}" for name in names],
                                     allowed_origins=[f"http://{name}:{port}" for name in names])


def shop_server_process(*options: str) -> dict[str, Any]:
    """How to start `python -m tinyagent mcp-server OPTIONS` of this very package, as a host's MCP settings hold it:
    {"command": ..., "args": [...], "env": {...}}. The environment names the folder this `tinyagent` came from,
    so the server runs the same code as its client, installed or not."""
    import os
    import sys
    from pathlib import Path

    folder = str(Path(__file__).resolve().parents[2])
    path = os.pathsep.join(dict.fromkeys([folder, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]))
    return {"command": sys.executable, "args": ["-m", "tinyagent", "mcp-server", *options], "env": {"PYTHONPATH": path}}


class McpHttpServer:
    """The server over Streamable HTTP at http://127.0.0.1:<port>/mcp (this machine only), run by uvicorn in a thread of
    its own.

    `port=0` takes a free port (read `port` after the start). `stop()` ends it and waits; also a context manager.
    """

    def __init__(self, registry: ToolRegistry, port: int = 0, **options: Any):
        import uvicorn

        from tinyagent.hosting.unreadable_requests import JsonErrorsH11Protocol

        try:
            self._socket = listening_socket("127.0.0.1", port)
        except OSError as exc:
            raise TinyAgentError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from None
        self.port = self._socket.getsockname()[1]
        app = registry_server(registry, **options).streamable_http_app(transport_security=loopback_security(self.port))
        config = uvicorn.Config(LoopbackGuard(app, self.port), log_level="warning", lifespan="on",
                                timeout_graceful_shutdown=2, http=JsonErrorsH11Protocol)
        self._uvicorn = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._uvicorn.run, kwargs={"sockets": [self._socket]},
                                        name="mcp-http", daemon=True)
        self._thread.start()
        while not self._uvicorn.started:  # uvicorn sets it once the app's lifespan (the session manager) is up
            if not self._thread.is_alive():
                self._socket.close()
                raise TinyAgentError("the MCP server stopped while it started (see the log above)")
            time.sleep(0.02)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stop(self) -> None:
        self._uvicorn.should_exit = True
        self._thread.join(10)
        self._socket.close()

    def __enter__(self) -> McpHttpServer:  # noqa: PYI034 - typing.Self needs Python 3.11
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class LoopbackGuard:
    """ASGI middleware in front of the MCP endpoint: a request from anywhere but this machine's own pages is refused
    before the SDK reads it, with a JSON error. The Host must name this machine and port (a DNS-rebinding name
    pointing here is 421); an Origin, sent by every browser's cross-site POST, must be this server's (403); a POST
    must say application/json (415), which a page cannot send across sites without a preflight this server never
    answers, so a plain form's text/plain POST runs nothing."""

    def __init__(self, app: Any, port: int):
        self.app = app
        self.settings = loopback_security(port)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            refusal = self.refusal(scope)
            if refusal is not None:
                status, message = refusal
                body = json.dumps({"error": message}).encode()
                await send({"type": "http.response.start", "status": status,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)

    def refusal(self, scope: dict) -> tuple[int, str] | None:
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
        if headers.get("host", "") not in self.settings.allowed_hosts:
            return 421, "this server answers only for 127.0.0.1, localhost and [::1] on its own port"
        if "origin" in headers and headers["origin"] not in self.settings.allowed_origins:
            return 403, "requests from other web sites are refused"
        content_type = headers.get("content-type", "").split(";")[0].strip().lower()
        if scope["method"] == "POST" and content_type != "application/json":
            return 415, "a POST must be JSON-RPC with Content-Type: application/json"
        # The SDK's own answers to these are text/plain (404) or no content type at all (413): said here in JSON.
        if scope["path"] != "/mcp":
            return 404, "this server answers only at /mcp (MCP's Streamable HTTP)"
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > DEFAULT_MAX_REQUEST_BODY_SIZE:
            return 413, f"a request body may hold at most {DEFAULT_MAX_REQUEST_BODY_SIZE} bytes"
        return None


def serve_stdio(registry: ToolRegistry, **options: Any) -> None:
    """Serve over this process's stdin and stdout until the client closes them (how a host runs a local server)."""
    from mcp.server.stdio import stdio_server

    server = registry_server(registry, **options)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


class StdioUnusable(TinyAgentError):
    """The stdio server cannot speak: stdin or stdout is closed, or writing an answer failed."""


def _serve_stdio_keeping_failure(registry: ToolRegistry, failed: list[BaseException]) -> None:
    """serve_stdio, in the server's thread: what stopped it with an error goes into `failed`, not to a traceback."""
    try:
        serve_stdio(registry)
    except Exception as exc:  # noqa: BLE001 - said by serve_mcp in one line, with the exit code
        failed.append(exc)


def _first_cause(exc: BaseException) -> str:
    """The first error inside `exc` (anyio wraps a task's error in an ExceptionGroup), as a few words."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return getattr(exc, "strerror", None) or f"{type(exc).__name__}: {exc}"


def serve_mcp(db: str, clock: Any, port: int | None = None) -> str:
    """`python -m tinyagent mcp-server`: the shop's tools, until the client hangs up (stdio) or SIGINT/SIGTERM.

    On stdio the banner goes to stderr: stdout carries the protocol and nothing else. Returns what stopped it.
    """
    import sys

    from tinyagent.hosting.signals import StopSignals
    from tinyagent.shop import Shop, shop_registry

    with StopSignals() as stop, Shop(db, clock=clock) as shop:  # handlers first: no signal is lost at the start
        registry = shop_registry(shop, clock)
        if port is None:
            if sys.stdin is None or sys.stdout is None:  # started with one closed (<&- or >&-)
                raise StdioUnusable("stdin or stdout is closed: an MCP client writes requests to the one and "
                                    "reads answers from the other; run it from an MCP host, or give --port")
            print("MCP server on stdio: the shop's tools; stop it by closing stdin, Ctrl-C or SIGTERM",
                  file=sys.stderr, flush=True)
            failed: list[BaseException] = []
            thread = threading.Thread(target=_serve_stdio_keeping_failure, args=(registry, failed), name="mcp-stdio",
                                      daemon=True)
            thread.start()
            # The stdio server ends when the client closes stdin; a signal ends the wait instead, and the
            # thread blocked on stdin goes with the process.
            while thread.is_alive() and not stop.stop_requested:
                thread.join(0.2)
            if failed:
                raise StdioUnusable(f"the answers could not be written to stdout ({_first_cause(failed[0])}): the "
                                    "client that reads them has gone, or stdout is a full disk")
            return stop.received.name if stop.received else "stdin closed"
        with McpHttpServer(registry, port) as server:
            print(f"MCP server on {server.url} (Streamable HTTP, this machine only). Press Ctrl-C to stop.",
                  flush=True)
            return stop.wait()
